//! The plain IPv4 forward, fused.
//!
//! One check over a frame's first 34 bytes says whether the staged
//! pipeline (l2 → ip → neigh) would forward it with no decision left but
//! the route; the rewrite follows it. The router's fast lane (`router/fastlane.rs`) runs a whole burst through
//! these when every packet of it is plain; anything else takes the stages.
//!
//! # Plain
//!
//! A frame is plain when [`eth_type_trans`](super::l2::eth_type_trans)
//! gives packet type host, a source MAC a station can have, untagged IPv4
//! with no runt, and
//! [`ipv4_input`](super::ip::ipv4_input) accepts it as version 4 with
//! IHL 5 (no options), a right checksum, and a total length that fits the
//! frame; its TTL is above 1 and its source is not martian. The route and
//! neighbour are the fast lane's to check.

use super::ip::{ipv4_forward_ttl_fixed, CsumFlag};
use hooks::wire::checksum::verify20;
use hooks::wire::ethernet::{ethertype, HEADER_LEN, MIN_FRAME_LEN};
use hooks::wire::ipv4::MIN_HEADER_LEN;
use hooks::{PacketMeta, PacketType};

/// What the route lookup and the rewrite need of a plain frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plain {
    /// Destination address, host order.
    pub dst: u32,
    /// IPv4 total length: the frame is `HEADER_LEN + total_len` bytes once
    /// its Ethernet padding is trimmed.
    pub total_len: u16,
}

/// A port's MAC as the low 48 bits of a little-endian word, to compare with
/// a frame's first 8 bytes masked with `DST_AND_SOURCE_GROUP`; a
/// multicast MAC (never a port's) maps to a value no frame matches.
pub fn mac_word(mac: &[u8; 6]) -> u64 {
    if mac[0] & 1 != 0 {
        return u64::MAX;
    }
    let [a, b, c, d, e, f] = *mac;
    u64::from_le_bytes([a, b, c, d, e, f, 0, 0])
}

/// The bits of a frame's first 8 bytes (little-endian) that its first
/// compare reads: the destination MAC (bytes 0..6) and the group bit of the
/// source MAC (bit 0 of byte 6), which a [`mac_word`] has clear. One
/// compare says "to us, and not from a multicast or broadcast source".
const DST_AND_SOURCE_GROUP: u64 = 0x0001_ffff_ffff_ffff;

/// Bytes 12..16 of a plain frame, little-endian: ethertype 0x0800, then
/// version 4 with IHL 5 (the TOS byte is masked off).
const IPV4_IHL5: u32 = u32::from_le_bytes([0x08, 0x00, 0x45, 0x00]);

/// Whether `frame` is a plain forward on a port whose MAC is `port_mac`
/// (from [`mac_word`]); `csum` is the NIC's word on the header checksum.
#[inline(always)]
pub fn plain_ipv4(frame: &[u8], port_mac: u64, csum: CsumFlag) -> Option<Plain> {
    let head = frame.first_chunk::<MIN_FRAME_LEN>()?;
    let (eth, rest) = head.split_first_chunk::<8>()?;
    let eth = u64::from_le_bytes(*eth);
    if eth & DST_AND_SOURCE_GROUP != port_mac {
        return None;
    }
    let (source_tail, rest) = rest.split_first_chunk::<4>()?;
    let (type_ihl, _) = rest.split_first_chunk::<4>()?;
    if u32::from_le_bytes(*type_ihl) & 0x00ff_ffff != IPV4_IHL5 {
        return None;
    }
    // The source MAC (bytes 6..12: the first word's top 16 bits and the
    // next 4 bytes) is not zero.
    if (eth >> 48) as u32 | u32::from_le_bytes(*source_tail) == 0 {
        return None;
    }
    let (_, ip) = head.split_first_chunk::<HEADER_LEN>()?;
    let ip = ip.first_chunk::<MIN_HEADER_LEN>()?;
    let total_len = u16::from_be_bytes([ip[2], ip[3]]);
    if usize::from(total_len) < MIN_HEADER_LEN || HEADER_LEN + usize::from(total_len) > frame.len()
    {
        return None;
    }
    let checksum_ok = match csum {
        CsumFlag::Good => true,
        CsumFlag::Bad => false,
        CsumFlag::Unknown => verify20(ip),
    };
    // TTL > 1; source not 0/8, 127/8 or 224/3 (is_martian_source).
    let src0 = ip[12];
    if !checksum_ok || ip[8] <= 1 || src0 == 0 || src0 == 127 || src0 >= 224 {
        return None;
    }
    Some(Plain {
        dst: u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]),
        total_len,
    })
}

