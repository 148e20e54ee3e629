//! The send queue: per-stream message queues, TSN and SSN assignment at transmit time
//! (RFC 9260 §6.1, §6.5, §6.9), the retransmission queue of sent chunks and the sender's
//! view of the peer's window.

use std::collections::VecDeque;
use std::time::Duration;

use bytes::Bytes;

use super::sent::{ChunkState, Sent, Tally};
use crate::event::Event;
use crate::path::{Path, PathId};
use crate::sched::{PathView, Scheduler};
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
    /// I-DATA MID, assigned when the first fragment leaves (RFC 8260 §2.1).
    mid: u32,
    /// I-DATA FSN of the next fragment.
    fsn: u32,
    expires: Option<Instant>,
    /// PR-SCTP abandoned the fragments already sent: the rest never gets a TSN (RFC 3758
    /// §3.5 A3, all fragments of a message go together).
    abandoned: bool,
}

#[derive(Debug, Default)]
struct OutStream {
    queue: VecDeque<OutMessage>,
    next_ssn: u16,
    /// Next I-DATA MID: \[ordered, unordered\] (RFC 8260 §2.1: separate sequences).
    next_mid: [u32; 2],
    /// Bytes queued or sent and not yet acknowledged.
    buffered: usize,
    /// Whether the buffer-low event may fire (it went above the threshold since).
    low_armed: bool,
}

/// Everything the sender keeps.
#[derive(Debug)]
pub(crate) struct SendQueue {
    streams: Vec<OutStream>,
    /// Chooses the stream of each new message.
    pub(crate) sched: Scheduler,
    /// Stream whose head message is partly sent (DATA fragments must be consecutive).
    current: Option<u16>,
    /// The path the partly sent message's fragments stay on (LS-SCTP, Abd El Al et al. §4.5).
    current_path: Option<PathId>,
    queued_bytes: usize,
    pub(crate) next_tsn: u32,
    /// Cumulative TSN ack point: every TSN up to it is acknowledged.
    pub(crate) cum_ack: u32,
    /// TSNs cum_ack+1 .. next_tsn-1, in order.
    pub(crate) outstanding: VecDeque<Sent>,
    /// Bytes of `outstanding` not acknowledged cumulatively nor abandoned.
    pub(crate) outstanding_bytes: usize,
    /// Counters over the states of `outstanding` (see [`Sent::set_state`]).
    pub(crate) tally: Tally,
    /// `seq` of the next chunk (TSN order without wrapping).
    pub(crate) next_seq: u64,
    /// `xmit` of the next transmission (`Sent::xmit`).
    pub(crate) next_xmit: u64,
    /// TSN ranges the last SACK's gap blocks acknowledged (to find what is new in the next).
    pub(crate) acked_ranges: Vec<(u32, u32)>,
    /// Gap-acknowledged chunks the last SACK omitted beyond what one SACK may renege: still
    /// acknowledged until a later SACK omits them too (kept apart from `acked_ranges`, which
    /// says what the peer reports and bounds loss detection).
    pub(crate) renege_deferred: Vec<(u32, u32)>,
    /// TSN ranges the last NR-SACK's non-renegable blocks covered.
    pub(crate) nr_acked_ranges: Vec<(u32, u32)>,
    /// Peer's receive window as last computed (RFC 9260 §6.2.1).
    pub(crate) peer_rwnd: usize,
    /// The a_rwnd of the peer's INIT/INIT-ACK: its receive buffer (buffer splitting).
    pub(crate) peer_rwnd_initial: usize,
    /// The largest whole peer window seen (a_rwnd plus what it holds for us): above
    /// `peer_rwnd_initial`, the peer autotunes its buffer.
    pub(crate) peer_window_max: usize,
    /// `send` returned WouldBlock: fire Writable when room appears.
    pub(crate) want_writable: bool,
    /// PR-SCTP Advanced.Peer.Ack.Point (RFC 3758 §3.5).
    pub(crate) adv_peer_ack: u32,
    /// A FORWARD-TSN should be sent.
    pub(crate) forward_tsn_pending: bool,
    /// Threshold of the per-stream buffer-low event.
    low_threshold: usize,
    /// I-DATA was negotiated: chunks carry MID and FSN, and fragments may interleave.
    idata: bool,
    /// Chunks the three-miss rule looked at (the cost the tests bound).
    #[cfg(test)]
    pub(crate) miss_visits: u64,
}

