//! Path selection, the association's rules around its path scheduler
//! ([`super::path_sched`]): which paths may carry new data, which path the next packet
//! takes when retransmissions or control decide it, and where a retransmission goes (RFC
//! 9260 §6.4, §6.4.1; RFC 7829; CMT, Iyengar et al. §4.3).
//!
//! The fixed stream-to-path mapping of Dreibholz et al. is the stream scheduler's part
//! (`sched::fixed`): it says which stream may use a path, the path scheduler says which path
//! is next. Retransmissions follow [`RtxPolicy`] under every scheduler.

use super::path_sched::{AnyScheduler, PathScheduler, PathView};
use crate::association::{Association, State};
use crate::cc::Controller;
use crate::config::RtxPolicy;
use crate::path::{Path, PathId, PathState};

/// A retransmission policy's preference for a path (higher is better).
fn rtx_score(policy: RtxPolicy, p: &Path) -> f64 {
    match policy {
        RtxPolicy::Same => 0.0,
        // Deterministic RTX-ASAP: the most cwnd room when the loss is detected.
        RtxPolicy::Asap => p.cc.window().saturating_sub(p.flight_size) as f64,
        RtxPolicy::Cwnd => p.cc.window() as f64,
        RtxPolicy::Ssthresh => p.cc.ssthresh() as f64,
        RtxPolicy::Lossrate => {
            let sent = p.stats.data_chunks_sent + p.stats.retransmissions;
            -((p.stats.retransmissions + 1) as f64 / (sent + 1) as f64)
        }
    }
}

/// Paths the window-cover rule weighs; with more usable paths it holds none back.
const COVER_PATHS: usize = 32;

impl Association {
    /// Installs the path scheduler the configuration and the negotiated features ask for
    /// (LS-SCTP makes the sender multipath); one of the same kind keeps its state.
    pub(crate) fn install_path_scheduler(&mut self) {
        let mut s = AnyScheduler::new(self.multipath_cfg().is_some(), self.cfg.path_assignment);
        if !s.same_kind(&self.path_sched) {
            // Failover and round robin walk the paths alike: the walk goes on where it was.
            s.carry_cursor(&self.path_sched);
            self.path_sched = s;
        }
    }

    /// Whether the scheduler in force shares the peer's window by rate (LS-SCTP's
    /// cwnd/RTT assignment).
    pub(crate) fn shares_window(&self) -> bool {
        self.path_sched.shares_window()
    }

    /// What the scheduler reads of `p`.
    fn path_view(&self, p: &Path) -> PathView {
        PathView {
            id: p.id,
            srtt: p.rtt.srtt(),
            cwnd: p.cc.window(),
            flight: p.flight_size,
            rate: self.bandwidth_estimate(p),
        }
    }

    /// A path's bandwidth estimate, cwnd/SRTT in bytes per second (Abd El Al et al. §4.3); RTO.Initial
    /// stands in for an RTT not yet measured.
    pub(crate) fn bandwidth_estimate(&self, p: &Path) -> f64 {
        let rtt = p.rtt.srtt().unwrap_or(self.cfg.rto_initial);
        p.cc.window() as f64 / rtt.as_secs_f64().max(1e-6)
    }

    /// A loss is about to cut `path`'s cwnd: its rate until now is kept for the window
    /// cover rule ([`Self::within_window_cover`]).
    pub(crate) fn note_rate_at_loss(&mut self, path: PathId) {
        let rate = self.bandwidth_estimate(&self.paths[path.0 as usize]);
        self.paths[path.0 as usize].rate_at_loss = rate;
    }

    /// `len` bytes of new data went on `path`: the scheduler hears of it.
    pub(crate) fn note_assigned(&mut self, path: PathId, len: usize) {
        if self.path_sched.wants_sent() {
            let v = self.path_view(&self.paths[path.0 as usize]);
            self.path_sched.on_sent(&v, len);
        }
    }

