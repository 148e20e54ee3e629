//! One SCTP association: the state machine of RFC 9260, driven only by
//! [`Association::handle_datagram`], [`Association::handle_timeout`] and the application
//! calls, and drained by [`Association::poll_transmit`], [`Association::poll_timeout`] and
//! [`Association::poll_event`].
//!
//! Call order, for a driver: after feeding inputs (datagrams, timeouts, `send`/`recv`),
//! call `poll_transmit` until it returns `None`, drain `poll_event`, then arm a timer for
//! `poll_timeout`. Time is always an argument.

mod app;
mod handshake;
mod heartbeat;
mod init_params;
mod input;
mod ls;
mod output;
mod path_monitor;
mod paths;
mod pmtu;
mod rx;
pub(crate) mod send;
mod shutdown;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use braid_wire::Chunk;
use bytes::Bytes;
use rand_chacha::ChaCha8Rng;

use crate::config::{AssociationConfig, SpuriousDetection};
use crate::cookie::Features;
use crate::event::{CloseReason, Event};
use crate::path::{Path, PathId, PathInfo};
use crate::recv::reassembly::{Reassembly, ReceivedMessage};
use crate::recv::tsn_map::TsnMap;
use crate::time::Instant;

pub(crate) use crate::cookie::CookieKey;
pub(crate) use init_params::{InitAckTags, build_init_ack, random_tag};
pub(crate) use paths::PathEvent;
pub use send::SendOptions;
use send::SendQueue;

/// Association state (RFC 9260 §4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// INIT sent, waiting for INIT-ACK.
    CookieWait,
    /// COOKIE-ECHO sent, waiting for COOKIE-ACK.
    CookieEchoed,
    /// Data flows both ways.
    Established,
    /// The application asked to shut down; draining outstanding data.
    ShutdownPending,
    /// SHUTDOWN sent.
    ShutdownSent,
    /// SHUTDOWN received; draining our outstanding data.
    ShutdownReceived,
    /// SHUTDOWN-ACK sent.
    ShutdownAckSent,
    /// Gone.
    Closed,
}

/// What an association's handshake agreed (INIT and INIT-ACK, RFC 9260 §5.1), and what
/// runs because of it: an extension is on only if both sides offered it. Read with
/// [`Association::negotiated`] once the association is established.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Negotiated {
    /// Outbound streams: ours asked for, capped by the peer's inbound limit (RFC 9260 §5.1.1).
    pub outbound_streams: u16,
    /// Inbound streams: the peer's outbound, capped by our limit.
    pub inbound_streams: u16,
    /// PR-SCTP (RFC 3758): both listed Forward-TSN-Supported.
    pub pr_sctp: bool,
    /// NR-SACK: both listed chunk 0x10 in Supported Extensions.
    pub nr_sack: bool,
    /// I-DATA (RFC 8260): messages of different streams may interleave.
    pub idata: bool,
    /// LS-SCTP load sharing: both sent Load-Sharing-Supported (Abd El Al et al. §4.6); it
    /// replaces CMT when on.
    pub load_sharing: bool,
    /// CMT is in force: our own setting (it needs nothing from the peer), off when load
    /// sharing runs instead.
    pub cmt: bool,
    /// The peer echoes TIMESTAMP chunks (Eifel-Supported, Ladha et al. Fig. 6 variant I).
    pub eifel_timestamp: bool,
    /// The peer echoes the retransmit bit (Eifel-Supported, Fig. 6 variant II).
    pub eifel_rbit: bool,
    /// The spurious-retransmission detection that runs: the configured one, or DupTSN when
    /// the peer does not echo the configured Eifel signal, or `Off` under load sharing.
    pub spurious_detection: SpuriousDetection,
}

