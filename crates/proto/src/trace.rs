//! What an association decided and why, as a stream of timestamped events a researcher can
//! plot (in the spirit of qlog): path state changes, window changes, fast retransmits, T3
//! expiries, where each SACK went and which stream the scheduler picked for which path.
//!
//! Tracing is off by default and costs a branch per decision then. When on, an association
//! keeps up to [`TRACE_CAPACITY`] events for the driver to drain ([`Association::poll_trace`]
//! or `Endpoint::drain_traces`, which drains only while the endpoint's switch is on and
//! visits every association, O(associations) per call); both drivers write them as JSON
//! lines, one file per association. Every event also goes to the `tracing` crate at TRACE level inside the
//! association's span.
//!
//! [`Association::poll_trace`]: crate::Association::poll_trace

use std::fmt::Write as _;

use crate::association::State;
use crate::path::plpmtud::PmtuState;
use crate::path::{PathId, PathState};
use crate::time::Instant;

/// Events an association holds before the oldest are dropped (and counted).
pub const TRACE_CAPACITY: usize = 1 << 16;

/// Why a path's window moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowCause {
    /// Acknowledged data (slow start or congestion avoidance, RFC 9260 §7.2.1–§7.2.2).
    Ack,
    /// A fast retransmit started fast recovery (§7.2.4).
    FastRetransmit,
    /// T3-rtx expired (§7.2.3).
    Timeout,
    /// The path was idle for an RTO or more (§7.2.1).
    Idle,
    /// A fast retransmit or timeout was found spurious and its cut undone (Ladha et al. §5).
    Spurious,
}

impl WindowCause {
    /// Lower-case name, as in the JSON lines.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ack => "ack",
            Self::FastRetransmit => "fast_retransmit",
            Self::Timeout => "timeout",
            Self::Idle => "idle",
            Self::Spurious => "spurious",
        }
    }
}

/// Which rule declared a chunk lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LossRule {
    /// Three miss indications (RFC 9260 §7.2.4; with SFR and DAC under CMT).
    ThreeMisses,
    /// RACK's time threshold (RFC 8985 §6.2).
    RackTime,
}

impl LossRule {
    /// Lower-case name, as in the JSON lines.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ThreeMisses => "three_misses",
            Self::RackTime => "rack_time",
        }
    }
}

/// One chunk of a traced packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkSummary {
    /// DATA or I-DATA: its TSN, stream and user data length.
    Data {
        /// TSN.
        tsn: u32,
        /// Stream.
        stream: u16,
        /// User data bytes.
        len: usize,
    },
    /// SACK or NR-SACK: its cumulative TSN ack and gap blocks as TSN ranges.
    Sack {
        /// Cumulative TSN ack.
        cum_tsn: u32,
        /// Gap ack blocks, first and last TSN of each.
        gaps: Vec<(u32, u32)>,
    },
    /// Any other chunk, by its name (RFC 9260 §3.2 and the extensions').
    Other(&'static str),
}

