//! Arbitrary bytes never panic any hook.
//!
//! Property tests (proptest) over everything in this crate that reads packet
//! bytes: the built-in hooks (`accept`, `classify`, `filter` stateless and
//! stateful), the example policer, a [`Chain`] of them, [`FlowSummary::parse`],
//! every `wire` view and the connection table. Inputs are arbitrary frames
//! (random bytes, and valid Ethernet + IPv4 + TCP/UDP/ICMP frames with byte
//! mutations, truncations and IHL / total-length / fragment changes) with
//! arbitrary metadata (`l3_offset` anywhere, even past the frame), in bursts
//! of 1..=64 packets.
//!
//! Besides "no panic", each hook run checks:
//! - verdicts only move away from `Accept` (a packet dropped before the hook
//!   keeps its verdict), and the burst's tally and mask agree with them;
//! - a hook drops only with its own reason, and changes no frame byte and
//!   no metadata but `classify`'s mark and class;
//! - a filter whose policy is drop never accepts a packet
//!   [`FlowSummary::parse`] cannot read ("never a bypass");
//! - in a [`Chain`], each hook's counters satisfy
//!   `seen = accepted + dropped + stolen`, and each hook sees what the one
//!   before it accepted.
//!
//! `PROPTEST_CASES` overrides the number of cases of every property (the
//! defaults keep `cargo test -p hooks` quick in debug builds).

#[path = "../examples/policer.rs"]
#[allow(dead_code)]
mod policer;

use hooks::builtin::{AcceptKind, ClassifyKind, FilterKind};
use hooks::conntrack::{ConnTable, CtConfig, CtState};
use hooks::flow::{proto, tcp_flag, Fragment};
use hooks::rules::{Key, LinearBuilder};
use hooks::testkit;
use hooks::wire::arp::ArpRepr;
use hooks::wire::{checksum, icmp, ArpPacket, EthernetFrame, IcmpPacket, Ipv4Packet, VlanTag};
use hooks::{
    BuildContext, Chain, ChainEntry, DropReason, FlowSummary, Hook, HookArgs, HookBurst,
    HookContext, HookCounters, HookKind, HookPacket, HookPoint, HookWorker, OwnedPacket,
    PacketMeta, PacketType, Tally, Verdict, WorkerHooks, WorkerStore, MAX_BURST,
};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

// ---------------------------------------------------------------------------
// Configuration

/// `cases` unless PROPTEST_CASES is set (ProptestConfig::default reads it).
fn config(cases: u32) -> ProptestConfig {
    let mut c = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        c.cases = cases;
    }
    // Shrinking a burst of 64 frames can take long; a bounded shrink still
    // gives a small enough input to read.
    c.max_shrink_iters = 2048;
    // No regression files: a failure prints its (shrunk) input, and this
    // file is the place to pin it as a plain test.
    c.failure_persistence = None;
    c
}

/// Workers the hooks are built for; bursts run as worker 0..=WORKERS (the
/// last one out of range, which the counters and tables must tolerate).
const WORKERS: usize = 2;

const SEC: u64 = 1_000_000_000;

// ---------------------------------------------------------------------------
// Packets

#[derive(Clone, Debug)]
struct Pkt {
    data: Vec<u8>,
    meta: PacketMeta,
}

impl Pkt {
    /// The L3 bytes as a hook sees them ([`HookPacket::l3`]).
    fn l3(&self) -> &[u8] {
        self.data
            .get(usize::from(self.meta.l3_offset)..)
            .unwrap_or_default()
    }
}

const ADDRS: [u32; 6] = [
    0x0a00_0102, // 10.0.1.2
    0x0a00_0103, // 10.0.1.3
    0x0a00_0202, // 10.0.2.2
    0xc000_0201, // 192.0.2.1
    0xc633_6407, // 198.51.100.7
    0x0000_0000,
];

fn addr() -> impl Strategy<Value = u32> {
    prop_oneof![4 => select(ADDRS.to_vec()), 1 => any::<u32>()]
}

fn port() -> impl Strategy<Value = u16> {
    prop_oneof![
        3 => select(vec![0u16, 22, 53, 80, 443, 5000, 40000, 65535]),
        1 => any::<u16>(),
    ]
}

fn tcp_flags() -> impl Strategy<Value = u8> {
    use tcp_flag::*;
    prop_oneof![
        3 => select(vec![SYN, SYN | ACK, ACK, PSH | ACK, FIN | ACK, RST, RST | ACK, SYN | FIN]),
        1 => any::<u8>(),
    ]
}

/// The L4 part of a crafted packet.
#[derive(Clone, Debug)]
enum L4Spec {
    Tcp {
        sport: u16,
        dport: u16,
        flags: u8,
    },
    Udp {
        sport: u16,
        dport: u16,
    },
    /// ICMP echo request (8) or reply (0), or any other type.
    Icmp {
        ty: u8,
        code: u8,
        id: u16,
    },
    /// An ICMP error quoting a datagram from our destination to our source
    /// (what a reply-side router sends back), `quote` bytes of its L4 header.
    IcmpError {
        ty: u8,
        code: u8,
        inner_proto: u8,
        sport: u16,
        dport: u16,
        quote: usize,
        inner_frag: u16,
    },
    /// Another protocol (GRE, ESP, ...) with `len` payload bytes.
    Other {
        proto: u8,
        len: usize,
    },
}

fn l4_spec() -> impl Strategy<Value = L4Spec> {
    prop_oneof![
        3 => (port(), port(), tcp_flags())
            .prop_map(|(sport, dport, flags)| L4Spec::Tcp { sport, dport, flags }),
        3 => (port(), port()).prop_map(|(sport, dport)| L4Spec::Udp { sport, dport }),
        2 => (
            prop_oneof![3 => select(vec![0u8, 8]), 1 => any::<u8>()],
            prop_oneof![3 => Just(0u8), 1 => any::<u8>()],
            prop_oneof![3 => select(vec![1u16, 2, 0x1234]), 1 => any::<u16>()],
        )
            .prop_map(|(ty, code, id)| L4Spec::Icmp { ty, code, id }),
        2 => (
            prop_oneof![3 => select(vec![3u8, 4, 5, 11, 12]), 1 => any::<u8>()],
            any::<u8>(),
            prop_oneof![3 => select(vec![proto::TCP, proto::UDP, proto::ICMP]), 1 => any::<u8>()],
            port(),
            port(),
            0usize..=12,
            prop_oneof![3 => Just(0u16), 1 => any::<u16>()],
        )
            .prop_map(|(ty, code, inner_proto, sport, dport, quote, inner_frag)| {
                L4Spec::IcmpError { ty, code, inner_proto, sport, dport, quote, inner_frag }
            }),
        1 => (any::<u8>(), 0usize..24).prop_map(|(proto, len)| L4Spec::Other { proto, len }),
    ]
}

