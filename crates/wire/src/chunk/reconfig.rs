//! RE-CONFIG chunk (RFC 6525 §3.1): one or two re-configuration request/response
//! parameters (types 13–18).
//!
//! ```text
//! | Type = 130 | Flags | Length | Re-configuration Parameter(s) ... |
//! ```

use bytes::Bytes;

use super::{ChunkBody, ChunkType};
use crate::codec::Reader;
use crate::error::Result;
use crate::param::{self, Param};

/// A RE-CONFIG chunk.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReConfig {
    /// The requests and responses carried.
    pub params: Vec<Param>,
}

impl ChunkBody for ReConfig {
    const TYPE: ChunkType = ChunkType::RE_CONFIG;
    const NAME: &'static str = "RE-CONFIG chunk";

    fn decode(_flags: u8, value: &Bytes) -> Result<Self> {
        let mut r = Reader::new(value, Self::NAME);
        Ok(Self {
            params: param::decode_list(&mut r)?,
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) {
        param::encode_list(&self.params, out);
    }
}
