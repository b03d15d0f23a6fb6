//! IPv6 header (RFC 8200): 40 fixed bytes, then a chain of extension
//! headers before the upper-layer header; the address classes a router
//! checks (RFC 4291), the multicast groups and MACs of neighbour discovery,
//! the link-local address derived from a MAC (modified EUI-64), the
//! pseudo-header of upper-layer checksums, and the extension-header walker.

use super::{be16, checksum, set_be16, Error};
use core::fmt;
use std::net::Ipv6Addr;

/// Length of the fixed header.
pub const HEADER_LEN: usize = 40;
/// The link MTU every IPv6 link has at least (RFC 8200 section 5): an
/// ICMPv6 error is never longer (RFC 4443 section 2.4 (c)).
pub const MIN_MTU: usize = 1280;

/// Byte offsets of the header's fields (smoltcp's `mod field`).
pub mod field {
    /// Version (4 bits), traffic class (8), flow label (20).
    pub const VER_TC_FLOW: usize = 0;
    pub const PAYLOAD_LEN: usize = 4;
    pub const NEXT_HEADER: usize = 6;
    pub const HOP_LIMIT: usize = 7;
    pub const SRC: usize = 8;
    pub const DST: usize = 24;
}
use field::*;

/// Next Header values (IANA "Assigned Internet Protocol Numbers"): the
/// extension headers of RFC 8200 and the upper layers fastpath knows.
pub mod next_header {
    pub const HOP_BY_HOP: u8 = 0;
    pub const TCP: u8 = 6;
    pub const UDP: u8 = 17;
    pub const ROUTING: u8 = 43;
    pub const FRAGMENT: u8 = 44;
    /// Encapsulating Security Payload (RFC 4303): what follows is encrypted.
    pub const ESP: u8 = 50;
    /// Authentication Header (RFC 4302): its length is in 4-byte units.
    pub const AH: u8 = 51;
    pub const ICMPV6: u8 = 58;
    pub const NO_NEXT_HEADER: u8 = 59;
    pub const DESTINATION_OPTIONS: u8 = 60;
    /// Mobility (RFC 6275), HIP (RFC 7401), Shim6 (RFC 5533) and the two
    /// experimental values (RFC 3692): extension headers in the uniform
    /// format of RFC 6564.
    pub const MOBILITY: u8 = 135;
    pub const HIP: u8 = 139;
    pub const SHIM6: u8 = 140;
    pub const EXPERIMENTAL_1: u8 = 253;
    pub const EXPERIMENTAL_2: u8 = 254;
}

const ZERO: [u8; HEADER_LEN] = [0; HEADER_LEN];

// ---------------------------------------------------------------------------
// Addresses

/// ff02::1, every node on the link.
pub const ALL_NODES: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 1);
/// ff02::2, every router on the link.
pub const ALL_ROUTERS: Ipv6Addr = Ipv6Addr::new(0xff02, 0, 0, 0, 0, 0, 0, 2);

/// ff00::/8 (RFC 4291 section 2.7).
#[inline(always)]
pub const fn is_multicast(a: &[u8; 16]) -> bool {
    a[0] == 0xff
}

/// The scope of a multicast address (RFC 4291 section 2.7): 1 interface-local,
/// 2 link-local, 5 site-local, 8 organization-local, 14 global. A router
/// never forwards scope 0, 1 or 2.
#[inline(always)]
pub const fn multicast_scope(a: &[u8; 16]) -> u8 {
    a[1] & 0x0f
}

/// :: (RFC 4291 section 2.5.2): a source only before a node has an address.
#[inline(always)]
pub const fn is_unspecified(a: &[u8; 16]) -> bool {
    u128::from_be_bytes(*a) == 0
}

/// ::1 (RFC 4291 section 2.5.3): never on a wire.
#[inline(always)]
pub const fn is_loopback(a: &[u8; 16]) -> bool {
    u128::from_be_bytes(*a) == 1
}

/// fe80::/10 (RFC 4291 section 2.5.6): never forwarded off its link.
#[inline(always)]
pub const fn is_link_local_unicast(a: &[u8; 16]) -> bool {
    a[0] == 0xfe && a[1] & 0xc0 == 0x80
}

/// ::ffff:0:0/96 (RFC 4291 section 2.5.5.2): an IPv4 address in an API,
/// never a source or destination on a wire (RFC 6890, RFC 5156 section 2.2).
#[inline(always)]
pub const fn is_ipv4_mapped(a: &[u8; 16]) -> bool {
    u128::from_be_bytes(*a) >> 32 == 0xffff
}

/// ff02::1:ff00:0/104 (RFC 4291 section 2.7.1), a solicited-node group.
#[inline(always)]
pub const fn is_solicited_node(a: &[u8; 16]) -> bool {
    u128::from_be_bytes(*a) & !0xff_ffff == 0xff02_0000_0000_0000_0000_0001_ff00_0000
}

/// The solicited-node multicast group of `addr` (RFC 4291 section 2.7.1):
/// ff02::1:ff00:0 with the low 24 bits of `addr`. Where neighbour
/// solicitations for `addr` go.
#[inline]
pub const fn solicited_node(addr: Ipv6Addr) -> Ipv6Addr {
    let low = u128::from_be_bytes(addr.octets()) & 0xff_ffff;
    Ipv6Addr::from_bits(0xff02_0000_0000_0000_0000_0001_ff00_0000 | low)
}

/// The Ethernet multicast MAC of an IPv6 multicast `group` (RFC 2464
/// section 7): 33:33 and the group's low 32 bits.
#[inline]
pub const fn multicast_mac(group: Ipv6Addr) -> [u8; 6] {
    let o = group.octets();
    [0x33, 0x33, o[12], o[13], o[14], o[15]]
}

