//! What the application calls: sending and receiving messages, the shutdown and abort
//! primitives (RFC 9260 §10), the primary path and the stream scheduler's settings.

use std::sync::Arc;

use bytes::Bytes;

use super::{Association, SendOptions, State};
use crate::event::{CloseReason, SendError};
use crate::path::PathId;
use crate::recv::reassembly::ReceivedMessage;
use crate::time::Instant;

impl Association {
    /// Makes `path` the primary path: without CMT new data goes there while it is usable
    /// (RFC 9260 §5.1.2, SCTP_PRIMARY_ADDR of RFC 6458). Returns false for an unknown or
    /// unconfirmed path.
    pub fn set_primary(&mut self, path: PathId) -> bool {
        match self.paths.get(path.0 as usize) {
            Some(p) if p.confirmed && !p.removed => {
                self.primary = path;
                true
            }
            _ => false,
        }
    }

    /// The primary path.
    pub fn primary(&self) -> PathId {
        self.primary
    }

    /// Switches the stream scheduler; queued messages stay queued (RFC 8260 §4.3).
    pub fn set_stream_scheduler(&mut self, kind: crate::SchedulerKind) {
        self.tx.sched.set_kind(kind);
    }

    /// The stream scheduler in use.
    pub fn stream_scheduler(&self) -> crate::SchedulerKind {
        self.tx.sched.kind()
    }

    /// Turns concurrent multipath transfer on (with these settings) or off at run time.
    /// Chunks in flight stay where they are; new data and retransmissions follow the new
    /// setting from the next packet on.
    pub fn set_cmt(&mut self, cmt: Option<crate::CmtConfig>) {
        Arc::make_mut(&mut self.cfg).cmt = cmt;
        self.install_path_scheduler();
    }

    /// The retransmission path policy (Iyengar et al. §4.3) from now on.
    pub fn set_rtx_policy(&mut self, policy: crate::RtxPolicy) {
        Arc::make_mut(&mut self.cfg).rtx_policy = policy;
    }

    /// Marks `path` as standby (application policy): it carries data only while no other
    /// path is active, and stays monitored by heartbeats. A standby primary gives way to an
    /// active alternate. Returns false for an unknown path.
    pub fn set_path_standby(&mut self, path: PathId, standby: bool) -> bool {
        match self.paths.get_mut(path.0 as usize) {
            Some(p) if !p.removed => {
                p.standby = standby;
                true
            }
            _ => false,
        }
    }

    /// Forbids (or allows again) DATA on `path` (application policy: an address pair that
    /// must not carry data, e.g. a metered link). Heartbeats still monitor it; chunks already
    /// sent there are retransmitted elsewhere. If every allowed path fails, data waits (and
    /// the association may fail) rather than use it. Returns false for an unknown path.
    pub fn set_path_forbidden(&mut self, path: PathId, forbidden: bool) -> bool {
        match self.paths.get_mut(path.0 as usize) {
            Some(p) if !p.removed => {
                p.forbidden = forbidden;
                // Chunks already waiting there for a retransmission go where they may.
                self.retarget_stranded();
                true
            }
            _ => false,
        }
    }

    /// Sets `path`'s cost (application policy; default 0): when the primary is not usable,
    /// new data fails over to the cheapest active alternate (ties to the lower id) instead
    /// of the first. Returns false for an unknown path.
    pub fn set_path_cost(&mut self, path: PathId, cost: u32) -> bool {
        match self.paths.get_mut(path.0 as usize) {
            Some(p) if !p.removed => {
                p.cost = cost;
                true
            }
            _ => false,
        }
    }

    /// Sets the fixed stream-to-path mapping: entry *i* is the path index of stream *i*.
    pub fn set_stream_paths(&mut self, mapping: Vec<u16>) {
        self.tx.sched.set_mapping(mapping);
    }

    /// Priority of `stream` for the priority scheduler (lower goes first; default 0).
    pub fn set_stream_priority(&mut self, stream: u16, priority: u16) {
        self.tx.sched.set_priority(stream, priority);
    }

