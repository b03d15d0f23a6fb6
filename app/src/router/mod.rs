//! The router: the IPv4 fast path of `--config` mode. Workers run the
//! per-burst pipeline (l2 → local → ip → neigh → tx buffer); the main lcore is
//! the control plane (ARP, ICMP, neighbour resolution and aging) and talks to
//! the workers only through single-producer single-consumer rings.

pub mod budget;
pub mod control;
mod ctl_requests;
pub mod drop_site;
pub mod fastlane;
pub mod fib;
pub mod flow_memo;
mod hook_chains;
pub mod hook_points;
pub mod options;
pub mod punt;
pub mod setup;
pub mod stages;
pub mod txbuf;
pub mod worker;

pub use fib::{Fib, HopKind, NextHop};
pub use options::{CaptureOptions, RouterOptions};
pub use punt::Punt;
