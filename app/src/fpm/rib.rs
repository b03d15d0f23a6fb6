//! What zebra gave, on the control lcore: its routes and next hops (the FPM
//! RIB), and how they reach the FIB next to the config's and `fastpath
//! ctl`'s routes.
//!
//! Rules (docs/frr.md):
//! - **origin**: a config or ctl route of the same prefix wins; the FPM
//!   route waits in the RIB and takes the prefix as soon as the other is
//!   deleted. Connected subnets and fixed entries are never replaced.
//! - **one frame, one change per prefix**: a frame's (and a batch's)
//!   changes are applied to the RIB first; then each prefix they touched is
//!   set once to where it ended up (a `DELROUTE` + `NEWROUTE` of a prefix is
//!   one replace in place: no gap).
//! - **stale and sweep**: on a disconnect (or a new connection, which
//!   replaces the old) every FPM route and next hop is marked stale and
//!   keeps forwarding; what zebra sends again is fresh; what is still stale
//!   `hold` after the last connect or disconnect is removed.
//! - **ports**: a path's port is the one whose subnet (of the route's
//!   family) holds its gateway; else, for a gateway outside every subnet (a
//!   link-local one), the port whose kernel interface zebra names
//!   (`RTA_OIF`, with `[kernel] interfaces = true`). A path with neither
//!   (no gateway, a gateway of the other family, an interface that is not a
//!   port's) is left out (`no_port`).
//! - **families**: IPv4 and IPv6 routes alike; an IPv6 route takes one
//!   path (the IPv6 FIB has no ECMP), the rest cut (`ecmp_cut`).

use super::parse::{Change, NexthopDef, Parsed, Path, Via};
use super::stats::{Count, FpmStats};
use crate::fib::{Origin, MAX_PATHS};
use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The FIB as the FPM RIB changes it (the control plane; a map in tests).
/// Prefixes and gateways of one route are of one family.
pub trait FibSink {
    /// Where the route of exactly `prefix/len` comes from, if there is one.
    fn origin(&self, prefix: IpAddr, len: u8) -> Option<Origin>;
    /// The index of the port whose subnet (of `gateway`'s family) holds
    /// `gateway`.
    fn port_of(&self, gateway: IpAddr) -> Option<usize>;
    /// The index of the port whose kernel interface has index `oif` (with
    /// `[kernel] interfaces = true`).
    fn port_of_interface(&self, oif: u32) -> Option<usize>;
    /// Route `prefix/len` by `hops` (gateway, port index), in place, as an
    /// FPM route.
    fn set(&mut self, prefix: IpAddr, len: u8, hops: &[(IpAddr, usize)]) -> Result<(), String>;
    /// Delete the route of `prefix/len`.
    fn remove(&mut self, prefix: IpAddr, len: u8) -> Result<(), String>;
}

/// Paths a route of `prefix`'s family can hold: the IPv4 FIB's ECMP width,
/// one in IPv6.
fn max_paths(prefix: IpAddr) -> usize {
    if prefix.is_ipv4() {
        MAX_PATHS
    } else {
        1
    }
}

/// What the listener thread hands the control lcore, by session (each
/// accepted connection has a new number).
#[derive(Debug)]
pub enum Event {
    Connected(u64),
    Frame(u64, Parsed),
    Disconnected(u64),
}

type Key = (IpAddr, u8);

#[derive(Debug)]
struct Entry {
    via: Via,
    stale: bool,
}

/// Zebra's routes and next hops.
pub struct FpmRib {
    routes: HashMap<Key, Entry>,
    nexthops: HashMap<u32, (NexthopDef, bool)>,
    /// Routes that name each next-hop id (`RTA_NH_ID`).
    by_nexthop: HashMap<u32, HashSet<Key>>,
    stale: usize,
    hold: Duration,
    sweep_at: Option<Instant>,
    session: Option<u64>,
    stats: Arc<FpmStats>,
}

/// The prefixes a batch of changes touched, as they came.
#[derive(Default)]
struct Touched(Vec<Key>);

impl Touched {
    /// Each prefix once, by prefix.
    fn once_each(mut self) -> Vec<Key> {
        self.0.sort_unstable();
        self.0.dedup();
        self.0
    }
}

fn key(p: IpAddr, l: u8) -> Key {
    (p, l)
}

impl FpmRib {
    pub fn new(hold: Duration, stats: Arc<FpmStats>) -> FpmRib {
        FpmRib {
            routes: HashMap::new(),
            nexthops: HashMap::new(),
            by_nexthop: HashMap::new(),
            stale: 0,
            hold,
            sweep_at: None,
            session: None,
            stats,
        }
    }

    /// Routes zebra gave (installed or waiting).
    pub fn len(&self) -> usize {
        self.routes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.routes.is_empty()
    }

