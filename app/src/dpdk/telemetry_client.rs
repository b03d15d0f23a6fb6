//! A client of DPDK's telemetry socket (`<runtime dir>/dpdk_telemetry.v2`),
//! the way `dpdk-telemetry.py` talks to it: a `SOCK_SEQPACKET` unix socket on
//! which the server sends a JSON hello (`{"version": ..., "pid": ...,
//! "max_output_len": ...}`) at connect, then answers each command message
//! (`/ethdev/list`, `/ethdev/info,0`, ...) with one JSON message.
//!
//! This is the client side only: it needs no EAL and touches no DPDK state, so
//! `fastpath health` can ask a running fastpath (or any DPDK 22.11 process)
//! from another process. std has no `SOCK_SEQPACKET`; the `uds` crate has.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;
use uds::UnixSeqpacketConn;

/// Telemetry replies are at most `max_output_len` bytes (16 KiB in 22.11);
/// a larger buffer tells a truncated message from a full one.
const RECV_BUF: usize = 64 * 1024;

/// The longest path `sockaddr_un.sun_path` holds, its terminating NUL aside.
const SUN_PATH_MAX: usize = 107;

/// The folder holding one runtime folder per EAL file prefix, chosen as
/// EAL 22.11 chooses it (`eal_create_runtime_dir`): `/var/run/dpdk` for root
/// (real uid 0), otherwise `$XDG_RUNTIME_DIR/dpdk`, or `/tmp/dpdk` without it.
pub fn default_runtime_base() -> PathBuf {
    // SAFETY: getuid(2) cannot fail and touches no memory.
    let root = unsafe { libc::getuid() } == 0;
    let base = if root {
        PathBuf::from("/var/run")
    } else {
        std::env::var_os("XDG_RUNTIME_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("/tmp"))
    };
    base.join("dpdk")
}

/// The telemetry socket of the DPDK process running under `prefix` in the
/// runtime base `base` (see [`default_runtime_base`]).
pub fn socket_path(base: &Path, prefix: &str) -> PathBuf {
    base.join(prefix).join("dpdk_telemetry.v2")
}

/// Why talking to a telemetry socket failed.
#[derive(Debug, thiserror::Error)]
pub enum TelemetryError {
    /// Nothing at that path: no DPDK process runs with that file prefix (as
    /// this user), or it runs with `--no-telemetry`.
    #[error("no telemetry socket at {}", path.display())]
    NoSocket { path: PathBuf },
    /// The socket file exists but nobody accepts on it: its process is gone
    /// (killed before it could remove the socket).
    #[error("telemetry socket {} refuses connections (stale: its process has exited)", path.display())]
    Refused { path: PathBuf },
    /// The socket or its folder is not ours to open.
    #[error("no permission to open {} (run as the user, or root, that runs the DPDK process)", path.display())]
    Permission { path: PathBuf },
    /// The path does not fit in `sockaddr_un.sun_path`.
    #[error("socket path {} is too long for a unix socket ({len} bytes, at most {max})", path.display())]
    PathTooLong {
        path: PathBuf,
        len: usize,
        max: usize,
    },
    /// No answer within the timeout.
    #[error("no answer from {} within {timeout:?} (to {what})", path.display())]
    Timeout {
        path: PathBuf,
        what: String,
        timeout: Duration,
    },
    /// The server closed the connection (DPDK accepts at most 10 clients at
    /// once and closes any beyond).
    #[error("{} closed the connection (to {what}; too many telemetry clients?)", path.display())]
    Closed { path: PathBuf, what: String },
    /// A reply that is not the JSON object expected.
    #[error("unexpected reply from {} to {what}: {detail}", path.display())]
    BadReply {
        path: PathBuf,
        what: String,
        detail: String,
    },
    /// Any other system call failure.
    #[error("{call} on {}: {source}", path.display())]
    Io {
        path: PathBuf,
        call: &'static str,
        source: io::Error,
    },
}

/// The hello a telemetry server sends at connect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hello {
    /// e.g. `DPDK 22.11.11`
    pub version: String,
    /// The DPDK process's pid.
    pub pid: u64,
    /// The longest reply it sends.
    pub max_output_len: u64,
}

/// One connection to a telemetry socket.
#[derive(Debug)]
pub struct TelemetryClient {
    conn: UnixSeqpacketConn,
    path: PathBuf,
    timeout: Duration,
    hello: Hello,
}

impl TelemetryClient {
    /// Connect to the socket at `path` and read its hello; every send and
    /// receive waits at most `timeout`.
    pub fn connect(path: &Path, timeout: Duration) -> Result<Self, TelemetryError> {
        use std::os::unix::ffi::OsStrExt;
        let len = path.as_os_str().as_bytes().len();
        let max = SUN_PATH_MAX;
        if len > max || path.as_os_str().as_bytes().contains(&0) {
            return Err(TelemetryError::PathTooLong {
                path: path.to_path_buf(),
                len,
                max,
            });
        }
        let io_err = |call: &'static str, source: io::Error| TelemetryError::Io {
            path: path.to_path_buf(),
            call,
            source,
        };
        let conn = UnixSeqpacketConn::connect(path).map_err(|e| {
            let path = path.to_path_buf();
            match e.raw_os_error() {
                Some(libc::ENOENT) | Some(libc::ENOTDIR) => TelemetryError::NoSocket { path },
                Some(libc::ECONNREFUSED) => TelemetryError::Refused { path },
                Some(libc::EACCES) | Some(libc::EPERM) => TelemetryError::Permission { path },
                _ => TelemetryError::Io {
                    path,
                    call: "connect",
                    source: e,
                },
            }
        })?;
        conn.set_read_timeout(Some(timeout))
            .map_err(|e| io_err("setsockopt", e))?;
        conn.set_write_timeout(Some(timeout))
            .map_err(|e| io_err("setsockopt", e))?;

