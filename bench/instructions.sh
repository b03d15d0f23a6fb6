#!/usr/bin/env bash
# Instructions per packet of the router's pipeline entry (`Pipeline::process`), counted
# by callgrind: exact and repeatable where this VM's rates swing by +-25 %. The cases
# are the hooks benchmark's (`fastpath-bench hooks`: its configs, its pcaps), replayed
# once from net_pcap0 into net_null0 with --no-huge.
#
# Two figures per case, from a run over the traffic's frames N times and one over them
# 2N times (N: 16 for the 1,024 frames of 64 flows, 1 for the 100,000 of 100,000 flows):
#   first  the inclusive count of the N-times run over its packets: what docs/ and
#          bench/RESULTS.md have quoted (the first pass fills caches and, with
#          connection tracking, inserts every flow);
#   steady the difference of the two runs over the packets of the second half: every
#          flow already seen, as in the benchmark's endless replay.
#
#   bench/instructions.sh                        # cases 1,4,1b,4b,6 of this workspace
#   CASES=4,6 bench/instructions.sh
#   CASES=1,v6 bench/instructions.sh             # (v6): case (1) in IPv6, see below
#   CASES=4,4v6,6,6v6 bench/instructions.sh      # (Nv6): case (N) turned to IPv6, see below
#   BASE=/path/to/other/fastpath bench/instructions.sh   # adds that build's columns
#
# About one to three minutes per run, two runs at a time; needs valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
FP=${FP:-target/release/fastpath}
BENCH=${BENCH:-target/release/fastpath-bench}
CASES=${CASES:-1,4,1b,4b,6}
BASE=${BASE:-}
command -v valgrind >/dev/null || { echo "error: valgrind is not installed (apt-get install valgrind)" >&2; exit 1; }
for b in "$FP" "$BENCH" ${BASE:+"$BASE"}; do
    [ -x "$b" ] || { echo "error: $b is not an executable (cargo build --release first)" >&2; exit 1; }
done
FP=$(realpath "$FP")
[ -z "$BASE" ] || BASE=$(realpath "$BASE")
dir=$(mktemp -d /tmp/fp-instructions.XXXXXX)
# fastpath removes its EAL runtime folder at a clean exit; these are for killed runs.
runtime=/var/run/dpdk
[ "$(id -u)" -eq 0 ] || runtime=${XDG_RUNTIME_DIR:-/tmp}/dpdk
trap 'rm -rf "$dir" "$runtime"/ins$$-*' EXIT

# (v6) is this script's own: case (1)'s setup in IPv6 (64 flows, 1,024 frames of 62
# bytes, the least a UDP datagram takes in IPv6, routed by a /48 to a static neighbour
# out of net_null0). Not run on BASE: a build that does not forward IPv6 would count
# its drops.
# (Nv6), for a case N of the hooks benchmark, is that case turned to IPv6 by
# bench/to-ipv6.py: every IPv4 address of its rules, route and traffic goes into bits
# 32..64 of 2001:db8::/32, so rules keep their shape, the traffic matches what it matched
# and the route is a /48 as in (v6); the ports get IPv6 addresses and the route's next hop
# an IPv6 neighbour. Frames grow by 20 bytes (the IPv6 header); protocols, ports, DSCP and
# the TTL (as the hop limit) stay. Not run on BASE either.
bench_cases=$(echo "$CASES" | tr ',' '\n' | { grep -vx v6 || true; } | sed 's/v6$//' |
    sort -u | paste -sd, -)
: >"$dir/cases"
: >"$dir/all-cases"
[ -z "$bench_cases" ] || "$BENCH" hooks --cases "$bench_cases" --configs "$dir" >"$dir/all-cases"
for c in $(echo "$CASES" | tr ',' ' '); do
    [ "$c" = v6 ] && continue
    base=${c%v6}
    line=$(grep "^($base) " "$dir/all-cases" || true)
    [ -n "$line" ] || { echo "error: the hooks benchmark has no case ($base)" >&2; exit 1; }
    if [ "$c" = "$base" ]; then
        echo "$line" >>"$dir/cases"
    else
        read -r _ config pcap <<<"$line"
        slug=$(basename "$config" .toml)
        python3 bench/to-ipv6.py "$config" "$pcap" "$dir/$slug-v6.toml" "$dir/$slug-v6.pcap"
        echo "($c) $dir/$slug-v6.toml $dir/$slug-v6.pcap" >>"$dir/cases"
    fi
done
if echo ",$CASES," | grep -q ",v6,"; then
    cat >"$dir/ipv6-64flows.toml" <<'EOF'
# case (1) in IPv6: pcap replay -> route -> null
[[port]]
device = "net_pcap0"
address = "10.255.0.1/24"
ipv6 = ["2001:db8:ff00::1/64"]

[[port]]
device = "net_null0"
address = "10.255.1.1/24"
ipv6 = ["2001:db8:ff01::1/64"]

[[route]]
prefix = "2001:db8:19::/48"
via = "2001:db8:ff01::2"

[[neighbour]]
address = "2001:db8:ff01::2"
mac = "02:00:00:00:00:99"
EOF
    python3 - "$dir/ipv6-64flows.pcap" <<'EOF'
