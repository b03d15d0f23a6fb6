//! Leases: how a hook that confirms (a stateful filter) lets the flow
//! memo answer a flow's packets for a while without confirming each one.
//!
//! Confirming a remembered packet reads what the hook keeps for its flow
//! (a connection entry: a random cache line at 100,000 flows) and restarts
//! its timer. A lease says "the state I confirmed is still there while
//! this slot's version is unchanged, until this time": the hook hands one
//! out with a full confirm, the memo keeps it in the flow's slot and hands
//! it back with the flow's next packets, and the hook checks only the
//! version (in an array small enough to stay cached) and the time. A
//! lease lasts at most [`LEASE_NS`] and never past the entry's expiry, so
//! an entry's timer is restarted at least once a second while its flow is
//! answered: it may expire up to that much earlier than if every packet
//! had restarted it, as Linux's conntrack skips a timeout write of less
//! than a second (`__nf_ct_refresh_acct`).

/// Longest a lease lasts (1 s).
pub const LEASE_NS: u64 = 1_000_000_000;

/// A hook's lease on a flow's state. Opaque to the memo, which stores
/// and hands back what the hook gave it. [`Lease::NONE`] (what a flow is
/// recorded with) holds for nothing.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lease {
    /// Where the hook keeps the flow's state (a connection table slot).
    pub slot: u32,
    /// That slot's version when the lease was given.
    pub version: u32,
    /// The lease holds while `now_ns < until_ns`.
    pub until_ns: u64,
}

impl Lease {
    /// No lease.
    pub const NONE: Lease = Lease {
        slot: 0,
        version: 0,
        until_ns: 0,
    };

    /// Whether the lease still holds at `now_ns` by its time (the hook
    /// checks the version).
    #[inline(always)]
    pub fn current(&self, now_ns: u64) -> bool {
        now_ns < self.until_ns
    }
}
