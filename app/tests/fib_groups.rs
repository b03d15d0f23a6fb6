//! ECMP groups in the IPv4 FIB are shared: routes with the same next hops
//! take one group, so far more ECMP routes fit than there are groups (a
//! BGP table over two peers is one group); a gateway that fails leaves the
//! shared group for every route at once; a group goes when its last route
//! does, and routes over distinct next-hop sets still each get their own,
//! up to the table's limit, with a clear refusal past it.

mod common;
use common::*;
use fastpath::dpdk::{Eal, Lpm, Qsbr};
use fastpath::fib::{FibWriter, HopKind, NextHop, Origin, HOP_CAPACITY};
use std::net::Ipv4Addr;

fn hop(gateway: [u8; 4], neigh: u32) -> NextHop {
    NextHop {
        kind: HopKind::Forward,
        port: 0,
        gateway: u32::from(Ipv4Addr::from(gateway)),
        neigh,
        mtu: 1500,
    }
}

/// The /24 number `i` from 100.64.0.0.
fn prefix(i: u32) -> Ipv4Addr {
    Ipv4Addr::from((100 << 24 | 64 << 16) + (i << 8))
}

#[test]
fn routes_with_the_same_next_hops_share_one_group() {
    let mut argv = vec!["fib_groups".to_string()];
    argv.extend(eal_args("fib_groups", &[]));
    let (eal, _) = Eal::init(&argv).expect("EAL");
    let qsbr = Qsbr::new(1).expect("qsbr");
    let lpm = Lpm::new("fib_groups", 65_536, 64, eal.socket_id()).expect("lpm");
    let (fib, mut w) = FibWriter::new(lpm, qsbr.clone(), &[]).expect("fib");
    let pair = vec![hop([10, 0, 1, 2], 1), hop([10, 0, 1, 3], 2)];

    // 20,000 ECMP routes over two peers: more than there are groups.
    let n = 20_000;
    for i in 0..n {
        w.set(prefix(i), 24, pair.clone(), Origin::Fpm)
            .unwrap_or_else(|e| panic!("route {i}: {e}"));
    }
    let members = |dst: Ipv4Addr| {
        let g = fib.lookup(dst).expect("routed");
        assert_eq!(g.kind, HopKind::Group);
        let mut m: Vec<u32> = (0..64)
            .filter_map(|h: u32| fib.member(g.neigh, h << 26))
            .map(|m| m.gateway)
            .collect();
        m.sort();
        m.dedup();
        (g, m)
    };
    let (g0, m) = members(prefix(0));
    assert_eq!(m.len(), 2, "both members");
    let (g_last, _) = members(prefix(n - 1));
    assert_eq!(g0, g_last, "one group for both routes");

    // A failed gateway leaves the one group: every route at once.
    assert_eq!(
        w.set_gateway_state(u32::from(Ipv4Addr::new(10, 0, 1, 3)), false),
        1
    );
    for i in [0, n / 2, n - 1] {
        let (_, m) = members(prefix(i));
        assert_eq!(m, [u32::from(Ipv4Addr::new(10, 0, 1, 2))], "route {i}");
    }
    assert_eq!(
        w.set_gateway_state(u32::from(Ipv4Addr::new(10, 0, 1, 3)), true),
        1
    );
    assert_eq!(members(prefix(7)).1.len(), 2);

    // The group goes with its last route; then distinct sets each take a
    // group, up to the limit, and the one past it is refused by name.
    for i in 0..n {
        w.remove(prefix(i), 24).expect("remove");
    }
    assert!(fib.lookup(prefix(0)).is_none());
    let reader = qsbr.reader(0).expect("reader");
    let _ = reader.quiescent();
    w.collect();
    let mut refused = None;
    for i in 0..HOP_CAPACITY as u32 {
        let distinct = vec![
            hop([10, 0, 1, 2], 1),
            hop([10, 1, (i >> 8) as u8, i as u8], 3 + i),
        ];
        if let Err(e) = w.set(prefix(i), 24, distinct, Origin::Fpm) {
            refused = Some((i, e.to_string()));
            break;
        }
    }
    let (at, e) = refused.expect("distinct next-hop sets fill the table");
    assert!(at > 500, "only {at} distinct groups fit");
    assert!(e.contains("all") && e.contains("in use"), "{e}");
    drop(w);
    drop(fib);
    drop(reader);
    drop(qsbr);
    drop(eal);
}
