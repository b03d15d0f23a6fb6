//! A packet's next step: what the stage that looked at it last decided.
//! Each stage reads the packets whose next step is its own and sets the
//! next one; the tx stage ends every packet in exactly one place.

use super::punt::Punt;
use hooks::{DropReason, HookPoint};

/// The next step of one packet of the burst. A tag byte first, then the
/// variant's fields (no niche in them): a step without fields is one byte
/// to store. Four bytes, aligned as four: the burst's array of these is
/// indexed with a shift.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8, align(4))]
pub enum Next {
    /// IPv4 to us at l2: for `ip_input` (and the ingress hooks).
    Ipv4,
    /// Routed, for `neigh_output` (the neighbour is in `Scratch::neigh`).
    Neigh,
    /// Out of `meta.out_port`, its Ethernet header written. The port is
    /// not repeated here: a next step without payload is one byte to store.
    Forward,
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
