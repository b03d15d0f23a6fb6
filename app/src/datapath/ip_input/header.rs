//! ip_input's header checks: the kernel's `ip_rcv`, in full
//! ([`ipv4_input`]) and for the common case ([`plain_header`]: a 20-byte
//! header at byte 14, one compare or two), which ip_input asks first. The
//! property test in `datapath/fast_checks.rs` holds the two together. TTL is
//! not judged here: a packet for one of our own addresses may arrive with
//! TTL 1; only forwarding needs TTL > 1.

use hooks::wire::checksum::verify20_or_zero;
use hooks::wire::ethernet::HEADER_LEN;
use hooks::wire::ipv4::{field, Ipv4Packet, MIN_HEADER_LEN};
use hooks::wire::Error as WireError;
use hooks::{DropReason, PacketMeta};
use std::net::Ipv4Addr;

/// What the NIC says of the IPv4 header checksum (from the mbuf's offload flags).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CsumFlag {
    /// Verified good by the NIC: trusted, not recomputed.
    Good,
    /// Verified bad by the NIC: dropped, not recomputed.
    Bad,
    /// Not verified: computed here.
    Unknown,
}

/// A header that passed [`ipv4_input`]. Laid out as the header has its
/// fields (the addresses side by side, source first; TTL then protocol), in
/// 16 bytes: the checks copy them in few, wide stores, and a burst's array
/// of these is indexed with a shift.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(4))]
pub struct Ipv4Fields {
    /// Source address (martian check).
    pub src: Ipv4Addr,
    /// Destination address, for the route lookup.
    pub dst: Ipv4Addr,
    /// Frame length without Ethernet padding (L3 offset + total length):
    /// trim the packet to it.
    pub trimmed_len: u16,
    /// Offset of the L4 header (L3 offset + IHL × 4, options skipped).
    pub l4_offset: u16,
    /// TTL on arrival (forwarding needs > 1).
    pub ttl: u8,
    /// IP protocol number (1 ICMP, 6 TCP, 17 UDP, ...).
    pub protocol: u8,
}

impl Ipv4Fields {
    /// A placeholder for fixed per-burst arrays.
    pub const EMPTY: Ipv4Fields = Ipv4Fields {
        src: Ipv4Addr::UNSPECIFIED,
        dst: Ipv4Addr::UNSPECIFIED,
        trimmed_len: 0,
        l4_offset: 0,
        ttl: 0,
        protocol: 0,
    };
}

/// Check the IPv4 header at `meta.l3_offset`, in this order: 20 bytes
/// present, version 4, IHL >= 5, IHL × 4 bytes present, checksum (the NIC's
/// flag when it has one), IHL × 4 <= total length <= bytes after L3.
#[inline]
pub fn ipv4_input(
    frame: &[u8],
    meta: &PacketMeta,
    nic_csum: CsumFlag,
) -> Result<Ipv4Fields, DropReason> {
    let mut ok = Ipv4Fields::EMPTY;
    ipv4_input_into(frame, meta, nic_csum, &mut ok).map(|()| ok)
}

/// [`ipv4_input`] writing its result into `out` field by field: the burst
/// loop keeps results in a fixed array, and a whole `Result<Ipv4Fields, _>`
/// built on the stack and then copied costs a store-forwarding stall per
/// packet (narrow stores read back by a wide load).
#[inline(always)]
pub fn ipv4_input_into(
    frame: &[u8],
    meta: &PacketMeta,
    nic_csum: CsumFlag,
    out: &mut Ipv4Fields,
) -> Result<(), DropReason> {
    let l3 = usize::from(meta.l3_offset);
    let bytes = frame.get(l3..).unwrap_or(&[]);
    let ip = match Ipv4Packet::new_checked(bytes) {
        Ok(ip) => ip,
        Err(e) => return Err(header_error(bytes, e)),
    };
    if ip.version() != 4 {
        return Err(DropReason::Ipv4BadVersion);
    }
    let checksum_ok = match nic_csum {
        CsumFlag::Good => true,
        CsumFlag::Bad => false,
        CsumFlag::Unknown => ip.verify_checksum(),
    };
    if !checksum_ok {
        return Err(DropReason::Ipv4BadChecksum);
    }
    let header_len = ip.header_len();
    let total_len = usize::from(ip.total_len());
    if total_len > bytes.len() || total_len < header_len {
        return Err(DropReason::Ipv4BadTotalLength);
    }
    // Both fit: the frame (an mbuf segment) is at most 65535 bytes.
    out.src = ip.src_addr();
    out.dst = ip.dst_addr();
    out.trimmed_len = (l3 + total_len) as u16;
    out.l4_offset = (l3 + header_len) as u16;
    out.ttl = ip.ttl();
    out.protocol = ip.protocol();
    Ok(())
}

