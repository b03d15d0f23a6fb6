//! The router: the IPv4 fast path of `--config` mode. Workers run the
//! per-burst pipeline (`crate::datapath`); the main lcore is
//! the control plane (ARP, ICMP, neighbour resolution and aging) and talks to
//! the workers only through single-producer single-consumer rings.

pub mod control;
mod ctl_requests;
mod fpm_link;
mod hook_chains;
pub mod options;
pub mod setup;
pub mod worker;

pub use options::{CaptureOptions, FpmOptions, RouterOptions};
