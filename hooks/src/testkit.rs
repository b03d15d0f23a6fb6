//! Frames for tests, built through the [`wire`](crate::wire) Reprs: the one
//! frame builder of the hooks' unit tests, `hooks/tests`, the router's tests,
//! the fuzz targets and the bench's traffic, so that none of them places
//! header bytes by hand.
//!
//! A [`Frame`] starts as one of a few shapes ([`udp()`], [`tcp()`],
//! [`icmp_echo`], [`icmp_error`], [`ipv4`]) and is refined by methods
//! (addresses, VLAN tags, TTL, fragments, options, payload), then
//! [`build`](Frame::build) gives an Ethernet frame and
//! [`build_ipv4`](Frame::build_ipv4) the IPv4 datagram alone. Lengths and
//! checksums (IPv4 header; UDP and TCP with the pseudo-header; ICMP) are
//! right unless a test breaks them on purpose: [`Frame::total_len`],
//! [`Frame::ihl`], [`Frame::version`] and [`Frame::bad_ipv4_checksum`] write
//! exactly the malformed field a test checks, and [`Frame::truncate`] cuts
//! the result.
//!
//! Behind the `testkit` feature, off by default: the router never builds
//! frames from nothing (it rewrites frames in place through the views), so
//! this is no part of the library it ships. Crates turn it on where they
//! need it: the hooks and the router in their dev-dependencies, the bench
//! (a test tool whose traffic generator builds frames) and the fuzz crates
//! in their dependencies.

use crate::wire::arp::{self, ArpPacket, ArpRepr};
use crate::wire::checksum;
use crate::wire::ethernet::{self, ethertype, EthernetFrame, EthernetRepr};
use crate::wire::icmp::{self, IcmpEchoRepr, IcmpPacket};
use crate::wire::ipv4::{Ipv4Packet, Ipv4Repr};
use crate::wire::tcp::{self, TcpPacket, TcpRepr};
use crate::wire::udp::{self, UdpPacket, UdpRepr};
use crate::wire::vlan::{VlanRepr, VlanTag, TAG_LEN, VID_MASK};
use std::net::Ipv4Addr;

/// Destination MAC of a [`Frame`] unless [`Frame::macs`] says otherwise.
pub const DST_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
/// Source MAC of a [`Frame`] unless [`Frame::macs`] says otherwise.
pub const SRC_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];

/// What follows the IPv4 header.
#[derive(Clone, Debug, PartialEq, Eq)]
enum L4 {
    Udp {
        sport: u16,
        dport: u16,
    },
    Tcp {
        sport: u16,
        dport: u16,
        flags: u8,
        seq: u32,
        ack: u32,
        window: u16,
        options: Vec<u8>,
    },
    Echo {
        msg_type: u8,
        code: u8,
        ident: u16,
        seq_no: u16,
    },
    /// Type, code, zero checksum and four zero bytes, then the payload.
    Error {
        msg_type: u8,
        code: u8,
    },
    /// The payload alone.
    Raw,
}

/// An IPv4 frame to build; see the [module](self) doc.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub struct Frame {
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    /// (TPID, TCI) of each tag, outer first.
    tags: Vec<(u16, u16)>,
    src: Ipv4Addr,
    dst: Ipv4Addr,
    protocol: u8,
    ttl: u8,
    tos: u8,
    ident: u16,
    dont_frag: bool,
    more_frags: bool,
    frag_offset: u16,
    ip_options: Vec<u8>,
    l4: L4,
    payload: Vec<u8>,
    pad: bool,
    total_len: Option<u16>,
    ihl: Option<u8>,
    version: Option<u8>,
    flags_frag: Option<u16>,
    stale_ipv4_checksum: bool,
    bad_ipv4_checksum: bool,
    truncate: Option<usize>,
}

/// An IPv4 datagram from `src` to `dst` of `protocol` whose payload is
/// `payload` as given (no transport header is written).
pub fn ipv4(
    src: impl Into<Ipv4Addr>,
    dst: impl Into<Ipv4Addr>,
    protocol: u8,
    payload: &[u8],
) -> Frame {
    Frame {
        dst_mac: DST_MAC,
        src_mac: SRC_MAC,
        tags: Vec::new(),
        src: src.into(),
        dst: dst.into(),
        protocol,
        ttl: 64,
        tos: 0,
        ident: 0,
        dont_frag: false,
        more_frags: false,
        frag_offset: 0,
        ip_options: Vec::new(),
        l4: L4::Raw,
        payload: payload.to_vec(),
        pad: true,
        total_len: None,
        ihl: None,
        version: None,
        flags_frag: None,
        stale_ipv4_checksum: false,
        bad_ipv4_checksum: false,
        truncate: None,
    }
}

