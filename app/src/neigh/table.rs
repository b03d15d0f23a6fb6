//! The neighbour table: a fixed array of entries, open addressing with linear
//! probing on the neighbour's key, allocated once at creation and never grown.
//! One table holds both families: an IPv4 neighbour's key is its address (an
//! IPv4 lookup compares one word per slot, as before IPv6), an IPv6
//! neighbour's a hash of its address beside which the entry holds the whole
//! address (see [`entry`](super::entry)); both probe the same slots.
//!
//! Concurrency: one writer ([`NeighWriter`], created with the table, not
//! `Clone`, every change takes `&mut self`) and any number of lock-free readers
//! (`&NeighTable` on any lcore). Readers never write, except
//! [`NeighEntry::confirm`] and the entry's used mark, each stored only when it
//! changes.
//!
//! Entries that no route holds (learned, not static, not a configured
//! gateway) can be reclaimed: the writer marks the entry failed and its
//! key a tombstone (probes pass over it, lookups no longer find it), and
//! reuses the slot only after a grace period of the workers' reclamation
//! domain ([`GracePeriods`]: the router's RCU QSBR, which the FIB and the
//! hook sets use too): every online worker has passed a quiescent point
//! since, so none still holds the index it looked up before the reclaim. A route's gateway keeps its index for the table's
//! life. A reusable tombstone that no live entry's probe passes becomes a
//! free slot again. The same rules hold for both families; an IPv6
//! address is written into a slot only while it is free or a reusable
//! tombstone, so a reader that matched a slot's key reads the address that
//! key was published with.
//!
//! At most `capacity` entries live in `2 * capacity` slots (rounded up to a
//! power of two), so probes stay short and always meet a free slot.

use super::entry::{key4, key6, words6, NeighEntry, NeighFlags, NeighState, FREE, TOMBSTONE};
use super::hh::EthHeader;
use hooks::grace::GracePeriods;
use std::collections::VecDeque;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

/// The ethertype of every IPv6 neighbour's cached header.
pub const ETHERTYPE_IPV6: u16 = 0x86dd;

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
    #[error("{0} cannot be a neighbour (unspecified, loopback or multicast)")]
    NotUnicast6(Ipv6Addr),
    #[error("neighbour {0} not found")]
    NotFound6(Ipv6Addr),
    #[error("neighbour {0} is static")]
    Static6(Ipv6Addr),
    #[error("neighbour {0} is a route's gateway")]
    Gateway6(Ipv6Addr),
    #[error("neighbour {0} is not static (learned by neighbour discovery)")]
    NotStatic6(Ipv6Addr),
}

impl NeighError {
    fn not_found(a: IpAddr) -> Self {
        match a {
            IpAddr::V4(a) => NeighError::NotFound(a),
            IpAddr::V6(a) => NeighError::NotFound6(a),
        }
    }

    fn is_static(a: IpAddr) -> Self {
        match a {
            IpAddr::V4(a) => NeighError::Static(a),
            IpAddr::V6(a) => NeighError::Static6(a),
        }
    }

    fn gateway(a: IpAddr) -> Self {
        match a {
            IpAddr::V4(a) => NeighError::Gateway(a),
            IpAddr::V6(a) => NeighError::Gateway6(a),
        }
    }

    fn not_static(a: IpAddr) -> Self {
        match a {
            IpAddr::V4(a) => NeighError::NotStatic(a),
            IpAddr::V6(a) => NeighError::NotStatic6(a),
        }
    }
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

