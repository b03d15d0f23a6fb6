//! The generator and sink against fastpath in another process over memif,
//! with a classify rule that drops one flow of ten: since packets go round
//! robin over the flows, exactly every 10th packet is lost; nothing else.
//!
//! Counts, not speeds: the trial (10 kpps for 0.3 s, at most ~3,000
//! packets) fits in each memif ring (4,096 slots), so neither the generator's
//! TX nor fastpath's TX can find a ring full however the two pollers are
//! scheduled, and the drain waits long for stragglers: the only loss left is
//! the rule's.

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
            "10kpps",
            "--seconds",
            "0.3",
            "--warmup-ms",
            "0",
            "--drain-ms",
            "4000",
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
        t.sent > 0 && t.sent < 4096,
        "sent {}: some, and no more than a memif ring holds",
        t.sent
    );
    // One flow of ten: sent / 10, give or take the one packet where the
    // trial's first sequence number falls in the cycle of ten. fastpath saw
    // every packet sent, and the sink lost exactly the ones it dropped.
    let tenth = t.sent as f64 / 10.0;
    let (dropped, accepted) = classify_counts(&dut.log());
    assert!(
        (dropped as f64 - tenth).abs() <= 1.0,
        "fastpath's classify rule dropped {dropped} of {} sent (expected {tenth:.1})",
        t.sent
    );
    assert_eq!(dropped + accepted, t.sent, "fastpath saw every packet sent");
    assert_eq!(
        (t.lost, t.received),
        (dropped, accepted),
        "the sink lost what fastpath dropped, and received the rest"
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
