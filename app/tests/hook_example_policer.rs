//! The example hook of `hooks/examples/policer.rs`, written against the
//! `hooks` crate only, registered through the registry and named in the
//! config: fastpath runs it at ingress without knowing its type.
//! One EAL in this process: everything is in one test.

mod common;
#[path = "../../hooks/examples/policer.rs"]
mod policer;

use common::frames::udp;
use common::*;
use std::sync::Arc;

const CONFIG: &str = concat!(
    pcap_router_config!(),
    r#"
[[hook]]
point = "ingress"
port = "net_pcap0"
kind = "policer"
name = "police-lan"
rate_pps = 0
burst = 10
prefixes = ["10.0.1.0/24"]
"#
);

#[test]
fn a_registered_example_hook_polices_one_prefix() {
    // 100 frames from the policed prefix, 20 from another source.
    let mut frames: Vec<Vec<u8>> = (0..100)
        .map(|i| udp([10, 0, 1, 2], [198, 51, 100, 9], 1000 + i, 53))
        .collect();
    frames.extend((0..20).map(|i| udp([192, 0, 2, 7], [198, 51, 100, 9], 2000 + i, 53)));

    let registry = fastpath::builtin_hooks::registry();
    let handle = registry
        .register(Arc::new(policer::PolicerKind))
        .expect("policer is not a built-in name");
    let (_, out1, report) = run_pcaps_in_process("policer", CONFIG, &frames, &[], &registry);

    let policed_src = out1.iter().filter(|f| f[26..30] == [10, 0, 1, 2]).count();
    let other_src = out1.iter().filter(|f| f[26..30] == [192, 0, 2, 7]).count();
    assert_eq!((policed_src, other_src), (10, 20), "burst of 10, rate 0");
    assert_eq!(report.totals.drops["policed"], 90);
    assert!(report.totals.balanced);
    assert_eq!(report.mbufs.in_use_at_exit, 0);
    let h = report
        .hooks
        .iter()
        .find(|h| h.name == "police-lan")
        .expect("hook in the report");
    assert_eq!((h.kind.as_str(), h.point), ("policer", "ingress"));
    assert_eq!(
        (h.counts.seen, h.counts.accepted, h.counts.dropped),
        (120, 30, 90)
    );
    assert_eq!(h.stats.get("policed"), Some(&90));

    // Unregistered, the kind can no longer be named by a config.
    handle.unregister();
    assert!(registry.get("policer").is_none());
}