    /// Weight of `stream` for weighted fair queueing (default 1; 0 counts as 1).
    pub fn set_stream_weight(&mut self, stream: u16, weight: u16) {
        self.tx.sched.set_weight(stream, weight);
    }

    /// Queues a message. Errors leave nothing queued; see [`SendError`].
    pub fn send(
        &mut self,
        now: Instant,
        stream: u16,
        data: Bytes,
        opts: SendOptions,
    ) -> Result<(), SendError> {
        self.may_queue(false)?;
        self.queue_message(now, stream, data, opts)
    }

    /// Queues a message a driver accepted from the application before the peer's SHUTDOWN
    /// was processed (the driver's own queue sits in front of the core). Allowed until the
    /// SHUTDOWN-ACK leaves, which waits for it (RFC 9260 §9.2: what the user was told is
    /// accepted is still delivered); otherwise as [`Association::send`].
    pub fn send_accepted(
        &mut self,
        now: Instant,
        stream: u16,
        data: Bytes,
        opts: SendOptions,
    ) -> Result<(), SendError> {
        self.may_queue(true)?;
        self.queue_message(now, stream, data, opts)
    }

    /// Whether a message may be queued in this state (RFC 9260 §9.2: no new data once a
    /// shutdown started), with `accepted` what a driver took in before it did.
    fn may_queue(&self, accepted: bool) -> Result<(), SendError> {
        match self.state {
            State::CookieWait | State::CookieEchoed | State::Established => Ok(()),
            State::ShutdownPending | State::ShutdownReceived if accepted => Ok(()),
            State::Closed => Err(SendError::Closed),
            _ => Err(SendError::ShuttingDown),
        }
    }

    fn queue_message(
        &mut self,
        now: Instant,
        stream: u16,
        data: Bytes,
        opts: SendOptions,
    ) -> Result<(), SendError> {
        if data.is_empty() {
            return Err(SendError::EmptyMessage);
        }
        let max = self.cfg.max_message_size.min(self.cfg.send_buffer);
        if data.len() > max {
            return Err(SendError::MessageTooLarge {
                len: data.len(),
                max,
            });
        }
        let streams = self.tx.stream_count();
        if stream >= streams {
            return Err(SendError::InvalidStream { stream, streams });
        }
        if self.tx.buffered_bytes() + data.len() > self.grow_send_limit() {
            self.tx.want_writable = true;
            return Err(SendError::WouldBlock);
        }
        let expires = opts.lifetime.map(|l| now + l);
        self.tx.push(stream, data, opts, expires);
        self.stats.messages_sent += 1;
        if self.paths.iter().all(|p| p.flight_size == 0) {
            // An idle sender starts a new burst (RFC 9260 §6.1 Max.Burst applies to bursts).
            self.reset_burst();
        }
        Ok(())
    }

    /// The next received message, in delivery order.
    pub fn recv(&mut self) -> Option<ReceivedMessage> {
        let m = match self.carried.pop_front() {
            Some(m) => m,
            None => self.reasm.pop()?,
        };
        self.stats.messages_received += 1;
        self.stats.bytes_received += m.data.len() as u64;
        self.bufs.on_read(m.data.len());
        self.on_read();
        Some(m)
    }

    /// Starts a graceful shutdown (RFC 9260 §9.2): queued data is still delivered.
    pub fn shutdown(&mut self, now: Instant) {
        match self.state {
            State::Established => {
                self.set_state(now, State::ShutdownPending);
                self.try_progress_shutdown(now);
            }
            State::CookieWait | State::CookieEchoed => self.abort(now, None),
            _ => {}
        }
    }

    /// Aborts the association at once, telling the peer why (User-Initiated Abort).
    pub fn abort(&mut self, now: Instant, reason: Option<Bytes>) {
        if self.state == State::Closed {
            return;
        }
        let causes = vec![braid_wire::ErrorCause::UserInitiatedAbort(
            reason.unwrap_or_default(),
        )];
        if self.peer_tag != 0 {
            self.queue_abort(causes);
        }
        self.close(now, CloseReason::LocalAbort);
    }
}
