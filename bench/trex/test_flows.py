"""Tests of bench/trex: the scapy frames against `fastpath-bench frames`, the
field engine's offsets, the TRex profile's streams (with a stand-in for
TRex's API), the NDR/PDR search and ndr.py's JSON.

    bench/trex/setup-venv          # scapy, once
    cargo build --release -p fastpath-bench
    python3 -m unittest discover -s bench/trex -p 'test_*.py'

Nothing is skipped: without scapy or the fastpath-bench binary the tests
that need them fail and say how to get them. When scapy is not importable,
the venv of setup-venv (${FASTPATH_PYENV:-target/pyenv}) is looked in.
FASTPATH_BENCH names another fastpath-bench binary.
"""

from __future__ import annotations

import glob
import importlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import time
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import flows  # noqa: E402
import ndr  # noqa: E402


def _find_scapy():
    """Import scapy, from the setup-venv venv when it is not installed here."""
    try:
        import scapy  # noqa: F401
        return None
    except ImportError:
        pass
    env = os.environ.get("FASTPATH_PYENV", "target/pyenv")
    env = env if os.path.isabs(env) else os.path.join(ROOT, env)
    ver = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for site in glob.glob(os.path.join(env, "lib", ver, "site-packages")):
        sys.path.append(site)
    try:
        import scapy  # noqa: F401
        return None
    except ImportError as e:
        return (
            f"scapy is not importable ({e}): run bench/trex/setup-venv (it installs "
            f"bench/trex/requirements.txt into {env}) with this python ({sys.executable}, "
            f"{ver}), or pip install -r bench/trex/requirements.txt"
        )


SCAPY_MISSING = _find_scapy()


def bench_binary() -> str:
    return os.environ.get("FASTPATH_BENCH") or os.path.join(ROOT, "target", "release", "fastpath-bench")


def need_scapy(tc: unittest.TestCase):
    if SCAPY_MISSING:
        tc.fail(SCAPY_MISSING)


def bench_frames(tc: unittest.TestCase, spec: flows.Spec):
    """[(size, flow, bytes)] from `fastpath-bench frames`."""
    exe = bench_binary()
    if not os.access(exe, os.X_OK):
        tc.fail(
            f"{exe} not found: build it with `cargo build --release -p fastpath-bench` "
            "in the repo root, or set FASTPATH_BENCH to the binary"
        )
    run = subprocess.run([exe, "frames"] + flows.cli_args(spec), capture_output=True, text=True)
    if run.returncode != 0:
        tc.fail(f"fastpath-bench frames {' '.join(flows.cli_args(spec))} failed: {run.stderr}")
    out = []
    for line in run.stdout.splitlines():
        size, flow, hexbytes = line.split()
        out.append((int(size), int(flow), bytes.fromhex(hexbytes)))
    return out


def ones_complement_sum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return s


def checksum(data: bytes) -> int:
    return ~ones_complement_sum(data) & 0xFFFF


def simulate_field_engine(spec: flows.Spec, template: bytes, k: int) -> bytes:
    """What TRex sends as packet k of a stream built from `template` (flow 0)
    with fastpath_udp's field engine: each variable runs min..max from min
    (first packet = min), written big-endian, then both checksums fixed."""
    f = bytearray(template)
    for v in flows.field_engine_vars(spec):
        val = v.min_value + k % (v.max_value - v.min_value + 1)
        f[v.offset:v.offset + v.size] = val.to_bytes(v.size, "big")
    ip = flows.l2_len(spec)
    f[ip + 10:ip + 12] = b"\0\0"
    f[ip + 10:ip + 12] = checksum(bytes(f[ip:ip + 20])).to_bytes(2, "big")
    udp = ip + 20
    f[udp + 6:udp + 8] = b"\0\0"
    pseudo = bytes(f[ip + 12:ip + 20]) + b"\0\x11" + bytes(f[udp + 4:udp + 6]) + bytes(f[udp:])
    c = checksum(pseudo) or 0xFFFF
    f[udp + 6:udp + 8] = c.to_bytes(2, "big")
    return bytes(f)


