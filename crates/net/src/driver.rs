//! The endpoint's task: sockets, clock, timer and command channel around the sans-IO core.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::future::poll_fn;
use std::io::{self, IoSliceMut, Write};
use std::net::SocketAddr;
use std::sync::Arc;
use std::task::Poll;

use braid_proto::{AssocId, CloseReason, EndpointConfig, Event, Instant, SendError, SendOptions};
use braid_wire::pcap::PcapWriter;
use bytes::Bytes;
use quinn_udp::{RecvMeta, UdpSocketState};
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::Interest;
use tokio::net::UdpSocket;
use tokio::sync::{mpsc, oneshot};

use crate::shared::{self, Shared};
use crate::{AssocEvent, Error, NetConfig};

/// The answer to a `connect`: the association and its shared queues.
pub(crate) type ConnectReply = oneshot::Sender<Result<(AssocId, Arc<Shared>), Error>>;

/// A request from an API handle.
#[derive(Debug)]
pub(crate) enum Cmd {
    Connect {
        remotes: Vec<SocketAddr>,
        port: u16,
        reply: ConnectReply,
    },
    Accept {
        reply: oneshot::Sender<(AssocId, Arc<Shared>)>,
    },
    Send {
        id: AssocId,
        stream: u16,
        data: Bytes,
        opts: SendOptions,
        reply: oneshot::Sender<Result<(), Error>>,
    },
    /// The shared send queue got its first message, or the receive queue has room again.
    Kick {
        id: AssocId,
    },
    /// A handle read path snapshots the task had skipped: publish them now.
    Refresh {
        id: AssocId,
    },
    /// A run-time setting of one association.
    Control {
        id: AssocId,
        op: Control,
    },
    /// A setting of the path to the peer address `remote`.
    PathPolicy {
        id: AssocId,
        remote: SocketAddr,
        op: PathOp,
        reply: oneshot::Sender<Result<(), Error>>,
    },
    /// Test introspection: (associations in the core, driver entries, waiting accepts).
    #[cfg(feature = "test-util")]
    Counts {
        reply: oneshot::Sender<(usize, usize, usize)>,
    },
    Shutdown {
        id: AssocId,
        reply: oneshot::Sender<CloseReason>,
    },
    Abort {
        id: AssocId,
    },
    Dropped {
        id: AssocId,
    },
    Close {
        reply: Option<oneshot::Sender<()>>,
    },
    /// Fault injection: drop every datagram between these two IPs (both ways) or stop.
    #[cfg(feature = "test-util")]
    Blackhole {
        local: std::net::IpAddr,
        remote: std::net::IpAddr,
        on: bool,
    },
}

/// A run-time setting an API handle asks for (applied to the core as is).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Control {
    Scheduler(braid_proto::SchedulerKind),
    StreamPriority(u16, u16),
    StreamWeight(u16, u16),
    /// (stream, path index) of the fixed stream-to-path mapping.
    StreamPath(u16, u16),
    Cmt(Option<braid_proto::CmtConfig>),
    RtxPolicy(braid_proto::RtxPolicy),
}

/// What [`Cmd::PathPolicy`] sets.
#[derive(Debug, Clone, Copy)]
pub(crate) enum PathOp {
    Primary,
    Standby(bool),
    Forbidden(bool),
    Cost(u32),
    Remove,
}

/// How often at most the task republishes an association's statistics while it is busy.
const PUBLISH_INTERVAL: std::time::Duration = std::time::Duration::from_millis(2);

/// A `send` waiting for room in the send buffer.
#[derive(Debug)]
struct PendingSend {
    stream: u16,
    data: Bytes,
    opts: SendOptions,
    reply: oneshot::Sender<Result<(), Error>>,
}

/// The driver's side of one association: the futures waiting on it.
#[derive(Debug, Default)]
struct Waiters {
    connect: Option<ConnectReply>,
    /// Sends on the slow path (checked by the core), waiting for room.
    sends: VecDeque<PendingSend>,
    shutdowns: Vec<oneshot::Sender<CloseReason>>,
    /// The queues shared with the handle.
    shared: Arc<Shared>,
    /// A graceful shutdown was asked for: it starts once the queued sends are in the core.
    shutdown_pending: bool,
    closed: Option<CloseReason>,
    /// The application dropped its handle (or never took it).
    dropped: bool,
    /// When the statistics were last published.
    published: Option<Instant>,
    /// Something the application sees changed (an event): publish now, not throttled.
    publish_now: bool,
    /// A publication was skipped (throttled) and the handle was told so.
    marked_stale: bool,
    /// The fixed stream-to-path mapping as the application set it (`u16::MAX`: default).
    stream_paths: Vec<u16>,
}

struct Sock {
    io: UdpSocket,
    state: UdpSocketState,
    local: SocketAddr,
}

/// Receive buffers for one `recvmmsg` batch.
#[derive(Default)]
struct RecvBufs {
    buf: Vec<u8>,
    chunk: usize,
    meta: Vec<RecvMeta>,
    /// Datagrams in `meta` from the last batch.
    count: usize,
    /// The next datagram to hand over: index in `meta`, and offset of its next GRO segment
    /// within that datagram.
    next: (usize, usize),
    /// The TSN hint of that segment (see [`RecvBufs::head`]), cached.
    head: Option<Option<u32>>,
    /// Batches read in this call of [`Driver::read`].
    reads: u8,
    /// Nothing more to read in this call of [`Driver::read`].
    drained: bool,
}

impl RecvBufs {
    /// The next segment to hand over, as a byte range of `buf` and its `meta` index.
    fn segment(&self) -> Option<(std::ops::Range<usize>, usize)> {
        let (k, off) = self.next;
        let meta = self.meta.get(..self.count)?.get(k)?;
        let stride = if meta.stride == 0 {
            meta.len
        } else {
            meta.stride
        }
        .max(1);
        let start = k * self.chunk + off;
        let len = stride.min(meta.len.saturating_sub(off));
        Some((start..start + len, k))
    }

    /// Moves past the segment [`RecvBufs::segment`] returned.
    fn advance(&mut self, len: usize) {
        let (k, off) = self.next;
        let total = self.meta.get(k).map_or(0, |m| m.len);
        self.next = if off + len < total && len > 0 {
            (k, off + len)
        } else {
            (k + 1, 0)
        };
        self.head = None;
    }

    /// The TSN of the first DATA chunk of the next segment: `Some(None)` for a segment
    /// without DATA, `None` when the batch is used up.
    fn head(&mut self) -> Option<Option<u32>> {
        if self.head.is_none() {
            let (range, _) = self.segment()?;
            self.head = Some(braid_wire::packet::first_data_tsn(&self.buf[range]));
        }
        self.head
    }
}

