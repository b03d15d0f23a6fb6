//! Single IPv6 values of the file (a port's addresses, a route's prefix, a
//! gateway or neighbour): pure parsers that return the message; the caller
//! adds file, line and field. RFC 4291's address classes decide what each
//! place takes.

use super::spec6::mask6;
use std::net::Ipv6Addr;

/// Whether a value is written as an IPv6 address or prefix (it has a colon;
/// no IPv4 value does). A route's family is its prefix's.
pub(crate) fn is_ipv6_text(s: &str) -> bool {
    s.contains(':')
}

/// Splits `addr/len`; `example` is a valid value to quote in messages.
pub(crate) fn split_prefix6(s: &str, example: &str) -> Result<(Ipv6Addr, u8), String> {
    let expected = format!("expected an IPv6 address with a prefix, e.g. \"{example}\"");
    let Some((addr, len)) = s.split_once('/') else {
        return Err(format!("{s:?} has no prefix length; {expected}"));
    };
    let addr: Ipv6Addr = addr.trim().parse().map_err(|_| {
        format!(
            "{s:?}: {:?} is not an IPv6 address; {expected}",
            addr.trim()
        )
    })?;
    let len = len.trim();
    let len: u8 = match len.parse::<u8>() {
        Ok(n) if len.bytes().all(|b| b.is_ascii_digit()) => n,
        _ => {
            return Err(format!(
                "{s:?}: prefix length {len:?} is not a number; {expected}"
            ))
        }
    };
    if len > 128 {
        return Err(format!(
            "{s:?}: prefix length {len} is out of range; expected 0 to 128"
        ));
    }
    Ok((addr, len))
}

/// Why `a` cannot be a unicast host address (an interface's, a gateway's or
/// a neighbour's), if it cannot.
pub(crate) fn not_unicast6(a: Ipv6Addr) -> Option<String> {
    if a.is_unspecified() {
        return Some(format!("{a} is the unspecified address"));
    }
    if a.is_loopback() {
        return Some(format!("{a} is the loopback address"));
    }
    if a.is_multicast() {
        return Some(format!("{a} is a multicast address (ff00::/8)"));
    }
    if a.to_ipv4_mapped().is_some() {
        return Some(format!(
            "{a} is an IPv4-mapped address (::ffff:0:0/96), never used on the wire"
        ));
    }
    None
}

/// Whether `a` is a link-local unicast address (fe80::/10).
pub(crate) fn is_link_local6(a: Ipv6Addr) -> bool {
    a.segments()[0] & 0xffc0 == 0xfe80
}

/// A port's `ipv6` entry: a global (or unique local) unicast address with
/// its subnet's prefix, 1..=128 long.
pub(crate) fn port_address6(s: &str) -> Result<(Ipv6Addr, u8), String> {
    let example = "2001:db8:1::1/64";
    let (addr, len) = split_prefix6(s, example)?;
    let unicast = format!("expected a unicast address with its subnet, e.g. \"{example}\"");
    if len == 0 {
        return Err(format!(
            "{s:?}: prefix length 0 is out of range for a port; expected 1 to 128, e.g. \"{example}\""
        ));
    }
    if let Some(why) = not_unicast6(addr) {
        return Err(format!("{s:?}: {why}; {unicast}"));
    }
    if is_link_local6(addr) {
        return Err(format!(
            "{s:?}: {addr} is link-local (fe80::/10); a port's link-local address goes in \
             `link_local = \"{addr}\"` (or is derived from its MAC when not given)"
        ));
    }
    if len < 127 && addr.to_bits() & !mask6(len) == 0 {
        // RFC 4291 2.6.1: the subnet-router anycast address.
        let host = Ipv6Addr::from_bits(addr.to_bits() | 1);
        return Err(format!(
            "{s:?}: {addr} is the subnet-router anycast address of {addr}/{len} (all host bits \
             zero); {unicast}, e.g. \"{host}/{len}\""
        ));
    }
    Ok((addr, len))
}

/// A port's `link_local`: a unicast address in fe80::/10, no prefix length.
pub(crate) fn link_local_address(s: &str) -> Result<Ipv6Addr, String> {
    let expected = "expected a link-local unicast address in fe80::/10, e.g. \"fe80::1\"";
    let addr = plain_address6(s, "fe80::1")?;
    if let Some(why) = not_unicast6(addr) {
        return Err(format!("{s:?}: {why}; {expected}"));
    }
    if !is_link_local6(addr) {
        return Err(format!(
            "{s:?}: {addr} is not link-local; {expected} (global addresses go in `ipv6 = [...]`)"
        ));
    }
    Ok(addr)
}

/// A route's IPv6 `prefix`: 0..=128 long, no host bits set.
pub(crate) fn route_prefix6(s: &str) -> Result<(Ipv6Addr, u8), String> {
    let (addr, len) = split_prefix6(s, "2001:db8:100::/48")?;
    let masked = Ipv6Addr::from_bits(addr.to_bits() & mask6(len));
    if masked != addr {
        return Err(format!(
            "{s:?} has host bits set after the first {len} bits; did you mean \"{masked}/{len}\"?"
        ));
    }
    Ok((addr, len))
}

/// A plain IPv6 address (no prefix length).
pub(crate) fn plain_address6(s: &str, example: &str) -> Result<Ipv6Addr, String> {
    let expected = format!("expected a plain IPv6 address, e.g. \"{example}\"");
    if s.contains('/') {
        return Err(format!("{s:?} has a prefix length; {expected}"));
    }
    s.trim()
        .parse()
        .map_err(|_| format!("{s:?} is not an IPv6 address; {expected}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values() {
        let a = |s: &str| s.parse::<Ipv6Addr>().unwrap();
        assert_eq!(
            port_address6("2001:db8:1::1/64"),
            Ok((a("2001:db8:1::1"), 64))
        );
        assert!(port_address6("2001:db8:1::/64")
            .unwrap_err()
            .contains("anycast"));
        assert!(port_address6("2001:db8:1::/127").is_ok());
        assert!(port_address6("fe80::1/64")
            .unwrap_err()
            .contains("link_local"));
        assert!(port_address6("ff02::1/64")
            .unwrap_err()
            .contains("multicast"));
        assert!(port_address6("::/64").unwrap_err().contains("unspecified"));
        assert!(port_address6("::1/128").unwrap_err().contains("loopback"));
        assert!(port_address6("::ffff:10.0.0.1/120")
            .unwrap_err()
            .contains("IPv4-mapped"));
        assert!(port_address6("2001:db8::1/129")
            .unwrap_err()
            .contains("0 to 128"));
        assert!(port_address6("2001:db8::1")
            .unwrap_err()
            .contains("no prefix length"));
        assert!(port_address6("2001:db8::g/64")
            .unwrap_err()
            .contains("not an IPv6 address"));
        assert_eq!(link_local_address("fe80::1"), Ok(a("fe80::1")));
        assert!(link_local_address("2001:db8::1")
            .unwrap_err()
            .contains("not link-local"));
        assert!(link_local_address("fe80::1/64")
            .unwrap_err()
            .contains("prefix length"));
        assert_eq!(route_prefix6("::/0"), Ok((a("::"), 0)));
        assert!(route_prefix6("2001:db8::1/64")
            .unwrap_err()
            .contains("did you mean \"2001:db8::/64\"?"));
        assert!(is_ipv6_text("::") && !is_ipv6_text("10.0.0.0/8"));
    }
}
