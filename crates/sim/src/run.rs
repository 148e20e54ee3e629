//! Simulating one scenario point with one seed: builds the topology and hosts, drives the
//! `braid-proto` endpoints on the virtual clock, and collects the metrics.
//!
//! The driver follows the core's call order (braid-proto `Association` docs): after every
//! input (a datagram, a timer, an application call) it drains the events, lets the
//! applications read and send, drains `poll_transmit`, and arms one timer event for
//! `poll_timeout`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use braid_proto::config::PATH_MTU_RANGE;
use braid_proto::{
    AssocId, Association, AssociationConfig, CmtConfig, ConfigError, Endpoint, EndpointConfig,
    Event, Instant, PathAssignment, SpuriousDetection, TimeoutHandling,
};
use braid_wire::chunk::{DATA_HEADER_LEN, Data, LsData, LsSack, NrSack, Sack};
use braid_wire::pcap::PcapWriter;
use braid_wire::{Chunk, Packet};
use bytes::{Bytes, BytesMut};
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

use crate::engine::EventQueue;
use crate::link::{DropReason, Offer};
use crate::metrics::{Final, Metrics, SAMPLE_INTERVAL};
use crate::net::{
    DataCopy, Datagram, HOST_A, HOST_B, Host, HostId, LinkId, MAX_COMPETING, MAX_PATHS, NO_ROUTE,
    RECEIVER_PORT, SENDER_PORT, Topology, a_addr, b_addr, competing_receiver_addr,
    competing_sender_addr, path_of,
};
use crate::scenario::{IcmpMode, LoadSharing, Scenario, SqinfoPolicy, TrafficSpec};
use crate::traffic::{SQINFO_QUEUE_MESSAGES, Sink, Source, SourceKind};
use crate::units::Size;

/// Options of one run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Seed of every random choice of the run (links, endpoints).
    pub seed: u64,
    /// Write a pcap of the link named in the scenario's `pcap` table here.
    pub pcap: Option<PathBuf>,
    /// Write the time series (if the scenario asks for one) here, as CSV.
    pub timeseries: Option<PathBuf>,
    /// Damage the sender's DATA on purpose (tests of the integrity check).
    pub fault: Option<Fault>,
    /// Write every association's decision trace (`braid_proto::trace`) into this directory,
    /// one JSON-lines file per host and association: `a-assoc-0.jsonl`, `b-assoc-0.jsonl`…
    pub trace: Option<PathBuf>,
    /// Write the same decisions as qlog into this directory: `a-assoc-0.sqlog`…
    pub qlog: Option<PathBuf>,
    /// Write the measured association's time-sequence record here, as CSV (header
    /// [`SEQUENCE_HEADER`]), if the scenario asks for one (`sequence = true`).
    pub sequence: Option<PathBuf>,
}

/// The receiving application did not get every message intact, once and in order, or the
/// receiver refused data within the window it had advertised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "integrity check failed: {corrupt} message(s) corrupt, {missing} missing, {duplicated} \
     duplicated at the receiving application, {window_drops} chunk(s) refused within the \
     advertised window"
)]
pub struct IntegrityError {
    /// `app_messages_corrupt`.
    pub corrupt: u64,
    /// `app_messages_missing`.
    pub missing: u64,
    /// `app_messages_duplicated`.
    pub duplicated: u64,
    /// `recv_window_drops` (RFC 9260 §6.2: what the receiver advertises, it takes).
    pub window_drops: u64,
}

impl RunResult {
    /// Whether the measured association delivered every message as it was sent: none corrupt,
    /// none missing or duplicated on an ordered stream, and its receiver took every chunk
    /// that fitted the window it advertised. A metric the run did not report counts as 0.
    ///
    /// # Errors
    ///
    /// The counts, if any is not 0.
    pub fn check_integrity(&self) -> Result<(), IntegrityError> {
        let count = |k: &str| self.metrics.get(k).map_or(0, |v| *v as u64);
        let e = IntegrityError {
            corrupt: count("app_messages_corrupt"),
            missing: count("app_messages_missing"),
            duplicated: count("app_messages_duplicated"),
            window_drops: count("recv_window_drops"),
        };
        if e.corrupt + e.missing + e.duplicated + e.window_drops == 0 {
            Ok(())
        } else {
            Err(e)
        }
    }
}

/// A deliberate defect in the DATA chunks the measured association's sender puts on the
/// wire (the packet's checksum made right again, so the receiver takes it as a buggy
/// sender's), to check that the simulator's ground truth catches what such a bug does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Flips the last bit of the user data of every `every`th DATA chunk sent.
    FlipBit {
        /// Period, in DATA chunks (1: all of them).
        every: u64,
    },
    /// Cuts the last 4 bytes of the user data of every `every`th DATA chunk sent (as a chunk
    /// length that does not fit its field would).
    Truncate {
        /// Period, in DATA chunks (1: all of them).
        every: u64,
    },
}

/// What one run measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunResult {
    /// Metric name → value (names as in the README: `goodput_mbps`, `stream0_goodput_mbps`,
    /// `path_A_srtt_ms`, ...).
    pub metrics: BTreeMap<String, f64>,
    /// Events the engine processed (for the performance figure).
    pub events: u64,
    /// Simulated time at which the run ended (the scenario's duration, or earlier when
    /// every transfer completed and nothing else was running).
    pub simulated: Duration,
}

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The scenario is inconsistent (e.g. a pcap of a path that does not exist).
    #[error("scenario: {0}")]
    Scenario(String),
    /// The association settings the scenario makes are refused by the core's
    /// [`AssociationConfig::validate`].
    #[error("scenario: association: {0}")]
    Config(ConfigError),
    /// Writing an output file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Header of the time-series CSV. `cum_tsn` counts the TSNs cumulatively acknowledged to
/// the sender so far (relative to its initial TSN).
pub const TIMESERIES_HEADER: &str = "t_s,path,cwnd,ssthresh,rto_ms,flight_size,srtt_ms,cum_tsn,\
send_buffered,recv_buffered,state,retransmissions,fast_retransmissions,timeouts";

/// Header of the time-sequence CSV (Ladha et al. Figs. 2–4, 7–10: "TSN vs time"), one row per
/// event of the measured association: `send` (a DATA chunk's first transmission) and `rtx`
/// (a retransmission) leaving the sender, `arrive` (a DATA chunk reaching the receiver),
/// `sack` (a SACK's cumulative TSN ack reaching the sender), `cwnd` (a path's cwnd or
/// ssthresh changed, after the sender handled an input). `path` is the path's name (the path
/// the packet took; for `cwnd` the path whose window it is); `tsn` counts from the first
/// TSN sent, which is 1 (for `sack`, the last TSN acknowledged: 0 before the first); `cwnd`
/// and `ssthresh` (bytes) are set on `cwnd` rows only.
pub const SEQUENCE_HEADER: &str = "t_s,event,path,tsn,cwnd,ssthresh";

/// Simulates `scenario` once.
///
/// Both hosts give the core all their path addresses (path *i*: interface *i*), so the
/// association is multi-homed with one path per interface pair. Host A connects to B at
/// time 0 over path 0 (the primary) and its sources start at once, served in the order
/// listed (a scenario without `[[traffic]]` gets one saturated stream of 1452-byte messages).
/// The run ends at the scenario's duration, or as soon as every transfer completed when the
/// measured traffic is only transfers and no competing flow runs.
pub fn run(scenario: &Scenario, opts: &RunOptions) -> Result<RunResult, SimError> {
    if crate::topology::is_topology(scenario) {
        let plan = crate::topology::plan(scenario)?;
        validate_topology(scenario, &plan)?;
        let mut w = World::new(&plan.flows[0].scenario, scenario, Some(&plan), opts)?;
        w.run();
        return w.finish(opts);
    }
    validate(scenario)?;
    let mut w = World::new(scenario, scenario, None, opts)?;
    w.run();
    w.finish(opts)
}

/// Checks a topology scenario: the run's own keys, and each flow's association and
/// traffic as [`validate`] checks a two-host scenario's.
pub fn validate_topology(s: &Scenario, plan: &crate::topology::Plan) -> Result<(), SimError> {
    if s.duration.0.is_zero() {
        return Err(SimError::Scenario("duration must be positive".into()));
    }
    if s.warmup.0 >= s.duration.0 {
        return Err(SimError::Scenario(
            "warmup must be shorter than the duration".into(),
        ));
    }
    if s.pcap.is_some() || s.sequence {
        return Err(SimError::Scenario(
            "pcap and sequence record one two-host path: not in a topology scenario".into(),
        ));
    }
    if let Some(f) = (s.flows.iter()).find(|f| f.kind == crate::scenario::FlowKind::Mptcp) {
        return Err(SimError::Scenario(format!(
            "flow {}: mptcp flows run on the testbed (braid testbed run), the simulator has \
             no model of MPTCP",
            f.name
        )));
    }
    for l in &s.links {
        let mut one = Scenario {
            paths: vec![l.clone()],
            links: Vec::new(),
            flows: Vec::new(),
            cross: Vec::new(),
            traffic: Vec::new(),
            ..s.clone()
        };
        one.paths[0].from = None;
        one.paths[0].to = None;
        validate(&one).map_err(|e| SimError::Scenario(format!("link {}: {e}", l.name)))?;
    }
    for f in &plan.flows {
        validate(&f.scenario).map_err(|e| SimError::Scenario(format!("flow {}: {e}", f.name)))?;
    }
    Ok(())
}

/// The performance scenario: one saturated association over one 20 Mbit/s, 10 ms path for
/// 300 simulated seconds.
pub const BENCH_SCENARIO: &str = r#"
name = "bench"
duration = "300s"
warmup = "5s"

[[path]]
name = "p0"
rate = "20Mbit/s"
delay = "10ms"