/// Changes to a crafted frame after it is built.
#[derive(Clone, Debug, Default)]
struct Mutation {
    version: Option<u8>,
    ihl: Option<u8>,
    total_len: Option<u16>,
    /// The whole flags + fragment offset word.
    frag: Option<u16>,
    /// (index modulo the frame length, new byte)
    bytes: Vec<(usize, u8)>,
    /// New length, modulo the frame length + 1.
    truncate: Option<usize>,
    /// Recompute the IPv4 header checksum after the field changes.
    fix_checksum: bool,
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let field = |p: u32| prop::option::weighted(f64::from(p) / 100.0, any::<u16>());
    prop_oneof![
        // Half the crafted frames stay well formed.
        1 => Just(Mutation::default()),
        1 => (
            prop::option::weighted(0.1, 0u8..16),
            prop::option::weighted(0.2, 0u8..16),
            field(20),
            prop_oneof![
                3 => Just(None),
                1 => select(vec![0x2000u16, 0x0001, 0x2001, 0x4000, 0x1fff, 0x3fff]).prop_map(Some),
                1 => any::<u16>().prop_map(Some),
            ],
            vec((any::<usize>(), any::<u8>()), 0..4),
            prop::option::weighted(0.25, any::<usize>()),
            any::<bool>(),
        )
            .prop_map(|(version, ihl, total_len, frag, bytes, truncate, fix_checksum)| {
                Mutation { version, ihl, total_len, frag, bytes, truncate, fix_checksum }
            }),
    ]
}

#[derive(Clone, Debug)]
struct FrameSpec {
    vlan: Option<u16>,
    src: u32,
    dst: u32,
    tos: u8,
    ttl: u8,
    /// 32-bit words of IPv4 options (IHL = 5 + this).
    option_words: u8,
    l4: L4Spec,
    payload: usize,
    /// Pad the frame to the 60-byte Ethernet minimum (padding after the
    /// IPv4 total length).
    pad: bool,
    mutation: Mutation,
}

fn frame_spec() -> impl Strategy<Value = FrameSpec> {
    (
        prop::option::weighted(0.2, any::<u16>()),
        addr(),
        addr(),
        prop_oneof![3 => select(vec![0u8, 46 << 2, 10 << 2, 0xb8]), 1 => any::<u8>()],
        any::<u8>(),
        prop_oneof![4 => Just(0u8), 1 => 1u8..=10],
        l4_spec(),
        0usize..24,
        any::<bool>(),
        mutation(),
    )
        .prop_map(
            |(vlan, src, dst, tos, ttl, option_words, l4, payload, pad, mutation)| FrameSpec {
                vlan,
                src,
                dst,
                tos,
                ttl,
                option_words,
                l4,
                payload,
                pad,
                mutation,
            },
        )
}

/// The datagram of a crafted packet, before mutation, from the test kit.
fn datagram(s: &FrameSpec) -> testkit::Frame {
    let payload = vec![0xa5u8; s.payload];
    let frame = match s.l4 {
        L4Spec::Tcp {
            sport,
            dport,
            flags,
        } => testkit::tcp(s.src, s.dst, sport, dport, flags).payload(&payload),
        L4Spec::Udp { sport, dport } => testkit::udp(s.src, s.dst, sport, dport).payload(&payload),
        L4Spec::Icmp { ty, code, id } => testkit::icmp_echo(s.src, s.dst, ty, id, 1)
            .icmp_code(code)
            .payload(&payload),
        L4Spec::IcmpError {
            ty,
            code,
            inner_proto,
            sport,
            dport,
            quote,
            inner_frag,
        } => {
            // The quoted datagram goes the other way: from our destination.
            let inner_l4 = match inner_proto {
                proto::ICMP => testkit::icmp_echo(s.dst, s.src, 8, sport, 1).build_l4(),
                proto::UDP => testkit::udp(s.dst, s.src, sport, dport).build_l4(),
                // The ports, then a zero sequence number (any protocol's bytes).
                _ => testkit::tcp(s.dst, s.src, sport, dport, 0).build_l4()[..8].to_vec(),
            };
            let inner = testkit::ipv4(s.dst, s.src, inner_proto, &inner_l4)
                .ident(0x1234)
                .flags_frag(inner_frag)
                .stale_ipv4_checksum()
                .truncate(20 + quote.min(8))
                .build_ipv4();
            testkit::icmp_error(s.src, s.dst, ty, code, &[inner, payload].concat())
        }
        L4Spec::Other { proto, len } => {
            testkit::ipv4(s.src, s.dst, proto, &[vec![0x5a; len], payload].concat())
        }
    };
    let options = vec![1u8; usize::from(s.option_words) * 4]; // NOP options
    frame
        .tos(s.tos)
        .ttl(s.ttl)
        .ident(0x1234)
        .ip_options(&options)
}

/// Apply the header changes of `m` to `frame`; the checksum is refilled
/// only when `m` says so and the changed header still parses.
fn mutate_header(
    frame: testkit::Frame,
    header_len: usize,
    total: usize,
    m: &Mutation,
) -> testkit::Frame {
    let mut f = frame;
    if let Some(v) = m.version {
        f = f.version(v);
    }
    if let Some(ihl) = m.ihl {
        f = f.ihl(ihl);
    }
    if let Some(t) = m.total_len {
        f = f.total_len(t);
    }
    if let Some(w) = m.frag {
        f = f.flags_frag(w);
    }
    let ihl_len = m.ihl.map_or(header_len, |i| usize::from(i) * 4);
    if !m.fix_checksum || ihl_len < 20 || ihl_len > total {
        f = f.stale_ipv4_checksum();
    }
    f
}

/// Apply the byte changes and the truncation of `m`.
fn mutate_bytes(frame: &mut Vec<u8>, m: &Mutation) {
    if !frame.is_empty() {
        let n = frame.len();
        for &(i, b) in &m.bytes {
            frame[i % n] = b;
        }
    }
    if let Some(t) = m.truncate {
        frame.truncate(t % (frame.len() + 1));
    }
}

/// An Ethernet frame (VLAN-tagged or not) and the offset of its IPv4 header.
fn build_frame(s: &FrameSpec) -> (Vec<u8>, u16) {
    let mut frame = datagram(s).pad(s.pad);
    if let Some(tci) = s.vlan {
        frame = frame.vlan(tci);
    }
    let l3 = frame.l3_offset();
    let total = frame.build().len() - l3;
    let header_len = 20 + usize::from(s.option_words) * 4;
    let mut f = mutate_header(frame, header_len, total, &s.mutation).build();
    mutate_bytes(&mut f, &s.mutation);
    (f, l3 as u16)
}

