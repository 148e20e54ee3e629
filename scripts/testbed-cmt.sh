#!/usr/bin/env bash
# Two 10 Mbit/s paths (100-packet queues), path B 10, 50 or 75 ms, buffers per Dreibholz et
# al.'s Equation (1) and 4x it: braid CMT with round-robin and with the fixed stream-to-path
# mapping, the kernel's MPTCP (default scheduler) and one TCP stream on path A, each alone on
# the same emulated paths (scenarios/testbed/two-paths.toml), on the testbed and (braid and
# TCP) in the simulator. Prints goodput and its share of the two paths' payload capacity
# (2 x 10 Mbit/s x 1452/1500). Needs root for the testbed part.
#   DELAYS="10 50 75" SCALES="1 4" PROTOS="rr fixed mptcp tcp" DURATION=25 scripts/testbed-cmt.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BRAID=${BRAID:-target/release/braid}
DELAYS=${DELAYS:-10 50 75}
SCALES=${SCALES:-1 4}
PROTOS=${PROTOS:-rr fixed mptcp tcp}
DURATION=${DURATION:-25}
OUT=${OUT:-results/testbed-cmt}
testbed=1
if [[ $EUID -ne 0 ]] || ! ip netns list >/dev/null 2>&1 || [[ ! -e /dev/net/tun ]]; then
    echo "note: no root/netns/TUN: simulator only"
    testbed=0
fi
mkdir -p "$OUT"
for d in $DELAYS; do
    for k in $SCALES; do
        for p in $PROTOS; do
            f="$OUT/d$d-x$k-$p.toml"
            python3 - scenarios/testbed/two-paths.toml "$f" "$d" "$k" "$p" "$DURATION" <<'PY'
import re, sys
src, dst, d, k, p, duration = sys.argv[1:7]
d, k = float(d), int(k)
# Equation (1): 2 x delta_A x rho_A + 2 x delta_B x rho_B (bytes), times k.
sigma = int(k * (2 * 0.010 * 10e6 / 8 + 2 * d / 1e3 * 10e6 / 8))
s = open(src).read()
parts = s.split('name = "pB"')
parts[1] = parts[1].replace('delay = "10ms"', f'delay = "{d:g}ms"', 1)
s = 'name = "pB"'.join(parts)
s = re.sub(r'^duration = .*$', f'duration = "{duration}s"', s, flags=re.M)
s = s.replace('buffer = "64KiB"', f'buffer = "{sigma}B"')
if p == "fixed":
    s = s.replace('stream_scheduler = "rr"', 'stream_scheduler = "fixed"')
elif p in ("mptcp", "tcp"):
    s = s.replace('stream_scheduler = "rr"\n', '').replace('cmt = true\n', '')
    s = s.replace('streams = 2\n', '')
    s = s.replace('from = "A"\nto = "B"\nroutes', f'kind = "{p}"\nfrom = "A"\nto = "B"\nroutes')
    if p == "tcp":
        s = s.replace('routes = [["A", "pA"], ["A", "pB"]]', 'routes = [["A", "pA"]]')
open(dst, "w").write(s)
PY
            if [[ $p != mptcp ]]; then
                "$BRAID" sim run "$f" --out "$OUT/sim-d$d-x$k-$p" >/dev/null
            fi
            if [[ $testbed == 1 ]]; then
                "$BRAID" testbed run "$f" --name "btcmt$$" --out "$OUT/testbed-d$d-x$k-$p" >/dev/null ||
                    echo "testbed run d$d x$k $p failed" >&2
            fi
        done
    done
done
python3 - "$OUT" "$DELAYS" "$SCALES" "$PROTOS" <<'PY'
import json, os, sys
out, delays, scales, protos = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), sys.argv[4].split()
cap = 2 * 10 * 1452 / 1500
def g(side, d, k, p):
    f = f"{out}/{side}-d{d}-x{k}-{p}/summary.json"
    if not os.path.exists(f):
        return None
    return json.load(open(f))["points"][0]["metrics"]["flow_cmt_goodput_mbps"]["mean"]
print("| path B delay | buffer | " + " | ".join(f"{p} sim | {p} testbed" for p in protos) + " |")
print("|---|---|" + "---|---|" * len(protos))
for d in delays:
    for k in scales:
        cells = []
        for p in protos:
            for side in ("sim", "testbed"):
                v = g(side, d, k, p)
                cells.append("–" if v is None else f"{v:.2f} ({v / cap:.0%})")
        print(f"| {d} ms | {'Eq. (1)' if k == '1' else k + 'x Eq. (1)'} | " + " | ".join(cells) + " |")
PY