/// Bytes of one GSO send at most: the segments travel as one UDP datagram inside the
/// kernel, whose length must fit in 16 bits with the IP and UDP headers (IPv6: 40 + 8).
const GSO_MAX_BYTES: usize = 65535 - 48;

/// A datagram to send, or a GSO batch of `count` datagrams of `seg` bytes (the last may be
/// shorter).
struct OutBatch {
    sock: usize,
    dst: SocketAddr,
    seg: usize,
    count: usize,
    /// The last datagram is shorter than `seg`: nothing can follow it in this batch.
    short: bool,
    /// A lone datagram larger than the path's PMTU, sent without DF (`Transmit::may_fragment`).
    may_fragment: bool,
    buf: Vec<u8>,
}

impl OutBatch {
    /// A batch of one datagram `t` of the contents of `buf`, sent on socket `sock`.
    fn new(sock: usize, t: &braid_proto::Transmit, buf: Vec<u8>) -> Self {
        Self {
            sock,
            dst: t.remote,
            seg: t.size,
            count: 1,
            short: false,
            may_fragment: t.may_fragment,
            buf,
        }
    }

    /// Whether a datagram of `size` bytes may follow the first `len` bytes of this batch
    /// (GSO: equal segments, only the last one shorter, at most `max` of them).
    fn takes(&self, size: usize, max: usize, len: usize) -> bool {
        size <= self.seg
            && !self.short
            && !self.may_fragment
            && self.count < max
            && len + size <= GSO_MAX_BYTES
    }

    /// Counts a datagram of `size` bytes just appended.
    fn add(&mut self, size: usize) {
        self.count += 1;
        self.short = size < self.seg;
    }
}

/// The endpoint's task.
pub(crate) struct Driver {
    ep: braid_proto::Endpoint,
    socks: Vec<Sock>,
    epoch: std::time::Instant,
    cmds: mpsc::UnboundedReceiver<Cmd>,
    waiters: BTreeMap<AssocId, Waiters>,
    /// Associations with input since the last `service` (datagram, event, command): only
    /// these are looked at, so the work per datagram does not grow with their number.
    busy: BTreeSet<AssocId>,
    accept_waiters: VecDeque<oneshot::Sender<(AssocId, Arc<Shared>)>>,
    incoming: VecDeque<AssocId>,
    pcap: Option<PcapWriter<Box<dyn Write + Send>>>,
    /// Decision traces, one JSON-lines file per association.
    trace: Option<braid_proto::JsonLines<std::io::BufWriter<std::fs::File>>>,
    closing: Option<Vec<oneshot::Sender<()>>>,
    /// Fault injection: (local IP, remote IP) pairs whose datagrams are dropped.
    blackholes: Vec<(std::net::IpAddr, std::net::IpAddr)>,
    /// One receive batch per socket.
    rx: Vec<RecvBufs>,
    /// Datagrams (GSO batches) waiting to be sent.
    out: Vec<OutBatch>,
    /// Index in `out` of the batch that took the last datagram.
    out_last: Option<usize>,
    /// Spare batch buffers.
    free_bufs: Vec<Vec<u8>>,
    /// Largest message the core accepts (for the handles' own checks).
    max_message: usize,
    /// Capacities of the shared send and receive queues.
    send_cap: usize,
    recv_cap: usize,
}

impl Drop for Driver {
    fn drop(&mut self) {
        // Nothing will fill the queues any more: wake whatever waits on them.
        for w in self.waiters.values() {
            w.shared.close(CloseReason::LocalAbort);
        }
    }
}

fn bind_socket(addr: SocketAddr, buffer: usize) -> io::Result<Sock> {
    let s = Socket::new(Domain::for_address(addr), Type::DGRAM, Some(Protocol::UDP))?;
    if addr.is_ipv6() {
        s.set_only_v6(true)?;
    }
    // Best effort: the kernel clamps to its maximum.
    let _ = s.set_send_buffer_size(buffer);
    let _ = s.set_recv_buffer_size(buffer);
    s.set_nonblocking(true)?;
    // ICMP errors about our datagrams (unreachable, too big) land in the socket's error
    // queue, which `Driver::drain_errors` hands to the core. Best effort.
    let _ = if addr.is_ipv4() {
        nix::sys::socket::setsockopt(&s, nix::sys::socket::sockopt::Ipv4RecvErr, &true)
    } else {
        nix::sys::socket::setsockopt(&s, nix::sys::socket::sockopt::Ipv6RecvErr, &true)
    };
    // The error names the address (the kind stays, for callers that match on it).
    s.bind(&addr.into())
        .map_err(|e| io::Error::new(e.kind(), format!("bind {addr}: {e}")))?;
    let std: std::net::UdpSocket = s.into();
    let io = UdpSocket::from_std(std)?;
    let state = UdpSocketState::new((&io).into())?;
    let local = io.local_addr()?;
    Ok(Sock { io, state, local })
}

