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
#   SIZE=imix bench/l3fwd-peer.sh          # IMIX frames (7 x 64, 4 x 594, 1 x 1518 in 12)
#   FLOWS=100000 bench/l3fwd-peer.sh       # 100,000 flows, one frame each: net_pcap holds
#       every frame in an mbuf, so the pool grows to 262,143 mbufs; l3fwd sizes its pool by
#       its RX ring, so it gets --rx-queue-size 65535 (at most 2 x 65,535 mbufs)
#   PCAP=/path/to/other.pcap bench/l3fwd-peer.sh   # other frames of the benchmark's flows
#       (UDP to 198.19.0.0/16, to net_pcap0's MAC 02:70:63:61:70:00)
#   FAMILY=6 bench/l3fwd-peer.sh           # the same traffic in IPv6 (any PCAP= above)
#
# FAMILY=6 turns the traffic and the router's config to IPv6 with bench/to-ipv6.py
# --keep-size (198.19.a.b becomes 2001:db8:c613:ab::1, routed by 2001:db8:c613::/48 to a
# neighbour; each frame keeps its size, 20 bytes of payload giving way to the longer
# header, except that 64-byte frames become the least IPv6/UDP frame, 66 bytes), runs testpmd, l3fwd and fastpath on it, and runs fastpath on
# the IPv4 traffic too in each round, so that the IPv6/IPv4 ratio of the same build comes
# from alternated runs. l3fwd's IPv6 path (DPDK 22.11) takes the packet type from the
# parse callback and the destination from rte_lpm6_lookup, one packet at a time, and
# writes the Ethernet addresses from its per-port table: it checks nothing in the header
# and neither checks nor decrements the hop limit. fastpath checks the destination MAC,
# version, payload length, source and destination scopes, expires hop limit 1, decrements
# it, checks the MTU, and writes the header of a next hop from its neighbour table, with
# its rte_lpm6 tables read inline in the pass that checks the header.
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
# EAL memory: hugepages when enough are free, else --no-huge (bench/eal-mem.sh).
# shellcheck source=bench/eal-mem.sh
. bench/eal-mem.sh
# shellcheck source=bench/common.sh
. bench/common.sh
SIZE=${SIZE:-64}
FLOWS=${FLOWS:-64}
# Frames in the pcap: 1,024 (1,152 for IMIX, a multiple of its 12), or one per flow
# beyond that; the pool holds them all and 65,536 more (as `fastpath-bench compare`).
frames=1024
[ "$SIZE" != imix ] || frames=1152
[ "$FLOWS" -le "$frames" ] || frames=$FLOWS
if [ "$frames" -le 4096 ]; then
    MBUFS=${MBUFS:-16383}
else
    MBUFS=${MBUFS:-$(python3 -c "import sys; n = int(sys.argv[1]) + 65536; print((1 << (n - 1).bit_length()) - 1)" "$frames")}
fi
FAMILY=${FAMILY:-4}
[ "$FAMILY" = 4 ] || [ "$FAMILY" = 6 ] || { echo "error: FAMILY=$FAMILY: give 4 or 6" >&2; exit 1; }
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
sizes=(--size "$SIZE")
[ "$SIZE" != imix ] || sizes=(--imix)
"$BENCH" pcap --out "$dir/t.pcap" "${sizes[@]}" --count "$frames" --flows "$FLOWS" \
    --router-config "$dir/router.toml" >/dev/null
if [ -n "${PCAP:-}" ]; then
    [ -r "$PCAP" ] || { echo "error: PCAP=$PCAP is not a readable file" >&2; exit 1; }
    cp "$PCAP" "$dir/t.pcap"
fi
if [ "$FAMILY" = 6 ]; then
    python3 bench/to-ipv6.py --keep-size "$dir/router.toml" "$dir/t.pcap" "$dir/router6.toml" "$dir/t6.pcap"
fi
# l3fwd's rules: the router config's own routes (in rte_lpm6 a shorter prefix ends in
# fewer tbl8 levels, so the peer must look up the same /48).
printf 'R198.19.0.0/16 1\n' >"$dir/v4.cfg"
printf 'R2001:db8:c613::/48 1\n' >"$dir/v6.cfg"

# Run one tool (file prefix $1, its command after) and print its rate.
run() {
    local pre=$1
    shift
    rate_of_run "$pre" "$dir/$pre.log" "$@"
}

