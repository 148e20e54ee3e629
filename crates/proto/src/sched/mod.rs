//! Stream schedulers of the sender (RFC 8260 §3, Dreibholz et al. §4): which stream's next
//! message goes into the packet being built for a path.
//!
//! The send queue asks [`Scheduler::peek`] at every message boundary; a message that is
//! being fragmented keeps going without asking (DATA fragments take consecutive TSNs),
//! except that [`Scheduler::allows`] can keep it off a path it is not mapped to.
//!
//! # Bookkeeping shared by every discipline
//!
//! The scheduler counts the messages queued and not yet started on each stream
//! (`pending`) and remembers the stream whose message is being cut (`active`). A stream is
//! *ready* when it has pending messages and is not active. Each discipline keeps the ready
//! streams in its own structure; [`Scheduler::set_kind`] drains the old structure in its
//! order and refills the new one from it, so no queued message is ever stranded by a
//! switch (RFC 8260 §4.3 leaves queued messages queued).
//!
//! # Disciplines
//!
//! * `Fcfs` (RFC 8260 §3.1): one entry per queued message in a FIFO, so messages leave in
//!   the order `send` accepted them, across streams. Acceptance order is not recorded while
//!   another discipline runs (that would cost the default path a queue operation per
//!   message); after a switch to `Fcfs` the messages already queued leave round-robin, one
//!   per stream in turn in the previous discipline's order, then the later ones in order.
//! * `RoundRobin` (§3.2): a FIFO of ready streams; a stream whose message is done goes to
//!   the back if it has more. O(1) per message, no allocation once grown.
//! * `RoundRobinPacket` (§3.3): the stream whose chunk went into a packet owns that packet:
//!   only its messages are offered until `on_packet_end`, and the next packet starts with
//!   the next stream. A message that crosses a packet boundary ends its stream's turn, so a
//!   stream of messages larger than a packet cannot keep every packet.
//! * `Priority` (§3.4), `FairCapacity` (§3.5), `Wfq` (§3.6): a min-heap of ready streams on
//!   (key, arrival sequence); equal keys leave in arrival order, which is round-robin
//!   among equals. The key is the priority, the bytes sent, or the bytes sent scaled by
//!   `1 / weight`. For the byte counts, a stream that becomes non-empty starts level with
//!   the least-served non-empty stream: fairness is among the non-empty streams, and a
//!   stream neither banks credit while idle nor is punished for an earlier burst.
//! * `Fixed` (Dreibholz et al. §4): each stream is mapped to a path (`set_mapping`, default
//!   stream % paths); a path takes round-robin among its streams. Streams of a path that
//!   is not usable may go on any path, so a failure strands nothing.
//! * `Adaptive`: like `Fixed`, but the scheduler maps streams to paths by itself.
//!
//! # The adaptive mapping
//!
//! Dreibholz et al. shows that mapping streams to paths avoids the reordering (and receive buffer
//! blocking) of spreading one stream over dissimilar paths, but that a fixed map overloads
//! slow paths when paths or stream loads differ; its §7 leaves a dynamic mapping as future
//! work. `Adaptive` computes the map from what the sender measures:
//!
//! * Each usable path *i* has a rate estimate `c_i = cwnd_i / srtt_i` (bytes/s) and a
//!   one-way delay estimate `d_i = srtt_i / 2`; a path without an RTT sample is assumed as
//!   slow as the slowest measured one.
//! * Each stream has a load `w_s`: the larger of its bytes sent per evaluation interval
//!   (smoothed, halving each interval) and its queued bytes, at least one chunk's worth.
//! * The streams are placed heaviest first (greedy longest-processing-time), each on the
//!   path that minimises its estimated arrival time `d_i + (L_i + w_s) / c_i`, where `L_i` is
//!   the load already placed on path *i*. Heavy streams thus spread over the paths in
//!   proportion to their rates, and light streams go to the low-delay path.
//! * Hysteresis so the map does not flap: it is recomputed at most once every four of the
//!   largest smoothed RTTs (at least 10 ms), or at once when a path changes usability; a
//!   stream keeps its path unless another is better by more than 25 %; and a stream whose
//!   message is being cut moves only when that message is done.
//! * A stream seen for the first time is placed at once by the same rule under the last
//!   estimates; streams idle for long enough are forgotten.
//!
//! The measurements come in through [`Scheduler::on_paths`]; until it has been called the
//! adaptive map is `Fixed`'s default (stream % paths).