impl State {
    /// RFC 9260 §4's name, for logs and traces.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::CookieWait => "COOKIE-WAIT",
            Self::CookieEchoed => "COOKIE-ECHOED",
            Self::Established => "ESTABLISHED",
            Self::ShutdownPending => "SHUTDOWN-PENDING",
            Self::ShutdownSent => "SHUTDOWN-SENT",
            Self::ShutdownReceived => "SHUTDOWN-RECEIVED",
            Self::ShutdownAckSent => "SHUTDOWN-ACK-SENT",
            Self::Closed => "CLOSED",
        }
    }
}

/// A datagram to send: its payload was appended to the buffer given to `poll_transmit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// Source address (unspecified: let the OS choose).
    pub local: SocketAddr,
    /// Destination address (with the UDP encapsulation port).
    pub remote: SocketAddr,
    /// Bytes appended to the buffer.
    pub size: usize,
    /// The packet is larger than the path's PMTU: it carries a DATA chunk cut for a larger
    /// PMTU that keeps its size, and IP may fragment it (RFC 9260 §7.3: no DF bit).
    pub may_fragment: bool,
}

/// Association-wide counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AssociationStats {
    /// User messages accepted by `send`.
    pub messages_sent: u64,
    /// User messages delivered to `recv`.
    pub messages_received: u64,
    /// User bytes acknowledged by the peer.
    pub bytes_acked: u64,
    /// User bytes delivered to the application.
    pub bytes_received: u64,
    /// DATA chunks received more than once.
    pub duplicate_tsns: u64,
    /// SACKs sent.
    pub sacks_sent: u64,
    /// Messages abandoned under PR-SCTP.
    pub abandoned_messages: u64,
    /// Packets dropped as malformed or failing a verification-tag check.
    pub packets_dropped: u64,
    /// Fast-retransmitted chunks found spurious (Ladha et al.: Eifel or DupTSN), each fast
    /// recovery's window cut undone once.
    pub spurious_fast_retransmits: u64,
    /// T3-rtx expiries found spurious (Ladha et al.: Eifel or DupTSN): every expiry of a
    /// loss-recovery episode found spurious, its cuts undone once.
    pub spurious_timeouts: u64,
    /// DATA chunks the receiver discarded for lack of room although their payload fitted
    /// the window it last advertised (RFC 9260 §6.2: 0 unless a sender cuts far smaller
    /// chunks than before, whose per-chunk charge the advertisement did not foresee).
    pub recv_window_drops: u64,
}

/// A control chunk waiting for a packet, with the path it must leave on.
#[derive(Debug)]
struct Control {
    path: PathId,
    chunk: Chunk,
}

/// A packet that must go out on its own with a given verification tag (INIT, INIT-ACK,
/// SHUTDOWN-COMPLETE, ABORT).
#[derive(Debug)]
struct Standalone {
    remote: SocketAddr,
    local: SocketAddr,
    vtag: u32,
    chunk: Chunk,
}

