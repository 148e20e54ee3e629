#!/usr/bin/env bash
# The test command of README.md: sets up the machine, then runs every test of the workspace.
# BRAID_PROPTEST_CASES sets the number of cases of each property test (default 512).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export BRAID_PROPTEST_CASES="${BRAID_PROPTEST_CASES:-512}"
cargo test --workspace --release --all-targets
cargo test --workspace --release --doc
