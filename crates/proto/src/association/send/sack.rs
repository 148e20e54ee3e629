//! SACK processing as a pipeline (RFC 9260 §6.2.1, §7.2; CMT, Iyengar et al. §3; NR-SACK,
//! Natarajan et al.):
//!
//! 1. the cumulative part ([`Association::ack_cumulative`]),
//! 2. newly acknowledged and reneged gap blocks ([`Association::ack_gap_blocks`]) and the
//!    non-renegable blocks ([`Association::free_nr_acked`]),
//! 3. miss indications by the configured rule (`loss`: RFC 9260 §7.2.4, SFR, DAC),
//! 4. recovery decisions (`recovery`: fast retransmit, fast recovery),
//! 5. the peer's window, then per path: errors and reactivation, the congestion window
//!    (`cc`, with CUC under CMT) and the T3-rtx timer.

use std::time::Duration;

use braid_wire::chunk::GapAckBlock;

use super::loss::SackDigest;
use super::loss::{DetectCx, LossDetector, MissCount, RttBounds};
use super::ranges::{block_offsets, offsets_to_tsns, ranges_minus, ranges_union, tsn_offsets};
use super::sent::{ChunkState, Sent, check_tally};
use super::spurious::SackSignals;
use crate::WindowCause;
use crate::association::Association;
use crate::cc::{AckSample, Controller, Ctx};
use crate::event::Event;
use crate::path::{PathId, PathState, Recovery};
use crate::serial::{tsn_ge, tsn_gt, tsn_lt};
use crate::time::Instant;
use crate::timer::Timer;

/// What a SACK acknowledged, per path, for the later steps (kept between SACKs to reuse
/// its vectors).
#[derive(Debug, Default)]
pub(crate) struct Acked {
    /// Each path's flight size before the SACK (cwnd grows only if it was used, §7.2.1).
    pub(crate) flight_before: Vec<usize>,
    /// Bytes newly acknowledged per path.
    pub(crate) on: Vec<usize>,
    /// Paths (bit per id) with an acknowledged chunk first sent there since they last
    /// failed (see [`Sent::fresh_ack_bit`]).
    pub(crate) fresh: u64,
    /// The cumulative ack moved.
    pub(crate) cum_advanced: bool,
    /// Paths whose acknowledged bytes count for errors and the window (path monitoring).
    pub(crate) credited: Vec<bool>,
    /// Per path: the smallest RTT of a first transmission this SACK acknowledged, and the
    /// highest send sequence it acknowledged (HyStart++ rounds, RFC 9406 §4.2).
    pub(crate) samples: Vec<(Option<Duration>, Option<u64>)>,
    /// The SACK reported so many gap blocks that it may have left higher ones out (a
    /// peer's SACK fits one packet): chunks above its last block are of unknown fate.
    pub(crate) maybe_truncated: bool,
    /// CUC: each path's pseudo-cumulative ack before and after the SACK (empty unless CMT).
    pseudo_before: Vec<Option<u32>>,
    pseudo_after: Vec<Option<u32>>,
    /// The gap blocks' digest for the loss rules, valid if `digested`.
    digest: SackDigest,
    digested: bool,
    /// What the previous SACK acknowledged above today's cumulative ack, as offsets.
    before: Vec<(usize, usize)>,
    /// Miss candidates, and the chunks found lost (queue index, path).
    candidates: Vec<usize>,
    lost: Vec<(usize, PathId)>,
}

/// A SACK with at least this many gap blocks may have been cut to fit its packet (64 was
/// braid's own limit before SACKs took the MTU, and is where other stacks stop).
const TRUNCATION_HINT_BLOCKS: usize = 64;

/// Chunks one SACK may put back in flight by omitting them (renege, RFC 9260 §6.2.1).
pub(crate) const MAX_RENEGED_PER_SACK: usize = 64;

impl Acked {
    /// Notes a newly acknowledged chunk for the controller's RTT and round tracking.
    fn sample(&mut self, now: Instant, s: &Sent) {
        let e = &mut self.samples[s.path.0 as usize];
        if s.tx_count == 1 && s.sent_at <= now {
            let rtt = now.saturating_duration_since(s.sent_at);
            e.0 = Some(e.0.map_or(rtt, |r| r.min(rtt)));
        }
        e.1 = Some(e.1.map_or(s.seq, |q| q.max(s.seq)));
    }
}

