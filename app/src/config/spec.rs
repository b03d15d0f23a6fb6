//! The validated configuration: what the rest of fastpath reads, every
//! value checked and every item with the line it came from.

use super::device::{label, DeviceRef};
use super::hooks::HookSpec;
use super::position::ConfigError;
use super::spec6::{Ipv6Interface, LinkLocal, Neighbour6Spec, Route6Spec};
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;

/// A validated router configuration.
#[derive(Clone, Debug)]
pub struct RouterConfig {
    /// The file it was read from (used in error messages).
    pub path: PathBuf,
    /// `[[port]]` items, in file order; other items refer to ports by index.
    pub ports: Vec<PortSpec>,
    /// `[[route]]` items, in file order.
    pub routes: Vec<RouteSpec>,
    /// `[[neighbour]]` / `[[neighbor]]` items, in file order.
    pub neighbours: Vec<NeighbourSpec>,
    /// `[[route]]` items with an IPv6 prefix, in file order.
    pub routes6: Vec<Route6Spec>,
    /// `[[neighbour]]` items with an IPv6 address, in file order.
    pub neighbours6: Vec<Neighbour6Spec>,
    /// `[[lcore]]` items, in file order; empty: default queue placement.
    pub lcores: Vec<LcoreSpec>,
    /// `[[hook]]` items, in file order (checked by their kinds when built).
    pub hooks: Vec<HookSpec>,
    /// `[kernel]`: the ports' kernel interfaces and the routing peers.
    pub kernel: KernelSpec,
    /// The file's text, for the line numbers of hook errors.
    pub text: String,
}

/// `[kernel]`: whether each port has a kernel interface (a TAP with its
/// MAC and addresses), and the routing peers whose traffic to us reaches
/// the kernel ahead of the rest.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelSpec {
    /// `interfaces = true`: one kernel interface per port.
    pub interfaces: bool,
    /// `peers = [...]`: the routing peers' addresses (both families).
    pub peers: Vec<IpAddr>,
    /// `ttl_security = true` (RFC 5082): a packet from a peer's address
    /// goes ahead only with TTL (hop limit) 255, as a directly connected
    /// peer that uses GTSM sends it.
    pub ttl_security: bool,
}

impl PartialEq for RouterConfig {
    /// Everything but the hooks and the text: what a reload may not change.
    fn eq(&self, o: &Self) -> bool {
        self.path == o.path
            && self.ports == o.ports
            && self.routes == o.routes
            && self.neighbours == o.neighbours
            && self.routes6 == o.routes6
            && self.neighbours6 == o.neighbours6
            && self.lcores == o.lcores
            && self.kernel == o.kernel
    }
}

/// One `[[port]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortSpec {
    pub device: DeviceRef,
    /// Our address on this port.
    pub address: Ipv4Addr,
    /// Length of the connected subnet's prefix (1..=32).
    pub prefix_len: u8,
    /// MAC address to set on the port at start (unicast, non-zero).
    pub mac: Option<[u8; 6]>,
    pub rx_queues: u16,
    pub mtu: u16,
    /// `ipv6 = [...]`: our IPv6 addresses on this port and their subnets.
    pub ipv6: Vec<Ipv6Interface>,
    /// `link_local = "..."`, or derived from the MAC.
    pub link_local: LinkLocal,
    /// The name of the port's kernel interface: `kernel_interface = "..."`
    /// or `fp<n>` (n: the port's place in the file, from 0) with
    /// `[kernel] interfaces = true`; `None` without.
    pub kernel_interface: Option<String>,
    /// 1-based line of the `[[port]]` header.
    pub line: usize,
}

impl PortSpec {
    /// The connected subnet's network address, host byte order.
    pub fn network(&self) -> u32 {
        u32::from(self.address) & prefix_mask(self.prefix_len)
    }

    /// Whether `a` lies inside the connected subnet.
    pub fn contains(&self, a: Ipv4Addr) -> bool {
        u32::from(a) & prefix_mask(self.prefix_len) == self.network()
    }

    /// The connected subnet's broadcast address.
    pub fn broadcast(&self) -> Ipv4Addr {
        Ipv4Addr::from(self.network() | !prefix_mask(self.prefix_len))
    }

    /// Whether the port has IPv6 addresses beyond its link-local one.
    pub fn has_ipv6(&self) -> bool {
        !self.ipv6.is_empty()
    }

    /// The connected subnet as text, e.g. `10.0.1.0/24`.
    pub(crate) fn subnet(&self) -> String {
        format!("{}/{}", Ipv4Addr::from(self.network()), self.prefix_len)
    }

