#!/usr/bin/env python3
"""The soak's verdict (scripts/soak): reads fastpath's --stats-json, the mix
(frame kinds in pcap order), the text report, the exit code, the SIGHUP
counts, whether a loss was seeded (SOAK_SEED_LOSS) and the RSS samples
(KiB); prints the figures and PASS or FAIL."""
import json
import sys

stats_path, mix_path, report_path, rc, hups, reloads, refused, seed_loss = sys.argv[1:9]
rss = [int(x) for x in sys.argv[9:]]
seed_loss = seed_loss == "1"
rc, hups, reloads, refused = int(rc), int(hups), int(reloads), int(refused)
stats = json.load(open(stats_path))
mix = json.load(open(mix_path))
report = open(report_path).read()
totals = stats["totals"]
drops = totals["drops"]

# The pipeline took the first N frames of the endless replay, N the rx of
# the worker lcore (scripts/soak runs one, lcore 1; the main lcore is 0);
# count each kind in them. Not net_pcap0's rx less its shutdown_drain drops:
# the main lcore's drain of the RX queue at shutdown counts those frames as
# received and dropped (never processed), but so does the control plane's
# drop of what was still punted to it (ARP, pings, TTL 1: received and
# processed), which would take those frames off N a second time.
MAIN_LCORE = 0
port0 = next(p for p in stats["ports"] if p["name"] == "net_pcap0")
workers = [lc for lc in stats["lcores"] if lc["lcore"] != MAIN_LCORE]
main = next((lc for lc in stats["lcores"] if lc["lcore"] == MAIN_LCORE), {"rx": 0})
processed = sum(lc["rx"] for lc in workers)
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
# Only net_pcap0 receives (the null ports have no RX), so every rx of the
# run is the workers' and the main lcore's drain of it.
check(
    len(workers) == 1 and port0["rx"] == totals["rx"] == processed + main["rx"],
    f"received only on net_pcap0 and by one worker: net_pcap0 rx {port0['rx']}, "
    f"all ports {totals['rx']}, worker lcores {[lc['lcore'] for lc in workers]} rx {processed}, "
    f"main lcore (shutdown drain) rx {main['rx']}",
)
classified = classify.get("stats", {}).get("matched")
figures5000 = (
    f"UDP to port 5000 received {want5000}, classified {classified}, "
    f"seen {both.get('seen')} / accepted {both.get('accepted')} / dropped {both.get('dropped')} "
    f"by the filter, sent {null0['tx']}"
)
ok5000 = (
    classified == want5000
    and both.get("seen") == want5000
    and both.get("accepted") == want5000
    and both.get("dropped") == 0
    and null0["tx"] == want5000
)
if not ok5000:
    figures5000 += (
        f" ({null0['tx'] - want5000:+d} sent against the input; "
        f"the net_null0 filter both_accept dropped {both.get('dropped')})"
    )
check(ok5000, "accepted by both rule files, nothing dropped: " + figures5000)
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
if seed_loss:
    print("soak: SOAK_SEED_LOSS=1: the second rule file dropped the UDP to 198.51.100.1 port 5000, "
          "so this run must FAIL; a PASS would mean the check misses a loss")
print("soak: PASS" if passed else "soak: FAIL")
sys.exit(0 if passed else 1)
