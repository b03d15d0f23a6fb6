//! ip6_input's delivery to us: a packet to one of our IPv6 addresses or to
//! one of the input port's groups. Neighbour discovery goes to the control
//! plane (RFC 4861's checks are its), other ICMPv6 to our unicast addresses
//! too (echo requests are answered there); the rest goes to the input
//! port's kernel interface with kernel interfaces, else is dropped by name
//! (there is no local stack). So does what goes to the link's other
//! groups (OSPFv3's ff02::5 and ::6, RIPng's ff02::9, ...), ICMPv6 to
//! them excepted (neighbour discovery and MLD for others). The upper layer
//! is found past the extension headers (`walk_extension_headers`); a
//! packet whose chain cannot be walked is dropped with the walker's reason.

use crate::datapath::punt::Punt;
use hooks::wire::icmpv6::kind as msg_type;
use hooks::wire::ipv6::{self, ExtHeaderError, Ipv6Packet};
use hooks::DropReason;

/// Where a packet to us goes: `ip` is its IPv6 packet (fixed header at 0,
/// padding trimmed), `unicast`: to one of our addresses (else to one of our
/// groups), `unspecified`: its source is `::`, `kernel`: the ports have
/// kernel interfaces.
#[inline(never)]
pub fn to_us(
    ip: &[u8],
    unicast: bool,
    unspecified: bool,
    kernel: bool,
) -> Result<Punt, DropReason> {
    let upper = Ipv6Packet::new_unchecked(ip)
        .upper_layer()
        .map_err(ext_header_reason)?;
    let whole = upper.fragment.is_none_or(|f| f.is_atomic());
    let ty = ip.get(upper.offset).copied();
    let icmp = upper.protocol == ipv6::next_header::ICMPV6 && whole;
    match ty {
        Some(msg_type::NEIGHBOR_SOLICIT | msg_type::NEIGHBOR_ADVERT) if icmp => Ok(Punt::Nd),
        _ if unspecified => Err(DropReason::Ipv6UnspecifiedSource),
        Some(msg_type::ROUTER_SOLICIT | msg_type::ROUTER_ADVERT) if icmp => {
            Err(DropReason::Ipv6RouterDiscovery)
        }
        _ if !unicast && kernel => Ok(Punt::Kernel),
        _ if !unicast => Err(DropReason::Ipv6MulticastUnsupported),
        Some(_) if icmp => Ok(Punt::LocalIcmp6),
        None if icmp => Err(DropReason::IcmpInvalid),
        _ if kernel => Ok(Punt::Kernel),
        _ => Err(DropReason::Ipv6LocalUnsupported),
    }
}

/// Where a packet to a link-scope group the port is not in goes: the
/// kernel (with kernel interfaces) unless it is ICMPv6 or from `::`.
#[cold]
pub fn to_link(ip: &[u8], unspecified: bool, kernel: bool) -> Result<Punt, DropReason> {
    if !kernel || unspecified {
        return Err(DropReason::Ipv6MulticastLinkScope);
    }
    let upper = Ipv6Packet::new_unchecked(ip)
        .upper_layer()
        .map_err(ext_header_reason)?;
    if upper.protocol == ipv6::next_header::ICMPV6 {
        return Err(DropReason::Ipv6MulticastLinkScope);
    }
    Ok(Punt::Kernel)
}

