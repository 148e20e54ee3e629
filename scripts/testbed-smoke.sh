#!/usr/bin/env bash
# The testbed's short run in the test command (about 15 s): scenarios/testbed/smoke.toml
# (braid and a kernel TCP CUBIC stream over one emulated 20 Mbit/s, 10 ms link, with a
# Poisson UDP source and a Pareto on/off TCP flow as cross traffic) with `braid testbed
# run`, then the same file in the simulator. Checks that both flows and both kinds of cross
# traffic moved data, that together they filled the link, that the emulator reported, and
# that the testbed left no namespace behind; prints simulator and testbed side by side.
# SKIP (exit 0) without root, `ip netns` or /dev/net/tun.
set -euo pipefail
cd "$(dirname "$0")/.."
BRAID=${BRAID:-target/release/braid}
if [[ $EUID -ne 0 ]] || ! ip netns list >/dev/null 2>&1 || [[ ! -e /dev/net/tun ]]; then
    echo "SKIP testbed-smoke: the testbed needs root, ip netns and /dev/net/tun"
    exit 0
fi
name=btsmoke$$
out=$(mktemp -d)
trap '"$BRAID" testbed down --name "$name" >/dev/null 2>&1 || true; rm -rf "$out"' EXIT
timeout 60 "$BRAID" testbed run scenarios/testbed/smoke.toml --name "$name" --out "$out/testbed"
if ip netns list | grep -q "^$name-"; then
    echo "FAIL testbed-smoke: namespaces of $name left behind:" >&2
    ip netns list | grep "^$name-" >&2
    exit 1
fi
"$BRAID" sim run scenarios/testbed/smoke.toml --out "$out/sim" >/dev/null
python3 - "$out" <<'PY'
import json, sys
out = sys.argv[1]
def metrics(side):
    d = json.load(open(f"{out}/{side}/summary.json"))
    return {k: v["mean"] for k, v in d["points"][0]["metrics"].items()}
tb, sim = metrics("testbed"), metrics("sim")
keys = ["flow_braid_goodput_mbps", "flow_tcp_goodput_mbps", "cross_web_goodput_mbps",
        "cross_udp_delivered_mbps", "jain_fairness", "bottleneck_bn_utilisation"]
print(f"{'metric':32} {'simulator':>10} {'testbed':>10}")
for k in keys:
    print(f"{k:32} {sim.get(k, float('nan')):10.3f} {tb.get(k, float('nan')):10.3f}")
fail = []
for f in ("braid", "tcp"):
    if not tb[f"flow_{f}_goodput_mbps"] > 2.0:
        fail.append(f"flow {f} moved almost nothing on the testbed")
udp = tb.get("cross_udp_delivered_mbps", 0.0)
# A 2 Mbit/s source loses at most the queue's drops: a few per cent.
if not 1.5 < udp < 2.2:
    fail.append(f"the Poisson source delivered {udp:.2f} Mbit/s of its 2 Mbit/s")
if not tb.get("cross_web_goodput_mbps", 0.0) > 0.0:
    fail.append("the on/off flow delivered nothing in the window")
total = sum(tb.get(k, 0.0) for k in ("flow_braid_goodput_mbps", "flow_tcp_goodput_mbps",
                                      "cross_web_goodput_mbps", "cross_udp_delivered_mbps"))
if not 15.0 < total < 20.5:
    fail.append(f"the flows and cross traffic took {total:.2f} Mbit/s of a 20 Mbit/s link")
if not tb.get("bottleneck_bn_utilisation", 0) > 0.6:
    fail.append("the emulator's statistics are missing or the link stayed idle")
if fail:
    sys.exit("FAIL testbed-smoke: " + "; ".join(fail))
print("PASS testbed-smoke")
PY
