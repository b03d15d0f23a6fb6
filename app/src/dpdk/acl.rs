//! Rule classification on DPDK's ACL library (`rte_acl`): the
//! [`ClassifierBuilder`] the `classify` and `filter` hooks use in the app.
//! Built by the control plane from a rule list, then only read, by every
//! worker, one `rte_acl_classify` call per burst of up to 64 keys.
//!
//! The ACL reads a [`Key`] through field definitions matching its layout
//! (`hooks::rules::key`). Its first field must be a single byte and the
//! others are read as 4-byte words whose fields are consumed in memory
//! order, so the fields form these input groups:
//!
//! | input | bytes  | fields (type)                                            |
//! |-------|--------|----------------------------------------------------------|
//! | 0     | 0      | proto (bitmask)                                          |
//! | 1     | 0..4   | proto again, always wild (bitmask) · tcp_flags (bitmask) · dscp (range) · flags (bitmask) |
//! | 2     | 4..8   | src (prefix)                                             |
//! | 3     | 8..12  | dst (prefix)                                             |
//! | 4     | 12..16 | sport (range) · dport (range)                            |
//! | 5     | 16..20 | in_port (range) · out_port (range)                       |
//! | 6     | 20..24 | vlan (range) · class (range)                             |
//! | 7     | 24..28 | mark (bitmask)                                           |
//!
//! The wild second copy of `proto` pads word 1 to four bytes: the library
//! builds one trie level per field byte and walks four levels per word.
//!
//! Rule sets DPDK cannot fit in one context are split over several (see
//! [`AclBuilder`]).
//!
//! One [`MatchRule`] becomes several ACL rules when it is an OR: one per
//! connection-tracking state in its set. Rules that need the L4 bit (port
//! or TCP-flag conditions) require it in the flags byte. All ACL rules of
//! rule `i` carry userdata `i + 1` and priority `RTE_ACL_MAX_PRIORITY - i`,
//! so the lowest index wins, as in [`hooks::rules::LinearClassifier`].

use super::DpdkError;
use dpdk_sys as sys;
use hooks::rules::key::{offset, FLAG_L4};
use hooks::rules::{validate_rules, Classifier, ClassifierBuilder, Key, MatchRule};
use std::ffi::CString;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

/// Keys per `rte_acl_classify` call (a burst); longer slices are chunked.
pub const ACL_BURST: usize = 64;

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

/// `RTE_ACL_RULE_DEF(acl_rule, NUM_FIELDS)`.
#[repr(C)]
#[derive(Clone, Copy, Default)]
struct AclRule {
    data: sys::rte_acl_rule_data,
    field: [sys::rte_acl_field; NUM_FIELDS],
}

const _: () = assert!(
    std::mem::size_of::<AclRule>()
        == std::mem::size_of::<sys::rte_acl_rule>()
            + NUM_FIELDS * std::mem::size_of::<sys::rte_acl_field>()
);

/// `(type, size, field_index, input_index, offset)` of every field.
const FIELD_DEFS: [(u32, u8, usize, u8, u32); NUM_FIELDS] = [
    (
        sys::RTE_ACL_FIELD_TYPE_BITMASK,
        1,
        F_PROTO,
        0,
        offset::PROTO,
    ),
    (sys::RTE_ACL_FIELD_TYPE_BITMASK, 1, F_PAD, 1, offset::PROTO),
    (
        sys::RTE_ACL_FIELD_TYPE_BITMASK,
        1,
        F_TCP_FLAGS,
        1,
        offset::TCP_FLAGS,
    ),
    (sys::RTE_ACL_FIELD_TYPE_RANGE, 1, F_DSCP, 1, offset::DSCP),
    (
        sys::RTE_ACL_FIELD_TYPE_BITMASK,
        1,
        F_FLAGS,
        1,
        offset::FLAGS,
    ),
    (sys::RTE_ACL_FIELD_TYPE_MASK, 4, F_SRC, 2, offset::SRC),
    (sys::RTE_ACL_FIELD_TYPE_MASK, 4, F_DST, 3, offset::DST),
    (sys::RTE_ACL_FIELD_TYPE_RANGE, 2, F_SPORT, 4, offset::SPORT),
    (sys::RTE_ACL_FIELD_TYPE_RANGE, 2, F_DPORT, 4, offset::DPORT),
    (
        sys::RTE_ACL_FIELD_TYPE_RANGE,
        2,
        F_IN_PORT,
        5,
        offset::IN_PORT,
    ),
    (
        sys::RTE_ACL_FIELD_TYPE_RANGE,
        2,
        F_OUT_PORT,
        5,
        offset::OUT_PORT,
    ),
    (sys::RTE_ACL_FIELD_TYPE_RANGE, 2, F_VLAN, 6, offset::VLAN),
    (sys::RTE_ACL_FIELD_TYPE_RANGE, 2, F_CLASS, 6, offset::CLASS),
    (sys::RTE_ACL_FIELD_TYPE_BITMASK, 4, F_MARK, 7, offset::MARK),
];