/// A UDP datagram from `src:sport` to `dst:dport`, no data.
pub fn udp(src: impl Into<Ipv4Addr>, dst: impl Into<Ipv4Addr>, sport: u16, dport: u16) -> Frame {
    Frame {
        l4: L4::Udp { sport, dport },
        ..ipv4(src, dst, udp::PROTOCOL, &[])
    }
}

/// A TCP segment from `src:sport` to `dst:dport` with `flags`
/// (`flow::tcp_flag`), sequence, acknowledgment and window 0, no options,
/// no data.
pub fn tcp(
    src: impl Into<Ipv4Addr>,
    dst: impl Into<Ipv4Addr>,
    sport: u16,
    dport: u16,
    flags: u8,
) -> Frame {
    Frame {
        l4: L4::Tcp {
            sport,
            dport,
            flags,
            seq: 0,
            ack: 0,
            window: 0,
            options: Vec::new(),
        },
        ..ipv4(src, dst, tcp::PROTOCOL, &[])
    }
}

/// An ICMP echo message (`msg_type` 8 request or 0 reply, or any other
/// type with an identifier and sequence number) from `src` to `dst`.
pub fn icmp_echo(
    src: impl Into<Ipv4Addr>,
    dst: impl Into<Ipv4Addr>,
    msg_type: u8,
    ident: u16,
    seq_no: u16,
) -> Frame {
    Frame {
        l4: L4::Echo {
            msg_type,
            code: 0,
            ident,
            seq_no,
        },
        ..ipv4(src, dst, PROTOCOL_ICMP, &[])
    }
}

/// An ICMP error message (or any message whose four bytes after the
/// checksum are zero) from `src` to `dst` with `quoted` after its header:
/// exactly those bytes, as many or as few as the test needs (the router's
/// own errors are written by [`icmp::emit_error`]).
pub fn icmp_error(
    src: impl Into<Ipv4Addr>,
    dst: impl Into<Ipv4Addr>,
    msg_type: u8,
    code: u8,
    quoted: &[u8],
) -> Frame {
    Frame {
        l4: L4::Error { msg_type, code },
        ..ipv4(src, dst, PROTOCOL_ICMP, quoted)
    }
}

/// An Ethernet frame of `ethertype` carrying `payload` as given (ARP, IPv6,
/// or bytes that are no protocol), not padded.
pub fn ethernet(dst: [u8; 6], src: [u8; 6], ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; ethernet::HEADER_LEN];
    f.extend_from_slice(payload);
    let repr = EthernetRepr {
        dst_addr: dst,
        src_addr: src,
        ethertype,
    };
    if let Ok(mut frame) = EthernetFrame::new_checked(&mut f[..]) {
        repr.emit(&mut frame);
    }
    f
}

/// An Ethernet frame from `src` to `dst` carrying the ARP packet `arp`
/// (42 bytes, not padded).
pub fn arp(dst: [u8; 6], src: [u8; 6], arp: &ArpRepr) -> Vec<u8> {
    let mut body = [0u8; arp::PACKET_LEN];
    if let Ok(mut packet) = ArpPacket::new_checked(&mut body[..]) {
        arp.emit(&mut packet);
    }
    ethernet(dst, src, ethertype::ARP, &body)
}

/// Recompute the header checksum of the IPv4 header at the start of `ip`
/// (its length from the IHL), after a test changed a field by hand.
pub fn refresh_ipv4_checksum(ip: &mut [u8]) {
    Ipv4Packet::new_unchecked(ip).fill_checksum();
}

const PROTOCOL_ICMP: u8 = 1;

impl Frame {
    /// Destination and source MAC addresses.
    pub fn macs(mut self, dst: [u8; 6], src: [u8; 6]) -> Frame {
        self.dst_mac = dst;
        self.src_mac = src;
        self
    }

