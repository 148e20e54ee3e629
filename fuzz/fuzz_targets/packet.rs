//! Fuzzes the SCTP packet parser of `braid-wire`.
//!
//! Properties checked on every input:
//! - `Packet::decode_unverified`, `Packet::decode` and `raw_chunks` never panic;
//! - `decode` succeeds exactly when the checksum verifies and `decode_unverified` succeeds,
//!   and then both give the same packet;
//! - `decode_unverified` agrees with decoding the `raw_chunks` one by one;
//! - a decoded packet re-encodes without error, and decoding that encoding (checksum
//!   included) gives back the same packet: `decode(encode(p)) == p`.

#![no_main]

use braid_wire::{Chunk, Packet, raw_chunks, verify_checksum};
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|raw_input: &[u8]| {
    // An odd first byte asks for the rest with its CRC32c fixed up, so that mutated packets
    // also get past the checksum and exercise `decode` (otherwise only the seeds do).
    let fixed;
    let data: &[u8] = match raw_input.split_first() {
        Some((sel, rest)) if sel & 1 == 1 => {
            let mut v = rest.to_vec();
            braid_wire::packet::write_checksum(&mut v);
            fixed = v;
            &fixed
        }
        Some((_, rest)) => rest,
        None => raw_input,
    };
    let input = Bytes::copy_from_slice(data);

    // Frame by frame, as the core does for the unknown-chunk rules.
    let mut chunk_by_chunk: Option<Vec<Chunk>> = Some(Vec::new());
    let mut frames = 0usize;
    for raw in raw_chunks(&input) {
        frames += 1;
        assert!(
            frames <= data.len() / 4 + 1,
            "raw_chunks yields more frames than fit"
        );
        match raw {
            Ok(raw) => {
                assert!(
                    raw.value.len() + 4 <= data.len(),
                    "chunk value longer than input"
                );
                match Chunk::decode(raw) {
                    Ok(c) => {
                        if let Some(v) = chunk_by_chunk.as_mut() {
                            v.push(c);
                        }
                    }
                    Err(_) => chunk_by_chunk = None,
                }
            }
            Err(_) => chunk_by_chunk = None,
        }
    }

    let unverified = Packet::decode_unverified(&input);
    let verified = Packet::decode(&input);
    let checksum_ok = verify_checksum(&input).is_ok();

    match (&unverified, &verified) {
        (Ok(u), Ok(v)) => {
            assert!(checksum_ok);
            assert_eq!(u, v, "decode and decode_unverified disagree");
        }
        (Ok(_), Err(_)) => assert!(
            !checksum_ok,
            "decode failed on a packet whose checksum verifies"
        ),
        (Err(_), Ok(_)) => panic!("decode succeeded where decode_unverified failed"),
        (Err(_), Err(_)) => {}
    }

    if data.len() >= 12 {
        assert_eq!(
            unverified.as_ref().ok().map(|p| &p.chunks),
            chunk_by_chunk.as_ref(),
            "decode_unverified disagrees with raw_chunks + Chunk::decode"
        );
    }

    let Ok(pkt) = unverified else { return };

    // Round trip: encode, then decode with the checksum verified.
    let mut out = Vec::with_capacity(data.len() + 64);
    pkt.encode(&mut out)
        .unwrap_or_else(|e| panic!("a decoded packet fails to encode: {e}"));
    let wire = Bytes::from(out);
    let back = Packet::decode(&wire).unwrap_or_else(|e| {
        panic!("decode(encode(p)) fails: {e}\n  p = {pkt:?}\n  wire = {wire:02x?}")
    });
    assert_eq!(back, pkt, "decode(encode(p)) != p\n  wire = {wire:02x?}");

    // Encoding is deterministic: the re-decoded packet encodes to the same bytes.
    let again = back.to_vec().expect("re-encodes");
    assert_eq!(
        again.as_slice(),
        &wire[..],
        "encode(decode(encode(p))) != encode(p)"
    );
});
