//! Solicitations answered, advertisements and solicitations learned from
//! under the hardening.

use super::*;

#[test]
fn a_solicitation_for_our_global_address_is_answered_and_learns_nothing() {
    let mut rig = Rig::new();
    let (host, ours) = (a("2001:db8:1::2"), a("2001:db8:1::1"));
    rig.punt(&solicitation(host, ours, 255), Punt::Nd, 0, 0);
    let na = rig.one_sent(0);
    assert_eq!(na, neighbor_advert(P0, ours, host, HOST, true));
    assert_eq!(na[HEADER_LEN + 40 + 4], 0xe0, "router, solicited, override");
    // Nothing asked for the host: no entry (ARP's hardening).
    assert!(rig.cp.neigh.table().is_empty());
    assert_eq!(rig.cp.stats.nd_not_learned, 1);
    assert_eq!(rig.cp.stats.nd_adverts, 1);
    assert_eq!(rig.counters.snapshot()[0].consumed, 1);
}

#[test]
fn a_solicitation_for_our_link_local_address_is_answered_from_it() {
    let mut rig = Rig::new();
    let (host, ours) = (a("fe80::42"), a("fe80::ff:fe00:1"));
    rig.punt(&solicitation(host, ours, 255), Punt::Nd, 0, 0);
    let na = rig.one_sent(0);
    assert_eq!(na, neighbor_advert(P0, ours, host, HOST, true));
    let (_, src, dst) = icmp6(&na);
    assert_eq!((src, dst), (ours, host));
}

#[test]
fn duplicate_address_detection_of_our_address_is_answered_to_all_nodes() {
    let mut rig = Rig::new();
    let ours = a("2001:db8:1::1");
    rig.punt(
        &solicitation(Ipv6Addr::UNSPECIFIED, ours, 255),
        Punt::Nd,
        0,
        0,
    );
    let na = rig.one_sent(0);
    assert_eq!(
        na,
        neighbor_advert(P0, ours, ALL_NODES, multicast_mac(ALL_NODES), false)
    );
    assert_eq!(&na[..6], &[0x33, 0x33, 0, 0, 0, 1]);
    assert_eq!(
        na[HEADER_LEN + 40 + 4],
        0xa0,
        "router, override; not solicited"
    );
}

#[test]
fn solicitations_that_fail_a_check_are_dropped_with_their_reason() {
    let mut rig = Rig::new();
    let ours = a("2001:db8:1::1");
    let cases = [
        (
            solicitation(a("2001:db8:1::2"), ours, 254),
            DropReason::NdHopLimitNot255,
        ),
        (
            solicitation(a("2001:db8:1::2"), a("2001:db8:1::9"), 255),
            DropReason::NdTargetNotOurs,
        ),
        // Port 1's address asked on port 0.
        (
            solicitation(a("2001:db8:1::2"), a("2001:db8:2::1"), 255),
            DropReason::NdTargetNotOurs,
        ),
        // From off the link, or from our own address.
        (
            solicitation(a("2001:db8:9::2"), ours, 255),
            DropReason::NdBadSource,
        ),
        (solicitation(ours, ours, 255), DropReason::NdBadSource),
    ];
    for (frame, reason) in &cases {
        let before = rig.dropped(0, *reason);
        rig.punt(frame, Punt::Nd, 0, 0);
        assert_eq!(rig.dropped(0, *reason), before + 1, "{reason:?}");
    }
    // A multicast source link-layer address.
    let group = solicited_node(ours);
    let nd = NdRepr::NeighborSolicit {
        target: ours,
        source_ll: Some(multicast_mac(ALL_NODES)),
    };
    let f = nd_frame(
        (multicast_mac(group), HOST),
        (a("2001:db8:1::2"), group),
        255,
        nd,
    );
    rig.punt(&f, Punt::Nd, 0, 0);
    assert_eq!(rig.dropped(0, DropReason::NdBadSource), 3);
    assert!(rig.sent().is_empty(), "nothing answered");
    assert_eq!(rig.cp.stats.nd_address_conflicts, 1);
}

