//! A scenario: the network, the association settings and the traffic of one simulation,
//! as read from a TOML file (see `scenarios/` and the README). Values carry units
//! ("10Mbit/s", "64KiB", "10ms"); see [`crate::units`].
//!
//! A scenario file may hold a `[sweep]` table; [`crate::sweep`] expands it into one
//! [`Scenario`] per sweep point, each of which [`crate::run::run`] simulates once per seed.

use braid_proto::{
    BufferSplitting, CongestionControl, LossDetection, NrSackPolicy, PathAssignment, PathPairing,
    ReceiveSplit, RtxPolicy, SackPath, SchedulerKind, SpuriousDetection, TimeoutHandling,
};
use serde::Deserialize;

use crate::units::{Dur, Rate, Size};

/// One simulation setup (a single sweep point).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Human-readable name.
    pub name: String,
    /// Simulated time, warm-up included.
    pub duration: Dur,
    /// Settling time before metrics are measured.
    #[serde(default)]
    pub warmup: Dur,
    /// Seeds (runs) per sweep point.
    #[serde(default = "default_seeds")]
    pub seeds: u32,
    /// Each association's sender connects at a time drawn uniformly from [0, `start_jitter`)
    /// with the run's seed, so that runs with different seeds start in different phases
    /// (default 0: every association connects at time 0 and seeds vary only random losses).
    #[serde(default)]
    pub start_jitter: Dur,
    /// Carry SCTP in UDP (RFC 6951): 8 more bytes per packet. Default: SCTP over IPv4
    /// directly, as in the papers' setups.
    #[serde(default)]
    pub udp: bool,
    /// The paths between the two hosts; path *i* joins interface *i* of each host. Not in a
    /// topology scenario (one with `[[link]]`s and `[[flow]]`s), where the first flow's
    /// routes are its paths.
    #[serde(rename = "path", default)]
    pub paths: Vec<PathSpec>,
    /// A topology's links: each joins node `from` to node `to` with the keys of a `[[path]]`
    /// (its forward direction `from`→`to`, its reverse `to`→`from`); nodes are named by the
    /// links, and every node can be a flow's end or a router (crate::topology).
    #[serde(rename = "link", default)]
    pub links: Vec<PathSpec>,
    /// A topology's flows: associations (braid or TCP-like) between nodes; the first is the
    /// measured association (the unprefixed metrics), every one has `flow_{NAME}_` metrics.
    #[serde(rename = "flow", default)]
    pub flows: Vec<FlowSpec>,
    /// A topology's cross traffic: unresponsive constant-rate or Poisson packet sources, and
    /// heavy-tailed on/off TCP-like flows that react to congestion.
    #[serde(rename = "cross", default)]
    pub cross: Vec<CrossSpec>,
    /// Flows whose goodputs Jain's fairness index covers (`jain_fairness`); unset: every
    /// `[[flow]]`.
    #[serde(default)]
    pub fairness: Option<Vec<String>>,
    /// A bottleneck shared by every path (dumbbell topology); none: independent paths.
    #[serde(default)]
    pub bottleneck: Option<BottleneckSpec>,
    /// Association settings of the measured association.
    #[serde(default)]
    pub association: AssociationSpec,
    /// Traffic sources of the measured association.
    #[serde(rename = "traffic", default)]
    pub traffic: Vec<TrafficSpec>,
    /// Record a time series (cwnd, ssthresh, RTO, flight size per path...) every interval
    /// (`braid sim run`: DIR/timeseries/point{P}-seed{S}.csv; `braid sim plot --timeseries`
    /// draws it).
    #[serde(default)]
    pub timeseries: Option<Dur>,
    /// Write a pcap of one path's forward link.
    #[serde(default)]
    pub pcap: Option<PcapSpec>,
    /// Write every association's decision trace (`braid_proto::trace`) as JSON lines, one
    /// directory per run: `trace/point{P}-seed{S}/a-assoc-0.jsonl`…
    #[serde(default)]
    pub trace: bool,
    /// Write the same decisions as qlog (JSON-SEQ, `braid_proto::qlog`), one directory per
    /// run: `qlog/point{P}-seed{S}/a-assoc-0.sqlog`…
    #[serde(default)]
    pub qlog: bool,
    /// Record every DATA chunk sent (original or retransmission, with its path), every DATA
    /// arrival at the receiver, every SACK's cumulative ack at the sender and every change of
    /// a path's cwnd: `sequence/point{P}-seed{S}.csv` (header
    /// [`crate::run::SEQUENCE_HEADER`]), the time-sequence plots of Ladha et al. Figs. 2–4 and
    /// 7–10 (`braid sim plot --sequence`).
    #[serde(default)]
    pub sequence: bool,
    /// The sweep table: parameter key → values. Consumed by [`crate::sweep`].
    #[serde(default)]
    pub sweep: toml::value::Table,
}