/// The drop reason for a header `Ipv4Packet::new_checked` refused: the
/// version is judged first once the fixed 20 bytes are there.
#[cold]
fn header_error(bytes: &[u8], e: WireError) -> DropReason {
    match bytes.first() {
        Some(b) if bytes.len() >= MIN_HEADER_LEN && b >> 4 != 4 => DropReason::Ipv4BadVersion,
        _ if e == WireError::Malformed => DropReason::Ipv4BadIhl,
        _ => DropReason::Ipv4Truncated,
    }
}

/// Whether `a` may never be routed as a source (RFC 1812 5.3.7): "this
/// network" 0/8, loopback 127/8, multicast 224/4, reserved 240/4 and the
/// limited broadcast.
#[inline(always)]
pub fn is_martian_source(a: Ipv4Addr) -> bool {
    is_martian_first_octet(a.octets()[0])
}

/// [`is_martian_source`] by the address's first byte.
#[inline(always)]
pub fn is_martian_first_octet(first: u8) -> bool {
    MARTIAN_FIRST_OCTET[usize::from(first)]
}

/// [`is_martian_first_octet`] as a table: one load, no compare chain.
static MARTIAN_FIRST_OCTET: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = i == 0 || i == 127 || i >= 224;
        i += 1;
    }
    t
};

/// The IPv4 header at byte 14 of `frame` if it is plain (see the module's
/// doc; `csum` is the NIC's word on the checksum): version 4, IHL 5, total
/// length from 20 to the frame's end, a right checksum.
#[inline(always)]
pub fn plain_ipv4(frame: &[u8], csum: CsumFlag) -> Option<&[u8; MIN_HEADER_LEN]> {
    let ip = header_at_14(frame)?;
    // 20 <= total length <= the bytes after the Ethernet header, in one
    // compare of u16s: below 20, the difference wraps to above 65515, and
    // any room above that holds every total length from 20 (an mbuf's
    // frame is at most 65535 bytes: the clamp costs nothing there).
    const MOST: u16 = u16::MAX - MIN_HEADER_LEN as u16;
    let room = frame.len() - (HEADER_LEN + MIN_HEADER_LEN);
    let room = u16::try_from(room).map_or(MOST, |r| r.min(MOST));
    let fits = total_len(ip).wrapping_sub(MIN_HEADER_LEN as u16) <= room;
    let checksum_ok = match csum {
        CsumFlag::Good => true,
        CsumFlag::Bad => false,
        // A zero header's sum passes this test; its version byte does not.
        CsumFlag::Unknown => verify20_or_zero(ip),
    };
    // `&`, not `&&`: every operand is computed anyway, and one branch is
    // cheaper than three.
    ((ip[field::VER_IHL] == 0x45) & fits & checksum_ok).then_some(ip)
}

/// What [`ipv4_input`] gives for a header [`plain_ipv4`] took.
#[inline(always)]
pub fn plain_fields(ip: &[u8; MIN_HEADER_LEN]) -> Ipv4Fields {
    Ipv4Fields {
        src: addr(ip, field::SRC),
        dst: addr(ip, field::DST),
        trimmed_len: HEADER_LEN as u16 + total_len(ip),
        l4_offset: (HEADER_LEN + MIN_HEADER_LEN) as u16,
        ttl: ip[field::TTL],
        protocol: ip[field::PROTOCOL],
    }
}

/// [`plain_ipv4`] and [`plain_fields`]: whether the header at byte 14 is
/// plain and, if so, its fields in `out`.
#[inline(always)]
pub fn plain_header(frame: &[u8], csum: CsumFlag, out: &mut Ipv4Fields) -> bool {
    match plain_ipv4(frame, csum) {
        Some(ip) => {
            *out = plain_fields(ip);
            true
        }
        None => false,
    }
}

/// The 20 bytes of an IPv4 header at byte 14 (one range, one length
/// compare).
#[inline(always)]
pub fn header_at_14(frame: &[u8]) -> Option<&[u8; MIN_HEADER_LEN]> {
    frame
        .get(HEADER_LEN..HEADER_LEN + MIN_HEADER_LEN)?
        .first_chunk()
}

