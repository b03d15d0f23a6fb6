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
    /// Every egress chain is flow-pure (or empty).
    egress_flow_pure: bool,
    /// Some chain [`confirms`](Chain::confirms).
    confirms: bool,
    /// Hooks in the longest egress chain.
    egress_hooks_max: usize,
    /// Unique per process to this set's chains as they are now: what the
    /// router's flow memo remembers an answer under.
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
            egress_flow_pure: true,
            confirms: false,
            egress_hooks_max: 0,
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
        self.egress_flow_pure = self.egress.iter().all(|c| c.is_empty() || c.flow_pure());
        self.confirms = self.ingress.iter().chain(&self.egress).any(Chain::confirms);
        self.egress_hooks_max = self
            .egress
            .iter()
            .map(|c| c.entries().len())
            .max()
            .unwrap_or(0);
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

    /// Is every egress chain flow-pure (or empty)? If not, the router's
    /// flow memo does not look bursts up: a burst leaving by a port whose
    /// chain is not (say, a policer) is never remembered, so its
    /// lookups would be pure cost.
    #[inline(always)]
    pub fn egress_flow_pure(&self) -> bool {
        self.egress_flow_pure
    }

    /// Does any chain [`confirm`](Chain::confirm) what the flow memo
    /// answers for it?
    #[inline(always)]
    pub fn confirms(&self) -> bool {
        self.confirms
    }

    /// Hooks in the longest egress chain of any port.
    #[inline(always)]
    pub fn egress_hooks_max(&self) -> usize {
        self.egress_hooks_max
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

    struct Stateful;
    impl crate::Hook for Stateful {
        fn process(&self, _: &crate::HookContext, _: &mut crate::HookBurst<'_, '_>) {}
    }

    #[test]
    fn egress_is_flow_pure_until_a_chain_that_is_not() {
        let mut s = HookSet::empty(2);
        assert!(s.egress_flow_pure());
        let e = ChainEntry {
            name: "ct".into(),
            kind: "stateful".into(),
            priority: 0,
            hook: std::sync::Arc::new(Stateful),
            counters: std::sync::Arc::new(crate::HookCounters::new(1)),
        };
        s.set(HookPoint::Ingress, 0, Chain::new(vec![]));
        assert!(s.egress_flow_pure());
        s.set(HookPoint::Egress, 1, Chain::new(vec![e]));
        assert!(!s.egress_flow_pure());
        assert_eq!(s.egress_hooks_max(), 1);
        s.set(HookPoint::Egress, 1, Chain::default());
        assert!(s.egress_flow_pure());
    }
}
