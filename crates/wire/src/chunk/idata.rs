//! I-DATA chunk (RFC 8260 §2.1): DATA with a message identifier, so fragments of
//! different messages can interleave.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |   Type = 64   |  Res  |I|U|B|E|       Length = Variable       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                              TSN                              |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |        Stream Identifier      |           Reserved            |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                      Message Identifier                       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |    Payload Protocol Identifier / Fragment Sequence Number     |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! /                           User Data                           /
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use bytes::Bytes;

use super::data::flags;
use super::{ChunkBody, ChunkType};
use crate::codec::{Reader, put_u16, put_u32};
use crate::error::Result;

/// An I-DATA chunk.
///
/// The fourth word is the PPID on the first fragment (B bit set, FSN implicitly 0) and the
/// fragment sequence number on the others (RFC 8260 §2.1); `ppid` and `fsn` mirror that.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IData {
    /// Transmission sequence number.
    pub tsn: u32,
    /// Stream identifier.
    pub stream_id: u16,
    /// Message identifier.
    pub mid: u32,
    /// Payload protocol identifier (meaningful when `beginning`; 0 otherwise).
    pub ppid: u32,
    /// Fragment sequence number (0 when `beginning`).
    pub fsn: u32,
    /// U bit.
    pub unordered: bool,
    /// B bit.
    pub beginning: bool,
    /// E bit.
    pub ending: bool,
    /// I bit (RFC 7053).
    pub immediate: bool,
    /// The user data.
    pub user_data: Bytes,
}

/// Bytes of an I-DATA chunk before its user data (header included).
pub const I_DATA_HEADER_LEN: usize = 20;

impl ChunkBody for IData {
    const TYPE: ChunkType = ChunkType::I_DATA;
    const NAME: &'static str = "I-DATA chunk";

    fn decode(f: u8, value: &Bytes) -> Result<Self> {
        let mut r = Reader::new(value, Self::NAME);
        let tsn = r.u32()?;
        let stream_id = r.u16()?;
        let _reserved = r.u16()?;
        let mid = r.u32()?;
        let word = r.u32()?;
        let beginning = f & flags::B != 0;
        let (ppid, fsn) = if beginning { (word, 0) } else { (0, word) };
        Ok(Self {
            tsn,
            stream_id,
            mid,
            ppid,
            fsn,
            immediate: f & flags::I != 0,
            unordered: f & flags::U != 0,
            beginning,
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
        put_u16(out, 0);
        put_u32(out, self.mid);
        put_u32(out, if self.beginning { self.ppid } else { self.fsn });
        out.extend_from_slice(&self.user_data);
    }
}
