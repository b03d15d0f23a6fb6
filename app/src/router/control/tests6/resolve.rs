//! Resolution: queues, solicitations, retries, failure, budgets, probes.

use super::*;
use crate::neigh::scope6;

#[test]
fn a_packet_waits_for_resolution_then_leaves_with_the_advertised_mac() {
    let mut rig = Rig::new();
    let (host, dst) = (a("2001:db8:1::2"), a("2001:db8:2::7"));
    let packet = datagram(host, dst, 63);
    rig.punt(&packet, Punt::Resolve6, 0, 1);
    // A solicitation to the target's solicited-node group, from our
    // address on port 1's subnet, hop limit 255.
    let ns = rig.one_sent(1);
    assert_eq!(ns, neighbor_solicit(P1, a("2001:db8:2::1"), dst, None));
    assert_eq!(&ns[..6], &[0x33, 0x33, 0xff, 0, 0, 7]);
    // A second packet waits too, without another solicitation.
    rig.punt(&packet, Punt::Resolve6, 0, 1);
    assert!(rig.sent().is_empty());
    rig.punt(&advert(dst, NEXT, true, true), Punt::Nd, 1, 1);
    let sent = rig.sent();
    assert_eq!(sent.len(), 2);
    for (port, f) in sent {
        assert_eq!(port, 1);
        assert_eq!(&f[..6], &NEXT);
        assert_eq!(&f[6..12], &P1);
        assert_eq!(&f[12..], &packet[12..], "the packet itself untouched");
    }
    let e = rig.cp.neigh.table().get6(dst).expect("an entry");
    assert_eq!(e.state(), NeighState::Reachable);
    assert_eq!(e.hh().header().ethertype, 0x86dd);
    assert!(rig.cp.pending6.is_empty());
    // Resolved now: the next punt leaves at once.
    rig.punt(&packet, Punt::Resolve6, 0, 1);
    assert_eq!(&rig.one_sent(1)[..6], &NEXT);
}

#[test]
fn a_link_local_next_hop_is_solicited_from_our_link_local_address() {
    let mut rig = Rig::new();
    let gw = a("fe80::77");
    // The table and the queues name it with its port.
    let scoped = scope6(gw, 1);
    rig.cp.neigh.insert_gateway6(scoped).unwrap();
    // On port 1's link (fe80::/10): resolved from fe80::1, the target on
    // the wire as it is.
    rig.cp.start_resolution6(scoped, 1, 3, None, Instant::now());
    rig.cp.solicit6(scoped, Instant::now());
    let ns = rig.one_sent(1);
    assert_eq!(ns, neighbor_solicit(P1, a("fe80::1"), gw, None));
}

#[test]
fn one_link_local_address_on_two_ports_is_two_neighbours() {
    let mut rig = Rig::new();
    let ll = a("fe80::77");
    let (on0, on1) = (scope6(ll, 0), scope6(ll, 1));
    let routers = [(on0, 0, [0x02, 0, 0, 0, 0, 0xa0]), (on1, 1, NEXT)];
    for &(scoped, port, _) in &routers {
        rig.cp.neigh.insert_gateway6(scoped).unwrap();
        rig.cp
            .start_resolution6(scoped, port, 3, None, Instant::now());
        rig.cp.solicit6(scoped, Instant::now());
        let ns = rig.one_sent(port);
        let (mac, ours) = [(P0, a("fe80::ff:fe00:1")), (P1, a("fe80::1"))][usize::from(port)];
        assert_eq!(ns, neighbor_solicit(mac, ours, ll, None), "port {port}");
    }
    // Each link's router answers from its own MAC.
    for &(_, port, mac) in &routers {
        let (our_mac, ours) = [(P0, a("fe80::ff:fe00:1")), (P1, a("fe80::1"))][usize::from(port)];
        let nd = NdRepr::NeighborAdvert {
            router: true,
            solicited: true,
            override_: true,
            target: ll,
            target_ll: Some(mac),
        };
        rig.punt(
            &nd_frame((our_mac, mac), (ll, ours), 255, nd),
            Punt::Nd,
            port,
            port,
        );
    }
    let table = rig.cp.neigh.table().clone();
    for &(scoped, port, mac) in &routers {
        let e = table.get6(scoped).expect("an entry per link");
        assert_eq!(e.state(), NeighState::Reachable, "port {port}");
        assert_eq!(e.hh().header().dst, mac, "port {port}");
    }
    assert!(table.get6(ll).is_none(), "no entry for the bare address");
    assert!(rig.cp.pending6.is_empty());
    let shown = rig.cp.show_neighbours().text;
    assert!(
        shown.contains("fe80::77%0") && shown.contains("fe80::77%1"),
        "{shown}"
    );
}

