//! ip6_input: the IPv6 packets l2_input passed (ethertype 0x86DD, to our
//! MAC or a group of ours): the header checks of each (`header.rs`) with
//! its destination's LPM6 lookup in the same pass (the table read inline:
//! `dpdk/lpm6.rs`, `Lpm6::walk`), each packet by its entry's next hop:
//! forwarded with the hop limit one less, delivered to us (`local.rs`),
//! punted for the ICMPv6 error it is owed, or dropped by name. A burst
//! plain throughout is checked, looked up and forwarded in one pass
//! (`plain_burst.rs`); the rest is checked in full, then routed by runs of
//! packets of one LPM6 entry (`runs.rs`, `route.rs`). Beside ip_input,
//! counted and timed under the same stage (`ip_input`: the IP input of
//! both families).
//!
//! IPv6 packets pass the hook stages as IPv4 does: ingress_hook before
//! this stage, egress_hook over what it routed.

pub mod groups;
pub mod header;
pub mod local;
pub mod neighbour;
mod plain_burst;
pub mod route;
mod runs;

#[cfg(test)]
mod any_frame;
#[cfg(test)]
pub(crate) mod frames;

use super::contract::{all, each, Cx, Stage, StageSpec, Step};
use crate::dpdk::{Lpm6, BURST_SIZE};
use crate::fib6::Fib6;
use header::{addr, ipv6_input, plain_ipv6, Ip6Fields};
use hooks::wire::ipv6::field;
use hooks::DropReason;

pub const SPEC: StageSpec = StageSpec {
    stage: Stage::IpInput,
    takes: &[Step::Ip6Input],
    sets: &[Step::NeighOutput, Step::Local, Step::Drop],
    drops: &[
        DropReason::Ipv6Truncated,
        DropReason::Ipv6BadVersion,
        DropReason::Ipv6BadPayloadLength,
        DropReason::Ipv6MulticastSource,
        DropReason::Ipv6UnspecifiedSource,
        DropReason::Ipv6Loopback,
        DropReason::Ipv6Ipv4Mapped,
        DropReason::Ipv6LinkLocalDestination,
        DropReason::Ipv6UnspecifiedDestination,
        DropReason::Ipv6MulticastLinkScope,
        DropReason::Ipv6MulticastNotRouted,
        DropReason::Ipv6LocalUnsupported,
        DropReason::Ipv6MulticastUnsupported,
        DropReason::Ipv6RouterDiscovery,
        DropReason::Ipv6ExtHeaderTruncated,
        DropReason::Ipv6HopByHopNotFirst,
        DropReason::Ipv6TooManyExtHeaders,
        DropReason::Ipv6ChainNotInFirstFragment,
        DropReason::IcmpInvalid,
        DropReason::NotUnicast,
        DropReason::UnsupportedProtocol,
    ],
};

/// ip6_input's per-burst arrays (in `Scratch`): the LPM6 entries of the
/// packets that passed the checks (`Lpm6::walk`: one per route, its
/// next-hop id read once per run of equal entries), in burst order, their
/// places and fields.
pub struct Ip6Burst {
    pub entries: [u32; BURST_SIZE],
    pub at: [u8; BURST_SIZE],
    pub fields: [Ip6Fields; BURST_SIZE],
}

impl Default for Ip6Burst {
    fn default() -> Self {
        Ip6Burst {
            entries: [0; BURST_SIZE],
            at: [0; BURST_SIZE],
            fields: [Ip6Fields::default(); BURST_SIZE],
        }
    }
}

/// Check, look up and route every packet in `steps.ip6_input`: one branch
/// for a burst without IPv6.
#[inline(always)]
pub fn run(cx: &mut Cx<'_>) {
    let mask = std::mem::take(&mut cx.s.steps.ip6_input);
    if mask != 0 {
        input(cx, mask);
    }
}