/// How an application with sender queue info decides which stream to write next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SqinfoPolicy {
    /// Top up any stream with fewer than `traffic::SQINFO_QUEUE_MESSAGES` messages queued
    /// (braid's earlier, invented policy; kept for comparison).
    Messages,
    /// Keep each stream's buffered bytes (queued and unacknowledged) within σ/streams: the
    /// byte count SCTP_SQINFO reports (draft-dreibholz-tsvwg-sctpsocket-sqinfo). The default:
    /// it reproduces Dreibholz et al. Fig. 7 where `Messages` does not (the reproduction report's
    /// Assumptions table).
    #[default]
    Bytes,
}

fn default_seeds() -> u32 {
    1
}

fn default_queue() -> usize {
    100
}

fn default_mtu() -> usize {
    1500
}

/// One path: a forward (data) link and a reverse (acknowledgement) link with the same rate,
/// delay and queue; impairments apply to the forward link unless named `reverse_*`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    /// Name used in metrics (`path_{name}_...`) and sweep keys (`path.{name}.delay`).
    pub name: String,
    /// A `[[link]]`'s first node (its forward direction leaves it); not in a `[[path]]`.
    #[serde(default)]
    pub from: Option<String>,
    /// A `[[link]]`'s second node; not in a `[[path]]`.
    #[serde(default)]
    pub to: Option<String>,
    /// Link rate.
    pub rate: Rate,
    /// One-way propagation delay.
    pub delay: Dur,
    /// Drop-tail FIFO capacity in packets.
    #[serde(default = "default_queue")]
    pub queue: usize,
    /// Drop-tail FIFO capacity in bytes on the wire, as well as `queue` packets (a packet
    /// that would exceed either is dropped); unset: packets only.
    #[serde(default)]
    pub queue_bytes: Option<Size>,
    /// IP MTU in bytes; larger packets are dropped.
    #[serde(default = "default_mtu")]
    pub mtu: usize,
    /// Answer an oversized packet with an ICMP-like "too big" carrying the MTU (the same as
    /// `icmp = "with-mtu"`).
    #[serde(default)]
    pub icmp_too_big: bool,
    /// What the link answers an oversized packet with: `with-mtu` (an ICMP "too big" with
    /// the link's MTU), `without-mtu` (one without) or `none` (silence, a black hole).
    /// Unset: `icmp_too_big` decides.
    #[serde(default)]
    pub icmp: Option<IcmpMode>,
    /// MTU changes over time (both directions), `[{ at = "5s", mtu = 1300 }]`.
    #[serde(default)]
    pub mtu_changes: Vec<MtuChangeSpec>,
    /// Bernoulli loss probability of the forward link.
    #[serde(default)]
    pub loss: f64,
    /// Bernoulli loss probability of the reverse link.
    #[serde(default)]
    pub reverse_loss: f64,
    /// Gilbert–Elliott loss of the forward link (replaces `loss`).
    #[serde(default)]
    pub gilbert: Option<GilbertSpec>,
    /// "Hiccup" reordering of Ladha et al. on the forward link.
    #[serde(default)]
    pub hiccup: Option<HiccupSpec>,
    /// Reordering that always causes a fast retransmit (Ladha et al. §6: "every reordering
    /// event causes a spurious fast retransmission"): `hiccup` with this rate and
    /// displacement [`REORDER_DISPLACEMENT`]. Not together with `hiccup`.
    #[serde(default)]
    pub reorder_rate: Option<f64>,
    /// Packets that overtake one displaced by `reorder_rate` or `reorder_at` (default
    /// [`REORDER_DISPLACEMENT`]): a fast-retransmit threshold of `n` needs `n` (Ladha et al.
    /// §6). Not together with `hiccup`, which gives its own.
    #[serde(default)]
    pub reorder_displacement: Option<usize>,
    /// Reordering at fixed times: the first packet reaching the far end of the forward link
    /// at or after each time is displaced as `reorder_rate` (or `hiccup`) displaces one (the
    /// single spurious fast retransmit of Ladha et al. Figs. 2(a), 7).
    #[serde(default)]
    pub reorder_at: Vec<Dur>,
    /// Delay spikes on the forward link: every packet in flight is held.
    #[serde(default)]
    pub spikes: Option<SpikeSpec>,
    /// Delay spikes as Ladha et al. §6 states them, `{ every = ["10s", "20s"], length = ["3s",
    /// "10s"] }`: the same as `spikes` with `interval = every`. Not together with `spikes`.
    #[serde(default)]
    pub delay_spikes: Option<DelaySpikesSpec>,
    /// Delay spikes at fixed times, `[["30s", "33s"], ...]`: every packet that would reach
    /// the far end of the forward link within `[from, to)` arrives at `to` (Ladha et al. Figs.
    /// 2(b), 3, 4, 8–10 show one spike each).
    #[serde(default)]
    pub spike_at: Vec<[Dur; 2]>,
    /// What a delay spike does with the packets it held: `at-once` (default: all arrive
    /// when it ends) or `at-rate` (the link stalls, then drains at its rate).
    #[serde(default)]
    pub spike_release: Option<crate::link::SpikeRelease>,
    /// Failure windows: the path (both directions) is down from `from` to `to`.
    #[serde(default)]
    pub failures: Vec<FailureSpec>,
    /// Failure windows as `[from, to]` pairs (`down = [["5s", "15s"]]`), the same as
    /// `failures`.
    #[serde(default)]
    pub down: Vec<[Dur; 2]>,
    /// The sender removes this path at this time (`Association::remove_path`: an address
    /// withdrawn, its id and counters kept). With `down` from the same time it models an
    /// interface that goes away with data in flight.
    #[serde(default)]
    pub removed_at: Option<Dur>,
    /// Rate changes over time (forward link).
    #[serde(default)]
    pub rate_changes: Vec<RateChangeSpec>,
    /// Background traffic sharing the forward link's queue.
    #[serde(default)]
    pub background: Option<BackgroundSpec>,
}

