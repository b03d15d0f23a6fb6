//! The checks, one file per topic; each returns its findings in report order.

mod args;
mod drivers;
mod fib;
mod hugepages;
mod iommu;
mod kernel;
mod lcores;
pub mod pci;

use super::catalogue::Catalogue;
use super::finding::Finding;
use super::host::Host;
use super::inputs::Inputs;

/// Every check, in report order: arguments, memory (the IPv6 FIB's
/// included), IOMMU, devices, lcores, drivers.
pub fn run_all(host: &Host, inputs: &Inputs, catalogue: &Catalogue) -> Vec<Finding> {
    let mut findings = args::check(inputs);
    findings.extend(hugepages::check(host, inputs));
    findings.extend(fib::check(host, inputs));
    findings.extend(kernel::check(host, inputs));
    findings.extend(iommu::check(host, inputs));
    findings.extend(pci::check(host, inputs, catalogue));
    findings.extend(lcores::check(host, inputs));
    findings.extend(drivers::check(host, inputs, catalogue));
    findings
}

/// Test helpers: a fake root tree in a tempdir.
#[cfg(test)]
pub mod tree {
    use std::path::Path;

    pub fn tempdir(name: &str) -> tempfile::TempDir {
        tempfile::Builder::new()
            .prefix(&format!("doctor-{name}-"))
            .tempdir()
            .unwrap()
    }

    /// Writes `text` at `p` (relative to the root), creating directories.
    pub fn put(root: &Path, p: &str, text: &str) {
        let f = root.join(p.trim_start_matches('/'));
        std::fs::create_dir_all(f.parent().unwrap()).unwrap();
        std::fs::write(f, text).unwrap();
    }
}