/// Forward a frame [`plain_ipv4`] accepted: TTL - 1 with the checksum
/// updated (the kernel's `ip_decrease_ttl`), and the neighbour's header
/// (slot words, as [`store_header`](crate::neigh::store_header) takes them)
/// over the Ethernet header. False, and no change, if the frame is shorter
/// than its two headers or its TTL is 1 or 0, which a plain frame is not.
#[inline(always)]
pub fn forward_plain(frame: &mut [u8], neigh_words: [u64; 2]) -> bool {
    let Some((eth, rest)) = frame.split_first_chunk_mut::<HEADER_LEN>() else {
        return false;
    };
    let Some(ip) = rest.first_chunk_mut::<MIN_HEADER_LEN>() else {
        return false;
    };
    if ipv4_forward_ttl_fixed(ip).is_err() {
        return false;
    }
    crate::neigh::store_header(eth, neigh_words);
    true
}

/// The routing half of [`forward_plain`], for a frame whose Ethernet
/// header is written later (after an egress chain): TTL - 1 with the
/// checksum updated. False, and no change, as for [`forward_plain`].
#[inline(always)]
pub fn route_plain(frame: &mut [u8]) -> bool {
    let Some(ip) = frame
        .get_mut(HEADER_LEN..)
        .and_then(|b| b.first_chunk_mut::<MIN_HEADER_LEN>())
    else {
        return false;
    };
    ipv4_forward_ttl_fixed(ip).is_ok()
}

/// The metadata the stages' l2 (`eth_type_trans`) gives a frame
/// [`plain_ipv4`] accepted on `port`: to us, untagged IPv4 at byte 14.
#[inline(always)]
pub fn plain_meta(port: u16) -> PacketMeta {
    let mut meta = PacketMeta::received_on(port);
    meta.packet_type = PacketType::Host;
    meta.protocol = ethertype::IPV4;
    meta.vlan = 0;
    meta.l3_offset = HEADER_LEN as u16;
    meta
}

