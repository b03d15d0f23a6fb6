//! What the main lcore publishes for the operations plane (routes,
//! neighbours, hooks, counters), at a bounded cost. The routes' counts by
//! origin are kept as routes change and always current; the route lists
//! (a full table's is a million entries: rebuilt on every round of an FPM
//! install, it took most of the install's time) are rebuilt only when
//! their table changed **and** someone wants them (a telemetry reader of
//! the lists, a ctl change), and a big table's rebuild is spaced so that
//! it takes at most a tenth of the control lcore.

use crate::fpm::FpmStats;
use crate::ops::state::Ops;
use crate::ops::view::{ControlView, Route6View, RouteView};
use crate::report::HookReport;
use crate::router::control::ControlPlane;
use hooks::HookSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the main lcore publishes the control view (routes,
/// neighbours, hooks) for telemetry and metrics; a change made on the main
/// lcore (`fastpath ctl`, a reload) publishes at once.
const VIEW_PERIOD: Duration = Duration::from_millis(500);

/// A rebuild of a route list may take one part in `SHARE` of the control
/// lcore's time: after a rebuild that took `t`, the next waits `t × (SHARE - 1)`.
const SHARE: u32 = 10;

/// One family's route list as last built.
struct Built<T> {
    list: Arc<[T]>,
    /// The table's version it was built at (`None`: never built).
    version: Option<u64>,
    /// No rebuild before this.
    next: Instant,
    /// Someone wants the list rebuilt once its table moved.
    wanted: bool,
}

impl<T> Built<T> {
    fn new() -> Self {
        Built {
            list: Arc::from(Vec::new()),
            version: None,
            next: Instant::now(),
            wanted: true,
        }
    }

    /// The list, rebuilt by `build` if the table moved past it, someone
    /// wants it and the last rebuild's spacing has passed.
    fn current(&mut self, version: u64, build: impl FnOnce() -> Vec<T>) -> Arc<[T]> {
        let start = Instant::now();
        if self.behind(version) && self.wanted && start >= self.next {
            self.list = build().into();
            self.version = Some(version);
            self.wanted = false;
            let took = start.elapsed();
            self.next = Instant::now() + took.saturating_mul(SHARE - 1);
        }
        self.list.clone()
    }

    fn behind(&self, version: u64) -> bool {
        self.version != Some(version)
    }
}

/// What the views share while the tables do not change, and when the
/// next is due.
pub(super) struct Published {
    routes: Built<RouteView>,
    routes6: Built<Route6View>,
    /// The FPM session's counters (`--fpm`).
    fpm: Option<Arc<FpmStats>>,
    next: Instant,
}

impl Published {
    pub fn new(fpm: Option<Arc<FpmStats>>) -> Self {
        Published {
            routes: Built::new(),
            routes6: Built::new(),
            fpm,
            next: Instant::now() + VIEW_PERIOD,
        }
    }

    /// Publish a view to `ops` when one is due: at once after a change
    /// made on the main lcore (`changed`: a route, a neighbour, a reload),
    /// route lists included, or for a reader waiting for the route lists
    /// (telemetry); otherwise every `VIEW_PERIOD`, zebra's changes too (a
    /// replay of many frames must not rebuild the view every round). A
    /// `show` changes nothing: a client polling must not either.
    pub fn publish_when_due(
        &mut self,
        ops: &Ops,
        control: &ControlPlane,
        hooks: &HookSet,
        changed: bool,
    ) {
        if changed || ops.take_routes_wanted() {
            self.want_routes();
            self.next = Instant::now();
        }
        if Instant::now() >= self.next {
            ops.publish(self.view(control, hooks));
            self.next = Instant::now() + VIEW_PERIOD;
        }
    }

    /// Rebuild the route lists as soon as their tables moved (and their
    /// spacing allows): a reader asked, or a ctl change was made.
    fn want_routes(&mut self) {
        self.routes.wanted = true;
        self.routes6.wanted = true;
    }

    /// The control plane's state for the operations plane: the one place
    /// the published routes, neighbours and hook counters come from.
    pub fn view(&mut self, control: &ControlPlane, hooks: &HookSet) -> ControlView {
        let (v4, v6) = control.routes_version();
        let (counts, counts6) = control.route_counts();
        let routes = self.routes.current(v4, || control.routes());
        let routes6 = self.routes6.current(v6, || control.routes6());
        ControlView {
            fpm: self.fpm.as_ref().map(|f| f.fields()).unwrap_or_default(),
            seq: 0,
            built: Some(Instant::now()),
            route_counts: counts.fields(),
            routes,
            neighbours: control.neighbours(),
            route6_counts: counts6.map(|c| c.fields()).unwrap_or_default(),
            routes6,
            routes_behind: self.routes.behind(v4) || self.routes6.behind(v6),
            neighbours6: control.neighbours6(),
            hooks: HookReport::of(hooks),
            control: control.stats().fields().to_vec(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_list_is_rebuilt_only_when_its_table_moved_and_someone_wants_it() {
        let mut b: Built<u32> = Built::new();
        let mut builds = 0;
        let mut build = |n: u32| {
            builds += 1;
            vec![n]
        };
        assert_eq!(&*b.current(1, || build(1)), &[1], "the first list is built");
        assert_eq!(
            &*b.current(1, || build(2)),
            &[1],
            "same version: the old list"
        );
        // The table moved, nobody asked: the old list, behind.
        assert_eq!(&*b.current(2, || build(3)), &[1]);
        assert!(b.behind(2));
        // Asked: a cheap build is spaced by almost nothing, the list shows.
        b.wanted = true;
        std::thread::sleep(Duration::from_millis(1));
        assert_eq!(&*b.current(2, || build(4)), &[4]);
        assert!(!b.behind(2));
        assert_eq!(builds, 2);
    }

    #[test]
    fn a_costly_rebuild_waits_nine_times_its_cost() {
        let mut b: Built<u32> = Built::new();
        b.current(1, || {
            std::thread::sleep(Duration::from_millis(20));
            vec![1]
        });
        // The table moved at once and a reader asks: the list stays behind
        // for about 180 ms.
        b.wanted = true;
        assert_eq!(&*b.current(2, || vec![2]), &[1]);
        let wait = b.next.saturating_duration_since(Instant::now());
        assert!(wait > Duration::from_millis(100), "{wait:?}");
        b.next = Instant::now();
        assert_eq!(&*b.current(2, || vec![2]), &[2]);
    }
}
