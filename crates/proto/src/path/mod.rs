//! A path: one (local address, remote address) pair of an association with its own RTO,
//! congestion window, error counter and heartbeat state (RFC 9260 §6.3, §7.2, §8.2, §8.3).

pub(crate) mod pacer;
pub(crate) mod plpmtud;
pub(crate) mod psn;
pub(crate) mod rto;
pub(crate) mod seq_list;

use std::net::SocketAddr;
use std::time::Duration;

use crate::cc::{AnyController, Controller};
use crate::config::AssociationConfig;
use crate::time::Instant;
pub(crate) use rto::RttEstimator;

/// A path's identity within its association: its slot in the association's path table.
/// Stable for the association's life: a removed path keeps its slot as a tombstone, so no
/// other path's id changes and no id is reused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct PathId(pub u16);

/// The bare slot number, as traces and `braid perf` show it.
impl std::fmt::Display for PathId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

/// Reachability of a path (RFC 9260 §5.4, §8.2; RFC 7829).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathState {
    /// Usable.
    Active,
    /// A peer address learned from INIT/INIT-ACK, not yet confirmed by a HEARTBEAT-ACK
    /// (RFC 9260 §5.4): carries heartbeats only.
    Unconfirmed,
    /// More than PFMR consecutive errors (RFC 7829 §5.1): avoided for data while another
    /// path is active; heartbeats probe it every RTO.
    PotentiallyFailed,
    /// Path.Max.Retrans consecutive errors: not used until a heartbeat gets through.
    Inactive,
}

impl PathState {
    /// Lower-case name, for logs and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Unconfirmed => "unconfirmed",
            Self::PotentiallyFailed => "pf",
            Self::Inactive => "inactive",
        }
    }
}

impl std::fmt::Display for PathState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The smallest SCTP packet size a path is ever given: what fits IPv4's 576-byte minimum
/// datagram behind IP and UDP headers (RFC 791, RFC 8899 §5.1.2).
pub(crate) const MIN_SCTP_MTU: usize = 576 - 20 - 8;

/// Bytes of IP (and UDP) headers in front of the SCTP packet on a path.
pub(crate) fn header_overhead(remote: &SocketAddr, udp: bool) -> usize {
    let ip = if remote.is_ipv4() { 20 } else { 40 };
    ip + if udp { 8 } else { 0 }
}

/// Per-path counters, exposed in [`PathInfo`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathStats {
    /// SCTP packets sent.
    pub packets_sent: u64,
    /// Bytes of SCTP packets sent.
    pub bytes_sent: u64,
    /// SCTP packets received on this path (its local and remote address pair) that passed
    /// the verification-tag check (RFC 9260 §8.5), whatever they carried.
    pub packets_received: u64,
    /// Bytes of those packets (SCTP header and chunks, as `bytes_sent`).
    pub bytes_received: u64,
    /// DATA chunks sent for the first time.
    pub data_chunks_sent: u64,
    /// DATA chunks retransmitted (fast and timeout).
    pub retransmissions: u64,
    /// DATA chunks fast-retransmitted.
    pub fast_retransmissions: u64,
    /// T3-rtx expirations.
    pub timeouts: u64,
    /// Tail loss probes sent (RACK-TLP, RFC 8985 §7).
    pub tail_loss_probes: u64,
    /// How long new data on this path was held back, by what.
    pub limited: LimitTimes,
}

/// What held a path's new data back, and for how long in total: the limit a transfer hit.
/// Time the path was sending, or was not one new data may use, counts nowhere.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LimitTimes {
    /// Its congestion window was full.
    pub cwnd: Duration,
    /// The peer's receive window was closed.
    pub peer_window: Duration,
    /// Nothing unsent while the application waited for send-buffer room.
    pub send_buffer: Duration,
    /// Nothing unsent and the application not waiting: it had nothing more to send.
    pub application: Duration,
    /// LS-SCTP held it back for its share of the peer's window: it held its cwnd/RTT share
    /// already, or the window does not cover its RTT (Abd El Al et al. §4.3, Eq. (1)).
    pub share: Duration,
}

