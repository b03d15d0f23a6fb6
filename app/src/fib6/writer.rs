//! The IPv6 FIB's one writer, on the control lcore: routes added, replaced
//! and deleted while the workers look up, in batches.
//!
//! How a batch reaches the workers whole (the IPv4 writer's rules, on top
//! of [`Lpm6Writer`], which already shows the workers the table before a
//! batch or after it, never one being changed):
//! - each new next hop is written into a free slot first, and only then is
//!   the table that names its id made active;
//! - a slot no route uses any more is reused only after every worker
//!   reported a quiescent state since the swap that unpublished it;
//! - the default route `::/0`, which `rte_lpm6` cannot hold, sits beside
//!   the pair: a batch that sets it stores it before the swap, one that
//!   deletes it stores the miss after the swap, so an address that both
//!   the old and the new table route never misses.

use super::hops::HopTable6;
use super::{Fib6, Fib6Entry, NextHop6};
use crate::dpdk::{DpdkError, Lpm6Change, Lpm6Writer, Qsbr, LPM6_MISS};
use crate::fib::{Origin, OriginCounts};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::Ipv6Addr;
use std::sync::atomic::{AtomicU32, Ordering::*};
use std::sync::Arc;

/// What a batch leaves each prefix it names: a rule, or none.
type LastChanges = BTreeMap<(u128, u8), Option<(NextHop6, Origin)>>;
/// The rules a batch sets, in key order.
type NewRules = Vec<((u128, u8), Rule6)>;
/// IPv6 next hops the table holds at once (with those in their grace period).
pub const HOP6_CAPACITY: usize = 4096;

/// One change of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Route6Change {
    /// Route `prefix/len` by a next hop (replacing what it had).
    Set(Ipv6Addr, u8, NextHop6, Origin),
    /// Delete `prefix/len` (no error when there is none).
    Remove(Ipv6Addr, u8),
}

/// One prefix of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule6 {
    pub hop: NextHop6,
    pub origin: Origin,
    /// The id the tables hold.
    id: u32,
}

/// The IPv6 FIB's writer. Not `Clone`: the control plane owns the only one.
#[derive(Debug)]
pub struct Fib6Writer {
    fib: Arc<Fib6>,
    lpm: Lpm6Writer,
    qsbr: Arc<Qsbr>,
    rules: BTreeMap<(u128, u8), Rule6>,
    /// Next hops in use: their id and how many routes use them.
    shared: HashMap<NextHop6, (u32, usize)>,
    free_ids: Vec<u32>,
    /// Unpublished slots, with the QSBR token after which they are free.
    retiring: VecDeque<(u32, u64)>,
    /// Bumped by every batch that changed a rule.
    version: u64,
    /// The rules by origin.
    counts: OriginCounts,
}

/// A prefix as the table keys it: host bits cleared.
fn key(prefix: Ipv6Addr, len: u8) -> (u128, u8) {
    let mask = u128::MAX
        .checked_shl(128 - u32::from(len.min(128)))
        .unwrap_or(0);
    (prefix.to_bits() & mask, len)
}

impl Fib6Writer {
    /// The table over `lpm`'s (empty) pair, read by the workers of `qsbr`,
    /// with `entries` installed in one batch (later entries replace
    /// identical earlier prefixes).
    pub fn new(
        lpm: Lpm6Writer,
        qsbr: Arc<Qsbr>,
        entries: &[Fib6Entry],
    ) -> Result<(Arc<Fib6>, Fib6Writer), DpdkError> {
        let fib = Arc::new(Fib6 {
            lpm: lpm.table().clone(),
            hops: HopTable6::new(HOP6_CAPACITY),
            default: AtomicU32::new(LPM6_MISS),
        });
        let mut w = Fib6Writer {
            fib: fib.clone(),
            lpm,
            qsbr,
            rules: BTreeMap::new(),
            shared: HashMap::new(),
            free_ids: (0..HOP6_CAPACITY as u32).rev().collect(),
            retiring: VecDeque::new(),
            version: 0,
            counts: OriginCounts::default(),
        };
        let batch: Vec<Route6Change> = entries
            .iter()
            .map(|e| Route6Change::Set(e.prefix, e.len, e.hop, e.origin.clone()))
            .collect();
        w.apply(&batch)?;
        Ok((fib, w))
    }

    /// The table the workers read.
    pub fn table(&self) -> &Arc<Fib6> {
        &self.fib
    }

    /// The rule of exactly `prefix/len`.
    pub fn rule(&self, prefix: Ipv6Addr, len: u8) -> Option<&Rule6> {
        self.rules.get(&key(prefix, len))
    }

    /// Every rule, by prefix.
    pub fn rules(&self) -> impl Iterator<Item = (Ipv6Addr, u8, &Rule6)> {
        self.rules
            .iter()
            .map(|(&(p, l), r)| (Ipv6Addr::from_bits(p), l, r))
    }

    /// How many distinct next hops the routes use.
    pub fn hop_count(&self) -> usize {
        self.shared.len()
    }

    /// How many batches changed the rules: a view built at one version is
    /// current while it holds.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The rules by origin.
    pub fn origin_counts(&self) -> OriginCounts {
        self.counts
    }

    /// How many times the workers' table changed (batches applied).
    pub fn swaps(&self) -> u64 {
        self.lpm.swaps()
    }

    /// Route `prefix/len` by `hop`: [`apply`](Self::apply) of one change.
    pub fn set(
        &mut self,
        prefix: Ipv6Addr,
        len: u8,
        hop: NextHop6,
        origin: Origin,
    ) -> Result<(), DpdkError> {
        self.apply(&[Route6Change::Set(prefix, len, hop, origin)])
    }