mod adaptive;
mod keyed;
#[cfg(test)]
mod tests;

use std::collections::VecDeque;

use adaptive::Adaptive;
use keyed::Keyed;

use crate::path::PathId;
use crate::time::Instant;

/// The scheduler an association uses (changeable at run time).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SchedulerKind {
    /// First come, first served: messages leave in the order `send` accepted them.
    Fcfs,
    /// Round-robin per message (RFC 8260 §3.2).
    #[default]
    RoundRobin,
    /// Round-robin per packet (RFC 8260 §3.3).
    RoundRobinPacket,
    /// Strict priority, lower value first, round-robin among equals (RFC 8260 §3.4).
    Priority,
    /// Fair capacity: the stream that sent the fewest bytes goes next (RFC 8260 §3.5).
    FairCapacity,
    /// Weighted fair queueing: fewest bytes per weight goes next (RFC 8260 §3.6).
    Wfq,
    /// Fixed stream-to-path mapping (Dreibholz et al. §4), round-robin per message on each path.
    Fixed,
    /// Streams mapped to paths from measured path bandwidth and delay (Dreibholz et al. §7).
    Adaptive,
}

impl SchedulerKind {
    /// Every kind with its short name (the simulator's and `braid perf`'s spelling).
    pub const NAMES: [(&'static str, Self); 8] = [
        ("fcfs", Self::Fcfs),
        ("rr", Self::RoundRobin),
        ("rr-packet", Self::RoundRobinPacket),
        ("priority", Self::Priority),
        ("fc", Self::FairCapacity),
        ("wfq", Self::Wfq),
        ("fixed", Self::Fixed),
        ("adaptive", Self::Adaptive),
    ];

    /// The kind a short name stands for.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, k)| *k)
    }

    /// The short name.
    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("?", |(n, _)| n)
    }
}

/// What a scheduler may know about a path when it chooses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PathView {
    /// The path may carry data now (active, confirmed).
    pub(crate) usable: bool,
    /// Congestion window, bytes.
    pub(crate) cwnd: usize,
    /// Smoothed RTT, if measured.
    pub(crate) srtt: Option<std::time::Duration>,
}

/// Fixed-point scale of the fair-queueing byte counts (so that `bytes / weight` keeps
/// precision for every weight up to 65535).
const WFQ_SCALE: u64 = 1 << 16;

/// Scheduler state: the non-empty streams and whatever the chosen discipline keeps.
#[derive(Debug)]
pub(crate) struct Scheduler {
    kind: SchedulerKind,
    /// Messages queued and not yet started, per stream.
    pending: Vec<u32>,
    /// Stream whose message is being cut into chunks.
    active: Option<u16>,
    /// Ready streams in round-robin order (RoundRobin, RoundRobinPacket, Fixed, Adaptive).
    ready: VecDeque<u16>,
    /// One entry per queued message not started, in acceptance order (Fcfs).
    fcfs: VecDeque<u16>,
    /// Ready streams by key (Priority, FairCapacity, Wfq).
    keyed: Keyed,
    /// RoundRobinPacket: the stream that owns the packet being built.
    holder: Option<u16>,
    /// RoundRobinPacket: the active message crossed a packet boundary.
    crossed: bool,
    /// FairCapacity, Wfq: bytes sent per stream (scaled by `WFQ_SCALE / weight`).
    served: Vec<u64>,
    /// Stream → path for `Fixed` (empty: stream % paths).
    mapping: Vec<u16>,
    /// Per-stream priority (missing: 0).
    priorities: Vec<u16>,
    /// Per-stream WFQ weight (missing: 1).
    weights: Vec<u16>,
    /// The adaptive stream-to-path mapping.
    adaptive: Adaptive,
}

