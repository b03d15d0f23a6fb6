//! Lcores: online, isolated from the scheduler, one per physical core, on the
//! NUMA node of the ports they poll.

use crate::doctor::cpulist;
use crate::doctor::eal_args::Lcore;
use crate::doctor::finding::Finding;
use crate::doctor::host::Host;
use crate::doctor::inputs::Inputs;

const T: &str = "lcores";

pub fn check(host: &Host, inputs: &Inputs) -> Vec<Finding> {
    let online = host.cpulist("/sys/devices/system/cpu/online");
    let mut eal = inputs.eal.clone();
    let mut out = Vec::new();
    if eal.lcores.is_empty() {
        let all = online.clone().unwrap_or_default();
        eal.lcores = all.iter().map(|&id| Lcore { id, cpus: vec![id] }).collect();
        out.push(Finding::ok(
            T,
            format!(
                "no -l/--lcores/-c: EAL makes an lcore of every online CPU ({})",
                cpulist::format(&all)
            ),
        ));
    }
    let main = eal.main();
    if let Some(m) = eal
        .main_lcore
        .filter(|m| !eal.lcores.iter().any(|l| l.id == *m))
    {
        out.push(Finding::fail(
            T,
            format!("--main-lcore {m} is not one of the lcores"),
            "add it to -l, or drop --main-lcore",
        ));
    }
    let workers = eal.workers();
    if workers.is_empty() {
        out.push(Finding::fail(
            T,
            format!("no worker lcore: only the main lcore {}", main.map_or("?".into(), |m| m.to_string())),
            "give EAL at least two lcores, e.g. -l 0-1 (the first is the main lcore, the others poll queues)",
        ));
    }
    out.extend(offline(&eal.lcores, online.as_deref()));
    out.extend(config_lcores(inputs, &workers, main));
    out.push(isolation(host, &workers));
    out.push(sharing(host, &eal.lcores));
    out.extend(numa(host, inputs, &workers));
    out
}

fn ids(lcores: &[&Lcore]) -> String {
    cpulist::format(&lcores.iter().map(|l| l.id).collect::<Vec<_>>())
}

/// `lcore 1` / `lcores 1-2`.
fn lcores_named(lcores: &[&Lcore]) -> String {
    let s = if lcores.len() == 1 { "" } else { "s" };
    format!("lcore{s} {}", ids(lcores))
}

/// `CPU 1` / `CPUs 1-2`.
fn cpus(lcores: &[&Lcore]) -> String {
    let all: Vec<u32> = lcores.iter().flat_map(|l| l.cpus.iter().copied()).collect();
    let list = cpulist::format(&all);
    let s = if list.contains([',', '-']) { "s" } else { "" };
    format!("CPU{s} {list}")
}

/// Lcores on CPUs that do not exist or are offline: EAL stops on them.
fn offline(lcores: &[Lcore], online: Option<&[u32]>) -> Vec<Finding> {
    let Some(online) = online else {
        return vec![Finding::warn(
            T,
            "cannot read /sys/devices/system/cpu/online",
            "run doctor on the host itself",
        )];
    };
    let bad: Vec<&Lcore> = lcores
        .iter()
        .filter(|l| l.cpus.iter().any(|c| !online.contains(c)))
        .collect();
    if bad.is_empty() {
        let all: Vec<&Lcore> = lcores.iter().collect();
        return vec![Finding::ok(
            T,
            format!("{} on online {}", lcores_named(&all), cpus(&all)),
        )];
    }
    vec![Finding::fail(
        T,
        format!(
            "{}: {} not online (online: {})",
            lcores_named(&bad),
            cpus(&bad),
            cpulist::format(online)
        ),
        format!(
            "pick lcores among the online CPUs, e.g. -l {}",
            cpulist::format(online)
        ),
    )]
}

/// `[[lcore]] id` of the config must be a worker lcore of these EAL arguments.
fn config_lcores(inputs: &Inputs, workers: &[&Lcore], main: Option<u32>) -> Vec<Finding> {
    let Some(config) = &inputs.config else {
        return Vec::new();
    };
    config
        .lcores
        .iter()
        .filter(|l| !workers.iter().any(|w| w.id == l.id))
        .map(|l| {
            let role = if Some(l.id) == main {
                "the main lcore (control plane)"
            } else {
                "not an EAL lcore"
            };
            Finding::fail(
                "config",
                format!(
                    "{}:{}: [[lcore]] id {} is {role}; workers: {}",
                    config.path.display(),
                    l.line,
                    l.id,
                    ids(workers)
                ),
                format!(
                    "add lcore {} to -l, or set the [[lcore]] id to a worker lcore",
                    l.id
                ),
            )
        })
        .collect()
}