    /// Add an 802.1Q tag with `tci` (priority, DEI, VLAN id), after the
    /// tags already added.
    pub fn vlan(self, tci: u16) -> Frame {
        self.tag(ethertype::VLAN, tci)
    }

    /// Add a tag of protocol `tpid` (0x8100, 0x88a8, or any other value)
    /// with `tci`, after the tags already added.
    pub fn tag(mut self, tpid: u16, tci: u16) -> Frame {
        self.tags.push((tpid, tci));
        self
    }

    /// Time to live (64 unless set).
    pub fn ttl(mut self, ttl: u8) -> Frame {
        self.ttl = ttl;
        self
    }

    /// The whole type-of-service byte: DSCP and ECN.
    pub fn tos(mut self, tos: u8) -> Frame {
        self.tos = tos;
        self
    }

    /// Identification (0 unless set).
    pub fn ident(mut self, ident: u16) -> Frame {
        self.ident = ident;
        self
    }

    /// Set the don't fragment flag.
    pub fn dont_frag(mut self) -> Frame {
        self.dont_frag = true;
        self
    }

    /// A fragment at `offset` bytes (a multiple of 8), more following if
    /// `more`. A UDP or TCP checksum covers this fragment's bytes only.
    pub fn fragment(mut self, more: bool, offset: u16) -> Frame {
        self.more_frags = more;
        self.frag_offset = offset;
        self
    }

    /// IPv4 options, padded with zeros to a multiple of 4 (at most 40).
    pub fn ip_options(mut self, options: &[u8]) -> Frame {
        self.ip_options = options.to_vec();
        self
    }

    /// Data after the transport header (the whole IPv4 payload of an
    /// [`ipv4`] frame, the quote of an [`icmp_error`]).
    pub fn payload(mut self, payload: &[u8]) -> Frame {
        self.payload = payload.to_vec();
        self
    }

    /// TCP sequence number (of a [`tcp()`] frame; ignored otherwise).
    pub fn seq(mut self, n: u32) -> Frame {
        if let L4::Tcp { seq, .. } = &mut self.l4 {
            *seq = n;
        }
        self
    }

    /// TCP acknowledgment number (of a [`tcp()`] frame; ignored otherwise).
    pub fn ack(mut self, n: u32) -> Frame {
        if let L4::Tcp { ack, .. } = &mut self.l4 {
            *ack = n;
        }
        self
    }

    /// TCP window (of a [`tcp()`] frame; ignored otherwise).
    pub fn window(mut self, n: u16) -> Frame {
        if let L4::Tcp { window, .. } = &mut self.l4 {
            *window = n;
        }
        self
    }

    /// TCP options, padded with zeros to a multiple of 4 (of a [`tcp()`]
    /// frame; ignored otherwise).
    pub fn tcp_options(mut self, bytes: &[u8]) -> Frame {
        if let L4::Tcp { options, .. } = &mut self.l4 {
            *options = bytes.to_vec();
        }
        self
    }

    /// Whether [`build`](Self::build) pads the frame with zeros to
    /// Ethernet's 60-byte minimum, as a NIC sends it (it does unless told).
    pub fn pad(mut self, pad: bool) -> Frame {
        self.pad = pad;
        self
    }

    /// Write `total_len` as the IPv4 total length instead of the right one
    /// (the header checksum stays right).
    pub fn total_len(mut self, total_len: u16) -> Frame {
        self.total_len = Some(total_len);
        self
    }

    /// Write `ihl` as the IHL instead of the right one (the header checksum
    /// over the first 20 bytes stays right when `ihl` is below 5).
    pub fn ihl(mut self, ihl: u8) -> Frame {
        self.ihl = Some(ihl);
        self
    }

    /// Write `version` as the IP version instead of 4 (the header checksum
    /// stays right).
    pub fn version(mut self, version: u8) -> Frame {
        self.version = Some(version);
        self
    }

    /// Write `word` as the whole flags and fragment offset field, the
    /// reserved bit included (the header checksum stays right).
    pub fn flags_frag(mut self, word: u16) -> Frame {
        self.flags_frag = Some(word);
        self
    }

