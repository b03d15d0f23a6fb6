//! ip6_input's header checks (the kernel's `ipv6_rcv` / `ip6_rcv_core`):
//! RFC 8200 section 3's fixed header, RFC 4291's addresses a wire never
//! carries. The hop limit is not judged here: a packet for one of our own
//! addresses may arrive with hop limit 1 (neighbour discovery needs 255);
//! only forwarding needs it above 1.

use hooks::wire::ipv6::{self, field, HEADER_LEN};
use hooks::DropReason;

/// What the checks keep of a header for routing it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Ip6Fields {
    /// Frame length without Ethernet padding (L3 offset + 40 + payload
    /// length): trim the packet to it.
    pub trimmed_len: u16,
    /// Hop limit on arrival (forwarding needs > 1).
    pub hop_limit: u8,
}

/// Check the IPv6 header at byte `l3` of `frame`, in this order: 40 bytes
/// present, version 6, payload length within the frame, a source that is
/// not multicast, no loopback and no IPv4-mapped address on either side.
/// The unspecified source is left to routing (neighbour discovery to us
/// may come from `::`).
#[inline]
pub fn ipv6_input(frame: &[u8], l3: usize) -> Result<(Ip6Fields, &[u8; HEADER_LEN]), DropReason> {
    let bytes = frame.get(l3..).unwrap_or_default();
    let Some(h) = bytes.first_chunk::<HEADER_LEN>() else {
        return Err(DropReason::Ipv6Truncated);
    };
    if h[field::VER_TC_FLOW] >> 4 != 6 {
        return Err(DropReason::Ipv6BadVersion);
    }
    let payload = usize::from(u16::from_be_bytes([
        h[field::PAYLOAD_LEN],
        h[field::PAYLOAD_LEN + 1],
    ]));
    if HEADER_LEN + payload > bytes.len() {
        return Err(DropReason::Ipv6BadPayloadLength);
    }
    let (src, dst) = (addr(h, field::SRC), addr(h, field::DST));
    if ipv6::is_multicast(src) {
        return Err(DropReason::Ipv6MulticastSource);
    }
    // Loopback and IPv4-mapped are both in ::/64: one test of each
    // address's first half, the rest out of line.
    let first_half = |a: &[u8; 16]| u128::from_be_bytes(*a) >> 64;
    if (first_half(src) == 0) | (first_half(dst) == 0) {
        never_on_a_wire(src, dst)?;
    }
    // Within a frame (an mbuf segment, at most 65535 bytes).
    let fields = Ip6Fields {
        trimmed_len: (l3 + HEADER_LEN + payload) as u16,
        hop_limit: h[field::HOP_LIMIT],
    };
    Ok((fields, h))
}

/// Loopback or IPv4-mapped on either side (RFC 4291 sections 2.5.3,
/// 2.5.5.2).
#[cold]
fn never_on_a_wire(src: &[u8; 16], dst: &[u8; 16]) -> Result<(), DropReason> {
    if ipv6::is_loopback(src) || ipv6::is_loopback(dst) {
        return Err(DropReason::Ipv6Loopback);
    }
    if ipv6::is_ipv4_mapped(src) || ipv6::is_ipv4_mapped(dst) {
        return Err(DropReason::Ipv6Ipv4Mapped);
    }
    Ok(())
}

/// The 16 bytes of the address at `at` of a header.
#[inline(always)]
pub fn addr(h: &[u8; HEADER_LEN], at: usize) -> &[u8; 16] {
    h.get(at..at + 16)
        .and_then(|a| a.first_chunk())
        .unwrap_or(&[0; 16])
}

#[cfg(test)]
mod tests {
    use super::*;
    fn packet(src: &str, dst: &str) -> Vec<u8> {
        super::super::frames::udp6(src, dst).build()
    }

    fn check(f: &[u8]) -> Result<Ip6Fields, DropReason> {
        ipv6_input(f, 14).map(|(f, _)| f)
    }

    #[test]
    fn accepts_a_plain_packet_and_trims_padding() {
        let mut f = packet("2001:db8:1::7", "2001:db8:2::9");
        let len = f.len();
        f.extend_from_slice(&[0; 6]);
        let ok = check(&f).unwrap();
        assert_eq!(usize::from(ok.trimmed_len), len);
        assert_eq!(ok.hop_limit, 64);
    }

    #[test]
    fn each_rule_with_its_reason() {
        let ok = packet("2001:db8:1::7", "2001:db8:2::9");
        assert_eq!(check(&ok[..14 + 39]), Err(DropReason::Ipv6Truncated));
        let mut v4 = ok.clone();
        v4[14] = 0x45;
        assert_eq!(check(&v4), Err(DropReason::Ipv6BadVersion));
        let mut long = ok.clone();
        long[18..20].copy_from_slice(&17u16.to_be_bytes());
        assert_eq!(check(&long), Err(DropReason::Ipv6BadPayloadLength));
        long[18..20].copy_from_slice(&16u16.to_be_bytes());
        assert!(check(&long).is_ok());
        for (src, dst, reason) in [
            ("ff02::1", "2001:db8:2::9", DropReason::Ipv6MulticastSource),
            ("::1", "2001:db8:2::9", DropReason::Ipv6Loopback),
            ("2001:db8:1::7", "::1", DropReason::Ipv6Loopback),
            (
                "::ffff:10.0.0.1",
                "2001:db8:2::9",
                DropReason::Ipv6Ipv4Mapped,
            ),
            (
                "2001:db8:1::7",
                "::ffff:10.0.0.1",
                DropReason::Ipv6Ipv4Mapped,
            ),
        ] {
            assert_eq!(check(&packet(src, dst)), Err(reason), "{src} -> {dst}");
        }
        // `::` as a source is routing's to judge (DAD probes come from it).
        assert!(check(&packet("::", "ff02::1:ff00:1")).is_ok());
    }
}
