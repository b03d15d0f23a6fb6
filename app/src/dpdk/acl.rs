//! Rule classification on DPDK's ACL library (`rte_acl`): the
//! [`ClassifierBuilder`] the `classify` and `filter` hooks use in the app.
//! Built by the control plane from a rule list, then only read, by every
//! worker, one `rte_acl_classify` call per burst of up to 64 keys.
//!
//! The ACL reads a [`Key`] through field definitions matching its layout
//! (`hooks::rules::key`). Its first field must be a single byte and the
//! others are read as 4-byte words whose fields are consumed in memory
//! order, so the fields form these input groups, defined in this order:
//!
//! | group | bytes  | fields (type)                                            |
//! |-------|--------|----------------------------------------------------------|
//! | 0     | 0      | proto (bitmask)                                          |
//! | 2     | 4..8   | src (prefix)                                             |
//! | 3     | 8..12  | dst (prefix)                                             |
//! | 4     | 12..16 | sport (range) · dport (range)                            |
//! | 1     | 0..4   | proto again, always wild (bitmask) · tcp_flags (bitmask) · dscp (range) · flags (bitmask) |
//! | 5     | 16..20 | in_port (range) · out_port (range)                       |
//! | 6     | 20..24 | vlan (range) · class (range)                             |
//! | 7     | 24..28 | mark (bitmask)                                           |
//!
//! The wild second copy of `proto` pads word 1 to four bytes: the library
//! builds one trie level per field byte and walks four levels per word.
//! The tries test the groups in definition order, which decides their size
//! (see `GROUP_ORDER`).
//!
//! A classifier defines only the groups some rule of its set has a
//! condition in (group 0 always: DPDK needs a first field), numbered
//! consecutively (`input_index`, `field_index`); the offsets stay those of
//! the [`Key`]. Group 1 is used when a rule has TCP flags, DSCP, ports (the
//! L4 bit) or states. DPDK itself also drops, per trie, the groups all of
//! that trie's rules leave wild, so this saves rule memory and build work
//! rather than classify time.
//!
//! [`AclBuilder::with_algorithm`] picks DPDK's classify implementation;
//! the default is DPDK's choice when a context is created: the widest the
//! CPU and EAL's maximum SIMD width allow. At EAL's default width (256
//! bits) that is AVX512X16 on AVX-512 CPUs, AVX2 on others, both about as
//! fast as SSE; AVX512X32, about a quarter faster in 32-key bursts, needs
//! EAL started with `--force-max-simd-bitwidth=512`.
//!
//! Rule sets DPDK cannot fit in one context are split over several (see
//! [`AclBuilder`]).
//!
//! One [`MatchRule`] becomes several ACL rules when it is an OR: one per
//! connection-tracking state in its set. Rules that need the L4 bit (port
//! or TCP-flag conditions) require it in the flags byte. All ACL rules of
//! rule `i` carry userdata `i + 1` and priority `RTE_ACL_MAX_PRIORITY - i`,
//! so the lowest index wins, as in [`hooks::rules::LinearClassifier`].
//!
//! # IPv6
//!
//! IPv6 keys ([`Key6`]) have contexts of their own, built from the first
//! rule set's rules that apply to IPv6 (those naming IPv6 addresses or none;
//! an IPv4 rule keeps its index but has no ACL rule there), expanded as
//! above with the same userdata and priorities. As in DPDK's `l3fwd`
//! example, each address is four 32-bit prefix fields: a `/L` prefix gives
//! word `w` (0 first, most significant) the prefix length
//! `clamp(L - 32 * w, 0, 32)` and, as IPv4's addresses, the value of the
//! big-endian word in host order. The layout is fixed, every field defined
//! (`FIELDS6`), in IPv4's group order (`GROUP_ORDER`):
//!
//! | input | bytes  | fields (type)                                            |
//! |-------|--------|----------------------------------------------------------|
//! | 0     | 0      | proto (bitmask)                                          |
//! | 1..=4 | 4..20  | src, one 32-bit word each (prefix)                       |
//! | 5..=8 | 20..36 | dst, one 32-bit word each (prefix)                       |
//! | 9     | 36..40 | sport (range) · dport (range)                            |
//! | 10    | 0..4   | proto again, always wild (bitmask) · tcp_flags (bitmask) · dscp (range) · flags (bitmask) |
//! | 11    | 40..44 | in_port (range) · out_port (range)                       |
//! | 12    | 44..48 | vlan (range) · class (range)                             |
//! | 13    | 48..52 | mark (bitmask)                                           |
//!
//! The flags word after the address and port words pays here as for IPv4:
//! in memory order (right after `proto`), 1,000 firewall-like IPv6 rules
//! built 3x slower and classified 2x slower (104 against 54 ns per key),
//! and 300 random rules over every field needed 4 contexts instead of 1.
//!
//! They are split over several contexts as IPv4's are and classified the
//! same way, in bursts, keeping each key's first match. With no rule for
//! IPv6 there is no IPv6 context and every IPv6 key classifies to 0.

use super::DpdkError;
use dpdk_sys as sys;
use hooks::rules::key::{offset, FLAG_L4};
use hooks::rules::key6::offset6;
use hooks::rules::{
    validate_rules, Answers, Classifier, ClassifierBuilder, Family, Key, Key6, MatchRule, Prefix6,
    MAX_SETS,
};
use std::ffi::CString;
use std::marker::PhantomData;
use std::ops::Range;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

/// Keys per `rte_acl_classify` call (a burst); longer slices are chunked.
pub const ACL_BURST: usize = 64;

/// Categories of a classifier of several rule sets: DPDK classifies 1 or a
/// multiple of `RTE_ACL_RESULTS_MULTIPLIER` per key.
const CATEGORIES: u32 = sys::RTE_ACL_RESULTS_MULTIPLIER;
const _: () = assert!(MAX_SETS <= CATEGORIES as usize);

/// Field numbers (`field_index`), in definition order.
const F_PROTO: usize = 0;
const F_PAD: usize = 1;
const F_TCP_FLAGS: usize = 2;
const F_DSCP: usize = 3;
const F_FLAGS: usize = 4;
const F_SRC: usize = 5;
const F_DST: usize = 6;
const F_SPORT: usize = 7;
const F_DPORT: usize = 8;
const F_IN_PORT: usize = 9;
const F_OUT_PORT: usize = 10;
const F_VLAN: usize = 11;
const F_CLASS: usize = 12;
const F_MARK: usize = 13;
const NUM_FIELDS: usize = 14;

/// Input groups (the table above).
const G_PROTO: u8 = 0;
const G_FLAGS: u8 = 1;
const G_SRC: u8 = 2;
const G_DST: u8 = 3;
const G_PORTS: u8 = 4;
const G_IFACES: u8 = 5;
const G_META: u8 = 6;
const G_MARK: u8 = 7;

