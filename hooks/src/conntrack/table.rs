//! The slot array under [`ConnTable`](super::ConnTable): open addressing
//! with linear probing in Robin Hood order, backward-shift deletion, and a
//! bounded probe length. Knows keys, flags, expiry times and where a TCP
//! window is kept, not protocols. Generic over the key ([`SlotKey`]): the
//! IPv4 table's [`Key`] makes 64-byte slots, the IPv6 table's [`Key6`]
//! 128-byte ones; each table is its own monomorphised copy of the code.
//!
//! Invariant (Robin Hood): walking a cluster, entries appear in the order of
//! their home slot, so an entry's distance from home (`dist`) is never more
//! than one above its predecessor's. A lookup can therefore stop at the first
//! empty slot *or* at the first entry closer to its home than the probe is to
//! the key's home: the key would have been placed before it. Deleting shifts
//! the following entries of the cluster back by one (no tombstones), which
//! keeps the invariant and only ever shortens distances.

use super::tcp::Window;

/// Longest distance from its home slot an entry may sit at: a lookup reads
/// at most this many slots. An insertion that would push an entry further
/// is refused (the table counts it as full).
pub(crate) const MAX_PROBE: u8 = 32;
/// Most entries an insertion may shift to make room.
const MAX_SHIFT: usize = 128;

/// Entry flag: the slot holds an entry.
pub(crate) const USED: u8 = 0x01;
/// Entry flag: the originator is side `b` of the key (else side `a`).
pub(crate) const ORIG_B: u8 = 0x02;
/// Entry flag: a packet in the reply direction has been seen.
pub(crate) const REPLIED: u8 = 0x04;
/// Entry flag (TCP): a FIN was seen from side `a`.
pub(crate) const FIN_A: u8 = 0x08;
/// Entry flag (TCP): a FIN was seen from side `b`.
pub(crate) const FIN_B: u8 = 0x10;
/// Entry flag (TCP): the handshake completed, the originator acknowledged
/// the reply's SYN (Linux's `IPS_ASSURED` of a TCP connection).
pub(crate) const ASSURED: u8 = 0x20;

/// What the slot array needs of a key: equality, its protocol and its home
/// slot under the table's random hash key (drawn per table).
pub(crate) trait SlotKey: Copy + Default + PartialEq + std::fmt::Debug {
    /// The table's random hash key.
    type Hash: Copy + PartialEq + std::fmt::Debug;
    /// The protocol number of ICMP echo entries in this family (1 for
    /// IPv4's ICMP, 58 for ICMPv6).
    const ICMP: u8;
    /// Names the family in log lines ("" for IPv4, " IPv6").
    const FAMILY: &'static str;
    /// A fresh random hash key.
    fn random_hash() -> Self::Hash;
    /// The home slot under `hash`, `bits` bits.
    fn home(&self, bits: u32, hash: &Self::Hash) -> usize;
    /// The protocol.
    fn proto(&self) -> u8;
}

/// A flow key with its two endpoints in canonical order: side `a` is the
/// lower `(address, port)` pair, so both directions of a flow have the same
/// key. Each side is `address << 16 | port` (48 bits); side `a` carries the
/// protocol above it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Key {
    /// Side `a`, protocol in bits 48..56.
    pub a: u64,
    /// Side `b`.
    pub b: u64,
}

impl Key {
    /// The key of a packet from `(src, sport)` to `(dst, dport)`, and whether
    /// the sender is side `b`.
    #[inline(always)]
    pub fn new(proto: u8, src: u32, sport: u16, dst: u32, dport: u16) -> (Key, bool) {
        let x = u64::from(src) << 16 | u64::from(sport);
        let y = u64::from(dst) << 16 | u64::from(dport);
        let from_b = x > y;
        let (lo, hi) = if from_b { (y, x) } else { (x, y) };
        let key = Key {
            a: lo | u64::from(proto) << 48,
            b: hi,
        };
        (key, from_b)
    }

    /// The home slot under `hash`, `bits` bits. First vector
    /// multiply-shift (Dietzfelbinger; Thorup, "High speed hashing for
    /// integers and strings"): `(m_a * a + m_b * b + c) mod 2^128` with the
    /// key's two 64-bit halves and 128-bit random `m_a`, `m_b`, `c`; its
    /// top 64 bits are strongly universal (128 >= 64 + 64 - 1): for any
    /// two keys, a uniform pair of words. Then those bits through a fixed
    /// bijection (MurmurHash3's 64-bit finaliser), whose top `bits` bits
    /// are the slot: any two keys still share a home with chance exactly
    /// 2^-bits, whichever keys they are. The finaliser is for many keys at
    /// once: multiply-shift alone maps an arithmetic progression (a scan's
    /// ports or addresses) to a progression of homes, which under some
    /// multipliers bunches into clusters hundreds of slots long (1-3 % of
    /// hash keys, for 32,768 flows in 65,536 slots); after it, such flows
    /// spread as well as under SipHash, measured (strong universality
    /// speaks of pairs only). Six multiplies in all.
    #[inline(always)]
    fn home_of(&self, bits: u32, hash: &HashKey) -> usize {
        (fmix64(self.universal(hash)) >> (64 - bits)) as usize
    }

