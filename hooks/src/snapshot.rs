//! Publishing immutable snapshots to workers, with quiescent-state-based
//! reclamation in safe Rust.
//!
//! The control plane [`publish`](Publisher::publish)es a new snapshot: it
//! stores it and bumps a generation number. Each worker owns a
//! [`Subscriber`] and calls [`Subscriber::quiescent`] once per poll-loop
//! iteration, between bursts, where it holds no reference into the snapshot.
//! That is the quiescent point: one relaxed-then-acquire load of the
//! generation (a shared, read-mostly cache line); only when it changed does
//! the worker take the new snapshot (a lock taken once per publish, never in
//! steady state) and release its hold on the old one. The old snapshot is
//! freed when the last worker has passed its quiescent point: the reference
//! count does the bookkeeping that `rte_rcu_qsbr`'s per-thread counters do,
//! and [`Retired::is_freed`] lets the control plane (and a test) see it.

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
}

/// A worker's side: the snapshot it uses until its next quiescent point.
pub struct Subscriber<T> {
    shared: Arc<Shared<T>>,
    seen: u64,
    current: Arc<T>,
}

/// A snapshot that was replaced: freed once every subscriber has passed a
/// quiescent point after the replacement (and dropped any clone it made).
pub struct Retired<T> {
    old: Weak<T>,
}

impl<T> Retired<T> {
    /// Has the old snapshot been freed?
    pub fn is_freed(&self) -> bool {
        self.old.strong_count() == 0
    }
}

impl<T> Publisher<T> {
    pub fn new(initial: T) -> Self {
        Publisher {
            shared: Arc::new(Shared {
                generation: AtomicU64::new(0),
                current: Mutex::new(Arc::new(initial)),
            }),
        }
    }

    /// A subscriber for one worker, starting at the current snapshot.
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
        Retired {
            old: Arc::downgrade(&old),
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
    /// The quiescent point: call between bursts, holding nothing from the
    /// snapshot. Returns the snapshot to use until the next call.
    #[inline(always)]
    pub fn quiescent(&mut self) -> &T {
        let g = self.shared.generation.load(Ordering::Acquire);
        if g != self.seen {
            self.take_new(g);
        }
        &self.current
    }

    /// The snapshot taken at the last quiescent point.
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

    #[test]
    fn old_snapshot_is_freed_only_after_every_worker_passed_a_quiescent_point() {
        let freed = Arc::new(AtomicUsize::new(0));
        let p = Publisher::new(snap(0, &freed));
        let mut a = p.subscribe();
        let mut b = p.subscribe();
        assert_eq!(a.quiescent().id, 0);
        let retired = p.publish(snap(1, &freed));
        assert!(!retired.is_freed(), "both workers still hold snapshot 0");
        assert_eq!(a.quiescent().id, 1);
        assert!(
            !retired.is_freed(),
            "worker b has not passed a quiescent point"
        );
        assert_eq!(
            b.get().id,
            0,
            "b keeps its snapshot until its quiescent point"
        );
        assert_eq!(b.quiescent().id, 1);
        assert!(retired.is_freed());
        assert_eq!(freed.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn replacing_while_workers_read_never_shows_a_freed_or_torn_snapshot() {
        let rounds = if cfg!(miri) { 50 } else { 20_000 };
        let freed = Arc::new(AtomicUsize::new(0));
        let p = Publisher::new(snap(0, &freed));
        let stop = Arc::new(AtomicBool::new(false));
        // Each worker's latest snapshot id: the publisher starts once every
        // worker runs, and stops once every worker has seen the last one,
        // so readers and the publisher overlap however the threads are
        // scheduled.
        let latest: Arc<Vec<AtomicU64>> =
            Arc::new((0..3).map(|_| AtomicU64::new(u64::MAX)).collect());
        let workers: Vec<_> = (0..3)
            .map(|w| {
                let mut s = p.subscribe();
                let stop = stop.clone();
                let latest = latest.clone();
                thread::spawn(move || {
                    let mut last = 0;
                    let mut bursts = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let snap = s.quiescent();
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
        // Workers gone: every replaced snapshot is freed, the last one is not.
        assert!(retired.iter().all(Retired::is_freed));
        assert_eq!(freed.load(Ordering::SeqCst), rounds as usize);
        assert_eq!(p.current().id, rounds);
    }
}
