#!/usr/bin/env bash
# Before/after behaviour comparison ("no behaviour change").
#
# Builds the `braid` CLI (release) at two revisions, runs every scenario shipped under
# scenarios/ (papers/ included) with fixed seeds plus `braid reproduce cmt-scheduling --quick`
# with each, and compares every number the runs write: each run's row of runs.csv, each
# point's statistics in summary.json, the per-run time series, report.md. Every value that
# differs is printed (scenario, where, metric, before, after); the exit status is 1 if any
# difference is not allowed by --expect-change, 0 otherwise (2: usage or build error).
#
#   scripts/compare-behaviour.sh [OPTIONS] BASE [NEW]
#   scripts/compare-behaviour.sh [OPTIONS] --base-dir DIR [NEW]
#   scripts/compare-behaviour.sh [OPTIONS] --record DIR [REV]
#
# BASE, NEW, REV: git revisions of the repository this script lives in. NEW (and REV)
# default to its working tree as it is, uncommitted changes included. A revision is checked
# out with `git worktree add` under $TMPDIR/braid-compare-behaviour.$UID/ and removed on exit.
#
# Options:
#   --expect-change GLOB  a difference in a metric matching GLOB is expected (a bug fix
#                         changes it): printed, but not an error. GLOB is matched against the
#                         metric name (`goodput_mbps`, `path_*_srtt_ms`, time-series column
#                         `cum_tsn`, `events`, `error`) and against `SCENARIO:METRIC`
#                         (`sim/papers/cmt-fig4:*`). Repeatable. (`events` is the
#                         simulator's event count: it moves when the core asks for timer
#                         wake-ups at other times even if nothing else changes.)
#   --base-dir DIR        compare with outputs saved by an earlier --record or --keep
#                         (DIR/base) instead of building and running BASE. The outputs must
#                         have been made with the same --seeds/--max-duration/--timeseries.
#   --record DIR          only build and run REV and save its outputs into DIR (for --base-dir).
#   --keep DIR            keep both sides' outputs (DIR/base, DIR/new) and the full list of
#                         differences (DIR/differences.tsv).
#   --seeds N             seeds per sweep point of every scenario (seeds 0..N-1) [2]
#   --max-duration D      a scenario that simulates longer than D is cut to D (its warm-up is
#                         kept); the same cut on both sides [60s]. `none`: run them as written
#                         (the paper scenarios then take hours).
#   --timeseries D        record every run's time series (cwnd, ssthresh, RTO, flight, srtt,
#                         cum_tsn per path) every D and compare it too [1s]; `none`: off.
#   --jobs N              simulations at a time [all cores]; the results do not depend on it.
#   --max-lines N         print at most N differences (0: all) [200]
#
# Environment: COMPARE_BASE_TARGET_DIR (default target/compare-base) and
# COMPARE_NEW_TARGET_DIR (default: $CARGO_TARGET_DIR or target/ for the working tree,
# target/compare-new for a revision) keep the two builds apart, so repeated runs build
# incrementally. Needs git, cargo and python3 (standard library only).
#
# Runtime on a 2-core VM shared with other builds: 3.5-5.5 minutes of simulations per side
# with the defaults (about 3 CPU-minutes), plus each build: about 1 minute with the
# dependencies cached in its target dir, 3-6 minutes cold.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'
    exit 2
}
die() {
    echo "compare-behaviour: $*" >&2
    exit 2
}

