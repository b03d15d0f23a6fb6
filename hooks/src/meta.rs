//! Per-packet metadata: filled by the pipeline stages, read by hooks (which
//! write only the mark and the class, through `HookPacket`). It lives in
//! the mbuf's private area (`rte_pktmbuf_priv_size`), so its size is fixed and
//! small: one 32-byte block, half a cache line.

/// Where a frame was addressed, by destination MAC (the kernel's `pkt_type`).
#[repr(u8)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PacketType {
    /// To our own MAC address.
    #[default]
    Host = 0,
    /// To ff:ff:ff:ff:ff:ff.
    Broadcast = 1,
    /// To a group address (I/G bit set), other than broadcast.
    Multicast = 2,
    /// To another station's unicast address.
    OtherHost = 3,
}

/// Metadata of one packet. `repr(C)` so that its layout in the mbuf private area
/// is stable and known to the DPDK layer, which sizes the area from it.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PacketMeta {
    /// Input port id.
    pub in_port: u16,
    /// Output port id, once routed (or the forwarding peer).
    pub out_port: u16,
    /// Ethertype after any VLAN tags, host byte order.
    pub protocol: u16,
    /// Offset of the L3 header from the start of the frame, in bytes.
    pub l3_offset: u16,
    /// VLAN id of the (inner) 802.1Q tag, or of the outer one when the
    /// inner is a priority tag (id 0); 0 when untagged or priority-tagged.
    pub vlan: u16,
    /// Traffic class set by classification.
    pub class: u16,
    /// Packet type by destination MAC.
    pub packet_type: PacketType,
    /// Why the pipeline handed the packet to the control plane (app-defined
    /// code; 0 = not punted).
    pub punt: u8,
    _pad: [u8; 2],
    /// Mark set by classification (like the kernel's `skb->mark`).
    pub mark: u32,
    /// IPv4 next hop (host byte order), once routed; 0 = none.
    pub next_hop: u32,
    /// Answers of egress rules looked up at ingress, one per lookahead slot
    /// (`hooks::lookahead`): 0 = none carried, else 1 + the classifier's
    /// result (1 = no rule matched). Written by an ingress hook through
    /// [`HookPacket::carry_answer`](crate::HookPacket::carry_answer).
    pub lookahead: [u32; LOOKAHEAD_SLOTS],
}

/// Egress rule sets one ingress lookup may answer for ahead
/// (`PacketMeta::lookahead`).
pub const LOOKAHEAD_SLOTS: usize = 2;

impl PacketMeta {
    /// Size the mbuf private area must have to hold this metadata.
    pub const SIZE: usize = core::mem::size_of::<PacketMeta>();

    /// Fresh metadata for a packet received on `in_port`.
    #[inline(always)]
    pub fn received_on(in_port: u16) -> Self {
        PacketMeta {
            in_port,
            ..Default::default()
        }
    }
}

const _: () = assert!(PacketMeta::SIZE == 32);
const _: () = assert!(core::mem::align_of::<PacketMeta>() <= 8);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn received_on_sets_only_the_input_port() {
        let m = PacketMeta::received_on(3);
        assert_eq!(m.in_port, 3);
        assert_eq!(m.out_port, 0);
        assert_eq!(m.mark, 0);
        assert_eq!(m.packet_type, PacketType::Host);
    }
}
