//! `[[port]]`'s IPv6 fields: `ipv6` (its addresses and subnets) and
//! `link_local`; no address on two ports or twice on one, no two ports in
//! overlapping IPv6 subnets.

use crate::config::device::label;
use crate::config::fields6::{link_local_address, port_address6};
use crate::config::position::{ConfigError, Source};
use crate::config::schema::RawPort;
use crate::config::spec::PortSpec;
use crate::config::spec6::{mask6, Ipv6Interface, LinkLocal};
use toml::Spanned;

impl Source<'_> {
    /// A port's `ipv6` list and `link_local`.
    pub(crate) fn port_ipv6(
        &self,
        r: &RawPort,
    ) -> Result<(Vec<Ipv6Interface>, LinkLocal), ConfigError> {
        let mut ipv6: Vec<Ipv6Interface> = Vec::new();
        for a in r.ipv6.iter().flat_map(|l| l.get_ref()) {
            let (address, prefix_len) =
                port_address6(a.get_ref()).map_err(|m| self.field_error("port", "ipv6", a, m))?;
            if ipv6.iter().any(|i| i.address == address) {
                return Err(self.field_error(
                    "port",
                    "ipv6",
                    a,
                    format!("{address} is given twice; expected each address once"),
                ));
            }
            ipv6.push(Ipv6Interface {
                address,
                prefix_len,
            });
        }
        let link_local = match &r.link_local {
            Some(l) => LinkLocal::Given(
                link_local_address(l.get_ref())
                    .map_err(|m| self.field_error("port", "link_local", l, m))?,
            ),
            None => LinkLocal::FromMac,
        };
        Ok((ipv6, link_local))
    }

    /// No IPv6 address on two ports, no two ports' IPv6 subnets overlapping
    /// (a port may hold several addresses of one subnet). The same
    /// link-local address on several ports is fine: each is on its own link.
    pub(crate) fn check_port_conflicts6(
        &self,
        ports: &[PortSpec],
        raw: &[Spanned<RawPort>],
    ) -> Result<(), ConfigError> {
        for (j, (b, raw_b)) in ports.iter().zip(raw).enumerate() {
            let Some(list) = &raw_b.get_ref().ipv6 else {
                continue;
            };
            for (bi, value) in b.ipv6.iter().zip(list.get_ref()) {
                for a in &ports[..j] {
                    for ai in &a.ipv6 {
                        let shorter = mask6(ai.prefix_len.min(bi.prefix_len));
                        if ai.address.to_bits() & shorter != bi.address.to_bits() & shorter {
                            continue;
                        }
                        let what = if ai.address == bi.address {
                            "is already an address of"
                        } else {
                            "overlaps the subnet of"
                        };
                        return Err(self.field_error(
                            "port",
                            "ipv6",
                            value,
                            format!(
                                "{}/{} on {} (line {}) {what} {}/{} on {} (line {}); \
                                 expected each port in its own IPv6 subnets",
                                bi.address,
                                bi.prefix_len,
                                label(&b.device),
                                b.line,
                                ai.address,
                                ai.prefix_len,
                                label(&a.device),
                                a.line
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::spec6::LinkLocal;
    use crate::config::testing::{assert_err, parse};

    fn two_ports(a: &str, b: &str) -> String {
        format!(
            "[[port]]\ndevice = \"p0\"\naddress = \"10.0.1.1/24\"\n{a}\n\n\
             [[port]]\ndevice = \"p1\"\naddress = \"10.0.2.1/24\"\n{b}\n"
        )
    }

    #[test]
    fn ipv6_addresses_parse() {
        let c = parse(&two_ports(
            "ipv6 = [\"2001:db8:1::1/64\", \"2001:db8:1::2/64\", \"fd00:1::1/48\"]",
            "ipv6 = [\"2001:db8:2::1/64\"]\nlink_local = \"fe80::1\"",
        ))
        .expect("ipv6 ports");
        let p0 = &c.ports[0];
        assert_eq!(p0.ipv6.len(), 3);
        assert_eq!(p0.ipv6[2].subnet(), "fd00:1::/48");
        assert_eq!(p0.link_local, LinkLocal::FromMac);
        assert_eq!(
            c.ports[1].link_local,
            LinkLocal::Given("fe80::1".parse().unwrap())
        );
        // The same link-local address on each port: each link its own.
        assert!(parse(&two_ports(
            "link_local = \"fe80::1\"",
            "link_local = \"fe80::1\""
        ))
        .is_ok());
        // IPv4 only, as before.
        assert!(parse(&two_ports("", ""))
            .unwrap()
            .ports
            .iter()
            .all(|p| !p.has_ipv6()));
    }

    #[test]
    fn ipv6_address_errors() {
        assert_err(
            &two_ports("ipv6 = [\"2001:db8:1::1\"]", ""),
            4,
            &[
                "[[port]] field `ipv6`",
                "\"2001:db8:1::1\" has no prefix length",
                "e.g. \"2001:db8:1::1/64\"",
            ],
        );
        assert_err(
            &two_ports("ipv6 = [\"2001:db8:1::1/64\", \"2001:db8:1::zz/64\"]", ""),
            4,
            &[
                "[[port]] field `ipv6`",
                "\"2001:db8:1::zz\" is not an IPv6 address",
            ],
        );
        assert_err(
            &two_ports("ipv6 = [\"ff02::1/64\"]", ""),
            4,
            &["[[port]] field `ipv6`", "ff02::1 is a multicast address"],
        );
        assert_err(
            &two_ports("ipv6 = [\"::/64\"]", ""),
            4,
            &["[[port]] field `ipv6`", ":: is the unspecified address"],
        );
        assert_err(
            &two_ports("ipv6 = [\"::1/128\"]", ""),
            4,
            &["[[port]] field `ipv6`", "::1 is the loopback address"],
        );
        assert_err(
            &two_ports("ipv6 = [\"fe80::1/64\"]", ""),
            4,
            &[
                "[[port]] field `ipv6`",
                "link-local",
                "`link_local = \"fe80::1\"`",
            ],
        );
        assert_err(
            &two_ports("ipv6 = [\"2001:db8:1::/64\"]", ""),
            4,
            &["subnet-router anycast address", "e.g. \"2001:db8:1::1/64\""],
        );
        assert_err(
            &two_ports("ipv6 = \"2001:db8:1::1/64\"", ""),
            4,
            &["[[port]] field `ipv6`", "expected a sequence"],
        );
    }

    #[test]
    fn link_local_errors() {
        assert_err(
            &two_ports("link_local = \"2001:db8::1\"", ""),
            4,
            &[
                "[[port]] field `link_local`",
                "2001:db8::1 is not link-local",
                "fe80::/10",
            ],
        );
        assert_err(
            &two_ports("link_local = \"fe80::1/64\"", ""),
            4,
            &[
                "[[port]] field `link_local`",
                "has a prefix length",
                "plain IPv6 address",
            ],
        );
        assert_err(
            &two_ports("link_local = \"ff02::2\"", ""),
            4,
            &["[[port]] field `link_local`", "multicast"],
        );
    }

    #[test]
    fn duplicate_and_overlapping_ipv6() {
        assert_err(
            &two_ports("ipv6 = [\"2001:db8:1::1/64\", \"2001:db8:1::1/64\"]", ""),
            4,
            &["[[port]] field `ipv6`", "2001:db8:1::1 is given twice"],
        );
        assert_err(
            &two_ports("ipv6 = [\"2001:db8:1::1/64\"]", "ipv6 = [\"2001:db8:1::1/64\"]"),
            9,
            &[
                "[[port]] field `ipv6`",
                "2001:db8:1::1/64 on p1 (line 6) is already an address of 2001:db8:1::1/64 on p0 (line 1)",
            ],
        );
        assert_err(
            &two_ports("ipv6 = [\"2001:db8::1/32\"]", "ipv6 = [\"2001:db8:2::1/64\"]"),
            9,
            &[
                "2001:db8:2::1/64 on p1 (line 6) overlaps the subnet of 2001:db8::1/32 on p0 (line 1)",
                "own IPv6 subnets",
            ],
        );
    }
}
