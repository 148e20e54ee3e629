#!/usr/bin/env bash
# Fidelity of the user-space link emulator (`braid testbed emulate`, crates/testbed): three
# network namespaces made here (left host, link, right host; names prefixed bemu<pid>- so
# two runs never collide), veths left<->link<->right, the emulator plumbed into the link
# namespace. For each RATE in RATES (Mbit/s) with a DELAY (ms) one-way delay and a generous
# queue (2 x BDP, at least 1000 packets), each measurement with a fresh emulator:
#   (a) delay: RTT of PROBES low-rate UDP probes (64-byte payload, 92-byte IP packets, one
#       every 50 ms, Python echo) against 2 x DELAY + 2 x serialization of a probe;
#   (b) rate: a saturating flow for TIME seconds, iperf3 TCP and iperf3 UDP at 1.2 x RATE
#       with 1472-byte datagrams: iperf3's receiver goodput (first second omitted), and the
#       IP rate arriving at the right host's interface (its counters, less the Ethernet
#       headers, from 1.5 s in to 0.5 s before the end) against RATE;
#   (c) the emulator's own stats JSON during each flow: CPU (% of one core, its thread's
#       user + system time over its run) and release lateness p99 (write time minus the
#       model's release time).
# A baseline row (rate 10 Gbit/s, delay 0) gives the probe path's own RTT (Python, the
# veths, the TUN round trip), which the delay errors above include.
#
#   bench/emu-fidelity.sh                          # RATES="10 100 500" DELAY=20 TIME=5
#   SPIN_US=50 RATES=500 bench/emu-fidelity.sh     # busy-wait the last 50 µs
#
# Needs root, ip(8), iperf3, python3; otherwise prints SKIP. Env: RATES, DELAY, TIME,
# PROBES, SPIN_US, CHRT (run the emulator SCHED_FIFO at this priority), BRAID (default target/release/braid), BASELINE (1), LIMIT (watchdog s).
set -uo pipefail
export LC_ALL=C
SELF="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
cd "$(dirname "$SELF")/.." || exit 1

skip() {
  echo "SKIP: emu-fidelity: $*"
  exit 0
}
[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, TUN)"
command -v ip >/dev/null || skip "ip(8) not installed"
command -v iperf3 >/dev/null || skip "iperf3 not installed"
command -v python3 >/dev/null || skip "python3 not installed"
[ -c /dev/net/tun ] || skip "no /dev/net/tun"

RATES="${RATES:-10 100 500}"
DELAY="${DELAY:-20}"
TIME="${TIME:-5}"
PROBES="${PROBES:-100}"
SPIN_US="${SPIN_US:-0}"
BASELINE="${BASELINE:-1}"
LIMIT="${LIMIT:-$(($(wc -w <<<"$RATES") * (3 * TIME + PROBES / 20 + 30) + 60))}"
if [ -z "${_BRAID_EMU_INNER:-}" ]; then
  _BRAID_EMU_INNER=1 exec timeout -k 5 "$LIMIT" bash "$SELF" "$@"
fi
BRAID="${BRAID:-${CARGO_TARGET_DIR:-$PWD/target}/release/braid}"
[ -x "$BRAID" ] || { echo "FAIL: emu-fidelity: $BRAID not found (cargo build --release -p braid-cli)"; exit 1; }

