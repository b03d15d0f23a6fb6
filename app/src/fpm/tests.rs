//! FPM frames built with `netlink-packet-route` (as zebra sends them),
//! through the parser and the RIB into a FIB stand-in.

use super::build::*;
use super::frame::{frame, parse_header, read_frame, Read1};
use super::parse::{parse_frame, Change, NexthopDef, Path, Via};
use super::rib::{Event, FibSink, FpmRib};
use super::stats::{Count, FpmStats};
use super::FpmServer;
use crate::fib::{Origin, MAX_PATHS};
use netlink_packet_route::route::{RouteAttribute, RouteProtocol, RouteType};
use netlink_packet_route::RouteNetlinkMessage;
use std::collections::BTreeMap;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn a(s: &str) -> Ipv4Addr {
    s.parse().unwrap()
}

fn a6(s: &str) -> Ipv6Addr {
    s.parse().unwrap()
}

type Installed = (Origin, Vec<(Ipv4Addr, usize)>);
type Installed6 = (Origin, Vec<(Ipv6Addr, usize)>);

/// The FIB as a map per family; ports 0 and 1 hold 10.0.1.0/24 and
/// 10.0.2.0/24, 2001:db8:1::/64 and 2001:db8:2::/64.
#[derive(Default)]
struct Fib {
    routes: BTreeMap<(Ipv4Addr, u8), Installed>,
    routes6: BTreeMap<(Ipv6Addr, u8), Installed6>,
    log: Vec<String>,
    full: bool,
}

impl FibSink for Fib {
    fn origin(&self, p: IpAddr, l: u8) -> Option<Origin> {
        match p {
            IpAddr::V4(p) => self.routes.get(&(p, l)).map(|r| r.0.clone()),
            IpAddr::V6(p) => self.routes6.get(&(p, l)).map(|r| r.0.clone()),
        }
    }
    /// Port 1's kernel interface has index 12.
    fn port_of_interface(&self, oif: u32) -> Option<usize> {
        (oif == 12).then_some(1)
    }
    fn port_of(&self, g: IpAddr) -> Option<usize> {
        match g {
            IpAddr::V4(g) => match g.octets() {
                [10, 0, 1, _] => Some(0),
                [10, 0, 2, _] => Some(1),
                _ => None,
            },
            IpAddr::V6(g) => match g.segments() {
                [0x2001, 0xdb8, 1, 0, ..] => Some(0),
                [0x2001, 0xdb8, 2, 0, ..] => Some(1),
                _ => None,
            },
        }
    }
    fn set(&mut self, p: IpAddr, l: u8, hops: &[(IpAddr, usize)]) -> Result<(), String> {
        if self.full {
            return Err("the FIB's next-hop slots: all 4096 in use".into());
        }
        self.log.push(format!("set {p}/{l}"));
        match p {
            IpAddr::V4(p) => {
                let hops = hops.iter().map(|&(g, port)| match g {
                    IpAddr::V4(g) => Ok((g, port)),
                    IpAddr::V6(g) => Err(format!("{g} in an IPv4 route")),
                });
                let hops = hops.collect::<Result<_, _>>()?;
                self.routes.insert((p, l), (Origin::Fpm, hops));
            }
            IpAddr::V6(p) => {
                let hops = hops.iter().map(|&(g, port)| match g {
                    IpAddr::V6(g) => Ok((g, port)),
                    IpAddr::V4(g) => Err(format!("{g} in an IPv6 route")),
                });
                let hops = hops.collect::<Result<_, _>>()?;
                self.routes6.insert((p, l), (Origin::Fpm, hops));
            }
        }
        Ok(())
    }
    fn remove(&mut self, p: IpAddr, l: u8) -> Result<(), String> {
        self.log.push(format!("del {p}/{l}"));
        match p {
            IpAddr::V4(p) => self.routes.remove(&(p, l)).map(|_| ()),
            IpAddr::V6(p) => self.routes6.remove(&(p, l)).map(|_| ()),
        };
        Ok(())
    }
}

impl Fib {
    fn hops(&self, p: &str, l: u8) -> Option<Vec<Ipv4Addr>> {
        self.routes
            .get(&(a(p), l))
            .map(|r| r.1.iter().map(|h| h.0).collect())
    }
    fn hops6(&self, p: &str, l: u8) -> Option<Vec<(Ipv6Addr, usize)>> {
        self.routes6.get(&(a6(p), l)).map(|r| r.1.clone())
    }
}