/// Two-state Markov loss (Gilbert–Elliott).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GilbertSpec {
    /// Probability per packet of moving from the good to the bad state.
    pub p_good_bad: f64,
    /// Probability per packet of moving from the bad to the good state.
    pub p_bad_good: f64,
    /// Loss probability in the good state.
    #[serde(default)]
    pub loss_good: f64,
    /// Loss probability in the bad state.
    #[serde(default = "one")]
    pub loss_bad: f64,
}

fn one() -> f64 {
    1.0
}

/// Displaces a packet behind the next `displacement` packets, at a given rate (Ladha et al.).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HiccupSpec {
    /// Probability per packet of being displaced.
    pub rate: f64,
    /// Number of later packets that overtake it.
    pub displacement: usize,
}

/// Delay spikes: intervals between spikes and spike lengths drawn uniformly from ranges.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SpikeSpec {
    /// Range of the time between two spikes.
    pub interval: [Dur; 2],
    /// Range of the length of one spike.
    pub length: [Dur; 2],
}

/// Delay spikes in Ladha et al.'s words (§6 "Spurious Timeouts"): the same model as
/// [`SpikeSpec`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DelaySpikesSpec {
    /// Range of the time from the end of one spike to the start of the next ("delay spikes
    /// ... set to occur in time intervals ... 10-20s").
    pub every: [Dur; 2],
    /// Range of the length of one spike.
    pub length: [Dur; 2],
}

