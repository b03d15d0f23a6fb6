#!/usr/bin/env bash
# A full IPv4 table installed over FPM while the router forwards: the router
# benchmark's traffic (64 flows of 64-byte frames to 198.19.0.0/16, replayed by
# net_pcap0, routed out of net_null0 by the config's route) runs, and
# `fastpath-bench fpm-replay` plays zebra: ROUTES generated prefixes with the
# Internet table's lengths (none covering the traffic's), one route a frame, over
# two gateways. Says:
#   - the time from the replayer's start (its table is made in 0.1 s, then it
#     connects) to the last route in the FIB (`ctl show fpm`: routes_added), and
#     routes per second;
#   - the forwarding rate (port 1's opackets from DPDK telemetry, every 0.1 s) over
#     the seconds before the install and during it, and their ratio;
#   - packets lost: every drop by reason from the exit report, but those still in
#     the devices' queues at exit (the traffic's prefix never changes: none may be
#     lost);
#   - memory: DPDK heap in use (telemetry /eal/heap_info) and the process's RSS,
#     before and after.
#
#   bench/fpm-install.sh                      # 1,000,000 routes
#   ROUTES=200000 bench/fpm-install.sh
#   IPV6=1 ROUTES=20000 bench/fpm-install.sh  # IPv6 routes (--fib6-routes sized
#                                             # for them: up to 6 KiB of DPDK memory each)
#
# One worker lcore and the control lcore (-l 0-1), hugepages when at least 1,100 MiB
# are free (else MEM="--no-huge -m 1024"), --fib-routes sized for the table. The
# harness (replayer, sampler, the polls of `ctl show fpm`) runs on CPU 0 beside the
# control lcore, as a deployment keeps the workers' cores to themselves: left to the
# scheduler, the polls (a process and a parse 20 times a second) landed on the
# worker's CPU during the install only, and took its rate down with them.
set -euo pipefail
cd "$(dirname "$0")/.."
FP=$(realpath "${FP:-target/release/fastpath}")
BENCH=$(realpath "${BENCH:-target/release/fastpath-bench}")
ROUTES=${ROUTES:-1000000}
IPV6=${IPV6:-0}
BEFORE=${BEFORE:-3}
for b in "$FP" "$BENCH"; do
    [ -x "$b" ] || { echo "error: $b is not an executable (cargo build --release first)" >&2; exit 1; }
done
# shellcheck source=bench/eal-mem.sh
. bench/eal-mem.sh
read -ra mem <<<"$MEM"
dir=$(mktemp -d /tmp/fp-fpm-install.XXXXXX)
prefix=fpm-install-$$
fp_pid=
replay_pid=
cleanup() {
    [ -z "$replay_pid" ] || kill "$replay_pid" 2>/dev/null || true
    [ -z "$fp_pid" ] || kill -INT "$fp_pid" 2>/dev/null || true
    rm -rf "$dir" "/var/run/dpdk/$prefix"
}
trap cleanup EXIT
"$BENCH" pcap --out "$dir/t.pcap" --size 64 --count 1024 --flows 64 --router-config "$dir/router.toml" >/dev/null
replay_family=()
if [ "$IPV6" = 1 ]; then
    # The output port takes an IPv6 subnet for the replayer's IPv6 gateways.
    sed -i 's|^address = "10.255.1.1/24"$|&\nipv6 = ["2001:db8:ff01::1/64"]|' "$dir/router.toml"
    grep -q 2001:db8:ff01::1 "$dir/router.toml" || { echo "error: no IPv6 on the output port" >&2; exit 1; }
    replay_family=(--ipv6)
fi
fib6_routes=$((ROUTES > 1024 ? ROUTES : 1024))
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# The table's routes and the default room beside them.
fib_routes=$((ROUTES + 65536))

"$FP" -l 0-1 --no-pci "${mem[@]}" --log-level lib.eal:error --file-prefix "$prefix" \
    --vdev "net_pcap0,rx_pcap=$dir/t.pcap,infinite_rx=1" --vdev "net_null0,no-rx=1" -- \
    --config "$dir/router.toml" --mbufs 16383 --stats-period 0 \
    --fpm "127.0.0.1:$port" --fib-routes "$fib_routes" --fib6-routes "$fib6_routes" --stats-json "$dir/stats.json" \
    >"$dir/fp.log" 2>&1 &
