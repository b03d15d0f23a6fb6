//! 802.1Q / 802.1ad tag as it follows a tag protocol id: TCI and the next
//! ethertype (4 bytes). The TPID itself (0x8100, 0x88a8) is the preceding
//! ethertype field.

use super::{be16, set_be16, Error};

/// Length of the tag after its TPID: TCI (2) + ethertype (2).
pub const TAG_LEN: usize = 4;
/// Bits of the TCI that hold the VLAN id.
pub const VID_MASK: u16 = 0x0fff;

const TCI: usize = 0;
const TYPE: usize = 2;
const ZERO: [u8; TAG_LEN] = [0; TAG_LEN];

/// A view of a VLAN tag (TCI + ethertype) at the start of `buffer`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VlanTag<T: AsRef<[u8]>> {
    buffer: T,
}

impl<T: AsRef<[u8]>> VlanTag<T> {
    /// View `buffer`, which must hold at least the 4-byte tag.
    #[inline]
    pub fn new_checked(buffer: T) -> Result<Self, Error> {
        if buffer.as_ref().len() < TAG_LEN {
            return Err(Error::Truncated);
        }
        Ok(VlanTag { buffer })
    }

    /// The underlying buffer.
    pub fn into_inner(self) -> T {
        self.buffer
    }

    #[inline(always)]
    fn tag(&self) -> &[u8; TAG_LEN] {
        // Always `Some` after `new_checked`; the fallback keeps this panic-free.
        self.buffer.as_ref().first_chunk().unwrap_or(&ZERO)
    }

    /// Priority code point (3 bits).
    #[inline]
    pub fn pcp(&self) -> u8 {
        (be16(self.tag(), TCI) >> 13) as u8
    }

    /// Drop eligible indicator.
    #[inline]
    pub fn dei(&self) -> bool {
        be16(self.tag(), TCI) & 0x1000 != 0
    }

    /// VLAN id (12 bits).
    #[inline]
    pub fn vid(&self) -> u16 {
        be16(self.tag(), TCI) & VID_MASK
    }

    /// Ethertype of what follows the tag (or another TPID, or an 802.3 length).
    #[inline]
    pub fn ethertype(&self) -> u16 {
        be16(self.tag(), TYPE)
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VlanTag<T> {
    /// Set the whole TCI: priority, drop eligible, VLAN id.
    #[inline]
    pub fn set_tci(&mut self, pcp: u8, dei: bool, vid: u16) {
        let tci = (u16::from(pcp & 7) << 13) | (u16::from(dei) << 12) | (vid & VID_MASK);
        if let Some(t) = self.buffer.as_mut().first_chunk_mut() {
            set_be16::<TAG_LEN>(t, TCI, tci);
        }
    }

    /// Set the ethertype of what follows the tag.
    #[inline]
    pub fn set_ethertype(&mut self, value: u16) {
        if let Some(t) = self.buffer.as_mut().first_chunk_mut() {
            set_be16::<TAG_LEN>(t, TYPE, value);
        }
    }
}

/// A VLAN tag (the part after its TPID), decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VlanRepr {
    /// Priority code point (3 bits).
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN id (12 bits; 0 for a priority tag).
    pub vid: u16,
    /// Ethertype of what follows the tag.
    pub ethertype: u16,
}

impl VlanRepr {
    /// Decode `tag`.
    #[inline]
    pub fn parse<T: AsRef<[u8]> + ?Sized>(tag: &VlanTag<&T>) -> VlanRepr {
        VlanRepr {
            pcp: tag.pcp(),
            dei: tag.dei(),
            vid: tag.vid(),
            ethertype: tag.ethertype(),
        }
    }

    /// Length of what [`emit`](Self::emit) writes.
    #[inline]
    pub const fn header_len(&self) -> usize {
        TAG_LEN
    }

    /// Write the 4 bytes of the tag; a `pcp` or `vid` too wide for its
    /// field is cut to it.
    #[inline]
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]> + ?Sized>(&self, tag: &mut VlanTag<&mut T>) {
        tag.set_tci(self.pcp, self.dei, self.vid);
        tag.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_checked_needs_the_whole_tag() {
        assert_eq!(VlanTag::new_checked(&[0u8; 3][..]), Err(Error::Truncated));
        assert!(VlanTag::new_checked(&[0u8; 4][..]).is_ok());
    }

    #[test]
    fn reads_and_writes_tci_and_ethertype() {
        let mut buf = [0u8; 4];
        let mut t = VlanTag::new_checked(&mut buf[..]).unwrap();
        t.set_tci(5, true, 0x0abc);
        t.set_ethertype(0x0800);
        assert_eq!(buf, [0xba, 0xbc, 0x08, 0x00]);
        let t = VlanTag::new_checked(&buf[..]).unwrap();
        assert_eq!(
            (t.pcp(), t.dei(), t.vid(), t.ethertype()),
            (5, true, 0xabc, 0x0800)
        );
    }

    #[test]
    fn vid_ignores_priority_bits() {
        let t = VlanTag::new_checked(&[0xef, 0xff, 0x86, 0xdd][..]).unwrap();
        assert_eq!((t.pcp(), t.dei(), t.vid()), (7, false, 0xfff));
    }

    /// The tag of an IPv4 frame on VLAN 100, priority 0: TCI 0x0064, then
    /// ethertype 0x0800.
    #[test]
    fn repr_parse_emit_round_trip() {
        let captured = [0x00, 0x64, 0x08, 0x00];
        let repr = VlanRepr::parse(&VlanTag::new_checked(&captured[..]).unwrap());
        assert_eq!(
            repr,
            VlanRepr {
                pcp: 0,
                dei: false,
                vid: 100,
                ethertype: 0x0800
            }
        );
        let mut buf = [0xa5u8; 5];
        repr.emit(&mut VlanTag::new_checked(&mut buf[..]).unwrap());
        assert_eq!(buf[..TAG_LEN], captured);
        assert_eq!(buf[TAG_LEN], 0xa5);
        for (pcp, dei, vid) in [(7, true, 0xfff), (5, false, 1), (0, true, 0)] {
            let repr = VlanRepr {
                pcp,
                dei,
                vid,
                ethertype: 0x86dd,
            };
            let mut buf = [0u8; TAG_LEN];
            repr.emit(&mut VlanTag::new_checked(&mut buf[..]).unwrap());
            assert_eq!(
                VlanRepr::parse(&VlanTag::new_checked(&buf[..]).unwrap()),
                repr
            );
            assert_eq!(repr.header_len(), TAG_LEN);
        }
    }
}