impl Scheduler {
    /// A scheduler of `kind` with the fixed stream-to-path `mapping`.
    pub(crate) fn new(kind: SchedulerKind, mapping: Vec<u16>) -> Self {
        Self {
            kind,
            pending: Vec::new(),
            active: None,
            ready: VecDeque::new(),
            fcfs: VecDeque::new(),
            keyed: Keyed::default(),
            holder: None,
            crossed: false,
            served: Vec::new(),
            mapping,
            priorities: Vec::new(),
            weights: Vec::new(),
            adaptive: Adaptive::default(),
        }
    }

    /// Sets the priority of `stream` (lower goes first).
    pub(crate) fn set_priority(&mut self, stream: u16, priority: u16) {
        let i = stream as usize;
        if self.priorities.len() <= i {
            self.priorities.resize(i + 1, 0);
        }
        self.priorities[i] = priority;
        if self.kind == SchedulerKind::Priority {
            // A waiting stream must be re-sorted under its new priority (RFC 8260 §3.4).
            let prio = &self.priorities;
            self.keyed
                .rekey(|s| u64::from(prio.get(s as usize).copied().unwrap_or(0)));
        }
    }

    /// Sets the WFQ weight of `stream` (0 counts as 1).
    pub(crate) fn set_weight(&mut self, stream: u16, weight: u16) {
        let i = stream as usize;
        if self.weights.len() <= i {
            self.weights.resize(i + 1, 1);
        }
        self.weights[i] = weight.max(1);
    }

    /// The discipline in use.
    pub(crate) fn kind(&self) -> SchedulerKind {
        self.kind
    }

    /// Switches discipline; the queued messages stay queued and every stream that has
    /// some stays schedulable (RFC 8260 §4.3).
    pub(crate) fn set_kind(&mut self, kind: SchedulerKind) {
        if kind == self.kind {
            return;
        }
        let order = self.ready_order();
        self.ready.clear();
        self.fcfs.clear();
        self.keyed.clear();
        self.holder = None;
        self.crossed = false;
        self.kind = kind;
        match kind {
            SchedulerKind::Fcfs => {
                // The active stream's further messages first (it was being served), then
                // one message per stream in turn.
                let mut left: Vec<(u16, u32)> = self
                    .active
                    .into_iter()
                    .chain(order)
                    .map(|s| (s, self.pending_of(s)))
                    .filter(|(_, n)| *n > 0)
                    .collect();
                while !left.is_empty() {
                    for (s, n) in &mut left {
                        self.fcfs.push_back(*s);
                        *n -= 1;
                    }
                    left.retain(|(_, n)| *n > 0);
                }
            }
            SchedulerKind::RoundRobin | SchedulerKind::RoundRobinPacket | SchedulerKind::Fixed => {
                self.ready.extend(order);
            }
            SchedulerKind::Adaptive => {
                self.adaptive
                    .start(order.iter().copied().chain(self.active));
                self.ready.extend(order);
            }
            SchedulerKind::Priority | SchedulerKind::FairCapacity | SchedulerKind::Wfq => {
                // Byte counts were not kept under the previous discipline: start level.
                self.served.fill(0);
                for s in order {
                    let key = self.key(s);
                    self.keyed.push(key, s);
                }
            }
        }
    }

    /// The ready streams (queued messages, not active) in the order the current discipline
    /// would serve them, each once.
    fn ready_order(&self) -> Vec<u16> {
        match self.kind {
            SchedulerKind::Fcfs => {
                let mut seen = vec![false; self.pending.len()];
                let mut order = Vec::new();
                for &s in &self.fcfs {
                    let i = s as usize;
                    if Some(s) != self.active && !seen[i] {
                        seen[i] = true;
                        order.push(s);
                    }
                }
                order
            }
            SchedulerKind::RoundRobin
            | SchedulerKind::RoundRobinPacket
            | SchedulerKind::Fixed
            | SchedulerKind::Adaptive => self.ready.iter().copied().collect(),
            SchedulerKind::Priority | SchedulerKind::FairCapacity | SchedulerKind::Wfq => {
                self.keyed.order()
            }
        }
    }

