//! The fragments rules cannot judge (RFC 1858), dropped before any rule
//! sees them, as netfilter's TCP and UDP matches do.
//!
//! # Which
//!
//! A first fragment too short to hold the header a rule reads ports or flags
//! from (the "tiny fragment": its ports or flags arrive in a later fragment,
//! which no port rule matches), and a TCP fragment at offset 1, 8 bytes in,
//! which on reassembly would overwrite the first fragment's flags
//! ("overlapping fragment"). A non-first fragment otherwise goes on to the
//! rules: port and flag rules never match it (its key has no L4 bit), the
//! others do, and what none decides gets the policy.
//!
//! # Whose
//!
//! Only a hook whose rules read a protocol's ports or flags drops that
//! protocol's fragments, as netfilter only drops what a TCP or UDP match
//! is asked to examine. The check runs on the flow summary, before the
//! key is built, so every matcher (ACL, linear, flow cache) agrees.

use super::rule::MatchRule;
use crate::flow::{proto, FlowSummary, Fragment};
use crate::flow6::FlowSummary6;
use crate::DropReason;

/// Which protocols' L4 headers a hook's rules read: the fragments of
/// those it checks ([`FragmentGuard::check`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FragmentGuard {
    tcp: bool,
    udp: bool,
}

impl FragmentGuard {
    /// The guard for a hook with `rules` (every rule it matches, terminal
    /// or not): a rule with a port or TCP flags condition reads its
    /// protocol's header, or both TCP's and UDP's without a protocol.
    pub fn for_rules<'a>(rules: impl IntoIterator<Item = &'a MatchRule>) -> FragmentGuard {
        let mut g = FragmentGuard::default();
        for r in rules.into_iter().filter(|r| r.needs_l4()) {
            match r.proto {
                None => (g.tcp, g.udp) = (true, true),
                Some(proto::TCP) => g.tcp = true,
                Some(proto::UDP) => g.udp = true,
                // No other protocol has an L4 bit: the rule never matches.
                Some(_) => {}
            }
        }
        g
    }

    /// Does any rule read L4 headers?
    pub fn active(&self) -> bool {
        self.tcp || self.udp
    }

    /// Why the packet of summary `s` is dropped before the rules, if it is
    /// a fragment they cannot judge. One branch for a packet that is not
    /// a fragment.
    #[inline(always)]
    pub fn check(&self, s: &FlowSummary) -> Option<DropReason> {
        if s.fragment == Fragment::None {
            return None;
        }
        self.check_fragment(s)
    }

    /// [`FragmentGuard::check`] for an IPv6 packet. (A first fragment
    /// without its whole header chain never gets here: RFC 7112 makes it
    /// unreadable, and it gets the policy.)
    #[inline(always)]
    pub fn check6(&self, s: &FlowSummary6) -> Option<DropReason> {
        if s.fragment == Fragment::None {
            return None;
        }
        self.judge(s.proto, s.fragment, s.l4, s.frag_offset_one)
    }

    /// [`FragmentGuard::check`] of a fragment. Out of line: fragments are
    /// rare.
    #[inline(never)]
    fn check_fragment(&self, s: &FlowSummary) -> Option<DropReason> {
        self.judge(s.proto, s.fragment, s.l4, s.frag_offset_one)
    }

    /// The verdict on a fragment of `protocol` at `fragment`, its L4
    /// header read or not, at offset 8 bytes or not.
    #[inline(always)]
    fn judge(
        &self,
        protocol: u8,
        fragment: Fragment,
        l4: bool,
        offset_one: bool,
    ) -> Option<DropReason> {
        let read = match protocol {
            proto::TCP => self.tcp,
            proto::UDP => self.udp,
            _ => false,
        };
        if !read {
            return None;
        }
        match fragment {
            // TCP or UDP at offset 0 whose header was not read: too short.
            Fragment::First if !l4 => Some(DropReason::TinyFragment),
            Fragment::NonFirst if offset_one && protocol == proto::TCP => {
                Some(DropReason::OverlappingFragment)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testkit;

    fn rule(proto: Option<u8>, dport: Option<u16>) -> MatchRule {
        MatchRule {
            proto,
            dport: dport.map(|p| (p, p)),
            ..MatchRule::any()
        }
    }

    fn frag(proto: u8, fragment: Fragment, l4: bool, offset_one: bool) -> FlowSummary {
        FlowSummary {
            proto,
            fragment,
            l4,
            frag_offset_one: offset_one,
            ..FlowSummary::default()
        }
    }

    #[test]
    fn only_rules_with_ports_or_flags_read_l4() {
        let none = FragmentGuard::for_rules(&[rule(Some(proto::TCP), None), rule(None, None)]);
        assert!(!none.active());
        let tcp = FragmentGuard::for_rules(&[rule(Some(proto::TCP), Some(22))]);
        assert_eq!(
            tcp,
            FragmentGuard {
                tcp: true,
                udp: false
            }
        );
        let flags = MatchRule {
            tcp_flags: Some((0x02, 0x12)),
            ..MatchRule::any()
        };
        let both = FragmentGuard::for_rules(&[flags]);
        assert_eq!(
            both,
            FragmentGuard {
                tcp: true,
                udp: true
            }
        );
        let icmp = FragmentGuard::for_rules(&[rule(Some(proto::ICMP), Some(1))]);
        assert!(!icmp.active());
    }

    #[test]
    fn tiny_first_fragments_and_tcp_at_offset_one_are_dropped() {
        let g = FragmentGuard::for_rules(&[rule(Some(proto::TCP), Some(22))]);
        let tiny = frag(proto::TCP, Fragment::First, false, false);
        assert_eq!(g.check(&tiny), Some(DropReason::TinyFragment));
        let overlap = frag(proto::TCP, Fragment::NonFirst, false, true);
        assert_eq!(g.check(&overlap), Some(DropReason::OverlappingFragment));
        // A whole first fragment, a later one past the header, a packet
        // that is not fragmented (even with a short header): the rules'.
        for s in [
            frag(proto::TCP, Fragment::First, true, false),
            frag(proto::TCP, Fragment::NonFirst, false, false),
            frag(proto::TCP, Fragment::None, false, false),
        ] {
            assert_eq!(g.check(&s), None, "{s:?}");
        }
        // UDP's fragments are not this guard's: no rule reads UDP.
        assert_eq!(
            g.check(&frag(proto::UDP, Fragment::First, false, false)),
            None
        );
        let g = FragmentGuard::for_rules(&[rule(Some(proto::UDP), Some(53))]);
        let tiny = frag(proto::UDP, Fragment::First, false, false);
        assert_eq!(g.check(&tiny), Some(DropReason::TinyFragment));
        // Offset 1 overwrites no UDP field a rule reads (ports are at 0).
        assert_eq!(
            g.check(&frag(proto::UDP, Fragment::NonFirst, false, true)),
            None
        );
        assert_eq!(
            g.check(&frag(proto::TCP, Fragment::First, false, false)),
            None
        );
    }

    #[test]
    fn parsed_fragments_of_an_ssh_segment() {
        let g = FragmentGuard::for_rules(&[rule(Some(proto::TCP), Some(22))]);
        // Fragments of a SYN from port 1024 to 22, sequence number 1.
        let syn = testkit::tcp([10, 0, 0, 1], [10, 0, 0, 2], 1024, 22, 0x02)
            .seq(1)
            .window(1024)
            .build_l4();
        let fragment = |more, offset, l4: &[u8]| {
            let b = testkit::ipv4([10, 0, 0, 1], [10, 0, 0, 2], proto::TCP, l4)
                .fragment(more, offset)
                .build_ipv4();
            FlowSummary::parse(&b).unwrap()
        };
        // 8 bytes of TCP: the ports, the flags in the next fragment.
        let first = fragment(true, 0, &syn[..8]);
        assert_eq!(g.check(&first), Some(DropReason::TinyFragment));
        let at_8 = fragment(false, 8, &syn[8..16]);
        assert_eq!(g.check(&at_8), Some(DropReason::OverlappingFragment));
        let at_16 = fragment(false, 16, &[0; 8]);
        assert_eq!(g.check(&at_16), None);
        let whole_header = fragment(true, 0, &[0; 20]);
        assert_eq!(g.check(&whole_header), None);
    }
}
