//! Protocol stacks a candidate can use, what each provides (RFC 9623 §4.1.2: the
//! properties that decide which candidates survive), and the one internal interface the
//! rest of braid-taps talks to (`Link`).
//!
//! Every braid-net call lives in `stack/braid.rs`; the TCP framer in [`tcp`], plain UDP
//! in `udp`.

pub(crate) mod braid;
pub mod tcp;
pub(crate) mod udp;

use std::net::SocketAddr;

use bytes::Bytes;

use crate::error::ConnectionError;
use crate::message::MessageContext;
use crate::properties::{CapacityProfile, Preference, TransportProperties};

/// A protocol stack braid-taps can race.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StackKind {
    /// SCTP over UDP (RFC 6951) through braid-net: reliable or partially reliable
    /// messages, streams, multi-homing and CMT.
    Braid,
    /// Kernel TCP with braid-taps's message framer (streams multiplexed on one socket).
    Tcp,
    /// Plain UDP datagrams: unreliable, unordered, no congestion control.
    Udp,
}

impl StackKind {
    /// Every stack, in the default order of preference (braid first: it provides every
    /// property TCP does plus multistreaming without head-of-line blocking).
    pub const ALL: [StackKind; 3] = [StackKind::Braid, StackKind::Tcp, StackKind::Udp];

    /// Its name in policy files and the CIB.
    pub fn name(self) -> &'static str {
        match self {
            Self::Braid => "braid",
            Self::Tcp => "tcp",
            Self::Udp => "udp",
        }
    }

    /// The stack of a name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Whether this stack provides the selection property `name` (RFC 9622 §6.2 names).
    pub fn provides(self, name: &str) -> bool {
        use StackKind::*;
        match name {
            "reliability" | "preserveOrder" | "congestionControl" => matches!(self, Braid | Tcp),
            // TCP's framed streams share one byte stream: head-of-line blocking, so they do
            // not count as multistreaming (RFC 9622 §6.2.6); clone() still works on them.
            "multistreaming" | "multipath" | "perMsgReliability" => self == Braid,
            "preserveMsgBoundaries" => true,
            _ => false,
        }
    }

    /// Why this stack fails the properties, or `None` if it survives (Require/Prohibit of
    /// every selection property and of the stack itself, RFC 9622 §6.2).
    pub fn rejected_by(self, props: &TransportProperties) -> Option<String> {
        for name in TransportProperties::SELECTION_NAMES {
            let p = props.get(name).unwrap_or_default();
            if !p.admits(self.provides(name)) {
                return Some(format!("{name} is {}", p.name()));
            }
        }
        let own = stack_preference(props, self);
        if own == Preference::Prohibit {
            return Some("the stack is prohibited".into());
        }
        let required: Vec<_> = props
            .stacks
            .iter()
            .filter(|(_, p)| *p == Preference::Require)
            .collect();
        if !required.is_empty() && own != Preference::Require {
            return Some("another stack is required".into());
        }
        None
    }

    /// Ordering weight from the Prefer/Avoid properties (lower first, RFC 9622 §6.2).
    pub fn rank(self, props: &TransportProperties) -> i32 {
        let mut r = stack_preference(props, self).rank(true);
        for name in TransportProperties::SELECTION_NAMES {
            r += props
                .get(name)
                .unwrap_or_default()
                .rank(self.provides(name));
        }
        r
    }
}

impl std::fmt::Display for StackKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

fn stack_preference(props: &TransportProperties, k: StackKind) -> Preference {
    props
        .stacks
        .iter()
        .find(|(s, _)| s == k.name())
        .map_or(Preference::NoPreference, |(_, p)| *p)
}

/// One message (or end-of-stream marker) a link received.
#[derive(Debug)]
pub(crate) struct Inbound {
    pub(crate) stream: u16,
    pub(crate) data: Bytes,
    pub(crate) ordered: bool,
    /// The peer closed this stream (braid-taps's end-of-stream marker).
    pub(crate) end: bool,
}

/// What a stack needs from the Preconnection to open or accept a link.
#[derive(Debug, Clone)]
pub(crate) struct LinkConfig {
    pub(crate) props: TransportProperties,
}

impl LinkConfig {
    pub(crate) fn immediate_sack(&self) -> bool {
        self.props.conn_capacity_profile == CapacityProfile::LowLatencyInteractive
    }
}

/// An established transport connection of one stack (a braid association, a TCP socket,
/// a UDP flow).
#[derive(Debug)]
pub(crate) enum Link {
    Braid(braid::BraidLink),
    Tcp(tcp::TcpLink),
    Udp(udp::UdpLink),
}