import struct, sys
# 2001:db8:18::1 -> 2001:db8:19::1, UDP from port 1024 + i % 64 to 9, to net_pcap0's MAC.
src = bytes.fromhex("20010db8001800000000000000000001")
dst = bytes.fromhex("20010db8001900000000000000000001")
out = [struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1)]
for i in range(1024):
    udp = struct.pack("!HHHH", 1024 + i % 64, 9, 8, 0)
    ip = bytes([0x60, 0, 0, 0]) + struct.pack("!HBB", 8, 17, 64) + src + dst
    f = bytes.fromhex("027063617000" "020000000001" "86dd") + ip + udp
    out.append(struct.pack("<IIII", 0, i, len(f), len(f)) + f)
open(sys.argv[1], "wb").write(b"".join(out))
EOF
    echo "(v6) $dir/ipv6-64flows.toml $dir/ipv6-64flows.pcap" >>"$dir/cases"
fi

# The pcap's frames repeated `times` times, into `out`.
repeat_pcap() {
    python3 - "$1" "$2" "$3" <<'EOF'
import sys
src, times, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
b = open(src, "rb").read()
open(out, "wb").write(b[:24] + b[24:] * times)
EOF
}

# Inclusive instructions of Pipeline::process and the packets received, of one run.
# Under callgrind a frame takes about 0.2 ms: the run lasts long enough for every one.
count() { # BIN CONFIG PCAP OUT FRAMES
    local dur=$((30 + $5 / 4000))
    valgrind --tool=callgrind --callgrind-out-file="$4" "$1" -l 0-1 --no-huge -m 1024 \
        --no-pci --file-prefix "ins$$-$(basename "$4")" --log-level lib.eal:error \
        --vdev "net_pcap0,rx_pcap=$3" --vdev net_null0,no-rx=1 -- --config "$2" \
        --duration $dur >"$4.log" 2>&1
    local ir rx
    # Run outside the source tree: under it, callgrind_annotate shortens the
    # paths and leaves out the binary of each function.
    ir=$(cd "$dir" && callgrind_annotate --inclusive=yes --threshold=100 "$4" 2>/dev/null |
        grep 'datapath/mod.rs:fastpath::datapath::Pipeline::process \[' |
        awk '{gsub(",", "", $1); print $1}' | sort -n | tail -1)
    rx=$(awk '$2 == "net_pcap0" && $1 == "0" {print $3; exit}' "$4.log")
    echo "${ir:-0} ${rx:-0}"
}

# frames_of: the number of frames of a pcap.
# shellcheck source=bench/common.sh
. bench/common.sh

run_case() { # BIN TAG LABEL CONFIG PCAP_N PCAP_2N PACKETS_N
    local slug i1 r1 i2 r2
    slug=$(basename "$4" .toml)
    read -r i1 r1 < <(count "$1" "$4" "$5" "$dir/$2-$slug-1" "$7")
    read -r i2 r2 < <(count "$1" "$4" "$6" "$dir/$2-$slug-2" $((2 * $7)))
    if [ "$r1" -ne "$7" ] || [ "$r2" -ne $((2 * $7)) ] || [ "$i1" -eq 0 ]; then
        echo "$3 ($2): received $r1 and $r2 of $7 and $((2 * $7)) frames" \
            "(instructions $i1, $i2); logs in $dir/$2-$slug-*.log" >>"$dir/failed"
        return
    fi
    python3 -c "import sys; i1,i2,p=map(int,sys.argv[1:]); print('%.2f %.2f'%(i1/p,(i2-i1)/p))" \
        "$i1" "$i2" "$7" >"$dir/$2-$slug.result"
}

while read -r label config pcap; do
    frames=$(frames_of "$pcap")
    n=$(( frames < 16384 ? 16384 / frames : 1 ))
    p1="$dir/$(basename "$pcap" .pcap)-x$n.pcap"
    p2="$dir/$(basename "$pcap" .pcap)-x$((2 * n)).pcap"
    [ -f "$p1" ] || repeat_pcap "$pcap" $n "$p1"
    [ -f "$p2" ] || repeat_pcap "$pcap" $((2 * n)) "$p2"
    run_case "$FP" this "$label" "$config" "$p1" "$p2" $((n * frames)) &
    if [ -n "$BASE" ] && [[ "$label" != *v6\) ]]; then
        run_case "$BASE" base "$label" "$config" "$p1" "$p2" $((n * frames)) &
    fi
    # Two at a time (this machine's two cores).
    while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
done <"$dir/cases"
wait
if [ -e "$dir/failed" ]; then
    trap 'rm -rf "$runtime"/ins$$-*' EXIT
    echo "error: a run did not count every frame:" >&2
    cat "$dir/failed" >&2
    exit 1
fi

if [ -n "$BASE" ]; then
    echo "| case | base, first | base, steady | this, first | this, steady |"
    echo "|---|---:|---:|---:|---:|"
else
    echo "| case | first | steady |"
    echo "|---|---:|---:|"
fi
while read -r label config pcap; do
    slug=$(basename "$config" .toml)
    read -r f s <"$dir/this-$slug.result"
    if [ -n "$BASE" ]; then
        bf=-; bs=-
        [[ "$label" == *v6\) ]] || read -r bf bs <"$dir/base-$slug.result"
        echo "| $label | $bf | $bs | $f | $s |"
    else
        echo "| $label | $f | $s |"
    fi
done <"$dir/cases"
