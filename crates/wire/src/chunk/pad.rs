//! PAD chunk (RFC 4820 §3): fills a packet to a given size, e.g. for PLPMTUD probes
//! (HEARTBEAT + PAD, RFC 8899 §4.1).
//!
//! ```text
//! | Type = 0x84 | Flags | Length | Padding Data (ignored by the receiver) ... |
//! ```

use bytes::Bytes;

use super::{ChunkBody, ChunkType};
use crate::error::Result;

/// A PAD chunk.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pad {
    /// Padding data; sent as zeros, ignored on receipt.
    pub padding: Bytes,
}

impl Pad {
    /// A PAD chunk whose whole encoding (header included) is `total` bytes (at least 4).
    pub fn with_total_len(total: usize) -> Self {
        Self {
            padding: Bytes::from(vec![0; total.saturating_sub(4)]),
        }
    }
}

impl ChunkBody for Pad {
    const TYPE: ChunkType = ChunkType::PAD;
    const NAME: &'static str = "PAD chunk";

    fn decode(_flags: u8, value: &Bytes) -> Result<Self> {
        Ok(Self {
            padding: value.clone(),
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.padding);
    }
}
