//! The applications: traffic sources at the sender (saturated, fixed-size transfer, on/off)
//! and the sink at the receiver, which reads every message as soon as it is readable.
//!
//! Every message starts with a header (big-endian), cut short in a shorter message:
//!
//! * bytes 0..8: the virtual time at which `send` accepted it (nanoseconds), so the sink
//!   measures each message's delay from generation at the sender's application to delivery
//!   to the receiver's, whatever the delivery order (no stamp, no delay sample);
//! * 8..16: its sequence number in its stream, from which the sink counts messages missing
//!   or duplicated on ordered streams;
//! * 16..20: its length, and 20..24: the CRC32c of the whole message with these 4 bytes
//!   taken as zero, so the sink catches a message delivered truncated, extended or with
//!   wrong bytes;
//!
//! and the rest is a pattern drawn from its stream and sequence number, so a piece of another
//! message in its place changes the checksum. A message shorter than the header carries no
//! checksum; the sink counts it corrupt if its source never sends one that short.
//!
//! A saturated source writes its streams in strict round-robin order, retrying the same
//! stream while the send buffer is full (the plain socket API of Dreibholz et al. §6.2), or, with
//! `sender_queue_info` (the sender queue info extension, draft-dreibholz-tsvwg-sctpsocket-sqinfo),
//! writes whichever stream has the fewest buffered bytes while they stay within σ/streams
//! ([`SqinfoPolicy::Bytes`]), or the fewest queued messages while fewer than
//! [`SQINFO_QUEUE_MESSAGES`] ([`SqinfoPolicy::Messages`]).

use std::ops::Range;
use std::time::Duration;

use braid_proto::{Association, Instant, ReceivedMessage, SendError, SendOptions};
use braid_wire::crc32c::{crc32c, crc32c_append};
use bytes::{BufMut, Bytes, BytesMut};

use crate::link::serialization_time;
use crate::scenario::{SqinfoPolicy, TrafficSpec};

/// Bytes of the generation stamp at the start of a message.
pub const STAMP_LEN: usize = 8;

/// End of the per-stream sequence number, after the stamp.
pub const SEQ_END: usize = 16;

/// Where the message's length (`u32`) is.
const LEN_AT: usize = 16;

/// Where the message's CRC32c (`u32`) is.
const CRC_AT: usize = 20;

/// Bytes of the whole header: stamp, sequence number, length and checksum.
pub const HEADER_LEN: usize = 24;

/// Sender queue info: a stream is refilled while fewer messages than this wait unsent in its
/// queue (enough for a Max.Burst of 4 packets between two application turns, Dreibholz et al. §6.2).
pub const SQINFO_QUEUE_MESSAGES: usize = 8;

/// Size of the buffer messages are cut from (one allocation for many messages).
const ARENA: usize = 1 << 20;

/// A message of `len` bytes of `stream` stamped with `now` and sequence number `seq`, cut
/// from `arena`: the header, then the pattern of ([`pattern_seed`]).
pub fn stamped_message(
    arena: &mut BytesMut,
    now: Instant,
    stream: u16,
    seq: u64,
    len: usize,
) -> Bytes {
    if arena.capacity() < len {
        *arena = BytesMut::with_capacity(ARENA.max(len));
    }
    let mut head = [0u8; HEADER_LEN];
    head[..STAMP_LEN].copy_from_slice(&(now.since_epoch().as_nanos() as u64).to_be_bytes());
    head[STAMP_LEN..SEQ_END].copy_from_slice(&seq.to_be_bytes());
    head[LEN_AT..CRC_AT].copy_from_slice(&u32::try_from(len).unwrap_or(u32::MAX).to_be_bytes());
    let n = len.min(HEADER_LEN);
    arena.put_slice(&head[..n]);
    arena.resize(len, 0);
    // Word by word into the slice: a loop of plain stores, not a `put` call per word.
    let mut word = pattern_seed(stream, seq);
    let mut words = arena[n..].chunks_exact_mut(8);
    for w in &mut words {
        w.copy_from_slice(&word.to_le_bytes());
        word = word.wrapping_add(PATTERN_STEP);
    }
    let tail = words.into_remainder();
    tail.copy_from_slice(&word.to_le_bytes()[..tail.len()]);
    if len >= HEADER_LEN {
        let crc = checksum(arena);
        arena[CRC_AT..HEADER_LEN].copy_from_slice(&crc.to_be_bytes());
    }
    arena.split().freeze()
}

