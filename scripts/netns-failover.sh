#!/usr/bin/env bash
# Failover on real sockets : two network namespaces made here,
# joined by two veth pairs (path 1: 10.201.1.1 <-> 10.201.1.2, path 2: 10.201.2.1 <->
# 10.201.2.2), `braid perf server` multi-homed in one, `braid perf client` multi-homed in
# the other. Mid-transfer the primary path (1) is cut silently at both ends, then restored
# while path 2 is cut, then path 2 is restored; the transfer must go on, the server must
# verify every byte (each message once, in order, every stream complete: "ok": true), and
# the graceful close must complete (both processes exit 0 on their own, within a bound).
#
# Four scenarios: data A->B and B->A (the namespaces swap roles), each with --cmt off and on.
# One report line per scenario and cut: failover time, measured two ways:
#   wire  : from the cut until the receiver's veth counters (both paths, sampled every
#           100 ms) show the data rate back at >= THRESH % of the rate before the cut
#           (in every 100 ms for 0.5 s); 0.1 s resolution, counts retransmissions too;
#   gput  : from the cut until the start of the first of the client's per-second goodput
#           lines (acknowledged bytes) that starts after the cut and is back at >= THRESH %;
#           1 s resolution, an upper bound.
#
# A "cut" replaces the root qdisc of the veth end with `blackhole` on both ends (every
# packet leaving either end is dropped, the sender sees no error: a silent path failure;
# neighbour entries are permanent, so no ARP failure turns it into "host unreachable").
# The prio qdisc, the matchall classifier and the gact action (the usual way to drop
# everything) are missing from some kernels (the one this was written on has none of them);
# blackhole is there. Without blackhole the script falls back to `ip link set down` of the
# path's veth (not silent: the kernel sees the carrier go; the report says "cut=linkdown").
# Each path is otherwise limited to RATE per direction with tbf (RATE=0 or no tbf: no
# limit, CPU-bound).
#
# Needs root and `ip netns`; otherwise prints SKIP and exits 0. Bounded: the whole script
# runs under a watchdog of LIMIT seconds (default 170). Exit status non-zero on any failure.
# Logs (both sides' stdout/stderr, counters) stay in $OUT (default: a temporary directory,
# printed at the end).
#
# Environment: BRAID (binary), CUT_MODE (blackhole, the default, or linkdown), RATE (default 100mbit), PRE (s of transfer before the first
# cut, 3), HOLD (s each path stays cut, 6), TAIL (s after the last restore, 3), THRESH (%, 40),
# SCENARIOS (default "AB:off AB:on BA:off BA:on"), STREAMS (4), OUT, LIMIT; MAX_FAILOVER
# (seconds; if set, a failover (wire) longer than that, or none, fails the scenario; unset:
# failover times are reported, not judged); for debugging,
# CLIENT_ARGS / SERVER_ARGS (extra perf arguments; "@D" becomes the scenario's log
# directory, e.g. CLIENT_ARGS="--pcap @D/client.pcap").
set -uo pipefail
export LC_ALL=C
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$SELF")/.."

skip() {
  echo "SKIP: netns-failover: $*"
  exit 0
}
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null || skip "ip(8) not installed"
command -v tc >/dev/null || skip "tc(8) not installed"
command -v timeout >/dev/null || skip "timeout(1) not installed"

# The watchdog: the whole test, cleanup included, in LIMIT seconds.
LIMIT="${LIMIT:-170}"
if [ -z "${_BRAID_NETNS_INNER:-}" ]; then
  _BRAID_NETNS_INNER=1 exec timeout -k 5 "$LIMIT" bash "$SELF" "$@"
fi

BRAID="${BRAID:-${CARGO_TARGET_DIR:-$PWD/target}/release/braid}"
RATE="${RATE:-100mbit}"
PRE="${PRE:-3}"
HOLD="${HOLD:-6}"
TAIL="${TAIL:-3}"
THRESH="${THRESH:-40}"
STREAMS="${STREAMS:-4}"
MAX_FAILOVER="${MAX_FAILOVER:-}"
SCENARIOS="${SCENARIOS:-AB:off AB:on BA:off BA:on}"
CLIENT_ARGS="${CLIENT_ARGS:-}"
SERVER_ARGS="${SERVER_ARGS:-}"
PORT=9899
if [ ! -x "$BRAID" ]; then
  echo "FAIL: netns-failover: $BRAID not found (cargo build --release -p braid-cli)"
  exit 1
