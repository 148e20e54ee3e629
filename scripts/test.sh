#!/usr/bin/env bash
# The test command of README.md: sets up the machine, runs every test of the workspace, the
# failover test in network namespaces (scripts/netns-failover.sh), a simulation campaign
# through GNU parallel merged byte-identical to one machine (scripts/campaign-parallel-test.sh),
# the quick CMT scheduling reproduction as Slurm arrays on a one-node cluster, merged
# byte-identical to one machine (scripts/slurm-test.sh),
# a short testbed run (scripts/testbed-smoke.sh), braid's Wireshark dissector
# (interop/wireshark/test.sh), then the interop matrix of braid against
# pion/sctp, aiortc and dcSCTP (interop/selftest.sh: both
# directions, ordered and unordered, server-verify and echo + client-verify, 10 MiB over 4
# streams, every capture checked by tshark) and a short interleaving check, I-DATA against
# DATA with dcSCTP receiving (scripts/interleave-dcsctp.sh).
# BRAID_PROPTEST_CASES sets the number of cases of each property test (default 512).
# The paper reproductions' verdict tests run here (feature braid-sim/reproductions).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export BRAID_PROPTEST_CASES="${BRAID_PROPTEST_CASES:-512}"
# The paper reproductions' verdict tests are a feature of braid-sim, on here (CI checks every
# verdict); a contributor's plain `cargo test --release` leaves them out.
cargo test --workspace --release --all-targets --features braid-sim/reproductions
cargo test --workspace --release --doc
# braid-taps racing/fallback between namespaces (SKIP without root/netns); its server and
# client are braid-taps's examples (`cargo test` does not leave them under examples/).
cargo build --release -p braid-taps --examples
EXAMPLES="${CARGO_TARGET_DIR:-$PWD/target}/release/examples" bash scripts/netns-taps.sh
# The dcSCTP interop peer is a package of its own (interop/dcsctp): its unit tests (format,
# verifier, --loss), built where interop/install.sh built it.
cargo test --locked --release --manifest-path interop/dcsctp/Cargo.toml \
  --target-dir "${CARGO_TARGET_DIR:-$PWD/interop/dcsctp/target}"
cargo build --release -p braid-cli
BRAID="${CARGO_TARGET_DIR:-$PWD/target}/release/braid" bash scripts/campaign-parallel-test.sh
# The same through a real Slurm cluster it starts here (~2.5 min on 2 cores; SKIP without root
# or when the daemons cannot start).
BRAID="${CARGO_TARGET_DIR:-$PWD/target}/release/braid" bash scripts/slurm-test.sh
# PLPMTUD through a 1400-byte hop between namespaces (SKIP without root/netns).
BRAID="${CARGO_TARGET_DIR:-$PWD/target}/release/braid" bash scripts/netns-pmtu.sh
# Failover on real sockets in network namespaces it creates (SKIP without root/netns).
BRAID="${CARGO_TARGET_DIR:-$PWD/target}/release/braid" bash scripts/netns-failover.sh
# The testbed: braid and a kernel TCP stream through the user-space link emulator, then the
# same scenario in the simulator, side by side (~15 s; SKIP without root/netns/TUN).
BRAID="${CARGO_TARGET_DIR:-$PWD/target}/release/braid" bash scripts/testbed-smoke.sh
# braid's Wireshark dissector (interop/wireshark/braid.lua), which check-pcap.sh loads for
# every capture below: each field of the demo's braid chunks and parameters and of built
# packets (TIMESTAMP, retransmit and DAC bits, malformed chunks), and check-pcap failing
# when the script does not load or leaves a field out.
BRAID="${CARGO_TARGET_DIR:-$PWD/target}/release/braid" bash interop/wireshark/test.sh
BRAID="${CARGO_TARGET_DIR:-$PWD/target}/release/braid" PEERS="braid pion aiortc dcsctp" ONLY_WITH=braid \
  BYTES=10MiB STREAMS=4 bash interop/selftest.sh
# braid ↔ braid with LS-SCTP on the wire (both offer it), tshark checking the captures.
BRAID="${CARGO_TARGET_DIR:-$PWD/target}/release/braid" BRAID_PEER_LS=on PEERS="braid" \
  BYTES=10MiB STREAMS=4 bash interop/selftest.sh
BRAID="${CARGO_TARGET_DIR:-$PWD/target}/release/braid" BRAID_PEER_SPURIOUS=eifel-timestamp \
  PEERS="braid" BYTES=10MiB STREAMS=4 bash interop/selftest.sh
# I-DATA (RFC 8260) both ways with dcSCTP and braid: every capture must carry I-DATA, no DATA.
BRAID="${CARGO_TARGET_DIR:-$PWD/target}/release/braid" BRAID_PEER_IDATA=on DCSCTP_IDATA=on \
  EXPECT_IDATA=1 PEERS="braid dcsctp" ONLY_WITH=braid BYTES=10MiB STREAMS=4 bash interop/selftest.sh
# Interleaving with dcSCTP receiving over a 10 Mbit/s tbf link in namespaces (~30 s; SKIP
# without root/netns): with rr-packet the small messages' median delay is lower with I-DATA
# than with DATA (~0.1 s against ~5 s; only the order is checked).
BRAID="${CARGO_TARGET_DIR:-$PWD/target}/release/braid" ASSERT=1 SCHEDULERS=rr-packet TIME=10 \
  WARMUP=3 bash scripts/interleave-dcsctp.sh
