//! ip_input: the IPv4 header checks of every packet l2_input passed, with
//! its LPM lookup in the same pass (DPDK's DIR-24-8 steps, inlined);
//! then the route of each (`route.rs`: the next hop read once per run of
//! packets with the same LPM result), TTL - 1 with the incremental
//! checksum, padding trimmed.

pub mod flow_hash;
pub mod header;
pub mod route;

use super::contract::{all, each, Cx, Mask, Stage, StageSpec, Step};
use super::scratch::Scratch;
use crate::dpdk::{Mbuf, BURST_SIZE};
use header::{ipv4_input_into, is_martian_first_octet, is_martian_source, plain_ipv4, CsumFlag};
use hooks::wire::ipv4::field;
use hooks::DropReason;

pub const SPEC: StageSpec = StageSpec {
    stage: Stage::IpInput,
    takes: &[Step::IpInput],
    sets: &[Step::NeighOutput, Step::Local, Step::Drop],
    drops: &[
        DropReason::Ipv4Truncated,
        DropReason::Ipv4BadVersion,
        DropReason::Ipv4BadIhl,
        DropReason::Ipv4BadChecksum,
        DropReason::Ipv4BadTotalLength,
        DropReason::Martian,
        DropReason::NotUnicast,
        DropReason::LocalUnsupported,
        DropReason::MtuExceeded,
    ],
};

/// Check, look up and route every packet in `steps.ip_input`.
#[inline(always)]
pub fn run(cx: &mut Cx<'_>) {
    let mask = std::mem::take(&mut cx.s.steps.ip_input);
    if mask == 0 {
        cx.s.out_port = u16::MAX;
        return;
    }
    cx.s.full = 0;
    // Tagged frames (l2_input says which: their L3 offset is not 14) go
    // the full way. l2_input never passes one that looks plain at byte 14,
    // but an ingress hook may rewrite its bytes.
    let tagged = mask & cx.s.tagged;
    let refused = check(cx, mask & !tagged) | tagged;
    // Every packet of the burst plain, in order: the LPM entries are at
    // the packets' places already.
    let n = cx.burst.len();
    let identity = refused == 0 && mask == all(n);
    let k = if identity {
        n
    } else {
        // Not every packet forwarded in place: each is read in full.
        cx.s.fill_metas(mask, cx.port, false);
        let k = gather(cx.s, mask & !refused);
        if refused != 0 {
            check_refused(cx, refused, k)
        } else {
            k
        }
    };
    route::route_all(cx, k, identity);
}

/// The fast checks of every packet of `mask`, its destination looked up in
/// the same pass (its LPM entry at its place in `s.lpm_entry`); the
/// header's other fields are read again where they are needed, from the
/// cache line this pass brought in. Returns the packets the fast checks
/// refused (not plain, or bad) or whose source is martian. The whole burst
/// (the common case) in one pass over the mbufs.
#[inline(always)]
fn check(cx: &mut Cx<'_>, mask: Mask) -> Mask {
    // A device that never marks checksums (net_pcap, net_null, af_packet:
    // no RX IPv4 checksum offload) has no flag to read per packet.
    if nic_marks_checksums(cx) {
        check_with::<true>(cx, mask)
    } else {
        check_with::<false>(cx, mask)
    }
}

/// [`check`], the NIC's checksum flag read per packet (`NIC`) or not.
#[inline(always)]
fn check_with<const NIC: bool>(cx: &mut Cx<'_>, mask: Mask) -> Mask {
    let results = &mut cx.s.lpm_entry;
    let mbufs = cx.burst.as_slice();
    let fib = cx.pipeline.fib.lookups();
    let mut refused: Mask = 0;
    if mask == all(mbufs.len()) {
        for (i, (m, result)) in mbufs.iter().zip(results.iter_mut()).enumerate() {
            match check_one(m, csum_flag::<NIC>(m)) {
                Some(dst) => *result = fib.entry(dst),
                None => refused |= 1 << i,
            }
        }
    } else {
        for i in each(mask) {
            let Some(m) = mbufs.get(i) else { continue };
            match check_one(m, csum_flag::<NIC>(m)) {
                Some(dst) => results[i] = fib.entry(dst),
                None => refused |= 1 << i,
            }
        }
    }
    refused
}

/// The fast checks of one packet (its header at byte 14: `run` leaves the
/// tagged frames to the full checks; `csum`: the NIC's word on its
/// checksum): its destination if it passes.
#[inline(always)]
fn check_one(m: &Mbuf, csum: CsumFlag) -> Option<u32> {
    let ip = plain_ipv4(m.data(), csum)?;
    if is_martian_first_octet(ip[field::SRC]) {
        return None;
    }
    let d = field::DST;
    Some(u32::from_be_bytes([ip[d], ip[d + 1], ip[d + 2], ip[d + 3]]))
}

