//! Loss recovery (RFC 9260 §6.3.3, §7.2.3, §7.2.4; RFC 7829): fast retransmit and fast
//! recovery, T3-rtx expiry, and the error counting that takes paths and the association
//! down. Where each retransmission goes is the rtx policy's choice (`path_select`).

use super::loss::LossDetector;
use super::sent::{ChunkState, Mark, check_tally};
use super::spurious::Trigger;
use crate::association::{Association, State};
use crate::cc::{Controller, Ctx};
use crate::event::CloseReason;
use crate::path::{PathId, PathState, Recovery};
use crate::time::Instant;
use crate::timer::Timer;
use crate::{TraceEvent, WindowCause};

impl Association {
    /// A path's (cwnd, ssthresh), to trace what a controller changed.
    pub(crate) fn window_of(&self, path: PathId) -> (usize, usize) {
        let cc = &self.paths[path.0 as usize].cc;
        (cc.window(), cc.ssthresh())
    }

    /// Fills `cc_scratch` with what the coupled controllers see of every path (RFC 6356,
    /// CMT/RP: only usable paths share the totals), if any controller is coupled.
    pub(crate) fn refresh_cc_views(&mut self) {
        if self.paths.iter().any(|p| p.cc.is_coupled()) {
            let mut v = std::mem::take(&mut self.cc_scratch);
            v.clear();
            v.extend(self.paths.iter().map(|q| crate::cc::CcPathView {
                coupled: matches!(q.state, PathState::Active | PathState::PotentiallyFailed),
                ..q.cc.view(q.rtt.srtt())
            }));
            self.cc_scratch = v;
        }
    }

    /// Fast retransmit of the chunks `lost` lists (queue index, path), in TSN order
    /// (§7.2.4 steps 2–3): each is marked, its path enters fast recovery once per window
    /// (under CMT the window is the path's own data) with one cwnd reduction, then each goes
    /// to the path the rtx policy picks, which may send one packet of them regardless of
    /// cwnd.
    pub(crate) fn fast_retransmit(&mut self, now: Instant, lost: &[(usize, PathId)], cmt: bool) {
        for &(i, from) in lost {
            let pid = from.0 as usize;
            let tx = &mut self.tx;
            let s = &mut tx.outstanding[i];
            s.fast_retransmitted = true;
            s.set_state(
                ChunkState::Marked(Mark::Fast),
                &mut self.paths,
                &mut tx.tally,
            );
            self.refresh_cc_views();
            self.paths[pid].stats.fast_retransmissions += 1;
            self.paths[pid].lost_chunks += 1;
            if self.paths[pid].recovery == Recovery::Open {
                self.rack.on_recovery_start(PathId(pid as u16));
                let flight = self.paths[pid].flight_size + self.tx.outstanding[i].data.len();
                self.spurious_episode_start(now, from, Trigger::FastRetransmit, flight);
                let before = self.window_of(from);
                self.note_rate_at_loss(from);
                self.paths[pid].cc.on_loss(&Ctx {
                    paths: &self.cc_scratch,
                    me: pid,
                });
                let exit = self.highest_outstanding_on(from, cmt);
                self.paths[pid].recovery = Recovery::Fast { exit };
                self.trace_window(now, from, before, WindowCause::FastRetransmit);
            }
        }
        for &(i, from) in lost {
            let to = self.rtx_path(from);
            let tx = &mut self.tx;
            tx.outstanding[i].retarget(to, &mut self.paths, &mut tx.tally);
            self.paths[to.0 as usize].rtx_cwnd_exempt = true;
            let tsn = tx.outstanding[i].tsn;
            let ev = TraceEvent::FastRetransmit {
                tsn,
                lost_on: from,
                resent_on: to,
                // Three misses if it had them (RACK may have found it too), else RACK's time.
                rule: if tx.outstanding[i].misses >= self.cfg.dupthresh {
                    crate::LossRule::ThreeMisses
                } else {
                    crate::LossRule::RackTime
                },
            };
            self.trace.record(now, ev);
        }
        for &(_, from) in lost {
            self.check_path_loss(now, from);
        }
    }

    /// The highest TSN outstanding: on `path` under CMT (its own data is its window), else
    /// the highest sent.
    pub(crate) fn highest_outstanding_on(&self, path: PathId, cmt: bool) -> u32 {
        let last = self.tx.next_tsn.wrapping_sub(1);
        if !cmt {
            return last;
        }
        let mut live = self.tx.outstanding.iter().rev();
        live.find(|o| o.path == path).map_or(last, |o| o.tsn)
    }

    /// Marks every chunk in flight on `path` for retransmission as after its T3 (§6.3.3 E3);
    /// returns how many.
    pub(crate) fn mark_in_flight_lost(&mut self, path: PathId) -> usize {
        let mut marked = 0;
        let tx = &mut self.tx;
        for s in tx.outstanding.iter_mut() {
            if s.path == path && s.state == ChunkState::InFlight {
                s.set_state(
                    ChunkState::Marked(Mark::Timeout),
                    &mut self.paths,
                    &mut tx.tally,
                );
                marked += 1;
            }
        }
        marked
    }