[[traffic]]
kind = "saturated"
"#;

/// The performance scenario, parsed.
pub fn bench_scenario() -> Result<Scenario, SimError> {
    toml::from_str(BENCH_SCENARIO).map_err(|e| SimError::Scenario(e.to_string()))
}

/// Runs [`BENCH_SCENARIO`] with seed 1; the caller times it ([`RunResult::events`] and
/// [`RunResult::simulated`] give events per second and the speed-up over real time).
pub fn bench() -> Result<RunResult, SimError> {
    run(
        &bench_scenario()?,
        &RunOptions {
            seed: 1,
            ..RunOptions::default()
        },
    )
}

/// Checks what the types cannot (a topology scenario: see [`validate_topology`]).
pub fn validate(s: &Scenario) -> Result<(), SimError> {
    if crate::topology::is_topology(s) {
        return validate_topology(s, &crate::topology::plan(s)?);
    }
    let err = |m: String| Err(SimError::Scenario(m));
    if s.paths.is_empty() {
        return err("at least one [[path]] is needed".into());
    }
    if s.paths.len() > MAX_PATHS {
        return err(format!("at most {MAX_PATHS} paths"));
    }
    if s.paths.iter().any(|p| p.from.is_some() || p.to.is_some()) {
        return err("`from` and `to` belong to a [[link]], not a [[path]]".into());
    }
    if s.duration.0.is_zero() {
        return err("duration must be positive".into());
    }
    if s.warmup.0 >= s.duration.0 {
        return err("warmup must be shorter than the duration".into());
    }
    if s.start_jitter.0 >= s.duration.0 {
        return err("start_jitter must be shorter than the duration".into());
    }
    if !s.warmup.0.is_zero() && s.start_jitter.0 > s.warmup.0 {
        // An association starting after the warm-up would put idle time into the measurement.
        return err("start_jitter must not exceed the warmup".into());
    }
    let prob = |v: f64| (0.0..=1.0).contains(&v);
    for (i, p) in s.paths.iter().enumerate() {
        if p.name.is_empty() || s.paths[..i].iter().any(|q| q.name == p.name) {
            return err(format!(
                "path names must be unique and non-empty: {:?}",
                p.name
            ));
        }
        if !prob(p.loss) || !prob(p.reverse_loss) {
            return err(format!("path {}: loss must be in [0, 1]", p.name));
        }
        if let Some(g) = &p.gilbert
            && ![g.p_good_bad, g.p_bad_good, g.loss_good, g.loss_bad]
                .into_iter()
                .all(prob)
        {
            return err(format!(
                "path {}: Gilbert-Elliott probabilities must be in [0, 1]",
                p.name
            ));
        }
        if let Some(h) = &p.hiccup
            && !prob(h.rate)
        {
            return err(format!("path {}: hiccup rate must be in [0, 1]", p.name));
        }
        if p.hiccup.is_some() && p.reorder_displacement.is_some() {
            return err(format!(
                "path {}: reorder_displacement is for reorder_rate and reorder_at; hiccup gives its own",
                p.name
            ));
        }
        if let Some(r) = p.reorder_rate {
            if p.hiccup.is_some() {
                return err(format!(
                    "path {}: reorder_rate and hiccup are the same model: give one",
                    p.name
                ));
            }
            if !prob(r) {
                return err(format!("path {}: reorder_rate must be in [0, 1]", p.name));
            }
        }
        if p.spikes.is_some() && p.delay_spikes.is_some() {
            return err(format!(
                "path {}: delay_spikes and spikes are the same model: give one",
                p.name
            ));
        }
        let ranges = match (&p.spikes, &p.delay_spikes) {
            (Some(sp), _) => Some((sp.interval, sp.length)),
            (None, Some(sp)) => Some((sp.every, sp.length)),
            (None, None) => None,
        };
        if let Some((between, length)) = ranges
            && (between[0] > between[1]
                || length[0] > length[1]
                || (between[1].0 + length[1].0).is_zero())
        {
            return err(format!(
                "path {}: spike ranges must be [min, max] and not all zero",
                p.name
            ));
        }
        if p.spike_at.iter().any(|[a, b]| a >= b) {
            return err(format!("path {}: a spike_at ends before it starts", p.name));
        }
        if p.failures.iter().any(|f| f.from > f.to) {
            return err(format!("path {}: a failure ends before it starts", p.name));
        }
        if let Some(bg) = &p.background {
            if bg.packet_size == 0 {
                return err(format!("path {}: background packet_size is 0", p.name));
            }
            if bg.period.is_some_and(|d| d.0.is_zero()) {
                return err(format!("path {}: background period is 0", p.name));
            }
        }
        if p.mtu < 68 + header_bytes(s) {
            return err(format!("path {}: mtu too small", p.name));
        }
        if p.mtu > *PATH_MTU_RANGE.end() {
            return err(format!(
                "path {}: mtu {} exceeds {}, the largest IP packet",
                p.name,
                p.mtu,
                PATH_MTU_RANGE.end()
            ));
        }
    }
    if let Some(b) = &s.bottleneck
        && b.competing_flows > MAX_COMPETING
    {
        return err(format!("at most {MAX_COMPETING} competing flows"));
    }
    if s.association.sack_delay.is_some() && s.association.delayed_ack.is_some() {
        return err("delayed_ack and sack_delay are the same setting: give one".into());
    }
    let cfg = association_config(s);
    cfg.validate().map_err(|e| match e {
        ConfigError::PathMtu(mtu) => SimError::Scenario(first_path_mtu_error(s, mtu)),
        e => SimError::Config(e),
    })?;
    let max_msg = cfg.max_message_size;
    let mut streams = 0usize;
    for t in &traffic(s) {
        let (n, size) = match t {
            TrafficSpec::Saturated {
                streams,
                message_size,
                ..
            } => (*streams, *message_size),
            TrafficSpec::Transfer {
                bytes,
                streams,
                message_size,
                ..
            } => {
                if bytes.0 == 0 {
                    return err("a transfer of 0 bytes".into());
                }
                (*streams, *message_size)
            }
            TrafficSpec::OnOff {
                on,
                streams,
                message_size,
                ..
            } => {
                if on.0.is_zero() {
                    return err("an on/off source with no on time".into());
                }
                (*streams, *message_size)
            }
        };
        if n == 0 || size == 0 {
            return err("traffic needs at least one stream and a message size > 0".into());
        }
        if size > max_msg {
            return err(format!(
                "message size {size} exceeds max_message_size or a buffer ({max_msg})"
            ));
        }
        streams += usize::from(n);
    }
    if streams > usize::from(cfg.max_inbound_streams) {
        return err(format!(
            "{streams} streams exceed the receiver's {} inbound streams",
            cfg.max_inbound_streams
        ));
    }
    if let Some(names) = &s.association.stream_paths
        && let Some(bad) = names
            .iter()
            .find(|n| !s.paths.iter().any(|p| &p.name == *n))
    {
        return err(format!("stream_paths: no path named {bad:?}"));
    }
    if s.timeseries.is_some_and(|d| d.0.is_zero()) {
        return err("timeseries interval is 0".into());
    }
    if let Some(p) = &s.pcap
        && !s.paths.iter().any(|q| q.name == p.path)
    {
        return err(format!("pcap of unknown path {:?}", p.path));
    }
    Ok(())
}

/// The first path's mtu is the association's initial path MTU, which the core bounds.
pub fn first_path_mtu_error(s: &Scenario, mtu: usize) -> String {
    format!(
        "path {}: mtu {mtu} is outside {}..={}: the first path's mtu is the association's \
         path_mtu",
        s.paths.first().map_or("?", |p| p.name.as_str()),
        PATH_MTU_RANGE.start(),
        PATH_MTU_RANGE.end()
    )
}

/// IP and UDP header bytes in front of each SCTP packet.
fn header_bytes(s: &Scenario) -> usize {
    20 + if s.udp { 8 } else { 0 }
}

