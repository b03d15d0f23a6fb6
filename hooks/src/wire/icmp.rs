//! ICMP for IPv4 (RFC 792): type, code, checksum, four bytes whose meaning
//! depends on the type (identifier and sequence number for echo), then data.
//!
//! The checksum covers the whole ICMP message, so an [`IcmpPacket`] views
//! exactly the message: the IPv4 payload up to the total length
//! ([`Ipv4Packet::payload`]), never the Ethernet padding after it.

use super::{be16, checksum, set_be16, Error, Ipv4Packet};

/// Length of the ICMP header: type, code, checksum and the four bytes after.
pub const HEADER_LEN: usize = 8;

/// ICMP message types fastpath knows.
pub mod kind {
    pub const ECHO_REPLY: u8 = 0;
    pub const DEST_UNREACHABLE: u8 = 3;
    pub const ECHO_REQUEST: u8 = 8;
    pub const TIME_EXCEEDED: u8 = 11;
}

/// Bytes of the original datagram's payload an error message quotes after
/// its IP header (RFC 792: "64 bits of Original Data Datagram").
const QUOTED_DATA_LEN: usize = 8;

const TYPE: usize = 0;
const CODE: usize = 1;
const CHECKSUM: usize = 2;
const IDENT: usize = 4;
const SEQ_NO: usize = 6;
const ZERO: [u8; HEADER_LEN] = [0; HEADER_LEN];

/// A view of an ICMP message (header and data) filling `buffer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcmpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> IcmpPacket<T> {
    /// View `buffer`, which must hold at least the 8-byte header. The type,
    /// code and checksum are not checked here.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(IcmpPacket { buffer })
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

    /// Code, refining the type (e.g. 0 "TTL exceeded in transit").
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

    /// Everything after the header: echo data, or the quoted datagram of an
    /// error message.
    #[inline]
    pub fn data(&self) -> &[u8] {
        self.buffer.as_ref().get(HEADER_LEN..).unwrap_or(&[])
    }

    /// The checksum is right: the whole message sums to `0xffff`.
    #[inline]
    pub fn verify_checksum(&self) -> bool {
        checksum::sum(self.buffer.as_ref()) == 0xffff
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> IcmpPacket<T> {
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

    /// Everything after the header, writable.
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        self.buffer
            .as_mut()
            .get_mut(HEADER_LEN..)
            .unwrap_or(&mut [])
    }

    /// Compute the checksum over the whole message and store it.
    #[inline]
    pub fn fill_checksum(&mut self) {
        self.set_checksum(0);
        let c = checksum::checksum(self.buffer.as_ref());
        self.set_checksum(c);
    }

    /// Turn an echo request into its echo reply in place: type 8 becomes 0
    /// and the checksum is updated incrementally (RFC 1624); identifier,
    /// sequence number and data stay. Returns `false` (message unchanged)
    /// when the message is not an echo request.
    ///
    /// The result equals a full recomputation when the request's checksum
    /// was right (verify it first: a wrong one stays wrong).
    #[inline]
    pub fn echo_to_reply(&mut self) -> bool {
        let Some(h) = self.header_mut() else {
            return false;
        };
        if h[TYPE] != kind::ECHO_REQUEST {
            return false;
        }
        let old = be16(h, TYPE);
        h[TYPE] = kind::ECHO_REPLY;
        let new = be16(h, TYPE);
        let mut check = checksum::update(be16(h, CHECKSUM), old, new);
        // RFC 1624 eqn. 3 never yields 0xffff, but a message that is zero
        // apart from its checksum (code, ident, seq and data all zero)
        // sums to 0 and needs 0xffff. Only looked at when the update gives
        // 0x0000, i.e. for one message in 65536.
        if check == 0 {
            let b = self.buffer.as_ref();
            let zero = |r: &[u8]| r.iter().all(|&x| x == 0);
            if zero(b.get(..CHECKSUM).unwrap_or(&[])) && zero(b.get(IDENT..).unwrap_or(&[])) {
                check = 0xffff;
            }
        }
        self.set_checksum(check);
        true
    }
}

/// An echo request or reply (RFC 792), decoded: identifier and sequence
/// number, and how much data follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IcmpEchoRepr {
    /// [`kind::ECHO_REQUEST`] or [`kind::ECHO_REPLY`].
    pub msg_type: u8,
    pub ident: u16,
    pub seq_no: u16,
    /// Length of the data after the 8-byte header.
    pub data_len: usize,
}

