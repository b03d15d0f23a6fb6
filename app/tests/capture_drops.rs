//! Drop capture (`--capture-drops FILE`) on crafted frames through the real
//! pipeline (net_pcap in, net_pcap out), read back with `tshark` and a
//! pcapng reader.
//!
//! Checked:
//! - one packet per drop, each with the right reason, stage and ports in
//!   its comment, and the bytes that were sent;
//! - a hook's drop carries the hook's name;
//! - the size bound stops the capture, says so on stderr and in the final
//!   statistics, and the file stays within it;
//! - with a full queue, drops are still counted exactly and the copies that
//!   did not fit are reported as capture_lost.

mod common;
use common::frames::{from_host_a, tcp, udp, HOST_A_MAC as HOST_A, PCAP0_MAC as MAC0};
use common::*;
use hooks::testkit::{self, ethernet};
use hooks::wire::checksum;
use std::path::Path;

/// Every packet of the pcapng `file`: (bytes, original length).
fn packets(file: &Path) -> Vec<(Vec<u8>, u32)> {
    use pcap_file::pcapng::{Block, PcapNgReader};
    let mut r = PcapNgReader::new(std::fs::File::open(file).unwrap()).unwrap();
    let mut out = Vec::new();
    while let Some(b) = r.next_block() {
        if let Block::EnhancedPacket(p) = b.unwrap() {
            out.push((p.data.to_vec(), p.original_len));
        }
    }
    out
}

fn udp_to(dst: [u8; 4], ttl: u8) -> Vec<u8> {
    let mut f = udp([10, 0, 1, 2], dst, 12345, 53);
    f[22] = ttl;
    refill_checksum(&mut f);
    f
}

fn refill_checksum(f: &mut [u8]) {
    f[24..26].fill(0);
    let c = checksum::checksum(&f[14..34]);
    f[24..26].copy_from_slice(&c.to_be_bytes());
}

/// Each malformed or unroutable frame and the comment of its drop.
fn malformed() -> Vec<(Vec<u8>, &'static str)> {
    let good = udp_to([198, 51, 100, 9], 64);
    let mut runt = good.clone();
    runt.truncate(59);
    let mut other_host = good.clone();
    other_host[..6].copy_from_slice(&[0x02, 0xcc, 0, 0, 0, 1]);
    let mut bcast = good.clone();
    bcast[..6].fill(0xff);
    let mut llc = ethernet(MAC0, HOST_A, 0x0026, &[0x42, 0x42, 0x03]);
    llc.resize(60, 0);
    let tagged = ethernet(
        MAC0,
        HOST_A,
        0x8100,
        &[&[0x00, 0x05, 0x08, 0x00], &good[14..]].concat(),
    );
    let mut ipv6 = ethernet(MAC0, HOST_A, 0x86dd, &[]);
    ipv6.resize(80, 0x60);
    let mut bad_ihl = good.clone();
    bad_ihl[14] = 0x44;
    let mut bad_csum = good.clone();
    bad_csum[24] ^= 0xff;
    let mut long_total = good.clone();
    long_total[16..18].copy_from_slice(&200u16.to_be_bytes());
    refill_checksum(&mut long_total);
    let mut from_loopback = good.clone();
    from_loopback[26..30].copy_from_slice(&[127, 0, 0, 1]);
    refill_checksum(&mut from_loopback);
    let mut tcp_to_us =
        from_host_a(testkit::ipv4([10, 0, 1, 2], [10, 0, 1, 1], 6, &[0; 20])).build();
    tcp_to_us.resize(60, 0);
    vec![
        (runt, "reason=runt stage=l2 in=0 out=- lcore=1"),
        (other_host, "reason=other_host stage=l2 in=0 out=- lcore=1"),
        (bcast, "reason=not_unicast stage=l2 in=0 out=- lcore=1"),
        (llc, "reason=ieee_802_3 stage=l2 in=0 out=- lcore=1"),
        (
            tagged,
            "reason=vlan_not_configured stage=l2 in=0 out=- lcore=1",
        ),
        (
            ipv6,
            "reason=unsupported_protocol stage=l2 in=0 out=- lcore=1",
        ),
        (bad_ihl, "reason=ipv4_bad_ihl stage=ip in=0 out=- lcore=1"),
        (
            bad_csum,
            "reason=ipv4_bad_checksum stage=ip in=0 out=- lcore=1",
        ),
        (
            long_total,
            "reason=ipv4_bad_total_length stage=ip in=0 out=- lcore=1",
        ),
        (from_loopback, "reason=martian stage=ip in=0 out=- lcore=1"),
        (
            udp_to([240, 0, 0, 1], 64),
            "reason=martian stage=ip in=0 out=- lcore=1",
        ),
        (
            tcp_to_us,
            "reason=local_unsupported stage=ip in=0 out=- lcore=1",
        ),
        // Answered by the control plane with an ICMP error, and dropped there.
        (
            udp_to([198, 51, 100, 9], 1),
            "reason=ttl_exceeded stage=control in=0 out=- lcore=0",
        ),
        (
            udp_to([203, 0, 113, 1], 64),
            "reason=no_route stage=control in=0 out=- lcore=0",
        ),
    ]
}

