//! `[[neighbour]]` with an IPv6 address: inside a port's IPv6 subnet, or
//! link-local on the port `device` names; each address once per link.

use super::routes6::ipv6_subnets;
use crate::config::device::{device_literal, label};
use crate::config::fields::unicast_mac;
use crate::config::fields6::{is_ipv6_text, is_link_local6, not_unicast6, plain_address6};
use crate::config::position::{ConfigError, Source};
use crate::config::schema::RawNeighbour;
use crate::config::spec::PortSpec;
use crate::config::spec6::{LinkLocal, Neighbour6Spec};
use toml::Spanned;

impl Source<'_> {
    /// Checks every IPv6 static neighbour and that none is given twice (a
    /// link-local address once per port).
    pub(crate) fn neighbours6(
        &self,
        ports: &[PortSpec],
        raw: &[&Spanned<RawNeighbour>],
    ) -> Result<Vec<Neighbour6Spec>, ConfigError> {
        let mut out: Vec<Neighbour6Spec> = Vec::new();
        for n in raw
            .iter()
            .filter(|n| is_ipv6_text(n.get_ref().address.get_ref()))
        {
            let spec = self.neighbour6(ports, n)?;
            if let Some(prev) = out
                .iter()
                .find(|p| (p.address, p.port) == (spec.address, spec.port))
            {
                return Err(self.field_error(
                    "neighbour",
                    "address",
                    &n.get_ref().address,
                    format!(
                        "neighbour {} is already defined by the [[neighbour]] at line {} \
                         (this one is at line {}); expected each address once",
                        spec.address, prev.line, spec.line
                    ),
                ));
            }
            out.push(spec);
        }
        Ok(out)
    }

    pub(crate) fn neighbour6(
        &self,
        ports: &[PortSpec],
        raw: &Spanned<RawNeighbour>,
    ) -> Result<Neighbour6Spec, ConfigError> {
        let r = raw.get_ref();
        let err = |m: String| self.field_error("neighbour", "address", &r.address, m);
        let address = plain_address6(r.address.get_ref(), "2001:db8:1::2").map_err(err)?;
        if let Some(why) = not_unicast6(address) {
            return Err(err(format!("neighbour {why}; expected a unicast address")));
        }
        let device = match &r.device {
            Some(d) => Some(self.port_of_device(ports, "neighbour", d)?),
            None => None,
        };
        if let Some(p) = ports
            .iter()
            .find(|p| p.ipv6.iter().any(|i| i.address == address))
        {
            return Err(err(format!(
                "neighbour {address} is our own address on {} (line {}); expected another host",
                label(&p.device),
                p.line
            )));
        }
        let port = if is_link_local6(address) {
            let Some(port) = device else {
                return Err(err(format!(
                    "neighbour {address} is link-local; name the port it is on with `device`, \
                     e.g. device = {}",
                    device_literal(&ports[0].device)
                )));
            };
            if ports[port].link_local == LinkLocal::Given(address) {
                return Err(err(format!(
                    "neighbour {address} is our own link-local address on {}; expected another host",
                    label(&ports[port].device)
                )));
            }
            port
        } else {
            let Some(port) = ports
                .iter()
                .position(|p| p.ipv6.iter().any(|i| i.contains(address)))
            else {
                return Err(err(format!(
                    "neighbour {address} is not in any port's IPv6 subnet ({}); a neighbour must \
                     be directly reachable",
                    ipv6_subnets(ports)
                )));
            };
            if let (Some(d), Some(raw_d)) = (device.filter(|&d| d != port), &r.device) {
                return Err(self.field_error(
                    "neighbour",
                    "device",
                    raw_d,
                    format!(
                        "neighbour {address} is in the IPv6 subnet of {}, not on {}; expected \
                         `device = {}` or no `device`",
                        label(&ports[port].device),
                        label(&ports[d].device),
                        device_literal(&ports[port].device)
                    ),
                ));
            }
            port
        };
        let mac = unicast_mac(r.mac.get_ref())
            .map_err(|m| self.field_error("neighbour", "mac", &r.mac, m))?;
        Ok(Neighbour6Spec {
            address,
            mac,
            port,
            line: self.line_of(&raw.span()),
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::spec6::Neighbour6Spec;
    use crate::config::testing::{assert_err, parse, with_ports6};

    fn neighbour(body: &str) -> String {
        with_ports6("neighbour", &format!("{body}mac = \"02:00:00:00:09:09\"\n"))
    }

    #[test]
    fn ipv6_neighbours() {
        let c = parse(&neighbour("address = \"2001:db8:2::9\"\n")).expect("global");
        assert_eq!(
            c.neighbours6,
            [Neighbour6Spec {
                address: "2001:db8:2::9".parse().unwrap(),
                mac: [2, 0, 0, 0, 9, 9],
                port: 1,
                line: 13,
            }]
        );
        assert!(c.neighbours.is_empty());
        let c = parse(&neighbour(
            "address = \"fe80::9\"\ndevice = \"net_af_packet0\"\n",
        ))
        .expect("link-local");
        assert_eq!(c.neighbours6[0].port, 0);
    }

    #[test]
    fn ipv6_neighbour_errors() {
        assert_err(
            &neighbour("address = \"fe80::9\"\n"),
            14,
            &[
                "[[neighbour]] field `address`",
                "fe80::9 is link-local",
                "`device`",
            ],
        );
        assert_err(
            &neighbour("address = \"2001:db8:7::9\"\n"),
            14,
            &["not in any port's IPv6 subnet (2001:db8:1::/64 on net_af_packet0"],
        );
        assert_err(
            &neighbour("address = \"ff02::1\"\n"),
            14,
            &["[[neighbour]] field `address`", "multicast"],
        );
        assert_err(
            &neighbour("address = \"2001:db8:1::1\"\n"),
            14,
            &["our own address on net_af_packet0"],
        );
        assert_err(
            &neighbour("address = \"2001:db8:1::9\"\ndevice = \"net_af_packet1\"\n"),
            15,
            &[
                "[[neighbour]] field `device`",
                "in the IPv6 subnet of net_af_packet0, not on net_af_packet1",
            ],
        );
        assert_err(
            &neighbour("address = \"10.0.1.9\"\ndevice = \"net_af_packet0\"\n"),
            15,
            &[
                "[[neighbour]] field `device`",
                "`device` is for IPv6 link-local neighbours",
            ],
        );
        let dup = with_ports6(
            "neighbour",
            "address = \"fe80::9\"\ndevice = 0\nmac = \"02:00:00:00:09:09\"\n\n\
             [[neighbour]]\naddress = \"fe80::9\"\ndevice = 0\nmac = \"02:00:00:00:09:0a\"\n",
        );
        // device = 0 is no configured port here (they are named).
        assert_err(&dup, 15, &["port id 0 is not a configured port"]);
        let dup = with_ports6(
            "neighbour",
            "address = \"2001:db8:1::9\"\nmac = \"02:00:00:00:09:09\"\n\n\
             [[neighbour]]\naddress = \"2001:db8:1::9\"\nmac = \"02:00:00:00:09:0a\"\n",
        );
        assert_err(
            &dup,
            18,
            &["neighbour 2001:db8:1::9 is already defined by the [[neighbour]] at line 13"],
        );
    }
}
