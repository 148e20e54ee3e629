#!/usr/bin/env bash
# A long testbed run with faults (not in CI): a multi-homed braid CMT association over two
# emulated paths (20 Mbit/s 10 ms, 20 Mbit/s 30 ms) for MINUTES minutes (default 15) with
# random path failures (never both paths at once), Gilbert-Elliott loss bursts and
# reordering on path A, and one peer restart half-way (the server killed and started again;
# the client's association dies with it and a new one starts). Every byte is verified by the
# receiving server (`braid perf server --json` reports each association); memory of both
# endpoints is sampled every 30 s; the failure windows and the client's longest stall are
# listed. Needs root.
#   MINUTES=15 SEED=1 scripts/testbed-soak.sh
set -euo pipefail
cd "$(dirname "$0")/.."
BRAID=${BRAID:-target/release/braid}
MINUTES=${MINUTES:-15}
SEED=${SEED:-1}
if [[ $EUID -ne 0 ]] || ! ip netns list >/dev/null 2>&1 || [[ ! -e /dev/net/tun ]]; then
    echo "SKIP testbed-soak: the testbed needs root, ip netns and /dev/net/tun"
    exit 0
fi
name=btsoak$$
out=${OUT:-results/testbed-soak}
rm -rf "$out"; mkdir -p "$out"
total=$((MINUTES * 60))
python3 - "$out/soak.toml" "$total" "$SEED" <<'PY'
import random, sys
dst, total, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = random.Random(seed)
# Failures: every 40-90 s one path goes down for 2-15 s, alternating paths.
down = {"pA": [], "pB": []}
t, which = 30.0, "pA"
while t < total - 30:
    length = rng.uniform(2, 15)
    down[which].append((t, t + length))
    t += length + rng.uniform(40, 90)
    which = "pB" if which == "pA" else "pA"
fmt = lambda ws: "[" + ", ".join(f'["{a:.1f}s", "{b:.1f}s"]' for a, b in ws) + "]"
open(dst, "w").write(f'''name = "soak"
duration = "{total}s"

[[link]]
name = "pA"
from = "A"
to = "B"
rate = "20Mbit/s"
delay = "10ms"
queue = 100
gilbert = {{ p_good_bad = 0.0005, p_bad_good = 0.2, loss_bad = 0.5 }}
hiccup = {{ rate = 0.002, displacement = 3 }}
down = {fmt(down["pA"])}

[[link]]
name = "pB"
from = "A"
to = "B"
rate = "20Mbit/s"
delay = "30ms"
queue = 100
down = {fmt(down["pB"])}

[[flow]]
name = "cmt"
from = "A"
to = "B"
routes = [["A", "pA"], ["A", "pB"]]
association = {{ cmt = true }}
''')
for p, ws in down.items():
    for a, b in ws:
        print(f"failure {p} {a:.1f}-{b:.1f} s ({b - a:.1f} s)")
PY
trap '"$BRAID" testbed down --name "$name" >/dev/null 2>&1 || true' EXIT
"$BRAID" testbed up "$out/soak.toml" --name "$name" >/dev/null
A="$name-n0"; B="$name-n1"
# Started in this shell (not in a command substitution), so that `wait` can wait for them.
server() {
    ip netns exec "$B" "$BRAID" perf server --json --bind 172.17.0.2:20000 --bind 172.17.1.2:20000 \
        >>"$out/server.json" 2>>"$out/server.log" &
    spid=$!
}
client() {
    ip netns exec "$A" "$BRAID" perf client --json --cmt on --time "$1" \
        --bind 172.16.0.1:20000 --connect 172.17.0.2:20000 \
        --bind 172.16.1.1:20000 --connect 172.17.1.2:20000 >>"$out/client.json" 2>>"$out/client.log" &
    cpid=$!
}
half=$((total / 2))
server; sleep 0.5
client "$((half - 5))s"
rss() { awk '/VmRSS/ {print $2}' "/proc/$1/status" 2>/dev/null || echo -; }
echo "t_s,client_rss_kb,server_rss_kb" >"$out/memory.csv"
t=0
while ((t < total)); do
    sleep 30; t=$((t + 30))
    echo "$t,$(rss "$cpid"),$(rss "$spid")" >>"$out/memory.csv"
    if ((t >= half && t < half + 30)); then
        # The peer restarts: the server dies and comes back; a new association follows.
        wait "$cpid" || true
        kill -9 "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true
        server; sleep 0.5
        client "$((total - t - 15))s"
    fi
done
wait "$cpid" || true
kill -INT "$spid" 2>/dev/null || true; wait "$spid" 2>/dev/null || true
python3 - "$out" <<'PY'
import csv, json, sys
out = sys.argv[1]
def objs(f):
    return [json.loads(l) for l in open(f) if l.strip().startswith("{")]
clients, servers = objs(f"{out}/client.json"), objs(f"{out}/server.json")
for i, c in enumerate(clients):
    print(f"client {i}: ok={c['ok']} {c['bytes']} bytes, {c['goodput_mbps']:.2f} Mbit/s, "
          f"stalls {c['stalls']}, longest stall {c['longest_stall_s']:.2f} s, "
          f"retransmissions {c['retransmissions']}")
for i, s in enumerate(servers):
    print("server association", i, {k: s[k] for k in s if k in ("ok", "verified", "bytes", "complete", "corrupt", "missing", "error")})
rows = list(csv.DictReader(open(f"{out}/memory.csv")))
for col in ("client_rss_kb", "server_rss_kb"):
    v = [int(r[col]) for r in rows if r[col].isdigit()]
    if v:
        print(f"{col}: first {v[0]}, max {max(v)}, last {v[-1]}")
PY
