//! Packet capture by a secondary process: `rte_pdump_init` lets the stock
//! `dpdk-dumpcap` (or `dpdk-pdump`) attach to this primary and capture its
//! ports' packets, where the PMD and the memory setup allow it (the
//! secondary must map the primary's memory: hugepages, not `--no-huge`;
//! see docs/capture.md).

use super::DpdkError;
use dpdk_sys as sys;

/// Register the pdump server (its multi-process action and its memzone).
pub fn init() -> Result<(), DpdkError> {
    // SAFETY: called after EAL init on the main thread; takes no arguments.
    let ret = unsafe { sys::rte_pdump_init() };
    if ret < 0 {
        return Err(DpdkError::from_rte_errno("rte_pdump_init"));
    }
    Ok(())
}

/// Unregister the pdump server (before EAL cleanup).
pub fn uninit() {
    // SAFETY: called before `rte_eal_cleanup`, once, after a successful init.
    unsafe {
        sys::rte_pdump_uninit();
    }
}
