//! Plots (SVG) of a run: offered vs forwarded rate, latency percentiles.
//!
//! Drawn with `plotters` on its SVG backend, which writes text as `<text>`
//! elements (no fonts are needed to make a plot; the viewer picks a sans-serif
//! one). Every plot is a self-contained document of a fixed width (`W`) on a
//! white background. Text from the report (device name, tool, bar labels) is
//! cleaned of characters XML cannot hold, and values are made finite before
//! they reach the chart, so empty reports, a single trial, zero rates and
//! all-equal values still give a valid (if sparse) picture.
//!
//! - [`rate_svg`]: offered vs forwarded rate per trial, the y = x "no loss"
//!   line, and the NDR/PDR found by the search.
//! - [`latency_svg`]: p50 … max latency per trial vs offered rate, log scale.
//! - [`bars_svg`]: horizontal bars (median) with min–max whiskers, for the
//!   side-by-side comparison of testpmd engines and fastpath.
//! - [`write_plots`]: the first two, written next to a report.

use crate::report::{LatencyNs, Report, Trial};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Width of every plot (px).
const W: u32 = 720;
/// Height of the rate and latency plots, and the least height of a bar chart (px).
const H: u32 = 440;
/// Lowest latency a log axis shows (µs): 1 ns, so that 0 stays on the paper.
const LOG_FLOOR_US: f64 = 1e-3;
/// Largest magnitude plotted; beyond that values are clamped (keeps spans finite).
const MAX_ABS: f64 = 1e15;
/// Radius of a trial's marker on the rate plot (legend swatches are smaller).
const TRIAL_R: i32 = 5;
/// Radius of a latency sample's marker.
const SAMPLE_R: i32 = 3;
/// Radius of the ring around the search result.
const RESULT_R: i32 = 9;

const BLUE: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
const RED: RGBColor = RGBColor(0xd6, 0x27, 0x28);
const GREEN: RGBColor = RGBColor(0x2c, 0xa0, 0x2c);
const ORANGE: RGBColor = RGBColor(0xff, 0x7f, 0x0e);
const PURPLE: RGBColor = RGBColor(0x94, 0x67, 0xbd);
const GREY: RGBColor = RGBColor(0x7f, 0x7f, 0x7f);
const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);
const MUTED: RGBColor = RGBColor(0x55, 0x55, 0x55);

/// What drawing returns; drawing into a string fails only on a bug.
type Drawn = Result<(), Box<dyn std::error::Error>>;

