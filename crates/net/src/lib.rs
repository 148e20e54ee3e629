//! `braid-net`: the tokio driver of the sans-IO core on real UDP sockets (SCTP over UDP,
//! RFC 6951).
//!
//! One tokio task per [`Endpoint`] owns the [`braid_proto::Endpoint`] and its sockets (one
//! per local address, batched I/O through `quinn-udp`: `recvmmsg`/GRO and `sendmsg`/GSO
//! where the kernel offers them). It follows the core's documented call order: feed
//! datagrams, timeouts and application commands, then drain `poll_transmit` and
//! `poll_event`, wake the waiting API futures, and sleep until `poll_timeout`. The API
//! handles talk to it over a command channel, except for the data path: `send` and `recv`
//! use per-association queues shared with the task (bounded by the send and receive
//! buffers, at most 1 MiB each), so a message costs no channel round trip. The task drains
//! `poll_transmit` after every received datagram (each SACK opens its own Max.Burst) into
//! GSO batches of at most 64 KiB, sent once the receive batch is processed.
//!
//! RFC 6951 ports are the core's business (`braid_proto` keeps the peer's UDP port in each
//! path's remote address): it moves only on a packet whose verification tag checked out,
//! never on an INIT or an unverified COOKIE-ECHO, and an INIT from a known address with a new
//! UDP port is refused with an ABORT carrying cause 14 (003_*.txt Appendix F §4). The driver
//! sends every datagram where the core says.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use braid_net::{Endpoint, EndpointConfig, SendOptions};
//! let server = Endpoint::bind(
//!     EndpointConfig { listen: true, ..Default::default() },
//!     &["127.0.0.1:9899".parse()?],
//! )?;
//! let client = Endpoint::bind(EndpointConfig::default(), &["127.0.0.1:0".parse()?])?;
//! let a = client.connect(&["127.0.0.1:9899".parse()?], 5001).await?;
//! a.send(0, bytes::Bytes::from_static(b"hi"), SendOptions::default()).await?;
//! let b = server.accept().await.ok_or("closed")?;
//! let m = b.recv().await.ok_or("closed")?;
//! assert_eq!(&m.data[..], b"hi");
//! a.shutdown().await?;
//! # Ok(()) }
//! ```

mod driver;
mod shared;

use std::fmt;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};

pub use braid_proto::{
    AssocId, AssociationConfig, AssociationStats, CloseReason, CmtConfig, ConfigError,
    EndpointConfig, PathAssignment, PathInfo, PathState, ReceivedMessage, SchedulerKind, SendError,
    SendOptions, SpuriousDetection, TimeoutHandling,
};

/// README.md's code blocks, compiled and run as doc tests (the library quick start).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

use driver::Cmd;
use shared::Shared;

/// Errors of the asynchronous API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The endpoint's task has stopped (the endpoint was closed or dropped).
    #[error("endpoint closed")]
    EndpointClosed,
    /// The core refused to start the association.
    #[error("connect refused: {0}")]
    Connect(#[from] braid_proto::ConnectError),
    /// No remote address was given, or none of the family of a local socket.
    #[error("no usable remote address (none given, or none of a bound socket's family)")]
    NoUsableAddress,
    /// The association closed (or never opened); the reason says why.
    #[error("association closed: {0}")]
    Closed(CloseReason),
    /// `send` refused the message (never [`SendError::WouldBlock`]: `send` waits instead).
    #[error(transparent)]
    Send(#[from] SendError),
}

/// Options of the driver itself (the protocol's are in [`EndpointConfig`]).
pub struct NetConfig {
    /// `SO_SNDBUF` and `SO_RCVBUF` asked for on every socket: 4 MiB by default (the kernel
    /// may clamp it, e.g. to `net.core.rmem_max`).
    pub socket_buffer: usize,
    /// Record every datagram sent and received (real addresses, timestamps from the
    /// driver clock: time since the endpoint was bound) as a classic pcap file.
    pub pcap: Option<Box<dyn Write + Send>>,
    /// Write each association's decision trace (`braid_proto::trace`: path states, windows,
    /// fast retransmits, T3, SACK paths, scheduler picks) to `DIR/assoc-ID.jsonl`.
    pub trace_dir: Option<std::path::PathBuf>,
}

impl Default for NetConfig {
    fn default() -> Self {
        Self {
            socket_buffer: 4 << 20,
            pcap: None,
            trace_dir: None,
        }
    }
}

impl fmt::Debug for NetConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetConfig")
            .field("socket_buffer", &self.socket_buffer)
            .field("pcap", &self.pcap.is_some())
            .field("trace_dir", &self.trace_dir)
            .finish()
    }
}

