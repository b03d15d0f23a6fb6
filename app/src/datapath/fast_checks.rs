//! The fast checks of l2_input and ip_input held against the full ones, and
//! the forward the stages write against a plain reference.

use super::ip_input::header::{ipv4_input, plain_header, CsumFlag, Ipv4Fields};
use super::l2_input::eth_type_trans::eth_type_trans;
use super::l2_input::plain::{mac_word, plain_l2, plain_l2_of, plain_meta, plain_meta6};
use crate::neigh::store_header;
use hooks::testkit;
use hooks::wire::checksum;
use hooks::wire::ethernet::{ethertype, HEADER_LEN};
use hooks::{PacketMeta, PacketType};
use proptest::prelude::*;
use std::net::Ipv4Addr;

const MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const CSUMS: [CsumFlag; 3] = [CsumFlag::Unknown, CsumFlag::Good, CsumFlag::Bad];

/// The reference: what `eth_type_trans` and `ipv4_input` decide, the
/// header's result when both accept it as plain (untagged, no options).
fn reference(frame: &[u8], csum: CsumFlag) -> (bool, Option<Ipv4Fields>) {
    let mut meta = PacketMeta::received_on(7);
    let l2 = eth_type_trans(frame, &MAC, &mut meta).is_ok()
        && meta.packet_type == PacketType::Host
        && meta.protocol == ethertype::IPV4
        && meta.vlan == 0
        && meta.l3_offset == HEADER_LEN as u16;
    let ip = l2
        .then(|| ipv4_input(frame, &meta, csum).ok())
        .flatten()
        .filter(|ok| ok.l4_offset == 34);
    (l2, ip)
}

/// The stages' fast checks on the same frame.
fn fast(frame: &[u8], csum: CsumFlag) -> (bool, Option<Ipv4Fields>) {
    let l2 = plain_l2(frame, mac_word(&MAC));
    let mut ok = Ipv4Fields::EMPTY;
    let ip = (l2 && plain_header(frame, csum, &mut ok)).then_some(ok);
    (l2, ip)
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
fn a_plain_frame_is_taken_with_its_header_fields() {
    for (payload, pad) in [(26, 0), (8, 18), (1480, 0), (6, 20)] {
        let f = frame(payload, pad);
        for csum in [CsumFlag::Unknown, CsumFlag::Good] {
            let (l2, ip) = fast(&f, csum);
            assert!(l2);
            let ok = ip.expect("plain header");
            assert_eq!(ok.dst, Ipv4Addr::new(198, 51, 100, 9));
            assert_eq!(ok.trimmed_len, 34 + payload as u16);
            assert_eq!((l2, ip), reference(&f, csum));
        }
    }
}

#[test]
fn every_kind_of_exception_is_left_to_the_full_checks() {
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
    ];
    for (what, f) in &cases {
        for csum in [CsumFlag::Unknown, CsumFlag::Good] {
            if *what == "bad checksum" && csum == CsumFlag::Good {
                continue;
            }
            assert_eq!(fast(f, csum).1, None, "{what}");
            assert_eq!(reference(f, csum).1, None, "{what} (the reference)");
        }
    }
    // The NIC's word on the checksum is taken, as ipv4_input takes it.
    let mut bad = good.clone();
    bad[24] ^= 1;
    assert!(fast(&bad, CsumFlag::Good).1.is_some());
    assert_eq!(fast(&good, CsumFlag::Bad).1, None);
}

#[test]
fn a_multicast_port_mac_matches_no_frame() {
    let mut mac = MAC;
    mac[0] |= 1;
    let mut f = frame(26, 0);
    f[..6].copy_from_slice(&mac);
    assert!(!plain_l2(&f, mac_word(&mac)));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    /// The stages' fast checks take exactly the frames the full checks
    /// accept untagged and without options, with the same metadata and
    /// header fields; and the forward the stages then write (TTL - 1,
    /// the incremental checksum, the neighbour's header in two 64-bit
    /// stores) is the one a plain reference computes.
    #[test]
    fn the_fast_checks_agree_with_the_full_ones_and_the_forward_is_right(
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
        let (l2, ip) = fast(&f, csum);
        prop_assert_eq!((l2, ip), reference(&f, csum));
        if l2 {
            let mut meta = PacketMeta::received_on(7);
            prop_assert!(eth_type_trans(&f, &MAC, &mut meta).is_ok());
            prop_assert_eq!(meta, plain_meta(7));
        }
        let Some(ok) = ip.filter(|ok| ok.ttl > 1) else {
            return Ok(());
        };
        // The stages' forward: ip_input's TTL, neigh_output's header.
        let mut out = f.clone();
        let ip: &mut [u8; 20] = (&mut out[14..34]).try_into().unwrap();
        prop_assert_eq!(hooks::wire::ipv4::decrement_ttl(ip, ok.ttl), ok.ttl - 1);
        let eth: &mut [u8; 14] = (&mut out[..14]).try_into().unwrap();
        store_header(eth, words);
        // The reference: the slot's last 14 bytes as the Ethernet
        // header, TTL one less, a header checksum that still verifies in
        // full, every other byte as it was.
        let [w0, w1] = words;
        let slot = [w0.to_ne_bytes(), w1.to_ne_bytes()].concat();
        prop_assert_eq!(&out[..14], &slot[2..]);
        prop_assert_eq!(out[22], f[22] - 1);
        // (A header the NIC vouched for keeps whatever checksum it had.)
        if checksum::sum(&f[14..34]) == 0xffff {
            prop_assert_eq!(checksum::sum(&out[14..34]), 0xffff);
        }
        prop_assert_eq!(&out[14..22], &f[14..22]);
        prop_assert_eq!(&out[23..24], &f[23..24]);
        prop_assert_eq!(&out[26..], &f[26..]);
    }

    /// l2_input's plain IPv6 (two compares) takes exactly the frames
    /// `eth_type_trans` gives to us, untagged IPv6 at byte 14, with the
    /// same metadata.
    #[test]
    fn the_plain_ipv6_check_agrees_with_eth_type_trans(
        payload in 0usize..64,
        edits in proptest::collection::vec((0usize..18, any::<u8>()), 0..3),
        zero_source in proptest::bool::weighted(0.05),
        cut in 0usize..8,
    ) {
        let mut f = frame(payload, 0);
        f[12..14].copy_from_slice(&ethertype::IPV6.to_be_bytes());
        for (at, b) in edits {
            f[at] = b;
        }
        if zero_source {
            f[6..12].fill(0);
        }
        let new_len = f.len().saturating_sub(cut);
        f.truncate(new_len);
        let mut meta = PacketMeta::received_on(7);
        let full = eth_type_trans(&f, &MAC, &mut meta).is_ok()
            && meta.packet_type == PacketType::Host
            && meta.protocol == ethertype::IPV6
            && meta.vlan == 0
            && meta.l3_offset == HEADER_LEN as u16;
        prop_assert_eq!(plain_l2_of::<{ ethertype::IPV6 }>(&f, mac_word(&MAC)), full);
        if full {
            prop_assert_eq!(meta, plain_meta6(7));
        }
    }

}