fi

SUF="$$-$RANDOM"
NA="braidA-$SUF"
NB="braidB-$SUF"
OUT="${OUT:-$(mktemp -d /tmp/braid-netns-failover.XXXXXX)}"
mkdir -p "$OUT"
PIDS=()

cleanup() {
  local p ns
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for ns in "$NA" "$NB"; do
    # Anything still running in our namespaces was started by this script.
    for p in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$p" 2>/dev/null; done
    ip netns del "$ns" 2>/dev/null
  done
  return 0
}
trap cleanup EXIT
CUR=""
on_signal() {
  # timeout(1) signals this shell twice (directly and through its process group).
  trap '' TERM INT HUP
  echo "FAIL: netns-failover: interrupted or out of time (LIMIT=${LIMIT}s); logs in $OUT"
  if [ -n "$CUR" ]; then
    echo "---- $CUR: client stdout (tail), client stderr, server stdout, server stderr"
    tail -n 15 "$CUR/client.out" 2>/dev/null | cut -d' ' -f2- | cut -c1-220
    cat "$CUR/client.err" "$CUR/server.out" "$CUR/server.err" 2>/dev/null
  fi
  exit 124
}
trap on_signal TERM INT HUP
# An interruptible sleep (the signal trap runs at once, not after a foreground sleep).
nap() {
  sleep "$1" &
  wait $!
}

ip netns add "$NA" 2>/dev/null || skip "cannot create a network namespace"
ip netns add "$NB" || { echo "FAIL: ip netns add $NB"; exit 1; }

# Addresses: namespace A holds 10.201.P.1, namespace B 10.201.P.2; the veth ends are p1
# and p2 in both namespaces.
setup() {
  local p
  for p in 1 2; do
    ip link add "p$p" netns "$NA" type veth peer name "p$p" netns "$NB" || return 1
    ip -n "$NA" addr add "10.201.$p.1/24" dev "p$p" || return 1
    ip -n "$NB" addr add "10.201.$p.2/24" dev "p$p" || return 1
    ip -n "$NA" link set "p$p" up || return 1
    ip -n "$NB" link set "p$p" up || return 1
  done
  ip -n "$NA" link set lo up && ip -n "$NB" link set lo up || return 1
  # Permanent neighbour entries: no ARP, so a cut stays silent (with ARP, the kernel would
  # give up on the neighbour after a few seconds and report "host unreachable" to the
  # sending socket, which is a different failure).
  local ma mb
  for p in 1 2; do
    ma=$(ip netns exec "$NA" cat "/sys/class/net/p$p/address") || return 1
    mb=$(ip netns exec "$NB" cat "/sys/class/net/p$p/address") || return 1
    ip -n "$NA" neigh replace "10.201.$p.2" lladdr "$mb" dev "p$p" nud permanent || return 1
    ip -n "$NB" neigh replace "10.201.$p.1" lladdr "$ma" dev "p$p" nud permanent || return 1
  done
}
setup || { echo "FAIL: netns-failover: cannot set up veth pairs"; exit 1; }

CUT_MODE="${CUT_MODE:-blackhole}"
# qdisc NS IF normal|cut
qdisc() {
  if [ "$3" = cut ]; then
    ip netns exec "$1" tc qdisc replace dev "$2" root blackhole
  elif [ "$RATE" = 0 ]; then
    ip netns exec "$1" tc qdisc del dev "$2" root 2>/dev/null || true
  else
    ip netns exec "$1" tc qdisc replace dev "$2" root tbf rate "$RATE" burst 64kb latency 20ms
  fi
}
# path P normal|cut: both ends (linkdown: A's end down, which takes B's carrier too).
path() {
  if [ "$CUT_MODE" = linkdown ]; then
    if [ "$2" = cut ]; then
      ip -n "$NA" link set "p$1" down
      return
    fi
    ip -n "$NA" link set "p$1" up || return 1
  fi
  qdisc "$NA" "p$1" "$2" && qdisc "$NB" "p$1" "$2"
}
if [ "$RATE" != 0 ] && ! path 1 normal 2>/dev/null; then
  echo "netns-failover: note: tc qdisc tbf is not available: no rate limit (RATE=0)"
  RATE=0