/// Metadata with every field arbitrary; `l3_offset` and `protocol` are
/// replaced by the packet strategies.
fn meta() -> impl Strategy<Value = PacketMeta> {
    (
        prop_oneof![3 => 0u16..3, 1 => any::<u16>()],
        prop_oneof![3 => 0u16..3, 1 => any::<u16>()],
        prop_oneof![3 => 0u16..=100, 1 => any::<u16>()],
        prop_oneof![2 => Just(0u16), 1 => 0u16..8, 1 => any::<u16>()],
        prop_oneof![2 => Just(0u32), 1 => 0u32..0x40, 1 => any::<u32>()],
        select(vec![
            PacketType::Host,
            PacketType::Broadcast,
            PacketType::Multicast,
            PacketType::OtherHost,
        ]),
        any::<u8>(),
        any::<u32>(),
    )
        .prop_map(
            |(in_port, out_port, vlan, class, mark, packet_type, punt, next_hop)| {
                let mut m = PacketMeta::received_on(in_port);
                m.out_port = out_port;
                m.vlan = vlan;
                m.class = class;
                m.mark = mark;
                m.packet_type = packet_type;
                m.punt = punt;
                m.next_hop = next_hop;
                m
            },
        )
}

fn protocol() -> impl Strategy<Value = u16> {
    prop_oneof![4 => Just(0x0800u16), 1 => select(vec![0x0806u16, 0x86dd, 0x8100]), 1 => any::<u16>()]
}

/// Any `l3_offset`: the usual ones, small ones, and past any frame.
fn any_l3_offset() -> impl Strategy<Value = u16> {
    prop_oneof![
        2 => select(vec![14u16, 18]),
        2 => 0u16..220,
        1 => any::<u16>(),
    ]
}

/// Random bytes, 0..200 of them.
fn raw_pkt() -> impl Strategy<Value = Pkt> {
    (
        vec(any::<u8>(), 0..200),
        meta(),
        protocol(),
        any_l3_offset(),
    )
        .prop_map(|(data, mut meta, protocol, l3)| {
            meta.protocol = protocol;
            meta.l3_offset = l3;
            Pkt { data, meta }
        })
}

/// A crafted frame and its metadata, mostly right.
fn realize(spec: &FrameSpec, mut meta: PacketMeta, l3_override: Option<u16>) -> Pkt {
    let (data, l3) = build_frame(spec);
    meta.l3_offset = l3_override.unwrap_or(l3);
    if let Some(tci) = spec.vlan {
        meta.vlan = tci & 0x0fff;
    }
    Pkt { data, meta }
}

/// How a packet of a later burst answers one of an earlier burst.
#[derive(Clone, Copy, Debug)]
enum Answer {
    /// The other direction (TCP with these flags, ICMP echo reply).
    Reply(u8),
    /// The same direction again (TCP with these flags).
    Again(u8),
    /// An ICMP error about it (type, code, bytes of L4 header quoted), from
    /// its destination to its source.
    Error(u8, u8, usize),
}

fn answer() -> impl Strategy<Value = Answer> {
    use tcp_flag::*;
    let flags =
        || prop_oneof![3 => select(vec![SYN | ACK, ACK, FIN | ACK, RST, SYN]), 1 => any::<u8>()];
    prop_oneof![
        4 => flags().prop_map(Answer::Reply),
        2 => flags().prop_map(Answer::Again),
        2 => (select(vec![3u8, 11, 12, 4, 5, 0, 8]), any::<u8>(), 0usize..=8)
            .prop_map(|(t, c, q)| Answer::Error(t, c, q)),
    ]
}

/// The spec of `a` answering `orig` (clean: no mutation).
fn answering(orig: &FrameSpec, a: Answer) -> FrameSpec {
    let mut s = orig.clone();
    s.mutation = Mutation::default();
    let swap = |s: &mut FrameSpec| core::mem::swap(&mut s.src, &mut s.dst);
    match a {
        Answer::Reply(f) => {
            swap(&mut s);
            s.l4 = match s.l4 {
                L4Spec::Tcp { sport, dport, .. } => L4Spec::Tcp {
                    sport: dport,
                    dport: sport,
                    flags: f,
                },
                L4Spec::Udp { sport, dport } => L4Spec::Udp {
                    sport: dport,
                    dport: sport,
                },
                L4Spec::Icmp { ty: 8, code, id } => L4Spec::Icmp { ty: 0, code, id },
                other => other,
            };
        }
        Answer::Again(f) => {
            if let L4Spec::Tcp { flags, .. } = &mut s.l4 {
                *flags = f;
            }
        }
        Answer::Error(ty, code, quote) => {
            swap(&mut s);
            let (inner_proto, sport, dport) = match orig.l4 {
                L4Spec::Tcp { sport, dport, .. } => (proto::TCP, sport, dport),
                L4Spec::Udp { sport, dport } => (proto::UDP, sport, dport),
                L4Spec::Icmp { id, .. } => (proto::ICMP, id, id),
                L4Spec::IcmpError { .. } => (proto::ICMP, 0, 0),
                L4Spec::Other { proto, .. } => (proto, 0, 0),
            };
            s.l4 = L4Spec::IcmpError {
                ty,
                code,
                inner_proto,
                sport,
                dport,
                quote,
                inner_frag: 0,
            };
        }
    }
    s
}

/// One packet of a burst, before answers are resolved.
#[derive(Clone, Debug)]
enum PktSpec {
    Raw(Pkt),
    Crafted(FrameSpec, PacketMeta, Option<u16>),
    /// Answers crafted packet `n` (modulo their count) of the earlier
    /// bursts; a fresh crafted packet when there is none.
    Answer(usize, Answer, FrameSpec, PacketMeta),
}

fn crafted_meta() -> impl Strategy<Value = (PacketMeta, Option<u16>)> {
    (
        meta(),
        prop_oneof![6 => Just(0x0800u16), 1 => any::<u16>()],
        prop::option::weighted(0.15, any_l3_offset()),
    )
        .prop_map(|(mut meta, protocol, l3)| {
            meta.protocol = protocol;
            (meta, l3)
        })
}

fn pkt_spec() -> impl Strategy<Value = PktSpec> {
    prop_oneof![
        1 => raw_pkt().prop_map(PktSpec::Raw),
        2 => (frame_spec(), crafted_meta()).prop_map(|(f, (m, l3))| PktSpec::Crafted(f, m, l3)),
        1 => (any::<usize>(), answer(), frame_spec(), meta()).prop_map(|(n, a, f, mut m)| {
            m.protocol = 0x0800;
            PktSpec::Answer(n, a, f, m)
        }),
    ]
}

