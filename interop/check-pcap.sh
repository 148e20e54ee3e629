#!/usr/bin/env bash
# Validates a capture of an interop run with Wireshark's dissector:
#
#   interop/check-pcap.sh FILE.pcap UDP_PORT
#
# tshark decodes UDP_PORT as SCTP with CRC32c checking on (-o 'sctp.checksum:CRC 32c'
# -d udp.port==UDP_PORT,sctp). The check fails if any frame is malformed, is not decoded as
# SCTP, has an SCTP checksum other than Good (so a CRC preference tshark ignored fails too),
# or carries an expert info of severity Error; it also fails if the capture holds no DATA or
# I-DATA chunk or no SACK (or NR-SACK) chunk, so it cannot pass on an empty or wrong capture
# (braid ↔ braid with LS-SCTP: LS-DATA and LS-SACK count).
# tshark loads interop/wireshark/braid.lua (BRAID_LUA overrides the path), which decodes
# braid's own chunks and parameters into braid.* fields; the check fails if it does not load,
# if it flags a braid chunk or parameter as malformed (an expert error), or if a chunk lacks
# one of its fields: every LS-DATA its ASN, PID, PSN, stream id, SSN and PPID; every LS-SACK
# its PID, cumulative ASN, a_rwnd, timestamp and cumulative PSN; every LS-FORWARD-PSN an
# entry; every TIMESTAMP its value and echo; every DATA/I-DATA and (NR-)SACK its retransmit
# bit. A capture with LS-SCTP chunks must show Load-Sharing-Supported in each INIT/INIT-ACK.
# With BRAID_PEER_SPURIOUS=eifel-timestamp or eifel+duptsn (braid ↔ braid with Eifel, Ladha et al.)
# every frame carrying DATA must lead with a TIMESTAMP chunk (0xB3), every INIT/INIT-ACK must
# carry Eifel-Supported with the TIMESTAMP variant on, and some TIMESTAMP must echo one (a
# non-zero TSecr), or the check fails.
# With EXPECT_IDATA=1 (both sides offered I-DATA) the capture must carry I-DATA and no DATA.
# One known peer bug is tolerated and counted: a frame holding only a HEARTBEAT chunk of
# length 4 (no Heartbeat Info, which RFC 9260 §3.3.5 requires) — pion sends those; braid
# never does (its HEARTBEATs carry info, and it answers an empty one with a well-formed ACK).
# Prints one summary line; on failure, the first offending frames.
set -euo pipefail
if [ $# -ne 2 ]; then
	echo "usage: $0 FILE.pcap UDP_PORT" >&2
	exit 2
fi
pcap=$1
port=$2
lua=${BRAID_LUA:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/wireshark/braid.lua}
if [ ! -r "$lua" ]; then
	echo "check-pcap: $pcap: braid's dissector $lua is missing"
	exit 1
fi
err=$(mktemp)
trap 'rm -f "$err"' EXIT

# braid.lua's fields, fields 8-27 of each line below (the awk program refers to them by number).
braid_fields=(braid.chunk
	braid.lsdata.asn braid.lsdata.pid braid.lsdata.psn braid.lsdata.sid braid.lsdata.ssn braid.lsdata.ppid
	braid.lssack.pid braid.lssack.cum_asn braid.lssack.a_rwnd braid.lssack.timestamp braid.lssack.cum_psn
	braid.lsforwardpsn.pid braid.lsforwardpsn.new_cum_psn
	braid.timestamp.value braid.timestamp.echo braid.data.rbit braid.sack.rbit
	braid.param.type braid.eifel.timestamp)
# One line per frame: number|malformed|checksum statuses|expert severities|expert messages|chunk types|
# chunk lengths|braid fields (severity Error is 0x00800000; checksum status 1 is Good, 0 Bad,
# 2 Unverified). A braid.* field tshark does not know (the script failed to load) makes tshark
# itself fail; a script that loads with an error is refused too.
if ! fields=$(tshark -r "$pcap" -n -X "lua_script:$lua" -o 'sctp.checksum:CRC 32c' \
	-d "udp.port==$port,sctp" -T fields -E separator='|' -E occurrence=a -E aggregator=, \
	-e frame.number -e _ws.malformed -e sctp.checksum.status -e _ws.expert.severity \
	-e _ws.expert.message -e sctp.chunk_type -e sctp.chunk_length \
	"${braid_fields[@]/#/-e}" 2>"$err") || grep -q 'Lua: ' "$err"; then
	echo "check-pcap: $pcap: tshark failed (with $lua):"
	grep -v '^Running as user' "$err" | head -5 | sed 's/^/  /'
	exit 1
fi
case "${BRAID_PEER_SPURIOUS:-}" in
eifel-timestamp | eifel+duptsn) expect_ts=1 ;;
*) expect_ts=0 ;;
esac
awk -F'|' -v pcap="$pcap" -v port="$port" -v expect_ts="$expect_ts" \
	-v expect_idata="${EXPECT_IDATA:-0}" -v braid_fields="${braid_fields[*]}" '
