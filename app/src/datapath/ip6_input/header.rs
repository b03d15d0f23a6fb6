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
    /// Taken by [`plain_ipv6`]: the source is global unicast (neither `::`
    /// nor link-local: a forward need not read it again) and the frame
    /// has no padding.
    pub plain: bool,
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
        plain: false,
    };
    Ok((fields, h))
}

/// The common case in one compare per field, for the header at byte `l3`:
/// version 6, a payload length that is exactly the rest of the frame (no
/// padding), source and destination both global unicast (2000::/3: not
/// multicast, not `::`, not loopback, not IPv4-mapped, not link-local).
/// What it takes [`ipv6_input`] takes with the same fields (but `plain`);
/// what it refuses goes there.
#[inline(always)]
pub fn plain_ipv6(frame: &[u8], l3: usize) -> Option<(Ip6Fields, &[u8; HEADER_LEN])> {
    let h: &[u8; HEADER_LEN] = frame.get(l3..)?.first_chunk()?;
    let fields = Ip6Fields {
        trimmed_len: frame.len() as u16,
        hop_limit: h[field::HOP_LIMIT],
        plain: true,
    };
    is_plain(h, frame.len() - l3 - HEADER_LEN).then_some((fields, h))
}

/// [`plain_ipv6`]'s test of a header `rest` bytes of frame follow.
#[inline(always)]
pub fn is_plain(h: &[u8; HEADER_LEN], rest: usize) -> bool {
    let word = |at: usize| {
        let bytes = h.get(at..at + 8).and_then(|b| b.first_chunk::<8>());
        u64::from_be_bytes(bytes.copied().unwrap_or_default())
    };
    let (head, src, dst) = (word(field::VER_TC_FLOW), word(field::SRC), word(field::DST));
    // Version in the top nibble (tested on the byte: one compare, no wide
    // constants), payload length in bytes 4 and 5.
    let version_ok = h[field::VER_TC_FLOW] & 0xf0 == 0x60;
    let payload_ok = (head >> 16) & 0xffff == rest as u64;
    let global = (src >> 61 == 1) & (dst >> 61 == 1);
    // `&`, not `&&`: one branch, not four.
    version_ok & payload_ok & global
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
    fn the_plain_check_takes_global_unicast_without_padding_as_the_full_one_does() {
        let ok = packet("2001:db8:1::7", "2001:db8:2::9");
        let (plain, h) = plain_ipv6(&ok, 14).unwrap();
        assert_eq!(h, ipv6_input(&ok, 14).unwrap().1);
        let full = check(&ok).unwrap();
        assert_eq!(
            plain,
            Ip6Fields {
                plain: true,
                ..full
            }
        );
        // Each refused by the plain check, some taken by the full one.
        let mut padded = ok.clone();
        padded.push(0);
        let mut v4 = ok.clone();
        v4[14] = 0x45;
        let mut short = ok.clone();
        short[18..20].copy_from_slice(&7u16.to_be_bytes());
        let others = [
            ("fe80::7", "2001:db8:2::9"),
            ("fd00::7", "2001:db8:2::9"),
            ("::", "2001:db8:2::9"),
            ("ff02::1", "2001:db8:2::9"),
            ("2001:db8:1::7", "fe80::9"),
            ("2001:db8:1::7", "ff02::1"),
            ("2001:db8:1::7", "::1"),
            ("2001:db8:1::7", "::ffff:10.0.0.1"),
            ("2001:db8:1::7", "fd00::9"),
        ];
        let mut refused = vec![padded, v4, short, ok[..14 + 39].to_vec()];
        refused.extend(others.iter().map(|(s, d)| packet(s, d)));
        for f in &refused {
            assert_eq!(plain_ipv6(f, 14), None, "{f:02x?}");
        }
        // At another L3 offset (a tag before it).
        let mut tagged = ok[..12].to_vec();
        tagged.extend_from_slice(&[0x81, 0, 0, 0]);
        tagged.extend_from_slice(&ok[12..]);
        assert_eq!(
            plain_ipv6(&tagged, 18).map(|(f, _)| usize::from(f.trimmed_len)),
            Some(ok.len() + 4)
        );
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
