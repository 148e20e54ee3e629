#!/usr/bin/env bash
# Memory of `braid perf server` per idle association: the server's resident set before and
# after N `braid nc` clients (each from its own loopback address, so no per-source cap
# applies) connect and stay idle.
#
#   bench/perf-server-memory.sh                    # BRAID=target/release/braid N=100
#   BRAID=/tmp/braid-old N=200 bench/perf-server-memory.sh
set -euo pipefail
BRAID="${BRAID:-target/release/braid}"
N="${N:-100}"
PORT="${PORT:-19877}"
"$BRAID" perf server --bind "127.0.0.1:$PORT" >/dev/null 2>&1 &
srv=$!
pids=()
cleanup() {
	kill "$srv" "${pids[@]}" 2>/dev/null || true
	# The clients themselves (the pids are their pipelines' subshells).
	pkill -f "$BRAID nc --bind 127.0." 2>/dev/null || true
	wait 2>/dev/null || true
}
trap cleanup EXIT
sleep 1
rss() { awk '/VmRSS/ { print $2 }' "/proc/$srv/status"; }
base=$(rss)
for i in $(seq 1 "$N"); do
	ip="127.0.$((i / 200 + 1)).$((i % 200 + 2))"
	# stdin stays open (and idle) while the sleep runs.
	(sleep 30 | exec "$BRAID" nc --bind "$ip:0" --connect "127.0.0.1:$PORT" >/dev/null 2>&1) &
	pids+=($!)
done
sleep 6
now=$(rss)
echo "perf server: ${base} kB alone, ${now} kB with $N idle associations, $(((now - base) / N)) kB per association"
