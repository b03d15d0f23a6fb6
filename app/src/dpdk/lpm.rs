//! IPv4 longest-prefix-match table on DPDK's `rte_fib` (DIR-24-8 over an
//! `rte_rib` tree): built by the control plane at start, read by every
//! worker (inline, one tbl24 load per packet), and changed at run time by its
//! one writer ([`LpmWriter`]) while they read.
//!
//! Why `rte_fib` and not `rte_lpm`: `rte_lpm` keeps its rules in one array
//! scanned linearly per depth, so each add or delete costs the number of
//! rules of its length and a full table (a million prefixes, most of them
//! /24) takes minutes to install. `rte_fib` keeps them in a tree: an add is
//! a walk of at most 32 nodes plus the tbl24 entries it covers.
//!
//! Lookups read the DIR-24-8 tables directly (their layout is DPDK's
//! `struct dir24_8_tbl`, private to `lib/fib`; [`Lpm::new`] checks it on
//! every table it creates and refuses a DPDK whose layout differs). Each
//! entry holds `next_hop << 1`, bit 0 set when it points to a tbl8 group (and
//! in every tbl8 entry).
//!
//! DPDK 22.11's `rte_fib` has no RCU, so two things a writer does could
//! mislead a reader, and this module makes both safe:
//! - When a group becomes uniform, DPDK stores the group's next hop in tbl24
//!   and then zeroes the group. A reader that loaded the old tbl24 entry may
//!   read a zero: no live tbl8 entry is zero (bit 0 is always set), so the
//!   reader takes that as "recycled" and reads tbl24 again ([`Lpm::entry`]).
//! - A freed group is reused by the next allocation at once. Only an add
//!   longer than /24 allocates one, so the writer makes such an add wait until
//!   every worker has passed a quiescent state since the last free
//!   ([`LpmWriter::add`]); a full table (no prefix longer than /24) never
//!   waits.
//!
//! Every other store is one aligned 32-bit write: a reader sees an entry old
//! or new, never torn; an add on an existing prefix overwrites its next hop in
//! place, and a delete lets the covering prefix take over entry by entry.

