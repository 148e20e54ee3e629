//! State shared between an [`Association`](crate::Association) handle and the endpoint's
//! task, so that `send` and `recv` do not cost a channel round trip and a task switch per
//! message: `send` appends to a bounded queue the task drains into the core, and the task
//! moves received messages into a bounded queue `recv` pops from. The handle only sends a
//! `Kick` command when the task has to act (the first message of an empty send queue, or
//! room in a receive queue the task had stopped filling).

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard};

use braid_proto::{CloseReason, ReceivedMessage, SendOptions};
use bytes::Bytes;
use tokio::sync::Notify;

/// Bytes the send queue holds at most before `send` waits (the core's send buffer comes
/// after it), and no more than the send buffer.
pub(crate) const SEND_QUEUE_BYTES: usize = 1 << 20;
/// Bytes the task moves into the receive queue at most (the core's receive buffer, which
/// sets the advertised window, comes before it), and no more than the receive buffer.
pub(crate) const RECV_QUEUE_BYTES: usize = 1 << 20;

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
    /// Messages taken from the core, not yet returned by `recv`.
    pub(crate) recv_q: VecDeque<ReceivedMessage>,
    pub(crate) recv_q_bytes: usize,
    /// The task stopped filling the receive queue because it was full.
    pub(crate) recv_stalled: bool,
    /// Receive queue capacity in bytes (set by the task).
    pub(crate) recv_cap: usize,
    /// The core has no more messages and never will: `recv` returns `None` once the queue
    /// is empty.
    pub(crate) recv_done: bool,
    /// Why the association closed (or `LocalAbort` if the task is gone).
    pub(crate) closed: Option<CloseReason>,
    /// A shutdown began (ours or the peer's, RFC 9260 §9.2): `send` refuses new messages;
    /// those already in the queue are still handed to the core and delivered.
    pub(crate) shutting_down: bool,
}

/// One association's shared state.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    state: Mutex<State>,
    /// Room in the send queue, or the association closed.
    pub(crate) send_room: Notify,
    /// Messages in the receive queue, or no more will come.
    pub(crate) recv_ready: Notify,
}

impl Shared {
    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock leaves consistent state (no invariant spans an
        // unwind), so a poisoned lock is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Marks the association as gone and wakes every waiter.
    pub(crate) fn close(&self, reason: CloseReason) {
        {
            let mut s = self.lock();
            s.recv_done = true;
            s.closed.get_or_insert(reason);
        }
        self.send_room.notify_waiters();
        self.recv_ready.notify_waiters();
        self.recv_ready.notify_one();
    }
}
