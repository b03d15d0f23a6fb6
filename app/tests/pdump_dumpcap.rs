//! The stock `dpdk-dumpcap` (Debian's `dpdk` package) capturing the ports of
//! a running fastpath, which called `rte_pdump_init` at start.
//!
//! dumpcap is a DPDK secondary process: it must map the primary's memory,
//! which a `--no-huge` primary does not share (dumpcap then stops with
//! "Cannot get hugepage information"). So this test, unlike the others,
//! runs fastpath on hugepages: it reserves 2 MiB pages if too few are free
//! and mounts a hugetlbfs of its own (root), and puts both back at the end.
//!
//! Checked:
//! - dumpcap attaches to fastpath by its `--file-prefix`, captures the
//!   packets port 0 receives (`-c N`) and exits 0;
//! - the frames in its pcapng file are the ones fastpath was sent;
//! - fastpath goes on routing and stops cleanly afterwards.

mod common;
use common::frames::udp;
use common::watch::Watched;
use common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// 2 MiB pages this test needs free (fastpath's `-m 200` and headroom).
const PAGES: u64 = 128;
const NR_HUGEPAGES: &str = "/proc/sys/vm/nr_hugepages";

/// Hugepages for one test: more reserved if needed, a private hugetlbfs
/// mount; both undone when dropped.
struct Hugepages {
    mount: PathBuf,
    reserved_before: Option<u64>,
    _dir: tempfile::TempDir,
}

fn meminfo(field: &str) -> u64 {
    let text = std::fs::read_to_string("/proc/meminfo").unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

impl Hugepages {
    fn get() -> Hugepages {
        let free = meminfo("HugePages_Free:");
        let mut reserved_before = None;
        if free < PAGES {
            let total = meminfo("HugePages_Total:");
            std::fs::write(NR_HUGEPAGES, (total + PAGES - free).to_string())
                .expect("reserve 2 MiB hugepages (needs root)");
            reserved_before = Some(total);
            assert!(
                meminfo("HugePages_Free:") >= PAGES,
                "the kernel gave fewer than {PAGES} free hugepages"
            );
        }
        let dir = tempfile::tempdir().unwrap();
        let mount = dir.path().join("huge");
        std::fs::create_dir(&mount).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "hugetlbfs", "-o", "pagesize=2M", "nodev"])
            .arg(&mount)
            .status()
            .expect("mount runs");
        assert!(ok.success(), "mount a hugetlbfs (needs root)");
        Hugepages {
            mount,
            reserved_before,
            _dir: dir,
        }
    }
}

impl Drop for Hugepages {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.mount).status();
        if let Some(n) = self.reserved_before {
            let _ = std::fs::write(NR_HUGEPAGES, n.to_string());
        }
    }
}

const CONFIG: &str = r#"
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
"#;

/// The frames of dumpcap's pcapng `file`, through `editcap` (Wireshark's,
/// beside tshark) to pcap: DPDK's pcapng writer uses options a strict
/// reader refuses.
fn read_pcapng(file: &Path) -> Vec<Vec<u8>> {
    let pcap = file.with_extension("pcap");
    let st = Command::new("editcap")
        .args(["-F", "pcap"])
        .arg(file)
        .arg(&pcap)
        .status()
        .expect("editcap runs (apt-get install -y --no-install-recommends tshark)");
    assert!(st.success(), "editcap could not read {}", file.display());
    fastpath::pcap::read(std::fs::File::open(&pcap).unwrap()).unwrap()
}

/// Kills a still running fastpath when a failed assertion unwinds, so that
/// its hugepages can be given back.
struct KillOnDrop(Option<u32>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(pid) = self.0 {
            let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
            std::thread::sleep(Duration::from_millis(500));
        }
    }
}

#[test]
fn dpdk_dumpcap_captures_a_running_fastpath() {
    assert!(
        Command::new("dpdk-dumpcap")
            .arg("--version")
            .output()
            .is_ok(),
        "dpdk-dumpcap missing: apt-get install dpdk"
    );
    let huge = Hugepages::get();
    let dir = tempfile::tempdir().unwrap();
    let p = |n: &str| dir.path().join(n);
    std::fs::write(p("router.toml"), CONFIG).unwrap();
    let frame = udp([10, 0, 1, 2], [198, 51, 100, 9], 1000, 2000);
    write_pcap(&p("in.pcap"), &vec![frame.clone(); 64]);
    let prefix = format!("fpt-dumpcap-{}", std::process::id());
    runtime_dirs::track(&prefix);
    let mut cmd = fastpath();
    cmd.args(["-l", "0-1", "-m", "200", "--no-pci", "--huge-dir"])
        .arg(&huge.mount)
        .args(["--file-prefix", &prefix, "--vdev"])
        .arg(format!(
            "net_pcap0,rx_pcap={},infinite_rx=1",
            p("in.pcap").display()
        ))
        .args(["--vdev", "net_null0", "--", "--config"])
        .arg(p("router.toml"))
        .args(["--mbufs", "8191", "--duration", "60"]);
    let mut fp = Watched::spawn(cmd);
    let mut guard = KillOnDrop(Some(fp.id()));
    fp.wait_stderr("fastpath: routing", Duration::from_secs(30));

    let out = p("dump.pcapng");
    let dump = Command::new("timeout")
        .args(["30", "dpdk-dumpcap", "--file-prefix", &prefix])
        .args(["-i", "0", "-c", "10", "-w"])
        .arg(&out)
        .output()
        .expect("dpdk-dumpcap runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&dump.stdout),
        String::from_utf8_lossy(&dump.stderr)
    );
    assert!(dump.status.success(), "dpdk-dumpcap failed:\n{said}");
    let frames = read_pcapng(&out);
    assert!(frames.len() >= 10, "{} frames\n{said}", frames.len());
    assert!(frames.iter().all(|f| *f == frame), "{said}");

    fp.signal("-INT");
    let r = fp.finish(Duration::from_secs(30));
    guard.0 = None;
    assert_success(&r);
    assert!(r.stdout.contains("balanced"), "{}", r.stdout);
    drop(huge);
}
