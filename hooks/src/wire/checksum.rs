//! The Internet checksum (RFC 1071) and its incremental update (RFC 1624).

/// Fold a wide one's-complement sum to 16 bits (end-around carry).
#[inline(always)]
const fn fold(mut sum: u64) -> u16 {
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// One's-complement sum of `data` as big-endian 16-bit words, folded, not
/// complemented; an odd last byte is padded with a zero (RFC 1071). A header
/// whose checksum is right sums to `0xffff`.
#[inline]
pub fn sum(data: &[u8]) -> u16 {
    let mut acc: u64 = 0;
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        acc += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        acc += u64::from(u16::from_be_bytes([*last, 0]));
    }
    fold(acc)
}

/// The checksum field value for `data` whose checksum field reads zero:
/// the complement of [`sum`].
#[inline]
pub fn checksum(data: &[u8]) -> u16 {
    !sum(data)
}

/// RFC 1624 eqn. 3: the checksum `check` after one 16-bit word of the covered
/// data changed from `old` to `new`: `HC' = ~(~HC + ~m + m')`. Unlike the
/// older `HC' = HC - ~m - m'` form it never yields `0xffff` (negative zero)
/// where a full recomputation gives `0x0000`.
#[inline(always)]
pub const fn update(check: u16, old: u16, new: u16) -> u16 {
    !fold(!check as u64 + !old as u64 + new as u64)
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
