#!/usr/bin/env python3
"""The soak's verdict (scripts/soak): reads fastpath's --stats-json, the mix
(frame kinds in pcap order), the text report, the exit code, the SIGHUP
counts and the RSS samples (KiB); prints the figures and PASS or FAIL."""
import json
import sys

stats_path, mix_path, report_path, rc, hups, reloads, refused = sys.argv[1:8]
rss = [int(x) for x in sys.argv[8:]]
rc, hups, reloads, refused = int(rc), int(hups), int(reloads), int(refused)
stats = json.load(open(stats_path))
mix = json.load(open(mix_path))
report = open(report_path).read()
totals = stats["totals"]
drops = totals["drops"]

# The pipeline took the first rx - drained frames of the endless replay
# (frames drained from the RX queue at shutdown were received, not
# processed); count each kind in them.
port0 = next(p for p in stats["ports"] if p["name"] == "net_pcap0")
processed = port0["rx"] - port0["drops"].get("shutdown_drain", 0)
loops, rest = divmod(processed, len(mix))
def count(kind):
    return loops * mix.count(kind) + mix[:rest].count(kind)

hooks = {(h["point"], h["name"]): h for h in stats.get("hooks", [])}
classify = hooks.get(("ingress", "classify"), {})
both = hooks.get(("egress", "both_accept"), {})
alt = hooks.get(("egress", "alternating"), {})
null0 = next(p for p in stats["ports"] if p["name"] == "net_null0")

want5000 = count("udp5000")
checks = []
def check(ok, what):
    checks.append((ok, what))

check(rc == 0, f"fastpath exited {rc}")
check(
    classify.get("stats", {}).get("matched") == want5000
    and both.get("seen") == want5000
    and both.get("accepted") == want5000
    and both.get("dropped") == 0
    and null0["tx"] == want5000,
    "accepted by both rule files, nothing dropped: UDP to port 5000 received "
    f"{want5000}, classified {classify.get('stats', {}).get('matched')}, "
    f"seen {both.get('seen')} / accepted {both.get('accepted')} / dropped {both.get('dropped')} "
    f"by the filter, sent {null0['tx']}",
)
check(
    alt.get("dropped", 0) <= count("udp6000") and alt.get("dropped", 0) > 0,
    f"the alternating filter dropped {alt.get('dropped')} of "
    f"{count('udp6000')} UDP to port 6000 (some, not all: its rules changed)",
)
check(totals["balanced"] and "[balanced]" in report, "counters balance ([balanced])")
check(
    stats["mbufs"]["in_use_at_exit"] == 0 and "[no leak]" in report,
    f"no mbuf leaked ({stats['mbufs']['in_use_at_exit']} in use at exit)",
)
check(
    hups > 0 and reloads == hups and refused == 0,
    f"every SIGHUP reloaded the hooks ({hups} sent, {reloads} reloaded, {refused} refused)",
)
if len(rss) >= 2:
    warm, last = rss[0], rss[-1]
    margin = max(4096, warm // 50)
    check(
        last - warm <= margin,
        f"memory flat: RSS {warm // 1024} MiB after warm-up, {last // 1024} MiB at the end "
        f"({last - warm:+d} KiB, margin {margin} KiB; samples {', '.join(str(r // 1024) for r in rss)} MiB)",
    )
else:
    check(False, f"memory: only {len(rss)} RSS samples")

print(f"soak: {processed} frames processed ({loops} times the {len(mix)}-frame mix), "
      f"rx {totals['rx']}, tx {totals['tx']}, punted {totals['punted']}, dropped {totals['dropped']}")
print("soak: drops by reason: " + ", ".join(f"{k} {v}" for k, v in sorted(drops.items())))
for ok, what in checks:
    print(f"soak: {'ok  ' if ok else 'FAIL'} {what}")
passed = all(ok for ok, _ in checks)
print("soak: PASS" if passed else "soak: FAIL")
sys.exit(0 if passed else 1)
