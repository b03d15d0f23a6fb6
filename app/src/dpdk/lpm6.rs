//! IPv6 longest-prefix-match tables (`rte_lpm6`: a 24-bit first level, then
//! one 256-entry tbl8 group per further byte), and the pair of them the
//! workers read while the control plane changes routes.
//!
//! DPDK 22.11's `rte_lpm6` has no RCU: a delete returns the tbl8 groups it
//! unlinks to the free pool at once, and the next add that needs a group
//! takes the last one freed, zeroes it and fills it, possibly while a worker
//! that read the old link is still walking it (it would see another
//! prefix's entries, or none). So no table a worker may be reading is ever
//! changed: [`Lpm6Pair`] holds two tables, the workers read the active one
//! (one load per burst), and its one writer ([`Lpm6Writer`]) changes the
//! standby, makes it the active one, and applies the same change to the
//! other only after a grace period of the workers' QSBR domain, when no
//! worker can still be in it. See docs/ipv6.md.
//!
//! Lookups read the tables directly ([`Lpm6::walk`], inline, where
//! `rte_lpm6_lookup_bulk_func` is a call and a copy of each destination
//! into an array): their layout is DPDK 22.11's `struct rte_lpm6`, private
//! to `lib/lpm`, which [`Lpm6::new`] checks on every table it creates (and
//! refuses a DPDK whose layout differs). Each entry: next hop or tbl8 group
//! in bits 0..21, the rule's depth in 21..29, valid (bit 29), valid group
//! (30), extended (31: the entry names the group of the next byte).

use super::rcu::Qsbr;
use super::DpdkError;
use dpdk_sys as sys;
use std::collections::BTreeMap;
use std::ffi::CString;
use std::mem::size_of;
use std::net::Ipv6Addr;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// A next-hop value no route has: what a lookup gives on a miss.
pub const LPM6_MISS: u32 = u32::MAX;

