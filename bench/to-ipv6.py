#!/usr/bin/env python3
"""A benchmark case turned to IPv6: its router config and its pcap.

    bench/to-ipv6.py [--keep-size] CONFIG PCAP OUT_CONFIG OUT_PCAP

Every IPv4 address a.b.c.d of the config's rules and routes and of the traffic goes into
bits 32..64 of 2001:db8::/32: a /L prefix becomes a /(32 + L), an address a /64, and a
packet's interface identifier is ::1. Rules keep their shape, the traffic matches what it
matched, and the benchmark's 198.19.0.0/16 route becomes 2001:db8:c613::/48. The ports
(10.255.0.1/24, 10.255.1.1/24) get 2001:db8:ff00::1/64 and 2001:db8:ff01::1/64 beside their
IPv4 addresses, and the next hop 10.255.1.2 becomes the neighbour 2001:db8:ff01::2.

Each frame's IPv4 header becomes an IPv6 header, so frames grow by 20 bytes; with
--keep-size, 20 bytes of payload go instead, so each frame keeps its size (as far as its
payload lets: a 60-byte IPv4/UDP frame becomes the least IPv6/UDP one, 62 bytes). The
protocol, ports, payload, DSCP and ECN (as the traffic class) and the TTL (as the hop
limit) stay; UDP and TCP lengths and checksums are made right for IPv6. IPv4 options are
left out; frames that are not IPv4 are copied unchanged.
"""
import re
import struct
import sys


def v6(m):
    key, addr, length = m.group(1), m.group(2), m.group(3)
    a, b, c, d = (int(x) for x in addr.split("."))
    bits = 32 + (int(length[1:]) if length else 32)
    return '%s"2001:db8:%x:%x::/%d"' % (key, a << 8 | b, c << 8 | d, bits)


def config(text):
    for port in ("0", "1"):
        v4 = 'address = "10.255.%s.1/24"' % port
        text = text.replace(v4, '%s\nipv6 = ["2001:db8:ff0%s::1/64"]' % (v4, port))
    text = text.replace('via = "10.255.1.2"', 'via = "2001:db8:ff01::2"')
    text = text.replace('address = "10.255.1.2"', 'address = "2001:db8:ff01::2"')
    return re.sub(r'^((?:src|dst|prefix) = )"(\d+\.\d+\.\d+\.\d+)(/\d+)?"', v6, text, flags=re.M)


def checksum(data):
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def l4_fixed(proto, src, dst, l4):
    """UDP (length and checksum) or TCP (checksum) right for IPv6's pseudo-header."""
    at = {17: 6, 6: 16}.get(proto)
    if at is None or len(l4) < at + 2 or (proto == 6 and len(l4) < 20):
        return l4
    l4 = bytearray(l4)
    if proto == 17:
        struct.pack_into("!H", l4, 4, len(l4))
    struct.pack_into("!H", l4, at, 0)
    pseudo = src + dst + struct.pack("!IxxxB", len(l4), proto)
    struct.pack_into("!H", l4, at, checksum(pseudo + bytes(l4)) or 0xFFFF)
    return bytes(l4)


def frame(f, keep_size):
    if len(f) < 34 or f[12:14] != b"\x08\x00" or f[14] >> 4 != 4:
        return f
    ihl = (f[14] & 15) * 4
    total = struct.unpack_from("!H", f, 16)[0]
    l4 = f[14 + ihl:14 + total]
    proto = f[23]
    if keep_size:
        head = {17: 8, 6: 20}.get(proto, 0)
        l4 = l4[:max(head, len(l4) - 20)]
    prefix, host = bytes.fromhex("20010db8"), bytes(7) + b"\x01"
    src, dst = prefix + f[26:30] + host, prefix + f[30:34] + host
    l4 = l4_fixed(proto, src, dst, l4)
    ip = bytes([0x60 | f[15] >> 4, (f[15] & 15) << 4, 0, 0])
    ip += struct.pack("!HBB", len(l4), proto, f[22])
    ip += src + dst
    return f[:12] + b"\x86\xdd" + ip + l4


def pcap(b, keep_size):
    out, o = [b[:24]], 24
    while o < len(b):
        ts, us, incl, _ = struct.unpack_from("<IIII", b, o)
        g = frame(b[o + 16:o + 16 + incl], keep_size)
        o += 16 + incl
        out.append(struct.pack("<IIII", ts, us, len(g), len(g)) + g)
    return b"".join(out)


def main():
    args = sys.argv[1:]
    keep_size = args[:1] == ["--keep-size"]
    if keep_size:
        args = args[1:]
    if len(args) != 4:
        sys.exit("usage: to-ipv6.py [--keep-size] CONFIG PCAP OUT_CONFIG OUT_PCAP")
    cfg, cap, out_cfg, out_cap = args
    with open(cfg) as f:
        text = config(f.read())
    with open(out_cfg, "w") as f:
        f.write(text)
    with open(cap, "rb") as f:
        data = pcap(f.read(), keep_size)
    with open(out_cap, "wb") as f:
        f.write(data)


if __name__ == "__main__":
    main()
