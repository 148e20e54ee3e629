//! INIT (RFC 9260 §3.3.2) and INIT-ACK (§3.3.3): the same fixed part, then parameters.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Type = 1/2   |  Chunk Flags  |      Chunk Length             |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                         Initiate Tag                          |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |           Advertised Receiver Window Credit (a_rwnd)          |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Number of Outbound Streams   |  Number of Inbound Streams    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                          Initial TSN                          |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! /              Optional/Variable-Length Parameters              /
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use bytes::Bytes;

use super::{ChunkBody, ChunkType};
use crate::codec::{Reader, put_u16, put_u32};
use crate::error::Result;
use crate::param::{self, Param};

/// INIT (`ACK = false`) or INIT-ACK (`ACK = true`).
///
/// Parameters are kept in order, unknown ones included, so the core can apply RFC 9260
/// §3.2.1 and check mandatory ones (zero tags and stream counts are the core's to reject).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InitChunk<const ACK: bool> {
    /// The sender's verification tag for this association.
    pub initiate_tag: u32,
    /// Advertised receiver window credit, in bytes.
    pub a_rwnd: u32,
    /// Number of outbound streams the sender wants.
    pub outbound_streams: u16,
    /// Maximum number of inbound streams the sender allows.
    pub inbound_streams: u16,
    /// The first TSN the sender will use.
    pub initial_tsn: u32,
    /// Optional and variable-length parameters.
    pub params: Vec<Param>,
}

/// INIT chunk.
pub type Init = InitChunk<false>;
/// INIT-ACK chunk.
pub type InitAck = InitChunk<true>;

impl<const ACK: bool> InitChunk<ACK> {
    /// The State Cookie parameter, if present (INIT-ACK).
    pub fn state_cookie(&self) -> Option<&Bytes> {
        self.params.iter().find_map(|p| match p {
            Param::StateCookie(c) => Some(c),
            _ => None,
        })
    }
}

impl<const ACK: bool> ChunkBody for InitChunk<ACK> {
    const TYPE: ChunkType = if ACK {
        ChunkType::INIT_ACK
    } else {
        ChunkType::INIT
    };
    const NAME: &'static str = if ACK { "INIT-ACK chunk" } else { "INIT chunk" };

    fn decode(_flags: u8, value: &Bytes) -> Result<Self> {
        let mut r = Reader::new(value, Self::NAME);
        Ok(Self {
            initiate_tag: r.u32()?,
            a_rwnd: r.u32()?,
            outbound_streams: r.u16()?,
            inbound_streams: r.u16()?,
            initial_tsn: r.u32()?,
            params: param::decode_list(&mut r)?,
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) {
        put_u32(out, self.initiate_tag);
        put_u32(out, self.a_rwnd);
        put_u16(out, self.outbound_streams);
        put_u16(out, self.inbound_streams);
        put_u32(out, self.initial_tsn);
        param::encode_list(&self.params, out);
    }
}