/// A burst that is not plain and whole: the LPM entries of the packets of
/// `passed` moved to the front, in order, their places in `s.lpm_at`.
/// Returns how many.
#[cold]
#[inline(never)]
fn gather(s: &mut Scratch, passed: Mask) -> usize {
    let mut k = 0;
    for i in each(passed) {
        s.lpm_at[k % BURST_SIZE] = i as u8;
        s.lpm_entry[k % BURST_SIZE] = s.lpm_entry[i];
        k += 1;
    }
    k
}

/// The packets the fast checks refused: the full checks (a tagged frame, a
/// header with options), a drop for a bad header or a martian source.
/// Those that pass join the LPM entries after the `k` gathered.
#[cold]
#[inline(never)]
fn check_refused(cx: &mut Cx<'_>, refused: Mask, mut k: usize) -> usize {
    let fib = cx.pipeline.fib.lookups();
    let nic = nic_marks_checksums(cx);
    for i in each(refused) {
        let Some(m) = cx.burst.as_slice().get(i) else {
            continue;
        };
        let f = &mut cx.s.ipv4[i];
        let csum = if nic {
            csum_flag::<true>(m)
        } else {
            CsumFlag::Unknown
        };
        match ipv4_input_into(m.data(), &cx.s.metas[i], csum, f) {
            Err(r) => cx.drop(i, r),
            Ok(()) if is_martian_source(f.src) => cx.drop(i, DropReason::Martian),
            Ok(()) => {
                // Its fields are in `s.ipv4`, not to be read from byte 14.
                cx.s.full |= 1 << i;
                cx.s.lpm_at[k % BURST_SIZE] = i as u8;
                cx.s.lpm_entry[k % BURST_SIZE] = fib.entry(u32::from(f.dst));
                k += 1;
            }
        }
    }
    k
}

/// Whether the burst's port may mark IPv4 header checksums in its mbufs
/// (`Pipeline::rx_ip_csum`). Where it cannot, every header's checksum is
/// computed here: the same verdict, the software sum being the truth the
/// flag stands in for.
#[inline(always)]
fn nic_marks_checksums(cx: &Cx<'_>) -> bool {
    let ports = &cx.pipeline.rx_ip_csum;
    ports.get(usize::from(cx.port)).copied().unwrap_or(true)
}

