//! Frames the control plane writes, on plain byte buffers (unit-tested here,
//! no DPDK): ARP requests and replies, ICMP echo replies and time exceeded.

use hooks::wire::arp::{self, ArpPacket, ArpRepr};
use hooks::wire::ethernet::{ethertype, EthernetFrame, HEADER_LEN, MIN_FRAME_LEN};
use hooks::wire::icmp::{self, IcmpPacket};
use hooks::wire::Ipv4Packet;
use std::net::Ipv4Addr;

/// Length of an Ethernet + ARP frame before padding.
pub const ARP_FRAME_LEN: usize = HEADER_LEN + arp::PACKET_LEN;
/// TTL of packets the control plane originates.
pub const OWN_TTL: u8 = 64;
/// Room for an ICMP error frame: Ethernet, IP, ICMP header, quoted IP header
/// with options and 8 bytes.
pub const ICMP_ERROR_MAX: usize = HEADER_LEN + 20 + icmp::HEADER_LEN + 60 + 8;

fn write_eth(frame: &mut [u8], dst: [u8; 6], src: [u8; 6], ethertype: u16) {
    if let Ok(mut eth) = EthernetFrame::new_checked(frame) {
        eth.set_dst_addr(dst);
        eth.set_src_addr(src);
        eth.set_ethertype(ethertype);
    }
}

/// An ARP request for `target` from `(our_mac, our_ip)`, padded to 60 bytes:
/// broadcast, or unicast to `known` (re-probing a stale neighbour, RFC 1122).
pub fn arp_request(
    our_mac: [u8; 6],
    our_ip: Ipv4Addr,
    target: Ipv4Addr,
    known: Option<[u8; 6]>,
) -> [u8; MIN_FRAME_LEN] {
    let mut f = [0u8; MIN_FRAME_LEN];
    write_eth(
        &mut f,
        known.unwrap_or(hooks::wire::ethernet::BROADCAST),
        our_mac,
        ethertype::ARP,
    );
    let repr = ArpRepr {
        operation: arp::op::REQUEST,
        sender_mac: our_mac,
        sender_ip: our_ip,
        target_mac: [0; 6],
        target_ip: target,
    };
    if let Ok(mut p) = ArpPacket::new_checked(&mut f[HEADER_LEN..]) {
        repr.emit(&mut p);
    }
    f
}

/// Turn a frame holding `request` at offset 14 into our ARP reply (Ethernet
/// header included). The caller has stripped VLAN tags so the ARP sits at 14.
pub fn arp_reply_in_place(frame: &mut [u8], request: &ArpRepr, our_mac: [u8; 6]) -> bool {
    if frame.len() < ARP_FRAME_LEN {
        return false;
    }
    write_eth(frame, request.sender_mac, our_mac, ethertype::ARP);
    let reply = ArpRepr {
        operation: arp::op::REPLY,
        sender_mac: our_mac,
        sender_ip: request.target_ip,
        target_mac: request.sender_mac,
        target_ip: request.sender_ip,
    };
    match ArpPacket::new_checked(&mut frame[HEADER_LEN..]) {
        Ok(mut p) => {
            reply.emit(&mut p);
            true
        }
        Err(_) => false,
    }
}

/// Why an ICMP message to us gets no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EchoError {
    /// Truncated, bad checksum, or not an echo request.
    Invalid,
}

