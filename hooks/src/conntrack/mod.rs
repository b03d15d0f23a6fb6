//! Connection tracking for a stateful filter: one bounded table per worker,
//! so that "established, related: accept; new inbound: drop" works for TCP,
//! UDP, ICMP echo and (by address pair) other protocols.
//!
//! # Use
//!
//! For each packet the filter calls [`ConnTable::lookup`], which says how
//! the packet relates to the table ([`CtState`]) and, for a packet of a
//! known connection, refreshes its timer and moves its TCP state. Lookup
//! never creates an entry: when the filter *accepts* a packet that was
//! [`CtState::New`], it calls [`ConnTable::commit`], which creates the entry
//! with this packet's direction as the original one (or refreshes the entry
//! when there is one already: a retransmitted SYN, an unanswered UDP
//! stream). A `New` packet the filter drops leaves no trace. Expired entries
//! are reclaimed lazily; a hook can also call [`ConnTable::sweep`] once per
//! burst to reclaim them ahead of need.
//!
//! Per burst, the fast way is [`ConnTable::lookup_burst`], which reads
//! every packet's slot before looking any up (their cache misses overlap),
//! then, for each accepted `New` packet, [`ConnTable::commit_hinted`] with
//! the hint its lookup gave (no second probe).
//!
//! # Design
//!
//! * **Normalised tuple.** The key is the protocol and the two endpoints
//!   `(address, port)` in canonical order, the lower pair first; the entry
//!   remembers which side originated the flow. Both directions of a flow
//!   have the same key, so a packet needs one lookup whichever way it goes.
//! * **One probe sequence.** The slots are a power-of-two array allocated in
//!   [`ConnTable::new`] (twice the capacity rounded up to a power of two, so
//!   the load stays at or below one half); a key's home slot comes from a
//!   hash keyed at random per table (vector multiply-shift, then a fixed
//!   finaliser; strongly universal: six multiplies), and collisions probe
//!   linearly in Robin Hood order, so a miss stops early too. A probe reads
//!   at most 32 slots, which are 64-byte entries, a cache line each; an
//!   insertion that would push an entry further from home is refused like
//!   a full table. Deletion shifts the rest of the cluster back (no
//!   tombstones).
//! * **Lazy expiry.** An entry carries its expiry time; nothing runs on a
//!   timer. An expired entry met while probing (by a lookup, a commit or a
//!   sweep) is removed there, and its slot is free for the next insertion.
//!   Every commit that creates an entry first sweeps a few slots, so dead
//!   entries do not pile up where no probe goes (a commit that only
//!   refreshes an entry does not sweep: entries come from insertions).
//! * **Strict TCP pickup.** Only a SYN (without ACK, RST or FIN) creates a
//!   TCP entry. A mid-stream TCP packet without an entry is `New` and its
//!   commit is refused (counted in [`CtStats::ignored`], not as full); unlike
//!   netfilter's default "loose" mode, connections open before the table
//!   existed (or whose entry was lost) are not picked up.
//! * **TCP windows** (module `tcp`, after Linux's `tcp_in_window`): each
//!   entry keeps both sides' sequence windows, started by the SYN and the
//!   SYN-ACK (with their window scale options) and moved by every in-window
//!   segment. A RST ends the connection only inside the window (else it is
//!   [`CtState::Invalid`], counted in [`CtStats::rst_out_of_window`], and
//!   the filter drops it); other segments outside the window pass, as with
//!   Linux's `tcp_be_liberal`, but move neither the window nor the state.
//!   A side the table first hears mid-stream (an entry committed without
//!   its SYN's bytes) is picked up with the widest window scale.
//! * **Early drop.** A commit that finds no room (the table at capacity,
//!   or the key's probe sequence crowded) drops, among the 16 slots from
//!   the new key's home, the entry that expires first of those that are
//!   not assured (TCP before the handshake completed or closing; other
//!   protocols before a reply), as Linux's `early_drop`; only if there is
//!   none is the flow refused. A SYN flood fills the table with half-open
//!   entries on 60-120 s timeouts, which new flows push out.
//! * **No allocation, no lock.** `&mut self` per worker; `new` allocates the
//!   slot arrays once.
//! * **IPv6 beside IPv4.** A [`ConnTable`] holds two tables, one per
//!   family, each of [`CtConfig::capacity`] entries: the IPv4 one keyed
//!   on two `address << 16 | port` words (64-byte slots), the IPv6 one on
//!   both 128-bit addresses and a word of protocol and ports (128-byte
//!   slots). One code, generic over the key and the packet summary and
//!   monomorphised per family: IPv4's path is what it was. The `*6`
//!   methods ([`ConnTable::lookup6`], [`ConnTable::lookup_burst6`],
//!   [`ConnTable::commit6`], [`ConnTable::commit_hinted6`]) take IPv6
//!   packets ([`FlowSummary6`], bytes from the IPv6 header on); `len`,
//!   `stats`, `sweep` and `audit` cover both tables.
//!
//! # States
//!
//! | packet                                              | state                     |
//! |-----------------------------------------------------|---------------------------|
//! | no entry, or an original-direction packet of an entry that has seen no reply | `New` |
//! | reply direction of an entry, or either direction once it has seen a reply | `Established` |
//! | ICMP error (types 3, 4, 5, 11, 12), ICMPv6 error (types 1 to 4) quoting a tracked flow, sent to the quoted packet's source | `Related` |
//! | non-first fragment; TCP, UDP, ICMP or ICMPv6 whose header is cut short; ICMPv6 informational other than echo (neighbour discovery) | `Untracked` |
//! | TCP RST of an entry, outside its window | `Invalid` |
//!
//! TCP, as Linux's states: a SYN makes the entry (SYN_SENT,
//! [`CtConfig::tcp_syn_sent_ns`]); the reply's SYN-ACK moves it to
//! SYN_RECV ([`CtConfig::tcp_syn_recv_ns`]); only the originator's ACK after
//! it, in the window (so acknowledging the server's SYN), completes the
//! handshake: established ([`CtConfig::tcp_established_ns`], counted in
//! [`CtStats::tcp_established`]). An in-window FIN one way puts it on
//! [`CtConfig::tcp_fin_wait_ns`], a FIN each way on
//! [`CtConfig::tcp_time_wait_ns`]; a SYN on such a closed entry is `New`,
//! and its commit starts a new connection in the same slot (port reuse).
//! An in-window RST is classified as above, then removes the entry; one
//! outside the window is `Invalid` and changes nothing.
//!
//! ICMP: an echo request (type 8) from A to B with identifier `id` creates
//! the entry; the echo reply (type 0) from B to A with the same `id` is its
//! reply direction. An echo reply without a request, and ICMP types other
//! than echo and the errors above, are `New` and never create an entry.
//! Errors never create entries either. An error is `Related` only when the
//! quoted datagram is a first (or only) fragment, quotes enough of its L4
//! header to read the ports (4 bytes for TCP and UDP, 8 for ICMP echo) and
//! the error goes to the quoted packet's source; errors about errors are
//! `New`. `Related` does not refresh the entry's timer.
//!
//! ICMPv6 likewise: echo request 128 and reply 129 as ICMP's 8 and 0,
//! the errors 1 to 4 as ICMP's (the quote, after the 8-byte ICMPv6 header,
//! is an IPv6 header and what follows: its extension headers must be
//! whole); other error types are `New`, informational types other than
//! echo (router and neighbour discovery, 133 to 137, MLD, ...) are
//! `Untracked`, never a connection.
//!
//! Other IP protocols (GRE, ESP, SCTP, ...) are tracked by address pair
//! alone (ports 0) with [`CtConfig::other_ns`]: any packet can create the
//! entry, and a packet from the other address is its reply.
//!
//! # Limits
//!
//! * **Per-worker tables.** Each worker has its own table, so both
//!   directions of a flow, and the ICMP errors about it, must reach the same
//!   worker: the NIC's RSS must be symmetric (a symmetric Toeplitz key, or
//!   hashing on addresses only). Otherwise replies are `New` on the other
//!   worker and a "new inbound: drop" rule drops them. ICMP errors from a
//!   router carry the router's address and land on whatever worker RSS
//!   picks; an error that misses the flow's worker is `New`.
//! * **Bounded.** At most [`ConnTable::capacity`] entries; when they are
//!   taken and none near the new one's home can be dropped early, `commit`
//!   returns `false`, counts [`CtStats::full`] and logs (at most once a
//!   second) "conntrack: table full (N entries), new flows get the default
//!   policy". Existing entries keep working.
//! * **Fragments.** Non-first fragments are `Untracked`: reassembly is out
//!   of scope, so the filter decides on them without state (and must never
//!   match port rules on them).
//! * **Crowding.** The hash key is random per table and never leaves it, so
//!   someone who can choose many tuples cannot pick two that share a home
//!   slot more often than any two flows do (the family is strongly
//!   universal), and a scan's flows in order spread as random ones do
//!   (measured: a finaliser after the universal step sees to it);
//!   crowding a probe sequence would cost at most 32 slot reads per packet
//!   and get the crowded-out flows refused (default policy), nothing
//!   worse. The key is drawn when the table is made (one per worker, when
//!   the first stateful filter starts) and kept with its entries across
//!   reloads; probe timing could in principle hint at which flows collide.

