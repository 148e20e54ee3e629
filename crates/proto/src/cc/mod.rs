//! Congestion control, one controller per path (RFC 9260 §7.2), and the coupled variants for
//! paths that may share a bottleneck (CMT/RP, MPTCP's LIA of RFC 6356).
//!
//! The seam is [`Controller`]: a controller owns its state, RFC 9260's [`Window`] (cwnd,
//! ssthresh, partial_bytes_acked, MTU) among it; it must say how it reacts to an ack, a
//! fast retransmit and a timeout, and every other hook (a SACK's time and RTT sample, idle,
//! all acked, MTU change, spurious-loss undo, path count) has a default body acting on the
//! window. Slow start is a part a controller composes ([`slow_start`]: RFC 9260's or
//! HyStart++). A coupled controller sees every path of the association through [`Ctx`];
//! [`AnyController`] dispatches by enum (as smoltcp's `AnyController` does) so the
//! uncoupled fast path never builds that view. One file per algorithm: [`reno`], [`cubic`];
//! [`rpv1`], [`rpv2`] and [`lia`] only say how much a coupled path's window moves
//! ([`CoupledRule`]), with the shared arithmetic and the comparison table in [`coupled`].

mod coupled;
mod cubic;
#[cfg(test)]
pub(crate) mod fixed;
mod hystart;
mod lia;
mod reno;
mod rpv1;
mod rpv2;
mod slow_start;
mod window;

use std::marker::PhantomData;
use std::time::Duration;

pub(crate) use coupled::{CcPathView, rfc_initial_cwnd};
pub(crate) use reno::Reno;
pub(crate) use window::Window;

use cubic::Cubic;
use lia::Lia;
use rpv1::Rpv1;
use rpv2::Rpv2;
use slow_start::SlowStart;

/// The congestion controller of an association's paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CongestionControl {
    /// Independent per-path RFC 9260 §7.2 controllers.
    Reno,
    /// CMT/RP version 1 (Dreibholz et al., AINA 2010): shares by ssthresh.
    CmtRpv1,
    /// CMT/RP version 2 (Dreibholz et al., GLOBECOM 2010): shares by bandwidth cwnd/srtt.
    CmtRpv2,
    /// Linked Increases (RFC 6356).
    Lia,
    /// Independent per-path CUBIC (RFC 9438) with HyStart++ (RFC 9406): the default, as it
    /// fills long fat paths that Reno's linear growth takes minutes to open.
    #[default]
    Cubic,
    /// CUBIC as Linux runs it (its Reno-friendly α never switches to 1, its curve is aimed
    /// one minimum RTT ahead): the kernel CUBIC flows' own aggressiveness, for sharing a
    /// bottleneck with them on even terms.
    CubicLinux,
}

impl CongestionControl {
    /// Either CUBIC.
    pub fn is_cubic(self) -> bool {
        matches!(self, Self::Cubic | Self::CubicLinux)
    }
}

/// What a controller sees of the association when its window moves: every path's view
/// taken before this event's updates, and which one is its own. Uncoupled controllers ignore
/// it (the sender passes an empty slice to them).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ctx<'a> {
    /// Every path of the association (`coupled` says which count in the totals).
    pub(crate) paths: &'a [CcPathView],
    /// Index of the controller's own path in `paths`.
    pub(crate) me: usize,
}

/// What a SACK tells a path's controller besides acknowledged bytes: the time, the smallest
/// RTT of a first transmission it acknowledged on the path, the path's smoothed RTT, the
/// highest send sequence it acknowledged there and the next one to be sent (rounds, as
/// HyStart++ counts them).
#[derive(Debug, Clone, Copy)]
pub(crate) struct AckSample {
    pub(crate) now: crate::time::Instant,
    pub(crate) rtt: Option<Duration>,
    pub(crate) srtt: Option<Duration>,
    pub(crate) acked_seq: u64,
    pub(crate) next_seq: u64,
}