/// The modified EUI-64 interface identifier of a 48-bit MAC (RFC 4291
/// appendix A): ff:fe inserted in the middle, the universal/local bit
/// (0x02 of the first byte) inverted.
#[inline]
pub const fn eui64_interface_id(mac: [u8; 6]) -> [u8; 8] {
    [
        mac[0] ^ 0x02,
        mac[1],
        mac[2],
        0xff,
        0xfe,
        mac[3],
        mac[4],
        mac[5],
    ]
}

/// The link-local address of an interface with `mac`: fe80::/64 and the
/// modified EUI-64 identifier (RFC 4862 section 5.3, RFC 4291 appendix A).
#[inline]
pub const fn link_local_from_mac(mac: [u8; 6]) -> Ipv6Addr {
    let id = eui64_interface_id(mac);
    let mut o = [0u8; 16];
    o[0] = 0xfe;
    o[1] = 0x80;
    let mut i = 0;
    while i < 8 {
        o[8 + i] = id[i];
        i += 1;
    }
    Ipv6Addr::from_bits(u128::from_be_bytes(o))
}

/// [`checksum::sum`] of the IPv6 pseudo-header (RFC 8200 section 8.1):
/// source, destination, upper-layer packet length (32 bits), three zero
/// bytes and the upper-layer protocol. `dst` is the final destination (the
/// last address of a routing header).
#[inline]
pub fn pseudo_header(src: &Ipv6Addr, dst: &Ipv6Addr, next_header: u8, length: u32) -> u16 {
    let mut tail = [0u8; 8];
    tail[..4].copy_from_slice(&length.to_be_bytes());
    tail[7] = next_header;
    checksum::combine(
        checksum::combine(checksum::sum(&src.octets()), checksum::sum(&dst.octets())),
        checksum::sum(&tail),
    )
}

/// The checksum field value of an upper-layer `segment` (its checksum field
/// reading zero) sent from `src` to `dst`: ICMPv6, and UDP/TCP over IPv6.
/// UDP sends 0xffff where this gives 0 (RFC 8200 section 8.1).
#[inline]
pub fn upper_layer_checksum(
    src: &Ipv6Addr,
    dst: &Ipv6Addr,
    next_header: u8,
    segment: &[u8],
) -> u16 {
    let length = u32::try_from(segment.len()).unwrap_or(u32::MAX);
    !checksum::combine(
        pseudo_header(src, dst, next_header, length),
        checksum::sum(segment),
    )
}

/// Whether `segment` (its checksum field included) sums to 0xffff with its
/// pseudo-header: its checksum is right.
#[inline]
pub fn verify_upper_layer(src: &Ipv6Addr, dst: &Ipv6Addr, next_header: u8, segment: &[u8]) -> bool {
    let length = u32::try_from(segment.len()).unwrap_or(u32::MAX);
    checksum::combine(
        pseudo_header(src, dst, next_header, length),
        checksum::sum(segment),
    ) == 0xffff
}

// ---------------------------------------------------------------------------
// The header

/// Decrement the hop limit of a header whose hop limit is `hop_limit` (read
/// already, at least one). IPv6 has no header checksum: one store. Returns
/// the new hop limit.
#[inline(always)]
pub fn decrement_hop_limit(h: &mut [u8; HEADER_LEN], hop_limit: u8) -> u8 {
    let hop_limit = hop_limit.wrapping_sub(1);
    h[HOP_LIMIT] = hop_limit;
    hop_limit
}

