//! ICMP: echo replies for our addresses, and the errors sent for packets
//! the workers dropped (time exceeded, net unreachable, fragmentation
//! needed), rate-limited.

use super::frames::{self, ICMP_ERROR_MAX};
use super::ControlPlane;
use crate::capture::NO_PORT;
use crate::dpdk::Mbuf;
use hooks::wire::ethernet::{EthernetFrame, HEADER_LEN};
use hooks::wire::{icmp, Ipv4Packet};
use hooks::DropReason;
use std::time::Instant;

/// ICMP destination unreachable code 0: network unreachable (no route).
const ICMP_NET_UNREACHABLE: u8 = 0;
/// ICMP destination unreachable code 4: fragmentation needed and DF set;
/// bytes 6..8 carry the next-hop MTU (RFC 1191).
const ICMP_FRAG_NEEDED: u8 = 4;

impl ControlPlane<'_> {
    /// A packet whose TTL ran out here: dropped, time exceeded sent back.
    pub(super) fn time_exceeded(&mut self, m: Mbuf) {
        self.icmp_error(m, DropReason::TtlExceeded, icmp::kind::TIME_EXCEEDED, 0)
    }

    /// A packet with no route: dropped, net unreachable sent back.
    pub(super) fn net_unreachable(&mut self, m: Mbuf) {
        self.icmp_error(
            m,
            DropReason::NoRoute,
            icmp::kind::DEST_UNREACHABLE,
            ICMP_NET_UNREACHABLE,
        )
    }

    /// A packet over the output port's MTU with DF set: dropped,
    /// fragmentation needed (with the MTU) sent back.
    pub(super) fn frag_needed(&mut self, m: Mbuf) {
        self.icmp_error(
            m,
            DropReason::MtuExceeded,
            icmp::kind::DEST_UNREACHABLE,
            ICMP_FRAG_NEEDED,
        )
    }

    /// An echo request to one of our addresses: answered in place.
    pub(super) fn echo(&mut self, mut m: Mbuf) {
        let meta = *m.meta();
        let Some(port) = self.port(meta.in_port) else {
            return self.drop(m, meta.in_port, DropReason::IcmpInvalid);
        };
        let l3 = usize::from(meta.l3_offset);
        let total = m
            .data()
            .get(l3..)
            .and_then(|b| Ipv4Packet::new_checked(b).ok())
            .map(|ip| usize::from(ip.total_len()));
        let ok = total.is_some_and(|t| {
            m.trim_to((l3 + t) as u16)
                && m.adj((l3 - HEADER_LEN) as u16)
                && frames::echo_reply_in_place(m.data_mut(), port.mac).is_ok()
        });
        if ok {
            self.stats.echo_replies += 1;
            self.send(m, meta.in_port);
        } else {
            self.drop(m, meta.in_port, DropReason::IcmpInvalid);
        }
    }

    /// Drop `m` for `reason` and answer its sender with an ICMP error from
    /// the input port's address (RFC 1812 rules, rate-limited).
    fn icmp_error(&mut self, m: Mbuf, reason: DropReason, msg_type: u8, code: u8) {
        let meta = *m.meta();
        self.counters.dropped(meta.in_port, reason, 1);
        self.capture(&m, reason, NO_PORT);
        let Some(port) = self.port(meta.in_port) else {
            return;
        };
        let l3 = usize::from(meta.l3_offset);
        let data = m.data();
        let Some(ip) = data.get(l3..).and_then(|b| Ipv4Packet::new_checked(b).ok()) else {
            return;
        };
        let orig = &data[l3..(l3 + usize::from(ip.total_len())).min(data.len())];
        let peer_mac = EthernetFrame::new_checked(data)
            .map(|e| e.src_addr())
            .unwrap_or([0; 6]);
        if !frames::may_send_icmp_error(orig) {
            return;
        }
        if !self.icmp_errors.take(Instant::now()) {
            self.stats.icmp_rate_limited += 1;
            return;
        }
        let mut buf = [0u8; ICMP_ERROR_MAX];
        if let Some(n) = frames::icmp_error(
            &mut buf, msg_type, code, orig, port.mac, peer_mac, port.addr,
        ) {
            drop(m);
            if code == ICMP_FRAG_NEEDED && msg_type == icmp::kind::DEST_UNREACHABLE {
                let mtu = self.port(meta.out_port).map_or(0, |p| p.mtu);
                frames::set_next_hop_mtu(&mut buf[..n], mtu);
            }
            self.stats.icmp_errors += 1;
            self.originate(&buf[..n], meta.in_port);
        }
    }
}
