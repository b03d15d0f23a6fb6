//! TCP sequence windows, after Linux's `tcp_in_window`
//! (`net/netfilter/nf_conntrack_proto_tcp.c`).
//!
//! # The window
//!
//! Per side of a connection, the highest sequence number it sent (`end`),
//! the right edge of what the other side lets it send (`maxend`: the other's
//! ACK plus window), the largest window it advertised (`maxwin`) and the
//! highest ACK it sent (`maxack`). A segment is in the window when
//!
//! 1. `seq <= sender.maxend` (not past what the receiver allows),
//! 2. `seq + len >= sender.end - receiver.maxwin` (not older than a
//!    window),
//! 3. and 4. its ACK is not beyond what the receiver sent, nor more than
//!    a window (at least 66,000) behind it.
//!
//! # What a segment may do
//!
//! Only an in-window segment moves the window, so a blind sender cannot
//! drag it to where its guesses land. A RST must be in the window and not
//! behind what the receiver acknowledged (`maxack`, RFC 5961); a RST to an
//! opening connection from a side not heard from yet must acknowledge the
//! SYN exactly (RFC 793, SYN-SENT). Other segments out of the window pass
//! (Linux's `tcp_be_liberal`) but move nothing, and their FIN closes
//! nothing.
//!
//! # Picking a side up
//!
//! A side's first segment starts its window: a SYN (or SYN-ACK) with its
//! window scale option (RFC 7323: scaling holds only when both SYNs carry
//! it); any other segment picks the side up mid-stream with the largest
//! scale (14), so that its window is never narrower than the real one.

use crate::flow::{tcp_flag, FlowSummary};
use crate::flow6::FlowSummary6;

/// Largest window scale (RFC 7323).
const MAX_SCALE: u8 = 14;
/// Linux's `MAXACKWINDOW` floor: an ACK may lag this far behind.
const MIN_ACK_WINDOW: u32 = 66_000;
/// No window scale option.
const NO_SCALE: u8 = 0xff;

/// Side flag: a segment from this side was seen (its window is set).
const SEEN: u8 = 0x01;
/// Side flag: its SYN carried the window scale option.
const WSCALE: u8 = 0x02;
/// Side flag: `maxack` holds an ACK this side sent.
const MAXACK: u8 = 0x04;

/// `a` is after `b` in sequence space.
#[inline(always)]
fn after(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) > 0
}

/// `a` is before `b` in sequence space.
#[inline(always)]
fn before(a: u32, b: u32) -> bool {
    after(b, a)
}

/// What window tracking reads of one TCP segment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Segment {
    pub seq: u32,
    pub ack: u32,
    /// The window field, unscaled.
    pub win: u16,
    /// Sequence space it takes: payload, plus one for a SYN and a FIN.
    pub len: u32,
    pub flags: u8,
    /// The window scale option of a SYN (0 to 14), or none.
    pub wscale: u8,
    /// Read from the packet: the fields above mean something.
    pub known: bool,
}

impl Segment {
    /// No segment read: window tracking lets it pass and learns nothing.
    pub const UNKNOWN: Segment = Segment {
        seq: 0,
        ack: 0,
        win: 0,
        len: 0,
        flags: 0,
        wscale: NO_SCALE,
        known: false,
    };

    /// The segment of TCP packet `s`, `l3` being its bytes from the IPv4
    /// header on; [`Segment::UNKNOWN`] when they do not hold its header.
    #[inline]
    pub fn read(s: &FlowSummary, l3: &[u8]) -> Segment {
        // The datagram ends at its total length.
        Segment::read_at(l3, usize::from(s.l4_offset), || match l3.get(2..4) {
            Some(t) => usize::from(u16::from_be_bytes([t[0], t[1]])).min(l3.len()),
            None => l3.len(),
        })
    }

    /// [`Segment::read`] of an IPv6 packet, `l3` being its bytes from the
    /// IPv6 header on.
    #[inline]
    pub fn read6(s: &FlowSummary6, l3: &[u8]) -> Segment {
        // The packet ends at its payload length, after the fixed header.
        Segment::read_at(l3, usize::from(s.l4_offset), || match l3.get(4..6) {
            Some(t) => (40 + usize::from(u16::from_be_bytes([t[0], t[1]]))).min(l3.len()),
            None => l3.len(),
        })
    }

