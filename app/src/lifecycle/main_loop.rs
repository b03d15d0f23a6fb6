//! The main lcore's loop in either mode.

use super::input_end::{InputEnd, InputSources};
use crate::ops::live::{Live, Style};
use crate::ops::sample::Sample;
use crate::ops::state::Ops;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often the main lcore looks whether the input is used up.
const INPUT_END_PERIOD: Duration = Duration::from_millis(1);

/// How long the main lcore runs, and what it shows meanwhile.
#[derive(Clone, Debug, PartialEq)]
pub struct MainLoopOptions {
    /// Stop after this many seconds; None: until a stop signal (or the end
    /// of the input). With `until_input_done`, the bound on the wait.
    pub duration: Option<f64>,
    /// The live view's style and period in seconds; None: no live view.
    pub live_view: Option<(Style, f64)>,
    /// Stop once the input is used up and nothing is in flight
    /// (`--until-input-done`): what each `--vdev` receives.
    pub until_input_done: Option<InputSources>,
}

/// Why the main lcore's loop ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ended {
    /// A stop signal (Ctrl-C, SIGTERM), or a worker that could not start.
    Stopped,
    /// `--duration` passed.
    Deadline,
    /// The input was used up and nothing was in flight.
    InputDone,
}

/// Run `work` (the control plane; true when it did something) until a stop
/// signal, the end of the duration or, with `input`, the end of the input;
/// draw the live view, and nap `idle` when idle.
pub fn main_lcore_loop(
    opts: &MainLoopOptions,
    stop: &AtomicBool,
    started: Instant,
    ops: &Ops,
    idle: Duration,
    input: Option<&InputEnd>,
    mut work: impl FnMut() -> bool,
) -> Ended {
    let deadline = opts.duration.map(|d| started + Duration::from_secs_f64(d));
    let mut live = opts
        .live_view
        .map(|(style, secs)| Live::new(style, Duration::from_secs_f64(secs), Instant::now()));
    if let Some(l) = live.as_mut() {
        l.start(Sample::take(ops));
    }
    let mut next_check = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        let busy = work();
        let now = Instant::now();
        if let Some(end) = input.filter(|_| now >= next_check) {
            // After the control plane's round: what it handled is counted.
            if end.reached(&Sample::take(ops)) {
                return Ended::InputDone;
            }
            next_check = now + INPUT_END_PERIOD;
        }
        if deadline.is_some_and(|d| now >= d) {
            return Ended::Deadline;
        }
        if let Some(l) = live.as_mut().filter(|l| l.due(now)) {
            l.print(started.elapsed(), Sample::take(ops));
        }
        if !busy {
            let mut nap = match deadline {
                Some(d) => idle.min(d.saturating_duration_since(now)),
                None => idle,
            };
            if input.is_some() {
                nap = nap.min(INPUT_END_PERIOD);
            }
            std::thread::sleep(nap);
        }
    }
    Ended::Stopped
}

/// How long a run goes, for its start line: " for 2 s", " until the input
/// is used up (2000 frames on port 0, at most 60 s)", or nothing.
pub fn run_length(opts: &MainLoopOptions, input: Option<&InputEnd>) -> String {
    match (input, opts.duration) {
        (Some(end), Some(d)) => {
            format!(
                " until the input is used up ({}, at most {d} s)",
                end.describe()
            )
        }
        (Some(end), None) => format!(" until the input is used up ({})", end.describe()),
        (None, Some(d)) => format!(" for {d} s"),
        (None, None) => String::new(),
    }
}
