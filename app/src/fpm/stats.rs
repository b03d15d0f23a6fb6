//! The FPM session's state and counters, shared by the listener thread
//! (connections, frames, framing errors) and the control lcore (what the
//! frames did to the FIB); read by `fastpath ctl show fpm`, telemetry
//! (`/fastpath/fpm`) and `/metrics`.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{SystemTime, UNIX_EPOCH};

/// Every counter, by name (the order of [`FpmStats::fields`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(usize)]
pub enum Count {
    /// Connections from zebra accepted.
    Connections,
    /// Accepted connections that replaced a live one (zebra restarted
    /// before the old connection was seen to close).
    Replaced,
    /// FPM frames read.
    Frames,
    /// Netlink messages in them.
    Messages,
    /// Prefixes installed in the FIB (new there).
    RoutesAdded,
    /// Prefixes whose FPM route was replaced in place.
    RoutesReplaced,
    /// Prefixes removed from the FIB (zebra withdrew them).
    RoutesRemoved,
    /// Stale prefixes removed after the hold time.
    RoutesSwept,
    /// Next hops (and groups) set / removed.
    NexthopsSet,
    NexthopsRemoved,
    /// A config or ctl route holds the prefix: the FPM route waits.
    Shadowed,
    /// The prefix is a connected subnet or one of fastpath's fixed entries.
    FixedPrefix,
    /// The FIB refused the route (full: next-hop slots, LPM rules).
    FibRefused,
    /// A path whose gateway lies in no port's subnet of the route's family
    /// (or has no gateway, or a link-local one): left out of its route.
    NoPort,
    /// Paths beyond the FIB's ECMP width, cut.
    EcmpCut,
    /// A route naming a next-hop id zebra never sent.
    UnknownNexthop,
    /// A blackhole/unreachable/prohibit route: withdrawn (fastpath has no
    /// such next hop yet).
    NotUnicast,
    /// Routes of a table other than main (254).
    OtherTable,
    /// Kernel-protocol, local, broadcast routes: fastpath has its own.
    OwnRoute,
    /// Netlink message types fastpath does not take.
    UnknownMessage,
    /// FPM header: version other than 1.
    BadVersion,
    /// FPM header: message type other than 1 (netlink).
    BadType,
    /// FPM header: length below 4.
    BadLength,
    /// A netlink message that does not decode.
    MalformedNetlink,
    /// A message that decodes but whose attributes make no route.
    BadAttribute,
    /// Reads that failed (connection reset).
    ReadErrors,
}

impl Count {
    pub const ALL: [Count; 26] = [
        Count::Connections,
        Count::Replaced,
        Count::Frames,
        Count::Messages,
        Count::RoutesAdded,
        Count::RoutesReplaced,
        Count::RoutesRemoved,
        Count::RoutesSwept,
        Count::NexthopsSet,
        Count::NexthopsRemoved,
        Count::Shadowed,
        Count::FixedPrefix,
        Count::FibRefused,
        Count::NoPort,
        Count::EcmpCut,
        Count::UnknownNexthop,
        Count::NotUnicast,
        Count::OtherTable,
        Count::OwnRoute,
        Count::UnknownMessage,
        Count::BadVersion,
        Count::BadType,
        Count::BadLength,
        Count::MalformedNetlink,
        Count::BadAttribute,
        Count::ReadErrors,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Count::Connections => "connections",
            Count::Replaced => "connections_replaced",
            Count::Frames => "frames",
            Count::Messages => "messages",
            Count::RoutesAdded => "routes_added",
            Count::RoutesReplaced => "routes_replaced",
            Count::RoutesRemoved => "routes_removed",
            Count::RoutesSwept => "routes_swept",
            Count::NexthopsSet => "nexthops_set",
            Count::NexthopsRemoved => "nexthops_removed",
            Count::Shadowed => "shadowed",
            Count::FixedPrefix => "fixed_prefix",
            Count::FibRefused => "fib_refused",
            Count::NoPort => "no_port",
            Count::EcmpCut => "ecmp_cut",
            Count::UnknownNexthop => "unknown_nexthop",
            Count::NotUnicast => "not_unicast",
            Count::OtherTable => "other_table",
            Count::OwnRoute => "own_route",
            Count::UnknownMessage => "unknown_message",
            Count::BadVersion => "bad_version",
            Count::BadType => "bad_type",
            Count::BadLength => "bad_length",
            Count::MalformedNetlink => "malformed_netlink",
            Count::BadAttribute => "bad_attribute",
            Count::ReadErrors => "read_errors",
        }
    }

    /// Whether it is an error (logged once, the first time).
    pub fn is_error(self) -> bool {
        matches!(
            self,
            Count::BadVersion
                | Count::BadType
                | Count::BadLength
                | Count::MalformedNetlink
                | Count::BadAttribute
                | Count::UnknownMessage
                | Count::UnknownNexthop
                | Count::FibRefused
                | Count::ReadErrors
        )
    }
}