/// The association settings of a scenario: braid's defaults, the scenario's overrides, UDP
/// encapsulation as the scenario says and the path MTU of path 0 (the core's primary). An
/// unset `max_message_size` is the default bounded by both buffers (what the core's `send`
/// accepts and a peer configured alike can hold). Not validated: see [`validate`].
pub fn association_config(s: &Scenario) -> AssociationConfig {
    let a = &s.association;
    let d = AssociationConfig::default();
    let streams: u16 = s
        .traffic
        .iter()
        .map(|t| match t {
            TrafficSpec::Saturated { streams, .. }
            | TrafficSpec::Transfer { streams, .. }
            | TrafficSpec::OnOff { streams, .. } => *streams,
        })
        .fold(0u16, u16::saturating_add);
    let bytes = |v: Option<Size>, default: usize| {
        v.map_or(default, |v| usize::try_from(v.0).unwrap_or(usize::MAX))
    };
    let cmt_key = a.cmt.unwrap_or(false);
    let mode = a.load_sharing.unwrap_or(if cmt_key {
        LoadSharing::Cmt
    } else {
        LoadSharing::Off
    });
    // LS-SCTP falls back to what `cmt` says with a peer that does not offer it.
    let multipath = mode == LoadSharing::Cmt || (mode == LoadSharing::Ls && cmt_key);
    let send_buffer = bytes(a.send_buffer.or(a.buffer), d.send_buffer);
    let recv_buffer = bytes(a.recv_buffer.or(a.buffer), d.recv_buffer);
    // A buffer size set in the scenario fixes that buffer unless its maximum is set too (as
    // SO_RCVBUF/SO_SNDBUF turn Linux's autotuning off): the papers' figures assume fixed ones.
    let max_of = |set: Option<Size>, max: Option<Size>, base: usize, default: usize| {
        max.map_or(
            if set.is_some() {
                base
            } else {
                default.max(base)
            },
            |v| usize::try_from(v.0).unwrap_or(usize::MAX),
        )
    };
    let send_buffer_max = max_of(
        a.send_buffer.or(a.buffer),
        a.send_buffer_max,
        send_buffer,
        d.send_buffer_max,
    );
    let recv_buffer_max = max_of(
        a.recv_buffer.or(a.buffer),
        a.recv_buffer_max,
        recv_buffer,
        d.recv_buffer_max,
    );
    AssociationConfig {
        rto_initial: a.rto_initial.map_or(d.rto_initial, |v| v.0),
        rto_min: a.rto_min.map_or(d.rto_min, |v| v.0),
        rto_max: a.rto_max.map_or(d.rto_max, |v| v.0),
        max_burst: a.max_burst.unwrap_or(d.max_burst),
        sack_delay: a.sack_delay.or(a.delayed_ack).map_or(d.sack_delay, |v| v.0),
        sack_freq: a.sack_freq.unwrap_or(d.sack_freq),
        hb_interval: if a.heartbeats.unwrap_or(true) {
            a.hb_interval.map(|v| v.0).or(d.hb_interval)
        } else {
            None
        },
        path_max_retrans: a.path_max_retrans.unwrap_or(d.path_max_retrans),
        association_max_retrans: a
            .association_max_retrans
            .unwrap_or(d.association_max_retrans),
        outbound_streams: a.streams.unwrap_or(d.outbound_streams).max(streams),
        send_buffer,
        recv_buffer,
        send_buffer_max,
        recv_buffer_max,
        max_message_size: a.max_message_size.map_or(
            d.max_message_size.min(send_buffer).min(recv_buffer).max(1),
            |v| usize::try_from(v.0).unwrap_or(usize::MAX),
        ),
        path_mtu: a
            .path_mtu
            .unwrap_or(s.paths.first().map_or(d.path_mtu, |p| p.mtu)),
        plpmtud: a.plpmtud.unwrap_or(d.plpmtud),
        pacing: a.pacing.unwrap_or(d.pacing),
        max_gap_blocks: a.max_gap_blocks.unwrap_or(d.max_gap_blocks),
        dupthresh: a.dupthresh.unwrap_or(d.dupthresh),
        loss_detection: a.loss_detection.unwrap_or(d.loss_detection),
        pmtu_raise_interval: a.pmtu_raise_interval.map_or(d.pmtu_raise_interval, |t| t.0),
        pmtu_max_probes: a.pmtu_max_probes.unwrap_or(d.pmtu_max_probes),
        udp_encapsulation: s.udp,
        stream_buffer_low: a
            .stream_buffer_low
            .map(|v| usize::try_from(v.0).unwrap_or(usize::MAX))
            .or_else(|| sqinfo_low_mark(s))
            .unwrap_or(d.stream_buffer_low),
        cmt: multipath.then(|| {
            let c = CmtConfig::default();
            CmtConfig {
                sfr: a.cmt_sfr.unwrap_or(c.sfr),
                cuc: a.cmt_cuc.unwrap_or(c.cuc),
                dac: a.cmt_dac.unwrap_or(c.dac),
                buffer_splitting: a.buffer_splitting.unwrap_or(c.buffer_splitting),
                receive_split: a.receive_split.unwrap_or(c.receive_split),
                sack_path: a.sack_path.unwrap_or(c.sack_path),
                window_cover: a.window_cover.unwrap_or(c.window_cover),
                send_run: a.send_run.unwrap_or(c.send_run),
            }
        }),
        cc: a.cc.unwrap_or(d.cc),
        rtx_policy: a.rtx_policy.unwrap_or(d.rtx_policy),
        nr_sack: a.nr_sack.unwrap_or(d.nr_sack),
        nr_sack_policy: a.nr_sack_policy.unwrap_or(d.nr_sack_policy),
        idata: a.idata.unwrap_or(d.idata),
        stream_scheduler: a.stream_scheduler.unwrap_or(d.stream_scheduler),
        stream_paths: stream_path_indices(s),
        load_sharing: mode == LoadSharing::Ls,
        // Unset, each protocol runs as its paper describes it: LS-SCTP assigns by cwnd/RTT
        // and probes with copies (Abd El Al et al. §4.3), CMT goes round-robin with SCTP's handling.
        path_assignment: a.path_assignment.unwrap_or(if mode == LoadSharing::Ls {
            PathAssignment::CwndRtt
        } else {
            d.path_assignment
        }),
        ls_window_share: a.ls_window_share.unwrap_or(d.ls_window_share),
        timeout_handling: a.timeout_handling.unwrap_or(if mode == LoadSharing::Ls {
            TimeoutHandling::Ls
        } else {
            d.timeout_handling
        }),
        max_data_paths: a.max_paths,
        path_loss_threshold: a.path_loss_threshold,
        pf_max_retrans: if a.pf.unwrap_or(true) {
            a.pf_max_retrans.or(d.pf_max_retrans)
        } else {
            None
        },
        spurious_detection: a.spurious_detection.unwrap_or(d.spurious_detection),
        rto_alpha: a.rto_alpha.unwrap_or(d.rto_alpha),
        rto_beta: a.rto_beta.unwrap_or(d.rto_beta),
        max_init_retransmits: a.max_init_retransmits.unwrap_or(d.max_init_retransmits),
        pr_sctp: a.pr_sctp.unwrap_or(d.pr_sctp),
        max_dup_tsns: a.max_dup_tsns.unwrap_or(d.max_dup_tsns),
        hb_max_burst: a.hb_max_burst.unwrap_or(d.hb_max_burst),
        path_pairing: a.path_pairing.unwrap_or(d.path_pairing),
        max_inbound_streams: a.max_inbound_streams.unwrap_or(d.max_inbound_streams),
        // No `..d`: a core setting the scenario does not map does not compile (every one is
        // reachable from a scenario; tests/scenario_keys.rs checks each takes effect).
    }
}

/// Whether `d` puts a TIMESTAMP chunk in every packet (Ladha et al. §4, Fig. 6 variant I:
/// 12 bytes per packet), so that sources send their `timestamp_message_size`.
pub fn sends_timestamps(d: SpuriousDetection) -> bool {
    matches!(
        d,
        SpuriousDetection::EifelTimestamp | SpuriousDetection::EifelDupTsn
    )
}

/// The scenario's traffic with each source's message size for its association's
/// `spurious_detection` ([`TrafficSpec::resolved`]).
pub fn traffic(s: &Scenario) -> Vec<TrafficSpec> {
    let ts = sends_timestamps(s.association.spurious_detection.unwrap_or_default());
    s.traffic.iter().map(|t| t.resolved(ts)).collect()
}

/// `stream_paths` resolved to path indices (path *i* is the core's path *i*: local address
/// *i* with remote address *i*); unknown names are caught by [`validate`].
fn stream_path_indices(s: &Scenario) -> Vec<u16> {
    s.association
        .stream_paths
        .iter()
        .flatten()
        .map(|n| {
            s.paths
                .iter()
                .position(|p| &p.name == n)
                .and_then(|i| u16::try_from(i).ok())
                .unwrap_or(0)
        })
        .collect()
}

/// With a sender-queue-info source: the StreamBufferLow mark, a few messages of the largest
/// such source, so an event means the stream is about to run dry (Dreibholz et al. §6.2).
fn sqinfo_low_mark(s: &Scenario) -> Option<usize> {
    traffic(s)
        .iter()
        .filter_map(|t| match t {
            TrafficSpec::Saturated {
                message_size,
                sender_queue_info: true,
                ..
            } => Some(message_size * SQINFO_QUEUE_MESSAGES),
            _ => None,
        })
        .max()
}

/// Something that happens at an instant.
#[derive(Debug, Clone, Copy)]
enum Ev {
    /// A link finished serializing a packet.
    TxDone(LinkId),
    /// A packet reaches the far end of a link.
    Arrive(LinkId),
    /// A hiccup's hold deadline on a link.
    Release(LinkId),
    /// The next packet of a cross-traffic source.
    Background(usize),
    /// A host's timer.
    Timer(HostId),
    /// An on/off source of host A generates a message.
    Tick(usize),
    /// Start of the measurement window.
    Warmup,
    /// Sample windows and buffers.
    Sample,
    /// A time-series row.
    Series,
    /// A host connects its association (a scenario with `start_jitter`).
    Connect(HostId),
    /// An ICMP "too big" reaches the sender of an oversized packet (`World::icmps`).
    Icmp(usize),
    /// The sender removes its path over simulated path `i` (`removed_at`).
    RemovePath(usize),
    /// A topology flow stops writing (its `duration` is over).
    FlowStop(usize),
    /// A Pareto on/off flow starts a burst.
    Burst(usize),
    /// The next packet of a topology's unresponsive source.
    Packet(usize),
}

/// A topology flow while it runs.
#[derive(Debug, Default)]
struct FlowRt {
    /// When it connects.
    start: Instant,
    /// Bytes its receiving application read, in all and in the window.
    delivered: u64,
    window_bytes: u64,
    /// Bytes read by the last time-series row.
    series_bytes: u64,
    /// When its transfer completed.
    done: Option<Instant>,
    /// A Pareto on/off flow: the bytes of all bursts started so far, and whether one runs.
    burst_total: u64,
    bursting: bool,
    /// Sender's retransmissions at the warm-up.
    rtx_at_warmup: u64,
}

/// What a topology run adds to the two-host machinery.
struct GraphRt<'s> {
    top: &'s Scenario,
    plan: &'s crate::topology::Plan,
    flows: Vec<FlowRt>,
    /// Bursts, gaps and Poisson gaps.
    rng: ChaCha8Rng,
    /// Per `[[link]]`: its forward direction's counters and queue histogram at the warm-up.
    links_at_warmup: Vec<(crate::link::LinkStats, Vec<u64>)>,
}