/// All 14 fields of a rule, as [`expand`] builds it (indexed by `F_*`). The
/// rules given to DPDK are [`AclRuleN`]s of the fields used.
#[derive(Clone, Copy, Default)]
struct AclRule {
    data: sys::rte_acl_rule_data,
    field: [sys::rte_acl_field; NUM_FIELDS],
}

/// `RTE_ACL_RULE_DEF(acl_rule, N)`: a rule of `N` fields, as DPDK reads it.
#[repr(C)]
#[derive(Clone, Copy)]
struct AclRuleN<const N: usize> {
    data: sys::rte_acl_rule_data,
    field: [sys::rte_acl_field; N],
}

impl<const N: usize> AclRuleN<N> {
    /// The size of `RTE_ACL_RULE_DEF(_, N)` (the `rule_size` of its
    /// contexts and the stride of `rte_acl_add_rules`); checked at compile
    /// time for every `N` used.
    const SIZE: usize = {
        let size = std::mem::size_of::<Self>();
        assert!(
            size == std::mem::size_of::<sys::rte_acl_rule>()
                + N * std::mem::size_of::<sys::rte_acl_field>()
        );
        size
    };

    /// The fields of `a` that `layout` uses, in its order.
    fn from_full(a: &AclRule, layout: &Layout) -> AclRuleN<N> {
        assert_eq!(layout.len, N, "layout of {} fields", layout.len);
        AclRuleN {
            data: a.data,
            field: std::array::from_fn(|i| a.field[layout.fields[i]]),
        }
    }
}

/// `(type, size, field_index, input group, offset)` of every field.
const FIELD_DEFS: [(u32, u8, usize, u8, u32); NUM_FIELDS] = {
    use sys::{
        RTE_ACL_FIELD_TYPE_BITMASK as BITMASK, RTE_ACL_FIELD_TYPE_MASK as MASK,
        RTE_ACL_FIELD_TYPE_RANGE as RANGE,
    };
    [
        (BITMASK, 1, F_PROTO, G_PROTO, offset::PROTO),
        (BITMASK, 1, F_PAD, G_FLAGS, offset::PROTO),
        (BITMASK, 1, F_TCP_FLAGS, G_FLAGS, offset::TCP_FLAGS),
        (RANGE, 1, F_DSCP, G_FLAGS, offset::DSCP),
        (BITMASK, 1, F_FLAGS, G_FLAGS, offset::FLAGS),
        (MASK, 4, F_SRC, G_SRC, offset::SRC),
        (MASK, 4, F_DST, G_DST, offset::DST),
        (RANGE, 2, F_SPORT, G_PORTS, offset::SPORT),
        (RANGE, 2, F_DPORT, G_PORTS, offset::DPORT),
        (RANGE, 2, F_IN_PORT, G_IFACES, offset::IN_PORT),
        (RANGE, 2, F_OUT_PORT, G_IFACES, offset::OUT_PORT),
        (RANGE, 2, F_VLAN, G_META, offset::VLAN),
        (RANGE, 2, F_CLASS, G_META, offset::CLASS),
        (BITMASK, 4, F_MARK, G_MARK, offset::MARK),
    ]
};

/// The order of the input groups in a context's config, which is the order
/// DPDK's tries test them in: the address and port words first, as they
/// tell most rules apart; the flags word (L4 bit and states, otherwise
/// mostly wild) after them. Right after `proto` (key order) it made DPDK
/// replicate the address subtries under each flags value: on 1,000
/// firewall-like rules 3 tries instead of 1, 6x the tables (17.7 MB) and
/// 2.4x the classify cost; on 10,000, about 3x the build time.
const GROUP_ORDER: [u8; 8] = [
    G_PROTO, G_SRC, G_DST, G_PORTS, G_FLAGS, G_IFACES, G_META, G_MARK,
];

/// The input groups some rule of `rules` has a condition in, as bits
/// (`1 << G_*`); [`G_PROTO`] always.
fn groups_used(rules: &[MatchRule]) -> u8 {
    let mut g = 1 << G_PROTO;
    for r in rules {
        let conds = [
            (
                G_FLAGS,
                r.tcp_flags.is_some() || r.dscp.is_some() || r.needs_l4() || r.ct_states != 0,
            ),
            (G_SRC, r.src.is_some()),
            (G_DST, r.dst.is_some()),
            (G_PORTS, r.sport.is_some() || r.dport.is_some()),
            (G_IFACES, r.in_port.is_some() || r.out_port.is_some()),
            (G_META, r.vlan.is_some() || r.class.is_some()),
            (G_MARK, r.mark.is_some()),
        ];
        for (group, used) in conds {
            if used {
                g |= 1 << group;
            }
        }
    }
    g
}

/// The fields the contexts of one classifier define: those of the input
/// groups in `groups`, in [`GROUP_ORDER`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Layout {
    /// `F_*` of the fields defined; the first `len` are valid.
    fields: [usize; NUM_FIELDS],
    len: usize,
    groups: u8,
}

impl Layout {
    fn new(groups: u8) -> Layout {
        let groups = groups | 1 << G_PROTO;
        let mut l = Layout {
            fields: [0; NUM_FIELDS],
            len: 0,
            groups,
        };
        for g in GROUP_ORDER {
            for (f, d) in FIELD_DEFS.iter().enumerate() {
                if d.3 == g && groups & 1 << g != 0 {
                    l.fields[l.len] = f;
                    l.len += 1;
                }
            }
        }
        l
    }

    /// The layout of a rule set: the groups some rule uses.
    fn of(rules: &[MatchRule]) -> Layout {
        Layout::new(groups_used(rules))
    }

    /// The build config for `categories` (1, or [`CATEGORIES`]): the fields
    /// renumbered 0.. in layout order, their groups too.
    fn config(&self, categories: u32) -> sys::rte_acl_config {
        let mut cfg = sys::rte_acl_config {
            num_categories: categories,
            num_fields: self.len as u32,
            ..Default::default()
        };
        let mut input = 0u8;
        let mut last_group = G_PROTO;
        for (i, (d, &f)) in cfg
            .defs
            .iter_mut()
            .zip(&self.fields[..self.len])
            .enumerate()
        {
            let (ty, size, _, group, off) = FIELD_DEFS[f];
            if group != last_group {
                input += 1;
                last_group = group;
            }
            *d = sys::rte_acl_field_def {
                type_: ty as u8,
                size,
                field_index: i as u8,
                input_index: input,
                offset: off,
            };
        }
        cfg
    }
}

/// DPDK's classify implementations ([`AclBuilder::with_algorithm`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AclAlgorithm {
    /// DPDK's pick at context creation: the widest the CPU and EAL's
    /// maximum SIMD width allow.
    #[default]
    Default,
    Scalar,
    Sse,
    Avx2,
    /// 256-bit vectors with AVX-512 instructions.
    Avx512x16,
    /// 512-bit vectors: needs EAL's maximum SIMD width at 512
    /// (`--force-max-simd-bitwidth=512`).
    Avx512x32,
}

