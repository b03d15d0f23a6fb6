//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624),
//! and the IPv4 pseudo-header that UDP and TCP checksums cover (RFC 768,
//! RFC 9293 section 3.1).

use std::net::Ipv4Addr;

/// Fold a wide one's-complement sum to 16 bits (end-around carry), in a
/// fixed number of steps (no loop): exact for any sum below 2^63.
#[inline(always)]
const fn fold(sum: u64) -> u16 {
    let s = (sum & 0xffff_ffff) + (sum >> 32); // < 2^33
    let s = (s & 0xffff_ffff) + (s >> 32); // <= 2^32
    let s = (s & 0xffff) + (s >> 16); // < 2^17
    let s = (s & 0xffff) + (s >> 16); // <= 0x10000
    let s = (s & 0xffff) + (s >> 16); // <= 0xffff
    s as u16
}

/// [`fold`] for sums below 2^35 (a 20-byte header in 32-bit words, or an
/// RFC 1624 update): three short steps instead of five.
#[inline(always)]
const fn fold_short(sum: u64) -> u16 {
    let s = (sum & 0xffff) + ((sum >> 16) & 0xffff) + (sum >> 32); // < 3 * 2^16
    let s = (s & 0xffff) + (s >> 16); // < 2^16 + 3
    let s = (s & 0xffff) + (s >> 16); // <= 0xffff
    s as u16
}

/// The five 32-bit words of a 20-byte header, added in native byte order.
#[inline(always)]
fn wide_sum20(h: &[u8; 20]) -> u64 {
    let mut acc: u64 = 0;
    for i in 0..5 {
        acc += u64::from(u32::from_ne_bytes([
            h[4 * i],
            h[4 * i + 1],
            h[4 * i + 2],
            h[4 * i + 3],
        ]));
    }
    acc
}

/// [`sum`] of an IPv4 header without options: five 32-bit additions,
/// fully unrolled.
#[inline(always)]
pub fn sum20(h: &[u8; 20]) -> u16 {
    u16::from_be(fold_short(wide_sum20(h)))
}

/// Whether an IPv4 header without options has a right checksum, i.e.
/// `sum20(h) == 0xffff`, with less work: folding keeps a sum's value modulo
/// 0xffff (2^16 = 1 mod 0xffff) and gives 0 only for a zero sum, so the
/// folded sum is 0xffff exactly when the wide sum is a non-zero multiple of
/// 0xffff, in either byte order. A multiply replaces the three fold steps.
///
/// The sum is of one 32-bit and two 64-bit words, with end-around carries:
/// 2^64 = 1 mod 0xffff too, and a carry makes the sum non-zero, so it is 0
/// only for a zero header. Three loads and two carrying additions.
#[inline(always)]
pub fn verify20(h: &[u8; 20]) -> bool {
    let acc = wrapped_sum20(h);
    acc != 0 && multiple_of_ffff(acc)
}

/// [`verify20`], but true for an all-zero header too: for a caller that
/// refuses that header anyway (e.g. by its version byte), one test fewer.
#[inline(always)]
pub fn verify20_or_zero(h: &[u8; 20]) -> bool {
    multiple_of_ffff(wrapped_sum20(h))
}

/// [`verify20`]'s sum: one 32-bit and two 64-bit words with end-around
/// carries, 0 only for a zero header.
#[inline(always)]
fn wrapped_sum20(h: &[u8; 20]) -> u64 {
    let (a, rest) = h.split_first_chunk::<4>().unwrap_or((&[0; 4], &[]));
    let (b, c) = rest.split_first_chunk::<8>().unwrap_or((&[0; 8], &[]));
    let c = c.first_chunk::<8>().copied().unwrap_or([0; 8]);
    let (acc, carry) = u64::from_ne_bytes(*b).overflowing_add(u64::from_ne_bytes(c));
    let a = u64::from(u32::from_ne_bytes(*a)) + u64::from(carry);
    let (acc, carry) = acc.overflowing_add(a);
    // No overflow: with a carry, acc < a <= 2^32.
    acc + u64::from(carry)
}

