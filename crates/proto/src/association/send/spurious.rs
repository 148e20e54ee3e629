//! Spurious retransmissions: detection and response (Ladha et al., "On Making SCTP Robust
//! to Spurious Retransmissions", Ladha et al. §4–§5; RFC 3522, RFC 3708, RFC 4015).
//!
//! A loss-recovery *episode* opens on a path when its congestion state is cut (a fast
//! retransmit that starts fast recovery, or a T3-rtx expiry) and remembers what the cut took
//! (`pipe_prev`, the RTT estimate). Detection (the loss-detection seam) then watches the
//! SACKs:
//!
//! * **Eifel** (Fig. 6): only a *cover ack* — a cumulative ack up to the highest TSN
//!   retransmitted in the episode — decides, so a chunk bundled with a spurious
//!   retransmission and really lost is not masked (Fig. 5). With the TIMESTAMP chunk, the
//!   retransmission was spurious if the cover ack echoes a timestamp older than the first
//!   retransmission's; with the retransmit bit, if no SACK up to and including the cover ack
//!   carried the bit. `AckRcvd` records a non-cover ack in between (Fig. 6 step 5).
//! * **DupTSN** (RFC 3708): the episode was spurious once every TSN it retransmitted came
//!   back as a duplicate-TSN report. With `eifel+duptsn` this is also Eifel's fallback when a
//!   retransmission on another path overtook the original (§4 "Multihoming Considerations").
//!
//! The response (the recovery and congestion-control seams, §5, RFC 4015): cwnd =
//! FlightSize + min(bytes acked, IW) and ssthresh = pipe_prev on the episode's path; after a
//! spurious timeout the chunks still waiting to go again return to flight on their path (new
//! data resumes instead of Go-Back-N) and the RTO is adapted.

use std::time::Duration;

use super::sent::{ChunkState, Mark, check_tally};
use crate::association::Association;
use crate::cc::Controller;
use crate::config::SpuriousDetection;
use crate::path::PathId;
use crate::serial::{tsn_ge, tsn_gt, tsn_lt};
use crate::time::Instant;
use crate::timer::Timer;
use crate::{TraceEvent, WindowCause};

/// Retransmitted TSNs an episode tracks for DupTSN detection; beyond this it gives up on
/// DupTSN (a window larger than this is not what RFC 3708's list was meant for).
const MAX_TRACKED: usize = 4096;

/// Episodes a path keeps undecided at once: the duplicate reports of one may come back after
/// the next fast retransmit began another (reordering every window, Ladha et al. Fig. 11(a)).
const MAX_EPISODES: usize = 4;

/// The Eifel signal in use towards this peer (Ladha et al. Fig. 6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signal {
    /// Variant I: a TIMESTAMP chunk in every packet.
    Timestamp,
    /// Variant II: the retransmit bit in DATA and SACK flags.
    RetransmitBit,
}

/// What started an episode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trigger {
    /// A fast retransmit started fast recovery.
    FastRetransmit,
    /// T3-rtx expired.
    Timeout,
}

/// One loss-recovery episode of a path, from the congestion cut until it is found spurious
/// or the detection gives up.
#[derive(Debug, Clone)]
pub(crate) struct Episode {
    trigger: Trigger,
    /// Eifel still waits for the cover ack.
    eifel_open: bool,
    /// DupTSN detection still counts duplicate reports.
    dup_open: bool,
    /// TSval of the packet that carried the episode's first retransmission (RetransmitTS).
    retransmit_ts: Option<u32>,
    /// Highest TSN retransmitted with the first retransmission, in the packets of that
    /// instant (MaxRetransmit; see `spurious_on_retransmit`).
    max_retransmit: Option<u32>,
    /// A SACK that was not a cover ack arrived (AckRcvd, Fig. 6).
    ack_rcvd: bool,
    /// max(FlightSize, ssthresh) before the cut (RFC 4015 pipe_prev), decayed by repeated
    /// timeouts.
    pipe_prev: usize,
    /// SRTT + 2G and RTTVAR before the cut (RFC 4015 SRTT_prev, RTTVAR_prev).
    srtt_prev: Option<Duration>,
    rttvar_prev: Duration,
    /// When the first timeout of the episode expired, and the RTO then: the RTT sample of a
    /// spurious timeout when there is no timestamp to measure it.
    timed_out: Option<(Instant, Duration)>,
    /// T3 expiries in the episode.
    timeouts: u32,
    /// Chunks fast-retransmitted in the episode (one fast recovery may retransmit several).
    fast_retransmits: u32,
    /// Retransmitted TSNs (RFC 3708's list), each with how many times the episode sent it
    /// again and how many duplicate reports came for it.
    retransmitted: Vec<Tracked>,
}

