//! Classic pcap files (microsecond timestamps, Ethernet link type): written and
//! read for demos, tests and benchmarks that feed `net_pcap`; and the frames
//! of any capture file `net_pcap` reads (pcap or pcapng), counted.

use std::io::{self, Read, Write};

const MAGIC_USEC: u32 = 0xa1b2_c3d4;
const MAGIC_NSEC: u32 = 0xa1b2_3c4d;
const LINKTYPE_ETHERNET: u32 = 1;
const SNAPLEN: u32 = 65535;

/// Write `frames` as a pcap file, one microsecond apart.
pub fn write<W: Write, F: AsRef<[u8]>>(mut w: W, frames: &[F]) -> io::Result<()> {
    let mut hdr = Vec::with_capacity(24);
    hdr.extend_from_slice(&MAGIC_USEC.to_le_bytes());
    hdr.extend_from_slice(&2u16.to_le_bytes());
    hdr.extend_from_slice(&4u16.to_le_bytes());
    hdr.extend_from_slice(&0i32.to_le_bytes());
    hdr.extend_from_slice(&0u32.to_le_bytes());
    hdr.extend_from_slice(&SNAPLEN.to_le_bytes());
    hdr.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
    w.write_all(&hdr)?;
    for (i, f) in frames.iter().enumerate() {
        let f = f.as_ref();
        let len = u32::try_from(f.len()).map_err(|_| io::Error::other("frame too long"))?;
        let mut rec = [0u8; 16];
        rec[0..4].copy_from_slice(&((i / 1_000_000) as u32).to_le_bytes());
        rec[4..8].copy_from_slice(&((i % 1_000_000) as u32).to_le_bytes());
        rec[8..12].copy_from_slice(&len.to_le_bytes());
        rec[12..16].copy_from_slice(&len.to_le_bytes());
        w.write_all(&rec)?;
        w.write_all(f)?;
    }
    w.flush()
}

/// Read every frame of a pcap file (either byte order, usec or nsec stamps).
pub fn read<R: Read>(mut r: R) -> io::Result<Vec<Vec<u8>>> {
    let bad = |m: &str| io::Error::new(io::ErrorKind::InvalidData, m.to_string());
    let mut hdr = [0u8; 24];
    r.read_exact(&mut hdr)?;
    let magic_le = u32::from_le_bytes(hdr[0..4].try_into().unwrap());
    let big = match magic_le {
        MAGIC_USEC | MAGIC_NSEC => false,
        m if m.swap_bytes() == MAGIC_USEC || m.swap_bytes() == MAGIC_NSEC => true,
        _ => return Err(bad("not a pcap file (bad magic)")),
    };
    let u32_at = |b: &[u8]| {
        let a: [u8; 4] = b.try_into().unwrap();
        if big {
            u32::from_be_bytes(a)
        } else {
            u32::from_le_bytes(a)
        }
    };
    if u32_at(&hdr[20..24]) != LINKTYPE_ETHERNET {
        return Err(bad("pcap link type is not Ethernet"));
    }
    let mut frames = Vec::new();
    loop {
        let mut rec = [0u8; 16];
        match r.read_exact(&mut rec) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e),
        }
        let caplen = u32_at(&rec[8..12]) as usize;
        if caplen > SNAPLEN as usize {
            return Err(bad("pcap record longer than the snap length"));
        }
        let mut f = vec![0u8; caplen];
        r.read_exact(&mut f)?;
        frames.push(f);
    }
    Ok(frames)
}

/// How many frames `net_pcap` will read from the capture file at `path`:
/// its packet records (pcap, either byte order or stamp precision) or its
/// packet blocks (pcapng: enhanced, simple and the obsolete packet block).
pub fn count_frames(path: &std::path::Path) -> io::Result<u64> {
    use pcap_file::pcap::PcapReader;
    use pcap_file::pcapng::{Block, PcapNgReader};
    const PCAPNG_SECTION: [u8; 4] = [0x0a, 0x0d, 0x0d, 0x0a];
    let bad = |e: pcap_file::PcapError| io::Error::new(io::ErrorKind::InvalidData, e.to_string());
    let mut file = std::fs::File::open(path)?;
    let mut magic = [0u8; 4];
    file.read_exact(&mut magic)?;
    io::Seek::rewind(&mut file)?;
    let file = io::BufReader::new(file);
    let mut n = 0;
    if magic == PCAPNG_SECTION {
        let mut r = PcapNgReader::new(file).map_err(bad)?;
        while let Some(block) = r.next_block() {
            if matches!(
                block.map_err(bad)?,
                Block::EnhancedPacket(_) | Block::SimplePacket(_) | Block::Packet(_)
            ) {
                n += 1;
            }
        }
    } else {
        let mut r = PcapReader::new(file).map_err(bad)?;
        while let Some(packet) = r.next_raw_packet() {
            packet.map_err(bad)?;
            n += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let frames = vec![vec![1u8; 60], vec![2u8; 1514], (0..=255u8).collect()];
        let mut buf = Vec::new();
        write(&mut buf, &frames).unwrap();
        assert_eq!(buf.len(), 24 + 3 * 16 + 60 + 1514 + 256);
        assert_eq!(read(&buf[..]).unwrap(), frames);
    }

    #[test]
    fn rejects_non_pcap() {
        assert!(read(&[0u8; 24][..]).is_err());
    }

    #[test]
    fn counts_the_frames_of_pcap_and_pcapng_files() {
        let dir = tempfile::tempdir().unwrap();
        let pcap = dir.path().join("in.pcap");
        let frames = vec![vec![1u8; 60]; 5];
        write(std::fs::File::create(&pcap).unwrap(), &frames).unwrap();
        assert_eq!(count_frames(&pcap).unwrap(), 5);
        let empty = dir.path().join("empty.pcap");
        write(std::fs::File::create(&empty).unwrap(), &[] as &[Vec<u8>]).unwrap();
        assert_eq!(count_frames(&empty).unwrap(), 0);

        use pcap_file::pcapng::blocks::enhanced_packet::EnhancedPacketBlock;
        use pcap_file::pcapng::blocks::interface_description::InterfaceDescriptionBlock;
        use pcap_file::pcapng::PcapNgWriter;
        let ng = dir.path().join("in.pcapng");
        let mut w = PcapNgWriter::new(std::fs::File::create(&ng).unwrap()).unwrap();
        let idb = InterfaceDescriptionBlock {
            linktype: pcap_file::DataLink::ETHERNET,
            snaplen: 0xffff,
            options: vec![],
        };
        w.write_pcapng_block(idb).unwrap();
        for _ in 0..3 {
            let epb = EnhancedPacketBlock {
                interface_id: 0,
                timestamp: std::time::Duration::ZERO,
                original_len: 60,
                data: std::borrow::Cow::Borrowed(&[0u8; 60][..]),
                options: vec![],
            };
            w.write_pcapng_block(epb).unwrap();
        }
        drop(w);
        assert_eq!(count_frames(&ng).unwrap(), 3);

        let cut = dir.path().join("cut.pcap");
        let bytes = std::fs::read(&pcap).unwrap();
        std::fs::write(&cut, &bytes[..bytes.len() - 10]).unwrap();
        assert!(
            count_frames(&cut).is_err(),
            "a truncated record is an error"
        );
        assert!(count_frames(&dir.path().join("none.pcap")).is_err());
    }
}
