//! Match conditions from a `[[hook.rule]]` TOML table.
//!
//! | key        | value                                                           |
//! |------------|-----------------------------------------------------------------|
//! | `in_port`  | port name or id, or an array of them (see below)                |
//! | `out_port` | as `in_port`                                                    |
//! | `src`      | `"10.0.0.0/8"` or `"2001:db8::/32"`, or an address; no host bits|
//! | `dst`      | as `src`, of the same family                                    |
//! | `proto`    | `"tcp"`, `"udp"`, `"icmp"`, `"icmpv6"` or 0..=255               |
//! | `sport`    | 0..=65535, `"80"` or `"1024-65535"`; needs proto tcp or udp     |
//! | `dport`    | as `sport`                                                      |
//! | `tcp_flags`| `"syn,!ack"`: SYN set and ACK clear, others any; needs proto tcp|
//! | `dscp`     | 0..=63 or `"10-20"`                                             |
//! | `vlan`     | 0..=4095 or `"100-199"`                                         |
//! | `mark`     | 0..=4294967295 (all bits), or `"0x10/0xf0"` (value/mask)        |
//! | `class`    | 0..=65535 or `"1-3"`                                            |
//! | `state`    | array of `"new"`, `"established"`, `"related"` (any of them)    |
//!
//! A port array becomes one inclusive range of port ids, so it must cover
//! every configured port between its lowest and highest id: with ports 0, 1,
//! 2 configured, `["0", "1"]` is fine and `[0, 2]` is refused (write one
//! rule per port). Ids no configured port has do not count as gaps.
//!
//! A rule whose `src` or `dst` is IPv4 matches IPv4 only, IPv6 IPv6 only;
//! one naming no address matches both families. `src` and `dst` of
//! different families are refused. For IPv6, `proto` is the upper-layer
//! protocol after the extension headers.

use super::key::{CtBits, CT_ESTABLISHED, CT_NEW, CT_RELATED};
use super::rule::{MatchRule, Prefix, Prefix6};
use crate::flow::{proto, tcp_flag};
use crate::{BuildContext, HookBuildError};
use std::net::{Ipv4Addr, Ipv6Addr};
use toml::Value;

/// Every match key [`parse_match`] knows, in documentation order.
pub const MATCH_KEYS: &[&str] = &[
    "in_port",
    "out_port",
    "src",
    "dst",
    "proto",
    "sport",
    "dport",
    "tcp_flags",
    "dscp",
    "vlan",
    "mark",
    "class",
    "state",
];

const TCP_FLAG_NAMES: [(&str, u8); 8] = [
    ("fin", tcp_flag::FIN),
    ("syn", tcp_flag::SYN),
    ("rst", tcp_flag::RST),
    ("psh", tcp_flag::PSH),
    ("ack", tcp_flag::ACK),
    ("urg", tcp_flag::URG),
    ("ece", tcp_flag::ECE),
    ("cwr", tcp_flag::CWR),
];

