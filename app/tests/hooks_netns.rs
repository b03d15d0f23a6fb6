//! The `filter` hook kind end to end, between two kernel hosts in network
//! namespaces (fastpath routes between them over net_af_packet on veth
//! pairs, see `common/netns.rs`), driven with the real tools: ping, netcat
//! and the kernel's TCP.
//!
//! * a stateless rule drops telnet while ping and HTTP pass;
//! * "established, related: accept; new inbound: drop" with stateful
//!   filters: replies come in, new inbound connections and pings do not;
//! * a 12 MiB TCP transfer survives five SIGHUP rule reloads intact, and
//!   the hook counters carry over the reloads;
//! * a rule file that does not build keeps the running hooks.
//!
//! After SIGINT each test reads the final report (`--stats-json`): drop
//! reasons, every hook's counters, balanced totals and every mbuf back.

mod common;
#[path = "common/netns.rs"]
mod netns;

use common::*;
use netns::{need, Topology};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Host A (netns "a") and host B (netns "b").
const A: &str = "10.0.1.2";
const B: &str = "10.0.2.2";

/// The two ports; net_af_packet0 faces A (DPDK port 0), net_af_packet1
/// faces B (DPDK port 1). `hooks` is appended.
fn config(hooks: &str) -> String {
    format!(
        r#"# two hosts, one router, hooks below
[[port]]
device = "net_af_packet0"
address = "10.0.1.1/24"

[[port]]
device = "net_af_packet1"
address = "10.0.2.1/24"
{hooks}"#
    )
}

/// Stateless: at egress toward B, telnet is dropped, everything else passes.
const NO_TELNET: &str = r#"
[[hook]]
point = "egress"
port = "net_af_packet1"
kind = "filter"
name = "no-telnet"
policy = "accept"
[[hook.rule]]
proto = "tcp"
dport = 23
action = "drop"
"#;

/// "Established, related: accept; new inbound: drop" for A. `extra_b` goes
/// first in the filter toward B.
fn stateful(extra_b: &str) -> String {
    format!(
        r#"
# Toward A, the protected side: only what belongs to a tracked flow gets in.
[[hook]]
point = "egress"
port = "net_af_packet0"
kind = "filter"
name = "protect-a"
policy = "drop"
stateful = true
[[hook.rule]]
state = ["established", "related"]
action = "accept"

# Toward B: everything passes, but through a stateful filter. A flow enters
# the connection table only when a stateful filter accepts its first packet,
# so without this hook A's outbound flows would be unknown and their replies
# would be "new" at protect-a (and dropped). All stateful filters share one
# table per worker.
[[hook]]
point = "egress"
port = "net_af_packet1"
kind = "filter"
name = "track-b"
policy = "accept"
stateful = true
{extra_b}"#
    )
}

/// Added to track-b by some of the reloads.
const TELNET_RULE: &str = r#"[[hook.rule]]
proto = "tcp"
dport = 23
action = "drop"
"#;

/// A network namespace topology plus the tools these tests use beyond it.
fn topology(tag: &str) -> Topology {
    for tool in ["ss", "timeout", "nc"] {
        need(tool);
    }
    Topology::new(tag)
}

/// fastpath running as the router, its stderr collected line by line as it
/// comes (to wait for log lines), killed if still running when dropped.
struct Router {
    child: Mutex<Option<Child>>,
    /// The exit status, once seen (the child is reaped then).
    status: Mutex<Option<ExitStatus>>,
    pid: i32,
    stderr: Arc<Mutex<String>>,
    stdout: Arc<Mutex<String>>,
    threads: Vec<JoinHandle<()>>,
    cfg: PathBuf,
    json: PathBuf,
}

