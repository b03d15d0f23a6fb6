//! IPv4 header (RFC 791): 20 bytes, plus up to 40 bytes of options.

use super::{be16, checksum, set_be16, Error};
use std::net::Ipv4Addr;

/// Length of the header without options (IHL 5).
pub const MIN_HEADER_LEN: usize = 20;
/// Length of the header with the most options (IHL 15).
pub const MAX_HEADER_LEN: usize = 60;

/// Byte offsets of the header's fields (smoltcp's `mod field`): what a
/// stage reading a header in place indexes with.
pub mod field {
    pub const VER_IHL: usize = 0;
    pub const TOS: usize = 1;
    pub const TOTAL_LEN: usize = 2;
    pub const IDENT: usize = 4;
    pub const FLAGS_FRAG: usize = 6;
    pub const TTL: usize = 8;
    pub const PROTOCOL: usize = 9;
    pub const CHECKSUM: usize = 10;
    pub const SRC: usize = 12;
    pub const DST: usize = 16;
}
use field::*;

/// The Don't Fragment bit of the byte at [`field::FLAGS_FRAG`].
pub const DONT_FRAGMENT: u8 = 0x40;

/// Decrement the TTL of a header whose TTL is `ttl` (read already, and at
/// least one) and update its checksum incrementally (RFC 1624), like the kernel's
/// `ip_decrease_ttl`: the word (TTL, protocol) drops by 0x0100, so the
/// checksum rises by 0x0100 with an end-around carry. The checksum is read
/// little-endian, where that is one more (ones' complement sums do not
/// depend on byte order): no byte swaps on x86. Returns the new TTL.
#[inline(always)]
pub fn decrement_ttl(h: &mut [u8; MIN_HEADER_LEN], ttl: u8) -> u8 {
    let ttl = ttl.wrapping_sub(1);
    h[TTL] = ttl;
    let check = u32::from(u16::from_le_bytes([h[CHECKSUM], h[CHECKSUM + 1]])) + 1;
    let check = (check + u32::from(check >= 0xffff)) as u16;
    h[CHECKSUM..CHECKSUM + 2].copy_from_slice(&check.to_le_bytes());
    ttl
}
const ZERO: [u8; MIN_HEADER_LEN] = [0; MIN_HEADER_LEN];

