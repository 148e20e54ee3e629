//! The applications: traffic sources at the sender (saturated, fixed-size transfer, on/off)
//! and the sink at the receiver, which reads every message as soon as it is readable.
//!
//! Every message carries, in its first 8 bytes, the virtual time at which `send` accepted it
//! (nanoseconds, big-endian), so the sink measures each message's delay from generation at
//! the sender's application to delivery to the receiver's, whatever the delivery order.
//! Messages shorter than 8 bytes carry no stamp and give no delay sample. The next 8 bytes
//! (if the message is long enough) hold the message's sequence number in its stream, from
//! which the sink counts messages missing or duplicated on ordered streams.
//!
//! A saturated source writes its streams in strict round-robin order, retrying the same
//! stream while the send buffer is full (the plain socket API of 001_*.txt §6.2), or, with
//! `sender_queue_info`, tops up whichever stream has fewer than [`SQINFO_QUEUE_MESSAGES`]
//! messages queued (the sender queue info extension, draft-dreibholz-tsvwg-sctpsocket-sqinfo).

use std::ops::Range;
use std::time::Duration;

use braid_proto::{Association, Instant, ReceivedMessage, SendError, SendOptions};
use bytes::{BufMut, Bytes, BytesMut};

use crate::link::serialization_time;
use crate::scenario::TrafficSpec;

/// Bytes of the generation stamp at the start of a message.
pub const STAMP_LEN: usize = 8;

/// Bytes of the stamp and the per-stream sequence number.
pub const HEADER_LEN: usize = 16;

/// Sender queue info: a stream is refilled while fewer messages than this wait unsent in its
/// queue (enough for a Max.Burst of 4 packets between two application turns, 001_*.txt §6.2).
pub const SQINFO_QUEUE_MESSAGES: usize = 8;

/// Size of the buffer messages are cut from (one allocation for many messages).
const ARENA: usize = 1 << 20;

/// A message of `len` bytes stamped with `now` and sequence number `seq`, cut from `arena`.
pub fn stamped_message(arena: &mut BytesMut, now: Instant, seq: u64, len: usize) -> Bytes {
    if arena.capacity() < len {
        *arena = BytesMut::with_capacity(ARENA.max(len));
    }
    let mut head = [0u8; HEADER_LEN];
    head[..STAMP_LEN].copy_from_slice(&(now.since_epoch().as_nanos() as u64).to_be_bytes());
    head[STAMP_LEN..].copy_from_slice(&seq.to_be_bytes());
    let n = len.min(HEADER_LEN);
    arena.put_slice(&head[..n]);
    arena.put_bytes(0, len - n);
    arena.split().freeze()
}

/// The per-stream sequence number carried by a message, if it is long enough to carry one.
pub fn read_seq(data: &[u8]) -> Option<u64> {
    let b: [u8; 8] = data.get(STAMP_LEN..HEADER_LEN)?.try_into().ok()?;
    Some(u64::from_be_bytes(b))
}

/// The generation time stamped in a message, if it is long enough to carry one.
pub fn read_stamp(data: &[u8]) -> Option<Instant> {
    let b: [u8; STAMP_LEN] = data.get(..STAMP_LEN)?.try_into().ok()?;
    Some(Instant::from_duration(Duration::from_nanos(
        u64::from_be_bytes(b),
    )))
}

/// What a source does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SourceKind {
    /// Keeps the send buffer full.
    Saturated,
    /// Sends `total` bytes once.
    Transfer {
        /// Bytes to send.
        total: u64,
    },
    /// Generates one message every `spacing` during the first `on` of every `period`;
    /// messages the send buffer cannot take wait in the application.
    OnOff {
        /// Time between messages while on (message size at the on rate).
        spacing: Duration,
        /// On time per period.
        on: Duration,
        /// On plus off time.
        period: Duration,
    },
}

/// A sending application on a contiguous range of streams, used round-robin.
#[derive(Debug)]
pub struct Source {
    /// What it does.
    pub kind: SourceKind,
    /// Its first stream.
    pub first_stream: u16,
    /// Number of streams.
    pub streams: u16,
    /// Message size in bytes (the last message of a transfer may be shorter).
    pub message_size: usize,
    /// Send unordered.
    pub unordered: bool,
    /// Saturated: use sender queue info instead of strict round-robin (001_*.txt §6.2).
    pub sender_queue_info: bool,
    /// Next stream, relative to `first_stream`.
    next: u16,
    /// Per stream: the next message's sequence number.
    seq: Vec<u64>,
    /// Per stream: a StreamBufferLow event arrived and the stream was not refilled since.
    low: Vec<bool>,
    /// Bytes accepted by `send`.
    pub sent_bytes: u64,
    /// Messages accepted by `send`.
    pub sent_messages: u64,
    /// On/off: messages generated and not yet accepted.
    pub backlog: u64,
    /// The error that stopped it (the association closed, a message too large...).
    pub error: Option<SendError>,
}

