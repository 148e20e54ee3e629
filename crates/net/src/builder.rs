//! [`EndpointBuilder`]: endpoint and association configuration with typed validation errors.

use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::PathBuf;

use braid_proto::{AssociationConfig, CmtConfig, ConfigError, EndpointConfig, SchedulerKind};

use crate::{Endpoint, NetConfig};

/// Why [`EndpointBuilder::build`] failed.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// No local address was given ([`EndpointBuilder::bind`]).
    #[error("no local address: call bind(addr) at least once")]
    NoAddress,
    /// A setting is out of range; the error names it (`ConfigError`'s `key`).
    #[error("invalid configuration: {0}")]
    Config(#[from] ConfigError),
    /// Binding a socket failed (the message names the address).
    #[error(transparent)]
    Io(#[from] io::Error),
}

/// Builds an [`Endpoint`]: `Endpoint::builder().bind(addr).listen(5001).cmt(true).build()`.
/// Starts from [`EndpointConfig::default`] and [`NetConfig::default`]; every setting the
/// builder has no method for is reachable through [`EndpointBuilder::association`] or
/// [`EndpointBuilder::config`].
#[derive(Debug, Default)]
pub struct EndpointBuilder {
    config: EndpointConfig,
    net: NetConfig,
    addrs: Vec<SocketAddr>,
}

impl EndpointBuilder {
    /// Adds a local address to bind (IP and UDP port; the first address's port is used for
    /// every socket, 0: the OS chooses). Several addresses make associations multi-homed.
    pub fn bind(mut self, addr: SocketAddr) -> Self {
        self.addrs.push(addr);
        self
    }

    /// Accepts associations ([`Endpoint::accept`]) on SCTP port `port`.
    pub fn listen(mut self, port: u16) -> Self {
        self.config.listen = true;
        self.config.port = port;
        self
    }

    /// Our SCTP port (without listening).
    pub fn port(mut self, port: u16) -> Self {
        self.config.port = port;
        self
    }

    /// Replaces the whole endpoint configuration (the builder's later calls still apply).
    pub fn config(mut self, config: EndpointConfig) -> Self {
        self.config = config;
        self
    }

    /// Replaces the associations' configuration.
    pub fn association(mut self, config: AssociationConfig) -> Self {
        self.config.association = config;
        self
    }

    /// Concurrent multipath transfer over every path (with [`CmtConfig::default`]) or not.
    pub fn cmt(mut self, on: bool) -> Self {
        self.config.association.cmt = on.then(CmtConfig::default);
        self
    }

    /// Offers I-DATA (RFC 8260: interleaved messages) in the handshake.
    pub fn idata(mut self, on: bool) -> Self {
        self.config.association.idata = on;
        self
    }

    /// Outbound streams asked for, and the most inbound streams accepted.
    pub fn streams(mut self, outbound: u16, max_inbound: u16) -> Self {
        self.config.association.outbound_streams = outbound;
        self.config.association.max_inbound_streams = max_inbound;
        self
    }

    /// The stream scheduler (RFC 8260 §3).
    pub fn stream_scheduler(mut self, kind: SchedulerKind) -> Self {
        self.config.association.stream_scheduler = kind;
        self
    }

    /// Send and receive buffer of each association, bytes.
    pub fn buffers(mut self, send: usize, recv: usize) -> Self {
        self.config.association.send_buffer = send;
        self.config.association.recv_buffer = recv;
        self
    }

    /// Largest message, bytes.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.config.association.max_message_size = bytes;
        self
    }

    /// `SO_SNDBUF`/`SO_RCVBUF` asked for on every socket.
    pub fn socket_buffer(mut self, bytes: usize) -> Self {
        self.net.socket_buffer = bytes;
        self
    }

    /// Records every datagram as a pcap file.
    pub fn pcap(mut self, out: Box<dyn Write + Send>) -> Self {
        self.net.pcap = Some(out);
        self
    }

    /// Writes each association's decision trace to `dir/assoc-ID.jsonl`.
    pub fn trace_dir(mut self, dir: PathBuf) -> Self {
        self.net.trace_dir = Some(dir);
        self
    }

    /// Writes each association's decisions as qlog to `dir/assoc-ID.sqlog`.
    pub fn qlog_dir(mut self, dir: PathBuf) -> Self {
        self.net.qlog_dir = Some(dir);
        self
    }

    /// Validates the configuration, binds the sockets and starts the endpoint's task. Must
    /// be called within a tokio runtime.
    ///
    /// # Errors
    ///
    /// [`BuildError::NoAddress`], [`BuildError::Config`] naming the bad setting, or
    /// [`BuildError::Io`] from binding (or no tokio runtime).
    pub fn build(self) -> Result<Endpoint, BuildError> {
        if self.addrs.is_empty() {
            return Err(BuildError::NoAddress);
        }
        self.config.validate()?;
        Ok(Endpoint::bind_with(self.config, &self.addrs, self.net)?)
    }
}