    /// Most neighbours the table can hold (both families together).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Neighbours in the table, both families.
    pub fn len(&self) -> usize {
        self.len.load(Relaxed)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The index of `addr`'s entry, if present. Lock-free.
    #[inline]
    pub fn lookup(&self, addr: Ipv4Addr) -> Option<usize> {
        let key = key4(addr);
        if key == FREE {
            return None;
        }
        let mask = self.entries.len() - 1;
        let mut i = self.home(key);
        for _ in 0..self.entries.len() {
            match self.entries[i].key() {
                k if k == key => return Some(i),
                FREE => return None,
                _ => i = (i + 1) & mask,
            }
        }
        None
    }

    /// The index of `addr`'s entry, if present. Lock-free: a slot whose key
    /// matches is compared on the whole address (two more words).
    #[inline]
    pub fn lookup6(&self, addr: Ipv6Addr) -> Option<usize> {
        let (key, words) = (key6(addr), words6(addr));
        let mask = self.entries.len() - 1;
        let mut i = self.home(key);
        for _ in 0..self.entries.len() {
            let e = &self.entries[i];
            match e.key() {
                k if k == key && e.stored6_words() == words => return Some(i),
                FREE => return None,
                _ => i = (i + 1) & mask,
            }
        }
        None
    }

    /// The index of either family's neighbour, if present. Lock-free.
    pub fn lookup_ip(&self, addr: IpAddr) -> Option<usize> {
        match addr {
            IpAddr::V4(a) => self.lookup(a),
            IpAddr::V6(a) => self.lookup6(a),
        }
    }

    /// `addr`'s entry, if present. Lock-free.
    #[inline]
    pub fn get(&self, addr: Ipv4Addr) -> Option<&NeighEntry> {
        self.lookup(addr).map(|i| &self.entries[i])
    }

    /// `addr`'s entry, if present. Lock-free.
    #[inline]
    pub fn get6(&self, addr: Ipv6Addr) -> Option<&NeighEntry> {
        self.lookup6(addr).map(|i| &self.entries[i])
    }

    /// Either family's entry, if present. Lock-free.
    pub fn get_ip(&self, addr: IpAddr) -> Option<&NeighEntry> {
        self.lookup_ip(addr).map(|i| &self.entries[i])
    }

    /// The entry at `index` (from [`lookup`](Self::lookup) or the writer).
    ///
    /// Panics if `index` is out of range.
    #[inline(always)]
    pub fn entry(&self, index: usize) -> &NeighEntry {
        &self.entries[index]
    }

    /// The IPv4 neighbours in use, with their indices (for dumps and the
    /// writer).
    pub fn iter(&self) -> impl Iterator<Item = (usize, &NeighEntry)> {
        self.iter_all().filter(|(_, e)| !e.is_ipv6())
    }

    /// The IPv6 neighbours in use, with their indices.
    pub fn iter6(&self) -> impl Iterator<Item = (usize, &NeighEntry)> {
        self.iter_all().filter(|(_, e)| e.is_ipv6())
    }

    /// The neighbours in use of both families, with their indices.
    pub fn iter_all(&self) -> impl Iterator<Item = (usize, &NeighEntry)> {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| !matches!(e.key(), FREE | TOMBSTONE))
    }

    /// Fibonacci hashing of the key's low word: the top bits of the product
    /// (an IPv4 address's home is what it was before IPv6).
    #[inline(always)]
    fn home(&self, key: u64) -> usize {
        ((key as u32).wrapping_mul(0x9e37_79b9) >> self.shift) as usize
    }
}

/// An address's key and, for IPv6, the words compared beside it.
fn key_of(addr: IpAddr) -> (u64, Option<[u64; 2]>) {
    match addr {
        IpAddr::V4(a) => (key4(a), None),
        IpAddr::V6(a) => (key6(a), Some(words6(a))),
    }
}

/// Refuse addresses that are never a neighbour.
fn check(addr: IpAddr) -> Result<(), NeighError> {
    match addr {
        IpAddr::V4(a) if a.is_unspecified() || a.is_broadcast() => Err(NeighError::Unspecified),
        IpAddr::V6(a) if a.is_unspecified() || a.is_loopback() || a.is_multicast() => {
            Err(NeighError::NotUnicast6(a))
        }
        _ => Ok(()),
    }
}

