//! The classification key: what the rule matchers look at for one packet,
//! 32 bytes laid out for DPDK's ACL library (`rte_acl`). That library reads
//! its input fields in network byte order, wants a 1-byte first field, and
//! reads the rest as 4-byte words, so multi-byte values are stored
//! big-endian and fields are grouped in whole words:
//!
//! | bytes  | field      | notes                                         |
//! |--------|------------|-----------------------------------------------|
//! | 0      | proto      | IP protocol                                   |
//! | 1      | tcp_flags  | TCP flags (0 unless TCP)                      |
//! | 2      | dscp       | 0..=63                                        |
//! | 3      | flags      | [`FLAG_L4`] and one of the `CT_*` bits        |
//! | 4..8   | src        | IPv4 source, BE                               |
//! | 8..12  | dst        | IPv4 destination, BE                          |
//! | 12..14 | sport      | BE                                            |
//! | 14..16 | dport      | BE                                            |
//! | 16..18 | in_port    | BE                                            |
//! | 18..20 | out_port   | BE                                            |
//! | 20..22 | vlan       | BE                                            |
//! | 22..24 | class      | BE                                            |
//! | 24..28 | mark       | BE                                            |
//! | 28..32 | (zero)     |                                               |

use crate::{FlowSummary, PacketMeta};
use core::fmt;
use core::mem::{align_of, size_of};

/// Connection-tracking state bits of a key ([`CT_NEW`], [`CT_ESTABLISHED`],
/// [`CT_RELATED`]); 0 = untracked.
pub type CtBits = u8;

/// `flags` bit: the L4 header was read and the packet is TCP or UDP
/// ([`FlowSummary::has_ports`]): ports (and TCP flags) are valid. Clear for
/// non-first fragments, truncated L4 headers and other protocols.
pub const FLAG_L4: u8 = 0x01;
/// `flags` bit: the packet starts a new connection.
pub const CT_NEW: CtBits = 0x02;
/// `flags` bit: the packet belongs to an established connection.
pub const CT_ESTABLISHED: CtBits = 0x04;
/// `flags` bit: the packet is related to a known connection (e.g. an ICMP
/// error about it).
pub const CT_RELATED: CtBits = 0x08;
/// Every connection-tracking bit.
pub const CT_ALL: CtBits = CT_NEW | CT_ESTABLISHED | CT_RELATED;

/// Byte offsets of the fields in a [`Key`] (for the ACL field definitions).
pub mod offset {
    pub const PROTO: u32 = 0;
    pub const TCP_FLAGS: u32 = 1;
    pub const DSCP: u32 = 2;
    pub const FLAGS: u32 = 3;
    pub const SRC: u32 = 4;
    pub const DST: u32 = 8;
    pub const SPORT: u32 = 12;
    pub const DPORT: u32 = 14;
    pub const IN_PORT: u32 = 16;
    pub const OUT_PORT: u32 = 18;
    pub const VLAN: u32 = 20;
    pub const CLASS: u32 = 22;
    pub const MARK: u32 = 24;
}

/// The match key of one packet: 32 bytes in the layout above, aligned to
/// 4. The accessors return host-order values.
#[repr(C, align(4))]
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Key {
    b: [u8; 32],
}

const _: () = assert!(size_of::<Key>() == 32);
const _: () = assert!(align_of::<Key>() == 4);

impl Key {
    /// Size of a key in bytes.
    pub const SIZE: usize = size_of::<Key>();

    /// A key no packet has (bytes 28..32 are never set): what an empty
    /// slot of a cache holds.
    pub(crate) const UNUSED: Key = Key { b: [0xff; 32] };

