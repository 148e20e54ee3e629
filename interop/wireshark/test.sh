#!/usr/bin/env bash
# Tests interop/wireshark/braid.lua with tshark, field by field:
#
#   interop/wireshark/test.sh        # BRAID: the braid binary (default target/release/braid)
#
# 1. `braid demo --pcap` writes one packet per sample of crates/wire/src/sample.rs; every
#    field braid.lua gives its LS-DATA, LS-SACK and LS-FORWARD-PSN chunks and the INIT's
#    Load-Sharing-Supported and Eifel-Supported parameters must hold the sample's value.
# 2. Packets built here with text2pcap (SCTP over IPv4, CRC32c by text2pcap) cover what the
#    demo does not send: TIMESTAMP chunks, the retransmit bit in DATA, I-DATA, SACK, NR-SACK
#    and LS-DATA, the DAC bits, an Eifel-Supported with a reserved bit, and four chunks or
#    parameters braid's decoder refuses, which must get the braid.malformed expert error.
# 3. Every field braid.lua registers must be checked by at least one of those expectations.
# 4. interop/check-pcap.sh passes short braid ↔ braid runs with LS-SCTP and with Eifel
#    (TIMESTAMP chunks), and fails them with a copy of braid.lua that does not load and with
#    one that leaves a field out.
# Skips (exit 0) if tshark or text2pcap is missing (scripts/setup.sh installs them).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BRAID="${BRAID:-$ROOT/target/release/braid}"
LUA="$HERE/braid.lua"
if ! command -v tshark >/dev/null 2>&1 || ! command -v text2pcap >/dev/null 2>&1; then
	echo "wireshark test: SKIP (tshark or text2pcap not installed; scripts/setup.sh installs them)"
	exit 0
fi
W="$(mktemp -d)"
trap 'rm -rf "$W"' EXIT
fail=0
checked=0

# Every field braid.lua registers (-G must come first; -X still loads the script).
tshark -G fields -X "lua_script:$LUA" 2>/dev/null | awk -F'\t' '$1 == "F" && $5 == "braid" { print $3 }' |
	sort >"$W/fields"
if [ ! -s "$W/fields" ]; then
	echo "wireshark test: FAIL: tshark registers no braid.* field from $LUA"
	tshark -G fields -X "lua_script:$LUA" 2>&1 | grep -i lua | head -3
	exit 1
fi
mapfile -t all_fields <"$W/fields"

