#!/usr/bin/env bash
# Runs every fuzz target for MINUTES minutes each (default 30) on the pinned nightly and
# prints, per target, the executions, the coverage (libFuzzer's cov/ft counters) and the corpus
# size; exits non-zero if any target found a crash, leak, timeout or out-of-memory input.
#
#   MINUTES=30 bash fuzz/run.sh            # every target
#   MINUTES=5 TARGETS=endpoint bash fuzz/run.sh
#
# Needs `rustup toolchain install nightly` and `cargo install cargo-fuzz`. Logs go to
# fuzz/logs/<target>.log, crashes to fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")"
MINUTES=${MINUTES:-30}
TARGETS=${TARGETS:-"packet endpoint"}
mkdir -p logs
status=0
for t in $TARGETS; do
    mkdir -p "corpus/$t"
    # The committed regressions seed the corpus (they are replayed first).
    if [ -d "regressions/$t" ]; then cp -n regressions/"$t"/* "corpus/$t/" 2>/dev/null || true; fi
    args=(-max_total_time=$((MINUTES * 60)) -rss_limit_mb=2048 -print_final_stats=1)
    if [ "$t" = endpoint ]; then args+=(-max_len=4096 -len_control=0); fi
    echo "== $t: $MINUTES min"
    if ! cargo +nightly fuzz run "$t" "corpus/$t" -- "${args[@]}" > "logs/$t.log" 2>&1; then
        status=1
        echo "   FAILED: see fuzz/logs/$t.log and fuzz/artifacts/$t/"
    fi
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$' || echo '?')
    last=$(grep -E '#[0-9]+[[:space:]]+(pulse|NEW|REDUCE|DONE)' "logs/$t.log" | tail -1 || true)
    cov=$(sed -n 's/.* cov: \([0-9]*\) ft: \([0-9]*\) .*/cov \1, features \2/p' <<<"$last")
    echo "   executions $execs; $cov; corpus $(find "corpus/$t" -type f | wc -l) inputs"
done
exit $status
