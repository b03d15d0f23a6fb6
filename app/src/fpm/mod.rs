//! The Forwarding Plane Manager server: FRR's zebra (`-M dplane_fpm_nl`)
//! pushes the routes it chose over TCP; fastpath installs them in its FIB
//! on the control lcore, next to the config's and `fastpath ctl`'s routes.
//! `docs/frr.md` says how to set zebra up and the rules.
//!
//! One concept a file: `frame` (FPM framing), `message` (the netlink
//! messages, with `netlink-packet-route`), `parse` (a frame to changes: a
//! function of the bytes), `rib` (zebra's routes and next hops, and the
//! rules that bring them to the FIB), `server` (the listener thread),
//! `stats` (state and counters), `build` (frames as zebra sends them).

pub mod build;
pub mod frame;
pub mod message;
pub mod parse;
pub mod rib;
pub mod server;
pub mod stats;

pub use parse::{parse_frame, Parsed, Rejected};
pub use rib::{Event, FibSink, FpmRib};
pub use server::FpmServer;
pub use stats::{Count, FpmStats};

/// zebra's default FPM port.
pub const DEFAULT_PORT: u16 = 2620;

#[cfg(test)]
mod tests;
