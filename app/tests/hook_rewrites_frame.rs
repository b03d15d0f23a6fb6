//! An ingress hook that rewrites frames (a destination NAT written against
//! the `hooks` crate, registered by name): the router routes a rewritten
//! packet by its new destination: a burst with one rewritten packet, and
//! a burst the hook read only.
//! One EAL in this process: everything is in one test.

mod common;

use common::frames::{self, udp, PCAP1_MAC};
use common::*;
use hooks::wire::Ipv4Packet;
use hooks::{
    BuildContext, Hook, HookArgs, HookBuildError, HookBurst, HookContext, HookKind, HookPoint,
};
use hooks::{HookWorker, WorkerStore};
use std::sync::Arc;

const NEIGH_22: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x22];
const NEIGH_25: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x25];
/// Where the hook sends UDP to port 53: an on-link host of net_pcap1.
const DNS_SERVER: [u8; 4] = [10, 0, 2, 5];

/// Rewrites the IPv4 destination of UDP to port 53 to [`DNS_SERVER`] and
/// fixes the header checksum; reads every other packet only.
struct Dnat;

impl Hook for Dnat {
    fn worker(&self, _: usize, _: &mut WorkerStore) -> Box<dyn HookWorker> {
        Box::new(Dnat)
    }
}

impl HookWorker for Dnat {
    fn process(&mut self, _cx: &HookContext, _: &mut WorkerStore, burst: &mut HookBurst<'_, '_>) {
        burst.for_each_accepted(|_, p| {
            let l3 = usize::from(p.meta().l3_offset);
            let ip = p.data().get(l3..l3 + 24)?;
            if ip[9] != 17 || ip[22..24] != [0, 53] || ip[16..20] == DNS_SERVER {
                return None;
            }
            let mut ip = Ipv4Packet::new_checked(p.data_mut().get_mut(l3..)?).ok()?;
            ip.set_dst_addr(DNS_SERVER.into());
            ip.fill_checksum();
            None
        });
    }
}

struct DnatKind;

impl HookKind for DnatKind {
    fn name(&self) -> &str {
        "dnat53"
    }
    fn points(&self) -> &[HookPoint] {
        &[HookPoint::Ingress]
    }
    fn build(&self, _: &HookArgs, _: &BuildContext) -> Result<Arc<dyn Hook>, HookBuildError> {
        Ok(Arc::new(Dnat))
    }
}

const CONFIG: &str = concat!(
    pcap_router_config!(),
    r#"
[[neighbour]]
address = "10.0.2.5"
mac = "02:bb:00:00:00:25"

[[hook]]
point = "ingress"
port = "net_pcap0"
kind = "dnat53"
"#
);

/// `frame` routed out of net_pcap1 to `neigh`, with `dst` as its IPv4
/// destination (the UDP checksum as it was: the hook leaves it).
fn routed(frame: &[u8], neigh: [u8; 6], dst: [u8; 4]) -> Vec<u8> {
    let mut f = frame.to_vec();
    let mut ip = Ipv4Packet::new_checked(&mut f[14..]).expect("IPv4");
    ip.set_dst_addr(dst.into());
    ip.fill_checksum();
    frames::routed(&f, PCAP1_MAC, neigh)
}

#[test]
fn a_frame_an_ingress_hook_rewrote_is_routed_by_its_new_destination() {
    // Burst 0: nothing for the hook to rewrite. Burst 1: every fourth
    // packet is UDP to port 53 of 198.51.100.9 (via 10.0.2.2 before the
    // hook, on-link 10.0.2.5 after).
    let mut frames = Vec::new();
    let mut expect = Vec::new();
    for burst in 0..2u16 {
        for i in 0..32u16 {
            let sport = 1000 + 32 * burst + i;
            let dns = burst == 1 && i % 4 == 0;
            let f = udp(
                [10, 0, 1, 2],
                [198, 51, 100, 9],
                sport,
                if dns { 53 } else { 54 },
            );
            expect.push(match dns {
                true => routed(&f, NEIGH_25, DNS_SERVER),
                false => routed(&f, NEIGH_22, [198, 51, 100, 9]),
            });
            frames.push(f);
        }
    }
    let registry = fastpath::builtin_hooks::registry();
    let _handle = registry
        .register(Arc::new(DnatKind))
        .expect("not a built-in name");
    let (_, out1, report) = run_pcaps_in_process("dnat", CONFIG, &frames, &[], &registry);

    assert_eq!(out1.len(), expect.len(), "{out1:02x?}");
    for (i, (a, b)) in out1.iter().zip(&expect).enumerate() {
        assert_eq!(a, b, "routed frame {i}");
    }
    assert!(report.totals.balanced);
    assert_eq!(report.mbufs.in_use_at_exit, 0);
}