use super::rcu::Qsbr;
use super::DpdkError;
use dpdk_sys as sys;
use std::ffi::CString;
use std::net::Ipv4Addr;
use std::ptr::NonNull;
use std::sync::atomic::{
    AtomicU32,
    Ordering::{Acquire, Relaxed},
};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The next-hop value of a miss (the table's default next hop): what
/// [`Lpm::entry`] gives where no prefix holds the address. The largest
/// value a 4-byte DIR-24-8 entry stores.
pub const LPM_MISS: u32 = (1 << 31) - 1;

/// Largest next-hop value a route may have.
pub const LPM_MAX_NEXT_HOP: u32 = LPM_MISS - 1;

/// How long an add longer than /24 waits for the workers to pass a
/// quiescent state (microseconds when they run) before it fails.
pub const GRACE_WAIT: Duration = Duration::from_secs(1);

/// Bit 0 of an entry: a tbl24 entry points to a tbl8 group (set in every
/// tbl8 entry too).
const EXT: u32 = 1;

/// Entries of a tbl8 group.
const TBL8_GROUP_ENTRIES: usize = 256;

/// Groups per slab of DPDK's tbl8 bitmap.
const TBL8_SLAB: u32 = 64;

/// DPDK memory of a table for `max_rules` prefixes and `tbl8s` groups, in
/// MiB: the 64 MiB tbl24, 1 KiB per group, and the tree's two nodes per
/// rule (a 40-byte node takes a 192-byte mempool object and its ring slot:
/// about 420 bytes a rule, measured by `bench/fpm-install.sh`).
pub const fn table_mib(max_rules: u32, tbl8s: u32) -> u64 {
    64 + (max_rules as u64 * 420 + tbl8s as u64 * 1024).div_ceil(1 << 20)
}

/// The head of DPDK 22.11's `struct dir24_8_tbl` (lib/fib/dir24_8.h), the
/// `rte_fib_get_dp` of a DIR-24-8 table; `tbl24` follows at the next cache
/// line. Checked by [`Lpm::check_layout`].
#[repr(C)]
struct Dir24Head {
    number_tbl8s: u32,
    rsvd_tbl8s: u32,
    cur_tbl8s: u32,
    nh_sz: u32,
    def_nh: u64,
    tbl8: *const AtomicU32,
    tbl8_idxes: *const u64,
}

/// Where `tbl24` starts in `struct dir24_8_tbl` (`__rte_cache_aligned`).
const TBL24_OFFSET: usize = 64;

/// An LPM table. Changes take `&mut self`; lookups take `&self`, so once it is
/// shared (`Arc<Lpm>`) only its [`LpmWriter`] changes it.
#[derive(Debug)]
pub struct Lpm {
    raw: NonNull<sys::rte_fib>,
    /// The DIR-24-8 tables the lookups read.
    head: NonNull<Dir24Head>,
    tbl24: NonNull<AtomicU32>,
    tbl8: NonNull<AtomicU32>,
    rules: u32,
}

// SAFETY: the handle points to DPDK-allocated tables; lookups only read them
// (atomic 32-bit loads) and changes need &mut self or the one LpmWriter,
// whose protocol (module docs) keeps concurrent lookups correct.
unsafe impl Send for Lpm {}
// SAFETY: as above; lookups are plain loads of entries written atomically.
unsafe impl Sync for Lpm {}

/// The one writer of a shared [`Lpm`]: adds (an existing prefix's next hop
/// is replaced in place) and deletes (the covering prefix takes over entry
/// by entry) while workers look up. Not `Clone`.
#[derive(Debug)]
pub struct LpmWriter {
    lpm: Arc<Lpm>,
    qsbr: Arc<Qsbr>,
    /// The grace period started after the last change that freed a tbl8
    /// group, until an add longer than /24 has seen it pass.
    freed: Option<u64>,
}

impl LpmWriter {
    /// See [`Lpm::add`]; readers see each entry old or new, never torn. An
    /// add longer than /24 (it may take a tbl8 group) first waits until no
    /// worker can still read a group freed before it, at most
    /// [`GRACE_WAIT`]; past that it fails with nothing changed.
    pub fn add(&mut self, prefix: Ipv4Addr, depth: u8, next_hop: u32) -> Result<(), DpdkError> {
        if depth > 24 {
            self.wait_freed(prefix, depth)?;
        }
        self.change(|lpm| lpm.add_shared(prefix, depth, next_hop))
    }

    /// See [`Lpm::delete`]; the covering prefix takes over entry by entry.
    pub fn delete(&mut self, prefix: Ipv4Addr, depth: u8) -> Result<bool, DpdkError> {
        self.change(|lpm| lpm.delete_shared(prefix, depth))
    }

    /// The table, for lookups.
    pub fn table(&self) -> &Arc<Lpm> {
        &self.lpm
    }

    /// Run one change; when it freed a tbl8 group, start a grace period.
    fn change<T>(&mut self, f: impl FnOnce(&Lpm) -> Result<T, DpdkError>) -> Result<T, DpdkError> {
        let before = self.lpm.groups_in_use();
        let out = f(&self.lpm);
        if self.lpm.groups_in_use() < before {
            self.freed = Some(self.qsbr.start());
        }
        out
    }

    /// Wait until the grace period of the last freed group has passed.
    fn wait_freed(&mut self, prefix: Ipv4Addr, depth: u8) -> Result<(), DpdkError> {
        let Some(token) = self.freed else {
            return Ok(());
        };
        let start = Instant::now();
        while !self.qsbr.passed(token) {
            if start.elapsed() >= GRACE_WAIT {
                return Err(DpdkError {
                    what: format!("LPM add {prefix}/{depth}"),
                    code: libc::EBUSY,
                    reason: format!(
                        "a worker has not passed a quiescent point for {GRACE_WAIT:?} (stalled?), \
                         so a tbl8 group it may still read cannot be reused; nothing changed, \
                         try again"
                    ),
                });
            }
            std::thread::yield_now();
        }
        self.freed = None;
        Ok(())
    }
}

impl Lpm {
    /// A table for up to `max_rules` prefixes and `tbl8s` groups for the
    /// /24s that hold prefixes longer than /24, on `socket`, in
    /// [`table_mib`] of DPDK memory.
    /// `tbl8s` is rounded up to a multiple of 64: DPDK allocates groups from
    /// a bitmap of 64-bit slabs and never uses a partial last slab.
    pub fn new(name: &str, max_rules: u32, tbl8s: u32, socket: i32) -> Result<Lpm, DpdkError> {
        let tbl8s = tbl8s.max(1).div_ceil(TBL8_SLAB) * TBL8_SLAB;
        let cname = CString::new(name).map_err(|_| DpdkError {
            what: format!("LPM name {name:?}"),
            code: libc::EINVAL,
            reason: "contains a NUL byte".into(),
        })?;
        let mut cfg = sys::rte_fib_conf {
            type_: sys::RTE_FIB_DIR24_8,
            default_nh: u64::from(LPM_MISS),
            max_routes: i32::try_from(max_rules).unwrap_or(i32::MAX / 2),
            rib_ext_sz: 0,
            __bindgen_anon_1: sys::rte_fib_conf__bindgen_ty_1 {
                dir24_8: sys::rte_fib_conf__bindgen_ty_1__bindgen_ty_1 {
                    nh_sz: sys::RTE_FIB_DIR24_8_4B,
                    num_tbl8: tbl8s,
                },
            },
        };
        // SAFETY: cname and cfg are valid for the call; DPDK copies what it keeps.
        let raw = unsafe { sys::rte_fib_create(cname.as_ptr(), socket, &mut cfg) };
        let raw = NonNull::new(raw).ok_or_else(|| {
            let mib = table_mib(max_rules, tbl8s);
            DpdkError::from_rte_errno(format!(
                "creating LPM table {name:?} ({mib} MiB; with --no-huge give EAL -m 512 or more)"
            ))
        })?;
        // SAFETY: raw is a live DIR-24-8 table; its dp is allocated with it.
        let dp = unsafe { sys::rte_fib_get_dp(raw.as_ptr()) };
        let Some(head) = NonNull::new(dp.cast::<Dir24Head>()) else {
            // SAFETY: we own raw, not yet shared.
            unsafe { sys::rte_fib_free(raw.as_ptr()) };
            return Err(DpdkError {
                what: format!("creating LPM table {name:?}"),
                code: libc::EINVAL,
                reason: "rte_fib gave no DIR-24-8 tables".into(),
            });
        };
        // SAFETY: the head and tbl24 are the start of the dp allocation
        // (rte_zmalloc, cache aligned, 64 MiB past it); tbl8 is a pointer
        // field DPDK set at creation. check_layout verifies all three
        // before any lookup reads them.
        let (tbl24, tbl8) = unsafe {
            let tbl24 = dp.cast::<u8>().add(TBL24_OFFSET).cast::<AtomicU32>();
            (tbl24, (*head.as_ptr()).tbl8.cast_mut())
        };
        let mut lpm = Lpm {
            raw,
            head,
            tbl24: NonNull::new(tbl24).unwrap_or(NonNull::dangling()),
            tbl8: NonNull::new(tbl8).unwrap_or(NonNull::dangling()),
            rules: max_rules,
        };
        lpm.check_layout(tbl8s)?;
        Ok(lpm)
    }

    /// How many routes the table holds at most.
    pub fn max_rules(&self) -> u32 {
        self.rules
    }

    /// Share the table with workers and keep one writer, whose adds longer
    /// than /24 wait for `qsbr`'s grace periods (module docs).
    pub fn into_shared(self, qsbr: Arc<Qsbr>) -> Result<(Arc<Lpm>, LpmWriter), DpdkError> {
        let lpm = Arc::new(self);
        let writer = LpmWriter {
            lpm: lpm.clone(),
            qsbr,
            freed: None,
        };
        Ok((lpm, writer))
    }

    /// Add `prefix/depth` with `next_hop` (at most [`LPM_MAX_NEXT_HOP`]);
    /// replaces the next hop of an existing identical prefix.
    pub fn add(&mut self, prefix: Ipv4Addr, depth: u8, next_hop: u32) -> Result<(), DpdkError> {
        self.add_shared(prefix, depth, next_hop)
    }

    /// [`Lpm::add`] for `&mut self` or the one [`LpmWriter`].
    fn add_shared(&self, prefix: Ipv4Addr, depth: u8, next_hop: u32) -> Result<(), DpdkError> {
        if depth > 32 || next_hop > LPM_MAX_NEXT_HOP {
            return Err(DpdkError {
                what: format!("LPM add {prefix}/{depth} -> {next_hop}"),
                code: libc::EINVAL,
                reason: "depth above 32 or next hop above 2^31 - 2".into(),
            });
        }
        let (addr, reserved) = (u32::from(prefix), self.reservation(prefix, depth));
        // SAFETY: called with &mut self (no reader) or by the one LpmWriter,
        // which keeps concurrent lookups correct (module docs); plain values.
        let ret = unsafe { sys::rte_fib_add(self.raw.as_ptr(), addr, depth, u64::from(next_hop)) };
        if let Some(reserved) = reserved {
            self.keep_reservation(addr, reserved);
        }
        if ret < 0 {
            return Err(DpdkError::from_ret(
                format!(
                    "LPM add {prefix}/{depth} (table holds {} rules, {} tbl8 groups)",
                    self.rules,
                    self.head().number_tbl8s
                ),
                ret,
            ));
        }
        Ok(())
    }

    /// Delete `prefix/depth`; false when it was not in the table.
    pub fn delete(&mut self, prefix: Ipv4Addr, depth: u8) -> Result<bool, DpdkError> {
        self.delete_shared(prefix, depth)
    }

    /// [`Lpm::delete`] for `&mut self` or the one [`LpmWriter`].
    fn delete_shared(&self, prefix: Ipv4Addr, depth: u8) -> Result<bool, DpdkError> {
        if depth > 32 {
            return Ok(false);
        }
        let (addr, reserved) = (u32::from(prefix), self.reservation(prefix, depth));
        // SAFETY: called with &mut self (no reader) or by the one LpmWriter,
        // which keeps concurrent lookups correct (module docs).
        let ret = unsafe { sys::rte_fib_delete(self.raw.as_ptr(), addr, depth) };
        if let Some(reserved) = reserved {
            self.keep_reservation(addr, reserved);
        }
        match ret {
            0 => Ok(true),
            r if r == -libc::ENOENT => Ok(false),
            r => Err(DpdkError::from_ret(
                format!("LPM delete {prefix}/{depth}"),
                r,
            )),
        }
    }

    /// Before a change longer than /24: whether its /24 holds such a
    /// prefix, and the groups DPDK counts as reserved.
    fn reservation(&self, prefix: Ipv4Addr, depth: u8) -> Option<(bool, u32)> {
        (depth > 24).then(|| (self.has_deep(u32::from(prefix)), self.head().rsvd_tbl8s))
    }

    /// Keep DPDK's count of reserved groups (one per /24 holding a prefix
    /// longer than /24, checked before taking a new /24) right after a
    /// change: DPDK 22.11 does not count an add whose next hop equals its
    /// parent's but uncounts its delete, so without this the count wraps
    /// below zero and every later /24 is refused as full.
    #[cold]
    fn keep_reservation(&self, addr: u32, (had, reserved): (bool, u32)) {
        let has = self.has_deep(addr);
        let want = match (had, has) {
            (false, true) => reserved + 1,
            (true, false) => reserved.saturating_sub(1),
            _ => reserved,
        };
        if self.head().rsvd_tbl8s != want {
            // SAFETY: the head lives as long as the table and only its one
            // writer (&mut self or LpmWriter, here) changes it; workers never
            // read this field. One aligned u32 store, no reference held.
            unsafe { std::ptr::addr_of_mut!((*self.head.as_ptr()).rsvd_tbl8s).write(want) };
        }
    }

    /// Whether the /24 of `addr` holds a prefix longer than /24 (DPDK's own
    /// test: a more specific node under it in the tree).
    fn has_deep(&self, addr: u32) -> bool {
        // SAFETY: the tree lives as long as the table; a read-only walk by
        // its one writer.
        unsafe {
            let rib = sys::rte_fib_get_rib(self.raw.as_ptr());
            !sys::rte_rib_get_nxt(
                rib,
                addr & 0xffff_ff00,
                24,
                std::ptr::null_mut(),
                sys::RTE_RIB_GET_NXT_COVER as i32,
            )
            .is_null()
        }
    }

    /// The next hop of the longest prefix holding `addr`.
    pub fn lookup(&self, addr: Ipv4Addr) -> Option<u32> {
        let hop = self.entry(u32::from(addr));
        (hop != LPM_MISS).then_some(hop)
    }

    /// The next hop of `addr` (host byte order), or [`LPM_MISS`]: one tbl24
    /// load, a tbl8 load for the /24s that hold prefixes longer than /24.
    /// Inlined in a burst loop.
    #[inline(always)]
    pub fn entry(&self, addr: u32) -> u32 {
        let e = self.tbl24_entry(addr);
        if e & EXT != 0 {
            self.tbl8_entry(e, addr)
        } else {
            e >> 1
        }
    }

    #[inline(always)]
    fn tbl24_entry(&self, addr: u32) -> u32 {
        // SAFETY: tbl24 has 2^24 entries (checked layout), so `addr >> 8` is
        // in bounds; each entry is one u32 the writer changes with one
        // aligned store, read here as an atomic (a plain load on x86), never
        // through a reference to the array.
        unsafe { (*self.tbl24.as_ptr().add((addr >> 8) as usize)).load(Relaxed) }
    }

    /// The next hop of `addr` whose tbl24 entry `e` points to a group.
    #[inline(never)]
    fn tbl8_entry(&self, e: u32, addr: u32) -> u32 {
        let t = self.tbl8_load(e, addr);
        if t != 0 {
            return t >> 1;
        }
        // The group went uniform and was zeroed after its next hop was
        // stored in tbl24 (module docs): that store is visible now. It
        // cannot point to a group again while this worker has not passed a
        // quiescent state (the writer waits for one before any allocation).
        let e = self.tbl24_entry(addr);
        if e & EXT == 0 {
            return e >> 1;
        }
        match self.tbl8_load(e, addr) {
            0 => LPM_MISS,
            t => t >> 1,
        }
    }

    #[inline(always)]
    fn tbl8_load(&self, e: u32, addr: u32) -> u32 {
        let at = (e >> 1) as usize * TBL8_GROUP_ENTRIES + (addr & 0xff) as usize;
        // SAFETY: an extended entry holds the index of one of the table's
        // tbl8 groups (256 entries each; the array is set at creation and
        // never moves); a group a reader may still follow is never reused
        // before it passes a quiescent state (LpmWriter::add). Acquire (a
        // plain load on x86) keeps the re-read of tbl24 after a zero here.
        unsafe { (*self.tbl8.as_ptr().add(at)).load(Acquire) }
    }

    /// Look up `addrs` (host byte order); `hops[i]` becomes the next hop of
    /// `addrs[i]`, or [`LPM_MISS`].
    #[inline(always)]
    pub fn lookup_bulk(&self, addrs: &[u32], hops: &mut [u32]) {
        for (a, h) in addrs.iter().zip(hops.iter_mut()) {
            *h = self.entry(*a);
        }
    }

    /// tbl8 groups in use.
    pub fn groups_in_use(&self) -> u32 {
        self.head().cur_tbl8s
    }

    fn head(&self) -> &Dir24Head {
        // SAFETY: the head lives as long as the table; only the writer (or
        // &mut self) changes it, and this is read by the writer.
        unsafe { self.head.as_ref() }
    }

    /// Refuse a DPDK whose DIR-24-8 layout is not the one [`Lpm::entry`]
    /// reads: the head's fields as configured, the fresh table's tbl24 all
    /// misses, and a probe route longer than /24 read through tbl24 and its
    /// group as `rte_fib_lookup_bulk` reads it, then removed.
    fn check_layout(&mut self, tbl8s: u32) -> Result<(), DpdkError> {
        let head = self.head();
        let fresh = head.nh_sz == sys::RTE_FIB_DIR24_8_4B
            && head.number_tbl8s == tbl8s
            && head.cur_tbl8s == 0
            && head.rsvd_tbl8s == 0
            && head.def_nh == u64::from(LPM_MISS)
            && !head.tbl8_idxes.is_null()
            && self.tbl8 != NonNull::dangling()
            && [0, 0x7f00_0000, u32::MAX]
                .iter()
                .all(|&a| self.tbl24_entry(a) == LPM_MISS << 1);
        let probe = Ipv4Addr::new(192, 0, 2, 128);
        let probed = fresh
            && self.add(probe, 25, 7).is_ok()
            && self.groups_in_use() == 1
            && self.head().rsvd_tbl8s == 1
            && self.tbl24_entry(u32::from(probe)) & EXT != 0
            && self.entry(u32::from(probe) + 1) == 7
            && self.entry(u32::from(probe) - 1) == LPM_MISS
            && self.api_lookup(u32::from(probe) + 1) == 7;
        // SAFETY: &mut self: no reader yet.
        let deleted = unsafe { sys::rte_fib_delete(self.raw.as_ptr(), u32::from(probe), 25) } == 0;
        if probed
            && deleted
            && self.groups_in_use() == 0
            && self.entry(u32::from(probe)) == LPM_MISS
        {
            return Ok(());
        }
        Err(DpdkError {
            what: "creating the LPM table".into(),
            code: libc::ENOTSUP,
            reason: format!(
                "this DPDK's rte_fib DIR-24-8 tables are not laid out as fastpath reads them \
                 (DPDK 22.11's struct dir24_8_tbl); build against DPDK 22.11 (DPDK {})",
                sys::DPDK_VERSION
            ),
        })
    }

    /// `rte_fib_lookup_bulk` of one address: DPDK's own reading of the table.
    fn api_lookup(&self, addr: u32) -> u32 {
        let (mut addr, mut hop) = (addr, 0u64);
        // SAFETY: read-only lookup of one address (DPDK does not write
        // `addr`, its parameter is just not const); both pointers are valid.
        unsafe { sys::rte_fib_lookup_bulk(self.raw.as_ptr(), &mut addr, &mut hop, 1) };
        u32::try_from(hop).unwrap_or(u32::MAX)
    }
}

impl Drop for Lpm {
    fn drop(&mut self) {
        // SAFETY: we own the table; no reference to it outlives self.
        unsafe { sys::rte_fib_free(self.raw.as_ptr()) }
    }
}
