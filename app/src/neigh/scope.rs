//! Link-local neighbours are one per link, not one per address: fe80::1
//! out of port 0 and fe80::1 out of port 1 are two routers (RFC 4291
//! section 2.5.6, RFC 4007). The table and the control plane key an IPv6
//! neighbour by its *scoped* address: a link-local address (fe80::/64) with
//! its port written into the 48 bits RFC 4291 keeps zero (as the BSDs embed
//! the interface in `fe80:<ifindex>::`), any other address as it is. A
//! scoped address never goes on the wire: [`unscope6`] gives the address
//! and the port back for frames and for people.

use std::net::Ipv6Addr;

/// The first 64 bits of every link-local unicast address fastpath takes
/// as a neighbour's (RFC 4291 section 2.5.6: fe80::/10, then 54 zero bits).
const LINK_LOCAL_PREFIX: u64 = 0xfe80 << 48;

/// Whether `a` is a link-local unicast address in the RFC's form, fe80::/64.
pub fn is_link_local6(a: Ipv6Addr) -> bool {
    (a.to_bits() >> 64) as u64 == LINK_LOCAL_PREFIX
}

/// Whether `a` is in fe80::/10 without the 54 zero bits RFC 4291 requires:
/// no neighbour's address (it could not be told from a scoped one).
pub fn is_malformed_link_local6(a: Ipv6Addr) -> bool {
    a.segments()[0] & 0xffc0 == 0xfe80 && !is_link_local6(a)
}

/// `a` as the neighbour table keys it when it is reached out of `port`:
/// a link-local address carries `port + 1` in its second 16-bit group,
/// any other address is itself.
#[inline(always)]
pub fn scope6(a: Ipv6Addr, port: u16) -> Ipv6Addr {
    if !is_link_local6(a) {
        return a;
    }
    let port = u128::from(port.wrapping_add(1));
    Ipv6Addr::from_bits(a.to_bits() | port << 96)
}

/// A scoped address back as the wire has it, and the port a link-local
/// one is on (`None` for any other address).
pub fn unscope6(a: Ipv6Addr) -> (Ipv6Addr, Option<u16>) {
    let s = a.segments();
    if s[0] != 0xfe80 || s[1] == 0 || s[2] != 0 || s[3] != 0 {
        return (a, None);
    }
    let port = s[1] - 1;
    let bits = a.to_bits() & !(0xffff_u128 << 96);
    (Ipv6Addr::from_bits(bits), Some(port))
}

/// A neighbour's address for people: `fe80::1%2` for a link-local one
/// (port 2, as RFC 4007 writes a zone), the address alone otherwise.
pub fn display6(a: Ipv6Addr) -> String {
    match unscope6(a) {
        (a, Some(port)) => format!("{a}%{port}"),
        (a, None) => a.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    #[test]
    fn link_local_addresses_are_scoped_by_port_and_come_back() {
        let ll = a("fe80::1");
        let (p0, p1) = (scope6(ll, 0), scope6(ll, 1));
        assert_ne!(p0, p1, "one address on two links is two neighbours");
        assert_eq!(p0, a("fe80:1::1"));
        assert_eq!(unscope6(p0), (ll, Some(0)));
        assert_eq!(unscope6(p1), (ll, Some(1)));
        assert_eq!(unscope6(scope6(ll, u16::MAX - 1)), (ll, Some(u16::MAX - 1)));
        assert_eq!(display6(p1), "fe80::1%1");
        // Global addresses are not scoped.
        let g = a("2001:db8::1");
        assert_eq!(scope6(g, 3), g);
        assert_eq!(unscope6(g), (g, None));
        assert_eq!(display6(g), "2001:db8::1");
        // Scoping twice changes nothing more (a scoped address is not in
        // fe80::/64).
        assert_eq!(scope6(p0, 5), p0);
    }

    #[test]
    fn only_fe80_slash_64_is_a_link_local_neighbour() {
        assert!(is_link_local6(a("fe80::abcd:1")));
        assert!(!is_link_local6(a("fe80:1::1")));
        assert!(!is_link_local6(a("febf::1")));
        assert!(is_malformed_link_local6(a("fe80:1::1")));
        assert!(is_malformed_link_local6(a("febf::1")));
        assert!(!is_malformed_link_local6(a("fe80::1")));
        assert!(!is_malformed_link_local6(a("2001:db8::1")));
    }
}