    /// The segment whose TCP header is at `l3[at..]`, the packet ending at
    /// `total()`.
    #[inline(always)]
    fn read_at(l3: &[u8], at: usize, total: impl FnOnce() -> usize) -> Segment {
        let Some(h) = l3.get(at..at + 20) else {
            return Segment::UNKNOWN;
        };
        let be32 = |i: usize| u32::from_be_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
        let total = total();
        let doff = usize::from(h[12] >> 4) * 4;
        let payload = total.saturating_sub(at + doff.max(20));
        let flags = h[13];
        let syn_fin = u32::from(flags & tcp_flag::SYN != 0) + u32::from(flags & tcp_flag::FIN != 0);
        let wscale = match flags & tcp_flag::SYN {
            0 => NO_SCALE,
            _ => window_scale(l3.get(at + 20..(at + doff).min(total)).unwrap_or_default()),
        };
        Segment {
            seq: be32(4),
            ack: be32(8),
            win: u16::from_be_bytes([h[14], h[15]]),
            len: payload as u32 + syn_fin,
            flags,
            wscale,
            known: true,
        }
    }

    #[inline(always)]
    fn end(&self) -> u32 {
        self.seq.wrapping_add(self.len)
    }

    #[inline(always)]
    fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
}

/// The window scale option among TCP `options`, capped at 14.
fn window_scale(options: &[u8]) -> u8 {
    let mut i = 0;
    while let Some(&kind) = options.get(i) {
        match kind {
            0 => break,
            1 => i += 1,
            _ => {
                let len = usize::from(*options.get(i + 1).unwrap_or(&0));
                if len < 2 {
                    break;
                }
                if kind == 3 && len == 3 {
                    if let Some(&shift) = options.get(i + 2) {
                        return shift.min(MAX_SCALE);
                    }
                }
                i += len;
            }
        }
    }
    NO_SCALE
}

/// The two sides' windows of a TCP connection, side 0 being side `a` of
/// its key. All zero: nothing seen.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Window {
    end: [u32; 2],
    maxend: [u32; 2],
    maxwin: [u32; 2],
    maxack: [u32; 2],
    scale: [u8; 2],
    /// [`SEEN`], [`WSCALE`], [`MAXACK`] per side.
    side: [u8; 2],
}

impl Window {
    /// A new connection's window: its SYN from side `d`.
    pub fn opened(d: usize, seg: &Segment) -> Window {
        let mut w = Window::default();
        if seg.known {
            w.start(d, seg);
        }
        w
    }

    #[inline(always)]
    fn seen(&self, d: usize) -> bool {
        self.side[d] & SEEN != 0
    }

    /// Side `d` starts its window with `seg`: a SYN gives its sequence
    /// number, window and scale; anything else picks the side up
    /// mid-stream.
    #[inline(never)]
    fn start(&mut self, d: usize, seg: &Segment) {
        let r = 1 - d;
        let end = seg.end();
        self.end[d] = end;
        self.side[d] = SEEN;
        if seg.has(tcp_flag::SYN) {
            self.maxend[d] = end;
            self.maxwin[d] = u32::from(seg.win).max(1);
            self.scale[d] = 0;
            if seg.wscale != NO_SCALE {
                self.scale[d] = seg.wscale;
                self.side[d] |= WSCALE;
            }
            // The second SYN decides: scaling needs the option both ways.
            if self.seen(r) && self.side[d] & self.side[r] & WSCALE == 0 {
                self.scale = [0, 0];
            }
        } else {
            self.scale[d] = MAX_SCALE;
            let win = (u32::from(seg.win) << MAX_SCALE).max(1);
            self.maxwin[d] = win;
            // What the receiver allows is unknown: as wide as can be.
            self.maxend[d] = end.wrapping_add(u32::from(u16::MAX) << MAX_SCALE);
        }
    }

    /// Track segment `seg` from side `d` (not a RST); `opening` while the
    /// handshake is not complete (a SYN sent again with a later sequence
    /// number starts the side again, RFC 793). Returns whether it was in
    /// the window; only then does the window move.
    #[inline(always)]
    pub fn track(&mut self, d: usize, seg: &Segment, opening: bool) -> bool {
        if !seg.known {
            return true;
        }
        let restart = opening && seg.has(tcp_flag::SYN) && after(seg.end(), self.end[d]);
        if !self.seen(d) || restart {
            self.start(d, seg);
        }
        if !self.in_window(d, seg) {
            return false;
        }
        self.advance(d, seg);
        true
    }

