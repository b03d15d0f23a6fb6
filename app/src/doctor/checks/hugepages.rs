//! Hugepages: reserved, free and mounted, per size and per NUMA node, against
//! what `-m` / `--socket-mem` ask for (`--no-huge`: ordinary memory instead).

use crate::doctor::finding::Finding;
use crate::doctor::host::{Host, HugeMount, HugePool};
use crate::doctor::inputs::Inputs;

const T: &str = "hugepages";

pub fn check(host: &Host, inputs: &Inputs) -> Vec<Finding> {
    if inputs.eal.no_huge {
        return no_huge(host, inputs);
    }
    let pools = host.huge_pools();
    let mounts = host.huge_mounts();
    let huge_dir = inputs.eal.huge_dir.as_deref();
    let global: Vec<&HugePool> = pools.iter().filter(|p| p.node.is_none()).collect();
    let mounted = |size: u64| {
        mounts.iter().find(|m| {
            m.size_kb == size && huge_dir.is_none_or(|d| d.trim_end_matches('/') == m.dir)
        })
    };
    if global.iter().all(|p| p.reserved == 0) {
        return vec![Finding::fail(
            T,
            "no hugepages reserved (2 MiB: 0, 1 GiB: 0); EAL cannot allocate its memory",
            "echo 1024 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages \
             (2 GiB of 2 MiB pages; or boot with hugepages=1024), or --no-huge for tests",
        )];
    }
    let usable: Vec<&HugePool> = global
        .iter()
        .copied()
        .filter(|p| p.reserved > 0 && p.free > 0 && mounted(p.size_kb).is_some())
        .collect();
    let mut out = Vec::new();
    for p in global.iter().filter(|p| p.reserved > 0) {
        let nodes = per_node(&pools, p.size_kb);
        out.push(pool_finding(
            p,
            &nodes,
            mounted(p.size_kb),
            huge_dir,
            usable.is_empty(),
        ));
    }
    let free_mb: u64 = usable.iter().map(|p| p.free_mb()).sum();
    out.extend(memory_wanted(inputs, &pools, &usable, free_mb));
    out
}

/// `node0 1000 free, node1 24 free`, or empty without per-node facts.
fn per_node(pools: &[HugePool], size_kb: u64) -> String {
    let v: Vec<String> = pools
        .iter()
        .filter(|p| p.size_kb == size_kb)
        .filter_map(|p| Some(format!("node{} {} free", p.node?, p.free)))
        .collect();
    if v.is_empty() {
        String::new()
    } else {
        format!(" ({})", v.join(", "))
    }
}

/// One size's finding: usable, not mounted, or all in use. A problem fails
/// only when no other size is usable (`nothing_usable`).
fn pool_finding(
    p: &HugePool,
    nodes: &str,
    mount: Option<&HugeMount>,
    huge_dir: Option<&str>,
    nothing_usable: bool,
) -> Finding {
    let size = size_label(p.size_kb);
    let head = format!(
        "{size} pages: {} reserved, {} free{nodes}",
        p.reserved, p.free
    );
    let problem = |what: String, fix: String| match nothing_usable {
        true => Finding::fail(T, what, fix),
        false => Finding::warn(T, what, fix),
    };
    match mount {
        None => {
            let dir = huge_dir.unwrap_or("/dev/hugepages");
            let at = huge_dir.map(|d| format!(" at {d} (--huge-dir)")).unwrap_or_default();
            problem(
                format!("{head}, but no hugetlbfs mount{at} serves {size} pages"),
                format!("mkdir -p {dir} && mount -t hugetlbfs -o pagesize={} nodev {dir}", short(p.size_kb)),
            )
        }
        Some(m) if p.free == 0 => problem(
            format!("{head}, mounted at {}: every page is in use", m.dir),
            format!(
                "stop the other DPDK process using them, or if none runs remove its files: \
                 rm {}/*map_*; or reserve more in /sys/kernel/mm/hugepages/hugepages-{}kB/nr_hugepages",
                m.dir, p.size_kb
            ),
        ),
        Some(m) => Finding::ok(T, format!("{head}, mounted at {}", m.dir)),
    }
}