    /// The key of a packet: its flow fields, its metadata (ports, VLAN,
    /// class, mark) and its connection-tracking state (`ct`: one of the
    /// `CT_*` bits, 0 when untracked; other bits are ignored).
    #[inline]
    pub fn new(s: &FlowSummary, meta: &PacketMeta, ct: CtBits) -> Key {
        let l4 = if s.has_ports() { FLAG_L4 } else { 0 };
        let mut k = Key::default();
        k.b[offset::PROTO as usize] = s.proto;
        k.b[offset::TCP_FLAGS as usize] = s.tcp_flags;
        k.b[offset::DSCP as usize] = s.dscp;
        k.b[offset::FLAGS as usize] = l4 | (ct & CT_ALL);
        k.put(offset::SRC, &s.src.to_be_bytes());
        k.put(offset::DST, &s.dst.to_be_bytes());
        k.put(offset::SPORT, &s.sport.to_be_bytes());
        k.put(offset::DPORT, &s.dport.to_be_bytes());
        k.put(offset::IN_PORT, &meta.in_port.to_be_bytes());
        k.put(offset::OUT_PORT, &meta.out_port.to_be_bytes());
        k.put(offset::VLAN, &meta.vlan.to_be_bytes());
        k.put(offset::CLASS, &meta.class.to_be_bytes());
        k.put(offset::MARK, &meta.mark.to_be_bytes());
        k
    }

    /// The key of a plain packet, read straight from its IPv4 header: a
    /// 20-byte header (no options), not a fragment, TCP or UDP with its
    /// ports inside the datagram. For such a packet this is exactly
    /// `Key::new(&FlowSummary::parse(l3)?, meta, ct)` (and the packet is no
    /// business of the fragment checks), without the summary in between:
    /// addresses and ports are copied as they are on the wire, which is the
    /// key's byte order. `None` for every other packet: the caller parses it.
    #[inline(always)]
    pub fn of_plain(l3: &[u8], meta: &PacketMeta, ct: CtBits) -> Option<Key> {
        let mut key = Key::default();
        key.set_plain(l3, meta, ct).then_some(key)
    }

    /// [`Key::of_plain`] written in place, into a key the caller keeps (a
    /// burst's array): true if the packet is plain; false leaves `self` as
    /// it was.
    #[inline(always)]
    pub fn set_plain(&mut self, l3: &[u8], meta: &PacketMeta, ct: CtBits) -> bool {
        match Key::plain_words(l3, meta, ct) {
            Some(w) => {
                *self = Key::from_words(w);
                true
            }
            None => false,
        }
    }