/// One SCTP association: sans-IO, driven by the [`crate::Endpoint`] that owns it.
///
/// The call order, the same in the simulator and on sockets:
///
/// 1. input: the endpoint hands each datagram to `handle_datagram` (judged whole first:
///    checksum, tag, chunk bounds) or an ICMP error to `handle_icmp`;
/// 2. timers: `handle_timeout(now)` once `poll_timeout()` has passed;
/// 3. the application: `send`/`recv`, `wait_writable`, the run-time setters;
/// 4. output: `poll_transmit(now, buf)` until `None` (each call builds one packet: control
///    chunks, then SACK, then retransmissions, then new data on the path the path
///    scheduler names); then `poll_event()` until `None`, and `poll_timeout()` for the next
///    wake-up.
///
/// The association orchestrates: a mechanism's state lives in the mechanism's type (the
/// controller in `cc`, the path scheduler in `send::path_sched`, RACK in `send::loss`,
/// PLPMTUD in `path::plpmtud`), not in this struct.
#[derive(Debug)]
pub struct Association {
    cfg: Arc<AssociationConfig>,
    key: Arc<CookieKey>,
    rng: ChaCha8Rng,
    state: State,
    local_port: u16,
    peer_port: u16,
    /// Tag the peer puts in packets to us.
    local_tag: u32,
    /// Tag we put in packets to the peer.
    peer_tag: u32,
    features: Features,
    paths: Vec<Path>,
    primary: PathId,
    /// Handshake: attempts, what to resend.
    init_attempts: u32,
    /// When the one INIT went out (none once it is resent: Karn's rule).
    init_sent: Option<Instant>,
    /// The paths to every address the application gave `connect`, while the INIT is
    /// unanswered (RFC 9260 §6.4: the INIT moves to another of them on T1 expiry or an
    /// ICMP error); empty once an INIT-ACK came, or with one address.
    init_paths: Vec<PathId>,
    handshake_chunk: Option<Chunk>,
    local_initial_tsn: u32,
    /// Every timer: T1, T2, T5, delayed SACK, and per path T3-rtx and heartbeat.
    timers: crate::timer::Timers,
    /// Consecutive errors over all paths (RFC 9260 §8.1).
    error_count: u32,
    tx: SendQueue,
    tsn_map: TsnMap,
    reasm: Reassembly,
    /// Messages received before a peer restart, still to be read.
    carried: VecDeque<ReceivedMessage>,
    inbound_streams: u16,
    sack: rx::SackState,
    control: VecDeque<Control>,
    standalone: VecDeque<Standalone>,
    events: VecDeque<Event>,
    close_reason: Option<CloseReason>,
    stats: AssociationStats,
    /// A SACK arrived since the last T3 expiry (zero-window probing, RFC 9260 §6.1); per
    /// path in `Path::sack_since_t3`, this one for the association.
    sack_since_t3: bool,
    /// The path the last SHUTDOWN came in on (RFC 9260 §6.4: the SHUTDOWN-ACK goes there).
    shutdown_rx_path: Option<PathId>,
    /// Per-path scratch space for SACK processing, reused to avoid allocating per SACK.
    ack_scratch: send::Acked,
    /// The lists incoming SACKs are decoded into, kept for their capacity.
    sack_in: input::SackIn,
    /// RACK-TLP, the time-based loss detector (it keeps every path's state).
    rack: send::loss::rack::Rack,
    /// The paths as the stream scheduler sees them (refreshed before it chooses).
    views: Vec<crate::sched::PathView>,
    /// Our addresses, announced in INIT/INIT-ACK when there are several.
    local_addrs: Vec<SocketAddr>,
    /// Paths added or removed that the endpoint has not drained yet.
    path_events: std::collections::VecDeque<PathEvent>,
    /// Tombstones among `paths` (`remove_path`).
    paths_removed: usize,
    /// Per-path views for the coupled congestion controllers, reused across SACKs.
    cc_scratch: Vec<crate::cc::CcPathView>,
    /// DAC: packets the SACK being processed acknowledges, from its flags (0: not said).
    dac_count: u8,
    /// The path scheduler in force (new data's path), installed once features are known.
    path_sched: send::path_sched::AnyScheduler,
    /// Its views of the paths, reused across decisions.
    path_views: Vec<send::path_sched::PathView>,
    /// The send run in force under CMT (packets), within `CmtConfig::send_run`.
    send_run: u16,
    /// Path the last DATA arrived on: a lone SACK goes back there (RFC 9260 §6.4).
    last_data_path: PathId,
    /// Paths (bit per path id < 64) DATA arrived on since the last SACK: under CMT the
    /// SACK takes the quickest of them, so it follows a failover.
    sack_paths: u64,
    /// The first path DATA arrived on since the last SACK (`SackPath::FirstData`).
    first_data_path: Option<PathId>,
    /// Earliest time of the next heartbeat to an unconfirmed address (HB.Max.Burst pacing,
    /// RFC 9260 §5.4).
    hb_slot: Instant,
    /// Path the last SHUTDOWN or SHUTDOWN-ACK went to (T2 retransmissions move on, §9.2).
    shutdown_path: PathId,
    /// Recorded decisions, when tracing is on.
    trace: crate::trace::Trace,
    /// LS-SCTP's receiver maps and LS-SACK ordering (Abd El Al et al. §4.2).
    ls: ls::LsState,
    /// TSval of the packet being built, and whether it carries a TIMESTAMP chunk.
    tx_ts: u32,
    tx_ts_on: bool,
    /// Send and receive buffers as autotuning grew them (`crate::autotune`).
    bufs: crate::autotune::Buffers,
}

