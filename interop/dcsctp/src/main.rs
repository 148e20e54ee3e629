//! dcsctp-peer: an SCTP-over-UDP interop peer built on Google's dcSCTP (the sans-IO `dcsctp`
//! crate). Every SCTP packet dcSCTP produces is sent as the payload of one UDP datagram on one
//! socket (RFC 6951 framing, no DTLS), every datagram received from the peer is handed to it.
//!
//! Same command line, message format (`../FORMAT.md`) and JSON summary as the other interop
//! peers (`../README.md`):
//!
//! ```text
//! dcsctp-peer server --listen ADDR [--echo|--discard] [--verify] [--idata] [--timeout S]
//!                    [--timing-log FILE]
//! dcsctp-peer client --connect ADDR --bytes N --streams K [--msg-size M] [--unordered]
//!                    [--verify] [--idata] [--timeout S]
//! ```
//!
//! The program drives dcSCTP the way its API asks for: `handle_input` for each received packet,
//! `advance_time` with a monotonic clock (its `SocketTime` counts from the socket's creation),
//! `poll_timeout` for how long to wait in `recv`, `poll_event` for the packets to send and the
//! state changes, `get_next_message` for received messages and `send` to queue messages.

use dcsctp::api::{
    DcSctpSocket, Message, Options, PpId, SendOptions, SocketEvent, SocketState, SocketTime,
    StreamId,
};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Write};
use std::net::{SocketAddr, ToSocketAddrs, UdpSocket};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Message header length (FORMAT.md).
const HDR_LEN: usize = 20;
/// Header flag: last message of this stream in this run.
const FLAG_LAST: u8 = 0x01;
/// Header flag: sent with the U bit.
const FLAG_UNORDERED: u8 = 0x02;
/// Format version carried in every header.
const FORMAT_VERSION: u8 = 1;
/// Largest message size a run may use (FORMAT.md).
const MAX_MSG_SIZE: usize = 65536;
/// Largest message the verifier checks: FORMAT.md's interactive workload (`braid perf client
/// --interactive`) sends bulk messages of up to 1 MiB.
const MAX_RECV_MSG_SIZE: usize = 1 << 20;
/// The payload pattern's modulus (FORMAT.md).
const PATTERN_MOD: usize = 251;
/// Every message is sent with PPID 53, WebRTC Binary.
const PPID_BINARY: PpId = PpId(53);
/// Default SCTP port on the wire (the other peers' default too).
const DEFAULT_SCTP_PORT: u16 = 5001;
/// The client (and an echoing server) queues at most this many bytes in dcSCTP's send queue
/// (its default limit is 2 000 000 bytes, `Options::max_send_buffer_size`).
const SEND_HIGH_WATER: usize = 1 << 20;
/// Upper bound on one wait for a datagram, so deadlines are checked regularly.
const MAX_WAIT: Duration = Duration::from_millis(50);
/// At most this many datagrams are fed to dcSCTP before its events are processed.
const MAX_BATCH: usize = 256;
/// Requested UDP socket buffer sizes (the kernel caps them at net.core.rmem_max/wmem_max).
/// Linux's default receive buffer (212 992 bytes, about 90 loopback datagrams of 1.2 kB by
/// their kernel memory footprint) overflows under a sender's burst, and every overflow is a
/// loss SCTP has to repair; pion-peer asks for the same 8 MiB.
const UDP_BUFFER: usize = 8 << 20;

// ------------------------------------------------------------------ command line

/// The parsed command line.
struct Args {
    server: bool,
    addr: String,
    bytes: u64,
    streams: usize,
    msg_size: usize,
    timeout: Duration,
    unordered: bool,
    verify: bool,
    echo: bool,
    idata: bool,
    sctp_port: u16,
    peer_sctp_port: Option<u16>,
    mtu: Option<usize>,
    debug: bool,
    /// `--loss`: percentage of datagrams dropped on purpose, each direction.
    loss_percent: f64,
    loss_seed: u64,
    /// `--timing-log`: the server writes a line per message received to this file.
    timing_log: Option<String>,
}

const USAGE: &str = "usage:
  dcsctp-peer server --listen ADDR [--echo|--discard] [--verify] [--timing-log FILE]
                     [common flags]
  dcsctp-peer client --connect ADDR --bytes N --streams K [--msg-size M] [--unordered]
                     [--verify] [--peer-sctp-port P] [common flags]
