//! ARP for Ethernet and IPv4 (RFC 826): hardware and protocol types and
//! lengths, operation, then sender and target MAC and IPv4 addresses
//! (28 bytes).
//!
//! The view reads the fixed Ethernet/IPv4 layout whatever the length fields
//! say; check [`ArpPacket::is_ethernet_ipv4`] (or go through [`ArpRepr::parse`])
//! before trusting the addresses.

use super::{be16, set_be16, Error};
use std::net::Ipv4Addr;

/// Length of an Ethernet/IPv4 ARP packet.
pub const PACKET_LEN: usize = 28;

/// ARP operation codes (RFC 826).
pub mod op {
    pub const REQUEST: u16 = 1;
    pub const REPLY: u16 = 2;
}

/// Hardware type of Ethernet (`ARPHRD_ETHER`).
const HTYPE_ETHERNET: u16 = 1;
/// Protocol type of IPv4: its ethertype.
const PTYPE_IPV4: u16 = super::ethernet::ethertype::IPV4;

/// Byte offsets of the ARP packet's fields.
pub mod field {
    pub const HTYPE: usize = 0;
    pub const PTYPE: usize = 2;
    pub const HLEN: usize = 4;
    pub const PLEN: usize = 5;
    pub const OPER: usize = 6;
    pub const SHA: usize = 8;
    pub const SPA: usize = 14;
    pub const THA: usize = 18;
    pub const TPA: usize = 24;
}
use field::*;
const ZERO: [u8; PACKET_LEN] = [0; PACKET_LEN];

/// MAC address at `at` of the fixed-size packet.
#[inline(always)]
const fn mac(h: &[u8; PACKET_LEN], at: usize) -> [u8; 6] {
    [h[at], h[at + 1], h[at + 2], h[at + 3], h[at + 4], h[at + 5]]
}

/// IPv4 address at `at` of the fixed-size packet.
#[inline(always)]
const fn ip(h: &[u8; PACKET_LEN], at: usize) -> Ipv4Addr {
    Ipv4Addr::new(h[at], h[at + 1], h[at + 2], h[at + 3])
}

