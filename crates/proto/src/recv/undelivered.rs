//! Which received chunks an NR-SACK may not yet call non-renegable under
//! [`NrSackPolicy::Delivered`](crate::config::NrSackPolicy): ordered chunks above the
//! cumulative TSN whose message has not reached the application (the INET CMT-SCTP model
//! of Dreibholz et al., which NR-acknowledges a message when it is pushed up; NR-SACK draft §4).
//! A message is named by its stream and its SSN (DATA) or MID (I-DATA, RFC 8260 §2.1).

use std::collections::BTreeMap;

use braid_wire::chunk::GapAckBlock;

use crate::serial::tsn_gt;

/// Ordered chunks received above the cumulative TSN whose message is not yet delivered.
#[derive(Debug, Default)]
pub(crate) struct Undelivered {
    /// TSN → (stream, SSN or MID).
    chunks: BTreeMap<u32, (u16, u32)>,
}

impl Undelivered {
    /// An ordered chunk of message `seq` (SSN or MID) of `stream` arrived.
    pub(crate) fn insert(&mut self, tsn: u32, stream: u16, seq: u32) {
        self.chunks.insert(tsn, (stream, seq));
    }

    /// Forgets chunks at or below `cum` and those whose message is gone
    /// (`delivered(stream, seq)`: handed to the application, or no stream waits for it).
    pub(crate) fn prune(&mut self, cum: u32, delivered: impl Fn(u16, u32) -> bool) {
        self.chunks
            .retain(|&tsn, &mut (stream, seq)| tsn_gt(tsn, cum) && !delivered(stream, seq));
    }

    /// `gaps` (offsets from `cum`, sorted, disjoint) without the offsets of undelivered
    /// chunks, at most `max` blocks: every held chunk can split a block, and leaving a block
    /// out only keeps its chunks renegable, while an NR-SACK too large for a packet would
    /// not be sent at all.
    pub(crate) fn subtract(&self, cum: u32, gaps: &[GapAckBlock], max: usize) -> Vec<GapAckBlock> {
        if self.chunks.is_empty() {
            return gaps.iter().take(max).copied().collect();
        }
        let mut held: Vec<u32> = self
            .chunks
            .keys()
            .map(|&t| t.wrapping_sub(cum))
            .filter(|&o| o >= 1 && o <= u32::from(u16::MAX))
            .collect();
        // TSN order wraps at 2^32; offsets from cum do not.
        held.sort_unstable();
        let mut out = Vec::with_capacity(gaps.len());
        let mut i = 0;
        for b in gaps {
            let (mut start, end) = (u32::from(b.start), u32::from(b.end));
            while i < held.len() && held[i] < start {
                i += 1;
            }
            while i < held.len() && held[i] <= end {
                if held[i] > start {
                    out.push(block(start, held[i] - 1));
                }
                start = held[i] + 1;
                i += 1;
            }
            if start <= end {
                out.push(block(start, end));
            }
        }
        out.truncate(max);
        out
    }
}

/// A gap block of offsets that fit (both come from blocks of u16 offsets).
fn block(start: u32, end: u32) -> GapAckBlock {
    GapAckBlock {
        start: u16::try_from(start).unwrap_or(u16::MAX),
        end: u16::try_from(end).unwrap_or(u16::MAX),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(start: u16, end: u16) -> GapAckBlock {
        GapAckBlock { start, end }
    }

    #[test]
    fn undelivered_chunks_are_cut_out_of_the_blocks() {
        let cum = u32::MAX - 1; // offsets cross the TSN wrap
        let mut u = Undelivered::default();
        for off in [2u32, 3, 7] {
            u.insert(cum.wrapping_add(off), 0, off);
        }
        let gaps = [b(2, 4), b(6, 8), b(10, 10)];
        assert_eq!(
            u.subtract(cum, &gaps, 64),
            vec![b(4, 4), b(6, 6), b(8, 8), b(10, 10)]
        );
    }

    #[test]
    fn delivered_and_cumulatively_acked_chunks_are_forgotten() {
        let mut u = Undelivered::default();
        u.insert(10, 0, 5);
        u.insert(11, 1, 9);
        u.insert(12, 1, 10);
        // Stream 1 delivered SSN 9 (next expected 10); TSN 10 is now cumulatively acked.
        u.prune(10, |s, seq| s == 1 && seq < 10);
        assert_eq!(u.subtract(10, &[b(1, 2)], 64), vec![b(1, 1)]);
        // Everything delivered (or no stream waits for it).
        u.prune(10, |_, _| true);
        assert_eq!(u.subtract(10, &[b(1, 2)], 64), vec![b(1, 2)]);
    }

    #[test]
    fn every_other_chunk_held_cannot_grow_the_nr_sack_past_the_cap() {
        // One gap block of 999 chunks, every other one undelivered: 499 pieces uncapped,
        // an NR-SACK of about 2 KB that no 1500-byte packet can carry.
        let mut u = Undelivered::default();
        for off in (3..1000u32).step_by(2) {
            u.insert(100 + off, 1, off);
        }
        let nr = u.subtract(100, &[b(2, 1000)], 64);
        assert_eq!(nr.len(), 64);
        assert_eq!(nr[0], b(2, 2));
        assert!(nr.windows(2).all(|w| w[0].end < w[1].start));
    }
}
