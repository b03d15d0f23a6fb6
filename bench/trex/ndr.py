#!/usr/bin/env python3
"""NDR / PDR search with TRex (or a synthetic device), written as the JSON
that `fastpath-bench` writes (bench/src/report.rs).

    # against a TRex server (run on the TRex machine, with TRex's python3):
    python3 bench/trex/ndr.py --trex-path /opt/trex/v3.06 --server 127.0.0.1 \\
        --ports 0 1 --line-rate-gbps 10 --size 64 --flows 1024 \\
        --trial-seconds 10 --json ndr-64.json --dut "fastpath, 2 workers"

    # the same search against a made-up device, no TRex, no scapy, instant:
    python3 bench/trex/ndr.py --synthetic 1e6 --trial-seconds 0 --json F

The search is a binary search over the offered rate between 0 and the line
rate (`--line-rate-gbps`, counting preamble + IFG, 20 bytes a frame), down to
`--resolution` x line rate: a first trial at line rate, then halving the
interval between the highest passing and the lowest failing rate. A trial
passes when (sent - received) / sent <= `--loss-ratio` (0: NDR; e.g. 0.005
for a 0.5 % PDR). The result is the highest passing trial.

Per TRex trial: the profile's streams (bench/trex/fastpath_udp.py) are
loaded on the TX port at absolute rates (the data streams at the offered
rate less the latency stream's), sent for `--trial-seconds`, and the TX
port's opackets / RX port's ipackets are read after `--drain-seconds`. Those
are port counters: they include the latency stream and anything else the
ports send or receive in that time (keep the link otherwise quiet; fastpath
with static neighbours sends nothing by itself). `reordered` and
`duplicates` are TRex's out_of_order and dup counters, which only the
latency stream has.

Latency (`latency_ns`) comes from TRex's latency stream, which is measured
in software with microsecond resolution:
  min, max   TRex's total_min / total_max (usec, exact to the usec);
  mean       TRex's `average`, a low-pass filtered average (each 0.5 s period
             halves the weight of the previous ones), so approximate;
  p50..p999  from TRex's histogram, whose buckets are one leading digit wide
             (0-10 us, 10-20, ..., 90-100, 100-200, ..., 900-1000, 1000-2000
             us ...): the upper edge of the bucket holding the percentile,
             clamped to [min, max]; i.e. an upper bound up to one bucket
             (10 % - 100 % of the value) above the true percentile;
  samples    the histogram's count.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from typing import Callable, Dict, List, Optional

_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

import flows  # noqa: E402  (imports no scapy until a frame is built)

# Ethernet preamble, start delimiter and inter-frame gap: line rate counts them.
L1_OVERHEAD = 20.0

TRIAL_KEYS = (
    "offered_pps", "sent", "received", "lost", "loss_ratio", "reordered",
    "duplicates", "forwarded_pps", "seconds", "pass", "latency_ns",
)
LATENCY_KEYS = ("samples", "min", "mean", "p50", "p90", "p99", "p999", "max")
SEARCH_KEYS = ("loss_ratio", "trial_seconds", "resolution", "max_rate_pps")
REPORT_KEYS = ("tool", "dut", "spec", "frame_mean_bytes", "search", "trials", "result")

TrialFn = Callable[[float], Dict]


def line_rate_pps(gbps: float, mean_bytes: float) -> float:
    """Frames per second at `gbps` line rate."""
    return gbps * 1e9 / ((mean_bytes + L1_OVERHEAD) * 8.0)


def line_bps(pps: float, mean_bytes: float) -> float:
    """Bits per second on the wire for `pps` frames of `mean_bytes`."""
    return pps * (mean_bytes + L1_OVERHEAD) * 8.0


def make_trial(
    offered_pps: float,
    sent: int,
    received: int,
    seconds: float,
    latency_ns: Optional[Dict] = None,
    reordered: int = 0,
    duplicates: int = 0,
) -> Dict:
    """One trial in the report's shape (`pass` is set by `search`)."""
    sent = int(sent)
    received = int(received)
    lost = max(0, sent - received)
    return {
        "offered_pps": float(offered_pps),
        "sent": sent,
        "received": received,
        "lost": lost,
        # Nothing sent is no evidence of forwarding: count it as all lost.
        "loss_ratio": float(lost) / sent if sent > 0 else 1.0,
        "reordered": int(reordered),
        "duplicates": int(duplicates),
        "forwarded_pps": float(received) / seconds if seconds > 0 else 0.0,
        "seconds": float(seconds),
        "pass": False,
        "latency_ns": latency_ns,
    }


