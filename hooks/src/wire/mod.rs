//! Zero-copy header views over byte slices, in the manner of smoltcp's `wire`:
//! a checked constructor validates the length once, then every accessor reads
//! its field through big-endian byte views and cannot panic. Fields are never
//! read by casting bytes to a struct: an IPv4 header after a 14-byte Ethernet
//! header in an mbuf is only 2-byte aligned.
//!
//! Beside each view, a `Repr` (smoltcp's name) holds a header decoded:
//! `parse` reads one from a view, `emit` writes one into a view, lengths
//! and checksums included, so that a frame is built from fields rather than
//! from bytes placed by hand.

pub mod arp;
pub mod checksum;
pub mod ethernet;
pub mod icmp;
pub mod icmpv6;
pub mod ipv4;
pub mod ipv6;
pub mod tcp;
pub mod udp;
pub mod vlan;

pub use arp::{ArpPacket, ArpRepr};
pub use ethernet::{EthernetFrame, EthernetRepr};
pub use icmp::{IcmpEchoRepr, IcmpPacket};
pub use icmpv6::{Icmpv6Packet, NdRepr};
pub use ipv4::{Ipv4Packet, Ipv4Repr};
pub use ipv6::{Ipv6Packet, Ipv6Repr};
pub use tcp::{TcpPacket, TcpRepr};
pub use udp::{UdpPacket, UdpRepr};
pub use vlan::{VlanRepr, VlanTag};

use core::fmt;

/// Why a buffer cannot be viewed as a header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Error {
    /// The buffer is shorter than the header.
    Truncated,
    /// A length field of the header is out of range (IPv4: IHL < 5).
    Malformed,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Error::Truncated => "buffer shorter than the header",
            Error::Malformed => "header length field out of range",
        })
    }
}

impl std::error::Error for Error {}

/// Big-endian `u16` at `at` of a fixed-size header.
#[inline(always)]
pub(crate) const fn be16<const N: usize>(h: &[u8; N], at: usize) -> u16 {
    u16::from_be_bytes([h[at], h[at + 1]])
}

/// Store `v` big-endian at `at` of a fixed-size header.
#[inline(always)]
pub(crate) fn set_be16<const N: usize>(h: &mut [u8; N], at: usize, v: u16) {
    let [a, b] = v.to_be_bytes();
    h[at] = a;
    h[at + 1] = b;
}
