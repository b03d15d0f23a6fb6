//! A small FPM client that plays zebra for the full-table benchmark
//! (`bench/fpm-install.sh`): a generated IPv4 (or IPv6) table with the
//! prefix lengths of today's Internet table, sent as zebra's
//! `dplane_fpm_nl` sends routes (one `RTM_NEWROUTE` a frame, an inline
//! gateway), as fast as the connection takes them.

use fastpath::fpm::build::{frame_of, new_route, via};
use std::collections::HashSet;
use std::io::Write;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Prefix lengths of a full IPv4 table, per 10,000 prefixes: /24 about
/// 60 %, /22 and /23 a fifth, /16 to /21 most of the rest, little shorter
/// (the shape of the public BGP table in 2024-2026; nothing longer than
/// /24, which the Internet's routers filter).
pub const LENGTHS: [(u8, u32); 17] = [
    (8, 1),
    (9, 1),
    (10, 2),
    (11, 4),
    (12, 8),
    (13, 15),
    (14, 25),
    (15, 40),
    (16, 130),
    (17, 80),
    (18, 130),
    (19, 250),
    (20, 400),
    (21, 500),
    (22, 1150),
    (23, 1000),
    (24, 6264),
];

/// Whether `a/len` touches space no Internet route covers (and that the
/// benchmark's own traffic and ports use): 0/8, 10/8, 100.64/10, 127/8,
/// 169.254/16, 172.16/12, 192.168/16, 198.0/8 (the traffic's 198.19/16
/// with room around it), 224/3.
fn reserved(a: u32, len: u8) -> bool {
    const SPACES: [(u32, u8); 9] = [
        (0x0000_0000, 8),
        (0x0a00_0000, 8),
        (0x6440_0000, 10),
        (0x7f00_0000, 8),
        (0xa9fe_0000, 16),
        (0xac10_0000, 12),
        (0xc0a8_0000, 16),
        (0xc600_0000, 8),
        (0xe000_0000, 3),
    ];
    SPACES.iter().any(|&(s, l)| {
        // Overlap: equal on the shorter of the two prefixes.
        let m = u32::MAX << (32 - u32::from(l.min(len)));
        a & m == s & m
    })
}

/// `n` distinct prefixes (address, length), lengths drawn from
/// [`LENGTHS`], none in reserved space (0/8, 10/8, 198/8, 224/3, ...); the
/// same for the same `seed`.
pub fn table(n: usize, seed: u64) -> Vec<(Ipv4Addr, u8)> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let total: u32 = LENGTHS.iter().map(|l| l.1).sum();
    let mut seen = HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        let mut pick = rng.u32(..total);
        let len = LENGTHS
            .iter()
            .find(|&&(_, w)| {
                let hit = pick < w;
                pick = pick.saturating_sub(w);
                hit
            })
            .map_or(24, |l| l.0);
        let a = rng.u32(..) & (u32::MAX << (32 - u32::from(len)));
        if !reserved(a, len) && seen.insert((a, len)) {
            out.push((Ipv4Addr::from(a), len));
        }
    }
    out
}

/// Prefix lengths of a full IPv6 table, per 1,000 prefixes: /48 about
/// half, /32 to /47 the rest (the public table's shape in 2024-2026;
/// nothing longer than /48, which the Internet's routers filter).
pub const LENGTHS6: [(u8, u32); 9] = [
    (29, 10),
    (32, 110),
    (36, 30),
    (40, 50),
    (42, 20),
    (44, 120),
    (46, 40),
    (47, 20),
    (48, 600),
];

