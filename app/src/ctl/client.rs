//! `fastpath ctl [--file-prefix P] [--json] COMMAND ...`: the command line
//! of the control socket. Checks the command's shape here; fastpath checks
//! its values against the running config and answers what it did, or what
//! is wrong and why (then nothing changed).
//!
//! Exit codes: 0 done, 1 refused by fastpath, 2 a command this side cannot
//! parse, 3 no running fastpath answers.

use super::{socket_path, Reply, Request, Show};
use crate::dpdk::telemetry_client::default_runtime_base;
use crate::health::{EAL_DEFAULT_PREFIX, PREFIX_ENV};
use clap::Parser;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

const COMMANDS: &str = "commands:
  route add PREFIX via IP[,IP...]   route PREFIX to one next hop or several (ECMP)
  route add PREFIX dev PORT         route PREFIX on-link out of PORT (device name or port id)
  route add PREFIX via IP dev PORT  IPv6: a link-local gateway IP on PORT
  route del PREFIX                  delete the route of PREFIX (IPv4 or IPv6)
  neigh add IP MAC [dev PORT]       a static neighbour (replaces a learned one); dev for
                                    an IPv6 link-local one
  neigh del IP                      remove a static neighbour
  reload                            re-read the config file: routes, neighbours, hooks
  show routes|neighbours|hooks|stats|fpm";

/// `fastpath ctl` options.
#[derive(Parser, Debug, Clone, PartialEq)]
#[command(
    name = "fastpath ctl",
    about = "Change or ask a running fastpath through its control socket",
    override_usage = "fastpath ctl [--file-prefix PREFIX] [--json] COMMAND ...",
    after_help = COMMANDS
)]
pub struct CtlArgs {
    /// The EAL --file-prefix fastpath runs with [default: $FASTPATH_FILE_PREFIX,
    /// else EAL's default `rte`].
    #[arg(long, value_name = "PREFIX")]
    pub file_prefix: Option<String>,

    /// The folder holding one folder per file prefix [default: as EAL picks
    /// it: /var/run/dpdk for root, else $XDG_RUNTIME_DIR/dpdk or /tmp/dpdk].
    #[arg(long, value_name = "DIR")]
    pub runtime_dir: Option<PathBuf>,

    /// The control socket itself (instead of --file-prefix / --runtime-dir).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,

    /// Print fastpath's answer as JSON, for scripts.
    #[arg(long)]
    pub json: bool,

    /// Seconds to wait for the answer.
    #[arg(long, value_name = "SECS", default_value_t = 15.0)]
    pub timeout: f64,

    /// The command and its arguments.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "COMMAND"
    )]
    pub command: Vec<String>,
}

/// The request a command line asks for, or what is wrong with it.
pub fn parse_command(words: &[String]) -> Result<Request, String> {
    let w: Vec<&str> = words.iter().map(String::as_str).collect();
    let neigh = |s: &str| matches!(s, "neigh" | "neighbour" | "neighbor");
    match w[..] {
        ["route", "add", prefix, "via", list] => route_via(prefix, list),
        ["route", "add", prefix, "via", gateway, "dev", port] if prefix.contains(':') => {
            Ok(Request::RouteAdd {
                prefix: prefix.into(),
                via: vec![gateway.into()],
                dev: Some(port.into()),
            })
        }
        ["route", "add", prefix, "dev", port] => Ok(Request::RouteAdd {
            prefix: prefix.into(),
            via: Vec::new(),
            dev: Some(port.into()),
        }),
        ["route", "add", ..] => Err(
            "route add: expected `route add PREFIX via IP[,IP...]` or `route add PREFIX dev PORT`"
                .into(),
        ),
        ["route", "del" | "delete", prefix] => Ok(Request::RouteDel {
            prefix: prefix.into(),
        }),
        ["route", ..] => Err("route: expected `route add ...` or `route del PREFIX`".into()),
        [n, "add", address, mac] if neigh(n) => Ok(Request::NeighAdd {
            address: address.into(),
            mac: mac.into(),
            dev: None,
        }),
        [n, "add", address, mac, "dev", port] if neigh(n) => Ok(Request::NeighAdd {
            address: address.into(),
            mac: mac.into(),
            dev: Some(port.into()),
        }),
        [n, "del" | "delete", address] if neigh(n) => Ok(Request::NeighDel {
            address: address.into(),
        }),
        [n, ..] if neigh(n) => {
            Err("neigh: expected `neigh add IP MAC [dev PORT]` or `neigh del IP`".into())
        }
        ["reload"] => Ok(Request::Reload),
        ["show", what] => show(what),
        ["capture", "start", file] => capture_start(file),
        ["capture", "stop"] => Ok(Request::CaptureStop),
        ["capture", ..] => {
            Err("capture: expected `capture start FILE` (pcapng) or `capture stop`".into())
        }
        [] => Err("no command given".into()),
        _ => Err(format!("unknown command `{}`", w.join(" "))),
    }
}

/// `route add PREFIX via IP[,IP...]`.
fn route_via(prefix: &str, list: &str) -> Result<Request, String> {
    let via: Vec<String> = list.split(',').map(|s| s.trim().to_string()).collect();
    if via.iter().any(String::is_empty) {
        return Err(format!(
            "route add: {list:?} has an empty next hop; expected IP[,IP...], e.g. 10.0.1.2,10.0.1.3"
        ));
    }
    Ok(Request::RouteAdd {
        prefix: prefix.into(),
        via,
        dev: None,
    })
}

