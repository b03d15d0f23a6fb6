//! Rules from arbitrary input: TOML text, and structured rule tables whose
//! values come from templates that reach deep into the parsers (IPv4 and
//! IPv6 prefixes and addresses, valid and not: host bits, lengths past the
//! family's, bad text, the two families in one rule).
//!
//! - `parse_match` never panics (its debug assertion that what it returns
//!   validates runs too: build with `-a`);
//! - a rule set that parses builds a `LinearClassifier`, which on arbitrary
//!   keys (IPv4's 32 bytes, IPv6's 64, and those of the packets) returns
//!   the first rule that an independent reference matcher says matches,
//!   and agrees with `MatchRule::matches` / `matches6`;
//! - `Key6::set_plain` on any bytes either leaves the key alone or makes
//!   the key `Key6::new` makes of `FlowSummary6::parse`'s summary;
//! - `filter` (stateless and stateful, policy accept or drop) and
//!   `classify` built from the rules run over arbitrary bursts (IPv4 and
//!   IPv6 frames, the latter with extension headers) without panicking,
//!   with verdicts only moving away from Accept and no bypass of a drop
//!   policy.

#![no_main]

use arbitrary::Arbitrary;
use hooks::builtin::{ClassifyKind, FilterKind};
use hooks::rules::{
    parse_match, ClassifierBuilder, Key, Key6, LinearBuilder, LinearClassifier, MatchRule, Prefix,
    Prefix6, MATCH_KEYS,
};
use hooks::testkit;
use hooks::{
    BuildContext, FlowSummary6, HookArgs, HookContext, HookKind, HookPoint, PacketMeta,
    WorkerStore, MAX_BURST,
};
use hooks_fuzz::{run_checked, Pkt, Role};
use libfuzzer_sys::fuzz_target;
use std::net::Ipv6Addr;
use std::sync::Arc;
use toml::Value;

#[derive(Arbitrary, Debug)]
struct Input {
    /// Rules as TOML text: `[[rule]]` tables, or one table as one rule.
    text: Option<String>,
    rules: Vec<Rule>,
    keys: Vec<[u8; 32]>,
    keys6: Vec<[u8; 64]>,
    pkts: Vec<P>,
    policy_drop: bool,
    stateful: bool,
    predropped: u64,
    worker: u8,
    now: u64,
}

#[derive(Arbitrary, Debug)]
struct Rule {
    /// (index into MATCH_KEYS, or one of a few other keys; value)
    fields: Vec<(u8, Val)>,
    action: u8,
    set: (Option<u32>, Option<u16>),
}

#[derive(Arbitrary, Debug)]
enum Val {
    Leaf(Leaf),
    List(Vec<Leaf>),
}

#[derive(Arbitrary, Debug)]
enum Leaf {
    Int(i64),
    Small(u16),
    Str(String),
    /// A string from a template (kind, a, b).
    Tmpl(u8, u32, u32),
    /// An IPv6 prefix or address from a template (kind, address, length).
    Tmpl6(u8, u128, u8),
    Bool(bool),
    Float(f64),
}

const TCP_FLAGS: [&str; 9] = [
    "fin", "syn", "rst", "psh", "ack", "urg", "ece", "cwr", "xyz",
];
const WORDS: [&str; 14] = [
    "tcp",
    "UDP",
    "icmp",
    "gre",
    "new",
    "established",
    "Related",
    "in0",
    "out1",
    "p2",
    "p5",
    "9",
    " 1 ",
    "",
];

fn template(kind: u8, a: u32, b: u32) -> String {
    let [a0, a1, a2, a3] = a.to_be_bytes();
    match kind % 8 {
        0 => format!("{a0}.{a1}.{a2}.{a3}/{}", b % 40),
        1 => format!("{a0}.{a1}.{a2}.{a3}"),
        2 => format!("{}-{}", a % 70000, b % 70000),
        3 => format!("{}", a % 70000),
        4 => {
            // Flags: bit i of a names flag i, bit i of b negates it.
            (0..9)
                .filter(|i| a & (1 << i) != 0)
                .map(|i| {
                    let neg = if b & (1 << i) != 0 { "!" } else { "" };
                    format!("{neg}{}", TCP_FLAGS[i])
                })
                .collect::<Vec<_>>()
                .join(if b & 0x8000 != 0 { ", " } else { "," })
        }
        5 => format!("{a:#x}/{b:#x}"),
        6 => format!("{}/{}", a & b, b),
        _ => WORDS[(a as usize) % WORDS.len()].to_string(),
    }
}

