//! The classification key of an IPv6 packet: what [`Key`](super::Key) is to
//! IPv4, 64 bytes laid out for DPDK's ACL library as its `l3fwd` example
//! lays out IPv6 (each address as four 32-bit fields): a 1-byte first
//! field, the rest in whole 4-byte words, multi-byte values big-endian.
//!
//! | bytes  | field      | notes                                         |
//! |--------|------------|-----------------------------------------------|
//! | 0      | proto      | upper-layer protocol (after extension headers)|
//! | 1      | tcp_flags  | TCP flags (0 unless TCP)                      |
//! | 2      | dscp       | 0..=63                                        |
//! | 3      | flags      | [`FLAG_L4`] and one of the `CT_*` bits        |
//! | 4..20  | src        | IPv6 source, as on the wire                   |
//! | 20..36 | dst        | IPv6 destination, as on the wire              |
//! | 36..38 | sport      | BE                                            |
//! | 38..40 | dport      | BE                                            |
//! | 40..42 | in_port    | BE                                            |
//! | 42..44 | out_port   | BE                                            |
//! | 44..46 | vlan       | BE                                            |
//! | 46..48 | class      | BE                                            |
//! | 48..52 | mark       | BE                                            |
//! | 52..64 | (zero)     |                                               |

use super::key::{meta_word, CtBits, CT_ALL, FLAG_L4};
use crate::flow6::FlowSummary6;
use crate::PacketMeta;
use core::fmt;
use core::mem::{align_of, size_of};

/// Byte offsets of the fields in a [`Key6`] (for the ACL field definitions).
pub mod offset6 {
    pub const PROTO: u32 = 0;
    pub const TCP_FLAGS: u32 = 1;
    pub const DSCP: u32 = 2;
    pub const FLAGS: u32 = 3;
    pub const SRC: u32 = 4;
    pub const DST: u32 = 20;
    pub const SPORT: u32 = 36;
    pub const DPORT: u32 = 38;
    pub const IN_PORT: u32 = 40;
    pub const OUT_PORT: u32 = 42;
    pub const VLAN: u32 = 44;
    pub const CLASS: u32 = 46;
    pub const MARK: u32 = 48;
}

/// The match key of one IPv6 packet: 64 bytes in the layout above, aligned
/// to 4. The accessors return host-order values.
#[repr(C, align(4))]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Key6 {
    b: [u8; 64],
}

const _: () = assert!(size_of::<Key6>() == 64);
const _: () = assert!(align_of::<Key6>() == 4);

impl Default for Key6 {
    fn default() -> Self {
        Key6 { b: [0; 64] }
    }
}

impl Key6 {
    /// Size of a key in bytes.
    pub const SIZE: usize = size_of::<Key6>();

    /// The key of a packet: its flow fields, its metadata and its
    /// connection-tracking state (`ct`: one of the `CT_*` bits, 0 when
    /// untracked).
    #[inline]
    pub fn new(s: &FlowSummary6, meta: &PacketMeta, ct: CtBits) -> Key6 {
        use offset6::*;
        let l4 = if s.has_ports() { FLAG_L4 } else { 0 };
        let mut k = Key6::default();
        k.b[PROTO as usize] = s.proto;
        k.b[TCP_FLAGS as usize] = s.tcp_flags;
        k.b[DSCP as usize] = s.dscp;
        k.b[FLAGS as usize] = l4 | (ct & CT_ALL);
        k.put(SRC, &s.src);
        k.put(DST, &s.dst);
        k.put(SPORT, &s.sport.to_be_bytes());
        k.put(DPORT, &s.dport.to_be_bytes());
        k.put(IN_PORT, &meta.in_port.to_be_bytes());
        k.put(OUT_PORT, &meta.out_port.to_be_bytes());
        k.put(VLAN, &meta.vlan.to_be_bytes());
        k.put(CLASS, &meta.class.to_be_bytes());
        k.put(MARK, &meta.mark.to_be_bytes());
        k
    }