/// A packet: random bytes or a crafted frame (no answers).
fn pkt() -> impl Strategy<Value = Pkt> {
    prop_oneof![
        1 => raw_pkt(),
        3 => (frame_spec(), crafted_meta()).prop_map(|(f, (m, l3))| realize(&f, m, l3)),
    ]
}

/// A burst of 1..=64 packets and which of them an earlier hook dropped.
#[derive(Clone, Debug)]
struct Burst {
    pkts: Vec<Pkt>,
    predropped: u64,
    worker: usize,
    point: HookPoint,
    port: u16,
    /// Time since the previous burst.
    dt_ns: u64,
}

type BurstSpec = (Vec<PktSpec>, u64, usize, HookPoint, u16, u64);

fn burst_spec() -> impl Strategy<Value = BurstSpec> {
    (
        vec(pkt_spec(), 1..=MAX_BURST),
        prop_oneof![3 => Just(0u64), 1 => any::<u64>()],
        prop_oneof![4 => Just(0usize), 2 => 0..=WORKERS],
        select(HookPoint::ALL.to_vec()),
        prop_oneof![3 => 0u16..3, 1 => any::<u16>()],
        prop_oneof![
            3 => 0u64..1000,
            2 => 0u64..(200 * SEC),
            1 => Just(3600 * SEC),
        ],
    )
}

/// A few bursts and the clock they start at. Later bursts answer packets
/// of earlier ones (replies, more of the same flow, ICMP errors), so that
/// connection tracking sees established and related traffic.
fn bursts() -> impl Strategy<Value = (u64, Vec<Burst>)> {
    (
        prop_oneof![4 => 0u64..(1000 * SEC), 1 => any::<u64>()],
        vec(burst_spec(), 1..=4),
    )
        .prop_map(|(start, specs)| {
            let mut earlier: Vec<FrameSpec> = Vec::new();
            let mut out = Vec::new();
            for (pkts, predropped, worker, point, port, dt_ns) in specs {
                let mut this = Vec::new();
                let pkts = pkts
                    .into_iter()
                    .map(|p| match p {
                        PktSpec::Raw(p) => p,
                        PktSpec::Crafted(f, m, l3) => {
                            let p = realize(&f, m, l3);
                            this.push(f);
                            p
                        }
                        PktSpec::Answer(n, a, fresh, m) => {
                            let f = match earlier.len() {
                                0 => fresh,
                                len => answering(&earlier[n % len], a),
                            };
                            let p = realize(&f, m, None);
                            this.push(f);
                            p
                        }
                    })
                    .collect();
                earlier.extend(this);
                out.push(Burst {
                    pkts,
                    predropped,
                    worker,
                    point,
                    port,
                    dt_ns,
                });
            }
            (start, out)
        })
}

// ---------------------------------------------------------------------------
// Hooks

const CLASSIFY: &str = r#"
[[rule]]
in_port = "in0"
proto = "tcp"
tcp_flags = "syn,!ack"
set_mark = 1
[[rule]]
src = "10.0.1.0/24"
dst = "10.0.2.0/24"
proto = "udp"
sport = "1024-65535"
dport = 53
set_class = 2
[[rule]]
proto = "tcp"
sport = 80
dport = "0-1023"
set_mark = 2
[[rule]]
dscp = "10-46"
vlan = "0-100"
set_mark = 0x20
set_class = 3
[[rule]]
proto = "icmp"
dst = "192.0.2.0/24"
action = "drop"
[[rule]]
src = "198.51.100.0/24"
action = "drop"
[[rule]]
in_port = ["in0", "out1"]
proto = 47
action = "set"
set_class = 9
"#;

/// Stateless, touching every match field but `state`; `{policy}` replaced.
const FILTER: &str = r#"
policy = "{policy}"
[[rule]]
proto = "tcp"
dport = 22
action = "count"
[[rule]]
out_port = "out1"
in_port = "in0"
src = "10.0.0.0/8"
proto = "tcp"
dport = "80-443"
tcp_flags = "syn,!ack"
action = "accept"
[[rule]]
dscp = 46
action = "drop"
[[rule]]
mark = "0x10/0xf0"
class = "1-3"
action = "accept"
[[rule]]
proto = "udp"
sport = 53
dst = "10.0.2.2"
action = "accept"
[[rule]]
src = "0.0.0.0/0"
action = "count"
[[rule]]
proto = "icmp"
action = "accept"
[[rule]]
dst = "198.51.100.0/24"
action = "drop"
"#;

/// Stateful, with a table small enough to fill; `{policy}` replaced.
const FILTER_STATEFUL: &str = r#"
policy = "{policy}"
stateful = true
conntrack_max = 16
[[rule]]
state = ["established", "related"]
action = "accept"
[[rule]]
state = "new"
proto = "tcp"
dport = "1-1024"
action = "count"
[[rule]]
state = ["new"]
src = "10.0.1.0/24"
action = "accept"
[[rule]]
proto = "udp"
dport = "5000-6000"
action = "accept"
[[rule]]
state = "new"
dst = "10.0.1.0/24"
action = "drop"
[[rule]]
mark = 7
action = "accept"
[[rule]]
proto = "icmp"
action = "accept"
"#;

const POLICER: &str = r#"
rate_pps = 1000.5
burst = 4
prefixes = ["10.0.1.0/24", "0.0.0.0/0"]
"#;

/// Parse `toml` (a hook's keys and `[[rule]]` tables) into arguments.
fn args(text: &str) -> HookArgs {
    let mut t: toml::Table = text.parse().expect("test TOML");
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

fn build_cx(point: HookPoint) -> BuildContext {
    BuildContext {
        workers: WORKERS,
        point,
        port: 1,
        ports: vec![("in0".into(), 0), ("out1".into(), 1), ("p2".into(), 2)],
        name: "t".into(),
    }
}

fn build(kind: &dyn HookKind, point: HookPoint, text: &str) -> Arc<dyn Hook> {
    kind.build(&args(text), &build_cx(point))
        .unwrap_or_else(|e| panic!("build {}: {e}", kind.name()))
}

/// What a hook may do, for the checks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Accept,
    Classify,
    /// A filter; `policy_drop`: its default policy is drop.
    Filter {
        policy_drop: bool,
    },
    Policer,
    /// The test's own stealing hook (chain test only).
    Thief,
}

impl Role {
    fn may_drop_with(self, r: DropReason) -> bool {
        match self {
            Role::Accept | Role::Thief => false,
            Role::Classify => matches!(r, DropReason::ClassifyRule) || is_rfc1858(r),
            // A stateful filter drops a blind RST whatever its rules say.
            Role::Filter { .. } => {
                matches!(
                    r,
                    DropReason::FilterRule | DropReason::FilterPolicy | DropReason::CtInvalid
                ) || is_rfc1858(r)
            }
            Role::Policer => r == DropReason::Policed,
        }
    }
}