P="bemu$$-"
NL="${P}l" NK="${P}k" NR="${P}r"
WORK="$(mktemp -d /tmp/emu-fidelity.XXXXXX)"
EMU_PID=""
cleanup() {
  [ -n "$EMU_PID" ] && kill -INT "$EMU_PID" 2>/dev/null && wait "$EMU_PID" 2>/dev/null
  for n in "$NL" "$NK" "$NR"; do ip netns del "$n" 2>/dev/null; done
  [ -n "${KEEP:-}" ] && echo "kept $WORK" || rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for n in "$NL" "$NK" "$NR"; do
  ip netns add "$n" || skip "cannot create network namespaces"
  ip -n "$n" link set lo up
done
ip link add l0 netns "$NL" type veth peer name kl netns "$NK" || skip "no veth"
ip link add r0 netns "$NR" type veth peer name kr netns "$NK" || skip "no veth"
ip -n "$NL" addr add 10.213.1.2/24 dev l0
ip -n "$NK" addr add 10.213.1.1/24 dev kl
ip -n "$NK" addr add 10.213.2.1/24 dev kr
ip -n "$NR" addr add 10.213.2.2/24 dev r0
for x in "$NL l0" "$NK kl" "$NK kr" "$NR r0"; do
  set -- $x
  ip -n "$1" link set "$2" up
done
ip -n "$NL" route add default via 10.213.1.1
ip -n "$NR" route add default via 10.213.2.1
for n in "$NL" "$NR"; do
  # Windows for 2 x BDP at 500 Mbit/s and 40 ms, so TCP is never window-limited.
  ip netns exec "$n" sysctl -qw net.ipv4.tcp_rmem="4096 131072 33554432" \
    net.ipv4.tcp_wmem="4096 65536 33554432"
done

# Starts the emulator for a rate (Mbit/s) and delay (ms); its stats go to $WORK/$3.json.
emu_start() {
  local rate=$1 delay=$2 tag=$3 queue
  queue=$(python3 -c "print(max(1000, int(2 * $rate * 1e6 * 2 * $delay / 1000 / 8 / 1500)))")
  cat >"$WORK/link.toml" <<EOF
name = "emu"
rate = "${rate}Mbit/s"
delay = "${delay}ms"
queue = $queue
EOF
  rm -f "$WORK/ready"
  ${CHRT:+chrt -f "$CHRT"} "$BRAID" testbed emulate --link-ns "$NK" --left kl --right kr --config "$WORK/link.toml" \
    --stats "$WORK/$tag.json" --spin-us "$SPIN_US" --ready "$WORK/ready" \
    >/dev/null 2>"$WORK/$tag.err" &
  EMU_PID=$!
  for _ in $(seq 100); do
    [ -e "$WORK/ready" ] && return 0
    kill -0 "$EMU_PID" 2>/dev/null || break
    sleep 0.05
  done
  echo "FAIL: emu-fidelity: the emulator did not start:" >&2
  cat "$WORK/$tag.err" >&2
  exit 1
}

emu_stop() {
  kill -INT "$EMU_PID" 2>/dev/null
  wait "$EMU_PID" 2>/dev/null
  EMU_PID=""
}

# Probe RTTs in ms: median p99 max (one line).
probe() {
  ip netns exec "$NR" python3 -c "
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('10.213.2.2', 9000))
s.settimeout($PROBES * 0.05 + 10)
try:
    while True:
        b, a = s.recvfrom(2048)
        if b == b'quit': break
        s.sendto(b, a)
except socket.timeout:
    pass
" &
  local srv=$!
  sleep 0.3
  ip netns exec "$NL" python3 -c "
import socket, time, struct, statistics
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(1.0)
rtts = []
for i in range($PROBES):
    t0 = time.perf_counter()
    s.sendto(struct.pack('!Id', i, t0).ljust(64, b'x'), ('10.213.2.2', 9000))
    try:
        while True:
            b, _ = s.recvfrom(2048)
            if struct.unpack('!I', b[:4])[0] == i: break
        rtts.append((time.perf_counter() - t0) * 1e3)
    except socket.timeout:
        pass
    time.sleep(max(0.0, 0.05 - (time.perf_counter() - t0)))
s.sendto(b'quit', ('10.213.2.2', 9000))
rtts.sort()
n = len(rtts)
print('%.3f %.3f %.3f %d' % (statistics.median(rtts), rtts[min(n - 1, int(0.99 * n))], rtts[-1], n) if n else 'nan nan nan 0')
"
  wait "$srv" 2>/dev/null
}

# "time rx_bytes rx_packets" of the right host's interface.
rxsnap() {
  echo "$(date +%s.%N) $(ip -n "$NR" -s -j link show r0 | python3 -c "
import json, sys
s = json.load(sys.stdin)[0]['stats64']['rx']
print(s['bytes'], s['packets'])")"
}

