//! Loss detection: which outstanding chunks a SACK reports missing, and when a chunk counts
//! as lost. The seam is [`LossDetector`]; two detectors implement it:
//!
//! * [`MissCount`], RFC 9260 §7.2.4's three miss indications (with SFR and DAC as its CMT
//!   rules), which always runs (its state is each chunk's miss count, in `Sent`);
//! * [`rack::Rack`], RACK-TLP (RFC 8985): loss by time, its reorder timer and tail loss
//!   probes, owning every path's state; on when `LossDetection` says (`Auto`: one path).
//!
//! The three-miss rule has three parts, each in its own place:
//! * which chunks may get a miss — RFC 9260: every unacknowledged TSN below the highest TSN
//!   newly acknowledged (here); under CMT with SFR only chunks below the highest TSN newly
//!   acknowledged *on their own path* ([`sfr`]);
//! * how many misses one SACK adds — one, or under CMT with DAC the number of packets the
//!   SACK covers when they were all sent on the chunk's path after it ([`dac`]);
//! * the threshold — three, and a chunk is fast-retransmitted once, or again when its
//!   retransmission is reported missing by chunks sent after it on its path.

pub(super) mod dac;
pub(crate) mod rack;
pub(crate) mod send_order;
pub(super) mod sfr;

use std::time::Duration;

use super::SendQueue;
use super::ranges::ranges_minus;
use super::sent::{ChunkState, Sent};
use crate::path::{Path, PathId, Recovery};
use crate::serial::tsn_lt;
use crate::time::Instant;
use crate::timer::Timers;

/// What a detector works on: the send queue (its chunks carry their own miss counts), the
/// paths as they are after the SACK's acks, and the timers (RACK's reorder timer).
pub(crate) struct DetectCx<'a> {
    pub(crate) now: Instant,
    pub(crate) tx: &'a mut SendQueue,
    pub(crate) paths: &'a [Path],
    pub(crate) timers: &'a mut Timers,
}

/// A loss detector (the loss-detection seam).
pub(crate) trait LossDetector {
    /// A SACK at `now` newly delivered `s` (cumulatively or in a gap block); `rtt` bounds
    /// the round trip of the path it was last sent on.
    fn on_delivered(&mut self, _now: Instant, _s: &Sent, _rtt: RttBounds) {}
    /// After a SACK's acks: appends the chunks lost now (queue index, path), keeping
    /// `lost` in TSN order without duplicates.
    fn detect(&mut self, cx: &mut DetectCx<'_>, lost: &mut Vec<(usize, PathId)>);
    /// The SACK reported duplicate TSNs (SCTP's DSACK); `cum` is the cumulative ack and
    /// `next` the next TSN to be assigned.
    fn on_duplicates(&mut self, _dups: &[u32], _cum: u32, _next: u32) {}
    /// A loss recovery starts on `path`.
    fn on_recovery_start(&mut self, _path: PathId) {}
    /// T3-rtx expired on `path`.
    fn on_t3(&mut self, _path: PathId) {}
}

/// The round trips a path's estimator allows a delivered chunk.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RttBounds {
    /// Half the shortest verified round trip: a receiver acknowledging chunks it has not
    /// received yet cannot make loss detection believe a shorter one.
    pub(crate) floor: Duration,
    /// SRTT + 4·RTTVAR, the longest plausible round trip (none before a sample).
    pub(crate) upper: Option<Duration>,
}

impl RttBounds {
    /// The bounds of `p`'s estimator.
    pub(crate) fn of(p: &Path) -> Self {
        Self {
            floor: p.rtt.floor(),
            upper: p.rtt.srtt().map(|r| r + 4 * p.rtt.rttvar()),
        }
    }
}

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
    /// empty until one is (it tells a retransmission lost again, see `MissCount::detect`).
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