/// One decision of an association.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TraceEvent {
    /// A path changed state (RFC 9260 §8.2, RFC 7829).
    PathState {
        /// The path.
        path: PathId,
        /// Its state before.
        from: PathState,
        /// Its state now.
        to: PathState,
    },
    /// A path's congestion window or slow-start threshold changed.
    Window {
        /// The path.
        path: PathId,
        /// New cwnd, bytes.
        cwnd: usize,
        /// New ssthresh, bytes.
        ssthresh: usize,
        /// Why.
        cause: WindowCause,
        /// Bytes in flight on the path then.
        flight: usize,
        /// The path's smoothed RTT then, if measured.
        srtt: Option<std::time::Duration>,
        /// The path's RTT variation then.
        rttvar: std::time::Duration,
        /// The path's lowest RTT sample so far.
        min_rtt: Option<std::time::Duration>,
        /// The path's latest RTT sample.
        latest_rtt: Option<std::time::Duration>,
        /// The path's pacing rate then, bytes per second (when pacing is on).
        pacing_rate: Option<u64>,
    },
    /// A chunk was marked for fast retransmission (§7.2.4).
    FastRetransmit {
        /// Its TSN.
        tsn: u32,
        /// The path it was lost on.
        lost_on: PathId,
        /// The path the retransmission policy chose for it.
        resent_on: PathId,
        /// The rule that declared it lost.
        rule: LossRule,
    },
    /// T3-rtx expired on a path (§6.3.3).
    T3Expired {
        /// The path.
        path: PathId,
        /// Chunks it marked for retransmission.
        marked: usize,
        /// Where the marked chunks go.
        resent_on: PathId,
    },
    /// A fast retransmit or timeout on a path was found spurious (Ladha et al. Fig. 6, RFC 3708).
    SpuriousRetransmission {
        /// The path whose congestion state the retransmission had cut.
        path: PathId,
        /// It was a T3-rtx expiry (else a fast retransmit).
        timeout: bool,
    },
    /// A SACK left on a path.
    SackSent {
        /// The path.
        path: PathId,
        /// Its cumulative TSN ack.
        cum_tsn: u32,
        /// Its size on the wire in bytes (gap blocks make it grow; LS-SCTP: every LS-SACK).
        bytes: u32,
    },
    /// The stream scheduler started a message of `stream` on `path`.
    StreamScheduled {
        /// The stream.
        stream: u16,
        /// The path.
        path: PathId,
        /// The TSN of the message's first chunk.
        tsn: u32,
    },
    /// The association's state changed (RFC 9260 §4).
    AssociationState {
        /// The state before.
        from: State,
        /// The state now.
        to: State,
    },
    /// A path's PLPMTUD state changed (RFC 8899 §5.2).
    PmtuState {
        /// The path.
        path: PathId,
        /// The state before.
        from: PmtuState,
        /// The state now.
        to: PmtuState,
        /// The confirmed PLPMTU now (IP bytes).
        pmtu: usize,
    },
    /// A packet left (`sent`) or a verified one arrived, with its chunks.
    Packet {
        /// The path it went or came on.
        path: PathId,
        /// Sent (else received).
        sent: bool,
        /// Its size, SCTP common header included.
        size: usize,
        /// Its chunks, in order.
        chunks: Vec<ChunkSummary>,
    },
}

impl TraceEvent {
    /// The event's name in the JSON lines.
    pub fn name(&self) -> &'static str {
        match self {
            Self::PathState { .. } => "path_state",
            Self::Window { .. } => "window",
            Self::FastRetransmit { .. } => "fast_retransmit",
            Self::T3Expired { .. } => "t3_expired",
            Self::SpuriousRetransmission { .. } => "spurious_retransmission",
            Self::SackSent { .. } => "sack_sent",
            Self::StreamScheduled { .. } => "stream_scheduled",
            Self::AssociationState { .. } => "association_state",
            Self::PmtuState { .. } => "pmtu_state",
            Self::Packet { sent: true, .. } => "packet_sent",
            Self::Packet { sent: false, .. } => "packet_received",
        }
    }

    /// One JSON object on one line (no trailing newline): `time_us` since the driver's
    /// epoch, the event `name` and its fields.
    pub fn to_json_line(&self, at: Instant) -> String {
        let mut s = String::with_capacity(96);
        let _ = write!(
            s,
            "{{\"time_us\":{},\"name\":\"{}\"",
            at.since_epoch().as_micros(),
            self.name()
        );
        self.write_fields(&mut s);
        s.push('}');
        s
    }

    /// The event's fields as JSON object members, each preceded by a comma.
    pub(crate) fn write_fields(&self, s: &mut String) {
        let _ = match self {
            Self::PathState { path, from, to } => {
                write!(
                    s,
                    ",\"path\":{},\"from\":\"{from}\",\"to\":\"{to}\"",
                    path.0
                )
            }
            Self::Window {
                path,
                cwnd,
                ssthresh,
                cause,
                flight,
                srtt,
                rttvar,
                min_rtt,
                latest_rtt,
                pacing_rate,
            } => {
                let _ = write!(
                    s,
                    ",\"path\":{},\"cwnd\":{cwnd},\"ssthresh\":{ssthresh},\"cause\":\"{}\",\"flight\":{flight}",
                    path.0,
                    cause.as_str()
                );
                if let Some(r) = srtt {
                    let _ = write!(s, ",\"srtt_us\":{}", r.as_micros());
                }
                if let Some(r) = min_rtt {
                    let _ = write!(s, ",\"min_rtt_us\":{}", r.as_micros());
                }
                if let Some(r) = latest_rtt {
                    let _ = write!(s, ",\"latest_rtt_us\":{}", r.as_micros());
                }
                if let Some(r) = pacing_rate {
                    let _ = write!(s, ",\"pacing_rate\":{r}");
                }
                write!(s, ",\"rttvar_us\":{}", rttvar.as_micros())
            }
            Self::FastRetransmit {
                tsn,
                lost_on,
                resent_on,
                rule,
            } => write!(
                s,
                ",\"tsn\":{tsn},\"lost_on\":{},\"resent_on\":{},\"rule\":\"{}\"",
                lost_on.0,
                resent_on.0,
                rule.as_str()
            ),
            Self::T3Expired {
                path,
                marked,
                resent_on,
            } => write!(
                s,
                ",\"path\":{},\"marked\":{marked},\"resent_on\":{}",
                path.0, resent_on.0
            ),
            Self::SpuriousRetransmission { path, timeout } => {
                write!(s, ",\"path\":{},\"timeout\":{timeout}", path.0)
            }
            Self::SackSent {
                path,
                cum_tsn,
                bytes,
            } => {
                write!(
                    s,
                    ",\"path\":{},\"cum_tsn\":{cum_tsn},\"bytes\":{bytes}",
                    path.0
                )
            }
            Self::StreamScheduled { stream, path, tsn } => {
                write!(s, ",\"stream\":{stream},\"path\":{},\"tsn\":{tsn}", path.0)
            }
            Self::AssociationState { from, to } => write!(
                s,
                ",\"from\":\"{}\",\"to\":\"{}\"",
                from.as_str(),
                to.as_str()
            ),
            Self::PmtuState {
                path,
                from,
                to,
                pmtu,
            } => write!(
                s,
                ",\"path\":{},\"from\":\"{}\",\"to\":\"{}\",\"pmtu\":{pmtu}",
                path.0,
                from.as_str(),
                to.as_str()
            ),
            Self::Packet {
                path, size, chunks, ..
            } => {
                let _ = write!(s, ",\"path\":{},\"size\":{size},\"chunks\":[", path.0);
                for (i, c) in chunks.iter().enumerate() {
                    if i > 0 {
                        s.push(',');
                    }
                    let _ = match c {
                        ChunkSummary::Data { tsn, stream, len } => write!(
                            s,
                            "{{\"type\":\"data\",\"tsn\":{tsn},\"stream\":{stream},\"len\":{len}}}"
                        ),
                        ChunkSummary::Sack { cum_tsn, gaps } => {
                            let _ =
                                write!(s, "{{\"type\":\"sack\",\"cum_tsn\":{cum_tsn},\"gaps\":[");
                            for (j, (a, b)) in gaps.iter().enumerate() {
                                let _ = write!(s, "{}[{a},{b}]", if j > 0 { "," } else { "" });
                            }
                            write!(s, "]}}")
                        }
                        ChunkSummary::Other(name) => write!(s, "{{\"type\":\"{name}\"}}"),
                    };
                }
                write!(s, "]")
            }
        };
    }
}

