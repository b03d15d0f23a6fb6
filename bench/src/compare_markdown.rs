//! The `compare` section of `bench/RESULTS.md`: one row per setup, fastpath
//! beside testpmd io on the same pcap, then the rounds, the commands, the
//! reference testpmd engines and the cycles per stage.

use crate::compare::{RowResult, StageCycles, Summary};
use crate::rates;
use std::fmt::Write as _;

fn min_max(v: &[f64]) -> (f64, f64) {
    (
        v.iter().copied().fold(f64::INFINITY, f64::min),
        v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
    )
}

/// `22.06 (21.65–22.63)`.
fn mpps(v: &[f64]) -> String {
    match rates::median(v) {
        Some(m) => {
            let (lo, hi) = min_max(v);
            format!("{:.2} ({:.2}–{:.2})", m / 1e6, lo / 1e6, hi / 1e6)
        }
        None => "n/a".into(),
    }
}

fn ratio_cell(r: &RowResult) -> String {
    match r.median_ratio() {
        Some(x) => {
            let (lo, hi) = min_max(&r.ratios());
            format!("**{x:.3}** ({lo:.3}–{hi:.3})")
        }
        None if r.error.is_some() => "failed".into(),
        None => "n/a".into(),
    }
}

/// A markdown section for `bench/RESULTS.md`; `target` is the first row's.
pub fn markdown(
    title: &str,
    s: &Summary,
    target: Option<f64>,
    machine: &str,
    command: &str,
) -> String {
    let mut m = String::new();
    let _ = writeln!(m, "## {title}\n");
    let _ = writeln!(m, "{machine}\n");
    let _ = writeln!(m, "```\n{command}\n```\n");
    let _ = writeln!(
        m,
        "Mpps: median over {} round(s) (min–max); every round runs each row's pair once, \
         which tool goes first alternating by round and row. The ratio is the median of the \
         per-round ratios (min–max). Every row runs with fastpath's default settings.\n",
        s.rounds
    );
    let _ = writeln!(
        m,
        "| row | dpdk-testpmd io Mpps | fastpath Mpps | ratio to testpmd io | setup |"
    );
    let _ = writeln!(m, "|---|---:|---:|---:|---|");
    for r in &s.rows {
        let tp: Vec<f64> = r.rounds.iter().map(|x| x.testpmd_pps).collect();
        let fp: Vec<f64> = r.rounds.iter().map(|x| x.fastpath_pps).collect();
        let _ = writeln!(
            m,
            "| {} | {} | {} | {} | {} |",
            r.row.label(),
            mpps(&tp),
            mpps(&fp),
            ratio_cell(r),
            r.row.note()
        );
    }
    if let (Some(t), Some(first)) = (target, s.rows.first()) {
        let verdict = match first.median_ratio() {
            Some(x) if x >= t => "met",
            Some(_) => "not met",
            None => "not measured",
        };
        let _ = writeln!(
            m,
            "\nTarget: {} ratio >= {t:.2}: **{verdict}**.",
            first.row.label()
        );
    }
    write_failures(&mut m, s);
    write_rounds(&mut m, s);
    let _ = writeln!(
        m,
        "\nEach run: rates read every second from the port counters (testpmd's `Tx-pps`, \
         fastpath's `tx-pps` of port 1), first second dropped, median of the rest. testpmd \
         is stopped after as many samples as fastpath's `--duration`, so loading a large \
         pcap is not measured. net_pcap's `infinite_rx` holds every frame of the pcap in an \
         mbuf for the whole run: the pool (`--mbufs`, `--total-num-mbufs`) and EAL memory \
         (`-m`) grow with the pcap. The pcaps are written once into a cache folder \
         (`$CACHE`, `--cache-dir`) and reused. Commands of each row (testpmd, then \
         fastpath):\n"
    );
    let _ = writeln!(m, "```");
    for r in &s.rows {
        let _ = writeln!(
            m,
            "# {}\n{}\n{}",
            r.row.label(),
            r.testpmd_cmd,
            r.fastpath_cmd
        );
    }
    let _ = writeln!(m, "```");
    write_reference(&mut m, s);
    write_stage_cycles(&mut m, s);
    let lanes: Vec<String> = s
        .rows
        .iter()
        .filter_map(|r| Some(format!("{}: {:.1} %", r.row.label(), 100.0 * r.fast_lane?)))
        .collect();
    if !lanes.is_empty() {
        let _ = writeln!(
            m,
            "\nShare of received packets the fast lane routed (fastpath's `fast lane:` \
             line), least over the rounds: {}.",
            lanes.join("; ")
        );
    }
    m
}

