//! The few EAL options that decide whether fastpath can start, read from the
//! EAL part of the command line without calling `rte_eal_init`.
//!
//! Everything else is skipped, with its value where it takes one. An option
//! EAL 22.11 does not know is kept in `unknown`, since EAL would stop on it.

use super::cpulist;

/// One lcore and the CPUs its thread may run on (`--lcores 1@3`: lcore 1 on CPU 3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lcore {
    pub id: u32,
    pub cpus: Vec<u32>,
}

/// What doctor needs from the EAL arguments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EalArgs {
    /// `-l`, `--lcores` or `-c`, in the order given; empty: not given (EAL takes every CPU).
    pub lcores: Vec<Lcore>,
    /// `--main-lcore`.
    pub main_lcore: Option<u32>,
    /// `-a` / `--allow` / `-w` devices, without their `,key=value` device arguments.
    pub allow: Vec<String>,
    /// `--vdev` device names, without their device arguments.
    pub vdevs: Vec<String>,
    /// `--vdev` values as given: the name and its device arguments.
    pub vdev_specs: Vec<String>,
    pub no_huge: bool,
    pub no_pci: bool,
    /// `-m`, in MiB.
    pub memory_mb: Option<u64>,
    /// `--socket-mem`, MiB per NUMA node.
    pub socket_mem_mb: Option<Vec<u64>>,
    pub file_prefix: Option<String>,
    pub huge_dir: Option<String>,
    pub mbuf_pool_ops: Option<String>,
    /// Options EAL 22.11 no longer has, as given (`-w`).
    pub removed: Vec<String>,
    /// Options doctor does not know (EAL would refuse them if it does not either).
    pub unknown: Vec<String>,
    /// Values that do not parse, one message each.
    pub errors: Vec<String>,
}

/// EAL options without a value.
const FLAGS: &[&str] = &[
    "--no-huge",
    "--no-pci",
    "--no-hpet",
    "--no-shconf",
    "--in-memory",
    "--legacy-mem",
    "--single-file-segments",
    "--match-allocations",
    "--create-uio-dev",
    "--vmware-tsc-map",
    "--no-telemetry",
    "--telemetry",
    "--huge-worker-stack",
    "--huge-unlink",
    "-v",
    "-h",
    "--help",
];

/// EAL options with a value that doctor skips.
const WITH_VALUE: &[&str] = &[
    "-n",
    "-r",
    "-b",
    "--block",
    "-d",
    "-s",
    "-S",
    "--proc-type",
    "--syslog",
    "--log-level",
    "--trace",
    "--trace-dir",
    "--trace-bufsz",
    "--trace-mode",
    "--base-virtaddr",
    "--vfio-intr",
    "--vfio-vf-token",
    "--iova-mode",
    "--socket-limit",
    "--force-max-simd-bitwidth",
];

/// The EAL options that doctor reads, each with a value.
const READ: &[&str] = &[
    "-l",
    "--lcores",
    "-c",
    "--main-lcore",
    "-a",
    "--allow",
    "-w",
    "--vdev",
    "-m",
    "--socket-mem",
    "--file-prefix",
    "--huge-dir",
    "--mbuf-pool-ops-name",
];

/// Parses EAL arguments (without the program name and without `--` and what follows).
pub fn parse(args: &[String]) -> EalArgs {
    let mut out = EalArgs::default();
    let mut i = 0;
    while i < args.len() {
        let (name, inline) = split_option(&args[i]);
        i += 1;
        let takes_value = READ.contains(&name.as_str()) || WITH_VALUE.contains(&name.as_str());
        if !takes_value {
            if !FLAGS.contains(&name.as_str()) {
                out.unknown.push(args[i - 1].clone());
            }
            out.flag(&name);
            continue;
        }
        let value = match inline {
            Some(v) => v,
            None if i < args.len() => {
                i += 1;
                args[i - 1].clone()
            }
            None => {
                out.errors.push(format!("{name} needs a value"));
                continue;
            }
        };
        out.option(&name, &value);
    }
    out
}

