//! Rules replaced while traffic runs at full speed.
//!
//! SIGHUP twenty times, alternating two rule files that agree on what they
//! accept (one of which adds and removes a whole ingress chain). No packet
//! both files accept is dropped, the hook counters carry over and cover
//! every packet, the counters balance and every mbuf is back.
//!
//! Each SIGHUP is sent once fastpath has answered the one before (its reload
//! line, with the next hook generation) and traffic has flowed since, by its
//! `--stats-period` rates: every signal is answered and nothing waits on a
//! guessed sleep.

mod common;
use common::frames::udp;
use common::watch::{rates, Stream, Watched};
use common::*;
use std::time::Duration;

/// Seconds between `--stats-period` lines.
const PERIOD: f64 = 0.05;
/// What a wait for fastpath may take at most.
const LIMIT: Duration = Duration::from_secs(30);

/// Waits for the answer to a SIGHUP: a reload line of hook generation
/// `after + 1` (or, for the first, any); returns that generation.
fn wait_reloaded(child: &mut Watched, after: Option<u64>) -> u64 {
    let answer = child.wait_for("the answer to SIGHUP on stderr", LIMIT, |s, l| {
        if s != Stream::Stderr {
            None
        } else if l.contains("SIGHUP: hooks reloaded") {
            Some(Ok(l.to_string()))
        } else if l.contains("the running hooks stay") {
            Some(Err(l.to_string()))
        } else {
            None
        }
    });
    let line = answer.unwrap_or_else(|l| panic!("the reload failed: {l}\n{}", child.stderr));
    let generation: u64 = line
        .rsplit_once("generation ")
        .and_then(|(_, g)| g.trim_end_matches(')').parse().ok())
        .unwrap_or_else(|| panic!("no generation in {line:?}"));
    if let Some(before) = after {
        assert_eq!(
            generation,
            before + 1,
            "one new generation per SIGHUP: {line}"
        );
    }
    generation
}

/// Waits until port 0 receives and, if `forwarding`, port 1 sends, on a
/// `--stats-period` line begun after this call (the second one read: the
/// first may have been under way).
fn wait_traffic(child: &mut Watched, forwarding: bool) {
    child.next_rates(LIMIT);
    child.wait_for("traffic on a rates line", LIMIT, |s, l| {
        let r = (s == Stream::Stdout).then(|| rates(l)).flatten()?;
        let rx = r.iter().find(|p| p.port == 0)?.rx_pps;
        let tx = r.iter().find(|p| p.port == 1)?.tx_pps;
        (rx > 0.0 && (tx > 0.0) == forwarding).then_some(())
    });
}

/// A pcap replayed forever into net_pcap0, routed to net_null0 by the
/// config file `cfg` (rewritten by the test), statistics to `json`.
struct Replay {
    _dir: tempfile::TempDir,
    input: std::path::PathBuf,
    json: std::path::PathBuf,
    cfg: std::path::PathBuf,
    test: &'static str,
}

impl Replay {
    fn new(test: &'static str, frames: &[Vec<u8>], config: &str) -> Replay {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        let (input, json, cfg) = (p("in.pcap"), p("stats.json"), p("router.toml"));
        write_pcap(&input, frames);
        std::fs::write(&cfg, config).unwrap();
        Replay {
            _dir: dir,
            input,
            json,
            cfg,
            test,
        }
    }

    fn command(&self, extra: &[&str]) -> std::process::Command {
        let mut cmd = fastpath();
        cmd.args(eal_args(
            self.test,
            &[
                format!("net_pcap0,rx_pcap={},infinite_rx=1", self.input.display()),
                "net_null0,no-rx=1".to_string(),
            ],
        ))
        .args(["--", "--config"])
        .arg(&self.cfg)
        .args(["--mbufs", "16383", "--stats-period", &PERIOD.to_string()])
        .arg("--stats-json")
        .arg(&self.json)
        .args(extra);
        cmd
    }
}

const BASE: &str = r#"
[[port]]
device = "net_pcap0"
address = "10.0.1.1/24"

[[port]]
device = "net_null0"
address = "10.0.2.1/24"

[[route]]
prefix = "198.51.100.0/24"
via = "10.0.2.2"

[[neighbour]]
address = "10.0.2.2"
mac = "02:bb:00:00:00:22"

[[hook]]
point = "egress"
port = "net_null0"
kind = "filter"
name = "fw"
policy = "accept"
[[hook.rule]]
proto = "udp"
dport = 54
action = "drop"
"#;

/// The same verdicts with another rule and an ingress chain.
const EXTRA: &str = r#"
[[hook.rule]]
proto = "udp"
dport = 55
action = "drop"

[[hook]]
point = "ingress"
port = "net_pcap0"
kind = "classify"
[[hook.rule]]
proto = "udp"
dport = 53
set_class = 1
"#;

