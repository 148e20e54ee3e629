//! CUBIC (RFC 9438) for one path, with HyStart++ (RFC 9406) in its slow start, on RFC
//! 9260's gates: cwnd grows only when it was fully used, slow start by at most one MTU per
//! SACK. Windows are counted in segments of the path's MTU where RFC 9438 does.

use std::time::Duration;

use super::slow_start::SlowStart;
use super::window::Window;
use super::{AckSample, Controller, Ctx};
use crate::time::Instant;

/// RFC 9438 §5.1: C, in segments per second cubed.
const C: f64 = 0.4;
/// RFC 9438 §5.1: the multiplicative decrease factor.
const BETA: f64 = 0.7;
/// RFC 9438 §4.3: the Reno-friendly region's additive increase, 3(1-β)/(1+β).
const ALPHA: f64 = 3.0 * (1.0 - BETA) / (1.0 + BETA);

/// What a loss changed, kept to undo it if the loss was spurious (RFC 9438 §4.9).
#[derive(Debug, Clone)]
struct Prior {
    w_max: f64,
    k: f64,
    epoch: Option<(Instant, f64)>,
    w_est: f64,
    cwnd_prior: f64,
    ss: SlowStart,
}

/// Which CUBIC: the RFC's, or Linux's reading of it (net/ipv4/tcp_cubic.c), the CUBIC most
/// TCP flows sharing a bottleneck with braid run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavour {
    /// RFC 9438 as written.
    Rfc9438,
    /// Linux: the Reno-friendly α stays 3(1-β)/(1+β) (no §4.3 switch to 1 past
    /// cwnd_prior), and W_cubic is aimed one minimum RTT ahead (`delay_min`), not one
    /// smoothed RTT.
    Linux,
}

/// One path's CUBIC state over its RFC 9260 window `w`.
#[derive(Debug, Clone)]
pub(crate) struct Cubic {
    pub(crate) w: Window,
    flavour: Flavour,
    /// The smallest RTT sample so far (Linux's `delay_min`).
    min_rtt: Option<Duration>,
    /// cwnd before the last reduction, in segments (W_max).
    w_max: f64,
    /// Seconds from the epoch's start until the window reaches W_max again.
    k: f64,
    /// When the current congestion-avoidance epoch began and cwnd then (segments).
    epoch: Option<(Instant, f64)>,
    /// The Reno-friendly estimate, in segments.
    w_est: f64,
    /// cwnd just before the last reduction, in segments (§4.3's cwnd_prior: where the
    /// Reno-friendly increase goes from α to 1; W_max differs after fast convergence).
    cwnd_prior: f64,
    /// Fractional bytes of growth not yet in cwnd.
    carry: f64,
    /// The latest time and smoothed RTT the sender reported (`on_sack`).
    now: Option<Instant>,
    srtt: Option<Duration>,
    /// HyStart++ (RFC 9406), as RFC 9438 §4.10 recommends.
    pub(crate) ss: SlowStart,
    prior: Option<Prior>,
}

impl Cubic {
    /// RFC 9260 §7.2.1's initial window; `ssthresh` as for Reno.
    pub(crate) fn new(mtu: usize, ssthresh: usize) -> Self {
        Self::with_flavour(mtu, ssthresh, Flavour::Rfc9438)
    }

    /// The same, of the given flavour.
    pub(crate) fn with_flavour(mtu: usize, ssthresh: usize, flavour: Flavour) -> Self {
        Self {
            w: Window::new(mtu, ssthresh),
            flavour,
            min_rtt: None,
            w_max: 0.0,
            k: 0.0,
            epoch: None,
            w_est: 0.0,
            cwnd_prior: 0.0,
            carry: 0.0,
            now: None,
            srtt: None,
            ss: SlowStart::hystart(),
            prior: None,
        }
    }

    fn segments(&self, bytes: usize) -> f64 {
        bytes as f64 / self.w.mtu as f64
    }

    /// W_cubic(t) of RFC 9438 §4.2, segments.
    fn w_cubic(&self, t: f64) -> f64 {
        C * (t - self.k).powi(3) + self.w_max
    }

    fn grow(&mut self, bytes: f64) {
        self.carry += bytes.max(0.0);
        let whole = self.carry.floor();
        self.carry -= whole;
        self.w.cwnd += whole as usize;
    }

