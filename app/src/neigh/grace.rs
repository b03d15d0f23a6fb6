//! Grace periods for reusing neighbour slots: quiescent-state-based
//! reclamation (`rte_rcu_qsbr`'s scheme) in safe Rust.
//!
//! A worker that looked an address up holds the slot's index until the end
//! of its burst. If the writer reclaimed that slot and gave it to another
//! address at once, the worker could read the new neighbour's header as the
//! old one's and send a packet to the wrong host. So a reclaimed slot is
//! first invalidated (state failed, address a tombstone) and only reused once
//! every worker has passed a quiescent point since: between bursts, where it
//! holds no index.
//!
//! The writer asks for a [`ticket`](Grace::ticket) (bumps the epoch) after it
//! invalidated the slot; each worker's [`GraceReader::quiescent`] loads the
//! epoch (a read-mostly line) and, only when it changed, stores it in its own
//! padded slot. The ticket has [`passed`](Grace::passed) once every reader's
//! stored epoch reached it. A reader that is dropped (its worker stopped)
//! goes offline and never holds a grace period up.

use crate::sync::lock;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex};

/// Stored by a reader that went offline.
const OFFLINE: u64 = u64::MAX;

/// One reader's last epoch, on its own cache line.
#[repr(align(64))]
#[derive(Debug)]
struct Seen(AtomicU64);

/// The epoch and the readers' reports, shared by the writer and the readers.
#[derive(Debug, Default)]
pub struct Grace {
    epoch: AtomicU64,
    /// Taken when a reader registers or leaves, and by the writer's check:
    /// never on a worker's path.
    readers: Mutex<Vec<Arc<Seen>>>,
}

impl Grace {
    /// A reader, for one worker, starting at the current epoch.
    pub fn reader(self: &Arc<Self>) -> GraceReader {
        let now = self.epoch.load(Acquire);
        let seen = Arc::new(Seen(AtomicU64::new(now)));
        lock(&self.readers).push(seen.clone());
        GraceReader {
            grace: self.clone(),
            seen,
            last: now,
        }
    }

    /// Start a grace period: what the writer changed before this call is
    /// seen by every reader once the ticket has passed.
    pub fn ticket(&self) -> u64 {
        // SeqCst: ordered after the writer's invalidating stores.
        self.epoch.fetch_add(1, SeqCst) + 1
    }

    /// Whether every reader has passed a quiescent point since `ticket`.
    pub fn passed(&self, ticket: u64) -> bool {
        lock(&self.readers)
            .iter()
            .all(|s| s.0.load(Acquire) >= ticket)
    }
}

/// A worker's side. Not `Clone`: one per worker.
#[derive(Debug)]
pub struct GraceReader {
    grace: Arc<Grace>,
    seen: Arc<Seen>,
    last: u64,
}

impl GraceReader {
    /// The quiescent point: call between bursts, holding no neighbour index.
    /// One load; a store only when the epoch moved.
    #[inline(always)]
    pub fn quiescent(&mut self) {
        let g = self.grace.epoch.load(Acquire);
        if g != self.last {
            self.report(g);
        }
    }

    #[cold]
    #[inline(never)]
    fn report(&mut self, g: u64) {
        self.last = g;
        // Release: this worker's reads of the table before now happen
        // before the writer's reuse of a slot (it loads with Acquire).
        self.seen.0.store(g, Release);
    }
}

impl Drop for GraceReader {
    fn drop(&mut self) {
        self.seen.0.store(OFFLINE, Release);
        lock(&self.grace.readers).retain(|s| !Arc::ptr_eq(s, &self.seen));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ticket_passes_once_every_reader_was_quiescent() {
        let g = Arc::new(Grace::default());
        let mut a = g.reader();
        let mut b = g.reader();
        let t = g.ticket();
        assert!(!g.passed(t));
        a.quiescent();
        assert!(!g.passed(t), "b has not been quiescent");
        b.quiescent();
        assert!(g.passed(t));
        // A later ticket needs a later quiescent point.
        let t2 = g.ticket();
        assert!(!g.passed(t2));
        a.quiescent();
        drop(b);
        assert!(g.passed(t2), "a reader that left holds nothing up");
    }

    #[test]
    fn without_readers_every_ticket_has_passed() {
        let g = Arc::new(Grace::default());
        let t = g.ticket();
        assert!(g.passed(t));
        let r = g.reader();
        assert!(g.passed(t), "a reader that came later never held the slot");
        assert!(!g.passed(g.ticket()));
        drop(r);
    }
}
