//! The receiving side of a trial: reads each packet's [`Signature`], counts
//! what arrived, duplicates and reordering (a sequence number lower than one
//! already seen), and records latency (receive TSC minus send TSC) in an
//! `hdrhistogram`, in TSC ticks: converted to nanoseconds once, when read.

use crate::report::{LatencyNs, Trial};
use crate::traffic::{signature_of, Signature};
use hdrhistogram::Histogram;

/// Latencies above this many ticks (about a minute at a few GHz) are clamped.
const MAX_TICKS: u64 = 1 << 40;

/// Counts and latency of the packets of one trial.
pub struct Sink {
    received: u64,
    duplicates: u64,
    reordered: u64,
    /// Frames without our signature (ARP, other traffic), or with a sequence
    /// number from before this trial: not counted as received.
    foreign: u64,
    /// The trial's first sequence number.
    base: u64,
    max_seq: Option<u64>,
    /// One bit per sequence number seen (sequence numbers start at 0 per trial).
    seen: Vec<u64>,
    ticks: Histogram<u64>,
    tsc_hz: u64,
}

impl Sink {
    /// A sink for a trial on a clock of `tsc_hz` whose sequence numbers start at 0.
    pub fn new(tsc_hz: u64) -> Sink {
        Sink::starting_at(tsc_hz, 0)
    }

    /// A sink for a trial whose sequence numbers start at `base`: lower ones
    /// are stragglers of an earlier trial.
    pub fn starting_at(tsc_hz: u64, base: u64) -> Sink {
        Sink::with_expected(tsc_hz, base, 0)
    }

    /// As [`starting_at`](Self::starting_at), with room for `expected`
    /// sequence numbers made before the trial: growing the bitmap while
    /// packets arrive would stall the receive loop.
    pub fn with_expected(tsc_hz: u64, base: u64, expected: u64) -> Sink {
        // Written, not calloc'ed: the pages fault in here, before the trial,
        // not on first touch while packets arrive.
        #[allow(clippy::slow_vector_initialization)]
        let mut seen = Vec::with_capacity((expected / 64 + 1) as usize);
        seen.resize(seen.capacity(), 0);
        Sink {
            seen,
            base: base & Signature::MASK,
            received: 0,
            duplicates: 0,
            reordered: 0,
            foreign: 0,
            max_seq: None,
            ticks: Histogram::new_with_bounds(1, MAX_TICKS, 3).expect("valid histogram bounds"),
            tsc_hz: tsc_hz.max(1),
        }
    }

    /// Account one received frame at TSC `now`.
    #[inline]
    pub fn record(&mut self, frame: &[u8], now: u64) {
        match signature_of(frame) {
            Some(sig) => self.record_signature(sig, now),
            None => self.foreign += 1,
        }
    }

    /// Account one received signature at TSC `now`.
    #[inline]
    pub fn record_signature(&mut self, sig: Signature, now: u64) {
        let Some(seq) = sig.seq.checked_sub(self.base) else {
            self.foreign += 1;
            return;
        };
        let (word, bit) = ((seq / 64) as usize, 1u64 << (seq % 64));
        if word >= self.seen.len() {
            self.seen.resize((word + 1).next_power_of_two(), 0);
        }
        if self.seen[word] & bit != 0 {
            self.duplicates += 1;
            return;
        }
        self.seen[word] |= bit;
        self.received += 1;
        match self.max_seq {
            Some(m) if seq < m => self.reordered += 1,
            _ => self.max_seq = Some(seq),
        }
        let ticks = (now & Signature::MASK).wrapping_sub(sig.tsc) & Signature::MASK;
        self.ticks.saturating_record(ticks.clamp(1, MAX_TICKS));
    }

    /// Packets received (each sequence number once).
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Frames that carried no signature.
    pub fn foreign(&self) -> u64 {
        self.foreign
    }

    fn ns(&self, ticks: u64) -> u64 {
        (u128::from(ticks) * 1_000_000_000 / u128::from(self.tsc_hz)) as u64
    }

    /// Latency percentiles in nanoseconds (None before any packet).
    pub fn latency(&self) -> Option<LatencyNs> {
        let h = &self.ticks;
        if h.is_empty() {
            return None;
        }
        Some(LatencyNs {
            samples: h.len(),
            min: self.ns(h.min()),
            mean: h.mean() * 1e9 / self.tsc_hz as f64,
            p50: self.ns(h.value_at_quantile(0.50)),
            p90: self.ns(h.value_at_quantile(0.90)),
            p99: self.ns(h.value_at_quantile(0.99)),
            p999: self.ns(h.value_at_quantile(0.999)),
            max: self.ns(h.max()),
        })
    }

