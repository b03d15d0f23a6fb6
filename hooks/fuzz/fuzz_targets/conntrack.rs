//! The connection table's state machine on arbitrary packet sequences.
//!
//! # Input
//!
//! A few flows between a few hosts, both directions: TCP with arbitrary
//! flags, sequence numbers (near the flow's own, or anywhere), ACKs,
//! windows, window scale options and payload lengths, with UDP and ICMP echo
//! mixed in, each flow in IPv4 or in IPv6 (the same L4 bytes after an IPv6
//! header, ICMP echo as ICMPv6 echo); time advancing by arbitrary steps;
//! the filter's ways of calling the table (one packet, bursts with hints,
//! sweeps).
//!
//! # Checked after every step
//!
//! * no panic;
//! * the table's invariants hold (`ConnTable::audit`: entries where lookups
//!   find them, at most `capacity`, none live past its longest timeout);
//! * a flow just seen `Established` is found from the other direction too;
//! * a flow no packet touched for longer than the longest timeout is `New`.
#![no_main]

use arbitrary::Arbitrary;
use hooks::conntrack::{ConnTable, CtConfig, CtHint, CtHint6, CtState};
use hooks::testkit;
use hooks::{FlowSummary, FlowSummary6};
use libfuzzer_sys::fuzz_target;

const S: u64 = 1_000_000_000;
const HOSTS: [u32; 3] = [0x0a00_0001, 0x0a00_0002, 0xc633_6407];
/// Flows (host pair and ports) the packets belong to.
const FLOWS: usize = 6;

#[derive(Arbitrary, Debug)]
struct Step {
    flow: u8,
    /// Bit 0: from the flow's second host; bits 1-2: TCP, TCP, UDP, ICMP;
    /// bit 3: IPv6.
    kind: u8,
    flags: u8,
    /// `seq`/`ack` offsets from the flow's last ones, or (`wild`) as is.
    seq: i32,
    ack: i32,
    wild: bool,
    win: u16,
    wscale: Option<u8>,
    payload: u8,
    /// Time step: bits 0-1 pick a scale (ms, s, 10 s, 100 s).
    dt: u16,
    /// Bit 0: the filter accepts (commits a `New`); bit 1: by burst;
    /// bit 2: sweep.
    how: u8,
}

struct World {
    t: ConnTable,
    now: u64,
    /// Per flow (IPv4 ones, then IPv6 ones) and direction, the next
    /// sequence number it would send.
    next: [[u32; 2]; 2 * FLOWS],
    /// Per flow, the last time a packet of it found or made an entry.
    touched: [Option<u64>; 2 * FLOWS],
}

/// A short-lived table, so that entries come, go and crowd.
fn config() -> CtConfig {
    CtConfig {
        capacity: 8,
        tcp_syn_sent_ns: 2 * S,
        tcp_syn_recv_ns: S,
        tcp_established_ns: 20 * S,
        tcp_fin_wait_ns: 2 * S,
        tcp_time_wait_ns: 2 * S,
        udp_ns: S,
        udp_replied_ns: 3 * S,
        icmp_ns: S,
        other_ns: 5 * S,
    }
}

const LONGEST: u64 = 20 * S;

/// The packet of `step` (IPv4 or IPv6), and the flow's index.
fn packet(w: &mut World, st: &Step) -> (Vec<u8>, usize) {
    let (pkt, f) = packet4(w, st);
    if st.kind & 8 == 0 {
        return (pkt, f);
    }
    (to_ipv6(&pkt), FLOWS + f)
}