/// IPv6 prefixes and addresses, most of them valid, some with host bits,
/// a length past 128, text `Ipv6Addr` refuses, or an IPv4 part.
fn template6(kind: u8, a: u128, l: u8) -> String {
    let len = u32::from(l % 131);
    let net = match len.min(128) {
        0 => 0,
        l => a & (u128::MAX << (128 - l)),
    };
    let (ip, netip) = (Ipv6Addr::from(a), Ipv6Addr::from(net));
    match kind % 10 {
        0 | 1 => format!("{netip}/{len}"),
        2 => format!("{ip}/{len}"),
        3 => format!("{ip}"),
        4 => format!(" {netip} /{} ", len % 129),
        // Every group written out, with or without leading zeros.
        5 => {
            let g = netip.segments();
            let w = if l & 1 != 0 { 4 } else { 1 };
            let groups: Vec<String> = g.iter().map(|x| format!("{x:0w$x}")).collect();
            format!("{}/{}", groups.join(":"), len % 129)
        }
        // IPv4-mapped, in the dotted form.
        6 => {
            let v4 = a as u32;
            let plen = 96 + (len % 33);
            let mask = u32::MAX.checked_shl(128 - plen).unwrap_or(0);
            let [b0, b1, b2, b3] = (v4 & mask).to_be_bytes();
            format!("::ffff:{b0}.{b1}.{b2}.{b3}/{plen}")
        }
        7 => match a % 12 {
            0 => format!("{ip}::1"),
            1 => format!("{netip}/"),
            2 => format!("{netip}/x{len}"),
            3 => format!("{netip}/-{len}"),
            4 => format!("{ip}%eth0"),
            5 => format!("[{ip}]"),
            6 => format!("{netip}/{len}/{len}"),
            7 => ":::/0".into(),
            8 => format!("gggg::/{len}"),
            9 => format!("1:2:3:4:5:6:7:8:9/{len}"),
            10 => format!("{netip}/+{len}"),
            _ => format!("{netip}/{}", 129 + u32::from(l)),
        },
        // An IPv4 address with a colon (a port): the IPv6 parser's.
        8 => format!("10.{}.0.1:{}", l, a % 70000),
        _ => {
            ["::/0", "::", "::1", "::1/128", "fe80::/10", "2001:db8::/32"][(a % 6) as usize].into()
        }
    }
}

fn leaf(l: &Leaf) -> Value {
    match l {
        Leaf::Int(i) => Value::Integer(*i),
        Leaf::Small(i) => Value::Integer(i64::from(*i)),
        Leaf::Str(s) => Value::String(s.clone()),
        Leaf::Tmpl(k, a, b) => Value::String(template(*k, *a, *b)),
        Leaf::Tmpl6(k, a, l) => Value::String(template6(*k, *a, *l)),
        Leaf::Bool(b) => Value::Boolean(*b),
        Leaf::Float(f) => Value::Float(*f),
    }
}

fn value(v: &Val) -> Value {
    match v {
        Val::Leaf(l) => leaf(l),
        Val::List(ls) => Value::Array(ls.iter().take(8).map(leaf).collect()),
    }
}

const OTHER_KEYS: [&str; 2] = ["action", "bogus"];

fn table(r: &Rule) -> toml::Table {
    let mut t = toml::Table::new();
    for (k, v) in r.fields.iter().take(16) {
        let k = usize::from(*k) % (MATCH_KEYS.len() + OTHER_KEYS.len());
        let name = MATCH_KEYS
            .get(k)
            .copied()
            .unwrap_or_else(|| OTHER_KEYS[k - MATCH_KEYS.len()]);
        t.insert(name.into(), value(v));
    }
    t
}

fn cx(point: HookPoint) -> BuildContext {
    BuildContext {
        workers: 2,
        point,
        port: 1,
        ports: vec![
            ("in0".into(), 0),
            ("out1".into(), 1),
            ("p2".into(), 2),
            ("p5".into(), 5),
        ],
        name: "fuzz".into(),
    }
}

