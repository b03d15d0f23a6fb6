#!/usr/bin/env python3
"""DPDK telemetry, as the bench scripts read it from a running process.

    bench/telemetry.py rate PREFIX SECS PID   # port 1's transmit rate (Mpps) over SECS
                                              # seconds, from 1.5 s after its first packet
    bench/telemetry.py sample PREFIX DIR      # port 1's opackets and the DPDK heap in use,
                                              # every 0.1 s, into DIR/samples until DIR/stop
    bench/telemetry.py fpm-added PREFIX N PID...  # waits until `show fpm` counts N routes
                                              # added (asked every 20 ms on fastpath's control
                                              # socket), then prints the monotonic time; fails
                                              # if a process PID ends first or the FIB
                                              # refuses a route

PREFIX is the process's EAL --file-prefix, PID its process id (a process that exits
before it opens its socket ends the wait at once).
"""
import json
import os
import re
import socket
import sys
import time


def connect(prefix, pid=None, timeout=30.0):
    """The telemetry socket of the process with `prefix`, after its greeting."""
    path = f"/var/run/dpdk/{prefix}/dpdk_telemetry.v2"
    deadline = time.monotonic() + timeout
    while True:
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.connect(path)
            break
        except OSError:
            if time.monotonic() > deadline:
                sys.exit(f"no telemetry socket at {path}")
            if pid is not None:
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    sys.exit(f"process {pid} ({prefix}) exited before it opened {path}")
            time.sleep(0.1)
    json.loads(s.recv(4096))
    return s


def ask(s, query):
    s.send(query.encode())
    return json.loads(s.recv(1 << 20))


def opackets(s, port=1):
    return (ask(s, f"/ethdev/stats,{port}").get("/ethdev/stats") or {}).get("opackets", 0)


def rate(prefix, secs, pid):
    s = connect(prefix, pid)
    deadline = time.monotonic() + 30
    while opackets(s) == 0:
        if time.monotonic() > deadline:
            sys.exit("port 1 sent nothing")
        time.sleep(0.05)
    time.sleep(1.5)
    a, t0 = opackets(s), time.monotonic()
    time.sleep(secs)
    b, t1 = opackets(s), time.monotonic()
    print(f"{(b - a) / (t1 - t0) / 1e6:.2f}")


def sample(prefix, d):
    s = connect(prefix, timeout=60)
    with open(f"{d}/samples", "w") as out:
        while not os.path.exists(f"{d}/stop"):
            heap = ask(s, "/eal/heap_info,0").get("/eal/heap_info") or {}
            out.write(f"{time.monotonic():.4f} {opackets(s)} {heap.get('Alloc_size', 0)}\n")
            out.flush()
            time.sleep(0.1)


def fpm_added(prefix, n, pids):
    """Asks the control socket (one request a connection, as `fastpath ctl` does)
    rather than starting `fastpath ctl`: a process every 20 ms costs the control
    lcore's CPU a tenth of its time."""
    path = f"/var/run/dpdk/{prefix}/fastpath.ctl"
    request = json.dumps({"command": "show", "what": "fpm"}).encode() + b"\n"
    added = re.compile(rb'"routes_added":\s*(\d+)')
    refused = re.compile(rb'"fib_refused":\s*(\d+)')
    while True:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(path)
            s.sendall(request)
            answer = b""
            while not answer.endswith(b"\n"):
                chunk = s.recv(1 << 16)
                if not chunk:
                    break
                answer += chunk
        r = refused.search(answer)
        if r and int(r.group(1)) > 0:
            sys.exit(f"the FIB refused {r.group(1).decode()} routes (fastpath's log says why)")
        m = added.search(answer)
        if m and int(m.group(1)) >= n:
            print(f"{time.monotonic():.4f}")
            return
        for pid in pids:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                sys.exit(f"process {pid} exited before {n} routes were added")
        time.sleep(0.02)


def main():
    args = sys.argv[1:]
    if len(args) == 4 and args[0] == "rate":
        rate(args[1], float(args[2]), int(args[3]))
    elif len(args) == 3 and args[0] == "sample":
        sample(args[1], args[2])
    elif len(args) >= 4 and args[0] == "fpm-added":
        fpm_added(args[1], int(args[2]), [int(p) for p in args[3:]])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
