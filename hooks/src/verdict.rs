//! What a hook decides for one packet.

use crate::DropReason;

/// A hook's decision for one packet. Packets start as `Accept`; a hook may
/// change an accepted packet's verdict once, never a dropped or stolen one.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Verdict {
    /// Let the packet go on to the next hook and the next stage.
    #[default]
    Accept,
    /// Drop the packet, counted under this reason.
    Drop(DropReason),
    /// The hook took the packet: the pipeline hands it to the hook's
    /// [`HookWorker::take`](crate::HookWorker::take) (the `HookWorker` of the hook
    /// on the worker that ran it) and forgets it.
    Stolen,
}