struct Rig {
    rib: FpmRib,
    fib: Fib,
    stats: Arc<FpmStats>,
    now: Instant,
}

impl Rig {
    fn new() -> Rig {
        let stats = Arc::new(FpmStats::default());
        let mut r = Rig {
            rib: FpmRib::new(Duration::from_secs(10), stats.clone()),
            fib: Fib::default(),
            stats,
            now: Instant::now(),
        };
        r.events(vec![Event::Connected(1)]);
        r
    }
    fn events(&mut self, ev: Vec<Event>) {
        self.rib.apply(ev, self.now, &mut self.fib);
    }
    /// One frame of `messages` on session `s`.
    fn frame_on(&mut self, s: u64, messages: &[Vec<u8>]) {
        let f = frame_of(messages);
        let parsed = parse_frame(&f[4..]).expect("a frame zebra could send");
        self.stats.count_parsed(&parsed);
        self.events(vec![Event::Frame(s, parsed)]);
    }
    fn frame(&mut self, messages: &[Vec<u8>]) {
        self.frame_on(1, messages)
    }
}

#[test]
fn header_version_type_and_length_are_checked() {
    assert_eq!(parse_header([1, 1, 0, 4]), Ok(0));
    assert_eq!(parse_header([1, 1, 1, 0]), Ok(252));
    assert_eq!(parse_header([2, 1, 0, 8]).unwrap_err().0, Count::BadVersion);
    assert_eq!(parse_header([1, 2, 0, 8]).unwrap_err().0, Count::BadType);
    assert_eq!(parse_header([1, 1, 0, 3]).unwrap_err().0, Count::BadLength);
    let f = frame(&[9, 9]);
    assert_eq!(&f[..4], &[1, 1, 0, 6]);
    let mut r = &f[..];
    assert!(matches!(read_frame(&mut r).unwrap(), Read1::Body(b) if b == [9, 9]));
    assert!(matches!(read_frame(&mut r).unwrap(), Read1::Closed));
}

#[test]
fn route_add_and_del_with_an_inline_gateway() {
    let f = frame_of(&[new_route(a("198.51.100.0"), 24, via(a("10.0.2.2"), 3))]);
    let p = parse_frame(&f[4..]).unwrap();
    assert_eq!(
        p.changes,
        vec![Change::RouteSet {
            prefix: IpAddr::V4(a("198.51.100.0")),
            len: 24,
            via: Via::Paths(vec![Path {
                gateway: Some(IpAddr::V4(a("10.0.2.2"))),
                oif: 3
            }])
        }]
    );
    let mut r = Rig::new();
    r.frame(&[new_route(a("198.51.100.0"), 24, via(a("10.0.2.2"), 3))]);
    assert_eq!(r.fib.hops("198.51.100.0", 24), Some(vec![a("10.0.2.2")]));
    assert_eq!(
        r.fib.routes[&(a("198.51.100.0"), 24)].1[0].1,
        1,
        "port 1 holds 10.0.2.0/24"
    );
    assert_eq!(r.stats.get(Count::RoutesAdded), 1);
    r.frame(&[del_route(a("198.51.100.0"), 24)]);
    assert_eq!(r.fib.hops("198.51.100.0", 24), None);
    assert_eq!(r.stats.get(Count::RoutesRemoved), 1);
    assert!(r.rib.is_empty());
}

#[test]
fn the_default_route_has_no_destination_attribute() {
    let mut m = route_message(
        IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        0,
        254,
        via(a("10.0.1.9"), 2),
    );
    m.attributes
        .retain(|x| !matches!(x, RouteAttribute::Destination(_)));
    let msg = netlink(super::message::FpmNetlink::Route(
        RouteNetlinkMessage::NewRoute(m),
    ));
    let mut r = Rig::new();
    r.frame(&[msg]);
    assert_eq!(r.fib.hops("0.0.0.0", 0), Some(vec![a("10.0.1.9")]));
}