# --------------------------------------------------------------------------
# The search (pure: no TRex, no I/O but the progress callback)
# --------------------------------------------------------------------------


def search(
    trial_fn: TrialFn,
    max_rate_pps: float,
    loss_ratio: float = 0.0,
    resolution: float = 0.01,
    progress: Optional[Callable[[int, Dict], None]] = None,
) -> Dict:
    """Binary search for the highest offered rate whose trial loses at most
    `loss_ratio` of what it sent.

    `trial_fn(offered_pps)` runs one trial and returns a trial dict
    (`make_trial`). The first trial is at `max_rate_pps`; if it passes that
    is the result. Otherwise the interval [0, max) is halved, moving up after
    a pass and down after a failure, until it is at most
    `resolution * max_rate_pps` wide. Returns {"trials": [...in order...],
    "result": the highest passing trial or None}; `progress(n, trial)` is
    called after each trial (n from 1).
    """
    if not (max_rate_pps > 0 and math.isfinite(max_rate_pps)):
        raise ValueError(f"max rate {max_rate_pps} pps: expected a positive rate")
    if not 0.0 <= loss_ratio < 1.0:
        raise ValueError(f"loss ratio {loss_ratio}: expected 0 (NDR) up to, not including, 1")
    if not 0.0 < resolution < 1.0:
        raise ValueError(f"resolution {resolution}: expected a fraction of the max rate in (0, 1)")

    trials: List[Dict] = []

    def run(rate: float) -> Dict:
        t = dict(trial_fn(rate))
        t["pass"] = bool(t["loss_ratio"] <= loss_ratio)
        trials.append(t)
        if progress:
            progress(len(trials), t)
        return t

    first = run(max_rate_pps)
    if not first["pass"]:
        lo, hi = 0.0, max_rate_pps
        step = resolution * max_rate_pps
        while hi - lo > step:
            mid = (lo + hi) / 2.0
            if run(mid)["pass"]:
                lo = mid
            else:
                hi = mid
    passing = [t for t in trials if t["pass"]]
    result = max(passing, key=lambda t: t["offered_pps"]) if passing else None
    return {"trials": trials, "result": result}


# --------------------------------------------------------------------------
# A synthetic device (for tests and for the Rust side's test)
# --------------------------------------------------------------------------


class SyntheticDevice:
    """Forwards up to `capacity_pps` and drops the rest: loss =
    max(0, 1 - capacity / offered). Counts are over a nominal `window_s`
    (nothing waits); latency is made up, rising with the load, the same for
    the same rates."""

    def __init__(self, capacity_pps: float, window_s: float = 1.0, latency_pps: float = 1000.0):
        if not capacity_pps > 0:
            raise ValueError(f"synthetic capacity {capacity_pps} pps: expected a positive rate")
        self.capacity_pps = float(capacity_pps)
        self.window_s = float(window_s) if window_s > 0 else 1.0
        self.latency_pps = float(latency_pps)

    def latency(self, offered_pps: float, received: int, sent: int) -> Optional[Dict]:
        samples = int(round(self.latency_pps * self.window_s * (received / sent if sent else 0)))
        if samples <= 0:
            return None
        rho = offered_pps / self.capacity_pps
        # M/M/1-like queueing below capacity, a full buffer above it.
        q = 50.0 + 10.0 * (rho - 1.0) if rho >= 1.0 else min(50.0, rho / (1.0 - rho))
        mean = 5000.0 + 400.0 * q
        return {
            "samples": samples,
            "min": int(mean * 0.6),
            "mean": round(mean, 1),
            "p50": int(mean * 0.9),
            "p90": int(mean * 1.3),
            "p99": int(mean * 1.8),
            "p999": int(mean * 2.5),
            "max": int(mean * 3.2),
        }

    def __call__(self, offered_pps: float) -> Dict:
        w = self.window_s
        sent = max(1, int(round(offered_pps * w)))
        received = min(sent, int(round(self.capacity_pps * w)))
        return make_trial(offered_pps, sent, received, w, self.latency(offered_pps, received, sent))


