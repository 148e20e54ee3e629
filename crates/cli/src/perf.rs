//! `braid perf`: a throughput test between two braid endpoints, iperf3 style.
//!
//! The data follows the interop message format (`interop/FORMAT.md`, version 1): every
//! message carries its stream, a per-stream sequence number and its length in a 20-byte
//! header, and a payload pattern derived from them, so the receiver checks every byte (and a
//! third-party peer can check braid's data and the other way round). A mismatch aborts the
//! association and is a hard error (non-zero exit).
//!
//! The client sends for `--time` or `--bytes`, shuts down gracefully (so every byte is
//! acknowledged) and prints one line per second and a summary (or one JSON object with
//! `--json`); Ctrl-C stops it early, aborts the association and still prints the summary.
//! The summary gives goodput over the whole run (shutdown drain included) and over the
//! sending time alone (bytes acknowledged while sending, as iperf3 and quinn's perf count);
//! a stall (nothing acknowledged for three RTOs while data waits) is reported on stderr as it
//! happens, with each path's state, and counted in the summary.
//! The server serves any number of associations at once, each with its own verifier and
//! summary, and goes on when one of them fails (bad data, ABORT, a client that vanished:
//! nothing received for `--idle-timeout`); `--one-off` serves one and exits with its result.
//!
//! Echo mode (the interop matrix's "echo + verify" runs): `perf server --echo` sends every
//! received message back unchanged on the same stream (ordered), and `perf client
//! --verify-echo` checks the echoed messages with the same verifier and shuts down only
//! once every message came back.
//!
//! Interactive workload (`perf client --interactive SIZE@RATE --time T`): bulk messages on
//! stream 0 next to small ones at a fixed rate on stream 1, with a per-message timing log
//! (`--timing-log`) for measuring how long the small ones take (docs/idata.md).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use braid_net::{
    Association, AssociationConfig, EndpointConfig, NetConfig, PathInfo, SchedulerKind, SendOptions,
};
use bytes::{BufMut, Bytes, BytesMut};
use clap::{Args, Subcommand};
use tokio::time::Instant;

use crate::bind;

/// Errors reported to the user.
type Error = Box<dyn std::error::Error>;

/// PPID of every message (WebRTC Binary, as the interop format says).
const PPID: u32 = 53;
/// Header length of a message.
const HEADER: usize = 20;
/// Largest message `braid perf` sends or verifies: FORMAT.md's 65536 for the interop runs,
/// up to 1 MiB for `--interactive`'s bulk messages (FORMAT.md "Interactive workload").
const MAX_MSG: usize = 1 << 20;
const FLAG_LAST: u8 = 1;
const FLAG_UNORDERED: u8 = 2;
/// The payload's first 8 bytes carry the sender's CLOCK_REALTIME at `send` (ns since the
/// Unix epoch), for the receiver's one-way delay and jitter (FORMAT.md, braid perf only).
const FLAG_TIMESTAMP: u8 = 4;
/// Bytes of the timestamp at the start of a timestamped payload.
const STAMP: usize = 8;

#[derive(Subcommand)]
pub(crate) enum PerfCommand {
    /// Accept associations and verify and report the data they carry (`--echo`: and send
    /// it back).
    Server(ServerArgs),
    /// Connect to a `braid perf server`, send for a time or a number of bytes, report
    /// (`--verify-echo`: and verify the server's echo).
    Client(ClientArgs),
}

#[derive(Args)]
pub(crate) struct ServerArgs {
    /// Local address to bind, `ADDR` or `ADDR:PORT` (repeatable: one socket per address,
    /// all on one UDP port; without a port, --udp-port's). Default: every address of both
    /// families (0.0.0.0 and ::), as iperf3 listens.
    #[arg(short = 'B', long, value_parser = parse_bind)]
    bind: Vec<BindSpec>,
    /// UDP port to listen on where --bind gives none (9899: SCTP over UDP's, RFC 6951).
    #[arg(short = 'p', long, default_value_t = 9899)]
    udp_port: u16,
    /// Fix the send and receive buffers at this size (no autotuning), as a simulator
    /// scenario's `buffer` does (e.g. 64KiB; iperf3's -w).
    #[arg(short = 'w', long, visible_alias = "window", value_parser = parse_size)]
    buffer: Option<u64>,

    /// Local SCTP port.
    #[arg(long, default_value_t = 5001)]
    port: u16,
    /// Print one JSON object per association instead of text.
    #[arg(short = 'J', long)]
    json: bool,
    /// Seconds between interval lines of each association (0: none).
    #[arg(short = 'i', long, value_parser = parse_duration_or_zero, default_value = "1")]
    interval: Duration,
    /// Append the output (interval lines and summaries) to this file instead of stdout.
    #[arg(long)]
    logfile: Option<PathBuf>,
    /// Serve one association, then exit (0 if its data verified and was complete). Without
    /// it the server serves associations concurrently until interrupted.
    #[arg(short = '1', long)]
    one_off: bool,
    /// Abort an association from which nothing arrived for this long (the client vanished
    /// or stalled), or whose echo the client did not take for this long; 0: never.
    #[arg(long, value_parser = parse_duration_or_zero, default_value = "60s")]
    idle_timeout: Duration,
    /// Send every received message back unchanged on the same stream (ordered), after
    /// verifying it; pairs with `perf client --verify-echo`.
    #[arg(long)]
    echo: bool,
    /// Offer LS-SCTP ("LS-SCTP: a bandwidth aggregation technique for SCTP", Abd El Al et
    /// al., 2004) in INIT-ACK (`on`, the default): a client that offers it
    /// too gets LS-DATA and per-path LS-SACKs; any other peer skips the offer.
    #[arg(long, default_value = "on")]
    load_sharing: String,
    /// Offer I-DATA and I-FORWARD-TSN (RFC 8260, `on`); used if the peer lists them too,
    /// else DATA. Interleaving needs --scheduler rr-packet, fc or wfq on the sender.
    #[arg(long, default_value = "off")]
    idata: String,
    /// Detection of spurious retransmissions for what the server sends (--echo): off,
    /// eifel-timestamp, eifel-rbit, duptsn, eifel+duptsn ("On Making SCTP Robust to Spurious Retransmissions", Ladha et al.,
    /// 2004). The server echoes
    /// a client's Eifel signals whatever this says.
    #[arg(long, default_value = "off")]
    spurious_detection: braid_net::SpuriousDetection,
    /// Congestion control of what the server sends (--echo): cubic (RFC 9438 with
    /// HyStart++, the default), cubic-linux, reno (RFC 9260), or the coupled ones.
    #[arg(long, default_value = "cubic")]
    cc: braid_net::CongestionControl,
    /// Pace what the server sends (--echo) at 2 (slow start) or 1.25 times cwnd/srtt.
    #[arg(long)]
    pacing: bool,
    /// Loss detection of what the server sends (--echo): auto (the default: rack on one
    /// path, dupthresh under CMT), dupthresh (three miss indications, RFC 9260) or rack
    /// (RACK-TLP, RFC 8985).
    #[arg(long, default_value = "auto")]
    loss: braid_net::LossDetection,
    /// Record every datagram sent and received to this pcap file.
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Write each association's decision trace (path states, windows, fast retransmits,
    /// T3, SACK paths, scheduler picks) as JSON lines into DIR/assoc-ID.jsonl.
    #[arg(long, value_name = "DIR")]
    trace: Option<PathBuf>,
    /// Write the same decisions as qlog (JSON-SEQ, for qvis) into DIR/assoc-ID.sqlog.
    #[arg(long, value_name = "DIR")]
    qlog: Option<PathBuf>,
}

#[derive(Args)]
pub(crate) struct ClientArgs {
    /// Local address to bind, `ADDR` or `ADDR:PORT` (repeatable: one socket per address,
    /// the paths of a multi-homed association; no port or port 0: chosen by the OS).
    /// Default: the address the routing table picks for the server.
    #[arg(short = 'B', long, value_parser = parse_bind)]
    bind: Vec<BindSpec>,
    /// The server: a host name (v4 or v6, each resolved address tried in turn), or
    /// addresses, `ADDR` or `ADDR:PORT` (repeatable: the peer's addresses of a
    /// multi-homed association). Without a port, --udp-port's.
    #[arg(
        short = 'c',
        long,
        visible_alias = "client",
        required = true,
        value_name = "HOST"
    )]
    connect: Vec<String>,
    /// The server's UDP port where --connect gives none (9899: SCTP over UDP's, RFC 6951).
    #[arg(short = 'p', long, default_value_t = 9899)]
    udp_port: u16,
    /// The server's SCTP port (also the local one unless --local-port).
    #[arg(long, default_value_t = 5001)]
    port: u16,
    /// Local SCTP port (default: an ephemeral one, 49152-65535, from the process id). Two
    /// clients on one host that talk to the same server at once need different ones: the
    /// server tells associations apart by the peer's address and SCTP port (RFC 9260
    /// §1.5.1), as TCP picks an ephemeral source port.
    #[arg(long)]
    local_port: Option<u16>,
    /// Send for this long (e.g. 10s, 500ms, 1m, or seconds); default 10s unless --bytes.
    #[arg(short = 't', long, value_parser = parse_duration, conflicts_with = "bytes")]
    time: Option<Duration>,
    /// Send this many bytes (e.g. 1GiB, 20MiB, 500MB, 1000000).
    #[arg(short = 'n', long, value_parser = parse_size)]
    bytes: Option<u64>,
    /// Message size in bytes (20..=1048576; the interop peers take up to 65536, except
    /// dcsctp-peer as a receiver, which takes up to 1 MiB). With --interactive: the bulk
    /// messages' size.
    #[arg(short = 'l', long, visible_alias = "length", default_value_t = 1452,
          value_parser = clap::value_parser!(u32).range(20..=1_048_576))]
    msg_size: u32,
    /// Parallel associations, each with its own endpoint (SCTP and UDP port), as iperf3's
    /// parallel streams.
    #[arg(short = 'P', long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=128))]
    parallel: u16,
    /// Reverse: the server sends (the same options: time, bytes, sizes, streams, rate) and
    /// the client verifies what arrives.
    #[arg(short = 'R', long, conflicts_with_all = ["bidir", "verify_echo", "interactive"])]
    reverse: bool,
    /// Both send at once (the server as the client does).
    #[arg(long, conflicts_with_all = ["verify_echo", "interactive"])]
    bidir: bool,
    /// Target rate per association in bits per second (e.g. 100M, 1.5G, 500k; 0: as fast
    /// as the association goes): messages are handed to the association no faster.
    #[arg(short = 'b', long, value_parser = parse_rate)]
    bitrate: Option<f64>,
    /// Seconds between interval lines (0: none); JSON output lists the intervals too.
    #[arg(short = 'i', long, value_parser = parse_duration_or_zero, default_value = "1")]
    interval: Duration,
    /// Append the output (interval lines and the summary) to this file instead of stdout.
    #[arg(long)]
    logfile: Option<PathBuf>,
    /// Ask the server for its report of each association and print it with the summary.
    #[arg(long)]
    get_server_output: bool,
    /// Every message carries the sender's clock (CLOCK_REALTIME) in its first payload
    /// bytes; the receiver reports each stream's one-way delay (meaningful where the clocks
    /// are synchronised, e.g. one host, namespaces included) and jitter (RFC 3550 §6.4.1,
    /// which needs no synchronised clocks). braid perf at both ends only (FORMAT.md);
    /// messages of 28 bytes at least.
    #[arg(long)]
    one_way_delay: bool,
    /// Streams used, round-robin.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..))]
    streams: u16,
    /// Send every message unordered (U bit).
    #[arg(long)]
    unordered: bool,
    /// Stream scheduler: fcfs, rr (round-robin per message, the default), rr-packet,
    /// priority, fc (fair capacity), wfq, fixed (stream i on path i mod paths), adaptive.
    #[arg(long, default_value = "rr")]
    scheduler: SchedulerKind,
    /// Concurrent multipath transfer over every path (`on`) or the primary path only
    /// (`off`). Paths come from several --bind and the peer's addresses.
    #[arg(long, default_value = "off")]
    cmt: String,
    /// Offer LS-SCTP ("LS-SCTP: a bandwidth aggregation technique for SCTP", Abd El Al et
    /// al., 2004: per-path sequence numbers, cwnd/RTT path assignment,
    /// copies probing a timed-out path) in INIT (`on`); used if the server offers it too,
    /// else the association runs as --cmt says.
    #[arg(long, default_value = "off")]
    load_sharing: String,
    /// Offer I-DATA and I-FORWARD-TSN (RFC 8260, `on`); used if the peer lists them too,
    /// else DATA. Interleaving needs --scheduler rr-packet, fc or wfq on the sender.
    #[arg(long, default_value = "off")]
    idata: String,
    /// Detection of spurious retransmissions ("On Making SCTP Robust to Spurious
    /// Retransmissions", Ladha et al., 2004): off, eifel-timestamp (a
    /// TIMESTAMP chunk in every packet), eifel-rbit (a retransmit bit in DATA and SACK),
    /// duptsn (duplicate-TSN reports, RFC 3708), eifel+duptsn. Eifel needs a peer that
    /// offers Eifel-Supported (braid does); otherwise DupTSN runs.
    #[arg(long, default_value = "off")]
    spurious_detection: braid_net::SpuriousDetection,
    /// Congestion control per path: cubic (RFC 9438 with HyStart++, the default),
    /// cubic-linux (the same as Linux runs it: the Reno-friendly α never becomes 1, the
    /// curve aimed one minimum RTT ahead), reno (RFC 9260), or the coupled cmt-rpv1,
    /// cmt-rpv2, lia.
    #[arg(
        short = 'C',
        long,
        visible_alias = "congestion",
        default_value = "cubic"
    )]
    cc: braid_net::CongestionControl,
    /// Pace each path's new DATA at 2 (slow start) or 1.25 times cwnd/srtt.
    #[arg(long)]
    pacing: bool,
    /// Under CMT: the longest run of packets of new data a path sends at once (1: packet
    /// by packet, the default; 32: runs that keep SACKs short, see docs/long-fat.md).
    #[arg(long, default_value_t = 1)]
    send_run: u16,
    /// Loss detection: auto (the default: rack while one path carries the data, dupthresh
    /// under CMT), dupthresh (three miss indications, RFC 9260) or rack (RACK-TLP, RFC 8985:
    /// time-based detection and tail loss probes).
    #[arg(long, default_value = "auto")]
    loss: braid_net::LossDetection,
    /// Packetization Layer Path MTU Discovery (RFC 8899): each path starts at 1200 bytes
    /// and probes up to 1500; the JSON output reports each path's `pmtu`.
    #[arg(long)]
    plpmtud: bool,
    /// Print one JSON object at the end instead of text: the summary, the test's start,
    /// every interval and iperf3's `end` sums.
    #[arg(short = 'J', long)]
    json: bool,
    /// The server echoes (`perf server --echo`): verify every echoed message byte for byte
    /// and shut down only once all of them came back.
    #[arg(long)]
    verify_echo: bool,
    /// Record every datagram sent and received to this pcap file.
    #[arg(long)]
    pcap: Option<PathBuf>,
    /// Write each association's decision trace (path states, windows, fast retransmits,
    /// T3, SACK paths, scheduler picks) as JSON lines into DIR/assoc-ID.jsonl.
    #[arg(long, value_name = "DIR")]
    trace: Option<PathBuf>,
    /// Write the same decisions as qlog (JSON-SEQ, for qvis) into DIR/assoc-ID.sqlog.
    #[arg(long, value_name = "DIR")]
    qlog: Option<PathBuf>,
    /// Interactive workload `SIZE@RATE` (e.g. `100@20`), with --time: stream 0 sends bulk
    /// messages of --msg-size back to back (keeping at most 3 MiB unacknowledged), stream 1
    /// SIZE-byte messages at RATE per second. Two streams; --streams is ignored.
    #[arg(long, value_parser = parse_interactive, requires = "time",
          conflicts_with_all = ["bytes", "verify_echo", "unordered"])]
    interactive: Option<Interactive>,
    /// A flow of its own (repeatable, NetPerfMeter style): `SIZE@RATE` sends SIZE-byte
    /// messages at RATE per second, `SIZE@max` as fast as the association takes them;
    /// flow i uses stream i, all for --time. E.g. `--flow 1452@max --flow 200@50
    /// --flow 64KiB@2`; with --one-way-delay the receiver reports each flow's delay.
    #[arg(long = "flow", value_parser = parse_flow,
          conflicts_with_all = ["bytes", "verify_echo", "interactive", "reverse", "streams"])]
    flows: Vec<Flow>,
    /// With --interactive: write one line per stream-1 message, `stream seq t_call_ns
    /// t_accepted_ns` (CLOCK_REALTIME, ns since the Unix epoch: before `send` and when it
    /// returned), to this file.
    #[arg(long, requires = "interactive")]
    timing_log: Option<PathBuf>,
    /// Leave the first part of the transfer out of `omit_goodput_mbps` (iperf3's --omit):
    /// the bytes acknowledged after it, over the sending time after it (e.g. 5s).
    #[arg(short = 'O', long, value_parser = parse_duration)]
    omit: Option<Duration>,
    /// Fix the send and receive buffers at this size (no autotuning), as a simulator
    /// scenario's `buffer` does (e.g. 64KiB; iperf3's -w).
    #[arg(short = 'w', long, visible_alias = "window", value_parser = parse_size)]
    buffer: Option<u64>,
}

