//! The IPv6 FIB built from a config on DPDK's `rte_lpm6`: the longest prefix
//! wins, the default route `::/0` (beside the table) takes what nothing else
//! does, a link-local next hop leaves by the port it names, connected
//! subnets are on-link, our addresses (the link-local one derived from the
//! MAC included) are local, multicast and link-local destinations are never
//! forwarded, and the bulk lookup agrees with the single one.

mod common;
use common::*;
use fastpath::config::RouterConfig;
use fastpath::dpdk::{Eal, Qsbr, LPM6_MISS};
use fastpath::fib::{HopKind, Origin, NEIGH_BY_DST};
use fastpath::fib6::{fib6_entries, Fib6, NextHop6, FIB6_ROUTES};
use std::net::Ipv6Addr;

const CONFIG: &str = r#"
[[port]]
device = "net_null0"
address = "10.0.1.1/24"
ipv6 = ["2001:db8:1::1/64"]
mac = "02:00:00:00:01:01"

[[port]]
device = "net_null1"
address = "10.0.2.1/24"
ipv6 = ["2001:db8:2::1/64", "fd00:2::1/48"]
link_local = "fe80::1"
mtu = 2000

[[route]]
prefix = "::/0"
via = "2001:db8:1::fe"

[[route]]
prefix = "2001:db8:100::/48"
via = "fe80::2"
device = "net_null1"

[[route]]
prefix = "2001:db8:100:7::/64"
via = "2001:db8:2::3"

[[route]]
prefix = "2001:db8:100:7::9/128"
device = "net_null0"

[[route]]
prefix = "0.0.0.0/0"
via = "10.0.1.254"
"#;

fn a(s: &str) -> Ipv6Addr {
    s.parse().expect("address")
}