fn write_failures(m: &mut String, s: &Summary) {
    let errors = s.errors();
    if errors.is_empty() {
        return;
    }
    let _ = writeln!(m, "\nFailed rows:\n");
    for (row, e) in errors {
        let first = e
            .lines()
            .find(|l| l.contains("rror"))
            .or_else(|| e.lines().next())
            .unwrap_or("");
        let _ = writeln!(m, "- {}: {}", row.label(), first.trim());
    }
}

fn write_rounds(m: &mut String, s: &Summary) {
    let _ = writeln!(m, "\nRounds:\n");
    let _ = writeln!(
        m,
        "| round | row | testpmd io Mpps | fastpath Mpps | ratio |"
    );
    let _ = writeln!(m, "|---:|---|---:|---:|---:|");
    for i in 0..s.rounds {
        for r in &s.rows {
            if let Some(x) = r.rounds.get(i) {
                let _ = writeln!(
                    m,
                    "| {} | {} | {:.2} | {:.2} | {:.3} |",
                    i + 1,
                    r.row.kind.id(),
                    x.testpmd_pps / 1e6,
                    x.fastpath_pps / 1e6,
                    x.fastpath_pps / x.testpmd_pps
                );
            }
        }
    }
}

fn write_reference(m: &mut String, s: &Summary) {
    let Some(first) = s.rows.first() else {
        return;
    };
    if s.reference.is_empty() {
        return;
    }
    let tp: Vec<f64> = first.rounds.iter().map(|x| x.testpmd_pps).collect();
    let fp: Vec<f64> = first.rounds.iter().map(|x| x.fastpath_pps).collect();
    let io = rates::median(&tp).unwrap_or(0.0);
    let _ = writeln!(
        m,
        "\nFor scale, other `dpdk-testpmd` engines on the first row's setup (median of {} \
         run(s); the same command with another `--forward-mode`):\n",
        s.stage_runs.max(1)
    );
    let _ = writeln!(
        m,
        "| testpmd engine | what it does per packet | Mpps | ratio to io |"
    );
    let _ = writeln!(m, "|---|---|---:|---:|");
    for (mode, pps) in &s.reference {
        let what = match mode.as_str() {
            "macswap" => "swap the Ethernet addresses",
            "5tswap" => "swap MACs, IPs and L4 ports",
            "csum" => "parse L2-L4, check and fill checksums in software",
            _ => "",
        };
        let _ = writeln!(
            m,
            "| {mode} | {what} | {:.2} | {:.3} |",
            pps / 1e6,
            if io > 0.0 { pps / io } else { 0.0 }
        );
    }
    let _ = writeln!(
        m,
        "| *fastpath router* | *l2, IPv4 checks with checksum, LPM, TTL, neighbour header* | \
         *{:.2}* | *{:.3}* |",
        rates::median(&fp).unwrap_or(0.0) / 1e6,
        first.median_ratio().unwrap_or(0.0)
    );
}

/// Stage names in the order the rows report them (fastpath's own names).
fn stage_names(rows: &[(&RowResult, &StageCycles)]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for (_, st) in rows {
        for (n, _) in st.iter() {
            if !names.contains(n) {
                names.push(n.clone());
            }
        }
    }
    names
}

