//! Malformed input, one class per test: each asserts the exact [`DecodeError`] variant and
//! the `what` that names the element at fault.
//!
//! Packets are built by hand as bytes. Every one gets a correct CRC32c via
//! [`write_checksum`], so the decoder gets past RFC 9260 §6.8 and fails (or succeeds) on the
//! thing the test is about, not on the checksum.

use std::net::Ipv4Addr;

use braid_wire::chunk::{Chunk, CookieAck, Init, RawChunk, Shutdown};
use braid_wire::packet::write_checksum;
use braid_wire::{
    ChunkType, DecodeError, Packet, Param, ParamType, UnrecognizedAction, raw_chunks,
};
use bytes::Bytes;

// ---------------------------------------------------------------------------------------
// Byte builders.
// ---------------------------------------------------------------------------------------

/// Common header (ports 5001 → 5002, tag 0x01020304) + `chunks` as given, checksum written.
fn packet(chunks: &[u8]) -> Bytes {
    let mut p = vec![0x13, 0x89, 0x13, 0x8a, 1, 2, 3, 4, 0, 0, 0, 0];
    p.extend_from_slice(chunks);
    write_checksum(&mut p);
    Bytes::from(p)
}

/// A chunk with a true length field, padded to 4 bytes (RFC 9260 §3.2).
fn chunk(ty: u8, flags: u8, value: &[u8]) -> Vec<u8> {
    let mut c = chunk_unpadded(ty, flags, value);
    c.resize(c.len().next_multiple_of(4), 0);
    c
}

/// A chunk with a true length field and no padding.
fn chunk_unpadded(ty: u8, flags: u8, value: &[u8]) -> Vec<u8> {
    chunk_with_len(ty, flags, 4 + value.len() as u16, value)
}

/// A chunk header claiming `len`, followed by `body` exactly (no padding added).
fn chunk_with_len(ty: u8, flags: u8, len: u16, body: &[u8]) -> Vec<u8> {
    let mut c = vec![ty, flags];
    c.extend_from_slice(&len.to_be_bytes());
    c.extend_from_slice(body);
    c
}

/// A TLV (parameter or error cause) with a true length field, unpadded.
fn tlv(ty: u16, value: &[u8]) -> Vec<u8> {
    tlv_with_len(ty, 4 + value.len() as u16, value)
}

/// A TLV header claiming `len`, followed by `body` exactly.
fn tlv_with_len(ty: u16, len: u16, body: &[u8]) -> Vec<u8> {
    let mut t = ty.to_be_bytes().to_vec();
    t.extend_from_slice(&len.to_be_bytes());
    t.extend_from_slice(body);
    t
}

/// The 16-byte fixed part of an INIT (RFC 9260 §3.3.2).
const INIT_FIXED: [u8; 16] = [
    0xca, 0xfe, 0xf0, 0x0d, // initiate tag
    0x00, 0x01, 0x00, 0x00, // a_rwnd
    0x00, 0x0a, 0x00, 0x0a, // outbound / inbound streams
    0x00, 0x00, 0x00, 0x4d, // initial TSN
];

/// An INIT chunk value: the fixed part, then `params` bytes as given.
fn init_value(params: &[u8]) -> Vec<u8> {
    let mut v = INIT_FIXED.to_vec();
    v.extend_from_slice(params);
    v
}

fn decode_err(pkt: &Bytes) -> DecodeError {
    match Packet::decode(pkt) {
        Ok(p) => panic!("decoded a malformed packet: {p:?}"),
        Err(e) => e,
    }
}

fn decode_ok(pkt: &Bytes) -> Packet {
    Packet::decode(pkt).unwrap_or_else(|e| panic!("{e}"))
}

fn inconsistent(what: &'static str, detail: &'static str) -> DecodeError {
    DecodeError::Inconsistent { what, detail }
}

const SACK_COUNTS: &str = "block and TSN counts do not match the chunk length";
const FWD_ENTRIES: &str = "length is not the fixed part plus whole stream entries";

// ---------------------------------------------------------------------------------------
// Packet framing (RFC 9260 §3.1, §3.2, §6.8).
// ---------------------------------------------------------------------------------------

// RFC 9260 §3.1: the common header is 12 bytes.
#[test]
fn packet_shorter_than_the_common_header() {
    for len in 0..12 {
        let short = Bytes::from(vec![0u8; len]);
        let want = DecodeError::Truncated {
            what: "SCTP common header",
            need: 12,
            have: len,
        };
        assert_eq!(Packet::decode(&short), Err(want.clone()), "len {len}");
        assert_eq!(Packet::decode_unverified(&short), Err(want), "len {len}");
    }
}

