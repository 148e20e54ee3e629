//! FORWARD-TSN (RFC 3758 §3.2) and I-FORWARD-TSN (RFC 8260 §2.3.1).
//!
//! ```text
//! FORWARD-TSN (type 192):
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                      New Cumulative TSN                       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |         Stream-1              |       Stream Sequence-1       |  (repeated)
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//!
//! I-FORWARD-TSN (type 194):
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                      New Cumulative TSN                       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |       Stream Identifier       |          Reserved           |U|  (repeated)
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                       Message Identifier                      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use bytes::Bytes;

use super::{ChunkBody, ChunkType};
use crate::codec::{Reader, put_u16, put_u32};
use crate::error::{DecodeError, Result};

/// One (stream, SSN) entry of a FORWARD-TSN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ForwardTsnStream {
    /// Stream identifier.
    pub stream_id: u16,
    /// Largest stream sequence number skipped on it.
    pub ssn: u16,
}

/// A FORWARD-TSN chunk: the receiver moves its cumulative TSN to `new_cum_tsn`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ForwardTsn {
    /// New cumulative TSN.
    pub new_cum_tsn: u32,
    /// Ordered streams with skipped messages.
    pub streams: Vec<ForwardTsnStream>,
}

/// One entry of an I-FORWARD-TSN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IForwardTsnStream {
    /// Stream identifier.
    pub stream_id: u16,
    /// U bit: the skipped message was unordered.
    pub unordered: bool,
    /// Largest message identifier skipped.
    pub mid: u32,
}

/// An I-FORWARD-TSN chunk.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IForwardTsn {
    /// New cumulative TSN.
    pub new_cum_tsn: u32,
    /// Streams with skipped messages.
    pub streams: Vec<IForwardTsnStream>,
}

fn entries(r: &Reader<'_>, what: &'static str, size: usize) -> Result<usize> {
    if !r.remaining().is_multiple_of(size) {
        return Err(DecodeError::Inconsistent {
            what,
            detail: "length is not the fixed part plus whole stream entries",
        });
    }
    Ok(r.remaining() / size)
}

impl ChunkBody for ForwardTsn {
    const TYPE: ChunkType = ChunkType::FORWARD_TSN;
    const NAME: &'static str = "FORWARD-TSN chunk";

    fn decode(_flags: u8, value: &Bytes) -> Result<Self> {
        let mut r = Reader::new(value, Self::NAME);
        let new_cum_tsn = r.u32()?;
        let n = entries(&r, Self::NAME, 4)?;
        let mut streams = Vec::with_capacity(n);
        for _ in 0..n {
            streams.push(ForwardTsnStream {
                stream_id: r.u16()?,
                ssn: r.u16()?,
            });
        }
        Ok(Self {
            new_cum_tsn,
            streams,
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) {
        put_u32(out, self.new_cum_tsn);
        for s in &self.streams {
            put_u16(out, s.stream_id);
            put_u16(out, s.ssn);
        }
    }
}

impl ChunkBody for IForwardTsn {
    const TYPE: ChunkType = ChunkType::I_FORWARD_TSN;
    const NAME: &'static str = "I-FORWARD-TSN chunk";

    fn decode(_flags: u8, value: &Bytes) -> Result<Self> {
        let mut r = Reader::new(value, Self::NAME);
        let new_cum_tsn = r.u32()?;
        let n = entries(&r, Self::NAME, 8)?;
        let mut streams = Vec::with_capacity(n);
        for _ in 0..n {
            let stream_id = r.u16()?;
            let flags = r.u16()?;
            streams.push(IForwardTsnStream {
                stream_id,
                unordered: flags & 1 != 0,
                mid: r.u32()?,
            });
        }
        Ok(Self {
            new_cum_tsn,
            streams,
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) {
        put_u32(out, self.new_cum_tsn);
        for s in &self.streams {
            put_u16(out, s.stream_id);
            put_u16(out, u16::from(s.unordered));
            put_u32(out, s.mid);
        }
    }
}
