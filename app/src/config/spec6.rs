//! The validated IPv6 part of the configuration: each port's IPv6 addresses
//! and link-local address, and the IPv6 routes and static neighbours. Kept
//! beside the IPv4 specs (which stay as they are) rather than inside them.

use super::spec::RouterConfig;
use std::net::Ipv6Addr;

impl RouterConfig {
    /// Whether the file configures IPv6 at all: an `ipv6` or `link_local`
    /// on a port, an IPv6 route or neighbour. Without it no IPv6 table is
    /// built (and its DPDK memory not taken).
    pub fn has_ipv6(&self) -> bool {
        let port = |p: &super::spec::PortSpec| {
            !p.ipv6.is_empty() || matches!(p.link_local, LinkLocal::Given(_))
        };
        self.ports.iter().any(port) || !self.routes6.is_empty() || !self.neighbours6.is_empty()
    }
}

/// One IPv6 address of a port with its subnet's prefix length (`ipv6 = [...]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv6Interface {
    pub address: Ipv6Addr,
    /// 1..=128.
    pub prefix_len: u8,
}

impl Ipv6Interface {
    /// The subnet's network address.
    pub fn network(&self) -> Ipv6Addr {
        Ipv6Addr::from_bits(self.address.to_bits() & mask6(self.prefix_len))
    }

    /// Whether `a` lies inside the subnet.
    pub fn contains(&self, a: Ipv6Addr) -> bool {
        a.to_bits() & mask6(self.prefix_len) == self.network().to_bits()
    }

    /// The subnet as text, e.g. `2001:db8:1::/64`.
    pub fn subnet(&self) -> String {
        format!("{}/{}", self.network(), self.prefix_len)
    }
}

/// A port's link-local address: `link_local = "fe80::1"`, or derived at
/// start from the port's MAC by modified EUI-64 (RFC 4291 appendix A).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkLocal {
    Given(Ipv6Addr),
    FromMac,
}

impl LinkLocal {
    /// The address, given the port's MAC (the configured one, or the
    /// device's own when the file sets none).
    pub fn address(&self, mac: [u8; 6]) -> Ipv6Addr {
        match *self {
            LinkLocal::Given(a) => a,
            LinkLocal::FromMac => hooks::wire::ipv6::link_local_from_mac(mac),
        }
    }
}

/// One `[[route]]` with an IPv6 prefix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Route6Spec {
    /// Destination prefix (host bits are zero).
    pub prefix: Ipv6Addr,
    /// 0..=128; 0 is the default route `::/0`.
    pub prefix_len: u8,
    pub next_hop: NextHop6Spec,
    /// 1-based line of the `[[route]]` header.
    pub line: usize,
}

/// Where an IPv6 route sends packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextHop6Spec {
    /// `via = "..."`: to a gateway out of `port` (index into
    /// `RouterConfig::ports`): the port whose IPv6 subnet holds it, or the
    /// port named by `device` for a link-local gateway.
    Via { gateway: Ipv6Addr, port: usize },
    /// `device = "..."`: on-link, straight to the destination out of `port`.
    Connected { port: usize },
}

impl NextHop6Spec {
    /// The port index the next hop leaves by.
    pub fn port(&self) -> usize {
        match *self {
            NextHop6Spec::Via { port, .. } | NextHop6Spec::Connected { port } => port,
        }
    }
}

/// One static `[[neighbour]]` with an IPv6 address (never ages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Neighbour6Spec {
    pub address: Ipv6Addr,
    pub mac: [u8; 6],
    /// Index into `RouterConfig::ports`: the port whose IPv6 subnet holds
    /// `address`, or the one `device` names for a link-local neighbour.
    pub port: usize,
    /// 1-based line of the `[[neighbour]]` header.
    pub line: usize,
}

/// Netmask of an IPv6 prefix length (`len` is at most 128).
pub(crate) fn mask6(len: u8) -> u128 {
    match len {
        0 => 0,
        n => u128::MAX << (128 - u32::from(n.min(128))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interface_helpers() {
        let i = Ipv6Interface {
            address: "2001:db8:1::1".parse().unwrap(),
            prefix_len: 64,
        };
        assert_eq!(i.subnet(), "2001:db8:1::/64");
        assert!(i.contains("2001:db8:1::ffff".parse().unwrap()));
        assert!(!i.contains("2001:db8:2::1".parse().unwrap()));
        assert_eq!(mask6(0), 0);
        assert_eq!(mask6(128), u128::MAX);
        // Modified EUI-64: the universal/local bit flipped, ff:fe inserted.
        let ll = LinkLocal::FromMac.address([0x02, 0, 0, 0, 1, 1]);
        assert_eq!(ll, "fe80::ff:fe00:101".parse::<Ipv6Addr>().unwrap());
        let given = "fe80::1".parse().unwrap();
        assert_eq!(LinkLocal::Given(given).address([2, 0, 0, 0, 1, 1]), given);
    }
}
