//! The main lcore's loop in either mode.

use crate::ops::live::{Live, Style};
use crate::ops::sample::Sample;
use crate::ops::state::Ops;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long the main lcore runs, and what it shows meanwhile.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MainLoopOptions {
    /// Stop after this many seconds; None: until a stop signal.
    pub duration: Option<f64>,
    /// The live view's style and period in seconds; None: no live view.
    pub live_view: Option<(Style, f64)>,
}

/// Run `work` (the control plane; true when it did something) until a stop
/// signal or the end of the duration, draw the live view, and nap `idle`
/// when idle.
pub fn main_lcore_loop(
    opts: &MainLoopOptions,
    stop: &AtomicBool,
    started: Instant,
    ops: &Ops,
    idle: Duration,
    mut work: impl FnMut() -> bool,
) {
    let deadline = opts.duration.map(|d| started + Duration::from_secs_f64(d));
    let mut live = opts
        .live_view
        .map(|(style, secs)| Live::new(style, Duration::from_secs_f64(secs), Instant::now()));
    if let Some(l) = live.as_mut() {
        l.start(Sample::take(ops));
    }
    while !stop.load(Ordering::Relaxed) {
        let busy = work();
        let now = Instant::now();
        if deadline.is_some_and(|d| now >= d) {
            break;
        }
        if let Some(l) = live.as_mut().filter(|l| l.due(now)) {
            l.print(started.elapsed(), Sample::take(ops));
        }
        if !busy {
            let nap = match deadline {
                Some(d) => idle.min(d.saturating_duration_since(now)),
                None => idle,
            };
            std::thread::sleep(nap);
        }
    }
}