mod table;
mod tcp;
#[cfg(test)]
mod tests;

use crate::flow::{proto, tcp_flag, FlowSummary, Fragment};
use crate::flow6::FlowSummary6;
use crate::MAX_BURST;
use std::marker::PhantomData;
use table::{Key, Key6, Probe, SlotKey, Slots, ASSURED, FIN_A, FIN_B, ORIG_B, REPLIED};
use tcp::{Segment, Window};

const SEC: u64 = 1_000_000_000;
/// Slots a commit sweeps before it inserts.
const SWEEP_PER_COMMIT: usize = 8;
/// Slots a commit sweeps before it inserts when the table is at capacity.
const SWEEP_WHEN_FULL: usize = 32;
/// Upper bound on [`CtConfig::capacity`] (2^26 entries, 8 GiB of slots).
pub const MAX_CAPACITY: usize = 1 << 26;
/// Slots from a new entry's home that a commit finding no room looks at
/// for an entry to drop early (Linux's `NF_CT_EVICTION_RANGE` is 8).
const EARLY_DROP_SLOTS: usize = 16;

/// How a packet relates to the connection table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CtState {
    /// No entry, or an original-direction packet of an entry that has not
    /// seen a reply yet (a retransmitted SYN is still `New`).
    New,
    /// A packet of a connection that has seen traffic both ways (or the
    /// first reply itself).
    Established,
    /// An ICMP error about a tracked connection.
    Related,
    /// Not tracked: a non-first fragment, or a TCP, UDP or ICMP packet
    /// whose L4 header is cut short. The filter decides without state.
    Untracked,
    /// A TCP RST of a tracked connection outside its sequence window (a
    /// blind reset): it changed nothing, and the filter drops it.
    Invalid,
}

/// Where [`ConnTable::lookup_burst`] found a packet's entry, for the
/// [`ConnTable::commit_hinted`] of the same packet. Only a hint: the commit
/// checks that the slot still holds the packet's live entry (other packets'
/// lookups and commits may have moved it) and probes when not.
///
/// It also names the packet's place in its burst: the table keeps each
/// burst's flows (key and direction) until its next `lookup_burst` of that
/// family, and the stateful filter's own commit (`ConnTable::commit_looked`)
/// takes the packet's flow and home slot from there instead of making them
/// again. The public commit does not read them. Twelve bytes whatever the
/// family: the key (40 bytes for IPv6) is never copied into the hint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtHint(Hint<Key>);

/// [`CtHint`] of an IPv6 packet ([`ConnTable::lookup_burst6`],
/// [`ConnTable::commit_hinted6`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtHint6(Hint<Key6>);

impl CtHint {
    /// No slot: the commit probes.
    pub const NONE: CtHint = CtHint(Hint::NONE);
}

impl CtHint6 {
    /// No slot: the commit probes.
    pub const NONE: CtHint6 = CtHint6(Hint::NONE);
}

impl Default for CtHint {
    fn default() -> Self {
        CtHint::NONE
    }
}

impl Default for CtHint6 {
    fn default() -> Self {
        CtHint6::NONE
    }
}

/// A hint's home slot when it has no flow.
const NO_FLOW: u32 = u32::MAX;

/// What a hint holds, whatever the family (`K` only keeps the families'
/// hints apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Hint<K> {
    /// The slot of the flow's entry, or `u32::MAX`.
    slot: u32,
    /// The flow's home slot, or [`NO_FLOW`].
    home: u32,
    /// The packet's place in its burst: its flow is `BurstFlows::flows[at]`
    /// until the table's next `lookup_burst`, when `home` is not [`NO_FLOW`].
    at: u32,
    family: PhantomData<K>,
}

impl<K> Hint<K> {
    /// No slot, no flow.
    const NONE: Hint<K> = Hint {
        slot: u32::MAX,
        home: NO_FLOW,
        at: 0,
        family: PhantomData,
    };

    /// The hint of the flow of packet `at` of a burst, of home slot
    /// `home`: its entry in `slot` (`u32::MAX` for none).
    #[inline(always)]
    fn of(at: usize, home: usize, slot: u32) -> Hint<K> {
        Hint {
            slot,
            home: home as u32,
            at: at as u32,
            family: PhantomData,
        }
    }

    #[inline(always)]
    fn slot(&self) -> usize {
        self.slot as usize
    }
}

/// The public hint type of a family, around its [`Hint`].
trait HintOf<K>: Copy {
    fn wrap(h: Hint<K>) -> Self;
}

impl HintOf<Key> for CtHint {
    #[inline(always)]
    fn wrap(h: Hint<Key>) -> CtHint {
        CtHint(h)
    }
}

impl HintOf<Key6> for CtHint6 {
    #[inline(always)]
    fn wrap(h: Hint<Key6>) -> CtHint6 {
        CtHint6(h)
    }
}

/// What [`ConnTable::commit_hinted`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtCommit {
    /// The flow is tracked: an entry was created or refreshed, or exists.
    Tracked,
    /// The packet cannot create an entry (counted in [`CtStats::ignored`]).
    Ignored,
    /// No room (counted in [`CtStats::full`]).
    Full,
}

