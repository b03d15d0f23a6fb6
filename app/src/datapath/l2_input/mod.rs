//! l2_input: the kernel's `eth_type_trans` for every received frame, after
//! padding short frames from devices without a wire. Sets each packet's
//! metadata; a plain frame (`plain.rs`) in one compare or two, any other by
//! the full translation (`eth_type_trans.rs`), out of line.

pub mod eth_type_trans;
pub mod plain;

use super::contract::{all, each, Cx, Mask, Stage, StageSpec, Step};
use super::ip6_input::groups::Groups6;
use super::punt::Punt;
use crate::dpdk::{Mbuf, MbufBurst, BURST_SIZE};
use eth_type_trans::eth_type_trans;
use hooks::wire::ethernet::{ethertype, HEADER_LEN, MIN_FRAME_LEN};
use hooks::{DropReason, PacketMeta, PacketType};
use plain::{mac_word, plain_l2_of, plain_meta, plain_meta6};

pub const SPEC: StageSpec = StageSpec {
    stage: Stage::L2Input,
    takes: &[],
    sets: &[Step::IpInput, Step::Ip6Input, Step::Local, Step::Drop],
    drops: &[
        DropReason::Runt,
        DropReason::OtherHost,
        DropReason::BadSourceMac,
        DropReason::Ieee8023,
        DropReason::VlanTruncated,
        DropReason::VlanNotConfigured,
        DropReason::NotUnicast,
        DropReason::UnsupportedProtocol,
    ],
};

/// How many packets ahead the stage asks for a frame's first cache line.
pub const PREFETCH_AHEAD: usize = 4;

/// Translate every frame of the burst: plain IPv4 to us goes to ip_input,
/// ARP to local (`Punt::Arp`), anything else is translated in full. A burst
/// whose first frame is IPv6 (with an IPv6 FIB) takes plain IPv6 in the
/// first pass instead: one branch per burst picks the family, so a burst
/// of one family tests each frame once.
#[inline(always)]
pub fn run(cx: &mut Cx<'_>) {
    let port = cx.port;
    if cx.pipeline.pad_short[usize::from(port)] {
        pad_short_frames(cx.burst);
    }
    let word = mac_word(&cx.pipeline.macs[usize::from(port)]);
    let mbufs = cx.burst.as_slice();
    let mbufs = &mbufs[..mbufs.len().min(BURST_SIZE)];
    for m in mbufs.iter().take(PREFETCH_AHEAD) {
        m.prefetch_data();
    }
    let ipv6 = cx.pipeline.fib6.is_some() && mbufs.first().is_some_and(|m| is_ipv6(m.data()));
    // The metadata is read by hooks and by the control plane; a burst that
    // meets no hook has it written only where it is read (`Scratch::unset`).
    let hooks = cx.hooks.any_ingress() || cx.hooks.any_egress();
    // Opaque to the compiler, so that it is copied per packet as its 32
    // bytes (two 16-byte stores), not rebuilt field by field.
    let (plain, protocol) = if ipv6 {
        (std::hint::black_box(plain_meta6(port)), ethertype::IPV6)
    } else {
        (std::hint::black_box(plain_meta(port)), ethertype::IPV4)
    };
    let metas = &mut cx.s.metas;
    let taken = match (ipv6, hooks) {
        (false, true) => plain_all::<{ ethertype::IPV4 }, true>(mbufs, metas, word, &plain),
        (false, false) => plain_all::<{ ethertype::IPV4 }, false>(mbufs, metas, word, &plain),
        (true, true) => plain_all::<{ ethertype::IPV6 }, true>(mbufs, metas, word, &plain),
        (true, false) => plain_all::<{ ethertype::IPV6 }, false>(mbufs, metas, word, &plain),
    };
    cx.s.unset = if hooks { 0 } else { taken };
    cx.s.unset_protocol = protocol;
    let others = all(mbufs.len()) & !taken;
    (cx.s.steps.ip_input, cx.s.steps.ip6_input) = if ipv6 { (0, taken) } else { (taken, 0) };
    cx.s.tagged = 0;
    if others != 0 {
        translate_all(cx, others);
    }
}

