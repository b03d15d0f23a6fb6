//! The packet pool: how many mbufs a run needs, and the pool itself.

use crate::dpdk::{DpdkError, Eal, Mempool, BURST_SIZE};

/// Mbufs per lcore cache, as in DPDK's examples.
pub const MEMPOOL_CACHE: u32 = 256;

/// Pool size that covers every RX and TX ring (`rxq` and `txq` queues of
/// `rx_desc` and `tx_desc` descriptors on each of `ports`), a burst and a
/// cache per lcore, with headroom; rounded to 2^n - 1 (the ring-friendly
/// size DPDK recommends).
pub fn default_pool_size(
    ports: usize,
    rxq: usize,
    txq: usize,
    rx_desc: u16,
    tx_desc: u16,
    lcores: usize,
) -> u32 {
    let need = ports * rxq * usize::from(rx_desc)
        + ports * txq * usize::from(tx_desc)
        + ports * lcores * BURST_SIZE
        + lcores * MEMPOOL_CACHE as usize;
    let n = (need * 2).max(8192).next_power_of_two() - 1;
    n as u32
}

/// The run's one packet pool, `size` mbufs on EAL's socket.
pub fn create_pool(eal: &Eal, size: u32) -> Result<Mempool, DpdkError> {
    Mempool::new("mbuf_pool", size, MEMPOOL_CACHE, eal.socket_id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_size_covers_the_rings_and_is_two_to_the_n_minus_one() {
        let n = default_pool_size(2, 1, 1, 1024, 1024, 2);
        assert!((n as usize) >= 2 * 1024 + 2 * 1024, "{n}");
        assert!((n + 1).is_power_of_two(), "{n}");
        // Never below the floor, even for one tiny port.
        assert_eq!(default_pool_size(1, 1, 1, 64, 64, 1), 8191);
    }
}