/// Table size and timeouts (nanoseconds of the `now_ns` clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CtConfig {
    /// Most entries the table holds (1 to [`MAX_CAPACITY`]); the slot array
    /// has twice this, rounded up to a power of two.
    pub capacity: usize,
    /// TCP connection opening: a SYN, no reply yet (Linux's SYN_SENT).
    pub tcp_syn_sent_ns: u64,
    /// TCP connection opening: the reply's SYN-ACK seen, not the
    /// originator's ACK of it (Linux's SYN_RECV).
    pub tcp_syn_recv_ns: u64,
    /// TCP connection whose handshake completed, no FIN seen.
    pub tcp_established_ns: u64,
    /// TCP connection closing: a FIN one way (Linux's FIN_WAIT and
    /// CLOSE_WAIT).
    pub tcp_fin_wait_ns: u64,
    /// TCP connection closed: a FIN each way (Linux's LAST_ACK and
    /// TIME_WAIT).
    pub tcp_time_wait_ns: u64,
    /// UDP flow that has not seen a reply.
    pub udp_ns: u64,
    /// UDP flow that has seen a reply.
    pub udp_replied_ns: u64,
    /// ICMP echo (request and reply).
    pub icmp_ns: u64,
    /// Other IP protocols, tracked by address pair.
    pub other_ns: u64,
}

impl Default for CtConfig {
    /// 65536 entries; TCP 120 s with a SYN, 60 s with the SYN-ACK, 3600 s
    /// established, 120 s with a FIN one way or each way (Linux's but for
    /// established, 5 days there); UDP 30 s, 180 s once replied; ICMP 30 s;
    /// other protocols 600 s.
    fn default() -> Self {
        CtConfig {
            capacity: 65536,
            tcp_syn_sent_ns: 120 * SEC,
            tcp_syn_recv_ns: 60 * SEC,
            tcp_established_ns: 3600 * SEC,
            tcp_fin_wait_ns: 120 * SEC,
            tcp_time_wait_ns: 120 * SEC,
            udp_ns: 30 * SEC,
            udp_replied_ns: 180 * SEC,
            icmp_ns: 30 * SEC,
            other_ns: 600 * SEC,
        }
    }
}

/// Counters of one table since it was created.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct CtStats {
    /// Entries created by [`ConnTable::commit`] (a TCP port reuse counts).
    pub inserted: u64,
    /// Commits refused for lack of room: the table held `capacity` entries,
    /// or the key's probe sequence was crowded, and no entry near the new
    /// one's home could be dropped early. The flow got the default policy.
    pub full: u64,
    /// Entries dropped to make room for a new one (Linux's early drop):
    /// a TCP connection whose handshake had not completed, or a flow of
    /// another protocol that had seen no reply.
    pub early_drop: u64,
    /// TCP handshakes completed (the originator's ACK of the SYN-ACK):
    /// from then on, the established timeout.
    pub tcp_established: u64,
    /// TCP RSTs outside their connection's window: [`CtState::Invalid`],
    /// the connection kept.
    pub rst_out_of_window: u64,
    /// Other TCP segments outside their connection's window: passed
    /// (as Linux's `tcp_be_liberal`), the connection unchanged by them.
    pub out_of_window: u64,
    /// Expired entries reclaimed (by probes and sweeps).
    pub expired: u64,
    /// Entries removed by a TCP RST.
    pub reset: u64,
    /// Commits refused because the packet cannot create an entry: TCP other
    /// than a bare SYN, ICMP other than an echo request, untracked packets.
    pub ignored: u64,
}

/// A bounded connection table for one worker: an IPv4 table and an IPv6
/// table, each of [`CtConfig::capacity`] entries. See the [module
/// documentation](self). A clone copies every slot (tests and fuzzing).
#[derive(Clone, Debug)]
#[cfg_attr(test, derive(PartialEq, Eq))]
pub struct ConnTable {
    v4: Table<Key>,
    v6: Table<Key6>,
    /// The flows of the last `lookup_burst` of each family.
    flows4: BurstFlows<Key>,
    flows6: BurstFlows<Key6>,
}

/// The flows (key and direction) of a family's last burst looked up,
/// by the packet's place in it: what a hint of that burst names
/// ([`CtHint`]). Scratch, not state: kept between bursts so that no
/// burst sets up (or copies) 64 keys, and left out of a table's
/// equality.
#[derive(Clone, Debug)]
struct BurstFlows<K> {
    flows: Box<[Lookup<K>; MAX_BURST]>,
}

impl<K: Copy + Default> BurstFlows<K> {
    fn new() -> Self {
        BurstFlows {
            flows: Box::new([Lookup::default(); MAX_BURST]),
        }
    }

    /// The flow of packet `at` of the last burst.
    #[inline(always)]
    fn at(&self, at: u32) -> &Lookup<K> {
        &self.flows[at as usize % MAX_BURST]
    }
}

impl<K> PartialEq for BurstFlows<K> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<K> Eq for BurstFlows<K> {}

/// One family's table: the slots and what the code over them keeps.
#[derive(Clone, Debug)]
#[cfg_attr(test, derive(PartialEq, Eq))]
struct Table<K: SlotKey> {
    cfg: CtConfig,
    slots: Slots<K>,
    /// Counters, but `expired`: the slots count what they reclaim.
    stats: CtStats,
    /// When the last "table full" line was logged.
    last_full_log_ns: Option<u64>,
}

/// What the table keys a packet on.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Lookup<K> {
    key: K,
    /// The sender is side `b` of the key.
    from_b: bool,
}

impl Lookup<Key> {
    #[inline(always)]
    fn new(proto: u8, src: u32, sport: u16, dst: u32, dport: u16) -> Lookup<Key> {
        let (key, from_b) = Key::new(proto, src, sport, dst, dport);
        Lookup { key, from_b }
    }
}

impl Lookup<Key6> {
    #[inline(always)]
    fn new6(proto: u8, src: &[u8; 16], sport: u16, dst: &[u8; 16], dport: u16) -> Lookup<Key6> {
        let (key, from_b) = Key6::new(proto, src, sport, dst, dport);
        Lookup { key, from_b }
    }
}

impl<K> Lookup<K> {
    /// The entry flag saying this packet's sender originated the flow.
    #[inline(always)]
    fn orig(&self) -> u8 {
        if self.from_b {
            ORIG_B
        } else {
            0
        }
    }
}

/// How the table sees one packet.
#[derive(Clone, Copy)]
enum Class<K> {
    /// A packet of a trackable flow.
    Flow(Lookup<K>),
    /// An ICMP error: look at the quoted datagram.
    IcmpError,
    /// Trackable protocol, but no entry can match (echo reply or other ICMP
    /// type with no flow of its own): `New`, and commit refuses.
    NoFlow,
    /// `Untracked`.
    Untracked,
}

#[inline(always)]
fn is_icmp_error(t: u8) -> bool {
    matches!(t, 3 | 4 | 5 | 11 | 12)
}

/// ICMPv6 errors that quote a packet of a flow: destination unreachable
/// (1), packet too big (2), time exceeded (3), parameter problem (4).
#[inline(always)]
fn is_icmp6_error(t: u8) -> bool {
    matches!(t, 1..=4)
}

/// The ports an ICMP echo is keyed on: the request goes from `(src, id)` to
/// `(dst, 0)`, so its reply, from `(dst, 0)` to `(src, id)`, has the same
/// key, and a request the other way has another.
#[inline(always)]
fn echo_ports(icmp_type: u8, id: u16) -> Option<(u16, u16)> {
    match icmp_type {
        8 => Some((id, 0)),
        0 => Some((0, id)),
        _ => None,
    }
}