/// Packets that overtake one displaced by `reorder_rate` or `reorder_at`: three, so that
/// each reordering event fast-retransmits the displaced packet. Each of the three packets
/// that pass it carries new DATA and reaches the receiver while its TSN is missing, so the
/// receiver SACKs each at once (RFC 9260 §6.7) and each SACK is a miss indication for it;
/// the third fast-retransmits it (§7.2.4), before it arrives (it is released right behind
/// the third, a round trip before that SACK reaches the sender). Fewer never trigger one.
pub const REORDER_DISPLACEMENT: usize = 3;

/// The path is down (both directions, every packet dropped) from `from` to `to`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailureSpec {
    /// Start of the failure.
    pub from: Dur,
    /// End of the failure.
    pub to: Dur,
}

/// The forward link's rate becomes `rate` at `at`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RateChangeSpec {
    /// When.
    pub at: Dur,
    /// New rate.
    pub rate: Rate,
}

/// A path's MTU from a given time on.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MtuChangeSpec {
    /// When.
    pub at: Dur,
    /// New IP MTU in bytes.
    pub mtu: usize,
}

/// The `icmp` key of a path: what an oversized packet gets back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum IcmpMode {
    /// An ICMP "too big" carrying the link's MTU (RFC 1191, RFC 8201).
    WithMtu,
    /// An ICMP "too big" without the MTU (older routers).
    WithoutMtu,
    /// Nothing: the packet vanishes (an ICMP black hole).
    #[default]
    None,
}

impl PathSpec {
    /// What the path answers an oversized packet with (`icmp`, else `icmp_too_big`).
    pub fn icmp_mode(&self) -> IcmpMode {
        self.icmp.unwrap_or(if self.icmp_too_big {
            IcmpMode::WithMtu
        } else {
            IcmpMode::None
        })
    }
}

/// Cross traffic of fixed-size packets sharing the forward link (Abd El Al et al. Fig. 14).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BackgroundSpec {
    /// `constant` or `square` (on for half a period, off for the other half).
    pub kind: BackgroundKind,
    /// Rate while on.
    pub rate: Rate,
    /// Period of the square wave.
    #[serde(default)]
    pub period: Option<Dur>,
    /// Size of each background packet in bytes.
    #[serde(default = "default_mtu")]
    pub packet_size: usize,
}

/// Shape of background traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BackgroundKind {
    /// Constant rate.
    Constant,
    /// On/off square wave.
    Square,
}

/// A bottleneck link shared by all paths (dumbbell), optionally with competing flows.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BottleneckSpec {
    /// Rate of the shared link.
    pub rate: Rate,
    /// Its one-way delay (added to the paths' own).
    #[serde(default)]
    pub delay: Dur,
    /// Its drop-tail queue in packets.
    #[serde(default = "default_queue")]
    pub queue: usize,
    /// Other hosts' saturated SCTP associations sharing it.
    #[serde(default)]
    pub competing_flows: u32,
}