/// What a traced packet carried (chunks that do not decode end the list).
pub(crate) fn summarize(packet: &bytes::Bytes) -> Vec<ChunkSummary> {
    use braid_wire::chunk::Chunk;
    let gaps = |cum: u32, blocks: &[braid_wire::chunk::GapAckBlock]| {
        blocks
            .iter()
            .map(|b| {
                (
                    cum.wrapping_add(u32::from(b.start)),
                    cum.wrapping_add(u32::from(b.end)),
                )
            })
            .collect()
    };
    let mut out = Vec::new();
    for raw in braid_wire::raw_chunks(packet) {
        let Ok(c) = raw.and_then(Chunk::decode) else {
            break;
        };
        out.push(match &c {
            Chunk::Data(d) => ChunkSummary::Data {
                tsn: d.tsn,
                stream: d.stream_id,
                len: d.user_data.len(),
            },
            Chunk::IData(d) => ChunkSummary::Data {
                tsn: d.tsn,
                stream: d.stream_id,
                len: d.user_data.len(),
            },
            Chunk::Sack(k) => ChunkSummary::Sack {
                cum_tsn: k.cum_tsn_ack,
                gaps: gaps(k.cum_tsn_ack, &k.gap_blocks),
            },
            Chunk::NrSack(k) => ChunkSummary::Sack {
                cum_tsn: k.cum_tsn_ack,
                gaps: gaps(k.cum_tsn_ack, &k.gap_blocks),
            },
            other => ChunkSummary::Other(other.name()),
        });
    }
    out
}

/// An association's trace buffer.
#[derive(Debug, Default)]
pub(crate) struct Trace {
    /// `None`: tracing is off.
    events: Option<std::collections::VecDeque<(Instant, TraceEvent)>>,
    /// Events dropped because the driver did not drain them in time.
    pub(crate) dropped: u64,
}

impl Trace {
    /// Whether events are recorded.
    pub(crate) fn enabled(&self) -> bool {
        self.events.is_some()
    }

    /// Turns recording on or off (off drops what was held).
    pub(crate) fn set_enabled(&mut self, on: bool) {
        if on != self.enabled() {
            self.events = on.then(std::collections::VecDeque::new);
        }
    }

