//! The `--metrics ADDR:PORT` endpoint: HTTP/1.1 from `hyper` on a tokio
//! current-thread runtime, on one thread pinned to the main lcore's core.
//!
//! Connections are served side by side, each as a task of that thread, with
//! bounded resources ([`Limits`]): at most 256 open at once (one more is
//! answered 503 and closed at once), a request head of at most 8 KiB
//! (431) that must arrive within 5 s, the whole exchange within 10 s, one
//! request per connection. A slow or idle client holds one task and one
//! buffer, never the thread, so it does not delay another scrape. Whatever is
//! refused or cut is counted by reason and scraped with the rest
//! (`fastpath_metrics_refused_connections_total{reason}`).
//!
//! `GET` (or `HEAD`) `/metrics` answers 200, another path 404, another
//! method 405, a request that is not HTTP/1.x 400 (hyper's own answer), and
//! 503 while fastpath starts or stops.
//!
//! Why hyper and not `tiny_http`: tiny_http hands each connection to a thread
//! of a pool that spawns a new thread whenever every thread is busy, with no
//! maximum, so 100 idle clients would be 100 threads. Here they are 100
//! tasks on one thread, and the connection limit bounds them.

use super::state::with_current;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::header::{HeaderValue, ALLOW, CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::io::{self, Write as _};
use std::net::{SocketAddr, TcpListener, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::{oneshot, Semaphore};

/// What one connection may take.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Connections open at once; one more is refused (`limit`).
    pub connections: usize,
    /// The request head must be complete within this (`head_timeout`).
    pub head_timeout: Duration,
    /// The whole exchange, head to last byte of the answer (`timeout`).
    pub timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            connections: 256,
            head_timeout: Duration::from_secs(5),
            timeout: Duration::from_secs(10),
        }
    }
}

/// Longest request head (hyper's smallest read buffer; a scraper's head is a
/// few hundred bytes): longer is answered 431 (`head_too_large`).
pub const MAX_HEAD: usize = 8192;

/// After a failed `accept` (e.g. out of file descriptors), wait this long.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// Why a connection was refused or cut short.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// `Limits::connections` were open: answered 503 and closed at once.
    Limit,
    /// `accept` failed (e.g. out of file descriptors).
    AcceptError,
    /// The request head did not arrive within `Limits::head_timeout`.
    HeadTimeout,
    /// The request head was longer than [`MAX_HEAD`] (431).
    HeadTooLarge,
    /// Not an HTTP/1.x request, or one cut off before its head ended (400).
    BadRequest,
    /// The exchange took longer than `Limits::timeout` (a client that does
    /// not read its answer).
    Timeout,
    /// The connection failed (e.g. reset by the client).
    IoError,
}

impl Refusal {
    pub const ALL: [Refusal; 7] = [
        Refusal::Limit,
        Refusal::AcceptError,
        Refusal::HeadTimeout,
        Refusal::HeadTooLarge,
        Refusal::BadRequest,
        Refusal::Timeout,
        Refusal::IoError,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Refusal::Limit => "limit",
            Refusal::AcceptError => "accept_error",
            Refusal::HeadTimeout => "head_timeout",
            Refusal::HeadTooLarge => "head_too_large",
            Refusal::BadRequest => "bad_request",
            Refusal::Timeout => "timeout",
            Refusal::IoError => "io_error",
        }
    }

    /// What a failed hyper connection counts as.
    fn of(e: &hyper::Error) -> Refusal {
        if e.is_timeout() {
            Refusal::HeadTimeout
        } else if e.is_parse_too_large() {
            Refusal::HeadTooLarge
        } else if e.is_parse() || e.is_incomplete_message() {
            Refusal::BadRequest
        } else {
            Refusal::IoError
        }
    }
}

/// The endpoint's own counters, scraped with the rest.
#[derive(Debug, Default)]
pub struct HttpStats {
    /// Connections taken (within the limit).
    pub accepted: AtomicU64,
    /// Connections open now.
    pub open: AtomicU64,
    refused: [AtomicU64; Refusal::ALL.len()],
}

