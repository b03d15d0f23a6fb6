//! The FIB on DPDK's LPM: longest prefix wins (/32 over /24 over default),
//! our addresses are local, broadcasts are never forwarded, a miss is a miss,
//! and the bulk lookup agrees with the single one.

mod common;
use common::*;
use fastpath::config::RouterConfig;
use fastpath::dpdk::{Eal, Lpm};
use fastpath::fib::{fib_entries, Fib, HopKind, NEIGH_BY_DST};
use std::net::Ipv4Addr;

const CONFIG: &str = r#"
[[port]]
device = "net_null0"
address = "10.0.1.1/24"

[[port]]
device = "net_null1"
address = "10.0.2.1/24"
mtu = 2000

[[route]]
prefix = "0.0.0.0/0"
via = "10.0.1.254"

[[route]]
prefix = "198.51.100.0/24"
via = "10.0.2.2"

[[route]]
prefix = "198.51.100.7/32"
via = "10.0.2.3"

[[route]]
prefix = "192.0.2.0/25"
device = "net_null1"
"#;

/// One test (EAL starts once per process): plain `cargo test` runs the
/// tests of a binary in one process.
#[test]
fn longest_prefix_wins() {
    let args = eal_args("fib", &["net_null0".into(), "net_null1".into()]);
    let mut argv = vec!["fib".to_string()];
    argv.extend(args);
    let (eal, _) = Eal::init(&argv).expect("EAL");
    let cfg = RouterConfig::parse("fib.toml".as_ref(), CONFIG).expect("config");
    // Gateways get neighbour indexes 100, 101, ... in the order they appear.
    let mut gateways = Vec::new();
    let entries = fib_entries(&cfg, &[0, 1], |gw| {
        gateways.push(gw);
        99 + gateways.len() as u32
    });
    let lpm = Lpm::new("fib_test", 64, 64, eal.socket_id()).expect("lpm");
    let fib = Fib::build(lpm, &entries).expect("fib");

    let hop = |a: [u8; 4]| fib.lookup(Ipv4Addr::from(a));
    let gw = |a: [u8; 4]| u32::from(Ipv4Addr::from(a));

    let h = hop([198, 51, 100, 7]).unwrap();
    assert_eq!(
        (h.kind, h.port, h.gateway),
        (HopKind::Forward, 1, gw([10, 0, 2, 3])),
        "/32"
    );
    let h = hop([198, 51, 100, 8]).unwrap();
    assert_eq!((h.gateway, h.mtu), (gw([10, 0, 2, 2]), 2000), "/24");
    let h = hop([8, 8, 8, 8]).unwrap();
    assert_eq!(
        (h.port, h.gateway, h.mtu),
        (0, gw([10, 0, 1, 254]), 1500),
        "default"
    );
    assert_eq!(h.neigh, 100, "first gateway's neighbour index");

    // Connected subnets and an on-link route: the destination is the neighbour.
    let h = hop([10, 0, 2, 9]).unwrap();
    assert_eq!(
        (h.kind, h.port, h.gateway, h.neigh),
        (HopKind::Forward, 1, 0, NEIGH_BY_DST)
    );
    let h = hop([192, 0, 2, 100]).unwrap();
    assert_eq!((h.port, h.gateway), (1, 0));
    assert_eq!(
        hop([192, 0, 2, 200]).unwrap().gateway,
        gw([10, 0, 1, 254]),
        "/25 edge"
    );

    // Ours, and never forwarded.
    assert_eq!(hop([10, 0, 2, 1]).unwrap().kind, HopKind::Local);
    let ours = hop([10, 0, 1, 1]).unwrap();
    assert_eq!((ours.kind, ours.port), (HopKind::Local, 0));
    assert_eq!(hop([10, 0, 1, 255]).unwrap().kind, HopKind::NotUnicast);
    assert_eq!(hop([255, 255, 255, 255]).unwrap().kind, HopKind::NotUnicast);
    assert_eq!(hop([239, 1, 2, 3]).unwrap().kind, HopKind::NotUnicast);
    // Never routed, default route or not (RFC 1812 5.3.7).
    for a in [[0, 1, 2, 3], [127, 0, 0, 1], [240, 0, 0, 1], [254, 1, 1, 1]] {
        assert_eq!(hop(a).unwrap().kind, HopKind::Martian, "{a:?}");
    }

    // Bulk agrees with single lookups.
    let dsts: Vec<u32> = [
        [198, 51, 100, 7],
        [198, 51, 100, 8],
        [8, 8, 8, 8],
        [10, 0, 2, 1],
        [192, 0, 2, 100],
        [192, 0, 2, 200],
        [10, 0, 1, 255],
        [240, 0, 0, 1],
    ]
    .iter()
    .map(|a| gw(*a))
    .collect();
    let mut ids = vec![0u32; dsts.len()];
    fib.lookup_bulk(&dsts, &mut ids);
    // And one at a time, as the stages look up (tbl8 for the /32 and /25).
    let one = fib.lookups();
    for (d, id) in dsts.iter().zip(&ids) {
        assert_eq!(one.id(one.entry(*d)), *id, "{}", Ipv4Addr::from(*d));
        assert_eq!(
            fib.hop(*id),
            fib.lookup(Ipv4Addr::from(*d)),
            "{}",
            Ipv4Addr::from(*d)
        );
    }
    drop(fib);
    a_miss_is_no_route(&eal);
    drop(eal);
}

/// Without a default route, a miss is a miss.
fn a_miss_is_no_route(eal: &Eal) {
    let cfg = RouterConfig::parse(
        "m.toml".as_ref(),
        "[[port]]\ndevice = \"net_null0\"\naddress = \"10.0.1.1/24\"\n",
    )
    .unwrap();
    let entries = fib_entries(&cfg, &[0], |_| unreachable!("no gateways"));
    let fib = Fib::build(
        Lpm::new("fib_miss", 64, 64, eal.socket_id()).unwrap(),
        &entries,
    )
    .unwrap();
    assert_eq!(fib.lookup(Ipv4Addr::new(203, 0, 113, 1)), None);
    let mut ids = [0u32; 2];
    fib.lookup_bulk(
        &[
            u32::from(Ipv4Addr::new(203, 0, 113, 1)),
            u32::from(Ipv4Addr::new(10, 0, 1, 5)),
        ],
        &mut ids,
    );
    assert_eq!(fib.hop(ids[0]), None);
    let one = fib.lookups();
    assert_eq!(
        one.id(one.entry(u32::from(Ipv4Addr::new(203, 0, 113, 1)))),
        ids[0]
    );
    assert!(fib.hop(ids[1]).is_some());
    drop(fib);
}