/// The reference meaning of a rule, written from the key layout alone.
fn reference(r: &MatchRule, k: &Key) -> bool {
    let b = k.as_bytes();
    let be16 = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
    let be32 = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let prefix = |p: Option<Prefix>, a: u32| {
        p.is_none_or(|p| {
            let len = u32::from(p.len.min(32));
            let mask = (u64::from(u32::MAX) << (32 - len)) as u32;
            a & mask == p.addr & mask
        })
    };
    let range16 = |r: Option<(u16, u16)>, v: u16| r.is_none_or(|(lo, hi)| (lo..=hi).contains(&v));
    let l4 = b[3] & 0x01 != 0;
    let ct = b[3] & 0x0e;
    let needs_l4 = r.sport.is_some() || r.dport.is_some() || r.tcp_flags.is_some();
    // IPv6 addresses: the rule is IPv6's.
    r.src6.is_none()
        && r.dst6.is_none()
        && r.proto.is_none_or(|p| b[0] == p)
        && prefix(r.src, be32(4))
        && prefix(r.dst, be32(8))
        && (!needs_l4 || l4)
        && range16(r.sport, be16(12))
        && range16(r.dport, be16(14))
        && r.tcp_flags.is_none_or(|(v, m)| b[1] & m == v)
        && r.dscp.is_none_or(|(lo, hi)| (lo..=hi).contains(&b[2]))
        && range16(r.in_port, be16(16))
        && range16(r.out_port, be16(18))
        && range16(r.vlan, be16(20))
        && range16(r.class, be16(22))
        && r.mark.is_none_or(|(v, m)| be32(24) & m == v)
        && (r.ct_states == 0 || ct & r.ct_states != 0)
}

/// The reference meaning of a rule for an IPv6 key, from the layout of
/// `Key6` alone: IPv4 addresses never match, prefixes compared on the top
/// bits of the 128-bit address, ports and TCP flags only with the L4 flag.
fn reference6(r: &MatchRule, k: &Key6) -> bool {
    let b = k.as_bytes();
    let be16 = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
    let be32 = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
    let addr = |i: usize| {
        let mut a = [0u8; 16];
        a.copy_from_slice(&b[i..i + 16]);
        u128::from_be_bytes(a)
    };
    // The top `len` bits equal: shifted out by 128 - len (all of them at /0).
    let prefix = |p: Option<Prefix6>, a: u128| {
        p.is_none_or(|p| {
            let shift = 128 - u32::from(p.len.min(128));
            a.checked_shr(shift).unwrap_or(0) == p.addr.checked_shr(shift).unwrap_or(0)
        })
    };
    let range16 = |r: Option<(u16, u16)>, v: u16| r.is_none_or(|(lo, hi)| lo <= v && v <= hi);
    let l4 = b[3] & 0x01 != 0;
    let ct = b[3] & 0x0e;
    let needs_l4 = r.sport.is_some() || r.dport.is_some() || r.tcp_flags.is_some();
    r.src.is_none()
        && r.dst.is_none()
        && r.proto.is_none_or(|p| b[0] == p)
        && prefix(r.src6, addr(4))
        && prefix(r.dst6, addr(20))
        && (!needs_l4 || l4)
        && range16(r.sport, be16(36))
        && range16(r.dport, be16(38))
        && r.tcp_flags.is_none_or(|(v, m)| b[1] & m == v)
        && r.dscp.is_none_or(|(lo, hi)| lo <= b[2] && b[2] <= hi)
        && range16(r.in_port, be16(40))
        && range16(r.out_port, be16(42))
        && range16(r.vlan, be16(44))
        && range16(r.class, be16(46))
        && r.mark.is_none_or(|(v, m)| be32(48) & m == v)
        && (r.ct_states == 0 || ct & r.ct_states != 0)
}

/// An IPv6 address of a frame: any, or in a prefix of a rule that parsed
/// (the index picks it, the number gives the host bits).
#[derive(Arbitrary, Debug)]
enum Addr6 {
    Any(u128),
    InRule(u8, u128),
}

fn addr6(a: &Addr6, prefixes: &[Prefix6]) -> u128 {
    match a {
        Addr6::InRule(i, host) if !prefixes.is_empty() => {
            let p = prefixes[usize::from(*i) % prefixes.len()];
            p.addr | (host & !p.mask())
        }
        Addr6::Any(a) | Addr6::InRule(_, a) => *a,
    }
}

/// An IPv6 extension header.
#[derive(Arbitrary, Debug)]
struct Ext {
    /// Index into EXT_KINDS; past it, the byte itself as the next header.
    kind: u8,
    len: u8,
    /// Fragment header: 0 a first fragment, 1 at offset 8, 2 atomic, else
    /// the offset-and-flags word itself.
    frag: u16,
    fill: u8,
}

