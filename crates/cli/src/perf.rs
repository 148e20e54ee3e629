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
    /// Local address and UDP port to bind (repeatable: one socket per address).
    #[arg(long, required = true)]
    bind: Vec<SocketAddr>,
    /// Fix the send and receive buffers at this size (no autotuning), as a simulator
    /// scenario's `buffer` does (e.g. 64KiB).
    #[arg(long, value_parser = parse_size)]
    buffer: Option<u64>,

    /// Local SCTP port.
    #[arg(long, default_value_t = 5001)]
    port: u16,
    /// Print one JSON object per association instead of text.
    #[arg(long)]
    json: bool,
    /// Serve one association, then exit (0 if its data verified and was complete). Without
    /// it the server serves associations concurrently until interrupted.
    #[arg(long)]
    one_off: bool,
    /// Abort an association from which nothing arrived for this long (the client vanished
    /// or stalled), or whose echo the client did not take for this long; 0: never.
    #[arg(long, value_parser = parse_duration_or_zero, default_value = "60s")]
    idle_timeout: Duration,
    /// Send every received message back unchanged on the same stream (ordered), after
    /// verifying it; pairs with `perf client --verify-echo`.
    #[arg(long)]
    echo: bool,
    /// Offer LS-SCTP (Abd El Al et al.) in INIT-ACK (`on`, the default): a client that offers it
    /// too gets LS-DATA and per-path LS-SACKs; any other peer skips the offer.
    #[arg(long, default_value = "on")]
    load_sharing: String,
    /// Offer I-DATA and I-FORWARD-TSN (RFC 8260, `on`); used if the peer lists them too,
    /// else DATA. Interleaving needs --scheduler rr-packet, fc or wfq on the sender.
    #[arg(long, default_value = "off")]
    idata: String,
    /// Detection of spurious retransmissions for what the server sends (--echo): off,
    /// eifel-timestamp, eifel-rbit, duptsn, eifel+duptsn (Ladha et al.). The server echoes
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
    /// Local address and UDP port to bind (repeatable; port 0: chosen by the OS).
    #[arg(long, required = true)]
    bind: Vec<SocketAddr>,
    /// The server's address and UDP port (repeatable).
    #[arg(long, required = true)]
    connect: Vec<SocketAddr>,
    /// The server's SCTP port (also the local one unless --local-port).
    #[arg(long, default_value_t = 5001)]
    port: u16,
    /// Local SCTP port (default: an ephemeral one, 49152-65535, from the process id). Two
    /// clients on one host that talk to the same server at once need different ones: the
    /// server tells associations apart by the peer's address and SCTP port (RFC 9260
    /// §1.5.1), as TCP picks an ephemeral source port.
    #[arg(long)]
    local_port: Option<u16>,
    /// Send for this long (e.g. 10s, 500ms, 1m).
    #[arg(long, value_parser = parse_duration, conflicts_with = "bytes",
          required_unless_present = "bytes")]
    time: Option<Duration>,
    /// Send this many bytes (e.g. 1GiB, 20MiB, 500MB, 1000000).
    #[arg(long, value_parser = parse_size)]
    bytes: Option<u64>,
    /// Message size in bytes (20..=1048576; the interop peers take up to 65536, except
    /// dcsctp-peer as a receiver, which takes up to 1 MiB). With --interactive: the bulk
    /// messages' size.
    #[arg(long, default_value_t = 1452, value_parser = clap::value_parser!(u32).range(20..=1_048_576))]
    msg_size: u32,
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
    /// Offer LS-SCTP (Abd El Al et al.: per-path sequence numbers, cwnd/RTT path assignment,
    /// copies probing a timed-out path) in INIT (`on`); used if the server offers it too,
    /// else the association runs as --cmt says.
    #[arg(long, default_value = "off")]
    load_sharing: String,
    /// Offer I-DATA and I-FORWARD-TSN (RFC 8260, `on`); used if the peer lists them too,
    /// else DATA. Interleaving needs --scheduler rr-packet, fc or wfq on the sender.
    #[arg(long, default_value = "off")]
    idata: String,
    /// Detection of spurious retransmissions (Ladha et al.): off, eifel-timestamp (a
    /// TIMESTAMP chunk in every packet), eifel-rbit (a retransmit bit in DATA and SACK),
    /// duptsn (duplicate-TSN reports, RFC 3708), eifel+duptsn. Eifel needs a peer that
    /// offers Eifel-Supported (braid does); otherwise DupTSN runs.
    #[arg(long, default_value = "off")]
    spurious_detection: braid_net::SpuriousDetection,
    /// Congestion control per path: cubic (RFC 9438 with HyStart++, the default),
    /// cubic-linux (the same as Linux runs it: the Reno-friendly α never becomes 1, the
    /// curve aimed one minimum RTT ahead), reno (RFC 9260), or the coupled cmt-rpv1,
    /// cmt-rpv2, lia.
    #[arg(long, default_value = "cubic")]
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
    /// Print one JSON object at the end instead of text.
    #[arg(long)]
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
    /// With --interactive: write one line per stream-1 message, `stream seq t_call_ns
    /// t_accepted_ns` (CLOCK_REALTIME, ns since the Unix epoch: before `send` and when it
    /// returned), to this file.
    #[arg(long, requires = "interactive")]
    timing_log: Option<PathBuf>,
    /// Leave the first part of the transfer out of `omit_goodput_mbps` (iperf3's --omit):
    /// the bytes acknowledged after it, over the sending time after it (e.g. 5s).
    #[arg(long, value_parser = parse_duration)]
    omit: Option<Duration>,
    /// Fix the send and receive buffers at this size (no autotuning), as a simulator
    /// scenario's `buffer` does (e.g. 64KiB).
    #[arg(long, value_parser = parse_size)]
    buffer: Option<u64>,
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
        b.freeze()
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
        }
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
        if version != 1 || reserved != 0 || flags & !(FLAG_LAST | FLAG_UNORDERED) != 0 {
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
        if data[HEADER..] != *self.pattern.payload(stream, seq, data.len() - HEADER) {
            let off = data[HEADER..]
                .iter()
                .zip(self.pattern.payload(stream, seq, data.len() - HEADER))
                .position(|(a, b)| a != b)
                .unwrap_or(0);
            return Err(err(format!(
                "seq {seq}: payload mismatch at byte {}",
                HEADER + off
            )));
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
            Self::Stdout => {
                let mut o = std::io::stdout().lock();
                let _ = writeln!(o, "{s}");
                let _ = o.flush();
            }
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

async fn client(args: ClientArgs) -> Result<(), Error> {
    // Before anything else: from here on Ctrl-C is ours (it no longer kills the process).
    let mut interrupt = interrupt_signal()?;
    let cmt = match args.cmt.as_str() {
        "off" => false,
        "on" => true,
        c => return Err(format!("--cmt {c}: expected on or off").into()),
    };
    let load_sharing = on_off("--load-sharing", &args.load_sharing)?;
    let msg = args.msg_size as usize;
    // The interactive workload's two streams: 0 bulk, 1 small messages.
    let k = if args.interactive.is_some() {
        2
    } else {
        args.streams
    };
    let timing_log = match &args.timing_log {
        Some(p) => Some(std::io::BufWriter::new(
            std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?,
        )),
        None => None,
    };
    let total_msgs = match args.bytes {
        Some(n) => {
            let c = n.div_ceil(msg as u64);
            if c < u64::from(k) {
                return Err(format!(
                    "--bytes {n} is {c} message(s) of {msg} bytes: fewer than --streams {k}"
                )
                .into());
            }
            Some(c)
        }
        None => None,
    };
    let mut cfg = EndpointConfig {
        port: args.local_port.unwrap_or_else(ephemeral_sctp_port),
        association: AssociationConfig {
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
        },
        ..Default::default()
    };
    fix_buffers(&mut cfg.association, args.buffer);
    let ep = bind::endpoint(
        cfg,
        &args.bind,
        net_config(
            args.pcap.as_deref(),
            args.trace.as_deref(),
            args.qlog.as_deref(),
        )?,
    )?;
    let progress = Progress::new(args.json);
    let to = crate::bind::list(&args.connect);
    let assoc = tokio::select! {
        r = tokio::time::timeout(Duration::from_secs(30), ep.connect(&args.connect, args.port)) => {
            match r {
                Err(_) => return Err(format!("connect to {to}: timed out").into()),
                Ok(Err(e)) => return Err(crate::bind::connect_error(&to, args.port, &e).into()),
                Ok(Ok(a)) => a,
            }
        }
        _ = interrupt.recv() => return Err("interrupted (Ctrl-C) while connecting".into()),
    };
    // Streams beyond what the association negotiated would fail at the first send (or,
    // for the echo, on the server): refuse them now, in words.
    let (outbound, inbound) = assoc.open_streams();
    let refuse = if k > outbound {
        Some(format!(
            "--streams {k}: the association has {outbound} outbound stream(s) (the server \
             accepts at most {outbound}); use --streams {outbound} or fewer"
        ))
    } else if args.verify_echo && k > inbound {
        Some(format!(
            "--streams {k} --verify-echo: the server sends on at most {inbound} stream(s), \
             so its echo cannot use {k}; use --streams {inbound} or fewer"
        ))
    } else {
        None
    };
    if let Some(e) = refuse {
        drop(assoc);
        let _ = tokio::time::timeout(Duration::from_secs(5), ep.close()).await;
        return Err(e.into());
    }
    let assoc = Arc::new(assoc);
    {
        for p in &assoc.paths() {
            progress.line(&format!(
                "connected {} -> {} (SCTP port {}), {msg}-byte messages on {k} stream(s){}",
                p.local,
                p.remote,
                args.port,
                if args.unordered { ", unordered" } else { "" }
            ));
        }
    }

    let start = now();
    let reporter = tokio::spawn(report_client(assoc.clone(), start, progress));
    // The bytes acknowledged when --omit ends (iperf3 -O).
    let omitted = Arc::new(AtomicU64::new(u64::MAX));
    let omit_task = args.omit.map(|d| {
        let (a, o) = (assoc.clone(), omitted.clone());
        tokio::spawn(async move {
            tokio::time::sleep(d).await;
            o.store(a.stats().bytes_acked, Ordering::Relaxed);
        })
    });
    let handed = Arc::new(AtomicU64::new(0));
    let stalls = Arc::new(Stalls::default());
    let watcher = tokio::spawn(watch_stalls(assoc.clone(), handed.clone(), stalls.clone()));
    let echo_count = Arc::new(EchoCount::default());
    let mut echo_task = args
        .verify_echo
        .then(|| tokio::spawn(recv_echo(assoc.clone(), echo_count.clone(), inbound)));
    let pattern = Pattern::new();
    let deadline = args.time.map(|t| start + t);
    let flags = if args.unordered { FLAG_UNORDERED } else { 0 };
    let opts = SendOptions {
        ppid: PPID,
        unordered: args.unordered,
        ..Default::default()
    };
    let (j, sent, send_res, mut interrupted) =
        if let (Some(ia), Some(time)) = (args.interactive, args.time) {
            let w = InteractiveRun {
                pattern: pattern.clone(),
                bulk: msg,
                small: ia,
                start,
                end: start + time,
                opts,
            };
            send_interactive(&assoc, w, &mut interrupt, timing_log, handed.clone()).await
        } else {
            let mut j: u64 = 0;
            let mut sent: u64 = 0;
            // In --time mode, `end` becomes the number of messages once the time is up (rounded
            // so that every stream ends with a LAST message).
            let mut end = total_msgs;
            let kk = u64::from(k);
            let mut send_res: Result<(), String> = Ok(());
            let mut interrupted = false;
            loop {
                if end.is_none()
                    && let Some(d) = deadline
                    && now() >= d
                {
                    // Finish with one round of K messages carrying LAST (a multiple of K in all).
                    end = Some(j.div_ceil(kk) * kk + kk);
                }
                if let Some(e) = end
                    && j >= e
                {
                    break;
                }
                #[expect(clippy::cast_possible_truncation, reason = "j mod k < k")]
                let stream = (j % kk) as u16;
                let seq = j / kk;
                let mut len = msg;
                if let (Some(c), Some(n)) = (total_msgs, args.bytes)
                    && j == c - 1
                {
                    len = usize::try_from(n - (c - 1) * msg as u64)?.max(HEADER);
                }
                let last = end.is_some_and(|e| j + kk >= e);
                let f = flags | if last { FLAG_LAST } else { 0 };
                let m = pattern.message(stream, seq, len, f, k);
                // The signal is polled only while `send` waits (biased): no cost per message.
                let r = tokio::select! {
                    biased;
                    r = assoc.send(stream, m, opts) => r,
                    _ = interrupt.recv() => {
                        interrupted = true;
                        break;
                    }
                };
                if let Err(e) = r {
                    send_res = Err(format!("send: {e}"));
                    break;
                }
                sent += len as u64;
                handed.store(sent, Ordering::Relaxed);
                j += 1;
            }
            (j, sent, send_res, interrupted)
        };
    let sending_done = now();
    // Goodput over the sending time alone (no shutdown drain), as iperf3 and quinn count it.
    let acked_while_sending = assoc.stats().bytes_acked;
    if let Some(t) = omit_task {
        t.abort();
    }
    let omit_goodput = match (args.omit, omitted.load(Ordering::Relaxed)) {
        (Some(d), at) if at != u64::MAX => mbps(
            acked_while_sending.saturating_sub(at),
            (sending_done - start).as_secs_f64() - d.as_secs_f64(),
        ),
        _ => f64::NAN,
    };
    let mut result = send_res;
    if interrupted {
        result = Err(INTERRUPTED.into());
    }
    if let Some(t) = &mut echo_task
        && !interrupted
    {
        // After a send error, wait only briefly: an echo verification failure (which aborts
        // the association) is the likelier cause and is worth reporting.
        let wait = if result.is_ok() {
            ECHO_WAIT
        } else {
            Duration::from_millis(200)
        };
        let waited = tokio::select! {
            r = tokio::time::timeout(wait, &mut *t) => Some(r),
            _ = interrupt.recv() => None,
        };
        let echo = match waited {
            None => {
                interrupted = true;
                t.abort();
                Err(INTERRUPTED.into())
            }
            Some(Ok(Ok(r))) => r,
            Some(Ok(Err(e))) => Err(format!("echo receiver: {e}")),
            Some(Err(_)) => {
                t.abort();
                Err(format!(
                    "timed out after {wait:?} waiting for the echo ({} of {sent} bytes back)",
                    echo_count.bytes.load(Ordering::Relaxed)
                ))
            }
        };
        result = match (result, echo) {
            (Err(s), Err(e)) => Err(format!("{e}; {s}")),
            (r, e) => r.and(e),
        };
    }
    let paths_before = assoc.paths();
    if result.is_ok() {
        let shut = tokio::select! {
            r = tokio::time::timeout(Duration::from_secs(60), assoc.shutdown()) => Some(r),
            _ = interrupt.recv() => None,
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
    let elapsed = now() - start;
    reporter.abort();
    watcher.abort();
    let (stall_count, longest_stall) = stalls.read();
    let paths = match assoc.paths() {
        p if !p.is_empty() => p,
        _ => paths_before,
    };
    let stats = Some(assoc.stats());
    let echo_bytes = echo_count.bytes.load(Ordering::Relaxed);
    let echo_messages = echo_count.messages.load(Ordering::Relaxed);
    let secs = elapsed.as_secs_f64();
    let retr = retransmissions(&paths);
    let acked = stats.as_ref().map_or(0, |s| s.bytes_acked);
    if args.json {
        let v = serde_json::json!({
            "role": "client",
            "ok": result.is_ok(),
            "interrupted": interrupted,
            "error": result.as_ref().err().cloned().unwrap_or_default(),
            "goodput_mbps": mbps(sent, secs),
            "bytes": sent,
            "bytes_acked": acked,
            "messages": j,
            "duration_s": secs,
            "send_duration_s": (sending_done - start).as_secs_f64(),
            "send_time_goodput_mbps": mbps(acked_while_sending, (sending_done - start).as_secs_f64()),
            "omit_s": args.omit.map_or(0.0, |d| d.as_secs_f64()),
            "omit_goodput_mbps": if omit_goodput.is_finite() { Some(omit_goodput) } else { None },
            "stalls": stall_count,
            "longest_stall_s": longest_stall.as_secs_f64(),
            "retransmissions": retr,
            "msg_size": msg,
            "streams": k,
            "unordered": args.unordered,
            "verify_echo": args.verify_echo,
            "echo_bytes": echo_bytes,
            "echo_messages": echo_messages,
            "scheduler": args.scheduler.to_string(),
            "cmt": args.cmt,
            "load_sharing": args.load_sharing,
            "spurious_detection": args.spurious_detection.to_string(),
            "cc": args.cc.to_string(),
            "pacing": args.pacing,
            "send_run": args.send_run,
            "loss": args.loss.to_string(),
            "spurious_fast_retransmits": stats.as_ref().map_or(0, |s| s.spurious_fast_retransmits),
            "spurious_timeouts": stats.as_ref().map_or(0, |s| s.spurious_timeouts),
            "paths": paths_json(&paths),
        });
        println!("{v}");
    } else {
        let mut s = String::new();
        let _ = writeln!(s, "- - - - - - - - - - - - - - - - - - - - - - - - -");
        let _ = write!(
            s,
            "[SUM] 0.00-{secs:.2} sec  {}  {}  retr {retr}  ({j} messages, all acknowledged: {})",
            human_bytes(sent),
            human_rate(mbps(sent, secs)),
            if result.is_ok() { "yes" } else { "no" },
        );
        let send_secs = (sending_done - start).as_secs_f64();
        let _ = write!(
            s,
            "\n      over the sending time 0.00-{send_secs:.2} sec: {} acknowledged, {}",
            human_bytes(acked_while_sending),
            human_rate(mbps(acked_while_sending, send_secs)),
        );
        if stall_count > 0 {
            let _ = write!(
                s,
                "\n      stalled {stall_count} time(s), longest {:.1} s: nothing acknowledged \
                 for {STALL_RTOS} RTOs or more while data waited",
                longest_stall.as_secs_f64()
            );
        }
        if let Some(st) = stats
            .as_ref()
            .filter(|st| st.spurious_fast_retransmits + st.spurious_timeouts > 0)
        {
            let _ = write!(
                s,
                "\n      spurious: {} fast retransmits, {} timeouts (undone)",
                st.spurious_fast_retransmits, st.spurious_timeouts
            );
        }
        if args.verify_echo {
            let _ = write!(
                s,
                "\n      echo: {} in {echo_messages} messages verified",
                human_bytes(echo_bytes)
            );
        }
        if interrupted {
            let _ = write!(
                s,
                "\n      interrupted (Ctrl-C): {} of {} acknowledged; the data is \
                 incomplete (the server did not get the last messages)",
                human_bytes(acked),
                human_bytes(sent)
            );
        }
        for p in &paths {
            let _ = write!(
                s,
                "\n      path {} -> {} [{}]  sent {}  cwnd {}  srtt {:.3} ms  retr {}",
                p.local,
                p.remote,
                path_state(p),
                human_bytes(p.stats.bytes_sent),
                p.cwnd,
                srtt_ms(p),
                p.stats.retransmissions
            );
        }
        println!("{s}");
    }
    drop(assoc);
    let _ = tokio::time::timeout(Duration::from_secs(5), ep.close()).await;
    result.map_err(Into::into)
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
/// (the stall detector reads it). Returns (messages, bytes, result, interrupted) like the
/// plain send loop.
async fn send_interactive(
    assoc: &Arc<Association>,
    w: InteractiveRun,
    interrupt: &mut tokio::signal::unix::Signal,
    log: Option<std::io::BufWriter<std::fs::File>>,
    sent: Arc<AtomicU64>,
) -> (u64, u64, Result<(), String>, bool) {
    let small = tokio::spawn(send_small(
        assoc.clone(),
        w.pattern.clone(),
        w.small,
        (w.start, w.end),
        w.opts,
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
                _ = interrupt.recv() => {
                    interrupted = true;
                    break 'send;
                }
                () = tokio::time::sleep(BULK_POLL) => {}
            }
        }
        let f = if last { FLAG_LAST } else { 0 };
        let m = w.pattern.message(0, bulk_msgs, w.bulk, f, 2);
        let r = tokio::select! {
            biased;
            r = assoc.send(0, m, w.opts) => r,
            _ = interrupt.recv() => {
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
        // Aborted above: the bulk stream's error (or the interrupt) is what is reported.
        Err(_) => 0,
    };
    (
        bulk_msgs + small_msgs,
        sent.load(Ordering::Relaxed),
        res,
        interrupted,
    )
}

/// Stream 1 of `--interactive`: message `k` is due at `start + k / rate`, until `end`;
/// logs when `send` was called and when it returned. Returns the number of messages.
async fn send_small(
    assoc: Arc<Association>,
    pattern: Pattern,
    ia: Interactive,
    (start, end): (Instant, Instant),
    opts: SendOptions,
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
        let f = if k + 1 == n { FLAG_LAST } else { 0 };
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

/// The client's error after Ctrl-C.
const INTERRUPTED: &str = "interrupted (Ctrl-C): the data is incomplete";

/// SIGINT as a stream. Registered at once, unlike `tokio::signal::ctrl_c()` (which
/// registers on its first poll): a Ctrl-C before the first poll must not kill the process
/// without a summary.
fn interrupt_signal() -> Result<tokio::signal::unix::Signal, Error> {
    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())
        .map_err(|e| format!("cannot handle Ctrl-C: {e}").into())
}

/// How long the client waits, once everything is sent, for the rest of the echo.
const ECHO_WAIT: Duration = Duration::from_secs(60);

/// Echoed bytes and messages verified so far (read by the client after a timeout too).
#[derive(Default)]
struct EchoCount {
    bytes: AtomicU64,
    messages: AtomicU64,
}

/// Receives the server's echo and verifies it; returns once every message came back.
async fn recv_echo(a: Arc<Association>, count: Arc<EchoCount>, inbound: u16) -> Result<(), String> {
    let mut v = Verifier::new(inbound);
    while let Ok(Some(m)) = a.recv().await {
        if let Err(e) = v.check(m.stream_id, &m.data) {
            a.abort();
            return Err(format!("echo verification failed: {e}"));
        }
        count.bytes.store(v.bytes, Ordering::Relaxed);
        count.messages.store(v.messages, Ordering::Relaxed);
        if v.is_complete() {
            return Ok(());
        }
    }
    Err(format!(
        "association closed before the echo was complete ({})",
        v.complete().err().unwrap_or_default()
    ))
}

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

async fn report_client(a: Arc<Association>, start: Instant, progress: Progress) {
    let mut tick = tokio::time::interval_at(start + Duration::from_secs(1), Duration::from_secs(1));
    let mut last_acked = 0;
    let mut last_retr = 0;
    let mut last_sent: Vec<u64> = Vec::new();
    let mut t0 = 0.0;
    loop {
        tick.tick().await;
        let t1 = (now() - start).as_secs_f64();
        let (st, paths) = (a.stats(), a.paths());
        let retr = retransmissions(&paths);
        let mut s = format!(
            "[  1] {t0:6.2}-{t1:6.2} sec  {:>12}  {:>15}  retr {:<5}",
            human_bytes(st.bytes_acked - last_acked),
            human_rate(mbps(st.bytes_acked - last_acked, t1 - t0)),
            retr - last_retr
        );
        last_sent.resize(paths.len(), 0);
        for (p, ls) in paths.iter().zip(&mut last_sent) {
            let _ = write!(
                s,
                "  | {}: cwnd {} srtt {:.3}ms sent {}",
                p.remote,
                p.cwnd,
                srtt_ms(p),
                human_bytes(p.stats.bytes_sent - *ls)
            );
            *ls = p.stats.bytes_sent;
        }
        progress.line(&s);
        last_acked = st.bytes_acked;
        last_retr = retr;
        t0 = t1;
    }
}

async fn server(args: ServerArgs) -> Result<(), Error> {
    // Before anything else: from here on Ctrl-C is ours (it no longer kills the process).
    let mut interrupt = interrupt_signal()?;
    let load_sharing = on_off("--load-sharing", &args.load_sharing)?;
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
            cmt: (args.bind.len() > 1).then(braid_net::CmtConfig::default),
            // The echo goes back on the stream it came on: offer as many outbound streams
            // as the server accepts inbound.
            ..assoc_config(if args.echo {
                AssociationConfig::default().max_inbound_streams
            } else {
                16
            })
        },
        ..Default::default()
    };
    fix_buffers(&mut cfg.association, args.buffer);
    let ep = bind::endpoint(
        cfg,
        &args.bind,
        net_config(
            args.pcap.as_deref(),
            args.trace.as_deref(),
            args.qlog.as_deref(),
        )?,
    )?;
    let progress = Progress::new(args.json);
    for a in ep.local_addrs() {
        // Always on stderr, so scripts can wait for readiness whatever the output mode.
        eprintln!("listening on udp {a}, SCTP port {}", args.port);
    }
    let opts = ServeOpts {
        json: args.json,
        echo: args.echo,
        idle: args.idle_timeout,
        progress,
    };
    let (stop_tx, stop) = tokio::sync::watch::channel(false);
    if args.one_off {
        let a = tokio::select! {
            a = ep.accept() => a?,
            _ = interrupt.recv() => return Err("interrupted (Ctrl-C) before any association".into()),
        };
        let serving = serve(a, opts, 1, stop);
        let mut serving = std::pin::pin!(serving);
        let res = tokio::select! {
            r = &mut serving => r,
            _ = interrupt.recv() => {
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
                _ = interrupt.recv() => {
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

/// Serves one association: verifies (and echoes) what it carries and prints its summary
/// line. An error is that association's failure, reported here; the server goes on.
async fn serve(
    a: Association,
    o: ServeOpts,
    n: u64,
    mut stop: tokio::sync::watch::Receiver<bool>,
) -> Result<(), String> {
    let tag = format!("[{n:3}]");
    let peer = a
        .paths()
        .first()
        .map(|p| p.remote.to_string())
        .unwrap_or_default();
    o.progress
        .line(&format!("{tag} accepted association from {peer}"));
    let inbound = a.open_streams().1;
    let mut v = Verifier::new(inbound);
    let mut start: Option<Instant> = None;
    let mut last_print = (0.0, 0u64);
    let mut result = Ok(());
    let mut echoed = 0u64;
    let mut idle = Idle::new(o.idle);
    loop {
        let m = tokio::select! {
            biased;
            m = a.recv() => m,
            Ok(_) = stop.wait_for(|s| *s) => {
                a.abort();
                result = Err("interrupted (Ctrl-C): aborted".to_string());
                break;
            }
            () = idle.expired() => {
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
        let s = *start.get_or_insert(t);
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
                Ok(_) = stop.wait_for(|s| *s) => Err("interrupted (Ctrl-C)".into()),
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
        let el = (t - s).as_secs_f64();
        if el - last_print.0 >= 1.0 {
            let b = v.bytes - last_print.1;
            o.progress.line(&format!(
                "{tag} {:6.2}-{el:6.2} sec  {:>12}  {:>15}",
                last_print.0,
                human_bytes(b),
                human_rate(mbps(b, el - last_print.0))
            ));
            last_print = (el, v.bytes);
        }
    }
    let secs = start.map_or(0.0, |s| (now() - s).as_secs_f64());
    let stats = Some(a.stats());
    if result.is_ok() {
        // The association is closed: a graceful shutdown, or the reason it ended.
        let closed = match a.shutdown().await {
            Ok(()) => String::new(),
            Err(e) => format!("; {e}"),
        };
        result = v
            .complete()
            .map_err(|e| format!("incomplete run: {e}{closed}"));
    }
    if o.json {
        let j = serde_json::json!({
            "role": "server",
            "id": n,
            "ok": result.is_ok(),
            "error": result.as_ref().err().cloned().unwrap_or_default(),
            "peer": peer,
            "bytes": v.bytes,
            "messages": v.messages,
            "echo": o.echo,
            "bytes_echoed": echoed,
            "streams": v.nstreams.unwrap_or(0),
            "duration_s": secs,
            "goodput_mbps": mbps(v.bytes, secs),
            "duplicate_tsns": stats.as_ref().map_or(0, |s| s.duplicate_tsns),
            "sacks_sent": stats.as_ref().map_or(0, |s| s.sacks_sent),
            "recv_window_drops": stats.as_ref().map_or(0, |s| s.recv_window_drops),
        });
        println!("{j}");
    } else {
        println!(
            "{tag} [SUM] received 0.00-{secs:.2} sec  {}  {}  from {peer}  ({} messages on {} stream(s){}, verified: {})",
            human_bytes(v.bytes),
            human_rate(mbps(v.bytes, secs)),
            v.messages,
            v.nstreams.unwrap_or(0),
            if o.echo {
                format!(", {} echoed", human_bytes(echoed))
            } else {
                String::new()
            },
            match &result {
                Ok(()) => "ok".to_string(),
                Err(e) => e.clone(),
            }
        );
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
