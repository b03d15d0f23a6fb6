//! What goes to the ports' kernel interfaces (`[kernel] interfaces =
//! true`): traffic to our addresses that the router does not answer itself
//! (TCP, UDP: BGP, SSH, ...). Without kernel interfaces it is dropped as
//! `local_unsupported` / `ipv6_local_unsupported`, as before.
//!
//! The worker polices it per input port and per source address (hashed),
//! with the configured routing peers ahead of the rest
//! ([`super::budget::PuntBudgets::take_kernel`]): a flood at the router's
//! address spends its source's share and the port's budget, never the
//! peers'. With `ttl_security` (RFC 5082, GTSM) a packet from a peer's
//! address goes ahead only with TTL (hop limit) 255: one spoofed from
//! beyond a router, whose TTL a router lowered, takes the rest's share.

use super::budget::PuntBudgets;
use super::punt::Punt;
use crate::dpdk::Mbuf;
use hooks::wire::ipv6::field as ip6_field;
use hooks::{DropReason, PacketMeta};
use std::net::IpAddr;

/// The routing peers whose traffic to the kernel goes ahead of the rest.
#[derive(Clone, Debug, Default)]
pub struct KernelPeers {
    v4: Vec<[u8; 4]>,
    v6: Vec<[u8; 16]>,
    /// Peers go ahead only with TTL (hop limit) 255.
    ttl_security: bool,
}

impl KernelPeers {
    pub fn new(peers: &[IpAddr], ttl_security: bool) -> KernelPeers {
        let mut k = KernelPeers {
            ttl_security,
            ..KernelPeers::default()
        };
        for p in peers {
            match p {
                IpAddr::V4(a) => k.v4.push(a.octets()),
                IpAddr::V6(a) => k.v6.push(a.octets()),
            }
        }
        k
    }

    /// Whether the packet of network header `ip` and source `src` goes
    /// ahead: from a peer's address, with TTL (hop limit) 255 under
    /// `ttl_security`.
    fn ahead(&self, ip: &[u8], src: &[u8]) -> bool {
        self.has(src) && (!self.ttl_security || hop_limit(ip) == Some(255))
    }

    /// Whether `src` (4 or 16 bytes) is a peer's address.
    fn has(&self, src: &[u8]) -> bool {
        match src.len() {
            4 => self.v4.iter().any(|p| p[..] == *src),
            _ => self.v6.iter().any(|p| p[..] == *src),
        }
    }
}

/// Where a local packet that the router does not answer goes: the kernel
/// with kernel interfaces (`peers` is then `Some`), else a drop for
/// `unsupported`.
#[inline]
pub fn local_other(
    peers: Option<&KernelPeers>,
    unsupported: DropReason,
) -> Result<Punt, DropReason> {
    match peers {
        Some(_) => Ok(Punt::Kernel),
        None => Err(unsupported),
    }
}

/// Take a kernel punt of `m` (received on `port`) from the budgets: its
/// source address decides its tier and its share.
#[cold]
pub fn take(
    budgets: &mut PuntBudgets,
    peers: &KernelPeers,
    port: u16,
    m: &Mbuf,
    meta: &PacketMeta,
    now: impl FnMut() -> u64,
    tsc_hz: u64,
) -> Result<(), DropReason> {
    let ip = m.data().get(usize::from(meta.l3_offset)..).unwrap_or(&[]);
    let src = source(ip).unwrap_or(&[]);
    budgets.take_kernel(port, fold(src), peers.ahead(ip, src), now, tsc_hz)
}

/// The source address of network header `ip` (IPv4 or IPv6 by its
/// version nibble).
fn source(ip: &[u8]) -> Option<&[u8]> {
    match ip.first()? >> 4 {
        4 => ip.get(12..16),
        6 => ip.get(ip6_field::SRC..ip6_field::SRC + 16),
        _ => None,
    }
}

/// The TTL (IPv4) or hop limit (IPv6) of network header `ip`.
fn hop_limit(ip: &[u8]) -> Option<u8> {
    match ip.first()? >> 4 {
        4 => ip.get(8).copied(),
        6 => ip.get(ip6_field::HOP_LIMIT).copied(),
        _ => None,
    }
}

/// 32 bits of an address for the source buckets (IPv6: the words XORed).
fn fold(src: &[u8]) -> u32 {
    src.chunks(4).fold(0, |h, w| {
        let mut b = [0u8; 4];
        b[..w.len()].copy_from_slice(w);
        h ^ u32::from_be_bytes(b)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peers_are_matched_by_family_and_address() {
        let peers = KernelPeers::new(
            &["10.0.2.2".parse().unwrap(), "2001:db8::2".parse().unwrap()],
            false,
        );
        assert!(peers.has(&[10, 0, 2, 2]));
        assert!(!peers.has(&[10, 0, 2, 3]));
        let v6: std::net::Ipv6Addr = "2001:db8::2".parse().unwrap();
        assert!(peers.has(&v6.octets()));
        assert!(!peers.has(&[0; 16]));
        assert!(!peers.has(&[]));
        assert_eq!(
            local_other(None, DropReason::LocalUnsupported),
            Err(DropReason::LocalUnsupported)
        );
        assert_eq!(
            local_other(Some(&peers), DropReason::LocalUnsupported),
            Ok(Punt::Kernel)
        );
    }

    #[test]
    fn the_source_is_read_by_the_ip_version() {
        let mut f = vec![0u8; 40];
        f[0] = 0x45;
        f[12..16].copy_from_slice(&[192, 0, 2, 7]);
        assert_eq!(source(&f), Some(&[192, 0, 2, 7][..]));
        f[0] = 0x60;
        f[8..24].copy_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9]);
        assert_eq!(source(&f).map(|s| s[15]), Some(9));
        assert_eq!(
            fold(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9]),
            0xfe80_0009
        );
        f[0] = 0x10;
        assert_eq!(source(&f), None);
        f[0] = 0x45;
        assert_eq!(source(&f[..6]), None, "cut before the source");
    }

    /// A peer's packet goes ahead; with `ttl_security` only at TTL (hop
    /// limit) 255, in both families; another source never.
    #[test]
    fn ttl_security_lets_only_hop_limit_255_go_ahead() {
        let list = ["10.0.2.2".parse().unwrap(), "2001:db8::2".parse().unwrap()];
        let v4 = |src: [u8; 4], ttl: u8| {
            let mut h = vec![0u8; 20];
            h[0] = 0x45;
            h[8] = ttl;
            h[12..16].copy_from_slice(&src);
            h
        };
        let v6 = |src: &str, hops: u8| {
            let mut h = vec![0u8; 40];
            h[0] = 0x60;
            h[7] = hops;
            let a: std::net::Ipv6Addr = src.parse().unwrap();
            h[8..24].copy_from_slice(&a.octets());
            h
        };
        let plain = KernelPeers::new(&list, false);
        let gtsm = KernelPeers::new(&list, true);
        for (ip, peer, at_255) in [
            (v4([10, 0, 2, 2], 255), true, true),
            (v4([10, 0, 2, 2], 64), true, false),
            (v4([10, 0, 2, 2], 254), true, false),
            (v4([10, 0, 2, 9], 255), false, false),
            (v6("2001:db8::2", 255), true, true),
            (v6("2001:db8::2", 1), true, false),
            (v6("2001:db8::9", 255), false, false),
        ] {
            let src = source(&ip).unwrap();
            assert_eq!(plain.ahead(&ip, src), peer, "{ip:?}");
            assert_eq!(gtsm.ahead(&ip, src), at_255, "{ip:?}");
        }
    }
}