    /// T3-rtx expired on `path` (RFC 9260 §6.3.3).
    pub(crate) fn on_t3_expiry(&mut self, now: Instant, path: PathId) {
        let pi = path.0 as usize;
        self.refresh_cc_views();
        let before = self.window_of(path);
        let flight = self.paths[pi].flight_size;
        self.spurious_episode_start(now, path, Trigger::Timeout, flight);
        let p = &mut self.paths[pi];
        self.timers.stop(Timer::T3(path));
        p.stats.timeouts += 1;
        p.rate_at_loss = 0.0;
        p.cc.on_timeout(&Ctx {
            paths: &self.cc_scratch,
            me: pi,
        });
        p.rtt.backoff();
        let cmt = self.multipath_active();
        let recover = self.highest_outstanding_on(path, cmt);
        let p = &mut self.paths[pi];
        p.recovery = Recovery::AfterTimeout { recover };
        p.rtt_probe = None;
        self.rack_on_t3(path);
        // RFC 8899 §4.3: lost data may mean the PMTU shrank without an ICMP.
        self.pmtu_data_timeout(now, path);
        self.trace_window(now, path, before, WindowCause::Timeout);
        let marked_chunks = self.mark_in_flight_lost(path);
        // Zero-window probes answered by SACKs do not count as errors (RFC 9260 §6.1).
        // Only a path whose whole flight was the one probe chunk was probing: under CMT
        // SACKs keep coming over the other paths while a dead one's hole fills the window.
        // With several paths the SACKs must come in over this one: a cut path's probe is
        // not answered on it, whatever the others carry.
        let answered = if self.live_path_count() == 1 {
            self.sack_since_t3
        } else {
            self.paths[pi].sack_since_t3
        };
        let probing = self.tx.peer_rwnd == 0 && answered && marked_chunks <= 1;
        self.sack_since_t3 = false;
        self.paths[pi].sack_since_t3 = false;
        if !probing {
            // First: the path may now be PF (RFC 7829), which the choice below avoids.
            self.count_error(now, path);
            if self.state == State::Closed {
                return;
            }
        }
        self.paths[pi].lost_chunks += marked_chunks as u64;
        // The copy probing this path timed out too: the next copy gets a new PSN.
        let probed = self.paths[pi].psn.probe.take().is_some();
        let target = self.rtx_path(path);
        let ev = TraceEvent::T3Expired {
            path,
            marked: marked_chunks,
            resent_on: target,
        };
        self.trace.record(now, ev);
        let first_marked = self.paths[pi].rtx_marked.first();
        if target != path {
            // RFC 9260 §6.4.1 / CMT rtx policy: the marked chunks go out on `target`.
            self.move_marked(path, target);
        }
        if self.ls_copy_probing() && target != path && self.usable_for_data(path) {
            // LS-SCTP (Abd El Al et al. §4.3): a copy of a timed-out chunk (or, when the probe
            // itself timed out, of the oldest unacknowledged one) probes this path; no new
            // data goes here until the copy is acknowledged on it.
            let oldest_unacked = || {
                let mut live = self.tx.outstanding.iter();
                live.find(|s| matches!(s.state, ChunkState::InFlight | ChunkState::Marked(_)))
                    .map(|s| s.seq)
            };
            self.paths[pi].psn.copy_of = match first_marked {
                Some(seq) => Some(seq),
                None if probed => oldest_unacked(),
                None => None,
            };
        }
        self.check_path_loss(now, path);
        if self.features.pr_sctp {
            self.abandon_expired(now);
            self.advance_peer_ack_point();
        }
        self.reset_burst();
        check_tally(&self.tx.outstanding, &self.tx.tally, &self.paths);
    }

    /// One more consecutive error on `path` and on the association (RFC 9260 §8.1, §8.2).
    pub(crate) fn count_error(&mut self, now: Instant, path: PathId) {
        let max_path = self.cfg.path_max_retrans;
        // LS-SCTP's timeout handling probes the path with copies instead of the PF state;
        // without LS-SCTP's PSNs a copy's answer is ambiguous, so heartbeats probe it (PF).
        let pfmr = if self.ls_copy_probing() {
            None
        } else if self.cfg.timeout_handling == crate::config::TimeoutHandling::Ls {
            Some(self.cfg.pf_max_retrans.unwrap_or(0))
        } else {
            self.cfg.pf_max_retrans
        };
        let multi = self.live_path_count() > 1;
        let p = &mut self.paths[path.0 as usize];
        p.error_count += 1;
        let next = match p.state {
            PathState::Active | PathState::PotentiallyFailed if p.error_count > max_path => {
                Some(PathState::Inactive)
            }
            // RFC 7829 §5.1: past PFMR errors the path is avoided but still probed.
            PathState::Active if multi && pfmr.is_some_and(|m| p.error_count > m) => {
                Some(PathState::PotentiallyFailed)
            }
            PathState::Unconfirmed if p.error_count > max_path => Some(PathState::Inactive),
            _ => None,
        };
        let unconfirmed = !p.confirmed;
        if let Some(state) = next {
            p.fail_epoch = p.fail_epoch.wrapping_add(1);
            // An inactive path is probed by HEARTBEATs only (Abd El Al et al. §4.4).
            p.psn.copy_of = None;
            p.psn.probe = None;
            let probing = p.heartbeat.outstanding.is_some();
            self.set_path_state(now, path, state);
            if state == PathState::PotentiallyFailed && !probing {
                // RFC 7829 §5.1: probe a PF destination at once, then every RTO.
                self.schedule_heartbeat(now, path);
            }
            if state == PathState::Inactive && self.ls() && !probing {
                // Abd El Al et al. §4.4: the Path Monitor probes an inactive path every H (Eq. (2)).
                self.schedule_heartbeat(now, path);
            }
        }
        if unconfirmed {
            // Probes of an address never confirmed do not count against the association.
            return;
        }
        self.error_count += 1;
        if self.error_count > self.cfg.association_max_retrans {
            self.queue_abort(vec![]);
            self.close(now, CloseReason::PeerUnreachable);
        }
    }
}
