//! What a fastpath hook sees and does, with no DPDK dependency: the per-packet
//! metadata that travels in the mbuf's private area, header views over byte
//! slices (`wire`) and the named reasons a packet can be dropped for. Everything
//! here works on plain memory and is unit-tested.

pub mod drop_reason;
pub mod meta;
pub mod wire;

pub use drop_reason::{DropCounters, DropReason};
pub use meta::{PacketMeta, PacketType};