#[test]
fn common_header_alone_is_a_packet_without_chunks() {
    assert_eq!(decode_ok(&packet(&[])).chunks, vec![]);
}

// RFC 9260 §3.2: a chunk header is 4 bytes.
#[test]
fn truncated_chunk_header() {
    for have in 1..4 {
        let pkt = packet(&[7, 0, 0, 8][..have]);
        assert_eq!(
            decode_err(&pkt),
            DecodeError::Truncated {
                what: "chunk header",
                need: 4,
                have,
            }
        );
    }
    // After a good chunk, too.
    let mut two = chunk(11, 0, &[]);
    two.extend_from_slice(&[14, 0]);
    assert_eq!(
        decode_err(&packet(&two)),
        DecodeError::Truncated {
            what: "chunk header",
            need: 4,
            have: 2,
        }
    );
}

// RFC 9260 §3.2: Chunk Length counts the 4-byte header, so 0..=3 is impossible (and a
// zero length would loop forever in a naive parser).
#[test]
fn chunk_length_below_four() {
    for length in 0..4u16 {
        let pkt = packet(&chunk_with_len(11, 0, length, &[0; 4]));
        assert_eq!(
            decode_err(&pkt),
            DecodeError::LengthTooSmall {
                what: "chunk header",
                length: length.into(),
                min: 4,
            },
            "length {length}"
        );
    }
}

#[test]
fn chunk_length_past_the_end_of_the_packet() {
    // A SHUTDOWN claiming 12 bytes in a packet holding 8 of it.
    let pkt = packet(&chunk_with_len(7, 0, 12, &[0, 0, 0, 1]));
    assert_eq!(
        decode_err(&pkt),
        DecodeError::LengthPastEnd {
            what: "chunk header",
            length: 12,
            available: 8,
        }
    );
    assert!(matches!(
        raw_chunks(&pkt).next(),
        Some(Err(DecodeError::LengthPastEnd { .. }))
    ));
}

// RFC 9260 §3.2: every chunk is padded to a multiple of 4 bytes, the last one included.
#[test]
fn last_chunk_missing_its_padding() {
    // DATA with 1 byte of user data: length 17, needs 3 bytes of padding.
    let data = chunk_unpadded(0, 0x03, &[0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0xaa]);
    for have in 0..3 {
        let mut bytes = data.clone();
        bytes.resize(data.len() + have, 0);
        assert_eq!(
            decode_err(&packet(&bytes)),
            DecodeError::BadPadding {
                what: "chunk",
                need: 3,
                have,
            },
            "{have} padding bytes"
        );
    }
    let mut padded = data;
    padded.resize(20, 0);
    assert!(Packet::decode(&packet(&padded)).is_ok());
}

// RFC 9260 §6.8: a packet whose CRC32c does not match is discarded.
#[test]
fn wrong_checksum() {
    let good = packet(&chunk(11, 0, &[]));
    let computed = u32::from_le_bytes([good[8], good[9], good[10], good[11]]);
    let mut bad = good.to_vec();
    bad[8] ^= 0x01;
    let carried = computed ^ 0x01;
    let bad = Bytes::from(bad);
    assert_eq!(
        decode_err(&bad),
        DecodeError::BadChecksum { carried, computed }
    );
    // Skipping verification (checksum offload) decodes it.
    assert_eq!(
        Packet::decode_unverified(&bad).map(|p| p.chunks),
        Ok(vec![Chunk::CookieAck(CookieAck)])
    );
}

// ---------------------------------------------------------------------------------------
// Counts that do not add up with the length.
// ---------------------------------------------------------------------------------------

/// A SACK value (RFC 9260 §3.3.4) with the given counts, then `tail` as the lists.
fn sack_value(gaps: u16, dups: u16, tail: &[u8]) -> Vec<u8> {
    let mut v = vec![0, 0, 0, 100, 0, 1, 0, 0];
    v.extend_from_slice(&gaps.to_be_bytes());
    v.extend_from_slice(&dups.to_be_bytes());
    v.extend_from_slice(tail);
    v
}

