//! Putting DATA into a packet (RFC 9260 §6.1): retransmissions first, then new data as the
//! congestion window, the peer's window, Max.Burst and buffer splitting allow.

use super::queue::Next;
use super::sent::{ChunkState, Mark, data_chunk_size};
use crate::association::{Association, State};
use crate::cc::Controller;
use crate::path::{PathId, PathState};
use crate::sched::{PathView, SchedulerKind};
use crate::time::Instant;
use crate::timer::Timer;

/// SACKs with more gap blocks than this lengthen the send run (see `adapt_send_run`).
const RUN_GROW_BLOCKS: usize = 32;
/// SACKs with fewer gap blocks than this shorten it.
const RUN_SHRINK_BLOCKS: usize = 8;

impl Association {
    /// Refreshes what the scheduler sees of the paths (only disciplines that look at them),
    /// and fills the pacers.
    pub(crate) fn refresh_path_views(&mut self, now: Instant) {
        if self.cfg.pacing {
            self.refill_pacers(now);
        }
        self.note_limits(now);
        self.views.clear();
        if !matches!(
            self.tx.sched.kind(),
            SchedulerKind::Fixed | SchedulerKind::Adaptive
        ) {
            return;
        }
        self.views.extend(self.paths.iter().map(|p| PathView {
            usable: p.state == PathState::Active,
            cwnd: p.cc.window(),
            srtt: p.rtt.srtt(),
        }));
        self.tx.sched.on_paths(now, &self.views);
    }

    /// Fills every path's pacer up to `now`; a path with new DATA waiting only for its pacer
    /// gets the pacing timer for when it may send.
    fn refill_pacers(&mut self, now: Instant) {
        let unsent = self.tx.has_unsent();
        for p in self.paths.iter_mut().filter(|p| !p.removed) {
            let (cwnd, ssthresh) = (p.cc.window(), p.cc.ssthresh());
            p.pacer
                .refill(now, cwnd, p.rtt.srtt(), p.mtu, cwnd <= ssthresh);
            let wait = if unsent && p.flight_size < cwnd {
                p.pacer.next_ready(now, p.mtu)
            } else {
                None
            };
            self.timers.set(Timer::Pacing(p.id), wait);
        }
    }

    /// Records, per data path, what holds its new data back now (`PathStats::limited`).
    fn note_limits(&mut self, now: Instant) {
        use crate::path::Limit;
        let unsent = self.tx.has_unsent();
        let flight = self.tx.flight_total(&self.paths);
        for i in 0..self.paths.len() {
            let id = PathId(i as u16);
            // Usable, but the peer's window does not cover its RTT (LS-SCTP, Eq. (1)).
            // The rule's own test first: off (CMT's default), it answers at once.
            let uncovered = !self.within_window_cover(id)
                && self.usable_for_data(id)
                && self.within_path_cap(id);
            let limit = if !self.may_send_new_data() {
                None
            } else if uncovered {
                Some(Limit::Share)
            } else if !self.new_data_allowed_on(id) {
                None
            } else if !unsent {
                Some(if self.tx.want_writable {
                    Limit::SendBuffer
                } else {
                    Limit::Application
                })
            } else {
                let p = &self.paths[i];
                // Held below a window it would fill: the window is in use all the same.
                let held =
                    p.flight_size < p.cc.window() && (!self.run_room(id) || !self.paced_ok(id));
                if held {
                    self.paths[i].window_held = true;
                }
                let p = &self.paths[i];
                if p.flight_size >= p.cc.window() || held {
                    Some(Limit::Cwnd)
                } else if flight > 0 && self.tx.peer_rwnd < p.mtu {
                    Some(Limit::PeerWindow)
                } else if !self.window_share_allows(id) {
                    Some(Limit::Share)
                } else {
                    None
                }
            };
            self.paths[i].set_limit(now, limit);
        }
    }

    /// Whether the pacer lets `path` send a packet of new DATA now.
    fn paced_ok(&self, path: PathId) -> bool {
        let p = &self.paths[path.0 as usize];
        !self.cfg.pacing || p.pacer.ready(p.mtu)
    }

