//! An owned packet buffer. Per-packet work reads the mbuf's fields here, in
//! Rust: nothing on the per-packet path crosses the FFI boundary.

use super::Mempool;
use dpdk_sys as sys;
use hooks::PacketMeta;
use std::ptr::NonNull;

/// An owned single reference to an mbuf. Dropping it frees the mbuf.
///
/// Invariant: the mbuf comes from a [`Mempool`] of ours (directly, or from an RX
/// queue set up with one), so its private area holds a [`PacketMeta`].
#[repr(transparent)]
#[derive(Debug)]
pub struct Mbuf(NonNull<sys::rte_mbuf>);

// SAFETY: an mbuf we own is referenced by no one else; handing it to another
// lcore (through a ring) moves that ownership, as DPDK applications do.
unsafe impl Send for Mbuf {}

impl Mbuf {
    /// Allocate a packet mbuf from `pool` (data empty, metadata zeroed), or `None`
    /// when the pool is exhausted.
    pub fn alloc(pool: &Mempool) -> Option<Mbuf> {
        // SAFETY: the pool is alive for the call; the result is either NULL or
        // a fresh mbuf with refcnt 1 that we now own.
        let raw = unsafe { sys::rte_pktmbuf_alloc(pool.as_ptr()) };
        let mut m = Mbuf(NonNull::new(raw)?);
        *m.meta_mut() = PacketMeta::default();
        Some(m)
    }

    /// Take ownership of a raw mbuf.
    ///
    /// # Safety
    /// `raw` is a valid mbuf from one of our pools that the caller owns and does
    /// not use afterwards.
    #[inline(always)]
    pub(crate) unsafe fn from_raw(raw: NonNull<sys::rte_mbuf>) -> Mbuf {
        Mbuf(raw)
    }

    /// Give up ownership, returning the raw pointer (for `tx_burst`, rings).
    #[inline(always)]
    pub(crate) fn into_raw(self) -> *mut sys::rte_mbuf {
        let p = self.0.as_ptr();
        std::mem::forget(self);
        p
    }

    #[inline(always)]
    fn raw(&self) -> &sys::rte_mbuf {
        // SAFETY: we own a valid mbuf (type invariant) and hand out a shared
        // reference tied to &self.
        unsafe { self.0.as_ref() }
    }

    /// Bytes of the first segment (the whole frame for single-segment mbufs).
    #[inline(always)]
    pub fn data(&self) -> &[u8] {
        let m = self.raw();
        // SAFETY: buf_addr + data_off .. + data_len lies inside the mbuf's data
        // buffer, which we own for the lifetime of &self.
        unsafe {
            std::slice::from_raw_parts(
                (m.buf_addr as *const u8).add(m.data_off as usize),
                m.data_len as usize,
            )
        }
    }

    /// Start loading the first cache line of the frame (a hint, see
    /// [`prefetch`](super::prefetch)): a stage asks for the packets a few
    /// places ahead of the one it works on.
    #[inline(always)]
    pub fn prefetch_data(&self) {
        let m = self.raw();
        super::prefetch((m.buf_addr as *const u8).wrapping_add(usize::from(m.data_off)));
    }

    /// Mutable bytes of the first segment.
    #[inline(always)]
    pub fn data_mut(&mut self) -> &mut [u8] {
        let m = self.raw();
        let (ptr, len) = (
            // SAFETY: as in `data`; &mut self gives exclusive access.
            unsafe { (m.buf_addr as *mut u8).add(m.data_off as usize) },
            m.data_len as usize,
        );
        // SAFETY: see above: in bounds, exclusively ours for the borrow.
        unsafe { std::slice::from_raw_parts_mut(ptr, len) }
    }

    /// Append `bytes` to a single-segment mbuf; false if the tailroom is short.
    pub fn append(&mut self, bytes: &[u8]) -> bool {
        let Ok(len) = u16::try_from(bytes.len()) else {
            return false;
        };
        // SAFETY: we own the mbuf; rte_pktmbuf_append returns NULL or a pointer
        // to `len` writable bytes inside its buffer.
        let dst = unsafe { sys::rte_pktmbuf_append(self.0.as_ptr(), len) };
        if dst.is_null() {
            return false;
        }
        // SAFETY: dst points to bytes.len() writable bytes that do not overlap `bytes`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst as *mut u8, bytes.len()) };
        true
    }

    /// Remove `n` bytes from the front of a single-segment packet (e.g. the
    /// VLAN tags before re-writing an untagged Ethernet header); false, and no
    /// change, if it is multi-segment or shorter. Done here, not through the
    /// `rte_pktmbuf_adj` shim: it runs per routed packet, usually with n = 0.
    #[inline(always)]
    pub fn adj(&mut self, n: u16) -> bool {
        if n == 0 {
            return true;
        }
        // SAFETY: we own the mbuf exclusively; data_off grows by at most
        // data_len, so the data stays inside the buffer.
        let m = unsafe { self.0.as_mut() };
        if m.nb_segs != 1 || m.data_len < n {
            return false;
        }
        m.data_off += n;
        m.data_len -= n;
        m.pkt_len -= u32::from(n);
        true
    }

