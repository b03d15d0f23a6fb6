//! An FPM frame's netlink messages to route and next-hop changes: a pure
//! function of the bytes. A frame is taken whole or not at all: one
//! message that does not decode, or whose attributes make no route,
//! rejects the frame (so a frame never changes the FIB half-way); what
//! fastpath deliberately leaves alone (other tables, kernel routes, unknown
//! message types) is reported as skipped, by kind. Routes of both families
//! are taken.

use super::message::{FpmNetlink, NexthopAttribute, NexthopMessage, RTM_DELNEXTHOP};
use super::stats::Count;
use netlink_packet_core::{NetlinkBuffer, NetlinkMessage, NetlinkPayload, NLMSG_ALIGNTO};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteMessage, RouteProtocol, RouteType,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The main routing table.
pub const RT_TABLE_MAIN: u32 = 254;

/// One path of a route: a gateway and/or an output interface (ifindex in
/// zebra's namespace).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Path {
    pub gateway: Option<IpAddr>,
    pub oif: u32,
}

/// How a route names its next hops.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Via {
    /// Inline: `RTA_GATEWAY`/`RTA_OIF` (one path) or `RTA_MULTIPATH`.
    Paths(Vec<Path>),
    /// `RTA_NH_ID`: a next hop or group zebra sent before.
    Nexthop(u32),
}

/// What a next-hop id stands for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NexthopDef {
    One(Path),
    /// A group of other next-hop ids (weights not used: fastpath's ECMP is equal-cost).
    Group(Vec<u32>),
    Blackhole,
}

/// One change a frame asks for, in frame order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    RouteSet { prefix: IpAddr, len: u8, via: Via },
    RouteDel { prefix: IpAddr, len: u8 },
    NexthopSet { id: u32, def: NexthopDef },
    NexthopDel { id: u32 },
}

/// What a frame asks for, and what it carried that fastpath leaves alone.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Parsed {
    pub changes: Vec<Change>,
    /// Skipped messages, by kind (`Count::OtherTable`, `OwnRoute`, ...);
    /// `not_unicast` routes come as a `RouteDel` and a mark here.
    pub skipped: Vec<Count>,
    /// Netlink messages in the frame.
    pub messages: usize,
}

/// Why a frame was rejected whole.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejected {
    /// `Count::MalformedNetlink` or `Count::BadAttribute`.
    pub kind: Count,
    pub detail: String,
}

fn bad_attribute(detail: String) -> Rejected {
    Rejected {
        kind: Count::BadAttribute,
        detail,
    }
}

/// The netlink messages of one FPM frame's body.
pub fn parse_frame(body: &[u8]) -> Result<Parsed, Rejected> {
    let mut out = Parsed::default();
    let mut at = 0;
    while at < body.len() {
        let rest = &body[at..];
        let nl = NetlinkBuffer::new_checked(rest).map_err(|e| Rejected {
            kind: Count::MalformedNetlink,
            detail: format!("netlink message at byte {at} of the frame: {e}"),
        })?;
        let len = nl.length() as usize;
        let kind = nl.message_type();
        out.messages += 1;
        message(&rest[..len], kind, &mut out).map_err(|mut r| {
            r.detail = format!("netlink message type {kind} at byte {at}: {}", r.detail);
            r
        })?;
        let align = usize::from(NLMSG_ALIGNTO);
        at += len.div_ceil(align) * align;
    }
    Ok(out)
}

/// One netlink message (`bytes`, header included) of type `kind`.
fn message(bytes: &[u8], kind: u16, out: &mut Parsed) -> Result<(), Rejected> {
    use super::message::{RTM_DELROUTE, RTM_NEWNEXTHOP, RTM_NEWROUTE};
    if ![RTM_NEWROUTE, RTM_DELROUTE, RTM_NEWNEXTHOP, RTM_DELNEXTHOP].contains(&kind) {
        out.skipped.push(Count::UnknownMessage);
        return Ok(());
    }
    let m = NetlinkMessage::<FpmNetlink>::deserialize(bytes).map_err(|e| Rejected {
        kind: Count::MalformedNetlink,
        detail: e.to_string(),
    })?;
    match m.payload {
        NetlinkPayload::InnerMessage(FpmNetlink::Route(RouteNetlinkMessage::NewRoute(r))) => {
            route(&r, true, out)
        }
        NetlinkPayload::InnerMessage(FpmNetlink::Route(RouteNetlinkMessage::DelRoute(r))) => {
            route(&r, false, out)
        }
        NetlinkPayload::InnerMessage(FpmNetlink::NewNexthop(n)) => nexthop(&n, true, out),
        NetlinkPayload::InnerMessage(FpmNetlink::DelNexthop(n)) => nexthop(&n, false, out),
        _ => {
            out.skipped.push(Count::UnknownMessage);
            Ok(())
        }
    }
}

/// A route's destination, of the route's family.
fn destination(a: &RouteAddress, v6: bool) -> Result<IpAddr, Rejected> {
    match (a, v6) {
        (RouteAddress::Inet(a), false) => Ok(IpAddr::V4(*a)),
        (RouteAddress::Inet6(a), true) => Ok(IpAddr::V6(*a)),
        (other, _) => Err(bad_attribute(format!(
            "destination {other:?} in an IPv{} route",
            if v6 { 6 } else { 4 }
        ))),
    }
}