common flags: --timeout SECONDS (120) --sctp-port P (5001) --idata (offer I-DATA, RFC 8260)
              --mtu BYTES (dcSCTP's default 1191) --debug (dcSCTP's packet log on stderr)
              --loss PERCENT (drop that share of datagrams each way, default 0)
              --loss-seed N (the drop pattern's seed, default 1)";

/// Parses a size with an optional unit: B, K/KiB, M/MiB, G/GiB (powers of 2), KB, MB, GB.
fn parse_size(s: &str) -> Result<u64, String> {
    const UNITS: [(&str, f64); 10] = [
        ("GiB", (1u64 << 30) as f64),
        ("MiB", (1u64 << 20) as f64),
        ("KiB", 1024.0),
        ("GB", 1e9),
        ("MB", 1e6),
        ("KB", 1e3),
        ("G", (1u64 << 30) as f64),
        ("M", (1u64 << 20) as f64),
        ("K", 1024.0),
        ("B", 1.0),
    ];
    let bad = || format!("bad size {s:?}");
    for (suffix, mul) in UNITS {
        if let Some(num) = s.strip_suffix(suffix) {
            let f: f64 = num.trim().parse().map_err(|_| bad())?;
            return Ok((f * mul) as u64);
        }
    }
    s.parse().map_err(|_| bad())
}

fn parse_args(argv: &[String]) -> Result<Args, String> {
    let server = match argv.first().map(String::as_str) {
        Some("server") => true,
        Some("client") => false,
        _ => return Err("the mode must be server or client".into()),
    };
    let mut a = Args {
        server,
        addr: "127.0.0.1:5001".into(),
        bytes: 10 << 20,
        streams: 1,
        msg_size: 1200,
        timeout: Duration::from_secs(120),
        unordered: false,
        verify: false,
        echo: false,
        idata: false,
        sctp_port: DEFAULT_SCTP_PORT,
        peer_sctp_port: None,
        mtu: None,
        debug: false,
        loss_percent: 0.0,
        loss_seed: 1,
        timing_log: None,
    };
    let mut it = argv[1..].iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{flag} needs a value"))
        };
        let num = |v: String| -> Result<u64, String> {
            v.parse().map_err(|_| format!("{flag}: bad number {v:?}"))
        };
        match flag.as_str() {
            "--listen" if server => a.addr = value()?,
            "--connect" if !server => a.addr = value()?,
            "--bytes" if !server => a.bytes = parse_size(&value()?)?,
            "--streams" if !server => a.streams = num(value()?)? as usize,
            "--msg-size" if !server => a.msg_size = num(value()?)? as usize,
            "--unordered" if !server => a.unordered = true,
            "--peer-sctp-port" if !server => a.peer_sctp_port = Some(num(value()?)? as u16),
            "--echo" if server => a.echo = true,
            "--timing-log" if server => a.timing_log = Some(value()?),
            "--discard" if server => a.echo = false,
            "--verify" => a.verify = true,
            "--idata" => a.idata = true,
            "--debug" => a.debug = true,
            "--loss" => {
                let v = value()?;
                a.loss_percent = v
                    .parse::<f64>()
                    .ok()
                    .filter(|p| (0.0..=100.0).contains(p))
                    .ok_or_else(|| format!("--loss: {v:?} is not a percentage"))?;
            }
            "--loss-seed" => a.loss_seed = num(value()?)?,
            "--sctp-port" => a.sctp_port = num(value()?)? as u16,
            "--mtu" => a.mtu = Some(num(value()?)? as usize),
            "--timeout" => {
                let v = value()?;
                let secs: f64 = v
                    .parse()
                    .map_err(|_| format!("--timeout: bad number {v:?}"))?;
                a.timeout = Duration::from_secs_f64(secs.max(0.0));
            }
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(a)
}

// ------------------------------------------------------------------ message format

/// `base[j] = j mod 251`, long enough for the payload of any message.
fn pattern_base() -> Vec<u8> {
    (0..PATTERN_MOD + MAX_RECV_MSG_SIZE)
        .map(|j| (j % PATTERN_MOD) as u8)
        .collect()
}

/// Where the payload of message `seq` on `stream` starts in the pattern.
fn pattern_start(stream: u16, seq: u64) -> usize {
    ((13 * (seq % PATTERN_MOD as u64) + 7 * u64::from(stream)) % PATTERN_MOD as u64) as usize
}

/// Builds one message of `len` bytes (`len >= HDR_LEN`).
fn build_message(
    base: &[u8],
    len: usize,
    stream: u16,
    seq: u64,
    flags: u8,
    nstreams: u16,
) -> Vec<u8> {
    let mut m = Vec::with_capacity(len);
    m.extend_from_slice(&stream.to_be_bytes());
    m.push(flags);
    m.push(FORMAT_VERSION);
    m.extend_from_slice(&(len as u32).to_be_bytes());
    m.extend_from_slice(&seq.to_be_bytes());
    m.extend_from_slice(&nstreams.to_be_bytes());
    m.extend_from_slice(&[0, 0]);
    let start = pattern_start(stream, seq);
    m.extend_from_slice(&base[start..start + len - HDR_LEN]);
    m
}

/// What a verifying receiver knows about one stream.
#[derive(Default)]
struct StreamCheck {
    /// Ordered: the next expected seq.
    next: u64,
    /// Unordered: the seqs received so far.
    seen: Vec<bool>,
    /// Messages received.
    count: u64,
    /// The seq of the `LAST` message, once received.
    last: Option<u64>,
}

/// Checks received messages against FORMAT.md; keeps the first error.
struct Verifier {
    base: Vec<u8>,
    streams: BTreeMap<u16, StreamCheck>,
    nstreams: Option<u16>,
    error: Option<String>,
}

impl Verifier {
    fn new() -> Self {
        Verifier {
            base: pattern_base(),
            streams: BTreeMap::new(),
            nstreams: None,
            error: None,
        }
    }

    /// Checks one message received on stream `sid`; the first failure sticks.
    fn check(&mut self, sid: u16, m: &[u8]) {
        if self.error.is_none()
            && let Err(e) = self.check_one(sid, m)
        {
            self.error = Some(e);
        }
    }

    fn check_one(&mut self, sid: u16, m: &[u8]) -> Result<(), String> {
        if m.len() < HDR_LEN {
            return Err(format!("stream {sid}: short message ({} bytes)", m.len()));
        }
        if m.len() > MAX_RECV_MSG_SIZE {
            return Err(format!("stream {sid}: {} bytes, over 1 MiB", m.len()));
        }
        let be16 = |o: usize| u16::from_be_bytes([m[o], m[o + 1]]);
        let stream = be16(0);
        let flags = m[2];
        let length = u32::from_be_bytes([m[4], m[5], m[6], m[7]]) as usize;
        let seq = u64::from_be_bytes(m[8..16].try_into().expect("8 bytes"));
        let nstreams = be16(16);
        if m[3] != FORMAT_VERSION || be16(18) != 0 || flags & !(FLAG_LAST | FLAG_UNORDERED) != 0 {
            return Err(format!("stream {sid}: bad header {:02x?}", &m[..HDR_LEN]));
        }
        if stream != sid {
            return Err(format!(
                "message for stream {stream} arrived on stream {sid}"
            ));
        }
        if length != m.len() {
            return Err(format!(
                "stream {sid} seq {seq}: length field {length}, message {} bytes",
                m.len()
            ));
        }
        match self.nstreams {
            None => self.nstreams = Some(nstreams),
            Some(n) if n != nstreams => {
                return Err(format!(
                    "stream {sid} seq {seq}: nstreams {nstreams}, expected {n}"
                ));
            }
            Some(_) => {}
        }
        if sid >= nstreams {
            return Err(format!("stream {sid} >= nstreams {nstreams}"));
        }
        let start = pattern_start(stream, seq);
        let want = &self.base[start..start + m.len() - HDR_LEN];
        if let Some(i) = want.iter().zip(&m[HDR_LEN..]).position(|(w, g)| w != g) {
            return Err(format!(
                "stream {sid} seq {seq}: payload byte {i} is {}, want {}",
                m[HDR_LEN + i],
                want[i]
            ));
        }
        let st = self.streams.entry(sid).or_default();
        if flags & FLAG_UNORDERED == 0 {
            if seq != st.next {
                return Err(format!(
                    "stream {sid}: ordered seq {seq}, expected {}",
                    st.next
                ));
            }
            st.next += 1;
        } else {
            let i =
                usize::try_from(seq).map_err(|_| format!("stream {sid}: seq {seq} too large"))?;
            if st.seen.len() <= i {
                st.seen.resize(i + 1024, false);
            }
            if st.seen[i] {
                return Err(format!("stream {sid}: duplicate seq {seq}"));
            }
            st.seen[i] = true;
        }
        if let Some(last) = st.last
            && seq > last
        {
            return Err(format!("stream {sid}: seq {seq} after LAST {last}"));
        }
        st.count += 1;
        if flags & FLAG_LAST != 0 {
            if st.last.is_some() {
                return Err(format!("stream {sid}: second LAST"));
            }
            st.last = Some(seq);
        }
        Ok(())
    }

    /// Every stream `0..nstreams` has its `LAST` and every seq up to it exactly once.
    fn complete(&self) -> bool {
        let Some(n) = self.nstreams else { return false };
        self.error.is_none()
            && self.streams.len() == usize::from(n)
            && self
                .streams
                .values()
                .all(|st| st.last.is_some_and(|last| st.count == last + 1))
    }

    /// Ok when complete, else what is wrong or missing.
    fn result(&self) -> Result<(), String> {
        if let Some(e) = &self.error {
            return Err(e.clone());
        }
        if self.complete() {
            return Ok(());
        }
        let Some(n) = self.nstreams else {
            return Err("incomplete: no message received".into());
        };
        let missing: Vec<String> = (0..n)
            .filter_map(|i| match self.streams.get(&i) {
                None => Some(format!("stream {i}: nothing")),
                Some(st) => match st.last {
                    None => Some(format!("stream {i}: no LAST after {} msgs", st.count)),
                    Some(last) if st.count != last + 1 => {
                        Some(format!("stream {i}: {} of {} msgs", st.count, last + 1))
                    }
                    Some(_) => None,
                },
            })
            .collect();
        Err(format!("incomplete: {}", missing.join("; ")))
    }
}

// ------------------------------------------------------------------ JSON summary

/// The one-line JSON summary every interop peer prints (FORMAT.md).
struct Summary {
    role: &'static str,
    mode: &'static str,
    bytes_sent: u64,
    msgs_sent: u64,
    bytes_recv: u64,
    msgs_recv: u64,
    streams: usize,
    unordered: bool,
    elapsed_s: f64,
    gbit_per_s: f64,
}

/// Quotes a string for JSON.
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Prints the summary (`ok` iff `result` is Ok) and returns the exit status.
fn finish(s: &Summary, result: Result<(), String>) -> ExitCode {
    let error = result.as_ref().err().cloned().unwrap_or_default();
    println!(
        "{{\"peer\":\"dcsctp\",\"role\":\"{}\",\"ok\":{},\"mode\":\"{}\",\"bytes_sent\":{},\
         \"msgs_sent\":{},\"bytes_recv\":{},\"msgs_recv\":{},\"streams\":{},\"unordered\":{},\
         \"elapsed_s\":{:.6},\"gbit_per_s\":{:.6},\"error\":{}}}",
        s.role,
        result.is_ok(),
        s.mode,
        s.bytes_sent,
        s.msgs_sent,
        s.bytes_recv,
        s.msgs_recv,
        s.streams,
        s.unordered,
        s.elapsed_s,
        s.gbit_per_s,
        json_string(&error)
    );
    if result.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

// ------------------------------------------------------------------ the UDP driver

/// `--debug`: dcSCTP logs (through the `log` facade) every packet it sends and receives as a
/// hex dump, and its state changes; this prints them on stderr.
struct StderrLog;

impl log::Log for StderrLog {
    fn enabled(&self, _: &log::Metadata<'_>) -> bool {
        true
    }
    fn log(&self, record: &log::Record<'_>) {
        eprintln!("{} {}: {}", record.level(), record.target(), record.args());
    }
    fn flush(&self) {}
}

/// `--loss`: drops a given share of datagrams, in each direction, by a seeded pseudo-random
/// sequence (xorshift64*), so a lossy run can be repeated exactly.
struct Loss {
    /// Drop when the next 53-bit draw, as a fraction of 2^53, is below this.
    threshold: f64,
    state: u64,
    dropped_in: u64,
    dropped_out: u64,
}

impl Loss {
    fn new(percent: f64, seed: u64) -> Self {
        Loss {
            threshold: percent / 100.0,
            // xorshift's state must not be zero.
            state: seed.max(1),
            dropped_in: 0,
            dropped_out: 0,
        }
    }

    /// Whether to drop the next datagram.
    fn drop_next(&mut self) -> bool {
        if self.threshold <= 0.0 {
            return false;
        }
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        let draw = self.state.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 11;
        (draw as f64) / ((1u64 << 53) as f64) < self.threshold
    }
}

/// One dcSCTP socket, the UDP socket that carries its packets, and the peer's address.
struct Driver {
    sctp: Box<dyn DcSctpSocket>,
    udp: UdpSocket,
    peer: SocketAddr,
    /// The socket's epoch: `SocketTime` counts from here.
    epoch: Instant,
    buf: Vec<u8>,
    connected: bool,
    closed: bool,
    aborted: Option<String>,
    debug: bool,
    loss: Loss,
    /// Whether the UDP socket is in non-blocking mode.
    nonblocking: bool,
}

impl Driver {
    fn new(options: &Options, udp: UdpSocket, peer: SocketAddr, args: &Args) -> Self {
        Driver {
            sctp: dcsctp::new_socket("dcsctp-peer", options),
            udp,
            peer,
            // This program is a driver: it owns the clock it gives the sans-IO socket.
            #[allow(clippy::disallowed_methods)]
            epoch: Instant::now(),
            buf: vec![0; 65536],
            connected: false,
            closed: false,
            aborted: None,
            debug: args.debug,
            loss: Loss::new(args.loss_percent, args.loss_seed),
            nonblocking: false,
        }
    }

    /// `--loss` applies only while the association is established: not to the handshake, and
    /// not to the shutdown, whose last packet (SHUTDOWN-COMPLETE) is never retransmitted and
    /// whose sender has exited by the time the other side's T2 timer fires.
    fn lossy(&self) -> bool {
        self.loss.threshold > 0.0 && self.sctp.state() == SocketState::Connected
    }

    fn now(&self) -> SocketTime {
        SocketTime::zero() + self.epoch.elapsed()
    }

    /// Sends the packets dcSCTP queued and notes its state changes.
    fn flush_events(&mut self) {
        while let Some(ev) = self.sctp.poll_event() {
            match ev {
                SocketEvent::SendPacket(_) if self.lossy() && self.loss.drop_next() => {
                    self.loss.dropped_out += 1;
                }
                SocketEvent::SendPacket(p) => {
                    // A send error (e.g. the peer's port unreachable) is loss to SCTP.
                    if let Err(e) = self.udp.send_to(&p, self.peer)
                        && self.debug
                    {
                        eprintln!("dcsctp-peer: send: {e}");
                    }
                }
                SocketEvent::OnConnected() => self.connected = true,
                SocketEvent::OnClosed() => self.closed = true,
                SocketEvent::OnAborted(kind, reason) => {
                    self.aborted = Some(format!("association aborted: {kind:?}: {reason}"));
                }
                SocketEvent::OnConnectionRestarted() => {
                    eprintln!("dcsctp-peer: the peer restarted the association");
                }
                SocketEvent::OnError(kind, reason) if self.debug => {
                    eprintln!("dcsctp-peer: dcSCTP error {kind:?}: {reason}");
                }
                // Non-fatal errors (without --debug), buffered-amount, stream-reset and
                // lifecycle events: this program does not use them.
                _ => {}
            }
        }
    }

    /// Receives one datagram from the peer (others are dropped) within `wait`, or none.
    fn recv(&mut self, wait: Option<Duration>) -> io::Result<Option<usize>> {
        // Switch O_NONBLOCK only when the mode changes (one syscall less per datagram).
        if self.nonblocking != wait.is_none() {
            self.nonblocking = wait.is_none();
            self.udp.set_nonblocking(self.nonblocking)?;
        }
        if let Some(d) = wait {
            self.udp.set_read_timeout(Some(d))?;
        }
        loop {
            match self.udp.recv_from(&mut self.buf) {
                Ok((_, from)) if from == self.peer && self.lossy() && self.loss.drop_next() => {
                    self.loss.dropped_in += 1;
                }
                Ok((n, from)) if from == self.peer => return Ok(Some(n)),
                Ok(_) => continue,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::ConnectionRefused
                    ) =>
                {
                    return Ok(None);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// Runs the timers, waits for datagrams until the next timer (at most `MAX_WAIT`), feeds
    /// them to dcSCTP and sends what it answers.
    fn pump(&mut self) -> io::Result<()> {
        let now = self.now();
        self.sctp.advance_time(now);
        self.flush_events();
        let next = self.sctp.poll_timeout();
        let wait = if next > now {
            (next - now).min(MAX_WAIT)
        } else {
            Duration::ZERO
        };
        // SO_RCVTIMEO cannot be zero (that means "forever"): poll without blocking instead.
        let first = if wait >= Duration::from_micros(10) {
            self.recv(Some(wait))?
        } else {
            self.recv(None)?
        };
        if let Some(n) = first {
            self.sctp.handle_input(&self.buf[..n]);
            for _ in 1..MAX_BATCH {
                match self.recv(None)? {
                    Some(n) => self.sctp.handle_input(&self.buf[..n]),
                    None => break,
                }
            }
        }
        self.sctp.advance_time(self.now());
        self.flush_events();
        Ok(())
    }
}

/// A UDP socket bound to `addr`, with `UDP_BUFFER`-sized socket buffers (best effort).
fn bind_udp(addr: SocketAddr) -> Result<UdpSocket, String> {
    use socket2::{Domain, Protocol, Socket, Type};
    let sock = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))
        .map_err(|e| format!("socket: {e}"))?;
    // Best effort: a smaller buffer only means more drops under bursts.
    let _ = sock.set_recv_buffer_size(UDP_BUFFER);
    let _ = sock.set_send_buffer_size(UDP_BUFFER);
    sock.bind(&addr.into())
        .map_err(|e| format!("bind {addr}: {e}"))?;
    Ok(sock.into())
}

/// One stderr line on what the association negotiated (whether I-DATA is in use shows whether
/// the peer listed I_DATA too).
fn report_association(sctp: &dyn DcSctpSocket) {
    if let Some(m) = sctp.get_metrics() {
        eprintln!(
            "dcsctp-peer: association up: peer implementation {:?}, I-DATA {}, streams out/in {}/{}",
            m.peer_implementation,
            if m.uses_message_interleaving {
                "on"
            } else {
                "off"
            },
            m.negotiated_maximum_outgoing_streams,
            m.negotiated_maximum_incoming_streams
        );
    }
}

impl Drop for Driver {
    /// With `--loss`, says on stderr how many datagrams it dropped.
    fn drop(&mut self) {
        if self.loss.threshold > 0.0 {
            eprintln!(
                "dcsctp-peer: --loss dropped {} received and {} outgoing datagrams",
                self.loss.dropped_in, self.loss.dropped_out
            );
        }
    }
}

fn resolve(addr: &str) -> Result<SocketAddr, String> {
    addr.to_socket_addrs()
        .map_err(|e| format!("{addr}: {e}"))?
        .next()
        .ok_or_else(|| format!("{addr}: no address"))
}

/// dcSCTP's options for this run: its defaults, the SCTP ports, I-DATA on or off.
fn options(args: &Args, local_port: u16, remote_port: u16) -> Options {
    let mut o = Options {
        local_port,
        remote_port,
        // Messages up to FORMAT.md's limit (dcSCTP's default is 256 KiB anyway).
        max_message_size: MAX_MSG_SIZE.max(Options::default().max_message_size),
        // RFC 8260 I-DATA: dcSCTP offers it (Supported Extensions lists I_DATA, I_FORWARD_TSN)
        // and uses it only if the peer lists it too; off, it sends DATA.
        enable_message_interleaving: args.idata,
        ..Options::default()
    };
    if let Some(mtu) = args.mtu {
        o.mtu = mtu;
    }
    o
}

/// Sum of what dcSCTP still holds in its send queue for `streams`.
fn buffered(sctp: &dyn DcSctpSocket, streams: impl Iterator<Item = u16>) -> usize {
    streams.map(|s| sctp.buffered_amount(StreamId(s))).sum()
}

// ------------------------------------------------------------------ server

fn run_server(args: &Args) -> ExitCode {
    let mode = match (args.echo, args.verify) {
        (false, false) => "discard",
        (false, true) => "verify",
        (true, false) => "echo",
        (true, true) => "echo+verify",
    };
    let mut sum = Summary {
        role: "server",
        mode,
        bytes_sent: 0,
        msgs_sent: 0,
        bytes_recv: 0,
        msgs_recv: 0,
        streams: 0,
        unordered: false,
        elapsed_s: 0.0,
        gbit_per_s: 0.0,
    };
    let result = serve(args, &mut sum);
    finish(&sum, result)
}

fn serve(args: &Args, sum: &mut Summary) -> Result<(), String> {
    #[allow(clippy::disallowed_methods)] // the driver's own deadline
    let deadline = Instant::now() + args.timeout;
    let udp = bind_udp(resolve(&args.addr)?)?;
    eprintln!(
        "dcsctp-peer (dcsctp {}) server listening on {}",
        dcsctp::version(),
        udp.local_addr().map_err(|e| e.to_string())?
    );
    // Lock onto the first sender; answer on the SCTP ports its first packet carries.
    let mut buf = vec![0u8; 65536];
    udp.set_read_timeout(Some(args.timeout.max(Duration::from_millis(1))))
        .map_err(|e| e.to_string())?;
    let (n, peer) = udp
        .recv_from(&mut buf)
        .map_err(|e| format!("timeout waiting for a peer ({e})"))?;
    if n < 12 {
        return Err(format!(
            "first datagram from {peer} is not an SCTP packet ({n} bytes)"
        ));
    }
    let src_port = u16::from_be_bytes([buf[0], buf[1]]);
    let dst_port = u16::from_be_bytes([buf[2], buf[3]]);
    if dst_port != args.sctp_port {
        eprintln!(
            "dcsctp-peer: warning: peer sent to SCTP port {dst_port}, not {}: answering on {dst_port}",
            args.sctp_port
        );
    }
    // (`--loss` never drops this first datagram: it is read before the driver exists.)
    let mut d = Driver::new(&options(args, dst_port, src_port), udp, peer, args);
    d.sctp.handle_input(&buf[..n]);
    d.flush_events();

    let mut timing = match &args.timing_log {
        Some(p) => Some(io::BufWriter::new(
            std::fs::File::create(p).map_err(|e| format!("{p}: {e}"))?,
        )),
        None => None,
    };
    let mut verifier = Verifier::new();
    // Streams messages arrived on (an echoing server's send queue holds data on these).
    let mut streams_seen: BTreeSet<u16> = BTreeSet::new();
    let mut start = None;
    let mut first_error: Option<String> = None;
    loop {
        #[allow(clippy::disallowed_methods)]
        let now = Instant::now();
        if now > deadline {
            return Err(format!(
                "timeout after {:?} (state {:?})",
                args.timeout,
                d.sctp.state()
            ));
        }
        d.pump().map_err(|e| format!("udp: {e}"))?;
        if start.is_none() && d.connected {
            start = Some(now);
            report_association(&*d.sctp);
        }
        // Deliver; an echoing server takes messages only while its send queue has room, so
        // a slow echo leaves them in dcSCTP's reassembly queue and closes the receive window.
        let mut queued = if args.echo {
            buffered(&*d.sctp, streams_seen.iter().copied())
        } else {
            0
        };
        while queued < SEND_HIGH_WATER {
            let Some(m) = d.sctp.get_next_message() else {
                break;
            };
            sum.msgs_recv += 1;
            sum.bytes_recv += m.payload.len() as u64;
            streams_seen.insert(m.stream_id.0);
            if let Some(t) = &mut timing {
                log_timing(t, m.stream_id.0, &m.payload).map_err(|e| format!("timing log: {e}"))?;
            }
            if args.verify {
                verifier.check(m.stream_id.0, &m.payload);
            }
            if args.echo {
                let len = m.payload.len();
                let echo = Message::new(m.stream_id, PPID_BINARY, m.payload);
                match d.sctp.send(echo, &SendOptions::default()) {
                    Ok(()) => {
                        sum.msgs_sent += 1;
                        sum.bytes_sent += len as u64;
                        queued += len;
                    }
                    Err(e) => {
                        first_error.get_or_insert(format!("echo send: {e}"));
                    }
                }
            }
        }
        d.flush_events();
        if let Some(e) = d.aborted.take() {
            return Err(e);
        }
        if d.closed {
            break;
        }
    }
    if let Some(t) = &mut timing {
        t.flush().map_err(|e| format!("timing log: {e}"))?;
    }
    #[allow(clippy::disallowed_methods)]
    let elapsed = start.map_or(0.0, |s| s.elapsed().as_secs_f64());
    sum.elapsed_s = elapsed;
    if elapsed > 0.0 {
        sum.gbit_per_s = sum.bytes_recv as f64 * 8.0 / elapsed / 1e9;
    }
    sum.streams = streams_seen.len();
    if let Some(e) = first_error {
        return Err(e);
    }
    if args.verify {
        verifier.result()?;
        sum.streams = usize::from(verifier.nstreams.unwrap_or(0));
    }
    Ok(())
}

/// `--timing-log`: one line `stream seq length t_ns` per message, `t_ns` the time the
/// application got it, in ns since the Unix epoch (CLOCK_REALTIME, the clock `braid perf
/// client --timing-log` uses: processes on one host share it across network namespaces).
fn log_timing(out: &mut impl Write, sid: u16, m: &[u8]) -> io::Result<()> {
    #[allow(clippy::disallowed_methods)] // a clock shared with the sender's process
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    // The header's seq if there is one (a short message logs seq 0; the verifier reports it).
    let seq = m
        .get(8..16)
        .map_or(0, |b| u64::from_be_bytes(b.try_into().expect("8 bytes")));
    writeln!(out, "{sid} {seq} {} {t}", m.len())
}

// ------------------------------------------------------------------ client

fn run_client(args: &Args) -> ExitCode {
    let mut sum = Summary {
        role: "client",
        mode: if args.verify { "echo+verify" } else { "send" },
        bytes_sent: 0,
        msgs_sent: 0,
        bytes_recv: 0,
        msgs_recv: 0,
        streams: args.streams,
        unordered: args.unordered,
        elapsed_s: 0.0,
        gbit_per_s: 0.0,
    };
    let result = send_run(args, &mut sum);
    finish(&sum, result)
}

fn send_run(args: &Args, sum: &mut Summary) -> Result<(), String> {
    if !(HDR_LEN..=MAX_MSG_SIZE).contains(&args.msg_size) {
        return Err(format!("--msg-size must be in {HDR_LEN}..{MAX_MSG_SIZE}"));
    }
    if !(1..=65535).contains(&args.streams) {
        return Err("--streams must be in 1..65535".into());
    }
    let msg_size = args.msg_size as u64;
    let count = args.bytes.div_ceil(msg_size);
    let k = args.streams as u64;
    if count < k {
        return Err(format!(
            "{count} messages for {k} streams: every stream needs one"
        ));
    }
    #[allow(clippy::disallowed_methods)] // the driver's own deadline
    let deadline = Instant::now() + args.timeout;
    let timed_out = || {
        #[allow(clippy::disallowed_methods)]
        let late = Instant::now() > deadline;
        late
    };
    let peer = resolve(&args.addr)?;
    let any: SocketAddr = if peer.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    }
    .parse()
    .expect("literal address");
    let udp = bind_udp(any)?;
    let peer_port = args.peer_sctp_port.unwrap_or(args.sctp_port);
    let mut d = Driver::new(&options(args, args.sctp_port, peer_port), udp, peer, args);
    d.sctp.connect();
    d.flush_events();
    while !d.connected {
        if let Some(e) = d.aborted.take() {
            return Err(e);
        }
        if timed_out() {
            return Err(format!("timeout connecting (state {:?})", d.sctp.state()));
        }
        d.pump().map_err(|e| format!("udp: {e}"))?;
    }
    report_association(&*d.sctp);

    let base = pattern_base();
    let mut verifier = Verifier::new();
    let send_options = SendOptions {
        unordered: args.unordered,
        ..SendOptions::default()
    };
    let unordered_flag = if args.unordered { FLAG_UNORDERED } else { 0 };
    #[allow(clippy::disallowed_methods)]
    let start = Instant::now();
    let mut next: u64 = 0;
    let mut acked = false;
    loop {
        if let Some(e) = d.aborted.take() {
            return Err(e);
        }
        if timed_out() {
            let outstanding = d.sctp.get_metrics().map_or(0, |m| m.unack_data_count);
            return Err(if acked {
                format!(
                    "timeout waiting for the echo: {}",
                    verifier.result().err().unwrap_or_default()
                )
            } else {
                format!("timeout waiting for acks, {outstanding} chunks outstanding")
            });
        }
        while let Some(m) = d.sctp.get_next_message() {
            sum.msgs_recv += 1;
            sum.bytes_recv += m.payload.len() as u64;
            if args.verify {
                verifier.check(m.stream_id.0, &m.payload);
            }
        }
        // Keep up to SEND_HIGH_WATER bytes queued in dcSCTP.
        if next < count {
            let mut queued = buffered(&*d.sctp, 0..args.streams as u16);
            while next < count && queued < SEND_HIGH_WATER {
                let stream = (next % k) as u16;
                let seq = next / k;
                let len = if next == count - 1 {
                    (args.bytes - (count - 1) * msg_size).max(HDR_LEN as u64)
                } else {
                    msg_size
                } as usize;
                let flags = unordered_flag | if next + k >= count { FLAG_LAST } else { 0 };
                let payload = build_message(&base, len, stream, seq, flags, k as u16);
                d.sctp
                    .send(
                        Message::new(StreamId(stream), PPID_BINARY, payload),
                        &send_options,
                    )
                    .map_err(|e| format!("send stream {stream} seq {seq}: {e}"))?;
                sum.msgs_sent += 1;
                sum.bytes_sent += len as u64;
                queued += len;
                next += 1;
            }
            d.flush_events();
        }
        // Everything sent and acknowledged: dcSCTP counts queued and unacknowledged chunks.
        if !acked
            && next == count
            && d.sctp
                .get_metrics()
                .is_some_and(|m| m.unack_data_count == 0)
        {
            acked = true;
            sum.elapsed_s = start.elapsed().as_secs_f64();
        }
        if acked && (!args.verify || verifier.complete() || verifier.error.is_some()) {
            break;
        }
        d.pump().map_err(|e| format!("udp: {e}"))?;
    }
    if args.verify {
        sum.elapsed_s = start.elapsed().as_secs_f64();
        verifier.result().map_err(|e| format!("echo verify: {e}"))?;
    }
    if sum.elapsed_s > 0.0 {
        sum.gbit_per_s = sum.bytes_sent as f64 * 8.0 / sum.elapsed_s / 1e9;
    }
    // Graceful SHUTDOWN; OnClosed comes with the SHUTDOWN-COMPLETE dcSCTP sends.
    d.sctp.shutdown();
    d.flush_events();
    while !d.closed {
        if let Some(e) = d.aborted.take() {
            return Err(format!("shutdown: {e}"));
        }
        if timed_out() {
            return Err(format!("timeout in shutdown (state {:?})", d.sctp.state()));
        }
        d.pump().map_err(|e| format!("udp: {e}"))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse_args(&argv) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("dcsctp-peer: {e}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if args.debug {
        // The only logger of this process; a second set_logger cannot happen.
        let _ = log::set_logger(&StderrLog);
        log::set_max_level(log::LevelFilter::Info);
    }
    if args.server {
        run_server(&args)
    } else {
        run_client(&args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The messages of a run (FORMAT.md "How a run sends messages"), as (stream, bytes).
    fn run_messages(total: u64, size: u64, k: u64, unordered: bool) -> Vec<(u16, Vec<u8>)> {
        let base = pattern_base();
        let count = total.div_ceil(size);
        (0..count)
            .map(|j| {
                let len = if j == count - 1 {
                    (total - (count - 1) * size).max(HDR_LEN as u64)
                } else {
                    size
                } as usize;
                let mut flags = if unordered { FLAG_UNORDERED } else { 0 };
                if j + k >= count {
                    flags |= FLAG_LAST;
                }
                let stream = (j % k) as u16;
                (
                    stream,
                    build_message(&base, len, stream, j / k, flags, k as u16),
                )
            })
            .collect()
    }

    #[test]
    fn header_and_pattern_follow_format_md() {
        let m = build_message(&pattern_base(), 25, 2, 3, FLAG_LAST, 4);
        assert_eq!(
            &m[..HDR_LEN],
            &[0, 2, 1, 1, 0, 0, 0, 25, 0, 0, 0, 0, 0, 0, 0, 3, 0, 4, 0, 0]
        );
        // payload[i] = (i + 13*seq + 7*stream) mod 251 = (i + 53) mod 251
        assert_eq!(&m[HDR_LEN..], &[53, 54, 55, 56, 57]);
    }

    #[test]
    fn a_whole_run_verifies_in_order_and_shuffled_when_unordered() {
        let mut v = Verifier::new();
        for (s, m) in run_messages(100_000, 1200, 3, false) {
            v.check(s, &m);
        }
        assert_eq!(v.result(), Ok(()));

        let mut msgs = run_messages(100_000, 1200, 3, true);
        msgs.reverse();
        let mut v = Verifier::new();
        for (s, m) in &msgs {
            v.check(*s, m);
        }
        assert_eq!(v.result(), Ok(()));
    }

    #[test]
    fn errors_are_caught() {
        let msgs = run_messages(10_000, 1000, 2, false);
        // A missing message.
        let mut v = Verifier::new();
        for (s, m) in msgs.iter().filter(|(_, m)| m[15] != 1) {
            v.check(*s, m);
        }
        assert!(v.result().is_err());
        // A corrupt payload byte.
        let mut v = Verifier::new();
        for (i, (s, m)) in msgs.iter().enumerate() {
            let mut m = m.clone();
            if i == 3 {
                m[500] ^= 1;
            }
            v.check(*s, &m);
        }
        assert!(v.result().unwrap_err().contains("payload byte 480"));
        // Out of order on an ordered stream.
        let mut v = Verifier::new();
        v.check(msgs[2].0, &msgs[2].1);
        assert!(
            v.result()
                .unwrap_err()
                .contains("ordered seq 1, expected 0")
        );
        // Wrong stream.
        let mut v = Verifier::new();
        v.check(1, &msgs[0].1);
        assert!(v.result().is_err());
        // Incomplete run.
        let v = Verifier::new();
        assert!(v.result().is_err());
    }

    #[test]
    fn timing_log_lines_and_1_mib_messages() {
        let mut v = Verifier::new();
        let big = build_message(&pattern_base(), MAX_RECV_MSG_SIZE, 0, 0, FLAG_LAST, 1);
        v.check(0, &big);
        assert_eq!(v.result(), Ok(()));
        let mut out = Vec::new();
        log_timing(&mut out, 0, &big).unwrap();
        let line = String::from_utf8(out).unwrap();
        let f: Vec<&str> = line.trim_end().split(' ').collect();
        assert_eq!(f[..3], ["0", "0", "1048576"]);
        assert!(f[3].parse::<u128>().unwrap() > 1_600_000_000_000_000_000);
    }

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_size("2MiB"), Ok(2 << 20));
        assert_eq!(parse_size("10KB"), Ok(10_000));
        assert_eq!(parse_size("1200"), Ok(1200));
        assert!(parse_size("lots").is_err());
    }

    #[test]
    fn loss_drops_about_the_asked_share_and_repeats() {
        let drops = |seed| {
            let mut l = Loss::new(5.0, seed);
            (0..100_000).filter(|_| l.drop_next()).count()
        };
        let n = drops(7);
        assert!((4_500..5_500).contains(&n), "{n}");
        assert_eq!(n, drops(7));
        assert!(!Loss::new(0.0, 1).drop_next());
    }
}
