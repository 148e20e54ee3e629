-- Wireshark/tshark dissector for braid's own SCTP chunks, parameters and flag bits.
--
--   tshark -X lua_script:interop/wireshark/braid.lua -r FILE.pcap -V
--   (or copy this file to ~/.local/lib/wireshark/plugins/; interop/README.md)
--
-- Wireshark's SCTP dissector has no dissector table keyed by chunk type (4.0 registers only
-- sctp.port and sctp.ppi), so it shows braid's chunks as "RESERVED" with an opaque value.
-- This script is a post-dissector: after SCTP has run, it takes the chunks SCTP framed
-- (sctp.chunk_type, sctp.chunk_length), decodes braid's among them from the frame's bytes,
-- and adds a "braid" tree with named, filterable fields:
--
--   chunk type 0xB0 LS-DATA, 0xB1 LS-SACK, 0xB2 LS-FORWARD-PSN  (braid.chunk, braid.ls*)
--   chunk type 0xB3 TIMESTAMP                                    (braid.timestamp.*)
--   INIT/INIT-ACK parameters 0x80B0 Load-Sharing-Supported,
--                            0x80B1 Eifel-Supported              (braid.param.*, braid.eifel.*)
--   the retransmit bit (0x10) in DATA, I-DATA and LS-DATA flags   (braid.data.rbit, braid.lsdata.rbit)
--   the retransmit bit (0x10) and the DAC count (0x03) in SACK
--   and NR-SACK flags                                           (braid.sack.rbit, braid.sack.dac)
--
-- The layouts are braid's codec's (crates/wire/src/chunk/ls.rs, timestamp.rs, param.rs). A
-- chunk or parameter that braid's decoder would refuse (too short, a count that does not
-- match the length, a PID above 15 or a PSN above 4095 in a wider field) gets the expert
-- info braid.malformed (severity Error), which interop/check-pcap.sh counts as a failure.
-- Flag bits are decoded on every DATA/SACK-like chunk: they mean something only once the
-- association negotiated Eifel-Supported (retransmit bit) or runs CMT with DAC.

local braid = Proto("braid", "braid SCTP extensions")

local CHUNK_DATA, CHUNK_INIT, CHUNK_INIT_ACK, CHUNK_SACK = 0x00, 0x01, 0x02, 0x03
local CHUNK_NR_SACK, CHUNK_I_DATA = 0x10, 0x40
local CHUNK_LS_DATA, CHUNK_LS_SACK, CHUNK_LS_FORWARD_PSN, CHUNK_TIMESTAMP = 0xB0, 0xB1, 0xB2, 0xB3
local PARAM_LOAD_SHARING, PARAM_EIFEL = 0x80B0, 0x80B1
-- LS-SCTP's path identifier has 4 bits and its path sequence number 12 (Abd El Al et al.,
-- "LS-SCTP: a bandwidth aggregation technique for SCTP", Fig. 7).
local MAX_PID, MAX_PSN = 15, 4095

local chunk_names = {
	[CHUNK_LS_DATA] = "LS-DATA",
	[CHUNK_LS_SACK] = "LS-SACK",
	[CHUNK_LS_FORWARD_PSN] = "LS-FORWARD-PSN",
	[CHUNK_TIMESTAMP] = "TIMESTAMP",
}
local param_names = {
	[PARAM_LOAD_SHARING] = "Load-Sharing-Supported",
	[PARAM_EIFEL] = "Eifel-Supported",
}
local std_chunk_names = {
	[CHUNK_DATA] = "DATA", [CHUNK_I_DATA] = "I-DATA",
	[CHUNK_SACK] = "SACK", [CHUNK_NR_SACK] = "NR-SACK",
	[CHUNK_INIT] = "INIT", [CHUNK_INIT_ACK] = "INIT-ACK",
}

