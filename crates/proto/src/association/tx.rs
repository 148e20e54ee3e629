//! The send side: stream queues, TSN assignment at transmit time, the retransmission queue,
//! SACK processing with congestion control (RFC 9260 §6.1–§6.3, §7.2) and PR-SCTP
//! abandonment (RFC 3758 §3.5).

use std::collections::VecDeque;
use std::time::Duration;

use braid_wire::chunk::{ForwardTsn, ForwardTsnStream, GapAckBlock};
use braid_wire::{Chunk, ErrorCause};
use bytes::Bytes;

use super::{Association, State};
use crate::cc::{CcPathView, CongestionControl, Controller, Ctx};
use crate::event::{CloseReason, Event};
use crate::path::{PathId, PathState};
use crate::sched::{PathView, Scheduler, SchedulerKind};
use crate::serial::{tsn_ge, tsn_gt, tsn_le, tsn_lt};
use crate::time::Instant;

/// Options of one message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendOptions {
    /// Payload protocol identifier, opaque to SCTP.
    pub ppid: u32,
    /// Deliver without regard to the stream order.
    pub unordered: bool,
    /// PR-SCTP timed reliability (RFC 3758 §4.1): give up on the message this long after
    /// `send`. Ignored (fully reliable) if the peer does not support PR-SCTP.
    pub lifetime: Option<Duration>,
    /// Ask the receiver to SACK at once (the I bit of RFC 7053).
    pub immediate: bool,
}

/// A message waiting for (more of) its TSNs.
#[derive(Debug)]
struct OutMessage {
    data: Bytes,
    opts: SendOptions,
    /// Bytes already put in DATA chunks.
    offset: usize,
    /// SSN, assigned when the first fragment leaves.
    ssn: u16,
    expires: Option<Instant>,
}

#[derive(Debug, Default)]
struct OutStream {
    queue: VecDeque<OutMessage>,
    next_ssn: u16,
    /// Bytes queued or sent and not yet acknowledged.
    buffered: usize,
    /// Whether the buffer-low event may fire (it went above the threshold since).
    low_armed: bool,
}

/// A DATA chunk with a TSN, kept until cumulatively acknowledged or abandoned.
#[derive(Debug)]
pub(super) struct Sent {
    pub(super) tsn: u32,
    pub(super) stream: u16,
    pub(super) ssn: u16,
    pub(super) ppid: u32,
    pub(super) unordered: bool,
    pub(super) beginning: bool,
    pub(super) ending: bool,
    pub(super) immediate: bool,
    pub(super) data: Bytes,
    pub(super) path: PathId,
    pub(super) tx_count: u16,
    /// Reported in a gap ack block (renegable, RFC 9260 §6.2.1).
    pub(super) acked: bool,
    /// Counted in its path's flight size.
    pub(super) in_flight: bool,
    /// Marked for retransmission (fast or T3).
    pub(super) retransmit: bool,
    /// Miss indications (RFC 9260 §7.2.4).
    pub(super) misses: u8,
    /// Already fast-retransmitted once (it may not be again).
    pub(super) fast_retransmitted: bool,
    /// Given up under PR-SCTP.
    pub(super) abandoned: bool,
    /// Freed by an NR-SACK (its payload is gone).
    pub(super) nr_acked: bool,
    /// Its path's failure epoch when it was last sent (see `Path::fail_epoch`).
    pub(super) epoch: u16,
    pub(super) expires: Option<Instant>,
}

/// Everything the sender keeps.
#[derive(Debug)]
pub(super) struct SendQueue {
    streams: Vec<OutStream>,
    /// Chooses the stream of each new message.
    pub(super) sched: Scheduler,
    /// Stream whose head message is partly sent (DATA fragments must be consecutive).
    current: Option<u16>,
    queued_bytes: usize,
    pub(super) next_tsn: u32,
    /// Cumulative TSN ack point: every TSN up to it is acknowledged.
    pub(super) cum_ack: u32,
    /// TSNs cum_ack+1 .. next_tsn-1, in order.
    pub(super) outstanding: VecDeque<Sent>,
    /// Bytes of `outstanding` not acknowledged cumulatively nor abandoned.
    outstanding_bytes: usize,
    /// Chunks marked for retransmission.
    pub(super) rtx_pending: usize,
    /// Chunks in `outstanding` with `acked` set.
    gap_acked: usize,
    /// TSN ranges the last SACK's gap blocks acknowledged (to find what is new in the next).
    pub(super) acked_ranges: Vec<(u32, u32)>,
    /// TSN ranges the last NR-SACK's non-renegable blocks covered.
    pub(super) nr_acked_ranges: Vec<(u32, u32)>,
    /// Peer's receive window as last computed (RFC 9260 §6.2.1).
    pub(super) peer_rwnd: usize,
    /// The a_rwnd of the peer's INIT/INIT-ACK: its receive buffer (buffer splitting).
    pub(super) peer_rwnd_initial: usize,
    /// `send` returned WouldBlock: fire Writable when room appears.
    pub(super) want_writable: bool,
    /// PR-SCTP Advanced.Peer.Ack.Point (RFC 3758 §3.5).
    pub(super) adv_peer_ack: u32,
    /// A FORWARD-TSN should be sent.
    pub(super) forward_tsn_pending: bool,
    /// Threshold of the per-stream buffer-low event.
    low_threshold: usize,
}

impl SendQueue {
    pub(super) fn new(streams: u16, sched: Scheduler) -> Self {
        Self {
            streams: (0..streams).map(|_| OutStream::default()).collect(),
            sched,
            current: None,
            queued_bytes: 0,
            next_tsn: 0,
            cum_ack: 0,
            outstanding: VecDeque::new(),
            outstanding_bytes: 0,
            rtx_pending: 0,
            gap_acked: 0,
            acked_ranges: Vec::new(),
            nr_acked_ranges: Vec::new(),
            peer_rwnd: 0,
            peer_rwnd_initial: 0,
            want_writable: false,
            adv_peer_ack: 0,
            forward_tsn_pending: false,
            low_threshold: 0,
        }
    }

    /// Sets the first TSN and the negotiated stream count (after the handshake).
    pub(super) fn start(&mut self, initial_tsn: u32, streams: u16, peer_rwnd: usize, low: usize) {
        self.next_tsn = initial_tsn;
        self.cum_ack = initial_tsn.wrapping_sub(1);
        self.adv_peer_ack = self.cum_ack;
        self.peer_rwnd = peer_rwnd;
        self.peer_rwnd_initial = peer_rwnd;
        self.low_threshold = low;
        // Messages queued before the handshake on streams the peer refused are dropped
        // from the buffer accounting with their stream.
        while self.streams.len() > streams as usize {
            if let Some(s) = self.streams.pop() {
                self.queued_bytes -= s
                    .queue
                    .iter()
                    .map(|m| m.data.len() - m.offset)
                    .sum::<usize>();
            }
        }
        self.streams
            .resize_with(streams as usize, OutStream::default);
        self.sched.retain_below(streams);
    }

    pub(super) fn stream_count(&self) -> u16 {
        self.streams.len() as u16
    }

    pub(super) fn buffered_bytes(&self) -> usize {
        self.queued_bytes + self.outstanding_bytes
    }

