//! What the fuzz targets share: checks of the wire views and of
//! `FlowSummary::parse` on any bytes, and a one-burst hook runner that checks
//! what a hook did with the burst. Every check is an assertion, so libFuzzer
//! reports a wrong answer like a panic of the code under test.

use hooks::flow::{proto, Fragment};
use hooks::wire::arp::ArpRepr;
use hooks::wire::ethernet::ethertype;
use hooks::wire::{checksum, icmp, ArpPacket, EthernetFrame, IcmpPacket, Ipv4Packet, VlanTag};
use hooks::{
    DropReason, FlowSummary, FlowSummary6, HookBurst, HookContext, HookPacket, HookWorker,
    PacketMeta, Tally, Verdict, WorkerStore,
};
use std::net::Ipv4Addr;

/// `FlowSummary::parse` on `l3`, checked against the IPv4 view.
pub fn check_flow(l3: &[u8]) -> Option<FlowSummary> {
    let parsed = FlowSummary::parse(l3);
    let view = Ipv4Packet::new_checked(l3)
        .ok()
        .filter(|ip| ip.version() == 4);
    assert_eq!(parsed.is_some(), view.is_some(), "{l3:02x?}");
    let (s, ip) = (parsed?, view?);
    assert_eq!(s.src, u32::from(ip.src_addr()));
    assert_eq!(s.dst, u32::from(ip.dst_addr()));
    assert_eq!((s.proto, s.dscp), (ip.protocol(), ip.dscp()));
    assert_eq!(usize::from(s.l4_offset), ip.header_len());
    assert!(usize::from(s.l4_offset) <= l3.len());
    assert_eq!(s.frag_offset_one, ip.frag_offset() == 8);
    match s.fragment {
        Fragment::NonFirst => {
            assert!(ip.frag_offset() > 0);
            assert!(!s.l4 && s.sport == 0 && s.dport == 0 && s.tcp_flags == 0);
        }
        Fragment::First => assert!(ip.more_frags() && ip.frag_offset() == 0),
        Fragment::None => assert!(!ip.more_frags() && ip.frag_offset() == 0),
    }
    if s.l4 {
        let need = if s.proto == proto::TCP { 20 } else { 8 };
        assert!(ip.payload().len() >= need, "{s:?} {l3:02x?}");
    } else {
        assert_eq!((s.sport, s.dport, s.tcp_flags, s.icmp_type), (0, 0, 0, 0));
    }
    if s.has_ports() {
        assert!(matches!(s.proto, proto::TCP | proto::UDP));
    }
    Some(s)
}