/// What the peer acknowledged, from a SACK, NR-SACK, LS-SACK or SHUTDOWN, and what the
/// packet it came in says.
pub(crate) struct AckReport<'a> {
    /// The path the packet arrived on.
    pub(crate) from: PathId,
    /// Cumulative TSN ack.
    pub(crate) cum: u32,
    /// Advertised receiver window.
    pub(crate) a_rwnd: u32,
    /// Gap ack blocks (an NR-SACK's two lists together).
    pub(crate) gaps: &'a [GapAckBlock],
    /// Non-renegable gap ack blocks.
    pub(crate) nr_gaps: &'a [GapAckBlock],
    /// What it tells spurious retransmission detection (Ladha et al. Fig. 6).
    pub(crate) signals: SackSignals,
}

impl Association {
    /// Processes the acknowledgement part of a SACK or NR-SACK. `nr_gaps` are the
    /// non-renegable blocks: those chunks leave the send buffer at once.
    pub(crate) fn on_sack(&mut self, now: Instant, r: AckReport<'_>) {
        let AckReport {
            from,
            cum,
            a_rwnd,
            gaps,
            nr_gaps,
            signals,
        } = r;
        if tsn_lt(cum, self.tx.cum_ack) {
            return; // Stale SACK, out of order (§6.2.1 D i).
        }
        if tsn_ge(cum, self.tx.next_tsn) {
            self.protocol_violation(now, "SACK acknowledges a TSN that was never sent");
            return;
        }
        self.sack_since_t3 = true;
        self.paths[from.0 as usize].sack_since_t3 = true;
        let cmt = self.multipath_active();
        let mut ack = std::mem::take(&mut self.ack_scratch);
        ack.flight_before.clear();
        ack.flight_before
            .extend(self.paths.iter().map(|p| p.flight_size));
        ack.on.clear();
        ack.on.resize(self.paths.len(), 0);
        ack.samples.clear();
        ack.samples.resize(self.paths.len(), (None, None));
        ack.fresh = 0;
        ack.cum_advanced = cum != self.tx.cum_ack;
        ack.maybe_truncated = gaps.len() >= TRUNCATION_HINT_BLOCKS;
        self.adapt_send_run(gaps.len());
        // CUC: each path's pseudo-cumulative ack before the SACK.
        ack.pseudo_before.clear();
        ack.pseudo_after.clear();
        if cmt {
            self.pseudo_cumacks(&mut ack.pseudo_before);
        }
        self.ack_cumulative(now, cum, &mut ack);
        ack.digested = !gaps.is_empty() || self.tx.tally.gap_acked > 0;
        if ack.digested {
            self.ack_gap_blocks(now, gaps, &mut ack, cmt);
        }
        if !nr_gaps.is_empty() {
            // braid's own NR-SACKs repeat every gap block as non-renegable: reuse the offsets.
            let same = (ack.digested && nr_gaps == gaps).then_some(&ack.digest.blocks[..]);
            self.free_nr_acked(nr_gaps, same, &mut ack.before);
        }
        let mut lost = std::mem::take(&mut ack.lost);
        lost.clear();
        if ack.digested {
            let m = self.multipath_cfg().filter(|_| cmt);
            let ordered = self.rack_on() && self.rack.order.tracking();
            let mut misses = MissCount {
                digest: &ack.digest,
                cum_advanced: ack.cum_advanced,
                sfr: m.is_some_and(|c| c.sfr),
                dac: m.is_some_and(|c| c.dac).then_some(self.dac_count),
                threshold: self.cfg.dupthresh,
                candidates: &mut ack.candidates,
                order: ordered.then_some(&mut self.rack.order),
            };
            misses.detect(
                &mut DetectCx {
                    now,
                    tx: &mut self.tx,
                    paths: &self.paths,
                    timers: &mut self.timers,
                },
                &mut lost,
            );
        }
        if self.rack_on() {
            // RFC 8985 §6.2: time-based detection, with the three misses as a fallback.
            self.rack_detect(now, &mut lost);
        } else {
            self.rack.order.forget();
        }
        if !lost.is_empty() {
            self.fast_retransmit(now, &lost, cmt);
        }
        if self.rack_on() {
            // RFC 8985 §7.4: did a probe repair a loss?
            self.rack_probe_outcome(now, cmt);
        }
        if cmt {
            self.pseudo_cumacks(&mut ack.pseudo_after);
        }
        let flight = self.tx.flight_total(&self.paths);
        self.tx.peer_rwnd = (a_rwnd as usize).saturating_sub(flight);
        // Only the window-cover rule asks whether the peer autotunes.
        if self.window_cover_on() {
            self.tx.peer_window_max = self.tx.peer_window_max.max(self.peer_window());
        }
        let reactivated = self.update_paths(now, &mut ack, cum);
        if self.rack_on() {
            // After T3 moved: the PTO must fire before it (RFC 8985 §7.2).
            self.rack_after_sack(now, &ack.on);
        }
        if self.paths.iter().any(|p| !p.spurious.is_empty()) {
            // Ladha et al. Fig. 6 step 3: every SACK may decide an open episode; the response
            // replaces what this SACK did to the window.
            self.spurious_detect(now, cum, ack.on.iter().sum(), signals);
        }
        if ack.on.iter().any(|&b| b > 0) {
            self.error_count = 0;
        }
        if reactivated {
            self.retarget_stranded();
        }
        self.reset_burst();
        if self.features.pr_sctp {
            self.advance_peer_ack_point();
        }
        // The windows moved: the send buffer follows them (autotuning) before it is judged.
        let limit = self.grow_send_limit();
        if self.tx.want_writable && self.tx.buffered_bytes() < limit {
            self.tx.want_writable = false;
            self.events.push_back(Event::Writable);
        }
        ack.lost = lost;
        self.ack_scratch = ack;
        check_tally(&self.tx.outstanding, &self.tx.tally, &self.paths);
        self.try_progress_shutdown(now);
    }

