//! `fastpath doctor` on fake /sys and /proc trees: one host that passes, and
//! hosts that each show one problem, asserting the exit status and the finding.
//! Last, doctor on this host itself with vdevs only.

mod common;
use common::*;
use std::path::Path;
use std::time::Duration;

/// A fake root tree in its own tempdir.
struct Fake {
    dir: tempfile::TempDir,
}

impl Fake {
    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn put(&self, p: &str, text: &str) {
        let f = self.root().join(p);
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, text).unwrap();
    }

    fn rm(&self, p: &str) {
        let f = self.root().join(p);
        if f.is_dir() {
            std::fs::remove_dir_all(f).unwrap();
        } else {
            std::fs::remove_file(f).unwrap();
        }
    }

    /// Binds a fake PCI device to `driver` (a `driver` symlink, as sysfs has it).
    fn bind(&self, addr: &str, driver: &str) {
        let link = self
            .root()
            .join(format!("sys/bus/pci/devices/{addr}/driver"));
        let _ = std::fs::remove_file(&link);
        std::fs::create_dir_all(self.root().join(format!("sys/bus/pci/drivers/{driver}"))).unwrap();
        std::os::unix::fs::symlink(format!("../../../bus/pci/drivers/{driver}"), link).unwrap();
    }

    /// An 82599 NIC (8086:10fb, net_ixgbe's) at `addr` on NUMA node `node`, bound to vfio-pci.
    fn nic(&self, addr: &str, node: u32) {
        let d = format!("sys/bus/pci/devices/{addr}");
        self.put(&format!("{d}/vendor"), "0x8086\n");
        self.put(&format!("{d}/device"), "0x10fb\n");
        self.put(&format!("{d}/numa_node"), &format!("{node}\n"));
        self.bind(addr, "vfio-pci");
    }
}

/// A host where everything is in order: 2 MiB hugepages reserved and
/// mounted, IOMMU on, vfio-pci loaded, 0000:01:00.0 bound to it, CPUs 0-3
/// on node 0, each its own core, 1-3 isolated.
fn passing(test: &str) -> Fake {
    let dir = tempfile::Builder::new()
        .prefix(&format!("doctor-{test}-"))
        .tempdir()
        .unwrap();
    let f = Fake { dir };
    f.put(
        "proc/cmdline",
        "quiet intel_iommu=on iommu=pt isolcpus=1-3 nohz_full=1-3\n",
    );
    f.put(
        "proc/mounts",
        "hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n",
    );
    f.put(
        "proc/meminfo",
        "MemTotal: 8000000 kB\nMemAvailable: 6000000 kB\nHugepagesize: 2048 kB\n",
    );
    for (dir, nr) in [
        ("sys/kernel/mm/hugepages/hugepages-2048kB", 1024),
        ("sys/kernel/mm/hugepages/hugepages-1048576kB", 0),
        (
            "sys/devices/system/node/node0/hugepages/hugepages-2048kB",
            1024,
        ),
    ] {
        f.put(&format!("{dir}/nr_hugepages"), &format!("{nr}\n"));
        f.put(&format!("{dir}/free_hugepages"), &format!("{nr}\n"));
    }
    f.put("sys/devices/system/node/node0/cpulist", "0-3\n");
    f.put("sys/devices/system/cpu/online", "0-3\n");
    f.put("sys/devices/system/cpu/isolated", "1-3\n");
    f.put("sys/devices/system/cpu/nohz_full", "1-3\n");
    for c in 0..4 {
        f.put(
            &format!("sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list"),
            &format!("{c}\n"),
        );
    }
    f.put("sys/kernel/iommu_groups/12/type", "DMA\n");
    f.put("sys/module/vfio_pci/refcnt", "1\n");
    f.nic("0000:01:00.0", 0);
    f
}

const ARGS: &[&str] = &["-l", "0-1", "-a", "0000:01:00.0", "-m", "1024", "-n", "4"];

/// `fastpath doctor ARGS -- --root ROOT APP`.
fn doctor(fake: &Fake, args: &[&str], app: &[&str]) -> Run {
    let mut cmd = fastpath();
    cmd.arg("doctor")
        .args(args)
        .arg("--")
        .arg("--root")
        .arg(fake.root())
        .args(app);
    run(cmd, Duration::from_secs(60))
}

/// The line of `severity` whose text contains `needle`, and the fix under it.
fn finding<'a>(r: &'a Run, severity: &str, needle: &str) -> (&'a str, &'a str) {
    let lines: Vec<&str> = r.stdout.lines().collect();
    let i = lines
        .iter()
        .position(|l| l.starts_with(severity) && l.contains(needle))
        .unwrap_or_else(|| {
            panic!(
                "no `{severity}` line with {needle:?}:\n{}\n{}",
                r.stdout, r.stderr
            )
        });
    let fix = lines
        .get(i + 1)
        .filter(|l| l.trim_start().starts_with("fix:"))
        .copied();
    (lines[i], fix.unwrap_or(""))
}

