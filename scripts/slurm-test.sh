#!/usr/bin/env bash
# A campaign through a real Slurm cluster (docs/campaigns.md): starts a single-node cluster on
# this machine (munged, slurmctld and slurmd as root, everything in a temporary directory,
# no accounting, no cgroups), then
#   1. runs `braid reproduce cmt-scheduling --quick` here (the quick reproduction of
#      "Transmission Scheduling Optimizations for Concurrent Multipath Transfer", 852 runs
#      over five figure files, about a minute on 2 cores),
#   2. writes each figure file's quick variant as a scenario file (the same run ids, checked
#      with `braid sim list`) and submits it as a 4-task array through
#      docs/campaigns/slurm.sbatch, unchanged,
#   3. merges each array's output (`braid sim merge`): runs.csv, summary.csv and summary.json
#      must be byte-identical to the local reproduction's.
# Stops the daemons and removes everything on exit. About two and a half minutes on 2 cores.
# SKIP (exit 0) without root, without Slurm/munge packages it can install, or when the
# daemons do not come up (container restrictions).
# BRAID: the braid binary [default: $CARGO_TARGET_DIR/release/braid, built if missing].
# SLURM_TEST_TIMEOUT: seconds the arrays may take [default: 900]. KEEP=1 keeps the directory.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
skip() { echo "slurm-test: SKIP: $*"; exit 0; }
fail() { echo "slurm-test: FAIL: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || skip "needs root (slurmd runs jobs as root here)"
BRAID="${BRAID:-${CARGO_TARGET_DIR:-$PWD/target}/release/braid}"
[ -x "$BRAID" ] || cargo build --release -q -p braid-cli
# Array tasks run in another directory: the binary by absolute path.
BRAID=$(realpath "$(command -v "$BRAID")")
export BRAID
command -v python3 >/dev/null 2>&1 || fail "needs python3 (scripts/setup.sh installs it)"

# Debian's packages (scripts/setup.sh installs them; this is for running the script alone).
have_slurm() {
  command -v slurmctld && command -v slurmd && command -v sbatch && command -v munged
} >/dev/null 2>&1
if ! have_slurm; then
  export DEBIAN_FRONTEND=noninteractive
  { apt-get update -qq && apt-get install -y -qq --no-install-recommends \
      slurmctld slurmd slurm-client munge; } >/dev/null 2>&1 ||
    skip "Slurm is not installed and apt-get could not install slurmctld slurmd slurm-client munge"
  have_slurm || skip "Slurm or munge still missing after apt-get install"
fi

tmp=$(mktemp -d)
# munged wants its socket's directory searchable by all (the key stays 0600).
chmod 755 "$tmp"
pids=()
child=""
cleanup() {
  local rc=$?
  [ -n "$child" ] && kill "$child" 2>/dev/null
  # Cancel what is left, then stop the daemons this script started (by pid), all bounded.
  if [ -f "$tmp/slurm.conf" ] && [ "${#pids[@]}" -gt 0 ]; then
    timeout 5 scancel --full --quiet --user=root >/dev/null 2>&1 || true
    for _ in $(seq 10); do
      left=$(timeout 2 squeue -h -o %i 2>/dev/null) || break
      [ -z "$left" ] && break
      sleep 0.5
    done
  fi
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for _ in $(seq 20); do
    alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.5
  done
  for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
  if [ "$rc" != 0 ]; then
    for f in "$tmp"/munged.log "$tmp"/slurmctld.log "$tmp"/slurmd.log; do
      [ -s "$f" ] && { echo "--- last lines of $f" >&2; tail -n 15 "$f" >&2; }
    done
  fi
  if [ "${KEEP:-0}" = 1 ]; then echo "slurm-test: kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# A free TCP port from $1 on (a real Slurm or another run of this script may hold some).
free_port() {
  local p
  for p in $(seq "$1" $(($1 + 200))); do
    [ -z "$(ss -Hltn "sport = :$p" 2>/dev/null)" ] && { echo "$p"; return; }
  done
  fail "no free TCP port from $1"
}

# munge: our own key, socket and daemon, leaving /etc/munge alone.
mungekey --create --keyfile="$tmp/munge.key" >/dev/null 2>&1 ||
  { dd if=/dev/urandom of="$tmp/munge.key" bs=1024 count=1 2>/dev/null && chmod 600 "$tmp/munge.key"; }
munged -F --key-file="$tmp/munge.key" --socket="$tmp/munge.sock" --pid-file="$tmp/munged.pid" \
  --seed-file="$tmp/munged.seed" > "$tmp/munged.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [ -S "$tmp/munge.sock" ] && break; sleep 0.1; done
munge -S "$tmp/munge.sock" -n 2>/dev/null | unmunge -S "$tmp/munge.sock" >/dev/null 2>&1 ||
  skip "munged did not start: $(tail -n 1 "$tmp/munged.log")"

node=$(hostname -s)
ctld_port=$(free_port 16817)
slurmd_port=$(free_port $((ctld_port + 1)))
mem=$(awk '/^MemTotal:/ { print int($2 / 1024 / 2) }' /proc/meminfo)
mkdir -p "$tmp/state" "$tmp/spool" "$tmp/logs"
export SLURM_CONF="$tmp/slurm.conf"
# One node with this machine's CPUs; linuxproc and task/none: no cgroups needed.
cat > "$SLURM_CONF" <<EOF
ClusterName=braid-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$tmp/munge.sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
ReturnToService=2
MinJobAge=3600
SlurmdParameters=config_overrides
NodeName=$node NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=$mem State=UNKNOWN
PartitionName=braid Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
slurmctld -D -c -f "$SLURM_CONF" > "$tmp/slurmctld.log" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$node" > "$tmp/slurmd.log" 2>&1 &
pids+=($!)
state=""
for _ in $(seq 120); do
  state=$(timeout 5 sinfo -h -n "$node" -o %T 2>/dev/null || true)
  [ "$state" = idle ] && break
  for p in "${pids[@]}"; do
    kill -0 "$p" 2>/dev/null ||
      skip "a Slurm daemon exited at start: $(tail -n 2 "$tmp/slurmctld.log" "$tmp/slurmd.log" | tr '\n' ' ')"
  done
  sleep 0.5
done
[ "$state" = idle ] || skip "node $node not idle after 60 s (state '${state:-none}'): $(tail -n 1 "$tmp/slurmd.log")"
up=$(date +%s)

# 1. The quick reproduction, here.
# In the background so that an interrupt runs the cleanup at once, not after the reproduction.
"$BRAID" reproduce cmt-scheduling --quick --out "$tmp/local" > "$tmp/local.log" 2>&1 &
child=$!
wait "$child" || { tail -n 20 "$tmp/local.log" >&2; fail "braid reproduce cmt-scheduling --quick"; }
child=""
local_done=$(date +%s)

# 2. Each figure file's quick variant as a scenario file at the same relative path (summary.json
# records it): --quick keeps the σ values and seeds in its campaign.json, with 10 s warm-up and
# 30 s measurement (crates/sim/src/reproduce/mod.rs); the run-id check catches any drift.
mkdir -p "$tmp/scen"
figs=()
for camp in "$tmp"/local/fig*/campaign.json; do
  fig=$(basename "$(dirname "$camp")")
  file=$(python3 - "$camp" "$tmp/scen" <<'PY'
import json, os, re, sys
camp, root = sys.argv[1:3]
layout = json.load(open(camp))["layout"]
text = open(layout["file"]).read()
bufs = []
for p in layout["points"]:
    b = p["params"]["association.buffer"]
    if b not in bufs:
        bufs.append(b)
for pat, new in [
    (r'^duration = .*$', 'duration = "40s"'),
    (r'^warmup = .*$', 'warmup = "10s"'),
    (r'^seeds = .*$', f'seeds = {layout["seeds"]}'),
    (r'^"association\.buffer" = \[.*\]$',
     '"association.buffer" = [' + ", ".join(f'"{b}"' for b in bufs) + "]"),
]:
    text, n = re.subn(pat, new, text, count=1, flags=re.M)
    if n != 1:
        sys.exit(f"{layout['file']}: no line {pat}")
dst = os.path.join(root, layout["file"])
os.makedirs(os.path.dirname(dst), exist_ok=True)
open(dst, "w").write(text)
print(layout["file"])
PY
  ) || fail "could not write the quick variant of $fig"
  want=$(python3 -c 'import json, sys; print("\n".join(r["id"] for r in json.load(open(sys.argv[1]))["runs"]))' "$camp")
  got=$(cd "$tmp/scen" && "$BRAID" sim list "$file" --out x | cut -f1)
  [ "$want" = "$got" ] ||
    fail "$tmp/scen/$file is not the quick reproduction's $fig (other run ids): did --quick change?"
  printf '%s\t%s\t%s\n' "$(wc -l <<< "$want")" "$fig" "$file" >> "$tmp/figs.tsv"
  figs+=("$fig")
done
[ "${#figs[@]}" -gt 0 ] || fail "the reproduction wrote no figure directory"

# Through slurm.sbatch as it is: the command line overrides its 4 CPUs per task and log path.
jobs=()
# The largest campaigns first: two tasks run at a time, so the last ones should be short.
while IFS=$'\t' read -r _ fig file; do
  id=$(sbatch --parsable --array=0-3 --cpus-per-task=1 --export=ALL --chdir="$tmp/scen" \
    --job-name="braid-$fig" --output="$tmp/logs/%x-%A_%a.out" \
    docs/campaigns/slurm.sbatch "$file" "$tmp/slurm/$fig" < /dev/null) || fail "sbatch of $fig"
  jobs+=("${id%%;*}")
done < <(sort -rn "$tmp/figs.tsv")
ids=$(IFS=,; echo "${jobs[*]}")
deadline=$(($(date +%s) + ${SLURM_TEST_TIMEOUT:-900}))
while [ -n "$(squeue -h -j "$ids" -o %i 2>/dev/null)" ]; do
  [ "$(date +%s)" -lt "$deadline" ] ||
    fail "the arrays did not finish within ${SLURM_TEST_TIMEOUT:-900} s: $(squeue -h -j "$ids" -o '%i %T' | tr '\n' ' ')"
  sleep 2
done
# No accounting: the controller still knows the finished tasks (MinJobAge).
for id in "${jobs[@]}"; do
  states=$(scontrol -o show job "$id" | grep -o 'JobState=[A-Z_]* .* ExitCode=[0-9:]*' |
    sed 's/^JobState=\([A-Z_]*\) .* ExitCode=\([0-9:]*\)$/\1 \2/' | sort | uniq -c | tr -s ' ')
  [ "$states" = " 4 COMPLETED 0:0" ] || {
    tail -n 5 "$tmp"/logs/*-"${id}"_*.out >&2 || true
    fail "array $id: tasks ended as: $states"
  }
done
slurm_done=$(date +%s)

# 3. Merged, each figure's aggregated files are the local reproduction's, byte for byte.
for fig in "${figs[@]}"; do
  "$BRAID" sim merge "$tmp/slurm/$fig" --out "$tmp/merged/$fig" > "$tmp/merge-$fig.log" 2>&1 ||
    { cat "$tmp/merge-$fig.log" >&2; fail "braid sim merge of $fig"; }
  for f in runs.csv summary.csv summary.json; do
    cmp "$tmp/local/$fig/$f" "$tmp/merged/$fig/$f" ||
      fail "$fig/$f from the Slurm arrays differs from the local reproduction's"
  done
done
runs=$(cat "$tmp"/merged/fig*/runs.csv | grep -vc '^point' || true)
end=$(date +%s)
echo "slurm-test: OK: quick cmt-scheduling reproduction ($runs runs, ${#figs[@]} figure files) as" \
  "${#jobs[@]} Slurm arrays of 4 tasks through docs/campaigns/slurm.sbatch, merged byte-identical" \
  "to one machine (cluster up $((up - start)) s, local $((local_done - up)) s," \
  "Slurm $((slurm_done - local_done)) s, total $((end - start)) s)"
