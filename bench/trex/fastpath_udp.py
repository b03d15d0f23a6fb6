"""TRex stateless (STL) profile: fastpath-bench's flow specs on TRex.

The packets come from `flows.build_frame` (plain scapy, checked byte for byte
against `fastpath-bench frames` by test_flows.py); this file only wraps them
in TRex streams:

* one continuous stream per frame size (IMIX: 64 / 594 / 1518 at 7:4:1 of
  the rate), each built from flow 0's frame with a field engine that makes
  packet k carry flow k mod N: one STLVmFlowVar per varied field
  (min = base, max = base + N - 1, op "inc", step 1), an STLVmWrFlowVar at
  the field's offset, then STLVmFixChecksumHw, which has the NIC recompute the
  IPv4 header and UDP checksums (both, per TRex's docs);
* one latency stream (STLFlowLatencyStats(pg_id)) at `latency_pps`, same
  flows, at the smallest size of the spec (raised to 16 payload bytes, which
  TRex overwrites with its latency header: only a 64-byte tagged frame is
  affected, sent as 66 bytes).

Field-engine "inc" semantics, checked in trex-core: the Python docs of
STLVmFlowVar give `min=0, max=3, op="inc"` -> `0,1,2,3,0,1,...`, init_value
defaults to min_value; the server (src/stx/stl/trex_stl_stream_vm.h) runs
"increment, then write" per packet but seeds the variable with
`peek_prev()` = init - step, so the first packet carries min itself, the same
flow 0 first as fastpath-bench. With several TRex cores the range is split
across cores (each core starts at a different phase and steps by the core
count), so packets interleave differently, but the set of flows and the even
spread over them are the same. All varied fields share one range length, so
they stay in lock step: packet k has every varied field at base + (k mod N).

Not the same as fastpath-bench on the wire: TRex puts its own latency header
in the last 16 payload bytes of the latency stream (and sets that stream's IP
ID), while fastpath-bench stamps a 14-byte signature at the payload start of
every packet. Source and destination MACs are the TRex ports' (the L3-mode
resolved next hop) unless `macs=spec`.

Tunables (all optional; console: `start -f fastpath_udp.py -t
size=64,flows=1024,vary=src-ip+dst-ip`; TRex hands them to the profile as
keyword values or, in newer versions, as a `--size 64 ...` list):
  size flows vary vlan src_mac dst_mac src_ip dst_ip src_port dst_port
      the flow spec, as fastpath-bench's --size --flows ... options
  rate_pps      packets per second of the data streams together (default 1e6;
                the console's -m scales them, not the latency stream)
  latency_pps   rate of the latency stream, 0 for none (default 1000)
  pg_id         its packet-group id (default 7)
  macs          "port" (default): TRex's port MACs; "spec": the spec's MACs
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import flows  # noqa: E402  (plain scapy; no TRex)

try:  # TRex >= 2.4x ships the client as `trex` (automation/trex_control_plane/interactive)
    from trex.stl.api import (  # noqa: E402
        CTRexVmInsFixHwCs,
        STLFlowLatencyStats,
        STLPktBuilder,
        STLScVmRaw,
        STLStream,
        STLStreamDstMAC_CFG_FILE,
        STLStreamDstMAC_PKT,
        STLTXCont,
        STLVmFixChecksumHw,
        STLVmFlowVar,
        STLVmWrFlowVar,
    )
except ImportError:  # older TRex: the trex_stl_lib compatibility package
    from trex_stl_lib.api import (  # noqa: E402
        CTRexVmInsFixHwCs,
        STLFlowLatencyStats,
        STLPktBuilder,
        STLScVmRaw,
        STLStream,
        STLStreamDstMAC_CFG_FILE,
        STLStreamDstMAC_PKT,
        STLTXCont,
        STLVmFixChecksumHw,
        STLVmFlowVar,
        STLVmWrFlowVar,
    )

# TRex overwrites the last 16 payload bytes of a latency packet.
LATENCY_HEADER_LEN = 16
DEFAULT_RATE_PPS = 1e6
DEFAULT_LATENCY_PPS = 1000.0
DEFAULT_PG_ID = 7


def field_engine(spec: flows.Spec) -> STLScVmRaw:
    """The flow variables, their writes and the checksum fix for `spec`."""
    cmds = []
    for v in flows.field_engine_vars(spec):
        cmds.append(
            STLVmFlowVar(
                name=v.name,
                min_value=v.min_value,
                max_value=v.max_value,
                size=v.size,
                step=1,
                op="inc",
            )
        )
    for v in flows.field_engine_vars(spec):
        cmds.append(STLVmWrFlowVar(fv_name=v.name, pkt_offset=v.offset))
    l3 = flows.l2_len(spec)
    cmds.append(
        STLVmFixChecksumHw(
            l3_offset=l3,
            l4_offset=l3 + flows.IPV4_LEN,
            l4_type=CTRexVmInsFixHwCs.L4_TYPE_UDP,
        )
    )
    return STLScVmRaw(cmds)


def latency_frame_size(spec: flows.Spec) -> int:
    """Smallest size of the spec, raised so TRex's latency header fits in
    the UDP payload."""
    need = flows.FCS_LEN + flows.l2_len(spec) + flows.IPV4_LEN + flows.UDP_LEN + LATENCY_HEADER_LEN
    return max(min(flows.distinct_sizes(spec)), need)


def _mac_args(macs: str) -> dict:
    if macs == "port":
        return dict(mac_src_override_by_pkt=False, mac_dst_override_mode=STLStreamDstMAC_CFG_FILE)
    if macs == "spec":
        return dict(mac_src_override_by_pkt=True, mac_dst_override_mode=STLStreamDstMAC_PKT)
    raise flows.SpecError(f"macs '{macs}': expected 'port' (TRex's port MACs) or 'spec'")


def build_streams(
    spec: flows.Spec,
    rate_pps: float = DEFAULT_RATE_PPS,
    latency_pps: float = DEFAULT_LATENCY_PPS,
    pg_id: int = DEFAULT_PG_ID,
    macs: str = "port",
) -> list:
    """The streams of `spec`: data streams at `rate_pps` in total (split by
    the IMIX weights), plus a latency stream at `latency_pps` (none at 0)."""
    flows.validate(spec)
    if not rate_pps > 0:
        raise flows.SpecError(f"rate_pps {rate_pps}: expected a positive rate")
    mac = _mac_args(macs)
    weights = flows.size_weights(spec)
    total = sum(w for _, w in weights)
    streams = []
    for size, w in weights:
        streams.append(
            STLStream(
                name=f"fastpath-{size}",
                packet=STLPktBuilder(pkt_buffer=flows.build_frame(spec, size, 0), vm=field_engine(spec)),
                mode=STLTXCont(pps=rate_pps * w / total),
                **mac,
            )
        )
    if latency_pps and latency_pps > 0:
        lsize = latency_frame_size(spec)
        lspec = spec if lsize in flows.distinct_sizes(spec) else dataclasses.replace(spec, size=lsize)
        streams.append(
            STLStream(
                name="fastpath-latency",
                packet=STLPktBuilder(pkt_buffer=flows.build_frame(lspec, lsize, 0), vm=field_engine(lspec)),
                mode=STLTXCont(pps=float(latency_pps)),
                flow_stats=STLFlowLatencyStats(pg_id=int(pg_id)),
                **mac,
            )
        )
    return streams


def _tunables_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fastpath_udp.py", description="fastpath-bench flow spec on TRex")
    d = flows.Spec()
    p.add_argument("--size", default=str(d.size))
    p.add_argument("--flows", default=d.flows, type=int)
    p.add_argument("--vary", default=",".join(d.vary))
    p.add_argument("--vlan", default=None)
    for name in ("src_mac", "dst_mac", "src_ip", "dst_ip", "src_port", "dst_port"):
        p.add_argument("--" + name.replace("_", "-"), "--" + name, dest=name, default=getattr(d, name))
    p.add_argument("--rate-pps", "--rate_pps", dest="rate_pps", type=float, default=DEFAULT_RATE_PPS)
    p.add_argument("--latency-pps", "--latency_pps", dest="latency_pps", type=float, default=DEFAULT_LATENCY_PPS)
    p.add_argument("--pg-id", "--pg_id", dest="pg_id", type=int, default=DEFAULT_PG_ID)
    p.add_argument("--macs", default="port", choices=["port", "spec"])
    return p


def streams_from_tunables(tunables=None, **kwargs) -> list:
    """Streams from TRex's tunables: an argparse-style list (`tunables`,
    newer TRex) and/or keyword values (older TRex, or a direct call)."""
    opts = vars(_tunables_parser().parse_args(list(tunables or [])))
    for k, v in kwargs.items():
        k = k.replace("-", "_")
        if k in opts:
            opts[k] = v
    vary = opts["vary"]
    if isinstance(vary, str):  # the console's key=value form cannot hold commas
        vary = vary.replace("+", ",").replace(":", ",")
    spec = flows.make_spec(
        size=opts["size"],
        flows=opts["flows"],
        vary=vary,
        vlan=opts["vlan"],
        src_mac=opts["src_mac"],
        dst_mac=opts["dst_mac"],
        src_ip=opts["src_ip"],
        dst_ip=opts["dst_ip"],
        src_port=opts["src_port"],
        dst_port=opts["dst_port"],
    )
    return build_streams(
        spec,
        rate_pps=float(opts["rate_pps"]),
        latency_pps=float(opts["latency_pps"]),
        pg_id=int(opts["pg_id"]),
        macs=opts["macs"],
    )


class STLS1(object):
    def get_streams(self, direction=0, tunables=None, **kwargs):
        # TRex passes port_id (and, on some versions, other values) in kwargs;
        # streams_from_tunables takes only the spec's and its own names.
        return streams_from_tunables(tunables, **kwargs)


# dynamic load - used for trex console or simulator
def register():
    return STLS1()
