//! FPM frames built with `netlink-packet-route`, as zebra's
//! `dplane_fpm_nl` sends them: for the tests, the fuzz target's seeds and
//! a replayer.

use super::frame::frame;
use super::message::{FpmNetlink, NexthopAttribute, NexthopMessage};
use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_CREATE, NLM_F_REPLACE, NLM_F_REQUEST,
};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteHeader, RouteMessage, RouteNextHop, RouteProtocol,
    RouteScope, RouteType,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use std::net::IpAddr;

/// zebra's protocol number for static routes (`RTPROT_ZSTATIC`).
pub const RTPROT_ZSTATIC: u8 = 196;

/// A netlink message's bytes.
pub fn netlink(inner: FpmNetlink) -> Vec<u8> {
    let mut header = NetlinkHeader::default();
    header.flags = NLM_F_REQUEST | NLM_F_CREATE | NLM_F_REPLACE;
    let mut m = NetlinkMessage::new(header, NetlinkPayload::InnerMessage(inner));
    m.finalize();
    let mut buf = vec![0u8; m.buffer_len()];
    m.serialize(&mut buf);
    buf
}

/// A frame of several netlink messages.
pub fn frame_of(messages: &[Vec<u8>]) -> Vec<u8> {
    frame(&messages.concat())
}

/// A route message for `prefix/len` in table `table` with `attrs`.
pub fn route_message(
    prefix: IpAddr,
    len: u8,
    table: u8,
    attrs: Vec<RouteAttribute>,
) -> RouteMessage {
    let mut m = RouteMessage::default();
    m.header = RouteHeader {
        address_family: match prefix {
            IpAddr::V4(_) => AddressFamily::Inet,
            IpAddr::V6(_) => AddressFamily::Inet6,
        },
        destination_prefix_length: len,
        table,
        protocol: RouteProtocol::Other(RTPROT_ZSTATIC),
        scope: RouteScope::Universe,
        kind: RouteType::Unicast,
        ..RouteHeader::default()
    };
    m.attributes
        .push(RouteAttribute::Destination(route_address(prefix)));
    m.attributes.extend(attrs);
    m
}

fn route_address(a: IpAddr) -> RouteAddress {
    match a {
        IpAddr::V4(a) => RouteAddress::Inet(a),
        IpAddr::V6(a) => RouteAddress::Inet6(a),
    }
}

/// `RTM_NEWROUTE` of `prefix/len` in the main table.
pub fn new_route(prefix: impl Into<IpAddr>, len: u8, attrs: Vec<RouteAttribute>) -> Vec<u8> {
    let m = route_message(prefix.into(), len, 254, attrs);
    netlink(FpmNetlink::Route(RouteNetlinkMessage::NewRoute(m)))
}

/// `RTM_DELROUTE` of `prefix/len` in the main table.
pub fn del_route(prefix: impl Into<IpAddr>, len: u8) -> Vec<u8> {
    let m = route_message(prefix.into(), len, 254, vec![]);
    netlink(FpmNetlink::Route(RouteNetlinkMessage::DelRoute(m)))
}

/// Inline gateway and interface.
pub fn via(gateway: impl Into<IpAddr>, oif: u32) -> Vec<RouteAttribute> {
    vec![
        RouteAttribute::Gateway(route_address(gateway.into())),
        RouteAttribute::Oif(oif),
    ]
}

/// `RTA_MULTIPATH` over `gateways` (interface 2 each).
pub fn multipath<A: Into<IpAddr> + Copy>(gateways: &[A]) -> Vec<RouteAttribute> {
    let hops = gateways
        .iter()
        .map(|g| {
            let mut h = RouteNextHop::default();
            h.interface_index = 2;
            h.attributes = vec![RouteAttribute::Gateway(route_address((*g).into()))];
            h
        })
        .collect();
    vec![RouteAttribute::MultiPath(hops)]
}

/// `RTM_NEWNEXTHOP` of one gateway.
pub fn new_nexthop(id: u32, gateway: impl Into<IpAddr>, oif: u32) -> Vec<u8> {
    let gateway = gateway.into();
    netlink(FpmNetlink::NewNexthop(NexthopMessage {
        // AF_INET, AF_INET6.
        family: if gateway.is_ipv4() { 2 } else { 10 },
        protocol: RTPROT_ZSTATIC,
        attributes: vec![
            NexthopAttribute::Id(id),
            NexthopAttribute::Gateway(gateway),
            NexthopAttribute::Oif(oif),
        ],
        ..NexthopMessage::default()
    }))
}

/// `RTM_NEWNEXTHOP` of a group of `members`.
pub fn new_group(id: u32, members: &[u32]) -> Vec<u8> {
    netlink(FpmNetlink::NewNexthop(NexthopMessage {
        protocol: RTPROT_ZSTATIC,
        attributes: vec![
            NexthopAttribute::Id(id),
            NexthopAttribute::Group(members.iter().map(|m| (*m, 1)).collect()),
        ],
        ..NexthopMessage::default()
    }))
}

/// `RTM_DELNEXTHOP` of `id`.
pub fn del_nexthop(id: u32) -> Vec<u8> {
    netlink(FpmNetlink::DelNexthop(NexthopMessage {
        attributes: vec![NexthopAttribute::Id(id)],
        ..NexthopMessage::default()
    }))
}