    /// Whether new DATA may be sent in this state (RFC 9260 §9.2: not after SHUTDOWN).
    pub(crate) fn may_send_new_data(&self) -> bool {
        matches!(
            self.state,
            State::Established | State::ShutdownPending | State::ShutdownReceived
        )
    }

    /// A SACK or T3 opens a new burst on every path (RFC 9260 §6.1: Max.Burst).
    pub(crate) fn reset_burst(&mut self) {
        let b = self.cfg.max_burst;
        for p in &mut self.paths {
            p.burst_budget = b;
        }
    }

    /// Whether a chunk marked for retransmission is waiting for `path`.
    pub(crate) fn rtx_waiting_on(&self, path: PathId) -> bool {
        !self.paths[path.0 as usize].rtx_marked.is_empty()
    }

    /// Whether `path` may send a retransmission now: cwnd room, or the one packet after a
    /// fast retransmit that may ignore cwnd (§7.2.4 step 3).
    pub(crate) fn may_retransmit_on(&self, path: PathId) -> bool {
        let p = &self.paths[path.0 as usize];
        p.flight_size < p.cc.window() || p.rtx_cwnd_exempt
    }

    /// Whether the chunk that holds the cumulative ack back waits for retransmission on
    /// another path with no cwnd room while `path` has room and nothing of its own to
    /// retransmit. RFC 9260 §6.1 rule C puts retransmissions before new data; under CMT a
    /// path could otherwise send new data the peer cannot deliver while the hole waits.
    pub(crate) fn stranded_head_for(&self, path: PathId) -> bool {
        let cmt = self.multipath_active();
        if self.tx.tally.marked == 0 || !cmt || self.ls() {
            return false;
        }
        let Some(head) = self.tx.outstanding.front() else {
            return false;
        };
        matches!(head.state, ChunkState::Marked(_))
            && head.path != path
            && !self.may_retransmit_on(head.path)
            && !self.rtx_waiting_on(path)
            && self.may_retransmit_on(path)
            && self.usable_for_data(path)
            && !self.paths[path.0 as usize].forbidden
    }

    /// Moves the chunk holding the cumulative ack back to `path` (see
    /// [`Self::stranded_head_for`]).
    fn take_stranded_head(&mut self, path: PathId) {
        let tx = &mut self.tx;
        if let Some(head) = tx.outstanding.front_mut() {
            head.retarget(path, &mut self.paths, &mut tx.tally);
        }
    }

    /// Whether `poll_transmit` has DATA it could put on `path` now.
    pub(crate) fn has_data_to_send(&self, path: PathId) -> bool {
        let p = &self.paths[path.0 as usize];
        if p.psn.copy_of.is_some() {
            return true;
        }
        if self.stranded_head_for(path) {
            return true;
        }
        let rtx_here = self.rtx_waiting_on(path);
        // Chunks wait on a forbidden path only when no other path may take them.
        if rtx_here && self.may_retransmit_on(path) && !p.forbidden {
            return true;
        }
        !rtx_here && self.room_for_new_data(path) && self.tx.peek_len(path, &self.views).is_some()
    }

    /// Whether `path` may take new data now, were there any for it (a message pinned to
    /// another path aside).
    pub(crate) fn room_for_new_data(&self, path: PathId) -> bool {
        let p = &self.paths[path.0 as usize];
        // A tail loss probe (RFC 8985 §7.3) is one packet regardless of cwnd and bursts.
        let probe = self.rack.probe_new(path);
        self.may_send_new_data()
            && self.tx.has_unsent()
            && (probe
                || (p.burst_budget > 0
                    && p.flight_size < p.cc.window()
                    && self.run_room(path)
                    && self.paced_ok(path)))
            && p.psn.probe.is_none()
            && (!self.ls() || p.psn.has_room())
            && self.new_data_allowed_on(path)
            && self.buffer_split_allows(path)
            && self.window_share_allows(path)
    }

