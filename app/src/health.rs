//! `fastpath health [--file-prefix P] [--runtime-dir DIR]`: ask a running
//! fastpath, through DPDK's telemetry socket, whether it answers and which
//! ports it has. For container health checks and readiness probes: exit 0 with
//! a one-line summary when it answers, 1 with the reason when it does not.

use crate::dpdk::telemetry_client::{
    default_runtime_base, socket_path, TelemetryClient, TelemetryError,
};
use clap::Parser;
use std::path::PathBuf;
use std::time::Duration;

/// EAL's file prefix when `--file-prefix` is not given.
pub const EAL_DEFAULT_PREFIX: &str = "rte";

/// Environment variable that names the file prefix when `--file-prefix` is
/// not given (the image's HEALTHCHECK reads it).
pub const PREFIX_ENV: &str = "FASTPATH_FILE_PREFIX";

/// `fastpath health` options.
#[derive(Parser, Debug, Clone, PartialEq)]
#[command(
    name = "fastpath health",
    about = "Ask a running fastpath through DPDK's telemetry socket whether it answers \
             (exit 0 and a one-line summary) or not (exit 1 and why)",
    override_usage = "fastpath health [--file-prefix PREFIX] [--runtime-dir DIR] [OPTIONS]"
)]
pub struct HealthArgs {
    /// The EAL --file-prefix fastpath runs with [default: $FASTPATH_FILE_PREFIX,
    /// else EAL's default `rte`].
    #[arg(long, value_name = "PREFIX")]
    pub file_prefix: Option<String>,

    /// The folder holding one folder per file prefix [default: as EAL picks
    /// it: /var/run/dpdk for root, else $XDG_RUNTIME_DIR/dpdk or /tmp/dpdk].
    #[arg(long, value_name = "DIR")]
    pub runtime_dir: Option<PathBuf>,

    /// Seconds to wait for each answer.
    #[arg(long, value_name = "SECS", default_value_t = 2.0)]
    pub timeout: f64,

    /// Also fail unless fastpath has exactly this many ports.
    #[arg(long, value_name = "N")]
    pub expect_ports: Option<usize>,
}

/// One port as telemetry reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortHealth {
    pub id: u64,
    pub name: Option<String>,
    pub started: Option<bool>,
    pub link_up: Option<bool>,
}

/// What a healthy fastpath answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Health {
    pub socket: PathBuf,
    pub prefix: String,
    pub version: String,
    pub pid: u64,
    pub ports: Vec<PortHealth>,
}

impl Health {
    /// The one-line summary `fastpath health` prints.
    pub fn summary(&self) -> String {
        let ports = self
            .ports
            .iter()
            .map(|p| {
                let mut s = p.id.to_string();
                if let Some(n) = &p.name {
                    s.push(' ');
                    s.push_str(n);
                }
                s.push_str(match (p.started, p.link_up) {
                    (Some(false), _) => " stopped",
                    (_, Some(true)) => " up",
                    (_, Some(false)) => " down",
                    _ => "",
                });
                s
            })
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "fastpath healthy: {} pid {} (file prefix {}), {} port{}{}{}",
            self.version,
            self.pid,
            self.prefix,
            self.ports.len(),
            if self.ports.len() == 1 { "" } else { "s" },
            if ports.is_empty() { "" } else { ": " },
            ports
        )
    }
}

