//! l2_input's common case as one compare or two: a plain frame, at least 60
//! bytes, to our MAC, from a source MAC a station can have, untagged IPv4:
//! what [`eth_type_trans`](super::eth_type_trans::eth_type_trans) gives packet
//! type host, ethertype IPv4, VLAN 0 and L3 offset 14 ([`plain_meta`]).
//! The property test in `datapath/fast_checks.rs` holds it against the full
//! translation.

use hooks::wire::ethernet::{ethertype, HEADER_LEN, MIN_FRAME_LEN};
use hooks::{PacketMeta, PacketType};

/// A port's MAC as the low 48 bits of a little-endian word, to compare with
/// a frame's first 8 bytes masked with `DST_AND_SOURCE_GROUP`; a
/// multicast MAC (never a port's) maps to a value no frame matches.
pub fn mac_word(mac: &[u8; 6]) -> u64 {
    if mac[0] & 1 != 0 {
        return u64::MAX;
    }
    let [a, b, c, d, e, f] = *mac;
    u64::from_le_bytes([a, b, c, d, e, f, 0, 0])
}

/// The bits of a frame's first 8 bytes (little-endian) that its first
/// compare reads: the destination MAC (bytes 0..6) and the group bit of the
/// source MAC (bit 0 of byte 6), which a [`mac_word`] has clear. One
/// compare says "to us, and not from a multicast or broadcast source".
const DST_AND_SOURCE_GROUP: u64 = 0x0001_ffff_ffff_ffff;

/// A frame's bytes 6..14 (little-endian: the source MAC in the low 48 bits,
/// the ethertype's two bytes in the top 16) that are a non-zero source and
/// ethertype `ty` lie in `[source_min(ty), source_min(ty) + SOURCE_SPAN)`:
/// one subtraction and one compare for both.
const fn source_min(ty: u16) -> u64 {
    ((ty.swap_bytes() as u64) << 48) | 1
}
const SOURCE_SPAN: u64 = (1 << 48) - 1;

/// Whether `frame` is plain at l2 on a port whose MAC word is `port_mac`
/// (from [`mac_word`]): see the module's doc. Its metadata is then
/// [`plain_meta`]. Two loads, two compares: the destination with the
/// source's group bit, then the source and the ethertype.
#[inline(always)]
pub fn plain_l2(frame: &[u8], port_mac: u64) -> bool {
    plain_l2_of::<{ ethertype::IPV4 }>(frame, port_mac)
}

/// [`plain_l2`] for ethertype `TY`: untagged `TY` to us, at least 60 bytes,
/// from a station's source MAC.
#[inline(always)]
pub fn plain_l2_of<const TY: u16>(frame: &[u8], port_mac: u64) -> bool {
    let Some(head) = frame.first_chunk::<MIN_FRAME_LEN>() else {
        return false;
    };
    let word = |at: usize| {
        let bytes = head.get(at..at + 8).and_then(|b| b.first_chunk::<8>());
        u64::from_le_bytes(bytes.copied().unwrap_or_default())
    };
    let (dst, source_type) = (word(0), word(6));
    // `&`, not `&&`: one branch, not two.
    (dst & DST_AND_SOURCE_GROUP == port_mac)
        & (source_type.wrapping_sub(source_min(TY)) < SOURCE_SPAN)
}

/// The metadata `eth_type_trans` gives a frame `plain_l2_of::<IPV6>`
/// accepted on `port`: to us, untagged IPv6 at byte 14.
#[inline(always)]
pub fn plain_meta6(port: u16) -> PacketMeta {
    let mut meta = plain_meta(port);
    meta.protocol = ethertype::IPV6;
    meta
}

/// The metadata `eth_type_trans` gives a frame [`plain_l2`] accepted on
/// `port`: to us, untagged IPv4 at byte 14.
#[inline(always)]
pub fn plain_meta(port: u16) -> PacketMeta {
    let mut meta = PacketMeta::received_on(port);
    meta.packet_type = PacketType::Host;
    meta.protocol = ethertype::IPV4;
    meta.vlan = 0;
    meta.l3_offset = HEADER_LEN as u16;
    meta
}