# Receiver goodput (Mbit/s) of an iperf3 run and the IP rate at the receiver (Mbit/s) from the left host to the right host.
flow() {
  local extra="$*"
  ip netns exec "$NR" iperf3 -s -1 -B 10.213.2.2 -p 5201 >/dev/null 2>&1 &
  local srv=$!
  sleep 0.3
  ip netns exec "$NL" iperf3 -c 10.213.2.2 -p 5201 -t "$TIME" -O 1 -J $extra >"$WORK/iperf.json" 2>"$WORK/iperf.err" &
  local cli=$!
  # The IP rate arriving at the right host, from its interface counters over the flow's
  # steady part (1.5 s in to 0.5 s before its end): bytes less 14 per Ethernet header.
  sleep 1.5
  local a b
  a=$(rxsnap)
  sleep "$(python3 -c "print($TIME - 2)")"
  b=$(rxsnap)
  python3 -c "
a, b = [float(x) for x in '$a'.split()], [float(x) for x in '$b'.split()]
print('%.2f' % (((b[1] - a[1]) - 14 * (b[2] - a[2])) * 8 / (b[0] - a[0]) / 1e6))
" >"$WORK/wire"
  wait "$cli"
  wait "$srv" 2>/dev/null
  python3 -c "
import json
j = json.load(open('$WORK/iperf.json'))
e = j['end']
s = e.get('sum_received') or e.get('sum')
print('%.2f %s' % (s['bits_per_second'] / 1e6, open('$WORK/wire').read().strip()))
" 2>"$WORK/flow.err" || { echo nan nan; cp "$WORK/iperf.json" "$WORK/flow.err" /tmp/ 2>/dev/null; }
}

# A field of an emulator stats JSON: cpu_percent, or forward lateness p99 (µs).
stat() {
  python3 -c "
import json
j = json.load(open('$WORK/$1.json'))
print({'cpu': '%.1f' % j['cpu_percent'], 'p99': '%.0f' % j['forward']['lateness_us']['p99'],
       'p50': '%.0f' % j['forward']['lateness_us']['p50'],
       'drops': str(j['forward']['drops']['queue'])}['$2'])
" 2>/dev/null || echo nan
}

rows=()
if [ "$BASELINE" = 1 ]; then
  emu_start 10000 0 base
  read -r med p99 max n <<<"$(probe)"
  emu_stop
  echo "baseline (10 Gbit/s, 0 ms): probe RTT median $med ms, p99 $p99 ms, max $max ms ($n probes)"
  base_med=$med
else
  base_med=0
fi

for rate in $RATES; do
  expect=$(python3 -c "print('%.3f' % (2 * $DELAY + 2 * 92 * 8 / ($rate * 1e3)))")
  emu_start "$rate" "$DELAY" "probe$rate"
  read -r med p99 max n <<<"$(probe)"
  emu_stop
  emu_start "$rate" "$DELAY" "tcp$rate"
  tcp=$(flow)
  emu_stop
  emu_start "$rate" "$DELAY" "udp$rate"
  udp=$(flow -u -b "$(python3 -c "print(int($rate * 1.2))")M" -l 1472)
  emu_stop
  row=$(python3 -c "
r, exp, med, p99, base = $rate, $expect, $med, $p99, $base_med
(tcp, tcp_ip), (udp, udp_ip) = [float(x) for x in '$tcp'.split()], [float(x) for x in '$udp'.split()]
print('| %d | %.3f | %.3f (%+.3f) | %+.3f | %.3f | %.1f (%.1f, %+.1f %%) | %.1f (%.1f, %+.1f %%) |' % (
    r, exp, med, med - exp, med - exp - base, p99, tcp, tcp_ip, 100 * (tcp_ip / r - 1),
    udp, udp_ip, 100 * (udp_ip / r - 1)))
")
  row="$row $(stat "probe$rate" p99) / $(stat "tcp$rate" p99) / $(stat "udp$rate" p99) | $(stat "tcp$rate" cpu) / $(stat "udp$rate" cpu) |"
  echo "rate $rate Mbit/s: done" >&2
  rows+=("$row")
done

echo
echo "Emulator: delay ${DELAY} ms, spin ${SPIN_US} µs, SCHED_FIFO ${CHRT:-no}; TIME=${TIME}s flows, ${PROBES} probes; baseline probe RTT ${base_med} ms"
echo
echo "| rate Mbit/s | expected RTT ms | probe RTT median ms (error) | error less baseline ms | probe RTT p99 ms | TCP goodput Mbit/s (IP rate at receiver, error) | UDP goodput Mbit/s (IP rate at receiver, error) | lateness p99 µs probe / TCP / UDP | emulator CPU % TCP / UDP |"
echo "|---|---|---|---|---|---|---|---|---|"
for r in "${rows[@]}"; do echo "$r"; done
