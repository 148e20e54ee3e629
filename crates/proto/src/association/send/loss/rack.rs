//! RACK-TLP (RFC 8985) adapted to SCTP's TSNs and SACKs, one option of the loss-detection
//! seam (`AssociationConfig::loss_detection = LossDetection::Rack`).
//!
//! The detector ([`Rack`]) keeps every path's state ([`RackState`]): under CMT a chunk can
//! only be judged against chunks sent on the same path (each path has its own RTT), as with
//! SFR. Chunks are
//! ordered by their send time and `Sent::xmit`, a number taken anew at every transmission
//! (RFC 8985's xmit_ts and end_seq).
//!
//! Implemented:
//! * §6.2 step 2 (RACK_update): the most recently sent chunk a SACK delivered (newly
//!   cumulatively or gap acknowledged) sets RACK.xmit_ts, its `xmit` and RACK.rtt; a
//!   retransmission acknowledged sooner than min_RTT after it was sent is skipped (the ack
//!   may be for an earlier copy), and so is one whose first transmission is younger than
//!   SRTT + 4·RTTVAR (braid's addition: SCTP has no timestamps to tell the copies apart).
//! * §6.2 step 3 (reordering): a first transmission delivered below the highest TSN
//!   already delivered on its path (RACK.fack) sets `reordering_seen`.
//! * §6.2 step 4 (reo_wnd): min_RTT/4 times reo_wnd_mult, bounded by SRTT; 0 while the
//!   path is in fast recovery and no reordering was seen. SCTP's duplicate TSN reports
//!   serve as DSACK: the multiplier grows by one per round trip with one, and falls back
//!   to 1 after 16 recoveries without.
//! * §6.2 step 5 (detect_loss): a chunk in flight on a path, sent before RACK.xmit_ts and
//!   below the highest TSN the last SACK acknowledged, is lost once
//!   `sent_at + RACK.rtt + reo_wnd <= now` (the TSN bound is braid's: a SACK truncated to
//!   the blocks that fit in a packet does not report what arrived above them); otherwise the reorder timer
//!   (`Timer::Rack`) is armed for the earliest such deadline and detection runs again then.
//!   The walk goes in send order per path ([`super::send_order`]) and stops at the first chunk
//!   not yet due, so a SACK costs what it newly reports, not the outstanding window.
//!   Lost chunks go through `fast_retransmit`, so recovery, congestion control and Eifel stay
//!   one code path; unlike the three-miss rule, a lost retransmission can be found lost again.
//! * §7.2–§7.3 (TLP): after data is sent or acknowledged on a path with no probe out, the
//!   PTO (`Timer::Tlp`) is 2·SRTT, plus the peer's delayed-SACK time (braid assumes its own
//!   `sack_delay`) when one packet is in flight, and only armed when it fires before T3-rtx.
//!   On expiry one packet goes regardless of cwnd: new data if the peer's window takes it,
//!   else the highest-TSN chunk in flight on the path (`Mark::Probe`); T3-rtx restarts one
//!   RTO after it. One probe per path until a SACK acknowledges data there; none after
//!   T3-rtx until a SACK acknowledges data (RTO recovery).
//! * §7.4 (TLP loss detection): a probe that resent a chunk and whose SACK acknowledges it
//!   without a duplicate report (and not sooner than min_RTT after the probe) repaired a
//!   loss: one cwnd cut and fast recovery, as for a fast retransmit. A loss the probe's
//!   SACK reveals below it is found by RACK and answered the same way.
//!
//! Simplified: duplicate reports are not traced to the path they concern (every path's
//! reo_wnd grows), the probe's outcome is judged by duplicate reports alone (no
//! timestamps), no RACK in T3 (RTO) recovery: T3 still marks everything outstanding on its path. Three
//! miss indications (RFC 9260 §7.2.4) still declare a loss as well (RFC 8985 §7.4 allows
//! DupThresh as a fallback).
//!
//! Known limit (measured, docs/long-fat.md): under CMT, when losses leave more holes than
//! a SACK's blocks can report, chunks that arrived above the last block stay in their
//! path's flight, so the path sends only the one cwnd-exempt retransmission per detection
//! and repairs a hole per round trip. Three misses cannot see a lost retransmission, so a
//! T3 ends that crawl with a Go-Back-N; RACK repairs lost retransmissions, so no T3 fires
//! and the crawl lasts (two paths at 50/100 ms: 247 against 778 Mbit/s).