fp_pid=$!
# Everything this script starts from here on: on CPU 0 (the control lcore's).
taskset -pc 0 $$ >/dev/null

# The sampler: port 1's opackets every 0.1 s and the DPDK heap, into $dir/samples,
# until $dir/stop exists.
python3 bench/telemetry.py sample "$prefix" "$dir" &
sampler=$!

ctl() { "$FP" ctl --file-prefix "$prefix" --json "$@"; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$fp_pid/status"; }
# Ready: the control socket answers and packets flow.
for _ in $(seq 1 300); do
    if ctl show fpm >/dev/null 2>&1 && [ -s "$dir/samples" ] && [ "$(tail -1 "$dir/samples" | cut -d' ' -f2)" != 0 ]; then
        break
    fi
    kill -0 "$fp_pid" 2>/dev/null || { cat "$dir/fp.log" >&2; exit 1; }
    sleep 0.1
done
sleep "$BEFORE"
rss_before=$(rss_kb)
t0=$(python3 -c 'import time; print(f"{time.monotonic():.4f}")')
"$BENCH" fpm-replay --to "127.0.0.1:$port" --routes "$ROUTES" "${replay_family[@]}" >"$dir/replay.log" 2>&1 &
replay_pid=$!
# The end: `show fpm` counts every route added (asked on the control socket every
# 20 ms by one process, not a `fastpath ctl` each time: those took a tenth of CPU 0).
t1=$(python3 bench/telemetry.py fpm-added "$prefix" "$ROUTES" "$fp_pid" "$replay_pid") || {
    cat "$dir/fp.log" "$dir/replay.log" >&2
    exit 1
}
rss_after=$(rss_kb)
sleep 1
touch "$dir/stop"
wait "$sampler" || true
ctl show fpm >"$dir/fpm.json"
kill "$replay_pid" 2>/dev/null || true
wait "$replay_pid" 2>/dev/null || true
replay_pid=
kill -INT "$fp_pid"
wait "$fp_pid" || { cat "$dir/fp.log" >&2; exit 1; }
fp_pid=

python3 - "$dir" "$t0" "$t1" "$ROUTES" "$rss_before" "$rss_after" "$fib_routes" <<'EOF'
import json, sys
d, t0, t1, n, rss0, rss1, fib_routes = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])
rows = [tuple(float(x) for x in l.split()) for l in open(f"{d}/samples")]
def rate(a, b):
    w = [r for r in rows if a <= r[0] <= b]
    if len(w) < 2:
        return float("nan")
    return (w[-1][1] - w[0][1]) / (w[-1][0] - w[0][0]) / 1e6
def heap(t):
    return min(rows, key=lambda r: abs(r[0] - t))[2] / (1 << 20)
before, during = rate(t0 - 2.0, t0), rate(t0, t1)
s = json.load(open(f"{d}/stats.json"))
fpm = json.load(open(f"{d}/fpm.json"))["data"]
tot = s["totals"]
drops = {k: v for k, v in (tot.get("drops") or {}).items() if v}
took = t1 - t0
print(f"routes: {n} (--fib-routes {fib_routes}); installed in {took:.2f} s: {n / took:,.0f} routes/s")
print(f"FPM: routes_added {fpm.get('routes_added')}, fib_refused {fpm.get('fib_refused', 0)}, "
      f"bad_attribute {fpm.get('bad_attribute', 0)}, malformed_netlink {fpm.get('malformed_netlink', 0)}")
print(f"forwarding: {before:.2f} Mpps before, {during:.2f} Mpps during the install: {during / before:.3f}")
lost = sum(v for k, v in drops.items() if k != "shutdown_drain")
print(f"packets: received {tot['rx']}, sent {tot['tx']}, dropped {tot['dropped']} {drops or ''}; "
      f"lost (drops but those drained at exit): {lost}; balanced {tot['balanced']}")
print(f"memory: DPDK heap {heap(t0):.0f} -> {heap(t1):.0f} MiB, RSS {rss0 / 1024:.0f} -> {rss1 / 1024:.0f} MiB")
EOF
cat "$dir/replay.log"
