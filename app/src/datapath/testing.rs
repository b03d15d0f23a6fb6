//! What the stages' unit tests share: one EAL per test process (no
//! hugepages, no devices, no runtime folder left), a pipeline over a small FIB and neighbour
//! table, and a burst built from frames that one stage runs alone.
//!
//! The FIB: 10.0.1.1/24 on port 0 and 10.0.2.1/24 on port 1 (ours, local),
//! 198.51.100.0/24 via 10.0.2.2 (a static neighbour, [`GATEWAY_MAC`]) out of
//! port 1 with MTU 1500, 203.0.113.0/24 via 10.0.2.9 (no neighbour yet).

use super::contract::{Cx, StageSpec, Steps};
use super::ip6_input::groups::{Groups6, PortGroups6};
use super::{Pipeline, Scratch};
use crate::capture::Hub;
use crate::config::RouterConfig;
use crate::counters::LcoreCounters;
use crate::dpdk::{Eal, Lpm, Mbuf, MbufBurst, Mempool, Qsbr};
use crate::fib::{fib_entries, FibWriter, NEIGH_BY_DST};
use crate::fib6::{fib6_entries, Fib6, Fib6Writer};
use crate::neigh::{EthHeader, NeighTable, NeighWriter};
use hooks::wire::ethernet::ethertype;
use hooks::{HookSet, PacketMeta};
use std::sync::{Arc, Mutex, OnceLock};

/// Port 0's and port 1's MACs.
pub const PORT_MACS: [[u8; 6]; 2] = [[0x02, 0, 0, 0, 0, 0x01], [0x02, 0, 0, 0, 0, 0x02]];
/// The MAC of 10.0.2.2, the gateway of 198.51.100.0/24.
pub const GATEWAY_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x99];
/// A sender's MAC.
pub const PEER_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x42];

const CONFIG: &str = r#"
[[port]]
device = "net_null0"
address = "10.0.1.1/24"

[[port]]
device = "net_null1"
address = "10.0.2.1/24"

[[route]]
prefix = "198.51.100.0/24"
via = "10.0.2.2"

[[route]]
prefix = "203.0.113.0/24"
via = "10.0.2.9"
"#;

/// [`CONFIG`] with IPv6: 2001:db8:1::1/64 on port 0, 2001:db8:2::1/64 on
/// port 1 (link-local fe80::2), 2001:db8:100::/48 via 2001:db8:2::2 (a
/// static neighbour, [`GATEWAY_MAC`]), 2001:db8:200::/48 via 2001:db8:2::9
/// (no neighbour yet), port 1's MTU 1500.
const CONFIG6: &str = r#"
[[port]]
device = "net_null0"
address = "10.0.1.1/24"
ipv6 = ["2001:db8:1::1/64"]

[[port]]
device = "net_null1"
address = "10.0.2.1/24"
ipv6 = ["2001:db8:2::1/64"]
link_local = "fe80::2"

[[route]]
prefix = "198.51.100.0/24"
via = "10.0.2.2"

[[route]]
prefix = "203.0.113.0/24"
via = "10.0.2.9"

[[route]]
prefix = "2001:db8:100::/48"
via = "2001:db8:2::2"

[[route]]
prefix = "2001:db8:200::/48"
via = "2001:db8:2::9"
"#;

struct Dpdk {
    pool: Mempool,
    socket: i32,
}

static DPDK: OnceLock<Mutex<Dpdk>> = OnceLock::new();

fn dpdk() -> &'static Mutex<Dpdk> {
    DPDK.get_or_init(|| {
        let prefix = format!("stages{}", std::process::id());
        let args = [
            "stages",
            "--no-huge",
            "--no-shconf",
            "--no-pci",
            "-m",
            // Room for an IPv6 FIB: two rte_lpm6 tables of 66 MiB.
            "512",
            "--log-level",
            "lib.eal:error",
            "--file-prefix",
            &prefix,
        ];
        let (eal, _) = Eal::init(&args).expect("EAL for the stage tests");
        let socket = eal.socket_id();
        let pool = Mempool::new("stage_tests", 1023, 0, socket).expect("mbuf pool");
        // Nothing else attaches to it: its runtime folder can go now.
        let _ = std::fs::remove_dir_all(eal.runtime_dir());
        // The EAL lives as long as the process.
        std::mem::forget(eal);
        Mutex::new(Dpdk { pool, socket })
    })
}

