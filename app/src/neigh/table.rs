//! The neighbour table: a fixed array of entries, open addressing with linear
//! probing on the IPv4 address, allocated once at creation and never grown.
//!
//! Concurrency: one writer ([`NeighWriter`], created with the table, not
//! `Clone`, every change takes `&mut self`) and any number of lock-free readers
//! (`&NeighTable` on any lcore). Readers never write, except
//! [`NeighEntry::confirm`] and the entry's used mark, each stored only when it
//! changes.
//!
//! Entries that no route holds (learned, not static, not a configured
//! gateway) can be reclaimed: the writer marks the entry failed and its
//! address a tombstone (probes pass over it, lookups no longer find it), and
//! reuses the slot only after a grace period of the workers' reclamation
//! domain ([`GracePeriods`]: the router's RCU QSBR, which the FIB and the
//! hook sets use too): every online worker has passed a quiescent point
//! since, so none still holds the index it looked up before the reclaim. A route's gateway keeps its index for the table's
//! life. A reusable tombstone that no live entry's probe passes becomes a
//! free slot again.
//!
//! At most `capacity` entries live in `2 * capacity` slots (rounded up to a
//! power of two), so probes stay short and always meet a free slot.

use super::entry::{NeighEntry, NeighFlags, NeighState};
use super::hh::EthHeader;
use hooks::grace::GracePeriods;
use std::collections::VecDeque;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// The address of a reclaimed slot: 255.255.255.255 is never a neighbour.
const TOMBSTONE: u32 = u32::MAX;

/// Why the writer could not make a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NeighError {
    #[error("neighbour table full ({capacity} entries)")]
    Full { capacity: usize },
    #[error("0.0.0.0 cannot be a neighbour")]
    Unspecified,
    #[error("neighbour {0} not found")]
    NotFound(Ipv4Addr),
    #[error("neighbour {0} is static")]
    Static(Ipv4Addr),
    #[error("neighbour {0} is a route's gateway")]
    Gateway(Ipv4Addr),
    #[error("neighbour {0} is not static (learned by ARP)")]
    NotStatic(Ipv4Addr),
}

/// Where a probe for an address ended.
enum Probe {
    Found(usize),
    Free,
    /// No free slot at all (cannot happen while `len <= capacity`).
    Exhausted,
}

/// The table, shared by the readers and its writer.
pub struct NeighTable {
    entries: Box<[NeighEntry]>,
    /// `32 - log2(entries.len())`: the hash keeps the top bits.
    shift: u32,
    capacity: usize,
    /// Written by the writer only.
    len: AtomicUsize,
    /// Grace periods before a reclaimed slot is reused.
    grace: Arc<dyn GracePeriods>,
}

impl NeighTable {
    /// Largest capacity accepted.
    pub const MAX_CAPACITY: usize = 1 << 30;

    /// A table for up to `capacity` neighbours and its only writer, which
    /// reuses a reclaimed slot after a grace period of `grace`: the domain
    /// the workers that read the table report their quiescent points to.
    ///
    /// Panics if `capacity` is 0 or above [`Self::MAX_CAPACITY`].
    pub fn new(capacity: usize, grace: Arc<dyn GracePeriods>) -> (Arc<NeighTable>, NeighWriter) {
        assert!(
            (1..=Self::MAX_CAPACITY).contains(&capacity),
            "neighbour table capacity {capacity} out of 1..={}",
            Self::MAX_CAPACITY
        );
        let slots = (2 * capacity).next_power_of_two();
        let table = Arc::new(NeighTable {
            entries: (0..slots).map(|_| NeighEntry::new()).collect(),
            shift: 32 - slots.trailing_zeros(),
            capacity,
            len: AtomicUsize::new(0),
            grace,
        });
        let writer = NeighWriter {
            table: Arc::clone(&table),
            occupied: 0,
            retiring: VecDeque::new(),
            reusable: vec![false; slots].into_boxed_slice(),
        };
        (table, writer)
    }