impl SendQueue {
    pub(crate) fn new(streams: u16, sched: Scheduler) -> Self {
        Self {
            streams: (0..streams).map(|_| OutStream::default()).collect(),
            sched,
            current: None,
            current_path: None,
            queued_bytes: 0,
            next_tsn: 0,
            cum_ack: 0,
            outstanding: VecDeque::new(),
            outstanding_bytes: 0,
            tally: Tally::default(),
            next_seq: 0,
            next_xmit: 0,
            acked_ranges: Vec::new(),
            renege_deferred: Vec::new(),
            nr_acked_ranges: Vec::new(),
            peer_rwnd: 0,
            peer_rwnd_initial: 0,
            peer_window_max: 0,
            want_writable: false,
            adv_peer_ack: 0,
            forward_tsn_pending: false,
            low_threshold: 0,
            idata: false,
            #[cfg(test)]
            miss_visits: 0,
        }
    }

    /// Uses I-DATA (RFC 8260) from now on: MIDs and FSNs, interleaving if the scheduler does.
    pub(crate) fn set_idata(&mut self, on: bool) {
        self.idata = on;
    }

    /// Sets the first TSN and the negotiated stream count (after the handshake).
    pub(crate) fn start(&mut self, initial_tsn: u32, streams: u16, peer_rwnd: usize, low: usize) {
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

    pub(crate) fn stream_count(&self) -> u16 {
        self.streams.len() as u16
    }

    pub(crate) fn buffered_bytes(&self) -> usize {
        self.queued_bytes + self.outstanding_bytes
    }

    pub(crate) fn stream_buffered(&self, stream: u16) -> Option<(usize, usize)> {
        self.streams
            .get(stream as usize)
            .map(|s| (s.buffered, s.queue.len()))
    }

    /// Bytes queued and not yet sent.
    pub(crate) fn queued_bytes(&self) -> usize {
        self.queued_bytes
    }

    pub(crate) fn has_unsent(&self) -> bool {
        self.queued_bytes > 0
    }

    /// Nothing queued, nothing outstanding.
    pub(crate) fn is_empty(&self) -> bool {
        self.queued_bytes == 0 && self.outstanding.is_empty()
    }

    pub(crate) fn push(
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
            mid: 0,
            fsn: 0,
            expires,
            abandoned: false,
        });
        s.buffered += len;
        if s.buffered > self.low_threshold {
            s.low_armed = true;
        }
        self.queued_bytes += len;
    }

    pub(crate) fn clear(&mut self) {
        for s in &mut self.streams {
            s.queue.clear();
            s.buffered = 0;
            s.next_ssn = 0;
            s.next_mid = [0; 2];
            s.low_armed = false;
        }
        self.sched.retain_below(0);
        self.current = None;
        self.current_path = None;
        self.queued_bytes = 0;
        self.outstanding.clear();
        self.outstanding_bytes = 0;
        self.tally = Tally::default();
        self.acked_ranges.clear();
        self.renege_deferred.clear();
        self.nr_acked_ranges.clear();
    }

    /// Releases `len` bytes of `stream` from the send buffer.
    pub(crate) fn release(&mut self, stream: u16, len: usize, events: &mut VecDeque<Event>) {
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
    /// first byte left are dropped here (they never got a TSN). With `pin`, the rest of a
    /// message cut here may only go on `path` (LS-SCTP, Abd El Al et al. §4.5).
    pub(crate) fn next_chunk(
        &mut self,
        max_payload: usize,
        now: Instant,
        path: PathId,
        views: &[PathView],
        pin: bool,
    ) -> Option<Next> {
        loop {
            let stream = match self.current {
                Some(s) if self.sched.allows(s, path, views) && self.pinned_to(path) => s,
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
            let expired = m.offset == 0 && m.expires.is_some_and(|e| now >= e);
            if expired || m.abandoned {
                let rest = m.data.len() - m.offset;
                let counted = m.abandoned;
                s.queue.pop_front();
                s.buffered -= rest;
                self.queued_bytes -= rest;
                let more = !s.queue.is_empty();
                self.sched.on_message_done(stream, more);
                self.current = None;
                self.current_path = None;
                return Some(if counted {
                    Next::RestDropped
                } else {
                    Next::Dropped
                });
            }
            let beginning = m.offset == 0;
            if beginning && !m.opts.unordered {
                m.ssn = s.next_ssn;
                s.next_ssn = s.next_ssn.wrapping_add(1);
            }
            if beginning {
                let k = usize::from(m.opts.unordered);
                m.mid = s.next_mid[k];
                s.next_mid[k] = s.next_mid[k].wrapping_add(1);
                m.fsn = 0;
            }
            let len = (m.data.len() - m.offset).min(max_payload);
            let data = m.data.slice(m.offset..m.offset + len);
            m.offset += len;
            let ending = m.offset == m.data.len();
            let tsn = self.next_tsn;
            self.next_tsn = tsn.wrapping_add(1);
            let seq = self.next_seq;
            self.next_seq += 1;
            let xmit = self.next_xmit;
            self.next_xmit += 1;
            let sent = Sent {
                tsn,
                seq,
                xmit,
                stream,
                ssn: m.ssn,
                mid: m.mid,
                fsn: m.fsn,
                ppid: m.opts.ppid,
                unordered: m.opts.unordered,
                beginning,
                ending,
                immediate: m.opts.immediate && ending,
                data,
                path,
                sent_on: path,
                tx_count: 1,
                state: ChunkState::InFlight,
                misses: 0,
                fast_retransmitted: false,
                epoch: 0,
                expires: m.expires,
                sent_at: now,
                first_sent_at: now,
                psn: 0,
            };
            m.fsn = m.fsn.wrapping_add(1);
            self.queued_bytes -= len;
            self.outstanding_bytes += len;
            self.sched.on_sent(stream, len);
            self.current_path = (!ending && pin).then_some(path);
            if ending {
                s.queue.pop_front();
                self.current = None;
                let more = !s.queue.is_empty();
                self.sched.on_message_done(stream, more);
            } else if self.idata && !pin && self.sched.interleaves() {
                // RFC 8260 §3.1: with I-DATA the next chunk may belong to another stream.
                self.current = None;
                self.sched.on_message_yield(stream);
            } else {
                self.current = Some(stream);
            }
            return Some(Next::Chunk(sent));
        }
    }

    /// PR-SCTP abandoned the sent fragments of the message `mid` (ordered or not) of
    /// `stream`: if it is the stream's partly sent head, its unsent rest is dropped before it
    /// gets a TSN (RFC 3758 §3.5 A3) and the message stops pinning its path.
    pub(crate) fn abandon_unsent_rest(&mut self, stream: u16, mid: u32, unordered: bool) {
        let Some(s) = self.streams.get_mut(stream as usize) else {
            return;
        };
        let Some(m) = s.queue.front_mut() else {
            return;
        };
        if m.offset > 0 && m.mid == mid && m.opts.unordered == unordered {
            m.abandoned = true;
            if self.current == Some(stream) {
                self.current_path = None;
            }
        }
    }

    /// The path the partly sent message is pinned to.
    pub(crate) fn pinned_path(&self) -> Option<PathId> {
        self.current_path
    }

    /// Lets the partly sent message continue on any path (its path failed).
    pub(crate) fn unpin(&mut self) {
        self.current_path = None;
    }

    /// Whether the partly sent message (if any) may continue on `path`.
    fn pinned_to(&self, path: PathId) -> bool {
        self.current_path.is_none_or(|p| p == path)
    }

    /// Bytes of user data the next chunk would carry, without cutting it.
    pub(crate) fn peek_len(&self, path: PathId, views: &[PathView]) -> Option<usize> {
        let stream = match self.current {
            Some(s) if self.sched.allows(s, path, views) && self.pinned_to(path) => s,
            Some(_) => return None,
            None => self.sched.peek(path, views)?,
        };
        let m = self.streams.get(stream as usize)?.queue.front()?;
        Some(m.data.len() - m.offset)
    }
}

/// What `next_chunk` produced.
pub(crate) enum Next {
    /// A chunk to send.
    Chunk(Sent),
    /// A message whose lifetime ran out before it was sent was dropped.
    Dropped,
    /// The unsent rest of a message PR-SCTP abandoned part-way was dropped (already counted).
    RestDropped,
}

impl SendQueue {
    /// Sum of the paths' flight sizes.
    pub(crate) fn flight_total(&self, paths: &[Path]) -> usize {
        paths.iter().map(|p| p.flight_size).sum()
    }

    /// The chunk with `seq`, as an index into `outstanding`.
    pub(crate) fn index_of_seq(&self, seq: u64) -> Option<usize> {
        let first = self.outstanding.front()?.seq;
        let i = usize::try_from(seq.checked_sub(first)?).ok()?;
        (i < self.outstanding.len()).then_some(i)
    }
}