fn assert_exit(r: &Run, code: i32) {
    assert_eq!(
        r.status.code(),
        Some(code),
        "stdout:\n{}\nstderr:\n{}",
        r.stdout,
        r.stderr
    );
}

#[test]
fn doctor_passing_host_has_nothing_to_say() {
    let f = passing("pass");
    let r = doctor(&f, ARGS, &[]);
    assert_exit(&r, 0);
    assert!(
        !r.stdout.contains("\nwarn") && !r.stdout.contains("\nfail"),
        "{}",
        r.stdout
    );
    finding(
        &r,
        "ok",
        "2 MiB pages: 1024 reserved, 1024 free (node0 1024 free), mounted at /dev/hugepages",
    );
    finding(
        &r,
        "ok",
        "0000:01:00.0 (-a 0000:01:00.0) 8086:10fb on NUMA node 0: bound to vfio-pci",
    );
    finding(&r, "ok", "0000:01:00.0 (8086:10fb) is claimed by net_ixgbe");
    finding(&r, "ok", "worker lcore 1 on isolated CPU 1, nohz_full");
    assert!(
        r.stdout
            .ends_with("0 fail, 0 warn, 11 ok: nothing blocks a start\n"),
        "{}",
        r.stdout
    );
}

#[test]
fn doctor_no_hugepages_reserved() {
    let f = passing("nohuge");
    f.put(
        "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
        "0\n",
    );
    f.put(
        "sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages",
        "0\n",
    );
    let r = doctor(&f, ARGS, &[]);
    assert_exit(&r, 1);
    let (_, fix) = finding(&r, "fail", "no hugepages reserved");
    assert!(
        fix.contains("echo 1024 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"),
        "{fix}"
    );
}

#[test]
fn doctor_no_huge_makes_missing_hugepages_fine() {
    let f = passing("nohuge-flag");
    f.put(
        "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
        "0\n",
    );
    f.rm("proc/mounts");
    let r = doctor(&f, &["-l", "0-1", "--no-huge", "-m", "512"], &[]);
    assert_exit(&r, 0);
    finding(&r, "ok", "--no-huge: EAL takes ordinary memory");
    assert!(!r.stdout.contains("reserved"), "{}", r.stdout);
}

#[test]
fn doctor_hugepages_not_mounted() {
    let f = passing("unmounted");
    f.put("proc/mounts", "proc /proc proc rw 0 0\n");
    let r = doctor(&f, ARGS, &[]);
    assert_exit(&r, 1);
    let (_, fix) = finding(
        &r,
        "fail",
        "2 MiB pages: 1024 reserved, 1024 free (node0 1024 free), but no hugetlbfs mount",
    );
    assert!(
        fix.contains("mount -t hugetlbfs -o pagesize=2M nodev /dev/hugepages"),
        "{fix}"
    );
}

#[test]
fn doctor_not_enough_free_memory() {
    let f = passing("short");
    f.put(
        "sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages",
        "200\n",
    );
    let r = doctor(&f, &["-l", "0-1", "-m", "1024"], &[]);
    assert_exit(&r, 1);
    let (_, fix) = finding(
        &r,
        "fail",
        "-m 1024 asks for 1024 MiB of hugepages, but only 400 MiB are free",
    );
    assert!(
        fix.contains("echo 1336 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages"),
        "{fix}"
    );
}

#[test]
fn doctor_device_on_kernel_driver() {
    let f = passing("ixgbe");
    f.bind("0000:01:00.0", "ixgbe");
    f.put(
        "sys/bus/pci/devices/0000:01:00.0/net/enp1s0f0/ifindex",
        "3\n",
    );
    let r = doctor(&f, ARGS, &[]);
    assert_exit(&r, 1);
    let (_, fix) = finding(&r, "fail", "0000:01:00.0 (-a 0000:01:00.0) 8086:10fb on NUMA node 0: bound to kernel driver ixgbe (interface enp1s0f0)");
    assert!(fix.contains("ip link set enp1s0f0 down && modprobe vfio-pci && dpdk-devbind.py --bind=vfio-pci 0000:01:00.0"), "{fix}");
}