expects=()
base_dir=""
record=""
keep=""
seeds=2
max_duration=60s
timeseries=1s
jobs=""
max_lines=200
positional=()
while [[ $# -gt 0 ]]; do
    case "$1" in
    --expect-change) expects+=("${2:?--expect-change needs a GLOB}"); shift 2 ;;
    --base-dir) base_dir=${2:?--base-dir needs a DIR}; shift 2 ;;
    --record) record=${2:?--record needs a DIR}; shift 2 ;;
    --keep) keep=${2:?--keep needs a DIR}; shift 2 ;;
    --seeds) seeds=${2:?--seeds needs N}; shift 2 ;;
    --max-duration) max_duration=${2:?--max-duration needs a duration}; shift 2 ;;
    --timeseries) timeseries=${2:?--timeseries needs a duration}; shift 2 ;;
    --jobs) jobs=${2:?--jobs needs N}; shift 2 ;;
    --max-lines) max_lines=${2:?--max-lines needs N}; shift 2 ;;
    -h | --help) usage ;;
    --*) die "unknown option $1 (see --help)" ;;
    *) positional+=("$1"); shift ;;
    esac
done
[[ $seeds =~ ^[1-9][0-9]*$ ]] || die "--seeds: not a positive number: $seeds"
[[ -z $jobs || $jobs =~ ^[1-9][0-9]*$ ]] || die "--jobs: not a positive number: $jobs"
[[ $max_lines =~ ^[0-9]+$ ]] || die "--max-lines: not a number: $max_lines"
command -v python3 >/dev/null || die "python3 is needed"