impl AclAlgorithm {
    fn raw(self) -> sys::rte_acl_classify_alg {
        match self {
            AclAlgorithm::Default => sys::RTE_ACL_CLASSIFY_DEFAULT,
            AclAlgorithm::Scalar => sys::RTE_ACL_CLASSIFY_SCALAR,
            AclAlgorithm::Sse => sys::RTE_ACL_CLASSIFY_SSE,
            AclAlgorithm::Avx2 => sys::RTE_ACL_CLASSIFY_AVX2,
            AclAlgorithm::Avx512x16 => sys::RTE_ACL_CLASSIFY_AVX512X16,
            AclAlgorithm::Avx512x32 => sys::RTE_ACL_CLASSIFY_AVX512X32,
        }
    }
}

/// An ACL field value of `size` bytes: the union's other bytes stay zero.
fn value(v: u64, size: u8) -> sys::rte_acl_field_types {
    let mut u = sys::rte_acl_field_types::default();
    match size {
        1 => u.u8_ = v as u8,
        2 => u.u16_ = v as u16,
        4 => u.u32_ = v as u32,
        _ => u.u64_ = v,
    }
    u
}

fn field(f: usize, v: u64, mask_or_high: u64) -> sys::rte_acl_field {
    let size = FIELD_DEFS[f].1;
    sys::rte_acl_field {
        value: value(v, size),
        mask_range: value(mask_or_high, size),
    }
}

fn range16(f: usize, r: Option<(u16, u16)>) -> sys::rte_acl_field {
    let (lo, hi) = r.unwrap_or((0, u16::MAX));
    field(f, lo.into(), hi.into())
}

/// The ACL rules of `r`, rule number `index` (0-based) of rule set (ACL
/// category) `set`, appended to `out`.
fn expand(r: &MatchRule, set: usize, index: usize, out: &mut Vec<AclRule>) {
    // An IPv6 rule has no ACL rule among IPv4's (its index stays its own).
    if !r.applies_to(Family::Ipv4) {
        return;
    }
    expand_fields(r, set, index, out);
}

/// [`expand`] whatever the rule's family: its IPv4 address fields are wild
/// when it names none (what [`expand6`] starts from).
fn expand_fields(r: &MatchRule, set: usize, index: usize, out: &mut Vec<AclRule>) {
    let mut a = AclRule {
        data: sys::rte_acl_rule_data {
            category_mask: 1 << set,
            priority: (sys::RTE_ACL_MAX_PRIORITY as usize - index) as i32,
            userdata: index as u32 + 1,
        },
        ..Default::default()
    };
    let f = &mut a.field;
    f[F_PROTO] = match r.proto {
        Some(p) => field(F_PROTO, p.into(), 0xff),
        None => field(F_PROTO, 0, 0),
    };
    f[F_PAD] = field(F_PAD, 0, 0);
    let (v, m) = r.tcp_flags.unwrap_or((0, 0));
    f[F_TCP_FLAGS] = field(F_TCP_FLAGS, v.into(), m.into());
    let (lo, hi) = r.dscp.unwrap_or((0, u8::MAX));
    f[F_DSCP] = field(F_DSCP, lo.into(), hi.into());
    let l4 = if r.needs_l4() { FLAG_L4 } else { 0 };
    f[F_FLAGS] = field(F_FLAGS, l4.into(), l4.into());
    for (i, p) in [(F_SRC, r.src), (F_DST, r.dst)] {
        f[i] = match p {
            Some(p) => field(i, p.addr.into(), p.len.into()),
            None => field(i, 0, 0),
        };
    }
    f[F_SPORT] = range16(F_SPORT, r.sport);
    f[F_DPORT] = range16(F_DPORT, r.dport);
    f[F_IN_PORT] = range16(F_IN_PORT, r.in_port);
    f[F_OUT_PORT] = range16(F_OUT_PORT, r.out_port);
    f[F_VLAN] = range16(F_VLAN, r.vlan);
    f[F_CLASS] = range16(F_CLASS, r.class);
    let (v, m) = r.mark.unwrap_or((0, 0));
    f[F_MARK] = field(F_MARK, v.into(), m.into());
    if r.ct_states == 0 {
        out.push(a);
        return;
    }
    // A state set is an OR: one rule per state, each requiring its bit.
    for st in r.states() {
        let mut s = a;
        let bits = l4 | st;
        s.field[F_FLAGS] = field(F_FLAGS, bits.into(), bits.into());
        out.push(s);
    }
}

/// Where a field of the IPv6 layout takes its condition from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum From6 {
    /// The IPv4 field `F_*` (same type and size; see [`expand_fields`]).
    V4(usize),
    /// Word `w` (0..4, 0 the most significant) of the source prefix.
    Src(u32),
    /// Word `w` of the destination prefix.
    Dst(u32),
}

impl From6 {
    /// `(type, size)` of the field.
    const fn type_size(self) -> (u32, u8) {
        match self {
            From6::V4(f) => (FIELD_DEFS[f].0, FIELD_DEFS[f].1),
            From6::Src(_) | From6::Dst(_) => (sys::RTE_ACL_FIELD_TYPE_MASK, 4),
        }
    }

    /// The field's condition for `r`, whose IPv4 expansion is `a`.
    fn field(self, a: &AclRule, r: &MatchRule) -> sys::rte_acl_field {
        match self {
            From6::V4(f) => a.field[f],
            From6::Src(w) => addr_word(r.src6, w),
            From6::Dst(w) => addr_word(r.dst6, w),
        }
    }
}

/// Fields of the IPv6 layout.
const NUM_FIELDS6: usize = 20;

/// `(condition, input index, offset)` of every IPv6 field, in definition
/// order (the module doc's table): the 1-byte `proto`, then the key's
/// 4-byte words, the flags word after the addresses and ports as in
/// [`GROUP_ORDER`].
const FIELDS6: [(From6, u8, u32); NUM_FIELDS6] = {
    use offset6 as o;
    use From6::{Dst, Src, V4};
    [
        (V4(F_PROTO), 0, o::PROTO),
        (Src(0), 1, o::SRC),
        (Src(1), 2, o::SRC + 4),
        (Src(2), 3, o::SRC + 8),
        (Src(3), 4, o::SRC + 12),
        (Dst(0), 5, o::DST),
        (Dst(1), 6, o::DST + 4),
        (Dst(2), 7, o::DST + 8),
        (Dst(3), 8, o::DST + 12),
        (V4(F_SPORT), 9, o::SPORT),
        (V4(F_DPORT), 9, o::DPORT),
        (V4(F_PAD), 10, o::PROTO),
        (V4(F_TCP_FLAGS), 10, o::TCP_FLAGS),
        (V4(F_DSCP), 10, o::DSCP),
        (V4(F_FLAGS), 10, o::FLAGS),
        (V4(F_IN_PORT), 11, o::IN_PORT),
        (V4(F_OUT_PORT), 11, o::OUT_PORT),
        (V4(F_VLAN), 12, o::VLAN),
        (V4(F_CLASS), 12, o::CLASS),
        (V4(F_MARK), 13, o::MARK),
    ]
};