    /// Leave the IPv4 header checksum as it was before [`total_len`],
    /// [`ihl`], [`version`] or [`flags_frag`] changed a field: stale, as a
    /// box that rewrote a field without updating it leaves it.
    ///
    /// [`total_len`]: Self::total_len
    /// [`ihl`]: Self::ihl
    /// [`version`]: Self::version
    /// [`flags_frag`]: Self::flags_frag
    pub fn stale_ipv4_checksum(mut self) -> Frame {
        self.stale_ipv4_checksum = true;
        self
    }

    /// ICMP code of an [`icmp_echo`] frame (0 unless set; an echo with
    /// another code is not one a host answers).
    pub fn icmp_code(mut self, value: u8) -> Frame {
        if let L4::Echo { code, .. } = &mut self.l4 {
            *code = value;
        }
        self
    }

    /// Leave the IPv4 header checksum wrong (one off the right one).
    pub fn bad_ipv4_checksum(mut self) -> Frame {
        self.bad_ipv4_checksum = true;
        self
    }

    /// Cut what [`build`](Self::build) or [`build_ipv4`](Self::build_ipv4)
    /// gives to its first `len` bytes (no effect on a shorter one).
    pub fn truncate(mut self, len: usize) -> Frame {
        self.truncate = Some(len);
        self
    }

    /// Where the IPv4 header starts in what [`build`](Self::build) gives:
    /// after the Ethernet header and the tags.
    pub fn l3_offset(&self) -> usize {
        ethernet::HEADER_LEN + TAG_LEN * self.tags.len()
    }

    /// The Ethernet frame: header, tags, IPv4 datagram, padding.
    pub fn build(&self) -> Vec<u8> {
        let l3 = self.l3_offset();
        let mut f = vec![0u8; l3];
        let first = self.tags.first().map_or(ethertype::IPV4, |t| t.0);
        let eth = EthernetRepr {
            dst_addr: self.dst_mac,
            src_addr: self.src_mac,
            ethertype: first,
        };
        if let Ok(mut frame) = EthernetFrame::new_checked(&mut f[..]) {
            eth.emit(&mut frame);
        }
        for (i, &(_, tci)) in self.tags.iter().enumerate() {
            // Each tag's ethertype field is the next tag's TPID.
            let tag = VlanRepr {
                pcp: (tci >> 13) as u8,
                dei: tci & 0x1000 != 0,
                vid: tci & VID_MASK,
                ethertype: self.tags.get(i + 1).map_or(ethertype::IPV4, |t| t.0),
            };
            let at = ethernet::HEADER_LEN + TAG_LEN * i;
            if let Ok(mut view) = VlanTag::new_checked(&mut f[at..]) {
                tag.emit(&mut view);
            }
        }
        f.extend(self.datagram());
        if self.pad && f.len() < ethernet::MIN_FRAME_LEN {
            f.resize(ethernet::MIN_FRAME_LEN, 0);
        }
        self.cut(f)
    }

    /// The IPv4 datagram alone (what follows the Ethernet header and tags
    /// in [`build`](Self::build), without padding).
    pub fn build_ipv4(&self) -> Vec<u8> {
        self.cut(self.datagram())
    }

    /// The transport message alone: header (checksum right for the
    /// addresses given) and payload, as the IPv4 payload of
    /// [`build_ipv4`](Self::build_ipv4) (for slicing a header into
    /// fragments).
    pub fn build_l4(&self) -> Vec<u8> {
        self.l4_bytes()
    }

    fn cut(&self, mut bytes: Vec<u8>) -> Vec<u8> {
        if let Some(len) = self.truncate {
            bytes.truncate(len);
        }
        bytes
    }

