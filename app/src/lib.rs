//! fastpath: a DPDK poll-mode IPv4 fast path.
//!
//! `dpdk` is the safe layer over DPDK (the only place with `unsafe`); the rest
//! builds the pipeline, its counters and the control plane on top of it.

// `unsafe` only in the DPDK layer, each block with its `// SAFETY:` reason.
#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod builtin_hooks;
pub mod capture;
pub mod cli;
pub mod config;
pub mod counters;
pub mod ctl;
pub mod datapath;
pub mod doctor;
#[allow(unsafe_code)]
pub mod dpdk;
pub mod fib;
pub mod fib6;
pub mod forward;
pub mod fpm;
pub mod health;
pub mod hook_config;
pub mod kernel;
pub mod lifecycle;
pub mod neigh;
pub mod ops;
pub mod pcap;
pub mod report;
pub mod router;
pub mod runtime;
mod sync;
