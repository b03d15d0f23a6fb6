//! One neighbour: its IPv4 address, state, flags, cached header and the time it
//! was last confirmed reachable. One cache line per entry.
//!
//! Only the table's writer changes the address, state, flags and header.
//! `confirm` is the one write the data path may make (like the kernel's
//! `dst_confirm`), and it writes only when the time moves forward.

use super::hh::{EthHeader, HhCache, ETH_HLEN};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, Ordering::*};

/// Neighbour unreachability detection state (the kernel's `NUD_*`, reduced).
#[repr(u8)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NeighState {
    /// Being resolved; no header yet.
    #[default]
    Incomplete = 0,
    /// Header known and recently confirmed.
    Reachable = 1,
    /// Header known but not confirmed lately; still used for output.
    Stale = 2,
    /// Resolution failed.
    Failed = 3,
}

impl NeighState {
    fn from_u8(v: u8) -> Self {
        match v {
            1 => NeighState::Reachable,
            2 => NeighState::Stale,
            3 => NeighState::Failed,
            _ => NeighState::Incomplete,
        }
    }

    /// Whether the cached header may be used for output.
    #[inline(always)]
    pub fn is_valid(self) -> bool {
        matches!(self, NeighState::Reachable | NeighState::Stale)
    }
}

/// Entry flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NeighFlags(u8);

impl NeighFlags {
    pub const NONE: NeighFlags = NeighFlags(0);
    /// Configured, not learned: never ages, not overwritten by resolution.
    pub const STATIC: NeighFlags = NeighFlags(1);
    /// A route's gateway: the route holds the index, so the entry is never
    /// reclaimed (it may fail and be resolved again).
    pub const GATEWAY: NeighFlags = NeighFlags(2);

    pub fn contains(self, other: NeighFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// Both sets of flags.
    pub const fn union(self, other: NeighFlags) -> NeighFlags {
        NeighFlags(self.0 | other.0)
    }

    /// These flags without `other`'s.
    pub const fn without(self, other: NeighFlags) -> NeighFlags {
        NeighFlags(self.0 & !other.0)
    }
}

/// A neighbour entry. Address 0.0.0.0 marks a free slot.
#[repr(align(64))]
#[derive(Debug, Default)]
pub struct NeighEntry {
    /// IPv4 address as `u32::from(Ipv4Addr)`; published last, with Release.
    addr: AtomicU32,
    state: AtomicU8,
    flags: AtomicU8,
    /// Set by a worker that output through the entry (only when clear, so
    /// once per aging round at most); cleared by the writer as it ages.
    used: AtomicU8,
    hh: HhCache,
    /// Caller's clock (a coarse tick such as ms: with raw TSC every confirm writes).
    confirmed: AtomicU64,
}

impl NeighEntry {
    /// A free entry.
    pub const fn new() -> Self {
        NeighEntry {
            addr: AtomicU32::new(0),
            state: AtomicU8::new(NeighState::Incomplete as u8),
            flags: AtomicU8::new(0),
            used: AtomicU8::new(0),
            hh: HhCache::new(),
            confirmed: AtomicU64::new(0),
        }
    }

    /// The neighbour's address (0.0.0.0 for a free slot).
    pub fn addr(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.addr_bits())
    }

    /// The address as the table keys it. Acquire: the entry's fields written
    /// before it was published are visible after.
    #[inline(always)]
    pub(super) fn addr_bits(&self) -> u32 {
        self.addr.load(Acquire)
    }

    /// Acquire: pairs with `set_state`, so a valid state implies its header.
    #[inline(always)]
    pub fn state(&self) -> NeighState {
        NeighState::from_u8(self.state.load(Acquire))
    }

    pub fn flags(&self) -> NeighFlags {
        NeighFlags(self.flags.load(Relaxed))
    }

    pub fn is_static(&self) -> bool {
        self.flags().contains(NeighFlags::STATIC)
    }

    /// Whether the entry is a route's gateway (the route holds it).
    pub fn is_gateway(&self) -> bool {
        self.flags().contains(NeighFlags::GATEWAY)
    }

    /// Whether the entry may be reclaimed: learned, and no route's gateway.
    pub fn is_reclaimable(&self) -> bool {
        !self.is_static() && !self.is_gateway()
    }

    /// The cached header.
    pub fn hh(&self) -> &HhCache {
        &self.hh
    }

    /// Neighbour output: if the state is valid, write the header to `dst`
    /// (the frame's first 14 bytes) and return true; otherwise leave
    /// `dst` alone and return false (the caller queues the packet).
    #[inline(always)]
    pub fn hh_output(&self, dst: &mut [u8; ETH_HLEN]) -> bool {
        if !self.state().is_valid() {
            return false;
        }
        self.hh.copy_to(dst);
        true
    }

    /// The cached header's two words if the state is valid: one consistent
    /// read that a burst can reuse for every packet to this neighbour.
    /// Marks the entry used (a store only the first time in an aging round).
    #[inline(always)]
    pub fn hh_snapshot(&self) -> Option<[u64; 2]> {
        if !self.state().is_valid() {
            return None;
        }
        if self.used.load(Relaxed) == 0 {
            self.used.store(1, Relaxed);
        }
        Some(self.hh.read_words())
    }