use std::time::Duration;

use super::super::ranges::tsn_offsets;
use super::super::sent::{ChunkState, Mark, Sent, check_tally};
use super::send_order::{Judge, SendOrder};
use super::{DetectCx, LossDetector, RttBounds};
use crate::association::Association;
use crate::cc::Controller;
use crate::config::LossDetection;
use crate::path::{PathId, PathState, Recovery};
use crate::serial::{tsn_ge, tsn_le, tsn_lt};
use crate::time::Instant;
use crate::timer::Timer;

/// Largest reo_wnd multiplier: 64 · min_RTT/4 is past any SRTT that bounds it.
const MAX_REO_WND_MULT: u32 = 64;

/// RACK-TLP's state of one path (RFC 8985 §5.2).
#[derive(Debug, Clone)]
pub(crate) struct RackState {
    /// RACK.xmit_ts: when the most recently sent delivered chunk was sent.
    xmit_ts: Option<Instant>,
    /// RACK.end_seq: that chunk's `xmit`.
    end_xmit: u64,
    /// RACK.rtt: that chunk's round trip.
    rtt: Duration,
    /// RACK.min_RTT: the smallest round trip of a first transmission.
    min_rtt: Option<Duration>,
    /// RACK.fack: the highest TSN delivered on the path.
    fack: Option<u32>,
    /// RACK.reordering_seen.
    reordering_seen: bool,
    /// A tail loss probe went out and no SACK acknowledged data on the path since (§7.3).
    pub(crate) tlp_out: bool,
    /// T3-rtx expired and no SACK acknowledged data on the path since: RTO recovery, no
    /// probes (§7.2).
    rto_recovery: bool,
    /// The next packet on the path is the probe: one packet of new data ignores cwnd,
    /// Max.Burst and pacing.
    pub(crate) probe_new: bool,
    /// TLP.is_retrans and TLP.end_seq (§7.4): the TSN the probe resent, when, and whether
    /// a duplicate report of it came back (then the original had arrived too).
    probe_rtx: Option<(u32, Instant, bool)>,
    /// RACK.reo_wnd_mult (§6.2 step 4), 0 meaning 1: one more per round trip in which a
    /// SACK reported duplicate TSNs (SCTP's DSACK).
    reo_wnd_mult: u32,
    /// RACK.reo_wnd_persist: recoveries left before the multiplier falls back to 1.
    reo_wnd_persist: u8,
    /// RACK.dsack_round: the multiplier grows again once the cumulative ack passes this.
    dsack_round: Option<u32>,
}

impl Default for RackState {
    fn default() -> Self {
        Self::INITIAL
    }
}

impl RackState {
    /// Before anything was delivered on the path.
    const INITIAL: Self = Self {
        xmit_ts: None,
        end_xmit: 0,
        rtt: Duration::ZERO,
        min_rtt: None,
        fack: None,
        reordering_seen: false,
        tlp_out: false,
        rto_recovery: false,
        probe_new: false,
        probe_rtx: None,
        reo_wnd_mult: 0,
        reo_wnd_persist: 0,
        dsack_round: None,
    };

