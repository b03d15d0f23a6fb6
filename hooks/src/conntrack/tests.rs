//! Packet-level tests of the connection table: IPv4 datagrams (TCP, UDP or
//! ICMP) built with [`crate::testkit`], parsed with [`FlowSummary::parse`]
//! as the filter does.

use super::*;
use crate::flow::tcp_flag::{ACK, FIN, PSH, RST, SYN};
use crate::flow6::FlowSummary6;
use crate::testkit;

const CLIENT: u32 = 0x0a00_0001; // 10.0.0.1, inside
const SERVER: u32 = 0xc633_6407; // 198.51.100.7, outside
const ROUTER: u32 = 0xcb00_7101; // 203.0.113.1
const S: u64 = 1_000_000_000;

// The packets are IPv4 datagrams from `crate::testkit`; these name them
// the way the tests read, source before destination, each with its port.

/// An IPv4 datagram of `proto` carrying `l4` as given, not a fragment.
fn ip(proto: u8, src: u32, dst: u32, l4: &[u8]) -> Vec<u8> {
    testkit::ipv4(src, dst, proto, l4).ident(1).build_ipv4()
}

/// A TCP segment with sequence number, ACK and window 0, no payload.
fn tcp(src: u32, sport: u16, dst: u32, dport: u16, flags: u8) -> Vec<u8> {
    tcp_seg(src, sport, dst, dport, flags, [0, 0, 0])
}

/// A TCP segment with `[seq, ack, window]`, no payload.
fn tcp_seg(src: u32, sport: u16, dst: u32, dport: u16, flags: u8, n: [u32; 3]) -> Vec<u8> {
    let [seq, ack, window] = n;
    testkit::tcp(src, dst, sport, dport, flags)
        .ident(1)
        .seq(seq)
        .ack(ack)
        .window(window as u16)
        .build_ipv4()
}

/// A UDP datagram with 4 bytes of data.
fn udp_datagram(src: u32, sport: u16, dst: u32, dport: u16) -> testkit::Frame {
    testkit::udp(src, dst, sport, dport)
        .ident(1)
        .payload(&[0; 4])
}

fn udp(src: u32, sport: u16, dst: u32, dport: u16) -> Vec<u8> {
    udp_datagram(src, sport, dst, dport).build_ipv4()
}

fn echo(src: u32, dst: u32, icmp_type: u8, id: u16) -> Vec<u8> {
    testkit::icmp_echo(src, dst, icmp_type, id, 1)
        .ident(1)
        .build_ipv4()
}

/// An ICMP error from `src` to `dst` quoting the first `quote` bytes of
/// `orig` (its IPv4 header and what follows).
fn icmp_error(src: u32, dst: u32, icmp_type: u8, code: u8, orig: &[u8], quote: usize) -> Vec<u8> {
    let quoted = &orig[..quote.min(orig.len())];
    testkit::icmp_error(src, dst, icmp_type, code, quoted)
        .ident(1)
        .build_ipv4()
}

fn table(capacity: usize) -> ConnTable {
    ConnTable::new(CtConfig {
        capacity,
        ..CtConfig::default()
    })
}

fn look(t: &mut ConnTable, pkt: &[u8], now: u64) -> CtState {
    let s = FlowSummary::parse(pkt).expect("test packet parses");
    let state = t.lookup(&s, pkt, now);
    t.v4.slots.check();
    state
}

fn commit(t: &mut ConnTable, pkt: &[u8], now: u64) -> bool {
    let s = FlowSummary::parse(pkt).expect("test packet parses");
    let ok = t.commit(&s, pkt, now);
    t.v4.slots.check();
    ok
}

/// Look up, and commit when `New` (what an accepting filter does).
fn pass(t: &mut ConnTable, pkt: &[u8], now: u64) -> CtState {
    let state = look(t, pkt, now);
    if state == CtState::New {
        commit(t, pkt, now);
    }
    state
}

use CtState::{Established, Invalid, New, Related, Untracked};

#[test]
fn defaults() {
    let c = CtConfig::default();
    assert_eq!(c.capacity, 65536);
    assert_eq!(
        (c.tcp_syn_sent_ns, c.tcp_syn_recv_ns, c.tcp_established_ns),
        (120 * S, 60 * S, 3600 * S)
    );
    assert_eq!((c.tcp_fin_wait_ns, c.tcp_time_wait_ns), (120 * S, 120 * S));
    assert_eq!(
        (c.udp_ns, c.udp_replied_ns, c.icmp_ns),
        (30 * S, 180 * S, 30 * S)
    );
    let t = ConnTable::new(c);
    assert_eq!((t.capacity(), t.slot_count(), t.len()), (65536, 131072, 0));
    assert!(t.is_empty());
    let t = table(100_000);
    assert_eq!(t.slot_count(), 262_144);
    assert_eq!(table(0).capacity(), 1);
}

#[test]
fn tcp_handshake_data_fin_teardown_and_expiry() {
    let mut t = table(1024);
    let out = |f| tcp(CLIENT, 40000, SERVER, 443, f);
    let back = |f| tcp(SERVER, 443, CLIENT, 40000, f);
    // SYN: New, the filter accepts it and commits.
    assert_eq!(look(&mut t, &out(SYN), 0), New);
    assert!(commit(&mut t, &out(SYN), 0));
    assert_eq!(t.len(), 1);
    // A retransmitted SYN before the reply is still New; its commit
    // refreshes the entry.
    assert_eq!(look(&mut t, &out(SYN), S), New);
    assert!(commit(&mut t, &out(SYN), S));
    assert_eq!(t.len(), 1);
    // SYN/ACK back: Established, then both ways.
    assert_eq!(look(&mut t, &back(SYN | ACK), 2 * S), Established);
    assert_eq!(look(&mut t, &out(ACK), 2 * S), Established);
    assert_eq!(look(&mut t, &out(PSH | ACK), 3 * S), Established);
    assert_eq!(look(&mut t, &back(PSH | ACK), 3 * S), Established);
    // Established timeout: still there after the transient one.
    assert_eq!(look(&mut t, &back(ACK), 1000 * S), Established);
    // FIN one way: the FIN_WAIT timeout (120 s), from each packet.
    let t0 = 2000 * S;
    assert_eq!(look(&mut t, &out(FIN | ACK), t0), Established);
    assert_eq!(look(&mut t, &back(ACK), t0 + 100 * S), Established);
    // FIN the other way: the TIME_WAIT timeout from the last packet.
    let t1 = t0 + 200 * S;
    assert_eq!(look(&mut t, &back(FIN | ACK), t1), Established);
    assert_eq!(look(&mut t, &out(ACK), t1), Established);
    assert_eq!(look(&mut t, &back(ACK), t1 + 120 * S - 1), Established);
    let t2 = t1 + 240 * S - 1;
    assert_eq!(look(&mut t, &back(ACK), t2 + 1), New);
    assert_eq!(t.len(), 0);
    assert_eq!(t.stats().expired, 1);
    assert_eq!(t.stats().inserted, 1);
}

#[test]
fn unreplied_syn_expires_after_the_transient_timeout() {
    let mut t = table(16);
    let syn = tcp(CLIENT, 40001, SERVER, 22, SYN);
    assert_eq!(pass(&mut t, &syn, 0), New);
    let synack = tcp(SERVER, 22, CLIENT, 40001, SYN | ACK);
    assert_eq!(look(&mut t, &synack, 120 * S), New);
    assert_eq!(t.stats().expired, 1);
}

