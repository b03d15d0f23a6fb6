#!/usr/bin/env bash
# The hooks benchmark's cases in IPv6 beside the same cases in IPv4, alternated in one
# run: the rates of the IPv6 rows and their ratio to the IPv4 ones.
#
# Each case (N) is the hooks benchmark's (`fastpath-bench hooks`: its config, its pcap);
# (Nv6) is that case turned to IPv6 by bench/to-ipv6.py --keep-size (every IPv4 address of
# the rules, the route and the traffic moved into bits 32..64 of 2001:db8::/32, so the
# rules keep their shape and match what they matched; each frame keeps its size, 64-byte
# frames becoming the least IPv6/UDP frame, 66 bytes). fastpath replays the pcap from
# memory (net_pcap0, infinite_rx) and routes it out of net_null0, one worker core, with
# default settings; the rate of a run is port 1's opackets over SECS seconds, read from
# DPDK's telemetry socket (bench/telemetry.py, as bench/l3fwd-peer.sh). Each round runs
# every case in IPv4 then IPv6, the order of the two swapped every other round; the last
# line gives the medians.
#
#   bench/hooks-ipv6.sh                    # (4b) and (6): classify + filter and the
#                                          # stateful filter on 100,000 flows, 5 rounds
#   CASES=4,4b,6 ROUNDS=3 bench/hooks-ipv6.sh
#   FP=/path/to/other/fastpath bench/hooks-ipv6.sh
#   MEM="--no-huge -m 2048" bench/hooks-ipv6.sh   # EAL memory (default: bench/eal-mem.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
FP=$(realpath "${FP:-target/release/fastpath}")
BENCH=$(realpath "${BENCH:-target/release/fastpath-bench}")
ROUNDS=${ROUNDS:-5}
SECS=${SECS:-4}
CASES=${CASES:-4b,6}
# shellcheck source=bench/eal-mem.sh
. bench/eal-mem.sh
# shellcheck source=bench/common.sh
. bench/common.sh
for b in "$FP" "$BENCH"; do
    [ -x "$b" ] || { echo "error: $b is not an executable (cargo build --release first)" >&2; exit 1; }
done
dir=$(mktemp -d /tmp/fp-hooks-ipv6.XXXXXX)
runtime=/var/run/dpdk
[ "$(id -u)" -eq 0 ] || runtime=${XDG_RUNTIME_DIR:-/tmp}/dpdk
trap 'rm -rf "$dir" "$runtime"/hooks6-$$' EXIT

# Each case's config and pcap, as the hooks benchmark writes them (with its baselines,
# which are left out here: the IPv4 row is the baseline of the IPv6 one).
"$BENCH" hooks --cases "$CASES" --configs "$dir" >"$dir/all-cases"
: >"$dir/cases"
for c in $(echo "$CASES" | tr ',' ' '); do
    read -r _ config pcap < <(grep "^($c) " "$dir/all-cases") ||
        { echo "error: the hooks benchmark has no case ($c)" >&2; exit 1; }
    slug=$(basename "$config" .toml)
    python3 bench/to-ipv6.py --keep-size "$config" "$pcap" "$dir/$slug-v6.toml" "$dir/$slug-v6.pcap"
    echo "$c $config $pcap $dir/$slug-v6.toml $dir/$slug-v6.pcap" >>"$dir/cases"
done

# Every hook of a run's exit report (its "hooks:" section) saw packets and dropped none:
# the IPv6 turn of a case passes every hook as the IPv4 case does, so neither row gains
# from drops.
check_hooks() {
    awk '
        $0 == "hooks:" { on = 1; next }
        on && !/^  / { on = 0 }
        on {
            n++; seen = 0; dropped = 0
            k = split(substr($0, index($0, "): ") + 3), kv, ", ")
            for (i = 1; i <= k; i++) {
                split(kv[i], w, " ")
                if (w[1] == "seen") seen = w[2]
                if (w[1] == "dropped") dropped = w[2]
            }
            if (seen == 0 || dropped != 0) { print "error: " $0 > "/dev/stderr"; bad = 1 }
        }
        END { if (n == 0) print "error: no hooks in the exit report" > "/dev/stderr"; exit (bad || n == 0) }
    ' "$1" || { echo "error: a hook saw nothing or dropped packets (log above)" >&2; exit 1; }
}

# Port 1's transmit rate (Mpps) of fastpath on config $1 and pcap $2, over SECS seconds.
# The pool holds every frame of the pcap (net_pcap keeps them in mbufs) and 65,536 more,
# as the hooks benchmark sizes it.
run() {
    local mbufs r
    mbufs=$(python3 -c "import sys; n = int(sys.argv[1]) + 65536; print(max(16383, (1 << (n - 1).bit_length()) - 1))" "$(frames_of "$2")")
    read -ra mem <<<"$MEM"
    r=$(rate_of_run "hooks6-$$" "$dir/run.log" "$FP" -l 0-1 --no-pci "${mem[@]}" \
        --log-level lib.eal:error --file-prefix "hooks6-$$" \
        --vdev "net_pcap0,rx_pcap=$2,infinite_rx=1" --vdev net_null0,no-rx=1 -- \
        --config "$1" --mbufs "$mbufs" --stats-period 0) || exit 1
    check_hooks "$dir/run.log"
    echo "$r"
}

echo "EAL memory: $MEM; $ROUNDS rounds of $SECS s; cases $CASES"
echo
echo "| round | case | IPv4 Mpps | IPv6 Mpps | IPv6 / IPv4 |"
echo "|---:|---|---:|---:|---:|"
rows=$dir/rows
for r in $(seq 1 "$ROUNDS"); do
    while read -r c config pcap config6 pcap6; do
        if [ $((r % 2)) -eq 1 ]; then
            v4=$(run "$config" "$pcap")
            v6=$(run "$config6" "$pcap6")
        else
            v6=$(run "$config6" "$pcap6")
            v4=$(run "$config" "$pcap")
        fi
        awk -v r="$r" -v c="$c" -v a="$v4" -v b="$v6" \
            'BEGIN { printf "| %d | (%s) | %.2f | %.2f | %.3f |\n", r, c, a, b, b/a }' | tee -a "$rows"
    done <"$dir/cases"
done
# The median of column $2 over the rounds of case $1.
median() {
    grep -F "| ($1) |" "$rows" | awk -F'|' -v c="$2" '{ print $c + 0 }' | sort -g |
        awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
while read -r c _; do
    printf '| median | (%s) | %.2f | %.2f | **%.3f** |\n' "$c" "$(median "$c" 4)" "$(median "$c" 5)" "$(median "$c" 6)"
done <"$dir/cases"
