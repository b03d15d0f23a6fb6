//! Worker lcores at the end of a run: joined, their failures named, their
//! counters read.

use super::{LcoreCounts, RunError};
use crate::counters::LcoreCounters;
use crate::dpdk::{lcore, DpdkError};
use std::sync::Arc;

/// Wait for every worker; the lcores whose job failed.
pub fn join_workers(jobs: Vec<lcore::LcoreJob>) -> Vec<u32> {
    let mut failed = Vec::new();
    for job in jobs {
        let lcore = job.lcore();
        if job.join() != 0 {
            failed.push(lcore);
        }
    }
    failed
}

/// The error for workers whose `what` loop ("forwarding", "routing")
/// failed; none when every worker ended well.
pub fn worker_failure(failed: &[u32], what: &str) -> Result<(), RunError> {
    if failed.is_empty() {
        return Ok(());
    }
    Err(RunError::Dpdk(DpdkError {
        what: format!("worker lcore(s) {failed:?}"),
        code: libc::EIO,
        reason: format!("the {what} loop failed (see above)"),
    }))
}

/// Every lcore's counters as the report takes them.
pub fn snapshot(counters: &[Arc<LcoreCounters>]) -> LcoreCounts {
    counters.iter().map(|c| (c.lcore, c.snapshot())).collect()
}
