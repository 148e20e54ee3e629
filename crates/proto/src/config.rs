//! Configuration with the defaults of RFC 9260 §16 ("Suggested SCTP Protocol Parameter
//! Values"), every one overridable so the simulator can sweep it.

use std::time::Duration;

pub use crate::cc::CongestionControl;
pub use crate::sched::SchedulerKind;
pub use names::UnknownName;
pub use validate::{ConfigError, MAX_SACK_DELAY, PATH_MTU_RANGE};

mod names;
mod validate;

/// Which path a retransmission goes on (Iyengar et al., ToN 2006, §4.3; RFC 9260 §6.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RtxPolicy {
    /// RTX-SAME: the path the chunk was last sent on.
    Same,
    /// RTX-ASAP: the active path with the most cwnd room (cwnd − flight size) when the loss
    /// is detected. The paper sends to any path with room at send time, picked at random;
    /// braid decides once, deterministically, so runs repeat.
    Asap,
    /// RTX-CWND: the active path with the largest cwnd.
    Cwnd,
    /// RTX-SSTHRESH: the active path with the largest ssthresh (the CMT paper's choice).
    #[default]
    Ssthresh,
    /// RTX-LOSSRATE: the active path with the lowest measured loss rate.
    Lossrate,
}

/// Buffer splitting (Dreibholz et al., GLOBECOM 2010): each path may only occupy its share
/// (1/n) of the send buffer, of the peer's receive window, or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BufferSplitting {
    /// No per-path limit.
    #[default]
    None,
    /// A path's unacknowledged bytes may fill at most 1/n of the send buffer.
    Send,
    /// A path's bytes in the peer's receive buffer may fill at most 1/n of its window.
    Receive,
    /// Both limits.
    Both,
}

/// Which (local, remote) address pairs become paths (RFC 9260 §6.4 leaves it open).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PathPairing {
    /// Local address *i* with remote address *i* (as in the papers' setups); extra
    /// addresses on either side pair with the other side's first address.
    #[default]
    ByIndex,
    /// Every local address with every remote address of the same family.
    All,
}

/// Concurrent Multipath Transfer (Iyengar et al., IEEE/ACM ToN 2006) and the mechanisms
/// that make it work; `Default` turns all three on, as the paper recommends, without buffer
/// splitting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct CmtConfig {
    /// Split Fast Retransmit (§3.1): miss indications per path.
    pub sfr: bool,
    /// Cwnd Update for CMT (§3.2): a path's cwnd grows on its own pseudo-cumulative ack.
    pub cuc: bool,
    /// Delayed Ack for CMT (§3.3): the SACK says how many packets it covers.
    pub dac: bool,
    /// Per-path shares of the buffers (Dreibholz et al., GLOBECOM 2010).
    pub buffer_splitting: BufferSplitting,
    /// What receive-side buffer splitting divides among the paths.
    pub receive_split: ReceiveSplit,
    /// Where a SACK goes that no DATA takes along.
    pub sack_path: SackPath,
    /// New data and retransmissions keep off a path the peer's window cannot cover at its
    /// RTT while quicker paths fill the window (LS-SCTP's Eq. (1) bound applied to path
    /// choice): on paths of unlike delay a small fixed window held at the slow path's RTT
    /// leaves CMT below the quicker path alone. LS-SCTP always applies it; for CMT it is off
    /// by default (it changed the trajectory of a long fat two-path transfer, 940 to 79
    /// Mbit/s, not understood yet). Never with the fixed stream-to-path mapping, whose
    /// streams have no other path, nor once the peer's window has grown (autotuned).
    pub window_cover: bool,
    /// The longest run of packets of new data a path sends at once (at most an eighth of
    /// its cwnd; Max.Burst still bounds each burst): a path with room for less than the run
    /// waits while its data is in flight. Under CMT every switch between paths in TSN order
    /// is a gap block at the receiver while the slower path's chunks travel, and a sender
    /// that puts one or two packets on each path in turn fills every SACK with blocks (two
    /// 500 Mbit/s paths at 10/20 ms: 1,468-byte SACKs that fill the reverse link). The run
    /// in force doubles while SACKs carry more than 32 blocks and halves below 8. Default
    /// 1 (off, the CMT paper's sender): runs of 32 cut those SACKs to 134 bytes but cost
    /// up to 20 % with random loss, and one long fat trajectory stalled (docs/long-fat.md).
    pub send_run: u16,
}

