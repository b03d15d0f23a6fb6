//! What the operations plane reads: the ports, every lcore's counters, and
//! the latest control view; installed for the run, retired before the
//! ports stop (a reader never asks a closed port for its counters).

use super::view::ControlView;
use crate::counters::LcoreCounters;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// How fastpath runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// `--config`: the IPv4 router.
    Router,
    /// No config: ports forwarded pairwise, untouched.
    Forward,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Router => "router",
            Mode::Forward => "forward",
        }
    }
}

/// One port: DPDK id and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortName {
    pub id: u16,
    pub name: String,
}

/// The running fastpath as its readers see it.
pub struct Ops {
    pub mode: Mode,
    pub started: Instant,
    pub tsc_hz: u64,
    pub ports: Vec<PortName>,
    /// Worker lcores' counters.
    pub workers: Vec<Arc<LcoreCounters>>,
    /// The main lcore's (the control plane's packets), in router mode.
    pub main: Option<Arc<LcoreCounters>>,
    view: Mutex<Arc<ControlView>>,
    /// A reader wants the route lists rebuilt (`routes_view`).
    routes_wanted: AtomicBool,
}

/// How long a reader of the route lists waits for them to catch up with
/// their tables before it takes what there is (a full table's list takes
/// a few hundred milliseconds, spaced at most to a tenth of the lcore).
const ROUTES_WAIT: Duration = Duration::from_secs(3);

impl Ops {
    pub fn new(
        mode: Mode,
        started: Instant,
        ports: Vec<PortName>,
        workers: Vec<Arc<LcoreCounters>>,
        main: Option<Arc<LcoreCounters>>,
    ) -> Ops {
        Ops {
            mode,
            started,
            tsc_hz: crate::dpdk::tsc_hz(),
            ports,
            workers,
            main,
            view: Mutex::new(Arc::new(ControlView::default())),
            routes_wanted: AtomicBool::new(false),
        }
    }

    /// The latest control view (empty until the main lcore publishes one).
    pub fn view(&self) -> Arc<ControlView> {
        crate::sync::lock(&self.view).clone()
    }

    /// The latest control view with route lists as current as the main
    /// lcore makes them within `ROUTES_WAIT` (3 s): lists behind their tables
    /// are asked for and waited for (the lists are built only when read).
    pub fn routes_view(&self) -> Arc<ControlView> {
        let mut v = self.view();
        let deadline = Instant::now() + ROUTES_WAIT;
        while v.routes_behind && Instant::now() < deadline {
            self.routes_wanted.store(true, Ordering::Release);
            std::thread::sleep(Duration::from_millis(5));
            v = self.view();
        }
        v
    }

    /// Whether a reader asked for the route lists since the last call
    /// (main lcore).
    pub fn take_routes_wanted(&self) -> bool {
        self.routes_wanted.swap(false, Ordering::AcqRel)
    }

    /// Replace the control view (main lcore); its `seq` is set here.
    pub fn publish(&self, mut view: ControlView) {
        let mut slot = crate::sync::lock(&self.view);
        view.seq = slot.seq + 1;
        *slot = Arc::new(view);
    }
}

fn current() -> &'static RwLock<Option<Arc<Ops>>> {
    static CURRENT: RwLock<Option<Arc<Ops>>> = RwLock::new(None);
    &CURRENT
}

/// Make `ops` what the readers see, until [`retire`].
pub fn install(ops: Arc<Ops>) {
    *current().write().unwrap_or_else(|p| p.into_inner()) = Some(ops);
}

/// Stop answering from the running state; waits for a reader in progress,
/// so that after it returns no reader touches a port.
pub fn retire() {
    *current().write().unwrap_or_else(|p| p.into_inner()) = None;
}

/// Run `f` on the running state, `None` when nothing runs (starting or
/// stopping). The state stays installed while `f` runs.
pub fn with_current<R>(f: impl FnOnce(&Ops) -> R) -> Option<R> {
    let guard = current().read().unwrap_or_else(|p| p.into_inner());
    guard.as_deref().map(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops() -> Arc<Ops> {
        Arc::new(Ops::new(Mode::Router, Instant::now(), vec![], vec![], None))
    }

    #[test]
    fn a_reader_of_lists_behind_their_table_asks_and_waits_for_them() {
        let ops = ops();
        ops.publish(ControlView {
            routes_behind: true,
            ..Default::default()
        });
        // The main lcore: publishes current lists once asked.
        let main = {
            let ops = ops.clone();
            std::thread::spawn(move || {
                while !ops.take_routes_wanted() {
                    std::thread::sleep(Duration::from_millis(1));
                }
                ops.publish(ControlView::default());
            })
        };
        let v = ops.routes_view();
        main.join().unwrap();
        assert!(!v.routes_behind);
        assert_eq!(v.seq, 2, "the view published after the ask");
    }

    #[test]
    fn a_reader_of_current_lists_asks_for_nothing() {
        let ops = ops();
        ops.publish(ControlView::default());
        assert_eq!(ops.routes_view().seq, 1);
        assert!(!ops.take_routes_wanted());
    }
}