    /// RACK_update (§6.2 steps 2–3) for one chunk newly delivered by a SACK at `now`; `b`
    /// bounds its path's round trip (a sample below the floor counts as the floor).
    pub(crate) fn on_delivered(&mut self, now: Instant, s: &Sent, b: RttBounds) {
        let rtt_bound = b.upper;
        let raw = now.saturating_duration_since(s.sent_at);
        let rtt = raw.max(b.floor);
        if s.tx_count == 1 {
            self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
            // §6.2 step 3: delivered below what was already delivered: reordering.
            if self.fack.is_some_and(|f| tsn_lt(s.tsn, f)) {
                self.reordering_seen = true;
            }
        }
        if self.fack.is_none_or(|f| tsn_lt(f, s.tsn)) {
            self.fack = Some(s.tsn);
        }
        // §6.2 step 2: the ack of a retransmission sooner than min_RTT is likely the
        // original's. Without timestamps that alone lets one spurious retransmission
        // whose original is acked late (a queue builds) date RACK.xmit_ts to the copy and
        // declare everything sent before it lost: so also the original must be older than
        // the longest plausible round trip, else the ack may be its.
        if s.tx_count > 1 {
            let orig_age = now.saturating_duration_since(s.first_sent_at);
            let ambiguous =
                self.min_rtt.is_none_or(|m| raw < m) || rtt_bound.is_none_or(|b| orig_age <= b);
            if ambiguous {
                return;
            }
        }
        if self.xmit_ts.is_none() || s.xmit > self.end_xmit {
            self.xmit_ts = Some(s.sent_at);
            self.end_xmit = s.xmit;
            self.rtt = rtt;
        }
    }

    /// RACK.reo_wnd (§6.2 step 4): min_RTT/4, at most SRTT; 0 in recovery without
    /// reordering seen.
    fn reo_wnd(&self, srtt: Option<Duration>, in_recovery: bool) -> Duration {
        if in_recovery && !self.reordering_seen {
            return Duration::ZERO;
        }
        let w = self.min_rtt.unwrap_or_default() / 4 * self.reo_wnd_mult.max(1);
        srtt.map_or(w, |s| w.min(s))
    }

    /// A loss recovery starts on the path: after 16 without a duplicate report the
    /// reordering window is back to min_RTT/4 (§6.2 step 4).
    pub(crate) fn on_recovery_start(&mut self) {
        if self.reo_wnd_persist > 0 {
            self.reo_wnd_persist -= 1;
            if self.reo_wnd_persist == 0 {
                self.reo_wnd_mult = 1;
            }
        }
    }
}

/// Vectors `detect` reuses from one SACK to the next.
#[derive(Debug, Default)]
struct RackScratch {
    blocks: Vec<(usize, usize)>,
}

/// RACK-TLP, the time-based loss detector: every path's state, by path id.
#[derive(Debug, Default)]
pub(crate) struct Rack {
    paths: Vec<RackState>,
    scratch: RackScratch,
    /// Every path's chunks in flight in send order (the walk of §6.2 step 5).
    pub(crate) order: SendOrder,
}

impl Rack {
    /// `path`'s state (a path not yet seen has the initial one).
    pub(crate) fn path(&self, path: PathId) -> &RackState {
        static INITIAL: RackState = RackState::INITIAL;
        self.paths.get(path.0 as usize).unwrap_or(&INITIAL)
    }

    /// `path`'s state, to change.
    pub(crate) fn path_mut(&mut self, path: PathId) -> &mut RackState {
        let i = path.0 as usize;
        if self.paths.len() <= i {
            self.paths.resize(i + 1, RackState::INITIAL);
        }
        &mut self.paths[i]
    }

    /// Every one of `n` paths has its state (the association's paths never go away).
    fn ensure_paths(&mut self, n: usize) {
        if self.paths.len() < n {
            self.paths.resize(n, RackState::INITIAL);
        }
    }

    /// The next packet on `path` is a tail loss probe of new data (RFC 8985 §7.3).
    pub(crate) fn probe_new(&self, path: PathId) -> bool {
        self.path(path).probe_new
    }
}

impl LossDetector for Rack {
    fn on_delivered(&mut self, now: Instant, s: &Sent, b: RttBounds) {
        // The path it was last sent on: a marked chunk's `path` is where it waits.
        self.path_mut(s.sent_on).on_delivered(now, s, b);
    }