/// [`echo_ports`] of ICMPv6: echo request 128, reply 129.
#[inline(always)]
fn echo_ports6(icmp_type: u8, id: u16) -> Option<(u16, u16)> {
    match icmp_type {
        128 => Some((id, 0)),
        129 => Some((0, id)),
        _ => None,
    }
}

const _: () = assert!(MAX_BURST <= 64);

/// What the table reads of a packet, per family: IPv4's [`FlowSummary`],
/// IPv6's [`FlowSummary6`]. The table's code is generic over it, one
/// monomorphised copy per family.
trait Summary {
    type K: SlotKey;
    /// The family's public hint type.
    type Hint: HintOf<Self::K>;
    /// How the table sees the packet.
    fn classify(&self) -> Class<Self::K>;
    /// Whether this packet (of a trackable flow) may create an entry. TCP:
    /// only a bare SYN; ICMP: only an echo request; UDP and other
    /// protocols: any packet.
    fn creates_entry(&self) -> bool;
    /// The upper-layer protocol.
    fn proto(&self) -> u8;
    fn tcp_flags(&self) -> u8;
    /// The TCP segment, `l3` being the packet from its IP header on.
    fn segment(&self, l3: &[u8]) -> Segment;
    /// The flow of the datagram an ICMP error quotes, when it can be read
    /// and the error goes back to that datagram's source.
    fn quoted_flow(&self, l3: &[u8]) -> Option<Lookup<Self::K>>;
}

impl Summary for FlowSummary {
    type K = Key;
    type Hint = CtHint;

    #[inline(always)]
    fn classify(&self) -> Class<Key> {
        let s = self;
        if s.fragment == Fragment::NonFirst {
            return Class::Untracked;
        }
        match s.proto {
            proto::TCP | proto::UDP if s.l4 => {
                Class::Flow(Lookup::new(s.proto, s.src, s.sport, s.dst, s.dport))
            }
            proto::TCP | proto::UDP => Class::Untracked,
            proto::ICMP if s.l4 => match echo_ports(s.icmp_type, s.sport) {
                Some((sp, dp)) => Class::Flow(Lookup::new(proto::ICMP, s.src, sp, s.dst, dp)),
                None if is_icmp_error(s.icmp_type) => Class::IcmpError,
                None => Class::NoFlow,
            },
            proto::ICMP => Class::Untracked,
            p => Class::Flow(Lookup::new(p, s.src, 0, s.dst, 0)),
        }
    }

    #[inline(always)]
    fn creates_entry(&self) -> bool {
        match self.proto {
            proto::TCP => is_bare_syn(self.tcp_flags),
            proto::ICMP => self.icmp_type == 8,
            _ => true,
        }
    }

    #[inline(always)]
    fn proto(&self) -> u8 {
        self.proto
    }

    #[inline(always)]
    fn tcp_flags(&self) -> u8 {
        self.tcp_flags
    }

    #[inline(always)]
    fn segment(&self, l3: &[u8]) -> Segment {
        Segment::read(self, l3)
    }

    fn quoted_flow(&self, l3: &[u8]) -> Option<Lookup<Key>> {
        quoted_flow(self, l3)
    }
}

impl Summary for FlowSummary6 {
    type K = Key6;
    type Hint = CtHint6;

    /// As IPv4's, with ICMPv6: echo (128, 129) keyed as IPv4's echo, the
    /// errors (1 to 4) looked at for the flow they quote, other error
    /// types `New` (as IPv4's other types), and the informational
    /// messages that are not echo (neighbour discovery, 133 to 137, among
    /// them) `Untracked`: they never make a connection.
    #[inline(always)]
    fn classify(&self) -> Class<Key6> {
        let s = self;
        if s.fragment == Fragment::NonFirst {
            return Class::Untracked;
        }
        match s.proto {
            proto::TCP | proto::UDP if s.l4 => {
                Class::Flow(Lookup::new6(s.proto, &s.src, s.sport, &s.dst, s.dport))
            }
            proto::TCP | proto::UDP => Class::Untracked,
            proto::ICMPV6 if s.l4 => match echo_ports6(s.icmp_type, s.sport) {
                Some((sp, dp)) => Class::Flow(Lookup::new6(proto::ICMPV6, &s.src, sp, &s.dst, dp)),
                None if is_icmp6_error(s.icmp_type) => Class::IcmpError,
                None if s.icmp_type >= 128 => Class::Untracked,
                None => Class::NoFlow,
            },
            proto::ICMPV6 => Class::Untracked,
            p => Class::Flow(Lookup::new6(p, &s.src, 0, &s.dst, 0)),
        }
    }

    #[inline(always)]
    fn creates_entry(&self) -> bool {
        match self.proto {
            proto::TCP => is_bare_syn(self.tcp_flags),
            proto::ICMPV6 => self.icmp_type == 128,
            _ => true,
        }
    }

    #[inline(always)]
    fn proto(&self) -> u8 {
        self.proto
    }

    #[inline(always)]
    fn tcp_flags(&self) -> u8 {
        self.tcp_flags
    }

    #[inline(always)]
    fn segment(&self, l3: &[u8]) -> Segment {
        Segment::read6(self, l3)
    }

    fn quoted_flow(&self, l3: &[u8]) -> Option<Lookup<Key6>> {
        quoted_flow6(self, l3)
    }
}

impl<K: SlotKey> Table<K> {
    /// An empty table; allocates the slot array (see [`CtConfig::capacity`];
    /// a capacity out of range is clamped to 1..=[`MAX_CAPACITY`]).
    fn new(cfg: CtConfig) -> Self {
        let capacity = cfg.capacity.clamp(1, MAX_CAPACITY);
        Table {
            cfg: CtConfig { capacity, ..cfg },
            slots: Slots::new(capacity.next_power_of_two() * 2),
            stats: CtStats::default(),
            last_full_log_ns: None,
        }
    }

    /// Timeout of an entry with these flags.
    #[inline(always)]
    fn timeout(&self, proto: u8, flags: u8) -> u64 {
        let replied = flags & REPLIED != 0;
        let fins = flags & (FIN_A | FIN_B);
        match proto {
            proto::TCP if fins == FIN_A | FIN_B => self.cfg.tcp_time_wait_ns,
            proto::TCP if fins != 0 => self.cfg.tcp_fin_wait_ns,
            proto::TCP if flags & ASSURED != 0 => self.cfg.tcp_established_ns,
            proto::TCP if replied => self.cfg.tcp_syn_recv_ns,
            proto::TCP => self.cfg.tcp_syn_sent_ns,
            proto::UDP if replied => self.cfg.udp_replied_ns,
            proto::UDP => self.cfg.udp_ns,
            p if p == K::ICMP => self.cfg.icmp_ns,
            _ => self.cfg.other_ns,
        }
    }

    /// See [`ConnTable::lookup`].
    #[inline]
    fn lookup<S: Summary<K = K>>(&mut self, s: &S, l3: &[u8], now_ns: u64) -> CtState {
        match s.classify() {
            Class::Flow(l) => {
                let home = self.slots.home(&l.key);
                self.lookup_flow(s, &l, (0, home), || l3, now_ns).0
            }
            Class::IcmpError => self.related(s, l3, now_ns),
            Class::NoFlow => CtState::New,
            Class::Untracked => CtState::Untracked,
        }
    }

