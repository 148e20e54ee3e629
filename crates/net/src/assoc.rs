//! [`Association`]: the application's handle on one association.

use std::net::SocketAddr;
use std::sync::Arc;

use braid_proto::{
    AssocId, AssociationStats, CloseReason, CmtConfig, Negotiated, PathInfo, ReceivedMessage,
    RtxPolicy, SchedulerKind, SendError, SendOptions,
};
use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

use crate::Error;
use crate::driver::{Cmd, Control, PathOp};
use crate::events::Events;
use crate::shared::{Enqueue, Shared, StreamRx};
use crate::stream::{RecvStream, SendStream};

/// What every clone of an [`Association`] shares; its drop is the last handle's.
#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) id: AssocId,
    pub(crate) cmd: mpsc::UnboundedSender<Cmd>,
    pub(crate) shared: Arc<Shared>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let _ = self.cmd.send(Cmd::Dropped { id: self.id });
    }
}

/// One association. Cheap to clone: every clone (and every [`SendStream`] and
/// [`RecvStream`]) is a handle on the same association; when the last one is dropped a
/// graceful shutdown starts (if it is still open) and the endpoint forgets the association
/// once it is closed.
///
/// Messages: [`Association::send`] on any stream; [`Association::recv`] receives the
/// messages of every stream that has no [`RecvStream`] (see [`Association::recv_stream`]
/// and [`Association::accept_stream`] for the routing rule).
#[derive(Debug, Clone)]
pub struct Association {
    pub(crate) inner: Arc<Inner>,
}

impl Association {
    pub(crate) fn new(id: AssocId, cmd: mpsc::UnboundedSender<Cmd>, shared: Arc<Shared>) -> Self {
        Self {
            inner: Arc::new(Inner { id, cmd, shared }),
        }
    }

    pub(crate) fn shared(&self) -> &Shared {
        &self.inner.shared
    }

    pub(crate) fn cmd(&self, c: Cmd) -> Result<(), Error> {
        self.inner.cmd.send(c).map_err(|_| Error::EndpointClosed)
    }

    pub(crate) fn kick(&self) {
        let _ = self.inner.cmd.send(Cmd::Kick { id: self.inner.id });
    }

    /// The association's handle within its endpoint.
    pub fn id(&self) -> AssocId {
        self.inner.id
    }