    /// The send run follows the gap blocks SACKs carry: it doubles while they carry more
    /// than `RUN_GROW_BLOCKS` (paths interleave too finely for the reordering between
    /// them) and halves below `RUN_SHRINK_BLOCKS`, within 1..=`CmtConfig::send_run`.
    pub(crate) fn adapt_send_run(&mut self, blocks: usize) {
        let Some(cmt) = self.cfg.cmt else { return };
        let next = if blocks > RUN_GROW_BLOCKS {
            self.send_run.saturating_mul(2)
        } else if blocks < RUN_SHRINK_BLOCKS {
            self.send_run / 2
        } else {
            self.send_run
        };
        self.send_run = next.clamp(1, cmt.send_run.max(1));
    }

    /// The run of new data `path` sends in (see `CmtConfig::send_run`): 0 or 1 is none.
    fn run_packets(&self, path: PathId) -> u32 {
        // Off by default: runs before any per-path work on every packet and poll.
        // LS-SCTP acknowledges per path (LS-SACKs): interleaving costs no gap blocks.
        if self.send_run <= 1 || self.ls() || self.live_path_count() == 1 || self.cfg.cmt.is_none()
        {
            return 0;
        }
        let p = &self.paths[path.0 as usize];
        // An eighth of cwnd: a run never waits for much of the window.
        u32::from(self.send_run).min((p.cc.window() / 8 / p.mtu.max(1)) as u32)
    }

    /// Whether `path` may send new data as far as runs go: in a run, or room for a whole
    /// one, or nothing in flight there, or less data queued than a run.
    fn run_room(&self, path: PathId) -> bool {
        let run = self.run_packets(path) as usize;
        if run <= 1 {
            return true;
        }
        let p = &self.paths[path.0 as usize];
        let r = run * p.mtu;
        p.run_left > 0
            || p.flight_size == 0
            || p.flight_size + r <= p.cc.window()
            || self.tx.queued_bytes() < r
    }

    /// Buffer splitting (Dreibholz et al., GLOBECOM 2010): a path may hold at most 1/n of
    /// the send buffer and of the peer's receive window.
    fn buffer_split_allows(&self, path: PathId) -> bool {
        use crate::config::BufferSplitting;
        let Some(cmt) = self.multipath_cfg() else {
            return true;
        };
        let split = cmt.buffer_splitting;
        if split == BufferSplitting::None {
            return true;
        }
        let n = self
            .paths
            .iter()
            .filter(|p| p.state == PathState::Active)
            .count()
            .max(1);
        let held = self.paths[path.0 as usize].buffered;
        let send_ok = !matches!(split, BufferSplitting::Send | BufferSplitting::Both)
            || held < self.bufs.send_limit_now() / n;
        let window = match cmt.receive_split {
            crate::config::ReceiveSplit::InitialWindow => self.tx.peer_rwnd_initial,
            // INET: the window the peer last advertised, rwnd + bytes in flight.
            crate::config::ReceiveSplit::CurrentWindow => {
                self.tx.peer_rwnd + self.tx.flight_total(&self.paths)
            }
        };
        let recv_ok =
            !matches!(split, BufferSplitting::Receive | BufferSplitting::Both) || held < window / n;
        send_ok && recv_ok
    }

    /// LS-SCTP (Abd El Al et al. §4.3): under cwnd/RTT path assignment a path may hold at most its
    /// bandwidth estimate's share of the peer's window, so that a path whose window grew
    /// while another failed does not keep the receive buffer from it once it is back.
    fn window_share_allows(&self, path: PathId) -> bool {
        if !self.cfg.ls_window_share || !self.shares_window() || self.live_path_count() == 1 {
            return true;
        }
        let (mut total, mut open) = (0.0, 0usize);
        for p in &self.paths {
            if self.new_data_allowed_on(p.id) {
                total += self.bandwidth_estimate(p);
                open += 1;
            }
        }
        let p = &self.paths[path.0 as usize];
        let mine = self.bandwidth_estimate(p);
        if total <= 0.0 || mine >= total {
            return true;
        }
        let window = self.peer_window() as f64;
        // A path may fill its own cwnd up to an equal split of the window: its estimate is
        // cwnd/RTT and cwnd grows only when full (RFC 9260 §7.2.1), so a share below cwnd
        // would hold a slow path at its initial window for good.
        let even = window / open.max(1) as f64;
        let floor = (p.cc.window() as f64).min(even).max(2.0 * p.mtu as f64);
        let share = (window * mine / total).max(floor);
        (p.buffered as f64) < share
    }

