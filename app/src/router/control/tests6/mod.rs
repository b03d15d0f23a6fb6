//! The IPv6 control plane on frames: a control plane over a small FIB and
//! neighbour table in this process (one EAL, no hugepages, no devices),
//! handed punted mbufs as a worker would hand them, its answers read back
//! from its inject ring and checked byte for byte.
//!
//! Port 0 (02:00:00:00:00:01): 10.0.1.1/24, 2001:db8:1::1/64, link-local
//! fe80::ff:fe00:1 (EUI-64). Port 1 (02:00:00:00:00:02): 10.0.2.1/24,
//! 2001:db8:2::1/64, link-local fe80::1, MTU 1400. No IPv6 FIB: next hops
//! are the destinations on a port's link.

use super::frames6::tests::{frame6, nd_frame};
use super::frames6::{self, neighbor_advert, neighbor_solicit};
use super::parts::{ControlParts, NeighParams, PortAddr};
use super::ControlPlane;
use crate::config::RouterConfig;
use crate::counters::LcoreCounters;
use crate::datapath::punt::Punt;
use crate::dpdk::{mbuf_ring, Eal, Lpm, Mbuf, MbufBurst, Mempool, Qsbr, RingConsumer};
use crate::fib::{fib_entries, FibWriter, NEIGH_BY_DST};
use crate::neigh::{NeighState, NeighTable};
use hooks::grace::Epochs;
use hooks::wire::ethernet::HEADER_LEN;
use hooks::wire::icmpv6::{self, kind, Icmpv6Packet, NdRepr};
use hooks::wire::ipv6::{multicast_mac, next_header, solicited_node, ALL_NODES};
use hooks::DropReason;
use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

const P0: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];
const P1: [u8; 6] = [0x02, 0, 0, 0, 0, 0x02];
const HOST: [u8; 6] = [0x02, 0, 0, 0, 0, 0x42];
const NEXT: [u8; 6] = [0x02, 0, 0, 0, 0, 0x77];

const CONFIG: &str = r#"
[[port]]
device = "net_null0"
address = "10.0.1.1/24"
ipv6 = ["2001:db8:1::1/64"]

[[port]]
device = "net_null1"
address = "10.0.2.1/24"
ipv6 = ["2001:db8:2::1/64"]
link_local = "fe80::1"
mtu = 1400
"#;

fn a(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

/// The process's EAL: its mbuf pool and socket.
fn dpdk() -> &'static (Mempool, i32) {
    static POOL: OnceLock<(Mempool, i32)> = OnceLock::new();
    POOL.get_or_init(|| {
        let prefix = format!("control6{}", std::process::id());
        let args = [
            "control6",
            "--no-huge",
            "--no-shconf",
            "--no-pci",
            "-m",
            "128",
            "--log-level",
            "lib.eal:error",
            "--file-prefix",
            &prefix,
        ];
        let (eal, _) = Eal::init(&args).expect("EAL for the control plane tests");
        let socket = eal.socket_id();
        let pool = Mempool::new("control6_tests", 2047, 0, socket).expect("mbuf pool");
        let _ = std::fs::remove_dir_all(eal.runtime_dir());
        std::mem::forget(eal);
        (pool, socket)
    })
}

fn pool() -> &'static Mempool {
    &dpdk().0
}

fn socket() -> i32 {
    dpdk().1
}

static COUNT: AtomicU32 = AtomicU32::new(0);

/// A control plane and the ends of its rings.
struct Rig {
    cp: ControlPlane<'static>,
    inject: RingConsumer,
    counters: Arc<LcoreCounters>,
    start: Instant,
}

impl Rig {
    fn new() -> Rig {
        let pool = pool();
        let n = COUNT.fetch_add(1, Relaxed);
        let cfg = RouterConfig::parse("control6.toml".as_ref(), CONFIG).expect("config");
        let qsbr = Qsbr::new(1).expect("qsbr");
        let (_, neigh) = NeighTable::new(256, Arc::new(Epochs::default()));
        let entries = fib_entries(&cfg, &[0, 1], |_| NEIGH_BY_DST);
        let lpm = Lpm::new(&format!("c6lpm{n}"), 64, 64, socket()).expect("lpm");
        let (_, fib) = FibWriter::new(lpm, qsbr, &entries).expect("fib");
        let (punt_tx, punt_rx) = mbuf_ring(&format!("c6punt{n}"), 64, socket()).expect("ring");
        drop(punt_tx);
        let (inject_tx, inject) = mbuf_ring(&format!("c6inj{n}"), 1024, socket()).expect("ring");
        let counters = Arc::new(LcoreCounters::new(0, 2));
        let port = |id: u16, mac, addr: &str, mtu| PortAddr {
            id,
            mac,
            addr: addr.parse().unwrap(),
            prefix_len: 24,
            mtu,
        };
        let cp = ControlPlane::new(ControlParts {
            ports: vec![port(0, P0, "10.0.1.1", 1500), port(1, P1, "10.0.2.1", 1400)],
            fib,
            neigh,
            params: NeighParams::default(),
            punt: vec![punt_rx],
            inject: vec![inject_tx],
            pool,
            counters: counters.clone(),
            awaited: Arc::default(),
            ports6: super::addr6::Port6::of_config(&cfg, &[0, 1], &[P0, P1]),
            fib6: None,
        });
        let start = cp.start;
        Rig {
            cp,
            inject,
            counters,
            start,
        }
    }