/// The session's state and counters.
#[derive(Debug, Default)]
pub struct FpmStats {
    counts: [AtomicU64; Count::ALL.len()],
    logged: [AtomicBool; Count::ALL.len()],
    connected: AtomicBool,
    /// Unix seconds of the last accepted connection (0: never).
    last_connect: AtomicU64,
    /// Routes received since the last connection (zebra's replay, then updates).
    session_routes: AtomicU64,
    /// Prefixes zebra gave (installed or waiting), stale among them.
    rib_routes: AtomicU64,
    stale_routes: AtomicU64,
}

impl FpmStats {
    pub fn add(&self, c: Count, n: u64) {
        self.counts[c as usize].fetch_add(n, Relaxed);
    }

    pub fn get(&self, c: Count) -> u64 {
        self.counts[c as usize].load(Relaxed)
    }

    /// Count one `c`; an error is said on stderr the first time its kind
    /// happens (with `detail`), then only counted.
    pub fn note(&self, c: Count, detail: impl FnOnce() -> String) {
        self.add(c, 1);
        if c.is_error() && !self.logged[c as usize].swap(true, Relaxed) {
            eprintln!(
                "fastpath: fpm: {}: {} (counted as fpm {}; said once)",
                c.name(),
                detail(),
                c.name()
            );
        }
    }

    /// A parsed frame's messages and what it skipped, by kind.
    pub fn count_parsed(&self, p: &super::Parsed) {
        self.add(Count::Messages, p.messages as u64);
        for k in &p.skipped {
            self.note(*k, || "a message of this kind".into());
        }
    }

    pub fn set_connected(&self, up: bool) {
        self.connected.store(up, Relaxed);
        if up {
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            self.last_connect.store(now, Relaxed);
            self.session_routes.store(0, Relaxed);
        }
    }

    pub fn connected(&self) -> bool {
        self.connected.load(Relaxed)
    }

    pub fn session_route(&self, n: u64) {
        self.session_routes.fetch_add(n, Relaxed);
    }

    pub fn set_rib(&self, routes: usize, stale: usize) {
        self.rib_routes.store(routes as u64, Relaxed);
        self.stale_routes.store(stale as u64, Relaxed);
    }

    /// The state (gauges) then every counter, by name.
    pub fn fields(&self) -> Vec<(&'static str, u64)> {
        let mut out = vec![
            ("connected", u64::from(self.connected())),
            ("last_connect_unix", self.last_connect.load(Relaxed)),
            ("session_routes", self.session_routes.load(Relaxed)),
            ("rib_routes", self.rib_routes.load(Relaxed)),
            ("stale_routes", self.stale_routes.load(Relaxed)),
        ];
        out.extend(Count::ALL.iter().map(|c| (c.name(), self.get(*c))));
        out
    }
}

/// How many of [`FpmStats::fields`] are gauges (the rest count up).
pub const GAUGES: usize = 5;