    /// Tests 1 to 4 of the module documentation for `seg` from side `d`.
    #[inline(always)]
    fn in_window(&self, d: usize, seg: &Segment) -> bool {
        let r = 1 - d;
        let end = seg.end();
        let upper = !after(seg.seq, self.maxend[d]);
        let recent = !self.seen(r) || !before(end, self.end[d].wrapping_sub(self.maxwin[r]));
        upper && recent && self.ack_ok(d, seg)
    }

    /// Tests 3 and 4: the ACK of `seg` from side `d` acknowledges what the
    /// receiver sent, or a little less. No ACK, a RST's ACK of 0 (broken
    /// stacks), or a receiver not heard from: nothing to test.
    #[inline(always)]
    fn ack_ok(&self, d: usize, seg: &Segment) -> bool {
        let r = 1 - d;
        let zero_rst = seg.has(tcp_flag::RST) && seg.ack == 0;
        if !seg.has(tcp_flag::ACK) || zero_rst || !self.seen(r) {
            return true;
        }
        let lag = self.maxwin[d].max(MIN_ACK_WINDOW);
        !after(seg.ack, self.end[r]) && !before(seg.ack, self.end[r].wrapping_sub(lag))
    }

    /// Move the window by in-window segment `seg` from side `d`.
    #[inline(always)]
    fn advance(&mut self, d: usize, seg: &Segment) {
        let r = 1 - d;
        let end = seg.end();
        let win = match seg.has(tcp_flag::SYN) {
            true => u32::from(seg.win),
            false => u32::from(seg.win) << self.scale[d],
        };
        self.maxwin[d] = self.maxwin[d].max(win).max(1);
        if after(end, self.end[d]) {
            self.end[d] = end;
        }
        if !seg.has(tcp_flag::ACK) {
            return;
        }
        if self.side[d] & MAXACK == 0 || after(seg.ack, self.maxack[d]) {
            self.maxack[d] = seg.ack;
            self.side[d] |= MAXACK;
        }
        if !self.seen(r) {
            // The receiver's window starts with its own first segment.
            return;
        }
        if after(end, self.maxend[d]) {
            self.maxwin[r] = self.maxwin[r].wrapping_add(end.wrapping_sub(self.maxend[d]));
        }
        let right = seg.ack.wrapping_add(win);
        if after(right, self.maxend[r].wrapping_sub(1)) {
            self.maxend[r] = right.wrapping_add(u32::from(win == 0));
        }
    }

