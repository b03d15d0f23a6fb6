//! Single values of the file (addresses, prefixes, MACs, queue names):
//! pure parsers that return the message; the caller adds file, line and
//! field.

use super::device::{label, DeviceRef};
use super::schema::{DEFAULT_MTU, DEFAULT_RX_QUEUES};
use super::spec::{port_devices, prefix_mask, PortSpec};
use super::spec6::LinkLocal;
use std::net::Ipv4Addr;

/// Parses a MAC address, `aa:bb:cc:dd:ee:ff` or `aa-bb-cc-dd-ee-ff`, any case.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let sep = if s.contains('-') { '-' } else { ':' };
    let mut mac = [0u8; 6];
    let mut parts = s.split(sep);
    for byte in mac.iter_mut() {
        let part = parts.next()?;
        if part.len() != 2 || !part.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        *byte = u8::from_str_radix(part, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

/// Formats a MAC address as `aa:bb:cc:dd:ee:ff` (lower case).
pub fn format_mac(m: &[u8; 6]) -> String {
    let [a, b, c, d, e, f] = m;
    format!("{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{f:02x}")
}

/// Splits `a.b.c.d/len`; `example` is a valid value to quote in messages.
pub(crate) fn split_prefix(s: &str, example: &str) -> Result<(Ipv4Addr, u8), String> {
    let expected = format!("expected an IPv4 address with a prefix, e.g. \"{example}\"");
    let Some((addr, len)) = s.split_once('/') else {
        return Err(format!("{s:?} has no prefix length; {expected}"));
    };
    let addr: Ipv4Addr = addr.trim().parse().map_err(|_| {
        format!(
            "{s:?}: {:?} is not an IPv4 address; {expected}",
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
    if len > 32 {
        return Err(format!(
            "{s:?}: prefix length {len} is out of range; expected 0 to 32"
        ));
    }
    Ok((addr, len))
}

/// A port `address`: a unicast host address with its subnet's prefix (1..=32).
/// The never-routed range `a` is in, if any (RFC 1812 5.3.7).
pub(crate) fn martian_range(a: Ipv4Addr) -> Option<&'static str> {
    match a.octets()[0] {
        0 => Some("\"this network\" 0.0.0.0/8"),
        127 => Some("loopback 127.0.0.0/8"),
        240..=254 => Some("reserved 240.0.0.0/4"),
        _ => None,
    }
}

pub(crate) fn port_address(s: &str) -> Result<(Ipv4Addr, u8), String> {
    let example = "10.0.1.1/24";
    let (addr, len) = split_prefix(s, example)?;
    if len == 0 {
        return Err(format!(
            "{s:?}: prefix length 0 is out of range for a port; expected 1 to 32, e.g. \"{example}\""
        ));
    }
    let unicast = format!("expected a unicast host address, e.g. \"{example}\"");
    if addr.is_unspecified() {
        return Err(format!("{s:?}: 0.0.0.0 is not a host address; {unicast}"));
    }
    if addr.is_multicast() {
        return Err(format!("{s:?}: {addr} is a multicast address; {unicast}"));
    }
    if let Some(range) = martian_range(addr) {
        return Err(format!(
            "{s:?}: {addr} is in {range}, which is never routed (RFC 1812); {unicast}"
        ));
    }
    if addr.is_broadcast() {
        return Err(format!(
            "{s:?}: {addr} is the limited broadcast address; {unicast}"
        ));
    }
    let port = PortSpec {
        device: DeviceRef::Id(0),
        address: addr,
        prefix_len: len,
        mac: None,
        rx_queues: DEFAULT_RX_QUEUES,
        mtu: DEFAULT_MTU,
        ipv6: Vec::new(),
        link_local: LinkLocal::FromMac,
        kernel_interface: None,
        line: 0,
    };
    if port.is_network_or_broadcast(addr) {
        let kind = if addr == port.broadcast() {
            "broadcast"
        } else {
            "network"
        };
        let host = Ipv4Addr::from(port.network() + 1);
        return Err(format!(
            "{s:?}: {addr} is the {kind} address of {}; expected a host address inside the subnet, \
             e.g. \"{host}/{len}\"",
            port.subnet()
        ));
    }
    Ok((addr, len))
}

/// A route `prefix`: 0..=32 long, no host bits set.
/// A route's `prefix`, e.g. "192.0.2.0/24" (no host bits set).
pub fn route_prefix(s: &str) -> Result<(Ipv4Addr, u8), String> {
    let (addr, len) = split_prefix(s, "192.0.2.0/24")?;
    let masked = Ipv4Addr::from(u32::from(addr) & prefix_mask(len));
    if masked != addr {
        return Err(format!(
            "{s:?} has host bits set after the first {len} bits; did you mean \"{masked}/{len}\"?"
        ));
    }
    Ok((addr, len))
}

/// A plain IPv4 address (no prefix length).
pub(crate) fn plain_address(s: &str, example: &str) -> Result<Ipv4Addr, String> {
    let expected = format!("expected a plain IPv4 address, e.g. \"{example}\"");
    if s.contains('/') {
        return Err(format!("{s:?} has a prefix length; {expected}"));
    }
    s.trim()
        .parse()
        .map_err(|_| format!("{s:?} is not an IPv4 address; {expected}"))
}

/// A MAC address usable as a port's or neighbour's address.
pub(crate) fn unicast_mac(s: &str) -> Result<[u8; 6], String> {
    let expected = "expected a unicast MAC address, e.g. \"02:00:00:00:01:01\"";
    let mac = parse_mac(s).ok_or_else(|| format!("{s:?} is not a MAC address; {expected}"))?;
    if mac[0] & 1 != 0 {
        return Err(format!(
            "{s:?} is a multicast MAC address (low bit of the first byte set); {expected}"
        ));
    }
    if mac == [0; 6] {
        return Err(format!("{s:?} is the all-zero MAC address; {expected}"));
    }
    Ok(mac)
}

/// An `[[lcore]] queues` entry, `"<device>:<rx queue>"` -> (port index, queue).
pub(crate) fn lcore_queue(ports: &[PortSpec], s: &str) -> Result<(usize, u16), String> {
    let example = format!("\"{}:0\"", ports[0].device);
    let expected = format!("expected \"<device>:<rx queue>\", e.g. {example}");
    let Some((device, queue)) = s.rsplit_once(':') else {
        return Err(format!("{s:?} has no queue number; {expected}"));
    };
    let Some(port) = ports.iter().position(|p| p.device.to_string() == device) else {
        return Err(format!(
            "{s:?}: {device:?} is not a configured port; expected the device of a [[port]] as written there: {}",
            port_devices(ports)
        ));
    };
    let queue: u16 = match queue.parse() {
        Ok(q) if queue.bytes().all(|b| b.is_ascii_digit()) => q,
        _ => {
            return Err(format!(
                "{s:?}: {queue:?} is not a queue number; {expected}"
            ))
        }
    };
    let p = &ports[port];
    if queue >= p.rx_queues {
        return Err(format!(
            "{s:?}: rx queue {queue} does not exist; {} has rx_queues = {} (queues 0 to {}, [[port]] at line {})",
            label(&p.device),
            p.rx_queues,
            p.rx_queues - 1,
            p.line
        ));
    }
    Ok((port, queue))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mac_parse_and_format() {
        assert_eq!(parse_mac("02:00:00:00:01:0a"), Some([2, 0, 0, 0, 1, 10]));
        assert_eq!(
            parse_mac("AA-bb-CC-dd-EE-ff"),
            Some([0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff])
        );
        for bad in [
            "",
            "02:00:00:00:01",
            "02:00:00:00:01:02:03",
            "2:0:0:0:1:2",
            "02:00-00:00:01:02",
            "0g:00:00:00:01:02",
            "+2:00:00:00:01:02",
        ] {
            assert_eq!(parse_mac(bad), None, "{bad}");
        }
        assert_eq!(
            format_mac(&[0xaa, 0xbb, 0xcc, 0, 1, 0x0f]),
            "aa:bb:cc:00:01:0f"
        );
    }
}
