//! The operations plane: what a running fastpath tells about itself while it
//! runs, off the packet path. Three readers share one [`state::Ops`]: DPDK
//! telemetry commands (`/fastpath/...`, answered on DPDK's telemetry
//! thread), the OpenMetrics endpoint (`--metrics`, its own thread on the
//! main lcore's core) and the live view on stdout (the main lcore).
//!
//! None of them writes worker state. They read the counters workers publish
//! (per-lcore atomics) and a [`view::ControlView`] that the main lcore
//! builds from the control plane's state and publishes now and then (routes,
//! neighbours, hooks, conntrack).

pub mod commands;
pub mod http;
pub mod live;
pub mod metrics;
pub mod sample;
pub mod state;
pub mod view;