# --------------------------------------------------------------------------
# TRex
# --------------------------------------------------------------------------


def _num(v) -> Optional[float]:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None  # TRex shows "N/A" before any sample
    return f if math.isfinite(f) else None


def _bucket_upper_usec(key: int) -> int:
    """TRex's histogram key is the bucket's lower edge in usec; buckets are
    one leading digit wide (key 0 is 0-10 us)."""
    return 10 if key <= 0 else key + 10 ** (len(str(key)) - 1)


def latency_from_trex(lat_stats: Optional[Dict]) -> Optional[Dict]:
    """`latency_ns` from one pg_id of TRex's get_pgid_stats()['latency']
    (see the module doc for what is approximate)."""
    if not lat_stats:
        return None
    lat = lat_stats.get("latency", lat_stats)
    hist = lat.get("histogram") or {}
    if isinstance(hist, list):  # older servers: [{"key": k, "val": v}, ...]
        hist = {h["key"]: h["val"] for h in hist}
    buckets = sorted((int(float(k)), int(v)) for k, v in hist.items() if int(v) > 0)
    samples = sum(v for _, v in buckets)
    if samples == 0:
        return None
    tmin = _num(lat.get("total_min"))
    tmax = _num(lat.get("total_max"))
    avg = _num(lat.get("average"))
    lo_us = tmin if tmin is not None else float(buckets[0][0])
    hi_us = tmax if tmax else float(_bucket_upper_usec(buckets[-1][0]))
    hi_us = max(hi_us, lo_us)

    def pct(q: float) -> int:
        need = q * samples
        acc = 0
        edge = float(_bucket_upper_usec(buckets[-1][0]))
        for k, v in buckets:
            acc += v
            if acc >= need:
                edge = float(_bucket_upper_usec(k))
                break
        return int(round(min(max(edge, lo_us), hi_us) * 1000.0))

    if avg is None:
        avg = sum((k + _bucket_upper_usec(k)) / 2.0 * v for k, v in buckets) / samples
    return {
        "samples": samples,
        "min": int(round(lo_us * 1000.0)),
        "mean": float(avg) * 1000.0,
        "p50": pct(0.50),
        "p90": pct(0.90),
        "p99": pct(0.99),
        "p999": pct(0.999),
        "max": int(round(hi_us * 1000.0)),
    }


def import_trex(trex_path: Optional[str]):
    """STLClient from the TRex package (`--trex-path` is the package dir,
    e.g. /opt/trex/v3.06, or its automation/trex_control_plane/interactive)."""
    if trex_path:
        for d in (
            os.path.join(trex_path, "automation", "trex_control_plane", "interactive"),
            trex_path,
        ):
            if os.path.isdir(d) and d not in sys.path:
                sys.path.insert(0, d)
    try:
        from trex.stl.api import STLClient  # TRex >= 2.4x
    except ImportError:
        try:
            from trex_stl_lib.api import STLClient  # older layout
        except ImportError as e:
            raise SystemExit(
                f"error: TRex's Python client not found ({e}): pass --trex-path with the TRex "
                "package directory (e.g. /opt/trex/v3.06) or set TREX_PATH; run with the "
                "python3 TRex supports, not the scapy venv"
            )
    return STLClient