    /// Delete `prefix/len` (its addresses fall to the covering prefix);
    /// the rule it had.
    pub fn remove(&mut self, prefix: Ipv6Addr, len: u8) -> Result<Option<Rule6>, DpdkError> {
        let old = self.rule(prefix, len).cloned();
        if old.is_some() {
            self.apply(&[Route6Change::Remove(prefix, len)])?;
        }
        Ok(old)
    }

    /// Apply `changes` (a later change of a prefix wins over an earlier
    /// one) as one step the workers see whole. On an error (no free slot,
    /// a full table) nothing changes for the workers. May wait for one
    /// grace period (`Lpm6Writer::apply`).
    pub fn apply(&mut self, changes: &[Route6Change]) -> Result<(), DpdkError> {
        let mut last = LastChanges::new();
        for c in changes {
            match c {
                Route6Change::Set(p, l, h, o) => last.insert(key(*p, *l), Some((*h, o.clone()))),
                Route6Change::Remove(p, l) => last.insert(key(*p, *l), None),
            };
        }
        last.retain(|k, v| v.is_some() || self.rules.contains_key(k));
        if last.is_empty() {
            return Ok(());
        }
        // The new next hops, written before any table names them.
        let new = self.new_rules(&last)?;
        // `new` is in key order, as `last`.
        let rule_of = |k: &(u128, u8)| {
            new.binary_search_by(|(n, _)| n.cmp(k))
                .ok()
                .map(|i| &new[i].1)
        };
        let id_of = |k: &(u128, u8)| rule_of(k).map(|r| r.id);
        let batch: Vec<Lpm6Change> = last
            .keys()
            .filter(|(_, l)| *l > 0)
            .map(|k @ (p, l)| match id_of(k) {
                Some(id) => Lpm6Change::Add(Ipv6Addr::from_bits(*p), *l, id),
                None => Lpm6Change::Delete(Ipv6Addr::from_bits(*p), *l),
            })
            .collect();
        let default = last
            .get(&(0, 0))
            .map(|v| v.as_ref().map(|_| id_of(&(0, 0))));
        let old_default = self.fib.default.load(Relaxed);
        if let Some(Some(Some(id))) = default {
            // Added or replaced: before the swap (what the old table misses
            // takes the new default, which the new table gives it too).
            self.fib.default.store(id, Release);
        }
        if let Err(e) = self.lpm.apply(&batch) {
            self.fib.default.store(old_default, Release);
            new.iter().for_each(|(_, r)| self.unref(&r.hop));
            return Err(e);
        }
        if let Some(None) = default {
            // Deleted: after the swap (what the new table misses kept the
            // default until no worker reads the old one any more).
            self.fib.default.store(LPM6_MISS, Release);
        }
        let mut gone = Vec::new();
        for (k, v) in &last {
            let old = match v {
                Some(_) => rule_of(k).cloned().and_then(|r| {
                    let origin = r.origin.clone();
                    let old = self.rules.insert(*k, r);
                    self.counts.add(&origin, old.as_ref().map(|o| &o.origin));
                    old
                }),
                None => self
                    .rules
                    .remove(k)
                    .inspect(|o| self.counts.remove(&o.origin)),
            };
            gone.extend(old);
        }
        for r in gone {
            self.unref(&r.hop);
        }
        self.version += 1;
        Ok(())
    }

    /// The rules of the prefixes `last` sets, in key order, each with its
    /// next hop's id (taken now; all given back when one cannot be had).
    fn new_rules(&mut self, last: &LastChanges) -> Result<NewRules, DpdkError> {
        let mut new = Vec::new();
        for (k, v) in last {
            let Some((hop, origin)) = v else { continue };
            match self.hop_id(hop) {
                Ok(id) => new.push((
                    *k,
                    Rule6 {
                        hop: *hop,
                        origin: origin.clone(),
                        id,
                    },
                )),
                Err(e) => {
                    new.iter()
                        .for_each(|(_, r): &(_, Rule6)| self.unref(&r.hop));
                    return Err(e);
                }
            }
        }
        Ok(new)
    }

    /// Make what passed its grace period reusable. Cheap: call every round.
    pub fn collect(&mut self) {
        while let Some((id, token)) = self.retiring.front().copied() {
            if !self.qsbr.passed(token) {
                break;
            }
            self.retiring.pop_front();
            self.free_ids.push(id);
        }
    }

    /// The id of `hop`, written if new; counts one more user.
    fn hop_id(&mut self, hop: &NextHop6) -> Result<u32, DpdkError> {
        if let Some((id, users)) = self.shared.get_mut(hop) {
            *users += 1;
            return Ok(*id);
        }
        self.collect();
        let id = self.free_ids.pop().ok_or_else(|| DpdkError {
            what: "the IPv6 FIB's next-hop slots".into(),
            code: libc::ENOSPC,
            reason: format!(
                "all {} in use (or in their grace period)",
                self.fib.hops.capacity()
            ),
        })?;
        self.fib.hops.write(id, hop);
        self.shared.insert(*hop, (id, 1));
        Ok(id)
    }

    /// One user fewer of `hop`; unused, its slot retires: reused after the
    /// grace period that starts now (after the swap that unpublished it).
    fn unref(&mut self, hop: &NextHop6) {
        let Some((id, users)) = self.shared.get_mut(hop) else {
            return;
        };
        *users -= 1;
        if *users == 0 {
            let id = *id;
            self.shared.remove(hop);
            let token = self.qsbr.start();
            self.retiring.push_back((id, token));
        }
    }
}