    /// Messages queued on `stream` and not started.
    #[inline]
    fn pending_of(&self, stream: u16) -> u32 {
        self.pending.get(stream as usize).copied().unwrap_or(0)
    }

    /// The heap key of `stream` under the current key-ordered discipline.
    fn key(&self, stream: u16) -> u64 {
        match self.kind {
            SchedulerKind::Priority => {
                u64::from(self.priorities.get(stream as usize).copied().unwrap_or(0))
            }
            _ => self.served.get(stream as usize).copied().unwrap_or(0),
        }
    }

    /// Puts `stream` into the heap; `newly` if it was idle (FairCapacity and Wfq then start
    /// it level with the least-served non-empty stream, RFC 8260 §3.5/§3.6 fairness is
    /// among non-empty streams).
    fn push_keyed(&mut self, stream: u16, newly: bool) {
        if newly && self.kind != SchedulerKind::Priority {
            let active = self.active.map(|a| self.key(a));
            let level = match (self.keyed.min_key(), active) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if let Some(level) = level {
                let i = stream as usize;
                if self.served.len() <= i {
                    self.served.resize(i + 1, 0);
                }
                self.served[i] = level;
            }
        }
        let key = self.key(stream);
        self.keyed.push(key, stream);
    }

    /// Sets the fixed stream-to-path mapping.
    pub(crate) fn set_mapping(&mut self, mapping: Vec<u16>) {
        self.mapping = mapping;
    }

    /// The path `stream` is mapped to under `Fixed` (or `Adaptive`, once it has placed it).
    pub(crate) fn mapped_path(&self, stream: u16, npaths: usize) -> PathId {
        let n = npaths.max(1) as u16;
        let chosen = match self.kind {
            SchedulerKind::Adaptive => self.adaptive.path(stream),
            _ => self.mapping.get(stream as usize).copied(),
        };
        PathId(chosen.filter(|p| *p < n).unwrap_or(stream % n))
    }

    /// A message of `len` bytes was queued on `stream`, which had none waiting before if
    /// `was_idle` (no queued message and not being sent). The scheduler keeps its own
    /// counts too, so that `set_kind` can rebuild; the default discipline trusts the
    /// caller's flag to stay as cheap as it was.
    #[inline]
    pub(crate) fn on_push(&mut self, stream: u16, len: usize, was_idle: bool) {
        let i = stream as usize;
        if self.pending.len() <= i {
            self.pending.resize(i + 1, 0);
        }
        self.pending[i] += 1;
        // The default discipline stays inline: it is on the sender's hot path.
        if self.kind == SchedulerKind::RoundRobin {
            if was_idle {
                self.ready.push_back(stream);
            }
        } else {
            let idle = self.pending[i] == 1 && self.active != Some(stream);
            self.on_push_other(stream, len, idle);
        }
    }

    /// `on_push` for the disciplines other than the default; `idle` if the stream was.
    fn on_push_other(&mut self, stream: u16, len: usize, idle: bool) {
        match self.kind {
            SchedulerKind::Fcfs => self.fcfs.push_back(stream),
            SchedulerKind::RoundRobin | SchedulerKind::RoundRobinPacket | SchedulerKind::Fixed => {
                if idle {
                    self.ready.push_back(stream);
                }
            }
            SchedulerKind::Adaptive => {
                self.adaptive.on_push(stream, len);
                if idle {
                    self.ready.push_back(stream);
                }
            }
            SchedulerKind::Priority | SchedulerKind::FairCapacity | SchedulerKind::Wfq => {
                if idle {
                    self.push_keyed(stream, true);
                }
            }
        }
    }