    /// Whether `a` is the network or broadcast address of a subnet that has
    /// those (prefix <= 30), i.e. not usable as a host address.
    pub(crate) fn is_network_or_broadcast(&self, a: Ipv4Addr) -> bool {
        self.prefix_len <= 30 && (u32::from(a) == self.network() || a == self.broadcast())
    }
}

/// One `[[route]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteSpec {
    /// Destination prefix (host bits are zero).
    pub prefix: Ipv4Addr,
    /// 0..=32.
    pub prefix_len: u8,
    pub next_hop: NextHopSpec,
    /// The next hops after `next_hop` of a multipath (ECMP) route: `via`
    /// with several gateways. Empty for a single next hop.
    pub multipath: Vec<NextHopSpec>,
    /// 1-based line of the `[[route]]` header.
    pub line: usize,
}

impl RouteSpec {
    /// Every next hop, `next_hop` first.
    pub fn next_hops(&self) -> impl Iterator<Item = NextHopSpec> + '_ {
        std::iter::once(self.next_hop).chain(self.multipath.iter().copied())
    }
}

/// Where a route sends packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextHopSpec {
    /// `via = "..."`: to a gateway; `port` indexes `RouterConfig::ports`, the port whose subnet holds it.
    Via { gateway: Ipv4Addr, port: usize },
    /// `device = "..."`: on-link, straight to the destination out of `port` (index into `ports`).
    Connected { port: usize },
}

/// One static `[[neighbour]]` (never ages).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NeighbourSpec {
    pub address: Ipv4Addr,
    pub mac: [u8; 6],
    /// Index into `RouterConfig::ports` of the port whose subnet holds `address`.
    pub port: usize,
    /// 1-based line of the `[[neighbour]]` header.
    pub line: usize,
}

/// One `[[lcore]]`: the rx queues a worker lcore polls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LcoreSpec {
    pub id: u32,
    /// (index into `RouterConfig::ports`, rx queue).
    pub queues: Vec<(usize, u16)>,
    /// 1-based line of the `[[lcore]]` header.
    pub line: usize,
}

impl RouterConfig {
    /// Index into `ports` of the port named `d`.
    pub fn port_index(&self, d: &DeviceRef) -> Option<usize> {
        self.ports.iter().position(|p| &p.device == d)
    }

    /// A [`ConfigError`] pointing at `line` of this file, for runtime checks
    /// done elsewhere (e.g. "DPDK has no port ...").
    pub fn error_at(&self, line: usize, message: impl Into<String>) -> ConfigError {
        ConfigError {
            path: self.path.clone(),
            line: Some(line),
            message: message.into(),
        }
    }
}

// How the ports are listed in messages.

/// `10.0.1.0/24 on net_af_packet0, 10.0.2.0/24 on port id 1`.
pub(crate) fn connected_subnets(ports: &[PortSpec]) -> String {
    ports
        .iter()
        .map(|p| format!("{} on {}", p.subnet(), label(&p.device)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `net_af_packet0, 1`: devices as written in `[[lcore]] queues`.
pub(crate) fn port_devices(ports: &[PortSpec]) -> String {
    ports
        .iter()
        .map(|p| p.device.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Netmask of a prefix length, host byte order (`len` is at most 32).
pub(crate) fn prefix_mask(len: u8) -> u32 {
    match len {
        0 => 0,
        n => u32::MAX << (32 - u32::from(n.min(32))),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::{parse, GOOD};
    use super::*;

    #[test]
    fn port_helpers() {
        let c = parse(GOOD).expect("good config");
        let p = &c.ports[0];
        assert_eq!(p.network(), u32::from(Ipv4Addr::new(10, 0, 1, 0)));
        assert_eq!(p.broadcast(), Ipv4Addr::new(10, 0, 1, 255));
        assert!(p.contains(Ipv4Addr::new(10, 0, 1, 200)));
        assert!(!p.contains(Ipv4Addr::new(10, 0, 2, 1)));
        assert_eq!(c.ports[2].broadcast(), Ipv4Addr::new(192, 168, 7, 11));
        assert_eq!(c.port_index(&DeviceRef::Id(1)), Some(1));
        assert_eq!(
            c.port_index(&DeviceRef::Name("0000:01:00.0".into())),
            Some(2)
        );
        assert_eq!(c.port_index(&DeviceRef::Name("1".into())), None);
        assert_eq!(DeviceRef::Id(7).to_string(), "7");
        assert_eq!(DeviceRef::Name("net_tap0".into()).to_string(), "net_tap0");
        let host = PortSpec {
            prefix_len: 32,
            ..p.clone()
        };
        assert_eq!(host.broadcast(), p.address);
        assert!(host.contains(p.address));
    }
}
