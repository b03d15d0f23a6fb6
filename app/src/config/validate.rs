//! Validation: from the file as read ([`super::schema`]) to checked specs
//! ([`super::spec`]), each error naming the file, the line, the section and
//! the field, and saying what was expected. One file per section
//! (`validate/`); here the whole file, and the checks sections share.

mod kernel;
mod lcores;
mod neighbours;
mod neighbours6;
mod ports;
mod ports6;
mod routes;
mod routes6;

use super::device::{label, DeviceRef};
use super::position::{ConfigError, Source};
use super::schema::{Int, RawConfig, RawDevice, RawNeighbour, MAX_PORT_ID};
use super::spec::{connected_subnets, PortSpec, RouterConfig};
use std::fmt;
use std::net::Ipv4Addr;
use toml::Spanned;

impl Source<'_> {
    /// The whole file, section by section in the order they refer to each
    /// other: ports first, then what names them.
    pub(crate) fn validate(&self, raw: RawConfig) -> Result<RouterConfig, ConfigError> {
        let mut ports = self.ports(&raw.port)?;
        let kernel = self.kernel(raw.kernel.as_ref(), &mut ports, &raw.port)?;
        let routes = self.routes(&ports, &raw.route)?;
        let routes6 = self.routes6(&ports, &raw.route)?;
        let mut neighbours: Vec<&Spanned<RawNeighbour>> =
            raw.neighbour.iter().chain(raw.neighbor.iter()).collect();
        neighbours.sort_by_key(|n| n.span().start);
        let neighbours6 = self.neighbours6(&ports, &neighbours)?;
        let neighbours = self.neighbours(&ports, &neighbours)?;
        let lcores = self.lcores(&ports, &raw.lcore)?;
        let hooks =
            super::hooks::parse_hooks(self.path, self.text, &raw.hook, |o| self.line_at(o))?;
        Ok(RouterConfig {
            path: self.path.to_path_buf(),
            ports,
            routes,
            neighbours,
            routes6,
            neighbours6,
            lcores,
            hooks,
            kernel,
            text: self.text.to_owned(),
        })
    }

    /// A `device` value: a non-empty name or a port id in 0..=MAX_PORT_ID.
    pub(crate) fn device(
        &self,
        section: &str,
        raw: &Spanned<RawDevice>,
    ) -> Result<DeviceRef, ConfigError> {
        match raw.get_ref() {
            RawDevice::Name(name) if name.trim().is_empty() => Err(self.field_error(
                section,
                "device",
                raw,
                "the device name is empty; expected a vdev name or PCI address, \
                 e.g. \"net_af_packet0\" or \"0000:01:00.0\", or a DPDK port id, e.g. 0",
            )),
            RawDevice::Name(name) if name.trim() != name => Err(self.field_error(
                section,
                "device",
                raw,
                format!("{name:?} has leading or trailing spaces; expected {:?}", name.trim()),
            )),
            RawDevice::Name(name) => Ok(DeviceRef::Name(name.clone())),
            RawDevice::Id(id) => match u16::try_from(*id) {
                Ok(id) if id <= MAX_PORT_ID => Ok(DeviceRef::Id(id)),
                _ => Err(self.field_error(
                    section,
                    "device",
                    raw,
                    format!(
                        "port id {id} is out of range; expected a DPDK port id from 0 to {MAX_PORT_ID}, \
                         or a device name string"
                    ),
                )),
            },
        }
    }

    /// An integer field that must lie in `lo..=hi`.
    pub(crate) fn ranged<T>(
        &self,
        section: &str,
        field: &str,
        value: &Spanned<Int>,
        lo: T,
        hi: T,
    ) -> Result<T, ConfigError>
    where
        T: TryFrom<i64> + Into<i64> + Copy + fmt::Display,
    {
        let v = value.get_ref().0;
        match T::try_from(v) {
            Ok(t) if (lo.into()..=hi.into()).contains(&v) => Ok(t),
            _ => Err(self.field_error(
                section,
                field,
                value,
                format!("{v} is out of range; expected an integer from {lo} to {hi}"),
            )),
        }
    }

    /// Index of the port whose subnet holds the neighbour or next hop `a`;
    /// `a` must be a usable host address that is not ours.
    pub(crate) fn neighbour_port(
        &self,
        ports: &[PortSpec],
        a: Ipv4Addr,
        what: &str,
        why: &str,
    ) -> Result<usize, String> {
        if let Some(p) = ports.iter().find(|p| p.address == a) {
            return Err(format!(
                "{what} {a} is our own address on {} (line {}); expected another host in its subnet",
                label(&p.device),
                p.line
            ));
        }
        let Some(i) = ports.iter().position(|p| p.contains(a)) else {
            return Err(format!(
                "{what} {a} is not in any connected subnet ({}); {why}",
                connected_subnets(ports)
            ));
        };
        let p = &ports[i];
        if p.is_network_or_broadcast(a) {
            let kind = if a == p.broadcast() {
                "broadcast"
            } else {
                "network"
            };
            return Err(format!(
                "{what} {a} is the {kind} address of {} on {}; expected a host address",
                p.subnet(),
                label(&p.device)
            ));
        }
        Ok(i)
    }
}

