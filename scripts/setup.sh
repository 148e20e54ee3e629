#!/usr/bin/env bash
# Installs what braid needs on a fresh Debian 12 machine: the pinned Rust toolchain (with
# rustfmt and clippy), Wireshark's tshark for the independent-decoder cross-checks, and the
# interop peers (interop/install.sh: pion-peer with Go, aiortc in a venv, dcsctp-peer with
# cargo).
# `--demo`: only what scripts/demo.sh uses (the toolchain and tshark), not the test setup.
# Idempotent: does nothing that is already done.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null 2>&1; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "setup: cargo not found; install rustup first (https://rustup.rs)" >&2
    exit 1
  fi
fi
# rust-toolchain.toml pins the toolchain; this installs it and its components if missing.
rustup show active-toolchain >/dev/null 2>&1 || rustup toolchain install
rustup component add rustfmt clippy >/dev/null 2>&1 || true

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
apt_updated=0
# apt_install PKG...: Debian packages, `apt-get update` at most once per run.
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  if [ "$apt_updated" = 0 ]; then
    $SUDO apt-get update -qq
    apt_updated=1
  fi
  $SUDO apt-get install -y -qq "$@" >/dev/null
}

if ! command -v tshark >/dev/null 2>&1; then
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
  apt_install tshark
fi
if [ "${1:-}" = "--demo" ]; then
  echo "setup (demo): $(cargo --version), $(tshark --version | head -n1)"
  exit 0
fi

# scripts/netns-failover.sh: `ip` and `tc` (namespaces, veth, qdiscs).
if ! command -v ip >/dev/null 2>&1 || ! command -v tc >/dev/null 2>&1; then
  apt_install iproute2
fi

# scripts/campaign-parallel-test.sh: GNU parallel (Debian's `parallel`; moreutils has
# another program of that name).
if ! parallel --version 2>/dev/null | grep -q "GNU parallel"; then
  apt_install parallel
fi

# scripts/slurm-test.sh: a one-node Slurm cluster with munge (no recommends: only the basic
# plugins it uses, none of the database, HDF5 or GPU ones).
if ! command -v slurmctld >/dev/null 2>&1 || ! command -v slurmd >/dev/null 2>&1 ||
  ! command -v sbatch >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
  apt_install --no-install-recommends slurmctld slurmd slurm-client munge
fi

# Interop peers (interop/install.sh): Go for pion-peer, python3 with venv for aiortc (and
# cargo, checked above, for dcsctp-peer).
# The machine image ships Go in /usr/local/go; Debian 12's golang-go (1.19) is the fallback,
# too old for pion's go.mod (go 1.24) but enough to report it.
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
command -v go >/dev/null 2>&1 || apt_install golang-go
command -v python3 >/dev/null 2>&1 || apt_install python3
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || apt_install python3-venv
go_minor=$(go env GOVERSION | sed -n 's/^go1\.\([0-9]*\).*/\1/p')
if [ "${go_minor:-0}" -lt 21 ]; then
  # Go >= 1.21 fetches the toolchain go.mod asks for (GOTOOLCHAIN) from the module proxy.
  echo "setup: $(go env GOVERSION) cannot build interop/pion (needs Go >= 1.21)" >&2
  exit 1
fi
bash interop/install.sh

echo "setup: $(cargo --version), $(tshark --version | head -n1), $(go env GOVERSION), $(python3 --version)"
