//! Logical cores: list the workers EAL was given, launch a closure on each, join.

use super::DpdkError;
use dpdk_sys as sys;
use std::os::raw::{c_int, c_void};

/// Id of the calling thread's lcore (`u32::MAX` on a non-EAL thread).
#[inline(always)]
pub fn current() -> u32 {
    // SAFETY: reads the calling thread's per-lcore id.
    unsafe { sys::rte_lcore_id() }
}

/// The main lcore (the one running `main`), which does the control plane.
pub fn main_lcore() -> u32 {
    // SAFETY: a getter of EAL's configuration.
    unsafe { sys::rte_get_main_lcore() }
}

/// Worker lcores: every enabled lcore except the main one, in id order.
pub fn workers() -> Vec<u32> {
    let mut out = Vec::new();
    // SAFETY: iterates EAL's lcore table; RTE_MAX_LCORE ends the walk.
    let mut id = unsafe { sys::rte_get_next_lcore(u32::MAX, 1, 0) };
    while id < sys::RTE_MAX_LCORE {
        out.push(id);
        // SAFETY: as above.
        id = unsafe { sys::rte_get_next_lcore(id, 1, 0) };
    }
    out
}

type Job = Box<dyn FnOnce() -> i32 + Send + 'static>;

extern "C" fn trampoline(arg: *mut c_void) -> c_int {
    // SAFETY: `arg` came from Box::into_raw in `launch` and is consumed once here.
    let job: Box<Job> = unsafe { Box::from_raw(arg as *mut Job) };
    // A panic must not unwind into C: report it as a failed job instead.
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(job)).unwrap_or(-1)
}

/// A job running on a worker lcore; `join` waits for it.
#[derive(Debug)]
#[must_use = "a launched lcore must be joined"]
pub struct LcoreJob {
    lcore: u32,
}

impl LcoreJob {
    /// The lcore the job runs on.
    pub fn lcore(&self) -> u32 {
        self.lcore
    }

    /// Wait for the job to return; its return code (negative = it failed or panicked).
    pub fn join(self) -> i32 {
        // SAFETY: waits for the job launched on this lcore by `launch`.
        unsafe { sys::rte_eal_wait_lcore(self.lcore) }
    }
}

/// Run `job` on worker `lcore`. The job returns 0 on success.
pub fn launch<F>(lcore: u32, job: F) -> Result<LcoreJob, DpdkError>
where
    F: FnOnce() -> i32 + Send + 'static,
{
    let boxed: Box<Job> = Box::new(Box::new(job));
    let arg = Box::into_raw(boxed) as *mut c_void;
    // SAFETY: trampoline consumes `arg` exactly once on the worker; if the
    // launch fails it never runs, and the box is reclaimed below.
    let ret = unsafe { sys::rte_eal_remote_launch(Some(trampoline), arg, lcore) };
    if ret != 0 {
        // SAFETY: the launch failed, so the trampoline will not consume `arg`.
        drop(unsafe { Box::from_raw(arg as *mut Job) });
        return Err(DpdkError::from_ret(
            format!("launching a job on lcore {lcore}"),
            ret,
        ));
    }
    Ok(LcoreJob { lcore })
}

/// The CPU that `lcore` runs on (`None` for an lcore EAL does not use).
pub fn cpu_of(lcore: u32) -> Option<usize> {
    let id = c_int::try_from(lcore).ok()?;
    // SAFETY: a getter of EAL's lcore table; -1 for an unknown lcore.
    let cpu = unsafe { sys::rte_lcore_to_cpu_id(id) };
    usize::try_from(cpu).ok()
}