#[test]
fn an_unsolicited_advertisement_creates_no_entry() {
    let mut rig = Rig::new();
    rig.punt(
        &advert(a("2001:db8:2::7"), NEXT, false, true),
        Punt::Nd,
        1,
        1,
    );
    rig.punt(
        &advert(a("2001:db8:2::8"), NEXT, true, true),
        Punt::Nd,
        1,
        1,
    );
    assert!(rig.cp.neigh.table().is_empty());
    assert_eq!(rig.cp.stats.nd_not_learned, 2);
    assert!(rig.sent().is_empty());
}

#[test]
fn advertisements_follow_rfc_4861_7_2_5() {
    let mut rig = Rig::new();
    let n = a("2001:db8:2::7");
    rig.punt(&datagram(a("2001:db8:1::2"), n, 63), Punt::Resolve6, 0, 1);
    rig.punt(&advert(n, NEXT, true, true), Punt::Nd, 1, 1);
    rig.sent();
    let t = rig.cp.neigh.table().clone();
    let e = t.get6(n).unwrap();
    // Another MAC without override: reachable goes stale, MAC kept.
    rig.punt(&advert(n, HOST, true, false), Punt::Nd, 1, 1);
    assert_eq!(e.state(), NeighState::Stale);
    assert_eq!(e.hh().header().dst, NEXT);
    // Solicited, same MAC: reachable again.
    rig.punt(&advert(n, NEXT, true, false), Punt::Nd, 1, 1);
    assert_eq!(e.state(), NeighState::Reachable);
    // Unsolicited with override and another MAC: the MAC, stale.
    rig.punt(&advert(n, HOST, false, true), Punt::Nd, 1, 1);
    assert_eq!(e.state(), NeighState::Stale);
    assert_eq!(e.hh().header().dst, HOST);
    // A solicitation with a source link-layer address from a known
    // neighbour updates it, stale.
    let nd = NdRepr::NeighborSolicit {
        target: a("2001:db8:2::1"),
        source_ll: Some(NEXT),
    };
    let group = solicited_node(a("2001:db8:2::1"));
    rig.punt(
        &nd_frame((multicast_mac(group), NEXT), (n, group), 255, nd),
        Punt::Nd,
        1,
        1,
    );
    assert_eq!(e.hh().header().dst, NEXT);
    assert_eq!(e.state(), NeighState::Stale);
    assert_eq!(
        rig.one_sent(1),
        neighbor_advert(P1, a("2001:db8:2::1"), n, NEXT, true)
    );
    // An advertisement of our own address: a conflict, nothing learned.
    rig.punt(
        &advert(a("2001:db8:2::1"), HOST, false, true),
        Punt::Nd,
        1,
        1,
    );
    assert_eq!(rig.cp.stats.nd_address_conflicts, 1);
    assert!(t.get6(a("2001:db8:2::1")).is_none());
}

#[test]
fn a_solicitation_from_a_neighbour_being_resolved_sends_its_queue() {
    // RFC 4861 7.2.3: its source link-layer address resolves it, stale.
    let mut rig = Rig::new();
    let (n, ours) = (a("2001:db8:2::7"), a("2001:db8:2::1"));
    let packet = datagram(a("2001:db8:1::2"), n, 63);
    rig.punt(&packet, Punt::Resolve6, 0, 1);
    assert_eq!(rig.sent().len(), 1, "our solicitation");
    let group = solicited_node(ours);
    let nd = NdRepr::NeighborSolicit {
        target: ours,
        source_ll: Some(NEXT),
    };
    let ns = nd_frame((multicast_mac(group), NEXT), (n, group), 255, nd);
    rig.punt(&ns, Punt::Nd, 1, 1);
    let sent = rig.sent();
    assert_eq!(sent.len(), 2, "{sent:02x?}");
    assert_eq!(sent[0].1[..12], [NEXT, P1].concat()[..], "the packet");
    assert_eq!(&sent[0].1[12..], &packet[12..]);
    assert_eq!(sent[1].1, neighbor_advert(P1, ours, n, NEXT, true));
    let e = rig.cp.neigh.table().get6(n).unwrap();
    assert_eq!(e.state(), NeighState::Stale);
    assert!(rig.cp.pending6.is_empty());
}