/// The longest a change waits for the workers to leave the standby table.
/// They report once per poll loop (microseconds); a worker silent this long
/// is stalled, and the control lcore gives the change up rather than hang
/// with it (ARP, neighbour discovery and `fastpath ctl` run there too).
pub const STANDBY_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Largest next-hop value `rte_lpm6` stores (21 bits: larger values would be
/// cut silently, so they are refused).
pub const LPM6_MAX_NEXT_HOP: u32 = (1 << 21) - 1;

/// Bytes of DPDK memory one table takes: the 2^24-entry first level (64 MiB),
/// `tbl8s` groups of 256 entries (1 KiB each) with their pool index and
/// header (16 bytes each), and the rules' hash table, which DPDK sizes to
/// 1.2 × `max_rules` + 64 entries (counted at 64 bytes each, a bound).
pub const fn table_bytes(max_rules: u32, tbl8s: u32) -> u64 {
    let tbl24 = (1u64 << 24) * 4;
    let groups = tbl8s as u64 * (256 * 4 + 16);
    let rules = (max_rules as u64 * 6 / 5 + 64) * 64;
    tbl24 + groups + rules
}

/// The head of DPDK 22.11's `struct rte_lpm6` (lib/lpm/rte_lpm6.c); its
/// `tbl24` starts at the next cache line. Checked by [`Lpm6::check_layout`].
#[repr(C)]
#[derive(Clone, Copy)]
struct Lpm6Head {
    name: [u8; 32],
    max_rules: u32,
    used_rules: u32,
    number_tbl8s: u32,
    rules_tbl: *const u8,
}

/// What follows `tbl24` in `struct rte_lpm6`: the free-group pool, its
/// position and the groups' headers; `tbl8` starts at the next cache line.
#[repr(C)]
#[derive(Clone, Copy)]
struct Lpm6Tail {
    tbl8_pool: *const u32,
    tbl8_pool_pos: u32,
    tbl8_hdrs: *const u8,
}

/// Entries of the first level (the address's first three bytes).
const TBL24_ENTRIES: usize = 1 << 24;
/// Where `tbl24` starts in `struct rte_lpm6` (`__rte_cache_aligned`).
const TBL24_OFFSET: usize = 64;
/// Where the tail starts: right after `tbl24`.
const TAIL_OFFSET: usize = TBL24_OFFSET + TBL24_ENTRIES * 4;
/// Where `tbl8` starts: the cache line after the tail.
const TBL8_OFFSET: usize = (TAIL_OFFSET + size_of::<Lpm6Tail>()).next_multiple_of(64);
/// Where `tbl8` starts, in entries from `tbl24`'s start.
const TBL8_FROM_TBL24: usize = (TBL8_OFFSET - TBL24_OFFSET) / 4;
/// Entries of a tbl8 group (one byte of the address).
const TBL8_GROUP_ENTRIES: usize = 256;
/// An entry's next hop, or its group when extended.
const NEXT_HOP_BITS: u32 = 0x1f_ffff;
/// An entry holds a rule (or, with [`EXT`], names a group).
const VALID: u32 = 1 << 29;
/// An entry names the group of the next byte.
const EXT: u32 = 1 << 31;

/// The prefix length is within 1..=128 and the next hop within 21 bits.
fn check(what: &str, prefix: &Ipv6Addr, depth: u8, next_hop: Option<u32>) -> Result<(), DpdkError> {
    let bad = if !(1..=128).contains(&depth) {
        Some(format!(
            "prefix length {depth} is not within 1..=128 (rte_lpm6 holds no ::/0: \
             the FIB keeps the default route beside the table)"
        ))
    } else if next_hop.is_some_and(|h| h > LPM6_MAX_NEXT_HOP) {
        Some(format!(
            "next hop {} is above {LPM6_MAX_NEXT_HOP} (21 bits)",
            next_hop.unwrap_or_default()
        ))
    } else {
        None
    };
    match bad {
        Some(reason) => Err(DpdkError {
            what: format!("LPM6 {what} {prefix}/{depth}"),
            code: libc::EINVAL,
            reason,
        }),
        None => Ok(()),
    }
}

/// One IPv6 LPM table. Changes take `&mut self`; lookups `&self`.
#[derive(Debug)]
pub struct Lpm6 {
    raw: NonNull<sys::rte_lpm6>,
    /// The tables the lookups read (inside `raw`'s allocation): tbl24,
    /// and tbl8 at a fixed distance after it ([`TBL8_FROM_TBL24`]), so a
    /// walk needs one base.
    tbl24: NonNull<u32>,
    name: String,
    rules: u32,
    tbl8s: u32,
}

// SAFETY: the handle points to DPDK-allocated tables; lookups only read them
// and changes need &mut self, or the one Lpm6Writer on a table no reader
// reads (see Lpm6Pair).
unsafe impl Send for Lpm6 {}
// SAFETY: as above; rte_lpm6 lookups are read-only and may run concurrently.
unsafe impl Sync for Lpm6 {}

impl Lpm6 {
    /// An entry no [`Lpm6::walk`] ends on (it ends on an entry that is not
    /// extended; this one is).
    pub const NO_ENTRY: u32 = u32::MAX;

    /// A table for up to `max_rules` prefixes and `tbl8s` groups, on `socket`
    /// (see [`table_bytes`]: 64 MiB and 1 KiB per group). Each prefix longer
    /// than /24 takes up to one group per byte past the third that no other
    /// prefix shares: a /64 up to 5, a /128 up to 13.
    pub fn new(name: &str, max_rules: u32, tbl8s: u32, socket: i32) -> Result<Lpm6, DpdkError> {
        let cname = CString::new(name).map_err(|_| DpdkError {
            what: format!("LPM6 name {name:?}"),
            code: libc::EINVAL,
            reason: "contains a NUL byte".into(),
        })?;
        let cfg = sys::rte_lpm6_config {
            max_rules,
            number_tbl8s: tbl8s,
            flags: 0,
        };
        // SAFETY: cname and cfg are valid for the call; DPDK copies what it keeps.
        let raw = unsafe { sys::rte_lpm6_create(cname.as_ptr(), socket, &cfg) };
        let raw = NonNull::new(raw).ok_or_else(|| {
            DpdkError::from_rte_errno(format!(
                "creating LPM6 table {name:?} for {max_rules} rules and {tbl8s} tbl8 groups \
                 ({} MiB of DPDK memory; with --no-huge give EAL -m accordingly)",
                table_bytes(max_rules, tbl8s).div_ceil(1 << 20)
            ))
        })?;
        // SAFETY: tbl24 and tbl8 lie inside the table's allocation
        // (`sizeof(struct rte_lpm6)` plus `tbl8s` groups), at the offsets
        // check_layout verifies before any lookup reads them.
        let tbl24 = unsafe {
            let base = raw.as_ptr().cast::<u8>();
            NonNull::new_unchecked(base.add(TBL24_OFFSET).cast::<u32>())
        };
        let mut lpm = Lpm6 {
            raw,
            tbl24,
            name: name.to_string(),
            rules: max_rules,
            tbl8s,
        };
        lpm.check_layout()?;
        Ok(lpm)
    }

    /// Refuse a DPDK whose `struct rte_lpm6` is not laid out as
    /// [`Lpm6::walk`] reads it: the head's fields as configured, the tail's
    /// pointers set, a fresh table all misses, and (with the three groups it
    /// takes) a probe /48 read inline as `rte_lpm6_lookup` reads it, then
    /// removed.
    fn check_layout(&mut self) -> Result<(), DpdkError> {
        let (head, tail) = self.head_and_tail();
        let named = self.name.as_bytes();
        let cut = named.len().min(head.name.len() - 1);
        let fresh = head.name[..cut] == named[..cut]
            && head.name[cut] == 0
            && head.max_rules == self.rules
            && head.used_rules == 0
            && head.number_tbl8s == self.tbl8s
            && !head.rules_tbl.is_null()
            && !tail.tbl8_pool.is_null()
            && !tail.tbl8_hdrs.is_null()
            && tail.tbl8_pool_pos == 0
            && [[0u8; 16], [0xff; 16]]
                .iter()
                .all(|a| self.entry(a) == LPM6_MISS);
        let probe = Ipv6Addr::new(0x2001, 0xdb8, 0x0102, 0, 0, 0, 0, 1);
        let beside = Ipv6Addr::new(0x2001, 0xdb8, 0x0103, 0, 0, 0, 0, 1);
        let probed = self.tbl8s < 3
            || (self.add_unshared(probe, 48, 7).is_ok()
                && self.tbl24_entry(&probe.octets()) & (VALID | EXT) == VALID | EXT
                && self.entry(&probe.octets()) == 7
                && self.lookup(&probe) == Some(7)
                && self.entry(&beside.octets()) == LPM6_MISS
                && self.lookup(&beside).is_none()
                && self.head_and_tail().1.tbl8_pool_pos == 3
                && self.delete_unshared(probe, 48).unwrap_or(false)
                && self.entry(&probe.octets()) == LPM6_MISS);
        if fresh && probed {
            return Ok(());
        }
        Err(DpdkError {
            what: format!("creating LPM6 table {:?}", self.name),
            code: libc::ENOTSUP,
            reason: format!(
                "this DPDK's rte_lpm6 tables are not laid out as fastpath reads them \
                 (DPDK 22.11's struct rte_lpm6); build against DPDK 22.11 (DPDK {})",
                sys::DPDK_VERSION
            ),
        })
    }

    /// The entry for byte `b` in the group an extended entry `e` names.
    #[inline(always)]
    fn tbl8_entry(&self, e: u32, b: u8) -> u32 {
        let at = (e & NEXT_HOP_BITS) as usize * TBL8_GROUP_ENTRIES + usize::from(b);
        // SAFETY: an extended entry names one of the table's groups (DPDK
        // allocates them below number_tbl8s, 256 entries each, inside the
        // allocation, tbl8 at TBL8_OFFSET); the table is not changed while a
        // worker reads it (Lpm6Pair), nor under &self otherwise.
        unsafe { self.tbl24.as_ptr().add(TBL8_FROM_TBL24 + at).read() }
    }

    /// The tbl24 entry of `addr` (network order): by its first three
    /// bytes, four loaded as one word and the fourth shifted out.
    #[inline(always)]
    fn tbl24_entry(&self, addr: &[u8; 16]) -> u32 {
        let [a0, a1, a2, a3, ..] = *addr;
        let at = (u32::from_be_bytes([a0, a1, a2, a3]) >> 8) as usize;
        // SAFETY: tbl24 has 2^24 entries (checked layout); `at` < 2^24.
        unsafe { self.tbl24.as_ptr().add(at).read() }
    }

    /// Copies of the table's head and of what follows its tbl24.
    fn head_and_tail(&self) -> (Lpm6Head, Lpm6Tail) {
        let base = self.raw.as_ptr().cast::<u8>();
        // SAFETY: the head is the start of the table's allocation and the
        // tail follows its 2^24-entry tbl24 inside it; both are read as
        // copies (DPDK changes them) and trusted only as check_layout does.
        unsafe {
            (
                base.cast::<Lpm6Head>().read(),
                base.add(TAIL_OFFSET).cast::<Lpm6Tail>().read(),
            )
        }
    }

    /// The next hop of the longest prefix holding `addr` (network order),
    /// or [`LPM6_MISS`]: [`Lpm6::next_hop_of`] the entry [`Lpm6::walk`]
    /// ends on.
    #[inline(always)]
    pub fn entry(&self, addr: &[u8; 16]) -> u32 {
        Lpm6::next_hop_of(self.walk(addr))
    }

    /// The next hop an entry [`Lpm6::walk`] ended on holds, or
    /// [`LPM6_MISS`].
    #[inline(always)]
    pub fn next_hop_of(e: u32) -> u32 {
        if e & (VALID | EXT) == VALID {
            e & NEXT_HOP_BITS
        } else {
            LPM6_MISS
        }
    }

    /// The entry of the longest prefix holding `addr` (network order):
    /// `rte_lpm6_lookup`'s walk, inline (tbl24 by the first three bytes,
    /// then one group per further byte while the entry is extended). The
    /// addresses of one prefix end on one entry (its next hop, depth and
    /// flags), so a burst's packets can be taken by runs of equal entries
    /// and the next hop read once a run ([`Lpm6::next_hop_of`]). An
    /// extended entry is always valid (DPDK 22.11 writes `ext_entry = 1`
    /// only with `valid = VALID`; `check_layout` sees it on its probe), so
    /// the walk tests one bit a step. A worker reads only a table no writer
    /// changes ([`Lpm6Pair::active`]).
    #[inline(always)]
    pub fn walk(&self, addr: &[u8; 16]) -> u32 {
        let mut e = self.tbl24_entry(addr);
        // One group a byte while the entry is extended: bytes 3 to 5 (to a
        // /48, the longest prefix most tables hold) unrolled, the rest in a
        // loop. A group of the last byte is never extended: no table DPDK
        // builds walks past it.
        'walk: {
            for &b in &addr[3..6] {
                if e & EXT == 0 {
                    break 'walk;
                }
                e = self.tbl8_entry(e, b);
            }
            for &b in &addr[6..] {
                if e & EXT == 0 {
                    break 'walk;
                }
                e = self.tbl8_entry(e, b);
            }
        }
        e
    }

    /// Add `prefix/depth` (depth 1..=128; bits past it are ignored) with
    /// `next_hop` (at most [`LPM6_MAX_NEXT_HOP`]); replaces the next hop of an
    /// existing identical prefix.
    pub fn add(&mut self, prefix: Ipv6Addr, depth: u8, next_hop: u32) -> Result<(), DpdkError> {
        self.add_unshared(prefix, depth, next_hop)
    }

    /// [`Lpm6::add`] through `&self`: only for `&mut self` or for the
    /// standby table of an [`Lpm6Pair`], which no reader reads.
    fn add_unshared(&self, prefix: Ipv6Addr, depth: u8, next_hop: u32) -> Result<(), DpdkError> {
        check("add", &prefix, depth, Some(next_hop))?;
        let ip = prefix.octets();
        // SAFETY: no reader reads this table (see above); ip is 16 bytes,
        // valid for the call.
        let ret = unsafe { sys::rte_lpm6_add(self.raw.as_ptr(), ip.as_ptr(), depth, next_hop) };
        if ret < 0 {
            return Err(DpdkError::from_ret(
                format!(
                    "LPM6 add {prefix}/{depth} to {:?} ({} rules, {} tbl8 groups: \
                     ENOSPC means one of them is full)",
                    self.name, self.rules, self.tbl8s
                ),
                ret,
            ));
        }
        Ok(())
    }

    /// Delete `prefix/depth`; false when it was not in the table.
    pub fn delete(&mut self, prefix: Ipv6Addr, depth: u8) -> Result<bool, DpdkError> {
        self.delete_unshared(prefix, depth)
    }

    /// [`Lpm6::delete`] through `&self`, under the terms of `add_unshared`.
    fn delete_unshared(&self, prefix: Ipv6Addr, depth: u8) -> Result<bool, DpdkError> {
        check("delete", &prefix, depth, None)?;
        let ip = prefix.octets();
        // SAFETY: as in add_unshared.
        let ret = unsafe { sys::rte_lpm6_delete(self.raw.as_ptr(), ip.as_ptr(), depth) };
        match ret {
            0 => Ok(true),
            r if r == -libc::ENOENT || r == -libc::EINVAL => Ok(false),
            r => Err(DpdkError::from_ret(
                format!("LPM6 delete {prefix}/{depth} from {:?}", self.name),
                r,
            )),
        }
    }

    /// Remove every prefix, under the terms of `add_unshared`.
    fn clear_unshared(&self) {
        // SAFETY: as in add_unshared.
        unsafe { sys::rte_lpm6_delete_all(self.raw.as_ptr()) }
    }

    /// The next hop of `prefix/depth` itself (not of its longest match), if
    /// the table holds that prefix.
    pub fn rule(&self, prefix: Ipv6Addr, depth: u8) -> Option<u32> {
        check("rule", &prefix, depth, None).ok()?;
        let ip = prefix.octets();
        let mut hop = 0u32;
        // SAFETY: a lookup in the rules' hash table, which only changes
        // under &mut self or on a standby table; hop is a valid out-parameter.
        let ret = unsafe {
            sys::rte_lpm6_is_rule_present(self.raw.as_ptr(), ip.as_ptr(), depth, &mut hop)
        };
        (ret == 1).then_some(hop)
    }

    /// The next hop of the longest prefix holding `addr`.
    pub fn lookup(&self, addr: &Ipv6Addr) -> Option<u32> {
        let ip = addr.octets();
        let mut hop = 0u32;
        // SAFETY: read-only lookup; ip and hop are valid for the call.
        let ret = unsafe { sys::rte_lpm6_lookup(self.raw.as_ptr(), ip.as_ptr(), &mut hop) };
        (ret == 0).then_some(hop)
    }

    /// Look up `addrs`: `hops[i]` becomes the next hop of `addrs[i]`, or
    /// [`LPM6_MISS`] ([`Lpm6::entry`] of each).
    pub fn lookup_bulk(&self, addrs: &[[u8; 16]], hops: &mut [u32]) {
        for (a, h) in addrs.iter().zip(hops.iter_mut()) {
            *h = self.entry(a);
        }
    }
}