/// A view of an IPv6 header at the start of `buffer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv6Packet<T> {
    /// View `buffer`: it must hold the 40-byte fixed header. The version and
    /// the payload length are not checked here (see [`Ipv6Repr::parse`]).
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(Ipv6Packet { buffer })
    }

    /// View `buffer` without any check, to write a header into it.
    /// Accessors still never panic: past the end of a short buffer they
    /// read zero and setters write nothing.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv6Packet { buffer }
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    /// The fixed header's bytes.
    #[inline(always)]
    pub fn header(&self) -> &[u8; HEADER_LEN] {
        // Always `Some` after `new_checked`; the fallback keeps this panic-free.
        self.buffer.as_ref().first_chunk().unwrap_or(&ZERO)
    }

    /// IP version (6).
    #[inline]
    pub fn version(&self) -> u8 {
        self.header()[VER_TC_FLOW] >> 4
    }

    /// Traffic class: DSCP (6 bits) and ECN (2 bits).
    #[inline]
    pub fn traffic_class(&self) -> u8 {
        let h = self.header();
        (h[0] << 4) | (h[1] >> 4)
    }

    /// Differentiated services code point.
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.traffic_class() >> 2
    }

    /// Explicit congestion notification.
    #[inline]
    pub fn ecn(&self) -> u8 {
        self.traffic_class() & 0x03
    }

    /// Flow label (20 bits).
    #[inline]
    pub fn flow_label(&self) -> u32 {
        let h = self.header();
        u32::from_be_bytes([0, h[1] & 0x0f, h[2], h[3]])
    }

    /// Payload length: extension headers and upper layer, in bytes.
    #[inline]
    pub fn payload_len(&self) -> u16 {
        be16(self.header(), PAYLOAD_LEN)
    }

    /// The first extension header's or the upper layer's protocol.
    #[inline]
    pub fn next_header(&self) -> u8 {
        self.header()[NEXT_HEADER]
    }

    /// Hop limit.
    #[inline]
    pub fn hop_limit(&self) -> u8 {
        self.header()[HOP_LIMIT]
    }

    /// The source address's bytes (what an LPM6 lookup takes).
    #[inline]
    pub fn src_bytes(&self) -> &[u8; 16] {
        self.header()[SRC..SRC + 16]
            .first_chunk()
            .unwrap_or(&[0; 16])
    }

    /// The destination address's bytes.
    #[inline]
    pub fn dst_bytes(&self) -> &[u8; 16] {
        self.header()[DST..DST + 16]
            .first_chunk()
            .unwrap_or(&[0; 16])
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(*self.src_bytes())
    }

    /// Destination address.
    #[inline]
    pub fn dst_addr(&self) -> Ipv6Addr {
        Ipv6Addr::from(*self.dst_bytes())
    }

    /// Payload: from the end of the fixed header to the payload length,
    /// clamped to the buffer (Ethernet padding excluded).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let end = (HEADER_LEN + usize::from(self.payload_len())).min(b.len());
        b.get(HEADER_LEN..end).unwrap_or(&[])
    }

    /// Walk the extension headers of the payload (see
    /// [`walk_extension_headers`]); the offset returned counts from the
    /// start of this header, fixed part included.
    #[inline]
    pub fn upper_layer(&self) -> Result<UpperLayer, ExtHeaderError> {
        let mut u = walk_extension_headers(self.next_header(), self.payload())?;
        u.offset += HEADER_LEN;
        if let Some(f) = &mut u.fragment {
            f.at += HEADER_LEN;
        }
        Ok(u)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv6Packet<T> {
    #[inline(always)]
    fn header_mut(&mut self) -> Option<&mut [u8; HEADER_LEN]> {
        self.buffer.as_mut().first_chunk_mut()
    }

    /// Set the version, traffic class and flow label (20 bits kept) together,
    /// as they share the first word.
    #[inline]
    pub fn set_version_tc_flow(&mut self, version: u8, traffic_class: u8, flow_label: u32) {
        let word = (u32::from(version & 0x0f) << 28)
            | (u32::from(traffic_class) << 20)
            | (flow_label & 0x000f_ffff);
        if let Some(h) = self.header_mut() {
            h[..4].copy_from_slice(&word.to_be_bytes());
        }
    }

    /// Set the payload length.
    #[inline]
    pub fn set_payload_len(&mut self, value: u16) {
        if let Some(h) = self.header_mut() {
            set_be16(h, PAYLOAD_LEN, value);
        }
    }

    /// Set the next header.
    #[inline]
    pub fn set_next_header(&mut self, value: u8) {
        if let Some(h) = self.header_mut() {
            h[NEXT_HEADER] = value;
        }
    }

    /// Set the hop limit.
    #[inline]
    pub fn set_hop_limit(&mut self, value: u8) {
        if let Some(h) = self.header_mut() {
            h[HOP_LIMIT] = value;
        }
    }

    /// Set the source address.
    #[inline]
    pub fn set_src_addr(&mut self, addr: Ipv6Addr) {
        if let Some(h) = self.header_mut() {
            h[SRC..SRC + 16].copy_from_slice(&addr.octets());
        }
    }

    /// Set the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, addr: Ipv6Addr) {
        if let Some(h) = self.header_mut() {
            h[DST..DST + 16].copy_from_slice(&addr.octets());
        }
    }

    /// Payload, writable (clamped like [`payload`](Ipv6Packet::payload)).
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = HEADER_LEN + usize::from(self.payload_len());
        let b = self.buffer.as_mut();
        let end = end.min(b.len());
        b.get_mut(HEADER_LEN..end).unwrap_or(&mut [])
    }

    /// Decrement the hop limit (no checksum to update). Returns the new hop
    /// limit, or `None` (header unchanged) when it is already 0.
    #[inline]
    pub fn decrement_hop_limit(&mut self) -> Option<u8> {
        let h = self.header_mut()?;
        let hop_limit = h[HOP_LIMIT];
        (hop_limit != 0).then(|| decrement_hop_limit(h, hop_limit))
    }
}

/// An IPv6 fixed header, decoded. Extension headers, if any, are part of
/// the payload: `next_header` names the first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv6Repr {
    pub src_addr: Ipv6Addr,
    pub dst_addr: Ipv6Addr,
    pub next_header: u8,
    /// Length of the payload in bytes (extension headers included).
    pub payload_len: usize,
    pub hop_limit: u8,
    pub traffic_class: u8,
    /// 20 bits.
    pub flow_label: u32,
}

impl Ipv6Repr {
    /// Decode `packet`. Refuses ([`Error::Malformed`]) a version other than
    /// 6, and ([`Error::Truncated`]) a payload length past the buffer. A
    /// payload length of zero is read as an empty payload (a jumbogram,
    /// RFC 2675, cannot cross an Ethernet link).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Ipv6Packet<&T>) -> Result<Self, Error> {
        let len = packet.buffer.as_ref().len();
        if packet.version() != 6 {
            return Err(Error::Malformed);
        }
        let payload_len = usize::from(packet.payload_len());
        if HEADER_LEN + payload_len > len {
            return Err(Error::Truncated);
        }
        Ok(Ipv6Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            next_header: packet.next_header(),
            payload_len,
            hop_limit: packet.hop_limit(),
            traffic_class: packet.traffic_class(),
            flow_label: packet.flow_label(),
        })
    }

    /// Length of the header [`emit`](Self::emit) writes.
    #[inline]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Length of the whole packet: header and payload.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Write the fixed header; the payload after it is left alone. A payload
    /// length past 65535 is written as 65535.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Ipv6Packet<&mut T>) {
        packet.set_version_tc_flow(6, self.traffic_class, self.flow_label);
        packet.set_payload_len(u16::try_from(self.payload_len).unwrap_or(u16::MAX));
        packet.set_next_header(self.next_header);
        packet.set_hop_limit(self.hop_limit);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
    }
}

// ---------------------------------------------------------------------------
// Extension headers

/// Most extension headers the walker follows before it gives up
/// ([`ExtHeaderError::TooMany`]). RFC 8200 section 4.1 has each header at
/// most once (Destination Options twice): a chain longer than this is an
/// attack on whoever walks it, not traffic.
pub const MAX_EXTENSION_HEADERS: usize = 8;