impl IcmpEchoRepr {
    /// Decode `packet` (the whole message): `None` unless it is an echo
    /// request or reply with code 0. The checksum is not checked here: see
    /// [`IcmpPacket::verify_checksum`].
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &IcmpPacket<&T>) -> Option<IcmpEchoRepr> {
        let msg_type = packet.msg_type();
        if (msg_type != kind::ECHO_REQUEST && msg_type != kind::ECHO_REPLY) || packet.code() != 0 {
            return None;
        }
        Some(IcmpEchoRepr {
            msg_type,
            ident: packet.ident(),
            seq_no: packet.seq_no(),
            data_len: packet.data().len(),
        })
    }

    /// Length of the header [`emit`](Self::emit) writes.
    #[inline]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Length of the whole message: header and data.
    #[inline]
    pub const fn buffer_len(&self) -> usize {
        HEADER_LEN + self.data_len
    }

    /// Write the header with code 0 and the checksum. `packet` must view
    /// exactly the message, its data already in place: the checksum covers
    /// it.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut IcmpPacket<&mut T>) {
        packet.set_msg_type(self.msg_type);
        packet.set_code(0);
        packet.set_ident(self.ident);
        packet.set_seq_no(self.seq_no);
        packet.fill_checksum();
    }
}

/// How much of `original_ip` an error message quotes: its IP header
/// (options included) and the first 8 bytes of its payload, or less if the
/// datagram is shorter. `None` unless it is a parseable IPv4 header.
#[inline]
fn quoted_len(original_ip: &[u8]) -> Option<usize> {
    let ip = Ipv4Packet::new_checked(original_ip).ok()?;
    if ip.version() != 4 {
        return None;
    }
    Some(original_ip.len().min(ip.header_len() + QUOTED_DATA_LEN))
}

/// Length of the ICMP error message [`emit_error`] writes about
/// `original_ip`: 8 + min(length, IHL × 4 + 8); 0 when `original_ip` is not
/// a parseable IPv4 header (then `emit_error` writes nothing).
#[inline]
pub fn error_message_len(original_ip: &[u8]) -> usize {
    quoted_len(original_ip).map_or(0, |q| HEADER_LEN + q)
}

