//! What a fastpath hook sees and does, with no DPDK dependency. Everything
//! here works on plain memory and is unit-tested and fuzzed.
//!
//! # Contents
//!
//! * the per-packet metadata that travels in the mbuf's private area
//!   ([`PacketMeta`]) and the named reasons a packet can be dropped for
//!   ([`DropReason`]);
//! * header views over byte slices ([`wire`]);
//! * the hook machinery: the [`Hook`] trait (what the config built, shared
//!   by every worker) and [`HookWorker`], the hook on one worker (one
//!   `&mut` call per burst, a [`Verdict`] per packet), chains ordered by
//!   priority, the [`HookSet`] snapshot that workers load once per burst
//!   and the control plane replaces as a whole ([`snapshot`], reclaimed in
//!   the workers' reclamation domain, [`grace`]), a worker's
//!   own side of it ([`WorkerHooks`], [`WorkerStore`]), the [`Registry`] of
//!   hook kinds by name, and per-hook counters;
//! * the built-in hooks ([`builtin`]), their rules ([`rules`]) and connection
//!   tracking ([`conntrack`]).

#![forbid(unsafe_code)]

pub mod builtin;
pub mod chain;
pub mod conntrack;
pub mod drop_reason;
pub mod flow;
pub mod flow6;
pub mod grace;
pub mod hook;
pub mod hook_counters;
pub mod hook_set;
pub mod lookahead;
pub mod meta;
pub mod packet;
pub mod registry;
pub mod rules;
pub mod snapshot;
#[cfg(any(test, feature = "testkit"))]
pub mod testkit;
pub mod verdict;
pub mod wire;
pub mod worker_counters;
pub mod worker_hooks;
pub mod worker_store;

pub use chain::{Chain, ChainEntry, StealLog};
pub use drop_reason::{DropCounters, DropReason};
pub use flow::{FlowSummary, Fragment};
pub use flow6::FlowSummary6;
pub use hook::{Hook, HookContext, HookPoint, HookWorker, OwnedPacket};
pub use hook_counters::{HookCounters, HookStats};
pub use hook_set::HookSet;
pub use meta::{PacketMeta, PacketType, LOOKAHEAD_SLOTS};
pub use packet::{each_index, HookBurst, HookPacket, Tally, MAX_BURST};
pub use registry::{
    BuildContext, DuplicateKind, HookArgs, HookBuildError, HookKind, KindHandle, Registry,
};
pub use verdict::Verdict;
pub use worker_hooks::WorkerHooks;
pub use worker_store::{StoreKey, WorkerStore};

/// Lock `m`, taking the data even if a panicking thread poisoned it: the
/// data here (snapshots, registries, per-worker tables) stays consistent
/// across a panic, and the control plane must go on.
pub(crate) fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