#[test]
fn rst_removes_the_entry() {
    let mut t = table(16);
    let syn = tcp(CLIENT, 40002, SERVER, 80, SYN);
    assert_eq!(pass(&mut t, &syn, 0), New);
    assert_eq!(
        look(&mut t, &tcp(SERVER, 80, CLIENT, 40002, SYN | ACK), 1),
        Established
    );
    // The RST belongs to the connection, and ends it.
    assert_eq!(
        look(&mut t, &tcp(SERVER, 80, CLIENT, 40002, RST), 2),
        Established
    );
    assert_eq!((t.len(), t.stats().reset), (0, 1));
    assert_eq!(look(&mut t, &tcp(SERVER, 80, CLIENT, 40002, ACK), 3), New);

    // A RST answering a SYN (port closed; it acknowledges the SYN, whose
    // sequence number was 0) is the reply: Established, gone.
    assert_eq!(pass(&mut t, &syn, 10), New);
    let rst = tcp_seg(SERVER, 80, CLIENT, 40002, RST | ACK, [0, 1, 0]);
    assert_eq!(look(&mut t, &rst, 11), Established);
    assert_eq!(look(&mut t, &rst, 12), New);
    // A RST is never committed.
    assert!(!commit(&mut t, &rst, 12));
    assert_eq!((t.len(), t.stats().reset, t.stats().full), (0, 2, 0));
}

#[test]
fn tcp_pickup_is_strict() {
    let mut t = table(16);
    // Mid-stream packets with no entry: New, and not committed.
    for f in [ACK, PSH | ACK, SYN | ACK, FIN | ACK, SYN | FIN, SYN | RST] {
        let p = tcp(CLIENT, 40003, SERVER, 443, f);
        assert_eq!(look(&mut t, &p, 0), New);
        assert!(!commit(&mut t, &p, 0));
    }
    assert_eq!(t.len(), 0);
    assert_eq!(t.stats().ignored, 6);
    assert_eq!(t.stats().full, 0);
    // An ACK from the originator before any reply stays New.
    assert_eq!(pass(&mut t, &tcp(CLIENT, 40003, SERVER, 443, SYN), 0), New);
    assert_eq!(look(&mut t, &tcp(CLIENT, 40003, SERVER, 443, ACK), 0), New);
}

#[test]
fn tcp_port_reuse_after_close() {
    let mut t = table(16);
    let out = |f| tcp(CLIENT, 40004, SERVER, 25, f);
    let back = |f| tcp(SERVER, 25, CLIENT, 40004, f);
    assert_eq!(pass(&mut t, &out(SYN), 0), New);
    assert_eq!(look(&mut t, &back(SYN | ACK), 0), Established);
    assert_eq!(look(&mut t, &out(FIN | ACK), 1), Established);
    assert_eq!(look(&mut t, &back(FIN | ACK), 1), Established);
    // A new SYN on the closing tuple is New: the filter decides again.
    assert_eq!(look(&mut t, &out(SYN), 2), New);
    assert!(commit(&mut t, &out(SYN), 2));
    assert_eq!(t.len(), 1);
    assert_eq!(look(&mut t, &out(SYN), 3), New);
    assert_eq!(look(&mut t, &back(SYN | ACK), 3), Established);
    // Back on the established timeout: alive long after 120 s.
    assert_eq!(look(&mut t, &out(ACK), 3), Established);
    assert_eq!(look(&mut t, &back(ACK), 1000 * S), Established);
    assert_eq!(t.stats().inserted, 2);

    // Inbound SYN on a closing tuple, roles swapped: New (and a filter
    // dropping new inbound leaves the old entry alone).
    assert_eq!(look(&mut t, &out(FIN | ACK), 1001 * S), Established);
    assert_eq!(look(&mut t, &back(FIN | ACK), 1001 * S), Established);
    assert_eq!(look(&mut t, &back(SYN), 1002 * S), New);
    assert_eq!(look(&mut t, &out(ACK), 1002 * S), Established);
}

#[test]
fn udp_request_and_reply() {
    let mut t = table(16);
    let q = udp(CLIENT, 5353, SERVER, 53);
    let r = udp(SERVER, 53, CLIENT, 5353);
    // Inbound first: New, a filter dropping new inbound does not commit.
    assert_eq!(look(&mut t, &r, 0), New);
    assert_eq!(pass(&mut t, &q, 0), New);
    // More requests before an answer: New, refreshed by their commits.
    assert_eq!(pass(&mut t, &q, 20 * S), New);
    assert_eq!(t.len(), 1);
    assert_eq!(look(&mut t, &r, 49 * S), Established);
    assert_eq!(look(&mut t, &q, 49 * S), Established);
    // Replied: the longer timeout.
    assert_eq!(look(&mut t, &r, 49 * S + 179 * S), Established);
    assert_eq!(look(&mut t, &q, 49 * S + 179 * S + 180 * S), New);
    // Another port pair is another flow.
    assert_eq!(look(&mut t, &udp(SERVER, 53, CLIENT, 5354), 0), New);
}

#[test]
fn udp_unreplied_expires() {
    let mut t = table(16);
    let q = udp(CLIENT, 40000, SERVER, 514);
    assert_eq!(pass(&mut t, &q, 0), New);
    assert_eq!(
        look(&mut t, &udp(SERVER, 514, CLIENT, 40000), 30 * S - 1),
        Established
    );
    let q2 = udp(CLIENT, 40001, SERVER, 514);
    assert_eq!(pass(&mut t, &q2, 0), New);
    assert_eq!(look(&mut t, &udp(SERVER, 514, CLIENT, 40001), 30 * S), New);
}

#[test]
fn icmp_echo_request_and_reply() {
    let mut t = table(16);
    let req = echo(CLIENT, SERVER, 8, 0x1234);
    let rep = echo(SERVER, CLIENT, 0, 0x1234);
    // A reply without a request: New, and never committed.
    assert_eq!(look(&mut t, &rep, 0), New);
    assert!(!commit(&mut t, &rep, 0));
    assert_eq!(pass(&mut t, &req, 0), New);
    assert_eq!(look(&mut t, &rep, S), Established);
    assert_eq!(look(&mut t, &req, 2 * S), Established);
    // Another identifier, or a request the other way, is another flow.
    assert_eq!(look(&mut t, &echo(SERVER, CLIENT, 0, 0x1235), 2 * S), New);
    assert_eq!(look(&mut t, &echo(SERVER, CLIENT, 8, 0x1234), 2 * S), New);
    // A reply from another host is not this flow's.
    assert_eq!(look(&mut t, &echo(ROUTER, CLIENT, 0, 0x1234), 2 * S), New);
    // Other ICMP types (timestamp) are New and not committed.
    let mut ts = echo(CLIENT, SERVER, 13, 1);
    assert_eq!(look(&mut t, &ts, 0), New);
    assert!(!commit(&mut t, &ts, 0));
    ts[20] = 14;
    assert_eq!(look(&mut t, &ts, 0), New);
    // ICMP timeout, from the last packet.
    assert_eq!(look(&mut t, &rep, 32 * S - 1), Established);
    assert_eq!(look(&mut t, &rep, 62 * S - 1), New);
    assert_eq!(t.len(), 0);
}

