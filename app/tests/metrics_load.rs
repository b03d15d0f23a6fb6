//! The metrics endpoint under load: while 100 clients hold connections open
//! to a forwarding fastpath (half of them silent, half having sent part of a
//! request head), a scrape still gets its whole 200 answer (whose own text
//! counts the 100 as open), forwarding keeps going, and the 100 are later
//! cut for their slow heads and counted.

mod common;
use common::promtool::promtool_accepts;
use common::watch::Watched;
use common::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::time::{Duration, Instant};

/// Clients held open during the scrape.
const HELD: usize = 100;
/// Only a hang reaches this: a scrape answers in milliseconds.
const HANG: Duration = Duration::from_secs(5);

/// GET /metrics from `addr`: the whole answer within HANG, checked to be a
/// complete 200 (its body as long as its Content-Length says); the body.
fn scrape(addr: &str, held: usize) -> String {
    match get(addr, held) {
        (200, body) => body,
        (code, body) => panic!("answer {code} with {held} held: {body}"),
    }
}

/// The first scrape that answers 200 (503 until fastpath runs).
fn first_scrape(addr: &str) -> String {
    let start = Instant::now();
    loop {
        match get(addr, 0) {
            (200, body) => return body,
            (503, _) if start.elapsed() < Duration::from_secs(30) => {
                std::thread::sleep(Duration::from_millis(50))
            }
            (code, body) => panic!("answer {code} at start: {body}"),
        }
    }
}

/// GET /metrics: status and body, the body whole.
fn get(addr: &str, held: usize) -> (u16, String) {
    let start = Instant::now();
    let mut s = TcpStream::connect(addr).expect("connect to --metrics");
    s.set_read_timeout(Some(HANG)).unwrap();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut raw = Vec::new();
    if let Err(e) = s.read_to_end(&mut raw) {
        panic!(
            "no complete answer to a scrape within {HANG:?} while {held} connections are \
             held open ({e}); got so far: {:?}",
            String::from_utf8_lossy(&raw)
        );
    }
    let text = String::from_utf8(raw).expect("UTF-8");
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP answer");
    let code: u16 = head
        .strip_prefix("HTTP/1.1 ")
        .and_then(|r| r.get(..3))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP/1.1 answer: {head}"));
    let length: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length: ")
                .map(str::to_string)
        })
        .expect("a Content-Length")
        .parse()
        .unwrap();
    assert_eq!(body.len(), length, "a whole body: {head}");
    eprintln!("scrape with {held} held: {code} in {:?}", start.elapsed());
    (code, body.to_string())
}

/// The value of the first sample whose line starts with `series`.
fn value(text: &str, series: &str) -> u64 {
    text.lines()
        .find(|l| l.starts_with(series))
        .and_then(|l| l.rsplit(' ').next())
        .unwrap_or_else(|| panic!("no sample {series} in:\n{text}"))
        .parse::<f64>()
        .unwrap() as u64
}

/// Kills fastpath if the test fails before stopping it.
struct KillOnPanic(u32);

impl Drop for KillOnPanic {
    fn drop(&mut self) {
        if std::thread::panicking() {
            let _ = Command::new("kill")
                .args(["-KILL", &self.0.to_string()])
                .status();
        }
    }
}

const TX: &str = "fastpath_port_tx_packets_total{port=\"1\"";
const OPEN: &str = "fastpath_metrics_open_connections ";

#[test]
fn a_scrape_answers_while_100_clients_hold_connections_and_forwarding_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.pcap");
    write_pcap(&input, &random_frames(64, 36));
    let mut cmd = fastpath();
    cmd.args(eal_args(
        "metricsload",
        &[
            format!("net_pcap0,rx_pcap={},infinite_rx=1", input.display()),
            "net_null0,no-rx=1".to_string(),
        ],
    ))
    .args(["--", "--forward", "0:1", "--metrics", "127.0.0.1:0"]);
    let mut fp = Watched::spawn(cmd);
    let _guard = KillOnPanic(fp.id());
    let addr = fp.metrics_addr(Duration::from_secs(30));
    first_scrape(&addr);

    // Half say nothing, half send part of a request head and stop.
    let mut held: Vec<TcpStream> = (0..HELD)
        .map(|_| TcpStream::connect(&addr).expect("connect a held client"))
        .collect();
    for c in held.iter_mut().step_by(2) {
        c.write_all(b"GET /metrics HTTP/1.1\r\nHost: held\r\n")
            .unwrap();
    }
    // They connected first, so the endpoint took them before the scrape.
    let during = scrape(&addr, HELD);
    promtool_accepts(&during);
    assert!(
        value(&during, OPEN) > HELD as u64,
        "the scrape and the {HELD} held clients are open:\n{during}"
    );
    // Forwarding goes on: the counters rise while the clients are held
    // (the worker publishes per burst, but may be off its CPU a while).
    let tx = value(&during, TX);
    let start = Instant::now();
    loop {
        let later = scrape(&addr, HELD);
        if value(&later, TX) > tx {
            assert!(
                value(&later, OPEN) > HELD as u64,
                "the held clients were cut before forwarding was seen to go on:\n{later}"
            );
            break;
        }
        assert!(start.elapsed() < HANG, "forwarding stopped at {tx}");
        std::thread::sleep(Duration::from_millis(10));
    }

    // The endpoint cuts each for its slow head, and counts it.
    let cut = "fastpath_metrics_refused_connections_total{reason=\"head_timeout\"}";
    let start = Instant::now();
    let last = loop {
        let text = scrape(&addr, HELD);
        if value(&text, cut) >= HELD as u64 {
            break text;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the {HELD} held clients were never cut:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(value(&last, cut), HELD as u64, "{last}");
    for c in &mut held {
        c.set_read_timeout(Some(HANG)).unwrap();
        let mut buf = [0u8; 64];
        assert_eq!(c.read(&mut buf).expect("closed by the endpoint"), 0);
    }
    for reason in ["limit", "head_too_large", "bad_request", "timeout"] {
        let series = format!("fastpath_metrics_refused_connections_total{{reason=\"{reason}\"}}");
        assert_eq!(value(&last, &series), 0, "{series}");
    }

    fp.signal("-TERM");
    let r = fp.finish(Duration::from_secs(30));
    assert_success(&r);
}
