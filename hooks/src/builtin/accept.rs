//! `accept`: a hook that accepts every packet. It exists to measure what a
//! non-empty hook point costs (the chain, the burst view, one dynamic call)
//! and to count what passes a point.

use crate::{BuildContext, Hook, HookArgs, HookBuildError, HookBurst, HookContext, HookKind};
use crate::{HookWorker, WorkerStore};
use std::sync::Arc;

/// The `accept` kind: no parameters, no rules.
pub struct AcceptKind;

struct Accept;

impl Hook for Accept {
    fn worker(&self, _worker: usize, _store: &mut WorkerStore) -> Box<dyn HookWorker> {
        Box::new(Accept)
    }

    fn writes_frames(&self) -> bool {
        false
    }
}

impl HookWorker for Accept {
    #[inline]
    fn process(&mut self, _: &HookContext, _: &mut WorkerStore, _: &mut HookBurst<'_, '_>) {}
}

impl HookKind for AcceptKind {
    fn name(&self) -> &str {
        "accept"
    }

    fn build(&self, args: &HookArgs, _cx: &BuildContext) -> Result<Arc<dyn Hook>, HookBuildError> {
        if let Some(k) = args.params.keys().next() {
            return Err(HookBuildError::param(
                k,
                "unknown field; `accept` takes no parameters",
            ));
        }
        if !args.rules.is_empty() {
            return Err(HookBuildError {
                rule: Some(0),
                field: None,
                message: "`accept` takes no rules".into(),
            });
        }
        Ok(Arc::new(Accept))
    }
}
