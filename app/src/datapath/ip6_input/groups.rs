//! The IPv6 multicast groups each port belongs to (RFC 4291 section 2.8: a
//! router's interface joins all-nodes, all-routers and the solicited-node
//! group of each of its addresses), and their Ethernet MACs (RFC 2464
//! section 7: 33:33 and the group's low 32 bits). l2_input takes a frame to
//! one of these MACs as ours; ip6_input delivers a packet to one of these
//! groups locally; the port's multicast filter is programmed with the MACs.

use hooks::wire::ipv6::{multicast_mac, solicited_node, ALL_NODES, ALL_ROUTERS};
use std::net::Ipv6Addr;

/// One port's groups and their MACs, each once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortGroups6 {
    pub groups: Vec<[u8; 16]>,
    pub macs: Vec<[u8; 6]>,
}

impl PortGroups6 {
    /// The groups of a port whose IPv6 addresses (link-local included) are
    /// `addresses`: all-nodes, all-routers, and each address's
    /// solicited-node group.
    pub fn of(addresses: impl IntoIterator<Item = Ipv6Addr>) -> Self {
        let mut g = PortGroups6::default();
        let solicited = addresses.into_iter().map(solicited_node);
        for group in [ALL_NODES, ALL_ROUTERS].into_iter().chain(solicited) {
            if !g.groups.contains(&group.octets()) {
                g.groups.push(group.octets());
            }
            let mac = multicast_mac(group);
            if !g.macs.contains(&mac) {
                g.macs.push(mac);
            }
        }
        g
    }
}

/// Every port's groups, by port id; a port without IPv6 has none.
#[derive(Clone, Debug, Default)]
pub struct Groups6 {
    ports: Box<[PortGroups6]>,
}

impl Groups6 {
    /// `ports[id]`: the groups of port `id`.
    pub fn new(ports: Vec<PortGroups6>) -> Self {
        Groups6 {
            ports: ports.into_boxed_slice(),
        }
    }

    /// The groups of port `port` (none for a port without IPv6).
    pub fn port(&self, port: u16) -> Option<&PortGroups6> {
        self.ports.get(usize::from(port))
    }

    /// Whether `mac` is the MAC of one of `port`'s groups.
    #[inline]
    pub fn has_mac(&self, port: u16, mac: &[u8; 6]) -> bool {
        self.port(port).is_some_and(|g| g.macs.contains(mac))
    }

    /// Whether `group` is one of `port`'s groups.
    #[inline]
    pub fn has_group(&self, port: u16, group: &[u8; 16]) -> bool {
        self.port(port).is_some_and(|g| g.groups.contains(group))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_nodes_all_routers_and_each_solicited_node_group_once() {
        let a: Ipv6Addr = "2001:db8:1::1".parse().unwrap();
        let ll: Ipv6Addr = "fe80::1".parse().unwrap();
        let other: Ipv6Addr = "2001:db8:1::1:2".parse().unwrap();
        let g = PortGroups6::of([a, ll, other]);
        // 2001:db8:1::1 and fe80::1 share ff02::1:ff00:1.
        assert_eq!(g.groups.len(), 4, "{g:?}");
        assert_eq!(
            g.macs,
            [
                [0x33, 0x33, 0, 0, 0, 1],
                [0x33, 0x33, 0, 0, 0, 2],
                [0x33, 0x33, 0xff, 0, 0, 1],
                [0x33, 0x33, 0xff, 1, 0, 2],
            ]
        );
        let groups = Groups6::new(vec![PortGroups6::default(), g]);
        assert!(groups.has_mac(1, &[0x33, 0x33, 0xff, 1, 0, 2]));
        assert!(!groups.has_mac(0, &[0x33, 0x33, 0, 0, 0, 1]));
        assert!(!groups.has_mac(7, &[0x33, 0x33, 0, 0, 0, 1]));
        let sn: Ipv6Addr = "ff02::1:ff01:2".parse().unwrap();
        assert!(groups.has_group(1, &sn.octets()));
        let sn_other: Ipv6Addr = "ff02::1:ff01:3".parse().unwrap();
        assert!(!groups.has_group(1, &sn_other.octets()));
    }
}
