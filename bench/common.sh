#!/usr/bin/env bash
# Sourced by the bench scripts: what several of them do alike.

# The number of frames of pcap $1.
frames_of() {
    python3 - "$1" <<'PY'
import struct, sys
b = open(sys.argv[1], "rb").read()
o, c = 24, 0
while o < len(b):
    o, c = o + 16 + struct.unpack_from("<I", b, o + 8)[0], c + 1
print(c)
PY
}

# Start a DPDK program (EAL file prefix $1, output into file $2, its command after),
# print port 1's transmit rate (Mpps) over SECS seconds, read from DPDK's telemetry
# socket by bench/telemetry.py, then stop it with SIGINT. If no rate comes or the
# program does not exit cleanly, its output goes to stderr and the caller exits.
rate_of_run() {
    local pre=$1 log=$2 pid r rc=0
    shift 2
    "$@" >"$log" 2>&1 &
    pid=$!
    r=$(python3 bench/telemetry.py rate "$pre" "$SECS" $pid) || {
        kill -INT $pid 2>/dev/null || true
        wait $pid || true
        cat "$log" >&2
        exit 1
    }
    kill -INT $pid
    wait $pid || rc=$?
    [ "$rc" -eq 0 ] || { cat "$log" >&2; echo "error: $1 exited with $rc" >&2; exit 1; }
    echo "$r"
}