/// The header as an entry of `addr`'s family caches it: an IPv6
/// neighbour's always carries ethertype 0x86DD.
fn header_for(addr: IpAddr, hdr: &EthHeader) -> EthHeader {
    match addr {
        IpAddr::V4(_) => *hdr,
        IpAddr::V6(_) => EthHeader {
            ethertype: ETHERTYPE_IPV6,
            ..*hdr
        },
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
        self.insert_ip(IpAddr::V4(addr))
    }

    /// `addr`'s index, adding it as incomplete if absent.
    pub fn insert6(&mut self, addr: Ipv6Addr) -> Result<usize, NeighError> {
        self.insert_ip(IpAddr::V6(addr))
    }

    /// Either family: `addr`'s index, adding it as incomplete if absent.
    pub fn insert_ip(&mut self, addr: IpAddr) -> Result<usize, NeighError> {
        let (i, new) = self.slot_for(addr)?;
        if new {
            self.publish(i, addr);
        }
        Ok(i)
    }

    /// A route's gateway: [`insert`](Self::insert), and the route holds the
    /// index, so the entry is never reclaimed.
    pub fn insert_gateway(&mut self, addr: Ipv4Addr) -> Result<usize, NeighError> {
        self.insert_gateway_ip(IpAddr::V4(addr))
    }

    /// An IPv6 route's gateway (see [`insert_gateway`](Self::insert_gateway)).
    pub fn insert_gateway6(&mut self, addr: Ipv6Addr) -> Result<usize, NeighError> {
        self.insert_gateway_ip(IpAddr::V6(addr))
    }

    /// Either family's gateway.
    pub fn insert_gateway_ip(&mut self, addr: IpAddr) -> Result<usize, NeighError> {
        let i = self.insert_ip(addr)?;
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
        self.resolve_ip(IpAddr::V4(addr), hdr, now)
    }

    /// Resolution (a neighbour advertisement) of an IPv6 neighbour, as
    /// [`resolve`](Self::resolve); the header's ethertype is stored as 0x86DD.
    pub fn resolve6(
        &mut self,
        addr: Ipv6Addr,
        hdr: &EthHeader,
        now: u64,
    ) -> Result<usize, NeighError> {
        self.resolve_ip(IpAddr::V6(addr), hdr, now)
    }

    /// Either family's resolution.
    pub fn resolve_ip(
        &mut self,
        addr: IpAddr,
        hdr: &EthHeader,
        now: u64,
    ) -> Result<usize, NeighError> {
        let (i, new) = self.slot_for(addr)?;
        let e = &self.table.entries[i];
        if e.is_static() {
            return Err(NeighError::is_static(addr));
        }
        e.set_hh(&header_for(addr, hdr));
        e.confirm(now);
        e.set_state(NeighState::Reachable);
        if new {
            self.publish(i, addr);
        }
        Ok(i)
    }

    /// Learn a header without confirming reachability (an IPv6 neighbour
    /// solicitation's source link-layer address, RFC 4861 section 7.2.3):
    /// a new entry, or one whose header changes, becomes stale; an entry
    /// whose header is unchanged keeps its state, an incomplete one becomes
    /// stale. Adds `addr` if absent; static entries are left alone.
    pub fn learn_stale_ip(&mut self, addr: IpAddr, hdr: &EthHeader) -> Result<usize, NeighError> {
        let (i, new) = self.slot_for(addr)?;
        let e = &self.table.entries[i];
        if e.is_static() {
            return Err(NeighError::is_static(addr));
        }
        let changed = e.set_hh(&header_for(addr, hdr));
        if new || changed || !e.state().is_valid() {
            e.set_state(NeighState::Stale);
        }
        if new {
            self.publish(i, addr);
        }
        Ok(i)
    }

    /// A configured neighbour: reachable, never ages, replaces a learned one.
    pub fn insert_static(&mut self, addr: Ipv4Addr, hdr: &EthHeader) -> Result<usize, NeighError> {
        self.insert_static_ip(IpAddr::V4(addr), hdr)
    }

    /// A configured IPv6 neighbour (see [`insert_static`](Self::insert_static));
    /// the header's ethertype is stored as 0x86DD.
    pub fn insert_static6(&mut self, addr: Ipv6Addr, hdr: &EthHeader) -> Result<usize, NeighError> {
        self.insert_static_ip(IpAddr::V6(addr), hdr)
    }

    /// Either family's configured neighbour.
    pub fn insert_static_ip(&mut self, addr: IpAddr, hdr: &EthHeader) -> Result<usize, NeighError> {
        let (i, new) = self.slot_for(addr)?;
        let e = &self.table.entries[i];
        e.set_flags(e.flags().union(NeighFlags::STATIC));
        e.set_hh(&header_for(addr, hdr));
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
        self.remove_static_ip(IpAddr::V4(addr))
    }

    /// An IPv6 static neighbour is no longer configured (see
    /// [`remove_static`](Self::remove_static)).
    pub fn remove_static6(&mut self, addr: Ipv6Addr) -> Result<(), NeighError> {
        self.remove_static_ip(IpAddr::V6(addr))
    }

    /// Either family's static neighbour is no longer configured.
    pub fn remove_static_ip(&mut self, addr: IpAddr) -> Result<(), NeighError> {
        let i = self
            .table
            .lookup_ip(addr)
            .ok_or(NeighError::not_found(addr))?;
        let e = &self.table.entries[i];
        if !e.is_static() {
            return Err(NeighError::not_static(addr));
        }
        e.set_state(NeighState::Incomplete);
        e.set_flags(e.flags().without(NeighFlags::STATIC));
        if e.is_gateway() {
            return Ok(());
        }
        self.reclaim_ip(addr)
    }

    /// Set a learned neighbour's state (e.g. failed after unanswered probes).
    pub fn set_state(&mut self, addr: Ipv4Addr, state: NeighState) -> Result<usize, NeighError> {
        self.set_state_ip(IpAddr::V4(addr), state)
    }

    /// Set a learned IPv6 neighbour's state.
    pub fn set_state6(&mut self, addr: Ipv6Addr, state: NeighState) -> Result<usize, NeighError> {
        self.set_state_ip(IpAddr::V6(addr), state)
    }

    /// Set either family's learned neighbour's state.
    pub fn set_state_ip(&mut self, addr: IpAddr, state: NeighState) -> Result<usize, NeighError> {
        let i = self
            .table
            .lookup_ip(addr)
            .ok_or(NeighError::not_found(addr))?;
        let e = &self.table.entries[i];
        if e.is_static() {
            return Err(NeighError::is_static(addr));
        }
        e.set_state(state);
        Ok(i)
    }

    /// Age learned reachable entries (both families) not confirmed for
    /// more than `reachable_for` (same clock as `confirm`) to stale.
    /// Returns how many.
    pub fn age(&mut self, now: u64, reachable_for: u64) -> usize {
        let mut aged = 0;
        for (_, e) in self.table.iter_all() {
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
        self.reclaim_ip(IpAddr::V4(addr))
    }

    /// Remove an IPv6 neighbour's entry (see [`reclaim`](Self::reclaim)).
    pub fn reclaim6(&mut self, addr: Ipv6Addr) -> Result<(), NeighError> {
        self.reclaim_ip(IpAddr::V6(addr))
    }

    /// Remove either family's entry.
    pub fn reclaim_ip(&mut self, addr: IpAddr) -> Result<(), NeighError> {
        let i = self
            .table
            .lookup_ip(addr)
            .ok_or(NeighError::not_found(addr))?;
        let e = &self.table.entries[i];
        if e.is_static() {
            return Err(NeighError::is_static(addr));
        }
        if e.is_gateway() {
            return Err(NeighError::gateway(addr));
        }
        // Release stores: a reader that sees the tombstone or reads the state
        // after this sees failed, never the header as valid.
        e.set_state(NeighState::Failed);
        e.set_key(TOMBSTONE);
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
        let used = |x: usize| t.entries[x & mask].key() != FREE;
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
            match t.entries[x].key() {
                TOMBSTONE if self.reusable[x] && needed_from > k => free.push(x),
                TOMBSTONE => {}
                key => needed_from = needed_from.min(offset(t.home(key))),
            }
        }
        for x in free {
            self.reusable[x] = false;
            self.table.entries[x].set_key(FREE);
            self.occupied -= 1;
        }
    }

    /// `addr`'s slot and whether it is new (free or a reusable tombstone,
    /// not yet published).
    fn slot_for(&mut self, addr: IpAddr) -> Result<(usize, bool), NeighError> {
        check(addr)?;
        let t = &self.table;
        let full = NeighError::Full {
            capacity: t.capacity,
        };
        let (key, words) = key_of(addr);
        let same = |e: &NeighEntry| words.is_none_or(|w| e.stored6_words() == w);
        let mask = t.entries.len() - 1;
        let mut i = t.home(key);
        let mut reuse = None;
        for _ in 0..t.entries.len() {
            let e = &t.entries[i];
            match e.key() {
                k if k == key && same(e) => return Ok((i, false)),
                FREE => break,
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
            None if t.entries[i].key() != FREE || self.occupied + 1 >= t.entries.len() => {
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

    /// Make a filled slot visible to readers: fresh used mark and, for
    /// IPv6, the address, then the key.
    fn publish(&mut self, i: usize, addr: IpAddr) {
        let e = &self.table.entries[i];
        e.take_used();
        if let IpAddr::V6(a) = addr {
            e.set_addr6(a);
        }
        e.set_key(key_of(addr).0);
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

    // Both families in the one table.

    fn ip6(last: u16) -> Ipv6Addr {
        Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, last)
    }

    fn hdr6(last: u8) -> EthHeader {
        EthHeader {
            ethertype: ETHERTYPE_IPV6,
            ..hdr(last)
        }
    }

    /// Another address with `a`'s key: the words the key hashes, xored
    /// with the same value in each.
    fn same_key(a: Ipv6Addr) -> Ipv6Addr {
        let [hi, lo] = words6(a);
        let x = 0x0000_0001_0000_0100u64;
        let b =
            Ipv6Addr::from_bits((u128::from(hi ^ x) << 64) | u128::from(lo ^ x.rotate_right(32)));
        assert_ne!(a, b);
        assert_eq!(key6(a), key6(b));
        b
    }

    #[test]
    fn ipv6_neighbours_are_found_at_their_index_beside_ipv4() {
        let (t, mut w) = NeighTable::new(8, no_readers());
        let a = w.insert(ip(1)).unwrap();
        let b = w.insert6(ip6(1)).unwrap();
        let g = w.insert_gateway6("fe80::1".parse().unwrap()).unwrap();
        assert_eq!(w.insert6(ip6(1)), Ok(b), "idempotent");
        assert_eq!(t.len(), 3);
        assert_eq!(t.lookup(ip(1)), Some(a));
        assert_eq!(t.lookup6(ip6(1)), Some(b));
        assert_eq!(t.lookup6("fe80::1".parse().unwrap()), Some(g));
        assert_eq!(t.lookup6(ip6(2)), None);
        assert_eq!(t.lookup_ip(IpAddr::V6(ip6(1))), Some(b));
        assert_eq!(t.lookup_ip(IpAddr::V4(ip(1))), Some(a));
        let e = t.get6(ip6(1)).unwrap();
        assert_eq!(e.addr6(), ip6(1));
        assert_eq!(e.ip(), Some(IpAddr::V6(ip6(1))));
        assert!(e.is_ipv6());
        assert_eq!(e.addr(), Ipv4Addr::UNSPECIFIED);
        assert_eq!(e.state(), NeighState::Incomplete);
        assert!(t.entry(g).is_gateway());
        let v4 = t.get(ip(1)).unwrap();
        assert!(!v4.is_ipv6());
        assert_eq!(v4.addr6(), Ipv6Addr::UNSPECIFIED);
        assert_eq!(v4.ip(), Some(IpAddr::V4(ip(1))));
        // Each family's iterator, and both.
        assert_eq!(t.iter().map(|(i, _)| i).collect::<Vec<_>>(), vec![a]);
        let mut six: Vec<usize> = t.iter6().map(|(i, _)| i).collect();
        six.sort();
        let mut want = vec![b, g];
        want.sort();
        assert_eq!(six, want);
        assert_eq!(t.iter_all().count(), 3);
    }

    #[test]
    fn an_ipv4_address_equal_to_an_ipv6_hash_is_another_neighbour() {
        let (t, mut w) = NeighTable::new(8, no_readers());
        let six = w.insert6(ip6(7)).unwrap();
        // The IPv4 address whose key is the IPv6 key's low word.
        let four = Ipv4Addr::from(key6(ip6(7)) as u32);
        assert_eq!(t.lookup(four), None);
        let i = w.insert(four).unwrap();
        assert_ne!(i, six);
        assert_eq!(t.lookup(four), Some(i));
        assert_eq!(t.lookup6(ip6(7)), Some(six));
    }

    #[test]
    fn two_ipv6_addresses_with_one_key_are_told_apart_by_the_address() {
        let (t, mut w) = NeighTable::new(8, no_readers());
        let a = ip6(0x42);
        let b = same_key(a);
        let i = w.resolve6(a, &hdr6(1), 1).unwrap();
        assert_eq!(t.lookup6(b), None, "same key, another address");
        let j = w.resolve6(b, &hdr6(2), 1).unwrap();
        assert_ne!(i, j);
        assert_eq!(t.lookup6(a), Some(i));
        assert_eq!(t.lookup6(b), Some(j));
        assert_eq!(t.entry(j).hh().header(), hdr6(2));
        // Reclaiming the first leaves the second found past its tombstone.
        w.reclaim6(a).unwrap();
        assert_eq!(t.lookup6(a), None);
        assert_eq!(t.lookup6(b), Some(j));
    }

    #[test]
    fn an_ipv6_header_carries_ethertype_86dd() {
        let (t, mut w) = NeighTable::new(4, no_readers());
        // Given an IPv4 header by mistake, the entry still says IPv6.
        let i = w.insert_static6(ip6(1), &hdr(1)).unwrap();
        assert_eq!(t.entry(i).hh().header(), hdr6(1));
        let j = w.resolve6(ip6(2), &hdr(2), 5).unwrap();
        assert_eq!(t.entry(j).hh().header().ethertype, 0x86dd);
        let mut f = [0u8; 14];
        assert!(t.entry(j).hh_output(&mut f));
        assert_eq!(&f[12..], &[0x86, 0xdd]);
        // IPv4 entries keep the header they are given.
        let k = w.resolve(ip(1), &hdr(1), 5).unwrap();
        assert_eq!(t.entry(k).hh().header(), hdr(1));
    }

    #[test]
    fn ipv6_addresses_that_are_never_neighbours_are_refused() {
        let (t, mut w) = NeighTable::new(4, no_readers());
        for a in ["::", "::1", "ff02::1", "ff02::1:ff00:1"] {
            let a: Ipv6Addr = a.parse().unwrap();
            assert_eq!(w.insert6(a), Err(NeighError::NotUnicast6(a)));
            assert_eq!(
                w.insert_static6(a, &hdr6(1)),
                Err(NeighError::NotUnicast6(a))
            );
            assert_eq!(w.insert_gateway6(a), Err(NeighError::NotUnicast6(a)));
        }
        assert!(t.is_empty());
        assert_eq!(t.lookup6(Ipv6Addr::UNSPECIFIED), None);
    }

    #[test]
    fn ipv6_static_gateway_and_missing_errors_name_the_address() {
        let (t, mut w) = NeighTable::new(4, no_readers());
        let (s, g, l) = (ip6(1), ip6(2), ip6(3));
        w.insert_static6(s, &hdr6(1)).unwrap();
        w.insert_gateway6(g).unwrap();
        w.resolve6(l, &hdr6(3), 1).unwrap();
        assert_eq!(w.resolve6(s, &hdr6(9), 2), Err(NeighError::Static6(s)));
        assert_eq!(
            w.set_state6(s, NeighState::Failed),
            Err(NeighError::Static6(s))
        );
        assert_eq!(w.reclaim6(s), Err(NeighError::Static6(s)));
        assert_eq!(w.reclaim6(g), Err(NeighError::Gateway6(g)));
        assert_eq!(w.remove_static6(l), Err(NeighError::NotStatic6(l)));
        assert_eq!(w.reclaim6(ip6(9)), Err(NeighError::NotFound6(ip6(9))));
        assert_eq!(
            w.set_state6(ip6(9), NeighState::Stale),
            Err(NeighError::NotFound6(ip6(9)))
        );
        assert_eq!(
            NeighError::Static6(s).to_string(),
            "neighbour 2001:db8:1::1 is static"
        );
        // A static gateway no longer configured stays, incomplete.
        w.insert_static6(g, &hdr6(2)).unwrap();
        w.remove_static6(g).unwrap();
        assert_eq!(t.get6(g).unwrap().state(), NeighState::Incomplete);
        assert!(!t.get6(g).unwrap().is_static());
        // A static neighbour that is not a gateway goes.
        w.remove_static6(s).unwrap();
        assert_eq!(t.lookup6(s), None);
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn learning_from_a_solicitation_makes_stale_not_reachable() {
        let (t, mut w) = NeighTable::new(4, no_readers());
        let a = IpAddr::V6(ip6(1));
        let i = w.learn_stale_ip(a, &hdr6(1)).unwrap();
        assert_eq!(t.entry(i).state(), NeighState::Stale);
        assert_eq!(t.entry(i).hh().header(), hdr6(1));
        // Reachable and the same header: stays reachable.
        w.resolve6(ip6(1), &hdr6(1), 5).unwrap();
        assert_eq!(w.learn_stale_ip(a, &hdr6(1)), Ok(i));
        assert_eq!(t.entry(i).state(), NeighState::Reachable);
        // Another MAC: stale with the new header.
        w.learn_stale_ip(a, &hdr6(2)).unwrap();
        assert_eq!(t.entry(i).state(), NeighState::Stale);
        assert_eq!(t.entry(i).hh().header(), hdr6(2));
        // Incomplete (a gateway being resolved): stale with the header.
        let g = w.insert_gateway6(ip6(2)).unwrap();
        w.learn_stale_ip(IpAddr::V6(ip6(2)), &hdr6(3)).unwrap();
        assert_eq!(t.entry(g).state(), NeighState::Stale);
        // Static: refused.
        w.insert_static6(ip6(3), &hdr6(4)).unwrap();
        assert_eq!(
            w.learn_stale_ip(IpAddr::V6(ip6(3)), &hdr6(5)),
            Err(NeighError::Static6(ip6(3)))
        );
    }

    #[test]
    fn aging_covers_both_families() {
        let (t, mut w) = NeighTable::new(4, no_readers());
        let a = w.resolve(ip(1), &hdr(1), 100).unwrap();
        let b = w.resolve6(ip6(1), &hdr6(1), 100).unwrap();
        w.insert_static6(ip6(2), &hdr6(2)).unwrap();
        assert_eq!(w.age(200, 50), 2);
        assert_eq!(t.entry(a).state(), NeighState::Stale);
        assert_eq!(t.entry(b).state(), NeighState::Stale);
        assert_eq!(t.get6(ip6(2)).unwrap().state(), NeighState::Reachable);
    }

    #[test]
    fn the_families_share_the_capacity() {
        let (t, mut w) = NeighTable::new(3, no_readers());
        w.insert(ip(1)).unwrap();
        w.insert6(ip6(1)).unwrap();
        w.insert6(ip6(2)).unwrap();
        assert_eq!(w.insert6(ip6(3)), Err(NeighError::Full { capacity: 3 }));
        assert_eq!(w.insert(ip(2)), Err(NeighError::Full { capacity: 3 }));
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn a_slot_changes_family_only_after_a_grace_period_and_starts_afresh() {
        let grace = Arc::new(Epochs::default());
        let (t, mut w) = NeighTable::new(1, grace.clone());
        let mut worker = grace.reader();
        let i = w.resolve6(ip6(1), &hdr6(1), 1).unwrap();
        w.reclaim6(ip6(1)).unwrap();
        assert_eq!(t.lookup6(ip6(1)), None);
        assert_eq!(t.entry(i).state(), NeighState::Failed);
        assert!(t.entry(i).hh_snapshot().is_none());
        assert_eq!(w.collect(), 0, "the grace period has just started");
        // Capacity 1 in 2 slots: the tombstone is not free before the
        // worker was quiescent, so nothing else fits.
        assert_eq!(w.insert(ip(2)), Err(NeighError::Full { capacity: 1 }));
        worker.quiescent();
        assert_eq!(w.collect(), 1);
        // Either slot now takes either family, with nothing of before.
        let k = w.insert(ip(3)).unwrap();
        assert_eq!(t.entry(k).state(), NeighState::Incomplete);
        assert_eq!(t.entry(k).flags(), NeighFlags::NONE);
        assert!(!t.entry(k).is_ipv6());
        w.reclaim(ip(3)).unwrap();
        worker.quiescent();
        w.collect();
        worker.quiescent();
        w.collect();
        let m = w.insert6(ip6(4)).unwrap();
        assert_eq!(t.entry(m).addr6(), ip6(4));
        assert!(t.entry(m).hh_snapshot().is_none(), "not an old header");
        assert_eq!(t.lookup(ip(3)), None);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn churn_of_both_families_keeps_every_live_address_found() {
        let cap = 64;
        let (t, mut w) = NeighTable::new(cap, no_readers());
        let mut live: Vec<IpAddr> = Vec::new();
        let mut rng = fastrand::Rng::with_seed(0x0bad_cafe);
        for round in 0..20_000u32 {
            let x = rng.u32(..);
            let a = if x & 1 == 0 {
                IpAddr::V4(Ipv4Addr::from(0x0a00_0000 | (x >> 16)))
            } else {
                // Few distinct keys collide often: half are another's twin.
                let base = ip6((x >> 16) as u16 & 0xff);
                IpAddr::V6(if x & 2 == 0 { base } else { same_key(base) })
            };
            if live.len() == cap || (x >> 20).is_multiple_of(3) && !live.is_empty() {
                let k = live.swap_remove((x >> 8) as usize % live.len());
                w.reclaim_ip(k).unwrap();
            } else if !live.contains(&a) {
                w.collect();
                w.insert_ip(a).unwrap();
                live.push(a);
            }
            if round % 500 == 0 {
                w.collect();
                for &k in &live {
                    let i = t.lookup_ip(k).expect("live address lost");
                    assert_eq!(t.entry(i).ip(), Some(k));
                }
                assert_eq!(t.len(), live.len());
                assert_eq!(t.iter_all().count(), live.len());
                let v6 = live.iter().filter(|a| a.is_ipv6()).count();
                assert_eq!(t.iter6().count(), v6);
                assert_eq!(t.iter().count(), live.len() - v6);
                assert!(w.occupied <= live.len() + cap / 2);
            }
        }
    }

    #[test]
    fn a_reader_never_sees_another_family_or_address_through_a_reused_slot() {
        // As above, with IPv4 and IPv6 neighbours taking each other's slots:
        // whatever index a lookup gives, its header is that address's until
        // the reader's next quiescent point.
        let grace = Arc::new(Epochs::default());
        let (t, mut w) = NeighTable::new(2, grace.clone());
        let mut reader = grace.reader();
        let stop = std::sync::atomic::AtomicBool::new(false);
        let addr = |n: u32| -> IpAddr {
            let a = 1 + (n % 6) as u8;
            if a.is_multiple_of(2) {
                IpAddr::V6(ip6(u16::from(a)))
            } else {
                IpAddr::V4(ip(a))
            }
        };
        std::thread::scope(|s| {
            s.spawn(|| {
                for n in 0..20_000u32 {
                    let a = addr(n);
                    let last = 1 + (n % 6) as u8;
                    let _ = w.resolve_ip(a, &hdr(last), u64::from(n));
                    let _ = w.reclaim_ip(addr(n + 3));
                    w.collect();
                }
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            });
            s.spawn(|| {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    for n in 0..6 {
                        let a = addr(n);
                        if let Some(i) = t.lookup_ip(a) {
                            for _ in 0..4 {
                                if let Some(words) = t.entry(i).hh_snapshot() {
                                    let mut f = [0u8; 14];
                                    crate::neigh::store_header(&mut f, words);
                                    assert_eq!(f[5], 1 + n as u8, "header of another address");
                                    let v6 = [f[12], f[13]] == [0x86, 0xdd];
                                    assert_eq!(v6, a.is_ipv6(), "header of another family");
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
