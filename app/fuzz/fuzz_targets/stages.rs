//! The l2 and IPv4 stages on arbitrary frames with arbitrary metadata, and
//! the datapath's fast checks against them: `eth_type_trans` sets only
//! what it owns and an L3 offset inside the frame; `ipv4_input` (at any L3
//! offset) accepts only a header it can vouch for, with lengths inside the
//! frame; the one TTL decrement (`hooks::wire::ipv4::decrement_ttl`) agrees
//! with `Ipv4Packet::decrement_ttl` and keeps the checksum right;
//! `plain_l2` and `plain_header` take exactly the frames `eth_type_trans`
//! and `ipv4_input` accept untagged without options (the property test of
//! `datapath/fast_checks.rs`, on the fuzzer's inputs).

#![no_main]

use arbitrary::Arbitrary;
use fastpath::datapath::ip_input::header::{ipv4_input, plain_header, CsumFlag, Ipv4Fields};
use fastpath::datapath::l2_input::eth_type_trans::{eth_type_trans, packet_type};
use fastpath::datapath::l2_input::plain::{mac_word, plain_l2, plain_meta};
use hooks::wire::ipv4::decrement_ttl;
use hooks::testkit;
use hooks::wire::checksum;
use hooks::wire::ethernet::{ethertype, HEADER_LEN, MIN_FRAME_LEN};
use hooks::wire::Ipv4Packet;
use hooks::{PacketMeta, PacketType};
use libfuzzer_sys::fuzz_target;

#[derive(Arbitrary, Debug)]
struct Input {
    port_mac: [u8; 6],
    /// Address the frame to the port (else its first bytes decide).
    to_port: bool,
    /// Recompute the IPv4 header checksum where l2 says the header is.
    fix_checksum: bool,
    csum: u8,
    meta: Meta,
    words: [u64; 2],
    /// Start from a plain UDP frame to the port with the bytes below as
    /// its payload, then make these edits (position, value); else the
    /// bytes below are the frame.
    template: Option<Vec<(u8, u8)>>,
    frame: Vec<u8>,
}

/// Ethernet (to `mac`) + IPv4 (IHL 5, TTL 64, UDP, 10.0.0.1 to
/// 198.51.100.9, right checksum) + `payload`, from the test kit.
fn plain_frame(mac: &[u8; 6], payload: &[u8]) -> Vec<u8> {
    testkit::ipv4([10, 0, 0, 1], [198, 51, 100, 9], 17, payload)
        .macs(*mac, [0x02, 0, 0, 0, 0, 0x02])
        .pad(false)
        .build()
}

/// Every public field of `PacketMeta`.
#[derive(Arbitrary, Debug)]
struct Meta {
    in_port: u16,
    out_port: u16,
    protocol: u16,
    l3_offset: u16,
    vlan: u16,
    class: u16,
    packet_type: u8,
    punt: u8,
    mark: u32,
    next_hop: u32,
}

impl Meta {
    fn get(&self) -> PacketMeta {
        let mut m = PacketMeta::received_on(self.in_port);
        m.out_port = self.out_port;
        m.protocol = self.protocol;
        m.l3_offset = self.l3_offset;
        m.vlan = self.vlan;
        m.class = self.class;
        m.packet_type = match self.packet_type % 4 {
            0 => PacketType::Host,
            1 => PacketType::Broadcast,
            2 => PacketType::Multicast,
            _ => PacketType::OtherHost,
        };
        m.punt = self.punt;
        m.mark = self.mark;
        m.next_hop = self.next_hop;
        m
    }
}

fuzz_target!(|input: Input| {
    let Input {
        port_mac,
        to_port,
        fix_checksum,
        csum,
        meta,
        words,
        template,
        mut frame,
    } = input;
    if frame.len() > 2048 {
        return;
    }
    if let Some(edits) = template {
        frame = plain_frame(&port_mac, &frame);
        for (at, b) in edits.into_iter().take(4) {
            if let Some(x) = frame.get_mut(usize::from(at)) {
                *x = b;
            }
        }
    }
    if to_port && frame.len() >= 6 {
        frame[..6].copy_from_slice(&port_mac);
    }
    let meta = meta.get();
    let l2 = check_l2(&frame, &port_mac, meta);
    if fix_checksum {
        refill(
            &mut frame,
            l2.map_or(HEADER_LEN, |m| usize::from(m.l3_offset)),
        );
    }
    let csum = [CsumFlag::Unknown, CsumFlag::Good, CsumFlag::Bad][usize::from(csum % 3)];
    check_ipv4_input(&frame, &meta, csum);
    let mut at14 = meta;
    at14.l3_offset = HEADER_LEN as u16;
    check_ipv4_input(&frame, &at14, csum);
    check_forward_ttl(&frame, usize::from(meta.l3_offset));
    check_forward_ttl(&frame, HEADER_LEN);
    check_lane(&frame, &port_mac, meta.in_port, csum, words);
});