/// One `--flow SIZE@RATE`: messages of `size` bytes, `rate` per second (`None`: as fast as
/// the association takes them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Flow {
    size: usize,
    rate: Option<f64>,
}

/// Parses `SIZE@RATE` or `SIZE@max` (SIZE 20..=1048576, units as `--bytes`).
fn parse_flow(s: &str) -> Result<Flow, String> {
    let (size, rate) = s
        .split_once('@')
        .ok_or_else(|| format!("{s:?}: expected SIZE@RATE or SIZE@max, e.g. 200@50"))?;
    let size = usize::try_from(parse_size(size)?).map_err(|e| e.to_string())?;
    if !(HEADER..=MAX_MSG).contains(&size) {
        return Err(format!("{s:?}: SIZE must be in {HEADER}..={MAX_MSG}"));
    }
    if rate.trim() == "max" {
        return Ok(Flow { size, rate: None });
    }
    let rate: f64 = rate
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: bad RATE (messages per second, or max)"))?;
    if !(rate.is_finite() && rate > 0.0 && rate <= 1_000_000.0) {
        return Err(format!("{s:?}: RATE must be in (0, 1000000] per second"));
    }
    Ok(Flow {
        size,
        rate: Some(rate),
    })
}

/// Sends flow `stream` of a `--flow` run until `end` (its last message carries LAST):
/// paced flows at their rate, the others back to back. Returns (messages, bytes).
async fn send_flow(
    assoc: Arc<Association>,
    (stream, nstreams): (u16, u16),
    flow: Flow,
    (start, end): (Instant, Instant),
    flags: u8,
    sent: Arc<AtomicU64>,
) -> Result<(u64, u64), String> {
    let pattern = Pattern::new();
    let opts = SendOptions {
        ppid: PPID,
        ..Default::default()
    };
    let total = flow.rate.map(|r| {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "positive, bounded by --time and RATE"
        )]
        let n = ((end - start).as_secs_f64() * r).ceil().max(1.0) as u64;
        n
    });
    let (mut k, mut bytes) = (0u64, 0u64);
    loop {
        let last = match (flow.rate, total) {
            (Some(r), Some(n)) => {
                tokio::time::sleep_until(start + Duration::from_secs_f64(k as f64 / r)).await;
                k + 1 == n
            }
            _ => {
                // As the interactive workload's bulk stream: below the high-water mark, so a
                // paced flow's message finds room in the core instead of queueing behind
                // this flow's in the handle.
                while sent.load(Ordering::Relaxed) + flow.size as u64
                    > assoc.stats().bytes_acked + BULK_HIGH_WATER
                {
                    if let Some(r) = assoc.close_reason() {
                        return Err(format!("association closed: {r}"));
                    }
                    tokio::time::sleep(BULK_POLL).await;
                }
                now() >= end
            }
        };
        let f = flags | if last { FLAG_LAST } else { 0 };
        let m = pattern.message(stream, k, flow.size, f, nstreams);
        assoc
            .send(stream, m, opts)
            .await
            .map_err(|e| format!("send (flow {stream}, seq {k}): {e}"))?;
        sent.fetch_add(flow.size as u64, Ordering::Relaxed);
        bytes += flow.size as u64;
        k += 1;
        if last {
            return Ok((k, bytes));
        }
    }
}

/// A `--flow` run: every flow in a task of its own until `end` or a stop request.
async fn send_flows(
    assoc: &Arc<Association>,
    flows: &[Flow],
    (start, end): (Instant, Instant),
    flags: u8,
    stop: &mut Stop,
    sent: Arc<AtomicU64>,
) -> (Sent, Vec<(u64, u64)>) {
    #[expect(
        clippy::cast_possible_truncation,
        reason = "flows fit the streams, checked"
    )]
    let n = flows.len() as u16;
    let mut tasks: Vec<_> = (flows.iter().enumerate())
        .map(|(i, f)| {
            #[expect(clippy::cast_possible_truncation, reason = "i < n")]
            let stream = i as u16;
            tokio::spawn(send_flow(
                assoc.clone(),
                (stream, n),
                *f,
                (start, end),
                flags,
                sent.clone(),
            ))
        })
        .collect();
    let mut out = Sent {
        messages: 0,
        bytes: 0,
        result: Ok(()),
        stopped: false,
    };
    let mut per_flow = Vec::new();
    for t in &mut tasks {
        let r = tokio::select! {
            r = &mut *t => r,
            () = stopped(stop) => {
                out.stopped = true;
                break;
            }
        };
        match r {
            Ok(Ok((m, b))) => {
                out.messages += m;
                out.bytes += b;
                per_flow.push((m, b));
            }
            Ok(Err(e)) => {
                out.result = out.result.and(Err(e));
                per_flow.push((0, 0));
            }
            Err(e) => out.result = out.result.and(Err(format!("flow task: {e}"))),
        }
    }
    for t in tasks {
        t.abort();
    }
    if out.stopped {
        out.bytes = sent.load(Ordering::Relaxed);
    }
    (out, per_flow)
}

/// `--interactive SIZE@RATE`: small messages of `size` bytes, `rate` per second.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Interactive {
    size: usize,
    rate: f64,
}

/// Parses `SIZE@RATE`: a message size (20..=65536, units as `--bytes`) and messages per
/// second.
fn parse_interactive(s: &str) -> Result<Interactive, String> {
    let (size, rate) = s
        .split_once('@')
        .ok_or_else(|| format!("{s:?}: expected SIZE@RATE, e.g. 100@20"))?;
    let size = usize::try_from(parse_size(size)?).map_err(|e| e.to_string())?;
    if !(HEADER..=65536).contains(&size) {
        return Err(format!("{s:?}: SIZE must be in {HEADER}..=65536"));
    }
    let rate: f64 = rate
        .trim()
        .parse()
        .map_err(|_| format!("{s:?}: bad RATE (messages per second)"))?;
    if !(rate.is_finite() && rate > 0.0 && rate <= 100_000.0) {
        return Err(format!("{s:?}: RATE must be in (0, 100000] per second"));
    }
    Ok(Interactive { size, rate })
}

/// A client's own SCTP port when none is given: in the dynamic range (RFC 6335 §6), from
/// the process id, so concurrent clients on one host, and a client restarted after a kill,
/// do not present the port of an association the server still holds.
fn ephemeral_sctp_port() -> u16 {
    49_152 + (std::process::id() % 16_384) as u16
}

/// A `--bind` address: an IP with or without a UDP port.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BindSpec {
    ip: std::net::IpAddr,
    port: Option<u16>,
}

impl BindSpec {
    /// The socket address, with `default_port` where none was given.
    fn addr(self, default_port: u16) -> SocketAddr {
        SocketAddr::new(self.ip, self.port.unwrap_or(default_port))
    }
}

/// Parses `127.0.0.1`, `127.0.0.1:9899`, `::1`, `[::1]` or `[::1]:9899`.
fn parse_bind(s: &str) -> Result<BindSpec, String> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(BindSpec {
            ip: a.ip(),
            port: Some(a.port()),
        });
    }
    let ip = s.trim_start_matches('[').trim_end_matches(']');
    ip.parse().map(|ip| BindSpec { ip, port: None }).map_err(|_| {
        format!("{s:?}: expected an address (127.0.0.1, ::1) or address:port (127.0.0.1:9899, [::1]:9899)")
    })
}

/// Parses a rate in bits per second as iperf3's `-b` does: `100M`, `1.5G`, `500k`, `1000`
/// (k, M, G, T: powers of 1000); `0` is no limit.
fn parse_rate(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let (num, mult) = match t.chars().last().map(|c| c.to_ascii_lowercase()) {
        Some('k') => (&t[..t.len() - 1], 1e3),
        Some('m') => (&t[..t.len() - 1], 1e6),
        Some('g') => (&t[..t.len() - 1], 1e9),
        Some('t') => (&t[..t.len() - 1], 1e12),
        _ => (t, 1.0),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("bad rate {s:?} (bits per second, e.g. 100M, 1.5G, 500k)"))?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("rate must be zero or positive: {s:?}"));
    }
    // Below one message per minute a run would end before its first message.
    if v > 0.0 && v * mult < 1000.0 {
        return Err(format!("rate {s:?} below 1 kbit/s"));
    }
    Ok(v * mult)
}

/// Where the output goes with `--logfile` (appended, as iperf3 does).
static LOGFILE: std::sync::OnceLock<std::sync::Mutex<std::fs::File>> = std::sync::OnceLock::new();

/// Sends the output (interval lines, summaries) to `path` from now on.
fn set_logfile(path: &Path) -> Result<(), Error> {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| format!("--logfile {}: {e}", path.display()))?;
    LOGFILE
        .set(std::sync::Mutex::new(f))
        .map_err(|_| "--logfile given twice".into())
}

/// One line of output: to the `--logfile` if there is one, else stdout (flushed, so a
/// script reading it sees each line as it comes).
fn emit(s: &str) {
    if let Some(f) = LOGFILE.get() {
        if let Ok(mut f) = f.lock() {
            let _ = writeln!(f, "{s}");
        }
        return;
    }
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{s}");
    let _ = o.flush();
}

/// Parses `10s`, `500ms`, `2m`, `1.5s` or a plain number of seconds.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, mult) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else if let Some(n) = s.strip_suffix('h') {
        (n, 3600.0)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("bad duration {s:?} (e.g. 10s, 500ms, 2m)"))?;
    if !(v.is_finite() && v > 0.0) {
        return Err(format!("duration must be positive: {s:?}"));
    }
    Duration::try_from_secs_f64(v * mult).map_err(|_| format!("duration too long: {s:?}"))
}

/// [`parse_duration`], or `0` for "never".
pub(crate) fn parse_duration_or_zero(s: &str) -> Result<Duration, String> {
    if s.trim().trim_end_matches(|c: char| c.is_ascii_alphabetic()) == "0" {
        return Ok(Duration::ZERO);
    }
    parse_duration(s)
}

/// Parses `1GiB`, `20MiB`, `500MB`, `64K`, `1000`: SI suffixes (k, M, G, T, optionally
/// with B) are powers of 1000, binary ones (KiB, MiB, GiB, TiB) powers of 1024.
pub(crate) fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" => 1e3,
        "m" | "mb" => 1e6,
        "g" | "gb" => 1e9,
        "t" | "tb" => 1e12,
        "ki" | "kib" => 1024.0,
        "mi" | "mib" => 1024.0 * 1024.0,
        "gi" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "ti" | "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        u => return Err(format!("unknown size unit {u:?} (e.g. 1GiB, 20MiB, 500MB)")),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("bad size {s:?} (e.g. 1GiB, 20MiB, 500MB)"))?;
    let n = (v * mult).round();
    if !(1.0..1.8e19).contains(&n) {
        return Err(format!("size out of range: {s:?}"));
    }
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "checked range"
    )]
    Ok(n as u64)
}

fn now() -> Instant {
    Instant::now()
}

pub(crate) fn run(cmd: PerfCommand) -> Result<(), Error> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    match cmd {
        PerfCommand::Server(a) => rt.block_on(server(a)),
        PerfCommand::Client(a) => rt.block_on(client(a)),
    }
}

/// The payload pattern: `BASE[j] = j mod 251`; message payloads are slices of it.
#[derive(Clone)]
struct Pattern(Bytes);

/// The one pattern table of the process (about 1 MiB): every association, sender or
/// verifier, slices it (a table per association held 1 MiB each, 1.1 GiB for 1,024 idle
/// associations of a server).
static PATTERN: std::sync::LazyLock<Pattern> = std::sync::LazyLock::new(|| {
    #[expect(clippy::cast_possible_truncation, reason = "mod 251")]
    let v: Vec<u8> = (0..251 + MAX_MSG).map(|j| (j % 251) as u8).collect();
    Pattern(Bytes::from(v))
});

impl Pattern {
    /// The process's pattern (shared, not copied).
    fn new() -> Self {
        PATTERN.clone()
    }

    fn payload(&self, stream: u16, seq: u64, n: usize) -> &[u8] {
        let start = ((13 * u128::from(seq) + 7 * u128::from(stream)) % 251) as usize;
        &self.0[start..start + n]
    }

    /// One message of the format, `len` bytes (>= 20) long.
    fn message(&self, stream: u16, seq: u64, len: usize, flags: u8, nstreams: u16) -> Bytes {
        let mut b = BytesMut::with_capacity(len);
        b.put_u16(stream);
        b.put_u8(flags);
        b.put_u8(1);
        #[expect(clippy::cast_possible_truncation, reason = "len <= MAX_MSG")]
        b.put_u32(len as u32);
        b.put_u64(seq);
        b.put_u16(nstreams);
        b.put_u16(0);
        b.put_slice(self.payload(stream, seq, len - HEADER));
        if flags & FLAG_TIMESTAMP != 0 && len >= HEADER + STAMP {
            #[expect(
                clippy::cast_possible_truncation,
                reason = "ns since 1970 fit u64 until 2554"
            )]
            b[HEADER..HEADER + STAMP].copy_from_slice(&(wall_ns() as u64).to_be_bytes());
        }
        b.freeze()
    }
}

/// One stream's one-way delays (receive time minus the sender's timestamp, both
/// CLOCK_REALTIME: meaningful where the clocks are synchronised, such as one host) and
/// interarrival jitter as RTP computes it (RFC 3550 §6.4.1), which needs no synchronised
/// clocks.
#[derive(Default, Clone)]
struct DelayStats {
    count: u64,
    sum_ns: i128,
    min_ns: i64,
    max_ns: i64,
    /// The previous message's transit time.
    last_ns: Option<i64>,
    /// RFC 3550 §6.4.1: J += (|D| - J) / 16, in ns.
    jitter_ns: f64,
}

impl DelayStats {
    fn add(&mut self, transit_ns: i64) {
        if self.count == 0 {
            (self.min_ns, self.max_ns) = (transit_ns, transit_ns);
        }
        self.min_ns = self.min_ns.min(transit_ns);
        self.max_ns = self.max_ns.max(transit_ns);
        self.sum_ns += i128::from(transit_ns);
        self.count += 1;
        if let Some(l) = self.last_ns {
            let d = (transit_ns.saturating_sub(l)).unsigned_abs() as f64;
            self.jitter_ns += (d - self.jitter_ns) / 16.0;
        }
        self.last_ns = Some(transit_ns);
    }