    /// The multiply-shift step of [`Key::home`]: the top 64 bits of
    /// `(m_a * a + m_b * b + c) mod 2^128`.
    #[inline(always)]
    fn universal(&self, hash: &HashKey) -> u64 {
        let v = hash
            .m_a
            .wrapping_mul(u128::from(self.a))
            .wrapping_add(hash.m_b.wrapping_mul(u128::from(self.b)))
            .wrapping_add(hash.c);
        (v >> 64) as u64
    }
}

impl SlotKey for Key {
    type Hash = HashKey;
    const ICMP: u8 = 1;
    const FAMILY: &'static str = "";

    fn random_hash() -> HashKey {
        HashKey::random()
    }

    #[inline(always)]
    fn home(&self, bits: u32, hash: &HashKey) -> usize {
        self.home_of(bits, hash)
    }

    #[inline(always)]
    fn proto(&self) -> u8 {
        (self.a >> 48) as u8
    }
}

/// An IPv6 flow key, as [`Key`] is IPv4's: the two endpoints `(address,
/// port)` in canonical order (side `a` the lower pair), so both directions
/// of a flow have the same key; the protocol and both ports in `ports`
/// (`proto << 32 | port_a << 16 | port_b`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Key6 {
    /// Side `a`'s address (the wire's bytes, big-endian).
    pub a: u128,
    /// Side `b`'s address.
    pub b: u128,
    /// Protocol in bits 32..40, side `a`'s port in 16..32, `b`'s in 0..16.
    pub ports: u64,
}

impl Key6 {
    /// The key of a packet from `(src, sport)` to `(dst, dport)`, and
    /// whether the sender is side `b`.
    #[inline(always)]
    pub fn new(proto: u8, src: &[u8; 16], sport: u16, dst: &[u8; 16], dport: u16) -> (Key6, bool) {
        let (x, y) = (u128::from_be_bytes(*src), u128::from_be_bytes(*dst));
        // `(x, sport) > (y, dport)`, written out: the tuples' ordering went
        // through an `Ordering` per field (5 instructions a packet more).
        let from_b = x > y || (x == y && sport > dport);
        let (a, b) = if from_b { (y, x) } else { (x, y) };
        let (pa, pb) = if from_b {
            (dport, sport)
        } else {
            (sport, dport)
        };
        let key = Key6 {
            a,
            b,
            ports: u64::from(proto) << 32 | u64::from(pa) << 16 | u64::from(pb),
        };
        (key, from_b)
    }

    /// The multiply-shift step of the home slot, as [`Key::universal`]
    /// over the key's five 64-bit words: the top 64 bits of
    /// `(sum m_i * w_i + c) mod 2^128`, strongly universal likewise.
    #[inline(always)]
    fn universal(&self, hash: &HashKey6) -> u64 {
        let w = [
            (self.a >> 64) as u64,
            self.a as u64,
            (self.b >> 64) as u64,
            self.b as u64,
            self.ports,
        ];
        let v = w.iter().zip(&hash.m).fold(hash.c, |acc, (&w, m)| {
            acc.wrapping_add(m.wrapping_mul(u128::from(w)))
        });
        (v >> 64) as u64
    }
}

impl SlotKey for Key6 {
    type Hash = HashKey6;
    const ICMP: u8 = 58;
    const FAMILY: &'static str = " IPv6";

    fn random_hash() -> HashKey6 {
        HashKey6::random()
    }

    /// As [`Key`]'s: multiply-shift, then MurmurHash3's finaliser.
    #[inline(always)]
    fn home(&self, bits: u32, hash: &HashKey6) -> usize {
        (fmix64(self.universal(hash)) >> (64 - bits)) as usize
    }

    #[inline(always)]
    fn proto(&self) -> u8 {
        (self.ports >> 32) as u8
    }
}

/// MurmurHash3's 64-bit finaliser: a bijection whose every output bit
/// depends on every input bit.
#[inline(always)]
fn fmix64(mut u: u64) -> u64 {
    u ^= u >> 33;
    u = u.wrapping_mul(0xff51_afd7_ed55_8ccd);
    u ^= u >> 33;
    u = u.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    u ^ u >> 33
}

