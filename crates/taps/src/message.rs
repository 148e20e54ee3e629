//! Messages and their contexts (RFC 9622 §9.1).

use std::time::Duration;

use bytes::Bytes;

/// Per-message properties (RFC 9622 §9.1.3) and, on received messages, what the stack
/// reported about them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageContext {
    /// msgLifetime (§9.1.3.1): give up on the message after this long. braid: PR-SCTP timed
    /// reliability (RFC 3758 §4.1, when the peer supports it); TCP: ignored (fully
    /// reliable); UDP: ignored (unreliable anyway).
    pub lifetime: Option<Duration>,
    /// msgPriority (§9.1.3.2): lower is more important. Recorded: braid schedules by
    /// stream, not by message (connPriority sets the stream's priority).
    pub priority: u32,
    /// msgOrdered (§9.1.3.3): `false` sends it unordered (braid: the U bit).
    pub ordered: bool,
    /// safelyReplayable (§9.1.3.4): recorded (no 0-RTT stack).
    pub safely_replayable: bool,
    /// final (§9.1.3.5): the last message of this Connection; sending it closes the
    /// Connection's stream (braid-taps's end-of-stream marker).
    pub is_final: bool,
    /// The stream the message travelled on (received messages; braid stream id or framed
    /// stream id).
    pub stream: u16,
}

impl Default for MessageContext {
    fn default() -> Self {
        Self {
            lifetime: None,
            priority: 100,
            ordered: true,
            safely_replayable: false,
            is_final: false,
            stream: 0,
        }
    }
}

impl MessageContext {
    /// `NewMessageContext()`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets msgLifetime.
    pub fn with_lifetime(mut self, lifetime: Duration) -> Self {
        self.lifetime = Some(lifetime);
        self
    }

    /// Sets msgPriority.
    pub fn with_priority(mut self, priority: u32) -> Self {
        self.priority = priority;
        self
    }

    /// Sets msgOrdered.
    pub fn with_ordered(mut self, ordered: bool) -> Self {
        self.ordered = ordered;
        self
    }

    /// Sets final.
    pub fn with_final(mut self, is_final: bool) -> Self {
        self.is_final = is_final;
        self
    }
}

/// A message: bytes and their context.
///
/// ```
/// use std::time::Duration;
/// use braid_taps::{Message, MessageContext};
/// // Give up after 200 ms (braid: PR-SCTP timed reliability), deliver unordered.
/// let ctx = MessageContext::new()
///     .with_lifetime(Duration::from_millis(200))
///     .with_ordered(false);
/// let m = Message::with_context(&b"frame 42"[..], ctx);
/// assert_eq!(m.context.lifetime, Some(Duration::from_millis(200)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The payload (never empty on braid: SCTP has no empty user messages).
    pub data: Bytes,
    /// Its properties.
    pub context: MessageContext,
}

impl Message {
    /// A message with the default context.
    pub fn new(data: impl Into<Bytes>) -> Self {
        Self {
            data: data.into(),
            context: MessageContext::default(),
        }
    }

    /// A message with a context.
    pub fn with_context(data: impl Into<Bytes>, context: MessageContext) -> Self {
        Self {
            data: data.into(),
            context,
        }
    }
}