    /// The transport message (header and payload), its checksum right for
    /// this source and destination.
    fn l4_bytes(&self) -> Vec<u8> {
        let payload = &self.payload;
        let with_header = |header_len: usize| {
            let mut b = vec![0u8; header_len];
            b.extend_from_slice(payload);
            b
        };
        match &self.l4 {
            L4::Raw => payload.clone(),
            L4::Udp { sport, dport } => {
                let repr = UdpRepr {
                    src_port: *sport,
                    dst_port: *dport,
                    payload_len: payload.len(),
                };
                let mut b = with_header(repr.header_len());
                if let Ok(mut view) = UdpPacket::new_checked(&mut b[..]) {
                    repr.emit(&mut view, self.src, self.dst);
                }
                b
            }
            L4::Tcp { .. } => self.tcp_bytes(),
            L4::Echo {
                msg_type,
                code,
                ident,
                seq_no,
            } => {
                let repr = IcmpEchoRepr {
                    msg_type: *msg_type,
                    ident: *ident,
                    seq_no: *seq_no,
                    data_len: payload.len(),
                };
                let mut b = with_header(repr.header_len());
                if let Ok(mut view) = IcmpPacket::new_checked(&mut b[..]) {
                    repr.emit(&mut view);
                    if *code != 0 {
                        view.set_code(*code);
                        view.fill_checksum();
                    }
                }
                b
            }
            L4::Error { msg_type, code } => {
                let mut b = with_header(icmp::HEADER_LEN);
                if let Ok(mut m) = IcmpPacket::new_checked(&mut b[..]) {
                    m.set_msg_type(*msg_type);
                    m.set_code(*code);
                    m.fill_checksum();
                }
                b
            }
        }
    }

    /// A TCP segment (header, options and payload), its checksum right.
    fn tcp_bytes(&self) -> Vec<u8> {
        let L4::Tcp {
            sport,
            dport,
            flags,
            seq,
            ack,
            window,
            options,
        } = &self.l4
        else {
            return self.payload.clone();
        };
        let repr = TcpRepr {
            src_port: *sport,
            dst_port: *dport,
            seq_number: *seq,
            ack_number: *ack,
            flags: *flags,
            window: *window,
            urgent: 0,
            options,
            payload_len: self.payload.len(),
        };
        let mut b = vec![0u8; repr.header_len()];
        b.extend_from_slice(&self.payload);
        repr.emit(
            &mut TcpPacket::new_unchecked(&mut b[..]),
            self.src,
            self.dst,
        );
        b
    }