/// Which received chunks an NR-SACK acknowledges non-renegably (NR-SACK draft §4 lets the
/// receiver choose when it gives up the right to renege).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum NrSackPolicy {
    /// Every chunk on receipt: braid never reneges, so the sender may free it at once.
    #[default]
    Received,
    /// Ordered chunks only once their message is delivered (in order, complete); the INET
    /// CMT-SCTP model of Dreibholz et al. did this, and it decides Fig. 4's σ for round-robin.
    Delivered,
}

/// What receive-side buffer splitting divides among the n active paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReceiveSplit {
    /// The peer's receive buffer, the a_rwnd of its INIT/INIT-ACK.
    #[default]
    InitialWindow,
    /// The peer's window as it stands, rwnd + bytes outstanding (the INET CMT-SCTP model).
    CurrentWindow,
}

/// Where a SACK goes under CMT when it leaves on its own (RFC 9260 §6.4 leaves a SACK's
/// destination open only in that it should go where the DATA came from).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SackPath {
    /// The quickest (smallest SRTT) active path DATA arrived on since the last SACK.
    #[default]
    Quickest,
    /// The first path DATA arrived on since the last SACK (INET's "standard").
    FirstData,
    /// The path the last DATA arrived on (RFC 9260 §6.4).
    LastData,
    /// The primary path.
    Primary,
}

impl Default for CmtConfig {
    fn default() -> Self {
        Self {
            sfr: true,
            cuc: true,
            dac: true,
            buffer_splitting: BufferSplitting::None,
            receive_split: ReceiveSplit::InitialWindow,
            sack_path: SackPath::Quickest,
            window_cover: false,
            send_run: 1,
        }
    }
}

/// How new data is divided among the paths that may carry it (CMT or LS-SCTP).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PathAssignment {
    /// Each path in turn until its cwnd is full (CMT, Iyengar et al. §2).
    #[default]
    RoundRobin,
    /// In proportion to each path's cwnd/RTT, its bandwidth estimate (LS-SCTP, Abd El Al et al.
    /// §4.3): the next packet goes to the path that has carried the least relative to it.
    CwndRtt,
    /// Lowest smoothed RTT first among the paths with cwnd room (Linux MPTCP's classic
    /// default scheduler); an unmeasured path goes first.
    MinRtt,
}

/// What a T3-rtx expiry on one of several paths does to that path (Abd El Al et al. §4.3, §5.4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeoutHandling {
    /// SCTP's: the timed-out chunks go to an alternate path and the timed-out path, its
    /// cwnd down to one MTU, is probed with new data (RFC 9260 §6.3.3, §6.4.1).
    #[default]
    Sctp,
    /// LS-SCTP's: the timed-out chunks go to another path and the timed-out path carries no
    /// new data until a *copy* of one of them, sent there as a probe, is acknowledged on it.
    /// Needs LS-SCTP's per-path sequence numbers to tell which copy arrived; without them
    /// the path is probed by HEARTBEATs instead (the RFC 7829 potentially-failed state).
    Ls,
}

/// How the sender decides that a chunk is lost before T3-rtx expires (the loss-detection
/// seam, `association::send::loss`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LossDetection {
    /// RACK-TLP while the association sends on one path, three miss indications under CMT
    /// (where RACK still repairs a truncated SACK's holes one per round trip, docs/long-fat.md).
    #[default]
    Auto,
    /// Three miss indications (RFC 9260 §7.2.4); a tail loss waits for T3-rtx.
    DupThresh,
    /// RACK-TLP (RFC 8985) adapted to TSNs and SACKs: a chunk is lost once a chunk sent on
    /// its path after it was delivered and a reordering window passed; a tail loss probe
    /// goes out after about two SRTTs instead of waiting for T3-rtx. Three miss indications
    /// still count as a loss too.
    Rack,
}

