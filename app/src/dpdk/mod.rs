//! The safe DPDK layer: the only code above `dpdk-sys` that uses `unsafe`.
//! Everything the pipeline needs from DPDK goes through these types.

pub mod acl;
pub mod burst;
pub mod eal;
pub mod error;
pub mod lcore;
pub mod lpm;
pub mod lpm6;
pub mod mbuf;
pub mod mempool;
pub mod pdump;
pub mod pmdinfo;
pub mod port;
pub mod rcu;
pub mod ring;
pub mod telemetry;
pub mod telemetry_client;

pub use acl::{AclBuilder, AclClassifier};
pub use burst::{Drain, MbufBurst, BURST_SIZE};
pub use eal::Eal;
pub use error::DpdkError;
pub use lpm::{Lpm, LpmWriter, GRACE_WAIT, LPM_MISS};
pub use lpm6::{Lpm6, Lpm6Change, Lpm6Pair, Lpm6Writer, LPM6_MISS, STANDBY_WAIT};
pub use mbuf::Mbuf;
pub use mempool::Mempool;
pub use port::{link_up, Port, PortConfig, PortStats, RssKey, RxQueue, RxSpread, TxQueue};
pub use rcu::{Qsbr, QsbrReader};
pub use ring::{mbuf_ring, RingConsumer, RingProducer};

use dpdk_sys as sys;

/// TSC cycles since an arbitrary start (`rte_rdtsc`).
#[inline(always)]
pub fn tsc() -> u64 {
    // SAFETY: reads the time-stamp counter; no memory is touched.
    unsafe { sys::rte_rdtsc() }
}

/// TSC frequency in Hz, as EAL measured it at start.
pub fn tsc_hz() -> u64 {
    // SAFETY: a plain getter of a value EAL set during init.
    unsafe { sys::rte_get_tsc_hz() }
}

/// Start loading the cache line at `p` into every cache level
/// (`rte_prefetch0`: `prefetcht0`). A hint: it never faults, whatever `p`
/// is, and changes nothing a program can observe but timing.
#[inline(always)]
pub fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` is a hint that never faults and writes nothing,
    // for any address (valid, dangling or null).
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(p.cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}