/// The random key of one table's hash ([`Key::home`]). Drawn per table
/// from the operating system's randomness (through std's `RandomState`),
/// so that which flows share a home slot cannot be worked out from the
/// code or from another table: someone who can choose the tuples of many
/// flows (a scan, a spoofed flood the rules accept) cannot pick two that
/// share a home more often than any two flows do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HashKey {
    m_a: u128,
    m_b: u128,
    c: u128,
}

impl HashKey {
    /// A fresh key: 384 bits of SipHash output under a new `RandomState`
    /// (std draws its keys from the OS once per thread, and each new state
    /// takes the next ones of a counter, so no two states hash alike).
    pub fn random() -> HashKey {
        use std::hash::{BuildHasher, RandomState};
        let state = RandomState::new();
        let word = |i: u64| {
            u128::from(state.hash_one(2 * i)) << 64 | u128::from(state.hash_one(2 * i + 1))
        };
        HashKey {
            m_a: word(0),
            m_b: word(1),
            c: word(2),
        }
    }
}

/// The random key of one IPv6 table's hash ([`Key6`]'s home slot): as
/// [`HashKey`], a 128-bit multiplier per word of the key and an offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct HashKey6 {
    m: [u128; 5],
    c: u128,
}

impl HashKey6 {
    /// A fresh key, drawn as [`HashKey::random`] draws its words.
    pub fn random() -> HashKey6 {
        use std::hash::{BuildHasher, RandomState};
        let state = RandomState::new();
        let word = |i: u64| {
            u128::from(state.hash_one(2 * i)) << 64 | u128::from(state.hash_one(2 * i + 1))
        };
        HashKey6 {
            m: [word(0), word(1), word(2), word(3), word(4)],
            c: word(5),
        }
    }
}

/// One slot: a cache line (64 bytes, aligned) with an IPv4 key, two with
/// an IPv6 key. What a probe reads (key, expiry, flags, distance) comes
/// first, so that it is all in the first line for either family (an IPv6
/// probe that read the flags and distance from the second line missed
/// the cache twice per slot on a table larger than the cache). The rest
/// is the TCP sequence window, which every TCP packet reads and moves: in
/// the entry, it comes with the line (or the pair) the probe reads anyway.
#[repr(C, align(64))]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Entry<K> {
    /// The key.
    key: K,
    /// The entry is dead from this time on (`now_ns >= expires_ns`).
    pub expires_ns: u64,
    /// [`USED`], [`ORIG_B`], [`REPLIED`], [`FIN_A`], [`FIN_B`], [`ASSURED`].
    pub flags: u8,
    /// Distance from the home slot (below [`MAX_PROBE`]).
    dist: u8,
    /// TCP: both sides' sequence windows (unused by other protocols).
    pub win: Window,
}

const _: () = assert!(std::mem::size_of::<Entry<Key>>() == 64);
const _: () = assert!(std::mem::size_of::<Entry<Key6>>() == 128);
// What a probe reads, in the first cache line (the key is first).
const _: () = assert!(std::mem::offset_of!(Entry<Key6>, dist) < 64);

impl<K: SlotKey> Entry<K> {
    #[inline(always)]
    fn used(&self) -> bool {
        self.flags & USED != 0
    }

    #[inline(always)]
    fn is(&self, k: &K) -> bool {
        self.key == *k
    }

    /// The entry's protocol.
    #[inline(always)]
    pub fn proto(&self) -> u8 {
        self.key.proto()
    }
}

/// Where a probe for a key ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    /// The key's live entry is in this slot.
    Found(usize),
    /// The key is absent; where it would be inserted.
    Vacant(Vacancy),
    /// The key is absent and cannot be inserted: its probe sequence is
    /// [`MAX_PROBE`] long.
    Exhausted,
}

/// Where an absent key goes: `slot`, `dist` slots from its home.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Vacancy {
    pub slot: usize,
    pub dist: u8,
}

/// Why an insertion was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NoRoom {
    /// Making room would move an entry [`MAX_PROBE`] or more slots from its
    /// home, or shift more than [`MAX_SHIFT`] entries.
    Probe,
}

/// The slot array: a power of two of slots, allocated once.
#[derive(Clone)]
pub(crate) struct Slots<K: SlotKey> {
    slots: Box<[Entry<K>]>,
    mask: usize,
    bits: u32,
    /// This table's hash key.
    hash: K::Hash,
    /// Slots holding an entry, live or expired and not yet reclaimed.
    len: usize,
    /// Next slot [`Slots::sweep`] looks at.
    cursor: usize,
    /// Expired entries reclaimed so far.
    reclaimed: u64,
}