/// Whether `prefix/len` has host bits set.
fn host_bits(prefix: IpAddr, len: u8) -> bool {
    match prefix {
        IpAddr::V4(a) => {
            u32::from(a) & !u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0) != 0
        }
        IpAddr::V6(a) => {
            a.to_bits() & !u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0) != 0
        }
    }
}

fn gateway_of(attrs: &[RouteAttribute]) -> Option<IpAddr> {
    attrs.iter().find_map(|a| match a {
        RouteAttribute::Gateway(RouteAddress::Inet(g)) => Some(IpAddr::V4(*g)),
        RouteAttribute::Gateway(RouteAddress::Inet6(g)) => Some(IpAddr::V6(*g)),
        _ => None,
    })
}

/// A route message: a change, a skip, or a rejection.
fn route(r: &RouteMessage, new: bool, out: &mut Parsed) -> Result<(), Rejected> {
    let h = &r.header;
    let v6 = match h.address_family {
        AddressFamily::Inet => false,
        AddressFamily::Inet6 => true,
        other => return Err(bad_attribute(format!("route of address family {other:?}"))),
    };
    let table = r
        .attributes
        .iter()
        .find_map(|a| match a {
            RouteAttribute::Table(t) => Some(*t),
            _ => None,
        })
        .unwrap_or(u32::from(h.table));
    if table != RT_TABLE_MAIN {
        out.skipped.push(Count::OtherTable);
        return Ok(());
    }
    if h.protocol == RouteProtocol::Kernel
        || matches!(
            h.kind,
            RouteType::Local | RouteType::Broadcast | RouteType::Anycast | RouteType::Multicast
        )
    {
        out.skipped.push(Count::OwnRoute);
        return Ok(());
    }
    let len = h.destination_prefix_length;
    let (family, bits) = if v6 { (6, 128) } else { (4, 32) };
    if len > bits {
        return Err(bad_attribute(format!("IPv{family} prefix length {len}")));
    }
    let prefix = match r.attributes.iter().find_map(|a| match a {
        RouteAttribute::Destination(d) => Some(d),
        _ => None,
    }) {
        Some(d) => destination(d, v6)?,
        None if len == 0 && v6 => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
        None if len == 0 => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        None => return Err(bad_attribute(format!("/{len} route without RTA_DST"))),
    };
    if host_bits(prefix, len) {
        return Err(bad_attribute(format!(
            "{prefix}/{len}: host bits set in the destination"
        )));
    }
    let unicast = matches!(h.kind, RouteType::Unicast | RouteType::Unspec);
    if !new || !unicast {
        if new {
            out.skipped.push(Count::NotUnicast);
        }
        out.changes.push(Change::RouteDel { prefix, len });
        return Ok(());
    }
    let via = via(&r.attributes)
        .ok_or_else(|| bad_attribute(format!("{prefix}/{len}: a route with no next hop")))?;
    out.changes.push(Change::RouteSet { prefix, len, via });
    Ok(())
}

/// A route's next hops: `RTA_NH_ID`, else `RTA_MULTIPATH`, else
/// `RTA_GATEWAY`/`RTA_OIF`.
fn via(attrs: &[RouteAttribute]) -> Option<Via> {
    for a in attrs {
        if let RouteAttribute::NhId(id) = a {
            return Some(Via::Nexthop(*id));
        }
    }
    for a in attrs {
        if let RouteAttribute::MultiPath(hops) = a {
            let paths: Vec<Path> = hops
                .iter()
                .map(|h| Path {
                    gateway: gateway_of(&h.attributes),
                    oif: h.interface_index,
                })
                .collect();
            return (!paths.is_empty()).then_some(Via::Paths(paths));
        }
    }
    let gateway = gateway_of(attrs);
    let oif = attrs
        .iter()
        .find_map(|a| match a {
            RouteAttribute::Oif(i) => Some(*i),
            _ => None,
        })
        .unwrap_or(0);
    (gateway.is_some() || oif != 0).then(|| Via::Paths(vec![Path { gateway, oif }]))
}

/// A next-hop message.
fn nexthop(n: &NexthopMessage, new: bool, out: &mut Parsed) -> Result<(), Rejected> {
    let mut id = None;
    let mut path = Path {
        gateway: None,
        oif: 0,
    };
    let mut def = None;
    for a in &n.attributes {
        match a {
            NexthopAttribute::Id(i) => id = Some(*i),
            NexthopAttribute::Gateway(g) => path.gateway = Some(*g),
            NexthopAttribute::Oif(i) => path.oif = *i,
            NexthopAttribute::Blackhole => def = Some(NexthopDef::Blackhole),
            NexthopAttribute::Group(m) => {
                if m.is_empty() {
                    return Err(bad_attribute("an empty NHA_GROUP".into()));
                }
                def = Some(NexthopDef::Group(m.iter().map(|(id, _)| *id).collect()));
            }
            NexthopAttribute::Other(..) => {}
        }
    }
    let Some(id) = id else {
        return Err(bad_attribute("a next-hop message without NHA_ID".into()));
    };
    if !new {
        out.changes.push(Change::NexthopDel { id });
        return Ok(());
    }
    let def = match def {
        Some(d) => d,
        None if path.gateway.is_some() || path.oif != 0 => NexthopDef::One(path),
        None => {
            return Err(bad_attribute(format!(
                "next hop {id}: no gateway, interface, group or blackhole"
            )))
        }
    };
    out.changes.push(Change::NexthopSet { id, def });
    Ok(())
}