impl Router {
    /// Start fastpath on the topology's router veths with `text` as config
    /// and wait until it routes.
    ///
    /// DPDK 22.11's net_af_packet names its PACKET_FANOUT group
    /// `(getpid() ^ ifindex) & 0xffff`, and groups are shared by every
    /// process of the network namespace: with several routers starting at
    /// once (parallel tests) two of them can pick the same group for
    /// different interfaces, and the second gets EINVAL at probe. A new
    /// process has a new pid, so that start is retried.
    fn start(topo: &Topology, test: &str, dir: &Path, text: &str) -> Router {
        for _ in 0..4 {
            let r = Router::start_once(topo, test, dir, text);
            r.wait_log("the start of routing", Duration::from_secs(60), |e| {
                e.contains("fastpath: routing")
                    || (e.contains("could not set PACKET_FANOUT") && r.exited().is_some())
            });
            if !r.stderr().contains("fastpath: routing") {
                eprintln!(
                    "fastpath did not start (PACKET_FANOUT clash), again:\n{}",
                    r.stderr()
                );
                continue;
            }
            return r;
        }
        panic!("fastpath did not start in 4 attempts (PACKET_FANOUT group clashes)");
    }

    fn start_once(topo: &Topology, test: &str, dir: &Path, text: &str) -> Router {
        let cfg = dir.join("router.toml");
        let json = dir.join("stats.json");
        std::fs::write(&cfg, text).unwrap();
        let mut cmd = fastpath();
        cmd.args(eal_args(
            test,
            &[
                format!("net_af_packet0,iface={},framecnt=4096", topo.router_if("a")),
                format!("net_af_packet1,iface={},framecnt=4096", topo.router_if("b")),
            ],
        ))
        .args(["--", "--config"])
        .arg(&cfg)
        .arg("--stats-json")
        .arg(&json);
        let mut child = spawn(cmd);
        let stderr = Arc::new(Mutex::new(String::new()));
        let stdout = Arc::new(Mutex::new(String::new()));
        let mut threads = Vec::new();
        let err = child.stderr.take().unwrap();
        let sink = stderr.clone();
        threads.push(std::thread::spawn(move || {
            for line in BufReader::new(err).lines() {
                let Ok(line) = line else { break };
                let mut s = sink.lock().unwrap();
                s.push_str(&line);
                s.push('\n');
            }
        }));
        let mut out = child.stdout.take().unwrap();
        let sink = stdout.clone();
        threads.push(std::thread::spawn(move || {
            let mut s = String::new();
            let _ = out.read_to_string(&mut s);
            sink.lock().unwrap().push_str(&s);
        }));
        Router {
            pid: child.id() as i32,
            child: Mutex::new(Some(child)),
            status: Mutex::new(None),
            stderr,
            stdout,
            threads,
            cfg,
            json,
        }
    }

    /// The exit status, if fastpath has exited.
    fn exited(&self) -> Option<ExitStatus> {
        let mut status = self.status.lock().unwrap();
        if status.is_none() {
            let mut c = self.child.lock().unwrap();
            *status = c.as_mut().and_then(|c| c.try_wait().expect("try_wait"));
        }
        *status
    }

    /// Send `sig`; fastpath must still be running.
    fn signal(&self, sig: i32) {
        if let Some(st) = self.exited() {
            panic!(
                "fastpath exited ({st}) before signal {sig} could be sent:\n{}",
                self.stderr()
            );
        }
        // SAFETY: the pid is our child, running and not reaped.
        let rc = unsafe { libc::kill(self.pid, sig) };
        assert_eq!(rc, 0, "kill({}, {sig})", self.pid);
    }

