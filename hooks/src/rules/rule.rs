//! One rule's match conditions and the reference semantics of matching
//! them against a [`Key`]. Every condition is optional (absent = any); a
//! rule matches when all its conditions do.

use super::key::{CtBits, Key, CT_ALL, CT_ESTABLISHED, CT_NEW, CT_RELATED};
use super::key6::Key6;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

pub use super::parse::{parse_match, MATCH_KEYS};

/// An IPv4 prefix: address in host byte order, length 0..=32, no host bits
/// set (checked by [`MatchRule::validate`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Prefix {
    pub addr: u32,
    pub len: u8,
}

impl Prefix {
    pub fn new(addr: u32, len: u8) -> Prefix {
        Prefix { addr, len }
    }

    /// The network mask of the length (0 for /0; lengths above 32 are
    /// treated as 32).
    pub fn mask(&self) -> u32 {
        match self.len {
            0 => 0,
            l => u32::MAX << (32 - u32::from(l.min(32))),
        }
    }

    /// Does `a` (host byte order) fall in the prefix?
    #[inline(always)]
    pub fn contains(&self, a: u32) -> bool {
        (a ^ self.addr) & self.mask() == 0
    }
}

impl fmt::Display for Prefix {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv4Addr::from(self.addr), self.len)
    }
}

/// An IPv6 prefix: address as a number (the wire's bytes, big-endian),
/// length 0..=128, no host bits set (checked by [`MatchRule::validate`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Prefix6 {
    pub addr: u128,
    pub len: u8,
}

impl Prefix6 {
    pub fn new(addr: u128, len: u8) -> Prefix6 {
        Prefix6 { addr, len }
    }

    /// The network mask of the length (lengths above 128 are treated as 128).
    pub fn mask(&self) -> u128 {
        match self.len {
            0 => 0,
            l => u128::MAX << (128 - u32::from(l.min(128))),
        }
    }

    /// Does `a` fall in the prefix?
    #[inline(always)]
    pub fn contains(&self, a: u128) -> bool {
        (a ^ self.addr) & self.mask() == 0
    }
}

impl fmt::Display for Prefix6 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", Ipv6Addr::from(self.addr), self.len)
    }
}

/// The address family a rule applies to, by the addresses it names.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    Ipv4,
    Ipv6,
}

/// The match conditions of one rule. `None` (or 0 for `ct_states`) = any.
/// Ranges are inclusive `(low, high)`; `(value, mask)` pairs match when
/// `field & mask == value`.
///
/// Port conditions (`sport`, `dport`) and `tcp_flags` need the key's L4
/// bit ([`super::key::FLAG_L4`]): non-first fragments and packets whose L4
/// header could not be read never match them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MatchRule {
    /// Input port ids.
    pub in_port: Option<(u16, u16)>,
    /// Output port ids.
    pub out_port: Option<(u16, u16)>,
    /// IPv4 source and destination prefixes: the rule matches IPv4 only.
    pub src: Option<Prefix>,
    pub dst: Option<Prefix>,
    /// IPv6 source and destination prefixes: the rule matches IPv6 only. A
    /// rule names addresses of one family ([`MatchRule::validate`]); with
    /// none, it matches both.
    pub src6: Option<Prefix6>,
    pub dst6: Option<Prefix6>,
    pub proto: Option<u8>,
    pub sport: Option<(u16, u16)>,
    pub dport: Option<(u16, u16)>,
    /// `(value, mask)`: matches when `flags & mask == value`.
    pub tcp_flags: Option<(u8, u8)>,
    pub dscp: Option<(u8, u8)>,
    pub vlan: Option<(u16, u16)>,
    /// `(value, mask)`: matches when `mark & mask == value`.
    pub mark: Option<(u32, u32)>,
    pub class: Option<(u16, u16)>,
    /// Connection-tracking states (`CT_*` bits) the packet must be in, any
    /// of them; 0 = any state including untracked. An untracked packet
    /// never matches a rule with states.
    pub ct_states: CtBits,
}

#[inline(always)]
fn in_range<T: PartialOrd + Copy>(r: Option<(T, T)>, v: T) -> bool {
    match r {
        None => true,
        Some((lo, hi)) => lo <= v && v <= hi,
    }
}

impl MatchRule {
    /// A rule that matches every packet.
    pub fn any() -> MatchRule {
        MatchRule::default()
    }