/// One test (EAL starts once per process).
#[test]
fn config_routes_resolve() {
    let mut argv = vec!["fib6".to_string()];
    argv.extend(eal_args("fib6", &[]));
    let (eal, _) = Eal::init(&argv).expect("EAL");
    let cfg = RouterConfig::parse("fib6.toml".as_ref(), CONFIG).expect("config");
    // DPDK port ids 3 and 5, so that an index is never taken for an id.
    let ids = [3u16, 5];
    let macs = [[2, 0, 0, 0, 1, 1], [2, 0, 0, 0, 2, 2]];
    // Gateways get neighbour indexes 100, 101, ... in the order they appear.
    let mut gateways = Vec::new();
    let entries = fib6_entries(&cfg, &ids, &macs, |gw, port| {
        gateways.push((gw, port));
        99 + gateways.len() as u32
    });
    assert_eq!(
        gateways,
        [
            (a("2001:db8:1::fe"), 3),
            (a("fe80::2"), 5),
            (a("2001:db8:2::3"), 5)
        ]
    );
    let qsbr = Qsbr::new(1).expect("qsbr");
    let (fib, _writer) =
        Fib6::create("fib6_test", &entries, FIB6_ROUTES, qsbr, eal.socket_id()).expect("fib6");

    let forward = |port, gateway: Option<&str>, neigh, mtu| NextHop6 {
        kind: HopKind::Forward,
        port,
        gateway: gateway.map(a),
        neigh,
        mtu,
    };
    let kind = |k, port, mtu| NextHop6 {
        kind: k,
        port,
        gateway: None,
        neigh: NEIGH_BY_DST,
        mtu,
    };
    let cases = [
        // The default route: what nothing else routes.
        (
            "2001:db8:ffff::1",
            forward(3, Some("2001:db8:1::fe"), 100, 1500),
        ),
        ("2a00::1", forward(3, Some("2001:db8:1::fe"), 100, 1500)),
        // A link-local next hop, out of the port its route names.
        ("2001:db8:100:1::1", forward(5, Some("fe80::2"), 101, 2000)),
        // Longer prefixes win: /64 over /48, /128 over /64.
        (
            "2001:db8:100:7::1",
            forward(5, Some("2001:db8:2::3"), 102, 2000),
        ),
        ("2001:db8:100:7::9", forward(3, None, NEIGH_BY_DST, 1500)),
        // Connected subnets are on-link.
        ("2001:db8:1::77", forward(3, None, NEIGH_BY_DST, 1500)),
        ("2001:db8:2::77", forward(5, None, NEIGH_BY_DST, 2000)),
        ("fd00:2:0:9::1", forward(5, None, NEIGH_BY_DST, 2000)),
        // Our addresses, the link-local ones included (port 3's from its MAC).
        ("2001:db8:1::1", kind(HopKind::Local, 3, 1500)),
        ("fd00:2::1", kind(HopKind::Local, 5, 2000)),
        ("fe80::1", kind(HopKind::Local, 5, 2000)),
        ("fe80::ff:fe00:101", kind(HopKind::Local, 3, 1500)),
        // Never forwarded, whatever the default route says.
        ("ff02::1", kind(HopKind::NotUnicast, 3, 1500)),
        ("fe80::2", kind(HopKind::Martian, 3, 1500)),
        ("::1", kind(HopKind::Martian, 3, 1500)),
        ("::", kind(HopKind::Martian, 3, 1500)),
        ("::ffff:10.0.0.1", kind(HopKind::Martian, 3, 1500)),
    ];
    for (dst, want) in cases {
        assert_eq!(fib.lookup(&a(dst)), Some(want), "{dst}");
    }
    // The bulk lookup, as ip6_input calls it, agrees.
    let dsts: Vec<[u8; 16]> = cases.iter().map(|(d, _)| a(d).octets()).collect();
    let mut ids = vec![0u32; dsts.len()];
    fib.lookup_bulk(&dsts, &mut ids);
    for ((dst, want), id) in cases.iter().zip(&ids) {
        assert_eq!(fib.hop(fib.or_default(*id)), Some(*want), "bulk {dst}");
    }
    assert_eq!(fib.hop(LPM6_MISS), None);

    // Without a default route a miss stays a miss.
    let cfg = RouterConfig::parse(
        "fib6.toml".as_ref(),
        &CONFIG.replace("prefix = \"::/0\"", "prefix = \"2001:db8:f000::/36\""),
    )
    .expect("config without ::/0");
    let entries = fib6_entries(&cfg, &[3, 3], &macs, |_, _| 7);
    let (fib, _w) = Fib6::create(
        "fib6_nodef",
        &entries,
        FIB6_ROUTES,
        Qsbr::new(1).expect("qsbr"),
        eal.socket_id(),
    )
    .expect("fib6 without default");
    assert_eq!(fib.lookup(&a("2a00::1")), None);
    let mut one = [0u32];
    fib.lookup_bulk(&[a("2a00::1").octets()], &mut one);
    assert_eq!(one, [LPM6_MISS]);
    assert_eq!(fib.or_default(one[0]), LPM6_MISS);
    assert_eq!(fib.lookup(&a("2001:db8:f000::1")).map(|h| h.neigh), Some(7));

    // Room for `--fib6-routes`: as many /48s as it says, each in a /24 of
    // its own (three tbl8 groups each, shared with none), all fit (sized
    // for twice the config's routes, the table took about 680).
    let (fib, mut room) = Fib6::create(
        "fib6_room",
        &entries,
        FIB6_ROUTES,
        Qsbr::new(1).expect("qsbr"),
        eal.socket_id(),
    )
    .expect("fib6 with room");
    let hop = forward(3, Some("2001:db8:1::fe"), 100, 1500);
    let slash48 = |i: u32| Ipv6Addr::from(0x2a_u128 << 120 | u128::from(i) << 104 | 0x4800 << 80);
    for i in 0..FIB6_ROUTES {
        room.set(slash48(i), 48, hop, Origin::Fpm)
            .unwrap_or_else(|e| panic!("route {i} of {FIB6_ROUTES}: {e}"));
    }
    let last = slash48(FIB6_ROUTES - 1);
    assert_eq!(fib.lookup(&last), Some(hop), "{last}");
}