        let mut client = TelemetryClient {
            conn,
            path: path.to_path_buf(),
            timeout,
            hello: Hello {
                version: String::new(),
                pid: 0,
                max_output_len: 0,
            },
        };
        let hello = client.recv_json("read the hello")?;
        let field = |k: &str| {
            hello
                .get(k)
                .ok_or_else(|| client.bad("read the hello", &hello))
        };
        let version = field("version")?.as_str().unwrap_or_default().to_string();
        let pid = field("pid")?.as_u64().unwrap_or_default();
        let max_output_len = field("max_output_len")?.as_u64().unwrap_or_default();
        client.hello = Hello {
            version,
            pid,
            max_output_len,
        };
        Ok(client)
    }

    /// What the server said at connect.
    pub fn hello(&self) -> &Hello {
        &self.hello
    }

    /// Send `command` (e.g. `/ethdev/info,0`) and return the value of its
    /// reply (`{"/ethdev/info": VALUE}`); `Null` for a command the server does
    /// not know.
    pub fn command(&mut self, command: &str) -> Result<serde_json::Value, TelemetryError> {
        let what = format!("`{command}`");
        self.conn
            .send(command.as_bytes())
            .map_err(|e| self.sys_err("send", &what, e))?;
        let reply = self.recv_json(&what)?;
        // The reply is keyed by the command without its parameters.
        let key = command.split(',').next().unwrap_or(command);
        match reply {
            serde_json::Value::Object(mut m) => match m.remove(key) {
                Some(v) => Ok(v),
                None => Err(self.bad(&what, &serde_json::Value::Object(m))),
            },
            other => Err(self.bad(&what, &other)),
        }
    }

    /// Receive one message and parse it as JSON.
    fn recv_json(&mut self, what: &str) -> Result<serde_json::Value, TelemetryError> {
        let mut buf = vec![0u8; RECV_BUF];
        let n = self
            .conn
            .recv(&mut buf)
            .map_err(|e| self.sys_err("recv", what, e))?;
        if n == 0 {
            return Err(TelemetryError::Closed {
                path: self.path.clone(),
                what: what.to_string(),
            });
        }
        if n == buf.len() {
            return Err(TelemetryError::BadReply {
                path: self.path.clone(),
                what: what.to_string(),
                detail: format!("reply of {n} bytes or more: truncated"),
            });
        }
        serde_json::from_slice(&buf[..n]).map_err(|e| TelemetryError::BadReply {
            path: self.path.clone(),
            what: what.to_string(),
            detail: format!(
                "not JSON ({e}): {}",
                String::from_utf8_lossy(&buf[..n.min(200)])
            ),
        })
    }

    fn sys_err(&self, call: &'static str, what: &str, e: io::Error) -> TelemetryError {
        match e.raw_os_error() {
            Some(libc::EAGAIN) => TelemetryError::Timeout {
                path: self.path.clone(),
                what: what.to_string(),
                timeout: self.timeout,
            },
            Some(libc::EPIPE) | Some(libc::ECONNRESET) => TelemetryError::Closed {
                path: self.path.clone(),
                what: what.to_string(),
            },
            _ => TelemetryError::Io {
                path: self.path.clone(),
                call,
                source: e,
            },
        }
    }

    fn bad(&self, what: &str, v: &serde_json::Value) -> TelemetryError {
        let mut detail = v.to_string();
        detail.truncate(200);
        TelemetryError::BadReply {
            path: self.path.clone(),
            what: what.to_string(),
            detail,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_socket_is_no_socket() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("dpdk_telemetry.v2");
        let e = TelemetryClient::connect(&p, Duration::from_secs(1)).unwrap_err();
        assert!(matches!(e, TelemetryError::NoSocket { .. }), "{e:?}");
    }

    #[test]
    fn too_long_path_is_refused_before_any_call() {
        let p = PathBuf::from(format!("/{}", "x".repeat(200)));
        let e = TelemetryClient::connect(&p, Duration::from_secs(1)).unwrap_err();
        assert!(matches!(e, TelemetryError::PathTooLong { .. }), "{e:?}");
    }

    #[test]
    fn stale_socket_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("dpdk_telemetry.v2");
        // Bind then drop a listener: the file stays, nobody listens.
        drop(std::os::unix::net::UnixDatagram::bind(&p).unwrap());
        let e = TelemetryClient::connect(&p, Duration::from_secs(1)).unwrap_err();
        assert!(matches!(e, TelemetryError::Refused { .. }), "{e:?}");
    }
}