    /// RACK_detect_loss (§6.2 step 5) over every path, merged into `lost` (sorted, no
    /// duplicates); each path's reorder timer is armed for its earliest pending deadline or
    /// stopped.
    fn detect(&mut self, cx: &mut DetectCx<'_>, lost: &mut Vec<(usize, PathId)>) {
        let npaths = cx.paths.len();
        if (0..npaths).all(|i| self.path(PathId(i as u16)).xmit_ts.is_none()) {
            return;
        }
        let Rack {
            paths: state,
            scratch,
            order,
        } = self;
        if state.len() < npaths {
            state.resize(npaths, RackState::INITIAL);
        }
        let tx = &*cx.tx;
        order.ensure(tx, npaths);
        // Only the holes between the last SACK's blocks are judged: above its highest block
        // a chunk may have arrived and not be reported (a SACK holds as many blocks as fit
        // in a packet), so a later-sent chunk's delivery says nothing of it.
        tsn_offsets(
            &tx.acked_ranges,
            tx.cum_ack,
            tx.outstanding.len(),
            &mut scratch.blocks,
        );
        let limit = scratch.blocks.last().map_or(0, |b| b.1);
        let before = lost.len();
        for (i, (p, r)) in cx.paths.iter().zip(state.iter()).enumerate() {
            let Some(_) = r.xmit_ts else { continue };
            if limit == 0 {
                // No gap block: nothing can be judged (the loss-free case, kept cheap).
                order.drop_acked(PathId(i as u16), tx);
                cx.timers.set(Timer::Rack(PathId(i as u16)), None);
                continue;
            }
            let judge = Judge {
                end_xmit: r.end_xmit,
                wait: r.rtt + r.reo_wnd(p.rtt.srtt(), p.recovery != Recovery::Open),
                limit,
            };
            let path = PathId(i as u16);
            let at = order.walk(path, tx, &judge, cx.now, lost);
            cx.timers.set(Timer::Rack(path), at);
        }
        if lost.len() > before {
            lost.sort_unstable_by_key(|&(i, _)| i);
            lost.dedup_by_key(|&mut (i, _)| i);
        }
    }

    /// SCTP's DSACK (RFC 9260 §6.2 duplicate TSNs): the reordering window grows by
    /// min_RTT/4, once per round trip (§6.2 step 4; the TSN is not traced to a path: every
    /// path's window grows), and a probe's retransmission reported twice repaired nothing
    /// (§7.4).
    fn on_duplicates(&mut self, dups: &[u32], cum: u32, next: u32) {
        for r in &mut self.paths {
            if let Some((tsn, _, dup)) = &mut r.probe_rtx
                && dups.contains(tsn)
            {
                *dup = true;
            }
            if r.dsack_round.is_none_or(|d| tsn_ge(cum, d)) {
                // reo_wnd stops at SRTT anyway; the bound keeps a peer's reports harmless.
                r.reo_wnd_mult = (r.reo_wnd_mult.max(1) + 1).min(MAX_REO_WND_MULT);
                r.reo_wnd_persist = 16;
                r.dsack_round = Some(next);
            }
        }
    }

    fn on_recovery_start(&mut self, path: PathId) {
        self.path_mut(path).on_recovery_start();
    }

    /// RTO recovery takes over from RACK-TLP on the path (§7.2: no probes until a SACK
    /// acknowledges data there).
    fn on_t3(&mut self, path: PathId) {
        let r = self.path_mut(path);
        r.tlp_out = false;
        r.probe_new = false;
        r.rto_recovery = true;
        r.probe_rtx = None;
    }
}

impl Association {
    /// Whether RACK-TLP is the loss-detection rule (`Auto`: unless CMT sends on several
    /// paths, or LS-SCTP sends new data on several).
    pub(crate) fn rack_on(&self) -> bool {
        match self.cfg.loss_detection {
            LossDetection::Rack => true,
            LossDetection::DupThresh => false,
            LossDetection::Auto => !self.multipath_active() || self.ls_single_data_path(),
        }
    }

    /// A SACK at `now` newly delivered `s` (cumulatively or in a gap block).
    /// It counts for the path it was last sent on (a marked chunk's `path` is where it
    /// waits for its retransmission).
    pub(crate) fn rack_delivered(&mut self, now: Instant, s: &Sent) {
        if let Some(p) = self.paths.get(s.sent_on.0 as usize) {
            self.rack.on_delivered(now, s, RttBounds::of(p));
        }
    }