impl HttpStats {
    fn refuse(&self, r: Refusal) {
        self.refused[r as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Connections refused or cut for `r`.
    pub fn refused(&self, r: Refusal) -> u64 {
        self.refused[r as usize].load(Ordering::Relaxed)
    }
}

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

/// Renders a scrape with the endpoint's own counters; `None` while
/// fastpath starts or stops.
pub type Render = Arc<dyn Fn(&HttpStats) -> Option<String> + Send + Sync>;

/// The running endpoint; [`MetricsServer::stop`] ends its thread.
pub struct MetricsServer {
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
    pub addr: SocketAddr,
    pub stats: Arc<HttpStats>,
}

impl MetricsServer {
    /// Serve fastpath's metrics on `listener` from a thread pinned to `cpu`
    /// (the main lcore's).
    pub fn start(listener: TcpListener, cpu: Option<usize>) -> io::Result<MetricsServer> {
        let render: Render = Arc::new(|http| with_current(|ops| super::metrics::render(ops, http)));
        MetricsServer::start_with(listener, cpu, Limits::default(), render)
    }

    /// Serve what `render` gives on `listener` within `limits`.
    pub fn start_with(
        listener: TcpListener,
        cpu: Option<usize>,
        limits: Limits,
        render: Render,
    ) -> io::Result<MetricsServer> {
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let listener = {
            let _in_runtime = runtime.enter();
            tokio::net::TcpListener::from_std(listener)?
        };
        let (stop, stopped) = oneshot::channel();
        let stats = Arc::new(HttpStats::default());
        let shared = stats.clone();
        let thread = std::thread::Builder::new()
            .name("fastpath-metrics".into())
            .spawn(move || {
                if let Some(id) = cpu {
                    if !core_affinity::set_for_current(core_affinity::CoreId { id }) {
                        eprintln!("fastpath: metrics: cannot pin the thread to CPU {id}");
                    }
                }
                runtime.block_on(serve(listener, stopped, limits, shared, render));
                // Dropping the runtime ends the connections still open.
            })?;
        Ok(MetricsServer {
            stop: Some(stop),
            thread: Some(thread),
            addr,
            stats,
        })
    }

    /// Stop accepting, close every connection and wait for the thread.
    pub fn stop(mut self) {
        self.shut();
    }

    fn shut(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.shut();
    }
}

/// An open connection: its place under the limit and in the `open` gauge.
struct Open {
    stats: Arc<HttpStats>,
    _permit: tokio::sync::OwnedSemaphorePermit,
}

impl Drop for Open {
    fn drop(&mut self) {
        self.stats.open.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a connection over the limit gets, if its socket takes it at once.
const BUSY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n\
Content-Length: 0\r\nConnection: close\r\n\r\n";

/// Accept until `stop`; each connection is a task of this thread.
async fn serve(
    listener: tokio::net::TcpListener,
    mut stop: oneshot::Receiver<()>,
    limits: Limits,
    stats: Arc<HttpStats>,
    render: Render,
) {
    let places = Arc::new(Semaphore::new(limits.connections));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.head_timeout)
        .max_buf_size(MAX_HEAD)
        .keep_alive(false);
    loop {
        let accepted = tokio::select! {
            _ = &mut stop => break,
            a = listener.accept() => a,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(_) => {
                stats.refuse(Refusal::AcceptError);
                tokio::time::sleep(ACCEPT_BACKOFF).await;
                continue;
            }
        };
        let Ok(permit) = places.clone().try_acquire_owned() else {
            stats.refuse(Refusal::Limit);
            // Never waits: a socket that does not take it at once gets none.
            if let Ok(s) = stream.into_std() {
                let _ = (&s).write(BUSY);
            }
            continue;
        };
        stats.accepted.fetch_add(1, Ordering::Relaxed);
        stats.open.fetch_add(1, Ordering::Relaxed);
        let open = Open {
            stats: stats.clone(),
            _permit: permit,
        };
        let render = render.clone();
        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
            let (render, http) = (render.clone(), open.stats.clone());
            async move {
                Ok::<_, std::convert::Infallible>(answer(req.method(), req.uri().path(), || {
                    render(&http)
                }))
            }
        });
        let conn = http.serve_connection(TokioIo::new(stream), service);
        let stats = stats.clone();
        tokio::spawn(async move {
            match tokio::time::timeout(limits.timeout, conn).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => stats.refuse(Refusal::of(&e)),
                Err(_) => stats.refuse(Refusal::Timeout),
            }
        });
    }
}

