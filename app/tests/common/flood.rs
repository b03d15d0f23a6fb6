//! A spoofed UDP flood at the router's address from a host's namespace:
//! Ethernet frames written by Python through a packet socket, from every
//! host address of the /24 but one (the routing peer), as fast as one
//! sender goes here (a few hundred thousand frames per second).

use super::netns::Topology;
use std::process::{Child, Command, Stdio};

/// Flood UDP at the router's `dst` on `side`'s link for `secs` seconds,
/// from every other host address of the /24 but the `peers` (a spoofed
/// flood: Ethernet frames to `router_mac` through a packet socket); with
/// `in_stream`, one datagram from the first peer to port 5000 after each
/// round of the flood's sources, in the same stream. Prints the flood's
/// datagrams and the peer's.
pub fn flood(
    topo: &Topology,
    side: &str,
    router_mac: &str,
    dst: &str,
    peers: &[&str],
    in_stream: bool,
    secs: u32,
) -> Child {
    let peer_list = peers
        .iter()
        .map(|p| format!("socket.inet_aton('{p}')"))
        .collect::<Vec<_>>()
        .join(", ");
    let first = peers.first().copied().unwrap_or("0.0.0.0");
    let in_stream = if in_stream { "True" } else { "False" };
    let host = topo.host_if(side);
    let code = format!(
        r#"import socket, struct, time
def csum(b):
    s = sum(struct.unpack('!10H', b))
    while s >> 16: s = (s & 0xffff) + (s >> 16)
    return struct.pack('!H', ~s & 0xffff)
dst = socket.inet_aton('{dst}')
mac = bytes.fromhex('{router_mac}'.replace(':', ''))
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(('{host}', 0))
me = s.getsockname()[4]
def frame(src, sport, dport):
    ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 33, sport, 0, 64, 17, 0, src, dst)
    ip = ip[:10] + csum(ip) + ip[12:]
    udp = struct.pack('!HHHH', sport, dport, 13, 0) + b'flood'
    return mac + me + b'\x08\x00' + ip + udp
peers = [{peer_list}]
peer = socket.inet_aton('{first}')
frames = [frame(dst[:3] + bytes([h]), 40000 + h, 9) for h in range(3, 255) if dst[:3] + bytes([h]) not in peers]
from_peer = frame(peer, 40000, 5000)
end = time.time() + {secs}
n = p = 0
while time.time() < end:
    for f in frames:
        s.send(f)
    n += len(frames)
    if {in_stream}:
        s.send(from_peer)
        p += 1
print(n, p)
"#
    );
    Command::new("ip")
        .args(["netns", "exec", &topo.ns(side), "python3", "-c", &code])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the flood")
}