/// [`header_at_14`], to write.
#[inline(always)]
pub fn header_at_14_mut(frame: &mut [u8]) -> Option<&mut [u8; MIN_HEADER_LEN]> {
    frame
        .get_mut(HEADER_LEN..HEADER_LEN + MIN_HEADER_LEN)?
        .first_chunk_mut()
}

/// The total length of a header.
#[inline(always)]
pub fn total_len(ip: &[u8; MIN_HEADER_LEN]) -> u16 {
    u16::from_be_bytes([ip[field::TOTAL_LEN], ip[field::TOTAL_LEN + 1]])
}

/// The IPv4 address at `at` of a header.
#[inline(always)]
fn addr(ip: &[u8; MIN_HEADER_LEN], at: usize) -> Ipv4Addr {
    Ipv4Addr::new(ip[at], ip[at + 1], ip[at + 2], ip[at + 3])
}

#[cfg(test)]
mod tests {
    use super::*;
    use hooks::testkit;
    use hooks::wire::ethernet::ethertype;

    const DST: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 7);

    fn meta() -> PacketMeta {
        let mut m = PacketMeta::received_on(0);
        m.protocol = ethertype::IPV4;
        m.l3_offset = 14;
        m
    }

    /// Ethernet + IPv4 (IHL `ihl` >= 5, `payload` bytes after the header,
    /// TTL 64, right checksum) + `pad` bytes of Ethernet padding.
    fn packet(ihl: u8, payload: usize, pad: usize) -> Vec<u8> {
        // Router alert (RFC 2113), then no-ops, as options.
        let options: Vec<u8> = (0..usize::from(ihl - 5) * 4)
            .map(|i| [0x94, 0x04, 0x00, 0x00].get(i).copied().unwrap_or(1))
            .collect();
        let mut f = testkit::ipv4([10, 0, 0, 1], DST, 17, &vec![0; payload])
            .ip_options(&options)
            .pad(false)
            .build();
        f.resize(f.len() + pad, 0);
        f
    }

    /// Recompute the checksum of the header at 14 (clamped to the frame).
    fn refill(f: &mut [u8]) {
        f[24..26].fill(0);
        let header_len = (usize::from(f[14] & 0x0f) * 4).clamp(20, f.len() - 14);
        let c = hooks::wire::checksum::checksum(&f[14..14 + header_len]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
    }

    fn input(f: &[u8], csum: CsumFlag) -> Result<Ipv4Fields, DropReason> {
        ipv4_input(f, &meta(), csum)
    }

    #[test]
    fn accepts_a_plain_packet() {
        let f = packet(5, 26, 0);
        let ok = Ipv4Fields {
            trimmed_len: 60,
            l4_offset: 34,
            dst: DST,
            src: Ipv4Addr::new(10, 0, 0, 1),
            ttl: 64,
            protocol: 17,
        };
        for csum in [CsumFlag::Unknown, CsumFlag::Good] {
            assert_eq!(input(&f, csum), Ok(ok));
        }
    }

    #[test]
    fn trimmed_length_excludes_ethernet_padding() {
        // 20 + 8 bytes of IP in a 60-byte frame: 18 bytes of padding.
        let f = packet(5, 8, 18);
        assert_eq!(f.len(), 60);
        assert_eq!(input(&f, CsumFlag::Unknown).unwrap().trimmed_len, 42);
    }

    #[test]
    fn options_are_skipped() {
        let f = packet(6, 8, 0);
        assert_eq!(&f[34..38], &[0x94, 0x04, 0x00, 0x00]);
        let ok = input(&f, CsumFlag::Unknown).unwrap();
        assert_eq!((ok.l4_offset, ok.trimmed_len, ok.dst), (38, 14 + 32, DST));
    }

    #[test]
    fn ihl_below_5_is_bad_ihl() {
        for ihl in 0..5 {
            let mut f = packet(5, 26, 0);
            f[14] = 0x40 | ihl;
            refill(&mut f);
            assert_eq!(
                input(&f, CsumFlag::Unknown),
                Err(DropReason::Ipv4BadIhl),
                "ihl {ihl}"
            );
        }
    }

    #[test]
    fn ihl_15_with_the_whole_header_in_the_frame() {
        let f = packet(15, 8, 0);
        let ok = input(&f, CsumFlag::Unknown).unwrap();
        assert_eq!((ok.l4_offset, ok.trimmed_len), (14 + 60, 14 + 68));
    }

    #[test]
    fn ihl_15_beyond_the_frame_is_truncated() {
        // A 60-byte frame holds 46 bytes of IP: a 60-byte header cannot fit.
        let mut f = packet(5, 26, 0);
        f[14] = 0x4f;
        refill(&mut f);
        assert_eq!(f.len(), 60);
        assert_eq!(input(&f, CsumFlag::Unknown), Err(DropReason::Ipv4Truncated));
        // One byte short of the full header.
        let f = packet(15, 0, 0);
        assert_eq!(
            input(&f[..f.len() - 1], CsumFlag::Good),
            Err(DropReason::Ipv4Truncated)
        );
    }

    #[test]
    fn under_20_bytes_is_truncated() {
        let f = packet(5, 0, 0);
        for len in [0, 14, 15, 33] {
            assert_eq!(
                input(&f[..len], CsumFlag::Good),
                Err(DropReason::Ipv4Truncated),
                "{len} bytes"
            );
        }
    }

    #[test]
    fn version_other_than_4() {
        for version in [0, 6, 15] {
            let mut f = packet(5, 26, 0);
            f[14] = (version << 4) | 5;
            refill(&mut f);
            assert_eq!(
                input(&f, CsumFlag::Unknown),
                Err(DropReason::Ipv4BadVersion),
                "version {version}"
            );
        }
        // IPv6's first byte (traffic class 0): version is judged before IHL.
        let mut f = packet(5, 26, 0);
        f[14] = 0x60;
        assert_eq!(input(&f, CsumFlag::Good), Err(DropReason::Ipv4BadVersion));
    }

    #[test]
    fn total_length_beyond_the_frame() {
        let mut f = packet(5, 26, 0);
        f[16..18].copy_from_slice(&47u16.to_be_bytes());
        refill(&mut f);
        assert_eq!(
            input(&f, CsumFlag::Unknown),
            Err(DropReason::Ipv4BadTotalLength)
        );
        f[16..18].copy_from_slice(&46u16.to_be_bytes());
        refill(&mut f);
        assert_eq!(input(&f, CsumFlag::Unknown).unwrap().trimmed_len, 60);
    }

    #[test]
    fn total_length_below_the_header() {
        let mut f = packet(5, 26, 0);
        f[16..18].copy_from_slice(&19u16.to_be_bytes());
        refill(&mut f);
        assert_eq!(
            input(&f, CsumFlag::Unknown),
            Err(DropReason::Ipv4BadTotalLength)
        );
        f[16..18].copy_from_slice(&20u16.to_be_bytes());
        refill(&mut f);
        assert_eq!(input(&f, CsumFlag::Unknown).unwrap().trimmed_len, 34);
        // With options the header is 24 bytes: 20 is too short.
        let mut f = packet(6, 8, 0);
        f[16..18].copy_from_slice(&20u16.to_be_bytes());
        refill(&mut f);
        assert_eq!(
            input(&f, CsumFlag::Unknown),
            Err(DropReason::Ipv4BadTotalLength)
        );
    }

    #[test]
    fn bad_checksum_computed_when_the_nic_did_not() {
        let mut f = packet(5, 26, 0);
        f[25] ^= 0x01;
        assert_eq!(
            input(&f, CsumFlag::Unknown),
            Err(DropReason::Ipv4BadChecksum)
        );
        // An option byte is covered, too.
        let mut f = packet(6, 8, 0);
        f[37] ^= 0x80;
        assert_eq!(
            input(&f, CsumFlag::Unknown),
            Err(DropReason::Ipv4BadChecksum)
        );
    }

    #[test]
    fn nic_checksum_flag_is_trusted() {
        let mut f = packet(5, 26, 0);
        f[25] ^= 0x01;
        assert!(input(&f, CsumFlag::Good).is_ok());
        let f = packet(5, 26, 0);
        assert_eq!(input(&f, CsumFlag::Bad), Err(DropReason::Ipv4BadChecksum));
    }

    #[test]
    fn martian_sources() {
        for a in [
            [0, 0, 0, 0],
            [0, 1, 2, 3],
            [127, 0, 0, 1],
            [224, 0, 0, 1],
            [239, 255, 255, 255],
            [240, 0, 0, 1],
            [255, 255, 255, 255],
        ] {
            assert!(is_martian_source(Ipv4Addr::from(a)), "{a:?}");
        }
        for a in [
            [1, 0, 0, 0],
            [10, 0, 0, 1],
            [126, 255, 255, 255],
            [128, 0, 0, 1],
            [223, 255, 255, 255],
        ] {
            assert!(!is_martian_source(Ipv4Addr::from(a)), "{a:?}");
        }
    }
}
