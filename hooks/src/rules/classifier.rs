//! Rule matching behind a trait, so the hooks stay DPDK-free: the app plugs
//! in DPDK's ACL library, and [`LinearClassifier`] here is the reference
//! semantics (and what unit tests use).

use super::key::Key;
use super::key6::Key6;
use super::rule::{Family, MatchRule};

/// A built rule set. `classify` stores in `results[i]` 1 + the index of the
/// FIRST rule that `keys[i]` matches, or 0 when none does. Only the first
/// `min(keys.len(), results.len())` entries are classified. Called by every
/// worker concurrently: it must not lock.
pub trait Classifier: Send + Sync {
    fn classify(&self, keys: &[Key], results: &mut [u32]);

    /// [`Classifier::classify`] for IPv6 keys, over the same rules (of the
    /// first rule set): an IPv4 rule never matches, a rule naming no
    /// address does, and the answer is 1 + the rule's index in the whole
    /// set, so that one table of actions serves both families.
    fn classify6(&self, keys: &[Key6], results: &mut [u32]);

    /// For a classifier of several rule sets (one category each, as DPDK's
    /// ACL calls them; [`ClassifierBuilder::build_sets`]): the answer of
    /// every set for each key, set `c` in `results[i][c]`, each as
    /// [`Classifier::classify`] gives it for that set alone. Sets beyond
    /// those built answer 0. A classifier of one set answers it in `[0]`.
    fn classify_sets(&self, keys: &[Key], results: &mut [Answers]) {
        set_by_set(keys, results, 1, |_, k, r| self.classify(k, r));
    }

    /// [`Classifier::classify_sets`] for IPv6 keys: each set's answer as
    /// [`Classifier::classify6`] gives it for that set alone (an IPv4 rule
    /// never matches; the answer is 1 + the rule's index in its set).
    fn classify_sets6(&self, keys: &[Key6], results: &mut [Answers]) {
        set_by_set(keys, results, 1, |_, k, r| self.classify6(k, r));
    }
}

/// [`Classifier::classify_sets`] (or its IPv6 twin) by asking for each of
/// `sets` sets in turn (`classify(set, keys, results)`); the others answer 0.
fn set_by_set<K>(
    keys: &[K],
    results: &mut [Answers],
    sets: usize,
    classify: impl Fn(usize, &[K], &mut [u32]),
) {
    let n = keys.len().min(results.len());
    let mut one = [0u32; crate::MAX_BURST];
    for (keys, results) in keys[..n]
        .chunks(crate::MAX_BURST)
        .zip(results[..n].chunks_mut(crate::MAX_BURST))
    {
        results.fill([0; MAX_SETS]);
        for c in 0..sets.min(MAX_SETS) {
            classify(c, keys, &mut one[..keys.len()]);
            for (r, a) in results.iter_mut().zip(one) {
                r[c] = a;
            }
        }
    }
}

/// Most rule sets one classifier answers for at once: a hook's own and one
/// per lookahead slot.
pub const MAX_SETS: usize = 1 + crate::LOOKAHEAD_SLOTS;

/// The answers of every rule set of a classifier for one key.
pub type Answers = [u32; MAX_SETS];

/// Builds classifiers from rules in order (rule 0 first). Refuses rules that
/// [`MatchRule::validate`] refuses, and rule sets it cannot represent.
pub trait ClassifierBuilder: Send + Sync {
    fn build(&self, rules: &[MatchRule]) -> Result<Box<dyn Classifier>, String>;

    /// One classifier of up to [`MAX_SETS`] rule sets, each ordered as in
    /// [`ClassifierBuilder::build`] and answered on its own
    /// ([`Classifier::classify_sets`]; `classify` answers the first). The
    /// default classifies each set in turn; DPDK's ACL answers them all in
    /// one walk.
    fn build_sets(&self, sets: &[&[MatchRule]]) -> Result<Box<dyn Classifier>, String> {
        if sets.len() > MAX_SETS {
            return Err(format!("{} rule sets: at most {MAX_SETS}", sets.len()));
        }
        let each = sets
            .iter()
            .map(|s| self.build(s))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Box::new(EachSet(each)))
    }
    /// Name for logs and errors (e.g. "linear", "dpdk-acl").
    fn name(&self) -> &str;
}

/// Several classifiers, one per rule set, asked in turn.
struct EachSet(Vec<Box<dyn Classifier>>);

impl Classifier for EachSet {
    fn classify(&self, keys: &[Key], results: &mut [u32]) {
        match self.0.first() {
            Some(c) => c.classify(keys, results),
            None => results.iter_mut().for_each(|r| *r = 0),
        }
    }

    fn classify6(&self, keys: &[Key6], results: &mut [u32]) {
        match self.0.first() {
            Some(c) => c.classify6(keys, results),
            None => results.iter_mut().for_each(|r| *r = 0),
        }
    }

    fn classify_sets(&self, keys: &[Key], results: &mut [Answers]) {
        set_by_set(keys, results, self.0.len(), |c, k, r| {
            self.0[c].classify(k, r)
        });
    }

    fn classify_sets6(&self, keys: &[Key6], results: &mut [Answers]) {
        set_by_set(keys, results, self.0.len(), |c, k, r| {
            self.0[c].classify6(k, r)
        });
    }
}

