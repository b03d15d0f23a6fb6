//! What the router takes from the command line, as plain values: the
//! router never sees the command line itself (the run builds these from it
//! in one place, `runtime::router_options`).

use crate::lifecycle::MainLoopOptions;
use std::path::PathBuf;
use std::time::Duration;

/// The router's settings beside its config file.
#[derive(Clone, Debug, PartialEq)]
pub struct RouterOptions {
    /// RX descriptors per queue.
    pub rx_desc: u16,
    /// TX descriptors per queue.
    pub tx_desc: u16,
    /// Mbufs in the packet pool; None: enough for every ring, burst and cache.
    pub mbufs: Option<u32>,
    /// Neighbours the table holds.
    pub neigh_capacity: u32,
    /// IPv4 routes the FIB holds (LPM rules) beyond twice the config's.
    pub fib_routes: u32,
    /// IPv6 routes the FIB holds beyond the config's.
    pub fib6_routes: u32,
    /// How long a neighbour confirmed by ARP stays reachable.
    pub neigh_reachable: Duration,
    /// Time each pipeline stage (cycles per packet in the report).
    pub stage_cycles: bool,
    /// Drop capture.
    pub capture: CaptureOptions,
    /// How long the main lcore runs, and its live view.
    pub main_loop: MainLoopOptions,
    /// The FPM server (`--fpm`), if on.
    pub fpm: Option<FpmOptions>,
}

/// The FPM server's settings (docs/frr.md).
#[derive(Clone, Debug, PartialEq)]
pub struct FpmOptions {
    /// Where zebra connects.
    pub listen: std::net::SocketAddr,
    /// How long stale FPM routes stay after a connect or disconnect.
    pub hold: Duration,
}

/// Drop capture's settings (docs/capture.md).
#[derive(Clone, Debug, PartialEq)]
pub struct CaptureOptions {
    /// Start capturing dropped packets into this file at start.
    pub drops: Option<PathBuf>,
    /// The size bound of a capture file, in bytes.
    pub max_bytes: u64,
    /// Dropped packets each lcore may capture per second.
    pub rate: u64,
    /// Records the queue to the capture writer holds.
    pub queue: usize,
}