#[test]
fn doctor_no_iommu() {
    let f = passing("noiommu");
    f.rm("sys/kernel/iommu_groups/12");
    f.put("proc/cmdline", "quiet isolcpus=1-3\n");
    let r = doctor(&f, ARGS, &[]);
    assert_exit(&r, 1);
    let (line, fix) = finding(&r, "fail", "no IOMMU (/sys/kernel/iommu_groups is empty");
    assert!(
        line.contains("no intel_iommu=on") && line.contains("vfio-pci cannot take a device"),
        "{line}"
    );
    assert!(
        fix.contains("intel_iommu=on iommu=pt") && fix.contains("enable_unsafe_noiommu_mode=1"),
        "{fix}"
    );
}

#[test]
fn doctor_lcores_sharing_a_core() {
    let f = passing("siblings");
    f.put(
        "sys/devices/system/cpu/cpu1/topology/thread_siblings_list",
        "1,3\n",
    );
    f.put(
        "sys/devices/system/cpu/cpu3/topology/thread_siblings_list",
        "1,3\n",
    );
    let r = doctor(
        &f,
        &["-l", "0,1,3", "-a", "0000:01:00.0", "-m", "1024"],
        &[],
    );
    assert_exit(&r, 0);
    let (_, fix) = finding(
        &r,
        "warn",
        "lcores sharing one physical core: 1 and 3 (CPUs 1 / 3)",
    );
    assert!(fix.contains("thread_siblings_list"), "{fix}");
}

#[test]
fn doctor_worker_lcore_not_isolated() {
    let f = passing("isolated-not");
    f.put("sys/devices/system/cpu/isolated", "\n");
    f.put("proc/cmdline", "quiet intel_iommu=on iommu=pt\n");
    let r = doctor(&f, ARGS, &[]);
    assert_exit(&r, 0);
    let (_, fix) = finding(&r, "warn", "worker lcore 1 on CPU 1, not isolated");
    assert!(fix.contains("isolcpus=1 nohz_full=1 rcu_nocbs=1"), "{fix}");
    assert!(
        r.stdout
            .ends_with("0 fail, 1 warn, 10 ok: nothing blocks a start\n"),
        "{}",
        r.stdout
    );
}

#[test]
fn doctor_numa_mismatch() {
    let f = passing("numa");
    f.put("sys/devices/system/node/node0/cpulist", "0-1\n");
    f.put("sys/devices/system/node/node1/cpulist", "2-3\n");
    f.nic("0000:81:00.0", 1);
    let r = doctor(&f, &["-l", "0-1", "-a", "0000:81:00.0", "-m", "1024"], &[]);
    assert_exit(&r, 0);
    let (_, fix) = finding(
        &r,
        "warn",
        "0000:81:00.0 is on NUMA node 1, but worker lcore 1 on another node",
    );
    assert!(
        fix.contains("use worker lcores on node 1 (CPUs 2-3)"),
        "{fix}"
    );
}

#[test]
fn doctor_missing_device() {
    let f = passing("missing");
    let r = doctor(&f, &["-l", "0-1", "-a", "02:00.0", "-m", "1024"], &[]);
    assert_exit(&r, 1);
    let (_, fix) = finding(&r, "fail", "0000:02:00.0 (-a 02:00.0): no such PCI device");
    assert!(fix.contains("dpdk-devbind.py --status"), "{fix}");
}

#[test]
fn doctor_reads_config_ports_and_root_from_env() {
    let f = passing("config");
    let cfg = f.root().join("router.toml");
    std::fs::write(
        &cfg,
        "[[port]]\ndevice = \"0000:01:00.0\"\naddress = \"10.0.1.1/24\"\n\n\
         [[port]]\ndevice = \"net_ring0\"\naddress = \"10.0.2.1/24\"\n",
    )
    .unwrap();
    f.bind("0000:01:00.0", "ixgbe");
    let mut cmd = fastpath();
    cmd.env("FASTPATH_DOCTOR_ROOT", f.root())
        .args(["doctor", "-l", "0-1", "-m", "1024", "--", "--config"])
        .arg(&cfg);
    let r = run(cmd, Duration::from_secs(60));
    assert_exit(&r, 1);
    finding(
        &r,
        "fail",
        "0000:01:00.0 (config line 1) 8086:10fb on NUMA node 0: bound to kernel driver ixgbe",
    );
    let (line, _) = finding(
        &r,
        "fail",
        "[[port]] device net_ring0 is neither a PCI address nor created by a --vdev",
    );
    assert!(line.contains("router.toml:5:"), "{line}");
}

