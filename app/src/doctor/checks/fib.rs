//! The FIBs' DPDK memory for a config (router mode): the IPv4 table
//! (`rte_fib`: a fixed 64 MiB tbl24 and about 420 bytes a route of
//! `--fib-routes`) and, with IPv6, two `rte_lpm6` copies sized for the
//! config and `--fib6-routes` (`docs/ipv6.md`), against what EAL will have:
//! `-m`, else the free hugepages (`--no-huge` without `-m`: EAL's 64 MiB).
//! Says nothing without a config.

use crate::doctor::finding::Finding;
use crate::doctor::host::Host;
use crate::doctor::inputs::Inputs;
use crate::dpdk::lpm::table_mib;
use crate::dpdk::lpm6::table_bytes;
use crate::fib::fib_entries;
use crate::fib6::fib6_entries;

const T: &str = "fib";

/// What EAL allocates from without `-m` under `--no-huge`, in MiB.
const NO_HUGE_DEFAULT_MB: u64 = 64;

pub fn check(host: &Host, inputs: &Inputs) -> Vec<Finding> {
    let Some(cfg) = inputs.config.as_ref() else {
        return Vec::new();
    };
    // The prefixes as the router will install them (port ids and MACs do
    // not change the count or the lengths).
    let ids: Vec<u16> = (0..cfg.ports.len() as u16).collect();
    let (rules, tbl8s) = crate::fib::table_sizes(&fib_entries(cfg, &ids, |_| 0), inputs.fib_routes);
    let v4 = table_mib(rules, tbl8s);
    let mut what = format!(
        "the IPv4 FIB for {rules} routes (--fib-routes {}) takes {v4} MiB of DPDK memory",
        inputs.fib_routes
    );
    let mut need = v4;
    if cfg.has_ipv6() {
        let macs = vec![[2, 0, 0, 0, 0, 1]; cfg.ports.len()];
        let entries = fib6_entries(cfg, &ids, &macs, |_, _| 0);
        let (rules, tbl8s) = crate::fib6::table_sizes(&entries, inputs.fib6_routes);
        let each = table_bytes(rules, tbl8s).div_ceil(1 << 20);
        need += 2 * each;
        what += &format!(
            ", the IPv6 FIB of {} prefixes and room for {} more (--fib6-routes) two LPM6 tables \
             of {each} MiB ({} MiB)",
            entries.len(),
            inputs.fib6_routes,
            2 * each
        );
    }
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
    what += &format!("; {from} gives {have} MiB, the mbufs besides");
    if have <= need {
        let less = if cfg.has_ipv6() {
            "a smaller --fib-routes or --fib6-routes, or no IPv6 items (`ipv6`, `link_local`, \
             IPv6 routes and neighbours) in the config"
        } else {
            "a smaller --fib-routes"
        };
        return vec![Finding::fail(
            T,
            what,
            format!(
                "give EAL more than {need} MiB (-m, or more hugepages: the tables and room for \
                 the mbufs), or {less}"
            ),
        )];
    }
    vec![Finding::ok(T, what)]
}