    fn json(&self, stream: usize) -> serde_json::Value {
        serde_json::json!({
            "stream": stream,
            "messages": self.count,
            "mean_ms": self.sum_ns as f64 / self.count.max(1) as f64 / 1e6,
            "min_ms": self.min_ns as f64 / 1e6,
            "max_ms": self.max_ns as f64 / 1e6,
            "jitter_ms": self.jitter_ns / 1e6,
        })
    }
}

/// Per-stream receive state.
#[derive(Default, Clone)]
struct StreamRx {
    /// Every seq below has been received.
    next: u64,
    /// Received seqs above `next` (unordered delivery).
    ahead: BTreeSet<u64>,
    /// Seq of the LAST message, once received.
    last: Option<u64>,
}

/// Unordered messages held ahead of missing ones (all streams) before the verifier gives
/// up: more than a receive window holds (2 MiB of 20-byte messages is ~105k), so only a
/// client that never sends the missing message (or lies about seqs) reaches it, and
/// memory stays bounded.
const MAX_AHEAD: usize = 1 << 18;

/// Checks received messages against the format.
struct Verifier {
    pattern: Pattern,
    streams: Vec<StreamRx>,
    nstreams: Option<u16>,
    /// Inbound streams of the association: a header that claims more cannot be complete.
    max_streams: u16,
    /// Messages in every stream's `ahead`.
    ahead: usize,
    bytes: u64,
    messages: u64,
    /// Per stream, of the timestamped messages.
    delays: Vec<DelayStats>,
}

impl Verifier {
    fn new(max_streams: u16) -> Self {
        Self {
            pattern: Pattern::new(),
            streams: Vec::new(),
            nstreams: None,
            max_streams,
            ahead: 0,
            bytes: 0,
            messages: 0,
            delays: Vec::new(),
        }
    }

    /// Each stream's one-way delay and jitter, for the streams that carried timestamps.
    fn delays_json(&self) -> Vec<serde_json::Value> {
        (self.delays.iter().enumerate())
            .filter(|(_, d)| d.count > 0)
            .map(|(i, d)| d.json(i))
            .collect()
    }

    fn check(&mut self, stream: u16, data: &[u8]) -> Result<(), String> {
        let n = self.messages;
        let err = |m: String| format!("message #{n} on stream {stream}: {m}");
        if data.len() < HEADER {
            return Err(err(format!(
                "{} bytes, shorter than the header",
                data.len()
            )));
        }
        let hstream = u16::from_be_bytes([data[0], data[1]]);
        let flags = data[2];
        let version = data[3];
        let length = u32::from_be_bytes([data[4], data[5], data[6], data[7]]) as usize;
        let seq = u64::from_be_bytes(data[8..16].try_into().map_err(|_| err("header".into()))?);
        let nstreams = u16::from_be_bytes([data[16], data[17]]);
        let reserved = u16::from_be_bytes([data[18], data[19]]);
        if version != 1
            || reserved != 0
            || flags & !(FLAG_LAST | FLAG_UNORDERED | FLAG_TIMESTAMP) != 0
        {
            return Err(err(format!(
                "bad header: version {version}, flags {flags:#x}, reserved {reserved}"
            )));
        }
        if hstream != stream {
            return Err(err(format!("header says stream {hstream}")));
        }
        if length != data.len() {
            return Err(err(format!(
                "header says {length} bytes, got {}",
                data.len()
            )));
        }
        match self.nstreams {
            None => {
                if nstreams == 0 {
                    return Err(err("nstreams is 0".into()));
                }
                if nstreams > self.max_streams {
                    return Err(err(format!(
                        "nstreams {nstreams}, but the association has {} inbound streams",
                        self.max_streams
                    )));
                }
                self.nstreams = Some(nstreams);
                self.streams = vec![StreamRx::default(); usize::from(nstreams)];
            }
            Some(k) if k != nstreams => {
                return Err(err(format!(
                    "nstreams {nstreams}, earlier messages said {k}"
                )));
            }
            Some(_) => {}
        }
        let Some(st) = self.streams.get_mut(usize::from(stream)) else {
            return Err(err(format!("stream out of range (nstreams {nstreams})")));
        };
        // A timestamped payload keeps the pattern after its first 8 bytes.
        let from = if flags & FLAG_TIMESTAMP != 0 {
            if data.len() < HEADER + STAMP {
                return Err(err(format!("timestamped, but {} bytes long", data.len())));
            }
            HEADER + STAMP
        } else {
            HEADER
        };
        let expect = &self.pattern.payload(stream, seq, data.len() - HEADER)[from - HEADER..];
        if data[from..] != *expect {
            let off = data[from..]
                .iter()
                .zip(expect)
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            return Err(err(format!(
                "seq {seq}: payload mismatch at byte {}",
                from + off
            )));
        }
        if from > HEADER {
            let sent = u64::from_be_bytes(
                data[HEADER..from]
                    .try_into()
                    .map_err(|_| err("stamp".into()))?,
            );
            #[expect(
                clippy::cast_possible_truncation,
                reason = "ns since 1970 fit u64 until 2554"
            )]
            let transit = (wall_ns() as u64).wrapping_sub(sent).cast_signed();
            let i = usize::from(stream);
            if self.delays.len() <= i {
                self.delays.resize(i + 1, DelayStats::default());
            }
            self.delays[i].add(transit);
        }
        if flags & FLAG_UNORDERED == 0 {
            if seq != st.next {
                return Err(err(format!("seq {seq}, expected {} (ordered)", st.next)));
            }
            st.next += 1;
        } else if seq < st.next || st.ahead.contains(&seq) {
            return Err(err(format!("seq {seq} received twice")));
        } else if self.ahead >= MAX_AHEAD {
            return Err(err(format!(
                "{MAX_AHEAD} messages received ahead of missing ones (stream {stream} \
                 misses seq {})",
                st.next
            )));
        } else {
            st.ahead.insert(seq);
            self.ahead += 1;
            while st.ahead.remove(&st.next) {
                st.next += 1;
                self.ahead -= 1;
            }
        }
        if flags & FLAG_LAST != 0 {
            if st.last.is_some() {
                return Err(err("second LAST message".into()));
            }
            st.last = Some(seq);
        }
        if let Some(l) = st.last
            && seq > l
        {
            return Err(err(format!("seq {seq} after the LAST message (seq {l})")));
        }
        self.bytes += data.len() as u64;
        self.messages += 1;
        Ok(())
    }

    /// Every stream's LAST message and everything before it has arrived.
    fn is_complete(&self) -> bool {
        self.nstreams.is_some()
            && self
                .streams
                .iter()
                .all(|st| st.last.is_some_and(|l| st.next == l + 1))
    }

    fn complete(&self) -> Result<(), String> {
        if self.nstreams.is_none() {
            return Err("no data received".into());
        }
        for (s, st) in self.streams.iter().enumerate() {
            match st.last {
                None => return Err(format!("stream {s}: no LAST message")),
                Some(l) if st.next != l + 1 => {
                    return Err(format!(
                        "stream {s}: incomplete: seqs up to {} of 0..={l} received",
                        st.next
                    ));
                }
                Some(_) => {}
            }
        }
        Ok(())
    }
}

fn mbps(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 * 8.0 / secs / 1e6
    } else {
        0.0
    }
}

fn human_bytes(b: u64) -> String {
    let b = b as f64;
    if b >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} GBytes", b / (1024.0 * 1024.0 * 1024.0))
    } else if b >= 1024.0 * 1024.0 {
        format!("{:.1} MBytes", b / (1024.0 * 1024.0))
    } else {
        format!("{:.1} KBytes", b / 1024.0)
    }
}

fn human_rate(mbps: f64) -> String {
    if mbps >= 1000.0 {
        format!("{:.2} Gbits/sec", mbps / 1000.0)
    } else {
        format!("{mbps:.1} Mbits/sec")
    }
}

fn path_state(p: &PathInfo) -> String {
    format!("{:?}", p.state).to_ascii_lowercase()
}

fn srtt_ms(p: &PathInfo) -> f64 {
    p.srtt.map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

fn paths_json(paths: &[PathInfo]) -> serde_json::Value {
    paths
        .iter()
        .map(|p| {
            serde_json::json!({
                "local": p.local.to_string(),
                "remote": p.remote.to_string(),
                "bytes_sent": p.stats.bytes_sent,
                "packets_sent": p.stats.packets_sent,
                "bytes_received": p.stats.bytes_received,
                "packets_received": p.stats.packets_received,
                "retransmissions": p.stats.retransmissions,
                "srtt_ms": srtt_ms(p),
                "rto_ms": p.rto.as_secs_f64() * 1e3,
                "cwnd": p.cwnd,
                "ssthresh": p.ssthresh,
                "state": path_state(p),
                "primary": p.primary,
                // The SCTP packet limit is what the core keeps; "pmtu" adds nothing to it.
                "mtu": p.mtu,
                "pmtu_state": p.pmtu_state.map(|s| s.as_str()),
                // How long new data on the path waited, by what.
                "limited_ms": {
                    "cwnd": p.stats.limited.cwnd.as_secs_f64() * 1e3,
                    "peer_window": p.stats.limited.peer_window.as_secs_f64() * 1e3,
                    "send_buffer": p.stats.limited.send_buffer.as_secs_f64() * 1e3,
                    "application": p.stats.limited.application.as_secs_f64() * 1e3,
                    "share": p.stats.limited.share.as_secs_f64() * 1e3,
                },
            })
        })
        .collect()
}

/// What the handshake agreed, for the JSON output.
fn negotiated_json(n: &braid_net::Negotiated) -> serde_json::Value {
    serde_json::json!({
        "outbound_streams": n.outbound_streams,
        "inbound_streams": n.inbound_streams,
        "pr_sctp": n.pr_sctp,
        "nr_sack": n.nr_sack,
        "idata": n.idata,
        "load_sharing": n.load_sharing,
        "cmt": n.cmt,
        "eifel_timestamp": n.eifel_timestamp,
        "eifel_rbit": n.eifel_rbit,
        "spurious_detection": n.spurious_detection.to_string(),
    })
}

fn retransmissions(paths: &[PathInfo]) -> u64 {
    paths.iter().map(|p| p.stats.retransmissions).sum()
}

/// Where the per-second lines go: stdout for text output, stderr (on a terminal only) with
/// `--json`, so stdout stays one JSON object.
#[derive(Clone, Copy)]
enum Progress {
    Stdout,
    Stderr,
    Off,
}

impl Progress {
    fn new(json: bool) -> Self {
        match (json, std::io::stderr().is_terminal()) {
            (false, _) => Self::Stdout,
            (true, true) => Self::Stderr,
            (true, false) => Self::Off,
        }
    }

    fn line(self, s: &str) {
        match self {
            Self::Stdout => emit(s),
            Self::Stderr => eprintln!("{s}"),
            Self::Off => {}
        }
    }
}

/// Driver options: a pcap recording, a trace and a qlog directory if asked for.
fn net_config(
    pcap: Option<&Path>,
    trace: Option<&Path>,
    qlog: Option<&Path>,
) -> Result<NetConfig, Error> {
    let mut net = NetConfig::default();
    if let Some(p) = pcap {
        let f = std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?;
        net.pcap = Some(Box::new(std::io::BufWriter::new(f)));
    }
    if let Some(d) = trace {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        net.trace_dir = Some(d.to_path_buf());
    }
    if let Some(d) = qlog {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        net.qlog_dir = Some(d.to_path_buf());
    }
    Ok(net)
}

fn assoc_config(streams: u16) -> AssociationConfig {
    AssociationConfig {
        outbound_streams: streams.max(16),
        // The receive window stays below what the UDP socket buffer (4 MiB asked for,
        // kernel overhead per datagram included) holds, so a burst does not overflow it.
        send_buffer: 4 << 20,
        recv_buffer: 2 << 20,
        ..Default::default()
    }
}

/// `--buffer`: both buffers fixed at `size` (their autotuning bounds too).
fn fix_buffers(a: &mut AssociationConfig, size: Option<u64>) {
    if let Some(b) = size {
        let b = usize::try_from(b).unwrap_or(usize::MAX);
        a.send_buffer = b;
        a.recv_buffer = b;
        a.send_buffer_max = b;
        a.recv_buffer_max = b;
        a.max_message_size = a.max_message_size.min(b);
    }
}

/// `on` or `off` of a flag.
fn on_off(flag: &str, v: &str) -> Result<bool, Error> {
    match v {
        "on" => Ok(true),
        "off" => Ok(false),
        v => Err(format!("{flag} {v}: expected on or off").into()),
    }
}

/// How long the client sends when neither `--time` nor `--bytes` is given (iperf3's `-t`).
const DEFAULT_TIME: Duration = Duration::from_secs(10);

/// PPID of `braid perf`'s control messages (the test parameters, the server's report):
/// braid's own, so a message of the interop format (PPID 53) is never taken for one.
const PPID_CONTROL: u32 = 0x6272_6169;

/// What one side sends: message size, streams, for how long or how much, how fast.
#[derive(Clone, Debug)]
struct SendPlan {
    msg: usize,
    streams: u16,
    time: Option<Duration>,
    bytes: Option<u64>,
    unordered: bool,
    /// Target rate in bit/s (iperf3's `-b`); `None`: as fast as the association goes.
    bitrate: Option<f64>,
    /// Every message carries the sender's clock ([`FLAG_TIMESTAMP`]).
    timestamps: bool,
}

impl SendPlan {
    /// The number of messages of a `bytes` run (`None` for a timed one); refuses a byte
    /// count that cannot give every stream its LAST message.
    fn total_msgs(&self) -> Result<Option<u64>, String> {
        if self.timestamps && self.msg < HEADER + STAMP {
            return Err(format!(
                "--one-way-delay: messages of {} bytes have no room for the timestamp (28 at least)",
                self.msg
            ));
        }
        let Some(n) = self.bytes else { return Ok(None) };
        let c = n.div_ceil(self.msg as u64);
        if c < u64::from(self.streams) {
            return Err(format!(
                "--bytes {n} is {c} message(s) of {} bytes: fewer than --streams {}",
                self.msg, self.streams
            ));
        }
        Ok(Some(c))
    }
}

/// The test parameters a client sends the server (the first message, on stream 0, PPID
/// [`PPID_CONTROL`], one JSON object) when the server has more to do than verify: send
/// (`-R`, `--bidir`) or report back (`--get-server-output`). A plain run sends none, so
/// `perf client` still talks to any peer of the interop format.
#[derive(Clone, Debug, PartialEq)]
struct Params {
    /// The server sends (`-R`: the client does not).
    reverse: bool,
    /// Both send.
    bidir: bool,
    /// The server's report comes back as a control message before the shutdown.
    server_output: bool,
    /// What the server sends, if it sends.
    plan: SendPlan,
}

impl PartialEq for SendPlan {
    fn eq(&self, o: &Self) -> bool {
        (
            self.msg,
            self.streams,
            self.time,
            self.bytes,
            self.unordered,
            self.timestamps,
        ) == (o.msg, o.streams, o.time, o.bytes, o.unordered, o.timestamps)
            && self.bitrate.map(f64::to_bits) == o.bitrate.map(f64::to_bits)
    }
}

impl Params {
    fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "version": 1,
            "reverse": self.reverse,
            "bidir": self.bidir,
            "server_output": self.server_output,
            "msg_size": self.plan.msg,
            "streams": self.plan.streams,
            "time_ms": self.plan.time.map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX)),
            "bytes": self.plan.bytes,
            "unordered": self.plan.unordered,
            "bitrate": self.plan.bitrate,
            "timestamps": self.plan.timestamps,
        })
    }

    /// Parses and bounds a client's parameters (network input: a bad one is an error that
    /// fails this association, never the server).
    fn parse(data: &[u8]) -> Result<Self, String> {
        let v: serde_json::Value =
            serde_json::from_slice(data).map_err(|e| format!("bad test parameters: {e}"))?;
        let flag = |k: &str| v[k].as_bool().unwrap_or(false);
        if v["version"].as_u64() != Some(1) {
            return Err(format!(
                "test parameters of version {}, not 1",
                v["version"]
            ));
        }
        let msg = v["msg_size"]
            .as_u64()
            .and_then(|m| usize::try_from(m).ok())
            .filter(|m| (HEADER..=MAX_MSG).contains(m))
            .ok_or(format!(
                "msg_size {} outside {HEADER}..={MAX_MSG}",
                v["msg_size"]
            ))?;
        let streams = v["streams"]
            .as_u64()
            .and_then(|s| u16::try_from(s).ok())
            .filter(|s| *s >= 1)
            .ok_or(format!("streams {} outside 1..=65535", v["streams"]))?;
        let time = v["time_ms"].as_u64().map(Duration::from_millis);
        let bytes = v["bytes"].as_u64();
        if time.is_none() == bytes.is_none() {
            return Err("test parameters need exactly one of time_ms and bytes".into());
        }
        if time.is_some_and(|t| t.is_zero() || t > Duration::from_secs(86_400)) {
            return Err(format!("time_ms {} outside 1..=86400000", v["time_ms"]));
        }
        let bitrate = v["bitrate"].as_f64().filter(|b| *b > 0.0 && b.is_finite());
        let plan = SendPlan {
            msg,
            streams,
            time,
            bytes,
            unordered: flag("unordered"),
            bitrate,
            timestamps: flag("timestamps"),
        };
        plan.total_msgs()?;
        Ok(Self {
            reverse: flag("reverse"),
            bidir: flag("bidir"),
            server_output: flag("server_output"),
            plan,
        })
    }

    /// The server sends data.
    fn server_sends(&self) -> bool {
        self.reverse || self.bidir
    }
}