local f = {
	-- Common to braid's four chunk types.
	chunk = ProtoField.uint8("braid.chunk", "Chunk type", base.HEX, chunk_names),
	chunk_flags = ProtoField.uint8("braid.chunk.flags", "Chunk flags", base.HEX),
	chunk_length = ProtoField.uint16("braid.chunk.length", "Chunk length", base.DEC),
	chunk_padding = ProtoField.bytes("braid.chunk.padding", "Chunk padding"),

	-- LS-DATA: DATA's flags and stream fields, with an association sequence number (ASN) and
	-- the path (PID, PSN) it was sent on.
	lsdata_flags_res = ProtoField.uint8("braid.lsdata.flags.reserved", "Reserved", base.HEX, nil, 0xE0),
	lsdata_rbit = ProtoField.bool("braid.lsdata.rbit", "R (retransmit bit)", 8, nil, 0x10),
	lsdata_i = ProtoField.bool("braid.lsdata.i", "I (immediate SACK)", 8, nil, 0x08),
	lsdata_u = ProtoField.bool("braid.lsdata.u", "U (unordered)", 8, nil, 0x04),
	lsdata_b = ProtoField.bool("braid.lsdata.b", "B (first fragment)", 8, nil, 0x02),
	lsdata_e = ProtoField.bool("braid.lsdata.e", "E (last fragment)", 8, nil, 0x01),
	lsdata_asn = ProtoField.uint32("braid.lsdata.asn", "Association Sequence Number (ASN)", base.DEC),
	lsdata_pid = ProtoField.uint16("braid.lsdata.pid", "Path Identifier (PID)", base.DEC, nil, 0xF000),
	lsdata_psn = ProtoField.uint16("braid.lsdata.psn", "Path Sequence Number (PSN)", base.DEC, nil, 0x0FFF),
	lsdata_reserved = ProtoField.uint16("braid.lsdata.reserved", "Reserved", base.HEX),
	lsdata_sid = ProtoField.uint16("braid.lsdata.sid", "Stream Identifier", base.DEC),
	lsdata_ssn = ProtoField.uint16("braid.lsdata.ssn", "Stream Sequence Number", base.DEC),
	lsdata_ppid = ProtoField.uint32("braid.lsdata.ppid", "Payload Protocol Identifier", base.DEC),
	lsdata_data = ProtoField.bytes("braid.lsdata.data", "User Data"),

	-- LS-SACK: the association's cumulative ASN and window, one path's PSNs.
	lssack_flags_res = ProtoField.uint8("braid.lssack.flags.reserved", "Reserved", base.HEX, nil, 0xF0),
	lssack_pid = ProtoField.uint8("braid.lssack.pid", "Path Identifier (PID)", base.DEC, nil, 0x0F),
	lssack_cum_asn = ProtoField.uint32("braid.lssack.cum_asn", "Cumulative ASN Ack", base.DEC),
	lssack_a_rwnd = ProtoField.uint32("braid.lssack.a_rwnd", "Advertised Receiver Window Credit (a_rwnd)", base.DEC),
	lssack_timestamp = ProtoField.uint32("braid.lssack.timestamp", "Timestamp", base.DEC),
	lssack_cum_psn = ProtoField.uint32("braid.lssack.cum_psn", "Cumulative PSN Ack", base.DEC),
	lssack_n_gaps = ProtoField.uint16("braid.lssack.gaps", "Number of Gap Ack Blocks", base.DEC),
	lssack_n_dups = ProtoField.uint16("braid.lssack.dups", "Number of Duplicate PSNs", base.DEC),
	lssack_gap_start = ProtoField.uint16("braid.lssack.gap.start", "Gap Ack Block Start", base.DEC),
	lssack_gap_end = ProtoField.uint16("braid.lssack.gap.end", "Gap Ack Block End", base.DEC),
	lssack_dup_psn = ProtoField.uint32("braid.lssack.dup_psn", "Duplicate PSN", base.DEC),

	-- LS-FORWARD-PSN: (PID, New Cumulative PSN) entries.
	lsfwd_pid = ProtoField.uint16("braid.lsforwardpsn.pid", "Path Identifier (PID)", base.DEC),
	lsfwd_psn = ProtoField.uint16("braid.lsforwardpsn.new_cum_psn", "New Cumulative PSN", base.DEC),

	-- TIMESTAMP: RFC 7323's TSval and TSecr, per packet.
	ts_value = ProtoField.uint32("braid.timestamp.value", "Timestamp Value (TSval)", base.DEC),
	ts_echo = ProtoField.uint32("braid.timestamp.echo", "Timestamp Echo Reply (TSecr)", base.DEC),

	-- Flag bits braid adds to standard chunks.
	data_rbit = ProtoField.bool("braid.data.rbit", "R (retransmit bit)", 8, nil, 0x10),
	sack_rbit = ProtoField.bool("braid.sack.rbit", "R (answers a retransmission)", 8, nil, 0x10),
	sack_dac = ProtoField.uint8("braid.sack.dac", "DAC (packets acknowledged)", base.DEC, nil, 0x03),

	-- INIT/INIT-ACK parameters.
	param_type = ProtoField.uint16("braid.param.type", "Parameter type", base.HEX, param_names),
	param_length = ProtoField.uint16("braid.param.length", "Parameter length", base.DEC),
	eifel_flags = ProtoField.uint32("braid.eifel.flags", "Eifel variants", base.HEX),
	eifel_ts = ProtoField.bool("braid.eifel.timestamp", "TIMESTAMP chunk (variant I)", 32, nil, 0x1),
	eifel_rbit = ProtoField.bool("braid.eifel.rbit", "Retransmit bit (variant II)", 32, nil, 0x2),
	eifel_reserved = ProtoField.uint32("braid.eifel.reserved", "Reserved", base.HEX, nil, 0xFFFFFFFC),
}
braid.fields = f