/// Tables compare by what they hold (not by their hash keys).
#[cfg(test)]
impl<K: SlotKey> PartialEq for Slots<K> {
    fn eq(&self, o: &Slots<K>) -> bool {
        (
            self.slots.as_ref(),
            self.mask,
            self.len,
            self.cursor,
            self.reclaimed,
        ) == (o.slots.as_ref(), o.mask, o.len, o.cursor, o.reclaimed)
    }
}

#[cfg(test)]
impl<K: SlotKey> Eq for Slots<K> {}

impl<K: SlotKey> std::fmt::Debug for Slots<K> {
    /// Sizes only: the array can hold millions of slots.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Slots")
            .field("slots", &self.slots.len())
            .field("len", &self.len)
            .field("cursor", &self.cursor)
            .field("reclaimed", &self.reclaimed)
            .finish()
    }
}

impl<K: SlotKey> Slots<K> {
    /// `n` slots, rounded up to a power of two (at least 2), hashed under
    /// a fresh random key.
    pub fn new(n: usize) -> Slots<K> {
        Slots::with_key(n, K::random_hash())
    }

    /// [`Slots::new`] hashed under `hash`.
    pub fn with_key(n: usize, hash: K::Hash) -> Slots<K> {
        let n = n.max(2).next_power_of_two();
        Slots {
            slots: vec![Entry::default(); n].into_boxed_slice(),
            mask: n - 1,
            bits: n.trailing_zeros(),
            hash,
            len: 0,
            cursor: 0,
            reclaimed: 0,
        }
    }

    /// Number of slots.
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// Expired entries reclaimed so far (by probes, insertions, sweeps).
    pub fn reclaimed(&self) -> u64 {
        self.reclaimed
    }

    /// Slots holding an entry (expired ones not yet reclaimed included).
    pub fn len(&self) -> usize {
        self.len
    }

    /// The entry in slot `i` (from [`Probe::Found`]), to read.
    #[inline(always)]
    pub fn get(&self, i: usize) -> &Entry<K> {
        &self.slots[i & self.mask]
    }

    /// The entry in slot `i` (from [`Probe::Found`]), to change.
    #[inline(always)]
    pub fn get_mut(&mut self, i: usize) -> &mut Entry<K> {
        &mut self.slots[i & self.mask]
    }

    /// Restart the timer of the entry in slot `i`: it expires at
    /// `expires_ns`, which must not be earlier than now (the entry's flags
    /// are unchanged, so its timeout is, and time only goes forward).
    #[inline(always)]
    pub fn set_expiry(&mut self, i: usize, expires_ns: u64) {
        let e = &mut self.slots[i & self.mask];
        debug_assert!(expires_ns >= e.expires_ns || !e.used());
        e.expires_ns = expires_ns;
    }

    /// The TCP window of the entry in slot `i`, to move in place.
    #[inline(always)]
    pub fn window_mut(&mut self, i: usize) -> &mut Window {
        &mut self.slots[i & self.mask].win
    }

    /// Write `e` to slot `i`.
    #[inline(always)]
    fn set(&mut self, i: usize, e: Entry<K>) {
        *self.get_mut(i) = e;
    }

    /// `key`'s home slot.
    #[inline(always)]
    pub fn home(&self, key: &K) -> usize {
        key.home(self.bits, &self.hash)
    }

    /// Read slot `home` (from [`Slots::home`]) so that its cache line (and
    /// its page's TLB entry) is on its way before a probe needs it. Returns
    /// a byte of the slot; the caller folds these into one value it keeps
    /// (see [`ConnTable::lookup_burst`](super::ConnTable::lookup_burst)),
    /// so that the loads are not optimised away and do not depend on each
    /// other.
    #[inline(always)]
    pub fn touch(&self, home: usize) -> u8 {
        self.slots[home & self.mask].flags
    }

    /// Whether slot `i` holds `key`'s entry, live at `now_ns`. Keys are
    /// unique in the table, so a yes means the slot is the one a probe
    /// would find (without the reclaiming a probe does on the way).
    #[inline(always)]
    pub fn holds(&self, i: usize, key: &K, now_ns: u64) -> bool {
        match self.slots.get(i) {
            Some(e) => e.used() && e.is(key) && now_ns < e.expires_ns,
            None => false,
        }
    }

