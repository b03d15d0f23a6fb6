//! Setting up a kernel interface over rtnetlink: its MAC, MTU and state
//! (`RTM_NEWLINK`), and its addresses (`RTM_NEWADDR`), each request
//! acknowledged by the kernel before the next.

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL,
    NLM_F_REQUEST,
};
use netlink_packet_route::address::{
    AddressAttribute, AddressFlags, AddressHeaderFlags, AddressMessage, AddressScope,
};
use netlink_packet_route::link::{LinkAttribute, LinkFlags, LinkMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};
use std::io;
use std::net::IpAddr;

/// A route netlink socket that sends one request at a time and waits for
/// its acknowledgement.
pub struct Rtnl {
    socket: Socket,
    seq: u32,
}

impl Rtnl {
    pub fn open() -> io::Result<Rtnl> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        Ok(Rtnl { socket, seq: 0 })
    }

    /// Set interface `index`'s MAC and MTU.
    pub fn set_link(&mut self, index: u32, mac: [u8; 6], mtu: u16) -> io::Result<()> {
        let mut link = LinkMessage::default();
        link.header.index = index;
        link.attributes = vec![
            LinkAttribute::Address(mac.to_vec()),
            LinkAttribute::Mtu(u32::from(mtu)),
        ];
        self.request(RouteNetlinkMessage::SetLink(link), 0)
    }

    /// Bring interface `index` up.
    pub fn set_up(&mut self, index: u32) -> io::Result<()> {
        let mut link = LinkMessage::default();
        link.header.index = index;
        link.header.flags = LinkFlags::Up;
        link.header.change_mask = LinkFlags::Up;
        self.request(RouteNetlinkMessage::SetLink(link), 0)
    }

    /// Set interface `index`'s carrier (its operational state follows).
    pub fn set_carrier(&mut self, index: u32, up: bool) -> io::Result<()> {
        let mut link = LinkMessage::default();
        link.header.index = index;
        link.attributes = vec![LinkAttribute::Carrier(u8::from(up))];
        self.request(RouteNetlinkMessage::SetLink(link), 0)
    }

    /// Add `addr/prefix_len` to interface `index`, without duplicate
    /// address detection (the address is the port's: fastpath owns it).
    pub fn add_address(&mut self, index: u32, addr: IpAddr, prefix_len: u8) -> io::Result<()> {
        let mut msg = AddressMessage::default();
        msg.header.family = match addr {
            IpAddr::V4(_) => AddressFamily::Inet,
            IpAddr::V6(_) => AddressFamily::Inet6,
        };
        msg.header.prefix_len = prefix_len;
        msg.header.index = index;
        msg.header.flags = AddressHeaderFlags::Nodad | AddressHeaderFlags::Permanent;
        msg.header.scope = match addr {
            IpAddr::V6(a) if a.is_unicast_link_local() => AddressScope::Link,
            _ => AddressScope::Universe,
        };
        msg.attributes = vec![
            AddressAttribute::Local(addr),
            AddressAttribute::Address(addr),
            AddressAttribute::Flags(AddressFlags::Nodad | AddressFlags::Permanent),
        ];
        self.request(
            RouteNetlinkMessage::NewAddress(msg),
            NLM_F_CREATE | NLM_F_EXCL,
        )
    }

    /// Send `msg` and wait for the kernel's answer to it.
    fn request(&mut self, msg: RouteNetlinkMessage, flags: u16) -> io::Result<()> {
        self.seq = self.seq.wrapping_add(1);
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_ACK | flags;
        header.sequence_number = self.seq;
        let mut nl = NetlinkMessage::new(header, NetlinkPayload::from(msg));
        nl.finalize();
        let mut buf = vec![0; nl.buffer_len()];
        nl.serialize(&mut buf);
        self.socket.send(&buf, 0)?;
        loop {
            let (reply, _) = self.socket.recv_from_full()?;
            let mut at = 0;
            while at < reply.len() {
                let answer = NetlinkMessage::<RouteNetlinkMessage>::deserialize(&reply[at..])
                    .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?;
                let len = answer.header.length as usize;
                if answer.header.sequence_number == self.seq {
                    if let NetlinkPayload::Error(e) = answer.payload {
                        return match e.code {
                            None => Ok(()),
                            Some(_) => Err(e.to_io()),
                        };
                    }
                }
                if len == 0 {
                    break;
                }
                at += len.next_multiple_of(4);
            }
        }
    }
}

/// The index of interface `name` (from sysfs, which the kernel fills when it
/// creates the interface).
pub fn ifindex(name: &str) -> io::Result<u32> {
    let path = format!("/sys/class/net/{name}/ifindex");
    std::fs::read_to_string(&path)?
        .trim()
        .parse()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("{path}: {e}")))
}