impl Source {
    /// A source of `kind` on `streams` streams from `first_stream`.
    pub fn new(
        kind: SourceKind,
        first_stream: u16,
        streams: u16,
        message_size: usize,
        unordered: bool,
    ) -> Self {
        let streams = streams.max(1);
        Self {
            kind,
            first_stream,
            streams,
            message_size: message_size.max(1),
            unordered,
            sender_queue_info: false,
            next: 0,
            seq: vec![0; usize::from(streams)],
            low: vec![false; usize::from(streams)],
            sent_bytes: 0,
            sent_messages: 0,
            backlog: 0,
            error: None,
        }
    }

    /// The source a scenario's traffic table describes, from `first_stream` on.
    pub fn from_spec(spec: &TrafficSpec, first_stream: u16) -> Self {
        match *spec {
            TrafficSpec::Saturated {
                streams,
                message_size,
                unordered,
                sender_queue_info,
            } => Self {
                sender_queue_info,
                ..Self::new(
                    SourceKind::Saturated,
                    first_stream,
                    streams,
                    message_size,
                    unordered,
                )
            },
            TrafficSpec::Transfer {
                bytes,
                streams,
                message_size,
            } => Self::new(
                SourceKind::Transfer { total: bytes.0 },
                first_stream,
                streams,
                message_size,
                false,
            ),
            TrafficSpec::OnOff {
                rate,
                on,
                off,
                streams,
                message_size,
            } => Self::new(
                SourceKind::OnOff {
                    spacing: serialization_time(message_size, rate.0).max(Duration::from_nanos(1)),
                    on: on.0,
                    period: on.0 + off.0,
                },
                first_stream,
                streams,
                message_size,
                false,
            ),
        }
    }

    /// Streams this source uses.
    pub fn stream_range(&self) -> Range<u16> {
        self.first_stream..self.first_stream + self.streams
    }

    /// Whether everything it will ever send was accepted (transfers only).
    pub fn done_sending(&self) -> bool {
        matches!(self.kind, SourceKind::Transfer { total } if self.sent_bytes >= total)
    }

    /// The association reported that `stream`'s buffered bytes dropped to the low mark
    /// (`Event::StreamBufferLow`): with sender queue info, it is refilled first.
    pub fn on_buffer_low(&mut self, stream: u16) {
        if let Some(l) = stream
            .checked_sub(self.first_stream)
            .and_then(|i| self.low.get_mut(usize::from(i)))
        {
            *l = true;
        }
    }

    /// Sender queue info: the stream (relative) to write next, if any is below the refill
    /// mark: streams flagged low first, then the fewest queued messages, ties in round-robin
    /// order from `next`.
    fn sqinfo_pick(&self, a: &Association) -> Option<u16> {
        (0..self.streams)
            .map(|k| (self.next + k) % self.streams)
            .filter_map(|i| {
                let (_, queued) = a.stream_buffered(self.first_stream + i).unwrap_or((0, 0));
                (queued < SQINFO_QUEUE_MESSAGES).then_some((!self.low[usize::from(i)], queued, i))
            })
            .min_by_key(|&(not_low, queued, _)| (not_low, queued))
            .map(|(_, _, i)| i)
    }

    /// Calls `send` until the send buffer (of `send_buffer` bytes) would block or there is
    /// nothing to send (RFC 9260 §10 SEND primitive; one message per call).
    pub fn pump(
        &mut self,
        now: Instant,
        a: &mut Association,
        send_buffer: usize,
        arena: &mut BytesMut,
    ) {
        if self.error.is_some() {
            return;
        }
        loop {
            let len = match self.kind {
                SourceKind::Saturated => self.message_size,
                SourceKind::Transfer { total } => {
                    let left = total.saturating_sub(self.sent_bytes);
                    if left == 0 {
                        return;
                    }
                    (self.message_size as u64).min(left) as usize
                }
                SourceKind::OnOff { .. } => {
                    if self.backlog == 0 {
                        return;
                    }
                    self.message_size
                }
            };
            // Without queue info the application cannot tell which stream is short of data,
            // so it writes them in turn and waits on a full buffer (001_*.txt §6.2).
            let rel = if self.sender_queue_info && self.kind == SourceKind::Saturated {
                match self.sqinfo_pick(a) {
                    Some(i) => i,
                    None => return,
                }
            } else {
                self.next
            };
            // Checked first so that no message is built for a `send` that would block.
            if a.send_buffered() + len > send_buffer {
                return;
            }
            let msg = stamped_message(arena, now, self.seq[usize::from(rel)], len);
            let stream = self.first_stream + rel;
            let opts = SendOptions {
                unordered: self.unordered,
                ..SendOptions::default()
            };
            match a.send(now, stream, msg, opts) {
                Ok(()) => {
                    self.next = (rel + 1) % self.streams;
                    self.seq[usize::from(rel)] += 1;
                    self.low[usize::from(rel)] = false;
                    self.sent_bytes += len as u64;
                    self.sent_messages += 1;
                    if matches!(self.kind, SourceKind::OnOff { .. }) {
                        self.backlog -= 1;
                    }
                }
                Err(SendError::WouldBlock) => return,
                Err(e) => {
                    self.error = Some(e);
                    return;
                }
            }
        }
    }