/// An ACL rule of the IPv6 layout.
type AclRule6 = AclRuleN<NUM_FIELDS6>;

/// The build config of the IPv6 contexts, of `categories` categories (1,
/// or [`CATEGORIES`] for several rule sets, as IPv4's).
fn config6(categories: u32) -> sys::rte_acl_config {
    let mut cfg = sys::rte_acl_config {
        num_categories: categories,
        num_fields: NUM_FIELDS6 as u32,
        ..Default::default()
    };
    for (i, (d, &(from, input, offset))) in cfg.defs.iter_mut().zip(&FIELDS6).enumerate() {
        let (ty, size) = from.type_size();
        *d = sys::rte_acl_field_def {
            type_: ty as u8,
            size,
            field_index: i as u8,
            input_index: input,
            offset,
        };
    }
    cfg
}

/// Word `w` of prefix `p` (wild without one) as a 32-bit prefix field: the
/// word's value, in host order as the ACL compares it, and the part of the
/// prefix length that falls in it.
fn addr_word(p: Option<Prefix6>, w: u32) -> sys::rte_acl_field {
    let p = p.unwrap_or_default();
    let v = (p.addr >> (96 - 32 * w)) as u32;
    let len = u32::from(p.len).saturating_sub(32 * w).min(32);
    sys::rte_acl_field {
        value: value(v.into(), 4),
        mask_range: value(len.into(), 4),
    }
}

/// The IPv6 ACL rules of `r`, rule number `index` (0-based) of rule set
/// (ACL category) `set`, appended to `out`: none for an IPv4 rule.
fn expand6(r: &MatchRule, set: usize, index: usize, out: &mut Vec<AclRule6>) {
    if !r.applies_to(Family::Ipv6) {
        return;
    }
    let mut v4 = Vec::new();
    expand_fields(r, set, index, &mut v4);
    out.extend(v4.iter().map(|a| AclRule6 {
        data: a.data,
        field: FIELDS6.map(|(from, _, _)| from.field(a, r)),
    }));
}

/// Most ACL contexts one rule set may be split into (see [`AclBuilder`]).
pub const MAX_CONTEXTS: usize = 64;

/// Builds [`AclClassifier`]s in DPDK memory on one socket. EAL must be
/// running whenever it builds (and while what it built lives).
///
/// DPDK builds at most 8 tries per context and gives up (`ENOMEM`, or
/// `ERANGE` past [`AclBuilder::with_max_size`]) on rule sets whose
/// conditions overlap in too many fields at once. Such a set is split: the
/// rules are cut into consecutive runs, halving a run until it builds, one
/// context per run, at most [`MAX_CONTEXTS`]. Classifying then runs the
/// contexts in rule order and keeps each key's first match, so the result is
/// the same; only the cost grows (one `rte_acl_classify` call per context
/// and burst, skipped once every key of the burst has matched).
#[derive(Clone, Copy, Debug)]
pub struct AclBuilder {
    socket: i32,
    max_size: usize,
    run: usize,
    alg: AclAlgorithm,
}

impl AclBuilder {
    /// A builder allocating on `socket` (`-1`: any).
    pub fn new(socket: i32) -> AclBuilder {
        AclBuilder {
            socket,
            max_size: 0,
            run: usize::MAX,
            alg: AclAlgorithm::Default,
        }
    }

    /// Classify with DPDK's `alg` (`rte_acl_set_ctx_classify`) rather than
    /// its default pick. Building fails (`ENOTSUP`) when the CPU, DPDK's
    /// build or EAL's maximum SIMD width does not allow it.
    pub fn with_algorithm(self, alg: AclAlgorithm) -> AclBuilder {
        AclBuilder { alg, ..self }
    }

    /// Start from runs of at most `rules` rules, one context each (they are
    /// still halved when DPDK cannot build them). For tests of the
    /// multi-context path; the default is one run of every rule. The limit
    /// of [`MAX_CONTEXTS`] still holds.
    pub fn with_rules_per_context(self, rules: usize) -> AclBuilder {
        AclBuilder {
            run: rules.max(1),
            ..self
        }
    }

    /// Limit the run-time tables of one context to `bytes` (`rte_acl_config.
    /// max_size`; 0, the default, is no limit). With a limit DPDK starts
    /// from larger tries and shrinks them until they fit.
    pub fn with_max_size(self, bytes: usize) -> AclBuilder {
        AclBuilder {
            max_size: bytes,
            ..self
        }
    }

    /// Build a classifier of `rules` (rule 0 wins over rule 1, ...).
    pub fn build_acl(&self, rules: &[MatchRule]) -> Result<AclClassifier, String> {
        self.build_acl_sets(&[rules])
    }

    /// Build a classifier of up to [`MAX_SETS`] rule sets, set `c` as ACL
    /// category `c`: one walk answers every set (`classify_sets`).
    pub fn build_acl_sets(&self, sets: &[&[MatchRule]]) -> Result<AclClassifier, String> {
        if sets.len() > MAX_SETS {
            return Err(format!("{} rule sets: at most {MAX_SETS}", sets.len()));
        }
        // Priorities run from RTE_ACL_MAX_PRIORITY down and must stay >= 1.
        let max_rules = sys::RTE_ACL_MAX_PRIORITY as usize;
        for rules in sets {
            validate_rules(rules)?;
            if rules.len() >= max_rules {
                return Err(format!(
                    "{} rules: DPDK's ACL takes at most {}",
                    rules.len(),
                    max_rules - 1
                ));
            }
        }
        // The sets one after the other: runs of them keep each set's order.
        let rules: Vec<(usize, usize, &MatchRule)> = sets
            .iter()
            .enumerate()
            .flat_map(|(c, set)| set.iter().enumerate().map(move |(i, r)| (c, i, r)))
            .collect();
        let mut acl = Vec::with_capacity(rules.len());
        // ACL rules of match rule i start at starts[i].
        let mut starts = Vec::with_capacity(rules.len() + 1);
        for &(c, i, r) in &rules {
            starts.push(acl.len());
            expand(r, c, i, &mut acl);
        }
        starts.push(acl.len());
        let categories = if sets.len() > 1 { CATEGORIES } else { 1 };
        // Every context of the set defines the same fields.
        let all: Vec<MatchRule> = rules.iter().map(|r| r.2.clone()).collect();
        let layout = Layout::of(&all);
        let ctxs = self.build_runs(rules.len(), &starts, |run| {
            self.build_ctx(&layout, categories, &acl[run])
        })?;
        // IPv6: the same sets' rules that apply to IPv6, as the same
        // categories.
        let (ctxs6, acl_rules6) = self
            .build_acl6(&rules, categories)
            .map_err(|e| format!("IPv6: {e}"))?;
        Ok(AclClassifier {
            ctxs,
            acl_rules: acl.len(),
            fields: layout.len,
            categories,
            ctxs6,
            acl_rules6,
        })
    }

