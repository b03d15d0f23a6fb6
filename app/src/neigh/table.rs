//! The neighbour table: a fixed array of entries, open addressing with linear
//! probing on the IPv4 address, allocated once at creation and never grown.
//!
//! Concurrency: one writer ([`NeighWriter`], created with the table, not
//! `Clone`, every change takes `&mut self`) and any number of lock-free readers
//! (`&NeighTable` on any lcore). Readers never write, except
//! [`NeighEntry::confirm`]. Entries are never removed, so an address found once
//! stays at the same index for the table's life (a route may keep the index);
//! an unreachable neighbour is marked failed instead. Removing entries would
//! need readers to report quiescent states (like `rte_rcu_qsbr`).
//!
//! At most `capacity` entries live in `2 * capacity` slots (rounded up to a
//! power of two), so probes stay short and always meet a free slot.

use super::entry::{NeighEntry, NeighFlags, NeighState};
use super::hh::EthHeader;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

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
}

/// Where a probe for an address ended.
enum Probe {
    Found(usize),
    Free(usize),
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
}

impl NeighTable {
    /// Largest capacity accepted.
    pub const MAX_CAPACITY: usize = 1 << 30;

    /// A table for up to `capacity` neighbours and its only writer.
    ///
    /// Panics if `capacity` is 0 or above [`Self::MAX_CAPACITY`].
    pub fn new(capacity: usize) -> (Arc<NeighTable>, NeighWriter) {
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
        });
        let writer = NeighWriter {
            table: Arc::clone(&table),
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
            Probe::Free(_) | Probe::Exhausted => None,
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
            .filter(|(_, e)| e.addr_bits() != 0)
    }

    /// Fibonacci hashing: the top bits of the product.
    #[inline(always)]
    fn home(&self, key: u32) -> usize {
        (key.wrapping_mul(0x9e37_79b9) >> self.shift) as usize
    }

    #[inline]
    fn probe(&self, key: u32) -> Probe {
        if key == 0 {
            return Probe::Exhausted;
        }
        let mask = self.entries.len() - 1;
        let mut i = self.home(key);
        for _ in 0..self.entries.len() {
            match self.entries[i].addr_bits() {
                k if k == key => return Probe::Found(i),
                0 => return Probe::Free(i),
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
        e.set_flags(NeighFlags::STATIC);
        e.set_hh(hdr);
        e.set_state(NeighState::Reachable);
        if new {
            self.publish(i, addr);
        }
        Ok(i)
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

    /// `addr`'s slot and whether it is new (free, not yet published).
    fn slot_for(&self, addr: Ipv4Addr) -> Result<(usize, bool), NeighError> {
        if addr.is_unspecified() {
            return Err(NeighError::Unspecified);
        }
        let full = NeighError::Full {
            capacity: self.table.capacity,
        };
        match self.table.probe(u32::from(addr)) {
            Probe::Found(i) => Ok((i, false)),
            Probe::Free(_) if self.table.len() >= self.table.capacity => Err(full),
            Probe::Free(i) => Ok((i, true)),
            Probe::Exhausted => Err(full),
        }
    }

    /// Make a filled free slot visible to readers.
    fn publish(&mut self, i: usize, addr: Ipv4Addr) {
        self.table.entries[i].set_addr_bits(u32::from(addr));
        self.table.len.store(self.table.len() + 1, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
            let (t, _w) = NeighTable::new(cap);
            assert_eq!(t.entries.len(), slots);
            assert_eq!(t.capacity(), cap);
            assert!(t.is_empty());
        }
    }

    #[test]
    #[should_panic(expected = "capacity 0")]
    fn zero_capacity_panics() {
        let _ = NeighTable::new(0);
    }

    #[test]
    fn lookup_on_empty_table() {
        let (t, _w) = NeighTable::new(4);
        assert_eq!(t.lookup(ip(1)), None);
        assert!(t.get(ip(1)).is_none());
        assert_eq!(t.lookup(Ipv4Addr::UNSPECIFIED), None);
    }

    #[test]
    fn insert_is_incomplete_and_idempotent() {
        let (t, mut w) = NeighTable::new(4);
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
        let (_t, mut w) = NeighTable::new(4);
        assert_eq!(
            w.insert(Ipv4Addr::UNSPECIFIED),
            Err(NeighError::Unspecified)
        );
    }

    #[test]
    fn resolve_makes_reachable() {
        let (t, mut w) = NeighTable::new(4);
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
        let (t, mut w) = NeighTable::new(3);
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
        let (t, mut w) = NeighTable::new(cap);
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
        let (t, mut w) = NeighTable::new(4);
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
        let (t, mut w) = NeighTable::new(4);
        let i = w.resolve(ip(1), &hdr(1), 5).unwrap();
        assert_eq!(w.insert_static(ip(1), &hdr(7)), Ok(i));
        assert!(t.entry(i).is_static());
        assert_eq!(t.entry(i).hh().header(), hdr(7));
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn aging_moves_unconfirmed_to_stale() {
        let (t, mut w) = NeighTable::new(4);
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
        let (_t, mut w) = NeighTable::new(4);
        assert_eq!(
            w.set_state(ip(1), NeighState::Failed),
            Err(NeighError::NotFound(ip(1)))
        );
        w.insert(ip(1)).unwrap();
        assert!(w.set_state(ip(1), NeighState::Failed).is_ok());
    }

    #[test]
    fn readers_see_inserts_from_another_thread() {
        let (t, mut w) = NeighTable::new(64);
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
}
