//! The netlink messages an FPM frame carries: routes through
//! `netlink-packet-route`, next hops (`RTM_NEWNEXTHOP`/`RTM_DELNEXTHOP`,
//! which that crate does not model yet) as their fixed `struct nhmsg` and
//! attributes walked with `netlink-packet-core`'s attribute iterator.

use netlink_packet_core::{
    DecodeError, DefaultNla, Emitable, NetlinkDeserializable, NetlinkHeader, NetlinkSerializable,
    NlasIterator,
};
use netlink_packet_route::RouteNetlinkMessage;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

pub const RTM_NEWROUTE: u16 = 24;
pub const RTM_DELROUTE: u16 = 25;
pub const RTM_NEWNEXTHOP: u16 = 104;
pub const RTM_DELNEXTHOP: u16 = 105;

/// `linux/nexthop.h` attribute types.
const NHA_ID: u16 = 1;
const NHA_GROUP: u16 = 2;
const NHA_BLACKHOLE: u16 = 4;
const NHA_OIF: u16 = 5;
const NHA_GATEWAY: u16 = 6;

/// `struct nhmsg`: family, scope, protocol, reserved, flags (u32).
const NHMSG_LEN: usize = 8;

/// One attribute of a next-hop message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NexthopAttribute {
    Id(u32),
    /// `NHA_GROUP`: members' ids and weights.
    Group(Vec<(u32, u8)>),
    Blackhole,
    Oif(u32),
    Gateway(IpAddr),
    Other(u16, Vec<u8>),
}

/// A next-hop message (`struct nhmsg` and attributes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NexthopMessage {
    pub family: u8,
    pub scope: u8,
    pub protocol: u8,
    pub flags: u32,
    pub attributes: Vec<NexthopAttribute>,
}

fn bad(what: impl Into<String>) -> DecodeError {
    DecodeError::from(what.into())
}

fn u32_of(kind: u16, v: &[u8]) -> Result<u32, DecodeError> {
    let b: [u8; 4] = v.try_into().map_err(|_| {
        bad(format!(
            "next-hop attribute {kind}: {} bytes, expected 4",
            v.len()
        ))
    })?;
    Ok(u32::from_ne_bytes(b))
}

impl NexthopMessage {
    /// Parse a next-hop message's payload (after the netlink header).
    pub fn parse(payload: &[u8]) -> Result<NexthopMessage, DecodeError> {
        let Some((head, rest)) = payload.split_at_checked(NHMSG_LEN) else {
            return Err(bad(format!(
                "next-hop message of {} bytes, shorter than struct nhmsg ({NHMSG_LEN})",
                payload.len()
            )));
        };
        let mut m = NexthopMessage {
            family: head[0],
            scope: head[1],
            protocol: head[2],
            flags: u32::from_ne_bytes([head[4], head[5], head[6], head[7]]),
            attributes: Vec::new(),
        };
        for nla in NlasIterator::new(rest) {
            let nla = nla?;
            let (kind, v) = (nla.kind(), nla.value());
            m.attributes.push(match kind {
                NHA_ID => NexthopAttribute::Id(u32_of(kind, v)?),
                NHA_OIF => NexthopAttribute::Oif(u32_of(kind, v)?),
                NHA_BLACKHOLE => NexthopAttribute::Blackhole,
                NHA_GATEWAY => match v.len() {
                    4 => {
                        NexthopAttribute::Gateway(IpAddr::V4(Ipv4Addr::new(v[0], v[1], v[2], v[3])))
                    }
                    16 => {
                        let b: [u8; 16] = v.try_into().unwrap_or([0; 16]);
                        NexthopAttribute::Gateway(IpAddr::V6(Ipv6Addr::from(b)))
                    }
                    n => return Err(bad(format!("NHA_GATEWAY of {n} bytes, expected 4 or 16"))),
                },
                NHA_GROUP => {
                    if v.len() % 8 != 0 {
                        return Err(bad(format!(
                            "NHA_GROUP of {} bytes, not a whole number of 8-byte members",
                            v.len()
                        )));
                    }
                    let members = v
                        .chunks_exact(8)
                        .map(|c| (u32::from_ne_bytes([c[0], c[1], c[2], c[3]]), c[4]))
                        .collect();
                    NexthopAttribute::Group(members)
                }
                other => NexthopAttribute::Other(other, v.to_vec()),
            });
        }
        Ok(m)
    }