impl Association {
    #[allow(clippy::too_many_arguments)]
    fn new_inner(
        cfg: Arc<AssociationConfig>,
        key: Arc<CookieKey>,
        rng: ChaCha8Rng,
        state: State,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        local_port: u16,
        peer_port: u16,
    ) -> Self {
        let path = Path::new(PathId(0), local, remote, &cfg, cfg.recv_buffer, now);
        let sched = send::path_sched::AnyScheduler::new(cfg.cmt.is_some(), cfg.path_assignment);
        let bufs = crate::autotune::Buffers::new(
            cfg.send_buffer,
            cfg.send_buffer_max,
            cfg.recv_buffer,
            cfg.recv_buffer_max,
        );
        Self {
            bufs,
            tx: SendQueue::new(
                cfg.outbound_streams,
                crate::sched::Scheduler::new(cfg.stream_scheduler, cfg.stream_paths.clone()),
            ),
            tsn_map: TsnMap::new(0, cfg.max_dup_tsns),
            reasm: Reassembly::new(cfg.max_inbound_streams),
            carried: VecDeque::new(),
            inbound_streams: cfg.max_inbound_streams,
            sack: rx::SackState::new(cfg.recv_buffer),
            cfg,
            key,
            rng,
            state,
            local_port,
            peer_port,
            local_tag: 0,
            peer_tag: 0,
            features: Features::default(),
            paths: vec![path],
            primary: PathId(0),
            init_attempts: 0,
            init_sent: None,
            init_paths: Vec::new(),
            handshake_chunk: None,
            local_initial_tsn: 0,
            timers: crate::timer::Timers::default(),
            error_count: 0,
            control: VecDeque::new(),
            standalone: VecDeque::new(),
            events: VecDeque::new(),
            close_reason: None,
            stats: AssociationStats::default(),
            sack_since_t3: false,
            shutdown_rx_path: None,
            ack_scratch: send::Acked::default(),
            rack: Default::default(),
            sack_in: Default::default(),
            views: Vec::new(),
            local_addrs: Vec::new(),
            path_events: Default::default(),
            paths_removed: 0,
            path_sched: sched,
            path_views: Vec::new(),
            send_run: 1,
            dac_count: 0,
            cc_scratch: Vec::new(),
            last_data_path: PathId(0),
            sack_paths: 0,
            first_data_path: None,
            hb_slot: now,
            shutdown_path: PathId(0),
            trace: crate::trace::Trace::default(),
            ls: ls::LsState::default(),
            tx_ts: 0,
            tx_ts_on: false,
        }
    }

    /// The association state.
    pub fn state(&self) -> State {
        self.state
    }

    /// Whether the association is gone.
    pub fn is_closed(&self) -> bool {
        self.state == State::Closed
    }

    /// Closed, with nothing left to send, report or read: the endpoint may forget it.
    pub fn is_drained(&self) -> bool {
        self.state == State::Closed
            && self.standalone.is_empty()
            && self.events.is_empty()
            && !self.reasm.has_ready()
            && self.carried.is_empty()
    }

    /// Why the association closed, once it has.
    pub fn close_reason(&self) -> Option<&CloseReason> {
        self.close_reason.as_ref()
    }

    /// Negotiated number of outbound streams.
    pub fn outbound_streams(&self) -> u16 {
        self.tx.stream_count()
    }

