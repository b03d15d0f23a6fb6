//! Routes changed while traffic runs: a pcap replayed forever into port 0,
//! port 1's output read from a FIFO as it leaves. Next hops are static
//! neighbours with their own MACs, so each frame says which next hop it
//! left by. A route is added (a /24 inside a /16), changed, and deleted
//! (back to the /16) with `fastpath ctl`: the /24's frames leave by the old
//! next hop, then by the new one, never back, and no packet is dropped as
//! `no_route` (every address is routed by every table). ECMP spreads 1,000
//! flows over 4 next hops evenly and keeps each flow on one. An ECMP group
//! whose every member failed keeps them all. Routes longer than /24 (each
//! needs a tbl8 group) are added and deleted in bulk, round after round,
//! more often than the table has tbl8 groups, ECMP member lists and
//! next-hop slots: what a delete frees is reused after its grace period,
//! and no packet is lost meanwhile.

mod common;
use common::ctl::{ctl_ok, fifo, gateways, prefix, routes, Frames};
use common::frames::udp;
use common::watch::Watched;
use common::*;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

const LIMIT: Duration = Duration::from_secs(30);

const A: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x22];
const B: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x23];
const C: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x24];
const D: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x25];

const PORTS: &str = r#"
[[port]]
device = "net_pcap0"
address = "10.0.1.1/24"

[[port]]
device = "net_pcap1"
address = "10.0.2.1/24"

[[neighbour]]
address = "10.0.2.2"
mac = "02:bb:00:00:00:22"

[[neighbour]]
address = "10.0.2.3"
mac = "02:bb:00:00:00:23"

[[neighbour]]
address = "10.0.2.4"
mac = "02:bb:00:00:00:24"

[[neighbour]]
address = "10.0.2.5"
mac = "02:bb:00:00:00:25"
"#;

/// A router replaying `frames` forever into port 0, port 1's output on a FIFO.
struct Live {
    dir: tempfile::TempDir,
    child: Watched,
    out: Frames,
    json: std::path::PathBuf,
    prefix: String,
}

impl Live {
    fn start(test: &str, routes: &str, frames: &[Vec<u8>]) -> Live {
        let dir = tempfile::tempdir().unwrap();
        let p = |n: &str| dir.path().join(n);
        std::fs::write(p("router.toml"), format!("{PORTS}{routes}")).unwrap();
        write_pcap(&p("in0.pcap"), frames);
        write_pcap(&p("in1.pcap"), &[]);
        let out1 = fifo(dir.path(), "out1.pcap");
        let out = Frames::read(&out1);
        let vdevs = [
            format!(
                "net_pcap0,rx_pcap={},tx_pcap={},infinite_rx=1",
                p("in0.pcap").display(),
                p("out0.pcap").display()
            ),
            format!(
                "net_pcap1,rx_pcap={},tx_pcap={}",
                p("in1.pcap").display(),
                out1.display()
            ),
        ];
        let mut cmd = fastpath();
        cmd.args(eal_args(test, &vdevs))
            .args(["--", "--config"])
            .arg(p("router.toml"))
            .args(["--mbufs", "16383", "--stats-json"])
            .arg(p("stats.json"));
        let mut child = Watched::spawn(cmd);
        child.wait_stderr("fastpath: control socket", LIMIT);
        Live {
            json: p("stats.json"),
            dir,
            child,
            out,
            prefix: prefix(test),
        }
    }

    /// Replace the config's routes with `routes` and reload it.
    fn reload(&self, routes: &str) {
        std::fs::write(
            self.dir.path().join("router.toml"),
            format!("{PORTS}{routes}"),
        )
        .unwrap();
        ctl_ok(&self.prefix, &["reload"]);
    }

    /// Stop (SIGINT), read the rest of the output; the final statistics.
    fn stop(mut self, mut each: impl FnMut(&[u8])) -> serde_json::Value {
        self.child.signal("-INT");
        self.out.rest(&mut each);
        let r = self.child.finish(LIMIT);
        assert_success(&r);
        read_json(&self.json)
    }
}

fn dst_ip(f: &[u8]) -> [u8; 4] {
    [f[30], f[31], f[32], f[33]]
}