    fn congestion_avoidance(&mut self, acked: usize) {
        let Some(now) = self.now else {
            // No time yet (cannot happen after a SACK): RFC 9260's increase.
            let mtu = self.w.mtu;
            self.w.avoid(acked, usize::MAX, || mtu);
            return;
        };
        let cwnd = self.segments(self.w.cwnd);
        let (start, _) = *self.epoch.get_or_insert_with(|| {
            // §4.2: a new epoch; K from how far below W_max the window is.
            if cwnd < self.w_max {
                self.k = ((self.w_max - cwnd) / C).cbrt();
            } else {
                self.k = 0.0;
                self.w_max = cwnd;
            }
            self.w_est = cwnd;
            (now, cwnd)
        });
        let t = now.saturating_duration_since(start).as_secs_f64();
        let ahead = match self.flavour {
            Flavour::Rfc9438 => self.srtt,
            Flavour::Linux => self.min_rtt.or(self.srtt),
        };
        let rtt = ahead.unwrap_or(Duration::from_millis(100)).as_secs_f64();
        let acked_segs = self.segments(acked);
        // §4.3: α becomes 1 once the estimate passes cwnd_prior; Linux keeps α throughout.
        let alpha = if self.w_est >= self.cwnd_prior && self.flavour == Flavour::Rfc9438 {
            1.0
        } else {
            ALPHA
        };
        self.w_est += alpha * acked_segs / cwnd;
        let mtu = self.w.mtu as f64;
        if self.w_cubic(t) < self.w_est {
            self.grow((self.w_est - cwnd) * mtu);
        } else {
            // §4.4, §4.5: towards W_cubic(t + RTT), at most 1.5 cwnd.
            let target = self.w_cubic(t + rtt).clamp(cwnd, 1.5 * cwnd);
            self.grow((target - cwnd) / cwnd * acked_segs * mtu);
        }
    }

    /// §4.6, §4.7: a loss (fast retransmit) or, with `timeout`, an RTO (§4.8).
    fn reduce(&mut self, timeout: bool) {
        self.prior = Some(Prior {
            w_max: self.w_max,
            k: self.k,
            epoch: self.epoch,
            w_est: self.w_est,
            cwnd_prior: self.cwnd_prior,
            ss: self.ss.clone(),
        });
        let cwnd = self.segments(self.w.cwnd);
        self.cwnd_prior = cwnd;
        // §4.7 fast convergence: a window that stopped below the last W_max gives way.
        self.w_max = if cwnd < self.w_max {
            cwnd * (1.0 + BETA) / 2.0
        } else {
            cwnd
        };
        self.k = (self.w_max * (1.0 - BETA) / C).cbrt();
        self.epoch = None;
        self.carry = 0.0;
        let ssthresh = ((self.w.cwnd as f64 * BETA) as usize).max(4 * self.w.mtu);
        self.w.reduce(ssthresh, timeout);
        if timeout {
            self.ss.on_timeout();
        } else {
            self.ss.on_loss();
        }
    }

    /// §4.9: the reduction was spurious: W_max, K, the epoch and HyStart++'s state (a
    /// spurious loss in slow start must not end it for good) come back with the window the
    /// caller restores. Only the latest reduction is kept: with overlapping recovery
    /// episodes an older one found spurious restores the newer one's state.
    fn undo_curve(&mut self) {
        if let Some(p) = self.prior.take() {
            self.w_max = p.w_max;
            self.k = p.k;
            self.epoch = p.epoch;
            self.w_est = p.w_est;
            self.cwnd_prior = p.cwnd_prior;
            self.ss = p.ss;
        }
    }
}

impl Controller for Cubic {
    fn state(&self) -> &Window {
        &self.w
    }

    fn state_mut(&mut self) -> &mut Window {
        &mut self.w
    }

    fn on_ack(&mut self, _ctx: &Ctx<'_>, bytes_acked: usize, flight_before: usize) {
        // RFC 9260 §7.2.1, §7.2.2: no growth unless the window was in use.
        if flight_before < self.w.cwnd {
            return;
        }
        if self.w.in_slow_start() {
            let inc = self.ss.increase(bytes_acked.min(self.w.mtu));
            self.w.cwnd += inc;
        } else {
            self.congestion_avoidance(bytes_acked);
        }
    }

