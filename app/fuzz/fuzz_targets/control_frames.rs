//! The control plane's ARP and ICMP handling on arbitrary received frames,
//! done as `router::control` does it (l2 gives the L3 offset; tags are
//! stripped; an echo request is trimmed to its total length), with every
//! frame out checked for validity: lengths, checksums, addresses. The
//! frame builders are also called on the raw bytes, where they must not
//! panic and whatever they accept must come out valid.

#![no_main]

use arbitrary::Arbitrary;
use fastpath::router::control::frames::{
    arp_reply_in_place, echo_reply_in_place, icmp_error, may_send_icmp_error, set_next_hop_mtu,
    ARP_FRAME_LEN, ICMP_ERROR_MAX, OWN_TTL,
};
use fastpath::datapath::ip_input::header::{ipv4_input, CsumFlag};
use fastpath::datapath::l2_input::eth_type_trans::eth_type_trans;
use hooks::testkit;
use hooks::wire::arp::{self, ArpPacket, ArpRepr};
use hooks::wire::ethernet::{ethertype, EthernetFrame, HEADER_LEN};
use hooks::wire::icmp::{self, IcmpPacket};
use hooks::wire::{checksum, Ipv4Packet};
use hooks::PacketMeta;
use libfuzzer_sys::fuzz_target;
use std::net::Ipv4Addr;

#[derive(Arbitrary, Debug)]
struct Input {
    our_mac: [u8; 6],
    our_ip: [u8; 4],
    /// Address the frame to our MAC, and an ARP request in it to our IP.
    to_us: bool,
    /// Fix the IPv4 header and ICMP checksums where l2 puts the header.
    fix: bool,
    error_type: u8,
    error_code: u8,
    mtu: u16,
    raw_offset: u8,
    /// Start from an ARP request or ICMP echo request to us with the bytes
    /// below as its tail, then make these edits (position, value); else the
    /// bytes below are the frame.
    template: Option<(bool, Vec<(u8, u8)>)>,
    frame: Vec<u8>,
}

/// An ARP request (`arp`) or an ICMP echo request from 10.0.1.2 to
/// `our_ip`, to `our_mac`, with `tail` after it (the echo's data), padded
/// to 60 bytes: from the test kit.
fn request(arp: bool, our_mac: [u8; 6], our_ip: Ipv4Addr, tail: &[u8]) -> Vec<u8> {
    let peer = [0x02, 0, 0, 0, 0, 2];
    let peer_ip = Ipv4Addr::new(10, 0, 1, 2);
    let mut f = if arp {
        let repr = ArpRepr {
            operation: arp::op::REQUEST,
            sender_mac: peer,
            sender_ip: peer_ip,
            target_mac: [0; 6],
            target_ip: our_ip,
        };
        [testkit::arp(our_mac, peer, &repr), tail.to_vec()].concat()
    } else {
        testkit::icmp_echo(peer_ip, our_ip, icmp::kind::ECHO_REQUEST, 0x1234, 1)
            .macs(our_mac, peer)
            .ident(1)
            .dont_frag()
            .payload(tail)
            .build()
    };
    if f.len() < 60 {
        f.resize(60, 0);
    }
    f
}

fuzz_target!(|input: Input| {
    let Input {
        our_mac,
        our_ip,
        to_us,
        fix,
        error_type,
        error_code,
        mtu,
        raw_offset,
        template,
        mut frame,
    } = input;
    if frame.len() > 2048 {
        return;
    }
    let our_ip = Ipv4Addr::from(our_ip);
    if let Some((arp, edits)) = template {
        frame = request(arp, our_mac, our_ip, &frame);
        for (at, b) in edits.into_iter().take(4) {
            if let Some(x) = frame.get_mut(usize::from(at)) {
                *x = b;
            }
        }
    }
    let mut meta = PacketMeta::received_on(0);
    if to_us && frame.len() >= 6 {
        frame[..6].copy_from_slice(&our_mac);
    }
    let l2 = eth_type_trans(&frame, &our_mac, &mut meta).is_ok();
    let l3 = usize::from(meta.l3_offset);
    if l2 && to_us && meta.protocol == ethertype::ARP {
        if let Some(target) = frame.get_mut(l3 + 24..l3 + 28) {
            target.copy_from_slice(&our_ip.octets());
        }
    }
    if l2 && fix && meta.protocol == ethertype::IPV4 {
        fix_checksums(&mut frame, l3);
    }
    if l2 && meta.protocol == ethertype::ARP {
        arp_input(&frame, l3, our_mac, our_ip);
    }
    // What the ip stage lets through to the control plane.
    let checked = (l2 && meta.protocol == ethertype::IPV4)
        .then(|| ipv4_input(&frame, &meta, CsumFlag::Unknown).ok())
        .flatten();
    if checked.is_some() {
        echo(&frame, l3, our_mac);
    }
    {
        let error = [icmp::kind::DEST_UNREACHABLE, icmp::kind::TIME_EXCEEDED];
        let msg_type = error[usize::from(error_type % 2)];
        if let Some(ok) = checked {
            let original = &frame[l3..usize::from(ok.trimmed_len)];
            if may_send_icmp_error(original) {
                let peer_mac = frame[6..12].try_into().unwrap();
                error_frame(
                    msg_type,
                    error_code % 16,
                    original,
                    our_mac,
                    peer_mac,
                    our_ip,
                    mtu,
                );
            }
        }
    }
    raw_calls(
        &frame,
        usize::from(raw_offset),
        our_mac,
        our_ip,
        error_type,
        error_code,
    );
});

