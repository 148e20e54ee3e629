#!/usr/bin/env bash
# One association over a real shaped path: two network namespaces made here,
# joined by a veth pair whose sender side is shaped with `tc qdisc tbf` to RATE (default
# 200mbit) with a queue of QUEUE packets (default 100; the kernel has no netem, so no added
# delay). `braid perf client --time TIME` sends MSG_SIZE-byte messages to `braid perf server`
# once per controller setting in CCS (default "tcp reno cubic cubic+pacing"; each with the
# default loss detection, `auto`: RACK-TLP on this one path; "+rack" is --loss rack,
# "+dupthresh" --loss dupthresh, "+pacing" --pacing; "tcp" is the kernel's TCP, as a reference:
# Python's sockets, goodput from the receiver's first to last byte), ROUNDS times
# alternating; prints each run's goodput (braid: over the whole association and over the
# sending time) and its share of the shaped rate, braid's retransmissions and what tbf
# counted during the run (packets, drops, overlimits), then the mean per setting.
#
#   bench/netns-tbf.sh                      # RATE=200mbit QUEUE=100 TIME=10 ROUNDS=2
#
# MSG_SIZE defaults to 1444, the largest message one DATA chunk carries in a 1500-byte
# packet (IPv4 20 + UDP 8 + SCTP 12 + DATA 16); tbf counts the 14-byte Ethernet header too,
# so goodput can reach at most 1444/1514 = 95.4 % of RATE (TCP's 1448-byte segments: 95.6 %).
#
# Needs root and `ip netns`/`tc`; otherwise prints SKIP. Env: RATE, QUEUE, TIME, ROUNDS,
# CCS, MSG_SIZE, BURST (bytes, default 3028), BRAID (default target/release/braid), LIMIT
# (watchdog seconds).
set -uo pipefail
export LC_ALL=C
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$SELF")/.." || exit 1

skip() {
  echo "SKIP: netns-tbf: $*"
  exit 0
}
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null || skip "ip(8) not installed"
command -v tc >/dev/null || skip "tc(8) not installed"

RATE="${RATE:-200mbit}"
QUEUE="${QUEUE:-100}"
TIME="${TIME:-10}"
MSG_SIZE="${MSG_SIZE:-1444}"
# Two full frames: strict, far below tc-tbf(8)'s rule burst >= rate/HZ (100 KB at 200 Mbit/s
# and HZ=250), so a late tbf timer costs link time; BURST=100000 follows the rule.
BURST="${BURST:-3028}"
ROUNDS="${ROUNDS:-2}"
CCS="${CCS:-tcp reno cubic cubic+pacing}"
LIMIT="${LIMIT:-$((ROUNDS * $(wc -w <<<"$CCS") * (TIME + 10) + 20))}"
if [ -z "${_BRAID_NETNS_INNER:-}" ]; then
  _BRAID_NETNS_INNER=1 exec timeout -k 5 "$LIMIT" bash "$SELF" "$@"
fi
BRAID="${BRAID:-${CARGO_TARGET_DIR:-$PWD/target}/release/braid}"
[ -x "$BRAID" ] || { echo "FAIL: netns-tbf: $BRAID not found"; exit 1; }
SUF="$$-$RANDOM"
NS="tbfS-$SUF" NR="tbfR-$SUF"
cleanup() {
  for n in "$NS" "$NR"; do ip netns del "$n" 2>/dev/null; done
}
trap cleanup EXIT
for n in "$NS" "$NR"; do
  ip netns add "$n" || skip "cannot create network namespaces"
  ip -n "$n" link set lo up
done
ip link add ts0 netns "$NS" type veth peer name tr0 netns "$NR" || skip "no veth"
ip -n "$NS" addr add 10.212.0.1/24 dev ts0
ip -n "$NR" addr add 10.212.0.2/24 dev tr0
ip -n "$NS" link set ts0 up
ip -n "$NR" link set tr0 up
# The queue in bytes of 1514-byte frames.
ip netns exec "$NS" tc qdisc add dev ts0 root tbf rate "$RATE" burst "$BURST" \
  limit $((QUEUE * 1514)) || skip "tbf not available"
rate_mbit=$(python3 -c "import re; v='$RATE'; m=re.match(r'([0-9.]+)([kmg]?)bit', v); print(float(m[1]) * {'': 1e-6, 'k': 1e-3, 'm': 1, 'g': 1e3}[m[2]])")