#[test]
fn next_hop_groups_route_by_id_and_follow_their_changes() {
    let mut r = Rig::new();
    r.frame(&[
        new_nexthop(11, a("10.0.1.2"), 2),
        new_nexthop(12, a("10.0.2.2"), 3),
        new_group(20, &[11, 12]),
        new_route(a("203.0.113.0"), 24, vec![RouteAttribute::NhId(20)]),
        new_route(a("192.0.2.0"), 24, vec![RouteAttribute::NhId(11)]),
    ]);
    assert_eq!(
        r.fib.hops("203.0.113.0", 24),
        Some(vec![a("10.0.1.2"), a("10.0.2.2")])
    );
    assert_eq!(r.fib.hops("192.0.2.0", 24), Some(vec![a("10.0.1.2")]));
    // A member moves: both routes that use it follow, in one batch.
    r.fib.log.clear();
    r.frame(&[new_nexthop(11, a("10.0.1.3"), 2)]);
    assert_eq!(
        r.fib.hops("203.0.113.0", 24),
        Some(vec![a("10.0.1.3"), a("10.0.2.2")])
    );
    assert_eq!(r.fib.hops("192.0.2.0", 24), Some(vec![a("10.0.1.3")]));
    assert_eq!(r.fib.log, ["set 192.0.2.0/24", "set 203.0.113.0/24"]);
    // The group shrinks.
    r.frame(&[new_group(20, &[12])]);
    assert_eq!(r.fib.hops("203.0.113.0", 24), Some(vec![a("10.0.2.2")]));
    // A route naming an id never sent is not installed, and said.
    r.frame(&[new_route(
        a("198.18.0.0"),
        15,
        vec![RouteAttribute::NhId(99)],
    )]);
    assert_eq!(r.fib.hops("198.18.0.0", 15), None);
    assert_eq!(r.stats.get(Count::UnknownNexthop), 1);
    // Deleting a next hop its route still names takes the route out.
    r.frame(&[del_nexthop(11)]);
    assert_eq!(r.fib.hops("192.0.2.0", 24), None);
    assert_eq!(r.stats.get(Count::NexthopsRemoved), 1);
}

#[test]
fn multipath_routes_are_ecmp_up_to_the_fib_width_and_the_rest_is_counted() {
    let mut r = Rig::new();
    r.frame(&[new_route(
        a("203.0.113.0"),
        24,
        multipath(&[a("10.0.1.2"), a("10.0.2.2"), a("172.16.0.1")]),
    )]);
    assert_eq!(
        r.fib.hops("203.0.113.0", 24),
        Some(vec![a("10.0.1.2"), a("10.0.2.2")])
    );
    assert_eq!(
        r.stats.get(Count::NoPort),
        1,
        "172.16.0.1 is in no port's subnet"
    );
    let wide: Vec<Ipv4Addr> = (1..=20).map(|i| Ipv4Addr::new(10, 0, 1, i)).collect();
    r.frame(&[new_route(a("198.51.100.0"), 24, multipath(&wide))]);
    assert_eq!(r.fib.hops("198.51.100.0", 24).unwrap().len(), MAX_PATHS);
    assert_eq!(r.stats.get(Count::EcmpCut), (20 - MAX_PATHS) as u64);
}

#[test]
fn a_delete_and_add_in_one_frame_is_one_replace() {
    let mut r = Rig::new();
    r.frame(&[new_route(a("198.51.100.0"), 24, via(a("10.0.1.2"), 2))]);
    r.fib.log.clear();
    // FRR 8.4's update: RTM_DELROUTE then RTM_NEWROUTE in one frame.
    r.frame(&[
        del_route(a("198.51.100.0"), 24),
        new_route(a("198.51.100.0"), 24, via(a("10.0.2.2"), 3)),
    ]);
    assert_eq!(r.fib.log, ["set 198.51.100.0/24"], "no delete: no gap");
    assert_eq!(r.fib.hops("198.51.100.0", 24), Some(vec![a("10.0.2.2")]));
    assert_eq!(r.stats.get(Count::RoutesReplaced), 1);
    assert_eq!(r.stats.get(Count::RoutesRemoved), 0);
}

