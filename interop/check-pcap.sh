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
# (braid ↔ braid with LS-SCTP: LS-DATA and LS-SACK count, tshark shows them as unknown types).
# With BRAID_PEER_SPURIOUS=eifel-timestamp or eifel+duptsn (braid ↔ braid with Eifel, Ladha et al.)
# every frame carrying DATA must lead with a TIMESTAMP chunk (0xB3), or the check fails.
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
err=$(mktemp)
trap 'rm -f "$err"' EXIT

# One line per frame: number|malformed|checksum statuses|expert severities|expert messages|chunk types
# (severity Error is 0x00800000; checksum status 1 is Good, 0 Bad, 2 Unverified).
if ! fields=$(tshark -r "$pcap" -n -o 'sctp.checksum:CRC 32c' -d "udp.port==$port,sctp" \
	-T fields -E separator='|' -E occurrence=a -E aggregator=, \
	-e frame.number -e _ws.malformed -e sctp.checksum.status -e _ws.expert.severity \
	-e _ws.expert.message -e sctp.chunk_type -e sctp.chunk_length 2>"$err"); then
	echo "check-pcap: $pcap: tshark failed:"
	grep -v '^Running as user' "$err" | tail -5 | sed 's/^/  /'
	exit 1
fi
case "${BRAID_PEER_SPURIOUS:-}" in
eifel-timestamp | eifel+duptsn) expect_ts=1 ;;
*) expect_ts=0 ;;
esac
awk -F'|' -v pcap="$pcap" -v port="$port" -v expect_ts="$expect_ts" \
	-v expect_idata="${EXPECT_IDATA:-0}" '
function bad(what) {
	nbad++
	if (nbad <= 10) printf "  frame %s: %s\n", $1, what
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
	for (i = 1; i <= n; i++) {
		if (expect_ts && ct[i] == 0 && ct[1] != 179) { bad("DATA without a leading TIMESTAMP chunk"); break }
		if (ct[i] == 0) data++
		else if (ct[i] == 64) idata++
		else if (ct[i] == 3 || ct[i] == 16) sack++
		# braid ↔ braid with LS-SCTP (Abd El Al et al.): LS-DATA 0xB0, LS-SACK 0xB1.
		else if (ct[i] == 176) lsdata++
		else if (ct[i] == 177) lssack++
	}
}
END {
	status = "ok"
	if (nbad > 0) status = "FAIL"
	if (expect_idata && (idata == 0 || data > 0)) { status = "FAIL"; print "  I-DATA expected, DATA sent instead" }
	if (data + idata + lsdata == 0 || sack + lssack == 0) { status = "FAIL"; print "  no DATA/I-DATA/LS-DATA or no SACK/LS-SACK chunk: the capture proves nothing" }
	printf "check-pcap: %s (udp port %s): %d frames, %d DATA, %d I-DATA, %d LS-DATA, %d SACK, %d LS-SACK chunks, %d frames led by TIMESTAMP; %d malformed, %d not SCTP, %d bad checksum, %d expert errors; %d empty peer HEARTBEATs tolerated: %s\n", \
		pcap, port, frames, data, idata, lsdata + 0, sack, lssack + 0, tsframes + 0, malformed, notsctp, badsum, experr, tolerated + 0, status
	exit status != "ok"
}' <<<"$fields"
