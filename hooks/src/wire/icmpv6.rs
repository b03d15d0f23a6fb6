//! ICMPv6 (RFC 4443) and the neighbour discovery messages it carries (RFC
//! 4861): type, code, checksum, four bytes whose meaning depends on the type,
//! then the body. The checksum covers the IPv6 pseudo-header (RFC 8200
//! section 8.1), so checking or filling it takes the addresses.
//!
//! An [`Icmpv6Packet`] views exactly the message: the IPv6 payload up to its
//! length after the extension headers, never Ethernet padding.

use super::ipv6::{self, next_header, Ipv6Packet, HEADER_LEN as IPV6_HEADER_LEN, MIN_MTU};
use super::{be16, set_be16, Error};
use core::fmt;
use std::net::Ipv6Addr;

/// Length of the header: type, code, checksum and the four bytes after
/// (every message RFC 4443 and RFC 4861 define has them).
pub const HEADER_LEN: usize = 8;

/// ICMPv6 message types fastpath knows.
pub mod kind {
    pub const DEST_UNREACHABLE: u8 = 1;
    pub const PACKET_TOO_BIG: u8 = 2;
    pub const TIME_EXCEEDED: u8 = 3;
    pub const PARAM_PROBLEM: u8 = 4;
    pub const ECHO_REQUEST: u8 = 128;
    pub const ECHO_REPLY: u8 = 129;
    pub const ROUTER_SOLICIT: u8 = 133;
    pub const ROUTER_ADVERT: u8 = 134;
    pub const NEIGHBOR_SOLICIT: u8 = 135;
    pub const NEIGHBOR_ADVERT: u8 = 136;
    pub const REDIRECT: u8 = 137;
}

/// Destination unreachable codes (RFC 4443 section 3.1).
pub mod unreachable {
    pub const NO_ROUTE: u8 = 0;
    pub const ADMIN_PROHIBITED: u8 = 1;
    pub const BEYOND_SCOPE: u8 = 2;
    pub const ADDRESS_UNREACHABLE: u8 = 3;
    pub const PORT_UNREACHABLE: u8 = 4;
}

/// Time exceeded codes (RFC 4443 section 3.3).
pub mod time_exceeded {
    pub const HOP_LIMIT: u8 = 0;
    pub const REASSEMBLY: u8 = 1;
}

/// Parameter problem codes (RFC 4443 section 3.4, RFC 7112 section 5).
pub mod param_problem {
    pub const HEADER_FIELD: u8 = 0;
    pub const NEXT_HEADER: u8 = 1;
    pub const OPTION: u8 = 2;
    pub const INCOMPLETE_CHAIN: u8 = 3;
}

/// Whether `msg_type` is an error message (RFC 4443 section 2.1: types
/// 0 to 127).
#[inline(always)]
pub const fn is_error(msg_type: u8) -> bool {
    msg_type < 128
}

const TYPE: usize = 0;
const CODE: usize = 1;
const CHECKSUM: usize = 2;
const IDENT: usize = 4;
const SEQ_NO: usize = 6;
const ZERO: [u8; HEADER_LEN] = [0; HEADER_LEN];

/// A view of an ICMPv6 message (header and body) filling `buffer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Icmpv6Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Icmpv6Packet<T> {
    /// View `buffer`, which must hold at least the 8-byte header. Type, code
    /// and checksum are not checked here.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(Icmpv6Packet { buffer })
    }

    /// View `buffer` without any check, to write a message into it.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        Icmpv6Packet { buffer }
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline(always)]
    fn header(&self) -> &[u8; HEADER_LEN] {
        // Always `Some` after `new_checked`; the fallback keeps this panic-free.
        self.buffer.as_ref().first_chunk().unwrap_or(&ZERO)
    }

    /// Message type (see [`kind`]).
    #[inline]
    pub fn msg_type(&self) -> u8 {
        self.header()[TYPE]
    }

    /// Code, refining the type.
    #[inline]
    pub fn code(&self) -> u8 {
        self.header()[CODE]
    }

    /// Checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(self.header(), CHECKSUM)
    }

    /// Identifier of an echo request or reply (bytes 4..6).
    #[inline]
    pub fn ident(&self) -> u16 {
        be16(self.header(), IDENT)
    }

    /// Sequence number of an echo request or reply (bytes 6..8).
    #[inline]
    pub fn seq_no(&self) -> u16 {
        be16(self.header(), SEQ_NO)
    }

    /// Bytes 4..8 as one number: the MTU of a packet too big, the pointer of
    /// a parameter problem, the flags of a neighbour advertisement.
    #[inline]
    pub fn word(&self) -> u32 {
        let h = self.header();
        u32::from_be_bytes([h[4], h[5], h[6], h[7]])
    }

    /// Everything after the 8-byte header.
    #[inline]
    pub fn body(&self) -> &[u8] {
        self.buffer.as_ref().get(HEADER_LEN..).unwrap_or(&[])
    }

    /// The checksum is right for a message from `src` to `dst`.
    #[inline]
    pub fn verify_checksum(&self, src: &Ipv6Addr, dst: &Ipv6Addr) -> bool {
        ipv6::verify_upper_layer(src, dst, next_header::ICMPV6, self.buffer.as_ref())
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Icmpv6Packet<T> {
    #[inline(always)]
    fn header_mut(&mut self) -> Option<&mut [u8; HEADER_LEN]> {
        self.buffer.as_mut().first_chunk_mut()
    }

    /// Set the message type (the checksum is not updated).
    #[inline]
    pub fn set_msg_type(&mut self, value: u8) {
        if let Some(h) = self.header_mut() {
            h[TYPE] = value;
        }
    }

    /// Set the code (the checksum is not updated).
    #[inline]
    pub fn set_code(&mut self, value: u8) {
        if let Some(h) = self.header_mut() {
            h[CODE] = value;
        }
    }

    /// Set the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, value: u16) {
        if let Some(h) = self.header_mut() {
            set_be16(h, CHECKSUM, value);
        }
    }

    /// Set the echo identifier (bytes 4..6).
    #[inline]
    pub fn set_ident(&mut self, value: u16) {
        if let Some(h) = self.header_mut() {
            set_be16(h, IDENT, value);
        }
    }

    /// Set the echo sequence number (bytes 6..8).
    #[inline]
    pub fn set_seq_no(&mut self, value: u16) {
        if let Some(h) = self.header_mut() {
            set_be16(h, SEQ_NO, value);
        }
    }

    /// Set bytes 4..8 as one number (see [`word`](Icmpv6Packet::word)).
    #[inline]
    pub fn set_word(&mut self, value: u32) {
        if let Some(h) = self.header_mut() {
            h[4..8].copy_from_slice(&value.to_be_bytes());
        }
    }

    /// Everything after the header, writable.
    #[inline]
    pub fn body_mut(&mut self) -> &mut [u8] {
        self.buffer
            .as_mut()
            .get_mut(HEADER_LEN..)
            .unwrap_or(&mut [])
    }

    /// Compute the checksum of the message from `src` to `dst` and store it.
    #[inline]
    pub fn fill_checksum(&mut self, src: &Ipv6Addr, dst: &Ipv6Addr) {
        self.set_checksum(0);
        let c = ipv6::upper_layer_checksum(src, dst, next_header::ICMPV6, self.buffer.as_ref());
        self.set_checksum(c);
    }
}

