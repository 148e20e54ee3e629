#!/usr/bin/env bash
# braid-taps racing and fallback on real sockets between two network namespaces made here,
# A (client, 10.211.0.1) — B (server, 10.211.0.2), one veth. The server is the taps_server
# example (braid/UDP and TCP on one port), the client the taps_client example (braid first,
# TCP after the Connection Attempt Delay, RFC 8305 §5). Cases:
#
#   braid-wins     both stacks work: braid must win; prints its time to ready
#   udp-blocked    B drops incoming UDP to the port silently (a policy-routing blackhole:
#                  no ICMP, so braid's INIT just goes unanswered): TCP must win; prints its
#                  time to ready, which should be about the attempt delay (250 ms)
#   cib-remembers  udp still blocked, the client with a CIB file from the last case: TCP
#                  is tried first now, so it is ready in about one RTT, not 250 ms
#   tcp-prohibited udp still blocked, a policy file prohibits tcp: the client must fail
#                  with an EstablishmentError after its establishment timeout (2 s), not hang
#
# The UDP block, verified on this machine (no iptables/nft): in B
#   ip rule add pref 100 table local; ip rule del pref 0;
#   ip rule add pref 10 ipproto udp dport PORT blackhole
#
# Needs root and `ip netns`; otherwise prints SKIP and exits 0. The whole script runs under a
# watchdog of LIMIT seconds (default 60). Environment: EXAMPLES (directory with the
# taps_server and taps_client binaries; default $CARGO_TARGET_DIR/release/examples), LIMIT,
# OUT (logs).
set -uo pipefail
export LC_ALL=C
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$SELF")/.."

skip() {
  echo "SKIP: netns-taps: $*"
  exit 0
}
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null || skip "ip(8) not installed"
command -v timeout >/dev/null || skip "timeout(1) not installed"

LIMIT="${LIMIT:-60}"
if [ -z "${_BRAID_NETNS_INNER:-}" ]; then
  _BRAID_NETNS_INNER=1 exec timeout -k 5 "$LIMIT" bash "$SELF" "$@"
fi

EXAMPLES="${EXAMPLES:-${CARGO_TARGET_DIR:-$PWD/target}/release/examples}"
SERVER="$EXAMPLES/taps_server" CLIENT="$EXAMPLES/taps_client"
for b in "$SERVER" "$CLIENT"; do
  [ -x "$b" ] || { echo "FAIL: netns-taps: $b not found (cargo build --release -p braid-taps --examples)"; exit 1; }
done
OUT="${OUT:-$(mktemp -d)}"
SUF="$$-$RANDOM"
NA="tapsA-$SUF" NB="tapsB-$SUF"
PORT=4433
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for n in "$NA" "$NB"; do ip netns del "$n" 2>/dev/null; done
}
trap cleanup EXIT

for n in "$NA" "$NB"; do
  ip netns add "$n" || skip "cannot create network namespaces"
  ip -n "$n" link set lo up
done
ip link add ta0 netns "$NA" type veth peer name tb0 netns "$NB" || skip "no veth"
ip -n "$NA" addr add 10.211.0.1/24 dev ta0
ip -n "$NB" addr add 10.211.0.2/24 dev tb0
ip -n "$NA" link set ta0 up
ip -n "$NB" link set tb0 up

ip netns exec "$NB" "$SERVER" "10.211.0.2:$PORT" >"$OUT/server.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 50); do
  grep -q "listening braid" "$OUT/server.log" 2>/dev/null && break
  sleep 0.1
done
grep -q "listening braid" "$OUT/server.log" || { echo "FAIL: netns-taps: server did not start"; cat "$OUT/server.log"; exit 1; }

FAILED=0 PASSED=0
# The first occurrence of a top-level key (the attempts list comes last).
field() { grep -o "\"$2\": \"\{0,1\}[^\",}]*" <<<"$1" | head -1 | sed 's/.*: "\{0,1\}//'; }
check() { # name, condition (0/1), detail
  if [ "$2" = 1 ]; then
    echo "PASS: netns-taps $1: $3"
    PASSED=$((PASSED + 1))
  else
    echo "FAIL: netns-taps $1: $3"
    FAILED=$((FAILED + 1))
  fi
}
client() { timeout 20 ip netns exec "$NA" "$CLIENT" "10.211.0.2:$PORT" "$@" 2>&1 | tail -1; }

r=$(client)
check braid-wins "$([ "$(field "$r" stack)" = braid ] && [ "$(field "$r" echo_ok)" = true ] && echo 1 || echo 0)" \
  "stack=$(field "$r" stack) ready_ms=$(field "$r" ready_ms) ($r)"

ip -n "$NB" rule add pref 100 table local
ip -n "$NB" rule del pref 0
ip -n "$NB" rule add pref 10 ipproto udp dport "$PORT" blackhole

rm -f "$OUT/cib.redb"
r=$(client --cib "$OUT/cib.redb")
ready=$(field "$r" ready_ms)
# Generous slack: a measurement, not a speed test; TCP must not start before the delay.
ok=$(awk -v t="${ready:-0}" 'BEGIN { print (t >= 200 && t < 5000) ? 1 : 0 }')
check udp-blocked "$([ "$(field "$r" stack)" = tcp ] && [ "$(field "$r" echo_ok)" = true ] && [ "$ok" = 1 ] && echo 1 || echo 0)" \
  "stack=$(field "$r" stack) ready_ms=$ready attempt_delay_ms=250 ($r)"

r=$(client --cib "$OUT/cib.redb")
check cib-remembers "$([ "$(field "$r" stack)" = tcp ] && echo 1 || echo 0)" \
  "stack=$(field "$r" stack) ready_ms=$(field "$r" ready_ms) (tcp first from the CIB)"

printf '[[policy]]\nname = "no tcp"\nprohibit = ["tcp"]\n' >"$OUT/no-tcp.toml"
t0=$(date +%s%N)
r=$(client --policy "$OUT/no-tcp.toml" --timeout-ms 2000)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check tcp-prohibited "$(grep -q '"error"' <<<"$r" && echo 1 || echo 0)" "failed after ${ms} ms: $r"

echo "netns-taps: $PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
