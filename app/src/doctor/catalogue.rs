//! The drivers this fastpath can use: PMDs (with the PCI ids they claim and
//! the kernel modules they work with) and mempool ops, as doctor sees them.

/// One poll-mode driver.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pmd {
    pub name: String,
    /// The kernel modules it works with, as DPDK writes them: `* igb_uio | vfio-pci`.
    pub kmod: Option<String>,
    /// (vendor, device) PCI ids it claims.
    pub pci_ids: Vec<(u16, u16)>,
}

/// The PMDs and mempool ops available to this binary.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Catalogue {
    pub pmds: Vec<Pmd>,
    pub mempool_ops: Vec<String>,
}

impl Catalogue {
    /// The catalogue of this binary and DPDK's plugin directory.
    pub fn load() -> Catalogue {
        // TEMPORARY until fastpath::dpdk::pmdinfo lands: nothing known.
        Catalogue::default()
    }

    /// The PMD a vdev of this name would be created by: the longest PMD name
    /// that starts the vdev name (`net_null0` → `net_null`); `eth_X` is EAL's
    /// old alias of `net_X`.
    pub fn for_vdev(&self, vdev: &str) -> Option<&Pmd> {
        let alias = vdev.strip_prefix("eth_").map(|rest| format!("net_{rest}"));
        let names = std::iter::once(vdev.to_string()).chain(alias);
        names
            .filter_map(|n| {
                self.pmds
                    .iter()
                    .filter(|p| n.starts_with(p.name.as_str()))
                    .max_by_key(|p| p.name.len())
            })
            .max_by_key(|p| p.name.len())
    }

    /// The PMDs claiming a PCI vendor:device.
    pub fn for_pci(&self, vendor: u16, device: u16) -> Vec<&Pmd> {
        self.pmds
            .iter()
            .filter(|p| p.pci_ids.contains(&(vendor, device)))
            .collect()
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

impl Pmd {
    /// Whether `driver` (a kernel module, `vfio-pci` or `vfio_pci`) is one this PMD works with.
    pub fn works_with(&self, driver: &str) -> bool {
        let norm = |s: &str| s.replace('-', "_");
        self.kmod.as_deref().is_some_and(|k| {
            k.split(|c: char| c == '|' || c == '&' || c.is_whitespace())
                .any(|m| !m.is_empty() && norm(m) == norm(driver))
        })
    }
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// A small catalogue for the checks' tests.
    pub fn sample() -> Catalogue {
        let pmd = |name: &str, kmod: Option<&str>, ids: &[(u16, u16)]| Pmd {
            name: name.into(),
            kmod: kmod.map(str::to_string),
            pci_ids: ids.to_vec(),
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
        assert!(c.pmds[2].works_with("vfio-pci"));
        assert!(!c.pmds[2].works_with("ixgbe"));
        assert!(c.pmds[3].works_with("mlx5_core"));
    }
}
