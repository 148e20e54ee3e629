#!/usr/bin/env bash
# Runs the interop peers against each other on loopback (every server x client pair, ordered
# and unordered, server-verify and echo + client-verify) and prints one line per run and a
# closing "N passed, N failed" line. Exit status 0 iff all passed.
#
# When braid is one side of a run, braid records the association (`--pcap`) and
# interop/check-pcap.sh validates the capture with tshark (CRC32c checking on): a
# malformed frame, a bad checksum, an expert error or a capture without DATA and SACK
# fails the run.
#
#   interop/selftest.sh                 # pion x aiortc, 10 MiB over 4 streams
#   BYTES=1MiB STREAMS=3 PEERS="pion" interop/selftest.sh
#   PEERS="braid pion aiortc" interop/selftest.sh   # braid too (cargo build --release first)
#   PEERS="braid pion aiortc" ONLY_WITH=braid interop/selftest.sh  # what CI runs
#
# Env: BYTES, STREAMS, PEERS (of braid pion aiortc dcsctp), TIMEOUT (seconds per run),
# ONLY_WITH (run only the pairs one side of which is this peer), BRAID (the braid binary,
# default target/release/braid), KEEP_PCAPS (directory: keep the captures of failed runs
# there), DCSCTP_IDATA (on: dcsctp-peer offers I-DATA), DCSCTP_LOSS (percent: dcsctp-peer
# drops that share of datagrams each way while established).
# Run interop/install.sh first.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BYTES="${BYTES:-10MiB}"
STREAMS="${STREAMS:-4}"
PEERS="${PEERS:-pion aiortc}"
TIMEOUT="${TIMEOUT:-120}"
ONLY_WITH="${ONLY_WITH:-}"
KEEP_PCAPS="${KEEP_PCAPS:-}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

peer_cmd() {
	case "$1" in
	pion) echo "$HERE/bin/pion-peer" ;;
	aiortc) echo "$HERE/aiortc/.venv/bin/python $HERE/aiortc/peer.py" ;;
	braid) echo "$HERE/braid-peer" ;;
	dcsctp) echo "$HERE/bin/dcsctp-peer" ;;
	esac
}

# run_pair SERVER CLIENT SERVER_FLAGS CLIENT_FLAGS
run_pair() {
	local s=$1 c=$2 sflags=$3 cflags=$4 port sp src crc t0 pcap="" check="" ok=1
	local name="$s-server($sflags) <- $c-client($cflags)"
	port=$((20000 + RANDOM % 20000))
	rm -f "$WORK"/*
	# braid records the association: the server if it is braid, else the client.
	if [ "$s" = braid ]; then
		pcap="$WORK/run.pcap"
		sflags="$sflags --pcap $pcap"
	elif [ "$c" = braid ]; then
		pcap="$WORK/run.pcap"
		cflags="$cflags --pcap $pcap"
	fi
	# DCSCTP_IDATA=on: dcSCTP offers I-DATA (RFC 8260); it is used only if the other side
	# lists I_DATA too (pion does; braid does not yet, so runs with braid stay on DATA).
	if [ "${DCSCTP_IDATA:-off}" = on ]; then
		[ "$s" = dcsctp ] && sflags="$sflags --idata"
		[ "$c" = dcsctp ] && cflags="$cflags --idata"
	fi
	# DCSCTP_LOSS=PERCENT: every dcsctp-peer drops that share of datagrams each way while the
	# association is established (so its peer's loss recovery is exercised too).
	if [ -n "${DCSCTP_LOSS:-}" ]; then
		[ "$s" = dcsctp ] && sflags="$sflags --loss $DCSCTP_LOSS"
		[ "$c" = dcsctp ] && cflags="$cflags --loss $DCSCTP_LOSS"
	fi
	t0=$EPOCHREALTIME
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
	[ "$crc" = 0 ] && [ "$src" = 0 ] || ok=0
	if [ -n "$pcap" ]; then
		check=$("$HERE/check-pcap.sh" "$pcap" "$port" 2>&1) || ok=0
	fi
	local secs
	secs=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { print b - a }')
	if [ "$ok" = 1 ]; then
		printf 'PASS %s (%.1f s): %s\n' "$name" "$secs" "$(cat "$WORK/c.json")"
		[ -n "$check" ] && echo "  $check"
		return 0
	fi
	printf 'FAIL %s (%.1f s): client rc=%s server rc=%s\n' "$name" "$secs" "$crc" "$src"
	echo "  client: $(cat "$WORK/c.json")"
	echo "  server: $(cat "$WORK/s.json")"
	[ -n "$check" ] && echo "$check" | sed 's/^/  /'
	tail -n 5 "$WORK/c.err" "$WORK/s.err" | sed 's/^/  /'
	if [ -n "$pcap" ] && [ -n "$KEEP_PCAPS" ] && [ -f "$pcap" ]; then
		mkdir -p "$KEEP_PCAPS"
		local keep
		keep="$KEEP_PCAPS/$s-$c-$port.pcap"
		cp "$pcap" "$keep" && echo "  capture kept: $keep (udp port $port)"
	fi
	return 1
}

pass=0
fail=0
for s in $PEERS; do
	for c in $PEERS; do
		if [ -n "$ONLY_WITH" ] && [ "$s" != "$ONLY_WITH" ] && [ "$c" != "$ONLY_WITH" ]; then
			continue
		fi
		for order in "" "--unordered"; do
			for flags in "--verify|$order" "--echo|--verify $order"; do
				if run_pair "$s" "$c" "${flags%%|*}" "${flags#*|}"; then
					pass=$((pass + 1))
				else
					fail=$((fail + 1))
				fi
			done
		done
	done
done
echo "interop: $pass passed, $fail failed"
[ "$fail" = 0 ]
