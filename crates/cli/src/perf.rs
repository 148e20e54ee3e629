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
//! `--json`). The server verifies and reports what it received.
//!
//! Echo mode (the interop matrix's "echo + verify" runs): `perf server --echo` sends every
//! received message back unchanged on the same stream (ordered), and `perf client
//! --verify-echo` checks the echoed messages with the same verifier and shuts down only
//! once every message came back.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use braid_net::{
    Association, AssociationConfig, Endpoint, EndpointConfig, NetConfig, PathInfo, SendOptions,
};
use bytes::{BufMut, Bytes, BytesMut};
use clap::{Args, Subcommand};
use tokio::time::Instant;

/// Errors reported to the user.
type Error = Box<dyn std::error::Error>;

/// PPID of every message (WebRTC Binary, as the interop format says).
const PPID: u32 = 53;
/// Header length of a message.
const HEADER: usize = 20;
/// Largest message the format allows.
const MAX_MSG: usize = 65536;
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
    /// Local SCTP port.
    #[arg(long, default_value_t = 5001)]
    port: u16,
    /// Print one JSON object per association instead of text.
    #[arg(long)]
    json: bool,
    /// Serve one association, then exit (0 if its data verified and was complete).
    #[arg(long)]
    one_off: bool,
    /// Send every received message back unchanged on the same stream (ordered), after
    /// verifying it; pairs with `perf client --verify-echo`.
    #[arg(long)]
    echo: bool,
    /// Record every datagram sent and received to this pcap file.
    #[arg(long)]
    pcap: Option<PathBuf>,
}

#[derive(Args)]
pub(crate) struct ClientArgs {
    /// Local address and UDP port to bind (repeatable; port 0: chosen by the OS).
    #[arg(long, required = true)]
    bind: Vec<SocketAddr>,
    /// The server's address and UDP port (repeatable).
    #[arg(long, required = true)]
    connect: Vec<SocketAddr>,
    /// The server's SCTP port (also the local one).
    #[arg(long, default_value_t = 5001)]
    port: u16,
    /// Send for this long (e.g. 10s, 500ms, 1m).
    #[arg(long, value_parser = parse_duration, conflicts_with = "bytes",
          required_unless_present = "bytes")]
    time: Option<Duration>,
    /// Send this many bytes (e.g. 1GiB, 20MiB, 500MB, 1000000).
    #[arg(long, value_parser = parse_size)]
    bytes: Option<u64>,
    /// Message size in bytes (20..=65536).
    #[arg(long, default_value_t = 1452, value_parser = clap::value_parser!(u32).range(20..=65536))]
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
    scheduler: String,
    /// Concurrent multipath transfer over every path (`on`) or the primary path only
    /// (`off`). Paths come from several --bind and the peer's addresses.
    #[arg(long, default_value = "off")]
    cmt: String,
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
    Ok(Duration::from_secs_f64(v * mult))
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
struct Pattern(Bytes);