/// How the sender tells a spurious retransmission from a needed one (Ladha et al., RFC 3522,
/// RFC 3708), and so whether it undoes the congestion response (RFC 4015).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SpuriousDetection {
    /// No detection: every retransmission keeps its congestion response (RFC 9260).
    #[default]
    Off,
    /// Eifel with a TIMESTAMP chunk in every packet (Ladha et al. Fig. 6 variant I); needs the
    /// peer's Eifel-Supported parameter, else DupTSN detection is used.
    EifelTimestamp,
    /// Eifel with the retransmit bit in DATA and SACK flags (Fig. 6 variant II); needs the
    /// peer's Eifel-Supported parameter, else DupTSN detection is used.
    EifelRbit,
    /// Duplicate-TSN reports alone (RFC 3708): no wire change, works with any peer.
    DupTsn,
    /// Eifel (timestamp) falling back to DupTSN reports when a retransmission may have
    /// overtaken its original (Ladha et al. §4 "Multihoming Considerations").
    EifelDupTsn,
}

/// Settings of one association. `Default` gives the RFC 9260 values;
/// [`AssociationConfig::validate`] checks a changed one. With the `serde` feature it
/// serializes field by field (durations as seconds and nanoseconds, enums by name).
#[derive(Debug, Clone)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct AssociationConfig {
    /// RTO.Initial (RFC 9260 §16): 1 s.
    pub rto_initial: Duration,
    /// RTO.Min: 1 s.
    pub rto_min: Duration,
    /// RTO.Max: 60 s.
    pub rto_max: Duration,
    /// RTO.Alpha: 1/8.
    pub rto_alpha: f64,
    /// RTO.Beta: 1/4.
    pub rto_beta: f64,
    /// Max.Burst: 4 packets sent at once at most (RFC 9260 §6.1).
    pub max_burst: u32,
    /// Association.Max.Retrans: 10 consecutive errors fail the association.
    pub association_max_retrans: u32,
    /// Path.Max.Retrans: 5 consecutive errors make a path inactive.
    pub path_max_retrans: u32,
    /// Max.Init.Retransmits: 8 attempts of INIT or COOKIE-ECHO.
    pub max_init_retransmits: u32,
    /// HB.interval: 30 s between heartbeats on an idle path (plus RTO and jitter, RFC 9260
    /// §8.3); `None`: no heartbeats on idle paths (unconfirmed and potentially failed
    /// addresses are still probed, §5.4 and RFC 7829).
    pub hb_interval: Option<Duration>,
    /// Delayed SACK timeout: 200 ms (RFC 9260 §6.2, at most 500 ms).
    pub sack_delay: Duration,
    /// SACK at least every this many packets carrying DATA: 2 (RFC 9260 §6.2).
    pub sack_freq: u32,
    /// Outbound streams asked for in INIT/INIT-ACK.
    pub outbound_streams: u16,
    /// Maximum inbound streams accepted.
    pub max_inbound_streams: u16,
    /// Send buffer: user data queued or in flight, in bytes; where autotuning starts.
    pub send_buffer: usize,
    /// Receive buffer: bytes received and not yet read by the application (the a_rwnd of
    /// INIT/INIT-ACK); where autotuning starts.
    pub recv_buffer: usize,
    /// Send buffer autotuning bound: the send buffer grows to twice the paths' congestion
    /// windows, up to this (`crate::autotune`); equal to `send_buffer`: no autotuning.
    pub send_buffer_max: usize,
    /// Receive buffer autotuning bound: the window doubles each round in which the
    /// application read half of it, up to this; equal to `recv_buffer`: no autotuning.
    pub recv_buffer_max: usize,
    /// Largest message `send` accepts, in bytes (at most `send_buffer` and `recv_buffer`).
    pub max_message_size: usize,
    /// Path MTU assumed before any discovery, in bytes of IP packet (within
    /// [`PATH_MTU_RANGE`]).
    pub path_mtu: usize,
    /// Whether SCTP packets are carried in UDP (RFC 6951): 8 more bytes of headers.
    pub udp_encapsulation: bool,
    /// Support PR-SCTP (RFC 3758), advertised with Forward-TSN-Supported.
    pub pr_sctp: bool,
    /// A send-buffer-low event fires for a stream when its queued bytes drop below this.
    pub stream_buffer_low: usize,
    /// Duplicate TSNs reported in one SACK at most.
    pub max_dup_tsns: usize,
    /// Gap ack blocks reported in one SACK at most; fewer when the path MTU holds fewer.
    pub max_gap_blocks: usize,
    /// Miss indications that make a chunk lost (RFC 9260 §7.2.4: 3; the LS-SCTP paper and
    /// ns-2's SCTP before 2009 used 4).
    pub dupthresh: u8,
    /// Concurrent Multipath Transfer: new data on every active path with cwnd room
    /// (Iyengar et al.); `None`: new data on the primary path only (RFC 9260).
    pub cmt: Option<CmtConfig>,
    /// Congestion control of every path (default CUBIC; each path runs its own under CMT).
    pub cc: CongestionControl,
    /// Retransmission path policy.
    pub rtx_policy: RtxPolicy,
    /// Offer NR-SACK (chunk 0x10) and use it when the peer offers it too.
    pub nr_sack: bool,
    /// Which received chunks our NR-SACKs acknowledge non-renegably.
    pub nr_sack_policy: NrSackPolicy,
    /// Offer I-DATA and I-FORWARD-TSN (RFC 8260) and use them when the peer offers them
    /// too: messages of different streams may then interleave their fragments.
    pub idata: bool,
    /// Stream scheduler of the sender (changeable at run time).
    pub stream_scheduler: SchedulerKind,
    /// Fixed stream-to-path mapping (Dreibholz et al. §4): entry *i* is the path of stream *i*;
    /// streams without an entry go to path `stream % paths`.
    pub stream_paths: Vec<u16>,
    /// Which address pairs become paths.
    pub path_pairing: PathPairing,
    /// Potentially-Failed state (RFC 7829): a path with more than this many consecutive
    /// errors is avoided for data; `None` disables it.
    pub pf_max_retrans: Option<u32>,
    /// HB.Max.Burst (RFC 9260 §16): heartbeats to unconfirmed addresses per RTO.
    pub hb_max_burst: u32,
    /// Offer LS-SCTP (Abd El Al et al.; Load-Sharing-Supported in INIT/INIT-ACK) and use it when the
    /// peer offers it too: LS-DATA with per-path sequence numbers, LS-SACK per path. Without
    /// the peer's offer the association runs as `cmt` says (CMT or standard SCTP).
    pub load_sharing: bool,
    /// How new data is divided among the paths (CMT and LS-SCTP).
    pub path_assignment: PathAssignment,
    /// Under cwnd/RTT path assignment, a path holds at most its bandwidth estimate's share
    /// of the peer's window (default on). braid's reading of LS-SCTP §4.3, which says no
    /// such rule: off, a path may hold as much of the window as its cwnd allows.
    pub ls_window_share: bool,
    /// What T3-rtx expiry does to the path under CMT and LS-SCTP.
    pub timeout_handling: TimeoutHandling,
    /// At most this many paths carry new data at once (Abd El Al et al. §1: a battery-powered host
    /// may use fewer interfaces); the best by cwnd/RTT. `None`: every usable path.
    pub max_data_paths: Option<u16>,
    /// Path Monitor (Abd El Al et al. §4.4): a path whose measured loss rate (retransmitted over
    /// sent chunks, since it last became active) exceeds this leaves the active list until a
    /// HEARTBEAT-ACK; `None`: loss does not take paths out.
    pub path_loss_threshold: Option<f64>,
    /// Detection of spurious fast retransmits and timeouts, and the Eifel response
    /// (Ladha et al., RFC 4015) when one is found. Off by default, as in RFC 9260.
    pub spurious_detection: SpuriousDetection,
    /// Pace each path's new DATA at 2 (slow start) or 1.25 times cwnd/srtt with bursts of
    /// at most 2 ms (`crate::path::pacer`), so windows do not leave in line-rate bursts.
    pub pacing: bool,
    /// When a chunk counts as lost: three miss indications (RFC 9260, the default) or
    /// RACK-TLP (RFC 8985).
    pub loss_detection: LossDetection,
    /// Packetization Layer PMTU Discovery (RFC 8899; NEAT D3.1 §2.1.3): each confirmed path
    /// starts at BASE_PLPMTU (1200 bytes IPv4, 1280 IPv6) and probes with HEARTBEAT + PAD up
    /// to `path_mtu`, which is then MAX_PLPMTU. Off: every path uses `path_mtu` (lowered only
    /// by ICMP "too big").
    pub plpmtud: bool,
    /// MAX_PROBES (RFC 8899 §5.1.2): 3 unanswered probes of a size mean it does not pass.
    pub pmtu_max_probes: u32,
    /// PMTU_RAISE_TIMER (RFC 8899 §5.1.1): 600 s after a search ends, probe for more again.
    pub pmtu_raise_interval: Duration,
}

