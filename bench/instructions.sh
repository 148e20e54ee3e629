#!/usr/bin/env bash
# Instructions one side of a fixed one-path `braid perf` transfer executes (valgrind's
# cachegrind, no cache simulation): deterministic where goodput on a 2-core machine is not,
# so two binaries can be compared to a fraction of a percent. The other side runs natively.
#
#   BRAID=target/release/braid SIDE=server bench/instructions.sh     # BYTES=128MiB
#   BRAID=/tmp/braid-old SIDE=client bench/instructions.sh
# Prints the total; `cg_annotate --auto=no $OUT` shows it per function.
set -euo pipefail
BRAID="${BRAID:-target/release/braid}"
SIDE="${SIDE:-server}"
BYTES="${BYTES:-128MiB}"
PORT="${PORT:-19$((RANDOM % 900 + 100))}"
OUT="${OUT:-$(mktemp /tmp/braid-cachegrind.XXXXXX)}"
cg=(valgrind --tool=cachegrind --cache-sim=no "--cachegrind-out-file=$OUT")
server=("$BRAID" perf server --bind "127.0.0.1:$PORT")
client=("$BRAID" perf client --bind 127.0.0.1:0 --connect "127.0.0.1:$PORT" --bytes "$BYTES")
if [[ $SIDE == server ]]; then
	"${cg[@]}" "${server[@]}" >/dev/null 2>&1 &
	srv=$!
	sleep 3 # valgrind starts slowly
	"${client[@]}" >/dev/null
else
	"${server[@]}" >/dev/null 2>&1 &
	srv=$!
	sleep 0.5
	"${cg[@]}" "${client[@]}" >/dev/null 2>&1
fi
kill -INT "$srv" 2>/dev/null || true
wait "$srv" 2>/dev/null || true
echo "$SIDE of a $BYTES transfer: $(awk '/^summary:/ { print $2 }' "$OUT") instructions ($OUT)"