    /// Does the rule need the key's L4 bit (it has a port or TCP flags
    /// condition)?
    #[inline(always)]
    pub fn needs_l4(&self) -> bool {
        self.sport.is_some() || self.dport.is_some() || self.tcp_flags.is_some()
    }

    /// The one family the rule names addresses of; `None`: it names none
    /// and matches both.
    pub fn family(&self) -> Option<Family> {
        if self.src6.is_some() || self.dst6.is_some() {
            Some(Family::Ipv6)
        } else if self.src.is_some() || self.dst.is_some() {
            Some(Family::Ipv4)
        } else {
            None
        }
    }

    /// Does the rule apply to packets of `family`?
    pub fn applies_to(&self, family: Family) -> bool {
        self.family().is_none_or(|f| f == family)
    }

    /// Does the IPv4 key match every condition? (An IPv6 rule never does.)
    #[inline]
    pub fn matches(&self, k: &Key) -> bool {
        if self.src6.is_some() || self.dst6.is_some() {
            return false;
        }
        if let Some(p) = self.proto {
            if k.proto() != p {
                return false;
            }
        }
        if let Some(p) = self.src {
            if !p.contains(k.src()) {
                return false;
            }
        }
        if let Some(p) = self.dst {
            if !p.contains(k.dst()) {
                return false;
            }
        }
        if self.needs_l4() && !k.l4() {
            return false;
        }
        if let Some((v, m)) = self.tcp_flags {
            if k.tcp_flags() & m != v {
                return false;
            }
        }
        if let Some((v, m)) = self.mark {
            if k.mark() & m != v {
                return false;
            }
        }
        if self.ct_states != 0 && k.ct() & self.ct_states == 0 {
            return false;
        }
        in_range(self.sport, k.sport())
            && in_range(self.dport, k.dport())
            && in_range(self.in_port, k.in_port())
            && in_range(self.out_port, k.out_port())
            && in_range(self.dscp, k.dscp())
            && in_range(self.vlan, k.vlan())
            && in_range(self.class, k.class())
    }

    /// Does the IPv6 key match every condition? (An IPv4 rule never does.)
    #[inline]
    pub fn matches6(&self, k: &Key6) -> bool {
        if self.src.is_some() || self.dst.is_some() {
            return false;
        }
        if self.proto.is_some_and(|p| k.proto() != p)
            || self.src6.is_some_and(|p| !p.contains(k.src()))
            || self.dst6.is_some_and(|p| !p.contains(k.dst()))
            || (self.needs_l4() && !k.l4())
            || self.tcp_flags.is_some_and(|(v, m)| k.tcp_flags() & m != v)
            || self.mark.is_some_and(|(v, m)| k.mark() & m != v)
            || (self.ct_states != 0 && k.ct() & self.ct_states == 0)
        {
            return false;
        }
        in_range(self.sport, k.sport())
            && in_range(self.dport, k.dport())
            && in_range(self.in_port, k.in_port())
            && in_range(self.out_port, k.out_port())
            && in_range(self.dscp, k.dscp())
            && in_range(self.vlan, k.vlan())
            && in_range(self.class, k.class())
    }

