//! The command line itself: EAL options that EAL would refuse, and the config file.

use crate::doctor::cpulist;
use crate::doctor::finding::Finding;
use crate::doctor::inputs::Inputs;

pub fn check(inputs: &Inputs) -> Vec<Finding> {
    let eal = &inputs.eal;
    let mut out = vec![Finding::ok("eal", summary(inputs))];
    for e in &eal.errors {
        out.push(Finding::fail(
            "eal",
            format!("EAL argument {e}"),
            "give the value in EAL's form (`dpdk-testpmd -h` lists them), e.g. -l 0-1, -m 512",
        ));
    }
    for r in &eal.removed {
        out.push(Finding::fail(
            "eal",
            format!("`{r}`: DPDK 22.11's EAL has no -w option and stops on it"),
            "use -a (--allow) for the device allow list, e.g. -a 0000:01:00.0",
        ));
    }
    for u in &eal.unknown {
        out.push(Finding::warn(
            "eal",
            format!(
                "`{u}` is not an EAL option doctor knows; EAL stops on options it does not know"
            ),
            "check it against `dpdk-testpmd -h`; fastpath's own options go after `--`",
        ));
    }
    if eal.memory_mb.is_some() && eal.socket_mem_mb.is_some() {
        out.push(Finding::fail(
            "eal",
            "-m and --socket-mem are both given; EAL refuses the pair",
            "keep one: -m MB for a total, --socket-mem MB,MB for per-node amounts",
        ));
    }
    if eal.no_huge && eal.socket_mem_mb.is_some() {
        out.push(Finding::fail(
            "eal",
            "--socket-mem with --no-huge; EAL refuses the pair",
            "use -m MB with --no-huge, or drop --no-huge to use hugepages per node",
        ));
    }
    if let Some(e) = &inputs.config_error {
        out.push(Finding::fail(
            "config",
            e.clone(),
            "correct the file (examples/demo-router.toml shows every section)",
        ));
    }
    if let Some(c) = &inputs.config {
        out.push(Finding::ok(
            "config",
            format!(
                "{}: {} ports, {} routes, {} neighbours",
                c.path.display(),
                c.ports.len(),
                c.routes.len(),
                c.neighbours.len()
            ),
        ));
    }
    out
}

/// What the EAL arguments ask for, in one line.
fn summary(inputs: &Inputs) -> String {
    let eal = &inputs.eal;
    let ids: Vec<u32> = eal.lcores.iter().map(|l| l.id).collect();
    let lcores = match eal.main() {
        Some(main) => format!("lcores {} (main {main})", cpulist::format(&ids)),
        None => "every CPU as an lcore (no -l)".to_string(),
    };
    let memory = match (eal.memory_mb, &eal.socket_mem_mb) {
        (Some(m), _) => format!(", -m {m}"),
        (None, Some(s)) => format!(", --socket-mem {s:?}"),
        _ => String::new(),
    };
    let huge = if eal.no_huge { ", --no-huge" } else { "" };
    let prefix = eal
        .file_prefix
        .as_deref()
        .map(|p| format!(", --file-prefix {p}"))
        .unwrap_or_default();
    format!(
        "EAL arguments: {lcores}, {} PCI device(s), {} vdev(s){memory}{huge}{prefix}",
        inputs.pci.len(),
        eal.vdevs.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::eal_args;
    use crate::doctor::finding::Severity;

    fn inputs(args: &[&str]) -> Inputs {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        Inputs::new(eal_args::parse(&args), None)
    }

    #[test]
    fn refused_pairs_fail() {
        let f = check(&inputs(&["-m", "512", "--socket-mem", "512"]));
        assert!(f
            .iter()
            .any(|f| f.severity == Severity::Fail && f.what.contains("-m and --socket-mem")));
        let f = check(&inputs(&["--no-huge", "--socket-mem", "512"]));
        assert!(f
            .iter()
            .any(|f| f.what.contains("--socket-mem with --no-huge")));
        let f = check(&inputs(&[
            "-l",
            "0-1",
            "--no-huge",
            "-m",
            "512",
            "--file-prefix",
            "t",
        ]));
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(
            f[0].what,
            "EAL arguments: lcores 0-1 (main 0), 0 PCI device(s), 0 vdev(s), -m 512, --no-huge, --file-prefix t"
        );
    }

    #[test]
    fn removed_unknown_and_bad_values() {
        let f = &check(&inputs(&["-w", "01:00.0", "--frob", "-l", "z"]))[1..];
        let sev: Vec<Severity> = f.iter().map(|f| f.severity).collect();
        assert_eq!(
            sev,
            [Severity::Fail, Severity::Fail, Severity::Warn],
            "{f:?}"
        );
        assert!(f[0].what.contains("-l z"), "{f:?}");
        assert!(f[1].fix.as_deref().unwrap().contains("-a 0000:01:00.0"));
    }

    #[test]
    fn config_error_is_a_fail() {
        let eal = eal_args::parse(&[]);
        let i = Inputs::new(
            eal,
            Some(std::path::Path::new("/nonexistent/doctor-r.toml")),
        );
        let f = &check(&i)[1..];
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].topic, "config");
        assert!(f[0].what.contains("cannot read the config file"), "{f:?}");
    }
}