    /// Whether `path` is among the `max_data_paths` usable paths with the best bandwidth
    /// estimates (ties to the lower id), or no cap is set (Abd El Al et al. §1, §4.6).
    pub(crate) fn within_path_cap(&self, path: PathId) -> bool {
        let Some(cap) = self.cfg.max_data_paths else {
            return true;
        };
        let mine = self.bandwidth_estimate(&self.paths[path.0 as usize]);
        let better = self
            .paths
            .iter()
            .filter(|q| q.id != path && self.usable_for_data(q.id))
            .filter(|q| {
                let b = self.bandwidth_estimate(q);
                b > mine || (b == mine && q.id < path)
            })
            .count();
        better < usize::from(cap)
    }

    /// Whether the peer's window lets `path` add to the rate (LS-SCTP, Abd El Al et al. §4.3,
    /// Eq. (1)): every byte stays in the peer's window until the slowest path in use delivers
    /// the chunks before it, so paths in use up to RTT_max carry at most window/RTT_max.
    /// Taking the paths by SRTT, the quickest k give min(Σ cwnd/SRTT, window/RTT_k); new
    /// data uses the k that gives most (the most paths on a tie). A path without an RTT
    /// measurement is not held back: only data measures it.
    #[inline]
    pub(crate) fn within_window_cover(&self, path: PathId) -> bool {
        // Off (CMT's default), the answer costs two loads: this runs for every path a
        // packet might take, and the rule's body needs a large stack frame.
        !self.window_cover_on() || self.window_covers(path)
    }

    /// [`Self::within_window_cover`] with the rule on.
    fn window_covers(&self, path: PathId) -> bool {
        let Some(mine) = self.paths[path.0 as usize].rtt.srtt() else {
            return true;
        };
        // A window that has grown past the peer's INIT a_rwnd is autotuned: it grows when
        // the paths fill it (braid's doubles), so it does not bound them; weighing it as it
        // stands would keep a quicker path that does not fill it alone from letting it grow
        // for a slower one.
        // Before the first SACK nothing is known of the window's use.
        let max = self.tx.peer_window_max;
        if max == 0 || max > self.tx.peer_rwnd_initial + self.tx.peer_rwnd_initial / 4 {
            return true;
        }
        // On the stack: this runs for every path a packet might take.
        let mut set = [(std::time::Duration::ZERO, 0.0f64); COVER_PATHS];
        let mut n = 0;
        for q in &self.paths {
            if !(self.usable_for_data(q.id) && self.within_path_cap(q.id)) {
                continue;
            }
            let Some(rtt) = q.rtt.srtt() else { continue };
            if n == COVER_PATHS {
                return true;
            }
            // The rate before the last cut: a path recovering from a loss would otherwise
            // look slower than it is and let slower paths in for a sawtooth.
            set[n] = (rtt, self.bandwidth_estimate(q).max(q.rate_at_loss));
            n += 1;
        }
        if n < 2 {
            return true;
        }
        let set = &mut set[..n];
        set.sort_unstable_by_key(|a| a.0);
        let window = self.peer_window() as f64;
        let (mut sum, mut best, mut best_rtt) = (0.0, 0.0, set[0].0);
        for &(rtt, b) in set.iter() {
            let cap = window / rtt.as_secs_f64().max(1e-6);
            // The candidate counts as able to fill what the window leaves (its own cwnd/RTT
            // is only as large as the data it was given) and must add an eighth, less being
            // within what cwnd/SRTT varies by over a sawtooth — unless its RTT is within an
            // eighth of the slowest in use: then it holds the cumulative ack no longer.
            if cap >= best * 1.125 || rtt.as_secs_f64() <= best_rtt.as_secs_f64() * 1.125 {
                best_rtt = rtt;
            }
            sum += b;
            best = best.max(sum.min(cap));
        }
        mine <= best_rtt
    }

