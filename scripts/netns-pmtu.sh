#!/usr/bin/env bash
# Path MTU on real sockets: three network namespaces made here, A — R — B, where
# the A–R veth has an MTU of 1500 and the R–B veth 1400 (R forwards IPv4 and IPv6). braid
# sets DF, so R answers a larger packet with ICMP "fragmentation needed" / ICMPv6 "packet
# too big", which braid reads from the socket error queue. `braid perf client` in A sends
# 3000-byte messages (each larger than either MTU, so cut into DATA chunks) to `braid perf
# server --one-off` in B, in four cases:
#
#   plpmtud-icmp      IPv4, --plpmtud, R sends ICMP with the MTU
#   plpmtud-ipv6      IPv6, --plpmtud, R sends ICMPv6 Packet Too Big
#   plpmtud-blackhole IPv4, --plpmtud, R sends no ICMP at all (a policy rule routes R's own
#                     ICMP into a blackhole route): only lost probes tell (RFC 8899 §4.3)
#   icmp-only         IPv4, no PLPMTUD: the first 1500-byte packets die at R, the ICMP lowers
#                     the path's limit, and chunks already cut for 1500 bytes go again with
#                     DF cleared (`Transmit::may_fragment`), fragmented; nothing is lost
#   icmp-only-ipv6    the same over IPv6 (A fragments: IPv6 routers never do)
#
# A case passes if the server verified every message ("ok": true), the client's path ends
# with an SCTP packet limit that fits 1400 bytes of IP packet, and, with PLPMTUD, above the
# base (1200 IPv4, 1280 IPv6: the search got there) with the search over.
#
# Needs root and `ip netns`; otherwise prints SKIP and exits 0. The whole script runs under
# a watchdog of LIMIT seconds (default 90). Environment: BRAID (binary), LIMIT, OUT (logs),
# CASES (space-separated subset of the case names).
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

LIMIT="${LIMIT:-90}"
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
ip -n "$NA" addr add fd00:210:1::1/64 dev pa0 nodad
ip -n "$NR" addr add fd00:210:1::2/64 dev pr0 nodad
ip -n "$NR" addr add fd00:210:2::1/64 dev pr1 nodad
ip -n "$NB" addr add fd00:210:2::2/64 dev pb0 nodad
# The middle of the path: 1400 bytes between R and B.
ip -n "$NR" link set pr1 mtu 1400
ip -n "$NB" link set pb0 mtu 1400
for l in "$NA pa0" "$NR pr0" "$NR pr1" "$NB pb0"; do
  set -- $l
  ip -n "$1" link set "$2" up
done
ip -n "$NA" route add 10.210.2.0/24 via 10.210.1.2
ip -n "$NB" route add 10.210.1.0/24 via 10.210.2.1
ip -n "$NA" -6 route add fd00:210:2::/64 via fd00:210:1::2
ip -n "$NB" -6 route add fd00:210:1::/64 via fd00:210:2::1
ip netns exec "$NR" sysctl -qw net.ipv4.ip_forward=1
ip netns exec "$NR" sysctl -qw net.ipv6.conf.all.forwarding=1

# run_case NAME FAMILY(4|6) PLPMTUD(0|1) BLACKHOLE(0|1) CLIENT-ARGS...
run_case() {
  local name=$1 fam=$2 plp=$3 bh=$4
  shift 4
  local a b base hdr
  if [ "$fam" = 6 ]; then
    a="[fd00:210:1::1]:9899" b="[fd00:210:2::2]:9899" base=1280 hdr=48
  else
    a="10.210.1.1:9899" b="10.210.2.2:9899" base=1200 hdr=28
  fi
  # No PMTU the kernel learnt in an earlier case.
  ip -n "$NA" route flush cache 2>/dev/null
  ip -n "$NA" -6 route flush cache 2>/dev/null
  if [ "$bh" = 1 ]; then
    ip -n "$NR" route add blackhole default table 210
    ip -n "$NR" rule add ipproto icmp table 210 priority 100
  fi
  local o="$OUT/$name"
  mkdir -p "$o"
  ip netns exec "$NB" "$BRAID" perf server --bind "$b" --one-off --json \
    >"$o/server.out" 2>"$o/server.err" &
  local spid=$!
  PIDS+=($spid)
  for _ in $(seq 50); do grep -q "listening on" "$o/server.err" 2>/dev/null && break; sleep 0.1; done
  local extra=()
  [ "$plp" = 1 ] && extra+=(--plpmtud)
  ip netns exec "$NA" "$BRAID" perf client --bind "$a" --connect "$b" \
    --msg-size 3000 --json "${extra[@]}" "$@" >"$o/client.out" 2>"$o/client.err"
  local rc=$?
  wait "$spid"
  local src=$?
  if [ "$bh" = 1 ]; then
    ip -n "$NR" rule del ipproto icmp table 210 priority 100
    ip -n "$NR" route del blackhole default table 210
  fi
  local fail=0 mtu state
  mtu=$(grep -o '"mtu":[0-9]*' "$o/client.out" | head -1 | cut -d: -f2)
  state=$(grep -o '"pmtu_state":[a-z"-]*' "$o/client.out" | head -1 | cut -d: -f2)
  echo "netns-pmtu: $name: client exit $rc, server exit $src, SCTP packet limit ${mtu:-?}" \
    "(IP $((${mtu:-0} + hdr))), PLPMTUD state ${state:-?}"
  [ "$rc" = 0 ] && [ "$src" = 0 ] || fail=1
  grep -q '"ok": *true' "$o/server.out" || { echo "  server did not verify the data"; fail=1; }
  [ -n "$mtu" ] && [ "$mtu" -le $((1400 - hdr)) ] || { echo "  limit does not fit 1400: $mtu"; fail=1; }
  if [ "$plp" = 1 ]; then
    [ "$state" = '"done"' ] || { echo "  PLPMTUD did not finish"; fail=1; }
    # The search ends within 16 bytes of 1400, above the base.
    [ -n "$mtu" ] && [ "$mtu" -gt $((base - hdr)) ] || { echo "  PMTU not found: $mtu"; fail=1; }
  fi
  if [ "$fail" = 0 ]; then echo "  PASS"; else
    echo "  FAIL"
    cat "$o/client.err" "$o/server.err"
    FAILED+=("$name")
  fi
}

FAILED=()
CASES="${CASES:-plpmtud-icmp plpmtud-ipv6 icmp-only icmp-only-ipv6 plpmtud-blackhole}"
for c in $CASES; do
  case "$c" in
    plpmtud-icmp) run_case "$c" 4 1 0 --bytes 3MB ;;
    plpmtud-ipv6) run_case "$c" 6 1 0 --bytes 3MB ;;
    icmp-only) run_case "$c" 4 0 0 --bytes 3MB ;;
    icmp-only-ipv6) run_case "$c" 6 0 0 --bytes 3MB ;;
    # Lost probes cost an RTO (1 s minimum) each, MAX_PROBES per size: send long enough.
    plpmtud-blackhole) run_case "$c" 4 1 1 --time 15s ;;
    *) echo "unknown case $c"; FAILED+=("$c") ;;
  esac
done
if [ "${#FAILED[@]}" = 0 ]; then echo "PASS: netns-pmtu ($CASES; logs in $OUT)"; else
  echo "FAIL: netns-pmtu: ${FAILED[*]} (logs in $OUT)"; exit 1; fi