/// A TSN the episode retransmitted (RFC 3708 §3).
#[derive(Debug, Clone, Copy)]
struct Tracked {
    tsn: u32,
    /// Retransmissions of it in the episode.
    sent: u16,
    /// Duplicate reports of it since its first retransmission.
    dups: u16,
}

impl Episode {
    /// Every retransmission came back as a duplicate: a TSN sent n times more needs n
    /// reports (RFC 3708 §3), else one copy was needed.
    fn all_reported_duplicate(&self) -> bool {
        !self.retransmitted.is_empty() && self.retransmitted.iter().all(|t| t.dups >= t.sent)
    }
}

/// What the SACK being processed says for detection: the retransmit bit of its flags and
/// the echo of the packet's TIMESTAMP chunk.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct SackSignals {
    /// The SACK had the retransmit bit set.
    pub(crate) rbit: bool,
    /// TSecr of the TIMESTAMP chunk that led its packet.
    pub(crate) echo: Option<u32>,
}

impl Association {
    /// The Eifel signal and whether DupTSN reports count, as configured and negotiated. An
    /// Eifel variant the peer does not echo falls back to DupTSN (RFC 3708 needs nothing from
    /// the peer); LS-SCTP's per-path sequence numbers already tell copies apart, so none runs
    /// there.
    pub(crate) fn spurious_detection(&self) -> (Option<Signal>, bool) {
        if self.ls() {
            return (None, false);
        }
        let ts = self.features.eifel_ts.then_some(Signal::Timestamp);
        match self.cfg.spurious_detection {
            SpuriousDetection::Off => (None, false),
            SpuriousDetection::DupTsn => (None, true),
            SpuriousDetection::EifelTimestamp => (ts, ts.is_none()),
            SpuriousDetection::EifelRbit => {
                let rbit = self.features.eifel_rbit.then_some(Signal::RetransmitBit);
                (rbit, rbit.is_none())
            }
            SpuriousDetection::EifelDupTsn => (ts, true),
        }
    }

    /// Whether our packets carry the TIMESTAMP chunk as the Eifel sender's signal.
    pub(crate) fn sends_timestamps(&self) -> bool {
        self.spurious_detection().0 == Some(Signal::Timestamp)
    }

    /// Whether our retransmissions carry the retransmit bit.
    pub(crate) fn sends_retransmit_bit(&self) -> bool {
        self.spurious_detection().0 == Some(Signal::RetransmitBit)
    }

    /// Loss recovery starts on `path` (Fig. 6 step 1; RFC 4015 step (1)): called before its
    /// congestion state is cut. `flight` is the path's flight size before the loss was
    /// marked. A timeout inside an open episode continues it, and each timeout after the
    /// first halves what a response may restore (braid's reading of the decay of [LG04]:
    /// every further expiry would have halved ssthresh again).
    pub(crate) fn spurious_episode_start(
        &mut self,
        now: Instant,
        path: PathId,
        trigger: Trigger,
        flight: usize,
    ) {
        let (signal, dup) = self.spurious_detection();
        if signal.is_none() && !dup {
            return;
        }
        let p = &mut self.paths[path.0 as usize];
        let mtu = p.mtu;
        if trigger == Trigger::Timeout
            && let Some(e) = p.spurious.last_mut()
        {
            e.trigger = Trigger::Timeout;
            e.timeouts += 1;
            e.timed_out.get_or_insert((now, p.rtt.rto()));
            if e.timeouts > 1 {
                e.pipe_prev = (e.pipe_prev / 2).max(4 * mtu);
            }
            return;
        }
        let srtt_prev = p
            .rtt
            .srtt()
            .map(|s| s + 2 * crate::path::RttEstimator::GRANULARITY);
        if p.spurious.len() == MAX_EPISODES {
            p.spurious.remove(0);
        }
        p.spurious.push(Episode {
            trigger,
            eifel_open: signal.is_some(),
            dup_open: dup,
            retransmit_ts: None,
            max_retransmit: None,
            ack_rcvd: false,
            pipe_prev: flight.max(p.cc.ssthresh()),
            srtt_prev,
            rttvar_prev: p.rtt.rttvar(),
            timed_out: (trigger == Trigger::Timeout).then(|| (now, p.rtt.rto())),
            timeouts: u32::from(trigger == Trigger::Timeout),
            fast_retransmits: 0,
            retransmitted: Vec::new(),
        });
    }