impl Driver {
    pub(crate) fn new(
        cfg: EndpointConfig,
        addrs: &[SocketAddr],
        net: NetConfig,
        cmds: mpsc::UnboundedReceiver<Cmd>,
    ) -> io::Result<(Self, Vec<SocketAddr>)> {
        // Refused before any socket is bound: nothing to undo.
        cfg.validate().map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("invalid configuration: {e}"),
            )
        })?;
        let Some(first) = addrs.first() else {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "no local address to bind",
            ));
        };
        let mut socks = vec![bind_socket(*first, net.socket_buffer)?];
        let port = socks[0].local.port();
        for a in &addrs[1..] {
            socks.push(bind_socket(
                SocketAddr::new(a.ip(), port),
                net.socket_buffer,
            )?);
        }
        // Two independent 256-bit seeds: tags and TSNs, and cookie secrets.
        let (mut seed, mut secret_seed) = ([0u8; 32], [0u8; 32]);
        getrandom::fill(&mut seed).map_err(|e| io::Error::other(e.to_string()))?;
        getrandom::fill(&mut secret_seed).map_err(|e| io::Error::other(e.to_string()))?;
        // Validated above.
        let mut ep = braid_proto::Endpoint::with_seeds(cfg.clone(), seed, secret_seed);
        // Several local addresses make associations multi-homed (RFC 9260 §5.1.2).
        ep.set_local_addresses(socks.iter().map(|s| s.local).collect());
        let pcap = net.pcap.map(PcapWriter::new).transpose()?;
        let opener = |dir: std::path::PathBuf, ext: &'static str| {
            move |id: braid_proto::AssocId| {
                let f = std::fs::File::create(dir.join(format!("assoc-{}.{ext}", id.0)))?;
                Ok(std::io::BufWriter::new(f))
            }
        };
        let trace = match (net.trace_dir, net.qlog_dir) {
            (None, None) => None,
            (Some(d), None) => Some(braid_proto::JsonLines::new(opener(d, "jsonl"))),
            (None, Some(q)) => Some(braid_proto::JsonLines::qlog(opener(q, "sqlog"))),
            (Some(d), Some(q)) => {
                Some(braid_proto::JsonLines::new(opener(d, "jsonl")).with_qlog(opener(q, "sqlog")))
            }
        };
        let gro = socks
            .iter()
            .map(|s| s.state.gro_segments())
            .max()
            .unwrap_or(1);
        let chunk = (gro * 1500).max(65536);
        let batch = quinn_udp::BATCH_SIZE.min(32);
        let locals = socks.iter().map(|s| s.local).collect();
        #[expect(
            clippy::disallowed_methods,
            reason = "the socket driver is where the wall clock becomes the core's time input"
        )]
        let epoch = std::time::Instant::now();
        Ok((
            Self {
                ep,
                socks,
                epoch,
                cmds,
                waiters: BTreeMap::new(),
                busy: BTreeSet::new(),
                accept_waiters: VecDeque::new(),
                incoming: VecDeque::new(),
                pcap,
                trace,
                closing: None,
                blackholes: Vec::new(),
                rx: (0..addrs.len())
                    .map(|_| RecvBufs {
                        buf: vec![0; chunk * batch],
                        chunk,
                        meta: vec![RecvMeta::default(); batch],
                        count: 0,
                        next: (0, 0),
                        head: None,
                        reads: 0,
                        drained: false,
                    })
                    .collect(),
                out: Vec::new(),
                out_last: None,
                free_bufs: Vec::new(),
                max_message: cfg
                    .association
                    .max_message_size
                    .min(cfg.association.send_buffer),
                send_cap: shared::SEND_QUEUE_BYTES.min(cfg.association.send_buffer),
                recv_cap: shared::RECV_QUEUE_BYTES.min(cfg.association.recv_buffer),
            },
            locals,
        ))
    }

    fn now(&self) -> Instant {
        #[expect(
            clippy::disallowed_methods,
            reason = "the socket driver is where the wall clock becomes the core's time input"
        )]
        let now = std::time::Instant::now();
        Instant::from_duration(now.saturating_duration_since(self.epoch))
    }

    pub(crate) async fn run(mut self) {
        loop {
            self.service().await;
            if self.finished() {
                break;
            }
            // After handle_timeout(now) the core's next deadline is later than now (timer.rs).
            let deadline = self.ep.poll_timeout();
            let sleep_at =
                deadline.map(|t| tokio::time::Instant::from_std(self.epoch + t.since_epoch()));
            let socks = &self.socks;
            let readable = poll_fn(|cx| {
                for (i, s) in socks.iter().enumerate() {
                    if s.io.poll_recv_ready(cx).is_ready() {
                        return Poll::Ready(i);
                    }
                }
                Poll::Pending
            });
            // Error-queue readiness (EPOLLERR) of each socket: ICMP about our datagrams.
            let mut err_ready: Vec<_> = socks
                .iter()
                .map(|s| Box::pin(s.io.ready(Interest::ERROR)))
                .collect();
            let errored = poll_fn(move |cx| {
                for (i, f) in err_ready.iter_mut().enumerate() {
                    if f.as_mut().poll(cx).is_ready() {
                        return Poll::Ready(i);
                    }
                }
                Poll::Pending
            });
            tokio::select! {
                cmd = self.cmds.recv() => {
                    match cmd {
                        Some(c) => {
                            self.command(c);
                            // Take whatever else is queued before transmitting.
                            while let Ok(c) = self.cmds.try_recv() {
                                self.command(c);
                            }
                        }
                        None => self.start_close(None, true),
                    }
                }
                _ = readable => self.read(),
                i = errored => self.drain_errors(i),
                () = async {
                    match sleep_at {
                        Some(t) => tokio::time::sleep_until(t).await,
                        None => std::future::pending().await,
                    }
                } => {
                    let now = self.now();
                    self.ep.handle_timeout(now);
                }
            }
        }
        // Whatever is left waiting learns the endpoint is gone when its sender drops.
        if let Some(p) = self.pcap.take() {
            let _ = p.into_inner();
        }
        if let Some(t) = &mut self.trace {
            let _ = t.drain(&mut self.ep).and_then(|()| t.flush());
        }
        for r in self.closing.take().into_iter().flatten() {
            let _ = r.send(());
        }
    }

    /// The endpoint closes once every association is closed and its last packets sent.
    fn finished(&self) -> bool {
        self.closing.is_some()
            && self
                .ep
                .associations()
                .all(|id| self.ep.association(id).is_none_or(|a| a.is_closed()))
    }

    fn start_close(&mut self, reply: Option<oneshot::Sender<()>>, abort: bool) {
        let now = self.now();
        let ids: Vec<AssocId> = self.ep.associations().collect();
        for id in ids {
            if let Some(a) = self.ep.association_mut(id) {
                if abort {
                    a.abort(now, None);
                } else {
                    self.waiters.entry(id).or_default().shutdown_pending = true;
                }
            }
        }
        self.closing.get_or_insert_with(Vec::new).extend(reply);
        self.accept_waiters.clear();
    }

    /// Reads the sockets and hands their datagrams to the core, merged across sockets by
    /// the TSN of their first DATA chunk (each socket's own order kept; datagrams without
    /// DATA first). Under CMT the peer spreads consecutive TSNs over the paths; taking one
    /// socket's queue before the other's would reorder them by hundreds, and the gap blocks
    /// and out-of-order reassembly that follow cost both ends dearly. A socket whose batch
    /// is used up is read again at once, so a socket that lags behind catches up.
    fn read(&mut self) {
        let mut rx = std::mem::take(&mut self.rx);
        for bufs in &mut rx {
            bufs.reads = 0;
            bufs.drained = false;
        }
        let mut now = self.now();
        loop {
            // Refill used-up batches of sockets that may have more: 16 batches per socket at
            // most, so timers and commands get their turn under a flood.
            for (i, bufs) in rx.iter_mut().enumerate() {
                if bufs.drained || bufs.head().is_some() {
                    continue;
                }
                bufs.count = if bufs.reads < 16 {
                    self.recv_batch(i, bufs)
                } else {
                    0
                };
                bufs.reads += 1;
                bufs.next = (0, 0);
                bufs.head = None;
                if bufs.count == 0 {
                    bufs.drained = true;
                } else {
                    now = self.now();
                }
            }
            // The next datagram: no DATA first, else the lowest TSN (serial order).
            let mut pick: Option<(usize, Option<u32>)> = None;
            for (i, bufs) in rx.iter_mut().enumerate() {
                let Some(h) = bufs.head() else { continue };
                let better = match (pick, h) {
                    (None, _) => true,
                    (Some((_, Some(_))), None) => true,
                    (Some((_, Some(best))), Some(t)) => (t.wrapping_sub(best) as i32) < 0,
                    (Some((_, None)), _) => false,
                };
                if better {
                    pick = Some((i, h));
                }
            }
            let Some((i, _)) = pick else { break };
            let Some((range, k)) = rx[i].segment() else {
                break;
            };
            let len = range.len();
            let meta = &rx[i].meta[k];
            let (from, dst_ip) = (meta.addr, meta.dst_ip);
            let sock_local = self.socks[i].local;
            let local = match dst_ip {
                Some(ip) if sock_local.ip().is_unspecified() => {
                    SocketAddr::new(ip, sock_local.port())
                }
                _ => sock_local,
            };
            if !self.is_blackholed(local.ip(), from.ip()) {
                let data = &rx[i].buf[range];
                if let Some(p) = &mut self.pcap {
                    let _ = p.write_sctp(now.since_epoch(), from, local, data);
                }
                if let Some(id) =
                    self.ep
                        .handle_datagram(now, local, from, Bytes::copy_from_slice(data))
                {
                    self.busy.insert(id);
                }
                // Each SACK opens its own burst: take it before the next datagram.
                self.collect_transmits(now);
            }
            rx[i].advance(len);
        }
        self.rx = rx;
    }

    /// One `recvmmsg` batch from socket `i` into `rx`: the number of datagrams (0 if none
    /// was waiting or on an error, whose ICMP details are then drained).
    fn recv_batch(&mut self, i: usize, rx: &mut RecvBufs) -> usize {
        let sock = &self.socks[i];
        let res = sock.io.try_io(Interest::READABLE, || {
            let mut iovs: Vec<IoSliceMut<'_>> =
                rx.buf.chunks_mut(rx.chunk).map(IoSliceMut::new).collect();
            sock.state.recv((&sock.io).into(), &mut iovs, &mut rx.meta)
        });
        match res {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => 0,
            // An ICMP error surfaced here (ECONNREFUSED...): its details are queued, and the
            // datagrams behind it are read at once (the call consumed the error).
            Err(_) => {
                self.drain_errors(i);
                let sock = &self.socks[i];
                sock.io
                    .try_io(Interest::READABLE, || {
                        let mut iovs: Vec<IoSliceMut<'_>> =
                            rx.buf.chunks_mut(rx.chunk).map(IoSliceMut::new).collect();
                        sock.state.recv((&sock.io).into(), &mut iovs, &mut rx.meta)
                    })
                    .unwrap_or(0)
            }
        }
    }

    /// Reads socket `i`'s error queue (IP_RECVERR) and hands each ICMP error about a
    /// datagram we sent to the core: unreachable, or too big with the reported MTU.
    fn drain_errors(&mut self, i: usize) {
        use nix::sys::socket::{ControlMessageOwned, MsgFlags, SockaddrStorage, recvmsg};
        use std::os::fd::{AsFd, AsRawFd};
        let local = self.socks[i].local;
        let mut found: Vec<(SocketAddr, braid_proto::IcmpError, Vec<u8>)> = Vec::new();
        // Bounded, like reads: a flood of errors cannot starve the loop.
        for _ in 0..64 {
            let sock = &self.socks[i];
            let mut quoted = [0u8; 64];
            let res = sock.io.try_io(Interest::ERROR, || {
                let fd = sock.io.as_fd().as_raw_fd();
                let mut iov = [IoSliceMut::new(&mut quoted)];
                // Room for the extended error and the other ancillary data quinn-udp enabled
                // on the socket (packet info, TOS, GRO).
                let mut cmsg = [0u8; 512];
                let msg = recvmsg::<SockaddrStorage>(
                    fd,
                    &mut iov,
                    Some(&mut cmsg),
                    MsgFlags::MSG_ERRQUEUE | MsgFlags::MSG_DONTWAIT,
                )
                .map_err(io::Error::from)?;
                let dst = msg.address.and_then(|a| {
                    a.as_sockaddr_in()
                        .map(|v4| SocketAddr::V4((*v4).into()))
                        .or_else(|| a.as_sockaddr_in6().map(|v6| SocketAddr::V6((*v6).into())))
                });
                let mut kind = None;
                for c in msg.cmsgs().map_err(io::Error::from)? {
                    let e = match c {
                        ControlMessageOwned::Ipv4RecvErr(e, _)
                        | ControlMessageOwned::Ipv6RecvErr(e, _) => e,
                        _ => continue,
                    };
                    kind = match e.ee_errno as i32 {
                        nix::libc::EMSGSIZE => Some(braid_proto::IcmpError::TooBig {
                            mtu: e.ee_info as usize,
                        }),
                        nix::libc::ECONNREFUSED => Some(braid_proto::IcmpError::PortUnreachable),
                        nix::libc::EHOSTUNREACH | nix::libc::ENETUNREACH | nix::libc::EHOSTDOWN => {
                            Some(braid_proto::IcmpError::Unreachable)
                        }
                        _ => None,
                    };
                }
                Ok((dst, kind, msg.bytes))
            });
            match res {
                Ok((Some(dst), Some(kind), n)) => {
                    found.push((dst, kind, quoted[..n.min(quoted.len())].to_vec()));
                }
                Ok(_) => {}
                Err(_) => break,
            }
        }
        let now = self.now();
        for (dst, kind, q) in found {
            self.ep.handle_icmp(now, local, dst, &q, kind);
        }
        self.collect_transmits(now);
    }

    fn command(&mut self, c: Cmd) {
        let now = self.now();
        match &c {
            Cmd::Send { id, .. }
            | Cmd::Control { id, .. }
            | Cmd::PathPolicy { id, .. }
            | Cmd::Kick { id }
            | Cmd::Refresh { id }
            | Cmd::Shutdown { id, .. }
            | Cmd::Abort { id }
            | Cmd::Dropped { id } => {
                self.busy.insert(*id);
            }
            _ => {}
        }
        match c {
            Cmd::Connect {
                remotes,
                port,
                reply,
            } => {
                if self.closing.is_some() {
                    return; // Dropping the reply: EndpointClosed.
                }
                // Every address a bound socket can reach is the peer's from the start; the
                // INIT goes from a socket of the first one's family.
                let mut usable: Vec<SocketAddr> = Vec::new();
                for r in &remotes {
                    let reachable = self.socks.iter().any(|s| s.local.is_ipv4() == r.is_ipv4());
                    if reachable && !usable.contains(r) {
                        usable.push(*r);
                    }
                }
                let local = usable.first().and_then(|r| {
                    self.socks
                        .iter()
                        .find(|s| s.local.is_ipv4() == r.is_ipv4())
                        .map(|s| s.local)
                });
                let Some(local) = local else {
                    let _ = reply.send(Err(Error::NoUsableAddress));
                    return;
                };
                match self.ep.connect_multihomed(now, local, &usable, port) {
                    Ok(id) => {
                        self.busy.insert(id);
                        self.waiters.insert(
                            id,
                            Waiters {
                                connect: Some(reply),
                                ..Default::default()
                            },
                        );
                    }
                    Err(e) => {
                        let _ = reply.send(Err(Error::Connect(e)));
                    }
                }
            }
            Cmd::Accept { reply } => {
                if self.closing.is_some() {
                    return;
                }
                // Accepts whose future was dropped (cancel safety: nothing piles up).
                self.accept_waiters.retain(|w| !w.is_closed());
                self.accept_waiters.push_back(reply);
                self.hand_out_accepted();
            }
            Cmd::Send {
                id,
                stream,
                data,
                opts,
                reply,
            } => {
                let w = self.waiters.entry(id).or_default();
                w.sends.push_back(PendingSend {
                    stream,
                    data,
                    opts,
                    reply,
                });
                self.flush_sends(id, now);
            }
            Cmd::Kick { id } => {
                self.flush_sends(id, now);
                self.deliver(id);
            }
            Cmd::Refresh { id } => {
                if let Some(w) = self.waiters.get_mut(&id) {
                    w.publish_now = true;
                }
            }
            Cmd::Control { id, op } => self.control(id, op),
            Cmd::PathPolicy {
                id,
                remote,
                op,
                reply,
            } => {
                let r = match self.ep.association_mut(id) {
                    Some(a) => {
                        let path = a.paths().into_iter().find(|p| p.remote == remote);
                        let found =
                            |done: bool| done.then_some(()).ok_or(Error::NoSuchPath(remote));
                        match (path, op) {
                            (None, _) => Err(Error::NoSuchPath(remote)),
                            (Some(p), PathOp::Remove) => {
                                a.remove_path(now, p.id).map_err(Error::RemovePath)
                            }
                            (Some(p), PathOp::Primary) => found(a.set_primary(p.id)),
                            (Some(p), PathOp::Standby(on)) => found(a.set_path_standby(p.id, on)),
                            (Some(p), PathOp::Forbidden(on)) => {
                                found(a.set_path_forbidden(p.id, on))
                            }
                            (Some(p), PathOp::Cost(c)) => found(a.set_path_cost(p.id, c)),
                        }
                    }
                    None => Err(self.gone(id)),
                };
                // Chunks moved off a removed path go out now, not at the next event.
                self.flush_sends(id, now);
                if let Some(w) = self.waiters.get_mut(&id) {
                    w.publish_now = true;
                }
                let _ = reply.send(r);
            }
            #[cfg(feature = "test-util")]
            Cmd::Counts { reply } => {
                self.accept_waiters.retain(|w| !w.is_closed());
                let _ = reply.send((
                    self.ep.associations().count(),
                    self.waiters.len(),
                    self.accept_waiters.len(),
                ));
            }
            Cmd::Shutdown { id, reply } => {
                let closed = self.waiters.get(&id).and_then(|w| w.closed.clone());
                if let Some(r) = closed {
                    let _ = reply.send(r);
                    return;
                }
                match self.ep.association_mut(id) {
                    Some(_) => {
                        let w = self.waiters.entry(id).or_default();
                        // New sends fail from now on; queued ones still go first.
                        w.shared.lock().shutting_down = true;
                        w.shutdowns.push(reply);
                        w.shutdown_pending = true;
                        self.flush_sends(id, now);
                    }
                    None => {
                        let _ = reply.send(CloseReason::LocalAbort);
                    }
                }
            }
            Cmd::Abort { id } => {
                if let Some(a) = self.ep.association_mut(id) {
                    a.abort(now, None);
                }
            }
            Cmd::Dropped { id } => {
                let w = self.waiters.entry(id).or_default();
                w.dropped = true;
                w.shutdown_pending = true;
                self.flush_sends(id, now);
            }
            Cmd::Close { reply } => {
                let abort = reply.is_none();
                self.start_close(reply, abort);
            }
            #[cfg(feature = "test-util")]
            Cmd::Blackhole { local, remote, on } => {
                self.blackholes.retain(|b| *b != (local, remote));
                if on {
                    self.blackholes.push((local, remote));
                }
            }
        }
    }

    /// Why an association the core no longer has is gone.
    fn gone(&self, id: AssocId) -> Error {
        Error::Closed(
            self.waiters
                .get(&id)
                .and_then(|w| w.closed.clone())
                .unwrap_or(CloseReason::LocalAbort),
        )
    }

    fn hand_out_accepted(&mut self) {
        while let Some(id) = self.ep.accept() {
            self.waiters.entry(id).or_default();
            self.incoming.push_back(id);
        }
        while !self.incoming.is_empty() && !self.accept_waiters.is_empty() {
            let (Some(id), Some(w)) = (self.incoming.pop_front(), self.accept_waiters.pop_front())
            else {
                break;
            };
            let shared = self.publish_limits(id);
            if w.send((id, shared)).is_err() {
                // That accept was cancelled: offer the association to the next one.
                self.incoming.push_front(id);
            }
        }
    }

    /// Queues waiting sends in order while the buffer has room.
    fn flush_sends(&mut self, id: AssocId, now: Instant) {
        let Some(w) = self.waiters.get_mut(&id) else {
            return;
        };
        while let Some(p) = w.sends.pop_front() {
            if p.reply.is_closed() {
                continue; // Cancelled: the message was never queued.
            }
            let Some(a) = self.ep.association_mut(id) else {
                let r = w.closed.clone().unwrap_or(CloseReason::LocalAbort);
                let _ = p.reply.send(Err(Error::Closed(r)));
                continue;
            };
            match a.send(now, p.stream, p.data.clone(), p.opts) {
                Ok(()) => {
                    let _ = p.reply.send(Ok(()));
                }
                Err(SendError::WouldBlock) => {
                    w.sends.push_front(p);
                    return;
                }
                Err(SendError::Closed) => {
                    let e = match a.close_reason() {
                        Some(r) => Error::Closed(r.clone()),
                        None => Error::Send(SendError::Closed),
                    };
                    let _ = p.reply.send(Err(e));
                }
                Err(e) => {
                    let _ = p.reply.send(Err(Error::Send(e)));
                }
            }
        }
        // Then the shared queue, in order, while the core has room.
        let Some(a) = self.ep.association_mut(id) else {
            return;
        };
        let mut s = w.shared.lock();
        let before = s.send_q_bytes;
        while let Some((stream, data, opts)) = s.send_q.pop_front() {
            let len = data.len();
            // The handle told the application these were accepted: even after the peer's
            // SHUTDOWN they go (RFC 9260 §9.2), the core's SHUTDOWN-ACK waits for them.
            match a.send_accepted(now, stream, data.clone(), opts) {
                Err(SendError::WouldBlock) => {
                    s.send_q.push_front((stream, data, opts));
                    break;
                }
                // Closed: the Closed event tells the handle. Other errors were checked by
                // the handle.
                _ => s.send_q_bytes -= len,
            }
        }
        if s.send_q.is_empty() {
            s.send_kicked = false;
        }
        let freed = s.send_q_bytes < before;
        let empty = s.send_q.is_empty();
        // Taken under the lock already held: no second lock per flush.
        let wakers = if freed && !s.send_wakers.is_empty() {
            std::mem::take(&mut s.send_wakers)
        } else {
            Vec::new()
        };
        drop(s);
        if freed {
            w.shared.send_room.notify_waiters();
            for k in wakers {
                k.wake();
            }
        }
        if w.shutdown_pending && empty && w.sends.is_empty() {
            w.shutdown_pending = false;
            a.shutdown(now);
        }
    }

    /// Moves received messages from the core into the shared queue (bounded), and marks
    /// the queue done once the association is closed and drained.
    fn deliver(&mut self, id: AssocId) {
        let Some(w) = self.waiters.get(&id) else {
            return;
        };
        let a = self.ep.association_mut(id);
        let mut s = w.shared.lock();
        if s.recv_done {
            return;
        }
        let was_empty = s.recv_q.is_empty();
        let mut done = false;
        let mut stream_wakers = Vec::new();
        let mut new_stream = false;
        match a {
            Some(a) => loop {
                s.recv_cap = self.recv_cap;
                if s.recv_q_bytes >= self.recv_cap {
                    s.recv_stalled = true;
                    break;
                }
                match a.recv() {
                    Some(m) => match s.route(m) {
                        shared::Route::Assoc => {}
                        shared::Route::Stream(w) => stream_wakers.extend(w),
                        shared::Route::NewStream => new_stream = true,
                    },
                    None => {
                        done = a.is_closed();
                        break;
                    }
                }
            },
            None => done = true,
        }
        if done {
            s.recv_done = true;
        }
        if let Some(a) = self.ep.association(id) {
            // Counters are cheap to copy: exact with every delivery (paths are throttled).
            s.snapshot.stats = a.stats();
        }
        let wake = done || (was_empty && !s.recv_q.is_empty());
        drop(s);
        for k in stream_wakers {
            k.wake();
        }
        if new_stream {
            w.shared.stream_incoming.notify_waiters();
        }
        if done {
            w.shared.wake_receivers();
        } else if wake {
            w.shared.recv_ready.notify_one();
        }
    }

    /// Tells the handle what `send` may check alone, once the association is established.
    fn publish_limits(&mut self, id: AssocId) -> Arc<Shared> {
        let max = self.max_message;
        let send_cap = self.send_cap;
        let streams = self.ep.association(id).map(|a| a.outbound_streams());
        let w = self.waiters.entry(id).or_default();
        if let Some(n) = streams {
            w.shared.lock().limits = Some((n, max, send_cap));
        }
        let shared = w.shared.clone();
        // The handle's first `stats()`/`open_streams()` already see the association.
        let now = self.now();
        self.publish(id, now);
        shared
    }

    fn on_event(&mut self, id: AssocId, ev: Event) {
        let w = self.waiters.entry(id).or_default();
        match ev {
            Event::Readable | Event::Writable => return,
            _ => w.publish_now = true,
        }
        let app_event = match ev {
            Event::PeerShutdown => {
                // §9.2: no new data from the application from now on.
                w.shared.lock().shutting_down = true;
                Some(AssocEvent::PeerShutdown)
            }
            Event::Restarted => Some(AssocEvent::Restarted),
            Event::StreamBufferLow { stream } => Some(AssocEvent::SendBufferLow { stream }),
            Event::PathState { path, state } => {
                let p = self.ep.association(id).and_then(|a| {
                    // A removal's last state change names a path `paths()` no longer has.
                    let mut all = a.paths().into_iter().chain(a.removed_paths());
                    all.find(|p| p.id == path)
                });
                p.map(|p| AssocEvent::PathState {
                    path,
                    local: p.local,
                    remote: p.remote,
                    state,
                })
            }
            Event::Connected => {
                let connect = w.connect.take();
                let shared = self.publish_limits(id);
                let w = self.waiters.entry(id).or_default();
                if let Some(c) = connect
                    && c.send(Ok((id, shared))).is_err()
                {
                    // The connect future was dropped: nobody will use this association.
                    w.dropped = true;
                    let now = self.now();
                    if let Some(a) = self.ep.association_mut(id) {
                        a.abort(now, None);
                    }
                }
                None
            }
            Event::Closed(reason) => {
                if let Some(c) = w.connect.take() {
                    let _ = c.send(Err(Error::Closed(reason.clone())));
                    w.dropped = true;
                }
                for s in w.shutdowns.drain(..) {
                    let _ = s.send(reason.clone());
                }
                w.closed = Some(reason.clone());
                let shared = w.shared.clone();
                // The last statistics before the close event.
                let now = self.now();
                self.publish(id, now);
                shared.set_closed(reason);
                self.deliver(id);
                None
            }
            _ => None,
        };
        if let Some(e) = app_event {
            let w = self.waiters.entry(id).or_default();
            let mut s = w.shared.lock();
            if !s.event_subs.is_empty() {
                s.emit(&e);
            }
        }
    }

    /// Publishes the association's statistics and paths into the shared state (what
    /// `stats()`/`paths()` read), and the PMTU changes it shows to the event receivers.
    fn publish(&mut self, id: AssocId, now: Instant) {
        let Some(a) = self.ep.association(id) else {
            return;
        };
        let Some(w) = self.waiters.get_mut(&id) else {
            return;
        };
        w.published = Some(now);
        w.publish_now = false;
        w.marked_stale = false;
        let stats = a.stats();
        let paths = a.paths();
        let removed = a.removed_paths();
        let open_streams = a.open_streams();
        let negotiated = a.negotiated();
        let mut s = w.shared.lock();
        let old = std::mem::take(&mut s.snapshot.paths);
        for o in old {
            match paths.iter().find(|p| p.id == o.id) {
                // A path the core no longer has: its counters as it was removed stay
                // readable (else its last snapshot).
                None => {
                    let last = removed.iter().find(|r| r.id == o.id).cloned();
                    s.snapshot.removed_paths.push(last.unwrap_or(o));
                }
                Some(p) if p.mtu != o.mtu && !s.event_subs.is_empty() => {
                    s.emit(&AssocEvent::PmtuChanged {
                        path: p.id,
                        local: p.local,
                        remote: p.remote,
                        mtu: p.mtu,
                    });
                }
                Some(_) => {}
            }
        }
        s.snapshot.stats = stats;
        s.snapshot.paths = paths;
        s.snapshot.open_streams = open_streams;
        s.snapshot.negotiated = negotiated;
        s.paths_stale = false;
        s.refresh_asked = false;
    }

    /// Publishes an association's path snapshots if they are due (an event, a handle
    /// asked, or the interval passed); otherwise tells the handles they are behind, so the
    /// next `paths()` asks for a refresh (no timer: an idle association costs nothing).
    fn maybe_publish(&mut self, id: AssocId, now: Instant) {
        let Some(w) = self.waiters.get_mut(&id) else {
            return;
        };
        let due = w.publish_now
            || w.published
                .is_none_or(|t| now.saturating_duration_since(t) >= PUBLISH_INTERVAL);
        if due {
            self.publish(id, now);
        } else if !w.marked_stale {
            // Once per skipped publication: the lock is not taken every round.
            w.marked_stale = true;
            w.shared.lock().paths_stale = true;
        }
    }

    /// Applies a run-time setting to the core.
    fn control(&mut self, id: AssocId, op: Control) {
        let Some(a) = self.ep.association_mut(id) else {
            return;
        };
        match op {
            Control::Scheduler(kind) => a.set_stream_scheduler(kind),
            Control::Cmt(cmt) => a.set_cmt(cmt),
            Control::RtxPolicy(p) => a.set_rtx_policy(p),
            Control::StreamPriority(stream, p) => a.set_stream_priority(stream, p),
            Control::StreamWeight(stream, wt) => a.set_stream_weight(stream, wt),
            Control::StreamPath(stream, path) => {
                let w = self.waiters.entry(id).or_default();
                let i = usize::from(stream);
                if w.stream_paths.len() <= i {
                    // Out of range entries fall back to `stream % paths` in the core.
                    w.stream_paths.resize(i + 1, u16::MAX);
                }
                w.stream_paths[i] = path;
                a.set_stream_paths(w.stream_paths.clone());
            }
        }
    }

    /// Forgets an association the application dropped, once it is closed.
    fn forget_if_done(&mut self, id: AssocId) {
        let done = self.waiters.get(&id).is_some_and(|w| w.dropped)
            && self.ep.association(id).is_none_or(|a| a.is_closed());
        if done {
            if let Some(t) = &mut self.trace {
                // Its last decisions first, then its file is closed.
                let _ = t.drain(&mut self.ep).and_then(|()| t.forget(id));
            }
            self.ep.remove(id);
            self.waiters.remove(&id);
        }
    }

    /// After any input: events, waiting futures, transmissions.
    async fn service(&mut self) {
        let now = self.now();
        for _ in 0..4 {
            let mut any = false;
            while let Some((id, ev)) = self.ep.poll_event() {
                any = true;
                self.busy.insert(id);
                self.on_event(id, ev);
            }
            self.hand_out_accepted();
            // Only associations with input since the last round: whatever they wait for
            // (room in the core's buffer, data, a close) comes with a datagram, an event
            // or a command, which puts them back here.
            let ids: Vec<AssocId> = std::mem::take(&mut self.busy).into_iter().collect();
            for id in &ids {
                self.flush_sends(*id, now);
                self.deliver(*id);
                self.maybe_publish(*id, now);
            }
            self.collect_transmits(now);
            self.flush_out().await;
            // After the transmissions: the last SHUTDOWN-COMPLETE or ABORT is out.
            if let Some(t) = &mut self.trace
                && let Err(e) = t.drain(&mut self.ep)
            {
                tracing::warn!(%e, "trace writing stopped");
                self.trace = None;
            }
            for id in ids {
                self.forget_if_done(id);
            }
            if !any {
                break;
            }
        }
    }

    /// Drains `poll_transmit` into the outgoing queue, batching equal-size datagrams to one
    /// destination into one GSO send: a datagram joins the latest batch for its socket and
    /// destination, so that CMT's packets, which take the paths in turn, still leave in one
    /// send per path. Called after every received datagram (so each SACK opens its own
    /// Max.Burst of new data) and after commands; the queue goes to the sockets with
    /// [`Driver::flush_out`].
    fn collect_transmits(&mut self, now: Instant) {
        loop {
            // The packet is written straight into the buffer of the batch that took the
            // previous one (the core sends runs of packets per path), and moved only if it
            // belongs to another batch.
            let guess = match self.out_last {
                Some(k) if k < self.out.len() => Some(k),
                _ => self.out.len().checked_sub(1),
            };
            let mut buf = match guess {
                Some(k) => std::mem::take(&mut self.out[k].buf),
                None => self.spare_buf(),
            };
            let start = buf.len();
            let polled = self.ep.poll_transmit(now, &mut buf);
            let Some(k) = guess else {
                // Nothing queued: the spare buffer becomes the new batch as it is.
                match polled {
                    Some(t) => {
                        let si = self.socket_for(t.local, t.remote);
                        let local = self.socks[si].local;
                        capture(&mut self.pcap, now, local, t.remote, &buf[start..]);
                        self.out.push(OutBatch::new(si, &t, buf));
                        self.out_last = Some(self.out.len() - 1);
                        continue;
                    }
                    None => {
                        self.free_bufs.push(buf);
                        break;
                    }
                }
            };
            self.out[k].buf = buf;
            let Some(t) = polled else { break };
            // The core tracks the peer's encapsulation port (RFC 6951 §5.4).
            let si = self.socket_for(t.local, t.remote);
            let local = self.socks[si].local;
            capture(
                &mut self.pcap,
                now,
                local,
                t.remote,
                &self.out[k].buf[start..],
            );
            let dst = t.remote;
            let max = self.socks[si].state.max_gso_segments();
            // The latest batch for this socket and destination (a few back at most: one per
            // path), if it has room; only the latest, so each destination's order is kept.
            let n = self.out.len();
            let from = n.saturating_sub(8);
            let latest = self.out[from..n]
                .iter()
                .rposition(|b| b.sock == si && b.dst == dst)
                .map(|j| from + j);
            // A datagram that may fragment goes alone: DF is cleared for one send.
            let join = latest.filter(|&j| {
                !t.may_fragment && {
                    let len = if j == k { start } else { self.out[j].buf.len() };
                    self.out[j].takes(t.size, max, len)
                }
            });
            match join {
                Some(j) if j == k => self.out[k].add(t.size),
                Some(j) => {
                    let (a, b) = (j.min(k), j.max(k));
                    let (lo, hi) = self.out.split_at_mut(b);
                    let (target, source) = if j < k {
                        (&mut lo[a], &mut hi[0])
                    } else {
                        (&mut hi[0], &mut lo[a])
                    };
                    target.buf.extend_from_slice(&source.buf[start..]);
                    target.add(t.size);
                    source.buf.truncate(start);
                }
                None => {
                    let mut nb = self.spare_buf();
                    nb.extend_from_slice(&self.out[k].buf[start..]);
                    self.out[k].buf.truncate(start);
                    self.out.push(OutBatch::new(si, &t, nb));
                }
            }
            self.out_last = Some(join.unwrap_or(self.out.len() - 1));
        }
    }

    fn spare_buf(&mut self) -> Vec<u8> {
        let mut b = self
            .free_bufs
            .pop()
            .unwrap_or_else(|| Vec::with_capacity(GSO_MAX_BYTES + 2048));
        b.clear();
        b
    }

    /// Sends the outgoing queue.
    async fn flush_out(&mut self) {
        let mut out = std::mem::take(&mut self.out);
        self.out_last = None;
        for b in out.drain(..) {
            if self.is_blackholed(self.socks[b.sock].local.ip(), b.dst.ip()) {
                continue;
            }
            let sock = &self.socks[b.sock];
            if b.may_fragment {
                set_dont_fragment(sock, false);
            }
            send_batch(sock, b.dst, b.seg, &b.buf).await;
            if b.may_fragment {
                set_dont_fragment(sock, true);
            }
            if self.free_bufs.len() < 64 {
                self.free_bufs.push(b.buf);
            }
        }
        self.out = out;
    }

    /// Whether fault injection drops traffic between `local` and `remote`.
    fn is_blackholed(&self, local: std::net::IpAddr, remote: std::net::IpAddr) -> bool {
        !self.blackholes.is_empty() && self.blackholes.contains(&(local, remote))
    }

    fn socket_for(&self, local: SocketAddr, remote: SocketAddr) -> usize {
        self.socks
            .iter()
            .position(|s| s.local == local)
            .or_else(|| {
                self.socks
                    .iter()
                    .position(|s| s.local.is_ipv4() == remote.is_ipv4())
            })
            .unwrap_or(0)
    }
}

