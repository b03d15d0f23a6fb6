//! Every chain of every port at both points: the snapshot workers load once
//! per burst loop and the control plane replaces as a whole.

use crate::{Chain, ChainEntry, HookPoint};
use std::sync::atomic::{AtomicU64, Ordering};

/// The last generation given to a hook set (0 is never given).
static GENERATION: AtomicU64 = AtomicU64::new(0);

fn next_generation() -> u64 {
    GENERATION.fetch_add(1, Ordering::Relaxed) + 1
}

/// Chains by point and port id. An empty chain is one predictable branch.
pub struct HookSet {
    ingress: Box<[Chain]>,
    egress: Box<[Chain]>,
    any_ingress: bool,
    any_egress: bool,
    /// Unique per process to this set's chains as they are now: what a
    /// worker's `HookWorker`s of the hooks ([`WorkerHooks`](crate::WorkerHooks))
    /// were made for.
    generation: u64,
}

impl Default for HookSet {
    fn default() -> Self {
        HookSet::empty(0)
    }
}

impl HookSet {
    /// Chains for port ids `0..ports`, all empty.
    pub fn empty(ports: usize) -> Self {
        HookSet {
            ingress: (0..ports).map(|_| Chain::default()).collect(),
            egress: (0..ports).map(|_| Chain::default()).collect(),
            any_ingress: false,
            any_egress: false,
            generation: next_generation(),
        }
    }

    /// Unique in the process to these chains: a new set, and every
    /// [`HookSet::set`], gets a new one. Never 0.
    #[inline(always)]
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Put `chain` at `point` of `port` (ignored for a port beyond the set).
    pub fn set(&mut self, point: HookPoint, port: u16, chain: Chain) {
        let chains = match point {
            HookPoint::Ingress => &mut self.ingress,
            HookPoint::Egress => &mut self.egress,
        };
        if let Some(c) = chains.get_mut(usize::from(port)) {
            *c = chain;
        }
        self.any_ingress = self.ingress.iter().any(|c| !c.is_empty());
        self.any_egress = self.egress.iter().any(|c| !c.is_empty());
        self.generation = next_generation();
    }

    /// Is there any ingress hook on any port?
    #[inline(always)]
    pub fn any_ingress(&self) -> bool {
        self.any_ingress
    }

    #[inline(always)]
    pub fn any_egress(&self) -> bool {
        self.any_egress
    }

    /// Port ids the set has chains for (`0..ports`).
    pub fn ports(&self) -> usize {
        self.ingress.len()
    }

    /// The chain at `point` of `port`, when it has hooks.
    #[inline(always)]
    pub fn chain(&self, point: HookPoint, port: u16) -> Option<&Chain> {
        let chains = match point {
            HookPoint::Ingress => &self.ingress,
            HookPoint::Egress => &self.egress,
        };
        chains.get(usize::from(port)).filter(|c| !c.is_empty())
    }

    /// Every hook: point, port id, entry (for statistics).
    pub fn entries(&self) -> impl Iterator<Item = (HookPoint, u16, &ChainEntry)> {
        let ing = self.ingress.iter().enumerate().flat_map(|(p, c)| {
            c.entries()
                .iter()
                .map(move |e| (HookPoint::Ingress, p as u16, e))
        });
        let eg = self.egress.iter().enumerate().flat_map(|(p, c)| {
            c.entries()
                .iter()
                .map(move |e| (HookPoint::Egress, p as u16, e))
        });
        ing.chain(eg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_set_and_every_change_has_a_new_generation() {
        let a = HookSet::empty(2);
        let mut b = HookSet::empty(2);
        assert_ne!(a.generation(), b.generation());
        assert_ne!(a.generation(), 0);
        let before = b.generation();
        b.set(HookPoint::Egress, 1, Chain::default());
        assert_ne!(b.generation(), before);
        assert_ne!(HookSet::default().generation(), a.generation());
    }
}