    pub(super) fn stream_buffered(&self, stream: u16) -> Option<(usize, usize)> {
        self.streams
            .get(stream as usize)
            .map(|s| (s.buffered, s.queue.len()))
    }

    pub(super) fn has_unsent(&self) -> bool {
        self.queued_bytes > 0
    }

    /// Nothing queued, nothing outstanding.
    pub(super) fn is_empty(&self) -> bool {
        self.queued_bytes == 0 && self.outstanding.is_empty()
    }

    pub(super) fn push(
        &mut self,
        stream: u16,
        data: Bytes,
        opts: SendOptions,
        expires: Option<Instant>,
    ) {
        let s = &mut self.streams[stream as usize];
        let len = data.len();
        let was_idle = s.queue.is_empty() && self.current != Some(stream);
        self.sched.on_push(stream, len, was_idle);
        s.queue.push_back(OutMessage {
            data,
            opts,
            offset: 0,
            ssn: 0,
            expires,
        });
        s.buffered += len;
        if s.buffered > self.low_threshold {
            s.low_armed = true;
        }
        self.queued_bytes += len;
    }

    pub(super) fn clear(&mut self) {
        for s in &mut self.streams {
            s.queue.clear();
            s.buffered = 0;
            s.next_ssn = 0;
            s.low_armed = false;
        }
        self.sched.retain_below(0);
        self.current = None;
        self.queued_bytes = 0;
        self.outstanding.clear();
        self.outstanding_bytes = 0;
        self.rtx_pending = 0;
        self.gap_acked = 0;
        self.acked_ranges.clear();
        self.nr_acked_ranges.clear();
    }

    /// Releases `len` bytes of `stream` from the send buffer.
    fn release(&mut self, stream: u16, len: usize, events: &mut VecDeque<Event>) {
        if let Some(s) = self.streams.get_mut(stream as usize) {
            s.buffered = s.buffered.saturating_sub(len);
            if s.low_armed && s.buffered <= self.low_threshold {
                s.low_armed = false;
                events.push_back(Event::StreamBufferLow { stream });
            }
        }
    }

    /// Cuts the next DATA chunk of at most `max_payload` bytes, assigning TSN and SSN, or
    /// `None` if nothing is queued. Messages whose PR-SCTP lifetime ran out before their
    /// first byte left are dropped here (they never got a TSN).
    fn next_chunk(
        &mut self,
        max_payload: usize,
        now: Instant,
        path: PathId,
        views: &[PathView],
    ) -> Option<Next> {
        loop {
            let stream = match self.current {
                Some(s) if self.sched.allows(s, path, views) => s,
                Some(_) => return None,
                None => {
                    let s = self.sched.peek(path, views)?;
                    self.sched.on_message_start(s);
                    s
                }
            };
            let s = &mut self.streams[stream as usize];
            let Some(m) = s.queue.front_mut() else {
                self.current = None;
                continue;
            };
            if m.offset == 0 && m.expires.is_some_and(|e| now >= e) {
                let len = m.data.len();
                s.queue.pop_front();
                s.buffered -= len;
                self.queued_bytes -= len;
                let more = !s.queue.is_empty();
                self.sched.on_message_done(stream, more);
                self.current = None;
                return Some(Next::Dropped);
            }
            let beginning = m.offset == 0;
            if beginning && !m.opts.unordered {
                m.ssn = s.next_ssn;
                s.next_ssn = s.next_ssn.wrapping_add(1);
            }
            let len = (m.data.len() - m.offset).min(max_payload);
            let data = m.data.slice(m.offset..m.offset + len);
            m.offset += len;
            let ending = m.offset == m.data.len();
            let tsn = self.next_tsn;
            self.next_tsn = tsn.wrapping_add(1);
            let sent = Sent {
                tsn,
                stream,
                ssn: m.ssn,
                ppid: m.opts.ppid,
                unordered: m.opts.unordered,
                beginning,
                ending,
                immediate: m.opts.immediate && ending,
                data,
                path,
                tx_count: 1,
                acked: false,
                in_flight: true,
                retransmit: false,
                misses: 0,
                fast_retransmitted: false,
                abandoned: false,
                nr_acked: false,
                epoch: 0,
                expires: m.expires,
            };
            self.queued_bytes -= len;
            self.outstanding_bytes += len;
            self.sched.on_sent(stream, len);
            if ending {
                s.queue.pop_front();
                self.current = None;
                let more = !s.queue.is_empty();
                self.sched.on_message_done(stream, more);
            } else {
                self.current = Some(stream);
            }
            return Some(Next::Chunk(sent));
        }
    }

    /// Bytes of user data the next chunk would carry, without cutting it.
    fn peek_len(&self, path: PathId, views: &[PathView]) -> Option<usize> {
        let stream = match self.current {
            Some(s) if self.sched.allows(s, path, views) => s,
            Some(_) => return None,
            None => self.sched.peek(path, views)?,
        };
        let m = self.streams.get(stream as usize)?.queue.front()?;
        Some(m.data.len() - m.offset)
    }
}

/// What `next_chunk` produced.
enum Next {
    /// A chunk to send.
    Chunk(Sent),
    /// A message whose lifetime ran out before it was sent was dropped.
    Dropped,
}

/// Takes a chunk out of its path's flight size and off the retransmission list (it was
/// acknowledged or abandoned).
fn leave_flight(s: &mut Sent, paths: &mut [crate::path::Path], rtx_pending: &mut usize) {
    if s.in_flight {
        s.in_flight = false;
        let p = &mut paths[s.path.0 as usize];
        p.flight_size = p.flight_size.saturating_sub(s.data.len());
    }
    if s.retransmit {
        s.retransmit = false;
        *rtx_pending -= 1;
    }
}

/// The bit of the chunk's path if the chunk was first sent there since the path last
/// failed. An ack of a retransmission is ambiguous (Karn): the copy that got through may be
/// the one sent before the failure, and it must not revive a dead path.
fn fresh_ack(s: &Sent, paths: &[crate::path::Path]) -> u64 {
    let p = s.path.0 as usize;
    if p < 64 && s.tx_count == 1 && s.epoch == paths[p].fail_epoch {
        1 << p
    } else {
        0
    }
}

/// Moves a chunk (not in flight) to the path it will be retransmitted on, carrying its
/// share of the buffers along (buffer splitting).
fn retarget(s: &mut Sent, to: PathId, paths: &mut [crate::path::Path]) {
    if s.path != to {
        let len = s.data.len();
        let from = &mut paths[s.path.0 as usize];
        from.buffered = from.buffered.saturating_sub(len);
        paths[to.0 as usize].buffered += len;
        s.path = to;
        // Not sent there yet: an ack of its earlier transmission must not revive `to`.
        s.epoch = paths[to.0 as usize].fail_epoch.wrapping_sub(1);
    }
}

/// The chunk left the send buffer (acknowledged for good or abandoned): its path's share
/// shrinks.
fn leave_buffer(s: &Sent, paths: &mut [crate::path::Path]) {
    let p = &mut paths[s.path.0 as usize];
    p.buffered = p.buffered.saturating_sub(s.data.len());
}

/// What the coupled congestion controllers see of every path (RFC 6356, CMT/RP): only
/// confirmed, usable paths share the totals.
fn cc_views(paths: &[crate::path::Path], out: &mut Vec<CcPathView>) {
    out.clear();
    out.extend(paths.iter().map(|q| CcPathView {
        coupled: matches!(q.state, PathState::Active | PathState::PotentiallyFailed),
        ..q.cc.view(q.rtt.srtt())
    }));
}

