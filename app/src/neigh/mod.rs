//! The neighbour table: next-hop IPv4 or IPv6 address → cached Ethernet header, read
//! lock-free by the workers and written by the control lcore alone.
//!
//! - [`hh`]: the 16-byte hardware header slot under a seqlock;
//! - [`entry`]: one neighbour (address, state, flags, header, confirmed time);
//! - [`table`]: the fixed-capacity table and its single writer.

#![forbid(unsafe_code)]

pub mod entry;
pub mod hh;
pub mod table;

pub use entry::{NeighEntry, NeighFlags, NeighState};
pub use hh::{store_header, EthHeader, HhCache, ETH_HLEN, HH_SLOT};
pub use table::{NeighError, NeighTable, NeighWriter, ETHERTYPE_IPV6};
