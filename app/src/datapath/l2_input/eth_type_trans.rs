//! l2_input's full translation: the kernel's `eth_type_trans` for a received frame: runt check,
//! packet type by destination MAC, a source MAC a station can have (the
//! bridge's `is_valid_ether_addr`), ethertype after up to two VLAN tags.

use hooks::wire::ethernet::{self, ethertype, EthernetFrame, HEADER_LEN, MIN_FRAME_LEN};
use hooks::wire::vlan::{VlanTag, TAG_LEN};
use hooks::{DropReason, PacketMeta, PacketType};

/// What follows the Ethernet header and its VLAN tags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct L3Protocol {
    /// Ethertype after the tags.
    pub protocol: u16,
    /// VLAN id of the inner tag, or of the outer one when the inner is a
    /// priority tag (id 0): the VLAN the frame is in. 0 when untagged or
    /// when every tag is a priority tag.
    pub vlan: u16,
    /// Offset of the L3 header: 14, 18 or 22.
    pub l3_offset: u16,
}

/// Translate a received frame: drop runts (< 60 bytes), set the packet type
/// from the destination MAC, drop a frame from a multicast, broadcast or
/// zero source MAC (what is sent back to a frame goes to its source: an
/// echo reply or ICMP error to ff:ff:ff:ff:ff:ff would reach every
/// station), find the ethertype after up to two VLAN tags and record it,
/// the VLAN id and the L3 offset in `meta`. On error `meta` keeps its
/// other fields; `packet_type` is set unless the frame is a runt.
#[inline]
pub fn eth_type_trans(
    frame: &[u8],
    port_mac: &[u8; 6],
    meta: &mut PacketMeta,
) -> Result<(), DropReason> {
    // After this check every header read below is in bounds (60 > 14 + 2 × 4).
    let Some(head) = frame.first_chunk::<MIN_FRAME_LEN>() else {
        return Err(DropReason::Runt);
    };
    let dst = [head[0], head[1], head[2], head[3], head[4], head[5]];
    meta.packet_type = packet_type(&dst, port_mac);
    if meta.packet_type == PacketType::OtherHost {
        return Err(DropReason::OtherHost);
    }
    // The source MAC (bytes 6..12) from one load of bytes 4..12, shifted
    // down: its group bit (bit 0 of byte 6) is bit 0. As the kernel's is_valid_ether_addr.
    let src = u64::from_le_bytes([
        head[4], head[5], head[6], head[7], head[8], head[9], head[10], head[11],
    ]) >> 16;
    if src & 1 != 0 || src == 0 {
        return Err(DropReason::BadSourceMac);
    }
    // Untagged IPv4 or ARP, nearly every frame: no tags to walk.
    let ty = u16::from_be_bytes([head[12], head[13]]);
    if ty == ethertype::IPV4 || ty == ethertype::ARP {
        meta.protocol = ty;
        meta.vlan = 0;
        meta.l3_offset = HEADER_LEN as u16;
        return Ok(());
    }
    let l3 = vlan_get_protocol(head)?;
    meta.protocol = l3.protocol;
    meta.vlan = l3.vlan;
    meta.l3_offset = l3.l3_offset;
    Ok(())
}

/// Packet type by destination MAC, as the kernel decides it.
#[inline(always)]
pub fn packet_type(dst: &[u8; 6], port_mac: &[u8; 6]) -> PacketType {
    if ethernet::is_multicast(dst) {
        if ethernet::is_broadcast(dst) {
            PacketType::Broadcast
        } else {
            PacketType::Multicast
        }
    } else if dst == port_mac {
        PacketType::Host
    } else {
        PacketType::OtherHost
    }
}

/// The ethertype after the tags: one 802.1Q (0x8100) or 802.1ad (0x88a8)
/// tag, or QinQ (either of those outer, 0x8100 inner). Errors: `Runt` under
/// 14 bytes, `VlanTruncated` when a tag does not fit, `Ieee8023` when the
/// field after the tags is an 802.3 length (< 0x0600). A third tag is not
/// looked into: its TPID is returned as the protocol.
#[inline]
pub fn vlan_get_protocol(frame: &[u8]) -> Result<L3Protocol, DropReason> {
    let (protocol, vlan, l3_offset) = walk_tags(frame)?;
    if protocol < ethertype::MIN {
        return Err(DropReason::Ieee8023);
    }
    Ok(L3Protocol {
        protocol,
        vlan,
        l3_offset: l3_offset as u16,
    })
}