/// Added to each 8-byte word of the pattern (the golden ratio, as SplitMix64 steps).
const PATTERN_STEP: u64 = 0x9E37_79B9_7F4A_7C15;

/// First word of a message's pattern: SplitMix64's mix of its stream and sequence number,
/// so no two messages of a run share one.
pub fn pattern_seed(stream: u16, seq: u64) -> u64 {
    let mut z = ((u64::from(stream) << 48) ^ seq).wrapping_add(PATTERN_STEP);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// CRC32c of a message of at least [`HEADER_LEN`] bytes with its checksum field as zero.
fn checksum(m: &[u8]) -> u32 {
    crc32c_append(
        crc32c_append(crc32c(&m[..CRC_AT]), &[0; 4]),
        &m[HEADER_LEN..],
    )
}

/// Whether a message of at least [`HEADER_LEN`] bytes has the length and checksum its
/// header says (shorter ones carry neither: `None`).
pub fn intact(m: &[u8]) -> Option<bool> {
    let len: [u8; 4] = m.get(LEN_AT..CRC_AT)?.try_into().ok()?;
    let crc: [u8; 4] = m.get(CRC_AT..HEADER_LEN)?.try_into().ok()?;
    Some(
        usize::try_from(u32::from_be_bytes(len)).is_ok_and(|l| l == m.len())
            && u32::from_be_bytes(crc) == checksum(m),
    )
}

/// The per-stream sequence number carried by a message, if it is long enough to carry one.
pub fn read_seq(data: &[u8]) -> Option<u64> {
    let b: [u8; 8] = data.get(STAMP_LEN..SEQ_END)?.try_into().ok()?;
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
    /// Saturated: use sender queue info instead of strict round-robin (Dreibholz et al. §6.2).
    pub sender_queue_info: bool,
    /// How the queue info is read.
    pub sqinfo_policy: SqinfoPolicy,
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
            sqinfo_policy: SqinfoPolicy::default(),
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
                sqinfo_policy,
                ..
            } => Self {
                sender_queue_info,
                sqinfo_policy,
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
                ..
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

    /// Length of the shortest message it sends: the last one of a transfer may be short.
    pub fn shortest_message(&self) -> usize {
        match self.kind {
            SourceKind::Transfer { total } => {
                let size = self.message_size as u64;
                let last = if total % size == 0 {
                    size
                } else {
                    total % size
                };
                usize::try_from(last).unwrap_or(usize::MAX)
            }
            SourceKind::Saturated | SourceKind::OnOff { .. } => self.message_size,
        }
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
    fn sqinfo_pick(&self, a: &Association, send_buffer: usize) -> Option<u16> {
        // Bytes: a stream may hold its share σ/streams of the send buffer, queued or in flight.
        let share = send_buffer / usize::from(self.streams);
        (0..self.streams)
            .map(|k| (self.next + k) % self.streams)
            .filter_map(|i| {
                let (bytes, queued) = a.stream_buffered(self.first_stream + i).unwrap_or((0, 0));
                let room = match self.sqinfo_policy {
                    SqinfoPolicy::Messages => queued < SQINFO_QUEUE_MESSAGES,
                    SqinfoPolicy::Bytes => bytes + self.message_size <= share,
                };
                let fill = match self.sqinfo_policy {
                    SqinfoPolicy::Messages => queued,
                    SqinfoPolicy::Bytes => bytes,
                };
                room.then_some((!self.low[usize::from(i)], fill, i))
            })
            .min_by_key(|&(not_low, fill, _)| (not_low, fill))
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
            // so it writes them in turn and waits on a full buffer (Dreibholz et al. §6.2).
            let rel = if self.sender_queue_info && self.kind == SourceKind::Saturated {
                match self.sqinfo_pick(a, send_buffer) {
                    Some(i) => i,
                    None => return,
                }
            } else {
                self.next
            };
            // Checked first so that no message is built for a `send` that would block; the
            // core still learns that the application waits on the buffer.
            if a.send_buffered() + len > send_buffer {
                a.wait_writable();
                return;
            }
            let stream = self.first_stream + rel;
            let msg = stamped_message(arena, now, stream, self.seq[usize::from(rel)], len);
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
    /// Streams of the measured sources whose every message carries a checksum.
    summed: std::collections::BTreeSet<u16>,
    /// Messages skipped on an ordered stream (a later sequence number arrived first).
    pub missing: u64,
    /// Messages delivered twice or out of order on an ordered stream.
    pub duplicated: u64,
    /// Messages whose length or content is not what their source sent.
    pub corrupt: u64,
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
            .filter(|s| !s.unordered && s.message_size >= SEQ_END)
            .flat_map(|s| s.stream_range())
            .map(|id| (id, SeqCheck::default()))
            .collect();
        let summed = sources
            .iter()
            .filter(|s| s.shortest_message() >= HEADER_LEN)
            .flat_map(|s| s.stream_range())
            .collect();
        Self {
            transfers,
            checked,
            summed,
            missing: 0,
            duplicated: 0,
            corrupt: 0,
            bytes: 0,
            messages: 0,
        }
    }

    /// A message was read at `now`.
    pub fn on_message(&mut self, now: Instant, m: &ReceivedMessage) -> Delivery {
        let bytes = m.data.len();
        self.bytes += bytes as u64;
        self.messages += 1;
        let ok = intact(&m.data).unwrap_or(!self.summed.contains(&m.stream_id));
        self.corrupt += u64::from(!ok);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn message(stream: u16, seq: u64, len: usize) -> Bytes {
        let now = Instant::from_duration(Duration::from_millis(1234));
        stamped_message(&mut BytesMut::new(), now, stream, seq, len)
    }

    fn received(stream: u16, data: Bytes) -> ReceivedMessage {
        ReceivedMessage {
            stream_id: stream,
            ppid: 0,
            unordered: false,
            data,
        }
    }

    #[test]
    fn the_header_reads_back() {
        let m = message(3, 7, 1452);
        assert_eq!(m.len(), 1452);
        assert_eq!(read_seq(&m), Some(7));
        assert_eq!(
            read_stamp(&m),
            Some(Instant::from_duration(Duration::from_millis(1234)))
        );
        assert_eq!(intact(&m), Some(true));
        for len in [
            HEADER_LEN,
            HEADER_LEN + 1,
            HEADER_LEN + 7,
            HEADER_LEN + 8,
            65536,
        ] {
            assert_eq!(intact(&message(0, 1, len)), Some(true), "{len}");
        }
        assert_eq!(intact(&message(0, 1, HEADER_LEN - 1)), None);
        assert_eq!(message(0, 1, 5).len(), 5);
    }

    #[test]
    fn wrong_bytes_and_wrong_lengths_are_caught() {
        let m = message(1, 9, 1000);
        for at in [0, STAMP_LEN, LEN_AT, CRC_AT, HEADER_LEN, 999] {
            let mut v = m.to_vec();
            v[at] ^= 0x10;
            assert_eq!(intact(&v), Some(false), "byte {at}");
        }
        assert_eq!(intact(&m[..999]), Some(false), "truncated");
        let mut longer = m.to_vec();
        longer.push(0);
        assert_eq!(intact(&longer), Some(false), "extended");
        // Another message's bytes in place of this one's (a fragment in the wrong message).
        let other = message(1, 10, 1000);
        let mut mixed = m.to_vec();
        mixed[500..].copy_from_slice(&other[500..]);
        assert_eq!(intact(&mixed), Some(false), "mixed");
        assert_ne!(pattern_seed(1, 9), pattern_seed(2, 9));
        assert_ne!(pattern_seed(1, 9), pattern_seed(1, 10));
    }

    #[test]
    fn the_sink_counts_corrupt_messages() {
        let src = Source::new(SourceKind::Transfer { total: 2500 }, 0, 1, 1000, false);
        assert_eq!(src.shortest_message(), 500);
        let mut sink = Sink::new(&[src]);
        let now = Instant::ZERO;
        sink.on_message(now, &received(0, message(0, 0, 1000)));
        assert_eq!(sink.corrupt, 0);
        let mut bad = message(0, 1, 1000).to_vec();
        bad[600] ^= 1;
        sink.on_message(now, &received(0, bad.into()));
        assert_eq!(sink.corrupt, 1);
        // Shorter than a header, on a stream whose messages all carry one: truncated.
        sink.on_message(now, &received(0, message(0, 2, 500).slice(..20)));
        assert_eq!(sink.corrupt, 2);
        // Sources whose messages are too short to carry a checksum are not judged.
        let tiny = Source::new(SourceKind::Saturated, 0, 1, 20, false);
        let mut sink = Sink::new(&[tiny]);
        sink.on_message(now, &received(0, message(0, 0, 20)));
        assert_eq!((sink.corrupt, sink.missing), (0, 0));
    }
}
