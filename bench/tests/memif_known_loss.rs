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
            "--json",
            json.to_str().unwrap(),
        ],
        &sock,
        "loss",
    );
    dut.stop().expect("fastpath stops cleanly");
    let r = report(&out, &json);
    let t = &r.trials[0];
    assert!(
        t.sent >= 150_000,
        "sent only {} at 200 kpps for 1 s",
        t.sent
    );
    // One flow of ten: sent / 10, give or take the one packet where the
    // trial's first sequence number falls in the cycle of ten.
    let tenth = t.sent as f64 / 10.0;
    assert!(
        (t.lost as f64 - tenth).abs() <= 1.0,
        "lost {} of {} (expected {tenth:.1})",
        t.lost,
        t.sent
    );
    assert_eq!(t.received + t.lost, t.sent);
    assert_eq!((t.reordered, t.duplicates), (0, 0));
    let l = t.latency_ns.expect("latency");
    assert_eq!(l.samples, t.received);
    assert!(l.min > 0 && l.p50 >= l.min && l.p99 >= l.p50 && l.max >= l.p999);
    assert!(!t.pass, "a trial with loss is no NDR pass");
    // fastpath's classify hook dropped and accepted what the generator sent,
    // plus the generator's warm-up (300 ms at 100 kpps: 30,000 packets).
    let log = dut.log();
    let line = log
        .lines()
        .find(|l| l.contains("ingress port 0") && l.contains("(classify"))
        .unwrap_or_else(|| panic!("no classify hook line in fastpath's report:\n{log}"));
    let count = |what: &str| -> u64 {
        let rest =
            &line[line.find(what).unwrap_or_else(|| panic!("{what}: {line}")) + what.len()..];
        rest.trim_start()
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{what}: {line}"))
    };
    let (dropped, accepted) = (count("dropped"), count("accepted"));
    assert!(
        (t.lost..=t.lost + 3_001).contains(&dropped),
        "fastpath dropped {dropped}, the sink lost {}: {line}",
        t.lost
    );
    assert!(
        (t.received..=t.received + 27_001).contains(&accepted),
        "fastpath accepted {accepted}, the sink received {}: {line}",
        t.received
    );
}
