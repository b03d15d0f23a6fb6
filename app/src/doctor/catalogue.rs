//! The drivers this fastpath can use: PMDs (with the PCI ids they claim and
//! the kernel modules they work with) and mempool ops, as doctor sees them.

use crate::dpdk::pmdinfo;
pub use crate::dpdk::pmdinfo::PmdInfo;

/// The PMDs and mempool ops available to this binary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Catalogue {
    pub pmds: Vec<PmdInfo>,
    pub mempool_ops: Vec<String>,
}

impl Catalogue {
    /// The catalogue of this binary and DPDK's plugin directory.
    pub fn load() -> Catalogue {
        Catalogue {
            pmds: pmdinfo::catalogue(),
            mempool_ops: pmdinfo::mempool_ops_available(),
        }
    }

    /// The PMD a vdev of this name is created by (`net_null0` → `net_null`).
    pub fn for_vdev(&self, vdev: &str) -> Option<&PmdInfo> {
        pmdinfo::driver_for_vdev(&self.pmds, vdev)
    }

    /// The PMDs claiming a PCI vendor:device.
    pub fn for_pci(&self, vendor: u16, device: u16) -> Vec<&PmdInfo> {
        pmdinfo::drivers_for_pci(&self.pmds, vendor, device)
    }

    /// Names of the PMDs that claim no PCI id (the virtual devices), sorted.
    pub fn vdev_names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self
            .pmds
            .iter()
            .filter(|p| p.pci_ids.is_empty() && p.name.starts_with("net_"))
            .map(|p| p.name.as_str())
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// Whether `driver` (a kernel module, `vfio-pci` or `vfio_pci`) is one `pmd` works with.
pub fn works_with(pmd: &PmdInfo, driver: &str) -> bool {
    let norm = |s: &str| s.replace('-', "_");
    pmd.kmod.as_deref().is_some_and(|k| {
        k.split(|c: char| c == '|' || c == '&' || c.is_whitespace())
            .any(|m| !m.is_empty() && norm(m) == norm(driver))
    })
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A small catalogue for the checks' tests.
    pub fn sample() -> Catalogue {
        let pmd = |name: &str, kmod: Option<&str>, ids: &[(u16, u16)]| PmdInfo {
            name: name.into(),
            kmod: kmod.map(str::to_string),
            pci_ids: ids.to_vec(),
            source: "test".into(),
        };
        Catalogue {
            pmds: vec![
                pmd("net_null", None, &[]),
                pmd("net_af_packet", None, &[]),
                pmd(
                    "net_ixgbe",
                    Some("* igb_uio | uio_pci_generic | vfio-pci"),
                    &[(0x8086, 0x10fb)],
                ),
                pmd(
                    "net_mlx5",
                    Some("* ib_uverbs & mlx5_core & mlx5_ib"),
                    &[(0x15b3, 0x1017)],
                ),
            ],
            mempool_ops: vec!["ring_mp_mc".into(), "stack".into()],
        }
    }

    #[test]
    fn vdev_by_prefix_and_alias() {
        let c = sample();
        assert_eq!(c.for_vdev("net_null0").unwrap().name, "net_null");
        assert_eq!(c.for_vdev("eth_null1").unwrap().name, "net_null");
        assert!(c.for_vdev("net_tap0").is_none());
        assert_eq!(c.vdev_names(), ["net_af_packet", "net_null"]);
    }

    #[test]
    fn pci_claims_and_kernel_modules() {
        let c = sample();
        assert_eq!(c.for_pci(0x8086, 0x10fb)[0].name, "net_ixgbe");
        assert!(c.for_pci(0x8086, 0x1234).is_empty());
        assert!(works_with(&c.pmds[2], "vfio-pci"));
        assert!(!works_with(&c.pmds[2], "ixgbe"));
        assert!(works_with(&c.pmds[3], "mlx5_core"));
    }
}