/// What the stages decide for `frame`, restricted to what the lane takes:
/// an IPv4 packet to us (l2 host, untagged, no IP options) with a valid
/// header, TTL above 1 and a source that is not martian; `Some((dst, total
/// length))`. The plain reference the lane is held against, in the property
/// test below and in the stages fuzz target.
pub fn staged_reference(frame: &[u8], port_mac: &[u8; 6], csum: CsumFlag) -> Option<Plain> {
    use super::ip::{ipv4_input, is_martian_source};
    let mut meta = PacketMeta::received_on(0);
    super::l2::eth_type_trans(frame, port_mac, &mut meta).ok()?;
    if meta.packet_type != PacketType::Host
        || meta.protocol != ethertype::IPV4
        || meta.vlan != 0
        || meta.l3_offset != HEADER_LEN as u16
    {
        return None;
    }
    let ok = ipv4_input(frame, &meta, csum).ok()?;
    if is_martian_source(ok.src) || ok.ttl <= 1 || ok.l4_offset != 34 {
        return None;
    }
    Some(Plain {
        dst: u32::from(ok.dst),
        total_len: ok.trimmed_len - HEADER_LEN as u16,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::neigh::store_header;
    use crate::stage::l2::eth_type_trans;
    use hooks::testkit;
    use hooks::wire::checksum;
    use proptest::prelude::*;

    const MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
    const CSUMS: [CsumFlag; 3] = [CsumFlag::Unknown, CsumFlag::Good, CsumFlag::Bad];

    fn staged(frame: &[u8], csum: CsumFlag) -> Option<Plain> {
        staged_reference(frame, &MAC, csum)
    }

    /// Ethernet to MAC + IPv4 (IHL 5, TTL 64, UDP, right checksum) with
    /// `payload` bytes (0, 1, 2, ...) after the header, then `pad` bytes of
    /// padding.
    fn frame(payload: usize, pad: usize) -> Vec<u8> {
        let data: Vec<u8> = (0..payload).map(|i| i as u8).collect();
        let mut f = testkit::ipv4([10, 0, 0, 1], [198, 51, 100, 9], 17, &data)
            .macs(MAC, [0x02, 0, 0, 0, 0, 0x02])
            .pad(false)
            .build();
        f.resize(f.len() + pad, 0);
        f
    }

    fn refill(f: &mut [u8]) {
        f[24..26].fill(0);
        let c = checksum::checksum(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
    }

    #[test]
    fn a_plain_frame_is_taken_with_its_destination_and_length() {
        for (payload, pad) in [(26, 0), (8, 18), (1480, 0), (6, 20)] {
            let f = frame(payload, pad);
            let expect = Plain {
                dst: u32::from_be_bytes([198, 51, 100, 9]),
                total_len: 20 + payload as u16,
            };
            for csum in [CsumFlag::Unknown, CsumFlag::Good] {
                assert_eq!(plain_ipv4(&f, mac_word(&MAC), csum), Some(expect));
                assert_eq!(staged(&f, csum), Some(expect));
            }
        }
    }

    #[test]
    fn every_kind_of_exception_is_left_to_the_stages() {
        let good = frame(26, 0);
        let edit = |f: fn(&mut Vec<u8>), refilled: bool| {
            let mut x = good.clone();
            f(&mut x);
            if refilled {
                refill(&mut x);
            }
            x
        };
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("runt", edit(|f| f.truncate(59), false)),
            ("other host", edit(|f| f[5] = 0x09, false)),
            ("broadcast", edit(|f| f[..6].fill(0xff), false)),
            ("multicast", edit(|f| f[0] = 0x01, false)),
            ("broadcast source", edit(|f| f[6..12].fill(0xff), false)),
            ("multicast source", edit(|f| f[6] = 0x01, false)),
            ("group bit of the source", edit(|f| f[6] |= 0x01, false)),
            ("zero source", edit(|f| f[6..12].fill(0), false)),
            ("ARP", edit(|f| f[13] = 0x06, false)),
            ("VLAN tag", {
                let mut f = good.clone();
                f.splice(12..12, [0x81, 0x00, 0x00, 0x05]);
                f
            }),
            ("priority tag", {
                let mut f = good.clone();
                f.splice(12..12, [0x81, 0x00, 0xa0, 0x00]);
                f
            }),
            (
                "IPv6",
                edit(|f| f[12..14].copy_from_slice(&[0x86, 0xdd]), false),
            ),
            ("version 6", edit(|f| f[14] = 0x65, true)),
            ("IHL 4", edit(|f| f[14] = 0x44, true)),
            ("IHL 6 (options)", edit(|f| f[14] = 0x46, true)),
            ("bad checksum", edit(|f| f[24] ^= 1, false)),
            (
                "total length 19",
                edit(|f| f[16..18].copy_from_slice(&19u16.to_be_bytes()), true),
            ),
            ("total length past the frame", edit(|f| f[17] += 1, true)),
            ("TTL 1", edit(|f| f[22] = 1, true)),
            ("TTL 0", edit(|f| f[22] = 0, true)),
            ("source 0/8", edit(|f| f[26] = 0, true)),
            ("source 127/8", edit(|f| f[26] = 127, true)),
            ("source 224/4", edit(|f| f[26] = 224, true)),
            (
                "source 255.255.255.255",
                edit(|f| f[26..30].fill(255), true),
            ),
        ];
        for (what, f) in &cases {
            for csum in [CsumFlag::Unknown, CsumFlag::Good] {
                if *what == "bad checksum" && csum == CsumFlag::Good {
                    continue;
                }
                assert_eq!(plain_ipv4(f, mac_word(&MAC), csum), None, "{what}");
                assert_eq!(staged(f, csum), None, "{what} (the reference)");
            }
        }
        // The NIC's word on the checksum is taken, as the stages take it.
        let mut bad = good.clone();
        bad[24] ^= 1;
        assert!(plain_ipv4(&bad, mac_word(&MAC), CsumFlag::Good).is_some());
        assert_eq!(plain_ipv4(&good, mac_word(&MAC), CsumFlag::Bad), None);
    }

    #[test]
    fn a_multicast_port_mac_matches_no_frame() {
        let mut mac = MAC;
        mac[0] |= 1;
        let mut f = frame(26, 0);
        f[..6].copy_from_slice(&mac);
        assert_eq!(plain_ipv4(&f, mac_word(&mac), CsumFlag::Unknown), None);
    }

    /// The rewrite of the stages: TTL - 1 with the incremental checksum,
    /// then the neighbour's header.
    fn staged_rewrite(f: &mut [u8], words: [u64; 2]) {
        let ip: &mut [u8; 20] = (&mut f[14..34]).try_into().unwrap();
        ipv4_forward_ttl_fixed(ip).unwrap();
        let eth: &mut [u8; 14] = (&mut f[..14]).try_into().unwrap();
        store_header(eth, words);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(20_000))]

        /// The fast lane takes exactly the frames the stages would forward
        /// untagged without options, with the same destination and length,
        /// and writes the same bytes.
        #[test]
        fn takes_exactly_what_the_stages_forward_and_writes_the_same(
            payload in 0usize..64,
            pad in 0usize..24,
            edits in proptest::collection::vec((0usize..40, any::<u8>()), 0..4),
            fix_checksum in any::<bool>(),
            zero_source in proptest::bool::weighted(0.05),
            cut in 0usize..8,
            csum in 0usize..3,
            words in any::<[u64; 2]>(),
        ) {
            let mut f = frame(payload, pad);
            for (at, b) in edits {
                if let Some(x) = f.get_mut(at) {
                    *x = b;
                }
            }
            if zero_source {
                f[6..12].fill(0);
            }
            if fix_checksum {
                refill(&mut f);
            }
            let new_len = f.len().saturating_sub(cut);
            f.truncate(new_len);
            let csum = CSUMS[csum];
            let plain = plain_ipv4(&f, mac_word(&MAC), csum);
            prop_assert_eq!(plain, staged(&f, csum));
            if plain.is_some() {
                // The metadata the lane gives it is l2's.
                let mut meta = PacketMeta::received_on(7);
                prop_assert!(eth_type_trans(&f, &MAC, &mut meta).is_ok());
                prop_assert_eq!(meta, plain_meta(7));
                let mut fast = f.clone();
                prop_assert!(forward_plain(&mut fast, words));
                let mut slow = f.clone();
                staged_rewrite(&mut slow, words);
                prop_assert_eq!(&fast, &slow);
                let mut routed = f.clone();
                prop_assert!(route_plain(&mut routed));
                prop_assert_eq!(&routed[14..], &fast[14..]);
                prop_assert_eq!(&routed[..14], &f[..14]);
                // And on its own terms: the slot's last 14 bytes as the
                // Ethernet header, TTL one less, a header checksum that
                // still verifies in full, every other byte as it was.
                let [w0, w1] = words;
                let slot = [w0.to_ne_bytes(), w1.to_ne_bytes()].concat();
                prop_assert_eq!(&fast[..14], &slot[2..]);
                prop_assert_eq!(fast[22], f[22] - 1);
                // (A header the NIC vouched for keeps whatever checksum it had.)
                if checksum::sum(&f[14..34]) == 0xffff {
                    prop_assert_eq!(checksum::sum(&fast[14..34]), 0xffff);
                }
                prop_assert_eq!(&fast[14..22], &f[14..22]);
                prop_assert_eq!(&fast[23..24], &f[23..24]);
                prop_assert_eq!(&fast[26..], &f[26..]);
            }
        }
    }
}
