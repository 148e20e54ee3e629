//! ECNE and CWR (RFC 9260 Appendix A).
//!
//! ```text
//! ECNE: | Type = 12 | Flags | Length = 8 |  Lowest TSN Number (32)  |
//! CWR:  | Type = 13 | Flags | Length = 8 |  Lowest TSN Number (32)  |
//! ```

use bytes::Bytes;

use super::{ChunkBody, ChunkType};
use crate::codec::{Reader, put_u32};
use crate::error::Result;

/// ECN-Echo: the receiver saw a congestion-experienced mark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ecne {
    /// Lowest TSN of the marked packet.
    pub lowest_tsn: u32,
}

/// Congestion Window Reduced: the sender reacted to an ECNE.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Cwr {
    /// Lowest TSN of the ECNE being answered.
    pub lowest_tsn: u32,
}

macro_rules! tsn_chunk {
    ($ty:ident, $code:ident, $name:literal) => {
        impl ChunkBody for $ty {
            const TYPE: ChunkType = ChunkType::$code;
            const NAME: &'static str = $name;

            fn decode(_flags: u8, value: &Bytes) -> Result<Self> {
                let mut r = Reader::new(value, Self::NAME);
                r.expect_len(4)?;
                Ok(Self {
                    lowest_tsn: r.u32()?,
                })
            }

            fn encode_value(&self, out: &mut Vec<u8>) {
                put_u32(out, self.lowest_tsn);
            }
        }
    };
}

tsn_chunk!(Ecne, ECNE, "ECNE chunk");
tsn_chunk!(Cwr, CWR, "CWR chunk");
