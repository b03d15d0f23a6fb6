//! Named drop reasons and their per-lcore counters. Every packet fastpath does not
//! transmit or punt is counted under exactly one of these.

/// Why a packet was dropped. The discriminant indexes [`DropCounters`].
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// The output queue refused the packet (`tx_burst` sent fewer than offered).
    TxQueueFull = 0,
    /// Frame shorter than 60 bytes (`ETH_ZLEN`, without FCS).
    Runt = 1,
    /// Unicast to another station's MAC address.
    OtherHost = 2,
    /// 802.3 frame with a length field (raw 802.3 or 802.2 LLC): not IP.
    Ieee8023 = 3,
    /// A VLAN tag announced by its TPID does not fit in the frame.
    VlanTruncated = 4,
    /// The IPv4 header (20 bytes, or IHL × 4) does not fit in the frame.
    Ipv4Truncated = 5,
    /// IP version is not 4.
    Ipv4BadVersion = 6,
    /// IPv4 IHL below 5.
    Ipv4BadIhl = 7,
    /// IPv4 total length beyond the frame, or shorter than the header.
    Ipv4BadTotalLength = 8,
    /// IPv4 header checksum wrong (by the NIC's flag or by computation).
    Ipv4BadChecksum = 9,
    /// IPv4 TTL 1 or 0: may not be forwarded.
    TtlExceeded = 10,
    /// No IPv4 route to the destination.
    NoRoute = 11,
    /// Ethertype neither IPv4, IPv6 nor ARP.
    UnsupportedProtocol = 12,
    /// Still queued in a device when fastpath stopped, drained and freed.
    ShutdownDrain = 13,
    /// A ring between a worker and the control lcore was full (punt or inject).
    ControlRingFull = 14,
    /// IPv4 in a broadcast/multicast frame, or to a broadcast/multicast address: not forwarded.
    NotUnicast = 15,
    /// To one of our addresses but not ICMP echo: there is no local stack.
    LocalUnsupported = 16,
    /// ICMP to us that is truncated, has a bad checksum, or is not an echo request.
    IcmpInvalid = 17,
    /// ARP that is not Ethernet/IPv4, not for one of our addresses, or from a bad sender.
    ArpInvalid = 18,
    /// The pending queue of an unresolved next hop was full.
    NeighQueueFull = 19,
    /// The next hop did not answer ARP: resolution failed.
    NeighFailed = 20,
    /// An IPv4 packet larger than the output port's MTU (fastpath does not fragment).
    MtuExceeded = 21,
    /// Meant for the control plane, over the worker's rate for that kind.
    PuntRateLimited = 22,
    /// A VLAN-tagged frame (VLAN id not 0): no VLAN is configured.
    VlanNotConfigured = 23,
    /// A source or destination that is never routed (RFC 1812 5.3.7).
    Martian = 24,
    /// A `classify` rule with the drop action matched.
    ClassifyRule = 25,
    /// A `filter` rule with the drop action matched.
    FilterRule = 26,
    /// No `filter` rule matched (or the packet could not be parsed) and the
    /// chain's default policy is drop.
    FilterPolicy = 27,
    /// Dropped by a user hook (any hook kind without a reason of its own).
    HookDrop = 28,
    /// Over a policer's rate.
    Policed = 29,
    /// ARP for the control plane from one source (hashed sender address)
    /// over its share of the input port's ARP budget.
    PuntSourceLimited = 30,
    /// A new resolution refused: too many at once out of the port (or over
    /// all ports), beyond the reserve kept for configured gateways.
    NeighResolveLimit = 31,
    /// A stateful `filter` met a packet its connection tracking calls
    /// invalid: a TCP RST outside its connection's sequence window.
    CtInvalid = 32,
    /// Source MAC multicast, broadcast or zero: no station sends from it,
    /// and a reply to it would reach every station.
    BadSourceMac = 33,
    /// A first fragment too short to hold the TCP or UDP header a hook's
    /// rules read (RFC 1858's tiny fragment).
    TinyFragment = 34,
    /// A TCP fragment at offset 1 (8 bytes), which would overwrite the
    /// first fragment's TCP flags on reassembly (RFC 1858).
    OverlappingFragment = 35,
    /// The IPv6 fixed header (40 bytes) does not fit in the frame.
    Ipv6Truncated = 36,
    /// IP version is not 6 under ethertype 0x86DD.
    Ipv6BadVersion = 37,
    /// IPv6 payload length beyond the frame (RFC 8200 section 3).
    Ipv6BadPayloadLength = 38,
    /// A multicast IPv6 source address (RFC 4291 section 2.7).
    Ipv6MulticastSource = 39,
    /// Source :: on anything but neighbour discovery to us (RFC 4291 section 2.5.2).
    Ipv6UnspecifiedSource = 40,
    /// Source or destination ::1 on a wire (RFC 4291 section 2.5.3).
    Ipv6Loopback = 41,
    /// Source or destination in ::ffff:0:0/96 on a wire (RFC 4291 2.5.5.2, RFC 6890).
    Ipv6Ipv4Mapped = 42,
    /// A link-local destination (fe80::/10) that is not ours: never forwarded (RFC 4291 section 2.5.6).
    Ipv6LinkLocalDestination = 43,
    /// Destination :: (RFC 4291 section 2.5.2).
    Ipv6UnspecifiedDestination = 44,
    /// Multicast of scope 0 to 2 (RFC 4291 section 2.7) that is not one of our groups: never forwarded.
    Ipv6MulticastLinkScope = 45,
    /// Multicast of a wider scope: fastpath does not route multicast.
    Ipv6MulticastNotRouted = 46,
    /// To one of our IPv6 addresses but not ICMPv6 (or a fragment of it): no local stack.
    Ipv6LocalUnsupported = 47,
    /// To one of our groups but not neighbour discovery (MLD, echo to all-nodes, UDP, ...).
    Ipv6MulticastUnsupported = 48,
    /// A router solicitation or advertisement to us: not answered yet.
    Ipv6RouterDiscovery = 49,
    /// An extension header runs past the packet (to us: the walk to the upper layer).
    Ipv6ExtHeaderTruncated = 50,
    /// A Hop-by-Hop Options header not right after the IPv6 header (RFC 8200 section 4.1).
    Ipv6HopByHopNotFirst = 51,
    /// More extension headers than the walker follows (hooks::wire::ipv6::MAX_EXTENSION_HEADERS).
    Ipv6TooManyExtHeaders = 52,
    /// A first fragment without the whole header chain (RFC 7112).
    Ipv6ChainNotInFirstFragment = 53,
    // Neighbour discovery and ICMPv6 in the control plane.
    /// Punted as neighbour discovery but not a neighbour solicitation or advertisement.
    NdNotNeighborMessage = 54,
    /// A neighbour solicitation or advertisement with a code other than 0 (RFC 4861 7.1).
    NdBadCode = 55,
    /// A neighbour solicitation or advertisement shorter than 24 bytes, or cut by its frame.
    NdTruncated = 56,
    /// Neighbour discovery with an IP hop limit other than 255: not sent from the link (RFC 4861 7.1).
    NdHopLimitNot255 = 57,
    /// A neighbour solicitation or advertisement whose target is multicast (RFC 4861 7.1).
    NdMulticastTarget = 58,
    /// A neighbour discovery option of length 0 (RFC 4861 7.1).
    NdZeroLengthOption = 59,
    /// A neighbour discovery option that runs past the message.
    NdOptionTruncated = 60,
    /// A link-layer address option that is not 8 bytes on Ethernet.
    NdLinkLayerOptionLength = 61,
    /// A solicitation from :: not sent to a solicited-node group (RFC 4861 7.1.1).
    NdDadNotToSolicitedNode = 62,
    /// A solicitation from :: with a source link-layer address option (RFC 4861 7.1.1).
    NdDadWithSourceLlAddr = 63,
    /// A solicited advertisement sent to a multicast address (RFC 4861 7.1.2).
    NdSolicitedAdvertToMulticast = 64,
    /// Neighbour discovery with a wrong ICMPv6 checksum.
    NdBadChecksum = 65,
    /// A neighbour solicitation for an address that is not the input port's.
    NdTargetNotOurs = 66,
    /// Neighbour discovery from an address not on the port's link, from one of our addresses, or with a multicast or zero link-layer address.
    NdBadSource = 67,
    /// ICMPv6 to us truncated, with a bad checksum, or not an echo request.
    Icmpv6Invalid = 68,
    /// A link-local source that its route would send off its link: ICMPv6 destination unreachable code 2 (RFC 4443 3.1).
    Icmpv6BeyondScope = 69,
    /// Hop limit 1 or 0 on an IPv6 packet to forward: ICMPv6 time exceeded (RFC 4443 3.3).
    Ipv6HopLimitExceeded = 70,
    /// No IPv6 route to the destination: ICMPv6 destination unreachable, code 0.
    Ipv6NoRoute = 71,
    /// An IPv6 packet larger than the output port's MTU: ICMPv6 packet too big (RFC 8200 5).
    Ipv6PacketTooBig = 72,
    // The ports' kernel interfaces.
    /// To the kernel interface over the port's budget.
    KernelRateLimited = 73,
    /// To the kernel interface from one source over its share of the port's budget (a flood).
    KernelSourceLimited = 74,
    /// The kernel interface's queue was full, or the interface down.
    KernelQueueFull = 75,
}

