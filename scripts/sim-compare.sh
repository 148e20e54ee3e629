#!/bin/sh
# Before/after comparison of the simulator's metrics: a change that must not alter behaviour
# leaves every runs.csv cell of every shipped scenario and of the quick reproduction equal.
#
#   scripts/sim-compare.sh BEFORE_BRAID AFTER_BRAID OUTDIR [SEEDS]
#
# Runs scenarios/*.toml and scenarios/papers/*.toml (SEEDS seeds per point, default 1) and
# `braid reproduce cmt-scheduling --quick` with both binaries (build each with
# `cargo build --release -p braid-cli` at its commit), then compares runs.csv cell by cell.
# Metrics only one side reports are listed, not compared (a new metric is not a change).
# Needs python3. Exit status 1 if any cell differs.
set -eu
[ $# -ge 3 ] || { sed -n '2,12p' "$0"; exit 2; }
before=$1 after=$2 out=$3 seeds=${4:-1}
root=$(cd "$(dirname "$0")/.." && pwd)
run_all() { # BRAID DIR
    mkdir -p "$2"
    for f in "$root"/scenarios/*.toml "$root"/scenarios/papers/*.toml; do
        n=$(basename "$f" .toml)
        nice -n 10 "$1" sim run "$f" --out "$2/$n" --seeds "$seeds" --jobs 1 >"$2/$n.log" 2>&1 ||
            echo "$1: $f failed (see $2/$n.log)"
    done
    nice -n 10 "$1" reproduce cmt-scheduling --quick --jobs 1 --out "$2/reproduce-quick" \
        >"$2/reproduce.log" 2>&1 || echo "$1: reproduce failed (see $2/reproduce.log)"
}
run_all "$before" "$out/before"
run_all "$after" "$out/after"
python3 - "$out/before" "$out/after" <<'PY'
import csv, pathlib, sys
a, b = map(pathlib.Path, sys.argv[1:3])
diffs = 0
for fa in sorted(a.rglob("runs.csv")):
    fb = b / fa.relative_to(a)
    if not fb.exists():
        print(f"{fb}: missing"); diffs += 1; continue
    ra, rb = list(csv.DictReader(open(fa))), list(csv.DictReader(open(fb)))
    ca, cb = set(ra[0]) if ra else set(), set(rb[0]) if rb else set()
    for c in sorted(ca ^ cb):
        print(f"{fa.relative_to(a)}: column {c} only {'before' if c in ca else 'after'}")
    if len(ra) != len(rb):
        print(f"{fa.relative_to(a)}: {len(ra)} runs before, {len(rb)} after"); diffs += 1
    for x, y in zip(ra, rb):
        for c in sorted(ca & cb):
            if x[c] != y[c]:
                diffs += 1
                print(f"{fa.relative_to(a)} point {x['point']} seed {x['seed']}: {c} {x[c]} -> {y[c]}")
print(f"{diffs} difference(s)")
sys.exit(1 if diffs else 0)
PY
