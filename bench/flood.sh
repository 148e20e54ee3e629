#!/usr/bin/env bash
# A verified `braid perf` transfer next to each flood of `crates/net/examples/flood.rs`, as a
# share of the same transfer next to a "null" flood (the same packets at the same rate sent
# to a closed port: the attacker's own CPU, without the server's), measured back to back;
# and the server's CPU per attack packet (the flood alone, /proc utime+stime).
#
#   RATE=100000 DURATION=5 SHAPES="unknown data-gaps iforward init icmp" bash bench/flood.sh
#
# The server runs on CPU 0, the client and the attacker on CPU 1 (two cores). `icmp` needs
# root (a raw socket). Loopback only.
set -euo pipefail
cd "$(dirname "$0")/.."
BRAID=${BRAID:-target/release/braid}
FLOOD=${FLOOD:-target/release/examples/flood}
RATE=${RATE:-100000}
DURATION=${DURATION:-5}
SHAPES=${SHAPES:-"unknown data-gaps iforward init icmp"}
PORT=${PORT:-5999}
CLIENT=127.0.0.1:46000
[ -x "$BRAID" ] || cargo build --release -p braid-cli
[ -x "$FLOOD" ] || cargo build --release -p braid-net --example flood

taskset -c 0 "$BRAID" perf server --bind 127.0.0.1:$PORT --idata on --json > /tmp/flood-server.json 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
sleep 0.5

goodput() { # shape -> Mbit/s of a verified transfer next to that flood
    taskset -c 1 "$FLOOD" 127.0.0.1:$PORT "$1" "$RATE" $((DURATION + 2)) $CLIENT > /tmp/flood-$1.json &
    local f=$!
    sleep 0.5
    taskset -c 1 "$BRAID" perf client --bind $CLIENT --connect 127.0.0.1:$PORT --time "$DURATION" --json \
        | python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.0f" % d["goodput_mbps"] if d["ok"] else "failed")'
    wait $f || true
}

cpu_ticks() { awk '{print $14 + $15}' /proc/$SERVER/stat; }

printf '%-10s %10s %14s %8s %16s %14s\n' shape "null Mb/s" "flood Mb/s" share "server us/pkt" "answer B/pkt"
for shape in $SHAPES; do
    base=$(goodput null)
    hit=$(goodput "$shape")
    # The flood alone: the server's CPU per packet.
    t0=$(cpu_ticks)
    taskset -c 1 "$FLOOD" 127.0.0.1:$PORT "$shape" "$RATE" "$DURATION" $CLIENT > /tmp/flood-alone.json
    t1=$(cpu_ticks)
    python3 - "$shape" "$base" "$hit" "$t0" "$t1" <<'EOF'
import json, os, sys
shape, base, hit, t0, t1 = sys.argv[1:]
a = json.load(open("/tmp/flood-alone.json"))
hz = os.sysconf("SC_CLK_TCK")
us = (int(t1) - int(t0)) / hz * 1e6 / max(a["sent"], 1)
share = f"{float(hit) / float(base):.2f}" if base not in ("failed", "0") and hit != "failed" else "-"
print(f"{shape:<10} {base:>10} {hit:>14} {share:>8} {us:>16.2f} {a['answer_bytes'] / max(a['sent'], 1):>14.1f}")
EOF
done