#[test]
fn a_link_local_static_neighbour_is_deleted_by_its_port_when_two_have_it() {
    let mut rig = Rig::new();
    let ll = a("fe80::77");
    let hdr = |src| crate::neigh::EthHeader {
        dst: NEXT,
        src,
        ethertype: 0x86dd,
    };
    rig.cp
        .neigh
        .insert_static6(scope6(ll, 0), &hdr(P0))
        .unwrap();
    rig.cp
        .neigh
        .insert_static6(scope6(ll, 1), &hdr(P1))
        .unwrap();
    let e = rig.cp.neigh_del6("fe80::77").unwrap_err();
    assert!(e.contains("fe80::77%0, fe80::77%1"), "{e}");
    rig.cp.neigh_del6("fe80::77%1").unwrap();
    assert!(rig.cp.neigh.table().get6(scope6(ll, 1)).is_none());
    // One port has it now: the bare address names it.
    rig.cp.neigh_del6("fe80::77").unwrap();
    assert!(rig.cp.neigh.table().get6(scope6(ll, 0)).is_none());
    let e = rig.cp.neigh_del6("fe80::77%x").unwrap_err();
    assert!(e.contains("not a port number"), "{e}");
}

#[test]
fn silence_retries_with_backoff_then_fails_with_address_unreachable() {
    let mut rig = Rig::new();
    let (host, dst) = (a("2001:db8:1::2"), a("2001:db8:2::9"));
    let packet = datagram(host, dst, 63);
    rig.punt(&packet, Punt::Resolve6, 0, 1);
    assert_eq!(rig.sent().len(), 1);
    let ms = Duration::from_millis;
    let t0 = Instant::now();
    // Retransmit after 250 ms, then 500 ms more: three in all.
    rig.cp.timers(t0 + ms(200));
    assert!(rig.sent().is_empty(), "not before the retransmit time");
    rig.cp.timers(t0 + ms(260));
    assert_eq!(rig.sent().len(), 1);
    rig.cp.timers(t0 + ms(700));
    assert!(rig.sent().is_empty());
    rig.cp.timers(t0 + ms(770));
    assert_eq!(rig.sent().len(), 1);
    assert_eq!(rig.cp.stats.nd_solicits, 3);
    // No answer after the third: failed, the packet dropped and answered.
    rig.cp.timers(t0 + ms(1800));
    let err = rig.one_sent(0);
    let (fields, src, to) = icmp6(&err);
    assert_eq!(
        fields,
        (
            kind::DEST_UNREACHABLE,
            icmpv6::unreachable::ADDRESS_UNREACHABLE,
            0
        )
    );
    assert_eq!((src, to), (a("2001:db8:1::1"), host));
    assert_eq!(&err[..6], &HOST);
    assert_eq!(&err[6..12], &P0);
    assert_eq!(
        &err[HEADER_LEN + 48..],
        &packet[HEADER_LEN..],
        "the packet quoted"
    );
    assert_eq!(rig.dropped(1, DropReason::NeighFailed), 1);
    assert_eq!(rig.cp.stats.neigh_failed, 1);
    assert!(rig.cp.pending6.is_empty());
    assert_eq!(rig.cp.load.total(), 0);
    assert_eq!(rig.cp.queued, 0);
    // Within the hold: dropped and answered at once, no solicitation.
    rig.punt(&packet, Punt::Resolve6, 0, 1);
    let err = rig.one_sent(0);
    assert_eq!(icmp6(&err).0 .1, icmpv6::unreachable::ADDRESS_UNREACHABLE);
    assert_eq!(rig.dropped(1, DropReason::NeighFailed), 2);
}