#[test]
fn sack_counts_disagree_with_its_length() {
    let cases: [(&str, Vec<u8>); 4] = [
        ("1 gap block, none present", sack_value(1, 0, &[])),
        (
            "2 duplicate TSNs, 1 present",
            sack_value(0, 2, &[0, 0, 0, 99]),
        ),
        (
            "no lists but 4 bytes follow",
            sack_value(0, 0, &[0, 0, 0, 99]),
        ),
        (
            "1 gap block + 1 dup, only the block",
            sack_value(1, 1, &[0, 2, 0, 3]),
        ),
    ];
    for (label, value) in cases {
        assert_eq!(
            decode_err(&packet(&chunk(3, 0, &value))),
            inconsistent("SACK chunk", SACK_COUNTS),
            "{label}"
        );
    }
}

// A lying count must be rejected before anything is allocated for it.
#[test]
fn sack_claiming_65535_gap_blocks_in_a_short_chunk() {
    let value = sack_value(u16::MAX, u16::MAX, &[0, 2, 0, 3]);
    assert_eq!(
        decode_err(&packet(&chunk(3, 0, &value))),
        inconsistent("SACK chunk", SACK_COUNTS)
    );
}

#[test]
fn sack_shorter_than_its_fixed_part() {
    assert_eq!(
        decode_err(&packet(&chunk(3, 0, &[0, 0, 0, 100, 0, 1, 0, 0, 0]))),
        DecodeError::Truncated {
            what: "SACK chunk",
            need: 2,
            have: 1,
        }
    );
}

/// An NR-SACK value with the given counts, then `tail`.
fn nr_sack_value(gaps: u16, nr_gaps: u16, dups: u16, tail: &[u8]) -> Vec<u8> {
    let mut v = vec![0, 0, 0, 100, 0, 1, 0, 0];
    for n in [gaps, nr_gaps, dups, 0] {
        v.extend_from_slice(&n.to_be_bytes());
    }
    v.extend_from_slice(tail);
    v
}

#[test]
fn nr_sack_counts_disagree_with_its_length() {
    let cases: [(&str, Vec<u8>); 4] = [
        ("1 NR gap block, none present", nr_sack_value(0, 1, 0, &[])),
        (
            "1 gap + 1 NR gap, one present",
            nr_sack_value(1, 1, 0, &[0, 2, 0, 3]),
        ),
        ("bytes beyond the lists", nr_sack_value(0, 0, 1, &[0; 8])),
        (
            "65535 of each in a short chunk",
            nr_sack_value(u16::MAX, u16::MAX, u16::MAX, &[0; 4]),
        ),
    ];
    for (label, value) in cases {
        assert_eq!(
            decode_err(&packet(&chunk(0x10, 0, &value))),
            inconsistent("NR-SACK chunk", SACK_COUNTS),
            "{label}"
        );
    }
}

// RFC 3758 §3.2: FORWARD-TSN is the new cumulative TSN plus whole 4-byte stream entries.
#[test]
fn forward_tsn_with_a_partial_stream_entry() {
    for extra in [2usize, 6] {
        let value = vec![0u8; 4 + extra];
        assert_eq!(
            decode_err(&packet(&chunk(0xc0, 0, &value))),
            inconsistent("FORWARD-TSN chunk", FWD_ENTRIES),
            "{extra} bytes of entries"
        );
    }
    assert_eq!(
        decode_err(&packet(&chunk(0xc0, 0, &[0, 0, 1]))),
        DecodeError::Truncated {
            what: "FORWARD-TSN chunk",
            need: 4,
            have: 3,
        }
    );
}

// RFC 8260 §2.3.1: I-FORWARD-TSN entries are 8 bytes (stream, flags, MID).
#[test]
fn i_forward_tsn_with_a_partial_stream_entry() {
    for extra in [4usize, 12] {
        let value = vec![0u8; 4 + extra];
        assert_eq!(
            decode_err(&packet(&chunk(0xc2, 0, &value))),
            inconsistent("I-FORWARD-TSN chunk", FWD_ENTRIES),
            "{extra} bytes of entries"
        );
    }
}

// RFC 9260 §3.3.10.2: the count is followed by exactly that many 16-bit parameter types.
#[test]
fn missing_mandatory_parameter_cause_with_a_wrong_count() {
    let what = "Missing Mandatory Parameter cause";
    let detail = "parameter count does not match the cause length";
    for (count, types) in [
        (3u32, vec![0u8, 7, 0, 9]), // 3 announced, 2 present
        (1, vec![0, 7, 0, 9]),      // 1 announced, 2 present
        (u32::MAX, vec![0, 7]),     // absurd count: rejected without allocating
    ] {
        let mut info = count.to_be_bytes().to_vec();
        info.extend_from_slice(&types);
        let abort = chunk(6, 0, &tlv(2, &info));
        assert_eq!(
            decode_err(&packet(&abort)),
            inconsistent(what, detail),
            "count {count}"
        );
    }
}

