//! The path-scheduler seam: which path the next packet of new data takes, and what a
//! scheduler learns when one leaves. One file per scheduler; each owns its state.
//!
//! The association decides the rest and hands the scheduler its answers: which paths are
//! usable and admitted for new data (RFC 9260 §6.4, §6.4.1; the path cap and the window
//! cover rule, `path_select`), whether a path could send a packet now (`ready`: cwnd,
//! Max.Burst, pacing, peer window, retransmissions waiting there), and that retransmissions
//! go first (RFC 9260 §6.1 C). Retransmission placement (RTX-SAME … LOSSRATE, Iyengar et
//! al. §4.3) stays a policy of the association (`RtxPolicy`), the same under every scheduler.
//!
//! | scheduler | file | new data goes to |
//! |---|---|---|
//! | [`Failover`] | [`failover`] | the primary, or its failover (RFC 9260 §6.4.1) |
//! | [`RoundRobin`] | [`round_robin`] | each usable path in turn until it has no room (CMT, Iyengar et al. §2) |
//! | [`CwndRtt`] | [`cwnd_rtt`] | the path that carried least for its cwnd/RTT (LS-SCTP, Abd El Al et al. §4.3) |
//! | [`MinRtt`] | [`min_rtt`] | the path with the lowest smoothed RTT that has room (Linux MPTCP's classic default) |

pub(crate) mod cwnd_rtt;
pub(crate) mod failover;
pub(crate) mod min_rtt;
pub(crate) mod round_robin;

use std::time::Duration;

use crate::config::PathAssignment;
use crate::path::PathId;

pub(crate) use cwnd_rtt::CwndRtt;
pub(crate) use failover::Failover;
pub(crate) use min_rtt::MinRtt;
pub(crate) use round_robin::RoundRobin;

/// What a scheduler reads of one path, built once per decision.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PathView {
    /// The path.
    pub(crate) id: PathId,
    /// Smoothed RTT, if measured.
    pub(crate) srtt: Option<Duration>,
    /// Congestion window, bytes.
    pub(crate) cwnd: usize,
    /// Bytes in flight.
    pub(crate) flight: usize,
    /// Bandwidth estimate cwnd/SRTT, bytes per second (RTO.Initial for an unmeasured RTT).
    pub(crate) rate: f64,
}

/// A path scheduler: the new-data policy of an association.
pub(crate) trait PathScheduler {
    /// Whether new data spreads over every admitted path (multipath) rather than keeping to
    /// one (the primary or its failover). A property of the kind, not of the state.
    fn spreads(&self) -> bool {
        true
    }
    /// Whether the policy shares the peer's window by rate, keeping a message's fragments
    /// on one path and each path below its share (LS-SCTP, Abd El Al et al. §4.3, §4.5). A
    /// property of the kind, not of the state.
    fn shares_window(&self) -> bool {
        false
    }
    /// The path of the next packet among those `ready` says could send one now; `None`
    /// when none can. `paths` holds every path in id order.
    fn next(&mut self, paths: &[PathView], ready: &mut dyn FnMut(PathId) -> bool)
    -> Option<PathId>;
    /// The turn went to `path` for a retransmission waiting there.
    fn on_turn(&mut self, _path: PathId) {}
    /// `len` bytes of new data left on `path`.
    fn on_sent(&mut self, _path: &PathView, _len: usize) {}
    /// Whether `on_sent` does anything (the sender then builds the view).
    fn wants_sent(&self) -> bool {
        false
    }
}

/// The scheduler in force, dispatched by enum (no allocation, no virtual call).
#[derive(Debug, Clone)]
pub(crate) enum AnyScheduler {
    /// Single-path SCTP with failover.
    Failover(Failover),
    /// CMT's round robin.
    RoundRobin(RoundRobin),
    /// LS-SCTP's cwnd/RTT assignment.
    CwndRtt(CwndRtt),
    /// Lowest smoothed RTT first.
    MinRtt(MinRtt),
}

impl Default for AnyScheduler {
    fn default() -> Self {
        Self::Failover(Failover::default())
    }
}

macro_rules! dispatch {
    ($self:expr, $s:ident => $e:expr) => {
        match $self {
            AnyScheduler::Failover($s) => $e,
            AnyScheduler::RoundRobin($s) => $e,
            AnyScheduler::CwndRtt($s) => $e,
            AnyScheduler::MinRtt($s) => $e,
        }
    };
}

impl AnyScheduler {
    /// The scheduler for `assignment` under multipath (CMT or LS-SCTP), or failover without.
    pub(crate) fn new(multipath: bool, assignment: PathAssignment) -> Self {
        match (multipath, assignment) {
            (false, _) => Self::Failover(Failover::default()),
            (true, PathAssignment::RoundRobin) => Self::RoundRobin(RoundRobin::default()),
            (true, PathAssignment::CwndRtt) => Self::CwndRtt(CwndRtt::default()),
            (true, PathAssignment::MinRtt) => Self::MinRtt(MinRtt),
        }
    }

    /// Whether `other` is the same scheduler (its state aside).
    pub(crate) fn same_kind(&self, other: &Self) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }

    /// Takes over `old`'s place in the walk over the paths, if both walk them.
    pub(crate) fn carry_cursor(&mut self, old: &Self) {
        let from = match old {
            Self::Failover(f) => f.cursor,
            Self::RoundRobin(r) => r.cursor,
            Self::CwndRtt(_) | Self::MinRtt(_) => return,
        };
        match self {
            Self::Failover(f) => f.cursor = from,
            Self::RoundRobin(r) => r.cursor = from,
            Self::CwndRtt(_) | Self::MinRtt(_) => {}
        }
    }

    /// A fresh scheduler of the same kind, without allocating: it stands in while this one
    /// decides, and answers `spreads` and `shares_window` (properties of the kind) alike.
    pub(crate) fn stand_in(&self) -> Self {
        match self {
            Self::Failover(_) => Self::Failover(Failover::default()),
            Self::RoundRobin(_) => Self::RoundRobin(RoundRobin::default()),
            Self::CwndRtt(_) => Self::CwndRtt(CwndRtt::default()),
            Self::MinRtt(_) => Self::MinRtt(MinRtt),
        }
    }
}

/// Every hook is forwarded, defaults included, so a variant's override is the one called.
impl PathScheduler for AnyScheduler {
    fn spreads(&self) -> bool {
        dispatch!(self, s => s.spreads())
    }
    fn shares_window(&self) -> bool {
        dispatch!(self, s => s.shares_window())
    }
    fn next(
        &mut self,
        paths: &[PathView],
        ready: &mut dyn FnMut(PathId) -> bool,
    ) -> Option<PathId> {
        dispatch!(self, s => s.next(paths, ready))
    }
    fn on_turn(&mut self, path: PathId) {
        dispatch!(self, s => s.on_turn(path));
    }
    fn on_sent(&mut self, path: &PathView, len: usize) {
        dispatch!(self, s => s.on_sent(path, len));
    }
    fn wants_sent(&self) -> bool {
        dispatch!(self, s => s.wants_sent())
    }
}

/// The paths from `cursor` on, wrapping: the first `ready` one, which becomes the cursor.
/// Round robin and failover walk the paths so.
pub(crate) fn walk_from(
    cursor: &mut usize,
    n: usize,
    ready: &mut dyn FnMut(PathId) -> bool,
) -> Option<PathId> {
    for k in 0..n {
        let i = (*cursor + k) % n;
        if ready(PathId(i as u16)) {
            *cursor = i;
            return Some(PathId(i as u16));
        }
    }
    None
}
