//! Errors from DPDK calls, carrying DPDK's own explanation (`rte_strerror`).

use dpdk_sys as sys;
use std::ffi::CStr;

/// A DPDK call failed. `what` says which call and on what; `code` is the
/// (positive) errno and `reason` DPDK's text for it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {reason} (errno {code})")]
pub struct DpdkError {
    pub what: String,
    pub code: i32,
    pub reason: String,
}

impl DpdkError {
    /// An error for a call that returned `-errno` (the ethdev convention).
    #[cold]
    pub fn from_ret(what: impl Into<String>, ret: i32) -> Self {
        Self::with_code(what, ret.abs())
    }

    /// An error for a call that set `rte_errno` (the EAL / mempool convention).
    #[cold]
    pub fn from_rte_errno(what: impl Into<String>) -> Self {
        // SAFETY: reads the calling thread's per-lcore rte_errno.
        let code = unsafe { sys::fastpath_rte_errno() };
        Self::with_code(what, code)
    }

    #[cold]
    fn with_code(what: impl Into<String>, code: i32) -> Self {
        // SAFETY: rte_strerror returns a pointer to a static or thread-local
        // NUL-terminated string, valid until the next call on this thread; it is
        // copied out at once.
        let reason = unsafe { CStr::from_ptr(sys::rte_strerror(code)) }
            .to_string_lossy()
            .into_owned();
        DpdkError {
            what: what.into(),
            code,
            reason,
        }
    }
}