/// One of [`LimitTimes`]'s causes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Limit {
    Cwnd,
    PeerWindow,
    SendBuffer,
    Application,
    Share,
}

impl LimitTimes {
    fn add(&mut self, limit: Limit, d: Duration) {
        let slot = match limit {
            Limit::Cwnd => &mut self.cwnd,
            Limit::PeerWindow => &mut self.peer_window,
            Limit::SendBuffer => &mut self.send_buffer,
            Limit::Application => &mut self.application,
            Limit::Share => &mut self.share,
        };
        *slot += d;
    }
}

/// A snapshot of a path for the application and the drivers' statistics.
#[derive(Debug, Clone, PartialEq)]
pub struct PathInfo {
    /// Path index.
    pub id: PathId,
    /// Local address (unspecified: the driver chooses).
    pub local: SocketAddr,
    /// Remote address.
    pub remote: SocketAddr,
    /// Reachability.
    pub state: PathState,
    /// Whether the remote address is confirmed (RFC 9260 §5.4): only then it gets DATA.
    pub confirmed: bool,
    /// Whether this is the primary path.
    pub primary: bool,
    /// Smoothed RTT, if measured.
    pub srtt: Option<Duration>,
    /// Current RTO.
    pub rto: Duration,
    /// Congestion window, bytes.
    pub cwnd: usize,
    /// Slow-start threshold, bytes.
    pub ssthresh: usize,
    /// Bytes in flight.
    pub flight_size: usize,
    /// Largest SCTP packet, bytes (path MTU less IP/UDP headers).
    pub mtu: usize,
    /// PLPMTUD's state on this path (RFC 8899), `None` when it is off.
    pub pmtu_state: Option<plpmtud::PmtuState>,
    /// Counters.
    pub stats: PathStats,
    /// A standby path: it carries data only while no other path is active
    /// (`Association::set_path_standby`).
    pub standby: bool,
    /// The application forbade DATA on this path (`Association::set_path_forbidden`).
    pub forbidden: bool,
    /// The application's cost of this path: failover picks the cheapest active alternate
    /// (`Association::set_path_cost`; default 0).
    pub cost: u32,
}

/// Heartbeat bookkeeping (RFC 9260 §8.3).
#[derive(Debug, Clone, Default)]
pub(crate) struct HeartbeatState {
    /// Nonce and send time of the unanswered heartbeat.
    pub(crate) outstanding: Option<(u64, Instant)>,
    /// Send one heartbeat at the next timer even if the path is busy (an RTT sample for
    /// a path that carries no data of ours, e.g. to pick where SACKs go under CMT).
    pub(crate) probe: bool,
}

/// Loss recovery state of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Recovery {
    /// Not recovering: the window grows with acknowledged data.
    Open,
    /// Fast recovery (RFC 9260 §7.2.4 step 2): one window reduction, no growth, until the
    /// path's data up to `exit` is acknowledged (under CMT, its own pseudo-cumack passes it).
    Fast {
        /// Highest TSN outstanding (on the path, under CMT) when recovery began.
        exit: u32,
    },
    /// Slow start after T3-rtx (RFC 9260 §6.3.3): chunks outstanding at the timeout belong
    /// to the loss episode it answered, so their fast retransmits cut cwnd no further until
    /// the path's data up to `recover` is acknowledged (RFC 6582 §3.2 step 1, for SCTP).
    AfterTimeout {
        /// Highest TSN outstanding (on the path, under CMT) at the timeout.
        recover: u32,
    },
}

