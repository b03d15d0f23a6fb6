//! Packet-buffer pools (`rte_pktmbuf_pool_create`), each mbuf with a private area
//! that holds the packet's [`PacketMeta`].

use super::DpdkError;
use dpdk_sys as sys;
use hooks::PacketMeta;
use std::ffi::CString;
use std::ptr::NonNull;

/// A pool of packet buffers. Every mbuf in it has room for a [`PacketMeta`] in
/// its private area; the DPDK layer relies on that for [`super::Mbuf::meta`].
#[derive(Debug)]
pub struct Mempool {
    raw: NonNull<sys::rte_mempool>,
    name: String,
    size: u32,
}

// SAFETY: a DPDK mempool is designed for concurrent use from every lcore (its
// ring is multi-producer / multi-consumer and caches are per lcore); the handle
// is only a pointer to it.
unsafe impl Send for Mempool {}
// SAFETY: as above: every operation exposed takes &self and is thread-safe in DPDK.
unsafe impl Sync for Mempool {}

/// Private area size per mbuf: the metadata, rounded up to DPDK's alignment.
const PRIV_SIZE: u16 = {
    let align = sys::RTE_MBUF_PRIV_ALIGN as usize;
    (PacketMeta::SIZE.div_ceil(align) * align) as u16
};

impl Mempool {
    /// Create a pool of `size` mbufs with a per-lcore cache of `cache` mbufs and
    /// the default data room (2048 bytes + headroom), on `socket`.
    pub fn new(name: &str, size: u32, cache: u32, socket: i32) -> Result<Mempool, DpdkError> {
        let cname = CString::new(name).map_err(|_| DpdkError {
            what: format!("mempool name {name:?}"),
            code: libc::EINVAL,
            reason: "contains a NUL byte".into(),
        })?;
        // SAFETY: cname is a valid C string for the call; DPDK copies it. The
        // sizes are plain integers that DPDK validates itself.
        let raw = unsafe {
            sys::rte_pktmbuf_pool_create(
                cname.as_ptr(),
                size,
                cache,
                PRIV_SIZE,
                sys::RTE_MBUF_DEFAULT_BUF_SIZE as u16,
                socket,
            )
        };
        let raw = NonNull::new(raw).ok_or_else(|| {
            DpdkError::from_rte_errno(format!(
                "creating mbuf pool {name:?} of {size} mbufs (with --no-huge, give EAL more memory with -m)"
            ))
        })?;
        Ok(Mempool {
            raw,
            name: name.to_string(),
            size,
        })
    }

    /// The raw pool, for the DPDK layer (queue set-up, allocation).
    pub(crate) fn as_ptr(&self) -> *mut sys::rte_mempool {
        self.raw.as_ptr()
    }

    /// Pool name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Number of mbufs the pool was created with.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// Mbufs free in the pool, including the per-lcore caches.
    pub fn available(&self) -> u32 {
        // SAFETY: the pool is alive (owned by self); the count is a racy but
        // memory-safe read that DPDK documents for use at any time.
        unsafe { sys::rte_mempool_avail_count(self.raw.as_ptr()) }
    }

    /// Mbufs taken from the pool and not yet returned. Exact only when no lcore
    /// is using the pool.
    pub fn in_use(&self) -> u32 {
        self.size.saturating_sub(self.available())
    }

    /// Free the pool if every mbuf is back. Otherwise the pool is leaked on
    /// purpose (freeing it under live mbufs would be a use after free) and the
    /// count of missing mbufs is returned as the error.
    pub fn free(self) -> Result<(), u32> {
        match self.in_use() {
            0 => Ok(()), // Drop frees a whole pool.
            missing => {
                std::mem::forget(self);
                Err(missing)
            }
        }
    }
}

impl Drop for Mempool {
    fn drop(&mut self) {
        // Only a whole pool is freed: one with mbufs out (a panic path, or
        // `free` refusing) is left for the process exit to reclaim.
        if self.in_use() == 0 {
            // SAFETY: every mbuf is back in the pool and this handle is the last.
            unsafe { sys::rte_mempool_free(self.raw.as_ptr()) };
        }
    }
}