    /// [`Key::of_plain`] as the key's four 8-byte words
    /// ([`Key::words`]), made in registers: the header read as three
    /// little-endian words (addresses and ports stay as on the wire, which
    /// is the key's byte order), the metadata's 16-bit fields swapped in
    /// one word. What a flow cache hashes and compares before any key is
    /// stored.
    #[inline(always)]
    pub fn plain_words(l3: &[u8], meta: &PacketMeta, ct: CtBits) -> Option<[u64; 4]> {
        const IHL5: usize = 20;
        // A UDP header's 8 bytes at least (what any plain packet has).
        if l3.len() < IHL5 + 8 {
            return None;
        }
        let ip = l3.first_chunk::<24>()?;
        let word = |at: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&ip[at..at + 8]);
            u64::from_le_bytes(x)
        };
        let (h0, h1, ports) = (word(0), word(8), word(16));
        // Version 4, IHL 5 (byte 0); no fragment offset and no More
        // Fragments (the low 6 bits of byte 6 and byte 7; DF may be set).
        if h0 & 0xff3f_0000_0000_00ff != 0x45 {
            return None;
        }
        // The L4 header inside both the datagram and the frame (the frame
        // holds a UDP header's, checked above).
        let total_len = usize::from(((h0 >> 16) as u16).swap_bytes());
        let proto = (h1 >> 8) as u8;
        let tcp_flags = match proto {
            crate::flow::proto::UDP if total_len >= IHL5 + 8 => 0,
            crate::flow::proto::TCP if total_len.min(l3.len()) >= IHL5 + 20 => {
                *l3.get(IHL5 + 13)?
            }
            _ => return None,
        };
        let dscp = (h0 >> 10) & 0x3f;
        let flags = u64::from(FLAG_L4 | (ct & CT_ALL));
        // Bytes 0..8: proto, TCP flags, DSCP, flags, then the source
        // address (bytes 12..16 of the header, the high half of `h1`).
        let w0 = (h1 & 0xffff_ffff_0000_0000)
            | u64::from(proto)
            | u64::from(tcp_flags) << 8
            | dscp << 16
            | flags << 24;
        let w2 = meta_word(meta);
        let w3 = u64::from(meta.mark.swap_bytes());
        Some([w0, ports, w2, w3])
    }

    /// The key's bytes as four little-endian 8-byte words.
    #[inline(always)]
    pub fn words(&self) -> [u64; 4] {
        let w = |i: usize| {
            let mut x = [0u8; 8];
            x.copy_from_slice(&self.b[i * 8..i * 8 + 8]);
            u64::from_le_bytes(x)
        };
        [w(0), w(1), w(2), w(3)]
    }

    /// The key of four words as [`Key::words`] gives them; bytes 28..32
    /// must be zero (as in every word set a packet makes), or the key could
    /// be a cache's [`Key::UNUSED`].
    #[inline(always)]
    pub(crate) fn from_words(w: [u64; 4]) -> Key {
        let mut b = [0u8; 32];
        for (c, w) in b.chunks_exact_mut(8).zip(w) {
            c.copy_from_slice(&w.to_le_bytes());
        }
        Key { b }
    }

    /// A key from its 32 bytes as laid out above (bytes 28..32 are
    /// cleared). Any byte pattern is a valid key; tests use this to reach
    /// combinations no packet produces.
    pub fn from_bytes(mut b: [u8; 32]) -> Key {
        b[28..].fill(0);
        Key { b }
    }

    /// The key's bytes, as the ACL library reads them.
    #[inline(always)]
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.b
    }

    #[inline(always)]
    fn put(&mut self, at: u32, v: &[u8]) {
        let at = at as usize;
        self.b[at..at + v.len()].copy_from_slice(v);
    }

    #[inline(always)]
    fn be16(&self, at: u32) -> u16 {
        let at = at as usize;
        u16::from_be_bytes([self.b[at], self.b[at + 1]])
    }

    #[inline(always)]
    fn be32(&self, at: u32) -> u32 {
        let at = at as usize;
        u32::from_be_bytes([self.b[at], self.b[at + 1], self.b[at + 2], self.b[at + 3]])
    }

    #[inline(always)]
    pub fn proto(&self) -> u8 {
        self.b[offset::PROTO as usize]
    }
    #[inline(always)]
    pub fn tcp_flags(&self) -> u8 {
        self.b[offset::TCP_FLAGS as usize]
    }
    #[inline(always)]
    pub fn dscp(&self) -> u8 {
        self.b[offset::DSCP as usize]
    }
    /// The whole flags byte ([`FLAG_L4`] and the `CT_*` bits).
    #[inline(always)]
    pub fn flags(&self) -> u8 {
        self.b[offset::FLAGS as usize]
    }
    /// Are the ports and TCP flags valid ([`FLAG_L4`])?
    #[inline(always)]
    pub fn l4(&self) -> bool {
        self.flags() & FLAG_L4 != 0
    }
    /// The connection-tracking bits (0 = untracked).
    #[inline(always)]
    pub fn ct(&self) -> CtBits {
        self.flags() & CT_ALL
    }
    #[inline(always)]
    pub fn src(&self) -> u32 {
        self.be32(offset::SRC)
    }
    #[inline(always)]
    pub fn dst(&self) -> u32 {
        self.be32(offset::DST)
    }
    #[inline(always)]
    pub fn sport(&self) -> u16 {
        self.be16(offset::SPORT)
    }
    #[inline(always)]
    pub fn dport(&self) -> u16 {
        self.be16(offset::DPORT)
    }
    #[inline(always)]
    pub fn in_port(&self) -> u16 {
        self.be16(offset::IN_PORT)
    }
    #[inline(always)]
    pub fn out_port(&self) -> u16 {
        self.be16(offset::OUT_PORT)
    }
    #[inline(always)]
    pub fn vlan(&self) -> u16 {
        self.be16(offset::VLAN)
    }
    #[inline(always)]
    pub fn class(&self) -> u16 {
        self.be16(offset::CLASS)
    }
    #[inline(always)]
    pub fn mark(&self) -> u32 {
        self.be32(offset::MARK)
    }
}

