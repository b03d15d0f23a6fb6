//! Packets and a one-burst runner for the built-in hooks' tests (their
//! frames come from [`crate::testkit`]).

use crate::{
    BuildContext, Hook, HookArgs, HookBurst, HookContext, HookKind, HookPacket, HookPoint,
    HookWorker, PacketMeta, Verdict, WorkerStore,
};
use std::cell::RefCell;
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

    /// An IPv6 packet in an Ethernet frame, `src` → `dst` (addresses as
    /// text), first next header `nh`, `payload` after the fixed header.
    pub fn ipv6(src: &str, dst: &str, nh: u8, payload: &[u8]) -> Pkt {
        let addr = |a: &str| {
            a.parse::<std::net::Ipv6Addr>()
                .expect("IPv6 address")
                .octets()
        };
        let mut ip = vec![0x60, 0, 0, 0];
        ip.extend((payload.len() as u16).to_be_bytes());
        ip.extend([nh, 64]);
        ip.extend(addr(src));
        ip.extend(addr(dst));
        ip.extend(payload);
        let frame = crate::testkit::ethernet([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], 0x86dd, &ip);
        Pkt::new(frame).with(|m| m.protocol = 0x86dd)
    }

    /// [`Pkt::ipv6`] carrying a TCP header (20 bytes, `flags`).
    pub fn tcp6(src: &str, dst: &str, sport: u16, dport: u16, flags: u8) -> Pkt {
        let mut t = vec![0; 20];
        t[..2].copy_from_slice(&sport.to_be_bytes());
        t[2..4].copy_from_slice(&dport.to_be_bytes());
        t[12] = 0x50;
        t[13] = flags;
        Pkt::ipv6(src, dst, 6, &t)
    }

    /// [`Pkt::ipv6`] carrying a UDP header and 4 bytes.
    pub fn udp6(src: &str, dst: &str, sport: u16, dport: u16) -> Pkt {
        let mut u = vec![0; 12];
        u[..2].copy_from_slice(&sport.to_be_bytes());
        u[2..4].copy_from_slice(&dport.to_be_bytes());
        u[4..6].copy_from_slice(&12u16.to_be_bytes());
        Pkt::ipv6(src, dst, 17, &u)
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

/// The test thread as worker 0: its store and its `HookWorker` of each hook it
/// ran (by the hook's address; every test keeps its hooks alive).
#[derive(Default)]
struct TestWorker {
    store: WorkerStore,
    hooks: Vec<(*const (), Box<dyn HookWorker>)>,
}

thread_local! {
    static WORKER: RefCell<TestWorker> = RefCell::default();
}

/// Run one burst of `pkts` through `hook` at time `now_ns`, as worker 0
/// (the same `HookWorker` of the hook every time); returns the verdicts (metadata
/// changes are written back into `pkts`).
pub fn run(hook: &dyn Hook, point: HookPoint, pkts: &mut [Pkt], now_ns: u64) -> Vec<Verdict> {
    let mut views: Vec<HookPacket> = pkts
        .iter_mut()
        .map(|p| HookPacket::new(&mut p.data, &mut p.meta))
        .collect();
    let mut verdicts = vec![Verdict::Accept; views.len()];
    let mut burst = HookBurst::new(&mut views, &mut verdicts);
    WORKER.with_borrow_mut(|w| {
        let at = hook as *const dyn Hook as *const ();
        let i = match w.hooks.iter().position(|(h, _)| *h == at) {
            Some(i) => i,
            None => {
                let on_worker = hook.worker(0, &mut w.store);
                w.hooks.push((at, on_worker));
                w.hooks.len() - 1
            }
        };
        let TestWorker { store, hooks } = w;
        hooks[i]
            .1
            .process(&test_cx(point, now_ns), store, &mut burst);
    });
    verdicts
}

/// `hook`'s own counter `name`.
pub fn stat(hook: &dyn Hook, name: &str) -> u64 {
    hook.stats()
        .into_iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("no stat {name}"))
        .1
}