    /// Appends DATA chunks (retransmissions first) to the packet being built on `path`,
    /// within `room` bytes. Returns whether any was written.
    pub(crate) fn write_data(
        &mut self,
        now: Instant,
        path: PathId,
        buf: &mut Vec<u8>,
        room: &mut usize,
    ) -> bool {
        // LS-SCTP timeout handling: the copy probing this path goes first (Abd El Al et al. §4.3).
        let probe = self.write_probe_copy(now, path, buf, room);
        if self.stranded_head_for(path) {
            self.take_stranded_head(path);
        }
        // Retransmissions have priority (RFC 9260 §6.1 rule C, §7.2.4 step 3).
        let (mut wrote, rtx_left) = self.write_retransmissions(now, path, buf, room);
        wrote |= probe;
        let mut new_data = false;
        let probe = self.rack.probe_new(path);
        // New data: cwnd, rwnd and Max.Burst permitting, and no retransmission waiting here.
        if !rtx_left
            && self.may_send_new_data()
            && (probe || (self.paths[path.0 as usize].burst_budget > 0 && self.paced_ok(path)))
            && self.paths[path.0 as usize].psn.probe.is_none()
            && self.new_data_allowed_on(path)
        {
            new_data = self.write_new_data(now, path, buf, room);
            wrote |= new_data;
        }
        let run = self.run_packets(path);
        let p = &mut self.paths[path.0 as usize];
        if new_data {
            p.burst_budget = p.burst_budget.saturating_sub(1);
            if p.run_left > 0 {
                p.run_left -= 1;
            } else if run > 1 {
                // A run starts; Max.Burst still bounds each burst of it (RFC 9260 §6.1 D).
                p.run_left = run - 1;
            }
            self.tx.sched.on_packet_end();
        }
        if wrote {
            if new_data {
                // Only chunks that can time a round trip make a path non-idle (§8.3).
                p.last_data_sent = now;
            }
            // R1: start T3-rtx if it is not running (RFC 9260 §6.3.2).
            if !self.timers.is_running(Timer::T3(path)) {
                self.timers.set(Timer::T3(path), Some(now + p.rtt.rto()));
            }
        }
        // The probe's exemption covers one packet, used or not (RFC 8985 §7.3).
        self.rack.path_mut(path).probe_new = false;
        if wrote {
            self.rack_arm_pto(now, path);
        }
        super::sent::check_tally(&self.tx.outstanding, &self.tx.tally, &self.paths);
        wrote
    }

    /// Bytes of DATA (or LS-DATA, I-DATA) chunk header.
    pub(crate) fn data_header_len(&self) -> usize {
        if self.ls() {
            braid_wire::chunk::LS_DATA_HEADER_LEN
        } else if self.idata() {
            braid_wire::chunk::I_DATA_HEADER_LEN
        } else {
            braid_wire::chunk::DATA_HEADER_LEN
        }
    }

    /// LS-SCTP timeout handling (Abd El Al et al. §4.3): a copy of a chunk that timed out on `path`
    /// and was retransmitted elsewhere probes `path`, with a PSN of its own; the chunk's
    /// state does not change. Returns whether it was written.
    fn write_probe_copy(
        &mut self,
        now: Instant,
        path: PathId,
        buf: &mut Vec<u8>,
        room: &mut usize,
    ) -> bool {
        let pi = path.0 as usize;
        let Some(seq) = self.paths[pi].psn.copy_of else {
            return false;
        };
        let header = self.data_header_len();
        let Some(i) = self.tx.index_of_seq(seq) else {
            self.paths[pi].psn.copy_of = None;
            return false;
        };
        let s = &self.tx.outstanding[i];
        if !matches!(s.state, ChunkState::InFlight | ChunkState::Marked(_)) {
            // Acknowledged meanwhile: nothing left to copy; the path may carry data again.
            self.paths[pi].psn.copy_of = None;
            return false;
        }
        if data_chunk_size(header, s.data.len()) > *room {
            return false;
        }
        let psn = self.paths[pi].psn.take();
        let pid = self.ls_pid(path);
        // The copy carries the probe's PSN; the chunk keeps the one of its own transmission.
        let s = &mut self.tx.outstanding[i];
        let own = std::mem::replace(&mut s.psn, psn);
        let before = buf.len();
        s.encode(pid, self.features.idata, buf);
        s.psn = own;
        *room = room.saturating_sub(buf.len() - before);
        let p = &mut self.paths[pi];
        p.psn.copy_of = None;
        p.psn.probe = Some(psn);
        p.last_data_sent = now;
        p.stats.retransmissions += 1;
        if !self.timers.is_running(Timer::T3(path)) {
            self.timers.set(Timer::T3(path), Some(now + p.rtt.rto()));
        }
        true
    }