fn dst_mac(f: &[u8]) -> [u8; 6] {
    f[..6].try_into().unwrap()
}

fn drops(stats: &serde_json::Value, reason: &str) -> u64 {
    stats["totals"]["drops"][reason].as_u64().unwrap_or(0)
}

/// What the /24's frames left by, in order, as runs of one MAC.
#[derive(Default)]
struct Runs(Vec<([u8; 6], u64)>);

impl Runs {
    fn push(&mut self, mac: [u8; 6]) {
        match self.0.last_mut() {
            Some((m, n)) if *m == mac => *n += 1,
            _ => self.0.push((mac, 1)),
        }
    }
}

#[test]
fn routes_added_changed_and_deleted_under_traffic_move_packets_without_loss() {
    // Into the /24 that changes, and into the /16 only (never changes).
    let mut frames = Vec::new();
    for i in 0..32u8 {
        frames.push(udp(
            [10, 0, 1, 2],
            [198, 51, 100, i + 1],
            1000 + u16::from(i),
            53,
        ));
        frames.push(udp(
            [10, 0, 1, 2],
            [198, 51, 7, i + 1],
            2000 + u16::from(i),
            53,
        ));
    }
    let routes = "\n[[route]]\nprefix = \"198.51.0.0/16\"\nvia = \"10.0.2.2\"\n";
    let mut live = Live::start("routes_live", routes, &frames);
    let mut runs = Runs::default();
    let mut other = BTreeMap::new();
    let mut see = |f: &[u8], runs: &mut Runs| {
        if dst_ip(f)[2] == 100 {
            runs.push(dst_mac(f));
        } else {
            *other.entry(dst_mac(f)).or_insert(0u64) += 1;
        }
    };
    // 2,000 frames of the /24 by `mac` since the last change.
    let mut wait_for = |live: &mut Live, runs: &mut Runs, mac: [u8; 6], what: &str| {
        live.out.until(what, LIMIT, |f| {
            see(f, runs);
            matches!(runs.0.last(), Some((m, n)) if *m == mac && *n >= 2000)
        });
    };
    let p = live.prefix.clone();
    wait_for(&mut live, &mut runs, A, "the /16's next hop");
    ctl_ok(&p, &["route", "add", "198.51.100.0/24", "via", "10.0.2.3"]);
    wait_for(&mut live, &mut runs, B, "the added /24's next hop");
    ctl_ok(&p, &["route", "add", "198.51.100.0/24", "via", "10.0.2.4"]);
    wait_for(&mut live, &mut runs, C, "the changed /24's next hop");
    ctl_ok(&p, &["route", "del", "198.51.100.0/24"]);
    wait_for(&mut live, &mut runs, A, "the /16 again after the delete");
    let stats = live.stop(|f| {
        if dst_ip(f)[2] == 100 {
            runs.push(dst_mac(f));
        }
    });

    let order: Vec<[u8; 6]> = runs.0.iter().map(|(m, _)| *m).collect();
    assert_eq!(
        order,
        vec![A, B, C, A],
        "the /24 left by each next hop in turn, never back: {:?}",
        runs.0
    );
    assert_eq!(
        other.keys().copied().collect::<Vec<_>>(),
        vec![A],
        "the /16 alone never changed"
    );
    assert_eq!(drops(&stats, "no_route"), 0, "{stats}");
    assert_eq!(
        stats["totals"]["drops"]
            .as_object()
            .map_or(0, |d| d.values().filter_map(|v| v.as_u64()).sum::<u64>()),
        drops(&stats, "shutdown_drain"),
        "no drops but the shutdown's: {stats}"
    );
}

