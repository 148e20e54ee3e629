#!/usr/bin/env bash
# Dumbbell fairness, simulator and testbed side by side: scenarios/dumbbell.toml (two braid
# associations and two TCP CUBIC flows on a 100 Mbit/s bottleneck with a one-BDP queue) at
# RTT 20, 50 and 100 ms, braid with CUBIC (its default) and with Reno. The simulator runs
# SEEDS seeds (its TCP flows are the TCP-like flow of braid's core), the testbed one run (the
# kernel's CUBIC). Prints each flow's goodput, Jain's index, and braid's mean share over the
# TCP flows' (goal: 0.8-1.2). Needs root for the testbed part (skipped otherwise).
#   RTTS="20 50 100" CCS="cubic reno" DURATION=30 WARMUP=10 SEEDS=3 scripts/testbed-dumbbell.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BRAID=${BRAID:-target/release/braid}
RTTS=${RTTS:-20 50 100}
CCS=${CCS:-cubic reno}
DURATION=${DURATION:-30}
WARMUP=${WARMUP:-10}
SEEDS=${SEEDS:-3}
OUT=${OUT:-results/testbed-dumbbell}
testbed=1
if [[ $EUID -ne 0 ]] || ! ip netns list >/dev/null 2>&1 || [[ ! -e /dev/net/tun ]]; then
    echo "note: no root/netns/TUN: simulator only"
    testbed=0
fi
mkdir -p "$OUT"
for rtt in $RTTS; do
    for cc in $CCS; do
        f="$OUT/dumbbell-rtt$rtt-$cc.toml"
        python3 - scenarios/dumbbell.toml "$f" "$rtt" "$cc" "$DURATION" "$WARMUP" <<'PY'
import re, sys
src, dst, rtt, cc, duration, warmup = sys.argv[1:7]
rtt = float(rtt)
s = open(src).read()
s = re.sub(r'delay = "25ms"', f'delay = "{rtt / 2:g}ms"', s)
s = re.sub(r'queue_bytes = "\d+B"', f'queue_bytes = "{int(100e6 * rtt / 1e3 / 8)}B"', s)
s = re.sub(r'^duration = .*$', f'duration = "{duration}s"', s, flags=re.M)
s = re.sub(r'^warmup = .*$', f'warmup = "{warmup}s"', s, flags=re.M)
s = re.sub(r'^timeseries = .*$', '', s, flags=re.M)
# braid's flows get the controller under test; the TCP flows stay CUBIC.
for name in ("braid1", "braid2"):
    s = s.replace(f'name = "{name}"\n', f'name = "{name}"\ncc = "{cc}"\n')
open(dst, "w").write(s)
PY
        "$BRAID" sim run "$f" --seeds "$SEEDS" --out "$OUT/sim-rtt$rtt-$cc" >/dev/null
        if [[ $testbed == 1 ]]; then
            "$BRAID" testbed run "$f" --name "btdb$$" --out "$OUT/testbed-rtt$rtt-$cc" >/dev/null
        fi
    done
done
python3 - "$OUT" "$RTTS" "$CCS" <<'PY'
import json, os, sys
out, rtts, ccs = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
flows = ["braid1", "braid2", "tcp1", "tcp2"]
print("| RTT | braid cc | side | " + " | ".join(flows) + " | Jain | braid/TCP share |")
print("|---|---|---|" + "---|" * len(flows) + "---|---|")
for rtt in rtts:
    for cc in ccs:
        for side in ("sim", "testbed"):
            p = f"{out}/{side}-rtt{rtt}-{cc}/summary.json"
            if not os.path.exists(p):
                continue
            m = {k: v["mean"] for k, v in json.load(open(p))["points"][0]["metrics"].items()}
            g = [m[f"flow_{f}_goodput_mbps"] for f in flows]
            ratio = (g[0] + g[1]) / max(g[2] + g[3], 1e-9)
            print(f"| {rtt} ms | {cc} | {side} | " + " | ".join(f"{x:.1f}" for x in g)
                  + f" | {m['jain_fairness']:.3f} | {ratio:.2f} |")
PY
