//! Plots (SVG) of a run: offered vs forwarded rate, latency percentiles.
//!
//! Hand-written SVG 1.1, no dependencies: every plot is one self-contained
//! document of a fixed width (`W`), white background, sans-serif text. All
//! text from the report (device name, tool, bar labels) is XML-escaped, and
//! every coordinate goes through one formatter that never writes NaN or
//! infinity, so empty reports, a single trial, zero rates and all-equal values
//! still give a valid (if sparse) picture.
//!
//! - [`rate_svg`]: offered vs forwarded rate per trial, the y = x "no loss"
//!   line, and the NDR/PDR found by the search.
//! - [`latency_svg`]: p50 … max latency per trial vs offered rate, log scale.
//! - [`bars_svg`]: horizontal bars (median) with min–max whiskers, for the
//!   side-by-side comparison of testpmd engines and fastpath.
//! - [`write_plots`]: the first two, written next to a report.

use crate::report::{LatencyNs, Report, Trial};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Width of every plot (px).
const W: f64 = 720.0;
/// Height of the rate and latency plots, and the least height of a bar chart (px).
const H: f64 = 440.0;
/// Font stack of all text.
const FONT: &str = "DejaVu Sans, Helvetica, Arial, sans-serif";
/// Lowest latency a log axis shows (µs): 1 ns, so that 0 stays on the paper.
const LOG_FLOOR_US: f64 = 1e-3;
/// Largest magnitude plotted; beyond that values are clamped (keeps spans finite).
const MAX_ABS: f64 = 1e15;

const BLUE: &str = "#1f77b4";
const RED: &str = "#d62728";
const GREEN: &str = "#2ca02c";
const ORANGE: &str = "#ff7f0e";
const PURPLE: &str = "#9467bd";
const GREY: &str = "#7f7f7f";
const INK: &str = "#222222";