// ---------------------------------------------------------------------------------------
// Fixed-size chunks with a value of the wrong size.
// ---------------------------------------------------------------------------------------

fn bad_value_length(what: &'static str, len: usize, expected: usize) -> DecodeError {
    DecodeError::BadValueLength {
        what,
        len,
        expected,
    }
}

// RFC 9260 §3.3.8: SHUTDOWN has length 8 (a 4-byte Cumulative TSN Ack).
#[test]
fn shutdown_with_a_value_that_is_not_4_bytes() {
    for len in [0usize, 3, 8] {
        assert_eq!(
            decode_err(&packet(&chunk(7, 0, &vec![0; len]))),
            bad_value_length("SHUTDOWN chunk", len, 4),
            "{len} bytes"
        );
    }
}

// RFC 9260 §3.3.12: COOKIE-ACK has no value.
#[test]
fn cookie_ack_with_a_value() {
    assert_eq!(
        decode_err(&packet(&chunk(11, 0, &[0; 4]))),
        bad_value_length("COOKIE-ACK chunk", 4, 0)
    );
}

#[test]
fn shutdown_ack_and_shutdown_complete_with_a_value() {
    assert_eq!(
        decode_err(&packet(&chunk(8, 0, &[0; 4]))),
        bad_value_length("SHUTDOWN-ACK chunk", 4, 0)
    );
    assert_eq!(
        decode_err(&packet(&chunk(14, 1, &[0]))),
        bad_value_length("SHUTDOWN-COMPLETE chunk", 1, 0)
    );
}

// RFC 9260 Appendix A: ECNE and CWR carry a 4-byte Lowest TSN Number.
#[test]
fn ecne_and_cwr_without_their_tsn() {
    assert_eq!(
        decode_err(&packet(&chunk(12, 0, &[]))),
        bad_value_length("ECNE chunk", 0, 4)
    );
    assert_eq!(
        decode_err(&packet(&chunk(13, 0, &[0; 8]))),
        bad_value_length("CWR chunk", 8, 4)
    );
}

// RFC 9260 §3.3.1: DATA needs its 12-byte fixed part (TSN, stream, SSN, PPID).
#[test]
fn data_shorter_than_its_fixed_part() {
    assert_eq!(
        decode_err(&packet(&chunk(0, 3, &[0; 10]))),
        DecodeError::Truncated {
            what: "DATA chunk",
            need: 4,
            have: 2,
        }
    );
}

// ---------------------------------------------------------------------------------------
// Parameters inside INIT (RFC 9260 §3.2.1, §3.3.2).
// ---------------------------------------------------------------------------------------

#[test]
fn init_parameter_length_below_four() {
    for length in 0..4u16 {
        let value = init_value(&tlv_with_len(5, length, &[192, 0, 2, 1]));
        assert_eq!(
            decode_err(&packet(&chunk(1, 0, &value))),
            DecodeError::LengthTooSmall {
                what: "INIT chunk",
                length: length.into(),
                min: 4,
            },
            "length {length}"
        );
    }
}

#[test]
fn init_parameter_length_past_the_end_of_the_chunk() {
    // An IPv4 Address parameter claiming 12 bytes with 8 left in the chunk; the packet has
    // more bytes after the chunk, which the parameter must not reach into.
    let value = init_value(&tlv_with_len(5, 12, &[192, 0, 2, 1]));
    let mut chunks = chunk(1, 0, &value);
    chunks.extend_from_slice(&chunk(11, 0, &[]));
    assert_eq!(
        decode_err(&packet(&chunks)),
        DecodeError::LengthPastEnd {
            what: "INIT chunk",
            length: 12,
            available: 8,
        }
    );
}

#[test]
fn init_parameter_truncated_header() {
    let value = init_value(&[0x80, 0x00]);
    assert_eq!(
        decode_err(&packet(&chunk(1, 0, &value))),
        DecodeError::Truncated {
            what: "INIT chunk",
            need: 4,
            have: 2,
        }
    );
}

