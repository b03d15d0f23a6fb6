//! An example hook written outside the pipeline: a token-bucket policer per
//! source prefix. It is safe Rust against the `hooks` crate only; fastpath
//! runs it once its kind is registered and a config names it:
//!
//! ```toml
//! [[hook]]
//! point = "ingress"
//! port = "net_af_packet0"
//! kind = "policer"
//! rate_pps = 1000        # tokens per second, per prefix and worker
//! burst = 64             # bucket depth
//! prefixes = ["10.0.1.0/24", "10.0.2.0/24"]
//! ```
//!
//! and, in the program that starts fastpath:
//!
//! ```ignore
//! let registry = fastpath::builtin_hooks::registry();
//! let _handle = registry.register(Arc::new(policer::PolicerKind)).unwrap();
//! fastpath::runtime::run_with_registry(&argv, &args, &registry)
//! ```
//!
//! Packets from a source in none of the prefixes pass untouched; IPv4
//! packets over their prefix's rate are dropped as `policed`. The shared
//! hook ([`Hook`]) holds the configuration; each worker runs its own `HookWorker`
//! ([`HookWorker`]) with its own buckets, as `&mut`: no lock. Like every
//! hook it reads the packet through its view (`p.l3()`, `p.meta()`) and
//! sets verdicts; the mark and the class (`set_mark`, `set_class`) and the
//! frame's bytes (`data_mut`, checked again by the router) are all a hook
//! may change.

use hooks::worker_counters::WorkerCounters;
use hooks::{
    BuildContext, DropReason, FlowSummary, Hook, HookArgs, HookBuildError, HookBurst, HookContext,
    HookKind, HookWorker, Verdict, WorkerStore,
};
use std::sync::Arc;

/// The `policer` kind.
pub struct PolicerKind;

#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    last_ns: u64,
}

/// One policer instance, shared by the workers: prefixes, a rate, and the
/// count of policed packets each worker publishes.
pub struct Policer {
    prefixes: Vec<(u32, u32)>,
    rate_per_ns: f64,
    burst: f64,
    policed: Arc<WorkerCounters<1>>,
}

/// A policer on one worker: the worker's own buckets, one per
/// prefix, reached through `&mut` (no lock).
struct PolicerWorker {
    shared: Arc<Policer>,
    buckets: Vec<Bucket>,
    worker: usize,
}

/// The hook handed to the chain.
struct PolicerHook(Arc<Policer>);

impl Hook for PolicerHook {
    fn worker(&self, worker: usize, _: &mut WorkerStore) -> Box<dyn HookWorker> {
        let full = Bucket {
            tokens: self.0.burst,
            last_ns: 0,
        };
        Box::new(PolicerWorker {
            shared: self.0.clone(),
            buckets: vec![full; self.0.prefixes.len()],
            worker,
        })
    }

    fn stats(&self) -> Vec<(&'static str, u64)> {
        vec![("policed", self.0.policed.sum(0))]
    }
}

impl HookWorker for PolicerWorker {
    fn process(&mut self, cx: &HookContext, _: &mut WorkerStore, burst: &mut HookBurst<'_, '_>) {
        let p = &*self.shared;
        let buckets = &mut self.buckets;
        let mut policed = 0;
        burst.for_each_accepted(|_, pkt| {
            let s = FlowSummary::parse(pkt.l3())?;
            let k = p
                .prefixes
                .iter()
                .position(|&(net, mask)| s.src & mask == net)?;
            let b = &mut buckets[k];
            let elapsed = cx.now_ns.saturating_sub(b.last_ns) as f64;
            b.tokens = (b.tokens + elapsed * p.rate_per_ns).min(p.burst);
            b.last_ns = cx.now_ns.max(b.last_ns);
            if b.tokens >= 1.0 {
                b.tokens -= 1.0;
                None
            } else {
                policed += 1;
                Some(Verdict::Drop(DropReason::Policed))
            }
        });
        p.policed.add(self.worker, 0, policed);
    }
}

fn parse_prefix(s: &str) -> Option<(u32, u32)> {
    let (a, l) = s.split_once('/').unwrap_or((s, "32"));
    let addr = u32::from(a.parse::<std::net::Ipv4Addr>().ok()?);
    let len: u32 = l.parse().ok().filter(|l| *l <= 32)?;
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    (addr & !mask == 0).then_some((addr, mask))
}

