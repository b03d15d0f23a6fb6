//! What goes to the ports' kernel interfaces (`[kernel] interfaces =
//! true`): traffic to our addresses that the router does not answer itself
//! (TCP, UDP: BGP, SSH, ...). Without kernel interfaces it is dropped as
//! `local_unsupported` / `ipv6_local_unsupported`, as before.
//!
//! The worker polices it per input port and per source address (hashed),
//! with the configured routing peers ahead of the rest
//! ([`super::budget::PuntBudgets::take_kernel`]): a flood at the router's
//! address spends its source's share and the port's budget, never the
//! peers'.

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
}

impl KernelPeers {
    pub fn new(peers: &[IpAddr]) -> KernelPeers {
        let mut k = KernelPeers::default();
        for p in peers {
            match p {
                IpAddr::V4(a) => k.v4.push(a.octets()),
                IpAddr::V6(a) => k.v6.push(a.octets()),
            }
        }
        k
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
    let src = source(m.data(), meta).unwrap_or(&[]);
    budgets.take_kernel(port, fold(src), peers.has(src), now, tsc_hz)
}

/// The IP source address of a frame whose network header is at
/// `meta.l3_offset` (IPv4 or IPv6 by its version nibble).
fn source<'a>(frame: &'a [u8], meta: &PacketMeta) -> Option<&'a [u8]> {
    let ip = frame.get(usize::from(meta.l3_offset)..)?;
    match ip.first()? >> 4 {
        4 => ip.get(12..16),
        6 => ip.get(ip6_field::SRC..ip6_field::SRC + 16),
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
        let peers =
            KernelPeers::new(&["10.0.2.2".parse().unwrap(), "2001:db8::2".parse().unwrap()]);
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
        let mut meta = PacketMeta::default();
        meta.l3_offset = 14;
        let mut f = vec![0u8; 14 + 40];
        f[14] = 0x45;
        f[26..30].copy_from_slice(&[192, 0, 2, 7]);
        assert_eq!(source(&f, &meta), Some(&[192, 0, 2, 7][..]));
        f[14] = 0x60;
        f[22..38].copy_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9]);
        assert_eq!(source(&f, &meta).map(|s| s[15]), Some(9));
        assert_eq!(
            fold(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9]),
            0xfe80_0009
        );
        f[14] = 0x10;
        assert_eq!(source(&f, &meta), None);
        f[14] = 0x45;
        assert_eq!(source(&f[..20], &meta), None, "cut before the source");
    }
}