fi
for p in 1 2; do
  path "$p" normal || { echo "FAIL: netns-failover: tc qdisc on p$p"; exit 1; }
done
# The cut must be available: blackhole, or else link down.
if [ "$CUT_MODE" = linkdown ]; then
  :
elif path 1 cut 2>/dev/null; then
  path 1 normal || { echo "FAIL: netns-failover: cannot restore p1"; exit 1; }
else
  echo "netns-failover: note: tc qdisc blackhole is not available: cutting with ip link set down (not silent)"
  CUT_MODE=linkdown
fi

# Each line prefixed with the wall-clock time it was read at.
stamp() {
  local l
  while IFS= read -r l; do printf '%s %s\n' "$EPOCHREALTIME" "$l"; done
  printf '%s EOF\n' "$EPOCHREALTIME"
}

# The receiver's rx byte counters of both paths, every 100 ms, until killed.
counters() {
  exec ip netns exec "$1" bash -c 'while :; do
    read -r a </sys/class/net/p1/statistics/rx_bytes
    read -r b </sys/class/net/p2/statistics/rx_bytes
    echo "$EPOCHREALTIME $a $b"; sleep 0.1; done'
}

wait_for() { # FILE PATTERN COUNT SECONDS: until FILE has COUNT lines matching PATTERN
  local i=0 n=$(($4 * 10)) m
  while :; do
    m=$(grep -c -- "$2" "$1" 2>/dev/null)
    [ "${m:-0}" -ge "$3" ] && return 0
    i=$((i + 1))
    [ "$i" -ge "$n" ] && return 1
    sleep 0.1
  done
}

# Bounded wait for a background pid (a child of this shell, so not in a subshell); its
# exit status in RC (124: killed at the bound).
wait_pid() { # PID SECONDS
  local i=0 n=$(($2 * 10))
  while kill -0 "$1" 2>/dev/null; do
    i=$((i + 1))
    if [ "$i" -ge "$n" ]; then
      kill "$1" 2>/dev/null
      wait "$1" 2>/dev/null
      RC=124
      return
    fi
    sleep 0.1
  done
  wait "$1"
  RC=$?
}

# failover_wire COUNTERS CUT_TIME BASE_END -> seconds from the cut until the rate is back
# at THRESH % of the rate over the 2 s before BASE_END (the first cut), in each 100 ms
# sample for 0.5 s ("-" if never).
failover_wire() {
  awk -v cut="$2" -v be="$3" -v th="$THRESH" '
    { t[NR] = $1; b[NR] = $2 + $3 }
    END {
      # Baseline: the 2 s before the first cut.
      i0 = 0; e0 = 0; i1 = 0
      for (i = 1; i <= NR; i++) {
        if (t[i] <= be - 2) i0 = i
        if (t[i] <= be) e0 = i
        if (t[i] <= cut) i1 = i
      }
      if (i0 == 0 || e0 <= i0 || i1 == 0) { print "-"; exit }
      base = (b[e0] - b[i0]) / (t[e0] - t[i0])
      # The first sample after the cut that starts 0.5 s (5 sample intervals) in which
      # every interval has a rate >= th % (a burst while the window drains is not enough).
      lim = base * th / 100
      for (i = i1 + 1; i + 5 <= NR; i++) {
        ok = 1
        for (j = i; j < i + 5; j++) {
          if ((b[j + 1] - b[j]) / (t[j + 1] - t[j]) < lim) { ok = 0; break }
        }
        if (ok) { printf "%.1f", t[i] - cut; exit }
      }
      print "-"
    }' "$1"
}

