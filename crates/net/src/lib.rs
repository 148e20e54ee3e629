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
//! The application API has quinn's shape: [`Endpoint::builder`] (or [`Endpoint::bind`]),
//! [`Endpoint::connect`] / [`Endpoint::connect_host`] / [`Endpoint::accept`], and a
//! clonable [`Association`] with message `send`/`recv`, per-stream [`SendStream`] and
//! [`RecvStream`] handles (`AsyncWrite`/`AsyncRead`), synchronous `stats()`/`paths()`
//! published by the task, [`Association::events`], [`Association::closed`] and run-time
//! control (primary, path policy: standby, forbidden, cost; CMT, schedulers). Every async method documents its
//! cancel safety: a dropped future never loses a message or leaves state behind. The
//! fault-injection hook `Endpoint::blackhole` exists with the `test-util` feature.
//!
//! RFC 6951 ports are the core's business (`braid_proto` keeps the peer's UDP port in each
//! path's remote address): it moves only on a packet whose verification tag checked out,
//! never on an INIT or an unverified COOKIE-ECHO, and an INIT from a known address with a new
//! UDP port is refused with an ABORT carrying cause 14 (NEAT D3.1 Appendix F §4). The driver
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
//! let b = server.accept().await?;
//! let m = b.recv().await?.ok_or("closed")?;
//! assert_eq!(&m.data[..], b"hi");
//! a.shutdown().await?;
//! # Ok(()) }
//! ```

mod assoc;
mod builder;
mod driver;
mod events;
mod shared;
mod stream;

use std::fmt;
use std::io::{self, Write};
use std::net::SocketAddr;

use tokio::sync::{mpsc, oneshot};

pub use braid_proto::{
    AssocId, AssociationConfig, AssociationStats, CloseReason, CmtConfig, ConfigError,
    EndpointConfig, LossDetection, PathAssignment, PathInfo, PathState, ReceivedMessage,
    RemovePathError, SchedulerKind, SendError, SendOptions, SpuriousDetection, TimeoutHandling,
};

/// README.md's code blocks, compiled and run as doc tests (the library quick start).
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;

pub use assoc::Association;
pub use braid_proto::{CongestionControl, Negotiated, PathId, PathStats, PmtuState, RtxPolicy};
pub use builder::{BuildError, EndpointBuilder};
pub use events::{AssocEvent, Events};
pub use stream::{DEFAULT_WRITE_CHUNK, RecvStream, SendStream};

use driver::Cmd;

/// Errors of the asynchronous API.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The endpoint's task has stopped (the endpoint was closed or dropped).
    #[error("endpoint closed")]
    EndpointClosed,
    /// [`Endpoint::accept`] on an endpoint that does not listen
    /// ([`EndpointConfig::listen`] unset): no association could ever arrive.
    #[error("endpoint does not listen (EndpointConfig::listen is off): nothing to accept")]
    NotListening,
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
    /// A [`RecvStream`] for this stream exists already.
    #[error("stream {0} already has a RecvStream")]
    StreamInUse(u16),
    /// No confirmed path goes to this peer address.
    #[error("no confirmed path to {0}")]
    NoSuchPath(SocketAddr),
    /// The core refused to remove the path (the last confirmed one, or the handshake is
    /// not over).
    #[error("cannot remove the path: {0}")]
    RemovePath(braid_proto::RemovePathError),
    /// A host name did not resolve to an address of a bound socket's family.
    #[error("cannot resolve {host}: {reason}")]
    Resolve {
        /// The name asked for.
        host: String,
        /// What went wrong.
        reason: String,
    },
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
    /// Write the same decisions as qlog (JSON-SEQ, `braid_proto::qlog`) to
    /// `DIR/assoc-ID.sqlog`.
    pub qlog_dir: Option<std::path::PathBuf>,
}

impl Default for NetConfig {
    fn default() -> Self {
        Self {
            socket_buffer: 4 << 20,
            pcap: None,
            trace_dir: None,
            qlog_dir: None,
        }
    }
}

impl fmt::Debug for NetConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NetConfig")
            .field("socket_buffer", &self.socket_buffer)
            .field("pcap", &self.pcap.is_some())
            .field("trace_dir", &self.trace_dir)
            .field("qlog_dir", &self.qlog_dir)
            .finish()
    }
}

/// An SCTP endpoint on UDP sockets. Dropping it aborts its associations and stops its task;
/// [`Endpoint::close`] shuts them down gracefully first.
#[derive(Debug)]
pub struct Endpoint {
    cmd: mpsc::UnboundedSender<Cmd>,
    local_addrs: Vec<SocketAddr>,
    /// The configuration's `listen`, fixed at bind time: `accept` refuses at once without it.
    listening: bool,
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

