//! State shared between the API handles of one association ([`Association`], its stream
//! handles, its event streams) and the endpoint's task, so that `send` and `recv` do not
//! cost a channel round trip and a task switch per message: `send` appends to a bounded
//! queue the task drains into the core, and the task moves received messages into bounded
//! queues `recv` pops from. The handle only sends a `Kick` command when the task has to act
//! (the first message of an empty send queue, or room in a receive queue the task had
//! stopped filling). The task also publishes here what `stats()`, `paths()` and
//! `open_streams()` return, so those are plain reads.
//!
//! [`Association`]: crate::Association

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::task::Waker;

use braid_proto::{AssociationStats, CloseReason, PathInfo, ReceivedMessage, SendOptions};
use bytes::Bytes;
use tokio::sync::{Notify, mpsc};

use crate::events::AssocEvent;

/// Bytes the send queue holds at most before `send` waits (the core's send buffer comes
/// after it), and no more than the send buffer.
pub(crate) const SEND_QUEUE_BYTES: usize = 1 << 20;
/// Bytes the task moves into the receive queues at most (the core's receive buffer, which
/// sets the advertised window, comes before it), and no more than the receive buffer.
pub(crate) const RECV_QUEUE_BYTES: usize = 1 << 20;

/// What the task last published about the association (see [`crate::Association::stats`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot {
    pub(crate) stats: AssociationStats,
    pub(crate) paths: Vec<PathInfo>,
    /// The last snapshot of each path the association no longer has.
    pub(crate) removed_paths: Vec<PathInfo>,
    pub(crate) open_streams: (u16, u16),
    pub(crate) negotiated: braid_proto::Negotiated,
}

/// The receive queue of a stream that has a [`crate::RecvStream`].
#[derive(Debug, Default)]
pub(crate) struct StreamRx {
    pub(crate) q: VecDeque<ReceivedMessage>,
    pub(crate) waker: Option<Waker>,
}

/// The outcome of [`State::enqueue`].
pub(crate) enum Enqueue {
    /// Queued; `true`: the caller must send a `Kick` (the queue was idle).
    Queued(bool),
    /// No room: wait for `send_room` (or a send waker) and try again.
    Full,
    /// The handle cannot check this message alone: the core decides (slow path).
    Ask,
}

#[derive(Debug, Default)]
pub(crate) struct State {
    /// Messages accepted by `send`, not yet given to the core.
    pub(crate) send_q: VecDeque<(u16, Bytes, SendOptions)>,
    pub(crate) send_q_bytes: usize,
    /// A `Kick` is on its way for the send queue.
    pub(crate) send_kicked: bool,
    /// What `send` checks without asking the core, once the association is established:
    /// (outbound streams, largest message, send queue capacity in bytes).
    pub(crate) limits: Option<(u16, usize, usize)>,
    /// Poll-based writers ([`crate::SendStream`]'s `AsyncWrite`) waiting for room.
    pub(crate) send_wakers: Vec<Waker>,
    /// Messages taken from the core, not yet returned by `recv`, of streams without a
    /// [`crate::RecvStream`].
    pub(crate) recv_q: VecDeque<ReceivedMessage>,
    /// Bytes in `recv_q` and every stream queue together (one budget: `recv_cap`).
    pub(crate) recv_q_bytes: usize,
    /// Streams with a [`crate::RecvStream`]: their messages go there.
    pub(crate) streams: BTreeMap<u16, StreamRx>,
    /// `accept_stream` was called: a message on a stream never seen before opens a new
    /// [`crate::RecvStream`] for `accept_stream` instead of going to `recv`.
    pub(crate) accepting: bool,
    /// Streams already offered to `accept_stream` (or claimed with `recv_stream`).
    pub(crate) offered: BTreeSet<u16>,
    /// Streams opened by the peer, waiting for `accept_stream`.
    pub(crate) incoming_streams: VecDeque<u16>,
    /// The task stopped filling the receive queues because they were full.
    pub(crate) recv_stalled: bool,
    /// Receive queue capacity in bytes (set by the task).
    pub(crate) recv_cap: usize,
    /// The core has no more messages and never will: `recv` ends once its queue is empty.
    pub(crate) recv_done: bool,
    /// Why the association closed (or `LocalAbort` if the task is gone).
    pub(crate) closed: Option<CloseReason>,
    /// A shutdown began (ours or the peer's, RFC 9260 §9.2): `send` refuses new messages;
    /// those already in the queue are still handed to the core and delivered.
    pub(crate) shutting_down: bool,
    pub(crate) snapshot: Snapshot,
    /// The task skipped a path publication (throttled): `snapshot.paths` may be a few
    /// milliseconds of activity behind.
    pub(crate) paths_stale: bool,
    /// A handle asked the task for a fresh publication (`Cmd::Refresh`) since the last one.
    pub(crate) refresh_asked: bool,
    /// Receivers of [`crate::Association::events`].
    pub(crate) event_subs: Vec<mpsc::UnboundedSender<AssocEvent>>,
}