const EXT_KINDS: [u8; 12] = [0, 43, 44, 60, 51, 50, 59, 135, 139, 140, 253, 254];
const UPPER: [u8; 7] = [6, 17, 58, 6, 17, 1, 59];

fn ext_code(e: &Ext) -> u8 {
    EXT_KINDS
        .get(usize::from(e.kind))
        .copied()
        .unwrap_or(e.kind)
}

/// The bytes of extension header `e` whose next header is `next`.
fn ext_bytes(e: &Ext, next: u8) -> Vec<u8> {
    match ext_code(e) {
        44 => {
            let word = match e.frag % 4 {
                0 => 1,
                1 => 8,
                2 => 0,
                _ => e.frag,
            };
            let [w0, w1] = word.to_be_bytes();
            vec![next, e.fill, w0, w1, 0, 0, 0, e.fill]
        }
        51 => {
            let len = e.len % 4;
            let mut h = vec![e.fill; (usize::from(len) + 2) * 4];
            (h[0], h[1]) = (next, len);
            h
        }
        _ => {
            let len = e.len % 3;
            let mut h = vec![e.fill; (usize::from(len) + 1) * 8];
            (h[0], h[1]) = (next, len);
            h
        }
    }
}

#[derive(Arbitrary, Debug)]
enum Frame {
    Raw(Vec<u8>),
    /// Ethernet + IPv4 + 20 L4 bytes, then changes.
    Ip {
        src: u32,
        dst: u32,
        proto: u8,
        tos: u8,
        frag: u16,
        l4: [u8; 20],
        ihl: u8,
        total_len: Option<u16>,
        cut: Option<u8>,
    },
    /// Ethernet + IPv6 + extension headers + 20 upper-layer bytes, then
    /// changes.
    Ip6 {
        tc: u8,
        src: Addr6,
        dst: Addr6,
        exts: Vec<Ext>,
        /// Index into UPPER; past it, the byte itself.
        upper: u8,
        l4: [u8; 20],
        payload_len: Option<u16>,
        pad: u8,
        cut: Option<u8>,
    },
}

#[derive(Arbitrary, Debug)]
struct P {
    frame: Frame,
    l3_offset: Option<u16>,
    /// The metadata's protocol: the frame's own (IPv4 for raw bytes) or
    /// IPv4 (true) or IPv6 (false) whatever the frame.
    ipv4: Option<bool>,
    in_port: u8,
    out_port: u8,
    vlan: u16,
    class: u16,
    mark: u32,
}

fn packet(p: &P, prefixes: &[Prefix6]) -> Pkt {
    let data = match &p.frame {
        Frame::Raw(b) => b.iter().copied().take(256).collect(),
        Frame::Ip {
            src,
            dst,
            proto,
            tos,
            frag,
            l4,
            ihl,
            total_len,
            cut,
        } => {
            // IHL 5..=7: options come out of l4.
            let mut f = testkit::ipv4(*src, *dst, *proto, l4)
                .tos(*tos)
                .flags_frag(*frag)
                .ihl(5 + ihl % 3)
                .total_len(total_len.unwrap_or(40))
                .pad(false)
                .build();
            if let Some(c) = cut {
                f.truncate(usize::from(*c) % (f.len() + 1));
            }
            f
        }
        Frame::Ip6 {
            tc,
            src,
            dst,
            exts,
            upper,
            l4,
            payload_len,
            pad,
            cut,
        } => {
            let exts = &exts[..exts.len().min(10)];
            let upper = UPPER.get(usize::from(*upper)).copied().unwrap_or(*upper);
            let mut payload = Vec::new();
            for (i, e) in exts.iter().enumerate() {
                let next = exts.get(i + 1).map_or(upper, ext_code);
                payload.extend(ext_bytes(e, next));
            }
            payload.extend(l4);
            let first = exts.first().map_or(upper, ext_code);
            let plen = payload_len.unwrap_or(payload.len() as u16);
            let mut ip = vec![0x60 | (tc >> 4), tc << 4, 0, 1];
            ip.extend(plen.to_be_bytes());
            ip.extend([first, 64]);
            ip.extend(addr6(src, prefixes).to_be_bytes());
            ip.extend(addr6(dst, prefixes).to_be_bytes());
            ip.extend(payload);
            ip.extend(std::iter::repeat_n(0, usize::from(pad % 16)));
            let mut f = testkit::ethernet([2, 0, 0, 0, 0, 1], [2, 0, 0, 0, 0, 2], 0x86dd, &ip);
            if let Some(c) = cut {
                f.truncate(usize::from(*c) % (f.len() + 1));
            }
            f
        }
    };
    let mut meta = PacketMeta::received_on(u16::from(p.in_port % 8));
    meta.out_port = u16::from(p.out_port % 8);
    meta.protocol = match (p.ipv4, &p.frame) {
        (Some(true), _) | (None, Frame::Raw(_) | Frame::Ip { .. }) => 0x0800,
        (Some(false), _) | (None, Frame::Ip6 { .. }) => 0x86dd,
    };
    meta.l3_offset = p.l3_offset.unwrap_or(14);
    meta.vlan = p.vlan;
    meta.class = p.class;
    meta.mark = p.mark;
    Pkt { data, meta }
}

