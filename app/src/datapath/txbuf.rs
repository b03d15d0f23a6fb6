//! Per-port TX buffer of one worker: packets routed to a port collect here
//! and leave in one `tx_burst` when the buffer is full or the burst is done.

use crate::capture::{DropSite, Stage, Tap};
use crate::counters::LcoreCounters;
use crate::dpdk::{Mbuf, MbufBurst, TxQueue};
use hooks::DropReason;
use std::sync::Arc;

/// A TX queue and the packets waiting for it.
pub struct TxBuffer {
    queue: TxQueue,
    pending: MbufBurst,
    /// The worker's drop capture, for what the driver refuses.
    capture: Arc<Tap>,
}

impl TxBuffer {
    pub fn new(queue: TxQueue, capture: Arc<Tap>) -> Self {
        TxBuffer {
            queue,
            pending: MbufBurst::new(),
            capture,
        }
    }

    /// Port id of the queue.
    #[inline(always)]
    pub fn port(&self) -> u16 {
        self.queue.port()
    }

    /// Queue a packet; sends the buffer first when it is full.
    #[inline(always)]
    pub fn push(&mut self, m: Mbuf, counters: &LcoreCounters) {
        if self.pending.is_full() {
            self.flush(counters);
        }
        // Cannot fail: the buffer has room after a flush.
        let _ = self.pending.push(m);
    }

    /// Send a whole burst routed to this port (the common case: one output
    /// port for every packet of the burst): what is buffered goes first, then
    /// the burst in one `tx_burst`, without copying it into the buffer.
    #[inline(always)]
    pub fn send_burst(&mut self, burst: &mut MbufBurst, counters: &LcoreCounters) {
        self.flush(counters);
        send_on(&mut self.queue, burst, counters, &self.capture);
    }

    /// Send what is buffered; what the driver refuses is freed and counted.
    #[inline(always)]
    pub fn flush(&mut self, counters: &LcoreCounters) {
        if self.pending.is_empty() {
            return;
        }
        send_on(&mut self.queue, &mut self.pending, counters, &self.capture);
    }
}

/// One `tx_burst` of `burst` on `queue`, counted: sent, or freed as
/// `tx_queue_full`.
#[inline(always)]
fn send_on(queue: &mut TxQueue, burst: &mut MbufBurst, counters: &LcoreCounters, tap: &Tap) {
    let port = queue.port();
    let out = queue.tx_burst_inspect(burst, |refused| capture_refused(tap, port, refused));
    counters.tx(queue.port(), out.sent as u64);
    if out.dropped != 0 {
        counters.dropped(queue.port(), DropReason::TxQueueFull, out.dropped as u64);
    }
}

/// Hand what the driver of `port` refused to a running drop capture (the
/// input port is the mbuf's: none for what the control plane made).
#[cold]
fn capture_refused(tap: &Tap, port: u16, refused: &[Mbuf]) {
    if !tap.on() {
        return;
    }
    for m in refused {
        let at = DropSite::new(DropReason::TxQueueFull, Stage::Tx, m.port()).to_port(port);
        tap.capture(m.data(), at);
    }
}