local e_malformed = ProtoExpert.new("braid.malformed", "braid chunk or parameter braid's decoder refuses",
	expert.group.MALFORMED, expert.severity.ERROR)
braid.experts = { e_malformed }

-- The chunks Wireshark's SCTP dissector framed: where each starts and its length field.
-- (The "sctp" item's own length leaves out DATA payloads handed to subdissectors, so the
-- chunks are located from these instead.)
local sctp_field = Field.new("sctp")
local chunk_type_field = Field.new("sctp.chunk_type")
local chunk_length_field = Field.new("sctp.chunk_length")

-- The retransmit bit (0x10) of a flags byte; plain arithmetic, as Wireshark's Lua 5.2 has
-- bit32 and later Luas do not.
local function rbit(flags)
	return math.floor(flags / 16) % 2 == 1
end

local function pad4(n)
	return n + (4 - n % 4) % 4
end

-- Adds a chunk's flags and length to subtree t; returns the flags item.
local function flags_and_length(t, tvb, off)
	local fl = t:add(f.chunk_flags, tvb(off + 1, 1))
	t:add(f.chunk_length, tvb(off + 2, 2))
	return fl
end

local function malformed(t, text)
	t:add_proto_expert_info(e_malformed, text)
end

-- LS-DATA (Abd El Al et al., "LS-SCTP: a bandwidth aggregation technique for SCTP", Fig. 7).
local function ls_data(t, tvb, off, clen)
	local fl = flags_and_length(t, tvb, off)
	fl:add(f.lsdata_flags_res, tvb(off + 1, 1))
	-- braid's sender marks every retransmission so (Ladha et al., "On Making SCTP Robust to
	-- Spurious Retransmissions", Fig. 6), LS-DATA included; an LS-SCTP receiver ignores it.
	fl:add(f.lsdata_rbit, tvb(off + 1, 1))
	fl:add(f.lsdata_i, tvb(off + 1, 1))
	fl:add(f.lsdata_u, tvb(off + 1, 1))
	fl:add(f.lsdata_b, tvb(off + 1, 1))
	fl:add(f.lsdata_e, tvb(off + 1, 1))
	if clen < 20 then
		malformed(t, "LS-DATA shorter than its 20-byte header")
		return
	end
	local v = off + 4
	t:add(f.lsdata_asn, tvb(v, 4))
	t:add(f.lsdata_pid, tvb(v + 4, 2))
	t:add(f.lsdata_psn, tvb(v + 4, 2))
	t:add(f.lsdata_reserved, tvb(v + 6, 2))
	t:add(f.lsdata_sid, tvb(v + 8, 2))
	t:add(f.lsdata_ssn, tvb(v + 10, 2))
	t:add(f.lsdata_ppid, tvb(v + 12, 4))
	if clen > 20 then
		t:add(f.lsdata_data, tvb(v + 16, clen - 20))
	end
	local pid_psn = tvb(v + 4, 2):uint()
	t:append_text(string.format(" (ASN: %d, PID: %d, PSN: %d, SID: %d, SSN: %d)",
		tvb(v, 4):uint(), math.floor(pid_psn / 4096), pid_psn % 4096,
		tvb(v + 8, 2):uint(), tvb(v + 10, 2):uint()))
end

