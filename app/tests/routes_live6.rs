//! IPv6 routes changed while traffic runs (the IPv6 twin of
//! `routes_live`): a pcap of IPv6 datagrams replayed forever into port 0,
//! port 1's output read from a FIFO as it leaves. Next hops are static
//! neighbours with their own MACs, so each frame says which next hop it
//! left by. Round after round a reload installs hundreds of /64s (and the
//! default route `::/0`) in one batch and the next deletes them all (one
//! swap each); `fastpath ctl` adds and deletes single routes between. A
//! prefix no change touches (a /48) is never dropped and never leaves by
//! another next hop; the /64s' frames leave by their routes while they are
//! installed and by the covering /40 after, and nothing is dropped at all
//! but what the shutdown drains.

mod common;
use common::ctl::{ctl_ok, fifo, gateways, prefix, routes, Frames};
use common::frames::{HOST_A_MAC, PCAP0_MAC};
use common::watch::Watched;
use common::*;
use std::collections::HashSet;
use std::net::Ipv6Addr;
use std::time::Duration;

const LIMIT: Duration = Duration::from_secs(30);

const A: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x22];
const B: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x23];
const C: [u8; 6] = [0x02, 0xbb, 0, 0, 0, 0x24];

/// Ports, neighbours, the /48 no change touches and the covering /40.
const BASE: &str = r#"
[[port]]
device = "net_pcap0"
address = "10.0.1.1/24"
ipv6 = ["2001:db8:1::1/64"]

[[port]]
device = "net_pcap1"
address = "10.0.2.1/24"
ipv6 = ["2001:db8:2::1/64"]

[[neighbour]]
address = "2001:db8:2::2"
mac = "02:bb:00:00:00:22"

[[neighbour]]
address = "2001:db8:2::3"
mac = "02:bb:00:00:00:23"

[[neighbour]]
address = "2001:db8:2::4"
mac = "02:bb:00:00:00:24"

[[route]]
prefix = "2001:db8:100::/48"
via = "2001:db8:2::2"

[[route]]
prefix = "2001:db8:200::/40"
via = "2001:db8:2::2"
"#;

/// /64s installed and deleted each round.
const ROUTES: usize = 600;
/// Of which the first PROBED get traffic.
const PROBED: usize = 16;

/// Long route `i`: a /64 under the /40, spread over its /48s; its ::1.
fn long_route(i: usize) -> (String, Ipv6Addr) {
    let net = format!("2001:db8:2{:02x}:{:x}::", i % 256, i / 256 * 7 + 1);
    let a: Ipv6Addr = format!("{net}1").parse().unwrap();
    (format!("{net}/64"), a)
}

/// A UDP datagram from host A to `dst` (4 bytes of data, checksum 0).
fn udp6(dst: Ipv6Addr, sport: u16) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend(PCAP0_MAC);
    f.extend(HOST_A_MAC);
    f.extend([0x86, 0xdd, 0x60, 0, 0, 0, 0, 12, 17, 64]);
    f.extend("2001:db8:1::2".parse::<Ipv6Addr>().unwrap().octets());
    f.extend(dst.octets());
    f.extend(sport.to_be_bytes());
    f.extend([0, 53, 0, 12, 0, 0, 1, 2, 3, 4]);
    f
}

