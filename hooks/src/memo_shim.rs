//! What the router's flow memo still calls while it is being removed. No
//! hook answers through it any more: every chain says it is not flow-pure,
//! so the memo never remembers, replays or confirms anything. Delete this
//! file with the memo.

use crate::{Chain, HookContext, HookSet, MAX_BURST};

/// Most hooks of a chain whose answers the flow memo kept.
#[doc(hidden)]
pub const MEMO_HOOKS: usize = 2;

/// Per hook of a chain, each packet's token.
#[doc(hidden)]
pub type ChainTokens = [[u32; MAX_BURST]; MEMO_HOOKS];

#[doc(hidden)]
impl Chain {
    /// Never: the flow memo answers for no chain.
    #[inline(always)]
    pub fn flow_pure(&self) -> bool {
        false
    }

    /// Never.
    #[inline(always)]
    pub fn confirms(&self) -> bool {
        false
    }

    /// Confirms nothing.
    pub fn confirm(
        &self,
        _cx: &HookContext,
        _flows: crate::Flows<'_>,
        _tokens: &ChainTokens,
        _leases: Option<&mut [crate::Lease]>,
    ) -> usize {
        0
    }

    /// Counts nothing (never called: nothing is remembered).
    pub fn replay(&self, _cx: &HookContext, _n: usize, _tokens: &ChainTokens) {}
}

#[doc(hidden)]
impl HookSet {
    /// Never: the memo looks nothing up.
    #[inline(always)]
    pub fn egress_flow_pure(&self) -> bool {
        false
    }

    /// Never.
    #[inline(always)]
    pub fn confirms(&self) -> bool {
        false
    }

    /// Hooks in the longest egress chain of any port.
    pub fn egress_hooks_max(&self) -> usize {
        (0..self.ports())
            .filter_map(|p| self.chain(crate::HookPoint::Egress, p as u16))
            .map(|c| c.entries().len())
            .max()
            .unwrap_or(0)
    }
}