/// A view of an IPv4 header at the start of `buffer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Packet<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// View `buffer`: it must hold 20 bytes, the IHL must be at least 5 and
    /// the whole header (IHL × 4 bytes) must fit. The version and the total
    /// length are not checked here.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        let b = buffer.as_ref();
        let Some(&ver_ihl) = b.first() else {
            return Err(Error::Truncated);
        };
        if b.len() < MIN_HEADER_LEN {
            return Err(Error::Truncated);
        }
        let header_len = usize::from(ver_ihl & 0x0f) * 4;
        if header_len < MIN_HEADER_LEN {
            return Err(Error::Malformed);
        }
        if b.len() < header_len {
            return Err(Error::Truncated);
        }
        Ok(Ipv4Packet { buffer })
    }

    /// View `buffer` without any check, to write a header into it (see
    /// [`Ipv4Repr::emit`]). Accessors still never panic: past the end of a
    /// short buffer they read zero and setters write nothing.
    #[inline]
    pub const fn new_unchecked(buffer: T) -> Self {
        Ipv4Packet { buffer }
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

    /// IP version (4).
    #[inline]
    pub fn version(&self) -> u8 {
        self.header()[VER_IHL] >> 4
    }

    /// Internet header length, in 32-bit words.
    #[inline]
    pub fn ihl(&self) -> u8 {
        self.header()[VER_IHL] & 0x0f
    }

    /// Header length in bytes (IHL × 4), options included.
    #[inline]
    pub fn header_len(&self) -> usize {
        usize::from(self.ihl()) * 4
    }

    /// Differentiated services code point.
    #[inline]
    pub fn dscp(&self) -> u8 {
        self.header()[TOS] >> 2
    }

    /// Explicit congestion notification.
    #[inline]
    pub fn ecn(&self) -> u8 {
        self.header()[TOS] & 0x03
    }

    /// Total length: header and payload, in bytes.
    #[inline]
    pub fn total_len(&self) -> u16 {
        be16(self.header(), TOTAL_LEN)
    }

    /// Identification.
    #[inline]
    pub fn ident(&self) -> u16 {
        be16(self.header(), IDENT)
    }

    /// Don't fragment flag.
    #[inline]
    pub fn dont_frag(&self) -> bool {
        be16(self.header(), FLAGS_FRAG) & 0x4000 != 0
    }

    /// More fragments flag.
    #[inline]
    pub fn more_frags(&self) -> bool {
        be16(self.header(), FLAGS_FRAG) & 0x2000 != 0
    }

    /// Fragment offset, in bytes.
    #[inline]
    pub fn frag_offset(&self) -> u16 {
        (be16(self.header(), FLAGS_FRAG) & 0x1fff) << 3
    }

    /// Time to live.
    #[inline]
    pub fn ttl(&self) -> u8 {
        self.header()[TTL]
    }

    /// Protocol of the payload (6 TCP, 17 UDP, 1 ICMP, ...).
    #[inline]
    pub fn protocol(&self) -> u8 {
        self.header()[PROTOCOL]
    }

    /// Header checksum field.
    #[inline]
    pub fn checksum(&self) -> u16 {
        be16(self.header(), CHECKSUM)
    }

    /// Source address.
    #[inline]
    pub fn src_addr(&self) -> Ipv4Addr {
        let h = self.header();
        Ipv4Addr::new(h[SRC], h[SRC + 1], h[SRC + 2], h[SRC + 3])
    }

    /// Destination address.
    #[inline]
    pub fn dst_addr(&self) -> Ipv4Addr {
        let h = self.header();
        Ipv4Addr::new(h[DST], h[DST + 1], h[DST + 2], h[DST + 3])
    }

    /// The header bytes, options included (clamped to the buffer).
    #[inline]
    pub fn header_bytes(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        &b[..self.header_len().min(b.len())]
    }

    /// Options: the header bytes after the first 20.
    #[inline]
    pub fn options(&self) -> &[u8] {
        self.header_bytes().get(MIN_HEADER_LEN..).unwrap_or(&[])
    }

    /// Payload: from the end of the header to the total length, clamped to
    /// the buffer (Ethernet padding excluded).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        let b = self.buffer.as_ref();
        let end = usize::from(self.total_len()).min(b.len());
        b.get(self.header_len()..end).unwrap_or(&[])
    }

    /// The header checksum is right: the header sums to `0xffff`.
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        let bytes = self.header_bytes();
        match bytes.first_chunk::<MIN_HEADER_LEN>() {
            // No options: the unrolled form.
            Some(h) if bytes.len() == MIN_HEADER_LEN => checksum::verify20(h),
            _ => checksum::sum(bytes) == 0xffff,
        }
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    #[inline(always)]
    fn header_mut(&mut self) -> Option<&mut [u8; MIN_HEADER_LEN]> {
        self.buffer.as_mut().first_chunk_mut()
    }

    /// Set version and IHL (in 32-bit words) together, as they share a byte.
    #[inline]
    pub fn set_version_ihl(&mut self, version: u8, ihl: u8) {
        if let Some(h) = self.header_mut() {
            h[VER_IHL] = (version << 4) | (ihl & 0x0f);
        }
    }

    /// Set DSCP and ECN.
    #[inline]
    pub fn set_dscp_ecn(&mut self, dscp: u8, ecn: u8) {
        if let Some(h) = self.header_mut() {
            h[TOS] = (dscp << 2) | (ecn & 0x03);
        }
    }

    /// Set the total length.
    #[inline]
    pub fn set_total_len(&mut self, value: u16) {
        if let Some(h) = self.header_mut() {
            set_be16(h, TOTAL_LEN, value);
        }
    }

    /// Set the identification.
    #[inline]
    pub fn set_ident(&mut self, value: u16) {
        if let Some(h) = self.header_mut() {
            set_be16(h, IDENT, value);
        }
    }

    /// Set the flags and the fragment offset (in bytes, a multiple of 8).
    #[inline]
    pub fn set_flags_frag(&mut self, dont_frag: bool, more_frags: bool, offset: u16) {
        let v = (u16::from(dont_frag) << 14) | (u16::from(more_frags) << 13) | (offset >> 3);
        if let Some(h) = self.header_mut() {
            set_be16(h, FLAGS_FRAG, v);
        }
    }

    /// Set the time to live (the checksum is not updated).
    #[inline]
    pub fn set_ttl(&mut self, value: u8) {
        if let Some(h) = self.header_mut() {
            h[TTL] = value;
        }
    }

    /// Set the payload protocol.
    #[inline]
    pub fn set_protocol(&mut self, value: u8) {
        if let Some(h) = self.header_mut() {
            h[PROTOCOL] = value;
        }
    }

    /// Set the checksum field.
    #[inline]
    pub fn set_checksum(&mut self, value: u16) {
        if let Some(h) = self.header_mut() {
            set_be16(h, CHECKSUM, value);
        }
    }

    /// Set the source address.
    #[inline]
    pub fn set_src_addr(&mut self, addr: Ipv4Addr) {
        if let Some(h) = self.header_mut() {
            h[SRC..SRC + 4].copy_from_slice(&addr.octets());
        }
    }

    /// Set the destination address.
    #[inline]
    pub fn set_dst_addr(&mut self, addr: Ipv4Addr) {
        if let Some(h) = self.header_mut() {
            h[DST..DST + 4].copy_from_slice(&addr.octets());
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

    /// Compute the header checksum over the header (options included) and
    /// store it.
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::checksum(self.header_bytes());
        self.set_checksum(c);
    }

    /// Decrement the TTL and update the checksum incrementally (RFC 1624),
    /// like the kernel's `ip_decrease_ttl`. Returns the new TTL, or `None`
    /// (header unchanged) when the TTL is already 0.
    #[inline]
    pub fn decrement_ttl(&mut self) -> Option<u8> {
        let h = self.header_mut()?;
        let ttl = h[TTL];
        (ttl != 0).then(|| decrement_ttl(h, ttl))
    }
}