/// `eth_type_trans` over `meta`: on success an L3 offset of 14, 18 or 22
/// inside a frame of at least 60 bytes; it changes only the packet type,
/// protocol, VLAN and L3 offset. Returns the metadata it gave, if any.
fn check_l2(frame: &[u8], port_mac: &[u8; 6], meta: PacketMeta) -> Option<PacketMeta> {
    let mut m = meta;
    let r = eth_type_trans(frame, port_mac, &mut m);
    let mut others = m;
    others.packet_type = meta.packet_type;
    others.protocol = meta.protocol;
    others.vlan = meta.vlan;
    others.l3_offset = meta.l3_offset;
    assert_eq!(others, meta, "l2 changed what it does not own");
    r.ok()?;
    assert!(frame.len() >= MIN_FRAME_LEN);
    assert!(matches!(m.l3_offset, 14 | 18 | 22), "{m:?}");
    assert!(usize::from(m.l3_offset) <= frame.len());
    assert!(m.protocol >= ethertype::MIN, "{m:?}");
    let dst: [u8; 6] = frame[..6].try_into().unwrap();
    assert_eq!(m.packet_type, packet_type(&dst, port_mac));
    assert_ne!(m.packet_type, PacketType::OtherHost);
    if m.l3_offset == 14 {
        assert_eq!(m.vlan, 0);
        assert_eq!(m.protocol, u16::from_be_bytes([frame[12], frame[13]]));
    }
    Some(m)
}

/// The header checksum of the IPv4 header at `l3` recomputed (as far as
/// the frame holds it).
fn refill(frame: &mut [u8], l3: usize) {
    let Some(ip) = frame.get_mut(l3..) else {
        return;
    };
    if ip.len() < 20 {
        return;
    }
    let len = (usize::from(ip[0] & 0x0f) * 4).clamp(20, ip.len());
    ip[10..12].fill(0);
    let c = checksum::checksum(&ip[..len]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
}

/// `ipv4_input` at `meta.l3_offset`, whatever it is: an accepted header is
/// version 4 with IHL >= 5, its checksum right unless the NIC vouched,
/// its lengths inside the frame, and what it reports is in its bytes.
fn check_ipv4_input(frame: &[u8], meta: &PacketMeta, csum: CsumFlag) {
    let Ok(ok) = ipv4_input(frame, meta, csum) else {
        return;
    };
    assert_ne!(csum, CsumFlag::Bad);
    let l3 = usize::from(meta.l3_offset);
    let ip = Ipv4Packet::new_checked(&frame[l3..]).expect("accepted: a header");
    assert_eq!(ip.version(), 4);
    let header_len = ip.header_len();
    assert!(header_len >= 20);
    if csum == CsumFlag::Unknown {
        assert!(ip.verify_checksum());
    }
    let Ipv4Fields {
        trimmed_len,
        l4_offset,
        dst,
        src,
        ttl,
        protocol,
    } = ok;
    assert_eq!(usize::from(l4_offset), l3 + header_len);
    assert_eq!(usize::from(trimmed_len), l3 + usize::from(ip.total_len()));
    assert!(l4_offset <= trimmed_len && usize::from(trimmed_len) <= frame.len());
    assert_eq!(
        (dst, src, ttl, protocol),
        (ip.dst_addr(), ip.src_addr(), ip.ttl(), ip.protocol())
    );
}

/// The TTL decrement the stages use, at `l3`, on a header with TTL above 1:
/// the same bytes as `Ipv4Packet::decrement_ttl`; it changes the TTL and the
/// checksum only, and a checksum right before is right after.
fn check_forward_ttl(frame: &[u8], l3: usize) {
    let Ok(ip) = Ipv4Packet::new_checked(frame.get(l3..).unwrap_or(&[])) else {
        return;
    };
    if ip.ttl() <= 1 {
        return;
    }
    let mut a = frame.to_vec();
    let h: &mut [u8; 20] = (&mut a[l3..l3 + 20]).try_into().unwrap();
    let ttl = decrement_ttl(h, ip.ttl());
    assert_eq!(ttl, ip.ttl() - 1);
    let mut b = frame.to_vec();
    let mut p = Ipv4Packet::new_checked(&mut b[l3..]).expect("checked above");
    assert_eq!(p.decrement_ttl(), Some(ttl));
    assert_eq!(a, b);
    for (i, (x, y)) in a.iter().zip(frame).enumerate() {
        if ![l3 + 8, l3 + 10, l3 + 11].contains(&i) {
            assert_eq!(x, y, "byte {i} changed");
        }
    }
    let header = l3..l3 + ip.header_len();
    if checksum::sum(&frame[header.clone()]) == 0xffff {
        assert_eq!(checksum::sum(&a[header]), 0xffff, "checksum broken");
    }
}

/// The fast lane takes what the stages would forward plainly, gives it
/// l2's metadata, and writes the bytes the stages write.
fn check_lane(frame: &[u8], port_mac: &[u8; 6], port: u16, csum: CsumFlag, words: [u64; 2]) {
    let _ = words;
    let mut meta = PacketMeta::received_on(port);
    let l2 = eth_type_trans(frame, port_mac, &mut meta).is_ok()
        && meta.packet_type == PacketType::Host
        && meta.protocol == ethertype::IPV4
        && meta.vlan == 0
        && meta.l3_offset == HEADER_LEN as u16;
    assert_eq!(plain_l2(frame, mac_word(port_mac)), l2, "l2_input's fast check disagrees");
    if !l2 {
        return;
    }
    assert_eq!(meta, plain_meta(port));
    let full = ipv4_input(frame, &meta, csum).ok().filter(|ok| ok.l4_offset == 34);
    let mut ok = Ipv4Fields::EMPTY;
    let fast = plain_header(frame, csum, &mut ok).then_some(ok);
    assert_eq!(fast, full, "ip_input's fast check disagrees");
}