/// `-m` and `--socket-mem` against the free, mounted hugepages.
fn memory_wanted(
    inputs: &Inputs,
    pools: &[HugePool],
    usable: &[&HugePool],
    free_mb: u64,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let size_kb = usable.first().map_or(2048, |p| p.size_kb);
    if let Some(m) = inputs.eal.memory_mb {
        if m > free_mb {
            out.push(Finding::fail(
                T,
                format!("-m {m} asks for {m} MiB of hugepages, but only {free_mb} MiB are free and mounted"),
                more_pages("/sys/kernel/mm/hugepages", size_kb, usable, m - free_mb),
            ));
        }
    }
    for (node, &want) in inputs.eal.socket_mem_mb.iter().flatten().enumerate() {
        let node = node as u32;
        let on_node: Vec<&HugePool> = pools
            .iter()
            .filter(|p| p.node == Some(node) && usable.iter().any(|u| u.size_kb == p.size_kb))
            .collect();
        let have: u64 = on_node.iter().map(|p| p.free_mb()).sum();
        if want > have {
            out.push(Finding::fail(
                T,
                format!("--socket-mem asks for {want} MiB on node {node}, but node {node} has {have} MiB free and mounted"),
                more_pages(&format!("/sys/devices/system/node/node{node}/hugepages"), size_kb, &on_node, want - have),
            ));
        }
    }
    out
}

/// `echo N > DIR/hugepages-SIZEkB/nr_hugepages`, N = what is reserved plus `short_mb` more.
fn more_pages(dir: &str, size_kb: u64, pools: &[&HugePool], short_mb: u64) -> String {
    let reserved = pools
        .iter()
        .find(|p| p.size_kb == size_kb)
        .map_or(0, |p| p.reserved);
    let more = (short_mb * 1024).div_ceil(size_kb);
    format!(
        "echo {} > {dir}/hugepages-{size_kb}kB/nr_hugepages (or ask for less memory)",
        reserved + more
    )
}

/// `--no-huge`: no hugepage is needed, but `-m` must fit in ordinary memory,
/// and physical NICs want hugepages.
fn no_huge(host: &Host, inputs: &Inputs) -> Vec<Finding> {
    let mut out = vec![Finding::ok(
        T,
        "--no-huge: EAL takes ordinary memory, no hugepage is needed (fine for vdevs and tests)",
    )];
    let available_mb = host.meminfo("MemAvailable").map(|kb| kb / 1024);
    if let (Some(m), Some(avail)) = (inputs.eal.memory_mb, available_mb) {
        if m > avail {
            out.push(Finding::fail(
                T,
                format!(
                    "-m {m} asks for {m} MiB, but only {avail} MiB are available (MemAvailable)"
                ),
                format!("lower -m to at most {avail}"),
            ));
        }
    }
    if !inputs.pci.is_empty() {
        out.push(Finding::warn(
            T,
            "--no-huge with PCI devices: DMA from a NIC into 4 KiB pages is slow and some PMDs refuse it",
            "drop --no-huge and reserve hugepages: echo 1024 > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages",
        ));
    }
    out
}

fn size_label(kb: u64) -> String {
    match kb {
        kb if kb % (1024 * 1024) == 0 => format!("{} GiB", kb / (1024 * 1024)),
        kb if kb % 1024 == 0 => format!("{} MiB", kb / 1024),
        kb => format!("{kb} kB"),
    }
}

