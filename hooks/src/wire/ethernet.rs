//! Ethernet II header: destination, source, ethertype (14 bytes).

use super::{be16, set_be16, Error};

/// Length of the Ethernet header (`ETH_HLEN`).
pub const HEADER_LEN: usize = 14;
/// Shortest valid frame without FCS (`ETH_ZLEN`); anything shorter is a runt.
pub const MIN_FRAME_LEN: usize = 60;
/// The broadcast address ff:ff:ff:ff:ff:ff.
pub const BROADCAST: [u8; 6] = [0xff; 6];

/// Ethertypes fastpath knows, and the 802.3 boundary.
pub mod ethertype {
    pub const IPV4: u16 = 0x0800;
    pub const ARP: u16 = 0x0806;
    pub const IPV6: u16 = 0x86dd;
    /// 802.1Q VLAN tag (C-tag).
    pub const VLAN: u16 = 0x8100;
    /// 802.1ad service tag (S-tag), the outer tag of QinQ.
    pub const QINQ: u16 = 0x88a8;
    /// Smallest ethertype (`ETH_P_802_3_MIN`); a smaller value is an 802.3 length.
    pub const MIN: u16 = 0x0600;
}

/// The I/G bit is set: a group (multicast or broadcast) address.
#[inline(always)]
pub const fn is_multicast(mac: &[u8; 6]) -> bool {
    mac[0] & 1 != 0
}

/// ff:ff:ff:ff:ff:ff.
#[inline(always)]
pub fn is_broadcast(mac: &[u8; 6]) -> bool {
    *mac == BROADCAST
}

/// Byte offsets of the Ethernet header's fields.
pub mod field {
    pub const DST: usize = 0;
    pub const SRC: usize = 6;
    pub const TYPE: usize = 12;
}
use field::*;
const ZERO: [u8; HEADER_LEN] = [0; HEADER_LEN];

/// A view of an Ethernet II frame at the start of `buffer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EthernetFrame<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// View `buffer`, which must hold at least the 14-byte header.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        if buffer.as_ref().len() < HEADER_LEN {
            return Err(Error::Truncated);
        }
        Ok(EthernetFrame { buffer })
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

    /// Destination MAC address.
    #[inline]
    pub fn dst_addr(&self) -> [u8; 6] {
        let h = self.header();
        [
            h[DST],
            h[DST + 1],
            h[DST + 2],
            h[DST + 3],
            h[DST + 4],
            h[DST + 5],
        ]
    }

    /// Source MAC address.
    #[inline]
    pub fn src_addr(&self) -> [u8; 6] {
        let h = self.header();
        [
            h[SRC],
            h[SRC + 1],
            h[SRC + 2],
            h[SRC + 3],
            h[SRC + 4],
            h[SRC + 5],
        ]
    }

    /// Ethertype, or an 802.3 length when below [`ethertype::MIN`].
    #[inline]
    pub fn ethertype(&self) -> u16 {
        be16(self.header(), TYPE)
    }

    /// Everything after the header (VLAN tags included, if any).
    #[inline]
    pub fn payload(&self) -> &[u8] {
        self.buffer.as_ref().get(HEADER_LEN..).unwrap_or(&[])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    #[inline(always)]
    fn header_mut(&mut self) -> Option<&mut [u8; HEADER_LEN]> {
        self.buffer.as_mut().first_chunk_mut()
    }

    /// Set the destination MAC address.
    #[inline]
    pub fn set_dst_addr(&mut self, mac: [u8; 6]) {
        if let Some(h) = self.header_mut() {
            h[DST..DST + 6].copy_from_slice(&mac);
        }
    }

    /// Set the source MAC address.
    #[inline]
    pub fn set_src_addr(&mut self, mac: [u8; 6]) {
        if let Some(h) = self.header_mut() {
            h[SRC..SRC + 6].copy_from_slice(&mac);
        }
    }

    /// Set the ethertype (or 802.3 length).
    #[inline]
    pub fn set_ethertype(&mut self, value: u16) {
        if let Some(h) = self.header_mut() {
            set_be16(h, TYPE, value);
        }
    }

    /// Everything after the header, writable.
    #[inline]
    pub fn payload_mut(&mut self) -> &mut [u8] {
        self.buffer
            .as_mut()
            .get_mut(HEADER_LEN..)
            .unwrap_or(&mut [])
    }
}