/// Inclusive offset ranges within 1..=n, sorted and merged; empty or inverted ones dropped.
fn offset_ranges(it: impl Iterator<Item = (usize, usize)>, n: usize) -> Vec<(usize, usize)> {
    let mut v: Vec<(usize, usize)> = it
        .map(|(a, b)| (a.max(1), b.min(n)))
        .filter(|(a, b)| a <= b)
        .collect();
    v.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(v.len());
    for (a, b) in v {
        match out.last_mut() {
            Some(last) if a <= last.1 + 1 => last.1 = last.1.max(b),
            _ => out.push((a, b)),
        }
    }
    out
}

/// Gap ack blocks as offset ranges within 1..=n (see [`offset_ranges`]).
fn block_offsets(gaps: &[GapAckBlock], n: usize) -> Vec<(usize, usize)> {
    offset_ranges(gaps.iter().map(|g| (g.start as usize, g.end as usize)), n)
}

/// TSN ranges as offsets from the cumulative ack `cum` within 1..=n: serial-number distances
/// (RFC 1982), so parts at or below `cum` come out < 1 and are cut off.
fn tsn_offsets(ranges: &[(u32, u32)], cum: u32, n: usize) -> Vec<(usize, usize)> {
    offset_ranges(
        ranges.iter().map(|&(a, b)| {
            let a = i64::from(a.wrapping_sub(cum) as i32).max(1);
            let b = i64::from(b.wrapping_sub(cum) as i32);
            if b < a {
                (1, 0)
            } else {
                (a as usize, b as usize)
            }
        }),
        n,
    )
}

/// Offset ranges from `cum` back to TSN ranges, into `out` (replacing its contents).
fn offsets_to_tsns(offsets: &[(usize, usize)], cum: u32, out: &mut Vec<(u32, u32)>) {
    out.clear();
    out.extend(
        offsets
            .iter()
            .map(|&(a, b)| (cum.wrapping_add(a as u32), cum.wrapping_add(b as u32))),
    );
}

/// Every offset in the sorted, merged ranges `a` that is not in `b`, in order.
fn ranges_minus<'a>(
    a: &'a [(usize, usize)],
    b: &'a [(usize, usize)],
) -> impl Iterator<Item = usize> + 'a {
    let mut j = 0usize;
    a.iter().flat_map(move |&(lo, hi)| {
        let mut pieces: Vec<(usize, usize)> = Vec::new();
        let mut cur = lo;
        while j < b.len() && b[j].1 < lo {
            j += 1;
        }
        let mut k = j;
        while cur <= hi {
            if k < b.len() && b[k].0 <= hi {
                let (blo, bhi) = b[k];
                if blo > cur {
                    pieces.push((cur, blo - 1));
                }
                cur = cur.max(bhi + 1);
                k += 1;
            } else {
                pieces.push((cur, hi));
                break;
            }
        }
        pieces.into_iter().flat_map(|(x, y)| x..=y)
    })
}

/// Bytes a DATA chunk with `len` bytes of user data takes in a packet.
fn data_chunk_size(len: usize) -> usize {
    (braid_wire::chunk::DATA_HEADER_LEN + len + 3) & !3
}

fn encode_data(s: &Sent, buf: &mut Vec<u8>) {
    // Written field by field (RFC 9260 §3.3.1) rather than through `Chunk::encode`: this is
    // the hottest path of the sender.
    let len = braid_wire::chunk::DATA_HEADER_LEN + s.data.len();
    let flags = (u8::from(s.immediate) << 3)
        | (u8::from(s.unordered) << 2)
        | (u8::from(s.beginning) << 1)
        | u8::from(s.ending);
    buf.reserve(len + 3);
    buf.extend_from_slice(&[0, flags]);
    buf.extend_from_slice(&(len as u16).to_be_bytes());
    buf.extend_from_slice(&s.tsn.to_be_bytes());
    buf.extend_from_slice(&s.stream.to_be_bytes());
    buf.extend_from_slice(&s.ssn.to_be_bytes());
    buf.extend_from_slice(&s.ppid.to_be_bytes());
    buf.extend_from_slice(&s.data);
    buf.resize(buf.len() + (4 - (len & 3)) % 4, 0);
}

impl Association {
    /// Refreshes what the scheduler sees of the paths (only disciplines that look at them).
    pub(super) fn refresh_path_views(&mut self, now: Instant) {
        if !matches!(
            self.tx.sched.kind(),
            SchedulerKind::Fixed | SchedulerKind::Adaptive
        ) {
            self.views.clear();
            return;
        }
        self.views.clear();
        self.views.extend(self.paths.iter().map(|p| PathView {
            usable: p.state == PathState::Active,
            cwnd: p.cc.window(),
            srtt: p.rtt.srtt(),
        }));
        self.tx.sched.on_paths(now, &self.views);
    }

    /// Whether new DATA may be sent in this state (RFC 9260 §9.2: not after SHUTDOWN).
    fn may_send_new_data(&self) -> bool {
        matches!(
            self.state,
            State::Established | State::ShutdownPending | State::ShutdownReceived
        )
    }

    /// A SACK or T3 opens a new burst on every path (RFC 9260 §6.1: Max.Burst).
    pub(super) fn reset_burst(&mut self) {
        let b = self.cfg.max_burst;
        for p in &mut self.paths {
            p.burst_budget = b;
        }
    }

    /// Whether a chunk marked for retransmission is waiting for `path`.
    pub(super) fn rtx_waiting_on(&self, path: PathId) -> bool {
        if self.tx.rtx_pending == 0 {
            return false;
        }
        self.paths.len() == 1
            || self
                .tx
                .outstanding
                .iter()
                .any(|s| s.retransmit && s.path == path)
    }

    /// Whether `path` may carry DATA now: active, or — when no path is active — the
    /// failed path with the fewest errors (RFC 7829 §5.1; a lone path is always used).
    pub(super) fn usable_for_data(&self, path: PathId) -> bool {
        let p = &self.paths[path.0 as usize];
        if !p.confirmed {
            return false; // RFC 9260 §5.4: no DATA to an unconfirmed address, ever.
        }
        match p.state {
            PathState::Active => true,
            PathState::Unconfirmed => false,
            PathState::PotentiallyFailed | PathState::Inactive => {
                !self.paths.iter().any(|q| q.state == PathState::Active)
                    && self.least_failed_path() == path
            }
        }
    }

    /// Among confirmed paths, the one with the fewest errors (the primary on a tie).
    fn least_failed_path(&self) -> PathId {
        let mut best = self.primary;
        let mut errors = self.paths[best.0 as usize].error_count;
        for p in &self.paths {
            if p.confirmed && p.error_count < errors {
                best = p.id;
                errors = p.error_count;
            }
        }
        best
    }

    /// Where new data goes without CMT: the primary, or the first active alternate while
    /// the primary is not usable (failover, RFC 9260 §6.4.1).
    pub(super) fn single_data_path(&self) -> PathId {
        if self.usable_for_data(self.primary) {
            return self.primary;
        }
        self.paths
            .iter()
            .find(|p| p.state == PathState::Active)
            .map_or_else(|| self.least_failed_path(), |p| p.id)
    }