    /// The key of a plain IPv6 packet, read straight from its header: the
    /// fixed header followed at once by a TCP or UDP header (no extension
    /// header), that header inside both the payload length and the frame.
    /// For such a packet this is exactly `Key6::new(&FlowSummary6::parse(l3)?,
    /// meta, ct)` (and it is no fragment), without the summary and the
    /// walk in between: addresses and ports are copied as on the wire,
    /// which is the key's byte order. False for every other packet, `self`
    /// left as it was: the caller parses it.
    #[inline(always)]
    pub fn set_plain(&mut self, l3: &[u8], meta: &PacketMeta, ct: CtBits) -> bool {
        use offset6::*;
        const FIXED: usize = crate::wire::ipv6::HEADER_LEN;
        let Some((h, tcp_flags)) = FlowSummary6::plain(l3) else {
            return false;
        };
        // Stored field by field: fewer instructions than the words, for a
        // key written into an array and read a loop later.
        let b = &mut self.b;
        b[PROTO as usize] = h[6];
        b[TCP_FLAGS as usize] = tcp_flags;
        b[DSCP as usize] = (u16::from_be_bytes([h[0], h[1]]) >> 6) as u8 & 0x3f;
        b[FLAGS as usize] = FLAG_L4 | (ct & CT_ALL);
        // Source, destination and the two ports: one copy of 36 bytes.
        b[SRC as usize..DPORT as usize + 2].copy_from_slice(&{
            let mut a = [0u8; 36];
            a[..32].copy_from_slice(&h[8..40]);
            a[32..].copy_from_slice(&h[FIXED..FIXED + 4]);
            a
        });
        self.put(IN_PORT, &meta.in_port.to_be_bytes());
        self.put(OUT_PORT, &meta.out_port.to_be_bytes());
        self.put(VLAN, &meta.vlan.to_be_bytes());
        self.put(CLASS, &meta.class.to_be_bytes());
        self.put(MARK, &meta.mark.to_be_bytes());
        self.b[52..].fill(0);
        true
    }

    /// [`Key6::set_plain`]'s key as its eight 8-byte words
    /// ([`Key6::words`]), made in registers: what a flow cache hashes and
    /// compares before any key is stored (a key stored field by field and
    /// read back at once as words would wait on the stores of its bytes). Bytes 4..40 of
    /// the key are the header's 8..44 (source, destination, ports) as on
    /// the wire: four of them with the protocol fields, then four whole
    /// words.
    #[inline(always)]
    pub fn plain_words(l3: &[u8], meta: &PacketMeta, ct: CtBits) -> Option<[u64; 8]> {
        let (h, tcp_flags) = FlowSummary6::plain(l3)?;
        let word = |at: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&h[at..at + 8]);
            u64::from_le_bytes(x)
        };
        let dscp = (u16::from_be_bytes([h[0], h[1]]) >> 6) as u8 & 0x3f;
        let fields = u32::from_le_bytes([h[6], tcp_flags, dscp, FLAG_L4 | (ct & CT_ALL)]);
        let src_head = u32::from_le_bytes([h[8], h[9], h[10], h[11]]);
        // In-port, out-port, VLAN and class, each big-endian.
        let ports = meta_word(meta);
        Some([
            u64::from(fields) | u64::from(src_head) << 32,
            word(12),
            word(20),
            word(28),
            word(36),
            ports,
            u64::from(meta.mark.swap_bytes()),
            0,
        ])
    }

    /// The key's eight 8-byte words, little-endian: what the IPv6 flow
    /// cache hashes and compares.
    #[inline(always)]
    pub fn words(&self) -> [u64; 8] {
        std::array::from_fn(|i| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&self.b[i * 8..i * 8 + 8]);
            u64::from_le_bytes(x)
        })
    }

    /// The key of eight words as [`Key6::words`] gives them; bytes 52..64
    /// must be zero (as in every word set a packet makes), or the key could
    /// be a cache's empty slot.
    #[inline(always)]
    pub fn from_words(w: [u64; 8]) -> Key6 {
        let mut b = [0u8; 64];
        for (chunk, w) in b.chunks_exact_mut(8).zip(w) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        Key6 { b }
    }

    /// A key of these bytes (tests, the ACL's checks).
    pub const fn from_bytes(b: [u8; 64]) -> Key6 {
        Key6 { b }
    }

    pub fn as_bytes(&self) -> &[u8; 64] {
        &self.b
    }

    /// `self == other` in four 16-byte compares folded into one test,
    /// inline (the derived `==` of 64 bytes is a call to `memcmp`): what a
    /// flow cache compares on every lookup.
    #[inline(always)]
    pub fn same(&self, other: &Key6) -> bool {
        let q = |b: &[u8; 64], i: usize| {
            let mut x = [0u8; 16];
            x.copy_from_slice(&b[16 * i..16 * i + 16]);
            u128::from_ne_bytes(x)
        };
        let (a, b) = (&self.b, &other.b);
        let differ =
            (q(a, 0) ^ q(b, 0)) | (q(a, 1) ^ q(b, 1)) | (q(a, 2) ^ q(b, 2)) | (q(a, 3) ^ q(b, 3));
        differ == 0
    }

    fn put(&mut self, at: u32, v: &[u8]) {
        let at = at as usize;
        self.b[at..at + v.len()].copy_from_slice(v);
    }

    fn be16(&self, at: u32) -> u16 {
        let at = at as usize;
        u16::from_be_bytes([self.b[at], self.b[at + 1]])
    }

    fn addr(&self, at: u32) -> u128 {
        let at = at as usize;
        let mut a = [0u8; 16];
        a.copy_from_slice(&self.b[at..at + 16]);
        u128::from_be_bytes(a)
    }

    pub fn proto(&self) -> u8 {
        self.b[offset6::PROTO as usize]
    }
    pub fn tcp_flags(&self) -> u8 {
        self.b[offset6::TCP_FLAGS as usize]
    }
    pub fn dscp(&self) -> u8 {
        self.b[offset6::DSCP as usize]
    }
    pub fn flags(&self) -> u8 {
        self.b[offset6::FLAGS as usize]
    }
    /// Ports and TCP flags are valid ([`FLAG_L4`]).
    pub fn l4(&self) -> bool {
        self.flags() & FLAG_L4 != 0
    }
    /// The connection-tracking bits.
    pub fn ct(&self) -> CtBits {
        self.flags() & CT_ALL
    }
    /// The source address as a number (the wire's bytes, big-endian).
    pub fn src(&self) -> u128 {
        self.addr(offset6::SRC)
    }
    pub fn dst(&self) -> u128 {
        self.addr(offset6::DST)
    }
    pub fn sport(&self) -> u16 {
        self.be16(offset6::SPORT)
    }
    pub fn dport(&self) -> u16 {
        self.be16(offset6::DPORT)
    }
    pub fn in_port(&self) -> u16 {
        self.be16(offset6::IN_PORT)
    }
    pub fn out_port(&self) -> u16 {
        self.be16(offset6::OUT_PORT)
    }
    pub fn vlan(&self) -> u16 {
        self.be16(offset6::VLAN)
    }
    pub fn class(&self) -> u16 {
        self.be16(offset6::CLASS)
    }
    pub fn mark(&self) -> u32 {
        let at = offset6::MARK as usize;
        u32::from_be_bytes([self.b[at], self.b[at + 1], self.b[at + 2], self.b[at + 3]])
    }
}

