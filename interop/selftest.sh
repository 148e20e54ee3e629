#!/usr/bin/env bash
# Runs the interop peers against each other on loopback (every server x client
# pair, ordered and unordered, verify and echo+verify) and prints one line per
# run and a closing "N passed, N failed" line. Exit status 0 iff all passed.
#
#   interop/selftest.sh                 # 10 MiB over 4 streams
#   BYTES=1MiB STREAMS=3 PEERS="pion" interop/selftest.sh
#   PEERS="braid pion aiortc" interop/selftest.sh   # braid too (cargo build --release first)
#
# Run interop/install.sh first.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BYTES="${BYTES:-10MiB}"
STREAMS="${STREAMS:-4}"
PEERS="${PEERS:-pion aiortc}"
TIMEOUT="${TIMEOUT:-120}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

peer_cmd() {
	case "$1" in
	pion) echo "$HERE/bin/pion-peer" ;;
	aiortc) echo "$HERE/aiortc/.venv/bin/python $HERE/aiortc/peer.py" ;;
	braid) echo "$HERE/braid-peer" ;;
	esac
}

# run_pair SERVER CLIENT SERVER_FLAGS CLIENT_FLAGS
run_pair() {
	local s=$1 c=$2 sflags=$3 cflags=$4 port sp src crc
	# braid perf has no echo mode: a braid server cannot echo, a braid client cannot verify an echo.
	if { [ "$s" = braid ] && [[ "$sflags" == *--echo* ]]; } || { [ "$c" = braid ] && [[ "$cflags" == *--verify* ]]; }; then
		echo "SKIP $s-server($sflags) <- $c-client($cflags): braid perf has no echo mode"
		return 2
	fi
	port=$((20000 + RANDOM % 20000))
	$(peer_cmd "$s") server --listen "127.0.0.1:$port" --timeout "$TIMEOUT" $sflags \
		>"$WORK/s.json" 2>"$WORK/s.err" &
	sp=$!
	for _ in $(seq 200); do
		grep -q listening "$WORK/s.err" 2>/dev/null && break
		sleep 0.05
	done
	timeout $((TIMEOUT + 10)) $(peer_cmd "$c") client --connect "127.0.0.1:$port" \
		--bytes "$BYTES" --streams "$STREAMS" --timeout "$TIMEOUT" $cflags \
		>"$WORK/c.json" 2>"$WORK/c.err"
	crc=$?
	wait "$sp"
	src=$?
	local name="$s-server($sflags) <- $c-client($cflags)"
	if [ "$crc" = 0 ] && [ "$src" = 0 ]; then
		echo "PASS $name: $(cat "$WORK/c.json")"
		return 0
	fi
	echo "FAIL $name: client rc=$crc server rc=$src"
	echo "  client: $(cat "$WORK/c.json")"
	echo "  server: $(cat "$WORK/s.json")"
	tail -5 "$WORK/c.err" "$WORK/s.err" | sed 's/^/  /'
	return 1
}

pass=0
fail=0
skip=0
for s in $PEERS; do
	for c in $PEERS; do
		for order in "" "--unordered"; do
			for flags in "--verify|$order" "--echo|--verify $order"; do
				run_pair "$s" "$c" "${flags%%|*}" "${flags#*|}"
				case $? in 0) pass=$((pass + 1)) ;; 2) skip=$((skip + 1)) ;; *) fail=$((fail + 1)) ;; esac
			done
		done
	done
done
echo "interop: $pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