/// `2M`, `1G`: the `pagesize=` form.
fn short(kb: u64) -> String {
    size_label(kb)
        .replace(" GiB", "G")
        .replace(" MiB", "M")
        .replace(" kB", "K")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::checks::tree::{put, tempdir};
    use crate::doctor::eal_args;
    use crate::doctor::finding::Severity;

    fn run(root: &std::path::Path, args: &[&str]) -> Vec<Finding> {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        check(&Host::new(root), &Inputs::new(eal_args::parse(&args), None))
    }

    fn pages(root: &std::path::Path, size: &str, nr: u64, free: u64) {
        let d = format!("sys/kernel/mm/hugepages/hugepages-{size}kB");
        put(root, &format!("{d}/nr_hugepages"), &format!("{nr}\n"));
        put(root, &format!("{d}/free_hugepages"), &format!("{free}\n"));
    }

    #[test]
    fn mounted_2m_pages_are_ok_and_1g_unmounted_warns() {
        let d = tempdir("huge-ok");
        pages(d.path(), "2048", 1024, 1000);
        pages(d.path(), "1048576", 2, 2);
        put(
            d.path(),
            "proc/mounts",
            "hugetlbfs /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\n",
        );
        let f = run(d.path(), &["-m", "1024"]);
        assert_eq!(f.len(), 2, "{f:?}");
        let one_g = f.iter().find(|f| f.what.starts_with("1 GiB")).unwrap();
        assert_eq!(one_g.severity, Severity::Warn, "{f:?}");
        assert!(one_g.fix.as_deref().unwrap().contains("pagesize=1G"));
        assert!(f.iter().any(|f| f.severity == Severity::Ok
            && f.what.contains("2 MiB pages: 1024 reserved, 1000 free")));
    }

    #[test]
    fn too_much_memory_asked_fails_with_a_page_count() {
        let d = tempdir("huge-short");
        pages(d.path(), "2048", 256, 256);
        put(
            d.path(),
            "proc/mounts",
            "nodev /mnt/huge hugetlbfs rw 0 0\n",
        );
        let f = run(d.path(), &["-m", "1024"]);
        let fail = f
            .iter()
            .find(|f| f.severity == Severity::Fail)
            .expect("a fail");
        assert!(fail.what.contains("only 512 MiB are free"), "{fail:?}");
        assert!(
            fail.fix.as_deref().unwrap().starts_with("echo 512 > "),
            "{fail:?}"
        );
    }

    #[test]
    fn socket_mem_is_checked_per_node() {
        let d = tempdir("huge-node");
        pages(d.path(), "2048", 512, 512);
        for (n, free) in [(0, 512), (1, 0)] {
            let p = format!("sys/devices/system/node/node{n}/hugepages/hugepages-2048kB");
            put(d.path(), &format!("{p}/nr_hugepages"), &format!("{free}\n"));
            put(
                d.path(),
                &format!("{p}/free_hugepages"),
                &format!("{free}\n"),
            );
        }
        put(
            d.path(),
            "proc/mounts",
            "nodev /dev/hugepages hugetlbfs rw,pagesize=2M 0 0\n",
        );
        let f = run(d.path(), &["--socket-mem", "512,256"]);
        let fails: Vec<&Finding> = f.iter().filter(|f| f.severity == Severity::Fail).collect();
        assert_eq!(fails.len(), 1, "{f:?}");
        assert!(
            fails[0]
                .what
                .contains("256 MiB on node 1, but node 1 has 0 MiB"),
            "{f:?}"
        );
    }

    #[test]
    fn no_huge_needs_no_pages_but_memory_must_fit() {
        let d = tempdir("huge-none");
        put(
            d.path(),
            "proc/meminfo",
            "MemTotal: 2048000 kB\nMemAvailable: 1024000 kB\n",
        );
        let f = run(d.path(), &["--no-huge", "-m", "512"]);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].severity, Severity::Ok);
        let f = run(d.path(), &["--no-huge", "-m", "4096"]);
        assert!(f[1].what.contains("only 1000 MiB are available"), "{f:?}");
        let f = run(d.path(), &[]);
        assert!(f[0].what.starts_with("no hugepages reserved"), "{f:?}");
    }
}
