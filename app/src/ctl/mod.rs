//! `fastpath ctl`: change and ask a running fastpath over a local unix
//! socket, `<EAL runtime folder>/fastpath.ctl` (for root
//! `/var/run/dpdk/<file prefix>/fastpath.ctl`, next to DPDK's telemetry
//! socket).
//!
//! The protocol is one JSON [`Request`] per line and one JSON [`Reply`] per
//! line. The server side ([`server`]) only moves requests to the main
//! lcore's control loop and back; the client side ([`client`]) is the
//! command line.

pub mod client;
pub mod server;

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The socket's name in the EAL runtime folder.
pub const SOCKET_NAME: &str = "fastpath.ctl";

/// The control socket of the fastpath running under EAL file prefix
/// `prefix`, in runtime base `base` (`dpdk::telemetry_client::default_runtime_base`).
pub fn socket_path(base: &Path, prefix: &str) -> PathBuf {
    base.join(prefix).join(SOCKET_NAME)
}

/// What is asked of the running fastpath.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum Request {
    /// `route add PREFIX via IP[,IP...]` (`dev`: None) or `route add PREFIX
    /// dev PORT`; an IPv6 prefix also `via IP dev PORT` (a link-local gateway
    /// and its port).
    RouteAdd {
        prefix: String,
        #[serde(default)]
        via: Vec<String>,
        #[serde(default)]
        dev: Option<String>,
    },
    /// `route del PREFIX`.
    RouteDel { prefix: String },
    /// `neigh add IP MAC [dev PORT]`: a static neighbour (`dev`: the port
    /// of a link-local IPv6 one).
    NeighAdd {
        address: String,
        mac: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dev: Option<String>,
    },
    /// `neigh del IP`: a static neighbour no more.
    NeighDel { address: String },
    /// Re-read the config file: routes, static neighbours and hooks.
    Reload,
    /// `show routes|neighbours|hooks|stats|fpm`.
    Show { what: Show },
    /// `capture start FILE`: dropped packets to a pcapng file (an absolute
    /// path: the client resolves a relative one against its own folder).
    CaptureStart { file: PathBuf },
    /// `capture stop`: end the running drop capture.
    CaptureStop,
}

impl Request {
    /// Whether it may change what the router holds or does (all but `show`).
    pub fn changes_state(&self) -> bool {
        !matches!(self, Request::Show { .. })
    }
}

/// What `show` lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Show {
    Routes,
    Neighbours,
    Hooks,
    Stats,
    /// The FPM session (zebra): state and counters.
    Fpm,
}

/// The answer: done (with text for people and data for scripts) or
/// refused, with what and why; a refused change changed nothing.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Reply {
    pub ok: bool,
    /// Why it was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// For people.
    #[serde(default)]
    pub text: String,
    /// For scripts (`--json`).
    #[serde(default)]
    pub data: serde_json::Value,
}

impl Reply {
    pub fn done(text: impl Into<String>, data: serde_json::Value) -> Reply {
        Reply {
            ok: true,
            error: None,
            text: text.into(),
            data,
        }
    }

    pub fn refused(why: impl Into<String>) -> Reply {
        Reply {
            ok: false,
            error: Some(why.into()),
            ..Reply::default()
        }
    }
}

impl From<Result<Reply, String>> for Reply {
    fn from(r: Result<Reply, String>) -> Reply {
        r.unwrap_or_else(Reply::refused)
    }
}