/// Header of a topology run's time series: one row per `[[flow]]` (`path` is the flow's
/// name) with its sender's window summed over paths, its smoothed RTT averaged, and the
/// goodput its receiving application saw since the row before.
pub const FLOW_SERIES_HEADER: &str =
    "t_s,path,cwnd,srtt_ms,flight_size,retransmissions,goodput_mbps";

/// An ICMP "too big" on its way back to the host that sent the oversized packet.
struct PendingIcmp {
    host: HostId,
    local: std::net::SocketAddr,
    remote: std::net::SocketAddr,
    quoted: bytes::Bytes,
    /// The MTU it reports; 0: none.
    mtu: usize,
}

/// Everything one run simulates.
struct World<'s> {
    s: &'s Scenario,
    q: EventQueue<Ev>,
    topo: Topology,
    hosts: Vec<Host>,
    metrics: Metrics,
    end: Instant,
    header: usize,
    send_buffer: usize,
    /// Stop as soon as the measured transfers complete (nothing else runs).
    stop_on_transfers: bool,
    stopped: bool,
    // Scratch space, reused.
    tx_buf: Vec<u8>,
    packet_arena: BytesMut,
    msg_arena: BytesMut,
    out: Vec<Datagram>,
    dropped: Vec<(Datagram, DropReason)>,
    /// ICMP "too big" messages on their way back: (sender, its datagram, the MTU reported).
    icmps: Vec<Option<PendingIcmp>>,
    // Outputs.
    pcap: Option<(LinkId, PcapWriter<BufWriter<File>>)>,
    pcap_error: Option<std::io::Error>,
    series: Option<String>,
    /// The time-sequence record (a run with `sequence`), and each path's last (cwnd,
    /// ssthresh) in it.
    sequence: Option<String>,
    sequence_windows: Vec<Option<(usize, usize)>>,
    first_tsn: Option<u32>,
    cum_ack: Option<u32>,
    closed: bool,
    /// The defect injected into A's DATA, and A's DATA chunks seen so far.
    fault: Option<Fault>,
    fault_seen: u64,
    /// Per host, the decision-trace writers (a run with `RunOptions::trace`).
    traces: Vec<Option<TraceFiles>>,
    /// The first error writing a trace (reported when the run ends).
    trace_error: Option<std::io::Error>,
    /// Connections still to make: (host, when, local, remote).
    connects: Vec<(HostId, Instant, SocketAddr, SocketAddr)>,
    /// When the measured association's sender connects.
    a_start: Instant,
    /// A connection that failed after time 0 (reported when the run ends).
    connect_error: Option<SimError>,
    /// A topology scenario's flows and cross traffic.
    graph: Option<GraphRt<'s>>,
}

/// One host's trace files: `DIR/a-assoc-ID.jsonl` for host A, `b-…` for B, and so on; the
/// qlog ones `QDIR/a-assoc-ID.sqlog`.
type TraceFiles = braid_proto::JsonLines<BufWriter<File>>;

fn trace_files(
    dir: Option<&std::path::Path>,
    qlog: Option<&std::path::Path>,
    host: usize,
) -> Option<TraceFiles> {
    let letter = char::from(b'a' + (host % 26) as u8);
    let opener = |dir: &std::path::Path, ext: &'static str| {
        let dir = dir.to_path_buf();
        move |id: braid_proto::AssocId| {
            let f = File::create(dir.join(format!("{letter}-assoc-{}.{ext}", id.0)))?;
            Ok(BufWriter::new(f))
        }
    };
    match (dir, qlog) {
        (None, None) => None,
        (Some(d), None) => Some(braid_proto::JsonLines::new(opener(d, "jsonl"))),
        (None, Some(q)) => Some(braid_proto::JsonLines::qlog(opener(q, "sqlog"))),
        (Some(d), Some(q)) => {
            Some(braid_proto::JsonLines::new(opener(d, "jsonl")).with_qlog(opener(q, "sqlog")))
        }
    }
}

impl<'s> World<'s> {
    /// `s` is the measured association's scenario (a topology's first flow's), `top` the
    /// whole scenario (the same for a two-host one).
    fn new(
        s: &'s Scenario,
        top: &'s Scenario,
        plan: Option<&'s crate::topology::Plan>,
        opts: &RunOptions,
    ) -> Result<Self, SimError> {
        let topo = Topology::build(top, opts.seed)?;
        let cfg = association_config(s);
        let header = header_bytes(s);
        let mut seeder = ChaCha8Rng::seed_from_u64(opts.seed);
        seeder.set_stream(1 << 40);
        let endpoint_with =
            |cfg: &AssociationConfig, seeder: &mut ChaCha8Rng, port: u16, listen: bool| {
                Endpoint::try_new(
                    EndpointConfig {
                        port,
                        listen,
                        association: cfg.clone(),
                        ..EndpointConfig::default()
                    },
                    seeder.next_u64(),
                )
                .map_err(SimError::Config)
            };
        let endpoint = |seeder: &mut ChaCha8Rng, port: u16, listen: bool| {
            endpoint_with(&cfg, seeder, port, listen)
        };

        let n = s.paths.len();
        let (hosts, connects, a_start, stop_on_transfers, competing, graph) =
            if let Some(plan) = plan {
                topology_hosts(top, plan, opts.seed, &endpoint_with, &mut seeder)?
            } else {
                let mut a = Host::new(
                    endpoint(&mut seeder, SENDER_PORT, false)?,
                    (0..n).map(a_addr).collect(),
                    0,
                );
                let mut b = Host::new(
                    endpoint(&mut seeder, RECEIVER_PORT, true)?,
                    (0..n).map(b_addr).collect(),
                    0,
                );
                // Multi-homed hosts: INIT and INIT-ACK list every interface, one path per pair.
                if n > 1 {
                    a.ep.set_local_addresses((0..n).map(a_addr).collect());
                    b.ep.set_local_addresses((0..n).map(b_addr).collect());
                }
                let specs: Vec<TrafficSpec> = if s.traffic.is_empty() {
                    vec![TrafficSpec::Saturated {
                        streams: 1,
                        message_size: 1452,
                        unordered: false,
                        sender_queue_info: false,
                        sqinfo_policy: SqinfoPolicy::default(),
                        timestamp_message_size: None,
                    }]
                } else {
                    traffic(s)
                };
                let mut first = 0u16;
                for t in &specs {
                    let src = Source::from_spec(t, first);
                    first = first.saturating_add(src.streams);
                    a.sources.push(src);
                }
                b.sink = Some(Sink::new(&a.sources));
                let stop_on_transfers = a
                    .sources
                    .iter()
                    .all(|s| matches!(s.kind, SourceKind::Transfer { .. }))
                    && s.bottleneck.as_ref().is_none_or(|b| b.competing_flows == 0);
                // Start times come from their own stream of the seed: the endpoints' seeds, and so
                // every run without `start_jitter`, stay as they were.
                let mut starts = ChaCha8Rng::seed_from_u64(opts.seed);
                starts.set_stream(1 << 41);
                let mut start = || {
                    let j = s.start_jitter.0;
                    if j.is_zero() {
                        Instant::ZERO
                    } else {
                        Instant::from_duration(j.mul_f64(crate::link::uniform(&mut starts)))
                    }
                };
                let a_start = start();
                let mut connects = vec![(HOST_A, a_start, a_addr(0), b_addr(0))];
                let mut hosts = vec![a, b];
                let competing = s.bottleneck.as_ref().map_or(0, |b| b.competing_flows);
                // A competing sender fills whole packets of the first path's MTU.
                let full = s.paths[0]
                    .mtu
                    .saturating_sub(header + braid_wire::COMMON_HEADER_LEN + DATA_HEADER_LEN)
                    .max(1);
                for k in 0..competing {
                    let flow = u16::try_from(k + 1).unwrap_or(u16::MAX);
                    let mut c = Host::new(
                        endpoint(&mut seeder, SENDER_PORT, false)?,
                        vec![competing_sender_addr(k)],
                        flow,
                    );
                    let mut d = Host::new(
                        endpoint(&mut seeder, RECEIVER_PORT, true)?,
                        vec![competing_receiver_addr(k)],
                        flow,
                    );
                    c.sources
                        .push(Source::new(SourceKind::Saturated, 0, 1, full, false));
                    d.sink = Some(Sink::default());
                    connects.push((
                        hosts.len(),
                        start(),
                        competing_sender_addr(k),
                        competing_receiver_addr(k),
                    ));
                    hosts.push(c);
                    hosts.push(d);
                }
                (hosts, connects, a_start, stop_on_transfers, competing, None)
            };
        let warmup = Instant::from_duration(s.warmup.0);
        let pcap = match (&s.pcap, &opts.pcap) {
            (Some(p), Some(file)) => {
                let i = s
                    .paths
                    .iter()
                    .position(|q| q.name == p.path)
                    .ok_or_else(|| {
                        SimError::Scenario(format!("pcap of unknown path {}", p.path))
                    })?;
                let l = if p.reverse {
                    topo.paths[i].reverse
                } else {
                    topo.paths[i].forward
                };
                let io = |source| SimError::Io {
                    path: file.clone(),
                    source,
                };
                let f = File::create(file).map_err(io)?;
                Some((l, PcapWriter::new(BufWriter::new(f)).map_err(io)?))
            }
            _ => None,
        };
        for dir in opts.trace.iter().chain(&opts.qlog) {
            std::fs::create_dir_all(dir).map_err(|source| SimError::Io {
                path: dir.clone(),
                source,
            })?;
        }
        let traces = if opts.trace.is_some() || opts.qlog.is_some() {
            (0..hosts.len())
                .map(|h| trace_files(opts.trace.as_deref(), opts.qlog.as_deref(), h))
                .collect()
        } else {
            Vec::new()
        };
        let series = (s.timeseries.is_some() && opts.timeseries.is_some()).then(|| {
            let mut t = String::from(if plan.is_some() {
                FLOW_SERIES_HEADER
            } else {
                TIMESERIES_HEADER
            });
            t.push('\n');
            t
        });
        let sequence = (s.sequence && opts.sequence.is_some()).then(|| {
            let mut t = String::from(SEQUENCE_HEADER);
            t.push('\n');
            t
        });
        let mut w = Self {
            sequence,
            sequence_windows: vec![None; n],
            s,
            q: EventQueue::new(),
            metrics: Metrics::new(warmup, n, competing as usize),
            end: Instant::from_duration(s.duration.0),
            header,
            send_buffer: cfg.send_buffer,
            stop_on_transfers,
            stopped: false,
            topo,
            hosts,
            tx_buf: Vec::with_capacity(2048),
            packet_arena: BytesMut::new(),
            msg_arena: BytesMut::new(),
            out: Vec::new(),
            dropped: Vec::new(),
            icmps: Vec::new(),
            pcap,
            pcap_error: None,
            series,
            first_tsn: None,
            cum_ack: None,
            closed: false,
            fault: opts.fault,
            fault_seen: 0,
            traces,
            trace_error: None,
            connects,
            a_start,
            connect_error: None,
            graph,
        };
        let now: Vec<HostId> = w
            .connects
            .iter()
            .filter(|c| c.1 == Instant::ZERO)
            .map(|c| c.0)
            .collect();
        for h in now {
            w.connect(h)?;
        }
        Ok(w)
    }

