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
    let word = mac_word(port_mac);
    let plain = plain_meta(port);
    let mbufs = burst.as_slice();
    let n = mbufs.len().min(BURST_SIZE);
    for m in mbufs.iter().take(PREFETCH_AHEAD) {
        m.prefetch_data();
    }
    for (i, m) in mbufs[..n].iter().enumerate() {
        if let Some(ahead) = mbufs.get(i + PREFETCH_AHEAD) {
            ahead.prefetch_data();
        }
        if plain_l2(m.data(), word) {
            s.metas[i] = plain;
            s.next[i] = Next::Ipv4;
        } else {
            s.next[i] = translate(port, port_mac, m, &mut s.metas[i]);
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