    /// Is the rule well formed: prefixes of length 0..=32 (IPv6: 0..=128)
    /// without host bits, addresses of one family,
    /// ranges with `low <= high`, `(value, mask)` pairs with no value bit
    /// outside the mask, states only `CT_*` bits? Every classifier builder
    /// refuses rules that are not, so that all implementations agree (a
    /// malformed condition has no single obvious meaning).
    pub fn validate(&self) -> Result<(), String> {
        for (name, p) in [("src", self.src), ("dst", self.dst)] {
            if let Some(p) = p {
                if p.len > 32 {
                    return Err(format!("{name}: prefix length {} is above 32", p.len));
                }
                if p.addr & !p.mask() != 0 {
                    let net = Prefix::new(p.addr & p.mask(), p.len);
                    return Err(format!("{name}: {p} has host bits set (network is {net})"));
                }
            }
        }
        for (name, p) in [("src", self.src6), ("dst", self.dst6)] {
            if let Some(p) = p {
                if p.len > 128 {
                    return Err(format!("{name}: prefix length {} is above 128", p.len));
                }
                if p.addr & !p.mask() != 0 {
                    let net = Prefix6::new(p.addr & p.mask(), p.len);
                    return Err(format!("{name}: {p} has host bits set (network is {net})"));
                }
            }
        }
        let v4 = self.src.is_some() || self.dst.is_some();
        let v6 = self.src6.is_some() || self.dst6.is_some();
        if v4 && v6 {
            return Err(
                "src and dst are of different families: a rule names IPv4 or IPv6 addresses, \
                 not both (write one rule per family)"
                    .into(),
            );
        }
        let ranges16 = [
            ("in_port", self.in_port),
            ("out_port", self.out_port),
            ("sport", self.sport),
            ("dport", self.dport),
            ("vlan", self.vlan),
            ("class", self.class),
        ];
        for (name, r) in ranges16 {
            if let Some((lo, hi)) = r {
                if lo > hi {
                    return Err(format!("{name}: empty range {lo}-{hi}"));
                }
            }
        }
        if let Some((lo, hi)) = self.dscp {
            if lo > hi {
                return Err(format!("dscp: empty range {lo}-{hi}"));
            }
        }
        if let Some((v, m)) = self.tcp_flags {
            if v & !m != 0 {
                return Err(format!(
                    "tcp_flags: value {v:#04x} has bits outside mask {m:#04x}"
                ));
            }
        }
        if let Some((v, m)) = self.mark {
            if v & !m != 0 {
                return Err(format!("mark: value {v:#x} has bits outside mask {m:#x}"));
            }
        }
        if self.ct_states & !CT_ALL != 0 {
            return Err(format!(
                "ct_states {:#04x}: only CT_NEW, CT_ESTABLISHED and CT_RELATED bits are states",
                self.ct_states
            ));
        }
        Ok(())
    }