/// State of one path.
#[derive(Debug, Clone)]
pub(crate) struct Path {
    pub(crate) id: PathId,
    pub(crate) local: SocketAddr,
    pub(crate) remote: SocketAddr,
    pub(crate) state: PathState,
    /// Confirmed (RFC 9260 §5.4): by the handshake for the first path, by a HEARTBEAT-ACK
    /// for the others. Separate from `state`: an address that fails before it is
    /// confirmed is Inactive and still unconfirmed, and never gets DATA.
    pub(crate) confirmed: bool,
    /// Counts the path's failures (PF or Inactive): a chunk sent in an older epoch that is
    /// acknowledged later does not revive the path.
    pub(crate) fail_epoch: u16,
    /// A SACK arrived over this path since its last T3 expiry (zero-window probing).
    pub(crate) sack_since_t3: bool,
    /// Largest SCTP packet (common header included) the path carries.
    pub(crate) mtu: usize,
    pub(crate) rtt: RttEstimator,
    pub(crate) cc: AnyController,
    /// Bytes of DATA sent on this path and neither acknowledged nor marked lost.
    pub(crate) flight_size: usize,
    /// Consecutive unanswered retransmissions/heartbeats (RFC 9260 §8.2).
    pub(crate) error_count: u32,
    pub(crate) heartbeat: HeartbeatState,
    /// Last time DATA was sent here (idle detection, §7.2.1).
    pub(crate) last_data_sent: Instant,
    /// Loss recovery on this path (RFC 9260 §7.2.4; per path under CMT, Iyengar et al.).
    pub(crate) recovery: Recovery,
    /// One packet of fast retransmissions may go out regardless of cwnd (§7.2.4 step 3).
    pub(crate) rtx_cwnd_exempt: bool,
    /// `seq` of the chunks waiting to be retransmitted on this path, in TSN order.
    pub(crate) rtx_marked: seq_list::SeqList,
    /// TSN and send time of the chunk timing this round trip (one sample per RTT, §6.3.1).
    pub(crate) rtt_probe: Option<(u32, Instant)>,
    /// Bytes of user data last sent on this path and not yet cumulatively acknowledged,
    /// NR-acknowledged or abandoned (buffer splitting).
    pub(crate) buffered: usize,
    /// Packets with new data still allowed in this burst (Max.Burst, RFC 9260 §6.1).
    pub(crate) burst_budget: u32,
    /// New data waited for this path's window since the last SACK, held by the pacer or by
    /// a send run short of room although the window was not full: the window is in use
    /// (Linux's `tcp_is_cwnd_limited`), so the next ack may grow it (RFC 9260 §7.2.1).
    pub(crate) window_held: bool,
    /// Packets of new data left in the run this path is sending (`CmtConfig::send_run`).
    pub(crate) run_left: u32,
    /// Pacing of new DATA (`AssociationConfig::pacing`).
    pub(crate) pacer: pacer::Pacer,
    /// With several paths: `seq` of the chunks whose last transmission was on this path and
    /// that are neither acknowledged nor abandoned nor moved to another path since, in TSN
    /// order. They give CMT's pseudo-cumack (CUC) and SFR's miss candidates without
    /// scanning the whole retransmission queue.
    pub(crate) sent_live: seq_list::SeqList,
    pub(crate) stats: PathStats,
    /// LS-SCTP: this path's sequence numbers (Abd El Al et al. §4.2).
    pub(crate) psn: psn::PsnSender,
    /// LS-SCTP: cwnd/SRTT just before the last fast-retransmit cut, bytes per second (0
    /// after a timeout): a path's rate between losses, which the cut and SRTT's lag hide.
    pub(crate) rate_at_loss: f64,
    /// Path Monitor (Abd El Al et al. §4.4): (chunks sent, retransmitted) when the path last
    /// became active; its loss rate counts from there.
    pub(crate) loss_base: (u64, u64),
    /// Chunks found lost on this path (fast retransmit or T3), for the Path Monitor.
    pub(crate) lost_chunks: u64,
    /// The loss-recovery episodes whose spuriousness is still being decided, oldest first
    /// (Ladha et al.; a few, since DupTSN reports may come after the next episode began).
    pub(crate) spurious: Vec<crate::association::send::spurious::Episode>,
    /// PLPMTUD (RFC 8899), when configured: it sets `mtu`.
    pub(crate) plpmtud: Option<plpmtud::Plpmtud>,
    /// Application policy: carries data only while no other path is active.
    pub(crate) standby: bool,
    /// Application policy: never carries DATA (heartbeats still monitor it).
    pub(crate) forbidden: bool,
    /// Removed (`Association::remove_path`): a tombstone that keeps the id and the
    /// counters; it carries nothing and is never probed again.
    pub(crate) removed: bool,
    /// The limit holding new data back now, and since when (`PathStats::limited`).
    limit_since: Option<(Limit, Instant)>,
    /// Application policy: the cheapest active alternate takes over from the primary.
    pub(crate) cost: u32,
}