#[inline(never)]
fn input(cx: &mut Cx<'_>, mask: u64) {
    let p = cx.pipeline;
    let Some(fib) = p.fib6.as_deref() else {
        // l2_input passes no IPv6 without an IPv6 FIB.
        for i in each(mask) {
            cx.drop(i, DropReason::UnsupportedProtocol);
        }
        return;
    };
    // A burst all IPv6 goes the plain pass first (the common case: the whole
    // burst); what it does not take, and a burst of both families, the
    // general way. Metadata l2_input left unset (no hooks) is plain IPv6 at
    // byte 14 to our MAC: a burst all of it reads none; any other burst has
    // it written first.
    let n = cx.burst.len().min(BURST_SIZE);
    let lpm = fib.table();
    let routed_before = cx.s.steps.neigh_output;
    let mut out_port = None;
    let mut rest = mask;
    if mask == all(n) {
        let passed = if cx.s.unset == all(n) {
            plain_burst::check_and_forward::<false>(cx, fib, lpm)
        } else {
            cx.s.fill_metas(mask, cx.port, false);
            plain_burst::check_and_forward::<true>(cx, fib, lpm)
        };
        out_port = passed.out_port;
        rest &= !all(passed.taken);
    }
    if rest != 0 {
        out_port = general(cx, fib, lpm, rest, out_port);
    }
    // The one output port of every packet routed (ip_input's and ours).
    if let Some(port) = out_port {
        cx.s.out_port = if routed_before == 0 || cx.s.out_port == port {
            port
        } else {
            u16::MAX
        };
    }
}

/// The general way for the packets of `mask` (the plain pass's `out_port`
/// so far): checked in full, looked up, routed by runs.
#[inline(never)]
fn general(
    cx: &mut Cx<'_>,
    fib: &Fib6,
    lpm: &Lpm6,
    mask: u64,
    out_port: Option<u16>,
) -> Option<u16> {
    cx.s.fill_metas(mask, cx.port, false);
    let k = check_all(cx, mask, lpm);
    let mut out_port = out_port;
    if let Some(port) = runs::route_all(cx, fib, k) {
        runs::fold_port(&mut out_port, port);
    }
    out_port
}

