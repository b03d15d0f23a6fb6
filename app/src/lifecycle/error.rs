//! Why a run failed, and the exit code each reason gives.

use crate::dpdk::DpdkError;
use crate::report::Report;

/// Why a run failed. Each maps to an exit code.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The command line or the set-up it asks for is wrong (exit 2).
    #[error("{0}")]
    Usage(String),
    /// EAL could not start (exit 1).
    #[error("EAL initialisation failed: {0}.\n  Check the EAL options before `--` (DPDK printed its reason above), e.g. -l 0-1 --no-huge -m 512 --vdev net_null0")]
    Eal(DpdkError),
    /// A DPDK call failed (exit 1).
    #[error("{0}")]
    Dpdk(#[from] DpdkError),
    /// The run finished but mbufs did not come back (exit 3).
    #[error("{missing} mbufs were not returned to the pool at exit (leak)")]
    Leak { missing: u32, report: Box<Report> },
    /// `--until-input-done`: `--duration` ended first (exit 4).
    #[error(
        "--duration ended before the input was used up (--until-input-done): waiting for \
             {waiting_for}. The statistics above show where packets went; give a longer \
             --duration if the run is just slow"
    )]
    InputNotUsedUp {
        waiting_for: String,
        report: Box<Report>,
    },
}

impl RunError {
    /// Process exit code for this error.
    pub fn exit_code(&self) -> i32 {
        match self {
            RunError::Usage(_) => 2,
            RunError::Eal(_) | RunError::Dpdk(_) => 1,
            RunError::Leak { .. } => 3,
            RunError::InputNotUsedUp { .. } => 4,
        }
    }

    /// The report of a run that went to its end and failed there.
    pub fn report(&self) -> Option<&Report> {
        match self {
            RunError::Leak { report, .. } | RunError::InputNotUsedUp { report, .. } => Some(report),
            _ => None,
        }
    }
}
