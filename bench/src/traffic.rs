//! The generator's traffic: a flow spec (frame sizes or IMIX, N flows varied
//! over source / destination address and port, optional VLAN) and the frame
//! templates it makes, valid Ethernet [/ 802.1Q] / IPv4 / UDP with both
//! checksums. The TRex profiles in `bench/trex/` build the same bytes in scapy
//! (`bench/trex/flows.py`); `fastpath-bench frames` prints them for that check.
//!
//! Frame layout (sizes count the 4-byte FCS, which buffers do not hold):
//! Ethernet dst, src; optional 802.1Q tag (TPID 0x8100, PCP 0, DEI 0, the VLAN
//! id); ethertype 0x0800; IPv4 (IHL 5, TOS 0, ID 0, DF, TTL 64, UDP); UDP;
//! payload zeros. Flow `i` (0-based) sets every varied field to its base + `i`.
//!
//! The generator stamps a [`Signature`] over the first 14 payload bytes of each
//! packet it sends and fixes the UDP checksum incrementally.

use crate::frame::{FCS_LEN, MAX_FRAME_SIZE, MIN_FRAME_SIZE};
use hooks::testkit;
use std::net::Ipv4Addr;
use std::str::FromStr;

const ETH_LEN: usize = 14;
const VLAN_LEN: usize = 4;
const IPV4_LEN: usize = 20;
const UDP_LEN: usize = 8;

/// Simple IMIX (frame sizes with FCS): 7 x 64, 4 x 594, 1 x 1518 in every 12
/// packets, spread out in this order.
pub const IMIX_PATTERN: [usize; 12] = [64, 594, 64, 64, 594, 64, 1518, 64, 594, 64, 64, 594];
/// The distinct IMIX sizes with their weights.
pub const IMIX_SIZES: [(usize, u32); 3] = [(64, 7), (594, 4), (1518, 1)];

/// Frame sizes: one fixed size, or IMIX.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameSizes {
    Fixed(usize),
    Imix,
}

impl FrameSizes {
    /// Distinct sizes, in the order `frames` prints them.
    pub fn distinct(self) -> Vec<usize> {
        match self {
            FrameSizes::Fixed(s) => vec![s],
            FrameSizes::Imix => IMIX_SIZES.iter().map(|&(s, _)| s).collect(),
        }
    }

    /// Size of packet `k` of a run.
    #[inline]
    pub fn nth(self, k: u64) -> usize {
        match self {
            FrameSizes::Fixed(s) => s,
            FrameSizes::Imix => IMIX_PATTERN[(k % IMIX_PATTERN.len() as u64) as usize],
        }
    }

    /// Mean frame size with FCS.
    pub fn mean(self) -> f64 {
        match self {
            FrameSizes::Fixed(s) => s as f64,
            FrameSizes::Imix => {
                IMIX_PATTERN.iter().sum::<usize>() as f64 / IMIX_PATTERN.len() as f64
            }
        }
    }
}

impl std::fmt::Display for FrameSizes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrameSizes::Fixed(s) => write!(f, "{s}"),
            FrameSizes::Imix => f.write_str("imix"),
        }
    }
}

impl FromStr for FrameSizes {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        if s.eq_ignore_ascii_case("imix") {
            return Ok(FrameSizes::Imix);
        }
        let n: usize = s.parse().map_err(|_| {
            format!(
                "frame size '{s}': expected a size in bytes (64..=1518, FCS included) or 'imix'"
            )
        })?;
        if !(MIN_FRAME_SIZE..=MAX_FRAME_SIZE).contains(&n) {
            return Err(format!(
                "frame size {n} is outside {MIN_FRAME_SIZE}..={MAX_FRAME_SIZE} (bytes, FCS included)"
            ));
        }
        Ok(FrameSizes::Fixed(n))
    }
}

/// A header field that flows vary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Field {
    SrcIp,
    DstIp,
    SrcPort,
    DstPort,
}

