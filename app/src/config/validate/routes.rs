//! `[[route]]`: a prefix and exactly one of `via` (one next hop or an ECMP
//! set) or `device` (on-link), each prefix once, never into space that is
//! not forwarded.

use crate::config::device::{describe_device, device_literal, label};
use crate::config::fields::{plain_address, route_prefix};
use crate::config::fields6::is_ipv6_text;
use crate::config::position::{ConfigError, Source};
use crate::config::schema::{RawDevice, RawRoute, RawVia, MAX_NEXT_HOPS};
use crate::config::spec::{NextHopSpec, PortSpec, RouteSpec};
use std::net::Ipv4Addr;
use toml::Spanned;

impl Source<'_> {
    /// Checks every `[[route]]` and that no prefix is given twice.
    pub(crate) fn routes(
        &self,
        ports: &[PortSpec],
        raw: &[Spanned<RawRoute>],
    ) -> Result<Vec<RouteSpec>, ConfigError> {
        let mut routes: Vec<RouteSpec> = Vec::with_capacity(raw.len());
        // IPv6 prefixes are `routes6`'s.
        for r in raw
            .iter()
            .filter(|r| !is_ipv6_text(r.get_ref().prefix.get_ref()))
        {
            let route = self.route(ports, r)?;
            if let Some(prev) = routes
                .iter()
                .find(|p| p.prefix == route.prefix && p.prefix_len == route.prefix_len)
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

    pub(crate) fn route(
        &self,
        ports: &[PortSpec],
        raw: &Spanned<RawRoute>,
    ) -> Result<RouteSpec, ConfigError> {
        let r = raw.get_ref();
        let line = self.line_of(&raw.span());
        let (prefix, prefix_len) = route_prefix(r.prefix.get_ref())
            .map_err(|m| self.field_error("route", "prefix", &r.prefix, m))?;
        let what = format!("[[route]] {prefix}/{prefix_len}");
        let mut multipath = Vec::new();
        let next_hop = match (&r.via, &r.device) {
            (Some(via), None) => {
                let mut hops = self.route_vias(ports, via)?;
                multipath = hops.split_off(1);
                hops[0]
            }
            (None, Some(device)) => NextHopSpec::Connected {
                port: self.port_of_device(ports, "route", device)?,
            },
            (Some(_), Some(_)) => {
                return Err(self.error(
                    line,
                    format!(
                        "{what}: has both `via` and `device`; expected exactly one: \
                         `via` for a next hop, or `device` for a connected (on-link) route"
                    ),
                ))
            }
            (None, None) => {
                return Err(self.error(
                    line,
                    format!(
                        "{what}: has neither `via` nor `device`; expected exactly one: \
                         `via = \"<next hop address>\"` or `device = \"<port device>\"`"
                    ),
                ))
            }
        };
        self.check_connected_subnet_route(ports, prefix, prefix_len, next_hop, line)?;
        self.check_reserved_route(ports, prefix, prefix_len, line)?;
        Ok(RouteSpec {
            prefix,
            prefix_len,
            next_hop,
            multipath,
            line,
        })
    }

    /// `via`: one next hop, or 1 to `MAX_NEXT_HOPS` different ones.
    pub(crate) fn route_vias(
        &self,
        ports: &[PortSpec],
        via: &Spanned<RawVia>,
    ) -> Result<Vec<NextHopSpec>, ConfigError> {
        let list = match via.get_ref() {
            RawVia::One(s) => {
                return Ok(vec![
                    self.route_via(ports, &Spanned::new(via.span(), s.clone()))?
                ])
            }
            RawVia::Many(list) => list,
        };
        if list.is_empty() || list.len() > MAX_NEXT_HOPS {
            return Err(self.field_error(
                "route",
                "via",
                via,
                format!(
                    "{} next hops; expected 1 to {MAX_NEXT_HOPS} (an array of addresses, e.g. \
                     [\"10.0.1.2\", \"10.0.1.3\"])",
                    list.len()
                ),
            ));
        }
        let mut hops: Vec<NextHopSpec> = Vec::with_capacity(list.len());
        for v in list {
            let hop = self.route_via(ports, v)?;
            if hops.contains(&hop) {
                return Err(self.field_error(
                    "route",
                    "via",
                    v,
                    format!(
                        "next hop {} is given twice; expected each next hop once",
                        v.get_ref().trim()
                    ),
                ));
            }
            hops.push(hop);
        }
        Ok(hops)
    }

    /// A route into space that is never forwarded (multicast, 0/8, 127/8,
    /// 240/4), or for one of our own addresses or a subnet broadcast: the
    /// router would either ignore it or forward what it must not.
    pub(crate) fn check_reserved_route(
        &self,
        ports: &[PortSpec],
        prefix: Ipv4Addr,
        prefix_len: u8,
        line: usize,
    ) -> Result<(), ConfigError> {
        let what = format!("[[route]] {prefix}/{prefix_len}");
        let overlaps = |net: Ipv4Addr, len: u8| {
            let shorter = prefix_len.min(len);
            let mask = u32::MAX.checked_shl(32 - u32::from(shorter)).unwrap_or(0);
            u32::from(prefix) & mask == u32::from(net) & mask
        };
        // The default route (and other short prefixes) may cover these
        // ranges: the router still never forwards into them.
        for (net, len, name) in [
            (Ipv4Addr::new(224, 0, 0, 0), 4, "multicast 224.0.0.0/4"),
            (Ipv4Addr::new(0, 0, 0, 0), 8, "\"this network\" 0.0.0.0/8"),
            (Ipv4Addr::new(127, 0, 0, 0), 8, "loopback 127.0.0.0/8"),
            (Ipv4Addr::new(240, 0, 0, 0), 4, "reserved 240.0.0.0/4"),
        ] {
            if prefix_len >= len && overlaps(net, len) {
                return Err(self.error(
                    line,
                    format!(
                        "{what}: lies in {name}, which is never forwarded (RFC 1812); \
                         remove the route"
                    ),
                ));
            }
        }
        if prefix_len == 32 {
            for p in ports {
                if prefix == p.address || (p.prefix_len <= 30 && prefix == p.broadcast()) {
                    return Err(self.error(
                        line,
                        format!(
                            "{what}: is {} of {} (line {}); it is delivered locally or \
                             not at all, and a route cannot change that",
                            if prefix == p.address {
                                "our own address"
                            } else {
                                "the subnet broadcast"
                            },
                            label(&p.device),
                            p.line
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// `via`: a host address inside a connected subnet, not one of ours.
    pub(crate) fn route_via(
        &self,
        ports: &[PortSpec],
        via: &Spanned<String>,
    ) -> Result<NextHopSpec, ConfigError> {
        let err = |m: String| self.field_error("route", "via", via, m);
        if is_ipv6_text(via.get_ref()) {
            return Err(err(format!(
                "next hop {:?} is IPv6 but the prefix is IPv4; a route's prefix and next hop \
                 are of one family: expected an IPv4 address, e.g. \"10.0.1.2\"",
                via.get_ref()
            )));
        }
        let gateway = plain_address(via.get_ref(), "10.0.1.2").map_err(err)?;
        let port = self
            .neighbour_port(
                ports,
                gateway,
                "next hop",
                "a next hop must be directly reachable",
            )
            .map_err(err)?;
        Ok(NextHopSpec::Via { gateway, port })
    }

    /// The index of the configured port named by a `device` field.
    pub(crate) fn port_of_device(
        &self,
        ports: &[PortSpec],
        section: &str,
        raw: &Spanned<RawDevice>,
    ) -> Result<usize, ConfigError> {
        let device = self.device(section, raw)?;
        ports
            .iter()
            .position(|p| p.device == device)
            .ok_or_else(|| {
                self.field_error(
                    section,
                    "device",
                    raw,
                    format!(
                        "{} is not a configured port; expected the device of a [[port]]: {}",
                        describe_device(&device),
                        ports
                            .iter()
                            .map(|p| device_literal(&p.device))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })
    }

    /// A route for exactly a connected subnet must be a `device` route out of
    /// that subnet's port.
    pub(crate) fn check_connected_subnet_route(
        &self,
        ports: &[PortSpec],
        prefix: Ipv4Addr,
        prefix_len: u8,
        next_hop: NextHopSpec,
        line: usize,
    ) -> Result<(), ConfigError> {
        // An on-link route inside another port's connected subnet: its
        // neighbours answer ARP on that other port, not on this one.
        if let NextHopSpec::Connected { port } = next_hop {
            let inside = ports
                .iter()
                .enumerate()
                .find(|(j, p)| *j != port && p.prefix_len < prefix_len && p.contains(prefix));
            if let Some((_, p)) = inside {
                return Err(self.error(
                    line,
                    format!(
                        "[[route]] {prefix}/{prefix_len}: lies inside the connected subnet \
                         {} of {} (line {}), so its hosts are on that port; an on-link \
                         route must use `device = {}` or leave the subnet to its port",
                        p.subnet(),
                        label(&p.device),
                        p.line,
                        device_literal(&p.device)
                    ),
                ));
            }
        }
        let Some(i) = ports
            .iter()
            .position(|p| p.prefix_len == prefix_len && p.network() == u32::from(prefix))
        else {
            return Ok(());
        };
        if next_hop == (NextHopSpec::Connected { port: i }) {
            return Ok(());
        }
        let p = &ports[i];
        Err(self.error(
            line,
            format!(
                "[[route]] {prefix}/{prefix_len}: this is the connected subnet of {} (line {}); \
                 a route for it must be `device = {}`",
                label(&p.device),
                p.line,
                device_literal(&p.device)
            ),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testing::{assert_err, parse, with_ports};
    use crate::config::RouterConfig;
    use std::path::Path;

    // ----- routes ----------------------------------------------------------------

    fn route(body: &str) -> String {
        with_ports(&format!("\n[[route]]\n{body}"))
    }

    #[test]
    fn route_prefix_invalid() {
        assert_err(
            &route("prefix = \"10.0.0.0\"\nvia = \"10.0.1.2\"\n"),
            10,
            &["[[route]] field `prefix`", "no prefix length"],
        );
        assert_err(
            &route("prefix = \"10.0.0.0/40\"\nvia = \"10.0.1.2\"\n"),
            10,
            &["[[route]] field `prefix`", "out of range"],
        );
        assert_err(
            &route("prefix = \"10.0.0.256/8\"\nvia = \"10.0.1.2\"\n"),
            10,
            &["not an IPv4 address"],
        );
    }

    #[test]
    fn route_prefix_host_bits() {
        assert_err(
            &route("prefix = \"10.0.1.7/24\"\nvia = \"10.0.2.2\"\n"),
            10,
            &[
                "[[route]] field `prefix`",
                "host bits",
                "did you mean \"10.0.1.0/24\"?",
            ],
        );
    }

    #[test]
    fn route_needs_exactly_one_of_via_device() {
        assert_err(
            &route("prefix = \"10.9.0.0/16\"\nvia = \"10.0.1.2\"\ndevice = \"net_af_packet0\"\n"),
            9,
            &[
                "[[route]] 10.9.0.0/16",
                "both `via` and `device`",
                "exactly one",
            ],
        );
        assert_err(
            &route("prefix = \"10.9.0.0/16\"\n"),
            9,
            &[
                "[[route]] 10.9.0.0/16",
                "neither `via` nor `device`",
                "exactly one",
            ],
        );
    }

    #[test]
    fn route_via_not_connected() {
        let e = assert_err(
            &route("prefix = \"10.9.0.0/16\"\nvia = \"10.9.9.9\"\n"),
            11,
            &[
                "[[route]] field `via`",
                "next hop 10.9.9.9 is not in any connected subnet (10.0.1.0/24 on net_af_packet0, 10.0.2.0/24 on net_af_packet1); a next hop must be directly reachable",
            ],
        );
        assert!(e.to_string().starts_with("router.toml:11: "), "{e}");
    }

    #[test]
    fn route_via_own_address_or_broadcast() {
        assert_err(
            &route("prefix = \"10.9.0.0/16\"\nvia = \"10.0.2.1\"\n"),
            11,
            &["[[route]] field `via`", "our own address", "net_af_packet1"],
        );
        assert_err(
            &route("prefix = \"10.9.0.0/16\"\nvia = \"10.0.2.255\"\n"),
            11,
            &["[[route]] field `via`", "broadcast address"],
        );
        assert_err(
            &route("prefix = \"10.9.0.0/16\"\nvia = \"10.0.2.0/24\"\n"),
            11,
            &["[[route]] field `via`", "plain IPv4 address"],
        );
    }

    #[test]
    fn routes_into_reserved_space_or_onto_our_addresses() {
        for (prefix, words) in [
            ("224.1.0.0/16", "multicast 224.0.0.0/4"),
            ("127.1.0.0/16", "loopback 127.0.0.0/8"),
            ("0.1.0.0/16", "0.0.0.0/8"),
            ("240.0.0.0/8", "reserved 240.0.0.0/4"),
        ] {
            assert_err(
                &route(&format!("prefix = \"{prefix}\"\nvia = \"10.0.1.2\"\n")),
                9,
                &[prefix, words, "never forwarded"],
            );
        }
        assert_err(
            &route("prefix = \"10.0.2.1/32\"\nvia = \"10.0.1.2\"\n"),
            9,
            &["our own address of net_af_packet1 (line 5)"],
        );
        assert_err(
            &route("prefix = \"10.0.2.255/32\"\nvia = \"10.0.1.2\"\n"),
            9,
            &["the subnet broadcast of net_af_packet1"],
        );
        // A default route is fine: it covers those ranges, the router still
        // never forwards into them.
        assert!(RouterConfig::parse(
            Path::new("router.toml"),
            &route("prefix = \"0.0.0.0/0\"\nvia = \"10.0.1.2\"\n"),
        )
        .is_ok());
    }

    #[test]
    fn on_link_route_inside_another_ports_subnet() {
        assert_err(
            &route("prefix = \"10.0.1.128/25\"\ndevice = \"net_af_packet1\"\n"),
            9,
            &[
                "10.0.1.128/25",
                "inside the connected subnet 10.0.1.0/24 of net_af_packet0 (line 1)",
                "device = \"net_af_packet0\"",
            ],
        );
        // The same route on its own port's side is fine.
        assert!(RouterConfig::parse(
            Path::new("router.toml"),
            &route("prefix = \"10.0.1.128/25\"\ndevice = \"net_af_packet0\"\n"),
        )
        .is_ok());
    }

    #[test]
    fn route_device_unknown() {
        assert_err(
            &route("prefix = \"10.9.0.0/16\"\ndevice = \"net_af_packet7\"\n"),
            11,
            &[
                "[[route]] field `device`",
                "\"net_af_packet7\" is not a configured port",
                "\"net_af_packet0\", \"net_af_packet1\"",
            ],
        );
        assert_err(
            &route("prefix = \"10.9.0.0/16\"\ndevice = 0\n"),
            11,
            &[
                "[[route]] field `device`",
                "port id 0 is not a configured port",
            ],
        );
    }

    #[test]
    fn duplicate_route_prefix() {
        assert_err(
            &route("prefix = \"10.9.0.0/16\"\nvia = \"10.0.1.2\"\n\n[[route]]\nprefix = \"10.9.0.0/16\"\ndevice = \"net_af_packet1\"\n"),
            14,
            &["[[route]] field `prefix`", "10.9.0.0/16 is already routed", "line 9", "line 13"],
        );
        // same prefix, other length: fine
        assert!(parse(&route("prefix = \"10.9.0.0/16\"\nvia = \"10.0.1.2\"\n\n[[route]]\nprefix = \"10.9.0.0/24\"\nvia = \"10.0.1.2\"\n")).is_ok());
    }

    #[test]
    fn route_for_connected_subnet() {
        assert_err(
            &route("prefix = \"10.0.1.0/24\"\nvia = \"10.0.2.2\"\n"),
            9,
            &[
                "[[route]] 10.0.1.0/24",
                "connected subnet of net_af_packet0 (line 1)",
                "device = \"net_af_packet0\"",
            ],
        );
        assert_err(
            &route("prefix = \"10.0.1.0/24\"\ndevice = \"net_af_packet1\"\n"),
            9,
            &["connected subnet of net_af_packet0"],
        );
        let c = parse(&route(
            "prefix = \"10.0.1.0/24\"\ndevice = \"net_af_packet0\"\n",
        ))
        .expect("own subnet");
        assert_eq!(c.routes[0].next_hop, NextHopSpec::Connected { port: 0 });
    }
}
