//! IPv6: the DPDK memory a dual-stack config's IPv6 FIB takes (two
//! `rte_lpm6` tables of 64 MiB and more each, `docs/ipv6.md`) against what
//! EAL will have: `-m`, else the free hugepages (`--no-huge` without `-m`:
//! EAL's 64 MiB). Says nothing for a config without IPv6.

use crate::doctor::finding::Finding;
use crate::doctor::host::Host;
use crate::doctor::inputs::Inputs;
use crate::dpdk::lpm6::table_bytes;
use crate::fib6::{fib6_entries, table_sizes, FIB6_ROUTES};

const T: &str = "ipv6";

/// What EAL allocates from without `-m` under `--no-huge`, in MiB.
const NO_HUGE_DEFAULT_MB: u64 = 64;
/// The IPv4 table beside it at the default `--fib-routes` (65,536 routes,
/// 1,024 tbl8 groups), in MiB.
const IPV4_TABLE_MB: u64 = crate::dpdk::lpm::table_mib(65_536, 1024);

pub fn check(host: &Host, inputs: &Inputs) -> Vec<Finding> {
    let Some(cfg) = inputs.config.as_ref().filter(|c| c.has_ipv6()) else {
        return Vec::new();
    };
    // The prefixes as the router will install them (port ids and MACs do
    // not change the count or the lengths).
    let ids: Vec<u16> = (0..cfg.ports.len() as u16).collect();
    let macs = vec![[2, 0, 0, 0, 0, 1]; cfg.ports.len()];
    let entries = fib6_entries(cfg, &ids, &macs, |_, _| 0);
    let (rules, tbl8s) = table_sizes(&entries, FIB6_ROUTES);
    let each = table_bytes(rules, tbl8s).div_ceil(1 << 20);
    let need = 2 * each;
    let (have, from) = match (inputs.eal.memory_mb, inputs.eal.no_huge) {
        (Some(m), _) => (m, format!("-m {m}")),
        (None, true) => (NO_HUGE_DEFAULT_MB, "--no-huge without -m".to_string()),
        (None, false) => {
            let free: u64 = host
                .huge_pools()
                .iter()
                .filter(|p| p.node.is_none())
                .map(|p| p.free_mb())
                .sum();
            (free, "the free hugepages".to_string())
        }
    };
    let what = format!(
        "the IPv6 FIB of {} prefixes takes two LPM6 tables of {each} MiB ({need} MiB of DPDK \
         memory, beside the IPv4 table's {IPV4_TABLE_MB} MiB and the mbufs); {from} gives {have} MiB",
        entries.len()
    );
    if have < need + IPV4_TABLE_MB {
        return vec![Finding::fail(
            T,
            what,
            format!(
                "give EAL more than {} MiB (-m, or more hugepages: the two tables, the IPv4 \
                 table and room for the mbufs), or remove the IPv6 items (`ipv6`, `link_local`, \
                 IPv6 routes and neighbours) from the config",
                need + IPV4_TABLE_MB
            ),
        )];
    }
    vec![Finding::ok(T, what)]
}
