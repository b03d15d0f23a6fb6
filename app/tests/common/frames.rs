//! Who is who on the pcap ports, and the frames most pipeline tests send,
//! built with `hooks::testkit`.
#![allow(dead_code)]

use hooks::testkit::{self, Frame};
use hooks::wire::ethernet::ethertype;
use hooks::wire::Ipv4Packet;

/// net_pcap's MAC is 02:70:63:61:70:<port id> ("pcap").
pub const PCAP0_MAC: [u8; 6] = [0x02, 0x70, 0x63, 0x61, 0x70, 0x00];
pub const PCAP1_MAC: [u8; 6] = [0x02, 0x70, 0x63, 0x61, 0x70, 0x01];
pub const HOST_A_MAC: [u8; 6] = [0x02, 0xaa, 0, 0, 0, 0x02];

/// The 18 data bytes of [`udp`]'s datagrams: 1, 2, ..., 18.
pub const UDP_DATA: [u8; 18] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18,
];

/// `f` sent by host A to port 0 (PCAP0's MAC), IPv4 identification 0x1234.
pub fn from_host_a(f: Frame) -> Frame {
    f.macs(PCAP0_MAC, HOST_A_MAC).ident(0x1234)
}

/// A UDP frame from HOST_A to PCAP0 (port 0's MAC): `src` → `dst`, ports
/// `sport` → `dport`, 18 bytes of data ([`UDP_DATA`]): 60 bytes.
pub fn udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    from_host_a(testkit::udp(src, dst, sport, dport))
        .payload(&UDP_DATA)
        .build()
}

/// A TCP frame from HOST_A to PCAP0 with `flags`, window 1024 (no options,
/// no payload), padded to 60 bytes.
pub fn tcp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, flags: u8) -> Vec<u8> {
    from_host_a(testkit::tcp(src, dst, sport, dport, flags).window(1024)).build()
}

/// What the untagged frame `f` (IPv4 at 14) looks like routed out of a port
/// with MAC `from` to the neighbour `to`: new Ethernet header, padding
/// trimmed, TTL - 1, checksum recomputed.
pub fn routed(f: &[u8], from: [u8; 6], to: [u8; 6]) -> Vec<u8> {
    let mut ip = f[14..].to_vec();
    let mut view = Ipv4Packet::new_checked(&mut ip[..]).expect("an IPv4 header");
    let ttl = view.ttl();
    view.set_ttl(ttl - 1);
    view.fill_checksum();
    let total = usize::from(view.total_len());
    ip.truncate(total);
    testkit::ethernet(to, from, ethertype::IPV4, &ip)
}
