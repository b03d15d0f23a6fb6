//! The `--metrics ADDR:PORT` endpoint: a minimal HTTP/1.1 responder on std's
//! `TcpListener`, one connection at a time, each closed after its answer.
//! A scraper asks once every few seconds; this needs no HTTP crate: `GET`
//! (or `HEAD`) `/metrics` answers 200, another path 404, another method 405,
//! a request that is not HTTP 400. Its thread runs on the main lcore's core.

use super::state::with_current;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Longest request head read (a scraper's is a few hundred bytes).
const MAX_HEAD: usize = 8192;
/// A client gets this long to send its request and read the answer.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(2);
/// How often the accept loop looks at the stop flag.
const POLL: Duration = Duration::from_millis(50);

/// Parse `--metrics`: `ADDR:PORT` (`127.0.0.1:9101`, `[::1]:9101`,
/// `localhost:9101`, `:9101` for every address).
pub fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    let hint = "give ADDR:PORT, e.g. --metrics 127.0.0.1:9101 (or :9101 for every address)";
    let s = s.trim();
    let (host, port) = s
        .rsplit_once(':')
        .filter(|(_, p)| !p.is_empty())
        .ok_or_else(|| format!("`{s}` has no port; {hint}"))?;
    let port: u16 = port
        .parse()
        .map_err(|_| format!("`{port}` is not a port number (0-65535); {hint}"))?;
    let host = if host.is_empty() { "0.0.0.0" } else { host };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (host, port)
        .to_socket_addrs()
        .map_err(|e| format!("`{s}`: cannot resolve `{host}` ({e}); {hint}"))?
        .next()
        .ok_or_else(|| format!("`{s}`: `{host}` has no address; {hint}"))
}

/// Bind the endpoint's socket, before EAL starts: a taken port fails at once.
pub fn bind(addr: SocketAddr) -> Result<TcpListener, String> {
    TcpListener::bind(addr).map_err(|e| {
        let fix = match e.kind() {
            io::ErrorKind::AddrInUse => {
                "another process listens there (`ss -ltnp` names it); pick another port"
            }
            io::ErrorKind::PermissionDenied => "ports below 1024 need root; pick a higher port",
            io::ErrorKind::AddrNotAvailable => {
                "no interface of this host has that address; use 127.0.0.1 or 0.0.0.0"
            }
            _ => "check the address and port",
        };
        format!("--metrics {addr}: cannot listen: {e}; {fix}")
    })
}

/// The running endpoint; [`MetricsServer::stop`] ends its thread.
pub struct MetricsServer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    pub addr: SocketAddr,
}

impl MetricsServer {
    /// Serve `listener` on a thread pinned to `cpu` (the main lcore's).
    pub fn start(listener: TcpListener, cpu: Option<usize>) -> io::Result<MetricsServer> {
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("fastpath-metrics".into())
            .spawn(move || {
                if let Some(id) = cpu {
                    if !core_affinity::set_for_current(core_affinity::CoreId { id }) {
                        eprintln!("fastpath: metrics: cannot pin the thread to CPU {id}");
                    }
                }
                accept_loop(&listener, &flag);
            })?;
        Ok(MetricsServer {
            stop,
            thread: Some(thread),
            addr,
        })
    }

    /// Stop accepting and wait for the thread.
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn accept_loop(listener: &TcpListener, stop: &AtomicBool) {
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((stream, _)) => {
                // One client's error (a reset, a timeout) is its own.
                let _ = serve(stream);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::sleep(POLL),
            Err(_) => std::thread::sleep(POLL),
        }
    }
}

fn serve(mut stream: TcpStream) -> io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(CLIENT_TIMEOUT))?;
    stream.set_write_timeout(Some(CLIENT_TIMEOUT))?;
    let head = read_head(&mut stream)?;
    let reply = answer(&head, || with_current(super::metrics::render));
    stream.write_all(&reply)?;
    stream.flush()
}

/// Read up to the end of the request head (`\r\n\r\n`), at most MAX_HEAD.
fn read_head(stream: &mut TcpStream) -> io::Result<Vec<u8>> {
    let mut head = Vec::with_capacity(512);
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        head.extend_from_slice(&buf[..n]);
    }
    Ok(head)
}