class TrexRunner:
    """Runs trials on a TRex server: one TX port, one RX port."""

    def __init__(self, args, spec: flows.Spec):
        STLClient = import_trex(args.trex_path)
        import fastpath_udp  # after TRex, so scapy is TRex's own

        self.fastpath_udp = fastpath_udp
        self.spec = spec
        self.tx, self.rx = args.ports
        self.seconds = args.trial_seconds
        self.drain = args.drain_seconds
        self.latency_pps = args.latency_pps
        self.pg_id = args.pg_id
        self.macs = args.macs
        self.c = STLClient(server=args.server)
        self.c.connect()
        ports = sorted({self.tx, self.rx})
        self.c.reset(ports=ports)
        try:  # L3 mode: make sure the next hop (fastpath) is resolved now
            self.c.set_service_mode(ports=ports, enabled=True)
            self.c.resolve(ports=ports)
        except Exception as e:  # L2 mode, or an older client without resolve()
            print(f"note: ARP resolution skipped: {e}", file=sys.stderr)
        finally:
            try:
                self.c.set_service_mode(ports=ports, enabled=False)
            except Exception:
                pass

    def close(self):
        try:
            self.c.stop(ports=[self.tx])
            self.c.remove_all_streams(ports=[self.tx])
        finally:
            self.c.disconnect()

    def __call__(self, offered_pps: float) -> Dict:
        c = self.c
        lat_pps = min(self.latency_pps, offered_pps / 10.0) if self.latency_pps > 0 else 0.0
        # The data streams get what the latency stream leaves of the offered
        # rate's bits on the wire (its frames can be a little larger).
        lat_wire = self.fastpath_udp.latency_frame_size(self.spec) + L1_OVERHEAD
        data_pps = offered_pps - lat_pps * lat_wire / (flows.mean_frame_size(self.spec) + L1_OVERHEAD)
        streams = self.fastpath_udp.build_streams(
            self.spec,
            rate_pps=data_pps,
            latency_pps=lat_pps,
            pg_id=self.pg_id,
            macs=self.macs,
        )
        c.stop(ports=[self.tx])
        c.remove_all_streams(ports=[self.tx])
        c.add_streams(streams, ports=[self.tx])
        c.clear_stats(ports=[self.tx, self.rx])
        c.start(ports=[self.tx], duration=self.seconds, force=True)
        try:
            c.wait_on_traffic(ports=[self.tx], rx_delay_ms=int(self.drain * 1000))
        except TypeError:  # clients without rx_delay_ms
            c.wait_on_traffic(ports=[self.tx])
        time.sleep(self.drain)  # in-flight packets and counter sync
        st = c.get_stats(ports=[self.tx, self.rx])
        sent = st[self.tx]["opackets"]
        received = st[self.rx]["ipackets"]
        latency = None
        reordered = duplicates = 0
        if lat_pps > 0:
            lat = c.get_pgid_stats([self.pg_id]).get("latency", {}).get(self.pg_id)
            latency = latency_from_trex(lat)
            if lat:
                err = lat.get("err_cntrs", {})
                reordered = int(err.get("out_of_order", 0))
                duplicates = int(err.get("dup", 0))
        # Offered is what TRex did send (as fastpath-bench reports it), not
        # what was asked: a TRex that cannot keep up must not claim the rate.
        sent_pps = sent / self.seconds if self.seconds > 0 else offered_pps
        if sent_pps < 0.99 * offered_pps:
            print(
                f"note: TRex sent {sent_pps / 1e6:.3f} Mpps of the {offered_pps / 1e6:.3f} asked",
                file=sys.stderr,
            )
        return make_trial(min(offered_pps, sent_pps), sent, received, self.seconds, latency, reordered, duplicates)


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def _rust_float(x: float) -> str:
    """f64 as Rust's Display prints it (0.5 -> "0.5", 1.0 -> "1")."""
    s = repr(float(x))
    return s[:-2] if s.endswith(".0") else s


