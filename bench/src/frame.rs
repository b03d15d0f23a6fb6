//! Valid Ethernet / IPv4 / UDP test frames: right lengths, IPv4 header checksum
//! and UDP checksum, flows varied over source address and port. Built with
//! `hooks::testkit`, the frame builder of the project's tests.

use hooks::testkit;

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

pub use hooks::wire::checksum::checksum;

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

    /// Frame for packet `seq` of flow `seq % flows`; `seq` also goes in the
    /// payload (its first 8 bytes, big-endian) and, cut to 16 bits, in the
    /// IPv4 identification.
    pub fn frame(&self, seq: u64) -> Vec<u8> {
        let flow = (seq % self.flows as u64) as u32;
        let src = u32::from_be_bytes(self.src_ip).wrapping_add(flow / 256);
        let sport = 1024 + (flow % 256) as u16;
        let mut payload = vec![0u8; self.buffer_len() - ETH_LEN - IPV4_LEN - UDP_LEN];
        let n = payload.len().min(8);
        payload[..n].copy_from_slice(&seq.to_be_bytes()[..n]);
        testkit::udp(src, self.dst_ip, sport, self.dst_port)
            .macs(self.dst_mac, self.src_mac)
            .ident(seq as u16)
            .dont_frag()
            .payload(&payload)
            .build()
    }

    /// `count` consecutive frames.
    pub fn frames(&self, count: usize) -> Vec<Vec<u8>> {
        (0..count as u64).map(|s| self.frame(s)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hooks::wire::{Ipv4Packet, UdpPacket};

    fn udp_checks(f: &[u8]) -> bool {
        let ip = Ipv4Packet::new_checked(&f[14..]).unwrap();
        let udp = UdpPacket::new_checked(ip.payload()).unwrap();
        udp.checksum() != 0 && udp.verify_checksum(ip.src_addr(), ip.dst_addr())
    }

    /// The frames of the builder this module had before it used the test
    /// kit, kept as bytes: 64 bytes, seq 1, flow 1 of 300.
    #[test]
    fn the_bytes_did_not_change() {
        let spec = FlowSpec {
            flows: 300,
            ..Default::default()
        };
        let f = spec.frame(1);
        let hex: String = f.iter().map(|b| format!("{b:02x}")).collect();
        let expect = "02000000000202000000000108004500002e000140004011ae96c6120001c6130001\
                      04010009001a6f87000000000000000100000000000000000000";
        assert_eq!(hex, expect);
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
