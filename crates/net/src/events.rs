//! What an association tells the application besides messages: [`Association::events`].
//!
//! [`Association::events`]: crate::Association::events

use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use braid_proto::{CloseReason, PathId, PathState};
use tokio::sync::mpsc;

/// Something happened on an association (mapped by the endpoint's task from the core's
/// `braid_proto::Event`s and from the path snapshots it publishes).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AssocEvent {
    /// A path became active, potentially failed or inactive (RFC 9260 §8.2, RFC 7829).
    PathState {
        /// The path's index.
        path: PathId,
        /// Our address on it (unspecified: the OS chooses).
        local: SocketAddr,
        /// The peer's address (with its UDP encapsulation port).
        remote: SocketAddr,
        /// Its new state.
        state: PathState,
    },
    /// A path's PMTU (largest SCTP packet, bytes) changed: PLPMTUD, an ICMP Too Big.
    PmtuChanged {
        /// The path's index.
        path: PathId,
        /// Our address on it.
        local: SocketAddr,
        /// The peer's address.
        remote: SocketAddr,
        /// The new largest SCTP packet, bytes.
        mtu: usize,
    },
    /// The peer started a graceful shutdown (RFC 9260 §9.2): it sends no more data, and
    /// `send` refuses new messages.
    PeerShutdown,
    /// The peer restarted the association (RFC 9260 §5.2.4 case A): data in flight was lost.
    Restarted,
    /// A stream's buffered bytes (queued and unacknowledged) dropped to
    /// `AssociationConfig::stream_buffer_low` or below (Dreibholz et al.'s sender queue
    /// information; with the default threshold 0: everything sent on it was acknowledged).
    SendBufferLow {
        /// The stream.
        stream: u16,
    },
    /// The association closed; the last event.
    Closed(CloseReason),
}

/// The events of one association, from the moment [`crate::Association::events`] was
/// called; ends after [`AssocEvent::Closed`]. Unbounded: events are rare (no per-message
/// event), but an `Events` that is never read keeps them, so drop it when done.
#[derive(Debug)]
pub struct Events {
    pub(crate) rx: mpsc::UnboundedReceiver<AssocEvent>,
}

impl Events {
    /// The next event; `None` after [`AssocEvent::Closed`] (or once the endpoint is gone).
    ///
    /// Cancel safety: dropping the future loses no event.
    pub async fn next(&mut self) -> Option<AssocEvent> {
        self.rx.recv().await
    }

    /// Poll form of [`Events::next`] (for a hand-written `Stream` adapter).
    pub fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AssocEvent>> {
        self.get_mut().rx.poll_recv(cx)
    }
}