    /// Whether the message pinned to `pinned` holds back a path unlike it: `pinned` cannot
    /// send now while a path whose SRTT differs by more than an eighth could. In the paper
    /// other messages pass a message's fragments (they share one ASN); here they take
    /// consecutive TSNs, so a pinned message holds every path. Between alike paths the wait
    /// is kept for §4.5's in-order fragments; between unlike ones it would idle the quicker
    /// path for the slower one's ack clock, or the slower one for good under the quicker
    /// one's (measured: 20 and 5 Mbit/s at 20 and 160 ms RTT, 1 MiB buffer: 18.6 Mbit/s
    /// with the wait kept, 23.4 without).
    fn pin_holds_an_unlike_path(&self, pinned: PathId) -> bool {
        if self.has_data_to_send(pinned) {
            return false;
        }
        let Some(mine) = self.paths[pinned.0 as usize].rtt.srtt() else {
            return false;
        };
        self.paths.iter().any(|q| {
            q.id != pinned
                && q.rtt
                    .srtt()
                    .is_some_and(|r| r * 8 < mine * 7 || mine * 8 < r * 7)
                && !self.rtx_waiting_on(q.id)
                && self.room_for_new_data(q.id)
        })
    }

    /// The peer's whole window: what it has room for plus every byte it may still hold for
    /// us (`buffered` counts a path's gap-acknowledged chunks as well as its flight).
    pub(crate) fn peer_window(&self) -> usize {
        self.tx.peer_rwnd + self.paths.iter().map(|q| q.buffered).sum::<usize>()
    }

    /// Whether the window-cover rule is on: LS-SCTP, or CMT with `CmtConfig::window_cover`,
    /// and not the fixed stream-to-path mapping (a stream has no other path).
    #[inline]
    pub(crate) fn window_cover_on(&self) -> bool {
        (self.ls() || self.multipath_cfg().is_some_and(|c| c.window_cover))
            && self.cfg.stream_scheduler != crate::sched::SchedulerKind::Fixed
    }

    /// LS-SCTP with one path open to new data (the peer's window covers no other, Eq. (1)):
    /// the association runs as single-path SCTP, whose tail losses behind a full peer
    /// window only RACK-TLP finds before T3 (RFC 8985 §7).
    pub(crate) fn ls_single_data_path(&self) -> bool {
        self.ls()
            && self.shares_window()
            && self
                .paths
                .iter()
                .filter(|p| self.new_data_allowed_on(p.id))
                .count()
                == 1
    }

    /// Whether `path` may carry DATA now: active, or — when no path is active — the
    /// failed path with the fewest errors (RFC 7829 §5.1; a lone path is always used).
    pub(crate) fn usable_for_data(&self, path: PathId) -> bool {
        let p = &self.paths[path.0 as usize];
        if p.forbidden {
            // Application policy: never DATA here.
            return false;
        }
        if !p.confirmed || !self.pid_fits(path) {
            // RFC 9260 §5.4: no DATA to an unconfirmed address, ever; LS-DATA only on a path
            // its 4-bit PID can name.
            return false;
        }
        match p.state {
            // A standby path waits until every other path failed (application policy).
            PathState::Active if p.standby => !self.paths.iter().any(|q| {
                !q.standby
                    && !q.forbidden
                    && q.confirmed
                    && q.state == PathState::Active
                    && self.pid_fits(q.id)
            }),
            PathState::Active => true,
            PathState::Unconfirmed => false,
            PathState::PotentiallyFailed | PathState::Inactive => {
                !self
                    .paths
                    .iter()
                    .any(|q| q.state == PathState::Active && !q.forbidden && self.pid_fits(q.id))
                    && self.least_failed_path() == path
            }
        }
    }

    /// Whether new data may go on `path` under the policy.
    pub(crate) fn new_data_allowed_on(&self, path: PathId) -> bool {
        self.usable_for_data(path)
            && if self.path_sched.spreads() {
                self.within_path_cap(path) && self.within_window_cover(path)
            } else {
                path == self.single_data_path()
            }
    }