    /// The IPv6 contexts of `rules` (validated; each with its set and its
    /// index in the set, the sets one after the other) in `categories`
    /// categories, and their number of ACL rules; no context when no rule
    /// applies to IPv6.
    fn build_acl6(
        &self,
        rules: &[(usize, usize, &MatchRule)],
        categories: u32,
    ) -> Result<(Vec<AclCtx<Key6>>, usize), String> {
        let mut acl = Vec::new();
        let mut starts = Vec::with_capacity(rules.len() + 1);
        for &(c, i, r) in rules {
            starts.push(acl.len());
            expand6(r, c, i, &mut acl);
        }
        starts.push(acl.len());
        let cfg = config6(categories);
        let ctxs = self.build_runs(rules.len(), &starts, |run| {
            self.build_ctx_rules(&acl[run], cfg)
        })?;
        Ok((ctxs, acl.len()))
    }

    /// The contexts of `n` match rules whose ACL rules are those of
    /// `build` (match rule `i` has ACL rules `starts[i]..starts[i + 1]`):
    /// one per run of match rules, in rule order, halving a run while
    /// `build` fails for lack of room (see [`AclBuilder`]). Runs without
    /// ACL rules have no context.
    fn build_runs<K: AclKey>(
        &self,
        n: usize,
        starts: &[usize],
        mut build: impl FnMut(Range<usize>) -> Result<AclCtx<K>, DpdkError>,
    ) -> Result<Vec<AclCtx<K>>, String> {
        let mut ctxs = Vec::new();
        // Runs of match rules still to build, in rule order (a stack: the
        // last element is the next run).
        let mut todo: Vec<(usize, usize)> = (0..n)
            .step_by(self.run.min(n).max(1))
            .map(|a| (a, a.saturating_add(self.run).min(n)))
            .rev()
            .collect();
        while let Some((a, b)) = todo.pop() {
            // (A run of rules of the other family only has no ACL rule.)
            if a == b || starts[a] == starts[b] {
                continue;
            }
            match build(starts[a]..starts[b]) {
                Ok(ctx) => ctxs.push(ctx),
                Err(e) if e.code == libc::ENOTSUP => return Err(e.to_string()),
                Err(e) if matches!(e.code, libc::ENOMEM | libc::ERANGE) && b - a > 1 => {
                    let mid = a + (b - a) / 2;
                    todo.push((mid, b));
                    todo.push((a, mid));
                }
                Err(e) if b - a == 1 => return Err(format!("rule {}: {e}", b)),
                Err(e) => {
                    return Err(format!(
                        "rules {}..={} ({} ACL rules): {e}",
                        a + 1,
                        b,
                        starts[b] - starts[a]
                    ))
                }
            }
            if ctxs.len() + todo.len() > MAX_CONTEXTS {
                return Err(format!(
                    "{n} rules overlap in too many fields for DPDK's ACL (more than \
                     {MAX_CONTEXTS} contexts); use fewer conditions per rule or fewer rules"
                ));
            }
        }
        Ok(ctxs)
    }

    /// One context holding `acl` (not empty) in `layout`'s fields.
    fn build_ctx(
        &self,
        layout: &Layout,
        categories: u32,
        acl: &[AclRule],
    ) -> Result<AclCtx<Key>, DpdkError> {
        macro_rules! by_fields {
            ($($n:literal)*) => {
                match layout.len {
                    $($n => self.build_ctx_n::<$n>(layout, categories, acl),)*
                    n => unreachable!("{n} ACL fields"),
                }
            };
        }
        // Group 0 is always used: 1..=NUM_FIELDS fields.
        const _: () = assert!(NUM_FIELDS == 14);
        by_fields!(1 2 3 4 5 6 7 8 9 10 11 12 13 14)
    }

    /// [`AclBuilder::build_ctx`] for layouts of `N` fields.
    fn build_ctx_n<const N: usize>(
        &self,
        layout: &Layout,
        categories: u32,
        acl: &[AclRule],
    ) -> Result<AclCtx<Key>, DpdkError> {
        let rules: Vec<AclRuleN<N>> = acl.iter().map(|a| AclRuleN::from_full(a, layout)).collect();
        self.build_ctx_rules(&rules, layout.config(categories))
    }

    /// One context of `rules` (not empty) for keys of type `K`, built with
    /// `cfg`, whose `N` fields must all lie within a `K` (IPv4 layouts for
    /// [`Key`], [`config6`] for [`Key6`]): the context will read them.
    fn build_ctx_rules<K: AclKey, const N: usize>(
        &self,
        rules: &[AclRuleN<N>],
        mut cfg: sys::rte_acl_config,
    ) -> Result<AclCtx<K>, DpdkError> {
        assert_eq!(cfg.num_fields as usize, N);
        assert!(
            cfg.defs[..N]
                .iter()
                .all(|d| (d.offset + u32::from(d.size)) as usize <= std::mem::size_of::<K>()),
            "ACL fields past the end of the key"
        );
        let ctx = AclCtx::create(self.socket, AclRuleN::<N>::SIZE, rules.len())?;
        if self.alg != AclAlgorithm::Default {
            // SAFETY: ctx is live and not shared yet (no classify can run).
            let ret = unsafe { sys::rte_acl_set_ctx_classify(ctx.raw.as_ptr(), self.alg.raw()) };
            if ret != 0 {
                return Err(DpdkError::from_ret(
                    format!("rte_acl_set_ctx_classify {:?}", self.alg),
                    ret,
                ));
            }
        }
        // SAFETY: ctx is a live context created with rule_size =
        // size_of::<AclRuleN<N>>() and room for rules.len() rules; `rules`
        // holds that many, laid out as RTE_ACL_RULE_DEF(_, N), and DPDK
        // copies them before returning.
        let ret = unsafe {
            sys::rte_acl_add_rules(
                ctx.raw.as_ptr(),
                rules.as_ptr().cast::<sys::rte_acl_rule>(),
                rules.len() as u32,
            )
        };
        if ret != 0 {
            return Err(DpdkError::from_ret("rte_acl_add_rules", ret));
        }
        cfg.max_size = self.max_size;
        // SAFETY: ctx is live and not shared yet (no classify can run);
        // cfg is a valid config whose N fields match the rules added.
        let ret = unsafe { sys::rte_acl_build(ctx.raw.as_ptr(), &cfg) };
        if ret != 0 {
            return Err(DpdkError::from_ret("rte_acl_build", ret));
        }
        Ok(ctx)
    }
}

impl ClassifierBuilder for AclBuilder {
    fn build(&self, rules: &[MatchRule]) -> Result<Box<dyn Classifier>, String> {
        Ok(Box::new(self.build_acl(rules)?))
    }

    fn build_sets(&self, sets: &[&[MatchRule]]) -> Result<Box<dyn Classifier>, String> {
        Ok(Box::new(self.build_acl_sets(sets)?))
    }

    fn name(&self) -> &str {
        "dpdk-acl"
    }
}

/// Context names must be unique per process: `rte_acl_create` hands back an
/// existing context of the same name instead of a new one.
static NEXT_CTX: AtomicU64 = AtomicU64::new(0);