/// What a send loop did.
struct Sent {
    messages: u64,
    bytes: u64,
    result: Result<(), String>,
    stopped: bool,
}

/// Sends `plan` from `start` on: messages of the interop format round-robin over the
/// streams, for a time (then one round of LAST messages) or a number of bytes, at most at
/// the plan's bit rate. `handed` counts the bytes handed to `send` (the stall detector
/// reads it). The same loop sends for the client and, with `-R`/`--bidir`, the server.
async fn send_bulk(
    assoc: &Association,
    plan: &SendPlan,
    start: Instant,
    stop: &mut Stop,
    handed: &AtomicU64,
) -> Sent {
    let mut out = Sent {
        messages: 0,
        bytes: 0,
        result: Ok(()),
        stopped: false,
    };
    let total_msgs = match plan.total_msgs() {
        Ok(t) => t,
        Err(e) => {
            out.result = Err(e);
            return out;
        }
    };
    let pattern = Pattern::new();
    let opts = SendOptions {
        ppid: PPID,
        unordered: plan.unordered,
        ..Default::default()
    };
    let flags = if plan.unordered { FLAG_UNORDERED } else { 0 }
        | if plan.timestamps { FLAG_TIMESTAMP } else { 0 };
    let deadline = plan.time.map(|t| start + t);
    let k = plan.streams;
    let kk = u64::from(k);
    // In a timed run `end` becomes the number of messages once the time is up (rounded so
    // that every stream ends with a LAST message).
    let mut end = total_msgs;
    let mut j: u64 = 0;
    loop {
        if end.is_none()
            && let Some(d) = deadline
            && now() >= d
        {
            end = Some(j.div_ceil(kk) * kk + kk);
        }
        if let Some(e) = end
            && j >= e
        {
            break;
        }
        #[expect(clippy::cast_possible_truncation, reason = "j mod k < k")]
        let stream = (j % kk) as u16;
        let mut len = plan.msg;
        if let (Some(c), Some(n)) = (total_msgs, plan.bytes)
            && j == c - 1
        {
            len = usize::try_from(n - (c - 1) * plan.msg as u64)
                .unwrap_or(plan.msg)
                .max(HEADER);
        }
        // -b: the next message waits until the bytes so far fit the rate (iperf3's pacing
        // of the application's writes, not of packets).
        if let Some(rate) = plan.bitrate {
            let due = start + Duration::from_secs_f64(out.bytes as f64 * 8.0 / rate);
            if due > now() {
                tokio::select! {
                    biased;
                    () = stopped(stop) => {
                        out.stopped = true;
                        break;
                    }
                    // Look at the clock again: the time may be up by now.
                    () = tokio::time::sleep_until(due) => continue,
                }
            }
        }
        let last = end.is_some_and(|e| j + kk >= e);
        let f = flags | if last { FLAG_LAST } else { 0 };
        let m = pattern.message(stream, j / kk, len, f, k);
        // The stop request is polled only while `send` waits (biased): no cost per message.
        let r = tokio::select! {
            biased;
            r = assoc.send(stream, m, opts) => r,
            () = stopped(stop) => {
                out.stopped = true;
                break;
            }
        };
        if let Err(e) = r {
            out.result = Err(format!("send: {e}"));
            break;
        }
        out.bytes += len as u64;
        handed.store(out.bytes, Ordering::Relaxed);
        j += 1;
    }
    out.messages = j;
    out
}

/// A stop request (SIGINT or SIGTERM for the process, or the server's own stop): once set
/// it stays set.
type Stop = tokio::sync::watch::Receiver<bool>;

/// Resolves once `stop` is set (never, if nobody can set it any more).
async fn stopped(stop: &mut Stop) {
    if stop.wait_for(|s| *s).await.is_err() {
        std::future::pending::<()>().await;
    }
}

/// SIGINT and SIGTERM as one stop request. Registered at once (unlike
/// `tokio::signal::ctrl_c()`, which registers on its first poll), so a signal before the
/// first poll still ends in a summary instead of killing the process.
fn stop_on_signals() -> Result<Stop, Error> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut int =
        signal(SignalKind::interrupt()).map_err(|e| format!("cannot handle SIGINT: {e}"))?;
    let mut term =
        signal(SignalKind::terminate()).map_err(|e| format!("cannot handle SIGTERM: {e}"))?;
    let (tx, rx) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        tokio::select! {
            _ = int.recv() => {}
            _ = term.recv() => {}
        }
        let _ = tx.send(true);
        // The sender stays alive: the request is never mistaken for a closed channel.
        std::future::pending::<()>().await;
    });
    Ok(rx)
}

/// What the receiving side of a client association counted so far (read by the interval
/// reports while it runs).
#[derive(Default)]
struct RecvCount {
    bytes: AtomicU64,
    messages: AtomicU64,
    /// Nanoseconds from the start of the test to the latest data message.
    last_ns: AtomicU64,
    /// Per stream one-way delay and jitter of timestamped data, once receiving ended.
    delays: std::sync::Mutex<Vec<serde_json::Value>>,
}

/// What a client association waits for from the server.
#[derive(Clone, Copy)]
struct Expect {
    /// Data of the format (the echo, or the server's data with `-R`/`--bidir`).
    data: bool,
    /// The server's report (`--get-server-output`).
    output: bool,
}

/// Receives what the server sends a client association: verifies its data and takes its
/// report; returns (the report) once everything expected came.
async fn receive(
    a: Arc<Association>,
    inbound: u16,
    expect: Expect,
    count: Arc<RecvCount>,
    start: Instant,
) -> Result<Option<serde_json::Value>, String> {
    let mut v = Verifier::new(inbound);
    let r = receive_into(&a, &mut v, expect, &count, start).await;
    if let Ok(mut d) = count.delays.lock() {
        *d = v.delays_json();
    }
    r
}

/// [`receive`]'s loop, verifying into `v`.
async fn receive_into(
    a: &Association,
    v: &mut Verifier,
    expect: Expect,
    count: &RecvCount,
    start: Instant,
) -> Result<Option<serde_json::Value>, String> {
    let mut output = None;
    let done = |v: &Verifier, o: &Option<serde_json::Value>| {
        (!expect.data || v.is_complete()) && (!expect.output || o.is_some())
    };
    while let Ok(Some(m)) = a.recv().await {
        if m.ppid == PPID_CONTROL {
            let o = serde_json::from_slice(&m.data)
                .map_err(|e| format!("the server's report is not JSON: {e}"))?;
            output = Some(o);
        } else if !expect.data {
            a.abort();
            return Err(format!(
                "the server sent data ({} bytes on stream {}) where none was asked for",
                m.data.len(),
                m.stream_id
            ));
        } else {
            if let Err(e) = v.check(m.stream_id, &m.data) {
                a.abort();
                return Err(format!("verification of the server's data failed: {e}"));
            }
            count.bytes.store(v.bytes, Ordering::Relaxed);
            count.messages.store(v.messages, Ordering::Relaxed);
            let ns = u64::try_from((now() - start).as_nanos()).unwrap_or(u64::MAX);
            count.last_ns.store(ns, Ordering::Relaxed);
        }
        if done(v, &output) {
            return Ok(output);
        }
    }
    Err(if expect.data && !v.is_complete() {
        format!(
            "association closed before the server's data was complete ({})",
            v.complete().err().unwrap_or_default()
        )
    } else {
        "association closed before the server's report came".into()
    })
}

/// One association of a client run, as it ended.
struct Outcome {
    id: usize,
    local: String,
    remote: String,
    sent: Sent,
    /// Data bytes acknowledged (the control message left out).
    acked: u64,
    acked_while_sending: u64,
    send_secs: f64,
    omit_goodput: f64,
    received: u64,
    received_messages: u64,
    /// From the start to the last data message received.
    recv_secs: f64,
    secs: f64,
    result: Result<(), String>,
    interrupted: bool,
    paths: Vec<PathInfo>,
    stats: braid_net::AssociationStats,
    stalls: (u64, Duration),
    server_output: Option<serde_json::Value>,
    /// Per stream one-way delay and jitter of what arrived (timestamped data only).
    delays: Vec<serde_json::Value>,
    /// What each `--flow` sent.
    flows: Vec<serde_json::Value>,
    /// What the handshake agreed.
    negotiated: braid_net::Negotiated,
}

/// What every association of a client run does, fixed before they start.
struct ClientRun {
    plan: SendPlan,
    /// Sent to the server first (when it has more to do than verify).
    params: Option<Params>,
    /// The client sends data (not with `-R`).
    sends: bool,
    expect: Expect,
    omit: Option<Duration>,
    interactive: Option<Interactive>,
    flows: Vec<Flow>,
    timing_log: std::sync::Mutex<Option<std::io::BufWriter<std::fs::File>>>,
    /// How long, once sending ended, the client waits for the echo, the server's data or
    /// its report.
    wait: Duration,
}

/// Runs one association of a client run to its end (shutdown, or abort on a failure or a
/// stop request).
async fn run_assoc(
    c: Arc<ClientRun>,
    id: usize,
    assoc: Arc<Association>,
    start: Instant,
    mut stop: Stop,
    rx: Arc<RecvCount>,
    ctrl_bytes: Arc<AtomicU64>,
) -> Outcome {
    let inbound = assoc.open_streams().1;
    let mut result: Result<(), String> = Ok(());
    if let Some(p) = &c.params {
        let msg = Bytes::from(p.to_json().to_string());
        ctrl_bytes.store(msg.len() as u64, Ordering::Relaxed);
        let opts = SendOptions {
            ppid: PPID_CONTROL,
            ..Default::default()
        };
        if let Err(e) = assoc.send(0, msg, opts).await {
            result = Err(format!("sending the test parameters: {e}"));
        }
    }
    let ctrl = ctrl_bytes.load(Ordering::Relaxed);
    let acked_data = |a: &Association| a.stats().bytes_acked.saturating_sub(ctrl);
    let mut recv_task = (c.expect.data || c.expect.output)
        .then(|| tokio::spawn(receive(assoc.clone(), inbound, c.expect, rx.clone(), start)));
    // The bytes acknowledged when --omit ends (iperf3 -O).
    let omitted = Arc::new(AtomicU64::new(u64::MAX));
    let omit_task = c.omit.map(|d| {
        let (a, o) = (assoc.clone(), omitted.clone());
        tokio::spawn(async move {
            tokio::time::sleep(d).await;
            o.store(
                a.stats().bytes_acked.saturating_sub(ctrl),
                Ordering::Relaxed,
            );
        })
    });
    let handed = Arc::new(AtomicU64::new(0));
    let stalls = Arc::new(Stalls::default());
    let mut per_flow = Vec::new();
    let watcher = c
        .sends
        .then(|| tokio::spawn(watch_stalls(assoc.clone(), handed.clone(), stalls.clone())));
    let sent = if result.is_err() || !c.sends {
        Sent {
            messages: 0,
            bytes: 0,
            result: Ok(()),
            stopped: false,
        }
    } else if let (false, Some(time)) = (c.flows.is_empty(), c.plan.time) {
        let flags = if c.plan.timestamps { FLAG_TIMESTAMP } else { 0 };
        let (s, pf) = send_flows(
            &assoc,
            &c.flows,
            (start, start + time),
            flags,
            &mut stop,
            handed.clone(),
        )
        .await;
        per_flow = pf;
        s
    } else if let (Some(ia), Some(time)) = (c.interactive, c.plan.time) {
        let w = InteractiveRun {
            pattern: Pattern::new(),
            bulk: c.plan.msg,
            small: ia,
            start,
            end: start + time,
            opts: SendOptions {
                ppid: PPID,
                ..Default::default()
            },
            flags: if c.plan.timestamps { FLAG_TIMESTAMP } else { 0 },
        };
        let log = c.timing_log.lock().ok().and_then(|mut l| l.take());
        send_interactive(&assoc, w, &mut stop, log, handed.clone()).await
    } else {
        send_bulk(&assoc, &c.plan, start, &mut stop, &handed).await
    };
    let sending_done = now();
    // Goodput over the sending time alone (no shutdown drain), as iperf3 and quinn count it.
    let acked_while_sending = acked_data(&assoc);
    if let Some(t) = omit_task {
        t.abort();
    }
    let send_secs = (sending_done - start).as_secs_f64();
    let omit_goodput = match (c.omit, omitted.load(Ordering::Relaxed)) {
        (Some(d), at) if at != u64::MAX && c.sends => mbps(
            acked_while_sending.saturating_sub(at),
            send_secs - d.as_secs_f64(),
        ),
        _ => f64::NAN,
    };
    let mut interrupted = sent.stopped;
    result = result.and(sent.result.clone());
    if interrupted {
        result = Err(INTERRUPTED.into());
    }
    let mut server_output = None;
    if let Some(t) = &mut recv_task
        && !interrupted
    {
        // After a send error, wait only briefly: a verification failure on the far side
        // (which aborts the association) is the likelier cause and is worth reporting.
        let wait = if result.is_ok() {
            c.wait
        } else {
            Duration::from_millis(200)
        };
        let waited = tokio::select! {
            r = tokio::time::timeout(wait, &mut *t) => Some(r),
            () = stopped(&mut stop) => None,
        };
        let got = match waited {
            None => {
                interrupted = true;
                t.abort();
                Err(INTERRUPTED.into())
            }
            Some(Ok(Ok(r))) => r.map(|o| server_output = o),
            Some(Ok(Err(e))) => Err(format!("receiver: {e}")),
            Some(Err(_)) => {
                t.abort();
                Err(format!(
                    "timed out after {wait:?} waiting for the server ({} bytes of its data \
                     verified{})",
                    rx.bytes.load(Ordering::Relaxed),
                    if c.expect.output {
                        ", its report expected"
                    } else {
                        ""
                    }
                ))
            }
        };
        result = match (result, got) {
            (Err(s), Err(e)) => Err(format!("{e}; {s}")),
            (r, e) => r.and(e),
        };
    }
    let paths_before = assoc.paths();
    if result.is_ok() {
        let shut = tokio::select! {
            r = tokio::time::timeout(Duration::from_secs(60), assoc.shutdown()) => Some(r),
            () = stopped(&mut stop) => None,
        };
        result = match shut {
            None => {
                interrupted = true;
                assoc.abort();
                Err(format!(
                    "{INTERRUPTED} while waiting for the data to be acknowledged"
                ))
            }
            Some(Err(_)) => {
                Err("shutdown: timed out waiting for the data to be acknowledged".into())
            }
            Some(Ok(Err(e))) => Err(format!(
                "shutdown: {e} (the server may have rejected the data)"
            )),
            Some(Ok(Ok(()))) => Ok(()),
        };
    } else {
        assoc.abort();
    }
    if let Some(t) = recv_task {
        t.abort();
    }
    if let Some(w) = watcher {
        w.abort();
    }
    let secs = (now() - start).as_secs_f64();
    let (local, remote) = paths_before
        .first()
        .map(|p| (p.local.to_string(), p.remote.to_string()))
        .unwrap_or_default();
    let paths = match assoc.paths() {
        p if !p.is_empty() => p,
        _ => paths_before,
    };
    Outcome {
        id,
        local,
        remote,
        acked: acked_data(&assoc),
        acked_while_sending,
        send_secs,
        omit_goodput,
        received: rx.bytes.load(Ordering::Relaxed),
        received_messages: rx.messages.load(Ordering::Relaxed),
        recv_secs: rx.last_ns.load(Ordering::Relaxed) as f64 / 1e9,
        secs,
        result,
        interrupted,
        stats: assoc.stats(),
        paths,
        stalls: stalls.read(),
        server_output,
        sent,
        delays: rx.delays.lock().map(|d| d.clone()).unwrap_or_default(),
        negotiated: assoc.negotiated(),
        flows: (c.flows.iter().zip(per_flow))
            .enumerate()
            .map(|(i, (f, (m, b)))| {
                serde_json::json!({
                    "stream": i, "size": f.size, "rate": f.rate, "messages": m, "bytes": b,
                })
            })
            .collect(),
    }
}