    /// A builder: local addresses, listening, the common protocol options, driver options,
    /// validated together by [`EndpointBuilder::build`].
    pub fn builder() -> EndpointBuilder {
        EndpointBuilder::default()
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
        let listening = config.listen;
        let (cmd, rx) = mpsc::unbounded_channel();
        let (driver, local_addrs) = driver::Driver::new(config, local_addrs, net, rx)?;
        let task = rt.spawn(driver.run());
        Ok(Self {
            cmd,
            local_addrs,
            listening,
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
    /// Every address of a bound socket's family is one of the peer's from the start
    /// (multi-homed): the INIT goes to the first, and on a timeout or an ICMP error to the
    /// next in turn, so one unreachable address does not fail the handshake. Once the peer
    /// answers, the given addresses it lists in its INIT-ACK (or answered from) stay as
    /// paths and the others are dropped; the peer's other listed addresses become paths too
    /// (RFC 9260 §5.1.2), paired with ours.
    ///
    /// Cancel safety: dropping the future gives up the association; if its handshake
    /// completes anyway, the endpoint aborts it and forgets it (nothing is left behind).
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

    /// [`Endpoint::connect`] to a host name and UDP port (`"localhost:9899"`, or an
    /// address), resolved with tokio's `lookup_host`. One association is started with every
    /// resolved address of a bound socket's family as the peer's (in the resolver's order,
    /// duplicates removed): the INIT tries them in turn until one answers, and those the
    /// peer confirms stay as paths, as with [`Endpoint::connect`] given the same list.
    ///
    /// Cancel safety: as [`Endpoint::connect`].
    ///
    /// # Errors
    ///
    /// [`Error::Resolve`] if the name does not resolve, or to no address of a bound
    /// socket's family (the message lists what it resolved to); otherwise as
    /// [`Endpoint::connect`] (e.g. [`Error::Closed`] with
    /// [`CloseReason::HandshakeTimeout`] when no address answered).
    pub async fn connect_host(&self, host: &str, sctp_port: u16) -> Result<Association, Error> {
        let resolve_err = |reason: String| Error::Resolve {
            host: host.to_string(),
            reason,
        };
        let resolved: Vec<SocketAddr> = tokio::net::lookup_host(host)
            .await
            .map_err(|e| resolve_err(e.to_string()))?
            .collect();
        let usable = usable_addresses(&self.local_addrs, &resolved);
        if usable.is_empty() {
            let list: Vec<String> = resolved.iter().map(ToString::to_string).collect();
            return Err(resolve_err(format!(
                "resolved to [{}], none of a bound socket's family",
                list.join(", ")
            )));
        }
        self.connect(&usable, sctp_port).await
    }

    /// The next association a peer opened. The endpoint must listen
    /// ([`EndpointConfig::listen`], [`EndpointBuilder::listen`]); otherwise this fails at
    /// once instead of waiting for an association that cannot come.
    ///
    /// Cancel safety: dropping the future loses no association (the next `accept` gets it).
    ///
    /// # Errors
    ///
    /// [`Error::NotListening`] if the endpoint was bound without `listen`;
    /// [`Error::EndpointClosed`] once the endpoint is closed (also while waiting).
    pub async fn accept(&self) -> Result<Association, Error> {
        if !self.listening {
            return Err(Error::NotListening);
        }
        let (tx, rx) = oneshot::channel();
        self.send_cmd(Cmd::Accept { reply: tx })?;
        let (id, shared) = rx.await.map_err(|_| Error::EndpointClosed)?;
        Ok(Association::new(id, self.cmd.clone(), shared))
    }

    /// Shuts every association down gracefully, waits until they are closed, and stops the
    /// endpoint's task.
    ///
    /// Cancel safety: dropping the future drops the endpoint, which aborts the associations
    /// still open (as dropping an [`Endpoint`] does).
    pub async fn close(mut self) {
        let (tx, rx) = oneshot::channel();
        if self.cmd.send(Cmd::Close { reply: Some(tx) }).is_ok() {
            let _ = rx.await;
        }
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }

    /// Fault injection for tests and experiments (cargo feature `test-util`): while `on`,
    /// every datagram between the local IP `local` and the peer IP `remote` is dropped,
    /// both ways, as if the path were cut.
    ///
    /// # Errors
    ///
    /// [`Error::EndpointClosed`].
    #[cfg(feature = "test-util")]
    pub fn blackhole(
        &self,
        local: std::net::IpAddr,
        remote: std::net::IpAddr,
        on: bool,
    ) -> Result<(), Error> {
        self.send_cmd(Cmd::Blackhole { local, remote, on })
    }

    /// Introspection for tests (cargo feature `test-util`): (associations the core holds,
    /// associations the driver tracks, `accept` calls waiting).
    ///
    /// Cancel safety: nothing to lose.
    ///
    /// # Errors
    ///
    /// [`Error::EndpointClosed`].
    #[cfg(feature = "test-util")]
    pub async fn debug_counts(&self) -> Result<(usize, usize, usize), Error> {
        let (tx, rx) = oneshot::channel();
        self.send_cmd(Cmd::Counts { reply: tx })?;
        rx.await.map_err(|_| Error::EndpointClosed)
    }

    fn send_cmd(&self, c: Cmd) -> Result<(), Error> {
        self.cmd.send(c).map_err(|_| Error::EndpointClosed)
    }
}

/// The addresses of `resolved` a socket bound at `locals` can reach (its family), in order,
/// without duplicates.
fn usable_addresses(locals: &[SocketAddr], resolved: &[SocketAddr]) -> Vec<SocketAddr> {
    let mut usable: Vec<SocketAddr> = Vec::new();
    for a in resolved {
        let family_bound = locals.iter().any(|l| l.is_ipv4() == a.is_ipv4());
        if family_bound && !usable.contains(a) {
            usable.push(*a);
        }
    }
    usable
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        if self.task.is_some() {
            let _ = self.cmd.send(Cmd::Close { reply: None });
        }
    }
}