impl Drop for Lpm6 {
    fn drop(&mut self) {
        // SAFETY: we own the table; no reference to it outlives self.
        unsafe { sys::rte_lpm6_free(self.raw.as_ptr()) }
    }
}

/// One route change, as the writer applies it to each table in turn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lpm6Change {
    /// Add `prefix/depth` with a next hop, or replace the prefix's next hop.
    Add(Ipv6Addr, u8, u32),
    /// Delete `prefix/depth`.
    Delete(Ipv6Addr, u8),
}

/// The prefix's address with the bits past `depth` cleared: the key the
/// writer keeps rules under, as rte_lpm6 does.
fn masked(prefix: Ipv6Addr, depth: u8) -> u128 {
    let bits = prefix.to_bits();
    match depth {
        0 => 0,
        d if d >= 128 => bits,
        d => bits & !(u128::MAX >> d),
    }
}

/// Two [`Lpm6`] tables, one active: what the workers look up in.
#[derive(Debug)]
pub struct Lpm6Pair {
    tables: [Lpm6; 2],
    active: AtomicUsize,
    /// The grace periods after which the standby is no longer read; kept
    /// so that the variable outlives the tables' readers.
    _qsbr: Arc<Qsbr>,
}

impl Lpm6Pair {
    /// Make `a` and `b` (empty, of the same sizes) a pair read by the workers
    /// of `qsbr`'s domain, with its one writer.
    pub fn new(
        a: Lpm6,
        b: Lpm6,
        qsbr: Arc<Qsbr>,
    ) -> Result<(Arc<Lpm6Pair>, Lpm6Writer), DpdkError> {
        if (a.rules, a.tbl8s) != (b.rules, b.tbl8s) {
            return Err(DpdkError {
                what: format!("pairing LPM6 tables {:?} and {:?}", a.name, b.name),
                code: libc::EINVAL,
                reason: format!(
                    "sizes differ ({} rules and {} tbl8 groups against {} and {}): \
                     a change that fits one must fit the other",
                    a.rules, a.tbl8s, b.rules, b.tbl8s
                ),
            });
        }
        // Both start empty, whatever was added before.
        a.clear_unshared();
        b.clear_unshared();
        let pair = Arc::new(Lpm6Pair {
            tables: [a, b],
            active: AtomicUsize::new(0),
            _qsbr: qsbr.clone(),
        });
        let writer = Lpm6Writer {
            pair: pair.clone(),
            qsbr,
            rules: BTreeMap::new(),
            behind: Vec::new(),
            token: None,
            swaps: 0,
        };
        Ok((pair, writer))
    }