/// The response to `method path`; `metrics` renders the scrape (`None`
/// while fastpath starts or stops).
pub fn answer(
    method: &Method,
    path: &str,
    metrics: impl FnOnce() -> Option<String>,
) -> Response<Full<Bytes>> {
    if path != "/metrics" {
        return response(StatusCode::NOT_FOUND, "fastpath serves /metrics only\n");
    }
    if method != Method::GET && method != Method::HEAD {
        let mut r = response(
            StatusCode::METHOD_NOT_ALLOWED,
            "/metrics answers GET and HEAD\n",
        );
        r.headers_mut()
            .insert(ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    match metrics() {
        Some(body) => {
            let mut r = response(StatusCode::OK, body);
            r.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static(super::metrics::CONTENT_TYPE),
            );
            r
        }
        None => {
            let mut r = response(
                StatusCode::SERVICE_UNAVAILABLE,
                "fastpath is starting or stopping\n",
            );
            r.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from_static("1"));
            r
        }
    }
}

/// A plain-text response with its length (a `HEAD` answer keeps the length
/// and hyper leaves out the body).
fn response(status: StatusCode, body: impl Into<String>) -> Response<Full<Bytes>> {
    let body: String = body.into();
    let len = body.len();
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r.headers_mut()
        .insert(CONTENT_LENGTH, HeaderValue::from(len));
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Instant;

    /// A generous deadline: only a hang reaches it.
    const HANG: Duration = Duration::from_secs(5);

    fn status(
        method: Method,
        path: &str,
        metrics: Option<&str>,
    ) -> (StatusCode, Response<Full<Bytes>>) {
        let r = answer(&method, path, || metrics.map(str::to_string));
        (r.status(), r)
    }

    #[test]
    fn metrics_paths_and_methods() {
        assert_eq!(
            status(Method::GET, "/metrics", Some("m 1\n")).0,
            StatusCode::OK
        );
        let (code, r) = status(Method::HEAD, "/metrics", Some("m 1\n"));
        assert_eq!(code, StatusCode::OK);
        assert_eq!(r.headers()[CONTENT_LENGTH], "4");
        assert_eq!(
            r.headers()[CONTENT_TYPE],
            super::super::metrics::CONTENT_TYPE
        );
        assert_eq!(status(Method::GET, "/", None).0, StatusCode::NOT_FOUND);
        let (code, r) = status(Method::POST, "/metrics", None);
        assert_eq!(code, StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(r.headers()[ALLOW], "GET, HEAD");
        let (code, r) = status(Method::GET, "/metrics", None);
        assert_eq!(code, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()[RETRY_AFTER], "1");
    }

    /// A server on an ephemeral port answering `body` (`None`: 503).
    fn server(limits: Limits, body: Option<String>) -> MetricsServer {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        MetricsServer::start_with(l, None, limits, Arc::new(move |_| body.clone())).unwrap()
    }

    fn connect(s: &MetricsServer) -> TcpStream {
        let c = TcpStream::connect(s.addr).unwrap();
        c.set_read_timeout(Some(HANG)).unwrap();
        c
    }

    /// Send `request` and read the answer to its end.
    fn ask(s: &MetricsServer, request: &[u8]) -> String {
        let mut c = connect(s);
        c.write_all(request).unwrap();
        let mut out = Vec::new();
        c.read_to_end(&mut out)
            .expect("an answer before the deadline");
        String::from_utf8_lossy(&out).into_owned()
    }

    /// Wait until `f` holds, at most HANG.
    fn wait_until(what: &str, f: impl Fn() -> bool) {
        let start = Instant::now();
        while !f() {
            assert!(start.elapsed() < HANG, "never: {what}");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn requests_over_a_socket_and_what_is_refused_is_counted() {
        let s = server(Limits::default(), Some("m 1\n".into()));
        let r = ask(&s, b"GET /metrics?x=1 HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(
            r.starts_with("HTTP/1.1 200 OK\r\n") && r.ends_with("\r\n\r\nm 1\n"),
            "{r}"
        );
        assert!(r.contains(super::super::metrics::CONTENT_TYPE), "{r}");
        let r = ask(&s, b"HEAD /metrics HTTP/1.1\r\n\r\n");
        assert!(
            r.starts_with("HTTP/1.1 200 OK\r\n") && r.ends_with("\r\n\r\n"),
            "{r}"
        );
        assert!(r.contains("content-length: 4\r\n"), "{r}");
        assert!(ask(&s, b"GET /metrics HTTP/1.0\r\n\r\n").starts_with("HTTP/1.0 200 OK"));
        assert!(ask(&s, b"GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
        assert!(ask(&s, b"DELETE /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 405"));
        let r = ask(&s, b"hello\r\n\r\n");
        assert!(r.starts_with("HTTP/1.1 400 Bad Request"), "{r}");
        let mut big = b"GET /metrics HTTP/1.1\r\nX: ".to_vec();
        big.resize(MAX_HEAD + 100, b'a');
        big.extend_from_slice(b"\r\n\r\n");
        let r = ask(&s, &big);
        assert!(r.starts_with("HTTP/1.1 431"), "{r}");
        wait_until("the refusals counted", || {
            s.stats.refused(Refusal::BadRequest) == 1
                && s.stats.refused(Refusal::HeadTooLarge) == 1
                && s.stats.open.load(Ordering::Relaxed) == 0
        });
        assert_eq!(s.stats.accepted.load(Ordering::Relaxed), 7);
        s.stop();
    }

    #[test]
    fn a_server_without_a_running_fastpath_answers_503() {
        let s = server(Limits::default(), None);
        let r = ask(&s, b"GET /metrics HTTP/1.1\r\n\r\n");
        assert!(
            r.starts_with("HTTP/1.1 503") && r.contains("retry-after: 1"),
            "{r}"
        );
    }

    #[test]
    fn idle_and_half_sent_clients_do_not_hold_up_a_scrape() {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let open = |h: &HttpStats| Some(format!("open {}\n", h.open.load(Ordering::Relaxed)));
        let s = MetricsServer::start_with(l, None, Limits::default(), Arc::new(open)).unwrap();
        let mut held: Vec<TcpStream> = (0..20).map(|_| connect(&s)).collect();
        for c in held.iter_mut().step_by(2) {
            c.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
                .unwrap();
        }
        // The scrape answers while the 20 are open: it counts them and itself.
        let r = ask(&s, b"GET /metrics HTTP/1.1\r\n\r\n");
        assert!(
            r.starts_with("HTTP/1.1 200 OK") && r.ends_with("\r\n\r\nopen 21\n"),
            "{r}"
        );
        drop(held);
        s.stop();
    }

    #[test]
    fn over_the_limit_is_refused_and_counted_until_a_place_frees() {
        let limits = Limits {
            connections: 2,
            ..Limits::default()
        };
        let s = server(limits, Some("m 1\n".into()));
        let held: Vec<TcpStream> = (0..2).map(|_| connect(&s)).collect();
        wait_until("2 connections open", || {
            s.stats.open.load(Ordering::Relaxed) == 2
        });
        // Closed at once: a 503 if the client reads it before the reset
        // that closing over its unread request sends.
        let mut c = connect(&s);
        c.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
        let mut r = Vec::new();
        let mut buf = [0u8; 256];
        loop {
            match c.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => r.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => break,
                Err(e) => panic!("closed at once, not {e}"),
            }
        }
        let r = String::from_utf8_lossy(&r);
        assert!(r.is_empty() || r.starts_with("HTTP/1.1 503"), "{r}");
        assert_eq!(s.stats.refused(Refusal::Limit), 1);
        drop(held);
        wait_until("the places freed", || {
            s.stats.open.load(Ordering::Relaxed) == 0
        });
        assert!(ask(&s, b"GET /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 200"));
    }

    #[test]
    fn a_slow_head_and_an_unread_answer_are_cut_and_counted() {
        let limits = Limits {
            head_timeout: Duration::from_millis(100),
            timeout: Duration::from_millis(300),
            ..Limits::default()
        };
        // An answer far larger than the socket buffers: a client that does
        // not read it holds the connection until the timeout.
        let s = server(limits, Some("m 1\n".repeat(4 << 20)));
        let mut idle = connect(&s);
        let mut buf = [0u8; 64];
        assert_eq!(idle.read(&mut buf).expect("closed before the deadline"), 0);
        let mut unread = connect(&s);
        unread.write_all(b"GET /metrics HTTP/1.1\r\n\r\n").unwrap();
        wait_until("both counted", || {
            s.stats.refused(Refusal::HeadTimeout) == 1 && s.stats.refused(Refusal::Timeout) == 1
        });
        assert_eq!(s.stats.open.load(Ordering::Relaxed), 0);
        drop(unread);
        s.stop();
    }

    #[test]
    fn stop_closes_the_connections_still_open() {
        let s = server(Limits::default(), Some("m 1\n".into()));
        let mut idle = connect(&s);
        wait_until("1 connection open", || {
            s.stats.open.load(Ordering::Relaxed) == 1
        });
        s.stop();
        let mut buf = [0u8; 64];
        assert_eq!(idle.read(&mut buf).expect("closed by stop"), 0);
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