    /// Host `h` connects the association listed for it in `connects`.
    fn connect(&mut self, h: HostId) -> Result<(), SimError> {
        let now = self.q.now();
        let Some(i) = self.connects.iter().position(|c| c.0 == h) else {
            return Ok(());
        };
        let (_, _, local, remote) = self.connects.swap_remove(i);
        let host = &mut self.hosts[h];
        let id = host
            .ep
            .connect(now, local, remote, RECEIVER_PORT)
            .map_err(|e| SimError::Scenario(e.to_string()))?;
        host.assoc = Some(id);
        Ok(())
    }

    fn run(&mut self) {
        let warmup = Instant::from_duration(self.s.warmup.0);
        self.q.schedule(warmup, Ev::Warmup);
        self.q.schedule(warmup, Ev::Sample);
        if self.series.is_some() {
            self.q.schedule(Instant::ZERO, Ev::Series);
        }
        for (i, (_, src)) in self.topo.background.iter().enumerate() {
            self.q.schedule(src.first(), Ev::Background(i));
        }
        for &(h, t, _, _) in &self.connects {
            self.q.schedule(t, Ev::Connect(h));
        }
        for (i, p) in self.s.paths.iter().enumerate() {
            if let Some(t) = p.removed_at {
                self.q
                    .schedule(Instant::from_duration(t.0), Ev::RemovePath(i));
            }
        }
        for (i, src) in self.hosts[HOST_A].sources.iter().enumerate() {
            if let Some(t) = src.first_tick() {
                self.q.schedule(t, Ev::Tick(i));
            }
        }
        self.schedule_topology();
        for h in 0..self.hosts.len() {
            self.service(h);
        }
        while let Some((now, ev)) = self.q.pop() {
            if now > self.end {
                break;
            }
            match ev {
                Ev::TxDone(l) => self.tx_done(l),
                Ev::Arrive(l) => self.arrive(l),
                Ev::Release(l) => {
                    let mut out = std::mem::take(&mut self.out);
                    let mut dropped = std::mem::take(&mut self.dropped);
                    self.topo.links[l].release(now, &mut out, &mut dropped);
                    self.after_link(&mut out, &mut dropped);
                    self.out = out;
                    self.dropped = dropped;
                }
                Ev::Background(i) => {
                    let (l, src) = self.topo.background[i];
                    self.offer(l, Datagram::background(src.packet_size));
                    self.q.schedule(src.next_after(now), Ev::Background(i));
                }
                Ev::Timer(h) => {
                    let host = &mut self.hosts[h];
                    if host.timer == Some(now) {
                        host.timer = None;
                        host.ep.handle_timeout(now);
                        self.service(h);
                    }
                }
                Ev::Icmp(i) => {
                    if let Some(m) = self.icmps.get_mut(i).and_then(Option::take) {
                        let err = braid_proto::IcmpError::TooBig { mtu: m.mtu };
                        self.hosts[m.host]
                            .ep
                            .handle_icmp(now, m.local, m.remote, &m.quoted, err);
                        self.service(m.host);
                    }
                }
                Ev::RemovePath(i) => {
                    self.remove_path(i);
                    self.service(HOST_A);
                }
                Ev::Connect(h) => {
                    if let Err(e) = self.connect(h) {
                        self.connect_error.get_or_insert(e);
                    }
                    self.service(h);
                }
                Ev::FlowStop(f) => {
                    self.hosts[2 * f].sources.clear();
                }
                Ev::Burst(f) => self.burst(f),
                Ev::Packet(i) => self.cross_packet(i),
                Ev::Tick(i) => {
                    if let Some(next) = self.hosts[HOST_A].sources[i].tick(now) {
                        self.q.schedule(next, Ev::Tick(i));
                    }
                    self.service(HOST_A);
                }
                Ev::Warmup => {
                    let links = self.topo.links.iter().map(|l| *l.stats()).collect();
                    let a = assoc(&self.hosts[HOST_A]);
                    self.metrics.snapshot_warmup(a, links);
                    self.topology_warmup();
                }
                Ev::Sample => {
                    let a = assoc(&self.hosts[HOST_A]);
                    let b = assoc(&self.hosts[HOST_B]);
                    self.metrics.sample(a, b);
                    self.q.schedule(now + SAMPLE_INTERVAL, Ev::Sample);
                }
                Ev::Series => {
                    if self.graph.is_some() {
                        self.flow_series_rows();
                    } else {
                        self.series_rows();
                    }
                    if let Some(d) = self.s.timeseries {
                        self.q.schedule(now + d.0, Ev::Series);
                    }
                }
            }
            if self.stopped {
                self.end = now;
                break;
            }
        }
        // The run ends at the end of the scenario even if nothing was left to happen.
        if !self.stopped {
            self.end = self.end.min(Instant::from_duration(self.s.duration.0));
        }
    }

    /// A topology run's own events: flows that stop, first bursts, first packets.
    fn schedule_topology(&mut self) {
        let Some(g) = &mut self.graph else {
            return;
        };
        for (f, fp) in g.plan.flows.iter().enumerate() {
            let start = g.flows[f].start;
            if let Some(d) = fp.duration {
                self.q.schedule(start + d, Ev::FlowStop(f));
            }
            if let Some((k, _)) = fp.onoff {
                // A random phase: the first burst after one idle gap.
                let o = &g.plan.onoff[k];
                let gap = o.gap_mean.as_secs_f64();
                let u = crate::link::uniform(&mut g.rng);
                let first = crate::topology::pareto(gap, o.gap_shape, u);
                self.q
                    .schedule(start + Duration::from_secs_f64(first), Ev::Burst(f));
            }
        }
        for i in 0..g.plan.packet_sources.len() {
            self.q.schedule(Instant::ZERO, Ev::Packet(i));
        }
    }

    /// Pareto on/off flow `f` starts a burst: its transfer grows by a Pareto-sized amount.
    fn burst(&mut self, f: usize) {
        let Some(g) = &mut self.graph else {
            return;
        };
        let Some((k, _)) = g.plan.flows[f].onoff else {
            return;
        };
        let o = &g.plan.onoff[k];
        let u = crate::link::uniform(&mut g.rng);
        let size = crate::topology::pareto(o.size_mean, o.size_shape, u).ceil() as u64;
        let rt = &mut g.flows[f];
        rt.burst_total += size.max(1);
        rt.bursting = true;
        let total = rt.burst_total;
        for src in &mut self.hosts[2 * f].sources {
            src.kind = SourceKind::Transfer { total };
        }
        self.service(2 * f);
    }

    /// Topology flow `f`'s receiving application read `bytes` at `now`.
    fn on_flow_delivery(&mut self, f: usize, bytes: usize, done: bool) {
        let now = self.q.now();
        let counts = self.metrics.counts(now);
        let Some(g) = &mut self.graph else {
            return;
        };
        let rt = &mut g.flows[f];
        rt.delivered += bytes as u64;
        if counts {
            rt.window_bytes += bytes as u64;
        }
        if done && rt.done.is_none() && g.plan.flows[f].onoff.is_none() {
            rt.done = Some(now);
        }
        if rt.bursting && rt.delivered >= rt.burst_total {
            rt.bursting = false;
            if let Some((k, _)) = g.plan.flows[f].onoff {
                let o = &g.plan.onoff[k];
                let u = crate::link::uniform(&mut g.rng);
                let gap = crate::topology::pareto(o.gap_mean.as_secs_f64(), o.gap_shape, u);
                self.q
                    .schedule(now + Duration::from_secs_f64(gap), Ev::Burst(f));
            }
        }
    }

    /// The start of the window in a topology run: each link's and flow's counters.
    fn topology_warmup(&mut self) {
        let Some(g) = &mut self.graph else {
            return;
        };
        g.links_at_warmup = (0..self.topo.topology_links)
            .map(|j| {
                let l = &self.topo.links[2 * j];
                (*l.stats(), l.queue_seen().to_vec())
            })
            .collect();
        for (f, rt) in g.flows.iter_mut().enumerate() {
            rt.rtx_at_warmup = assoc(&self.hosts[2 * f]).map_or(0, retransmissions);
        }
    }

