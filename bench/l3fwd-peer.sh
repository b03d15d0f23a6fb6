#!/usr/bin/env bash
# The router beside DPDK's own reference router, examples/l3fwd (LPM, SSE, four packets
# at a time), and testpmd io, on the same virtual devices: 64-byte frames of 64 flows
# (the router benchmark's base row) replayed from memory by net_pcap0 (infinite_rx),
# routed out of net_null0.
# One worker core each, hugepages when the machine has them free (MEM sets the EAL
# memory options, e.g. MEM="--no-huge -m 1024"); the three alternate, ROUNDS rounds. The
# rate of each run is port 1's opackets over SECS seconds, read from DPDK's telemetry
# socket (the same reader for all three), from 1.5 s after the first packets.
#
#   bench/l3fwd-peer.sh                    # 5 rounds
#   ROUNDS=3 SECS=6 bench/l3fwd-peer.sh
#   FP=/path/to/other/fastpath bench/l3fwd-peer.sh
#   PCAP=$CACHE/udp-imix-64flows-1152-<hash>.pcap bench/l3fwd-peer.sh   # another pcap of
#       the benchmark's flows (UDP to 198.19.0.1), e.g. the IMIX one `compare --router` wrote
#   PCAP=$CACHE/udp-64B-100000flows-100000-<hash>.pcap MBUFS=262143 MEM="--no-huge -m 2048" \
#       bench/l3fwd-peer.sh   # 100,000 flows: net_pcap holds every frame in an mbuf; l3fwd
#       sizes its pool by its RX ring, so it gets --rx-queue-size 65535 (at most 2 x 65,535
#       mbufs for its two ports)
#
# l3fwd is built once from Debian's dpdk source package (needs a deb-src line for
# bookworm: the script says so) into $CACHE/l3fwd, with one change: its receive offloads
# are masked with what the device offers (net_pcap offers none; unmasked, l3fwd refuses
# to start). It runs with --parse-ptype (a software packet type, as net_pcap gives none)
# and one route, 198.19.0.0/16 -> port 1, the traffic's destinations.
#
# What l3fwd does per packet, for comparison (DPDK 22.11, DO_RFC_1812_CHECKS): packet
# type from a parse callback; destination from LPM (four per SSE step); version/IHL and
# total length checked; TTL - 1 and checksum + 1 (no checksum verified, TTL not checked
# for expiry); Ethernet addresses from a fixed per-port table. fastpath also verifies the
# checksum, checks the destination MAC and source, expires TTL 1, and writes the header
# of a next hop from its neighbour table.
set -euo pipefail
cd "$(dirname "$0")/.."
FP=$(realpath "${FP:-target/release/fastpath}")
BENCH=$(realpath "${BENCH:-target/release/fastpath-bench}")
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-4}
CACHE=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/fastpath-bench}
# EAL memory: hugepages when at least 1,100 MiB of them are free on a mounted hugetlbfs
# (as `fastpath-bench compare` decides), else --no-huge.
huge_free_mb() {
    awk '/^HugePages_Free:/ { n = $2 } /^Hugepagesize:/ { kb = $2 } END { print int(n * kb / 1024) }' /proc/meminfo
}
if [ -z "${MEM:-}" ]; then
    MEM="--no-huge -m 1024"
    if grep -q ' hugetlbfs ' /proc/mounts && [ "$(huge_free_mb)" -ge 1100 ]; then
        MEM="-m 1024 --huge-unlink"
    fi
fi
MBUFS=${MBUFS:-16383}
l3_ring=()
[ "$MBUFS" -le 16383 ] || l3_ring=(--rx-queue-size 65535)
for b in "$FP" "$BENCH"; do
    [ -x "$b" ] || { echo "error: $b is not an executable (cargo build --release first)" >&2; exit 1; }
done
command -v dpdk-testpmd >/dev/null || { echo "error: dpdk-testpmd not found (apt-get install dpdk)" >&2; exit 1; }
for t in dpkg-source make cc; do
    command -v $t >/dev/null || { echo "error: $t not found (apt-get install dpkg-dev make gcc)" >&2; exit 1; }
done

# DPDK's l3fwd, built from the source of the installed DPDK.
l3fwd=$CACHE/l3fwd/l3fwd
if [ ! -x "$l3fwd" ]; then
    ver=$(pkg-config --modversion libdpdk)
    src=$CACHE/l3fwd-src
    mkdir -p "$src" "$CACHE/l3fwd"
    if [ ! -d "$src/dpdk-$ver" ]; then
        (cd "$src" && apt-get source -q "dpdk=$(dpkg-query -W -f='${Version}' libdpdk-dev)" >/dev/null 2>&1) || {
            echo "error: apt-get source dpdk failed: add 'deb-src' to the Types: line of" >&2
            echo "  /etc/apt/sources.list.d/debian.sources, then apt-get update" >&2
            exit 1
        }
    fi
    ex=$src/dpdk-$ver/examples/l3fwd
    [ -f "$ex/main.c" ] || { echo "error: no $ex/main.c in Debian's dpdk $ver source" >&2; exit 1; }
    grep -q 'rx_offload_capa;$' "$ex/main.c" || {
        sed -i 's/^\(\t\tlocal_port_conf.rx_adv_conf.rss_conf.rss_hf &=\)$/\t\tlocal_port_conf.rxmode.offloads \&= dev_info.rx_offload_capa;\n\1/' "$ex/main.c"
        sed -i 's/rxq_conf.offloads = port_conf.rxmode.offloads;/rxq_conf.offloads = port_conf.rxmode.offloads \& dev_info.rx_offload_capa;/' "$ex/main.c"
    }
    grep -q 'rxmode.offloads &= dev_info.rx_offload_capa' "$ex/main.c" ||
        { echo "error: could not mask l3fwd's receive offloads in $ex/main.c" >&2; exit 1; }
    make -s -C "$ex" shared >/dev/null
    cp "$ex/build/l3fwd-shared" "$l3fwd"