fuzz_target!(|input: Input| {
    // Rule tables: the structured ones, then those of the text.
    let mut tables: Vec<(toml::Table, u8, (Option<u32>, Option<u16>))> = input
        .rules
        .iter()
        .take(12)
        .map(|r| (table(r), r.action, r.set))
        .collect();
    if let Some(t) = input
        .text
        .as_deref()
        .and_then(|s| s.parse::<toml::Table>().ok())
    {
        match t.get("rule") {
            Some(Value::Array(a)) => tables.extend(
                a.iter()
                    .filter_map(|v| v.as_table().cloned())
                    .take(12)
                    .map(|t| (t, 0, (None, None))),
            ),
            _ => tables.push((t, 0, (None, None))),
        }
    }

    // parse_match on every table, at both points' key sets.
    let egress = cx(HookPoint::Egress);
    let mut rules = Vec::new();
    for (i, (t, _, _)) in tables.iter().enumerate() {
        if let Ok(r) = parse_match(t, i, &egress, MATCH_KEYS, &["action"]) {
            assert_eq!(r.validate(), Ok(()), "parse_match returned {r:?}");
            rules.push(r);
        }
        let _ = parse_match(t, i, &egress, &hooks::builtin::classify::MATCH_KEYS, &[]);
    }

    // The classifier of the rules that parsed, on arbitrary keys and on the
    // keys of the packets.
    let prefixes: Vec<Prefix6> = rules
        .iter()
        .flat_map(|r| [r.src6, r.dst6])
        .flatten()
        .collect();
    let pkts: Vec<Pkt> = input
        .pkts
        .iter()
        .take(MAX_BURST)
        .map(|p| packet(p, &prefixes))
        .collect();
    let lin = LinearClassifier::new(&rules).expect("parsed rules validate");
    let built = LinearBuilder.build(&rules).expect("parsed rules validate");
    let mut keys: Vec<Key> = input
        .keys
        .iter()
        .take(64)
        .map(|b| Key::from_bytes(*b))
        .collect();
    for (p, ct) in pkts.iter().zip([0u8, 2, 4, 8, 0xff].iter().cycle()) {
        if let Some(s) = hooks::FlowSummary::parse(p.l3()) {
            keys.push(Key::new(&s, &p.meta, *ct));
        }
    }
    let mut results = vec![u32::MAX; keys.len()];
    built.classify(&keys, &mut results);
    for (k, res) in keys.iter().zip(&results) {
        let want = rules
            .iter()
            .position(|r| reference(r, k))
            .map_or(0, |i| i as u32 + 1);
        let by_matches = rules
            .iter()
            .position(|r| r.matches(k))
            .map_or(0, |i| i as u32 + 1);
        assert_eq!(by_matches, want, "MatchRule::matches vs reference on {k:?}");
        assert_eq!(lin.classify_one(k), want, "{k:?}");
        assert_eq!(*res, want, "{k:?}");
    }

    // IPv6 keys: arbitrary ones, the same with addresses in the rules'
    // prefixes, and those of the packets.
    let mut keys6: Vec<Key6> = input
        .keys6
        .iter()
        .take(32)
        .map(|b| Key6::from_bytes(*b))
        .collect();
    for (i, b) in input.keys6.iter().take(8).enumerate() {
        let mut b = *b;
        for (at, p) in [(4, prefixes.get(2 * i)), (20, prefixes.get(2 * i + 1))] {
            if let Some(p) = p {
                let mut a = [0u8; 16];
                a.copy_from_slice(&b[at..at + 16]);
                let a = p.addr | (u128::from_be_bytes(a) & !p.mask());
                b[at..at + 16].copy_from_slice(&a.to_be_bytes());
            }
        }
        keys6.push(Key6::from_bytes(b));
    }
    let cts = [0u8, 2, 4, 8, 0xff, 0x0f, 0x31];
    for (i, (p, &ct)) in pkts.iter().zip(cts.iter().cycle()).enumerate() {
        // Key6::set_plain on the packet's l3 and on the whole frame: the
        // parsed key or nothing.
        for l3 in [p.l3(), &p.data[..]] {
            let untouched = Key6::from_bytes([0xa5 ^ i as u8; 64]);
            let mut k = untouched;
            let parsed = FlowSummary6::parse(l3);
            if k.set_plain(l3, &p.meta, ct) {
                let s = parsed.unwrap_or_else(|| panic!("set_plain on unparsable {l3:02x?}"));
                assert_eq!(k, Key6::new(&s, &p.meta, ct), "set_plain on {l3:02x?}");
                assert_eq!(s.fragment, hooks::Fragment::None);
            } else {
                assert_eq!(k, untouched, "set_plain failed but wrote on {l3:02x?}");
            }
        }
        if let Some(s) = FlowSummary6::parse(p.l3()) {
            keys6.push(Key6::new(&s, &p.meta, ct));
        }
    }
    let mut results6 = vec![u32::MAX; keys6.len()];
    built.classify6(&keys6, &mut results6);
    for (k, res) in keys6.iter().zip(&results6) {
        let want = rules
            .iter()
            .position(|r| reference6(r, k))
            .map_or(0, |i| i as u32 + 1);
        let by_matches = rules
            .iter()
            .position(|r| r.matches6(k))
            .map_or(0, |i| i as u32 + 1);
        assert_eq!(
            by_matches, want,
            "MatchRule::matches6 vs reference on {k:?}"
        );
        assert_eq!(lin.classify_one6(k), want, "{k:?}");
        assert_eq!(*res, want, "{k:?}");
    }

    // The hooks built from the tables, over the packets, twice (the second
    // burst sees what the first one's accepted flows left in the table).
    let hcx = |now: u64| HookContext {
        worker: usize::from(input.worker % 3),
        point: HookPoint::Egress,
        port: 1,
        now_ns: now,
    };
    let policy = if input.policy_drop { "drop" } else { "accept" };
    let mut fargs = HookArgs::default();
    fargs.params.insert("policy".into(), policy.into());
    if input.stateful {
        fargs.params.insert("stateful".into(), true.into());
        fargs
            .params
            .insert("conntrack_max".into(), Value::Integer(16));
    }
    let mut cargs = HookArgs::default();
    for (t, action, (mark, class)) in &tables {
        let mut f = t.clone();
        match action % 5 {
            0 => f.insert("action".into(), "accept".into()),
            1 => f.insert("action".into(), "drop".into()),
            2 => f.insert("action".into(), "count".into()),
            3 => None,
            _ => f.insert("action".into(), Value::Integer(1)),
        };
        fargs.rules.push(f);
        let mut c = t.clone();
        c.remove("action");
        if action % 2 == 0 && mark.is_none() && class.is_none() {
            c.insert("action".into(), "drop".into());
        }
        if let Some(m) = mark {
            c.insert("set_mark".into(), Value::Integer(i64::from(*m)));
        }
        if let Some(k) = class {
            c.insert("set_class".into(), Value::Integer(i64::from(*k)));
        }
        cargs.rules.push(c);
    }
    let filter_kind = FilterKind::new(Arc::new(LinearBuilder));
    if let Ok(h) = filter_kind.build(&fargs, &egress) {
        let role = Role::Filter {
            policy_drop: input.policy_drop,
        };
        let mut store = WorkerStore::new();
        let mut part = h.worker(0, &mut store);
        let part = &mut *part;
        run_checked(
            part,
            &mut store,
            role,
            &pkts,
            input.predropped,
            &hcx(input.now),
        );
        run_checked(
            part,
            &mut store,
            role,
            &pkts,
            0,
            &hcx(input.now.saturating_add(1_000_000_000)),
        );
        let _ = h.stats();
    }
    let classify_kind = ClassifyKind::new(Arc::new(LinearBuilder));
    if let Ok(h) = classify_kind.build(&cargs, &cx(HookPoint::Ingress)) {
        let mut store = WorkerStore::new();
        let mut part = h.worker(0, &mut store);
        run_checked(
            &mut *part,
            &mut store,
            Role::Classify,
            &pkts,
            input.predropped,
            &hcx(input.now),
        );
        let _ = h.stats();
    }
});