impl fmt::Debug for Key6 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key6")
            .field("proto", &self.proto())
            .field("src", &std::net::Ipv6Addr::from(self.src()))
            .field("dst", &std::net::Ipv6Addr::from(self.dst()))
            .field("sport", &self.sport())
            .field("dport", &self.dport())
            .field("flags", &self.flags())
            .field("tcp_flags", &self.tcp_flags())
            .field("dscp", &self.dscp())
            .field("in_port", &self.in_port())
            .field("out_port", &self.out_port())
            .field("vlan", &self.vlan())
            .field("class", &self.class())
            .field("mark", &self.mark())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_is_byte_equality() {
        let mut rng = fastrand::Rng::with_seed(64);
        let key = Key6::from_bytes(std::array::from_fn(|_| rng.u8(..)));
        assert!(key.same(&key.clone()));
        // A difference in any one byte, in any bit, is seen.
        for at in 0..64 {
            for bit in 0..8 {
                let mut b = *key.as_bytes();
                b[at] ^= 1 << bit;
                let other = Key6::from_bytes(b);
                assert!(
                    !key.same(&other) && !other.same(&key),
                    "byte {at} bit {bit}"
                );
                assert_eq!(key.same(&other), key == other);
            }
        }
    }

    /// Over random IPv6 packets, many of them plain: a plain one's key is
    /// the parsed one's, and every other is left to the parse.
    #[test]
    fn a_plain_packet_s_key_is_the_parsed_one() {
        let mut rng = fastrand::Rng::with_seed(6);
        let mut plain = 0;
        for _ in 0..20_000 {
            let len = rng.usize(30..90);
            let mut l3: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
            if l3.len() >= 40 && rng.u8(..4) != 0 {
                l3[0] = 0x60 | (l3[0] & 0x0f);
                l3[6] = [6, 17, 0, 44, 58][rng.usize(..5)];
                let payload = if rng.bool() {
                    len - 40
                } else {
                    rng.usize(..len)
                };
                l3[4..6].copy_from_slice(&(payload as u16).to_be_bytes());
            }
            let mut meta = PacketMeta::received_on(rng.u16(..8));
            (meta.out_port, meta.vlan, meta.class, meta.mark) = (rng.u16(..), 3, 4, rng.u32(..));
            let mut k = Key6::from_bytes([0xee; 64]);
            let parsed = FlowSummary6::parse(&l3).map(|s| Key6::new(&s, &meta, 2));
            if k.set_plain(&l3, &meta, 2) {
                plain += 1;
                assert_eq!(Some(k), parsed, "{l3:02x?}");
            } else {
                assert_eq!(k, Key6::from_bytes([0xee; 64]), "left as it was");
            }
        }
        assert!(plain > 2_000, "{plain} plain packets");
    }

    /// A key's words make the same key back, and a plain packet's words
    /// are the key `set_plain` stores (held against the parsed one above),
    /// each field where the key reads it.
    #[test]
    fn words_round_trip_and_a_plain_packet_s_words_are_its_key_s() {
        let mut rng = fastrand::Rng::with_seed(6);
        for _ in 0..2000 {
            let b: [u8; 64] = std::array::from_fn(|i| if i < 52 { rng.u8(..) } else { 0 });
            let k = Key6::from_bytes(b);
            assert_eq!(Key6::from_words(k.words()), k);
        }
        let mut meta = PacketMeta::default();
        (meta.in_port, meta.out_port) = (0x0102, 0x0304);
        (meta.vlan, meta.class, meta.mark) = (0x0506, 0x0708, 0x090a_0b0c);
        let mut l3 = vec![0x6b, 0x80, 0, 0, 0, 8, 17, 64];
        l3.extend((0..32).map(|i| 0x20 + i as u8));
        l3.extend([0x12, 0x34, 0x00, 0x35, 0, 8, 0, 0]);
        let w = Key6::plain_words(&l3, &meta, 0).expect("a plain UDP packet");
        let mut k = Key6::default();
        assert!(k.set_plain(&l3, &meta, 0));
        assert_eq!(w, k.words());
        assert_eq!(
            (k.sport(), k.dport(), k.mark()),
            (0x1234, 0x35, 0x090a_0b0c)
        );
        assert_eq!((k.in_port(), k.class()), (0x0102, 0x0708));
        // Random plain TCP and UDP headers and metadata: the same key.
        for _ in 0..5000 {
            let mut l3: Vec<u8> = (0..60).map(|_| rng.u8(..)).collect();
            l3[0] = 0x60 | (l3[0] & 0x0f);
            (l3[4], l3[5], l3[6]) = (0, 20, [6, 17][rng.usize(..2)]);
            let mut meta = PacketMeta::default();
            (meta.in_port, meta.out_port) = (rng.u16(..), rng.u16(..));
            (meta.vlan, meta.class, meta.mark) = (rng.u16(..), rng.u16(..), rng.u32(..));
            let ct = rng.u8(..);
            let w = Key6::plain_words(&l3, &meta, ct).expect("plain");
            assert!(k.set_plain(&l3, &meta, ct));
            assert_eq!(w, k.words(), "{l3:02x?}");
        }
    }

    #[test]
    fn fields_land_at_their_offsets_and_read_back() {
        let s = FlowSummary6 {
            src: [0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1],
            dst: [0xfe; 16],
            proto: 6,
            dscp: 46,
            l4: true,
            sport: 1234,
            dport: 22,
            tcp_flags: 0x12,
            ..FlowSummary6::default()
        };
        let mut meta = PacketMeta::received_on(3);
        (meta.out_port, meta.vlan, meta.class, meta.mark) = (5, 7, 9, 0xdead_beef);
        let k = Key6::new(&s, &meta, crate::rules::CT_NEW | 0x80);
        let b = k.as_bytes();
        assert_eq!(b[..4], [6, 0x12, 46, FLAG_L4 | crate::rules::CT_NEW]);
        assert_eq!(b[4..20], s.src);
        assert_eq!(b[36..40], [4, 0xd2, 0, 22]);
        assert_eq!(b[48..52], [0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(b[52..], [0; 12]);
        assert_eq!(k.src(), u128::from_be_bytes(s.src));
        assert_eq!(
            (k.in_port(), k.out_port(), k.vlan(), k.class()),
            (3, 5, 7, 9)
        );
        assert!(k.l4());
    }
}