impl Path {
    /// The limit holding new data back as of `now` (`None`: sending, or not a data path);
    /// the time since the last call goes to the limit that held until now, so the counters
    /// are current as of the last transmission attempt.
    pub(crate) fn set_limit(&mut self, now: Instant, limit: Option<Limit>) {
        if let Some((l, since)) = self.limit_since {
            self.stats
                .limited
                .add(l, now.saturating_duration_since(since));
        }
        self.limit_since = limit.map(|l| (l, now));
    }

    pub(crate) fn new(
        id: PathId,
        local: SocketAddr,
        remote: SocketAddr,
        cfg: &AssociationConfig,
        peer_rwnd: usize,
        now: Instant,
    ) -> Self {
        let plpmtud = cfg
            .plpmtud
            .then(|| plpmtud::Plpmtud::new(remote.is_ipv6(), cfg.path_mtu, cfg.pmtu_max_probes));
        // With PLPMTUD a path starts at BASE_PLPMTU (RFC 8899 §5.2), else at `path_mtu`.
        let mtu = plpmtud
            .as_ref()
            .map_or(cfg.path_mtu, |d| d.pmtu)
            .saturating_sub(header_overhead(&remote, cfg.udp_encapsulation))
            // A DATA chunk's length field has 16 bits (RFC 9260 §3.3.1).
            .clamp(256, usize::from(u16::MAX));
        Self {
            id,
            local,
            remote,
            state: PathState::Active,
            confirmed: true,
            fail_epoch: 0,
            sack_since_t3: false,
            mtu,
            rtt: RttEstimator::new(cfg),
            cc: AnyController::new(cfg.cc, mtu, cfg.initial_ssthresh(peer_rwnd), 1),
            flight_size: 0,
            error_count: 0,
            heartbeat: HeartbeatState::default(),
            last_data_sent: now,
            recovery: Recovery::Open,
            spurious: Vec::new(),
            rtx_cwnd_exempt: false,
            rtx_marked: seq_list::SeqList::default(),
            rtt_probe: None,
            buffered: 0,
            burst_budget: cfg.max_burst,
            window_held: false,
            run_left: 0,
            pacer: pacer::Pacer::default(),
            sent_live: seq_list::SeqList::default(),
            stats: PathStats::default(),
            psn: psn::PsnSender::default(),
            rate_at_loss: 0.0,
            loss_base: (0, 0),
            lost_chunks: 0,
            plpmtud,
            standby: false,
            forbidden: false,
            removed: false,
            cost: 0,
            limit_since: None,
        }
    }

    pub(crate) fn info(&self, primary: bool) -> PathInfo {
        PathInfo {
            id: self.id,
            local: self.local,
            remote: self.remote,
            state: self.state,
            confirmed: self.confirmed,
            primary,
            srtt: self.rtt.srtt(),
            rto: self.rtt.rto(),
            cwnd: self.cc.window(),
            ssthresh: self.cc.ssthresh(),
            flight_size: self.flight_size,
            mtu: self.mtu,
            pmtu_state: self.plpmtud.as_ref().map(|d| d.state),
            stats: self.stats,
            standby: self.standby,
            forbidden: self.forbidden,
            cost: self.cost,
        }
    }
}
