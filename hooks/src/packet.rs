//! What a hook sees of a burst: each packet's frame bytes and metadata, and a
//! verdict per packet that only moves away from `Accept`.

use crate::{PacketMeta, Verdict};

/// Most packets in one burst a hook is called with (the verdict bookkeeping
/// keeps the accepted set in a 64-bit mask).
pub const MAX_BURST: usize = 64;

/// One packet as a hook sees it: the frame from its Ethernet header on, and
/// the metadata the pipeline filled in ([`PacketMeta::l3_offset`] is where
/// the IPv4 header starts). The bytes are only 2-byte aligned: read them
/// through the [`wire`](crate::wire) views, never by casting to a struct.
///
/// What a hook may change is exactly what this view lets it write, as a
/// kernel hook gets an `skb` whose routing state it cannot touch:
///
/// - the mark and the class ([`HookPacket::set_mark`],
///   [`HookPacket::set_class`]), which later hooks and the rules read;
/// - the answers carried for egress hooks ([`HookPacket::carry_answer`]);
/// - the frame's bytes ([`HookPacket::data_mut`]), not its length: a frame
///   written is checked again by the pipeline (the IPv4 header, as the ip
///   stage checks it, checksum computed) before it is routed or sent, and
///   dropped under that check's reason if a hook broke it.
///
/// Everything else of the metadata (ports, L3 offset, protocol, VLAN,
/// packet type, next hop) is the pipeline's and read-only here: the field
/// is private and [`HookPacket::meta`] gives a shared reference.
///
/// ```compile_fail
/// # use hooks::{HookPacket, PacketMeta};
/// # let (mut frame, mut meta) = ([0u8; 60], PacketMeta::default());
/// let mut p = HookPacket::new(&mut frame, &mut meta);
/// p.meta().l3_offset = 4; // error: behind a `&` reference
/// ```
///
/// ```compile_fail
/// # use hooks::{HookPacket, PacketMeta};
/// # let (mut frame, mut meta) = ([0u8; 60], PacketMeta::default());
/// let mut p = HookPacket::new(&mut frame, &mut meta);
/// p.meta.out_port = 7; // error: field `meta` is private
/// ```
///
/// ```
/// # use hooks::{HookPacket, PacketMeta};
/// # let (mut frame, mut meta) = ([0u8; 60], PacketMeta::default());
/// let mut p = HookPacket::new(&mut frame, &mut meta);
/// p.set_mark(7);
/// p.set_class(2);
/// assert_eq!((p.meta().mark, p.meta().class, p.meta().next_hop), (7, 2, 0));
/// ```
#[derive(Debug)]
pub struct HookPacket<'p> {
    data: &'p mut [u8],
    meta: &'p mut PacketMeta,
    /// Whether a hook asked for the bytes to change them.
    written: bool,
}

impl<'p> HookPacket<'p> {
    /// The view the pipeline hands its hooks over a frame and its
    /// metadata (which the pipeline keeps writing; the hooks only read it
    /// but for the mark and the class).
    pub fn new(data: &'p mut [u8], meta: &'p mut PacketMeta) -> Self {
        HookPacket {
            data,
            meta,
            written: false,
        }
    }

    /// The frame's bytes.
    #[inline]
    pub fn data(&self) -> &[u8] {
        self.data
    }

    /// The frame's bytes, to change them (not their length). Marks the
    /// packet written: the pipeline checks a written frame's IPv4 header
    /// again, checksum included, before it routes or sends it.
    #[inline]
    pub fn data_mut(&mut self) -> &mut [u8] {
        self.written = true;
        self.data
    }

    /// Whether [`HookPacket::data_mut`] was called.
    #[inline]
    pub fn written(&self) -> bool {
        self.written
    }

    /// The metadata the pipeline filled in, read-only: a hook changes only
    /// the mark and the class, through [`HookPacket::set_mark`] and
    /// [`HookPacket::set_class`].
    #[inline(always)]
    pub fn meta(&self) -> &PacketMeta {
        self.meta
    }

    /// Set the packet's mark (like the kernel's `skb->mark`).
    #[inline(always)]
    pub fn set_mark(&mut self, mark: u32) {
        self.meta.mark = mark;
    }

    /// Set the packet's traffic class.
    #[inline(always)]
    pub fn set_class(&mut self, class: u16) {
        self.meta.class = class;
    }

    /// Carry `answers[s]` + 1 (1 + a classifier result) in lookahead slot
    /// `s` for each slot `answers` has (at most
    /// [`LOOKAHEAD_SLOTS`](crate::LOOKAHEAD_SLOTS)).
    #[inline(always)]
    pub fn carry_answers(&mut self, answers: &[u32]) {
        for (a, r) in self.meta.lookahead.iter_mut().zip(answers) {
            *a = r.wrapping_add(1);
        }
    }

    /// Carry `answers` (each 0, none, or 1 + a classifier result) in the
    /// lookahead slots, one each, all at once.
    #[inline(always)]
    pub fn carry_all(&mut self, answers: [u32; crate::LOOKAHEAD_SLOTS]) {
        self.meta.lookahead = answers;
    }