    /// The chunks marked for retransmission on `path`, in TSN order, while cwnd (or the
    /// fast-retransmit exemption) and `room` allow. Returns (wrote any, some still wait
    /// here).
    fn write_retransmissions(
        &mut self,
        now: Instant,
        path: PathId,
        buf: &mut Vec<u8>,
        room: &mut usize,
    ) -> (bool, bool) {
        let pi = path.0 as usize;
        if self.tx.tally.marked == 0 {
            return (false, false);
        }
        let exempt = self.paths[pi].rtx_cwnd_exempt;
        let rbit = self.sends_retransmit_bit();
        let full_room = self.paths[pi].mtu - braid_wire::COMMON_HEADER_LEN - self.tx_ts_len();
        let mut wrote = false;
        let mut rtx_left = false;
        let mut after = None;
        loop {
            let next = match after {
                None => self.paths[pi].rtx_marked.first(),
                Some(a) => self.paths[pi].rtx_marked.next_after(a),
            };
            let Some(seq) = next else { break };
            after = Some(seq);
            let i = self
                .tx
                .index_of_seq(seq)
                .expect("listed chunk is outstanding");
            rtx_left = true;
            let p = &self.paths[pi];
            if p.flight_size >= p.cc.window() && !exempt {
                break;
            }
            let s = &self.tx.outstanding[i];
            let size = data_chunk_size(self.data_header_len(), s.data.len());
            // A chunk cut for a larger PMTU than the path has now keeps its TSN and size: it
            // goes alone in a packet and IP fragments it (RFC 9260 §7.3).
            let alone = !wrote && *room == full_room;
            if size > *room && !alone {
                break;
            }
            if self.features.pr_sctp && s.expires.is_some_and(|e| now >= e) {
                self.abandon_message_at(i);
                continue;
            }
            rtx_left = false;
            let ls_pid = self.ls_pid(path);
            let s = &mut self.tx.outstanding[i];
            // Ladha et al. Fig. 6: a retransmission after a fast retransmit or timeout belongs to
            // the loss-recovery episode of the path it was lost on.
            let lost_on = matches!(s.state, ChunkState::Marked(Mark::Fast | Mark::Timeout))
                .then_some((s.sent_on, s.state == ChunkState::Marked(Mark::Fast)));
            s.retransmitted_on(path, &mut self.paths, &mut self.tx.tally);
            s.tx_count = s.tx_count.saturating_add(1);
            s.xmit = self.tx.next_xmit;
            self.tx.next_xmit += 1;
            self.rack.order.on_sent(path, false, s.xmit, s.seq);
            s.sent_at = now;
            s.epoch = self.paths[pi].fail_epoch;
            s.misses = 0;
            if ls_pid.is_some() {
                // A retransmission gets a PSN of the path it goes on (Abd El Al et al. §4.3).
                s.psn = self.paths[pi].psn.take_for(s.seq);
            }
            let at = buf.len();
            s.encode(ls_pid, self.features.idata, buf);
            let tsn = s.tsn;
            if rbit {
                // Fig. 6 rule (a): every retransmission carries the retransmit bit.
                buf[at + 1] |= braid_wire::chunk::DATA_FLAG_RETRANSMIT;
            }
            if let Some((lost_on, fast)) = lost_on {
                self.spurious_on_retransmit(lost_on, tsn, self.tx_ts, fast);
            }
            *room = room.saturating_sub(size);
            wrote = true;
            let p = &mut self.paths[pi];
            p.stats.retransmissions += 1;
            // Karn's rule: a retransmitted chunk never times a round trip (§6.3.1 C5).
            if p.rtt_probe.is_some_and(|(t, _)| t == tsn) {
                p.rtt_probe = None;
            }
        }
        // §7.2.4 step 3: the cwnd exemption covers one packet; it stays for the next packet
        // when this one had no room left for a retransmission (a full-size SACK came first).
        if wrote || *room == full_room {
            self.paths[pi].rtx_cwnd_exempt = false;
        }
        if self.live_path_count() == 1 || !rtx_left {
            rtx_left = self.rtx_waiting_on(path);
        }
        (wrote, rtx_left)
    }

