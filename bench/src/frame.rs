//! Valid Ethernet / IPv4 / UDP test frames: right lengths, IPv4 header checksum
//! and UDP checksum, flows varied over source address and port.

/// Ethernet FCS: counted in a frame size ("64-byte frames") but not in the
/// bytes a pcap or an mbuf holds.
pub const FCS_LEN: usize = 4;
const ETH_LEN: usize = 14;
const IPV4_LEN: usize = 20;
const UDP_LEN: usize = 8;
/// Smallest frame size (with FCS) that holds our headers: Ethernet's minimum.
pub const MIN_FRAME_SIZE: usize = 64;
/// Largest standard frame size with FCS.
pub const MAX_FRAME_SIZE: usize = 1518;

/// What traffic to build.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    /// Frame size on the wire, FCS included (64..=1518).
    pub frame_size: usize,
    /// Number of distinct flows (source address / source port pairs), >= 1.
    pub flows: u32,
    pub src_mac: [u8; 6],
    pub dst_mac: [u8; 6],
    /// First source address; flow `i` uses `src_ip + i / 256`.
    pub src_ip: [u8; 4],
    pub dst_ip: [u8; 4],
    pub dst_port: u16,
}

impl Default for FlowSpec {
    fn default() -> Self {
        FlowSpec {
            frame_size: 64,
            flows: 1,
            src_mac: [0x02, 0, 0, 0, 0, 0x01],
            dst_mac: [0x02, 0, 0, 0, 0, 0x02],
            src_ip: [198, 18, 0, 1],
            dst_ip: [198, 19, 0, 1],
            dst_port: 9,
        }
    }
}

/// Internet checksum (RFC 1071) of `data`, folded, not complemented.
fn sum16(data: &[u8], mut acc: u32) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        acc += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        acc += (*last as u32) << 8;
    }
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc
}

/// One's-complement checksum of `data` (0 when the data checks).
pub fn checksum(data: &[u8]) -> u16 {
    !(sum16(data, 0) as u16)
}

impl FlowSpec {
    /// Bytes of one frame as it sits in a buffer (frame size minus FCS).
    pub fn buffer_len(&self) -> usize {
        self.frame_size - FCS_LEN
    }

    /// Check the spec; the message names the bad field.
    pub fn validate(&self) -> Result<(), String> {
        if !(MIN_FRAME_SIZE..=MAX_FRAME_SIZE).contains(&self.frame_size) {
            return Err(format!(
                "frame size {} is outside {MIN_FRAME_SIZE}..={MAX_FRAME_SIZE} (bytes, FCS included)",
                self.frame_size
            ));
        }
        if self.flows == 0 {
            return Err("flows must be at least 1".into());
        }
        Ok(())
    }

    /// Frame for packet `seq` of flow `seq % flows`; `seq` also goes in the payload.
    pub fn frame(&self, seq: u64) -> Vec<u8> {
        let flow = (seq % self.flows as u64) as u32;
        let len = self.buffer_len();
        let mut f = vec![0u8; len];
        f[0..6].copy_from_slice(&self.dst_mac);
        f[6..12].copy_from_slice(&self.src_mac);
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());

        let ip_total = (len - ETH_LEN) as u16;
        let src = u32::from_be_bytes(self.src_ip).wrapping_add(flow / 256);
        let ip = &mut f[ETH_LEN..ETH_LEN + IPV4_LEN];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&ip_total.to_be_bytes());
        ip[4..6].copy_from_slice(&(seq as u16).to_be_bytes());
        ip[6] = 0x40; // DF
        ip[8] = 64; // TTL
        ip[9] = 17; // UDP
        ip[12..16].copy_from_slice(&src.to_be_bytes());
        ip[16..20].copy_from_slice(&self.dst_ip);
        let c = checksum(ip);
        ip[10..12].copy_from_slice(&c.to_be_bytes());

        let udp_len = ip_total - IPV4_LEN as u16;
        let sport = 1024 + (flow % 256) as u16;
        let u = ETH_LEN + IPV4_LEN;
        f[u..u + 2].copy_from_slice(&sport.to_be_bytes());
        f[u + 2..u + 4].copy_from_slice(&self.dst_port.to_be_bytes());
        f[u + 4..u + 6].copy_from_slice(&udp_len.to_be_bytes());
        let payload = u + UDP_LEN;
        let n = (len - payload).min(8);
        f[payload..payload + n].copy_from_slice(&seq.to_be_bytes()[..n]);

        // UDP checksum over the pseudo-header and the datagram.
        let mut pseudo = [0u8; 12];
        pseudo[0..4].copy_from_slice(&src.to_be_bytes());
        pseudo[4..8].copy_from_slice(&self.dst_ip);
        pseudo[9] = 17;
        pseudo[10..12].copy_from_slice(&udp_len.to_be_bytes());
        let mut c = !(sum16(&f[u..], sum16(&pseudo, 0)) as u16);
        if c == 0 {
            c = 0xffff;
        }
        f[u + 6..u + 8].copy_from_slice(&c.to_be_bytes());
        f
    }

    /// `count` consecutive frames.
    pub fn frames(&self, count: usize) -> Vec<Vec<u8>> {
        (0..count as u64).map(|s| self.frame(s)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn udp_checks(f: &[u8]) -> bool {
        let ip = &f[14..34];
        let udp = &f[34..];
        let mut pseudo = [0u8; 12];
        pseudo[0..8].copy_from_slice(&ip[12..20]);
        pseudo[9] = 17;
        pseudo[10..12].copy_from_slice(&(udp.len() as u16).to_be_bytes());
        sum16(udp, sum16(&pseudo, 0)) == 0xffff
    }

    #[test]
    fn every_size_is_valid() {
        for size in [64, 65, 128, 512, 1500, 1518] {
            let spec = FlowSpec {
                frame_size: size,
                flows: 300,
                ..Default::default()
            };
            spec.validate().unwrap();
            for seq in [0, 1, 255, 256, 299, 70_000] {
                let f = spec.frame(seq);
                assert_eq!(f.len(), size - FCS_LEN);
                assert_eq!(&f[12..14], &[0x08, 0x00]);
                assert_eq!(checksum(&f[14..34]), 0, "IPv4 checksum, size {size}");
                let total = u16::from_be_bytes([f[16], f[17]]) as usize;
                assert_eq!(total, f.len() - 14);
                let udp_len = u16::from_be_bytes([f[38], f[39]]) as usize;
                assert_eq!(udp_len, total - 20);
                assert!(udp_checks(&f), "UDP checksum, size {size} seq {seq}");
            }
        }
    }

    #[test]
    fn flows_vary_source_address_and_port() {
        let spec = FlowSpec {
            flows: 512,
            ..Default::default()
        };
        let key = |f: &[u8]| (f[26..30].to_vec(), f[34..36].to_vec());
        let keys: std::collections::HashSet<_> = (0..512).map(|s| key(&spec.frame(s))).collect();
        assert_eq!(keys.len(), 512);
        assert_eq!(key(&spec.frame(0)), key(&spec.frame(512)));
    }

    #[test]
    fn bad_specs_are_refused() {
        let mut s = FlowSpec {
            frame_size: 63,
            ..Default::default()
        };
        assert!(s.validate().unwrap_err().contains("frame size 63"));
        s.frame_size = 64;
        s.flows = 0;
        assert!(s.validate().is_err());
    }
}
