//! ICMPv6 (RFC 4443): echo replies for our addresses, and the errors sent
//! for IPv6 packets the workers dropped (time exceeded, destination
//! unreachable codes 0 and 2, packet too big) or that failed resolution
//! (code 3): at most 1280 bytes, never about an ICMPv6 error or a
//! multicast destination (packet too big excepted), from the input port's
//! address (link-local to a link-local source, RFC 4443 2.2),
//! rate-limited like the IPv4 errors.

use super::frames6::{self, echo_reply_in_place, icmpv6_error, ICMP6_ERROR_MAX};
use super::ControlPlane;
use crate::capture::NO_PORT;
use crate::dpdk::Mbuf;
use hooks::wire::ethernet::HEADER_LEN;
use hooks::wire::icmpv6::{error_allowed, time_exceeded, unreachable, ErrorRepr};
use hooks::wire::ipv6::{Ipv6Packet, HEADER_LEN as IPV6_HEADER_LEN};
use hooks::DropReason;
use std::time::Instant;

impl ControlPlane<'_> {
    /// Hop limit 1 or 0 on a packet to forward: time exceeded, code 0.
    pub(super) fn hop_limit_exceeded(&mut self, m: Mbuf) {
        let error = ErrorRepr::TimeExceeded(time_exceeded::HOP_LIMIT);
        self.icmp6_error(m, DropReason::Ipv6HopLimitExceeded, error, None)
    }

    /// No IPv6 route: destination unreachable, code 0.
    pub(super) fn no_route6(&mut self, m: Mbuf) {
        let error = ErrorRepr::DestUnreachable(unreachable::NO_ROUTE);
        self.icmp6_error(m, DropReason::Ipv6NoRoute, error, None)
    }

    /// A link-local source routed off its link: destination unreachable,
    /// code 2 (beyond scope of source address).
    pub(super) fn beyond_scope(&mut self, m: Mbuf) {
        let error = ErrorRepr::DestUnreachable(unreachable::BEYOND_SCOPE);
        self.icmp6_error(m, DropReason::Icmpv6BeyondScope, error, None)
    }

    /// Larger than the output port's MTU: packet too big with that MTU (a
    /// router never fragments IPv6).
    pub(super) fn packet_too_big(&mut self, m: Mbuf) {
        let out = m.meta().out_port;
        let mtu = self
            .port6(out)
            .map(|p| p.mtu)
            .or_else(|| self.port(out).map(|p| p.mtu))
            .unwrap_or(1280);
        let error = ErrorRepr::PacketTooBig {
            mtu: u32::from(mtu),
        };
        self.icmp6_error(m, DropReason::Ipv6PacketTooBig, error, None)
    }

    /// An echo request to one of our addresses (or a group of ours):
    /// answered in place, from the address it was sent to, whichever
    /// port's it is (RFC 4443 2.2; from ours on the port for a group).
    pub(super) fn echo6(&mut self, mut m: Mbuf) {
        let meta = *m.meta();
        let port = meta.in_port;
        let l3 = usize::from(meta.l3_offset);
        let peer_mac: Option<[u8; 6]> = m.data().get(6..12).and_then(|s| s.try_into().ok());
        let Some(p) = self.port6(port) else {
            return self.drop(m, port, DropReason::UnsupportedProtocol);
        };
        let (Some(peer_mac), Some(tags)) = (peer_mac, l3.checked_sub(HEADER_LEN)) else {
            return self.drop(m, port, DropReason::Icmpv6Invalid);
        };
        let ports6 = &self.ports6;
        let ours_anywhere = |dst| ports6.iter().flatten().any(|q| q.is_ours(dst));
        let reply_src = |dst, src| {
            if ours_anywhere(dst) {
                dst
            } else {
                p.source_for(src)
            }
        };
        let len = if m.adj(tags as u16) {
            echo_reply_in_place(m.data_mut(), p.mac, peer_mac, reply_src)
        } else {
            None
        };
        match len {
            Some(n) if m.trim_to(n as u16) => {
                self.stats.echo6_replies += 1;
                self.send(m, port);
            }
            _ => self.drop(m, port, DropReason::Icmpv6Invalid),
        }
    }

    /// Drop `m` for `reason` (counted on `count_port`, else its input
    /// port) and answer its sender with the ICMPv6 `error`, if RFC 4443
    /// 2.4 (e) allows it and the rate limit has room.
    pub(super) fn icmp6_error(
        &mut self,
        m: Mbuf,
        reason: DropReason,
        error: ErrorRepr,
        count_port: Option<u16>,
    ) {
        let meta = *m.meta();
        self.counters
            .dropped(count_port.unwrap_or(meta.in_port), reason, 1);
        self.capture(&m, reason, count_port.unwrap_or(NO_PORT));
        let Some(p) = self.port6(meta.in_port) else {
            return;
        };
        let data = m.data();
        let l3 = usize::from(meta.l3_offset);
        let Some(original) = data.get(l3..).and_then(|b| {
            let ip = Ipv6Packet::new_checked(b).ok()?;
            let len = IPV6_HEADER_LEN + usize::from(ip.payload_len());
            Some(&b[..len.min(b.len())])
        }) else {
            return;
        };
        let mac = |at: usize| -> [u8; 6] {
            data.get(at..at + 6)
                .and_then(|s| s.try_into().ok())
                .unwrap_or([0; 6])
        };
        let (dst_mac, peer_mac) = (mac(0), mac(6));
        if error_allowed(&error, original).is_err() || !frames6::link_layer_allows(&error, dst_mac)
        {
            self.stats.icmp6_not_allowed += 1;
            return;
        }
        let Ok(ip) = Ipv6Packet::new_checked(original) else {
            return;
        };
        let src = p.source_for(ip.src_addr());
        let our_mac = p.mac;
        if !self.icmp6_errors.take(Instant::now()) {
            self.stats.icmp6_rate_limited += 1;
            return;
        }
        let mut buf = [0u8; ICMP6_ERROR_MAX];
        let Some(n) = icmpv6_error(&mut buf, error, original, (our_mac, peer_mac), src) else {
            return;
        };
        drop(m);
        self.stats.icmp6_errors += 1;
        self.originate(&buf[..n], meta.in_port);
    }
}
