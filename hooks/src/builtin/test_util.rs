//! Packets and a one-burst runner for the built-in hooks' tests (their
//! frames come from [`crate::testkit`]).

use crate::{
    BuildContext, Hook, HookArgs, HookBurst, HookContext, HookKind, HookPacket, HookPoint,
    PacketMeta, Verdict,
};
use std::sync::Arc;

/// A test packet: frame bytes and the metadata the pipeline would give it.
#[derive(Clone, Debug)]
pub struct Pkt {
    pub data: Vec<u8>,
    pub meta: PacketMeta,
}

impl Pkt {
    pub fn new(data: Vec<u8>) -> Pkt {
        let mut meta = PacketMeta::received_on(0);
        meta.protocol = 0x0800;
        meta.l3_offset = 14;
        meta.out_port = 1;
        Pkt { data, meta }
    }

    pub fn with(mut self, f: impl FnOnce(&mut PacketMeta)) -> Pkt {
        f(&mut self.meta);
        self
    }
}

/// Parse `toml` (a hook's keys, with `[[rule]]` tables) into arguments.
pub fn args(toml_text: &str) -> HookArgs {
    let mut t: toml::Table = toml_text.parse().expect("test TOML");
    let rules = match t.remove("rule") {
        Some(toml::Value::Array(a)) => a
            .into_iter()
            .map(|v| match v {
                toml::Value::Table(t) => t,
                _ => panic!("rule not a table"),
            })
            .collect(),
        _ => Vec::new(),
    };
    HookArgs { params: t, rules }
}

pub fn build_cx(point: HookPoint) -> BuildContext {
    BuildContext {
        workers: 1,
        point,
        port: 1,
        ports: vec![("in0".into(), 0), ("out1".into(), 1)],
        name: "t".into(),
    }
}

pub fn build(kind: &dyn HookKind, point: HookPoint, toml_text: &str) -> Arc<dyn Hook> {
    build_named(kind, point, "t", toml_text)
}

/// [`build`] with an instance name of its own (instances of one name share
/// their counters).
pub fn build_named(
    kind: &dyn HookKind,
    point: HookPoint,
    name: &str,
    toml_text: &str,
) -> Arc<dyn Hook> {
    let cx = BuildContext {
        name: name.into(),
        ..build_cx(point)
    };
    match kind.build(&args(toml_text), &cx) {
        Ok(h) => h,
        Err(e) => panic!("build: {e}"),
    }
}

/// The context of the built-in hooks' tests: worker 0, port 1.
fn test_cx(point: HookPoint, now_ns: u64) -> HookContext {
    HookContext {
        worker: 0,
        point,
        port: 1,
        now_ns,
    }
}

/// Run one burst of `pkts` through `hook` at time `now_ns`; returns the
/// verdicts (metadata changes are written back into `pkts`).
pub fn run(hook: &dyn Hook, point: HookPoint, pkts: &mut [Pkt], now_ns: u64) -> Vec<Verdict> {
    run_at(hook, point, pkts, now_ns).0
}

/// [`run`], and the tokens the hook set (see `Hook::flow_pure`).
pub fn run_tokens(hook: &dyn Hook, point: HookPoint, pkts: &mut [Pkt]) -> (Vec<Verdict>, Vec<u32>) {
    run_at(hook, point, pkts, 0)
}

/// [`run_tokens`] at time `now_ns`.
pub fn run_at(
    hook: &dyn Hook,
    point: HookPoint,
    pkts: &mut [Pkt],
    now_ns: u64,
) -> (Vec<Verdict>, Vec<u32>) {
    let mut views: Vec<HookPacket> = pkts
        .iter_mut()
        .map(|p| HookPacket::new(&mut p.data, &mut p.meta))
        .collect();
    let mut verdicts = vec![Verdict::Accept; views.len()];
    let mut burst = HookBurst::new(&mut views, &mut verdicts);
    hook.process(&test_cx(point, now_ns), &mut burst);
    let n = burst.len();
    let mut row = [0; crate::MAX_BURST];
    burst.take_tokens(&mut row);
    (verdicts, row[..n].to_vec())
}

/// The hook's own counters, without the flow cache's (which a replay
/// does not touch: the pipeline answered without the cache).
pub fn stats_but_cache(hook: &dyn Hook) -> Vec<(&'static str, u64)> {
    hook.stats()
        .into_iter()
        .filter(|(n, _)| !n.starts_with("flow_cache"))
        .collect()
}

/// Replay `tokens` into `hook` (worker 0).
pub fn replay(hook: &dyn Hook, point: HookPoint, tokens: &[u32]) {
    hook.replay(&test_cx(point, 0), tokens);
}

/// [`Hook::confirm`] of one packet (worker 0) at `now_ns`: whether the
/// hook confirmed it.
pub fn confirm_one(hook: &dyn Hook, point: HookPoint, pkt: &Pkt, token: u32, now_ns: u64) -> bool {
    let flow = crate::FlowSummary::parse(&pkt.data[usize::from(pkt.meta.l3_offset)..])
        .expect("a remembered packet parses");
    hook.confirm(&test_cx(point, now_ns), &[flow], &[token]) == 1
}

/// [`Hook::confirm_leased`] of one packet (worker 0) at `now_ns` with its
/// `lease` (renewed in place): whether the hook confirmed it.
pub fn confirm_leased(
    hook: &dyn Hook,
    point: HookPoint,
    pkt: &Pkt,
    token: u32,
    lease: &mut crate::Lease,
    now_ns: u64,
) -> bool {
    let flow = crate::FlowSummary::parse(&pkt.data[usize::from(pkt.meta.l3_offset)..])
        .expect("a remembered packet parses");
    let leases = std::slice::from_mut(lease);
    hook.confirm_leased(
        &test_cx(point, now_ns),
        crate::Flows::Given(&[flow]),
        &[token],
        leases,
    ) == 1
}

/// `hook`'s own counter `name`.
pub fn stat(hook: &dyn Hook, name: &str) -> u64 {
    hook.stats()
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no stat {name}"))
        .1
}