/// `--opt=value` → (`--opt`, value); `-l0-1` → (`-l`, `0-1`); `-x` → (`-x`, none).
fn split_option(arg: &str) -> (String, Option<String>) {
    if let Some(long) = arg.strip_prefix("--") {
        return match long.split_once('=') {
            Some((n, v)) => (format!("--{n}"), Some(v.to_string())),
            None => (arg.to_string(), None),
        };
    }
    if arg.starts_with('-') && arg.len() > 2 && arg.is_char_boundary(2) {
        let (short, rest) = arg.split_at(2);
        if READ.contains(&short) || WITH_VALUE.contains(&short) {
            return (short.to_string(), Some(rest.to_string()));
        }
    }
    (arg.to_string(), None)
}

impl EalArgs {
    fn flag(&mut self, name: &str) {
        match name {
            "--no-huge" => self.no_huge = true,
            "--no-pci" => self.no_pci = true,
            _ => {}
        }
    }

    fn option(&mut self, name: &str, value: &str) {
        let device = value.split(',').next().unwrap_or("").trim().to_string();
        let text = Some(value.to_string());
        let result = match name {
            "-l" => self.set_lcores(cpulist::parse(value).map(one_to_one)),
            "-c" => self.set_lcores(cpulist::parse_mask(value).map(one_to_one)),
            "--lcores" => self.set_lcores(parse_lcore_map(value)),
            "--main-lcore" => parse_num(value).map(|n| self.main_lcore = Some(n as u32)),
            "-a" | "--allow" => {
                self.allow.push(device);
                Ok(())
            }
            "-w" => {
                self.removed.push(format!("-w {value}"));
                self.allow.push(device);
                Ok(())
            }
            "--vdev" => {
                self.vdevs.push(device);
                self.vdev_specs.push(value.to_string());
                Ok(())
            }
            "-m" => parse_num(value).map(|n| self.memory_mb = Some(n)),
            "--socket-mem" => parse_socket_mem(value).map(|v| self.socket_mem_mb = Some(v)),
            "--file-prefix" => {
                self.file_prefix = text;
                Ok(())
            }
            "--huge-dir" => {
                self.huge_dir = text;
                Ok(())
            }
            "--mbuf-pool-ops-name" => {
                self.mbuf_pool_ops = text;
                Ok(())
            }
            _ => Ok(()),
        };
        if let Err(e) = result {
            self.errors.push(format!("{name} {value}: {e}"));
        }
    }

    fn set_lcores(&mut self, lcores: Result<Vec<Lcore>, String>) -> Result<(), String> {
        let lcores = lcores?;
        if lcores.is_empty() {
            return Err("no lcores".into());
        }
        self.lcores = lcores;
        Ok(())
    }

    /// The main lcore: `--main-lcore`, else the lowest lcore id (as EAL picks it).
    pub fn main(&self) -> Option<u32> {
        self.main_lcore
            .or_else(|| self.lcores.iter().map(|l| l.id).min())
    }

    /// The worker lcores: every lcore but the main one.
    pub fn workers(&self) -> Vec<&Lcore> {
        let main = self.main();
        self.lcores.iter().filter(|l| Some(l.id) != main).collect()
    }
}

fn one_to_one(ids: Vec<u32>) -> Vec<Lcore> {
    ids.into_iter()
        .map(|id| Lcore { id, cpus: vec![id] })
        .collect()
}

fn parse_num(s: &str) -> Result<u64, String> {
    s.trim()
        .parse()
        .map_err(|_| format!("`{s}` is not a number"))
}

fn parse_socket_mem(s: &str) -> Result<Vec<u64>, String> {
    s.split(',')
        .map(|p| {
            if p.trim().is_empty() {
                Ok(0)
            } else {
                parse_num(p)
            }
        })
        .collect()
}

/// `--lcores` map: `1@3,(2-3)@(4-5),6,7-8`. Without `@`, a bare number or
/// range runs each lcore on the CPU of its number; a `(group)` runs each of
/// its lcores on the whole group (as EAL does).
pub fn parse_lcore_map(s: &str) -> Result<Vec<Lcore>, String> {
    let mut out = Vec::new();
    for element in split_top_level(s) {
        let (lcores, cpus) = match element.split_once('@') {
            Some((l, c)) => (l, Some(c)),
            None => (element.as_str(), None),
        };
        let ids = cpulist::parse(lcores.trim_matches(|c| c == '(' || c == ')'))?;
        let group = lcores.starts_with('(');
        for id in &ids {
            let on = match cpus {
                Some(c) => cpulist::parse(c.trim_matches(|c| c == '(' || c == ')'))?,
                None if group => ids.clone(),
                None => vec![*id],
            };
            out.push(Lcore { id: *id, cpus: on });
        }
    }
    Ok(out)
}