/// A view of an Ethernet/IPv4 ARP packet at the start of `buffer` (the
/// Ethernet payload; trailing padding is ignored).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArpPacket<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// View `buffer`, which must hold at least the 28-byte packet. The field
    /// values (types, lengths, operation) are not checked here.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        if buffer.as_ref().len() < PACKET_LEN {
            return Err(Error::Truncated);
        }
        Ok(ArpPacket { buffer })
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline(always)]
    fn header(&self) -> &[u8; PACKET_LEN] {
        // Always `Some` after `new_checked`; the fallback keeps this panic-free.
        self.buffer.as_ref().first_chunk().unwrap_or(&ZERO)
    }

    /// Hardware type (1 for Ethernet).
    #[inline]
    pub fn hardware_type(&self) -> u16 {
        be16(self.header(), HTYPE)
    }

    /// Protocol type, as an ethertype (0x0800 for IPv4).
    #[inline]
    pub fn protocol_type(&self) -> u16 {
        be16(self.header(), PTYPE)
    }

    /// Length of a hardware address, in bytes (6 for Ethernet).
    #[inline]
    pub fn hardware_len(&self) -> u8 {
        self.header()[HLEN]
    }

    /// Length of a protocol address, in bytes (4 for IPv4).
    #[inline]
    pub fn protocol_len(&self) -> u8 {
        self.header()[PLEN]
    }

    /// Operation: [`op::REQUEST`], [`op::REPLY`], or something else.
    #[inline]
    pub fn operation(&self) -> u16 {
        be16(self.header(), OPER)
    }

    /// Sender hardware (MAC) address.
    #[inline]
    pub fn sender_hardware_addr(&self) -> [u8; 6] {
        mac(self.header(), SHA)
    }

    /// Sender protocol (IPv4) address.
    #[inline]
    pub fn sender_protocol_addr(&self) -> Ipv4Addr {
        ip(self.header(), SPA)
    }

    /// Target hardware (MAC) address; zero in a request sent by Linux.
    #[inline]
    pub fn target_hardware_addr(&self) -> [u8; 6] {
        mac(self.header(), THA)
    }

    /// Target protocol (IPv4) address.
    #[inline]
    pub fn target_protocol_addr(&self) -> Ipv4Addr {
        ip(self.header(), TPA)
    }

    /// The packet maps IPv4 to Ethernet addresses: hardware type 1, protocol
    /// type 0x0800, lengths 6 and 4, so the fixed layout holds.
    #[inline]
    pub fn is_ethernet_ipv4(&self) -> bool {
        self.hardware_type() == HTYPE_ETHERNET
            && self.protocol_type() == PTYPE_IPV4
            && self.hardware_len() == 6
            && self.protocol_len() == 4
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    #[inline(always)]
    fn header_mut(&mut self) -> Option<&mut [u8; PACKET_LEN]> {
        self.buffer.as_mut().first_chunk_mut()
    }

    /// Set the hardware type.
    #[inline]
    pub fn set_hardware_type(&mut self, value: u16) {
        if let Some(h) = self.header_mut() {
            set_be16(h, HTYPE, value);
        }
    }

    /// Set the protocol type.
    #[inline]
    pub fn set_protocol_type(&mut self, value: u16) {
        if let Some(h) = self.header_mut() {
            set_be16(h, PTYPE, value);
        }
    }

    /// Set the hardware address length.
    #[inline]
    pub fn set_hardware_len(&mut self, value: u8) {
        if let Some(h) = self.header_mut() {
            h[HLEN] = value;
        }
    }

    /// Set the protocol address length.
    #[inline]
    pub fn set_protocol_len(&mut self, value: u8) {
        if let Some(h) = self.header_mut() {
            h[PLEN] = value;
        }
    }

    /// Set the operation.
    #[inline]
    pub fn set_operation(&mut self, value: u16) {
        if let Some(h) = self.header_mut() {
            set_be16(h, OPER, value);
        }
    }

    /// Set the sender hardware (MAC) address.
    #[inline]
    pub fn set_sender_hardware_addr(&mut self, addr: [u8; 6]) {
        if let Some(h) = self.header_mut() {
            h[SHA..SHA + 6].copy_from_slice(&addr);
        }
    }

    /// Set the sender protocol (IPv4) address.
    #[inline]
    pub fn set_sender_protocol_addr(&mut self, addr: Ipv4Addr) {
        if let Some(h) = self.header_mut() {
            h[SPA..SPA + 4].copy_from_slice(&addr.octets());
        }
    }

    /// Set the target hardware (MAC) address.
    #[inline]
    pub fn set_target_hardware_addr(&mut self, addr: [u8; 6]) {
        if let Some(h) = self.header_mut() {
            h[THA..THA + 6].copy_from_slice(&addr);
        }
    }

    /// Set the target protocol (IPv4) address.
    #[inline]
    pub fn set_target_protocol_addr(&mut self, addr: Ipv4Addr) {
        if let Some(h) = self.header_mut() {
            h[TPA..TPA + 4].copy_from_slice(&addr.octets());
        }
    }
}

/// An Ethernet/IPv4 ARP request or reply, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArpRepr {
    /// [`op::REQUEST`] or [`op::REPLY`].
    pub operation: u16,
    pub sender_mac: [u8; 6],
    pub sender_ip: Ipv4Addr,
    pub target_mac: [u8; 6],
    pub target_ip: Ipv4Addr,
}