    /// What fastpath wrote to stderr so far.
    fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Wait until stderr satisfies `done`, at most `limit`.
    fn wait_log(&self, what: &str, limit: Duration, done: impl Fn(&str) -> bool) {
        let start = Instant::now();
        loop {
            if done(&self.stderr()) {
                return;
            }
            if let Some(st) = self.exited() {
                // The last lines may still be on their way from the pipe.
                let gone = Instant::now();
                while gone.elapsed() < Duration::from_secs(2) {
                    if done(&self.stderr()) {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                panic!(
                    "fastpath exited ({st}) while waiting for {what}:\n{}",
                    self.stderr()
                );
            }
            assert!(
                start.elapsed() < limit,
                "no {what} on fastpath's stderr within {limit:?}:\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// SIGINT (unless fastpath is gone already), then wait (at most
    /// `limit`) for the exit and the output.
    fn stop(mut self, limit: Duration) -> Run {
        let exited = self.exited();
        if exited.is_none() {
            // SAFETY: the pid is our child, running and not reaped.
            unsafe { libc::kill(self.pid, libc::SIGINT) };
        }
        let mut child = self.child.lock().unwrap().take().unwrap();
        let start = Instant::now();
        let status = loop {
            if let Some(st) = exited {
                break st;
            }
            if let Some(st) = child.try_wait().expect("wait") {
                break st;
            }
            if start.elapsed() > limit {
                let _ = child.kill();
                let _ = child.wait();
                self.join();
                panic!(
                    "fastpath did not stop within {limit:?} of SIGINT\nstdout:\n{}\nstderr:\n{}",
                    self.stdout.lock().unwrap(),
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        self.join();
        Run {
            status,
            stdout: self.stdout.lock().unwrap().clone(),
            stderr: self.stderr(),
        }
    }

    fn join(&mut self) {
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Router {
    fn drop(&mut self) {
        let child = self.child.lock().unwrap().take();
        if let Some(mut c) = child {
            if self.status.lock().unwrap().is_none() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}

/// Run `checks` against a running router, then stop it with SIGINT; a
/// failing check still stops fastpath and shows its output. Returns the
/// run and the final report.
fn with_router(router: Router, checks: impl FnOnce(&Router)) -> (Run, Value) {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| checks(&router)));
    let json = router.json.clone();
    let r = router.stop(Duration::from_secs(60));
    if let Err(e) = outcome {
        eprintln!("fastpath stdout:\n{}\nstderr:\n{}", r.stdout, r.stderr);
        std::panic::resume_unwind(e);
    }
    assert_success(&r);
    let s = read_json(&json);
    (r, s)
}

/// Wait until both hosts get answers from the router's near address.
fn wait_up(topo: &Topology, limit: Duration) {
    let start = Instant::now();
    for (side, addr) in [("a", "10.0.1.1"), ("b", "10.0.2.1")] {
        loop {
            let out = topo.exec(side, &["ping", "-n", "-c", "1", "-W", "1", addr]);
            if out.status.success() {
                break;
            }
            assert!(
                start.elapsed() < limit,
                "no answer from {addr} within {limit:?}: {}",
                text(&out)
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn text(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
}

/// Pseudo-random bytes, the same for the same seed.
fn blob(len: usize, seed: u64) -> Vec<u8> {
    let mut bytes = vec![0; len];
    fastrand::Rng::with_seed(seed).fill(&mut bytes);
    bytes
}

/// A command in side's namespace, bounded by `timeout secs`.
fn in_ns(topo: &Topology, side: &str, secs: u32, args: &[&str]) -> Command {
    let mut c = Command::new("ip");
    c.args([
        "netns",
        "exec",
        &topo.ns(side),
        "timeout",
        &secs.to_string(),
    ])
    .args(args);
    c
}

/// A process of ours that is stopped (SIGTERM: `timeout` passes it on to
/// its command) and reaped when dropped.
struct Proc(Option<Child>);

impl Proc {
    fn spawn(mut c: Command, stdin: Stdio, stdout: Stdio) -> Proc {
        Proc(Some(
            c.stdin(stdin)
                .stdout(stdout)
                .stderr(Stdio::piped())
                .spawn()
                .expect("start a command in a namespace"),
        ))
    }

    fn child(&mut self) -> &mut Child {
        self.0.as_mut().unwrap()
    }

    /// Wait at most `limit` for the exit; fail the test past it.
    fn finish(mut self, what: &str, limit: Duration) -> Output {
        let mut c = self.0.take().unwrap();
        let start = Instant::now();
        while c.try_wait().expect("try_wait").is_none() {
            if start.elapsed() > limit {
                let _ = c.kill();
                let o = c.wait_with_output().unwrap();
                panic!("{what} did not finish within {limit:?}: {}", text(&o));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        c.wait_with_output().unwrap()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            // SAFETY: our child, not yet reaped.
            unsafe { libc::kill(c.id() as i32, libc::SIGTERM) };
            let start = Instant::now();
            while c.try_wait().ok().flatten().is_none() {
                if start.elapsed() > Duration::from_secs(5) {
                    let _ = c.kill();
                    let _ = c.wait();
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
    }
}

/// `nc -l addr port` in side's namespace (with `-k`: keeps accepting, for
/// ports nothing should reach), once it is listening.
fn listen(
    topo: &Topology,
    side: &str,
    addr: &str,
    port: u16,
    keep: bool,
    stdin: Stdio,
    stdout: Stdio,
) -> Proc {
    let port_s = port.to_string();
    let mut args = vec!["nc", "-N", "-l"];
    if keep {
        args.push("-k");
    }
    args.extend([addr, port_s.as_str()]);
    let p = Proc::spawn(in_ns(topo, side, 300, &args), stdin, stdout);
    let start = Instant::now();
    let filter = format!("sport = :{port}");
    loop {
        let out = topo.exec(side, &["ss", "-Hltn", &filter]);
        if out.status.success() && !out.stdout.is_empty() {
            return p;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "nc -l {addr} {port} in {side} is not listening: {}",
            text(&out)
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `nc -z -w 2 addr port` from inside `side`: its output and how long it took.
fn nc_probe(
    topo: &Topology,
    side: &str,
    addr: &str,
    port: u16,
) -> (std::process::Output, Duration) {
    let start = Instant::now();
    let out = in_ns(
        topo,
        side,
        20,
        &["nc", "-z", "-w", "2", addr, &port.to_string()],
    )
    .output()
    .expect("nc -z");
    (out, start.elapsed())
}

/// A TCP connect from side to addr:port that must not get through: it
/// times out (a listener is there, so only the filter can stop it).
fn assert_connect_times_out(topo: &Topology, side: &str, addr: &str, port: u16) {
    let (out, took) = nc_probe(topo, side, addr, port);
    assert!(
        !out.status.success(),
        "{side} -> {addr}:{port} got through: {}",
        text(&out)
    );
    // A refused connection (RST) fails at once; a dropped SYN waits for -w.
    assert!(
        took >= Duration::from_millis(1500),
        "{side} -> {addr}:{port} failed after {took:?} (refused, not dropped?): {}",
        text(&out)
    );
}

/// A TCP connect to addr:port from inside side itself: the listener is up.
fn assert_listener_answers_locally(topo: &Topology, side: &str, addr: &str, port: u16) {
    let (out, _) = nc_probe(topo, side, addr, port);
    assert!(
        out.status.success(),
        "local connect to {addr}:{port} in {side}: {}",
        text(&out)
    );
}

/// Send `req` from A to B:80 and get `reply` back over one TCP connection
/// A opens; both directions compared byte for byte. A does not half-close
/// when its request is sent (no `-N`): a listening OpenBSD nc returns as
/// soon as the peer's FIN has come in while its own input buffer happens
/// to be empty, which cut B's reply short once (736 KiB of 1 MiB) under the
/// full suite's load. B half-closes after its reply (`-N`), A then sends
/// the rest of its request, closes, and B sees the end of it.
fn exchange(topo: &Topology, dir: &Path, req: &[u8], reply: &[u8]) {
    let p = |n: &str| dir.join(n);
    std::fs::write(p("req.bin"), req).unwrap();
    std::fs::write(p("reply.bin"), reply).unwrap();
    let server = listen(
        topo,
        "b",
        B,
        80,
        false,
        Stdio::from(std::fs::File::open(p("reply.bin")).unwrap()),
        Stdio::from(std::fs::File::create(p("got_req.bin")).unwrap()),
    );
    let client = Proc::spawn(
        in_ns(topo, "a", 120, &["nc", B, "80"]),
        Stdio::from(std::fs::File::open(p("req.bin")).unwrap()),
        Stdio::from(std::fs::File::create(p("got_reply.bin")).unwrap()),
    );
    let c = client.finish("nc A -> B:80", Duration::from_secs(150));
    assert!(c.status.success(), "nc A -> B:80: {c:?}");
    let s = server.finish("nc -l B:80", Duration::from_secs(30));
    assert!(s.status.success(), "nc -l B:80: {s:?}");
    let got_req = std::fs::read(p("got_req.bin")).unwrap();
    let got_reply = std::fs::read(p("got_reply.bin")).unwrap();
    assert_eq!(got_req.len(), req.len(), "A -> B length");
    assert!(got_req == req, "A -> B content differs");
    assert_eq!(got_reply.len(), reply.len(), "B -> A length");
    assert!(got_reply == reply, "B -> A content differs");
}

/// The report's entry of the hook `name`.
fn hook<'a>(s: &'a Value, name: &str) -> &'a Value {
    common::hook_report(s, name)
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

/// Every hook's counters add up, the pipeline's filter drops are exactly
/// the hooks' drops, the hooks saw every routed packet, the totals balance
/// and every mbuf came back.
fn assert_consistent(s: &Value) {
    let mut hook_drops = 0;
    let mut seen = 0;
    for h in s["hooks"].as_array().unwrap() {
        assert_eq!(h["kind"], "filter", "{h}");
        assert_eq!(
            u(&h["seen"]),
            u(&h["accepted"]) + u(&h["dropped"]) + u(&h["stolen"]),
            "{h}"
        );
        assert_eq!(u(&h["stolen"]), 0, "{h}");
        hook_drops += u(&h["dropped"]);
        seen += u(&h["seen"]);
    }
    // When every port has a filter at egress, each received packet that
    // was neither punted nor dropped before egress passed exactly one filter
    // (one waiting for ARP is both seen and punted): the sum of `seen` lies
    // between rx - punted - dropped and rx. Counters that missed packets
    // (e.g. reset by a reload) fall below.
    let hooks = s["hooks"].as_array().unwrap();
    let every_port = s["ports"]
        .as_array()
        .unwrap()
        .iter()
        .all(|p| hooks.iter().any(|h| h["port"] == p["id"]));
    if every_port {
        let t = &s["totals"];
        let (rx, punted, dropped) = (u(&t["rx"]), u(&t["punted"]), u(&t["dropped"]));
        assert!(
            rx.saturating_sub(punted + dropped) <= seen && seen <= rx,
            "the hooks saw {seen} packets of rx {rx}, punted {punted}, dropped {dropped}: {s}"
        );
    }
    let drops = &s["totals"]["drops"];
    assert_eq!(
        hook_drops,
        u(&drops["filter_rule"]) + u(&drops["filter_policy"]),
        "hook drops vs the pipeline's filter drops: {s}"
    );
    assert_eq!(s["totals"]["balanced"], true, "{s}");
    assert_eq!(s["mbufs"]["in_use_at_exit"], 0, "{s}");
}

#[test]
fn a_rule_drops_telnet_while_ping_and_http_pass() {
    let topo = topology("hrul");
    let dir = tempfile::tempdir().unwrap();
    let router = Router::start(&topo, "hooks-rule", dir.path(), &config(NO_TELNET));
    let (r, s) = with_router(router, |_| {
        wait_up(&topo, Duration::from_secs(30));
        let (ok, out) = topo.ping("a", B, &[]);
        assert!(
            ok && out.contains("3 received") && out.contains("ttl=63"),
            "{out}"
        );
        let (ok, out) = topo.ping("b", A, &[]);
        assert!(ok && out.contains("3 received"), "{out}");

        exchange(&topo, dir.path(), &blob(256 << 10, 1), &blob(64 << 10, 2));

        let _telnet = listen(&topo, "b", B, 23, true, Stdio::null(), Stdio::null());
        assert_listener_answers_locally(&topo, "b", B, 23);
        assert_connect_times_out(&topo, "a", B, 23);
    });
    assert!(
        r.stderr
            .contains("hook \"no-telnet\" (filter) at egress of port 1"),
        "{}",
        r.stderr
    );
    let h = hook(&s, "no-telnet");
    assert_eq!(
        (&h["point"], &h["port"]),
        (&"egress".into(), &1.into()),
        "{h}"
    );
    // The SYN and its retransmits (one a second during nc's 2 s).
    assert!(u(&s["totals"]["drops"]["filter_rule"]) >= 1, "{s}");
    assert!(u(&h["stats"]["rule_dropped"]) >= 1, "{h}");
    assert_eq!(u(&h["dropped"]), u(&h["stats"]["rule_dropped"]), "{h}");
    assert_eq!(u(&s["totals"]["drops"]["filter_policy"]), 0, "{s}");
    // Pings, 320 KiB of TCP both ways: well over 200 packets toward B.
    assert!(u(&h["accepted"]) >= 100, "{h}");
    assert_consistent(&s);
}

#[test]
fn stateful_filter_lets_replies_in_and_refuses_new_inbound() {
    let topo = topology("hsta");
    let dir = tempfile::tempdir().unwrap();
    let router = Router::start(&topo, "hooks-state", dir.path(), &config(&stateful("")));
    let (_, s) = with_router(router, |_| {
        wait_up(&topo, Duration::from_secs(30));
        // Echo requests leave toward B (tracked), the replies are established.
        let (ok, out) = topo.ping("a", B, &[]);
        assert!(
            ok && out.contains("3 received") && out.contains("ttl=63"),
            "{out}"
        );

        // A's connection to B, data both ways.
        exchange(&topo, dir.path(), &blob(1 << 20, 3), &blob(1 << 20, 4));

        // New inbound: B's connection to a listener in A, and B's ping.
        let _l = listen(&topo, "a", A, 8080, true, Stdio::null(), Stdio::null());
        assert_listener_answers_locally(&topo, "a", A, 8080);
        assert_connect_times_out(&topo, "b", A, 8080);
        let (ok, out) = topo.ping("b", A, &["-c", "2"]);
        assert!(!ok && out.contains("0 received"), "{out}");

        // Still: A's pings get their replies.
        let (ok, out) = topo.ping("a", B, &["-c", "1"]);
        assert!(ok, "{out}");
    });
    let protect = hook(&s, "protect-a");
    let track = hook(&s, "track-b");
    // B's SYNs to 8080 (and retransmits), B's two echo requests.
    assert!(u(&s["totals"]["drops"]["filter_policy"]) >= 3, "{s}");
    assert!(u(&protect["stats"]["policy_dropped"]) >= 3, "{protect}");
    assert_eq!(u(&s["totals"]["drops"]["filter_rule"]), 0, "{s}");
    // The echo replies and all of B's TCP segments came in as established.
    assert!(u(&protect["stats"]["ct_established"]) >= 100, "{protect}");
    assert!(u(&protect["stats"]["rule_accepted"]) >= 100, "{protect}");
    assert!(u(&protect["stats"]["ct_entries"]) >= 1, "{protect}");
    // track-b created the entries: A's pings and the TCP connection.
    assert!(u(&track["stats"]["ct_new"]) >= 2, "{track}");
    assert!(u(&track["stats"]["ct_entries"]) >= 1, "{track}");
    assert_eq!(u(&track["dropped"]), 0, "{track}");
    assert_consistent(&s);
}

#[test]
fn replacing_rules_during_a_transfer_keeps_it_going() {
    const CHUNK: usize = 2 << 20;
    const CHUNKS: usize = 6;
    const RELOADS: usize = 5;
    let topo = topology("hrel");
    let dir = tempfile::tempdir().unwrap();
    let router = Router::start(&topo, "hooks-reload", dir.path(), &config(&stateful("")));
    let data = blob(CHUNK * CHUNKS, 5);
    let received = dir.path().join("received.bin");
    let (r, s) = with_router(router, |router| {
        wait_up(&topo, Duration::from_secs(30));
        // Drops before the reloads: hook counters must keep them.
        assert_connect_times_out(&topo, "b", A, 8080);

        // B sends over the connection A opens; the test feeds B's nc in
        // chunks, and reloads the rules between them.
        let mut server = listen(&topo, "b", B, 80, false, Stdio::piped(), Stdio::null());
        let client = Proc::spawn(
            in_ns(&topo, "a", 300, &["nc", "-d", B, "80"]),
            Stdio::null(),
            Stdio::from(std::fs::File::create(&received).unwrap()),
        );
        let mut stdin = server.child().stdin.take().unwrap();
        let (written_tx, written) = mpsc::channel::<usize>();
        let (go, go_rx) = mpsc::channel::<()>();
        let chunks: Vec<Vec<u8>> = data.chunks(CHUNK).map(<[u8]>::to_vec).collect();
        let writer = std::thread::spawn(move || {
            for (i, c) in chunks.iter().enumerate() {
                if stdin.write_all(c).is_err() {
                    return;
                }
                if written_tx.send(i).is_err() || go_rx.recv().is_err() {
                    return;
                }
            }
            // EOF: nc -N shuts the connection down, A's nc ends.
        });
        let size = || std::fs::metadata(&received).map(|m| m.len()).unwrap_or(0);
        let mut sizes = Vec::new();
        for k in 1..=CHUNKS {
            let start = Instant::now();
            let i = loop {
                match written.recv_timeout(Duration::from_millis(500)) {
                    Ok(i) => break i,
                    Err(mpsc::RecvTimeoutError::Timeout) => {}
                    Err(e) => panic!("the writer thread ended: {e}"),
                }
                if let Some(st) = router.exited() {
                    panic!(
                        "fastpath exited ({st}) during the transfer:\n{}",
                        router.stderr()
                    );
                }
                assert!(
                    start.elapsed() < Duration::from_secs(120),
                    "B's nc did not take chunk {k} within 120 s"
                );
            };
            assert_eq!(i, k - 1);
            if k > RELOADS {
                let _ = go.send(());
                break;
            }
            if k == 1 {
                // The connection is up and data flows before the first reload.
                let start = Instant::now();
                while size() == 0 {
                    assert!(
                        start.elapsed() < Duration::from_secs(60),
                        "nothing reached A"
                    );
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            sizes.push(size());
            // Odd reloads add the telnet rule toward B, even ones remove it.
            let extra = if k % 2 == 1 { TELNET_RULE } else { "" };
            std::fs::write(&router.cfg, config(&stateful(extra))).unwrap();
            router.signal(libc::SIGHUP);
            let line = format!("generation {k})");
            router.wait_log(&format!("reload {k}"), Duration::from_secs(30), |e| {
                e.contains(&line)
            });
            std::thread::sleep(Duration::from_millis(200));
            let _ = go.send(());
        }
        writer.join().unwrap();
        let c = client.finish("nc -d A -> B:80", Duration::from_secs(240));
        assert!(c.status.success(), "A's nc: {c:?}");
        let srv = server.finish("nc -l B:80", Duration::from_secs(30));
        assert!(srv.status.success(), "B's nc: {srv:?}");
        // Every reload happened with the transfer under way.
        assert!(
            sizes[0] > 0 && sizes.iter().all(|n| (*n as usize) < data.len()),
            "received bytes at each reload: {sizes:?}"
        );

        // The last reload's rules are in force: telnet toward B is dropped.
        let _telnet = listen(&topo, "b", B, 23, true, Stdio::null(), Stdio::null());
        assert_listener_answers_locally(&topo, "b", B, 23);
        assert_connect_times_out(&topo, "a", B, 23);
    });
    let got = std::fs::read(&received).unwrap();
    assert_eq!(got.len(), data.len(), "TCP transfer length");
    assert!(got == data, "TCP transfer content differs");

    let cfg = dir.path().join("router.toml");
    let reloaded = format!("fastpath: SIGHUP: hooks reloaded from {}", cfg.display());
    assert_eq!(r.stderr.matches(&reloaded).count(), RELOADS, "{}", r.stderr);
    assert!(!r.stderr.contains("the running hooks stay"), "{}", r.stderr);

    let protect = hook(&s, "protect-a");
    let track = hook(&s, "track-b");
    // Counters carried over by name through the five reloads: protect-a's
    // drops all happened before the first one, and it saw every data
    // segment of the transfer (at most 1500 bytes each).
    assert!(u(&protect["dropped"]) >= 1, "{protect}");
    assert!(
        u(&protect["seen"]) >= (data.len() / 1500) as u64,
        "protect-a saw fewer packets than the transfer has segments: {protect}"
    );
    // The telnet rule of the last reload dropped, and the filter's own
    // counters carried over too: they agree with the chain's.
    assert!(u(&track["stats"]["rule_dropped"]) >= 1, "{track}");
    for h in [&protect, &track] {
        let st = &h["stats"];
        assert_eq!(
            u(&st["rule_dropped"]) + u(&st["policy_dropped"]),
            u(&h["dropped"]),
            "{h}"
        );
        assert_eq!(
            u(&st["rule_accepted"]) + u(&st["policy_accepted"]),
            u(&h["accepted"]),
            "{h}"
        );
    }
    assert!(u(&s["totals"]["drops"]["filter_rule"]) >= 1, "{s}");
    assert!(u(&protect["stats"]["ct_entries"]) >= 1, "{protect}");
    assert_consistent(&s);
}

#[test]
fn a_bad_rule_file_on_sighup_keeps_the_running_hooks() {
    let topo = topology("hbad");
    let dir = tempfile::tempdir().unwrap();
    let router = Router::start(&topo, "hooks-bad", dir.path(), &config(NO_TELNET));
    let bad = config(&NO_TELNET.replace("dport = 23", "dport = \"x\""));
    let bad_line = bad
        .lines()
        .position(|l| l.starts_with("dport = \"x\""))
        .unwrap()
        + 1;
    let (r, s) = with_router(router, |router| {
        wait_up(&topo, Duration::from_secs(30));
        std::fs::write(&router.cfg, &bad).unwrap();
        router.signal(libc::SIGHUP);
        router.wait_log("the refused reload", Duration::from_secs(30), |e| {
            e.contains("the running hooks stay")
        });

        let (ok, out) = topo.ping("a", B, &[]);
        assert!(ok && out.contains("3 received"), "{out}");
        let _telnet = listen(&topo, "b", B, 23, true, Stdio::null(), Stdio::null());
        assert_listener_answers_locally(&topo, "b", B, 23);
        assert_connect_times_out(&topo, "a", B, 23);
    });
    let cfg = dir.path().join("router.toml");
    let line = r
        .stderr
        .lines()
        .find(|l| l.contains("the running hooks stay"))
        .unwrap();
    assert!(
        line.starts_with("fastpath: SIGHUP: ")
            && line.contains(&format!("{}:{bad_line}: ", cfg.display()))
            && line.contains("dport"),
        "{line}"
    );
    assert!(!r.stderr.contains("hooks reloaded"), "{}", r.stderr);
    let h = hook(&s, "no-telnet");
    assert!(u(&h["stats"]["rule_dropped"]) >= 1, "{h}");
    assert!(u(&s["totals"]["drops"]["filter_rule"]) >= 1, "{s}");
    assert_consistent(&s);
}