/// Parse the match conditions of rule number `rule` (0-based index into
/// the hook's rules, for errors). `allowed`: the match keys valid where the
/// hook sits (a subset of [`MATCH_KEYS`]); `action_keys`: the caller's own
/// keys in the same table, skipped here. Any other key is an error, as is
/// any value not of the documented form. Errors name the rule and field.
pub fn parse_match(
    t: &toml::Table,
    rule: usize,
    cx: &BuildContext,
    allowed: &[&str],
    action_keys: &[&str],
) -> Result<MatchRule, HookBuildError> {
    let err = |field: &str, msg: String| HookBuildError::rule(rule, field, msg);
    let expected = || {
        allowed
            .iter()
            .filter(|k| MATCH_KEYS.contains(k))
            .chain(action_keys)
            .copied()
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut m = MatchRule::any();
    for (key, v) in t {
        let key = key.as_str();
        if action_keys.contains(&key) {
            continue;
        }
        if !MATCH_KEYS.contains(&key) {
            return Err(err(
                key,
                format!("unknown field; expected one of: {}", expected()),
            ));
        }
        if !allowed.contains(&key) {
            return Err(err(
                key,
                format!(
                    "cannot be matched by this hook here; expected one of: {}",
                    expected()
                ),
            ));
        }
        let e = |msg: String| err(key, msg);
        match key {
            "in_port" => m.in_port = Some(ports(v, cx).map_err(e)?),
            "out_port" => m.out_port = Some(ports(v, cx).map_err(e)?),
            "src" | "dst" => set_prefix(&mut m, key, v).map_err(e)?,
            "proto" => m.proto = Some(protocol(v).map_err(e)?),
            "sport" => m.sport = Some(range(v, 65535, "1024-65535").map_err(e)?),
            "dport" => m.dport = Some(range(v, 65535, "1024-65535").map_err(e)?),
            "tcp_flags" => m.tcp_flags = Some(tcp_flags(v).map_err(e)?),
            "dscp" => {
                let (lo, hi) = range(v, 63, "10-20").map_err(e)?;
                m.dscp = Some((lo as u8, hi as u8));
            }
            "vlan" => m.vlan = Some(range(v, 4095, "100-199").map_err(e)?),
            "mark" => m.mark = Some(mark(v).map_err(e)?),
            "class" => m.class = Some(range(v, 65535, "1-3").map_err(e)?),
            "state" => m.ct_states = states(v).map_err(e)?,
            _ => unreachable!("every key of MATCH_KEYS is parsed"),
        }
    }
    if (m.src.is_some() && m.dst6.is_some()) || (m.src6.is_some() && m.dst.is_some()) {
        return Err(err("dst", MIXED_FAMILIES.into()));
    }
    let ports_ok = matches!(m.proto, Some(proto::TCP | proto::UDP));
    for (field, set) in [("sport", m.sport.is_some()), ("dport", m.dport.is_some())] {
        if set && !ports_ok {
            return Err(err(
                field,
                "ports need proto = \"tcp\" or \"udp\" in the same rule".into(),
            ));
        }
    }
    if m.tcp_flags.is_some() && m.proto != Some(proto::TCP) {
        return Err(err(
            "tcp_flags",
            "TCP flags need proto = \"tcp\" in the same rule".into(),
        ));
    }
    debug_assert_eq!(m.validate(), Ok(()));
    Ok(m)
}

/// A TOML value for messages: strings quoted, the rest as TOML writes it.
fn show(v: &Value) -> String {
    v.to_string()
}

fn port_list(cx: &BuildContext) -> String {
    if cx.ports.is_empty() {
        return "no ports are configured".into();
    }
    let names = cx
        .ports
        .iter()
        .map(|(n, id)| format!("{n} ({id})"))
        .collect::<Vec<_>>()
        .join(", ");
    format!("expected a port name or id: {names}")
}

fn port(v: &Value, cx: &BuildContext) -> Result<u16, String> {
    let found = match v {
        Value::String(s) => cx.port_id(s),
        Value::Integer(i) => u16::try_from(*i)
            .ok()
            .and_then(|id| cx.port_id(&id.to_string())),
        _ => {
            return Err(format!(
                "{}: expected a port name or id, or an array of them",
                show(v)
            ))
        }
    };
    found.ok_or_else(|| format!("unknown port {}; {}", show(v), port_list(cx)))
}

fn ports(v: &Value, cx: &BuildContext) -> Result<(u16, u16), String> {
    let Value::Array(a) = v else {
        let id = port(v, cx)?;
        return Ok((id, id));
    };
    if a.is_empty() {
        return Err("empty array: expected a port name or id, or a non-empty array of them".into());
    }
    let mut ids = a
        .iter()
        .map(|p| port(p, cx))
        .collect::<Result<Vec<_>, _>>()?;
    ids.sort_unstable();
    ids.dedup();
    let (lo, hi) = (ids[0], ids[ids.len() - 1]);
    let missing: Vec<String> = cx
        .ports
        .iter()
        .filter(|&&(_, id)| lo <= id && id <= hi && !ids.contains(&id))
        .map(|(n, id)| format!("{n} ({id})"))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "ports must be one port or a contiguous range of port ids: ids {lo}..={hi} also \
             hold {}; write one rule per port instead",
            missing.join(", ")
        ));
    }
    Ok((lo, hi))
}

/// The address text and length of a prefix string `"addr/len"` (or a
/// bare address: length `max`), the length at most `max`.
fn address_and_length<'v>(v: &'v Value, max: u8, want: &str) -> Result<(&'v str, u8), String> {
    let Value::String(s) = v else {
        return Err(format!("{}: {want}", show(v)));
    };
    match s.split_once('/') {
        Some((a, l)) => {
            let len: u8 = l
                .trim()
                .parse()
                .ok()
                .filter(|&l| l <= max)
                .ok_or_else(|| format!("{}: prefix length must be 0..={max}", show(v)))?;
            Ok((a.trim(), len))
        }
        None => Ok((s.trim(), max)),
    }
}