impl fmt::Debug for Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("proto", &self.proto())
            .field("tcp_flags", &format_args!("{:#04x}", self.tcp_flags()))
            .field("dscp", &self.dscp())
            .field("flags", &format_args!("{:#04x}", self.flags()))
            .field("src", &std::net::Ipv4Addr::from(self.src()))
            .field("dst", &std::net::Ipv4Addr::from(self.dst()))
            .field("sport", &self.sport())
            .field("dport", &self.dport())
            .field("in_port", &self.in_port())
            .field("out_port", &self.out_port())
            .field("vlan", &self.vlan())
            .field("class", &self.class())
            .field("mark", &format_args!("{:#x}", self.mark()))
            .finish()
    }
}

/// The metadata word of both families' keys: in_port, out_port, vlan and
/// class, each big-endian (bytes 16..24 of a [`Key`]; IPv6's
/// [`Key6`](super::key6::Key6) holds the same word). Two 16-bit fields in a
/// word are swapped by a byte swap and a turn.
#[inline(always)]
pub(super) fn meta_word(meta: &PacketMeta) -> u64 {
    let be16x2 = |lo: u16, hi: u16| {
        (u32::from(lo) | u32::from(hi) << 16)
            .swap_bytes()
            .rotate_left(16)
    };
    u64::from(be16x2(meta.in_port, meta.out_port)) | u64::from(be16x2(meta.vlan, meta.class)) << 32
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::{proto, tcp_flag, Fragment};

    fn tcp_summary() -> FlowSummary {
        FlowSummary {
            src: 0x0a00_0001,
            dst: 0xc0a8_0102,
            proto: proto::TCP,
            dscp: 46,
            fragment: Fragment::None,
            l4: true,
            sport: 0x1234,
            dport: 443,
            tcp_flags: tcp_flag::SYN | tcp_flag::ACK,
            ..FlowSummary::default()
        }
    }

    fn meta() -> PacketMeta {
        let mut m = PacketMeta::received_on(0x0102);
        m.out_port = 3;
        m.vlan = 0x0fff;
        m.class = 0xabcd;
        m.mark = 0xdead_beef;
        m
    }

    #[test]
    fn layout_is_network_order_at_the_documented_offsets() {
        let k = Key::new(&tcp_summary(), &meta(), CT_ESTABLISHED);
        let b = k.as_bytes();
        assert_eq!(b[0], proto::TCP);
        assert_eq!(b[1], tcp_flag::SYN | tcp_flag::ACK);
        assert_eq!(b[2], 46);
        assert_eq!(b[3], FLAG_L4 | CT_ESTABLISHED);
        assert_eq!(b[4..8], [10, 0, 0, 1]);
        assert_eq!(b[8..12], [192, 168, 1, 2]);
        assert_eq!(b[12..14], [0x12, 0x34]);
        assert_eq!(b[14..16], [0x01, 0xbb]);
        assert_eq!(b[16..18], [0x01, 0x02]);
        assert_eq!(b[18..20], [0, 3]);
        assert_eq!(b[20..22], [0x0f, 0xff]);
        assert_eq!(b[22..24], [0xab, 0xcd]);
        assert_eq!(b[24..28], [0xde, 0xad, 0xbe, 0xef]);
        assert_eq!(b[28..32], [0; 4]);
    }

    #[test]
    fn accessors_return_host_order() {
        let k = Key::new(&tcp_summary(), &meta(), CT_NEW);
        assert_eq!((k.proto(), k.dscp()), (proto::TCP, 46));
        assert_eq!((k.src(), k.dst()), (0x0a00_0001, 0xc0a8_0102));
        assert_eq!((k.sport(), k.dport()), (0x1234, 443));
        assert_eq!((k.in_port(), k.out_port()), (0x0102, 3));
        assert_eq!(
            (k.vlan(), k.class(), k.mark()),
            (0x0fff, 0xabcd, 0xdead_beef)
        );
        assert!(k.l4());
        assert_eq!(k.ct(), CT_NEW);
        assert_eq!(Key::from_bytes(*k.as_bytes()), k);
    }

    #[test]
    fn l4_bit_only_with_ports() {
        let mut s = tcp_summary();
        s.l4 = false;
        assert!(!Key::new(&s, &meta(), 0).l4());
        let icmp = FlowSummary {
            proto: proto::ICMP,
            l4: true,
            ..FlowSummary::default()
        };
        assert!(!Key::new(&icmp, &meta(), 0).l4(), "ICMP has no ports");
        let udp = FlowSummary {
            proto: proto::UDP,
            l4: true,
            ..FlowSummary::default()
        };
        assert!(Key::new(&udp, &meta(), 0).l4());
    }

    #[test]
    fn ct_bits_outside_the_state_set_are_dropped() {
        let k = Key::new(&tcp_summary(), &meta(), 0xff);
        assert_eq!(k.ct(), CT_ALL);
        assert_eq!(k.flags(), FLAG_L4 | CT_ALL);
        assert_eq!(Key::new(&tcp_summary(), &meta(), 0).ct(), 0);
    }

    #[test]
    fn from_bytes_clears_the_tail() {
        let k = Key::from_bytes([0xff; 32]);
        assert_eq!(k.as_bytes()[28..], [0; 4]);
        assert_eq!(k.mark(), u32::MAX);
    }

    /// `of_plain` against the summary's key over random headers biased
    /// toward plain ones: where it answers, it answers what `Key::new`
    /// does, for a packet the fragment checks leave alone; it answers for
    /// every plain TCP and UDP packet.
    #[test]
    fn the_plain_key_is_the_summary_key() {
        let mut rng = fastrand::Rng::with_seed(19);
        let mut answered = 0;
        for case in 0..20_000 {
            let len = rng.usize(0..80);
            let mut l3: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
            let likely = |rng: &mut fastrand::Rng| rng.u8(..4) != 0;
            if len > 0 && likely(&mut rng) {
                l3[0] = if rng.u8(..8) == 0 { rng.u8(..) } else { 0x45 };
            }
            if len > 9 && likely(&mut rng) {
                l3[9] = [proto::TCP, proto::UDP, proto::ICMP, rng.u8(..)][rng.usize(..4)];
            }
            if len > 7 && likely(&mut rng) {
                l3[6] &= [0x40, 0x00, 0x20, 0xff][rng.usize(..4)];
                l3[7] = if rng.bool() { 0 } else { rng.u8(..) };
            }
            if len > 3 && likely(&mut rng) {
                let t = rng.u16(0..100);
                l3[2..4].copy_from_slice(&t.to_be_bytes());
            }
            let mut m = meta();
            m.mark = rng.u32(..);
            m.class = rng.u16(..);
            m.in_port = rng.u16(..);
            m.out_port = rng.u16(..);
            m.vlan = rng.u16(..);
            let ct = rng.u8(..);
            // In place, over a slot a burst before left dirty: a plain
            // packet's key whole (tail cleared), anything else untouched.
            let dirty = Key { b: [0xa5; 32] };
            let mut slot = dirty;
            let set = slot.set_plain(&l3, &m, ct);
            assert_eq!(set, Key::of_plain(&l3, &m, ct).is_some(), "case {case}");
            let Some(k) = Key::of_plain(&l3, &m, ct) else {
                assert_eq!(slot, dirty, "case {case}: a key not set is left as it was");
                let plain = FlowSummary::parse(&l3)
                    .filter(|s| s.has_ports() && s.fragment == Fragment::None && s.l4_offset == 20);
                assert!(
                    plain.is_none(),
                    "case {case}: plain but not answered: {l3:02x?}"
                );
                continue;
            };
            answered += 1;
            assert_eq!(slot, k, "case {case}: set in place");
            assert_eq!(
                Key::plain_words(&l3, &m, ct),
                Some(k.words()),
                "case {case}"
            );
            assert_eq!(Key::from_words(k.words()), k, "case {case}");
            let s = FlowSummary::parse(&l3).expect("a plain header parses");
            assert_eq!(s.fragment, Fragment::None, "case {case}");
            assert_eq!(k, Key::new(&s, &m, ct), "case {case}: {l3:02x?}");
        }
        assert!(answered > 400, "too few plain cases: {answered}");
    }
}