-- LS-SACK (Abd El Al et al., Fig. 8; the PID in the flags is braid's, so LS-SACKs for
-- several paths can share a packet).
local function ls_sack(t, tvb, off, clen)
	local fl = flags_and_length(t, tvb, off)
	fl:add(f.lssack_flags_res, tvb(off + 1, 1))
	fl:add(f.lssack_pid, tvb(off + 1, 1))
	if clen < 24 then
		malformed(t, "LS-SACK shorter than its 24-byte header")
		return
	end
	local v = off + 4
	t:add(f.lssack_cum_asn, tvb(v, 4))
	t:add(f.lssack_a_rwnd, tvb(v + 4, 4))
	t:add(f.lssack_timestamp, tvb(v + 8, 4))
	local cum = t:add(f.lssack_cum_psn, tvb(v + 12, 4))
	local cum_psn = tvb(v + 12, 4):uint()
	if cum_psn > MAX_PSN then
		malformed(cum, "Cumulative PSN Ack above 4095")
	end
	t:add(f.lssack_n_gaps, tvb(v + 16, 2))
	t:add(f.lssack_n_dups, tvb(v + 18, 2))
	local n_gaps, n_dups = tvb(v + 16, 2):uint(), tvb(v + 18, 2):uint()
	t:append_text(string.format(" (PID: %d, Cumulative ASN Ack: %d, Cumulative PSN Ack: %d)",
		tvb(off + 1, 1):uint() % 16, tvb(v, 4):uint(), cum_psn))
	if 24 + 4 * (n_gaps + n_dups) ~= clen then
		malformed(t, string.format("%d gap blocks and %d duplicate PSNs do not fill a length of %d",
			n_gaps, n_dups, clen))
		return
	end
	local p = v + 20
	for _ = 1, n_gaps do
		local s, e = tvb(p, 2):uint(), tvb(p + 2, 2):uint()
		-- Offsets from the Cumulative PSN Ack, as SACK's are from the Cumulative TSN Ack;
		-- PSNs wrap at 4096.
		local g = t:add(tvb(p, 4), string.format("Gap Ack Block: %d-%d (PSNs %d-%d)", s, e,
			(cum_psn + s) % (MAX_PSN + 1), (cum_psn + e) % (MAX_PSN + 1)))
		g:add(f.lssack_gap_start, tvb(p, 2))
		g:add(f.lssack_gap_end, tvb(p + 2, 2))
		p = p + 4
	end
	for _ = 1, n_dups do
		local d = t:add(f.lssack_dup_psn, tvb(p, 4))
		if tvb(p, 4):uint() > MAX_PSN then
			malformed(d, "duplicate PSN above 4095")
		end
		p = p + 4
	end
end

-- LS-FORWARD-PSN (braid's addition to LS-SCTP: FORWARD-TSN of RFC 3758 for one path's PSNs).
local function ls_forward_psn(t, tvb, off, clen)
	flags_and_length(t, tvb, off)
	local vlen = clen - 4
	if vlen == 0 or vlen % 4 ~= 0 then
		malformed(t, "LS-FORWARD-PSN value must be one or more 4-byte entries")
		return
	end
	local p = off + 4
	local entries = math.floor(vlen / 4)
	for _ = 1, entries do
		local pid, psn = tvb(p, 2):uint(), tvb(p + 2, 2):uint()
		local e = t:add(tvb(p, 4), string.format("Entry: PID %d, New Cumulative PSN %d", pid, psn))
		local pi = e:add(f.lsfwd_pid, tvb(p, 2))
		local si = e:add(f.lsfwd_psn, tvb(p + 2, 2))
		if pid > MAX_PID then malformed(pi, "PID above 15") end
		if psn > MAX_PSN then malformed(si, "New Cumulative PSN above 4095") end
		p = p + 4
	end
	t:append_text(string.format(" (%d entries)", entries))
end