#[test]
fn a_malformed_message_rejects_its_whole_frame() {
    let good = new_route(a("198.51.100.0"), 24, via(a("10.0.1.2"), 2));
    // Host bits set: decodes, but makes no route.
    let host_bits = new_route(a("203.0.113.7"), 24, via(a("10.0.1.2"), 2));
    let e = parse_frame(&[good.clone(), host_bits].concat()).unwrap_err();
    assert_eq!(e.kind, Count::BadAttribute);
    assert!(e.detail.contains("host bits"), "{}", e.detail);
    // A netlink length past the frame's end.
    let mut cut = good.clone();
    cut.truncate(good.len() - 4);
    let e = parse_frame(&[good.clone(), cut].concat()).unwrap_err();
    assert_eq!(e.kind, Count::MalformedNetlink);
    // An attribute whose length runs past its message.
    let mut bad = good.clone();
    let at = 16 + 12; // netlink header, rtmsg: the first attribute
    bad[at..at + 2].copy_from_slice(&200u16.to_ne_bytes());
    let e = parse_frame(&bad).unwrap_err();
    assert_eq!(e.kind, Count::MalformedNetlink, "{}", e.detail);
    // A route with no next hop.
    let e = parse_frame(&new_route(a("198.51.100.0"), 24, vec![])).unwrap_err();
    assert_eq!(e.kind, Count::BadAttribute);
    // A next hop without an id.
    let m = netlink(super::message::FpmNetlink::NewNexthop(Default::default()));
    assert_eq!(parse_frame(&m).unwrap_err().kind, Count::BadAttribute);
}

#[test]
fn unknown_types_other_tables_and_kernel_routes_are_skipped_and_counted() {
    let mut link = new_route(a("198.51.100.0"), 24, via(a("10.0.1.2"), 2));
    link[4..6].copy_from_slice(&16u16.to_ne_bytes()); // RTM_NEWLINK
    let mut kernel6 = route_message(
        IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 0)),
        64,
        254,
        vec![RouteAttribute::Oif(2)],
    );
    kernel6.header.protocol = RouteProtocol::Kernel;
    let kernel6 = netlink(super::message::FpmNetlink::Route(
        RouteNetlinkMessage::NewRoute(kernel6),
    ));
    let other_table = netlink(super::message::FpmNetlink::Route(
        RouteNetlinkMessage::NewRoute(route_message(
            IpAddr::V4(a("192.0.2.0")),
            24,
            10,
            via(a("10.0.1.2"), 2),
        )),
    ));
    let mut kernel = route_message(
        IpAddr::V4(a("10.0.1.0")),
        24,
        254,
        vec![RouteAttribute::Oif(2)],
    );
    kernel.header.protocol = RouteProtocol::Kernel;
    let kernel = netlink(super::message::FpmNetlink::Route(
        RouteNetlinkMessage::NewRoute(kernel),
    ));
    let mut local = route_message(
        IpAddr::V4(a("10.0.1.1")),
        32,
        254,
        vec![RouteAttribute::Oif(2)],
    );
    local.header.kind = RouteType::Local;
    let local = netlink(super::message::FpmNetlink::Route(
        RouteNetlinkMessage::NewRoute(local),
    ));
    let good = new_route(a("198.51.100.0"), 24, via(a("10.0.1.2"), 2));
    let p = parse_frame(&[link, kernel6, other_table, kernel, local, good].concat()).unwrap();
    assert_eq!(p.messages, 6);
    assert_eq!(
        p.skipped,
        vec![
            Count::UnknownMessage,
            Count::OwnRoute,
            Count::OtherTable,
            Count::OwnRoute,
            Count::OwnRoute
        ]
    );
    assert_eq!(p.changes.len(), 1);
}