    /// See [`ConnTable::lookup_burst`].
    fn lookup_burst<'l, S: Summary<K = K>>(
        &mut self,
        burst: &mut BurstFlows<K>,
        sums: &[S],
        l3: impl Fn(usize) -> &'l [u8],
        now_ns: u64,
        out: &mut [(CtState, S::Hint)],
    ) {
        let n = sums.len().min(out.len()).min(MAX_BURST);
        // The flows' keys (kept for the commits) and home slots; bit k of
        // `others`: packet k has no flow of its own (classified again
        // below, off the fast path).
        let flows = &mut *burst.flows;
        let mut homes = [0usize; MAX_BURST];
        let mut others = 0u64;
        for k in 0..n {
            match sums[k].classify() {
                Class::Flow(l) => {
                    homes[k] = self.slots.home(&l.key);
                    flows[k] = l;
                }
                _ => others |= 1 << k,
            }
        }
        // A loop of loads and nothing else, so that as many as the core
        // can track are in flight at once (packets without a flow read
        // slot 0, harmlessly).
        let mut acc = 0u8;
        for &home in &homes[..n] {
            acc |= self.slots.touch(home);
        }
        std::hint::black_box(acc);
        for k in 0..n {
            let (state, hint) = match others & 1 << k {
                0 => self.lookup_flow(&sums[k], &flows[k], (k, homes[k]), || l3(k), now_ns),
                _ => self.lookup_other(&sums[k], l3(k), now_ns),
            };
            out[k] = (state, S::Hint::wrap(hint));
        }
    }

    /// The lookup of a packet without a flow of its own: an ICMP error
    /// (`Related` or `New`), another ICMP type (`New`) or an untracked one.
    #[inline(never)]
    fn lookup_other<S: Summary<K = K>>(
        &mut self,
        s: &S,
        l3: &[u8],
        now_ns: u64,
    ) -> (CtState, Hint<K>) {
        let state = match s.classify() {
            Class::IcmpError => self.related(s, l3, now_ns),
            Class::NoFlow => CtState::New,
            Class::Flow(_) | Class::Untracked => CtState::Untracked,
        };
        (state, Hint::NONE)
    }

    /// The lookup of packet `at` of a burst, of a trackable flow, `home`
    /// being the slot its key hashes to, `l3` its bytes from the IPv4
    /// header on (asked for TCP only).
    #[inline(always)]
    fn lookup_flow<'l, S: Summary<K = K>>(
        &mut self,
        s: &S,
        l: &Lookup<K>,
        (at, home): (usize, usize),
        l3: impl FnOnce() -> &'l [u8],
        now_ns: u64,
    ) -> (CtState, Hint<K>) {
        let i = match self.slots.probe_from(&l.key, home, now_ns) {
            Probe::Found(i) => i,
            Probe::Vacant(_) | Probe::Exhausted => {
                return (CtState::New, Hint::of(at, home, u32::MAX));
            }
        };
        let hint = Hint::of(at, home, i as u32);
        if s.proto() == proto::TCP {
            let seg = s.segment(l3());
            return self.lookup_tcp(s.tcp_flags(), i, l, seg, hint, now_ns);
        }
        let (mut flags, eproto) = {
            let e = self.slots.get(i);
            (e.flags, e.proto())
        };
        let reply = l.from_b != (flags & ORIG_B != 0);
        if reply {
            flags |= REPLIED;
        } else if flags & REPLIED == 0 {
            return (CtState::New, hint);
        }
        let expires_ns = now_ns.saturating_add(self.timeout(eproto, flags));
        if self.slots.get(i).flags != flags {
            // The state moved (a first reply).
            let e = self.slots.get_mut(i);
            e.flags = flags;
            e.expires_ns = expires_ns;
        } else {
            self.slots.set_expiry(i, expires_ns);
        }
        (CtState::Established, hint)
    }

    /// The lookup of a TCP segment of the connection in slot `i`: a RST
    /// in its window removes it (one outside is `Invalid` and changes
    /// nothing); a SYN on a closed connection is `New` (port reuse, for the
    /// commit); anything else moves the window, and when in the window,
    /// the state: the first reply (SYN-ACK) to SYN_RECV, the originator's
    /// ACK after it to established, a FIN to closing.
    fn lookup_tcp(
        &mut self,
        f: u8,
        i: usize,
        l: &Lookup<K>,
        seg: Segment,
        hint: Hint<K>,
        now_ns: u64,
    ) -> (CtState, Hint<K>) {
        let mut flags = self.slots.get(i).flags;
        let d = usize::from(l.from_b);
        let reply = l.from_b != (flags & ORIG_B != 0);
        let state = match reply || flags & REPLIED != 0 {
            true => CtState::Established,
            false => CtState::New,
        };
        if f & tcp_flag::RST != 0 {
            if !self.slots.get(i).win.rst_ok(d, &seg) {
                self.stats.rst_out_of_window += 1;
                return (CtState::Invalid, Hint::NONE);
            }
            self.slots.remove_at(i);
            self.stats.reset += 1;
            return (state, Hint::NONE);
        }
        let closing = flags & (FIN_A | FIN_B) == FIN_A | FIN_B;
        if (closing && is_bare_syn(f)) || state == CtState::New {
            // A new connection on a closed one's tuple; or the
            // originator again before any reply: its commit (a SYN's)
            // decides, a packet the filter drops leaves no trace.
            return (CtState::New, hint);
        }
        let in_window = self
            .slots
            .window_mut(i)
            .track(d, &seg, flags & ASSURED == 0);
        if !in_window {
            self.stats.out_of_window += 1;
        } else if f & tcp_flag::FIN != 0 {
            flags |= if l.from_b { FIN_B } else { FIN_A };
        }
        flags |= if reply { REPLIED } else { 0 };
        let handshake_ack = f & (tcp_flag::ACK | tcp_flag::SYN) == tcp_flag::ACK;
        if !reply && flags & ASSURED == 0 && handshake_ack && in_window {
            flags |= ASSURED;
            self.stats.tcp_established += 1;
        }
        let expires_ns = now_ns.saturating_add(self.timeout(proto::TCP, flags));
        if self.slots.get(i).flags != flags {
            // The state moved.
            let e = self.slots.get_mut(i);
            (e.flags, e.expires_ns) = (flags, expires_ns);
        } else {
            self.slots.set_expiry(i, expires_ns);
        }
        (CtState::Established, hint)
    }

    /// An ICMP error: `Related` when the datagram it quotes belongs to a
    /// live entry and the error goes to that datagram's source, else `New`.
    #[inline(never)]
    fn related<S: Summary<K = K>>(&mut self, s: &S, l3: &[u8], now_ns: u64) -> CtState {
        match s.quoted_flow(l3) {
            Some(l) if self.slots.find(&l.key, now_ns).is_some() => CtState::Related,
            _ => CtState::New,
        }
    }

    /// [`ConnTable::commit_hinted`] with the packet's bytes asked for only
    /// when they are read (a TCP SYN's).
    #[inline(always)]
    fn commit_lazy<'l, S: Summary<K = K>>(
        &mut self,
        s: &S,
        l3: impl FnOnce() -> &'l [u8],
        now_ns: u64,
        hint: Hint<K>,
    ) -> CtCommit {
        match s.classify() {
            Class::Flow(l) if s.creates_entry() => self.commit_flow(s, &l, None, l3, now_ns, hint),
            Class::Flow(_) | Class::IcmpError | Class::NoFlow | Class::Untracked => {
                self.stats.ignored += 1;
                CtCommit::Ignored
            }
        }
    }

    /// See [`ConnTable::commit_looked`].
    #[inline(always)]
    fn commit_looked<'l, S: Summary<K = K>>(
        &mut self,
        burst: &BurstFlows<K>,
        s: &S,
        l3: impl FnOnce() -> &'l [u8],
        now_ns: u64,
        hint: Hint<K>,
    ) -> CtCommit {
        if hint.home == NO_FLOW {
            return self.commit_lazy(s, l3, now_ns, Hint::NONE);
        }
        let flow = burst.at(hint.at);
        debug_assert!(matches!(s.classify(), Class::Flow(l) if l == *flow));
        debug_assert_eq!(self.slots.home(&flow.key), hint.home as usize);
        if !s.creates_entry() {
            self.stats.ignored += 1;
            return CtCommit::Ignored;
        }
        let home = Some(hint.home as usize);
        self.commit_flow(s, flow, home, l3, now_ns, hint)
    }

    /// Commit packet `s` of flow `l` (`home`: its home slot, when known):
    /// refresh the entry in the hinted slot when it is there, else probe.
    #[inline(always)]
    fn commit_flow<'l, S: Summary<K = K>>(
        &mut self,
        s: &S,
        l: &Lookup<K>,
        home: Option<usize>,
        l3: impl FnOnce() -> &'l [u8],
        now_ns: u64,
        hint: Hint<K>,
    ) -> CtCommit {
        if self.slots.holds(hint.slot(), &l.key, now_ns) {
            // The common case, a refresh: no probe. Only a TCP SYN gets
            // here with a segment to read.
            match s.proto() {
                proto::TCP => self.refresh(hint.slot(), l, &s.segment(l3()), now_ns),
                _ => self.refresh(hint.slot(), l, &Segment::UNKNOWN, now_ns),
            }
            return CtCommit::Tracked;
        }
        match s.proto() {
            proto::TCP => self.commit_probe(*l, home, &s.segment(l3()), now_ns),
            _ => self.commit_probe(*l, home, &Segment::UNKNOWN, now_ns),
        }
    }

    /// The rest of [`commit_hinted`](Self::commit_hinted): probe for the
    /// entry, refresh it or insert one (dropping one early when there is
    /// no room).
    #[inline(never)]
    fn commit_probe(
        &mut self,
        l: Lookup<K>,
        home: Option<usize>,
        seg: &Segment,
        now_ns: u64,
    ) -> CtCommit {
        let orig = l.orig();
        let home = home.unwrap_or_else(|| self.slots.home(&l.key));
        let first = self.slots.probe_from(&l.key, home, now_ns);
        if let Probe::Found(i) = first {
            self.refresh(i, &l, seg, now_ns);
            return CtCommit::Tracked;
        }
        // A new entry: sweep a few slots first, so that dead entries do not
        // pile up where no probe goes (a sweep per insertion, which is what
        // makes entries).
        let budget = if self.slots.len() >= self.cfg.capacity {
            SWEEP_WHEN_FULL
        } else {
            SWEEP_PER_COMMIT
        };
        let mut at = if self.slots.sweep(now_ns, budget) == 0 {
            // Nothing moved: the probe still holds.
            first
        } else {
            self.slots.probe_from(&l.key, home, now_ns)
        };
        let win = match l.key.proto() {
            proto::TCP => Window::opened(usize::from(l.from_b), seg),
            _ => Window::default(),
        };
        let expires_ns = now_ns.saturating_add(self.timeout(l.key.proto(), orig));
        let mut dropped = false;
        loop {
            match at {
                Probe::Vacant(v) if self.slots.len() < self.cfg.capacity => {
                    let entry = (orig, win);
                    if self
                        .slots
                        .insert_at(v, &l.key, entry, expires_ns, now_ns)
                        .is_ok()
                    {
                        self.stats.inserted += 1;
                        return CtCommit::Tracked;
                    }
                }
                Probe::Found(i) => {
                    // Not reached: sweeps and early drops only remove.
                    self.refresh(i, &l, seg, now_ns);
                    return CtCommit::Tracked;
                }
                Probe::Vacant(_) | Probe::Exhausted => {}
            }
            // No room (the table is at capacity, or the key's probe
            // sequence is crowded): drop an entry near its home, once.
            if dropped || !self.early_drop(&l.key) {
                return self.refuse(now_ns);
            }
            dropped = true;
            at = self.slots.probe_from(&l.key, home, now_ns);
        }
    }

    /// Make room for `key` as Linux's `early_drop` does: of the entries in
    /// the [`EARLY_DROP_SLOTS`] slots from its home (where a probe for it
    /// goes), drop the one that expires first among those that are not
    /// assured (a TCP connection whose handshake did not complete, a flow
    /// of another protocol without a reply) or are closing (TCP with a
    /// FIN). Returns whether one was dropped.
    #[cold]
    #[inline(never)]
    fn early_drop(&mut self, key: &K) -> bool {
        let home = self.slots.home(key);
        let victim = (home..home + EARLY_DROP_SLOTS)
            .filter(|&i| {
                let e = self.slots.get(i);
                e.flags & table::USED != 0 && !keeps_its_place(e.proto(), e.flags)
            })
            .min_by_key(|&i| self.slots.get(i).expires_ns);
        let Some(i) = victim else {
            return false;
        };
        self.slots.remove_at(i);
        self.stats.early_drop += 1;
        true
    }

    /// Commit on the existing entry in slot `i`: a TCP entry that is
    /// closing starts a new connection (port reuse); else an
    /// original-direction commit restarts the timer (and a SYN sent again
    /// moves its window).
    #[inline(always)]
    fn refresh(&mut self, i: usize, l: &Lookup<K>, seg: &Segment, now_ns: u64) {
        let orig = l.orig();
        let (flags, p) = {
            let e = self.slots.get(i);
            (e.flags, e.proto())
        };
        let closing = flags & (FIN_A | FIN_B) == FIN_A | FIN_B;
        let d = usize::from(l.from_b);
        if p == proto::TCP && closing {
            // Port reuse: a new connection in the old one's slot.
            let e = self.slots.get_mut(i);
            e.flags = (flags & !(ORIG_B | REPLIED | FIN_A | FIN_B | ASSURED)) | orig;
            e.win = Window::opened(d, seg);
            e.expires_ns = now_ns.saturating_add(self.cfg.tcp_syn_sent_ns);
            self.stats.inserted += 1;
            return;
        }
        if flags & ORIG_B == orig {
            let expires_ns = now_ns.saturating_add(self.timeout(p, flags));
            if p == proto::TCP {
                self.slots.window_mut(i).track(d, seg, flags & ASSURED == 0);
            }
            self.slots.set_expiry(i, expires_ns);
        }
    }

    /// Count and (at most once a second) log a commit refused for lack of
    /// room.
    #[cold]
    fn refuse(&mut self, now_ns: u64) -> CtCommit {
        self.stats.full += 1;
        let due = match self.last_full_log_ns {
            Some(t) => now_ns.saturating_sub(t) >= SEC,
            None => true,
        };
        if due {
            self.last_full_log_ns = Some(now_ns);
            eprintln!(
                "conntrack:{} table full ({} entries), new flows get the default policy",
                K::FAMILY,
                self.slots.len()
            );
        }
        CtCommit::Full
    }

    fn sweep(&mut self, now_ns: u64, max_slots: usize) -> usize {
        self.slots.sweep(now_ns, max_slots)
    }

    fn audit(&self, now_ns: u64) -> Result<(), String> {
        self.slots.audit()?;
        if self.slots.len() > self.cfg.capacity {
            return Err(format!(
                "{} entries, capacity {}",
                self.slots.len(),
                self.cfg.capacity
            ));
        }
        let c = &self.cfg;
        let longest = [
            c.tcp_syn_sent_ns,
            c.tcp_syn_recv_ns,
            c.tcp_established_ns,
            c.tcp_fin_wait_ns,
            c.tcp_time_wait_ns,
            c.udp_ns,
            c.udp_replied_ns,
            c.icmp_ns,
            c.other_ns,
        ]
        .into_iter()
        .max()
        .unwrap_or(0);
        match self.slots.longest_left(now_ns) {
            left if left > longest => Err(format!("an entry lives {left} ns more")),
            _ => Ok(()),
        }
    }

    fn stats(&self) -> CtStats {
        CtStats {
            expired: self.slots.reclaimed(),
            ..self.stats
        }
    }
}