/// The fragments a hook whose rules read ports drops before its rules
/// (`rules::FragmentGuard`).
fn is_rfc1858(r: DropReason) -> bool {
    matches!(
        r,
        DropReason::TinyFragment | DropReason::OverlappingFragment
    )
}

struct Named {
    name: &'static str,
    role: Role,
    hook: Arc<dyn Hook>,
}

/// Every hook under test, freshly built (the stateful filters share one
/// connection table per worker, as two instances of one kind do).
fn all_hooks() -> Vec<Named> {
    let builder = || Arc::new(LinearBuilder);
    let filter = |p: &str| FILTER.replace("{policy}", p);
    let stateful = |p: &str| FILTER_STATEFUL.replace("{policy}", p);
    let filters = FilterKind::new(builder());
    let stateful_kind = FilterKind::new(builder());
    let e = HookPoint::Egress;
    vec![
        Named {
            name: "accept",
            role: Role::Accept,
            hook: build(&AcceptKind, HookPoint::Ingress, ""),
        },
        Named {
            name: "classify",
            role: Role::Classify,
            hook: build(&ClassifyKind::new(builder()), HookPoint::Ingress, CLASSIFY),
        },
        Named {
            name: "filter(drop)",
            role: Role::Filter { policy_drop: true },
            hook: build(&filters, e, &filter("drop")),
        },
        Named {
            name: "filter(accept)",
            role: Role::Filter { policy_drop: false },
            hook: build(&filters, e, &filter("accept")),
        },
        Named {
            name: "filter(stateful, drop)",
            role: Role::Filter { policy_drop: true },
            hook: build(&stateful_kind, e, &stateful("drop")),
        },
        Named {
            name: "filter(stateful, accept)",
            role: Role::Filter { policy_drop: false },
            hook: build(&stateful_kind, e, &stateful("accept")),
        },
        Named {
            name: "policer",
            role: Role::Policer,
            hook: build(&policer::PolicerKind, HookPoint::Ingress, POLICER),
        },
    ]
}

fn context(b: &Burst, now_ns: u64) -> HookContext {
    HookContext {
        worker: b.worker,
        point: b.point,
        port: b.port,
        now_ns,
    }
}

/// The burst's verdicts, and its tally and mask agree with them.
fn check_burst(burst: &HookBurst<'_, '_>) -> Result<Vec<Verdict>, TestCaseError> {
    let v: Vec<Verdict> = (0..burst.len())
        .map(|i| burst.verdict(i).expect("in range"))
        .collect();
    let mut t = Tally::default();
    for (i, v) in v.iter().enumerate() {
        prop_assert_eq!(*v == Verdict::Accept, burst.is_accepted(i), "packet {}", i);
        match v {
            Verdict::Accept => t.accepted += 1,
            Verdict::Drop(_) => t.dropped += 1,
            Verdict::Stolen => t.stolen += 1,
        }
    }
    prop_assert_eq!(burst.tally(), t);
    prop_assert_eq!(burst.accepted().count(), t.accepted as usize);
    Ok(v)
}