/// Writes a packet we send to the capture, if there is one.
fn capture(
    pcap: &mut Option<PcapWriter<Box<dyn Write + Send>>>,
    now: Instant,
    local: SocketAddr,
    remote: SocketAddr,
    pkt: &[u8],
) {
    if let Some(p) = pcap {
        let _ = p.write_sctp(now.since_epoch(), local, remote, pkt);
    }
}

/// Sets or clears DF on `sock`'s datagrams. quinn-udp sets DF on every socket (Linux:
/// `IP_PMTUDISC_PROBE`, plus `IPV6_DONTFRAG`), as PLPMTUD needs (RFC 8899 §3); a chunk cut
/// for a larger PMTU than the path now has must still cross it, fragmented (RFC 9260 §7.3).
/// Best effort: where the options are missing the datagram goes as the socket sends it.
fn set_dont_fragment(sock: &Sock, on: bool) {
    use rustix::net::sockopt::{
        Ipv4PathMtuDiscovery, Ipv6PathMtuDiscovery, set_ip_mtu_discover, set_ipv6_mtu_discover,
    };
    if sock.local.is_ipv4() {
        // DONT: DF clear, the kernel fragments at the route's PMTU and routers may too.
        let v = if on {
            Ipv4PathMtuDiscovery::PROBE
        } else {
            Ipv4PathMtuDiscovery::DONT
        };
        let _ = set_ip_mtu_discover(&sock.io, v);
    } else {
        // IPv6 routers never fragment: WANT lets the kernel fragment at the route's PMTU
        // (which the ICMPv6 Packet Too Big updated), DONTFRAG off allows it.
        let v = if on {
            Ipv6PathMtuDiscovery::PROBE
        } else {
            Ipv6PathMtuDiscovery::WANT
        };
        let _ = set_ipv6_mtu_discover(&sock.io, v);
        let _ =
            nix::sys::socket::setsockopt(&sock.io, nix::sys::socket::sockopt::Ipv6DontFrag, &on);
    }
}