#[test]
fn ecmp_spreads_a_thousand_flows_over_four_next_hops_and_keeps_each_on_one() {
    const FLOWS: u16 = 1000;
    let frames: Vec<Vec<u8>> = (0..FLOWS)
        .map(|i| udp([10, 0, 1, 2], [198, 51, 100, 1], 10_000 + i, 53))
        .collect();
    let routes = "\n[[route]]\nprefix = \"198.51.100.0/24\"\n\
                  via = [\"10.0.2.2\", \"10.0.2.3\", \"10.0.2.4\", \"10.0.2.5\"]\n";
    let mut live = Live::start("ecmp_spread", routes, &frames);
    // Each flow's next hops, over the first 5 rounds of the pcap.
    let mut by_flow: HashMap<u16, Vec<[u8; 6]>> = HashMap::new();
    let mut n = 0;
    live.out.until("5 rounds of 1,000 flows", LIMIT, |f| {
        let sport = u16::from_be_bytes([f[34], f[35]]);
        let macs = by_flow.entry(sport).or_default();
        if !macs.contains(&dst_mac(f)) {
            macs.push(dst_mac(f));
        }
        n += 1;
        n >= 5 * usize::from(FLOWS)
    });
    let stats = live.stop(|_| {});

    assert_eq!(
        by_flow.len(),
        usize::from(FLOWS),
        "every flow was forwarded"
    );
    let split: Vec<_> = by_flow.iter().filter(|(_, m)| m.len() > 1).collect();
    assert!(
        split.is_empty(),
        "flows on more than one next hop: {split:?}"
    );
    let mut per_hop: BTreeMap<[u8; 6], u32> = BTreeMap::new();
    for macs in by_flow.values() {
        *per_hop.entry(macs[0]).or_default() += 1;
    }
    assert_eq!(
        per_hop.keys().copied().collect::<Vec<_>>(),
        vec![A, B, C, D],
        "{per_hop:?}"
    );
    let said: Vec<String> = per_hop
        .iter()
        .map(|(m, n)| format!("{:02x}: {n}", m[5]))
        .collect();
    eprintln!("flows per next hop (last MAC byte): {}", said.join(", "));
    let even = u32::from(FLOWS) / 4;
    for (mac, flows) in &per_hop {
        assert!(
            flows.abs_diff(even) * 10 <= even,
            "{mac:02x?} has {flows} flows, not within 10 % of {even}: {per_hop:?}"
        );
    }
    assert_eq!(drops(&stats, "no_route"), 0, "{stats}");
}

#[test]
fn an_ecmp_next_hop_that_fails_resolution_leaves_the_group_until_it_answers() {
    const FLOWS: u16 = 64;
    let frames: Vec<Vec<u8>> = (0..FLOWS)
        .map(|i| udp([10, 0, 1, 2], [198, 51, 100, 1], 20_000 + i, 53))
        .collect();
    // 10.0.2.9 has no static entry and nobody answers its ARP.
    let routes = "\n[[route]]\nprefix = \"198.51.100.0/24\"\nvia = [\"10.0.2.2\", \"10.0.2.9\"]\n";
    let mut live = Live::start("ecmp_failover", routes, &frames);
    let sport = |f: &[u8]| u16::from_be_bytes([f[34], f[35]]);
    let is_ipv4 = |f: &[u8]| f[12..14] == [0x08, 0x00];
    let mut asked = 0;
    // Until its resolution failed: every flow leaves by 10.0.2.2.
    let mut on_a = std::collections::HashSet::new();
    live.out.until("every flow on 10.0.2.2", LIMIT, |f| {
        if !is_ipv4(f) {
            asked += usize::from(f[12..14] == [0x08, 0x06] && f[38..42] == [10, 0, 2, 9]);
            return false;
        }
        if dst_mac(f) == A {
            on_a.insert(sport(f));
        }
        on_a.len() == usize::from(FLOWS)
    });
    assert!(asked >= 1, "no ARP request for 10.0.2.9");
    // It answers (here: made static): back in the group, flows by both.
    ctl_ok(
        &live.prefix,
        &["neigh", "add", "10.0.2.9", "02:bb:00:00:00:23"],
    );
    let mut by_flow: HashMap<u16, [u8; 6]> = HashMap::new();
    let mut split = Vec::new();
    let mut n = 0;
    live.out.until("flows by both next hops again", LIMIT, |f| {
        if !is_ipv4(f) {
            return false;
        }
        if dst_mac(f) == B || !by_flow.is_empty() {
            if let Some(m) = by_flow.insert(sport(f), dst_mac(f)) {
                if m != dst_mac(f) {
                    split.push(sport(f));
                }
            }
            n += 1;
        }
        n >= 20 * usize::from(FLOWS)
    });
    let stats = live.stop(|_| {});
    assert!(split.is_empty(), "flows on two next hops: {split:?}");
    let on_b = by_flow.values().filter(|m| **m == B).count();
    assert!(
        on_b > 0 && on_b < usize::from(FLOWS),
        "{on_b} of {FLOWS} flows by 10.0.2.9"
    );
    assert!(
        stats["control"]["neigh_failed"].as_u64().unwrap_or(0) >= 1,
        "{}",
        stats["control"]
    );
    assert_eq!(drops(&stats, "no_route"), 0, "{stats}");
}