#[test]
fn icmp_errors_quoting_a_tracked_flow_are_related() {
    let mut t = table(16);
    let q = udp(CLIENT, 5000, SERVER, 9999);
    assert_eq!(pass(&mut t, &q, 0), New);
    // Port unreachable from the server, quoting header + 8 bytes.
    let unreach = icmp_error(SERVER, CLIENT, 3, 3, &q, 28);
    assert_eq!(look(&mut t, &unreach, S), Related);
    // From a router on the way (TTL exceeded), whole datagram quoted.
    let ttl = icmp_error(ROUTER, CLIENT, 11, 0, &q, q.len());
    assert_eq!(look(&mut t, &ttl, S), Related);
    // Related does not confirm the flow or refresh it.
    assert_eq!(look(&mut t, &q, S), New);
    assert_eq!(look(&mut t, &unreach, 30 * S), New);
    // Errors are never committed.
    assert!(!commit(&mut t, &unreach, 0));
    assert_eq!(t.stats().ignored, 1);

    // TCP, with only 8 bytes of the TCP header quoted: the ports suffice.
    let syn = tcp(CLIENT, 40005, SERVER, 80, SYN);
    assert_eq!(pass(&mut t, &syn, 40 * S), New);
    let frag_needed = icmp_error(ROUTER, CLIENT, 3, 4, &syn, 28);
    assert_eq!(look(&mut t, &frag_needed, 41 * S), Related);
    // Quoting a reply-direction packet (an error we send about inbound
    // traffic) relates too.
    let synack = tcp(SERVER, 80, CLIENT, 40005, SYN | ACK);
    let out_err = icmp_error(CLIENT, SERVER, 3, 3, &synack, 28);
    assert_eq!(look(&mut t, &out_err, 41 * S), Related);

    // ICMP echo quoted in a TTL exceeded.
    let req = echo(CLIENT, SERVER, 8, 7);
    assert_eq!(pass(&mut t, &req, 40 * S), New);
    assert_eq!(
        look(&mut t, &icmp_error(ROUTER, CLIENT, 11, 0, &req, 28), 41 * S),
        Related
    );
}

#[test]
fn icmp_errors_that_do_not_relate_are_new() {
    let mut t = table(16);
    let q = udp(CLIENT, 5000, SERVER, 9999);
    assert_eq!(pass(&mut t, &q, 0), New);
    // Quoting an untracked flow.
    let other = udp(CLIENT, 5001, SERVER, 9999);
    assert_eq!(
        look(&mut t, &icmp_error(SERVER, CLIENT, 3, 3, &other, 28), 0),
        New
    );
    // Sent somewhere other than the quoted packet's source.
    assert_eq!(
        look(&mut t, &icmp_error(SERVER, ROUTER, 3, 3, &q, 28), 0),
        New
    );
    // Quote too short for the ports.
    assert_eq!(
        look(&mut t, &icmp_error(SERVER, CLIENT, 3, 3, &q, 23), 0),
        New
    );
    assert_eq!(
        look(&mut t, &icmp_error(SERVER, CLIENT, 3, 3, &q, 10), 0),
        New
    );
    // An error about an error.
    let e1 = icmp_error(SERVER, CLIENT, 3, 3, &q, 28);
    assert_eq!(
        look(&mut t, &icmp_error(ROUTER, SERVER, 11, 0, &e1, 28), 0),
        New
    );
    // A quoted non-first fragment has no ports.
    let frag = udp_datagram(CLIENT, 5000, SERVER, 9999)
        .fragment(false, 8)
        .build_ipv4();
    assert_eq!(
        look(&mut t, &icmp_error(SERVER, CLIENT, 3, 3, &frag, 28), 0),
        New
    );
    // Other ICMP types are not errors.
    assert_eq!(
        look(&mut t, &icmp_error(SERVER, CLIENT, 9, 0, &q, 28), 0),
        New
    );
    // The quote is read up to the error's total length, not the padding.
    let mut padded = icmp_error(SERVER, CLIENT, 3, 3, &q, 22);
    padded.extend_from_slice(&q[22..28]);
    assert_eq!(look(&mut t, &padded, 0), New);
    padded[3] += 6;
    assert_eq!(look(&mut t, &padded, 0), Related);
}

#[test]
fn fragments_and_short_headers_are_untracked() {
    let mut t = table(16);
    let q = udp(CLIENT, 5000, SERVER, 9999);
    assert_eq!(pass(&mut t, &q, 0), New);
    assert_eq!(
        look(&mut t, &udp(SERVER, 9999, CLIENT, 5000), 0),
        Established
    );
    // A non-first fragment of the flow: Untracked, never committed.
    let later = testkit::ipv4(SERVER, CLIENT, proto::UDP, &[0; 16])
        .fragment(false, 1480)
        .build_ipv4();
    assert_eq!(look(&mut t, &later, 0), Untracked);
    assert!(!commit(&mut t, &later, 0));
    // The first fragment has the ports: tracked.
    let first = udp_datagram(SERVER, 9999, CLIENT, 5000)
        .fragment(true, 0)
        .build_ipv4();
    assert_eq!(look(&mut t, &first, 0), Established);
    // L4 header cut short.
    for p in [proto::TCP, proto::UDP, proto::ICMP] {
        let short = ip(p, SERVER, CLIENT, &[0; 7]);
        assert_eq!(look(&mut t, &short, 0), Untracked);
        assert!(!commit(&mut t, &short, 0));
    }
    assert_eq!(t.len(), 1);
}

#[test]
fn other_protocols_by_address_pair() {
    let mut t = table(16);
    let gre_out = ip(47, CLIENT, SERVER, &[0; 8]);
    let gre_in = ip(47, SERVER, CLIENT, &[0; 8]);
    assert_eq!(look(&mut t, &gre_in, 0), New);
    assert_eq!(pass(&mut t, &gre_out, 0), New);
    assert_eq!(look(&mut t, &gre_in, S), Established);
    assert_eq!(look(&mut t, &ip(50, SERVER, CLIENT, &[0; 8]), S), New);
    assert_eq!(look(&mut t, &gre_in, 601 * S - 1), Established);
    assert_eq!(look(&mut t, &gre_in, 1201 * S - 1), New);
    // An ICMP error about it is related.
    let err = icmp_error(ROUTER, CLIENT, 3, 1, &gre_out, 28);
    assert_eq!(pass(&mut t, &gre_out, 2000 * S), New);
    assert_eq!(look(&mut t, &err, 2000 * S), Related);
}

#[test]
fn full_table_refuses_new_flows_and_keeps_established_ones() {
    let mut t = table(4);
    assert_eq!(t.slot_count(), 8);
    for i in 0..4 {
        let q = udp(CLIENT, 6000 + i, SERVER, 53);
        assert_eq!(look(&mut t, &q, 0), New);
        assert!(commit(&mut t, &q, 0));
        assert_eq!(
            look(&mut t, &udp(SERVER, 53, CLIENT, 6000 + i), 0),
            Established
        );
    }
    assert_eq!(t.len(), 4);
    let fifth = udp(CLIENT, 6004, SERVER, 53);
    assert_eq!(look(&mut t, &fifth, S), New);
    assert!(!commit(&mut t, &fifth, S));
    assert_eq!(t.stats().full, 1);
    assert_eq!(t.v4.last_full_log_ns, Some(S));
    // Established flows keep passing.
    for i in 0..4 {
        assert_eq!(
            look(&mut t, &udp(CLIENT, 6000 + i, SERVER, 53), 2 * S),
            Established
        );
        assert_eq!(
            look(&mut t, &udp(SERVER, 53, CLIENT, 6000 + i), 2 * S),
            Established
        );
    }
    // Refusals go on being counted; the log line is rate limited.
    assert!(!commit(&mut t, &fifth, S + S / 2));
    assert_eq!(t.v4.last_full_log_ns, Some(S));
    assert!(!commit(&mut t, &fifth, 2 * S));
    assert_eq!(t.v4.last_full_log_ns, Some(2 * S));
    assert_eq!(t.stats().full, 3);
    // A flow already in the table still commits (refresh).
    assert!(commit(&mut t, &udp(CLIENT, 6000, SERVER, 53), 2 * S));
    assert_eq!(t.stats().full, 3);
}

