//! Our IPv6 addresses as the control plane sees them, one port at a time:
//! which addresses are ours, which are a neighbour's on the port's link,
//! and which of ours a message leaves from (RFC 4861 7.2.2, RFC 4443 2.2).

use crate::config::{Ipv6Interface, RouterConfig};
use std::net::Ipv6Addr;

/// One port's IPv6 addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Port6 {
    pub id: u16,
    pub mac: [u8; 6],
    /// Configured, or the modified EUI-64 of the MAC.
    pub link_local: Ipv6Addr,
    /// The `ipv6 = [...]` addresses with their subnets, in the file's order.
    pub global: Vec<Ipv6Interface>,
    pub mtu: u16,
}

impl Port6 {
    /// Each port of `cfg` with IPv6 (every port, once the file has IPv6 at
    /// all: each has a link-local address), by its index in the file;
    /// `port_ids[i]` and `macs[i]` are port `i`'s id and MAC.
    pub fn of_config(cfg: &RouterConfig, port_ids: &[u16], macs: &[[u8; 6]]) -> Vec<Port6> {
        if !cfg.has_ipv6() {
            return Vec::new();
        }
        cfg.ports
            .iter()
            .zip(port_ids.iter().zip(macs))
            .map(|(p, (&id, &mac))| Port6 {
                id,
                mac,
                link_local: p.link_local.address(mac),
                global: p.ipv6.clone(),
                mtu: p.mtu,
            })
            .collect()
    }

    /// Whether `a` is one of this port's addresses.
    pub fn is_ours(&self, a: Ipv6Addr) -> bool {
        a == self.link_local || self.global.iter().any(|g| g.address == a)
    }

    /// Whether `a` can be a neighbour on this port's link: a link-local
    /// unicast address or a host of one of its subnets, not ours, not
    /// multicast, `::` or loopback.
    pub fn has_neighbour(&self, a: Ipv6Addr) -> bool {
        let unicast = !(a.is_multicast() || a.is_unspecified() || a.is_loopback());
        unicast
            && !self.is_ours(a)
            && (a.is_unicast_link_local() || self.global.iter().any(|g| g.contains(a)))
    }

    /// Our address to send from to `dst`: the link-local one to a
    /// link-local destination, else a global one whose subnet holds `dst`,
    /// else the first global one, else the link-local one (RFC 6724's
    /// scope and longest-match rules, over one port's addresses).
    pub fn source_for(&self, dst: Ipv6Addr) -> Ipv6Addr {
        if dst.is_unicast_link_local() || dst.is_multicast() && multicast_scope(dst) <= 2 {
            return self.link_local;
        }
        self.global
            .iter()
            .find(|g| g.contains(dst))
            .or(self.global.first())
            .map_or(self.link_local, |g| g.address)
    }
}

/// The scope of a multicast address (RFC 4291 2.7): 1 interface, 2 link.
fn multicast_scope(a: Ipv6Addr) -> u8 {
    a.octets()[1] & 0x0f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    pub(crate) fn port() -> Port6 {
        Port6 {
            id: 0,
            mac: [0x02, 0, 0, 0, 0, 0x01],
            link_local: a("fe80::ff:fe00:1"),
            global: vec![
                Ipv6Interface {
                    address: a("2001:db8:1::1"),
                    prefix_len: 64,
                },
                Ipv6Interface {
                    address: a("fd00:1::1"),
                    prefix_len: 48,
                },
            ],
            mtu: 1500,
        }
    }

    #[test]
    fn ours_and_neighbours() {
        let p = port();
        for ours in ["fe80::ff:fe00:1", "2001:db8:1::1", "fd00:1::1"] {
            assert!(p.is_ours(a(ours)), "{ours}");
            assert!(!p.has_neighbour(a(ours)), "{ours}");
        }
        for n in ["fe80::2", "2001:db8:1::2", "fd00:1:0:5::9"] {
            assert!(p.has_neighbour(a(n)), "{n}");
        }
        for not in ["2001:db8:2::2", "::", "::1", "ff02::1", "ff02::1:ff00:2"] {
            assert!(!p.has_neighbour(a(not)), "{not}");
        }
    }

    #[test]
    fn source_by_scope_then_subnet() {
        let p = port();
        assert_eq!(p.source_for(a("fe80::2")), a("fe80::ff:fe00:1"));
        assert_eq!(p.source_for(a("ff02::1:ff00:2")), a("fe80::ff:fe00:1"));
        assert_eq!(p.source_for(a("2001:db8:1::2")), a("2001:db8:1::1"));
        assert_eq!(p.source_for(a("fd00:1:0:2::3")), a("fd00:1::1"));
        // Off-link: the first global address.
        assert_eq!(p.source_for(a("2001:db8:99::1")), a("2001:db8:1::1"));
        let bare = Port6 {
            global: vec![],
            ..port()
        };
        assert_eq!(bare.source_for(a("2001:db8:99::1")), a("fe80::ff:fe00:1"));
    }

    #[test]
    fn ports_of_a_config_have_their_link_local_address() {
        let cfg = RouterConfig::parse(
            "t.toml".as_ref(),
            r#"
[[port]]
device = "net_null0"
address = "10.0.1.1/24"
ipv6 = ["2001:db8:1::1/64"]

[[port]]
device = "net_null1"
address = "10.0.2.1/24"
link_local = "fe80::1"
"#,
        )
        .unwrap();
        let macs = [[0x02, 0, 0, 0, 0, 0x01], [0x02, 0, 0, 0, 0, 0x02]];
        let ports = Port6::of_config(&cfg, &[3, 4], &macs);
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[0].id, 3);
        assert_eq!(ports[0].link_local, a("fe80::ff:fe00:1"));
        assert_eq!(ports[0].global[0].address, a("2001:db8:1::1"));
        assert_eq!(ports[1].link_local, a("fe80::1"));
        assert!(ports[1].global.is_empty());
    }
}
