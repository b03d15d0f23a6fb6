//! The IPv6 prefixes a config installs: its IPv6 routes, each port's IPv6
//! subnets (on-link), and what no route changes: each port's addresses
//! (link-local included) delivered locally, multicast, link-local and the
//! addresses RFC 4291 never forwards.

use super::{Fib6Entry, NextHop6};
use crate::config::{NextHop6Spec, RouterConfig};
use crate::fib::{HopKind, Origin, NEIGH_BY_DST};
use std::net::Ipv6Addr;

/// The entries in order (later entries replace identical prefixes, so a
/// route for one of our addresses or into ff00::/8 cannot take effect).
/// `port_ids[i]` is the DPDK id of `cfg.ports[i]`, `macs[i]` its MAC (for a
/// link-local address derived from it); `gateway_neigh` gives a gateway's
/// neighbour-table index on its port (adding it if new).
pub fn fib6_entries(
    cfg: &RouterConfig,
    port_ids: &[u16],
    macs: &[[u8; 6]],
    mut gateway_neigh: impl FnMut(Ipv6Addr, u16) -> u32,
) -> Vec<Fib6Entry> {
    let hop = |kind, i: usize| NextHop6 {
        kind,
        port: port_ids[i],
        gateway: None,
        neigh: NEIGH_BY_DST,
        mtu: cfg.ports[i].mtu,
    };
    let mut out = Vec::new();
    for r in &cfg.routes6 {
        let h = match r.next_hop {
            NextHop6Spec::Via { gateway, port } => NextHop6 {
                gateway: Some(gateway),
                neigh: gateway_neigh(gateway, port_ids[port]),
                ..hop(HopKind::Forward, port)
            },
            NextHop6Spec::Connected { port } => hop(HopKind::Forward, port),
        };
        out.push(Fib6Entry {
            prefix: r.prefix,
            len: r.prefix_len,
            hop: h,
            origin: Origin::Config,
        });
    }
    for (i, p) in cfg.ports.iter().enumerate() {
        for s in &p.ipv6 {
            out.push(Fib6Entry {
                prefix: s.network(),
                len: s.prefix_len,
                hop: hop(HopKind::Forward, i),
                origin: Origin::Connected(port_ids[i]),
            });
        }
    }
    let fixed = |prefix: u128, len, hop, what: &str| Fib6Entry {
        prefix: Ipv6Addr::from_bits(prefix),
        len,
        hop,
        origin: Origin::Fixed(what.to_owned()),
    };
    for (prefix, len, kind, what) in [
        (0xff00 << 112, 8, HopKind::NotUnicast, "multicast"),
        (
            0xfe80 << 112,
            10,
            HopKind::Martian,
            "link-local (never forwarded off its link)",
        ),
        (1, 128, HopKind::Martian, "loopback"),
        (0, 128, HopKind::Martian, "unspecified"),
        (0xffff << 32, 96, HopKind::Martian, "IPv4-mapped"),
    ] {
        out.push(fixed(prefix, len, hop(kind, 0), what));
    }
    for (i, p) in cfg.ports.iter().enumerate() {
        let id = port_ids[i];
        let own = p.ipv6.iter().map(|s| s.address);
        for a in own.chain([p.link_local.address(macs[i])]) {
            let what = format!("our own address on port {id}");
            out.push(fixed(a.to_bits(), 128, hop(HopKind::Local, i), &what));
        }
    }
    out
}