/// The addresses to try for `--connect`/`-c`, each attempt a set offered together: one
/// attempt with every address when all are addresses (a multi-homed peer), one attempt
/// per resolved address, in the resolver's order, for a single host name (as iperf3 tries
/// `getaddrinfo`'s answers).
async fn targets(connect: &[String], udp_port: u16) -> Result<Vec<Vec<SocketAddr>>, Error> {
    let literal = |s: &str| -> Option<SocketAddr> {
        s.parse::<SocketAddr>().ok().or_else(|| {
            s.trim_start_matches('[')
                .trim_end_matches(']')
                .parse::<std::net::IpAddr>()
                .ok()
                .map(|ip| SocketAddr::new(ip, udp_port))
        })
    };
    let lits: Vec<Option<SocketAddr>> = connect.iter().map(|s| literal(s)).collect();
    if lits.iter().all(Option::is_some) {
        return Ok(vec![lits.into_iter().flatten().collect()]);
    }
    let [host] = connect else {
        return Err("--connect: give one host name, or addresses only".into());
    };
    // "host:port" or a bare host that takes -p.
    let query = match host.rsplit_once(':') {
        Some((_, p)) if p.parse::<u16>().is_ok() && !host.starts_with('[') => host.clone(),
        _ => format!("{host}:{udp_port}"),
    };
    let mut out: Vec<Vec<SocketAddr>> = Vec::new();
    for a in tokio::net::lookup_host(&query)
        .await
        .map_err(|e| format!("cannot resolve {host}: {e}"))?
    {
        if !out.iter().any(|v| v[0] == a) {
            out.push(vec![a]);
        }
    }
    if out.is_empty() {
        return Err(format!("{host} resolves to no address").into());
    }
    Ok(out)
}

/// The local addresses of a client without `--bind`: for each address family of the
/// targets, the source address the routing table picks for the first target of that
/// family (a socket "connected" only to ask), port 0. A concrete address, not the
/// wildcard, so it can be listed in INIT (RFC 9260 §5.1.2).
fn route_sources(targets: &[Vec<SocketAddr>]) -> Vec<SocketAddr> {
    let mut out: Vec<SocketAddr> = Vec::new();
    for t in targets.iter().flatten() {
        if out.iter().any(|o| o.is_ipv4() == t.is_ipv4()) {
            continue;
        }
        let any: SocketAddr = if t.is_ipv4() {
            (std::net::Ipv4Addr::UNSPECIFIED, 0).into()
        } else {
            (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
        };
        // A family without a route (no IPv6 on the host) gets no socket.
        if let Ok(a) = std::net::UdpSocket::bind(any).and_then(|s| s.connect(t).and(s.local_addr()))
        {
            out.push(SocketAddr::new(a.ip(), 0));
        }
    }
    out
}

async fn client(args: ClientArgs) -> Result<(), Error> {
    // Before anything else: from here on SIGINT and SIGTERM are ours (they end in a summary).
    let mut stop = stop_on_signals()?;
    if let Some(p) = &args.logfile {
        set_logfile(p)?;
    }
    let cmt = on_off("--cmt", &args.cmt)?;
    let load_sharing = on_off("--load-sharing", &args.load_sharing)?;
    let msg = args.msg_size as usize;
    if args.parallel > 1 && (args.interactive.is_some() || args.timing_log.is_some()) {
        return Err("--interactive runs one association: drop --parallel".into());
    }
    if args.parallel > 1 && !args.flows.is_empty() {
        return Err("--flow runs one association: drop --parallel".into());
    }
    // The interactive workload's two streams: 0 bulk, 1 small messages; a flow run's one
    // per flow.
    let k = if args.interactive.is_some() {
        2
    } else if !args.flows.is_empty() {
        u16::try_from(args.flows.len()).map_err(|_| "too many --flow")?
    } else {
        args.streams
    };
    let plan = SendPlan {
        msg,
        streams: k,
        time: match (args.time, args.bytes) {
            (None, None) => Some(DEFAULT_TIME),
            (t, _) => t,
        },
        bytes: args.bytes,
        unordered: args.unordered,
        bitrate: args.bitrate.filter(|b| *b > 0.0),
        timestamps: args.one_way_delay,
    };
    plan.total_msgs()?;
    let params = (args.reverse || args.bidir || args.get_server_output).then(|| Params {
        reverse: args.reverse,
        bidir: args.bidir,
        server_output: args.get_server_output,
        plan: plan.clone(),
    });
    let timing_log = match &args.timing_log {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?,
        )),
        None => None,
    };
    let mut targets = targets(&args.connect, args.udp_port).await?;
    let binds = if args.bind.is_empty() {
        route_sources(&targets)
    } else {
        args.bind.iter().map(|b| b.addr(0)).collect::<Vec<_>>()
    };
    // Only addresses a bound socket can reach (`localhost` may name ::1 on a host
    // without IPv6).
    for t in &mut targets {
        t.retain(|a| binds.iter().any(|b| b.is_ipv4() == a.is_ipv4()));
    }
    targets.retain(|t| !t.is_empty());
    if targets.is_empty() {
        return Err(format!(
            "no address of {} can be reached from {}",
            args.connect.join(", "),
            if binds.is_empty() {
                "this host (no route)".to_string()
            } else {
                crate::bind::list(&binds)
            }
        )
        .into());
    }
    if args.parallel > 1 && binds.iter().any(|b| b.port() != 0) {
        return Err(
            "--parallel: each association binds its own UDP port; give --bind \
                    addresses without a port (or port 0)"
                .into(),
        );
    }
    let mut assoc_cfg = AssociationConfig {
        cmt: cmt.then(|| braid_net::CmtConfig {
            send_run: args.send_run,
            ..braid_net::CmtConfig::default()
        }),
        stream_scheduler: args.scheduler,
        load_sharing,
        path_assignment: if load_sharing {
            braid_net::PathAssignment::CwndRtt
        } else {
            braid_net::PathAssignment::RoundRobin
        },
        timeout_handling: if load_sharing {
            braid_net::TimeoutHandling::Ls
        } else {
            braid_net::TimeoutHandling::Sctp
        },
        spurious_detection: args.spurious_detection,
        cc: args.cc,
        pacing: args.pacing,
        loss_detection: args.loss,
        plpmtud: args.plpmtud,
        idata: on_off("--idata", &args.idata)?,
        max_message_size: msg.max(AssociationConfig::default().max_message_size),
        ..assoc_config(k)
    };
    fix_buffers(&mut assoc_cfg, args.buffer);
    let progress = Progress::new(args.json);
    let base_port = args.local_port.unwrap_or_else(ephemeral_sctp_port);
    // One endpoint per association: two associations between the same two endpoints are
    // one too many (RFC 9260 §1.5.1), so each gets its own SCTP and UDP port.
    let mut eps = Vec::new();
    let mut assocs: Vec<Arc<Association>> = Vec::new();
    for i in 0..args.parallel {
        let cfg = EndpointConfig {
            port: base_port.wrapping_add(i),
            association: assoc_cfg.clone(),
            ..Default::default()
        };
        // The capture, trace and qlog of the first association (one file cannot hold two).
        let net = if i == 0 {
            net_config(
                args.pcap.as_deref(),
                args.trace.as_deref(),
                args.qlog.as_deref(),
            )?
        } else {
            NetConfig::default()
        };
        let ep = bind::endpoint(cfg, &binds, net)?;
        let assoc = tokio::select! {
            r = connect_any(&ep, &targets, args.port) => r?,
            () = stopped(&mut stop) => return Err("interrupted while connecting".into()),
        };
        // Streams beyond what the association negotiated would fail at the first send (or,
        // for the echo, on the server): refuse them now, in words.
        let (outbound, inbound) = assoc.open_streams();
        let refuse = if k > outbound {
            Some(format!(
                "--streams {k}: the association has {outbound} outbound stream(s) (the server \
                 accepts at most {outbound}); use --streams {outbound} or fewer"
            ))
        } else if (args.verify_echo || args.reverse || args.bidir) && k > inbound {
            Some(format!(
                "--streams {k}: the server sends on at most {inbound} stream(s), so it \
                 cannot use {k}; use --streams {inbound} or fewer"
            ))
        } else {
            None
        };
        if let Some(e) = refuse {
            drop(assoc);
            let _ = tokio::time::timeout(Duration::from_secs(5), ep.close()).await;
            return Err(e.into());
        }
        for p in &assoc.paths() {
            progress.line(&format!(
                "[{:3}] connected {} -> {} (SCTP port {}), {msg}-byte messages on {k} stream(s){}{}",
                i + 1,
                p.local,
                p.remote,
                args.port,
                if args.unordered { ", unordered" } else { "" },
                match (args.reverse, args.bidir) {
                    (true, _) => ", reverse: the server sends",
                    (_, true) => ", both send",
                    _ => "",
                }
            ));
        }
        assocs.push(Arc::new(assoc));
        eps.push(ep);
    }
    let run = Arc::new(ClientRun {
        plan: plan.clone(),
        params,
        sends: !args.reverse,
        expect: Expect {
            data: args.verify_echo || args.reverse || args.bidir,
            output: args.get_server_output,
        },
        omit: args.omit,
        interactive: args.interactive,
        flows: args.flows.clone(),
        timing_log: std::sync::Mutex::new(timing_log),
        wait: if args.reverse || args.bidir {
            plan.time.unwrap_or_default() + ECHO_WAIT
        } else {
            ECHO_WAIT
        },
    });
    let start = now();
    let started_wall = wall_ns();
    let counts: Vec<Arc<RecvCount>> = assocs.iter().map(|_| Arc::default()).collect();
    let ctrls: Vec<Arc<AtomicU64>> = assocs.iter().map(|_| Arc::default()).collect();
    let (done_tx, done_rx) = tokio::sync::watch::channel(false);
    let intervals = Arc::new(std::sync::Mutex::new(Vec::new()));
    let reporter = (!args.interval.is_zero()).then(|| {
        tokio::spawn(report_client(
            Reporting {
                assocs: assocs.clone(),
                counts: counts.clone(),
                ctrls: ctrls.clone(),
                sends: !args.reverse,
                receives: args.reverse || args.bidir,
                interval: args.interval,
                progress,
                log: intervals.clone(),
            },
            start,
            done_rx,
        ))
    });
    let mut tasks = tokio::task::JoinSet::new();
    for (i, a) in assocs.iter().enumerate() {
        tasks.spawn(run_assoc(
            run.clone(),
            i + 1,
            a.clone(),
            start,
            stop.clone(),
            counts[i].clone(),
            ctrls[i].clone(),
        ));
    }
    let mut outcomes = Vec::new();
    while let Some(o) = tasks.join_next().await {
        outcomes.push(o.map_err(|e| format!("association task: {e}"))?);
    }
    outcomes.sort_by_key(|o| o.id);
    let _ = done_tx.send(true);
    if let Some(r) = reporter {
        let _ = r.await;
    }
    let intervals = intervals.lock().map(|v| v.clone()).unwrap_or_default();
    let summary = ClientSummary {
        args: &args,
        plan: &plan,
        outcomes: &outcomes,
        started_wall,
        intervals,
    };
    if args.json {
        emit(&summary.json().to_string());
    } else {
        emit(&summary.text());
    }
    drop(assocs);
    for ep in eps {
        let _ = tokio::time::timeout(Duration::from_secs(5), ep.close()).await;
    }
    // The first failure is the run's.
    match outcomes.into_iter().find_map(|o| o.result.err()) {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// Connects to the first of `targets` that answers (each attempt bounded by 30 s), with
/// the last failure in words.
async fn connect_any(
    ep: &braid_net::Endpoint,
    targets: &[Vec<SocketAddr>],
    port: u16,
) -> Result<Association, Error> {
    let mut last = String::from("no address to connect to");
    for t in targets {
        let to = crate::bind::list(t);
        match tokio::time::timeout(Duration::from_secs(30), ep.connect(t, port)).await {
            Err(_) => last = format!("connect to {to}: timed out"),
            Ok(Err(e)) => {
                last = crate::bind::connect_error(&to, port, &e);
                // A listener that refused is an answer: another address of it will not help.
                if matches!(
                    e,
                    braid_net::Error::Closed(braid_net::CloseReason::PeerAbort(_))
                ) {
                    break;
                }
            }
            Ok(Ok(a)) => return Ok(a),
        }
    }
    Err(last.into())
}

/// A client run's results, for the summary.
struct ClientSummary<'a> {
    args: &'a ClientArgs,
    plan: &'a SendPlan,
    outcomes: &'a [Outcome],
    started_wall: u128,
    intervals: Vec<serde_json::Value>,
}

