//! A burst of mbufs in a fixed array: no heap allocation per burst.

use super::{Mbuf, Mempool};
use dpdk_sys as sys;

/// Packets per burst, as in DPDK's examples and testpmd.
pub const BURST_SIZE: usize = 32;

/// Up to [`BURST_SIZE`] owned mbufs. Slots `0..len` hold valid mbufs that the
/// burst owns; dropping or clearing the burst frees them in one bulk call.
pub struct MbufBurst {
    slots: [*mut sys::rte_mbuf; BURST_SIZE],
    len: usize,
}

// SAFETY: the burst owns its mbufs exclusively (as Mbuf does), so moving it to
// another lcore moves that ownership.
unsafe impl Send for MbufBurst {}

impl Default for MbufBurst {
    fn default() -> Self {
        Self::new()
    }
}

impl MbufBurst {
    /// An empty burst.
    #[inline(always)]
    pub const fn new() -> Self {
        MbufBurst {
            slots: [std::ptr::null_mut(); BURST_SIZE],
            len: 0,
        }
    }

    /// Number of mbufs held.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when it holds no mbuf.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True when no more mbufs fit.
    #[inline(always)]
    pub fn is_full(&self) -> bool {
        self.len == BURST_SIZE
    }

    /// The held mbufs.
    #[inline(always)]
    pub fn as_slice(&self) -> &[Mbuf] {
        // SAFETY: Mbuf is repr(transparent) over NonNull<rte_mbuf>, which has the
        // layout of *mut rte_mbuf; slots 0..len are non-null mbufs we own.
        unsafe { std::slice::from_raw_parts(self.slots.as_ptr() as *const Mbuf, self.len) }
    }

    /// The held mbufs, mutably.
    #[inline(always)]
    pub fn as_mut_slice(&mut self) -> &mut [Mbuf] {
        // SAFETY: as in as_slice; &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.slots.as_mut_ptr() as *mut Mbuf, self.len) }
    }

    /// Add an mbuf; gives it back when the burst is full.
    #[inline(always)]
    pub fn push(&mut self, m: Mbuf) -> Result<(), Mbuf> {
        if self.len == BURST_SIZE {
            return Err(m);
        }
        self.slots[self.len] = m.into_raw();
        self.len += 1;
        Ok(())
    }

    /// Remove and return the last mbuf.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<Mbuf> {
        if self.len == 0 {
            return None;
        }
        self.len -= 1;
        let p = self.slots[self.len];
        // SAFETY: slot len (old len - 1) held an mbuf we own; it is no longer
        // counted as held, so ownership moves to the returned Mbuf.
        Some(unsafe { Mbuf::from_raw(std::ptr::NonNull::new_unchecked(p)) })
    }

    /// Take every held mbuf out, in order; the burst is empty afterwards. The
    /// mbufs the iterator has not yielded when dropped are freed in bulk.
    #[inline(always)]
    pub fn drain(&mut self) -> Drain<'_> {
        let end = self.len;
        self.len = 0;
        Drain {
            slots: &mut self.slots,
            next: 0,
            end,
        }
    }

    /// Free every held mbuf (one `rte_pktmbuf_free_bulk`) and return how many.
    #[inline]
    pub fn free_all(&mut self) -> usize {
        self.free_from(0)
    }

    /// Free the mbufs in slots `from..len`, keep `0..from`; returns how many freed.
    #[inline]
    pub(crate) fn free_from(&mut self, from: usize) -> usize {
        let n = self.len.saturating_sub(from);
        if n > 0 {
            // SAFETY: slots from..len are mbufs we own; after the call they are
            // forgotten (len shrinks), so none is freed twice.
            unsafe { sys::rte_pktmbuf_free_bulk(self.slots.as_mut_ptr().add(from), n as u32) };
            self.len = from;
        }
        n
    }

    /// Add `n` fresh mbufs from `pool` in one `rte_pktmbuf_alloc_bulk`: all
    /// of them, or none (false) when the pool has fewer free or they do not fit.
    pub fn alloc_bulk(&mut self, pool: &Mempool, n: usize) -> bool {
        if n == 0 {
            return true;
        }
        if n > BURST_SIZE - self.len {
            return false;
        }
        // SAFETY: slots len..len+n are free; on success DPDK writes n fresh
        // mbufs (refcnt 1, ours) there, on failure it writes nothing. Their
        // private areas hold valid PacketMeta values (the Mbuf invariant: zeroed
        // at pool creation, only ever written as PacketMeta).
        let ret = unsafe {
            sys::rte_pktmbuf_alloc_bulk(
                pool.as_ptr(),
                self.slots.as_mut_ptr().add(self.len),
                n as u32,
            )
        };
        if ret != 0 {
            return false;
        }
        self.len += n;
        true
    }

    /// Split off the first `k` mbufs (all of them if `k` is more) as a burst
    /// of their own, in order; this burst keeps the rest, in order.
    #[inline(always)]
    pub fn split_front(&mut self, k: usize) -> MbufBurst {
        let k = k.min(self.len);
        let mut head = MbufBurst::new();
        head.slots[..k].copy_from_slice(&self.slots[..k]);
        head.len = k;
        // Ownership of slots 0..k moved to `head`: they are forgotten here.
        self.slots.copy_within(k..self.len, 0);
        self.len -= k;
        head
    }

    /// Move the mbufs in slots `from..len` to the front and forget the others
    /// (which the caller handed to a driver).
    ///
    /// # Safety
    /// Slots `0..from` no longer belong to this burst.
    #[inline(always)]
    pub(crate) unsafe fn keep_from(&mut self, from: usize) {
        let from = from.min(self.len);
        self.slots.copy_within(from..self.len, 0);
        self.len -= from;
    }

    /// Raw slot array and a setter for the held count: for rx/tx bursts only.
    #[inline(always)]
    pub(crate) fn raw_slots(&mut self) -> &mut [*mut sys::rte_mbuf; BURST_SIZE] {
        &mut self.slots
    }

    /// Set the held count after DPDK filled slots `len..new_len`.
    ///
    /// # Safety
    /// Slots `0..new_len` hold valid mbufs owned by this burst.
    #[inline(always)]
    pub(crate) unsafe fn set_len(&mut self, new_len: usize) {
        debug_assert!(new_len <= BURST_SIZE);
        self.len = new_len;
    }
}

/// In-order iterator over the mbufs taken out of a burst ([`MbufBurst::drain`]).
pub struct Drain<'a> {
    slots: &'a mut [*mut sys::rte_mbuf; BURST_SIZE],
    next: usize,
    end: usize,
}

impl Iterator for Drain<'_> {
    type Item = Mbuf;

    #[inline(always)]
    fn next(&mut self) -> Option<Mbuf> {
        if self.next == self.end {
            return None;
        }
        let p = self.slots[self.next];
        self.next += 1;
        // SAFETY: slots next..end held mbufs the burst owned; the burst no
        // longer counts them (len was set to 0), so each is yielded exactly once.
        Some(unsafe { Mbuf::from_raw(std::ptr::NonNull::new_unchecked(p)) })
    }
}

impl Drop for Drain<'_> {
    fn drop(&mut self) {
        let n = self.end - self.next;
        if n > 0 {
            // SAFETY: slots next..end are mbufs not yet yielded, owned by us.
            unsafe { sys::rte_pktmbuf_free_bulk(self.slots.as_mut_ptr().add(self.next), n as u32) };
        }
    }
}

impl Drop for MbufBurst {
    fn drop(&mut self) {
        self.free_all();
    }
}

impl std::fmt::Debug for MbufBurst {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MbufBurst").field("len", &self.len).finish()
    }
}