/// The workers 0..=WORKERS of the hooks run alone: each its store and its
/// `HookWorker` of each hook (by name), kept from burst to burst.
#[derive(Default)]
struct Workers {
    stores: Vec<WorkerStore>,
    hooks: Vec<(usize, &'static str, Box<dyn HookWorker>)>,
}

impl Workers {
    /// `h` on worker `cx.worker` processes `burst`.
    fn process(&mut self, h: &Named, cx: &HookContext, burst: &mut HookBurst<'_, '_>) {
        let w = cx.worker;
        if self.stores.len() <= w {
            self.stores.resize_with(w + 1, WorkerStore::new);
        }
        let at = match self.hooks.iter().position(|p| (p.0, p.1) == (w, h.name)) {
            Some(i) => i,
            None => {
                let on_worker = h.hook.worker(w, &mut self.stores[w]);
                self.hooks.push((w, h.name, on_worker));
                self.hooks.len() - 1
            }
        };
        self.hooks[at].2.process(cx, &mut self.stores[w], burst);
    }
}

/// Run `h` alone over `pkts` (packets of `predropped` dropped first) and
/// check what it did.
fn run_alone(
    h: &Named,
    workers: &mut Workers,
    pkts: &[Pkt],
    predropped: u64,
    cx: &HookContext,
) -> Result<(), TestCaseError> {
    let mut after = pkts.to_vec();
    let mut views: Vec<HookPacket> = after
        .iter_mut()
        .map(|p| HookPacket::new(&mut p.data, &mut p.meta))
        .collect();
    let mut verdicts = vec![Verdict::Stolen; views.len()];
    let mut burst = HookBurst::new(&mut views, &mut verdicts);
    for i in 0..burst.len() {
        if predropped & (1 << i) != 0 {
            burst.set_verdict(i, Verdict::Drop(DropReason::HookDrop));
        }
    }
    let before = check_burst(&burst)?;
    workers.process(h, cx, &mut burst);
    let verdicts = check_burst(&burst)?;
    let _ = burst;
    drop(views);

    for (i, (p, q)) in pkts.iter().zip(&after).enumerate() {
        let (was, now) = (before[i], verdicts[i]);
        let ctx = || format!("{} packet {i}: {was:?} -> {now:?}, {p:?}", h.name);
        if was != Verdict::Accept {
            prop_assert_eq!(now, was, "verdict moved back: {}", ctx());
        }
        match now {
            Verdict::Drop(r) if was == Verdict::Accept => {
                prop_assert!(h.role.may_drop_with(r), "reason: {}", ctx())
            }
            Verdict::Stolen if was == Verdict::Accept => {
                prop_assert!(false, "a built-in hook stole: {}", ctx())
            }
            _ => {}
        }
        prop_assert_eq!(&p.data, &q.data, "frame bytes changed: {}", ctx());
        let mut m = q.meta;
        if h.role == Role::Classify {
            m.mark = p.meta.mark;
            m.class = p.meta.class;
        }
        prop_assert_eq!(p.meta, m, "metadata changed: {}", ctx());

        // Readable: as IPv4, or (an IPv6 frame) as IPv6, which the rules
        // judge too.
        let readable = FlowSummary::parse(p.l3()).is_some()
            || (p.meta.protocol == 0x86dd && hooks::FlowSummary6::parse(p.l3()).is_some());
        if was == Verdict::Accept && !readable {
            match h.role {
                // Never a bypass.
                Role::Filter { policy_drop: true } => prop_assert_eq!(
                    now,
                    Verdict::Drop(DropReason::FilterPolicy),
                    "unreadable packet not given the drop policy: {}",
                    ctx()
                ),
                Role::Filter { policy_drop: false } => {
                    prop_assert_eq!(now, Verdict::Accept, "{}", ctx())
                }
                Role::Classify | Role::Policer => {
                    prop_assert_eq!(now, Verdict::Accept, "{}", ctx());
                    prop_assert_eq!(p.meta, q.meta, "{}", ctx());
                }
                Role::Accept | Role::Thief => {}
            }
        }
        // Classify reads IPv4 and IPv6; it leaves every other protocol alone.
        if h.role == Role::Classify && !matches!(p.meta.protocol, 0x0800 | 0x86dd) {
            prop_assert_eq!(now, was, "classify acted on a non-IP packet: {}", ctx());
            prop_assert_eq!(p.meta, q.meta, "{}", ctx());
        }
        if h.role == Role::Accept {
            prop_assert_eq!(now, was, "{}", ctx());
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// A stealing hook, for the stolen counters of the chain.

/// What the thief's `HookWorker`s stole and were handed.
#[derive(Default)]
struct Thefts {
    stolen: AtomicUsize,
    taken: AtomicUsize,
}

/// Steals the accepted packets whose length is 3 modulo 7.
struct Thief(Arc<Thefts>);

/// The thief on a worker.
struct ThiefWorker(Arc<Thefts>);

impl Hook for Thief {
    fn worker(&self, _: usize, _: &mut WorkerStore) -> Box<dyn HookWorker> {
        Box::new(ThiefWorker(self.0.clone()))
    }
}

impl HookWorker for ThiefWorker {
    fn process(&mut self, _: &HookContext, _: &mut WorkerStore, burst: &mut HookBurst<'_, '_>) {
        let mut n = 0;
        burst.for_each_accepted(|_, p| {
            (p.data().len() % 7 == 3).then(|| {
                n += 1;
                Verdict::Stolen
            })
        });
        self.0.stolen.fetch_add(n, Ordering::Relaxed);
    }

    fn take(&mut self, _: &HookContext, packets: &mut dyn Iterator<Item = Box<dyn OwnedPacket>>) {
        for p in packets {
            let _ = (p.data().len(), p.meta().l3_offset);
            self.0.taken.fetch_add(1, Ordering::Relaxed);
        }
    }
}

struct Owned(Pkt);

impl OwnedPacket for Owned {
    fn data(&self) -> &[u8] {
        &self.0.data
    }
    fn data_mut(&mut self) -> &mut [u8] {
        &mut self.0.data
    }
    fn meta(&self) -> &PacketMeta {
        &self.0.meta
    }
}

// ---------------------------------------------------------------------------
// Properties

proptest! {
    #![proptest_config(config(48))]

    /// Every hook, alone, on arbitrary bursts: no panic, verdicts only move
    /// away from Accept, own drop reasons only, no bypass of a drop policy.
    #[test]
    fn arbitrary_bytes_never_panic_any_hook((start, bursts) in bursts()) {
        let hooks = all_hooks();
        let mut workers = Workers::default();
        let mut now = start;
        for b in &bursts {
            now = now.saturating_add(b.dt_ns);
            let cx = context(b, now);
            for h in &hooks {
                run_alone(h, &mut workers, &b.pkts, b.predropped, &cx)?;
            }
        }
        // The hooks' own counters can be read after all that.
        for h in &hooks {
            let _ = h.hook.stats();
        }
    }

    /// Every hook in one chain, in an arbitrary priority order, with a
    /// stealing hook among them: the counters add up.
    #[test]
    fn chain_counters_add_up(
        (start, bursts) in bursts(),
        priorities in vec(-3i32..3, 8),
    ) {
        let thief = Arc::new(Thefts::default());
        let mut roles = Vec::new();
        let mut entries = Vec::new();
        let mut hooks = all_hooks();
        hooks.push(Named { name: "thief", role: Role::Thief, hook: Arc::new(Thief(thief.clone())) });
        for (h, prio) in hooks.into_iter().zip(priorities) {
            roles.push((h.name, h.role));
            entries.push(ChainEntry {
                name: h.name.into(),
                kind: h.name.into(),
                priority: prio,
                hook: h.hook,
                counters: Arc::new(HookCounters::new(WORKERS)),
            });
        }
        let chain = Chain::new(entries);
        let mut workers: Vec<WorkerHooks> = (0..=WORKERS).map(WorkerHooks::new).collect();
        let mut now = start;
        let (mut in_total, mut out) = (0u64, Tally::default());
        let mut handed = 0;
        for b in &bursts {
            now = now.saturating_add(b.dt_ns);
            let cx = context(b, now);
            let mut pkts = b.pkts.clone();
            let mut views: Vec<HookPacket> = pkts
                .iter_mut()
                .map(|p| HookPacket::new(&mut p.data, &mut p.meta))
                .collect();
            let mut verdicts = vec![Verdict::Accept; views.len()];
            let mut burst = HookBurst::new(&mut views, &mut verdicts);
            for i in 0..burst.len() {
                if b.predropped & (1 << i) != 0 {
                    burst.set_verdict(i, Verdict::Drop(DropReason::HookDrop));
                }
            }
            let start_tally = burst.tally();
            let log = chain.run(&cx, &mut workers[cx.worker], &mut burst);
            let end_tally = burst.tally();
            let v = check_burst(&burst)?;
            let _ = burst;
            drop(views);
            // Stolen packets are those the log names, owned by the thief.
            let stolen: Vec<usize> = (0..v.len()).filter(|&i| v[i] == Verdict::Stolen).collect();
            prop_assert_eq!(log.mask.count_ones() as usize, stolen.len());
            for &i in &stolen {
                prop_assert!(log.mask & (1 << i) != 0);
                prop_assert_eq!(chain.entries()[usize::from(log.owner[i])].name.as_str(), "thief");
            }
            chain.hand_over_stolen(&cx, &mut workers[cx.worker], &log, |i| {
                handed += 1;
                Some(Box::new(Owned(pkts[i].clone())) as Box<dyn OwnedPacket>)
            });
            in_total += u64::from(start_tally.accepted);
            out.accepted += end_tally.accepted;
            out.dropped += end_tally.dropped - start_tally.dropped;
            out.stolen += end_tally.stolen;
        }
        prop_assert_eq!(thief.taken.load(Ordering::Relaxed), handed);
        prop_assert_eq!(thief.taken.load(Ordering::Relaxed), thief.stolen.load(Ordering::Relaxed));

        // Per hook: seen = accepted + dropped + stolen; the first sees what
        // entered, each next one what the one before accepted.
        let stats: Vec<_> = chain.entries().iter().map(|e| e.counters.read()).collect();
        let mut expect_seen = in_total;
        let (mut dropped, mut stolen) = (0, 0);
        for (e, s) in chain.entries().iter().zip(&stats) {
            prop_assert_eq!(s.seen, s.accepted + s.dropped + s.stolen, "{}: {:?}", e.name, s);
            prop_assert_eq!(s.seen, expect_seen, "{}: {:?}", e.name, s);
            let role = roles.iter().find(|(n, _)| *n == e.name).map(|r| r.1);
            if role != Some(Role::Thief) {
                prop_assert_eq!(s.stolen, 0, "{}", e.name);
            }
            if role == Some(Role::Accept) {
                prop_assert_eq!(s.accepted, s.seen);
            }
            expect_seen = s.accepted;
            dropped += s.dropped;
            stolen += s.stolen;
        }
        prop_assert_eq!(expect_seen, u64::from(out.accepted));
        prop_assert_eq!(dropped, u64::from(out.dropped));
        prop_assert_eq!(stolen, u64::from(out.stolen));
    }

    /// FlowSummary::parse on arbitrary L3 bytes: total, and consistent with
    /// the IPv4 view and the match key.
    #[test]
    fn flow_summary_parse_is_total(p in pkt(), ct in any::<u8>()) {
        check_flow(p.l3(), &p.meta, ct)?;
        check_flow(&p.data, &p.meta, ct)?;
    }

    /// Every wire view and accessor on arbitrary bytes, at every offset a
    /// frame has a header at.
    #[test]
    fn wire_views_never_panic(
        p in pkt(),
        emit_len in 0usize..120,
        (ty, code) in any::<(u8, u8)>(),
    ) {
        for at in [0, 12, 14, 16, 18, usize::from(p.meta.l3_offset)] {
            let b = p.data.get(at..).unwrap_or_default();
            check_views(b, emit_len, ty, code)?;
        }
    }

    /// Connection table lookups and commits on arbitrary packets (and
    /// flows answering them), and on summaries that do not match the bytes:
    /// no panic, never above capacity.
    #[test]
    fn conntrack_never_panics(
        capacity in prop_oneof![1usize..=4, 16usize..=32],
        (start, bursts) in bursts(),
        ops in vec((any_summary(), prop::bool::weighted(0.1), 0u8..8), MAX_BURST),
    ) {
        let mut t = ConnTable::new(CtConfig { capacity, ..CtConfig::default() });
        prop_assert_eq!(t.capacity(), capacity);
        let mut now = start;
        let mut last = t.stats();
        for b in &bursts {
            now = now.saturating_add(b.dt_ns);
            for (p, (arbitrary, use_arbitrary, op)) in b.pkts.iter().zip(ops.iter().cycle()) {
                let l3 = p.l3();
                let s = if *use_arbitrary { Some(*arbitrary) } else { FlowSummary::parse(l3) };
                let Some(s) = s else { continue };
                let state = t.lookup(&s, l3, now);
                if *op > 0 && state == CtState::New {
                    t.commit(&s, l3, now);
                }
                if *op == 7 {
                    t.sweep(now, 16);
                }
                prop_assert!(t.len() <= t.capacity(), "{} > {}", t.len(), t.capacity());
                prop_assert!(t.count_live(now) <= t.len());
                let st = t.stats();
                prop_assert!(st.inserted >= last.inserted && st.full >= last.full);
                prop_assert!(st.ignored >= last.ignored && st.reset >= last.reset);
                last = st;
            }
        }
    }
}

fn any_summary() -> impl Strategy<Value = FlowSummary> {
    (
        (
            addr(),
            addr(),
            prop_oneof![3 => select(vec![1u8, 6, 17]), 1 => any::<u8>()],
        ),
        any::<u8>(),
        (
            select(vec![Fragment::None, Fragment::First, Fragment::NonFirst]),
            any::<bool>(),
        ),
        any::<bool>(),
        (port(), port(), tcp_flags()),
        any::<(u8, u8)>(),
        prop_oneof![3 => Just(20u16), 1 => any::<u16>()],
    )
        .prop_map(
            |((src, dst, proto), dscp, (fragment, frag_offset_one), l4, ports, (it, ic), off)| {
                let (sport, dport, tcp_flags) = ports;
                FlowSummary {
                    src,
                    dst,
                    proto,
                    dscp,
                    fragment,
                    frag_offset_one,
                    l4,
                    sport,
                    dport,
                    tcp_flags,
                    icmp_type: it,
                    icmp_code: ic,
                    l4_offset: off,
                }
            },
        )
}

fn check_flow(l3: &[u8], meta: &PacketMeta, ct: u8) -> Result<(), TestCaseError> {
    let parsed = FlowSummary::parse(l3);
    let view = Ipv4Packet::new_checked(l3)
        .ok()
        .filter(|ip| ip.version() == 4);
    prop_assert_eq!(parsed.is_some(), view.is_some(), "{:02x?}", l3);
    let (Some(s), Some(ip)) = (parsed, view) else {
        return Ok(());
    };
    prop_assert_eq!(s.src, u32::from(ip.src_addr()));
    prop_assert_eq!(s.dst, u32::from(ip.dst_addr()));
    prop_assert_eq!(s.proto, ip.protocol());
    prop_assert_eq!(s.dscp, ip.dscp());
    prop_assert!(s.dscp < 64);
    prop_assert_eq!(usize::from(s.l4_offset), ip.header_len());
    prop_assert!((20..=60).contains(&s.l4_offset) && usize::from(s.l4_offset) <= l3.len());
    prop_assert_eq!(s.frag_offset_one, ip.frag_offset() == 8);
    match s.fragment {
        Fragment::NonFirst => {
            prop_assert!(ip.frag_offset() > 0);
            prop_assert!(!s.l4 && !s.has_ports(), "{:?}", s);
            prop_assert_eq!((s.sport, s.dport, s.tcp_flags), (0, 0, 0));
        }
        Fragment::First => prop_assert!(ip.more_frags() && ip.frag_offset() == 0),
        Fragment::None => prop_assert!(!ip.more_frags() && ip.frag_offset() == 0),
    }
    if s.l4 {
        prop_assert!(matches!(s.proto, proto::TCP | proto::UDP | proto::ICMP));
        let need = match s.proto {
            proto::TCP => 20,
            _ => 8,
        };
        prop_assert!(ip.payload().len() >= need, "{:?} {:02x?}", s, l3);
    } else {
        prop_assert_eq!((s.sport, s.dport, s.tcp_flags), (0, 0, 0));
        prop_assert_eq!((s.icmp_type, s.icmp_code), (0, 0));
    }
    if s.has_ports() {
        prop_assert!(matches!(s.proto, proto::TCP | proto::UDP));
    }
    let k = Key::new(&s, meta, ct);
    prop_assert_eq!(
        (k.proto(), k.tcp_flags(), k.dscp()),
        (s.proto, s.tcp_flags, s.dscp)
    );
    prop_assert_eq!((k.src(), k.dst()), (s.src, s.dst));
    prop_assert_eq!((k.sport(), k.dport()), (s.sport, s.dport));
    prop_assert_eq!((k.in_port(), k.out_port()), (meta.in_port, meta.out_port));
    prop_assert_eq!(
        (k.vlan(), k.class(), k.mark()),
        (meta.vlan, meta.class, meta.mark)
    );
    prop_assert_eq!(k.l4(), s.has_ports());
    prop_assert_eq!(k.ct(), ct & hooks::rules::CT_ALL);
    prop_assert_eq!(Key::from_bytes(*k.as_bytes()), k);
    Ok(())
}

fn check_views(b: &[u8], emit_len: usize, ty: u8, code: u8) -> Result<(), TestCaseError> {
    // Ethernet.
    if let Ok(e) = EthernetFrame::new_checked(b) {
        let _ = (e.dst_addr(), e.src_addr(), e.ethertype());
        prop_assert_eq!(e.payload().len(), b.len() - 14);
        let mut c = b.to_vec();
        let mut e = EthernetFrame::new_checked(&mut c[..]).expect("same length");
        e.set_dst_addr([1; 6]);
        e.set_src_addr([2; 6]);
        e.set_ethertype(0x0800);
        let _ = e.payload_mut();
        prop_assert_eq!(e.ethertype(), 0x0800);
    } else {
        prop_assert!(b.len() < 14);
    }
    let _ = hooks::wire::ethernet::is_multicast(&[b.first().copied().unwrap_or(0); 6]);

    // VLAN tag.
    if let Ok(v) = VlanTag::new_checked(b) {
        let _ = (v.pcp(), v.dei(), v.vid(), v.ethertype());
        prop_assert!(v.vid() <= 0x0fff && v.pcp() < 8);
        let mut c = b.to_vec();
        let mut v = VlanTag::new_checked(&mut c[..]).expect("same length");
        v.set_tci(7, true, 0xffff);
        v.set_ethertype(0x0806);
        prop_assert_eq!((v.pcp(), v.dei(), v.ethertype()), (7, true, 0x0806));
    }

    // ARP.
    if let Ok(a) = ArpPacket::new_checked(b) {
        let _ = (
            a.hardware_type(),
            a.protocol_type(),
            a.hardware_len(),
            a.protocol_len(),
            a.operation(),
            a.sender_hardware_addr(),
            a.sender_protocol_addr(),
            a.target_hardware_addr(),
            a.target_protocol_addr(),
            a.is_ethernet_ipv4(),
        );
        if let Some(r) = ArpRepr::parse(&a) {
            let _ = r.is_gratuitous();
            let mut c = vec![0u8; b.len()];
            let mut out = ArpPacket::new_checked(&mut c[..]).expect("same length");
            r.emit(&mut out);
            let again = ArpRepr::parse(&ArpPacket::new_checked(&c[..]).expect("same length"));
            prop_assert_eq!(again, Some(r));
        }
    }

    // IPv4, accessors, setters and checksums.
    if let Ok(ip) = Ipv4Packet::new_checked(b) {
        let _ = (
            ip.version(),
            ip.ihl(),
            ip.ecn(),
            ip.total_len(),
            ip.ident(),
            ip.dont_frag(),
            ip.ttl(),
            ip.checksum(),
            ip.options(),
            ip.verify_checksum(),
        );
        prop_assert_eq!(ip.header_bytes().len(), ip.header_len());
        prop_assert!(ip.payload().len() <= b.len() - ip.header_len());
        let mut c = b.to_vec();
        let mut w = Ipv4Packet::new_checked(&mut c[..]).expect("same bytes");
        let had_ttl = w.ttl();
        w.fill_checksum();
        prop_assert!(w.verify_checksum(), "fill then verify: {:02x?}", b);
        if let Some(t) = w.decrement_ttl() {
            prop_assert_eq!(t + 1, had_ttl);
            prop_assert!(
                w.verify_checksum(),
                "decrement_ttl broke the checksum: {:02x?}",
                b
            );
        } else {
            prop_assert_eq!(had_ttl, 0);
        }
        w.set_dscp_ecn(63, 3);
        w.set_total_len(u16::MAX);
        w.set_ident(1);
        w.set_flags_frag(true, true, 0xffff);
        w.set_protocol(255);
        w.set_src_addr(Ipv4Addr::BROADCAST);
        w.set_dst_addr(Ipv4Addr::UNSPECIFIED);
        let _ = w.options_mut();
        w.set_version_ihl(4, 15);
        let _ = (
            w.header_bytes(),
            w.options(),
            w.payload(),
            w.verify_checksum(),
        );
        let _ = FlowSummary::parse(&c);

        // An ICMP error about it, into a buffer of any size.
        let len = icmp::error_message_len(b);
        let mut buf = vec![0u8; emit_len];
        match icmp::emit_error(&mut buf, ty, code, b) {
            Some(n) => {
                prop_assert_eq!(n, len);
                let m = IcmpPacket::new_checked(&buf[..n]).expect("a header");
                prop_assert!(m.verify_checksum());
                prop_assert_eq!((m.msg_type(), m.code()), (ty, code));
            }
            None => prop_assert!(len == 0 || emit_len < len, "len {} buf {}", len, emit_len),
        }
    } else {
        prop_assert_eq!(icmp::error_message_len(b), 0);
    }

    // ICMP.
    if let Ok(m) = IcmpPacket::new_checked(b) {
        let _ = (m.msg_type(), m.code(), m.checksum(), m.ident(), m.seq_no());
        prop_assert_eq!(m.data().len(), b.len() - 8);
        let valid = m.verify_checksum();
        let mut c = b.to_vec();
        let mut w = IcmpPacket::new_checked(&mut c[..]).expect("same bytes");
        let request = w.msg_type() == icmp::kind::ECHO_REQUEST;
        prop_assert_eq!(w.echo_to_reply(), request);
        if request && valid {
            prop_assert!(
                w.verify_checksum(),
                "echo_to_reply broke the checksum: {:02x?}",
                b
            );
        }
        w.set_msg_type(ty);
        w.set_code(code);
        w.set_ident(7);
        w.set_seq_no(8);
        let _ = w.data_mut();
        w.fill_checksum();
        prop_assert!(w.verify_checksum());
    } else {
        prop_assert!(b.len() < 8);
    }

    // Checksums over any length.
    let s = checksum::sum(b);
    prop_assert_eq!(checksum::checksum(b), !s);
    if let Some(h) = b.first_chunk::<20>() {
        let _ = (checksum::sum20(h), checksum::verify20(h));
        prop_assert_eq!(checksum::sum20(h), checksum::sum(&h[..]));
        prop_assert_eq!(checksum::verify20(h), checksum::sum(&h[..]) == 0xffff);
    }
    Ok(())
}