#[test]
fn every_drop_is_captured_with_its_reason_stage_and_ports() {
    let cases = malformed();
    let mut input: Vec<Vec<u8>> = cases.iter().map(|(f, _)| f.clone()).collect();
    // A routed frame: not dropped, not captured.
    input.push(udp_to([198, 51, 100, 9], 64));
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("drops.pcapng");
    let file_arg = file.to_str().unwrap();
    let (_, out1, s, _) = run_pcaps_with(
        "capall",
        pcap_router_config!(),
        &input,
        &[],
        &["--capture-drops", file_arg],
    );
    assert_eq!(out1.len(), 1, "the good frame is routed");
    assert_eq!(s["totals"]["dropped"], cases.len() as u64, "{s}");

    let comments = tshark_comments(&file);
    let pkts = packets(&file);
    assert_eq!(comments.len(), cases.len(), "{comments:#?}");
    assert_eq!(pkts.len(), cases.len());
    // Workers and the control plane write in their own order: match by bytes.
    let mut seen = vec![false; cases.len()];
    for ((bytes, orig_len), comment) in pkts.iter().zip(&comments) {
        let i = cases
            .iter()
            .position(|(f, _)| f == bytes)
            .unwrap_or_else(|| panic!("captured a frame nobody sent: {bytes:02x?}"));
        assert!(!seen[i], "frame {i} captured twice");
        seen[i] = true;
        assert_eq!(comment, cases[i].1, "frame {i}");
        assert_eq!(*orig_len as usize, cases[i].0.len());
    }
    let c = &s["captures"][0];
    assert_eq!(c["written"], cases.len() as u64, "{c}");
    assert_eq!(c["capture_lost"], 0);
    assert_eq!(c["stopped_at_size_bound"], false);
}

const HOOKS: &str = concat!(
    pcap_router_config!(),
    r#"
[[hook]]
point = "ingress"
port = "net_pcap0"
kind = "classify"
name = "cls"
[[hook.rule]]
src = "192.0.2.0/24"
action = "drop"

[[hook]]
point = "egress"
port = "net_pcap1"
kind = "filter"
name = "telnet-guard"
policy = "accept"
[[hook.rule]]
proto = "tcp"
dport = 23
action = "drop"
"#
);