    /// Step 1: chunks up to the cumulative ack leave the queue (§6.2.1 D).
    fn ack_cumulative(&mut self, now: Instant, cum: u32, ack: &mut Acked) {
        let rack = self.rack_on();
        while self.tx.cum_ack != cum {
            let Some(s) = self.tx.outstanding.pop_front() else {
                break;
            };
            self.tx.cum_ack = s.tsn;
            if s.state == ChunkState::Abandoned {
                continue;
            }
            let len = s.data.len();
            if !s.state.is_gap_acked() {
                ack.on[s.path.0 as usize] += len;
                ack.sample(now, &s);
                ack.fresh |= s.fresh_ack_bit(&self.paths);
                self.rtt_sample(now, &s);
                if rack {
                    self.rack_delivered(now, &s);
                }
            }
            self.tx.tally.leave(&s, &mut self.paths);
            if s.state == ChunkState::NrAcked {
                continue; // Already freed by an NR-SACK.
            }
            s.leave_buffer(&mut self.paths);
            self.tx.outstanding_bytes -= len;
            self.stats.bytes_acked += len as u64;
            self.tx.release(s.stream, len, &mut self.events);
        }
        if tsn_lt(self.tx.adv_peer_ack, self.tx.cum_ack) {
            self.tx.adv_peer_ack = self.tx.cum_ack;
        }
    }