/// The destination and MAC of a forwarded IPv6 UDP frame (None for others:
/// the control plane's own frames).
fn seen(f: &[u8]) -> Option<(Ipv6Addr, [u8; 6])> {
    if f.len() < 54 || f[12..14] != [0x86, 0xdd] || f[20] != 17 {
        return None;
    }
    let dst: [u8; 16] = f[38..54].try_into().unwrap();
    Some((Ipv6Addr::from(dst), f[..6].try_into().unwrap()))
}

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
        std::fs::write(p("router.toml"), format!("{BASE}{routes}")).unwrap();
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

    /// Run `job` (ctl commands) on a thread while the output is read and
    /// shown to `watch`: a worker blocked on a full FIFO would hold up the
    /// grace period a batch waits for.
    fn during<T: Send + 'static>(
        &mut self,
        watch: &mut Watch,
        what: &str,
        job: impl FnOnce(&str, &std::path::Path) -> T + Send + 'static,
    ) -> T {
        let (prefix, dir) = (self.prefix.clone(), self.dir.path().to_path_buf());
        let h = std::thread::spawn(move || job(&prefix, &dir));
        self.out.until(what, LIMIT, |f| {
            watch.see(f);
            h.is_finished()
        });
        h.join().expect("the ctl thread")
    }

    /// Each probed /64 address leaves by `by`'s MACs, since now.
    fn wait_all(&mut self, watch: &mut Watch, by: &[[u8; 6]], what: &str) {
        let mut got = HashSet::new();
        self.out.until(what, LIMIT, |f| {
            if let Some((dst, mac)) = watch.see(f) {
                if watch.probed.contains(&dst) && by.contains(&mac) {
                    got.insert(dst);
                }
            }
            got.len() == PROBED
        });
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

/// Replace the config's extra routes with `routes` and reload it: what
/// fastpath said.
fn reload(prefix: &str, dir: &std::path::Path, routes: &str) -> String {
    std::fs::write(dir.join("router.toml"), format!("{BASE}{routes}")).unwrap();
    ctl_ok(prefix, &["reload"]).stdout
}

/// What left port 1: frames by a wrong next hop, and the /48's count.
struct Watch {
    steady: HashSet<Ipv6Addr>,
    probed: HashSet<Ipv6Addr>,
    wrong: Vec<String>,
    steady_seen: u64,
}

impl Watch {
    /// The /48's frames leave by A, the /64s' by A, B or C.
    fn see(&mut self, f: &[u8]) -> Option<(Ipv6Addr, [u8; 6])> {
        let (dst, mac) = seen(f)?;
        let fine = if self.steady.contains(&dst) {
            self.steady_seen += 1;
            mac == A
        } else {
            self.probed.contains(&dst) && [A, B, C].contains(&mac)
        };
        if !fine {
            self.wrong.push(format!("{dst} by {mac:02x?}"));
        }
        Some((dst, mac))
    }
}

fn all_drops(stats: &serde_json::Value) -> u64 {
    stats["totals"]["drops"]
        .as_object()
        .map_or(0, |d| d.values().filter_map(|v| v.as_u64()).sum())
}

#[test]
fn ipv6_batches_under_traffic_never_drop_a_prefix_they_do_not_touch() {
    const ROUNDS: usize = 5;
    let mut long = String::from("\n[[route]]\nprefix = \"::/0\"\nvia = \"2001:db8:2::4\"\n");
    for i in 0..ROUTES {
        let (p, _) = long_route(i);
        let via = if i % 2 == 0 {
            "2001:db8:2::3"
        } else {
            "2001:db8:2::4"
        };
        long.push_str(&format!("\n[[route]]\nprefix = \"{p}\"\nvia = \"{via}\"\n"));
    }
    let steady: Vec<Ipv6Addr> = (0..PROBED)
        .map(|i| format!("2001:db8:100:{i:x}::9").parse().unwrap())
        .collect();
    let probed: HashSet<Ipv6Addr> = (0..PROBED).map(|i| long_route(i).1).collect();
    let mut frames = Vec::new();
    for (i, &to) in steady.iter().enumerate() {
        frames.push(udp6(to, 1000 + i as u16));
        frames.push(udp6(long_route(i).1, 2000 + i as u16));
    }
    let mut watch = Watch {
        steady: steady.into_iter().collect(),
        probed,
        wrong: Vec::new(),
        steady_seen: 0,
    };
    let mut live = Live::start("routes_live6", "", &frames);
    live.wait_all(&mut watch, &[A], "the covering /40");
    let long = std::sync::Arc::new(long);
    for round in 1..=ROUNDS {
        let l = long.clone();
        let said = live.during(&mut watch, "a reload", move |p, d| reload(p, d, &l));
        assert!(
            said.contains(&format!(
                "{} added or changed, 0 deleted (one swap)",
                ROUTES + 1
            )),
            "{said}"
        );
        live.wait_all(&mut watch, &[B, C], &format!("round {round}: the /64s"));
        let r = live.during(&mut watch, "show routes", |p, _| routes(p));
        assert_eq!(
            gateways(&r, &long_route(ROUTES - 1).0),
            Some(vec!["2001:db8:2::4".into()])
        );
        assert_eq!(gateways(&r, "::/0"), Some(vec!["2001:db8:2::4".into()]));
        // Single changes by ctl between the batches, of other prefixes.
        live.during(&mut watch, "ctl add and del", |p, _| {
            ctl_ok(
                p,
                &["route", "add", "2001:db8:300::/48", "via", "2001:db8:2::3"],
            );
            ctl_ok(p, &["route", "del", "2001:db8:300::/48"]);
        });
        let said = live.during(&mut watch, "a reload", |p, d| reload(p, d, ""));
        assert!(
            said.contains(&format!(
                "0 added or changed, {} deleted (one swap)",
                ROUTES + 1
            )),
            "{said}"
        );
        live.wait_all(&mut watch, &[A], &format!("round {round}: the /40 again"));
        let r = live.during(&mut watch, "show routes", |p, _| routes(p));
        assert_eq!(gateways(&r, &long_route(0).0), None);
        assert_eq!(gateways(&r, "::/0"), None);
    }
    let stats = live.stop(|f| {
        watch.see(f);
    });
    let Watch {
        wrong, steady_seen, ..
    } = watch;
    assert!(wrong.is_empty(), "frames by the wrong next hop: {wrong:?}");
    assert!(steady_seen > 1000, "the /48's frames: {steady_seen}");
    assert_eq!(
        all_drops(&stats),
        stats["totals"]["drops"]["shutdown_drain"]
            .as_u64()
            .unwrap_or(0),
        "no drops but the shutdown's: {stats}"
    );
    assert_eq!(stats["totals"]["balanced"], true, "{stats}");
    assert_eq!(stats["mbufs"]["in_use_at_exit"], 0, "{stats}");
}