#[cfg(test)]
mod tests {
    use super::super::spec::{LcoreSpec, NeighbourSpec, NextHopSpec, RouteSpec};
    use super::super::spec6::LinkLocal;
    use super::super::testing::{assert_err, parse, GOOD, PORTS};
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn good_config_parses_to_expected_structs() {
        let c = parse(GOOD).expect("good config");
        let want = RouterConfig {
            path: PathBuf::from("router.toml"),
            ports: vec![
                PortSpec {
                    device: DeviceRef::Name("net_af_packet0".into()),
                    address: Ipv4Addr::new(10, 0, 1, 1),
                    prefix_len: 24,
                    mac: Some([2, 0, 0, 0, 1, 1]),
                    rx_queues: 1,
                    mtu: 1500,
                    ipv6: vec![],
                    link_local: LinkLocal::FromMac,
                    kernel_interface: None,
                    line: 2,
                },
                PortSpec {
                    device: DeviceRef::Id(1),
                    address: Ipv4Addr::new(10, 0, 2, 1),
                    prefix_len: 24,
                    mac: None,
                    rx_queues: 2,
                    mtu: 2000,
                    ipv6: vec![],
                    link_local: LinkLocal::FromMac,
                    kernel_interface: None,
                    line: 7,
                },
                PortSpec {
                    device: DeviceRef::Name("0000:01:00.0".into()),
                    address: Ipv4Addr::new(192, 168, 7, 9),
                    prefix_len: 30,
                    mac: None,
                    rx_queues: 1,
                    mtu: 1500,
                    ipv6: vec![],
                    link_local: LinkLocal::FromMac,
                    kernel_interface: None,
                    line: 13,
                },
            ],
            routes: vec![
                RouteSpec {
                    prefix: Ipv4Addr::UNSPECIFIED,
                    prefix_len: 0,
                    next_hop: NextHopSpec::Via {
                        gateway: Ipv4Addr::new(10, 0, 1, 2),
                        port: 0,
                    },
                    multipath: vec![],
                    line: 17,
                },
                RouteSpec {
                    prefix: Ipv4Addr::new(192, 0, 2, 0),
                    prefix_len: 24,
                    next_hop: NextHopSpec::Connected { port: 1 },
                    multipath: vec![],
                    line: 21,
                },
                RouteSpec {
                    prefix: Ipv4Addr::new(10, 0, 2, 0),
                    prefix_len: 24,
                    next_hop: NextHopSpec::Connected { port: 1 },
                    multipath: vec![],
                    line: 25,
                },
                RouteSpec {
                    prefix: Ipv4Addr::new(172, 16, 0, 0),
                    prefix_len: 12,
                    next_hop: NextHopSpec::Via {
                        gateway: Ipv4Addr::new(192, 168, 7, 10),
                        port: 2,
                    },
                    multipath: vec![],
                    line: 29,
                },
            ],
            neighbours: vec![
                NeighbourSpec {
                    address: Ipv4Addr::new(10, 0, 1, 2),
                    mac: [2, 0, 0, 0, 1, 2],
                    port: 0,
                    line: 33,
                },
                NeighbourSpec {
                    address: Ipv4Addr::new(10, 0, 2, 7),
                    mac: [0x0a, 0xbb, 0xcc, 0xdd, 0xee, 0xff],
                    port: 1,
                    line: 37,
                },
            ],
            lcores: vec![
                LcoreSpec {
                    id: 1,
                    queues: vec![(0, 0), (1, 0)],
                    line: 41,
                },
                LcoreSpec {
                    id: 2,
                    queues: vec![(1, 1), (2, 0)],
                    line: 45,
                },
            ],
            routes6: vec![],
            neighbours6: vec![],
            hooks: Vec::new(),
            kernel: Default::default(),
            text: String::new(),
        };
        assert_eq!(c, want);
        assert!(c.hooks.is_empty());
    }

    #[test]
    fn minimal_config_uses_defaults() {
        let c = parse(PORTS).expect("ports only");
        assert_eq!(c.ports.len(), 2);
        assert!(c
            .ports
            .iter()
            .all(|p| p.rx_queues == 1 && p.mtu == 1500 && p.mac.is_none()));
        assert!(c.routes.is_empty() && c.neighbours.is_empty() && c.lcores.is_empty());
        assert_eq!(c.ports[1].line, 5);
    }

    // ----- device ----------------------------------------------------------------

    #[test]
    fn device_checks() {
        let port = |d: &str| format!("[[port]]\naddress = \"10.0.1.1/24\"\ndevice = {d}\n");
        assert_err(&port("\"\""), 3, &["[[port]] field `device`", "empty"]);
        assert_err(&port("\" p0\""), 3, &["[[port]] field `device`", "spaces"]);
        assert_err(
            &port("1024"),
            3,
            &[
                "[[port]] field `device`",
                "port id 1024 is out of range",
                "0 to 1023",
            ],
        );
        assert_err(&port("-1"), 3, &["[[port]] field `device`", "out of range"]);
        assert_eq!(
            parse(&port("1023")).expect("id 1023").ports[0].device,
            DeviceRef::Id(1023)
        );
    }
}