    /// Step 2: chunks in a gap block for the first time are acknowledged; chunks the
    /// previous SACK acknowledged and this one does not were reneged (§6.2.1) and go again.
    /// What the loss rules need to know of the SACK goes to `ack.digest`.
    fn ack_gap_blocks(&mut self, now: Instant, gaps: &[GapAckBlock], ack: &mut Acked, cmt: bool) {
        let sfr = cmt && self.multipath_cfg().is_some_and(|c| c.sfr);
        let rack = self.rack_on();
        let mut d = std::mem::take(&mut ack.digest);
        d.reset(if sfr { self.paths.len() } else { 0 });
        // The blocks as offsets from the cumulative ack (outstanding[off - 1]), sorted and
        // merged (a hostile peer may send them in any order), clipped to what was sent.
        let n = self.tx.outstanding.len();
        let cum = self.tx.cum_ack;
        let mut blocks = std::mem::take(&mut d.blocks);
        block_offsets(gaps, n, &mut blocks);
        // What the previous SACK acknowledged above today's cumulative ack.
        let mut before = std::mem::take(&mut ack.before);
        tsn_offsets(&self.tx.acked_ranges, cum, n, &mut before);
        if !self.tx.renege_deferred.is_empty() {
            let mut deferred = Vec::new();
            tsn_offsets(&self.tx.renege_deferred, cum, n, &mut deferred);
            before = ranges_union(&before, &deferred);
        }
        // Newly acknowledged: in a block now, not in the previous SACK's (O(new), not
        // O(window): under CMT most of the window is gap-acked for a while).
        for off in ranges_minus(&blocks, &before) {
            let tx = &mut self.tx;
            let s = &mut tx.outstanding[off - 1];
            if !matches!(s.state, ChunkState::InFlight | ChunkState::Marked(_)) {
                continue;
            }
            d.newly_acked(s);
            ack.on[s.path.0 as usize] += s.data.len();
            ack.sample(now, s);
            ack.fresh |= s.fresh_ack_bit(&self.paths);
            if rack {
                // The path it was last sent on: a marked chunk's `path` is where it waits.
                let b = RttBounds::of(&self.paths[s.sent_on.0 as usize]);
                self.rack.on_delivered(now, s, b);
            }
            s.set_state(ChunkState::GapAcked, &mut self.paths, &mut tx.tally);
            let (tsn, path, tx_count) = (s.tsn, s.path, s.tx_count);
            self.rtt_sample_raw(now, tsn, path, tx_count);
        }
        // A peer alternating a block over the window with one that omits it would make every
        // SACK cost the window twice (renege, then acknowledge again): at most
        // MAX_RENEGED_PER_SACK chunks go back in flight per SACK, the rest stay acknowledged
        // until a later SACK still omits them.
        let mut reneged = 0;
        let mut deferred_from = None;
        for off in ranges_minus(&before, &blocks) {
            let tx = &mut self.tx;
            let s = &mut tx.outstanding[off - 1];
            if s.state == ChunkState::GapAcked {
                if reneged == MAX_RENEGED_PER_SACK {
                    deferred_from = Some(off);
                    break;
                }
                reneged += 1;
                // §6.2.1 D iv: possibly missing (reneged, or a SACK cut to fit its packet):
                // one miss indication, and T3-rtx runs for its path, not a retransmission.
                // In flight where it was last sent (it may wait elsewhere for a resend).
                s.unmark(&mut self.paths, &mut tx.tally);
                self.rack.order.on_reneged(s.sent_on, s.xmit, s.seq);
                s.misses = s.misses.saturating_add(1);
                let path = s.sent_on;
                if !self.timers.is_running(Timer::T3(path)) {
                    let rto = self.paths[path.0 as usize].rtt.rto();
                    self.timers.set(Timer::T3(path), Some(now + rto));
                }
            }
        }
        if let Some(&(_, e)) = blocks.last() {
            d.highest_acked = Some(self.tx.outstanding[e - 1].tsn);
        }
        offsets_to_tsns(&blocks, cum, &mut self.tx.acked_ranges);
        match deferred_from {
            None => self.tx.renege_deferred.clear(),
            Some(from) => {
                // What this SACK omitted from `from` on stays acknowledged for now.
                let kept: Vec<(usize, usize)> = before
                    .iter()
                    .filter(|r| r.1 >= from)
                    .map(|&(lo, hi)| (lo.max(from), hi))
                    .collect();
                offsets_to_tsns(&kept, cum, &mut self.tx.renege_deferred);
            }
        }
        d.blocks = blocks;
        ack.digest = d;
        ack.before = before;
    }

