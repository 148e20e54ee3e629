//! Congestion control, one controller per path (RFC 9260 §7.2), and the coupled variants for
//! paths that may share a bottleneck (CMT/RP, MPTCP's LIA of RFC 6356).
//!
//! The seam is [`Controller`]: the sender calls `on_ack`, `on_loss`, `on_timeout`, `on_idle`
//! and `on_all_acked` and reads `window`. A coupled controller sees every path of the
//! association through [`Ctx`]; [`AnyController`] dispatches by enum (as smoltcp's
//! `AnyController` does) so the Reno fast path never builds that view. One file per
//! algorithm: [`reno`] holds RFC 9260's state machine; [`rpv1`], [`rpv2`] and [`lia`] only
//! say how much a coupled path's window moves ([`CoupledRule`]), with the shared arithmetic
//! and the comparison table in [`coupled`].

mod coupled;
mod cubic;
mod hystart;
mod lia;
mod reno;
mod rpv1;
mod rpv2;

use std::marker::PhantomData;
use std::time::Duration;

pub(crate) use coupled::{CcPathView, rfc_initial_cwnd};
pub(crate) use reno::Reno;

use cubic::Cubic;
use lia::Lia;
use rpv1::Rpv1;
use rpv2::Rpv2;

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
    /// fills long fat paths that Reno's linear growth takes minutes to open (issue 17).
    #[default]
    Cubic,
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