    /// The IPv4 header and the transport message, then the breakages.
    fn datagram(&self) -> Vec<u8> {
        let l4 = self.l4_bytes();
        let repr = Ipv4Repr {
            src_addr: self.src,
            dst_addr: self.dst,
            protocol: self.protocol,
            payload_len: l4.len(),
            ttl: self.ttl,
            dscp: self.tos >> 2,
            ecn: self.tos & 3,
            ident: self.ident,
            dont_frag: self.dont_frag,
            more_frags: self.more_frags,
            frag_offset: self.frag_offset,
            options: &self.ip_options,
        };
        let mut b = vec![0u8; repr.header_len()];
        b.extend_from_slice(&l4);
        let mut ip = Ipv4Packet::new_unchecked(&mut b[..]);
        repr.emit(&mut ip);
        if let Some(total) = self.total_len {
            ip.set_total_len(total);
        }
        if self.ihl.is_some() || self.version.is_some() {
            let ihl = self.ihl.unwrap_or((repr.header_len() / 4) as u8);
            ip.set_version_ihl(self.version.unwrap_or(4), ihl);
        }
        if let Some(word) = self.flags_frag {
            b[6..8].copy_from_slice(&word.to_be_bytes());
        }
        let changed = self.total_len.is_some()
            || self.ihl.is_some()
            || self.version.is_some()
            || self.flags_frag.is_some();
        if changed && !self.stale_ipv4_checksum {
            let mut ip = Ipv4Packet::new_unchecked(&mut b[..]);
            // Over the header as the (new) IHL says, at least 20 bytes.
            let len = (usize::from(ip.ihl()) * 4).max(20);
            ip.set_checksum(0);
            let len = len.min(b.len());
            let c = checksum::checksum(&b[..len]);
            Ipv4Packet::new_unchecked(&mut b[..]).set_checksum(c);
        }
        if self.bad_ipv4_checksum {
            let mut ip = Ipv4Packet::new_unchecked(&mut b[..]);
            let c = ip.checksum();
            ip.set_checksum(c ^ 1);
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::{IcmpPacket, UdpPacket, VlanRepr};

    const A: [u8; 4] = [192, 0, 2, 1];
    const B: [u8; 4] = [192, 0, 2, 2];

    /// Frames captured on a Linux veth with checksum offload off
    /// (AF_PACKET): a UDP datagram 192.0.2.1.40000 > 192.0.2.2.7 carrying
    /// "fastpath", and a SYN 192.0.2.1.40001 > 192.0.2.2.9.
    const CAPTURED_UDP: &str =
        "ce75dd97c6db22932315cb4608004500002425f94000401190ccc0000201c0000202\
                                9c400007001020e36661737470617468";
    const CAPTURED_SYN: &str =
        "ce75dd97c6db22932315cb4608004500003cbaa940004006fc0ec0000201c0000202\
                                9c4100095c7d7e0100000000a002faf0bbc20000020405b40402080aa45ef21d00\
                                0000000103030a";
    const DST: [u8; 6] = [0xce, 0x75, 0xdd, 0x97, 0xc6, 0xdb];
    const SRC: [u8; 6] = [0x22, 0x93, 0x23, 0x15, 0xcb, 0x46];

    fn hex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    #[test]
    fn builds_the_captured_udp_frame() {
        let f = udp(A, B, 40000, 7)
            .macs(DST, SRC)
            .ident(0x25f9)
            .dont_frag()
            .payload(b"fastpath")
            .pad(false)
            .build();
        assert_eq!(f, hex(CAPTURED_UDP));
    }

    #[test]
    fn builds_the_captured_syn() {
        let options = hex("020405b40402080aa45ef21d000000000103030a");
        let f = tcp(A, B, 40001, 9, 0x02)
            .macs(DST, SRC)
            .ident(0xbaa9)
            .dont_frag()
            .seq(0x5c7d_7e01)
            .window(64240)
            .tcp_options(&options)
            .build();
        assert_eq!(f, hex(CAPTURED_SYN));
    }

    /// What is built parses back through the views to the fields given.
    #[test]
    fn parses_back_through_the_views() {
        let f = udp(A, B, 1000, 53)
            .vlan(0xa005)
            .ttl(9)
            .tos(0xb9)
            .payload(&[7; 3])
            .build();
        assert_eq!(f.len(), 60);
        let eth = EthernetFrame::new_checked(&f[..]).unwrap();
        assert_eq!(
            EthernetRepr::parse(&eth),
            EthernetRepr {
                dst_addr: DST_MAC,
                src_addr: SRC_MAC,
                ethertype: ethertype::VLAN
            }
        );
        let tag = VlanRepr::parse(&VlanTag::new_checked(eth.payload()).unwrap());
        assert_eq!(
            (tag.pcp, tag.dei, tag.vid, tag.ethertype),
            (5, false, 5, 0x0800)
        );
        let ip = Ipv4Packet::new_checked(&f[18..]).unwrap();
        assert!(ip.verify_checksum());
        let repr = Ipv4Repr::parse(&ip).unwrap();
        assert_eq!((repr.src_addr, repr.dst_addr), (A.into(), B.into()));
        assert_eq!((repr.ttl, repr.dscp, repr.ecn), (9, 0x2e, 1));
        assert_eq!((repr.protocol, repr.payload_len), (17, 11));
        let u = UdpPacket::new_checked(ip.payload()).unwrap();
        assert!(u.verify_checksum(A.into(), B.into()));
        assert_eq!(
            UdpRepr::parse(&u),
            Ok(UdpRepr {
                src_port: 1000,
                dst_port: 53,
                payload_len: 3
            })
        );

        let f = icmp_echo(A, B, icmp::kind::ECHO_REQUEST, 77, 3).build_ipv4();
        let ip = Ipv4Packet::new_checked(&f[..]).unwrap();
        let m = IcmpPacket::new_checked(ip.payload()).unwrap();
        assert!(m.verify_checksum());
        assert_eq!((m.msg_type(), m.ident(), m.seq_no()), (8, 77, 3));

        let quoted = udp(B, A, 53, 1000).build_ipv4();
        let f = icmp_error(A, B, 3, 3, &quoted[..28]).build_ipv4();
        let m = IcmpPacket::new_checked(&f[20..]).unwrap();
        assert!(m.verify_checksum());
        assert_eq!((m.msg_type(), m.code(), m.data()), (3, 3, &quoted[..28]));

        let f = tcp(A, B, 1, 2, 0x12).seq(5).ack(6).window(7).build_ipv4();
        let t = TcpPacket::new_checked(&f[20..]).unwrap();
        assert!(t.verify_checksum(A.into(), B.into()));
        let r = TcpRepr::parse(&t);
        assert_eq!(
            (r.seq_number, r.ack_number, r.window, r.flags),
            (5, 6, 7, 0x12)
        );
    }

    #[test]
    fn tags_fragments_and_options() {
        let f = ipv4(A, B, 6, &[0; 8])
            .tag(ethertype::QINQ, 100)
            .vlan(0x2007)
            .fragment(true, 64)
            .ip_options(&[0x94, 0x04, 0, 0])
            .build();
        let frame = ipv4(A, B, 6, &[0; 8]).tag(ethertype::QINQ, 100).vlan(7);
        assert_eq!(frame.l3_offset(), 22);
        assert_eq!(f[12..22], [0x88, 0xa8, 0, 100, 0x81, 0, 0x20, 7, 0x08, 0]);
        let ip = Ipv4Packet::new_checked(&f[22..]).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!(
            (ip.more_frags(), ip.frag_offset(), ip.header_len()),
            (true, 64, 24)
        );
        assert_eq!(ip.options(), [0x94, 0x04, 0, 0]);
    }

    #[test]
    fn breaks_what_it_is_told_to() {
        let ok = udp(A, B, 1, 2).build_ipv4();
        let bad = udp(A, B, 1, 2).bad_ipv4_checksum().build_ipv4();
        assert!(!Ipv4Packet::new_checked(&bad[..]).unwrap().verify_checksum());
        assert_eq!(ok[..10], bad[..10]);
        assert_eq!(ok[12..], bad[12..]);

        let f = udp(A, B, 1, 2).ihl(4).build_ipv4();
        assert_eq!(f[0], 0x44);
        assert_eq!(checksum::sum(&f[..20]), 0xffff);
        let f = udp(A, B, 1, 2).ihl(6).build_ipv4();
        let ip = Ipv4Packet::new_checked(&f[..]).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!(ip.header_len(), 24);

        let f = udp(A, B, 1, 2).total_len(1000).version(6).build_ipv4();
        let ip = Ipv4Packet::new_checked(&f[..]).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!((ip.version(), ip.total_len()), (6, 1000));

        let f = udp(A, B, 1, 2).flags_frag(0x8001).build_ipv4();
        let ip = Ipv4Packet::new_checked(&f[..]).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!((f[6], f[7], ip.frag_offset()), (0x80, 0x01, 8));
        let f = udp(A, B, 1, 2)
            .flags_frag(0x2000)
            .stale_ipv4_checksum()
            .build_ipv4();
        assert_eq!(f[..6], ok[..6]);
        assert_eq!(f[8..], ok[8..]);
        assert!(!Ipv4Packet::new_checked(&f[..]).unwrap().verify_checksum());

        let f = icmp_echo(A, B, 8, 1, 2).icmp_code(5).build_ipv4();
        let m = IcmpPacket::new_checked(&f[20..]).unwrap();
        assert!(m.verify_checksum());
        assert_eq!((m.msg_type(), m.code()), (8, 5));

        assert_eq!(udp(A, B, 1, 2).truncate(17).build().len(), 17);
        assert_eq!(udp(A, B, 1, 2).truncate(17).build_ipv4().len(), 17);
        assert_eq!(udp(A, B, 1, 2).truncate(99).build().len(), 60);
    }

    #[test]
    fn refresh_and_ethernet() {
        let mut f = tcp(A, B, 1, 2, 0x02).build();
        f[22] = 3;
        assert!(!Ipv4Packet::new_checked(&f[14..]).unwrap().verify_checksum());
        refresh_ipv4_checksum(&mut f[14..]);
        assert!(Ipv4Packet::new_checked(&f[14..]).unwrap().verify_checksum());
        let request = ArpRepr {
            operation: arp::op::REQUEST,
            sender_mac: SRC_MAC,
            sender_ip: A.into(),
            target_mac: [0; 6],
            target_ip: B.into(),
        };
        let f = arp([0xff; 6], SRC_MAC, &request);
        assert_eq!((f.len(), &f[12..14]), (42, &[0x08, 0x06][..]));
        let back = ArpRepr::parse(&ArpPacket::new_checked(&f[14..]).unwrap());
        assert_eq!(back, Some(request));
        assert_eq!(
            ethernet(DST_MAC, SRC_MAC, ethertype::ARP, &[1, 2]),
            [2, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0, 2, 0x08, 0x06, 1, 2]
        );
    }
}
