//! The RX queues' drain at the end of a run.

use crate::counters::LcoreCounters;
use crate::dpdk::{MbufBurst, RxQueue};
use hooks::DropReason;

/// Shutdown drain, run by the main lcore once every worker has stopped: empty
/// each RX queue (mbufs still sitting in a device's ring, e.g. a `net_ring`
/// looping our own TX back, would otherwise never return to the pool), at most
/// `budget` packets per queue so an endless source (`infinite_rx`) cannot keep
/// it going. Drained packets count as received and dropped for `shutdown_drain`.
#[cold]
pub fn drain_rx(queues: &mut [RxQueue], budget: u64, counters: &LcoreCounters) -> u64 {
    let mut burst = MbufBurst::new();
    let mut total = 0;
    for q in queues.iter_mut() {
        let mut drained = 0;
        while drained < budget {
            let n = q.rx_burst(&mut burst) as u64;
            if n == 0 {
                break;
            }
            burst.free_all();
            counters.rx(q.port(), n);
            counters.dropped(q.port(), DropReason::ShutdownDrain, n);
            drained += n;
        }
        total += drained;
    }
    total
}
