//! Reading a running fastpath: every `/fastpath/...` telemetry command asked
//! through the stock `dpdk-telemetry.py`, and `/metrics` scraped and checked
//! with `promtool`, after a finite pcap run while fastpath is held alive;
//! the answers equal the final statistics it prints when stopped.

mod common;
use common::frames::{from_host_a, udp};
use common::promtool::promtool_accepts;
use common::watch::Watched;
use common::*;
use hooks::testkit;
use serde_json::Value;
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const TELEMETRY_PY: &str = "/usr/bin/dpdk-telemetry.py";

const ROUTER: &str = concat!(
    pcap_router_config!(),
    r#"
[[hook]]
point = "egress"
port = "net_pcap1"
kind = "filter"
name = "fw"
policy = "accept"
stateful = true
conntrack_max = 16
[[hook.rule]]
proto = "udp"
dport = 9
action = "drop"
"#
);

/// Routed UDP flows (more than the connection table holds), a discard-port
/// flow the filter drops, TTL 1 and unrouted packets (ICMP errors), a runt.
fn router_frames() -> Vec<Vec<u8>> {
    let mut v: Vec<Vec<u8>> = (0..40u16)
        .map(|i| udp([10, 0, 1, 2], [198, 51, 100, 9], 5000 + i, 53))
        .collect();
    v.extend((0..5).map(|_| udp([10, 0, 1, 2], [198, 51, 100, 7], 7, 9)));
    v.push(
        from_host_a(testkit::udp([10, 0, 1, 2], [198, 51, 100, 9], 0, 0))
            .ttl(1)
            .build(),
    );
    v.push(udp([10, 0, 1, 2], [203, 0, 113, 1], 1, 2));
    v.push(vec![0xff; 40]);
    v
}

/// Ask `commands` of the fastpath under `prefix` through dpdk-telemetry.py
/// (commands on stdin, one JSON answer per line on stdout); the value of
/// each answer.
fn telemetry(prefix: &str, commands: &[&str]) -> Vec<Value> {
    assert!(
        std::path::Path::new(TELEMETRY_PY).exists(),
        "{TELEMETRY_PY} missing: install Debian's dpdk package"
    );
    let mut child = Command::new(TELEMETRY_PY)
        .args(["-f", prefix])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run dpdk-telemetry.py");
    let input = commands.join("\n") + "\n";
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with('{')).collect();
    assert_eq!(
        lines.len(),
        commands.len(),
        "one answer per command: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    commands
        .iter()
        .zip(lines)
        .map(|(cmd, l)| {
            let v: Value = serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}"));
            let key = cmd.split(',').next().unwrap();
            v.get(key).cloned().unwrap_or_else(|| panic!("{cmd}: {l}"))
        })
        .collect()
}