fn write_stage_cycles(m: &mut String, s: &Summary) {
    let rows: Vec<(&RowResult, &StageCycles)> = s
        .rows
        .iter()
        .filter_map(|r| Some((r, r.stage_cycles.as_ref()?)))
        .collect();
    if rows.is_empty() {
        return;
    }
    let names = stage_names(&rows);
    let _ = writeln!(
        m,
        "\nCycles per packet by stage (fastpath's `--stage-cycles`: the TSC read around each \
         stage once per burst, divided by the packets of the burst, over every worker; stage \
         names and order as fastpath reports them; median of {} run(s) per row):\n",
        s.stage_runs
    );
    let head: Vec<&str> = rows.iter().map(|(r, _)| r.row.kind.id()).collect();
    let _ = writeln!(m, "| stage | {} |", head.join(" | "));
    let _ = writeln!(m, "|---|{}", "---:|".repeat(rows.len()));
    let cell = |st: &StageCycles, n: &str| {
        st.iter()
            .find(|(k, _)| k == n)
            .map(|(_, c)| format!("{c:.1}"))
            .unwrap_or_default()
    };
    for n in &names {
        let cells: Vec<String> = rows.iter().map(|(_, st)| cell(st, n)).collect();
        let _ = writeln!(m, "| {n} | {} |", cells.join(" | "));
    }
    let before_tx: Vec<&String> = names.iter().filter(|n| n.as_str() != "tx").collect();
    let sum = |st: &StageCycles, all: bool| -> f64 {
        st.iter()
            .filter(|(n, _)| all || n != "tx")
            .map(|(_, c)| c)
            .sum()
    };
    if before_tx.len() != names.len() {
        // Short lists by name (l2 + ip + neigh), longer ones as what they are.
        let label = if before_tx.len() <= 3 {
            before_tx
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(" + ")
        } else {
            "every stage but tx".to_string()
        };
        let cells: Vec<String> = rows
            .iter()
            .map(|(_, st)| format!("**{:.1}**", sum(st, false)))
            .collect();
        let _ = writeln!(m, "| **{label}** | {} |", cells.join(" | "));
    }
    let cells: Vec<String> = rows
        .iter()
        .map(|(_, st)| format!("**{:.1}**", sum(st, true)))
        .collect();
    let _ = writeln!(m, "| **every stage** | {} |", cells.join(" | "));
    let rx_note = if names.iter().any(|n| n == "tx") {
        " `tx` is the dispose step: TX buffers, `tx_burst` into the null device, and punts."
    } else {
        ""
    };
    let cmd = s.stage_cmd.as_deref().unwrap_or("");
    let _ = writeln!(
        m,
        "\nThe receive burst itself (net_pcap's copy out of its ring) is in no stage.{rx_note} \
         The {} row's command:\n\n```\n{cmd}\n```",
        rows[0].0.row.kind.id()
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{Round, Row, RowKind, PCAP0_MAC};
    use crate::frame::FlowSpec;

    fn row(kind: RowKind, v: &[(f64, f64)], stages: Option<&[(&str, f64)]>) -> RowResult {
        let base = FlowSpec {
            flows: 64,
            dst_mac: PCAP0_MAC,
            ..Default::default()
        };
        RowResult {
            row: Row::new(kind, base),
            rounds: v
                .iter()
                .map(|&(t, f)| Round {
                    testpmd_pps: t,
                    fastpath_pps: f,
                })
                .collect(),
            testpmd_cmd: format!("testpmd {}", kind.id()),
            fastpath_cmd: format!("fastpath {}", kind.id()),
            stage_cycles: stages.map(|s| s.iter().map(|&(n, c)| (n.to_string(), c)).collect()),
            fast_lane: None,
            error: None,
        }
    }

    #[test]
    fn every_row_beside_testpmd_with_its_ratio_and_target() {
        let mut failed = row(RowKind::TwoWorkers, &[], None);
        failed.error = Some("dpdk-testpmd failed (exit 1):\nEAL: Error - bad queue".into());
        let s = Summary {
            rows: vec![
                row(
                    RowKind::Base,
                    &[(10e6, 9e6), (10e6, 10e6), (10e6, 5e6)],
                    Some(&[("l2", 10.0), ("ip", 20.0), ("neigh", 5.0), ("tx", 30.0)]),
                ),
                row(
                    RowKind::ManyFlows,
                    &[(8e6, 4e6), (8e6, 4e6), (8e6, 4e6)],
                    Some(&[("l2", 12.0), ("ip", 40.0), ("neigh", 5.0), ("tx", 31.0)]),
                ),
                failed,
            ],
            stage_cmd: Some("fastpath base --stage-cycles".into()),
            reference: vec![("csum".into(), 4e6)],
            rounds: 3,
            stage_runs: 3,
        };
        let md = markdown("T", &s, Some(0.75), "m", "fastpath-bench compare --router");
        assert!(md.contains("**0.900** (0.500–1.000)"), "{md}");
        assert!(
            md.contains("Target: 64 flows, 64-byte frames, 1 worker ratio >= 0.75: **met**"),
            "{md}"
        );
        assert!(md.contains("| 100,000 flows, 64-byte frames, 1 worker | 8.00 (8.00–8.00) | 4.00 (4.00–4.00) | **0.500** (0.500–0.500) |"), "{md}");
        assert!(
            md.contains("| 64 flows, 64-byte frames, 2 workers | n/a | n/a | failed |"),
            "{md}"
        );
        assert!(
            md.contains("- 64 flows, 64-byte frames, 2 workers: EAL: Error - bad queue"),
            "{md}"
        );
        assert!(md.contains("| stage | base | 100k |"), "{md}");
        assert!(md.contains("| ip | 20.0 | 40.0 |"), "{md}");
        assert!(
            md.contains("| **l2 + ip + neigh** | **35.0** | **57.0** |"),
            "{md}"
        );
        assert!(
            md.contains("| **every stage** | **65.0** | **88.0** |"),
            "{md}"
        );
        assert!(md.contains("| 3 | 100k | 8.00 | 4.00 | 0.500 |"), "{md}");
        assert!(
            md.contains(
                "| csum | parse L2-L4, check and fill checksums in software | 4.00 | 0.400 |"
            ),
            "{md}"
        );
        assert!(!md.contains("fast lane"), "{md}");
    }

    #[test]
    fn stage_names_come_from_the_runs() {
        let s = Summary {
            rows: vec![row(
                RowKind::Base,
                &[(10e6, 8e6)],
                Some(&[("l2-input", 3.0), ("ip4-input", 7.0), ("egress", 1.0)]),
            )],
            stage_cmd: None,
            reference: Vec::new(),
            rounds: 1,
            stage_runs: 1,
        };
        let md = markdown("T", &s, Some(0.95), "m", "c");
        assert!(md.contains("| l2-input | 3.0 |\n| ip4-input | 7.0 |\n| egress | 1.0 |\n| **every stage** | **11.0** |"), "{md}");
        assert!(md.contains("not met"), "{md}");
        assert!(!md.contains("`tx` is the dispose step"), "{md}");
    }

    #[test]
    fn many_stages_sum_as_every_stage_but_tx() {
        let stages = [
            ("l2_input", 10.0),
            ("ingress_hook", 1.0),
            ("ip_input", 20.0),
            ("egress_hook", 1.0),
            ("neigh_output", 8.0),
            ("local", 0.5),
            ("tx", 30.0),
        ];
        let s = Summary {
            rows: vec![row(RowKind::Base, &[(10e6, 8e6)], Some(&stages))],
            stage_cmd: None,
            reference: Vec::new(),
            rounds: 1,
            stage_runs: 1,
        };
        let md = markdown("T", &s, None, "m", "c");
        assert!(
            md.contains("| **every stage but tx** | **40.5** |\n| **every stage** | **70.5** |"),
            "{md}"
        );
        assert!(md.contains("| neigh_output | 8.0 |"), "{md}");
    }
}