/// An Ethernet II header, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EthernetRepr {
    pub dst_addr: [u8; 6],
    pub src_addr: [u8; 6],
    /// The first ethertype: a TPID when a VLAN tag follows.
    pub ethertype: u16,
}

impl EthernetRepr {
    /// Decode the header of `frame`.
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(frame: &EthernetFrame<&T>) -> EthernetRepr {
        EthernetRepr {
            dst_addr: frame.dst_addr(),
            src_addr: frame.src_addr(),
            ethertype: frame.ethertype(),
        }
    }

    /// Length of the header [`emit`](Self::emit) writes.
    #[inline]
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Write the 14 header bytes; the payload is left alone.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, frame: &mut EthernetFrame<&mut T>) {
        frame.set_dst_addr(self.dst_addr);
        frame.set_src_addr(self.src_addr);
        frame.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FRAME: [u8; 16] = [
        0x02, 0x00, 0x00, 0x00, 0x00, 0x01, // dst
        0x02, 0x00, 0x00, 0x00, 0x00, 0x02, // src
        0x08, 0x00, // IPv4
        0x45, 0x00,
    ];

    #[test]
    fn new_checked_needs_the_whole_header() {
        assert_eq!(
            EthernetFrame::new_checked(&FRAME[..13]),
            Err(Error::Truncated)
        );
        assert!(EthernetFrame::new_checked(&FRAME[..14]).is_ok());
        assert_eq!(EthernetFrame::new_checked(&[][..]), Err(Error::Truncated));
    }

    #[test]
    fn reads_fields() {
        let f = EthernetFrame::new_checked(&FRAME[..]).unwrap();
        assert_eq!(f.dst_addr(), [2, 0, 0, 0, 0, 1]);
        assert_eq!(f.src_addr(), [2, 0, 0, 0, 0, 2]);
        assert_eq!(f.ethertype(), ethertype::IPV4);
        assert_eq!(f.payload(), &[0x45, 0x00]);
        let bare = EthernetFrame::new_checked(&FRAME[..14]).unwrap();
        assert!(bare.payload().is_empty());
    }

    #[test]
    fn writes_fields() {
        let mut buf = [0u8; 16];
        let mut f = EthernetFrame::new_checked(&mut buf[..]).unwrap();
        f.set_dst_addr([2, 0, 0, 0, 0, 1]);
        f.set_src_addr([2, 0, 0, 0, 0, 2]);
        f.set_ethertype(ethertype::IPV4);
        f.payload_mut().copy_from_slice(&[0x45, 0x00]);
        assert_eq!(buf, FRAME);
    }

    #[test]
    fn repr_parse_emit_round_trip() {
        let repr = EthernetRepr::parse(&EthernetFrame::new_checked(&FRAME[..]).unwrap());
        assert_eq!(
            repr,
            EthernetRepr {
                dst_addr: [2, 0, 0, 0, 0, 1],
                src_addr: [2, 0, 0, 0, 0, 2],
                ethertype: ethertype::IPV4,
            }
        );
        assert_eq!(repr.header_len(), HEADER_LEN);
        // Over garbage: every header byte is written, the payload is not.
        let mut buf = [0xa5u8; 16];
        repr.emit(&mut EthernetFrame::new_checked(&mut buf[..]).unwrap());
        assert_eq!(buf[..HEADER_LEN], FRAME[..HEADER_LEN]);
        assert_eq!(buf[HEADER_LEN..], [0xa5, 0xa5]);
    }

    #[test]
    fn address_classes() {
        assert!(is_broadcast(&BROADCAST) && is_multicast(&BROADCAST));
        assert!(is_multicast(&[0x01, 0x00, 0x5e, 0, 0, 1]));
        assert!(!is_broadcast(&[0x01, 0x00, 0x5e, 0, 0, 1]));
        assert!(!is_multicast(&[0x02, 0, 0, 0, 0, 1]));
    }
}