/// An IPv4 header, decoded: what a datagram's sender chooses. Lengths and
/// the checksum follow from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ipv4Repr<'a> {
    pub src_addr: Ipv4Addr,
    pub dst_addr: Ipv4Addr,
    /// Protocol of the payload (6 TCP, 17 UDP, 1 ICMP, ...).
    pub protocol: u8,
    /// Length of the payload in bytes (total length less the header).
    pub payload_len: usize,
    pub ttl: u8,
    pub dscp: u8,
    pub ecn: u8,
    pub ident: u16,
    pub dont_frag: bool,
    pub more_frags: bool,
    /// Fragment offset in bytes (a multiple of 8).
    pub frag_offset: u16,
    /// Option bytes after the first 20 of the header; [`emit`](Self::emit)
    /// pads them with zeros (End of Option List) to a multiple of 4 and
    /// writes at most 40.
    pub options: &'a [u8],
}

impl<'a> Ipv4Repr<'a> {
    /// Decode `packet`. Refuses ([`Error::Malformed`]) a version other than
    /// 4 or a total length shorter than the header, and ([`Error::Truncated`])
    /// a total length past the buffer. The checksum is not checked here:
    /// see [`Ipv4Packet::verify_checksum`].
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &Ipv4Packet<&'a T>) -> Result<Self, Error> {
        let buffer: &'a [u8] = packet.buffer.as_ref();
        let header_len = packet.header_len();
        let total = usize::from(packet.total_len());
        if packet.version() != 4 || total < header_len {
            return Err(Error::Malformed);
        }
        if total > buffer.len() {
            return Err(Error::Truncated);
        }
        Ok(Ipv4Repr {
            src_addr: packet.src_addr(),
            dst_addr: packet.dst_addr(),
            protocol: packet.protocol(),
            payload_len: total - header_len,
            ttl: packet.ttl(),
            dscp: packet.dscp(),
            ecn: packet.ecn(),
            ident: packet.ident(),
            dont_frag: packet.dont_frag(),
            more_frags: packet.more_frags(),
            frag_offset: packet.frag_offset(),
            options: buffer.get(MIN_HEADER_LEN..header_len).unwrap_or(&[]),
        })
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