impl ClientSummary<'_> {
    /// One association's JSON object (the whole run's with one association).
    fn assoc_json(&self, o: &Outcome) -> serde_json::Value {
        let a = self.args;
        let st = &o.stats;
        serde_json::json!({
            "role": "client",
            "id": o.id,
            "local": o.local,
            "remote": o.remote,
            "ok": o.result.is_ok(),
            "interrupted": o.interrupted,
            "error": o.result.as_ref().err().cloned().unwrap_or_default(),
            // Goodput from what the server acknowledged: an interrupted run's unacknowledged
            // bytes do not count.
            "goodput_mbps": mbps(o.acked, o.secs),
            "bytes": o.sent.bytes,
            "bytes_acked": o.acked,
            "messages": o.sent.messages,
            "duration_s": o.secs,
            "send_duration_s": o.send_secs,
            "send_time_goodput_mbps": mbps(o.acked_while_sending, o.send_secs),
            "omit_s": a.omit.map_or(0.0, |d| d.as_secs_f64()),
            "omit_goodput_mbps": o.omit_goodput.is_finite().then_some(o.omit_goodput),
            "received_bytes": o.received,
            "received_messages": o.received_messages,
            "receive_goodput_mbps": mbps(o.received, o.recv_secs),
            "stalls": o.stalls.0,
            "longest_stall_s": o.stalls.1.as_secs_f64(),
            "retransmissions": retransmissions(&o.paths),
            "spurious_fast_retransmits": st.spurious_fast_retransmits,
            "spurious_timeouts": st.spurious_timeouts,
            "paths": paths_json(&o.paths),
            "server_output": o.server_output,
            "one_way_delay": o.delays,
            "flows": o.flows,
            "negotiated": negotiated_json(&o.negotiated),
        })
    }

    /// The run's JSON object: with one association its object, with several their sums
    /// and each one's object under `associations`; both with the test's start (iperf3's
    /// `start`), every interval and iperf3's `end` sums.
    fn json(&self) -> serde_json::Value {
        let a = self.args;
        let os = self.outcomes;
        let mut v = match os {
            [o] => self.assoc_json(o),
            _ => {
                let sum = |f: fn(&Outcome) -> u64| os.iter().map(f).sum::<u64>();
                let secs = os.iter().map(|o| o.secs).fold(0.0, f64::max);
                let send_secs = os.iter().map(|o| o.send_secs).fold(0.0, f64::max);
                let recv_secs = os.iter().map(|o| o.recv_secs).fold(0.0, f64::max);
                let first_err = os.iter().find_map(|o| o.result.as_ref().err().cloned());
                serde_json::json!({
                    "role": "client",
                    "ok": first_err.is_none(),
                    "interrupted": os.iter().any(|o| o.interrupted),
                    "error": first_err.unwrap_or_default(),
                    "goodput_mbps": mbps(sum(|o| o.acked), secs),
                    "bytes": sum(|o| o.sent.bytes),
                    "bytes_acked": sum(|o| o.acked),
                    "messages": sum(|o| o.sent.messages),
                    "duration_s": secs,
                    "send_duration_s": send_secs,
                    "send_time_goodput_mbps": mbps(sum(|o| o.acked_while_sending), send_secs),
                    "received_bytes": sum(|o| o.received),
                    "received_messages": sum(|o| o.received_messages),
                    "receive_goodput_mbps": mbps(sum(|o| o.received), recv_secs),
                    "stalls": sum(|o| o.stalls.0),
                    "retransmissions": os.iter().map(|o| retransmissions(&o.paths)).sum::<u64>(),
                    "associations": os.iter().map(|o| self.assoc_json(o)).collect::<Vec<_>>(),
                })
            }
        };
        let sent_secs = os.iter().map(|o| o.send_secs).fold(0.0, f64::max);
        let recv_secs = os.iter().map(|o| o.recv_secs).fold(0.0, f64::max);
        let acked: u64 = os.iter().map(|o| o.acked_while_sending).sum();
        let received: u64 = os.iter().map(|o| o.received).sum();
        let extra = serde_json::json!({
            "version": concat!("braid ", env!("CARGO_PKG_VERSION")),
            "start": {
                "timestamp_ns": u64::try_from(self.started_wall).unwrap_or(u64::MAX),
                "connected": os.iter().map(|o| serde_json::json!({
                    "id": o.id, "local": o.local, "remote": o.remote,
                })).collect::<Vec<_>>(),
                "test": {
                    "protocol": "SCTP over UDP",
                    "num_associations": os.len(),
                    "msg_size": self.plan.msg,
                    "streams": self.plan.streams,
                    "duration_s": self.plan.time.map(|t| t.as_secs_f64()),
                    "bytes": self.plan.bytes,
                    "bitrate": self.plan.bitrate,
                    "reverse": a.reverse,
                    "bidir": a.bidir,
                    "unordered": a.unordered,
                    "verify_echo": a.verify_echo,
                    "interval_s": a.interval.as_secs_f64(),
                },
                "options": {
                    "scheduler": a.scheduler.to_string(),
                    "cmt": a.cmt,
                    "load_sharing": a.load_sharing,
                    "idata": a.idata,
                    "spurious_detection": a.spurious_detection.to_string(),
                    "cc": a.cc.to_string(),
                    "pacing": a.pacing,
                    "send_run": a.send_run,
                    "loss": a.loss.to_string(),
                    "plpmtud": a.plpmtud,
                },
            },
            "intervals": self.intervals,
            "end": {
                // The client's sending over its sending time (bytes the server acknowledged).
                "sum_sent": {
                    "seconds": sent_secs,
                    "bytes": acked,
                    "bits_per_second": mbps(acked, sent_secs) * 1e6,
                },
                // What the client received and verified (-R, --bidir, the echo).
                "sum_received": {
                    "seconds": recv_secs,
                    "bytes": received,
                    "bits_per_second": mbps(received, recv_secs) * 1e6,
                },
            },
            // Kept under the names the single-association object has always had.
            "msg_size": self.plan.msg,
            "streams": self.plan.streams,
            "unordered": a.unordered,
            "verify_echo": a.verify_echo,
            "echo_bytes": if a.verify_echo { received } else { 0 },
            "echo_messages": if a.verify_echo {
                os.iter().map(|o| o.received_messages).sum::<u64>()
            } else {
                0
            },
            "scheduler": a.scheduler.to_string(),
            "cmt": a.cmt,
            "load_sharing": a.load_sharing,
            "spurious_detection": a.spurious_detection.to_string(),
            "cc": a.cc.to_string(),
            "pacing": a.pacing,
            "send_run": a.send_run,
            "loss": a.loss.to_string(),
        });
        if let (Some(m), serde_json::Value::Object(e)) = (v.as_object_mut(), extra) {
            m.extend(e);
        }
        v
    }

    fn text(&self) -> String {
        let a = self.args;
        let mut s = String::new();
        let _ = writeln!(s, "- - - - - - - - - - - - - - - - - - - - - - - - -");
        let many = self.outcomes.len() > 1;
        for o in self.outcomes {
            let tag = if many {
                format!("[{:3}]", o.id)
            } else {
                "[SUM]".to_string()
            };
            if a.reverse {
                let _ = writeln!(
                    s,
                    "{tag} 0.00-{:.2} sec  {}  {}  received and verified ({} messages)",
                    o.recv_secs,
                    human_bytes(o.received),
                    human_rate(mbps(o.received, o.recv_secs)),
                    o.received_messages,
                );
            } else {
                let _ = writeln!(
                    s,
                    "{tag} 0.00-{:.2} sec  {}  {}  retr {}  ({} messages, all acknowledged: {})",
                    o.secs,
                    human_bytes(o.acked),
                    human_rate(mbps(o.acked, o.secs)),
                    retransmissions(&o.paths),
                    o.sent.messages,
                    if o.result.is_ok() { "yes" } else { "no" },
                );
                let _ = writeln!(
                    s,
                    "      over the sending time 0.00-{:.2} sec: {} acknowledged, {}",
                    o.send_secs,
                    human_bytes(o.acked_while_sending),
                    human_rate(mbps(o.acked_while_sending, o.send_secs)),
                );
                if a.bidir || a.verify_echo {
                    let _ = writeln!(
                        s,
                        "      {}: {} in {} messages verified, {}",
                        if a.bidir { "received" } else { "echo" },
                        human_bytes(o.received),
                        o.received_messages,
                        human_rate(mbps(o.received, o.recv_secs)),
                    );
                }
            }
            let (stall_count, longest) = o.stalls;
            if stall_count > 0 {
                let _ = writeln!(
                    s,
                    "      stalled {stall_count} time(s), longest {:.1} s: nothing acknowledged \
                     for {STALL_RTOS} RTOs or more while data waited",
                    longest.as_secs_f64()
                );
            }
            let st = &o.stats;
            if st.spurious_fast_retransmits + st.spurious_timeouts > 0 {
                let _ = writeln!(
                    s,
                    "      spurious: {} fast retransmits, {} timeouts (undone)",
                    st.spurious_fast_retransmits, st.spurious_timeouts
                );
            }
            if o.interrupted {
                let _ = writeln!(
                    s,
                    "      {INTERRUPTED}: {} of {} acknowledged",
                    human_bytes(o.acked),
                    human_bytes(o.sent.bytes)
                );
            } else if let Err(e) = &o.result {
                let _ = writeln!(s, "      failed: {e}");
            }
            for p in &o.paths {
                let _ = writeln!(
                    s,
                    "      path {} -> {} [{}]  sent {}  cwnd {}  srtt {:.3} ms  retr {}",
                    p.local,
                    p.remote,
                    path_state(p),
                    human_bytes(p.stats.bytes_sent),
                    p.cwnd,
                    srtt_ms(p),
                    p.stats.retransmissions
                );
            }
            for f in &o.flows {
                let _ = writeln!(
                    s,
                    "      flow on stream {}: {} bytes @ {}: {} messages, {}",
                    f["stream"],
                    f["size"],
                    f["rate"]
                        .as_f64()
                        .map_or("max".to_string(), |r| format!("{r}/s")),
                    f["messages"],
                    human_bytes(f["bytes"].as_u64().unwrap_or(0)),
                );
            }
            for d in &o.delays {
                let _ = writeln!(
                    s,
                    "      stream {}: one-way delay {:.3} ms (min {:.3}, max {:.3}), jitter {:.3} ms over {} messages",
                    d["stream"],
                    d["mean_ms"].as_f64().unwrap_or(f64::NAN),
                    d["min_ms"].as_f64().unwrap_or(f64::NAN),
                    d["max_ms"].as_f64().unwrap_or(f64::NAN),
                    d["jitter_ms"].as_f64().unwrap_or(f64::NAN),
                    d["messages"],
                );
            }
            if let Some(out) = &o.server_output {
                let _ = writeln!(s, "      server output: {out}");
            }
        }
        if many {
            let os = self.outcomes;
            let secs = os.iter().map(|o| o.secs).fold(0.0, f64::max);
            let acked: u64 = os.iter().map(|o| o.acked).sum();
            let received: u64 = os.iter().map(|o| o.received).sum();
            let recv_secs = os.iter().map(|o| o.recv_secs).fold(0.0, f64::max);
            if !a.reverse {
                let _ = writeln!(
                    s,
                    "[SUM] 0.00-{secs:.2} sec  {}  {}  retr {}  sent by {} associations (all acknowledged: {})",
                    human_bytes(acked),
                    human_rate(mbps(acked, secs)),
                    os.iter().map(|o| retransmissions(&o.paths)).sum::<u64>(),
                    os.len(),
                    if os.iter().all(|o| o.result.is_ok()) {
                        "yes"
                    } else {
                        "no"
                    },
                );
            }
            if a.reverse || a.bidir {
                let _ = writeln!(
                    s,
                    "[SUM] 0.00-{recv_secs:.2} sec  {}  {}  received by {} associations",
                    human_bytes(received),
                    human_rate(mbps(received, recv_secs)),
                    os.len(),
                );
            }
        }
        s.trim_end().to_string()
    }
}

/// The interactive workload's bulk stream sends only while at most this many bytes are
/// unacknowledged: one bulk message below the 4 MiB send buffer, so a small message always
/// finds room in the core and never waits in the handle's FIFO queue behind a bulk one.
const BULK_HIGH_WATER: u64 = 3 << 20;
/// How often the bulk stream looks again at the acknowledged bytes while above that.
const BULK_POLL: Duration = Duration::from_millis(2);

/// What `--interactive` sends, and until when.
struct InteractiveRun {
    pattern: Pattern,
    /// Bulk message size (stream 0).
    bulk: usize,
    small: Interactive,
    start: Instant,
    end: Instant,
    opts: SendOptions,
    /// Flags of every message ([`FLAG_TIMESTAMP`] or none).
    flags: u8,
}

/// Nanoseconds since the Unix epoch (CLOCK_REALTIME): the timing logs' clock, shared by the
/// processes on one host whatever network namespace they are in.
fn wall_ns() -> u128 {
    #[expect(
        clippy::disallowed_methods,
        reason = "the timing log is compared with another process's, so it needs a shared clock"
    )]
    let t = std::time::SystemTime::now();
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// `--interactive`: stream 0 sends bulk messages back to back (bounded by
/// [`BULK_HIGH_WATER`]), a task sends stream 1's small messages on their schedule, until
/// `end`; each stream's last message carries LAST. `sent` counts the bytes handed to `send`
/// (the stall detector reads it). Returns what it sent, as the plain send loop does.
async fn send_interactive(
    assoc: &Arc<Association>,
    w: InteractiveRun,
    stop: &mut Stop,
    log: Option<std::io::BufWriter<std::fs::File>>,
    sent: Arc<AtomicU64>,
) -> Sent {
    let small = tokio::spawn(send_small(
        assoc.clone(),
        w.pattern.clone(),
        w.small,
        (w.start, w.end),
        (w.opts, w.flags),
        sent.clone(),
        log,
    ));
    let mut bulk_msgs: u64 = 0;
    let mut res: Result<(), String> = Ok(());
    let mut interrupted = false;
    'send: loop {
        let last = now() >= w.end;
        // Wait until the bulk message fits below the high-water mark.
        loop {
            if let Some(r) = assoc.close_reason() {
                res = Err(format!("association closed: {r}"));
                break 'send;
            }
            let acked = assoc.stats().bytes_acked;
            if sent.load(Ordering::Relaxed) + w.bulk as u64 <= acked + BULK_HIGH_WATER {
                break;
            }
            tokio::select! {
                biased;
                () = stopped(stop) => {
                    interrupted = true;
                    break 'send;
                }
                () = tokio::time::sleep(BULK_POLL) => {}
            }
        }
        let f = w.flags | if last { FLAG_LAST } else { 0 };
        let m = w.pattern.message(0, bulk_msgs, w.bulk, f, 2);
        let r = tokio::select! {
            biased;
            r = assoc.send(0, m, w.opts) => r,
            () = stopped(stop) => {
                interrupted = true;
                break 'send;
            }
        };
        if let Err(e) = r {
            res = Err(format!("send (bulk): {e}"));
            break;
        }
        sent.fetch_add(w.bulk as u64, Ordering::Relaxed);
        bulk_msgs += 1;
        if last {
            break;
        }
    }
    if interrupted || res.is_err() {
        small.abort();
    }
    let small_msgs = match small.await {
        Ok(Ok(n)) => n,
        Ok(Err(e)) => {
            res = res.and(Err(e));
            0
        }
        // Aborted above: the bulk stream's error (or the stop) is what is reported.
        Err(_) => 0,
    };
    Sent {
        messages: bulk_msgs + small_msgs,
        bytes: sent.load(Ordering::Relaxed),
        result: res,
        stopped: interrupted,
    }
}

/// Stream 1 of `--interactive`: message `k` is due at `start + k / rate`, until `end`;
/// logs when `send` was called and when it returned. Returns the number of messages.
async fn send_small(
    assoc: Arc<Association>,
    pattern: Pattern,
    ia: Interactive,
    (start, end): (Instant, Instant),
    (opts, flags): (SendOptions, u8),
    sent: Arc<AtomicU64>,
    mut log: Option<std::io::BufWriter<std::fs::File>>,
) -> Result<u64, String> {
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "positive, bounded by --time and RATE"
    )]
    let n = ((end - start).as_secs_f64() * ia.rate).ceil().max(1.0) as u64;
    for k in 0..n {
        tokio::time::sleep_until(start + Duration::from_secs_f64(k as f64 / ia.rate)).await;
        let f = flags | if k + 1 == n { FLAG_LAST } else { 0 };
        let m = pattern.message(1, k, ia.size, f, 2);
        let t_call = wall_ns();
        assoc
            .send(1, m, opts)
            .await
            .map_err(|e| format!("send (stream 1, seq {k}): {e}"))?;
        let t_accepted = wall_ns();
        sent.fetch_add(ia.size as u64, Ordering::Relaxed);
        if let Some(l) = &mut log {
            writeln!(l, "1 {k} {t_call} {t_accepted}").map_err(|e| format!("timing log: {e}"))?;
        }
    }
    if let Some(l) = &mut log {
        l.flush().map_err(|e| format!("timing log: {e}"))?;
    }
    Ok(n)
}

/// The client's error after SIGINT or SIGTERM.
const INTERRUPTED: &str = "interrupted (Ctrl-C or SIGTERM): the data is incomplete";

/// How long the client waits, once everything is sent, for the rest of the echo (or the
/// server's report).
const ECHO_WAIT: Duration = Duration::from_secs(60);