/// Offered vs forwarded rate (Mpps) of every trial, joined in order of offered
/// rate, with the dashed y = x line (no loss). Passing trials are filled blue
/// circles, failing ones hollow red; the search result, if any, is ringed and
/// labelled "NDR x Mpps" (loss ratio 0) or "PDR (p %) x Mpps".
pub fn rate_svg(r: &Report) -> String {
    let f = Frame {
        l: 76.0,
        t: 62.0,
        r: W - 28.0,
        b: H - 58.0,
    };
    let trials = by_offered(&r.trials);
    let result = r
        .result
        .as_ref()
        .map(|t| (mpps(t.offered_pps), mpps(t.forwarded_pps)));
    let values = trials
        .iter()
        .flat_map(|t| [mpps(t.offered_pps), mpps(t.forwarded_pps)])
        .chain(result.into_iter().flat_map(|(x, y)| [x, y]));
    let (lo, hi) = range_with_zero(values);
    // Both axes share one scale so that y = x is the frame's diagonal.
    let ticks = nice_ticks(lo, hi, 6);
    let x = Axis::from_ticks(ticks.clone(), f.l, f.r);
    let y = Axis::from_ticks(ticks, f.b, f.t);

    let mut svg = Svg::new(W, H);
    header(
        &mut svg,
        &format!("{}: offered vs forwarded rate", r.dut),
        &subtitle(r),
    );
    draw_x_axis(&mut svg, f, &x, "offered rate (Mpps)");
    draw_y_axis(&mut svg, f, &y, "forwarded rate (Mpps)");
    svg.line(
        (f.l, f.b),
        (f.r, f.t),
        &format!(r#"class="no-loss" stroke="{GREY}" stroke-width="1.5" stroke-dasharray="7 5""#),
    );
    let points: Vec<(f64, f64)> = trials
        .iter()
        .map(|t| (x.map(mpps(t.offered_pps)), y.map(mpps(t.forwarded_pps))))
        .collect();
    svg.polyline(
        &points,
        &format!(r#"fill="none" stroke="{BLUE}" stroke-width="2""#),
    );
    for (t, &p) in trials.iter().zip(&points) {
        let (style, verdict) = if t.pass {
            (
                format!(r#"class="trial pass" fill="{BLUE}" stroke="white""#),
                "pass",
            )
        } else {
            (
                format!(r#"class="trial fail" fill="white" stroke="{RED}" stroke-width="2""#),
                "FAIL",
            )
        };
        let tip = format!(
            "offered {:.3} Mpps, forwarded {:.3} Mpps, loss {} %: {verdict}",
            mpps(t.offered_pps),
            mpps(t.forwarded_pps),
            trim(finite(t.loss_ratio) * 100.0, 4)
        );
        svg.circle(p, 5.0, &style, Some(&tip));
    }

    let mut legend = vec![
        (Swatch::Marker(BLUE, BLUE), "trial, passed".to_string()),
        (
            Swatch::Marker("white", RED),
            "trial, lost too much".to_string(),
        ),
        (Swatch::Line(GREY, true), "no loss (y = x)".to_string()),
    ];
    if let Some((ox, oy)) = result {
        let label = result_label(r, ox);
        mark_result(&mut svg, f, (x.map(ox), y.map(oy)), &label);
        legend.push((Swatch::Ring(GREEN), label));
    } else if trials.is_empty() {
        note(&mut svg, f, "no trials");
    } else if r.search.is_some() {
        note(&mut svg, f, "no trial passed");
    }
    draw_legend(&mut svg, (f.l + 12.0, f.t + 12.0), &legend);
    svg.finish()
}

/// Latency percentiles (p50, p90, p99, p99.9, max; µs, log10 axis) of every
/// trial that has them, against offered rate (Mpps), one line per percentile.
/// Without any latency samples the plot says so.
pub fn latency_svg(r: &Report) -> String {
    let f = Frame {
        l: 76.0,
        t: 62.0,
        r: W - 130.0,
        b: H - 58.0,
    };
    let samples: Vec<(f64, LatencyNs)> = by_offered(&r.trials)
        .into_iter()
        .filter_map(|t| {
            t.latency_ns
                .filter(has_latency)
                .map(|l| (mpps(t.offered_pps), l))
        })
        .collect();
    let (xlo, xhi) = range_with_zero(samples.iter().map(|s| s.0));
    let x = Axis::linear(xlo, xhi, f.l, f.r);
    let us = samples
        .iter()
        .flat_map(|(_, l)| PERCENTILES.iter().map(move |p| (p.get)(l)));
    let (ylo, yhi) = us.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    let y = Axis::log10(if samples.is_empty() { 1.0 } else { ylo }, yhi, f.b, f.t);

    let mut svg = Svg::new(W, H);
    header(
        &mut svg,
        &format!("{}: latency vs offered rate", r.dut),
        &subtitle(r),
    );
    draw_x_axis(&mut svg, f, &x, "offered rate (Mpps)");
    draw_y_axis(&mut svg, f, &y, "latency (µs, log scale)");
    if samples.is_empty() {
        note(&mut svg, f, "no latency samples");
        return svg.finish();
    }
    for p in &PERCENTILES {
        let points: Vec<(f64, f64)> = samples
            .iter()
            .map(|(o, l)| (x.map(*o), y.map((p.get)(l))))
            .collect();
        svg.open(&format!(r#"class="series" data-series="{}""#, p.name));
        let dash = if p.dashed {
            r#" stroke-dasharray="5 4""#
        } else {
            ""
        };
        svg.polyline(
            &points,
            &format!(r#"fill="none" stroke="{}" stroke-width="2"{dash}"#, p.color),
        );
        for (&pt, (o, l)) in points.iter().zip(&samples) {
            let tip = format!("{} at {o:.3} Mpps: {} µs", p.name, trim((p.get)(l), 3));
            svg.circle(
                pt,
                3.5,
                &format!(r#"class="pt" fill="{}""#, p.color),
                Some(&tip),
            );
        }
        svg.close();
    }
    // Highest first, as the lines lie.
    let legend: Vec<(Swatch, String)> = PERCENTILES
        .iter()
        .rev()
        .map(|p| (Swatch::LineMarker(p.color, p.dashed), p.name.to_string()))
        .collect();
    draw_legend(&mut svg, (f.r + 14.0, f.t), &legend);
    svg.finish()
}

/// Horizontal bar chart of `(label, median, min, max)`: a bar to the median,
/// a min–max whisker, and the median printed with `unit` at the bar's end.
/// 720 px wide; 440 px high, taller when there are more than ~10 bars.
/// Non-finite medians are printed "n/a" and not drawn.
pub fn bars_svg(title: &str, unit: &str, bars: &[(String, f64, f64, f64)]) -> String {
    let band = 30.0;
    let h = H.max(130.0 + band * bars.len() as f64);
    let longest = bars
        .iter()
        .map(|b| clip(&b.0, 36).chars().count())
        .max()
        .unwrap_or(0);
    let f = Frame {
        l: 24.0 + (longest as f64 * 7.0).clamp(40.0, 250.0),
        t: 62.0,
        r: W - 110.0,
        b: h - 58.0,
    };
    let values = bars
        .iter()
        .flat_map(|b| [b.1, b.2, b.3])
        .filter(|v| v.is_finite());
    let (lo, hi) = range_with_zero(values);
    let x = Axis::linear(lo, hi, f.l, f.r);

    let mut svg = Svg::new(W, h);
    header(&mut svg, title, "bar: median, whisker: min – max");
    draw_x_axis(&mut svg, f, &x, unit);
    if bars.is_empty() {
        note(&mut svg, f, "no data");
        return svg.finish();
    }
    let step = (f.b - f.t) / bars.len() as f64;
    let thick = (step * 0.6).min(24.0);
    for (i, (label, med, min, max)) in bars.iter().enumerate() {
        let cy = f.t + (i as f64 + 0.5) * step;
        svg.text(
            (f.l - 8.0, cy + 4.5),
            r#"text-anchor="end" font-size="12""#,
            &clip(label, 36),
        );
        let value = if med.is_finite() {
            format!("{} {unit}", fmt_value(*med))
        } else {
            "n/a".into()
        };
        let mut end = x.map(0.0);
        if med.is_finite() {
            let (a, b) = (x.map(0.0), x.map(*med));
            let tip = format!(
                "{label}: median {value}, min {}, max {}",
                fmt_value(*min),
                fmt_value(*max)
            );
            svg.rect(
                (a.min(b), cy - thick / 2.0),
                ((a - b).abs(), thick),
                &format!(r#"class="bar" fill="{BLUE}""#),
                Some(&tip),
            );
            end = end.max(b);
        }
        if min.is_finite() && max.is_finite() {
            end = end.max(whisker(&mut svg, x.map(*min), x.map(*max), cy, thick / 2.0));
        }
        svg.text(
            (end + 6.0, cy + 4.5),
            r#"font-size="12" font-weight="bold""#,
            &value,
        );
    }
    svg.finish()
}

/// Writes `<stem>-rate.svg` and `<stem>-latency.svg` (creating the directory)
/// and returns their paths, in that order.
pub fn write_plots(r: &Report, stem: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut paths = Vec::new();
    for (suffix, svg) in [("-rate.svg", rate_svg(r)), ("-latency.svg", latency_svg(r))] {
        let mut name = stem.as_os_str().to_owned();
        name.push(suffix);
        let path = PathBuf::from(name);
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&path, svg)?;
        paths.push(path);
    }
    Ok(paths)
}

// ---------------------------------------------------------------------------
// Data helpers

/// A percentile line of the latency plot: name, value in µs, colour, dashed.
struct Percentile {
    name: &'static str,
    get: fn(&LatencyNs) -> f64,
    color: &'static str,
    dashed: bool,
}

/// The latency plot's lines, lowest first.
const PERCENTILES: [Percentile; 5] = [
    Percentile {
        name: "p50",
        get: |l| us(l.p50),
        color: BLUE,
        dashed: false,
    },
    Percentile {
        name: "p90",
        get: |l| us(l.p90),
        color: GREEN,
        dashed: false,
    },
    Percentile {
        name: "p99",
        get: |l| us(l.p99),
        color: ORANGE,
        dashed: false,
    },
    Percentile {
        name: "p99.9",
        get: |l| us(l.p999),
        color: RED,
        dashed: false,
    },
    Percentile {
        name: "max",
        get: |l| us(l.max),
        color: PURPLE,
        dashed: true,
    },
];

/// Nanoseconds to microseconds.
fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// Packets per second to Mpps; not-finite values count as 0.
fn mpps(pps: f64) -> f64 {
    if pps.is_finite() {
        finite(pps / 1e6)
    } else {
        0.0
    }
}

/// `v` clamped to ±[`MAX_ABS`], 0 when NaN.
fn finite(v: f64) -> f64 {
    if v.is_nan() {
        0.0
    } else {
        v.clamp(-MAX_ABS, MAX_ABS)
    }
}

/// Whether a trial's latency holds any measurement.
fn has_latency(l: &LatencyNs) -> bool {
    l.samples > 0 || l.max > 0
}

/// The trials sorted by offered rate (stable: equal rates keep their order).
fn by_offered(trials: &[Trial]) -> Vec<&Trial> {
    let mut v: Vec<&Trial> = trials.iter().collect();
    v.sort_by(|a, b| mpps(a.offered_pps).total_cmp(&mpps(b.offered_pps)));
    v
}

/// The smallest range holding 0 and every value (non-finite ones ignored).
fn range_with_zero(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values
        .filter(|v| v.is_finite())
        .map(finite)
        .fold((0.0, 0.0), |(lo, hi): (f64, f64), v| (lo.min(v), hi.max(v)))
}

/// "NDR 12.34 Mpps", "PDR (0.5 %) 12.34 Mpps" or, without search, "result …":
/// the offered rate of the result trial, as RFC 2544 reports throughput.
fn result_label(r: &Report, rate_mpps: f64) -> String {
    match &r.search {
        Some(s) if s.loss_ratio == 0.0 => format!("NDR {rate_mpps:.2} Mpps"),
        Some(s) => format!(
            "PDR ({} %) {rate_mpps:.2} Mpps",
            trim(finite(s.loss_ratio) * 100.0, 4)
        ),
        None => format!("result {rate_mpps:.2} Mpps"),
    }
}

/// The line under a plot's title: tool, frame size, trial count.
fn subtitle(r: &Report) -> String {
    let mut s = r.tool.clone();
    if r.frame_mean_bytes.is_finite() && r.frame_mean_bytes > 0.0 {
        let _ = write!(s, ", mean frame {} B", trim(r.frame_mean_bytes, 1));
    }
    let n = r.trials.len();
    let _ = write!(s, ", {n} trial{}", if n == 1 { "" } else { "s" });
    s
}

// ---------------------------------------------------------------------------
// Number and text formatting

/// `v` with at most `decimals` decimals and no trailing zeros ("0.5", "12").
fn trim(v: f64, decimals: usize) -> String {
    let s = format!("{:.*}", decimals, finite(v));
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        &s
    };
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

/// A measured value with about three significant digits.
fn fmt_value(v: f64) -> String {
    let a = v.abs();
    match a {
        _ if !v.is_finite() => "n/a".into(),
        _ if a == 0.0 => "0".into(),
        _ if a >= 100.0 => format!("{v:.0}"),
        _ if a >= 10.0 => format!("{v:.1}"),
        _ if a >= 1.0 => format!("{v:.2}"),
        _ if a >= 1e-3 => format!("{v:.3}"),
        _ => format!("{v:.2e}"),
    }
}

/// A pixel coordinate: one decimal, never NaN or infinite (those become 0).
fn px(v: f64) -> String {
    if v.is_finite() {
        trim(v, 1)
    } else {
        "0".into()
    }
}

/// `s` made safe for XML text and attribute values: markup characters as
/// entities, line breaks as spaces, characters XML 1.0 forbids as U+FFFD.
fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            '\t' | '\n' | '\r' => o.push(' '),
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

/// `s` cut to `max` characters, with "…" when cut.
fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        s.chars().take(max.saturating_sub(1)).chain(['…']).collect()
    }
}

// ---------------------------------------------------------------------------
// Scales and ticks

/// Round tick values, evenly spaced by 1, 2 or 5 × 10^k, from at or below `lo`
/// to at or above `hi`, about `target` intervals. Always at least two finite
/// ticks: an empty range (lo == hi) is widened first.
fn nice_ticks(lo: f64, hi: f64, target: usize) -> Vec<f64> {
    let (mut lo, mut hi) = (finite(lo), finite(hi));
    if lo > hi {
        std::mem::swap(&mut lo, &mut hi);
    }
    if hi - lo <= 1e-12 * hi.abs().max(lo.abs()) {
        let pad = if lo == 0.0 { 0.5 } else { lo.abs() * 0.1 };
        if lo == 0.0 {
            hi = 1.0;
        } else {
            (lo, hi) = (lo - pad, hi + pad);
        }
    }
    let step = nice_step((hi - lo) / target.max(1) as f64);
    // k / (1 / step) rather than k * step: 13 / 1000 is exactly 0.013, 13 * 0.001 is not.
    let tick = |k: i64| {
        if step < 1.0 {
            k as f64 / (1.0 / step).round()
        } else {
            k as f64 * step
        }
    };
    let (mut k0, mut k1) = ((lo / step).floor() as i64, (hi / step).ceil() as i64);
    // Rounding may leave the range a hair outside the end ticks.
    while tick(k0) > lo {
        k0 -= 1;
    }
    while tick(k1) < hi || k1 <= k0 {
        k1 += 1;
    }
    (k0..=k1).map(tick).collect()
}

/// The 1, 2 or 5 × 10^k nearest to `raw` (> 0), on a log scale, so that the
/// tick count stays within about 1.4× of the one asked for.
fn nice_step(raw: f64) -> f64 {
    let base = 10f64.powf(raw.log10().floor());
    let m = raw / base;
    let nice = if m >= 50f64.sqrt() {
        10.0
    } else if m >= 10f64.sqrt() {
        5.0
    } else if m >= 2f64.sqrt() {
        2.0
    } else {
        1.0
    };
    nice * base
}

/// "1", "10", "0.01" … for 10^e.
fn decade_label(e: i32) -> String {
    match e {
        0.. => format!("1{}", "0".repeat(e as usize)),
        _ => format!("0.{}1", "0".repeat((-e - 1) as usize)),
    }
}

/// A value axis: a domain (`lo`..`hi`), the pixels it spans (`p0`..`p1`),
/// linear or log10, with labelled ticks and unlabelled minor ticks.
struct Axis {
    lo: f64,
    hi: f64,
    p0: f64,
    p1: f64,
    log: bool,
    ticks: Vec<(f64, String)>,
    minor: Vec<f64>,
}

impl Axis {
    /// Linear axis over the nice ticks covering `lo`..`hi`.
    fn linear(lo: f64, hi: f64, p0: f64, p1: f64) -> Axis {
        Axis::from_ticks(nice_ticks(lo, hi, 6), p0, p1)
    }

    /// Linear axis whose domain is exactly `ticks` (from [`nice_ticks`]).
    fn from_ticks(ticks: Vec<f64>, p0: f64, p1: f64) -> Axis {
        let step = (ticks[1] - ticks[0]).abs();
        let decimals = (-(step.log10() + 1e-9).floor()).clamp(0.0, 12.0) as usize;
        Axis {
            lo: ticks[0],
            hi: ticks[ticks.len() - 1],
            p0,
            p1,
            log: false,
            ticks: ticks.iter().map(|&t| (t, trim(t, decimals))).collect(),
            minor: Vec::new(),
        }
    }

    /// Log10 axis over whole decades covering `lo`..`hi` (at least one decade;
    /// values below [`LOG_FLOOR_US`] are drawn at it), labelled at each decade,
    /// also at 2 and 5 when there are at most two decades, minor ticks at 2…9.
    fn log10(lo: f64, hi: f64, p0: f64, p1: f64) -> Axis {
        let lo = finite(lo).max(LOG_FLOOR_US);
        let hi = finite(hi).max(lo);
        let e0 = lo.log10().floor() as i32;
        let e1 = (hi.log10().ceil() as i32).max(e0 + 1);
        let mut ticks: Vec<(f64, String)> = (e0..=e1)
            .map(|e| (10f64.powi(e), decade_label(e)))
            .collect();
        let mut minor = Vec::new();
        for e in e0..e1 {
            for m in 2..10 {
                let v = m as f64 * 10f64.powi(e);
                if e1 - e0 <= 2 && (m == 2 || m == 5) {
                    ticks.push((v, trim(v, (-e).max(0) as usize)));
                } else {
                    minor.push(v);
                }
            }
        }
        Axis {
            lo: 10f64.powi(e0),
            hi: 10f64.powi(e1),
            p0,
            p1,
            log: true,
            ticks,
            minor,
        }
    }

    /// Pixel of value `v`; always finite (non-finite values go to the axis start).
    fn map(&self, v: f64) -> f64 {
        let f = |v: f64| if self.log { v.max(self.lo).log10() } else { v };
        let (v, lo, hi) = (f(v), f(self.lo), f(self.hi));
        let frac = if v.is_finite() && hi > lo {
            ((v - lo) / (hi - lo)).clamp(-1.0, 2.0)
        } else {
            0.0
        };
        let p = self.p0 + frac * (self.p1 - self.p0);
        if p.is_finite() {
            p
        } else {
            self.p0
        }
    }
}

// ---------------------------------------------------------------------------
// SVG drawing

/// The plotting area inside the axes (px): left, top, right, bottom.
#[derive(Clone, Copy)]
struct Frame {
    l: f64,
    t: f64,
    r: f64,
    b: f64,
}

/// An SVG document being written. Coordinates pass through [`px`], text
/// through [`esc`]; `attrs` arguments are this module's own constant markup.
struct Svg(String);

impl Svg {
    /// Opens a `w` × `h` document on a white background.
    fn new(w: f64, h: f64) -> Svg {
        let (w, h) = (px(w), px(h));
        let mut s = Svg(format!(
            r#"<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="{FONT}" font-size="12" fill="{INK}">"#
        ));
        s.0.push('\n');
        let _ = writeln!(
            s.0,
            r#"<rect x="0" y="0" width="{w}" height="{h}" fill="white"/>"#
        );
        s
    }

    /// Closes the document.
    fn finish(mut self) -> String {
        self.0.push_str("</svg>\n");
        self.0
    }

    /// Opens a group.
    fn open(&mut self, attrs: &str) {
        let _ = writeln!(self.0, "<g {attrs}>");
    }

    /// Closes the innermost group.
    fn close(&mut self) {
        self.0.push_str("</g>\n");
    }

    /// A straight line.
    fn line(&mut self, (x1, y1): (f64, f64), (x2, y2): (f64, f64), attrs: &str) {
        let _ = writeln!(
            self.0,
            r#"<line x1="{}" y1="{}" x2="{}" y2="{}" {attrs}/>"#,
            px(x1),
            px(y1),
            px(x2),
            px(y2)
        );
    }

    /// A polyline through `points` (nothing for fewer than two).
    fn polyline(&mut self, points: &[(f64, f64)], attrs: &str) {
        if points.len() < 2 {
            return;
        }
        let pts: Vec<String> = points
            .iter()
            .map(|&(x, y)| format!("{},{}", px(x), px(y)))
            .collect();
        let _ = writeln!(self.0, r#"<polyline points="{}" {attrs}/>"#, pts.join(" "));
    }

    /// A rectangle at `(x, y)` of size `(w, h)`, with an optional tooltip.
    fn rect(&mut self, (x, y): (f64, f64), (w, h): (f64, f64), attrs: &str, tip: Option<&str>) {
        let open = format!(
            r#"<rect x="{}" y="{}" width="{}" height="{}" {attrs}"#,
            px(x),
            px(y),
            px(w.max(0.0)),
            px(h.max(0.0))
        );
        self.element(open, "rect", tip);
    }

    /// A circle, with an optional tooltip.
    fn circle(&mut self, (cx, cy): (f64, f64), r: f64, attrs: &str, tip: Option<&str>) {
        let open = format!(
            r#"<circle cx="{}" cy="{}" r="{}" {attrs}"#,
            px(cx),
            px(cy),
            px(r)
        );
        self.element(open, "circle", tip);
    }

    /// Ends the element begun in `open` (its start tag, unclosed), with a
    /// `<title>` child (a tooltip in browsers) when `tip` is given.
    fn element(&mut self, open: String, tag: &str, tip: Option<&str>) {
        self.0.push_str(&open);
        match tip {
            Some(t) => {
                let _ = writeln!(self.0, "><title>{}</title></{tag}>", esc(t));
            }
            None => self.0.push_str("/>\n"),
        }
    }

    /// Text at `(x, y)` (baseline).
    fn text(&mut self, (x, y): (f64, f64), attrs: &str, s: &str) {
        let _ = writeln!(
            self.0,
            r#"<text x="{}" y="{}" {attrs}>{}</text>"#,
            px(x),
            px(y),
            esc(s)
        );
    }

    /// Text at `(x, y)` turned a quarter left, reading upwards.
    fn text_up(&mut self, (x, y): (f64, f64), attrs: &str, s: &str) {
        let (x, y) = (px(x), px(y));
        let _ = writeln!(
            self.0,
            r#"<text x="{x}" y="{y}" transform="rotate(-90 {x} {y})" {attrs}>{}</text>"#,
            esc(s)
        );
    }
}

/// Title (bold) and subtitle at the top, centred.
fn header(svg: &mut Svg, title: &str, subtitle: &str) {
    svg.text(
        (W / 2.0, 26.0),
        r#"text-anchor="middle" font-size="16" font-weight="bold""#,
        &clip(title, 70),
    );
    svg.text(
        (W / 2.0, 45.0),
        r##"text-anchor="middle" font-size="12" fill="#555555""##,
        &clip(subtitle, 100),
    );
}

/// A grey message in the middle of the frame.
fn note(svg: &mut Svg, f: Frame, msg: &str) {
    let at = ((f.l + f.r) / 2.0, (f.t + f.b) / 2.0);
    svg.text(
        at,
        r##"class="note" text-anchor="middle" font-size="15" fill="#777777" stroke="white" stroke-width="5" paint-order="stroke""##,
        msg,
    );
}

/// Grid lines, ticks, tick labels and title of the x axis, under the frame.
fn draw_x_axis(svg: &mut Svg, f: Frame, x: &Axis, title: &str) {
    for (t, label) in &x.ticks {
        let p = x.map(*t);
        svg.line((p, f.t), (p, f.b), r##"stroke="#e4e4e4""##);
        svg.line((p, f.b), (p, f.b + 5.0), r##"stroke="#444444""##);
        svg.text(
            (p, f.b + 19.0),
            r#"text-anchor="middle" font-size="11""#,
            label,
        );
    }
    svg.line((f.l, f.b), (f.r, f.b), r##"stroke="#444444""##);
    svg.text(
        ((f.l + f.r) / 2.0, f.b + 42.0),
        r#"text-anchor="middle" font-size="13""#,
        title,
    );
}

/// Grid lines, ticks (and minor ticks), tick labels, frame and title of the
/// y axis, left of the frame.
fn draw_y_axis(svg: &mut Svg, f: Frame, y: &Axis, title: &str) {
    for &m in &y.minor {
        let p = y.map(m);
        svg.line((f.l, p), (f.r, p), r##"stroke="#f3f3f3""##);
        svg.line((f.l - 3.0, p), (f.l, p), r##"stroke="#444444""##);
    }
    for (t, label) in &y.ticks {
        let p = y.map(*t);
        svg.line((f.l, p), (f.r, p), r##"stroke="#e4e4e4""##);
        svg.line((f.l - 5.0, p), (f.l, p), r##"stroke="#444444""##);
        svg.text(
            (f.l - 8.0, p + 4.0),
            r#"text-anchor="end" font-size="11""#,
            label,
        );
    }
    svg.rect(
        (f.l, f.t),
        (f.r - f.l, f.b - f.t),
        r##"fill="none" stroke="#444444""##,
        None,
    );
    svg.text_up(
        (f.l - 52.0, (f.t + f.b) / 2.0),
        r#"text-anchor="middle" font-size="13""#,
        title,
    );
}

/// Rings the search result at `p` and labels it, the label kept inside the frame.
fn mark_result(svg: &mut Svg, f: Frame, p: (f64, f64), label: &str) {
    svg.circle(
        p,
        9.0,
        &format!(r#"class="result" fill="none" stroke="{GREEN}" stroke-width="2.5""#),
        None,
    );
    let right_half = p.0 > (f.l + f.r) / 2.0;
    let (dx, anchor) = if right_half {
        (-14.0, "end")
    } else {
        (14.0, "start")
    };
    let y = if p.1 - 14.0 < f.t + 14.0 {
        p.1 + 24.0
    } else {
        p.1 - 14.0
    };
    let attrs = format!(
        r#"class="result-label" text-anchor="{anchor}" font-size="13" font-weight="bold" fill="{GREEN}" stroke="white" stroke-width="4" paint-order="stroke""#
    );
    svg.text((p.0 + dx, y), &attrs, label);
}

/// A min–max whisker at height `cy` with end caps `cap` high each way; returns
/// its right end.
fn whisker(svg: &mut Svg, a: f64, b: f64, cy: f64, cap: f64) -> f64 {
    let style = r##"class="whisker" stroke="#222222" stroke-width="1.5""##;
    svg.line((a, cy), (b, cy), style);
    for e in [a, b] {
        svg.line((e, cy - cap * 0.6), (e, cy + cap * 0.6), style);
    }
    a.max(b)
}

/// How a legend entry looks.
enum Swatch {
    /// A marker: fill, stroke.
    Marker(&'static str, &'static str),
    /// A line: colour, dashed.
    Line(&'static str, bool),
    /// A line with a marker on it: colour, dashed.
    LineMarker(&'static str, bool),
    /// A ring (the result mark).
    Ring(&'static str),
}

/// A boxed legend with its top-left corner at `at`.
fn draw_legend(svg: &mut Svg, at: (f64, f64), items: &[(Swatch, String)]) {
    let row = 19.0;
    let longest = items.iter().map(|i| i.1.chars().count()).max().unwrap_or(0) as f64;
    let size = (40.0 + longest * 6.6, 8.0 + row * items.len() as f64);
    svg.rect(
        at,
        size,
        r##"class="legend" fill="white" fill-opacity="0.9" stroke="#bbbbbb""##,
        None,
    );
    for (i, (swatch, label)) in items.iter().enumerate() {
        let (x, y) = (at.0 + 8.0, at.1 + 4.0 + row * (i as f64 + 0.5));
        let dash = |d: bool| if d { r#" stroke-dasharray="5 3""# } else { "" };
        match swatch {
            Swatch::Marker(fill, stroke) => svg.circle(
                (x + 11.0, y),
                4.5,
                &format!(r#"fill="{fill}" stroke="{stroke}" stroke-width="2""#),
                None,
            ),
            Swatch::Line(c, d) => svg.line(
                (x, y),
                (x + 22.0, y),
                &format!(r#"stroke="{c}" stroke-width="1.5"{}"#, dash(*d)),
            ),
            Swatch::LineMarker(c, d) => {
                svg.line(
                    (x, y),
                    (x + 22.0, y),
                    &format!(r#"stroke="{c}" stroke-width="2"{}"#, dash(*d)),
                );
                svg.circle((x + 11.0, y), 3.5, &format!(r#"fill="{c}""#), None);
            }
            Swatch::Ring(c) => svg.circle(
                (x + 11.0, y),
                7.0,
                &format!(r#"fill="none" stroke="{c}" stroke-width="2.5""#),
                None,
            ),
        }
        svg.text((x + 30.0, y + 4.0), r#"font-size="12""#, label);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::SearchParams;

    fn trial(offered_mpps: f64, fwd_mpps: f64, pass: bool) -> Trial {
        Trial {
            offered_pps: offered_mpps * 1e6,
            forwarded_pps: fwd_mpps * 1e6,
            loss_ratio: 1.0 - fwd_mpps / offered_mpps,
            pass,
            ..Default::default()
        }
    }

    fn lat(p50_us: f64, p99_us: f64, max_us: f64) -> LatencyNs {
        let ns = |u: f64| (u * 1e3) as u64;
        LatencyNs {
            samples: 1000,
            min: ns(p50_us) / 2,
            mean: p50_us * 1e3,
            p50: ns(p50_us),
            p90: ns((p50_us + p99_us) / 2.0),
            p99: ns(p99_us),
            p999: ns((p99_us + max_us) / 2.0),
            max: ns(max_us),
        }
    }

    fn report(dut: &str, trials: Vec<Trial>, loss_ratio: f64) -> Report {
        let result = trials
            .iter()
            .filter(|t| t.pass)
            .max_by(|a, b| a.offered_pps.total_cmp(&b.offered_pps))
            .cloned();
        Report {
            tool: "fastpath-bench".into(),
            dut: dut.into(),
            spec: serde_json::json!({}),
            frame_mean_bytes: 64.0,
            search: Some(SearchParams {
                loss_ratio,
                trial_seconds: 1.0,
                resolution: 0.01,
                max_rate_pps: 14.88e6,
                retries: 0,
            }),
            trials,
            result,
        }
    }

    /// A binary search's trials, in the order it ran them, with latency.
    fn search_report() -> Report {
        let mut trials = vec![
            trial(14.88, 11.2, false),
            trial(7.44, 7.44, true),
            trial(11.16, 11.0, false),
            trial(9.30, 9.30, true),
            trial(10.23, 10.23, true),
            trial(10.70, 10.68, false),
        ];
        for (i, t) in trials.iter_mut().enumerate() {
            let k = 1.0 + t.offered_pps / 4e6 + i as f64 * 0.1;
            t.latency_ns = Some(lat(2.0 * k, 9.0 * k, 80.0 * k));
        }
        trials[3].latency_ns = None;
        report("fastpath router", trials, 0.0)
    }

    /// Parses `svg` and checks every numeric attribute is a finite number.
    fn parse(svg: &str) -> roxmltree::Document<'_> {
        assert!(!svg.contains("NaN") && !svg.contains("inf\""), "{svg}");
        let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
        for n in doc.descendants().filter(|n| n.is_element()) {
            for a in n.attributes() {
                if [
                    "x", "y", "x1", "y1", "x2", "y2", "cx", "cy", "r", "width", "height", "points",
                ]
                .contains(&a.name())
                {
                    for v in a.value().split([' ', ',']) {
                        assert!(
                            v.parse::<f64>().is_ok_and(f64::is_finite),
                            "{}={}",
                            a.name(),
                            a.value()
                        );
                    }
                }
            }
        }
        doc
    }

    fn num(n: roxmltree::Node, attr: &str) -> f64 {
        n.attribute(attr).unwrap().parse().unwrap()
    }

    fn with_class<'a>(doc: &'a roxmltree::Document, class: &str) -> Vec<roxmltree::Node<'a, 'a>> {
        doc.descendants()
            .filter(|n| {
                n.attribute("class")
                    .is_some_and(|c| c.split(' ').any(|c| c == class))
            })
            .collect()
    }

    #[test]
    fn rate_plot_has_a_marker_per_trial_in_order_of_offered_rate() {
        let r = search_report();
        let svg = rate_svg(&r);
        let doc = parse(&svg);
        let markers = with_class(&doc, "trial");
        assert_eq!(markers.len(), r.trials.len());
        assert_eq!(with_class(&doc, "pass").len(), 3);
        assert_eq!(with_class(&doc, "fail").len(), 3);
        let xs: Vec<f64> = markers.iter().map(|m| num(*m, "cx")).collect();
        assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
        // Higher forwarded rate is higher up (smaller y): 7.44 vs 14.88 offered.
        assert!(num(markers[0], "cy") > num(markers[5], "cy"));
        // The joining line goes through the markers in the same order.
        let line = doc
            .descendants()
            .find(|n| n.has_tag_name("polyline"))
            .unwrap();
        let first = line.attribute("points").unwrap().split(' ').next().unwrap();
        assert_eq!(
            first.split(',').next().unwrap().parse::<f64>().unwrap(),
            xs[0]
        );
        assert!(svg.contains("NDR 10.23 Mpps"), "{svg}");
        assert_eq!(with_class(&doc, "result").len(), 1);
    }

    #[test]
    fn rate_plot_draws_the_no_loss_diagonal() {
        let doc_src = rate_svg(&search_report());
        let doc = parse(&doc_src);
        let l = with_class(&doc, "no-loss");
        assert_eq!(l.len(), 1);
        let l = l[0];
        assert!(l.attribute("stroke-dasharray").is_some());
        // From bottom-left to top-right, and a passing trial (no loss) lies on it.
        let (x1, y1, x2, y2) = (num(l, "x1"), num(l, "y1"), num(l, "x2"), num(l, "y2"));
        assert!(x2 > x1 && y2 < y1);
        let ok = with_class(&doc, "pass")[0];
        let on_line = y1 + (num(ok, "cx") - x1) * (y2 - y1) / (x2 - x1);
        assert!(
            (on_line - num(ok, "cy")).abs() < 0.5,
            "{on_line} vs {}",
            num(ok, "cy")
        );
    }

    #[test]
    fn pdr_is_labelled_with_its_loss_ratio() {
        let mut r = search_report();
        r.search.as_mut().unwrap().loss_ratio = 0.005;
        assert!(rate_svg(&r).contains("PDR (0.5 %) 10.23 Mpps"));
    }

    #[test]
    fn text_is_escaped() {
        let mut r = search_report();
        r.dut = "a<b&c".into();
        r.tool = "t\"o'o>l\u{1}".into();
        for svg in [rate_svg(&r), latency_svg(&r)] {
            let doc = parse(&svg);
            let title = doc.descendants().find(|n| n.has_tag_name("text")).unwrap();
            assert!(title.text().unwrap().starts_with("a<b&c: "));
            assert!(svg.contains("a&lt;b&amp;c"));
        }
        let bars = vec![("x<y & z".to_string(), 1.0, 0.5, 2.0)];
        let svg = bars_svg("<&>", "Mpps", &bars);
        let doc = parse(&svg);
        let texts: Vec<&str> = doc.descendants().filter_map(|n| n.text()).collect();
        assert!(
            texts.contains(&"<&>") && texts.contains(&"x<y & z"),
            "{texts:?}"
        );
    }

    #[test]
    fn empty_and_single_trial_reports_are_valid() {
        let mut empty = report("dut", vec![], 0.0);
        for svg in [rate_svg(&empty), latency_svg(&empty)] {
            parse(&svg);
        }
        assert!(rate_svg(&empty).contains("no trials"));
        assert!(latency_svg(&empty).contains("no latency samples"));
        empty.search = None;
        empty.frame_mean_bytes = f64::NAN;
        parse(&rate_svg(&empty));

        let mut one = report("dut", vec![trial(5.0, 5.0, true)], 0.0);
        one.trials[0].latency_ns = Some(lat(3.0, 3.0, 3.0));
        for svg in [rate_svg(&one), latency_svg(&one)] {
            parse(&svg);
        }
        assert!(rate_svg(&one).contains("NDR 5.00 Mpps"));

        // Zero and non-finite rates, all-equal latency of 0 ns, a failing search.
        let mut zero = report(
            "dut",
            vec![
                trial(0.0, 0.0, false),
                trial(f64::NAN, f64::INFINITY, false),
            ],
            0.0,
        );
        zero.trials[0].latency_ns = Some(LatencyNs {
            samples: 5,
            ..Default::default()
        });
        zero.trials[0].loss_ratio = f64::NAN;
        for svg in [rate_svg(&zero), latency_svg(&zero)] {
            parse(&svg);
        }
        assert!(rate_svg(&zero).contains("no trial passed"));
    }

    #[test]
    fn bar_chart_draws_bars_whiskers_and_values() {
        let bars = vec![
            ("testpmd io".to_string(), 30.2, 29.8, 30.9),
            ("testpmd macswap".to_string(), 24.0, 23.1, 24.4),
            ("fastpath".to_string(), 18.5, 18.5, 18.5),
            ("broken".to_string(), f64::NAN, f64::NAN, f64::INFINITY),
        ];
        let svg = bars_svg("forwarding rate", "Mpps", &bars);
        let doc = parse(&svg);
        let rects = with_class(&doc, "bar");
        assert_eq!(rects.len(), 3);
        assert!(num(rects[0], "width") > num(rects[1], "width"));
        assert_eq!(with_class(&doc, "whisker").len(), 9);
        assert!(svg.contains("30.2 Mpps") && svg.contains("18.5 Mpps") && svg.contains("n/a"));
        parse(&bars_svg("nothing", "Mpps", &[]));
        parse(&bars_svg("zeros", "", &[("z".into(), 0.0, 0.0, 0.0)]));
        let many: Vec<_> = (0..40)
            .map(|i| (format!("b{i}"), i as f64, 0.0, i as f64 * 1.5))
            .collect();
        parse(&bars_svg("many", "Gbit/s", &many));
    }

    #[test]
    fn nice_ticks_step_by_1_2_5_and_cover_the_range() {
        let cases = [
            (0.0, 1.0),
            (0.0, 14.88),
            (0.0, 0.0),
            (3.0, 3.0),
            (-2.5, 7.1),
            (0.013, 0.0171),
            (0.0, 123456.0),
            (10.0, 0.0),
        ];
        for (lo, hi) in cases {
            let t = nice_ticks(lo, hi, 6);
            assert!(t.len() >= 2 && t.len() <= 14, "{lo} {hi}: {t:?}");
            assert!(
                t[0] <= lo.min(hi) && *t.last().unwrap() >= lo.max(hi),
                "{lo} {hi}: {t:?}"
            );
            let step = t[1] - t[0];
            let mantissa = step / 10f64.powf(step.log10().floor());
            assert!(
                [1.0, 2.0, 5.0, 10.0]
                    .iter()
                    .any(|m| (mantissa - m).abs() < 1e-6),
                "{step}"
            );
            assert!(t
                .windows(2)
                .all(|w| ((w[1] - w[0]) - step).abs() < step * 1e-6));
            assert!(
                t.iter()
                    .all(|v| (v / step - (v / step).round()).abs() < 1e-6),
                "{t:?}"
            );
        }
        assert_eq!(
            nice_ticks(0.0, 14.88, 6),
            [0.0, 2.0, 4.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0]
        );
        assert_eq!(nice_ticks(0.0, 0.0, 6).first(), Some(&0.0));
        assert_eq!(Axis::linear(0.0, 1.0, 0.0, 100.0).ticks[1].1, "0.2");
        assert_eq!(decade_label(3), "1000");
        assert_eq!(decade_label(-2), "0.01");
    }

    #[test]
    fn latency_plot_uses_a_log_axis() {
        let mut r = report(
            "dut",
            vec![
                trial(1.0, 1.0, true),
                trial(2.0, 2.0, true),
                trial(3.0, 3.0, true),
            ],
            0.0,
        );
        r.trials[0].latency_ns = Some(lat(1.0, 10.0, 100.0));
        r.trials[2].latency_ns = Some(lat(1.0, 10.0, 100.0));
        let svg = latency_svg(&r);
        let doc = parse(&svg);
        let series = with_class(&doc, "series");
        assert_eq!(series.len(), 5);
        let cy = |name: &str| -> Vec<f64> {
            let g = series
                .iter()
                .find(|g| g.attribute("data-series") == Some(name))
                .unwrap();
            g.children()
                .filter(|n| n.has_tag_name("circle"))
                .map(|c| num(c, "cy"))
                .collect()
        };
        let (p50, p99, max) = (cy("p50"), cy("p99"), cy("max"));
        assert_eq!(p50.len(), 2, "the trial without latency is skipped");
        assert!(p99[0] < p50[0], "p99 above p50");
        // 1, 10, 100 µs are evenly spaced: a log axis.
        assert!(
            ((p50[0] - p99[0]) - (p99[0] - max[0])).abs() < 0.2,
            "{p50:?} {p99:?} {max:?}"
        );
        assert!(svg.contains(">10</text>") && svg.contains(">100</text>"));
    }

    #[test]
    fn writes_both_plots_next_to_the_stem() {
        let dir = tempfile::tempdir().unwrap();
        let stem = dir.path().join("sub/run1");
        let paths = write_plots(&search_report(), &stem).unwrap();
        assert_eq!(
            paths,
            [
                dir.path().join("sub/run1-rate.svg"),
                dir.path().join("sub/run1-latency.svg")
            ]
        );
        for p in paths {
            parse(&std::fs::read_to_string(p).unwrap());
        }
    }
}