/// Offered vs forwarded rate (Mpps) of every trial, joined in order of offered
/// rate, with the y = x line (no loss). Passing trials are filled blue
/// circles, failing ones red rings; the search result, if any, is ringed in
/// green and labelled "NDR x Mpps" (loss ratio 0) or "PDR (p %) x Mpps".
pub fn rate_svg(r: &Report) -> String {
    render(W, H, |root| {
        let trials = by_offered(&r.trials);
        let result = r
            .result
            .as_ref()
            .map(|t| (mpps(t.offered_pps), mpps(t.forwarded_pps)));
        let values = trials
            .iter()
            .flat_map(|t| [mpps(t.offered_pps), mpps(t.forwarded_pps)])
            .chain(result.into_iter().flat_map(|(x, y)| [x, y]));
        // Both axes share one range so that y = x is the frame's diagonal.
        let (lo, hi) = padded(range_with_zero(values));
        let area = header(
            root,
            &format!("{}: offered vs forwarded rate", r.dut),
            &subtitle(r),
        )?;
        let mut chart = ChartBuilder::on(&area)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(lo..hi, lo..hi)?;
        chart
            .configure_mesh()
            .x_desc("offered rate (Mpps)")
            .y_desc("forwarded rate (Mpps)")
            .light_line_style(WHITE)
            .draw()?;
        chart
            .draw_series(LineSeries::new([(lo, lo), (hi, hi)], GREY.stroke_width(2)))?
            .label("no loss (y = x)")
            .legend(|(x, y)| PathElement::new([(x, y), (x + 20, y)], GREY.stroke_width(2)));
        let points: Vec<(f64, f64)> = trials
            .iter()
            .map(|t| (mpps(t.offered_pps), mpps(t.forwarded_pps)))
            .collect();
        chart.draw_series(LineSeries::new(
            points.iter().copied(),
            BLUE.stroke_width(2),
        ))?;
        let marks = |pass: bool| {
            trials
                .iter()
                .zip(&points)
                .filter(move |(t, _)| t.pass == pass)
                .map(|(_, &p)| p)
        };
        chart
            .draw_series(marks(true).map(|p| Circle::new(p, TRIAL_R, BLUE.filled())))?
            .label("trial, passed")
            .legend(|(x, y)| Circle::new((x + 10, y), TRIAL_R - 1, BLUE.filled()));
        chart
            .draw_series(marks(false).map(|p| Circle::new(p, TRIAL_R, RED.stroke_width(2))))?
            .label("trial, lost too much")
            .legend(|(x, y)| Circle::new((x + 10, y), TRIAL_R - 1, RED.stroke_width(2)));
        if let Some((ox, oy)) = result {
            let label = result_label(r, ox);
            // The label on the side of the ring towards the middle.
            let (dx, h) = if ox > (lo + hi) / 2.0 {
                (-14, HPos::Right)
            } else {
                (14, HPos::Left)
            };
            let style = font(13).color(&GREEN).pos(Pos::new(h, VPos::Bottom));
            let ring = EmptyElement::at((ox, oy))
                + Circle::new((0, 0), RESULT_R, GREEN.stroke_width(3))
                + Text::new(label.clone(), (dx, -8), style);
            chart
                .draw_series([ring])?
                .label(label)
                .legend(|(x, y)| Circle::new((x + 10, y), RESULT_R - 2, GREEN.stroke_width(3)));
        } else if trials.is_empty() {
            note(&chart, "no trials")?;
        } else if r.search.is_some() {
            note(&chart, "no trial passed")?;
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    })
}

/// Latency percentiles (p50, p90, p99, p99.9, max; µs, log10 axis) of every
/// trial that has them, against offered rate (Mpps), one line per percentile
/// (max dashed). Without any latency samples the plot says so.
pub fn latency_svg(r: &Report) -> String {
    render(W, H, |root| {
        let samples: Vec<(f64, LatencyNs)> = by_offered(&r.trials)
            .into_iter()
            .filter_map(|t| {
                t.latency_ns
                    .filter(has_latency)
                    .map(|l| (mpps(t.offered_pps), l))
            })
            .collect();
        let (xlo, xhi) = padded(range_with_zero(samples.iter().map(|s| s.0)));
        let us = samples
            .iter()
            .flat_map(|(_, l)| PERCENTILES.iter().map(move |p| (p.get)(l)));
        let (ylo, yhi) = us.fold((f64::INFINITY, 0.0f64), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        let (ylo, yhi) = decades(if samples.is_empty() { 1.0 } else { ylo }, yhi);
        let area = header(
            root,
            &format!("{}: latency vs offered rate", r.dut),
            &subtitle(r),
        )?;
        let mut chart = ChartBuilder::on(&area)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(56)
            .build_cartesian_2d(xlo..xhi, (ylo..yhi).log_scale())?;
        chart
            .configure_mesh()
            .x_desc("offered rate (Mpps)")
            .y_desc("latency (µs, log scale)")
            .y_label_formatter(&|v| trim(*v, 3))
            .light_line_style(WHITE)
            .draw()?;
        if samples.is_empty() {
            return note(&chart, "no latency samples");
        }
        // Highest first in the legend, as the lines lie.
        for p in PERCENTILES.iter().rev() {
            let points: Vec<(f64, f64)> = samples
                .iter()
                .map(|(o, l)| (*o, (p.get)(l).max(ylo)))
                .collect();
            let style = p.color.stroke_width(2);
            if p.dashed {
                chart.draw_series(DashedLineSeries::new(points.iter().copied(), 6, 4, style))?;
            } else {
                chart.draw_series(LineSeries::new(points.iter().copied(), style))?;
            }
            chart
                .draw_series(
                    points
                        .iter()
                        .map(|&pt| Circle::new(pt, SAMPLE_R, p.color.filled())),
                )?
                .label(p.name)
                .legend(move |(x, y)| {
                    EmptyElement::at((x, y))
                        + PathElement::new([(0, 0), (20, 0)], style)
                        + Circle::new((10, 0), SAMPLE_R - 1, style.filled())
                });
        }
        legend(&mut chart, SeriesLabelPosition::UpperLeft)
    })
}

/// Horizontal bar chart of `(label, median, min, max)`: a bar to the median,
/// a min–max whisker, and the median printed with `unit` at the bar's end.
/// 720 px wide; 440 px high, taller when there are more than ~10 bars.
/// Non-finite medians are printed "n/a" and not drawn.
pub fn bars_svg(title: &str, unit: &str, bars: &[(String, f64, f64, f64)]) -> String {
    let h = H.max(130 + 30 * bars.len() as u32);
    render(W, h, |root| {
        let values = bars
            .iter()
            .flat_map(|b| [b.1, b.2, b.3])
            .filter(|v| v.is_finite());
        let (lo, hi) = range_with_zero(values);
        // Room at the right for the values printed after the bars.
        let (lo, hi) = padded((lo, hi + (hi - lo) * 0.15));
        let labels: Vec<String> = bars.iter().map(|b| clip(&b.0, 36)).collect();
        let longest = labels.iter().map(|l| l.chars().count()).max().unwrap_or(0);
        let area = header(root, title, "bar: median, whisker: min – max")?;
        // A band of height 2 per bar, the first at the top: bar i lies in
        // y = row(i) .. row(i) + 2 and is labelled at its middle (odd y).
        let n = bars.len().max(1) as i32;
        let row = |i: usize| 2 * (n - 1 - i as i32);
        let middles: Vec<i32> = (0..n).map(|k| 2 * k + 1).collect();
        let mut chart = ChartBuilder::on(&area)
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size((longest as u32 * 7).clamp(40, 250))
            .build_cartesian_2d(lo..hi, (0..2 * n).with_key_points(middles))?;
        let label_of = |y: &i32| {
            let k = (y / 2).clamp(0, n - 1);
            labels
                .get((n - 1 - k) as usize)
                .cloned()
                .unwrap_or_default()
        };
        chart
            .configure_mesh()
            .x_desc(clean(unit))
            .y_label_formatter(&label_of)
            .disable_y_mesh()
            .light_line_style(WHITE)
            .draw()?;
        if bars.is_empty() {
            return note(&chart, "no data");
        }
        let whisker = INK.stroke_width(2);
        for (i, (_, med, min, max)) in bars.iter().enumerate() {
            let mid = || row(i) + 1;
            let mut end = 0.0f64;
            if med.is_finite() {
                let mut bar =
                    Rectangle::new([(0.0, row(i)), (finite(*med), row(i) + 2)], BLUE.filled());
                bar.set_margin(6, 6, 0, 0);
                chart.draw_series([bar])?;
                end = end.max(finite(*med));
            }
            if min.is_finite() && max.is_finite() {
                let (a, b) = (finite(*min), finite(*max));
                let cap = |x: f64| {
                    EmptyElement::at((x, mid())) + PathElement::new([(0, -6), (0, 6)], whisker)
                };
                chart.draw_series([PathElement::new([(a, mid()), (b, mid())], whisker)])?;
                chart.draw_series([cap(a), cap(b)])?;
                end = end.max(a).max(b);
            }
            let value = if med.is_finite() {
                format!("{} {}", fmt_value(*med), clean(unit))
            } else {
                "n/a".into()
            };
            let style = font(12).color(&INK).pos(Pos::new(HPos::Left, VPos::Center));
            chart
                .draw_series([EmptyElement::at((end, mid())) + Text::new(value, (6, 0), style)])?;
        }
        Ok(())
    })
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
// Drawing helpers

/// A `w` × `h` SVG document on white, drawn by `draw`. Should drawing fail
/// (a bug), the document says so instead of holding half a plot.
fn render(w: u32, h: u32, draw: impl FnOnce(&DrawingArea<SVGBackend, Shift>) -> Drawn) -> String {
    let attempt = |draw: &mut dyn FnMut(&DrawingArea<SVGBackend, Shift>) -> Drawn| {
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
            root.fill(&WHITE)?;
            draw(&root)?;
            root.present()?;
        }
        Ok::<String, Box<dyn std::error::Error>>(svg)
    };
    let mut draw = Some(draw);
    attempt(&mut |root| draw.take().map_or(Ok(()), |d| d(root))).unwrap_or_else(|e| {
        let msg = clean(&format!("plot failed: {e}"));
        attempt(&mut |root| {
            root.draw(&Text::new(msg.clone(), (20, 30), font(14).color(&RED)))?;
            Ok(())
        })
        .unwrap_or_default()
    })
}

/// `size` px sans-serif text (plotters writes 1/1.24 of it as the SVG font size).
fn font(size: u32) -> TextStyle<'static> {
    ("sans-serif", f64::from(size) * 1.24)
        .into_font()
        .color(&INK)
}

/// Title (bold) and subtitle at the top, centred; returns the area below.
fn header<'a>(
    root: &DrawingArea<SVGBackend<'a>, Shift>,
    title: &str,
    subtitle: &str,
) -> Result<DrawingArea<SVGBackend<'a>, Shift>, Box<dyn std::error::Error>> {
    let bold = ("sans-serif", 16.0 * 1.24, FontStyle::Bold)
        .into_font()
        .color(&INK);
    let area = root.titled(&clip(title, 70), bold)?;
    Ok(area.titled(&clip(subtitle, 100), font(12).color(&MUTED))?)
}