    /// Records `ev` at `at` if tracing is on.
    pub(crate) fn record(&mut self, at: Instant, ev: TraceEvent) {
        let Some(q) = &mut self.events else { return };
        tracing::trace!(event = ev.name(), detail = ?ev);
        if q.len() == TRACE_CAPACITY {
            q.pop_front();
            self.dropped += 1;
        }
        q.push_back((at, ev));
    }

    /// The oldest recorded event.
    pub(crate) fn pop(&mut self) -> Option<(Instant, TraceEvent)> {
        self.events.as_mut()?.pop_front()
    }
}

/// An association's file, opened the first time it has an event.
struct Files<W> {
    open: Box<dyn FnMut(crate::AssocId) -> std::io::Result<W> + Send>,
    out: std::collections::BTreeMap<crate::AssocId, W>,
}

impl<W: std::io::Write> Files<W> {
    fn new(open: impl FnMut(crate::AssocId) -> std::io::Result<W> + Send + 'static) -> Self {
        Self {
            open: Box::new(open),
            out: std::collections::BTreeMap::new(),
        }
    }

    fn get(&mut self, id: crate::AssocId) -> std::io::Result<&mut W> {
        match self.out.entry(id) {
            std::collections::btree_map::Entry::Occupied(e) => Ok(e.into_mut()),
            std::collections::btree_map::Entry::Vacant(v) => Ok(v.insert((self.open)(id)?)),
        }
    }

    fn forget(&mut self, id: crate::AssocId) -> std::io::Result<()> {
        self.out.remove(&id).map_or(Ok(()), |mut w| w.flush())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.values_mut().try_for_each(std::io::Write::flush)
    }
}

/// Writes every association's trace to files of its own, which the driver opens (a file
/// per association, say): as JSON lines, as qlog (feature `qlog`, [`crate::qlog`]), or
/// both from the same events. The one piece both drivers share, so the simulator and the
/// socket driver produce the same files.
pub struct JsonLines<W: std::io::Write> {
    lines: Option<Files<W>>,
    #[cfg(feature = "qlog")]
    qlog: Option<(
        Files<W>,
        std::collections::BTreeMap<crate::AssocId, crate::qlog::QlogFile>,
    )>,
}

impl<W: std::io::Write> std::fmt::Debug for JsonLines<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonLines")
            .field(
                "associations",
                &self.lines.as_ref().map_or(0, |l| l.out.len()),
            )
            .finish()
    }
}

impl<W: std::io::Write> JsonLines<W> {
    /// A writer set that opens an association's JSON-lines writer with `open` the first
    /// time it has an event.
    pub fn new(open: impl FnMut(crate::AssocId) -> std::io::Result<W> + Send + 'static) -> Self {
        Self {
            lines: Some(Files::new(open)),
            #[cfg(feature = "qlog")]
            qlog: None,
        }
    }

    /// A writer set of qlog files only (JSON-SEQ, one per association, opened with `open`).
    #[cfg(feature = "qlog")]
    pub fn qlog(open: impl FnMut(crate::AssocId) -> std::io::Result<W> + Send + 'static) -> Self {
        Self {
            lines: None,
            qlog: Some((Files::new(open), std::collections::BTreeMap::new())),
        }
    }

    /// Also writes the same events as qlog, into files opened with `open`.
    #[cfg(feature = "qlog")]
    #[must_use]
    pub fn with_qlog(
        mut self,
        open: impl FnMut(crate::AssocId) -> std::io::Result<W> + Send + 'static,
    ) -> Self {
        self.qlog = Some((Files::new(open), std::collections::BTreeMap::new()));
        self
    }

    /// Writes one event of association `id` at `at`.
    pub fn write(
        &mut self,
        id: crate::AssocId,
        at: Instant,
        ev: &TraceEvent,
    ) -> std::io::Result<()> {
        if let Some(l) = &mut self.lines {
            writeln!(l.get(id)?, "{}", ev.to_json_line(at))?;
        }
        #[cfg(feature = "qlog")]
        if let Some((files, state)) = &mut self.qlog {
            let mut s = String::new();
            state.entry(id).or_default().records(id, at, ev, &mut s);
            files.get(id)?.write_all(s.as_bytes())?;
        }
        Ok(())
    }

    /// Turns tracing on in `ep` and writes what its associations recorded so far.
    pub fn drain(&mut self, ep: &mut crate::Endpoint) -> std::io::Result<()> {
        ep.set_tracing(true);
        let mut result = Ok(());
        ep.drain_traces(|id, at, ev| {
            if result.is_ok() {
                result = self.write(id, at, ev);
            }
        });
        result
    }