/// One line per second: goodput (bytes acknowledged), retransmissions, per-path state.
/// A stall: this many RTOs (and at least [`STALL_MIN`]) without a byte acknowledged while
/// data handed to `send` waits.
const STALL_RTOS: u32 = 3;
/// The shortest stall reported.
const STALL_MIN: Duration = Duration::from_secs(1);

/// Stalls seen by [`watch_stalls`]: how many, and the longest in milliseconds.
#[derive(Default)]
struct Stalls {
    count: AtomicU64,
    longest_ms: AtomicU64,
}

impl Stalls {
    fn read(&self) -> (u64, Duration) {
        let ms = self.longest_ms.load(Ordering::Relaxed);
        (
            self.count.load(Ordering::Relaxed),
            Duration::from_millis(ms),
        )
    }
}

/// Reports on stderr, as it happens, every stall of the transfer: no data acknowledged for
/// [`STALL_RTOS`] RTOs of the slowest active path while bytes `handed` to `send` wait, with
/// each path's state, so that a transfer that stops moving says so instead of hanging.
async fn watch_stalls(a: Arc<Association>, handed: Arc<AtomicU64>, stalls: Arc<Stalls>) {
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut last_acked = 0;
    let mut since = now();
    let mut reported = false;
    loop {
        tick.tick().await;
        let acked = a.stats().bytes_acked;
        let waiting = handed.load(Ordering::Relaxed).saturating_sub(acked);
        if acked != last_acked || waiting == 0 {
            last_acked = acked;
            since = now();
            reported = false;
            continue;
        }
        let paths = a.paths();
        let rto = (paths.iter())
            .filter(|p| p.state == braid_net::PathState::Active)
            .map(|p| p.rto)
            .max()
            .unwrap_or(STALL_MIN);
        let stalled = now() - since;
        if stalled < (rto * STALL_RTOS).max(STALL_MIN) {
            continue;
        }
        let ms = u64::try_from(stalled.as_millis()).unwrap_or(u64::MAX);
        stalls.longest_ms.fetch_max(ms, Ordering::Relaxed);
        if reported {
            continue;
        }
        reported = true;
        stalls.count.fetch_add(1, Ordering::Relaxed);
        let mut s = format!(
            "braid perf: stall: nothing acknowledged for {:.1} s ({STALL_RTOS} RTOs of {:.0} ms) \
             with {} waiting",
            stalled.as_secs_f64(),
            rto.as_secs_f64() * 1e3,
            human_bytes(waiting)
        );
        for p in &paths {
            let _ = write!(
                s,
                "; {} {:?} cwnd {} flight {} rto {:.0} ms retr {}",
                p.remote,
                p.state,
                p.cwnd,
                p.flight_size,
                p.rto.as_secs_f64() * 1e3,
                p.stats.retransmissions
            );
        }
        eprintln!("{s}");
    }
}

/// What the client's interval reports read.
struct Reporting {
    assocs: Vec<Arc<Association>>,
    counts: Vec<Arc<RecvCount>>,
    /// Each association's control-message bytes, left out of its acknowledged bytes.
    ctrls: Vec<Arc<AtomicU64>>,
    sends: bool,
    receives: bool,
    interval: Duration,
    progress: Progress,
    /// Every interval as JSON, for `--json`.
    log: Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
}

/// One line per association and direction every interval (iperf3's `-i`), a `[SUM]` line
/// with several associations, and, once `done` is set, the last partial interval: goodput
/// sent is what the peer acknowledged, received what was verified.
async fn report_client(r: Reporting, start: Instant, mut done: tokio::sync::watch::Receiver<bool>) {
    let mut tick = tokio::time::interval_at(start + r.interval, r.interval);
    let n = r.assocs.len();
    let mut last_acked = vec![0u64; n];
    let mut last_recv = vec![0u64; n];
    let mut last_retr = vec![0u64; n];
    let mut last_sent: Vec<Vec<u64>> = vec![Vec::new(); n];
    let mut t0 = 0.0;
    loop {
        let last = tokio::select! {
            _ = tick.tick() => false,
            _ = done.wait_for(|d| *d) => true,
        };
        let t1 = (now() - start).as_secs_f64();
        // A last sliver of an interval in which nothing moved says nothing (iperf3 leaves
        // such slivers out); one that moved bytes is printed, so the intervals add up.
        if last && t1 - t0 < r.interval.as_secs_f64() / 10.0 {
            let moved = (0..n).any(|i| {
                let acked = (r.assocs[i].stats().bytes_acked)
                    .saturating_sub(r.ctrls[i].load(Ordering::Relaxed));
                acked != last_acked[i] || r.counts[i].bytes.load(Ordering::Relaxed) != last_recv[i]
            });
            if !moved {
                return;
            }
        }
        let (mut sum_acked, mut sum_recv, mut sum_retr) = (0, 0, 0);
        let mut streams = Vec::new();
        for i in 0..n {
            let a = &r.assocs[i];
            let ctrl = r.ctrls[i].load(Ordering::Relaxed);
            let (st, paths) = (a.stats(), a.paths());
            let acked = st.bytes_acked.saturating_sub(ctrl);
            let recv = r.counts[i].bytes.load(Ordering::Relaxed);
            let retr = retransmissions(&paths);
            let (da, dr, dx) = (
                acked.saturating_sub(last_acked[i]),
                recv.saturating_sub(last_recv[i]),
                retr.saturating_sub(last_retr[i]),
            );
            (last_acked[i], last_recv[i], last_retr[i]) = (acked, recv, retr);
            sum_acked += da;
            sum_recv += dr;
            sum_retr += dx;
            let tag = format!("[{:3}]", i + 1);
            let dir = |d: &'static str| if r.sends && r.receives { d } else { "" };
            if r.sends {
                let mut s = format!(
                    "{tag}{} {t0:6.2}-{t1:6.2} sec  {:>12}  {:>15}  retr {dx:<5}",
                    dir(" TX"),
                    human_bytes(da),
                    human_rate(mbps(da, t1 - t0)),
                );
                last_sent[i].resize(paths.len(), 0);
                for (p, ls) in paths.iter().zip(&mut last_sent[i]) {
                    let _ = write!(
                        s,
                        "  | {}: cwnd {} srtt {:.3}ms sent {}",
                        p.remote,
                        p.cwnd,
                        srtt_ms(p),
                        human_bytes(p.stats.bytes_sent.saturating_sub(*ls))
                    );
                    *ls = p.stats.bytes_sent;
                }
                r.progress.line(&s);
            }
            if r.receives {
                r.progress.line(&format!(
                    "{tag}{} {t0:6.2}-{t1:6.2} sec  {:>12}  {:>15}  received",
                    dir(" RX"),
                    human_bytes(dr),
                    human_rate(mbps(dr, t1 - t0)),
                ));
            }
            streams.push(serde_json::json!({
                "id": i + 1,
                "start": t0,
                "end": t1,
                "bytes_acked": da,
                "bits_per_second": mbps(da, t1 - t0) * 1e6,
                "retransmits": dx,
                "bytes_received": dr,
                "received_bits_per_second": mbps(dr, t1 - t0) * 1e6,
                "paths": paths.iter().map(|p| serde_json::json!({
                    "remote": p.remote.to_string(),
                    "cwnd": p.cwnd,
                    "srtt_ms": srtt_ms(p),
                    "state": path_state(p),
                })).collect::<Vec<_>>(),
            }));
        }
        if n > 1 {
            if r.sends {
                r.progress.line(&format!(
                    "[SUM] {t0:6.2}-{t1:6.2} sec  {:>12}  {:>15}  retr {sum_retr:<5}",
                    human_bytes(sum_acked),
                    human_rate(mbps(sum_acked, t1 - t0)),
                ));
            }
            if r.receives {
                r.progress.line(&format!(
                    "[SUM] {t0:6.2}-{t1:6.2} sec  {:>12}  {:>15}  received",
                    human_bytes(sum_recv),
                    human_rate(mbps(sum_recv, t1 - t0)),
                ));
            }
        }
        if let Ok(mut l) = r.log.lock() {
            l.push(serde_json::json!({
                "streams": streams,
                "sum": {
                    "start": t0,
                    "end": t1,
                    "bytes_acked": sum_acked,
                    "bits_per_second": mbps(sum_acked, t1 - t0) * 1e6,
                    "retransmits": sum_retr,
                    "bytes_received": sum_recv,
                    "received_bits_per_second": mbps(sum_recv, t1 - t0) * 1e6,
                },
            }));
        }
        t0 = t1;
        if last {
            return;
        }
    }
}

async fn server(args: ServerArgs) -> Result<(), Error> {
    // Before anything else: from here on SIGINT and SIGTERM are ours (they end in summaries).
    let mut stop_signal = stop_on_signals()?;
    if let Some(p) = &args.logfile {
        set_logfile(p)?;
    }
    let load_sharing = on_off("--load-sharing", &args.load_sharing)?;
    let binds: Vec<SocketAddr> = if args.bind.is_empty() {
        // Every address of both families, as iperf3 listens.
        vec![
            (std::net::Ipv4Addr::UNSPECIFIED, args.udp_port).into(),
            (std::net::Ipv6Addr::UNSPECIFIED, args.udp_port).into(),
        ]
    } else {
        args.bind.iter().map(|b| b.addr(args.udp_port)).collect()
    };
    let specific = binds.iter().filter(|b| !b.ip().is_unspecified()).count();
    let mut cfg = EndpointConfig {
        port: args.port,
        listen: true,
        association: AssociationConfig {
            load_sharing,
            idata: on_off("--idata", &args.idata)?,
            spurious_detection: args.spurious_detection,
            cc: args.cc,
            pacing: args.pacing,
            loss_detection: args.loss,
            // A multi-homed server runs CMT: its echoes use every path and its SACKs
            // follow CMT's delayed-ack rule (DAC).
            cmt: (specific > 1).then(braid_net::CmtConfig::default),
            // The echo goes back on the stream it came on: offer as many outbound streams
            // as the server accepts inbound (-R and --bidir send on up to 16; more cost
            // memory in every association of a server that does neither).
            ..assoc_config(if args.echo {
                AssociationConfig::default().max_inbound_streams
            } else {
                16
            })
        },
        ..Default::default()
    };
    fix_buffers(&mut cfg.association, args.buffer);
    let net = || {
        net_config(
            args.pcap.as_deref(),
            args.trace.as_deref(),
            args.qlog.as_deref(),
        )
    };
    let ep = match bind::endpoint(cfg.clone(), &binds, net()?) {
        // A host without IPv6 still serves IPv4.
        Err(_) if args.bind.is_empty() => bind::endpoint(cfg, &binds[..1], net()?)?,
        r => r?,
    };
    let progress = Progress::new(args.json);
    for a in ep.local_addrs() {
        // Always on stderr, so scripts can wait for readiness whatever the output mode.
        eprintln!("listening on udp {a}, SCTP port {}", args.port);
    }
    let opts = ServeOpts {
        json: args.json,
        echo: args.echo,
        idle: args.idle_timeout,
        interval: args.interval,
        progress,
    };
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    if args.one_off {
        let a = tokio::select! {
            a = ep.accept() => a?,
            () = stopped(&mut stop_signal) => return Err("interrupted before any association".into()),
        };
        let serving = serve(a, opts, 1, stop);
        let mut serving = std::pin::pin!(serving);
        let res = tokio::select! {
            r = &mut serving => r,
            () = stopped(&mut stop_signal) => {
                let _ = stop_tx.send(true);
                serving.await
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(2), ep.close()).await;
        return res.map_err(Into::into);
    }
    // Every association in its own task; the accept future lives across iterations (a
    // cancelled accept could lose an association the driver just handed over).
    let mut sessions = tokio::task::JoinSet::new();
    {
        let mut accept = std::pin::pin!(ep.accept());
        let mut n = 0u64;
        loop {
            tokio::select! {
                a = &mut accept => {
                    let Ok(a) = a else { break };
                    accept.set(ep.accept());
                    n += 1;
                    sessions.spawn(serve(a, opts, n, stop.clone()));
                }
                Some(_) = sessions.join_next(), if !sessions.is_empty() => {}
                () = stopped(&mut stop_signal) => {
                    if !sessions.is_empty() {
                        eprintln!("interrupted: ending {} association(s)", sessions.len());
                    }
                    break;
                }
            }
        }
    }
    // Each running association aborts and prints its summary.
    let _ = stop_tx.send(true);
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while sessions.join_next().await.is_some() {}
    })
    .await;
    let _ = tokio::time::timeout(Duration::from_secs(2), ep.close()).await;
    Ok(())
}

/// What a server task needs to serve one association.
#[derive(Clone, Copy)]
struct ServeOpts {
    json: bool,
    echo: bool,
    /// Zero: no idle timeout.
    idle: Duration,
    /// Between interval reports; zero: none.
    interval: Duration,
    progress: Progress,
}

/// A timer that fires once nothing happened for `idle`: [`Idle::touch`] is one clock read
/// (cheap per message); the timer itself is re-armed only when it fires.
struct Idle {
    idle: Duration,
    last: Instant,
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl Idle {
    fn new(idle: Duration) -> Self {
        let last = now();
        // "Never" as a deadline far enough away (a year).
        let first = if idle.is_zero() {
            Duration::from_secs(365 * 86400)
        } else {
            idle
        };
        Self {
            idle,
            last,
            sleep: Box::pin(tokio::time::sleep_until(last + first)),
        }
    }

    fn touch(&mut self, t: Instant) {
        self.last = t;
    }

    /// Resolves once nothing happened for `idle`.
    async fn expired(&mut self) {
        loop {
            self.sleep.as_mut().await;
            if self.idle.is_zero() {
                self.sleep
                    .as_mut()
                    .reset(now() + Duration::from_secs(365 * 86400));
                continue;
            }
            let due = self.last + self.idle;
            if now() >= due {
                return;
            }
            self.sleep.as_mut().reset(due);
        }
    }
}

/// What a server association did, for its summary and report.
struct Served<'a> {
    n: u64,
    peer: &'a str,
    result: &'a Result<(), String>,
    v: &'a Verifier,
    echo: bool,
    echoed: u64,
    secs: f64,
    params: Option<&'a Params>,
    sent: u64,
    sent_acked: u64,
    stats: &'a braid_net::AssociationStats,
    negotiated: braid_net::Negotiated,
}

impl Served<'_> {
    fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "role": "server",
            "id": self.n,
            "ok": self.result.is_ok(),
            "error": self.result.as_ref().err().cloned().unwrap_or_default(),
            "peer": self.peer,
            "bytes": self.v.bytes,
            "messages": self.v.messages,
            "echo": self.echo,
            "bytes_echoed": self.echoed,
            "streams": self.v.nstreams.unwrap_or(0),
            "duration_s": self.secs,
            "goodput_mbps": mbps(self.v.bytes, self.secs),
            "reverse": self.params.is_some_and(|p| p.reverse),
            "bidir": self.params.is_some_and(|p| p.bidir),
            "bytes_sent": self.sent,
            "bytes_sent_acked": self.sent_acked,
            "send_goodput_mbps": mbps(self.sent_acked, self.secs),
            "duplicate_tsns": self.stats.duplicate_tsns,
            "sacks_sent": self.stats.sacks_sent,
            "recv_window_drops": self.stats.recv_window_drops,
            "one_way_delay": self.v.delays_json(),
            "negotiated": negotiated_json(&self.negotiated),
        })
    }
}

/// Starts the server's side of `-R`/`--bidir`: sends the client's plan from now, then waits
/// until the client acknowledged it all (so the report comes after the data).
fn spawn_sender(
    a: &Arc<Association>,
    plan: SendPlan,
    mut stop: Stop,
    handed: Arc<AtomicU64>,
) -> tokio::task::JoinHandle<Sent> {
    let a = a.clone();
    tokio::spawn(async move {
        let s = send_bulk(&a, &plan, now(), &mut stop, &handed).await;
        while s.result.is_ok()
            && !s.stopped
            && a.close_reason().is_none()
            && a.stats().bytes_acked < s.bytes
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        s
    })
}