    /// Carry `answer` (1 + a classifier result) in lookahead slot `slot`
    /// for the egress hook of that slot (`hooks::lookahead`). Out of range
    /// slots are ignored.
    #[inline(always)]
    pub fn carry_answer(&mut self, slot: usize, answer: u32) {
        if let Some(a) = self.meta.lookahead.get_mut(slot) {
            *a = answer;
        }
    }

    /// The L3 (IPv4) bytes: from `meta().l3_offset` to the end of the
    /// frame; empty when the offset is beyond the frame.
    pub fn l3(&self) -> &[u8] {
        self.l3_if_any().unwrap_or_default()
    }

    /// [`HookPacket::l3`], `None` when the offset is beyond the frame.
    #[inline(always)]
    pub fn l3_if_any(&self) -> Option<&[u8]> {
        self.data.get(usize::from(self.meta.l3_offset)..)
    }
}

/// The mask of a burst of `n` packets, all accepted.
#[inline(always)]
fn all_of(n: usize) -> u64 {
    if n >= MAX_BURST {
        u64::MAX
    } else {
        (1u64 << n) - 1
    }
}

/// Call `f` with each index of `mask` (bits of packets `0..n`), in order:
/// a plain count when `mask` holds all `n` (no bit scan per packet).
#[inline(always)]
pub fn each_index(mut mask: u64, n: usize, mut f: impl FnMut(usize)) {
    if n <= MAX_BURST && mask == all_of(n) {
        for i in 0..n {
            f(i);
        }
        return;
    }
    while mask != 0 {
        let i = mask.trailing_zeros() as usize;
        mask &= mask - 1;
        f(i);
    }
}

/// Counts of a burst's verdicts, kept up to date as verdicts change.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Tally {
    pub accepted: u32,
    pub dropped: u32,
    pub stolen: u32,
}

/// A burst handed to a hook: packets and their verdicts. A hook reads and
/// writes the packets it is given and sets verdicts through
/// [`HookBurst::set_verdict`]; it cannot revive a packet an earlier hook
/// dropped or stole.
pub struct HookBurst<'b, 'p> {
    packets: &'b mut [HookPacket<'p>],
    verdicts: &'b mut [Verdict],
    /// Bit i set: packet i is still accepted.
    accepted: u64,
    tally: Tally,
}