// ---------------------------------------------------------------------------
// Echo

/// An echo request or reply (RFC 4443 section 4), decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EchoRepr {
    /// [`kind::ECHO_REQUEST`] or [`kind::ECHO_REPLY`].
    pub msg_type: u8,
    pub ident: u16,
    pub seq_no: u16,
    /// Length of the data after the 8-byte header.
    pub data_len: usize,
}

impl EchoRepr {
    /// Decode `packet`: `None` unless it is an echo request or reply with
    /// code 0. The checksum is not checked here.
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Icmpv6Packet<&T>) -> Option<EchoRepr> {
        let msg_type = packet.msg_type();
        if (msg_type != kind::ECHO_REQUEST && msg_type != kind::ECHO_REPLY) || packet.code() != 0 {
            return None;
        }
        Some(EchoRepr {
            msg_type,
            ident: packet.ident(),
            seq_no: packet.seq_no(),
            data_len: packet.body().len(),
        })
    }

    /// Length of the whole message: header and data.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.data_len
    }

    /// Write the header with code 0 and the checksum from `src` to `dst`.
    /// `packet` must view exactly the message, its data already in place.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        packet: &mut Icmpv6Packet<&mut T>,
        src: &Ipv6Addr,
        dst: &Ipv6Addr,
    ) {
        packet.set_msg_type(self.msg_type);
        packet.set_code(0);
        packet.set_ident(self.ident);
        packet.set_seq_no(self.seq_no);
        packet.fill_checksum(src, dst);
    }
}

/// Write the echo reply to the echo request `request` (the whole message) at
/// the start of `buf`, sent from `src` to `dst` (the request's destination
/// and source): same identifier, sequence number and data (RFC 4443 section
/// 4.2). Returns its length; `None`, and nothing written, when `request` is
/// not an echo request or `buf` is too short.
pub fn emit_echo_reply(
    buf: &mut [u8],
    request: &[u8],
    src: &Ipv6Addr,
    dst: &Ipv6Addr,
) -> Option<usize> {
    let req = Icmpv6Packet::new_checked(request).ok()?;
    let repr = EchoRepr::parse(&req).filter(|r| r.msg_type == kind::ECHO_REQUEST)?;
    let msg = buf.get_mut(..request.len())?;
    msg.copy_from_slice(request);
    EchoRepr {
        msg_type: kind::ECHO_REPLY,
        ..repr
    }
    .emit(&mut Icmpv6Packet::new_unchecked(&mut *msg), src, dst);
    Some(request.len())
}

// ---------------------------------------------------------------------------
// Errors

/// Longest quote of the invoking packet an error carries: the error's IPv6
/// packet is at most 1280 bytes (RFC 4443 section 2.4 (c)).
pub const MAX_QUOTE: usize = MIN_MTU - IPV6_HEADER_LEN - HEADER_LEN;

/// An ICMPv6 error message's type and what its four bytes say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorRepr {
    /// Type 1 with a code of [`mod@unreachable`].
    DestUnreachable(u8),
    /// Type 2: the MTU of the next-hop link.
    PacketTooBig { mtu: u32 },
    /// Type 3 with a code of [`time_exceeded`].
    TimeExceeded(u8),
    /// Type 4 with a code of [`param_problem`] and the offset of the
    /// offending byte in the invoking packet.
    ParamProblem { code: u8, pointer: u32 },
}

impl ErrorRepr {
    /// (type, code, bytes 4..8).
    pub const fn fields(&self) -> (u8, u8, u32) {
        match *self {
            ErrorRepr::DestUnreachable(code) => (kind::DEST_UNREACHABLE, code, 0),
            ErrorRepr::PacketTooBig { mtu } => (kind::PACKET_TOO_BIG, 0, mtu),
            ErrorRepr::TimeExceeded(code) => (kind::TIME_EXCEEDED, code, 0),
            ErrorRepr::ParamProblem { code, pointer } => (kind::PARAM_PROBLEM, code, pointer),
        }
    }

    /// Decode an error message's header: `None` for any other type.
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Icmpv6Packet<&T>) -> Option<ErrorRepr> {
        let code = packet.code();
        Some(match packet.msg_type() {
            kind::DEST_UNREACHABLE => ErrorRepr::DestUnreachable(code),
            kind::PACKET_TOO_BIG => ErrorRepr::PacketTooBig { mtu: packet.word() },
            kind::TIME_EXCEEDED => ErrorRepr::TimeExceeded(code),
            kind::PARAM_PROBLEM => ErrorRepr::ParamProblem {
                code,
                pointer: packet.word(),
            },
            _ => return None,
        })
    }
}

/// How much of `original` an error quotes: the invoking packet up to its
/// payload length (never Ethernet padding) and at most [`MAX_QUOTE`] bytes.
/// `None` unless it holds an IPv6 header (version 6).
#[inline]
fn quoted_len(original: &[u8]) -> Option<usize> {
    let ip = Ipv6Packet::new_checked(original).ok()?;
    if ip.version() != 6 {
        return None;
    }
    let whole = IPV6_HEADER_LEN + usize::from(ip.payload_len());
    Some(original.len().min(whole).min(MAX_QUOTE))
}

/// Length of the ICMPv6 message [`emit_error`] writes about `original`;
/// 0 when it is not an IPv6 packet. With the IPv6 header it is at most
/// 1280 bytes.
#[inline]
pub fn error_message_len(original: &[u8]) -> usize {
    quoted_len(original).map_or(0, |q| HEADER_LEN + q)
}

/// Write the ICMPv6 error `error` about the packet `original` (from its IPv6
/// header on) at the start of `buf`, sent from `src` to `dst`: type, code,
/// checksum, the four bytes of the type, then as much of `original` as
/// keeps the error's IPv6 packet within 1280 bytes (RFC 4443 section 2.4
/// (c)). Returns the length written, that of [`error_message_len`].
///
/// `None`, and nothing written, when `buf` is too short or `original` is not
/// an IPv6 packet. Whether an error may be sent at all is
/// [`error_allowed`]'s question.
pub fn emit_error(
    buf: &mut [u8],
    error: ErrorRepr,
    original: &[u8],
    src: &Ipv6Addr,
    dst: &Ipv6Addr,
) -> Option<usize> {
    let quoted = quoted_len(original)?;
    let len = HEADER_LEN + quoted;
    let msg = buf.get_mut(..len)?;
    let (msg_type, code, word) = error.fields();
    let (header, rest) = msg.split_first_chunk_mut::<HEADER_LEN>()?;
    let [w0, w1, w2, w3] = word.to_be_bytes();
    *header = [msg_type, code, 0, 0, w0, w1, w2, w3];
    rest.copy_from_slice(original.get(..quoted)?);
    Icmpv6Packet::new_unchecked(msg).fill_checksum(src, dst);
    Some(len)
}

