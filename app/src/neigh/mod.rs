//! The neighbour table: next-hop IPv4 or IPv6 address → cached Ethernet header, read
//! lock-free by the workers and written by the control lcore alone.
//!
//! - [`hh`]: the 16-byte hardware header slot under a seqlock;
//! - [`entry`]: one neighbour (address, state, flags, header, confirmed time);
//! - [`table`]: the fixed-capacity table and its single writer;
//! - [`scope`]: link-local IPv6 neighbours keyed by address and port.

#![forbid(unsafe_code)]

pub mod entry;
pub mod hh;
pub mod scope;
pub mod table;

pub use entry::{NeighEntry, NeighFlags, NeighState};
pub use hh::{store_header, EthHeader, HhCache, ETH_HLEN, HH_SLOT};
pub use scope::{display6, is_link_local6, is_malformed_link_local6, scope6, unscope6};
pub use table::{NeighError, NeighTable, NeighWriter, ETHERTYPE_IPV6};