impl Field {
    pub const ALL: [Field; 4] = [Field::SrcIp, Field::DstIp, Field::SrcPort, Field::DstPort];

    pub fn name(self) -> &'static str {
        match self {
            Field::SrcIp => "src-ip",
            Field::DstIp => "dst-ip",
            Field::SrcPort => "src-port",
            Field::DstPort => "dst-port",
        }
    }
}

impl FromStr for Field {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Field::ALL
            .into_iter()
            .find(|f| f.name() == s)
            .ok_or_else(|| {
                format!("flow field '{s}': expected one of src-ip, dst-ip, src-port, dst-port")
            })
    }
}

/// What the generator sends.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TrafficSpec {
    #[serde(serialize_with = "ser_display")]
    pub sizes: FrameSizes,
    /// Number of flows, >= 1.
    pub flows: u32,
    /// Fields that flow `i` sets to base + `i`.
    pub vary: Vec<Field>,
    /// 802.1Q VLAN id (0..=4095), or untagged.
    pub vlan: Option<u16>,
    #[serde(serialize_with = "ser_mac")]
    pub src_mac: [u8; 6],
    #[serde(serialize_with = "ser_mac")]
    pub dst_mac: [u8; 6],
    pub src_ip: Ipv4Addr,
    pub dst_ip: Ipv4Addr,
    pub src_port: u16,
    pub dst_port: u16,
}

fn ser_display<T: std::fmt::Display, S: serde::Serializer>(v: &T, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(v)
}