/// What a rule naming both families' addresses is told.
const MIXED_FAMILIES: &str = "is of another family than src: a rule names IPv4 or IPv6 \
                              addresses, not both (write one rule per family)";

/// `src` or `dst` (`key`) of `m` from `v`: the IPv4 or the IPv6 field, by
/// the prefix's family.
fn set_prefix(m: &mut MatchRule, key: &str, v: &Value) -> Result<(), String> {
    match (key, prefix_any(v)?) {
        ("src", AnyPrefix::V4(p)) => m.src = Some(p),
        ("src", AnyPrefix::V6(p)) => m.src6 = Some(p),
        (_, AnyPrefix::V4(p)) => m.dst = Some(p),
        (_, AnyPrefix::V6(p)) => m.dst6 = Some(p),
    }
    Ok(())
}

/// A prefix of either family.
enum AnyPrefix {
    V4(Prefix),
    V6(Prefix6),
}

/// An IPv4 prefix, or an IPv6 one when the string has a colon.
fn prefix_any(v: &Value) -> Result<AnyPrefix, String> {
    match v {
        Value::String(s) if s.contains(':') => prefix6(v).map(AnyPrefix::V6),
        _ => prefix(v).map(AnyPrefix::V4),
    }
}

fn prefix6(v: &Value) -> Result<Prefix6, String> {
    const WANT: &str =
        "expected an IPv6 prefix like \"2001:db8::/32\" or an address like \"2001:db8::1\"";
    let (addr, len) = address_and_length(v, 128, WANT)?;
    let addr: Ipv6Addr = addr.parse().map_err(|_| format!("{}: {WANT}", show(v)))?;
    let p = Prefix6::new(u128::from(addr), len);
    if p.addr & !p.mask() != 0 {
        let net = Prefix6::new(p.addr & p.mask(), len);
        return Err(format!(
            "{} has host bits set: did you mean \"{net}\" (the network) or \"{addr}/128\" \
             (the address)?",
            show(v)
        ));
    }
    Ok(p)
}

fn prefix(v: &Value) -> Result<Prefix, String> {
    const WANT: &str =
        "expected an IPv4 prefix like \"10.0.0.0/8\" or an address like \"10.0.0.1\" (or an \
         IPv6 one like \"2001:db8::/32\")";
    let (addr, len) = address_and_length(v, 32, WANT)?;
    let addr: Ipv4Addr = addr.parse().map_err(|_| format!("{}: {WANT}", show(v)))?;
    let p = Prefix::new(u32::from(addr), len);
    if p.addr & !p.mask() != 0 {
        let net = Prefix::new(p.addr & p.mask(), len);
        return Err(format!(
            "{} has host bits set: did you mean \"{net}\" (the network) or \"{addr}/32\" (the \
             address)?",
            show(v)
        ));
    }
    Ok(p)
}

fn protocol(v: &Value) -> Result<u8, String> {
    let want = || {
        format!(
            "{}: expected \"tcp\", \"udp\", \"icmp\", \"icmpv6\" or a protocol number 0..=255",
            show(v)
        )
    };
    match v {
        Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "tcp" => Ok(proto::TCP),
            "udp" => Ok(proto::UDP),
            "icmp" => Ok(proto::ICMP),
            "icmpv6" => Ok(proto::ICMPV6),
            _ => Err(want()),
        },
        Value::Integer(i) => u8::try_from(*i).map_err(|_| want()),
        _ => Err(want()),
    }
}

/// An integer 0..=max, or a string holding one or a range "low-high".
fn range(v: &Value, max: u16, example: &str) -> Result<(u16, u16), String> {
    let want = || {
        format!(
            "{}: expected a number 0..={max} or a range like \"{example}\"",
            show(v)
        )
    };
    let num = |s: &str| s.trim().parse::<u16>().ok().filter(|&n| n <= max);
    match v {
        Value::Integer(i) => {
            let n = u16::try_from(*i)
                .ok()
                .filter(|&n| n <= max)
                .ok_or_else(want)?;
            Ok((n, n))
        }
        Value::String(s) => {
            let (lo, hi) = match s.split_once('-') {
                Some((a, b)) => (num(a).ok_or_else(want)?, num(b).ok_or_else(want)?),
                None => {
                    let n = num(s).ok_or_else(want)?;
                    (n, n)
                }
            };
            if lo > hi {
                return Err(format!("{}: empty range (low above high)", show(v)));
            }
            Ok((lo, hi))
        }
        _ => Err(want()),
    }
}

