//! UDP header (RFC 768): source and destination port, length, checksum
//! (8 bytes). The checksum covers the IPv4 pseudo-header, the header and the
//! data; zero means the sender computed none.
//!
//! A [`UdpPacket`] views the IPv4 payload ([`Ipv4Packet::payload`]), never the
//! Ethernet padding after it.
//!
//! [`Ipv4Packet::payload`]: super::Ipv4Packet::payload

use super::{be16, checksum, set_be16, Error};
use std::net::Ipv4Addr;

/// Length of the UDP header.
pub const HEADER_LEN: usize = 8;
/// The IPv4 protocol number of UDP.
pub const PROTOCOL: u8 = 17;

const SRC_PORT: usize = 0;
const DST_PORT: usize = 2;
const LENGTH: usize = 4;
const CHECKSUM: usize = 6;
const ZERO: [u8; HEADER_LEN] = [0; HEADER_LEN];

/// A view of a UDP datagram at the start of `buffer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// View `buffer`, which must hold the 8-byte header. The length field
    /// is not checked here.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(UdpPacket { buffer })
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

    /// Length field: header and data, in bytes.
    #[inline]
    pub fn length(&self) -> u16 {
        be16(self.header(), LENGTH)
    }

    /// Checksum field (0: none computed).
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(self.header(), CHECKSUM)
    }

    /// The datagram as far as the length field says, but at least the
    /// header, clamped to the buffer: what the checksum covers.
    #[inline]
    fn datagram(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let end = usize::from(self.length()).max(HEADER_LEN).min(b.len());
        &b[..end]
    }

    /// Data: after the header, up to the length field (clamped).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        self.datagram().get(HEADER_LEN..).unwrap_or(&[])
    }

    /// The checksum is right for a datagram from `src` to `dst`, or is zero
    /// (none computed).
    #[inline]
    pub fn verify_checksum(&self, src: Ipv4Addr, dst: Ipv4Addr) -> bool {
        if self.checksum() == 0 {
            return true;
        }
        let d = self.datagram();
        let length = u16::try_from(d.len()).unwrap_or(u16::MAX);
        checksum::combine(
            checksum::pseudo_header(src, dst, PROTOCOL, length),
            checksum::sum(d),
        ) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    #[inline(always)]
    fn header_mut(&mut self) -> Option<&mut [u8; HEADER_LEN]> {
        self.buffer.as_mut().first_chunk_mut()
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

    /// Set the length field.
    #[inline]
    pub fn set_length(&mut self, value: u16) {
        if let Some(h) = self.header_mut() {
            set_be16(h, LENGTH, value);
        }
    }

    /// Set the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, value: u16) {
        if let Some(h) = self.header_mut() {
            set_be16(h, CHECKSUM, value);
        }
    }

    /// Data, writable: after the header, up to the length field (clamped).
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let end = usize::from(self.length());
        let b = self.buffer.as_mut();
        let end = end.min(b.len());
        b.get_mut(HEADER_LEN..end).unwrap_or(&mut [])
    }

    /// Compute the checksum of a datagram from `src` to `dst` (as far as
    /// the length field says) and store it; a sum of zero is sent as 0xffff,
    /// since zero means none (RFC 768).
    #[inline]
    pub fn fill_checksum(&mut self, src: Ipv4Addr, dst: Ipv4Addr) {
        self.set_checksum(0);
        let c = checksum::transport(src, dst, PROTOCOL, self.datagram());
        self.set_checksum(if c == 0 { 0xffff } else { c });
    }
}

/// A UDP header, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UdpRepr {
    pub src_port: u16,
    pub dst_port: u16,
    /// Length of the data after the header.
    pub payload_len: usize,
}