/// Validate every rule, naming the first bad one (1-based, as configs count).
pub fn validate_rules(rules: &[MatchRule]) -> Result<(), String> {
    for (i, r) in rules.iter().enumerate() {
        r.validate().map_err(|e| format!("rule {}: {e}", i + 1))?;
    }
    Ok(())
}

/// Tries the rules in order, one key at a time. O(rules) per key: the
/// reference semantics, fine for a handful of rules.
#[derive(Clone, Debug, Default)]
pub struct LinearClassifier {
    rules: Vec<MatchRule>,
}

impl LinearClassifier {
    /// The classifier of `rules` (validated).
    pub fn new(rules: &[MatchRule]) -> Result<LinearClassifier, String> {
        validate_rules(rules)?;
        Ok(LinearClassifier {
            rules: rules.to_vec(),
        })
    }

    /// 1 + index of the first rule `k` matches, 0 when none.
    #[inline]
    pub fn classify_one(&self, k: &Key) -> u32 {
        self.rules
            .iter()
            .position(|r| r.matches(k))
            .map_or(0, |i| i as u32 + 1)
    }

    /// [`LinearClassifier::classify_one`] for an IPv6 key.
    #[inline]
    pub fn classify_one6(&self, k: &Key6) -> u32 {
        self.rules
            .iter()
            .position(|r| r.matches6(k))
            .map_or(0, |i| i as u32 + 1)
    }

    /// Does any rule apply to IPv6 (names IPv6 addresses or none)?
    pub fn any_for(&self, family: Family) -> bool {
        self.rules.iter().any(|r| r.applies_to(family))
    }
}

impl Classifier for LinearClassifier {
    fn classify(&self, keys: &[Key], results: &mut [u32]) {
        for (k, r) in keys.iter().zip(results.iter_mut()) {
            *r = self.classify_one(k);
        }
    }

    fn classify6(&self, keys: &[Key6], results: &mut [u32]) {
        for (k, r) in keys.iter().zip(results.iter_mut()) {
            *r = self.classify_one6(k);
        }
    }
}

/// Builds [`LinearClassifier`]s.
#[derive(Clone, Copy, Debug, Default)]
pub struct LinearBuilder;

impl ClassifierBuilder for LinearBuilder {
    fn build(&self, rules: &[MatchRule]) -> Result<Box<dyn Classifier>, String> {
        Ok(Box::new(LinearClassifier::new(rules)?))
    }

    fn name(&self) -> &str {
        "linear"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::proto;
    use crate::rules::key::{CT_ESTABLISHED, FLAG_L4};
    use crate::rules::rule::Prefix;

    fn key(proto: u8, dst: u32, dport: u16, flags: u8) -> Key {
        let mut b = [0u8; 32];
        b[0] = proto;
        b[3] = flags;
        b[8..12].copy_from_slice(&dst.to_be_bytes());
        b[14..16].copy_from_slice(&dport.to_be_bytes());
        Key::from_bytes(b)
    }

    #[test]
    fn first_match_wins_and_zero_is_no_match() {
        let rules = vec![
            MatchRule {
                proto: Some(proto::TCP),
                dport: Some((22, 22)),
                ..MatchRule::any()
            },
            MatchRule {
                dst: Some(Prefix::new(0x0a00_0000, 8)),
                ..MatchRule::any()
            },
            MatchRule {
                proto: Some(proto::TCP),
                ..MatchRule::any()
            },
        ];
        let c = LinearBuilder.build(&rules).unwrap();
        let keys = [
            key(proto::TCP, 0x0a00_0001, 22, FLAG_L4),
            key(proto::TCP, 0x0a00_0001, 23, FLAG_L4),
            key(proto::TCP, 0x0b00_0001, 23, FLAG_L4),
            key(proto::UDP, 0x0b00_0001, 22, FLAG_L4 | CT_ESTABLISHED),
            // Port 22 without L4 (a later fragment): not rule 1.
            key(proto::TCP, 0x0a00_0001, 22, 0),
        ];
        let mut res = [99u32; 5];
        c.classify(&keys, &mut res);
        assert_eq!(res, [1, 2, 3, 0, 2]);
    }

    #[test]
    fn no_rules_classify_to_zero() {
        let c = LinearBuilder.build(&[]).unwrap();
        let mut res = [7u32; 3];
        c.classify(&[Key::default(); 3], &mut res);
        assert_eq!(res, [0; 3]);
    }

    #[test]
    fn short_results_classify_a_prefix() {
        let c = LinearBuilder.build(&[MatchRule::any()]).unwrap();
        let mut res = [0u32; 2];
        c.classify(&[Key::default(); 3], &mut res);
        assert_eq!(res, [1, 1]);
    }

    #[test]
    fn malformed_rules_are_refused_with_their_number() {
        let rules = [
            MatchRule::any(),
            MatchRule {
                vlan: Some((5, 4)),
                ..MatchRule::any()
            },
        ];
        let e = LinearBuilder.build(&rules).err().unwrap();
        assert!(e.starts_with("rule 2: vlan"), "{e}");
    }
}
