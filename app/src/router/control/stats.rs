//! The control plane's counters, for the exit report.

/// What the control plane did, for the exit report.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ControlStats {
    /// ARP requests sent to resolve a next hop (broadcast).
    pub arp_requests: u64,
    /// Unicast ARP probes of stale neighbours.
    pub arp_probes: u64,
    /// ARP replies sent for our addresses.
    pub arp_replies: u64,
    /// ICMP echo replies sent.
    pub echo_replies: u64,
    /// ICMP errors sent (time exceeded, destination unreachable).
    pub icmp_errors: u64,
    /// ICMP errors not sent: over the rate limit.
    pub icmp_rate_limited: u64,
    /// Neighbours resolved or refreshed from ARP.
    pub neigh_learned: u64,
    /// Neighbours that went reachable -> stale.
    pub neigh_stale: u64,
    /// Resolutions that failed (no answer after every probe).
    pub neigh_failed: u64,
    /// ARP packets from a sender with no entry and no resolution in
    /// progress: no entry made (gratuitous, unsolicited, requests to us).
    pub arp_not_learned: u64,
    /// Answers not learned because the table was full.
    pub neigh_table_full: u64,
    /// Entries reclaimed: failed, or stale and unused.
    pub neigh_reclaimed: u64,
    /// Resolutions started with a single ARP request (the address failed
    /// lately, or its port was busy with resolutions).
    pub resolve_single_probe: u64,
    /// New resolutions refused (too many at once; packets counted as
    /// `neigh_resolve_limit`).
    pub resolve_refused: u64,
    /// Neighbour solicitations sent to resolve an IPv6 next hop (to its
    /// solicited-node group).
    pub nd_solicits: u64,
    /// Unicast solicitations probing stale IPv6 neighbours.
    pub nd_probes: u64,
    /// Neighbour advertisements sent for our addresses (duplicate address
    /// detection answered included).
    pub nd_adverts: u64,
    /// Neighbour discovery from a sender with no entry and no resolution
    /// in progress: no entry made (unsolicited advertisements,
    /// solicitations from unknown hosts).
    pub nd_not_learned: u64,
    /// Advertisements or solicitations from another node using one of our
    /// addresses (a duplicate address): not learned, counted.
    pub nd_address_conflicts: u64,
    /// ICMPv6 echo replies sent.
    pub echo6_replies: u64,
    /// ICMPv6 errors sent.
    pub icmp6_errors: u64,
    /// ICMPv6 errors not sent: over the rate limit.
    pub icmp6_rate_limited: u64,
    /// ICMPv6 errors not sent: RFC 4443 2.4 (e) forbids them (about an
    /// ICMPv6 error, to a multicast destination, from `::`).
    pub icmp6_not_allowed: u64,
    /// Frames handed to the ports' kernel interfaces (TCP, UDP, ... to us).
    pub to_kernel: u64,
    /// Frames the kernel sent on the ports' interfaces, out by the ports.
    pub from_kernel: u64,
    /// ARP replies and neighbour advertisements to us copied to the kernel,
    /// so that its own resolutions complete.
    pub kernel_mirrored: u64,
    /// Frames the kernel sent that could not go out: no mbuf, or larger
    /// than an mbuf holds.
    pub from_kernel_dropped: u64,
}

impl ControlStats {
    /// Name and value of each counter.
    pub fn fields(&self) -> [(&'static str, u64); 27] {
        [
            ("arp_requests", self.arp_requests),
            ("arp_probes", self.arp_probes),
            ("arp_replies", self.arp_replies),
            ("echo_replies", self.echo_replies),
            ("icmp_errors", self.icmp_errors),
            ("icmp_rate_limited", self.icmp_rate_limited),
            ("neigh_learned", self.neigh_learned),
            ("neigh_stale", self.neigh_stale),
            ("neigh_failed", self.neigh_failed),
            ("arp_not_learned", self.arp_not_learned),
            ("neigh_table_full", self.neigh_table_full),
            ("neigh_reclaimed", self.neigh_reclaimed),
            ("resolve_single_probe", self.resolve_single_probe),
            ("resolve_refused", self.resolve_refused),
            ("nd_solicits", self.nd_solicits),
            ("nd_probes", self.nd_probes),
            ("nd_adverts", self.nd_adverts),
            ("nd_not_learned", self.nd_not_learned),
            ("nd_address_conflicts", self.nd_address_conflicts),
            ("echo6_replies", self.echo6_replies),
            ("icmp6_errors", self.icmp6_errors),
            ("icmp6_rate_limited", self.icmp6_rate_limited),
            ("icmp6_not_allowed", self.icmp6_not_allowed),
            ("to_kernel", self.to_kernel),
            ("from_kernel", self.from_kernel),
            ("kernel_mirrored", self.kernel_mirrored),
            ("from_kernel_dropped", self.from_kernel_dropped),
        ]
    }
}
