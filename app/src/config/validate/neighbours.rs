//! `[[neighbour]]` / `[[neighbor]]`: static neighbours, each address once,
//! each inside a connected subnet.

use crate::config::fields::{plain_address, unicast_mac};
use crate::config::fields6::is_ipv6_text;
use crate::config::position::{ConfigError, Source};
use crate::config::schema::RawNeighbour;
use crate::config::spec::{NeighbourSpec, PortSpec};
use toml::Spanned;

impl Source<'_> {
    /// Checks every static neighbour and that no address is given twice.
    pub(crate) fn neighbours(
        &self,
        ports: &[PortSpec],
        raw: &[&Spanned<RawNeighbour>],
    ) -> Result<Vec<NeighbourSpec>, ConfigError> {
        let mut out: Vec<NeighbourSpec> = Vec::with_capacity(raw.len());
        // IPv6 addresses are `neighbours6`'s.
        for n in raw
            .iter()
            .filter(|n| !is_ipv6_text(n.get_ref().address.get_ref()))
        {
            let spec = self.neighbour(ports, n)?;
            if let Some(prev) = out.iter().find(|p| p.address == spec.address) {
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

    pub(crate) fn neighbour(
        &self,
        ports: &[PortSpec],
        raw: &Spanned<RawNeighbour>,
    ) -> Result<NeighbourSpec, ConfigError> {
        let r = raw.get_ref();
        let err = |m: String| self.field_error("neighbour", "address", &r.address, m);
        let address = plain_address(r.address.get_ref(), "10.0.1.2").map_err(err)?;
        let port = self
            .neighbour_port(
                ports,
                address,
                "neighbour",
                "a neighbour must be directly reachable",
            )
            .map_err(err)?;
        if let Some(d) = &r.device {
            return Err(self.field_error(
                "neighbour",
                "device",
                d,
                format!(
                    "an IPv4 neighbour's port is the one whose subnet holds it ({address}); \
                     `device` is for IPv6 link-local neighbours: remove it"
                ),
            ));
        }
        let mac = unicast_mac(r.mac.get_ref())
            .map_err(|m| self.field_error("neighbour", "mac", &r.mac, m))?;
        Ok(NeighbourSpec {
            address,
            mac,
            port,
            line: self.line_of(&raw.span()),
        })
    }
}

#[cfg(test)]
mod tests {
    use crate::config::testing::{assert_err, parse, with_ports};

    // ----- neighbours ------------------------------------------------------------

    fn neighbour(address: &str, mac: &str) -> String {
        with_ports(&format!(
            "\n[[neighbour]]\naddress = \"{address}\"\nmac = \"{mac}\"\n"
        ))
    }

    #[test]
    fn neighbour_address_checks() {
        let mac = "02:00:00:00:09:09";
        assert_err(
            &neighbour("10.7.0.1", mac),
            10,
            &[
                "[[neighbour]] field `address`",
                "not in any connected subnet",
                "10.0.1.0/24 on net_af_packet0",
                "directly reachable",
            ],
        );
        assert_err(
            &neighbour("10.0.1.1", mac),
            10,
            &["[[neighbour]] field `address`", "our own address"],
        );
        assert_err(
            &neighbour("10.0.1.255", mac),
            10,
            &[
                "[[neighbour]] field `address`",
                "broadcast address of 10.0.1.0/24",
            ],
        );
        assert_err(
            &neighbour("10.0.1", mac),
            10,
            &["[[neighbour]] field `address`", "not an IPv4 address"],
        );
        let c = parse(&neighbour("10.0.2.9", mac)).expect("good neighbour");
        assert_eq!(c.neighbours[0].port, 1);
        assert_eq!(c.neighbours[0].line, 9);
    }

    #[test]
    fn neighbour_mac_checks() {
        assert_err(
            &neighbour("10.0.1.2", "zz:00:00:00:00:01"),
            11,
            &["[[neighbour]] field `mac`", "not a MAC address"],
        );
        assert_err(
            &neighbour("10.0.1.2", "ff:ff:ff:ff:ff:ff"),
            11,
            &["[[neighbour]] field `mac`", "multicast"],
        );
        assert_err(
            &neighbour("10.0.1.2", "00-00-00-00-00-00"),
            11,
            &["[[neighbour]] field `mac`", "all-zero"],
        );
    }

    #[test]
    fn duplicate_neighbour_across_spellings() {
        let text = with_ports(
            "\n[[neighbour]]\naddress = \"10.0.1.2\"\nmac = \"02:00:00:00:00:01\"\n\
             \n[[neighbor]]\naddress = \"10.0.1.2\"\nmac = \"02:00:00:00:00:02\"\n",
        );
        assert_err(
            &text,
            14,
            &[
                "[[neighbour]] field `address`",
                "10.0.1.2 is already defined",
                "line 9",
                "line 13",
            ],
        );
    }

    #[test]
    fn neighbour_spellings_keep_file_order() {
        let text = with_ports(
            "\n[[neighbor]]\naddress = \"10.0.1.2\"\nmac = \"02:00:00:00:00:01\"\n\
             \n[[neighbour]]\naddress = \"10.0.2.2\"\nmac = \"02:00:00:00:00:02\"\n\
             \n[[neighbor]]\naddress = \"10.0.1.3\"\nmac = \"02:00:00:00:00:03\"\n",
        );
        let c = parse(&text).expect("mixed spellings");
        let lines: Vec<usize> = c.neighbours.iter().map(|n| n.line).collect();
        assert_eq!(lines, [9, 13, 17]);
    }
}