    /// New measurements of the paths (only `Adaptive` uses them; O(1) otherwise and
    /// between its re-evaluations). To be called by the association after every refresh
    /// of its path views; until then `Adaptive` keeps `Fixed`'s default map.
    pub(crate) fn on_paths(&mut self, now: Instant, paths: &[PathView]) {
        if self.kind == SchedulerKind::Adaptive {
            self.adaptive
                .on_paths(now, paths, &self.pending, self.active);
        }
    }

    /// Whether a message of `stream` may go on `path` now.
    #[inline]
    pub(crate) fn allows(&self, stream: u16, path: PathId, paths: &[PathView]) -> bool {
        match self.kind {
            SchedulerKind::Fixed | SchedulerKind::Adaptive => {
                let m = self.mapped_path(stream, paths.len());
                // A failed path's streams fall back to any usable path (no data is stuck).
                m == path || !paths.get(m.0 as usize).is_some_and(|p| p.usable)
            }
            _ => true,
        }
    }

    /// The stream whose next message should go on `path`, without taking it.
    #[inline]
    pub(crate) fn peek(&self, path: PathId, paths: &[PathView]) -> Option<u16> {
        if self.kind == SchedulerKind::RoundRobin {
            return self.ready.front().copied();
        }
        self.peek_other(path, paths)
    }

    /// `peek` for the disciplines other than the default.
    fn peek_other(&self, path: PathId, paths: &[PathView]) -> Option<u16> {
        match self.kind {
            SchedulerKind::RoundRobin => self.ready.front().copied(),
            SchedulerKind::Fcfs => self.fcfs.front().copied(),
            // Only the packet's owner may add to it (RFC 8260 §3.3: one stream per packet).
            SchedulerKind::RoundRobinPacket => match self.holder {
                Some(h) => (self.ready.front() == Some(&h)).then_some(h),
                None => self.ready.front().copied(),
            },
            SchedulerKind::Priority | SchedulerKind::FairCapacity | SchedulerKind::Wfq => {
                self.keyed.peek()
            }
            SchedulerKind::Fixed | SchedulerKind::Adaptive => self
                .ready
                .iter()
                .copied()
                .find(|s| self.allows(*s, path, paths)),
        }
    }

    /// The next message of `stream` (as returned by `peek`) starts now.
    #[inline]
    pub(crate) fn on_message_start(&mut self, stream: u16) {
        if let Some(n) = self.pending.get_mut(stream as usize) {
            *n = n.saturating_sub(1);
        }
        self.active = Some(stream);
        if self.kind == SchedulerKind::RoundRobin && self.ready.front() == Some(&stream) {
            self.ready.pop_front();
        } else {
            self.on_message_start_other(stream);
        }
    }

    /// `on_message_start` off the default fast path: takes `stream` out of its structure.
    fn on_message_start_other(&mut self, stream: u16) {
        self.crossed = false;
        let queue = match self.kind {
            SchedulerKind::Fcfs => &mut self.fcfs,
            SchedulerKind::Priority | SchedulerKind::FairCapacity | SchedulerKind::Wfq => {
                self.keyed.remove(stream);
                return;
            }
            _ => &mut self.ready,
        };
        if queue.front() == Some(&stream) {
            queue.pop_front();
        } else if let Some(i) = queue.iter().position(|s| *s == stream) {
            queue.remove(i);
        }
    }

    /// The message of `stream` is done (fully cut into chunks, or dropped); `more` says
    /// whether the stream has further messages queued (the other disciplines take it
    /// from the pending counts).
    #[inline]
    pub(crate) fn on_message_done(&mut self, stream: u16, more: bool) {
        self.active = None;
        if self.kind == SchedulerKind::RoundRobin {
            if more {
                self.ready.push_back(stream);
            }
        } else {
            let more = self.pending_of(stream) > 0;
            self.on_message_done_other(stream, more);
        }
    }