/// Every view over `b` and every accessor; setters on a copy; checksum
/// round trips. `x` varies the written values.
pub fn check_views(b: &[u8], x: u8) {
    if let Ok(e) = EthernetFrame::new_checked(b) {
        let _ = (e.dst_addr(), e.src_addr(), e.ethertype());
        assert_eq!(e.payload().len(), b.len() - 14);
        let mut c = b.to_vec();
        let mut e = EthernetFrame::new_checked(&mut c[..]).unwrap();
        e.set_dst_addr([x; 6]);
        e.set_src_addr([!x; 6]);
        e.set_ethertype(u16::from(x) << 8);
        let _ = e.payload_mut();
        assert_eq!(e.ethertype(), u16::from(x) << 8);
    }

    if let Ok(v) = VlanTag::new_checked(b) {
        assert!(v.vid() <= 0x0fff && v.pcp() < 8);
        let _ = (v.dei(), v.ethertype());
        let mut c = b.to_vec();
        let mut v = VlanTag::new_checked(&mut c[..]).unwrap();
        v.set_tci(x, x & 1 != 0, u16::from(x) * 257);
        v.set_ethertype(0x0800);
        assert_eq!(v.pcp(), x & 7);
        assert_eq!(v.vid(), (u16::from(x) * 257) & 0x0fff);
    }

    if let Ok(a) = ArpPacket::new_checked(b) {
        let _ = (
            a.hardware_type(),
            a.protocol_type(),
            a.hardware_len(),
            a.protocol_len(),
            a.operation(),
            a.sender_hardware_addr(),
            a.sender_protocol_addr(),
            a.target_hardware_addr(),
            a.target_protocol_addr(),
            a.is_ethernet_ipv4(),
        );
        if let Some(r) = ArpRepr::parse(&a) {
            let _ = r.is_gratuitous();
            let mut c = vec![x; b.len()];
            r.emit(&mut ArpPacket::new_checked(&mut c[..]).unwrap());
            assert_eq!(
                ArpRepr::parse(&ArpPacket::new_checked(&c[..]).unwrap()),
                Some(r)
            );
        }
    }

    if let Ok(ip) = Ipv4Packet::new_checked(b) {
        let _ = (
            ip.version(),
            ip.ihl(),
            ip.ecn(),
            ip.total_len(),
            ip.ident(),
            ip.dont_frag(),
            ip.more_frags(),
            ip.frag_offset(),
            ip.ttl(),
            ip.checksum(),
            ip.options(),
            ip.verify_checksum(),
        );
        assert_eq!(ip.header_bytes().len(), ip.header_len());
        assert!(ip.payload().len() <= b.len() - ip.header_len());
        let mut c = b.to_vec();
        let mut w = Ipv4Packet::new_checked(&mut c[..]).unwrap();
        let ttl = w.ttl();
        w.fill_checksum();
        assert!(w.verify_checksum(), "fill_checksum then verify: {b:02x?}");
        match w.decrement_ttl() {
            Some(t) => {
                assert_eq!(t + 1, ttl);
                assert!(w.verify_checksum(), "decrement_ttl: {b:02x?}");
            }
            None => assert_eq!(ttl, 0),
        }
        w.set_dscp_ecn(x, x);
        w.set_total_len(u16::from(x) * 3);
        w.set_ident(u16::from(x));
        w.set_flags_frag(x & 1 != 0, x & 2 != 0, u16::from(x) << 5);
        w.set_ttl(x);
        w.set_protocol(x);
        w.set_src_addr(Ipv4Addr::from(u32::from(x) * 0x0101_0101));
        w.set_dst_addr(Ipv4Addr::BROADCAST);
        let _ = w.options_mut();
        w.set_version_ihl(x >> 4, x);
        let _ = (
            w.header_bytes(),
            w.options(),
            w.payload(),
            w.verify_checksum(),
        );
        let _ = check_flow(&c);

        let len = icmp::error_message_len(b);
        let mut buf = vec![0u8; usize::from(x)];
        match icmp::emit_error(&mut buf, x, !x, b) {
            Some(n) => {
                assert_eq!(n, len);
                let m = IcmpPacket::new_checked(&buf[..n]).unwrap();
                assert!(m.verify_checksum(), "emit_error checksum");
                assert_eq!((m.msg_type(), m.code()), (x, !x));
            }
            None => assert!(len == 0 || buf.len() < len),
        }
    } else {
        assert_eq!(icmp::error_message_len(b), 0);
    }

    if let Ok(m) = IcmpPacket::new_checked(b) {
        let _ = (m.msg_type(), m.code(), m.checksum(), m.ident(), m.seq_no());
        assert_eq!(m.data().len(), b.len() - 8);
        let valid = m.verify_checksum();
        let mut c = b.to_vec();
        let mut w = IcmpPacket::new_checked(&mut c[..]).unwrap();
        let request = w.msg_type() == icmp::kind::ECHO_REQUEST;
        assert_eq!(w.echo_to_reply(), request);
        if request && valid {
            assert!(w.verify_checksum(), "echo_to_reply: {b:02x?}");
        }
        w.set_msg_type(x);
        w.set_code(x);
        w.set_ident(u16::from(x));
        w.set_seq_no(u16::from(x));
        let _ = w.data_mut();
        w.fill_checksum();
        assert!(w.verify_checksum());
    }

    assert_eq!(checksum::checksum(b), !checksum::sum(b));
    if let Some(h) = b.first_chunk::<20>() {
        assert_eq!(checksum::sum20(h), checksum::sum(&h[..]));
        assert_eq!(checksum::verify20(h), checksum::sum(&h[..]) == 0xffff);
    }
}

/// A packet of a burst.
#[derive(Clone, Debug)]
pub struct Pkt {
    pub data: Vec<u8>,
    pub meta: PacketMeta,
}