/// The whole response to a request head; `metrics` renders the scrape
/// (`None` while fastpath starts or stops).
pub fn answer(head: &[u8], metrics: impl FnOnce() -> Option<String>) -> Vec<u8> {
    let text = String::from_utf8_lossy(head);
    let line = text.lines().next().unwrap_or("");
    let parts: Vec<&str> = line.split(' ').collect();
    let [method, target, version] = parts[..] else {
        return response(400, "Bad Request", &[], "not an HTTP request\n", true);
    };
    if !version.starts_with("HTTP/1.") {
        return response(400, "Bad Request", &[], "not an HTTP/1.x request\n", true);
    }
    let path = target.split('?').next().unwrap_or("");
    let body_too = method != "HEAD";
    if path != "/metrics" {
        return response(
            404,
            "Not Found",
            &[],
            "fastpath serves /metrics only\n",
            body_too,
        );
    }
    if method != "GET" && method != "HEAD" {
        return response(
            405,
            "Method Not Allowed",
            &[("Allow", "GET, HEAD")],
            "/metrics answers GET and HEAD\n",
            true,
        );
    }
    match metrics() {
        Some(body) => response(
            200,
            "OK",
            &[("Content-Type", super::metrics::CONTENT_TYPE)],
            &body,
            body_too,
        ),
        None => response(
            503,
            "Service Unavailable",
            &[("Retry-After", "1")],
            "fastpath is starting or stopping\n",
            body_too,
        ),
    }
}

fn response(
    code: u16,
    reason: &str,
    headers: &[(&str, &str)],
    body: &str,
    with_body: bool,
) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {code} {reason}\r\n");
    if !headers.iter().any(|(k, _)| *k == "Content-Type") {
        out.push_str("Content-Type: text/plain; charset=utf-8\r\n");
    }
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    let mut bytes = out.into_bytes();
    if with_body {
        bytes.extend_from_slice(body.as_bytes());
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(head: &str) -> String {
        let r = answer(head.as_bytes(), || Some("m 1\n".into()));
        String::from_utf8(r)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .to_string()
    }

    #[test]
    fn metrics_paths_methods_and_garbage() {
        assert_eq!(
            status("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
            "HTTP/1.1 200 OK"
        );
        assert_eq!(
            status("GET /metrics?x=1 HTTP/1.0\r\n\r\n"),
            "HTTP/1.1 200 OK"
        );
        assert_eq!(status("GET / HTTP/1.1\r\n\r\n"), "HTTP/1.1 404 Not Found");
        assert_eq!(
            status("POST /metrics HTTP/1.1\r\n\r\n"),
            "HTTP/1.1 405 Method Not Allowed"
        );
        assert_eq!(status("hello\r\n\r\n"), "HTTP/1.1 400 Bad Request");
        assert_eq!(status(""), "HTTP/1.1 400 Bad Request");
    }

    #[test]
    fn head_has_no_body_and_get_has_its_length() {
        let r = String::from_utf8(answer(b"HEAD /metrics HTTP/1.1\r\n\r\n", || {
            Some("m 1\n".into())
        }))
        .unwrap();
        assert!(
            r.contains("Content-Length: 4\r\n") && r.ends_with("\r\n\r\n"),
            "{r}"
        );
        let r = String::from_utf8(answer(b"GET /metrics HTTP/1.1\r\n\r\n", || {
            Some("m 1\n".into())
        }))
        .unwrap();
        assert!(
            r.ends_with("\r\n\r\nm 1\n") && r.contains(super::super::metrics::CONTENT_TYPE),
            "{r}"
        );
        let r = String::from_utf8(answer(b"GET /metrics HTTP/1.1\r\n\r\n", || None)).unwrap();
        assert!(r.starts_with("HTTP/1.1 503"), "{r}");
    }

    #[test]
    fn addresses_parse_or_say_what_is_missing() {
        assert_eq!(parse_addr("127.0.0.1:9101").unwrap().port(), 9101);
        assert_eq!(parse_addr(":9101").unwrap().to_string(), "0.0.0.0:9101");
        assert!(parse_addr("[::1]:9101").unwrap().is_ipv6());
        assert!(parse_addr("127.0.0.1").unwrap_err().contains("has no port"));
        assert!(parse_addr("127.0.0.1:")
            .unwrap_err()
            .contains("has no port"));
        assert!(parse_addr("127.0.0.1:99999")
            .unwrap_err()
            .contains("not a port number"));
    }

    #[test]
    fn a_taken_port_names_the_flag_and_the_fix() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let e = bind(l.local_addr().unwrap()).unwrap_err();
        assert!(e.starts_with("--metrics 127.0.0.1:"), "{e}");
        assert!(e.contains("pick another port"), "{e}");
    }
}
