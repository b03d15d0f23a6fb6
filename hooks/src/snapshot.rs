//! Publishing immutable snapshots to workers, reclaimed in the workers'
//! one reclamation domain ([`grace`](crate::grace)).
//!
//! The control plane [`publish`](Publisher::publish)es a new snapshot: it
//! stores it, bumps a generation number and starts a grace period of the
//! domain. Each worker owns a [`Subscriber`] and reports a quiescent point
//! to the domain once per poll-loop iteration, between bursts, where it
//! holds no reference into the snapshot. Only when that report says a grace
//! period started since the previous one (a publish starts one, and so does
//! any other writer of the domain) does the worker call
//! [`Subscriber::refresh`]: one acquire load of the generation, and only
//! when it changed does it take the new snapshot (a lock taken once per
//! publish, never in steady state) and release its hold on the old one. So
//! the old snapshot is freed once every worker has passed a quiescent point
//! after the publish, the grace period the publish started: the reference
//! count does the per-reader bookkeeping, a worker that stopped released
//! its hold when it dropped its subscriber, and [`Retired::is_freed`] lets
//! the control plane (and a test) see it.

use crate::grace::GracePeriods;
use crate::lock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

struct Shared<T> {
    generation: AtomicU64,
    current: Mutex<Arc<T>>,
}

/// The control plane's side: replaces the snapshot as a whole.
pub struct Publisher<T> {
    shared: Arc<Shared<T>>,
    grace: Arc<dyn GracePeriods>,
}

/// A worker's side: the snapshot it uses until it next refreshes.
pub struct Subscriber<T> {
    shared: Arc<Shared<T>>,
    seen: u64,
    current: Arc<T>,
}

/// A snapshot that was replaced: freed once every subscriber has refreshed
/// after the replacement (and dropped any clone it made).
pub struct Retired<T> {
    old: Weak<T>,
    token: u64,
}

impl<T> Retired<T> {
    /// Has the old snapshot been freed?
    pub fn is_freed(&self) -> bool {
        self.old.strong_count() == 0
    }

    /// The grace period the replacement started, in the domain's tokens.
    pub fn token(&self) -> u64 {
        self.token
    }
}

impl<T> Publisher<T> {
    /// A publisher of `initial` whose replacements start grace periods of
    /// `grace`, the domain the subscribers' workers report to.
    pub fn new(initial: T, grace: Arc<dyn GracePeriods>) -> Self {
        Publisher {
            shared: Arc::new(Shared {
                generation: AtomicU64::new(0),
                current: Mutex::new(Arc::new(initial)),
            }),
            grace,
        }
    }

    /// A subscriber for one worker, starting at the current snapshot. The
    /// worker's reader must be online in the domain before this call: a
    /// publish after it then starts a grace period the reader reports.
    pub fn subscribe(&self) -> Subscriber<T> {
        let current = lock(&self.shared.current).clone();
        Subscriber {
            seen: self.shared.generation.load(Ordering::Acquire),
            shared: self.shared.clone(),
            current,
        }
    }

    /// Replace the snapshot. Workers pick it up at their next quiescent
    /// point; every burst runs wholly on the old or wholly on the new one.
    pub fn publish(&self, next: T) -> Retired<T> {
        let next = Arc::new(next);
        let old = {
            let mut cur = lock(&self.shared.current);
            let old = std::mem::replace(&mut *cur, next);
            // Under the lock: a subscriber that sees the new generation
            // finds the new snapshot when it takes the lock.
            self.shared.generation.fetch_add(1, Ordering::Release);
            old
        };
        // After the new generation: a reader whose report sees this grace
        // period (the domain orders it after our stores) refreshes and sees
        // the new generation.
        let token = self.grace.start();
        Retired {
            old: Arc::downgrade(&old),
            token,
        }
    }

    /// The snapshot new subscribers get (for the control plane's reads).
    pub fn current(&self) -> Arc<T> {
        lock(&self.shared.current).clone()
    }

    /// How many snapshots have been published after the first.
    pub fn generation(&self) -> u64 {
        self.shared.generation.load(Ordering::Acquire)
    }
}

impl<T> Subscriber<T> {
    /// Take the latest snapshot if one was published since the last call.
    /// Call it at a quiescent point, holding nothing from the snapshot,
    /// whenever the worker's report to the domain said a grace period
    /// started (at every quiescent point is correct too). One load when
    /// nothing was published. Returns the snapshot to use from now on.
    #[inline]
    pub fn refresh(&mut self) -> &T {
        let g = self.shared.generation.load(Ordering::Acquire);
        if g != self.seen {
            self.take_new(g);
        }
        &self.current
    }

    /// The snapshot taken at the last refresh.
    #[inline(always)]
    pub fn get(&self) -> &T {
        &self.current
    }

