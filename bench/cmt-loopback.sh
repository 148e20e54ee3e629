#!/usr/bin/env bash
# CMT against one path on loopback, alternating in one invocation so the numbers come from
# the same machine in the same state: ROUNDS x (one path, then CMT over two paths), each
# DURATION seconds of MSG-byte messages. One path: server on 127.0.0.1, client on 127.0.0.1,
# CMT off. CMT: server on 127.0.0.1 and 127.0.0.2, client on 127.0.0.3 and 127.0.0.4,
# `--cmt on` (the server turns CMT on itself when it has two addresses). Prints goodput, CPU
# per side, goodput per CPU-second of each side (Mbit per CPU-second: what a busy machine
# changes least), the retransmission count and the server's SACKs per client packet per run, then the CMT/one-path ratio of the means.
#
#   bench/cmt-loopback.sh                  # ROUNDS=3 DURATION=5 MSG=1452
#   ROUNDS=1 DURATION=3 bench/cmt-loopback.sh
#
# Env: ROUNDS, DURATION (s), MSG (bytes), STREAMS (default 1), SCHEDULER (default rr),
# BRAID (default target/release/braid; cargo build --release first), PERF_RECORD (a
# directory: record each client and server with `perf record` there), PERF_ARGS (its
# options, default -g; e.g. "--call-graph dwarf,16384 -F 2000").
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ROUNDS="${ROUNDS:-3}"
DURATION="${DURATION:-5}"
MSG="${MSG:-1452}"
STREAMS="${STREAMS:-1}"
SCHEDULER="${SCHEDULER:-rr}"
BRAID="${BRAID:-${CARGO_TARGET_DIR:-$ROOT/target}/release/braid}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
[ -x "$BRAID" ] || { echo "cmt-loopback: $BRAID not found (build it first)" >&2; exit 1; }

# timed NAME CMD...: runs CMD (under perf record if PERF_RECORD is set) with stdout/stderr in
# $WORK/NAME.{out,err}; bash's `time` writes "wall user sys" seconds to $WORK/NAME.time.
timed() {
	local name=$1
	shift
	local TIMEFORMAT='%R %U %S'
	if [ -n "${PERF_RECORD:-}" ]; then
		set -- perf record -q ${PERF_ARGS:--g} -o "$PERF_RECORD/$name.data" -- "$@"
	fi
	{ time "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"; } 2>"$WORK/$name.time"
}

cpu() {
	awk '{ printf "%.2f", ($1 > 0) ? ($2 + $3) / $1 : 0 }' "$WORK/$1.time"
}

wait_listening() {
	for _ in $(seq 200); do
		local c
		c=$(grep -c listening "$WORK/$1.err" 2>/dev/null || true)
		[ "${c:-0}" -ge "$2" ] && return 0
		sleep 0.05
	done
	echo "cmt-loopback: server did not start:" >&2
	cat "$WORK/$1.err" >&2
	return 1
}

# field FILE EXPR: a value of the last JSON line of FILE (EXPR is Python over `j`).
field() {
	python3 -c 'import json,sys; l=[x for x in open(sys.argv[1]) if x.startswith("{")]; j=json.loads(l[-1]); print(eval(sys.argv[2]))' "$1" "$2"
}

fail_run() {
	echo "cmt-loopback: $1 failed" >&2
	tail -n 5 "$WORK"/*.out "$WORK"/*.err >&2
	exit 1
}

printf '%-5s %5s %14s %11s %11s %12s %12s %6s %9s\n' mode round goodput_Mbps client_cpu server_cpu \
	client_Mb/cs server_Mb/cs rtx sacks/pkt
sum_one=0
sum_cmt=0
run() {
	local mode=$1 round=$2 port=$((20000 + RANDOM % 20000))
	local sbind=(--bind "127.0.0.1:$port") cbind=(--bind 127.0.0.1:0) cmt=off n=1
	if [ "$mode" = cmt ]; then
		sbind=(--bind "127.0.0.1:$port" --bind "127.0.0.2:$port")
		cbind=(--bind "127.0.0.3:$port" --bind "127.0.0.4:$port")
		cmt=on n=2
	fi
	timed "server-$mode-$round" "$BRAID" perf server "${sbind[@]}" --one-off --json &
	local sp=$!
	wait_listening "server-$mode-$round" "$n"
	timed "client-$mode-$round" "$BRAID" perf client "${cbind[@]}" --connect "127.0.0.1:$port" \
		--time "${DURATION}s" --msg-size "$MSG" --streams "$STREAMS" --scheduler "$SCHEDULER" \
		--cmt "$cmt" --json || fail_run "client ($mode)"
	wait "$sp" || fail_run "server ($mode)"
	local out="$WORK/client-$mode-$round.out" mbps rtx
	mbps=$(field "$out" 'j["goodput_mbps"]')
	rtx=$(field "$out" 'j["retransmissions"]')
	pkts=$(field "$out" 'sum(p["packets_sent"] for p in j["paths"])')
	sacks=$(field "$WORK/server-$mode-$round.out" 'j["sacks_sent"]')
	local cc sc
	cc=$(cpu "client-$mode-$round")
	sc=$(cpu "server-$mode-$round")
	printf '%-5s %5s %14.1f %11s %11s %12.0f %12.0f %6s %9.3f\n' "$mode" "$round" "$mbps" "$cc" "$sc" \
		"$(awk -v g="$mbps" -v c="$cc" 'BEGIN { print (c > 0) ? g / c : 0 }')" \
		"$(awk -v g="$mbps" -v c="$sc" 'BEGIN { print (c > 0) ? g / c : 0 }')" "$rtx" \
		"$(awk -v s="$sacks" -v p="$pkts" 'BEGIN { print (p > 0) ? s / p : 0 }')"
	if [ "$mode" = cmt ]; then
		sum_cmt=$(awk -v a="$sum_cmt" -v b="$mbps" 'BEGIN { print a + b }')
	else
		sum_one=$(awk -v a="$sum_one" -v b="$mbps" 'BEGIN { print a + b }')
	fi
}

for r in $(seq "$ROUNDS"); do
	run one "$r"
	run cmt "$r"
done
awk -v o="$sum_one" -v c="$sum_cmt" -v n="$ROUNDS" \
	'BEGIN { printf "mean one path %.1f Mbit/s, CMT %.1f Mbit/s, CMT/one = %.2f\n", o / n, c / n, (o > 0) ? c / o : 0 }'