/// Splits at the commas outside parentheses.
fn split_top_level(s: &str) -> Vec<String> {
    let (mut parts, mut cur, mut depth) = (Vec::new(), String::new(), 0);
    for c in s.trim().chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    parts.push(cur);
    parts.into_iter().filter(|p| !p.is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(args: &[&str]) -> EalArgs {
        parse(&args.iter().map(|s| s.to_string()).collect::<Vec<_>>())
    }

    #[test]
    fn lcore_list_mask_and_main() {
        let a = p(&["-l", "2-3,5"]);
        assert_eq!(a.lcores.iter().map(|l| l.id).collect::<Vec<_>>(), [2, 3, 5]);
        assert_eq!(a.main(), Some(2));
        assert_eq!(a.workers().len(), 2);
        assert_eq!(
            p(&["-c", "0x6"]).lcores[1],
            Lcore {
                id: 2,
                cpus: vec![2]
            }
        );
        assert_eq!(p(&["-l0-1", "--main-lcore=1"]).main(), Some(1));
        assert!(!p(&["-l", "x"]).errors.is_empty());
    }

    #[test]
    fn lcore_map() {
        let a = p(&["--lcores", "0@1,(2-3)@(4-5),6"]);
        assert_eq!(
            a.lcores[0],
            Lcore {
                id: 0,
                cpus: vec![1]
            }
        );
        assert_eq!(
            a.lcores[1],
            Lcore {
                id: 2,
                cpus: vec![4, 5]
            }
        );
        assert_eq!(
            a.lcores[2],
            Lcore {
                id: 3,
                cpus: vec![4, 5]
            }
        );
        assert_eq!(
            a.lcores[3],
            Lcore {
                id: 6,
                cpus: vec![6]
            }
        );
        let g = parse_lcore_map("(0-1)").unwrap();
        assert_eq!(g[1].cpus, vec![0, 1]);
        assert_eq!(parse_lcore_map("0-1").unwrap()[1].cpus, vec![1]);
    }

    #[test]
    fn devices_memory_and_flags() {
        let a = p(&[
            "-a",
            "0000:01:00.0,rxq=2",
            "--allow=02:00.1",
            "--vdev",
            "net_null0,size=64",
            "--no-huge",
            "-m",
            "512",
            "--file-prefix",
            "fp1",
            "-n",
            "4",
            "--socket-mem=1024,0",
        ]);
        assert_eq!(a.allow, ["0000:01:00.0", "02:00.1"]);
        assert_eq!(a.vdevs, ["net_null0"]);
        assert_eq!(a.vdev_specs, ["net_null0,size=64"]);
        assert!(a.no_huge && !a.no_pci);
        assert_eq!(a.memory_mb, Some(512));
        assert_eq!(a.socket_mem_mb, Some(vec![1024, 0]));
        assert_eq!(a.file_prefix.as_deref(), Some("fp1"));
        assert!(a.unknown.is_empty() && a.errors.is_empty(), "{a:?}");
    }

    #[test]
    fn skipped_values_are_not_options() {
        // `-n 4` and `--log-level lib.eal:debug` take values; `--no-pci` does not.
        let a = p(&[
            "-n",
            "4",
            "--log-level",
            "lib.eal:debug",
            "--no-pci",
            "-l",
            "0",
        ]);
        assert!(a.no_pci);
        assert_eq!(a.lcores.len(), 1);
        assert!(a.unknown.is_empty(), "{a:?}");
    }

    #[test]
    fn removed_and_unknown_options_are_kept() {
        let a = p(&["-w", "0000:01:00.0", "--frobnicate"]);
        assert_eq!(a.allow, ["0000:01:00.0"]);
        assert_eq!(a.removed, ["-w 0000:01:00.0"]);
        assert_eq!(a.unknown, ["--frobnicate"]);
        assert_eq!(p(&["-m"]).errors, ["-m needs a value"]);
    }
}