    /// The table the workers read now. A worker takes it once per burst and
    /// holds it no further than its next quiescent report.
    #[inline(always)]
    pub fn active(&self) -> &Lpm6 {
        // Acquire: the writer's changes to the table happen before it is
        // made active (Release in Lpm6Writer::publish).
        &self.tables[self.active.load(Ordering::Acquire) & 1]
    }

    /// [`Lpm6::lookup_bulk`] on the active table.
    #[inline(always)]
    pub fn lookup_bulk(&self, addrs: &[[u8; 16]], hops: &mut [u32]) {
        self.active().lookup_bulk(addrs, hops);
    }

    /// [`Lpm6::lookup`] on the active table: from a worker (a QSBR reader)
    /// or the writer's thread, never from a thread the grace periods do not
    /// wait for.
    pub fn lookup(&self, addr: &Ipv6Addr) -> Option<u32> {
        self.active().lookup(addr)
    }
}

/// The one writer of an [`Lpm6Pair`], on the control lcore. Not `Clone`.
///
/// Each [`apply`](Self::apply) brings the standby up to date (replaying the
/// changes the active table got since the last swap, once a grace period
/// has passed since it: no worker reads it any more), applies the batch to
/// it, and makes it the active table (one store). Every worker sees the
/// table as it was before the batch or as it is after, never a table being
/// changed; an address both route is never missed. A batch that does not
/// fit changes nothing the workers see.
#[derive(Debug)]
pub struct Lpm6Writer {
    pair: Arc<Lpm6Pair>,
    qsbr: Arc<Qsbr>,
    /// The active table's prefixes (masked address, depth) and next hops.
    rules: BTreeMap<(u128, u8), u32>,
    /// What the active table got that the standby has not.
    behind: Vec<Lpm6Change>,
    /// The grace period started at the last swap.
    token: Option<u64>,
    swaps: u64,
}

