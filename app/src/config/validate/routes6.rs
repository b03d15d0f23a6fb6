//! `[[route]]` with an IPv6 prefix: a next hop of the same family (`via`),
//! which names its port with `device` when it is link-local, or an on-link
//! route (`device` alone); each prefix once, never into space that is not
//! forwarded (RFC 4291).

use crate::config::device::{device_literal, label};
use crate::config::fields6::{
    is_ipv6_text, is_link_local6, not_unicast6, plain_address6, route_prefix6,
};
use crate::config::position::{ConfigError, Source};
use crate::config::schema::{RawRoute, RawVia};
use crate::config::spec::PortSpec;
use crate::config::spec6::{mask6, LinkLocal, NextHop6Spec, Route6Spec};
use std::net::Ipv6Addr;
use toml::Spanned;

/// What no IPv6 route may point into: (prefix, length, name).
const NEVER_FORWARDED: [(u128, u8, &str); 5] = [
    (0xff00 << 112, 8, "multicast ff00::/8"),
    (0xfe80 << 112, 10, "link-local fe80::/10"),
    (1, 128, "the loopback address ::1/128"),
    (0, 128, "the unspecified address ::/128"),
    (0xffff << 32, 96, "IPv4-mapped ::ffff:0:0/96"),
];

impl Source<'_> {
    /// Checks every `[[route]]` with an IPv6 prefix and that no prefix is
    /// given twice.
    pub(crate) fn routes6(
        &self,
        ports: &[PortSpec],
        raw: &[Spanned<RawRoute>],
    ) -> Result<Vec<Route6Spec>, ConfigError> {
        let mut routes: Vec<Route6Spec> = Vec::new();
        for r in raw
            .iter()
            .filter(|r| is_ipv6_text(r.get_ref().prefix.get_ref()))
        {
            let route = self.route6(ports, r)?;
            if let Some(prev) = routes
                .iter()
                .find(|p| (p.prefix, p.prefix_len) == (route.prefix, route.prefix_len))
            {
                return Err(self.field_error(
                    "route",
                    "prefix",
                    &r.get_ref().prefix,
                    format!(
                        "{}/{} is already routed by the [[route]] at line {} (this one is at line {}); \
                         expected each prefix once",
                        route.prefix, route.prefix_len, prev.line, route.line
                    ),
                ));
            }
            routes.push(route);
        }
        Ok(routes)
    }

    pub(crate) fn route6(
        &self,
        ports: &[PortSpec],
        raw: &Spanned<RawRoute>,
    ) -> Result<Route6Spec, ConfigError> {
        let r = raw.get_ref();
        let line = self.line_of(&raw.span());
        let (prefix, prefix_len) = route_prefix6(r.prefix.get_ref())
            .map_err(|m| self.field_error("route", "prefix", &r.prefix, m))?;
        let what = format!("[[route]] {prefix}/{prefix_len}");
        let device = match &r.device {
            Some(d) => Some(self.port_of_device(ports, "route", d)?),
            None => None,
        };
        let next_hop = match (&r.via, device) {
            (Some(via), device) => {
                let via = self.one_via6(via)?;
                self.route_via6(ports, &via, device)?
            }
            (None, Some(port)) => NextHop6Spec::Connected { port },
            (None, None) => {
                return Err(self.error(
                    line,
                    format!(
                        "{what}: has neither `via` nor `device`; expected `via = \"<next hop \
                         address>\"` (with `device` when it is link-local) or `device = \
                         \"<port device>\"` for an on-link route"
                    ),
                ))
            }
        };
        for (net, len, name) in NEVER_FORWARDED {
            if prefix_len >= len && prefix.to_bits() & mask6(len) == net {
                return Err(self.error(
                    line,
                    format!("{what}: lies in {name}, which is never forwarded (RFC 4291); remove the route"),
                ));
            }
        }
        if prefix_len == 128 {
            if let Some(p) = ports
                .iter()
                .find(|p| p.ipv6.iter().any(|i| i.address == prefix))
            {
                return Err(self.error(
                    line,
                    format!(
                        "{what}: is our own address on {} (line {}); it is delivered locally, \
                         and a route cannot change that",
                        label(&p.device),
                        p.line
                    ),
                ));
            }
        }
        self.check_connected_subnet_route6(ports, prefix, prefix_len, next_hop, line)?;
        Ok(Route6Spec {
            prefix,
            prefix_len,
            next_hop,
            line,
        })
    }

    /// `via` of an IPv6 route: one gateway (several are IPv4's ECMP only).
    fn one_via6(&self, via: &Spanned<RawVia>) -> Result<Spanned<String>, ConfigError> {
        match via.get_ref() {
            RawVia::One(s) => Ok(Spanned::new(via.span(), s.clone())),
            RawVia::Many(list) if list.len() == 1 => Ok(list[0].clone()),
            RawVia::Many(list) => Err(self.field_error(
                "route",
                "via",
                via,
                format!(
                    "{} next hops; an IPv6 route takes one next hop in this version \
                     (multipath is IPv4 only); expected one address, e.g. \"2001:db8:1::2\"",
                    list.len()
                ),
            )),
        }
    }

    /// An IPv6 gateway: a unicast address of the route's family, on the
    /// port `device` names (required when it is link-local), or else inside
    /// one port's IPv6 subnets; never one of our own addresses.
    fn route_via6(
        &self,
        ports: &[PortSpec],
        via: &Spanned<String>,
        device: Option<usize>,
    ) -> Result<NextHop6Spec, ConfigError> {
        let err = |m: String| self.field_error("route", "via", via, m);
        let text = via.get_ref();
        if !is_ipv6_text(text) {
            return Err(err(format!(
                "next hop {text:?} is IPv4 but the prefix is IPv6; a route's prefix and next \
                 hop are of one family: expected an IPv6 address, e.g. \"2001:db8:1::2\""
            )));
        }
        let gateway = plain_address6(text, "2001:db8:1::2").map_err(err)?;
        if let Some(why) = not_unicast6(gateway) {
            return Err(err(format!("next hop {why}; expected a unicast address")));
        }
        if let Some(p) = ports
            .iter()
            .find(|p| p.ipv6.iter().any(|i| i.address == gateway))
        {
            return Err(err(format!(
                "next hop {gateway} is our own address on {} (line {}); expected another host \
                 on its link",
                label(&p.device),
                p.line
            )));
        }
        if is_link_local6(gateway) {
            let Some(port) = device else {
                return Err(err(format!(
                    "next hop {gateway} is link-local, so it is reachable only on the link it is \
                     on; name that port with `device`, e.g. device = {}",
                    device_literal(&ports[0].device)
                )));
            };
            if ports[port].link_local == LinkLocal::Given(gateway) {
                return Err(err(format!(
                    "next hop {gateway} is our own link-local address on {}; expected another \
                     host on its link",
                    label(&ports[port].device)
                )));
            }
            return Ok(NextHop6Spec::Via { gateway, port });
        }
        let Some(port) = ports
            .iter()
            .position(|p| p.ipv6.iter().any(|i| i.contains(gateway)))
        else {
            return Err(err(format!(
                "next hop {gateway} is not in any port's IPv6 subnet ({}); a next hop must be \
                 directly reachable (or link-local, with `device`)",
                ipv6_subnets(ports)
            )));
        };
        if let Some(d) = device.filter(|&d| d != port) {
            return Err(err(format!(
                "next hop {gateway} is in the IPv6 subnet of {} (line {}), not on {} that \
                 `device` names; expected `device = {}` or no `device`",
                label(&ports[port].device),
                ports[port].line,
                label(&ports[d].device),
                device_literal(&ports[port].device)
            )));
        }
        Ok(NextHop6Spec::Via { gateway, port })
    }

    /// A route for exactly a port's IPv6 subnet must be on-link out of that
    /// port; an on-link route inside another port's subnet is refused.
    fn check_connected_subnet_route6(
        &self,
        ports: &[PortSpec],
        prefix: Ipv6Addr,
        prefix_len: u8,
        next_hop: NextHop6Spec,
        line: usize,
    ) -> Result<(), ConfigError> {
        for (i, p) in ports.iter().enumerate() {
            for s in &p.ipv6 {
                let exact = s.prefix_len == prefix_len && s.network() == prefix;
                let inside = s.prefix_len < prefix_len && s.contains(prefix);
                let fine = match next_hop {
                    NextHop6Spec::Connected { port } => port == i,
                    NextHop6Spec::Via { .. } => !exact,
                };
                if (exact || (inside && matches!(next_hop, NextHop6Spec::Connected { .. })))
                    && !fine
                {
                    return Err(self.error(
                        line,
                        format!(
                            "[[route]] {prefix}/{prefix_len}: {} the IPv6 subnet {} of {} \
                             (line {}), whose hosts are on that port; a route for it must be \
                             `device = {}`",
                            if exact { "is" } else { "lies inside" },
                            s.subnet(),
                            label(&p.device),
                            p.line,
                            device_literal(&p.device)
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}

/// `2001:db8:1::/64 on p0, ...`, or `none` when no port has IPv6.
pub(crate) fn ipv6_subnets(ports: &[PortSpec]) -> String {
    let all: Vec<String> = ports
        .iter()
        .flat_map(|p| {
            p.ipv6
                .iter()
                .map(move |s| format!("{} on {}", s.subnet(), label(&p.device)))
        })
        .collect();
    if all.is_empty() {
        "no port has `ipv6` addresses".to_owned()
    } else {
        all.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use crate::config::spec6::{NextHop6Spec, Route6Spec};
    use crate::config::testing::{assert_err, parse, with_ports6};

    fn route(body: &str) -> String {
        with_ports6("route", body)
    }

    #[test]
    fn ipv6_routes_parse() {
        let text = route(
            "prefix = \"::/0\"\nvia = \"2001:db8:1::2\"\n\n\
             [[route]]\nprefix = \"2001:db8:100::/48\"\nvia = \"fe80::2\"\ndevice = \"net_af_packet1\"\n\n\
             [[route]]\nprefix = \"2001:db8:200::/48\"\ndevice = \"net_af_packet0\"\n\n\
             [[route]]\nprefix = \"10.9.0.0/16\"\nvia = \"10.0.1.2\"\n",
        );
        let c = parse(&text).expect("IPv6 routes");
        let a = |s: &str| s.parse().unwrap();
        assert_eq!(
            c.routes6,
            [
                Route6Spec {
                    prefix: a("::"),
                    prefix_len: 0,
                    next_hop: NextHop6Spec::Via {
                        gateway: a("2001:db8:1::2"),
                        port: 0
                    },
                    line: 13,
                },
                Route6Spec {
                    prefix: a("2001:db8:100::"),
                    prefix_len: 48,
                    next_hop: NextHop6Spec::Via {
                        gateway: a("fe80::2"),
                        port: 1
                    },
                    line: 17,
                },
                Route6Spec {
                    prefix: a("2001:db8:200::"),
                    prefix_len: 48,
                    next_hop: NextHop6Spec::Connected { port: 0 },
                    line: 22,
                },
            ]
        );
        // The IPv4 route beside them is IPv4's, as before.
        assert_eq!(c.routes.len(), 1);
        assert_eq!(c.routes[0].line, 26);
    }

    #[test]
    fn bad_prefix_and_host_bits() {
        assert_err(
            &route("prefix = \"2001:db8:100::/200\"\nvia = \"2001:db8:1::2\"\n"),
            14,
            &[
                "[[route]] field `prefix`",
                "prefix length 200 is out of range; expected 0 to 128",
            ],
        );
        assert_err(
            &route("prefix = \"2001:db8:1x::/48\"\nvia = \"2001:db8:1::2\"\n"),
            14,
            &["[[route]] field `prefix`", "is not an IPv6 address"],
        );
        assert_err(
            &route("prefix = \"2001:db8:100::1/48\"\nvia = \"2001:db8:1::2\"\n"),
            14,
            &[
                "[[route]] field `prefix`",
                "host bits set",
                "did you mean \"2001:db8:100::/48\"?",
            ],
        );
    }

    #[test]
    fn mixed_family_routes() {
        assert_err(
            &route("prefix = \"2001:db8:100::/48\"\nvia = \"10.0.1.2\"\n"),
            15,
            &[
                "[[route]] field `via`",
                "next hop \"10.0.1.2\" is IPv4 but the prefix is IPv6",
                "one family",
            ],
        );
        assert_err(
            &route("prefix = \"10.9.0.0/16\"\nvia = \"2001:db8:1::2\"\n"),
            15,
            &[
                "[[route]] field `via`",
                "next hop \"2001:db8:1::2\" is IPv6 but the prefix is IPv4",
            ],
        );
    }

    #[test]
    fn link_local_gateway_needs_its_port() {
        assert_err(
            &route("prefix = \"2001:db8:100::/48\"\nvia = \"fe80::2\"\n"),
            15,
            &[
                "[[route]] field `via`",
                "fe80::2 is link-local",
                "name that port with `device`",
                "device = \"net_af_packet0\"",
            ],
        );
        assert_err(
            &route(
                "prefix = \"2001:db8:100::/48\"\nvia = \"fe80::1\"\ndevice = \"net_af_packet1\"\n",
            ),
            15,
            &["our own link-local address on net_af_packet1"],
        );
    }

    #[test]
    fn gateway_must_be_on_a_port() {
        assert_err(
            &route("prefix = \"2001:db8:100::/48\"\nvia = \"2001:db8:9::2\"\n"),
            15,
            &[
                "[[route]] field `via`",
                "next hop 2001:db8:9::2 is not in any port's IPv6 subnet (2001:db8:1::/64 on net_af_packet0, 2001:db8:2::/64 on net_af_packet1)",
                "directly reachable",
            ],
        );
        assert_err(
            &route("prefix = \"2001:db8:100::/48\"\nvia = \"2001:db8:1::2\"\ndevice = \"net_af_packet1\"\n"),
            15,
            &["in the IPv6 subnet of net_af_packet0 (line 1), not on net_af_packet1"],
        );
        assert_err(
            &route("prefix = \"2001:db8:100::/48\"\nvia = \"2001:db8:2::1\"\n"),
            15,
            &["next hop 2001:db8:2::1 is our own address on net_af_packet1 (line 6)"],
        );
        // A port without IPv6 addresses: the list says so.
        assert_err(
            "[[port]]\ndevice = \"p\"\naddress = \"10.0.1.1/24\"\n\n[[route]]\nprefix = \"::/0\"\nvia = \"2001:db8::1\"\n",
            7,
            &["no port has `ipv6` addresses"],
        );
    }

    #[test]
    fn gateway_not_unicast() {
        for (via, words) in [
            ("ff02::2", "ff02::2 is a multicast address"),
            ("::", ":: is the unspecified address"),
            ("::1", "::1 is the loopback address"),
        ] {
            assert_err(
                &route(&format!(
                    "prefix = \"2001:db8:100::/48\"\nvia = \"{via}\"\n"
                )),
                15,
                &["[[route]] field `via`", words],
            );
        }
    }

    #[test]
    fn never_forwarded_prefixes() {
        for (prefix, words) in [
            ("ff00::/8", "multicast ff00::/8"),
            ("ff02::/16", "multicast ff00::/8"),
            ("fe80::/64", "link-local fe80::/10"),
            ("::1/128", "loopback"),
            ("::/128", "unspecified"),
        ] {
            assert_err(
                &route(&format!("prefix = \"{prefix}\"\nvia = \"2001:db8:1::2\"\n")),
                13,
                &[prefix, words, "never forwarded (RFC 4291)"],
            );
        }
        assert_err(
            &route("prefix = \"2001:db8:2::1/128\"\nvia = \"2001:db8:1::2\"\n"),
            13,
            &["our own address on net_af_packet1"],
        );
    }

    #[test]
    fn connected_subnet_duplicates_and_shapes() {
        assert_err(
            &route("prefix = \"2001:db8:1::/64\"\nvia = \"2001:db8:2::2\"\n"),
            13,
            &[
                "is the IPv6 subnet 2001:db8:1::/64 of net_af_packet0 (line 1)",
                "`device = \"net_af_packet0\"`",
            ],
        );
        assert_err(
            &route("prefix = \"2001:db8:1:0:8000::/65\"\ndevice = \"net_af_packet1\"\n"),
            13,
            &["lies inside the IPv6 subnet 2001:db8:1::/64 of net_af_packet0"],
        );
        assert!(parse(&route(
            "prefix = \"2001:db8:1::/64\"\ndevice = \"net_af_packet0\"\n"
        ))
        .is_ok());
        assert_err(
            &route("prefix = \"2001:db8:100::/48\"\nvia = \"2001:db8:1::2\"\n\n[[route]]\nprefix = \"2001:db8:100::/48\"\nvia = \"2001:db8:2::2\"\n"),
            18,
            &["[[route]] field `prefix`", "2001:db8:100::/48 is already routed by the [[route]] at line 13 (this one is at line 17)"],
        );
        assert_err(
            &route("prefix = \"2001:db8:100::/48\"\n"),
            13,
            &["[[route]] 2001:db8:100::/48: has neither `via` nor `device`"],
        );
        assert_err(
            &route(
                "prefix = \"2001:db8:100::/48\"\nvia = [\"2001:db8:1::2\", \"2001:db8:1::3\"]\n",
            ),
            15,
            &["2 next hops; an IPv6 route takes one next hop"],
        );
    }
}