/// Ask the fastpath that `args` names.
pub fn check(args: &HealthArgs) -> Result<Health, String> {
    let prefix = args
        .file_prefix
        .clone()
        .or_else(|| std::env::var(PREFIX_ENV).ok().filter(|p| !p.is_empty()))
        .unwrap_or_else(|| EAL_DEFAULT_PREFIX.to_string());
    let base = args
        .runtime_dir
        .clone()
        .unwrap_or_else(default_runtime_base);
    let socket = socket_path(&base, &prefix);
    if !(args.timeout.is_finite() && args.timeout > 0.0 && args.timeout <= 3600.0) {
        return Err(format!(
            "--timeout {}: give a positive number of seconds, at most 3600",
            args.timeout
        ));
    }
    let timeout = Duration::from_secs_f64(args.timeout);
    let mut c =
        TelemetryClient::connect(&socket, timeout).map_err(|e| explain(&e, &prefix, &base))?;
    let hello = c.hello().clone();
    let ids = c
        .command("/ethdev/list")
        .map_err(|e| explain(&e, &prefix, &base))?;
    let ids: Vec<u64> = ids
        .as_array()
        .ok_or_else(|| format!("{}: /ethdev/list is not a list: {ids}", socket.display()))?
        .iter()
        .filter_map(|v| v.as_u64())
        .collect();
    let mut ports = Vec::with_capacity(ids.len());
    for id in ids {
        let info = c
            .command(&format!("/ethdev/info,{id}"))
            .map_err(|e| explain(&e, &prefix, &base))?;
        let link = c
            .command(&format!("/ethdev/link_status,{id}"))
            .map_err(|e| explain(&e, &prefix, &base))?;
        ports.push(PortHealth {
            id,
            name: info
                .get("name")
                .and_then(|v| v.as_str())
                .map(str::to_string),
            started: info
                .get("dev_started")
                .and_then(|v| v.as_u64())
                .map(|s| s != 0),
            link_up: link
                .get("status")
                .and_then(|v| v.as_str())
                .map(|s| s == "UP"),
        });
    }
    let health = Health {
        socket,
        prefix,
        version: hello.version,
        pid: hello.pid,
        ports,
    };
    if let Some(n) = args.expect_ports {
        if health.ports.len() != n {
            return Err(format!(
                "{} (expected {n} port{})",
                health
                    .summary()
                    .replacen("fastpath healthy", "fastpath unhealthy", 1),
                if n == 1 { "" } else { "s" }
            ));
        }
    }
    Ok(health)
}

/// The error of `e`, with what to check.
fn explain(e: &TelemetryError, prefix: &str, base: &std::path::Path) -> String {
    match e {
        TelemetryError::NoSocket { .. } => {
            let others = prefixes_with_socket(base);
            let found = if others.is_empty() {
                format!(
                    "no DPDK process has a telemetry socket under {}",
                    base.display()
                )
            } else {
                format!(
                    "telemetry sockets under {} are for file prefix(es): {}",
                    base.display(),
                    others.join(", ")
                )
            };
            format!(
                "{e}. Is fastpath running with --file-prefix {prefix} (and as this user: root's \
                 runtime folders are in /var/run/dpdk, other users' in $XDG_RUNTIME_DIR/dpdk or \
                 /tmp/dpdk; --runtime-dir DIR looks elsewhere)? Was telemetry turned off \
                 (--no-telemetry)? ({found})"
            )
        }
        TelemetryError::Refused { .. } => {
            format!("{e}: the fastpath with file prefix {prefix} is no longer running")
        }
        _ => e.to_string(),
    }
}

/// File prefixes under `base` that have a telemetry socket file.
fn prefixes_with_socket(base: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(base)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|d| socket_path(base, &d.file_name().to_string_lossy()).exists())
        .map(|d| d.file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// `fastpath health ARGS...` (`argv[0]` is `health`): print the summary or
/// the error; the process exit code.
pub fn main(argv: &[String]) -> i32 {
    let args = match HealthArgs::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => e.exit(),
    };
    match check(&args) {
        Ok(h) => {
            println!("{}", h.summary());
            0
        }
        Err(msg) => {
            eprintln!("fastpath health: {msg}");
            1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_names_ports_and_states() {
        let h = Health {
            socket: PathBuf::from("/x"),
            prefix: "p".into(),
            version: "DPDK 22.11.11".into(),
            pid: 7,
            ports: vec![
                PortHealth {
                    id: 0,
                    name: Some("net_null0".into()),
                    started: Some(true),
                    link_up: Some(true),
                },
                PortHealth {
                    id: 1,
                    name: Some("net_null1".into()),
                    started: Some(false),
                    link_up: Some(true),
                },
            ],
        };
        assert_eq!(
            h.summary(),
            "fastpath healthy: DPDK 22.11.11 pid 7 (file prefix p), 2 ports: \
             0 net_null0 up, 1 net_null1 stopped"
        );
    }

    #[test]
    fn no_socket_says_what_to_check() {
        let dir = tempfile::tempdir().unwrap();
        let args = HealthArgs::try_parse_from([
            "health",
            "--file-prefix",
            "nothing-here",
            "--runtime-dir",
            dir.path().to_str().unwrap(),
        ])
        .unwrap();
        let e = check(&args).unwrap_err();
        assert!(e.contains("no telemetry socket"), "{e}");
        assert!(e.contains("--file-prefix nothing-here"), "{e}");
        assert!(e.contains("--no-telemetry"), "{e}");
    }

    #[test]
    fn bad_timeout_is_refused() {
        let args = HealthArgs::try_parse_from(["health", "--timeout", "0"]).unwrap();
        assert!(check(&args).unwrap_err().contains("--timeout"));
    }
}