#[test]
fn an_expired_entry_makes_room() {
    let mut t = table(4);
    for i in 0..4 {
        assert_eq!(pass(&mut t, &udp(CLIENT, 6000 + i, SERVER, 53), 0), New);
    }
    // One of them is kept alive by a reply; the others time out.
    assert_eq!(
        look(&mut t, &udp(SERVER, 53, CLIENT, 6002), 10 * S),
        Established
    );
    let later = 31 * S;
    for i in 0..3 {
        assert!(commit(&mut t, &udp(CLIENT, 7000 + i, SERVER, 53), later));
    }
    assert_eq!(t.len(), 4);
    assert_eq!(t.stats().full, 0);
    assert_eq!(t.stats().expired, 3);
    // Full again: a fifth flow gets in by dropping an unreplied one
    // early, never the replied one.
    assert!(commit(&mut t, &udp(CLIENT, 7003, SERVER, 53), later));
    assert_eq!((t.len(), t.stats().early_drop, t.stats().full), (4, 1, 0));
    assert_eq!(
        look(&mut t, &udp(CLIENT, 6002, SERVER, 53), later),
        Established
    );
    assert_eq!(look(&mut t, &udp(CLIENT, 6001, SERVER, 53), later), New);
}

#[test]
fn sweep_reclaims_expired_entries() {
    let mut t = table(64);
    for i in 0..64 {
        assert!(commit(&mut t, &udp(CLIENT, 6000 + i, SERVER, 53), 0));
    }
    assert_eq!(t.count_live(29 * S), 64);
    assert_eq!(t.sweep(29 * S, t.slot_count()), 0);
    assert_eq!(t.count_live(30 * S), 0);
    assert_eq!(t.len(), 64);
    let mut n = 0;
    // A step either moves past a slot or reclaims an entry.
    for _ in 0..(t.slot_count() + 64) / 16 {
        n += t.sweep(30 * S, 16);
        t.v4.slots.check();
    }
    assert_eq!((n, t.len()), (64, 0));
    assert_eq!(t.stats().expired, 64);
}

#[test]
fn hundred_thousand_flows() {
    const N: u32 = 100_000;
    let mut t = table(131_072);
    let flow = |i: u32| {
        let s = FlowSummary {
            src: 0x0a00_0000 | (i >> 8),
            dst: 0xc633_6400 | (i & 0xff),
            proto: proto::TCP,
            l4: true,
            sport: 1024 + (i % 50_000) as u16,
            dport: 443,
            tcp_flags: SYN,
            l4_offset: 20,
            ..FlowSummary::default()
        };
        let r = FlowSummary {
            src: s.dst,
            dst: s.src,
            sport: s.dport,
            dport: s.sport,
            tcp_flags: SYN | ACK,
            ..s
        };
        (s, r)
    };
    for i in 0..N {
        let (s, _) = flow(i);
        assert_eq!(t.lookup(&s, &[], 0), New);
        assert!(t.commit(&s, &[], 0), "flow {i}");
    }
    assert_eq!(t.len(), N as usize);
    assert_eq!(t.stats().full, 0);
    t.v4.slots.check();
    assert!(
        t.v4.slots.max_dist() < 24,
        "max dist {}",
        t.v4.slots.max_dist()
    );
    for i in 0..N {
        let (s, r) = flow(i);
        assert_eq!(t.lookup(&r, &[], 1), Established, "flow {i}");
        assert_eq!(t.lookup(&s, &[], 1), Established, "flow {i}");
    }
    let (mut s, _) = flow(N);
    s.tcp_flags = ACK;
    assert_eq!(t.lookup(&s, &[], 1), New);
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut rng = fastrand::Rng::with_seed(0x9e37_79b9_7f4a_7c15);
    // Short timeouts, so that entries come and go.
    let mut t = short_timeouts(16);
    let mut buf = [0u8; 96];
    for round in 0..200_000u64 {
        let len = (rng.u64(..) % 97) as usize;
        for b in buf.iter_mut() {
            *b = rng.u64(..) as u8;
        }
        // Mostly plausible IPv4 headers, some nested in ICMP errors, so
        // the parsers get past their first checks.
        let r = rng.u64(..);
        if r & 3 != 0 {
            buf[0] = 0x45 + (r >> 2) as u8 % 3;
            buf[6] &= if r & 0x10 != 0 { 0x20 } else { 0xff };
            buf[7] &= if r & 0x10 != 0 { 0 } else { 0xff };
            buf[9] = [1, 6, 17, 47][(r >> 8) as usize % 4];
            buf[12..16].copy_from_slice(&[10, 0, 0, (r >> 16) as u8 % 4]);
            buf[16..20].copy_from_slice(&[10, 0, 0, (r >> 24) as u8 % 4]);
            if buf[9] == 1 && r & 0x20 != 0 {
                buf[20] = [0, 3, 8, 11][(r >> 32) as usize % 4];
                buf[28] = 0x45;
                buf[37] = [1, 6, 17][(r >> 40) as usize % 3];
            }
        }
        let pkt = &buf[..len];
        let now = round * 10_000_000;
        if let Some(s) = FlowSummary::parse(pkt) {
            let _ = t.lookup(&s, pkt, now);
            let _ = t.commit(&s, pkt, now);
        }
        // Lookups with summaries that do not match the bytes.
        let s = FlowSummary {
            src: rng.u64(..) as u32 & 3,
            dst: rng.u64(..) as u32 & 3,
            proto: [1, 6, 17, 47][rng.u64(..) as usize % 4],
            l4: rng.u64(..) & 1 == 0,
            sport: rng.u64(..) as u16 & 3,
            dport: rng.u64(..) as u16 & 3,
            tcp_flags: rng.u64(..) as u8,
            icmp_type: rng.u64(..) as u8 % 16,
            l4_offset: rng.u64(..) as u16 % 128,
            ..FlowSummary::default()
        };
        let _ = t.lookup(&s, pkt, now);
        let _ = t.commit(&s, pkt, now);
        if round % 1024 == 0 {
            t.v4.slots.check();
        }
    }
    t.v4.slots.check();
    assert!(t.len() <= t.capacity());
    let st = t.stats();
    assert!(st.inserted > 1000 && st.expired > 1000 && st.full > 0 && st.reset > 0);
}

/// A random packet of a small set of flows between a few hosts, both ways:
/// TCP (any flags), UDP, ICMP echo and errors quoting the others,
/// fragments; so that entries collide, move, expire and get reset.
fn random_packet(rng: &mut fastrand::Rng) -> Vec<u8> {
    let host = |r: u64| [CLIENT, SERVER, ROUTER][(r % 3) as usize];
    let (a, b) = (host(rng.u64(..)), host(rng.u64(..)));
    let (pa, pb) = (
        1000 + (rng.u64(..) % 4) as u16,
        53 + (rng.u64(..) % 2) as u16,
    );
    let (src, sport, dst, dport) = if rng.u64(..).is_multiple_of(2) {
        (a, pa, b, pb)
    } else {
        (b, pb, a, pa)
    };
    match rng.u64(..) % 8 {
        0 | 1 => {
            let flags =
                [SYN, SYN, SYN | ACK, ACK, FIN | ACK, RST, ACK | PSH][(rng.u64(..) % 7) as usize];
            tcp(src, sport, dst, dport, flags)
        }
        2 | 3 => udp(src, sport, dst, dport),
        4 => echo(src, dst, [8, 0][(rng.u64(..) % 2) as usize], sport % 2),
        5 => {
            let quoted = udp(dst, dport, src, sport);
            icmp_error(src, dst, 3, 3, &quoted, 28)
        }
        6 => {
            let quoted = tcp(dst, dport, src, sport, SYN);
            icmp_error(src, dst, 11, 0, &quoted, 28)
        }
        _ => testkit::ipv4(src, dst, proto::UDP, &[0u8; 8])
            .fragment(false, 128)
            .build_ipv4(), // non-first fragment
    }
}