impl DropReason {
    /// Every reason, in counter order.
    pub const ALL: [DropReason; 76] = [
        DropReason::TxQueueFull,
        DropReason::Runt,
        DropReason::OtherHost,
        DropReason::Ieee8023,
        DropReason::VlanTruncated,
        DropReason::Ipv4Truncated,
        DropReason::Ipv4BadVersion,
        DropReason::Ipv4BadIhl,
        DropReason::Ipv4BadTotalLength,
        DropReason::Ipv4BadChecksum,
        DropReason::TtlExceeded,
        DropReason::NoRoute,
        DropReason::UnsupportedProtocol,
        DropReason::ShutdownDrain,
        DropReason::ControlRingFull,
        DropReason::NotUnicast,
        DropReason::LocalUnsupported,
        DropReason::IcmpInvalid,
        DropReason::ArpInvalid,
        DropReason::NeighQueueFull,
        DropReason::NeighFailed,
        DropReason::MtuExceeded,
        DropReason::PuntRateLimited,
        DropReason::VlanNotConfigured,
        DropReason::Martian,
        DropReason::ClassifyRule,
        DropReason::FilterRule,
        DropReason::FilterPolicy,
        DropReason::HookDrop,
        DropReason::Policed,
        DropReason::PuntSourceLimited,
        DropReason::NeighResolveLimit,
        DropReason::CtInvalid,
        DropReason::BadSourceMac,
        DropReason::TinyFragment,
        DropReason::OverlappingFragment,
        DropReason::Ipv6Truncated,
        DropReason::Ipv6BadVersion,
        DropReason::Ipv6BadPayloadLength,
        DropReason::Ipv6MulticastSource,
        DropReason::Ipv6UnspecifiedSource,
        DropReason::Ipv6Loopback,
        DropReason::Ipv6Ipv4Mapped,
        DropReason::Ipv6LinkLocalDestination,
        DropReason::Ipv6UnspecifiedDestination,
        DropReason::Ipv6MulticastLinkScope,
        DropReason::Ipv6MulticastNotRouted,
        DropReason::Ipv6LocalUnsupported,
        DropReason::Ipv6MulticastUnsupported,
        DropReason::Ipv6RouterDiscovery,
        DropReason::Ipv6ExtHeaderTruncated,
        DropReason::Ipv6HopByHopNotFirst,
        DropReason::Ipv6TooManyExtHeaders,
        DropReason::Ipv6ChainNotInFirstFragment,
        DropReason::NdNotNeighborMessage,
        DropReason::NdBadCode,
        DropReason::NdTruncated,
        DropReason::NdHopLimitNot255,
        DropReason::NdMulticastTarget,
        DropReason::NdZeroLengthOption,
        DropReason::NdOptionTruncated,
        DropReason::NdLinkLayerOptionLength,
        DropReason::NdDadNotToSolicitedNode,
        DropReason::NdDadWithSourceLlAddr,
        DropReason::NdSolicitedAdvertToMulticast,
        DropReason::NdBadChecksum,
        DropReason::NdTargetNotOurs,
        DropReason::NdBadSource,
        DropReason::Icmpv6Invalid,
        DropReason::Icmpv6BeyondScope,
        DropReason::Ipv6HopLimitExceeded,
        DropReason::Ipv6NoRoute,
        DropReason::Ipv6PacketTooBig,
        DropReason::KernelRateLimited,
        DropReason::KernelSourceLimited,
        DropReason::KernelQueueFull,
    ];
    /// Number of reasons: the length of a counter array.
    pub const COUNT: usize = Self::ALL.len();