#[test]
fn sighup_under_full_speed_traffic_never_drops_what_both_rule_sets_accept() {
    // Alternating: port 53 (accepted by both files), port 54 (dropped by both).
    let frames: Vec<Vec<u8>> = (0..1024u16)
        .map(|i| udp([10, 0, 1, 2], [198, 51, 100, 9], 1000 + i, 53 + (i % 2)))
        .collect();
    let run = Replay::new("hooks-reload", &frames, BASE);
    let (cfg, json) = (&run.cfg, &run.json);
    let mut child = Watched::spawn(run.command(&[]));
    child.wait_stderr("routing", LIMIT);
    wait_traffic(&mut child, true);
    const RELOADS: usize = 20;
    let mut generation = None;
    for i in 0..RELOADS {
        let text = if i % 2 == 0 {
            format!("{BASE}{EXTRA}")
        } else {
            BASE.to_string()
        };
        std::fs::write(cfg, text).unwrap();
        child.signal("-HUP");
        generation = Some(wait_reloaded(&mut child, generation));
        // Traffic flows between reloads: each set of hooks sees some.
        wait_traffic(&mut child, true);
    }
    child.wait_received(0, 200_000.0, PERIOD, LIMIT);
    child.signal("-INT");
    let r = child.finish(LIMIT);
    let log = &r.stderr;
    assert!(r.status.success(), "fastpath failed: {:?}\n{log}", r.status);
    let reloaded = log.matches("SIGHUP: hooks reloaded").count();
    assert_eq!(reloaded, RELOADS, "one reload per SIGHUP:\n{log}");
    assert!(!log.contains("the running hooks stay"), "{log}");

    let s = read_json(json);
    let t = &s["totals"];
    let rx = t["rx"].as_u64().unwrap();
    let tx = t["tx"].as_u64().unwrap();
    let by_rule = t["drops"]["filter_rule"].as_u64().unwrap();
    let drained = t["drops"]["shutdown_drain"].as_u64().unwrap();
    assert!(rx > 100_000, "too little traffic to mean anything: {rx}");
    assert_eq!(t["balanced"], true);
    assert_eq!(
        rx,
        tx + by_rule + drained,
        "only port 54 may be dropped: {t}"
    );
    assert_eq!(t["drops"]["filter_policy"], 0);
    // Port 53 and 54 alternate in the input: what left and what the rule
    // dropped differ by at most one pass over the pcap.
    assert!(tx.abs_diff(by_rule) <= 1024, "tx {tx} vs dropped {by_rule}");
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0, "mbufs leaked");
    let fw = s["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["name"] == "fw")
        .expect("fw in the report")
        .clone();
    // Counters survived every reload: they cover all the traffic.
    assert_eq!(fw["accepted"].as_u64().unwrap(), tx, "{fw}");
    assert_eq!(fw["dropped"].as_u64().unwrap(), by_rule, "{fw}");
    assert_eq!(fw["seen"].as_u64().unwrap(), tx + by_rule, "{fw}");
}

/// Phase 1: classify + a filter that accepts UDP to port 53. Phase 2
/// (after SIGHUP): the filter drops it.
const MEMO_ACCEPT: &str = r#"
[[hook]]
point = "ingress"
port = "net_pcap0"
kind = "classify"
name = "cls"
[[hook.rule]]
proto = "udp"
set_class = 1

[[hook]]
point = "egress"
port = "net_null0"
kind = "filter"
name = "fw"
policy = "accept"
[[hook.rule]]
proto = "udp"
dport = 53
action = "accept"
"#;

#[test]
fn a_reload_drops_the_flows_the_old_rules_accepted() {
    // 64 flows, all to port 53: every burst is accepted in phase 1.
    let frames: Vec<Vec<u8>> = (0..64u16)
        .map(|i| udp([10, 0, 1, 2], [198, 51, 100, 9], 1000 + i, 53))
        .collect();
    let base = BASE.split("[[hook]]").next().unwrap();
    let run = Replay::new(
        "hooks-reload-memo",
        &frames,
        &format!("{base}{MEMO_ACCEPT}"),
    );
    let (cfg, json) = (&run.cfg, &run.json);
    let mut child = Watched::spawn(run.command(&[]));
    child.wait_stderr("routing", LIMIT);
    // Phase 1: accepted for a while.
    child.wait_received(0, 200_000.0, PERIOD, LIMIT);
    let drop_53 = MEMO_ACCEPT.replace(
        "dport = 53\naction = \"accept\"",
        "dport = 53\naction = \"drop\"",
    );
    assert_ne!(drop_53, MEMO_ACCEPT);
    std::fs::write(cfg, format!("{base}{drop_53}")).unwrap();
    child.signal("-HUP");
    wait_reloaded(&mut child, None);
    // Phase 2: the new rule holds (nothing leaves, traffic still comes in)
    // and drops enough to mean something.
    wait_traffic(&mut child, false);
    child.wait_received(0, 200_000.0, PERIOD, LIMIT);
    child.signal("-INT");
    let r = child.finish(LIMIT);
    assert!(r.status.success(), "fastpath failed:\n{}", r.stderr);
    assert_eq!(
        r.stderr.matches("SIGHUP: hooks reloaded").count(),
        1,
        "{}",
        r.stderr
    );

    let s = read_json(json);
    let t = &s["totals"];
    assert_eq!(t["balanced"], true);
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0, "mbufs leaked");
    let tx = t["tx"].as_u64().unwrap();
    let dropped = t["drops"]["filter_rule"].as_u64().unwrap();
    // Phase 1 sent the flows; phase 2 dropped them by the new rule.
    assert!(tx > 100_000, "phase 1 sent too little: {t}");
    assert!(dropped > 100_000, "the new rule never dropped: {t}");
}