def table(report: Dict) -> str:
    """The terminal table, as `Report::table` in bench/src/report.rs."""
    lines = [f"{report['tool']} through {report['dut']}"]
    lines.append(
        f"{'trial':>5} {'offered Mpps':>12} {'fwd Mpps':>12} {'lost':>12} {'loss %':>10} "
        f"{'reorder':>9} {'p50 us':>9} {'p90 us':>9} {'p99 us':>9} {'p99.9 us':>9} {'max us':>9}  verdict"
    )

    def us(v: int) -> str:
        return f"{v / 1000.0:.1f}"

    zero = {k: 0 for k in LATENCY_KEYS}
    for i, t in enumerate(report["trials"], 1):
        lat = t["latency_ns"] or zero
        lines.append(
            f"{i:>5} {t['offered_pps'] / 1e6:>12.3f} {t['forwarded_pps'] / 1e6:>12.3f} {t['lost']:>12} "
            f"{t['loss_ratio'] * 100.0:>10.4f} {t['reordered']:>9} {us(lat['p50']):>9} {us(lat['p90']):>9} "
            f"{us(lat['p99']):>9} {us(lat['p999']):>9} {us(lat['max']):>9}  {'pass' if t['pass'] else 'FAIL'}"
        )
    p, r = report["search"], report["result"]
    if p is not None and r is not None:
        kind = "NDR" if p["loss_ratio"] == 0 else f"PDR ({_rust_float(p['loss_ratio'] * 100.0)} % loss)"
        lat = r["latency_ns"] or zero
        lines.append(
            f"{kind}: {r['forwarded_pps'] / 1e6:.3f} Mpps "
            f"({line_bps(r['forwarded_pps'], report['frame_mean_bytes']) / 1e9:.2f} Gbit/s on the wire), "
            f"loss {r['loss_ratio'] * 100.0:.4f} %, p99 {us(lat['p99'])} us"
        )
    elif p is not None:
        lines.append("no trial passed: even the lowest rate lost packets")
    return "\n".join(lines) + "\n"


def progress_line(n: int, t: Dict, mean_bytes: float) -> str:
    lat = t["latency_ns"]
    p99 = f", p99 {lat['p99'] / 1000.0:.1f} us" if lat else ""
    return (
        f"trial {n}: offered {t['offered_pps'] / 1e6:.3f} Mpps "
        f"({line_bps(t['offered_pps'], mean_bytes) / 1e9:.2f} Gbit/s), "
        f"forwarded {t['forwarded_pps'] / 1e6:.3f} Mpps, lost {t['lost']} "
        f"({t['loss_ratio'] * 100.0:.4f} %){p99}: {'pass' if t['pass'] else 'FAIL'}"
    )


def build_report(spec: flows.Spec, dut: str, params: Dict, outcome: Dict) -> Dict:
    return {
        "tool": "trex",
        "dut": dut,
        "spec": flows.spec_dict(spec),
        "frame_mean_bytes": flows.mean_frame_size(spec),
        "search": {k: float(params[k]) for k in SEARCH_KEYS},
        "trials": outcome["trials"],
        "result": outcome["result"],
    }


