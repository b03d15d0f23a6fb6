//! Where and why the pipeline dropped a packet, as drop capture records it:
//! the stage, the ports and, for a hook's drop, the hook's name. Called on
//! the drop path only (the dispose step of a burst).

use super::punt::Punt;
use super::Next;
use crate::capture::{DropSite, Stage};
use hooks::{DropReason, HookPoint, HookSet, PacketMeta, PacketType};

/// The drop of a packet received on `port` whose next step is a drop (by a
/// stage or by a hook).
#[inline]
pub fn of_next<'h>(next: Next, port: u16, meta: &PacketMeta, hooks: &'h HookSet) -> DropSite<'h> {
    match next {
        Next::HookDrop(point, entry, reason) => {
            let chain_port = match point {
                HookPoint::Ingress => port,
                HookPoint::Egress => meta.out_port,
            };
            let name = hooks
                .chain(point, chain_port)
                .and_then(|c| c.entries().get(usize::from(entry)))
                .map_or("?", |e| e.name.as_str());
            let at = match point {
                HookPoint::Ingress => DropSite::new(reason, Stage::Ingress, port),
                HookPoint::Egress => DropSite::new(reason, Stage::Egress, port).to_port(chain_port),
            };
            at.by_hook(name)
        }
        Next::Drop(reason) => {
            let to_us = meta.packet_type == PacketType::Host;
            DropSite::new(reason, Stage::of_pipeline_drop(reason, to_us), port)
        }
        _ => DropSite::new(DropReason::NoRoute, Stage::Ip, port),
    }
}

/// A packet for the control plane over its worker's budget (`reason`: why
/// it was punted).
#[inline]
pub fn over_budget(
    drop: DropReason,
    reason: Punt,
    port: u16,
    meta: &PacketMeta,
) -> DropSite<'static> {
    let at = DropSite::new(drop, Stage::Punt, port);
    match reason {
        // Routed already: its output port is known.
        Punt::Resolve | Punt::FragNeeded => at.to_port(meta.out_port),
        _ => at,
    }
}

/// A packet routed to `out_port`, which this worker has no TX queue on.
#[inline]
pub fn no_tx_queue(port: u16, out_port: u16) -> DropSite<'static> {
    DropSite::new(DropReason::NoRoute, Stage::Tx, port).to_port(out_port)
}