    /// Whether RST `seg` from side `d` may end the connection.
    #[inline(never)]
    pub fn rst_ok(&self, d: usize, seg: &Segment) -> bool {
        let r = 1 - d;
        if !seg.known {
            return true;
        }
        match (self.seen(d), self.seen(r)) {
            // Nothing to check against (the connection's SYN was not read).
            (false, false) => true,
            // Answering the SYN: it must acknowledge it exactly.
            (false, true) => seg.has(tcp_flag::ACK) && seg.ack == self.end[r],
            // The originator, before any reply: where its SYN left off.
            (true, false) => {
                let low = self.end[d].wrapping_sub(self.maxwin[d]);
                !after(seg.seq, self.maxend[d]) && !before(seg.seq, low)
            }
            (true, true) => {
                let behind = self.side[r] & MAXACK != 0 && before(seg.seq, self.maxack[r]);
                self.in_window(d, seg) && !behind
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::tcp_flag::{ACK, FIN, RST, SYN};

    fn seg(flags: u8, seq: u32, ack: u32, win: u16, len: u32) -> Segment {
        let syn_fin = u32::from(flags & SYN != 0) + u32::from(flags & FIN != 0);
        Segment {
            seq,
            ack,
            win,
            len: len + syn_fin,
            flags,
            wscale: NO_SCALE,
            known: true,
        }
    }

    #[test]
    fn sequence_comparisons_wrap() {
        assert!(after(1, 0) && after(0, u32::MAX) && !after(5, 5));
        assert!(before(u32::MAX - 3, 2) && !before(2, u32::MAX - 3));
    }

    #[test]
    fn the_window_scale_option_is_found_among_others() {
        // MSS, SACK permitted, timestamps, NOP, window scale 7.
        let opts = [
            2, 4, 5, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0, 1, 3, 3, 7,
        ];
        assert_eq!(window_scale(&opts), 7);
        assert_eq!(window_scale(&[3, 3, 20]), MAX_SCALE);
        assert_eq!(window_scale(&[2, 4, 5, 0xb4]), NO_SCALE);
        // A zero length or an end of list stops the walk; a cut option too.
        assert_eq!(window_scale(&[2, 0, 3, 3, 7]), NO_SCALE);
        assert_eq!(window_scale(&[0, 3, 3, 7]), NO_SCALE);
        assert_eq!(window_scale(&[1, 3, 3]), NO_SCALE);
    }

    /// A handshake with ISNs 1000 (side 0) and 5000 (side 1), windows of
    /// 1000 bytes.
    fn handshake() -> Window {
        let mut w = Window::opened(0, &seg(SYN, 1000, 0, 1000, 0));
        assert!(w.track(1, &seg(SYN | ACK, 5000, 1001, 1000, 0), true));
        assert!(w.track(0, &seg(ACK, 1001, 5001, 1000, 0), true));
        w
    }

    #[test]
    fn in_window_segments_move_it_others_pass_and_do_not() {
        let mut w = handshake();
        assert!(w.track(0, &seg(ACK, 1001, 5001, 1000, 500), false));
        assert_eq!(w.end[0], 1501);
        // Past what side 1 allows (5001 + 1000... side 0 may send to 2001).
        let far = seg(ACK, 100_000, 5001, 1000, 10);
        assert!(!w.track(0, &far, false));
        assert_eq!(w.end[0], 1501, "an out-of-window segment moves nothing");
        // An ACK of data side 1 never sent.
        assert!(!w.track(0, &seg(ACK, 1501, 9000, 1000, 0), false));
    }

    #[test]
    fn a_rst_must_be_in_the_window_and_not_behind_the_acks() {
        let w = handshake();
        assert!(w.rst_ok(1, &seg(RST, 5001, 0, 0, 0)));
        assert!(w.rst_ok(1, &seg(RST | ACK, 5001, 1001, 0, 0)));
        // Anywhere up to side 0's window past its ACK.
        assert!(w.rst_ok(1, &seg(RST, 5900, 0, 0, 0)));
        assert!(!w.rst_ok(1, &seg(RST, 7000, 0, 0, 0)));
        assert!(!w.rst_ok(1, &seg(RST, 0x8000_0000, 0, 0, 0)));
        // Behind what side 0 acknowledged.
        assert!(!w.rst_ok(1, &seg(RST, 4999, 0, 0, 0)));
    }

    #[test]
    fn a_rst_answering_a_syn_must_acknowledge_it() {
        let w = Window::opened(0, &seg(SYN, 1000, 0, 1000, 0));
        assert!(w.rst_ok(1, &seg(RST | ACK, 0, 1001, 0, 0)));
        assert!(!w.rst_ok(1, &seg(RST | ACK, 0, 1002, 0, 0)));
        assert!(!w.rst_ok(1, &seg(RST, 0, 1001, 0, 0)));
        // Without the SYN's numbers, nothing to check.
        assert!(Window::default().rst_ok(1, &seg(RST, 0, 0, 0, 0)));
    }

    #[test]
    fn window_scaling_needs_the_option_both_ways() {
        let mut syn = seg(SYN, 1000, 0, 1000, 0);
        syn.wscale = 7;
        let mut w = Window::opened(0, &syn);
        assert!(w.track(1, &seg(SYN | ACK, 5000, 1001, 1000, 0), true));
        assert_eq!(w.scale, [0, 0]);
        let mut w = Window::opened(0, &syn);
        let mut synack = seg(SYN | ACK, 5000, 1001, 1000, 0);
        synack.wscale = 2;
        assert!(w.track(1, &synack, true));
        assert_eq!(w.scale, [7, 2]);
        // Side 1 advertises 1000 << 2 after the handshake: side 0 may send
        // that far.
        assert!(w.track(0, &seg(ACK, 1001, 5001, 8, 0), true));
        assert!(w.track(1, &seg(ACK, 5001, 1001, 1000, 0), false));
        assert!(w.track(0, &seg(ACK, 1001, 5001, 8, 3900), false));
    }
}
