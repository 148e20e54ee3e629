//! DATA chunk (RFC 9260 §3.3.1), with the I bit of RFC 7053.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |   Type = 0    |  Res  |I|U|B|E|           Length              |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                              TSN                              |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |      Stream Identifier S      |   Stream Sequence Number n    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                  Payload Protocol Identifier                  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! /                 User Data (seq n of Stream S)                 /
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use bytes::Bytes;

use super::{ChunkBody, ChunkType};
use crate::codec::{Reader, put_u16, put_u32};
use crate::error::Result;

/// Flag bits shared by DATA and I-DATA.
pub(crate) mod flags {
    /// RFC 7053: SACK immediately.
    pub(crate) const I: u8 = 0x08;
    /// Unordered.
    pub(crate) const U: u8 = 0x04;
    /// Beginning fragment.
    pub(crate) const B: u8 = 0x02;
    /// Ending fragment.
    pub(crate) const E: u8 = 0x01;

    pub(crate) fn pack(immediate: bool, unordered: bool, beginning: bool, ending: bool) -> u8 {
        (u8::from(immediate) * I)
            | (u8::from(unordered) * U)
            | (u8::from(beginning) * B)
            | (u8::from(ending) * E)
    }
}

/// A DATA chunk: one fragment (or all) of a user message.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Data {
    /// Transmission sequence number.
    pub tsn: u32,
    /// Stream identifier.
    pub stream_id: u16,
    /// Stream sequence number (ignored for unordered messages).
    pub ssn: u16,
    /// Payload protocol identifier, opaque to SCTP.
    pub ppid: u32,
    /// U bit: deliver without regard to the stream sequence.
    pub unordered: bool,
    /// B bit: first fragment of the message.
    pub beginning: bool,
    /// E bit: last fragment of the message.
    pub ending: bool,
    /// I bit (RFC 7053): the receiver should SACK without delay.
    pub immediate: bool,
    /// The user data (may be empty on the wire; the core answers "No User Data").
    pub user_data: Bytes,
}

/// Bytes of a DATA chunk before its user data (header included).
pub const DATA_HEADER_LEN: usize = 16;

impl ChunkBody for Data {
    const TYPE: ChunkType = ChunkType::DATA;
    const NAME: &'static str = "DATA chunk";

    fn decode(f: u8, value: &Bytes) -> Result<Self> {
        let mut r = Reader::new(value, Self::NAME);
        Ok(Self {
            tsn: r.u32()?,
            stream_id: r.u16()?,
            ssn: r.u16()?,
            ppid: r.u32()?,
            immediate: f & flags::I != 0,
            unordered: f & flags::U != 0,
            beginning: f & flags::B != 0,
            ending: f & flags::E != 0,
            user_data: r.rest(),
        })
    }

    fn flags(&self) -> u8 {
        flags::pack(self.immediate, self.unordered, self.beginning, self.ending)
    }

    fn encode_value(&self, out: &mut Vec<u8>) {
        put_u32(out, self.tsn);
        put_u16(out, self.stream_id);
        put_u16(out, self.ssn);
        put_u32(out, self.ppid);
        out.extend_from_slice(&self.user_data);
    }
}
