//! IOMMU and vfio: what `vfio-pci` needs to hand a NIC to DPDK safely.

use crate::doctor::finding::Finding;
use crate::doctor::host::Host;
use crate::doctor::inputs::Inputs;

const T: &str = "iommu";

/// Drivers DPDK uses without vfio (uio) or beside the kernel's (bifurcated).
const NO_VFIO_DRIVERS: &[&str] = &["uio_pci_generic", "igb_uio", "mlx5_core", "mlx4_core"];

pub fn check(host: &Host, inputs: &Inputs) -> Vec<Finding> {
    // vfio is needed for every existing requested device not on a driver that does without it.
    let needed = inputs.pci.iter().any(|w| {
        host.pci_device(&w.addr).is_some_and(|d| {
            !d.driver
                .is_some_and(|k| NO_VFIO_DRIVERS.contains(&k.as_str()))
        })
    });
    vec![iommu(host, needed), vfio(host, needed)]
}

fn iommu(host: &Host, needed: bool) -> Finding {
    let groups = host.iommu_groups();
    let cmdline = host.cmdline();
    let asked: Vec<&str> = cmdline
        .split_whitespace()
        .take_while(|w| *w != "--")
        .filter(|w| {
            w.starts_with("intel_iommu=") || w.starts_with("amd_iommu=") || w.starts_with("iommu=")
        })
        .collect();
    let on_cmdline = if asked.is_empty() {
        "the kernel command line has no intel_iommu=on / amd_iommu=on".to_string()
    } else {
        format!("the kernel command line has {}", asked.join(" "))
    };
    if groups > 0 {
        let s = if groups == 1 { "" } else { "s" };
        return Finding::ok(
            T,
            format!("IOMMU on: {groups} IOMMU group{s}; {on_cmdline}"),
        );
    }
    let noiommu = host.read("/sys/module/vfio/parameters/enable_unsafe_noiommu_mode");
    if matches!(noiommu.as_deref(), Some("Y" | "1")) {
        return Finding::warn(
            T,
            "no IOMMU; vfio is in no-IOMMU mode: devices work, but DMA is not isolated",
            "for isolation, enable VT-d/AMD-Vi in firmware and boot with intel_iommu=on iommu=pt \
             (AMD: amd_iommu=on iommu=pt)",
        );
    }
    let what = format!("no IOMMU (/sys/kernel/iommu_groups is empty; {on_cmdline})");
    if !needed {
        return Finding::ok(
            T,
            format!("{what}; not needed: no PCI device to hand to vfio-pci"),
        );
    }
    Finding::fail(
        T,
        format!("{what}: vfio-pci cannot take a device"),
        "boot with intel_iommu=on iommu=pt (AMD: amd_iommu=on iommu=pt) and enable VT-d/AMD-Vi in \
         firmware; in a VM without a virtual IOMMU: modprobe vfio enable_unsafe_noiommu_mode=1",
    )
}

fn vfio(host: &Host, needed: bool) -> Finding {
    if host.pci_driver("vfio-pci") || host.module_loaded("vfio_pci") {
        return Finding::ok(T, "vfio-pci is loaded");
    }
    if !needed {
        return Finding::ok(
            T,
            "vfio-pci is not loaded; not needed: no PCI device to hand to it",
        );
    }
    Finding::fail(T, "vfio-pci is not loaded", "modprobe vfio-pci")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::checks::tree::{put, tempdir};
    use crate::doctor::eal_args;
    use crate::doctor::finding::Severity;
    use std::path::Path;

    fn run(root: &Path, args: &[&str]) -> Vec<Finding> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        check(&Host::new(root), &Inputs::new(eal_args::parse(&args), None))
    }

    fn device(root: &Path, addr: &str) {
        put(
            root,
            &format!("sys/bus/pci/devices/{addr}/vendor"),
            "0x8086\n",
        );
    }

    #[test]
    fn no_iommu_fails_only_when_a_device_needs_it() {
        let d = tempdir("iommu-none");
        device(d.path(), "0000:01:00.0");
        put(d.path(), "proc/cmdline", "quiet\n");
        let f = run(d.path(), &["-a", "01:00.0"]);
        assert_eq!(f[0].severity, Severity::Fail, "{f:?}");
        assert!(f[0].what.contains("no intel_iommu=on"), "{f:?}");
        assert_eq!(f[1].fix.as_deref(), Some("modprobe vfio-pci"));
        let f = run(d.path(), &["--vdev", "net_null0"]);
        assert!(f.iter().all(|f| f.severity == Severity::Ok), "{f:?}");
    }

    #[test]
    fn iommu_groups_and_noiommu_mode() {
        let d = tempdir("iommu-groups");
        device(d.path(), "0000:01:00.0");
        put(
            d.path(),
            "sys/module/vfio/parameters/enable_unsafe_noiommu_mode",
            "Y\n",
        );
        put(d.path(), "sys/module/vfio_pci/refcnt", "0\n");
        let f = run(d.path(), &["-a", "01:00.0"]);
        assert_eq!(f[0].severity, Severity::Warn, "{f:?}");
        assert_eq!(f[1].what, "vfio-pci is loaded");
        put(d.path(), "sys/kernel/iommu_groups/0/type", "DMA\n");
        put(d.path(), "proc/cmdline", "intel_iommu=on iommu=pt\n");
        let f = run(d.path(), &["-a", "01:00.0"]);
        assert_eq!(
            f[0].what,
            "IOMMU on: 1 IOMMU group; the kernel command line has intel_iommu=on iommu=pt"
        );
    }
}
