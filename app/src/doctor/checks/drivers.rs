//! Drivers: a PMD for each `--vdev`, for each PCI device and for each config
//! port, and the mempool ops of the mbuf pool.

use super::pci::ids;
use crate::doctor::catalogue::Catalogue;
use crate::doctor::finding::Finding;
use crate::doctor::host::Host;
use crate::doctor::inputs::Inputs;

const T: &str = "drivers";

/// The mempool ops `rte_pktmbuf_pool_create` uses unless told otherwise.
pub const DEFAULT_MBUF_OPS: &str = "ring_mp_mc";

pub fn check(host: &Host, inputs: &Inputs, catalogue: &Catalogue) -> Vec<Finding> {
    if catalogue.pmds.is_empty() {
        return vec![Finding::warn(
            T,
            "found no PMD linked in or in DPDK's plugin directory; cannot tell which devices have a driver",
            "install DPDK's drivers (Debian: dpdk, librte-net-*), or check the plugin directory",
        )];
    }
    let mut out: Vec<Finding> = inputs
        .eal
        .vdevs
        .iter()
        .map(|v| vdev(v, catalogue))
        .collect();
    out.extend(config_ports(inputs));
    for w in &inputs.pci {
        let Some(d) = host.pci_device(&w.addr) else {
            continue;
        };
        let (Some(vendor), Some(device)) = (d.vendor, d.device) else {
            continue;
        };
        let claim: Vec<&str> = catalogue
            .for_pci(vendor, device)
            .iter()
            .map(|p| p.name.as_str())
            .collect();
        out.push(match claim.as_slice() {
            [] => Finding::fail(
                T,
                format!("{} ({}): no PMD here claims {}", w.addr, w.from, ids(&d)),
                "install the DPDK driver package of this NIC (Debian: librte-net-<driver>), or use a NIC DPDK supports",
            ),
            names => Finding::ok(T, format!("{} ({}) is claimed by {}", w.addr, ids(&d), names.join(", "))),
        });
    }
    out.push(mempool(inputs, catalogue));
    out
}

fn vdev(name: &str, catalogue: &Catalogue) -> Finding {
    match catalogue.for_vdev(name) {
        Some(p) => Finding::ok(T, format!("--vdev {name}: PMD {} is available", p.name)),
        None => Finding::fail(
            T,
            format!("--vdev {name}: no PMD of that name is available"),
            format!(
                "install the PMD's package (Debian: librte-net-<name>) or fix the name; virtual device PMDs here: {}",
                catalogue.vdev_names().join(", ")
            ),
        ),
    }
}

/// Config ports named like vdevs must be created by a `--vdev`.
fn config_ports(inputs: &Inputs) -> Vec<Finding> {
    let created = |n: &str| inputs.eal.vdevs.iter().any(|v| v == n);
    let path = inputs
        .config
        .as_ref()
        .map(|c| c.path.display().to_string())
        .unwrap_or_default();
    inputs
        .config_vdev_ports()
        .into_iter()
        .filter(|(name, _)| !created(name))
        .map(|(name, line)| {
            Finding::fail(
                "config",
                format!("{path}:{line}: [[port]] device {name} is neither a PCI address nor created by a --vdev"),
                format!("add --vdev {name} (with its options) to the EAL arguments, or correct the device"),
            )
        })
        .collect()
}

fn mempool(inputs: &Inputs, catalogue: &Catalogue) -> Finding {
    let ops = inputs
        .eal
        .mbuf_pool_ops
        .as_deref()
        .unwrap_or(DEFAULT_MBUF_OPS);
    if catalogue.mempool_ops.iter().any(|o| o == ops) {
        return Finding::ok(T, format!("mbuf pool ops {ops} is available"));
    }
    Finding::fail(
        T,
        format!(
            "mbuf pool ops {ops} is not available (available: {})",
            if catalogue.mempool_ops.is_empty() {
                "none".to_string()
            } else {
                catalogue.mempool_ops.join(", ")
            }
        ),
        "install the mempool driver (Debian: librte-mempool-ring23) or, in a static build, \
         link librte_mempool_ring with whole-archive",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::catalogue::tests::sample;
    use crate::doctor::checks::tree::{put, tempdir};
    use crate::doctor::eal_args;
    use crate::doctor::finding::Severity;

    fn run(root: &std::path::Path, args: &[&str], c: &Catalogue) -> Vec<Finding> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        check(
            &Host::new(root),
            &Inputs::new(eal_args::parse(&args), None),
            c,
        )
    }

    #[test]
    fn vdevs_pci_claims_and_ops() {
        let d = tempdir("drivers");
        put(
            d.path(),
            "sys/bus/pci/devices/0000:01:00.0/vendor",
            "0x8086",
        );
        put(
            d.path(),
            "sys/bus/pci/devices/0000:01:00.0/device",
            "0x10fb",
        );
        put(
            d.path(),
            "sys/bus/pci/devices/0000:02:00.0/vendor",
            "0x1af4",
        );
        put(
            d.path(),
            "sys/bus/pci/devices/0000:02:00.0/device",
            "0x1000",
        );
        let args = [
            "--vdev",
            "net_null0",
            "--vdev",
            "net_tap0",
            "-a",
            "01:00.0",
            "-a",
            "02:00.0",
        ];
        let f = run(d.path(), &args, &sample());
        let sev: Vec<Severity> = f.iter().map(|f| f.severity).collect();
        use Severity::*;
        assert_eq!(sev, [Ok, Fail, Ok, Fail, Ok], "{f:?}");
        assert_eq!(f[0].what, "--vdev net_null0: PMD net_null is available");
        assert!(
            f[1].fix
                .as_deref()
                .unwrap()
                .ends_with("here: net_af_packet, net_null"),
            "{f:?}"
        );
        assert_eq!(
            f[2].what,
            "0000:01:00.0 (8086:10fb) is claimed by net_ixgbe"
        );
        assert_eq!(f[4].what, "mbuf pool ops ring_mp_mc is available");
    }

    #[test]
    fn missing_ops_and_empty_catalogue() {
        let d = tempdir("drivers-ops");
        let mut c = sample();
        c.mempool_ops.clear();
        let f = run(d.path(), &[], &c);
        assert_eq!(f[0].severity, Severity::Fail);
        assert!(
            f[0].what
                .contains("ring_mp_mc is not available (available: none)"),
            "{f:?}"
        );
        let f = run(d.path(), &["--mbuf-pool-ops-name", "stack"], &sample());
        assert_eq!(f[0].what, "mbuf pool ops stack is available");
        let f = run(d.path(), &[], &Catalogue::default());
        assert_eq!(f[0].severity, Severity::Warn);
    }
}
