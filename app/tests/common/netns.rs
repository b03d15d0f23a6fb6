//! Two network namespaces, each a kernel host on a veth pair whose other end
//! stays in the root namespace for fastpath's `net_af_packet` to drive:
//!
//! ```text
//!  netns A: 10.0.1.2/24 via 10.0.1.1      netns B: 10.0.2.2/24 via 10.0.2.1
//!     veth a-host  <->  a-router  [fastpath]  b-router  <->  b-host veth
//! ```
//!
//! Names carry a per-test suffix so tests run in parallel. Checksum and
//! segmentation offloads are off on the veths: af_packet would otherwise see
//! partial checksums and 64 KiB GSO frames that no wire ever carries.
//! Everything is removed on drop.

use std::process::{Command, Output};

/// The two hosts of the topology.
pub struct Topology {
    pub suffix: String,
}

/// Fail loudly when `tool` is not on the PATH.
pub fn need(tool: &str) {
    let found = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false);
    assert!(
        found,
        "this test needs `{tool}` (scripts/quickstart test installs it: iproute2 (ip, ss), \
         ethtool, iputils-ping, netcat-openbsd, coreutils (timeout))"
    );
}

/// Run a command, failing the test with its output when it fails.
pub fn sh(args: &[&str]) -> Output {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

impl Topology {
    /// Create the namespaces and veths. Fails loudly without root or tools.
    pub fn new(tag: &str) -> Topology {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        assert!(
            root,
            "this test needs root (network namespaces, veth, af_packet)"
        );
        for t in ["ip", "ethtool", "ping", "nc"] {
            need(t);
        }
        // Interface names are at most 15 bytes: tag (<= 4) + pid mod 10^5.
        let suffix = format!("{tag}{}", std::process::id() % 100_000);
        let topo = Topology { suffix };
        topo.cleanup();
        for (side, net) in [("a", 1), ("b", 2)] {
            let ns = topo.ns(side);
            let host = topo.host_if(side);
            let router = topo.router_if(side);
            sh(&["ip", "netns", "add", &ns]);
            sh(&[
                "ip", "link", "add", &host, "type", "veth", "peer", "name", &router,
            ]);
            sh(&["ip", "link", "set", &host, "netns", &ns]);
            let addr = format!("10.0.{net}.2/24");
            let gw = format!("10.0.{net}.1");
            sh(&["ip", "-n", &ns, "addr", "add", &addr, "dev", &host]);
            sh(&["ip", "-n", &ns, "link", "set", &host, "up"]);
            sh(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
            sh(&["ip", "-n", &ns, "route", "add", "default", "via", &gw]);
            sh(&["ip", "link", "set", &router, "up"]);
            let off = [
                "tx", "off", "rx", "off", "tso", "off", "gso", "off", "gro", "off",
            ];
            let mut cmd = vec!["ip", "netns", "exec", &ns, "ethtool", "-K", &host];
            cmd.extend(off);
            sh(&cmd);
            let mut cmd = vec!["ethtool", "-K", &router];
            cmd.extend(off);
            sh(&cmd);
        }
        topo
    }

    /// As [`Topology::new`], with the router ends of the veths in a
    /// namespace of their own ([`Topology::router_ns`]), where fastpath
    /// runs: what it creates in the kernel (its ports' kernel interfaces)
    /// stays there.
    #[allow(dead_code)] // not every test that includes this file uses it
    pub fn with_router_ns(tag: &str) -> Topology {
        let topo = Topology::new(tag);
        let ns = topo.router_ns();
        sh(&["ip", "netns", "add", &ns]);
        sh(&["ip", "-n", &ns, "link", "set", "lo", "up"]);
        for side in ["a", "b"] {
            let router = topo.router_if(side);
            sh(&["ip", "link", "set", &router, "netns", &ns]);
            // The veth stands for a NIC that DPDK owns: the namespace's own
            // stack must not take what arrives on it (fastpath's kernel
            // interfaces give that namespace the ports' addresses, which
            // Linux would otherwise accept on any interface): no IPv6 on
            // it, IPv4 from the hosts fails the reverse-path check (their
            // subnets are routed by the kernel interfaces), no ARP replies.
            for (key, value) in [
                ("net.ipv6.conf.{}.disable_ipv6", "1"),
                ("net.ipv4.conf.{}.rp_filter", "1"),
                ("net.ipv4.conf.{}.arp_ignore", "8"),
            ] {
                let set = format!("{}={value}", key.replace("{}", &router));
                sh(&["ip", "netns", "exec", &ns, "sysctl", "-q", "-w", &set]);
            }
            sh(&["ip", "-n", &ns, "link", "set", &router, "up"]);
        }
        topo
    }

    /// The EAL `--vdev`s of fastpath's two ports on the router ends
    /// (net_af_packet0 on side a's, net_af_packet1 on side b's).
    #[allow(dead_code)] // not every test that includes this file uses it
    pub fn af_packet_vdevs(&self) -> [String; 2] {
        ["a", "b"].map(|side| {
            let port = if side == "a" { 0 } else { 1 };
            format!(
                "net_af_packet{port},iface={},framecnt=4096",
                self.router_if(side)
            )
        })
    }

    /// The router's namespace of [`Topology::with_router_ns`].
    #[allow(dead_code)] // not every test that includes this file uses it
    pub fn router_ns(&self) -> String {
        format!("fpr{}", self.suffix)
    }

    /// Namespace of side "a" or "b".
    pub fn ns(&self, side: &str) -> String {
        format!("fp{side}{}", self.suffix)
    }

    /// The host's veth (inside its namespace).
    pub fn host_if(&self, side: &str) -> String {
        format!("{side}h{}", self.suffix)
    }

    /// The veth fastpath drives (root namespace).
    pub fn router_if(&self, side: &str) -> String {
        format!("{side}r{}", self.suffix)
    }

    /// Run `args` inside side's namespace; returns the output whatever the status.
    pub fn exec(&self, side: &str, args: &[&str]) -> Output {
        let ns = self.ns(side);
        Command::new("ip")
            .args(["netns", "exec", &ns])
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("ip netns exec {ns} {args:?}: {e}"))
    }

    /// `ping` from side to `dst`; returns (success, output).
    #[allow(dead_code)] // not every test that includes this file uses it
    pub fn ping(&self, side: &str, dst: &str, extra: &[&str]) -> (bool, String) {
        let mut args = vec!["ping", "-n", "-c", "3", "-i", "0.2", "-W", "2"];
        args.extend(extra);
        args.push(dst);
        let out = self.exec(side, &args);
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.success(), text)
    }

    fn cleanup(&self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.router_ns()])
            .output();
        for side in ["a", "b"] {
            let _ = Command::new("ip")
                .args(["netns", "del", &self.ns(side)])
                .output();
            let _ = Command::new("ip")
                .args(["link", "del", &self.router_if(side)])
                .output();
        }
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        self.cleanup();
    }
}