/// A pipeline, its counters and scratch, and a burst to run one stage on.
pub struct Bench {
    pub pipeline: Pipeline,
    pub counters: LcoreCounters,
    pub scratch: Box<Scratch>,
    pub burst: MbufBurst,
    pub hooks: Arc<HookSet>,
    pub to_control: MbufBurst,
    _fib_writer: FibWriter,
    _fib6_writer: Option<Fib6Writer>,
}

impl Bench {
    /// The pipeline of the module's doc, without hooks.
    pub fn new() -> Bench {
        Bench::with_config(CONFIG)
    }

    /// [`Bench::new`] with IPv6 ([`CONFIG6`]): an IPv6 FIB and the ports'
    /// groups.
    pub fn with_ipv6() -> Bench {
        Bench::with_config(CONFIG6)
    }

    fn with_config(config: &str) -> Bench {
        let d = crate::sync::lock(dpdk());
        let cfg = RouterConfig::parse("stages.toml".as_ref(), config).expect("config");
        let qsbr = Qsbr::new(1).expect("qsbr");
        let (neigh, mut writer) = NeighTable::new(64, qsbr.clone());
        let gateway = writer
            .insert_static(
                "10.0.2.2".parse().expect("address"),
                &EthHeader {
                    dst: GATEWAY_MAC,
                    src: PORT_MACS[1],
                    ethertype: ethertype::IPV4,
                },
            )
            .expect("neighbour");
        let entries = fib_entries(&cfg, &[0, 1], |gw| {
            if gw == "10.0.2.2".parse::<std::net::Ipv4Addr>().expect("address") {
                gateway as u32
            } else {
                NEIGH_BY_DST
            }
        });
        let name = format!(
            "lpm{}",
            COUNT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        let lpm = Lpm::new(&name, 64, 64, d.socket).expect("lpm");
        let (fib, fib_writer) = FibWriter::new(lpm, qsbr.clone(), &entries).expect("fib");
        let (fib6, groups6, fib6_writer) = ipv6_tables(&cfg, &name, qsbr, &mut writer, d.socket);
        let tsc_hz = crate::dpdk::tsc_hz();
        let pipeline = Pipeline {
            fib,
            fib6,
            groups6,
            neigh,
            awaited: Arc::default(),
            macs: PORT_MACS.into(),
            pad_short: [false, false].into(),
            rx_ip_csum: [true, true].into(),
            tsc_hz,
            worker: 0,
            ns_per_tick: super::hook_run::ns_per_tick(tsc_hz),
            capture: Hub::new(16, 1000, tsc_hz).tap(0),
            kernel: None,
        };
        Bench {
            pipeline,
            counters: LcoreCounters::new(0, 2),
            scratch: Box::new(Scratch::for_worker(0)),
            burst: MbufBurst::new(),
            hooks: Arc::new(HookSet::default()),
            to_control: MbufBurst::new(),
            _fib_writer: fib_writer,
            _fib6_writer: fib6_writer,
        }
    }

    /// With the ports' kernel interfaces (no routing peers).
    pub fn with_kernel(mut self) -> Bench {
        self.pipeline.kernel = Some(Arc::new(super::to_kernel::KernelPeers::default()));
        self
    }

    /// The burst: one mbuf per frame, in order.
    pub fn frames(&mut self, frames: &[Vec<u8>]) -> &mut Self {
        let d = crate::sync::lock(dpdk());
        for f in frames {
            let mut m = Mbuf::alloc(&d.pool).expect("mbuf");
            assert!(m.append(f), "a frame of {} bytes fits an mbuf", f.len());
            assert!(self.burst.push(m).is_ok(), "at most a burst of frames");
        }
        self
    }

    /// Set the burst's masks and metadata as the stages before would have.
    pub fn state(&mut self, steps: Steps, metas: &[PacketMeta]) -> &mut Self {
        self.scratch.steps = steps;
        self.scratch.metas[..metas.len()].copy_from_slice(metas);
        self
    }

    /// Run `stage` (its `run`, declared by `spec`) alone over the burst,
    /// received on port 0; the TX buffers are none.
    pub fn run(&mut self, spec: &'static StageSpec, stage: fn(&mut Cx<'_>)) -> Steps {
        let mut tx = [None, None];
        let mut cx = Cx {
            pipeline: &self.pipeline,
            port: 0,
            hooks: &self.hooks,
            burst: &mut self.burst,
            s: &mut self.scratch,
            counters: &self.counters,
            tx: &mut tx,
            to_control: &mut self.to_control,
            stage: spec,
        };
        let before = cx.s.steps;
        let n = cx.burst.len();
        stage(&mut cx);
        let steps = cx.s.steps;
        // A stage that is given every packet in exactly one step leaves it so.
        if before.is_partition(n) {
            assert!(
                steps.is_partition(n) || spec.stage == super::Stage::Tx,
                "{:?} lost or doubled a packet: {steps:?}",
                spec.stage
            );
        }
        // Packets only join the steps the stage declares it sets.
        for step in Steps::ALL {
            let joined = steps.of(step) & !before.of(step);
            assert!(
                joined == 0 || spec.sets.contains(&step),
                "{:?} put packets in {step:?}, which its SPEC does not declare",
                spec.stage
            );
        }
        steps
    }

