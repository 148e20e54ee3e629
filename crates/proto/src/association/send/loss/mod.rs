//! Loss detection: which outstanding chunks a SACK reports missing, and when a chunk counts
//! as lost (RFC 9260 §7.2.4: three miss indications; with `LossDetection::Rack` also by
//! time, RACK-TLP, RFC 8985, in [`rack`], which keeps the three misses as a fallback).
//!
//! The rule has three parts, each in its own place:
//! * which chunks may get a miss — RFC 9260: every unacknowledged TSN below the highest TSN
//!   newly acknowledged (here); under CMT with SFR only chunks below the highest TSN newly
//!   acknowledged *on their own path* ([`sfr`]);
//! * how many misses one SACK adds — one, or under CMT with DAC the number of packets the
//!   SACK covers when they were all sent on the chunk's path after it ([`dac`]);
//! * the threshold — three, and a chunk is fast-retransmitted once, or again when its
//!   retransmission is reported missing by chunks sent after it on its path.

pub(super) mod dac;
pub(crate) mod rack;
pub(super) mod sfr;

use super::ranges::ranges_minus;
use super::sent::{ChunkState, Sent};
use crate::association::Association;
use crate::path::{PathId, Recovery};
use crate::serial::tsn_lt;

/// Miss indications that make a chunk lost (RFC 9260 §7.2.4).
const MISS_THRESHOLD: u8 = 3;

/// What the loss rules need to know of one SACK's gap blocks.
#[derive(Debug, Default)]
pub(crate) struct SackDigest {
    /// Highest TSN newly acknowledged (HTNA, RFC 9260 §7.2.4 step 1).
    pub(crate) htna: Option<u32>,
    /// Highest TSN acknowledged at all.
    pub(crate) highest_acked: Option<u32>,
    /// HTNA per path (SFR, Iyengar et al. §3.1); empty without SFR.
    pub(crate) htna_on: Vec<Option<u32>>,
    /// Lowest TSN newly acknowledged (DAC).
    pub(crate) newly_lowest: Option<u32>,
    /// The one path every newly acknowledged chunk was sent on: `None` before the first,
    /// `Some(None)` once two differ (DAC).
    pub(crate) newly_path: Option<Option<PathId>>,
    /// The gap blocks as offsets from the cumulative ack, sorted and merged.
    pub(crate) blocks: Vec<(usize, usize)>,
    /// Per path, the latest transmission (`Sent::xmit`) newly acknowledged by a gap block;
    /// empty until one is (it tells a retransmission lost again, see `miss_indications`).
    pub(crate) xmit_on: Vec<u64>,
}

impl SackDigest {
    /// Empties the digest for a SACK over `sfr_paths` paths (0: SFR off), keeping the
    /// vectors' capacity.
    pub(crate) fn reset(&mut self, sfr_paths: usize) {
        self.htna = None;
        self.highest_acked = None;
        self.htna_on.clear();
        self.htna_on.resize(sfr_paths, None);
        self.newly_lowest = None;
        self.newly_path = None;
        self.blocks.clear();
        self.xmit_on.clear();
    }

    /// `s` is newly acknowledged by a gap block (called in TSN order).
    pub(crate) fn newly_acked(&mut self, s: &Sent) {
        self.htna = Some(s.tsn);
        self.newly_lowest.get_or_insert(s.tsn);
        self.newly_path = match self.newly_path {
            None => Some(Some(s.path)),
            Some(Some(p)) if p == s.path => Some(Some(p)),
            Some(_) => Some(None),
        };
        if let Some(h) = self.htna_on.get_mut(s.path.0 as usize) {
            *h = Some(s.tsn);
        }
        let on = s.sent_on.0 as usize;
        if self.xmit_on.len() <= on {
            self.xmit_on.resize(on + 1, 0);
        }
        self.xmit_on[on] = self.xmit_on[on].max(s.xmit + 1);
    }
}

impl Association {
    /// Adds this SACK's miss indications and appends the chunks that reached the threshold
    /// (queue index, path) to `lost`, in TSN order; `candidates` is scratch.
    pub(crate) fn miss_indications(
        &mut self,
        d: &SackDigest,
        cum_advanced: bool,
        cmt: bool,
        candidates: &mut Vec<usize>,
        lost: &mut Vec<(usize, PathId)>,
    ) {
        let sfr = cmt && self.multipath_cfg().is_some_and(|c| c.sfr);
        let dac = cmt && self.multipath_cfg().is_some_and(|c| c.dac);
        // §7.2.4 (1): below the highest TSN newly acked (HTNA); in fast recovery a SACK that
        // moves the cumulative ack counts every hole below the highest TSN acked.
        let in_recovery = self
            .paths
            .iter()
            .any(|p| matches!(p.recovery, Recovery::Fast { .. }));
        let limit = if cum_advanced && in_recovery {
            d.highest_acked
        } else {
            d.htna
        };
        let Some(limit) = limit else { return };
        let n = self.tx.outstanding.len();
        candidates.clear();
        if sfr {
            self.sfr_candidates(&d.htna_on, candidates);
        } else {
            // Only the holes between the blocks can be missing.
            let limit_off = limit.wrapping_sub(self.tx.cum_ack) as usize;
            candidates.extend(ranges_minus(&[(1, limit_off.min(n))], &d.blocks).map(|o| o - 1));
        }
        for &i in candidates.iter() {
            let s = &mut self.tx.outstanding[i];
            if !tsn_lt(s.tsn, limit) {
                break;
            }
            if s.state != ChunkState::InFlight {
                continue;
            }
            if sfr && !sfr::reports_missing(&d.htna_on, s) {
                continue;
            }
            // A retransmission is missing only if a chunk sent after it on its path arrived:
            // its TSN is older than what was sent there before it, so TSN order says nothing.
            let resent = s.tx_count > 1;
            if resent
                && d.xmit_on
                    .get(s.sent_on.0 as usize)
                    .is_none_or(|&x| x <= s.xmit + 1)
            {
                continue;
            }
            let inc = if dac {
                dac::misses(self.dac_count, d, s)
            } else {
                1
            };
            s.misses = s.misses.saturating_add(inc);
            // Once per chunk (RFC 9260 §7.2.4), or again when its retransmission is lost by
            // the same send-order evidence (as RACK finds lost retransmissions, RFC 8985 §6.2)
            // instead of T3 after an RTO of the whole association's stall.
            if s.misses >= MISS_THRESHOLD && (!s.fast_retransmitted || resent) {
                lost.push((i, s.path));
            }
        }
    }
}