#[test]
fn doctor_config_error_is_a_fail_and_json_says_so() {
    let f = passing("config-bad");
    let cfg = f.root().join("bad.toml");
    std::fs::write(&cfg, "[[port]]\ndevice = \"0000:01:00.0\"\n").unwrap();
    let r = doctor(&f, ARGS, &["--json", "--config", cfg.to_str().unwrap()]);
    assert_exit(&r, 1);
    let doc: serde_json::Value = serde_json::from_str(&r.stdout).expect("JSON on stdout");
    assert_eq!(doc["fail"], true);
    let findings = doc["findings"].as_array().unwrap();
    let bad = findings
        .iter()
        .find(|f| f["topic"] == "config")
        .expect("a config finding");
    assert_eq!(bad["severity"], "fail");
    assert!(bad["what"].as_str().unwrap().contains("bad.toml"), "{bad}");
}

#[test]
fn doctor_help_names_the_exit_status() {
    let mut cmd = fastpath();
    cmd.args(["doctor", "--help"]);
    let r = run(cmd, Duration::from_secs(30));
    assert_exit(&r, 0);
    assert!(
        r.stdout.contains("fastpath doctor [EAL options]"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("Exit status: 0 when nothing blocks a start"),
        "{}",
        r.stdout
    );
}

#[test]
fn doctor_on_this_host_with_vdevs_only() {
    let prefix = format!("fpt-doctor-{}", std::process::id());
    runtime_dirs::track(&prefix);
    let mut cmd = fastpath();
    cmd.args([
        "doctor",
        "-l",
        "0-1",
        "--no-huge",
        "--vdev",
        "net_null0",
        "--file-prefix",
    ])
    .arg(&prefix);
    let r = run(cmd, Duration::from_secs(60));
    assert_exit(&r, 0);
    finding(&r, "ok", "--vdev net_null0: PMD net_null is available");
    finding(&r, "ok", "mbuf pool ops ring_mp_mc is available");
    assert!(
        r.stdout.contains(": nothing blocks a start\n"),
        "{}",
        r.stdout
    );
}

#[test]
fn doctor_says_what_the_fibs_need_for_the_routes_asked() {
    let f = passing("fib");
    let cfg = f.root().join("router.toml");
    std::fs::write(
        &cfg,
        "[[port]]\ndevice = \"0000:01:00.0\"\naddress = \"10.0.1.1/24\"\n\
         ipv6 = [\"2001:db8:1::1/64\"]\n\n\
         [[route]]\nprefix = \"2001:db8:100::/48\"\nvia = \"2001:db8:1::2\"\n",
    )
    .unwrap();
    let config = ["--config", cfg.to_str().unwrap()];
    // Enough: -m 1024 against the IPv4 table's 92 MiB and two of 68 MiB.
    let r = doctor(&f, ARGS, &config);
    assert_exit(&r, 0);
    let (line, _) = finding(&r, "ok", "the IPv4 FIB for");
    assert!(
        line.contains("65536 routes (--fib-routes 65536) takes 92 MiB")
            && line.contains("two LPM6 tables of 68 MiB (136 MiB)")
            && line.contains("-m 1024 gives 1024 MiB"),
        "{line}"
    );
    // Too little: -m 128.
    let args = ["-l", "0-1", "-a", "0000:01:00.0", "-m", "128", "-n", "4"];
    let r = doctor(&f, &args, &config);
    assert_exit(&r, 1);
    let (line, fix) = finding(&r, "fail", "the IPv4 FIB for");
    assert!(line.contains("-m 128 gives 128 MiB"), "{line}");
    assert!(
        fix.contains("more than 228 MiB") && fix.contains("--fib6-routes"),
        "{fix}"
    );
    // Room for more IPv6 routes: the tables grow past -m 1024.
    let more6 = [config[0], config[1], "--fib6-routes", "262144"];
    let r = doctor(&f, ARGS, &more6);
    assert_exit(&r, 1);
    let (line, _) = finding(&r, "fail", "the IPv4 FIB for");
    assert!(
        line.contains("room for 262144 more (--fib6-routes)"),
        "{line}"
    );

    // An IPv4-only config: nothing said about IPv6; a full table's
    // --fib-routes needs 488 MiB.
    std::fs::write(
        &cfg,
        "[[port]]\ndevice = \"0000:01:00.0\"\naddress = \"10.0.1.1/24\"\n",
    )
    .unwrap();
    let r = doctor(&f, ARGS, &config);
    assert_exit(&r, 0);
    assert!(!r.stdout.contains("IPv6"), "{}", r.stdout);
    let full = [config[0], config[1], "--fib-routes", "1048576"];
    let args = ["-l", "0-1", "-a", "0000:01:00.0", "-m", "256", "-n", "4"];
    let r = doctor(&f, &args, &full);
    assert_exit(&r, 1);
    let (line, fix) = finding(&r, "fail", "the IPv4 FIB for 1048576 routes");
    assert!(line.contains("takes 488 MiB"), "{line}");
    assert!(
        fix.contains("more than 488 MiB") && fix.contains("a smaller --fib-routes"),
        "{fix}"
    );
}
