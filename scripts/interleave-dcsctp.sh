#!/usr/bin/env bash
# I-DATA interleaving on real sockets with dcSCTP as the receiver (the simulator's
# version is scenarios/idata-interleaving.toml, both tables in docs/idata.md).
#
# Two network namespaces made here, S — R, joined by a veth pair; S's egress is shaped by
# tbf to RATE (default 10mbit) with a queue of QUEUE (default 100) full-size packets. In R
# `dcsctp-peer server --verify --timing-log` (with --idata for the I-DATA runs), in S
# `braid perf client --interactive SMALL` (default 100@20: 100-byte messages, 20 per second
# on stream 1) next to bulk messages of BULK bytes (default 1 MiB) back to back on stream 0,
# for TIME seconds (default 25), once per (DATA/I-DATA, scheduler). Both sides log each
# message with CLOCK_REALTIME (shared by the two processes: same host); a small message's
# delay runs from braid's `send` accepting it to dcsctp-peer's application reading it,
# counted for the messages sent after WARMUP seconds (default 5). Prints one table row per
# run: the small messages' median, p99 and max delay, the bulk goodput at the receiver, and
# braid's retransmissions. A run fails if either side does not exit ok (dcsctp-peer verifies
# every message and the completeness of both streams, FORMAT.md) or I-DATA is not what the
# run asked for.
#
# ASSERT=1: also fail unless, for rr-packet, the I-DATA median is below the DATA median
# (a check of the order of two numbers, not of their values; not in scripts/test.sh).
#
# Needs root, `ip netns`, tc with tbf and python3; otherwise prints SKIP and exits 0. The
# whole script runs under a watchdog of LIMIT seconds (default: enough for the runs asked
# for). Environment: BRAID (binary), DCSCTP (dcsctp-peer binary), MODES ("data idata"),
# SCHEDULERS ("rr rr-packet fc wfq"), TIME, WARMUP, RATE, QUEUE, BULK, SMALL, OUT (logs),
# LIMIT, ASSERT.
set -uo pipefail
export LC_ALL=C
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$SELF")/.." || exit 1

skip() {
  echo "SKIP: interleave-dcsctp: $*"
  exit 0
}
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null || skip "ip(8) not installed"
command -v tc >/dev/null || skip "tc(8) not installed"
command -v timeout >/dev/null || skip "timeout(1) not installed"
command -v python3 >/dev/null || skip "python3 not installed"

MODES="${MODES:-data idata}"
SCHEDULERS="${SCHEDULERS:-rr rr-packet fc wfq}"
TIME="${TIME:-25}"
WARMUP="${WARMUP:-5}"
RATE="${RATE:-10mbit}"
QUEUE="${QUEUE:-100}"
BULK="${BULK:-1048576}"
SMALL="${SMALL:-100@20}"
runs=$(($(wc -w <<<"$MODES") * $(wc -w <<<"$SCHEDULERS")))
# Per run: TIME of sending, the drain of up to 3 MiB at the end, start-up and teardown.
LIMIT="${LIMIT:-$((runs * (TIME + 30) + 30))}"
if [ -z "${_BRAID_NETNS_INNER:-}" ]; then
  _BRAID_NETNS_INNER=1 exec timeout -k 5 "$LIMIT" bash "$SELF" "$@"
fi

BRAID="${BRAID:-${CARGO_TARGET_DIR:-$PWD/target}/release/braid}"
DCSCTP="${DCSCTP:-$PWD/interop/bin/dcsctp-peer}"
[ -x "$BRAID" ] || { echo "FAIL: interleave-dcsctp: $BRAID not found"; exit 1; }
[ -x "$DCSCTP" ] || { echo "FAIL: interleave-dcsctp: $DCSCTP not found (interop/install.sh)"; exit 1; }
OUT="${OUT:-$(mktemp -d)}"
mkdir -p "$OUT"
SUF="$$-$RANDOM"
NS="ilvS-$SUF" NR="ilvR-$SUF"
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  for n in "$NS" "$NR"; do ip netns del "$n" 2>/dev/null; done
}
trap cleanup EXIT

for n in "$NS" "$NR"; do
  ip netns add "$n" || skip "cannot create network namespaces"
  ip -n "$n" link set lo up
done
ip link add vs0 netns "$NS" type veth peer name vr0 netns "$NR" || skip "no veth"
ip -n "$NS" addr add 10.211.0.1/24 dev vs0
ip -n "$NR" addr add 10.211.0.2/24 dev vr0
ip -n "$NS" link set vs0 up
ip -n "$NR" link set vr0 up
# The bottleneck: the sender's egress at RATE, QUEUE packets of 1514 bytes (Ethernet frame
# of a 1500-byte IP packet) before tbf drops; a burst of two such packets.
ip netns exec "$NS" tc qdisc add dev vs0 root tbf rate "$RATE" burst 3028 limit $((QUEUE * 1514)) ||
  skip "tc tbf not available"
echo "interleave-dcsctp: $RATE, tbf queue $QUEUE packets; stream 0 ${BULK}-byte messages," \
  "stream 1 $SMALL (bytes@per second); ${TIME}s per run, first ${WARMUP}s not counted; logs in $OUT"