/// RFC 9260 §7.2.4's three miss indications for one SACK, with SFR and DAC under CMT.
pub(crate) struct MissCount<'a> {
    /// What the SACK's gap blocks said.
    pub(crate) digest: &'a SackDigest,
    /// The SACK moved the cumulative ack.
    pub(crate) cum_advanced: bool,
    /// Split Fast Retransmit (CMT).
    pub(crate) sfr: bool,
    /// Delayed Ack for CMT, with the packets the SACK's flags say it covers.
    pub(crate) dac: Option<u8>,
    /// Miss indications that make a chunk lost (`AssociationConfig::dupthresh`).
    pub(crate) threshold: u8,
    /// Scratch for the candidates.
    pub(crate) candidates: &'a mut Vec<usize>,
    /// RACK's send order, when it holds every chunk in flight: the candidates come from it
    /// (amortised) instead of a walk over every hole below the limit.
    pub(crate) order: Option<&'a mut send_order::SendOrder>,
}

impl LossDetector for MissCount<'_> {
    /// Adds this SACK's miss indications; the chunks that reached the threshold are lost.
    fn detect(&mut self, cx: &mut DetectCx<'_>, lost: &mut Vec<(usize, PathId)>) {
        let d = self.digest;
        // §7.2.4 (1): below the highest TSN newly acked (HTNA); in fast recovery a SACK that
        // moves the cumulative ack counts every hole below the highest TSN acked.
        let in_recovery = cx
            .paths
            .iter()
            .any(|p| matches!(p.recovery, Recovery::Fast { .. }));
        let limit = if self.cum_advanced && in_recovery {
            d.highest_acked
        } else {
            d.htna
        };
        let Some(limit) = limit else { return };
        let n = cx.tx.outstanding.len();
        let candidates = &mut *self.candidates;
        candidates.clear();
        if self.sfr {
            sfr::candidates(cx.tx, cx.paths, &d.htna_on, candidates);
        } else if let Some(order) = self.order.as_deref_mut() {
            let limit_off = limit.wrapping_sub(cx.tx.cum_ack) as usize;
            let paths = cx.paths;
            let floor = |pi: usize| paths.get(pi).map_or(Duration::ZERO, |p| p.rtt.floor());
            let index_limit = limit_off.saturating_sub(1).min(n);
            order.miss_candidates(cx.tx, index_limit, &d.xmit_on, &floor, cx.now, candidates);
        } else {
            // Only the holes between the blocks can be missing.
            let limit_off = limit.wrapping_sub(cx.tx.cum_ack) as usize;
            candidates.extend(ranges_minus(&[(1, limit_off.min(n))], &d.blocks).map(|o| o - 1));
        }
        #[cfg(test)]
        {
            cx.tx.miss_visits += candidates.len() as u64;
        }
        for &i in candidates.iter() {
            let s = &mut cx.tx.outstanding[i];
            if !tsn_lt(s.tsn, limit) {
                break;
            }
            if s.state != ChunkState::InFlight {
                continue;
            }
            if self.sfr && !sfr::reports_missing(&d.htna_on, s) {
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
            // The ack of a chunk sent after it cannot come sooner than a round trip after it
            // left: a peer claiming so would have the window resent on every SACK.
            if resent
                && cx
                    .paths
                    .get(s.sent_on.0 as usize)
                    .is_some_and(|p| cx.now.saturating_duration_since(s.sent_at) < p.rtt.floor())
            {
                continue;
            }
            let inc = match self.dac {
                Some(count) => dac::misses(count, d, s),
                None => 1,
            };
            s.misses = s.misses.saturating_add(inc);
            // Once per chunk (RFC 9260 §7.2.4), or again when its retransmission is lost by
            // the same send-order evidence (as RACK finds lost retransmissions, RFC 8985 §6.2)
            // instead of T3 after an RTO of the whole association's stall.
            if s.misses >= self.threshold && (!s.fast_retransmitted || resent) {
                lost.push((i, s.path));
            }
        }
    }
}