fn tcp_flags(v: &Value) -> Result<(u8, u8), String> {
    let names = TCP_FLAG_NAMES.map(|(n, _)| n).join(", ");
    let want = || {
        format!(
            "{}: expected flag names separated by commas, `!` before a flag that must be clear, \
             e.g. \"syn,!ack\"; names: {names}",
            show(v)
        )
    };
    let Value::String(s) = v else {
        return Err(want());
    };
    let (mut value, mut mask) = (0u8, 0u8);
    for tok in s.split(',') {
        let tok = tok.trim();
        let (clear, name) = match tok.strip_prefix('!') {
            Some(n) => (true, n.trim()),
            None => (false, tok),
        };
        let bit = TCP_FLAG_NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|&(_, b)| b)
            .ok_or_else(want)?;
        if mask & bit != 0 {
            return Err(format!("{}: flag `{name}` is named twice", show(v)));
        }
        mask |= bit;
        if !clear {
            value |= bit;
        }
    }
    Ok((value, mask))
}

fn mark(v: &Value) -> Result<(u32, u32), String> {
    let want = || {
        format!(
            "{}: expected a number 0..=4294967295 or \"value/mask\" like \"0x10/0xf0\"",
            show(v)
        )
    };
    let num = |s: &str| {
        let s = s.trim();
        match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            Some(h) => u32::from_str_radix(h, 16).ok(),
            None => s.parse::<u32>().ok(),
        }
    };
    let (value, mask) = match v {
        Value::Integer(i) => (u32::try_from(*i).map_err(|_| want())?, u32::MAX),
        Value::String(s) => match s.split_once('/') {
            Some((a, b)) => (num(a).ok_or_else(want)?, num(b).ok_or_else(want)?),
            None => (num(s).ok_or_else(want)?, u32::MAX),
        },
        _ => return Err(want()),
    };
    if value & !mask != 0 {
        return Err(format!(
            "{}: value {value:#x} has bits outside mask {mask:#x} (it could never match)",
            show(v)
        ));
    }
    Ok((value, mask))
}

