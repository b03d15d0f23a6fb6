//! The FIB's one writer, on the control lcore: routes added, replaced and
//! deleted while the workers look up.
//!
//! How a change reaches the workers whole:
//! - a route's next hop (or ECMP group) is written into a free slot of the
//!   next-hop array first, and only then is its id stored in the LPM;
//! - a route that changes is overwritten (an LPM add on the existing
//!   prefix replaces its id entry by entry), never deleted and added again,
//!   so an address both the old and the new table route always finds one;
//! - a delete lets the covering prefix take over entry by entry;
//! - a slot (or member chunk) that no route uses any more is reused only
//!   after every worker reported a quiescent state since (DPDK's RCU QSBR,
//!   the same variable that holds back the reuse of the LPM's tbl8
//!   groups), so a worker that
//!   looked an id up before the change still reads what it found.
//!
//! An ECMP group's members leave it when their gateway fails resolution and
//! come back when it answers ([`FibWriter::set_gateway_state`]): a new chunk
//! of live members, then one store of the group's word.

use super::hops::{group_word, HopTable};
use super::{Fib, FibEntry, HopKind, NextHop, MAX_PATHS};
use crate::dpdk::{DpdkError, Lpm, LpmWriter, Qsbr, LPM_MISS};
use std::collections::{HashMap, HashSet, VecDeque};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering::Release};
use std::sync::Arc;

/// Next hops and groups the table holds at once.
pub const HOP_CAPACITY: usize = 4096;
/// Member chunks (`MAX_PATHS` each) for ECMP groups, with room for the
/// chunks still in their grace period.
const CHUNKS: usize = 1024;

/// Where a route comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A `[[route]]` of the config file (replaced by a reload).
    Config,
    /// Added by `fastpath ctl` (kept by a reload unless the file names it).
    Ctl,
    /// Sent by FRR's zebra over FPM (a config or ctl route of the same
    /// prefix wins: see `fpm::rib`).
    Fpm,
    /// A port's connected subnet (DPDK port id).
    Connected(u16),
    /// What no route may change: our addresses, broadcasts, multicast,
    /// martian ranges (what it is).
    Fixed(String),
}

impl Origin {
    /// Whether routes may replace or delete it.
    pub fn is_route(&self) -> bool {
        matches!(self, Origin::Config | Origin::Ctl | Origin::Fpm)
    }

    pub fn name(&self) -> &'static str {
        match self {
            Origin::Config => "config",
            Origin::Ctl => "ctl",
            Origin::Fpm => "fpm",
            Origin::Connected(_) => "connected",
            Origin::Fixed(_) => "fixed",
        }
    }
}

/// The origins' names, in the order [`OriginCounts`] counts them.
pub const ORIGINS: [&str; 5] = ["config", "ctl", "fpm", "connected", "fixed"];

/// How many rules of a table come from each origin: kept as rules come
/// and go, so that the operations plane's counts never walk the table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OriginCounts([u64; ORIGINS.len()]);

impl OriginCounts {
    fn slot(o: &Origin) -> usize {
        match o {
            Origin::Config => 0,
            Origin::Ctl => 1,
            Origin::Fpm => 2,
            Origin::Connected(_) => 3,
            Origin::Fixed(_) => 4,
        }
    }

    /// One rule more of `o`; with `replaced`, one fewer of its origin.
    pub fn add(&mut self, o: &Origin, replaced: Option<&Origin>) {
        if let Some(r) = replaced {
            self.remove(r);
        }
        self.0[Self::slot(o)] += 1;
    }

    /// One rule fewer of `o`.
    pub fn remove(&mut self, o: &Origin) {
        let n = &mut self.0[Self::slot(o)];
        *n = n.saturating_sub(1);
    }

    /// Every rule.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// (origin, rules), in [`ORIGINS`]' order.
    pub fn fields(&self) -> Vec<(&'static str, u64)> {
        ORIGINS.iter().copied().zip(self.0).collect()
    }
}

/// One prefix of the table.
#[derive(Clone, Debug)]
pub struct Rule {
    /// Its next hops (several: an ECMP group, shared by every rule with
    /// the same next hops in the same order).
    pub hops: Vec<NextHop>,
    pub origin: Origin,
}

