//! `braid-proto`: the sans-IO SCTP association core (RFC 9260).
//!
//! No sockets, no clock, no threads: an [`Endpoint`] and its [`Association`]s are driven
//! only by the datagrams, timeouts and application calls handed to them, with time as an
//! argument and randomness from a seed given at construction. The simulator and the socket
//! driver run this same code.
//!
//! A driver's loop: feed [`Endpoint::handle_datagram`] and [`Endpoint::handle_timeout`],
//! then drain [`Endpoint::poll_transmit`] (until `None`) and [`Endpoint::poll_event`], and
//! sleep until [`Endpoint::poll_timeout`].

pub mod association;
mod autotune;
mod cc;
pub mod config;
mod cookie;
pub mod endpoint;
pub mod event;
pub mod path;
#[cfg(feature = "qlog")]
pub mod qlog;
mod recv;
mod sched;
mod serial;
pub mod time;
mod timer;
pub mod trace;

pub use association::{Association, AssociationStats, Negotiated, SendOptions, State, Transmit};
pub use config::{
    AssociationConfig, BufferSplitting, CmtConfig, ConfigError, CongestionControl, EndpointConfig,
    LossDetection, NrSackPolicy, PathAssignment, PathPairing, ReceiveSplit, RtxPolicy, SackPath,
    SchedulerKind, SpuriousDetection, TimeoutHandling, UnknownName,
};
pub use endpoint::{AssocId, ConnectError, Endpoint};
pub use event::{CloseReason, Event, IcmpError, RemovePathError, SendError};
pub use path::plpmtud::PmtuState;
pub use path::{LimitTimes, PathId, PathInfo, PathState, PathStats};
pub use recv::reassembly::ReceivedMessage;
pub use time::Instant;
pub use timer::Timer;
pub use trace::{ChunkSummary, JsonLines, LossRule, TraceEvent, WindowCause};