    /// Packets dropped for `reason` under the stage `spec`.
    pub fn dropped(&self, spec: &StageSpec, reason: hooks::DropReason) -> u64 {
        self.counters
            .stage_drops_snapshot()
            .iter()
            .filter(|(stage, r, _)| {
                *stage == crate::counters::STAGES[spec.stage as usize] && *r == reason
            })
            .map(|(_, _, n)| n)
            .sum()
    }

    /// The bytes of packet `i`.
    pub fn data(&self, i: usize) -> &[u8] {
        self.burst.as_slice()[i].data()
    }

    /// Mbufs of the test pool not back in it.
    pub fn in_use() -> u32 {
        crate::sync::lock(dpdk()).pool.in_use()
    }
}

impl Drop for Bench {
    fn drop(&mut self) {
        // The mbufs go back to the pool under the lock: the pool is shared
        // by the tests of this process.
        let _d = crate::sync::lock(dpdk());
        self.burst.free_all();
        self.to_control.free_all();
    }
}

/// The IPv6 FIB and groups of `cfg` (none without IPv6): 2001:db8:2::2 a
/// static neighbour ([`GATEWAY_MAC`]), each gateway held in the table.
fn ipv6_tables(
    cfg: &RouterConfig,
    name: &str,
    qsbr: Arc<Qsbr>,
    neigh: &mut NeighWriter,
    socket: i32,
) -> (Option<Arc<Fib6>>, Arc<Groups6>, Option<Fib6Writer>) {
    if !cfg.has_ipv6() {
        return (None, Arc::default(), None);
    }
    let hdr = EthHeader {
        dst: GATEWAY_MAC,
        src: PORT_MACS[1],
        ethertype: ethertype::IPV6,
    };
    neigh
        .insert_static6("2001:db8:2::2".parse().expect("address"), &hdr)
        .expect("neighbour");
    let entries = fib6_entries(cfg, &[0, 1], &PORT_MACS, |gw, _| {
        neigh.insert_gateway6(gw).expect("gateway") as u32
    });
    let (fib, writer) = Fib6::create(
        &format!("{name}v6"),
        &entries,
        crate::fib6::FIB6_ROUTES,
        qsbr,
        socket,
    )
    .expect("fib6");
    let groups = cfg
        .ports
        .iter()
        .zip(PORT_MACS)
        .map(|(p, mac)| {
            let own = p.ipv6.iter().map(|a| a.address);
            PortGroups6::of(own.chain([p.link_local.address(mac)]))
        })
        .collect();
    (Some(fib), Arc::new(Groups6::new(groups)), Some(writer))
}