impl<'b, 'p> HookBurst<'b, 'p> {
    /// A burst over `packets`, all accepted. `verdicts` must be at least as
    /// long; at most [`MAX_BURST`] packets are taken, the rest are left out.
    pub fn new(packets: &'b mut [HookPacket<'p>], verdicts: &'b mut [Verdict]) -> Self {
        let n = packets.len().min(verdicts.len()).min(MAX_BURST);
        let (packets, _) = packets.split_at_mut(n);
        let (verdicts, _) = verdicts.split_at_mut(n);
        verdicts.fill(Verdict::Accept);
        let accepted = all_of(n);
        HookBurst {
            packets,
            verdicts,
            accepted,
            tally: Tally {
                accepted: n as u32,
                ..Tally::default()
            },
        }
    }

    /// Packets in the burst, whatever their verdict.
    pub fn len(&self) -> usize {
        self.packets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.packets.is_empty()
    }

    /// The still-accepted packets as a bit mask (bit i: packet i).
    pub fn accepted_mask(&self) -> u64 {
        self.accepted
    }

    /// Indices of the still-accepted packets, in order.
    pub fn accepted(&self) -> impl Iterator<Item = usize> {
        let mut mask = self.accepted;
        core::iter::from_fn(move || {
            if mask == 0 {
                return None;
            }
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            Some(i)
        })
    }

    pub fn is_accepted(&self, i: usize) -> bool {
        i < MAX_BURST && self.accepted & (1 << i) != 0
    }

    /// Whether every packet of the burst is still accepted (the common
    /// case: a hook may then walk the packets in order, without the mask).
    #[inline(always)]
    pub fn all_accepted(&self) -> bool {
        self.accepted == all_of(self.packets.len())
    }

    /// Every packet of the burst, whatever its verdict (index them by the
    /// bits of [`HookBurst::accepted_mask`]).
    #[inline(always)]
    pub fn packets(&self) -> &[HookPacket<'p>] {
        self.packets
    }

    /// As [`HookBurst::packets`], to change them (their mark, class,
    /// carried answers, bytes; verdicts go through
    /// [`HookBurst::set_verdict`]).
    #[inline(always)]
    pub fn packets_mut(&mut self) -> &mut [HookPacket<'p>] {
        self.packets
    }

    pub fn packet(&self, i: usize) -> Option<&HookPacket<'p>> {
        self.packets.get(i)
    }

    pub fn packet_mut(&mut self, i: usize) -> Option<&mut HookPacket<'p>> {
        self.packets.get_mut(i)
    }

    pub fn verdict(&self, i: usize) -> Option<Verdict> {
        self.verdicts.get(i).copied()
    }

    /// Set packet `i`'s verdict. Ignored (returns false) when the packet is
    /// no longer accepted or `i` is out of range: a later hook cannot undo
    /// an earlier drop or steal.
    pub fn set_verdict(&mut self, i: usize, v: Verdict) -> bool {
        if !self.is_accepted(i) {
            return false;
        }
        match v {
            Verdict::Accept => return true,
            Verdict::Drop(_) => self.tally.dropped += 1,
            Verdict::Stolen => self.tally.stolen += 1,
        }
        self.tally.accepted -= 1;
        self.accepted &= !(1 << i);
        self.verdicts[i] = v;
        true
    }

    /// Call `f` for every accepted packet; a `Some` verdict it returns is set.
    pub fn for_each_accepted(
        &mut self,
        mut f: impl FnMut(usize, &mut HookPacket<'p>) -> Option<Verdict>,
    ) {
        let mut mask = self.accepted;
        while mask != 0 {
            let i = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            if let Some(v) = f(i, &mut self.packets[i]) {
                self.set_verdict(i, v);
            }
        }
    }

    /// How many packets of the burst were asked for their bytes to change
    /// them ([`HookPacket::written`]).
    pub fn written(&self) -> usize {
        self.packets.iter().filter(|p| p.written()).count()
    }

    /// Counts of the verdicts so far.
    pub fn tally(&self) -> Tally {
        self.tally
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DropReason;

    fn metas<const N: usize>() -> [PacketMeta; N] {
        [PacketMeta::default(); N]
    }

    #[test]
    fn verdicts_only_move_away_from_accept() {
        let mut bufs = [[0u8; 60]; 3];
        let mut ms = metas::<3>();
        let mut pkts: Vec<HookPacket> = bufs
            .iter_mut()
            .zip(ms.iter_mut())
            .map(|(d, m)| HookPacket::new(d, m))
            .collect();
        let mut v = [Verdict::Stolen; 3];
        let mut b = HookBurst::new(&mut pkts, &mut v);
        assert_eq!(b.tally().accepted, 3);
        assert!(b.set_verdict(1, Verdict::Drop(DropReason::FilterRule)));
        assert!(!b.set_verdict(1, Verdict::Accept));
        assert!(!b.set_verdict(1, Verdict::Stolen));
        assert!(!b.set_verdict(7, Verdict::Stolen));
        assert!(b.set_verdict(2, Verdict::Stolen));
        assert_eq!(b.accepted().collect::<Vec<_>>(), vec![0]);
        assert_eq!(
            b.tally(),
            Tally {
                accepted: 1,
                dropped: 1,
                stolen: 1
            }
        );
        assert_eq!(b.verdict(1), Some(Verdict::Drop(DropReason::FilterRule)));
        let _ = b;
        assert_eq!(v[0], Verdict::Accept, "new() resets verdicts to accept");
    }

    /// A hook that changes everything the view lets it: the mark, the
    /// class and the bytes. The pipeline's routing state (L3 offset,
    /// ports, next hop, protocol, VLAN, packet type) comes out as it went
    /// in; there is no way to write it (see the `compile_fail` examples of
    /// [`HookPacket`]).
    #[test]
    fn a_hook_changes_only_mark_class_and_bytes() {
        let mut frame = [0u8; 60];
        let mut meta = PacketMeta::received_on(2);
        meta.out_port = 1;
        meta.l3_offset = 14;
        meta.next_hop = 0x0a00_0202;
        meta.protocol = 0x0800;
        let before = meta;
        let mut p = HookPacket::new(&mut frame, &mut meta);
        p.set_mark(0xdead);
        p.set_class(9);
        p.data_mut()[14] = 0x4f;
        assert!(p.written());
        assert_eq!(p.meta().mark, 0xdead);
        assert_eq!(p.l3()[0], 0x4f);
        let _ = p;
        assert_eq!(frame[14], 0x4f);
        let mut want = before;
        (want.mark, want.class) = (0xdead, 9);
        assert_eq!(meta, want);
    }

    #[test]
    fn a_full_burst_of_64_is_all_accepted() {
        let mut bufs = vec![[0u8; 60]; 70];
        let mut ms = vec![PacketMeta::default(); 70];
        let mut pkts: Vec<HookPacket> = bufs
            .iter_mut()
            .zip(ms.iter_mut())
            .map(|(d, m)| HookPacket::new(d, m))
            .collect();
        let mut v = vec![Verdict::Accept; 70];
        let mut b = HookBurst::new(&mut pkts, &mut v);
        assert_eq!(b.len(), MAX_BURST);
        assert_eq!(b.accepted().count(), 64);
        let mut seen = 0;
        b.for_each_accepted(|i, _| {
            seen += 1;
            (i % 2 == 0).then_some(Verdict::Drop(DropReason::HookDrop))
        });
        assert_eq!(seen, 64);
        assert_eq!(b.tally().dropped, 32);
        assert_eq!(b.accepted().count(), 32);
    }
}