    /// RACK's detection over every path (see [`Rack::detect`]).
    pub(crate) fn rack_detect(&mut self, now: Instant, lost: &mut Vec<(usize, PathId)>) {
        let mut cx = DetectCx {
            now,
            tx: &mut self.tx,
            paths: &self.paths,
            timers: &mut self.timers,
        };
        self.rack.detect(&mut cx, lost);
    }

    /// A SACK reported these duplicate TSNs (RFC 9260 §6.2): RACK hears of them.
    pub(crate) fn rack_note_duplicates(&mut self, dups: &[u32]) {
        if !self.rack_on() || dups.is_empty() {
            return;
        }
        let (cum, next) = (self.tx.cum_ack, self.tx.next_tsn);
        // Every path's reordering window grows, also one that saw nothing delivered yet.
        self.rack.ensure_paths(self.paths.len());
        self.rack.on_duplicates(dups, cum, next);
    }

    /// After a SACK's acks (§7.4): if it acknowledged the chunk a probe resent, without a
    /// duplicate report of it and not sooner than min_RTT after the probe (the ack is the
    /// probe's, not a late one of the original), the probe repaired a loss: the path gets
    /// the congestion response of a fast retransmit (one cut, fast recovery).
    pub(crate) fn rack_probe_outcome(&mut self, now: Instant, cmt: bool) {
        let cum = self.tx.cum_ack;
        for i in 0..self.paths.len() {
            let Some((tsn, at, dup)) = self.rack.path(PathId(i as u16)).probe_rtx else {
                continue;
            };
            let acked = tsn_le(tsn, cum) || {
                let off = tsn.wrapping_sub(cum) as usize;
                let s = off.checked_sub(1).and_then(|o| self.tx.outstanding.get(o));
                s.is_some_and(|s| s.tsn == tsn && s.state.is_gap_acked())
            };
            if !acked {
                continue;
            }
            let r = self.rack.path_mut(PathId(i as u16));
            r.probe_rtx = None;
            let too_soon = r
                .min_rtt
                .is_none_or(|m| now.saturating_duration_since(at) < m);
            if dup || too_soon || self.paths[i].recovery != Recovery::Open {
                continue;
            }
            let path = PathId(i as u16);
            self.refresh_cc_views();
            let before = self.window_of(path);
            self.note_rate_at_loss(path);
            self.paths[i].cc.on_loss(&crate::cc::Ctx {
                paths: &self.cc_scratch,
                me: i,
            });
            self.rack.on_recovery_start(path);
            let exit = self.highest_outstanding_on(path, cmt);
            self.paths[i].recovery = Recovery::Fast { exit };
            self.trace_window(now, path, before, crate::WindowCause::FastRetransmit);
        }
    }

    /// The reorder timer of `path` expired: detection runs again (§6.2 step 5).
    pub(crate) fn on_rack_timer(&mut self, now: Instant, path: PathId) {
        self.timers.stop(Timer::Rack(path));
        if !self.rack_on() {
            return;
        }
        let mut lost = Vec::new();
        self.rack_detect(now, &mut lost);
        if !lost.is_empty() {
            let cmt = self.multipath_active();
            self.fast_retransmit(now, &lost, cmt);
            self.reset_burst();
        }
        self.rack_arm_pto(now, path);
        check_tally(&self.tx.outstanding, &self.tx.tally, &self.paths);
    }