fn ser_mac<S: serde::Serializer>(m: &[u8; 6], s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&format_mac(m))
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn format_mac(m: &[u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Parse `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Result<[u8; 6], String> {
    let bad = || format!("MAC address '{s}': expected six hex bytes like 02:00:00:00:00:01");
    let mut out = [0u8; 6];
    let mut parts = s.split(':');
    for b in &mut out {
        *b = u8::from_str_radix(parts.next().ok_or_else(bad)?, 16).map_err(|_| bad())?;
    }
    if parts.next().is_some() {
        return Err(bad());
    }
    Ok(out)
}

impl Default for TrafficSpec {
    fn default() -> Self {
        TrafficSpec {
            sizes: FrameSizes::Fixed(64),
            flows: 1,
            vary: vec![Field::SrcIp, Field::SrcPort],
            vlan: None,
            src_mac: [0x02, 0, 0, 0, 0, 0x01],
            dst_mac: [0x02, 0, 0, 0, 0, 0x02],
            src_ip: Ipv4Addr::new(198, 18, 0, 1),
            dst_ip: Ipv4Addr::new(198, 19, 0, 1),
            src_port: 1024,
            dst_port: 9,
        }
    }
}

/// The generator's stamp over the first [`Signature::LEN`] payload bytes:
/// magic `"fp"`, the sequence number (48 bits) and the TSC at send (low 48
/// bits), big-endian.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Signature {
    pub seq: u64,
    pub tsc: u64,
}

impl Signature {
    pub const LEN: usize = 14;
    pub const MAGIC: [u8; 2] = *b"fp";
    pub const MASK: u64 = (1 << 48) - 1;

    /// The 14 bytes.
    #[inline]
    pub fn bytes(self) -> [u8; 14] {
        let mut b = [0u8; 14];
        b[0..2].copy_from_slice(&Self::MAGIC);
        b[2..8].copy_from_slice(&(self.seq & Self::MASK).to_be_bytes()[2..]);
        b[8..14].copy_from_slice(&(self.tsc & Self::MASK).to_be_bytes()[2..]);
        b
    }

    /// Read a stamp back (None without the magic or when too short).
    #[inline]
    pub fn read(b: &[u8]) -> Option<Signature> {
        let b: &[u8; 14] = b.get(..Self::LEN)?.try_into().ok()?;
        if b[0..2] != Self::MAGIC {
            return None;
        }
        let u48 = |s: &[u8]| {
            let mut w = [0u8; 8];
            w[2..].copy_from_slice(s);
            u64::from_be_bytes(w)
        };
        Some(Signature {
            seq: u48(&b[2..8]),
            tsc: u48(&b[8..14]),
        })
    }
}

/// One frame template: the bytes and where the stamp goes.
#[derive(Clone, Debug)]
pub struct Template {
    pub bytes: Vec<u8>,
    /// Offset of the UDP header.
    pub udp: usize,
}

impl Template {
    /// Offset of the UDP payload, where the signature goes.
    pub fn payload(&self) -> usize {
        self.udp + UDP_LEN
    }

    /// Write `sig` into `frame` (a copy of this template, stamped or not) and
    /// set the UDP checksum incrementally (RFC 1624): the template's payload
    /// is zero there, so the sum is the template's plus the stamp's words.
    #[inline]
    pub fn stamp(&self, frame: &mut [u8], sig: Signature) {
        let p = self.payload();
        let b = sig.bytes();
        frame[p..p + Signature::LEN].copy_from_slice(&b);
        let ck = u16::from_be_bytes([self.bytes[self.udp + 6], self.bytes[self.udp + 7]]);
        let mut sum = u32::from(!ck);
        for w in b.chunks_exact(2) {
            sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
        }
        while sum > 0xffff {
            sum = (sum & 0xffff) + (sum >> 16);
        }
        let mut c = !(sum as u16);
        if c == 0 {
            c = 0xffff;
        }
        frame[self.udp + 6..self.udp + 8].copy_from_slice(&c.to_be_bytes());
    }
}

impl TrafficSpec {
    /// Ethernet header length (with the VLAN tag when there is one).
    pub fn l2_len(&self) -> usize {
        ETH_LEN + if self.vlan.is_some() { VLAN_LEN } else { 0 }
    }

    /// Check the spec; the message names the bad field and what it needs.
    pub fn validate(&self) -> Result<(), String> {
        if self.flows == 0 {
            return Err("flows must be at least 1".into());
        }
        if let Some(v) = self.vlan {
            if v > 4095 {
                return Err(format!("VLAN id {v} is outside 0..=4095"));
            }
        }
        let headers = FCS_LEN + self.l2_len() + IPV4_LEN + UDP_LEN + Signature::LEN;
        for &s in &self.sizes.distinct() {
            if !(MIN_FRAME_SIZE..=MAX_FRAME_SIZE).contains(&s) || s < headers {
                return Err(format!(
                    "frame size {s} is outside {MIN_FRAME_SIZE}..={MAX_FRAME_SIZE} (bytes, FCS included)"
                ));
            }
        }
        let last = u64::from(self.flows - 1);
        for f in &self.vary {
            let (base, max) = match f {
                Field::SrcIp => (u64::from(u32::from(self.src_ip)), u64::from(u32::MAX)),
                Field::DstIp => (u64::from(u32::from(self.dst_ip)), u64::from(u32::MAX)),
                Field::SrcPort => (u64::from(self.src_port), 65535),
                Field::DstPort => (u64::from(self.dst_port), 65535),
            };
            if base + last > max {
                return Err(format!(
                    "{} flows varied over {} from {} run past {max}: lower the base or the flow count",
                    self.flows,
                    f.name(),
                    base
                ));
            }
        }
        Ok(())
    }

    fn varied(&self, f: Field, flow: u32) -> u32 {
        if self.vary.contains(&f) {
            flow
        } else {
            0
        }
    }

    /// Source / destination address and port of flow `flow`.
    pub fn flow_tuple(&self, flow: u32) -> (Ipv4Addr, Ipv4Addr, u16, u16) {
        (
            Ipv4Addr::from(u32::from(self.src_ip) + self.varied(Field::SrcIp, flow)),
            Ipv4Addr::from(u32::from(self.dst_ip) + self.varied(Field::DstIp, flow)),
            self.src_port + self.varied(Field::SrcPort, flow) as u16,
            self.dst_port + self.varied(Field::DstPort, flow) as u16,
        )
    }

    /// The template of flow `flow` at frame size `size` (FCS included); the
    /// spec must be valid.
    pub fn template(&self, size: usize, flow: u32) -> Template {
        let (src, dst, sport, dport) = self.flow_tuple(flow);
        let payload = vec![0u8; size - FCS_LEN - self.l2_len() - IPV4_LEN - UDP_LEN];
        let mut frame = testkit::udp(src, dst, sport, dport)
            .macs(self.dst_mac, self.src_mac)
            .dont_frag()
            .payload(&payload);
        if let Some(v) = self.vlan {
            frame = frame.vlan(v);
        }
        let u = frame.l3_offset() + IPV4_LEN;
        let f = frame.build();
        Template { bytes: f, udp: u }
    }

    /// Every template, indexed `[size index][flow]` in [`FrameSizes::distinct`] order.
    pub fn templates(&self) -> Vec<Vec<Template>> {
        self.sizes
            .distinct()
            .into_iter()
            .map(|s| (0..self.flows).map(|i| self.template(s, i)).collect())
            .collect()
    }

    /// Index into [`templates`](Self::templates) of the size of packet `k`.
    #[inline]
    pub fn size_index(&self, k: u64) -> usize {
        match self.sizes {
            FrameSizes::Fixed(_) => 0,
            FrameSizes::Imix => {
                let size = self.sizes.nth(k);
                IMIX_SIZES.iter().position(|&(s, _)| s == size).unwrap_or(0)
            }
        }
    }

    /// Offset of the UDP header (the same in every template of the spec).
    pub fn udp_offset(&self) -> usize {
        self.l2_len() + IPV4_LEN
    }
}

/// Which template each packet of a run uses: sizes in the spec's pattern,
/// and for each size its own round robin over the flows, so every flow sends
/// every size in the IMIX proportions (as TRex's one stream per size does),
/// whatever the flow count.
#[derive(Clone, Debug)]
pub struct FlowCursor {
    next_flow: [u32; IMIX_SIZES.len()],
    flows: u32,
}

impl FlowCursor {
    pub fn new(spec: &TrafficSpec) -> FlowCursor {
        FlowCursor {
            next_flow: [0; IMIX_SIZES.len()],
            flows: spec.flows.max(1),
        }
    }

    /// (size index, flow) of packet `k` of a run (packets in order).
    #[inline]
    pub fn next(&mut self, spec: &TrafficSpec, k: u64) -> (usize, u32) {
        let si = spec.size_index(k);
        let f = self.next_flow[si];
        self.next_flow[si] = if f + 1 == self.flows { 0 } else { f + 1 };
        (si, f)
    }
}

/// Replace the TSC of a stamped frame (the generator re-stamps packets that
/// waited for room in the TX ring, so their wait is not counted as the
/// device's latency) and update the UDP checksum for the changed words (RFC
/// 1624: HC' = ~(~HC + ~m + m')). `udp` is the UDP header's offset.
#[inline]
pub fn restamp_tsc(frame: &mut [u8], udp: usize, tsc: u64) {
    let at = udp + UDP_LEN + 8;
    let Some(field) = frame.get(at..at + 6) else {
        return;
    };
    let new = (tsc & Signature::MASK).to_be_bytes();
    let mut sum = u32::from(!u16::from_be_bytes([frame[udp + 6], frame[udp + 7]]));
    for i in 0..3 {
        let old = u16::from_be_bytes([field[2 * i], field[2 * i + 1]]);
        let new = u16::from_be_bytes([new[2 + 2 * i], new[3 + 2 * i]]);
        sum += u32::from(!old) + u32::from(new);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    let mut c = !(sum as u16);
    if c == 0 {
        c = 0xffff;
    }
    frame[at..at + 6].copy_from_slice(&new[2..]);
    frame[udp + 6..udp + 8].copy_from_slice(&c.to_be_bytes());
}

impl TrafficSpec {
    /// One line for tables: `64 B, 1024 flows (src-ip,src-port), VLAN 10`.
    pub fn describe(&self) -> String {
        let sizes = match self.sizes {
            FrameSizes::Fixed(s) => format!("{s} B"),
            FrameSizes::Imix => "IMIX 7:4:1 (64/594/1518 B)".into(),
        };
        let vary: Vec<_> = self.vary.iter().map(|f| f.name()).collect();
        let mut s = format!("{sizes}, {} flows", self.flows);
        if self.flows > 1 && !vary.is_empty() {
            s += &format!(" ({})", vary.join(","));
        }
        if let Some(v) = self.vlan {
            s += &format!(", VLAN {v}");
        }
        s
    }
}

/// Where the signature sits in a received frame: parses Ethernet, up to two
/// VLAN tags, IPv4 (any IHL) and UDP; None for anything else.
#[inline]
pub fn signature_of(frame: &[u8]) -> Option<Signature> {
    let mut o = 12;
    let mut et = u16::from_be_bytes([*frame.get(o)?, *frame.get(o + 1)?]);
    let mut tags = 0;
    while (et == 0x8100 || et == 0x88a8) && tags < 2 {
        o += 4;
        et = u16::from_be_bytes([*frame.get(o)?, *frame.get(o + 1)?]);
        tags += 1;
    }
    if et != 0x0800 {
        return None;
    }
    let ip = o + 2;
    let vihl = *frame.get(ip)?;
    if vihl >> 4 != 4 || *frame.get(ip + 9)? != 17 {
        return None;
    }
    let udp = ip + usize::from(vihl & 0x0f) * 4;
    Signature::read(frame.get(udp + UDP_LEN..)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::checksum;

    /// The checks a receiver makes: lengths, IPv4 header checksum, UDP checksum.
    fn check_valid(f: &[u8], l2: usize) {
        let ip = &f[l2..l2 + 20];
        assert_eq!(checksum(ip), 0, "IPv4 checksum");
        let total = u16::from_be_bytes([ip[2], ip[3]]) as usize;
        assert_eq!(total, f.len() - l2, "IPv4 total length");
        let udp = &f[l2 + 20..];
        assert_eq!(u16::from_be_bytes([udp[4], udp[5]]) as usize, udp.len());
        let mut pseudo = ip[12..20].to_vec();
        pseudo.extend_from_slice(&[0, 17]);
        pseudo.extend_from_slice(&(udp.len() as u16).to_be_bytes());
        pseudo.extend_from_slice(udp);
        assert_eq!(checksum(&pseudo), 0, "UDP checksum");
    }

    fn specs() -> Vec<TrafficSpec> {
        let mut out = Vec::new();
        for sizes in ["64", "128", "512", "1518", "imix"] {
            for vlan in [None, Some(100)] {
                for vary in [
                    vec![],
                    vec![Field::SrcIp, Field::SrcPort],
                    Field::ALL.to_vec(),
                ] {
                    out.push(TrafficSpec {
                        sizes: sizes.parse().unwrap(),
                        flows: 300,
                        vary: vary.clone(),
                        vlan,
                        ..Default::default()
                    });
                }
            }
        }
        out
    }

    #[test]
    fn stamped_packets_parse_back_valid_for_every_spec() {
        for spec in specs() {
            spec.validate().unwrap();
            let t = spec.templates();
            for k in [0u64, 1, 11, 299, 300, 12_345, (1 << 48) + 7] {
                let (si, flow) = (spec.size_index(k), (k % 300) as u32);
                let tpl = &t[si][flow as usize];
                let mut f = tpl.bytes.clone();
                assert_eq!(f.len() + FCS_LEN, spec.sizes.nth(k));
                check_valid(&f, spec.l2_len());
                let sig = Signature {
                    seq: k,
                    tsc: 0xdead_beef_cafe + k,
                };
                tpl.stamp(&mut f, sig);
                check_valid(&f, spec.l2_len());
                let back = signature_of(&f).expect("signature");
                assert_eq!(back.seq, k & Signature::MASK);
                assert_eq!(back.tsc, sig.tsc & Signature::MASK);
                // Re-stamping (a packet that waited for the TX ring) keeps it valid.
                restamp_tsc(
                    &mut f,
                    spec.udp_offset(),
                    0xffff_ffff_ffff_u64.wrapping_sub(k),
                );
                check_valid(&f, spec.l2_len());
                assert_eq!(
                    signature_of(&f).unwrap().tsc,
                    (0xffff_ffff_ffff_u64.wrapping_sub(k)) & Signature::MASK
                );
                assert_eq!(signature_of(&f).unwrap().seq, k & Signature::MASK);
                tpl.stamp(&mut f, sig);
                check_valid(&f, spec.l2_len());
                assert_eq!(
                    signature_of(&f),
                    Some(Signature {
                        seq: k & Signature::MASK,
                        tsc: sig.tsc & Signature::MASK
                    })
                );
                if let Some(v) = spec.vlan {
                    assert_eq!(&f[12..16], &[0x81, 0x00, 0, v as u8]);
                }
            }
        }
    }

    #[test]
    fn flows_vary_exactly_the_named_fields() {
        let spec = TrafficSpec {
            flows: 1000,
            vary: vec![Field::DstIp, Field::DstPort],
            ..Default::default()
        };
        let (s0, d0, sp0, dp0) = spec.flow_tuple(0);
        let (s, d, sp, dp) = spec.flow_tuple(999);
        assert_eq!((s, sp), (s0, sp0));
        assert_eq!(u32::from(d) - u32::from(d0), 999);
        assert_eq!(dp - dp0, 999);
        let keys: std::collections::HashSet<_> =
            (0..1000).map(|i| spec.template(64, i).bytes).collect();
        assert_eq!(keys.len(), 1000);
    }

    #[test]
    fn imix_is_seven_four_one() {
        let spec = TrafficSpec {
            sizes: FrameSizes::Imix,
            ..Default::default()
        };
        let mut n = [0; 3];
        for k in 0..1200 {
            n[spec.size_index(k)] += 1;
        }
        assert_eq!(n, [700, 400, 100]);
        // Every flow sends every size in those proportions, whatever the flow
        // count (12 flows would otherwise tie each flow to one size).
        let spec = TrafficSpec {
            sizes: FrameSizes::Imix,
            flows: 12,
            ..Default::default()
        };
        let mut cur = FlowCursor::new(&spec);
        let mut per_flow = vec![[0u32; 3]; 12];
        for k in 0..12 * 12 * 10 {
            let (si, f) = cur.next(&spec, k);
            per_flow[f as usize][si] += 1;
        }
        assert!(per_flow.iter().all(|c| *c == [70, 40, 10]), "{per_flow:?}");
        assert!((spec.sizes.mean() - 361.83).abs() < 0.01);
    }

    #[test]
    fn bad_specs_name_the_field() {
        let e = "63".parse::<FrameSizes>().unwrap_err();
        assert!(e.contains("frame size 63"), "{e}");
        assert!("jumbo".parse::<FrameSizes>().unwrap_err().contains("imix"));
        assert!("src-mac".parse::<Field>().is_err());
        let spec = TrafficSpec {
            flows: 70_000,
            vary: vec![Field::SrcPort],
            ..Default::default()
        };
        let e = spec.validate().unwrap_err();
        assert!(e.contains("src-port"), "{e}");
        let spec = TrafficSpec {
            vlan: Some(4096),
            ..Default::default()
        };
        assert!(spec.validate().unwrap_err().contains("VLAN"));
        assert_eq!(parse_mac("02:00:00:00:00:0a").unwrap()[5], 10);
        assert!(parse_mac("02:00:00:00:00").is_err());
    }

    #[test]
    fn foreign_frames_have_no_signature() {
        let spec = TrafficSpec::default();
        let f = spec.template(64, 0).bytes;
        assert_eq!(signature_of(&f), None, "an unstamped template has no magic");
        assert_eq!(signature_of(&f[..20]), None);
        let mut arp = f.clone();
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(signature_of(&arp), None);
    }
}
