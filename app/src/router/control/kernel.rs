//! The ports' kernel interfaces, on the control lcore: what the workers
//! punted for the kernel is written to the input port's interface; what the
//! kernel sends on an interface leaves by its port (through a worker's TX,
//! as the control plane's own frames do).
//!
//! # Neighbours
//!
//! fastpath answers ARP and neighbour solicitations for the ports'
//! addresses itself; the kernel never sees them, so it never answers too.
//! The kernel resolves its own next hops: its requests and solicitations
//! leave by the port, and the ARP replies and neighbour advertisements to
//! our addresses are copied to it ([`ControlPlane::mirror_to_kernel`]). The
//! two tables agree because both learn from the same answers.

use super::ControlPlane;
use crate::capture::NO_PORT;
use crate::dpdk::Mbuf;
use crate::kernel::Representor;
use hooks::DropReason;

/// Frames taken from each kernel interface per round of the control loop.
const KERNEL_BURST: usize = 32;

/// Room for a frame from the kernel: the largest MTU and an Ethernet
/// header with a VLAN tag, with slack to see what is too large.
const FRAME_ROOM: usize = 4096;

impl ControlPlane<'_> {
    /// Port `id`'s kernel interface.
    fn representor(&self, id: u16) -> Option<&Representor> {
        self.kernel.get(usize::from(id)).and_then(Option::as_ref)
    }

    /// The id of the port whose kernel interface has index `index`.
    pub fn port_of_kernel_interface(&self, index: u32) -> Option<u16> {
        let at = self
            .kernel
            .iter()
            .position(|k| k.as_ref().is_some_and(|r| r.index() == index))?;
        u16::try_from(at).ok()
    }

    /// Each interface's carrier follows its port's link (called once a
    /// second): the kernel and zebra see a port go down as its interface
    /// losing carrier, and its connected routes go with it.
    pub(super) fn follow_links(&mut self) {
        for id in 0..self.kernel.len() {
            let Some(rep) = self.kernel[id].as_ref() else {
                continue;
            };
            let up = crate::dpdk::link_up(id as u16);
            if self.carrier.get(id).copied() == Some(up) {
                continue;
            }
            match rep.set_carrier(up) {
                Ok(()) => eprintln!(
                    "fastpath: port {id}: link {}; kernel interface {} carrier {}",
                    if up { "up" } else { "down" },
                    rep.name(),
                    if up { "on" } else { "off" }
                ),
                Err(e) => eprintln!(
                    "fastpath: port {id}: kernel interface {}: carrier: {e}",
                    rep.name()
                ),
            }
            if let Some(c) = self.carrier.get_mut(id) {
                *c = up;
            }
        }
    }

    /// A frame punted for the kernel, to its input port's interface.
    pub(super) fn punt_to_kernel(&mut self, m: Mbuf) {
        let port = m.meta().in_port;
        let Some(rep) = self.representor(port) else {
            return self.drop(m, port, DropReason::LocalUnsupported);
        };
        match rep.send(m.data()) {
            Ok(()) => {
                self.stats.to_kernel += 1;
                self.counters.consumed(port, 1);
            }
            Err(_) => self.drop(m, port, DropReason::KernelQueueFull),
        }
    }

    /// A copy of `m` (an ARP reply or a neighbour advertisement to us) for
    /// its input port's interface, so that the kernel's own resolution of
    /// the sender completes.
    pub(super) fn mirror_to_kernel(&mut self, m: &Mbuf) {
        let port = m.meta().in_port;
        if let Some(rep) = self.representor(port) {
            if rep.send(m.data()).is_ok() {
                self.stats.kernel_mirrored += 1;
            }
        }
    }

    /// What the kernel sent on the ports' interfaces, out of the ports: at
    /// most `KERNEL_BURST` frames per interface. How many it took.
    pub fn poll_kernel(&mut self) -> usize {
        let mut taken = 0;
        let mut buf = [0u8; FRAME_ROOM];
        for id in 0..self.kernel.len() as u16 {
            for _ in 0..KERNEL_BURST {
                let Some(rep) = self.representor(id) else {
                    break;
                };
                let len = match rep.recv(&mut buf) {
                    Ok(Some(n)) => n,
                    Ok(None) => break,
                    Err(e) => {
                        self.kernel_read_failed(id, e);
                        break;
                    }
                };
                taken += 1;
                self.send_from_kernel(&buf[..len], id);
            }
        }
        taken
    }

    /// One frame from port `id`'s interface, out of the port.
    fn send_from_kernel(&mut self, frame: &[u8], id: u16) {
        let Some(mut m) = Mbuf::alloc(self.pool) else {
            self.stats.from_kernel_dropped += 1;
            return;
        };
        m.meta_mut().in_port = NO_PORT;
        if !m.append(frame) {
            self.stats.from_kernel_dropped += 1;
            return;
        }
        self.stats.from_kernel += 1;
        self.counters.originated(id, 1);
        self.send(m, id);
    }

    /// A read from an interface failed (not "nothing to read"): said once
    /// per interface, the interface then left alone.
    #[cold]
    fn kernel_read_failed(&mut self, id: u16, e: std::io::Error) {
        if let Some(rep) = self.kernel.get_mut(usize::from(id)).and_then(Option::take) {
            eprintln!(
                "fastpath: kernel interface {} of port {id}: read failed: {e}; \
                 it no longer sends or receives",
                rep.name()
            );
        }
    }
}