    /// Arms (or stops) the PTO of `path` (§7.2): only with data in flight, no probe out, not
    /// in fast recovery, no reorder timer pending, and only if it fires before T3-rtx.
    pub(crate) fn rack_arm_pto(&mut self, now: Instant, path: PathId) {
        if !self.rack_on() {
            return;
        }
        let Some(p) = self.paths.get(path.0 as usize) else {
            return;
        };
        let pto = p.rtt.srtt().filter(|_| {
            p.flight_size > 0
                && !self.rack.path(path).tlp_out
                && !self.rack.path(path).rto_recovery
                && p.recovery == Recovery::Open
                && !self.timers.is_running(Timer::Rack(path))
        });
        let at = pto.map(|srtt| {
            // §7.2: a lone packet in flight may wait for the peer's delayed SACK.
            let extra = if p.flight_size <= p.mtu {
                self.cfg.sack_delay
            } else {
                Duration::ZERO
            };
            now + 2 * srtt + extra
        });
        let t3 = self.timers.get(Timer::T3(path));
        let at = at.filter(|&a| t3.is_none_or(|t| a < t));
        self.timers.set(Timer::Tlp(path), at);
    }

    /// After a SACK: detection (merged into `lost` for one `fast_retransmit`) is done by the
    /// caller; here the probes: a path with data acknowledged may probe again, and its PTO
    /// is armed anew (§7.2); a path with nothing in flight needs neither timer.
    pub(crate) fn rack_after_sack(&mut self, now: Instant, acked_on: &[usize]) {
        for i in 0..self.paths.len() {
            let id = PathId(i as u16);
            if self.paths[i].flight_size == 0 {
                self.timers.stop(Timer::Rack(id));
                self.timers.stop(Timer::Tlp(id));
                let r = self.rack.path_mut(id);
                r.tlp_out = false;
                r.rto_recovery = false;
                continue;
            }
            if acked_on.get(i).is_some_and(|&b| b > 0) {
                let r = self.rack.path_mut(id);
                r.tlp_out = false;
                r.rto_recovery = false;
                self.rack_arm_pto(now, id);
            } else if self.timers.is_running(Timer::Rack(id)) {
                self.timers.stop(Timer::Tlp(id));
            }
        }
    }

    /// The PTO of `path` expired: one tail loss probe (§7.3) — new data if the peer's
    /// window takes it, else the highest-TSN chunk in flight on the path again — without a
    /// cwnd cut; T3-rtx restarts one RTO from now.
    pub(crate) fn on_tlp_timer(&mut self, now: Instant, path: PathId) {
        self.timers.stop(Timer::Tlp(path));
        let pi = path.0 as usize;
        if !self.rack_on() || pi >= self.paths.len() {
            return;
        }
        let p = &self.paths[pi];
        if p.flight_size == 0
            || self.rack.path(path).tlp_out
            || p.state != PathState::Active
            || self.rtx_waiting_on(path)
        {
            return; // Nothing to probe for, a path T3 and heartbeats judge, or rtx go anyway.
        }
        let new_data = self.may_send_new_data()
            && self.tx.has_unsent()
            && self.new_data_allowed_on(path)
            && self.tx.peer_rwnd >= p.mtu;
        if new_data {
            self.rack.path_mut(path).probe_new = true;
        } else {
            let last = self
                .tx
                .outstanding
                .iter()
                .rposition(|s| s.path == path && s.state == ChunkState::InFlight);
            let Some(i) = last else { return };
            self.rack.path_mut(path).probe_rtx = Some((self.tx.outstanding[i].tsn, now, false));
            let tx = &mut self.tx;
            tx.outstanding[i].set_state(
                ChunkState::Marked(Mark::Probe),
                &mut self.paths,
                &mut tx.tally,
            );
            self.paths[pi].rtx_cwnd_exempt = true;
        }
        self.rack.path_mut(path).tlp_out = true;
        let p = &mut self.paths[pi];
        p.stats.tail_loss_probes += 1;
        // §7.3: the RTO restarts after the probe.
        let rto = p.rtt.rto();
        self.timers.set(Timer::T3(path), Some(now + rto));
        check_tally(&self.tx.outstanding, &self.tx.tally, &self.paths);
    }

    /// T3-rtx expired on `path`: RTO recovery takes over from RACK-TLP there.
    pub(crate) fn rack_on_t3(&mut self, path: PathId) {
        self.timers.stop(Timer::Rack(path));
        self.timers.stop(Timer::Tlp(path));
        if (path.0 as usize) < self.paths.len() {
            self.rack.on_t3(path);
        }
    }
}
