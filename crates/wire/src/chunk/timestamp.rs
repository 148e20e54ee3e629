//! The TIMESTAMP chunk and the retransmit bit: braid's wire for the Eifel detection of
//! spurious retransmissions in SCTP (Ladha et al., "On Making SCTP Robust to Spurious
//! Retransmissions", Fig. 6; the chunk was first described by Caro et al., ICON 2003).
//!
//! Both are used only when the peer listed them in its Eifel-Supported parameter
//! ([`Param::EifelSupported`](crate::Param::EifelSupported), type 0x80B1) in INIT or
//! INIT-ACK. The chunk's type 0xB3 has high bits `10`, so a peer that does not know it skips
//! it silently (RFC 9260 §3.2). The echo rules are RFC 7323's, per packet:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |   Type = 0xB3 | Chunk Flags=0 |        Length = 12            |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                    Timestamp Value (TSval)                    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 Timestamp Echo Reply (TSecr)                  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! The retransmit bit (variant II of Fig. 6) is bit 4 of the flags of DATA
//! ([`DATA_FLAG_RETRANSMIT`]: set on every retransmission) and of SACK and NR-SACK
//! ([`SACK_FLAG_RETRANSMIT`]: set when the SACK answers a DATA chunk that had it). Bits 0–1 of
//! the SACK flags stay CMT's DAC count.

use bytes::Bytes;

use super::{ChunkBody, ChunkType};
use crate::codec::{Reader, put_u32};
use crate::error::Result;

/// Bytes a TIMESTAMP chunk takes in a packet.
pub const TIMESTAMP_CHUNK_LEN: usize = 12;

/// The retransmit bit in DATA chunk flags (Ladha et al. Fig. 6, rule (a)).
pub const DATA_FLAG_RETRANSMIT: u8 = 0x10;

/// The retransmit bit in SACK and NR-SACK chunk flags (Ladha et al. Fig. 6, rule (b)).
pub const SACK_FLAG_RETRANSMIT: u8 = 0x10;

/// TIMESTAMP chunk (braid's code 0xB3): the sender's clock and the echo of the peer's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timestamp {
    /// The sender's clock when the packet left (RFC 7323 TSval).
    pub value: u32,
    /// The TSval the receiver echoes (RFC 7323 TSecr); 0 before it has one.
    pub echo: u32,
}

impl ChunkBody for Timestamp {
    const TYPE: ChunkType = ChunkType::TIMESTAMP;
    const NAME: &'static str = "TIMESTAMP chunk";

    fn decode(_flags: u8, value: &Bytes) -> Result<Self> {
        let mut r = Reader::new(value, Self::NAME);
        r.expect_len(8)?;
        Ok(Self {
            value: r.u32()?,
            echo: r.u32()?,
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) {
        put_u32(out, self.value);
        put_u32(out, self.echo);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::{Chunk, RawChunk};
    use crate::error::DecodeError;

    #[test]
    fn round_trips_in_twelve_bytes() {
        let t = Timestamp {
            value: 0xdead_beef,
            echo: 7,
        };
        let raw = RawChunk::from_body(&t);
        let mut buf = Vec::new();
        Chunk::Unknown(raw.clone()).encode(&mut buf).unwrap();
        assert_eq!(buf.len(), TIMESTAMP_CHUNK_LEN);
        assert_eq!(&buf[..4], &[0xB3, 0, 0, 12]);
        assert_eq!(raw.decode_as::<Timestamp>(), Some(Ok(t)));
    }

    #[test]
    fn a_standard_peer_skips_it_silently() {
        assert_eq!(
            ChunkType::TIMESTAMP.unrecognized_action(),
            crate::UnrecognizedAction::Skip
        );
    }

    #[test]
    fn wrong_lengths_are_errors() {
        for len in [0usize, 4, 7, 9, 12] {
            let v = Bytes::from(vec![0u8; len]);
            let r = Timestamp::decode(0, &v);
            assert!(
                matches!(r, Err(DecodeError::BadValueLength { .. })),
                "{len}: {r:?}"
            );
        }
    }
}
