//! The flow fields of one IPv4 packet, read once per packet for the
//! built-in hooks: addresses, protocol, ports, TCP flags, DSCP, ICMP type,
//! fragment position. Parsing never panics: a packet it cannot read is
//! `None` (and gets a filter's default policy, never a bypass).

use crate::wire::ipv4::Ipv4Packet;

/// IP protocol numbers the hooks know by name.
pub mod proto {
    pub const ICMP: u8 = 1;
    pub const TCP: u8 = 6;
    pub const ICMPV6: u8 = 58;
    pub const UDP: u8 = 17;
    pub const SCTP: u8 = 132;
}

/// TCP flag bits (byte 13 of the TCP header).
pub mod tcp_flag {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;
    pub const URG: u8 = 0x20;
    pub const ECE: u8 = 0x40;
    pub const CWR: u8 = 0x80;
}

/// Where a packet sits in a fragmented datagram.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Fragment {
    /// Not fragmented.
    #[default]
    None,
    /// Offset 0, more fragments follow: has the L4 header.
    First,
    /// Offset above 0: no L4 header, ports unknown.
    NonFirst,
}

/// The fields rules and connection tracking look at. Addresses and ports in
/// host byte order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FlowSummary {
    pub src: u32,
    pub dst: u32,
    pub proto: u8,
    /// Differentiated services code point (upper 6 bits of the TOS byte).
    pub dscp: u8,
    pub fragment: Fragment,
    /// A non-first fragment at offset 1 (8 bytes): on reassembly it
    /// overlaps the first fragment's L4 header, a TCP header's flags
    /// included (RFC 1858). False for every other packet.
    pub frag_offset_one: bool,
    /// The L4 header was read: ports (TCP/UDP), flags (TCP) or type, code
    /// and identifier (ICMP) are valid. False for non-first fragments, for
    /// truncated L4 headers, and for other protocols.
    pub l4: bool,
    /// TCP / UDP ports; for ICMP echo and echo reply, both hold the
    /// identifier; 0 otherwise.
    pub sport: u16,
    pub dport: u16,
    /// TCP flags, 0 for other protocols.
    pub tcp_flags: u8,
    /// ICMP type and code (0 for other protocols).
    pub icmp_type: u8,
    pub icmp_code: u8,
    /// Offset of the L4 header from the start of the L3 header (IHL × 4).
    pub l4_offset: u16,
}

/// Bytes of L4 header needed to read ports (and flags) per protocol.
const TCP_MIN: usize = 20;
const UDP_MIN: usize = 8;
const ICMP_MIN: usize = 8;

impl FlowSummary {
    /// Read an IPv4 packet starting at `l3[0]`. `None` when the bytes are
    /// not a well-formed IPv4 header (version, IHL, header length). The L4
    /// part is best effort: when it is missing or short, `l4` is false.
    ///
    /// Inline: called out of line, the summary is stored field by field
    /// and read back whole by the caller, a store-forwarding stall per
    /// packet (about 16 cycles in the filter hook).
    #[inline(always)]
    pub fn parse(l3: &[u8]) -> Option<FlowSummary> {
        let ip = Ipv4Packet::new_checked(l3).ok()?;
        if ip.version() != 4 {
            return None;
        }
        let hl = ip.header_len();
        // The datagram ends at its total length when that is inside the
        // frame (Ethernet padding is not L4 payload).
        let end = usize::from(ip.total_len()).clamp(hl, l3.len());
        let l4 = l3.get(hl..end).unwrap_or_default();
        let fragment = match (ip.frag_offset(), ip.more_frags()) {
            (0, false) => Fragment::None,
            (0, true) => Fragment::First,
            _ => Fragment::NonFirst,
        };
        let mut s = FlowSummary {
            src: u32::from(ip.src_addr()),
            dst: u32::from(ip.dst_addr()),
            proto: ip.protocol(),
            dscp: ip.dscp(),
            fragment,
            frag_offset_one: ip.frag_offset() == 8,
            l4_offset: hl as u16,
            ..FlowSummary::default()
        };
        if fragment == Fragment::NonFirst {
            return Some(s);
        }
        let be16 = |i: usize| u16::from_be_bytes([l4[i], l4[i + 1]]);
        match s.proto {
            proto::TCP if l4.len() >= TCP_MIN => {
                s.sport = be16(0);
                s.dport = be16(2);
                s.tcp_flags = l4[13];
                s.l4 = true;
            }
            proto::UDP if l4.len() >= UDP_MIN => {
                s.sport = be16(0);
                s.dport = be16(2);
                s.l4 = true;
            }
            proto::ICMP if l4.len() >= ICMP_MIN => {
                s.icmp_type = l4[0];
                s.icmp_code = l4[1];
                if matches!(s.icmp_type, 0 | 8) {
                    s.sport = be16(4);
                    s.dport = be16(4);
                }
                s.l4 = true;
            }
            _ => {}
        }
        Some(s)
    }

