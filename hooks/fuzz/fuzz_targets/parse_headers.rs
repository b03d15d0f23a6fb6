//! Arbitrary bytes through every header reader: `FlowSummary::parse` (at
//! the frame start, after Ethernet, after a VLAN tag), the Ethernet, VLAN,
//! ARP, IPv4 and ICMP views with all their accessors and setters, and
//! connection tracking: a lookup (and a commit when new) on a table that
//! persists across inputs, plus a small fresh table fed the packet and its
//! reply.
//!
//! Input: byte 0 steers (time step, commit or not, where L3 starts), the
//! rest is the frame.

#![no_main]

use hooks::conntrack::{ConnTable, CtConfig, CtState};
use hooks::FlowSummary;
use hooks_fuzz::{check_flow, check_views};
use libfuzzer_sys::fuzz_target;
use std::sync::{Mutex, OnceLock};

/// A table that lives across inputs, with its clock.
static TABLE: OnceLock<Mutex<(ConnTable, u64)>> = OnceLock::new();

fn table() -> std::sync::MutexGuard<'static, (ConnTable, u64)> {
    TABLE
        .get_or_init(|| {
            Mutex::new((
                ConnTable::new(CtConfig {
                    capacity: 64,
                    ..CtConfig::default()
                }),
                0,
            ))
        })
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

/// Swap source and destination (addresses and, for TCP/UDP, ports) of an
/// IPv4 packet in place: the reply direction.
fn reverse(l3: &mut [u8], s: &FlowSummary) {
    if l3.len() >= 20 {
        let (a, b) = l3[12..20].split_at_mut(4);
        a.swap_with_slice(b);
    }
    let at = usize::from(s.l4_offset);
    if s.has_ports() && l3.len() >= at + 4 {
        let (a, b) = l3[at..at + 4].split_at_mut(2);
        a.swap_with_slice(b);
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&ctl, frame)) = data.split_first() else {
        return;
    };

    for at in [0, 12, 14, 16, 18] {
        if let Some(b) = frame.get(at..) {
            check_views(b, ctl);
        }
    }
    for at in [0, 14, 18] {
        let _ = check_flow(frame.get(at..).unwrap_or_default());
    }

    let l3_at = match ctl & 0x03 {
        0 => 0,
        1 => 14,
        2 => 18,
        _ => usize::from(ctl >> 2),
    };
    let l3 = frame.get(l3_at..).unwrap_or_default();
    let Some(s) = FlowSummary::parse(l3) else {
        return;
    };
    let step = match (ctl >> 2) & 0x07 {
        0 => 0,
        1..=4 => 1_000_000,
        5 => 31_000_000_000,
        6 => 121_000_000_000,
        _ => 3_601_000_000_000,
    };
    let commit = ctl & 0x20 != 0;

    // The persistent table.
    {
        let mut g = table();
        let (t, now) = &mut *g;
        *now = now.saturating_add(step);
        if t.lookup(&s, l3, *now) == CtState::New && commit {
            t.commit(&s, l3, *now);
        }
        if ctl & 0xc0 == 0xc0 {
            t.sweep(*now, 32);
        }
        assert!(t.len() <= t.capacity());
        assert!(t.count_live(*now) <= t.len());
    }

    // A fresh table: the packet, then its reply, then the packet again.
    let mut t = ConnTable::new(CtConfig {
        capacity: 2,
        ..CtConfig::default()
    });
    let first = t.lookup(&s, l3, 1);
    let committed = first == CtState::New && t.commit(&s, l3, 1);
    let mut reply = l3.to_vec();
    reverse(&mut reply, &s);
    if let Some(r) = FlowSummary::parse(&reply) {
        let st = t.lookup(&r, &reply, 2);
        if committed && r.has_ports() && s.src != s.dst && r.sport != r.dport {
            // The reply of a tracked TCP/UDP flow is established (a TCP
            // reply with RST also is, then removes the entry).
            assert_eq!(st, CtState::Established, "{s:?} then {r:?}");
        }
        let _ = t.lookup(&s, l3, 3);
    }
    assert!(t.len() <= t.capacity());
});