# The kernel's TCP over the same path for TIME seconds; prints the receiver's goodput.
tcp_run() {
  ip netns exec "$NR" python3 -c "
import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('10.212.0.2', 9900)); s.listen(1); s.settimeout(10)
c, _ = s.accept(); n = 0; t0 = None
while True:
    b = c.recv(1 << 20)
    if not b: break
    t0 = t0 or time.monotonic(); n += len(b)
print(round(n * 8 / (time.monotonic() - t0) / 1e6, 1))
" &
  local rpid=$!
  sleep 0.3
  ip netns exec "$NS" python3 -c "
import socket, time
s = socket.create_connection(('10.212.0.2', 9900)); b = b'x' * 65536; t = time.monotonic()
while time.monotonic() - t < $TIME: s.sendall(b)
s.close()
"
  wait "$rpid"
}

# tbf's counters on the sender side: packets, drops, overlimits.
qstats() {
  ip netns exec "$NS" tc -s -j qdisc show dev ts0 |
    python3 -c 'import json,sys; q=json.load(sys.stdin)[0]; print(q["packets"], q["drops"], q["overlimits"])'
}

declare -A SUM SEND
for r in $(seq "$ROUNDS"); do
  for cc in $CCS; do
    if [ "$cc" = tcp ]; then
      g=$(tcp_run)
      echo "round $r $cc: ${g} Mbit/s ($(python3 -c "print(f'{$g / $rate_mbit * 100:.0f}')") % of $RATE)"
      SUM[$cc]=$(python3 -c "print(${SUM[$cc]:-0} + $g)")
      continue
    fi
    args=(--cc "${cc%%+*}" --msg-size "$MSG_SIZE")
    case "+${cc#*+}+" in *+rack+*) [ "${cc%%+*}" != "$cc" ] && args+=(--loss rack) ;; esac
    case "+${cc#*+}+" in *+dupthresh+*) [ "${cc%%+*}" != "$cc" ] && args+=(--loss dupthresh) ;; esac
    case "+${cc#*+}+" in *+pacing+*) [ "${cc%%+*}" != "$cc" ] && args+=(--pacing) ;; esac
    ip netns exec "$NR" "$BRAID" perf server --bind 10.212.0.2:9899 --one-off --json \
      >/dev/null 2>&1 &
    spid=$!
    sleep 0.3
    read -r p0 d0 o0 < <(qstats)
    out=$(ip netns exec "$NS" "$BRAID" perf client --bind 10.212.0.1:0 \
      --connect 10.212.0.2:9899 --time "${TIME}s" --json "${args[@]}" 2>/dev/null |
      python3 -c "import json,sys; d=json.load(sys.stdin); print(round(d['goodput_mbps'], 1), round(d['send_time_goodput_mbps'], 1), d['retransmissions']) if d['ok'] else print('fail fail -')")
    read -r g gs rtx <<<"$out"
    read -r p1 d1 o1 < <(qstats)
    wait "$spid"
    # Whole run (handshake and shutdown included) and over the sending time (as TCP's
    # first-to-last byte), then what tbf counted during the run.
    echo "round $r $cc: ${g} Mbit/s ($(python3 -c "print(f'{$g / $rate_mbit * 100:.0f}' if '$g' != 'fail' else '-')") % of $RATE), sending time ${gs} Mbit/s ($(python3 -c "print(f'{$gs / $rate_mbit * 100:.0f}' if '$gs' != 'fail' else '-')") %); retransmissions $rtx, tbf packets $((p1 - p0)) drops $((d1 - d0)) overlimits $((o1 - o0))"
    SUM[$cc]=$(python3 -c "print(${SUM[$cc]:-0} + (${g} if '$g' != 'fail' else 0))")
    SEND[$cc]=$(python3 -c "print(${SEND[$cc]:-0} + (${gs} if '$gs' != 'fail' else 0))")
  done
done
for cc in $CCS; do
  m=$(python3 -c "print(${SUM[$cc]} / $ROUNDS)")
  extra=""
  if [ -n "${SEND[$cc]:-}" ]; then
    ms=$(python3 -c "print(${SEND[$cc]} / $ROUNDS)")
    extra=", sending time $(printf %.1f "$ms") Mbit/s ($(python3 -c "print(f'{$ms / $rate_mbit * 100:.0f}')") %)"
  fi
  echo "mean $cc: $(printf %.1f "$m") Mbit/s ($(python3 -c "print(f'{$m / $rate_mbit * 100:.0f}')") % of $RATE)$extra"
done