    /// Length of the whole datagram: header and payload.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        self.header_len() + self.payload_len
    }

    /// Write the header (options included) with its total length and
    /// checksum; the payload after it is left alone. A total length past
    /// 65535 is written as 65535.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut Ipv4Packet<&mut T>) {
        let header_len = self.header_len();
        packet.set_version_ihl(4, (header_len / 4) as u8);
        packet.set_dscp_ecn(self.dscp, self.ecn);
        packet.set_total_len(u16::try_from(self.buffer_len()).unwrap_or(u16::MAX));
        packet.set_ident(self.ident);
        packet.set_flags_frag(self.dont_frag, self.more_frags, self.frag_offset);
        packet.set_ttl(self.ttl);
        packet.set_protocol(self.protocol);
        packet.set_src_addr(self.src_addr);
        packet.set_dst_addr(self.dst_addr);
        let options = packet.options_mut();
        let n = self.options.len().min(options.len());
        options[..n].copy_from_slice(&self.options[..n]);
        options[n..].fill(0);
        packet.fill_checksum();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header with the given IHL, filled with random bytes, version 4,
    /// TTL at least 1, and a right checksum.
    fn random_header(rng: &mut fastrand::Rng, ihl: u8) -> Vec<u8> {
        let mut buf: Vec<u8> = (0..usize::from(ihl) * 4).map(|_| rng.u8(..)).collect();
        buf[0] = 0x40 | ihl;
        let mut p = Ipv4Packet::new_checked(&mut buf[..]).unwrap();
        if p.ttl() == 0 {
            p.set_ttl(1);
        }
        p.fill_checksum();
        buf
    }

    const HEADER: [u8; 20] = [
        0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb8, 0x61, 0xc0, 0xa8, 0x00,
        0x01, 0xc0, 0xa8, 0x00, 0xc7,
    ];

    #[test]
    fn new_checked_rejects_short_buffers() {
        assert_eq!(Ipv4Packet::new_checked(&[][..]), Err(Error::Truncated));
        assert_eq!(
            Ipv4Packet::new_checked(&HEADER[..19]),
            Err(Error::Truncated)
        );
        assert!(Ipv4Packet::new_checked(&HEADER[..]).is_ok());
    }

    #[test]
    fn new_checked_rejects_ihl_below_5() {
        for ihl in 0..5 {
            let mut h = HEADER;
            h[0] = 0x40 | ihl;
            assert_eq!(
                Ipv4Packet::new_checked(&h[..]),
                Err(Error::Malformed),
                "ihl {ihl}"
            );
        }
    }

    #[test]
    fn new_checked_needs_the_options_too() {
        let mut buf = [0u8; 60];
        buf[..20].copy_from_slice(&HEADER);
        buf[0] = 0x4f;
        assert_eq!(Ipv4Packet::new_checked(&buf[..59]), Err(Error::Truncated));
        let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
        assert_eq!((p.ihl(), p.header_len(), p.options().len()), (15, 60, 40));
    }

    #[test]
    fn reads_fields() {
        let p = Ipv4Packet::new_checked(&HEADER[..]).unwrap();
        assert_eq!((p.version(), p.ihl(), p.header_len()), (4, 5, 20));
        assert_eq!((p.dscp(), p.ecn()), (0, 0));
        assert_eq!((p.total_len(), p.ident()), (0x73, 0));
        assert!(p.dont_frag() && !p.more_frags());
        assert_eq!(p.frag_offset(), 0);
        assert_eq!((p.ttl(), p.protocol(), p.checksum()), (64, 17, 0xb861));
        assert_eq!(p.src_addr(), Ipv4Addr::new(192, 168, 0, 1));
        assert_eq!(p.dst_addr(), Ipv4Addr::new(192, 168, 0, 199));
        assert!(p.options().is_empty());
        assert!(p.payload().is_empty());
        assert!(p.verify_checksum());
    }

    #[test]
    fn writes_fields() {
        let mut buf = [0u8; 20];
        assert_eq!(Ipv4Packet::new_checked(&mut buf[..]), Err(Error::Malformed));
        buf[0] = 0x45;
        let mut p = Ipv4Packet::new_checked(&mut buf[..]).unwrap();
        p.set_version_ihl(4, 5);
        p.set_dscp_ecn(0, 0);
        p.set_total_len(0x73);
        p.set_ident(0);
        p.set_flags_frag(true, false, 0);
        p.set_ttl(64);
        p.set_protocol(17);
        p.set_src_addr(Ipv4Addr::new(192, 168, 0, 1));
        p.set_dst_addr(Ipv4Addr::new(192, 168, 0, 199));
        p.fill_checksum();
        assert_eq!(buf, HEADER);
    }

    #[test]
    fn payload_stops_at_total_length_and_at_the_buffer() {
        let mut buf = [0u8; 30];
        buf[..20].copy_from_slice(&HEADER);
        let mut p = Ipv4Packet::new_checked(&mut buf[..]).unwrap();
        p.set_total_len(24);
        assert_eq!(p.payload().len(), 4);
        p.set_total_len(100);
        assert_eq!(p.payload().len(), 10);
        p.set_total_len(10);
        assert!(p.payload().is_empty());
    }

    #[test]
    fn setting_a_longer_ihl_does_not_make_accessors_panic() {
        let mut buf = HEADER;
        let mut p = Ipv4Packet::new_checked(&mut buf[..]).unwrap();
        p.set_version_ihl(4, 15);
        assert_eq!(p.header_len(), 60);
        assert!(p.options().is_empty() && p.options_mut().is_empty());
        assert!(p.payload().is_empty());
        assert_eq!(p.header_bytes().len(), 20);
    }

    #[test]
    fn fill_checksum_covers_options() {
        let mut rng = fastrand::Rng::with_seed(0x9e37_79b9_7f4a_7c15);
        for ihl in 5..=15 {
            let buf = random_header(&mut rng, ihl);
            let p = Ipv4Packet::new_checked(&buf[..]).unwrap();
            assert!(p.verify_checksum(), "ihl {ihl}");
            let mut bad = buf.clone();
            *bad.last_mut().unwrap() ^= 0x01;
            assert!(!Ipv4Packet::new_checked(&bad[..]).unwrap().verify_checksum());
        }
    }

    /// The RFC 1624 update after TTL − 1 gives exactly what a full
    /// recomputation gives, for many random headers of every length.
    #[test]
    fn ipv4_checksum_after_ttl_minus_1_matches_recomputation() {
        let mut rng = fastrand::Rng::with_seed(0x0123_4567_89ab_cdef);
        for i in 0..20_000 {
            let ihl = 5 + (i % 11) as u8;
            let mut buf = random_header(&mut rng, ihl);
            let mut p = Ipv4Packet::new_checked(&mut buf[..]).unwrap();
            let ttl = p.ttl();
            assert_eq!(p.decrement_ttl(), Some(ttl - 1));
            let incremental = p.checksum();
            p.fill_checksum();
            assert_eq!(incremental, p.checksum(), "header {i}: {buf:02x?}");
        }
    }

    /// The edge RFC 1624 fixes: a recomputed checksum of 0x0000 must not come
    /// out as 0xffff (and 0x0000 before must update correctly too).
    #[test]
    fn ipv4_checksum_after_ttl_minus_1_at_zero() {
        let mut rng = fastrand::Rng::with_seed(42);
        for before in [false, true] {
            let mut buf = random_header(&mut rng, 5);
            let mut p = Ipv4Packet::new_checked(&mut buf[..]).unwrap();
            p.set_ttl(if before { 64 } else { 65 });
            // Choose the ident so that the header with TTL 64 sums to 0xffff
            // without its checksum: the checksum with TTL 64 is then 0x0000.
            p.set_ident(0);
            p.set_checksum(0);
            let mut probe = *p.header();
            probe[TTL] = 64;
            let s = checksum::sum(&probe);
            p.set_ident(0xffff - s);
            p.fill_checksum();
            let expect_before = p.checksum();
            p.decrement_ttl();
            let incremental = p.checksum();
            p.fill_checksum();
            assert_eq!(incremental, p.checksum());
            if before {
                assert_eq!(expect_before, 0x0000);
            } else {
                assert_eq!(incremental, 0x0000);
            }
        }
    }

    #[test]
    fn decrement_ttl_equals_rfc1624_and_recomputation() {
        let mut rng = fastrand::Rng::with_seed(0x5eed_1234_abcd_ef01);
        for _ in 0..20_000 {
            let mut buf = HEADER;
            for b in buf.iter_mut().skip(1) {
                *b = rng.u8(..);
            }
            buf[0] = 0x45;
            let mut p = Ipv4Packet::new_checked(&mut buf[..]).unwrap();
            if p.ttl() == 0 {
                p.set_ttl(1);
            }
            p.fill_checksum();
            let old_check = p.checksum();
            let old_word = u16::from_be_bytes([buf[TTL], buf[PROTOCOL]]);
            let mut p = Ipv4Packet::new_checked(&mut buf[..]).unwrap();
            p.decrement_ttl().unwrap();
            let got = p.checksum();
            let new_word = u16::from_be_bytes([buf[TTL], buf[PROTOCOL]]);
            assert_eq!(got, checksum::update(old_check, old_word, new_word));
            let mut p = Ipv4Packet::new_checked(&mut buf[..]).unwrap();
            p.fill_checksum();
            assert_eq!(got, p.checksum(), "{buf:02x?}");
        }
    }

    #[test]
    fn decrement_ttl_stops_at_zero() {
        let mut buf = HEADER;
        let mut p = Ipv4Packet::new_checked(&mut buf[..]).unwrap();
        p.set_ttl(1);
        p.fill_checksum();
        assert_eq!(p.decrement_ttl(), Some(0));
        assert!(p.verify_checksum());
        let before = buf;
        let mut p = Ipv4Packet::new_checked(&mut buf[..]).unwrap();
        assert_eq!(p.decrement_ttl(), None);
        assert_eq!(buf, before);
    }

    /// The captured ping's header, decoded, emitted again over garbage:
    /// the same 20 bytes, checksum 0xaa96 included.
    #[test]
    fn repr_emits_a_captured_header() {
        let captured: [u8; 20] = [
            0x45, 0x00, 0x00, 0x54, 0x92, 0x10, 0x40, 0x00, 0x40, 0x01, 0xaa, 0x96, 0x7f, 0x00,
            0x00, 0x01, 0x7f, 0x00, 0x00, 0x01,
        ];
        let mut datagram = captured.to_vec();
        datagram.resize(0x54, 0);
        let repr = Ipv4Repr::parse(&Ipv4Packet::new_checked(&datagram[..]).unwrap()).unwrap();
        assert_eq!(
            repr,
            Ipv4Repr {
                src_addr: Ipv4Addr::LOCALHOST,
                dst_addr: Ipv4Addr::LOCALHOST,
                protocol: 1,
                payload_len: 64,
                ttl: 64,
                dscp: 0,
                ecn: 0,
                ident: 0x9210,
                dont_frag: true,
                more_frags: false,
                frag_offset: 0,
                options: &[],
            }
        );
        assert_eq!((repr.header_len(), repr.buffer_len()), (20, 0x54));
        let mut buf = [0xa5u8; 24];
        repr.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf[..20], captured);
        assert_eq!(buf[20..], [0xa5; 4]);
    }

    /// Emit then parse gives the same fields back, options and fragment
    /// fields included, and the header verifies.
    #[test]
    fn repr_round_trips_through_the_view() {
        let mut rng = fastrand::Rng::with_seed(0x5151_2323_abab_cdcd);
        let options = [0x94, 0x04, 0x00, 0x00, 0x01, 0x01, 0x01, 0x00, 7, 7, 7, 7];
        for i in 0..2000 {
            let r = rng.u64(..);
            let repr = Ipv4Repr {
                src_addr: Ipv4Addr::from(rng.u32(..)),
                dst_addr: Ipv4Addr::from(rng.u32(..)),
                protocol: r as u8,
                payload_len: (r >> 8) as usize % 100,
                ttl: (r >> 16) as u8,
                dscp: (r >> 24) as u8 & 0x3f,
                ecn: (r >> 30) as u8 & 3,
                ident: (r >> 32) as u16,
                dont_frag: r & (1 << 48) != 0,
                more_frags: r & (1 << 49) != 0,
                frag_offset: ((r >> 50) as u16 & 0x1fff) << 3,
                options: &options[..(i % 4) * 4],
            };
            let mut buf = vec![0x5au8; repr.buffer_len() + 3];
            repr.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
            let view = Ipv4Packet::new_checked(&buf[..]).unwrap();
            assert!(view.verify_checksum());
            assert_eq!(view.header_len(), repr.header_len());
            assert_eq!(Ipv4Repr::parse(&view), Ok(repr));
        }
    }

    #[test]
    fn repr_pads_and_cuts_options() {
        let long = [1u8; 44];
        let mut repr = Ipv4Repr {
            src_addr: Ipv4Addr::new(192, 0, 2, 1),
            dst_addr: Ipv4Addr::new(192, 0, 2, 2),
            protocol: 17,
            payload_len: 0,
            ttl: 1,
            dscp: 0,
            ecn: 0,
            ident: 0,
            dont_frag: false,
            more_frags: false,
            frag_offset: 0,
            options: &long[..3],
        };
        assert_eq!(repr.header_len(), 24);
        let mut buf = [0xffu8; 24];
        repr.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf[20..], [1, 1, 1, 0]);
        repr.options = &long;
        assert_eq!(repr.header_len(), MAX_HEADER_LEN);
        let mut buf = [0u8; MAX_HEADER_LEN];
        repr.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
        assert_eq!(buf[0], 0x4f);
        assert!(Ipv4Packet::new_checked(&buf[..]).unwrap().verify_checksum());
    }

    #[test]
    fn repr_parse_refuses_bad_lengths_and_versions() {
        let repr = Ipv4Repr {
            src_addr: Ipv4Addr::new(192, 0, 2, 1),
            dst_addr: Ipv4Addr::new(192, 0, 2, 2),
            protocol: 6,
            payload_len: 8,
            ttl: 64,
            dscp: 0,
            ecn: 0,
            ident: 1,
            dont_frag: false,
            more_frags: false,
            frag_offset: 0,
            options: &[],
        };
        let mut buf = [0u8; 28];
        repr.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
        fn parse(b: &[u8]) -> Result<Ipv4Repr<'_>, Error> {
            Ipv4Repr::parse(&Ipv4Packet::new_checked(b).unwrap())
        }
        assert_eq!(parse(&buf[..27]), Err(Error::Truncated));
        let mut v6 = buf;
        v6[0] = 0x65;
        assert_eq!(parse(&v6), Err(Error::Malformed));
        let mut short_total = buf;
        short_total[3] = 19;
        assert_eq!(parse(&short_total), Err(Error::Malformed));
    }
}