    /// Most neighbours the table can hold.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Neighbours in the table.
    pub fn len(&self) -> usize {
        self.len.load(Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The index of `addr`'s entry, if present. Lock-free.
    #[inline]
    pub fn lookup(&self, addr: Ipv4Addr) -> Option<usize> {
        match self.probe(u32::from(addr)) {
            Probe::Found(i) => Some(i),
            Probe::Free | Probe::Exhausted => None,
        }
    }

    /// `addr`'s entry, if present. Lock-free.
    #[inline]
    pub fn get(&self, addr: Ipv4Addr) -> Option<&NeighEntry> {
        self.lookup(addr).map(|i| &self.entries[i])
    }

    /// The entry at `index` (from [`lookup`](Self::lookup) or the writer).
    ///
    /// Panics if `index` is out of range.
    #[inline(always)]
    pub fn entry(&self, index: usize) -> &NeighEntry {
        &self.entries[index]
    }

    /// The entries in use, with their indices (for dumps and the writer).
    pub fn iter(&self) -> impl Iterator<Item = (usize, &NeighEntry)> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| !matches!(e.addr_bits(), 0 | TOMBSTONE))
    }

    /// Fibonacci hashing: the top bits of the product.
    #[inline(always)]
    fn home(&self, key: u32) -> usize {
        (key.wrapping_mul(0x9e37_79b9) >> self.shift) as usize
    }

    /// Readers' probe: a tombstone is passed over like a used slot.
    #[inline]
    fn probe(&self, key: u32) -> Probe {
        if key == 0 || key == TOMBSTONE {
            return Probe::Exhausted;
        }
        let mask = self.entries.len() - 1;
        let mut i = self.home(key);
        for _ in 0..self.entries.len() {
            match self.entries[i].addr_bits() {
                k if k == key => return Probe::Found(i),
                0 => return Probe::Free,
                _ => i = (i + 1) & mask,
            }
        }
        Probe::Exhausted
    }
}

/// The table's only writer (the control lcore). Not `Clone`; every change
/// takes `&mut self`, so two writers cannot exist.
pub struct NeighWriter {
    table: Arc<NeighTable>,
    /// Slots not free: live entries and tombstones.
    occupied: usize,
    /// Reclaimed slots waiting for their grace period: index and token
    /// (`None` until [`collect`](Self::collect) starts one).
    retiring: VecDeque<(usize, Option<u64>)>,
    /// Tombstones whose grace period has passed: free for any address.
    reusable: Box<[bool]>,
}

impl NeighWriter {
    /// The table this writer changes.
    pub fn table(&self) -> &Arc<NeighTable> {
        &self.table
    }

    /// `addr`'s index, adding it as incomplete if absent.
    pub fn insert(&mut self, addr: Ipv4Addr) -> Result<usize, NeighError> {
        let (i, new) = self.slot_for(addr)?;
        if new {
            self.publish(i, addr);
        }
        Ok(i)
    }

    /// A route's gateway: [`insert`](Self::insert), and the route holds the
    /// index, so the entry is never reclaimed.
    pub fn insert_gateway(&mut self, addr: Ipv4Addr) -> Result<usize, NeighError> {
        let i = self.insert(addr)?;
        let e = &self.table.entries[i];
        e.set_flags(e.flags().union(NeighFlags::GATEWAY));
        Ok(i)
    }

    /// Resolution (an ARP reply): store the header, confirm at `now`, mark
    /// reachable; adds `addr` if absent. Static entries are left alone.
    pub fn resolve(
        &mut self,
        addr: Ipv4Addr,
        hdr: &EthHeader,
        now: u64,
    ) -> Result<usize, NeighError> {
        let (i, new) = self.slot_for(addr)?;
        let e = &self.table.entries[i];
        if e.is_static() {
            return Err(NeighError::Static(addr));
        }
        e.set_hh(hdr);
        e.confirm(now);
        e.set_state(NeighState::Reachable);
        if new {
            self.publish(i, addr);
        }
        Ok(i)
    }

    /// A configured neighbour: reachable, never ages, replaces a learned one.
    pub fn insert_static(&mut self, addr: Ipv4Addr, hdr: &EthHeader) -> Result<usize, NeighError> {
        let (i, new) = self.slot_for(addr)?;
        let e = &self.table.entries[i];
        e.set_flags(e.flags().union(NeighFlags::STATIC));
        e.set_hh(hdr);
        e.set_state(NeighState::Reachable);
        if new {
            self.publish(i, addr);
        }
        Ok(i)
    }