/// Association settings; unset fields keep braid's (RFC 9260) defaults.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssociationSpec {
    /// Send buffer.
    pub send_buffer: Option<Size>,
    /// Receive buffer (a_rwnd).
    pub recv_buffer: Option<Size>,
    /// Send buffer autotuning bound (default: braid's, 64 MiB; unset with `send_buffer` or
    /// `buffer` set: that size, fixed).
    pub send_buffer_max: Option<Size>,
    /// Receive buffer autotuning bound (as `send_buffer_max`, for `recv_buffer`).
    pub recv_buffer_max: Option<Size>,
    /// RTO.Initial.
    pub rto_initial: Option<Dur>,
    /// RTO.Min.
    pub rto_min: Option<Dur>,
    /// RTO.Max.
    pub rto_max: Option<Dur>,
    /// Max.Burst.
    pub max_burst: Option<u32>,
    /// Delayed SACK timeout.
    pub sack_delay: Option<Dur>,
    /// The delayed SACK timeout by Ladha et al.'s name ("delayed ack"): the same as
    /// `sack_delay`. Not together with it.
    pub delayed_ack: Option<Dur>,
    /// SACK every this many packets.
    pub sack_freq: Option<u32>,
    /// HB.interval.
    pub hb_interval: Option<Dur>,
    /// Heartbeats on or off.
    pub heartbeats: Option<bool>,
    /// Path.Max.Retrans.
    pub path_max_retrans: Option<u32>,
    /// Association.Max.Retrans.
    pub association_max_retrans: Option<u32>,
    /// Outbound streams.
    pub streams: Option<u16>,
    /// Largest message accepted by send.
    pub max_message_size: Option<Size>,
    /// Send and receive buffer both (σ of Dreibholz et al. §5); `send_buffer` and `recv_buffer`
    /// override it.
    pub buffer: Option<Size>,
    /// Concurrent Multipath Transfer: new data on every path (Iyengar et al.).
    pub cmt: Option<bool>,
    /// CMT Split Fast Retransmit.
    #[serde(alias = "sfr")]
    pub cmt_sfr: Option<bool>,
    /// CMT Cwnd Update for CMT.
    #[serde(alias = "cuc")]
    pub cmt_cuc: Option<bool>,
    /// CMT Delayed Ack for CMT.
    #[serde(alias = "dac")]
    pub cmt_dac: Option<bool>,
    /// Congestion control of every path: `cubic` (default), `cubic-linux` (CUBIC as Linux
    /// runs it), `reno`, `cmt-rpv1`, `cmt-rpv2`, `lia`.
    pub cc: Option<CongestionControl>,
    /// Which path a retransmission goes on: `same`, `asap`, `cwnd`, `ssthresh`, `lossrate`.
    pub rtx_policy: Option<RtxPolicy>,
    /// Offer and use NR-SACK.
    pub nr_sack: Option<bool>,
    /// What the receiver's NR-SACKs acknowledge non-renegably: `received` (every chunk on
    /// receipt, the default) or `delivered` (ordered chunks once their message is delivered,
    /// the INET CMT-SCTP model of Dreibholz et al.).
    pub nr_sack_policy: Option<NrSackPolicy>,
    /// Offer and use I-DATA (RFC 8260): with `rr-packet`, `fc` or `wfq`, messages of
    /// different streams interleave their fragments.
    pub idata: Option<bool>,
    /// Per-path shares of the send buffer, the peer's window, or both: `none`, `send`,
    /// `receive`, `both`.
    pub buffer_splitting: Option<BufferSplitting>,
    /// What receive-side buffer splitting divides: `initial-window` (the peer's a_rwnd of
    /// INIT/INIT-ACK, the default) or `current-window` (rwnd + outstanding, as INET).
    pub receive_split: Option<ReceiveSplit>,
    /// Where a lone SACK goes under CMT: `quickest` (default), `first-data` (INET's
    /// "standard"), `last-data` (RFC 9260 §6.4), `primary`.
    pub sack_path: Option<SackPath>,
    /// CMT: keep new data and retransmissions off a path the peer's fixed window cannot
    /// cover at its RTT (default false; LS-SCTP always does).
    pub window_cover: Option<bool>,
    /// CMT: new data leaves each path in runs of up to this many packets (default 32; 1:
    /// off, as the CMT paper's sender).
    pub send_run: Option<u16>,
    /// The sender's stream scheduler (RFC 8260, Dreibholz et al. §4): a name of
    /// [`SchedulerKind::NAMES`].
    pub stream_scheduler: Option<SchedulerKind>,
    /// Fixed stream-to-path mapping (Dreibholz et al. §4): entry *i* names the path of stream *i*.
    pub stream_paths: Option<Vec<String>>,
    /// How the association uses its paths: `off` (standard SCTP: the primary carries new
    /// data), `cmt` (the same as `cmt = true`), `ls` (LS-SCTP of Abd El Al et al., offered in
    /// INIT/INIT-ACK; with a peer that does not offer it, `cmt` decides).
    pub load_sharing: Option<LoadSharing>,
    /// How new data is divided among the paths: `round-robin` (CMT) or `cwnd-rtt`
    /// (LS-SCTP, Abd El Al et al. §4.3). Unset: `cwnd-rtt` with `load_sharing = "ls"`, else
    /// `round-robin`.
    pub path_assignment: Option<PathAssignment>,
    /// Under `cwnd-rtt`, each path holds at most its bandwidth share of the peer's window
    /// (default true; braid's own rule, not the paper's).
    pub ls_window_share: Option<bool>,
    /// What a timeout does to a path under CMT or LS-SCTP: `sctp` (retransmit elsewhere,
    /// probe with new data) or `ls` (probe with a copy of a retransmitted chunk; without
    /// LS-SCTP, with heartbeats in the potentially-failed state). Unset: `ls` with
    /// `load_sharing = "ls"`, else `sctp`.
    pub timeout_handling: Option<TimeoutHandling>,
    /// At most this many paths carry new data at once.
    pub max_paths: Option<u16>,
    /// Path Monitor: a path whose loss rate exceeds this leaves the active list.
    pub path_loss_threshold: Option<f64>,
    /// RFC 7829's potentially-failed state (default on, PFMR 0): off models SCTP before it
    /// (RFC 2960/4960, as Abd El Al et al.'s), where a timed-out path stays active.
    pub pf: Option<bool>,
    /// Detection of spurious retransmissions (Ladha et al.): `off` (default), `eifel-timestamp`,
    /// `eifel-rbit`, `duptsn`, `eifel+duptsn` ([`SpuriousDetection::NAMES`]).
    pub spurious_detection: Option<SpuriousDetection>,
    /// PLPMTUD (RFC 8899): probe each path's PMTU from 1200 bytes up to `path_mtu`.
    pub plpmtud: Option<bool>,
    /// Pace each path's new DATA (default off).
    pub pacing: Option<bool>,
    /// Gap ack blocks one SACK reports at most (default 1024; fewer when the smallest path
    /// MTU holds fewer).
    pub max_gap_blocks: Option<usize>,
    /// Miss indications that make a chunk lost (default 3, RFC 9260 §7.2.4; 4 in the
    /// LS-SCTP paper and in ns-2's SCTP before 2009).
    pub dupthresh: Option<u8>,
    /// When a chunk counts as lost: `auto` (default: `rack` on one path, `dupthresh` under
    /// CMT), `dupthresh` (three miss indications, RFC 9260) or `rack` (RACK-TLP, RFC 8985:
    /// time-based, with tail loss probes).
    pub loss_detection: Option<LossDetection>,
    /// The path MTU the association assumes (without PLPMTUD) or searches up to (with it),
    /// in bytes of IP packet. Unset: the first path's `mtu`.
    pub path_mtu: Option<usize>,
    /// PLPMTUD's PMTU_RAISE_TIMER (default 600 s).
    pub pmtu_raise_interval: Option<Dur>,
    /// PLPMTUD's MAX_PROBES (default 3).
    pub pmtu_max_probes: Option<u32>,
    /// RTO.Alpha (RFC 9260 §16, default 1/8).
    pub rto_alpha: Option<f64>,
    /// RTO.Beta (RFC 9260 §16, default 1/4).
    pub rto_beta: Option<f64>,
    /// Max.Init.Retransmits (RFC 9260 §16, default 8).
    pub max_init_retransmits: Option<u32>,
    /// PR-SCTP (RFC 3758), offered in INIT (default on).
    pub pr_sctp: Option<bool>,
    /// Duplicate TSNs one SACK reports at most (default 16).
    pub max_dup_tsns: Option<usize>,
    /// HB.Max.Burst (RFC 9260 §16, default 1).
    pub hb_max_burst: Option<u32>,
    /// How our addresses pair with the peer's into paths: `by-index` (default) or `all`.
    pub path_pairing: Option<PathPairing>,
    /// Inbound streams we accept at most (default 1024).
    pub max_inbound_streams: Option<u16>,
    /// RFC 7829's PotentiallyFailed.Max.Retrans (default 0) while `pf` is on.
    pub pf_max_retrans: Option<u32>,
    /// The StreamBufferLow event's low-water mark in bytes; unset: the sender-queue-info
    /// source's own, else the core's default.
    pub stream_buffer_low: Option<Size>,
}