    /// One time-series row per `[[flow]]` of a topology run ([`FLOW_SERIES_HEADER`]).
    fn flow_series_rows(&mut self) {
        let now = self.q.now();
        let (Some(out), Some(g)) = (&mut self.series, &mut self.graph) else {
            return;
        };
        let interval = self.s.timeseries.map_or(0.0, |d| d.0.as_secs_f64());
        for f in 0..g.top.flows.len() {
            let rt = &mut g.flows[f];
            let bytes = rt.delivered - rt.series_bytes;
            rt.series_bytes = rt.delivered;
            let Some(a) = assoc(&self.hosts[2 * f]) else {
                continue;
            };
            let paths = a.paths();
            let cwnd: usize = paths.iter().map(|p| p.cwnd).sum();
            let flight: usize = paths.iter().map(|p| p.flight_size).sum();
            let srtts: Vec<f64> = (paths.iter())
                .filter_map(|p| p.srtt.map(|d| d.as_secs_f64() * 1e3))
                .collect();
            let srtt = if srtts.is_empty() {
                String::new()
            } else {
                format!("{:.3}", srtts.iter().sum::<f64>() / srtts.len() as f64)
            };
            let goodput = if interval > 0.0 && now > Instant::ZERO {
                format!("{:.4}", bytes as f64 * 8.0 / interval / 1e6)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "{:.6},{},{cwnd},{srtt},{flight},{},{goodput}",
                now.since_epoch().as_secs_f64(),
                g.plan.flows[f].name,
                retransmissions(a),
            );
        }
    }

    /// A topology run's metrics: per flow, per cross-traffic source, per link, and Jain's
    /// index.
    fn topology_metrics(&self, m: &mut BTreeMap<String, f64>) {
        let Some(g) = &self.graph else {
            return;
        };
        let warmup = Instant::from_duration(self.s.warmup.0);
        let secs = (self.end - warmup).as_secs_f64();
        let mbps = |b: u64| crate::metrics::mbps(b, secs);
        let mut cross: BTreeMap<&str, u64> = BTreeMap::new();
        let mut errors = 0u64;
        for (f, fp) in g.plan.flows.iter().enumerate() {
            let rt = &g.flows[f];
            if let Some((k, _)) = fp.onoff {
                *cross.entry(g.plan.onoff[k].name.as_str()).or_default() += rt.window_bytes;
                continue;
            }
            let p = format!("flow_{}_", fp.name);
            m.insert(format!("{p}goodput_mbps"), mbps(rt.window_bytes));
            m.insert(format!("{p}start_s"), rt.start.since_epoch().as_secs_f64());
            if fp
                .scenario
                .traffic
                .iter()
                .any(|t| matches!(t, TrafficSpec::Transfer { .. }))
            {
                m.insert(
                    format!("{p}fct_s"),
                    rt.done.map_or(f64::NAN, |d| (d - rt.start).as_secs_f64()),
                );
            }
            let rtx = assoc(&self.hosts[2 * f]).map_or(0, retransmissions);
            m.insert(
                format!("{p}retransmissions"),
                rtx.saturating_sub(rt.rtx_at_warmup) as f64,
            );
            if let Some(sink) = &self.hosts[2 * f + 1].sink {
                let e = sink.missing + sink.duplicated + sink.corrupt;
                m.insert(format!("{p}app_errors"), e as f64);
                errors += e;
            }
        }
        m.insert("flows_app_errors".into(), errors as f64);
        for (name, bytes) in cross {
            m.insert(format!("cross_{name}_goodput_mbps"), mbps(bytes));
        }
        let shares: Vec<f64> = (g.plan.fairness.iter())
            .map(|&f| mbps(g.flows[f].window_bytes))
            .collect();
        m.insert("jain_fairness".into(), crate::topology::jain(&shares));
        for (j, spec) in g.top.links.iter().enumerate() {
            let link = &self.topo.links[2 * j];
            let (e, seen) = (link.stats(), link.queue_seen());
            let (b, seen0) = g.links_at_warmup.get(j).cloned().unwrap_or_default();
            let offered = e.offered - b.offered;
            let drops = (e.drops_queue + e.drops_loss + e.drops_mtu + e.drops_failure)
                - (b.drops_queue + b.drops_loss + b.drops_mtu + b.drops_failure);
            let p = format!("bottleneck_{}_", spec.name);
            let busy = e.busy.saturating_sub(b.busy).as_secs_f64();
            m.insert(format!("{p}utilisation"), busy / secs.max(1e-9));
            let ratio = |a: f64, b: u64| if b > 0 { a / b as f64 } else { f64::NAN };
            m.insert(
                format!("{p}queue_mean"),
                ratio((e.queue_seen_sum - b.queue_seen_sum) as f64, offered),
            );
            // The 99th percentile of the queue arrivals in the window found (nearest rank).
            let counts: Vec<u64> = (0..seen.len())
                .map(|n| seen[n] - seen0.get(n).copied().unwrap_or(0))
                .collect();
            let total: u64 = counts.iter().sum();
            let rank = (total as f64 * 0.99).ceil() as u64;
            let mut acc = 0;
            let p99 = counts.iter().position(|&c| {
                acc += c;
                acc >= rank.max(1)
            });
            m.insert(format!("{p}queue_p99"), p99.map_or(f64::NAN, |n| n as f64));
            m.insert(format!("{p}drops"), drops as f64);
            m.insert(format!("{p}loss"), ratio(drops as f64, offered));
        }
    }

    /// Unresponsive source `i` sends a packet along its route, and schedules the next.
    fn cross_packet(&mut self, i: usize) {
        let now = self.q.now();
        let Some(g) = &mut self.graph else {
            return;
        };
        let src = &g.plan.packet_sources[i];
        let spacing = crate::link::serialization_time(src.packet_size, src.rate_bps)
            .max(Duration::from_nanos(1));
        let next = if src.poisson {
            // Exponential gaps with the mean spacing.
            let u = crate::link::uniform(&mut g.rng);
            spacing.mul_f64(-(1.0 - u).ln())
        } else {
            spacing
        };
        let route = self.topo.packet_routes[i];
        let mut d = Datagram::background(src.packet_size);
        d.route = route;
        self.q.schedule(now + next, Ev::Packet(i));
        let l = self.topo.routes[usize::from(route)].links[0];
        self.offer(l, d);
    }

    /// The sender removes its path(s) over simulated path `i`; a refusal (the last
    /// confirmed path, or the handshake not over) is recorded as the run's error.
    fn remove_path(&mut self, i: usize) {
        let now = self.q.now();
        let host = &mut self.hosts[HOST_A];
        let Some(a) = host.assoc.and_then(|id| host.ep.association_mut(id)) else {
            return;
        };
        let ids: Vec<_> = a
            .paths()
            .iter()
            .filter(|p| path_of(p.remote.ip()) == Some(i))
            .map(|p| p.id)
            .collect();
        for id in ids {
            if let Err(e) = a.remove_path(now, id) {
                let name = &self.s.paths[i].name;
                self.connect_error
                    .get_or_insert(SimError::Scenario(format!("path.{name}.removed_at: {e}")));
            }
        }
    }

    /// A packet enters link `l`.
    fn offer(&mut self, l: LinkId, d: Datagram) {
        let now = self.q.now();
        match self.topo.links[l].offer(now, d) {
            Offer::Transmitting { done } => {
                self.q.schedule(done, Ev::TxDone(l));
                self.capture(l);
            }
            Offer::Queued => {}
            Offer::Dropped(d, reason) => {
                if reason == DropReason::Mtu {
                    self.icmp_too_big(l, &d);
                }
                self.on_drop(&d);
            }
        }
    }

    /// A path's link dropped `d` as too big: the ICMP its `icmp` key says goes back to the
    /// sender, one propagation delay later (the router sits at the link's entrance).
    fn icmp_too_big(&mut self, l: LinkId, d: &Datagram) {
        let Some(i) = (self.topo.paths.iter()).position(|p| p.forward == l || p.reverse == l)
        else {
            return;
        };
        let spec = &self.s.paths[i];
        let mtu = match spec.icmp_mode() {
            IcmpMode::None => return,
            // 0: the message carried no MTU (`IcmpError::TooBig`).
            IcmpMode::WithoutMtu => 0,
            IcmpMode::WithMtu => self.topo.links[l].mtu_at(self.q.now()).unwrap_or(0),
        };
        let Some(sender) = self.topo.route_to(d.src.ip()) else {
            return;
        };
        let host = self.topo.routes[usize::from(sender)].to;
        let at = self.q.now() + spec.delay.0;
        self.icmps.push(Some(PendingIcmp {
            host,
            local: d.src,
            remote: d.dst,
            quoted: d.payload.clone(),
            mtu,
        }));
        self.q.schedule(at, Ev::Icmp(self.icmps.len() - 1));
    }

    fn tx_done(&mut self, l: LinkId) {
        let now = self.q.now();
        let mut dropped = std::mem::take(&mut self.dropped);
        let r = self.topo.links[l].tx_done(now, &mut dropped);
        if let Some(at) = r.arrival {
            self.q.schedule(at, Ev::Arrive(l));
        }
        if let Some(done) = r.next_done {
            self.q.schedule(done, Ev::TxDone(l));
            self.capture(l);
        }
        for (d, _) in dropped.drain(..) {
            self.on_drop(&d);
        }
        self.dropped = dropped;
    }

    fn arrive(&mut self, l: LinkId) {
        let now = self.q.now();
        let mut out = std::mem::take(&mut self.out);
        let mut dropped = std::mem::take(&mut self.dropped);
        if let Some(deadline) = self.topo.links[l].arrive(now, &mut out, &mut dropped) {
            self.q.schedule(deadline, Ev::Release(l));
        }
        self.after_link(&mut out, &mut dropped);
        self.out = out;
        self.dropped = dropped;
    }

    fn after_link(&mut self, out: &mut Vec<Datagram>, dropped: &mut Vec<(Datagram, DropReason)>) {
        for (d, _) in dropped.drain(..) {
            self.on_drop(&d);
        }
        for d in out.drain(..) {
            self.forward(d);
        }
    }