/// Why no ICMPv6 error may be sent about a packet (RFC 4443 section 2.4
/// (e)): each a named drop of the error, not of the packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ineligible {
    /// Not an IPv6 packet.
    NotIpv6,
    /// (e.1) An ICMPv6 error message, or a redirect.
    AboutAnError,
    /// (e.3) Sent to a multicast address (packet too big and parameter
    /// problem code 2 excepted).
    MulticastDestination,
    /// (e.6) Its source names no single node: unspecified or multicast.
    SourceNotUnique,
}

impl Ineligible {
    /// The name of the reason.
    pub const fn reason(&self) -> &'static str {
        match self {
            Ineligible::NotIpv6 => "icmpv6_error_not_ipv6",
            Ineligible::AboutAnError => "icmpv6_error_about_error",
            Ineligible::MulticastDestination => "icmpv6_error_multicast_dst",
            Ineligible::SourceNotUnique => "icmpv6_error_source_not_unique",
        }
    }
}

impl fmt::Display for Ineligible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Ineligible::NotIpv6 => "not an IPv6 packet",
            Ineligible::AboutAnError => "no ICMPv6 error about an ICMPv6 error (RFC 4443 2.4 e.1)",
            Ineligible::MulticastDestination => {
                "no ICMPv6 error about a multicast destination (RFC 4443 2.4 e.3)"
            }
            Ineligible::SourceNotUnique => {
                "no ICMPv6 error to an unspecified or multicast source (RFC 4443 2.4 e.6)"
            }
        })
    }
}

/// Whether `error` may be sent about `original` (from its IPv6 header on),
/// by RFC 4443 section 2.4 (e), as Linux's `icmp6_send` reads it: not about
/// an ICMPv6 error or redirect (found through the extension headers; a
/// packet whose chain cannot be walked, or a non-first fragment, is not
/// known to be one), not about a multicast destination unless it is a
/// packet too big or a parameter problem code 2, not to a source that names
/// no single node. A link-layer multicast or broadcast destination (e.2,
/// e.4) is the caller's to check. Rate limiting (f) is the caller's too.
pub fn error_allowed(error: &ErrorRepr, original: &[u8]) -> Result<(), Ineligible> {
    let ip = Ipv6Packet::new_checked(original).map_err(|_| Ineligible::NotIpv6)?;
    if ip.version() != 6 {
        return Err(Ineligible::NotIpv6);
    }
    let src = ip.src_bytes();
    if ipv6::is_unspecified(src) || ipv6::is_multicast(src) {
        return Err(Ineligible::SourceNotUnique);
    }
    let multicast_ok = matches!(
        error,
        ErrorRepr::PacketTooBig { .. }
            | ErrorRepr::ParamProblem {
                code: param_problem::OPTION,
                ..
            }
    );
    if ipv6::is_multicast(ip.dst_bytes()) && !multicast_ok {
        return Err(Ineligible::MulticastDestination);
    }
    if let Ok(u) = ip.upper_layer() {
        if u.protocol == next_header::ICMPV6 && !u.is_non_first_fragment() {
            if let Some(&t) = original.get(u.offset) {
                if is_error(t) || t == kind::REDIRECT {
                    return Err(Ineligible::AboutAnError);
                }
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Neighbour discovery (RFC 4861)

/// The hop limit every neighbour discovery message is sent and must be
/// received with (RFC 4861 sections 7.1.1, 7.1.2): it proves the sender is
/// on the link.
pub const ND_HOP_LIMIT: u8 = 255;

/// Length of a neighbour solicitation or advertisement without options:
/// header and target address.
pub const NS_NA_LEN: usize = HEADER_LEN + 16;

/// Length of a link-layer address option for Ethernet (RFC 4861 section
/// 4.6.1, RFC 2464 section 8): type, length 1, six bytes.
pub const LL_OPTION_LEN: usize = 8;

/// Neighbour discovery option types (RFC 4861 section 4.6).
pub mod nd_option {
    pub const SOURCE_LL_ADDR: u8 = 1;
    pub const TARGET_LL_ADDR: u8 = 2;
    pub const PREFIX_INFO: u8 = 3;
    pub const REDIRECTED_HEADER: u8 = 4;
    pub const MTU: u8 = 5;
    /// RFC 3971 section 5.3.2, sent by Linux with enhanced DAD (RFC 7527).
    pub const NONCE: u8 = 14;
}

/// The flags of a neighbour advertisement, in its byte 4 (RFC 4861 section
/// 4.4).
pub mod na_flag {
    pub const ROUTER: u8 = 0x80;
    pub const SOLICITED: u8 = 0x40;
    pub const OVERRIDE: u8 = 0x20;
}

/// Why a message is not a neighbour solicitation or advertisement to act on:
/// each a named drop (RFC 4861 sections 7.1.1, 7.1.2: "silently discard").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NdError {
    /// Neither a neighbour solicitation nor an advertisement.
    NotNeighborMessage,
    /// The code is not 0.
    Code,
    /// Shorter than 24 bytes.
    Truncated,
    /// The IP hop limit is not 255: not sent from the link.
    HopLimit,
    /// The target is a multicast address.
    MulticastTarget,
    /// An option of length 0.
    ZeroLengthOption,
    /// An option runs past the message.
    OptionTruncated,
    /// A link-layer address option whose length is not 1 (8 bytes) on
    /// Ethernet.
    LinkLayerOptionLength,
    /// A solicitation from :: (duplicate address detection) not sent to a
    /// solicited-node group.
    UnspecifiedSourceNotToSolicitedNode,
    /// A solicitation from :: with a source link-layer address option.
    UnspecifiedSourceWithLinkLayerAddress,
    /// An advertisement to a multicast address with the solicited flag.
    SolicitedToMulticast,
}

impl NdError {
    /// The name of the drop reason.
    pub const fn reason(&self) -> &'static str {
        match self {
            NdError::NotNeighborMessage => "nd_not_neighbor_message",
            NdError::Code => "nd_bad_code",
            NdError::Truncated => "nd_truncated",
            NdError::HopLimit => "nd_hop_limit_not_255",
            NdError::MulticastTarget => "nd_multicast_target",
            NdError::ZeroLengthOption => "nd_zero_length_option",
            NdError::OptionTruncated => "nd_option_truncated",
            NdError::LinkLayerOptionLength => "nd_link_layer_option_length",
            NdError::UnspecifiedSourceNotToSolicitedNode => "nd_dad_not_to_solicited_node",
            NdError::UnspecifiedSourceWithLinkLayerAddress => "nd_dad_with_source_ll_addr",
            NdError::SolicitedToMulticast => "nd_solicited_advert_to_multicast",
        }
    }
}

impl fmt::Display for NdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NdError::NotNeighborMessage => "not a neighbour solicitation or advertisement",
            NdError::Code => "ICMPv6 code is not 0",
            NdError::Truncated => "shorter than 24 bytes",
            NdError::HopLimit => "hop limit is not 255",
            NdError::MulticastTarget => "target address is multicast",
            NdError::ZeroLengthOption => "an option has length 0",
            NdError::OptionTruncated => "an option runs past the message",
            NdError::LinkLayerOptionLength => "a link-layer address option is not 8 bytes",
            NdError::UnspecifiedSourceNotToSolicitedNode => {
                "from :: but not to a solicited-node group"
            }
            NdError::UnspecifiedSourceWithLinkLayerAddress => {
                "from :: with a source link-layer address option"
            }
            NdError::SolicitedToMulticast => "solicited advertisement to a multicast address",
        })
    }
}

