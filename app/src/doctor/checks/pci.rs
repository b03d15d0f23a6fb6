//! PCI devices: does each requested one exist, which driver has it, where is it
//! (the facts `dpdk-devbind.py --status` shows).

use crate::doctor::catalogue::{works_with, Catalogue};
use crate::doctor::finding::Finding;
use crate::doctor::host::{Host, PciDevice};
use crate::doctor::inputs::{Inputs, WantedPci};

const T: &str = "pci";

pub fn check(host: &Host, inputs: &Inputs, catalogue: &Catalogue) -> Vec<Finding> {
    if inputs.pci.is_empty() {
        return vec![Finding::ok(
            T,
            "no PCI device requested (-a or a [[port]] device)",
        )];
    }
    let mut out = Vec::new();
    if inputs.eal.no_pci {
        let addrs: Vec<&str> = inputs.pci.iter().map(|w| w.addr.as_str()).collect();
        out.push(Finding::fail(
            T,
            format!(
                "--no-pci is given, but {} requested: EAL will not probe them",
                addrs.join(", ")
            ),
            "drop --no-pci",
        ));
    }
    for w in &inputs.pci {
        out.push(match host.pci_device(&w.addr) {
            None => Finding::fail(
                T,
                format!(
                    "{} ({}): no such PCI device (no /sys/bus/pci/devices/{})",
                    w.addr, w.from, w.addr
                ),
                "find the address with `dpdk-devbind.py --status` or `lspci -D`",
            ),
            Some(d) => binding(&d, w, catalogue),
        });
    }
    out
}

/// Why DPDK made no port of the PCI device `addr` (a start-up error's hint):
/// doctor's finding on it, with its fix. None when nothing about it is wrong
/// that doctor can see, or `addr` is no PCI address.
pub fn why_no_port(host: &Host, addr: &str, catalogue: &Catalogue) -> Option<String> {
    let addr = crate::doctor::inputs::pci_address(addr)?;
    let wanted = WantedPci {
        addr: addr.clone(),
        from: "the config".into(),
    };
    let finding = match host.pci_device(&addr) {
        None => return Some(format!("no PCI device {addr} on this host (lspci -D)")),
        Some(d) => binding(&d, &wanted, catalogue),
    };
    if finding.severity == crate::doctor::finding::Severity::Ok {
        return None;
    }
    Some(match &finding.fix {
        Some(fix) => format!("{}; fix: {fix}", finding.what),
        None => finding.what,
    })
}

/// `8086:10fb`, or `?:?` when unreadable.
pub fn ids(d: &PciDevice) -> String {
    let h = |v: Option<u16>| v.map_or("?".to_string(), |v| format!("{v:04x}"));
    format!("{}:{}", h(d.vendor), h(d.device))
}

