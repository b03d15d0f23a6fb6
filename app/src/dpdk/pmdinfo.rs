//! Which poll-mode drivers and mempool ops this build of fastpath can use.
//!
//! DPDK's build embeds a `PMD_INFO_STRING= {json}` record in every driver
//! (the strings `dpdk-pmdinfo.py` reads). A static build took them from the
//! archives it linked (`dpdk_sys::STATIC_PMD_INFO`); a shared build finds them
//! in the plugin directory EAL loads at start (`RTE_EAL_PMD_PATH`). Reading them tells, before EAL
//! starts, whether a `--vdev` or a PCI device has a driver at all, so that a
//! static link that dropped a driver says so instead of failing obscurely.
//!
//! Mempool ops register through constructors: in a static build they are in
//! `rte_mempool_ops_table` before `main`; in a shared build the
//! `librte_mempool_*` plugins bring them when EAL starts.

use dpdk_sys as sys;
use std::ffi::CStr;
use std::path::{Path, PathBuf};

/// One driver as its build describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PmdInfo {
    /// The driver's name (`net_pcap`, `net_ixgbe`, ...): a vdev's name starts
    /// with it.
    pub name: String,
    /// The kernel modules a PCI device must be bound to, as the driver says
    /// (`"* igb_uio | uio_pci_generic | vfio-pci"`); vdevs have none.
    pub kmod: Option<String>,
    /// PCI vendor and device ids the driver claims (`0xffff`: any).
    pub pci_ids: Vec<(u16, u16)>,
    /// Where the record was found: this binary or a plugin file.
    pub source: PathBuf,
}

/// Whether DPDK is linked into this binary statically.
pub const STATIC_BUILD: bool = sys::STATIC;

/// The marker DPDK's `pmdinfogen` puts in front of each driver's record.
const MARKER: &[u8] = b"PMD_INFO_STRING= ";

/// Every driver this process can use: in a static build those linked into
/// the binary, in a shared build those in DPDK's plugin directory. Empty when
/// nothing could be read (then nothing is known, rather than nothing is there).
pub fn catalogue() -> Vec<PmdInfo> {
    let mut out = Vec::new();
    if STATIC_BUILD {
        let exe = std::env::current_exe().unwrap_or_default();
        out.extend(
            sys::STATIC_PMD_INFO
                .iter()
                .filter_map(|r| parse_record(r.as_bytes(), &exe)),
        );
    } else {
        for file in plugin_files(&plugin_dir()) {
            out.extend(read_file(&file));
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out.dedup_by(|a, b| a.name == b.name);
    out
}

/// DPDK's plugin directory as the linked DPDK was built with it.
pub fn plugin_dir() -> PathBuf {
    let raw = CStr::from_bytes_until_nul(sys::RTE_EAL_PMD_PATH).unwrap_or(c"");
    PathBuf::from(raw.to_string_lossy().into_owned())
}

/// The driver a vdev name asks for: the catalogued driver whose name starts
/// it (`net_pcap0` → `net_pcap`), as EAL's vdev bus matches them; the
/// longest such name wins. DPDK's `eth_` aliases are read as `net_`.
pub fn driver_for_vdev<'a>(catalogue: &'a [PmdInfo], vdev: &str) -> Option<&'a PmdInfo> {
    let name = vdev.split(',').next().unwrap_or(vdev);
    let alias = name.strip_prefix("eth_").map(|rest| format!("net_{rest}"));
    catalogue
        .iter()
        .filter(|p| {
            p.pci_ids.is_empty()
                && (name.starts_with(&p.name)
                    || alias.as_deref().is_some_and(|a| a.starts_with(&p.name)))
        })
        .max_by_key(|p| p.name.len())
}

/// The drivers that claim a PCI device of this vendor and device id.
pub fn drivers_for_pci(catalogue: &[PmdInfo], vendor: u16, device: u16) -> Vec<&PmdInfo> {
    catalogue
        .iter()
        .filter(|p| {
            p.pci_ids
                .iter()
                .any(|&(v, d)| v == vendor && (d == device || d == 0xffff))
        })
        .collect()
}

/// Mempool ops that are registered now, plus in a shared build those the
/// plugin directory will register when EAL starts.
pub fn mempool_ops_available() -> Vec<String> {
    let mut ops = registered_mempool_ops();
    if !STATIC_BUILD {
        for file in plugin_files(&plugin_dir()) {
            ops.extend(ops_of_plugin(&file).iter().map(|s| s.to_string()));
        }
    }
    ops.sort();
    ops.dedup();
    ops
}