#[test]
fn ipv6_routes_take_one_path_in_a_port_subnet_and_are_swept_like_ipv4() {
    let p = a6("2001:db8:99::");
    let parsed = parse_frame(&frame_of(&[new_route(p, 48, via(a6("2001:db8:2::2"), 3))])[4..]);
    assert_eq!(
        parsed.unwrap().changes,
        vec![Change::RouteSet {
            prefix: IpAddr::V6(p),
            len: 48,
            via: Via::Paths(vec![Path {
                gateway: Some(IpAddr::V6(a6("2001:db8:2::2"))),
                oif: 3
            }])
        }]
    );
    let mut r = Rig::new();
    r.frame(&[new_route(p, 48, via(a6("2001:db8:2::2"), 3))]);
    assert_eq!(
        r.fib.hops6("2001:db8:99::", 48),
        Some(vec![(a6("2001:db8:2::2"), 1)])
    );
    assert_eq!(r.stats.get(Count::RoutesAdded), 1);
    // ECMP: the IPv6 FIB holds one path, the other is cut and counted.
    let two = multipath(&[a6("2001:db8:1::2"), a6("2001:db8:2::2")]);
    r.frame(&[new_route(p, 48, two)]);
    assert_eq!(
        r.fib.hops6("2001:db8:99::", 48),
        Some(vec![(a6("2001:db8:1::2"), 0)])
    );
    assert_eq!(r.stats.get(Count::EcmpCut), 1);
    assert_eq!(r.stats.get(Count::RoutesReplaced), 1);
    // A delete and an add of the prefix in one frame: one replace, no gap.
    r.fib.log.clear();
    r.frame(&[
        del_route(p, 48),
        new_route(p, 48, via(a6("2001:db8:2::3"), 3)),
    ]);
    assert_eq!(r.fib.log, vec!["set 2001:db8:99::/48"]);
    // By a next-hop group of IPv6 next hops.
    r.frame(&[
        new_nexthop(61, a6("2001:db8:2::61"), 3),
        new_group(60, &[61]),
        new_route(a6("2001:db8:60::"), 48, vec![RouteAttribute::NhId(60)]),
    ]);
    assert_eq!(
        r.fib.hops6("2001:db8:60::", 48),
        Some(vec![(a6("2001:db8:2::61"), 1)])
    );
    // A link-local gateway's port is the one whose kernel interface zebra
    // names.
    r.frame(&[new_route(a6("2001:db8:66::"), 48, via(a6("fe80::2"), 12))]);
    assert_eq!(
        r.fib.hops6("2001:db8:66::", 48),
        Some(vec![(a6("fe80::2"), 1)])
    );
    // No port for a link-local gateway out of an interface that is not a
    // port's, or for an IPv4 next hop of an IPv6 route: nothing installed.
    let q = a6("2001:db8:77::");
    r.frame(&[new_route(q, 48, via(a6("fe80::2"), 3))]);
    r.frame(&[
        new_nexthop(71, a("10.0.2.2"), 3),
        new_route(q, 48, vec![RouteAttribute::NhId(71)]),
    ]);
    assert_eq!(r.fib.hops6("2001:db8:77::", 48), None);
    assert_eq!(r.stats.get(Count::NoPort), 2);
    // An IPv4 RTA_GATEWAY in an IPv6 route does not decode: the frame is
    // rejected whole.
    let mixed = frame_of(&[new_route(q, 48, via(a("10.0.2.2"), 3))]);
    assert!(parse_frame(&mixed[4..]).is_err());
    // The same prefix text in the other family is another route.
    r.frame(&[new_route(a("198.51.100.0"), 24, via(a("10.0.2.2"), 3))]);
    assert_eq!((r.fib.routes.len(), r.fib.routes6.len()), (1, 3));
    // Withdrawn, and the rest swept after a disconnect.
    r.frame(&[del_route(p, 48)]);
    assert_eq!(r.fib.hops6("2001:db8:99::", 48), None);
    r.events(vec![Event::Disconnected(1)]);
    r.rib.tick(r.now + Duration::from_secs(10), &mut r.fib);
    assert!(r.fib.routes6.is_empty() && r.fib.routes.is_empty());
}