    /// The trial's figures given what was sent, at `offered_pps` for `seconds`,
    /// passing when the loss ratio is at most `allowed_loss`.
    pub fn trial(&self, sent: u64, offered_pps: f64, seconds: f64, allowed_loss: f64) -> Trial {
        let lost = sent.saturating_sub(self.received);
        // Nothing sent is no evidence of forwarding: all lost (as bench/trex/ndr.py says).
        let loss_ratio = if sent == 0 {
            1.0
        } else {
            lost as f64 / sent as f64
        };
        Trial {
            offered_pps,
            sent,
            received: self.received,
            lost,
            loss_ratio,
            reordered: self.reordered,
            duplicates: self.duplicates,
            forwarded_pps: if seconds > 0.0 {
                self.received as f64 / seconds
            } else {
                0.0
            },
            seconds,
            pass: sent > 0 && loss_ratio <= allowed_loss,
            latency_ns: self.latency(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::traffic::TrafficSpec;

    const HZ: u64 = 2_000_000_000;

    /// Send `n` stamped frames through `path` (which may drop, delay, reorder
    /// or duplicate: it returns the frames delivered, each with its receive
    /// TSC) and account them.
    fn through(
        n: u64,
        path: impl Fn(u64, Vec<u8>, u64) -> Vec<(Vec<u8>, u64)>,
    ) -> (Sink, Vec<(Vec<u8>, u64)>) {
        let spec = TrafficSpec {
            flows: 7,
            ..Default::default()
        };
        let t = spec.templates();
        let mut out = Vec::new();
        for k in 0..n {
            let (si, flow) = (spec.size_index(k), (k % 7) as u32);
            let tpl = &t[si][flow as usize];
            let mut f = tpl.bytes.clone();
            let sent_at = 1_000_000 + k * 100;
            tpl.stamp(
                &mut f,
                Signature {
                    seq: k,
                    tsc: sent_at,
                },
            );
            out.extend(path(k, f, sent_at));
        }
        let mut sink = Sink::new(HZ);
        for (f, at) in &out {
            sink.record(f, *at);
        }
        (sink, out)
    }

    #[test]
    fn every_nth_dropped_is_counted_lost_exactly() {
        // A stage that drops every 10th packet and delays the rest by 5 us.
        let delay = 10_000; // ticks at 2 GHz = 5 us
        let (sink, _) = through(100_000, |k, f, at| {
            if k % 10 == 9 {
                vec![]
            } else {
                vec![(f, at + delay)]
            }
        });
        let t = sink.trial(100_000, 1e6, 0.1, 0.0);
        assert_eq!(
            (t.received, t.lost, t.reordered, t.duplicates),
            (90_000, 10_000, 0, 0)
        );
        assert!((t.loss_ratio - 0.1).abs() < 1e-12);
        assert!(!t.pass);
        assert!(
            sink.trial(100_000, 1e6, 0.1, 0.1).pass,
            "PDR at 10 % passes"
        );
        let l = t.latency_ns.unwrap();
        assert_eq!(l.samples, 90_000);
        for p in [l.min, l.p50, l.p90, l.p99, l.p999, l.max] {
            // hdrhistogram with 3 significant digits: within 0.1 %.
            assert!((p as f64 - 5_000.0).abs() <= 5.0, "{l:?}");
        }
        assert!((t.forwarded_pps - 900_000.0).abs() < 1e-6);
    }

    #[test]
    fn latency_percentiles_follow_a_known_spread() {
        // Packet k is delayed by (k % 100 + 1) us: p50 = 50 us, p90 = 90, p99 = 99, max = 100.
        let (sink, _) = through(10_000, |k, f, at| vec![(f, at + (k % 100 + 1) * 2_000)]);
        let l = sink.latency().unwrap();
        let near = |v: u64, us: f64| (v as f64 / 1000.0 - us).abs() <= us * 0.002;
        assert!(near(l.p50, 50.0) && near(l.p90, 90.0), "{l:?}");
        assert!(
            near(l.p99, 99.0) && near(l.max, 100.0) && near(l.min, 1.0),
            "{l:?}"
        );
        assert!((l.mean / 1000.0 - 50.5).abs() < 0.1, "{l:?}");
    }

    #[test]
    fn swapped_pairs_count_as_reordered_and_copies_as_duplicates() {
        let (sink, _) = through(0, |_, f, at| vec![(f, at)]);
        assert!(
            !sink.trial(0, 0.0, 1.0, 0.0).pass,
            "nothing sent never passes"
        );
        let spec = TrafficSpec::default();
        let tpl = spec.template(64, 0);
        let frame = |seq| {
            let mut f = tpl.bytes.clone();
            tpl.stamp(&mut f, Signature { seq, tsc: 0 });
            f
        };
        let mut s = Sink::new(HZ);
        for seq in [0, 2, 1, 3, 3, 5, 4, 4] {
            s.record(&frame(seq), 10);
        }
        s.record(&tpl.bytes, 10); // no signature
        let t = s.trial(6, 1.0, 1.0, 0.0);
        assert_eq!(
            (t.received, t.lost, t.reordered, t.duplicates),
            (6, 0, 2, 2)
        );
        assert_eq!(s.foreign(), 1);
        assert!(t.pass);

        // A later trial starting at 6 ignores a straggler of this one.
        let mut s = Sink::starting_at(HZ, 6);
        for seq in [5, 6, 7] {
            s.record(&frame(seq), 10);
        }
        let t = s.trial(2, 1.0, 1.0, 0.0);
        assert_eq!((t.received, t.lost, t.reordered, s.foreign()), (2, 0, 0, 1));
    }

    #[test]
    fn latency_survives_the_48_bit_tsc_wrapping() {
        let mut s = Sink::new(HZ);
        let sent = Signature::MASK - 100;
        s.record_signature(Signature { seq: 0, tsc: sent }, (1 << 48) + 1900);
        assert_eq!(s.latency().unwrap().p50, 1000); // 2000 ticks = 1 us
    }
}