base_rev="" new_rev="" rec_rev=""
if [[ -n $record ]]; then
    [[ -z $base_dir ]] || die "--record and --base-dir exclude each other"
    [[ ${#positional[@]} -le 1 ]] || die "--record takes at most one revision"
    rec_rev=${positional[0]:-}
elif [[ -n $base_dir ]]; then
    [[ ${#positional[@]} -le 1 ]] || die "with --base-dir, give at most the NEW revision"
    new_rev=${positional[0]:-}
    [[ -f $base_dir/settings ]] || die "$base_dir: no saved outputs (no settings file)"
else
    [[ ${#positional[@]} -ge 1 && ${#positional[@]} -le 2 ]] || usage
    base_rev=${positional[0]}
    new_rev=${positional[1]:-}
fi

# The settings that make two sets of outputs comparable.
settings="seeds=$seeds max-duration=$max_duration timeseries=$timeseries reproduce=cmt-scheduling-quick"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/compare-behaviour.XXXXXX")
# Checkouts of revisions live at a fixed place, so that the crates built from them keep the
# same identity in the target directory from one run to the next (no pile of stale
# artifacts); one run at a time.
wt_root=${TMPDIR:-/tmp}/braid-compare-behaviour.$(id -u)
mkdir -p "$wt_root"
exec 9>"$wt_root/lock"
flock -n 9 || die "another compare-behaviour.sh is running (lock $wt_root/lock)"
worktrees=()
# shellcheck disable=SC2317 # called by the trap
cleanup() {
    local wt
    for wt in "${worktrees[@]}"; do
        git -C "$root" worktree remove --force "$wt" >/dev/null 2>&1 || true
    done
    git -C "$root" worktree prune >/dev/null 2>&1 || true
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

start_all=$SECONDS
elapsed() { echo "$((SECONDS - $1)) s"; }

# tree LABEL REV: sets tree_dir to the directory of REV's sources ("" = the working tree).
# (Not run in a subshell: the worktree must be registered for the clean-up.)
tree() {
    local label=$1 rev=$2
    if [[ -z $rev ]]; then
        tree_dir=$root
        return
    fi
    local commit
    commit=$(git -C "$root" rev-parse --verify --quiet "$rev^{commit}") ||
        die "$rev: not a revision of $root"
    tree_dir=$wt_root/$label
    if [[ -e $tree_dir ]]; then # left by a run that was killed
        git -C "$root" worktree remove --force "$tree_dir" >/dev/null 2>&1 || rm -rf "$tree_dir"
        git -C "$root" worktree prune
    fi
    git -C "$root" worktree add --quiet --detach "$tree_dir" "$commit" >&2 ||
        die "git worktree add $rev failed"
    worktrees+=("$tree_dir")
}

# describe REV: what a side is, for the report.
describe() {
    local rev=$1
    if [[ -z $rev ]]; then
        local head dirty=""
        head=$(git -C "$root" rev-parse --short HEAD)
        git -C "$root" diff --quiet HEAD -- 2>/dev/null || dirty=" + uncommitted changes"
        echo "working tree ($head$dirty)"
    else
        echo "$rev ($(git -C "$root" rev-parse --short "$rev^{commit}"))"
    fi
}

# build LABEL DIR TARGET: builds braid in DIR into TARGET; prints the binary's path.
build() {
    local label=$1 dir=$2 target=$3 t0=$SECONDS
    echo "[$label] building braid (release) in $dir, target dir $target" >&2
    if ! (cd "$dir" && CARGO_TARGET_DIR=$target cargo build --release --bin braid) \
        >"$tmp/build-$label.log" 2>&1; then
        tail -n 40 "$tmp/build-$label.log" >&2
        die "[$label] build failed"
    fi
    echo "[$label] built in $(elapsed "$t0")" >&2
    echo "$target/release/braid"
}

# prepare_scenarios SRC DST: copies SRC/scenarios/**.toml to DST/scenarios with the duration
# cut and the time series switched on as the settings say (identically for both sides).
prepare_scenarios() {
    python3 - "$1" "$2" "$max_duration" "$timeseries" <<'PY'
import pathlib, re, sys, tomllib

src, dst, max_duration, timeseries = sys.argv[1:5]
UNITS = {"": 1.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9, "min": 60.0}

def seconds(v):
    if isinstance(v, (int, float)):
        return float(v)
    m = re.fullmatch(r"\s*([0-9.eE+-]+)\s*([a-zµ]*)\s*", str(v))
    if not m or m.group(2) not in UNITS:
        raise SystemExit(f"compare-behaviour: cannot read the duration {v!r}")
    return float(m.group(1)) * UNITS[m.group(2)]

def set_top_level(text, key, value):
    """Replaces (or adds, at the top) a top-level `key = ...` line, before any [table]."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if re.match(r"\s*\[", line):
            break
        if re.match(rf"\s*{key}\s*=", line):
            lines[i] = f'{key} = "{value}"  # set by compare-behaviour.sh'
            return "\n".join(lines)
    return f'{key} = "{value}"  # set by compare-behaviour.sh\n' + text

cap = None if max_duration == "none" else seconds(max_duration)
root = pathlib.Path(src) / "scenarios"
for f in sorted(root.rglob("*.toml")):
    rel = f.relative_to(root)
    text = f.read_text()
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        doc = {}  # copied as is: braid reports the error, which is then compared
    notes = []
    if cap is not None and "duration" in doc and seconds(doc["duration"]) > cap:
        warmup = seconds(doc.get("warmup", 0))
        if warmup >= cap:
            raise SystemExit(f"compare-behaviour: {rel}: warm-up {doc['warmup']} "
                             f"is not shorter than --max-duration {max_duration}")
        text = set_top_level(text, "duration", max_duration)
        notes.append(f"duration {doc['duration']} -> {max_duration}")
    if timeseries != "none" and "timeseries" not in doc:
        text = set_top_level(text, "timeseries", timeseries)
    out = pathlib.Path(dst) / "scenarios" / rel
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"{rel}\t{'; '.join(notes)}")
PY
}

# record LABEL DIR BINARY OUT: runs the scenarios and the quick reproduction into OUT.
record_outputs() {
    local label=$1 dir=$2 bin=$3 out=$4 t0=$SECONDS
    rm -rf "$out"
    mkdir -p "$out/logs"
    local list
    list=$(prepare_scenarios "$dir" "$out") || die "[$label] preparing the scenarios failed"
    local jobs_arg=()
    [[ -n $jobs ]] && jobs_arg=(--jobs "$jobs")
    local rel note name log
    while IFS=$'\t' read -r rel note; do
        [[ -n $rel ]] || continue
        name=${rel%.toml}
        log=$out/logs/sim-${name//\//-}.log
        echo "[$label] sim run scenarios/$rel${note:+ ($note)}" >&2
        # Run from $out so that summary.json names the file the same way on both sides.
        # A failing run (or scenario) is recorded in runs.csv / ERROR and compared.
        if ! (cd "$out" && "$bin" sim run "scenarios/$rel" --out "sim/$name" \
            --seeds "$seeds" "${jobs_arg[@]}") >"$log" 2>&1; then
            mkdir -p "$out/sim/$name"
            grep -v '^\s*$' "$log" | tail -n 5 >"$out/sim/$name/ERROR"
            echo "[$label]   exited non-zero: $(tail -n 1 "$log")" >&2
        fi
    done <<<"$list"
    echo "[$label] reproduce cmt-scheduling --quick" >&2
    if ! (cd "$out" && "$bin" reproduce cmt-scheduling --quick --out reproduce \
        "${jobs_arg[@]}") >"$out/logs/reproduce.log" 2>&1; then
        mkdir -p "$out/reproduce"
        tail -n 5 "$out/logs/reproduce.log" >"$out/reproduce/ERROR"
        echo "[$label]   exited non-zero: $(tail -n 1 "$out/logs/reproduce.log")" >&2
    fi
    echo "$settings" >"$out/settings"
    echo "[$label] simulations took $(elapsed "$t0")" >&2
}

# side LABEL REV TARGET OUT: build and run one side.
side() {
    local label=$1 rev=$2 target=$3 out=$4 bin
    tree "$label" "$rev"
    bin=$(build "$label" "$tree_dir" "$target")
    record_outputs "$label" "$tree_dir" "$bin" "$out"
    describe "$rev" >"$out/revision"
}

new_target() {
    if [[ -n ${COMPARE_NEW_TARGET_DIR:-} ]]; then
        echo "$COMPARE_NEW_TARGET_DIR"
    elif [[ -z $1 ]]; then
        echo "${CARGO_TARGET_DIR:-$root/target}"
    else
        echo "$root/target/compare-new"
    fi
}
base_target=${COMPARE_BASE_TARGET_DIR:-$root/target/compare-base}

if [[ -n $record ]]; then
    side record "$rec_rev" "$(new_target "$rec_rev")" "$tmp/record"
    mkdir -p "$(dirname "$record")"
    rm -rf "$record"
    cp -r "$tmp/record" "$record"
    echo "recorded $(cat "$record/revision") into $record in $(elapsed "$start_all")"
    exit 0
fi

outs=$tmp/out
[[ -n $keep ]] && outs=$keep && mkdir -p "$outs"
if [[ -n $base_dir ]]; then
    saved=$(cat "$base_dir/settings")
    [[ $saved == "$settings" ]] ||
        die "$base_dir was recorded with '$saved', this run uses '$settings': pass the same options"
    base_out=$base_dir
else
    base_out=$outs/base
    side base "$base_rev" "$base_target" "$base_out"
fi
new_out=$outs/new
side new "$new_rev" "$(new_target "$new_rev")" "$new_out"

echo "before: $(cat "$base_out/revision")"
echo "after:  $(cat "$new_out/revision")"
echo "settings: $settings"
status=0
python3 - "$base_out" "$new_out" "$max_lines" "$outs/differences.tsv" "${expects[@]}" <<'PY' || status=$?
import csv, fnmatch, json, pathlib, sys

base, new, max_lines, tsv = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
globs = sys.argv[5:]
diffs = []        # (scenario, where, metric, before, after)
compared = 0

def diff(scenario, where, metric, before, after):
    diffs.append((scenario, where, metric, str(before), str(after)))

def read_csv(p):
    with open(p, newline="") as f:
        return list(csv.DictReader(f))

def compare_table(scenario, a, b, key_cols, label, skip=()):
    """Compares two CSV files cell by cell, rows matched by `key_cols`."""
    global compared
    ra, rb = read_csv(a), read_csv(b)
    def keyed(rows):
        out = {}
        for i, r in enumerate(rows):
            k = tuple(r.get(c, "") for c in key_cols) if key_cols else (str(i),)
            out[k] = r
        return out
    ka, kb = keyed(ra), keyed(rb)
    for k in sorted(set(ka) | set(kb), key=lambda k: [(len(x), x) for x in k]):
        where = label(k)
        if k not in ka or k not in kb:
            diff(scenario, where, "(row)", "present" if k in ka else "absent",
                 "present" if k in kb else "absent")
            continue
        x, y = ka[k], kb[k]
        for col in sorted(set(x) | set(y)):
            if col in key_cols or col in skip:
                continue
            compared += 1
            if x.get(col) != y.get(col):
                diff(scenario, where, col, x.get(col, "(no column)"), y.get(col, "(no column)"))

def compare_summary(scenario, a, b):
    """summary.json: per point, runs/failed and each metric's statistics."""
    global compared
    ja, jb = json.loads(a.read_text()), json.loads(b.read_text())
    for key in ("scenario", "file", "seeds", "sweep"):
        compared += 1
        if ja.get(key) != jb.get(key):
            diff(scenario, "summary.json", key, ja.get(key), jb.get(key))
    pa = {p["index"]: p for p in ja.get("points", [])}
    pb = {p["index"]: p for p in jb.get("points", [])}
    for i in sorted(set(pa) | set(pb)):
        where = f"point {i} summary"
        if i not in pa or i not in pb:
            diff(scenario, where, "(point)", i in pa, i in pb)
            continue
        x, y = pa[i], pb[i]
        for key in ("params", "runs", "failed"):
            compared += 1
            if x.get(key) != y.get(key):
                diff(scenario, where, key, x.get(key), y.get(key))
        ma, mb = x.get("metrics", {}), y.get("metrics", {})
        for m in sorted(set(ma) | set(mb)):
            sa, sb = ma.get(m, {}), mb.get(m, {})
            for stat in sorted(set(sa) | set(sb)):
                compared += 1
                if sa.get(stat) != sb.get(stat):
                    diff(scenario, f"{where} {stat}", m, sa.get(stat, "-"), sb.get(stat, "-"))

def compare_text(scenario, a, b, metric):
    global compared
    la, lb = a.read_text().splitlines(), b.read_text().splitlines()
    for n in range(max(len(la), len(lb))):
        compared += 1
        x = la[n] if n < len(la) else "(none)"
        y = lb[n] if n < len(lb) else "(none)"
        if x != y:
            diff(scenario, f"line {n + 1}", metric, x, y)

def compare_dir(scenario, a, b, recursive):
    """One output directory: a `sim run`, one figure of the reproduction, or the
    reproduction's top level (report.md)."""
    ea, eb = (a / "ERROR").exists(), (b / "ERROR").exists()
    if ea or eb:
        diff(scenario, "exit", "error",
             (a / "ERROR").read_text().strip() if ea else "ok",
             (b / "ERROR").read_text().strip() if eb else "ok")
    def files(d):
        found = d.rglob("*") if recursive else d.iterdir()
        return {p.relative_to(d) for p in found if p.is_file()}
    fa, fb = files(a), files(b)
    for rel in sorted(fa | fb):
        s, name = str(rel), rel.name
        if name in ("ERROR", "summary.csv") or name.endswith(".png"):
            continue  # summary.csv holds what summary.json holds; plots are drawn from it
        if rel not in fa or rel not in fb:
            diff(scenario, s, "(file)", "present" if rel in fa else "absent",
                 "present" if rel in fb else "absent")
        elif name == "runs.csv":
            compare_table(scenario, a / rel, b / rel, ("point", "seed"),
                          lambda k: f"point {k[0]} seed {k[1]}")
        elif name == "summary.json":
            compare_summary(scenario, a / rel, b / rel)
        elif rel.parent.name == "timeseries" and name.endswith(".csv"):
            run = rel.stem  # point{P}-seed{S}
            compare_table(scenario, a / rel, b / rel, ("t_s", "path"),
                          lambda k, run=run: f"{run} t={k[0]}s path {k[1]}")
        elif name.endswith(".md"):
            compare_text(scenario, a / rel, b / rel, s)
        elif (a / rel).read_bytes() != (b / rel).read_bytes():
            diff(scenario, s, "(bytes)", "differs", "differs")

def output_dirs(side):
    """Scenario name -> (directory, recursive): every directory of sim/ and reproduce/ that
    holds a runs.csv (or an ERROR), and the reproduction's top level."""
    dirs = {}
    for top in ("sim", "reproduce"):
        for f in sorted((side / top).rglob("*")):
            if f.name in ("runs.csv", "ERROR") and f.parent.name != "timeseries":
                dirs[str(f.parent.relative_to(side))] = (f.parent, True)
    if (side / "reproduce").is_dir():
        dirs["reproduce"] = (side / "reproduce", False)
    return dirs

da, db = output_dirs(base), output_dirs(new)
only_new = sorted(set(db) - set(da))
for s in sorted(set(da) | set(db)):
    if s not in db:
        diff(s, "-", "(scenario)", "present", "absent")
    elif s in da:
        compare_dir(s, da[s][0], db[s][0], da[s][1])
for s in only_new:
    print(f"note: {s} exists only after the change (not compared)")

# Scenario files that differ between the two sides (each side runs its own).
for f in sorted((base / "scenarios").rglob("*.toml")):
    g = new / "scenarios" / f.relative_to(base / "scenarios")
    if g.exists() and g.read_bytes() != f.read_bytes():
        print(f"note: scenarios/{f.relative_to(base / 'scenarios')} differs between the two sides")

def expected(scenario, metric):
    names = (metric, f"{scenario}:{metric}")
    return any(fnmatch.fnmatchcase(n, g) for g in globs for n in names)

unexpected = [d for d in diffs if not expected(d[0], d[2])]
allowed = [d for d in diffs if expected(d[0], d[2])]
with open(tsv, "w") as f:
    f.write("status\tscenario\twhere\tmetric\tbefore\tafter\n")
    for d in diffs:
        f.write(("expected" if d in allowed else "DIFFERS") + "\t" + "\t".join(d) + "\n")

def show(title, rows):
    if not rows:
        return
    print(f"{title} ({len(rows)}):")
    shown = rows if max_lines == 0 else rows[:max_lines]
    w = [max(len(r[i]) for r in shown) for i in range(3)]
    for r in shown:
        print(f"  {r[0]:<{w[0]}}  {r[1]:<{w[1]}}  {r[2]:<{w[2]}}  {r[3]}  ->  {r[4]}")
    if len(rows) > len(shown):
        print(f"  ... and {len(rows) - len(shown)} more (--max-lines 0 shows all)")

show("expected changes (--expect-change)", allowed)
show("DIFFERENCES", unexpected)
for g in globs:
    if not any(expected(d[0], d[2]) and any(fnmatch.fnmatchcase(n, g) for n in (d[2], f"{d[0]}:{d[2]}")) for d in diffs):
        print(f"note: --expect-change {g} matched no difference")
print(f"compared {compared} values in {len(set(da) & set(db))} outputs: "
      f"{len(unexpected)} unexpected difference(s), {len(allowed)} expected")
sys.exit(1 if unexpected else 0)
PY
[[ -n $keep ]] && echo "outputs kept in $keep (base/, new/, differences.tsv)"
echo "total time $(elapsed "$start_all")"
exit "$status"