    /// A chunk lost on `lost_on` is retransmitted with TSN `tsn` in a packet whose TSval is
    /// `tsval` (Fig. 6 steps 1(b) and 2).
    ///
    /// MaxRetransmit counts the retransmissions sent with the first one (the packets of
    /// that instant, which share its TSval) and later fast retransmits, but not the
    /// Go-Back-N of a timeout's marks: the cover ack exists so that a chunk bundled
    /// with a spurious retransmission is not masked (Fig. 5). Raising it with every later
    /// Go-Back-N retransmission, as a literal reading of step 2's loop would, means that
    /// when the originals' acks open the alternate path's window (Fig. 3) each of them sends
    /// more retransmissions and no ack is a cover ack until the Go-Back-N is over — not
    /// what Fig. 10(c) shows.
    pub(crate) fn spurious_on_retransmit(
        &mut self,
        lost_on: PathId,
        tsn: u32,
        tsval: u32,
        fast: bool,
    ) {
        let outstanding = &self.tx.outstanding;
        let Some(e) = self.paths[lost_on.0 as usize].spurious.last_mut() else {
            return;
        };
        e.fast_retransmits += u32::from(fast);
        let first = *e.retransmit_ts.get_or_insert(tsval) == tsval;
        // A chunk fast-retransmitted later in the episode had three miss indications of its
        // own: step 2's loop raises MaxRetransmit for it, or a cover ack for the first
        // retransmission alone would undo the recovery it really needed.
        if (first || fast) && e.max_retransmit.is_none_or(|m| tsn_gt(tsn, m)) {
            e.max_retransmit = Some(tsn);
            // The echo rule (RFC 7323 §4.3) takes a packet's TSval only at the left edge of
            // the peer's window. A chunk below this one that may still fill a hole there
            // with an older TSval — an original still in flight (CMT, another path), or an
            // abandoned one the FORWARD-TSN will skip — would make the cover ack echo an
            // older timestamp though this retransmission was needed: Eifel cannot decide.
            let hole = e.eifel_open
                && outstanding
                    .iter()
                    .take_while(|s| tsn_lt(s.tsn, tsn))
                    .any(|s| match s.state {
                        ChunkState::InFlight => s.tx_count <= 1,
                        ChunkState::Abandoned => true,
                        _ => false,
                    });
            if hole {
                e.eifel_open = false;
            }
        }
        if !e.dup_open {
            return;
        }
        if let Some(t) = e.retransmitted.iter_mut().find(|t| t.tsn == tsn) {
            // Sent once more: this copy needs a duplicate report of its own.
            t.sent = t.sent.saturating_add(1);
        } else if e.retransmitted.len() < MAX_TRACKED {
            e.retransmitted.push(Tracked {
                tsn,
                sent: 1,
                dups: 0,
            });
        } else {
            e.dup_open = false;
        }
    }

    /// PR-SCTP abandoned the chunk with TSN `tsn` (RFC 3758): the FORWARD-TSN, not a copy
    /// of it, will move the peer's cumulative ack past it, so no cover ack at or above it
    /// says which copy arrived (no retransmit bit, and an echo of whatever packet led).
    /// Eifel gives up on the episodes it could cover; DupTSN reports still count.
    pub(crate) fn spurious_on_abandon(&mut self, tsn: u32) {
        for e in self.paths.iter_mut().flat_map(|p| p.spurious.iter_mut()) {
            if e.max_retransmit.is_none_or(|m| !tsn_gt(tsn, m)) {
                e.eifel_open = false;
            }
        }
    }

    /// A SACK's duplicate-TSN reports (Fig. 6 step 3(a): the list is updated first).
    pub(crate) fn spurious_note_duplicates(&mut self, dup_tsns: &[u32]) {
        if dup_tsns.is_empty() || self.paths.iter().all(|p| p.spurious.is_empty()) {
            return;
        }
        // Sorted once, then one binary search per tracked TSN: a hostile SACK's long list
        // costs O((d + t) log d), not O(d · t).
        let mut sorted = dup_tsns.to_vec();
        sorted.sort_unstable();
        for e in self.paths.iter_mut().flat_map(|p| p.spurious.iter_mut()) {
            for t in &mut e.retransmitted {
                let from = sorted.partition_point(|&d| d < t.tsn);
                let n = sorted[from..].partition_point(|&d| d == t.tsn);
                t.dups = t.dups.saturating_add(u16::try_from(n).unwrap_or(u16::MAX));
            }
        }
    }

    /// After a SACK was processed (its cumulative ack `cum`, `acked` bytes newly
    /// acknowledged, its `signals`): decides open episodes and responds to spurious ones.
    pub(crate) fn spurious_detect(
        &mut self,
        now: Instant,
        cum: u32,
        acked: usize,
        signals: SackSignals,
    ) {
        let (signal, _) = self.spurious_detection();
        for i in 0..self.paths.len() {
            let mut k = 0;
            while k < self.paths[i].spurious.len() {
                if self.decide_episode(now, PathId(i as u16), k, cum, acked, signal, signals) {
                    k += 1;
                }
            }
        }
    }

