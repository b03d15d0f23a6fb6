//! The flow fields of one IPv6 packet for the built-in hooks, as
//! [`crate::flow`] reads IPv4's: addresses, the upper-layer protocol found
//! by walking the extension headers (RFC 8200 section 4, at most
//! [`MAX_EXTENSION_HEADERS`]), ports, TCP flags, DSCP (the traffic class's
//! upper six bits), ICMPv6 type and code, fragment position. A packet whose
//! chain cannot be walked (cut, too long, a first fragment without the
//! whole chain: RFC 7112) is `None`: it gets a filter's policy, never a
//! match as if it had no ports. Never panics.
//!
//! [`MAX_EXTENSION_HEADERS`]: crate::wire::ipv6::MAX_EXTENSION_HEADERS

use crate::flow::{proto, Fragment};
use crate::wire::ipv6::{next_header, walk_extension_headers, HEADER_LEN};

/// The fields rules look at in an IPv6 packet. Addresses as on the wire,
/// ports in host byte order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowSummary6 {
    pub src: [u8; 16],
    pub dst: [u8; 16],
    /// The upper-layer protocol (TCP, UDP, ICMPv6...); in a non-first
    /// fragment, its Fragment header's next header.
    pub proto: u8,
    /// Upper six bits of the traffic class.
    pub dscp: u8,
    pub fragment: Fragment,
    /// A non-first fragment at offset 8 bytes: on reassembly it would
    /// overlap the first fragment's TCP header (RFC 1858; RFC 5722 forbids
    /// overlaps in IPv6). False for every other packet.
    pub frag_offset_one: bool,
    /// The upper-layer header was read: ports (TCP/UDP), flags (TCP) or
    /// type and code (ICMPv6) are valid.
    pub l4: bool,
    /// TCP / UDP ports; for ICMPv6 echo request and reply, both hold the
    /// identifier; 0 otherwise.
    pub sport: u16,
    pub dport: u16,
    pub tcp_flags: u8,
    pub icmp_type: u8,
    pub icmp_code: u8,
    /// Offset of the upper-layer header from the start of the IPv6 header.
    pub l4_offset: u16,
}

impl FlowSummary6 {
    /// Read an IPv6 packet starting at `l3[0]`: `None` when the fixed
    /// header is short or not version 6, or its extension headers cannot
    /// be walked. The upper-layer part is best effort: missing or short,
    /// `l4` is false.
    pub fn parse(l3: &[u8]) -> Option<FlowSummary6> {
        let h: &[u8; HEADER_LEN] = l3.first_chunk()?;
        if h[0] >> 4 != 6 {
            return None;
        }
        let payload_len = usize::from(u16::from_be_bytes([h[4], h[5]]));
        // The packet ends at its payload length when that is inside the
        // frame (Ethernet padding is not upper-layer data).
        let end = (HEADER_LEN + payload_len).min(l3.len());
        let payload = l3.get(HEADER_LEN..end).unwrap_or_default();
        let upper = walk_extension_headers(h[6], payload).ok()?;
        let fragment = match upper.fragment {
            Some(f) if f.offset != 0 => Fragment::NonFirst,
            Some(f) if f.more => Fragment::First,
            _ => Fragment::None,
        };
        let mut s = FlowSummary6 {
            src: *h[8..24].first_chunk()?,
            dst: *h[24..40].first_chunk()?,
            proto: upper.protocol,
            dscp: (u16::from_be_bytes([h[0], h[1]]) >> 6) as u8 & 0x3f,
            fragment,
            frag_offset_one: upper.fragment.is_some_and(|f| f.offset == 8),
            l4_offset: (HEADER_LEN + upper.offset) as u16,
            ..FlowSummary6::default()
        };
        if fragment == Fragment::NonFirst {
            return Some(s);
        }
        let l4 = payload.get(upper.offset..).unwrap_or_default();
        let be16 = |i: usize| u16::from_be_bytes([l4[i], l4[i + 1]]);
        match s.proto {
            proto::TCP if l4.len() >= 20 => {
                (s.sport, s.dport, s.tcp_flags) = (be16(0), be16(2), l4[13]);
                s.l4 = true;
            }
            proto::UDP if l4.len() >= 8 => {
                (s.sport, s.dport) = (be16(0), be16(2));
                s.l4 = true;
            }
            next_header::ICMPV6 if l4.len() >= 8 => {
                (s.icmp_type, s.icmp_code) = (l4[0], l4[1]);
                if matches!(s.icmp_type, 128 | 129) {
                    (s.sport, s.dport) = (be16(4), be16(4));
                }
                s.l4 = true;
            }
            _ => {}
        }
        Some(s)
    }

    /// The fixed header and the first 8 bytes after it of a plain packet,
    /// and its TCP flags (0 for UDP): a TCP or UDP header right after the
    /// fixed header (no extension header), inside both the payload length
    /// and the frame. `None` for every other packet. What the plain paths
    /// (`Key6::set_plain`, the stateful filter's summary) read instead of
    /// [`FlowSummary6::parse`], which gives such a packet the same fields.
    #[inline(always)]
    pub fn plain(l3: &[u8]) -> Option<(&[u8; HEADER_LEN + 8], u8)> {
        let h = l3.first_chunk::<{ HEADER_LEN + 8 }>()?;
        if h[0] >> 4 != 6 {
            return None;
        }
        let payload = usize::from(u16::from_be_bytes([h[4], h[5]]));
        let upper = payload.min(l3.len() - HEADER_LEN);
        let tcp_flags = match h[6] {
            proto::UDP if upper >= 8 => 0,
            proto::TCP if upper >= 20 => *l3.get(HEADER_LEN + 13)?,
            _ => return None,
        };
        Some((h, tcp_flags))
    }