impl State {
    /// Puts a message in the send queue if the handle can check it alone and there is room.
    pub(crate) fn enqueue(&mut self, stream: u16, data: &Bytes, opts: SendOptions) -> Enqueue {
        let Some((streams, max, cap)) = self.limits else {
            return Enqueue::Ask;
        };
        if data.is_empty() || data.len() > max || stream >= streams {
            return Enqueue::Ask;
        }
        // One message is always accepted into an empty queue, whatever its size.
        if self.send_q_bytes > 0 && self.send_q_bytes + data.len() > cap {
            return Enqueue::Full;
        }
        self.send_q_bytes += data.len();
        self.send_q.push_back((stream, data.clone(), opts));
        Enqueue::Queued(!std::mem::replace(&mut self.send_kicked, true))
    }

    /// Accounts for `len` bytes read from a receive queue: whether the task must be kicked
    /// to refill the queues (it had stopped, and half the room is free again).
    pub(crate) fn took(&mut self, len: usize) -> bool {
        self.recv_q_bytes -= len;
        let kick = self.recv_stalled && self.recv_q_bytes <= self.recv_cap / 2;
        if kick {
            self.recv_stalled = false;
        }
        kick
    }

    /// Routes a message from the core: to its stream's [`crate::RecvStream`], to a new
    /// one for `accept_stream`, or to the association's queue. Returns a waker to wake.
    pub(crate) fn route(&mut self, m: ReceivedMessage) -> Route {
        self.recv_q_bytes += m.data.len();
        let id = m.stream_id;
        if let Some(s) = self.streams.get_mut(&id) {
            s.q.push_back(m);
            return Route::Stream(s.waker.take());
        }
        if self.accepting && self.offered.insert(id) {
            let mut s = StreamRx::default();
            s.q.push_back(m);
            self.streams.insert(id, s);
            self.incoming_streams.push_back(id);
            return Route::NewStream;
        }
        self.recv_q.push_back(m);
        Route::Assoc
    }

    /// Every poll-based reader's waker (the association closed or its queues ended).
    pub(crate) fn recv_wakers(&mut self) -> Vec<Waker> {
        self.streams
            .values_mut()
            .filter_map(|s| s.waker.take())
            .collect()
    }

    /// How a reader ends once its queue is empty and no more will come: `Ok(None)` after a
    /// graceful shutdown, the close reason otherwise.
    pub(crate) fn end(&self) -> Result<Option<ReceivedMessage>, crate::Error> {
        match &self.closed {
            Some(CloseReason::Shutdown) => Ok(None),
            Some(r) => Err(crate::Error::Closed(r.clone())),
            None => Err(crate::Error::EndpointClosed),
        }
    }

    /// Sends an event to every live receiver of [`crate::Association::events`].
    pub(crate) fn emit(&mut self, ev: &AssocEvent) {
        self.event_subs.retain(|s| s.send(ev.clone()).is_ok());
    }
}

/// Where [`State::route`] put a message.
pub(crate) enum Route {
    /// The association's queue (`recv`).
    Assoc,
    /// A stream's queue, whose reader may wait.
    Stream(Option<Waker>),
    /// A new stream for `accept_stream`.
    NewStream,
}

/// One association's shared state.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    state: Mutex<State>,
    /// Room in the send queue, or the association closed.
    pub(crate) send_room: Notify,
    /// Messages in the receive queue, or no more will come.
    pub(crate) recv_ready: Notify,
    /// The association closed (`closed` is set).
    pub(crate) closed_wait: Notify,
    /// A new stream for `accept_stream`, or no more will come.
    pub(crate) stream_incoming: Notify,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent state (no invariant spans an
        // unwind), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes every writer waiting for room (async `send` and `AsyncWrite`).
    pub(crate) fn wake_senders(&self) {
        let wakers = std::mem::take(&mut self.lock().send_wakers);
        self.send_room.notify_waiters();
        for w in wakers {
            w.wake();
        }
    }

    /// Wakes every reader: the receive queues ended.
    pub(crate) fn wake_receivers(&self) {
        let wakers = self.lock().recv_wakers();
        self.recv_ready.notify_waiters();
        self.recv_ready.notify_one();
        self.stream_incoming.notify_waiters();
        for w in wakers {
            w.wake();
        }
    }

    /// Records why the association closed (the first reason wins) and wakes its waiters.
    pub(crate) fn set_closed(&self, reason: CloseReason) {
        {
            let mut s = self.lock();
            if s.closed.is_none() {
                s.emit(&AssocEvent::Closed(reason.clone()));
                s.closed = Some(reason);
            }
            // No more events: the receivers end.
            s.event_subs.clear();
        }
        self.closed_wait.notify_waiters();
        self.wake_senders();
    }

    /// Marks the association as gone and wakes every waiter.
    pub(crate) fn close(&self, reason: CloseReason) {
        self.lock().recv_done = true;
        self.set_closed(reason);
        self.wake_receivers();
    }
}