fn short_timeouts(capacity: usize) -> ConnTable {
    ConnTable::new(CtConfig {
        capacity,
        tcp_syn_sent_ns: S / 2,
        tcp_syn_recv_ns: S / 4,
        tcp_established_ns: 3 * S,
        tcp_fin_wait_ns: S / 2,
        tcp_time_wait_ns: S / 2,
        udp_ns: S / 4,
        udp_replied_ns: S,
        icmp_ns: S / 4,
        other_ns: 2 * S,
    })
}

/// `lookup_burst` then `commit_hinted` is what `lookup` and `commit` one
/// packet after the other are: same states, same commits, same live
/// entries, whatever the hints (right, wrong, none).
#[test]
fn bursts_and_hints_change_nothing() {
    let mut rng = fastrand::Rng::with_seed(0x5eed_1234_abcd_ef01);
    // One by one; by burst with each lookup's hint; by burst with hints
    // shifted by one packet (wrong); by burst without hints.
    // Clones of one empty table: one hash key, so the same slots.
    let mut one = short_timeouts(64);
    let mut hinted = one.clone();
    let mut shifted = one.clone();
    let mut unhinted = one.clone();
    let mut now = 0;
    let mut news = 0;
    for round in 0..3000 {
        let n = 1 + (rng.u64(..) % MAX_BURST as u64) as usize;
        let pkts: Vec<Vec<u8>> = (0..n).map(|_| random_packet(&mut rng)).collect();
        let sums: Vec<FlowSummary> = pkts
            .iter()
            .map(|p| FlowSummary::parse(p).expect("parses"))
            .collect();
        let accept: Vec<bool> = (0..n).map(|_| !rng.u64(..).is_multiple_of(4)).collect();
        now += rng.u64(..) % (S / 8);

        let mut expected = Vec::new();
        let mut committed = Vec::new();
        for k in 0..n {
            expected.push(one.lookup(&sums[k], &pkts[k], now));
        }
        for k in 0..n {
            if expected[k] == New && accept[k] {
                committed.push(one.commit(&sums[k], &pkts[k], now));
            }
        }
        for (t, which) in [(&mut hinted, 0), (&mut shifted, 1), (&mut unhinted, 2)] {
            let mut out = vec![(Untracked, CtHint::NONE); n];
            t.lookup_burst(&sums, |k| &pkts[k][..], now, &mut out);
            let states: Vec<CtState> = out.iter().map(|o| o.0).collect();
            assert_eq!(states, expected, "round {round}, table {which}");
            let mut c = Vec::new();
            for k in 0..n {
                if out[k].0 == New && accept[k] {
                    let hint = match which {
                        0 => out[k].1,
                        1 => out[(k + 1) % n].1,
                        _ => CtHint::NONE,
                    };
                    c.push(matches!(
                        t.commit_hinted(&sums[k], &pkts[k], now, hint),
                        CtCommit::Tracked
                    ));
                }
            }
            assert_eq!(c, committed, "round {round}, table {which}");
            t.v4.slots.check();
            assert_eq!(t.count_live(now), one.count_live(now), "round {round}");
        }
        news += expected.iter().filter(|s| **s == New).count();
    }
    let st = one.stats();
    assert!(
        news > 10_000 && st.inserted > 1000 && st.reset > 100,
        "{st:?}"
    );
    assert!(st.expired > 1000, "{st:?}");
    for t in [&hinted, &shifted, &unhinted] {
        let s = t.stats();
        assert_eq!(
            (s.inserted, s.reset, s.full, s.ignored),
            (st.inserted, st.reset, st.full, st.ignored)
        );
    }
}

/// A hint left stale by the packets between a lookup and its commit (the
/// entry moved, or is gone) costs a probe, nothing else.
#[test]
fn a_stale_hint_is_only_a_probe() {
    let mut t = table(4);
    let first = udp(CLIENT, 6000, SERVER, 53);
    let s = FlowSummary::parse(&first).unwrap();
    assert!(t.commit(&s, &first, 0));
    let mut out = [(Untracked, CtHint::NONE)];
    t.lookup_burst(&[s], |_| &first[..], 1, &mut out);
    assert_eq!(out[0].0, New);
    assert_ne!(out[0].1, CtHint::NONE);
    // Fill the table: the entry may be shifted away from the hinted slot
    // (the table's hash key is random: it depends on the run).
    for i in 1..4 {
        assert!(commit(&mut t, &udp(CLIENT, 6000 + i, SERVER, 53), 1));
    }
    let Class::Flow(l) = s.classify() else {
        panic!("{s:?}")
    };
    let hint = out[0].1;
    // A hint to any slot that does not hold the entry: the commit probes,
    // finds the entry and refreshes it, and says so as a probe does.
    let stale = (0..t.v4.slots.slot_count())
        .find(|&i| !t.v4.slots.holds(i, &l.key, 2))
        .unwrap();
    let stale = CtHint(Hint {
        slot: stale as u32,
        ..hint.0
    });
    let mut after_stale = t.clone();
    assert_eq!(
        after_stale.commit_hinted(&s, &first, 2, stale),
        CtCommit::Tracked
    );
    // Nothing else: the table is as after a commit without a hint.
    let mut after_probe = t.clone();
    assert!(after_probe.commit(&s, &first, 2));
    assert_eq!(after_stale.v4.slots, after_probe.v4.slots);
    assert_eq!(t.commit_hinted(&s, &first, 2, hint), CtCommit::Tracked);
    assert_eq!(t.len(), 4);
    // Refreshed at 2: alive until 2 + 30 s.
    assert_eq!(t.count_live(30 * S + 1), 1);
    // The entry expires (the hinted slot holds it still, dead, unless it
    // was shifted): the commit makes a new one (reclaiming the dead
    // entries to make room).
    let later = 40 * S;
    assert_eq!(
        t.commit_hinted(&s, &first, later, out[0].1),
        CtCommit::Tracked
    );
    assert_eq!(t.count_live(later), 1);
    assert_eq!(t.stats().inserted, 5);
    // A hint past the end of the table is no hint.
    assert_eq!(
        t.commit_hinted(
            &s,
            &first,
            later,
            CtHint(Hint {
                slot: u32::MAX - 1,
                ..hint.0
            })
        ),
        CtCommit::Tracked
    );
    assert_eq!(t.stats().inserted, 5);
    t.v4.slots.check();
}

/// A handshake with real numbers: client ISN 1000, server ISN 5000,
/// windows of 1000 bytes, at time `now`; returns the client's and the
/// server's next sequence numbers.
fn handshake(t: &mut ConnTable, cport: u16, final_ack: u32, now: u64) -> (u32, u32) {
    let out = |f, n| tcp_seg(CLIENT, cport, SERVER, 443, f, n);
    let back = |f, n| tcp_seg(SERVER, 443, CLIENT, cport, f, n);
    assert_eq!(pass(t, &out(SYN, [1000, 0, 1000]), now), New);
    assert_eq!(
        look(t, &back(SYN | ACK, [5000, 1001, 1000]), now),
        Established
    );
    assert_eq!(
        look(t, &out(ACK, [1001, final_ack, 1000]), now),
        Established
    );
    (1001, 5001)
}