    /// Step 2, NR blocks: the receiver will never renege on these chunks, so they leave the
    /// send buffer now instead of at the cumulative ack (Natarajan et al., NR-SACK).
    /// `offsets`: the blocks as offsets if the caller has them; `before`: scratch.
    fn free_nr_acked(
        &mut self,
        nr_gaps: &[GapAckBlock],
        offsets: Option<&[(usize, usize)]>,
        before: &mut Vec<(usize, usize)>,
    ) {
        let n = self.tx.outstanding.len();
        let cum = self.tx.cum_ack;
        let mut own = Vec::new();
        let blocks = match offsets {
            Some(o) => o,
            None => {
                // A peer's NR blocks that differ from its gap blocks (not braid's own).
                block_offsets(nr_gaps, n, &mut own);
                &own[..]
            }
        };
        tsn_offsets(&self.tx.nr_acked_ranges, cum, n, before);
        // Only what this NR-SACK adds (non-renegable blocks never shrink).
        for off in ranges_minus(blocks, before) {
            let tx = &mut self.tx;
            let s = &mut tx.outstanding[off - 1];
            if s.state != ChunkState::GapAcked {
                continue;
            }
            s.set_state(ChunkState::NrAcked, &mut self.paths, &mut tx.tally);
            let len = s.data.len();
            s.leave_buffer(&mut self.paths);
            tx.outstanding_bytes -= len;
            self.stats.bytes_acked += len as u64;
            let stream = s.stream;
            // The payload is not needed any more: free it now.
            s.data = s.data.slice(0..0);
            tx.release(stream, len, &mut self.events);
        }
        offsets_to_tsns(blocks, cum, &mut self.tx.nr_acked_ranges);
    }

    /// Step 5, per path: errors and reactivation, the window, T3-rtx. `ack.pseudo_*` hold
    /// the paths' pseudo-cumacks before and after the SACK under CMT (empty otherwise).
    /// Returns whether a path came back.
    fn update_paths(&mut self, now: Instant, ack: &mut Acked, cum: u32) -> bool {
        let cmt = !ack.pseudo_after.is_empty();
        // The coupled controllers see every path as it was before the updates.
        self.refresh_cc_views();
        let views = std::mem::take(&mut self.cc_scratch);
        let reactivated = self.credit_paths(now, ack);
        for i in 0..self.paths.len() {
            // CUC: under CMT a path's own pseudo-cumack decides, not the association's.
            let advanced = if cmt {
                ack.pseudo_before[i] != ack.pseudo_after[i] && ack.pseudo_before[i].is_some()
            } else {
                ack.cum_advanced
            };
            if let (rtt, Some(seq)) = ack.samples[i] {
                let p = &mut self.paths[i];
                p.cc.on_sack(&AckSample {
                    now,
                    rtt,
                    srtt: p.rtt.srtt(),
                    acked_seq: seq,
                    next_seq: self.tx.next_seq,
                });
            }
            if ack.credited[i] {
                let ctx = Ctx {
                    paths: &views,
                    me: i,
                };
                let lowest = ack.pseudo_after.get(i).copied().flatten();
                let before = self.window_of(PathId(i as u16));
                self.grow_window(i, &ctx, ack, advanced, cum, lowest, cmt);
                self.trace_window(now, PathId(i as u16), before, WindowCause::Ack);
            }
            // Whether the pacer or a run held the window is asked again at the next poll.
            self.paths[i].window_held = false;
            let pending = cmt && ack.pseudo_after[i].is_some();
            // Under CMT, while SACKs may be truncated, a chunk sent more than an RTO ago can be
            // acked only now because earlier SACKs had no room to report it: that is no sign
            // the path moves (R3 means its earliest send), and restarting T3 on each one kept
            // a path's flight of chunks no SACK reported waiting for a timer that never came
            // (two 500 Mbit/s paths at 50/100 ms crawled at 0.3 Mbit/s for 15 s).
            let rto = self.paths[i].rtt.rto();
            let fresh_ack =
                !cmt || !ack.maybe_truncated || ack.samples[i].0.is_none_or(|rtt| rtt < rto);
            self.restart_t3(now, i, advanced && ack.on[i] > 0 && fresh_ack, pending);
        }
        self.cc_scratch = views;
        reactivated
    }

