#!/usr/bin/env bash
# The main job of README.md: sets up the machine, then
#  1. simulates scenarios/one-path.toml (6 sweep points x 10 seeds, the real protocol core on
#     a virtual clock) and plots goodput against the send buffer into out/one-path.png;
#  2. encodes every SCTP chunk type, decodes it back byte-exact, writes out/demo.pcap and
#     lets tshark decode it with CRC32c checking.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --demo
mkdir -p out
# Progress on stderr: a first build takes a minute or two.
cargo build --release -p braid-cli
braid=target/release/braid
"$braid" sim run scenarios/one-path.toml --out out/one-path
"$braid" sim plot out/one-path --x association.send_buffer --y goodput_mbps \
  --curves path.A.delay --out out/one-path.png
echo
"$braid" demo --pcap out/demo.pcap
echo
echo "tshark's view of out/demo.pcap (CRC32c checking on):"
tshark -r out/demo.pcap -o 'sctp.checksum:CRC 32c' -o ip.check_checksum:TRUE -o udp.check_checksum:TRUE 2>/dev/null