    async fn request<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Cmd) -> Result<T, Error> {
        let (tx, rx) = oneshot::channel();
        self.cmd(make(tx))?;
        rx.await.map_err(|_| Error::EndpointClosed)
    }

    /// Queues a message on `stream`. Waits while the send buffer is full (backpressure:
    /// nothing is dropped); messages are queued in the order of the calls.
    ///
    /// Cancel safety: the message is queued entirely or not at all. Dropping the future
    /// before it resolves may still have queued it (once queued it is sent), but never
    /// part of it, and never twice.
    ///
    /// # Errors
    ///
    /// [`Error::Send`] for an invalid stream, an empty or too large message, or after a
    /// shutdown began ([`SendError::ShuttingDown`]); [`Error::Closed`] if the association
    /// is closed; [`Error::EndpointClosed`].
    pub async fn send(&self, stream: u16, data: Bytes, opts: SendOptions) -> Result<(), Error> {
        // Fast path: a valid message goes into the shared queue (no round trip to the task).
        // Anything the handle cannot check alone (before the association is established,
        // an invalid message) takes the slow path, where the core decides.
        loop {
            let notified = self.shared().send_room.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let outcome = {
                let mut s = self.shared().lock();
                if let Some(r) = &s.closed {
                    return Err(Error::Closed(r.clone()));
                }
                if s.shutting_down {
                    return Err(Error::Send(SendError::ShuttingDown));
                }
                s.enqueue(stream, &data, opts)
            };
            match outcome {
                Enqueue::Queued(true) => return self.cmd(Cmd::Kick { id: self.id() }),
                Enqueue::Queued(false) => {
                    return if self.inner.cmd.is_closed() {
                        Err(Error::EndpointClosed)
                    } else {
                        Ok(())
                    };
                }
                Enqueue::Full => {
                    if self.inner.cmd.is_closed() {
                        return Err(Error::EndpointClosed);
                    }
                    notified.await;
                }
                Enqueue::Ask => break,
            }
        }
        let id = self.id();
        self.request(|reply| Cmd::Send {
            id,
            stream,
            data,
            opts,
            reply,
        })
        .await?
    }

    /// The next message of a stream without a [`RecvStream`].
    ///
    /// `Ok(None)` once the association was shut down gracefully and every message is read;
    /// `Err(Error::Closed(reason))` once it closed any other way (abort, peer unreachable,
    /// ...) and every message is read: the close reason is never lost.
    ///
    /// Cancel safety: dropping the future loses no message.
    ///
    /// # Errors
    ///
    /// [`Error::Closed`] as above; [`Error::EndpointClosed`] if the endpoint's task is gone.
    pub async fn recv(&self) -> Result<Option<ReceivedMessage>, Error> {
        loop {
            let notified = self.shared().recv_ready.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let popped = {
                let mut s = self.shared().lock();
                match s.recv_q.pop_front() {
                    Some(m) => {
                        let kick = s.took(m.data.len());
                        Some((m, kick, !s.recv_q.is_empty()))
                    }
                    None if s.recv_done => return s.end(),
                    None => None,
                }
            };
            let Some((m, kick, more)) = popped else {
                if self.inner.cmd.is_closed() {
                    return self.shared().lock().end();
                }
                notified.await;
                continue;
            };
            if kick {
                self.kick();
            }
            if more {
                // Another reader may be waiting for the rest.
                self.shared().recv_ready.notify_one();
            }
            return Ok(Some(m));
        }
    }

    /// Resolves with the reason once the association is closed (at once if it already is).
    ///
    /// Cancel safety: nothing to lose.
    pub async fn closed(&self) -> CloseReason {
        loop {
            let notified = self.shared().closed_wait.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if let Some(r) = self.close_reason() {
                return r;
            }
            if self.inner.cmd.is_closed() {
                return CloseReason::LocalAbort;
            }
            notified.await;
        }
    }

    /// Why the association closed, once it has.
    pub fn close_reason(&self) -> Option<CloseReason> {
        self.shared().lock().closed.clone()
    }

    /// Association counters, as the endpoint's task published them the last time it
    /// handled the association (every datagram, event or command for it): no await, no
    /// round trip; kept after the close.
    pub fn stats(&self) -> AssociationStats {
        self.shared().lock().snapshot.stats
    }

    /// Snapshots of the paths (address pair, state, standby, srtt, cwnd, PMTU, counters).
    /// The task publishes them at most every 2 ms while the association is busy, and at
    /// once on an event (path state, close...): the counters may miss the last
    /// milliseconds of activity; a call that finds them behind asks the task for a fresh
    /// publication, which the next call sees. Kept after the close.
    pub fn paths(&self) -> Vec<PathInfo> {
        let (paths, ask) = {
            let mut s = self.shared().lock();
            let ask = s.paths_stale && !std::mem::replace(&mut s.refresh_asked, true);
            (s.snapshot.paths.clone(), ask)
        };
        if ask {
            let _ = self.cmd(Cmd::Refresh { id: self.id() });
        }
        paths
    }

    /// The last snapshot of every path the association no longer has (its counters stay
    /// readable after the path is gone).
    pub fn removed_paths(&self) -> Vec<PathInfo> {
        self.shared().lock().snapshot.removed_paths.clone()
    }

    /// The negotiated stream counts: (outbound, inbound). Outbound streams are
    /// `0..outbound` for [`Association::send`].
    pub fn open_streams(&self) -> (u16, u16) {
        self.shared().lock().snapshot.open_streams
    }

    /// What the handshake agreed with the peer and what runs because of it: stream counts,
    /// the extensions both sides offered (PR-SCTP, NR-SACK, I-DATA, load sharing, Eifel),
    /// whether CMT is in force and which spurious-retransmission detection runs. Published
    /// by the task with [`Association::paths`] (no await; after [`Association::set_cmt`] a
    /// read may be one publication behind, as `paths` is); complete once `connect` or
    /// `accept` returned the association, and kept after the close.
    pub fn negotiated(&self) -> Negotiated {
        let (n, ask) = {
            let mut s = self.shared().lock();
            let ask = s.paths_stale && !std::mem::replace(&mut s.refresh_asked, true);
            (s.snapshot.negotiated, ask)
        };
        if ask {
            let _ = self.cmd(Cmd::Refresh { id: self.id() });
        }
        n
    }

    /// Graceful shutdown (RFC 9260 §9.2): queued data is delivered first. Resolves when the
    /// association is closed.
    ///
    /// Cancel safety: dropping the future does not stop the shutdown once it was asked for.
    ///
    /// # Errors
    ///
    /// [`Error::Closed`] if it closed for another reason than a graceful shutdown (abort,
    /// peer unreachable...).
    pub async fn shutdown(&self) -> Result<(), Error> {
        let id = self.id();
        let reason = self.request(|reply| Cmd::Shutdown { id, reply }).await?;
        match reason {
            CloseReason::Shutdown => Ok(()),
            r => Err(Error::Closed(r)),
        }
    }

    /// Aborts the association at once (the peer gets an ABORT).
    pub fn abort(&self) {
        let _ = self.cmd(Cmd::Abort { id: self.id() });
    }

    /// A handle for sending on `stream` (messages with [`SendStream::send`], bytes with
    /// `tokio::io::AsyncWrite`), with its own send options and scheduling settings.
    /// Several handles may send on one stream; their messages interleave in call order.
    ///
    /// # Errors
    ///
    /// [`Error::Send`] with [`SendError::InvalidStream`] if `stream` is not below the
    /// negotiated outbound stream count.
    pub fn open_stream(&self, stream: u16) -> Result<SendStream, Error> {
        let (streams, _) = self.open_streams();
        if stream >= streams {
            return Err(Error::Send(SendError::InvalidStream { stream, streams }));
        }
        Ok(SendStream::new(self.clone(), stream))
    }

    /// Claims inbound `stream`: from now on its messages go to the returned [`RecvStream`]
    /// (including those already waiting for [`Association::recv`]), not to `recv`. When the
    /// `RecvStream` is dropped, its unread messages and the stream's later ones go to
    /// `recv` again.
    ///
    /// # Errors
    ///
    /// [`Error::StreamInUse`] if a `RecvStream` for it exists.
    pub fn recv_stream(&self, stream: u16) -> Result<RecvStream, Error> {
        let mut s = self.shared().lock();
        if let Some(k) = s.incoming_streams.iter().position(|&i| i == stream) {
            // Opened by the peer and not yet accepted: this claim takes it.
            s.incoming_streams.remove(k);
            return Ok(RecvStream::new(self.clone(), stream));
        }
        if s.streams.contains_key(&stream) {
            return Err(Error::StreamInUse(stream));
        }
        let mut rx = StreamRx::default();
        let (mine, others) = std::mem::take(&mut s.recv_q)
            .into_iter()
            .partition(|m| m.stream_id == stream);
        rx.q = mine;
        s.recv_q = others;
        s.streams.insert(stream, rx);
        s.offered.insert(stream);
        Ok(RecvStream::new(self.clone(), stream))
    }

    /// The next inbound stream the peer starts using. From the first call on, the first
    /// message on a stream that was never seen before (and not claimed with
    /// [`Association::recv_stream`]) opens a [`RecvStream`] for it, returned here, and the
    /// stream's messages go there instead of to [`Association::recv`]. `None` once no more
    /// messages will arrive.
    ///
    /// Cancel safety: dropping the future loses no stream.
    pub async fn accept_stream(&self) -> Option<RecvStream> {
        loop {
            let notified = self.shared().stream_incoming.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            {
                let mut s = self.shared().lock();
                s.accepting = true;
                if let Some(id) = s.incoming_streams.pop_front() {
                    return Some(RecvStream::new(self.clone(), id));
                }
                if s.recv_done {
                    return None;
                }
            }
            if self.inner.cmd.is_closed() {
                return None;
            }
            notified.await;
        }
    }

    /// The association's events from now on: path state and PMTU changes, the peer's
    /// shutdown, a restart, send-buffer-low, the close. Each call returns an independent
    /// receiver.
    pub fn events(&self) -> Events {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut s = self.shared().lock();
        match &s.closed {
            // Closed already: the receiver gets the close and ends.
            Some(r) => {
                let _ = tx.send(crate::AssocEvent::Closed(r.clone()));
            }
            None => s.event_subs.push(tx),
        }
        Events { rx }
    }

    /// Makes the path to the peer's address `remote` the primary path: without CMT new
    /// data goes there while it is usable (RFC 9260 §5.1.2, SCTP_PRIMARY_ADDR).
    ///
    /// Cancel safety: if the future is dropped the change may or may not happen.
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchPath`] if no confirmed path goes to `remote`; [`Error::Closed`],
    /// [`Error::EndpointClosed`].
    pub async fn set_primary(&self, remote: SocketAddr) -> Result<(), Error> {
        self.path_policy(remote, PathOp::Primary).await
    }

    /// Application path policy: a standby path carries data only while no other path is
    /// active (CMT and the primary-path choice leave it alone until the others fail); it
    /// stays monitored by heartbeats. A standby primary gives way to an active alternate.
    /// Shown as [`PathInfo::standby`]. See also [`Association::set_path_forbidden`] and
    /// [`Association::set_path_cost`].
    ///
    /// Cancel safety: as [`Association::set_primary`].
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchPath`] if no path goes to `remote`; [`Error::Closed`],
    /// [`Error::EndpointClosed`].
    pub async fn set_path_standby(&self, remote: SocketAddr, standby: bool) -> Result<(), Error> {
        self.path_policy(remote, PathOp::Standby(standby)).await
    }

    /// Application path policy: forbids (or allows again) DATA on the path to `remote`
    /// (an address pair that must not carry data, e.g. a metered link). It stays monitored
    /// by heartbeats; chunks sent there before are retransmitted elsewhere; if every allowed
    /// path fails, data waits rather than use it. Shown as [`PathInfo::forbidden`].
    ///
    /// Cancel safety: as [`Association::set_primary`].
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchPath`] if no path goes to `remote`; [`Error::Closed`],
    /// [`Error::EndpointClosed`].
    pub async fn set_path_forbidden(
        &self,
        remote: SocketAddr,
        forbidden: bool,
    ) -> Result<(), Error> {
        self.path_policy(remote, PathOp::Forbidden(forbidden)).await
    }

    /// Application path policy: the cost of the path to `remote` (default 0). When the
    /// primary is not usable, new data fails over to the cheapest active alternate instead
    /// of the first. Shown as [`PathInfo::cost`].
    ///
    /// Cancel safety: as [`Association::set_primary`].
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchPath`] if no path goes to `remote`; [`Error::Closed`],
    /// [`Error::EndpointClosed`].
    pub async fn set_path_cost(&self, remote: SocketAddr, cost: u32) -> Result<(), Error> {
        self.path_policy(remote, PathOp::Cost(cost)).await
    }

    /// Removes the path to `remote` (an address gone, e.g. its interface down): it
    /// carries nothing more and is no longer probed; what was in flight on it is
    /// retransmitted on the other paths; a primary gives way. Its last snapshot moves to
    /// [`Association::removed_paths`]; other paths keep their ids. The peer is not told
    /// (that is RFC 5061's DELETE-IP) and may still send from that address.
    ///
    /// Cancel safety: as [`Association::set_primary`].
    ///
    /// # Errors
    ///
    /// [`Error::NoSuchPath`] if no path goes to `remote`; [`Error::RemovePath`] for the
    /// last confirmed path or during the handshake; [`Error::Closed`],
    /// [`Error::EndpointClosed`].
    pub async fn remove_path(&self, remote: SocketAddr) -> Result<(), Error> {
        self.path_policy(remote, PathOp::Remove).await
    }

    async fn path_policy(&self, remote: SocketAddr, op: PathOp) -> Result<(), Error> {
        let id = self.id();
        self.request(|reply| Cmd::PathPolicy {
            id,
            remote,
            op,
            reply,
        })
        .await?
    }

    /// Turns concurrent multipath transfer on (with these settings) or off at run time;
    /// data in flight stays where it is.
    ///
    /// # Errors
    ///
    /// [`Error::EndpointClosed`].
    pub fn set_cmt(&self, cmt: Option<CmtConfig>) -> Result<(), Error> {
        self.control(Control::Cmt(cmt))
    }

    /// The retransmission path policy from now on (Iyengar et al. §4.3).
    ///
    /// # Errors
    ///
    /// [`Error::EndpointClosed`].
    pub fn set_rtx_policy(&self, policy: RtxPolicy) -> Result<(), Error> {
        self.control(Control::RtxPolicy(policy))
    }

    /// Switches the stream scheduler (RFC 8260 §3); queued messages stay queued.
    ///
    /// # Errors
    ///
    /// [`Error::EndpointClosed`].
    pub fn set_stream_scheduler(&self, kind: SchedulerKind) -> Result<(), Error> {
        self.control(Control::Scheduler(kind))
    }

    pub(crate) fn control(&self, op: Control) -> Result<(), Error> {
        self.cmd(Cmd::Control { id: self.id(), op })
    }
}