/// The `load_sharing` key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LoadSharing {
    /// Standard SCTP.
    Off,
    /// CMT.
    Cmt,
    /// LS-SCTP.
    Ls,
}

/// What the application of the measured association does.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum TrafficSpec {
    /// Refills the send buffer whenever it has room, messages spread over the streams.
    Saturated {
        /// Streams used.
        #[serde(default = "one_stream")]
        streams: u16,
        /// Message size in bytes.
        #[serde(default = "default_message")]
        message_size: usize,
        /// Send unordered.
        #[serde(default)]
        unordered: bool,
        /// Sender queue info (Dreibholz et al. §6.2): keep every stream's queue topped up instead
        /// of writing the streams in strict round-robin order.
        #[serde(default)]
        sender_queue_info: bool,
        /// How the application reads the queue info: `bytes` (keep each stream's buffered
        /// bytes within σ/streams, what SCTP_SQINFO reports; the default) or `messages` (top
        /// up a stream with fewer than 8 messages queued, braid's earlier default).
        #[serde(default)]
        sqinfo_policy: SqinfoPolicy,
        /// Message size when `spurious_detection` puts a TIMESTAMP chunk in every packet
        /// (`eifel-timestamp`, `eifel+duptsn`); unset: `message_size`. Ladha et al. §5: 1436
        /// instead of 1448 bytes "to allow room for the 12 byte timestamp chunk".
        #[serde(default)]
        timestamp_message_size: Option<usize>,
    },
    /// Sends `bytes` once and measures the completion time.
    Transfer {
        /// Bytes to transfer.
        bytes: Size,
        /// Streams used.
        #[serde(default = "one_stream")]
        streams: u16,
        /// Message size in bytes.
        #[serde(default = "default_message")]
        message_size: usize,
        /// As for `saturated`: the message size with a TIMESTAMP chunk in every packet.
        #[serde(default)]
        timestamp_message_size: Option<usize>,
    },
    /// Alternates sending at `rate` for `on` and staying silent for `off`.
    OnOff {
        /// Sending rate while on.
        rate: Rate,
        /// On period.
        on: Dur,
        /// Off period.
        off: Dur,
        /// Streams used.
        #[serde(default = "one_stream")]
        streams: u16,
        /// Message size in bytes.
        #[serde(default = "default_message")]
        message_size: usize,
    },
}