static COUNT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// A hook for the hook stages' tests: drops a frame whose last byte is
/// [`DROP_BYTE`], steals one whose last byte is [`STEAL_BYTE`], and
/// counts what it was handed over. A writer instead clears the IP version
/// of a frame whose last byte is [`BREAK_BYTE`] (at byte 14) and accepts it.
pub struct LastByteHook {
    pub taken: Arc<std::sync::atomic::AtomicUsize>,
    pub writer: bool,
}

/// The last byte of a frame whose IP version [`LastByteHook`]'s writer clears.
pub const BREAK_BYTE: u8 = 0xb0;

pub const DROP_BYTE: u8 = 0xd0;

/// A UDP frame to 198.51.100.9 received on port 0 whose last byte is
/// `last` (for [`LastByteHook`]).
pub fn frame_ending(last: u8) -> Vec<u8> {
    hooks::testkit::udp([10, 0, 1, 7], [198, 51, 100, 9], 1, 2)
        .macs(PORT_MACS[0], PEER_MAC)
        .pad(false)
        .payload(&[1, 2, last])
        .build()
}
pub const STEAL_BYTE: u8 = 0x57;

/// A UDP frame from 2001:db8:1::7 to 2001:db8:2::9 received on port 0
/// whose last byte is `last` (for [`LastByteHook`]).
pub fn frame6_ending(last: u8) -> Vec<u8> {
    let mut f = crate::datapath::ip6_input::frames::udp6("2001:db8:1::7", "2001:db8:2::9");
    if let Some(b) = f.payload.last_mut() {
        *b = last;
    }
    f.build()
}

struct LastBytePart(Arc<std::sync::atomic::AtomicUsize>, bool);

impl hooks::Hook for LastByteHook {
    fn worker(&self, _: usize, _: &mut hooks::WorkerStore) -> Box<dyn hooks::HookWorker> {
        Box::new(LastBytePart(self.taken.clone(), self.writer))
    }

    fn writes_frames(&self) -> bool {
        self.writer
    }
}

impl hooks::HookWorker for LastBytePart {
    fn process(
        &mut self,
        _: &hooks::HookContext,
        _: &mut hooks::WorkerStore,
        burst: &mut hooks::HookBurst<'_, '_>,
    ) {
        let writer = self.1;
        burst.for_each_accepted(|_, p| match p.data().last() {
            Some(&BREAK_BYTE) if writer => {
                if let Some(b) = p.data_mut().get_mut(14) {
                    *b &= 0x0f;
                }
                None
            }
            Some(&DROP_BYTE) => Some(hooks::Verdict::Drop(hooks::DropReason::HookDrop)),
            Some(&STEAL_BYTE) => Some(hooks::Verdict::Stolen),
            _ => None,
        });
    }

    fn take(
        &mut self,
        _: &hooks::HookContext,
        packets: &mut dyn Iterator<Item = Box<dyn hooks::OwnedPacket>>,
    ) {
        let n = packets.count();
        self.0.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Bench {
    /// A [`LastByteHook`] named "last-byte" at `point` of `port`; what it
    /// was handed over.
    pub fn hook(
        &mut self,
        point: hooks::HookPoint,
        port: u16,
    ) -> Arc<std::sync::atomic::AtomicUsize> {
        self.hook_of(point, port, false)
    }

    /// [`Bench::hook`] as a writer (see [`LastByteHook`]).
    pub fn writer_hook(&mut self, point: hooks::HookPoint, port: u16) {
        self.hook_of(point, port, true);
    }

    fn hook_of(
        &mut self,
        point: hooks::HookPoint,
        port: u16,
        writer: bool,
    ) -> Arc<std::sync::atomic::AtomicUsize> {
        let taken = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let mut set = HookSet::empty(2);
        set.set(
            point,
            port,
            hooks::Chain::new(vec![hooks::ChainEntry {
                name: "last-byte".into(),
                kind: "last-byte".into(),
                priority: 0,
                hook: Arc::new(LastByteHook {
                    taken: taken.clone(),
                    writer,
                }),
                counters: Arc::new(hooks::HookCounters::new(1)),
            }]),
        );
        self.hooks = Arc::new(set);
        self.scratch.hooks.refresh(&self.hooks);
        taken
    }
}
