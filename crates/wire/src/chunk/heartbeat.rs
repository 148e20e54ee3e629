//! HEARTBEAT (RFC 9260 §3.3.5) and HEARTBEAT-ACK (§3.3.6).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |   Type = 4/5  | Chunk  Flags  |      Heartbeat Length         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! /          Heartbeat Information TLV (Variable-Length)          /
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! The value is kept as a parameter list: some stacks (pion) send a HEARTBEAT without
//! Heartbeat Info, which the core answers leniently.

use bytes::Bytes;

use super::{ChunkBody, ChunkType};
use crate::codec::Reader;
use crate::error::Result;
use crate::param::{self, Param};

/// HEARTBEAT (`ACK = false`) or HEARTBEAT-ACK (`ACK = true`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeartbeatChunk<const ACK: bool> {
    /// Normally exactly one Heartbeat Info parameter.
    pub params: Vec<Param>,
}

/// HEARTBEAT chunk.
pub type Heartbeat = HeartbeatChunk<false>;
/// HEARTBEAT-ACK chunk.
pub type HeartbeatAck = HeartbeatChunk<true>;

impl<const ACK: bool> HeartbeatChunk<ACK> {
    /// A chunk carrying one Heartbeat Info parameter.
    pub fn with_info(info: Bytes) -> Self {
        Self {
            params: vec![Param::HeartbeatInfo(info)],
        }
    }

    /// The first Heartbeat Info parameter, if any.
    pub fn info(&self) -> Option<&Bytes> {
        self.params.iter().find_map(|p| match p {
            Param::HeartbeatInfo(b) => Some(b),
            _ => None,
        })
    }
}

impl<const ACK: bool> ChunkBody for HeartbeatChunk<ACK> {
    const TYPE: ChunkType = if ACK {
        ChunkType::HEARTBEAT_ACK
    } else {
        ChunkType::HEARTBEAT
    };
    const NAME: &'static str = if ACK {
        "HEARTBEAT-ACK chunk"
    } else {
        "HEARTBEAT chunk"
    };

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
