//! ARP: answering requests for our addresses and learning neighbours from
//! what ARP tells us (like Linux with `arp_accept=0`: an ARP packet makes no
//! entry unless it answers a resolution in progress).

use super::frames::{self, ARP_FRAME_LEN};
use super::{ControlPlane, PortAddr};
use crate::dpdk::Mbuf;
use crate::neigh::{EthHeader, NeighError};
use hooks::wire::arp::{self, ArpPacket, ArpRepr};
use hooks::wire::ethernet::{ethertype, HEADER_LEN};
use hooks::DropReason;
use std::net::Ipv4Addr;
use std::time::Instant;

impl ControlPlane<'_> {
    /// An ARP packet punted by a worker: learn from its sender, answer a
    /// request for our address.
    pub(super) fn arp_input(&mut self, mut m: Mbuf) {
        let meta = *m.meta();
        let port_id = meta.in_port;
        let (Some(port), Some(bytes)) = (
            self.port(port_id),
            m.data().get(usize::from(meta.l3_offset)..),
        ) else {
            return self.drop(m, port_id, DropReason::ArpInvalid);
        };
        let Some(req) = ArpPacket::new_checked(bytes)
            .ok()
            .and_then(|p| ArpRepr::parse(&p))
        else {
            return self.drop(m, port_id, DropReason::ArpInvalid);
        };
        let probe = req.sender_ip.is_unspecified(); // RFC 5227 probe
        let sender_ok = self.on_link(&port, req.sender_ip)
            && !hooks::wire::ethernet::is_multicast(&req.sender_mac)
            && req.sender_mac != [0; 6];
        if !sender_ok && !probe {
            return self.drop(m, port_id, DropReason::ArpInvalid);
        }
        let for_us = req.target_ip == port.addr;
        if sender_ok {
            self.learn(&port, &req);
        }
        if req.operation == arp::op::REQUEST && for_us {
            let l2 = usize::from(meta.l3_offset) - HEADER_LEN;
            if m.adj(l2 as u16)
                && m.trim_to(ARP_FRAME_LEN as u16)
                && frames::arp_reply_in_place(m.data_mut(), &req, port.mac)
            {
                self.stats.arp_replies += 1;
                return self.send(m, port_id);
            }
            return self.drop(m, port_id, DropReason::ArpInvalid);
        }
        if !for_us && !sender_ok {
            return self.drop(m, port_id, DropReason::ArpInvalid);
        }
        if req.operation == arp::op::REPLY && for_us && sender_ok {
            // The kernel's own resolution of the sender may wait for it.
            self.mirror_to_kernel(&m);
        }
        self.counters.consumed(port_id, 1);
    }

    /// Learn from an ARP packet (any operation, as Linux): update a known
    /// neighbour, or create one whose resolution is in progress. Anything
    /// else (a gratuitous ARP, an unsolicited reply, a request to us from an
    /// unknown host) makes no entry, so a flood of them cannot fill the table.
    fn learn(&mut self, port: &PortAddr, arp: &ArpRepr) {
        let known = self.neigh.table().lookup(arp.sender_ip).is_some();
        if !known && !self.pending.contains_key(&arp.sender_ip) {
            self.stats.arp_not_learned += 1;
            return;
        }
        let hdr = EthHeader {
            dst: arp.sender_mac,
            src: port.mac,
            ethertype: ethertype::IPV4,
        };
        let now = Instant::now();
        let mut learned = self.neigh.resolve(arp.sender_ip, &hdr, self.now_ms(now));
        if matches!(learned, Err(NeighError::Full { .. })) {
            // Slots reclaimed whose grace period has passed since the last
            // round may take it.
            self.neigh.collect();
            learned = self.neigh.resolve(arp.sender_ip, &hdr, self.now_ms(now));
        }
        match learned {
            Ok(i) => {
                self.stats.neigh_learned += 1;
                self.failed_at.remove(&arp.sender_ip);
                // A gateway that failed is back in its ECMP groups.
                self.fib.set_gateway_state(u32::from(arp.sender_ip), true);
                if !known {
                    self.last_used.insert(arp.sender_ip, now);
                }
                if let Some(res) = self.end_resolution(arp.sender_ip) {
                    self.flush_queue(i, res);
                }
            }
            // Static neighbours are not overwritten.
            Err(NeighError::Static(_)) => {}
            Err(e) => self.table_full(arp.sender_ip, e),
        }
    }

    /// Count an answer the full table could not take; say so once.
    #[cold]
    fn table_full(&mut self, addr: Ipv4Addr, e: NeighError) {
        self.stats.neigh_table_full += 1;
        if !self.full_reported {
            self.full_reported = true;
            eprintln!(
                "fastpath: neighbour {addr}: {e}; answers are not learned until \
                 failed or unused entries are reclaimed (said once)"
            );
        }
    }
}