/// Turn an untagged frame holding an ICMP echo request to us (IP at 14,
/// frame trimmed to the IP total length) into the echo reply: addresses
/// swapped, TTL 64, IP checksum recomputed, ICMP type 0 with an incremental
/// checksum, Ethernet back to the sender's MAC from `our_mac`.
pub fn echo_reply_in_place(frame: &mut [u8], our_mac: [u8; 6]) -> Result<(), EchoError> {
    let Ok(eth) = EthernetFrame::new_checked(&*frame) else {
        return Err(EchoError::Invalid);
    };
    let peer_mac = eth.src_addr();
    let Ok(ip) = Ipv4Packet::new_checked(&mut frame[HEADER_LEN..]) else {
        return Err(EchoError::Invalid);
    };
    let header_len = ip.header_len();
    let total = usize::from(ip.total_len());
    if ip.version() != 4 || ip.frag_offset() != 0 || ip.more_frags() || total < header_len {
        return Err(EchoError::Invalid);
    }
    let (src, dst) = (ip.src_addr(), ip.dst_addr());
    // The total length may claim more than the frame holds (the caller
    // trims to it, but this must not panic on any bytes).
    let Some(icmp_bytes) = ip.into_inner().get_mut(header_len..total) else {
        return Err(EchoError::Invalid);
    };
    let Ok(mut msg) = IcmpPacket::new_checked(icmp_bytes) else {
        return Err(EchoError::Invalid);
    };
    if msg.msg_type() != icmp::kind::ECHO_REQUEST || !msg.verify_checksum() {
        return Err(EchoError::Invalid);
    }
    msg.echo_to_reply();
    let Ok(mut ip) = Ipv4Packet::new_checked(&mut frame[HEADER_LEN..]) else {
        return Err(EchoError::Invalid);
    };
    ip.set_src_addr(dst);
    ip.set_dst_addr(src);
    ip.set_ttl(OWN_TTL);
    ip.fill_checksum();
    write_eth(frame, peer_mac, our_mac, ethertype::IPV4);
    Ok(())
}

/// Whether RFC 1812 (4.3.2.7) allows an ICMP error about this IP packet: not
/// about an ICMP error, a non-first fragment, or a packet from an address that
/// is not a unicast host.
pub fn may_send_icmp_error(original_ip: &[u8]) -> bool {
    let Ok(ip) = Ipv4Packet::new_checked(original_ip) else {
        return false;
    };
    let src = ip.src_addr();
    if crate::datapath::ip_input::header::is_martian_source(src) {
        return false;
    }
    if ip.frag_offset() != 0 {
        return false;
    }
    if ip.protocol() == 1 {
        let t = ip.payload().first().copied().unwrap_or(0xff);
        // Only queries (echo request/reply) may trigger errors.
        if t != icmp::kind::ECHO_REQUEST && t != icmp::kind::ECHO_REPLY {
            return false;
        }
    }
    true
}

/// Write an ICMP error frame into `buf` about `original_ip` (the IP packet,
/// trimmed to its total length): Ethernet to `peer_mac` from `our_mac`, IP from
/// `our_ip` to the original source, TTL 64. Returns the frame length.
pub fn icmp_error(
    buf: &mut [u8; ICMP_ERROR_MAX],
    msg_type: u8,
    code: u8,
    original_ip: &[u8],
    our_mac: [u8; 6],
    peer_mac: [u8; 6],
    our_ip: Ipv4Addr,
) -> Option<usize> {
    let orig = Ipv4Packet::new_checked(original_ip).ok()?;
    let to = orig.src_addr();
    let icmp_len = icmp::emit_error(&mut buf[HEADER_LEN + 20..], msg_type, code, original_ip)?;
    let ip_len = 20 + icmp_len;
    buf[HEADER_LEN] = 0x45;
    let mut ip = Ipv4Packet::new_checked(&mut buf[HEADER_LEN..HEADER_LEN + ip_len]).ok()?;
    ip.set_version_ihl(4, 5);
    ip.set_dscp_ecn(0x30, 0); // CS6, as Linux sends ICMP errors (tos 0xc0)
    ip.set_total_len(ip_len as u16);
    ip.set_ident(0);
    ip.set_flags_frag(false, false, 0);
    ip.set_ttl(OWN_TTL);
    ip.set_protocol(1);
    ip.set_src_addr(our_ip);
    ip.set_dst_addr(to);
    ip.fill_checksum();
    write_eth(&mut buf[..], peer_mac, our_mac, ethertype::IPV4);
    Some(HEADER_LEN + ip_len)
}

