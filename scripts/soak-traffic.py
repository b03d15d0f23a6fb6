#!/usr/bin/env python3
"""The soak's input (scripts/soak): 256 frames into net_pcap0 of the router
(MAC 02:70:63:61:70:00, 10.0.1.1/24), shuffled with a fixed seed, written
as a pcap to argv[1]. Prints the frame kinds in file order as JSON, so
that the check can count each kind in any number of frames replayed."""
import json
import random
import struct
import sys

PORT_MAC = bytes([0x02, 0x70, 0x63, 0x61, 0x70, 0x00])
HOST_MAC = bytes([0x02, 0xAA, 0, 0, 0, 0x02])
OUR_IP = bytes([10, 0, 1, 1])


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def eth(ethertype, dst=PORT_MAC, src=HOST_MAC):
    return dst + src + struct.pack("!H", ethertype)


def ipv4(src, dst, proto, payload, ttl=64, ihl=5, total=None, bad_csum=False):
    total = 20 + len(payload) if total is None else total
    h = struct.pack("!BBHHHBBH4s4s", 0x40 | ihl, 0, total, 0, 0x4000, ttl, proto, 0, src, dst)
    c = csum(h) ^ (1 if bad_csum else 0)
    return h[:10] + struct.pack("!H", c) + h[12:] + payload


def udp(sport, dport, n=18):
    return struct.pack("!HHHH", sport, dport, 8 + n, 0) + bytes(range(n))


def tcp_syn(sport, dport):
    return struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 0x50, 0x02, 65535, 0, 0)


def pad(f):
    return f + b"\0" * max(0, 60 - len(f))


def arp(sender_ip, target_ip, dst=b"\xff" * 6):
    body = struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + HOST_MAC + sender_ip + b"\0" * 6 + target_ip
    return pad(eth(0x0806, dst) + body)


def ip_frame(src, dst, proto, payload, **kw):
    return pad(eth(0x0800) + ipv4(bytes(src), bytes(dst), proto, payload, **kw))


def frames():
    out = []
    for i in range(128):  # 32 flows, 4 packets each: accepted by both rule files
        f = i % 32
        out.append(("udp5000", ip_frame([10, 0, 1, 2 + f % 8], [198, 51, 100, 1 + f], 17,
                                        udp(10000 + f, 5000))))
    for i in range(48):  # accepted under rule file a, dropped under b
        f = i % 16
        out.append(("udp6000", ip_frame([10, 0, 1, 2 + f % 8], [203, 0, 113, 1 + f], 17,
                                        udp(20000 + f, 6000))))
    for i in range(16):
        out.append(("tcp80", ip_frame([10, 0, 1, 2], [203, 0, 113, 100], 6, tcp_syn(30000 + i, 80))))
    for i in range(8):
        out.append(("arp_request", arp(bytes([10, 0, 1, 2 + i]), OUR_IP)))
    for i in range(4):
        ip = bytes([10, 0, 1, 100 + i])
        out.append(("arp_gratuitous", arp(ip, ip)))
    for i in range(4):
        icmp = bytearray(struct.pack("!BBHHH", 8, 0, 0, 0x1234, i) + b"soak")
        icmp[2:4] = struct.pack("!H", csum(bytes(icmp)))
        out.append(("ping", ip_frame([10, 0, 1, 2], list(OUR_IP), 1, bytes(icmp))))
    good = lambda **kw: ip_frame([10, 0, 1, 2], [198, 51, 100, 200], 17, udp(40000, 5001), **kw)
    bad = {
        "runt": lambda: (eth(0x0800) + ipv4(bytes([10, 0, 1, 2]), bytes([198, 51, 100, 1]), 17, b""))[:40],
        "bad_checksum": lambda: good(bad_csum=True),
        "ihl_4": lambda: good(ihl=4),
        "total_past_frame": lambda: good(total=400),
        "ttl_1": lambda: good(ttl=1),
        "no_route": lambda: ip_frame([10, 0, 1, 2], [192, 0, 2, 1], 17, udp(40000, 9)),
        "martian_source": lambda: ip_frame([127, 0, 0, 1], [198, 51, 100, 1], 17, udp(1, 9)),
        "other_host": lambda: pad(eth(0x0800, dst=bytes([2, 0, 0, 0, 0, 9])) + good()[14:]),
        "vlan_5": lambda: pad(eth(0x8100) + struct.pack("!HH", 5, 0x0800) + good()[14:]),
        "ipv6": lambda: pad(eth(0x86DD) + bytes(40)),
        "ieee8023": lambda: pad(eth(46) + b"\xaa\xaa\x03" + bytes(43)),
        "broadcast_ipv4": lambda: pad(eth(0x0800, dst=b"\xff" * 6) + good()[14:]),
    }
    for name, make in bad.items():
        for _ in range(4):
            out.append((name, make()))
    assert len(out) == 256, len(out)
    random.Random(22).shuffle(out)
    return out


def main():
    mix = frames()
    with open(sys.argv[1], "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, (_, b) in enumerate(mix):
            f.write(struct.pack("<IIII", i, 0, len(b), len(b)) + b)
    json.dump([k for k, _ in mix], sys.stdout)


main()