    /// Routes not sent again since the last connect or disconnect.
    pub fn stale(&self) -> usize {
        self.stale
    }

    /// When the stale routes go, if any wait.
    pub fn sweep_at(&self) -> Option<Instant> {
        self.sweep_at
    }

    /// Apply a batch of events (frames in order), then set each touched
    /// prefix once.
    pub fn apply(&mut self, events: Vec<Event>, now: Instant, sink: &mut impl FibSink) {
        let mut touched = Touched::default();
        for ev in events {
            match ev {
                Event::Connected(s) => {
                    self.session = Some(s);
                    self.stats.set_connected(true);
                    self.mark_stale(now);
                }
                Event::Disconnected(s) if self.session == Some(s) => {
                    self.session = None;
                    self.stats.set_connected(false);
                    self.mark_stale(now);
                }
                Event::Disconnected(_) => {}
                Event::Frame(s, parsed) if self.session == Some(s) => {
                    for c in parsed.changes {
                        self.change(c, &mut touched);
                    }
                }
                // A frame of a connection already replaced.
                Event::Frame(..) => {}
            }
        }
        for k in touched.once_each() {
            self.sync(k, sink);
        }
        self.publish();
    }

    /// Sweep the stale routes once the hold time has passed.
    pub fn tick(&mut self, now: Instant, sink: &mut impl FibSink) {
        if self.sweep_at.is_none_or(|t| now < t) {
            return;
        }
        self.sweep_at = None;
        let gone: Vec<Key> = self
            .routes
            .iter()
            .filter(|(_, e)| e.stale)
            .map(|(k, _)| *k)
            .collect();
        let mut touched = Touched::default();
        for k in gone {
            self.forget(k);
            touched.0.push(k);
        }
        let old: Vec<u32> = self
            .nexthops
            .iter()
            .filter(|(_, (_, stale))| *stale)
            .map(|(id, _)| *id)
            .collect();
        for id in old {
            self.nexthops.remove(&id);
            touched.0.extend(self.users(id));
        }
        self.stale = 0;
        for k in touched.once_each() {
            if self.routes.contains_key(&k) {
                self.sync(k, sink);
            } else if sink.origin(k.0, k.1) == Some(Origin::Fpm) {
                let _ = sink.remove(k.0, k.1);
                self.stats.add(Count::RoutesSwept, 1);
            }
        }
        self.publish();
    }

    /// Set `prefix/len` (after a `fastpath ctl` change of it), or with
    /// `None` every prefix (after a reload), again from the RIB: an FPM
    /// route that waited behind a deleted config or ctl route takes its
    /// place.
    pub fn resync(&mut self, prefix: Option<(IpAddr, u8)>, sink: &mut impl FibSink) {
        match prefix {
            Some((p, l)) => {
                if self.routes.contains_key(&key(p, l)) {
                    self.sync(key(p, l), sink);
                }
            }
            None => {
                let mut keys: Vec<Key> = self
                    .routes
                    .keys()
                    .filter(|k| sink.origin(k.0, k.1) != Some(Origin::Fpm))
                    .copied()
                    .collect();
                keys.sort_unstable();
                for k in keys {
                    self.sync(k, sink);
                }
            }
        }
    }

    fn publish(&self) {
        self.stats.set_rib(self.routes.len(), self.stale);
    }

    fn mark_stale(&mut self, now: Instant) {
        for e in self.routes.values_mut() {
            e.stale = true;
        }
        for (_, stale) in self.nexthops.values_mut() {
            *stale = true;
        }
        self.stale = self.routes.len();
        if !self.routes.is_empty() || !self.nexthops.is_empty() {
            self.sweep_at = Some(now + self.hold);
        }
    }

    /// One change to the RIB; the prefixes it may move, into `touched`.
    fn change(&mut self, c: Change, touched: &mut Touched) {
        match c {
            Change::RouteSet { prefix, len, via } => {
                let k = key(prefix, len);
                let id = match via {
                    Via::Nexthop(id) => Some(id),
                    Via::Paths(_) => None,
                };
                // One probe of the map: the old entry comes back from the insert.
                if let Some(old) = self.routes.insert(k, Entry { via, stale: false }) {
                    self.unlink(k, old);
                }
                if let Some(id) = id {
                    self.by_nexthop.entry(id).or_default().insert(k);
                }
                self.stats.session_route(1);
                touched.0.push(k);
            }
            Change::RouteDel { prefix, len } => {
                let k = key(prefix, len);
                self.forget(k);
                touched.0.push(k);
            }
            Change::NexthopSet { id, def } => {
                self.nexthops.insert(id, (def, false));
                self.stats.add(Count::NexthopsSet, 1);
                touched.0.extend(self.users(id));
            }
            Change::NexthopDel { id } => {
                if self.nexthops.remove(&id).is_some() {
                    self.stats.add(Count::NexthopsRemoved, 1);
                }
                touched.0.extend(self.users(id));
            }
        }
    }