impl ArpRepr {
    /// Decode `packet`: `None` unless it is Ethernet/IPv4
    /// ([`ArpPacket::is_ethernet_ipv4`]) and a request or a reply.
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(packet: &ArpPacket<&T>) -> Option<ArpRepr> {
        if !packet.is_ethernet_ipv4() {
            return None;
        }
        let operation = packet.operation();
        if operation != op::REQUEST && operation != op::REPLY {
            return None;
        }
        Some(ArpRepr {
            operation,
            sender_mac: packet.sender_hardware_addr(),
            sender_ip: packet.sender_protocol_addr(),
            target_mac: packet.target_hardware_addr(),
            target_ip: packet.target_protocol_addr(),
        })
    }

    /// Write all 28 bytes of the packet, types and lengths included; bytes of
    /// the buffer after them are left alone.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, packet: &mut ArpPacket<&mut T>) {
        packet.set_hardware_type(HTYPE_ETHERNET);
        packet.set_protocol_type(PTYPE_IPV4);
        packet.set_hardware_len(6);
        packet.set_protocol_len(4);
        packet.set_operation(self.operation);
        packet.set_sender_hardware_addr(self.sender_mac);
        packet.set_sender_protocol_addr(self.sender_ip);
        packet.set_target_hardware_addr(self.target_mac);
        packet.set_target_protocol_addr(self.target_ip);
    }

    /// Gratuitous ARP (RFC 5227 announcement, or an unsolicited reply): the
    /// sender asks for, or answers about, its own address.
    #[inline]
    pub fn is_gratuitous(&self) -> bool {
        self.sender_ip == self.target_ip
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A request captured on Linux (`tcpdump -X`): who-has 192.168.5.190 tell
    /// 192.168.5.109, from bc:ee:7b:9d:ee:02, target MAC zero, followed by the
    /// 18 bytes of padding up to the 60-byte minimum frame.
    const REQUEST: [u8; 46] = [
        0x00, 0x01, // hardware type: Ethernet
        0x08, 0x00, // protocol type: IPv4
        0x06, 0x04, // lengths
        0x00, 0x01, // request
        0xbc, 0xee, 0x7b, 0x9d, 0xee, 0x02, // sender MAC
        0xc0, 0xa8, 0x05, 0x6d, // sender IP 192.168.5.109
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // target MAC (unknown)
        0xc0, 0xa8, 0x05, 0xbe, // target IP 192.168.5.190
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, // padding
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    ];

    /// The reply to [`REQUEST`] from the same capture: 192.168.5.190 is-at
    /// 40:16:7e:79:c7:36 (28 bytes, no padding as seen by the sender).
    const REPLY: [u8; PACKET_LEN] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x02, // reply
        0x40, 0x16, 0x7e, 0x79, 0xc7, 0x36, // sender MAC
        0xc0, 0xa8, 0x05, 0xbe, // sender IP 192.168.5.190
        0xbc, 0xee, 0x7b, 0x9d, 0xee, 0x02, // target MAC
        0xc0, 0xa8, 0x05, 0x6d, // target IP 192.168.5.109
    ];

    const ASKER: [u8; 6] = [0xbc, 0xee, 0x7b, 0x9d, 0xee, 0x02];
    const ANSWERER: [u8; 6] = [0x40, 0x16, 0x7e, 0x79, 0xc7, 0x36];

    #[test]
    fn new_checked_needs_28_bytes() {
        assert_eq!(ArpPacket::new_checked(&[][..]), Err(Error::Truncated));
        for len in 0..PACKET_LEN {
            assert_eq!(
                ArpPacket::new_checked(&REQUEST[..len]),
                Err(Error::Truncated),
                "len {len}"
            );
        }
        assert!(ArpPacket::new_checked(&REQUEST[..PACKET_LEN]).is_ok());
        assert!(ArpPacket::new_checked(&REQUEST[..]).is_ok());
    }

    #[test]
    fn new_checked_does_not_validate_fields() {
        let buf = [0xffu8; PACKET_LEN];
        let p = ArpPacket::new_checked(&buf[..]).unwrap();
        assert!(!p.is_ethernet_ipv4());
        assert_eq!(ArpRepr::parse(&p), None);
    }

    #[test]
    fn reads_a_linux_request() {
        let p = ArpPacket::new_checked(&REQUEST[..]).unwrap();
        assert_eq!(p.hardware_type(), 1);
        assert_eq!(p.protocol_type(), 0x0800);
        assert_eq!((p.hardware_len(), p.protocol_len()), (6, 4));
        assert_eq!(p.operation(), op::REQUEST);
        assert_eq!(p.sender_hardware_addr(), ASKER);
        assert_eq!(p.sender_protocol_addr(), Ipv4Addr::new(192, 168, 5, 109));
        assert_eq!(p.target_hardware_addr(), [0; 6]);
        assert_eq!(p.target_protocol_addr(), Ipv4Addr::new(192, 168, 5, 190));
        assert!(p.is_ethernet_ipv4());
        let repr = ArpRepr::parse(&p).unwrap();
        assert_eq!(
            repr,
            ArpRepr {
                operation: op::REQUEST,
                sender_mac: ASKER,
                sender_ip: Ipv4Addr::new(192, 168, 5, 109),
                target_mac: [0; 6],
                target_ip: Ipv4Addr::new(192, 168, 5, 190),
            }
        );
        assert!(!repr.is_gratuitous());
    }

    #[test]
    fn reads_a_reply() {
        let p = ArpPacket::new_checked(&REPLY[..]).unwrap();
        assert_eq!(p.operation(), op::REPLY);
        assert_eq!(p.sender_hardware_addr(), ANSWERER);
        assert_eq!(p.sender_protocol_addr(), Ipv4Addr::new(192, 168, 5, 190));
        assert_eq!(p.target_hardware_addr(), ASKER);
        assert_eq!(p.target_protocol_addr(), Ipv4Addr::new(192, 168, 5, 109));
        assert!(p.is_ethernet_ipv4());
        assert_eq!(ArpRepr::parse(&p).unwrap().operation, op::REPLY);
    }

    #[test]
    fn parse_emit_round_trip() {
        for bytes in [&REQUEST[..PACKET_LEN], &REPLY[..]] {
            let repr = ArpRepr::parse(&ArpPacket::new_checked(bytes).unwrap()).unwrap();
            // Emit over garbage: every one of the 28 bytes must be written.
            let mut buf = [0xa5u8; PACKET_LEN];
            repr.emit(&mut ArpPacket::new_checked(&mut buf[..]).unwrap());
            assert_eq!(&buf[..], bytes);
        }
    }

    #[test]
    fn emit_leaves_trailing_bytes_alone() {
        let repr = ArpRepr::parse(&ArpPacket::new_checked(&REPLY[..]).unwrap()).unwrap();
        let mut buf = [0xa5u8; PACKET_LEN + 4];
        repr.emit(&mut ArpPacket::new_checked(&mut buf[..]).unwrap());
        assert_eq!(&buf[..PACKET_LEN], &REPLY[..]);
        assert_eq!(&buf[PACKET_LEN..], &[0xa5; 4]);
    }

    /// Answering the request in place, as a router does: the reply equals
    /// the one captured.
    #[test]
    fn answers_the_request_in_place() {
        let mut buf = REQUEST;
        let mut p = ArpPacket::new_checked(&mut buf[..]).unwrap();
        let req = ArpRepr::parse(&ArpPacket::new_checked(&REQUEST[..]).unwrap()).unwrap();
        p.set_operation(op::REPLY);
        p.set_sender_hardware_addr(ANSWERER);
        p.set_sender_protocol_addr(req.target_ip);
        p.set_target_hardware_addr(req.sender_mac);
        p.set_target_protocol_addr(req.sender_ip);
        assert_eq!(&buf[..PACKET_LEN], &REPLY[..]);
        assert_eq!(&buf[PACKET_LEN..], &REQUEST[PACKET_LEN..]);
    }

    #[test]
    fn writes_fields() {
        let mut buf = [0u8; PACKET_LEN];
        let mut p = ArpPacket::new_checked(&mut buf[..]).unwrap();
        p.set_hardware_type(1);
        p.set_protocol_type(0x0800);
        p.set_hardware_len(6);
        p.set_protocol_len(4);
        p.set_operation(op::REQUEST);
        p.set_sender_hardware_addr(ASKER);
        p.set_sender_protocol_addr(Ipv4Addr::new(192, 168, 5, 109));
        p.set_target_hardware_addr([0; 6]);
        p.set_target_protocol_addr(Ipv4Addr::new(192, 168, 5, 190));
        assert_eq!(buf[..], REQUEST[..PACKET_LEN]);
    }

    #[test]
    fn parse_rejects_other_types_lengths_and_operations() {
        let base = REPLY;
        let cases: [(usize, u8); 6] = [
            (1, 0x06), // hardware type 6 (IEEE 802)
            (2, 0x86), // protocol type 0x8600
            (4, 0x10), // hardware length 16
            (5, 0x10), // protocol length 16 (IPv6-sized)
            (7, 0x03), // RARP request
            (7, 0x00), // operation 0
        ];
        for (at, value) in cases {
            let mut buf = base;
            buf[at] = value;
            let p = ArpPacket::new_checked(&buf[..]).unwrap();
            assert_eq!(ArpRepr::parse(&p), None, "byte {at} = {value:#04x}");
        }
        // Operation 0x0101: the high byte counts too.
        let mut buf = base;
        buf[6] = 0x01;
        assert_eq!(
            ArpRepr::parse(&ArpPacket::new_checked(&buf[..]).unwrap()),
            None
        );
    }

    #[test]
    fn gratuitous() {
        // An announcement as `arping -U` sends it: sender IP == target IP.
        let announce = ArpRepr {
            operation: op::REQUEST,
            sender_mac: ANSWERER,
            sender_ip: Ipv4Addr::new(192, 168, 5, 190),
            target_mac: [0xff; 6],
            target_ip: Ipv4Addr::new(192, 168, 5, 190),
        };
        assert!(announce.is_gratuitous());
        let mut buf = [0u8; PACKET_LEN];
        announce.emit(&mut ArpPacket::new_checked(&mut buf[..]).unwrap());
        let back = ArpRepr::parse(&ArpPacket::new_checked(&buf[..]).unwrap()).unwrap();
        assert_eq!(back, announce);
        assert!(back.is_gratuitous());
    }

    /// Accessors and setters never panic, whatever the buffer length at or
    /// above the minimum and whatever the bytes.
    #[test]
    fn accessors_never_panic_on_any_length() {
        for len in PACKET_LEN..=PACKET_LEN + 64 {
            for fill in [0x00u8, 0x5a, 0xff] {
                let mut buf = vec![fill; len];
                let p = ArpPacket::new_checked(&buf[..]).unwrap();
                let _ = (
                    p.hardware_type(),
                    p.protocol_type(),
                    p.hardware_len(),
                    p.protocol_len(),
                    p.operation(),
                    p.sender_hardware_addr(),
                    p.sender_protocol_addr(),
                    p.target_hardware_addr(),
                    p.target_protocol_addr(),
                    p.is_ethernet_ipv4(),
                    ArpRepr::parse(&p),
                );
                let mut p = ArpPacket::new_checked(&mut buf[..]).unwrap();
                p.set_hardware_len(fill);
                p.set_protocol_len(fill);
                p.set_operation(u16::from(fill));
                p.set_target_protocol_addr(Ipv4Addr::BROADCAST);
                assert_eq!(p.target_protocol_addr(), Ipv4Addr::BROADCAST);
                assert_eq!(p.into_inner().len(), len);
            }
        }
    }
}
