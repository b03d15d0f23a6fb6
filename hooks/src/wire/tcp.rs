//! TCP header (RFC 9293 section 3.1): ports, sequence and acknowledgment
//! numbers, data offset, flags, window, checksum, urgent pointer (20 bytes),
//! then up to 40 bytes of options. The checksum covers the IPv4
//! pseudo-header, the header and the data.
//!
//! A [`TcpPacket`] views the IPv4 payload ([`Ipv4Packet::payload`]), never
//! the Ethernet padding after it. The flags are the low 8 bits of the flags
//! field (CWR to FIN, as `flow::tcp_flag` names them).
//!
//! [`Ipv4Packet::payload`]: super::Ipv4Packet::payload

use super::{be16, checksum, set_be16, Error};
use std::net::Ipv4Addr;

/// Length of the header without options (data offset 5).
pub const MIN_HEADER_LEN: usize = 20;
/// Length of the header with the most options (data offset 15).
pub const MAX_HEADER_LEN: usize = 60;
/// The IPv4 protocol number of TCP.
pub const PROTOCOL: u8 = 6;

const SRC_PORT: usize = 0;
const DST_PORT: usize = 2;
const SEQ: usize = 4;
const ACK: usize = 8;
const OFFSET: usize = 12;
const FLAGS: usize = 13;
const WINDOW: usize = 14;
const CHECKSUM: usize = 16;
const URGENT: usize = 18;
const ZERO: [u8; MIN_HEADER_LEN] = [0; MIN_HEADER_LEN];

/// Big-endian `u32` at `at` of the fixed header.
#[inline(always)]
const fn be32(h: &[u8; MIN_HEADER_LEN], at: usize) -> u32 {
    u32::from_be_bytes([h[at], h[at + 1], h[at + 2], h[at + 3]])
}

/// A view of a TCP segment at the start of `buffer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> TcpPacket<T> {
    /// View `buffer`: it must hold 20 bytes, the data offset must be at
    /// least 5 and the whole header must fit.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let b = buffer.as_ref();
        let Some(&offset) = b.get(OFFSET) else {
            return Err(Error::Truncated);
        };
        if b.len() < MIN_HEADER_LEN {
            return Err(Error::Truncated);
        }
        let header_len = usize::from(offset >> 4) * 4;
        if header_len < MIN_HEADER_LEN {
            return Err(Error::Malformed);
        }
        if b.len() < header_len {
            return Err(Error::Truncated);
        }
        Ok(TcpPacket { buffer })
    }

    /// View `buffer` without any check, to write a header into it (see
    /// [`TcpRepr::emit`]). Accessors still never panic.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        TcpPacket { buffer }
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline(always)]
    fn header(&self) -> &[u8; MIN_HEADER_LEN] {
        // Always `Some` after `new_checked`; the fallback keeps this panic-free.
        self.buffer.as_ref().first_chunk().unwrap_or(&ZERO)
    }

    /// Source port.
    #[inline]
    pub fn src_port(&self) -> u16 {
        be16(self.header(), SRC_PORT)
    }

    /// Destination port.
    #[inline]
    pub fn dst_port(&self) -> u16 {
        be16(self.header(), DST_PORT)
    }

    /// Sequence number.
    #[inline]
    pub fn seq_number(&self) -> u32 {
        be32(self.header(), SEQ)
    }

    /// Acknowledgment number.
    #[inline]
    pub fn ack_number(&self) -> u32 {
        be32(self.header(), ACK)
    }

    /// Header length in bytes (data offset × 4), options included.
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.header()[OFFSET] >> 4) * 4
    }

    /// Flags: CWR, ECE, URG, ACK, PSH, RST, SYN, FIN from high bit to low.
    #[inline]
    pub fn flags(&self) -> u8 {
        self.header()[FLAGS]
    }

    /// Receive window (unscaled).
    #[inline]
    pub fn window(&self) -> u16 {
        be16(self.header(), WINDOW)
    }

    /// Checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(self.header(), CHECKSUM)
    }

    /// Urgent pointer.
    #[inline]
    pub fn urgent(&self) -> u16 {
        be16(self.header(), URGENT)
    }

    /// Options: the header bytes after the first 20 (clamped to the buffer).
    #[inline]
    pub fn options(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        b.get(MIN_HEADER_LEN..self.header_len().min(b.len()))
            .unwrap_or(&[])
    }

    /// Data: everything after the header.
    #[inline]
    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(self.header_len()..).unwrap_or(&[])
    }

    /// The checksum is right for a segment (the whole buffer) from `src` to
    /// `dst`.
    #[inline]
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        let b = self.buffer.as_ref();
        let length = u16::try_from(b.len()).unwrap_or(u16::MAX);
        checksum::combine(
            checksum::pseudo_header(src, dst, PROTOCOL, length),
            checksum::sum(b),
        ) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> TcpPacket<T> {
    #[inline(always)]
    fn header_mut(&mut self) -> Option<&mut [u8; MIN_HEADER_LEN]> {
        self.buffer.as_mut().first_chunk_mut()
    }

    #[inline(always)]
    fn set_be32(&mut self, at: usize, v: u32) {
        if let Some(h) = self.header_mut() {
            h[at..at + 4].copy_from_slice(&v.to_be_bytes());
        }
    }

    /// Set the source port.
    #[inline]
    pub fn set_src_port(&mut self, value: u16) {
        if let Some(h) = self.header_mut() {
            set_be16(h, SRC_PORT, value);
        }
    }

    /// Set the destination port.
    #[inline]
    pub fn set_dst_port(&mut self, value: u16) {
        if let Some(h) = self.header_mut() {
            set_be16(h, DST_PORT, value);
        }
    }

    /// Set the sequence number.
    #[inline]
    pub fn set_seq_number(&mut self, value: u32) {
        self.set_be32(SEQ, value);
    }

    /// Set the acknowledgment number.
    #[inline]
    pub fn set_ack_number(&mut self, value: u32) {
        self.set_be32(ACK, value);
    }

    /// Set the header length in bytes (stored as the data offset, length / 4;
    /// the reserved bits are cleared).
    #[inline]
    pub fn set_header_len(&mut self, len: usize) {
        if let Some(h) = self.header_mut() {
            h[OFFSET] = ((len / 4) as u8) << 4;
        }
    }

    /// Set the flags.
    #[inline]
    pub fn set_flags(&mut self, value: u8) {
        if let Some(h) = self.header_mut() {
            h[FLAGS] = value;
        }
    }

    /// Set the window.
    #[inline]
    pub fn set_window(&mut self, value: u16) {
        if let Some(h) = self.header_mut() {
            set_be16(h, WINDOW, value);
        }
    }

    /// Set the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, value: u16) {
        if let Some(h) = self.header_mut() {
            set_be16(h, CHECKSUM, value);
        }
    }

    /// Set the urgent pointer.
    #[inline]
    pub fn set_urgent(&mut self, value: u16) {
        if let Some(h) = self.header_mut() {
            set_be16(h, URGENT, value);
        }
    }

    /// Options, writable (the header bytes after the first 20).
    #[inline]
    pub fn options_mut(&mut self) -> &mut [u8] {
        let end = self.header_len();
        let b = self.buffer.as_mut();
        let end = end.min(b.len());
        b.get_mut(MIN_HEADER_LEN..end).unwrap_or(&mut [])
    }

    /// Compute the checksum of the segment (the whole buffer) from `src` to
    /// `dst` and store it.
    #[inline]
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        self.set_checksum(0);
        let c = checksum::transport(src, dst, PROTOCOL, self.buffer.as_ref());
        self.set_checksum(c);
    }
}