/// `n` distinct IPv6 prefixes in 2000::/3 with lengths drawn from
/// [`LENGTHS6`], none covering or inside 2001:db8::/32 (the benchmark's
/// own addresses); the same for the same `seed`.
pub fn table6(n: usize, seed: u64) -> Vec<(Ipv6Addr, u8)> {
    let mut rng = fastrand::Rng::with_seed(seed);
    let total: u32 = LENGTHS6.iter().map(|l| l.1).sum();
    let mut seen = HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    let doc: u128 = 0x2001_0db8 << 96;
    while out.len() < n {
        let mut pick = rng.u32(..total);
        let len = LENGTHS6
            .iter()
            .find(|&&(_, w)| {
                let hit = pick < w;
                pick = pick.saturating_sub(w);
                hit
            })
            .map_or(48, |l| l.0);
        let mask = u128::MAX << (128 - u32::from(len));
        let a = ((0b001 << 125) | (rng.u128(..) >> 3)) & mask;
        // Overlap with 2001:db8::/32: equal on the shorter of the two.
        let m = u128::MAX << (128 - u32::from(len.min(32)));
        if a & m != doc & m && seen.insert((a, len)) {
            out.push((Ipv6Addr::from(a), len));
        }
    }
    out
}

/// What a replay sent.
#[derive(Clone, Copy, Debug)]
pub struct Replayed {
    pub routes: usize,
    pub bytes: usize,
    /// From connecting to the last byte written.
    pub took: Duration,
}

/// Send `routes`, each by the gateway `gateways[i % len]`, to the FPM server
/// at `to`, one route a frame, written in 64 KiB chunks.
pub fn replay<A: Into<IpAddr> + Copy>(
    to: SocketAddr,
    routes: &[(A, u8)],
    gateways: &[IpAddr],
) -> std::io::Result<Replayed> {
    assert!(!gateways.is_empty(), "at least one gateway");
    let started = Instant::now();
    let mut conn = TcpStream::connect(to)?;
    conn.set_nodelay(true)?;
    let mut chunk = Vec::with_capacity(1 << 16);
    let mut bytes = 0;
    for (i, &(p, len)) in routes.iter().enumerate() {
        let gw = gateways[i % gateways.len()];
        chunk.extend(frame_of(&[new_route(p, len, via(gw, 2))]));
        if chunk.len() >= 1 << 16 {
            conn.write_all(&chunk)?;
            bytes += chunk.len();
            chunk.clear();
        }
    }
    conn.write_all(&chunk)?;
    bytes += chunk.len();
    conn.flush()?;
    let took = started.elapsed();
    // The server reads on after the last byte: keep the connection (a close
    // would make zebra's routes stale) until the caller is done.
    std::mem::forget(conn);
    Ok(Replayed {
        routes: routes.len(),
        bytes,
        took,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ipv6_table_is_distinct_global_and_outside_the_documentation_prefix() {
        let t = table6(20_000, 7);
        let distinct: HashSet<_> = t.iter().collect();
        assert_eq!(distinct.len(), 20_000);
        let doc: u128 = 0x2001_0db8 << 96;
        for (a, len) in &t {
            let a = u128::from(*a);
            assert_eq!(a >> 125, 0b001, "{a:x}/{len}: not in 2000::/3");
            assert_eq!(a & !(u128::MAX << (128 - u32::from(*len))), 0, "host bits");
            let m = u128::MAX << (128 - u32::from((*len).min(32)));
            assert_ne!(a & m, doc & m, "{a:x}/{len} overlaps 2001:db8::/32");
        }
        let half = t.iter().filter(|(_, l)| *l == 48).count();
        assert!((11_000..13_000).contains(&half), "{half} /48s of 20,000");
    }

    #[test]
    fn the_table_is_distinct_realistic_and_outside_reserved_space() {
        let t = table(20_000, 7);
        assert_eq!(t.len(), 20_000);
        let distinct: HashSet<_> = t.iter().collect();
        assert_eq!(distinct.len(), t.len());
        let n24 = t.iter().filter(|p| p.1 == 24).count() as f64 / t.len() as f64;
        assert!((0.58..0.67).contains(&n24), "{n24}");
        assert!(t
            .iter()
            .all(|&(a, l)| l <= 24 && !reserved(u32::from(a), l)));
        assert!(t
            .iter()
            .all(|&(a, l)| u32::from(a) & !(u32::MAX << (32 - l)) == 0));
        // Nothing covers the benchmark's traffic (198.19.0.0/16).
        assert!(t.iter().all(|&(a, _)| a.octets()[0] != 198));
        assert_eq!(table(100, 7), table(100, 7));
    }
}