    /// Negotiated number of inbound streams.
    pub fn inbound_streams(&self) -> u16 {
        self.inbound_streams
    }

    /// Our SCTP port and the peer's.
    pub fn ports(&self) -> (u16, u16) {
        (self.local_port, self.peer_port)
    }

    /// Snapshots of the paths (not the removed ones: [`Self::removed_paths`]).
    pub fn paths(&self) -> Vec<PathInfo> {
        self.paths
            .iter()
            .filter(|p| !p.removed)
            .map(|p| p.info(p.id == self.primary))
            .collect()
    }

    /// Snapshots of the removed paths, as they were when removed (counters included).
    pub fn removed_paths(&self) -> Vec<PathInfo> {
        self.paths
            .iter()
            .filter(|p| p.removed)
            .map(|p| p.info(false))
            .collect()
    }

    /// Counters.
    pub fn stats(&self) -> AssociationStats {
        self.stats
    }

    /// Bytes buffered for sending (queued plus sent and unacknowledged).
    pub fn send_buffered(&self) -> usize {
        self.tx.buffered_bytes()
    }

    /// The application holds a message that does not fit the send buffer and did not call
    /// `send` for it (it checked [`Self::send_buffered`] first): as after a `send` that
    /// returned `WouldBlock`, the wait counts as send-buffer-limited (`PathStats::limited`)
    /// and `Event::Writable` follows when a SACK frees room.
    pub fn wait_writable(&mut self) {
        self.tx.want_writable = true;
    }

    /// The send buffer as autotuning grew it: `send` accepts a message while the bytes
    /// buffered stay within it (`send_buffer` up to `send_buffer_max`).
    pub fn send_buffer_limit(&self) -> usize {
        self.bufs.send_limit_now()
    }

    /// The receive buffer as autotuning grew it (`recv_buffer` up to `recv_buffer_max`):
    /// a_rwnd is this less the bytes held.
    pub fn recv_window(&self) -> usize {
        self.bufs.recv_window()
    }

    /// The send buffer limit, grown first if the paths' windows call for it.
    pub(crate) fn grow_send_limit(&mut self) -> usize {
        use crate::cc::Controller;
        let cwnds = self.paths.iter().map(|p| p.cc.window()).sum();
        self.bufs.send_limit(cwnds)
    }

    /// Charges this association's buffer growth to its endpoint's budgets.
    pub(crate) fn attach_buffer_budget(&mut self, budgets: Vec<crate::autotune::BufferBudget>) {
        self.bufs.grant.attach(budgets);
    }

    /// Bytes of user data received and not yet read: fragments and messages waiting for
    /// reassembly or stream order, and messages ready for `recv` (the receive buffer in use,
    /// without the per-chunk overhead charged against a_rwnd).
    pub fn recv_buffered(&self) -> usize {
        self.reasm.buffered_bytes() + self.carried.iter().map(|m| m.data.len()).sum::<usize>()
    }

    /// Bytes buffered on `stream` (queued plus sent and unacknowledged), and queued messages.
    pub fn stream_buffered(&self, stream: u16) -> Option<(usize, usize)> {
        self.tx.stream_buffered(stream)
    }

    /// The streams open on this association after the handshake: (outbound, inbound), the
    /// counts both sides agreed on in INIT/INIT-ACK (RFC 9260 §5.1.1).
    pub fn open_streams(&self) -> (u16, u16) {
        (self.tx.stream_count(), self.inbound_streams)
    }