    /// Step 5, path monitoring: RFC 9260 §8.2 clears a path's errors when data last sent
    /// there is acked; a failed path is revived only by data sent since it failed (RFC 7829
    /// §5.1), not by late acks of what it carried before. Returns the paths whose acked
    /// bytes count (`ack.credited`) and whether one came back.
    fn credit_paths(&mut self, now: Instant, ack: &mut Acked) -> bool {
        ack.credited.clear();
        ack.credited.resize(self.paths.len(), false);
        let mut reactivated = false;
        for i in 0..self.paths.len() {
            let p = &mut self.paths[i];
            let revives = p.state == PathState::Active || (i < 64 && ack.fresh & (1 << i) != 0);
            if ack.on[i] == 0 || !revives {
                continue;
            }
            ack.credited[i] = true;
            p.error_count = 0;
            if p.state != PathState::Active && p.confirmed {
                reactivated = true;
                self.set_path_state(now, PathId(i as u16), PathState::Active);
            }
        }
        reactivated
    }

    /// Step 5, congestion control of a credited path: per-path fast recovery ends once the
    /// path's data up to its exit point is in; otherwise the window grows when the
    /// cumulative ack (or, with CUC, the path's own pseudo-cumack) moved.
    #[allow(clippy::too_many_arguments)]
    fn grow_window(
        &mut self,
        i: usize,
        ctx: &Ctx<'_>,
        ack: &Acked,
        advanced: bool,
        cum: u32,
        lowest: Option<u32>,
        cmt: bool,
    ) {
        let cuc = cmt && self.multipath_cfg().is_some_and(|c| c.cuc);
        let p = &mut self.paths[i];
        // Recovery ends once the path's data up to its exit point is in.
        let passed = |exit: u32| {
            if cmt {
                lowest.is_none_or(|lo| tsn_gt(lo, exit))
            } else {
                tsn_ge(cum, exit)
            }
        };
        match p.recovery {
            Recovery::Fast { exit } => {
                if passed(exit) {
                    p.recovery = Recovery::Open;
                }
            }
            Recovery::Open | Recovery::AfterTimeout { .. } => {
                if let Recovery::AfterTimeout { recover } = p.recovery
                    && passed(recover)
                {
                    p.recovery = Recovery::Open;
                }
                if (cuc && advanced) || (!cuc && ack.cum_advanced) {
                    // A window the pacer or a send run kept from filling was in use.
                    let used = if p.window_held {
                        ack.flight_before[i].max(p.cc.window())
                    } else {
                        ack.flight_before[i]
                    };
                    p.cc.on_ack(ctx, ack.on[i], used);
                }
            }
        }
    }

    /// Step 5, T3-rtx of path `i` (§6.3.2): stopped when nothing is outstanding there
    /// (R2), restarted when its earliest outstanding TSN was acknowledged (R3). `pending`:
    /// under CMT the pseudo-cumack says chunks of the path still wait for an ack.
    fn restart_t3(&mut self, now: Instant, i: usize, earliest_acked: bool, pending: bool) {
        let p = &mut self.paths[i];
        // An LS-SCTP probe copy is not in the flight size but is timed by T3 all the same.
        let pending = pending || p.psn.probe.is_some();
        if p.flight_size == 0 && !pending {
            self.timers.stop(Timer::T3(p.id));
            p.cc.on_all_acked();
        } else if earliest_acked {
            self.timers.set(Timer::T3(p.id), Some(now + p.rtt.rto()));
        }
    }

    fn rtt_sample(&mut self, now: Instant, s: &Sent) {
        self.rtt_sample_raw(now, s.tsn, s.path, s.tx_count);
    }

    /// One RTT measurement per round trip, from the chunk timing it (RFC 9260 §6.3.1).
    fn rtt_sample_raw(&mut self, now: Instant, tsn: u32, path: PathId, tx_count: u16) {
        let p = &mut self.paths[path.0 as usize];
        if let Some((probe, sent)) = p.rtt_probe {
            if probe == tsn {
                p.rtt_probe = None;
                if tx_count == 1 {
                    let r = now - sent;
                    p.rtt.on_sample(r);
                    self.bufs.note_rtt(r);
                }
            } else if tsn_gt(tsn, probe) {
                // The probe itself was lost or retransmitted: take no sample this round.
                p.rtt_probe = None;
            }
        }
    }
}