    /// Fig. 6 steps 3–6 for episode `k` of `path`; responds if it was spurious. Returns
    /// whether the episode is still open (else it was removed).
    #[allow(clippy::too_many_arguments)]
    fn decide_episode(
        &mut self,
        now: Instant,
        path: PathId,
        k: usize,
        cum: u32,
        acked: usize,
        signal: Option<Signal>,
        signals: SackSignals,
    ) -> bool {
        let e = &mut self.paths[path.0 as usize].spurious[k];
        let mut spurious = false;
        if e.eifel_open
            && let Some(max) = e.max_retransmit
        {
            let cover = tsn_ge(cum, max);
            match signal {
                Some(Signal::Timestamp) if !cover => e.ack_rcvd = true,
                Some(Signal::Timestamp) => {
                    // Step 4: the cover ack echoes the original's timestamp, older than
                    // the first retransmission's; step 5: unless a timeout's
                    // retransmissions all came back duplicate with no ack in between
                    // (the originals' acks were lost: DupTSN decides, §3.3 of RFC 3522).
                    let older = signals
                        .echo
                        .zip(e.retransmit_ts)
                        .is_some_and(|(echo, rts)| tsn_lt(echo, rts));
                    let step5 =
                        e.trigger == Trigger::Timeout && !e.ack_rcvd && e.all_reported_duplicate();
                    spurious = older && !step5;
                    e.eifel_open = false;
                }
                Some(Signal::RetransmitBit) if signals.rbit => e.eifel_open = false,
                Some(Signal::RetransmitBit) if cover => {
                    spurious = true;
                    e.eifel_open = false;
                }
                Some(Signal::RetransmitBit) => {}
                None => e.eifel_open = false,
            }
        }
        if !spurious && e.dup_open && e.all_reported_duplicate() {
            spurious = true;
        }
        if spurious {
            let e = self.paths[path.0 as usize].spurious.remove(k);
            self.spurious_respond(now, path, e, acked);
            false
        } else if !e.eifel_open && !e.dup_open {
            self.paths[path.0 as usize].spurious.remove(k);
            false
        } else {
            true
        }
    }

    /// The response to a spurious episode on `path` (Ladha et al. §5, RFC 4015 steps (3)–(5)).
    /// The window is never made smaller than it is: a late DupTSN verdict may come after the
    /// window already grew back.
    fn spurious_respond(&mut self, now: Instant, path: PathId, e: Episode, acked: usize) {
        let pi = path.0 as usize;
        let before = self.window_of(path);
        if e.trigger == Trigger::Timeout {
            self.stats.spurious_timeouts += u64::from(e.timeouts.max(1));
            self.unmark_timed_out(path);
            let p = &mut self.paths[pi];
            // RFC 4015 step (4): the late ack measured the delay the timeout did not wait for.
            let sample = match (e.timed_out, e.srtt_prev) {
                (Some((at, rto)), _) => (now - at) + rto,
                (None, Some(s)) => s,
                (None, None) => p.rtt.rto(),
            };
            let srtt_prev = e.srtt_prev.unwrap_or(sample);
            p.rtt
                .adapt_after_spurious_timeout(srtt_prev, e.rttvar_prev, sample);
        } else {
            self.stats.spurious_fast_retransmits += u64::from(e.fast_retransmits.max(1));
        }
        let p = &mut self.paths[pi];
        let iw = crate::cc::rfc_initial_cwnd(p.mtu);
        let cwnd = (p.flight_size + acked.min(iw)).max(p.cc.window());
        let ssthresh = e.pipe_prev.max(p.cc.ssthresh());
        p.cc.undo(cwnd, ssthresh);
        p.recovery = crate::path::Recovery::Open;
        if p.flight_size > 0 && !self.timers.is_running(Timer::T3(path)) {
            self.timers.set(Timer::T3(path), Some(now + p.rtt.rto()));
        }
        self.trace_window(now, path, before, WindowCause::Spurious);
        let ev = TraceEvent::SpuriousRetransmission {
            path,
            timeout: e.trigger == Trigger::Timeout,
        };
        self.trace.record(now, ev);
        check_tally(&self.tx.outstanding, &self.tx.tally, &self.paths);
    }

    /// After a spurious timeout on `path`: the chunks the timeout marked that have not gone
    /// again yet go back in flight there (RFC 4015 step (3): new data resumes, no Go-Back-N),
    /// wherever the rtx policy had moved them.
    fn unmark_timed_out(&mut self, path: PathId) {
        let tx = &mut self.tx;
        for s in tx.outstanding.iter_mut() {
            if s.state == ChunkState::Marked(Mark::Timeout) && s.sent_on == path {
                s.unmark(&mut self.paths, &mut tx.tally);
                // Back in flight without a transmission: RACK's send order learns it anew.
                self.rack.order.forget();
            }
        }
    }
}
