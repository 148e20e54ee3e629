//! COOKIE-ECHO (RFC 9260 §3.3.11) and COOKIE-ACK (§3.3.12).
//!
//! ```text
//! COOKIE-ECHO: | Type = 10 | Flags | Length | Cookie (opaque, variable) ... |
//! COOKIE-ACK:  | Type = 11 | Flags | Length = 4 |
//! ```

use bytes::Bytes;

use super::{ChunkBody, ChunkType};
use crate::codec::Reader;
use crate::error::Result;

/// A COOKIE-ECHO chunk: the State Cookie of the INIT-ACK, returned as is.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CookieEcho {
    /// The cookie bytes.
    pub cookie: Bytes,
}

/// A COOKIE-ACK chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CookieAck;

impl ChunkBody for CookieEcho {
    const TYPE: ChunkType = ChunkType::COOKIE_ECHO;
    const NAME: &'static str = "COOKIE-ECHO chunk";

    fn decode(_flags: u8, value: &Bytes) -> Result<Self> {
        Ok(Self {
            cookie: value.clone(),
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.cookie);
    }
}

impl ChunkBody for CookieAck {
    const TYPE: ChunkType = ChunkType::COOKIE_ACK;
    const NAME: &'static str = "COOKIE-ACK chunk";

    fn decode(_flags: u8, value: &Bytes) -> Result<Self> {
        Reader::new(value, Self::NAME).expect_len(0)?;
        Ok(Self)
    }

    fn encode_value(&self, _out: &mut Vec<u8>) {}
}