    /// A static neighbour is no longer configured: a route's gateway stays
    /// (to be resolved by ARP: incomplete, its header no longer used),
    /// anything else is reclaimed. Refused for a neighbour that is not static.
    pub fn remove_static(&mut self, addr: Ipv4Addr) -> Result<(), NeighError> {
        let i = self.table.lookup(addr).ok_or(NeighError::NotFound(addr))?;
        let e = &self.table.entries[i];
        if !e.is_static() {
            return Err(NeighError::NotStatic(addr));
        }
        e.set_state(NeighState::Incomplete);
        e.set_flags(e.flags().without(NeighFlags::STATIC));
        if e.is_gateway() {
            return Ok(());
        }
        self.reclaim(addr)
    }

    /// Set a learned neighbour's state (e.g. failed after unanswered probes).
    pub fn set_state(&mut self, addr: Ipv4Addr, state: NeighState) -> Result<usize, NeighError> {
        let i = self.table.lookup(addr).ok_or(NeighError::NotFound(addr))?;
        let e = &self.table.entries[i];
        if e.is_static() {
            return Err(NeighError::Static(addr));
        }
        e.set_state(state);
        Ok(i)
    }

    /// Age learned reachable entries not confirmed for more than
    /// `reachable_for` (same clock as `confirm`) to stale. Returns how many.
    pub fn age(&mut self, now: u64, reachable_for: u64) -> usize {
        let mut aged = 0;
        for (_, e) in self.table.iter() {
            if !e.is_static()
                && e.state() == NeighState::Reachable
                && now.saturating_sub(e.confirmed()) > reachable_for
            {
                e.set_state(NeighState::Stale);
                aged += 1;
            }
        }
        aged
    }

    /// Whether a worker output through the entry at `index` since the last
    /// call (clears the mark).
    pub fn take_used(&mut self, index: usize) -> bool {
        self.table.entries[index].take_used()
    }

    /// Remove `addr`'s entry: failed at once for readers that hold its
    /// index, gone for lookups; the slot is reused after a grace period.
    /// Static entries and routes' gateways are refused.
    pub fn reclaim(&mut self, addr: Ipv4Addr) -> Result<(), NeighError> {
        let i = self.table.lookup(addr).ok_or(NeighError::NotFound(addr))?;
        let e = &self.table.entries[i];
        if e.is_static() {
            return Err(NeighError::Static(addr));
        }
        if e.is_gateway() {
            return Err(NeighError::Gateway(addr));
        }
        // Release stores: a reader that sees the tombstone or reads the state
        // after this sees failed, never the header as valid.
        e.set_state(NeighState::Failed);
        e.set_addr_bits(TOMBSTONE);
        self.table.len.store(self.table.len() - 1, Relaxed);
        self.retiring.push_back((i, None));
        Ok(())
    }

    /// Reclaimed slots still in their grace period.
    pub fn retiring(&self) -> usize {
        self.retiring.len()
    }

    /// Start a grace period for slots reclaimed since the last call, make
    /// the slots whose period has passed reusable, and free the tombstones
    /// no probe needs to pass. Returns how many slots became reusable.
    pub fn collect(&mut self) -> usize {
        if self.retiring.iter().any(|(_, t)| t.is_none()) {
            let token = self.table.grace.start();
            for (_, t) in self.retiring.iter_mut().filter(|(_, t)| t.is_none()) {
                *t = Some(token);
            }
        }
        let mut freed = 0;
        while let Some(&(i, Some(token))) = self.retiring.front() {
            if !self.table.grace.passed(token) {
                break;
            }
            self.retiring.pop_front();
            self.reusable[i] = true;
            self.free_unneeded(i);
            freed += 1;
        }
        freed
    }