/// CPUs kept from the scheduler: `/sys/devices/system/cpu/isolated` and `isolcpus=`.
fn isolated_cpus(host: &Host) -> Vec<u32> {
    let mut cpus = host
        .cpulist("/sys/devices/system/cpu/isolated")
        .unwrap_or_default();
    if let Some(v) = host.cmdline_value("isolcpus") {
        // `isolcpus=domain,managed_irq,2-5`: flags first, then the list.
        let list: Vec<&str> = v
            .split(',')
            .filter(|p| p.starts_with(|c: char| c.is_ascii_digit()))
            .collect();
        cpus.extend(cpulist::parse(&list.join(",")).unwrap_or_default());
    }
    cpus.sort_unstable();
    cpus.dedup();
    cpus
}

/// Worker lcores on CPUs the scheduler also uses see latency spikes.
fn isolation(host: &Host, workers: &[&Lcore]) -> Finding {
    let isolated = isolated_cpus(host);
    let shared: Vec<&Lcore> = workers
        .iter()
        .copied()
        .filter(|l| l.cpus.iter().any(|c| !isolated.contains(c)))
        .collect();
    if shared.is_empty() {
        let nohz = host
            .cpulist("/sys/devices/system/cpu/nohz_full")
            .unwrap_or_default();
        let tick = if !workers.is_empty()
            && workers
                .iter()
                .all(|l| l.cpus.iter().all(|c| nohz.contains(c)))
        {
            ", nohz_full"
        } else {
            ""
        };
        return Finding::ok(
            T,
            format!(
                "worker {} on isolated {}{tick}",
                lcores_named(workers),
                cpus(workers)
            ),
        );
    }
    let c = cpulist::format(
        &shared
            .iter()
            .flat_map(|l| l.cpus.clone())
            .collect::<Vec<_>>(),
    );
    Finding::warn(
        T,
        format!(
            "worker {} on {}, not isolated: other tasks may run there (latency spikes)",
            lcores_named(&shared),
            cpus(&shared)
        ),
        format!("boot with isolcpus={c} nohz_full={c} rcu_nocbs={c}, or pick isolated CPUs for the workers"),
    )
}

/// Two lcores on one physical core (the same CPU or hyperthread siblings) share its execution units.
fn sharing(host: &Host, lcores: &[Lcore]) -> Finding {
    let siblings = |c: u32| host.core_siblings(c).unwrap_or_else(|| vec![c]);
    let same_core = |a: &Lcore, b: &Lcore| {
        a.cpus
            .iter()
            .any(|&x| b.cpus.iter().any(|&y| x == y || siblings(x).contains(&y)))
    };
    let mut pairs = Vec::new();
    for (i, a) in lcores.iter().enumerate() {
        for b in &lcores[i + 1..] {
            if same_core(a, b) {
                pairs.push(format!(
                    "{} and {} (CPUs {} / {})",
                    a.id,
                    b.id,
                    cpulist::format(&a.cpus),
                    cpulist::format(&b.cpus)
                ));
            }
        }
    }
    if pairs.is_empty() {
        let all: Vec<&Lcore> = lcores.iter().collect();
        return Finding::ok(
            T,
            format!("{} each on a physical core of its own", lcores_named(&all)),
        );
    }
    Finding::warn(
        T,
        format!("lcores sharing one physical core: {}", pairs.join(", ")),
        "give each lcore its own core: CPUs listed together in \
         /sys/devices/system/cpu/cpuN/topology/thread_siblings_list are one core",
    )
}