fi

dir=$(mktemp -d /tmp/fp-l3fwd-peer.XXXXXX)
# EAL runtime folders of the three tools (testpmd and l3fwd leave theirs).
runtime=/var/run/dpdk
[ "$(id -u)" -eq 0 ] || runtime=${XDG_RUNTIME_DIR:-/tmp}/dpdk
trap 'rm -rf "$dir" "$runtime"/peer-io-$$ "$runtime"/peer-l3-$$ "$runtime"/peer-fp-$$' EXIT
"$BENCH" pcap --out "$dir/t.pcap" --size 64 --count 1024 --flows 64 --router-config "$dir/router.toml" >/dev/null
if [ -n "${PCAP:-}" ]; then
    [ -r "$PCAP" ] || { echo "error: PCAP=$PCAP is not a readable file" >&2; exit 1; }
    cp "$PCAP" "$dir/t.pcap"
fi
printf 'R198.19.0.0/16 1\n' >"$dir/v4.cfg"
printf 'R2001:db8::/32 1\n' >"$dir/v6.cfg"

# Port 1's transmit rate (Mpps) of process $2 with file prefix $1, over SECS seconds.
rate() {
    python3 - "$1" "$SECS" "$2" <<'EOF'
import json, os, socket, sys, time
prefix, secs, pid = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
path = f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2"
deadline = time.monotonic() + 30
while True:
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.connect(path)
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit(f"no telemetry socket at {path}")
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            sys.exit(f"process {pid} ({prefix}) exited before it opened {path}")
        time.sleep(0.1)
json.loads(s.recv(4096))
def sent():
    s.send(b"/ethdev/stats,1")
    stats = json.loads(s.recv(65536)).get("/ethdev/stats") or {}
    return stats.get("opackets", 0), time.monotonic()
while sent()[0] == 0:
    if time.monotonic() > deadline:
        sys.exit("port 1 sent nothing")
    time.sleep(0.05)
time.sleep(1.5)
a, t0 = sent()
time.sleep(secs)
b, t1 = sent()
print(f"{(b - a) / (t1 - t0) / 1e6:.2f}")
EOF
}

# Run one tool (file prefix $1, its command after) and print its rate.
run() {
    local pre=$1
    shift
    "$@" >"$dir/$pre.log" 2>&1 &
    local pid=$! r rc=0
    r=$(rate "$pre" $pid) || {
        kill -INT $pid 2>/dev/null || true
        wait $pid || true
        cat "$dir/$pre.log" >&2
        exit 1
    }
    kill -INT $pid
    wait $pid || rc=$?
    [ "$rc" -eq 0 ] || { cat "$dir/$pre.log" >&2; echo "error: $1 exited with $rc" >&2; exit 1; }
    echo "$r"
}

vdev=(--vdev "net_pcap0,rx_pcap=$dir/t.pcap,infinite_rx=1" --vdev "net_null0,no-rx=1")
read -ra mem <<<"$MEM"
eal=(--no-pci "${mem[@]}" --log-level lib.eal:error)
echo "EAL memory: $MEM"
echo
echo "| round | testpmd io Mpps | l3fwd Mpps | fastpath Mpps | l3fwd / io | fastpath / io | fastpath / l3fwd |"
echo "|---:|---:|---:|---:|---:|---:|---:|"
rows=$dir/rows
for r in $(seq 1 "$ROUNDS"); do
    io=$(run "peer-io-$$" dpdk-testpmd -l 0-1 "${eal[@]}" --file-prefix "peer-io-$$" "${vdev[@]}" -- \
        --forward-mode=io --nb-cores=1 --total-num-mbufs "$MBUFS" -a --stats-period 1)
    l3=$(run "peer-l3-$$" "$l3fwd" -l 1 "${eal[@]}" --file-prefix "peer-l3-$$" "${vdev[@]}" -- \
        -p 0x3 --config "(0,0,1)" --parse-ptype --rule_ipv4 "$dir/v4.cfg" --rule_ipv6 "$dir/v6.cfg" "${l3_ring[@]}")
    fp=$(run "peer-fp-$$" "$FP" -l 0-1 "${eal[@]}" --file-prefix "peer-fp-$$" "${vdev[@]}" -- \
        --config "$dir/router.toml" --mbufs "$MBUFS" --stats-period 0)
    awk -v r="$r" -v io="$io" -v l3="$l3" -v fp="$fp" \
        'BEGIN { printf "| %d | %.2f | %.2f | %.2f | %.3f | %.3f | %.3f |\n", r, io, l3, fp, l3/io, fp/io, fp/l3 }' |
        tee -a "$rows"
done
# The median of each column over the rounds.
median() { awk -F'|' -v c="$1" '{ print $c + 0 }' "$rows" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
printf '| median | %.2f | %.2f | %.2f | **%.3f** | **%.3f** | **%.3f** |\n' \
    "$(median 3)" "$(median 4)" "$(median 5)" "$(median 6)" "$(median 7)" "$(median 8)"
