#!/usr/bin/env bash
# `braid reproduce cmt-scheduling --quick` on one machine against the same as 3 shards merged
# with `--merge`: every file of the output (report.md, the plots, each figure's runs.csv,
# summary.csv, summary.json, campaign.json, reproduce.json) must be byte-identical. Not in
# scripts/test.sh (about a minute on 2 cores, release; crates/sim/tests/campaign.rs checks the
# same plumbing with a stand-in simulation in seconds).
# BRAID: the braid binary [default: $CARGO_TARGET_DIR/release/braid, built if missing].
set -euo pipefail
cd "$(dirname "$0")/.."
BRAID="${BRAID:-${CARGO_TARGET_DIR:-$PWD/target}/release/braid}"
[ -x "$BRAID" ] || cargo build --release -q -p braid-cli
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
s=$(date +%s)
"$BRAID" reproduce cmt-scheduling --quick --out "$tmp/one" > "$tmp/one.log" 2>&1
m=$(date +%s)
for i in 0 1 2; do
  "$BRAID" reproduce cmt-scheduling --quick --shard "$i/3" --out "$tmp/shard$i" > "$tmp/shard$i.log" 2>&1
done
"$BRAID" reproduce cmt-scheduling --merge "$tmp/shard0" "$tmp/shard1" "$tmp/shard2" --out "$tmp/merged" > "$tmp/merged.log" 2>&1
e=$(date +%s)
list() { (cd "$1" && find . -type f ! -path './fig*/runs/*' | sort); }
diff <(list "$tmp/one") <(list "$tmp/merged") || { echo "campaign-reproduce-check: FAIL: other files" >&2; exit 1; }
n=0
while read -r f; do
  cmp "$tmp/one/$f" "$tmp/merged/$f" || { echo "campaign-reproduce-check: FAIL: $f differs" >&2; exit 1; }
  n=$((n + 1))
done < <(list "$tmp/one")
echo "campaign-reproduce-check: OK: $n files byte-identical (one machine $((m - s)) s, 3 shards + merge $((e - m)) s)"
