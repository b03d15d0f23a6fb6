"""The flow specs of `fastpath-bench` in plain Python + scapy (no TRex here).

A spec says what the generator sends: one frame size (64..=1518 bytes, FCS
included) or IMIX (7 x 64, 4 x 594, 1 x 1518), N flows, the header fields that
flow i sets to base + i, an optional 802.1Q tag, and the base addresses. The
frames are Ethernet [/ 802.1Q] / IPv4 (IHL 5, TOS 0, ID 0, DF, TTL 64) / UDP /
zero payload, with valid IPv4 and UDP checksums (a computed UDP checksum of 0
is sent as 0xffff).

The source of truth is `bench/src/traffic.rs`; `fastpath-bench frames` prints
its templates and `test_flows.py` compares them with `build_frame` byte for
byte. Validation errors read like the Rust side's.

scapy is imported only by the functions that build packets, so the spec
functions (and `ndr.py --synthetic`) work without it.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Tuple, Union

MIN_FRAME_SIZE = 64
MAX_FRAME_SIZE = 1518
FCS_LEN = 4
ETH_LEN = 14
VLAN_LEN = 4
IPV4_LEN = 20
UDP_LEN = 8
# fastpath-bench stamps this many bytes of signature over the payload start.
SIGNATURE_LEN = 14

# Simple IMIX, sizes with FCS: 7 x 64, 4 x 594, 1 x 1518 in every 12 packets,
# spread out in this order (as fastpath-bench sends them).
IMIX_PATTERN = (64, 594, 64, 64, 594, 64, 1518, 64, 594, 64, 64, 594)
# The distinct IMIX sizes with their weights, in the order `frames` prints.
IMIX_SIZES = ((64, 7), (594, 4), (1518, 1))

FIELDS = ("src-ip", "dst-ip", "src-port", "dst-port")
DEFAULT_VARY = ("src-ip", "src-port")

Size = Union[int, str]  # a frame size in bytes, or "imix"


class SpecError(ValueError):
    """A bad flow spec; the message names the field and what it needs."""


@dataclass(frozen=True)
class Spec:
    """What the generator sends (the fields of `TrafficSpec` in traffic.rs)."""

    size: Size = 64
    flows: int = 1
    vary: Tuple[str, ...] = DEFAULT_VARY
    vlan: Optional[int] = None
    src_mac: str = "02:00:00:00:00:01"
    dst_mac: str = "02:00:00:00:00:02"
    src_ip: str = "198.18.0.1"
    dst_ip: str = "198.19.0.1"
    src_port: int = 1024
    dst_port: int = 9

    def __str__(self) -> str:
        return describe(self)


# --------------------------------------------------------------------------
# Parsing (same messages as bench/src/traffic.rs and spec_args.rs)
# --------------------------------------------------------------------------


def parse_size(s: Union[str, int]) -> Size:
    """`"64"`..`"1518"` or `"imix"` (any case)."""
    if isinstance(s, int) and not isinstance(s, bool):
        n = s
    else:
        text = str(s).strip()
        if text.lower() == "imix":
            return "imix"
        if not text.isdigit():
            raise SpecError(
                f"frame size '{text}': expected a size in bytes "
                f"({MIN_FRAME_SIZE}..={MAX_FRAME_SIZE}, FCS included) or 'imix'"
            )
        n = int(text)
    if not MIN_FRAME_SIZE <= n <= MAX_FRAME_SIZE:
        raise SpecError(
            f"frame size {n} is outside {MIN_FRAME_SIZE}..={MAX_FRAME_SIZE} "
            "(bytes, FCS included)"
        )
    return n


def parse_field(s: str) -> str:
    if s not in FIELDS:
        raise SpecError(
            f"flow field '{s}': expected one of src-ip, dst-ip, src-port, dst-port"
        )
    return s


def parse_vary(v: Union[str, Iterable[str]]) -> Tuple[str, ...]:
    """A comma separated list (or a sequence) of field names. Like clap's
    value delimiter an empty string is one empty (bad) name; consecutive
    repeats are dropped as `Vec::dedup` does."""
    items = v.split(",") if isinstance(v, str) else list(v)
    out: List[str] = []
    for item in items:
        f = parse_field(item.strip() if isinstance(item, str) else item)
        if not out or out[-1] != f:
            out.append(f)
    return tuple(out)


def parse_mac(s: str) -> str:
    """`aa:bb:cc:dd:ee:ff` (1 or 2 hex digits a byte), returned lower-case
    with two digits a byte, as the Rust side prints it."""
    bad = SpecError(f"MAC address '{s}': expected six hex bytes like 02:00:00:00:00:01")
    parts = str(s).split(":")
    if len(parts) != 6:
        raise bad
    out = []
    for p in parts:
        if not 1 <= len(p) <= 2 or any(c not in "0123456789abcdefABCDEF" for c in p):
            raise bad
        out.append(int(p, 16))
    return ":".join(f"{b:02x}" for b in out)


def parse_ipv4(s: str, what: str = "address") -> str:
    try:
        return str(ipaddress.IPv4Address(str(s)))
    except ValueError:
        raise SpecError(f"{what} '{s}': expected an IPv4 address like 198.18.0.1") from None


def parse_port(v: Union[str, int], what: str = "port") -> int:
    try:
        n = int(v)
    except (TypeError, ValueError):
        raise SpecError(f"{what} '{v}': expected a number 0..=65535") from None
    if not 0 <= n <= 65535:
        raise SpecError(f"{what} {n} is outside 0..=65535")
    return n


def make_spec(
    size: Union[str, int] = 64,
    flows: Union[str, int] = 1,
    vary: Union[str, Iterable[str]] = DEFAULT_VARY,
    vlan: Optional[Union[str, int]] = None,
    src_mac: str = Spec.src_mac,
    dst_mac: str = Spec.dst_mac,
    src_ip: str = Spec.src_ip,
    dst_ip: str = Spec.dst_ip,
    src_port: Union[str, int] = Spec.src_port,
    dst_port: Union[str, int] = Spec.dst_port,
) -> Spec:
    """Parse every field (strings as on the command line, or values) and
    validate the whole spec."""
    try:
        n = int(flows)
    except (TypeError, ValueError):
        raise SpecError(f"flows '{flows}': expected a number of flows (at least 1)") from None
    if vlan is not None and str(vlan).strip().lower() in ("", "none", "null"):
        vlan = None
    if vlan is not None:
        try:
            vlan = int(vlan)
        except (TypeError, ValueError):
            raise SpecError(f"VLAN id '{vlan}': expected a number 0..=4095") from None
    spec = Spec(
        size=parse_size(size),
        flows=n,
        vary=parse_vary(vary),
        vlan=vlan,
        src_mac=parse_mac(src_mac),
        dst_mac=parse_mac(dst_mac),
        src_ip=parse_ipv4(src_ip, "source address"),
        dst_ip=parse_ipv4(dst_ip, "destination address"),
        src_port=parse_port(src_port, "source port"),
        dst_port=parse_port(dst_port, "destination port"),
    )
    validate(spec)
    return spec


def spec_from_dict(d: Dict) -> Spec:
    """The inverse of `spec_dict` (also takes `size` for `sizes`)."""
    d = dict(d)
    if "sizes" in d:
        d["size"] = d.pop("sizes")
    return make_spec(**d)


# --------------------------------------------------------------------------
# The spec's properties
# --------------------------------------------------------------------------


def l2_len(spec: Spec) -> int:
    """Ethernet header length, with the VLAN tag when there is one."""
    return ETH_LEN + (VLAN_LEN if spec.vlan is not None else 0)


def distinct_sizes(spec: Spec) -> List[int]:
    """Distinct frame sizes (FCS included), in the order `frames` prints them."""
    if spec.size == "imix":
        return [s for s, _ in IMIX_SIZES]
    return [int(spec.size)]


def size_weights(spec: Spec) -> List[Tuple[int, int]]:
    """(size, weight) pairs: the IMIX weights, or the one size with weight 1."""
    if spec.size == "imix":
        return list(IMIX_SIZES)
    return [(int(spec.size), 1)]


def mean_frame_size(spec: Spec) -> float:
    """Mean frame size with FCS (IMIX: 4342 / 12 = 361.83)."""
    if spec.size == "imix":
        return sum(IMIX_PATTERN) / len(IMIX_PATTERN)
    return float(spec.size)


def _base_and_max(spec: Spec, f: str) -> Tuple[int, int]:
    if f == "src-ip":
        return int(ipaddress.IPv4Address(spec.src_ip)), 0xFFFFFFFF
    if f == "dst-ip":
        return int(ipaddress.IPv4Address(spec.dst_ip)), 0xFFFFFFFF
    if f == "src-port":
        return spec.src_port, 0xFFFF
    if f == "dst-port":
        return spec.dst_port, 0xFFFF
    raise SpecError(f"flow field '{f}': expected one of src-ip, dst-ip, src-port, dst-port")


def validate(spec: Spec) -> None:
    """Check the spec as `TrafficSpec::validate` does; raise SpecError."""
    if spec.flows < 1:
        raise SpecError("flows must be at least 1")
    if spec.vlan is not None and not 0 <= spec.vlan <= 4095:
        raise SpecError(f"VLAN id {spec.vlan} is outside 0..=4095")
    for f in spec.vary:
        parse_field(f)
    headers = FCS_LEN + l2_len(spec) + IPV4_LEN + UDP_LEN + SIGNATURE_LEN
    for s in distinct_sizes(spec):
        if not MIN_FRAME_SIZE <= s <= MAX_FRAME_SIZE or s < headers:
            raise SpecError(
                f"frame size {s} is outside {MIN_FRAME_SIZE}..={MAX_FRAME_SIZE} "
                "(bytes, FCS included)"
            )
    last = spec.flows - 1
    for f in spec.vary:
        base, top = _base_and_max(spec, f)
        if base + last > top:
            raise SpecError(
                f"{spec.flows} flows varied over {f} from {base} run past {top}: "
                "lower the base or the flow count"
            )


def flow_tuple(spec: Spec, flow: int) -> Tuple[str, str, int, int]:
    """(source address, destination address, source port, destination port)
    of flow `flow` (0-based)."""
    if not 0 <= flow < spec.flows:
        raise SpecError(f"flow {flow} is outside 0..{spec.flows}")

    def add(f: str) -> int:
        return flow if f in spec.vary else 0

    src = ipaddress.IPv4Address(int(ipaddress.IPv4Address(spec.src_ip)) + add("src-ip"))
    dst = ipaddress.IPv4Address(int(ipaddress.IPv4Address(spec.dst_ip)) + add("dst-ip"))
    return str(src), str(dst), spec.src_port + add("src-port"), spec.dst_port + add("dst-port")


def field_offsets(spec: Spec) -> Dict[str, Tuple[int, int]]:
    """Byte offset and width of each header field a flow can vary, from the
    frame start (what the TRex field engine writes)."""
    ip = l2_len(spec)
    udp = ip + IPV4_LEN
    return {
        "src-ip": (ip + 12, 4),
        "dst-ip": (ip + 16, 4),
        "src-port": (udp, 2),
        "dst-port": (udp + 2, 2),
    }


@dataclass(frozen=True)
class FlowVar:
    """One field-engine variable: `name` runs min..=max, one step a packet,
    written big-endian at `offset` (`size` bytes)."""

    name: str
    field: str
    offset: int
    size: int
    min_value: int
    max_value: int


def field_engine_vars(spec: Spec) -> List[FlowVar]:
    """The flow variables that make packet k of a stream carry flow k mod N:
    one per varied field, base..=base+N-1. None for a single flow (nothing
    varies then)."""
    if spec.flows <= 1:
        return []
    offs = field_offsets(spec)
    out = []
    for f in dict.fromkeys(spec.vary):  # unique, in order
        base, _ = _base_and_max(spec, f)
        off, width = offs[f]
        out.append(
            FlowVar(
                name=f.replace("-", "_"),
                field=f,
                offset=off,
                size=width,
                min_value=base,
                max_value=base + spec.flows - 1,
            )
        )
    return out


def spec_dict(spec: Spec) -> Dict:
    """The spec as fastpath-bench serializes `TrafficSpec` to JSON."""
    return {
        "sizes": str(spec.size),
        "flows": spec.flows,
        "vary": list(spec.vary),
        "vlan": spec.vlan,
        "src_mac": spec.src_mac,
        "dst_mac": spec.dst_mac,
        "src_ip": spec.src_ip,
        "dst_ip": spec.dst_ip,
        "src_port": spec.src_port,
        "dst_port": spec.dst_port,
    }


def describe(spec: Spec) -> str:
    """One line for tables: `64 B, 1024 flows (src-ip,src-port), VLAN 10`."""
    sizes = "IMIX 7:4:1 (64/594/1518 B)" if spec.size == "imix" else f"{spec.size} B"
    s = f"{sizes}, {spec.flows} flows"
    if spec.flows > 1 and spec.vary:
        s += f" ({','.join(spec.vary)})"
    if spec.vlan is not None:
        s += f", VLAN {spec.vlan}"
    return s


def cli_args(spec: Spec) -> List[str]:
    """The `fastpath-bench frames` (or `run` / `search`) arguments of the spec.
    The Rust CLI cannot say "vary nothing"; such a spec only has a CLI form
    with one flow, where what varies makes no difference to the bytes."""
    vary = list(spec.vary)
    if not vary:
        if spec.flows != 1:
            raise SpecError(
                "a spec that varies no field has no fastpath-bench command line "
                "unless it has one flow"
            )
        vary = list(DEFAULT_VARY)
    args = ["--size", str(spec.size), "--flows", str(spec.flows), "--vary", ",".join(vary)]
    if spec.vlan is not None:
        args += ["--vlan", str(spec.vlan)]
    args += [
        "--src-mac", spec.src_mac,
        "--dst-mac", spec.dst_mac,
        "--src-ip", spec.src_ip,
        "--dst-ip", spec.dst_ip,
        "--src-port", str(spec.src_port),
        "--dst-port", str(spec.dst_port),
    ]
    return args


# --------------------------------------------------------------------------
# Frames (scapy)
# --------------------------------------------------------------------------


def _scapy():
    try:
        from scapy.layers.inet import IP, UDP
        from scapy.layers.l2 import Dot1Q, Ether
        from scapy.packet import Raw
    except ImportError as e:  # pragma: no cover - message for the user
        raise ImportError(
            f"scapy is needed to build frames ({e}): run bench/trex/setup-venv and use "
            "the python it prints, or pip install -r bench/trex/requirements.txt"
        ) from e
    return Ether, Dot1Q, IP, UDP, Raw


def build_packet(spec: Spec, size: int, flow: int):
    """The scapy packet of flow `flow` at frame size `size` (FCS included);
    lengths and checksums are left to scapy."""
    if size not in distinct_sizes(spec):
        raise SpecError(f"frame size {size} is not one of the spec's {distinct_sizes(spec)}")
    Ether, Dot1Q, IP, UDP, Raw = _scapy()
    src, dst, sport, dport = flow_tuple(spec, flow)
    payload = size - FCS_LEN - l2_len(spec) - IPV4_LEN - UDP_LEN
    pkt = Ether(dst=spec.dst_mac, src=spec.src_mac)
    if spec.vlan is not None:
        # PCP 0, DEI 0 are scapy's defaults (the DEI field was renamed across
        # scapy versions, so it is left at its default rather than named).
        pkt = pkt / Dot1Q(prio=0, vlan=spec.vlan)
    pkt = (
        pkt
        / IP(version=4, ihl=5, tos=0, id=0, flags="DF", frag=0, ttl=64, proto=17, src=src, dst=dst)
        / UDP(sport=sport, dport=dport)
        / Raw(load=bytes(payload))
    )
    return pkt


def build_frame(spec: Spec, size: int, flow: int) -> bytes:
    """The frame bytes (no FCS) of flow `flow` at size `size`: what
    `fastpath-bench frames` prints for the same spec, size and flow."""
    return bytes(build_packet(spec, size, flow))


# --------------------------------------------------------------------------
# The specs the profiles are checked against
# --------------------------------------------------------------------------

STANDARD_SPECS: List[Spec] = [
    # The fastpath-bench defaults.
    Spec(),
    Spec(size=64, flows=1024),
    Spec(size=64, flows=256, vary=FIELDS, vlan=100),
    Spec(size=64, flows=4096, vary=("dst-ip",)),
    Spec(size=128, flows=300, vary=("dst-ip", "dst-port")),
    Spec(size=128, flows=64, vary=("src-port",), vlan=0),
    Spec(size=512, flows=100, vary=("src-ip", "dst-ip"), vlan=4095),
    Spec(size=512, flows=2, vary=("dst-port",)),
    Spec(size=1518, flows=1000, vary=("src-ip", "src-port")),
    Spec(size=1518, flows=16, vary=FIELDS, vlan=10),
    Spec(size="imix", flows=128),
    Spec(size="imix", flows=64, vary=FIELDS, vlan=10),
    # Odd size, other bases: carries across address octets, high ports,
    # other MACs.
    Spec(
        size=333,
        flows=600,
        vary=FIELDS,
        src_mac="aa:bb:cc:00:11:22",
        dst_mac="3c:fd:fe:9e:a0:01",
        src_ip="10.0.0.200",
        dst_ip="10.1.255.250",
        src_port=60000,
        dst_port=64000,
    ),
]

for _s in STANDARD_SPECS:
    validate(_s)
del _s


__all__ = [
    "Spec", "SpecError", "FlowVar", "STANDARD_SPECS", "FIELDS", "DEFAULT_VARY",
    "IMIX_PATTERN", "IMIX_SIZES", "make_spec", "spec_from_dict", "validate",
    "parse_size", "parse_vary", "parse_field", "parse_mac", "parse_ipv4",
    "distinct_sizes", "size_weights", "mean_frame_size", "l2_len", "flow_tuple",
    "field_offsets", "field_engine_vars", "spec_dict", "describe", "cli_args",
    "build_packet", "build_frame",
]
