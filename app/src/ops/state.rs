//! What the operations plane reads: the ports, every lcore's counters, and
//! the latest control view; installed for the run, retired before the
//! ports stop (a reader never asks a closed port for its counters).

use super::view::ControlView;
use crate::counters::LcoreCounters;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

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
}

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
        }
    }

    /// The latest control view (empty until the main lcore publishes one).
    pub fn view(&self) -> Arc<ControlView> {
        crate::sync::lock(&self.view).clone()
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