/// The IPv4 header checksum at `l3`, and an ICMP checksum over the rest
/// of the total length.
fn fix_checksums(frame: &mut [u8], l3: usize) {
    let Some(ip) = frame.get_mut(l3..) else {
        return;
    };
    if ip.len() < 20 || ip[0] & 0x0f < 5 {
        return;
    }
    let hl = usize::from(ip[0] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]])).min(ip.len());
    if ip[9] == 1 && total >= hl + icmp::HEADER_LEN {
        ip[hl + 2..hl + 4].fill(0);
        let c = checksum::checksum(&ip[hl..total]);
        ip[hl + 2..hl + 4].copy_from_slice(&c.to_be_bytes());
    }
    if hl <= ip.len() {
        ip[10..12].fill(0);
        let c = checksum::checksum(&ip[..hl]);
        ip[10..12].copy_from_slice(&c.to_be_bytes());
    }
}

/// `arp_input`: a request for `our_ip` is answered in place, after the tags
/// are stripped and the frame trimmed to Ethernet + ARP.
fn arp_input(frame: &[u8], l3: usize, our_mac: [u8; 6], our_ip: Ipv4Addr) {
    let Some(req) = ArpPacket::new_checked(&frame[l3..])
        .ok()
        .and_then(|p| ArpRepr::parse(&p))
    else {
        return;
    };
    if req.operation != arp::op::REQUEST || req.target_ip != our_ip {
        return;
    }
    let mut reply = frame[l3 - HEADER_LEN..].to_vec();
    reply.truncate(ARP_FRAME_LEN);
    assert!(
        arp_reply_in_place(&mut reply, &req, our_mac),
        "a parsed request has room"
    );
    check_arp_reply(&reply, &req, our_mac);
}

fn check_arp_reply(reply: &[u8], req: &ArpRepr, our_mac: [u8; 6]) {
    assert!(reply.len() >= ARP_FRAME_LEN);
    let eth = EthernetFrame::new_checked(reply).unwrap();
    assert_eq!(eth.dst_addr(), req.sender_mac);
    assert_eq!(eth.src_addr(), our_mac);
    assert_eq!(eth.ethertype(), ethertype::ARP);
    let p = ArpPacket::new_checked(&reply[HEADER_LEN..]).unwrap();
    let r = ArpRepr::parse(&p).expect("a reply that parses");
    let want = ArpRepr {
        operation: arp::op::REPLY,
        sender_mac: our_mac,
        sender_ip: req.target_ip,
        target_mac: req.sender_mac,
        target_ip: req.sender_ip,
    };
    assert_eq!(r, want);
}

/// `echo`: the frame trimmed to the IP total length, tags stripped, then
/// the reply in place; an answer is a valid echo reply.
fn echo(frame: &[u8], l3: usize, our_mac: [u8; 6]) {
    let Some(total) = Ipv4Packet::new_checked(&frame[l3..])
        .ok()
        .map(|ip| usize::from(ip.total_len()))
    else {
        return;
    };
    let Some(request) = frame.get(l3 - HEADER_LEN..l3 + total) else {
        return;
    };
    let mut reply = request.to_vec();
    if echo_reply_in_place(&mut reply, our_mac).is_ok() {
        check_echo_reply(request, &reply, our_mac);
    }
}

fn check_echo_reply(request: &[u8], reply: &[u8], our_mac: [u8; 6]) {
    assert_eq!(reply.len(), request.len());
    let eth = EthernetFrame::new_checked(reply).unwrap();
    assert_eq!(eth.dst_addr(), request[6..12]);
    assert_eq!(eth.src_addr(), our_mac);
    assert_eq!(eth.ethertype(), ethertype::IPV4);
    let q = Ipv4Packet::new_checked(&request[HEADER_LEN..]).unwrap();
    let ip = Ipv4Packet::new_checked(&reply[HEADER_LEN..]).unwrap();
    assert_eq!(ip.version(), 4);
    assert!(ip.verify_checksum(), "reply IP checksum");
    assert_eq!(usize::from(ip.total_len()), reply.len() - HEADER_LEN);
    assert_eq!((ip.src_addr(), ip.dst_addr()), (q.dst_addr(), q.src_addr()));
    assert_eq!(ip.ttl(), OWN_TTL);
    assert!(!ip.more_frags() && ip.frag_offset() == 0);
    let hl = HEADER_LEN + ip.header_len();
    let msg = IcmpPacket::new_checked(&reply[hl..]).unwrap();
    assert_eq!(msg.msg_type(), icmp::kind::ECHO_REPLY);
    assert!(msg.verify_checksum(), "reply ICMP checksum");
    assert_eq!(reply[hl + 1], request[hl + 1], "code");
    assert_eq!(
        reply[hl + 4..],
        request[hl + 4..],
        "identifier, sequence, data"
    );
}