/// Whether `x` is a multiple of 0xffff. A multiple of 0xffff (odd) times
/// its inverse mod 2^64 is the quotient, at most u64::MAX / 0xffff; any
/// other value lands above (the exact-division test): one multiply and one
/// compare.
#[inline(always)]
fn multiple_of_ffff(x: u64) -> bool {
    const INVERSE: u64 = 0xfffe_fffe_fffe_ffff;
    const _: () = assert!(INVERSE.wrapping_mul(0xffff) == 1);
    x.wrapping_mul(INVERSE) <= u64::MAX / 0xffff
}

/// One's-complement sum of `data` as big-endian 16-bit words, folded, not
/// complemented; an odd last byte is padded with a zero (RFC 1071). A header
/// whose checksum is right sums to `0xffff`.
///
/// Adds 32 bits at a time in native byte order and swaps at the end (RFC 1071
/// section 2(B): the sum is byte-order independent): an IPv4 header is five
/// additions, not ten.
#[inline]
pub fn sum(data: &[u8]) -> u16 {
    let mut acc: u64 = 0;
    let mut quads = data.chunks_exact(4);
    for q in &mut quads {
        acc += u64::from(u32::from_ne_bytes([q[0], q[1], q[2], q[3]]));
    }
    let rest = quads.remainder();
    let mut words = rest.chunks_exact(2);
    for w in &mut words {
        acc += u64::from(u16::from_ne_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        acc += u64::from(u16::from_ne_bytes([*last, 0]));
    }
    u16::from_be(fold(acc))
}

/// The checksum field value for `data` whose checksum field reads zero:
/// the complement of [`sum`].
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    !sum(data)
}

/// One's-complement sum of two folded sums (end-around carry).
#[inline]
pub const fn combine(a: u16, b: u16) -> u16 {
    let s = a as u32 + b as u32;
    ((s & 0xffff) + (s >> 16)) as u16
}

/// [`sum`] of the IPv4 pseudo-header of a UDP or TCP segment: source and
/// destination address, zero, protocol, and `length`, the segment's length
/// (header and data) in bytes.
#[inline]
pub fn pseudo_header(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, length: u16) -> u16 {
    let [s0, s1, s2, s3] = src.octets();
    let [d0, d1, d2, d3] = dst.octets();
    let [l0, l1] = length.to_be_bytes();
    sum(&[s0, s1, s2, s3, d0, d1, d2, d3, 0, protocol, l0, l1])
}

/// The checksum field value of a UDP or TCP `segment` (header and data,
/// checksum field reading zero) sent from `src` to `dst`: the complement
/// of the pseudo-header's sum and the segment's.
#[inline]
pub fn transport(src: Ipv4Addr, dst: Ipv4Addr, protocol: u8, segment: &[u8]) -> u16 {
    let length = u16::try_from(segment.len()).unwrap_or(u16::MAX);
    !combine(pseudo_header(src, dst, protocol, length), sum(segment))
}

