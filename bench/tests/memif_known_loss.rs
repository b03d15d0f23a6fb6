//! The generator and sink against fastpath in another process over memif,
//! with a classify rule that drops one flow of ten: since packets go round
//! robin over the flows, exactly every 10th packet is lost; nothing else.

mod common;
use common::*;

#[test]
fn every_tenth_packet_dropped_by_fastpath_is_counted_lost() {
    let dir = workdir();
    let sock = dir.path().join("m.sock");
    let mut dut = start_lossy_fastpath(dir.path(), &sock, "loss");
    let json = dir.path().join("run.json");
    let out = generator(
        "run",
        &[
            "--flows",
            "10",
            "--vary",
            "src-port",
            "--rate",
            "200kpps",
            "--seconds",
            "1",
            "--warmup-ms",
            "0",
            "--json",
            json.to_str().unwrap(),
        ],
        &sock,
        "loss",
        &mut dut,
    );
    let r = report(&out, &json);
    let t = &r.trials[0];
    assert!(
        t.sent >= 150_000,
        "sent only {} at 200 kpps for 1 s",
        t.sent
    );
    // One flow of ten: sent / 10, give or take the one packet where the
    // trial's first sequence number falls in the cycle of ten. fastpath's
    // classify counter is exact whatever the scheduler does; the sink may
    // see a little more loss if a starved poller overflowed a memif ring
    // (0.1 % allowed, a few milliseconds at this rate), never less.
    let tenth = t.sent as f64 / 10.0;
    let (dropped, accepted) = classify_counts(&dut.log());
    assert!(
        (dropped as f64 - tenth).abs() <= 1.0,
        "fastpath's classify rule dropped {dropped} of {} sent (expected {tenth:.1})",
        t.sent
    );
    let seen = dropped + accepted;
    assert!(
        seen <= t.sent && t.sent - seen <= t.sent / 1000,
        "fastpath saw {seen} of the {} sent",
        t.sent
    );
    assert!(
        t.lost >= dropped && t.lost - dropped <= t.sent / 1000,
        "the sink lost {}, fastpath dropped {dropped} of {}",
        t.lost,
        t.sent
    );
    assert_eq!((t.reordered, t.duplicates), (0, 0));
    let l = t.latency_ns.expect("latency");
    assert!(l.min > 0 && l.p50 >= l.min && l.p99 >= l.p50 && l.max >= l.p999);
    assert!(!t.pass, "a trial with loss is no NDR pass");
}

/// (dropped, accepted) of the classify hook line in fastpath's report.
fn classify_counts(log: &str) -> (u64, u64) {
    let line = log
        .lines()
        .find(|l| l.contains("ingress port 0") && l.contains("(classify"))
        .unwrap_or_else(|| panic!("no classify hook line in fastpath's report:\n{log}"));
    let count = |what: &str| -> u64 {
        let at = line.find(what).unwrap_or_else(|| panic!("{what}: {line}"));
        line[at + what.len()..]
            .trim_start()
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{what}: {line}"))
    };
    (count("dropped"), count("accepted"))
}
