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
///
/// The result does not depend on the order of the calls: a wholesale configuration
/// ([`EndpointBuilder::config`], then [`EndpointBuilder::association`] over its
/// `association`) is the base, and every explicit setter (`listen`, `port`, `cmt`, `idata`,
/// `streams`, `stream_scheduler`, `buffers`, `max_message_size`) is applied on top of it at
/// [`EndpointBuilder::build`], whether it was called before or after. So
/// `.cmt(true).association(cfg)` runs CMT as `.association(cfg).cmt(true)` does. Calling
/// the same method twice keeps the last value.
#[derive(Debug, Default)]
pub struct EndpointBuilder {
    config: Option<EndpointConfig>,
    association: Option<AssociationConfig>,
    set: Explicit,
    net: NetConfig,
    addrs: Vec<SocketAddr>,
}

/// The settings given by the builder's own methods, applied over the wholesale ones.
#[derive(Debug, Default, Clone)]
struct Explicit {
    listen: Option<bool>,
    port: Option<u16>,
    cmt: Option<Option<CmtConfig>>,
    idata: Option<bool>,
    streams: Option<(u16, u16)>,
    stream_scheduler: Option<SchedulerKind>,
    buffers: Option<(usize, usize)>,
    max_message_size: Option<usize>,
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
        self.set.listen = Some(true);
        self.set.port = Some(port);
        self
    }

    /// Our SCTP port (without listening).
    pub fn port(mut self, port: u16) -> Self {
        self.set.port = Some(port);
        self
    }

    /// The whole endpoint configuration, as the base: [`EndpointBuilder::association`] and
    /// the explicit setters apply over it, whatever the order of the calls.
    pub fn config(mut self, config: EndpointConfig) -> Self {
        self.config = Some(config);
        self
    }

    /// The associations' configuration, as the base: it replaces the `association` of
    /// [`EndpointBuilder::config`], and the explicit setters apply over it, whatever the
    /// order of the calls.
    pub fn association(mut self, config: AssociationConfig) -> Self {
        self.association = Some(config);
        self
    }

    /// Concurrent multipath transfer over every path (with [`CmtConfig::default`]) or not.
    pub fn cmt(mut self, on: bool) -> Self {
        self.set.cmt = Some(on.then(CmtConfig::default));
        self
    }

    /// Offers I-DATA (RFC 8260: interleaved messages) in the handshake.
    pub fn idata(mut self, on: bool) -> Self {
        self.set.idata = Some(on);
        self
    }

    /// Outbound streams asked for, and the most inbound streams accepted.
    pub fn streams(mut self, outbound: u16, max_inbound: u16) -> Self {
        self.set.streams = Some((outbound, max_inbound));
        self
    }

    /// The stream scheduler (RFC 8260 §3).
    pub fn stream_scheduler(mut self, kind: SchedulerKind) -> Self {
        self.set.stream_scheduler = Some(kind);
        self
    }

    /// Send and receive buffer of each association, bytes.
    pub fn buffers(mut self, send: usize, recv: usize) -> Self {
        self.set.buffers = Some((send, recv));
        self
    }

    /// Largest message, bytes.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.set.max_message_size = Some(bytes);
        self
    }

    /// The endpoint configuration [`EndpointBuilder::build`] would validate and use: the
    /// wholesale configuration with every explicit setting applied over it.
    pub fn endpoint_config(&self) -> EndpointConfig {
        let mut c = self.config.clone().unwrap_or_default();
        if let Some(a) = &self.association {
            c.association = a.clone();
        }
        let s = &self.set;
        let a = &mut c.association;
        if let Some(on) = s.listen {
            c.listen = on;
        }
        if let Some(p) = s.port {
            c.port = p;
        }
        if let Some(cmt) = s.cmt {
            a.cmt = cmt;
        }
        if let Some(on) = s.idata {
            a.idata = on;
        }
        if let Some((out, inb)) = s.streams {
            a.outbound_streams = out;
            a.max_inbound_streams = inb;
        }
        if let Some(k) = s.stream_scheduler {
            a.stream_scheduler = k;
        }
        if let Some((send, recv)) = s.buffers {
            a.send_buffer = send;
            a.recv_buffer = recv;
        }
        if let Some(m) = s.max_message_size {
            a.max_message_size = m;
        }
        c
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
        let config = self.endpoint_config();
        config.validate()?;
        Ok(Endpoint::bind_with(config, &self.addrs, self.net)?)
    }
}
