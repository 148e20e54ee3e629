//! CRC32c, the SCTP checksum (RFC 9260 §6.8, Appendix A).
//!
//! Checked three ways: against the published vectors of RFC 3720 Appendix B.4 (the iSCSI
//! CRC32c examples, whose byte order is the order on the wire, i.e. `crc.to_le_bytes()`,
//! the same order SCTP carries its checksum in), against the independent `crc` crate on
//! arbitrary input, and end to end on packets: a correct checksum verifies and any
//! single-bit error is caught.
//!
//! The property test honours `BRAID_PROPTEST_CASES` (default 512), like `roundtrip.rs`.

use braid_wire::crc32c::{crc32c, crc32c_append, sctp_checksum};
use braid_wire::packet::{verify_checksum, write_checksum};
use braid_wire::{DecodeError, Packet, sample};
use bytes::Bytes;
use proptest::prelude::*;

/// The reference implementation: `crc`'s catalogued CRC-32/ISCSI (poly 0x1EDC6F41, reflected,
/// init and xor-out 0xFFFFFFFF).
const REFERENCE: crc::Crc<u32> = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI);

fn cases() -> u32 {
    std::env::var("BRAID_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512)
}

/// Asserts that the CRC32c of `data`, written in wire order, is `wire`.
fn assert_wire_crc(data: &[u8], wire: [u8; 4]) {
    let crc = crc32c(data);
    assert_eq!(crc.to_le_bytes(), wire, "crc32c = {crc:#010x}");
    assert_eq!(REFERENCE.checksum(data), crc, "reference disagrees");
}

// RFC 3720 Appendix B.4: "32 bytes of zeroes".
#[test]
fn rfc3720_32_bytes_of_zeroes() {
    assert_wire_crc(&[0x00; 32], [0xaa, 0x36, 0x91, 0x8a]);
    assert_eq!(crc32c(&[0x00; 32]), 0x8a91_36aa);
}

// RFC 3720 Appendix B.4: "32 bytes of ones".
#[test]
fn rfc3720_32_bytes_of_ones() {
    assert_wire_crc(&[0xff; 32], [0x43, 0xab, 0xa8, 0x62]);
}

// RFC 3720 Appendix B.4: "32 bytes of incrementing 00..1f".
#[test]
fn rfc3720_32_incrementing_bytes() {
    let data: Vec<u8> = (0..32).collect();
    assert_wire_crc(&data, [0x4e, 0x79, 0xdd, 0x46]);
}

// RFC 3720 Appendix B.4: "32 bytes of decrementing 1f..00".
#[test]
fn rfc3720_32_decrementing_bytes() {
    let data: Vec<u8> = (0..32).rev().collect();
    assert_wire_crc(&data, [0x5c, 0xdb, 0x3f, 0x11]);
}

// RFC 3720 Appendix B.4: "An iSCSI - SCSI Read (10) Command PDU".
#[test]
fn rfc3720_iscsi_read10_command_pdu() {
    #[rustfmt::skip]
    let pdu: [u8; 48] = [
        0x01, 0xc0, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00,
        0x14, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x04, 0x00,
        0x00, 0x00, 0x00, 0x14,
        0x00, 0x00, 0x00, 0x18,
        0x28, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00,
        0x02, 0x00, 0x00, 0x00,
        0x00, 0x00, 0x00, 0x00,
    ];
    assert_wire_crc(&pdu, [0x56, 0x3a, 0x96, 0xd9]);
}

// The CRC catalogue's check value for CRC-32/ISCSI.
#[test]
fn check_value_123456789() {
    assert_eq!(crc32c(b"123456789"), 0xe306_9283);
    assert_eq!(REFERENCE.checksum(b"123456789"), 0xe306_9283);
}

#[test]
fn empty_input_and_empty_append_are_identities() {
    assert_eq!(crc32c(&[]), 0);
    let crc = crc32c(b"braid");
    assert_eq!(crc32c_append(crc, &[]), crc);
    assert_eq!(crc32c_append(0, b"braid"), crc);
}

// RFC 9260 §6.8: the checksum is computed with the checksum field itself taken as zero.
#[test]
fn sctp_checksum_ignores_the_carried_checksum_field() {
    let (_, pkt) = &sample::every_chunk_type()[0];
    let mut wire = pkt.to_vec().expect("sample packet encodes");
    let carried = u32::from_le_bytes([wire[8], wire[9], wire[10], wire[11]]);
    assert_eq!(sctp_checksum(&wire), carried);
    wire[8..12].fill(0);
    assert_eq!(crc32c(&wire), carried);
    wire[8..12].copy_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    assert_eq!(sctp_checksum(&wire), carried);
}

// RFC 9260 §6.8: a correctly summed packet verifies; every single-bit error is detected
// (CRC32c detects all 1-bit errors), whether it hits the header, a chunk or the checksum.
#[test]
fn every_single_bit_flip_of_every_sample_packet_is_a_bad_checksum() {
    for (label, pkt) in sample::every_chunk_type() {
        let mut wire = pkt.to_vec().expect("sample packet encodes");
        wire[8..12].fill(0);
        write_checksum(&mut wire);
        verify_checksum(&wire).unwrap_or_else(|e| panic!("{label}: {e}"));
        assert_eq!(
            Packet::decode(&Bytes::from(wire.clone())).as_ref(),
            Ok(&pkt),
            "{label}"
        );
        for bit in 0..wire.len() * 8 {
            let mut bad = wire.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            match Packet::decode(&Bytes::from(bad)) {
                Err(DecodeError::BadChecksum { carried, computed }) => {
                    assert_ne!(carried, computed, "{label}: bit {bit}");
                }
                other => panic!("{label}: flipping bit {bit} gave {other:?}"),
            }
        }
    }
}

#[test]
fn write_checksum_leaves_short_buffers_alone() {
    let mut short = vec![0xab; 11];
    write_checksum(&mut short);
    assert_eq!(short, vec![0xab; 11]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    // The hardware-accelerated CRC agrees with an independent table implementation.
    #[test]
    fn crc32c_matches_the_crc_crate(data in proptest::collection::vec(any::<u8>(), 0..=16 * 1024)) {
        prop_assert_eq!(crc32c(&data), REFERENCE.checksum(&data));
    }

    // Summing in two pieces gives the same CRC as summing at once.
    #[test]
    fn crc32c_append_at_any_split_matches_the_crc_crate(
        data in proptest::collection::vec(any::<u8>(), 0..=16 * 1024),
        split in any::<prop::sample::Index>(),
    ) {
        let at = split.index(data.len() + 1);
        let (head, tail) = data.split_at(at);
        prop_assert_eq!(crc32c_append(crc32c(head), tail), REFERENCE.checksum(&data));
    }

    // write_checksum then verify_checksum always succeeds, whatever the bytes.
    #[test]
    fn write_then_verify_checksum(mut data in proptest::collection::vec(any::<u8>(), 12..=2048)) {
        write_checksum(&mut data);
        prop_assert_eq!(verify_checksum(&data), Ok(()));
    }
}
