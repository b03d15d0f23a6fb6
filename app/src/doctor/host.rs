//! Facts about the host, read from a root tree (`/` or a fake tree in tests):
//! `/sys` and `/proc` files only, nothing that changes the host.

use super::cpulist;
use std::path::{Path, PathBuf};

/// The host's file tree, rooted at `root`.
#[derive(Clone, Debug)]
pub struct Host {
    root: PathBuf,
}

/// Huge pages of one size, for the whole host (`node: None`) or one NUMA node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HugePool {
    pub size_kb: u64,
    pub node: Option<u32>,
    pub reserved: u64,
    pub free: u64,
}

impl HugePool {
    /// Free memory of this pool, in MiB.
    pub fn free_mb(&self) -> u64 {
        self.free * self.size_kb / 1024
    }
}

/// A hugetlbfs mount and the page size it serves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HugeMount {
    pub dir: String,
    pub size_kb: u64,
}

/// A PCI device as `/sys/bus/pci/devices/ADDR` shows it (what `dpdk-devbind.py --status` lists).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PciDevice {
    pub addr: String,
    pub vendor: Option<u16>,
    pub device: Option<u16>,
    /// The bound kernel driver (`driver` symlink), if any.
    pub driver: Option<String>,
    /// `numa_node`; `None` when unknown (`-1`).
    pub numa_node: Option<u32>,
    /// Kernel network interfaces of the device (`net/`), e.g. `eth0`.
    pub interfaces: Vec<String>,
}

impl Host {
    pub fn new(root: impl Into<PathBuf>) -> Host {
        Host { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `p` (absolute, as on the host) inside the root tree.
    pub fn path(&self, p: &str) -> PathBuf {
        self.root.join(p.trim_start_matches('/'))
    }

    /// A file's text, trimmed; `None` when it cannot be read.
    pub fn read(&self, p: &str) -> Option<String> {
        std::fs::read_to_string(self.path(p))
            .ok()
            .map(|s| s.trim().to_string())
    }

    pub fn read_u64(&self, p: &str) -> Option<u64> {
        self.read(p)?.parse().ok()
    }

    pub fn exists(&self, p: &str) -> bool {
        self.path(p).exists()
    }

    /// The names in a directory, sorted; empty when it cannot be read.
    pub fn list(&self, p: &str) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.path(p))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    /// The last component of a symlink's target (`driver` → `vfio-pci`).
    pub fn link_name(&self, p: &str) -> Option<String> {
        let target = std::fs::read_link(self.path(p)).ok()?;
        Some(target.file_name()?.to_string_lossy().into_owned())
    }

    /// A CPU list file; `None` when missing or unreadable as a list.
    pub fn cpulist(&self, p: &str) -> Option<Vec<u32>> {
        cpulist::parse(&self.read(p)?).ok()
    }

    /// The kernel command line.
    pub fn cmdline(&self) -> String {
        self.read("/proc/cmdline").unwrap_or_default()
    }

    /// The value of `name=` on the kernel command line (the last one given).
    pub fn cmdline_value(&self, name: &str) -> Option<String> {
        let prefix = format!("{name}=");
        self.cmdline()
            .split_whitespace()
            .take_while(|w| *w != "--")
            .filter_map(|w| w.strip_prefix(&prefix))
            .last()
            .map(str::to_string)
    }

    /// A `/proc/meminfo` line's number (kB for sizes).
    pub fn meminfo(&self, key: &str) -> Option<u64> {
        let text = self.read("/proc/meminfo")?;
        let line = text.lines().find(|l| l.split(':').next() == Some(key))?;
        line.split(':')
            .nth(1)?
            .split_whitespace()
            .next()?
            .parse()
            .ok()
    }

    /// NUMA nodes with their CPUs; empty when the host shows none.
    pub fn numa_nodes(&self) -> Vec<(u32, Vec<u32>)> {
        self.list("/sys/devices/system/node")
            .iter()
            .filter_map(|n| n.strip_prefix("node")?.parse::<u32>().ok())
            .map(|n| {
                let cpus = self.cpulist(&format!("/sys/devices/system/node/node{n}/cpulist"));
                (n, cpus.unwrap_or_default())
            })
            .collect()
    }

    /// The NUMA node of a CPU, if the host has NUMA nodes.
    pub fn cpu_node(&self, cpu: u32) -> Option<u32> {
        self.numa_nodes()
            .into_iter()
            .find(|(_, cpus)| cpus.contains(&cpu))
            .map(|(n, _)| n)
    }

    /// The CPUs on the same physical core as `cpu` (itself included).
    pub fn core_siblings(&self, cpu: u32) -> Option<Vec<u32>> {
        let dir = format!("/sys/devices/system/cpu/cpu{cpu}/topology");
        self.cpulist(&format!("{dir}/core_cpus_list"))
            .or_else(|| self.cpulist(&format!("{dir}/thread_siblings_list")))
    }
}