    /// Free the reusable tombstones of the probe run (the slots between
    /// two free ones) around `i` that no live entry's probe passes: those
    /// before every live entry whose home is at or before them. The run
    /// stays whole for every address still in it.
    fn free_unneeded(&mut self, i: usize) {
        let t = &self.table;
        let mask = t.entries.len() - 1;
        let used = |x: usize| t.entries[x & mask].addr_bits() != 0;
        // The run: from after the free slot before `i` to the next free one
        // (one exists: `occupied` stays below the slot count).
        let mut start = i;
        while used(start.wrapping_sub(1) & mask) {
            start = start.wrapping_sub(1) & mask;
        }
        let offset = |x: usize| x.wrapping_sub(start) & mask;
        let len = (0..=mask).take_while(|&k| used(start + k)).count();
        // The lowest offset each slot's probe must pass: the smallest home
        // offset of the live entries at or after it.
        let mut needed_from = usize::MAX;
        let mut free = Vec::new();
        for k in (0..len).rev() {
            let x = (start + k) & mask;
            match t.entries[x].addr_bits() {
                TOMBSTONE if self.reusable[x] && needed_from > k => free.push(x),
                TOMBSTONE => {}
                key => needed_from = needed_from.min(offset(t.home(key))),
            }
        }
        for x in free {
            self.reusable[x] = false;
            self.table.entries[x].set_addr_bits(0);
            self.occupied -= 1;
        }
    }

    /// `addr`'s slot and whether it is new (free or a reusable tombstone,
    /// not yet published).
    fn slot_for(&mut self, addr: Ipv4Addr) -> Result<(usize, bool), NeighError> {
        if addr.is_unspecified() || addr.is_broadcast() {
            return Err(NeighError::Unspecified);
        }
        let t = &self.table;
        let full = NeighError::Full {
            capacity: t.capacity,
        };
        let key = u32::from(addr);
        let mask = t.entries.len() - 1;
        let mut i = t.home(key);
        let mut reuse = None;
        for _ in 0..t.entries.len() {
            match t.entries[i].addr_bits() {
                k if k == key => return Ok((i, false)),
                0 => break,
                TOMBSTONE if self.reusable[i] && reuse.is_none() => reuse = Some(i),
                _ => {}
            }
            i = (i + 1) & mask;
        }
        if t.len() >= t.capacity {
            return Err(full);
        }
        let slot = match reuse {
            Some(r) => {
                self.reusable[r] = false;
                r
            }
            // Keep a free slot, so that every probe ends.
            None if t.entries[i].addr_bits() != 0 || self.occupied + 1 >= t.entries.len() => {
                return Err(full)
            }
            None => {
                self.occupied += 1;
                i
            }
        };
        // A slot reclaimed before is unseen by readers since its grace
        // period: start it afresh.
        let e = &self.table.entries[slot];
        e.set_flags(NeighFlags::NONE);
        e.set_state(NeighState::Incomplete);
        Ok((slot, true))
    }