// RFC 9260 §3.2: a parameter's padding is all there or (for the last one) absent; a
// piece of it means the chunk length is wrong.
#[test]
fn init_parameter_followed_by_partial_padding() {
    for have in 1..3 {
        // A 5-byte Unknown parameter (needs 3 bytes of padding) followed by `have` bytes.
        let mut params = tlv(0x8123, &[0xee]);
        params.resize(params.len() + have, 0);
        let value = init_value(&params);
        assert_eq!(
            decode_err(&packet(&chunk(1, 0, &value))),
            DecodeError::BadPadding {
                what: "INIT chunk",
                need: 3,
                have,
            },
            "{have} padding bytes"
        );
    }
}

// RFC 9260 §3.3.2.1: an IPv4 Address parameter is exactly 8 bytes.
#[test]
fn ipv4_address_parameter_with_5_bytes() {
    let value = init_value(&tlv(5, &[192, 0, 2, 1, 9]));
    assert_eq!(
        decode_err(&packet(&chunk(1, 0, &value))),
        bad_value_length("IPv4 Address parameter", 5, 4)
    );
}

#[test]
fn ipv6_address_parameter_with_4_bytes() {
    let value = init_value(&tlv(6, &[192, 0, 2, 1]));
    assert_eq!(
        decode_err(&packet(&chunk(1, 0, &value))),
        bad_value_length("IPv6 Address parameter", 4, 16)
    );
}

// RFC 9260 §3.2: the last parameter's padding may be left out of the chunk length, since
// the chunk's own padding covers it ...
#[test]
fn last_init_parameter_may_omit_its_padding() {
    let host = tlv(11, b"ab\0"); // Host Name Address, length 7
    let mut params = tlv(5, &[192, 0, 2, 1]);
    params.extend_from_slice(&host);
    let value = init_value(&params);
    assert_eq!(value.len(), 16 + 8 + 7);
    let pkt = packet(&chunk(1, 0, &value)); // Chunk Length 35, then 1 byte of chunk padding
    assert_eq!(u16::from_be_bytes([pkt[14], pkt[15]]), 35);
    let Chunk::Init(init) = &decode_ok(&pkt).chunks[0] else {
        panic!("not an INIT");
    };
    assert_eq!(
        init.params,
        vec![
            Param::Ipv4Address(Ipv4Addr::new(192, 0, 2, 1)),
            Param::HostNameAddress(Bytes::from_static(b"ab\0")),
        ]
    );
}

// ... and a chunk length that does include that padding is accepted too.
#[test]
fn chunk_length_including_the_last_parameters_padding_is_accepted() {
    let mut params = tlv(5, &[192, 0, 2, 1]);
    params.extend_from_slice(&tlv(11, b"ab\0"));
    let without = decode_ok(&packet(&chunk(1, 0, &init_value(&params))));
    params.push(0); // the Host Name Address padding, now counted in Chunk Length (36)
    let pkt = packet(&chunk(1, 0, &init_value(&params)));
    assert_eq!(u16::from_be_bytes([pkt[14], pkt[15]]), 36);
    let with = decode_ok(&pkt);
    assert_eq!(with, without);
    // The encoder writes the canonical form: padding left to the chunk.
    let reencoded = with.to_vec().expect("encodes");
    assert_eq!(u16::from_be_bytes([reencoded[14], reencoded[15]]), 35);
}

// RFC 5061 §4.1.1: the first parameter of an ASCONF is an address (IPv4 or IPv6).
#[test]
fn asconf_whose_first_parameter_is_not_an_address() {
    let mut value = vec![0, 0, 0, 8]; // serial
    value.extend_from_slice(&tlv(0xc005, &[0, 0, 0, 1])); // Success Indication
    assert_eq!(
        decode_err(&packet(&chunk(0xc1, 0, &value))),
        inconsistent(
            "ASCONF chunk",
            "first parameter is not an IPv4 or IPv6 Address parameter"
        )
    );
    // No parameter at all.
    assert_eq!(
        decode_err(&packet(&chunk(0xc1, 0, &[0, 0, 0, 8]))),
        DecodeError::Truncated {
            what: "ASCONF chunk",
            need: 4,
            have: 0,
        }
    );
}

// RFC 5061 §4.2.1: Add IP Address is a correlation ID and one address parameter, nothing
// more.
#[test]
fn add_ip_address_with_bytes_after_its_address() {
    let mut inner = vec![0, 0, 0, 1];
    inner.extend_from_slice(&tlv(5, &[192, 0, 2, 9]));
    inner.extend_from_slice(&[0; 4]);
    let mut value = vec![0, 0, 0, 8];
    value.extend_from_slice(&tlv(5, &[192, 0, 2, 1]));
    value.extend_from_slice(&tlv(0xc001, &inner));
    assert_eq!(
        decode_err(&packet(&chunk(0xc1, 0, &value))),
        inconsistent(
            "Add IP Address parameter",
            "bytes follow the address parameter"
        )
    );
}

