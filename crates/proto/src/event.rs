//! What the core tells the application, and the typed errors of its API.

use braid_wire::ErrorCause;

use crate::path::{PathId, PathState};

/// Something happened on an association; drained with `poll_event`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The handshake completed: data can flow.
    Connected,
    /// At least one message can be read with `recv`.
    Readable,
    /// The send buffer has room again after a `send` returned [`SendError::WouldBlock`].
    Writable,
    /// A stream's buffered bytes (queued or unacknowledged) dropped to the configured
    /// threshold or below.
    StreamBufferLow {
        /// The stream.
        stream: u16,
    },
    /// The peer started a graceful shutdown: it will send no more data.
    PeerShutdown,
    /// The peer restarted the association (RFC 9260 §5.2.4 case A); data in flight was lost.
    Restarted,
    /// A path became active or inactive.
    PathState {
        /// The path.
        path: PathId,
        /// Its new state.
        state: PathState,
    },
    /// The association is gone; the reason says why. Unread messages can still be read.
    Closed(CloseReason),
}

/// Why an association ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    /// The graceful shutdown completed (RFC 9260 §9.2).
    Shutdown,
    /// The application aborted it.
    LocalAbort,
    /// The peer sent an ABORT, with these causes.
    PeerAbort(Vec<ErrorCause>),
    /// The handshake did not complete: INIT or COOKIE-ECHO unanswered after
    /// Max.Init.Retransmits attempts.
    HandshakeTimeout,
    /// Association.Max.Retrans consecutive retransmissions or heartbeats went unanswered.
    PeerUnreachable,
    /// The peer broke the protocol; we sent an ABORT with this cause.
    ProtocolViolation(ErrorCause),
    /// The handshake was answered by an ICMP destination or port unreachable (RFC 9260
    /// Appendix C; RFC 6951 §5.5: port unreachable stands for protocol unreachable).
    Unreachable,
}

/// An ICMP error about a packet we sent, as the driver learned it (IP_RECVERR).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IcmpError {
    /// Destination network or host unreachable.
    Unreachable,
    /// Port (or protocol) unreachable: nobody listens there (RFC 6951 §5.5).
    PortUnreachable,
    /// Packet too big / fragmentation needed: the path MTU (IP packet bytes) it reports.
    TooBig {
        /// The next-hop MTU from the ICMP message; 0 when it carried none (RFC 1191 §4:
        /// older routers leave the field zero).
        mtu: usize,
    },
}

impl std::fmt::Display for CloseReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Shutdown => f.write_str("shut down gracefully"),
            Self::LocalAbort => f.write_str("aborted locally"),
            Self::PeerAbort(causes) => {
                f.write_str("aborted by the peer")?;
                if causes.is_empty() {
                    f.write_str(" (no cause given)")?;
                }
                for (i, c) in causes.iter().enumerate() {
                    write!(f, "{}{c}", if i == 0 { ": " } else { "; " })?;
                    if let ErrorCause::RestartWithNewEncapsulationPort { .. } = c {
                        // RFC 6951 as updated (NEAT D3.1 Appendix F): the peer refuses an
                        // INIT from a known address on a new UDP port.
                        f.write_str(
                            ": the peer still has an association with this address on \
                             another UDP port; wait for it to time out or use the old port",
                        )?;
                    }
                }
                Ok(())
            }
            Self::HandshakeTimeout => f.write_str("handshake timed out"),
            Self::Unreachable => f.write_str("peer unreachable (ICMP)"),
            Self::PeerUnreachable => {
                f.write_str("peer unreachable: Association.Max.Retrans exceeded")
            }
            Self::ProtocolViolation(c) => {
                write!(f, "the peer violated the protocol; aborted with {c}")
            }
        }
    }
}

/// Why `Association::remove_path` refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RemovePathError {
    /// No path has this id, or it was removed already.
    #[error("no such path")]
    UnknownPath,
    /// The handshake is not over: its path cannot go.
    #[error("the association is not established")]
    NotEstablished,
    /// It is the last confirmed path: nothing else could carry data.
    #[error("the last confirmed path cannot be removed")]
    LastPath,
}

/// Why `send` refused a message. Nothing is queued when it returns an error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// The stream does not exist (streams are numbered from 0 to the negotiated count - 1).
    #[error("stream {stream} does not exist ({streams} outbound streams)")]
    InvalidStream {
        /// Stream asked for.
        stream: u16,
        /// Outbound streams of the association.
        streams: u16,
    },
    /// The message is larger than `max_message_size`.
    #[error("message of {len} bytes exceeds the maximum of {max}")]
    MessageTooLarge {
        /// Message length.
        len: usize,
        /// Configured maximum.
        max: usize,
    },
    /// SCTP cannot carry an empty message (a DATA chunk needs user data).
    #[error("empty message")]
    EmptyMessage,
    /// The send buffer is full; retry after [`Event::Writable`].
    #[error("send buffer full")]
    WouldBlock,
    /// The association is shutting down or closed: no new data is accepted.
    #[error("association is shutting down or closed")]
    Closed,
    /// The peer shut the association down (or we are shutting it down): no new messages
    /// are accepted (RFC 9260 §9.2); everything accepted before is still delivered.
    #[error("association is shutting down (RFC 9260 §9.2): no new messages")]
    ShuttingDown,
}