    /// Make a filled slot visible to readers: fresh flags and used mark,
    /// then the address.
    fn publish(&mut self, i: usize, addr: Ipv4Addr) {
        let e = &self.table.entries[i];
        e.take_used();
        self.table.entries[i].set_addr_bits(u32::from(addr));
        self.table.len.store(self.table.len() + 1, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hooks::grace::Epochs;

    /// A domain no worker reads: every grace period passes at once.
    fn no_readers() -> Arc<Epochs> {
        Arc::new(Epochs::default())
    }

    fn hdr(last: u8) -> EthHeader {
        EthHeader {
            dst: [0x02, 0, 0, 0, 0, last],
            src: [0x02, 0, 0, 0, 0, 0xfe],
            ethertype: 0x0800,
        }
    }

    fn ip(last: u8) -> Ipv4Addr {
        Ipv4Addr::new(10, 0, 0, last)
    }

    #[test]
    fn slots_are_twice_capacity_rounded_up() {
        for (cap, slots) in [(1, 2), (3, 8), (4, 8), (5, 16), (1000, 2048)] {
            let (t, _w) = NeighTable::new(cap, no_readers());
            assert_eq!(t.entries.len(), slots);
            assert_eq!(t.capacity(), cap);
            assert!(t.is_empty());
        }
    }

    #[test]
    #[should_panic(expected = "capacity 0")]
    fn zero_capacity_panics() {
        let _ = NeighTable::new(0, no_readers());
    }

    #[test]
    fn lookup_on_empty_table() {
        let (t, _w) = NeighTable::new(4, no_readers());
        assert_eq!(t.lookup(ip(1)), None);
        assert!(t.get(ip(1)).is_none());
        assert_eq!(t.lookup(Ipv4Addr::UNSPECIFIED), None);
    }

    #[test]
    fn insert_is_incomplete_and_idempotent() {
        let (t, mut w) = NeighTable::new(4, no_readers());
        let i = w.insert(ip(1)).unwrap();
        assert_eq!(w.insert(ip(1)), Ok(i));
        assert_eq!(t.len(), 1);
        assert_eq!(t.lookup(ip(1)), Some(i));
        let e = t.entry(i);
        assert_eq!(e.addr(), ip(1));
        assert_eq!(e.state(), NeighState::Incomplete);
        assert!(!e.hh_output(&mut [0; 14]));
    }

    #[test]
    fn unspecified_is_refused() {
        let (_t, mut w) = NeighTable::new(4, no_readers());
        assert_eq!(
            w.insert(Ipv4Addr::UNSPECIFIED),
            Err(NeighError::Unspecified)
        );
    }

    #[test]
    fn resolve_makes_reachable() {
        let (t, mut w) = NeighTable::new(4, no_readers());
        let i = w.insert(ip(1)).unwrap();
        assert_eq!(w.resolve(ip(1), &hdr(1), 10), Ok(i));
        let e = t.get(ip(1)).unwrap();
        assert_eq!(e.state(), NeighState::Reachable);
        assert_eq!(e.hh().header(), hdr(1));
        assert_eq!(e.confirmed(), 10);
        // Resolving an unknown address adds it.
        let j = w.resolve(ip(2), &hdr(2), 11).unwrap();
        assert_ne!(i, j);
        assert_eq!(t.entry(j).hh().header(), hdr(2));
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn full_table_refuses_new_but_updates_old() {
        let (t, mut w) = NeighTable::new(3, no_readers());
        for n in 1..=3 {
            w.insert(ip(n)).unwrap();
        }
        assert_eq!(w.insert(ip(4)), Err(NeighError::Full { capacity: 3 }));
        assert_eq!(
            w.resolve(ip(4), &hdr(4), 1),
            Err(NeighError::Full { capacity: 3 })
        );
        assert!(w.resolve(ip(2), &hdr(2), 1).is_ok());
        assert_eq!(t.len(), 3);
        assert_eq!(t.lookup(ip(4)), None);
    }

    #[test]
    fn many_addresses_found_at_their_index() {
        let cap = 500;
        let (t, mut w) = NeighTable::new(cap, no_readers());
        // Same /24s and strided addresses, to collide in the hash.
        let addrs: Vec<Ipv4Addr> = (0..cap as u32)
            .map(|n| Ipv4Addr::from(0x0a00_0001 + n * 256))
            .collect();
        let idx: Vec<usize> = addrs.iter().map(|&a| w.insert(a).unwrap()).collect();
        assert_eq!(t.len(), cap);
        for (a, i) in addrs.iter().zip(&idx) {
            assert_eq!(t.lookup(*a), Some(*i));
            assert_eq!(t.entry(*i).addr(), *a);
        }
        assert_eq!(t.lookup(Ipv4Addr::new(192, 168, 0, 1)), None);
        assert_eq!(t.iter().count(), cap);
    }

    #[test]
    fn static_entries_resist_learning_and_aging() {
        let (t, mut w) = NeighTable::new(4, no_readers());
        let i = w.insert_static(ip(1), &hdr(1)).unwrap();
        let e = t.entry(i);
        assert!(e.is_static());
        assert_eq!(e.state(), NeighState::Reachable);
        assert_eq!(w.resolve(ip(1), &hdr(9), 5), Err(NeighError::Static(ip(1))));
        assert_eq!(
            w.set_state(ip(1), NeighState::Failed),
            Err(NeighError::Static(ip(1)))
        );
        assert_eq!(w.age(1_000_000, 10), 0);
        assert_eq!(e.state(), NeighState::Reachable);
        assert_eq!(e.hh().header(), hdr(1));
    }

    #[test]
    fn static_replaces_learned() {
        let (t, mut w) = NeighTable::new(4, no_readers());
        let i = w.resolve(ip(1), &hdr(1), 5).unwrap();
        assert_eq!(w.insert_static(ip(1), &hdr(7)), Ok(i));
        assert!(t.entry(i).is_static());
        assert_eq!(t.entry(i).hh().header(), hdr(7));
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn aging_moves_unconfirmed_to_stale() {
        let (t, mut w) = NeighTable::new(4, no_readers());
        let old = w.resolve(ip(1), &hdr(1), 100).unwrap();
        let fresh = w.resolve(ip(2), &hdr(2), 100).unwrap();
        t.entry(fresh).confirm(180);
        assert_eq!(w.age(200, 50), 1);
        assert_eq!(t.entry(old).state(), NeighState::Stale);
        assert_eq!(t.entry(fresh).state(), NeighState::Reachable);
        // Stale still outputs its header.
        let mut dst = [0; 14];
        assert!(t.entry(old).hh_output(&mut dst));
        assert_eq!(&dst[..], &hdr(1).slot()[2..]);
        // Re-resolution makes it reachable again.
        w.resolve(ip(1), &hdr(1), 200).unwrap();
        assert_eq!(t.entry(old).state(), NeighState::Reachable);
    }

    #[test]
    fn set_state_of_unknown_is_not_found() {
        let (_t, mut w) = NeighTable::new(4, no_readers());
        assert_eq!(
            w.set_state(ip(1), NeighState::Failed),
            Err(NeighError::NotFound(ip(1)))
        );
        w.insert(ip(1)).unwrap();
        assert!(w.set_state(ip(1), NeighState::Failed).is_ok());
    }

    #[test]
    fn readers_see_inserts_from_another_thread() {
        let (t, mut w) = NeighTable::new(64, no_readers());
        std::thread::scope(|s| {
            s.spawn(move || {
                for n in 1..=64 {
                    w.resolve(ip(n), &hdr(n), 1).unwrap();
                }
            });
            s.spawn(|| {
                // Whatever is found is complete: address and header agree.
                for _ in 0..10_000 {
                    for n in 1..=64 {
                        if let Some(e) = t.get(ip(n)) {
                            assert_eq!(e.addr(), ip(n));
                            if e.state().is_valid() {
                                assert_eq!(e.hh().header(), hdr(n));
                            }
                        }
                    }
                }
            });
        });
        assert_eq!(t.len(), 64);
    }

    #[test]
    fn reclaimed_entry_is_failed_at_once_and_gone_for_lookups() {
        let (t, mut w) = NeighTable::new(4, no_readers());
        let i = w.resolve(ip(1), &hdr(1), 1).unwrap();
        w.reclaim(ip(1)).unwrap();
        assert_eq!(t.lookup(ip(1)), None);
        assert_eq!(t.len(), 0);
        // A reader still holding the index sees no usable header.
        assert_eq!(t.entry(i).state(), NeighState::Failed);
        assert!(t.entry(i).hh_snapshot().is_none());
        assert_eq!(t.iter().count(), 0);
        assert_eq!(w.reclaim(ip(1)), Err(NeighError::NotFound(ip(1))));
    }

    #[test]
    fn static_entries_and_gateways_are_not_reclaimed() {
        let (t, mut w) = NeighTable::new(4, no_readers());
        w.insert_static(ip(1), &hdr(1)).unwrap();
        let g = w.insert_gateway(ip(2)).unwrap();
        w.set_state(ip(2), NeighState::Failed).unwrap();
        assert_eq!(w.reclaim(ip(1)), Err(NeighError::Static(ip(1))));
        assert_eq!(w.reclaim(ip(2)), Err(NeighError::Gateway(ip(2))));
        assert_eq!(t.lookup(ip(2)), Some(g));
        assert!(t.entry(g).is_gateway() && !t.entry(g).is_reclaimable());
        // A gateway that resolves keeps its flag.
        w.resolve(ip(2), &hdr(2), 1).unwrap();
        assert!(t.entry(g).is_gateway());
    }

    #[test]
    fn a_slot_is_reused_only_after_every_reader_was_quiescent() {
        let grace = Arc::new(Epochs::default());
        let (t, mut w) = NeighTable::new(2, grace.clone());
        let mut worker = grace.reader();
        let i = w.resolve(ip(1), &hdr(1), 1).unwrap();
        w.reclaim(ip(1)).unwrap();
        assert_eq!(w.collect(), 0, "the grace period has just started");
        // The slot's tombstone is not reusable yet: another address does
        // not take it.
        let j = w.resolve(ip(2), &hdr(2), 2).unwrap();
        assert_ne!(i, j, "reused before the worker was quiescent");
        assert_eq!(t.entry(i).state(), NeighState::Failed);
        w.reclaim(ip(2)).unwrap();
        worker.quiescent();
        assert_eq!(w.collect(), 1, "ip(1)'s slot");
        assert_eq!(
            w.collect(),
            0,
            "ip(2)'s period started after the quiescent point"
        );
        worker.quiescent();
        assert_eq!(w.collect(), 1);
        assert_eq!(w.retiring(), 0);
        let k = w.resolve(ip(3), &hdr(3), 3).unwrap();
        assert_eq!(t.entry(k).hh().header(), hdr(3));
        assert_eq!(t.entry(k).state(), NeighState::Reachable);
        assert_eq!(t.len(), 1);
        // A worker that stopped (its reader went offline) holds no slot.
        w.reclaim(ip(3)).unwrap();
        assert_eq!(w.collect(), 0);
        drop(worker);
        assert_eq!(w.collect(), 1, "a stopped worker holds nothing up");
    }

    #[test]
    fn an_entry_reused_for_another_address_starts_afresh() {
        let (t2, mut w2) = NeighTable::new(1, no_readers());
        let i = w2.resolve(ip(1), &hdr(1), 1).unwrap();
        w2.reclaim(ip(1)).unwrap();
        w2.collect();
        w2.collect();
        let j = w2.insert(ip(2)).unwrap();
        assert_eq!(t2.lookup(ip(1)), None);
        let _ = i;
        assert_eq!(t2.entry(j).state(), NeighState::Incomplete);
        assert_eq!(t2.entry(j).flags(), NeighFlags::NONE);
        assert!(t2.entry(j).hh_snapshot().is_none(), "not the old header");
    }

    #[test]
    fn churn_of_reclaims_keeps_every_live_address_found_and_probes_short() {
        let cap = 64;
        let (t, mut w) = NeighTable::new(cap, no_readers());
        let mut live: Vec<u32> = Vec::new();
        let mut rng = fastrand::Rng::with_seed(0x1234_5678);
        for round in 0..20_000u32 {
            let x = rng.u32(..);
            let a = 0x0a00_0000 | (x & 0xffff);
            if live.len() == cap || (x >> 20).is_multiple_of(3) && !live.is_empty() {
                let k = live.swap_remove((x >> 8) as usize % live.len());
                w.reclaim(Ipv4Addr::from(k)).unwrap();
            } else if !live.contains(&a) {
                w.collect();
                w.insert(Ipv4Addr::from(a)).unwrap();
                live.push(a);
            }
            if round % 1000 == 0 {
                w.collect();
                for &k in &live {
                    let i = t.lookup(Ipv4Addr::from(k)).expect("live address lost");
                    assert_eq!(u32::from(t.entry(i).addr()), k);
                }
                assert_eq!(t.len(), live.len());
                assert_eq!(t.iter().count(), live.len());
                // Tombstones no probe needs are freed: the slots in use stay
                // near the live entries, far from filling the table.
                assert!(
                    w.occupied <= live.len() + cap / 2,
                    "{} for {}",
                    w.occupied,
                    live.len()
                );
            }
        }
    }

    #[test]
    fn a_reader_never_sees_another_address_header_through_a_reused_slot() {
        // The writer reclaims and re-adds addresses in one slot's reach while
        // a reader looks them up and reads the header of the index it found,
        // passing a quiescent point between "bursts", as workers do.
        let grace = Arc::new(Epochs::default());
        let (t, mut w) = NeighTable::new(2, grace.clone());
        let mut reader = grace.reader();
        let stop = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                for n in 0..20_000u32 {
                    let a = 1 + (n % 5) as u8;
                    let _ = w.resolve(ip(a), &hdr(a), u64::from(n));
                    let _ = w.reclaim(ip(1 + ((n + 2) % 5) as u8));
                    w.collect();
                }
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            });
            s.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for a in 1..=5 {
                        if let Some(i) = t.lookup(ip(a)) {
                            for _ in 0..4 {
                                if let Some(words) = t.entry(i).hh_snapshot() {
                                    let mut f = [0u8; 14];
                                    crate::neigh::store_header(&mut f, words);
                                    assert_eq!(f[5], a, "header of another address");
                                }
                            }
                        }
                    }
                    reader.quiescent();
                }
            });
        });
    }
}
