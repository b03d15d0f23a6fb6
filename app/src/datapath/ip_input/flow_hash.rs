//! The flow hash an ECMP route picks its member by: the NIC's RSS hash
//! when the mbuf carries one, else the 5-tuple's ([`tuple_hash`]; addresses
//! and protocol only for fragments and protocols without ports, so all
//! fragments of a datagram and all its packets go one way).

use super::header::Ipv4Fields;
use crate::dpdk::Mbuf;
use crate::fib::tuple_hash;
use hooks::wire::ipv4::field;

use hooks::flow::proto::{SCTP, TCP, UDP};

/// The flow hash of a checked IPv4 packet (`ok` from the ip stage's checks,
/// `l3` its header's offset).
#[inline]
pub fn flow_hash(m: &Mbuf, ok: &Ipv4Fields, l3: usize) -> u32 {
    if let Some(h) = m.rss_hash() {
        return h;
    }
    let data = m.data();
    let fragment = data
        .get(l3 + field::FLAGS_FRAG..l3 + field::FLAGS_FRAG + 2)
        .is_some_and(|f| u16::from_be_bytes([f[0], f[1]]) & 0x3fff != 0);
    let ports = match ok.protocol {
        TCP | UDP | SCTP if !fragment => {
            let at = usize::from(ok.l4_offset);
            data.get(at..at + 4)
                .map_or(0, |p| u32::from_be_bytes([p[0], p[1], p[2], p[3]]))
        }
        _ => 0,
    };
    tuple_hash(u32::from(ok.src), u32::from(ok.dst), ok.protocol, ports)
}