/// The header checks of every packet of `mask` (the plain case first, in a
/// few compares): those that pass have their destination's LPM6 entry
/// in `lpm`, place and fields gathered in burst order; the others are
/// dropped. Returns how many passed.
#[inline(always)]
fn check_all(cx: &mut Cx<'_>, mask: u64, lpm: &Lpm6) -> usize {
    let mut k = 0;
    for i in each(mask) {
        let Some(m) = cx.burst.as_slice().get(i) else {
            continue;
        };
        let (frame, l3) = (m.data(), usize::from(cx.s.metas[i].l3_offset));
        match plain_ipv6(frame, l3).map_or_else(|| ipv6_input(frame, l3), Ok) {
            Ok((f, h)) => {
                let b = &mut cx.s.ip6;
                b.entries[k % BURST_SIZE] = lpm.walk(addr(h, field::DST));
                b.at[k % BURST_SIZE] = i as u8;
                b.fields[k % BURST_SIZE] = f;
                k += 1;
            }
            Err(r) => cx.drop(i, r),
        }
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapath::contract::Steps;
    use crate::datapath::punt::Punt;
    use crate::datapath::testing::{Bench, PORT_MACS};
    use frames::{icmp6, udp6, Frame6};
    use hooks::wire::ethernet::ethertype;
    use hooks::{PacketMeta, PacketType};

    const PEER: &str = "2001:db8:1::7";
    const FAR: &str = "2001:db8:100::9";

    /// The metadata l2_input gives an IPv6 frame on port 0.
    fn meta(f: &Frame6) -> PacketMeta {
        let mut m = PacketMeta::received_on(0);
        m.packet_type = if f.dst_mac == PORT_MACS[0] {
            PacketType::Host
        } else {
            PacketType::Multicast
        };
        m.protocol = ethertype::IPV6;
        m.l3_offset = 14;
        m
    }

    fn run_frames(frames: &[Frame6]) -> (Bench, Steps) {
        let mut b = Bench::with_ipv6();
        b.frames(&frames.iter().map(Frame6::build).collect::<Vec<_>>());
        let metas: Vec<PacketMeta> = frames.iter().map(meta).collect();
        b.state(
            Steps {
                ip6_input: (1 << frames.len()) - 1,
                ..Steps::default()
            },
            &metas,
        );
        let steps = b.run(&SPEC, run);
        (b, steps)
    }

    #[test]
    fn one_burst_checked_looked_up_and_routed_each_rule_by_name() {
        let group = |mac: [u8; 6], f: Frame6| f.dst_mac(mac);
        let frames = vec![
            // 0: forwarded.
            udp6(PEER, FAR),
            udp6(PEER, FAR).hop_limit(1),
            udp6(PEER, "2001:db8:999::1"),
            udp6(PEER, FAR).grow(1500 - 40 - 16 + 1),
            udp6("fe80::7", FAR),
            // 5: neighbour discovery, to us and to our solicited-node group.
            icmp6(PEER, "2001:db8:1::1", 135),
            group(
                [0x33, 0x33, 0xff, 0, 0, 1],
                icmp6(PEER, "ff02::1:ff00:1", 135),
            ),
            icmp6(PEER, "2001:db8:1::1", 128),
            udp6(PEER, "2001:db8:1::1"),
            group([0x33, 0x33, 0, 0, 0, 2], icmp6(PEER, "ff02::2", 133)),
            // 10
            group([0x33, 0x33, 0, 0, 0, 1], udp6(PEER, "ff02::1")),
            group([0x33, 0x33, 0, 0, 0, 5], udp6(PEER, "ff02::5")),
            group([0x33, 0x33, 0, 0, 0, 2], udp6(PEER, "ff05::2")),
            udp6(PEER, "fe80::99"),
            udp6(PEER, FAR),
            // 15
            udp6("ff02::1", FAR),
            udp6(PEER, "::1"),
            udp6("::ffff:10.0.0.1", FAR),
            udp6("::", FAR),
            udp6(PEER, FAR).dest_opts().pad(20),
            // 20: port 1's link-local address, on port 0's link.
            udp6(PEER, "fe80::2"),
            group([0x33, 0x33, 0, 0, 0, 1], udp6(PEER, FAR)),
            udp6(PEER, "2001:db8:2::77"),
        ];
        let mut b = Bench::with_ipv6();
        // 14: version 4 under ethertype IPv6.
        let mut built: Vec<Vec<u8>> = frames.iter().map(Frame6::build).collect();
        built[14][14] = 0x45;
        b.frames(&built);
        let metas: Vec<PacketMeta> = frames.iter().map(meta).collect();
        let n = frames.len();
        b.state(
            Steps {
                ip6_input: (1 << n) - 1,
                ..Steps::default()
            },
            &metas,
        );
        let steps = b.run(&SPEC, run);
        let punted = [
            (1, Punt::HopLimitExceeded),
            (2, Punt::NoRoute6),
            (3, Punt::PacketTooBig),
            (4, Punt::BeyondScope),
            (5, Punt::Nd),
            (6, Punt::Nd),
            (7, Punt::LocalIcmp6),
            (22, Punt::Resolve6),
        ];
        let local: u64 = punted.iter().map(|(i, _)| 1u64 << i).sum();
        let routed: u64 = (1 << 0) | (1 << 19);
        assert_eq!(
            steps,
            Steps {
                neigh_output: routed,
                local,
                drop: ((1 << n) - 1) & !local & !routed,
                ..Steps::default()
            },
            "{steps:#x?}"
        );
        // The gateway's index, from the route.
        let gateway = b.pipeline.neigh.lookup6("2001:db8:2::2".parse().unwrap());
        assert_eq!(Some(b.scratch.neigh[0] as usize), gateway);
        assert_eq!(b.scratch.neigh[19], b.scratch.neigh[0]);
        assert_eq!(b.scratch.out_port, 1);
        for (i, p) in punted {
            assert_eq!(b.scratch.punt[i], p, "packet {i}");
        }
        for (reason, count) in [
            (DropReason::Ipv6LocalUnsupported, 1),
            (DropReason::Ipv6RouterDiscovery, 1),
            (DropReason::Ipv6MulticastUnsupported, 1),
            (DropReason::Ipv6MulticastLinkScope, 1),
            (DropReason::Ipv6MulticastNotRouted, 1),
            (DropReason::Ipv6LinkLocalDestination, 2),
            (DropReason::Ipv6BadVersion, 1),
            (DropReason::Ipv6MulticastSource, 1),
            (DropReason::Ipv6Loopback, 1),
            (DropReason::Ipv6Ipv4Mapped, 1),
            (DropReason::Ipv6UnspecifiedSource, 1),
            (DropReason::NotUnicast, 1),
        ] {
            assert_eq!(b.dropped(&SPEC, reason), count, "{reason:?}");
        }
        // The forwards: hop limit - 1, padding off, the Destination Options
        // header as it was, the output port.
        assert_eq!(b.data(0)[14 + 7], 63);
        assert_eq!(b.scratch.metas[0].out_port, 1);
        let opts = frames[19].build();
        assert_eq!(b.data(19).len(), opts.len() - 20);
        assert_eq!(b.data(19)[21], 63);
        assert_eq!(&b.data(19)[22..], &opts[22..opts.len() - 20]);
        // The errors' packets as they came, for the quote.
        assert_eq!(b.data(1)[14 + 7], 1);
        assert_eq!(b.data(3).len(), frames[3].build().len());
        assert_eq!(
            b.scratch.metas[3].out_port, 1,
            "the port whose MTU it exceeds"
        );
    }

    #[test]
    fn a_plain_burst_forwards_by_runs_and_refuses_each_by_its_rule() {
        let group = |f: Frame6| f.dst_mac([0x33, 0x33, 0, 0, 0, 1]);
        // Plain throughout (global addresses at byte 14): the runs' way.
        let frames = [
            udp6(PEER, FAR),
            udp6(PEER, FAR).hop_limit(1),
            udp6(PEER, FAR).grow(1500 - 40 - 16 + 1),
            group(udp6(PEER, FAR)),
            udp6(PEER, FAR),
            udp6(PEER, "2001:db8:2::77"),
            udp6(PEER, "2001:db8:999::1"),
            udp6(PEER, FAR),
        ];
        let (b, steps) = run_frames(&frames);
        let routed = (1 << 0) | (1 << 4) | (1 << 7);
        let local = (1 << 1) | (1 << 2) | (1 << 5) | (1 << 6);
        assert_eq!(
            steps,
            Steps {
                neigh_output: routed,
                local,
                drop: 1 << 3,
                ..Steps::default()
            },
            "{steps:#x?}"
        );
        for (i, p) in [
            (1, Punt::HopLimitExceeded),
            (2, Punt::PacketTooBig),
            (5, Punt::Resolve6),
            (6, Punt::NoRoute6),
        ] {
            assert_eq!(b.scratch.punt[i], p, "packet {i}");
        }
        assert_eq!(b.dropped(&SPEC, DropReason::NotUnicast), 1);
        let gateway = b.pipeline.neigh.lookup6("2001:db8:2::2".parse().unwrap());
        for i in [0, 4, 7] {
            assert_eq!(Some(b.scratch.neigh[i] as usize), gateway, "packet {i}");
            assert_eq!(b.data(i)[14 + 7], 63, "packet {i}");
            assert_eq!(b.scratch.metas[i].out_port, 1, "packet {i}");
        }
        // The refused as they came.
        assert_eq!(b.data(1)[14 + 7], 1);
        assert_eq!(b.data(3)[14 + 7], 64);
        assert_eq!(b.scratch.metas[2].out_port, 1, "the port it exceeds");
        assert_eq!(b.scratch.out_port, 1);
    }

    #[test]
    fn a_burst_with_its_metadata_left_unset_reads_none_and_fills_what_it_refuses() {
        // As l2_input leaves a plain IPv6 burst that meets no hook: the
        // metadata is another burst's.
        let frames = [
            udp6(PEER, FAR),
            udp6(PEER, FAR).hop_limit(1),
            udp6(PEER, FAR),
        ];
        let mut b = Bench::with_ipv6();
        b.frames(&frames.iter().map(Frame6::build).collect::<Vec<_>>());
        let mut stale = PacketMeta::received_on(1);
        stale.l3_offset = 18;
        stale.packet_type = PacketType::OtherHost;
        b.state(
            Steps {
                ip6_input: 0b111,
                ..Steps::default()
            },
            &[stale; 3],
        );
        b.scratch.unset = 0b111;
        b.scratch.unset_protocol = ethertype::IPV6;
        let steps = b.run(&SPEC, run);
        assert_eq!(
            (steps.neigh_output, steps.local),
            (0b101, 0b010),
            "{steps:#x?}"
        );
        assert_eq!(b.scratch.punt[1], Punt::HopLimitExceeded);
        // The refused packet's metadata written, for the control plane.
        let m = &b.scratch.metas[1];
        assert_eq!(
            (m.in_port, m.protocol, m.packet_type, m.l3_offset),
            (0, ethertype::IPV6, PacketType::Host, 14)
        );
        // The forwards wrote their route only (neigh_output fills the rest).
        assert_eq!(b.scratch.unset, 0b101);
        assert_eq!((b.scratch.metas[0].out_port, b.data(0)[14 + 7]), (1, 63));
        assert_eq!((b.scratch.metas[2].out_port, b.data(2)[14 + 7]), (1, 63));
    }

    #[test]
    fn an_empty_step_is_one_branch_and_routes_nothing() {
        let (b, steps) = run_frames(&[]);
        assert_eq!(steps, Steps::default());
        assert_eq!(b.scratch.out_port, u16::MAX);
    }
}
