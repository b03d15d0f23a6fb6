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
}

impl Punt {
    /// Every reason, in code order (code = index + 1).
    pub const ALL: [Punt; 6] = [
        Punt::Arp,
        Punt::LocalIcmp,
        Punt::TtlExceeded,
        Punt::Resolve,
        Punt::NoRoute,
        Punt::FragNeeded,
    ];

    /// The reason stored in the metadata, `None` for 0 or an unknown code.
    pub fn from_code(code: u8) -> Option<Punt> {
        Self::ALL.get(usize::from(code).checked_sub(1)?).copied()
    }
}

// Codes run 1..=ALL.len(): from_code indexes ALL by code - 1.
const _: () = assert!(Punt::FragNeeded as usize == Punt::ALL.len());

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip() {
        for p in Punt::ALL {
            assert_eq!(Punt::from_code(p as u8), Some(p));
        }
        assert_eq!(Punt::from_code(0), None);
        assert_eq!(Punt::from_code(7), None);
    }
}