    /// Flushes and closes the writers of an association the driver forgets.
    pub fn forget(&mut self, id: crate::AssocId) -> std::io::Result<()> {
        #[cfg(feature = "qlog")]
        if let Some((files, state)) = &mut self.qlog {
            state.remove(&id);
            files.forget(id)?;
        }
        self.lines.as_mut().map_or(Ok(()), |l| l.forget(id))
    }

    /// Flushes every writer.
    pub fn flush(&mut self) -> std::io::Result<()> {
        #[cfg(feature = "qlog")]
        if let Some((files, _)) = &mut self.qlog {
            files.flush()?;
        }
        self.lines.as_mut().map_or(Ok(()), Files::flush)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn json_lines_name_the_event_and_its_fields() {
        let at = Instant::ZERO + Duration::from_micros(1500);
        let ev = TraceEvent::Window {
            path: PathId(1),
            cwnd: 4380,
            ssthresh: 65535,
            cause: WindowCause::FastRetransmit,
            flight: 2904,
            srtt: Some(Duration::from_millis(20)),
            rttvar: Duration::from_millis(3),
            min_rtt: Some(Duration::from_millis(18)),
            latest_rtt: None,
            pacing_rate: None,
        };
        assert_eq!(
            ev.to_json_line(at),
            r#"{"time_us":1500,"name":"window","path":1,"cwnd":4380,"ssthresh":65535,"cause":"fast_retransmit","flight":2904,"srtt_us":20000,"min_rtt_us":18000,"rttvar_us":3000}"#
        );
        let ev = TraceEvent::Packet {
            path: PathId(2),
            sent: true,
            size: 80,
            chunks: vec![
                ChunkSummary::Sack {
                    cum_tsn: 9,
                    gaps: vec![(11, 12)],
                },
                ChunkSummary::Data {
                    tsn: 10,
                    stream: 1,
                    len: 20,
                },
            ],
        };
        assert_eq!(
            ev.to_json_line(at),
            r#"{"time_us":1500,"name":"packet_sent","path":2,"size":80,"chunks":[{"type":"sack","cum_tsn":9,"gaps":[[11,12]]},{"type":"data","tsn":10,"stream":1,"len":20}]}"#
        );
        let ev = TraceEvent::PathState {
            path: PathId(0),
            from: PathState::Active,
            to: PathState::PotentiallyFailed,
        };
        assert_eq!(
            ev.to_json_line(at),
            r#"{"time_us":1500,"name":"path_state","path":0,"from":"active","to":"pf"}"#
        );
    }

    #[test]
    fn a_packet_is_summarized_chunk_by_chunk() {
        use braid_wire::chunk::{Chunk, Data, GapAckBlock, Sack};
        let p = braid_wire::Packet {
            src_port: 1,
            dst_port: 2,
            verification_tag: 3,
            chunks: vec![
                Chunk::Sack(Sack {
                    cum_tsn_ack: u32::MAX,
                    a_rwnd: 1000,
                    gap_blocks: vec![GapAckBlock { start: 2, end: 3 }],
                    dup_tsns: vec![],
                }),
                Chunk::Data(Data {
                    tsn: 4,
                    stream_id: 5,
                    user_data: bytes::Bytes::from_static(b"hello"),
                    ..Data::default()
                }),
            ],
        };
        let b = bytes::Bytes::from(p.to_vec().unwrap());
        assert_eq!(
            summarize(&b),
            [
                // Gap blocks are offsets from the cumulative ack, wrapping (RFC 9260 §3.3.4).
                ChunkSummary::Sack {
                    cum_tsn: u32::MAX,
                    gaps: vec![(1, 2)],
                },
                ChunkSummary::Data {
                    tsn: 4,
                    stream: 5,
                    len: 5
                }
            ]
        );
    }

    #[test]
    fn a_full_buffer_drops_the_oldest_and_counts() {
        let mut t = Trace::default();
        let ev = |tsn| TraceEvent::SackSent {
            path: PathId(0),
            cum_tsn: tsn,
            bytes: 16,
        };
        t.record(Instant::ZERO, ev(0));
        assert!(t.pop().is_none(), "off by default");
        t.set_enabled(true);
        for i in 0..=TRACE_CAPACITY as u32 {
            t.record(Instant::ZERO, ev(i));
        }
        assert_eq!(t.dropped, 1);
        assert_eq!(t.pop().map(|(_, e)| e), Some(ev(1)));
    }
}