#[test]
fn a_syn_ack_alone_gives_the_short_timeout() {
    let mut t = table(16);
    let syn = tcp_seg(CLIENT, 40010, SERVER, 443, SYN, [1000, 0, 1000]);
    let synack = tcp_seg(SERVER, 443, CLIENT, 40010, SYN | ACK, [5000, 1001, 1000]);
    assert_eq!(pass(&mut t, &syn, 0), New);
    assert_eq!(look(&mut t, &synack, 0), Established);
    // SYN_RECV: 60 s, not the established timeout.
    assert_eq!(t.count_live(60 * S - 1), 1);
    assert_eq!(t.count_live(60 * S), 0);
    let ack = tcp_seg(SERVER, 443, CLIENT, 40010, ACK, [5001, 1001, 1000]);
    assert_eq!(look(&mut t, &ack, 61 * S), New);
}

#[test]
fn the_originators_ack_makes_it_established_a_blind_one_does_not() {
    let mut t = table(16);
    // An ACK that does not acknowledge the SYN-ACK (its sender never saw
    // the server's ISN): the connection stays half-open, on 60 s.
    handshake(&mut t, 40011, 0x7000_0000, 0);
    assert_eq!(t.count_live(60 * S), 0);
    assert_eq!(t.stats().tcp_established, 0);
    // The real one: established, on the established timeout.
    let mut t = table(16);
    let (c, s) = handshake(&mut t, 40012, 5001, 0);
    assert_eq!(t.stats().tcp_established, 1);
    let later = 3000 * S;
    let back = tcp_seg(SERVER, 443, CLIENT, 40012, ACK, [s, c, 1000]);
    assert_eq!(look(&mut t, &back, later), Established);
    // A FIN: the short FIN_WAIT timeout from then on.
    let fin = tcp_seg(CLIENT, 40012, SERVER, 443, FIN | ACK, [c, s, 1000]);
    assert_eq!(look(&mut t, &fin, later), Established);
    assert_eq!(t.count_live(later + 120 * S), 0);
}

#[test]
fn a_syn_flood_does_not_keep_new_flows_out() {
    let mut t = table(16);
    // Sixteen half-open connections from spoofed sources, each answered by
    // the server: the table is full of SYN_RECV entries.
    for i in 0..16u32 {
        let src = 0x0a01_0000 | i;
        let syn = tcp_seg(src, 1024, SERVER, 80, SYN, [i, 0, 1000]);
        assert_eq!(pass(&mut t, &syn, 0), New);
        let synack = tcp_seg(SERVER, 80, src, 1024, SYN | ACK, [7, i + 1, 1000]);
        assert_eq!(look(&mut t, &synack, 0), Established);
    }
    assert_eq!(t.len(), 16);
    // A new flow gets in: a half-open entry near its home is dropped.
    handshake(&mut t, 40013, 5001, S);
    assert_eq!(t.len(), 16);
    assert_eq!((t.stats().early_drop, t.stats().full), (1, 0));
    // Established connections are kept: a table full of them refuses.
    let mut t = table(4);
    for p in 0..4 {
        handshake(&mut t, 41000 + p, 5001, 0);
    }
    let syn = tcp_seg(CLIENT, 42000, SERVER, 443, SYN, [1, 0, 1000]);
    assert_eq!(look(&mut t, &syn, S), New);
    assert!(!commit(&mut t, &syn, S));
    assert_eq!((t.stats().early_drop, t.stats().full), (0, 1));
}

#[test]
fn an_out_of_window_rst_keeps_the_entry() {
    let mut t = table(16);
    let (c, s) = handshake(&mut t, 40014, 5001, 0);
    let back = |f, n| tcp_seg(SERVER, 443, CLIENT, 40014, f, n);
    let out = |f, n| tcp_seg(CLIENT, 40014, SERVER, 443, f, n);
    // Blind RSTs both ways, far from the window, behind it, past it.
    for seq in [0, s.wrapping_sub(2), s + 1_000_000, 0x8000_0000] {
        assert_eq!(look(&mut t, &back(RST, [seq, 0, 0]), S), Invalid);
        assert_eq!(look(&mut t, &back(RST | ACK, [seq, c, 0]), S), Invalid);
    }
    assert_eq!(look(&mut t, &out(RST, [c + 5000, 0, 0]), S), Invalid);
    assert_eq!((t.len(), t.stats().reset), (1, 0));
    assert_eq!(t.stats().rst_out_of_window, 9);
    // The connection goes on, on the established timeout.
    assert_eq!(look(&mut t, &back(ACK, [s, c, 1000]), 2 * S), Established);
    assert_eq!(look(&mut t, &out(ACK, [c, s, 1000]), 2000 * S), Established);
}

#[test]
fn an_in_window_rst_removes_the_entry() {
    for (from_server, seq_off) in [(true, 0), (true, 999), (false, 0)] {
        let mut t = table(16);
        let (c, s) = handshake(&mut t, 40015, 5001, 0);
        let rst = match from_server {
            true => tcp_seg(SERVER, 443, CLIENT, 40015, RST, [s + seq_off, 0, 0]),
            false => tcp_seg(CLIENT, 40015, SERVER, 443, RST | ACK, [c, s, 0]),
        };
        assert_eq!(look(&mut t, &rst, S), Established);
        assert_eq!((t.len(), t.stats().reset), (0, 1));
    }
    // Answering a SYN, a RST must acknowledge it.
    let mut t = table(16);
    let syn = tcp_seg(CLIENT, 40016, SERVER, 443, SYN, [1000, 0, 1000]);
    assert_eq!(pass(&mut t, &syn, 0), New);
    let wrong = tcp_seg(SERVER, 443, CLIENT, 40016, RST | ACK, [0, 77, 0]);
    assert_eq!(look(&mut t, &wrong, 0), Invalid);
    let right = tcp_seg(SERVER, 443, CLIENT, 40016, RST | ACK, [0, 1001, 0]);
    assert_eq!(look(&mut t, &right, 0), Established);
    assert_eq!(t.len(), 0);
}

#[test]
fn segments_are_read_from_the_bytes_with_their_window_scale() {
    // SYN with MSS, NOP, window scale 7, and 10 bytes of payload.
    let p = testkit::tcp(CLIENT, SERVER, 0, 0, SYN)
        .seq(1000)
        .window(64240)
        .tcp_options(&[2, 4, 5, 0xb4, 1, 3, 3, 7])
        .payload(&[0; 10])
        .build_ipv4();
    let seg = Segment::read(&FlowSummary::parse(&p).unwrap(), &p);
    assert!(seg.known);
    assert_eq!(
        (seg.seq, seg.win, seg.len, seg.wscale),
        (1000, 64240, 11, 7)
    );
    // Without the bytes (a summary alone): unknown, nothing checked.
    assert!(!Segment::read(&FlowSummary::parse(&p).unwrap(), &[]).known);
}

// IPv6: the same table's IPv6 half, packets parsed with FlowSummary6.