/// A per-path congestion controller (RFC 9260 §7.2 and its coupled variants). It owns its
/// state, RFC 9260's [`Window`] among it; every hook but the three reactions has a default
/// body that acts on that window as RFC 9260 says.
pub(crate) trait Controller {
    /// The path's RFC 9260 window (cwnd, ssthresh, partial_bytes_acked, MTU).
    fn state(&self) -> &Window;
    /// The same, to change.
    fn state_mut(&mut self) -> &mut Window;
    /// New data acknowledged outside fast recovery; `flight_before` is the path's flight
    /// size before this SACK (cwnd grows only when it was fully used, §7.2.1, §7.2.2).
    fn on_ack(&mut self, ctx: &Ctx<'_>, bytes_acked: usize, flight_before: usize);
    /// A fast retransmit starts fast recovery on the path (§7.2.3, §7.2.4).
    fn on_loss(&mut self, ctx: &Ctx<'_>);
    /// T3-rtx expired on the path (§7.2.3).
    fn on_timeout(&mut self, ctx: &Ctx<'_>);

    /// Congestion window, bytes.
    fn window(&self) -> usize {
        self.state().cwnd
    }
    /// Slow-start threshold, bytes.
    fn ssthresh(&self) -> usize {
        self.state().ssthresh
    }
    /// Whether the controller reads the other paths (the sender then builds [`Ctx`]).
    fn is_coupled(&self) -> bool {
        false
    }
    /// Every SACK that acknowledged something on the path, before `on_ack`: its time, RTT
    /// sample and round position.
    fn on_sack(&mut self, _sample: &AckSample) {}
    /// One RTO passed without data sent on the path (§7.2.1).
    fn on_idle(&mut self) {
        self.state_mut().idle_decay();
    }
    /// Everything outstanding on the path was acknowledged (§7.2.2).
    fn on_all_acked(&mut self) {
        self.state_mut().partial_bytes_acked = 0;
    }
    /// The path's PMTU moved (PLPMTUD, ICMP): the window grows and floors in the new MTU.
    fn set_mtu(&mut self, mtu: usize) {
        self.state_mut().mtu = mtu;
    }
    /// A reduction was found spurious (RFC 4015 §3 step (5), as Ladha et al. §5 uses it):
    /// the window it saved comes back.
    fn undo(&mut self, cwnd: usize, ssthresh: usize) {
        self.state_mut().restore(cwnd, ssthresh);
    }
    /// The association now has `npaths` paths (one was added or removed).
    fn on_path_count(&mut self, _npaths: usize) {}
    /// This controller as the coupled rules see it; `srtt` is the path's smoothed RTT.
    fn view(&self, srtt: Option<Duration>) -> CcPathView {
        self.state().view(srtt)
    }
}

/// How much a coupled variant moves a path's window; the gates and the state machine are
/// RFC 9260's ([`Window`]). Every function sees only the coupled group plus the path itself.
pub(crate) trait CoupledRule {
    /// Slow-start increase for one SACK, given Reno's `min(acked, MTU)`.
    fn ss_increase(paths: &[CcPathView], i: usize, reno: usize) -> usize;
    /// Congestion-avoidance increase, applied once per cwnd of acknowledged bytes.
    fn ca_increase(paths: &[CcPathView], i: usize) -> usize;
    /// ssthresh after a fast retransmit or a timeout on path `i`.
    fn loss_ssthresh(paths: &[CcPathView], i: usize) -> usize;
    /// Initial cwnd of one of `npaths` paths.
    fn initial_cwnd(mtu: usize, npaths: usize) -> usize;
}

/// RFC 9260's state machine with the amounts of the coupled rule `R`.
#[derive(Debug, Clone)]
pub(crate) struct Coupled<R> {
    w: Window,
    ss: SlowStart,
    /// Nothing moved the window yet: its initial share may still follow the path count.
    fresh: bool,
    rule: PhantomData<R>,
}

impl<R: CoupledRule> Coupled<R> {
    fn new(mtu: usize, peer_rwnd: usize, npaths: usize) -> Self {
        let mut w = Window::new(mtu, peer_rwnd);
        w.cwnd = R::initial_cwnd(mtu, npaths);
        Self {
            w,
            ss: SlowStart::Standard,
            fresh: true,
            rule: PhantomData,
        }
    }

    /// Catches a view slice taken at the wrong time or indexed with the wrong path.
    fn check_view(&self, ctx: &Ctx<'_>) {
        let v = &ctx.paths[ctx.me];
        debug_assert_eq!(
            (v.cwnd, v.ssthresh, v.mtu),
            (self.w.cwnd, self.w.ssthresh, self.w.mtu),
            "paths[{}] is not this path's current view",
            ctx.me
        );
    }
}

impl<R: CoupledRule> Controller for Coupled<R> {
    fn state(&self) -> &Window {
        &self.w
    }

    fn state_mut(&mut self) -> &mut Window {
        &mut self.w
    }

    fn is_coupled(&self) -> bool {
        true
    }

    fn on_ack(&mut self, ctx: &Ctx<'_>, bytes_acked: usize, flight_before: usize) {
        self.check_view(ctx);
        self.fresh = false;
        let w = &mut self.w;
        if w.in_slow_start() {
            // Slow start gates as in §7.2.1; the amount is the variant's.
            if flight_before >= w.cwnd {
                let rfc = self.ss.increase(bytes_acked.min(w.mtu));
                w.cwnd += coupled::with_group(ctx.paths, ctx.me, |g, i| R::ss_increase(g, i, rfc));
            }
        } else {
            // Congestion avoidance gates as in §7.2.2; the amount is the variant's.
            w.avoid(bytes_acked, flight_before, || {
                coupled::with_group(ctx.paths, ctx.me, R::ca_increase)
            });
        }
    }

    fn on_loss(&mut self, ctx: &Ctx<'_>) {
        self.check_view(ctx);
        self.fresh = false;
        let ssthresh = coupled::with_group(ctx.paths, ctx.me, R::loss_ssthresh);
        self.w.reduce(ssthresh, false);
        self.ss.on_loss();
    }

    fn on_timeout(&mut self, ctx: &Ctx<'_>) {
        self.check_view(ctx);
        self.fresh = false;
        let ssthresh = coupled::with_group(ctx.paths, ctx.me, R::loss_ssthresh);
        self.w.reduce(ssthresh, true);
        self.ss.on_timeout();
    }

    fn on_sack(&mut self, s: &AckSample) {
        if self.w.in_slow_start() && self.ss.on_sack(s) {
            self.w.ssthresh = self.w.cwnd;
        }
    }

    fn on_path_count(&mut self, npaths: usize) {
        // CMT/RP splits the initial window among the paths; a window in use keeps its size.
        if self.fresh {
            self.w.cwnd = R::initial_cwnd(self.w.mtu, npaths);
        }
    }
}

/// One path's controller, dispatched by enum so the uncoupled path stays a direct call.
#[derive(Debug, Clone)]
pub(crate) enum AnyController {
    /// RFC 9260 §7.2.
    Reno(Reno),
    /// CMT/RPv1.
    Rpv1(Coupled<Rpv1>),
    /// CMT/RPv2.
    Rpv2(Coupled<Rpv2>),
    /// LIA.
    Lia(Coupled<Lia>),
    /// CUBIC (boxed: its curve state is several times Reno's).
    Cubic(Box<Cubic>),
    /// A window that never moves (tests only).
    #[cfg(test)]
    Fixed(fixed::Fixed),
}

macro_rules! dispatch {
    ($self:expr, $c:ident => $e:expr) => {
        match $self {
            AnyController::Reno($c) => $e,
            AnyController::Rpv1($c) => $e,
            AnyController::Rpv2($c) => $e,
            AnyController::Lia($c) => $e,
            AnyController::Cubic($c) => $e,
            #[cfg(test)]
            AnyController::Fixed($c) => $e,
        }
    };
}

impl AnyController {
    /// The controller of one of `npaths` paths under `algo`: RFC 9260 §7.2.1's initial
    /// window (split among the paths for CMT/RP) and a large ssthresh; `peer_rwnd` is the
    /// a_rwnd of INIT/INIT-ACK.
    pub(crate) fn new(
        algo: CongestionControl,
        mtu: usize,
        peer_rwnd: usize,
        npaths: usize,
    ) -> Self {
        match algo {
            CongestionControl::Reno => Self::Reno(Reno::new(mtu, peer_rwnd)),
            CongestionControl::CmtRpv1 => Self::Rpv1(Coupled::new(mtu, peer_rwnd, npaths)),
            CongestionControl::CmtRpv2 => Self::Rpv2(Coupled::new(mtu, peer_rwnd, npaths)),
            CongestionControl::Lia => Self::Lia(Coupled::new(mtu, peer_rwnd, npaths)),
            CongestionControl::Cubic => Self::Cubic(Box::new(Cubic::new(mtu, peer_rwnd))),
            CongestionControl::CubicLinux => Self::Cubic(Box::new(Cubic::with_flavour(
                mtu,
                peer_rwnd,
                cubic::Flavour::Linux,
            ))),
        }
    }
}

/// Every hook is forwarded, defaults included, so a variant's override is the one called.
impl Controller for AnyController {
    fn state(&self) -> &Window {
        dispatch!(self, c => c.state())
    }
    fn state_mut(&mut self) -> &mut Window {
        dispatch!(self, c => c.state_mut())
    }
    fn on_ack(&mut self, ctx: &Ctx<'_>, bytes_acked: usize, flight_before: usize) {
        dispatch!(self, c => c.on_ack(ctx, bytes_acked, flight_before));
    }
    fn on_loss(&mut self, ctx: &Ctx<'_>) {
        dispatch!(self, c => c.on_loss(ctx));
    }
    fn on_timeout(&mut self, ctx: &Ctx<'_>) {
        dispatch!(self, c => c.on_timeout(ctx));
    }
    fn window(&self) -> usize {
        dispatch!(self, c => c.window())
    }
    fn ssthresh(&self) -> usize {
        dispatch!(self, c => c.ssthresh())
    }
    fn is_coupled(&self) -> bool {
        dispatch!(self, c => c.is_coupled())
    }
    fn on_sack(&mut self, sample: &AckSample) {
        dispatch!(self, c => c.on_sack(sample));
    }
    fn on_idle(&mut self) {
        dispatch!(self, c => c.on_idle());
    }
    fn on_all_acked(&mut self) {
        dispatch!(self, c => c.on_all_acked());
    }
    fn set_mtu(&mut self, mtu: usize) {
        dispatch!(self, c => c.set_mtu(mtu));
    }
    fn undo(&mut self, cwnd: usize, ssthresh: usize) {
        dispatch!(self, c => c.undo(cwnd, ssthresh));
    }
    fn on_path_count(&mut self, npaths: usize) {
        dispatch!(self, c => c.on_path_count(npaths));
    }
    fn view(&self, srtt: Option<Duration>) -> CcPathView {
        dispatch!(self, c => c.view(srtt))
    }
}