impl ConnTable {
    /// An empty table: an IPv4 and an IPv6 slot array, each for
    /// [`CtConfig::capacity`] entries (a capacity out of range is clamped
    /// to 1..=[`MAX_CAPACITY`]).
    pub fn new(cfg: CtConfig) -> Self {
        ConnTable {
            v4: Table::new(cfg),
            v6: Table::new(cfg),
            flows4: BurstFlows::new(),
            flows6: BurstFlows::new(),
        }
    }

    /// The configuration in use (capacity clamped).
    pub fn config(&self) -> &CtConfig {
        &self.v4.cfg
    }

    /// The state of this packet relative to the table. `l3` is the packet
    /// from its IPv4 header on (read for the datagram an ICMP error quotes).
    ///
    /// For a packet of an existing entry: a reply-direction packet marks
    /// the entry replied (`Established` from then on, both ways) and the
    /// entry's timer restarts; a TCP FIN is noted per direction (both ways:
    /// transient timeout); a TCP RST removes the entry after being
    /// classified. An original-direction packet of an unreplied entry is
    /// `New` and changes nothing (its [`commit`](Self::commit) refreshes the
    /// timer). Never creates an entry.
    #[inline]
    pub fn lookup(&mut self, s: &FlowSummary, l3: &[u8], now_ns: u64) -> CtState {
        self.v4.lookup(s, l3, now_ns)
    }