    /// Cut a single-segment packet to `len` bytes (e.g. Ethernet padding after
    /// the IP total length); false, and no change, if it is multi-segment or
    /// shorter than `len`.
    #[inline(always)]
    pub fn trim_to(&mut self, len: u16) -> bool {
        // SAFETY: we own the mbuf exclusively; only the length fields of a single
        // segment change, and only downwards, so data stays inside the buffer.
        let m = unsafe { self.0.as_mut() };
        if m.nb_segs != 1 || m.data_len < len {
            return false;
        }
        m.data_len = len;
        m.pkt_len = u32::from(len);
        true
    }

    /// The frame's Ethernet header bytes (the first 14 of the data), where
    /// neighbour output writes; `None` for a shorter first segment.
    #[inline(always)]
    pub fn eth_header_mut(&mut self) -> Option<&mut [u8; 14]> {
        self.data_mut().first_chunk_mut()
    }

    /// Pad a single-segment packet with zero bytes up to `len` (what a NIC
    /// does on the wire for frames under 60 bytes); false, and no change, if
    /// it is multi-segment, needs more than 64 bytes, or has no tailroom.
    pub fn pad_to(&mut self, len: usize) -> bool {
        let have = self.data().len();
        if have >= len {
            return true;
        }
        self.nb_segs() == 1 && len - have <= 64 && self.append(&[0u8; 64][..len - have])
    }

    /// Length of the whole packet over every segment.
    #[inline(always)]
    pub fn pkt_len(&self) -> u32 {
        self.raw().pkt_len
    }

    /// Number of segments.
    #[inline(always)]
    pub fn nb_segs(&self) -> u16 {
        self.raw().nb_segs
    }

    /// Input port as the driver set it.
    #[inline(always)]
    pub fn port(&self) -> u16 {
        self.raw().port
    }

    /// Offload flags (`RTE_MBUF_F_*`).
    #[inline(always)]
    pub fn ol_flags(&self) -> u64 {
        self.raw().ol_flags
    }

    /// What the NIC says of the IPv4 header checksum: `Some(true)` verified
    /// good (or not verified but the header's integrity is: `CKSUM_NONE`),
    /// `Some(false)` verified bad, `None` not checked.
    #[inline(always)]
    pub fn rx_ip_checksum(&self) -> Option<bool> {
        match self.raw().ol_flags & u64::from(sys::RTE_MBUF_F_RX_IP_CKSUM_MASK) {
            f if f == u64::from(sys::RTE_MBUF_F_RX_IP_CKSUM_GOOD) => Some(true),
            f if f == u64::from(sys::RTE_MBUF_F_RX_IP_CKSUM_NONE) => Some(true),
            f if f == u64::from(sys::RTE_MBUF_F_RX_IP_CKSUM_BAD) => Some(false),
            _ => None,
        }
    }

    /// The NIC's RSS hash of the packet's flow, when it gave one
    /// (`RTE_MBUF_F_RX_RSS_HASH`).
    #[inline(always)]
    pub fn rss_hash(&self) -> Option<u32> {
        let raw = self.raw();
        if raw.ol_flags & u64::from(sys::RTE_MBUF_F_RX_RSS_HASH) == 0 {
            return None;
        }
        // SAFETY: every member of the hash union is plain integers; with the
        // RSS flag set, the driver wrote `rss`.
        Some(unsafe { raw.__bindgen_anon_2.hash.rss })
    }

    /// The packet's metadata in the private area.
    #[inline(always)]
    pub fn meta(&self) -> &PacketMeta {
        // SAFETY: by the type invariant the private area right after the
        // rte_mbuf header holds at least PacketMeta::SIZE bytes, 8-byte aligned
        // (mbufs are cache-line aligned, sizeof(rte_mbuf) is 128). The bytes are
        // a valid PacketMeta: rte_pktmbuf_init zeroes the private area when the
        // pool is created (zero is a valid PacketMeta) and afterwards only this
        // type writes there, always through PacketMeta values.
        unsafe { &*(self.0.as_ptr().add(1) as *const PacketMeta) }
    }

    /// Mutable metadata in the private area.
    #[inline(always)]
    pub fn meta_mut(&mut self) -> &mut PacketMeta {
        // SAFETY: as in `meta`; &mut self gives exclusive access.
        unsafe { &mut *(self.0.as_ptr().add(1) as *mut PacketMeta) }
    }
}

impl Drop for Mbuf {
    fn drop(&mut self) {
        // SAFETY: we own this reference to the mbuf and never use it again.
        unsafe { sys::rte_pktmbuf_free(self.0.as_ptr()) }
    }
}

/// An mbuf a hook stole: the hook owns it now; dropping it frees it.
impl hooks::OwnedPacket for Mbuf {
    fn data(&self) -> &[u8] {
        Mbuf::data(self)
    }
    fn data_mut(&mut self) -> &mut [u8] {
        Mbuf::data_mut(self)
    }
    fn meta(&self) -> &PacketMeta {
        Mbuf::meta(self)
    }
}
