//! SHUTDOWN (RFC 9260 §3.3.8), SHUTDOWN-ACK (§3.3.9) and SHUTDOWN-COMPLETE (§3.3.13).
//!
//! ```text
//! SHUTDOWN:           | Type = 7 | Flags | Length = 8 |  Cumulative TSN Ack (32)  |
//! SHUTDOWN-ACK:       | Type = 8 | Flags | Length = 4 |
//! SHUTDOWN-COMPLETE:  | Type = 14 | Reserved |T| Length = 4 |
//! ```

use bytes::Bytes;

use super::abort::T_BIT;
use super::{ChunkBody, ChunkType};
use crate::codec::{Reader, put_u32};
use crate::error::Result;

/// A SHUTDOWN chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shutdown {
    /// Last TSN received in sequence.
    pub cum_tsn_ack: u32,
}

/// A SHUTDOWN-ACK chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShutdownAck;

/// A SHUTDOWN-COMPLETE chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ShutdownComplete {
    /// T bit: the verification tag is reflected (RFC 9260 §8.5.1).
    pub t_bit: bool,
}

impl ChunkBody for Shutdown {
    const TYPE: ChunkType = ChunkType::SHUTDOWN;
    const NAME: &'static str = "SHUTDOWN chunk";

    fn decode(_flags: u8, value: &Bytes) -> Result<Self> {
        let mut r = Reader::new(value, Self::NAME);
        r.expect_len(4)?;
        Ok(Self {
            cum_tsn_ack: r.u32()?,
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) {
        put_u32(out, self.cum_tsn_ack);
    }
}

impl ChunkBody for ShutdownAck {
    const TYPE: ChunkType = ChunkType::SHUTDOWN_ACK;
    const NAME: &'static str = "SHUTDOWN-ACK chunk";

    fn decode(_flags: u8, value: &Bytes) -> Result<Self> {
        Reader::new(value, Self::NAME).expect_len(0)?;
        Ok(Self)
    }

    fn encode_value(&self, _out: &mut Vec<u8>) {}
}

impl ChunkBody for ShutdownComplete {
    const TYPE: ChunkType = ChunkType::SHUTDOWN_COMPLETE;
    const NAME: &'static str = "SHUTDOWN-COMPLETE chunk";

    fn decode(flags: u8, value: &Bytes) -> Result<Self> {
        Reader::new(value, Self::NAME).expect_len(0)?;
        Ok(Self {
            t_bit: flags & T_BIT != 0,
        })
    }

    fn flags(&self) -> u8 {
        u8::from(self.t_bit) * T_BIT
    }

    fn encode_value(&self, _out: &mut Vec<u8>) {}
}