fn acl_config() -> sys::rte_acl_config {
    let mut cfg = sys::rte_acl_config {
        num_categories: 1,
        num_fields: NUM_FIELDS as u32,
        ..Default::default()
    };
    for (d, &(ty, size, field, input, off)) in cfg.defs.iter_mut().zip(FIELD_DEFS.iter()) {
        *d = sys::rte_acl_field_def {
            type_: ty as u8,
            size,
            field_index: field as u8,
            input_index: input,
            offset: off,
        };
    }
    cfg
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

/// The ACL rules of `r`, rule number `index` (0-based), appended to `out`.
fn expand(r: &MatchRule, index: usize, out: &mut Vec<AclRule>) {
    let mut a = AclRule {
        data: sys::rte_acl_rule_data {
            category_mask: 1,
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
}

impl AclBuilder {
    /// A builder allocating on `socket` (`-1`: any).
    pub fn new(socket: i32) -> AclBuilder {
        AclBuilder {
            socket,
            max_size: 0,
            run: usize::MAX,
        }
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
        validate_rules(rules)?;
        // Priorities run from RTE_ACL_MAX_PRIORITY down and must stay >= 1.
        let max_rules = sys::RTE_ACL_MAX_PRIORITY as usize;
        if rules.len() >= max_rules {
            return Err(format!(
                "{} rules: DPDK's ACL takes at most {}",
                rules.len(),
                max_rules - 1
            ));
        }
        let mut acl = Vec::with_capacity(rules.len());
        // ACL rules of match rule i start at starts[i].
        let mut starts = Vec::with_capacity(rules.len() + 1);
        for (i, r) in rules.iter().enumerate() {
            starts.push(acl.len());
            expand(r, i, &mut acl);
        }
        starts.push(acl.len());
        let mut ctxs = Vec::new();
        // Runs of match rules still to build, in rule order (a stack: the
        // last element is the next run).
        let mut todo: Vec<(usize, usize)> = (0..rules.len())
            .step_by(self.run.min(rules.len()).max(1))
            .map(|a| (a, a.saturating_add(self.run).min(rules.len())))
            .rev()
            .collect();
        while let Some((a, b)) = todo.pop() {
            if a == b {
                continue;
            }
            match self.build_ctx(&acl[starts[a]..starts[b]]) {
                Ok(ctx) => ctxs.push(ctx),
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
                    "{} rules overlap in too many fields for DPDK's ACL (more than \
                     {MAX_CONTEXTS} contexts); use fewer conditions per rule or fewer rules",
                    rules.len()
                ));
            }
        }
        Ok(AclClassifier {
            ctxs,
            acl_rules: acl.len(),
        })
    }

    /// One context holding `acl` (not empty).
    fn build_ctx(&self, acl: &[AclRule]) -> Result<AclCtx, DpdkError> {
        let ctx = AclCtx::create(self.socket, acl.len())?;
        // SAFETY: ctx is a live context created with rule_size =
        // size_of::<AclRule>() and room for acl.len() rules; `acl` holds that
        // many AclRules laid out as RTE_ACL_RULE_DEF(_, NUM_FIELDS), and DPDK
        // copies them before returning.
        let ret = unsafe {
            sys::rte_acl_add_rules(
                ctx.raw.as_ptr(),
                acl.as_ptr().cast::<sys::rte_acl_rule>(),
                acl.len() as u32,
            )
        };
        if ret != 0 {
            return Err(DpdkError::from_ret("rte_acl_add_rules", ret));
        }
        let mut cfg = acl_config();
        cfg.max_size = self.max_size;
        // SAFETY: ctx is live and not shared yet (no classify can run);
        // cfg is a valid config whose fields match the rules added.
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

    fn name(&self) -> &str {
        "dpdk-acl"
    }
}

/// Context names must be unique per process: `rte_acl_create` hands back an
/// existing context of the same name instead of a new one.
static NEXT_CTX: AtomicU64 = AtomicU64::new(0);

/// An owned ACL context.
struct AclCtx {
    raw: NonNull<sys::rte_acl_ctx>,
}

impl AclCtx {
    fn create(socket: i32, max_rules: usize) -> Result<AclCtx, DpdkError> {
        let name = format!("fp_acl_{}", NEXT_CTX.fetch_add(1, Ordering::Relaxed));
        let cname = CString::new(name.clone()).expect("no NUL in a generated name");
        let param = sys::rte_acl_param {
            name: cname.as_ptr(),
            socket_id: socket,
            rule_size: std::mem::size_of::<AclRule>() as u32,
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
        Ok(AclCtx { raw })
    }

    /// Classify up to [`ACL_BURST`] keys into `results`.
    #[inline(always)]
    fn classify(&self, keys: &[Key], results: &mut [u32]) {
        debug_assert!(keys.len() <= ACL_BURST && results.len() >= keys.len());
        let mut data = [std::ptr::null::<u8>(); ACL_BURST];
        for (d, k) in data.iter_mut().zip(keys) {
            *d = k.as_bytes().as_ptr();
        }
        let n = keys.len().min(ACL_BURST).min(results.len());
        // SAFETY: the context is built and only read here; data holds n
        // pointers to live 32-byte keys (the field offsets are relative to a
        // key's first byte and end within it), results has room for n
        // results of one category.
        let ret = unsafe {
            sys::rte_acl_classify(
                self.raw.as_ptr(),
                data.as_mut_ptr(),
                results.as_mut_ptr(),
                n as u32,
                1,
            )
        };
        // It fails only on invalid arguments, which the above rules out: a
        // failure is a bug, and carrying on would skip the rules.
        assert_eq!(ret, 0, "rte_acl_classify refused its arguments");
    }
}

impl Drop for AclCtx {
    fn drop(&mut self) {
        // SAFETY: we own the context; no classify runs on it any more (the
        // classifier holding it is being dropped).
        unsafe { sys::rte_acl_free(self.raw.as_ptr()) }
    }
}

// SAFETY: the context is DPDK memory owned by this value; after the build
// it is only read (rte_acl_classify), which is safe from several lcores at
// once, and it is freed only on drop.
unsafe impl Send for AclCtx {}
// SAFETY: as above: &AclCtx only allows rte_acl_classify, a pure reader.
unsafe impl Sync for AclCtx {}

/// A built ACL rule set: one context per run of rules, in rule order; none
/// at all when there are no rules (`rte_acl_build` refuses an empty set),
/// and then every key classifies to 0.
pub struct AclClassifier {
    ctxs: Vec<AclCtx>,
    acl_rules: usize,
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
}

impl std::fmt::Debug for AclClassifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AclClassifier")
            .field("acl_rules", &self.acl_rules)
            .field("contexts", &self.ctxs.len())
            .finish()
    }
}

impl Classifier for AclClassifier {
    fn classify(&self, keys: &[Key], results: &mut [u32]) {
        let n = keys.len().min(results.len());
        let (first, rest) = match self.ctxs.split_first() {
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
            first.classify(keys, results);
            // Later contexts hold later rules: they only fill the keys no
            // earlier context matched.
            for ctx in rest {
                if results.iter().all(|&r| r != 0) {
                    break;
                }
                let mut more = [0u32; ACL_BURST];
                ctx.classify(keys, &mut more);
                for (r, m) in results.iter_mut().zip(more) {
                    if *r == 0 {
                        *r = m;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_defs_group_whole_words() {
        // After the 1-byte first field, every input group is 4 bytes of
        // consecutive fields starting where its first field starts.
        let mut groups: Vec<(u8, u32, u32)> = Vec::new();
        for &(_, size, _, input, off) in &FIELD_DEFS[1..] {
            match groups.last_mut() {
                Some(g) if g.0 == input => {
                    assert_eq!(g.1 + g.2, off, "group {input} is contiguous");
                    g.2 += u32::from(size);
                }
                _ => groups.push((input, off, u32::from(size))),
            }
        }
        assert!(groups.iter().all(|g| g.2 == 4), "{groups:?}");
        assert_eq!(FIELD_DEFS[0].1, 1);
        for (i, d) in FIELD_DEFS.iter().enumerate() {
            assert_eq!(d.2, i, "field_index in order");
            assert!(d.4 + u32::from(d.1) <= 28, "inside the key");
        }
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
        expand(&r, 4, &mut out);
        assert_eq!(out.len(), 2);
        for (a, st) in out.iter().zip([CT_ESTABLISHED, CT_RELATED]) {
            // SAFETY: reading a union member that was written as u8.
            let (v, m) = unsafe { (a.field[F_FLAGS].value.u8_, a.field[F_FLAGS].mask_range.u8_) };
            assert_eq!((v, m), (FLAG_L4 | st, FLAG_L4 | st));
            assert_eq!(a.data.userdata, 5);
            assert_eq!(a.data.priority, sys::RTE_ACL_MAX_PRIORITY as i32 - 4);
        }
    }
}