    /// [`lookup`](Self::lookup) for a burst of packets: `sums[k]` is packet
    /// `k`'s summary, `l3(k)` its bytes from the IPv4 header on (read only
    /// for an ICMP error). Sets `out[k]` to the packet's state and where its
    /// entry is: pass that hint to the [`commit_hinted`](Self::commit_hinted)
    /// of the same packet, which then need not probe again. At most
    /// [`MAX_BURST`] packets (and `out.len()`) are looked up.
    ///
    /// The same as looking the packets up one after the other, but faster
    /// on a table larger than the cache: every packet's slot is read first,
    /// so that their cache and TLB misses overlap instead of coming one
    /// after the other.
    #[inline]
    pub fn lookup_burst<'l>(
        &mut self,
        sums: &[FlowSummary],
        l3: impl Fn(usize) -> &'l [u8],
        now_ns: u64,
        out: &mut [(CtState, CtHint)],
    ) {
        self.v4
            .lookup_burst(&mut self.flows4, sums, l3, now_ns, out)
    }

    /// Create the entry for a `New` packet the filter accepted, with this
    /// packet's direction as the original one; when the entry exists
    /// already, refresh it (original direction) or leave it be. Returns
    /// whether the flow is tracked now. `l3` is the packet from its IPv4
    /// header on: a TCP SYN's sequence number, window and window scale
    /// start the connection's window (without them, its first segments
    /// pick it up).
    ///
    /// Returns `false` for a packet that cannot create an entry (TCP other
    /// than a bare SYN, ICMP other than an echo request, untracked packets;
    /// counted in [`CtStats::ignored`]) and when there is no room and no
    /// entry to drop early (counted in [`CtStats::full`], and logged at
    /// most once a second).
    pub fn commit(&mut self, s: &FlowSummary, l3: &[u8], now_ns: u64) -> bool {
        matches!(
            self.commit_hinted(s, l3, now_ns, CtHint::NONE),
            CtCommit::Tracked
        )
    }

    /// [`commit`](Self::commit) with the hint the packet's
    /// [`lookup_burst`](Self::lookup_burst) gave, and saying why a flow is
    /// not tracked. When the entry is still in the hinted slot the commit
    /// goes straight to it; any hint is safe (a stale one costs a probe).
    #[inline]
    pub fn commit_hinted(
        &mut self,
        s: &FlowSummary,
        l3: &[u8],
        now_ns: u64,
        hint: CtHint,
    ) -> CtCommit {
        self.v4.commit_lazy(s, || l3, now_ns, hint.0)
    }

    /// [`commit_hinted`](Self::commit_hinted) taking the packet's key from
    /// the burst's flows the table kept and its home slot from `hint`, which
    /// must be what this table's last [`lookup_burst`](Self::lookup_burst)
    /// gave for this very packet (the stateful filter's commits): the key
    /// is not made twice, nor copied. [`CtHint::NONE`] is no hint.
    #[inline(always)]
    pub(crate) fn commit_looked<'l>(
        &mut self,
        s: &FlowSummary,
        l3: impl FnOnce() -> &'l [u8],
        now_ns: u64,
        hint: CtHint,
    ) -> CtCommit {
        self.v4.commit_looked(&self.flows4, s, l3, now_ns, hint.0)
    }

    /// [`lookup`](Self::lookup) of an IPv6 packet, in the IPv6 table: the
    /// same states, `l3` being the packet from its IPv6 header on. ICMPv6
    /// echo (128, 129) is keyed as ICMP echo; an ICMPv6 error (1 to 4)
    /// quoting a packet of a tracked flow, sent to that packet's source,
    /// is `Related`; informational ICMPv6 messages other than echo
    /// (neighbour discovery among them) are `Untracked`.
    #[inline]
    pub fn lookup6(&mut self, s: &FlowSummary6, l3: &[u8], now_ns: u64) -> CtState {
        self.v6.lookup(s, l3, now_ns)
    }

    /// [`lookup_burst`](Self::lookup_burst) of IPv6 packets, in the IPv6
    /// table.
    pub fn lookup_burst6<'l>(
        &mut self,
        sums: &[FlowSummary6],
        l3: impl Fn(usize) -> &'l [u8],
        now_ns: u64,
        out: &mut [(CtState, CtHint6)],
    ) {
        self.v6
            .lookup_burst(&mut self.flows6, sums, l3, now_ns, out)
    }

    /// [`commit`](Self::commit) of an IPv6 packet, in the IPv6 table (an
    /// ICMPv6 echo request, 128, makes an echo entry).
    pub fn commit6(&mut self, s: &FlowSummary6, l3: &[u8], now_ns: u64) -> bool {
        matches!(
            self.commit_hinted6(s, l3, now_ns, CtHint6::NONE),
            CtCommit::Tracked
        )
    }

    /// [`commit_hinted`](Self::commit_hinted) of an IPv6 packet, with the
    /// hint its [`lookup_burst6`](Self::lookup_burst6) gave.
    pub fn commit_hinted6(
        &mut self,
        s: &FlowSummary6,
        l3: &[u8],
        now_ns: u64,
        hint: CtHint6,
    ) -> CtCommit {
        self.v6.commit_lazy(s, || l3, now_ns, hint.0)
    }

    /// [`commit_looked`](Self::commit_looked) of an IPv6 packet.
    pub(crate) fn commit_looked6<'l>(
        &mut self,
        s: &FlowSummary6,
        l3: impl FnOnce() -> &'l [u8],
        now_ns: u64,
        hint: CtHint6,
    ) -> CtCommit {
        self.v6.commit_looked(&self.flows6, s, l3, now_ns, hint.0)
    }

    /// Reclaim expired entries, going round each family's table from where
    /// its last sweep stopped, for at most `max_slots` steps each (a step
    /// moves past one slot or reclaims one entry); returns how many were
    /// reclaimed. Optional: a hook can call it once per burst (say 32
    /// steps) so that dead entries are gone before they are needed;
    /// insertions sweep a few slots anyway.
    pub fn sweep(&mut self, now_ns: u64, max_slots: usize) -> usize {
        self.v4.sweep(now_ns, max_slots) + self.v6.sweep(now_ns, max_slots)
    }

    /// Entries in the table, IPv4 and IPv6, counting expired ones not
    /// reclaimed yet.
    pub fn len(&self) -> usize {
        self.v4.slots.len() + self.v6.slots.len()
    }

    /// Entries of the IPv6 table (part of [`len`](Self::len)).
    pub fn len6(&self) -> usize {
        self.v6.slots.len()
    }

    /// No entries at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Entries alive at `now_ns`, both families. Reads every slot: for the
    /// control plane and tests, not per packet.
    pub fn count_live(&self, now_ns: u64) -> usize {
        self.v4.slots.count_live(now_ns) + self.v6.slots.count_live(now_ns)
    }

    /// Check each family's table's invariants at `now_ns` (the latest
    /// time it was given): the slots' own (every entry where a lookup of
    /// either direction finds it, alone with its key, counted), at most
    /// [`capacity`](Self::capacity) entries, and no entry live for longer
    /// than the longest timeout from now. Reads every slot: for tests and
    /// fuzzing, not per packet.
    pub fn audit(&self, now_ns: u64) -> Result<(), String> {
        self.v4.audit(now_ns)?;
        self.v6.audit(now_ns).map_err(|e| format!("IPv6: {e}"))
    }

    /// Most entries each family's table holds.
    pub fn capacity(&self) -> usize {
        self.v4.cfg.capacity
    }

    /// Slots in each family's array (a power of two, at least twice the
    /// capacity).
    pub fn slot_count(&self) -> usize {
        self.v4.slots.slot_count()
    }

    /// Counters since the table was created, both families summed.
    pub fn stats(&self) -> CtStats {
        let (a, b) = (self.v4.stats(), self.v6.stats());
        CtStats {
            inserted: a.inserted + b.inserted,
            full: a.full + b.full,
            early_drop: a.early_drop + b.early_drop,
            tcp_established: a.tcp_established + b.tcp_established,
            rst_out_of_window: a.rst_out_of_window + b.rst_out_of_window,
            out_of_window: a.out_of_window + b.out_of_window,
            expired: a.expired + b.expired,
            reset: a.reset + b.reset,
            ignored: a.ignored + b.ignored,
        }
    }

    /// The IPv6 table's counters (part of [`stats`](Self::stats)).
    pub fn stats6(&self) -> CtStats {
        self.v6.stats()
    }
}