/// Ethertype (or 802.3 length) after the tags, the VLAN id (see
/// [`L3Protocol::vlan`]: 0 only if every tag's id is 0), and the offset of
/// what follows them.
#[inline(always)]
fn walk_tags(frame: &[u8]) -> Result<(u16, u16, usize), DropReason> {
    let Ok(eth) = EthernetFrame::new_checked(frame) else {
        return Err(DropReason::Runt);
    };
    let mut protocol = eth.ethertype();
    let mut vlan = 0;
    let mut offset = HEADER_LEN;
    if protocol == ethertype::VLAN || protocol == ethertype::QINQ {
        let tag = tag_at(frame, offset)?;
        (protocol, vlan, offset) = (tag.ethertype(), tag.vid(), offset + TAG_LEN);
        if protocol == ethertype::VLAN {
            let tag = tag_at(frame, offset)?;
            // An inner priority tag leaves the frame in the outer VLAN.
            if tag.vid() != 0 {
                vlan = tag.vid();
            }
            (protocol, offset) = (tag.ethertype(), offset + TAG_LEN);
        }
    }
    Ok((protocol, vlan, offset))
}

#[inline(always)]
fn tag_at(frame: &[u8], offset: usize) -> Result<VlanTag<&[u8]>, DropReason> {
    VlanTag::new_checked(frame.get(offset..).unwrap_or(&[])).map_err(|_| DropReason::VlanTruncated)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PORT_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
    const PEER_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x02];

    /// A 60-byte frame to `dst` whose header is `dst`, `PEER_MAC` then the
    /// 16-bit `fields` (ethertype, tag TCIs and ethertypes, payload start).
    fn frame(dst: [u8; 6], fields: &[u16]) -> Vec<u8> {
        let mut f = Vec::with_capacity(MIN_FRAME_LEN);
        f.extend_from_slice(&dst);
        f.extend_from_slice(&PEER_MAC);
        for v in fields {
            f.extend_from_slice(&v.to_be_bytes());
        }
        f.resize(MIN_FRAME_LEN, 0);
        f
    }

    fn trans(f: &[u8]) -> (Result<(), DropReason>, PacketMeta) {
        let mut meta = PacketMeta::received_on(1);
        let r = eth_type_trans(f, &PORT_MAC, &mut meta);
        (r, meta)
    }

    fn meta(packet_type: PacketType, protocol: u16, vlan: u16, l3_offset: u16) -> PacketMeta {
        let mut m = PacketMeta::received_on(1);
        m.packet_type = packet_type;
        m.protocol = protocol;
        m.vlan = vlan;
        m.l3_offset = l3_offset;
        m
    }

    #[test]
    fn runts_are_dropped_before_anything_is_read() {
        let f = frame(PORT_MAC, &[ethertype::IPV4, 0x4500]);
        for len in [0, 13, 14, 59] {
            let (r, m) = trans(&f[..len]);
            assert_eq!(r, Err(DropReason::Runt), "{len} bytes");
            assert_eq!(m, PacketMeta::received_on(1), "{len} bytes");
        }
    }

    #[test]
    fn sixty_bytes_is_not_a_runt() {
        let f = frame(PORT_MAC, &[ethertype::IPV4, 0x4500]);
        assert_eq!(f.len(), 60);
        assert_eq!(
            trans(&f),
            (Ok(()), meta(PacketType::Host, ethertype::IPV4, 0, 14))
        );
    }

    #[test]
    fn host_frame_to_our_mac() {
        let mut f = frame(PORT_MAC, &[ethertype::ARP]);
        f.resize(1514, 0xaa);
        assert_eq!(
            trans(&f),
            (Ok(()), meta(PacketType::Host, ethertype::ARP, 0, 14))
        );
    }

    #[test]
    fn broadcast_frame() {
        let f = frame(ethernet::BROADCAST, &[ethertype::ARP]);
        assert_eq!(
            trans(&f),
            (Ok(()), meta(PacketType::Broadcast, ethertype::ARP, 0, 14))
        );
    }

    #[test]
    fn multicast_frame() {
        let f = frame([0x01, 0x00, 0x5e, 0x00, 0x00, 0xfb], &[ethertype::IPV4]);
        assert_eq!(
            trans(&f),
            (Ok(()), meta(PacketType::Multicast, ethertype::IPV4, 0, 14))
        );
    }

    #[test]
    fn other_host_frame_is_dropped_with_its_packet_type() {
        let f = frame(PEER_MAC, &[ethertype::IPV4]);
        let mut expect = PacketMeta::received_on(1);
        expect.packet_type = PacketType::OtherHost;
        assert_eq!(trans(&f), (Err(DropReason::OtherHost), expect));
        // One bit off our address is another host, too.
        let f = frame([0x02, 0, 0, 0, 0, 0x03], &[ethertype::IPV4]);
        assert_eq!(trans(&f).0, Err(DropReason::OtherHost));
    }

    #[test]
    fn frames_from_a_group_or_zero_source_mac_are_dropped() {
        let ok = frame(PORT_MAC, &[ethertype::IPV4, 0x4500]);
        for (what, src) in [
            ("broadcast", ethernet::BROADCAST),
            ("multicast", [0x01, 0x00, 0x5e, 0x00, 0x00, 0x01]),
            ("group bit only", [0x03, 0, 0, 0, 0, 0x02]),
            ("zero", [0; 6]),
        ] {
            for dst in [PORT_MAC, ethernet::BROADCAST] {
                let mut f = ok.clone();
                f[..6].copy_from_slice(&dst);
                f[6..12].copy_from_slice(&src);
                let (r, m) = trans(&f);
                assert_eq!(r, Err(DropReason::BadSourceMac), "{what} source");
                assert_eq!(m.packet_type, packet_type(&dst, &PORT_MAC));
            }
        }
        // Another host's frame is dropped as that first, whatever its source.
        let mut f = frame(PEER_MAC, &[ethertype::IPV4]);
        f[6..12].fill(0xff);
        assert_eq!(trans(&f).0, Err(DropReason::OtherHost));
        // A locally administered unicast source, and one bit from zero, are
        // stations.
        for src in [[0x02, 0, 0, 0, 0, 0x02], [0, 0, 0, 0, 0, 1], [0xfe; 6]] {
            let mut f = ok.clone();
            f[6..12].copy_from_slice(&src);
            assert_eq!(trans(&f).0, Ok(()), "{src:02x?}");
        }
    }

    #[test]
    fn double_tags_with_an_inner_priority_tag_are_in_the_outer_vlan() {
        for outer in [ethertype::VLAN, ethertype::QINQ] {
            let f = frame(
                PORT_MAC,
                &[outer, 100, ethertype::VLAN, 0xa000, ethertype::IPV4],
            );
            assert_eq!(
                trans(&f),
                (Ok(()), meta(PacketType::Host, ethertype::IPV4, 100, 22)),
                "{outer:#06x}/0x8100"
            );
            // The other way round, the inner VLAN; two priority tags, none.
            let f = frame(
                PORT_MAC,
                &[outer, 0xa000, ethertype::VLAN, 100, ethertype::IPV4],
            );
            assert_eq!(trans(&f).1.vlan, 100);
            let f = frame(PORT_MAC, &[outer, 0, ethertype::VLAN, 0, ethertype::IPV4]);
            assert_eq!(
                trans(&f),
                (Ok(()), meta(PacketType::Host, ethertype::IPV4, 0, 22))
            );
        }
    }

    #[test]
    fn vlan_tag() {
        // PCP 5 and DEI set around VLAN id 100: only the id is kept.
        let f = frame(PORT_MAC, &[ethertype::VLAN, 0xb064, ethertype::IPV4]);
        assert_eq!(
            trans(&f),
            (Ok(()), meta(PacketType::Host, ethertype::IPV4, 100, 18))
        );
    }

    #[test]
    fn single_8021ad_tag() {
        let f = frame(PORT_MAC, &[ethertype::QINQ, 7, ethertype::IPV4]);
        assert_eq!(
            trans(&f),
            (Ok(()), meta(PacketType::Host, ethertype::IPV4, 7, 18))
        );
    }

    #[test]
    fn qinq_88a8_outer_keeps_the_inner_vlan() {
        let f = frame(
            PORT_MAC,
            &[ethertype::QINQ, 10, ethertype::VLAN, 20, ethertype::IPV4],
        );
        assert_eq!(
            trans(&f),
            (Ok(()), meta(PacketType::Host, ethertype::IPV4, 20, 22))
        );
    }

    #[test]
    fn qinq_8100_outer_keeps_the_inner_vlan() {
        let f = frame(
            ethernet::BROADCAST,
            &[ethertype::VLAN, 10, ethertype::VLAN, 4095, ethertype::ARP],
        );
        assert_eq!(
            trans(&f),
            (
                Ok(()),
                meta(PacketType::Broadcast, ethertype::ARP, 4095, 22)
            )
        );
    }

    #[test]
    fn third_tag_is_left_as_the_protocol() {
        let f = frame(
            PORT_MAC,
            &[ethertype::VLAN, 1, ethertype::VLAN, 2, ethertype::VLAN, 3],
        );
        assert_eq!(
            trans(&f),
            (Ok(()), meta(PacketType::Host, ethertype::VLAN, 2, 22))
        );
    }

    #[test]
    fn truncated_tags() {
        // Unreachable from eth_type_trans (a 60-byte frame holds two tags);
        // vlan_get_protocol checks on its own.
        let f = frame(
            PORT_MAC,
            &[ethertype::QINQ, 10, ethertype::VLAN, 20, ethertype::IPV4],
        );
        for len in [14, 15, 17, 18, 21] {
            assert_eq!(
                vlan_get_protocol(&f[..len]),
                Err(DropReason::VlanTruncated),
                "{len} bytes"
            );
        }
        assert_eq!(
            vlan_get_protocol(&f[..22]),
            Ok(L3Protocol {
                protocol: ethertype::IPV4,
                vlan: 20,
                l3_offset: 22
            })
        );
        assert_eq!(vlan_get_protocol(&f[..13]), Err(DropReason::Runt));
    }

    #[test]
    fn raw_8023_is_dropped() {
        // Novell raw 802.3: a length, then IPX with checksum 0xffff.
        let f = frame(PORT_MAC, &[46, 0xffff, 0x002e]);
        let mut expect = PacketMeta::received_on(1);
        expect.packet_type = PacketType::Host;
        assert_eq!(trans(&f), (Err(DropReason::Ieee8023), expect));
    }

    #[test]
    fn llc_is_dropped() {
        // STP BPDU: to 01:80:c2:00:00:00, LLC 42 42 03.
        let f = frame([0x01, 0x80, 0xc2, 0, 0, 0], &[39, 0x4242, 0x0300]);
        let mut expect = PacketMeta::received_on(1);
        expect.packet_type = PacketType::Multicast;
        assert_eq!(trans(&f), (Err(DropReason::Ieee8023), expect));
    }

    #[test]
    fn tagged_8023_is_dropped_and_classified_after_the_tag() {
        let f = frame(PORT_MAC, &[ethertype::VLAN, 5, 46, 0xffff]);
        assert_eq!(trans(&f).0, Err(DropReason::Ieee8023));
    }

    #[test]
    fn length_type_boundary_is_0x0600() {
        let f = frame(PORT_MAC, &[0x05ff, 0xaaaa]);
        assert_eq!(trans(&f).0, Err(DropReason::Ieee8023));
        let f = frame(PORT_MAC, &[0x0600]);
        assert_eq!(trans(&f), (Ok(()), meta(PacketType::Host, 0x0600, 0, 14)));
    }
}
