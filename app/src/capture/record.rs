//! What a worker hands the capture writer for one dropped packet: a fixed-size
//! record (the first [`SNAP_LEN`] bytes of the frame and where and why it was
//! dropped), and the comment the writer makes of it.

use hooks::DropReason;
use std::fmt::Write as _;

/// Bytes of each dropped frame kept in the capture.
pub const SNAP_LEN: usize = 256;

/// Bytes of a hook's name kept in a record (longer names are cut).
pub const HOOK_NAME_LEN: usize = 31;

/// A port id that stands for none (a packet not routed yet, or one the
/// control plane made).
pub const NO_PORT: u16 = u16::MAX;

/// Where in fastpath a packet was dropped.
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// Ethernet checks (`eth_type_trans`): runts, other hosts, VLANs, protocols.
    L2,
    /// A hook of an input port's ingress chain.
    Ingress,
    /// IPv4 header checks, routing, TTL, MTU.
    Ip,
    /// A hook of an output port's egress chain.
    Egress,
    /// The TX path: the driver refused it, or no TX queue for its port.
    Tx,
    /// On the way to the control plane: over a punt budget, or its ring was full.
    Punt,
    /// The control plane: ICMP errors sent in its place, invalid ARP or ICMP,
    /// neighbour resolution that failed or was refused, shutdown.
    Control,
}

impl Stage {
    pub const fn name(self) -> &'static str {
        match self {
            Stage::L2 => "l2",
            Stage::Ingress => "ingress",
            Stage::Ip => "ip",
            Stage::Egress => "egress",
            Stage::Tx => "tx",
            Stage::Punt => "punt",
            Stage::Control => "control",
        }
    }
}

/// Where and why one packet was dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DropSite<'a> {
    pub reason: DropReason,
    pub stage: Stage,
    /// The port it was received on ([`NO_PORT`]: the control plane made it).
    pub in_port: u16,
    /// The port it was routed to ([`NO_PORT`]: not routed yet).
    pub out_port: u16,
    /// The name of the hook that dropped it ("" for none).
    pub hook: &'a str,
}

impl<'a> DropSite<'a> {
    /// A drop without a hook and without an output port.
    pub fn new(reason: DropReason, stage: Stage, in_port: u16) -> Self {
        DropSite {
            reason,
            stage,
            in_port,
            out_port: NO_PORT,
            hook: "",
        }
    }

    /// The same drop, routed to `out_port`.
    pub fn to_port(self, out_port: u16) -> Self {
        DropSite { out_port, ..self }
    }

    /// The same drop, by the hook named `hook`.
    pub fn by_hook(self, hook: &'a str) -> Self {
        DropSite { hook, ..self }
    }
}

/// One dropped packet as the writer receives it.
#[derive(Clone, Copy, Debug)]
pub struct DropRecord {
    /// TSC when it was dropped.
    pub tsc: u64,
    /// The frame's length before the snap.
    pub orig_len: u32,
    /// Bytes of `data` in use.
    pub len: u16,
    pub in_port: u16,
    pub out_port: u16,
    /// The lcore that dropped it.
    pub lcore: u16,
    pub reason: DropReason,
    pub stage: Stage,
    pub hook_len: u8,
    pub hook: [u8; HOOK_NAME_LEN],
    pub data: [u8; SNAP_LEN],
}

impl DropRecord {
    /// The record of `frame` dropped at `site` by `lcore` at `tsc`.
    #[inline]
    pub fn new(frame: &[u8], site: &DropSite<'_>, lcore: u16, tsc: u64) -> Self {
        let mut r = DropRecord {
            tsc,
            orig_len: frame.len() as u32,
            len: frame.len().min(SNAP_LEN) as u16,
            in_port: site.in_port,
            out_port: site.out_port,
            lcore,
            reason: site.reason,
            stage: site.stage,
            hook_len: 0,
            hook: [0; HOOK_NAME_LEN],
            data: [0; SNAP_LEN],
        };
        let n = usize::from(r.len);
        r.data[..n].copy_from_slice(&frame[..n]);
        let name = cut_at_char(site.hook, HOOK_NAME_LEN);
        r.hook[..name.len()].copy_from_slice(name.as_bytes());
        r.hook_len = name.len() as u8;
        r
    }

    /// The captured bytes.
    pub fn frame(&self) -> &[u8] {
        &self.data[..usize::from(self.len)]
    }

    /// The dropping hook's name ("" for none).
    pub fn hook(&self) -> &str {
        std::str::from_utf8(&self.hook[..usize::from(self.hook_len)]).unwrap_or("?")
    }

    /// The packet comment: `reason=ttl_exceeded stage=control in=0 out=-
    /// lcore=0`, and `hook=NAME` after `out` where a hook dropped it.
    pub fn comment(&self) -> String {
        let port = |p: u16| match p {
            NO_PORT => "-".to_string(),
            p => p.to_string(),
        };
        let mut s = format!(
            "reason={} stage={} in={} out={}",
            self.reason.name(),
            self.stage.name(),
            port(self.in_port),
            port(self.out_port)
        );
        if self.hook_len > 0 {
            let _ = write!(s, " hook={}", self.hook());
        }
        let _ = write!(s, " lcore={}", self.lcore);
        s
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a char boundary.
fn cut_at_char(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_keeps_the_snap_and_says_where_and_why() {
        let frame: Vec<u8> = (0..300u16).map(|i| i as u8).collect();
        let site = DropSite::new(DropReason::FilterRule, Stage::Egress, 0)
            .to_port(1)
            .by_hook("fw");
        let r = DropRecord::new(&frame, &site, 1, 7);
        assert_eq!(r.frame(), &frame[..SNAP_LEN]);
        assert_eq!(r.orig_len, 300);
        assert_eq!(
            r.comment(),
            "reason=filter_rule stage=egress in=0 out=1 hook=fw lcore=1"
        );
        let r = DropRecord::new(
            &frame[..60],
            &DropSite::new(DropReason::Runt, Stage::L2, 3),
            2,
            0,
        );
        assert_eq!(r.frame(), &frame[..60]);
        assert_eq!(r.comment(), "reason=runt stage=l2 in=3 out=- lcore=2");
    }

    #[test]
    fn long_hook_names_are_cut_on_a_char_boundary() {
        let name = "é".repeat(20); // 40 bytes
        let site = DropSite::new(DropReason::HookDrop, Stage::Ingress, 0).by_hook(&name);
        let r = DropRecord::new(&[0; 60], &site, 0, 0);
        assert_eq!(r.hook(), "é".repeat(15));
    }
}