    fn nlas(&self) -> Vec<DefaultNla> {
        self.attributes
            .iter()
            .map(|a| match a {
                NexthopAttribute::Id(id) => DefaultNla::new(NHA_ID, id.to_ne_bytes().to_vec()),
                NexthopAttribute::Oif(i) => DefaultNla::new(NHA_OIF, i.to_ne_bytes().to_vec()),
                NexthopAttribute::Blackhole => DefaultNla::new(NHA_BLACKHOLE, Vec::new()),
                NexthopAttribute::Gateway(IpAddr::V4(a)) => {
                    DefaultNla::new(NHA_GATEWAY, a.octets().to_vec())
                }
                NexthopAttribute::Gateway(IpAddr::V6(a)) => {
                    DefaultNla::new(NHA_GATEWAY, a.octets().to_vec())
                }
                NexthopAttribute::Group(members) => {
                    let mut v = Vec::with_capacity(members.len() * 8);
                    for (id, weight) in members {
                        v.extend_from_slice(&id.to_ne_bytes());
                        v.extend_from_slice(&[*weight, 0, 0, 0]);
                    }
                    DefaultNla::new(NHA_GROUP, v)
                }
                NexthopAttribute::Other(k, v) => DefaultNla::new(*k, v.clone()),
            })
            .collect()
    }
}

impl Emitable for NexthopMessage {
    fn buffer_len(&self) -> usize {
        NHMSG_LEN + self.nlas().as_slice().buffer_len()
    }

    fn emit(&self, buffer: &mut [u8]) {
        buffer[..4].copy_from_slice(&[self.family, self.scope, self.protocol, 0]);
        buffer[4..8].copy_from_slice(&self.flags.to_ne_bytes());
        self.nlas().as_slice().emit(&mut buffer[NHMSG_LEN..]);
    }
}

/// The messages fastpath takes from zebra.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FpmNetlink {
    /// `RTM_NEWROUTE` / `RTM_DELROUTE` (and whatever else
    /// `netlink-packet-route` parses, for the emitting side).
    Route(RouteNetlinkMessage),
    NewNexthop(NexthopMessage),
    DelNexthop(NexthopMessage),
}

impl NetlinkDeserializable for FpmNetlink {
    type Error = DecodeError;

    fn deserialize(header: &NetlinkHeader, payload: &[u8]) -> Result<Self, DecodeError> {
        match header.message_type {
            RTM_NEWNEXTHOP => Ok(FpmNetlink::NewNexthop(NexthopMessage::parse(payload)?)),
            RTM_DELNEXTHOP => Ok(FpmNetlink::DelNexthop(NexthopMessage::parse(payload)?)),
            _ => Ok(FpmNetlink::Route(RouteNetlinkMessage::deserialize(
                header, payload,
            )?)),
        }
    }
}

impl NetlinkSerializable for FpmNetlink {
    fn message_type(&self) -> u16 {
        match self {
            FpmNetlink::Route(m) => m.message_type(),
            FpmNetlink::NewNexthop(_) => RTM_NEWNEXTHOP,
            FpmNetlink::DelNexthop(_) => RTM_DELNEXTHOP,
        }
    }

    fn buffer_len(&self) -> usize {
        match self {
            FpmNetlink::Route(m) => NetlinkSerializable::buffer_len(m),
            FpmNetlink::NewNexthop(m) | FpmNetlink::DelNexthop(m) => m.buffer_len(),
        }
    }

    fn serialize(&self, buffer: &mut [u8]) {
        match self {
            FpmNetlink::Route(m) => m.serialize(buffer),
            FpmNetlink::NewNexthop(m) | FpmNetlink::DelNexthop(m) => m.emit(buffer),
        }
    }
}