// ---------------------------------------------------------------------------------------
// Unrecognized types and their two high bits (RFC 9260 §3.2, §3.2.1).
// ---------------------------------------------------------------------------------------

// RFC 9260 §3.2: 00 stop, 01 stop and report, 10 skip, 11 skip and report.
#[test]
fn chunk_type_high_bits() {
    let cases = [
        (0x3f, UnrecognizedAction::Stop, false, false),
        (0x7f, UnrecognizedAction::StopAndReport, false, true),
        (0xbf, UnrecognizedAction::Skip, true, false),
        (0xff, UnrecognizedAction::SkipAndReport, true, true),
    ];
    for (t, action, skips, reports) in cases {
        let a = ChunkType(t).unrecognized_action();
        assert_eq!(a, action, "{t:#04x}");
        assert_eq!((a.skips(), a.reports()), (skips, reports), "{t:#04x}");
    }
    // Only the two high bits matter.
    assert_eq!(
        ChunkType(0x40).unrecognized_action(),
        UnrecognizedAction::StopAndReport
    );
    assert_eq!(
        ChunkType(0x00).unrecognized_action(),
        UnrecognizedAction::Stop
    );
}

// RFC 9260 §3.2.1: the same encoding in the two high bits of a parameter type.
#[test]
fn parameter_type_high_bits() {
    let cases = [
        (0x3fff, UnrecognizedAction::Stop),
        (0x7fff, UnrecognizedAction::StopAndReport),
        (0xbfff, UnrecognizedAction::Skip),
        (0xffff, UnrecognizedAction::SkipAndReport),
    ];
    for (t, action) in cases {
        assert_eq!(ParamType(t).unrecognized_action(), action, "{t:#06x}");
    }
    assert_eq!(
        ParamType::ECN_CAPABLE.unrecognized_action(),
        UnrecognizedAction::Skip
    );
}

// RFC 9260 §3.2: an unrecognized chunk is kept whole (type, flags, value) and the chunks
// after it still decode; applying its high bits is the core's job, so even a "stop" type
// does not stop the codec.
#[test]
fn unknown_chunks_are_kept_raw_and_the_rest_still_decodes() {
    for t in [0x3f, 0x7f, 0xbf, 0xff] {
        let mut chunks = chunk(t, 0xa5, &[1, 2, 3, 4, 5]);
        chunks.extend_from_slice(&chunk(7, 0, &[0, 0, 0x04, 0xd2]));
        chunks.extend_from_slice(&chunk(11, 0, &[]));
        let pkt = packet(&chunks);
        let unknown = RawChunk {
            chunk_type: ChunkType(t),
            flags: 0xa5,
            value: Bytes::from_static(&[1, 2, 3, 4, 5]),
        };
        assert_eq!(
            decode_ok(&pkt).chunks,
            vec![
                Chunk::Unknown(unknown.clone()),
                Chunk::Shutdown(Shutdown { cum_tsn_ack: 1234 }),
                Chunk::CookieAck(CookieAck),
            ],
            "type {t:#04x}"
        );
        // The raw iterator sees the same chunk, and can give it back for an
        // Unrecognized Chunk Type cause (RFC 9260 §3.3.10.6).
        let first = raw_chunks(&pkt).next().expect("a chunk").expect("framed");
        assert_eq!(first, unknown);
        assert_eq!(first.to_wire(), [t, 0xa5, 0, 9, 1, 2, 3, 4, 5]);
    }
}

// RFC 9260 §3.2.1: an unrecognized parameter is kept whole and the ones after it decode.
#[test]
fn unknown_init_parameters_are_kept_raw_and_the_rest_still_decodes() {
    let mut params = tlv(0x3fff, &[9, 9, 9]);
    params.push(0);
    params.extend_from_slice(&tlv(0x8000, &[])); // ECN Capable
    let pkt = packet(&chunk(1, 0, &init_value(&params)));
    let Chunk::Init(Init { params, .. }) = &decode_ok(&pkt).chunks[0] else {
        panic!("not an INIT");
    };
    assert_eq!(
        params,
        &vec![
            Param::Unknown {
                param_type: ParamType(0x3fff),
                value: Bytes::from_static(&[9, 9, 9]),
            },
            Param::EcnCapable,
        ]
    );
}