#[test]
fn ipv6_routes_with_bad_lengths_host_bits_or_families_reject_the_frame() {
    let bad = |m: Vec<u8>| parse_frame(&frame_of(&[m])[4..]).unwrap_err().kind;
    let gw = via(a6("2001:db8:2::2"), 3);
    assert_eq!(
        bad(new_route(a6("2001:db8:99::"), 129, gw.clone())),
        Count::BadAttribute
    );
    assert_eq!(
        bad(new_route(a6("2001:db8:99::1"), 48, gw.clone())),
        Count::BadAttribute
    );
    let mut mixed = route_message(IpAddr::V6(a6("2001:db8:99::")), 48, 254, gw);
    mixed.header.address_family = netlink_packet_route::AddressFamily::Inet;
    let mixed = netlink(super::message::FpmNetlink::Route(
        RouteNetlinkMessage::NewRoute(mixed),
    ));
    // (netlink-packet-route may already refuse a 16-byte RTA_DST in AF_INET.)
    assert!(matches!(
        bad(mixed),
        Count::BadAttribute | Count::MalformedNetlink
    ));
    // The default route ::/0 comes without RTA_DST.
    let mut default = route_message(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0, 254, vec![]);
    default.attributes = via(a6("2001:db8:2::2"), 3);
    let default = netlink(super::message::FpmNetlink::Route(
        RouteNetlinkMessage::NewRoute(default),
    ));
    let p = parse_frame(&frame_of(&[default])[4..]).unwrap();
    assert!(matches!(
        p.changes[..],
        [Change::RouteSet { prefix: IpAddr::V6(a), len: 0, .. }] if a.is_unspecified()
    ));
}

#[test]
fn a_blackhole_route_withdraws_the_prefix() {
    let mut r = Rig::new();
    r.frame(&[new_route(a("198.51.100.0"), 24, via(a("10.0.1.2"), 2))]);
    let mut bh = route_message(IpAddr::V4(a("198.51.100.0")), 24, 254, vec![]);
    bh.header.kind = RouteType::BlackHole;
    r.frame(&[netlink(super::message::FpmNetlink::Route(
        RouteNetlinkMessage::NewRoute(bh),
    ))]);
    assert_eq!(r.fib.hops("198.51.100.0", 24), None);
    assert_eq!(r.stats.get(Count::NotUnicast), 1);
}

#[test]
fn config_and_ctl_routes_win_and_the_fpm_route_takes_over_when_they_go() {
    let mut r = Rig::new();
    let ctl = (Origin::Ctl, vec![(a("10.0.1.50"), 0)]);
    r.fib.routes.insert((a("198.51.100.0"), 24), ctl.clone());
    r.fib
        .routes
        .insert((a("10.0.1.0"), 24), (Origin::Connected(0), vec![]));
    r.frame(&[
        new_route(a("198.51.100.0"), 24, via(a("10.0.2.2"), 3)),
        new_route(a("10.0.1.0"), 24, via(a("10.0.2.2"), 3)),
    ]);
    assert_eq!(r.fib.routes[&(a("198.51.100.0"), 24)], ctl, "ctl wins");
    assert_eq!(r.stats.get(Count::Shadowed), 1);
    assert_eq!(r.stats.get(Count::FixedPrefix), 1);
    assert_eq!(r.fib.routes[&(a("10.0.1.0"), 24)].0, Origin::Connected(0));
    // zebra withdraws: the ctl route stays.
    r.frame(&[del_route(a("198.51.100.0"), 24)]);
    assert_eq!(r.fib.routes[&(a("198.51.100.0"), 24)], ctl);
    // zebra sends it again; ctl deletes its route: zebra's takes the prefix.
    r.frame(&[new_route(a("198.51.100.0"), 24, via(a("10.0.2.2"), 3))]);
    r.fib.routes.remove(&(a("198.51.100.0"), 24));
    r.rib
        .resync(Some((a("198.51.100.0").into(), 24)), &mut r.fib);
    assert_eq!(r.fib.hops("198.51.100.0", 24), Some(vec![a("10.0.2.2")]));
    assert_eq!(r.fib.routes[&(a("198.51.100.0"), 24)].0, Origin::Fpm);
    // A reload that adds a config route over it, then drops it again.
    r.fib
        .routes
        .insert((a("198.51.100.0"), 24), (Origin::Config, vec![]));
    r.fib.routes.remove(&(a("198.51.100.0"), 24));
    r.rib.resync(None, &mut r.fib);
    assert_eq!(r.fib.routes[&(a("198.51.100.0"), 24)].0, Origin::Fpm);
}

#[test]
fn a_refusing_fib_is_counted_and_the_rib_keeps_the_route() {
    let mut r = Rig::new();
    r.fib.full = true;
    r.frame(&[new_route(a("198.51.100.0"), 24, via(a("10.0.1.2"), 2))]);
    assert_eq!(r.stats.get(Count::FibRefused), 1);
    assert_eq!(r.rib.len(), 1);
    r.fib.full = false;
    r.rib.resync(None, &mut r.fib);
    assert!(r.fib.hops("198.51.100.0", 24).is_some());
}