impl Rule {
    fn is_group(&self) -> bool {
        self.hops.len() > 1
    }
}

/// An ECMP group: its id, its member chunk, its members' ids (in its next
/// hops' order) and how many rules use it. Rules with the same next hops
/// share one, as zebra's next-hop groups and the kernel's next-hop objects
/// are shared: a table of a million ECMP routes over a few gateways takes
/// a few groups, not a million.
#[derive(Clone, Debug)]
struct Group {
    id: u32,
    chunk: u32,
    ids: Vec<u32>,
    users: usize,
}

/// What waits for a grace period before reuse.
#[derive(Debug)]
enum Retired {
    Id(u32),
    Chunk(u32),
}

/// The FIB's writer. Not `Clone`: the control plane owns the only one.
pub struct FibWriter {
    fib: Arc<Fib>,
    lpm: LpmWriter,
    qsbr: Arc<Qsbr>,
    /// By prefix: hashed, not ordered (a full table's install looks each
    /// prefix up three times; [`rules`](Self::rules) sorts when asked).
    rules: HashMap<(u32, u8), Rule>,
    /// Plain next hops in use: their id and how many routes and groups use them.
    shared: HashMap<NextHop, (u32, usize)>,
    /// ECMP groups in use, by their next hops.
    groups: HashMap<Vec<NextHop>, Group>,
    free_ids: Vec<u32>,
    free_chunks: Vec<u32>,
    /// Unpublished slots and chunks, with the QSBR token after which they are free.
    retiring: VecDeque<(Retired, u64)>,
    /// Gateways whose resolution failed: out of their groups.
    down: HashSet<u32>,
    /// Bumped by every change of a rule or of a gateway's state.
    version: u64,
    /// The rules by origin.
    counts: OriginCounts,
}

fn full(what: &str, n: usize) -> DpdkError {
    DpdkError {
        what: format!("the FIB's {what}"),
        code: libc::ENOSPC,
        reason: format!("all {n} in use"),
    }
}

impl FibWriter {
    /// Share `lpm` with readers under `qsbr` and install `entries` (later
    /// ones replace earlier identical prefixes).
    pub fn new(
        lpm: Lpm,
        qsbr: Arc<Qsbr>,
        entries: &[FibEntry],
    ) -> Result<(Arc<Fib>, FibWriter), DpdkError> {
        // Sized once for the table's routes: a full table's install must
        // not rehash a million entries half-way (the slots are touched as
        // routes come, not before).
        let rules = HashMap::with_capacity(lpm.max_rules() as usize);
        let (table, lpm) = lpm.into_shared(qsbr.clone())?;
        let fib = Arc::new(Fib {
            lpm: table,
            hops: HopTable::new(HOP_CAPACITY, CHUNKS),
            default: AtomicU32::new(LPM_MISS),
        });
        let mut w = FibWriter {
            fib: fib.clone(),
            lpm,
            qsbr,
            rules,
            shared: HashMap::new(),
            groups: HashMap::new(),
            free_ids: (0..HOP_CAPACITY as u32).rev().collect(),
            free_chunks: (0..CHUNKS as u32).rev().collect(),
            retiring: VecDeque::new(),
            down: HashSet::new(),
            version: 0,
            counts: OriginCounts::default(),
        };
        for e in entries {
            w.set(e.prefix, e.len, e.hops.clone(), e.origin.clone())?;
        }
        Ok((fib, w))
    }

    /// The table the workers read.
    pub fn table(&self) -> &Arc<Fib> {
        &self.fib
    }

    /// The rule of exactly `prefix/len`.
    pub fn rule(&self, prefix: Ipv4Addr, len: u8) -> Option<&Rule> {
        self.rules.get(&(u32::from(prefix), len))
    }

    /// Every rule, by prefix.
    pub fn rules(&self) -> impl Iterator<Item = (Ipv4Addr, u8, &Rule)> {
        let mut all: Vec<(&(u32, u8), &Rule)> = self.rules.iter().collect();
        all.sort_unstable_by_key(|(k, _)| **k);
        all.into_iter()
            .map(|((p, l), r)| (Ipv4Addr::from(*p), *l, r))
    }