/// Whether an entry with these flags is kept when the table needs room
/// (Linux's assured connections): TCP whose handshake completed and that
/// is not closing; other protocols once they have seen a reply.
#[inline(always)]
fn keeps_its_place(proto: u8, flags: u8) -> bool {
    match proto {
        proto::TCP => flags & ASSURED != 0 && flags & (FIN_A | FIN_B) == 0,
        _ => flags & REPLIED != 0,
    }
}

/// SYN without ACK, RST or FIN.
#[inline(always)]
fn is_bare_syn(flags: u8) -> bool {
    flags & (tcp_flag::SYN | tcp_flag::ACK | tcp_flag::RST | tcp_flag::FIN) == tcp_flag::SYN
}

/// The flow of the datagram an ICMP error quotes, when it can be read and
/// the error goes back to that datagram's source.
fn quoted_flow(s: &FlowSummary, l3: &[u8]) -> Option<Lookup<Key>> {
    // The error's own datagram ends at its total length (not at the
    // Ethernet padding); the quote starts after the 8-byte ICMP header.
    let total = usize::from(u16::from_be_bytes([*l3.get(2)?, *l3.get(3)?]));
    let quote = l3.get(usize::from(s.l4_offset) + 8..total.min(l3.len()))?;
    // The quoted header's total length is the original datagram's, longer
    // than the quote: FlowSummary clamps it to the bytes present.
    let q = FlowSummary::parse(quote)?;
    if q.fragment == Fragment::NonFirst || q.src != s.dst {
        return None;
    }
    match q.proto {
        proto::TCP | proto::UDP => {
            // An error need quote only 8 bytes of L4 header, less than a
            // TCP header: read the ports directly.
            let at = usize::from(q.l4_offset);
            let p = quote.get(at..at + 4)?;
            let sport = u16::from_be_bytes([p[0], p[1]]);
            let dport = u16::from_be_bytes([p[2], p[3]]);
            Some(Lookup::new(q.proto, q.src, sport, q.dst, dport))
        }
        proto::ICMP if q.l4 => {
            let (sp, dp) = echo_ports(q.icmp_type, q.sport)?;
            Some(Lookup::new(proto::ICMP, q.src, sp, q.dst, dp))
        }
        proto::ICMP => None,
        p => Some(Lookup::new(p, q.src, 0, q.dst, 0)),
    }
}

/// [`quoted_flow`] of an ICMPv6 error: the quoted packet (an IPv6 header
/// and what follows, after the 8-byte ICMPv6 header) read as a flow.
fn quoted_flow6(s: &FlowSummary6, l3: &[u8]) -> Option<Lookup<Key6>> {
    // The error ends at its payload length (not at the Ethernet padding).
    let payload = usize::from(u16::from_be_bytes([*l3.get(4)?, *l3.get(5)?]));
    let end = (40 + payload).min(l3.len());
    let quote = l3.get(usize::from(s.l4_offset) + 8..end)?;
    // The quoted header's payload length is the original packet's, longer
    // than the quote: FlowSummary6 clamps it to the bytes present (a quote
    // cut inside the extension headers does not parse).
    let q = FlowSummary6::parse(quote)?;
    if q.fragment == Fragment::NonFirst || q.src != s.dst {
        return None;
    }
    match q.proto {
        proto::TCP | proto::UDP => {
            let at = usize::from(q.l4_offset);
            let p = quote.get(at..at + 4)?;
            let sport = u16::from_be_bytes([p[0], p[1]]);
            let dport = u16::from_be_bytes([p[2], p[3]]);
            Some(Lookup::new6(q.proto, &q.src, sport, &q.dst, dport))
        }
        proto::ICMPV6 if q.l4 => {
            let (sp, dp) = echo_ports6(q.icmp_type, q.sport)?;
            Some(Lookup::new6(proto::ICMPV6, &q.src, sp, &q.dst, dp))
        }
        proto::ICMPV6 => None,
        p => Some(Lookup::new6(p, &q.src, 0, &q.dst, 0)),
    }
}