# failover_gput CLIENT_OUT CUT_TIME BASE_END -> seconds from the cut until the first
# per-second goodput line starting after the cut is back at THRESH % of the mean of the
# lines before BASE_END (the first cut; the first line, slow start, left out); also prints
# that baseline in Mbit/s.
failover_gput() {
  awk -v cut="$2" -v be="$3" -v th="$THRESH" '
    $2 == "[" && $3 == "1]" {
      split($4, ab, "-"); a = ab[1]; e = ab[2]
      if (e == "") { e = $5 }
      dur = e - a
      r = -1
      for (k = 5; k <= NF; k++) {
        if ($k == "Mbits/sec") { r = $(k - 1); break }
        if ($k == "Gbits/sec") { r = $(k - 1) * 1000; break }
      }
      if (r < 0 || dur <= 0) next
      n++; t1[n] = $1; t0[n] = $1 - dur; rate[n] = r
    }
    END {
      s = 0; m = 0
      for (i = 2; i <= n; i++) if (t1[i] <= be) { s += rate[i]; m++ }
      if (m == 0) { print "- -"; exit }
      base = s / m
      for (i = 1; i <= n; i++) {
        if (t0[i] >= cut - 0.05 && rate[i] >= base * th / 100) {
          d = t0[i] - cut; if (d < 0) d = 0
          printf "%.1f %.0f\n", d, base; exit
        }
      }
      printf "- %.0f\n", base
    }' "$1"
}

# last_rate_before CLIENT_OUT TIME -> goodput (Mbit/s) of the last per-second line that
# ended before TIME ("-" if none).
last_rate_before() {
  awk -v t="$2" '
    $2 == "[" && $3 == "1]" && $1 <= t {
      for (k = 5; k <= NF; k++) {
        if ($k == "Mbits/sec") { r = $(k - 1); break }
        if ($k == "Gbits/sec") { r = $(k - 1) * 1000; break }
      }
    }
    END { print (r == "" ? "-" : r) }' "$1"
}

json_field() { # FILE FIELD -> value of "FIELD": in a one-line JSON object
  sed -n "s/.*\"$2\":\(\"[^\"]*\"\|[^,}]*\).*/\1/p" "$1" | head -1
}

FAILED=0
REPORT=()
T=$((PRE + 2 * HOLD + TAIL + 1))
echo "netns-failover: namespaces $NA $NB, rate ${RATE}/path, cut=$CUT_MODE, transfer ${T}s," \
  "path 1 cut ${HOLD}s from ${PRE}s, then path 2 ${HOLD}s; logs in $OUT"

