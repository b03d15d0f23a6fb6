//! The FPM server's control-lcore side: each round of the control loop
//! takes what the listener thread parsed (a bounded batch), applies it to
//! zebra's RIB and through it to the FIB, by the same control-plane calls
//! `fastpath ctl route add/del` makes; after a ctl change or a reload,
//! FPM routes that waited behind a config or ctl route get their prefix
//! back (`fpm::rib` has the rules).

use super::control::changes::Running;
use super::control::ControlPlane;
use super::options::FpmOptions;
use crate::config::{
    route_prefix, route_prefix6, NextHop6Spec, NextHopSpec, Route6Spec, RouteSpec,
};
use crate::ctl::Request;
use crate::fib::Origin;
use crate::fpm::{FibSink, FpmRib, FpmServer, FpmStats};
use crate::lifecycle::RunError;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::Arc;
use std::time::Instant;

/// Events (frames, connects) taken per round of the control loop: whole
/// batches of the reader's until at least this many (about a millisecond
/// of a full table's routes, so the round still serves ARP and punts).
const EVENTS_PER_ROUND: usize = 256;

/// The FPM server and zebra's RIB.
pub(super) struct FpmLink {
    server: FpmServer,
    rib: FpmRib,
}

/// The control plane as the FIB the RIB writes into.
struct Sink<'c, 'a> {
    control: &'c mut ControlPlane<'a>,
    run: Running<'c>,
}

impl FibSink for Sink<'_, '_> {
    fn origin(&self, prefix: IpAddr, len: u8) -> Option<Origin> {
        match prefix {
            IpAddr::V4(p) => self.control.route_origin(p, len),
            IpAddr::V6(p) => self.control.route6_origin(p, len),
        }
    }

    fn port_of(&self, gateway: IpAddr) -> Option<usize> {
        let ports = &self.run.cfg.ports;
        match gateway {
            IpAddr::V4(g) => ports.iter().position(|p| p.contains(g)),
            IpAddr::V6(g) => ports
                .iter()
                .position(|p| p.ipv6.iter().any(|i| i.contains(g))),
        }
    }

    fn port_of_interface(&self, oif: u32) -> Option<usize> {
        let id = self.control.port_of_kernel_interface(oif)?;
        self.run.port_ids.iter().position(|&p| p == id)
    }

    fn set(&mut self, prefix: IpAddr, len: u8, hops: &[(IpAddr, usize)]) -> Result<(), String> {
        match prefix {
            IpAddr::V4(p) => self.set4(p, len, hops),
            IpAddr::V6(p) => self.set6(p, len, hops),
        }
    }

    fn remove(&mut self, prefix: IpAddr, len: u8) -> Result<(), String> {
        let text = format!("{prefix}/{len}");
        match prefix {
            IpAddr::V4(_) => self.control.route_del(&text).map(|_| ()),
            IpAddr::V6(_) => self.control.route_del6(&text).map(|_| ()),
        }
    }
}

impl Sink<'_, '_> {
    fn set4(&mut self, prefix: Ipv4Addr, len: u8, hops: &[(IpAddr, usize)]) -> Result<(), String> {
        let mut specs = hops.iter().filter_map(|&(gateway, port)| match gateway {
            IpAddr::V4(gateway) => Some(NextHopSpec::Via { gateway, port }),
            IpAddr::V6(_) => None,
        });
        let Some(next_hop) = specs.next() else {
            return Err(format!("route {prefix}/{len}: no next hop"));
        };
        let spec = RouteSpec {
            prefix,
            prefix_len: len,
            next_hop,
            multipath: specs.collect(),
            line: 0,
        };
        self.control
            .install_route(self.run, &spec, Origin::Fpm)
            .map(|_| ())
    }

    /// One path: the IPv6 FIB has no ECMP (the RIB cut the others).
    fn set6(&mut self, prefix: Ipv6Addr, len: u8, hops: &[(IpAddr, usize)]) -> Result<(), String> {
        let Some(&(IpAddr::V6(gateway), port)) = hops.first() else {
            return Err(format!("route {prefix}/{len}: no IPv6 next hop"));
        };
        let spec = Route6Spec {
            prefix,
            prefix_len: len,
            next_hop: NextHop6Spec::Via { gateway, port },
            line: 0,
        };
        self.control
            .install_routes6(self.run, &[spec], &[], Origin::Fpm)
            .map(|_| ())
    }
}

impl FpmLink {
    /// Listen where `--fpm` says.
    pub fn start(opts: &FpmOptions) -> Result<FpmLink, RunError> {
        let server = FpmServer::start(opts.listen).map_err(|e| {
            RunError::Usage(format!(
                "--fpm {}: cannot listen: {e} (another process there? `ss -ltnp` names it; \
                 pick another port and zebra's `fpm address ... port ...` with it)",
                opts.listen
            ))
        })?;
        eprintln!(
            "fastpath: fpm: listening on {} for zebra's dplane_fpm_nl (hold {:?})",
            server.local, opts.hold
        );
        let rib = FpmRib::new(opts.hold, server.stats.clone());
        Ok(FpmLink { server, rib })
    }

    pub fn stats(&self) -> Arc<FpmStats> {
        self.server.stats.clone()
    }

    /// One round: a batch of zebra's frames into the FIB, and the sweep
    /// when due. How many events were taken.
    pub fn poll(&mut self, control: &mut ControlPlane<'_>, run: Running<'_>) -> usize {
        let events = self.server.drain(EVENTS_PER_ROUND);
        let n = events.len();
        let now = Instant::now();
        let mut sink = Sink { control, run };
        if n > 0 {
            self.rib.apply(events, now, &mut sink);
        }
        if self.rib.sweep_at().is_some_and(|t| now >= t) {
            self.rib.tick(now, &mut sink);
            return n + 1;
        }
        n
    }

    /// After `request` was handled: the prefix it changed (all of them
    /// for a reload) set again from zebra's RIB.
    pub fn after(&mut self, request: &Changed, control: &mut ControlPlane<'_>, run: Running<'_>) {
        let mut sink = Sink { control, run };
        match request {
            Changed::Prefix(p, l) => self.rib.resync(Some((*p, *l)), &mut sink),
            Changed::All => self.rib.resync(None, &mut sink),
            Changed::Nothing => {}
        }
    }
}

/// What a ctl request may have changed in the FIB's routes.
pub(super) enum Changed {
    Prefix(IpAddr, u8),
    All,
    Nothing,
}

impl Changed {
    pub fn of(r: &Request) -> Changed {
        match r {
            Request::RouteAdd { prefix, .. } | Request::RouteDel { prefix } => {
                if let Ok((p, l)) = route_prefix(prefix) {
                    Changed::Prefix(IpAddr::V4(p), l)
                } else if let Ok((p, l)) = route_prefix6(prefix) {
                    Changed::Prefix(IpAddr::V6(p), l)
                } else {
                    Changed::Nothing
                }
            }
            Request::Reload => Changed::All,
            _ => Changed::Nothing,
        }
    }
}