#[test]
fn a_flood_of_solicitations_fills_nothing_and_a_gateway_still_resolves() {
    let mut rig = Rig::new();
    let ours = a("2001:db8:1::1");
    for n in 0..1000u16 {
        let src = Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 1, n);
        rig.punt(&solicitation(src, ours, 255), Punt::Nd, 0, 0);
    }
    assert_eq!(rig.sent().len(), 1000, "each answered");
    assert!(rig.cp.neigh.table().is_empty(), "none learned");
    // A sweep of on-link destinations takes every resolution it may...
    for n in 0..300u16 {
        let dst = Ipv6Addr::new(0x2001, 0xdb8, 2, 0, 0, 0, 1, n);
        rig.punt(&datagram(a("2001:db8:1::2"), dst, 63), Punt::Resolve6, 0, 1);
    }
    assert!(rig.dropped(1, DropReason::NeighResolveLimit) > 0);
    assert!(rig.cp.load.port(1) <= crate::router::control::policy::PORT_RESOLUTIONS);
    rig.sent();
    // ...and a route's gateway still gets its own.
    let gw = a("2001:db8:2::fe");
    rig.cp.neigh.insert_gateway6(gw).unwrap();
    let limited = rig.dropped(1, DropReason::NeighResolveLimit);
    rig.punt(&datagram(a("2001:db8:1::2"), gw, 63), Punt::Resolve6, 0, 1);
    assert_eq!(rig.dropped(1, DropReason::NeighResolveLimit), limited);
    assert_eq!(
        rig.one_sent(1),
        neighbor_solicit(P1, a("2001:db8:2::1"), gw, None)
    );
    rig.punt(&advert(gw, NEXT, true, true), Punt::Nd, 1, 1);
    assert_eq!(
        rig.cp.neigh.table().get6(gw).unwrap().state(),
        NeighState::Reachable
    );
    assert_eq!(&rig.one_sent(1)[..6], &NEXT);
}

#[test]
fn a_stale_gateway_is_probed_by_unicast_and_confirmed() {
    let mut rig = Rig::new();
    let gw = a("2001:db8:2::fe");
    rig.cp.neigh.insert_gateway6(gw).unwrap();
    rig.punt(&datagram(a("2001:db8:1::2"), gw, 63), Punt::Resolve6, 0, 1);
    rig.punt(&advert(gw, NEXT, true, true), Punt::Nd, 1, 1);
    rig.sent();
    // Past the reachable time: stale (the table's aging), then probed by
    // unicast to its MAC (the RFC's PROBE), still forwarding meanwhile.
    let later = rig.at(Duration::from_secs(40));
    rig.cp.age(later);
    let t = rig.cp.neigh.table().clone();
    let e = t.get6(gw).unwrap();
    assert_eq!(e.state(), NeighState::Stale);
    let probe = rig.one_sent(1);
    assert_eq!(
        probe,
        neighbor_solicit(P1, a("2001:db8:2::1"), gw, Some(NEXT))
    );
    assert_eq!(rig.cp.stats.nd_probes, 1);
    assert!(e.hh_snapshot().is_some(), "still usable while probed");
    let report = rig.cp.describe_neighbours();
    assert!(
        report
            .iter()
            .any(|l| l.starts_with("2001:db8:2::fe ") && l.contains(" Probe")),
        "{report:?}"
    );
    rig.punt(&advert(gw, NEXT, true, false), Punt::Nd, 1, 1);
    assert_eq!(e.state(), NeighState::Reachable);
    assert!(rig.cp.pending6.is_empty(), "the probe ended");
}

#[test]
fn an_unanswered_probe_fails_the_neighbour_and_aging_reclaims_it() {
    let mut rig = Rig::new();
    let n = a("2001:db8:2::7");
    rig.punt(&datagram(a("2001:db8:1::2"), n, 63), Punt::Resolve6, 0, 1);
    rig.punt(&advert(n, NEXT, true, true), Punt::Nd, 1, 1);
    rig.sent();
    let t = rig.cp.neigh.table().clone();
    let i = t.lookup6(n).unwrap();
    // Stale after the reachable time; learned lately: probed.
    let at = rig.at(Duration::from_secs(40));
    rig.cp.age(at);
    assert_eq!(
        rig.one_sent(1),
        neighbor_solicit(P1, a("2001:db8:2::1"), n, Some(NEXT))
    );
    // Silence through every probe: failed, its header no longer used.
    for s in 1..=4 {
        rig.cp.timers(at + Duration::from_secs(s));
    }
    assert_eq!(rig.sent().len(), 2, "the second and third probes");
    assert_eq!(rig.cp.stats.nd_probes, 3);
    assert_eq!(t.entry(i).state(), NeighState::Failed);
    assert!(t.entry(i).hh_snapshot().is_none());
    // The next aging round reclaims it (a learned neighbour, no route's).
    rig.cp.age(at + Duration::from_secs(6));
    assert_eq!(t.lookup6(n), None);
    assert_eq!(rig.cp.stats.neigh_reclaimed, 1);
    assert!(t.is_empty());
}
