//! Single-producer single-consumer rings of mbufs (`rte_ring` with
//! `RING_F_SP_ENQ | RING_F_SC_DEQ`): how workers punt packets to the control
//! lcore and how the control lcore injects packets into a worker's TX path.
//! Neither side ever waits: a full ring refuses, an empty one returns nothing.

use super::{DpdkError, Mbuf, MbufBurst, BURST_SIZE};
use dpdk_sys as sys;
use std::ffi::CString;
use std::ptr::NonNull;
use std::sync::Arc;

struct RingInner {
    raw: NonNull<sys::rte_ring>,
}

// SAFETY: the ring is shared by exactly one producer and one consumer handle;
// each side's operations touch only its own head/tail (SP/SC ring).
unsafe impl Send for RingInner {}
// SAFETY: as above: the producer and consumer halves never race on the same side.
unsafe impl Sync for RingInner {}

impl Drop for RingInner {
    fn drop(&mut self) {
        // Both halves are gone: free whatever mbufs are still in the ring.
        let mut burst = MbufBurst::new();
        loop {
            let slots = burst.raw_slots();
            // SAFETY: no producer or consumer is left; slots has room for
            // BURST_SIZE pointers; the mbufs dequeued become the burst's.
            let n = unsafe {
                sys::rte_ring_sc_dequeue_burst(
                    self.raw.as_ptr(),
                    slots.as_mut_ptr() as *mut *mut std::ffi::c_void,
                    BURST_SIZE as u32,
                    std::ptr::null_mut(),
                )
            } as usize;
            if n == 0 {
                break;
            }
            // SAFETY: slots 0..n now hold mbufs this burst owns.
            unsafe { burst.set_len(n) };
            burst.free_all();
        }
        // SAFETY: the ring is empty and nobody references it any more.
        unsafe { sys::rte_ring_free(self.raw.as_ptr()) }
    }
}

/// The enqueue side. Not `Clone`: one producer.
pub struct RingProducer(Arc<RingInner>);
/// The dequeue side. Not `Clone`: one consumer.
pub struct RingConsumer(Arc<RingInner>);

/// Create a ring of `count` slots (a power of two; it holds `count - 1` mbufs).
pub fn mbuf_ring(
    name: &str,
    count: u32,
    socket: i32,
) -> Result<(RingProducer, RingConsumer), DpdkError> {
    let cname = CString::new(name).map_err(|_| DpdkError {
        what: format!("ring name {name:?}"),
        code: libc::EINVAL,
        reason: "contains a NUL byte".into(),
    })?;
    // SAFETY: cname is valid for the call; DPDK copies the name.
    let raw = unsafe {
        sys::rte_ring_create(
            cname.as_ptr(),
            count,
            socket,
            sys::RING_F_SP_ENQ | sys::RING_F_SC_DEQ,
        )
    };
    let raw = NonNull::new(raw)
        .ok_or_else(|| DpdkError::from_rte_errno(format!("creating ring {name:?} of {count}")))?;
    let inner = Arc::new(RingInner { raw });
    Ok((RingProducer(inner.clone()), RingConsumer(inner)))
}

impl RingProducer {
    /// Enqueue the whole burst; what does not fit stays in `burst` (from slot 0),
    /// for the caller to free and count. Returns how many went in.
    #[inline(always)]
    pub fn enqueue_burst(&mut self, burst: &mut MbufBurst) -> usize {
        let n = burst.len();
        if n == 0 {
            return 0;
        }
        let slots = burst.raw_slots();
        // SAFETY: slots 0..n hold mbufs we own; the ring takes the first `sent`,
        // which then belong to the consumer. Only this handle enqueues.
        let sent = unsafe {
            sys::rte_ring_sp_enqueue_burst(
                self.0.raw.as_ptr(),
                slots.as_ptr() as *const *mut std::ffi::c_void,
                n as u32,
                std::ptr::null_mut(),
            )
        } as usize;
        // Keep the refused ones, moved to the front.
        slots.copy_within(sent..n, 0);
        // SAFETY: slots 0..n-sent hold the refused mbufs, still ours.
        unsafe { burst.set_len(n - sent) };
        sent
    }

    /// Enqueue one mbuf, or get it back when the ring is full.
    pub fn enqueue(&mut self, m: Mbuf) -> Result<(), Mbuf> {
        let mut b = MbufBurst::new();
        let _ = b.push(m);
        if self.enqueue_burst(&mut b) == 1 {
            Ok(())
        } else {
            Err(b.pop().expect("the refused mbuf"))
        }
    }
}

impl RingConsumer {
    /// Dequeue into the free slots of `burst`; returns how many arrived.
    #[inline(always)]
    pub fn dequeue_burst(&mut self, burst: &mut MbufBurst) -> usize {
        let len = burst.len();
        let room = (BURST_SIZE - len) as u32;
        let slots = burst.raw_slots();
        // SAFETY: slots len.. are free; the ring writes at most `room` pointers
        // there, mbufs that the producer gave up. Only this handle dequeues.
        let n = unsafe {
            sys::rte_ring_sc_dequeue_burst(
                self.0.raw.as_ptr(),
                slots.as_mut_ptr().add(len) as *mut *mut std::ffi::c_void,
                room,
                std::ptr::null_mut(),
            )
        } as usize;
        // SAFETY: slots 0..len+n now hold mbufs the burst owns.
        unsafe { burst.set_len(len + n) };
        n
    }
}