fail=0
port=9900
printf '%-7s %-10s %6s %9s %9s %9s %10s %6s %10s\n' chunks scheduler n_small \
  "med(ms)" "p99(ms)" "max(ms)" "bulk(Mb/s)" retr "sendwait"
for mode in $MODES; do
  for sched in $SCHEDULERS; do
    port=$((port + 1))
    run="$OUT/$mode-$sched"
    case "$mode" in
      idata) dflag=(--idata) bflag=on want=on ;;
      data) dflag=() bflag=off want=off ;;
      *) echo "FAIL: interleave-dcsctp: mode $mode is not data or idata"; exit 1 ;;
    esac
    ip netns exec "$NR" "$DCSCTP" server --listen "10.211.0.2:$port" --verify "${dflag[@]}" \
      --timing-log "$run.rx" --timeout $((TIME + 90)) >"$run.server.out" 2>"$run.server.err" &
    spid=$!
    PIDS+=("$spid")
    for _ in $(seq 50); do grep -q "listening on" "$run.server.err" 2>/dev/null && break; sleep 0.1; done
    ip netns exec "$NS" "$BRAID" perf client --bind 10.211.0.1:0 --connect "10.211.0.2:$port" \
      --time "${TIME}s" --msg-size "$BULK" --interactive "$SMALL" --timing-log "$run.tx" \
      --scheduler "$sched" --idata "$bflag" --json >"$run.client.out" 2>"$run.client.err"
    crc=$?
    wait "$spid"
    src=$?
    if [ "$crc" != 0 ] || [ "$src" != 0 ] || ! grep -q '"ok":true' "$run.server.out"; then
      echo "FAIL: $mode $sched: client exit $crc, server exit $src"
      cat "$run.client.out" "$run.client.err" "$run.server.out" "$run.server.err"
      fail=1
      continue
    fi
    if ! grep -q "I-DATA $want" "$run.server.err"; then
      echo "FAIL: $mode $sched: dcsctp-peer did not report I-DATA $want"
      cat "$run.server.err"
      fail=1
      continue
    fi
    python3 - "$run" "$mode" "$sched" "$WARMUP" "$TIME" <<'EOF' | tee "$run.row"
import json, sys
run, mode, sched, warmup, dur = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
tx = {}  # seq -> (t_call, t_accepted), stream 1
for line in open(run + ".tx"):
    _, seq, tc, ta = line.split()
    tx[int(seq)] = (int(tc), int(ta))
rx_small, rx_bulk = {}, []  # stream 1 seq -> t; stream 0 (t, length)
for line in open(run + ".rx"):
    sid, seq, length, t = line.split()
    if sid == "1":
        rx_small[int(seq)] = int(t)
    else:
        rx_bulk.append((int(t), int(length)))
t0 = tx[0][0]  # the first small message is sent when sending starts
lo, hi = t0 + warmup * 1e9, t0 + dur * 1e9
delays = sorted((rx_small[s] - ta) / 1e6 for s, (tc, ta) in tx.items() if tc >= lo and s in rx_small)
missing = sum(1 for s in tx if s not in rx_small)
wait = max((ta - tc) / 1e6 for tc, ta in tx.values())
def pct(p):
    # nearest rank
    return delays[min(len(delays) - 1, max(0, int(round(p / 100 * len(delays) + 0.5)) - 1))]
# Bulk goodput: the messages delivered in [lo, hi], between the first and last such delivery.
win = [(t, n) for t, n in rx_bulk if lo <= t <= hi]
gp = sum(n for _, n in win[1:]) * 8 / ((win[-1][0] - win[0][0]) / 1e9) / 1e6 if len(win) > 1 else 0.0
retr = json.load(open(run + ".client.out")).get("retransmissions", -1)
print(f"{mode:<7} {sched:<10} {len(delays):6d} {pct(50):9.0f} {pct(99):9.0f} {delays[-1]:9.0f} {gp:10.2f} {retr:6d} {wait:8.1f}ms"
      + (f"  ({missing} small messages not delivered)" if missing else ""))
EOF
  done
done

if [ "${ASSERT:-0}" = 1 ]; then
  d="$OUT/data-rr-packet.row" i="$OUT/idata-rr-packet.row"
  if [ -s "$d" ] && [ -s "$i" ]; then
    dm=$(awk '{print $4}' "$d") im=$(awk '{print $4}' "$i")
    if [ "$im" -lt "$dm" ]; then echo "interleave-dcsctp: rr-packet median: I-DATA $im ms < DATA $dm ms"; else
      echo "FAIL: interleave-dcsctp: rr-packet median: I-DATA $im ms, not below DATA $dm ms"
      fail=1
    fi
  else
    echo "FAIL: interleave-dcsctp: ASSERT=1 needs both rr-packet runs (MODES has data and idata)"
    fail=1
  fi
fi
if [ "$fail" = 0 ]; then echo "PASS: interleave-dcsctp (logs in $OUT)"; else
  echo "FAIL: interleave-dcsctp (logs in $OUT)"; exit 1; fi