    /// Are the ports valid (TCP or UDP with its header read)?
    pub fn has_ports(&self) -> bool {
        self.l4 && matches!(self.proto, proto::TCP | proto::UDP)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::tcp_flag::SYN;

    const A: [u8; 16] = [0x20, 0x01, 0xd, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    const B: [u8; 16] = [0x20, 0x01, 0xd, 0xb8, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9];

    /// An IPv6 packet A → B, traffic class 0xb8 (DSCP 46), first next
    /// header `nh`, `payload` after the fixed header.
    fn packet(nh: u8, payload: &[u8]) -> Vec<u8> {
        let mut p = vec![0x6b, 0x80, 0, 0];
        p.extend((payload.len() as u16).to_be_bytes());
        p.extend([nh, 64]);
        p.extend(A);
        p.extend(B);
        p.extend(payload);
        p
    }

    fn tcp(sport: u16, dport: u16, flags: u8) -> Vec<u8> {
        let mut t = vec![0; 20];
        t[..2].copy_from_slice(&sport.to_be_bytes());
        t[2..4].copy_from_slice(&dport.to_be_bytes());
        t[12] = 0x50;
        t[13] = flags;
        t
    }

    /// An extension header of 8 bytes whose next header is `next`.
    fn ext(next: u8) -> Vec<u8> {
        vec![next, 0, 1, 4, 0, 0, 0, 0]
    }

    /// A Fragment header: next header `next`, offset in bytes, more.
    fn frag(next: u8, offset: u16, more: bool) -> Vec<u8> {
        let word = offset | u16::from(more);
        let mut f = vec![next, 0];
        f.extend(word.to_be_bytes());
        f.extend([0, 0, 0, 7]);
        f
    }

    #[test]
    fn tcp_behind_extension_headers_ports_flags_and_dscp() {
        let payload = [ext(proto::TCP), tcp(1234, 22, SYN)].concat();
        let s = FlowSummary6::parse(&packet(next_header::DESTINATION_OPTIONS, &payload)).unwrap();
        assert_eq!((s.src, s.dst, s.proto), (A, B, proto::TCP));
        assert_eq!((s.sport, s.dport, s.tcp_flags), (1234, 22, SYN));
        assert_eq!((s.dscp, s.l4_offset), (46, 48));
        assert!(s.has_ports());
        assert_eq!(s.fragment, Fragment::None);
    }

    #[test]
    fn icmpv6_echo_carries_its_identifier_as_both_ports() {
        let s = FlowSummary6::parse(&packet(58, &[128, 0, 0, 0, 0x12, 0x34, 0, 1])).unwrap();
        assert_eq!((s.icmp_type, s.sport, s.dport), (128, 0x1234, 0x1234));
        assert!(s.l4 && !s.has_ports());
    }

    #[test]
    fn fragments_first_later_and_atomic() {
        let first = [frag(proto::UDP, 0, true), vec![0, 53, 0, 53, 0, 8, 0, 0]].concat();
        let s = FlowSummary6::parse(&packet(next_header::FRAGMENT, &first)).unwrap();
        assert_eq!(s.fragment, Fragment::First);
        assert!(s.has_ports());
        let later = [frag(proto::UDP, 8, false), vec![0, 53, 0, 53, 0, 8, 0, 0]].concat();
        let s = FlowSummary6::parse(&packet(next_header::FRAGMENT, &later)).unwrap();
        assert_eq!((s.fragment, s.proto), (Fragment::NonFirst, proto::UDP));
        assert!(!s.l4 && s.sport == 0, "a later fragment's bytes are data");
        assert!(s.frag_offset_one);
        let atomic = [frag(proto::UDP, 0, false), vec![0, 53, 0, 53, 0, 8, 0, 0]].concat();
        let s = FlowSummary6::parse(&packet(next_header::FRAGMENT, &atomic)).unwrap();
        assert_eq!(s.fragment, Fragment::None);
    }

    #[test]
    fn a_chain_that_cannot_be_walked_is_unreadable_never_portless() {
        // A first fragment whose chain ends in a cut header (RFC 7112).
        let cut = [frag(next_header::DESTINATION_OPTIONS, 0, true), vec![6, 3]].concat();
        assert_eq!(
            FlowSummary6::parse(&packet(next_header::FRAGMENT, &cut)),
            None
        );
        // Nine extension headers.
        let nine: Vec<u8> = (0..9)
            .flat_map(|i| ext(if i == 8 { proto::TCP } else { 60 }))
            .chain(tcp(1, 2, SYN))
            .collect();
        assert_eq!(FlowSummary6::parse(&packet(60, &nine)), None);
        // IPv4, and a short header.
        assert_eq!(FlowSummary6::parse(&[0x45; 60]), None);
        assert_eq!(FlowSummary6::parse(&packet(6, &[])[..39]), None);
    }

    #[test]
    fn padding_is_not_upper_layer_data() {
        let mut p = packet(proto::TCP, &tcp(1, 2, SYN)[..10]);
        p.extend([0xee; 10]);
        assert!(!FlowSummary6::parse(&p).unwrap().l4);
    }
}