    /// Are the ports valid (TCP or UDP with its header read)?
    pub fn has_ports(&self) -> bool {
        self.l4 && matches!(self.proto, proto::TCP | proto::UDP)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit::{self, Frame};

    const A: [u8; 4] = [10, 0, 0, 1];
    const B: [u8; 4] = [10, 0, 1, 2];

    /// An IPv4 datagram from A to B with DSCP 46 of `proto`, `l4` as given.
    fn ipv4(proto: u8, l4: &[u8]) -> Frame {
        testkit::ipv4(A, B, proto, l4).tos(0xb8)
    }

    fn parse(f: Frame) -> FlowSummary {
        FlowSummary::parse(&f.build_ipv4()).unwrap()
    }

    #[test]
    fn tcp_ports_flags_and_dscp() {
        let s = parse(testkit::tcp(A, B, 1234, 23, tcp_flag::SYN).tos(0xb8));
        assert_eq!((s.src, s.dst), (0x0a00_0001, 0x0a00_0102));
        assert_eq!((s.sport, s.dport, s.tcp_flags), (1234, 23, tcp_flag::SYN));
        assert_eq!(s.dscp, 46);
        assert!(s.has_ports());
    }

    #[test]
    fn truncated_l4_has_no_ports() {
        let s = parse(ipv4(proto::TCP, &[0; 19]));
        assert!(!s.l4);
        assert_eq!((s.sport, s.dport), (0, 0));
        assert!(parse(testkit::udp(A, B, 53, 53)).has_ports());
    }

    #[test]
    fn fragments() {
        let udp = || testkit::udp(A, B, 53, 53);
        let first = parse(udp().fragment(true, 0));
        assert_eq!(first.fragment, Fragment::First);
        assert!(first.has_ports());
        // Offset 1 (8 bytes): the "ports" are payload bytes and are not read.
        let later = parse(udp().fragment(false, 8));
        assert_eq!(later.fragment, Fragment::NonFirst);
        assert!(!later.l4 && later.sport == 0);
        assert!(later.frag_offset_one);
        let tcp = || ipv4(proto::TCP, &[0; 20]);
        for f in [
            tcp(),
            tcp().fragment(true, 0),
            tcp().fragment(false, 16),
            tcp().fragment(true, 16),
            tcp().dont_frag(),
        ] {
            assert!(!parse(f.clone()).frag_offset_one, "{f:?}");
        }
        assert!(parse(tcp().fragment(true, 8)).frag_offset_one);
    }

    #[test]
    fn options_are_skipped() {
        // IHL 6: 4 bytes of options, then the UDP header.
        let s = parse(testkit::udp(A, B, 5000, 80).ip_options(&[0; 4]));
        assert_eq!((s.sport, s.dport, s.l4_offset), (5000, 80, 24));
    }

    #[test]
    fn icmp_echo_identifier_in_both_ports() {
        let s = parse(testkit::icmp_echo(A, B, 8, 0x1234, 1));
        assert_eq!((s.icmp_type, s.sport, s.dport), (8, 0x1234, 0x1234));
        let s = parse(testkit::icmp_error(A, B, 3, 3, &[]));
        assert_eq!((s.icmp_type, s.icmp_code, s.sport), (3, 3, 0));
    }

    #[test]
    fn not_ipv4_is_none() {
        assert!(FlowSummary::parse(&[]).is_none());
        let b = ipv4(proto::UDP, &[0; 8]);
        assert!(FlowSummary::parse(&b.clone().version(6).build_ipv4()).is_none());
        assert!(FlowSummary::parse(&b.ihl(4).build_ipv4()).is_none());
    }
}