/// An IPv4 datagram's L4 bytes after an IPv6 header, the hosts mapped to
/// IPv6 addresses (their IPv4 address in the last four bytes), ICMP echo
/// made ICMPv6 echo (its checksum is not checked).
fn to_ipv6(v4: &[u8]) -> Vec<u8> {
    let ihl = usize::from(v4[0] & 0xf) * 4;
    let mut l4 = v4[ihl..].to_vec();
    let mut nh = v4[9];
    if nh == 1 {
        nh = 58;
        l4[0] = if l4[0] == 8 { 128 } else { 129 };
    }
    let addr = |a: &[u8]| {
        let mut x = [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
        x[12..].copy_from_slice(a);
        x
    };
    let mut p = vec![0x60, 0, 0, 0];
    p.extend((l4.len() as u16).to_be_bytes());
    p.extend([nh, 64]);
    p.extend(addr(&v4[12..16]));
    p.extend(addr(&v4[16..20]));
    p.extend(l4);
    p
}

/// The IPv4 packet of `step`, and the flow's index.
fn packet4(w: &mut World, st: &Step) -> (Vec<u8>, usize) {
    let f = usize::from(st.flow) % FLOWS;
    let nf = f + if st.kind & 8 != 0 { FLOWS } else { 0 };
    let (a, b) = (HOSTS[f % 3], HOSTS[(f / 3 + f + 1) % 3]);
    let d = usize::from(st.kind & 1);
    let (src, dst) = if d == 0 { (a, b) } else { (b, a) };
    let (sp, dp) = if d == 0 {
        (40000 + f as u16, 443)
    } else {
        (443, 40000 + f as u16)
    };
    let pkt = match st.kind >> 1 & 3 {
        0 | 1 => {
            let seq = match st.wild {
                true => st.seq as u32,
                false => w.next[nf][d].wrapping_add(st.seq as u32),
            };
            let ack = match st.wild {
                true => st.ack as u32,
                false => w.next[nf][1 - d].wrapping_add(st.ack as u32),
            };
            let opts: &[u8] = match st.wscale {
                Some(s) => &[1, 3, 3, s],
                None => &[],
            };
            let payload = vec![0u8; usize::from(st.payload % 64)];
            let len = u32::from(st.payload % 64) + u32::from(st.flags & 3 != 0);
            w.next[nf][d] = seq.wrapping_add(len);
            testkit::tcp(src, dst, sp, dp, st.flags)
                .ident(1)
                .seq(seq)
                .ack(ack)
                .window(st.win)
                .tcp_options(opts)
                .payload(&payload)
                .build_ipv4()
        }
        2 => testkit::udp(src, dst, sp, dp).ident(1).build_ipv4(),
        _ => {
            let ty = if d == 0 { 8 } else { 0 };
            testkit::icmp_echo(src, dst, ty, f as u16, 1)
                .ident(1)
                .build_ipv4()
        }
    };
    (pkt, f)
}

/// A packet as the table reads it.
#[derive(Clone, Copy, Debug)]
enum Sum {
    V4(FlowSummary),
    V6(FlowSummary6),
}

impl Sum {
    fn parse(pkt: &[u8]) -> Option<Sum> {
        match pkt.first()? >> 4 {
            6 => FlowSummary6::parse(pkt).map(Sum::V6),
            _ => FlowSummary::parse(pkt).map(Sum::V4),
        }
    }

    fn tcp_flags(&self) -> u8 {
        match self {
            Sum::V4(s) => s.tcp_flags,
            Sum::V6(s) => s.tcp_flags,
        }
    }

    fn is_icmp(&self) -> bool {
        match self {
            Sum::V4(s) => s.proto == 1,
            Sum::V6(s) => s.proto == 58,
        }
    }
}

/// The filter's path for one packet of either family.
fn meet(w: &mut World, st: &Step, pkt: &[u8], s: &Sum) -> CtState {
    match s {
        Sum::V4(s) => meet4(w, st, pkt, s),
        Sum::V6(s) => meet6(w, st, pkt, s),
    }
}

/// The filter's path for one IPv6 packet, as `meet4`'s.
fn meet6(w: &mut World, st: &Step, pkt: &[u8], s: &FlowSummary6) -> CtState {
    let (state, hint) = match st.how & 2 {
        0 => (w.t.lookup6(s, pkt, w.now), CtHint6::NONE),
        _ => {
            let mut out = [(CtState::Untracked, CtHint6::NONE)];
            w.t.lookup_burst6(&[*s], |_| pkt, w.now, &mut out);
            out[0]
        }
    };
    if state == CtState::New && st.how & 1 != 0 {
        w.t.commit_hinted6(s, pkt, w.now, hint);
    }
    state
}

/// The filter's path for one packet: look up (alone or as a burst of one
/// with its hint), commit an accepted `New`.
fn meet4(w: &mut World, st: &Step, pkt: &[u8], s: &FlowSummary) -> CtState {
    let (state, hint) = match st.how & 2 {
        0 => (w.t.lookup(s, pkt, w.now), CtHint::NONE),
        _ => {
            let mut out = [(CtState::Untracked, CtHint::NONE)];
            w.t.lookup_burst(&[*s], |_| pkt, w.now, &mut out);
            out[0]
        }
    };
    if state == CtState::New && st.how & 1 != 0 {
        w.t.commit_hinted(s, pkt, w.now, hint);
    }
    state
}

fn step(w: &mut World, st: &Step) {
    let scale = [1_000_000, S, 10 * S, 100 * S][usize::from(st.dt & 3)];
    w.now = w.now.saturating_add(u64::from(st.dt >> 2) % 64 * scale / 8);
    let (pkt, f) = packet(w, st);
    let Some(s) = Sum::parse(&pkt) else {
        return;
    };
    let before = w.t.stats();
    let stale = w.touched[f].is_some_and(|t| w.now - t >= LONGEST);
    let state = meet(w, st, &pkt, &s);
    if stale || w.touched[f].is_none() {
        // Nothing of this flow can be live: its last packet is too long ago.
        assert!(
            matches!(state, CtState::New | CtState::Untracked),
            "{state:?} after {} s idle: {s:?}",
            w.touched[f].map_or(0, |t| (w.now - t) / S)
        );
    }
    if st.how & 4 != 0 {
        w.t.sweep(w.now, 16);
    }
    let after = w.t.stats();
    // Any packet may have made or refreshed the flow's entry.
    w.touched[f] = Some(w.now);
    if let Err(e) = w.t.audit(w.now) {
        panic!("{e} after {s:?}");
    }
    if state == CtState::Established && s.tcp_flags() & 4 == 0 {
        // The other direction finds the entry too.
        let mut back = pkt.clone();
        let v6 = matches!(s, Sum::V6(_));
        let (addrs, at) = if v6 { (8..40, 40) } else { (12..20, 20) };
        let half = addrs.len() / 2;
        back[addrs].rotate_left(half);
        let (sp, dp) = (back[at..at + 2].to_vec(), back[at + 2..at + 4].to_vec());
        if !s.is_icmp() {
            back[at..at + 2].copy_from_slice(&dp);
            back[at + 2..at + 4].copy_from_slice(&sp);
        } else {
            back[at] = match back[at] {
                8 => 0,
                0 => 8,
                128 => 129,
                _ => 128,
            };
        }
        let r = Sum::parse(&back).expect("reversed packet parses");
        let mut t = w.t.clone();
        let seen = match r {
            Sum::V4(r) => t.lookup(&r, &back, w.now),
            Sum::V6(r) => t.lookup6(&r, &back, w.now),
        };
        assert_ne!(seen, CtState::New, "{s:?} established, {r:?} new");
    }
    let mono = |a: u64, b: u64| a >= b;
    assert!(mono(after.inserted, before.inserted) && mono(after.reset, before.reset));
    assert!(mono(after.early_drop, before.early_drop) && mono(after.full, before.full));
}

fuzz_target!(|steps: Vec<Step>| {
    let mut w = World {
        t: ConnTable::new(config()),
        now: S,
        next: [[0; 2]; 2 * FLOWS],
        touched: [None; 2 * FLOWS],
    };
    for st in steps.iter().take(512) {
        step(&mut w, st);
    }
});