impl TrafficSpec {
    /// The size of the messages it sends: `timestamp_message_size` (if set) when every
    /// packet carries a TIMESTAMP chunk, else `message_size`.
    pub fn message_size(&self, timestamps: bool) -> usize {
        match *self {
            TrafficSpec::Saturated {
                message_size,
                timestamp_message_size,
                ..
            }
            | TrafficSpec::Transfer {
                message_size,
                timestamp_message_size,
                ..
            } => match timestamp_message_size {
                Some(t) if timestamps => t,
                _ => message_size,
            },
            TrafficSpec::OnOff { message_size, .. } => message_size,
        }
    }

    /// The same source with `message_size` set to [`TrafficSpec::message_size`].
    pub fn resolved(&self, timestamps: bool) -> Self {
        let size = self.message_size(timestamps);
        let mut t = self.clone();
        match &mut t {
            TrafficSpec::Saturated { message_size, .. }
            | TrafficSpec::Transfer { message_size, .. }
            | TrafficSpec::OnOff { message_size, .. } => *message_size = size,
        }
        t
    }
}

fn one_stream() -> u16 {
    1
}

fn default_message() -> usize {
    1452
}

/// Which link to capture.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcapSpec {
    /// Path name.
    pub path: String,
    /// Capture the reverse link instead of the forward one.
    #[serde(default)]
    pub reverse: bool,
}

/// What a topology flow runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlowKind {
    /// A braid association with the flow's settings (braid's defaults where unset).
    #[default]
    Braid,
    /// The competitor the papers use, built from braid's core with TCP's settings where
    /// unset: one path, no NR-SACK, no I-DATA, a SACK every second packet or after 40 ms
    /// (Linux's minimum delayed-ACK timeout), no heartbeats, no Max.Burst, messages that fill
    /// a packet (crate::topology documents what it departs from in Linux TCP).
    Tcp,
    /// The kernel's MPTCP (RFC 8684) over every route: on the testbed only (`braid testbed`);
    /// the simulator has no model of it and refuses the scenario.
    Mptcp,
}

/// When a flow starts: at a time, or at a time drawn uniformly from a window with the
/// run's seed.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum StartSpec {
    /// `start = "2s"`.
    At(Dur),
    /// `start = ["0s", "2s"]`.
    Window([Dur; 2]),
}

