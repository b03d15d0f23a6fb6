#!/usr/bin/env bash
# Drop capture's cost on the router's no-hooks path: the benchmark's routed traffic
# (pcap replay on net_pcap0 -> static route -> net_null0, 64-byte frames, 64 flows)
# with 1 % of the frames at TTL 1 (dropped: over the punt budget, or answered by the
# control plane), run with --capture-drops and without, alternated; the median input
# rate of each run and the median over runs. Prints a Markdown table.
#
#   bench/capture-cost.sh                 # release binaries of this workspace
#   ROUNDS=7 SECS=8 bench/capture-cost.sh
set -euo pipefail
cd "$(dirname "$0")/.."
FP=${FP:-target/release/fastpath}
BENCH=${BENCH:-target/release/fastpath-bench}
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-6}
# Capture files and pcaps live in memory: a run writes ~30 MB per second.
dir=$(mktemp -d /dev/shm/fp-capture-cost.XXXXXX)
# fastpath removes its EAL runtime folder at a clean exit; this one is for a killed run.
runtime=/var/run/dpdk
[ "$(id -u)" -eq 0 ] || runtime=${XDG_RUNTIME_DIR:-/tmp}/dpdk
trap 'rm -rf "$dir" "$runtime"/capcost-$$' EXIT

"$BENCH" pcap --out "$dir/udp.pcap" --size 64 --count 4000 --flows 64 \
    --router-config "$dir/router.toml" >/dev/null
# Every 100th frame: TTL 1 and its header checksum refilled.
python3 - "$dir/udp.pcap" <<'EOF'
import struct, sys
path = sys.argv[1]
b = bytearray(open(path, "rb").read())
off, i = 24, 0
while off < len(b):
    incl = struct.unpack_from("<I", b, off + 8)[0]
    f = off + 16
    if i % 100 == 99:
        b[f + 22] = 1
        b[f + 24:f + 26] = b"\0\0"
        s = sum(struct.unpack_from(">10H", b, f + 14))
        s = (s & 0xFFFF) + (s >> 16)
        s = (s & 0xFFFF) + (s >> 16)
        struct.pack_into(">H", b, f + 24, ~s & 0xFFFF)
    off, i = f + incl, i + 1
open(path, "wb").write(b)
EOF

# One run; prints "MPPS WRITTEN OVER_RATE LOST DROPPED RX" (the median of the per-second
# input rates after the first second, and the run's final counters).
run() {
    local extra=()
    if [ "$1" = on ]; then
        extra=(--capture-drops "$dir/drops.pcapng" --capture-max-bytes 1G)
    fi
    "$FP" -l 0-1 --no-pci --log-level lib.eal:error --file-prefix "capcost-$$" --no-huge -m 1024 \
        --vdev "net_pcap0,rx_pcap=$dir/udp.pcap,infinite_rx=1" --vdev net_null0,no-rx=1 \
        -- --config "$dir/router.toml" --stats-period 1 --mbufs 16383 \
        --duration $((SECS + 1)) --stats-json "$dir/stats.json" "${extra[@]}" \
        >"$dir/out.txt" 2>"$dir/err.txt"
    local mpps
    mpps=$(sed -n 's/.*port 0 rx-pps \([0-9]*\).*/\1/p' "$dir/out.txt" | tail -n +2 | sort -n |
        awk '{a[NR] = $1} END {printf "%.2f", a[int((NR + 1) / 2)] / 1e6}')
    python3 - "$dir/stats.json" "$mpps" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1]))
c = (s.get("captures") or [{}])[0]
t = s["totals"]
print(sys.argv[2], c.get("written", 0), c.get("over_rate", 0), c.get("capture_lost", 0),
      t["dropped"], t["rx"])
EOF
    rm -f "$dir/drops.pcapng"
}

median() { sort -n | awk '{a[NR] = $1} END {printf "%.2f", a[int((NR + 1) / 2)]}'; }

echo "| round | capture off Mpps | capture on Mpps | on / off | written | over rate | lost | dropped / rx |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
offs=() ons=() ratios=()
for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) -eq 1 ]; then
        off=$(run off); on=$(run on)
    else
        on=$(run on); off=$(run off)
    fi
    read -r off_mpps _ <<<"$off"
    read -r on_mpps written over lost dropped rx <<<"$on"
    ratio=$(awk -v a="$on_mpps" -v b="$off_mpps" 'BEGIN {printf "%.3f", a / b}')
    share=$(awk -v d="$dropped" -v r="$rx" 'BEGIN {printf "%.2f %%", 100 * d / r}')
    offs+=("$off_mpps") ons+=("$on_mpps") ratios+=("$ratio")
    echo "| $r | $off_mpps | $on_mpps | $ratio | $written | $over | $lost | $share |"
done
echo
echo "median: capture off $(printf '%s\n' "${offs[@]}" | median) Mpps, capture on" \
    "$(printf '%s\n' "${ons[@]}" | median) Mpps, on / off $(printf '%s\n' "${ratios[@]}" | median)"
