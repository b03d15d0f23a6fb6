//! PCI, hugepage and mount facts of a [`Host`].

use super::host::{Host, HugeMount, HugePool, PciDevice};

impl Host {
    /// Every huge page pool: host-wide (`/sys/kernel/mm/hugepages`) first,
    /// then per NUMA node (`/sys/devices/system/node/nodeN/hugepages`).
    pub fn huge_pools(&self) -> Vec<HugePool> {
        let mut pools = self.pools_in("/sys/kernel/mm/hugepages", None);
        for (node, _) in self.numa_nodes() {
            let dir = format!("/sys/devices/system/node/node{node}/hugepages");
            pools.extend(self.pools_in(&dir, Some(node)));
        }
        pools
    }

    fn pools_in(&self, dir: &str, node: Option<u32>) -> Vec<HugePool> {
        self.list(dir)
            .iter()
            .filter_map(|name| {
                let kb = name.strip_prefix("hugepages-")?.strip_suffix("kB")?;
                Some(HugePool {
                    size_kb: kb.parse().ok()?,
                    node,
                    reserved: self.read_u64(&format!("{dir}/{name}/nr_hugepages"))?,
                    free: self.read_u64(&format!("{dir}/{name}/free_hugepages"))?,
                })
            })
            .collect()
    }

    /// hugetlbfs mounts in `/proc/mounts`; a mount without `pagesize=`
    /// serves the default size (`Hugepagesize` in `/proc/meminfo`).
    pub fn huge_mounts(&self) -> Vec<HugeMount> {
        let default_kb = self.meminfo("Hugepagesize").unwrap_or(2048);
        let mounts = self.read("/proc/mounts").unwrap_or_default();
        mounts
            .lines()
            .filter_map(|line| {
                let f: Vec<&str> = line.split_whitespace().collect();
                if f.len() < 4 || f[2] != "hugetlbfs" {
                    return None;
                }
                let size_kb = f[3]
                    .split(',')
                    .find_map(|o| o.strip_prefix("pagesize="))
                    .and_then(parse_size_kb)
                    .unwrap_or(default_kb);
                Some(HugeMount {
                    dir: f[1].to_string(),
                    size_kb,
                })
            })
            .collect()
    }

    /// A PCI device by its full address (`0000:01:00.0`); `None` when absent.
    pub fn pci_device(&self, addr: &str) -> Option<PciDevice> {
        let dir = format!("/sys/bus/pci/devices/{addr}");
        if !self.exists(&dir) {
            return None;
        }
        let hex = |f: &str| {
            let s = self.read(&format!("{dir}/{f}"))?;
            u16::from_str_radix(s.trim_start_matches("0x"), 16).ok()
        };
        let numa = self.read(&format!("{dir}/numa_node"));
        Some(PciDevice {
            addr: addr.to_string(),
            vendor: hex("vendor"),
            device: hex("device"),
            driver: self.link_name(&format!("{dir}/driver")),
            numa_node: numa
                .and_then(|n| n.parse::<i64>().ok())
                .and_then(|n| u32::try_from(n).ok()),
            interfaces: self.interfaces(&dir),
        })
    }

    /// Network interfaces of a PCI device: `net/` of the device, or of its
    /// virtio device (`virtio0/net/`).
    fn interfaces(&self, dir: &str) -> Vec<String> {
        let mut names = self.list(&format!("{dir}/net"));
        for sub in self.list(dir).iter().filter(|n| n.starts_with("virtio")) {
            names.extend(self.list(&format!("{dir}/{sub}/net")));
        }
        names
    }

    /// Whether a kernel module is loaded (or built in): `/sys/module/NAME`.
    pub fn module_loaded(&self, name: &str) -> bool {
        self.exists(&format!("/sys/module/{name}"))
    }

    /// Whether a PCI driver is registered: `/sys/bus/pci/drivers/NAME`.
    pub fn pci_driver(&self, name: &str) -> bool {
        self.exists(&format!("/sys/bus/pci/drivers/{name}"))
    }

    /// The number of IOMMU groups (0: no IOMMU in use).
    pub fn iommu_groups(&self) -> usize {
        self.list("/sys/kernel/iommu_groups").len()
    }
}

/// `2M`, `1G`, `2048k`, `2097152` (bytes) → kB.
fn parse_size_kb(s: &str) -> Option<u64> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = num.parse().ok()?;
    match unit.to_ascii_lowercase().as_str() {
        "" => Some(n / 1024),
        "k" | "kb" => Some(n),
        "m" | "mb" => Some(n * 1024),
        "g" | "gb" => Some(n * 1024 * 1024),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_sizes() {
        assert_eq!(parse_size_kb("2M"), Some(2048));
        assert_eq!(parse_size_kb("1G"), Some(1048576));
        assert_eq!(parse_size_kb("2097152"), Some(2048));
        assert_eq!(parse_size_kb("x"), None);
    }

    #[test]
    fn facts_from_a_tree() {
        let dir = tempfile::Builder::new()
            .prefix("host-facts")
            .tempdir()
            .unwrap();
        let put = |p: &str, text: &str| {
            let f = dir.path().join(p);
            std::fs::create_dir_all(f.parent().unwrap()).unwrap();
            std::fs::write(f, text).unwrap();
        };
        put(
            "proc/mounts",
            "nodev /dev/hugepages hugetlbfs rw,pagesize=1G 0 0\n",
        );
        put("proc/cmdline", "quiet isolcpus=2-3 -- isolcpus=9\n");
        put(
            "sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
            "512\n",
        );
        put(
            "sys/kernel/mm/hugepages/hugepages-2048kB/free_hugepages",
            "500\n",
        );
        let host = Host::new(dir.path());
        assert_eq!(host.huge_mounts()[0].size_kb, 1048576);
        assert_eq!(host.cmdline_value("isolcpus").as_deref(), Some("2-3"));
        let pools = host.huge_pools();
        assert_eq!((pools[0].reserved, pools[0].free_mb()), (512, 1000));
        assert!(host.pci_device("0000:01:00.0").is_none());
        put(
            "sys/bus/pci/devices/0000:00:03.0/virtio0/net/eth0/ifindex",
            "2\n",
        );
        let dev = host.pci_device("0000:00:03.0").unwrap();
        assert_eq!(dev.interfaces, ["eth0"]);
        assert_eq!((dev.vendor, dev.driver, dev.numa_node), (None, None, None));
    }
}
