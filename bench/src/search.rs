//! RFC 2544 throughput search: the highest offered rate whose loss ratio is at
//! most the allowed one (0: NDR, the no-drop rate; e.g. 0.005: a PDR).
//!
//! A first trial at the maximum rate; if it passes, that is the answer.
//! Otherwise a binary search between 0 and the maximum, each trial halving the
//! window, until the window is no wider than the resolution (a fraction of the
//! maximum). The answer is the last passing trial, so it is at most one
//! resolution step below the true threshold and never above it.

use crate::report::{SearchParams, Trial};

/// Something that runs one trial at an offered rate.
pub trait Device {
    /// Offer `rate_pps` (None: as fast as the generator can) for the search's
    /// trial length; `allowed_loss` decides the trial's `pass`.
    fn trial(&mut self, rate_pps: Option<f64>, allowed_loss: f64) -> Result<Trial, String>;
}

/// What a search found.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub params: SearchParams,
    pub trials: Vec<Trial>,
    /// The highest passing trial.
    pub result: Option<Trial>,
}

/// The search window after some trials, for the progress display.
#[derive(Clone, Copy, Debug)]
pub struct Window {
    pub lo_pps: f64,
    pub hi_pps: f64,
}

/// How to search.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Upper bound; None measures it first, with a trial as fast as the
    /// generator can send (that trial's offered rate is the bound).
    pub max_rate_pps: Option<f64>,
    /// Loss ratio a trial may have and pass (0: NDR).
    pub loss_ratio: f64,
    /// Stop when the window is this fraction of the bound.
    pub resolution: f64,
    pub trial_seconds: f64,
    /// Repeat a failing trial up to this many times at the same rate; the
    /// rate passes if a repeat does. 0 is RFC 2544's single trial. On a
    /// shared machine a host hiccup can lose a few packets at any rate: a
    /// retry tells that from a device that loses at the rate every time.
    pub retries: u32,
}

/// Run the search; `progress` sees every trial with the window after it.
pub fn search(
    dev: &mut dyn Device,
    o: Options,
    mut progress: impl FnMut(&Trial, Window),
) -> Result<Outcome, String> {
    let Options {
        max_rate_pps,
        loss_ratio,
        resolution,
        trial_seconds,
        retries,
    } = o;
    if !(0.0..1.0).contains(&loss_ratio) {
        return Err(format!(
            "loss ratio {loss_ratio} is outside [0, 1): 0 for NDR, e.g. 0.005 for a 0.5 % PDR"
        ));
    }
    if !(resolution > 0.0 && resolution < 1.0) {
        return Err(format!(
            "resolution {resolution} is outside (0, 1): a fraction of the maximum rate, e.g. 0.01"
        ));
    }
    let mut trials = Vec::new();
    let first = dev.trial(max_rate_pps, loss_ratio)?;
    let max = max_rate_pps.unwrap_or(first.offered_pps);
    if !(max > 0.0 && max.is_finite()) {
        return Err(format!(
            "the maximum rate is {max} packets/s: the generator sent nothing"
        ));
    }
    let (mut lo, mut hi) = (0.0, max);
    let mut best = None;
    let step = resolution * max;
    let mut rate = max;
    let mut next = Some(first);
    loop {
        // A trial at `rate`, repeated while it fails and retries are left.
        let mut t = match next.take() {
            Some(t) => t,
            None => dev.trial(Some(rate), loss_ratio)?,
        };
        for _ in 0..retries {
            if t.pass {
                break;
            }
            progress(
                &t,
                Window {
                    lo_pps: lo,
                    hi_pps: hi,
                },
            );
            trials.push(t);
            t = dev.trial(Some(rate), loss_ratio)?;
        }
        if t.pass {
            lo = rate;
            best = Some(t.clone());
        } else {
            hi = rate;
        }
        progress(
            &t,
            Window {
                lo_pps: lo,
                hi_pps: hi,
            },
        );
        trials.push(t);
        if hi - lo <= step {
            break;
        }
        rate = (lo + hi) / 2.0;
    }
    Ok(Outcome {
        params: SearchParams {
            loss_ratio,
            trial_seconds,
            resolution,
            max_rate_pps: max,
            retries,
        },
        trials,
        result: best,
    })
}

/// A device of known capacity for tests and dry runs: forwards up to
/// `capacity_pps`, drops the excess; `generator_max_pps` is what "as fast as
/// possible" offers.
#[derive(Clone, Debug)]
pub struct Synthetic {
    pub capacity_pps: f64,
    pub generator_max_pps: f64,
    pub seconds: f64,
}