    /// A datagram left a link: on to the next one, or to its host.
    fn forward(&mut self, mut d: Datagram) {
        if d.background && d.route == NO_ROUTE {
            return;
        }
        let route = &self.topo.routes[usize::from(d.route)];
        d.hop += 1;
        match route.links.get(usize::from(d.hop)) {
            Some(&l) => self.offer(l, d),
            // A topology's cross traffic ends with its route.
            None if d.background => {}
            None => {
                let (to, path) = (route.to, route.path);
                self.deliver(to, path, d);
            }
        }
    }

    fn on_drop(&mut self, d: &Datagram) {
        for c in d.data.iter() {
            self.metrics.tsn.on_drop(c.tsn);
        }
    }

    /// Writes the packet link `l` starts serializing to the capture, if it is captured.
    fn capture(&mut self, l: LinkId) {
        let now = self.q.now();
        if let Some((cl, w)) = &mut self.pcap
            && *cl == l
            && self.pcap_error.is_none()
            && let Some(d) = self.topo.links[l].in_service()
            && !d.background
            && let Err(e) = w.write_sctp(now.since_epoch(), d.src, d.dst, &d.payload)
        {
            self.pcap_error = Some(e);
        }
    }

    fn deliver(&mut self, h: HostId, path: Option<usize>, d: Datagram) {
        let now = self.q.now();
        if d.flow == 0 {
            if h == HOST_B && !d.data.is_empty() {
                self.metrics.on_data_arrival(now, path, &d.data);
                if self.sequence.is_some() {
                    for c in d.data.iter() {
                        self.sequence_row("arrive", path, Some(c.tsn), None);
                    }
                }
            } else if h == HOST_A
                && let Some(cum) = sack_cum_tsn(&d.payload)
            {
                self.metrics.tsn.on_cum_ack(cum);
                self.cum_ack = Some(cum);
                self.sequence_row("sack", path, Some(cum), None);
            }
        }
        self.hosts[h]
            .ep
            .handle_datagram(now, d.dst, d.src, d.payload);
        self.service(h);
    }

    /// After an input to host `h`: events, application, transmissions, timer.
    fn service(&mut self, h: HostId) {
        self.drain_trace(h);
        let now = self.q.now();
        for round in 0.. {
            let mut events = 0;
            while let Some((id, ev)) = self.hosts[h].ep.poll_event() {
                events += 1;
                self.on_event(h, id, ev);
            }
            if round > 0 && events == 0 {
                break;
            }
            let host = &mut self.hosts[h];
            while let Some(id) = host.ep.accept() {
                host.assoc.get_or_insert(id);
            }
            if !host.sources.is_empty()
                && let Some(a) = host.assoc.and_then(|id| host.ep.association_mut(id))
            {
                for s in &mut host.sources {
                    let limit = a.send_buffer_limit().max(self.send_buffer);
                    s.pump(now, a, limit, &mut self.msg_arena);
                }
            }
            self.transmit(h);
            if round >= 8 {
                break;
            }
        }
        self.drain_trace(h);
        if h == HOST_A && self.sequence.is_some() {
            self.sequence_windows();
        }
        self.arm_timer(h);
    }

    /// A row of the time-sequence record (a run with one); `tsn` as sent, made relative.
    fn sequence_row(
        &mut self,
        event: &str,
        path: Option<usize>,
        tsn: Option<u32>,
        window: Option<(usize, usize)>,
    ) {
        let now = self.q.now();
        let Some(out) = &mut self.sequence else {
            return;
        };
        let name = path
            .and_then(|i| self.s.paths.get(i))
            .map_or("?", |p| p.name.as_str());
        let tsn = match (tsn, self.first_tsn) {
            (Some(t), Some(f)) => i64::from(t.wrapping_sub(f).wrapping_add(1) as i32).to_string(),
            _ => String::new(),
        };
        let (cwnd, ssthresh) = window.map_or((String::new(), String::new()), |(c, s)| {
            (c.to_string(), s.to_string())
        });
        let _ = writeln!(
            out,
            "{:.6},{event},{name},{tsn},{cwnd},{ssthresh}",
            now.since_epoch().as_secs_f64()
        );
    }

    /// `cwnd` rows for the sender's paths whose window changed since the last row.
    fn sequence_windows(&mut self) {
        let Some(a) = assoc(&self.hosts[HOST_A]) else {
            return;
        };
        let changed: Vec<(usize, (usize, usize))> = a
            .paths()
            .iter()
            .filter_map(|p| {
                let i = path_of(p.remote.ip())?;
                let w = (p.cwnd, p.ssthresh);
                (self.sequence_windows.get(i).copied().flatten() != Some(w)).then_some((i, w))
            })
            .collect();
        for (i, w) in changed {
            if let Some(slot) = self.sequence_windows.get_mut(i) {
                *slot = Some(w);
            }
            self.sequence_row("cwnd", Some(i), None, Some(w));
        }
    }

    /// Writes what `h`'s associations decided since the last call (a run with a trace).
    fn drain_trace(&mut self, h: HostId) {
        let Some(t) = self.traces.get_mut(h).and_then(Option::as_mut) else {
            return;
        };
        if let Err(e) = t.drain(&mut self.hosts[h].ep) {
            self.trace_error.get_or_insert(e);
        }
    }

    fn on_event(&mut self, h: HostId, id: AssocId, ev: Event) {
        let now = self.q.now();
        let flow = self.hosts[h].flow;
        match ev {
            Event::Readable => {
                let host = &mut self.hosts[h];
                let Some(a) = host.ep.association_mut(id) else {
                    return;
                };
                let Some(sink) = &mut host.sink else {
                    // No application reads here: discard.
                    while a.recv().is_some() {}
                    return;
                };
                let mut read = 0;
                while let Some(m) = a.recv() {
                    let d = sink.on_message(now, &m);
                    read += d.bytes;
                    if flow == 0 {
                        self.metrics.on_delivery(now, &d);
                    } else {
                        self.metrics
                            .on_competing_delivery(now, usize::from(flow - 1), d.bytes);
                    }
                }
                let done = sink.transfers_done().is_some();
                if self.graph.is_some() {
                    self.on_flow_delivery(usize::from(flow), read, done);
                    return;
                }
                if flow == 0 && self.stop_on_transfers && sink.transfers_done().is_some() {
                    self.stopped = true;
                }
            }
            Event::StreamBufferLow { stream } if h == HOST_A => {
                for s in &mut self.hosts[h].sources {
                    s.on_buffer_low(stream);
                }
            }
            Event::PathState { .. } if flow == 0 && self.metrics.counts(now) => {
                self.metrics.path_state_changes += 1;
            }
            Event::Closed(_) if flow == 0 => self.closed = true,
            _ => {}
        }
    }

    /// Drains host `h`'s packets onto their first links.
    fn transmit(&mut self, h: HostId) {
        let now = self.q.now();
        loop {
            self.tx_buf.clear();
            let Some(t) = self.hosts[h].ep.poll_transmit(now, &mut self.tx_buf) else {
                break;
            };
            let Some(route) = self.topo.route_to(t.remote.ip()) else {
                continue;
            };
            let sctp = &self.tx_buf[..t.size];
            if self.packet_arena.capacity() < sctp.len() {
                self.packet_arena = BytesMut::with_capacity(64 * 1024);
            }
            self.packet_arena.extend_from_slice(sctp);
            let mut payload = self.packet_arena.split().freeze();
            if h == HOST_A
                && let Some(f) = self.fault
            {
                payload = damage(f, &mut self.fault_seen, payload);
            }
            let mut d = Datagram {
                src: t.local,
                dst: t.remote,
                size: self.header + payload.len(),
                payload,
                route,
                hop: 0,
                background: false,
                may_fragment: t.may_fragment,
                flow: self.hosts[h].flow,
                data: Default::default(),
            };
            if h == HOST_A {
                let tracker = &mut self.metrics.tsn;
                let first = &mut self.first_tsn;
                for_each_data(&d.payload, |tsn, len| {
                    first.get_or_insert(tsn);
                    let tx = tracker.on_send(now, tsn);
                    d.data.push(DataCopy { tsn, tx, len });
                });
                if self.sequence.is_some() {
                    let path = path_of(t.remote.ip());
                    for c in d.data.iter() {
                        let event = if c.tx == 1 { "send" } else { "rtx" };
                        self.sequence_row(event, path, Some(c.tsn), None);
                    }
                }
            }
            let l = self.topo.routes[usize::from(route)].links[0];
            self.offer(l, d);
        }
    }

    fn arm_timer(&mut self, h: HostId) {
        let now = self.q.now();
        let host = &mut self.hosts[h];
        let Some(t) = host.ep.poll_timeout() else {
            return;
        };
        // A deadline at `now` fires once: handle_timeout leaves none due (the core's timer.rs).
        let at = t.max(now);
        if host.timer.is_none_or(|armed| at < armed) {
            host.timer = Some(at);
            self.q.schedule(at, Ev::Timer(h));
        }
    }

    fn series_rows(&mut self) {
        let now = self.q.now();
        let Some(out) = &mut self.series else {
            return;
        };
        let Some(a) = assoc(&self.hosts[HOST_A]) else {
            return;
        };
        let recv = assoc(&self.hosts[HOST_B]).map_or(0, Association::recv_buffered);
        let cum = match (self.cum_ack, self.first_tsn) {
            (Some(c), Some(f)) => i64::from(c.wrapping_add(1).wrapping_sub(f) as i32),
            _ => 0,
        };
        for p in a.paths() {
            let name = path_of(p.remote.ip())
                .and_then(|i| self.s.paths.get(i))
                .map_or("?", |q| q.name.as_str());
            let srtt = p
                .srtt
                .map(|d| format!("{:.3}", d.as_secs_f64() * 1e3))
                .unwrap_or_default();
            let state = p.state.as_str();
            let _ = writeln!(
                out,
                "{:.6},{name},{},{},{:.3},{},{srtt},{cum},{},{recv},{state},{},{},{}",
                now.since_epoch().as_secs_f64(),
                p.cwnd,
                p.ssthresh,
                p.rto.as_secs_f64() * 1e3,
                p.flight_size,
                a.send_buffered(),
                p.stats.retransmissions,
                p.stats.fast_retransmissions,
                p.stats.timeouts,
            );
        }
    }