    /// Take `k` out of the RIB (and of the next-hop index).
    fn forget(&mut self, k: Key) {
        if let Some(old) = self.routes.remove(&k) {
            self.unlink(k, old);
        }
    }

    /// What `k`'s entry `old`, out of the map, still counted: its stale
    /// mark and its place in the next-hop index.
    fn unlink(&mut self, k: Key, old: Entry) {
        if old.stale {
            self.stale -= 1;
        }
        if let Via::Nexthop(id) = old.via {
            if let Some(set) = self.by_nexthop.get_mut(&id) {
                set.remove(&k);
                if set.is_empty() {
                    self.by_nexthop.remove(&id);
                }
            }
        }
    }

    /// The routes that use next hop `id`, directly or through a group.
    fn users(&self, id: u32) -> Vec<Key> {
        let mut out: Vec<Key> = self
            .by_nexthop
            .get(&id)
            .into_iter()
            .flatten()
            .copied()
            .collect();
        for (g, (def, _)) in &self.nexthops {
            if matches!(def, NexthopDef::Group(m) if m.contains(&id)) {
                out.extend(self.by_nexthop.get(g).into_iter().flatten().copied());
            }
        }
        out
    }

    /// Bring the FIB's `k` to what the RIB says, under the origin rule.
    fn sync(&mut self, k: Key, sink: &mut impl FibSink) {
        let (p, l) = k;
        let hops = self.routes.get(&k).map(|e| self.resolve(p, &e.via, sink));
        let origin = sink.origin(p, l);
        match (&origin, &hops) {
            (Some(Origin::Config | Origin::Ctl), Some(_)) => {
                self.stats.add(Count::Shadowed, 1);
                return;
            }
            (Some(Origin::Connected(_) | Origin::Fixed(_)), Some(_)) => {
                self.stats.note(Count::FixedPrefix, || {
                    format!("{p}/{l} is fastpath's own (connected or fixed); zebra's route waits")
                });
                return;
            }
            (Some(o), _) if *o != Origin::Fpm => return,
            _ => {}
        }
        match hops {
            Some(h) if !h.is_empty() => match sink.set(p, l, &h) {
                Ok(()) if origin.is_none() => self.stats.add(Count::RoutesAdded, 1),
                Ok(()) => self.stats.add(Count::RoutesReplaced, 1),
                Err(e) => self.stats.note(Count::FibRefused, || e),
            },
            _ if origin == Some(Origin::Fpm) => match sink.remove(p, l) {
                Ok(()) => self.stats.add(Count::RoutesRemoved, 1),
                Err(e) => self.stats.note(Count::FibRefused, || e),
            },
            _ => {}
        }
    }

    /// The next hops of a route of `prefix` as (gateway, port), at most
    /// [`max_paths`].
    fn resolve(&self, prefix: IpAddr, via: &Via, sink: &impl FibSink) -> Vec<(IpAddr, usize)> {
        let mut paths: Vec<&Path> = Vec::new();
        match via {
            Via::Paths(ps) => paths.extend(ps),
            Via::Nexthop(id) => self.members(*id, &mut paths),
        }
        let mut out: Vec<(IpAddr, usize)> = Vec::new();
        for path in paths {
            let hop = match path.gateway {
                // By subnet; else (a link-local gateway) by zebra's
                // interface, one of the ports' kernel interfaces.
                Some(g) if g.is_ipv4() == prefix.is_ipv4() => sink
                    .port_of(g)
                    .or_else(|| sink.port_of_interface(path.oif))
                    .map(|port| (g, port)),
                _ => None,
            };
            match hop {
                Some(h) if !out.contains(&h) => out.push(h),
                Some(_) => {}
                None => self.stats.add(Count::NoPort, 1),
            }
        }
        let max = max_paths(prefix);
        if out.len() > max {
            self.stats.add(Count::EcmpCut, (out.len() - max) as u64);
            out.truncate(max);
        }
        out
    }

    /// The paths of next hop `id` (a group's members' paths).
    fn members<'s>(&'s self, id: u32, out: &mut Vec<&'s Path>) {
        let unknown = |id: u32| {
            self.stats.note(Count::UnknownNexthop, || {
                format!("a route names next hop {id}, which zebra never sent")
            })
        };
        match self.nexthops.get(&id) {
            Some((NexthopDef::One(p), _)) => out.push(p),
            Some((NexthopDef::Group(ids), _)) => {
                for m in ids {
                    match self.nexthops.get(m) {
                        Some((NexthopDef::One(p), _)) => out.push(p),
                        Some(_) => {}
                        None => unknown(*m),
                    }
                }
            }
            Some((NexthopDef::Blackhole, _)) => self.stats.add(Count::NotUnicast, 1),
            None => unknown(id),
        }
    }
}