/// Whether a frame's ethertype (untagged) is IPv6: the family of the
/// burst's first pass.
#[inline(always)]
fn is_ipv6(frame: &[u8]) -> bool {
    frame
        .get(12..14)
        .is_some_and(|t| *t == ethertype::IPV6.to_be_bytes())
}

/// The frames of `mbufs` plain untagged `TY` to us, each with its metadata
/// `plain` written if `META`; each frame's first line asked for
/// PREFETCH_AHEAD packets ahead.
#[inline(always)]
fn plain_all<const TY: u16, const META: bool>(
    mbufs: &[Mbuf],
    metas: &mut [PacketMeta; BURST_SIZE],
    word: u64,
    plain: &PacketMeta,
) -> Mask {
    let mut taken: Mask = 0;
    let ahead = mbufs.get(PREFETCH_AHEAD..).unwrap_or_default();
    if !META {
        // No metadata: two slices walked by one index, one loop test.
        for (i, (ahead, m)) in ahead.iter().zip(mbufs).enumerate() {
            ahead.prefetch_data();
            taken |= Mask::from(plain_l2_of::<TY>(m.data(), word)) << i;
        }
        let from = ahead.len();
        for (i, m) in mbufs.iter().enumerate().skip(from) {
            taken |= Mask::from(plain_l2_of::<TY>(m.data(), word)) << i;
        }
        return taken;
    }
    let mut state = mbufs.iter().zip(metas.iter_mut()).enumerate();
    // Each packet with the one PREFETCH_AHEAD places on (`ahead` first: it
    // ends first, and then takes no packet from `state`), then the last few.
    for (ahead, (i, (m, meta))) in ahead.iter().zip(state.by_ref()) {
        ahead.prefetch_data();
        *meta = *plain;
        taken |= Mask::from(plain_l2_of::<TY>(m.data(), word)) << i;
    }
    for (i, (m, meta)) in state {
        *meta = *plain;
        taken |= Mask::from(plain_l2_of::<TY>(m.data(), word)) << i;
    }
    taken
}

/// The frames that are not plain untagged IPv4 to us: the full translation.
#[inline(never)]
fn translate_all(cx: &mut Cx<'_>, others: Mask) {
    let port_mac = cx.pipeline.macs[usize::from(cx.port)];
    // IPv6 is taken when there is an IPv6 FIB, to our MAC or a group's.
    let v6 = cx.pipeline.fib6.is_some().then_some(&*cx.pipeline.groups6);
    // IPv4 link-local multicast (OSPF's 224.0.0.5, ...) is the kernel's
    // with kernel interfaces.
    let kernel = cx.pipeline.kernel.is_some();
    // Plain IPv6 to our MAC: IPv4's two compares with IPv6's ethertype.
    let (word6, plain6) = match v6 {
        Some(_) => (mac_word(&port_mac), plain_meta6(cx.port)),
        None => (u64::MAX, PacketMeta::received_on(cx.port)),
    };
    for i in each(others) {
        let Some(m) = cx.burst.as_slice().get(i) else {
            continue;
        };
        let meta = &mut cx.s.metas[i];
        if plain_l2_of::<{ ethertype::IPV6 }>(m.data(), word6) {
            *meta = plain6;
            cx.s.steps.ip6_input |= 1 << i;
            continue;
        }
        *meta = PacketMeta::received_on(cx.port);
        match translate(m, &port_mac, meta, v6, kernel) {
            Ok(Step::Ip6Input) => cx.s.steps.ip6_input |= 1 << i,
            Ok(Step::IpInput) => {
                cx.s.steps.ip_input |= 1 << i;
                if meta.l3_offset != HEADER_LEN as u16 {
                    cx.s.tagged |= 1 << i;
                }
            }
            Ok(_) => {
                cx.s.punt[i] = Punt::Arp;
                cx.s.steps.local |= 1 << i;
            }
            Err(r) => cx.drop(i, r),
        }
    }
}