    /// Look `key` up. Expired entries met on the way are reclaimed, the
    /// key's own included: an expired entry is never `Found`. (The table
    /// probes from a home slot it has made already: [`Slots::probe_from`].)
    #[cfg(test)]
    pub fn probe(&mut self, key: &K, now_ns: u64) -> Probe {
        self.probe_from(key, key.home(self.bits, &self.hash), now_ns)
    }

    /// [`Slots::probe`] with `key`'s home slot (from [`Slots::home`])
    /// computed already.
    #[inline]
    pub fn probe_from(&mut self, key: &K, home: usize, now_ns: u64) -> Probe {
        let mut i = home & self.mask;
        let mut dist = 0u8;
        loop {
            let e = &self.slots[i];
            if !e.used() {
                return Probe::Vacant(Vacancy { slot: i, dist });
            }
            if now_ns >= e.expires_ns {
                // Shifts the rest of the cluster back one: look at slot i
                // again, at the same distance.
                self.reclaim(i);
                continue;
            }
            if e.dist < dist {
                return Probe::Vacant(Vacancy { slot: i, dist });
            }
            if e.is(key) {
                return Probe::Found(i);
            }
            i = (i + 1) & self.mask;
            dist += 1;
            if dist >= MAX_PROBE {
                return Probe::Exhausted;
            }
        }
    }

    /// Look `key` up without changing anything; expired entries are skipped.
    #[inline]
    pub fn find(&self, key: &K, now_ns: u64) -> Option<&Entry<K>> {
        let mut i = key.home(self.bits, &self.hash);
        for dist in 0..MAX_PROBE {
            let e = &self.slots[i];
            if !e.used() || e.dist < dist {
                return None;
            }
            if e.is(key) {
                return (now_ns < e.expires_ns).then_some(e);
            }
            i = (i + 1) & self.mask;
        }
        None
    }

    /// Insert `key` where [`Slots::probe`] said it is vacant (nothing may
    /// have changed in between), shifting the rest of the cluster forward
    /// by one. Expired entries met while looking for the end of the cluster
    /// are reclaimed first. Returns the slot.
    pub fn insert_at(
        &mut self,
        at: Vacancy,
        key: &K,
        (flags, win): (u8, Window),
        expires_ns: u64,
        now_ns: u64,
    ) -> Result<usize, NoRoom> {
        let Vacancy { slot, dist } = at;
        if self.len >= self.slots.len() {
            return Err(NoRoom::Probe);
        }
        // Find the end of the cluster; every entry on the way moves one
        // slot further from its home.
        let mut end = slot;
        let mut shifted = 0;
        loop {
            let e = &self.slots[end];
            if !e.used() {
                break;
            }
            if now_ns >= e.expires_ns {
                // Reclaiming shifts only slots from `end` on: `slot` and the
                // entries before `end` stay put.
                self.reclaim(end);
                continue;
            }
            if e.dist + 1 >= MAX_PROBE || shifted >= MAX_SHIFT {
                return Err(NoRoom::Probe);
            }
            shifted += 1;
            end = (end + 1) & self.mask;
        }
        while end != slot {
            let prev = end.wrapping_sub(1) & self.mask;
            let mut e = self.slots[prev];
            e.dist += 1;
            self.set(end, e);
            end = prev;
        }
        self.set(
            slot,
            Entry {
                key: *key,
                flags: flags | USED,
                dist,
                expires_ns,
                win,
            },
        );
        self.len += 1;
        Ok(slot)
    }

    /// Remove the expired entry in slot `i`, counting it.
    #[cold]
    #[inline(never)]
    fn reclaim(&mut self, i: usize) {
        self.remove_at(i);
        self.reclaimed += 1;
    }

    /// Empty slot `i` and shift the following entries of its cluster back
    /// by one (backward-shift deletion).
    pub fn remove_at(&mut self, mut i: usize) {
        i &= self.mask;
        if !self.slots[i].used() {
            return;
        }
        loop {
            let next = (i + 1) & self.mask;
            let e = self.slots[next];
            if !e.used() || e.dist == 0 {
                self.set(i, Entry::default());
                break;
            }
            self.set(
                i,
                Entry {
                    dist: e.dist - 1,
                    ..e
                },
            );
            i = next;
        }
        self.len -= 1;
    }

    /// Reclaim expired entries from where the last sweep stopped (wrapping
    /// around), for at most `max_slots` steps: a step moves past a slot or
    /// reclaims an entry. Returns how many were reclaimed.
    pub fn sweep(&mut self, now_ns: u64, max_slots: usize) -> usize {
        let mut reclaimed = 0;
        let mut i = self.cursor;
        for _ in 0..max_slots {
            if self.len == 0 {
                break;
            }
            let e = &self.slots[i];
            if e.used() && now_ns >= e.expires_ns {
                // The entry shifted into slot i is looked at next.
                self.reclaim(i);
                reclaimed += 1;
            } else {
                i = (i + 1) & self.mask;
            }
        }
        self.cursor = i;
        reclaimed
    }

