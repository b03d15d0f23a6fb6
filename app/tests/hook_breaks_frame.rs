//! A hook that breaks the IPv4 header of frames it writes (through
//! `HookPacket::data_mut`, the one way a hook changes a frame): the router
//! checks a written frame again after the chain and drops a broken one
//! under the ip check's reason; it routes and sends none of them. At
//! egress nothing after the chain read the header before this check, so
//! a broken frame was sent as it was. The hook's view has no way to move
//! the L3 offset, the output port or the next hop (the `compile_fail`
//! examples of `hooks::HookPacket`).
//! One EAL in this process: everything is in one test.

mod common;

use common::frames::udp;
use common::*;
use hooks::{
    BuildContext, Hook, HookArgs, HookBuildError, HookBurst, HookContext, HookKind, HookPoint,
};
use hooks::{HookWorker, WorkerStore};
use std::sync::Arc;

/// UDP destination ports whose frames the hook breaks, and how.
const BAD_CSUM_INGRESS: u16 = 7;
const BAD_CSUM_EGRESS: u16 = 9;
const BAD_IHL_EGRESS: u16 = 10;

/// At ingress, flips a bit of the header checksum of UDP to port 7; at
/// egress, of UDP to port 9, and sets IHL 4 in UDP to port 10; reads the
/// others only.
struct Breaker;

impl Hook for Breaker {
    fn worker(&self, _: usize, _: &mut WorkerStore) -> Box<dyn HookWorker> {
        Box::new(Breaker)
    }
}

impl HookWorker for Breaker {
    fn process(&mut self, cx: &HookContext, _: &mut WorkerStore, burst: &mut HookBurst<'_, '_>) {
        burst.for_each_accepted(|_, p| {
            let l3 = usize::from(p.meta().l3_offset);
            let dport = p.data().get(l3 + 22..l3 + 24)?;
            let dport = u16::from_be_bytes([dport[0], dport[1]]);
            let ip = match (cx.point, dport) {
                (HookPoint::Ingress, BAD_CSUM_INGRESS) | (HookPoint::Egress, BAD_CSUM_EGRESS) => {
                    p.data_mut().get_mut(l3..l3 + 20)?
                }
                (HookPoint::Egress, BAD_IHL_EGRESS) => {
                    let ip = p.data_mut().get_mut(l3..l3 + 20)?;
                    ip[0] = 0x44;
                    return None;
                }
                _ => return None,
            };
            ip[11] ^= 0x01;
            None
        });
    }
}

struct BreakerKind;

impl HookKind for BreakerKind {
    fn name(&self) -> &str {
        "breaker"
    }
    fn points(&self) -> &[HookPoint] {
        &[HookPoint::Ingress, HookPoint::Egress]
    }
    fn build(&self, _: &HookArgs, _: &BuildContext) -> Result<Arc<dyn Hook>, HookBuildError> {
        Ok(Arc::new(Breaker))
    }
}

const CONFIG: &str = concat!(
    pcap_router_config!(),
    r#"
[[hook]]
point = "ingress"
port = "net_pcap0"
kind = "breaker"

[[hook]]
point = "egress"
port = "net_pcap1"
kind = "breaker"
"#
);

#[test]
fn a_frame_a_hook_broke_is_dropped_by_its_reason_not_routed() {
    // Four bursts of 32; in the last three, every eighth packet is broken
    // at ingress, every eighth (another) at egress by checksum, every
    // eighth by IHL. The rest is routed to 10.0.2.2, unchanged but TTL.
    let mut frames = Vec::new();
    let mut intact = Vec::new();
    for burst in 0..4u16 {
        for i in 0..32u16 {
            let dport = match (burst, i % 8) {
                (0, _) => 54,
                (_, 1) => BAD_CSUM_INGRESS,
                (_, 3) => BAD_CSUM_EGRESS,
                (_, 5) => BAD_IHL_EGRESS,
                _ => 54,
            };
            let f = udp(
                [10, 0, 1, 2],
                [198, 51, 100, 9],
                1000 + 32 * burst + i,
                dport,
            );
            if dport == 54 {
                intact.push(f[14..].to_vec());
            }
            frames.push(f);
        }
    }
    let registry = fastpath::builtin_hooks::registry();
    let _handle = registry
        .register(Arc::new(BreakerKind))
        .expect("not a built-in name");
    let (_, out1, report) = run_pcaps_in_process("breaker", CONFIG, &frames, &[], &registry);

    // Only the intact frames leave, each with its own IPv4 header (TTL 63).
    assert_eq!(out1.len(), intact.len(), "broken frames were sent");
    for (i, (sent, f)) in out1.iter().zip(&intact).enumerate() {
        assert_eq!(sent[14 + 8], 63, "frame {i}: routed");
        assert_eq!(sent[14 + 12..], f[12..], "frame {i}: addresses and payload");
    }
    let drops = &report.totals.drops;
    let count = |r: &str| drops.get(r).copied().unwrap_or(0);
    assert_eq!(count("ipv4_bad_checksum"), 2 * 12, "{drops:?}");
    assert_eq!(count("ipv4_bad_ihl"), 12, "{drops:?}");
    assert_eq!(report.totals.dropped, 3 * 12, "{drops:?}");
    assert!(report.totals.balanced);
    assert_eq!(report.mbufs.in_use_at_exit, 0);
}