/// Mempool ops registered in this process so far (`rte_mempool_ops_table`).
pub fn registered_mempool_ops() -> Vec<String> {
    // SAFETY: the table is written only while ops register (constructors
    // before main, plugin loading inside rte_eal_init), never concurrently
    // with this read on the main thread; `num_ops` bounds the filled entries.
    let table = unsafe { &*std::ptr::addr_of!(sys::rte_mempool_ops_table) };
    let n = (table.num_ops as usize).min(table.ops.len());
    table.ops[..n]
        .iter()
        .map(|op| {
            let bytes: Vec<u8> = op
                .name
                .iter()
                .take_while(|&&c| c != 0)
                .map(|&c| c as u8)
                .collect();
            String::from_utf8_lossy(&bytes).into_owned()
        })
        .collect()
}

/// The mempool ops the mbuf pool will use (`rte_mbuf_best_mempool_ops`,
/// `ring_mp_mc` unless EAL was told otherwise).
pub fn mbuf_pool_ops() -> String {
    // SAFETY: returns a pointer to a static or EAL-owned NUL-terminated string.
    let p = unsafe { sys::rte_mbuf_best_mempool_ops() };
    if p.is_null() {
        return "ring_mp_mc".into();
    }
    // SAFETY: non-null, NUL-terminated, valid for the process (see above).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Before EAL starts: every `--vdev` has a driver in this build. Says which
/// does not, and what the build has. Nothing is checked when the catalogue
/// could not be read (nothing is known then).
pub fn check_vdev_drivers(catalogue: &[PmdInfo], vdevs: &[String]) -> Result<(), String> {
    if catalogue.is_empty() {
        return Ok(());
    }
    let Some(missing) = vdevs
        .iter()
        .find(|v| driver_for_vdev(catalogue, v).is_none())
    else {
        return Ok(());
    };
    let have: Vec<&str> = catalogue
        .iter()
        .filter(|p| p.pci_ids.is_empty() && p.name.starts_with("net_"))
        .map(|p| p.name.as_str())
        .collect();
    let build = if STATIC_BUILD {
        "this static build links only the drivers meson-deps/build-dpdk built: add it to DRIVERS there and rebuild".to_string()
    } else {
        format!(
            "EAL loads drivers from {}: install the package that has it (Debian: librte-net-*)",
            plugin_dir().display()
        )
    };
    Err(format!(
        "--vdev {missing}: no poll-mode driver of that name is in this build; \
         virtual network drivers here: {}. {build}",
        have.join(", ")
    ))
}

/// After EAL started: the mempool ops the mbuf pool uses are registered.
/// A static link that dropped `librte_mempool_ring` fails here, not later
/// with an obscure pool error.
pub fn check_mbuf_pool_ops() -> Result<(), String> {
    let want = mbuf_pool_ops();
    let have = registered_mempool_ops();
    if have.contains(&want) {
        return Ok(());
    }
    let fix = if STATIC_BUILD {
        "the static link lost librte_mempool_ring: it must be linked whole-archive (dpdk-sys does this from pkg-config --static)"
            .to_string()
    } else {
        format!(
            "install librte_mempool_ring into {} (Debian: librte-mempool-ring23)",
            plugin_dir().display()
        )
    };
    Err(format!(
        "mempool ops `{want}` for the mbuf pool is not registered (registered: {}); {fix}",
        if have.is_empty() {
            "none".to_string()
        } else {
            have.join(", ")
        }
    ))
}

/// Ops a mempool plugin registers, by its file name.
fn ops_of_plugin(file: &Path) -> &'static [&'static str] {
    let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
    match name
        .strip_prefix("librte_mempool_")
        .and_then(|n| n.split('.').next())
    {
        Some("ring") => &[
            "ring_mp_mc",
            "ring_sp_sc",
            "ring_mp_sc",
            "ring_sp_mc",
            "ring_mt_rts",
            "ring_mt_hts",
        ],
        Some("stack") => &["stack", "lf_stack"],
        Some("bucket") => &["bucket"],
        _ => &[],
    }
}

/// The plugin files of a directory: `librte_*.so` (the unversioned names
/// EAL itself loads, each once).
fn plugin_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("librte_") && n.ends_with(".so"))
        })
        .collect();
    files.sort();
    files
}

/// The driver records of one file (empty if it cannot be read).
fn read_file(path: &Path) -> Vec<PmdInfo> {
    match std::fs::read(path) {
        Ok(bytes) => parse_records(&bytes, path),
        Err(_) => Vec::new(),
    }
}