/// A TCP header, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TcpRepr<'a> {
    pub src_port: u16,
    pub dst_port: u16,
    pub seq_number: u32,
    pub ack_number: u32,
    /// `flow::tcp_flag` bits.
    pub flags: u8,
    pub window: u16,
    pub urgent: u16,
    /// Option bytes; [`emit`](Self::emit) pads them with zeros (End of
    /// Option List) to a multiple of 4 and writes at most 40.
    pub options: &'a [u8],
    /// Length of the data after the header.
    pub payload_len: usize,
}

impl<'a> TcpRepr<'a> {
    /// Decode `packet`, a whole segment (its data is the rest of the
    /// buffer). The checksum is not checked here: see
    /// [`TcpPacket::verify_checksum`].
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &TcpPacket<&'a T>) -> TcpRepr<'a> {
        let buffer: &'a [u8] = packet.buffer.as_ref();
        let header_len = packet.header_len().min(buffer.len());
        TcpRepr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            seq_number: packet.seq_number(),
            ack_number: packet.ack_number(),
            flags: packet.flags(),
            window: packet.window(),
            urgent: packet.urgent(),
            options: buffer.get(MIN_HEADER_LEN..header_len).unwrap_or(&[]),
            payload_len: buffer.len() - header_len,
        }
    }

    /// Length of the header [`emit`](Self::emit) writes: 20 bytes and the
    /// options, padded to a multiple of 4, at most 60.
    #[inline]
    pub const fn header_len(&self) -> usize {
        let options = if self.options.len() > MAX_HEADER_LEN - MIN_HEADER_LEN {
            MAX_HEADER_LEN - MIN_HEADER_LEN
        } else {
            self.options.len()
        };
        MIN_HEADER_LEN + options.div_ceil(4) * 4
    }

    /// Length of the whole segment: header and data.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        self.header_len() + self.payload_len
    }

    /// Write the header of a segment from `src` to `dst`, options and
    /// checksum included. `packet` must view exactly the segment, its data
    /// already in place after the header: the checksum covers it.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        packet: &mut TcpPacket<&mut T>,
        src: Ipv4Addr,
        dst: Ipv4Addr,
    ) {
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_seq_number(self.seq_number);
        packet.set_ack_number(self.ack_number);
        packet.set_header_len(self.header_len());
        packet.set_flags(self.flags);
        packet.set_window(self.window);
        packet.set_urgent(self.urgent);
        let options = packet.options_mut();
        let n = self.options.len().min(options.len());
        options[..n].copy_from_slice(&self.options[..n]);
        options[n..].fill(0);
        packet.fill_checksum(src, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);

    /// A SYN captured on a Linux veth with checksum offload off (AF_PACKET):
    /// 192.0.2.1.40001 > 192.0.2.2.9, seq 0x5c7d7e01, window 64240, options
    /// MSS 1460, SACK permitted, timestamps, NOP, window scale 10.
    const SYN: [u8; 40] = [
        0x9c, 0x41, 0x00, 0x09, 0x5c, 0x7d, 0x7e, 0x01, 0x00, 0x00, 0x00, 0x00, 0xa0, 0x02, 0xfa,
        0xf0, 0xbb, 0xc2, 0x00, 0x00, 0x02, 0x04, 0x05, 0xb4, 0x04, 0x02, 0x08, 0x0a, 0xa4, 0x5e,
        0xf2, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x01, 0x03, 0x03, 0x0a,
    ];

    #[test]
    fn new_checked_needs_the_whole_header() {
        for len in 0..MIN_HEADER_LEN {
            assert_eq!(TcpPacket::new_checked(&SYN[..len]), Err(Error::Truncated));
        }
        assert_eq!(
            TcpPacket::new_checked(&SYN[..39]),
            Err(Error::Truncated),
            "options cut"
        );
        let mut short_offset = SYN;
        short_offset[OFFSET] = 0x40;
        assert_eq!(
            TcpPacket::new_checked(&short_offset[..]),
            Err(Error::Malformed)
        );
    }

    #[test]
    fn reads_a_captured_syn() {
        let p = TcpPacket::new_checked(&SYN[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port()), (40001, 9));
        assert_eq!((p.seq_number(), p.ack_number()), (0x5c7d_7e01, 0));
        assert_eq!((p.header_len(), p.flags(), p.window()), (40, 0x02, 64240));
        assert_eq!((p.checksum(), p.urgent()), (0xbbc2, 0));
        assert_eq!(p.options(), &SYN[20..]);
        assert!(p.payload().is_empty());
        assert!(p.verify_checksum(SRC, DST));
        assert!(!p.verify_checksum(SRC, Ipv4Addr::new(192, 0, 2, 3)));
    }

    #[test]
    fn emit_gives_the_captured_bytes() {
        let repr = TcpRepr::parse(&TcpPacket::new_checked(&SYN[..]).unwrap());
        assert_eq!((repr.header_len(), repr.buffer_len()), (40, 40));
        let mut buf = [0xa5u8; 40];
        repr.emit(&mut TcpPacket::new_unchecked(&mut buf[..]), SRC, DST);
        assert_eq!(buf, SYN);
    }

    #[test]
    fn round_trips_and_verifies() {
        let options = [2, 4, 5, 0xb4, 1, 3, 3, 7, 4, 2, 1, 1];
        for payload_len in [0, 1, 7, 100] {
            for (i, flags) in [0x02u8, 0x12, 0x10, 0x11, 0x04, 0x18, 0xff]
                .iter()
                .enumerate()
            {
                let repr = TcpRepr {
                    src_port: 1000 + i as u16,
                    dst_port: 443,
                    seq_number: 0x8000_0000 ^ i as u32,
                    ack_number: !(i as u32),
                    flags: *flags,
                    window: 0xffff >> i,
                    urgent: i as u16,
                    options: &options[..(i % 4) * 4],
                    payload_len,
                };
                let mut buf: Vec<u8> = (0..repr.buffer_len()).map(|b| b as u8).collect();
                repr.emit(&mut TcpPacket::new_unchecked(&mut buf[..]), SRC, DST);
                let p = TcpPacket::new_checked(&buf[..]).unwrap();
                assert!(p.verify_checksum(SRC, DST));
                assert_eq!(TcpRepr::parse(&p), repr);
                assert_eq!(p.payload().len(), payload_len);
            }
        }
    }

    #[test]
    fn options_are_padded() {
        let repr = TcpRepr {
            src_port: 1,
            dst_port: 2,
            seq_number: 3,
            ack_number: 4,
            flags: 0x02,
            window: 5,
            urgent: 0,
            options: &[1, 3, 3, 7, 1],
            payload_len: 0,
        };
        assert_eq!(repr.header_len(), 28);
        let mut buf = [0xffu8; 28];
        repr.emit(&mut TcpPacket::new_unchecked(&mut buf[..]), SRC, DST);
        assert_eq!(buf[20..], [1, 3, 3, 7, 1, 0, 0, 0]);
        assert_eq!(buf[OFFSET], 0x70);
    }

    #[test]
    fn accessors_never_panic_on_any_length() {
        for len in 0..=MAX_HEADER_LEN + 8 {
            for fill in [0x00u8, 0x50, 0xff] {
                let mut buf = vec![fill; len];
                let p = TcpPacket::new_unchecked(&buf[..]);
                let _ = (
                    p.options(),
                    p.payload(),
                    p.verify_checksum(SRC, DST),
                    TcpRepr::parse(&p),
                );
                let mut p = TcpPacket::new_unchecked(&mut buf[..]);
                p.set_seq_number(1);
                p.fill_checksum(SRC, DST);
                let _ = p.options_mut();
            }
        }
    }
}
