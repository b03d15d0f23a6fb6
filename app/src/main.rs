//! `fastpath [EAL options] -- [options]`; `fastpath doctor ...` checks the host first, `fastpath health` asks a running one,
//! `fastpath ctl ...` changes it.

#![forbid(unsafe_code)]

use clap::Parser;
use fastpath::cli::{split_args, AppArgs};
use fastpath::runtime::run;

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    // `fastpath doctor ...`: a preflight check; it never starts EAL.
    if argv.get(1).map(String::as_str) == Some("doctor") {
        std::process::exit(fastpath::doctor::main(&argv[2..]));
    }
    // `fastpath health ...`: ask a running fastpath through DPDK telemetry.
    if argv.get(1).map(String::as_str) == Some("health") {
        std::process::exit(fastpath::health::main(&argv[1..]));
    }
    // `fastpath ctl ...`: change or ask a running one through its control socket.
    if argv.get(1).map(String::as_str) == Some("ctl") {
        std::process::exit(fastpath::ctl::client::main(&argv[1..]));
    }
    let (eal_args, app_args) = split_args(argv.clone());
    // `fastpath --help` (no `--`): the app's help, not DPDK's EAL usage.
    if eal_args.len() == 2 && matches!(eal_args[1].as_str(), "--help" | "--version" | "-V") {
        let _ = AppArgs::try_parse_from([eal_args[0].as_str(), eal_args[1].as_str()])
            .map_err(|e| e.exit());
        return;
    }
    let args = match AppArgs::try_parse_from(&app_args) {
        Ok(a) => a,
        Err(e) => e.exit(),
    };
    let result = run(&argv, &args);
    let report = match &result {
        Ok(r) => Some(r),
        Err(e) => e.report(),
    };
    if let Some(report) = report {
        print!("{}", report.to_text());
        if let Some(path) = &args.stats_json {
            if let Err(e) = write_json(path, report) {
                eprintln!("error: writing statistics to {}: {e}", path.display());
                std::process::exit(1);
            }
        }
    }
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(e.exit_code());
    }
}

fn write_json(path: &std::path::Path, report: &fastpath::report::Report) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(report).map_err(std::io::Error::other)?;
    std::fs::write(path, text + "\n")
}