#[test]
fn a_hook_drop_names_the_hook() {
    let telnet = tcp([10, 0, 1, 2], [198, 51, 100, 9], 40000, 23, 0x02);
    let spoofed = udp([192, 0, 2, 5], [198, 51, 100, 9], 1000, 2000);
    let fine = udp([10, 0, 1, 2], [198, 51, 100, 9], 1000, 2000);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hooks.pcapng");
    let (_, out1, s, _) = run_pcaps_with(
        "caphook",
        HOOKS,
        &[telnet.clone(), spoofed.clone(), fine],
        &[],
        &["--capture-drops", file.to_str().unwrap()],
    );
    assert_eq!(out1.len(), 1, "{s}");
    let comments = tshark_comments(&file);
    let pkts = packets(&file);
    assert_eq!(pkts.len(), 2, "{comments:?}");
    assert_eq!(comments.len(), 2, "{comments:?}");
    // Each drop captured once: the spoofed frame as received, at ingress.
    let spoofed_at: Vec<usize> = (0..pkts.len()).filter(|&i| pkts[i].0 == spoofed).collect();
    assert_eq!(
        spoofed_at.len(),
        1,
        "the spoofed frame's captures: {comments:?}"
    );
    assert_eq!(
        comments[spoofed_at[0]],
        "reason=classify_rule stage=ingress in=0 out=- hook=cls lcore=1"
    );
    // At egress the telnet packet was routed: padding trimmed (54 bytes), TTL
    // 63 and its checksum updated; the Ethernet header is still the received
    // one (neigh writes it after egress).
    let i = 1 - spoofed_at[0];
    let (bytes, comment) = (&pkts[i].0, &comments[i]);
    assert_eq!(bytes.len(), 54);
    assert_eq!(bytes[22], 63, "TTL decremented");
    assert_eq!(&bytes[..14], &telnet[..14]);
    assert_eq!(&bytes[26..], &telnet[26..54]);
    assert_eq!(
        comment,
        "reason=filter_rule stage=egress in=0 out=1 hook=telnet-guard lcore=1"
    );
}

#[test]
fn the_size_bound_stops_the_capture_and_says_so() {
    let mut other_host = udp_to([198, 51, 100, 9], 64);
    other_host[..6].copy_from_slice(&[0x02, 0xcc, 0, 0, 0, 1]);
    let input = vec![other_host; 2000];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bounded.pcapng");
    let (_, _, s, stderr) = run_pcaps_with(
        "capbound",
        pcap_router_config!(),
        &input,
        &[],
        &[
            "--capture-drops",
            file.to_str().unwrap(),
            "--capture-max-bytes",
            "16K",
        ],
    );
    assert_eq!(s["totals"]["drops"]["other_host"], 2000, "{s}");
    assert!(stderr.contains("reached its size bound"), "{stderr}");
    let c = &s["captures"][0];
    assert_eq!(c["stopped_at_size_bound"], true, "{c}");
    let size = std::fs::metadata(&file).unwrap().len();
    assert!(size <= 16 * 1024, "{size} bytes");
    assert_eq!(c["bytes"], size);
    let written = c["written"].as_u64().unwrap();
    assert!(written > 0 && written < 2000, "{c}");
    assert_eq!(tshark_comments(&file).len() as u64, written);
    // The copies after the bound were cut (the capture stopped), and the
    // closing summary says so.
    assert!(c["cut"].as_u64().unwrap() > 0, "{c}");
    assert_eq!(c["max_bytes"], 16 * 1024);
    assert!(
        stderr.contains("stopped at its size bound of 16384 bytes"),
        "{stderr}"
    );
}

#[test]
fn a_full_queue_loses_copies_but_not_counts() {
    let mut other_host = udp_to([198, 51, 100, 9], 64);
    other_host[..6].copy_from_slice(&[0x02, 0xcc, 0, 0, 0, 1]);
    let n = 20_000u64;
    let input = vec![other_host; n as usize];
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("lossy.pcapng");
    let (_, _, s, stderr) = run_pcaps_with(
        "capfull",
        pcap_router_config!(),
        &input,
        &[],
        &[
            "--capture-drops",
            file.to_str().unwrap(),
            "--capture-queue",
            "8",
            "--capture-rate",
            "1000000000",
        ],
    );
    assert_eq!(s["totals"]["drops"]["other_host"], n, "{s}");
    assert_eq!(s["totals"]["balanced"], true);
    let c = &s["captures"][0];
    let (written, lost) = (
        c["written"].as_u64().unwrap(),
        c["capture_lost"].as_u64().unwrap(),
    );
    assert!(lost > 0, "{c}");
    assert_eq!(
        written + lost + c["over_rate"].as_u64().unwrap() + c["cut"].as_u64().unwrap(),
        n,
        "{c}"
    );
    assert_eq!(tshark_comments(&file).len() as u64, written);
    assert!(stderr.contains("capture_lost"), "{stderr}");
}
