#!/usr/bin/env bash
# Idempotent installer for the interop peers. Needs go (>= 1.24 toolchain or
# GOTOOLCHAIN download), python3 (>= 3.10) with venv and cargo. Dependencies come
# from the Go module proxy, PyPI and crates.io; nothing is vendored.
#   interop/bin/pion-peer            (pion/sctp v1.12.1)
#   interop/aiortc/.venv/            (aiortc 1.16.0; run aiortc/peer.py with its python)
#   interop/bin/dcsctp-peer          (dcSCTP, crate dcsctp 0.1.16; a standalone package,
#                                     built in interop/dcsctp/target unless CARGO_TARGET_DIR)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

echo "== pion-peer"
mkdir -p "$HERE/bin"
(
	cd "$HERE/pion"
	# -mod=mod lets go fill in any missing go.sum entries from the module proxy.
	# (The replace in go.mod maps pion/transport/v5 v5.1.4, which the proxy
	# does not serve, to v5.0.0.)
	GOFLAGS=-mod=mod go mod download
	GOFLAGS=-mod=mod go build -trimpath -o "$HERE/bin/pion-peer" .
)
"$HERE/bin/pion-peer" 2>/dev/null || true

echo "== aiortc-peer"
VENV="$HERE/aiortc/.venv"
REQ="$HERE/aiortc/requirements.txt"
STAMP="$VENV/.requirements.stamp"
if [ ! -x "$VENV/bin/python" ]; then
	python3 -m venv "$VENV"
fi
if [ ! -f "$STAMP" ] || ! cmp -s "$REQ" "$STAMP"; then
	"$VENV/bin/pip" install --disable-pip-version-check -q -r "$REQ"
	cp "$REQ" "$STAMP"
fi
"$VENV/bin/python" -c "import aiortc; print('aiortc', aiortc.__version__)"
echo "== dcsctp-peer"
# Its own workspace (Cargo.lock pins dcsctp 0.1.16); cargo rebuilds only what changed.
DCSCTP_TARGET="${CARGO_TARGET_DIR:-$HERE/dcsctp/target}"
cargo build --release --locked --manifest-path "$HERE/dcsctp/Cargo.toml" --target-dir "$DCSCTP_TARGET"
cp "$DCSCTP_TARGET/release/dcsctp-peer" "$HERE/bin/dcsctp-peer"
"$HERE/bin/dcsctp-peer" 2>/dev/null || true
echo "interop peers installed"
