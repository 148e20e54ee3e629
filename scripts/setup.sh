#!/usr/bin/env bash
# Installs what braid needs on a fresh Debian 12 machine: the pinned Rust toolchain (with
# rustfmt and clippy) and Wireshark's tshark for the independent-decoder cross-checks.
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

if ! command -v tshark >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq tshark >/dev/null
fi
echo "setup: $(cargo --version), $(tshark --version | head -n1)"
