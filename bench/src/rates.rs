//! Read per-second packet rates out of periodic statistics: fastpath's
//! `--stats-period` lines and dpdk-testpmd's `--stats-period` port blocks.

/// TX packets per second of `port`, one value per period, in order.
pub fn fastpath_tx_pps(output: &str, port: u16) -> Vec<f64> {
    let key = format!("port {port} ");
    output
        .lines()
        .filter(|l| l.starts_with('['))
        .filter_map(|l| {
            let seg = l.split(" | ").find_map(|s| {
                let s = s.trim_start_matches(|c| c != 'p');
                s.starts_with(&key).then_some(s)
            })?;
            let mut words = seg.split_whitespace();
            while let Some(w) = words.next() {
                if w == "tx-pps" {
                    return words.next()?.parse().ok();
                }
            }
            None
        })
        .collect()
}

/// TX packets per second of `port` from testpmd's "NIC statistics for port N"
/// blocks ("Tx-pps:" line), one value per period.
pub fn testpmd_tx_pps(output: &str, port: u16) -> Vec<f64> {
    let header = format!("NIC statistics for port {port} ");
    let mut in_block = false;
    let mut out = Vec::new();
    for l in output.lines() {
        if l.contains("NIC statistics for port") {
            in_block = l.contains(&header);
        } else if in_block {
            if let Some(rest) = l.trim_start().strip_prefix("Tx-pps:") {
                if let Some(v) = rest.split_whitespace().next().and_then(|v| v.parse().ok()) {
                    out.push(v);
                }
                in_block = false;
            }
        }
    }
    out
}

/// Median of the samples after dropping the first `warmup` (None if none left).
pub fn steady_median(samples: &[f64], warmup: usize) -> Option<f64> {
    median(samples.get(warmup..)?)
}

/// Median of `v` (None when empty).
pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let m = s.len() / 2;
    Some(if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    })
}

/// The stage cycles fastpath prints at exit with `--stage-cycles`
/// ("cycles per packet: l2 5.1, ip 10.2, neigh 3.3, tx 20.0").
pub fn stage_cycles(out: &str) -> Option<Vec<(String, f64)>> {
    let line = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("cycles per packet:"))?;
    let v: Vec<(String, f64)> = line
        .split(',')
        .filter_map(|part| {
            let (name, value) = part.trim().rsplit_once(' ')?;
            Some((name.to_string(), value.parse().ok()?))
        })
        .collect();
    (!v.is_empty()).then_some(v)
}

/// The share of received packets the router's fast lane routed, from the
/// final statistics ("fast lane: N of M received ..."); 0 when the line is
/// missing (fastpath prints it only when the lane routed something), `None`
/// without final statistics.
pub fn fast_lane_share(out: &str) -> Option<f64> {
    if !out.contains("fastpath statistics") {
        return None;
    }
    let Some(line) = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("fast lane:"))
    else {
        return Some(0.0);
    };
    let mut words = line.split_whitespace();
    let n: f64 = words.next()?.parse().ok()?;
    let m: f64 = words.nth(1)?.parse().ok()?;
    (m > 0.0).then(|| n / m)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_lane_share_parse() {
        let head = "== fastpath statistics (6.00 s, DPDK 22.11.11) ==\n";
        let out = format!("{head}fast lane: 750 of 1000 received (75.0 %) routed\nmbufs: ...");
        assert_eq!(fast_lane_share(&out), Some(0.75));
        assert_eq!(fast_lane_share(head), Some(0.0));
        assert_eq!(fast_lane_share("killed"), None);
    }

    #[test]
    fn stage_cycles_parse() {
        let out = "x\ncycles per packet: l2 5.1, ip 10.25, neigh 3.0, tx 20.0\nmbufs: ...";
        let v = stage_cycles(out).unwrap();
        assert_eq!(v.len(), 4);
        assert_eq!(v[1], ("ip".to_string(), 10.25));
        assert_eq!(stage_cycles("nothing"), None);
    }

    #[test]
    fn reads_fastpath_lines() {
        let out = "fastpath: port 0 ...\n\
            [    1.0s] port 0 rx-pps 100 tx-pps 0 missed 0 | port 1 rx-pps 0 tx-pps 99 missed 0\n\
            [    2.0s] port 0 rx-pps 200 tx-pps 0 missed 0 | port 1 rx-pps 0 tx-pps 198.5 missed 0\n";
        assert_eq!(fastpath_tx_pps(out, 1), vec![99.0, 198.5]);
        assert_eq!(fastpath_tx_pps(out, 0), vec![0.0, 0.0]);
        assert!(fastpath_tx_pps(out, 2).is_empty());
    }

    #[test]
    fn reads_testpmd_blocks() {
        let out = "\
  ######################## NIC statistics for port 0  ########################
  Rx-pps:     20973825          Rx-bps: 132447883896
  Tx-pps:            0          Tx-bps:            0
  ######################## NIC statistics for port 1  ########################
  Rx-pps:            0          Rx-bps:            0
  Tx-pps:     20973800          Tx-bps: 1
  ######################## NIC statistics for port 1  ########################
  Tx-pps:     21000000          Tx-bps: 1
";
        assert_eq!(testpmd_tx_pps(out, 1), vec![20973800.0, 21000000.0]);
        assert_eq!(testpmd_tx_pps(out, 0), vec![0.0]);
    }

    #[test]
    fn medians() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(steady_median(&[100.0, 5.0, 7.0, 6.0], 1), Some(6.0));
        assert_eq!(steady_median(&[1.0], 1), None);
    }
}
