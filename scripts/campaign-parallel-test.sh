#!/usr/bin/env bash
# A campaign through GNU parallel, for real (docs/campaigns.md): a small scenario (4 points
# × 3 seeds of 3 simulated seconds) is
#   1. run whole on this machine (`braid sim run`),
#   2. listed (`braid sim list`) and run one process per run by GNU parallel into one
#      directory, then merged (`braid sim merge`),
#   3. run as 3 shards by GNU parallel (`--shard {}/3`), each into its own directory, then
#      merged,
# and the merged runs.csv, summary.csv and summary.json must be byte-identical to the whole
# run's. It also checks that running the listed commands again runs nothing (the results are
# stored per run) and that a merge with a run missing fails and names it. Takes seconds.
# BRAID: the braid binary [default: $CARGO_TARGET_DIR/release/braid, built if missing].
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s.%N)
if ! parallel --version 2>/dev/null | grep -q "GNU parallel"; then
  echo "campaign-parallel-test: needs GNU parallel (Debian: apt-get install parallel; scripts/setup.sh installs it)" >&2
  exit 1
fi
BRAID="${BRAID:-${CARGO_TARGET_DIR:-$PWD/target}/release/braid}"
[ -x "$BRAID" ] || cargo build --release -q -p braid-cli
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/small.toml" <<'TOML'
name = "campaign parallel test"
duration = "3s"
warmup = "1s"
seeds = 3

[[path]]
name = "A"
rate = "2Mbit/s"
delay = "10ms"
loss = 0.01

[[traffic]]
kind = "saturated"

[sweep]
"path.A.delay" = ["5ms", "20ms"]
"path.A.loss" = [0.0, 0.02]
TOML
fail() { echo "campaign-parallel-test: FAIL: $*" >&2; exit 1; }
same() { # same DIR_A DIR_B: the aggregated files are byte-identical
  for f in runs.csv summary.csv summary.json; do
    cmp "$1/$f" "$2/$f" || fail "$2/$f differs from the single-machine $1/$f"
  done
}

# 1. One machine.
run() { # run LOG CMD...: quietly, the log shown on failure
  local log=$1; shift
  "$@" > "$log" 2>&1 || { cat "$log" >&2; fail "$*"; }
}
run "$tmp/one.log" "$BRAID" sim run "$tmp/small.toml" --out "$tmp/one"

# 2. One process per run, all into one directory.
"$BRAID" sim list "$tmp/small.toml" --out "$tmp/shared" > "$tmp/runs.tsv"
runs=$(wc -l < "$tmp/runs.tsv")
[ "$runs" = 12 ] || fail "braid sim list printed $runs runs, expected 12"
cut -f5 "$tmp/runs.tsv" > "$tmp/commands"
run "$tmp/parallel.log" parallel --will-cite --halt now,fail=1 -j "${JOBS:-2}" -a "$tmp/commands"
run "$tmp/merge.log" "$BRAID" sim merge "$tmp/shared" --out "$tmp/merged"
same "$tmp/one" "$tmp/merged"

# Running the commands again runs nothing: every result is stored.
run "$tmp/again.log" parallel --will-cite --halt now,fail=1 -j "${JOBS:-2}" -a "$tmp/commands"
reused=$(grep -c "1 of them already done" "$tmp/again.log" || true)
[ "$reused" = 12 ] || fail "a second pass ran $((12 - reused)) runs again"

# 3. Three shards, each into its own directory (as on three machines), merged.
run "$tmp/shards.log" parallel --will-cite --halt now,fail=1 -j "${JOBS:-2}" \
  "$BRAID" sim run "$tmp/small.toml" --shard {}/3 --jobs 1 --out "$tmp/shard{}" ::: 0 1 2
run "$tmp/merge3.log" "$BRAID" sim merge "$tmp/shard0" "$tmp/shard1" "$tmp/shard2" --out "$tmp/merged3"
same "$tmp/one" "$tmp/merged3"

# A missing run is reported by id.
missing=$(head -n 1 "$tmp/runs.tsv" | cut -f1)
rm "$tmp/shard0/runs/$missing.json"
if "$BRAID" sim merge "$tmp/shard0" "$tmp/shard1" "$tmp/shard2" --out "$tmp/bad" > /dev/null 2> "$tmp/bad.err"; then
  fail "merge with run $missing missing succeeded"
fi
grep -q "missing run $missing" "$tmp/bad.err" || fail "merge did not name the missing run: $(cat "$tmp/bad.err")"

end=$(date +%s.%N)
printf 'campaign-parallel-test: OK: %s runs via `braid sim list | parallel` and as 3 shards, merged byte-identical to one machine (%.1f s)\n' \
  "$runs" "$(awk -v a="$start" -v b="$end" 'BEGIN { print b - a }')"