    /// Short snake_case name, used in statistics output and JSON.
    pub const fn name(self) -> &'static str {
        match self {
            DropReason::TxQueueFull => "tx_queue_full",
            DropReason::Runt => "runt",
            DropReason::OtherHost => "other_host",
            DropReason::Ieee8023 => "ieee_802_3",
            DropReason::VlanTruncated => "vlan_truncated",
            DropReason::Ipv4Truncated => "ipv4_truncated",
            DropReason::Ipv4BadVersion => "ipv4_bad_version",
            DropReason::Ipv4BadIhl => "ipv4_bad_ihl",
            DropReason::Ipv4BadTotalLength => "ipv4_bad_total_length",
            DropReason::Ipv4BadChecksum => "ipv4_bad_checksum",
            DropReason::TtlExceeded => "ttl_exceeded",
            DropReason::NoRoute => "no_route",
            DropReason::UnsupportedProtocol => "unsupported_protocol",
            DropReason::ShutdownDrain => "shutdown_drain",
            DropReason::ControlRingFull => "control_ring_full",
            DropReason::NotUnicast => "not_unicast",
            DropReason::LocalUnsupported => "local_unsupported",
            DropReason::IcmpInvalid => "icmp_invalid",
            DropReason::ArpInvalid => "arp_invalid",
            DropReason::NeighQueueFull => "neigh_queue_full",
            DropReason::NeighFailed => "neigh_failed",
            DropReason::MtuExceeded => "mtu_exceeded",
            DropReason::PuntRateLimited => "punt_rate_limited",
            DropReason::VlanNotConfigured => "vlan_not_configured",
            DropReason::Martian => "martian",
            DropReason::ClassifyRule => "classify_rule",
            DropReason::FilterRule => "filter_rule",
            DropReason::FilterPolicy => "filter_policy",
            DropReason::HookDrop => "hook_drop",
            DropReason::Policed => "policed",
            DropReason::PuntSourceLimited => "punt_source_limited",
            DropReason::NeighResolveLimit => "neigh_resolve_limit",
            DropReason::CtInvalid => "ct_invalid",
            DropReason::BadSourceMac => "bad_source_mac",
            DropReason::TinyFragment => "tiny_fragment",
            DropReason::OverlappingFragment => "overlapping_fragment",
            DropReason::Ipv6Truncated => "ipv6_truncated",
            DropReason::Ipv6BadVersion => "ipv6_bad_version",
            DropReason::Ipv6BadPayloadLength => "ipv6_bad_payload_length",
            DropReason::Ipv6MulticastSource => "ipv6_multicast_source",
            DropReason::Ipv6UnspecifiedSource => "ipv6_unspecified_source",
            DropReason::Ipv6Loopback => "ipv6_loopback",
            DropReason::Ipv6Ipv4Mapped => "ipv6_ipv4_mapped",
            DropReason::Ipv6LinkLocalDestination => "ipv6_link_local_destination",
            DropReason::Ipv6UnspecifiedDestination => "ipv6_unspecified_destination",
            DropReason::Ipv6MulticastLinkScope => "ipv6_multicast_link_scope",
            DropReason::Ipv6MulticastNotRouted => "ipv6_multicast_not_routed",
            DropReason::Ipv6LocalUnsupported => "ipv6_local_unsupported",
            DropReason::Ipv6MulticastUnsupported => "ipv6_multicast_unsupported",
            DropReason::Ipv6RouterDiscovery => "ipv6_router_discovery",
            DropReason::Ipv6ExtHeaderTruncated => "ipv6_ext_header_truncated",
            DropReason::Ipv6HopByHopNotFirst => "ipv6_hop_by_hop_not_first",
            DropReason::Ipv6TooManyExtHeaders => "ipv6_too_many_ext_headers",
            DropReason::Ipv6ChainNotInFirstFragment => "ipv6_chain_not_in_first_fragment",
            DropReason::NdNotNeighborMessage => "nd_not_neighbor_message",
            DropReason::NdBadCode => "nd_bad_code",
            DropReason::NdTruncated => "nd_truncated",
            DropReason::NdHopLimitNot255 => "nd_hop_limit_not_255",
            DropReason::NdMulticastTarget => "nd_multicast_target",
            DropReason::NdZeroLengthOption => "nd_zero_length_option",
            DropReason::NdOptionTruncated => "nd_option_truncated",
            DropReason::NdLinkLayerOptionLength => "nd_link_layer_option_length",
            DropReason::NdDadNotToSolicitedNode => "nd_dad_not_to_solicited_node",
            DropReason::NdDadWithSourceLlAddr => "nd_dad_with_source_ll_addr",
            DropReason::NdSolicitedAdvertToMulticast => "nd_solicited_advert_to_multicast",
            DropReason::NdBadChecksum => "nd_bad_checksum",
            DropReason::NdTargetNotOurs => "nd_target_not_ours",
            DropReason::NdBadSource => "nd_bad_source",
            DropReason::Icmpv6Invalid => "icmpv6_invalid",
            DropReason::Icmpv6BeyondScope => "icmpv6_beyond_scope",
            DropReason::Ipv6HopLimitExceeded => "ipv6_hop_limit_exceeded",
            DropReason::Ipv6NoRoute => "ipv6_no_route",
            DropReason::Ipv6PacketTooBig => "ipv6_packet_too_big",
            DropReason::KernelRateLimited => "kernel_rate_limited",
            DropReason::KernelSourceLimited => "kernel_source_limited",
            DropReason::KernelQueueFull => "kernel_queue_full",
        }
    }

    /// One line for an operator: what happened and what usually causes it.
    pub const fn description(self) -> &'static str {
        match self {
            DropReason::TxQueueFull => {
                "output queue full: the peer port's TX ring had no free descriptors"
            }
            DropReason::Runt => {
                "runt: frame under 60 bytes (without FCS), a faulty sender, NIC or cable"
            }
            DropReason::OtherHost => {
                "other host: unicast to another MAC, seen because the port is promiscuous"
            }
            DropReason::Ieee8023 => {
                "802.3 length-field frame (raw 802.3 or 802.2 LLC, e.g. STP): not IP"
            }
            DropReason::VlanTruncated => "VLAN tag cut short: frame ends inside an 802.1Q tag",
            DropReason::Ipv4Truncated => {
                "IPv4 header truncated: frame ends before 20 bytes or before IHL x 4 bytes"
            }
            DropReason::Ipv4BadVersion => "not IPv4: version field is not 4 under ethertype 0x0800",
            DropReason::Ipv4BadIhl => "IPv4 IHL below 5: header shorter than 20 bytes, corrupt",
            DropReason::Ipv4BadTotalLength => {
                "IPv4 total length beyond the frame or below the header length: truncated/corrupt"
            }
            DropReason::Ipv4BadChecksum => {
                "IPv4 header checksum wrong (NIC flag or computed): corrupted in transit"
            }
            DropReason::TtlExceeded => {
                "TTL exceeded: TTL 1 or 0 on arrival, a routing loop or traceroute"
            }
            DropReason::NoRoute => "no route: no prefix in the table matches the destination",
            DropReason::UnsupportedProtocol => {
                "unsupported protocol: ethertype neither IPv4, IPv6 nor ARP (LLDP, ...)"
            }
            DropReason::ShutdownDrain => {
                "drained at shutdown: still queued in a device (e.g. a ring) when fastpath stopped"
            }
            DropReason::ControlRingFull => {
                "control ring full: the control lcore fell behind (ARP/ICMP punt or inject ring)"
            }
            DropReason::NotUnicast => {
                "not unicast: IPv4 to a broadcast/multicast MAC or address, not routed"
            }
            DropReason::LocalUnsupported => {
                "to our address but not ICMP echo (no local TCP/UDP stack)"
            }
            DropReason::IcmpInvalid => {
                "ICMP to us truncated, with a bad checksum, or not an echo request"
            }
            DropReason::ArpInvalid => {
                "ARP not Ethernet/IPv4, not for our address, or from an invalid sender"
            }
            DropReason::NeighQueueFull => {
                "neighbour queue full: too many packets waiting for one ARP resolution"
            }
            DropReason::NeighFailed => "neighbour failed: the next hop did not answer ARP requests",
            DropReason::MtuExceeded => "larger than the output MTU (no fragmentation)",
            DropReason::PuntRateLimited => {
                "for the control plane but over the worker's rate (ARP, ping or resolution flood)"
            }
            DropReason::VlanNotConfigured => {
                "VLAN-tagged (id not 0) but no VLAN is configured: not ours, like Linux"
            }
            DropReason::Martian => {
                "martian: source or destination in 0/8, 127/8 or 240/4, or a multicast source"
            }
            _ => self.description_more(),
        }
    }

    /// [`description`](Self::description) of the IPv6, neighbour discovery
    /// and ICMPv6 reasons.
    const fn description6(self) -> &'static str {
        match self {
            DropReason::Ipv6Truncated => {
                "IPv6 header truncated: frame ends before the 40-byte fixed header"
            }
            DropReason::Ipv6BadVersion => "not IPv6: version field is not 6 under ethertype 0x86DD",
            DropReason::Ipv6BadPayloadLength => {
                "IPv6 payload length beyond the frame: truncated or corrupt"
            }
            DropReason::Ipv6MulticastSource => {
                "IPv6 source is multicast (ff00::/8): forged, never a sender (RFC 4291 2.7)"
            }
            DropReason::Ipv6UnspecifiedSource => {
                "IPv6 source :: on a packet other than neighbour discovery: not routed"
            }
            DropReason::Ipv6Loopback => "IPv6 source or destination ::1 on a wire (RFC 4291 2.5.3)",
            DropReason::Ipv6Ipv4Mapped => {
                "IPv6 source or destination IPv4-mapped (::ffff:0:0/96) on a wire"
            }
            DropReason::Ipv6LinkLocalDestination => {
                "IPv6 to a link-local address not ours: never forwarded (RFC 4291 2.5.6)"
            }
            DropReason::Ipv6UnspecifiedDestination => "IPv6 destination :: (RFC 4291 2.5.2)",
            DropReason::Ipv6MulticastLinkScope => {
                "IPv6 multicast of interface or link scope, not our group: never forwarded"
            }
            DropReason::Ipv6MulticastNotRouted => {
                "IPv6 multicast of site scope or wider: multicast is not routed"
            }
            DropReason::Ipv6LocalUnsupported => {
                "IPv6 to our address but not ICMPv6 (or a fragment): no local stack"
            }
            DropReason::Ipv6MulticastUnsupported => {
                "IPv6 to our group but not neighbour discovery (MLD, echo, UDP...)"
            }
            DropReason::Ipv6RouterDiscovery => {
                "ICMPv6 router solicitation or advertisement to us: not answered"
            }
            DropReason::Ipv6ExtHeaderTruncated => "IPv6 extension header runs past the packet",
            DropReason::Ipv6HopByHopNotFirst => {
                "IPv6 Hop-by-Hop Options header not first (RFC 8200 4.1)"
            }
            DropReason::Ipv6TooManyExtHeaders => "IPv6 chain of more than 8 extension headers",
            DropReason::Ipv6ChainNotInFirstFragment => {
                "IPv6 first fragment without the whole header chain (RFC 7112)"
            }
            _ => self.description_nd(),
        }
    }

    /// [`description`](Self::description) of the hooks' reasons and the
    /// later IPv4 ones (limits, source MAC, fragments), then IPv6's.
    const fn description_more(self) -> &'static str {
        match self {
            DropReason::ClassifyRule => "dropped by a classify rule (ingress hook)",
            DropReason::FilterRule => "dropped by a filter rule (egress hook)",
            DropReason::FilterPolicy => {
                "filter default policy drop: no rule matched, or the packet could not be parsed"
            }
            DropReason::HookDrop => "dropped by a user hook",
            DropReason::Policed => "over a policer's rate (token bucket empty)",
            DropReason::PuntSourceLimited => {
                "ARP from one sender over its share of the port's punt budget (a flood)"
            }
            DropReason::NeighResolveLimit => {
                "too many ARP resolutions at once out of the port: an address sweep"
            }
            DropReason::CtInvalid => {
                "stateful filter: a TCP RST outside its connection's window (a blind reset)"
            }
            DropReason::BadSourceMac => {
                "source MAC multicast, broadcast or zero: forged or broken sender, not answered"
            }
            DropReason::TinyFragment => {
                "first fragment too short for the TCP/UDP header rules read (RFC 1858 attack)"
            }
            DropReason::OverlappingFragment => {
                "TCP fragment at offset 8 bytes, over the first's flags (RFC 1858 attack)"
            }
            _ => self.description6(),
        }
    }

    /// [`description`](Self::description) of the neighbour discovery and
    /// ICMPv6 reasons, and IPv6's errors.
    const fn description_nd(self) -> &'static str {
        match self {
            DropReason::NdNotNeighborMessage => {
                "ND: punted as neighbour discovery but neither a solicitation nor an advertisement"
            }
            DropReason::NdBadCode => {
                "ND: solicitation or advertisement with ICMPv6 code not 0 (RFC 4861 7.1)"
            }
            DropReason::NdTruncated => {
                "ND: solicitation or advertisement shorter than 24 bytes or cut by its frame"
            }
            DropReason::NdHopLimitNot255 => {
                "ND: hop limit not 255, so not sent from the link (RFC 4861 7.1): forged"
            }
            DropReason::NdMulticastTarget => "ND: target address is multicast (RFC 4861 7.1)",
            DropReason::NdZeroLengthOption => "ND: an option has length 0 (RFC 4861 7.1)",
            DropReason::NdOptionTruncated => "ND: an option runs past the message",
            DropReason::NdLinkLayerOptionLength => {
                "ND: a link-layer address option is not 8 bytes (Ethernet)"
            }
            DropReason::NdDadNotToSolicitedNode => {
                "ND: solicitation from :: not to a solicited-node group (RFC 4861 7.1.1)"
            }
            DropReason::NdDadWithSourceLlAddr => {
                "ND: solicitation from :: with a source link-layer address (RFC 4861 7.1.1)"
            }
            DropReason::NdSolicitedAdvertToMulticast => {
                "ND: solicited advertisement to a multicast address (RFC 4861 7.1.2)"
            }
            DropReason::NdBadChecksum => "ND: ICMPv6 checksum wrong: corrupted in transit",
            DropReason::NdTargetNotOurs => {
                "ND: solicitation for an address that is not the input port's (not proxied)"
            }
            DropReason::NdBadSource => {
                "ND: sender not on the port's link, using our address, or with a bad MAC"
            }
            DropReason::Icmpv6Invalid => {
                "ICMPv6 to us truncated, with a bad checksum, or not an echo request"
            }
            DropReason::Icmpv6BeyondScope => {
                "link-local source routed off its link: beyond scope (RFC 4443 3.1), ICMPv6 sent"
            }
            DropReason::Ipv6HopLimitExceeded => {
                "IPv6 hop limit exceeded: 1 or 0 on arrival, a routing loop or traceroute -6"
            }
            DropReason::Ipv6NoRoute => {
                "IPv6 no route: no prefix in the IPv6 table matches the destination"
            }
            DropReason::Ipv6PacketTooBig => {
                "IPv6 larger than the output MTU: packet too big sent (routers never fragment IPv6)"
            }
            DropReason::KernelRateLimited => {
                "to the kernel interface over the port's budget (not from a routing peer): a flood"
            }
            DropReason::KernelSourceLimited => {
                "to the kernel interface from one source over its share of the port's budget"
            }
            DropReason::KernelQueueFull => {
                "the kernel interface's queue was full or the interface down: the kernel lags"
            }
            _ => "",
        }
    }
}