const C6: [u8; 16] = [0x20, 1, 0xd, 0xb8, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
const S6: [u8; 16] = [0x20, 1, 0xd, 0xb8, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9];
const R6: [u8; 16] = [0x20, 1, 0xd, 0xb8, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];

/// An IPv6 packet `src` → `dst`, first next header `nh`, `payload` after
/// the fixed header.
fn ip6(nh: u8, src: [u8; 16], dst: [u8; 16], payload: &[u8]) -> Vec<u8> {
    let mut p = vec![0x60, 0, 0, 0];
    p.extend((payload.len() as u16).to_be_bytes());
    p.extend([nh, 64]);
    p.extend(src);
    p.extend(dst);
    p.extend(payload);
    p
}

/// A TCP segment over IPv6 with `[seq, ack, window]`, no payload.
fn tcp6(src: [u8; 16], sport: u16, dst: [u8; 16], dport: u16, flags: u8, n: [u32; 3]) -> Vec<u8> {
    let [seq, ack, window] = n;
    let mut t = Vec::new();
    t.extend(sport.to_be_bytes());
    t.extend(dport.to_be_bytes());
    t.extend(seq.to_be_bytes());
    t.extend(ack.to_be_bytes());
    t.extend([0x50, flags]);
    t.extend((window as u16).to_be_bytes());
    t.extend([0; 4]);
    ip6(proto::TCP, src, dst, &t)
}

fn udp6(src: [u8; 16], sport: u16, dst: [u8; 16], dport: u16) -> Vec<u8> {
    let mut u = Vec::new();
    u.extend(sport.to_be_bytes());
    u.extend(dport.to_be_bytes());
    u.extend(12u16.to_be_bytes());
    u.extend([0; 6]);
    ip6(proto::UDP, src, dst, &u)
}

fn echo6(src: [u8; 16], dst: [u8; 16], icmp_type: u8, id: u16) -> Vec<u8> {
    let mut e = vec![icmp_type, 0, 0, 0];
    e.extend(id.to_be_bytes());
    e.extend([0, 1]);
    ip6(proto::ICMPV6, src, dst, &e)
}

/// An ICMPv6 error quoting the first `quote` bytes of `orig`.
fn icmp6_error(src: [u8; 16], dst: [u8; 16], icmp_type: u8, orig: &[u8], quote: usize) -> Vec<u8> {
    let mut e = vec![icmp_type, 0, 0, 0, 0, 0, 0x05, 0x00];
    e.extend(&orig[..quote.min(orig.len())]);
    ip6(proto::ICMPV6, src, dst, &e)
}

fn look6(t: &mut ConnTable, pkt: &[u8], now: u64) -> CtState {
    let s = FlowSummary6::parse(pkt).expect("test packet parses");
    let state = t.lookup6(&s, pkt, now);
    t.v6.slots.check();
    state
}

fn commit6(t: &mut ConnTable, pkt: &[u8], now: u64) -> bool {
    let s = FlowSummary6::parse(pkt).expect("test packet parses");
    let ok = t.commit6(&s, pkt, now);
    t.v6.slots.check();
    ok
}

/// Look up, and commit when `New` (a filter accepting everything).
fn pass6(t: &mut ConnTable, pkt: &[u8], now: u64) -> CtState {
    let state = look6(t, pkt, now);
    if state == New {
        commit6(t, pkt, now);
    }
    state
}

#[test]
fn ipv6_tcp_handshake_reply_direction_and_teardown() {
    let mut t = table(16);
    let out = |f, n| tcp6(C6, 40000, S6, 443, f, n);
    let back = |f, n| tcp6(S6, 443, C6, 40000, f, n);
    // A mid-stream segment is New and cannot make an entry (strict pickup).
    assert_eq!(look6(&mut t, &out(ACK, [1, 1, 1000]), 0), New);
    assert!(!commit6(&mut t, &out(ACK, [1, 1, 1000]), 0));
    assert_eq!(pass6(&mut t, &out(SYN, [1000, 0, 1000]), 0), New);
    assert_eq!((t.len(), t.len6()), (1, 1));
    // A retransmitted SYN is still New; the reply is established.
    assert_eq!(look6(&mut t, &out(SYN, [1000, 0, 1000]), S), New);
    let synack = back(SYN | ACK, [5000, 1001, 1000]);
    assert_eq!(look6(&mut t, &synack, S), Established);
    assert_eq!(t.stats6().tcp_established, 0);
    assert_eq!(look6(&mut t, &out(ACK, [1001, 5001, 1000]), S), Established);
    assert_eq!(t.stats6().tcp_established, 1);
    assert_eq!(t.stats().tcp_established, 1);
    assert_eq!(
        look6(&mut t, &back(ACK | PSH, [5001, 1001, 1000]), S),
        Established
    );
    // The established timeout, not the SYN's.
    assert_eq!(t.count_live(S + 121 * S), 1);
    // FIN each way: the transient timeout.
    assert_eq!(
        look6(&mut t, &out(FIN | ACK, [1001, 5001, 1000]), 2 * S),
        Established
    );
    assert_eq!(
        look6(&mut t, &back(FIN | ACK, [5001, 1002, 1000]), 2 * S),
        Established
    );
    assert_eq!(t.count_live(2 * S + 121 * S), 0);
    // Nothing in the IPv4 half.
    assert_eq!(t.v4.slots.len(), 0);
    assert!(t.audit(2 * S).is_ok());
}

#[test]
fn ipv6_blind_rst_is_invalid_an_in_window_one_resets() {
    let mut t = table(16);
    let out = |f, n| tcp6(C6, 40001, S6, 443, f, n);
    let back = |f, n| tcp6(S6, 443, C6, 40001, f, n);
    assert_eq!(pass6(&mut t, &out(SYN, [1000, 0, 1000]), 0), New);
    assert_eq!(
        look6(&mut t, &back(SYN | ACK, [5000, 1001, 1000]), 0),
        Established
    );
    assert_eq!(look6(&mut t, &out(ACK, [1001, 5001, 1000]), 0), Established);
    // A RST far from the server's sequence: invalid, the entry kept.
    assert_eq!(look6(&mut t, &back(RST, [900_000, 0, 0]), S), Invalid);
    assert_eq!(t.stats6().rst_out_of_window, 1);
    assert_eq!(t.len6(), 1);
    assert_eq!(look6(&mut t, &out(ACK, [1001, 5001, 1000]), S), Established);
    // One at the server's next byte: the connection ends.
    assert_eq!(look6(&mut t, &back(RST, [5001, 0, 0]), S), Established);
    assert_eq!((t.len6(), t.stats6().reset), (0, 1));
    assert_eq!(look6(&mut t, &out(ACK, [1001, 5001, 1000]), S), New);
}

#[test]
fn ipv6_udp_and_echo_request_and_reply() {
    let mut t = table(16);
    let q = udp6(C6, 5353, S6, 53);
    assert_eq!(pass6(&mut t, &q, 0), New);
    assert_eq!(look6(&mut t, &q, 0), New, "no reply yet");
    assert_eq!(look6(&mut t, &udp6(S6, 53, C6, 5353), S), Established);
    assert_eq!(look6(&mut t, &q, S), Established);
    // Another port from the server is another flow.
    assert_eq!(look6(&mut t, &udp6(S6, 54, C6, 5353), S), New);
    // Unreplied UDP lives 30 s, replied 180 s.
    assert_eq!(t.count_live(S + 179 * S), 1);
    // Echo: the request makes the entry, its reply (same identifier)
    // is established; a reply without a request is New and makes nothing.
    assert_eq!(look6(&mut t, &echo6(S6, C6, 129, 99), 0), New);
    assert!(!commit6(&mut t, &echo6(S6, C6, 129, 99), 0));
    assert_eq!(pass6(&mut t, &echo6(C6, S6, 128, 7), 0), New);
    assert_eq!(look6(&mut t, &echo6(S6, C6, 129, 7), 0), Established);
    assert_eq!(look6(&mut t, &echo6(S6, C6, 129, 8), 0), New);
    // A request the other way is another flow.
    assert_eq!(look6(&mut t, &echo6(S6, C6, 128, 7), 0), New);
    // ICMPv6 echo takes the ICMP timeout (30 s).
    assert_eq!(t.count_live(31 * S), 1, "only the UDP flow is left");
    assert_eq!(t.len6(), 2);
    assert_eq!(t.v4.slots.len(), 0);
}

#[test]
fn ipv6_errors_quoting_a_tracked_flow_are_related() {
    let mut t = table(16);
    let q = udp6(C6, 5353, S6, 53);
    assert_eq!(pass6(&mut t, &q, 0), New);
    let syn = tcp6(C6, 40000, S6, 443, SYN, [1000, 0, 1000]);
    assert_eq!(pass6(&mut t, &syn, 0), New);
    let ping = echo6(C6, S6, 128, 3);
    assert_eq!(pass6(&mut t, &ping, 0), New);
    // Destination unreachable, packet too big, time exceeded, parameter
    // problem from a router on the way, back to the client: related,
    // quoting the header and 8 bytes of L4 header (or more).
    for ty in 1..=4 {
        assert_eq!(look6(&mut t, &icmp6_error(R6, C6, ty, &q, 48), S), Related);
        assert_eq!(
            look6(&mut t, &icmp6_error(R6, C6, ty, &syn, 60), S),
            Related
        );
        assert_eq!(
            look6(&mut t, &icmp6_error(R6, C6, ty, &ping, 48), S),
            Related
        );
    }
    // Not related: to someone else than the quoted packet's source, a
    // quote of an untracked flow, a quote too short for the ports, an
    // error type that quotes nothing, an error quoting an error.
    assert_eq!(look6(&mut t, &icmp6_error(R6, S6, 1, &q, 48), S), New);
    let other = udp6(C6, 5354, S6, 53);
    assert_eq!(look6(&mut t, &icmp6_error(R6, C6, 1, &other, 48), S), New);
    assert_eq!(look6(&mut t, &icmp6_error(R6, C6, 1, &q, 42), S), New);
    assert_eq!(look6(&mut t, &icmp6_error(R6, C6, 5, &q, 48), S), New);
    let err = icmp6_error(S6, C6, 1, &q, 48);
    assert_eq!(look6(&mut t, &icmp6_error(R6, S6, 3, &err, 48), S), New);
    // Errors never make entries.
    assert!(!commit6(&mut t, &icmp6_error(R6, C6, 1, &other, 48), S));
    assert_eq!(t.len6(), 3);
}

#[test]
fn ipv6_neighbour_discovery_and_later_fragments_are_untracked() {
    let mut t = table(16);
    for ty in [133, 134, 135, 136, 137, 130, 143] {
        let mut nd = vec![ty, 0, 0, 0, 0, 0, 0, 0];
        nd.extend(S6);
        let p = ip6(proto::ICMPV6, C6, S6, &nd);
        assert_eq!(look6(&mut t, &p, 0), Untracked, "type {ty}");
        assert!(!commit6(&mut t, &p, 0), "type {ty}");
    }
    // A cut ICMPv6 header, a cut UDP header: untracked.
    assert_eq!(
        look6(&mut t, &ip6(proto::ICMPV6, C6, S6, &[128, 0, 0]), 0),
        Untracked
    );
    assert_eq!(
        look6(&mut t, &ip6(proto::UDP, C6, S6, &[0, 53, 0]), 0),
        Untracked
    );
    // A non-first fragment (Fragment header at offset 8) of a tracked
    // flow: untracked, as IPv4's; the first fragment is looked up.
    let q = udp6(C6, 5353, S6, 53);
    assert_eq!(pass6(&mut t, &q, 0), New);
    assert_eq!(look6(&mut t, &udp6(S6, 53, C6, 5353), 0), Established);
    let frag = |offset: u16, more: bool, data: &[u8]| {
        let mut f = vec![proto::UDP, 0];
        f.extend((offset | u16::from(more)).to_be_bytes());
        f.extend([0, 0, 0, 7]);
        f.extend(data);
        ip6(44, C6, S6, &f)
    };
    let udp_hdr = [0x14, 0xe9, 0, 53, 0, 24, 0, 0];
    assert_eq!(look6(&mut t, &frag(0, true, &udp_hdr), 0), Established);
    assert_eq!(look6(&mut t, &frag(8, false, &[0; 16]), 0), Untracked);
    assert!(!commit6(&mut t, &frag(8, false, &[0; 16]), 0));
    assert_eq!(t.len6(), 1);
    assert_eq!(t.stats6().ignored, 7 + 1);
}

#[test]
fn ipv6_full_table_refuses_new_flows_and_leaves_ipv4_alone() {
    let mut t = table(4);
    for i in 0..4 {
        let q = udp6(C6, 6000 + i, S6, 53);
        assert_eq!(pass6(&mut t, &q, 0), New);
        assert_eq!(look6(&mut t, &udp6(S6, 53, C6, 6000 + i), 0), Established);
    }
    assert_eq!(t.len6(), 4);
    // Replied flows are not dropped early: the fifth is refused.
    let fifth = udp6(C6, 6004, S6, 53);
    assert_eq!(look6(&mut t, &fifth, S), New);
    assert!(!commit6(&mut t, &fifth, S));
    assert_eq!((t.stats6().full, t.stats().full), (1, 1));
    assert_eq!(t.v6.last_full_log_ns, Some(S));
    for i in 0..4 {
        assert_eq!(look6(&mut t, &udp6(C6, 6000 + i, S6, 53), S), Established);
    }
    // The IPv4 half has its own capacity.
    for i in 0..4 {
        assert!(commit(&mut t, &udp(CLIENT, 6000 + i, SERVER, 53), S));
    }
    assert_eq!((t.len(), t.len6()), (8, 4));
    assert_eq!(t.stats().full, 1);
    // An unreplied IPv6 flow makes way for a new one (early drop).
    let mut u = table(1);
    assert!(commit6(&mut u, &udp6(C6, 1, S6, 53), 0));
    assert!(commit6(&mut u, &udp6(C6, 2, S6, 53), 0));
    assert_eq!((u.len6(), u.stats6().early_drop), (1, 1));
    assert!(u.audit(0).is_ok());
}

#[test]
fn ipv6_bursts_and_hints_match_single_lookups() {
    let mut one = table(64);
    let mut many = table(64);
    // 48 packets of 32 flows (some twice), in bursts of 32.
    let pkts: Vec<Vec<u8>> = (0..16u16)
        .flat_map(|i| {
            [
                udp6(C6, 7000 + i, S6, 53),
                tcp6(C6, 7000 + i / 2, S6, 443, SYN, [i.into(), 0, 1000]),
                echo6(C6, S6, 128, i),
            ]
        })
        .collect();
    let sums: Vec<FlowSummary6> = pkts
        .iter()
        .map(|p| FlowSummary6::parse(p).unwrap())
        .collect();
    for p in &pkts {
        pass6(&mut one, p, 0);
    }
    for (chunk, at) in sums.chunks(32).zip((0..).step_by(32)) {
        let mut out = vec![(Untracked, CtHint6::NONE); chunk.len()];
        many.lookup_burst6(chunk, |k| &pkts[at + k][..], 0, &mut out);
        for (k, (state, hint)) in out.iter().enumerate() {
            assert_eq!(*state, New);
            many.commit_hinted6(&chunk[k], &pkts[at + k], 0, *hint);
        }
        many.v6.slots.check();
    }
    assert_eq!((one.len6(), many.len6()), (40, 40));
    assert!(many.audit(0).is_ok());
    // Both tables answer the replies alike.
    for i in 0..16u16 {
        for p in [udp6(S6, 53, C6, 7000 + i), echo6(S6, C6, 129, i)] {
            assert_eq!(look6(&mut one, &p, S), Established);
            assert_eq!(look6(&mut many, &p, S), Established);
        }
    }
}