impl Link {
    pub(crate) fn stack(&self) -> StackKind {
        match self {
            Self::Braid(_) => StackKind::Braid,
            Self::Tcp(_) => StackKind::Tcp,
            Self::Udp(_) => StackKind::Udp,
        }
    }

    pub(crate) fn remote(&self) -> SocketAddr {
        match self {
            Self::Braid(l) => l.remote(),
            Self::Tcp(l) => l.remote(),
            Self::Udp(l) => l.remote(),
        }
    }

    /// How many streams (Connections of a group) the link carries at most.
    /// connPriority (RFC 9622 §8.1.2) of `stream`: braid's stream priority, which the
    /// Priority scheduler (connScheduler) honours; TCP and UDP have one flow: nothing to do.
    pub(crate) fn set_stream_priority(&self, stream: u16, priority: u32) {
        if let Self::Braid(l) = self {
            l.set_stream_priority(stream, priority);
        }
    }

    pub(crate) fn max_streams(&self) -> u16 {
        match self {
            Self::Braid(l) => l.max_streams(),
            Self::Tcp(_) => u16::MAX,
            Self::Udp(_) => 1,
        }
    }

    pub(crate) async fn send(
        &self,
        stream: u16,
        data: Bytes,
        ctx: &MessageContext,
    ) -> Result<(), ConnectionError> {
        match self {
            Self::Braid(l) => l.send(stream, data, ctx).await,
            Self::Tcp(l) => l.send(stream, data, ctx, false).await,
            Self::Udp(l) => l.send(data).await,
        }
    }

    /// Sends the end-of-stream marker of `stream` (the substitute for an RFC 6525 stream
    /// reset, which braid does not have).
    pub(crate) async fn send_end(&self, stream: u16) -> Result<(), ConnectionError> {
        match self {
            Self::Braid(l) => l.send_end(stream).await,
            Self::Tcp(l) => {
                l.send(stream, Bytes::new(), &MessageContext::default(), true)
                    .await
            }
            Self::Udp(_) => Ok(()),
        }
    }

    /// The next inbound message; `None` once the link is closed.
    pub(crate) async fn recv(&self) -> Option<Inbound> {
        match self {
            Self::Braid(l) => l.recv().await,
            Self::Tcp(l) => l.recv().await,
            Self::Udp(l) => l.recv().await,
        }
    }

    /// Graceful close of the whole link.
    pub(crate) async fn close(&self) {
        match self {
            Self::Braid(l) => l.close().await,
            Self::Tcp(l) => l.close().await,
            Self::Udp(l) => l.close(),
        }
    }

    /// Abortive close of the whole link.
    pub(crate) fn abort(&self) {
        match self {
            Self::Braid(l) => l.abort(),
            Self::Tcp(l) => l.abort(),
            Self::Udp(l) => l.close(),
        }
    }

    /// The (local, remote) address pairs the link uses: braid's paths, else one.
    pub(crate) async fn paths(&self) -> Vec<(SocketAddr, SocketAddr)> {
        match self {
            Self::Braid(l) => l.paths().await,
            _ => vec![(SocketAddr::from(([0, 0, 0, 0], 0)), self.remote())],
        }
    }

    /// Smoothed RTT if the stack measured one (braid: the primary path's SRTT).
    pub(crate) async fn srtt(&self) -> Option<std::time::Duration> {
        match self {
            Self::Braid(l) => l.srtt().await,
            _ => None,
        }
    }
}

/// One racing attempt: opens a link of `kind` from `local` to `remote` (RFC 9623 §4.2);
/// braid also binds `extra_locals` and lists `extra_remotes` (multi-homing, multipath).
pub(crate) async fn open(
    kind: StackKind,
    local: SocketAddr,
    remote: SocketAddr,
    extra_locals: &[SocketAddr],
    extra_remotes: &[SocketAddr],
    cfg: &LinkConfig,
) -> Result<Link, String> {
    match kind {
        StackKind::Braid => {
            let locals: Vec<_> = std::iter::once(local)
                .chain(extra_locals.iter().copied())
                .collect();
            let remotes: Vec<_> = std::iter::once(remote)
                .chain(extra_remotes.iter().copied())
                .collect();
            braid::connect(&locals, &remotes, cfg)
                .await
                .map(Link::Braid)
        }
        StackKind::Tcp => tcp::connect(local, remote).await.map(Link::Tcp),
        StackKind::Udp => udp::connect(local, remote).await.map(Link::Udp),
    }
}