fn states(v: &Value) -> Result<CtBits, String> {
    let want = || {
        format!(
            "{}: expected an array of \"new\", \"established\", \"related\"",
            show(v)
        )
    };
    let one = |s: &Value| match s.as_str().map(str::to_ascii_lowercase).as_deref() {
        Some("new") => Ok(CT_NEW),
        Some("established") => Ok(CT_ESTABLISHED),
        Some("related") => Ok(CT_RELATED),
        _ => Err(want()),
    };
    match v {
        Value::Array(a) if !a.is_empty() => a.iter().try_fold(0, |acc, s| Ok(acc | one(s)?)),
        Value::String(_) => one(v),
        _ => Err(want()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::tcp_flag::{ACK, FIN, SYN};
    use crate::rules::key::{Key, CT_ALL, FLAG_L4};
    use crate::HookPoint;

    fn cx() -> BuildContext {
        BuildContext {
            workers: 1,
            point: HookPoint::Egress,
            port: 0,
            ports: vec![
                ("net_tap0".into(), 0),
                ("net_tap1".into(), 1),
                ("0000:01:00.0".into(), 2),
                ("net_null5".into(), 5),
            ],
            name: "f".into(),
        }
    }

    use super::Prefix6;
    use std::net::Ipv6Addr;

    fn parse_with(src: &str, allowed: &[&str]) -> Result<MatchRule, HookBuildError> {
        let t: toml::Table = src.parse().expect("test TOML");
        parse_match(&t, 3, &cx(), allowed, &["action", "set_mark"])
    }

    fn parse(src: &str) -> Result<MatchRule, HookBuildError> {
        parse_with(src, MATCH_KEYS)
    }

    /// The field an error names (and that it names rule 3).
    fn err_field(src: &str) -> String {
        let e = parse(src).expect_err(src);
        assert_eq!(e.rule, Some(3), "{e}");
        e.field.clone().expect("a field")
    }

    /// Parse and check the error field and that the message contains `msg`.
    fn bad(src: &str, field: &str, msg: &str) {
        let e = parse(src).expect_err(src);
        assert_eq!(
            (e.rule, e.field.as_deref()),
            (Some(3), Some(field)),
            "{src}: {e}"
        );
        assert!(e.message.contains(msg), "{src}: {e}");
    }

    /// A key to test parsed rules on: TCP 10.1.2.3:40000 -> 192.168.0.1:80,
    /// SYN, dscp 10, in 1 out 2, vlan 100, class 7, mark 0x1234, new.
    struct K {
        proto: u8,
        src: u32,
        dst: u32,
        sport: u16,
        dport: u16,
        flags: u8,
        tcp_flags: u8,
        dscp: u8,
        in_port: u16,
        out_port: u16,
        vlan: u16,
        class: u16,
        mark: u32,
    }

    impl Default for K {
        fn default() -> K {
            K {
                proto: proto::TCP,
                src: 0x0a01_0203,
                dst: 0xc0a8_0001,
                sport: 40000,
                dport: 80,
                flags: FLAG_L4 | CT_NEW,
                tcp_flags: SYN,
                dscp: 10,
                in_port: 1,
                out_port: 2,
                vlan: 100,
                class: 7,
                mark: 0x1234,
            }
        }
    }

    impl K {
        fn key(&self) -> Key {
            let mut b = [0u8; 32];
            b[0] = self.proto;
            b[1] = self.tcp_flags;
            b[2] = self.dscp;
            b[3] = self.flags;
            b[4..8].copy_from_slice(&self.src.to_be_bytes());
            b[8..12].copy_from_slice(&self.dst.to_be_bytes());
            b[12..14].copy_from_slice(&self.sport.to_be_bytes());
            b[14..16].copy_from_slice(&self.dport.to_be_bytes());
            b[16..18].copy_from_slice(&self.in_port.to_be_bytes());
            b[18..20].copy_from_slice(&self.out_port.to_be_bytes());
            b[20..22].copy_from_slice(&self.vlan.to_be_bytes());
            b[22..24].copy_from_slice(&self.class.to_be_bytes());
            b[24..28].copy_from_slice(&self.mark.to_be_bytes());
            Key::from_bytes(b)
        }
    }

    fn matches(src: &str, k: K) -> bool {
        parse(src)
            .unwrap_or_else(|e| panic!("{src}: {e}"))
            .matches(&k.key())
    }

    #[test]
    fn empty_table_and_action_keys_match_everything() {
        assert_eq!(parse(""), Ok(MatchRule::any()));
        assert_eq!(
            parse("action = \"drop\"\nset_mark = 3"),
            Ok(MatchRule::any())
        );
    }

    #[test]
    fn ports_by_name_id_and_array() {
        assert_eq!(
            parse("in_port = \"net_tap1\"").unwrap().in_port,
            Some((1, 1))
        );
        assert_eq!(parse("in_port = 2").unwrap().in_port, Some((2, 2)));
        assert_eq!(parse("in_port = \"2\"").unwrap().in_port, Some((2, 2)));
        assert_eq!(
            parse("out_port = [\"0000:01:00.0\", 0, \"net_tap1\"]")
                .unwrap()
                .out_port,
            Some((0, 2))
        );
        // 3 and 4 are no port's ids: not gaps.
        assert_eq!(parse("out_port = [2, 5]").unwrap().out_port, Some((2, 5)));
        assert!(matches("in_port = \"net_tap1\"", K::default()));
        assert!(!matches("in_port = 0", K::default()));
        assert!(matches("out_port = [0, 1, 2]", K::default()));
        assert!(!matches("out_port = [\"net_null5\"]", K::default()));
    }

    #[test]
    fn bad_ports() {
        bad("in_port = \"eth9\"", "in_port", "unknown port \"eth9\"");
        bad("in_port = 3", "in_port", "net_tap0 (0)");
        bad("out_port = -1", "out_port", "unknown port");
        bad("out_port = []", "out_port", "non-empty array");
        bad("in_port = [0, 2]", "in_port", "contiguous range");
        bad("in_port = [0, 2]", "in_port", "net_tap1 (1)");
        bad("in_port = 1.5", "in_port", "port name or id");
        bad(
            "in_port = [0, \"nope\"]",
            "in_port",
            "unknown port \"nope\"",
        );
    }

    #[test]
    fn ipv6_prefixes_name_the_family_and_mixed_rules_are_refused() {
        let r =
            parse("src = \"2001:db8::/32\"\ndst = \"2001:db8:1::9\"\nproto = \"icmpv6\"").unwrap();
        assert_eq!(r.src6, Some(Prefix6::new(0x2001_0db8 << 96, 32)));
        assert_eq!(
            r.dst6,
            Some(Prefix6::new(
                u128::from(Ipv6Addr::new(0x2001, 0xdb8, 1, 0, 0, 0, 0, 9)),
                128
            ))
        );
        assert_eq!((r.src, r.dst, r.proto), (None, None, Some(58)));
        assert_eq!(r.family(), Some(crate::rules::Family::Ipv6));
        assert_eq!(parse("proto = \"tcp\"").unwrap().family(), None);
        assert_eq!(
            parse("dst = \"10.0.0.0/8\"").unwrap().family(),
            Some(crate::rules::Family::Ipv4)
        );
        bad(
            "src = \"2001:db8::1/32\"",
            "src",
            "did you mean \"2001:db8::/32\"",
        );
        bad("dst = \"2001:db8::/129\"", "dst", "0..=128");
        bad("src = \"2001:db8::zz\"", "src", "IPv6 prefix");
        bad(
            "src = \"10.0.0.0/8\"\ndst = \"2001:db8::/32\"",
            "dst",
            "another family than src",
        );
        bad(
            "src = \"2001:db8::/32\"\ndst = \"10.0.0.1\"",
            "dst",
            "one rule per family",
        );
    }

    #[test]
    fn prefixes() {
        let r = parse("src = \"10.0.0.0/8\"\ndst = \"192.168.0.1\"").unwrap();
        assert_eq!(r.src, Some(Prefix::new(0x0a00_0000, 8)));
        assert_eq!(r.dst, Some(Prefix::new(0xc0a8_0001, 32)));
        assert_eq!(
            parse("src = \"0.0.0.0/0\"").unwrap().src,
            Some(Prefix::new(0, 0))
        );
        assert!(matches("src = \"10.0.0.0/8\"", K::default()));
        assert!(!matches("src = \"10.0.0.0/16\"", K::default()));
        assert!(matches("dst = \"192.168.0.1\"", K::default()));
        assert!(!matches("dst = \"192.168.0.2/32\"", K::default()));
        // Edges of a /31: .0 and .1 in, .2 out.
        for (a, m) in [
            (0xc0a8_0000, true),
            (0xc0a8_0001, true),
            (0xc0a8_0002, false),
        ] {
            let k = K {
                dst: a,
                ..K::default()
            };
            assert_eq!(matches("dst = \"192.168.0.0/31\"", k), m, "{a:#x}");
        }
    }

    #[test]
    fn bad_prefixes() {
        bad("src = \"10.0.0.1/8\"", "src", "host bits set");
        bad("src = \"10.0.0.1/8\"", "src", "\"10.0.0.0/8\"");
        bad("src = \"10.0.0.1/8\"", "src", "10.0.0.1/32");
        bad("dst = \"10.0.0.0/33\"", "dst", "0..=32");
        bad("dst = \"10.0.0/8\"", "dst", "IPv4 prefix");
        bad("dst = 10", "dst", "IPv4 prefix");
        bad("src = \"10.0.0.0/x\"", "src", "0..=32");
    }

    #[test]
    fn protocols() {
        assert_eq!(parse("proto = \"tcp\"").unwrap().proto, Some(6));
        assert_eq!(parse("proto = \"UDP\"").unwrap().proto, Some(17));
        assert_eq!(parse("proto = \"icmp\"").unwrap().proto, Some(1));
        assert_eq!(parse("proto = 0").unwrap().proto, Some(0));
        assert_eq!(parse("proto = 255").unwrap().proto, Some(255));
        assert!(matches("proto = \"tcp\"", K::default()));
        assert!(!matches("proto = 17", K::default()));
        bad("proto = 256", "proto", "0..=255");
        bad("proto = -1", "proto", "0..=255");
        bad("proto = \"sctp\"", "proto", "\"tcp\", \"udp\", \"icmp\"");
    }

    #[test]
    fn port_ranges_and_edges() {
        let r = parse("proto = \"tcp\"\nsport = \"1024-65535\"\ndport = 80").unwrap();
        assert_eq!((r.sport, r.dport), (Some((1024, 65535)), Some((80, 80))));
        assert_eq!(
            parse("proto = \"udp\"\ndport = \"53\"").unwrap().dport,
            Some((53, 53))
        );
        assert_eq!(
            parse("proto = \"udp\"\ndport = \" 0 - 65535 \"")
                .unwrap()
                .dport,
            Some((0, 65535))
        );
        let r = "proto = \"tcp\"\ndport = \"80-90\"";
        for (p, m) in [(79, false), (80, true), (90, true), (91, false)] {
            let k = K {
                dport: p,
                ..K::default()
            };
            assert_eq!(matches(r, k), m, "dport {p}");
        }
        let r = "proto = \"tcp\"\nsport = 65535";
        assert!(matches(
            r,
            K {
                sport: 65535,
                ..K::default()
            }
        ));
        assert!(!matches(r, K::default()));
        // No L4 (a later fragment): port rules never match.
        let k = K {
            flags: CT_NEW,
            ..K::default()
        };
        assert!(!matches("proto = \"tcp\"\ndport = \"0-65535\"", k));
    }

    #[test]
    fn bad_port_ranges() {
        bad("proto = \"tcp\"\nsport = 65536", "sport", "0..=65535");
        bad("proto = \"tcp\"\nsport = -1", "sport", "0..=65535");
        bad("proto = \"tcp\"\ndport = \"90-80\"", "dport", "empty range");
        bad("proto = \"tcp\"\ndport = \"80-\"", "dport", "range like");
        bad("proto = \"tcp\"\ndport = \"http\"", "dport", "range like");
        bad("proto = \"tcp\"\ndport = 8.0", "dport", "range like");
        bad("dport = 80", "dport", "proto = \"tcp\" or \"udp\"");
        bad(
            "proto = \"icmp\"\nsport = 80",
            "sport",
            "proto = \"tcp\" or \"udp\"",
        );
    }

    #[test]
    fn tcp_flag_sets() {
        assert_eq!(
            parse("proto = \"tcp\"\ntcp_flags = \"syn,!ack\"")
                .unwrap()
                .tcp_flags,
            Some((SYN, SYN | ACK))
        );
        assert_eq!(
            parse("proto = \"tcp\"\ntcp_flags = \" FIN , ! syn\"")
                .unwrap()
                .tcp_flags,
            Some((FIN, FIN | SYN))
        );
        let r = "proto = \"tcp\"\ntcp_flags = \"syn,!ack\"";
        assert!(matches(r, K::default()));
        assert!(!matches(
            r,
            K {
                tcp_flags: SYN | ACK,
                ..K::default()
            }
        ));
        assert!(matches(
            r,
            K {
                tcp_flags: SYN | FIN,
                ..K::default()
            }
        ));
        bad(
            "proto = \"tcp\"\ntcp_flags = \"syn,bogus\"",
            "tcp_flags",
            "names: fin",
        );
        bad("proto = \"tcp\"\ntcp_flags = \"\"", "tcp_flags", "syn,!ack");
        bad(
            "proto = \"tcp\"\ntcp_flags = \"syn,!syn\"",
            "tcp_flags",
            "named twice",
        );
        bad("proto = \"tcp\"\ntcp_flags = 2", "tcp_flags", "flag names");
        bad("tcp_flags = \"syn\"", "tcp_flags", "proto = \"tcp\"");
        bad(
            "proto = \"udp\"\ntcp_flags = \"syn\"",
            "tcp_flags",
            "proto = \"tcp\"",
        );
    }

    #[test]
    fn dscp_vlan_class() {
        assert_eq!(parse("dscp = 46").unwrap().dscp, Some((46, 46)));
        assert_eq!(parse("dscp = \"0-63\"").unwrap().dscp, Some((0, 63)));
        assert_eq!(parse("vlan = 4095").unwrap().vlan, Some((4095, 4095)));
        assert_eq!(
            parse("class = \"1-65535\"").unwrap().class,
            Some((1, 65535))
        );
        assert!(matches("dscp = \"10-11\"", K::default()));
        assert!(!matches("dscp = \"11-63\"", K::default()));
        assert!(matches("vlan = \"0-100\"", K::default()));
        assert!(!matches("vlan = 101", K::default()));
        assert!(matches("class = 7", K::default()));
        assert!(!matches("class = \"0-6\"", K::default()));
        bad("dscp = 64", "dscp", "0..=63");
        bad("dscp = \"10-64\"", "dscp", "0..=63");
        bad("vlan = 4096", "vlan", "0..=4095");
        bad("vlan = \"5-4\"", "vlan", "empty range");
        bad("class = 65536", "class", "0..=65535");
        bad("class = true", "class", "0..=65535");
    }

    #[test]
    fn marks() {
        assert_eq!(parse("mark = 16").unwrap().mark, Some((16, u32::MAX)));
        assert_eq!(
            parse("mark = 4294967295").unwrap().mark,
            Some((u32::MAX, u32::MAX))
        );
        assert_eq!(
            parse("mark = \"0x10/0xf0\"").unwrap().mark,
            Some((0x10, 0xf0))
        );
        assert_eq!(
            parse("mark = \"0x10\"").unwrap().mark,
            Some((0x10, u32::MAX))
        );
        assert_eq!(parse("mark = \"16/255\"").unwrap().mark, Some((16, 255)));
        assert_eq!(parse("mark = \"0/0\"").unwrap().mark, Some((0, 0)));
        assert!(matches("mark = \"0x30/0xf0\"", K::default()));
        assert!(!matches("mark = \"0x20/0xf0\"", K::default()));
        assert!(matches("mark = 4660", K::default()));
        assert!(!matches("mark = 4661", K::default()));
        bad("mark = 4294967296", "mark", "0..=4294967295");
        bad("mark = -1", "mark", "0..=4294967295");
        bad("mark = \"0x11/0xf0\"", "mark", "outside mask");
        bad("mark = \"0xzz\"", "mark", "value/mask");
        bad("mark = \"1/2/3\"", "mark", "value/mask");
    }

    #[test]
    fn states() {
        assert_eq!(parse("state = [\"new\"]").unwrap().ct_states, CT_NEW);
        assert_eq!(
            parse("state = [\"established\", \"related\"]")
                .unwrap()
                .ct_states,
            CT_ESTABLISHED | CT_RELATED
        );
        assert_eq!(
            parse("state = [\"new\", \"established\", \"related\", \"new\"]")
                .unwrap()
                .ct_states,
            CT_ALL
        );
        assert_eq!(parse("state = \"related\"").unwrap().ct_states, CT_RELATED);
        assert!(matches("state = [\"new\", \"related\"]", K::default()));
        assert!(!matches("state = [\"established\"]", K::default()));
        let untracked = K {
            flags: FLAG_L4,
            ..K::default()
        };
        assert!(!matches(
            "state = [\"new\", \"established\", \"related\"]",
            untracked
        ));
        bad("state = []", "state", "array of");
        bad("state = [\"invalid\"]", "state", "\"new\", \"established\"");
        bad("state = [1]", "state", "array of");
    }

    #[test]
    fn every_field_together() {
        let src = r#"
            in_port = "net_tap1"
            out_port = [1, 2]
            src = "10.1.0.0/16"
            dst = "192.168.0.0/24"
            proto = "tcp"
            sport = "32768-65535"
            dport = 80
            tcp_flags = "syn,!rst"
            dscp = "8-15"
            vlan = 100
            mark = "0x1000/0xf000"
            class = "5-9"
            state = ["new"]
            action = "accept"
        "#;
        assert!(matches(src, K::default()));
        // Each field alone spoils it.
        let spoil: Vec<K> = vec![
            K {
                in_port: 0,
                ..K::default()
            },
            K {
                out_port: 5,
                ..K::default()
            },
            K {
                src: 0x0a02_0203,
                ..K::default()
            },
            K {
                dst: 0xc0a8_0101,
                ..K::default()
            },
            K {
                proto: proto::UDP,
                ..K::default()
            },
            K {
                sport: 32767,
                ..K::default()
            },
            K {
                dport: 81,
                ..K::default()
            },
            K {
                tcp_flags: SYN | tcp_flag::RST,
                ..K::default()
            },
            K {
                dscp: 16,
                ..K::default()
            },
            K {
                vlan: 99,
                ..K::default()
            },
            K {
                mark: 0x2234,
                ..K::default()
            },
            K {
                class: 10,
                ..K::default()
            },
            K {
                flags: FLAG_L4 | CT_ESTABLISHED,
                ..K::default()
            },
        ];
        for (i, k) in spoil.into_iter().enumerate() {
            assert!(!matches(src, k), "spoiler {i}");
        }
    }

    #[test]
    fn unknown_and_disallowed_keys() {
        assert_eq!(err_field("colour = \"red\""), "colour");
        bad(
            "colour = 1",
            "colour",
            "unknown field; expected one of: in_port",
        );
        bad("colour = 1", "colour", "class, state, action, set_mark");
        // A known key the caller does not allow where it sits.
        let e = parse_with("out_port = 1", &["in_port", "src"]).unwrap_err();
        assert_eq!(e.field.as_deref(), Some("out_port"));
        assert!(
            e.message
                .contains("expected one of: in_port, src, action, set_mark"),
            "{e}"
        );
        // Action keys are skipped even when they look like nonsense.
        assert!(parse_with("action = [1, 2]", &[]).is_ok());
    }

    #[test]
    fn display_names_rule_and_field() {
        let e = parse("vlan = 5000").unwrap_err();
        assert_eq!(
            e.to_string(),
            "rule 4 field `vlan`: 5000: expected a number 0..=4095 or a range like \"100-199\""
        );
    }
}