/// Put the next-hop MTU in an ICMP fragmentation-needed frame built by
/// [`icmp_error`] (bytes 6..8 of the ICMP header, RFC 1191) and fix its
/// checksum.
pub fn set_next_hop_mtu(frame: &mut [u8], mtu: u16) {
    let at = HEADER_LEN + 20;
    if let Some(msg) = frame.get_mut(at..) {
        if let Ok(mut p) = IcmpPacket::new_checked(msg) {
            p.set_seq_no(mtu);
            p.fill_checksum();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hooks::testkit;

    const OUR_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 1];
    const PEER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 2];
    const OUR_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 1);
    const PEER_IP: Ipv4Addr = Ipv4Addr::new(10, 0, 1, 2);

    /// IPv4 from the peer to us, `payload` as given, not padded.
    fn ip_packet(protocol: u8, payload: &[u8], ttl: u8) -> Vec<u8> {
        testkit::ipv4(PEER_IP, OUR_IP, protocol, payload)
            .macs(OUR_MAC, PEER_MAC)
            .ttl(ttl)
            .pad(false)
            .build()
    }

    fn echo_request() -> Vec<u8> {
        testkit::icmp_echo(PEER_IP, OUR_IP, icmp::kind::ECHO_REQUEST, 0x1234, 1)
            .macs(OUR_MAC, PEER_MAC)
            .payload(b"ping")
            .pad(false)
            .build()
    }

    #[test]
    fn arp_request_is_broadcast_or_unicast_probe() {
        let f = arp_request(OUR_MAC, OUR_IP, PEER_IP, None);
        assert_eq!(&f[0..6], &[0xff; 6]);
        assert_eq!(&f[6..12], &OUR_MAC);
        assert_eq!(&f[12..14], &[0x08, 0x06]);
        let p = ArpPacket::new_checked(&f[14..]).unwrap();
        let r = ArpRepr::parse(&p).unwrap();
        assert_eq!(r.operation, arp::op::REQUEST);
        assert_eq!((r.sender_mac, r.sender_ip), (OUR_MAC, OUR_IP));
        assert_eq!((r.target_mac, r.target_ip), ([0; 6], PEER_IP));
        assert!(f[ARP_FRAME_LEN..].iter().all(|b| *b == 0));
        let probe = arp_request(OUR_MAC, OUR_IP, PEER_IP, Some(PEER_MAC));
        assert_eq!(&probe[0..6], &PEER_MAC);
    }

    #[test]
    fn arp_reply_answers_the_requester() {
        let mut f = arp_request(PEER_MAC, PEER_IP, OUR_IP, None);
        let req = ArpRepr::parse(&ArpPacket::new_checked(&f[14..]).unwrap()).unwrap();
        assert!(arp_reply_in_place(&mut f, &req, OUR_MAC));
        assert_eq!(&f[0..6], &PEER_MAC);
        assert_eq!(&f[6..12], &OUR_MAC);
        let r = ArpRepr::parse(&ArpPacket::new_checked(&f[14..]).unwrap()).unwrap();
        assert_eq!(r.operation, arp::op::REPLY);
        assert_eq!((r.sender_mac, r.sender_ip), (OUR_MAC, OUR_IP));
        assert_eq!((r.target_mac, r.target_ip), (PEER_MAC, PEER_IP));
        assert!(!arp_reply_in_place(&mut [0u8; 41], &req, OUR_MAC));
    }

    #[test]
    fn echo_reply_swaps_and_checksums() {
        let mut f = echo_request();
        echo_reply_in_place(&mut f, OUR_MAC).unwrap();
        assert_eq!(&f[0..6], &PEER_MAC);
        assert_eq!(&f[6..12], &OUR_MAC);
        let ip = Ipv4Packet::new_checked(&f[14..]).unwrap();
        assert_eq!(
            (ip.src_addr(), ip.dst_addr(), ip.ttl()),
            (OUR_IP, PEER_IP, 64)
        );
        assert!(ip.verify_checksum());
        let msg = IcmpPacket::new_checked(&f[34..]).unwrap();
        assert_eq!((msg.msg_type(), msg.ident(), msg.seq_no()), (0, 0x1234, 1));
        assert!(msg.verify_checksum());
        assert_eq!(msg.data(), b"ping");
    }

    #[test]
    fn bad_echo_requests_are_refused() {
        let mut f = echo_request();
        let last = f.len() - 1;
        f[last] ^= 1;
        assert_eq!(
            echo_reply_in_place(&mut f, OUR_MAC),
            Err(EchoError::Invalid)
        );
        let mut reply = echo_request();
        echo_reply_in_place(&mut reply, OUR_MAC).unwrap();
        assert_eq!(
            echo_reply_in_place(&mut reply, OUR_MAC),
            Err(EchoError::Invalid)
        );
        let mut short = ip_packet(1, &[8, 0, 0], 64);
        assert_eq!(
            echo_reply_in_place(&mut short, OUR_MAC),
            Err(EchoError::Invalid)
        );
    }

    /// Found by the control_frames fuzz target: a total length past the
    /// frame's end panicked (slice out of range) instead of being refused.
    #[test]
    fn an_echo_request_longer_than_its_frame_is_refused() {
        let mut f = echo_request();
        let mut ip = Ipv4Packet::new_checked(&mut f[HEADER_LEN..]).unwrap();
        ip.set_total_len(84);
        ip.fill_checksum();
        assert_eq!(
            echo_reply_in_place(&mut f, OUR_MAC),
            Err(EchoError::Invalid)
        );
    }

    /// Found by the control_frames fuzz target: a version 9 header was
    /// answered with a version 9 reply (the ip stage refuses one before it
    /// is punted, but the builder must not emit an invalid frame).
    #[test]
    fn an_echo_request_not_of_version_4_is_refused() {
        let mut f = echo_request();
        f[HEADER_LEN] = 0x95;
        Ipv4Packet::new_checked(&mut f[HEADER_LEN..])
            .unwrap()
            .fill_checksum();
        assert_eq!(
            echo_reply_in_place(&mut f, OUR_MAC),
            Err(EchoError::Invalid)
        );
    }

    #[test]
    fn time_exceeded_quotes_header_and_8_bytes() {
        let orig = ip_packet(17, &[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12], 1);
        let orig_ip = &orig[14..];
        assert!(may_send_icmp_error(orig_ip));
        let mut buf = [0u8; ICMP_ERROR_MAX];
        let n = icmp_error(&mut buf, 11, 0, orig_ip, OUR_MAC, PEER_MAC, OUR_IP).unwrap();
        assert_eq!(n, 14 + 20 + 8 + 20 + 8);
        let f = &buf[..n];
        assert_eq!(&f[0..6], &PEER_MAC);
        let ip = Ipv4Packet::new_checked(&f[14..]).unwrap();
        assert_eq!(
            (ip.src_addr(), ip.dst_addr(), ip.protocol()),
            (OUR_IP, PEER_IP, 1)
        );
        assert_eq!(usize::from(ip.total_len()), n - 14);
        assert!(ip.verify_checksum());
        let msg = IcmpPacket::new_checked(&f[34..]).unwrap();
        assert_eq!((msg.msg_type(), msg.code()), (11, 0));
        assert!(msg.verify_checksum());
        assert_eq!(&f[42..], &orig_ip[..28]);
    }

    #[test]
    fn frag_needed_carries_the_mtu() {
        let orig = ip_packet(17, &[0; 1480], 64);
        let mut buf = [0u8; ICMP_ERROR_MAX];
        let n = icmp_error(&mut buf, 3, 4, &orig[14..], OUR_MAC, PEER_MAC, OUR_IP).unwrap();
        set_next_hop_mtu(&mut buf[..n], 1400);
        let msg = IcmpPacket::new_checked(&buf[34..n]).unwrap();
        assert_eq!((msg.msg_type(), msg.code()), (3, 4));
        assert_eq!(&buf[34 + 4..34 + 8], &[0, 0, 0x05, 0x78]);
        assert!(msg.verify_checksum());
    }

    #[test]
    fn no_icmp_error_about_errors_fragments_or_broadcast_sources() {
        let err = ip_packet(1, &[11, 0, 0, 0, 0, 0, 0, 0], 1);
        assert!(!may_send_icmp_error(&err[14..]));
        let echo = echo_request();
        assert!(may_send_icmp_error(&echo[14..]));
        let mut frag = ip_packet(17, &[0; 8], 1);
        frag[14 + 6] = 0x00;
        frag[14 + 7] = 0x10;
        assert!(!may_send_icmp_error(&frag[14..]));
        let mut bcast = ip_packet(17, &[0; 8], 1);
        bcast[14 + 12..14 + 16].copy_from_slice(&[255; 4]);
        assert!(!may_send_icmp_error(&bcast[14..]));
    }
}