#[test]
fn after_a_disconnect_stale_routes_forward_until_the_hold_time_unless_replayed() {
    let mut r = Rig::new();
    r.frame(&[
        new_nexthop(11, a("10.0.1.2"), 2),
        new_route(a("198.51.100.0"), 24, vec![RouteAttribute::NhId(11)]),
        new_route(a("203.0.113.0"), 24, vec![RouteAttribute::NhId(11)]),
    ]);
    r.events(vec![Event::Disconnected(1)]);
    assert!(!r.stats.connected());
    assert_eq!(r.rib.stale(), 2);
    assert_eq!(r.fib.routes.len(), 2, "stale routes keep forwarding");
    // A frame of the old session after it ended changes nothing.
    r.frame_on(1, &[del_route(a("198.51.100.0"), 24)]);
    assert_eq!(r.fib.routes.len(), 2);
    // zebra comes back 5 s later and replays one of the two.
    r.now += Duration::from_secs(5);
    r.events(vec![Event::Connected(2)]);
    r.frame_on(
        2,
        &[
            new_nexthop(11, a("10.0.1.2"), 2),
            new_route(a("198.51.100.0"), 24, vec![RouteAttribute::NhId(11)]),
        ],
    );
    assert_eq!(r.rib.stale(), 1);
    // The hold counts from the reconnect: nothing goes at 10 s.
    r.rib.tick(r.now + Duration::from_secs(9), &mut r.fib);
    assert_eq!(r.fib.routes.len(), 2);
    r.rib.tick(r.now + Duration::from_secs(10), &mut r.fib);
    assert_eq!(r.fib.hops("198.51.100.0", 24), Some(vec![a("10.0.1.2")]));
    assert_eq!(r.fib.hops("203.0.113.0", 24), None, "not replayed: swept");
    assert_eq!(r.stats.get(Count::RoutesSwept), 1);
    assert_eq!(r.rib.stale(), 0);
    assert_eq!(r.rib.sweep_at(), None);
}

#[test]
fn the_answer_is_a_function_of_the_bytes() {
    let f = frame_of(&[
        new_group(20, &[11, 12]),
        del_route(a("198.51.100.0"), 24),
        new_route(a("198.51.100.0"), 24, multipath(&[a("10.0.1.2")])),
    ]);
    assert_eq!(parse_frame(&f[4..]), parse_frame(&f[4..]));
    let p = parse_frame(&f[4..]).unwrap();
    assert!(
        matches!(&p.changes[0], Change::NexthopSet { id: 20, def: NexthopDef::Group(m) } if m == &[11, 12])
    );
}

/// Wait (polling) until `f` holds, at most 10 s.
fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let end = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn the_listener_reads_frames_survives_bad_ones_and_a_new_connection_replaces_the_old() {
    let server = FpmServer::start("127.0.0.1:0".parse().unwrap()).unwrap();
    let mut events = Vec::new();
    let take = |events: &mut Vec<Event>, n: usize| {
        wait_for("events", || {
            events.extend(server.drain(16));
            events.len() >= n
        });
    };
    let mut c1 = std::net::TcpStream::connect(server.local).unwrap();
    let route = frame_of(&[new_route(a("198.51.100.0"), 24, via(a("10.0.1.2"), 2))]);
    // A frame that does not parse, then a good one.
    c1.write_all(&frame(&[1, 2, 3])).unwrap();
    c1.write_all(&route).unwrap();
    take(&mut events, 2);
    assert!(matches!(events[0], Event::Connected(1)));
    assert!(matches!(&events[1], Event::Frame(1, p) if p.changes.len() == 1));
    assert_eq!(server.stats.get(Count::MalformedNetlink), 1);
    // A second connection replaces the first.
    let mut c2 = std::net::TcpStream::connect(server.local).unwrap();
    take(&mut events, 4);
    let mut ends: Vec<String> = events[2..4].iter().map(|e| format!("{e:?}")).collect();
    ends.sort();
    assert_eq!(ends, ["Connected(2)", "Disconnected(1)"]);
    assert_eq!(server.stats.get(Count::Replaced), 1);
    // A header that cannot be trusted ends the connection, not the listener.
    c2.write_all(&[7, 1, 0, 8, 0, 0, 0, 0]).unwrap();
    take(&mut events, 5);
    assert!(matches!(events[4], Event::Disconnected(2)));
    assert_eq!(server.stats.get(Count::BadVersion), 1);
    let mut c3 = std::net::TcpStream::connect(server.local).unwrap();
    c3.write_all(&route).unwrap();
    take(&mut events, 7);
    assert!(matches!(&events[6], Event::Frame(3, _)));
    assert_eq!(server.stats.get(Count::Connections), 3);
    drop(c1);
}