impl AssociationConfig {
    /// The initial ssthresh of a path whose peer advertised `peer_rwnd` (RFC 9260 §7.2.1:
    /// "arbitrarily high (e.g., the size of the largest possible advertised window)"). The
    /// a_rwnd of INIT, except for CUBIC with buffer autotuning: the peer's window may grow
    /// past its first a_rwnd and HyStart++ (RFC 9406) ends slow start on a rising RTT, so
    /// the bound is what could ever be in flight, `send_buffer_max`. Reno keeps the a_rwnd:
    /// without HyStart++ its slow start would overshoot a long path by a whole window.
    pub(crate) fn initial_ssthresh(&self, peer_rwnd: usize) -> usize {
        if self.cc.is_cubic() && self.send_buffer_max > self.send_buffer {
            peer_rwnd.max(self.send_buffer_max)
        } else {
            peer_rwnd
        }
    }
}

impl Default for AssociationConfig {
    fn default() -> Self {
        Self {
            rto_initial: Duration::from_secs(1),
            rto_min: Duration::from_secs(1),
            rto_max: Duration::from_secs(60),
            rto_alpha: 0.125,
            rto_beta: 0.25,
            max_burst: 4,
            association_max_retrans: 10,
            path_max_retrans: 5,
            max_init_retransmits: 8,
            hb_interval: Some(Duration::from_secs(30)),
            sack_delay: Duration::from_millis(200),
            sack_freq: 2,
            outbound_streams: 16,
            max_inbound_streams: 1024,
            send_buffer: 1 << 20,
            recv_buffer: 1 << 20,
            // 64 MiB: what two 500 Mbit/s paths at 200/400 ms keep in flight plus what the
            // receiver holds behind the slower one (37.5 MB + reordering; 32 MiB held them
            // at 77 %); the endpoint's buffer_budget bounds the sum.
            send_buffer_max: 64 << 20,
            recv_buffer_max: 64 << 20,
            max_message_size: 256 * 1024,
            path_mtu: 1500,
            udp_encapsulation: true,
            pr_sctp: true,
            stream_buffer_low: 0,
            max_dup_tsns: 16,
            max_gap_blocks: 1024,
            dupthresh: 3,
            cmt: None,
            cc: CongestionControl::default(),
            rtx_policy: RtxPolicy::default(),
            nr_sack: true,
            nr_sack_policy: NrSackPolicy::Received,
            idata: false,
            stream_scheduler: SchedulerKind::default(),
            stream_paths: Vec::new(),
            path_pairing: PathPairing::ByIndex,
            pf_max_retrans: Some(0),
            hb_max_burst: 1,
            load_sharing: false,
            path_assignment: PathAssignment::RoundRobin,
            ls_window_share: true,
            timeout_handling: TimeoutHandling::Sctp,
            max_data_paths: None,
            path_loss_threshold: None,
            spurious_detection: SpuriousDetection::Off,
            plpmtud: false,
            pacing: false,
            loss_detection: LossDetection::Auto,
            pmtu_max_probes: 3,
            pmtu_raise_interval: Duration::from_secs(600),
        }
    }
}