/// The drop reason of an extension-header walk that failed.
#[cold]
pub fn ext_header_reason(e: ExtHeaderError) -> DropReason {
    match e {
        ExtHeaderError::Truncated { .. } => DropReason::Ipv6ExtHeaderTruncated,
        ExtHeaderError::HopByHopNotFirst { .. } => DropReason::Ipv6HopByHopNotFirst,
        ExtHeaderError::TooMany => DropReason::Ipv6TooManyExtHeaders,
        ExtHeaderError::ChainNotInFirstFragment => DropReason::Ipv6ChainNotInFirstFragment,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datapath::ip6_input::frames::{icmp6, udp6};

    const US: &str = "2001:db8:1::1";

    fn judge(f: super::super::frames::Frame6, unicast: bool) -> Result<Punt, DropReason> {
        let unspecified = f.src.is_unspecified();
        to_us(&f.build()[14..], unicast, unspecified, false)
    }

    #[test]
    fn with_kernel_interfaces_what_the_router_does_not_answer_goes_to_the_kernel() {
        let peer = "fe80::7";
        let kernel = |f: super::super::frames::Frame6, unicast| {
            let unspecified = f.src.is_unspecified();
            to_us(&f.build()[14..], unicast, unspecified, true)
        };
        assert_eq!(kernel(udp6(peer, US), true), Ok(Punt::Kernel));
        assert_eq!(kernel(udp6(peer, "ff02::1"), false), Ok(Punt::Kernel));
        // fastpath's own still: ND, echo, router discovery's drop.
        assert_eq!(kernel(icmp6(peer, US, 135), true), Ok(Punt::Nd));
        assert_eq!(kernel(icmp6(peer, US, 128), true), Ok(Punt::LocalIcmp6));
        assert_eq!(
            kernel(icmp6(peer, "ff02::2", 133), false),
            Err(DropReason::Ipv6RouterDiscovery)
        );
        // The link's other groups: the kernel's but for ICMPv6 and `::`.
        let link = |f: super::super::frames::Frame6, kernel| {
            let unspecified = f.src.is_unspecified();
            to_link(&f.build()[14..], unspecified, kernel)
        };
        assert_eq!(link(udp6(peer, "ff02::5"), true), Ok(Punt::Kernel));
        for (f, kernel) in [
            (udp6(peer, "ff02::5"), false),
            (icmp6(peer, "ff02::1:ff00:9", 135), true),
            (icmp6(peer, "ff02::16", 143), true),
            (udp6("::", "ff02::5"), true),
        ] {
            assert_eq!(link(f, kernel), Err(DropReason::Ipv6MulticastLinkScope));
        }
    }

    #[test]
    fn nd_and_icmpv6_to_us_are_punted_the_rest_dropped_by_name() {
        let peer = "2001:db8:1::7";
        assert_eq!(judge(icmp6(peer, US, 135), true), Ok(Punt::Nd));
        assert_eq!(judge(icmp6(peer, US, 136), true), Ok(Punt::Nd));
        assert_eq!(
            judge(icmp6(peer, "ff02::1:ff00:1", 135), false),
            Ok(Punt::Nd)
        );
        assert_eq!(
            judge(icmp6("::", "ff02::1:ff00:1", 135), false),
            Ok(Punt::Nd)
        );
        assert_eq!(judge(icmp6(peer, US, 128), true), Ok(Punt::LocalIcmp6));
        // Past a Destination Options header.
        assert_eq!(
            judge(icmp6(peer, US, 128).dest_opts(), true),
            Ok(Punt::LocalIcmp6)
        );
        assert_eq!(judge(icmp6(peer, US, 135).dest_opts(), true), Ok(Punt::Nd));
        for (f, unicast, reason) in [
            (icmp6(peer, US, 133), true, DropReason::Ipv6RouterDiscovery),
            (
                icmp6(peer, "ff02::2", 133),
                false,
                DropReason::Ipv6RouterDiscovery,
            ),
            (
                icmp6(peer, "ff02::1", 134),
                false,
                DropReason::Ipv6RouterDiscovery,
            ),
            (
                icmp6(peer, "ff02::1", 128),
                false,
                DropReason::Ipv6MulticastUnsupported,
            ),
            (
                icmp6(peer, "ff02::1", 143),
                false,
                DropReason::Ipv6MulticastUnsupported,
            ),
            (
                udp6(peer, "ff02::1"),
                false,
                DropReason::Ipv6MulticastUnsupported,
            ),
            (udp6(peer, US), true, DropReason::Ipv6LocalUnsupported),
            (
                icmp6("::", US, 128),
                true,
                DropReason::Ipv6UnspecifiedSource,
            ),
        ] {
            assert_eq!(judge(f.clone(), unicast), Err(reason), "{f:?}");
        }
    }

    #[test]
    fn a_chain_that_cannot_be_walked_is_dropped_with_the_walker_s_reason() {
        let mut f = icmp6("2001:db8:1::7", US, 128).dest_opts();
        // The Destination Options header claims 16 bytes more than there are.
        f.payload[1] = 2;
        assert_eq!(judge(f, true), Err(DropReason::Ipv6ExtHeaderTruncated));
        // Hop-by-Hop after another header.
        let mut f = icmp6("2001:db8:1::7", US, 128).dest_opts();
        f.payload[0] = 0;
        f.payload.extend_from_slice(&[58, 0, 1, 4, 0, 0, 0, 0]);
        assert_eq!(judge(f, true), Err(DropReason::Ipv6HopByHopNotFirst));
    }
}