/// A key type the ACL reads: [`Key`] or [`Key6`]. A context is built for
/// one of them ([`AclCtx<K>`]) and classifies only keys of that type, so
/// every field it reads lies within the key.
trait AclKey {
    /// The key's first byte, where the field offsets start.
    fn start(&self) -> *const u8;
}

impl AclKey for Key {
    #[inline(always)]
    fn start(&self) -> *const u8 {
        self.as_bytes().as_ptr()
    }
}

impl AclKey for Key6 {
    #[inline(always)]
    fn start(&self) -> *const u8 {
        self.as_bytes().as_ptr()
    }
}

/// An owned ACL context, built for keys of type `K`.
struct AclCtx<K: AclKey> {
    raw: NonNull<sys::rte_acl_ctx>,
    key: PhantomData<fn(&K)>,
}

impl<K: AclKey> AclCtx<K> {
    /// A context for up to `max_rules` rules of `rule_size` bytes.
    fn create(socket: i32, rule_size: usize, max_rules: usize) -> Result<AclCtx<K>, DpdkError> {
        let name = format!("fp_acl_{}", NEXT_CTX.fetch_add(1, Ordering::Relaxed));
        let cname = CString::new(name.clone()).expect("no NUL in a generated name");
        let param = sys::rte_acl_param {
            name: cname.as_ptr(),
            socket_id: socket,
            rule_size: rule_size as u32,
            max_rule_num: max_rules as u32,
        };
        // SAFETY: param and the name it points to are valid for the call;
        // DPDK copies the name. EAL is running (the builder's contract).
        let raw = unsafe { sys::rte_acl_create(&param) };
        let raw = NonNull::new(raw).ok_or_else(|| {
            DpdkError::from_rte_errno(format!(
                "rte_acl_create {name:?} for {max_rules} ACL rules on socket {socket}"
            ))
        })?;
        Ok(AclCtx {
            raw,
            key: PhantomData,
        })
    }

    /// Classify up to [`ACL_BURST`] keys into `results`, `categories` (1,
    /// or at most the context's, a multiple of [`CATEGORIES`]) per key.
    #[inline(always)]
    fn classify(&self, keys: &[K], results: &mut [u32], categories: u32) {
        let per_key = categories as usize;
        debug_assert!(keys.len() <= ACL_BURST && results.len() >= keys.len() * per_key);
        let mut data = [std::ptr::null::<u8>(); ACL_BURST];
        for (d, k) in data.iter_mut().zip(keys) {
            *d = k.start();
        }
        let n = keys.len().min(ACL_BURST).min(results.len() / per_key);
        // SAFETY: the context is built and only read here; data holds n
        // pointers to live keys of type K, within which the context's field
        // offsets (relative to a key's first byte) end, as it was built for
        // K; results has room for n results of `categories` categories
        // each, which the context was built for (AclClassifier only asks it
        // for 1 or its own).
        let ret = unsafe {
            sys::rte_acl_classify(
                self.raw.as_ptr(),
                data.as_mut_ptr(),
                results.as_mut_ptr(),
                n as u32,
                categories,
            )
        };
        // It fails only on invalid arguments, which the above rules out: a
        // failure is a bug, and carrying on would skip the rules.
        assert_eq!(ret, 0, "rte_acl_classify refused its arguments");
    }
}

impl<K: AclKey> Drop for AclCtx<K> {
    fn drop(&mut self) {
        // SAFETY: we own the context; no classify runs on it any more (the
        // classifier holding it is being dropped).
        unsafe { sys::rte_acl_free(self.raw.as_ptr()) }
    }
}

// SAFETY: the context is DPDK memory owned by this value; after the build
// it is only read (rte_acl_classify), which is safe from several lcores at
// once, and it is freed only on drop.
unsafe impl<K: AclKey> Send for AclCtx<K> {}
// SAFETY: as above: &AclCtx only allows rte_acl_classify, a pure reader.
unsafe impl<K: AclKey> Sync for AclCtx<K> {}

/// Classify `keys` into `results` (1 category) with `ctxs`, contexts of
/// consecutive runs of rules in rule order, in bursts of [`ACL_BURST`]:
/// each key's answer is the first context's match, else the next one's.
#[inline(always)]
fn classify_first<K: AclKey>(ctxs: &[AclCtx<K>], keys: &[K], results: &mut [u32]) {
    let n = keys.len().min(results.len());
    let (first, rest) = match ctxs.split_first() {
        Some(x) => x,
        None => {
            results[..n].fill(0);
            return;
        }
    };
    for (keys, results) in keys[..n]
        .chunks(ACL_BURST)
        .zip(results[..n].chunks_mut(ACL_BURST))
    {
        first.classify(keys, results, 1);
        // Later contexts hold later rules: they only fill the keys no
        // earlier context matched.
        for ctx in rest {
            if results.iter().all(|&r| r != 0) {
                break;
            }
            let mut more = [0u32; ACL_BURST];
            ctx.classify(keys, &mut more, 1);
            for (r, m) in results.iter_mut().zip(more) {
                if *r == 0 {
                    *r = m;
                }
            }
        }
    }
}

/// A built ACL rule set: one context per run of rules, in rule order; none
/// at all when there are no rules (`rte_acl_build` refuses an empty set),
/// and then every key classifies to 0. The same for IPv6 keys, over the
/// first set's rules that apply to IPv6.
pub struct AclClassifier {
    ctxs: Vec<AclCtx<Key>>,
    acl_rules: usize,
    fields: usize,
    /// Categories the contexts were built with: 1, or [`CATEGORIES`] for
    /// several rule sets.
    categories: u32,
    /// The IPv6 contexts (of `categories` too), none when no rule applies
    /// to IPv6.
    ctxs6: Vec<AclCtx<Key6>>,
    acl_rules6: usize,
}

impl AclClassifier {
    /// ACL rules the match rules expanded to.
    pub fn acl_rules(&self) -> usize {
        self.acl_rules
    }

    /// DPDK contexts the rules were split into (0 with no rules).
    pub fn contexts(&self) -> usize {
        self.ctxs.len()
    }

    /// ACL fields each context defines: those of the input groups the
    /// rules use (1 with no rules or no conditions, 14 with all groups).
    pub fn fields(&self) -> usize {
        self.fields
    }

    /// IPv6 ACL rules the sets' rules for IPv6 expanded to.
    pub fn acl_rules6(&self) -> usize {
        self.acl_rules6
    }

    /// DPDK contexts of the IPv6 rules (0 when no rule applies to IPv6).
    pub fn contexts6(&self) -> usize {
        self.ctxs6.len()
    }
}

impl std::fmt::Debug for AclClassifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AclClassifier")
            .field("acl_rules", &self.acl_rules)
            .field("contexts", &self.ctxs.len())
            .field("fields", &self.fields)
            .field("acl_rules6", &self.acl_rules6)
            .field("contexts6", &self.ctxs6.len())
            .finish()
    }
}