run() { # DIR(AB|BA) CMT(on|off)
  local dir=$1 cmt=$2 sns cns s c d="$OUT/$1-cmt-$2"
  mkdir -p "$d"
  CUR=$d
  if [ "$dir" = AB ]; then
    cns=$NA sns=$NB c=1 s=2
  else
    cns=$NB sns=$NA c=2 s=1
  fi
  timeout -k 3 $((T + 35)) ip netns exec "$sns" "$BRAID" perf server \
    --bind "10.201.1.$s:$PORT" --bind "10.201.2.$s:$PORT" --one-off --json ${SERVER_ARGS//@D/$d} \
    >"$d/server.out" 2>"$d/server.err" &
  local spid=$!
  PIDS+=("$spid")
  if ! wait_for "$d/server.err" "listening on" 2 10; then
    echo "FAIL: $dir cmt=$cmt: the server did not start"; cat "$d/server.err"
    FAILED=1; return
  fi
  counters "$sns" >"$d/counters" &
  local kpid=$!
  PIDS+=("$kpid")
  timeout -k 3 $((T + 20)) ip netns exec "$cns" "$BRAID" perf client \
    --bind "10.201.1.$c:$PORT" --bind "10.201.2.$c:$PORT" --connect "10.201.1.$s:$PORT" \
    --time "${T}s" --streams "$STREAMS" --cmt "$cmt" ${CLIENT_ARGS//@D/$d} \
    2>"$d/client.err" > >(stamp >"$d/client.out") &
  local cpid=$!
  PIDS+=("$cpid")
  local cut1=- cut2=- cutok=1
  # PRE seconds of per-second lines, then the cuts.
  if wait_for "$d/client.out" '\[  1\]' "$PRE" 15; then
    cut1=$EPOCHREALTIME
    path 1 cut || cutok=0
    nap "$HOLD"
    path 1 normal || cutok=0
    cut2=$EPOCHREALTIME
    path 2 cut || cutok=0
    nap "$HOLD"
    path 2 normal || cutok=0
  fi
  echo "$cut1 $cut2" >"$d/cuts"
  local crc src
  # The client's graceful close must complete within its bound (T + 20 s from its start),
  # and the server must exit on its own within 10 s of the client.
  wait_pid "$cpid" $((T + 25))
  crc=$RC
  wait_pid "$spid" 10
  src=$RC
  kill "$kpid" 2>/dev/null
  wait "$kpid" 2>/dev/null
  wait_for "$d/client.out" ' EOF$' 1 5
  local ok bytes msgs err f1 f2 g1 g2 base sum verdict=ok why=()
  ok=$(json_field "$d/server.out" ok)
  bytes=$(json_field "$d/server.out" bytes)
  msgs=$(json_field "$d/server.out" messages)
  err=$(json_field "$d/server.out" error)
  sum=$(grep -o 'retr [0-9]* *([0-9]* messages, all acknowledged: [a-z]*)' "$d/client.out" | head -1)
  [ "$cut1" = - ] && why+=("the transfer did not start (no ${PRE} per-second lines)")
  [ "$cutok" = 1 ] || why+=("tc failed")
  [ "$crc" = 0 ] || why+=("client exit $crc$([ "$crc" = 124 ] && echo ' (timeout)')")
  [ "$src" = 0 ] || why+=("server exit $src$([ "$src" = 124 ] && echo ' (timeout)')")
  [ "$ok" = true ] || why+=("server ok=${ok:-none} ${err}")
  if [ -n "$msgs" ] && [ -n "$sum" ] && ! grep -q "($msgs messages, all acknowledged: yes)" <<<"$sum"; then
    why+=("client/server message counts differ: client '$sum', server $msgs")
  fi
  f1=- f2=- g1=- g2=- base=-
  if [ "$cut1" != - ]; then
    f1=$(failover_wire "$d/counters" "$cut1" "$cut1")
    f2=$(failover_wire "$d/counters" "$cut2" "$cut1")
    read -r g1 base < <(failover_gput "$d/client.out" "$cut1" "$cut1")
    read -r g2 _ < <(failover_gput "$d/client.out" "$cut2" "$cut1")
  fi
  # The cut must come mid-transfer: data flowing in the second before it.
  if [ "$cut1" != - ] && [ "$(last_rate_before "$d/client.out" "$cut1")" = "0.0" ]; then
    why+=("the transfer had stalled before the first cut (0 goodput in the second before it)")
  fi
  if [ -n "$MAX_FAILOVER" ]; then
    local f
    for f in "$f1" "$f2"; do
      if [ "$f" = - ] || awk -v f="$f" -v m="$MAX_FAILOVER" 'BEGIN { exit !(f > m) }'; then
        why+=("failover ${f}s > MAX_FAILOVER=${MAX_FAILOVER}s")
      fi
    done
  fi
  if [ "${#why[@]}" -gt 0 ]; then
    verdict="FAIL (${why[*]})"
    FAILED=1
  fi
  local dirname="A->B"
  [ "$dir" = BA ] && dirname="B->A"
  local line
  line=$(printf '%-5s cmt=%-3s  cut path 1: failover %4ss wire / %4ss gput   cut path 2: failover %4ss wire / %4ss gput   pre-cut %s Mbit/s  %s bytes %s msgs  %s' \
    "$dirname" "$cmt" "$f1" "$g1" "$f2" "$g2" "$base" "${bytes:-?}" "${msgs:-?}" "$verdict")
  echo "$line"
  REPORT+=("$line")
  if [ "$verdict" != ok ]; then
    echo "---- client stdout ($d/client.out)"
    cut -d' ' -f2- "$d/client.out" | tail -40
    echo "---- client stderr"
    cat "$d/client.err"
    echo "---- server stdout/stderr"
    cat "$d/server.out" "$d/server.err"
    echo "----"
  fi
}

for sc in $SCENARIOS; do
  run "${sc%%:*}" "${sc##*:}"
done

echo "== netns-failover summary (cut=$CUT_MODE, rate ${RATE}/path, THRESH=${THRESH}% of the pre-cut rate; logs in $OUT)"
printf '%s\n' "${REPORT[@]}"
if [ "$FAILED" != 0 ]; then
  echo "FAIL: netns-failover"
  exit 1
fi
echo "PASS: netns-failover"
