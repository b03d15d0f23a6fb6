//! IPv6 frames for the stage tests: an Ethernet header, the fixed header
//! and a payload given as bytes (extension headers included).

use crate::datapath::testing::{PEER_MAC, PORT_MACS};
use hooks::wire::ethernet::ethertype;
use hooks::wire::ipv6::next_header;
use std::net::Ipv6Addr;

/// A frame under construction.
#[derive(Clone, Debug)]
pub struct Frame6 {
    pub dst_mac: [u8; 6],
    pub src_mac: [u8; 6],
    pub src: Ipv6Addr,
    pub dst: Ipv6Addr,
    pub next_header: u8,
    pub hop_limit: u8,
    pub payload: Vec<u8>,
    /// Bytes of Ethernet padding after the packet.
    pub pad: usize,
}

/// UDP from `src` to `dst` (ports 1 and 2, 8 bytes of data), to port 0's
/// MAC from a peer, hop limit 64.
pub fn udp6(src: &str, dst: &str) -> Frame6 {
    let mut udp = vec![0, 1, 0, 2, 0, 16, 0, 0];
    udp.extend_from_slice(&[7; 8]);
    Frame6 {
        dst_mac: PORT_MACS[0],
        src_mac: PEER_MAC,
        src: src.parse().expect("source"),
        dst: dst.parse().expect("destination"),
        next_header: next_header::UDP,
        hop_limit: 64,
        payload: udp,
        pad: 0,
    }
}

/// ICMPv6 of type `ty` (code 0, 4 bytes of body, checksum left 0: the
/// control plane checks it, not the stage).
pub fn icmp6(src: &str, dst: &str, ty: u8) -> Frame6 {
    Frame6 {
        next_header: next_header::ICMPV6,
        payload: vec![ty, 0, 0, 0, 0, 0, 0, 0],
        ..udp6(src, dst)
    }
}

impl Frame6 {
    pub fn hop_limit(mut self, h: u8) -> Self {
        self.hop_limit = h;
        self
    }

    pub fn dst_mac(mut self, mac: [u8; 6]) -> Self {
        self.dst_mac = mac;
        self
    }

    /// `n` more bytes of data.
    pub fn grow(mut self, n: usize) -> Self {
        self.payload.resize(self.payload.len() + n, 0x5a);
        self
    }

    /// A Destination Options header (8 bytes of PadN) in front of the payload.
    pub fn dest_opts(mut self) -> Self {
        let mut p = vec![self.next_header, 0, 1, 4, 0, 0, 0, 0];
        p.extend_from_slice(&self.payload);
        self.payload = p;
        self.next_header = next_header::DESTINATION_OPTIONS;
        self
    }

    pub fn pad(mut self, n: usize) -> Self {
        self.pad = n;
        self
    }

    pub fn build(&self) -> Vec<u8> {
        let mut f = Vec::new();
        f.extend_from_slice(&self.dst_mac);
        f.extend_from_slice(&self.src_mac);
        f.extend_from_slice(&ethertype::IPV6.to_be_bytes());
        f.extend_from_slice(&[0x60, 0, 0, 0]);
        f.extend_from_slice(&(self.payload.len() as u16).to_be_bytes());
        f.push(self.next_header);
        f.push(self.hop_limit);
        f.extend_from_slice(&self.src.octets());
        f.extend_from_slice(&self.dst.octets());
        f.extend_from_slice(&self.payload);
        f.resize(f.len() + self.pad, 0);
        f
    }
}
