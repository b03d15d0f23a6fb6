//! Crafted frames for pipeline tests: Ethernet, IPv4 with a right checksum,
//! UDP and TCP headers.
#![allow(dead_code)]

use hooks::wire::checksum;

/// net_pcap's MAC is 02:70:63:61:70:<port id> ("pcap").
pub const PCAP0_MAC: [u8; 6] = [0x02, 0x70, 0x63, 0x61, 0x70, 0x00];
pub const PCAP1_MAC: [u8; 6] = [0x02, 0x70, 0x63, 0x61, 0x70, 0x01];
pub const HOST_A_MAC: [u8; 6] = [0x02, 0xaa, 0, 0, 0, 0x02];

pub fn eth(dst: [u8; 6], src: [u8; 6], ethertype: u16) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&dst);
    f.extend_from_slice(&src);
    f.extend_from_slice(&ethertype.to_be_bytes());
    f
}

/// IPv4 header (IHL 5, right checksum) + `payload`.
pub fn ipv4(src: [u8; 4], dst: [u8; 4], ttl: u8, protocol: u8, payload: &[u8]) -> Vec<u8> {
    let mut p = vec![0u8; 20];
    p[0] = 0x45;
    let total = (20 + payload.len()) as u16;
    p[2..4].copy_from_slice(&total.to_be_bytes());
    p[4..6].copy_from_slice(&0x1234u16.to_be_bytes());
    p[8] = ttl;
    p[9] = protocol;
    p[12..16].copy_from_slice(&src);
    p[16..20].copy_from_slice(&dst);
    let c = checksum::checksum(&p);
    p[10..12].copy_from_slice(&c.to_be_bytes());
    p.extend_from_slice(payload);
    p
}

/// A UDP frame from HOST_A to PCAP0 (port 0's MAC): `src` → `dst`, ports
/// `sport` → `dport`, 18 bytes of payload.
pub fn udp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) -> Vec<u8> {
    let mut l4 = Vec::new();
    l4.extend_from_slice(&sport.to_be_bytes());
    l4.extend_from_slice(&dport.to_be_bytes());
    l4.extend_from_slice(&26u16.to_be_bytes());
    l4.extend_from_slice(&[0, 0]);
    l4.extend(1..=18u8);
    let mut f = eth(PCAP0_MAC, HOST_A_MAC, 0x0800);
    f.extend(ipv4(src, dst, 64, 17, &l4));
    f
}

/// `f` padded with zeros to Ethernet's 60-byte minimum, as a NIC sends it.
pub fn padded(mut f: Vec<u8>) -> Vec<u8> {
    if f.len() < 60 {
        f.resize(60, 0);
    }
    f
}

/// A TCP frame from HOST_A to PCAP0 with `flags` (no options, no payload),
/// padded to 60 bytes.
pub fn tcp(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, flags: u8) -> Vec<u8> {
    let mut l4 = vec![0u8; 20];
    l4[..2].copy_from_slice(&sport.to_be_bytes());
    l4[2..4].copy_from_slice(&dport.to_be_bytes());
    l4[12] = 5 << 4;
    l4[13] = flags;
    l4[14..16].copy_from_slice(&1024u16.to_be_bytes());
    let mut f = eth(PCAP0_MAC, HOST_A_MAC, 0x0800);
    f.extend(ipv4(src, dst, 64, 6, &l4));
    padded(f)
}

/// What the untagged frame `f` (IPv4 at 14) looks like routed out of a port
/// with MAC `from` to the neighbour `to`: new Ethernet header, padding
/// trimmed, TTL - 1, checksum recomputed.
pub fn routed(f: &[u8], from: [u8; 6], to: [u8; 6]) -> Vec<u8> {
    let mut out = eth(to, from, 0x0800);
    let mut ip = f[14..].to_vec();
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    ip.truncate(total);
    ip[8] -= 1;
    set_ipv4_checksum(&mut ip);
    out.extend(ip);
    out
}

/// Recompute the header checksum of the IPv4 header at the start of `ip`
/// (its length from the IHL).
pub fn set_ipv4_checksum(ip: &mut [u8]) {
    let hlen = usize::from(ip[0] & 0x0f) * 4;
    ip[10..12].fill(0);
    let c = checksum::checksum(&ip[..hlen]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
}