/// Every drop of `stats`, by reason, summed over the reasons.
fn all_drops(stats: &serde_json::Value) -> u64 {
    stats["totals"]["drops"]
        .as_object()
        .map_or(0, |d| d.values().filter_map(|v| v.as_u64()).sum::<u64>())
}

/// Drops for `reason` so far, over every port (`show stats`).
fn drops_now(prefix: &str, reason: &str) -> u64 {
    let s = ctl_ok(prefix, &["--json", "show", "stats"]);
    let v: serde_json::Value = serde_json::from_str(&s.stdout).expect("JSON answer");
    v["data"]["ports"]
        .as_array()
        .expect("ports")
        .iter()
        .map(|p| p["drops"][reason].as_u64().unwrap_or(0))
        .sum()
}

#[test]
fn an_ecmp_group_whose_every_member_failed_keeps_them_all() {
    const FLOWS: u16 = 64;
    let frames: Vec<Vec<u8>> = (0..FLOWS)
        .map(|i| udp([10, 0, 1, 2], [198, 51, 100, 1], 30_000 + i, 53))
        .collect();
    // Nobody answers ARP for either member.
    let routes_toml =
        "\n[[route]]\nprefix = \"198.51.100.0/24\"\nvia = [\"10.0.2.8\", \"10.0.2.9\"]\n";
    let mut live = Live::start("ecmp_all_failed", routes_toml, &frames);
    let hops = |live: &Live| -> Vec<(String, bool)> {
        let r = routes(&live.prefix);
        let route = r
            .as_array()
            .and_then(|a| a.iter().find(|r| r["prefix"] == "198.51.100.0/24"))
            .unwrap_or_else(|| panic!("the ECMP route is gone: {r}"));
        route["next_hops"]
            .as_array()
            .expect("next hops")
            .iter()
            .map(|h| {
                (
                    h["gateway"].as_str().unwrap_or("-").to_string(),
                    h["up"] == true,
                )
            })
            .collect()
    };
    // Both fail resolution.
    let start = Instant::now();
    loop {
        let h = hops(&live);
        if h.iter().all(|(_, up)| !up) {
            break;
        }
        assert!(start.elapsed() < LIMIT, "both members failed: {h:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    // The group keeps them both: the route still names both, and its
    // packets still go to their resolution, which asks each of them again
    // and drops what waited as `neigh_failed`.
    let failed_before = drops_now(&live.prefix, "neigh_failed");
    let mut asked = HashSet::new();
    live.out.until("ARP requests for both members", LIMIT, |f| {
        if f[12..14] == [0x08, 0x06] && f[20..22] == [0, 1] {
            asked.insert([f[38], f[39], f[40], f[41]]);
        }
        asked.contains(&[10, 0, 2, 8]) && asked.contains(&[10, 0, 2, 9])
    });
    let start = Instant::now();
    while drops_now(&live.prefix, "neigh_failed") < failed_before + u64::from(FLOWS) {
        assert!(start.elapsed() < LIMIT, "no more neigh_failed drops");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        hops(&live),
        vec![
            ("10.0.2.8".to_string(), false),
            ("10.0.2.9".to_string(), false)
        ]
    );
    let mut routed = 0;
    let stats = live.stop(|f| routed += usize::from(f[12..14] == [0x08, 0x00]));
    assert_eq!(routed, 0, "a packet left by a member nobody answered for");
    assert_eq!(drops(&stats, "no_route"), 0, "{stats}");
    assert!(drops(&stats, "neigh_failed") >= u64::from(FLOWS), "{stats}");
    assert_eq!(stats["totals"]["balanced"], true, "{stats}");
    assert_eq!(stats["mbufs"]["in_use_at_exit"], 0, "{stats}");
}

/// Long route `i`: a /25 to /32 (by `i`) at .128 of the `i`th /24 of
/// 100.64.0.0/10; its first address.
fn long_route(i: usize) -> (String, [u8; 4]) {
    let a = [100, 64 + (i >> 8) as u8, (i & 0xff) as u8, 128];
    let len = 25 + i % 8;
    (format!("{}.{}.{}.{}/{len}", a[0], a[1], a[2], a[3]), a)
}

#[test]
fn long_prefixes_churned_under_traffic_reuse_tbl8_groups_and_next_hop_slots() {
    // Each round adds ROUTES routes longer than /24 in as many /24s (a tbl8
    // group each), each by an ECMP group of its own (a next-hop slot and a
    // member list), then deletes them all. Over the rounds that is more than
    // the LPM's 1,024 tbl8 groups, the 1,024 member lists and the 4,096
    // next-hop slots: without reuse after the grace period a reload fails.
    const ROUTES: usize = 700;
    const ROUNDS: usize = 6;
    const PROBED: usize = 32;
    let covering = "\n[[route]]\nprefix = \"100.64.0.0/10\"\nvia = \"10.0.2.2\"\n";
    let mut long = String::from(covering);
    for i in 0..ROUTES {
        let (p, _) = long_route(i);
        long.push_str(&format!(
            "\n[[route]]\nprefix = \"{p}\"\nvia = [\"10.0.2.3\", \"10.0.2.4\"]\n"
        ));
    }
    // Traffic into the first long routes (every length) and into the
    // covering route only: every address is routed by every table.
    let mut frames = Vec::new();
    for i in 0..PROBED {
        let (_, a) = long_route(i);
        frames.push(udp([10, 0, 1, 2], a, 1000 + i as u16, 53));
        frames.push(udp(
            [10, 0, 1, 2],
            [100, 100, i as u8, 1],
            2000 + i as u16,
            53,
        ));
    }
    let mut live = Live::start("tbl8_churn", covering, &frames);
    let probed: HashSet<[u8; 4]> = (0..PROBED).map(|i| long_route(i).1).collect();
    let mut wrong = Vec::new();
    let check = |f: &[u8], wrong: &mut Vec<String>| {
        let (ip, mac) = (dst_ip(f), dst_mac(f));
        let fine = if probed.contains(&ip) {
            [A, B, C].contains(&mac)
        } else {
            mac == A
        };
        if !fine {
            wrong.push(format!("{ip:?} by {mac:02x?}"));
        }
        (ip, mac)
    };
    // Each probed address leaves by `by`'s MACs, since the last change.
    let wait_all = |live: &mut Live, wrong: &mut Vec<String>, by: &[[u8; 6]], what: &str| {
        let mut seen = HashSet::new();
        live.out.until(what, LIMIT, |f| {
            let (ip, mac) = check(f, wrong);
            if probed.contains(&ip) && by.contains(&mac) {
                seen.insert(ip);
            }
            seen.len() == PROBED
        });
    };
    for round in 1..=ROUNDS {
        live.reload(&long);
        wait_all(
            &mut live,
            &mut wrong,
            &[B, C],
            &format!("round {round}: the long routes"),
        );
        let r = routes(&live.prefix);
        assert_eq!(
            gateways(&r, &long_route(ROUTES - 1).0).map(|g| g.len()),
            Some(2)
        );
        live.reload(covering);
        wait_all(
            &mut live,
            &mut wrong,
            &[A],
            &format!("round {round}: the covering route"),
        );
        assert_eq!(gateways(&routes(&live.prefix), &long_route(0).0), None);
    }
    let stats = live.stop(|f| {
        check(f, &mut wrong);
    });
    assert!(wrong.is_empty(), "frames by the wrong next hop: {wrong:?}");
    assert_eq!(drops(&stats, "no_route"), 0, "{stats}");
    assert_eq!(
        all_drops(&stats),
        drops(&stats, "shutdown_drain"),
        "no drops but the shutdown's: {stats}"
    );
    assert_eq!(stats["totals"]["balanced"], true, "{stats}");
    assert_eq!(stats["mbufs"]["in_use_at_exit"], 0, "{stats}");
}