    /// Whether a worker output through the entry since the last call;
    /// clears the mark (writer only; stores only when it was set).
    pub(super) fn take_used(&self) -> bool {
        let used = self.used.load(Relaxed) != 0;
        if used {
            self.used.store(0, Relaxed);
        }
        used
    }

    /// When the neighbour was last confirmed reachable.
    pub fn confirmed(&self) -> u64 {
        self.confirmed.load(Relaxed)
    }

    /// Record that the neighbour was reachable at `now`. Any lcore may call it;
    /// it stores only if `now` is later than the stored time (an unchanged time
    /// leaves the cache line clean). Returns whether it stored. Two racing
    /// callers may leave the earlier of their times; it moves on at the next.
    #[inline(always)]
    pub fn confirm(&self, now: u64) -> bool {
        if now > self.confirmed.load(Relaxed) {
            self.confirmed.store(now, Relaxed);
            true
        } else {
            false
        }
    }

    /// Publish the address (writer only; fill the other fields first).
    pub(super) fn set_addr_bits(&self, addr: u32) {
        self.addr.store(addr, Release);
    }

    /// Release: the header written before is visible to whoever sees the state.
    /// Stores only on a change (writer only).
    pub(super) fn set_state(&self, state: NeighState) {
        if self.state.load(Relaxed) != state as u8 {
            self.state.store(state as u8, Release);
        }
    }

    /// Stores only on a change (writer only).
    pub(super) fn set_flags(&self, flags: NeighFlags) {
        if self.flags.load(Relaxed) != flags.0 {
            self.flags.store(flags.0, Relaxed);
        }
    }

    /// Store the header (writer only). Returns whether it changed.
    pub(super) fn set_hh(&self, hdr: &EthHeader) -> bool {
        self.hh.write(hdr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::neigh::hh::HH_PAD;

    const HDR: EthHeader = EthHeader {
        dst: [0x02, 0, 0, 0, 0, 1],
        src: [0x02, 0, 0, 0, 0, 2],
        ethertype: 0x0800,
    };

    #[test]
    fn entry_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<NeighEntry>(), 64);
        assert_eq!(std::mem::align_of::<NeighEntry>(), 64);
    }

    #[test]
    fn new_entry_is_free_and_incomplete() {
        let e = NeighEntry::new();
        assert_eq!(e.addr(), Ipv4Addr::UNSPECIFIED);
        assert_eq!(e.state(), NeighState::Incomplete);
        assert_eq!(e.flags(), NeighFlags::NONE);
        assert!(!e.is_static());
        assert_eq!(e.confirmed(), 0);
    }

    #[test]
    fn state_round_trips() {
        let e = NeighEntry::new();
        for s in [
            NeighState::Incomplete,
            NeighState::Reachable,
            NeighState::Stale,
            NeighState::Failed,
        ] {
            e.set_state(s);
            assert_eq!(e.state(), s);
        }
        assert!(NeighState::Reachable.is_valid());
        assert!(NeighState::Stale.is_valid());
        assert!(!NeighState::Incomplete.is_valid());
        assert!(!NeighState::Failed.is_valid());
    }

    #[test]
    fn static_flag() {
        let e = NeighEntry::new();
        e.set_flags(NeighFlags::STATIC);
        assert!(e.is_static());
        e.set_flags(NeighFlags::NONE);
        assert!(!e.is_static());
    }

    #[test]
    fn hh_output_only_when_valid() {
        let e = NeighEntry::new();
        e.set_hh(&HDR);
        let mut dst = [0xffu8; ETH_HLEN];
        for s in [NeighState::Incomplete, NeighState::Failed] {
            e.set_state(s);
            assert!(!e.hh_output(&mut dst));
            assert_eq!(dst, [0xff; ETH_HLEN]);
        }
        for s in [NeighState::Reachable, NeighState::Stale] {
            dst = [0xff; ETH_HLEN];
            e.set_state(s);
            assert!(e.hh_output(&mut dst));
            assert_eq!(&dst[..], &HDR.slot()[HH_PAD..]);
            assert_eq!(
                e.hh_snapshot().map(|w| w[1].to_ne_bytes()[6..].to_vec()),
                Some(vec![8, 0])
            );
        }
    }

    #[test]
    fn confirm_moves_forward() {
        let e = NeighEntry::new();
        assert!(e.confirm(100));
        assert_eq!(e.confirmed(), 100);
        assert!(e.confirm(101));
        assert_eq!(e.confirmed(), 101);
        // An earlier time does not move it back.
        assert!(!e.confirm(50));
        assert_eq!(e.confirmed(), 101);
    }

    #[test]
    fn confirm_with_unchanged_time_changes_nothing() {
        let e = NeighEntry::new();
        e.set_addr_bits(u32::from(Ipv4Addr::new(10, 0, 0, 1)));
        e.set_state(NeighState::Reachable);
        e.set_hh(&HDR);
        assert!(e.confirm(7));
        let before = format!("{e:?}");
        for _ in 0..3 {
            assert!(!e.confirm(7), "stored an unchanged time");
        }
        assert_eq!(format!("{e:?}"), before);
        assert_eq!(e.confirmed(), 7);
    }
}