    /// How many changes the rules (and the gateways' states) have seen: a
    /// view built at one version is current while it holds.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The rules by origin.
    pub fn origin_counts(&self) -> OriginCounts {
        self.counts
    }

    /// Whether `gateway` (host order) is out of its groups.
    pub fn is_down(&self, gateway: u32) -> bool {
        self.down.contains(&gateway)
    }

    /// The gateways out of their groups, with their output port.
    pub fn down_gateways(&self) -> Vec<(u32, u16)> {
        let mut out: Vec<(u32, u16)> = Vec::new();
        for hops in self.groups.keys() {
            for h in hops.iter().filter(|h| self.down.contains(&h.gateway)) {
                if !out.iter().any(|(g, _)| *g == h.gateway) {
                    out.push((h.gateway, h.port));
                }
            }
        }
        out
    }

    /// Route `prefix/len` by `hops` (one, or an ECMP group of up to
    /// `MAX_PATHS`), replacing what it had in place.
    pub fn set(
        &mut self,
        prefix: Ipv4Addr,
        len: u8,
        hops: Vec<NextHop>,
        origin: Origin,
    ) -> Result<(), DpdkError> {
        if hops.is_empty() || hops.len() > MAX_PATHS {
            return Err(DpdkError {
                what: format!("route {prefix}/{len}"),
                code: libc::EINVAL,
                reason: format!("{} next hops; expected 1 to {MAX_PATHS}", hops.len()),
            });
        }
        let id = self.acquire(&hops)?;
        let installed = if len == 0 {
            self.fib.default.store(id, Release);
            Ok(())
        } else {
            self.lpm.add(prefix, len, id)
        };
        let rule = Rule { hops, origin };
        if let Err(e) = installed {
            self.release(rule);
            return Err(e);
        }
        let origin = rule.origin.clone();
        let old = self.rules.insert((u32::from(prefix), len), rule);
        self.counts.add(&origin, old.as_ref().map(|o| &o.origin));
        if let Some(old) = old {
            self.release(old);
        }
        self.version += 1;
        Ok(())
    }

    /// Delete `prefix/len`: its addresses fall to the covering prefix.
    pub fn remove(&mut self, prefix: Ipv4Addr, len: u8) -> Result<Option<Rule>, DpdkError> {
        let key = (u32::from(prefix), len);
        if !self.rules.contains_key(&key) {
            return Ok(None);
        }
        if len == 0 {
            self.fib.default.store(LPM_MISS, Release);
        } else {
            self.lpm.delete(prefix, len)?;
        }
        let rule = self.rules.remove(&key);
        self.version += 1;
        if let Some(r) = &rule {
            self.counts.remove(&r.origin);
            self.release(r.clone());
        }
        Ok(rule)
    }

    /// A gateway failed resolution (`up` false) or answered again: the
    /// groups holding it get a new member list. Returns how many changed.
    pub fn set_gateway_state(&mut self, gateway: u32, up: bool) -> usize {
        let keys: Vec<Vec<NextHop>> = self
            .groups
            .keys()
            .filter(|hops| hops.iter().any(|h| h.gateway == gateway))
            .cloned()
            .collect();
        let changed = if up {
            self.down.remove(&gateway)
        } else {
            !keys.is_empty() && self.down.insert(gateway)
        };
        if !changed {
            return 0;
        }
        self.version += 1;
        let mut n = 0;
        for hops in keys {
            let Some(chunk) = self.free_chunks.pop() else {
                break;
            };
            let Some(group) = self.groups.get(&hops).cloned() else {
                continue;
            };
            let live = self.live(&hops, &group.ids);
            self.fib.hops.write_chunk(chunk, &live);
            self.fib
                .hops
                .set_group_word(group.id, group_word(chunk, live.len()));
            if let Some(g) = self.groups.get_mut(&hops) {
                g.chunk = chunk;
            }
            self.retire(Retired::Chunk(group.chunk));
            n += 1;
        }
        n
    }

    /// Make what passed its grace period reusable. Cheap: call every round.
    pub fn collect(&mut self) {
        while let Some((_, token)) = self.retiring.front() {
            if !self.qsbr.passed(*token) {
                break;
            }
            match self.retiring.pop_front().map(|(r, _)| r) {
                Some(Retired::Id(id)) => self.free_ids.push(id),
                Some(Retired::Chunk(c)) => self.free_chunks.push(c),
                None => {}
            }
        }
    }