// Discriminants run 0..COUNT: a reason missing from ALL would index past the counters.
const _: () = assert!(DropReason::KernelQueueFull as usize == DropReason::COUNT - 1);

/// One counter per drop reason, owned by one lcore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DropCounters(pub [u64; DropReason::COUNT]);

// std derives Default for arrays of at most 32 elements only.
impl Default for DropCounters {
    fn default() -> Self {
        DropCounters([0; DropReason::COUNT])
    }
}

impl DropCounters {
    /// Count `n` drops for `reason`.
    #[inline(always)]
    pub fn add(&mut self, reason: DropReason, n: u64) {
        self.0[reason as usize] += n;
    }

    /// Drops counted for `reason`.
    pub fn get(&self, reason: DropReason) -> u64 {
        self.0[reason as usize]
    }

    /// Drops over every reason.
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }

    /// Add another lcore's counters into these.
    pub fn merge(&mut self, other: &DropCounters) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a += b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_indexed_in_order() {
        for (i, r) in DropReason::ALL.iter().enumerate() {
            assert_eq!(*r as usize, i);
        }
        let mut names: Vec<_> = DropReason::ALL.iter().map(|r| r.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), DropReason::COUNT);
    }

    #[test]
    fn names_are_snake_case_and_descriptions_one_line() {
        for r in DropReason::ALL {
            let n = r.name();
            assert!(
                !n.is_empty()
                    && n.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{n}"
            );
            let d = r.description();
            assert!(
                !d.is_empty() && !d.contains('\n') && d.len() <= 100,
                "{n}: {d}"
            );
        }
    }

    #[test]
    fn counters_add_and_merge() {
        let mut a = DropCounters::default();
        a.add(DropReason::TxQueueFull, 3);
        let mut b = DropCounters::default();
        b.add(DropReason::TxQueueFull, 4);
        a.merge(&b);
        assert_eq!(a.get(DropReason::TxQueueFull), 7);
        assert_eq!(a.total(), 7);
    }
}