    /// New chunks from the stream queues while cwnd, the peer's window, buffer splitting and
    /// `room` allow. Returns whether any was written.
    fn write_new_data(
        &mut self,
        now: Instant,
        path: PathId,
        buf: &mut Vec<u8>,
        room: &mut usize,
    ) -> bool {
        let pi = path.0 as usize;
        let header = self.data_header_len();
        let ls_pid = self.ls_pid(path);
        let pin = self.shares_window();
        let max_payload =
            self.paths[pi].mtu - braid_wire::COMMON_HEADER_LEN - header - self.tx_ts_len();
        let mut wrote = false;
        let probe = self.rack.probe_new(path);
        while let Some(next) = self.tx.peek_len(path, &self.views) {
            let p = &self.paths[pi];
            if (p.flight_size >= p.cc.window() && !probe)
                || !self.buffer_split_allows(path)
                || !self.window_share_allows(path)
                || (ls_pid.is_some() && !p.psn.has_room())
            {
                break;
            }
            let mut cut = max_payload;
            if data_chunk_size(header, next.min(max_payload)) > *room {
                // A message that is fragmented anyway fills the rest of this packet.
                let avail = room.saturating_sub(header) & !3;
                if next > max_payload && avail >= 512 {
                    cut = avail;
                } else {
                    break;
                }
            }
            let len = next.min(cut);
            // Zero-window probe: one chunk may be in flight whatever rwnd says (§6.1 A).
            let flight = self.tx.flight_total(&self.paths);
            if len > self.tx.peer_rwnd && flight > 0 {
                break;
            }
            let mut sent = match self.tx.next_chunk(cut, now, path, &self.views, pin) {
                None => break,
                Some(Next::Dropped) => {
                    self.stats.abandoned_messages += 1;
                    continue;
                }
                Some(Next::RestDropped) => continue,
                Some(Next::Chunk(sent)) => sent,
            };
            sent.epoch = self.paths[pi].fail_epoch;
            self.rack.order.on_sent(path, true, sent.xmit, sent.seq);
            if sent.beginning && self.trace.enabled() {
                let (stream, tsn) = (sent.stream, sent.tsn);
                let ev = crate::TraceEvent::StreamScheduled { stream, path, tsn };
                self.trace.record(now, ev);
            }
            if ls_pid.is_some() {
                sent.psn = self.paths[pi].psn.take_for(sent.seq);
            }
            sent.encode(ls_pid, self.features.idata, buf);
            *room -= data_chunk_size(header, sent.data.len());
            let len = sent.data.len();
            self.note_assigned(path, len);
            self.tx.peer_rwnd = self.tx.peer_rwnd.saturating_sub(len);
            self.tx.tally.enter(&sent, &mut self.paths);
            let p = &mut self.paths[pi];
            p.buffered += len;
            p.stats.data_chunks_sent += 1;
            if p.rtt_probe.is_none() {
                p.rtt_probe = Some((sent.tsn, now));
            }
            self.tx.outstanding.push_back(sent);
            wrote = true;
            if self.tx.peer_rwnd == 0 {
                break;
            }
        }
        wrote
    }
}