    /// Entries live at `now_ns` (reads every slot).
    pub fn count_live(&self, now_ns: u64) -> usize {
        self.slots
            .iter()
            .filter(|e| e.used() && now_ns < e.expires_ns)
            .count()
    }

    /// Check the table's invariants, reading every slot (tests and fuzzing,
    /// never per packet): each entry sits at its home plus its distance,
    /// below [`MAX_PROBE`], in Robin Hood order, is the only one of its key
    /// and is found by a lookup of its key; the count of entries is right.
    pub fn audit(&self) -> Result<(), String> {
        let mut n = 0;
        for (i, e) in self.slots.iter().enumerate() {
            if !e.used() {
                continue;
            }
            n += 1;
            let key = e.key;
            let home = key.home(self.bits, &self.hash);
            if (home + usize::from(e.dist)) & self.mask != i || e.dist >= MAX_PROBE {
                return Err(format!("slot {i}: dist {} from home {home}", e.dist));
            }
            let prev = &self.slots[i.wrapping_sub(1) & self.mask];
            if e.dist > 0 && (!prev.used() || prev.dist + 1 < e.dist) {
                return Err(format!("slot {i}: out of Robin Hood order"));
            }
            if self.find_slot(&key) != Some(i) {
                return Err(format!("slot {i}: its key is not found there"));
            }
        }
        match n == self.len {
            true => Ok(()),
            false => Err(format!("{n} entries, counted {}", self.len)),
        }
    }

    /// The slot holding `key`, live or not (for [`Slots::audit`]).
    fn find_slot(&self, key: &K) -> Option<usize> {
        let mut i = key.home(self.bits, &self.hash);
        for dist in 0..MAX_PROBE {
            let e = &self.slots[i];
            if !e.used() || e.dist < dist {
                return None;
            }
            if e.is(key) {
                return Some(i);
            }
            i = (i + 1) & self.mask;
        }
        None
    }

    /// [`Slots::audit`], panicking (tests).
    #[cfg(test)]
    pub fn check(&self) {
        if let Err(e) = self.audit() {
            panic!("{e}");
        }
    }

    /// The longest any live entry has left to live at `now_ns` (tests and
    /// fuzzing; reads every slot).
    pub fn longest_left(&self, now_ns: u64) -> u64 {
        self.slots
            .iter()
            .filter(|e| e.used())
            .map(|e| e.expires_ns.saturating_sub(now_ns))
            .max()
            .unwrap_or(0)
    }