/// Length of the Fragment header (RFC 8200 section 4.5).
pub const FRAGMENT_HEADER_LEN: usize = 8;

/// What a Fragment header says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FragmentInfo {
    /// Offset of the fragment's data in the original packet, in bytes.
    pub offset: u16,
    /// More fragments follow.
    pub more: bool,
    pub ident: u32,
    /// Where the Fragment header starts (same origin as
    /// [`UpperLayer::offset`]).
    pub at: usize,
}

impl FragmentInfo {
    /// Offset 0 and no more fragments: an atomic fragment (RFC 6946), a
    /// whole packet.
    #[inline]
    pub const fn is_atomic(&self) -> bool {
        self.offset == 0 && !self.more
    }
}

/// Where the extension headers end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UpperLayer {
    /// The protocol after the last extension header: TCP, UDP, ICMPv6...,
    /// or ESP or No Next Header, where a walk ends too. In a non-first
    /// fragment, the next header of its Fragment header.
    pub protocol: u8,
    /// Where its header starts. In a non-first fragment, where the
    /// fragment's data starts: the upper-layer header is not there.
    pub offset: usize,
    /// Extension headers walked over.
    pub headers: u8,
    /// The Fragment header, if there is one.
    pub fragment: Option<FragmentInfo>,
}

impl UpperLayer {
    /// A fragment whose offset is not 0: the upper-layer header is in
    /// another fragment.
    #[inline]
    pub fn is_non_first_fragment(&self) -> bool {
        self.fragment.is_some_and(|f| f.offset != 0)
    }
}

/// Why the extension headers cannot be walked: each a drop reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExtHeaderError {
    /// The header of `next_header` at `at` runs past the packet.
    Truncated { next_header: u8, at: usize },
    /// A Hop-by-Hop Options header not right after the IPv6 header (RFC 8200
    /// section 4.3: ICMPv6 parameter problem, code 1, pointing at `at`).
    HopByHopNotFirst { at: usize },
    /// More than [`MAX_EXTENSION_HEADERS`] extension headers.
    TooMany,
    /// A first fragment (offset 0, more follow) that does not hold every
    /// header through the upper-layer header (RFC 7112, RFC 8200 section
    /// 4.5: ICMPv6 parameter problem, code 3).
    ChainNotInFirstFragment,
}

impl ExtHeaderError {
    /// The name of the drop reason.
    pub const fn reason(&self) -> &'static str {
        match self {
            ExtHeaderError::Truncated { .. } => "ipv6_ext_header_truncated",
            ExtHeaderError::HopByHopNotFirst { .. } => "ipv6_hop_by_hop_not_first",
            ExtHeaderError::TooMany => "ipv6_too_many_ext_headers",
            ExtHeaderError::ChainNotInFirstFragment => "ipv6_chain_not_in_first_fragment",
        }
    }
}

impl fmt::Display for ExtHeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExtHeaderError::Truncated { next_header, at } => write!(
                f,
                "extension header {next_header} at byte {at} runs past the packet"
            ),
            ExtHeaderError::HopByHopNotFirst { at } => write!(
                f,
                "Hop-by-Hop Options header at byte {at} is not the first (RFC 8200 4.1)"
            ),
            ExtHeaderError::TooMany => {
                write!(f, "more than {MAX_EXTENSION_HEADERS} extension headers")
            }
            ExtHeaderError::ChainNotInFirstFragment => {
                f.write_str("first fragment without the whole header chain (RFC 7112)")
            }
        }
    }
}

impl std::error::Error for ExtHeaderError {}

/// Whether `next_header` is an extension header the walker steps over.
#[inline]
pub const fn is_extension_header(next_header: u8) -> bool {
    use next_header::*;
    matches!(
        next_header,
        HOP_BY_HOP
            | ROUTING
            | FRAGMENT
            | AH
            | DESTINATION_OPTIONS
            | MOBILITY
            | HIP
            | SHIM6
            | EXPERIMENTAL_1
            | EXPERIMENTAL_2
    )
}

/// The least an upper-layer header takes in a first fragment (what Linux's
/// `ipv6frag_thdr_truncated` asks): TCP 20, UDP 8, ICMPv6 8, others 1.
const fn upper_layer_min(protocol: u8) -> usize {
    match protocol {
        next_header::TCP => 20,
        next_header::UDP => 8,
        next_header::ICMPV6 => 8,
        _ => 1,
    }
}