    /// The path a chunk lost on `from` is retransmitted on (the configured policy;
    /// Iyengar et al. §4.3, RFC 9260 §6.4).
    pub(super) fn rtx_path(&self, from: PathId) -> PathId {
        use crate::config::RtxPolicy;
        if self.paths.len() == 1 || self.cfg.rtx_policy == RtxPolicy::Same {
            return from;
        }
        let candidates = || self.paths.iter().filter(|p| self.usable_for_data(p.id));
        let score = |p: &crate::path::Path| -> f64 {
            match self.cfg.rtx_policy {
                RtxPolicy::Same => 0.0,
                RtxPolicy::Asap => p.cc.window().saturating_sub(p.flight_size) as f64,
                RtxPolicy::Cwnd => p.cc.window() as f64,
                RtxPolicy::Ssthresh => p.cc.ssthresh() as f64,
                RtxPolicy::Lossrate => {
                    let sent = p.stats.data_chunks_sent + p.stats.retransmissions;
                    -((p.stats.retransmissions + 1) as f64 / (sent + 1) as f64)
                }
            }
        };
        let mut best: Option<(f64, PathId)> = None;
        for p in candidates() {
            let sc = score(p);
            // Ties go to an alternate path, as RFC 9260 §6.4 suggests for retransmissions.
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
    pub(super) fn retarget_stranded(&mut self) {
        if self.tx.rtx_pending == 0 || self.paths.len() == 1 {
            return;
        }
        for i in 0..self.tx.outstanding.len() {
            let s = &self.tx.outstanding[i];
            if !s.retransmit || self.usable_for_data(s.path) {
                continue;
            }
            let to = self.rtx_path(s.path);
            retarget(&mut self.tx.outstanding[i], to, &mut self.paths);
        }
    }

    /// Whether `poll_transmit` has DATA it could put on `path` now.
    pub(super) fn has_data_to_send(&self, path: PathId) -> bool {
        let p = &self.paths[path.0 as usize];
        let rtx_here = self.rtx_waiting_on(path);
        if rtx_here && (p.flight_size < p.cc.window() || p.fast_rtx_packet_allowed) {
            return true;
        }
        !rtx_here
            && self.may_send_new_data()
            && self.tx.has_unsent()
            && p.burst_budget > 0
            && p.flight_size < p.cc.window()
            && self.usable_for_data(path)
            && (self.cfg.cmt || path == self.single_data_path())
            && self.buffer_split_allows(path)
            && self.tx.peek_len(path, &self.views).is_some()
    }

    /// Buffer splitting (Dreibholz et al., GLOBECOM 2010): a path may hold at most 1/n of
    /// the send buffer and of the peer's receive window.
    fn buffer_split_allows(&self, path: PathId) -> bool {
        use crate::config::BufferSplitting;
        let split = self.cfg.buffer_splitting;
        if split == BufferSplitting::None || !self.cfg.cmt {
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
            || held < self.cfg.send_buffer / n;
        let recv_ok = !matches!(split, BufferSplitting::Receive | BufferSplitting::Both)
            || held < self.tx.peer_rwnd_initial / n;
        send_ok && recv_ok
    }

    /// Appends DATA chunks (retransmissions first) to the packet being built on `path`,
    /// within `room` bytes. Returns whether any was written.
    pub(super) fn write_data(
        &mut self,
        now: Instant,
        path: PathId,
        buf: &mut Vec<u8>,
        room: &mut usize,
    ) -> bool {
        let mut wrote = false;
        let mut new_data = false;
        let pi = path.0 as usize;
        // Retransmissions have priority (RFC 9260 §6.1 rule C, §7.2.4 step 3).
        let multi = self.paths.len() > 1;
        // CMT keeps per-path transmission lists (see `Path::sent_order`).
        let track = multi && self.cfg.cmt;
        let mut rtx_left = false;
        if self.tx.rtx_pending > 0 {
            let fast_allowed = self.paths[pi].fast_rtx_packet_allowed;
            let mut i = 0;
            while i < self.tx.outstanding.len() && self.tx.rtx_pending > 0 {
                let s = &self.tx.outstanding[i];
                // Each retransmission waits for the path its policy chose (`s.path`).
                if !s.retransmit || (multi && s.path != path) {
                    i += 1;
                    continue;
                }
                rtx_left = true;
                let p = &self.paths[pi];
                if p.flight_size >= p.cc.window() && !fast_allowed {
                    break;
                }
                let size = data_chunk_size(s.data.len());
                if size > *room {
                    break;
                }
                if self.features.pr_sctp && s.expires.is_some_and(|e| now >= e) {
                    self.abandon_message_at(i);
                    i += 1;
                    continue;
                }
                rtx_left = false;
                let s = &mut self.tx.outstanding[i];
                retarget(s, path, &mut self.paths);
                s.retransmit = false;
                s.in_flight = true;
                s.tx_count = s.tx_count.saturating_add(1);
                s.path = path;
                s.epoch = self.paths[pi].fail_epoch;
                s.misses = 0;
                let len = s.data.len();
                encode_data(s, buf);
                let tsn = s.tsn;
                let tx_count = s.tx_count;
                self.tx.rtx_pending -= 1;
                if track {
                    self.paths[pi].rtx_sent.push((tsn, tx_count));
                }
                *room -= size;
                wrote = true;
                let p = &mut self.paths[pi];
                p.flight_size += len;
                p.stats.retransmissions += 1;
                // Karn's rule: a retransmitted chunk never times a round trip (§6.3.1 C5).
                if p.rtt_probe.is_some_and(|(t, _)| t == tsn) {
                    p.rtt_probe = None;
                }
                i += 1;
            }
            self.paths[pi].fast_rtx_packet_allowed = false;
            if multi && !rtx_left {
                rtx_left = self.rtx_waiting_on(path);
            } else if !multi {
                rtx_left = self.tx.rtx_pending > 0;
            }
        }
        // New data: cwnd, rwnd and Max.Burst permitting, and no retransmission waiting here.
        if !rtx_left
            && self.may_send_new_data()
            && self.paths[pi].burst_budget > 0
            && self.usable_for_data(path)
            && (self.cfg.cmt || path == self.single_data_path())
        {
            let max_payload = self.paths[pi].mtu
                - braid_wire::COMMON_HEADER_LEN
                - braid_wire::chunk::DATA_HEADER_LEN;
            while let Some(next) = self.tx.peek_len(path, &self.views) {
                let p = &self.paths[pi];
                if p.flight_size >= p.cc.window() || !self.buffer_split_allows(path) {
                    break;
                }
                let mut cut = max_payload;
                if data_chunk_size(next.min(max_payload)) > *room {
                    // A message that is fragmented anyway fills the rest of this packet.
                    let avail = room.saturating_sub(braid_wire::chunk::DATA_HEADER_LEN) & !3;
                    if next > max_payload && avail >= 512 {
                        cut = avail;
                    } else {
                        break;
                    }
                }
                let len = next.min(cut);
                // Zero-window probe: one chunk may be in flight whatever rwnd says (§6.1 A).
                let flight = self.tx.flight_total_cached(&self.paths);
                if len > self.tx.peer_rwnd && flight > 0 {
                    break;
                }
                let sent = match self.tx.next_chunk(cut, now, path, &self.views) {
                    None => break,
                    Some(Next::Dropped) => {
                        self.stats.abandoned_messages += 1;
                        continue;
                    }
                    Some(Next::Chunk(mut sent)) => {
                        sent.epoch = self.paths[pi].fail_epoch;
                        sent
                    }
                };
                let size = data_chunk_size(sent.data.len());
                encode_data(&sent, buf);
                *room -= size;
                let len = sent.data.len();
                self.tx.peer_rwnd = self.tx.peer_rwnd.saturating_sub(len);
                let p = &mut self.paths[pi];
                p.flight_size += len;
                p.buffered += len;
                p.stats.data_chunks_sent += 1;
                if p.rtt_probe.is_none() {
                    p.rtt_probe = Some((sent.tsn, now));
                }
                if track {
                    p.sent_order.push_back((sent.tsn, 1));
                }
                self.tx.outstanding.push_back(sent);
                wrote = true;
                new_data = true;
                if self.tx.peer_rwnd == 0 {
                    break;
                }
            }
        }
        if new_data {
            let p = &mut self.paths[pi];
            p.burst_budget = p.burst_budget.saturating_sub(1);
            self.tx.sched.on_packet_end();
        }
        if wrote {
            let rto = self.paths[pi].rtt.rto();
            let p = &mut self.paths[pi];
            if new_data {
                // Only chunks that can time a round trip make a path non-idle (§8.3).
                p.last_data_sent = now;
            }
            // R1: start T3-rtx if it is not running (RFC 9260 §6.3.2).
            if p.t3_rtx.is_none() {
                p.t3_rtx = Some(now + rto);
            }
        }
        wrote
    }

    /// Processes the acknowledgement part of a SACK or NR-SACK (RFC 9260 §6.2.1, §7.2;
    /// CMT's SFR and CUC, Iyengar et al. §3; NR-SACK, Natarajan et al.). `nr_gaps` are
    /// the non-renegable blocks: those chunks leave the send buffer at once.
    pub(super) fn on_sack(
        &mut self,
        now: Instant,
        cum: u32,
        a_rwnd: u32,
        gaps: &[GapAckBlock],
        nr_gaps: &[GapAckBlock],
    ) {
        if tsn_lt(cum, self.tx.cum_ack) {
            // Stale SACK, out of order (§6.2.1 D i).
            return;
        }
        if tsn_ge(cum, self.tx.next_tsn) {
            self.protocol_violation(now, "SACK acknowledges a TSN that was never sent");
            return;
        }
        self.sack_since_t3 = true;
        self.paths[self.rx_path.0 as usize].sack_since_t3 = true;
        let npaths = self.paths.len();
        let cmt = self.cfg.cmt && npaths > 1;
        let (mut flight_before, mut acked_on) = std::mem::take(&mut self.scratch);
        flight_before.clear();
        flight_before.extend(self.paths.iter().map(|p| p.flight_size));
        acked_on.clear();
        acked_on.resize(npaths, 0);
        // CUC: each path's pseudo-cumulative ack is its lowest unacknowledged TSN.
        let pseudo_before = if cmt {
            self.lowest_unacked_per_path()
        } else {
            Vec::new()
        };
        let cum_advanced = cum != self.tx.cum_ack;
        // Paths with an acknowledged chunk sent since they last failed (bit per path id).
        let mut fresh = 0u64;
        let mut events = std::mem::take(&mut self.events);
        // Cumulative part.
        while self.tx.cum_ack != cum {
            let Some(s) = self.tx.outstanding.pop_front() else {
                break;
            };
            self.tx.cum_ack = s.tsn;
            if s.abandoned {
                continue;
            }
            let len = s.data.len();
            if !s.acked {
                acked_on[s.path.0 as usize] += len;
                fresh |= fresh_ack(&s, &self.paths);
                self.rtt_sample(now, &s);
            } else {
                self.tx.gap_acked -= 1;
            }
            if s.nr_acked {
                continue; // Already freed by an NR-SACK.
            }
            if s.in_flight {
                let p = &mut self.paths[s.path.0 as usize];
                p.flight_size = p.flight_size.saturating_sub(len);
            }
            if s.retransmit {
                self.tx.rtx_pending -= 1;
            }
            leave_buffer(&s, &mut self.paths);
            self.tx.outstanding_bytes -= len;
            self.stats.bytes_acked += len as u64;
            self.tx.release(s.stream, len, &mut events);
        }
        if tsn_lt(self.tx.adv_peer_ack, self.tx.cum_ack) {
            self.tx.adv_peer_ack = self.tx.cum_ack;
        }
        // Gap blocks, reneging and miss indications in one pass (§6.2.1, §7.2.4).
        if !gaps.is_empty() || self.tx.gap_acked > 0 {
            fresh |= self.process_gaps(now, gaps, &mut acked_on, cum_advanced, cmt, &mut events);
        }
        if !nr_gaps.is_empty() {
            self.free_nr_acked(nr_gaps, &mut events);
        }
        let pseudo_after = if cmt {
            self.lowest_unacked_per_path()
        } else {
            Vec::new()
        };
        let flight: usize = self.paths.iter().map(|p| p.flight_size).sum();
        self.tx.peer_rwnd = (a_rwnd as usize).saturating_sub(flight);
        // Congestion control and timers per path.
        let cuc = cmt && self.cfg.cmt_cuc;
        let algo = self.cfg.cc;
        let mut views = std::mem::take(&mut self.cc_scratch);
        if algo != CongestionControl::Reno {
            cc_views(&self.paths, &mut views);
        }
        let mut reactivated = false;
        for i in 0..npaths {
            let rto = self.paths[i].rtt.rto();
            // CUC: a path's window moves when its own earliest outstanding TSN is acked.
            let advanced = if cmt {
                pseudo_before[i] != pseudo_after[i] && pseudo_before[i].is_some()
            } else {
                cum_advanced
            };
            let p = &mut self.paths[i];
            // RFC 9260 §8.2 clears a path's errors when data last sent there is acked; a
            // failed path is revived only by data sent since it failed (RFC 7829 §5.1), not
            // by late acks of what it carried before (those come over the other paths).
            let revives = p.state == PathState::Active || (i < 64 && fresh & (1 << i) != 0);
            if acked_on[i] > 0 && revives {
                p.error_count = 0;
                if p.state != PathState::Active && p.confirmed {
                    p.state = PathState::Active;
                    reactivated = true;
                    events.push_back(Event::PathState {
                        path: p.id,
                        state: PathState::Active,
                    });
                }
                if let Some(exit) = p.fast_recovery_exit {
                    // Per-path fast recovery ends once the path's data up to `exit` is in.
                    let done = if cmt {
                        pseudo_after[i].is_none_or(|lo| tsn_gt(lo, exit))
                    } else {
                        tsn_ge(cum, exit)
                    };
                    if done {
                        p.fast_recovery_exit = None;
                    }
                } else if (cuc && advanced) || (!cuc && cum_advanced) {
                    let ctx = Ctx {
                        paths: &views,
                        me: i,
                    };
                    p.cc.on_ack(&ctx, acked_on[i], flight_before[i]);
                }
            }
            // Under CMT the pseudo-cumack already says whether anything is outstanding here.
            let has_outstanding_here = p.flight_size > 0
                || if cmt {
                    pseudo_after[i].is_some()
                } else {
                    self.tx
                        .outstanding
                        .iter()
                        .any(|s| s.path == p.id && !s.acked && !s.abandoned && s.in_flight)
                };
            if !has_outstanding_here {
                p.t3_rtx = None;
                if p.flight_size == 0 {
                    p.cc.on_all_acked();
                }
            } else if advanced && acked_on[i] > 0 {
                // R3: the earliest outstanding TSN was acknowledged: restart T3.
                p.t3_rtx = Some(now + rto);
            }
        }
        if acked_on.iter().any(|&b| b > 0) {
            self.error_count = 0;
        }
        if reactivated {
            self.retarget_stranded();
        }
        self.reset_burst();
        if self.features.pr_sctp {
            self.advance_peer_ack_point();
        }
        if self.tx.want_writable && self.tx.buffered_bytes() < self.cfg.send_buffer {
            self.tx.want_writable = false;
            events.push_back(Event::Writable);
        }
        self.cc_scratch = views;
        self.events = events;
        self.scratch = (flight_before, acked_on);
        self.try_progress_shutdown(now);
    }

    /// The outstanding chunk a per-path list entry stands for, if the entry is current:
    /// the chunk's last transmission is that one, on `path`, and it is not acknowledged,
    /// abandoned or NR-acknowledged.
    fn live_entry(&self, (tsn, txc): (u32, u16), path: PathId) -> Option<usize> {
        let off = tsn.wrapping_sub(self.tx.cum_ack) as usize;
        if off == 0 || off > self.tx.outstanding.len() {
            return None;
        }
        let s = &self.tx.outstanding[off - 1];
        (s.tx_count == txc && s.path == path && !s.acked && !s.abandoned && !s.nr_acked)
            .then_some(off - 1)
    }

    /// Each path's lowest TSN neither acknowledged nor abandoned (CUC's pseudo-cumack),
    /// from the per-path transmission lists (stale entries are dropped on the way).
    fn lowest_unacked_per_path(&mut self) -> Vec<Option<u32>> {
        let mut v = vec![None; self.paths.len()];
        for (i, slot) in v.iter_mut().enumerate() {
            let id = PathId(i as u16);
            while let Some(&e) = self.paths[i].sent_order.front() {
                if self.live_entry(e, id).is_some() {
                    *slot = Some(e.0);
                    break;
                }
                self.paths[i].sent_order.pop_front();
            }
            let mut rtx = std::mem::take(&mut self.paths[i].rtx_sent);
            rtx.retain(|&e| self.live_entry(e, id).is_some());
            for &(tsn, _) in &rtx {
                if slot.is_none_or(|lo| tsn_lt(tsn, lo)) {
                    *slot = Some(tsn);
                }
            }
            self.paths[i].rtx_sent = rtx;
        }
        v
    }

    /// SFR's miss candidates: the in-flight chunks of each path below the highest TSN
    /// newly acknowledged on that path (Iyengar et al. §3.1), as queue indices.
    fn sfr_candidates(&self, htna_on: &[Option<u32>], out: &mut Vec<usize>) {
        for (i, h) in htna_on.iter().enumerate() {
            let Some(h) = *h else { continue };
            let id = PathId(i as u16);
            let p = &self.paths[i];
            for &e in p.sent_order.iter().take_while(|e| tsn_lt(e.0, h)) {
                out.extend(self.live_entry(e, id));
            }
            for &e in p.rtx_sent.iter().filter(|e| tsn_lt(e.0, h)) {
                out.extend(self.live_entry(e, id));
            }
        }
        out.sort_unstable();
        out.dedup();
    }

    /// NR gap blocks: the receiver will never renege on these chunks, so they leave the
    /// send buffer now instead of at the cumulative ack (Natarajan et al., NR-SACK).
    fn free_nr_acked(&mut self, nr_gaps: &[GapAckBlock], events: &mut VecDeque<Event>) {
        let n = self.tx.outstanding.len();
        let cum = self.tx.cum_ack;
        let blocks = block_offsets(nr_gaps, n);
        let before = tsn_offsets(&self.tx.nr_acked_ranges, cum, n);
        // Only what this NR-SACK adds (non-renegable blocks never shrink).
        for off in ranges_minus(&blocks, &before) {
            let s = &mut self.tx.outstanding[off - 1];
            if s.abandoned || s.nr_acked || !s.acked {
                continue;
            }
            s.nr_acked = true;
            let len = s.data.len();
            leave_buffer(s, &mut self.paths);
            self.tx.outstanding_bytes -= len;
            self.stats.bytes_acked += len as u64;
            let stream = s.stream;
            // The payload is not needed any more: free it now.
            s.data = s.data.slice(0..0);
            self.tx.release(stream, len, events);
        }
        offsets_to_tsns(&blocks, cum, &mut self.tx.nr_acked_ranges);
    }

    fn process_gaps(
        &mut self,
        now: Instant,
        gaps: &[GapAckBlock],
        acked_on: &mut [usize],
        cum_advanced: bool,
        cmt: bool,
        _events: &mut VecDeque<Event>,
    ) -> u64 {
        let mut fresh = 0u64;
        // Highest TSN newly acknowledged by this SACK (HTNA, RFC 9260 §7.2.4 step 1) and the
        // highest acknowledged at all; with SFR, per path (Iyengar et al. §3.1).
        let mut htna: Option<u32> = None;
        let mut highest_acked: Option<u32> = None;
        let sfr = cmt && self.cfg.cmt_sfr;
        let mut htna_on: Vec<Option<u32>> = if sfr {
            vec![None; self.paths.len()]
        } else {
            Vec::new()
        };
        // DAC: the lowest newly acked TSN and the one path all of them were sent on, if so.
        let mut newly_lowest: Option<u32> = None;
        let mut newly_path: Option<Option<PathId>> = None;
        // The blocks as offsets from the cumulative ack (outstanding[off - 1]), sorted and
        // merged (a hostile peer may send them in any order), clipped to what was sent.
        let n = self.tx.outstanding.len();
        let cum = self.tx.cum_ack;
        let blocks = block_offsets(gaps, n);
        // What the previous SACK acknowledged above today's cumulative ack.
        let before = tsn_offsets(&self.tx.acked_ranges, cum, n);
        // Newly acknowledged: in a block now, not in the previous SACK's (O(new), not
        // O(window): under CMT most of the window is gap-acked for a while).
        for off in ranges_minus(&blocks, &before) {
            let i = off - 1;
            let s = &mut self.tx.outstanding[i];
            if s.abandoned || s.nr_acked || s.acked {
                continue;
            }
            s.acked = true;
            self.tx.gap_acked += 1;
            htna = Some(s.tsn);
            newly_lowest.get_or_insert(s.tsn);
            newly_path = match newly_path {
                None => Some(Some(s.path)),
                Some(Some(p)) if p == s.path => Some(Some(p)),
                Some(_) => Some(None),
            };
            if sfr {
                htna_on[s.path.0 as usize] = Some(s.tsn);
            }
            let len = s.data.len();
            acked_on[s.path.0 as usize] += len;
            fresh |= fresh_ack(s, &self.paths);
            leave_flight(s, &mut self.paths, &mut self.tx.rtx_pending);
            let s = &self.tx.outstanding[i];
            let (tsn, path, tx_count) = (s.tsn, s.path, s.tx_count);
            self.rtt_sample_raw(now, tsn, path, tx_count);
        }
        // Reneged (§6.2.1): acknowledged before, not any more: send it again.
        for off in ranges_minus(&before, &blocks) {
            let s = &mut self.tx.outstanding[off - 1];
            if s.acked && !s.nr_acked && !s.abandoned {
                s.acked = false;
                self.tx.gap_acked -= 1;
                if !s.retransmit {
                    s.retransmit = true;
                    self.tx.rtx_pending += 1;
                }
            }
        }
        if let Some(&(_, e)) = blocks.last() {
            highest_acked = Some(self.tx.outstanding[e - 1].tsn);
        }
        offsets_to_tsns(&blocks, cum, &mut self.tx.acked_ranges);
        // Miss indications: every unacknowledged TSN below the limit gets one (§7.2.4).
        let limit = if cum_advanced && self.paths.iter().any(|p| p.fast_recovery_exit.is_some()) {
            highest_acked
        } else {
            htna
        };
        let Some(limit) = limit else { return fresh };
        let mut lost: Vec<(usize, PathId)> = Vec::new();
        // Only the holes between the blocks can be missing.
        let limit_off = limit.wrapping_sub(cum) as usize;
        let mut candidates: Vec<usize> = Vec::new();
        if sfr {
            self.sfr_candidates(&htna_on, &mut candidates);
        } else {
            candidates.extend(ranges_minus(&[(1, limit_off.min(n))], &blocks).map(|o| o - 1));
        }
        for i in candidates {
            let s = &mut self.tx.outstanding[i];
            if !tsn_lt(s.tsn, limit) {
                break;
            }
            if s.acked || s.abandoned || s.retransmit || !s.in_flight || s.nr_acked {
                continue;
            }
            // SFR: only a later TSN acknowledged on the same path says this one is missing.
            if sfr && !htna_on[s.path.0 as usize].is_some_and(|h| tsn_lt(s.tsn, h)) {
                continue;
            }
            // DAC (Iyengar et al. §3.3): a delayed SACK covering n packets, all sent on this
            // chunk's path after it, counts n misses.
            let inc = if cmt
                && self.cfg.cmt_dac
                && self.dac_count > 1
                && newly_path == Some(Some(s.path))
                && newly_lowest.is_some_and(|lo| tsn_lt(s.tsn, lo))
            {
                self.dac_count
            } else {
                1
            };
            s.misses = s.misses.saturating_add(inc);
            if s.misses >= 3 && !s.fast_retransmitted {
                s.fast_retransmitted = true;
                s.retransmit = true;
                s.in_flight = false;
                self.tx.rtx_pending += 1;
                let len = s.data.len();
                let pid = s.path.0 as usize;
                let next_tsn = self.tx.next_tsn;
                let algo = self.cfg.cc;
                if algo != CongestionControl::Reno {
                    cc_views(&self.paths, &mut self.cc_scratch);
                }
                let p = &mut self.paths[pid];
                p.flight_size = p.flight_size.saturating_sub(len);
                p.stats.fast_retransmissions += 1;
                if p.fast_recovery_exit.is_none() {
                    // Enter fast recovery: one cwnd reduction per window (§7.2.4 step 2);
                    // under CMT the window is the path's own data.
                    p.cc.on_loss(&Ctx {
                        paths: &self.cc_scratch,
                        me: pid,
                    });
                    let exit = if cmt {
                        self.tx
                            .outstanding
                            .iter()
                            .rev()
                            .find(|o| o.path.0 as usize == pid)
                            .map_or(next_tsn.wrapping_sub(1), |o| o.tsn)
                    } else {
                        next_tsn.wrapping_sub(1)
                    };
                    self.paths[pid].fast_recovery_exit = Some(exit);
                }
                lost.push((i, PathId(pid as u16)));
            }
        }
        // Where each fast retransmission goes (rtx policy); it may leave regardless of
        // cwnd in one packet (§7.2.4 step 3).
        for (i, from) in lost {
            let to = self.rtx_path(from);
            retarget(&mut self.tx.outstanding[i], to, &mut self.paths);
            self.paths[to.0 as usize].fast_rtx_packet_allowed = true;
        }
        fresh
    }

    fn rtt_sample(&mut self, now: Instant, s: &super::tx::Sent) {
        self.rtt_sample_raw(now, s.tsn, s.path, s.tx_count);
    }

    fn rtt_sample_raw(&mut self, now: Instant, tsn: u32, path: PathId, tx_count: u16) {
        let p = &mut self.paths[path.0 as usize];
        if let Some((probe, sent)) = p.rtt_probe {
            if probe == tsn {
                p.rtt_probe = None;
                if tx_count == 1 {
                    p.rtt.on_sample(now - sent);
                }
            } else if tsn_gt(tsn, probe) {
                // The probe itself was lost or retransmitted: take no sample this round.
                p.rtt_probe = None;
            }
        }
    }

    /// T3-rtx expired on `path` (RFC 9260 §6.3.3).
    pub(super) fn on_t3_expiry(&mut self, now: Instant, path: PathId) {
        let pi = path.0 as usize;
        let algo = self.cfg.cc;
        if algo != CongestionControl::Reno {
            cc_views(&self.paths, &mut self.cc_scratch);
        }
        let p = &mut self.paths[pi];
        p.t3_rtx = None;
        p.stats.timeouts += 1;
        p.cc.on_timeout(&Ctx {
            paths: &self.cc_scratch,
            me: pi,
        });
        p.rtt.backoff();
        p.fast_recovery_exit = None;
        p.rtt_probe = None;
        let mut marked = 0usize;
        let mut marked_chunks = 0usize;
        for s in self.tx.outstanding.iter_mut() {
            if s.path == path && s.in_flight && !s.acked && !s.abandoned {
                s.in_flight = false;
                if !s.retransmit {
                    s.retransmit = true;
                    self.tx.rtx_pending += 1;
                }
                marked += s.data.len();
                marked_chunks += 1;
            }
        }
        let p = &mut self.paths[pi];
        p.flight_size = p.flight_size.saturating_sub(marked);
        // Zero-window probes answered by SACKs do not count as errors (RFC 9260 §6.1).
        // Only a path whose whole flight was the one probe chunk was probing: under CMT
        // SACKs keep coming over the other paths while a dead one's hole fills the window.
        // With several paths the SACKs must come in over this one: a cut path's probe is
        // not answered on it, whatever the others carry.
        let answered = if self.paths.len() == 1 {
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
        let target = self.rtx_path(path);
        if target != path {
            // RFC 9260 §6.4.1 / CMT rtx policy: the marked chunks go out on `target`.
            let paths = &mut self.paths;
            for s in self.tx.outstanding.iter_mut() {
                if s.path == path && s.retransmit {
                    retarget(s, target, paths);
                }
            }
        }
        if self.features.pr_sctp {
            self.abandon_expired(now);
            self.advance_peer_ack_point();
        }
        self.reset_burst();
    }

    /// One more consecutive error on `path` and on the association (RFC 9260 §8.1, §8.2).
    pub(super) fn count_error(&mut self, now: Instant, path: PathId) {
        let max_path = self.cfg.path_max_retrans;
        let pfmr = self.cfg.pf_max_retrans;
        let multi = self.paths.len() > 1;
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
            p.state = state;
            p.fail_epoch = p.fail_epoch.wrapping_add(1);
            let probing = p.heartbeat.outstanding.is_some();
            self.events.push_back(Event::PathState { path, state });
            if state == PathState::PotentiallyFailed && !probing {
                // RFC 7829 §5.1: probe a PF destination at once, then every RTO.
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

    /// Abandons the message whose chunk sits at `index` in the retransmission queue: every
    /// fragment of it (RFC 3758 §3.5 A3 — all fragments go together).
    fn abandon_message_at(&mut self, index: usize) {
        let (stream, ssn, unordered) = {
            let s = &self.tx.outstanding[index];
            (s.stream, s.ssn, s.unordered)
        };
        // Fragments of one message are consecutive TSNs: walk back to B and forward to E.
        let mut start = index;
        while start > 0 && !self.tx.outstanding[start].beginning {
            start -= 1;
        }
        let mut end = index;
        while end + 1 < self.tx.outstanding.len() && !self.tx.outstanding[end].ending {
            end += 1;
        }
        let mut events = std::mem::take(&mut self.events);
        for i in start..=end {
            let s = &mut self.tx.outstanding[i];
            if s.stream != stream || s.ssn != ssn || s.unordered != unordered || s.abandoned {
                continue;
            }
            if s.nr_acked {
                continue;
            }
            s.abandoned = true;
            let len = s.data.len();
            leave_flight(s, &mut self.paths, &mut self.tx.rtx_pending);
            leave_buffer(s, &mut self.paths);
            if s.acked {
                s.acked = false;
                self.tx.gap_acked -= 1;
            }
            self.tx.outstanding_bytes -= len;
            self.tx.release(stream, len, &mut events);
        }
        self.events = events;
        // A message cut in the middle of its fragmentation keeps sending its other fragments
        // from the queue; those are abandoned as they are sent.
        self.stats.abandoned_messages += 1;
    }

    /// Abandons every outstanding message past its lifetime (RFC 3758 §3.5 A3).
    fn abandon_expired(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.tx.outstanding.len() {
            let s = &self.tx.outstanding[i];
            if !s.abandoned && !s.acked && s.expires.is_some_and(|e| now >= e) {
                self.abandon_message_at(i);
            }
            i += 1;
        }
    }

    /// Moves the Advanced.Peer.Ack.Point over abandoned chunks and schedules a FORWARD-TSN
    /// if it passed the cumulative ack (RFC 3758 §3.5 C1–C3).
    fn advance_peer_ack_point(&mut self) {
        let mut point = self.tx.adv_peer_ack;
        let first = self.tx.cum_ack.wrapping_add(1);
        for s in &self.tx.outstanding {
            if tsn_le(s.tsn, point) {
                continue;
            }
            if s.abandoned {
                point = s.tsn;
            } else {
                break;
            }
        }
        let _ = first;
        self.tx.adv_peer_ack = point;
        if tsn_gt(point, self.tx.cum_ack) {
            self.tx.forward_tsn_pending = true;
        }
    }

    /// The FORWARD-TSN announcing the Advanced.Peer.Ack.Point (RFC 3758 §3.5 C4).
    pub(super) fn forward_tsn_chunk(&mut self) -> Option<Chunk> {
        if !self.tx.forward_tsn_pending || !tsn_gt(self.tx.adv_peer_ack, self.tx.cum_ack) {
            self.tx.forward_tsn_pending = false;
            return None;
        }
        self.tx.forward_tsn_pending = false;
        let mut streams: Vec<ForwardTsnStream> = Vec::new();
        for s in &self.tx.outstanding {
            if tsn_gt(s.tsn, self.tx.adv_peer_ack) {
                break;
            }
            if !s.unordered {
                match streams.iter_mut().find(|e| e.stream_id == s.stream) {
                    Some(e) => e.ssn = s.ssn,
                    None => streams.push(ForwardTsnStream {
                        stream_id: s.stream,
                        ssn: s.ssn,
                    }),
                }
            }
        }
        Some(Chunk::ForwardTsn(ForwardTsn {
            new_cum_tsn: self.tx.adv_peer_ack,
            streams,
        }))
    }

    /// A peer restart is handled as an ABORT followed by a new association (RFC 9260
    /// §5.2.4 A): queues, SSNs, error counters and path estimates start afresh.
    pub(super) fn reset_for_restart(&mut self) {
        self.tx.clear();
        self.error_count = 0;
        let cfg = self.cfg.clone();
        for p in &mut self.paths {
            p.flight_size = 0;
            p.sent_order.clear();
            p.rtx_sent.clear();
            p.t3_rtx = None;
            p.rtt_probe = None;
            p.fast_recovery_exit = None;
            p.fast_rtx_packet_allowed = false;
            p.error_count = 0;
            p.state = if p.confirmed {
                PathState::Active
            } else {
                PathState::Unconfirmed
            };
            p.rtt = crate::path::rto::RttEstimator::new(&cfg);
            p.heartbeat = Default::default();
        }
    }

    /// An ERROR cause for a chunk the peer sent that we do not understand.
    pub(super) fn unrecognized_chunk_cause(raw: &braid_wire::RawChunk) -> ErrorCause {
        ErrorCause::UnrecognizedChunkType(Bytes::from(raw.to_wire()))
    }
}

impl SendQueue {
    /// Sum of the paths' flight sizes.
    fn flight_total_cached(&self, paths: &[crate::path::Path]) -> usize {
        paths.iter().map(|p| p.flight_size).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::{offset_ranges, ranges_minus};

    #[test]
    fn gap_blocks_become_sorted_merged_clipped_ranges() {
        // Out of order, overlapping, adjacent, inverted and past the end (a hostile SACK).
        let r = offset_ranges(
            [(9, 12), (2, 3), (3, 5), (6, 6), (8, 7), (20, 30)].into_iter(),
            10,
        );
        assert_eq!(r, vec![(2, 6), (9, 10)]);
        assert!(offset_ranges([(0, 0)].into_iter(), 10).is_empty());
    }

    #[test]
    fn range_difference_lists_exactly_the_missing_offsets() {
        let a = [(1, 10), (15, 16)];
        let b = [(0, 2), (4, 5), (9, 15)];
        let d: Vec<usize> = ranges_minus(&a, &b).collect();
        assert_eq!(d, vec![3, 6, 7, 8, 16]);
        assert_eq!(ranges_minus(&a, &[]).count(), 12);
        assert_eq!(ranges_minus(&[], &b).count(), 0);
        // Brute force over small random-ish cases.
        for seed in 0u32..200 {
            let mk = |k: u32| -> Vec<(usize, usize)> {
                let mut v = Vec::new();
                let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(k);
                for _ in 0..4 {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    let lo = (x >> 8) as usize % 30 + 1;
                    let len = (x >> 20) as usize % 6;
                    v.push((lo, lo + len));
                }
                offset_ranges(v.into_iter(), 32)
            };
            let (a, b) = (mk(1), mk(2));
            let inside = |r: &[(usize, usize)], o: usize| r.iter().any(|&(l, h)| l <= o && o <= h);
            let want: Vec<usize> = (1..=32)
                .filter(|&o| inside(&a, o) && !inside(&b, o))
                .collect();
            assert_eq!(
                ranges_minus(&a, &b).collect::<Vec<_>>(),
                want,
                "{a:?} - {b:?}"
            );
        }
    }
}