impl std::error::Error for NdError {}

/// One option of a neighbour discovery message: its type and its bytes
/// (type and length included).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NdOption<'a> {
    pub kind: u8,
    pub bytes: &'a [u8],
}

/// The options of a neighbour discovery message, in order. Yields an error
/// (then stops) at an option of length 0 or one that runs past the end.
#[derive(Clone, Debug)]
pub struct NdOptions<'a> {
    rest: &'a [u8],
}

impl<'a> NdOptions<'a> {
    /// Walk `options`, the bytes after a message's fixed part.
    pub const fn new(options: &'a [u8]) -> Self {
        NdOptions { rest: options }
    }
}

impl<'a> Iterator for NdOptions<'a> {
    type Item = Result<NdOption<'a>, NdError>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = match *self.rest {
            [] => return None,
            [_, 0, ..] => Err(NdError::ZeroLengthOption),
            [kind, units, ..] => match self.rest.split_at_checked(usize::from(units) * 8) {
                Some((bytes, rest)) => {
                    self.rest = rest;
                    return Some(Ok(NdOption { kind, bytes }));
                }
                None => Err(NdError::OptionTruncated),
            },
            // One byte: an option cut after its type.
            [_] => Err(NdError::OptionTruncated),
        };
        self.rest = &[];
        Some(item)
    }
}

/// The link-layer address of the first option of `wanted` type (source or
/// target) in `options`, after checking every option's length: `Ok(None)`
/// when there is none. Later options of the same type are ignored, as Linux
/// does; unknown types are skipped (RFC 4861 section 4.6).
pub fn link_layer_option(options: &[u8], wanted: u8) -> Result<Option<[u8; 6]>, NdError> {
    let mut found = None;
    for o in NdOptions::new(options) {
        let o = o?;
        if o.kind == wanted && found.is_none() {
            if o.bytes.len() != LL_OPTION_LEN {
                return Err(NdError::LinkLayerOptionLength);
            }
            found = o
                .bytes
                .get(2..8)
                .and_then(|m| m.first_chunk::<6>())
                .copied();
        }
    }
    Ok(found)
}

/// A neighbour solicitation or advertisement, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NdRepr {
    /// "What is the link-layer address of `target`?" (RFC 4861 section 4.3).
    NeighborSolicit {
        target: Ipv6Addr,
        source_ll: Option<[u8; 6]>,
    },
    /// "`target` is at `target_ll`" (RFC 4861 section 4.4).
    NeighborAdvert {
        router: bool,
        solicited: bool,
        override_: bool,
        target: Ipv6Addr,
        target_ll: Option<[u8; 6]>,
    },
}