vdev=(--vdev "net_pcap0,rx_pcap=$dir/t.pcap,infinite_rx=1" --vdev "net_null0,no-rx=1")
# What testpmd, l3fwd and fastpath receive: the IPv4 traffic, or with FAMILY=6 its IPv6 turn.
vdev6=(--vdev "net_pcap0,rx_pcap=$dir/t6.pcap,infinite_rx=1" --vdev "net_null0,no-rx=1")
peer=("${vdev[@]}")
config=$dir/router.toml
[ "$FAMILY" = 4 ] || { peer=("${vdev6[@]}"); config=$dir/router6.toml; }
read -ra mem <<<"$MEM"
eal=(--no-pci "${mem[@]}" --log-level lib.eal:error)
shape="$SIZE-byte frames"
[ "$SIZE" != imix ] || shape="IMIX frames"
[ -z "${PCAP:-}" ] || shape=$PCAP
echo "EAL memory: $MEM; IPv$FAMILY, $FLOWS flows, $shape, $frames frames, $MBUFS mbufs"
echo
if [ "$FAMILY" = 4 ]; then
    echo "| round | testpmd io Mpps | l3fwd Mpps | fastpath Mpps | l3fwd / io | fastpath / io | fastpath / l3fwd |"
    echo "|---:|---:|---:|---:|---:|---:|---:|"
else
    echo "| round | testpmd io Mpps | l3fwd Mpps | fastpath Mpps | fastpath IPv4 Mpps | l3fwd / io | fastpath / io | fastpath / l3fwd | fastpath IPv6 / IPv4 |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
fi
rows=$dir/rows
for r in $(seq 1 "$ROUNDS"); do
    io=$(run "peer-io-$$" dpdk-testpmd -l 0-1 "${eal[@]}" --file-prefix "peer-io-$$" "${peer[@]}" -- \
        --forward-mode=io --nb-cores=1 --total-num-mbufs "$MBUFS" -a --stats-period 1)
    l3=$(run "peer-l3-$$" "$l3fwd" -l 1 "${eal[@]}" --file-prefix "peer-l3-$$" "${peer[@]}" -- \
        -p 0x3 --config "(0,0,1)" --parse-ptype --rule_ipv4 "$dir/v4.cfg" --rule_ipv6 "$dir/v6.cfg" "${l3_ring[@]}")
    fp=$(run "peer-fp-$$" "$FP" -l 0-1 "${eal[@]}" --file-prefix "peer-fp-$$" "${peer[@]}" -- \
        --config "$config" --mbufs "$MBUFS" --stats-period 0)
    if [ "$FAMILY" = 4 ]; then
        awk -v r="$r" -v io="$io" -v l3="$l3" -v fp="$fp" \
            'BEGIN { printf "| %d | %.2f | %.2f | %.2f | %.3f | %.3f | %.3f |\n", r, io, l3, fp, l3/io, fp/io, fp/l3 }' |
            tee -a "$rows"
    else
        fp4=$(run "peer-fp-$$" "$FP" -l 0-1 "${eal[@]}" --file-prefix "peer-fp-$$" "${vdev[@]}" -- \
            --config "$dir/router.toml" --mbufs "$MBUFS" --stats-period 0)
        awk -v r="$r" -v io="$io" -v l3="$l3" -v fp="$fp" -v fp4="$fp4" \
            'BEGIN { printf "| %d | %.2f | %.2f | %.2f | %.2f | %.3f | %.3f | %.3f | %.3f |\n", r, io, l3, fp, fp4, l3/io, fp/io, fp/l3, fp/fp4 }' |
            tee -a "$rows"
    fi
done
# The median of each column over the rounds.
median() { awk -F'|' -v c="$1" '{ print $c + 0 }' "$rows" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
if [ "$FAMILY" = 4 ]; then
    printf '| median | %.2f | %.2f | %.2f | **%.3f** | **%.3f** | **%.3f** |\n' \
        "$(median 3)" "$(median 4)" "$(median 5)" "$(median 6)" "$(median 7)" "$(median 8)"
else
    printf '| median | %.2f | %.2f | %.2f | %.2f | **%.3f** | **%.3f** | **%.3f** | **%.3f** |\n' \
        "$(median 3)" "$(median 4)" "$(median 5)" "$(median 6)" "$(median 7)" "$(median 8)" "$(median 9)" "$(median 10)"
fi