impl Pattern {
    fn new() -> Self {
        #[expect(clippy::cast_possible_truncation, reason = "mod 251")]
        let v: Vec<u8> = (0..251 + MAX_MSG).map(|j| (j % 251) as u8).collect();
        Self(Bytes::from(v))
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
        #[expect(clippy::cast_possible_truncation, reason = "len <= 65536")]
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

/// Checks received messages against the format.
struct Verifier {
    pattern: Pattern,
    streams: Vec<StreamRx>,
    nstreams: Option<u16>,
    bytes: u64,
    messages: u64,
}

impl Verifier {
    fn new() -> Self {
        Self {
            pattern: Pattern::new(),
            streams: Vec::new(),
            nstreams: None,
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
        } else if seq < st.next || !st.ahead.insert(seq) {
            return Err(err(format!("seq {seq} received twice")));
        } else {
            while st.ahead.remove(&st.next) {
                st.next += 1;
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

/// Driver options: a pcap recording if asked for.
fn net_config(pcap: Option<&Path>) -> Result<NetConfig, Error> {
    let mut net = NetConfig::default();
    if let Some(p) = pcap {
        let f = std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()))?;
        net.pcap = Some(Box::new(std::io::BufWriter::new(f)));
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

async fn client(args: ClientArgs) -> Result<(), Error> {
    let Some(scheduler) = braid_net::SchedulerKind::from_name(&args.scheduler) else {
        let names: Vec<&str> = braid_net::SchedulerKind::NAMES
            .iter()
            .map(|(n, _)| *n)
            .collect();
        return Err(format!(
            "--scheduler {}: expected one of {}",
            args.scheduler,
            names.join(", ")
        )
        .into());
    };
    let cmt = match args.cmt.as_str() {
        "off" => false,
        "on" => true,
        c => return Err(format!("--cmt {c}: expected on or off").into()),
    };
    let msg = args.msg_size as usize;
    let k = args.streams;
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
    let cfg = EndpointConfig {
        port: args.port,
        association: AssociationConfig {
            cmt,
            stream_scheduler: scheduler,
            ..assoc_config(k)
        },
        ..Default::default()
    };
    let ep = Endpoint::bind_with(cfg, &args.bind, net_config(args.pcap.as_deref())?)?;
    let progress = Progress::new(args.json);
    let assoc = tokio::time::timeout(
        Duration::from_secs(30),
        ep.connect(&args.connect, args.port),
    )
    .await
    .map_err(|_| "connect: timed out")??;
    let assoc = Arc::new(assoc);
    if let Ok(p) = assoc.paths().await {
        for p in &p {
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
    let echo_count = Arc::new(EchoCount::default());
    let mut echo_task = args
        .verify_echo
        .then(|| tokio::spawn(recv_echo(assoc.clone(), echo_count.clone())));
    let pattern = Pattern::new();
    let deadline = args.time.map(|t| start + t);
    let flags = if args.unordered { FLAG_UNORDERED } else { 0 };
    let opts = SendOptions {
        ppid: PPID,
        unordered: args.unordered,
        ..Default::default()
    };
    let mut j: u64 = 0;
    let mut sent: u64 = 0;
    // In --time mode, `end` becomes the number of messages once the time is up (rounded
    // so that every stream ends with a LAST message).
    let mut end = total_msgs;
    let kk = u64::from(k);
    let mut send_res: Result<(), String> = Ok(());
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
        if let Err(e) = assoc.send(stream, m, opts).await {
            send_res = Err(format!("send: {e}"));
            break;
        }
        sent += len as u64;
        j += 1;
    }
    let sending_done = now();
    let mut result = send_res;
    if let Some(t) = &mut echo_task {
        // After a send error, wait only briefly: an echo verification failure (which aborts
        // the association) is the likelier cause and is worth reporting.
        let wait = if result.is_ok() {
            ECHO_WAIT
        } else {
            Duration::from_millis(200)
        };
        let echo = match tokio::time::timeout(wait, &mut *t).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => Err(format!("echo receiver: {e}")),
            Err(_) => {
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
    let paths_before = assoc.paths().await.unwrap_or_default();
    if result.is_ok() {
        let shut = tokio::time::timeout(Duration::from_secs(60), assoc.shutdown()).await;
        result = match shut {
            Err(_) => Err("shutdown: timed out waiting for the data to be acknowledged".into()),
            Ok(Err(e)) => Err(format!(
                "shutdown: {e} (the server may have rejected the data)"
            )),
            Ok(Ok(())) => Ok(()),
        };
    } else {
        assoc.abort();
    }
    let elapsed = now() - start;
    reporter.abort();
    let paths = match assoc.paths().await {
        Ok(p) if !p.is_empty() => p,
        _ => paths_before,
    };
    let stats = assoc.stats().await.ok();
    let echo_bytes = echo_count.bytes.load(Ordering::Relaxed);
    let echo_messages = echo_count.messages.load(Ordering::Relaxed);
    let secs = elapsed.as_secs_f64();
    let retr = retransmissions(&paths);
    let acked = stats.as_ref().map_or(0, |s| s.bytes_acked);
    if args.json {
        let v = serde_json::json!({
            "role": "client",
            "ok": result.is_ok(),
            "error": result.as_ref().err().cloned().unwrap_or_default(),
            "goodput_mbps": mbps(sent, secs),
            "bytes": sent,
            "bytes_acked": acked,
            "messages": j,
            "duration_s": secs,
            "send_duration_s": (sending_done - start).as_secs_f64(),
            "retransmissions": retr,
            "msg_size": msg,
            "streams": k,
            "unordered": args.unordered,
            "verify_echo": args.verify_echo,
            "echo_bytes": echo_bytes,
            "echo_messages": echo_messages,
            "scheduler": args.scheduler,
            "cmt": args.cmt,
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
        if args.verify_echo {
            let _ = write!(
                s,
                "\n      echo: {} in {echo_messages} messages verified",
                human_bytes(echo_bytes)
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

/// How long the client waits, once everything is sent, for the rest of the echo.
const ECHO_WAIT: Duration = Duration::from_secs(60);

/// Echoed bytes and messages verified so far (read by the client after a timeout too).
#[derive(Default)]
struct EchoCount {
    bytes: AtomicU64,
    messages: AtomicU64,
}

/// Receives the server's echo and verifies it; returns once every message came back.
async fn recv_echo(a: Arc<Association>, count: Arc<EchoCount>) -> Result<(), String> {
    let mut v = Verifier::new();
    while let Some(m) = a.recv().await {
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
async fn report_client(a: Arc<Association>, start: Instant, progress: Progress) {
    let mut tick = tokio::time::interval_at(start + Duration::from_secs(1), Duration::from_secs(1));
    let mut last_acked = 0;
    let mut last_retr = 0;
    let mut last_sent: Vec<u64> = Vec::new();
    let mut t0 = 0.0;
    loop {
        tick.tick().await;
        let t1 = (now() - start).as_secs_f64();
        let (Ok(st), Ok(paths)) = (a.stats().await, a.paths().await) else {
            return;
        };
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
    let cfg = EndpointConfig {
        port: args.port,
        listen: true,
        association: AssociationConfig {
            // A multi-homed server runs CMT: its echoes use every path and its SACKs
            // follow CMT's delayed-ack rule (DAC).
            cmt: args.bind.len() > 1,
            ..assoc_config(16)
        },
        ..Default::default()
    };
    let ep = Endpoint::bind_with(cfg, &args.bind, net_config(args.pcap.as_deref())?)?;
    let progress = Progress::new(args.json);
    for a in ep.local_addrs() {
        // Always on stderr, so scripts can wait for readiness whatever the output mode.
        eprintln!("listening on udp {a}, SCTP port {}", args.port);
    }
    // Associations are served one at a time, like iperf3.
    while let Some(a) = ep.accept().await {
        let res = serve(&a, &args, progress).await;
        drop(a);
        if let Err(e) = res {
            // A verification failure is a hard error.
            let _ = tokio::time::timeout(Duration::from_secs(2), ep.close()).await;
            return Err(e.into());
        }
        if args.one_off {
            break;
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(5), ep.close()).await;
    Ok(())
}

async fn serve(a: &Association, args: &ServerArgs, progress: Progress) -> Result<(), String> {
    let peer = a
        .paths()
        .await
        .ok()
        .and_then(|p| p.first().map(|p| p.remote.to_string()))
        .unwrap_or_default();
    progress.line(&format!("accepted association from {peer}"));
    let mut v = Verifier::new();
    let mut start: Option<Instant> = None;
    let mut last_print = (0.0, 0u64);
    let mut result = Ok(());
    let mut echoed = 0u64;
    while let Some(m) = a.recv().await {
        let t = now();
        let s = *start.get_or_insert(t);
        if let Err(e) = v.check(m.stream_id, &m.data) {
            a.abort();
            result = Err(format!("verification failed: {e}"));
            break;
        }
        if args.echo {
            // Always ordered, as FORMAT.md's echo says; the header keeps its UNORDERED flag.
            let opts = SendOptions {
                ppid: m.ppid,
                ..Default::default()
            };
            let n = m.data.len() as u64;
            if let Err(e) = a.send(m.stream_id, m.data, opts).await {
                result = Err(format!("echo: {e}"));
                break;
            }
            echoed += n;
        }
        let el = (t - s).as_secs_f64();
        if el - last_print.0 >= 1.0 {
            let b = v.bytes - last_print.1;
            progress.line(&format!(
                "[  1] {:6.2}-{el:6.2} sec  {:>12}  {:>15}",
                last_print.0,
                human_bytes(b),
                human_rate(mbps(b, el - last_print.0))
            ));
            last_print = (el, v.bytes);
        }
    }
    let secs = start.map_or(0.0, |s| (now() - s).as_secs_f64());
    if result.is_ok() {
        result = v.complete().map_err(|e| format!("incomplete run: {e}"));
    }
    let stats = a.stats().await.ok();
    if args.json {
        let j = serde_json::json!({
            "role": "server",
            "ok": result.is_ok(),
            "error": result.as_ref().err().cloned().unwrap_or_default(),
            "peer": peer,
            "bytes": v.bytes,
            "messages": v.messages,
            "echo": args.echo,
            "bytes_echoed": echoed,
            "streams": v.nstreams.unwrap_or(0),
            "duration_s": secs,
            "goodput_mbps": mbps(v.bytes, secs),
            "duplicate_tsns": stats.as_ref().map_or(0, |s| s.duplicate_tsns),
            "sacks_sent": stats.as_ref().map_or(0, |s| s.sacks_sent),
        });
        println!("{j}");
    } else {
        println!(
            "[SUM] received 0.00-{secs:.2} sec  {}  {}  ({} messages on {} stream(s){}, verified: {})",
            human_bytes(v.bytes),
            human_rate(mbps(v.bytes, secs)),
            v.messages,
            v.nstreams.unwrap_or(0),
            if args.echo {
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
    fn verifier_accepts_the_format_and_rejects_changes() {
        let p = Pattern::new();
        let mut v = Verifier::new();
        for j in 0..10u64 {
            let s = (j % 2) as u16;
            let f = if j >= 8 { FLAG_LAST } else { 0 };
            let m = p.message(s, j / 2, 100 + j as usize, f, 2);
            v.check(s, &m).unwrap();
        }
        v.complete().unwrap();
        // A flipped payload byte, a wrong seq, a wrong stream.
        let mut v = Verifier::new();
        let mut m = p.message(0, 0, 300, 0, 1).to_vec();
        m[299] ^= 1;
        assert!(
            v.check(0, &m)
                .unwrap_err()
                .contains("payload mismatch at byte 299")
        );
        let mut v = Verifier::new();
        assert!(v.check(0, &p.message(0, 1, 300, 0, 1)).is_err());
        let mut v = Verifier::new();
        assert!(v.check(1, &p.message(0, 0, 300, 0, 2)).is_err());
        // Unordered: any order, no duplicates, complete at the end.
        let mut v = Verifier::new();
        for seq in [2u64, 0, 1] {
            let f = FLAG_UNORDERED | if seq == 2 { FLAG_LAST } else { 0 };
            v.check(0, &p.message(0, seq, 64, f, 1)).unwrap();
        }
        v.complete().unwrap();
        assert!(v.check(0, &p.message(0, 1, 64, FLAG_UNORDERED, 1)).is_err());
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
