//! Grace periods: the one reclamation domain of a router's workers.
//!
//! A worker reads shared tables (routes, neighbours, the hook set) between
//! two quiescent points: between bursts, where it holds nothing it looked
//! up. It reports each quiescent point to the domain, once per poll loop.
//! A writer that unpublished something takes a token with
//! [`start`](GracePeriods::start), and reuses or frees it once
//! [`passed`](GracePeriods::passed) says every online reader reported since.
//!
//! The router's domain is DPDK's RCU QSBR variable; this crate knows it only
//! through [`GracePeriods`], so that it stays free of DPDK. A reader's report
//! also tells whether a grace period started since its previous one: only
//! then can a [`Publisher`](crate::snapshot::Publisher) have replaced a
//! snapshot, so only then does the worker
//! [`refresh`](crate::snapshot::Subscriber::refresh) it.
//!
//! With the `testkit` feature, `Epochs` is a domain in safe Rust, with the
//! same guarantees, for tests without DPDK (and under Miri).

/// A writer's side of a reclamation domain. Tokens grow: a later token
/// passes after an earlier one.
pub trait GracePeriods: Send + Sync {
    /// Start a grace period: what the caller unpublished before this call
    /// is seen by no reader any more once [`passed`](Self::passed) says so.
    fn start(&self) -> u64;

    /// Whether every online reader has reported a quiescent point since
    /// `token` was started. Never waits.
    fn passed(&self, token: u64) -> bool;
}

#[cfg(any(test, feature = "testkit"))]
pub use epochs::{EpochReader, Epochs};

#[cfg(any(test, feature = "testkit"))]
mod epochs {
    use super::GracePeriods;
    use crate::lock;
    use std::sync::atomic::{AtomicU64, Ordering::*};
    use std::sync::{Arc, Mutex};

    /// Stored by a reader that went offline.
    const OFFLINE: u64 = u64::MAX;

    /// One reader's last epoch, on its own cache line.
    #[repr(align(64))]
    #[derive(Debug)]
    struct Seen(AtomicU64);

    /// A domain in safe Rust (`rte_rcu_qsbr`'s scheme): an epoch the writer
    /// bumps, each reader's last epoch seen.
    #[derive(Debug, Default)]
    pub struct Epochs {
        epoch: AtomicU64,
        readers: Mutex<Vec<Arc<Seen>>>,
    }

    impl Epochs {
        /// A reader, online from now, at the current epoch. Register it
        /// before the reader subscribes to anything the domain serves.
        pub fn reader(self: &Arc<Self>) -> EpochReader {
            let now = self.epoch.load(SeqCst);
            let seen = Arc::new(Seen(AtomicU64::new(now)));
            lock(&self.readers).push(seen.clone());
            EpochReader {
                epochs: self.clone(),
                seen,
                last: now,
            }
        }
    }

    impl GracePeriods for Epochs {
        fn start(&self) -> u64 {
            // SeqCst: ordered after the writer's unpublishing stores.
            self.epoch.fetch_add(1, SeqCst) + 1
        }

        fn passed(&self, token: u64) -> bool {
            lock(&self.readers)
                .iter()
                .all(|s| s.0.load(Acquire) >= token)
        }
    }

    /// A reader of [`Epochs`]: one per worker. Offline when dropped.
    #[derive(Debug)]
    pub struct EpochReader {
        epochs: Arc<Epochs>,
        seen: Arc<Seen>,
        last: u64,
    }

    impl EpochReader {
        /// Report a quiescent point; whether a grace period started since
        /// the last report.
        pub fn quiescent(&mut self) -> bool {
            let now = self.epochs.epoch.load(Acquire);
            if now == self.last {
                return false;
            }
            self.last = now;
            // Release: this reader's reads before now happen before the
            // writer's reuse (it loads with Acquire).
            self.seen.0.store(now, Release);
            true
        }
    }

    impl Drop for EpochReader {
        fn drop(&mut self) {
            self.seen.0.store(OFFLINE, Release);
            lock(&self.epochs.readers).retain(|s| !Arc::ptr_eq(s, &self.seen));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_token_passes_once_every_reader_was_quiescent() {
        let g = Arc::new(Epochs::default());
        let mut a = g.reader();
        let mut b = g.reader();
        let t = g.start();
        assert!(!g.passed(t));
        assert!(
            a.quiescent(),
            "a grace period started since a's last report"
        );
        assert!(!g.passed(t), "b has not been quiescent");
        assert!(!a.quiescent(), "nothing started since");
        assert!(b.quiescent());
        assert!(g.passed(t));
        // A later token needs a later quiescent point.
        let t2 = g.start();
        assert!(!g.passed(t2));
        a.quiescent();
        drop(b);
        assert!(g.passed(t2), "a reader that left holds nothing up");
    }

    #[test]
    fn without_readers_every_token_has_passed() {
        let g = Arc::new(Epochs::default());
        let t = g.start();
        assert!(g.passed(t));
        let mut r = g.reader();
        assert!(g.passed(t), "a reader that came later never held it");
        assert!(!r.quiescent(), "nothing started since it came");
        assert!(!g.passed(g.start()));
        drop(r);
    }
}