    /// `on_message_done` for the disciplines other than the default.
    fn on_message_done_other(&mut self, stream: u16, more: bool) {
        match self.kind {
            SchedulerKind::Fcfs => {}
            SchedulerKind::RoundRobin | SchedulerKind::Fixed => {
                if more {
                    self.ready.push_back(stream);
                }
            }
            SchedulerKind::Adaptive => {
                self.adaptive.on_message_done(stream, more);
                if more {
                    self.ready.push_back(stream);
                }
            }
            SchedulerKind::RoundRobinPacket => {
                // The owner keeps the rest of its packet, unless its message ran over a
                // packet boundary: then its turn is over (RFC 8260 §3.3, no starvation).
                if more {
                    if self.crossed {
                        self.ready.push_back(stream);
                    } else {
                        self.ready.push_front(stream);
                    }
                }
                self.crossed = false;
            }
            SchedulerKind::Priority | SchedulerKind::FairCapacity | SchedulerKind::Wfq => {
                if more {
                    self.push_keyed(stream, false);
                }
            }
        }
    }

    /// Whether this discipline interleaves fragments of different streams' messages when
    /// I-DATA allows it (RFC 8260 §3.3, §3.5, §3.6: per-packet round robin, fair capacity
    /// and weighted fair queueing share the association below the message size).
    pub(crate) fn interleaves(&self) -> bool {
        matches!(
            self.kind,
            SchedulerKind::RoundRobinPacket | SchedulerKind::FairCapacity | SchedulerKind::Wfq
        )
    }

    /// The message of `stream` stops after a fragment but is not done (I-DATA): the stream
    /// goes back among the ready ones as if that message were queued and not started, so
    /// the discipline may pick another stream for the next chunk (RFC 8260 §3.1).
    pub(crate) fn on_message_yield(&mut self, stream: u16) {
        let i = stream as usize;
        if self.pending.len() <= i {
            self.pending.resize(i + 1, 0);
        }
        self.pending[i] += 1;
        self.on_message_done(stream, true);
    }

    /// `bytes` of user data of `stream` went into a chunk.
    #[inline]
    pub(crate) fn on_sent(&mut self, stream: u16, bytes: usize) {
        if self.kind != SchedulerKind::RoundRobin {
            self.on_sent_other(stream, bytes);
        }
    }

    /// `on_sent` for the disciplines that count bytes or own packets.
    fn on_sent_other(&mut self, stream: u16, bytes: usize) {
        match self.kind {
            SchedulerKind::RoundRobinPacket => self.holder = Some(stream),
            SchedulerKind::FairCapacity | SchedulerKind::Wfq => {
                // RFC 8260 §3.5/§3.6 count capacity used, so bytes, not messages.
                let w = match self.kind {
                    SchedulerKind::Wfq => self.weights.get(stream as usize).copied().unwrap_or(1),
                    _ => 1,
                };
                let i = stream as usize;
                if self.served.len() <= i {
                    self.served.resize(i + 1, 0);
                }
                let add = (bytes as u64).saturating_mul(WFQ_SCALE / u64::from(w.max(1)));
                self.served[i] = self.served[i].saturating_add(add);
            }
            SchedulerKind::Adaptive => self.adaptive.on_sent(stream, bytes),
            _ => {}
        }
    }

    /// The packet being built is complete.
    #[inline]
    pub(crate) fn on_packet_end(&mut self) {
        if self.kind != SchedulerKind::RoundRobinPacket {
            return;
        }
        if self.active.is_some() {
            self.crossed = true;
        }
        // The next packet belongs to the next stream (RFC 8260 §3.3).
        if let Some(h) = self.holder.take()
            && self.ready.front() == Some(&h)
        {
            self.ready.rotate_left(1);
        }
    }

    /// Forgets every stream at or above `streams` (after the handshake) or all of them.
    pub(crate) fn retain_below(&mut self, streams: u16) {
        self.pending.truncate(streams as usize);
        self.served.truncate(streams as usize);
        if self.active.is_some_and(|s| s >= streams) {
            self.active = None;
        }
        if self.holder.is_some_and(|s| s >= streams) {
            self.holder = None;
        }
        self.ready.retain(|s| *s < streams);
        self.fcfs.retain(|s| *s < streams);
        self.keyed.retain(|s| s < streams);
        self.adaptive.retain_below(streams);
    }
}