/// A grey message in the middle of the plotting area.
fn note<X, Y>(chart: &ChartContext<SVGBackend, Cartesian2d<X, Y>>, msg: &str) -> Drawn
where
    X: Ranged,
    Y: Ranged,
{
    let area = chart.plotting_area().strip_coord_spec();
    let (w, h) = area.dim_in_pixel();
    let style = font(15)
        .color(&GREY)
        .pos(Pos::new(HPos::Center, VPos::Center));
    area.draw(&Text::new(
        msg.to_string(),
        (w as i32 / 2, h as i32 / 2),
        style,
    ))?;
    Ok(())
}

/// The boxed legend of the series that have a label.
fn legend<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    at: SeriesLabelPosition,
) -> Drawn
where
    X: Ranged,
    Y: Ranged,
{
    chart
        .configure_series_labels()
        .position(at)
        .background_style(WHITE.mix(0.9))
        .border_style(GREY)
        .label_font(font(12))
        .draw()?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Data helpers

/// A percentile line of the latency plot: name, value in µs, colour, dashed.
struct Percentile {
    name: &'static str,
    get: fn(&LatencyNs) -> f64,
    color: RGBColor,
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

/// `(lo, hi)` with 5 % headroom above, and 0..1 when empty.
fn padded((lo, hi): (f64, f64)) -> (f64, f64) {
    let span = hi - lo;
    if span > 1e-12 * hi.abs().max(lo.abs()) && span.is_finite() {
        (lo, hi + span * 0.05)
    } else if lo == 0.0 {
        (0.0, 1.0)
    } else {
        (lo - lo.abs() * 0.1, hi + hi.abs() * 0.1)
    }
}

/// Whole decades covering `lo`..`hi` (µs, at least one decade; values below
/// [`LOG_FLOOR_US`] are drawn at it).
fn decades(lo: f64, hi: f64) -> (f64, f64) {
    let lo = finite(lo).max(LOG_FLOOR_US);
    let hi = finite(hi).max(lo);
    let e0 = lo.log10().floor() as i32;
    let e1 = (hi.log10().ceil() as i32).max(e0 + 1);
    (10f64.powi(e0), 10f64.powi(e1))
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

/// `s` as XML can hold it (the SVG backend escapes markup, not these): line
/// breaks as spaces, characters XML 1.0 forbids as U+FFFD.
fn clean(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '\t' | '\n' | '\r' => ' ',
            c if (c as u32) < 0x20 || c == '\u{FFFE}' || c == '\u{FFFF}' => '\u{FFFD}',
            c => c,
        })
        .collect()
}

/// `s` cleaned and cut to `max` characters, with "…" when cut.
fn clip(s: &str, max: usize) -> String {
    let s = clean(s);
    if s.chars().count() <= max {
        s
    } else {
        s.chars().take(max.saturating_sub(1)).chain(['…']).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::SearchParams;
    use roxmltree::{Document, Node};

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

    /// Parses `svg` and checks every coordinate lies on the paper.
    fn parse(svg: &str) -> Document<'_> {
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
        let doc = Document::parse(svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
        let root = doc.root_element();
        assert!(root.has_tag_name("svg"));
        let (w, h) = (num(root, "width"), num(root, "height"));
        assert!(w > 0.0 && h > 0.0);
        for n in doc.descendants().filter(|n| n.is_element()) {
            for a in n.attributes() {
                let (along, limit) = match a.name() {
                    "x" | "x1" | "x2" | "cx" | "width" => ("x", w),
                    "y" | "y1" | "y2" | "cy" | "height" => ("y", h),
                    "r" => ("r", w),
                    "points" => ("points", w.max(h)),
                    _ => continue,
                };
                for v in a.value().split([' ', ',']).filter(|v| !v.is_empty()) {
                    let v: f64 = v
                        .parse()
                        .unwrap_or_else(|e| panic!("{}={}: {e}", a.name(), a.value()));
                    assert!(
                        (-1.0..=limit + 1.0).contains(&v),
                        "{}={} off the paper ({along} up to {limit})",
                        a.name(),
                        a.value()
                    );
                }
            }
        }
        doc
    }

    fn num(n: Node, attr: &str) -> f64 {
        n.attribute(attr).unwrap().parse().unwrap()
    }

    fn hex(c: RGBColor) -> String {
        format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
    }

    /// Circles of radius `r`, filled with `fill` or (given "none") ringed in `stroke`.
    fn circles<'a>(doc: &'a Document, r: i32, fill: &str, stroke: &str) -> Vec<Node<'a, 'a>> {
        doc.descendants()
            .filter(|n| {
                n.has_tag_name("circle")
                    && n.attribute("r") == Some(&r.to_string())
                    && n.attribute("fill") == Some(fill)
                    && n.attribute("stroke") == Some(stroke)
            })
            .collect()
    }

    /// The texts of the document, trimmed.
    fn texts<'a>(doc: &'a Document) -> Vec<&'a str> {
        doc.descendants()
            .filter(|n| n.has_tag_name("text"))
            .filter_map(|n| n.text())
            .map(str::trim)
            .collect()
    }

    /// The points of the polylines drawn in `color`.
    fn lines(doc: &Document, color: RGBColor) -> Vec<Vec<(f64, f64)>> {
        doc.descendants()
            .filter(|n| n.has_tag_name("polyline") && n.attribute("stroke") == Some(&hex(color)))
            .map(|n| {
                n.attribute("points")
                    .unwrap()
                    .split_whitespace()
                    .map(|p| {
                        let (x, y) = p.split_once(',').unwrap();
                        (x.parse().unwrap(), y.parse().unwrap())
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn rate_plot_has_a_marker_per_trial_in_order_of_offered_rate() {
        let r = search_report();
        let svg = rate_svg(&r);
        let doc = parse(&svg);
        let pass = circles(&doc, TRIAL_R, &hex(BLUE), "none");
        let fail = circles(&doc, TRIAL_R, "none", &hex(RED));
        assert_eq!((pass.len(), fail.len()), (3, 3));
        // The joining line goes through every marker, in order of offered rate.
        let joined: Vec<Vec<(f64, f64)>> = lines(&doc, BLUE)
            .into_iter()
            .filter(|l| l.len() == r.trials.len())
            .collect();
        assert_eq!(joined.len(), 1, "one line through the trials");
        let line = &joined[0];
        assert!(line.windows(2).all(|w| w[0].0 < w[1].0), "{line:?}");
        for m in pass.iter().chain(&fail) {
            let at = (num(*m, "cx"), num(*m, "cy"));
            assert!(line.contains(&at), "marker {at:?} off the line {line:?}");
        }
        // Higher forwarded rate is higher up (smaller y): 7.44 vs 14.88 offered.
        assert!(line[0].1 > line[5].1);
        // The failing trials are the ones that forwarded less than offered.
        let fail_x: Vec<f64> = fail.iter().map(|m| num(*m, "cx")).collect();
        for (i, (t, p)) in by_offered(&r.trials).iter().zip(line).enumerate() {
            assert_eq!(fail_x.contains(&p.0), !t.pass, "trial {i}");
        }
        let t = texts(&doc);
        for want in [
            "fastpath router: offered vs forwarded rate",
            "fastpath-bench, mean frame 64 B, 6 trials",
            "offered rate (Mpps)",
            "forwarded rate (Mpps)",
            "trial, passed",
            "trial, lost too much",
            "no loss (y = x)",
        ] {
            assert!(t.contains(&want), "{want:?} missing from {t:?}");
        }
        // The result: ringed, labelled on the plot and in the legend.
        assert_eq!(
            t.iter().filter(|s| **s == "NDR 10.23 Mpps").count(),
            2,
            "{t:?}"
        );
        let ring = circles(&doc, RESULT_R, "none", &hex(GREEN));
        assert_eq!(ring.len(), 1);
        let at = (num(ring[0], "cx"), num(ring[0], "cy"));
        assert_eq!(line[2], at, "the ring is on the 10.23 Mpps trial");
    }

    #[test]
    fn rate_plot_draws_the_no_loss_diagonal() {
        let svg = rate_svg(&search_report());
        let doc = parse(&svg);
        let diagonal: Vec<Vec<(f64, f64)>> = lines(&doc, GREY)
            .into_iter()
            .filter(|l| l.len() == 2 && l[0].0 != l[1].0)
            .collect();
        // The line itself, longer than its legend swatch.
        let l = diagonal
            .iter()
            .max_by(|a, b| (a[1].0 - a[0].0).total_cmp(&(b[1].0 - b[0].0)))
            .expect("a no-loss line");
        let ((x1, y1), (x2, y2)) = (l[0], l[1]);
        // From bottom-left to top-right, and a passing trial (no loss) lies on it.
        assert!(x2 > x1 && y2 < y1, "{l:?}");
        for ok in circles(&doc, TRIAL_R, &hex(BLUE), "none") {
            let on_line = y1 + (num(ok, "cx") - x1) * (y2 - y1) / (x2 - x1);
            assert!(
                (on_line - num(ok, "cy")).abs() <= 1.5,
                "{on_line} vs {}",
                num(ok, "cy")
            );
        }
    }

    #[test]
    fn pdr_is_labelled_with_its_loss_ratio() {
        let mut r = search_report();
        r.search.as_mut().unwrap().loss_ratio = 0.005;
        let svg = rate_svg(&r);
        assert!(
            texts(&parse(&svg)).contains(&"PDR (0.5 %) 10.23 Mpps"),
            "{svg}"
        );
    }

    #[test]
    fn text_is_escaped() {
        let mut r = search_report();
        r.dut = "a<b&c".into();
        r.tool = "t\"o'o>l\u{1}".into();
        for svg in [rate_svg(&r), latency_svg(&r)] {
            let doc = parse(&svg);
            let t = texts(&doc);
            assert!(t[0].starts_with("a<b&c: "), "{t:?}");
            assert!(t[1].starts_with("t\"o'o>l\u{FFFD}, "), "{t:?}");
            assert!(svg.contains("a&lt;b&amp;c"));
        }
        let bars = vec![("x<y & z".to_string(), 1.0, 0.5, 2.0)];
        let svg = bars_svg("<&>", "Mpps", &bars);
        let doc = parse(&svg);
        let t = texts(&doc);
        assert!(t.contains(&"<&>") && t.contains(&"x<y & z"), "{t:?}");
    }

    #[test]
    fn empty_and_single_trial_reports_are_valid() {
        let mut empty = report("dut", vec![], 0.0);
        assert!(texts(&parse(&rate_svg(&empty))).contains(&"no trials"));
        assert!(texts(&parse(&latency_svg(&empty))).contains(&"no latency samples"));
        empty.search = None;
        empty.frame_mean_bytes = f64::NAN;
        let svg = rate_svg(&empty);
        assert!(
            texts(&parse(&svg)).contains(&"fastpath-bench, 0 trials"),
            "{svg}"
        );

        let mut one = report("dut", vec![trial(5.0, 5.0, true)], 0.0);
        one.trials[0].latency_ns = Some(lat(3.0, 3.0, 3.0));
        let svg = latency_svg(&one);
        let doc = parse(&svg);
        for p in &PERCENTILES {
            assert_eq!(
                circles(&doc, SAMPLE_R, &hex(p.color), "none").len(),
                1,
                "{}",
                p.name
            );
        }
        let svg = rate_svg(&one);
        let doc = parse(&svg);
        assert!(texts(&doc).contains(&"NDR 5.00 Mpps"), "{svg}");
        assert_eq!(circles(&doc, TRIAL_R, &hex(BLUE), "none").len(), 1);

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
        let doc_src = latency_svg(&zero);
        let doc = parse(&doc_src);
        assert_eq!(circles(&doc, SAMPLE_R, &hex(BLUE), "none").len(), 1);
        let svg = rate_svg(&zero);
        let doc = parse(&svg);
        assert!(texts(&doc).contains(&"no trial passed"));
        assert_eq!(circles(&doc, TRIAL_R, "none", &hex(RED)).len(), 2);
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
        let rects: Vec<Node> = doc
            .descendants()
            .filter(|n| n.has_tag_name("rect") && n.attribute("fill") == Some(&hex(BLUE)))
            .collect();
        assert_eq!(rects.len(), 3, "a bar per finite median");
        // In order, top down, as long as their medians.
        let ys: Vec<f64> = rects.iter().map(|r| num(*r, "y")).collect();
        assert!(ys.windows(2).all(|w| w[0] < w[1]), "{ys:?}");
        let widths: Vec<f64> = rects.iter().map(|r| num(*r, "width")).collect();
        for (w, med) in widths.iter().zip([30.2, 24.0, 18.5]) {
            let ratio = w / widths[0] * 30.2;
            assert!((ratio - med).abs() < 0.5, "{widths:?}");
        }
        // Three whiskers: the line and two caps each.
        assert_eq!(lines(&doc, INK).len(), 9);
        let t = texts(&doc);
        for want in [
            "forwarding rate",
            "bar: median, whisker: min – max",
            "testpmd io",
            "testpmd macswap",
            "fastpath",
            "broken",
            "30.2 Mpps",
            "24.0 Mpps",
            "18.5 Mpps",
            "n/a",
            "Mpps",
        ] {
            assert!(t.contains(&want), "{want:?} missing from {t:?}");
        }
        assert!(texts(&parse(&bars_svg("nothing", "Mpps", &[]))).contains(&"no data"));
        parse(&bars_svg("zeros", "", &[("z".into(), 0.0, 0.0, 0.0)]));
        let many: Vec<_> = (0..40)
            .map(|i| (format!("b{i}"), i as f64, 0.0, i as f64 * 1.5))
            .collect();
        let svg = bars_svg("many", "Gbit/s", &many);
        let doc = parse(&svg);
        let t = texts(&doc);
        assert!(many.iter().all(|b| t.contains(&b.0.as_str())), "{t:?}");
        assert_eq!(num(doc.root_element(), "height"), 1330.0);
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
        let cy = |p: &Percentile| -> Vec<f64> {
            circles(&doc, SAMPLE_R, &hex(p.color), "none")
                .iter()
                .map(|c| num(*c, "cy"))
                .collect()
        };
        let [p50, p90, p99, p999, max] = PERCENTILES.each_ref().map(cy);
        assert_eq!(p50.len(), 2, "the trial without latency is skipped");
        for s in [&p90, &p99, &p999, &max] {
            assert_eq!(s.len(), 2);
        }
        assert!(p99[0] < p50[0], "p99 above p50");
        // 1, 10, 100 µs are evenly spaced: a log axis.
        assert!(
            ((p50[0] - p99[0]) - (p99[0] - max[0])).abs() <= 2.0,
            "{p50:?} {p99:?} {max:?}"
        );
        let t = texts(&doc);
        for want in [
            "1",
            "10",
            "100",
            "latency (µs, log scale)",
            "offered rate (Mpps)",
        ] {
            assert!(t.contains(&want), "{want:?} missing from {t:?}");
        }
        for p in &PERCENTILES {
            assert!(t.contains(&p.name), "legend lacks {}: {t:?}", p.name);
            assert!(!lines(&doc, p.color).is_empty(), "no line for {}", p.name);
        }
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