-- TIMESTAMP (Ladha et al., Fig. 6 variant I; RFC 7323's echo rules, per packet).
local function timestamp(t, tvb, off, clen)
	flags_and_length(t, tvb, off)
	if clen ~= 12 then
		malformed(t, "TIMESTAMP length is not 12")
		return
	end
	t:add(f.ts_value, tvb(off + 4, 4))
	t:add(f.ts_echo, tvb(off + 8, 4))
	t:append_text(string.format(" (TSval: %d, TSecr: %d)", tvb(off + 4, 4):uint(), tvb(off + 8, 4):uint()))
end

-- braid's parameters in an INIT or INIT-ACK (RFC 9260 §3.3.2: they follow 16 fixed bytes).
local function init_params(root, tvb, off, clen, cname)
	local p, stop = off + 20, off + clen
	local found = {}
	while p + 4 <= stop do
		local ptype, plen = tvb(p, 2):uint(), tvb(p + 2, 2):uint()
		if plen < 4 or p + plen > stop then break end
		local name = param_names[ptype]
		if name then
			local t = root():add(tvb(p, plen), name .. " parameter (in " .. cname .. ")")
			t:add(f.param_type, tvb(p, 2))
			t:add(f.param_length, tvb(p + 2, 2))
			if ptype == PARAM_LOAD_SHARING then
				-- Abd El Al et al. §4.6: the offer itself is the information; no value.
				if plen ~= 4 then malformed(t, "Load-Sharing-Supported carries a value") end
			elseif plen ~= 8 then
				malformed(t, "Eifel-Supported value is not one 32-bit word")
			else
				local w = t:add(f.eifel_flags, tvb(p + 4, 4))
				w:add(f.eifel_ts, tvb(p + 4, 4))
				w:add(f.eifel_rbit, tvb(p + 4, 4))
				-- Reserved for later variants: ignored by braid's decoder.
				w:add(f.eifel_reserved, tvb(p + 4, 4))
			end
			found[#found + 1] = name
		end
		p = p + pad4(plen)
	end
	return found
end

-- Decodes braid's chunks, flag bits and parameters among the chunks Wireshark's SCTP
-- dissector framed in this frame; returns their names, for the Info column.
local function dissect_chunks(tree)
	local bt
	local function root()
		if not bt then
			local sctp = sctp_field()
			bt = sctp and tree:add(braid, sctp.range) or tree:add(braid)
		end
		return bt
	end
	local names = {}
	local lengths = { chunk_length_field() }
	for i, tfi in ipairs({ chunk_type_field() }) do
		local tvb, off = tfi.source, tfi.offset
		-- Each chunk's length field follows its type and flags; a chunk too short to hold one
		-- is the SCTP dissector's to report.
		local lfi = lengths[i]
		if not lfi or lfi.offset ~= off + 2 then
			lfi = nil
			for _, l in ipairs(lengths) do
				if l.offset == off + 2 then lfi = l break end
			end
		end
		local clen = lfi and lfi.value or 0
		if clen >= 4 and off + clen <= tvb:len() then
			local ctype, cflags = tfi.value, tvb(off + 1, 1):uint()
			local padded = math.min(pad4(clen), tvb:len() - off)
			local name = chunk_names[ctype]
			if name then
				local t = root():add(tvb(off, padded), name .. " chunk")
				t:add(f.chunk, tvb(off, 1))
				if ctype == CHUNK_LS_DATA then
					ls_data(t, tvb, off, clen)
				elseif ctype == CHUNK_LS_SACK then
					ls_sack(t, tvb, off, clen)
				elseif ctype == CHUNK_LS_FORWARD_PSN then
					ls_forward_psn(t, tvb, off, clen)
				else
					timestamp(t, tvb, off, clen)
				end
				if padded > clen then
					t:add(f.chunk_padding, tvb(off + clen, padded - clen))
				end
				names[#names + 1] = name
			elseif ctype == CHUNK_DATA or ctype == CHUNK_I_DATA then
				-- Ladha et al., Fig. 6 rule (a): every retransmission carries the retransmit bit.
				local t = root():add(tvb(off, 2), std_chunk_names[ctype] .. " chunk flags (braid)")
				t:add(f.data_rbit, tvb(off + 1, 1))
				if rbit(cflags) then names[#names + 1] = std_chunk_names[ctype] .. "(R)" end
			elseif ctype == CHUNK_SACK or ctype == CHUNK_NR_SACK then
				-- Ladha et al., Fig. 6 rule (b): the SACK answers a DATA chunk that had the bit.
				local t = root():add(tvb(off, 2), std_chunk_names[ctype] .. " chunk flags (braid)")
				t:add(f.sack_rbit, tvb(off + 1, 1))
				-- Iyengar et al., "Concurrent Multipath Transfer Using SCTP Multihoming Over
				-- Independent End-to-End Paths", delayed ack for CMT: how many DATA packets
				-- this SACK acknowledges (1 or 2; 0 when DAC is off).
				t:add(f.sack_dac, tvb(off + 1, 1))
				if rbit(cflags) then names[#names + 1] = std_chunk_names[ctype] .. "(R)" end
			elseif (ctype == CHUNK_INIT or ctype == CHUNK_INIT_ACK) and clen >= 20 then
				for _, n in ipairs(init_params(root, tvb, off, clen, std_chunk_names[ctype])) do
					names[#names + 1] = n
				end
			end
		end
	end
	return names
end

function braid.dissector(_, pinfo, tree)
	local names = dissect_chunks(tree)
	if #names > 0 then
		pinfo.cols.info:append(" [braid: " .. table.concat(names, " ") .. "]")
	end
end

register_postdissector(braid)