    /// Hand the control plane `frame` as a worker punts it for `punt`,
    /// received on `in_port` (to go out of `out_port`).
    fn punt(&mut self, frame: &[u8], punt: Punt, in_port: u16, out_port: u16) {
        let mut m = Mbuf::alloc(pool()).expect("an mbuf");
        assert!(m.append(frame));
        let meta = m.meta_mut();
        meta.in_port = in_port;
        meta.out_port = out_port;
        meta.l3_offset = HEADER_LEN as u16;
        meta.punt = punt as u8;
        self.cp.handle(m);
    }

    /// What the control plane sent since the last call: (port, frame).
    fn sent(&mut self) -> Vec<(u16, Vec<u8>)> {
        let mut burst = MbufBurst::new();
        let mut out = Vec::new();
        while self.inject.dequeue_burst(&mut burst) != 0 {
            for m in burst.drain() {
                out.push((m.meta().out_port, m.data().to_vec()));
            }
        }
        out
    }

    /// The one frame sent since the last call, out of `port`.
    fn one_sent(&mut self, port: u16) -> Vec<u8> {
        let mut sent = self.sent();
        let drops: Vec<(&str, u64)> = (0..2)
            .flat_map(|p| {
                let c = self.counters.snapshot()[p].drops;
                DropReason::ALL
                    .into_iter()
                    .map(move |r| (r.name(), c.get(r)))
            })
            .filter(|(_, n)| *n > 0)
            .collect();
        assert_eq!(sent.len(), 1, "{sent:02x?}, drops {drops:?}");
        let (p, f) = sent.pop().unwrap();
        assert_eq!(p, port);
        f
    }

    fn dropped(&self, port: u16, reason: DropReason) -> u64 {
        self.counters.snapshot()[usize::from(port)]
            .drops
            .get(reason)
    }

    fn at(&self, after: Duration) -> Instant {
        self.start + after
    }
}

/// A solicitation for `target` from `src` (with its MAC as source
/// link-layer address unless `src` is ::) as it arrives on port 0.
fn solicitation(src: Ipv6Addr, target: Ipv6Addr, hop_limit: u8) -> Vec<u8> {
    let ll = (!src.is_unspecified()).then_some(HOST);
    let group = solicited_node(target);
    let nd = NdRepr::NeighborSolicit {
        target,
        source_ll: ll,
    };
    nd_frame((multicast_mac(group), HOST), (src, group), hop_limit, nd)
}

/// An advertisement of `target` at `mac`, to `dst` on port 1.
fn advert(target: Ipv6Addr, mac: [u8; 6], solicited: bool, override_: bool) -> Vec<u8> {
    let nd = NdRepr::NeighborAdvert {
        router: false,
        solicited,
        override_,
        target,
        target_ll: Some(mac),
    };
    nd_frame((P1, mac), (target, a("2001:db8:2::1")), 255, nd)
}

/// A UDP datagram from host 2001:db8:1::2 to `dst`, as port 0 receives it.
fn datagram(src: Ipv6Addr, dst: Ipv6Addr, hop_limit: u8) -> Vec<u8> {
    let udp = [0x30, 0x39, 0x00, 0x35, 0, 12, 0, 0, 1, 2, 3, 4];
    frame6((P0, HOST), (src, dst), next_header::UDP, hop_limit, &udp)
}

/// (type, code, bytes 4..8) of the ICMPv6 message in `frame`, after
/// checking its checksum, and the IPv6 source and destination.
fn icmp6(frame: &[u8]) -> ((u8, u8, u32), Ipv6Addr, Ipv6Addr) {
    let (ip, msg) = frames6::icmpv6_message(&frame[HEADER_LEN..]).expect("ICMPv6");
    let p = Icmpv6Packet::new_checked(msg).unwrap();
    assert!(p.verify_checksum(&ip.src_addr, &ip.dst_addr), "checksum");
    ((p.msg_type(), p.code(), p.word()), ip.src_addr, ip.dst_addr)
}

mod icmp;
mod nd;
mod resolve;
