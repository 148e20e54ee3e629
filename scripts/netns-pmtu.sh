#!/usr/bin/env bash
# PLPMTUD on real sockets (issue 15): three network namespaces made here, A — R — B, where
# the A–R veth has an MTU of 1500 and the R–B veth 1400 (R forwards; DF is set, so R
# answers a larger packet with ICMP "fragmentation needed", which braid reads from the
# socket error queue). `braid perf client --plpmtud` in A sends 3000-byte messages (each
# larger than either MTU, so cut into DATA chunks) to `braid perf server` in B. Passes if the
# server verified every message ("ok": true) and the client's path ends with an SCTP packet
# limit that fits 1400 bytes of IP packet, above the 1200-byte base (the search got there).
#
# Needs root and `ip netns`; otherwise prints SKIP and exits 0. The whole script runs under
# a watchdog of LIMIT seconds (default 60). Environment: BRAID (binary), LIMIT, OUT (logs).
set -uo pipefail
export LC_ALL=C
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$SELF")/.."

skip() {
  echo "SKIP: netns-pmtu: $*"
  exit 0
}
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null || skip "ip(8) not installed"
command -v timeout >/dev/null || skip "timeout(1) not installed"

LIMIT="${LIMIT:-60}"
if [ -z "${_BRAID_NETNS_INNER:-}" ]; then
  _BRAID_NETNS_INNER=1 exec timeout -k 5 "$LIMIT" bash "$SELF" "$@"
fi

BRAID="${BRAID:-${CARGO_TARGET_DIR:-$PWD/target}/release/braid}"
[ -x "$BRAID" ] || { echo "FAIL: netns-pmtu: $BRAID not found"; exit 1; }
OUT="${OUT:-$(mktemp -d)}"
SUF="$$-$RANDOM"
NA="pmtuA-$SUF" NR="pmtuR-$SUF" NB="pmtuB-$SUF"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for n in "$NA" "$NR" "$NB"; do ip netns del "$n" 2>/dev/null; done
}
trap cleanup EXIT

for n in "$NA" "$NR" "$NB"; do
  ip netns add "$n" || skip "cannot create network namespaces"
  ip -n "$n" link set lo up
done
ip link add pa0 netns "$NA" type veth peer name pr0 netns "$NR" || skip "no veth"
ip link add pr1 netns "$NR" type veth peer name pb0 netns "$NB" || skip "no veth"
ip -n "$NA" addr add 10.210.1.1/24 dev pa0
ip -n "$NR" addr add 10.210.1.2/24 dev pr0
ip -n "$NR" addr add 10.210.2.1/24 dev pr1
ip -n "$NB" addr add 10.210.2.2/24 dev pb0
# The middle of the path: 1400 bytes between R and B.
ip -n "$NR" link set pr1 mtu 1400
ip -n "$NB" link set pb0 mtu 1400
for l in "$NA pa0" "$NR pr0" "$NR pr1" "$NB pb0"; do
  set -- $l
  ip -n "$1" link set "$2" up
done
ip -n "$NA" route add 10.210.2.0/24 via 10.210.1.2
ip -n "$NB" route add 10.210.1.0/24 via 10.210.2.1
ip netns exec "$NR" sysctl -qw net.ipv4.ip_forward=1

ip netns exec "$NB" "$BRAID" perf server --bind 10.210.2.2:9899 --one-off --json \
  >"$OUT/server.out" 2>"$OUT/server.err" &
PIDS+=($!)
for _ in $(seq 50); do grep -q "listening on" "$OUT/server.err" 2>/dev/null && break; sleep 0.1; done
ip netns exec "$NA" "$BRAID" perf client --bind 10.210.1.1:9899 --connect 10.210.2.2:9899 \
  --plpmtud --bytes 3MB --msg-size 3000 --json >"$OUT/client.out" 2>"$OUT/client.err"
rc=$?
wait "${PIDS[0]}"
src=$?
echo "netns-pmtu: client exit $rc, server exit $src"
fail=0
mtu=$(grep -o '"mtu":[0-9]*' "$OUT/client.out" | head -1 | cut -d: -f2)
echo "netns-pmtu: path SCTP packet limit ${mtu:-?} (IP $((${mtu:-0} + 28)))"
# PLPMTUD ran and ended its search (without it the ICMP alone would lower the limit too).
grep -q '"pmtu_state":"done"' "$OUT/client.out" || { echo "PLPMTUD did not finish"; fail=1; }
[ "$rc" = 0 ] && [ "$src" = 0 ] || fail=1
grep -q '"ok": *true' "$OUT/server.out" || { echo "server did not verify the data"; fail=1; }
# 1400 bytes of IP packet less IPv4 and UDP headers; the search ends within 16 bytes.
[ -n "$mtu" ] && [ "$mtu" -le $((1400 - 28)) ] && [ "$mtu" -gt $((1200 - 28)) ] ||
  { echo "PMTU not found: $mtu"; fail=1; }
if [ "$fail" = 0 ]; then echo "PASS: netns-pmtu (logs in $OUT)"; else
  echo "FAIL: netns-pmtu (logs in $OUT)"; cat "$OUT/client.err" "$OUT/server.err"; exit 1; fi