impl NdRepr {
    /// Decode `packet` (the whole message) with the checks of RFC 4861
    /// sections 7.1.1 and 7.1.2 that the message alone answers: type, code
    /// 0, at least 24 bytes, a target that is not multicast, every option of
    /// non-zero length within the message, an Ethernet-sized link-layer
    /// address option. The checksum is not checked here (see
    /// [`Icmpv6Packet::verify_checksum`]), nor the IP fields (see
    /// [`check_ip`](Self::check_ip)).
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Icmpv6Packet<&T>) -> Result<NdRepr, NdError> {
        let msg: &[u8] = packet.buffer.as_ref();
        let msg_type = packet.msg_type();
        if msg_type != kind::NEIGHBOR_SOLICIT && msg_type != kind::NEIGHBOR_ADVERT {
            return Err(NdError::NotNeighborMessage);
        }
        if packet.code() != 0 {
            return Err(NdError::Code);
        }
        let Some((fixed, options)) = msg.split_first_chunk::<NS_NA_LEN>() else {
            return Err(NdError::Truncated);
        };
        let target_bytes = fixed[HEADER_LEN..].first_chunk::<16>().unwrap_or(&[0; 16]);
        if ipv6::is_multicast(target_bytes) {
            return Err(NdError::MulticastTarget);
        }
        let target = Ipv6Addr::from(*target_bytes);
        Ok(if msg_type == kind::NEIGHBOR_SOLICIT {
            NdRepr::NeighborSolicit {
                target,
                source_ll: link_layer_option(options, nd_option::SOURCE_LL_ADDR)?,
            }
        } else {
            let flags = fixed[4];
            NdRepr::NeighborAdvert {
                router: flags & na_flag::ROUTER != 0,
                solicited: flags & na_flag::SOLICITED != 0,
                override_: flags & na_flag::OVERRIDE != 0,
                target,
                target_ll: link_layer_option(options, nd_option::TARGET_LL_ADDR)?,
            }
        })
    }

    /// The checks of RFC 4861 sections 7.1.1 and 7.1.2 on the IP header the
    /// message came in: hop limit 255; a solicitation from :: goes to a
    /// solicited-node group and carries no source link-layer address; an
    /// advertisement to a multicast address is not solicited.
    pub fn check_ip(&self, src: &Ipv6Addr, dst: &Ipv6Addr, hop_limit: u8) -> Result<(), NdError> {
        if hop_limit != ND_HOP_LIMIT {
            return Err(NdError::HopLimit);
        }
        match *self {
            NdRepr::NeighborSolicit { source_ll, .. } if src.is_unspecified() => {
                if !ipv6::is_solicited_node(&dst.octets()) {
                    return Err(NdError::UnspecifiedSourceNotToSolicitedNode);
                }
                if source_ll.is_some() {
                    return Err(NdError::UnspecifiedSourceWithLinkLayerAddress);
                }
            }
            NdRepr::NeighborAdvert {
                solicited: true, ..
            } if dst.is_multicast() => {
                return Err(NdError::SolicitedToMulticast);
            }
            _ => {}
        }
        Ok(())
    }

    /// The target address.
    pub const fn target(&self) -> Ipv6Addr {
        match *self {
            NdRepr::NeighborSolicit { target, .. } | NdRepr::NeighborAdvert { target, .. } => {
                target
            }
        }
    }

    /// Length of the message [`emit`](Self::emit) writes: 24 bytes, 32 with
    /// a link-layer address option.
    pub const fn buffer_len(&self) -> usize {
        let ll = match self {
            NdRepr::NeighborSolicit { source_ll, .. } => source_ll.is_some(),
            NdRepr::NeighborAdvert { target_ll, .. } => target_ll.is_some(),
        };
        NS_NA_LEN + if ll { LL_OPTION_LEN } else { 0 }
    }

    /// Write the whole message, from `src` to `dst` (for the checksum), at
    /// the start of `buf`. Returns its length; `None`, and nothing written,
    /// when `buf` is too short.
    pub fn emit(&self, buf: &mut [u8], src: &Ipv6Addr, dst: &Ipv6Addr) -> Option<usize> {
        let len = self.buffer_len();
        let msg = buf.get_mut(..len)?;
        let (msg_type, flags, target, ll) = match *self {
            NdRepr::NeighborSolicit { target, source_ll } => (
                kind::NEIGHBOR_SOLICIT,
                0,
                target,
                source_ll.map(|m| (nd_option::SOURCE_LL_ADDR, m)),
            ),
            NdRepr::NeighborAdvert {
                router,
                solicited,
                override_,
                target,
                target_ll,
            } => (
                kind::NEIGHBOR_ADVERT,
                (u8::from(router) * na_flag::ROUTER)
                    | (u8::from(solicited) * na_flag::SOLICITED)
                    | (u8::from(override_) * na_flag::OVERRIDE),
                target,
                target_ll.map(|m| (nd_option::TARGET_LL_ADDR, m)),
            ),
        };
        msg[..HEADER_LEN].copy_from_slice(&[msg_type, 0, 0, 0, flags, 0, 0, 0]);
        msg[HEADER_LEN..NS_NA_LEN].copy_from_slice(&target.octets());
        if let Some((opt, mac)) = ll {
            msg[NS_NA_LEN] = opt;
            msg[NS_NA_LEN + 1] = 1;
            msg[NS_NA_LEN + 2..NS_NA_LEN + LL_OPTION_LEN].copy_from_slice(&mac);
        }
        Icmpv6Packet::new_unchecked(msg).fill_checksum(src, dst);
        Some(len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ipv6::{Ipv6Repr, ALL_NODES};

    fn addr(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    /// Frames a Linux 6.18 kernel sent between two network namespaces on a
    /// veth pair (02:00:00:00:00:01 with 2001:db8::1, 02:00:00:00:00:02 with
    /// 2001:db8::2, checksum offload off), captured with dumpcap during
    /// `ping -6 -c1 -s 16 2001:db8::2`; tshark marks every checksum correct.
    mod linux {
        /// Neighbour solicitation for 2001:db8::2 from 2001:db8::1 to its
        /// solicited-node group, source link-layer address option.
        pub const NS: [u8; 86] = [
            0x33, 0x33, 0xff, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x86, 0xdd,
            0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0x02, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0xff, 0x00, 0x00, 0x02, 0x87, 0x00,
            0x1c, 0x27, 0x00, 0x00, 0x00, 0x00, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x01, 0x01, 0x02, 0x00, 0x00, 0x00,
            0x00, 0x01,
        ];
        /// The advertisement answering it: solicited and override, target
        /// link-layer address option.
        pub const NA: [u8; 86] = [
            0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x86, 0xdd,
            0x60, 0x00, 0x00, 0x00, 0x00, 0x20, 0x3a, 0xff, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x20, 0x01, 0x0d, 0xb8,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0x00,
            0x8a, 0x71, 0x60, 0x00, 0x00, 0x00, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x01, 0x02, 0x00, 0x00, 0x00,
            0x00, 0x02,
        ];
        /// The echo request, 16 bytes of data.
        pub const ECHO: [u8; 78] = [
            0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x86, 0xdd,
            0x60, 0x03, 0x68, 0x39, 0x00, 0x18, 0x3a, 0x40, 0x20, 0x01, 0x0d, 0xb8, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x20, 0x01, 0x0d, 0xb8,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x80, 0x00,
            0x13, 0x72, 0x13, 0x87, 0x00, 0x01, 0x92, 0x50, 0x13, 0x6b, 0x00, 0x00, 0x00, 0x00,
            0x52, 0x82, 0x05, 0x00, 0x00, 0x00, 0x00, 0x00,
        ];
        /// The ICMPv6 part of the kernel's echo reply (only type and
        /// checksum differ from the request's).
        pub const ECHO_REPLY_HEADER: [u8; 4] = [0x81, 0x00, 0x12, 0x72];
        /// An MLDv2 report: a Hop-by-Hop header (router alert, PadN) before
        /// the ICMPv6 message.
        pub const MLD: [u8; 90] = [
            0x33, 0x33, 0x00, 0x00, 0x00, 0x16, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x86, 0xdd,
            0x60, 0x00, 0x00, 0x00, 0x00, 0x24, 0x00, 0x01, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0xff, 0xfe, 0x00, 0x00, 0x01, 0xff, 0x02, 0x00, 0x00,
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x16, 0x3a, 0x00,
            0x05, 0x02, 0x00, 0x00, 0x01, 0x00, 0x8f, 0x00, 0x72, 0x07, 0x00, 0x00, 0x00, 0x01,
            0x04, 0x00, 0x00, 0x00, 0xff, 0x02, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x01, 0xff, 0x00, 0x00, 0x01,
        ];
    }

    /// (IPv6 view, ICMPv6 message) of an Ethernet frame.
    fn split(frame: &[u8]) -> (Ipv6Packet<&[u8]>, &[u8]) {
        let ip = Ipv6Packet::new_checked(&frame[14..]).unwrap();
        let u = ip.upper_layer().unwrap();
        let end = 14 + IPV6_HEADER_LEN + usize::from(ip.payload_len());
        (ip, &frame[14 + u.offset..end])
    }

    #[test]
    fn linux_checksums_verify_and_corruption_is_caught() {
        for frame in [&linux::NS[..], &linux::NA, &linux::ECHO, &linux::MLD] {
            let (ip, msg) = split(frame);
            let (s, d) = (ip.src_addr(), ip.dst_addr());
            let p = Icmpv6Packet::new_checked(msg).unwrap();
            assert!(p.verify_checksum(&s, &d), "{frame:02x?}");
            for at in 0..msg.len() {
                let mut m = msg.to_vec();
                m[at] ^= 0x10;
                assert!(!Icmpv6Packet::new_checked(&m[..])
                    .unwrap()
                    .verify_checksum(&s, &d));
            }
            // The pseudo-header counts: another destination fails.
            assert!(!p.verify_checksum(&s, &ALL_NODES));
        }
    }

    #[test]
    fn the_hop_by_hop_header_of_an_mld_report_is_walked_over() {
        let ip = Ipv6Packet::new_checked(&linux::MLD[14..]).unwrap();
        let u = ip.upper_layer().unwrap();
        assert_eq!(
            (u.protocol, u.offset, u.headers),
            (next_header::ICMPV6, 48, 1)
        );
        assert_eq!(linux::MLD[14 + u.offset], 143);
    }

    #[test]
    fn parses_linux_neighbour_messages() {
        let (ip, msg) = split(&linux::NS);
        let ns = NdRepr::parse(&Icmpv6Packet::new_checked(msg).unwrap()).unwrap();
        assert_eq!(
            ns,
            NdRepr::NeighborSolicit {
                target: addr("2001:db8::2"),
                source_ll: Some([2, 0, 0, 0, 0, 1]),
            }
        );
        assert_eq!(
            ns.check_ip(&ip.src_addr(), &ip.dst_addr(), ip.hop_limit()),
            Ok(())
        );
        assert_eq!(ip.dst_addr(), ipv6::solicited_node(ns.target()));
        assert_eq!(linux::NS[..6], ipv6::multicast_mac(ip.dst_addr()));

        let (ip, msg) = split(&linux::NA);
        let na = NdRepr::parse(&Icmpv6Packet::new_checked(msg).unwrap()).unwrap();
        assert_eq!(
            na,
            NdRepr::NeighborAdvert {
                router: false,
                solicited: true,
                override_: true,
                target: addr("2001:db8::2"),
                target_ll: Some([2, 0, 0, 0, 0, 2]),
            }
        );
        assert_eq!(na.check_ip(&ip.src_addr(), &ip.dst_addr(), 255), Ok(()));
    }

    /// The decoded messages, emitted again, are the kernel's bytes: the
    /// checksum included.
    #[test]
    fn emits_linux_neighbour_messages_byte_for_byte() {
        for frame in [&linux::NS[..], &linux::NA] {
            let (ip, msg) = split(frame);
            let repr = NdRepr::parse(&Icmpv6Packet::new_checked(msg).unwrap()).unwrap();
            let mut buf = [0xa5u8; 40];
            let n = repr.emit(&mut buf, &ip.src_addr(), &ip.dst_addr()).unwrap();
            assert_eq!(n, repr.buffer_len());
            assert_eq!(&buf[..n], msg);
            assert!(buf[n..].iter().all(|&b| b == 0xa5));
        }
        let ns = NdRepr::parse(&Icmpv6Packet::new_checked(split(&linux::NS).1).unwrap()).unwrap();
        let mut buf = [0u8; 32];
        assert_eq!(ns.emit(&mut buf[..31], &addr("::1"), &addr("::2")), None);
        assert_eq!(buf, [0; 32], "nothing written when it does not fit");
    }

    /// Messages emitted here, written to a pcap behind Ethernet and IPv6
    /// headers and decoded by tshark 4 (a peer implementation): it marks
    /// every checksum correct and reads the flags and options back.
    #[test]
    fn checksums_a_peer_decoder_accepts() {
        let me = addr("2001:db8::1");
        let peer = addr("2001:db8::2");
        let mac = Some([2, 0, 0, 0, 0, 0x11]);
        let group = ipv6::solicited_node(peer);
        let any = Ipv6Addr::UNSPECIFIED;
        let cases = [
            (
                NdRepr::NeighborSolicit {
                    target: peer,
                    source_ll: mac,
                },
                me,
                group,
                0x1c17,
            ),
            (
                NdRepr::NeighborSolicit {
                    target: peer,
                    source_ll: None,
                },
                any,
                group,
                0x4ceb,
            ),
            (
                NdRepr::NeighborAdvert {
                    router: true,
                    solicited: false,
                    override_: true,
                    target: me,
                    target_ll: mac,
                },
                me,
                ALL_NODES,
                0x791a,
            ),
        ];
        for (repr, src, dst, sum) in cases {
            let mut buf = [0u8; 32];
            let n = repr.emit(&mut buf, &src, &dst).unwrap();
            assert_eq!(
                Icmpv6Packet::new_checked(&buf[..n]).unwrap().checksum(),
                sum,
                "{repr:?}"
            );
        }
    }

    #[test]
    fn nd_round_trips_every_flag_and_option() {
        let mut rng = fastrand::Rng::with_seed(0x4861_4861);
        for _ in 0..2000 {
            let target = Ipv6Addr::from(rng.u128(..) & !(0xff << 120));
            let ll = rng.bool().then(|| {
                let mut m = [0u8; 6];
                rng.fill(&mut m);
                m
            });
            let repr = if rng.bool() {
                NdRepr::NeighborSolicit {
                    target,
                    source_ll: ll,
                }
            } else {
                NdRepr::NeighborAdvert {
                    router: rng.bool(),
                    solicited: rng.bool(),
                    override_: rng.bool(),
                    target,
                    target_ll: ll,
                }
            };
            let (s, d) = (Ipv6Addr::from(rng.u128(..)), Ipv6Addr::from(rng.u128(..)));
            let mut buf = [0u8; 32];
            let n = repr.emit(&mut buf, &s, &d).unwrap();
            let p = Icmpv6Packet::new_checked(&buf[..n]).unwrap();
            assert!(p.verify_checksum(&s, &d));
            assert_eq!(NdRepr::parse(&p), Ok(repr));
        }
    }

    fn ns_with_options(options: &[u8]) -> Vec<u8> {
        let mut m = vec![kind::NEIGHBOR_SOLICIT, 0, 0, 0, 0, 0, 0, 0];
        m.extend(addr("2001:db8::2").octets());
        m.extend_from_slice(options);
        m
    }

    fn parse(m: &[u8]) -> Result<NdRepr, NdError> {
        NdRepr::parse(&Icmpv6Packet::new_checked(m).unwrap())
    }

    #[test]
    fn options_of_length_zero_or_past_the_end_are_refused() {
        let sll = [1, 1, 2, 0, 0, 0, 0, 1];
        let nonce = [14, 1, 1, 2, 3, 4, 5, 6];
        assert!(parse(&ns_with_options(&[&nonce[..], &sll].concat())).is_ok());
        // Length 0, before or after the option we want (an endless loop in
        // a walker that trusts it).
        for opts in [
            [&[1u8, 0, 2, 0, 0, 0, 0, 1][..], &sll].concat(),
            [&sll[..], &[14, 0, 0, 0, 0, 0, 0, 0]].concat(),
            vec![99, 0],
        ] {
            assert_eq!(
                parse(&ns_with_options(&opts)),
                Err(NdError::ZeroLengthOption),
                "{opts:?}"
            );
        }
        for opts in [&sll[..7], &[14, 2, 0, 0, 0, 0, 0, 0, 0][..], &[1][..]] {
            assert_eq!(
                parse(&ns_with_options(opts)),
                Err(NdError::OptionTruncated),
                "{opts:?}"
            );
        }
        assert_eq!(
            parse(&ns_with_options(&[
                1, 2, 2, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0
            ])),
            Err(NdError::LinkLayerOptionLength)
        );
        // Unknown options are skipped; the first source address counts.
        let two = [
            &[77u8, 1, 9, 9, 9, 9, 9, 9][..],
            &sll,
            &[1, 1, 9, 9, 9, 9, 9, 9],
        ]
        .concat();
        assert_eq!(
            parse(&ns_with_options(&two)),
            Ok(NdRepr::NeighborSolicit {
                target: addr("2001:db8::2"),
                source_ll: Some([2, 0, 0, 0, 0, 1]),
            })
        );
        // A target link-layer option in a solicitation is not its source.
        let tll = [2u8, 1, 2, 0, 0, 0, 0, 7];
        assert_eq!(
            parse(&ns_with_options(&tll)),
            Ok(NdRepr::NeighborSolicit {
                target: addr("2001:db8::2"),
                source_ll: None,
            })
        );
    }

    #[test]
    fn message_checks_name_what_is_wrong() {
        let ns = ns_with_options(&[]);
        assert!(parse(&ns).is_ok());
        assert_eq!(parse(&ns[..23]), Err(NdError::Truncated));
        let mut bad = ns.clone();
        bad[1] = 1;
        assert_eq!(parse(&bad), Err(NdError::Code));
        let mut bad = ns.clone();
        bad[0] = kind::ROUTER_SOLICIT;
        assert_eq!(parse(&bad), Err(NdError::NotNeighborMessage));
        let mut bad = ns.clone();
        bad[8] = 0xff;
        assert_eq!(parse(&bad), Err(NdError::MulticastTarget));
        for e in [
            NdError::Code,
            NdError::HopLimit,
            NdError::SolicitedToMulticast,
        ] {
            assert!(e.reason().starts_with("nd_") && !e.to_string().is_empty());
        }
    }

    #[test]
    fn ip_checks_of_rfc_4861() {
        let me = addr("2001:db8::1");
        let target = addr("2001:db8::2");
        let group = ipv6::solicited_node(target);
        let ns = NdRepr::NeighborSolicit {
            target,
            source_ll: Some([2, 0, 0, 0, 0, 1]),
        };
        assert_eq!(ns.check_ip(&me, &group, 255), Ok(()));
        assert_eq!(ns.check_ip(&me, &target, 255), Ok(()), "unicast probe");
        for hl in [0, 1, 64, 254] {
            assert_eq!(ns.check_ip(&me, &group, hl), Err(NdError::HopLimit));
        }
        // Duplicate address detection: from ::, to the group, no option.
        let dad = NdRepr::NeighborSolicit {
            target,
            source_ll: None,
        };
        let any = Ipv6Addr::UNSPECIFIED;
        assert_eq!(dad.check_ip(&any, &group, 255), Ok(()));
        assert_eq!(
            dad.check_ip(&any, &target, 255),
            Err(NdError::UnspecifiedSourceNotToSolicitedNode)
        );
        assert_eq!(
            dad.check_ip(&any, &ALL_NODES, 255),
            Err(NdError::UnspecifiedSourceNotToSolicitedNode)
        );
        assert_eq!(
            ns.check_ip(&any, &group, 255),
            Err(NdError::UnspecifiedSourceWithLinkLayerAddress)
        );
        // Advertisements: solicited ones go to the soliciting unicast address.
        let na = |solicited| NdRepr::NeighborAdvert {
            router: true,
            solicited,
            override_: false,
            target,
            target_ll: None,
        };
        assert_eq!(na(true).check_ip(&target, &me, 255), Ok(()));
        assert_eq!(na(false).check_ip(&target, &ALL_NODES, 255), Ok(()));
        assert_eq!(
            na(true).check_ip(&target, &ALL_NODES, 255),
            Err(NdError::SolicitedToMulticast)
        );
        assert_eq!(na(false).check_ip(&target, &me, 1), Err(NdError::HopLimit));
    }

    #[test]
    fn echo_reply_to_the_linux_request_is_the_kernel_s() {
        let (ip, msg) = split(&linux::ECHO);
        let req = EchoRepr::parse(&Icmpv6Packet::new_checked(msg).unwrap()).unwrap();
        assert_eq!(
            req,
            EchoRepr {
                msg_type: kind::ECHO_REQUEST,
                ident: 0x1387,
                seq_no: 1,
                data_len: 16
            }
        );
        let mut buf = [0xa5u8; 40];
        let n = emit_echo_reply(&mut buf, msg, &ip.dst_addr(), &ip.src_addr()).unwrap();
        assert_eq!(n, msg.len());
        assert_eq!(buf[..4], linux::ECHO_REPLY_HEADER);
        assert_eq!(buf[4..n], msg[4..]);
        assert!(buf[n..].iter().all(|&b| b == 0xa5));
        // Not for a reply, not into a short buffer.
        assert_eq!(
            emit_echo_reply(&mut [0u8; 40], &buf[..n], &ip.dst_addr(), &ip.src_addr()),
            None
        );
        assert_eq!(
            emit_echo_reply(&mut [0u8; 23], msg, &ip.dst_addr(), &ip.src_addr()),
            None
        );
    }

    /// An IPv6 packet of `payload_len` bytes of `next` from `src` to `dst`,
    /// with `extra` bytes of padding after it.
    fn packet(src: &str, dst: &str, next: u8, payload: &[u8], extra: usize) -> Vec<u8> {
        let repr = Ipv6Repr {
            src_addr: addr(src),
            dst_addr: addr(dst),
            next_header: next,
            payload_len: payload.len(),
            hop_limit: 1,
            traffic_class: 0,
            flow_label: 0,
        };
        let mut buf = vec![0u8; IPV6_HEADER_LEN];
        repr.emit(&mut Ipv6Packet::new_unchecked(&mut buf[..]));
        buf.extend_from_slice(payload);
        buf.extend(std::iter::repeat_n(0xee, extra));
        buf
    }

    #[test]
    fn errors_quote_the_packet_up_to_1280_bytes_in_all() {
        let me = addr("2001:db8:1::1");
        let to = addr("2001:db8::1");
        for payload_len in [0usize, 8, 100, 1191, 1192, 1193, 1400, 9000] {
            let payload: Vec<u8> = (0..payload_len).map(|i| i as u8).collect();
            let orig = packet("2001:db8::1", "2001:db8:2::2", 17, &payload, 4);
            let whole = IPV6_HEADER_LEN + payload_len;
            for error in [
                ErrorRepr::TimeExceeded(time_exceeded::HOP_LIMIT),
                ErrorRepr::DestUnreachable(unreachable::NO_ROUTE),
                ErrorRepr::DestUnreachable(unreachable::BEYOND_SCOPE),
                ErrorRepr::DestUnreachable(unreachable::ADDRESS_UNREACHABLE),
                ErrorRepr::PacketTooBig { mtu: 1400 },
            ] {
                let mut buf = vec![0xa5u8; 1500];
                let n = emit_error(&mut buf, error, &orig, &me, &to).unwrap();
                assert_eq!(n, error_message_len(&orig));
                assert_eq!(n, HEADER_LEN + whole.min(MAX_QUOTE), "{payload_len}");
                assert!(IPV6_HEADER_LEN + n <= MIN_MTU, "{payload_len}");
                assert_eq!(
                    buf[HEADER_LEN..n],
                    orig[..n - HEADER_LEN],
                    "padding never quoted"
                );
                assert!(buf[n..].iter().all(|&b| b == 0xa5));
                let p = Icmpv6Packet::new_checked(&buf[..n]).unwrap();
                assert!(p.verify_checksum(&me, &to));
                assert_eq!(ErrorRepr::parse(&p), Some(error));
                let (t, c, w) = error.fields();
                assert_eq!((p.msg_type(), p.code(), p.word()), (t, c, w));
            }
        }
        let orig = packet("2001:db8::1", "2001:db8:2::2", 17, &[0; 1400], 0);
        assert_eq!(IPV6_HEADER_LEN + error_message_len(&orig), 1280);
    }

    /// A packet too big as Linux's `icmp6_send` writes it (RFC 4443 section
    /// 3.2), laid out by hand: type 2, code 0, the MTU, the quote.
    #[test]
    fn packet_too_big_byte_for_byte() {
        let orig = packet("2001:db8::1", "2001:db8:2::2", 59, &[], 0);
        let (me, to) = (addr("2001:db8:1::1"), addr("2001:db8::1"));
        let mut buf = [0u8; 48];
        let n = emit_error(
            &mut buf,
            ErrorRepr::PacketTooBig { mtu: 1400 },
            &orig,
            &me,
            &to,
        );
        assert_eq!(n, Some(48));
        let mut want = vec![2u8, 0, 0, 0, 0, 0, 0x05, 0x78];
        want.extend_from_slice(&orig);
        let c = ipv6::upper_layer_checksum(&me, &to, 58, &want);
        want[2..4].copy_from_slice(&c.to_be_bytes());
        assert_eq!(buf[..], want[..]);
    }

    #[test]
    fn emit_error_refuses_what_is_not_ipv6_or_does_not_fit() {
        let orig = packet("2001:db8::1", "2001:db8:2::2", 17, &[0; 16], 0);
        let (me, to) = (addr("2001:db8:1::1"), addr("2001:db8::1"));
        let e = ErrorRepr::TimeExceeded(0);
        let need = error_message_len(&orig);
        for short in 0..need {
            let mut buf = vec![0xa5u8; short];
            assert_eq!(emit_error(&mut buf, e, &orig, &me, &to), None, "{short}");
            assert!(buf.iter().all(|&b| b == 0xa5));
        }
        let mut v4 = orig.clone();
        v4[0] = 0x45;
        for bad in [&orig[..39], &v4[..]] {
            assert_eq!(error_message_len(bad), 0);
            assert_eq!(emit_error(&mut [0u8; 128], e, bad, &me, &to), None);
        }
    }

    #[test]
    fn errors_are_never_about_errors_multicast_or_nobody() {
        let te = ErrorRepr::TimeExceeded(0);
        let ptb = ErrorRepr::PacketTooBig { mtu: 1280 };
        let udp = packet("2001:db8::1", "2001:db8:2::2", 17, &[0; 8], 0);
        assert_eq!(error_allowed(&te, &udp), Ok(()));
        // About an ICMPv6 error or redirect: never; about an echo: yes.
        for (t, ok) in [
            (1u8, false),
            (2, false),
            (3, false),
            (4, false),
            (127, false),
            (137, false),
            (128, true),
            (129, true),
            (135, true),
        ] {
            let icmp = packet(
                "2001:db8::1",
                "2001:db8:2::2",
                58,
                &[t, 0, 0, 0, 0, 0, 0, 0],
                0,
            );
            assert_eq!(error_allowed(&te, &icmp).is_ok(), ok, "type {t}");
            if !ok {
                assert_eq!(error_allowed(&ptb, &icmp), Err(Ineligible::AboutAnError));
            }
        }
        // Behind extension headers too.
        let mut chain = vec![58u8, 0, 1, 4, 0, 0, 0, 0];
        chain.extend([3u8, 0, 0, 0, 0, 0, 0, 0]);
        let behind = packet("2001:db8::1", "2001:db8:2::2", 60, &chain, 0);
        assert_eq!(error_allowed(&te, &behind), Err(Ineligible::AboutAnError));
        // A non-first fragment of ICMPv6: its first byte is data, not a type.
        let frag = packet(
            "2001:db8::1",
            "2001:db8:2::2",
            44,
            &[58, 0, 0, 8, 0, 0, 0, 1, 3, 0],
            0,
        );
        assert_eq!(error_allowed(&te, &frag), Ok(()));
        // Multicast destinations: only packet too big and parameter problem 2.
        let mc = packet("2001:db8::1", "ff0e::1", 17, &[0; 8], 0);
        assert_eq!(
            error_allowed(&te, &mc),
            Err(Ineligible::MulticastDestination)
        );
        assert_eq!(
            error_allowed(&ErrorRepr::DestUnreachable(0), &mc),
            Err(Ineligible::MulticastDestination)
        );
        assert_eq!(error_allowed(&ptb, &mc), Ok(()));
        let pp = |code| ErrorRepr::ParamProblem { code, pointer: 40 };
        assert_eq!(error_allowed(&pp(param_problem::OPTION), &mc), Ok(()));
        assert_eq!(
            error_allowed(&pp(param_problem::HEADER_FIELD), &mc),
            Err(Ineligible::MulticastDestination)
        );
        // Sources that name nobody.
        for src in ["::", "ff02::1"] {
            let p = packet(src, "2001:db8:2::2", 17, &[0; 8], 0);
            assert_eq!(
                error_allowed(&ptb, &p),
                Err(Ineligible::SourceNotUnique),
                "{src}"
            );
        }
        assert_eq!(error_allowed(&te, &udp[..39]), Err(Ineligible::NotIpv6));
        for r in [
            Ineligible::NotIpv6,
            Ineligible::AboutAnError,
            Ineligible::MulticastDestination,
            Ineligible::SourceNotUnique,
        ] {
            assert!(r.reason().starts_with("icmpv6_error_") && !r.to_string().is_empty());
        }
    }

    #[test]
    fn accessors_never_panic_on_any_length() {
        let (s, d) = (addr("::1"), addr("::2"));
        for len in HEADER_LEN..HEADER_LEN + 40 {
            for fill in [0u8, 0x87, 0xff] {
                let mut buf = vec![fill; len];
                let p = Icmpv6Packet::new_checked(&buf[..]).unwrap();
                let _ = (
                    p.msg_type(),
                    p.code(),
                    p.checksum(),
                    p.ident(),
                    p.seq_no(),
                    p.word(),
                );
                let _ = (NdRepr::parse(&p), EchoRepr::parse(&p), ErrorRepr::parse(&p));
                assert_eq!(p.body().len(), len - HEADER_LEN);
                let mut p = Icmpv6Packet::new_checked(&mut buf[..]).unwrap();
                p.set_word(u32::from(fill));
                p.fill_checksum(&s, &d);
                assert!(p.verify_checksum(&s, &d));
                assert_eq!(p.body_mut().len(), len - HEADER_LEN);
            }
        }
        assert_eq!(
            Icmpv6Packet::new_checked(&[0u8; 7][..]),
            Err(Error::Truncated)
        );
    }
}
