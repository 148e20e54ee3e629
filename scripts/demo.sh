#!/usr/bin/env bash
# The main job of README.md: sets up the machine, then runs today's demo — every SCTP chunk
# type encoded, decoded back byte-exact, written to out/demo.pcap and decoded by tshark.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
mkdir -p out
cargo run --release -q -p braid-cli -- demo --pcap out/demo.pcap
echo
echo "tshark's view of out/demo.pcap (CRC32c checking on):"
tshark -r out/demo.pcap -o 'sctp.checksum:CRC 32c' -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE 2>/dev/null