/// Write an ICMP error message (destination unreachable, time exceeded...)
/// about the datagram `original_ip` at the start of `buf`: type, code,
/// checksum, four zero bytes, then the original IP header and the first 8
/// bytes of its payload (RFC 792). Returns the length written, that of
/// [`error_message_len`]; bytes of `buf` after it are left alone.
///
/// `None`, and nothing written, when `buf` is too short or `original_ip` is
/// not a parseable IPv4 header (too short, IHL < 5, version not 4).
/// `original_ip` should stop at the datagram's total length, or Ethernet
/// padding may be quoted. Whether an error may be sent at all (not about an
/// ICMP error, a broadcast, a non-first fragment: RFC 1122 3.2.2) is for the
/// caller to decide.
#[inline]
pub fn emit_error(buf: &mut [u8], msg_type: u8, code: u8, original_ip: &[u8]) -> Option<usize> {
    let quoted = quoted_len(original_ip)?;
    let len = HEADER_LEN + quoted;
    let msg = buf.get_mut(..len)?;
    let (header, rest) = msg.split_first_chunk_mut::<HEADER_LEN>()?;
    *header = [msg_type, code, 0, 0, 0, 0, 0, 0];
    rest.copy_from_slice(original_ip.get(..quoted)?);
    IcmpPacket { buffer: msg }.fill_checksum();
    Some(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    /// The IPv4 header of an echo request captured from iputils `ping
    /// localhost` on Linux (`tcpdump -X`): 127.0.0.1 > 127.0.0.1, id 0x9210,
    /// DF, TTL 64, total length 84.
    const PING_IP: [u8; 20] = [
        0x45, 0x00, 0x00, 0x54, 0x92, 0x10, 0x40, 0x00, 0x40, 0x01, 0xaa, 0x96, 0x7f, 0x00, 0x00,
        0x01, 0x7f, 0x00, 0x00, 0x01,
    ];

    /// Its ICMP message: echo request, id 21780, seq 1, 56 bytes of data (a
    /// 16-byte `struct timeval`, then bytes 0x10..=0x37).
    const PING: [u8; 64] = [
        0x08, 0x00, 0x49, 0x2b, // echo request, checksum
        0x55, 0x14, 0x00, 0x01, // ident 0x5514, seq 1
        0x2d, 0x08, 0xf4, 0x60, 0x00, 0x00, 0x00, 0x00, // tv_sec
        0x6c, 0x83, 0x0d, 0x00, 0x00, 0x00, 0x00, 0x00, // tv_usec
        0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e,
        0x1f, 0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a, 0x2b, 0x2c, 0x2d,
        0x2e, 0x2f, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37,
    ];

    /// The kernel's reply from the same capture: only type and checksum
    /// differ.
    const PONG_HEADER: [u8; 4] = [0x00, 0x00, 0x51, 0x2b];

    /// The whole captured datagram: IPv4 header then ICMP message.
    fn ping_datagram() -> Vec<u8> {
        [&PING_IP[..], &PING[..]].concat()
    }

    /// An echo message of `msg_type` with `data` whose checksum is 0x0000:
    /// `ident` is chosen so that the rest sums to 0xffff.
    fn echo_with_zero_checksum(msg_type: u8, seq: u16, data: &[u8]) -> Vec<u8> {
        let mut buf = vec![0u8; HEADER_LEN + data.len()];
        buf[HEADER_LEN..].copy_from_slice(data);
        let mut p = IcmpPacket::new_checked(&mut buf[..]).unwrap();
        p.set_msg_type(msg_type);
        p.set_seq_no(seq);
        let partial = checksum::sum(p.into_inner());
        let mut p = IcmpPacket::new_checked(&mut buf[..]).unwrap();
        p.set_ident(0xffff - partial);
        p.fill_checksum();
        assert_eq!(p.checksum(), 0x0000);
        buf
    }

    /// `echo_to_reply` on `request` gives exactly what a full recomputation
    /// gives, and the reply verifies.
    fn assert_reply_matches_recomputation(request: &[u8]) {
        let mut buf = request.to_vec();
        let mut p = IcmpPacket::new_checked(&mut buf[..]).unwrap();
        assert!(p.verify_checksum(), "request {request:02x?}");
        assert!(p.echo_to_reply());
        assert_eq!(p.msg_type(), kind::ECHO_REPLY);
        assert!(p.verify_checksum(), "reply {buf:02x?}");
        let mut p = IcmpPacket::new_checked(&mut buf[..]).unwrap();
        let incremental = p.checksum();
        p.fill_checksum();
        assert_eq!(incremental, p.checksum(), "request {request:02x?}");
        assert_eq!(&buf[HEADER_LEN..], &request[HEADER_LEN..]);
        assert_eq!(&buf[CODE..CHECKSUM], &request[CODE..CHECKSUM]);
        assert_eq!(&buf[IDENT..HEADER_LEN], &request[IDENT..HEADER_LEN]);
    }

    fn request(ident: u16, seq: u16, data: &[u8]) -> Vec<u8> {
        let mut buf = vec![0u8; HEADER_LEN + data.len()];
        let mut p = IcmpPacket::new_checked(&mut buf[..]).unwrap();
        p.set_msg_type(kind::ECHO_REQUEST);
        p.set_ident(ident);
        p.set_seq_no(seq);
        p.data_mut().copy_from_slice(data);
        p.fill_checksum();
        buf
    }

    #[test]
    fn new_checked_needs_the_header() {
        for len in 0..HEADER_LEN {
            assert_eq!(
                IcmpPacket::new_checked(&PING[..len]),
                Err(Error::Truncated),
                "len {len}"
            );
        }
        let p = IcmpPacket::new_checked(&PING[..HEADER_LEN]).unwrap();
        assert!(p.data().is_empty());
    }

    #[test]
    fn reads_a_ping_echo_request() {
        let ip = Ipv4Packet::new_checked(&PING_IP[..]).unwrap();
        assert!(ip.verify_checksum());
        assert_eq!(usize::from(ip.total_len()), PING_IP.len() + PING.len());
        let p = IcmpPacket::new_checked(&PING[..]).unwrap();
        assert_eq!(p.msg_type(), kind::ECHO_REQUEST);
        assert_eq!(p.code(), 0);
        assert_eq!(p.checksum(), 0x492b);
        assert_eq!(p.ident(), 21780);
        assert_eq!(p.seq_no(), 1);
        assert_eq!(p.data().len(), 56);
        assert_eq!(p.data()[16..], (0x10..=0x37).collect::<Vec<u8>>()[..]);
        assert!(p.verify_checksum());
    }

    #[test]
    fn verify_checksum_catches_corruption() {
        for at in 0..PING.len() {
            let mut buf = PING;
            buf[at] ^= 0x40;
            assert!(
                !IcmpPacket::new_checked(&buf[..]).unwrap().verify_checksum(),
                "byte {at}"
            );
        }
    }

    #[test]
    fn writes_the_ping_request() {
        let mut buf = [0xa5u8; 64];
        let mut p = IcmpPacket::new_checked(&mut buf[..]).unwrap();
        p.set_msg_type(kind::ECHO_REQUEST);
        p.set_code(0);
        p.set_ident(0x5514);
        p.set_seq_no(1);
        p.data_mut().copy_from_slice(&PING[HEADER_LEN..]);
        p.fill_checksum();
        assert_eq!(p.checksum(), 0x492b);
        assert_eq!(buf, PING);
        let mut p = IcmpPacket::new_checked(&mut buf[..]).unwrap();
        p.set_checksum(0x1234);
        assert_eq!(p.checksum(), 0x1234);
    }

    #[test]
    fn echo_to_reply_gives_the_kernels_reply() {
        let mut buf = PING;
        let mut p = IcmpPacket::new_checked(&mut buf[..]).unwrap();
        assert!(p.echo_to_reply());
        assert_eq!((p.msg_type(), p.checksum()), (kind::ECHO_REPLY, 0x512b));
        assert_eq!(buf[..4], PONG_HEADER);
        assert_eq!(buf[4..], PING[4..]);
        assert_reply_matches_recomputation(&PING);
    }

    #[test]
    fn echo_to_reply_leaves_other_messages_alone() {
        for msg_type in [
            kind::ECHO_REPLY,
            kind::DEST_UNREACHABLE,
            kind::TIME_EXCEEDED,
            13, // timestamp request
        ] {
            let mut buf = PING;
            buf[TYPE] = msg_type;
            let mut p = IcmpPacket::new_checked(&mut buf[..]).unwrap();
            assert!(!p.echo_to_reply(), "type {msg_type}");
            assert_eq!(buf[TYPE], msg_type);
            assert_eq!(buf[1..], PING[1..]);
        }
    }

    #[test]
    fn echo_to_reply_matches_recomputation() {
        let datas: [&[u8]; 5] = [
            &[],
            &[0x00],
            &[0xff, 0xff, 0xff],
            &PING[HEADER_LEN..],
            &[0; 56],
        ];
        let values = [
            0x0000, 0x0001, 0x00ff, 0x0800, 0x7fff, 0x8000, 0xf7ff, 0xfffe, 0xffff,
        ];
        for data in datas {
            for ident in values {
                for seq in values {
                    assert_reply_matches_recomputation(&request(ident, seq, data));
                }
            }
        }
        let mut rng = fastrand::Rng::with_seed(0x0123_4567_89ab_cdef);
        for i in 0..20_000 {
            let data: Vec<u8> = (0..i % 70).map(|_| rng.u8(..)).collect();
            let r = rng.u64(..);
            assert_reply_matches_recomputation(&request(r as u16, (r >> 16) as u16, &data));
        }
    }

    /// The checksum edges: a request or a reply whose checksum is 0x0000, a
    /// request carrying the other zero (0xffff), and the all-zero reply,
    /// whose checksum must be 0xffff.
    #[test]
    fn echo_to_reply_checksum_edges() {
        for data in [&[][..], &[0x01], &[0; 3], &PING[HEADER_LEN..]] {
            for seq in [0, 1, 0x0800, 0xffff] {
                // Request checksum 0x0000.
                let mut req = echo_with_zero_checksum(kind::ECHO_REQUEST, seq, data);
                assert_reply_matches_recomputation(&req);
                // The same request with 0xffff instead, which verifies too.
                let mut p = IcmpPacket::new_checked(&mut req[..]).unwrap();
                p.set_checksum(0xffff);
                assert!(p.verify_checksum());
                assert_reply_matches_recomputation(&req);

                // Reply checksum 0x0000: build the reply, then its request.
                let mut req = echo_with_zero_checksum(kind::ECHO_REPLY, seq, data);
                let mut p = IcmpPacket::new_checked(&mut req[..]).unwrap();
                p.set_msg_type(kind::ECHO_REQUEST);
                p.fill_checksum();
                assert_eq!(p.checksum(), 0xf7ff);
                assert_reply_matches_recomputation(&req);
                let mut p = IcmpPacket::new_checked(&mut req[..]).unwrap();
                assert!(p.echo_to_reply());
                assert_eq!(p.checksum(), 0x0000);
            }
        }
        // Zero but for the type: the reply sums to 0, its checksum is 0xffff
        // (RFC 1624 eqn. 3 alone would give 0x0000, which does not verify).
        for len in [0, 1, 2, 56] {
            let req = request(0, 0, &vec![0; len]);
            assert_eq!(
                IcmpPacket::new_checked(&req[..]).unwrap().checksum(),
                0xf7ff
            );
            assert_reply_matches_recomputation(&req);
            let mut buf = req.clone();
            let mut p = IcmpPacket::new_checked(&mut buf[..]).unwrap();
            p.echo_to_reply();
            assert_eq!(p.checksum(), 0xffff);
        }
    }

    /// Accessors and setters never panic, whatever the length at or above
    /// the minimum and whatever the bytes.
    #[test]
    fn accessors_never_panic_on_any_length() {
        for len in HEADER_LEN..=HEADER_LEN + 80 {
            for fill in [0x00u8, 0x08, 0xff] {
                let mut buf = vec![fill; len];
                let p = IcmpPacket::new_checked(&buf[..]).unwrap();
                let _ = (
                    p.msg_type(),
                    p.code(),
                    p.checksum(),
                    p.ident(),
                    p.seq_no(),
                    p.verify_checksum(),
                );
                assert_eq!(p.data().len(), len - HEADER_LEN);
                let mut p = IcmpPacket::new_checked(&mut buf[..]).unwrap();
                p.set_code(fill);
                p.set_ident(u16::from(fill));
                p.set_seq_no(!u16::from(fill));
                p.fill_checksum();
                assert!(p.verify_checksum());
                let _ = p.echo_to_reply();
                assert!(p.verify_checksum());
                assert_eq!(p.data_mut().len(), len - HEADER_LEN);
            }
        }
    }

    /// Time exceeded about the captured ping: the IP header and the first 8
    /// bytes of the ICMP message are quoted, the rest is not.
    #[test]
    fn emit_time_exceeded_about_a_ping() {
        let orig = ping_datagram();
        assert_eq!(error_message_len(&orig), 8 + 20 + 8);
        let mut buf = [0xa5u8; 128];
        let len = emit_error(&mut buf, kind::TIME_EXCEEDED, 0, &orig).unwrap();
        assert_eq!(len, 36);
        assert_eq!(buf[..2], [kind::TIME_EXCEEDED, 0]);
        assert_eq!(buf[4..8], [0; 4]);
        assert_eq!(buf[8..28], PING_IP);
        assert_eq!(buf[28..36], PING[..8]);
        assert!(buf[36..].iter().all(|&b| b == 0xa5));

        let p = IcmpPacket::new_checked(&buf[..len]).unwrap();
        assert_eq!((p.msg_type(), p.code()), (kind::TIME_EXCEEDED, 0));
        assert_eq!((p.ident(), p.seq_no()), (0, 0));
        assert!(p.verify_checksum());
        let quoted = Ipv4Packet::new_checked(p.data()).unwrap();
        assert_eq!(quoted.src_addr(), Ipv4Addr::LOCALHOST);
        assert_eq!(quoted.protocol(), 1);
        let inner = IcmpPacket::new_checked(&p.data()[20..]).unwrap();
        assert_eq!((inner.ident(), inner.seq_no()), (21780, 1));
    }

    #[test]
    fn emit_error_fits_the_buffer_exactly_or_not_at_all() {
        let orig = ping_datagram();
        let need = error_message_len(&orig);
        let mut buf = vec![0xa5u8; need];
        assert_eq!(emit_error(&mut buf, 3, 1, &orig), Some(need));
        assert!(IcmpPacket::new_checked(&buf[..]).unwrap().verify_checksum());
        for short in 0..need {
            let mut buf = vec![0xa5u8; short];
            assert_eq!(emit_error(&mut buf, 3, 1, &orig), None, "buf {short}");
            assert!(buf.iter().all(|&b| b == 0xa5), "buf {short} written");
        }
    }

    /// A datagram shorter than IHL × 4 + 8 is quoted whole.
    #[test]
    fn emit_error_quotes_short_datagrams_whole() {
        let orig = ping_datagram();
        for len in 20..=28 {
            let mut buf = [0u8; 64];
            let n = emit_error(&mut buf, kind::DEST_UNREACHABLE, 1, &orig[..len]).unwrap();
            assert_eq!(n, 8 + len);
            assert_eq!(n, error_message_len(&orig[..len]));
            assert_eq!(buf[8..n], orig[..len]);
            assert!(IcmpPacket::new_checked(&buf[..n])
                .unwrap()
                .verify_checksum());
        }
    }

    /// With options the quote grows with the IHL: the options and still 8
    /// payload bytes.
    #[test]
    fn emit_error_quotes_options() {
        let mut rng = fastrand::Rng::with_seed(0x9e37_79b9_7f4a_7c15);
        for ihl in 5..=15u8 {
            let header_len = usize::from(ihl) * 4;
            let mut orig: Vec<u8> = (0..header_len + 40).map(|_| rng.u8(..)).collect();
            orig[0] = 0x40 | ihl;
            if ihl > 5 {
                // Router alert (RFC 2113) first, as IGMP carries it.
                orig[20..24].copy_from_slice(&[0x94, 0x04, 0x00, 0x00]);
            }
            let mut ip = Ipv4Packet::new_checked(&mut orig[..]).unwrap();
            ip.set_total_len((header_len + 40) as u16);
            ip.fill_checksum();

            let want = header_len + 8;
            assert_eq!(error_message_len(&orig), 8 + want, "ihl {ihl}");
            let mut buf = [0u8; 128];
            let n = emit_error(&mut buf, kind::TIME_EXCEEDED, 0, &orig).unwrap();
            assert_eq!(n, 8 + want, "ihl {ihl}");
            assert_eq!(buf[8..n], orig[..want]);
            let p = IcmpPacket::new_checked(&buf[..n]).unwrap();
            assert!(p.verify_checksum());
            let quoted = Ipv4Packet::new_checked(p.data()).unwrap();
            assert_eq!(quoted.header_len(), header_len);
            assert_eq!(quoted.options(), &orig[20..header_len]);
            assert!(quoted.verify_checksum());
        }
    }

    #[test]
    fn emit_error_refuses_what_is_not_ipv4() {
        let orig = ping_datagram();
        let mut ihl4 = orig.clone();
        ihl4[0] = 0x44;
        let mut v6 = orig.clone();
        v6[0] = 0x65;
        let mut long_ihl = orig[..20].to_vec();
        long_ihl[0] = 0x46; // 24-byte header in 20 bytes
        let bad: [&[u8]; 6] = [&[], &orig[..1], &orig[..19], &ihl4, &v6, &long_ihl];
        for b in bad {
            let mut buf = [0xa5u8; 128];
            assert_eq!(emit_error(&mut buf, 3, 0, b), None, "{b:02x?}");
            assert_eq!(error_message_len(b), 0);
            assert!(buf.iter().all(|&x| x == 0xa5));
        }
    }

    /// The captured ping, decoded and emitted again over garbage: the same
    /// 64 bytes, checksum 0x492b included; and its reply.
    #[test]
    fn echo_repr_emits_the_captured_ping() {
        let repr = IcmpEchoRepr::parse(&IcmpPacket::new_checked(&PING[..]).unwrap()).unwrap();
        assert_eq!(
            repr,
            IcmpEchoRepr {
                msg_type: kind::ECHO_REQUEST,
                ident: 21780,
                seq_no: 1,
                data_len: 56,
            }
        );
        assert_eq!((repr.header_len(), repr.buffer_len()), (8, 64));
        let mut buf = [0xa5u8; 64];
        buf[HEADER_LEN..].copy_from_slice(&PING[HEADER_LEN..]);
        repr.emit(&mut IcmpPacket::new_checked(&mut buf[..]).unwrap());
        assert_eq!(buf, PING);
        let reply = IcmpEchoRepr {
            msg_type: kind::ECHO_REPLY,
            ..repr
        };
        reply.emit(&mut IcmpPacket::new_checked(&mut buf[..]).unwrap());
        assert_eq!(buf[..4], PONG_HEADER);
        assert_eq!(
            IcmpEchoRepr::parse(&IcmpPacket::new_checked(&buf[..]).unwrap()),
            Some(reply)
        );
    }

    #[test]
    fn echo_repr_parse_refuses_other_messages() {
        for (at, value) in [(TYPE, kind::TIME_EXCEEDED), (TYPE, 13), (CODE, 1)] {
            let mut buf = PING;
            buf[at] = value;
            let p = IcmpPacket::new_checked(&buf[..]).unwrap();
            assert_eq!(IcmpEchoRepr::parse(&p), None, "byte {at} = {value}");
        }
    }
}