    /// What the handshake agreed, and what runs because of it (see [`Negotiated`]); all
    /// zero and `false` (and `spurious_detection` [`SpuriousDetection::Off`]) until the
    /// handshake is over. `cmt` follows [`Self::set_cmt`].
    pub fn negotiated(&self) -> Negotiated {
        if matches!(self.state, State::CookieWait | State::CookieEchoed) {
            return Negotiated::default();
        }
        let (signal, dup) = self.spurious_detection();
        let spurious_detection = match (signal, dup) {
            (None, false) => SpuriousDetection::Off,
            (None, true) => SpuriousDetection::DupTsn,
            (Some(send::spurious::Signal::Timestamp), false) => SpuriousDetection::EifelTimestamp,
            (Some(send::spurious::Signal::Timestamp), true) => SpuriousDetection::EifelDupTsn,
            (Some(send::spurious::Signal::RetransmitBit), _) => SpuriousDetection::EifelRbit,
        };
        Negotiated {
            outbound_streams: self.tx.stream_count(),
            inbound_streams: self.inbound_streams,
            pr_sctp: self.features.pr_sctp,
            nr_sack: self.features.nr_sack,
            idata: self.features.idata,
            load_sharing: self.features.ls,
            cmt: !self.features.ls && self.cfg.cmt.is_some(),
            eifel_timestamp: self.features.eifel_ts,
            eifel_rbit: self.features.eifel_rbit,
            spurious_detection,
        }
    }

    /// Whether both sides listed I-DATA (RFC 8260 §2.2): messages travel in I-DATA chunks
    /// and may interleave; `false` before the handshake completes and on DATA fallback.
    pub fn interleaving(&self) -> bool {
        self.features.idata
    }

    /// Records the association's decisions from now on (or stops), for [`poll_trace`]. An
    /// endpoint drains them (`Endpoint::drain_traces`) only while its own switch is on:
    /// turn tracing on there, not here, for associations an endpoint owns.
    ///
    /// [`poll_trace`]: Association::poll_trace
    pub fn set_tracing(&mut self, on: bool) {
        self.trace.set_enabled(on);
    }

    /// The oldest recorded decision, with when it happened (`crate::trace`).
    pub fn poll_trace(&mut self) -> Option<(Instant, crate::TraceEvent)> {
        self.trace.pop()
    }

    /// Trace events dropped because they were not drained in time.
    pub fn trace_dropped(&self) -> u64 {
        self.trace.dropped
    }

    /// Moves `path` to `to`: the application hears of it ([`Event::PathState`]) and the
    /// trace records where it came from.
    /// Every association state change goes through here: it is traced (RFC 9260 §4).
    pub(crate) fn set_state(&mut self, now: Instant, to: State) {
        let from = self.state;
        if from == to {
            return;
        }
        self.state = to;
        tracing::debug!(from = from.as_str(), to = to.as_str(), "association state");
        self.trace
            .record(now, crate::TraceEvent::AssociationState { from, to });
    }

    fn set_path_state(&mut self, now: Instant, path: PathId, to: crate::path::PathState) {
        let p = &mut self.paths[path.0 as usize];
        if p.removed {
            // A tombstone stays as it was removed: no late ack or heartbeat revives it.
            return;
        }
        let from = p.state;
        p.state = to;
        if to == crate::path::PathState::Active {
            // Path Monitor: a path's loss rate counts from when it (re)joins (Abd El Al et al. §4.4).
            p.loss_base = (p.stats.data_chunks_sent, p.lost_chunks);
        }
        self.events.push_back(Event::PathState { path, state: to });
        self.trace
            .record(now, crate::TraceEvent::PathState { path, from, to });
    }

    /// Records a change of `path`'s window since `before` (cwnd, ssthresh), if tracing.
    fn trace_window(
        &mut self,
        now: Instant,
        path: PathId,
        before: (usize, usize),
        cause: crate::WindowCause,
    ) {
        use crate::cc::Controller;
        if !self.trace.enabled() {
            return;
        }
        let p = &self.paths[path.0 as usize];
        let (cwnd, ssthresh) = (p.cc.window(), p.cc.ssthresh());
        if (cwnd, ssthresh) != before {
            let ev = crate::TraceEvent::Window {
                path,
                cwnd,
                ssthresh,
                cause,
                flight: p.flight_size,
                srtt: p.rtt.srtt(),
                rttvar: p.rtt.rttvar(),
                min_rtt: p.rtt.min_rtt(),
                latest_rtt: p.rtt.latest_rtt(),
                pacing_rate: self.cfg.pacing.then_some(p.pacer.rate() as u64),
            };
            self.trace.record(now, ev);
        }
    }