/// The next step of a frame that is not plain, its metadata written.
/// `v6`: the ports' IPv6 groups, when IPv6 is forwarded; `kernel`: with
/// kernel interfaces, IPv4 to a link-local group's MAC is taken (for them).
#[inline(always)]
fn translate(
    m: &Mbuf,
    port_mac: &[u8; 6],
    meta: &mut PacketMeta,
    v6: Option<&Groups6>,
    kernel: bool,
) -> Result<Step, DropReason> {
    eth_type_trans(m.data(), port_mac, meta)?;
    // A priority tag (VLAN id 0) is as good as untagged; other tags are for
    // VLANs this router does not have.
    if meta.vlan != 0 {
        return Err(DropReason::VlanNotConfigured);
    }
    match meta.protocol {
        ethertype::IPV4 if meta.packet_type == PacketType::Host => Ok(Step::IpInput),
        ethertype::IPV4 if kernel && is_link_local_group_mac(m.data()) => Ok(Step::IpInput),
        ethertype::IPV4 => Err(DropReason::NotUnicast),
        ethertype::ARP => Ok(Step::Local),
        ethertype::IPV6 => match v6 {
            Some(groups) => ipv6_frame(m.data(), meta, groups, kernel),
            None => Err(DropReason::UnsupportedProtocol),
        },
        _ => Err(DropReason::UnsupportedProtocol),
    }
}

/// Whether a frame goes to the MAC of an IPv4 group of 224.0.0.0/24, the
/// link's own (RFC 5771: OSPF's 224.0.0.5 and .6, RIP's .9, VRRP's .18,
/// ...): 01:00:5e:00:00:xx (RFC 1112 section 6.4).
#[inline]
fn is_link_local_group_mac(frame: &[u8]) -> bool {
    frame
        .first_chunk::<5>()
        .is_some_and(|d| *d == [0x01, 0x00, 0x5e, 0x00, 0x00])
}

/// An IPv6 frame is ours to our MAC, or to the MAC of one of the input
/// port's groups (RFC 2464 section 7); with kernel interfaces (`kernel`),
/// also to a well-known group's, 33:33:00:00:00:xx (OSPFv3's ff02::5,
/// ...: ip6_input gives the link's to the kernel); other multicast and
/// broadcast are not.
#[inline]
fn ipv6_frame(
    frame: &[u8],
    meta: &PacketMeta,
    groups: &Groups6,
    kernel: bool,
) -> Result<Step, DropReason> {
    let ours = match meta.packet_type {
        PacketType::Host => true,
        PacketType::Multicast => frame.first_chunk::<6>().is_some_and(|dst| {
            groups.has_mac(meta.in_port, dst) || (kernel && dst[..5] == [0x33, 0x33, 0, 0, 0])
        }),
        _ => false,
    };
    if ours {
        Ok(Step::Ip6Input)
    } else {
        Err(DropReason::NotUnicast)
    }
}