impl Device for Synthetic {
    fn trial(&mut self, rate: Option<f64>, allowed_loss: f64) -> Result<Trial, String> {
        let offered = rate.unwrap_or(self.generator_max_pps);
        let sent = (offered * self.seconds).round() as u64;
        let received = ((offered.min(self.capacity_pps)) * self.seconds).round() as u64;
        let lost = sent - received.min(sent);
        let loss_ratio = if sent == 0 {
            1.0
        } else {
            lost as f64 / sent as f64
        };
        Ok(Trial {
            offered_pps: offered,
            sent,
            received,
            lost,
            loss_ratio,
            forwarded_pps: received as f64 / self.seconds,
            seconds: self.seconds,
            pass: sent > 0 && loss_ratio <= allowed_loss,
            ..Default::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(max: Option<f64>, loss: f64, res: f64, retries: u32) -> Options {
        Options {
            max_rate_pps: max,
            loss_ratio: loss,
            resolution: res,
            trial_seconds: 1.0,
            retries,
        }
    }

    /// Loses a packet in every other trial whatever the rate (a host hiccup),
    /// and above its capacity always.
    struct Flaky {
        inner: Synthetic,
        n: u32,
    }

    impl Device for Flaky {
        fn trial(&mut self, rate: Option<f64>, allowed: f64) -> Result<Trial, String> {
            let mut t = self.inner.trial(rate, allowed)?;
            self.n += 1;
            if self.n % 2 == 1 && t.lost == 0 {
                t.lost = 1;
                t.received -= 1;
                t.loss_ratio = 1.0 / t.sent as f64;
                t.pass = false;
            }
            Ok(t)
        }
    }

    #[test]
    fn a_retry_tells_a_hiccup_from_the_device_limit() {
        let flaky = || Flaky {
            inner: Synthetic {
                capacity_pps: 6e6,
                generator_max_pps: 10e6,
                seconds: 1.0,
            },
            n: 0,
        };
        // Without retries every hiccup pulls the window down: more than one
        // step below the 6 Mpps capacity.
        let o = search(&mut flaky(), opts(Some(10e6), 0.0, 0.01, 0), |_, _| {}).unwrap();
        let without = o.result.map(|t| t.offered_pps).unwrap_or(0.0);
        assert!(6e6 - without > 0.01 * 10e6, "{without}");
        // With one retry the search lands within a step below capacity.
        let o = search(&mut flaky(), opts(Some(10e6), 0.0, 0.01, 1), |_, _| {}).unwrap();
        let with = o.result.unwrap().offered_pps;
        assert!(with <= 6e6 && 6e6 - with <= 0.01 * 10e6, "{with}");
        assert_eq!(o.params.retries, 1);
    }

    fn run(capacity: f64, max: Option<f64>, loss: f64, res: f64) -> Outcome {
        let mut dev = Synthetic {
            capacity_pps: capacity,
            generator_max_pps: 20e6,
            seconds: 1.0,
        };
        search(&mut dev, opts(max, loss, res, 0), |_, _| {}).unwrap()
    }

    #[test]
    fn ndr_converges_within_the_resolution_below_capacity() {
        for capacity in [1.0e6, 3.3e6, 7.77e6, 12.5e6, 19.99e6] {
            for res in [0.01, 0.001] {
                let o = run(capacity, None, 0.0, res);
                let r = o.result.expect("a passing trial").offered_pps;
                assert!(r <= capacity, "{r} above capacity {capacity}");
                assert!(
                    capacity - r <= res * 20e6,
                    "{r} more than one step below {capacity}"
                );
                // log2(1 / res) halvings plus the first trial.
                let bound = (1.0 / res).log2().ceil() as usize + 1;
                assert!(o.trials.len() <= bound, "{} trials", o.trials.len());
                assert_eq!(o.params.max_rate_pps, 20e6);
            }
        }
    }

    #[test]
    fn pdr_allows_the_given_loss() {
        // Loss = 1 - C / r <= 0.5 % up to r = C / 0.995.
        let c = 5e6;
        let o = run(c, Some(10e6), 0.005, 0.001);
        let r = o.result.unwrap().offered_pps;
        let threshold = c / 0.995;
        assert!(
            r > c && r <= threshold && threshold - r <= 0.001 * 10e6,
            "{r}"
        );
    }

    #[test]
    fn a_device_faster_than_the_generator_passes_at_once() {
        let o = run(30e6, None, 0.0, 0.01);
        assert_eq!(o.trials.len(), 1);
        assert_eq!(o.result.unwrap().offered_pps, 20e6);
    }

    #[test]
    fn a_dead_device_ends_without_a_result() {
        let o = run(0.0, Some(1e6), 0.0, 0.01);
        assert!(o.result.is_none());
        assert!(o.trials.len() <= 8, "{}", o.trials.len());
    }

    #[test]
    fn bad_parameters_are_refused() {
        let mut dev = Synthetic {
            capacity_pps: 1.0,
            generator_max_pps: 1.0,
            seconds: 1.0,
        };
        let e = search(&mut dev, opts(None, 1.5, 0.01, 0), |_, _| {}).unwrap_err();
        assert!(e.contains("loss ratio"), "{e}");
        let e = search(&mut dev, opts(None, 0.0, 0.0, 0), |_, _| {}).unwrap_err();
        assert!(e.contains("resolution"), "{e}");
    }
}