# expect PCAP < TABLE: each line "CHUNK_TYPES FIELD VALUE": the one frame of PCAP whose SCTP
# chunk types (tshark's sctp.chunk_type, joined by ",") are CHUNK_TYPES must show VALUE for
# FIELD (all occurrences joined by ","; "-" for none). Lines starting with # are comments.
expect() {
	local pcap=$1
	tshark -r "$pcap" -n -X "lua_script:$LUA" -o 'sctp.checksum:CRC 32c' -T fields -E header=y \
		-E separator='|' -E occurrence=a -E aggregator=, -e sctp.chunk_type -e sctp.checksum.status \
		-e _ws.expert.message "${all_fields[@]/#/-e}" >"$W/out" 2>"$W/err" || {
		echo "wireshark test: FAIL: tshark on $pcap:"
		grep -v '^Running as user' "$W/err" | head -5
		exit 1
	}
	if grep -q 'Lua: ' "$W/err"; then
		echo "wireshark test: FAIL: $(grep 'Lua: ' "$W/err" | head -3)"
		exit 1
	fi
	local types field want got
	while read -r types field want; do
		[ -z "$types" ] || [ "${types:0:1}" = "#" ] && continue
		checked=$((checked + 1))
		echo "$field" >>"$W/used"
		got=$(awk -F'|' -v types="$types" -v field="$field" '
			NR == 1 { for (i = 1; i <= NF; i++) if ($i == field) c = i; next }
			$1 == types { n++; v = $c }
			END {
				if (!c) { print "<no such field>"; exit }
				if (n != 1) { print "<" n + 0 " frames with chunks " types ">"; exit }
				print v == "" ? "-" : v
			}' "$W/out")
		if [ "$got" != "$want" ]; then
			echo "  FAIL $(basename "$pcap"): frame with chunks $types: $field is $got, expected $want"
			fail=$((fail + 1))
		fi
	done
	# A checksum that is not Good fails too.
	if awk -F'|' 'NR > 1 && $2 != 1 { exit 1 }' "$W/out"; then :; else
		echo "  FAIL $(basename "$pcap"): an SCTP checksum is not Good"
		fail=$((fail + 1))
	fi
}

# 1. The demo's samples (crates/wire/src/sample.rs, every_chunk_type()).
"$BRAID" demo --pcap "$W/demo.pcap" >/dev/null
expect "$W/demo.pcap" <<'EOF'
# LS-DATA: asn 9000, pid 3, psn 4095, stream 2, ssn 8, ppid 51, B and E, "load-shared message".
176 braid.chunk 0xb0
176 braid.chunk.flags 0x03
176 braid.chunk.length 39
176 braid.chunk.padding 00
176 braid.lsdata.flags.reserved 0x00
176 braid.lsdata.rbit 0
176 braid.lsdata.i 0
176 braid.lsdata.u 0
176 braid.lsdata.b 1
176 braid.lsdata.e 1
176 braid.lsdata.asn 9000
176 braid.lsdata.pid 3
176 braid.lsdata.psn 4095
176 braid.lsdata.reserved 0x0000
176 braid.lsdata.sid 2
176 braid.lsdata.ssn 8
176 braid.lsdata.ppid 51
176 braid.lsdata.data 6c6f61642d736861726564206d657373616765
176 _ws.expert.message -
# LS-SACK: pid 3, cum_asn 8999, a_rwnd 60000, timestamp 0x1e240, cum_psn 4090, gap 2-4, dup 4089.
177 braid.chunk 0xb1
177 braid.chunk.flags 0x03
177 braid.chunk.length 32
177 braid.chunk.padding -
177 braid.lssack.flags.reserved 0x00
177 braid.lssack.pid 3
177 braid.lssack.cum_asn 8999
177 braid.lssack.a_rwnd 60000
177 braid.lssack.timestamp 123456
177 braid.lssack.cum_psn 4090
177 braid.lssack.gaps 1
177 braid.lssack.dups 1
177 braid.lssack.gap.start 2
177 braid.lssack.gap.end 4
177 braid.lssack.dup_psn 4089
177 _ws.expert.message -
# LS-FORWARD-PSN: entries (0, 17) and (3, 4095).
178 braid.chunk 0xb2
178 braid.chunk.flags 0x00
178 braid.chunk.length 12
178 braid.lsforwardpsn.pid 0,3
178 braid.lsforwardpsn.new_cum_psn 17,4095
178 _ws.expert.message -
# INIT: Load-Sharing-Supported (empty) and Eifel-Supported (timestamp and retransmit bit).
1 braid.param.type 0x80b0,0x80b1
1 braid.param.length 4,8
1 braid.eifel.flags 0x00000003
1 braid.eifel.timestamp 1
1 braid.eifel.rbit 1
1 braid.eifel.reserved 0x00000000
1 braid.chunk -
# No braid parameter in the INIT-ACK; standard chunks get only their flag bits.
2 braid.param.type -
0 braid.data.rbit 0
0 braid.chunk -
3 braid.sack.rbit 0
3 braid.sack.dac 0
16 braid.sack.rbit 0
16 braid.sack.dac 0
# A chunk type that is not braid's stays undecoded.
191 braid.chunk -
EOF

# 2. Packets the demo does not send. Each block is one packet of chunks after the SCTP
# common header text2pcap adds (ports 5001 -> 5002, tag 0x12345678, CRC32c).
cat >"$W/crafted.txt" <<'EOF'
0000 b3 00 00 0c 00 01 e2 40 00 00 00 07 00 13 00 14
0010 00 00 03 e8 00 01 00 02 00 00 00 33 61 62 63 64

0000 b3 00 00 0c 00 00 00 c8 00 01 e2 40 03 12 00 10
0010 00 00 03 e8 00 00 c3 50 00 00 00 00

0000 10 11 00 14 00 00 07 d0 00 00 9c 40 00 00 00 00
0010 00 00 00 00

0000 40 13 00 18 00 00 0b b8 00 05 00 00 00 01 e2 40
0010 00 00 00 00 61 62 63 64

0000 b0 1c 00 16 00 00 00 64 10 05 00 00 00 00 00 01
0010 00 00 00 00 61 62 00 00

0000 b3 00 00 08 00 00 00 01

0000 b1 02 00 18 00 00 00 01 00 00 10 00 00 00 00 02
0010 00 00 13 88 00 00 00 00

0000 b2 00 00 08 00 10 00 01

0000 02 00 00 20 00 00 00 01 00 01 00 00 00 01 00 01
0010 00 00 00 01 80 b1 00 08 00 00 00 05 80 b0 00 04

0000 01 00 00 18 00 00 00 01 00 01 00 00 00 01 00 01
0010 00 00 00 01 80 b1 00 04
EOF
if ! text2pcap -q -4 10.0.0.1,10.0.0.2 -s 5001,5002,305419896 "$W/crafted.txt" "$W/crafted.pcap" \
	>"$W/text2pcap.log" 2>&1; then
	echo "wireshark test: FAIL: text2pcap:"
	tail -3 "$W/text2pcap.log"
	exit 1
fi
expect "$W/crafted.pcap" <<'EOF'
# TIMESTAMP (TSval 123456, TSecr 7) leading a retransmitted DATA (R, B, E).
179,0 braid.chunk 0xb3
179,0 braid.chunk.length 12
179,0 braid.timestamp.value 123456
179,0 braid.timestamp.echo 7
179,0 braid.data.rbit 1
179,0 _ws.expert.message -
# TIMESTAMP echoing it, leading a SACK with the retransmit bit and a DAC count of 2.
179,3 braid.timestamp.value 200
179,3 braid.timestamp.echo 123456
179,3 braid.sack.rbit 1
179,3 braid.sack.dac 2
16 braid.sack.rbit 1
16 braid.sack.dac 1
64 braid.data.rbit 1
# A retransmitted LS-DATA (R, I, U; PID 1, PSN 5) with 2 bytes of data and 2 of padding.
176 braid.chunk.flags 0x1c
176 braid.lsdata.rbit 1
176 braid.lsdata.i 1
176 braid.lsdata.u 1
176 braid.lsdata.b 0
176 braid.lsdata.e 0
176 braid.lsdata.asn 100
176 braid.lsdata.pid 1
176 braid.lsdata.psn 5
176 braid.lsdata.ssn 1
176 braid.lsdata.data 6162
176 braid.chunk.padding 0000
# Eifel-Supported with the TIMESTAMP variant and a reserved bit, Load-Sharing-Supported.
2 braid.param.type 0x80b1,0x80b0
2 braid.eifel.timestamp 1
2 braid.eifel.rbit 0
2 braid.eifel.reserved 0x00000001
2 _ws.expert.message -
# What braid's decoder refuses: the braid.malformed expert error.
179 braid.timestamp.value -
179 _ws.expert.message TIMESTAMP length is not 12
177 braid.lssack.cum_psn 5000
177 _ws.expert.message Cumulative PSN Ack above 4095
178 braid.lsforwardpsn.pid 16
178 _ws.expert.message PID above 15
1 braid.eifel.flags -
1 _ws.expert.message Eifel-Supported value is not one 32-bit word
EOF

# 3. Every registered field is checked above.
for f in "${all_fields[@]}"; do
	# braid.malformed is the expert info, checked through its messages.
	[ "$f" = braid.malformed ] && continue
	if ! grep -qx "$f" "$W/used"; then
		echo "  FAIL: no expectation checks $f"
		fail=$((fail + 1))
	fi
done

# 4. check-pcap.sh on short braid ↔ braid runs: LS-SCTP, then Eifel with TIMESTAMP chunks.
# run_pair NAME SERVER_FLAGS CLIENT_FLAGS: records the server's side in $W/NAME.pcap.
run_pair() {
	local name=$1 sflags=$2 cflags=$3 port
	port=$((20000 + RANDOM % 20000))
	# shellcheck disable=SC2086 # the flags are word lists
	timeout 30 "$BRAID" perf server --bind "127.0.0.1:$port" --one-off $sflags \
		--pcap "$W/$name.pcap" >"$W/$name.server" 2>&1 &
	local sp=$!
	for _ in $(seq 100); do
		grep -q listening "$W/$name.server" 2>/dev/null && break
		sleep 0.05
	done
	# shellcheck disable=SC2086
	timeout 30 "$BRAID" perf client --bind 127.0.0.1:0 --connect "127.0.0.1:$port" --bytes 512KiB \
		$cflags >"$W/$name.client" 2>&1 || { echo "  FAIL: perf client ($name)"; fail=$((fail + 1)); }
	wait "$sp" || { echo "  FAIL: perf server ($name)"; fail=$((fail + 1)); }
	echo "$port" >"$W/$name.port"
}
# check NAME WANT [ENV...]: check-pcap.sh on NAME's capture must say WANT (ok or FAIL).
check() {
	local name=$1 want=$2 out rc=0
	shift 2
	out=$(env "$@" "$ROOT/interop/check-pcap.sh" "$W/$name.pcap" "$(cat "$W/$name.port")" 2>&1) || rc=$?
	checked=$((checked + 1))
	if { [ "$want" = ok ] && [ "$rc" != 0 ]; } || { [ "$want" = FAIL ] && [ "$rc" = 0 ]; }; then
		echo "  FAIL: check-pcap on $name with ${*:-braid.lua}: expected $want, got:"
		echo "$out" | tail -4 | sed 's/^/    /'
		fail=$((fail + 1))
	fi
}
run_pair ls "--load-sharing on" "--load-sharing on"
run_pair eifel "--spurious-detection eifel-timestamp" "--spurious-detection eifel-timestamp"
check ls ok
check eifel ok BRAID_PEER_SPURIOUS=eifel-timestamp
# Without Eifel's TIMESTAMP chunks the Eifel expectation fails (LS-SCTP turns Eifel off).
check ls FAIL BRAID_PEER_SPURIOUS=eifel-timestamp
# A script that does not load, and scripts that leave out the PSN or the echo.
sed 's/^local braid = Proto(/local braid = Proto((/' "$LUA" >"$W/syntax.lua"
sed '/f\.lsdata_psn, tvb/d' "$LUA" >"$W/no-psn.lua"
sed '/f\.ts_echo, tvb/d' "$LUA" >"$W/no-echo.lua"
check ls FAIL BRAID_LUA="$W/syntax.lua"
check ls FAIL BRAID_LUA="$W/no-psn.lua"
check eifel FAIL BRAID_LUA="$W/no-echo.lua" BRAID_PEER_SPURIOUS=eifel-timestamp
check eifel FAIL BRAID_LUA="$W/missing.lua"

if [ "$fail" -gt 0 ]; then
	echo "wireshark test: $fail of $checked checks FAILED ($LUA)"
	exit 1
fi
echo "wireshark test: braid.lua decodes every braid chunk and parameter field as expected; ${#all_fields[@]} fields, $checked checks passed ($(tshark --version 2>/dev/null | head -n1))"
