#!/usr/bin/env bash
# Dumbbell fairness, simulator and testbed side by side: scenarios/dumbbell.toml (two braid
# associations and two TCP CUBIC flows on a 100 Mbit/s bottleneck with a one-BDP queue) at
# RTT 20, 50 and 100 ms, braid with CUBIC (its default) and with Reno. The simulator runs
# SEEDS seeds (its TCP flows are the TCP-like flow of braid's core), the testbed TB_SEEDS runs
# (the kernel's CUBIC), each seed drawing the flows' start times as the simulator does. Prints
# each flow's mean goodput, Jain's index, braid's share over the TCP flows' from the totals
# (goal: 0.8-1.2) and its range over the seeds: which flow starts first decides much of one
# run's shares, so one run says little. Needs root for the testbed part (skipped otherwise).
#   RTTS="20 50 100" CCS="cubic reno" DURATION=60 WARMUP=20 SEEDS=3 TB_SEEDS=3 \
#     scripts/testbed-dumbbell.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BRAID=${BRAID:-target/release/braid}
RTTS=${RTTS:-20 50 100}
CCS=${CCS:-cubic reno}
DURATION=${DURATION:-60}
WARMUP=${WARMUP:-20}
SEEDS=${SEEDS:-3}
TB_SEEDS=${TB_SEEDS:-3}
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
            for ((seed = 0; seed < TB_SEEDS; seed++)); do
                "$BRAID" testbed run "$f" --name "btdb$$" --seed "$seed" \
                    --out "$OUT/testbed-rtt$rtt-$cc-seed$seed" >/dev/null
            done
        fi
    done
done
python3 - "$OUT" "$RTTS" "$CCS" <<'PY'
import csv, glob, json, os, sys
out, rtts, ccs = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
flows = ["braid1", "braid2", "tcp1", "tcp2"]
def runs(side, rtt, cc):
    """Each run's metrics: the simulator's seeds from runs.csv, the testbed's one per dir."""
    if side == "sim":
        p = f"{out}/sim-rtt{rtt}-{cc}/runs.csv"
        return [{k: float(v) for k, v in r.items() if k.startswith(("flow_", "jain"))}
                for r in csv.DictReader(open(p))] if os.path.exists(p) else []
    got = []
    for p in sorted(glob.glob(f"{out}/testbed-rtt{rtt}-{cc}-seed*/summary.json")):
        m = json.load(open(p))["points"][0]["metrics"]
        got.append({k: v["mean"] for k, v in m.items()})
    return got
print("| RTT | braid cc | side | runs | " + " | ".join(flows)
      + " | Jain | braid/TCP (totals) | braid/TCP per run |")
print("|---|---|---|---|" + "---|" * len(flows) + "---|---|---|")
for rtt in rtts:
    for cc in ccs:
        for side in ("sim", "testbed"):
            rs = runs(side, rtt, cc)
            if not rs:
                continue
            g = [sum(r[f"flow_{f}_goodput_mbps"] for r in rs) / len(rs) for f in flows]
            jain = sum(r["jain_fairness"] for r in rs) / len(rs)
            per = [(r["flow_braid1_goodput_mbps"] + r["flow_braid2_goodput_mbps"])
                   / max(r["flow_tcp1_goodput_mbps"] + r["flow_tcp2_goodput_mbps"], 1e-9)
                   for r in rs]
            ratio = (g[0] + g[1]) / max(g[2] + g[3], 1e-9)
            print(f"| {rtt} ms | {cc} | {side} | {len(rs)} | "
                  + " | ".join(f"{x:.1f}" for x in g)
                  + f" | {jain:.3f} | {ratio:.2f} | {min(per):.2f}-{max(per):.2f} |")
PY
