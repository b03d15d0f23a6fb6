//! A fastpath run on finite pcap input stops once it has taken in all of
//! it: `fastpath ctl --json show stats` counts every frame of the input as
//! received, and only then does the test send SIGINT. No fixed duration.

use crate::common::ctl::ctl;
use std::time::{Duration, Instant};

/// Wait until each `(port, frames)` of `want` has received exactly that many
/// frames, at most `limit`; the last `show stats` answer. Fails when a port
/// received more than its input, or fastpath never answers.
pub fn wait_received(prefix: &str, want: &[(u16, u64)], limit: Duration) -> serde_json::Value {
    let start = Instant::now();
    loop {
        let said = ctl(prefix, &["--json", "show", "stats"]);
        let last = if said.code == 0 {
            let v: serde_json::Value = serde_json::from_str(&said.stdout).expect("JSON answer");
            let rx = |port: u16| {
                v["data"]["ports"]
                    .as_array()
                    .and_then(|a| a.iter().find(|p| p["port"] == port))
                    .and_then(|p| p["rx"].as_u64())
                    .unwrap_or(0)
            };
            for &(port, n) in want {
                assert!(
                    rx(port) <= n,
                    "port {port} received more than its {n} frames: {v}"
                );
            }
            if want.iter().all(|&(port, n)| rx(port) == n) {
                return v;
            }
            said.stdout
        } else {
            format!("{said:?}")
        };
        assert!(
            start.elapsed() < limit,
            "not every input frame received within {limit:?} ({want:?}); last answer: {last}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