/// The device's driver: vfio-pci is what DPDK wants; uio works without
/// isolation; a kernel driver its PMD works beside (mlx5) is fine; any other
/// kernel driver, or none, keeps it from DPDK.
fn binding(d: &PciDevice, w: &WantedPci, catalogue: &Catalogue) -> Finding {
    let node = d.numa_node.map_or("unknown".to_string(), |n| n.to_string());
    let head = format!("{} ({}) {} on NUMA node {node}", d.addr, w.from, ids(d));
    let bind = format!("dpdk-devbind.py --bind=vfio-pci {}", d.addr);
    let pmds = match (d.vendor, d.device) {
        (Some(v), Some(id)) => catalogue.for_pci(v, id),
        _ => Vec::new(),
    };
    match d.driver.as_deref() {
        Some("vfio-pci") => Finding::ok(T, format!("{head}: bound to vfio-pci")),
        Some(k @ ("uio_pci_generic" | "igb_uio")) => Finding::warn(
            T,
            format!(
                "{head}: bound to {k}: works, but DMA is not isolated and interrupts are limited"
            ),
            format!("modprobe vfio-pci && {bind}"),
        ),
        Some(k) if pmds.iter().any(|p| works_with(p, k)) => Finding::ok(
            T,
            format!("{head}: bound to {k}, which its PMD works beside (bifurcated driver)"),
        ),
        Some(k) => {
            let down: String = d
                .interfaces
                .iter()
                .map(|i| format!("ip link set {i} down && "))
                .collect();
            let ifs = match d.interfaces.as_slice() {
                [] => String::new(),
                i => format!(" (interface {})", i.join(", ")),
            };
            Finding::fail(
                T,
                format!("{head}: bound to kernel driver {k}{ifs}, so DPDK cannot use it"),
                format!("{down}modprobe vfio-pci && {bind}"),
            )
        }
        None => Finding::fail(
            T,
            format!("{head}: bound to no driver"),
            format!("modprobe vfio-pci && {bind}"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::catalogue::tests::sample;
    use crate::doctor::checks::tree::{put, tempdir};
    use crate::doctor::eal_args;
    use crate::doctor::finding::Severity;
    use std::path::Path;

    fn run(root: &Path, args: &[&str]) -> Vec<Finding> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        check(
            &Host::new(root),
            &Inputs::new(eal_args::parse(&args), None),
            &sample(),
        )
    }

    fn device(root: &Path, addr: &str, vendor: &str, device: &str, driver: Option<&str>) {
        let dir = root.join(format!("sys/bus/pci/devices/{addr}"));
        put(root, &format!("sys/bus/pci/devices/{addr}/vendor"), vendor);
        put(root, &format!("sys/bus/pci/devices/{addr}/device"), device);
        put(
            root,
            &format!("sys/bus/pci/devices/{addr}/numa_node"),
            "-1\n",
        );
        if let Some(k) = driver {
            std::fs::create_dir_all(root.join(format!("sys/bus/pci/drivers/{k}"))).unwrap();
            std::os::unix::fs::symlink(format!("../../../bus/pci/drivers/{k}"), dir.join("driver"))
                .unwrap();
        }
    }

    #[test]
    fn kernel_driver_fails_with_the_devbind_fix() {
        let d = tempdir("pci-ixgbe");
        device(
            d.path(),
            "0000:01:00.0",
            "0x8086\n",
            "0x10fb\n",
            Some("ixgbe"),
        );
        put(
            d.path(),
            "sys/bus/pci/devices/0000:01:00.0/net/eth3/ifindex",
            "4\n",
        );
        let f = run(d.path(), &["-a", "0000:01:00.0"]);
        assert_eq!(f[0].severity, Severity::Fail);
        assert!(
            f[0].what.contains(
                "8086:10fb on NUMA node unknown: bound to kernel driver ixgbe (interface eth3)"
            ),
            "{f:?}"
        );
        assert_eq!(
            f[0].fix.as_deref(),
            Some("ip link set eth3 down && modprobe vfio-pci && dpdk-devbind.py --bind=vfio-pci 0000:01:00.0")
        );
    }

    #[test]
    fn vfio_uio_bifurcated_and_missing() {
        let d = tempdir("pci-kinds");
        device(
            d.path(),
            "0000:01:00.0",
            "0x8086",
            "0x10fb",
            Some("vfio-pci"),
        );
        device(
            d.path(),
            "0000:02:00.0",
            "0x8086",
            "0x10fb",
            Some("uio_pci_generic"),
        );
        device(
            d.path(),
            "0000:03:00.0",
            "0x15b3",
            "0x1017",
            Some("mlx5_core"),
        );
        device(d.path(), "0000:04:00.0", "0x8086", "0x10fb", None);
        let f = run(
            d.path(),
            &[
                "-a", "01:00.0", "-a", "02:00.0", "-a", "03:00.0", "-a", "04:00.0", "-a", "05:00.0",
            ],
        );
        let sev: Vec<Severity> = f.iter().map(|f| f.severity).collect();
        use Severity::*;
        assert_eq!(sev, [Ok, Warn, Ok, Fail, Fail], "{f:?}");
        assert!(f[2].what.contains("bifurcated"), "{f:?}");
        assert!(f[3].what.contains("bound to no driver"), "{f:?}");
        assert!(
            f[4].what
                .contains("0000:05:00.0 (-a 05:00.0): no such PCI device"),
            "{f:?}"
        );
    }

    #[test]
    fn no_pci_with_devices_fails() {
        let d = tempdir("pci-nopci");
        device(
            d.path(),
            "0000:01:00.0",
            "0x8086",
            "0x10fb",
            Some("vfio-pci"),
        );
        let f = run(d.path(), &["--no-pci", "-a", "01:00.0"]);
        assert!(
            f[0].what.starts_with("--no-pci is given, but 0000:01:00.0"),
            "{f:?}"
        );
        assert_eq!(run(d.path(), &[]).len(), 1);
    }
}
