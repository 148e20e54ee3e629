#!/usr/bin/env bash
# Loopback throughput of braid and of pion/sctp, one after the other in one invocation:
# one association, one path, a 1500-byte PMTU (braid's default; pion-peer --mtu 1472, the
# SCTP packet that fits 1500 bytes of IPv4 + UDP), DURATION seconds per run, each message
# size in SIZES. Prints goodput and CPU per side (user+sys seconds of the process / its wall
# time; 1.00 = one core busy) and the braid/pion goodput ratio per size.
#
#   bench/loopback.sh                       # DURATION=10 SIZES="1444 16384 65536"
#   DURATION=3 SIZES=1444 bench/loopback.sh
#
# Env: DURATION (s), SIZES (braid's), PION_SIZES (default: SIZES), STREAMS (default 1),
# BRAID (default target/release/braid; cargo build --release first), PION (default
# interop/bin/pion-peer; interop/install.sh first). Both receivers verify every byte.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DURATION="${DURATION:-10}"
SIZES="${SIZES:-1444 16384 65536}"
PION_SIZES="${PION_SIZES:-$SIZES}"
STREAMS="${STREAMS:-1}"
BRAID="${BRAID:-$ROOT/target/release/braid}"
PION="${PION:-$ROOT/interop/bin/pion-peer}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
for b in "$BRAID" "$PION"; do
	[ -x "$b" ] || { echo "loopback: $b not found (build it first)" >&2; exit 1; }
done

# timed NAME CMD...: runs CMD with stdout/stderr in $WORK/NAME.{out,err}; bash's `time`
# writes "wall user sys" seconds to $WORK/NAME.time.
timed() {
	local name=$1
	shift
	local TIMEFORMAT='%R %U %S'
	{ time "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"; } 2>"$WORK/$name.time"
}

# cpu NAME: (user+sys)/wall of a finished timed run.
cpu() {
	awk '{ printf "%.2f", ($1 > 0) ? ($2 + $3) / $1 : 0 }' "$WORK/$1.time"
}

wait_listening() {
	for _ in $(seq 200); do
		grep -q listening "$WORK/server.err" 2>/dev/null && return 0
		sleep 0.05
	done
	echo "loopback: server did not start:" >&2
	cat "$WORK/server.err" >&2
	return 1
}

# field FILE KEY: a number from the last JSON line of FILE.
field() {
	python3 -c 'import json,sys; l=[x for x in open(sys.argv[1]) if x.startswith("{")]; print(json.loads(l[-1])[sys.argv[2]])' "$1" "$2"
}

fail_run() {
	echo "loopback: $1 failed" >&2
	tail -n 5 "$WORK"/server.* "$WORK"/client.* >&2
	exit 1
}

declare -A goodput
printf '%-6s %8s %8s %14s %11s %11s\n' impl msg_B time_s goodput_Mbps client_cpu server_cpu

run_braid() {
	local size=$1 port=$((20000 + RANDOM % 20000))
	timed server "$BRAID" perf server --bind "127.0.0.1:$port" --one-off --json &
	local sp=$!
	wait_listening
	timed client "$BRAID" perf client --bind 127.0.0.1:0 --connect "127.0.0.1:$port" \
		--time "${DURATION}s" --msg-size "$size" --streams "$STREAMS" --json || fail_run "braid client"
	wait "$sp" || fail_run "braid server"
	local mbps secs
	mbps=$(field "$WORK/client.out" goodput_mbps)
	secs=$(field "$WORK/client.out" duration_s)
	goodput[braid-$size]=$mbps
	printf '%-6s %8s %8.2f %14.1f %11s %11s\n' braid "$size" "$secs" "$mbps" "$(cpu client)" "$(cpu server)"
}

# pion-peer sends a byte count, not a duration: a short calibration run sizes the real one.
run_pion() {
	local size=$1 bytes=$2 show=$3 port=$((20000 + RANDOM % 20000))
	timed server "$PION" server --listen "127.0.0.1:$port" --mtu 1472 --verify \
		--timeout $((DURATION * 6 + 60)) &
	local sp=$!
	wait_listening
	timed client "$PION" client --connect "127.0.0.1:$port" --mtu 1472 --msg-size "$size" \
		--streams "$STREAMS" --bytes "$bytes" --timeout $((DURATION * 6 + 60)) || fail_run "pion client"
	wait "$sp" || fail_run "pion server"
	local gbps secs
	gbps=$(field "$WORK/client.out" gbit_per_s)
	secs=$(field "$WORK/client.out" elapsed_s)
	if [ "$show" = 1 ]; then
		goodput[pion-$size]=$(awk -v g="$gbps" 'BEGIN { print g * 1000 }')
		printf '%-6s %8s %8.2f %14.1f %11s %11s\n' pion "$size" "$secs" "${goodput[pion-$size]}" "$(cpu client)" "$(cpu server)"
	else
		# MiB for DURATION seconds at the calibration rate.
		awk -v g="$gbps" -v d="$DURATION" 'BEGIN { n = int(g * 1e9 / 8 * d / 1048576); if (n < 1) n = 1; print n "MiB" }'
	fi
}

for size in $SIZES; do
	run_braid "$size"
done
for size in $PION_SIZES; do
	bytes=$(run_pion "$size" 64MiB 0)
	run_pion "$size" "$bytes" 1
done
for size in $SIZES; do
	if [ -n "${goodput[pion-$size]:-}" ]; then
		awk -v b="${goodput[braid-$size]}" -v p="${goodput[pion-$size]}" -v s="$size" \
			'BEGIN { printf "braid/pion goodput at %s B: %.2f\n", s, (p > 0) ? b / p : 0 }'
	fi
done
