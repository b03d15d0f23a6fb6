//! l2_input: the kernel's `eth_type_trans` for every received frame, after
//! padding short frames from devices without a wire. Sets each packet's
//! metadata and its next step: `Ipv4` for ip_input, `Punt(Arp)`, or a drop.

use super::punt::Punt;
use super::{Next, Pipeline, Scratch};
use crate::dpdk::{Mbuf, MbufBurst, BURST_SIZE};
use crate::stage::l2::eth_type_trans;
use crate::stage::plain::{mac_word, plain_l2, plain_meta};
use hooks::wire::ethernet::{ethertype, MIN_FRAME_LEN};
use hooks::{DropReason, PacketMeta, PacketType};

/// How many packets ahead the stage asks for a frame's first cache line.
pub const PREFETCH_AHEAD: usize = 4;

/// Translate every frame of the burst received on `port`.
#[inline(always)]
pub fn run(p: &Pipeline, port: u16, burst: &mut MbufBurst, s: &mut Scratch) {
    if p.pad_short[usize::from(port)] {
        pad_short_frames(burst);
    }
    let port_mac = &p.macs[usize::from(port)];
    let l2 = Port {
        port,
        port_mac,
        word: mac_word(port_mac),
        // Opaque to the compiler, so that it is copied per packet as its
        // 32 bytes (two 16-byte stores), not rebuilt field by field.
        plain: std::hint::black_box(plain_meta(port)),
    };
    let mbufs = burst.as_slice();
    let mbufs = &mbufs[..mbufs.len().min(BURST_SIZE)];
    for m in mbufs.iter().take(PREFETCH_AHEAD) {
        m.prefetch_data();
    }
    let mut state = mbufs.iter().zip(s.metas.iter_mut().zip(s.next.iter_mut()));
    // Each packet with the one PREFETCH_AHEAD places on (`ahead` first: it
    // ends first, and then takes no packet from `state`), then the last few.
    let ahead = mbufs.get(PREFETCH_AHEAD..).unwrap_or_default();
    for (ahead, (m, (meta, next))) in ahead.iter().zip(state.by_ref()) {
        ahead.prefetch_data();
        l2.frame(m, meta, next);
    }
    for (m, (meta, next)) in state {
        l2.frame(m, meta, next);
    }
}

/// What l2_input knows of the input port.
struct Port<'a> {
    port: u16,
    port_mac: &'a [u8; 6],
    /// `mac_word(port_mac)`.
    word: u64,
    /// `plain_meta(port)`.
    plain: PacketMeta,
}

impl Port<'_> {
    /// One frame's metadata and next step.
    #[inline(always)]
    fn frame(&self, m: &Mbuf, meta: &mut PacketMeta, next: &mut Next) {
        // A store per arm (see neigh_output).
        if plain_l2(m.data(), self.word) {
            *meta = self.plain;
            *next = Next::Ipv4;
        } else {
            *next = translate(self.port, self.port_mac, m, meta);
        }
    }
}

/// A frame that is not plain untagged IPv4 to us: the full translation.
#[inline(never)]
fn translate(port: u16, port_mac: &[u8; 6], m: &Mbuf, meta: &mut PacketMeta) -> Next {
    *meta = PacketMeta::received_on(port);
    match eth_type_trans(m.data(), port_mac, meta) {
        Err(r) => Next::Drop(r),
        Ok(()) => next_of(meta),
    }
}

/// The next step of a translated frame.
#[inline(always)]
fn next_of(meta: &PacketMeta) -> Next {
    // A priority tag (VLAN id 0) is as good as untagged; other tags are for
    // VLANs this router does not have.
    if meta.vlan != 0 {
        return Next::Drop(DropReason::VlanNotConfigured);
    }
    match meta.protocol {
        ethertype::IPV4 if meta.packet_type == PacketType::Host => Next::Ipv4,
        ethertype::IPV4 => Next::Drop(DropReason::NotUnicast),
        ethertype::ARP => Next::Punt(Punt::Arp),
        _ => Next::Drop(DropReason::UnsupportedProtocol),
    }
}

/// Pad frames under `MIN_FRAME_LEN` from devices without a wire.
#[cold]
fn pad_short_frames(burst: &mut MbufBurst) {
    for m in burst.as_mut_slice() {
        if m.data().len() < MIN_FRAME_LEN {
            m.pad_to(MIN_FRAME_LEN);
        }
    }
}