    /// The next event.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The earliest time `handle_timeout` must be called, if any timer runs.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.timers.next()
    }

    fn primary_path(&self) -> &Path {
        &self.paths[self.primary.0 as usize]
    }

    fn path_mut(&mut self, id: PathId) -> &mut Path {
        &mut self.paths[id.0 as usize]
    }

    /// Our verification tag (the one the peer puts in its packets).
    pub(crate) fn local_tag(&self) -> u32 {
        self.local_tag
    }

    /// ABORT with `cause` and close (the endpoint refuses the association).
    pub(crate) fn abort_with(&mut self, now: Instant, cause: braid_wire::ErrorCause) {
        if self.state == State::Closed {
            return;
        }
        if self.peer_tag != 0 {
            self.queue_abort(vec![cause.clone()]);
        }
        self.close(now, CloseReason::ProtocolViolation(cause));
    }

    fn queue_control(&mut self, path: PathId, chunk: impl Into<Chunk>) {
        self.control.push_back(Control {
            path,
            chunk: chunk.into(),
        });
    }

    fn queue_standalone(&mut self, vtag: u32, chunk: impl Into<Chunk>) {
        // Where new data would go: the primary, or its failover (RFC 9260 §6.4.1).
        let p = &self.paths[self.single_data_path().0 as usize];
        let (local, remote) = (p.local, p.remote);
        self.standalone.push_back(Standalone {
            remote,
            local,
            vtag,
            chunk: chunk.into(),
        });
    }

    /// A packet to `remote` exactly (its UDP port included), not to a path.
    fn queue_standalone_to(&mut self, remote: SocketAddr, vtag: u32, chunk: impl Into<Chunk>) {
        let local = self.primary_path().local;
        self.standalone.push_back(Standalone {
            remote,
            local,
            vtag,
            chunk: chunk.into(),
        });
    }

    fn queue_abort(&mut self, causes: Vec<braid_wire::ErrorCause>) {
        let tag = self.peer_tag;
        self.queue_standalone(
            tag,
            braid_wire::chunk::Abort {
                t_bit: false,
                causes,
            },
        );
    }

    /// Enters CLOSED: stops every timer, drops what was in flight, reports why once.
    fn close(&mut self, now: Instant, reason: CloseReason) {
        if self.state == State::Closed {
            return;
        }
        tracing::debug!(?reason, "association closed");
        self.set_state(now, State::Closed);
        self.timers.stop_all();
        self.control.clear();
        self.tx.clear();
        self.drop_sender_state();
        self.close_reason = Some(reason.clone());
        self.events.push_back(Event::Closed(reason));
    }

    /// ABORT the peer for breaking the protocol (RFC 9260 §3.3.10.13) and close.
    fn protocol_violation(&mut self, now: Instant, detail: &'static str) {
        tracing::debug!(detail, "protocol violation");
        let cause =
            braid_wire::ErrorCause::ProtocolViolation(Bytes::from_static(detail.as_bytes()));
        self.queue_abort(vec![cause.clone()]);
        self.close(now, CloseReason::ProtocolViolation(cause));
    }

    /// Random non-zero verification tag (RFC 9260 §5.3.1).
    fn random_tag(&mut self) -> u32 {
        init_params::random_tag(&mut self.rng)
    }

    fn rto_jitter(&mut self, rto: Duration) -> Duration {
        use rand_core::RngCore;
        // HB.interval + RTO with a jitter of +/- 50 % of the RTO (RFC 9260 §8.3).
        let f = (self.rng.next_u32() % 1001) as f64 / 1000.0 - 0.5;
        rto.mul_f64(1.0 + f)
    }
}