/// Wait until fastpath counted `rx` packets and nothing is in flight, and
/// then until the control view was rebuilt twice (hooks, neighbours and
/// control-plane events are current).
fn wait_settled(prefix: &str, rx: u64, routed: bool) {
    let start = Instant::now();
    loop {
        let s = &telemetry(prefix, &["/fastpath/stats"])[0];
        if s["rx"] == rx && s["in_flight"] == 0 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "never received {rx} with nothing in flight: {s}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    if !routed {
        return;
    }
    let view = |p| {
        telemetry(p, &["/fastpath/hooks"])[0]["view"]
            .as_u64()
            .unwrap()
    };
    let first = view(prefix);
    while view(prefix) < first + 2 {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "view not refreshed"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// GET `path` from `addr`: status line and body.
fn http_get(addr: &str, path: &str) -> (String, String) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect to --metrics");
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP response");
    (head.lines().next().unwrap().to_string(), body.to_string())
}

/// The value of the sample `name{labels}` (labels as written, in order).
fn metric(text: &str, series: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {series} in:\n{text}"))
        .parse::<f64>()
        .unwrap() as u64
}

/// Start fastpath on the pcap ports of `dir` with `app` options, metrics on
/// an ephemeral port; returns it and the metrics address.
fn start(test: &str, dir: &std::path::Path, app: &[&str]) -> (Watched, String) {
    let mut cmd = fastpath();
    cmd.args(eal_args(test, &pcap_vdevs(dir)))
        .arg("--")
        .args(app)
        .args(["--metrics", "127.0.0.1:0", "--stats-json"])
        .arg(dir.join("stats.json"));
    let mut fp = Watched::spawn(cmd);
    let addr = fp.metrics_addr(Duration::from_secs(30));
    (fp, addr)
}

fn stop(fp: Watched, dir: &std::path::Path) -> Value {
    fp.signal("-TERM");
    let r = fp.finish(Duration::from_secs(30));
    assert_success(&r);
    read_json(&dir.join("stats.json"))
}

const COUNTS: [&str; 7] = [
    "rx",
    "tx",
    "dropped",
    "punted",
    "originated",
    "consumed",
    "stolen",
];

/// The counters every mode reports: stats, ports, lcores and drops equal the
/// final statistics, field by field; and the same counters in the scrape.
fn check_counters(answers: &[Value], report: &Value, scrape: &str, mode: &str) {
    let (stats, ports, lcores, drops) = (&answers[0], &answers[1], &answers[2], &answers[3]);
    let t = &report["totals"];
    assert_eq!(stats["mode"], mode);
    for k in COUNTS {
        assert_eq!(stats[k], t[k], "/fastpath/stats {k}");
    }
    assert_eq!(stats["in_flight"], 0);
    assert_eq!(
        stats["balance"],
        format!(
            "rx {} + originated {} = tx {} + dropped {} + consumed {} + stolen {} + in flight 0",
            t["rx"], t["originated"], t["tx"], t["dropped"], t["consumed"], t["stolen"]
        )
    );
    assert_eq!(stats["ports"], 2);
    assert_eq!(stats["workers"], 1);
    for p in report["ports"].as_array().unwrap() {
        let id = p["id"].to_string();
        let q = &ports[&id];
        assert_eq!(q["name"], p["name"], "port {id}");
        for k in COUNTS {
            assert_eq!(q[k], p[k], "/fastpath/ports {id} {k}");
        }
        let d = &p["driver"];
        assert_eq!(q["driver_rx_packets"], d["rx_packets"]);
        assert_eq!(q["driver_tx_packets"], d["tx_packets"]);
        for k in [
            "rx_bytes",
            "tx_bytes",
            "rx_missed",
            "rx_errors",
            "tx_errors",
            "rx_nombuf",
        ] {
            assert_eq!(q[k], d[k], "/fastpath/ports {id} {k}");
        }
        let labels = format!("{{port=\"{id}\",name=\"{}\"}}", p["name"].as_str().unwrap());
        for (m, v) in [
            ("rx_packets", &p["rx"]),
            ("tx_packets", &p["tx"]),
            ("dropped_packets", &p["dropped"]),
            ("rx_bytes", &d["rx_bytes"]),
            ("tx_bytes", &d["tx_bytes"]),
        ] {
            let series = format!("fastpath_port_{m}_total{labels}");
            assert_eq!(metric(scrape, &series), v.as_u64().unwrap(), "{series}");
        }
    }
    // The worker (lcore 1); lcore 0 is the main lcore.
    let w = report["lcores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["lcore"] == 1)
        .unwrap();
    let l = &lcores["1"];
    for k in ["rx", "tx", "dropped", "punted"] {
        assert_eq!(l[k], w[k], "/fastpath/lcores 1 {k}");
    }
    assert_eq!(
        lcores.as_object().unwrap().len(),
        1,
        "workers only: {lcores}"
    );
    let busy = l["busy_cycles"].as_u64().unwrap();
    let idle = l["idle_cycles"].as_u64().unwrap();
    // Rounds that received count busy, empty ones idle: the pcap's frames,
    // then nothing (settled before the answers were asked).
    assert!(busy > 0 && idle > 0, "a burst, then idle: {l}");
    let share = (100.0 * busy as f64 / (busy + idle) as f64).round() as u64;
    assert_eq!(l["busy_percent"], share, "the share of those cycles: {l}");
    assert!(metric(scrape, "fastpath_lcore_busy_cycles_total{lcore=\"1\"}") >= busy);
    assert!(metric(scrape, "fastpath_lcore_idle_cycles_total{lcore=\"1\"}") >= idle);
    // Every reason, each with the final count.
    let reasons = t["drops"].as_object().unwrap();
    assert_eq!(drops.as_object().unwrap().len(), reasons.len());
    for (r, n) in reasons {
        assert_eq!(&drops[r], n, "/fastpath/drops {r}");
        let series = format!("fastpath_dropped_packets_total{{reason=\"{r}\"}}");
        assert_eq!(metric(scrape, &series), n.as_u64().unwrap(), "{series}");
    }
}

const ALL: [&str; 9] = [
    "/fastpath/stats",
    "/fastpath/ports",
    "/fastpath/lcores",
    "/fastpath/drops",
    "/fastpath/routes",
    "/fastpath/neighbours",
    "/fastpath/hooks",
    "/fastpath/conntrack",
    "/fastpath/stage_drops",
];

#[test]
fn router_telemetry_and_metrics_equal_the_final_statistics() {
    let test = "opsread-router";
    let prefix = format!("fpt-{test}-{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("router.toml"), ROUTER).unwrap();
    let frames = router_frames();
    write_pcap(&dir.path().join("in0.pcap"), &frames);
    write_pcap(&dir.path().join("in1.pcap"), &[]);
    let config = dir.path().join("router.toml");
    let (fp, addr) = start(test, dir.path(), &["--config", config.to_str().unwrap()]);
    wait_settled(&prefix, frames.len() as u64, true);
    let answers = telemetry(&prefix, &ALL);
    let page = telemetry(&prefix, &["/fastpath/routes,11"]).remove(0);
    // A route added at run time shows at once (the control view is
    // published after a change), with both its next hops.
    let out = fastpath()
        .args([
            "ctl",
            "--file-prefix",
            &prefix,
            "route",
            "add",
            "203.0.113.0/24",
        ])
        .args(["via", "10.0.2.2,10.0.2.3"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = fastpath()
        .args(["ctl", "--file-prefix", &prefix, "--json", "show", "stats"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let shown: Value = serde_json::from_slice(&out.stdout).expect("JSON answer");
    let mut after = telemetry(&prefix, &["/fastpath/routes", "/fastpath/neighbours"]);
    let (after, neigh_after) = (after.remove(0), after.remove(0));
    let (status, scrape) = http_get(&addr, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK");
    promtool_accepts(&scrape);
    assert_eq!(http_get(&addr, "/").0, "HTTP/1.1 404 Not Found");
    let report = stop(fp, dir.path());

    check_counters(&answers, &report, &scrape, "router");
    let t = &report["totals"];
    assert!(t["originated"].as_u64().unwrap() >= 2, "ICMP errors: {t}");

    // Routes: the configured one among the connected, local and reserved.
    let routes = &answers[4];
    assert_eq!(routes["mode"], "router");
    assert_eq!(routes["count"], 12);
    assert_eq!(routes["shown"], 12);
    let list: Vec<&Value> = routes["routes"].as_object().unwrap().values().collect();
    let find = |p: &str| {
        *list
            .iter()
            .find(|r| r["prefix"] == p)
            .unwrap_or_else(|| panic!("{p}"))
    };
    let r = find("198.51.100.0/24");
    assert_eq!(
        (&r["kind"], &r["port"], &r["via"]),
        (&"forward".into(), &1.into(), &"10.0.2.2".into())
    );
    let r = find("10.0.1.0/24");
    assert_eq!(
        (&r["kind"], &r["port"], &r["via"]),
        (&"forward".into(), &0.into(), &"".into())
    );
    assert_eq!(find("10.0.2.1/32")["kind"], "local");
    assert_eq!(find("224.0.0.0/4")["kind"], "not_unicast");
    assert_eq!(find("127.0.0.0/8")["kind"], "martian");
    assert_eq!(find("10.0.1.0/24")["origin"], "connected");
    assert_eq!(find("198.51.100.0/24")["origin"], "config");
    assert_eq!(
        metric(&scrape, "fastpath_routes"),
        13,
        "with the route added at run time"
    );
    assert_eq!(after["count"], 13);
    let added = after["routes"]
        .as_object()
        .unwrap()
        .values()
        .find(|r| r["prefix"] == "203.0.113.0/24")
        .unwrap_or_else(|| panic!("{after}"));
    assert_eq!(added["origin"], "ctl");
    assert_eq!(added["paths"], 2);
    assert_eq!(added["via"], "10.0.2.2,10.0.2.3");
    assert_eq!(added["ports"], "1,1");
    // Paging: from entry 11, one is left.
    assert_eq!((&page["first"], &page["shown"]), (&11.into(), &1.into()));
    assert_eq!(page["routes"]["11"], routes["routes"]["11"]);

    // Neighbours (asked before the route add): the static one, as the final
    // statistics list it; after the add, the new gateway too.
    let neigh = &answers[5];
    assert_eq!(neigh["count"], 1, "{neigh}");
    let n = &neigh["neighbours"]["0"];
    let line = report["neighbours"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|l| l.as_str())
        .find(|l| l.starts_with("10.0.2.2 "))
        .unwrap();
    let w: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(n["address"], w[0]);
    assert_eq!(n["mac"], w[1]);
    assert_eq!(n["state"], w[2].to_lowercase());
    assert_eq!(n["static"], u64::from(w.get(3) == Some(&"static")));
    let addresses: Vec<&str> = neigh_after["neighbours"]
        .as_object()
        .unwrap()
        .values()
        .filter_map(|n| n["address"].as_str())
        .collect();
    assert!(addresses.contains(&"10.0.2.3"), "{neigh_after}");
    assert_eq!(neigh["states"]["reachable"], 1);
    assert_eq!(
        metric(&scrape, "fastpath_neighbours{state=\"reachable\"}"),
        1
    );

    // Hooks: each with the final counters.
    let hooks = &answers[6];
    let final_hooks = report["hooks"].as_array().unwrap();
    assert_eq!(hooks["count"], final_hooks.len());
    for (i, h) in final_hooks.iter().enumerate() {
        let a = &hooks["hooks"][i.to_string()];
        for k in [
            "name", "kind", "point", "port", "seen", "accepted", "dropped", "stolen",
        ] {
            assert_eq!(a[k], h[k], "hook {i} {k}");
        }
        for (k, v) in h["stats"].as_object().unwrap() {
            assert_eq!(&a[k], v, "hook {i} {k}");
        }
        let labels = format!(
            "{{hook=\"{}\",kind=\"{}\",point=\"{}\",port=\"{}\"}}",
            h["name"].as_str().unwrap(),
            h["kind"].as_str().unwrap(),
            h["point"].as_str().unwrap(),
            h["port"]
        );
        for k in ["seen", "accepted", "dropped"] {
            let series = format!("fastpath_hook_{k}_packets_total{labels}");
            assert_eq!(metric(&scrape, &series), h[k].as_u64().unwrap(), "{series}");
        }
    }
    let fw = &final_hooks[0];
    assert_eq!(fw["dropped"], 5, "the discard-port flow: {fw}");

    // Conntrack: the stateful filter's table.
    let ct = &answers[7];
    let st = &fw["stats"];
    assert_eq!(ct["tracking"], 1);
    for (k, f) in [
        ("entries", "ct_entries"),
        ("capacity", "ct_capacity"),
        ("refused_full", "ct_refused_full"),
        ("early_drop", "ct_early_drop"),
        ("full_policy", "ct_full_policy"),
        ("new", "ct_new"),
    ] {
        assert_eq!(ct[k], st[f], "/fastpath/conntrack {k}");
    }
    assert_eq!(ct["capacity"], 16);
    assert_eq!(ct["entries"], 16, "the table is full: {ct}");
    assert_eq!(metric(&scrape, "fastpath_conntrack_entries"), 16);
    assert_eq!(
        metric(&scrape, "fastpath_conntrack_early_drop_total"),
        st["ct_early_drop"].as_u64().unwrap()
    );

    check_stage_drops(&answers[8], &report, &scrape);
    assert_eq!(
        shown["data"]["stage_drops"], report["stage_drops"],
        "ctl show stats: {shown}"
    );
}

/// Drops by stage: the runt at l2_input, the discard-port flow at the
/// egress hook; the TTL 1 and unrouted packets are the control plane's
/// (ICMP errors) and in the totals only. Telemetry, the final statistics
/// and the scrape agree.
fn check_stage_drops(answer: &Value, report: &Value, scrape: &str) {
    let stages = &report["stage_drops"];
    assert_eq!(answer, stages, "/fastpath/stage_drops");
    let names: Vec<&str> = stages
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "egress_hook",
            "ingress_hook",
            "ip_input",
            "l2_input",
            "local",
            "neigh_output",
            "tx"
        ],
        "every stage: {stages}"
    );
    assert_eq!(
        stages["l2_input"],
        serde_json::json!({"runt": 1}),
        "{stages}"
    );
    assert_eq!(
        stages["egress_hook"],
        serde_json::json!({"filter_rule": 5}),
        "{stages}"
    );
    let mut sum = 0;
    for (stage, reasons) in stages.as_object().unwrap() {
        for (reason, n) in reasons.as_object().unwrap() {
            let series = format!(
                "fastpath_stage_dropped_packets_total{{stage=\"{stage}\",reason=\"{reason}\"}}"
            );
            assert_eq!(metric(scrape, &series), n.as_u64().unwrap(), "{series}");
            sum += n.as_u64().unwrap();
        }
    }
    let drops = &report["totals"]["drops"];
    assert_eq!(
        (drops["ttl_exceeded"].as_u64(), drops["no_route"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(
        report["totals"]["dropped"].as_u64().unwrap(),
        sum + 2,
        "the stages' drops and the control plane's two: {report}"
    );
}

#[test]
fn forward_mode_answers_counters_and_says_it_does_not_route() {
    let test = "opsread-forward";
    let prefix = format!("fpt-{test}-{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let frames = random_frames(300, 7);
    write_pcap(&dir.path().join("in0.pcap"), &frames);
    write_pcap(&dir.path().join("in1.pcap"), &[]);
    let (fp, addr) = start(test, dir.path(), &["--forward", "0:1"]);
    wait_settled(&prefix, frames.len() as u64, false);
    let answers = telemetry(&prefix, &ALL);
    let (status, scrape) = http_get(&addr, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK");
    promtool_accepts(&scrape);
    let report = stop(fp, dir.path());
    check_counters(&answers, &report, &scrape, "forward");
    assert_eq!(report["totals"]["tx"], 300);
    for a in &answers[4..] {
        assert_eq!(a["mode"], "forward", "{a}");
        assert_eq!(a["routing"], "no", "{a}");
    }
    assert!(!scrape.contains("fastpath_hook_"), "{scrape}");
    // No stages in plain forwarding.
    assert!(!scrape.contains("fastpath_stage_dropped"), "{scrape}");
    assert!(report.get("stage_drops").is_none(), "{report}");
}

/// A dual-stack router: ports, an IPv6 route and static neighbour.
const ROUTER6: &str = r#"
[[port]]
device = "net_pcap0"
address = "10.0.1.1/24"
ipv6 = ["2001:db8:1::1/64"]

[[port]]
device = "net_pcap1"
address = "10.0.2.1/24"
ipv6 = ["2001:db8:2::1/64"]

[[route]]
prefix = "2001:db8:100::/48"
via = "2001:db8:2::2"

[[neighbour]]
address = "2001:db8:2::2"
mac = "02:bb:00:00:00:22"
"#;

/// A UDP datagram from host A (2001:db8:1::2) to `dst`.
fn udp6(dst: &str) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend(common::frames::PCAP0_MAC);
    f.extend(common::frames::HOST_A_MAC);
    f.extend([0x86, 0xdd, 0x60, 0, 0, 0, 0, 12, 17, 64]);
    f.extend(
        "2001:db8:1::2"
            .parse::<std::net::Ipv6Addr>()
            .unwrap()
            .octets(),
    );
    f.extend(dst.parse::<std::net::Ipv6Addr>().unwrap().octets());
    f.extend([0x30, 0x39, 0, 53, 0, 12, 0, 0, 1, 2, 3, 4]);
    f
}

#[test]
fn ipv6_tables_and_drops_in_telemetry_metrics_and_the_final_report() {
    let test = "opsread-ipv6";
    let prefix = format!("fpt-{test}-{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("router.toml"), ROUTER6).unwrap();
    let mut frames: Vec<Vec<u8>> = (0..5).map(|_| udp6("2001:db8:100::9")).collect();
    frames.extend((0..3).map(|_| udp6("::1")));
    frames.extend((0..2).map(|_| udp6("fe80::77")));
    write_pcap(&dir.path().join("in0.pcap"), &frames);
    write_pcap(&dir.path().join("in1.pcap"), &[]);
    let config = dir.path().join("router.toml");
    let (fp, addr) = start(test, dir.path(), &["--config", config.to_str().unwrap()]);
    wait_settled(&prefix, frames.len() as u64, true);
    let out = fastpath()
        .args(["ctl", "--file-prefix", &prefix, "route", "add"])
        .args(["2001:db8:200::/48", "via", "2001:db8:2::3"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    // The control view is published after a change: wait for the route.
    let start_at = Instant::now();
    let routes6 = loop {
        let r = telemetry(&prefix, &["/fastpath/routes6"]).remove(0);
        let has = r["routes"]
            .as_object()
            .is_some_and(|l| l.values().any(|x| x["prefix"] == "2001:db8:200::/48"));
        if has {
            break r;
        }
        assert!(start_at.elapsed() < Duration::from_secs(30), "{r}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let answers = telemetry(&prefix, &["/fastpath/neighbours6", "/fastpath/drops"]);
    let (neigh6, drops) = (&answers[0], &answers[1]);
    let (status, scrape) = http_get(&addr, "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK");
    promtool_accepts(&scrape);
    let report = stop(fp, dir.path());

    // Telemetry: the IPv6 table, with origins, and its neighbours.
    assert_eq!(routes6["mode"], "router");
    let list: Vec<&Value> = routes6["routes"].as_object().unwrap().values().collect();
    let find = |p: &str| {
        *list
            .iter()
            .find(|r| r["prefix"] == p)
            .unwrap_or_else(|| panic!("{p} in {routes6}"))
    };
    let r = find("2001:db8:100::/48");
    assert_eq!(
        (&r["kind"], &r["origin"], &r["port"], &r["via"]),
        (
            &"forward".into(),
            &"config".into(),
            &1.into(),
            &"2001:db8:2::2".into()
        )
    );
    assert_eq!(find("2001:db8:200::/48")["origin"], "ctl");
    assert_eq!(find("2001:db8:1::/64")["origin"], "connected");
    assert_eq!(find("2001:db8:1::1/128")["kind"], "local");
    let routes = routes6["count"].as_u64().unwrap();
    let n = neigh6["neighbours"].as_object().unwrap();
    let static22 = n
        .values()
        .find(|e| e["address"] == "2001:db8:2::2")
        .unwrap_or_else(|| panic!("{neigh6}"));
    assert_eq!(
        (&static22["mac"], &static22["static"]),
        (&"02:bb:00:00:00:22".into(), &1.into())
    );

    // The IPv6 drop reasons, equal everywhere.
    let t = &report["totals"]["drops"];
    for (reason, n) in [("ipv6_loopback", 3), ("ipv6_link_local_destination", 2)] {
        assert_eq!(t[reason], n, "stats-json {reason}: {t}");
        assert_eq!(drops[reason], n, "/fastpath/drops {reason}");
        let series = format!("fastpath_dropped_packets_total{{reason=\"{reason}\"}}");
        assert_eq!(metric(&scrape, &series), n, "{series}");
    }

    // Metrics: the IPv6 routes (by origin) and neighbours.
    assert_eq!(metric(&scrape, "fastpath_routes6"), routes);
    assert_eq!(
        metric(&scrape, "fastpath_routes6_by_origin{origin=\"ctl\"}"),
        1
    );
    assert_eq!(
        metric(&scrape, "fastpath_routes6_by_origin{origin=\"config\"}"),
        1
    );
    assert!(metric(&scrape, "fastpath_neighbours6{state=\"reachable\"}") >= 1);

    // The final report: the same table.
    let v6 = &report["ipv6"];
    assert_eq!(v6["routes"], routes, "{v6}");
    assert_eq!(v6["routes_by_origin"]["ctl"], 1, "{v6}");
    assert_eq!(v6["routes_by_origin"]["config"], 1, "{v6}");
    assert!(v6["static_neighbours"].as_u64() >= Some(1), "{v6}");
    assert_eq!(
        v6["table_swaps"], 2,
        "the start's build and one ctl add: {v6}"
    );
    assert_eq!(report["totals"]["balanced"], true);
}