/// Frames zebra could send, chosen by `n`.
fn seed(n: u8) -> Vec<u8> {
    let gw = |i: u8| Ipv4Addr::new(10, 0, (i % 3) + 1, i);
    let p = Ipv4Addr::new(198, 51, n, 0);
    let gw6 = |i: u8| {
        Ipv6Addr::new(
            0x2001,
            0xdb8,
            u16::from(i % 3) + 1,
            0,
            0,
            0,
            0,
            u16::from(i),
        )
    };
    let p6 = Ipv6Addr::new(0x2001, 0xdb8, 0x100 + u16::from(n), 0, 0, 0, 0, 0);
    match n % 8 {
        0 => frame_of(&[new_route(p, 24, via(gw(n), 2))]),
        1 => frame_of(&[
            del_route(p, 24),
            new_route(p, 24, multipath(&[gw(n), gw(n.wrapping_add(1))])),
        ]),
        2 => frame_of(&[
            new_nexthop(u32::from(n), gw(n), 2),
            new_group(99, &[u32::from(n), 7]),
        ]),
        3 => frame_of(&[new_route(p, 24, vec![RouteAttribute::NhId(99)])]),
        4 => frame_of(&[del_nexthop(u32::from(n))]),
        5 => frame_of(&[del_route(p, 24)]),
        6 => frame_of(&[
            new_route(p6, 48, multipath(&[gw6(n), gw6(n.wrapping_add(1))])),
            new_nexthop(u32::from(n) + 1000, gw6(n), 2),
        ]),
        _ => frame_of(&[del_route(p6, 48)]),
    }
}

proptest::proptest! {
    /// What the fuzz target `fpm_frames` checks, on edited streams of
    /// zebra's frames and on raw bytes: no panic, one answer per frame,
    /// only FPM routes within the ECMP width, nothing left after a sweep.
    #[test]
    fn any_stream_parses_the_same_twice_and_sweeps_clean(
        seeds in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..12),
        edits in proptest::collection::vec(proptest::prelude::any::<(u16, u8)>(), 0..6),
        raw in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
    ) {
        let mut stream: Vec<u8> = if seeds.is_empty() {
            raw
        } else {
            seeds.iter().flat_map(|n| seed(*n)).collect()
        };
        for (at, v) in &edits {
            if !stream.is_empty() {
                let i = usize::from(*at) % stream.len();
                stream[i] = *v;
            }
        }
        let mut r = Rig::new();
        let mut rd = &stream[..];
        while let Ok(Read1::Body(body)) = read_frame(&mut rd) {
            let first = parse_frame(&body);
            proptest::prop_assert_eq!(&first, &parse_frame(&body));
            if let Ok(p) = first {
                r.events(vec![Event::Frame(1, p)]);
            }
        }
        for (origin, hops) in r.fib.routes.values() {
            proptest::prop_assert_eq!(origin, &Origin::Fpm);
            proptest::prop_assert!(!hops.is_empty() && hops.len() <= MAX_PATHS);
        }
        for (origin, hops) in r.fib.routes6.values() {
            proptest::prop_assert_eq!(origin, &Origin::Fpm);
            proptest::prop_assert_eq!(hops.len(), 1);
        }
        r.events(vec![Event::Disconnected(1)]);
        r.rib.tick(r.now + Duration::from_secs(10), &mut r.fib);
        proptest::prop_assert!(r.fib.routes.is_empty());
        proptest::prop_assert!(r.fib.routes6.is_empty());
        proptest::prop_assert!(r.rib.is_empty());
    }
}