class FramesMatchFastpathBench(unittest.TestCase):
    """flows.build_frame == fastpath-bench frames, byte for byte."""

    def test_every_standard_spec_frame_matches(self):
        need_scapy(self)
        total = 0
        for spec in flows.STANDARD_SPECS:
            with self.subTest(spec=str(spec), args=" ".join(flows.cli_args(spec))):
                got = bench_frames(self, spec)
                self.assertEqual(len(got), len(flows.distinct_sizes(spec)) * spec.flows)
                self.assertEqual(sorted({s for s, _, _ in got}), sorted(flows.distinct_sizes(spec)))
                for size, flow, want in got:
                    mine = flows.build_frame(spec, size, flow)
                    if mine != want:
                        self.fail(
                            f"{spec}: size {size} flow {flow} differs\n"
                            f"  scapy:          {mine.hex()}\n  fastpath-bench: {want.hex()}"
                        )
                total += len(got)
        self.assertGreater(total, 5000)

    def test_frames_parse_back_valid(self):
        need_scapy(self)
        from scapy.layers.inet import IP, UDP
        from scapy.layers.l2 import Dot1Q, Ether

        for spec in flows.STANDARD_SPECS:
            l2 = flows.l2_len(spec)
            for size in flows.distinct_sizes(spec):
                for flow in sorted({0, 1 % spec.flows, spec.flows // 2, spec.flows - 1}):
                    with self.subTest(spec=str(spec), size=size, flow=flow):
                        raw = flows.build_frame(spec, size, flow)
                        self.assertEqual(len(raw), size - 4)
                        p = Ether(raw)
                        self.assertEqual((p.dst, p.src), (spec.dst_mac, spec.src_mac))
                        if spec.vlan is None:
                            self.assertNotIn(Dot1Q, p)
                            self.assertEqual(p.type, 0x0800)
                        else:
                            self.assertEqual(raw[12:16], b"\x81\x00" + spec.vlan.to_bytes(2, "big"))
                            self.assertEqual((p[Dot1Q].prio, p[Dot1Q].vlan, p[Dot1Q].type), (0, spec.vlan, 0x0800))
                        ip, udp = p[IP], p[UDP]
                        src, dst, sport, dport = flows.flow_tuple(spec, flow)
                        self.assertEqual((ip.version, ip.ihl, ip.tos, ip.id, int(ip.flags), ip.frag, ip.ttl, ip.proto),
                                         (4, 5, 0, 0, 2, 0, 64, 17))
                        self.assertEqual((ip.src, ip.dst, udp.sport, udp.dport), (src, dst, sport, dport))
                        self.assertEqual(ip.len, size - 4 - l2)
                        self.assertEqual(udp.len, ip.len - 20)
                        self.assertEqual(bytes(udp.payload), bytes(size - 4 - l2 - 28))
                        # Valid checksums: the sum over the covered bytes is 0xffff.
                        self.assertEqual(checksum(raw[l2:l2 + 20]), 0, "IPv4 header checksum")
                        pseudo = raw[l2 + 12:l2 + 20] + b"\0\x11" + raw[l2 + 24:l2 + 26] + raw[l2 + 20:]
                        self.assertEqual(checksum(pseudo), 0, "UDP checksum")
                        self.assertNotEqual(udp.chksum, 0, "a computed 0 is sent as 0xffff")
                        # scapy's own recomputation agrees.
                        q = Ether(raw)
                        del q[IP].chksum
                        del q[UDP].chksum
                        self.assertEqual(bytes(Ether(bytes(q))), raw)

    def test_field_engine_makes_packet_k_flow_k_mod_n(self):
        need_scapy(self)
        for spec in flows.STANDARD_SPECS:
            n = spec.flows
            for size in flows.distinct_sizes(spec):
                template = flows.build_frame(spec, size, 0)
                for k in sorted({0, 1, n - 1, n, n + 1, 2 * n + 3, 7 * n + n // 2}):
                    with self.subTest(spec=str(spec), size=size, packet=k):
                        self.assertEqual(
                            simulate_field_engine(spec, template, k).hex(),
                            flows.build_frame(spec, size, k % n).hex(),
                        )

    def test_field_offsets_point_at_the_fields(self):
        need_scapy(self)
        for spec in flows.STANDARD_SPECS:
            raw = flows.build_frame(spec, flows.distinct_sizes(spec)[0], 0)
            offs = flows.field_offsets(spec)
            src, dst, sport, dport = flows.flow_tuple(spec, 0)
            want = {
                "src-ip": bytes(map(int, src.split("."))),
                "dst-ip": bytes(map(int, dst.split("."))),
                "src-port": sport.to_bytes(2, "big"),
                "dst-port": dport.to_bytes(2, "big"),
            }
            for name, (off, width) in offs.items():
                self.assertEqual(raw[off:off + width], want[name], f"{spec}: {name}")
            vars_ = flows.field_engine_vars(spec)
            if spec.flows == 1:
                self.assertEqual(vars_, [])
            else:
                self.assertEqual([v.field for v in vars_], list(dict.fromkeys(spec.vary)))
                for v in vars_:
                    self.assertEqual(v.max_value - v.min_value, spec.flows - 1)
                    self.assertEqual((v.offset, v.size), offs[v.field])


class SpecParsing(unittest.TestCase):
    def test_defaults_and_cli_args(self):
        d = flows.make_spec()
        self.assertEqual(d, flows.Spec())
        self.assertEqual(flows.cli_args(d)[:6], ["--size", "64", "--flows", "1", "--vary", "src-ip,src-port"])
        s = flows.make_spec(size="IMIX", flows="300", vary="dst-ip,dst-port", vlan="0", src_mac="2:0:0:0:0:A")
        self.assertEqual((s.size, s.flows, s.vary, s.vlan, s.src_mac), ("imix", 300, ("dst-ip", "dst-port"), 0, "02:00:00:00:00:0a"))
        self.assertIn("--vlan", flows.cli_args(s))
        self.assertEqual(flows.spec_from_dict(flows.spec_dict(s)), s)
        self.assertEqual(flows.parse_vary("src-ip,src-ip,dst-ip"), ("src-ip", "dst-ip"))

    def test_errors_read_like_the_rust_side(self):
        cases = [
            (dict(size="63"), "frame size 63 is outside 64..=1518 (bytes, FCS included)"),
            (dict(size="1519"), "frame size 1519 is outside 64..=1518"),
            (dict(size="jumbo"), "frame size 'jumbo': expected a size in bytes (64..=1518, FCS included) or 'imix'"),
            (dict(vary="src-mac"), "flow field 'src-mac': expected one of src-ip, dst-ip, src-port, dst-port"),
            (dict(vary=""), "flow field '': expected one of"),
            (dict(flows=0), "flows must be at least 1"),
            (dict(vlan=4096), "VLAN id 4096 is outside 0..=4095"),
            (dict(flows=70000, vary="src-port"), "70000 flows varied over src-port from 1024 run past 65535"),
            (dict(flows=2, vary="dst-ip", dst_ip="255.255.255.255"), "varied over dst-ip from 4294967295 run past 4294967295"),
            (dict(src_mac="02:00:00:00:00"), "MAC address '02:00:00:00:00': expected six hex bytes"),
        ]
        for kwargs, msg in cases:
            with self.subTest(**{k: str(v) for k, v in kwargs.items()}):
                with self.assertRaises(flows.SpecError) as cm:
                    flows.make_spec(**kwargs)
                self.assertIn(msg, str(cm.exception))

    def test_mean_sizes(self):
        self.assertAlmostEqual(flows.mean_frame_size(flows.Spec(size="imix")), 4342 / 12)
        self.assertAlmostEqual(flows.mean_frame_size(flows.Spec(size="imix")), 361.8333, places=4)
        self.assertEqual(flows.mean_frame_size(flows.Spec(size=512)), 512.0)
        self.assertEqual(flows.size_weights(flows.Spec(size="imix")), [(64, 7), (594, 4), (1518, 1)])


class Search(unittest.TestCase):
    MAX = ndr.line_rate_pps(10.0, 64.0)

    def check(self, capacity, loss_ratio, resolution=0.01):
        dev = ndr.SyntheticDevice(capacity, window_s=1.0)
        out = ndr.search(dev, self.MAX, loss_ratio, resolution)
        trials, result = out["trials"], out["result"]
        # The rate at which loss reaches the ratio.
        threshold = min(self.MAX, capacity / (1.0 - loss_ratio))
        step = resolution * self.MAX
        self.assertLessEqual(len(trials), 2 + int(1 / resolution).bit_length())
        for t in trials:
            self.assertEqual(t["pass"], t["loss_ratio"] <= loss_ratio)
            self.assertEqual(t["lost"], t["sent"] - t["received"])
        if threshold < step:
            self.assertTrue(result is None or result["offered_pps"] <= threshold * (1 + 1e-6))
            return
        self.assertIsNotNone(result, f"capacity {capacity}")
        self.assertTrue(result["pass"])
        self.assertEqual(result["offered_pps"], max(t["offered_pps"] for t in trials if t["pass"]))
        self.assertLessEqual(result["offered_pps"], threshold * (1 + 1e-6))
        self.assertGreaterEqual(result["offered_pps"], threshold - step - 1e-6 * threshold,
                                f"capacity {capacity}: {result['offered_pps']} vs {threshold}")
        self.assertLessEqual(result["loss_ratio"], loss_ratio)

    def test_ndr_converges_within_resolution(self):
        for cap in (5e4, 2.5e5, 1e6, 3.3e6, 7.44e6, 9.99e6, 14.5e6, 14.88e6, 2e7):
            with self.subTest(capacity=cap):
                self.check(cap, 0.0)

    def test_pdr_half_percent_converges_within_resolution(self):
        for cap in (2.5e5, 1e6, 3.3e6, 7.44e6, 12e6, 14.8e6, 2e7):
            with self.subTest(capacity=cap):
                self.check(cap, 0.005)

    def test_finer_resolution(self):
        self.check(4.321e6, 0.0, resolution=0.001)
        self.check(4.321e6, 0.005, resolution=0.002)

    def test_line_rate_passing_needs_one_trial(self):
        out = ndr.search(ndr.SyntheticDevice(1e9), self.MAX, 0.0, 0.01)
        self.assertEqual(len(out["trials"]), 1)
        self.assertIs(out["result"], out["trials"][0])

    def test_progress_and_bad_arguments(self):
        seen = []
        ndr.search(ndr.SyntheticDevice(1e6), 1e7, 0.0, 0.1, progress=lambda n, t: seen.append(n))
        self.assertEqual(seen, list(range(1, len(seen) + 1)))
        for kwargs in (dict(max_rate_pps=0), dict(loss_ratio=1.0), dict(loss_ratio=-0.1), dict(resolution=0)):
            args = dict(trial_fn=ndr.SyntheticDevice(1e6), max_rate_pps=1e7, loss_ratio=0.0, resolution=0.01)
            args.update(kwargs)
            with self.subTest(**kwargs), self.assertRaises(ValueError):
                ndr.search(**args)

    def test_nothing_sent_fails(self):
        t = ndr.make_trial(1e6, 0, 0, 1.0)
        self.assertEqual(t["loss_ratio"], 1.0)


class TrexLatency(unittest.TestCase):
    def test_histogram_to_percentiles(self):
        lat = {
            "err_cntrs": {"dropped": 0, "dup": 0, "out_of_order": 0},
            "latency": {
                "average": 15.2, "total_min": 3, "total_max": 44, "jitter": 0, "last_max": 20,
                # 0-10 us: 10, 10-20: 880, 20-30: 100, 40-50: 10
                "histogram": {0: 10, 10: 880, 20: 100, 40: 10},
            },
        }
        got = ndr.latency_from_trex(lat)
        self.assertEqual(got, {
            "samples": 1000, "min": 3000, "mean": 15200.0,
            "p50": 20000, "p90": 30000, "p99": 30000, "p999": 44000, "max": 44000,
        })
        # List form of older servers, string keys, N/A min, wide buckets.
        lat = {"latency": {"average": 250.0, "total_min": "N/A", "total_max": 1500,
                           "histogram": [{"key": "200", "val": 60}, {"key": "1000", "val": 40}]}}
        got = ndr.latency_from_trex(lat)
        self.assertEqual((got["samples"], got["min"], got["p50"], got["p90"], got["max"]),
                         (100, 200000, 300000, 1500000, 1500000))
        self.assertIsNone(ndr.latency_from_trex(None))
        self.assertIsNone(ndr.latency_from_trex({"latency": {"histogram": {}}}))

    def test_bucket_edges(self):
        self.assertEqual([ndr._bucket_upper_usec(k) for k in (0, 10, 90, 100, 900, 1000, 30000)],
                         [10, 20, 100, 200, 1000, 2000, 40000])


class FakeClient:
    """A stand-in for STLClient: a device forwarding up to CAPACITY pps from
    port 0 to port 1, with a fixed latency histogram."""

    CAPACITY = 2e6
    last = None

    def __init__(self, server="localhost", **kwargs):
        self.server, self.calls, self.streams = server, [], []
        FakeClient.last = self

    def __getattr__(self, name):  # connect, reset, stop, ... : recorded
        def call(*args, **kwargs):
            self.calls.append((name, kwargs))
        return call

    def add_streams(self, streams, ports):
        self.calls.append(("add_streams", dict(ports=ports)))
        self.streams = list(streams)

    def start(self, ports, duration, force=False, **kwargs):
        self.calls.append(("start", dict(ports=ports, duration=duration)))
        pps = sum(st.kwargs["mode"].kwargs["pps"] for st in self.streams)
        self.sent = int(round(pps * duration))
        self.received = min(self.sent, int(round(self.CAPACITY * duration)))

    def get_stats(self, ports):
        return {0: {"opackets": self.sent, "ipackets": 0}, 1: {"opackets": 0, "ipackets": self.received}}

    def get_pgid_stats(self, pgids):
        lat = {"err_cntrs": {"dropped": 0, "dup": 1, "out_of_order": 2, "seq_too_high": 0, "seq_too_low": 0},
               "latency": {"average": 12.5, "total_min": 8, "total_max": 95, "jitter": 1, "last_max": 40,
                           "histogram": {0: 100, 10: 800, 20: 90, 90: 10}}}
        return {"flow_stats": {}, "latency": {pgids[0]: lat, "global": {"old_flow": 0, "bad_hdr": 0}}}


class FakeTrex:
    """A stand-in for trex.stl.api that records what the profile builds."""

    def __init__(self):
        m = types.ModuleType("trex.stl.api")

        def recorder(name):
            class R:
                def __init__(self, *args, **kwargs):
                    self.cls, self.args, self.kwargs = name, args, kwargs

                def __repr__(self):
                    return f"{name}({self.kwargs})"

            R.__name__ = name
            return R

        for name in ("STLFlowLatencyStats", "STLPktBuilder", "STLScVmRaw", "STLStream", "STLTXCont",
                     "STLVmFixChecksumHw", "STLVmFlowVar", "STLVmWrFlowVar", "STLVmFixIpv4"):
            setattr(m, name, recorder(name))
        m.CTRexVmInsFixHwCs = types.SimpleNamespace(L4_TYPE_UDP=11, L4_TYPE_TCP=13, L4_TYPE_IP=17)
        m.STLClient = FakeClient
        m.STLStreamDstMAC_CFG_FILE, m.STLStreamDstMAC_PKT = 0, 1
        self.modules = {
            "trex": types.ModuleType("trex"),
            "trex.stl": types.ModuleType("trex.stl"),
            "trex.stl.api": m,
        }

    def __enter__(self):
        self.saved = {k: sys.modules.get(k) for k in list(self.modules) + ["fastpath_udp"]}
        sys.modules.update(self.modules)
        sys.modules.pop("fastpath_udp", None)
        return importlib.import_module("fastpath_udp")

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


class Profile(unittest.TestCase):
    def test_streams_field_engine_and_latency(self):
        need_scapy(self)
        with FakeTrex() as prof:
            streams = prof.register().get_streams(
                direction=0, port_id=0,
                tunables=["--size", "imix", "--flows", "100", "--vary", "src-ip,dst-port", "--vlan", "7",
                          "--latency-pps", "500", "--pg-id", "9", "--rate-pps", "1.2e6"])
        spec = flows.make_spec(size="imix", flows=100, vary="src-ip,dst-port", vlan=7)
        self.assertEqual(len(streams), 4)
        data, lat = streams[:3], streams[3]
        self.assertEqual([s.kwargs["mode"].kwargs["pps"] for s in data], [0.7e6, 0.4e6, 0.1e6])
        for s, size in zip(data, (64, 594, 1518)):
            self.assertNotIn("flow_stats", s.kwargs)
            pkt = s.kwargs["packet"].kwargs
            self.assertEqual(pkt["pkt_buffer"], flows.build_frame(spec, size, 0))
            cmds = pkt["vm"].args[0]
            self.assertEqual([c.cls for c in cmds],
                             ["STLVmFlowVar", "STLVmFlowVar", "STLVmWrFlowVar", "STLVmWrFlowVar", "STLVmFixChecksumHw"])
            self.assertEqual(cmds[0].kwargs, dict(name="src_ip", min_value=0xC6120001, max_value=0xC6120001 + 99,
                                                  size=4, step=1, op="inc"))
            self.assertEqual(cmds[1].kwargs, dict(name="dst_port", min_value=9, max_value=108, size=2, step=1, op="inc"))
            self.assertEqual(cmds[2].kwargs, dict(fv_name="src_ip", pkt_offset=18 + 12))
            self.assertEqual(cmds[3].kwargs, dict(fv_name="dst_port", pkt_offset=18 + 22))
            self.assertEqual(cmds[4].kwargs, dict(l3_offset=18, l4_offset=38, l4_type=11))
            self.assertEqual((s.kwargs["mac_src_override_by_pkt"], s.kwargs["mac_dst_override_mode"]), (False, 0))
        self.assertEqual(lat.kwargs["flow_stats"].kwargs, dict(pg_id=9))
        self.assertEqual(lat.kwargs["mode"].kwargs, dict(pps=500.0))
        # 64 bytes with a tag leave 14 payload bytes, short of TRex's 16-byte
        # latency header: the latency stream sends 66-byte frames.
        lat_spec = flows.make_spec(size=66, flows=100, vary="src-ip,dst-port", vlan=7)
        self.assertEqual(lat.kwargs["packet"].kwargs["pkt_buffer"], flows.build_frame(lat_spec, 66, 0))
        self.assertEqual([c.kwargs for c in lat.kwargs["packet"].kwargs["vm"].args[0]],
                         [c.kwargs for c in data[0].kwargs["packet"].kwargs["vm"].args[0]])

    def test_keyword_tunables_and_small_tagged_latency_frame(self):
        need_scapy(self)
        with FakeTrex() as prof:
            streams = prof.register().get_streams(direction=1, size="64", flows="1", vlan="3", macs="spec",
                                                  vary="src-ip+src-port")
            none = prof.build_streams(flows.Spec(), latency_pps=0)
        self.assertEqual(len(streams), 2)
        self.assertEqual(len(none), 1)
        data, lat = streams
        # One flow: no variables, only the checksum fix.
        self.assertEqual([c.cls for c in data.kwargs["packet"].kwargs["vm"].args[0]], ["STLVmFixChecksumHw"])
        self.assertEqual((data.kwargs["mac_src_override_by_pkt"], data.kwargs["mac_dst_override_mode"]), (True, 1))
        # 64 bytes tagged leave 14 payload bytes; TRex's latency header needs 16.
        self.assertEqual(len(data.kwargs["packet"].kwargs["pkt_buffer"]), 60)
        self.assertEqual(len(lat.kwargs["packet"].kwargs["pkt_buffer"]), 62)


class TrexRunnerWithAStandIn(unittest.TestCase):
    """ndr.py's TRex path end to end against FakeClient (no TRex here)."""

    def test_search_through_the_trex_calls(self):
        need_scapy(self)
        with tempfile.TemporaryDirectory() as tmp, FakeTrex():
            out = os.path.join(tmp, "r.json")
            rc = ndr.main(["--server", "10.0.0.9", "--ports", "0", "1", "--size", "imix", "--flows", "500",
                           "--trial-seconds", "0.01", "--drain-seconds", "0", "--loss-ratio", "0.005",
                           "--line-rate-gbps", "10", "--json", out, "--dut", "stand-in"])
            self.assertEqual(rc, 0)
            with open(out) as f:
                rep = json.load(f)
        c = FakeClient.last
        self.assertEqual(c.server, "10.0.0.9")
        names = [n for n, _ in c.calls]
        self.assertEqual(names[:2], ["connect", "reset"])
        self.assertEqual(names[-1], "disconnect")
        self.assertEqual(names.count("start"), len(rep["trials"]))
        # Three IMIX streams and the latency stream, at most offered/10.
        self.assertEqual(len(c.streams), 4)
        self.assertEqual(c.streams[3].kwargs["flow_stats"].kwargs, dict(pg_id=7))
        self.assertEqual(rep["spec"]["sizes"], "imix")
        self.assertAlmostEqual(rep["frame_mean_bytes"], 361.8333, places=3)
        threshold = FakeClient.CAPACITY / (1 - 0.005)
        self.assertLessEqual(rep["result"]["offered_pps"], threshold * 1.001)
        self.assertGreaterEqual(rep["result"]["offered_pps"], threshold - 0.01 * rep["search"]["max_rate_pps"] * 1.001)
        t = rep["result"]
        self.assertEqual((t["reordered"], t["duplicates"]), (2, 1))
        self.assertEqual(t["latency_ns"], {"samples": 1000, "min": 8000, "mean": 12500.0, "p50": 20000,
                                           "p90": 20000, "p99": 30000, "p999": 95000, "max": 95000})


class SyntheticMode(unittest.TestCase):
    def test_json_has_exactly_the_report_keys(self):
        with tempfile.TemporaryDirectory() as tmp:
            # Poisoned trex / scapy packages: synthetic mode must import neither.
            for name in ("trex", "trex_stl_lib", "scapy"):
                os.makedirs(os.path.join(tmp, "poison", name))
                with open(os.path.join(tmp, "poison", name, "__init__.py"), "w") as f:
                    f.write(f"raise ImportError('synthetic mode imported {name}')\n")
            out = os.path.join(tmp, "ndr.json")
            env = dict(os.environ, PYTHONPATH=os.path.join(tmp, "poison"))
            t0 = time.monotonic()
            run = subprocess.run(
                [sys.executable, os.path.join(HERE, "ndr.py"), "--synthetic", "1e6", "--trial-seconds", "0",
                 "--json", out],
                capture_output=True, text=True, env=env, cwd=ROOT,
            )
            took = time.monotonic() - t0
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertLess(took, 10.0)
            with open(out) as f:
                rep = json.load(f)
        self.assertEqual(set(rep), set(ndr.REPORT_KEYS))
        self.assertEqual(rep["tool"], "trex")
        self.assertIsInstance(rep["dut"], str)
        self.assertEqual(set(rep["spec"]), {"sizes", "flows", "vary", "vlan", "src_mac", "dst_mac", "src_ip",
                                            "dst_ip", "src_port", "dst_port"})
        self.assertEqual(rep["spec"]["sizes"], "64")
        self.assertIsNone(rep["spec"]["vlan"])
        self.assertEqual(rep["frame_mean_bytes"], 64.0)
        self.assertEqual(set(rep["search"]), set(ndr.SEARCH_KEYS))
        self.assertEqual(rep["search"]["loss_ratio"], 0.0)
        self.assertAlmostEqual(rep["search"]["max_rate_pps"], 14880952.38, places=1)
        self.assertGreater(len(rep["trials"]), 1)
        ints = ("sent", "received", "lost", "reordered", "duplicates")
        floats = ("offered_pps", "loss_ratio", "forwarded_pps", "seconds")
        for t in rep["trials"] + [rep["result"]]:
            self.assertEqual(set(t), set(ndr.TRIAL_KEYS))
            for k in ints:
                self.assertIs(type(t[k]), int, k)
            for k in floats:
                self.assertIs(type(t[k]), float, k)
            self.assertIs(type(t["pass"]), bool)
            lat = t["latency_ns"]
            self.assertIsNotNone(lat)
            self.assertEqual(set(lat), set(ndr.LATENCY_KEYS))
            self.assertIs(type(lat["mean"]), float)
            seq = [lat[k] for k in ("min", "p50", "p90", "p99", "p999", "max")]
            self.assertTrue(all(type(v) is int for v in seq + [lat["samples"]]))
            self.assertEqual(seq, sorted(seq))
        res = rep["result"]
        self.assertTrue(res["pass"])
        self.assertIn(res, rep["trials"])
        self.assertLessEqual(res["offered_pps"], 1e6)
        self.assertGreaterEqual(res["offered_pps"], 1e6 - 0.01 * rep["search"]["max_rate_pps"])
        self.assertIn("NDR:", run.stdout)
        self.assertIn("trial 1:", run.stderr)

    def test_table_matches_the_rust_layout(self):
        spec = flows.Spec()
        out = ndr.search(ndr.SyntheticDevice(2e6), 4e6, 0.005, 0.05)
        rep = ndr.build_report(spec, "x", dict(loss_ratio=0.005, trial_seconds=1, resolution=0.05,
                                               max_rate_pps=4e6), out)
        text = ndr.table(rep)
        lines = text.splitlines()
        self.assertEqual(lines[0], "trex through x")
        self.assertTrue(lines[1].startswith("trial offered Mpps     fwd Mpps"))
        self.assertTrue(lines[-1].startswith("PDR (0.5 % loss): "), lines[-1])
        none = ndr.build_report(spec, "x", dict(loss_ratio=0, trial_seconds=1, resolution=0.5, max_rate_pps=4e6),
                                ndr.search(ndr.SyntheticDevice(1), 4e6, 0.0, 0.5))
        self.assertTrue(ndr.table(none).endswith("no trial passed: even the lowest rate lost packets\n"))


if __name__ == "__main__":
    unittest.main()