/// What the NIC says of the header checksum (`NIC`: the port's device may
/// say; else not checked).
#[inline(always)]
pub fn csum_flag<const NIC: bool>(m: &Mbuf) -> CsumFlag {
    if !NIC {
        return CsumFlag::Unknown;
    }
    match m.rx_ip_checksum() {
        Some(true) => CsumFlag::Good,
        Some(false) => CsumFlag::Bad,
        None => CsumFlag::Unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapath::contract::Steps;
    use crate::datapath::l2_input::plain::plain_meta;
    use crate::datapath::punt::Punt;
    use crate::datapath::testing::{Bench, PEER_MAC, PORT_MACS};
    use hooks::testkit;

    /// Every frame into ip_input as l2_input leaves a plain one; the steps.
    fn route_all(b: &mut Bench, frames: &[Vec<u8>]) -> Steps {
        let n = frames.len();
        b.frames(frames);
        let metas = vec![plain_meta(0); n];
        b.state(
            Steps {
                ip_input: (1 << n) - 1,
                ..Steps::default()
            },
            &metas,
        );
        b.run(&SPEC, run)
    }

    fn udp(src: [u8; 4], dst: [u8; 4]) -> testkit::Frame {
        testkit::udp(src, dst, 1, 2).macs(PORT_MACS[0], PEER_MAC)
    }

    #[test]
    fn the_link_s_groups_go_to_the_kernel_with_kernel_interfaces_other_groups_never() {
        let frames = vec![
            udp([10, 0, 1, 7], [224, 0, 0, 5]).ttl(1).build(),
            udp([10, 0, 1, 7], [224, 0, 0, 6]).ttl(1).build(),
            udp([10, 0, 1, 7], [224, 0, 1, 5]).ttl(1).build(),
            udp([10, 0, 1, 7], [239, 1, 1, 1]).build(),
        ];
        for kernel in [false, true] {
            let mut b = if kernel {
                Bench::new().with_kernel()
            } else {
                Bench::new()
            };
            let steps = route_all(&mut b, &frames);
            let (local, drop) = if kernel {
                (0b0011, 0b1100)
            } else {
                (0, 0b1111)
            };
            assert_eq!((steps.local, steps.drop), (local, drop), "kernel {kernel}");
            if kernel {
                assert_eq!([b.scratch.punt[0], b.scratch.punt[1]], [Punt::Kernel; 2]);
            }
            let dropped = b.dropped(&SPEC, DropReason::NotUnicast);
            assert_eq!(dropped, u64::from(drop.count_ones()), "kernel {kernel}");
        }
    }

    #[test]
    fn one_burst_checked_looked_up_and_routed() {
        let frames = vec![
            udp([10, 0, 1, 7], [198, 51, 100, 9]).build(),
            udp([10, 0, 1, 7], [198, 51, 100, 10]).ttl(1).build(),
            udp([10, 0, 1, 7], [192, 0, 2, 1]).build(),
            udp([127, 0, 0, 1], [198, 51, 100, 9]).build(),
            udp([10, 0, 1, 7], [198, 51, 100, 9])
                .bad_ipv4_checksum()
                .build(),
            testkit::icmp_echo([10, 0, 1, 7], [10, 0, 1, 1], 8, 1, 1)
                .macs(PORT_MACS[0], PEER_MAC)
                .build(),
            udp([10, 0, 1, 7], [10, 0, 1, 1]).build(),
            udp([10, 0, 1, 7], [203, 0, 113, 5]).build(),
            udp([10, 0, 1, 7], [198, 51, 100, 9])
                .payload(&[7; 1600])
                .build(),
            udp([10, 0, 1, 7], [198, 51, 100, 9])
                .payload(&[7; 1600])
                .dont_frag()
                .build(),
        ];
        let mut b = Bench::new();
        let steps = route_all(&mut b, &frames);
        assert_eq!(
            steps,
            Steps {
                neigh_output: 0b00_1000_0001,
                local: 0b10_0010_0110,
                drop: 0b01_0101_1000,
                ..Steps::default()
            },
            "{steps:#x?}"
        );
        let s = &b.scratch;
        assert_eq!(
            [s.punt[1], s.punt[2], s.punt[5], s.punt[9]],
            [
                Punt::TtlExceeded,
                Punt::NoRoute,
                Punt::LocalIcmp,
                Punt::FragNeeded
            ]
        );
        for (reason, n) in [
            (DropReason::Martian, 1),
            (DropReason::Ipv4BadChecksum, 1),
            (DropReason::LocalUnsupported, 1),
            (DropReason::MtuExceeded, 1),
        ] {
            assert_eq!(b.dropped(&SPEC, reason), n, "{reason:?}");
        }
        // The forward: TTL - 1 with a checksum that verifies, the next hop.
        let ip = hooks::wire::Ipv4Packet::new_checked(&b.data(0)[14..]).expect("header");
        assert_eq!(ip.ttl(), 63);
        assert!(ip.verify_checksum());
        assert_eq!(s.metas[0].out_port, 1);
        assert_eq!(
            s.metas[0].next_hop,
            u32::from(std::net::Ipv4Addr::new(10, 0, 2, 2))
        );
        assert_eq!(
            s.metas[7].next_hop,
            u32::from(std::net::Ipv4Addr::new(10, 0, 2, 9))
        );
        // Two routed packets, both out of port 1.
        assert_eq!(s.out_port, 1);
        // TTL 1 is left as it was, for the ICMP error's quote.
        let ip = hooks::wire::Ipv4Packet::new_checked(&b.data(1)[14..]).expect("header");
        assert_eq!(ip.ttl(), 1);
    }

    #[test]
    fn a_whole_burst_of_echo_requests_to_us_goes_to_the_control_plane() {
        let echo = testkit::icmp_echo([10, 0, 1, 7], [10, 0, 1, 1], 8, 1, 1)
            .macs(PORT_MACS[0], PEER_MAC)
            .payload(b"xy")
            .build();
        let mut b = Bench::new();
        b.frames(&vec![echo; 32]);
        b.state(
            Steps {
                ip_input: u64::from(u32::MAX),
                ..Steps::default()
            },
            &[plain_meta(0); 32],
        );
        let steps = b.run(&SPEC, run);
        assert_eq!(
            steps,
            Steps {
                local: u64::from(u32::MAX),
                ..Steps::default()
            }
        );
        assert!(b.scratch.punt[..32].iter().all(|&p| p == Punt::LocalIcmp));
    }

    #[test]
    fn a_tagged_frame_and_padding_go_the_full_way() {
        let tagged = udp([10, 0, 1, 7], [198, 51, 100, 9]).vlan(0x2000).build();
        let mut padded = udp([10, 0, 1, 7], [198, 51, 100, 9]).pad(false).build();
        padded.extend_from_slice(&[0; 10]);
        let mut b = Bench::new();
        b.frames(&[tagged, padded.clone()]);
        let mut tagged_meta = plain_meta(0);
        tagged_meta.l3_offset = 18;
        b.state(
            Steps {
                ip_input: 0b11,
                ..Steps::default()
            },
            &[tagged_meta, plain_meta(0)],
        );
        b.scratch.tagged = 0b01;
        let steps = b.run(&SPEC, run);
        assert_eq!(
            steps,
            Steps {
                neigh_output: 0b11,
                ..Steps::default()
            }
        );
        // Both now untagged at 14, without padding.
        assert_eq!(b.scratch.metas[0].l3_offset, 14);
        assert_eq!(b.data(0).len(), 42);
        assert_eq!(b.data(1).len(), 42);
        assert_eq!(padded.len(), 52);
        assert_eq!(&b.data(0)[14..], &b.data(1)[14..]);
    }
}