BEGIN { split(braid_fields, bf, " ") }
function bad(what) {
	nbad++
	if (nbad <= 10) printf "  frame %s: %s\n", $1, what
}
# How many values field i holds (occurrences are joined by ",").
function cnt(i) { return $i == "" ? 0 : split($i, _n, ",") }
# braid.lua must decode every field of every one of `want` chunks of `what`.
function fields(what, want, first, last,   i) {
	for (i = first; i <= last; i++)
		if (cnt(i) != want) { bad(sprintf("%d %s chunk(s) but %d values of %s: %s", want, what, cnt(i), bf[i - 7], $i)); return }
}
{
	frames++
	if ($2 != "" && $6 == "4" && $7 == "4") { tolerated++; next }
	if ($2 != "") { malformed++; bad("malformed") }
	if ($3 == "") { notsctp++; bad("not decoded as SCTP") }
	else {
		n = split($3, cs, ",")
		for (i = 1; i <= n; i++) if (cs[i] != 1) { badsum++; bad("SCTP checksum status " cs[i] " (1 = Good)"); break }
	}
	n = split($4, sev, ",")
	for (i = 1; i <= n; i++) if (sev[i] + 0 >= 8388608) { experr++; bad("expert error; expert messages: " $5); break }
	n = split($6, ct, ",")
	if (ct[1] == 179) tsframes++
	f_data = f_sack = f_init = f_lsdata = f_lssack = f_lsfwd = f_ts = 0
	for (i = 1; i <= n; i++) {
		if (expect_ts && ct[i] == 0 && ct[1] != 179) { bad("DATA without a leading TIMESTAMP chunk"); break }
	}
	for (i = 1; i <= n; i++) {
		if (ct[i] == 0 || ct[i] == 64) f_data++
		else if (ct[i] == 3 || ct[i] == 16) f_sack++
		else if (ct[i] == 1 || ct[i] == 2) f_init++
		# braid ↔ braid with LS-SCTP (Abd El Al et al.): LS-DATA 0xB0, LS-SACK 0xB1,
		# LS-FORWARD-PSN 0xB2; with Eifel (Ladha et al.): TIMESTAMP 0xB3.
		else if (ct[i] == 176) f_lsdata++
		else if (ct[i] == 177) f_lssack++
		else if (ct[i] == 178) f_lsfwd++
		else if (ct[i] == 179) f_ts++
		if (ct[i] == 0) data++
		else if (ct[i] == 64) idata++
		else if (ct[i] == 3 || ct[i] == 16) sack++
		else if (ct[i] == 176) lsdata++
		else if (ct[i] == 177) lssack++
	}
	# braid.lua, field by field (the field numbers are those of the -e list).
	fields("braid", f_lsdata + f_lssack + f_lsfwd + f_ts, 8, 8)
	fields("LS-DATA", f_lsdata, 9, 14)
	fields("LS-SACK", f_lssack, 15, 19)
	if (cnt(20) < f_lsfwd || cnt(20) != cnt(21) || (f_lsfwd == 0 && cnt(20) > 0))
		bad(sprintf("%d LS-FORWARD-PSN chunk(s) but entries %s / %s", f_lsfwd, $20, $21))
	fields("TIMESTAMP", f_ts, 22, 23)
	fields("DATA/I-DATA", f_data, 24, 24)
	fields("SACK/NR-SACK", f_sack, 25, 25)
	lsfwd += f_lsfwd
	ts += f_ts
	braid_chunks += cnt(8)
	braid_params += cnt(26)
	if (f_ts > 0) { split($23, ecr, ","); for (i in ecr) if (ecr[i] + 0 > 0) echoed++ }
	if (f_init > 0) {
		inits++
		if ($26 !~ /0x80b0/) init_no_ls[inits] = $1
		if ($26 !~ /0x80b1/ || $27 !~ /1/) init_no_eifel_ts[inits] = $1
	}
}
END {
	status = "ok"
	if (nbad > 0) status = "FAIL"
	if (expect_idata && (idata == 0 || data > 0)) { status = "FAIL"; print "  I-DATA expected, DATA sent instead" }
	if (data + idata + lsdata == 0 || sack + lssack == 0) { status = "FAIL"; print "  no DATA/I-DATA/LS-DATA or no SACK/LS-SACK chunk: the capture proves nothing" }
	# LS-SCTP runs only if both INIT and INIT-ACK offered it (Abd El Al et al. §4.6).
	if (lsdata + lssack + lsfwd > 0)
		for (i in init_no_ls) { status = "FAIL"; print "  frame " init_no_ls[i] ": LS-SCTP chunks, but no Load-Sharing-Supported decoded in this INIT/INIT-ACK" }
	if (expect_ts) {
		for (i in init_no_eifel_ts) { status = "FAIL"; print "  frame " init_no_eifel_ts[i] ": no Eifel-Supported with the TIMESTAMP variant decoded in this INIT/INIT-ACK" }
		if (echoed + 0 == 0) { status = "FAIL"; print "  no TIMESTAMP echoes a timestamp (every TSecr is 0 or missing)" }
	}
	printf "check-pcap: %s (udp port %s): %d frames, %d DATA, %d I-DATA, %d LS-DATA, %d SACK, %d LS-SACK chunks, %d frames led by TIMESTAMP; %d malformed, %d not SCTP, %d bad checksum, %d expert errors; %d empty peer HEARTBEATs tolerated; braid.lua: %d braid chunks (%d LS-FORWARD-PSN, %d TIMESTAMP) and %d braid parameters decoded: %s\n", \
		pcap, port, frames, data, idata, lsdata + 0, sack, lssack + 0, tsframes + 0, malformed, notsctp, badsum, experr, tolerated + 0, braid_chunks + 0, lsfwd + 0, ts + 0, braid_params + 0, status
	exit status != "ok"
}' <<<"$fields"
