//! ABORT (RFC 9260 §3.3.7) and ERROR (§3.3.10): a list of error causes.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Type = 6/9   |  Reserved   |T|            Length             |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! /                   zero or more Error Causes                   /
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//! (The T bit exists only in ABORT.)

use bytes::Bytes;

use super::{ChunkBody, ChunkType};
use crate::cause::ErrorCause;
use crate::codec::Reader;
use crate::error::Result;

/// T bit: the verification tag is the sender's own (reflected), RFC 9260 §8.5.1.
pub(crate) const T_BIT: u8 = 0x01;

/// An ABORT chunk.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Abort {
    /// T bit: the packet carries the receiver's tag reflected rather than the peer's.
    pub t_bit: bool,
    /// Why the association is aborted.
    pub causes: Vec<ErrorCause>,
}

/// An ERROR chunk.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ErrorChunk {
    /// The errors reported.
    pub causes: Vec<ErrorCause>,
}

impl ChunkBody for Abort {
    const TYPE: ChunkType = ChunkType::ABORT;
    const NAME: &'static str = "ABORT chunk";

    fn decode(flags: u8, value: &Bytes) -> Result<Self> {
        let mut r = Reader::new(value, Self::NAME);
        Ok(Self {
            t_bit: flags & T_BIT != 0,
            causes: ErrorCause::decode_list(&mut r)?,
        })
    }

    fn flags(&self) -> u8 {
        u8::from(self.t_bit) * T_BIT
    }

    fn encode_value(&self, out: &mut Vec<u8>) {
        ErrorCause::encode_list(&self.causes, out);
    }
}

impl ChunkBody for ErrorChunk {
    const TYPE: ChunkType = ChunkType::ERROR;
    const NAME: &'static str = "ERROR chunk";

    fn decode(_flags: u8, value: &Bytes) -> Result<Self> {
        let mut r = Reader::new(value, Self::NAME);
        Ok(Self {
            causes: ErrorCause::decode_list(&mut r)?,
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) {
        ErrorCause::encode_list(&self.causes, out);
    }
}