/// `show WHAT`.
fn show(what: &str) -> Result<Request, String> {
    let what = match what {
        "routes" | "route" => Show::Routes,
        "neighbours" | "neighbors" | "neigh" => Show::Neighbours,
        "hooks" => Show::Hooks,
        "stats" => Show::Stats,
        "fpm" => Show::Fpm,
        other => {
            return Err(format!(
                "show {other}: expected routes, neighbours, hooks, stats or fpm"
            ))
        }
    };
    Ok(Request::Show { what })
}

/// `capture start FILE`, the file made absolute (the server's folder is
/// not the client's).
fn capture_start(file: &str) -> Result<Request, String> {
    let file = std::path::Path::new(file);
    let file = match std::env::current_dir() {
        Ok(cwd) => cwd.join(file),
        Err(_) if file.is_absolute() => file.to_path_buf(),
        Err(e) => return Err(format!("capture start: cannot resolve {file:?}: {e}")),
    };
    Ok(Request::CaptureStart { file })
}

/// Why the running fastpath could not be asked.
fn unreachable(e: &std::io::Error, path: &std::path::Path, prefix: &str) -> String {
    use std::io::ErrorKind::*;
    match e.kind() {
        NotFound => format!(
            "no running fastpath: no control socket at {} (is fastpath running with \
             --file-prefix {prefix}, a --config file, and as this user? --file-prefix or \
             --runtime-dir look elsewhere)",
            path.display()
        ),
        ConnectionRefused => format!(
            "no running fastpath: the control socket {} refuses connections (stale: its \
             process has exited)",
            path.display()
        ),
        PermissionDenied => format!(
            "no permission to open {} (run as the user, or root, that runs fastpath)",
            path.display()
        ),
        _ => format!("talking to {}: {e}", path.display()),
    }
}

/// Send `request` to the socket at `path`, wait at most `timeout`.
pub fn ask(path: &std::path::Path, request: &Request, timeout: Duration) -> std::io::Result<Reply> {
    let mut conn = UnixStream::connect(path)?;
    conn.set_read_timeout(Some(timeout))?;
    let line = serde_json::to_string(request).map_err(std::io::Error::other)?;
    writeln!(conn, "{line}")?;
    let mut answer = String::new();
    BufReader::new(conn).read_line(&mut answer)?;
    if answer.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "fastpath closed the connection without an answer",
        ));
    }
    serde_json::from_str(&answer).map_err(std::io::Error::other)
}

/// Writes the reply's text and a newline (nothing when it is empty). A reader
/// that stops early (`fastpath ctl show routes | head`) closes the pipe: that
/// is not an error, the rest of the reply is not wanted.
fn print_reply(out: &mut impl std::io::Write, text: &str) -> std::io::Result<()> {
    if text.is_empty() {
        return Ok(());
    }
    match writeln!(out, "{text}").and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r,
    }
}

/// `fastpath ctl ARGS...` (`argv[0]` is `ctl`): the process exit code.
pub fn main(argv: &[String]) -> i32 {
    let args = match CtlArgs::try_parse_from(argv) {
        Ok(a) => a,
        Err(e) => e.exit(),
    };
    let request = match parse_command(&args.command) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fastpath ctl: {e}\n{COMMANDS}");
            return 2;
        }
    };
    if !(args.timeout > 0.0 && args.timeout.is_finite()) {
        eprintln!(
            "fastpath ctl: --timeout {}: expected seconds above 0",
            args.timeout
        );
        return 2;
    }
    let prefix = args
        .file_prefix
        .clone()
        .or_else(|| std::env::var(PREFIX_ENV).ok())
        .unwrap_or_else(|| EAL_DEFAULT_PREFIX.to_string());
    let path = args.socket.clone().unwrap_or_else(|| {
        let base = args
            .runtime_dir
            .clone()
            .unwrap_or_else(default_runtime_base);
        socket_path(&base, &prefix)
    });
    let reply = match ask(&path, &request, Duration::from_secs_f64(args.timeout)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("fastpath ctl: {}", unreachable(&e, &path, &prefix));
            return 3;
        }
    };
    let text = if args.json {
        serde_json::to_string_pretty(&reply).unwrap_or_default()
    } else if reply.ok {
        reply.text.trim_end().to_string()
    } else {
        String::new()
    };
    if let Err(e) = print_reply(&mut std::io::stdout().lock(), &text) {
        eprintln!("fastpath ctl: writing the reply: {e}");
        return 1;
    }
    if reply.ok {
        return 0;
    }
    if !args.json {
        eprintln!(
            "fastpath ctl: {}",
            reply.error.as_deref().unwrap_or("refused")
        );
    }
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn commands_parse_to_their_requests() {
        assert_eq!(
            parse_command(&words("route add 10.0.0.0/8 via 10.0.1.2,10.0.1.3")),
            Ok(Request::RouteAdd {
                prefix: "10.0.0.0/8".into(),
                via: vec!["10.0.1.2".into(), "10.0.1.3".into()],
                dev: None
            })
        );
        assert_eq!(
            parse_command(&words("show neighbors")),
            Ok(Request::Show {
                what: Show::Neighbours
            })
        );
        assert!(parse_command(&words("route add 10.0.0.0/8 via 10.0.1.2,")).is_err());
        assert!(parse_command(&words("route add 10.0.0.0/8")).is_err());
        assert!(parse_command(&words("show everything")).is_err());
        assert!(parse_command(&[]).is_err());
    }
}