/// Walk the extension headers of an IPv6 `payload` (the bytes after the
/// fixed header, up to the payload length) whose first header is `first`
/// (the fixed header's next header). Returns the upper-layer protocol and
/// where its header starts in `payload`.
///
/// Hop-by-Hop, Routing, Destination Options and the other RFC 6564 headers
/// take (length + 1) × 8 bytes, AH (length + 2) × 4, Fragment 8. ESP and No
/// Next Header end the walk like an upper layer. A non-first fragment ends
/// it at its Fragment header. At most [`MAX_EXTENSION_HEADERS`] headers.
/// Reads only `payload`, each byte at most once, and never panics.
pub fn walk_extension_headers(first: u8, payload: &[u8]) -> Result<UpperLayer, ExtHeaderError> {
    use next_header::*;
    let mut next = first;
    let mut at = 0usize;
    let mut fragment: Option<FragmentInfo> = None;
    let mut headers = 0u8;
    // Set by a first fragment with more to come: a cut chain is then the
    // sender's fault (RFC 7112), not a short frame's.
    let cut = |fragment: &Option<FragmentInfo>, next_header: u8, at: usize| match fragment {
        Some(f) if f.offset == 0 && f.more => ExtHeaderError::ChainNotInFirstFragment,
        _ => ExtHeaderError::Truncated { next_header, at },
    };
    while is_extension_header(next) {
        if usize::from(headers) == MAX_EXTENSION_HEADERS {
            return Err(ExtHeaderError::TooMany);
        }
        if next == HOP_BY_HOP && headers != 0 {
            return Err(ExtHeaderError::HopByHopNotFirst { at });
        }
        let Some(&[nh, len]) = payload.get(at..).and_then(|r| r.first_chunk::<2>()) else {
            return Err(cut(&fragment, next, at));
        };
        let len = usize::from(len);
        let size = match next {
            FRAGMENT => FRAGMENT_HEADER_LEN,
            AH => (len + 2) * 4,
            _ => (len + 1) * 8,
        };
        let Some(h) = payload.get(at..at + size) else {
            return Err(cut(&fragment, next, at));
        };
        headers += 1;
        if next == FRAGMENT {
            let word = be16(h.first_chunk::<4>().unwrap_or(&[0; 4]), 2);
            let ident = h
                .get(4..8)
                .and_then(|i| i.first_chunk::<4>())
                .map_or(0, |i| u32::from_be_bytes(*i));
            let f = FragmentInfo {
                offset: word & 0xfff8,
                more: word & 1 != 0,
                ident,
                at,
            };
            // A second Fragment header (RFC 8200 allows one) is read as
            // Linux's ipv6_skip_exthdr reads it: the last one counts.
            fragment = Some(f);
            if f.offset != 0 {
                return Ok(UpperLayer {
                    protocol: nh,
                    offset: at + size,
                    headers,
                    fragment,
                });
            }
        }
        next = nh;
        at += size;
    }
    if let Some(f) = fragment {
        if f.offset == 0 && f.more && at + upper_layer_min(next) > payload.len() {
            return Err(ExtHeaderError::ChainNotInFirstFragment);
        }
    }
    Ok(UpperLayer {
        protocol: next,
        offset: at,
        headers,
        fragment,
    })
}

#[cfg(test)]
mod tests {
    use super::next_header::*;
    use super::*;

    /// An echo request's IPv6 header, laid out by hand after RFC 8200
    /// section 3: traffic class 0, flow label 0x8a3e1, payload 64, ICMPv6,
    /// hop limit 64, 2001:db8::1 > 2001:db8::2.
    const HEADER: [u8; 40] = [
        0x60, 0x08, 0xa3, 0xe1, 0x00, 0x40, 0x3a, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 1, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2,
    ];