    fn finish(mut self, opts: &RunOptions) -> Result<RunResult, SimError> {
        if let Some(e) = self.connect_error.take() {
            return Err(e);
        }
        for h in 0..self.traces.len() {
            self.drain_trace(h);
        }
        if let Some(dir) = opts.trace.as_ref().or(opts.qlog.as_ref()) {
            let io = |source| SimError::Io {
                path: dir.clone(),
                source,
            };
            if let Some(e) = self.trace_error.take() {
                return Err(io(e));
            }
            for t in self.traces.iter_mut().flatten() {
                t.flush().map_err(io)?;
            }
        }
        if let Some((_, w)) = self.pcap.take() {
            let path = opts.pcap.clone().unwrap_or_default();
            if let Some(e) = self.pcap_error.take() {
                return Err(SimError::Io { path, source: e });
            }
            w.into_inner()
                .and_then(|mut b| b.flush())
                .map_err(|source| SimError::Io { path, source })?;
        }
        if let (Some(rows), Some(path)) = (self.sequence.take(), &opts.sequence) {
            std::fs::write(path, rows).map_err(|source| SimError::Io {
                path: path.clone(),
                source,
            })?;
        }
        if let (Some(rows), Some(path)) = (self.series.take(), &opts.timeseries) {
            std::fs::write(path, rows).map_err(|source| SimError::Io {
                path: path.clone(),
                source,
            })?;
        }
        let mut topology = BTreeMap::new();
        self.topology_metrics(&mut topology);
        let transfer = self.hosts[HOST_B]
            .sink
            .as_ref()
            .filter(|s| s.has_transfers())
            .map(Sink::transfers_done);
        let f = Final {
            end: self.end,
            path_names: self.s.paths.iter().map(|p| p.name.as_str()).collect(),
            links: self.topo.links.iter().map(|l| *l.stats()).collect(),
            path_links: self
                .topo
                .paths
                .iter()
                .map(|p| (p.forward, p.reverse))
                .collect(),
            bottleneck: self.topo.bottleneck.map(|b| b.forward),
            icmp_too_big: (self.s.paths.iter())
                .map(|p| p.icmp_mode() != IcmpMode::None)
                .collect(),
            sender: assoc(&self.hosts[HOST_A]),
            receiver: assoc(&self.hosts[HOST_B]),
            header_bytes: self.header,
            transfer,
            start: self.a_start,
            closed: self.closed,
            app_missing: self.hosts[HOST_B].sink.as_ref().map_or(0, |s| s.missing),
            app_duplicated: self.hosts[HOST_B].sink.as_ref().map_or(0, |s| s.duplicated),
            app_corrupt: self.hosts[HOST_B].sink.as_ref().map_or(0, |s| s.corrupt),
        };
        let metrics = self.metrics.finish(f);
        let metrics = metrics.into_iter().chain(topology).collect();
        Ok(RunResult {
            metrics,
            events: self.q.processed(),
            simulated: self.end.since_epoch(),
        })
    }
}

/// Retransmissions an association's sender made on all its paths, removed ones included.
fn retransmissions(a: &Association) -> u64 {
    (a.paths().iter().chain(a.removed_paths().iter()))
        .map(|p| p.stats.retransmissions)
        .sum()
}

fn assoc(h: &Host) -> Option<&Association> {
    h.assoc.and_then(|id| h.ep.association(id))
}

/// Applies `fault` to the DATA chunks of packet `p` (counting them in `seen`) and encodes
/// it again through braid-wire, checksum included, if it damaged one.
fn damage(fault: Fault, seen: &mut u64, p: Bytes) -> Bytes {
    let Ok(mut packet) = Packet::decode_unverified(&p) else {
        return p;
    };
    let (Fault::FlipBit { every } | Fault::Truncate { every }) = fault;
    let mut changed = false;
    for c in &mut packet.chunks {
        let Chunk::Data(d) = c else {
            continue;
        };
        *seen += 1;
        // Never empty a chunk: the core would answer No User Data (RFC 9260 §6.2).
        if !seen.is_multiple_of(every.max(1)) || d.user_data.len() <= 4 {
            continue;
        }
        let mut u = d.user_data.to_vec();
        match fault {
            Fault::FlipBit { .. } => {
                if let Some(b) = u.last_mut() {
                    *b ^= 1;
                }
            }
            Fault::Truncate { .. } => u.truncate(u.len() - 4),
        }
        d.user_data = u.into();
        changed = true;
    }
    if !changed {
        return p;
    }
    packet.to_vec().map_or(p, Bytes::from)
}

/// Calls `f(tsn, user data length)` for each DATA chunk of an SCTP packet (RFC 9260
/// §3.3.1), decoded by braid-wire; a malformed chunk ends the walk as it ends the core's.
fn for_each_data(p: &Bytes, mut f: impl FnMut(u32, u32)) {
    for raw in braid_wire::raw_chunks(p) {
        let Ok(raw) = raw else {
            return;
        };
        if let Some(Ok(d)) = raw.decode_as::<Data>() {
            f(d.tsn, u32::try_from(d.user_data.len()).unwrap_or(u32::MAX));
        }
        // LS-SCTP: the ASN is the association's sequence, as a TSN (Abd El Al et al. §4.2).
        if let Some(Ok(d)) = raw.decode_as::<LsData>() {
            f(d.asn, u32::try_from(d.user_data.len()).unwrap_or(u32::MAX));
        }
    }
}

/// The cumulative TSN ack of the first SACK or NR-SACK chunk of an SCTP packet (RFC 9260
/// §3.3.4; NR-SACK, draft-tuexen-tsvwg-sctp-multipath §4.1, has the same field first).
fn sack_cum_tsn(p: &Bytes) -> Option<u32> {
    for raw in braid_wire::raw_chunks(p) {
        let raw = raw.ok()?;
        if let Some(sack) = raw.decode_as::<Sack>() {
            return sack.ok().map(|s| s.cum_tsn_ack);
        }
        if let Some(nr) = raw.decode_as::<NrSack>() {
            return nr.ok().map(|s| s.cum_tsn_ack);
        }
        if let Some(ls) = raw.decode_as::<LsSack>() {
            return ls.ok().map(|s| s.cum_asn);
        }
    }
    None
}

/// What [`World::new`] sets up per host: the hosts, the connections to make, when the
/// measured association starts, whether the run stops when its transfers complete, the
/// number of competing flows, and a topology run's state.
type HostsSetup<'s> = (
    Vec<Host>,
    Vec<(HostId, Instant, SocketAddr, SocketAddr)>,
    Instant,
    bool,
    u32,
    Option<GraphRt<'s>>,
);

/// The hosts of a topology scenario: flow *f*'s sender is host 2*f*, its receiver 2*f* + 1,
/// each with the flow's association settings and one interface per route.
fn topology_hosts<'s, F>(
    top: &'s Scenario,
    plan: &'s crate::topology::Plan,
    seed: u64,
    endpoint_with: &F,
    seeder: &mut ChaCha8Rng,
) -> Result<HostsSetup<'s>, SimError>
where
    F: Fn(&AssociationConfig, &mut ChaCha8Rng, u16, bool) -> Result<Endpoint, SimError>,
{
    use crate::topology::flow_addr;
    let start_at = crate::topology::start_times(top, plan, seed);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(1 << 42);
    let mut hosts = Vec::with_capacity(2 * plan.flows.len());
    let mut connects = Vec::with_capacity(plan.flows.len());
    let mut flows = Vec::with_capacity(plan.flows.len());
    for (f, fp) in plan.flows.iter().enumerate() {
        let cfg = association_config(&fp.scenario);
        let n = fp.routes.len();
        let flow = u16::try_from(f).unwrap_or(u16::MAX);
        let mut a = Host::new(
            endpoint_with(&cfg, seeder, SENDER_PORT, false)?,
            (0..n).map(|i| flow_addr(f, i, true)).collect(),
            flow,
        );
        let mut b = Host::new(
            endpoint_with(&cfg, seeder, RECEIVER_PORT, true)?,
            (0..n).map(|i| flow_addr(f, i, false)).collect(),
            flow,
        );
        if n > 1 {
            a.ep.set_local_addresses(a.addrs.clone());
            b.ep.set_local_addresses(b.addrs.clone());
        }
        let mut first = 0u16;
        for t in &traffic(&fp.scenario) {
            let mut src = Source::from_spec(t, first);
            if fp.onoff.is_some() {
                // Bursts raise the total as they start.
                src.kind = SourceKind::Transfer { total: 0 };
            }
            first = first.saturating_add(src.streams);
            a.sources.push(src);
        }
        b.sink = Some(Sink::new(&a.sources));
        let at = start_at[f];
        let start = Instant::from_duration(at);
        connects.push((2 * f, start, flow_addr(f, 0, true), flow_addr(f, 0, false)));
        flows.push(FlowRt {
            start,
            ..FlowRt::default()
        });
        hosts.push(a);
        hosts.push(b);
    }
    let a_start = flows[0].start;
    let graph = GraphRt {
        top,
        plan,
        flows,
        rng,
        links_at_warmup: Vec::new(),
    };
    Ok((hosts, connects, a_start, false, 0, Some(graph)))
}