    /// On/off: the first message generation time.
    pub fn first_tick(&self) -> Option<Instant> {
        matches!(self.kind, SourceKind::OnOff { .. }).then_some(Instant::ZERO)
    }

    /// On/off: generates one message at `now`; returns the next generation time.
    pub fn tick(&mut self, now: Instant) -> Option<Instant> {
        let SourceKind::OnOff {
            spacing,
            on,
            period,
        } = self.kind
        else {
            return None;
        };
        self.backlog += 1;
        let next = now + spacing;
        let p = period.as_nanos().max(1);
        let t = next.since_epoch().as_nanos();
        if t % p < on.as_nanos() {
            Some(next)
        } else {
            // Off: the next period starts the next burst.
            let start = (t / p + 1) * p;
            Some(Instant::from_duration(Duration::from_nanos(start as u64)))
        }
    }
}

/// One message handed to the receiving application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Delivery {
    /// Its stream.
    pub stream: u16,
    /// Its length.
    pub bytes: usize,
    /// From `send` accepting it to now, if it carried a stamp.
    pub delay: Option<Duration>,
}

/// Delivery integrity of one ordered stream.
#[derive(Debug, Clone, Copy, Default)]
struct SeqCheck {
    /// The sequence number the next message must carry.
    next: u64,
}

/// A transfer the sink watches for completion.
#[derive(Debug, Clone)]
struct Transfer {
    streams: Range<u16>,
    total: u64,
    got: u64,
    done: Option<Instant>,
}

/// The receiving application.
#[derive(Debug, Default)]
pub struct Sink {
    transfers: Vec<Transfer>,
    /// Ordered streams of the measured sources, checked for loss and duplication.
    checked: std::collections::BTreeMap<u16, SeqCheck>,
    /// Messages skipped on an ordered stream (a later sequence number arrived first).
    pub missing: u64,
    /// Messages delivered twice or out of order on an ordered stream.
    pub duplicated: u64,
    /// Bytes received in all.
    pub bytes: u64,
    /// Messages received in all.
    pub messages: u64,
}

impl Sink {
    /// A sink that watches the transfers of these sources.
    pub fn new(sources: &[Source]) -> Self {
        let transfers = sources
            .iter()
            .filter_map(|s| match s.kind {
                SourceKind::Transfer { total } => Some(Transfer {
                    streams: s.stream_range(),
                    total,
                    got: 0,
                    done: None,
                }),
                _ => None,
            })
            .collect();
        let checked = sources
            .iter()
            .filter(|s| !s.unordered && s.message_size >= HEADER_LEN)
            .flat_map(|s| s.stream_range())
            .map(|id| (id, SeqCheck::default()))
            .collect();
        Self {
            transfers,
            checked,
            missing: 0,
            duplicated: 0,
            bytes: 0,
            messages: 0,
        }
    }

    /// A message was read at `now`.
    pub fn on_message(&mut self, now: Instant, m: &ReceivedMessage) -> Delivery {
        let bytes = m.data.len();
        self.bytes += bytes as u64;
        self.messages += 1;
        if let (Some(c), Some(seq)) = (self.checked.get_mut(&m.stream_id), read_seq(&m.data)) {
            if seq < c.next {
                self.duplicated += 1;
            } else {
                self.missing += seq - c.next;
                c.next = seq + 1;
            }
        }
        for t in &mut self.transfers {
            if t.streams.contains(&m.stream_id) {
                t.got += bytes as u64;
                if t.done.is_none() && t.got >= t.total {
                    t.done = Some(now);
                }
            }
        }
        Delivery {
            stream: m.stream_id,
            bytes,
            delay: read_stamp(&m.data).map(|t| now - t),
        }
    }

    /// Whether the sink watches any transfer.
    pub fn has_transfers(&self) -> bool {
        !self.transfers.is_empty()
    }

    /// When the last watched transfer completed, once all have.
    pub fn transfers_done(&self) -> Option<Instant> {
        if self.transfers.is_empty() {
            return None;
        }
        self.transfers
            .iter()
            .map(|t| t.done)
            .try_fold(Instant::ZERO, |acc, d| d.map(|d| acc.max(d)))
    }
}