# --------------------------------------------------------------------------
# Command line
# --------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    d = flows.Spec()
    p = argparse.ArgumentParser(
        description="NDR/PDR search with TRex (or --synthetic), JSON as fastpath-bench writes it",
    )
    g = p.add_argument_group("traffic (as fastpath-bench's options)")
    g.add_argument("--size", default="64", help="frame size with FCS (64..=1518) or imix")
    g.add_argument("--flows", default=1, type=int)
    g.add_argument("--vary", default=",".join(flows.DEFAULT_VARY),
                   help="fields flow i sets to base + i: src-ip,dst-ip,src-port,dst-port")
    g.add_argument("--vlan", default=None, type=int, help="802.1Q VLAN id (untagged without)")
    g.add_argument("--src-mac", default=d.src_mac)
    g.add_argument("--dst-mac", default=d.dst_mac)
    g.add_argument("--src-ip", default=d.src_ip)
    g.add_argument("--dst-ip", default=d.dst_ip)
    g.add_argument("--src-port", default=d.src_port, type=int)
    g.add_argument("--dst-port", default=d.dst_port, type=int)
    s = p.add_argument_group("search")
    s.add_argument("--loss-ratio", default=0.0, type=float,
                   help="loss a trial may have and pass: 0 = NDR (default), 0.005 = 0.5 %% PDR")
    s.add_argument("--trial-seconds", default=10.0, type=float, help="sending time per trial (default 10)")
    s.add_argument("--resolution", default=0.01, type=float,
                   help="stop when the interval is this fraction of the max rate (default 0.01)")
    s.add_argument("--line-rate-gbps", default=10.0, type=float,
                   help="link speed; the max rate is its frame rate for the spec (default 10)")
    s.add_argument("--max-rate-pps", default=None, type=float,
                   help="search up to this rate instead of line rate")
    o = p.add_argument_group("output")
    o.add_argument("--json", metavar="FILE", help="write the report here")
    o.add_argument("--dut", default=None, help="device under test, as the report names it")
    t = p.add_argument_group("TRex")
    t.add_argument("--server", default="127.0.0.1", help="TRex server address")
    t.add_argument("--ports", nargs=2, type=int, default=[0, 1], metavar=("TX", "RX"))
    t.add_argument("--trex-path", default=os.environ.get("TREX_PATH"),
                   help="TRex package directory (default $TREX_PATH)")
    t.add_argument("--latency-pps", default=1000.0, type=float,
                   help="latency stream rate (0: no latency stream; at most offered/10)")
    t.add_argument("--pg-id", default=7, type=int, help="latency stream packet-group id")
    t.add_argument("--macs", default="port", choices=["port", "spec"],
                   help="Ethernet addresses: TRex's port MACs (L3 mode next hop) or the spec's")
    t.add_argument("--drain-seconds", default=0.5, type=float,
                   help="wait after sending before reading counters")
    p.add_argument("--synthetic", metavar="CAPACITY_PPS", type=float, default=None,
                   help="search a synthetic device forwarding at most this rate (no TRex)")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = parser().parse_args(argv)
    try:
        spec = flows.make_spec(
            size=args.size, flows=args.flows, vary=args.vary, vlan=args.vlan,
            src_mac=args.src_mac, dst_mac=args.dst_mac, src_ip=args.src_ip,
            dst_ip=args.dst_ip, src_port=args.src_port, dst_port=args.dst_port,
        )
    except flows.SpecError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.trial_seconds < 0 or (args.synthetic is None and args.trial_seconds <= 0):
        print(f"error: --trial-seconds {args.trial_seconds}: give a positive number of seconds "
              "(0 only with --synthetic)", file=sys.stderr)
        return 2
    mean = flows.mean_frame_size(spec)
    max_rate = args.max_rate_pps or line_rate_pps(args.line_rate_gbps, mean)
    params = {
        "loss_ratio": args.loss_ratio,
        "trial_seconds": args.trial_seconds,
        "resolution": args.resolution,
        "max_rate_pps": max_rate,
    }

    runner = None
    if args.synthetic is not None:
        try:
            trial_fn = SyntheticDevice(args.synthetic, args.trial_seconds, args.latency_pps)
        except ValueError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        dut = args.dut or f"synthetic device ({args.synthetic:g} pps)"
    else:
        try:
            runner = TrexRunner(args, spec)
        except Exception as e:  # TRex's errors carry their own explanation
            print(f"error: TRex at {args.server}: {e}", file=sys.stderr)
            return 1
        trial_fn = runner
        dut = args.dut or "fastpath"

    print(
        f"{'NDR' if args.loss_ratio == 0 else 'PDR'} search through {dut}: {flows.describe(spec)}, "
        f"up to {max_rate / 1e6:.3f} Mpps, {args.trial_seconds:g} s trials, "
        f"resolution {args.resolution * 100:g} %",
        file=sys.stderr,
    )
    try:
        outcome = search(
            trial_fn, max_rate, args.loss_ratio, args.resolution,
            progress=lambda n, t: print(progress_line(n, t, mean), file=sys.stderr, flush=True),
        )
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    finally:
        if runner is not None:
            runner.close()

    report = build_report(spec, dut, params, outcome)
    sys.stdout.write(table(report))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2)
            f.write("\n")
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