    fn addr(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    #[test]
    fn new_checked_needs_40_bytes() {
        assert_eq!(Ipv6Packet::new_checked(&[][..]), Err(Error::Truncated));
        assert_eq!(
            Ipv6Packet::new_checked(&HEADER[..39]),
            Err(Error::Truncated)
        );
        assert!(Ipv6Packet::new_checked(&HEADER[..]).is_ok());
    }

    #[test]
    fn reads_every_field() {
        let p = Ipv6Packet::new_checked(&HEADER[..]).unwrap();
        assert_eq!(p.version(), 6);
        assert_eq!(p.traffic_class(), 0);
        assert_eq!(p.flow_label(), 0x8a3e1);
        assert_eq!(p.payload_len(), 64);
        assert_eq!(p.next_header(), ICMPV6);
        assert_eq!(p.hop_limit(), 64);
        assert_eq!(p.src_addr(), addr("2001:db8::1"));
        assert_eq!(p.dst_addr(), addr("2001:db8::2"));
        // Traffic class across the nibble boundary: DSCP 46 (EF), ECN 1.
        let mut h = HEADER;
        h[0] = 0x6b;
        h[1] = 0x98;
        let p = Ipv6Packet::new_checked(&h[..]).unwrap();
        assert_eq!((p.traffic_class(), p.dscp(), p.ecn()), (0xb9, 46, 1));
        assert_eq!(p.flow_label(), 0x8a3e1);
    }

    #[test]
    fn setters_write_every_field_and_nothing_else() {
        let mut buf = [0u8; 48];
        let mut p = Ipv6Packet::new_unchecked(&mut buf[..]);
        p.set_version_tc_flow(6, 0, 0xfff8a3e1);
        p.set_payload_len(64);
        p.set_next_header(ICMPV6);
        p.set_hop_limit(64);
        p.set_src_addr(addr("2001:db8::1"));
        p.set_dst_addr(addr("2001:db8::2"));
        assert_eq!(buf[..40], HEADER);
        assert_eq!(buf[40..], [0; 8]);
    }

    #[test]
    fn payload_stops_at_the_payload_length() {
        let mut buf = HEADER.to_vec();
        buf.extend((0..80).map(|i| i as u8));
        let p = Ipv6Packet::new_checked(&buf[..]).unwrap();
        assert_eq!(p.payload().len(), 64, "padding after the payload excluded");
        let p = Ipv6Packet::new_checked(&buf[..60]).unwrap();
        assert_eq!(p.payload().len(), 20, "clamped to the buffer");
        let mut p = Ipv6Packet::new_checked(&mut buf[..]).unwrap();
        assert_eq!(p.payload_mut().len(), 64);
    }

    #[test]
    fn decrement_hop_limit_stops_at_zero() {
        let mut buf = HEADER;
        let mut p = Ipv6Packet::new_checked(&mut buf[..]).unwrap();
        assert_eq!(p.decrement_hop_limit(), Some(63));
        p.set_hop_limit(1);
        assert_eq!(p.decrement_hop_limit(), Some(0));
        assert_eq!(p.decrement_hop_limit(), None);
        assert_eq!(p.hop_limit(), 0);
        let mut expect = HEADER;
        expect[HOP_LIMIT] = 0;
        assert_eq!(buf, expect, "only the hop limit changed");
        let mut h = HEADER;
        assert_eq!(decrement_hop_limit(&mut h, 64), 63);
        assert_eq!(h[HOP_LIMIT], 63);
    }

    #[test]
    fn repr_round_trips_and_emits_the_known_header() {
        let mut datagram = HEADER.to_vec();
        datagram.resize(104, 0);
        let repr = Ipv6Repr::parse(&Ipv6Packet::new_checked(&datagram[..]).unwrap()).unwrap();
        assert_eq!(
            repr,
            Ipv6Repr {
                src_addr: addr("2001:db8::1"),
                dst_addr: addr("2001:db8::2"),
                next_header: ICMPV6,
                payload_len: 64,
                hop_limit: 64,
                traffic_class: 0,
                flow_label: 0x8a3e1,
            }
        );
        assert_eq!(repr.buffer_len(), 104);
        let mut buf = [0xa5u8; 44];
        repr.emit(&mut Ipv6Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf[..40], HEADER);
        assert_eq!(buf[40..], [0xa5; 4]);

        let mut rng = fastrand::Rng::with_seed(0x6666_0000_1234_5678);
        for _ in 0..2000 {
            let repr = Ipv6Repr {
                src_addr: Ipv6Addr::from(rng.u128(..)),
                dst_addr: Ipv6Addr::from(rng.u128(..)),
                next_header: rng.u8(..),
                payload_len: rng.usize(..200),
                hop_limit: rng.u8(..),
                traffic_class: rng.u8(..),
                flow_label: rng.u32(..) & 0xf_ffff,
            };
            let mut buf = vec![0x5a; repr.buffer_len() + 3];
            repr.emit(&mut Ipv6Packet::new_unchecked(&mut buf[..]));
            let view = Ipv6Packet::new_checked(&buf[..]).unwrap();
            assert_eq!(Ipv6Repr::parse(&view), Ok(repr));
        }
    }

    #[test]
    fn repr_parse_refuses_bad_versions_and_lengths() {
        let mut buf = HEADER.to_vec();
        buf.resize(104, 0);
        let parse = |b: &[u8]| Ipv6Repr::parse(&Ipv6Packet::new_checked(b).unwrap());
        assert!(parse(&buf).is_ok());
        assert_eq!(parse(&buf[..103]), Err(Error::Truncated));
        let mut v4 = buf.clone();
        v4[0] = 0x40;
        assert_eq!(parse(&v4), Err(Error::Malformed));
    }

    #[test]
    fn address_classes() {
        let b = |s: &str| addr(s).octets();
        assert!(is_multicast(&b("ff02::1")) && is_multicast(&b("ff0e::1")));
        assert!(!is_multicast(&b("fe80::1")));
        assert_eq!(multicast_scope(&b("ff02::1")), 2);
        assert_eq!(multicast_scope(&b("ff0e::1")), 14);
        assert_eq!(multicast_scope(&b("ff15::1")), 5);
        assert!(is_unspecified(&b("::")) && !is_unspecified(&b("::1")));
        assert!(is_loopback(&b("::1")) && !is_loopback(&b("::")) && !is_loopback(&b("1::1")));
        for ll in ["fe80::1", "fe80::200:ff:fe00:1", "febf:ffff::"] {
            assert!(is_link_local_unicast(&b(ll)), "{ll}");
        }
        for not in ["fec0::1", "fe7f::1", "ff02::1", "2001:db8::1"] {
            assert!(!is_link_local_unicast(&b(not)), "{not}");
        }
        assert!(is_ipv4_mapped(&b("::ffff:192.0.2.1")));
        assert!(is_ipv4_mapped(&b("::ffff:0:0")));
        assert!(!is_ipv4_mapped(&b("::192.0.2.1")));
        assert!(!is_ipv4_mapped(&b("1::ffff:192.0.2.1")));
        assert!(!is_ipv4_mapped(&b("::fffe:192.0.2.1")));
        // Against std where it has the same class.
        let mut rng = fastrand::Rng::with_seed(0x0bad_f00d_dead_beef);
        for _ in 0..10_000 {
            let mut o = rng.u128(..).to_be_bytes();
            match rng.u8(..4) {
                0 => o[..2].copy_from_slice(&[0xfe, 0x80 | rng.u8(..) & 0x7f]),
                1 => o[..10].fill(0),
                2 => o[0] = 0xff,
                _ => {}
            }
            let a = Ipv6Addr::from(o);
            assert_eq!(is_multicast(&o), a.is_multicast(), "{a}");
            assert_eq!(is_unspecified(&o), a.is_unspecified(), "{a}");
            assert_eq!(is_loopback(&o), a.is_loopback(), "{a}");
            assert_eq!(is_link_local_unicast(&o), a.is_unicast_link_local(), "{a}");
            assert_eq!(is_ipv4_mapped(&o), a.to_ipv4_mapped().is_some(), "{a}");
        }
    }

    /// RFC 4291 section 2.7.1's example: 4037::01:800:200E:8C6C has the
    /// solicited-node group FF02::1:FF0E:8C6C; RFC 2464 section 7's MAC of
    /// FF02::1 is 33-33-00-00-00-01.
    #[test]
    fn solicited_node_groups_and_their_macs() {
        let group = solicited_node(addr("4037::1:800:200e:8c6c"));
        assert_eq!(group, addr("ff02::1:ff0e:8c6c"));
        assert!(is_solicited_node(&group.octets()));
        assert!(!is_solicited_node(&addr("ff02::1:fe0e:8c6c").octets()));
        assert!(!is_solicited_node(&addr("ff02::2:ff0e:8c6c").octets()));
        assert_eq!(multicast_mac(group), [0x33, 0x33, 0xff, 0x0e, 0x8c, 0x6c]);
        assert_eq!(multicast_mac(ALL_NODES), [0x33, 0x33, 0, 0, 0, 1]);
        assert_eq!(multicast_mac(ALL_ROUTERS), [0x33, 0x33, 0, 0, 0, 2]);
        // Every address's group is a solicited-node group holding its low 24 bits.
        let mut rng = fastrand::Rng::with_seed(7);
        for _ in 0..1000 {
            let a = rng.u128(..);
            let g = solicited_node(Ipv6Addr::from(a)).to_bits();
            assert!(is_solicited_node(&g.to_be_bytes()));
            assert_eq!(g & 0xff_ffff, a & 0xff_ffff);
        }
    }

    /// RFC 4291 appendix A: 34-56-78-9A-BC-DE gives 3656:78FF:FE9A:BCDE; a
    /// locally administered MAC (02:...) gets the bit cleared.
    #[test]
    fn link_local_from_mac_is_modified_eui64() {
        assert_eq!(
            eui64_interface_id([0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde]),
            [0x36, 0x56, 0x78, 0xff, 0xfe, 0x9a, 0xbc, 0xde]
        );
        assert_eq!(
            link_local_from_mac([0x34, 0x56, 0x78, 0x9a, 0xbc, 0xde]),
            addr("fe80::3656:78ff:fe9a:bcde")
        );
        // What Linux gives a veth with MAC 02:00:00:00:00:01.
        assert_eq!(
            link_local_from_mac([0x02, 0, 0, 0, 0, 0x01]),
            addr("fe80::ff:fe00:1")
        );
        assert!(is_link_local_unicast(
            &link_local_from_mac([0xff; 6]).octets()
        ));
    }

    /// The pseudo-header: RFC 8200 section 8.1's fields in order, against a
    /// sum over those bytes laid out by hand.
    #[test]
    fn pseudo_header_is_the_rfc_layout() {
        let (s, d) = (addr("2001:db8::1"), addr("ff02::1:ff00:2"));
        let mut bytes = Vec::new();
        bytes.extend_from_slice(&s.octets());
        bytes.extend_from_slice(&d.octets());
        bytes.extend_from_slice(&0x0001_0020u32.to_be_bytes());
        bytes.extend_from_slice(&[0, 0, 0, 58]);
        assert_eq!(
            pseudo_header(&s, &d, ICMPV6, 0x0001_0020),
            checksum::sum(&bytes)
        );
        let seg = [0x87, 0, 0, 0, 1, 2, 3, 4, 5];
        let c = upper_layer_checksum(&s, &d, ICMPV6, &seg);
        let mut with = seg;
        with[2..4].copy_from_slice(&c.to_be_bytes());
        assert!(verify_upper_layer(&s, &d, ICMPV6, &with));
        with[8] ^= 1;
        assert!(!verify_upper_layer(&s, &d, ICMPV6, &with));
    }

    /// A generic extension header: next header, length in 8-byte units
    /// beyond the first 8, filled to its size.
    fn ext(next: u8, units: u8) -> Vec<u8> {
        let mut h = vec![0x01u8; (usize::from(units) + 1) * 8];
        h[0] = next;
        h[1] = units;
        h
    }

    fn frag(next: u8, offset: u16, more: bool, ident: u32) -> Vec<u8> {
        let mut h = vec![next, 0];
        h.extend_from_slice(&(offset | u16::from(more)).to_be_bytes());
        h.extend_from_slice(&ident.to_be_bytes());
        h
    }

    #[test]
    fn walks_every_kind_of_extension_header() {
        // HbH (8) -> DestOpts (16) -> Routing (24) -> AH (len 4: 24 bytes)
        // -> Fragment (8, atomic) -> TCP.
        let mut p = ext(DESTINATION_OPTIONS, 0);
        p.extend(ext(ROUTING, 1));
        p.extend(ext(AH, 2));
        let mut ah = vec![0x02u8; 24];
        ah[0] = FRAGMENT;
        ah[1] = 4;
        p.extend(ah);
        p.extend(frag(TCP, 0, false, 0xdead_beef));
        let at = p.len();
        p.extend([0u8; 20]);
        let u = walk_extension_headers(HOP_BY_HOP, &p).unwrap();
        assert_eq!(at, 8 + 16 + 24 + 24 + 8);
        assert_eq!(
            u,
            UpperLayer {
                protocol: TCP,
                offset: at,
                headers: 5,
                fragment: Some(FragmentInfo {
                    offset: 0,
                    more: false,
                    ident: 0xdead_beef,
                    at: at - 8
                }),
            }
        );
        assert!(u.fragment.unwrap().is_atomic());
        // The other RFC 6564 headers are stepped over alike.
        for nh in [MOBILITY, HIP, SHIM6, EXPERIMENTAL_1, EXPERIMENTAL_2] {
            let mut p = ext(UDP, 2);
            p.extend([0u8; 8]);
            let u = walk_extension_headers(nh, &p).unwrap();
            assert_eq!((u.protocol, u.offset, u.headers), (UDP, 24, 1), "{nh}");
        }
    }

    #[test]
    fn no_extension_header_is_offset_zero() {
        for nh in [TCP, UDP, ICMPV6, 4, 41, 132] {
            let u = walk_extension_headers(nh, &[]).unwrap();
            assert_eq!(
                (u.protocol, u.offset, u.headers, u.fragment),
                (nh, 0, 0, None)
            );
        }
    }

    #[test]
    fn esp_and_no_next_header_end_the_walk() {
        for end in [ESP, NO_NEXT_HEADER] {
            let mut p = ext(end, 0);
            p.extend([0xffu8; 4]); // Not a header: never read as one.
            let u = walk_extension_headers(DESTINATION_OPTIONS, &p).unwrap();
            assert_eq!((u.protocol, u.offset), (end, 8));
        }
    }

    #[test]
    fn ah_counts_in_four_byte_units() {
        // AH with payload length 4: (4 + 2) * 4 = 24 bytes, not (4 + 1) * 8.
        let mut p = vec![0u8; 24];
        p[0] = UDP;
        p[1] = 4;
        p.extend([0u8; 8]);
        let u = walk_extension_headers(AH, &p).unwrap();
        assert_eq!((u.protocol, u.offset), (UDP, 24));
        assert_eq!(
            walk_extension_headers(AH, &p[..23]),
            Err(ExtHeaderError::Truncated {
                next_header: AH,
                at: 0
            })
        );
    }

    #[test]
    fn non_first_fragments_stop_at_the_fragment_header() {
        let mut p = ext(FRAGMENT, 0);
        p.extend(frag(TCP, 1232, true, 7));
        p.extend([0xeeu8; 3]); // Fragment data: shorter than any TCP header.
        let u = walk_extension_headers(HOP_BY_HOP, &p).unwrap();
        assert_eq!((u.protocol, u.offset, u.headers), (TCP, 16, 2));
        assert!(u.is_non_first_fragment());
        assert_eq!(u.fragment.unwrap().offset, 1232);
        assert!(u.fragment.unwrap().more);
        // Two Fragment headers: the last one says where the data sits.
        let mut p = frag(FRAGMENT, 0, true, 7);
        p.extend(frag(UDP, 8, false, 7));
        p.extend([0u8; 8]);
        let u = walk_extension_headers(FRAGMENT, &p).unwrap();
        assert!(u.is_non_first_fragment());
        assert_eq!((u.offset, u.fragment.unwrap().at), (16, 8));
    }

    /// RFC 7112: the first fragment must hold the whole chain and the
    /// upper-layer header; without more fragments a cut chain is a short
    /// packet.
    #[test]
    fn a_first_fragment_must_hold_the_whole_chain() {
        let mut p = frag(DESTINATION_OPTIONS, 0, true, 1);
        p.extend(ext(TCP, 1));
        p.extend([0u8; 20]);
        assert!(walk_extension_headers(FRAGMENT, &p).is_ok());
        for cut in [9, 15, 23, 24, 30, 43] {
            assert_eq!(
                walk_extension_headers(FRAGMENT, &p[..cut]),
                Err(ExtHeaderError::ChainNotInFirstFragment),
                "cut at {cut}"
            );
        }
        // An atomic fragment cut short is only truncated.
        let mut atomic = p.clone();
        atomic[3] = 0;
        assert_eq!(
            walk_extension_headers(FRAGMENT, &atomic[..15]),
            Err(ExtHeaderError::Truncated {
                next_header: DESTINATION_OPTIONS,
                at: 8
            })
        );
        assert!(walk_extension_headers(FRAGMENT, &atomic[..24]).is_ok());
        // And the Fragment header itself cut short is truncated.
        assert_eq!(
            walk_extension_headers(FRAGMENT, &p[..7]),
            Err(ExtHeaderError::Truncated {
                next_header: FRAGMENT,
                at: 0
            })
        );
    }

    #[test]
    fn hop_by_hop_only_first() {
        let mut p = ext(HOP_BY_HOP, 0);
        p.extend(ext(UDP, 0));
        assert_eq!(
            walk_extension_headers(DESTINATION_OPTIONS, &p),
            Err(ExtHeaderError::HopByHopNotFirst { at: 8 })
        );
        assert_eq!(
            walk_extension_headers(DESTINATION_OPTIONS, &p)
                .unwrap_err()
                .reason(),
            "ipv6_hop_by_hop_not_first"
        );
    }

    #[test]
    fn the_walk_is_bounded() {
        let chain = |n: usize| {
            let mut p = Vec::new();
            for i in 0..n {
                p.extend(ext(if i + 1 == n { UDP } else { DESTINATION_OPTIONS }, 0));
            }
            p.extend([0u8; 8]);
            p
        };
        let u = walk_extension_headers(DESTINATION_OPTIONS, &chain(MAX_EXTENSION_HEADERS)).unwrap();
        assert_eq!(usize::from(u.headers), MAX_EXTENSION_HEADERS);
        assert_eq!(u.offset, MAX_EXTENSION_HEADERS * 8);
        assert_eq!(
            walk_extension_headers(DESTINATION_OPTIONS, &chain(MAX_EXTENSION_HEADERS + 1)),
            Err(ExtHeaderError::TooMany)
        );
    }

    #[test]
    fn truncated_headers_are_named_with_where_they_start() {
        let mut p = ext(ROUTING, 0);
        p.extend(ext(TCP, 2));
        for cut in 8..32 {
            assert_eq!(
                walk_extension_headers(HOP_BY_HOP, &p[..cut]),
                Err(ExtHeaderError::Truncated {
                    next_header: ROUTING,
                    at: 8
                }),
                "cut at {cut}"
            );
        }
        assert!(walk_extension_headers(HOP_BY_HOP, &p).is_ok());
        for e in [
            ExtHeaderError::Truncated {
                next_header: 0,
                at: 0,
            },
            ExtHeaderError::HopByHopNotFirst { at: 8 },
            ExtHeaderError::TooMany,
            ExtHeaderError::ChainNotInFirstFragment,
        ] {
            assert!(!e.to_string().is_empty() && e.reason().starts_with("ipv6_"));
        }
    }

    #[test]
    fn upper_layer_of_a_packet_counts_the_fixed_header() {
        let mut buf = HEADER.to_vec();
        buf[NEXT_HEADER] = HOP_BY_HOP;
        let mut payload = ext(FRAGMENT, 0);
        payload.extend(frag(ICMPV6, 0, true, 9));
        payload.extend([0x80, 0, 0, 0, 0, 1, 0, 1]);
        buf[PAYLOAD_LEN..PAYLOAD_LEN + 2].copy_from_slice(&(payload.len() as u16).to_be_bytes());
        buf.extend(payload);
        buf.extend([0u8; 6]); // Ethernet padding: not walked.
        let u = Ipv6Packet::new_checked(&buf[..])
            .unwrap()
            .upper_layer()
            .unwrap();
        assert_eq!((u.protocol, u.offset), (ICMPV6, 40 + 16));
        assert_eq!(u.fragment.unwrap().at, 48);
    }
}