impl Pkt {
    pub fn l3(&self) -> &[u8] {
        self.data
            .get(usize::from(self.meta.l3_offset)..)
            .unwrap_or_default()
    }
}

/// What a hook may do, for [`run_checked`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Classify,
    Filter { policy_drop: bool },
}

fn tally_of(burst: &HookBurst<'_, '_>) -> Vec<Verdict> {
    let v: Vec<Verdict> = (0..burst.len())
        .map(|i| burst.verdict(i).unwrap())
        .collect();
    let mut t = Tally::default();
    for (i, v) in v.iter().enumerate() {
        assert_eq!(*v == Verdict::Accept, burst.is_accepted(i));
        match v {
            Verdict::Accept => t.accepted += 1,
            Verdict::Drop(_) => t.dropped += 1,
            Verdict::Stolen => t.stolen += 1,
        }
    }
    assert_eq!(burst.tally(), t);
    v
}

/// Run a hook on a worker (`on_worker`, with that worker's `store`) over
/// `pkts` (those of `predropped` dropped first) and check:
/// verdicts only move away from Accept, the hook's own drop reasons only,
/// frame bytes unchanged, metadata unchanged but classify's mark and class,
/// and a drop-policy filter never accepts a packet it cannot read (neither
/// `FlowSummary::parse` nor, in an IPv6 frame, `FlowSummary6::parse`
/// reads it), which classify leaves alone. Returns the verdicts.
pub fn run_checked(
    on_worker: &mut dyn HookWorker,
    store: &mut WorkerStore,
    role: Role,
    pkts: &[Pkt],
    predropped: u64,
    cx: &HookContext,
) -> Vec<Verdict> {
    let mut after = pkts.to_vec();
    let mut views: Vec<HookPacket> = after
        .iter_mut()
        .map(|p| HookPacket::new(&mut p.data, &mut p.meta))
        .collect();
    let mut verdicts = vec![Verdict::Accept; views.len()];
    let mut burst = HookBurst::new(&mut views, &mut verdicts);
    for i in 0..burst.len() {
        if predropped & (1 << i) != 0 {
            burst.set_verdict(i, Verdict::Drop(DropReason::HookDrop));
        }
    }
    let before = tally_of(&burst);
    on_worker.process(cx, store, &mut burst);
    let now = tally_of(&burst);
    drop(burst);
    drop(views);
    for (i, (p, q)) in pkts.iter().zip(&after).enumerate() {
        let (was, is) = (before[i], now[i]);
        if was != Verdict::Accept {
            assert_eq!(is, was, "packet {i}: verdict moved back");
            continue;
        }
        match (role, is) {
            (_, Verdict::Accept) => {}
            (Role::Classify, Verdict::Drop(DropReason::ClassifyRule)) => {}
            (
                Role::Filter { .. },
                Verdict::Drop(DropReason::FilterRule | DropReason::FilterPolicy),
            ) => {}
            // Fragments a hook with port rules drops before them (RFC 1858).
            (
                Role::Classify | Role::Filter { .. },
                Verdict::Drop(DropReason::TinyFragment | DropReason::OverlappingFragment),
            ) => {}
            _ => panic!("packet {i}: {role:?} gave {is:?}"),
        }
        assert_eq!(p.data, q.data, "packet {i}: frame changed");
        let mut m = q.meta;
        if role == Role::Classify {
            m.mark = p.meta.mark;
            m.class = p.meta.class;
        }
        assert_eq!(p.meta, m, "packet {i}: metadata changed");
        // Readable: as IPv4, or (an IPv6 frame) as IPv6, which the rules
        // judge too.
        let readable = FlowSummary::parse(p.l3()).is_some()
            || (p.meta.protocol == ethertype::IPV6 && FlowSummary6::parse(p.l3()).is_some());
        if !readable {
            match role {
                Role::Filter { policy_drop: true } => assert_eq!(
                    is,
                    Verdict::Drop(DropReason::FilterPolicy),
                    "packet {i}: bypass of the drop policy: {p:?}"
                ),
                _ => assert_eq!(is, Verdict::Accept, "packet {i}"),
            }
        }
    }
    now
}