/// Serves one association: verifies (and echoes) what it carries, sends and reports back
/// what the client's test parameters ask for, prints interval lines and its summary. An
/// error is that association's failure, reported here; the server goes on.
async fn serve(a: Association, o: ServeOpts, n: u64, mut stop: Stop) -> Result<(), String> {
    let a = Arc::new(a);
    let tag = format!("[{n:3}]");
    let peer = a
        .paths()
        .first()
        .map(|p| p.remote.to_string())
        .unwrap_or_default();
    o.progress
        .line(&format!("{tag} accepted association from {peer}"));
    let (outbound, inbound) = a.open_streams();
    let mut v = Verifier::new(inbound);
    let mut start: Option<Instant> = None;
    let mut result = Ok(());
    let mut echoed = 0u64;
    let mut idle = Idle::new(o.idle);
    let mut params: Option<Params> = None;
    let mut sender: Option<tokio::task::JoinHandle<Sent>> = None;
    let mut sent: Option<Sent> = None;
    let handed = Arc::new(AtomicU64::new(0));
    let mut reported = false;
    let mut tick: Option<tokio::time::Interval> = None;
    // (time, bytes received, bytes of ours acknowledged) at the last interval line.
    let mut last = (0.0, 0u64, 0u64);
    let interval_line = |t0: f64, t1: f64, dr: u64, ds: Option<u64>| {
        let mut s = format!(
            "{tag} {t0:6.2}-{t1:6.2} sec  {:>12}  {:>15}",
            human_bytes(dr),
            human_rate(mbps(dr, t1 - t0))
        );
        if let Some(ds) = ds {
            let _ = write!(
                s,
                "  sent {:>12}  {:>15}",
                human_bytes(ds),
                human_rate(mbps(ds, t1 - t0))
            );
        }
        s
    };
    loop {
        // The report goes back once everything expected has arrived and been acknowledged.
        if let Some(p) = &params
            && p.server_output
            && !reported
            && (p.reverse || v.is_complete())
            && (!p.server_sends() || sent.is_some())
        {
            reported = true;
            let secs = start.map_or(0.0, |s| (now() - s).as_secs_f64());
            let st = a.stats();
            let sent_bytes = sent.as_ref().map_or(0, |s| s.bytes);
            let rep = Served {
                n,
                peer: &peer,
                result: &result,
                v: &v,
                echo: o.echo,
                echoed,
                secs,
                params: Some(p),
                sent: sent_bytes,
                sent_acked: st.bytes_acked.min(sent_bytes),
                stats: &st,
                negotiated: a.negotiated(),
            }
            .json();
            let opts = SendOptions {
                ppid: PPID_CONTROL,
                ..Default::default()
            };
            if let Err(e) = a.send(0, Bytes::from(rep.to_string()), opts).await {
                result = Err(format!("sending the report: {e}"));
                break;
            }
        }
        let m = tokio::select! {
            biased;
            m = a.recv() => m,
            Ok(_) = stop.wait_for(|s| *s) => {
                a.abort();
                result = Err("interrupted: aborted".to_string());
                break;
            }
            s = async { sender.as_mut().expect("guarded").await }, if sender.is_some() => {
                sender = None;
                let s = s.unwrap_or_else(|e| Sent {
                    messages: 0, bytes: 0, result: Err(format!("sender: {e}")), stopped: false,
                });
                let failed = s.result.clone().err();
                sent = Some(s);
                idle.touch(now());
                if let Some(e) = failed {
                    a.abort();
                    result = Err(format!("{e}; aborted"));
                    break;
                }
                continue;
            }
            _ = async { tick.as_mut().expect("guarded").tick().await }, if tick.is_some() => {
                let t1 = start.map_or(0.0, |s| (now() - s).as_secs_f64());
                let acked = a.stats().bytes_acked;
                let ds = params.as_ref().filter(|p| p.server_sends()).map(|_| acked - last.2);
                o.progress.line(&interval_line(last.0, t1, v.bytes - last.1, ds));
                last = (t1, v.bytes, acked);
                continue;
            }
            // While the server sends, the client owes it nothing but SACKs.
            () = idle.expired(), if sender.is_none() => {
                a.abort();
                result = Err(format!(
                    "nothing received for {:?}: the client vanished or stalled; aborted",
                    o.idle
                ));
                break;
            }
        };
        let Ok(Some(m)) = m else { break };
        let t = now();
        idle.touch(t);
        if start.is_none() {
            start = Some(t);
            if !o.interval.is_zero() {
                tick = Some(tokio::time::interval_at(t + o.interval, o.interval));
            }
        }
        if m.ppid == PPID_CONTROL {
            let p = match Params::parse(&m.data) {
                Ok(_) if params.is_some() => Err("a second set of test parameters".into()),
                Ok(p) if p.server_sends() && o.echo => {
                    Err("the server echoes (--echo): it does not also send (-R/--bidir)".into())
                }
                Ok(p) if p.server_sends() && p.plan.streams > outbound => Err(format!(
                    "{} streams asked for, the association has {outbound} outbound",
                    p.plan.streams
                )),
                r => r,
            };
            match p {
                Ok(p) => {
                    if p.server_sends() {
                        sender = Some(spawn_sender(
                            &a,
                            p.plan.clone(),
                            stop.clone(),
                            handed.clone(),
                        ));
                    }
                    params = Some(p);
                    continue;
                }
                Err(e) => {
                    a.abort();
                    result = Err(format!("{e}; aborted"));
                    break;
                }
            }
        }
        if params.as_ref().is_some_and(|p| p.reverse) {
            a.abort();
            result = Err("data from the client in a reverse (-R) run; aborted".into());
            break;
        }
        if let Err(e) = v.check(m.stream_id, &m.data) {
            a.abort();
            result = Err(format!("verification failed: {e}; aborted"));
            break;
        }
        if o.echo {
            // Always ordered, as FORMAT.md's echo says; the header keeps its UNORDERED flag.
            let opts = SendOptions {
                ppid: m.ppid,
                ..Default::default()
            };
            let len = m.data.len() as u64;
            let sent = tokio::select! {
                biased;
                r = a.send(m.stream_id, m.data, opts) => r.map_err(|e| format!("echo: {e}")),
                Ok(_) = stop.wait_for(|s| *s) => Err("interrupted".into()),
                () = idle.expired() => Err(format!(
                    "the client took none of the echo for {:?}", o.idle
                )),
            };
            if let Err(e) = sent {
                a.abort();
                result = Err(format!("{e}; aborted"));
                break;
            }
            echoed += len;
        }
    }
    // A sender still waiting for its last SACKs when the client shut down is done in a
    // moment (the shutdown acknowledged everything); one that hangs is cut off.
    if let Some(mut s) = sender.take() {
        match tokio::time::timeout(Duration::from_secs(2), &mut s).await {
            Ok(Ok(s)) => sent = Some(s),
            Ok(Err(_)) => {}
            Err(_) => s.abort(),
        }
    }
    let secs = start.map_or(0.0, |s| (now() - s).as_secs_f64());
    // The last partial interval (iperf3 prints it too), unless it is a sliver.
    if tick.is_some() && secs - last.0 >= o.interval.as_secs_f64() / 10.0 {
        let acked = a.stats().bytes_acked;
        let ds = (params.as_ref())
            .filter(|p| p.server_sends())
            .map(|_| acked.saturating_sub(last.2));
        o.progress
            .line(&interval_line(last.0, secs, v.bytes - last.1, ds));
    }
    if result.is_ok() {
        // The association is closed: a graceful shutdown, or the reason it ended.
        let closed = match a.shutdown().await {
            Ok(()) => String::new(),
            Err(e) => format!("; {e}"),
        };
        if !params.as_ref().is_some_and(|p| p.reverse) {
            result = v
                .complete()
                .map_err(|e| format!("incomplete run: {e}{closed}"));
        } else if !closed.is_empty() {
            result = Err(format!("reverse run{closed}"));
        }
    }
    let st = a.stats();
    let sent_bytes = sent.as_ref().map_or(0, |s| s.bytes);
    let served = Served {
        n,
        peer: &peer,
        result: &result,
        v: &v,
        echo: o.echo,
        echoed,
        secs,
        params: params.as_ref(),
        sent: sent_bytes,
        sent_acked: st.bytes_acked.min(sent_bytes),
        stats: &st,
        negotiated: a.negotiated(),
    };
    if o.json {
        emit(&served.json().to_string());
    } else {
        emit(&format!(
            "{tag} [SUM] received 0.00-{secs:.2} sec  {}  {}  from {peer}  ({} messages on {} stream(s){}{}, verified: {})",
            human_bytes(v.bytes),
            human_rate(mbps(v.bytes, secs)),
            v.messages,
            v.nstreams.unwrap_or(0),
            if o.echo {
                format!(", {} echoed", human_bytes(echoed))
            } else {
                String::new()
            },
            if sent_bytes > 0 {
                format!(
                    ", sent {} ({} acknowledged)",
                    human_bytes(sent_bytes),
                    human_bytes(served.sent_acked)
                )
            } else {
                String::new()
            },
            match &result {
                Ok(()) => "ok".to_string(),
                Err(e) => e.clone(),
            }
        ));
    }
    if let Err(e) = &result {
        eprintln!("braid perf server: {tag} association from {peer} failed: {e}");
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations() {
        assert_eq!(parse_size("20MiB"), Ok(20 << 20));
        assert_eq!(parse_size("1GiB"), Ok(1 << 30));
        assert_eq!(parse_size("500MB"), Ok(500_000_000));
        assert_eq!(parse_size("1000"), Ok(1000));
        assert!(parse_size("1XB").is_err());
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("0s").is_err());
    }

    #[test]
    fn iperf_rates_and_bind_addresses() {
        assert_eq!(parse_rate("100M"), Ok(100e6));
        assert_eq!(parse_rate("1.5g"), Ok(1.5e9));
        assert_eq!(parse_rate("500k"), Ok(500e3));
        assert_eq!(parse_rate("0"), Ok(0.0));
        for bad in ["", "x", "-1M", "10", "1Q"] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
        let b = parse_bind("127.0.0.1").unwrap();
        assert_eq!(b.addr(9899), "127.0.0.1:9899".parse().unwrap());
        assert_eq!(
            parse_bind("[::1]:7").unwrap().addr(9899),
            "[::1]:7".parse().unwrap()
        );
        assert_eq!(
            parse_bind("::1").unwrap().addr(1),
            "[::1]:1".parse().unwrap()
        );
        assert!(parse_bind("localhost").is_err());
    }

    #[test]
    fn test_parameters_round_trip_and_bad_ones_are_refused() {
        let p = Params {
            reverse: true,
            bidir: false,
            server_output: true,
            plan: SendPlan {
                msg: 9000,
                streams: 4,
                time: Some(Duration::from_millis(2500)),
                bytes: None,
                unordered: true,
                bitrate: Some(50e6),
                timestamps: true,
            },
        };
        let wire = p.to_json().to_string();
        assert_eq!(Params::parse(wire.as_bytes()), Ok(p.clone()));
        let mut v = p.to_json();
        v["msg_size"] = 19.into();
        assert!(Params::parse(v.to_string().as_bytes()).is_err());
        let mut v = p.to_json();
        v["bytes"] = 1000.into();
        assert!(
            Params::parse(v.to_string().as_bytes())
                .unwrap_err()
                .contains("exactly one")
        );
        let mut v = p.to_json();
        v["version"] = 2.into();
        assert!(Params::parse(v.to_string().as_bytes()).is_err());
        assert!(Params::parse(b"\xff not json").is_err());
        // Fewer messages than streams cannot end every stream with LAST.
        let mut v = p.to_json();
        v["time_ms"] = serde_json::Value::Null;
        v["bytes"] = 9000.into();
        assert!(Params::parse(v.to_string().as_bytes()).is_err());
    }

    #[test]
    fn interactive_workload_parses() {
        let ia = parse_interactive("100@20").unwrap();
        assert_eq!((ia.size, ia.rate), (100, 20.0));
        assert_eq!(parse_interactive("1KiB@0.5").unwrap().size, 1024);
        for bad in ["100", "10@20", "100@0", "100@x", "128KiB@1"] {
            assert!(parse_interactive(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn verifier_accepts_the_format_and_rejects_changes() {
        let p = Pattern::new();
        let mut v = Verifier::new(u16::MAX);
        for j in 0..10u64 {
            let s = (j % 2) as u16;
            let f = if j >= 8 { FLAG_LAST } else { 0 };
            let m = p.message(s, j / 2, 100 + j as usize, f, 2);
            v.check(s, &m).unwrap();
        }
        v.complete().unwrap();
        // A flipped payload byte, a wrong seq, a wrong stream.
        let mut v = Verifier::new(u16::MAX);
        let mut m = p.message(0, 0, 300, 0, 1).to_vec();
        m[299] ^= 1;
        assert!(
            v.check(0, &m)
                .unwrap_err()
                .contains("payload mismatch at byte 299")
        );
        let mut v = Verifier::new(u16::MAX);
        assert!(v.check(0, &p.message(0, 1, 300, 0, 1)).is_err());
        let mut v = Verifier::new(u16::MAX);
        assert!(v.check(1, &p.message(0, 0, 300, 0, 2)).is_err());
        // Unordered: any order, no duplicates, complete at the end.
        let mut v = Verifier::new(u16::MAX);
        for seq in [2u64, 0, 1] {
            let f = FLAG_UNORDERED | if seq == 2 { FLAG_LAST } else { 0 };
            v.check(0, &p.message(0, seq, 64, f, 1)).unwrap();
        }
        v.complete().unwrap();
        assert!(v.check(0, &p.message(0, 1, 64, FLAG_UNORDERED, 1)).is_err());
    }

    #[test]
    fn verifier_bounds_what_a_client_can_make_it_hold() {
        let p = Pattern::new();
        // More streams than the association has.
        let mut v = Verifier::new(4);
        let e = v.check(0, &p.message(0, 0, 64, 0, 5)).unwrap_err();
        assert!(e.contains("nstreams 5"), "{e}");
        // Unordered messages ahead of one that never comes.
        let mut v = Verifier::new(1);
        v.check(0, &p.message(0, 1, 64, FLAG_UNORDERED, 1)).unwrap();
        v.streams[0].ahead.extend(2..=MAX_AHEAD as u64);
        v.ahead = MAX_AHEAD;
        let e = v
            .check(
                0,
                &p.message(0, MAX_AHEAD as u64 + 1, 64, FLAG_UNORDERED, 1),
            )
            .unwrap_err();
        assert!(e.contains("misses seq 0"), "{e}");
    }

    #[test]
    fn close_reasons_say_the_causes_in_words() {
        use braid_net::CloseReason;
        use braid_wire::ErrorCause;
        let r = CloseReason::PeerAbort(vec![ErrorCause::RestartWithNewEncapsulationPort {
            current_port: 9899,
            new_port: 40001,
        }]);
        assert_eq!(
            r.to_string(),
            "aborted by the peer: Restart of an Association with New Encapsulation Port \
             (current port 9899, new port 40001): the peer still has an association with \
             this address on another UDP port; wait for it to time out or use the old port"
        );
        let r = CloseReason::PeerAbort(vec![
            ErrorCause::UserInitiatedAbort(Bytes::from_static(b"bye")),
            ErrorCause::OutOfResource,
        ]);
        assert_eq!(
            r.to_string(),
            "aborted by the peer: User-Initiated Abort: bye; Out of Resource"
        );
        let r =
            CloseReason::ProtocolViolation(ErrorCause::InvalidStreamIdentifier { stream_id: 7 });
        assert!(r.to_string().contains("Invalid Stream Identifier 7"), "{r}");
    }

    #[test]
    fn pattern_matches_the_format() {
        let p = Pattern::new();
        let m = p.message(3, 5, 40, 0, 4);
        for i in 0..20 {
            assert_eq!(usize::from(m[20 + i]), (i + 13 * 5 + 7 * 3) % 251);
        }
    }
}