/// One flow of a topology scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FlowSpec {
    /// Name used in metrics (`flow_{name}_goodput_mbps`).
    pub name: String,
    /// `braid` (default) or `tcp`.
    #[serde(default)]
    pub kind: FlowKind,
    /// The sending node.
    pub from: String,
    /// The receiving node.
    pub to: String,
    /// The flow's paths, each a list of nodes from `from` to `to` (a multipath association
    /// gets one path per route); unset: the route with the fewest links.
    #[serde(default)]
    pub routes: Vec<Vec<String>>,
    /// When it connects (default: at 0).
    #[serde(default)]
    pub start: Option<StartSpec>,
    /// Sends this many bytes and stops (its completion time is `flow_{name}_fct_s`); unset:
    /// saturated.
    #[serde(default)]
    pub bytes: Option<Size>,
    /// Stops writing this long after it starts; unset: saturated to the end.
    #[serde(default)]
    pub duration: Option<Dur>,
    /// Message size; unset: 1452 bytes for braid, a full packet for `tcp`.
    #[serde(default)]
    pub message_size: Option<usize>,
    /// Streams, written round-robin (default 1).
    #[serde(default)]
    pub streams: Option<u16>,
    /// Congestion control (shorthand for `association.cc`).
    #[serde(default)]
    pub cc: Option<CongestionControl>,
    /// On the testbed, the kernel's congestion control of a `tcp` or `mptcp` flow (`cubic`,
    /// `reno`, `bbr`...; default: `cc`). The simulator ignores it.
    #[serde(default)]
    pub kernel_cc: Option<String>,
    /// The flow's association settings; unset keys keep braid's defaults (or TCP's, for
    /// `kind = "tcp"`).
    #[serde(default)]
    pub association: AssociationSpec,
}

/// What a cross-traffic source is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CrossKind {
    /// Unresponsive packets at a constant rate.
    Constant,
    /// Unresponsive packets with exponential gaps (a Poisson process) at a mean rate.
    Poisson,
    /// `flows` TCP-like flows, each sending Pareto-sized bursts separated by Pareto-sized
    /// idle gaps (a burst is over when the receiver has it all), each with its own extra
    /// round-trip time: heavy-tailed traffic that reacts to congestion, a stand-in for a
    /// campus trace.
    ParetoOnoff,
}

/// One cross-traffic source of a topology scenario.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CrossSpec {
    /// Name used in metrics (`cross_{name}_goodput_mbps`).
    pub name: String,
    /// `constant`, `poisson` or `pareto-onoff`.
    pub kind: CrossKind,
    /// The node its packets leave.
    pub from: String,
    /// The node they go to.
    pub to: String,
    /// Its route (a list of nodes); unset: the one with the fewest links.
    #[serde(default)]
    pub route: Vec<String>,
    /// `constant`, `poisson`: the (mean) rate.
    #[serde(default)]
    pub rate: Option<Rate>,
    /// `constant`, `poisson`: packet size on the wire.
    #[serde(default = "default_mtu")]
    pub packet_size: usize,
    /// `pareto-onoff`: how many on/off flows (default 10).
    #[serde(default)]
    pub flows: Option<u32>,
    /// `pareto-onoff`: mean burst size (default 100 KB).
    #[serde(default)]
    pub size_mean: Option<Size>,
    /// `pareto-onoff`: Pareto shape of burst sizes (default 1.2, > 1).
    #[serde(default)]
    pub size_shape: Option<f64>,
    /// `pareto-onoff`: mean idle gap (default 1 s).
    #[serde(default)]
    pub gap_mean: Option<Dur>,
    /// `pareto-onoff`: Pareto shape of gaps (default 1.5, > 1).
    #[serde(default)]
    pub gap_shape: Option<f64>,
    /// `pareto-onoff`: each flow's extra round-trip time, uniform in this range (default
    /// 10 ms to 200 ms), added on a link of its own in front of the route.
    #[serde(default)]
    pub rtt: Option<[Dur; 2]>,
    /// `pareto-onoff`: congestion control of the flows (default `reno`).
    #[serde(default)]
    pub cc: Option<CongestionControl>,
}