/// `icmp_error` about `original`, then the MTU of a fragmentation-needed.
fn error_frame(
    msg_type: u8,
    code: u8,
    original: &[u8],
    our_mac: [u8; 6],
    peer_mac: [u8; 6],
    our_ip: Ipv4Addr,
    mtu: u16,
) {
    let orig = Ipv4Packet::new_checked(original).unwrap();
    let mut buf = [0u8; ICMP_ERROR_MAX];
    let len = icmp_error(
        &mut buf, msg_type, code, original, our_mac, peer_mac, our_ip,
    )
    .expect("an error about a packet that may have one");
    let frame = &mut buf[..len];
    let quoted = original.len().min(orig.header_len() + 8);
    assert_eq!(len, HEADER_LEN + 20 + icmp::HEADER_LEN + quoted);
    check_error(
        frame,
        msg_type,
        code,
        &original[..quoted],
        our_mac,
        peer_mac,
        our_ip,
        orig.src_addr(),
    );
    if msg_type == icmp::kind::DEST_UNREACHABLE && code == 4 {
        set_next_hop_mtu(frame, mtu);
        let msg = IcmpPacket::new_checked(&frame[HEADER_LEN + 20..]).unwrap();
        assert_eq!(msg.seq_no(), mtu);
        assert!(msg.verify_checksum(), "checksum after the MTU");
    }
}

#[allow(clippy::too_many_arguments)]
fn check_error(
    frame: &[u8],
    msg_type: u8,
    code: u8,
    quoted: &[u8],
    our_mac: [u8; 6],
    peer_mac: [u8; 6],
    our_ip: Ipv4Addr,
    to: Ipv4Addr,
) {
    let eth = EthernetFrame::new_checked(frame).unwrap();
    assert_eq!((eth.dst_addr(), eth.src_addr()), (peer_mac, our_mac));
    assert_eq!(eth.ethertype(), ethertype::IPV4);
    let ip = Ipv4Packet::new_checked(&frame[HEADER_LEN..]).unwrap();
    assert_eq!((ip.version(), ip.header_len()), (4, 20));
    assert!(ip.verify_checksum(), "error IP checksum");
    assert_eq!(usize::from(ip.total_len()), frame.len() - HEADER_LEN);
    assert_eq!((ip.src_addr(), ip.dst_addr()), (our_ip, to));
    assert_eq!((ip.protocol(), ip.ttl()), (1, OWN_TTL));
    assert!(!ip.more_frags() && ip.frag_offset() == 0);
    let msg = IcmpPacket::new_checked(&frame[HEADER_LEN + 20..]).unwrap();
    assert_eq!((msg.msg_type(), msg.code()), (msg_type, code));
    assert!(msg.verify_checksum(), "error ICMP checksum");
    assert_eq!(&frame[HEADER_LEN + 20 + icmp::HEADER_LEN..], quoted);
}

/// The builders on bytes nobody checked: no panic, and what they accept
/// is valid.
fn raw_calls(frame: &[u8], offset: usize, our_mac: [u8; 6], our_ip: Ipv4Addr, t: u8, c: u8) {
    let mut raw = frame.to_vec();
    let before = raw.clone();
    if echo_reply_in_place(&mut raw, our_mac).is_ok() {
        let total = Ipv4Packet::new_checked(&before[HEADER_LEN..])
            .unwrap()
            .total_len();
        let len = HEADER_LEN + usize::from(total);
        check_echo_reply(&before[..len], &raw[..len], our_mac);
    }
    let original = frame.get(offset.min(frame.len())..).unwrap_or(&[]);
    let _ = may_send_icmp_error(original);
    let mut buf = [0u8; ICMP_ERROR_MAX];
    if let Some(len) = icmp_error(&mut buf, t, c, original, our_mac, [2; 6], our_ip) {
        assert!(len <= ICMP_ERROR_MAX);
        let ip = Ipv4Packet::new_checked(&buf[HEADER_LEN..len]).unwrap();
        assert!(ip.verify_checksum());
        assert!(IcmpPacket::new_checked(&buf[HEADER_LEN + 20..len])
            .unwrap()
            .verify_checksum());
    }
    if let Some(req) = ArpPacket::new_checked(original)
        .ok()
        .and_then(|p| ArpRepr::parse(&p))
    {
        let mut raw = frame.to_vec();
        if arp_reply_in_place(&mut raw, &req, our_mac) {
            check_arp_reply(&raw, &req, our_mac);
        }
    }
    set_next_hop_mtu(&mut raw, 1500);
}