/// Every `PMD_INFO_STRING= {json}` record in `bytes`.
pub fn parse_records(bytes: &[u8], source: &Path) -> Vec<PmdInfo> {
    memchr::memmem::find_iter(bytes, MARKER)
        .filter_map(|at| {
            let rest = &bytes[at + MARKER.len()..];
            let end = memchr::memchr(0, rest).unwrap_or(rest.len());
            parse_record(&rest[..end], source)
        })
        .collect()
}

#[derive(serde::Deserialize)]
struct Record {
    name: String,
    #[serde(default)]
    kmod: Option<String>,
    #[serde(default)]
    pci_ids: Vec<Vec<u32>>,
}

fn parse_record(json: &[u8], source: &Path) -> Option<PmdInfo> {
    let r: Record = serde_json::from_slice(json).ok()?;
    let pci_ids = r
        .pci_ids
        .iter()
        .filter_map(|id| match id.as_slice() {
            [v, d, ..] => Some((*v as u16, *d as u16)),
            _ => None,
        })
        .collect();
    Some(PmdInfo {
        name: r.name,
        kmod: r.kmod,
        pci_ids,
        source: source.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BLOB: &[u8] = b"junk\0PMD_INFO_STRING= {\"name\": \"net_pcap\", \"params\": \"rx_pcap=<string>\", \"pci_ids\": []}\0more\
        PMD_INFO_STRING= {\"name\": \"net_ixgbe\", \"kmod\": \"* igb_uio | vfio-pci\", \"pci_ids\": [[32902, 4278, 65535, 65535], [32902, 5384, 65535, 65535]]}\0\
        PMD_INFO_STRING= {broken\0PMD_INFO_STRING= {\"name\": \"net_null\", \"pci_ids\": []}";

    fn cat() -> Vec<PmdInfo> {
        parse_records(BLOB, Path::new("blob"))
    }

    #[test]
    fn records_are_read_and_broken_ones_skipped() {
        let c = cat();
        let names: Vec<&str> = c.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["net_pcap", "net_ixgbe", "net_null"]);
        assert_eq!(c[1].pci_ids, [(0x8086, 0x10b6), (0x8086, 0x1508)]);
        assert_eq!(c[1].kmod.as_deref(), Some("* igb_uio | vfio-pci"));
        assert_eq!(c[0].kmod, None);
    }

    #[test]
    fn vdev_names_find_their_driver() {
        let c = cat();
        assert_eq!(driver_for_vdev(&c, "net_pcap0").unwrap().name, "net_pcap");
        assert_eq!(
            driver_for_vdev(&c, "net_pcap1,tx_pcap=x.pcap")
                .unwrap()
                .name,
            "net_pcap"
        );
        assert_eq!(driver_for_vdev(&c, "eth_null3").unwrap().name, "net_null");
        assert!(driver_for_vdev(&c, "net_memif0").is_none());
        // A PCI driver is never a vdev's.
        assert!(driver_for_vdev(&c, "net_ixgbe0").is_none());
    }

    #[test]
    fn pci_ids_find_their_driver() {
        let c = cat();
        assert_eq!(drivers_for_pci(&c, 0x8086, 0x1508)[0].name, "net_ixgbe");
        assert!(drivers_for_pci(&c, 0x8086, 0x1572).is_empty());
    }

    #[test]
    fn a_vdev_without_driver_is_named_with_what_there_is() {
        let c = cat();
        assert!(check_vdev_drivers(&c, &["net_pcap0".into(), "net_null0".into()]).is_ok());
        let e = check_vdev_drivers(&c, &["net_pcap0".into(), "net_memif0".into()]).unwrap_err();
        assert!(
            e.starts_with("--vdev net_memif0: no poll-mode driver"),
            "{e}"
        );
        assert!(
            e.contains("net_null, net_pcap") || e.contains("net_pcap, net_null"),
            "{e}"
        );
        assert!(!e.contains("net_ixgbe"), "{e}");
        // An unreadable catalogue says nothing rather than something false.
        assert!(check_vdev_drivers(&[], &["net_memif0".into()]).is_ok());
    }

    #[test]
    fn this_build_has_the_drivers_the_tests_use() {
        let c = catalogue();
        for d in ["net_null", "net_pcap", "net_ring"] {
            assert!(c.iter().any(|p| p.name == d), "{d} missing from {c:?}");
        }
        assert!(mempool_ops_available().iter().any(|o| o == "ring_mp_mc"));
    }

    #[test]
    fn mempool_plugins_name_their_ops() {
        assert!(ops_of_plugin(Path::new("/x/librte_mempool_ring.so")).contains(&"ring_mp_mc"));
        assert!(ops_of_plugin(Path::new("/x/librte_net_ring.so")).is_empty());
    }
}