/// Pad frames under `MIN_FRAME_LEN` from devices without a wire.
#[cold]
fn pad_short_frames(burst: &mut MbufBurst) {
    for m in burst.as_mut_slice() {
        if m.data().len() < MIN_FRAME_LEN {
            m.pad_to(MIN_FRAME_LEN);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapath::contract::Steps;
    use crate::datapath::testing::{Bench, PEER_MAC, PORT_MACS};
    use hooks::testkit;
    use hooks::wire::arp::ArpRepr;

    #[test]
    fn ipv4_to_a_link_local_group_s_mac_is_taken_only_with_kernel_interfaces() {
        let to = |group: [u8; 4], mac: [u8; 6]| {
            testkit::udp([10, 0, 1, 7], group, 1, 2)
                .macs(mac, PEER_MAC)
                .ttl(1)
                .build()
        };
        let frames = [
            to([224, 0, 0, 5], [0x01, 0x00, 0x5e, 0x00, 0x00, 0x05]),
            to([224, 0, 1, 5], [0x01, 0x00, 0x5e, 0x00, 0x01, 0x05]),
        ];
        let mut b = Bench::new();
        b.frames(&frames);
        let steps = b.run(&SPEC, run);
        assert_eq!((steps.ip_input, steps.drop), (0, 0b11), "{steps:#x?}");
        assert_eq!(b.dropped(&SPEC, DropReason::NotUnicast), 2);
        let mut b = Bench::new().with_kernel();
        b.frames(&frames);
        let steps = b.run(&SPEC, run);
        assert_eq!((steps.ip_input, steps.drop), (0b01, 0b10), "{steps:#x?}");
    }

    #[test]
    fn one_burst_sorted_by_next_step_with_drops_counted_here() {
        let us = PORT_MACS[0];
        let plain = testkit::udp([10, 0, 1, 7], [198, 51, 100, 9], 1, 2)
            .macs(us, PEER_MAC)
            .build();
        let tagged = testkit::udp([10, 0, 1, 7], [198, 51, 100, 9], 1, 2)
            .macs(us, PEER_MAC)
            .vlan(0x0005)
            .build();
        let priority = testkit::udp([10, 0, 1, 7], [198, 51, 100, 9], 1, 2)
            .macs(us, PEER_MAC)
            .vlan(0x2000)
            .build();
        let other_host = testkit::udp([10, 0, 1, 7], [198, 51, 100, 9], 1, 2)
            .macs([0x02, 0, 0, 0, 0, 0x77], PEER_MAC)
            .build();
        let mut arp = testkit::arp(
            [0xff; 6],
            PEER_MAC,
            &ArpRepr {
                operation: hooks::wire::arp::op::REQUEST,
                sender_mac: PEER_MAC,
                sender_ip: [10, 0, 1, 7].into(),
                target_mac: [0; 6],
                target_ip: [10, 0, 1, 1].into(),
            },
        );
        // As a NIC's wire pads it.
        arp.resize(60, 0);
        let runt = plain[..40].to_vec();
        let ipv6 = testkit::ethernet(us, PEER_MAC, ethertype::IPV6, &[0; 60]);
        let broadcast_ip = testkit::udp([10, 0, 1, 7], [10, 0, 1, 255], 1, 2)
            .macs([0xff; 6], PEER_MAC)
            .build();
        let mut b = Bench::new();
        b.frames(&[
            plain,
            tagged,
            priority,
            other_host,
            arp,
            runt,
            ipv6,
            broadcast_ip,
        ]);
        let steps = b.run(&SPEC, run);
        assert_eq!(
            steps,
            Steps {
                ip_input: 0b0000_0101,
                local: 0b0001_0000,
                drop: 0b1110_1010,
                ..Steps::default()
            }
        );
        assert_eq!(b.scratch.punt[4], Punt::Arp);
        // Without hooks, the plain packet's metadata is written where it
        // is read, and then it is the translation's.
        assert_eq!(b.scratch.unset, 0b1, "the plain packet's is left unset");
        b.scratch.metas[0].next_hop = 7;
        b.scratch.fill_metas(0b1, 0, false);
        assert_eq!(b.scratch.metas[0], plain_meta(0));
        assert_eq!(b.scratch.unset, 0);
        assert_eq!(b.scratch.metas[2].l3_offset, 18, "the priority tag's IPv4");
        assert_eq!(b.scratch.tagged, 0b100, "ip_input is told it is not at 14");
        for (reason, n) in [
            (DropReason::VlanNotConfigured, 1),
            (DropReason::OtherHost, 1),
            (DropReason::Runt, 1),
            (DropReason::UnsupportedProtocol, 1),
            (DropReason::NotUnicast, 1),
        ] {
            assert_eq!(b.dropped(&SPEC, reason), n, "{reason:?}");
        }
    }

    #[test]
    fn the_first_frame_s_family_takes_the_first_pass_and_the_other_is_translated() {
        use crate::datapath::ip6_input::frames::udp6;
        let v4 = testkit::udp([10, 0, 1, 7], [198, 51, 100, 9], 1, 2)
            .macs(PORT_MACS[0], PEER_MAC)
            .build();
        let v6 = udp6("2001:db8:1::7", "2001:db8:100::9").build();
        for (frames, first) in [
            (vec![v4.clone(), v6.clone(), v4.clone()], ethertype::IPV4),
            (vec![v6.clone(), v4.clone(), v6.clone()], ethertype::IPV6),
        ] {
            let mut b = Bench::with_ipv6();
            b.frames(&frames);
            let steps = b.run(&SPEC, run);
            let (v4s, v6s) = if first == ethertype::IPV4 {
                (0b101, 0b010)
            } else {
                (0b010, 0b101)
            };
            assert_eq!((steps.ip_input, steps.ip6_input), (v4s, v6s), "{first:#x}");
            // The first pass's are left unset; the other's are written.
            assert_eq!(b.scratch.unset, 0b101, "{first:#x}");
            assert_eq!(b.scratch.unset_protocol, first);
            let other = &b.scratch.metas[1];
            assert_ne!(other.protocol, first);
            assert_eq!((other.packet_type, other.l3_offset), (PacketType::Host, 14));
            b.scratch.fill_metas(0b101, 0, false);
            for i in [0, 2] {
                assert_eq!(b.scratch.metas[i].protocol, first, "{first:#x}");
            }
        }
    }

    #[test]
    fn ipv6_to_our_mac_or_a_group_of_ours_goes_to_ip6_input() {
        use crate::datapath::ip6_input::frames::{icmp6, udp6};
        let peer = "2001:db8:1::7";
        let mut b = Bench::with_ipv6();
        b.frames(&[
            udp6(peer, "2001:db8:100::9").build(),
            icmp6(peer, "ff02::1", 128)
                .dst_mac([0x33, 0x33, 0, 0, 0, 1])
                .build(),
            icmp6(peer, "ff02::2", 133)
                .dst_mac([0x33, 0x33, 0, 0, 0, 2])
                .build(),
            // 2001:db8:1::1's solicited-node group.
            icmp6(peer, "ff02::1:ff00:1", 135)
                .dst_mac([0x33, 0x33, 0xff, 0, 0, 1])
                .build(),
            // Port 1's (fe80::2): not a group of port 0.
            icmp6(peer, "ff02::1:ff00:2", 135)
                .dst_mac([0x33, 0x33, 0xff, 0, 0, 2])
                .build(),
            udp6(peer, "ff02::fb")
                .dst_mac([0x33, 0x33, 0, 0, 0, 0xfb])
                .build(),
            udp6(peer, "2001:db8:100::9").dst_mac([0xff; 6]).build(),
            udp6(peer, "2001:db8:100::9")
                .dst_mac([0x02, 0, 0, 0, 0, 0x77])
                .build(),
        ]);
        let steps = b.run(&SPEC, run);
        assert_eq!(
            steps,
            Steps {
                ip6_input: 0b0000_1111,
                drop: 0b1111_0000,
                ..Steps::default()
            }
        );
        assert_eq!(b.dropped(&SPEC, DropReason::NotUnicast), 3);
        assert_eq!(b.dropped(&SPEC, DropReason::OtherHost), 1);
        let m = &b.scratch.metas[1];
        assert_eq!(
            (m.protocol, m.packet_type, m.l3_offset),
            (ethertype::IPV6, PacketType::Multicast, 14)
        );
        // The burst starts with IPv6: its first pass took the plain IPv6
        // frame, whose metadata (no hooks) is left unset, and IPv6's.
        assert_eq!(b.scratch.unset, 0b1);
        b.scratch.fill_metas(0b1, 0, false);
        assert_eq!(b.scratch.metas[0], plain_meta6(0));
        // Without an IPv6 FIB, IPv6 is not taken.
        let mut b = Bench::new();
        b.frames(&[udp6(peer, "2001:db8:100::9").build()]);
        assert_eq!(b.run(&SPEC, run).drop, 1);
        assert_eq!(b.dropped(&SPEC, DropReason::UnsupportedProtocol), 1);
    }
}