impl HookKind for PolicerKind {
    fn name(&self) -> &str {
        "policer"
    }

    fn build(&self, args: &HookArgs, cx: &BuildContext) -> Result<Arc<dyn Hook>, HookBuildError> {
        let mut rate = None;
        let mut burst = 32.0;
        let mut prefixes = Vec::new();
        for (k, v) in &args.params {
            match (k.as_str(), v) {
                ("rate_pps", toml::Value::Integer(i)) if *i >= 0 => rate = Some(*i as f64),
                ("rate_pps", toml::Value::Float(f)) if *f >= 0.0 => rate = Some(*f),
                ("rate_pps", _) => {
                    return Err(HookBuildError::param(
                        k,
                        "expected packets per second, >= 0",
                    ))
                }
                ("burst", toml::Value::Integer(i)) if *i >= 1 => burst = *i as f64,
                ("burst", _) => return Err(HookBuildError::param(k, "expected an integer >= 1")),
                ("prefixes", toml::Value::Array(a)) => {
                    for p in a {
                        let parsed = p.as_str().and_then(parse_prefix);
                        prefixes.push(parsed.ok_or_else(|| {
                            HookBuildError::param(
                                k,
                                format!("expected prefixes like \"10.0.1.0/24\", found {p}"),
                            )
                        })?);
                    }
                }
                _ => {
                    return Err(HookBuildError::param(
                        k,
                        "unknown field; expected rate_pps, burst, prefixes",
                    ))
                }
            }
        }
        let rate = rate.ok_or_else(|| HookBuildError::param("rate_pps", "missing"))?;
        if prefixes.is_empty() {
            return Err(HookBuildError::param(
                "prefixes",
                "expected at least one prefix",
            ));
        }
        Ok(Arc::new(PolicerHook(Arc::new(Policer {
            prefixes,
            rate_per_ns: rate / 1e9,
            burst,
            policed: Arc::new(WorkerCounters::new(cx.workers)),
        }))))
    }
}

/// Run as `cargo run -p hooks --example policer`: registers the kind and
/// polices a burst of 100 packets from one prefix at a bucket of 10.
#[allow(dead_code)]
fn main() {
    use hooks::{HookPacket, HookPoint, PacketMeta, Registry};
    let registry = Registry::new();
    let handle = registry
        .register(Arc::new(PolicerKind))
        .expect("fresh registry");
    let mut args = HookArgs::default();
    args.params
        .insert("rate_pps".into(), toml::Value::Integer(0));
    args.params.insert("burst".into(), toml::Value::Integer(10));
    args.params.insert(
        "prefixes".into(),
        toml::Value::Array(vec!["10.0.1.0/24".into()]),
    );
    let cx = BuildContext {
        workers: 1,
        point: HookPoint::Ingress,
        port: 0,
        ports: vec![],
        name: "policer".into(),
    };
    let hook = registry.get("policer").unwrap().build(&args, &cx).unwrap();
    let mut frames = vec![example_frame(); 32];
    let mut meta = PacketMeta::default();
    meta.l3_offset = 14;
    let mut metas = vec![meta; 32];
    let mut pkts: Vec<HookPacket> = frames
        .iter_mut()
        .zip(metas.iter_mut())
        .map(|(f, m)| HookPacket::new(f, m))
        .collect();
    let mut verdicts = vec![Verdict::Accept; 32];
    let mut burst = HookBurst::new(&mut pkts, &mut verdicts);
    let hcx = HookContext {
        worker: 0,
        point: HookPoint::Ingress,
        port: 0,
        now_ns: 1,
    };
    // The hook on the worker (the router makes it at the worker's
    // quiescent point, and keeps it while the hook is in its hook set).
    let mut store = WorkerStore::new();
    let mut on_worker = hook.worker(0, &mut store);
    on_worker.process(&hcx, &mut store, &mut burst);
    println!("{:?}", burst.tally());
    handle.unregister();
}

/// Ethernet + IPv4 (10.0.1.2 -> 10.0.2.2, UDP) frame of 60 bytes, from the
/// crate's test kit (feature `testkit`, on for the examples).
fn example_frame() -> Vec<u8> {
    hooks::testkit::udp([10, 0, 1, 2], [10, 0, 2, 2], 0, 0)
        .payload(&[0; 18])
        .build()
}
