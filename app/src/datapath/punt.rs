//! Why a worker handed a packet to the control plane. Stored in
//! [`hooks::PacketMeta::punt`] while the packet travels through the punt ring.

/// A punt reason.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Punt {
    /// An ARP packet on one of our ports.
    Arp = 1,
    /// ICMP to one of our addresses (echo requests are answered).
    LocalIcmp = 2,
    /// TTL 1 or 0 on a packet to forward: an ICMP time exceeded is due.
    TtlExceeded = 3,
    /// The next hop (`meta.next_hop` out of `meta.out_port`) is not resolved:
    /// the packet waits for ARP. Its TTL is already decremented and its frame
    /// is trimmed to an untagged Ethernet header (`l3_offset` 14).
    Resolve = 4,
    /// No route to the destination: an ICMP destination unreachable is due
    /// (the worker punts at most a few per second; the rest are plain drops).
    NoRoute = 5,
    /// Larger than the output MTU with Don't Fragment set: an ICMP
    /// fragmentation needed (with the MTU, for path MTU discovery) is due.
    /// `meta.out_port` is the port whose MTU it exceeds.
    FragNeeded = 6,
    /// ICMPv6 neighbour discovery (a solicitation or an advertisement) to
    /// one of our IPv6 addresses or to a group of ours (all-nodes, an
    /// address's solicited-node group); RFC 4861's checks are the control
    /// plane's.
    Nd = 7,
    /// ICMPv6 to one of our IPv6 addresses (echo requests are answered).
    LocalIcmp6 = 8,
    /// Hop limit 1 or 0 on an IPv6 packet to forward: an ICMPv6 time
    /// exceeded is due.
    HopLimitExceeded = 9,
    /// The IPv6 next hop out of `meta.out_port` is not resolved: the packet
    /// waits for neighbour discovery. Its hop limit is already decremented and
    /// its frame trimmed to an untagged Ethernet header (`l3_offset` 14). The
    /// control plane finds the next hop again in the IPv6 FIB (the route's
    /// gateway, or the destination on-link): 16 bytes do not fit the metadata.
    Resolve6 = 10,
    /// No IPv6 route to the destination: an ICMPv6 destination unreachable,
    /// code 0, is due.
    NoRoute6 = 11,
    /// An IPv6 packet larger than `meta.out_port`'s MTU: an ICMPv6 packet too
    /// big is due (a router never fragments IPv6).
    PacketTooBig = 12,
    /// A packet with a link-local source that its route would send off its
    /// link: an ICMPv6 destination unreachable, code 2 (beyond scope of the
    /// source address), is due.
    BeyondScope = 13,
    /// To one of our addresses, and neither ICMP nor ARP nor neighbour
    /// discovery (TCP, UDP: BGP, SSH, ...): for the input port's kernel
    /// interface (with `[kernel] interfaces = true`; without, such a packet
    /// is dropped as `local_unsupported`).
    Kernel = 14,
}

impl Punt {
    /// Every reason, in code order (code = index + 1).
    pub const ALL: [Punt; 14] = [
        Punt::Arp,
        Punt::LocalIcmp,
        Punt::TtlExceeded,
        Punt::Resolve,
        Punt::NoRoute,
        Punt::FragNeeded,
        Punt::Nd,
        Punt::LocalIcmp6,
        Punt::HopLimitExceeded,
        Punt::Resolve6,
        Punt::NoRoute6,
        Punt::PacketTooBig,
        Punt::BeyondScope,
        Punt::Kernel,
    ];

    /// The reason stored in the metadata, `None` for 0 or an unknown code.
    pub fn from_code(code: u8) -> Option<Punt> {
        Self::ALL.get(usize::from(code).checked_sub(1)?).copied()
    }
}

// Codes run 1..=ALL.len(): from_code indexes ALL by code - 1.
const _: () = assert!(Punt::Kernel as usize == Punt::ALL.len());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for p in Punt::ALL {
            assert_eq!(Punt::from_code(p as u8), Some(p));
        }
        assert_eq!(Punt::from_code(0), None);
        assert_eq!(Punt::from_code(15), None);
    }
}