impl UdpRepr {
    /// Decode `packet`: refuses ([`Error::Malformed`]) a length field
    /// shorter than the header and ([`Error::Truncated`]) one past the
    /// buffer. The checksum is not checked here: see
    /// [`UdpPacket::verify_checksum`].
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &UdpPacket<&T>) -> Result<UdpRepr, Error> {
        let len = usize::from(packet.length());
        if len < HEADER_LEN {
            return Err(Error::Malformed);
        }
        if len > packet.buffer.as_ref().len() {
            return Err(Error::Truncated);
        }
        Ok(UdpRepr {
            src_port: packet.src_port(),
            dst_port: packet.dst_port(),
            payload_len: len - HEADER_LEN,
        })
    }

    /// Length of the header [`emit`](Self::emit) writes.
    #[inline]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Length of the whole datagram: header and data.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.payload_len
    }

    /// Write the header of a datagram from `src` to `dst`, with its length
    /// and checksum. The data must already be in place after the header:
    /// the checksum covers it.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(
        &self,
        packet: &mut UdpPacket<&mut T>,
        src: Ipv4Addr,
        dst: Ipv4Addr,
    ) {
        packet.set_src_port(self.src_port);
        packet.set_dst_port(self.dst_port);
        packet.set_length(u16::try_from(self.buffer_len()).unwrap_or(u16::MAX));
        packet.fill_checksum(src, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 1);
    const DST: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 2);

    /// A datagram captured on a Linux veth with checksum offload off
    /// (AF_PACKET): 192.0.2.1.40000 > 192.0.2.2.7, "fastpath".
    const CAPTURED: [u8; 16] = [
        0x9c, 0x40, 0x00, 0x07, 0x00, 0x10, 0x20, 0xe3, b'f', b'a', b's', b't', b'p', b'a', b't',
        b'h',
    ];

    #[test]
    fn new_checked_needs_the_header() {
        for len in 0..HEADER_LEN {
            assert_eq!(
                UdpPacket::new_checked(&CAPTURED[..len]),
                Err(Error::Truncated)
            );
        }
        assert!(UdpPacket::new_checked(&CAPTURED[..HEADER_LEN]).is_ok());
    }

    #[test]
    fn reads_a_captured_datagram() {
        let p = UdpPacket::new_checked(&CAPTURED[..]).unwrap();
        assert_eq!((p.src_port(), p.dst_port(), p.length()), (40000, 7, 16));
        assert_eq!(p.checksum(), 0x20e3);
        assert_eq!(p.payload(), b"fastpath");
        assert!(p.verify_checksum(SRC, DST));
        assert!(!p.verify_checksum(DST, Ipv4Addr::new(192, 0, 2, 3)));
        assert_eq!(
            UdpRepr::parse(&p),
            Ok(UdpRepr {
                src_port: 40000,
                dst_port: 7,
                payload_len: 8
            })
        );
    }

    #[test]
    fn emit_gives_the_captured_bytes() {
        let repr = UdpRepr::parse(&UdpPacket::new_checked(&CAPTURED[..]).unwrap()).unwrap();
        let mut buf = [0xa5u8; 18];
        buf[HEADER_LEN..16].copy_from_slice(b"fastpath");
        repr.emit(&mut UdpPacket::new_checked(&mut buf[..]).unwrap(), SRC, DST);
        assert_eq!(buf[..16], CAPTURED);
        assert_eq!(buf[16..], [0xa5, 0xa5]);
    }

    #[test]
    fn round_trips_and_verifies() {
        for payload_len in 0..40 {
            for sport in [0, 1, 53, 0x8000, 0xffff] {
                let repr = UdpRepr {
                    src_port: sport,
                    dst_port: !sport,
                    payload_len,
                };
                let mut buf: Vec<u8> = (0..repr.buffer_len()).map(|i| i as u8).collect();
                repr.emit(&mut UdpPacket::new_checked(&mut buf[..]).unwrap(), SRC, DST);
                let p = UdpPacket::new_checked(&buf[..]).unwrap();
                assert_ne!(p.checksum(), 0);
                assert!(p.verify_checksum(SRC, DST));
                assert_eq!(UdpRepr::parse(&p), Ok(repr));
                assert_eq!(p.payload().len(), payload_len);
            }
        }
    }

    /// A datagram whose sum is zero is sent with checksum 0xffff, which
    /// verifies; zero itself means none and verifies too.
    #[test]
    fn zero_sum_is_sent_as_ffff() {
        // Ports chosen so that everything, pseudo-header included, sums to
        // 0xffff before the checksum: the complement is zero.
        let mut buf = [0u8; HEADER_LEN];
        let mut p = UdpPacket::new_checked(&mut buf[..]).unwrap();
        p.set_length(8);
        let partial = checksum::combine(
            checksum::pseudo_header(SRC, DST, PROTOCOL, 8),
            checksum::sum(p.into_inner()),
        );
        let mut p = UdpPacket::new_checked(&mut buf[..]).unwrap();
        p.set_src_port(0xffff - partial);
        p.fill_checksum(SRC, DST);
        assert_eq!(p.checksum(), 0xffff);
        assert!(p.verify_checksum(SRC, DST));
        p.set_checksum(0);
        assert!(p.verify_checksum(SRC, DST));
    }

    #[test]
    fn parse_refuses_bad_lengths() {
        let mut buf = CAPTURED;
        buf[5] = 7;
        let p = UdpPacket::new_checked(&buf[..]).unwrap();
        assert_eq!(UdpRepr::parse(&p), Err(Error::Malformed));
        assert!(p.payload().is_empty());
        assert_eq!(
            UdpRepr::parse(&UdpPacket::new_checked(&CAPTURED[..15]).unwrap()),
            Err(Error::Truncated)
        );
    }

    #[test]
    fn accessors_never_panic_on_any_length() {
        for len in HEADER_LEN..=HEADER_LEN + 40 {
            for fill in [0x00u8, 0x07, 0xff] {
                let mut buf = vec![fill; len];
                let p = UdpPacket::new_checked(&buf[..]).unwrap();
                let _ = (p.payload(), p.verify_checksum(SRC, DST), UdpRepr::parse(&p));
                let mut p = UdpPacket::new_checked(&mut buf[..]).unwrap();
                p.fill_checksum(SRC, DST);
                assert!(p.verify_checksum(SRC, DST));
                let _ = p.payload_mut();
            }
        }
    }
}