    fn on_loss(&mut self, _ctx: &Ctx<'_>) {
        self.reduce(false);
    }

    fn on_timeout(&mut self, _ctx: &Ctx<'_>) {
        self.reduce(true);
        if self.flavour == Flavour::Linux {
            // Linux forgets delay_min on a timeout (bictcp_reset): the path may have changed.
            self.min_rtt = None;
        }
    }

    fn on_sack(&mut self, s: &AckSample) {
        self.now = Some(s.now);
        self.srtt = s.srtt;
        if let Some(r) = s.rtt {
            self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
        }
        if self.w.in_slow_start() && self.ss.on_sack(s) {
            // RFC 9406 §4.2: CSS_ROUNDS passed: congestion avoidance from this window.
            self.w.ssthresh = self.w.cwnd;
        }
    }

    fn on_idle(&mut self) {
        self.w.idle_decay();
        // §5.8: an idle sender must not jump along the curve: a new epoch on resuming.
        self.epoch = None;
    }

    fn undo(&mut self, cwnd: usize, ssthresh: usize) {
        self.undo_curve();
        self.w.restore(cwnd, ssthresh);
    }
}

#[cfg(test)]
mod tests {
    use super::super::hystart::Phase;
    use super::*;

    const MTU: usize = 1000;

    fn ctx() -> Ctx<'static> {
        Ctx { paths: &[], me: 0 }
    }

    fn at(ms: u64) -> Instant {
        Instant::from_duration(Duration::from_millis(ms))
    }

    /// A SACK at `ms` with an RTT sample (and smoothed RTT) of `rtt_ms`, or only a 100 ms
    /// smoothed RTT.
    fn sample(ms: u64, rtt_ms: Option<u64>) -> AckSample {
        AckSample {
            now: at(ms),
            rtt: rtt_ms.map(Duration::from_millis),
            srtt: Some(Duration::from_millis(rtt_ms.unwrap_or(100))),
            acked_seq: 0,
            next_seq: 0,
        }
    }

    fn phase(c: &Cubic) -> Phase {
        match &c.ss {
            SlowStart::HyStart(h) => h.phase,
            SlowStart::Standard => unreachable!("CUBIC runs HyStart++"),
        }
    }

    /// A CUBIC path in congestion avoidance at `cwnd` segments with W_max `w_max`.
    fn in_ca(cwnd: usize, w_max: usize) -> Cubic {
        let mut c = Cubic::new(MTU, 0);
        c.w.cwnd = w_max * MTU;
        c.on_loss(&ctx());
        c.w.cwnd = cwnd * MTU;
        c.w.ssthresh = cwnd * MTU - 1;
        c
    }

    #[test]
    fn a_loss_cuts_the_window_by_beta_and_remembers_it_as_w_max() {
        let mut c = Cubic::new(MTU, usize::MAX);
        c.w.cwnd = 100 * MTU;
        c.on_loss(&ctx());
        assert_eq!(c.w.cwnd, 70 * MTU);
        assert_eq!(c.w.ssthresh, 70 * MTU);
        assert!((c.w_max - 100.0).abs() < 1e-9);
        // K = cbrt(W_max (1 - β) / C) = cbrt(75) s.
        assert!((c.k - 75f64.cbrt()).abs() < 1e-9);
        // A second loss below W_max: fast convergence.
        c.on_loss(&ctx());
        assert!((c.w_max - 70.0 * 1.7 / 2.0).abs() < 1e-9);
    }

    #[test]
    fn the_window_is_concave_up_to_w_max_then_convex_beyond_it() {
        let mut c = in_ca(70, 100);
        let mut t = 0;
        let mut trace = Vec::new();
        // Acks of one window per 100 ms RTT, for 12 s.
        while t < 12_000 {
            c.on_sack(&sample(t, Some(100)));
            let w = c.w.cwnd;
            c.on_ack(&ctx(), w, w);
            trace.push((t, c.w.cwnd / MTU));
            t += 100;
        }
        let k_ms = (c.k * 1000.0) as u64;
        let at_k = trace.iter().find(|(t, _)| *t >= k_ms).unwrap().1;
        assert!((99..=101).contains(&at_k), "cwnd at K: {at_k} segments");
        // Growth per RTT shrinks approaching W_max and grows past it.
        let step = |t0: u64| {
            let a = trace.iter().find(|(t, _)| *t >= t0).unwrap().1;
            let b = trace.iter().find(|(t, _)| *t >= t0 + 500).unwrap().1;
            b - a
        };
        assert!(step(0) > step(k_ms - 1000), "concave: {trace:?}");
        assert!(step(k_ms + 2000) > step(k_ms), "convex: {trace:?}");
    }

    #[test]
    fn without_a_full_window_in_flight_nothing_grows() {
        let mut c = in_ca(70, 100);
        c.on_sack(&sample(5000, None));
        c.on_ack(&ctx(), 10 * MTU, 10 * MTU);
        assert_eq!(c.w.cwnd, 70 * MTU);
    }

    #[test]
    fn a_spurious_loss_undone_brings_w_max_back() {
        let mut c = in_ca(70, 100);
        let before = (c.w_max, c.k);
        c.on_loss(&ctx());
        c.undo_curve();
        assert_eq!((c.w_max, c.k), before);
    }

    #[test]
    fn a_spurious_loss_in_slow_start_undone_keeps_hystart_running() {
        let mut c = Cubic::new(MTU, usize::MAX);
        c.w.cwnd = 50 * MTU;
        c.on_loss(&ctx());
        assert_eq!(phase(&c), Phase::Done);
        Controller::undo(&mut c, 50 * MTU, usize::MAX);
        assert_eq!(phase(&c), Phase::SlowStart);
        assert_eq!(c.w.cwnd, 50 * MTU);
    }

    /// Growth per RTT in the Reno-friendly region once the window has passed cwnd_prior: RFC
    /// 9438 §4.3 switches α to 1 there, Linux keeps 3(1-β)/(1+β) ≈ 0.53.
    fn reno_friendly_growth(flavour: Flavour) -> f64 {
        let mut c = Cubic::with_flavour(MTU, 0, flavour);
        c.w.cwnd = 100 * MTU;
        c.on_loss(&ctx());
        // A 1 ms RTT: the Reno-friendly estimate outruns the cubic curve (K ≈ 4.2 s).
        let mut crossed = None;
        for t in 0..2000u64 {
            c.on_sack(&sample(t, Some(1)));
            let w = c.w.cwnd;
            c.on_ack(&ctx(), w, w);
            let segs = c.w.cwnd / MTU;
            match crossed {
                None if segs >= 110 => crossed = Some((t, segs)),
                Some((t0, s0)) if t == t0 + 100 => return (segs - s0) as f64 / 100.0,
                _ => {}
            }
        }
        panic!("{flavour:?}: the window never passed 110 segments");
    }

    #[test]
    fn past_cwnd_prior_rfc_cubic_grows_as_reno_and_linux_cubic_at_alpha() {
        let rfc = reno_friendly_growth(Flavour::Rfc9438);
        let linux = reno_friendly_growth(Flavour::Linux);
        assert!((rfc - 1.0).abs() < 0.05, "RFC 9438: {rfc} segments per RTT");
        assert!(
            (linux - ALPHA).abs() < 0.05,
            "Linux: {linux} segments per RTT"
        );
    }

    #[test]
    fn linux_cubic_aims_its_curve_one_minimum_rtt_ahead() {
        // Convex region (at W_max, K = 0): the target one RTT ahead is larger for a larger
        // RTT, so aiming by the 10 ms minimum grows less than by the 200 ms smoothed RTT.
        let grow = |flavour: Flavour| {
            let mut c = in_ca(100, 100);
            c.flavour = flavour;
            c.on_sack(&sample(0, Some(10)));
            c.on_ack(&ctx(), MTU, 200 * MTU);
            // Three seconds into the epoch the queue has grown: srtt 200 ms, minimum 10 ms.
            c.on_sack(&sample(3000, Some(200)));
            let before = c.w.cwnd;
            c.on_ack(&ctx(), 100 * MTU, 200 * MTU);
            c.w.cwnd - before
        };
        let (linux, rfc) = (grow(Flavour::Linux), grow(Flavour::Rfc9438));
        assert!(
            0 < linux && linux < rfc,
            "Linux {linux} bytes, RFC 9438 {rfc} bytes"
        );
    }
}
