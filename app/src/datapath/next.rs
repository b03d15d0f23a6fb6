//! A packet's next step: what the stage that looked at it last decided.
//! Each stage reads the packets whose next step is its own and sets the
//! next one; the tx stage ends every packet in exactly one place.

use super::punt::Punt;
use hooks::{DropReason, HookPoint};

/// The next step of one packet of the burst.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// IPv4 to us at l2: for `ip_input` (and the ingress hooks).
    Ipv4,
    /// Routed, for `neigh_output` (the neighbour is in `Scratch::neigh`).
    Neigh,
    /// Out of this port, its Ethernet header written.
    Forward(u16),
    /// To the control plane, if `local` finds it within the budget.
    Punt(Punt),
    /// Dropped by a stage.
    Drop(DropReason),
    /// Meant for the control plane but over the worker's punt budget.
    OverBudget(Punt, DropReason),
    /// Dropped by entry `.1` of the chain at this point (of the input port
    /// at ingress, of `meta.out_port` at egress).
    HookDrop(HookPoint, u8, DropReason),
    /// Taken by entry `.1` of the chain at this point (as for `HookDrop`).
    Stolen(HookPoint, u8),
}