impl Classifier for AclClassifier {
    fn classify6(&self, keys: &[Key6], results: &mut [u32]) {
        classify_first(&self.ctxs6, keys, results);
    }

    fn classify(&self, keys: &[Key], results: &mut [u32]) {
        classify_first(&self.ctxs, keys, results);
    }

    fn classify_sets(&self, keys: &[Key], results: &mut [Answers]) {
        classify_sets_in(&self.ctxs, self.categories, keys, results);
    }

    fn classify_sets6(&self, keys: &[Key6], results: &mut [Answers]) {
        classify_sets_in(&self.ctxs6, self.categories, keys, results);
    }
}

/// Every set's answer for each of `keys` into `results`, with `ctxs`,
/// contexts of `categories` categories over consecutive runs of the sets'
/// rules: per set, the first context's match, else the next one's.
#[inline(always)]
fn classify_sets_in<K: AclKey>(
    ctxs: &[AclCtx<K>],
    categories: u32,
    keys: &[K],
    results: &mut [Answers],
) {
    let n = keys.len().min(results.len());
    let per_key = categories as usize;
    let mut raw = [0u32; ACL_BURST * CATEGORIES as usize];
    if let ([ctx], CATEGORIES) = (ctxs, categories) {
        // One context of several sets (the common case): its answers
        // are the sets' own, copied without merging.
        for (keys, results) in keys[..n]
            .chunks(ACL_BURST)
            .zip(results[..n].chunks_mut(ACL_BURST))
        {
            ctx.classify(keys, &mut raw, CATEGORIES);
            for (r, got) in results
                .iter_mut()
                .zip(raw.chunks_exact(CATEGORIES as usize))
            {
                if let Some(got) = got.first_chunk::<MAX_SETS>() {
                    *r = *got;
                }
            }
        }
        return;
    }
    for (keys, results) in keys[..n]
        .chunks(ACL_BURST)
        .zip(results[..n].chunks_mut(ACL_BURST))
    {
        results.fill([0; MAX_SETS]);
        // Each context in rule order: per set, the first that matched.
        for ctx in ctxs {
            ctx.classify(keys, &mut raw, categories);
            for (r, got) in results.iter_mut().zip(raw.chunks_exact(per_key)) {
                for (r, &g) in r.iter_mut().zip(got) {
                    if *r == 0 {
                        *r = g;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After the 1-byte first field, every input of `cfg` is 4 bytes of
    /// consecutive fields starting where its first field starts; fields
    /// and inputs are numbered 0.. in order, all within an IPv4 key.
    fn check_config(cfg: &sys::rte_acl_config) {
        check_config_in(cfg, Key::SIZE as u32);
    }

    /// [`check_config`] for keys of `key_size` bytes.
    fn check_config_in(cfg: &sys::rte_acl_config, key_size: u32) {
        let defs = &cfg.defs[..cfg.num_fields as usize];
        assert_eq!((defs[0].size, defs[0].input_index), (1, 0));
        let mut groups: Vec<(u8, u32, u32)> = Vec::new();
        for d in &defs[1..] {
            match groups.last_mut() {
                Some(g) if g.0 == d.input_index => {
                    assert_eq!(g.1 + g.2, d.offset, "input {} is contiguous", g.0);
                    g.2 += u32::from(d.size);
                }
                _ => {
                    let next = groups.last().map_or(1, |g| g.0 + 1);
                    assert_eq!(d.input_index, next, "inputs numbered in order");
                    groups.push((d.input_index, d.offset, u32::from(d.size)));
                }
            }
        }
        assert!(groups.iter().all(|g| g.2 == 4), "{groups:?}");
        for (i, d) in defs.iter().enumerate() {
            assert_eq!(usize::from(d.field_index), i, "field_index in order");
            assert!(d.offset + u32::from(d.size) <= key_size, "inside the key");
        }
    }

    #[test]
    fn field_defs_group_whole_words() {
        let all = Layout::new(u8::MAX);
        assert_eq!(all.len, NUM_FIELDS);
        check_config(&all.config(1));
        let mut order = GROUP_ORDER;
        order.sort_unstable();
        assert_eq!(order, [0, 1, 2, 3, 4, 5, 6, 7], "every group once");
        assert_eq!(GROUP_ORDER[0], G_PROTO, "the 1-byte field first");
        for (i, d) in FIELD_DEFS.iter().enumerate() {
            assert_eq!(d.2, i, "F_* in order");
        }
        // Every subset of groups.
        for groups in 0..=u8::MAX {
            let l = Layout::new(groups);
            let cfg = l.config(1);
            check_config(&cfg);
            assert_eq!(l.groups, groups | 1);
            let inputs = cfg.defs[..l.len].iter().map(|d| d.input_index).max();
            assert_eq!(inputs, Some((groups | 1).count_ones() as u8 - 1));
            let offsets: Vec<u32> = cfg.defs[..l.len].iter().map(|d| d.offset).collect();
            let want: Vec<u32> = GROUP_ORDER
                .iter()
                .flat_map(|&g| FIELD_DEFS.iter().filter(move |d| d.3 == g))
                .filter(|d| (groups | 1) & 1 << d.3 != 0)
                .map(|d| d.4)
                .collect();
            assert_eq!(offsets, want, "groups {groups:#010b}");
        }
    }

    #[test]
    fn layout_has_the_groups_rules_use() {
        use hooks::rules::{Prefix, CT_NEW};
        let with = |f: &dyn Fn(&mut MatchRule)| {
            let mut r = MatchRule::any();
            f(&mut r);
            vec![MatchRule::any(), r]
        };
        let cases: [(Vec<MatchRule>, u8); 14] = [
            (vec![], 0),
            (vec![MatchRule::any()], 0),
            (with(&|r| r.proto = Some(6)), 0),
            (with(&|r| r.tcp_flags = Some((2, 2))), 1 << G_FLAGS),
            (with(&|r| r.dscp = Some((1, 2))), 1 << G_FLAGS),
            (with(&|r| r.ct_states = CT_NEW), 1 << G_FLAGS),
            (with(&|r| r.src = Some(Prefix::new(0, 0))), 1 << G_SRC),
            (with(&|r| r.dst = Some(Prefix::new(0, 8))), 1 << G_DST),
            (
                with(&|r| r.sport = Some((1, 1))),
                1 << G_FLAGS | 1 << G_PORTS,
            ),
            (
                with(&|r| r.dport = Some((1, 1))),
                1 << G_FLAGS | 1 << G_PORTS,
            ),
            (with(&|r| r.out_port = Some((1, 1))), 1 << G_IFACES),
            (with(&|r| r.vlan = Some((1, 1))), 1 << G_META),
            (with(&|r| r.class = Some((1, 1))), 1 << G_META),
            (with(&|r| r.mark = Some((1, 1))), 1 << G_MARK),
        ];
        for (rules, groups) in cases {
            let l = Layout::of(&rules);
            assert_eq!(l.groups, groups | 1 << G_PROTO, "{rules:?}");
        }
        let l = Layout::of(&with(&|r| {
            r.ct_states = CT_NEW;
            r.in_port = Some((0, 1));
        }));
        assert_eq!(
            l.fields[..l.len],
            [
                F_PROTO,
                F_PAD,
                F_TCP_FLAGS,
                F_DSCP,
                F_FLAGS,
                F_IN_PORT,
                F_OUT_PORT
            ]
        );
    }

    #[test]
    fn narrow_rules_copy_the_used_fields() {
        let r = MatchRule {
            mark: Some((0x10, 0xf0)),
            ..MatchRule::any()
        };
        let mut out = Vec::new();
        expand(&r, 0, 0, &mut out);
        let l = Layout::of(&[r]);
        assert_eq!(l.fields[..l.len], [F_PROTO, F_MARK]);
        let n = AclRuleN::<2>::from_full(&out[0], &l);
        assert_eq!(
            AclRuleN::<2>::SIZE,
            std::mem::size_of::<sys::rte_acl_rule>() + 32
        );
        // SAFETY: reading union members written as u32.
        let (v, m) = unsafe { (n.field[1].value.u32_, n.field[1].mask_range.u32_) };
        assert_eq!((v, m), (0x10, 0xf0));
        assert_eq!(n.data.userdata, 1);
    }

    #[test]
    fn states_expand_to_one_rule_each() {
        use hooks::rules::{CT_ESTABLISHED, CT_RELATED};
        let r = MatchRule {
            ct_states: CT_ESTABLISHED | CT_RELATED,
            dport: Some((80, 80)),
            ..MatchRule::any()
        };
        let mut out = Vec::new();
        expand(&r, 0, 4, &mut out);
        assert_eq!(out.len(), 2);
        for (a, st) in out.iter().zip([CT_ESTABLISHED, CT_RELATED]) {
            // SAFETY: reading a union member that was written as u8.
            let (v, m) = unsafe { (a.field[F_FLAGS].value.u8_, a.field[F_FLAGS].mask_range.u8_) };
            assert_eq!((v, m), (FLAG_L4 | st, FLAG_L4 | st));
            assert_eq!(a.data.userdata, 5);
            assert_eq!(a.data.priority, sys::RTE_ACL_MAX_PRIORITY as i32 - 4);
        }
    }

    #[test]
    fn ipv6_fields_group_whole_words() {
        let cfg = config6(1);
        check_config_in(&cfg, Key6::SIZE as u32);
        let defs = &cfg.defs[..NUM_FIELDS6];
        // Every byte of the key's fields read once, past the first field.
        let mut read: Vec<u32> = defs[1..]
            .iter()
            .flat_map(|d| d.offset..d.offset + u32::from(d.size))
            .collect();
        read.sort_unstable();
        assert_eq!(read, (0..52).collect::<Vec<_>>());
        // The words in IPv4's group order: addresses, ports, flags, the rest.
        let words: Vec<u32> = defs[1..].iter().map(|d| d.offset / 4).collect();
        let mut want = vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 0, 0, 0, 0];
        want.extend([10, 10, 11, 11, 12]);
        assert_eq!(words, want);
        // The IPv4 fields keep their type and size.
        for (d, (from, _, _)) in defs.iter().zip(FIELDS6) {
            if let From6::V4(f) = from {
                assert_eq!(
                    (u32::from(d.type_), d.size),
                    (FIELD_DEFS[f].0, FIELD_DEFS[f].1)
                );
            }
        }
    }

    /// `(value, prefix length)` of the words of an address field.
    fn words(p: Option<Prefix6>) -> [(u32, u32); 4] {
        // SAFETY: reading union members written as u32.
        std::array::from_fn(|w| unsafe {
            let f = addr_word(p, w as u32);
            (f.value.u32_, f.mask_range.u32_)
        })
    }

    #[test]
    fn ipv6_prefixes_split_into_four_words() {
        let a = 0x2001_0db8_0102_0304_0506_0708_090a_0b0c_u128;
        let net = |len: u8| Some(Prefix6::new(a & Prefix6::new(0, len).mask(), len));
        assert_eq!(words(None), [(0, 0); 4]);
        assert_eq!(words(net(0)), [(0, 0); 4]);
        assert_eq!(
            words(net(128)),
            [
                (0x2001_0db8, 32),
                (0x0102_0304, 32),
                (0x0506_0708, 32),
                (0x090a_0b0c, 32)
            ]
        );
        assert_eq!(
            words(net(48)),
            [(0x2001_0db8, 32), (0x0102_0000, 16), (0, 0), (0, 0)]
        );
        assert_eq!(words(net(32)), [(0x2001_0db8, 32), (0, 0), (0, 0), (0, 0)]);
        assert_eq!(
            words(net(97)),
            [
                (0x2001_0db8, 32),
                (0x0102_0304, 32),
                (0x0506_0708, 32),
                (0, 1)
            ]
        );
    }

    #[test]
    fn ipv6_rules_expand_by_family_with_their_own_index() {
        use hooks::rules::{Prefix, CT_ESTABLISHED, CT_NEW};
        let v4 = MatchRule {
            dst: Some(Prefix::new(0x0a00_0000, 8)),
            ..MatchRule::any()
        };
        let v6 = MatchRule {
            src6: Some(Prefix6::new(0x2001_0db8 << 96, 32)),
            dport: Some((22, 22)),
            ct_states: CT_NEW | CT_ESTABLISHED,
            ..MatchRule::any()
        };
        let mut out = Vec::new();
        expand6(&v4, 0, 0, &mut out);
        assert!(out.is_empty(), "an IPv4 rule has no IPv6 ACL rule");
        expand6(&MatchRule::any(), 0, 1, &mut out);
        expand6(&v6, 0, 2, &mut out);
        assert_eq!(out.len(), 3, "one, then one per state");
        assert_eq!(out[0].data.userdata, 2);
        let src0 = FIELDS6.iter().position(|f| f.0 == From6::Src(0)).unwrap();
        let flags = FIELDS6
            .iter()
            .position(|f| f.0 == From6::V4(F_FLAGS))
            .unwrap();
        for (a, st) in out[1..].iter().zip([CT_NEW, CT_ESTABLISHED]) {
            assert_eq!(a.data.userdata, 3);
            assert_eq!(a.data.priority, sys::RTE_ACL_MAX_PRIORITY as i32 - 2);
            // SAFETY: reading union members written as u32 and u8.
            let (v, m) = unsafe { (a.field[src0].value.u32_, a.field[src0].mask_range.u32_) };
            assert_eq!((v, m), (0x2001_0db8, 32));
            // SAFETY: as above.
            let f = unsafe { a.field[flags].value.u8_ };
            assert_eq!(f, FLAG_L4 | st);
        }
        let mut v4out = Vec::new();
        expand(&v6, 0, 2, &mut v4out);
        assert!(v4out.is_empty(), "an IPv6 rule has no IPv4 ACL rule");
    }
}