    /// Among confirmed paths, the one with the fewest errors (the primary on a tie).
    fn least_failed_path(&self) -> PathId {
        let mut best = if self.pid_fits(self.primary) {
            self.primary
        } else {
            PathId(0)
        };
        let mut errors = self.paths[best.0 as usize].error_count;
        // A forbidden primary does not count: the least-failed path must be one data may use.
        if self.paths[best.0 as usize].forbidden {
            errors = u32::MAX;
        }
        for p in &self.paths {
            if p.confirmed && !p.forbidden && self.pid_fits(p.id) && p.error_count < errors {
                best = p.id;
                errors = p.error_count;
            }
        }
        best
    }

    /// Where new data goes without CMT: the primary, or the cheapest active alternate
    /// (application cost, then the lower id) while the primary is not usable (failover,
    /// RFC 9260 §6.4.1).
    pub(crate) fn single_data_path(&self) -> PathId {
        if self.usable_for_data(self.primary) {
            return self.primary;
        }
        self.paths
            .iter()
            .filter(|p| p.state == PathState::Active && self.usable_for_data(p.id))
            .min_by_key(|p| (p.cost, p.id))
            .or_else(|| {
                self.paths
                    .iter()
                    .find(|p| p.state == PathState::Active && !p.forbidden)
            })
            .map_or_else(|| self.least_failed_path(), |p| p.id)
    }

    /// The path a chunk lost on `from` is retransmitted on, by the configured policy
    /// (Iyengar et al. §4.3; RFC 9260 §6.4). Ties go to an alternate path, as §6.4
    /// suggests for retransmissions.
    pub(crate) fn rtx_path(&self, from: PathId) -> PathId {
        let policy = self.cfg.rtx_policy;
        let from_allowed = !self.paths[from.0 as usize].forbidden;
        if self.paths.len() == 1 || (policy == RtxPolicy::Same && from_allowed) {
            return from;
        }
        let mut best: Option<(f64, PathId)> = None;
        // LS-SCTP: a path whose probe copy is unanswered is not where a retransmission
        // should wait (Abd El Al et al. §4.3), while another path can take it.
        let probed = |p: &Path| p.psn.probe.is_some() || p.psn.copy_of.is_some();
        let others_free = self
            .paths
            .iter()
            .any(|p| p.id != from && self.usable_for_data(p.id) && !probed(p));
        // Multipath: a path the peer's window cannot cover for new data (Eq. (1)) would hold
        // the cumulative ack back for its RTT with a retransmission as well, while another
        // path can take it.
        let uncovered = |p: &Path| !self.within_window_cover(p.id) && self.usable_for_data(p.id);
        let covered_exists = self
            .paths
            .iter()
            .any(|p| self.usable_for_data(p.id) && !uncovered(p));
        for p in self.paths.iter().filter(|p| {
            self.usable_for_data(p.id)
                && !(others_free && probed(p))
                && !(covered_exists && uncovered(p))
        }) {
            let sc = rtx_score(policy, p);
            let better = match best {
                None => true,
                Some((b, id)) => sc > b || (sc == b && id == from && p.id != from),
            };
            if better {
                best = Some((sc, p.id));
            }
        }
        best.map_or(from, |(_, id)| id)
    }

    /// A path became active again: retransmissions that wait on a path no longer usable
    /// for data (chosen while every path had failed) move to one that is (RFC 9260 §6.4.1).
    pub(crate) fn retarget_stranded(&mut self) {
        if self.tx.tally.marked == 0 || self.paths.len() == 1 {
            return;
        }
        for from in 0..self.paths.len() {
            let id = PathId(from as u16);
            if self.paths[from].rtx_marked.is_empty() || self.usable_for_data(id) {
                continue;
            }
            let to = self.rtx_path(id);
            self.move_marked(id, to);
        }
    }

    /// Every chunk waiting for retransmission on `from` waits for `to` instead.
    pub(crate) fn move_marked(&mut self, from: PathId, to: PathId) {
        let marked: Vec<u64> = self.paths[from.0 as usize].rtx_marked.iter().collect();
        for seq in marked {
            let i = self
                .tx
                .index_of_seq(seq)
                .expect("listed chunk is outstanding");
            let tx = &mut self.tx;
            tx.outstanding[i].retarget(to, &mut self.paths, &mut tx.tally);
        }
    }

