//! IPv4 longest-prefix-match table (`rte_lpm`, DIR-24-8): built by the control
//! plane at start, read by every worker (one bulk lookup per burst), and
//! changed at run time by its one writer ([`LpmWriter`]) while they read.
//!
//! `rte_lpm` lets one writer change the table under lock-free readers: each
//! tbl24/tbl8 entry is written with one atomic store, and `rte_lpm_add` on an
//! existing prefix overwrites its next hop in place (no miss in between). What
//! readers may still follow after a delete, a tbl8 group, is freed only after
//! a grace period of the QSBR variable attached with `rte_lpm_rcu_qsbr_add`.

use super::rcu::Qsbr;
use super::DpdkError;
use dpdk_sys as sys;
use std::ffi::CString;
use std::net::Ipv4Addr;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::Arc;

/// A next-hop value no route has: what [`Lpm::lookup_bulk`] stores on a miss.
pub const LPM_MISS: u32 = u32::MAX;

/// Largest next-hop value `rte_lpm` stores (24 bits).
pub const LPM_MAX_NEXT_HOP: u32 = (1 << 24) - 1;

/// A tbl24 entry's bits "valid" and "extended": its next hop is a tbl8
/// group's index.
const LPM_VALID_EXT: u32 = sys::RTE_LPM_VALID_EXT_ENTRY_BITMASK;

/// Entries of a tbl8 group.
const TBL8_GROUP_ENTRIES: usize = sys::RTE_LPM_TBL8_GROUP_NUM_ENTRIES as usize;

/// The next hop of a table entry from [`Lpm::entry`], or [`LPM_MISS`]: what
/// [`Lpm::lookup_bulk`] gives for the same address.
#[inline(always)]
pub const fn entry_next_hop(e: u32) -> u32 {
    if e & sys::RTE_LPM_LOOKUP_SUCCESS != 0 {
        e & LPM_MAX_NEXT_HOP
    } else {
        LPM_MISS
    }
}

/// An LPM table. Changes take `&mut self`; lookups take `&self`, so once it is
/// shared (`Arc<Lpm>`) only its [`LpmWriter`] changes it.
#[derive(Debug)]
pub struct Lpm {
    raw: NonNull<sys::rte_lpm>,
    rules: u32,
    /// The grace periods of its tbl8 groups, once shared with a writer.
    qsbr: Option<Arc<Qsbr>>,
}

// SAFETY: the handle points to DPDK-allocated tables; lookups only read them and
// changes need &mut self or the one LpmWriter, whose writes rte_lpm makes safe
// for concurrent lookups (atomic entry stores, RCU-deferred tbl8 frees).
unsafe impl Send for Lpm {}
// SAFETY: as above; rte_lpm lookups are safe to run concurrently.
unsafe impl Sync for Lpm {}

/// The one writer of a shared [`Lpm`]: adds (an existing prefix's next hop
/// is replaced in place) and deletes (the covering prefix takes over entry
/// by entry) while workers look up. Not `Clone`.
#[derive(Debug)]
pub struct LpmWriter {
    lpm: Arc<Lpm>,
}

impl LpmWriter {
    /// See [`Lpm::add`]; readers see each entry old or new, never torn.
    pub fn add(&mut self, prefix: Ipv4Addr, depth: u8, next_hop: u32) -> Result<(), DpdkError> {
        self.lpm.add_shared(prefix, depth, next_hop)
    }

    /// Delete `prefix/depth`; false when it was not in the table.
    pub fn delete(&mut self, prefix: Ipv4Addr, depth: u8) -> Result<bool, DpdkError> {
        if !(1..=32).contains(&depth) {
            return Ok(false);
        }
        // SAFETY: the only writer (self is unique); concurrent lookups are
        // what rte_lpm supports, with tbl8 groups freed after the QSBR grace
        // period attached in into_shared.
        let ret = unsafe { sys::rte_lpm_delete(self.lpm.raw.as_ptr(), u32::from(prefix), depth) };
        match ret {
            0 => Ok(true),
            r if r == -libc::EINVAL => Ok(false),
            r => Err(DpdkError::from_ret(
                format!("LPM delete {prefix}/{depth}"),
                r,
            )),
        }
    }

    /// The table, for lookups.
    pub fn table(&self) -> &Arc<Lpm> {
        &self.lpm
    }
}

impl Lpm {
    /// A table for up to `max_rules` prefixes and `tbl8s` groups for prefixes
    /// longer than /24, on `socket`. Its tbl24 takes 64 MiB of DPDK memory.
    pub fn new(name: &str, max_rules: u32, tbl8s: u32, socket: i32) -> Result<Lpm, DpdkError> {
        let cname = CString::new(name).map_err(|_| DpdkError {
            what: format!("LPM name {name:?}"),
            code: libc::EINVAL,
            reason: "contains a NUL byte".into(),
        })?;
        let cfg = sys::rte_lpm_config {
            max_rules,
            number_tbl8s: tbl8s,
            flags: 0,
        };
        // SAFETY: cname and cfg are valid for the call; DPDK copies what it keeps.
        let raw = unsafe { sys::rte_lpm_create(cname.as_ptr(), socket, &cfg) };
        let raw = NonNull::new(raw).ok_or_else(|| {
            DpdkError::from_rte_errno(format!(
                "creating LPM table {name:?} (64 MiB; with --no-huge give EAL -m 512 or more)"
            ))
        })?;
        Ok(Lpm {
            raw,
            rules: max_rules,
            qsbr: None,
        })
    }