/// Each port's NUMA node against its workers' nodes: a remote port costs every packet a trip across nodes.
fn numa(host: &Host, inputs: &Inputs, workers: &[&Lcore]) -> Vec<Finding> {
    let nodes = host.numa_nodes();
    let node_of = |l: &Lcore| l.cpus.first().and_then(|&c| host.cpu_node(c));
    let mut out = Vec::new();
    for w in &inputs.pci {
        let Some(port_node) = host.pci_device(&w.addr).and_then(|d| d.numa_node) else {
            continue;
        };
        let remote: Vec<&Lcore> = workers
            .iter()
            .copied()
            .filter(|l| node_of(l).is_some_and(|n| n != port_node))
            .collect();
        if remote.is_empty() {
            out.push(Finding::ok(
                T,
                format!("{} on NUMA node {port_node}, as its worker lcores", w.addr),
            ));
            continue;
        }
        let local = nodes
            .iter()
            .find(|(n, _)| *n == port_node)
            .map(|(_, c)| cpulist::format(c))
            .unwrap_or_default();
        out.push(Finding::warn(
            T,
            format!("{} is on NUMA node {port_node}, but worker {} on another node: packets cross nodes", w.addr, lcores_named(&remote)),
            format!("use worker lcores on node {port_node} (CPUs {local}), or put the NIC in a slot of the workers' node"),
        ));
    }
    out
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

    /// Four CPUs on two cores (0,2 and 1,3), two NUMA nodes (0-1, 2-3).
    fn cpus(root: &Path) {
        put(root, "sys/devices/system/cpu/online", "0-3\n");
        for (c, sib) in [(0, "0,2"), (1, "1,3"), (2, "0,2"), (3, "1,3")] {
            put(
                root,
                &format!("sys/devices/system/cpu/cpu{c}/topology/thread_siblings_list"),
                sib,
            );
        }
        put(root, "sys/devices/system/node/node0/cpulist", "0-1\n");
        put(root, "sys/devices/system/node/node1/cpulist", "2-3\n");
    }

    fn find<'a>(f: &'a [Finding], text: &str) -> &'a Finding {
        f.iter()
            .find(|f| f.what.contains(text))
            .unwrap_or_else(|| panic!("no {text:?} in {f:?}"))
    }

    #[test]
    fn offline_and_workerless() {
        let d = tempdir("lcores-offline");
        cpus(d.path());
        let f = run(d.path(), &["-l", "0,7"]);
        assert_eq!(
            find(&f, "CPU 7 not online (online: 0-3)").severity,
            Severity::Fail
        );
        let f = run(d.path(), &["-l", "1"]);
        assert_eq!(find(&f, "no worker lcore").severity, Severity::Fail);
        let f = run(d.path(), &["-l", "0-1", "--main-lcore", "3"]);
        assert_eq!(find(&f, "--main-lcore 3").severity, Severity::Fail);
    }

    #[test]
    fn isolation_from_sysfs_and_cmdline() {
        let d = tempdir("lcores-iso");
        cpus(d.path());
        let f = run(d.path(), &["-l", "0-1"]);
        let w = find(&f, "not isolated");
        assert_eq!(w.severity, Severity::Warn);
        assert!(
            w.fix
                .as_deref()
                .unwrap()
                .starts_with("boot with isolcpus=1 nohz_full=1"),
            "{w:?}"
        );
        put(d.path(), "proc/cmdline", "isolcpus=managed_irq,domain,1\n");
        let f = run(d.path(), &["-l", "0-1"]);
        assert_eq!(
            find(&f, "worker lcore 1 on isolated CPU 1").severity,
            Severity::Ok
        );
    }

    #[test]
    fn siblings_and_same_cpu_share_a_core() {
        let d = tempdir("lcores-ht");
        cpus(d.path());
        let f = run(d.path(), &["-l", "0,2"]);
        assert_eq!(
            find(&f, "sharing one physical core: 0 and 2").severity,
            Severity::Warn
        );
        let f = run(d.path(), &["--lcores", "0@0,1@1,2@1"]);
        assert!(
            find(&f, "sharing").what.contains("1 and 2 (CPUs 1 / 1)"),
            "{f:?}"
        );
        let f = run(d.path(), &["-l", "0-1"]);
        assert_eq!(
            find(&f, "lcores 0-1 each on a physical core of its own").severity,
            Severity::Ok
        );
    }

    #[test]
    fn numa_mismatch_warns() {
        let d = tempdir("lcores-numa");
        cpus(d.path());
        put(
            d.path(),
            "sys/bus/pci/devices/0000:81:00.0/numa_node",
            "1\n",
        );
        let f = run(d.path(), &["-l", "0-1", "-a", "81:00.0"]);
        let w = find(&f, "0000:81:00.0 is on NUMA node 1");
        assert_eq!(w.severity, Severity::Warn);
        assert!(w.fix.as_deref().unwrap().contains("(CPUs 2-3)"), "{w:?}");
        let f = run(d.path(), &["-l", "2-3", "-a", "81:00.0"]);
        assert_eq!(find(&f, "as its worker lcores").severity, Severity::Ok);
    }
}