    /// The members of a group that are not down (all of them if every one is).
    fn live(&self, hops: &[NextHop], ids: &[u32]) -> Vec<u32> {
        let up: Vec<u32> = hops
            .iter()
            .zip(ids)
            .filter(|(h, _)| !self.down.contains(&h.gateway))
            .map(|(_, id)| *id)
            .collect();
        if up.is_empty() {
            ids.to_vec()
        } else {
            up
        }
    }

    /// A written id for `hops`, counting one more user: a shared one for a
    /// single next hop or a group already in use, a new group otherwise.
    fn acquire(&mut self, hops: &[NextHop]) -> Result<u32, DpdkError> {
        if let [hop] = hops {
            return self.hop_id(hop);
        }
        if let Some(g) = self.groups.get_mut(hops) {
            g.users += 1;
            return Ok(g.id);
        }
        self.collect();
        if self.free_ids.is_empty() {
            return Err(full("next-hop slots", HOP_CAPACITY));
        }
        let Some(chunk) = self.free_chunks.pop() else {
            return Err(full("ECMP member lists", CHUNKS));
        };
        let mut ids = Vec::with_capacity(hops.len());
        for h in hops {
            match self.hop_id(h) {
                Ok(id) => ids.push(id),
                Err(e) => {
                    hops[..ids.len()].iter().for_each(|h| self.unref(h));
                    self.free_chunks.push(chunk);
                    return Err(e);
                }
            }
        }
        let Some(id) = self.free_ids.pop() else {
            hops.iter().for_each(|h| self.unref(h));
            self.free_chunks.push(chunk);
            return Err(full("next-hop slots", HOP_CAPACITY));
        };
        let live = self.live(hops, &ids);
        self.fib.hops.write_chunk(chunk, &live);
        let group = NextHop {
            kind: HopKind::Group,
            port: 0,
            gateway: 0,
            neigh: group_word(chunk, live.len()),
            mtu: 0,
        };
        self.fib.hops.write(id, &group);
        let group = Group {
            id,
            chunk,
            ids,
            users: 1,
        };
        self.groups.insert(hops.to_vec(), group);
        Ok(id)
    }

    /// The id of plain next hop `hop`, written if new; counts one more user.
    fn hop_id(&mut self, hop: &NextHop) -> Result<u32, DpdkError> {
        if let Some((id, users)) = self.shared.get_mut(hop) {
            *users += 1;
            return Ok(*id);
        }
        self.collect();
        let id = self
            .free_ids
            .pop()
            .ok_or_else(|| full("next-hop slots", HOP_CAPACITY))?;
        self.fib.hops.write(id, hop);
        self.shared.insert(*hop, (id, 1));
        Ok(id)
    }

    /// One user fewer of plain next hop `hop`; unused, it retires.
    fn unref(&mut self, hop: &NextHop) {
        let Some((id, users)) = self.shared.get_mut(hop) else {
            return;
        };
        *users -= 1;
        if *users == 0 {
            let id = *id;
            self.shared.remove(hop);
            self.retire(Retired::Id(id));
        }
    }

    /// A rule no LPM entry holds any more: one user fewer of its next hop
    /// or group; a group no rule uses retires, with its members' users.
    fn release(&mut self, rule: Rule) {
        if !rule.is_group() {
            return rule.hops.iter().for_each(|h| self.unref(h));
        }
        let Some(g) = self.groups.get_mut(&rule.hops) else {
            return;
        };
        g.users -= 1;
        if g.users > 0 {
            return;
        }
        if let Some(g) = self.groups.remove(&rule.hops) {
            self.retire(Retired::Id(g.id));
            self.retire(Retired::Chunk(g.chunk));
            rule.hops.iter().for_each(|h| self.unref(h));
        }
    }

    /// Reuse `r` after the grace period that starts now (after the stores
    /// that unpublished it).
    fn retire(&mut self, r: Retired) {
        let token = self.qsbr.start();
        self.retiring.push_back((r, token));
    }
}