    /// Share the table with workers and keep one writer: tbl8 groups a
    /// delete frees are reused only after `qsbr`'s grace period (defer-queue
    /// mode: the writer never waits for readers).
    pub fn into_shared(mut self, qsbr: Arc<Qsbr>) -> Result<(Arc<Lpm>, LpmWriter), DpdkError> {
        let mut cfg = sys::rte_lpm_rcu_config {
            v: qsbr.as_ptr(),
            mode: sys::RTE_LPM_QSBR_MODE_DQ,
            ..Default::default()
        };
        // SAFETY: self is unique (no reader yet); cfg is valid for the call
        // and qsbr outlives the table (kept in self.qsbr, dropped after it).
        let ret = unsafe { sys::rte_lpm_rcu_qsbr_add(self.raw.as_ptr(), &mut cfg) };
        if ret != 0 {
            return Err(DpdkError::from_rte_errno(
                "attaching RCU QSBR to the LPM table",
            ));
        }
        self.qsbr = Some(qsbr);
        let lpm = Arc::new(self);
        Ok((lpm.clone(), LpmWriter { lpm }))
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
                reason: "depth above 32 or next hop above 2^24 - 1".into(),
            });
        }
        // SAFETY: called with &mut self (no reader) or by the one LpmWriter,
        // whose adds rte_lpm makes safe under concurrent lookups; plain values.
        let ret =
            unsafe { sys::rte_lpm_add(self.raw.as_ptr(), u32::from(prefix), depth, next_hop) };
        if ret < 0 {
            return Err(DpdkError::from_ret(
                format!(
                    "LPM add {prefix}/{depth} (table holds {} rules)",
                    self.rules
                ),
                ret,
            ));
        }
        Ok(())
    }

    /// The next hop of the longest prefix holding `addr`.
    pub fn lookup(&self, addr: Ipv4Addr) -> Option<u32> {
        let mut hop = 0u32;
        // SAFETY: read-only lookup into the table; hop is a valid out-parameter.
        let ret = unsafe { sys::rte_lpm_lookup(self.raw.as_ptr(), u32::from(addr), &mut hop) };
        (ret == 0).then_some(hop)
    }

    /// The table entry of `addr` (host byte order), by `rte_lpm_lookup`'s
    /// own steps (a `static inline` in rte_lpm.h, here so that it is
    /// inlined in a burst loop: one tbl24 load, a tbl8 load for prefixes
    /// longer than /24). Its next hop is [`entry_next_hop`]'s; equal
    /// entries have equal next hops, so a burst compares entries and
    /// decodes one per run.
    #[inline(always)]
    pub fn entry(&self, addr: u32) -> u32 {
        let lpm = self.raw.as_ptr();
        // SAFETY: the table lives as long as self; tbl24 has 2^24 entries,
        // so `addr >> 8` is in bounds. Each entry is one u32 that the writer
        // changes with one atomic store (rte_lpm), read here as an atomic
        // (a plain load on x86), never through a reference to the array.
        let e = unsafe {
            let tbl24 = std::ptr::addr_of!((*lpm).tbl24).cast::<AtomicU32>();
            (*tbl24.add((addr >> 8) as usize)).load(Relaxed)
        };
        if e & LPM_VALID_EXT == LPM_VALID_EXT {
            self.tbl8_entry(e, addr)
        } else {
            e
        }
    }

    /// The tbl8 entry of `addr` whose tbl24 entry `e` points to a group.
    #[inline(never)]
    fn tbl8_entry(&self, e: u32, addr: u32) -> u32 {
        let at = (e & LPM_MAX_NEXT_HOP) as usize * TBL8_GROUP_ENTRIES + (addr & 0xff) as usize;
        // SAFETY: as in lookup_one: an extended entry holds the index of a
        // tbl8 group (256 entries) the table allocated, which a reader may
        // follow until the QSBR grace period after its delete; tbl8 is
        // set at creation and never moves.
        unsafe {
            let tbl8 = (*self.raw.as_ptr()).tbl8.cast::<AtomicU32>();
            (*tbl8.add(at)).load(Relaxed)
        }
    }

    /// Look up `addrs` (host byte order) in one call; `hops[i]` becomes the next
    /// hop of `addrs[i]`, or [`LPM_MISS`].
    #[inline(always)]
    pub fn lookup_bulk(&self, addrs: &[u32], hops: &mut [u32]) {
        let n = addrs.len().min(hops.len());
        if n == 0 {
            return;
        }
        // SAFETY: read-only lookup; both slices have at least n elements.
        unsafe {
            sys::rte_lpm_lookup_bulk_func(
                self.raw.as_ptr(),
                addrs.as_ptr(),
                hops.as_mut_ptr(),
                n as u32,
            )
        };
        for h in &mut hops[..n] {
            *h = if *h & sys::RTE_LPM_LOOKUP_SUCCESS != 0 {
                *h & LPM_MAX_NEXT_HOP
            } else {
                LPM_MISS
            };
        }
    }
}

impl Drop for Lpm {
    fn drop(&mut self) {
        // SAFETY: we own the table; no reference to it outlives self. The
        // QSBR variable (self.qsbr) is dropped after this, as rte_lpm_free
        // still uses it for the defer queue.
        unsafe { sys::rte_lpm_free(self.raw.as_ptr()) }
    }
}