/// An SCTP endpoint on UDP sockets. Dropping it aborts its associations and stops its task;
/// [`Endpoint::close`] shuts them down gracefully first.
#[derive(Debug)]
pub struct Endpoint {
    cmd: mpsc::UnboundedSender<Cmd>,
    local_addrs: Vec<SocketAddr>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl Endpoint {
    /// Binds one UDP socket per local address, all on the UDP port of the first address (0:
    /// an ephemeral port chosen by the OS), and starts the endpoint's task. Must be called
    /// within a tokio runtime.
    ///
    /// # Errors
    ///
    /// Socket errors, no address given, no tokio runtime, or a configuration
    /// [`EndpointConfig::validate`] refuses (`InvalidInput`, with its message).
    pub fn bind(config: EndpointConfig, local_addrs: &[SocketAddr]) -> io::Result<Self> {
        Self::bind_with(config, local_addrs, NetConfig::default())
    }

    /// [`Endpoint::bind`] with driver options (socket buffers, pcap recording).
    ///
    /// # Errors
    ///
    /// As [`Endpoint::bind`].
    pub fn bind_with(
        config: EndpointConfig,
        local_addrs: &[SocketAddr],
        net: NetConfig,
    ) -> io::Result<Self> {
        let rt = tokio::runtime::Handle::try_current().map_err(io::Error::other)?;
        let (cmd, rx) = mpsc::unbounded_channel();
        let (driver, local_addrs) = driver::Driver::new(config, local_addrs, net, rx)?;
        let task = rt.spawn(driver.run());
        Ok(Self {
            cmd,
            local_addrs,
            task: Some(task),
        })
    }

    /// The bound addresses (with the port the OS chose).
    pub fn local_addrs(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// Starts an association with the peer at `remote_addrs` (IP and UDP encapsulation
    /// port) whose SCTP port is `sctp_port`; resolves once it is established.
    ///
    /// The INIT goes to the first address of a bound socket's family; with several local
    /// addresses the association is multi-homed over the peer's listed addresses.
    ///
    /// # Errors
    ///
    /// [`Error::Closed`] with the reason if the handshake fails (e.g.
    /// [`CloseReason::HandshakeTimeout`], [`CloseReason::PeerAbort`]), [`Error::Connect`]
    /// if the core refuses, [`Error::EndpointClosed`].
    pub async fn connect(
        &self,
        remote_addrs: &[SocketAddr],
        sctp_port: u16,
    ) -> Result<Association, Error> {
        let (tx, rx) = oneshot::channel();
        self.send_cmd(Cmd::Connect {
            remotes: remote_addrs.to_vec(),
            port: sctp_port,
            reply: tx,
        })?;
        let (id, shared) = rx.await.map_err(|_| Error::EndpointClosed)??;
        Ok(Association::new(id, self.cmd.clone(), shared))
    }

    /// The next association a peer opened (the endpoint must listen:
    /// [`EndpointConfig::listen`]); `None` once the endpoint is closed.
    pub async fn accept(&self) -> Option<Association> {
        let (tx, rx) = oneshot::channel();
        self.send_cmd(Cmd::Accept { reply: tx }).ok()?;
        let (id, shared) = rx.await.ok()?;
        Some(Association::new(id, self.cmd.clone(), shared))
    }

    /// Shuts every association down gracefully, waits until they are closed, and stops the
    /// endpoint's task.
    pub async fn close(mut self) {
        let (tx, rx) = oneshot::channel();
        if self.cmd.send(Cmd::Close { reply: Some(tx) }).is_ok() {
            let _ = rx.await;
        }
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }

    /// Fault injection for tests and experiments: while `on`, every datagram between the
    /// local IP `local` and the peer IP `remote` is dropped, both ways, as if the path
    /// were cut.
    ///
    /// # Errors
    ///
    /// [`Error::EndpointClosed`].
    pub fn blackhole(
        &self,
        local: std::net::IpAddr,
        remote: std::net::IpAddr,
        on: bool,
    ) -> Result<(), Error> {
        self.send_cmd(Cmd::Blackhole { local, remote, on })
    }

    fn send_cmd(&self, c: Cmd) -> Result<(), Error> {
        self.cmd.send(c).map_err(|_| Error::EndpointClosed)
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        if self.task.is_some() {
            let _ = self.cmd.send(Cmd::Close { reply: None });
        }
    }
}

/// One association. Dropping the handle starts a graceful shutdown (if it is still open)
/// and lets the endpoint forget the association once it is closed.
#[derive(Debug)]
pub struct Association {
    id: AssocId,
    cmd: mpsc::UnboundedSender<Cmd>,
    shared: Arc<Shared>,
}

impl Association {
    fn new(id: AssocId, cmd: mpsc::UnboundedSender<Cmd>, shared: Arc<Shared>) -> Self {
        Self { id, cmd, shared }
    }

    /// The association's handle within its endpoint.
    pub fn id(&self) -> AssocId {
        self.id
    }

    async fn request<T>(&self, make: impl FnOnce(oneshot::Sender<T>) -> Cmd) -> Result<T, Error> {
        let (tx, rx) = oneshot::channel();
        self.cmd.send(make(tx)).map_err(|_| Error::EndpointClosed)?;
        rx.await.map_err(|_| Error::EndpointClosed)
    }

    /// Queues a message on `stream`. Waits while the send buffer is full (backpressure:
    /// nothing is dropped); messages are queued in the order of the calls.
    ///
    /// # Errors
    ///
    /// [`Error::Send`] for an invalid stream, an empty or too large message;
    /// [`Error::Closed`] if the association is shutting down or closed.
    pub async fn send(&self, stream: u16, data: Bytes, opts: SendOptions) -> Result<(), Error> {
        // Fast path: a valid message goes into the shared queue (no round trip to the task).
        // Anything the handle cannot check alone (before the association is established,
        // an invalid message) takes the slow path, where the core decides.
        loop {
            let notified = self.shared.send_room.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let kick = {
                let mut s = self.shared.lock();
                if let Some(r) = &s.closed {
                    return Err(Error::Closed(r.clone()));
                }
                if s.shutting_down {
                    return Err(Error::Send(SendError::ShuttingDown));
                }
                let Some((streams, max, cap)) = s.limits else {
                    break;
                };
                if data.is_empty() || data.len() > max || stream >= streams {
                    break;
                }
                // One message is always accepted into an empty queue, whatever its size.
                if s.send_q_bytes > 0 && s.send_q_bytes + data.len() > cap {
                    None
                } else {
                    s.send_q_bytes += data.len();
                    s.send_q.push_back((stream, data.clone(), opts));
                    Some(!std::mem::replace(&mut s.send_kicked, true))
                }
            };
            match kick {
                Some(true) => {
                    return self
                        .cmd
                        .send(Cmd::Kick { id: self.id })
                        .map_err(|_| Error::EndpointClosed);
                }
                Some(false) => {
                    return if self.cmd.is_closed() {
                        Err(Error::EndpointClosed)
                    } else {
                        Ok(())
                    };
                }
                None => {
                    if self.cmd.is_closed() {
                        return Err(Error::EndpointClosed);
                    }
                    notified.await;
                }
            }
        }
        let id = self.id;
        self.request(|reply| Cmd::Send {
            id,
            stream,
            data,
            opts,
            reply,
        })
        .await?
    }

    /// The next message; `None` once the association is closed and every message read.
    pub async fn recv(&self) -> Option<ReceivedMessage> {
        loop {
            let notified = self.shared.recv_ready.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            let (m, kick, more) = {
                let mut s = self.shared.lock();
                match s.recv_q.pop_front() {
                    Some(m) => {
                        s.recv_q_bytes -= m.data.len();
                        let kick = s.recv_stalled && s.recv_q_bytes <= s.recv_cap / 2;
                        if kick {
                            s.recv_stalled = false;
                        }
                        (Some(m), kick, !s.recv_q.is_empty())
                    }
                    None if s.recv_done => return None,
                    None => (None, false, false),
                }
            };
            if kick {
                let _ = self.cmd.send(Cmd::Kick { id: self.id });
            }
            if let Some(m) = m {
                if more {
                    // Another reader may be waiting for the rest.
                    self.shared.recv_ready.notify_one();
                }
                return Some(m);
            }
            if self.cmd.is_closed() {
                return None;
            }
            notified.await;
        }
    }

    /// Association counters.
    ///
    /// # Errors
    ///
    /// [`Error::EndpointClosed`], or [`Error::Closed`] once the endpoint forgot it.
    pub async fn stats(&self) -> Result<AssociationStats, Error> {
        let id = self.id;
        self.request(|reply| Cmd::Stats { id, reply }).await?
    }

    /// The negotiated stream counts: (outbound, inbound). Outbound streams are
    /// `0..outbound` for [`Association::send`].
    ///
    /// # Errors
    ///
    /// [`Error::EndpointClosed`], or [`Error::Closed`] once the endpoint forgot it.
    pub async fn open_streams(&self) -> Result<(u16, u16), Error> {
        let id = self.id;
        self.request(|reply| Cmd::OpenStreams { id, reply }).await?
    }

    /// Snapshots of the paths.
    ///
    /// # Errors
    ///
    /// [`Error::EndpointClosed`], or [`Error::Closed`] once the endpoint forgot it.
    pub async fn paths(&self) -> Result<Vec<PathInfo>, Error> {
        let id = self.id;
        self.request(|reply| Cmd::Paths { id, reply }).await?
    }

    /// Graceful shutdown (RFC 9260 §9.2): queued data is delivered first. Resolves when the
    /// association is closed.
    ///
    /// # Errors
    ///
    /// [`Error::Closed`] if it closed for another reason than a graceful shutdown (abort,
    /// peer unreachable...).
    pub async fn shutdown(&self) -> Result<(), Error> {
        let id = self.id;
        let reason = self.request(|reply| Cmd::Shutdown { id, reply }).await?;
        match reason {
            CloseReason::Shutdown => Ok(()),
            r => Err(Error::Closed(r)),
        }
    }

    /// Aborts the association at once (the peer gets an ABORT).
    pub fn abort(&self) {
        let _ = self.cmd.send(Cmd::Abort { id: self.id });
    }
}

impl Drop for Association {
    fn drop(&mut self) {
        let _ = self.cmd.send(Cmd::Dropped { id: self.id });
    }
}