    /// Where a lone SACK goes under CMT, by `policy`; `None`: that path is not usable and
    /// the RFC's choice applies (the last DATA's path, or the data path).
    fn cmt_sack_path(&self, policy: crate::config::SackPath) -> Option<PathId> {
        use crate::config::SackPath;
        let usable = |id: PathId| {
            let p = &self.paths[id.0 as usize];
            (p.state == PathState::Active && p.confirmed).then_some(id)
        };
        match policy {
            SackPath::Quickest => {
                // A SACK covers data of every path: the quickest of the paths DATA came in
                // on since the last SACK returns it soonest and follows a failover
                // (draft-tuexen-tsvwg-sctp-multipath allows any destination).
                let fresh = self.sack_paths;
                if fresh == 0
                    && let Some(p) = usable(self.last_data_path)
                {
                    // A window update (no DATA since the last SACK) goes where DATA last came
                    // from, a path known to work: the quickest may have been cut since.
                    return Some(p);
                }
                self.paths
                    .iter()
                    .filter(|p| p.state == PathState::Active && p.confirmed)
                    .filter(|p| fresh == 0 || (p.id.0 < 64 && fresh & (1 << p.id.0) != 0))
                    .min_by_key(|p| p.rtt.srtt().unwrap_or(std::time::Duration::MAX))
                    .map(|p| p.id)
            }
            SackPath::FirstData => self.first_data_path.and_then(usable),
            SackPath::LastData => usable(self.last_data_path),
            SackPath::Primary => usable(self.primary),
        }
    }

    /// The path of the next packet when no control chunk dictates it: the paths with DATA
    /// to send in turn, each until it has no more room (under CMT every usable path;
    /// otherwise the primary or its failover, plus paths holding retransmissions). A lone
    /// SACK goes to the quickest active path under CMT, else where the last DATA came from
    /// (RFC 9260 §6.4).
    pub(crate) fn choose_path(&mut self) -> PathId {
        let n = self.paths.len();
        if n == 1 || matches!(self.state, State::CookieWait | State::CookieEchoed) {
            return self.primary;
        }
        if let Some(p) = self.tx.pinned_path()
            && (!self.new_data_allowed_on(p)
                || {
                    let psn = &self.paths[p.0 as usize].psn;
                    psn.probe.is_some() || psn.copy_of.is_some()
                }
                || self.pin_holds_an_unlike_path(p))
        {
            // A message's fragments stay on one path (Abd El Al et al. §4.5) unless it can no longer
            // carry them (failed, or probed by a copy after a timeout and closed to new data
            // until the copy is acknowledged) or it holds back a path unlike it.
            self.tx.unpin();
        }
        // Retransmissions first (RFC 9260 §6.1 C): a path holding one it may send now is
        // chosen over the path in turn, which may be stuck behind a closed peer window.
        if self.tx.tally.marked > 0
            && let Some(i) = (0..n).find(|&i| {
                let id = PathId(i as u16);
                self.may_retransmit_on(id) && self.rtx_waiting_on(id)
            })
        {
            self.path_sched.on_turn(PathId(i as u16));
            return PathId(i as u16);
        }
        // New data: the scheduler's choice among the paths that could send a packet now.
        let mut views = std::mem::take(&mut self.path_views);
        views.clear();
        views.extend(self.paths.iter().map(|p| self.path_view(p)));
        // `ready` asks the association, which asks the scheduler's kind: a stand-in answers.
        let stand_in = self.path_sched.stand_in();
        let mut sched = std::mem::replace(&mut self.path_sched, stand_in);
        let next = sched.next(&views, &mut |id| self.has_data_to_send(id));
        self.path_sched = sched;
        self.path_views = views;
        if let Some(p) = next {
            return p;
        }
        if let Some(cmt) = self.multipath_cfg()
            && let Some(p) = self.cmt_sack_path(cmt.sack_path)
        {
            return p;
        }
        if self.paths[self.last_data_path.0 as usize].state == PathState::Active {
            self.last_data_path
        } else {
            self.single_data_path()
        }
    }
}
