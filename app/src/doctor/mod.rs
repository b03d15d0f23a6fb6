//! `fastpath doctor [EAL args] [-- --config FILE] [--json]`: a preflight check.
//!
//! Before the datapath starts, say what on this host will stop it or slow it,
//! and how to fix each: hugepages, IOMMU and vfio, the PCI devices and their
//! drivers, the lcores, the PMDs and mempool ops. It only reads `/sys` and
//! `/proc` (under `--root` / `FASTPATH_DOCTOR_ROOT`, for tests) and never
//! starts EAL, so it takes no hugepage and no device.

pub mod catalogue;
pub mod checks;
pub mod cpulist;
pub mod eal_args;
pub mod finding;
pub mod host;
mod host_pci;
pub mod inputs;

use crate::cli::AppArgs;
use catalogue::Catalogue;
use clap::Parser;
use finding::{Finding, Severity};
use host::Host;
use inputs::Inputs;
use serde::Serialize;
use std::io::Write;
use std::path::PathBuf;

/// The environment variable that moves the root tree doctor reads.
pub const ROOT_ENV: &str = "FASTPATH_DOCTOR_ROOT";

/// Options after `--`: fastpath's own (so a real command line can be checked
/// as is; `--config` is read) and doctor's.
#[derive(Parser, Debug)]
#[command(
    name = "fastpath doctor",
    about = "Check this host before starting fastpath: what will stop it or slow it, and the fix for each",
    override_usage = "fastpath doctor [EAL options] [-- [--config FILE] [--json]]",
    after_help = "Give the EAL options and `--config` of the command you mean to run, e.g.\n  \
        fastpath doctor -l 0-2 -a 0000:01:00.0 -a 0000:01:00.1 -- --config router.toml\n\
        Exit status: 0 when nothing blocks a start (warnings allowed), 1 when a check fails."
)]
struct DoctorArgs {
    /// Print the findings as JSON, for scripts.
    #[arg(long)]
    json: bool,
    /// Read /sys and /proc under DIR instead of / (tests).
    #[arg(long, value_name = "DIR", hide = true)]
    root: Option<PathBuf>,
    #[command(
        flatten,
        next_help_heading = "fastpath's options (accepted; doctor reads --config)"
    )]
    app: AppArgs,
}

/// `--json` output: whether any check failed, then every finding in order.
#[derive(Serialize)]
struct JsonReport<'a> {
    fail: bool,
    findings: &'a [Finding],
}

/// Runs doctor on `args` (what follows `fastpath doctor`); returns the exit status.
pub fn main(args: &[String]) -> i32 {
    let (eal, rest) = match args.iter().position(|a| a == "--") {
        Some(i) => (&args[..i], &args[i + 1..]),
        None => (args, &args[args.len()..]),
    };
    // `fastpath doctor --help` and `--json` also work before `--`.
    let (doctor_opts, eal): (Vec<String>, Vec<String>) = eal
        .iter()
        .cloned()
        .partition(|a| matches!(a.as_str(), "--help" | "-h" | "--json"));
    let argv = std::iter::once("fastpath doctor".to_string())
        .chain(doctor_opts)
        .chain(rest.iter().cloned());
    let opts = match DoctorArgs::try_parse_from(argv) {
        Ok(o) => o,
        Err(e) => e.exit(),
    };
    let root = opts
        .root
        .or_else(|| std::env::var_os(ROOT_ENV).map(PathBuf::from))
        .unwrap_or_else(|| PathBuf::from("/"));
    let findings = diagnose(&Host::new(root), &eal, &opts.app, &Catalogue::load());
    let text = if opts.json {
        let report = JsonReport {
            fail: finding::worst(&findings) == Severity::Fail,
            findings: &findings,
        };
        serde_json::to_string_pretty(&report).unwrap_or_default() + "\n"
    } else {
        finding::to_text(&findings)
    };
    // A closed pipe (`| head`) is not an error worth a panic.
    let _ = std::io::stdout().lock().write_all(text.as_bytes());
    exit_status(&findings)
}

/// Every finding for these EAL arguments and fastpath options (its
/// `--config`, the FIB sizes) on this host.
pub fn diagnose(host: &Host, eal: &[String], app: &AppArgs, catalogue: &Catalogue) -> Vec<Finding> {
    let inputs = Inputs::new(eal_args::parse(eal), app.config.as_deref())
        .with_fib_routes(app.fib_routes, app.fib6_routes);
    checks::run_all(host, &inputs, catalogue)
}

/// 0 when nothing blocks a start, 1 when any finding is a fail.
pub fn exit_status(findings: &[Finding]) -> i32 {
    i32::from(finding::worst(findings) == Severity::Fail)
}
