//! IPv4 longest-prefix-match table (`rte_lpm`, DIR-24-8): built by the control
//! plane at start, then only read, by every worker, one bulk lookup per burst.

use super::DpdkError;
use dpdk_sys as sys;
use std::ffi::CString;
use std::net::Ipv4Addr;
use std::ptr::NonNull;

/// A next-hop value no route has: what [`Lpm::lookup_bulk`] stores on a miss.
pub const LPM_MISS: u32 = u32::MAX;

/// Largest next-hop value `rte_lpm` stores (24 bits).
pub const LPM_MAX_NEXT_HOP: u32 = (1 << 24) - 1;

/// An LPM table. Changes take `&mut self`; lookups take `&self`, so once it is
/// shared (`Arc<Lpm>`) it is read-only and lock-free for every lcore.
#[derive(Debug)]
pub struct Lpm {
    raw: NonNull<sys::rte_lpm>,
    rules: u32,
}

// SAFETY: the handle points to DPDK-allocated tables; lookups only read them and
// changes need &mut self, so sharing &Lpm across lcores never races a write.
unsafe impl Send for Lpm {}
// SAFETY: as above; rte_lpm lookups are safe to run concurrently.
unsafe impl Sync for Lpm {}

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
        })
    }

    /// Add `prefix/depth` with `next_hop` (at most [`LPM_MAX_NEXT_HOP`]);
    /// replaces the next hop of an existing identical prefix.
    pub fn add(&mut self, prefix: Ipv4Addr, depth: u8, next_hop: u32) -> Result<(), DpdkError> {
        if depth > 32 || next_hop > LPM_MAX_NEXT_HOP {
            return Err(DpdkError {
                what: format!("LPM add {prefix}/{depth} -> {next_hop}"),
                code: libc::EINVAL,
                reason: "depth above 32 or next hop above 2^24 - 1".into(),
            });
        }
        // SAFETY: &mut self: no lookup runs concurrently; arguments are plain values.
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
        // SAFETY: we own the table; no reference to it outlives self.
        unsafe { sys::rte_lpm_free(self.raw.as_ptr()) }
    }
}
