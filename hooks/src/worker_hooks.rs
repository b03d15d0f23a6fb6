//! One worker's side of the hooks: its [`HookWorker`] of every hook
//! of the [`HookSet`] it runs, in arrays parallel to the set's chains, and
//! its [`WorkerStore`]. The worker owns it and hands it to the chains as
//! `&mut`: a hook's per-worker state needs no lock.
//!
//! At its quiescent point, after taking the current set, the worker calls
//! [`WorkerHooks::refresh`]: one compare of the set's generation, and only
//! when it changed, `HookWorker`s are made for the hooks that are new and
//! kept for the hooks the new set still has (the same `Arc`), and those of
//! hooks gone are dropped. Allocation happens there, never per burst.

use crate::{Chain, Hook, HookPoint, HookSet, HookWorker, WorkerStore};
use std::sync::Arc;

/// A hook on this worker: its [`HookWorker`], with the hook it was made by
/// (held, so that no other hook reuses its address while this lives).
pub(crate) struct WorkerHook {
    hook: Arc<dyn Hook>,
    pub(crate) worker: Box<dyn HookWorker>,
}

impl WorkerHook {
    fn of(&self, hook: &Arc<dyn Hook>) -> bool {
        std::ptr::addr_eq(Arc::as_ptr(&self.hook), Arc::as_ptr(hook))
    }
}

/// One worker's `HookWorker`s of the hooks, by point, port and chain position.
pub struct WorkerHooks {
    worker: usize,
    /// Generation of the set they were made for (0: none yet).
    generation: u64,
    ingress: Vec<Vec<WorkerHook>>,
    egress: Vec<Vec<WorkerHook>>,
    store: WorkerStore,
}

impl WorkerHooks {
    /// No hooks yet, for worker `worker` (the `HookContext::worker` of its
    /// bursts).
    pub fn new(worker: usize) -> Self {
        WorkerHooks {
            worker,
            generation: 0,
            ingress: Vec::new(),
            egress: Vec::new(),
            store: WorkerStore::new(),
        }
    }

    /// The worker's index.
    pub fn worker(&self) -> usize {
        self.worker
    }

    /// At the quiescent point, with the set the worker will run until the
    /// next one: makes the `HookWorker`s of its new hooks.
    #[inline(always)]
    pub fn refresh(&mut self, set: &HookSet) {
        if set.generation() != self.generation {
            self.remake(set);
        }
    }

    #[cold]
    #[inline(never)]
    fn remake(&mut self, set: &HookSet) {
        for point in HookPoint::ALL {
            let ports = set.ports();
            let mut old = std::mem::take(self.points_mut(point));
            let mut new: Vec<Vec<WorkerHook>> = Vec::with_capacity(ports);
            for port in 0..ports {
                let kept = old.get_mut(port).map(std::mem::take).unwrap_or_default();
                let mut hooks = kept;
                match set.chain(point, port as u16) {
                    Some(chain) => self.make_hooks(chain, &mut hooks),
                    None => hooks.clear(),
                }
                new.push(hooks);
            }
            *self.points_mut(point) = new;
        }
        self.generation = set.generation();
    }

    fn points_mut(&mut self, point: HookPoint) -> &mut Vec<Vec<WorkerHook>> {
        match point {
            HookPoint::Ingress => &mut self.ingress,
            HookPoint::Egress => &mut self.egress,
        }
    }

    /// Make `hooks` those of `chain`, in order: one the chain's hook already
    /// has is kept, the others are made.
    fn make_hooks(&mut self, chain: &Chain, hooks: &mut Vec<WorkerHook>) {
        let mut old = std::mem::take(hooks);
        for e in chain.entries() {
            let hook = match old.iter().position(|p| p.of(&e.hook)) {
                Some(i) => old.swap_remove(i),
                None => WorkerHook {
                    hook: e.hook.clone(),
                    worker: e.hook.worker(self.worker, &mut self.store),
                },
            };
            hooks.push(hook);
        }
    }