/// Sends one datagram, or a GSO batch of `seg`-byte segments (the last may be shorter).
async fn send_batch(sock: &Sock, dst: SocketAddr, seg: usize, contents: &[u8]) {
    {
        let t = quinn_udp::Transmit {
            destination: dst,
            ecn: None,
            contents,
            segment_size: (contents.len() > seg).then_some(seg),
            src_ip: None,
        };
        // A full socket buffer: wait for room. An ICMP report about any datagram of the
        // socket: send again (see `reported_error`). Other errors are packet loss, which SCTP
        // recovers from.
        let mut reports = 0;
        loop {
            match sock.io.try_io(Interest::WRITABLE, || {
                sock.state.try_send((&sock.io).into(), &t)
            }) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if sock.io.writable().await.is_err() {
                        return;
                    }
                }
                Err(e) if reported_error(&e) && reports < MAX_REPORTED_ERRORS => reports += 1,
                _ => return,
            }
        }
    }
}

/// Sends of one batch that may fail on ICMP reports before it is given up.
const MAX_REPORTED_ERRORS: u32 = 8;

/// Whether `e` may be an ICMP report about another datagram rather than about this send:
/// with IP_RECVERR, Linux makes the socket's next call (send or receive) return each ICMP
/// error it queues (sk_err). Without a second try, every forged or stray ICMP error (a
/// "fragmentation needed" naming any association, a port unreachable from a vanished peer)
/// dropped the next batch of whichever association sent next.
fn reported_error(e: &io::Error) -> bool {
    use nix::libc;
    matches!(
        e.raw_os_error(),
        Some(
            libc::EMSGSIZE
                | libc::ECONNREFUSED
                | libc::EHOSTUNREACH
                | libc::ENETUNREACH
                | libc::EHOSTDOWN
                | libc::EPROTO
                | libc::ENOPROTOOPT
        )
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::time::Duration;

    use super::{bind_socket, send_batch};

    /// Linux hands each ICMP error a socket with IP_RECVERR receives to its next call: a
    /// port unreachable about a datagram to a closed loopback port made the next send, to a
    /// live peer, fail, and the datagram was lost. It goes again now.
    #[tokio::test]
    async fn an_icmp_report_about_one_datagram_does_not_drop_the_next() {
        let sock = bind_socket("127.0.0.1:0".parse().unwrap(), 1 << 20).unwrap();
        let closed = std::net::UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let live = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        live.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        let mut buf = [0u8; 64];
        for round in 0..20u8 {
            send_batch(&sock, closed, 1200, b"to nobody").await;
            // Loopback answers at once; the report waits on the socket.
            tokio::time::sleep(Duration::from_millis(2)).await;
            send_batch(&sock, live.local_addr().unwrap(), 1200, &[round; 5]).await;
            let n = live.recv(&mut buf).unwrap_or_else(|e| {
                panic!("round {round}: the datagram after the ICMP report was lost ({e})")
            });
            assert_eq!(&buf[..n], &[round; 5]);
        }
    }
}