impl Lpm6Writer {
    /// The pair, for the workers.
    pub fn table(&self) -> &Arc<Lpm6Pair> {
        &self.pair
    }

    /// The active table's prefixes and next hops, in address order.
    pub fn rules(&self) -> impl Iterator<Item = (Ipv6Addr, u8, u32)> + '_ {
        self.rules
            .iter()
            .map(|(&(a, d), &h)| (Ipv6Addr::from_bits(a), d, h))
    }

    /// How many times the active table changed.
    pub fn swaps(&self) -> u64 {
        self.swaps
    }

    /// Whether the standby may be written now: no worker can still be in it.
    /// Never waits.
    pub fn standby_free(&self) -> bool {
        self.token.is_none_or(|t| self.qsbr.passed(t))
    }

    fn standby(&self) -> &Lpm6 {
        &self.pair.tables[(self.pair.active.load(Ordering::Relaxed) & 1) ^ 1]
    }

    /// Wait until no worker can be in the standby (the workers report once
    /// per poll loop: microseconds), then replay onto it what it missed. A
    /// worker silent for [`STANDBY_WAIT`] fails the change, with nothing
    /// changed (the standby is untouched until the wait ends).
    fn catch_up(&mut self) -> Result<(), DpdkError> {
        let start = std::time::Instant::now();
        while !self.standby_free() {
            if start.elapsed() >= STANDBY_WAIT {
                return Err(DpdkError {
                    what: "changing the IPv6 routes".into(),
                    code: libc::EBUSY,
                    reason: format!(
                        "a worker has not passed a quiescent point for {STANDBY_WAIT:?} (stalled?), \
                         so the table it may still read cannot be changed; nothing changed, try again"
                    ),
                });
            }
            std::thread::yield_now();
        }
        self.token = None;
        let behind = std::mem::take(&mut self.behind);
        if let Err(e) = self.apply_to_standby(&behind) {
            // Cannot happen (the active table took the same changes, and the
            // tables have the same sizes), but if it did: start it anew.
            self.rebuild_standby()?;
            return Err(e);
        }
        Ok(())
    }

    fn apply_to_standby(&self, changes: &[Lpm6Change]) -> Result<(), DpdkError> {
        let standby = self.standby();
        for c in changes {
            match *c {
                Lpm6Change::Add(p, d, h) => standby.add_unshared(p, d, h)?,
                Lpm6Change::Delete(p, d) => {
                    standby.delete_unshared(p, d)?;
                }
            }
        }
        Ok(())
    }

    /// Make the standby hold exactly the active table's rules.
    fn rebuild_standby(&mut self) -> Result<(), DpdkError> {
        let standby = self.standby();
        standby.clear_unshared();
        for (&(a, d), &h) in &self.rules {
            standby.add_unshared(Ipv6Addr::from_bits(a), d, h)?;
        }
        Ok(())
    }

    /// Apply `changes` in order, as one step the workers see whole. Deleting
    /// a prefix the table does not hold is no error. On an error (a bad
    /// prefix, a full table) nothing changes for the workers and the error
    /// names the change. May wait for one grace period (see above).
    pub fn apply(&mut self, changes: &[Lpm6Change]) -> Result<(), DpdkError> {
        if changes.is_empty() {
            return Ok(());
        }
        for c in changes {
            match *c {
                Lpm6Change::Add(p, d, h) => check("add", &p, d, Some(h))?,
                Lpm6Change::Delete(p, d) => check("delete", &p, d, None)?,
            }
        }
        self.catch_up()?;
        if let Err(e) = self.apply_to_standby(changes) {
            // Undo what the batch did to the standby: it must stay equal to
            // the active table.
            self.rebuild_standby()?;
            return Err(e);
        }
        for c in changes {
            match *c {
                Lpm6Change::Add(p, d, h) => {
                    self.rules.insert((masked(p, d), d), h);
                }
                Lpm6Change::Delete(p, d) => {
                    self.rules.remove(&(masked(p, d), d));
                }
            }
        }
        self.publish();
        self.behind = changes.to_vec();
        Ok(())
    }

    /// Make the standby the active table and start the grace period after
    /// which the old one is free.
    fn publish(&mut self) {
        // Release: every store into the standby happens before a worker that
        // loads the new index reads it.
        self.pair.active.fetch_xor(1, Ordering::Release);
        self.token = Some(self.qsbr.start());
        self.swaps += 1;
    }

    /// Add (or replace) one prefix: [`apply`](Self::apply) of one change.
    pub fn add(&mut self, prefix: Ipv6Addr, depth: u8, next_hop: u32) -> Result<(), DpdkError> {
        self.apply(&[Lpm6Change::Add(prefix, depth, next_hop)])
    }

    /// Delete one prefix; false (and no swap) when the table does not hold it.
    pub fn delete(&mut self, prefix: Ipv6Addr, depth: u8) -> Result<bool, DpdkError> {
        check("delete", &prefix, depth, None)?;
        if !self.rules.contains_key(&(masked(prefix, depth), depth)) {
            return Ok(false);
        }
        self.apply(&[Lpm6Change::Delete(prefix, depth)])?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_keeps_the_prefix_bits() {
        let a: Ipv6Addr = "2001:db8:ffff:ffff::1".parse().unwrap();
        assert_eq!(
            masked(a, 32),
            "2001:db8::".parse::<Ipv6Addr>().unwrap().to_bits()
        );
        assert_eq!(masked(a, 128), a.to_bits());
        assert_eq!(masked(a, 1), 0);
        assert_eq!(masked(a, 0), 0);
        assert_eq!(
            masked(a, 36),
            "2001:db8:f000::".parse::<Ipv6Addr>().unwrap().to_bits()
        );
    }

    #[test]
    fn checks_name_the_bad_field() {
        let p: Ipv6Addr = "2001:db8::".parse().unwrap();
        assert!(check("add", &p, 0, Some(1))
            .unwrap_err()
            .reason
            .contains("::/0"));
        assert!(check("add", &p, 129, Some(1)).is_err());
        assert!(check("add", &p, 64, Some(LPM6_MAX_NEXT_HOP + 1))
            .unwrap_err()
            .reason
            .contains("21 bits"));
        assert!(check("add", &p, 128, Some(LPM6_MAX_NEXT_HOP)).is_ok());
    }

    #[test]
    fn a_table_is_64_mib_and_a_kib_per_group() {
        assert_eq!(table_bytes(0, 0), (64 << 20) + 64 * 64);
        assert!(table_bytes(65536, 65536) < (64 + 65 + 5 + 1) << 20);
    }
}
