//! What a run's life is in either mode (forwarding and router): the error
//! it ends with, the packet pool, a port brought up, the main lcore's loop,
//! the workers joined, the RX queues drained, and the teardown that proves every mbuf came back;
//! with `--until-input-done`, the end of the input that stops it.
//!
//! Both modes use it; it uses neither them nor the command line: what it
//! needs to know comes in as plain values ([`MainLoopOptions`], descriptor
//! counts).

mod drain;
mod error;
mod finish;
pub mod input_end;
mod main_loop;
mod pool;
mod ports;
mod workers;

pub use drain::drain_rx;
pub use error::RunError;
pub use finish::{finish, LcoreCounts};
pub use input_end::{InputEnd, InputSources};
pub use main_loop::{main_lcore_loop, run_length, Ended, MainLoopOptions};
pub use pool::{create_pool, default_pool_size, MEMPOOL_CACHE};
pub use ports::{log_port_up, port_names, start_port};
pub use workers::{join_workers, snapshot, worker_failure};
