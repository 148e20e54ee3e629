#!/usr/bin/env bash
# Long fat paths in the simulator: one association on one 1 Gbit/s path whose
# drop-tail queue holds one bandwidth-delay product, at RTT 10/20/50/100/200 ms, with random
# loss 0, 0.01 % and 0.1 %, per congestion controller. Default settings otherwise (buffer
# autotuning on). Prints goodput (mean over SEEDS), its share of the payload rate, the
# receive window and send buffer autotuning reached, and retransmissions, one row per
# (RTT, loss, controller), as a Markdown table.
#
#   bench/long-fat.sh                       # CCS="reno cubic" SEEDS=2 DURATION=20s WARMUP=5s
#   RTTS="100" LOSSES="0" CCS=cubic bench/long-fat.sh
#
# A controller name may carry options after "+", in any order: "+pacing" turns pacing on,
# "+rack" sets loss_detection = "rack" (RACK-TLP, RFC 8985), "+runs" send_run = 32 (CMT sends
# new data in runs of up to 32 packets per path), e.g. cubic+rack+pacing.
#
# PATHS=2: the CMT variant, two 500 Mbit/s paths, A with the grid's RTT and B with
# RTT_RATIO (default 2) times it, each with a queue of its own BDP, CMT on (its defaults).
#
# Env: RTTS (ms), LOSSES (rates), CCS, SEEDS, DURATION, WARMUP, OUT (keeps the campaigns),
# BRAID (default target/release/braid; cargo build --release -p braid-cli first).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BRAID="${BRAID:-${CARGO_TARGET_DIR:-$ROOT/target}/release/braid}"
RTTS="${RTTS:-10 20 50 100 200}"
LOSSES="${LOSSES:-0 0.0001 0.001}"
CCS="${CCS:-reno cubic}"
SEEDS="${SEEDS:-2}"
DURATION="${DURATION:-20s}"
WARMUP="${WARMUP:-5s}"
OUT="${OUT:-$(mktemp -d)}"
PATHS="${PATHS:-1}"
RTT_RATIO="${RTT_RATIO:-2}"
[ -x "$BRAID" ] || { echo "long-fat: $BRAID not found (build it first)" >&2; exit 1; }
mkdir -p "$OUT"

# The payload rate of a 1 Gbit/s link carrying 1452-byte DATA chunks in 1500-byte IP
# packets (SCTP common 12 + DATA 16 + UDP 8 + IPv4 20 bytes of headers).
PAYLOAD_RATE=$(python3 -c 'print(1000 * 1452 / 1500)')

[ "$PATHS" = 2 ] && RTT_HEAD="RTT A / B (ms)" || RTT_HEAD="RTT (ms)"
echo "| $RTT_HEAD | loss | cc | goodput (Mbit/s) | of payload rate | recv window (MiB) | send buffer (MiB) | retransmissions |"
echo "|---:|---:|---|---:|---:|---:|---:|---:|"
# One [[path]] table: NAME, rate in Mbit/s, RTT in ms; a drop-tail queue of one BDP in
# 1500-byte packets (rate x RTT / 12000 bits); the loss rate is filled in per run (LOSS).
path_toml() {
  cat <<EOP
[[path]]
name = "$1"
rate = "$2Mbit/s"
delay = "$(python3 -c "print($3 / 2)")ms"
queue = $(($3 * $2 * 1000 / 12000))
loss = LOSS
EOP
}

for rtt in $RTTS; do
  if [ "$PATHS" = 2 ]; then
    rtt_b=$(python3 -c "print(round($rtt * $RTT_RATIO))")
    label="$rtt / $rtt_b"
    paths="$(path_toml A 500 "$rtt")

$(path_toml B 500 "$rtt_b")"
    cmt="cmt = true"
  else
    label="$rtt"
    paths=$(path_toml A 1000 "$rtt")
    cmt=""
  fi
  for loss in $LOSSES; do
    for cc in $CCS; do
      name="rtt${rtt}-paths${PATHS}-loss${loss}-${cc}"
      base="${cc%%+*}"
      pacing=false
      loss_detection=dupthresh
      case "+${cc#*+}+" in *+pacing+*) [ "$base" != "$cc" ] && pacing=true ;; esac
      case "+${cc#*+}+" in *+rack+*) [ "$base" != "$cc" ] && loss_detection=rack ;; esac
      send_run=""
      case "+${cc#*+}+" in *+runs+*) [ "$base" != "$cc" ] && send_run="send_run = 32" ;; esac
      cat >"$OUT/$name.toml" <<EOF
name = "long fat path, $label ms, loss $loss, $cc"
duration = "$DURATION"
warmup = "$WARMUP"
seeds = $SEEDS

${paths//LOSS/$loss}

[association]
$cmt
cc = "$base"
pacing = $pacing
loss_detection = "$loss_detection"
$send_run

[[traffic]]
kind = "saturated"
streams = 1
message_size = 1452
EOF
      "$BRAID" sim run "$OUT/$name.toml" --out "$OUT/$name" >/dev/null
      python3 - "$OUT/$name/summary.json" "$label" "$loss" "$cc" "$PAYLOAD_RATE" <<'EOF'
import json, sys
path, rtt, loss, cc, rate = sys.argv[1:]
s = json.load(open(path))
m = s["points"][0]["metrics"]
def mean(k):
    v = m[k]
    return v["mean"] if isinstance(v, dict) else v
g = mean("goodput_mbps")
print(f"| {rtt} | {float(loss) * 100:g} % | {cc} | {g:.0f} | {g / float(rate) * 100:.0f} % "
      f"| {mean('recv_window_bytes') / 2**20:.1f} | {mean('send_buffer_limit_bytes') / 2**20:.1f} "
      f"| {mean('retransmissions'):.0f} |")
EOF
    done
  done
done
echo "(campaigns in $OUT)"
