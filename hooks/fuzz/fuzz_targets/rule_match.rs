//! Rules from arbitrary input: TOML text, and structured rule tables whose
//! values come from templates that reach deep into the parsers.
//!
//! - `parse_match` never panics (its debug assertion that what it returns
//!   validates runs too: build with `-a`);
//! - a rule set that parses builds a `LinearClassifier`, which on arbitrary
//!   keys returns the first rule that an independent reference matcher
//!   says matches, and agrees with `MatchRule::matches`;
//! - `filter` (stateless and stateful, policy accept or drop) and
//!   `classify` built from the rules run over arbitrary bursts without
//!   panicking, with verdicts only moving away from Accept and no bypass of
//!   a drop policy.

#![no_main]

use arbitrary::Arbitrary;
use hooks::builtin::{ClassifyKind, FilterKind};
use hooks::rules::{
    parse_match, ClassifierBuilder, Key, LinearBuilder, LinearClassifier, MatchRule, Prefix,
    MATCH_KEYS,
};
use hooks::testkit;
use hooks::{
    BuildContext, HookArgs, HookContext, HookKind, HookPoint, PacketMeta, WorkerStore, MAX_BURST,
};
use hooks_fuzz::{run_checked, Pkt, Role};
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;
use toml::Value;

#[derive(Arbitrary, Debug)]
struct Input {
    /// Rules as TOML text: `[[rule]]` tables, or one table as one rule.
    text: Option<String>,
    rules: Vec<Rule>,
    keys: Vec<[u8; 32]>,
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

fn leaf(l: &Leaf) -> Value {
    match l {
        Leaf::Int(i) => Value::Integer(*i),
        Leaf::Small(i) => Value::Integer(i64::from(*i)),
        Leaf::Str(s) => Value::String(s.clone()),
        Leaf::Tmpl(k, a, b) => Value::String(template(*k, *a, *b)),
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
    r.proto.is_none_or(|p| b[0] == p)
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
}

#[derive(Arbitrary, Debug)]
struct P {
    frame: Frame,
    l3_offset: Option<u16>,
    ipv4: bool,
    in_port: u8,
    out_port: u8,
    vlan: u16,
    class: u16,
    mark: u32,
}

fn packet(p: &P) -> Pkt {
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
    };
    let mut meta = PacketMeta::received_on(u16::from(p.in_port % 8));
    meta.out_port = u16::from(p.out_port % 8);
    meta.protocol = if p.ipv4 { 0x0800 } else { 0x86dd };
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
    let pkts: Vec<Pkt> = input.pkts.iter().take(MAX_BURST).map(packet).collect();
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