/// RFC 1624 eqn. 3: the checksum `check` after one 16-bit word of the covered
/// data changed from `old` to `new`: `HC' = ~(~HC + ~m + m')`. Unlike the
/// older `HC' = HC - ~m - m'` form it never yields `0xffff` (negative zero)
/// where a full recomputation gives `0x0000`.
#[inline(always)]
pub const fn update(check: u16, old: u16, new: u16) -> u16 {
    !fold_short(!check as u64 + !old as u64 + new as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc1071_example() {
        // RFC 1071 section 3: words 0001 f203 f4f5 f6f7 sum to ddf2.
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(sum(&data), 0xddf2);
        assert_eq!(checksum(&data), !0xddf2);
    }

    #[test]
    fn fold_handles_every_carry() {
        assert_eq!(fold(0), 0);
        assert_eq!(fold(0xffff), 0xffff);
        assert_eq!(fold(0x1_0000), 1);
        assert_eq!(fold(0x1_fffe), 0xffff);
        assert_eq!(fold(0xffff_ffff), 0xffff);
        assert_eq!(fold(0xffff_ffff_ffff), 0xffff);
        // The loop form, for comparison, on a spread of values.
        let mut rng = fastrand::Rng::with_seed(0x9e37_79b9_7f4a_7c15);
        for _ in 0..10_000 {
            let v = rng.u64(..) >> 24;
            let mut l = v;
            while l >> 16 != 0 {
                l = (l & 0xffff) + (l >> 16);
            }
            assert_eq!(fold(v), l as u16, "{v:#x}");
        }
    }

    #[test]
    fn fold_short_equals_fold_below_2_35() {
        let mut rng = fastrand::Rng::with_seed(0x0bad_cafe_f00d_d00d);
        for _ in 0..10_000 {
            let v = rng.u64(..) >> 29;
            assert_eq!(fold_short(v), fold(v), "{v:#x}");
        }
        assert_eq!(fold_short((1 << 35) - 1), fold((1 << 35) - 1));
    }

    #[test]
    fn verify20_agrees_with_the_sum() {
        let mut rng = fastrand::Rng::with_seed(0x0123_4567_89ab_cdef);
        for _ in 0..20_000 {
            let mut h = [0u8; 20];
            rng.fill(&mut h);
            assert_eq!(verify20(&h), sum20(&h) == 0xffff, "{h:02x?}");
            assert_eq!(verify20_or_zero(&h), verify20(&h), "{h:02x?}");
            // Make it right, then it must verify.
            h[10..12].fill(0);
            let c = checksum(&h);
            h[10..12].copy_from_slice(&c.to_be_bytes());
            assert!(verify20(&h), "{h:02x?}");
        }
        assert!(!verify20(&[0; 20]));
        assert!(verify20_or_zero(&[0; 20]));
        assert!(verify20(&[0xff; 20]));
    }

    #[test]
    fn sum20_equals_sum() {
        let mut rng = fastrand::Rng::with_seed(0x1234_5678_9abc_def0);
        for _ in 0..1000 {
            let mut h = [0u8; 20];
            rng.fill(&mut h);
            assert_eq!(sum20(&h), sum(&h));
        }
    }

    #[test]
    fn odd_length_pads_with_zero() {
        assert_eq!(sum(&[0x12, 0x34, 0x56]), 0x1234 + 0x5600);
        assert_eq!(sum(&[]), 0);
    }

    #[test]
    fn known_ipv4_header() {
        // A textbook header (Wikipedia, "IPv4 header checksum"): checksum b861.
        let mut h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(checksum(&h), 0xb861);
        h[10..12].copy_from_slice(&0xb861u16.to_be_bytes());
        assert_eq!(sum(&h), 0xffff);
    }

    /// RFC 1071 section 2(A): the sum is that of its parts, whatever the split.
    #[test]
    fn combine_adds_partial_sums() {
        let data = [0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7];
        assert_eq!(combine(sum(&data[..4]), sum(&data[4..])), 0xddf2);
        assert_eq!(combine(0xffff, 0x0001), 0x0001);
        assert_eq!(combine(0, 0), 0);
    }

    /// A UDP datagram captured on a Linux veth with checksum offload off
    /// (AF_PACKET): 192.0.2.1.40000 > 192.0.2.2.7, "fastpath", checksum
    /// 0x20e3.
    #[test]
    fn known_udp_checksum() {
        let src = Ipv4Addr::new(192, 0, 2, 1);
        let dst = Ipv4Addr::new(192, 0, 2, 2);
        let mut seg = vec![0x9c, 0x40, 0x00, 0x07, 0x00, 0x10, 0x20, 0xe3];
        seg.extend_from_slice(b"fastpath");
        let whole = combine(pseudo_header(src, dst, 17, 16), sum(&seg));
        assert_eq!(whole, 0xffff);
        seg[6..8].fill(0);
        assert_eq!(transport(src, dst, 17, &seg), 0x20e3);
    }

    #[test]
    fn carries_wrap_around() {
        assert_eq!(sum(&[0xff, 0xff, 0x00, 0x01]), 0x0001);
        assert_eq!(sum(&[0xff; 64]), 0xffff);
    }

    #[test]
    fn update_matches_recomputation_for_any_word_change() {
        let data = [0x45, 0x00, 0x12, 0x34, 0xab, 0xcd, 0x00, 0x00];
        let check = checksum(&data);
        for new in [0x0000, 0x0001, 0x1234, 0xfffe, 0xffff] {
            let old = u16::from_be_bytes([data[2], data[3]]);
            let expect = {
                let mut d = data;
                d[2..4].copy_from_slice(&u16::to_be_bytes(new));
                checksum(&d)
            };
            assert_eq!(update(check, old, new), expect, "new {new:#06x}");
        }
    }
}