    /// Longest distance from home of any entry (tests).
    #[cfg(test)]
    pub fn max_dist(&self) -> u8 {
        self.slots.iter().map(|e| e.dist).max().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(i: u32) -> Key {
        Key::new(17, 0x0a00_0000 | i, 1024, 0xc0a8_0001, 53).0
    }

    #[test]
    fn key_is_the_same_both_ways() {
        let (k1, b1) = Key::new(6, 0x0a00_0001, 40000, 0x0a00_0002, 80);
        let (k2, b2) = Key::new(6, 0x0a00_0002, 80, 0x0a00_0001, 40000);
        assert_eq!(k1, k2);
        assert_ne!(b1, b2);
        // Same addresses, ports swapped: a different flow.
        let (k3, _) = Key::new(6, 0x0a00_0001, 80, 0x0a00_0002, 40000);
        assert_ne!(k1, k3);
        // The port breaks the tie between equal addresses.
        let (k4, b4) = Key::new(17, 7, 9, 7, 8);
        let (k5, b5) = Key::new(17, 7, 8, 7, 9);
        assert_eq!(k4, k5);
        assert!(b4 && !b5);
    }

    #[test]
    fn ipv6_key_is_the_same_both_ways_and_finds_its_entry() {
        let a = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
        let mut b = a;
        b[15] = 2;
        let (k1, b1) = Key6::new(6, &a, 40000, &b, 80);
        let (k2, b2) = Key6::new(6, &b, 80, &a, 40000);
        assert_eq!((k1, b1), (k2, !b2));
        assert_ne!(k1, Key6::new(6, &a, 80, &b, 40000).0);
        assert_ne!(k1, Key6::new(17, &a, 40000, &b, 80).0);
        // The port breaks the tie between equal addresses.
        let (k3, b3) = Key6::new(17, &a, 9, &a, 8);
        assert_eq!((k3, b3), (Key6::new(17, &a, 8, &a, 9).0, true));
        assert_eq!(k1.proto(), 6);
        let mut t = Slots::<Key6>::new(64);
        for i in 0..32u16 {
            let k = Key6::new(17, &a, i, &b, 53).0;
            let Probe::Vacant(v) = t.probe(&k, 0) else {
                panic!()
            };
            t.insert_at(v, &k, (0, Window::default()), 10, 0).unwrap();
        }
        t.check();
        assert!(t.find(&Key6::new(17, &b, 53, &a, 31).0, 0).is_some());
        assert!(t.find(&Key6::new(17, &b, 53, &a, 32).0, 0).is_none());
    }

    /// The IPv6 key's sides are ordered as the `(address, port)` pairs
    /// are: side `a` the lower pair, the sender side `b` when its pair is
    /// the higher; the same key both ways. Addresses drawn from a few
    /// values so that equal ones (the port breaks the tie) come often.
    #[test]
    fn ipv6_key_sides_are_the_pairs_in_order() {
        let mut rng = fastrand::Rng::with_seed(0x6b65_7936);
        let addr = |rng: &mut fastrand::Rng| {
            let mut a = [0u8; 16];
            a[0] = 0x20;
            a[rng.usize(1..16)] = rng.u8(0..3);
            a
        };
        for _ in 0..20_000 {
            let (src, dst) = (addr(&mut rng), addr(&mut rng));
            let (sport, dport) = (rng.u16(0..4), rng.u16(0..4));
            let (k, from_b) = Key6::new(17, &src, sport, &dst, dport);
            let (x, y) = (u128::from_be_bytes(src), u128::from_be_bytes(dst));
            assert_eq!(
                from_b,
                (x, sport) > (y, dport),
                "{src:?} {sport} {dst:?} {dport}"
            );
            let (lo, hi) = if from_b {
                ((y, dport), (x, sport))
            } else {
                ((x, sport), (y, dport))
            };
            assert_eq!((k.a, k.b), (lo.0, hi.0));
            assert_eq!(k.ports, 17 << 32 | u64::from(lo.1) << 16 | u64::from(hi.1));
            let (back, back_from_b) = Key6::new(17, &dst, dport, &src, sport);
            assert_eq!(back, k);
            assert_eq!(back_from_b, !from_b && (x, sport) != (y, dport));
        }
    }

    #[test]
    fn insert_find_remove_keep_the_invariant() {
        let mut t = Slots::new(64);
        for i in 0..32 {
            let k = key(i * 7919);
            match t.probe(&k, 0) {
                Probe::Vacant(v) => {
                    t.insert_at(v, &k, (0, Window::default()), 100 + u64::from(i), 0)
                        .unwrap();
                }
                p => panic!("{p:?}"),
            }
            t.check();
        }
        for i in 0..32 {
            assert!(matches!(t.probe(&key(i * 7919), 0), Probe::Found(_)));
        }
        for i in (0..32).step_by(2) {
            let Probe::Found(s) = t.probe(&key(i * 7919), 0) else {
                panic!()
            };
            t.remove_at(s);
            t.check();
        }
        for i in 0..32 {
            let found = t.find(&key(i * 7919), 0).is_some();
            assert_eq!(found, i % 2 == 1);
        }
        assert_eq!(t.reclaimed(), 0);
        // At time 116 the entries expiring at 101..=115 are dead. A sweep
        // step moves past a slot or reclaims an entry: 64 + 8 steps cover
        // the table.
        let reclaimed = t.sweep(116, 64 + 8);
        t.check();
        assert_eq!(reclaimed, 8);
        assert_eq!(t.len(), 8);
        assert_eq!(t.count_live(116), 8);
    }

    /// Insert each of `keys` that the table takes; how many it refuses.
    fn refused<K: SlotKey>(t: &mut Slots<K>, keys: &[K]) -> usize {
        keys.iter()
            .filter(|k| match t.probe(k, 0) {
                Probe::Vacant(v) => t.insert_at(v, k, (0, Window::default()), 100, 0).is_err(),
                Probe::Exhausted => true,
                Probe::Found(_) => panic!("{k:?} twice"),
            })
            .count()
    }

    /// Two fixed keys, so that the test below is the same every run.
    const KNOWN: HashKey = HashKey {
        m_a: 0x6401_5439_0970_8707_a3a4_d732_9b44_c659,
        m_b: 0x211c_6104_66b4_6c6e_ad4d_6850_461b_53db,
        c: 0x73a9_238f_3388_4a2a_1de5_c986_f55a_e819,
    };
    const OTHER: HashKey = HashKey {
        m_a: 0x938f_5f88_678b_00cb_d595_9af0_44ba_63ce,
        m_b: 0xe44b_ae16_d539_a035_0fcf_7d94_5357_5cf9,
        c: 0xb988_43ff_e53a_719d_8c57_9fc4_0d82_8ee1,
    };

    #[test]
    fn flows_chosen_to_share_a_home_under_one_key_spread_under_another() {
        // What someone who knew a table's hash key could do: choose flows
        // whose home slots are all one. The table takes MAX_PROBE of them
        // and refuses the rest while nearly empty.
        let mut crowded = Slots::<Key>::with_key(1024, KNOWN);
        let target = crowded.home(&key(0));
        let chosen: Vec<Key> = (1..1 << 24)
            .map(key)
            .filter(|k| crowded.home(k) == target)
            .take(48)
            .collect();
        assert_eq!(chosen.len(), 48);
        assert_eq!(refused(&mut crowded, &chosen), 48 - usize::from(MAX_PROBE));
        crowded.check();
        // Under another key they are flows like any others.
        let mut other = Slots::with_key(1024, OTHER);
        assert_eq!(refused(&mut other, &chosen), 0);
        other.check();
        assert!(other.max_dist() < 4, "{}", other.max_dist());
    }

    /// A key under which multiply-shift alone (without the finaliser)
    /// maps the scan below into one cluster, an entry 585 slots from home
    /// under linear probing (found by drawing keys).
    const BUNCHING: HashKey = HashKey {
        m_a: 0x96db_6c56_81c0_f39f_6166_b8d9_13f8_b8f4,
        m_b: 0xb9f4_3da8_ff99_5447_4dee_0341_2a17_1d45,
        c: 0x091b_59d6_8ff4_d89b_7e91_fa32_c7a7_41fe,
    };

    #[test]
    fn a_scan_spreads_even_under_a_key_that_bunches_multiply_shift() {
        // 32,768 flows from one host, source ports 0.. in order, into
        // 65,536 slots.
        let scan: Vec<Key> = (0..=u16::MAX / 2)
            .map(|p| Key::new(17, 0x0a00_0001, p, 0xc0a8_0001, 53).0)
            .collect();
        let bits = 16;
        // Multiply-shift alone: the homes bunch (linear probing would put
        // entries hundreds of slots from home; this table refuses them).
        let mut taken = vec![false; 1 << bits];
        let mut longest = 0;
        for k in &scan {
            let home = (k.universal(&BUNCHING) >> (64 - bits)) as usize;
            let (mut i, mut d) = (home, 0);
            while taken[i] {
                (i, d) = ((i + 1) & ((1 << bits) - 1), d + 1);
            }
            taken[i] = true;
            longest = longest.max(d);
        }
        assert!(longest > 300, "{longest}");
        // With the finaliser, as random flows would: all taken, close to
        // home.
        let mut t = Slots::with_key(1 << bits, BUNCHING);
        assert_eq!(refused(&mut t, &scan), 0);
        assert!(t.max_dist() < 20, "{}", t.max_dist());
        t.check();
    }

    #[test]
    fn every_table_draws_its_own_key() {
        let keys: Vec<HashKey> = (0..4).map(|_| Slots::<Key>::new(8).hash).collect();
        for (i, k) in keys.iter().enumerate() {
            assert!(!keys[..i].contains(k), "{k:?} twice");
        }
    }

    #[test]
    fn expired_entries_are_reclaimed_while_probing() {
        let mut t = Slots::new(2);
        let (a, b) = (key(1), key(2));
        let Probe::Vacant(v) = t.probe(&a, 0) else {
            panic!()
        };
        t.insert_at(v, &a, (0, Window::default()), 10, 0).unwrap();
        let Probe::Vacant(v) = t.probe(&b, 0) else {
            panic!()
        };
        t.insert_at(v, &b, (0, Window::default()), 20, 0).unwrap();
        assert_eq!(t.len(), 2);
        // At 10, `a` is dead: the probe reclaims it and finds no entry.
        assert!(matches!(t.probe(&a, 10), Probe::Vacant(_)));
        assert_eq!((t.reclaimed(), t.len()), (1, 1));
        assert!(matches!(t.probe(&b, 10), Probe::Found(_)));
        t.check();
        // The freed slot takes a new key.
        let c = key(3);
        let Probe::Vacant(v) = t.probe(&c, 10) else {
            panic!()
        };
        t.insert_at(v, &c, (0, Window::default()), 30, 10).unwrap();
        assert_eq!(t.len(), 2);
        t.check();
    }
}