/// A per-path congestion controller (RFC 9260 §7.2 and its coupled variants).
pub(crate) trait Controller {
    /// Congestion window, bytes.
    fn window(&self) -> usize;
    /// Slow-start threshold, bytes.
    fn ssthresh(&self) -> usize;
    /// New data acknowledged outside fast recovery; `flight_before` is the path's flight
    /// size before this SACK (cwnd grows only when it was fully used, §7.2.1, §7.2.2).
    fn on_ack(&mut self, ctx: &Ctx<'_>, bytes_acked: usize, flight_before: usize);
    /// A fast retransmit starts fast recovery on the path (§7.2.3, §7.2.4).
    fn on_loss(&mut self, ctx: &Ctx<'_>);
    /// T3-rtx expired on the path (§7.2.3).
    fn on_timeout(&mut self, ctx: &Ctx<'_>);
    /// One RTO passed without data sent on the path (§7.2.1).
    fn on_idle(&mut self);
    /// Everything outstanding on the path was acknowledged (§7.2.2).
    fn on_all_acked(&mut self);
}

/// A boxed controller (a large state kept off the path's inline size) is one too.
impl<T: Controller> Controller for Box<T> {
    fn window(&self) -> usize {
        (**self).window()
    }
    fn ssthresh(&self) -> usize {
        (**self).ssthresh()
    }
    fn on_ack(&mut self, ctx: &Ctx<'_>, bytes_acked: usize, flight_before: usize) {
        (**self).on_ack(ctx, bytes_acked, flight_before);
    }
    fn on_loss(&mut self, ctx: &Ctx<'_>) {
        (**self).on_loss(ctx);
    }
    fn on_timeout(&mut self, ctx: &Ctx<'_>) {
        (**self).on_timeout(ctx);
    }
    fn on_idle(&mut self) {
        (**self).on_idle();
    }
    fn on_all_acked(&mut self) {
        (**self).on_all_acked();
    }
}

/// How much a coupled variant moves a path's window; the gates and the state machine are
/// RFC 9260's ([`Reno`]). Every function sees only the coupled group plus the path itself.
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
    reno: Reno,
    rule: PhantomData<R>,
}

impl<R: CoupledRule> Coupled<R> {
    fn new(mtu: usize, peer_rwnd: usize, npaths: usize) -> Self {
        let mut reno = Reno::new(mtu, peer_rwnd);
        reno.cwnd = R::initial_cwnd(mtu, npaths);
        Self {
            reno,
            rule: PhantomData,
        }
    }

    /// Catches a view slice taken at the wrong time or indexed with the wrong path.
    fn check_view(&self, ctx: &Ctx<'_>) {
        let v = &ctx.paths[ctx.me];
        debug_assert_eq!(
            (v.cwnd, v.ssthresh, v.mtu),
            (self.reno.cwnd, self.reno.ssthresh, self.reno.mtu()),
            "paths[{}] is not this path's current view",
            ctx.me
        );
    }
}

impl<R: CoupledRule> Controller for Coupled<R> {
    fn window(&self) -> usize {
        self.reno.cwnd
    }

    fn ssthresh(&self) -> usize {
        self.reno.ssthresh
    }

    fn on_ack(&mut self, ctx: &Ctx<'_>, bytes_acked: usize, flight_before: usize) {
        self.check_view(ctx);
        let r = &mut self.reno;
        if r.cwnd <= r.ssthresh {
            // Slow start gates as in §7.2.1; the amount is the variant's.
            if flight_before >= r.cwnd {
                let reno = bytes_acked.min(r.mtu());
                r.cwnd += coupled::with_group(ctx.paths, ctx.me, |g, i| R::ss_increase(g, i, reno));
            }
        } else {
            // Congestion avoidance gates as in §7.2.2; the amount is the variant's.
            r.partial_bytes_acked += bytes_acked;
            if r.partial_bytes_acked >= r.cwnd && flight_before >= r.cwnd {
                r.partial_bytes_acked -= r.cwnd;
                r.cwnd += coupled::with_group(ctx.paths, ctx.me, R::ca_increase);
            }
        }
    }

    fn on_loss(&mut self, ctx: &Ctx<'_>) {
        self.check_view(ctx);
        let r = &mut self.reno;
        r.ssthresh = coupled::with_group(ctx.paths, ctx.me, R::loss_ssthresh);
        r.cwnd = r.ssthresh;
        r.partial_bytes_acked = 0;
    }

    fn on_timeout(&mut self, ctx: &Ctx<'_>) {
        self.check_view(ctx);
        let r = &mut self.reno;
        r.ssthresh = coupled::with_group(ctx.paths, ctx.me, R::loss_ssthresh);
        r.cwnd = r.mtu();
        r.partial_bytes_acked = 0;
    }

    fn on_idle(&mut self) {
        self.reno.on_idle_rto();
    }

    fn on_all_acked(&mut self) {
        self.reno.on_all_acked();
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
}

macro_rules! dispatch {
    ($self:expr, $c:ident => $e:expr) => {
        match $self {
            AnyController::Reno($c) => $e,
            AnyController::Rpv1($c) => $e,
            AnyController::Rpv2($c) => $e,
            AnyController::Lia($c) => $e,
            AnyController::Cubic($c) => $e,
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
        }
    }

    /// Whether the controller reads the other paths (the sender then builds [`Ctx`]).
    pub(crate) fn is_coupled(&self) -> bool {
        !matches!(self, Self::Reno(_) | Self::Cubic(_))
    }

    /// What a SACK tells the controller besides acknowledged bytes: the time, the smallest
    /// RTT of a first transmission it acknowledged, the path's smoothed RTT, the highest send
    /// sequence it acknowledged on the path and the next one to be sent (HyStart++ rounds).
    pub(crate) fn observe(
        &mut self,
        now: crate::time::Instant,
        rtt: Option<Duration>,
        srtt: Option<Duration>,
        acked: u64,
        next: u64,
    ) {
        if let Self::Cubic(c) = self {
            c.observe(now, rtt, srtt, acked, next);
        }
    }

    /// The RFC 9260 state underneath (cwnd, ssthresh, partial_bytes_acked).
    pub(crate) fn state(&self) -> &Reno {
        match self {
            Self::Reno(r) => r,
            Self::Rpv1(c) => &c.reno,
            Self::Rpv2(c) => &c.reno,
            Self::Lia(c) => &c.reno,
            Self::Cubic(c) => &c.reno,
        }
    }

    /// Undoes a reduction found spurious (RFC 4015 §3 step (5), as Ladha et al. §5 uses it):
    /// every controller keeps RFC 9260's state underneath, so the response is the same.
    pub(crate) fn restore(&mut self, cwnd: usize, ssthresh: usize) {
        let r = match self {
            Self::Reno(r) => r,
            Self::Rpv1(c) => &mut c.reno,
            Self::Rpv2(c) => &mut c.reno,
            Self::Lia(c) => &mut c.reno,
            Self::Cubic(c) => {
                c.undo();
                &mut c.reno
            }
        };
        r.cwnd = cwnd;
        r.ssthresh = ssthresh;
        r.partial_bytes_acked = 0;
    }

    /// The path's PMTU moved (PLPMTUD, ICMP): the window grows and floors in the new MTU
    /// (RFC 9260 §7.2.1, §7.2.2 count in MTUs of the path).
    pub(crate) fn set_mtu(&mut self, mtu: usize) {
        match self {
            Self::Reno(r) => r.mtu = mtu,
            Self::Rpv1(c) => c.reno.mtu = mtu,
            Self::Rpv2(c) => c.reno.mtu = mtu,
            Self::Lia(c) => c.reno.mtu = mtu,
            Self::Cubic(c) => c.reno.mtu = mtu,
        }
    }

    /// This controller as the coupled rules see it; `srtt` is the path's smoothed RTT.
    pub(crate) fn view(&self, srtt: Option<Duration>) -> CcPathView {
        self.state().view(srtt)
    }
}

impl Controller for AnyController {
    fn window(&self) -> usize {
        dispatch!(self, c => Controller::window(c))
    }

    fn ssthresh(&self) -> usize {
        dispatch!(self, c => Controller::ssthresh(c))
    }

    fn on_ack(&mut self, ctx: &Ctx<'_>, bytes_acked: usize, flight_before: usize) {
        dispatch!(self, c => Controller::on_ack(c, ctx, bytes_acked, flight_before));
    }

    fn on_loss(&mut self, ctx: &Ctx<'_>) {
        dispatch!(self, c => Controller::on_loss(c, ctx));
    }

    fn on_timeout(&mut self, ctx: &Ctx<'_>) {
        dispatch!(self, c => Controller::on_timeout(c, ctx));
    }

    fn on_idle(&mut self) {
        dispatch!(self, c => Controller::on_idle(c));
    }

    fn on_all_acked(&mut self) {
        dispatch!(self, c => Controller::on_all_acked(c));
    }
}
