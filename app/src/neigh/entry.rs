//! One neighbour: its address (IPv4 or IPv6), state, flags, cached header and
//! the time it was last confirmed reachable. One cache line per entry.
//!
//! The table finds an entry by its 64-bit key, published last with Release:
//! an IPv4 address is its own key (the upper 32 bits zero), so an IPv4 lookup
//! compares one word, as before IPv6; an IPv6 key is `KEY6` with a 32-bit
//! hash of the address, and the whole address sits in the entry's last 16
//! bytes, written before the key. 0 marks a free slot, `TOMBSTONE` a
//! reclaimed one.
//!
//! Only the table's writer changes the address, state, flags and header.
//! `confirm` is the one write the data path may make (like the kernel's
//! `dst_confirm`), and it writes only when the time moves forward.

use super::hh::{EthHeader, HhCache, ETH_HLEN};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::*};

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

/// The key of a free slot.
pub(super) const FREE: u64 = 0;
/// The key of a reclaimed slot: no address has it.
pub(super) const TOMBSTONE: u64 = u64::MAX;
/// The upper half of every IPv6 key (IPv4 keys have it zero).
pub(super) const KEY6: u64 = 1 << 32;

/// The key of an IPv4 address: the address itself.
#[inline(always)]
pub(super) fn key4(addr: Ipv4Addr) -> u64 {
    u64::from(u32::from(addr))
}

/// The key of an IPv6 address: [`KEY6`] and a 32-bit hash of the whole
/// address (the interface identifiers of one link's neighbours differ in
/// their last bits, which the multiply spreads over the top ones kept).
#[inline(always)]
pub(super) fn key6(addr: Ipv6Addr) -> u64 {
    let [hi, lo] = words6(addr);
    let h = (hi ^ lo.rotate_left(32)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    KEY6 | (h >> 32)
}

/// An IPv6 address as the two words an entry stores.
#[inline(always)]
pub(super) fn words6(addr: Ipv6Addr) -> [u64; 2] {
    let b = addr.to_bits();
    [(b >> 64) as u64, b as u64]
}

/// A neighbour entry. Key 0 marks a free slot.
#[repr(align(64))]
#[derive(Debug, Default)]
pub struct NeighEntry {
    /// [`key4`] or [`key6`] of the address, [`FREE`] or [`TOMBSTONE`];
    /// published last, with Release.
    key: AtomicU64,
    state: AtomicU8,
    flags: AtomicU8,
    /// Set by a worker that output through the entry (only when clear, so
    /// once per aging round at most); cleared by the writer as it ages.
    used: AtomicU8,
    hh: HhCache,
    /// Caller's clock (a coarse tick such as ms: with raw TSC every confirm writes).
    confirmed: AtomicU64,
    /// An IPv6 neighbour's address ([`words6`]); written before the key, and
    /// only while no reader can hold the slot (free, or a tombstone past its
    /// grace period). Unused by IPv4 entries.
    addr6: [AtomicU64; 2],
}

impl NeighEntry {
    /// A free entry.
    pub const fn new() -> Self {
        NeighEntry {
            key: AtomicU64::new(FREE),
            state: AtomicU8::new(NeighState::Incomplete as u8),
            flags: AtomicU8::new(0),
            used: AtomicU8::new(0),
            hh: HhCache::new(),
            confirmed: AtomicU64::new(0),
            addr6: [AtomicU64::new(0), AtomicU64::new(0)],
        }
    }

    /// The neighbour's IPv4 address (0.0.0.0 for a free slot or an IPv6
    /// neighbour).
    pub fn addr(&self) -> Ipv4Addr {
        match self.key() {
            k if k >> 32 == 0 => Ipv4Addr::from(k as u32),
            _ => Ipv4Addr::UNSPECIFIED,
        }
    }

    /// The neighbour's IPv6 address (`::` for a free slot or an IPv4
    /// neighbour).
    pub fn addr6(&self) -> Ipv6Addr {
        match self.key() {
            FREE | TOMBSTONE => Ipv6Addr::UNSPECIFIED,
            k if k >> 32 == 0 => Ipv6Addr::UNSPECIFIED,
            _ => self.stored6(),
        }
    }

    /// The neighbour's address, either family (`None` for a free or
    /// reclaimed slot).
    pub fn ip(&self) -> Option<IpAddr> {
        match self.key() {
            FREE | TOMBSTONE => None,
            k if k >> 32 == 0 => Some(IpAddr::V4(Ipv4Addr::from(k as u32))),
            _ => Some(IpAddr::V6(self.stored6())),
        }
    }

    /// Whether the entry holds an IPv6 neighbour.
    pub fn is_ipv6(&self) -> bool {
        let k = self.key();
        k != TOMBSTONE && k >> 32 != 0
    }

    /// The key the table finds the entry by. Acquire: the entry's fields
    /// written before it was published are visible after.
    #[inline(always)]
    pub(super) fn key(&self) -> u64 {
        self.key.load(Acquire)
    }

    /// The stored IPv6 address words (after an Acquire load of the key).
    #[inline(always)]
    pub(super) fn stored6_words(&self) -> [u64; 2] {
        [self.addr6[0].load(Relaxed), self.addr6[1].load(Relaxed)]
    }

    fn stored6(&self) -> Ipv6Addr {
        let [hi, lo] = self.stored6_words();
        Ipv6Addr::from_bits((u128::from(hi) << 64) | u128::from(lo))
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

    /// Publish an IPv4 address (writer only; fill the other fields first).
    #[cfg(test)]
    pub(super) fn set_addr_bits(&self, addr: u32) {
        self.set_key(u64::from(addr));
    }

    /// Publish a key (writer only; fill the other fields first, the IPv6
    /// address included).
    pub(super) fn set_key(&self, key: u64) {
        self.key.store(key, Release);
    }

    /// Store an IPv6 address before its key is published (writer only,
    /// on a slot no reader can hold).
    pub(super) fn set_addr6(&self, addr: Ipv6Addr) {
        let w = words6(addr);
        self.addr6[0].store(w[0], Relaxed);
        self.addr6[1].store(w[1], Relaxed);
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