/// Settings of an endpoint (the SCTP instance of one host and port);
/// [`EndpointConfig::validate`] checks them.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    /// The local SCTP port.
    pub port: u16,
    /// Whether INITs from peers are answered (a listening endpoint).
    pub listen: bool,
    /// Valid.Cookie.Life (RFC 9260 §16): 60 s.
    pub valid_cookie_life: Duration,
    /// Secret keying the State Cookie HMAC; drawn from the endpoint's RNG if `None`.
    pub cookie_secret: Option<[u8; 32]>,
    /// Associations at most; INITs beyond are answered with ABORT (Out of Resource).
    pub max_associations: usize,
    /// Associations at most (in setup or established) whose primary peer address is one
    /// IP address, so that one source cannot take every slot; beyond, ABORT (Out of
    /// Resource).
    pub max_associations_per_source: usize,
    /// Associations at most whose primary peer address lies in one network prefix (an
    /// IPv4 /`source_prefix_v4`, an IPv6 /`source_prefix_v6`): one host with many addresses,
    /// e.g. an IPv6 /64, cannot take every slot either.
    pub max_associations_per_prefix: usize,
    /// Prefix length that groups IPv4 sources for `max_associations_per_prefix` (24).
    pub source_prefix_v4: u8,
    /// Prefix length that groups IPv6 sources for `max_associations_per_prefix` (64).
    pub source_prefix_v6: u8,
    /// Out-of-the-blue answers other than INIT-ACKs (ABORT, SHUTDOWN-COMPLETE, Stale Cookie
    /// ERROR) one source IP address may get at once (a token bucket; RFC 9260 §8.4 allows
    /// limiting).
    pub ootb_burst: u32,
    /// Tokens per second the out-of-the-blue answer bucket of a source refills with
    /// (ABORTs, SHUTDOWN-COMPLETEs; INITs have their own budget below).
    pub ootb_rate: u32,
    /// INIT-ACKs per second (and at once) the endpoint sends to all sources together: bounds
    /// the cookie work a flood of INITs costs.
    pub init_answer_rate: u32,
    /// Bytes of INIT answers per second (and at once) one source IP address may get:
    /// bounds reflection toward a forged address without a count of answers a spoofer could
    /// use up (100 forged INITs a second draw about 30 KB/s of answers).
    pub init_answer_bytes: u32,
    /// How often the cookie secret is replaced; the previous one still verifies cookies
    /// for one cookie lifetime (RFC 9260 §5.1.3 suggests changing it regularly).
    pub cookie_secret_rotation: Duration,
    /// Bytes of buffer growth (autotuning above `send_buffer` and `recv_buffer`) all
    /// associations of the endpoint may hold together: with `max_associations`, the
    /// endpoint's memory bound.
    pub buffer_budget: usize,
    /// Bytes of `buffer_budget` the associations of one source prefix (as
    /// `max_associations_per_prefix` groups them) may hold together, so that a few peers
    /// holding grown windows cannot take all of it (128 MiB: half the default budget, what
    /// one association growing both ways to its maxima holds).
    pub buffer_budget_per_prefix: usize,
    /// Settings of every association this endpoint creates.
    pub association: AssociationConfig,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        Self {
            port: 5001,
            listen: false,
            valid_cookie_life: Duration::from_secs(60),
            cookie_secret: None,
            max_associations: 1024,
            max_associations_per_source: 64,
            max_associations_per_prefix: 256,
            source_prefix_v4: 24,
            source_prefix_v6: 64,
            ootb_burst: 16,
            ootb_rate: 16,
            init_answer_rate: 1024,
            init_answer_bytes: 64 << 10,
            cookie_secret_rotation: Duration::from_secs(3600),
            buffer_budget: 256 << 20,
            buffer_budget_per_prefix: 128 << 20,
            association: AssociationConfig::default(),
        }
    }
}