    /// The worker's hooks of `chain` (at `point` of `port`) and the store,
    /// for one run. Those not made for this chain (the worker ran a set it did not
    /// [`refresh`](Self::refresh) for) are made now.
    #[inline]
    pub(crate) fn hooks_for(
        &mut self,
        point: HookPoint,
        port: u16,
        chain: &Chain,
    ) -> (&mut [WorkerHook], &mut WorkerStore) {
        let port = usize::from(port);
        let ok = self.points_mut(point).get(port).is_some_and(|hooks| {
            hooks.len() == chain.entries().len()
                && hooks
                    .iter()
                    .zip(chain.entries())
                    .all(|(p, e)| p.of(&e.hook))
        });
        if !ok {
            self.repair(point, port, chain);
        }
        let (points, store) = match point {
            HookPoint::Ingress => (&mut self.ingress, &mut self.store),
            HookPoint::Egress => (&mut self.egress, &mut self.store),
        };
        (&mut points[port], store)
    }

    #[cold]
    #[inline(never)]
    fn repair(&mut self, point: HookPoint, port: usize, chain: &Chain) {
        let points = self.points_mut(point);
        if points.len() <= port {
            points.resize_with(port + 1, Vec::new);
        }
        let mut hooks = std::mem::take(&mut self.points_mut(point)[port]);
        self.make_hooks(chain, &mut hooks);
        self.points_mut(point)[port] = hooks;
    }

    /// The worker's store (the connection tables of its stateful filters).
    pub fn store(&mut self) -> &mut WorkerStore {
        &mut self.store
    }

    /// Hooks the worker holds, over every chain.
    pub fn hooks_held(&self) -> usize {
        self.ingress.iter().chain(&self.egress).map(Vec::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ChainEntry, HookBurst, HookContext, HookCounters};
    use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

    /// Counts the `HookWorker`s it made; each counts its bursts.
    #[derive(Default)]
    struct Counting {
        made: AtomicUsize,
    }
    struct CountingPart(u64);
    impl Hook for Counting {
        fn worker(&self, _: usize, _: &mut WorkerStore) -> Box<dyn HookWorker> {
            self.made.fetch_add(1, Relaxed);
            Box::new(CountingPart(0))
        }
    }
    impl HookWorker for CountingPart {
        fn process(&mut self, _: &HookContext, _: &mut WorkerStore, _: &mut HookBurst<'_, '_>) {
            self.0 += 1;
        }
    }

    fn entry(hook: &Arc<Counting>) -> ChainEntry {
        ChainEntry {
            name: "c".into(),
            kind: "counting".into(),
            priority: 0,
            hook: hook.clone(),
            counters: Arc::new(HookCounters::new(1)),
        }
    }

    #[test]
    fn worker_hooks_are_made_once_per_hook_and_kept_across_sets_that_keep_it() {
        let (a, b) = (Arc::new(Counting::default()), Arc::new(Counting::default()));
        let mut set = HookSet::empty(2);
        set.set(HookPoint::Egress, 1, Chain::new(vec![entry(&a)]));
        let mut w = WorkerHooks::new(0);
        w.refresh(&set);
        w.refresh(&set);
        assert_eq!((a.made.load(Relaxed), w.hooks_held()), (1, 1));
        // A new set with a kept and a new hook: one made.
        let mut next = HookSet::empty(2);
        next.set(HookPoint::Egress, 1, Chain::new(vec![entry(&a), entry(&b)]));
        w.refresh(&next);
        assert_eq!((a.made.load(Relaxed), b.made.load(Relaxed)), (1, 1));
        assert_eq!(w.hooks_held(), 2);
        // Gone from the set: its `HookWorker` is dropped, and with it the hook.
        let mut last = HookSet::empty(2);
        last.set(HookPoint::Ingress, 0, Chain::new(vec![entry(&b)]));
        w.refresh(&last);
        assert_eq!(w.hooks_held(), 1);
        drop((set, next));
        assert_eq!(Arc::strong_count(&a), 1, "the worker's hook let go of a");
    }

    #[test]
    fn a_chain_run_without_a_refresh_makes_its_worker_hooks() {
        let a = Arc::new(Counting::default());
        let chain = Chain::new(vec![entry(&a)]);
        let mut w = WorkerHooks::new(0);
        let (hooks, _) = w.hooks_for(HookPoint::Ingress, 3, &chain);
        assert_eq!(hooks.len(), 1);
        let (hooks, _) = w.hooks_for(HookPoint::Ingress, 3, &chain);
        assert_eq!(hooks.len(), 1);
        assert_eq!(a.made.load(Relaxed), 1);
    }
}
