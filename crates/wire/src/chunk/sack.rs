//! SACK chunk (RFC 9260 §3.3.4).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |   Type = 3    |  Chunk Flags  |         Chunk Length          |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                      Cumulative TSN Ack                       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          Advertised Receiver Window Credit (a_rwnd)           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Number of Gap Ack Blocks = N  |  Number of Duplicate TSNs = M |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |    Gap Ack Block #1 Start     |     Gap Ack Block #1 End      |
//! /                              ...                              /
//! |                        Duplicate TSN 1                        |
//! /                              ...                              /
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use bytes::Bytes;

use super::{ChunkBody, ChunkType};
use crate::codec::{Reader, put_u16, put_u32};
use crate::error::{DecodeError, Result};

/// A gap ack block: TSNs `cum_tsn_ack + start ..= cum_tsn_ack + end` were received.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GapAckBlock {
    /// Offset of the first TSN of the block from the cumulative TSN ack.
    pub start: u16,
    /// Offset of the last TSN of the block from the cumulative TSN ack.
    pub end: u16,
}

/// A SACK chunk. Offsets are not validated here (start <= end, ordering): that is the
/// core's job, which must treat bad blocks as a protocol violation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sack {
    /// Highest TSN received without a gap.
    pub cum_tsn_ack: u32,
    /// Advertised receiver window credit.
    pub a_rwnd: u32,
    /// Blocks received above the cumulative ack.
    pub gap_blocks: Vec<GapAckBlock>,
    /// TSNs received more than once since the last SACK.
    pub dup_tsns: Vec<u32>,
}

/// `n` gap ack blocks into `v` (emptied first, its capacity kept).
pub(super) fn read_blocks(r: &mut Reader<'_>, n: usize, v: &mut Vec<GapAckBlock>) -> Result<()> {
    v.clear();
    v.reserve(n);
    for _ in 0..n {
        v.push(GapAckBlock {
            start: r.u16()?,
            end: r.u16()?,
        });
    }
    Ok(())
}

/// `n` TSNs into `v` (emptied first, its capacity kept).
pub(super) fn read_tsns(r: &mut Reader<'_>, n: usize, v: &mut Vec<u32>) -> Result<()> {
    v.clear();
    v.reserve(n);
    for _ in 0..n {
        v.push(r.u32()?);
    }
    Ok(())
}

pub(super) fn put_blocks(out: &mut Vec<u8>, blocks: &[GapAckBlock]) {
    for b in blocks {
        put_u16(out, b.start);
        put_u16(out, b.end);
    }
}

/// A list length as its 16-bit count field; lists longer than a chunk can carry are clamped.
pub(super) fn count(n: usize) -> u16 {
    u16::try_from(n).unwrap_or(u16::MAX)
}

pub(super) fn check_counts(what: &'static str, r: &Reader<'_>, words: usize) -> Result<()> {
    if r.remaining() != words * 4 {
        return Err(DecodeError::Inconsistent {
            what,
            detail: "block and TSN counts do not match the chunk length",
        });
    }
    Ok(())
}

impl Sack {
    /// Decodes a SACK's value into `out`, reusing its lists' capacity (a receiver of many
    /// SACKs allocates nothing once they have grown). On an error `out` holds part of it.
    pub fn decode_into(value: &Bytes, out: &mut Self) -> Result<()> {
        let mut r = Reader::new(value, Self::NAME);
        out.cum_tsn_ack = r.u32()?;
        out.a_rwnd = r.u32()?;
        let n_gaps = r.u16()? as usize;
        let n_dups = r.u16()? as usize;
        // Checked before allocating, so a lying count cannot reserve memory.
        check_counts(Self::NAME, &r, n_gaps + n_dups)?;
        read_blocks(&mut r, n_gaps, &mut out.gap_blocks)?;
        read_tsns(&mut r, n_dups, &mut out.dup_tsns)
    }
}

impl ChunkBody for Sack {
    const TYPE: ChunkType = ChunkType::SACK;
    const NAME: &'static str = "SACK chunk";

    fn decode(_flags: u8, value: &Bytes) -> Result<Self> {
        let mut s = Self::default();
        Self::decode_into(value, &mut s)?;
        Ok(s)
    }

    fn encode_value(&self, out: &mut Vec<u8>) {
        put_u32(out, self.cum_tsn_ack);
        put_u32(out, self.a_rwnd);
        put_u16(out, count(self.gap_blocks.len()));
        put_u16(out, count(self.dup_tsns.len()));
        put_blocks(out, &self.gap_blocks);
        self.dup_tsns.iter().for_each(|t| put_u32(out, *t));
    }
}