    #[cold]
    #[inline(never)]
    fn take_new(&mut self, g: u64) {
        let next = lock(&self.shared.current).clone();
        // Dropping the old Arc here is this worker's release of it.
        self.current = next;
        self.seen = g;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grace::{EpochReader, Epochs};
    use std::sync::atomic::AtomicU64;
    use std::sync::atomic::{AtomicBool, AtomicUsize};
    use std::thread;

    /// A snapshot that knows when it is freed and checks it is never used
    /// after: `alive` is cleared on drop, and a reader that finds it clear
    /// has used freed memory's logical contents.
    struct Snap {
        id: u64,
        words: [u64; 4],
        alive: AtomicBool,
        freed: Arc<AtomicUsize>,
    }

    impl Drop for Snap {
        fn drop(&mut self) {
            self.alive.store(false, Ordering::SeqCst);
            self.freed.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn snap(id: u64, freed: &Arc<AtomicUsize>) -> Snap {
        Snap {
            id,
            words: [id; 4],
            alive: AtomicBool::new(true),
            freed: freed.clone(),
        }
    }

    /// A worker's loop head: one report to the domain, and a refresh only
    /// when it says a grace period started.
    fn quiescent<'a>(r: &mut EpochReader, s: &'a mut Subscriber<Snap>) -> &'a Snap {
        if r.quiescent() {
            s.refresh();
        }
        s.get()
    }

    #[test]
    fn old_snapshot_is_freed_only_after_every_worker_passed_a_quiescent_point() {
        let freed = Arc::new(AtomicUsize::new(0));
        let g = Arc::new(Epochs::default());
        let p = Publisher::new(snap(0, &freed), g.clone());
        let (mut ra, mut rb) = (g.reader(), g.reader());
        let mut a = p.subscribe();
        let mut b = p.subscribe();
        assert_eq!(quiescent(&mut ra, &mut a).id, 0);
        let retired = p.publish(snap(1, &freed));
        assert!(!retired.is_freed(), "both workers still hold snapshot 0");
        assert!(!g.passed(retired.token()));
        assert_eq!(quiescent(&mut ra, &mut a).id, 1);
        assert!(
            !retired.is_freed(),
            "worker b has not passed a quiescent point"
        );
        assert!(!g.passed(retired.token()));
        assert_eq!(
            b.get().id,
            0,
            "b keeps its snapshot until its quiescent point"
        );
        assert_eq!(quiescent(&mut rb, &mut b).id, 1);
        assert!(retired.is_freed());
        assert!(
            g.passed(retired.token()),
            "freed as the grace period passed"
        );
        assert_eq!(freed.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn every_publish_starts_a_grace_period_its_readers_see() {
        let freed = Arc::new(AtomicUsize::new(0));
        let g = Arc::new(Epochs::default());
        let p = Publisher::new(snap(0, &freed), g.clone());
        let mut r = g.reader();
        let mut s = p.subscribe();
        assert!(!r.quiescent(), "nothing started since the reader came");
        let first = p.publish(snap(1, &freed));
        let second = p.publish(snap(2, &freed));
        assert!(second.token() > first.token());
        assert!(r.quiescent(), "a publish started a grace period");
        assert_eq!(s.refresh().id, 2, "the latest, not each in turn");
        assert!(first.is_freed() && second.is_freed());
        // Another writer's grace period: a refresh that finds nothing new
        // keeps the snapshot.
        g.start();
        assert!(r.quiescent());
        assert_eq!(s.refresh().id, 2);
        assert_eq!(freed.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_stopped_worker_holds_no_snapshot() {
        let freed = Arc::new(AtomicUsize::new(0));
        let g = Arc::new(Epochs::default());
        let p = Publisher::new(snap(0, &freed), g.clone());
        let (mut ra, rb) = (g.reader(), g.reader());
        let (mut a, b) = (p.subscribe(), p.subscribe());
        let retired = p.publish(snap(1, &freed));
        quiescent(&mut ra, &mut a);
        assert!(!retired.is_freed() && !g.passed(retired.token()));
        drop((rb, b));
        assert!(retired.is_freed() && g.passed(retired.token()));
    }

    #[test]
    fn replacing_while_workers_read_never_shows_a_freed_or_torn_snapshot() {
        let rounds = if cfg!(miri) { 50 } else { 20_000 };
        let freed = Arc::new(AtomicUsize::new(0));
        let g = Arc::new(Epochs::default());
        let p = Publisher::new(snap(0, &freed), g.clone());
        let stop = Arc::new(AtomicBool::new(false));
        // Each worker's latest snapshot id: the publisher starts once every
        // worker runs, and stops once every worker has seen the last one,
        // so readers and the publisher overlap however the threads are
        // scheduled.
        let latest: Arc<Vec<AtomicU64>> =
            Arc::new((0..3).map(|_| AtomicU64::new(u64::MAX)).collect());
        let workers: Vec<_> = (0..3)
            .map(|w| {
                let mut r = g.reader();
                let mut s = p.subscribe();
                let stop = stop.clone();
                let latest = latest.clone();
                thread::spawn(move || {
                    let mut last = 0;
                    let mut bursts = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let snap = quiescent(&mut r, &mut s);
                        assert!(snap.alive.load(Ordering::SeqCst), "used after free");
                        assert!(snap.words.iter().all(|&w| w == snap.id), "torn snapshot");
                        assert!(snap.id >= last, "went back in time");
                        last = snap.id;
                        latest[w].store(last, Ordering::SeqCst);
                        bursts += 1;
                    }
                    bursts
                })
            })
            .collect();
        let wait_for = |id: u64| {
            while latest.iter().any(|l| l.load(Ordering::SeqCst) != id) {
                thread::yield_now();
            }
        };
        wait_for(0);
        let mut retired = Vec::new();
        for id in 1..=rounds {
            retired.push(p.publish(snap(id, &freed)));
        }
        wait_for(rounds);
        stop.store(true, Ordering::Relaxed);
        for w in workers {
            assert!(w.join().expect("worker panicked") > 0);
        }
        // Workers gone: every replaced snapshot is freed, every grace
        // period passed, the last snapshot is not freed.
        assert!(retired.iter().all(Retired::is_freed));
        assert!(retired.iter().all(|r| g.passed(r.token())));
        assert_eq!(freed.load(Ordering::SeqCst), rounds as usize);
        assert_eq!(p.current().id, rounds);
    }
}
