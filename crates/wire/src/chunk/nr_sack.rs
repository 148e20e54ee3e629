//! NR-SACK chunk (type 0x10; draft-tuexen-tsvwg-sctp-multipath, after
//! draft-natarajan-tsvwg-sctp-nrsack): a SACK that also lists non-renegable gap blocks,
//! data the receiver has delivered or will never renege on, so the sender may free it.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Type = 0x10   |  Chunk Flags  |         Chunk Length          |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                      Cumulative TSN Ack                       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          Advertised Receiver Window Credit (a_rwnd)           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Number of Gap Ack Blocks = N  | Number of NR Gap Blocks = M   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Number of Duplicate TSNs = X  |           Reserved            |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! /  Gap Ack Blocks (N), NR Gap Ack Blocks (M), Duplicate TSNs (X) /
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use bytes::Bytes;

use super::sack::{check_counts, count, put_blocks, read_blocks, read_tsns};
use super::{ChunkBody, ChunkType, GapAckBlock};
use crate::codec::{Reader, put_u16, put_u32};
use crate::error::Result;

/// An NR-SACK chunk.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct NrSack {
    /// Highest TSN received without a gap.
    pub cum_tsn_ack: u32,
    /// Advertised receiver window credit.
    pub a_rwnd: u32,
    /// Renegable blocks received above the cumulative ack.
    pub gap_blocks: Vec<GapAckBlock>,
    /// Non-renegable blocks: the sender may drop these TSNs from its buffer at once.
    pub nr_gap_blocks: Vec<GapAckBlock>,
    /// TSNs received more than once since the last SACK.
    pub dup_tsns: Vec<u32>,
}

impl NrSack {
    /// Decodes an NR-SACK's value into `out`, reusing its lists' capacity. On an error
    /// `out` holds part of it.
    pub fn decode_into(value: &Bytes, out: &mut Self) -> Result<()> {
        let mut r = Reader::new(value, Self::NAME);
        out.cum_tsn_ack = r.u32()?;
        out.a_rwnd = r.u32()?;
        let n_gaps = r.u16()? as usize;
        let n_nr = r.u16()? as usize;
        let n_dups = r.u16()? as usize;
        let _reserved = r.u16()?;
        check_counts(Self::NAME, &r, n_gaps + n_nr + n_dups)?;
        read_blocks(&mut r, n_gaps, &mut out.gap_blocks)?;
        read_blocks(&mut r, n_nr, &mut out.nr_gap_blocks)?;
        read_tsns(&mut r, n_dups, &mut out.dup_tsns)
    }
}

impl ChunkBody for NrSack {
    const TYPE: ChunkType = ChunkType::NR_SACK;
    const NAME: &'static str = "NR-SACK chunk";

    fn decode(_flags: u8, value: &Bytes) -> Result<Self> {
        let mut s = Self::default();
        Self::decode_into(value, &mut s)?;
        Ok(s)
    }

    fn encode_value(&self, out: &mut Vec<u8>) {
        put_u32(out, self.cum_tsn_ack);
        put_u32(out, self.a_rwnd);
        put_u16(out, count(self.gap_blocks.len()));
        put_u16(out, count(self.nr_gap_blocks.len()));
        put_u16(out, count(self.dup_tsns.len()));
        put_u16(out, 0);
        put_blocks(out, &self.gap_blocks);
        put_blocks(out, &self.nr_gap_blocks);
        self.dup_tsns.iter().for_each(|t| put_u32(out, *t));
    }
}