    /// The state bits of `ct_states`, one at a time.
    pub fn states(&self) -> impl Iterator<Item = CtBits> + '_ {
        [CT_NEW, CT_ESTABLISHED, CT_RELATED]
            .into_iter()
            .filter(move |b| self.ct_states & b != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::{proto, tcp_flag};
    use crate::rules::key::FLAG_L4;
    use crate::{FlowSummary, PacketMeta};
    use std::net::Ipv6Addr;

    /// A TCP key with every field set to something recognisable.
    fn key() -> Key {
        let s = FlowSummary {
            src: 0x0a01_0203,
            dst: 0xc0a8_0001,
            proto: proto::TCP,
            dscp: 10,
            l4: true,
            sport: 40000,
            dport: 80,
            tcp_flags: tcp_flag::SYN,
            ..FlowSummary::default()
        };
        let mut m = PacketMeta::received_on(1);
        m.out_port = 2;
        m.vlan = 100;
        m.class = 7;
        m.mark = 0x1234;
        Key::new(&s, &m, CT_NEW)
    }

    fn with(f: impl FnOnce(&mut MatchRule)) -> MatchRule {
        let mut r = MatchRule::any();
        f(&mut r);
        r
    }

    /// An IPv6 TCP key 2001:db8:1::2 → 2001:db8:2::9, port 22, the
    /// metadata of [`key`].
    fn key6() -> Key6 {
        let s = crate::FlowSummary6 {
            src: "2001:db8:1::2".parse::<Ipv6Addr>().unwrap().octets(),
            dst: "2001:db8:2::9".parse::<Ipv6Addr>().unwrap().octets(),
            proto: proto::TCP,
            dscp: 10,
            l4: true,
            sport: 40000,
            dport: 22,
            tcp_flags: tcp_flag::SYN,
            ..crate::FlowSummary6::default()
        };
        let mut m = PacketMeta::received_on(1);
        (m.out_port, m.vlan, m.class, m.mark) = (2, 100, 7, 0x1234);
        Key6::new(&s, &m, CT_NEW)
    }

    #[test]
    fn a_rule_matches_the_family_its_addresses_name_or_both() {
        let p6 = |s: &str, len| {
            let a: Ipv6Addr = s.parse().unwrap();
            Prefix6::new(u128::from(a), len)
        };
        let (k4, k6) = (key(), key6());
        let both = with(|r| {
            r.proto = Some(proto::TCP);
            r.dport = Some((1, 100));
            r.mark = Some((0x1234, 0xffff));
            r.ct_states = CT_NEW;
        });
        assert!(both.matches(&k4) && both.matches6(&k6));
        let v6 = with(|r| r.dst6 = Some(p6("2001:db8:2::", 48)));
        assert!(v6.matches6(&k6) && !v6.matches(&k4));
        assert!(
            !v6.matches(&Key::default()),
            "an IPv6 rule never matches IPv4"
        );
        let v6_other = with(|r| r.src6 = Some(p6("2001:db8:2::", 48)));
        assert!(!v6_other.matches6(&k6));
        let v4 = with(|r| r.src = Some(Prefix::new(0, 0)));
        assert!(v4.matches(&k4) && !v4.matches6(&k6), "0.0.0.0/0 is IPv4's");
        for (name, yes, no) in [
            (
                "sport",
                with(|r| r.sport = Some((40000, 40000))),
                with(|r| r.sport = Some((1, 2))),
            ),
            (
                "in_port",
                with(|r| r.in_port = Some((1, 1))),
                with(|r| r.in_port = Some((2, 2))),
            ),
            (
                "out_port",
                with(|r| r.out_port = Some((2, 2))),
                with(|r| r.out_port = Some((3, 3))),
            ),
            (
                "dscp",
                with(|r| r.dscp = Some((10, 10))),
                with(|r| r.dscp = Some((11, 63))),
            ),
            (
                "vlan",
                with(|r| r.vlan = Some((100, 100))),
                with(|r| r.vlan = Some((1, 2))),
            ),
            (
                "class",
                with(|r| r.class = Some((7, 7))),
                with(|r| r.class = Some((8, 9))),
            ),
            (
                "tcp_flags",
                with(|r| r.tcp_flags = Some((tcp_flag::SYN, tcp_flag::SYN))),
                with(|r| r.tcp_flags = Some((tcp_flag::ACK, tcp_flag::ACK))),
            ),
            (
                "proto",
                with(|r| r.proto = Some(proto::TCP)),
                with(|r| r.proto = Some(58)),
            ),
        ] {
            assert!(yes.matches6(&k6), "{name}");
            assert!(!no.matches6(&k6), "{name}");
        }
        let mixed = with(|r| {
            r.src = Some(Prefix::new(0, 0));
            r.dst6 = Some(p6("::", 0));
        });
        assert!(mixed
            .validate()
            .unwrap_err()
            .contains("one rule per family"));
        let host_bits = with(|r| r.dst6 = Some(p6("2001:db8::1", 64)));
        assert!(host_bits.validate().unwrap_err().contains("host bits"));
    }

    #[test]
    fn empty_rule_matches_everything() {
        assert!(MatchRule::any().matches(&key()));
        assert!(MatchRule::any().matches(&Key::default()));
    }

    #[test]
    fn each_field_matches_and_not() {
        let k = key();
        let cases: Vec<(&str, MatchRule, MatchRule)> = vec![
            (
                "in_port",
                with(|r| r.in_port = Some((1, 1))),
                with(|r| r.in_port = Some((2, 5))),
            ),
            (
                "out_port",
                with(|r| r.out_port = Some((0, 2))),
                with(|r| r.out_port = Some((3, 3))),
            ),
            (
                "src",
                with(|r| r.src = Some(Prefix::new(0x0a00_0000, 8))),
                with(|r| r.src = Some(Prefix::new(0x0a01_0202, 32))),
            ),
            (
                "dst",
                with(|r| r.dst = Some(Prefix::new(0xc0a8_0001, 32))),
                with(|r| r.dst = Some(Prefix::new(0xc0a9_0000, 16))),
            ),
            (
                "proto",
                with(|r| r.proto = Some(proto::TCP)),
                with(|r| r.proto = Some(proto::UDP)),
            ),
            (
                "sport",
                with(|r| r.sport = Some((40000, 40000))),
                with(|r| r.sport = Some((40001, 65535))),
            ),
            (
                "dport",
                with(|r| r.dport = Some((1, 80))),
                with(|r| r.dport = Some((81, 443))),
            ),
            (
                "tcp_flags",
                with(|r| r.tcp_flags = Some((tcp_flag::SYN, tcp_flag::SYN | tcp_flag::ACK))),
                with(|r| r.tcp_flags = Some((tcp_flag::ACK, tcp_flag::ACK))),
            ),
            (
                "dscp",
                with(|r| r.dscp = Some((10, 20))),
                with(|r| r.dscp = Some((0, 9))),
            ),
            (
                "vlan",
                with(|r| r.vlan = Some((100, 100))),
                with(|r| r.vlan = Some((101, 4095))),
            ),
            (
                "mark",
                with(|r| r.mark = Some((0x30, 0xf0))),
                with(|r| r.mark = Some((0x1235, u32::MAX))),
            ),
            (
                "class",
                with(|r| r.class = Some((7, 7))),
                with(|r| r.class = Some((8, 9))),
            ),
            (
                "state",
                with(|r| r.ct_states = CT_NEW | CT_RELATED),
                with(|r| r.ct_states = CT_ESTABLISHED),
            ),
        ];
        for (name, yes, no) in cases {
            assert_eq!(yes.validate(), Ok(()), "{name}");
            assert_eq!(no.validate(), Ok(()), "{name}");
            assert!(yes.matches(&k), "{name} should match {k:?}");
            assert!(!no.matches(&k), "{name} should not match {k:?}");
        }
    }

    #[test]
    fn range_edges_are_inclusive() {
        let k = key(); // dport 80
        for (lo, hi, m) in [
            (80, 80, true),
            (79, 80, true),
            (80, 81, true),
            (81, 90, false),
            (0, 79, false),
        ] {
            assert_eq!(
                with(|r| r.dport = Some((lo, hi))).matches(&k),
                m,
                "{lo}-{hi}"
            );
        }
    }

    #[test]
    fn prefix_lengths() {
        let k = key(); // src 10.1.2.3
        assert!(with(|r| r.src = Some(Prefix::new(0, 0))).matches(&k));
        assert!(with(|r| r.src = Some(Prefix::new(0, 1))).matches(&k));
        assert!(!with(|r| r.src = Some(Prefix::new(0x8000_0000, 1))).matches(&k));
        assert!(with(|r| r.src = Some(Prefix::new(0x0a01_0202, 31))).matches(&k));
        assert!(!with(|r| r.src = Some(Prefix::new(0x0a01_0204, 30))).matches(&k));
    }

    #[test]
    fn port_and_flag_conditions_need_l4() {
        let mut b = *key().as_bytes();
        b[3] &= !FLAG_L4;
        let no_l4 = Key::from_bytes(b);
        for r in [
            with(|r| r.sport = Some((0, 65535))),
            with(|r| r.dport = Some((0, 65535))),
            with(|r| r.tcp_flags = Some((0, 0))),
        ] {
            assert!(r.matches(&key()), "{r:?}");
            assert!(!r.matches(&no_l4), "{r:?} on a key without L4");
        }
        // Other conditions do not care.
        assert!(with(|r| r.proto = Some(proto::TCP)).matches(&no_l4));
    }

    #[test]
    fn states() {
        let base = key();
        let b = *base.as_bytes();
        let k = |ct: u8| {
            let mut b = b;
            b[3] = FLAG_L4 | ct;
            Key::from_bytes(b)
        };
        let est_rel = with(|r| r.ct_states = CT_ESTABLISHED | CT_RELATED);
        assert!(est_rel.matches(&k(CT_ESTABLISHED)));
        assert!(est_rel.matches(&k(CT_RELATED)));
        assert!(!est_rel.matches(&k(CT_NEW)));
        assert!(
            !est_rel.matches(&k(0)),
            "untracked never matches a state rule"
        );
        assert!(!with(|r| r.ct_states = CT_ALL).matches(&k(0)));
        assert!(
            MatchRule::any().matches(&k(0)),
            "no states = any, untracked too"
        );
        assert_eq!(
            est_rel.states().collect::<Vec<_>>(),
            vec![CT_ESTABLISHED, CT_RELATED]
        );
    }

    #[test]
    fn validate_refuses_malformed_conditions() {
        let bad = [
            (
                with(|r| r.src = Some(Prefix::new(0x0a00_0001, 8))),
                "host bits",
            ),
            (with(|r| r.dst = Some(Prefix::new(0, 33))), "above 32"),
            (with(|r| r.sport = Some((10, 9))), "empty range"),
            (with(|r| r.dscp = Some((10, 9))), "empty range"),
            (with(|r| r.class = Some((10, 9))), "empty range"),
            (with(|r| r.tcp_flags = Some((3, 1))), "outside mask"),
            (with(|r| r.mark = Some((0x10, 0x0f))), "outside mask"),
            (with(|r| r.ct_states = 0x10), "states"),
        ];
        for (r, what) in bad {
            let e = r.validate().unwrap_err();
            assert!(e.contains(what), "{e}");
        }
        assert_eq!(with(|r| r.src = Some(Prefix::new(0, 0))).validate(), Ok(()));
        assert_eq!(
            with(|r| r.src = Some(Prefix::new(u32::MAX, 32))).validate(),
            Ok(())
        );
    }
}
