//! The congestion control of RFC 9260 §7.2: slow start, congestion avoidance with
//! partial_bytes_acked, fast-retransmit and timeout reactions, idle decay.

use super::slow_start::SlowStart;
use super::window::Window;
use super::{Controller, Ctx};

/// RFC 9260 §7.2 on one path: its window and its slow start.
#[derive(Debug, Clone)]
pub(crate) struct Reno {
    pub(crate) w: Window,
    ss: SlowStart,
}

impl Reno {
    /// RFC 9260 §7.2.1's initial window; `peer_rwnd` is the a_rwnd of INIT/INIT-ACK.
    pub(crate) fn new(mtu: usize, peer_rwnd: usize) -> Self {
        Self {
            w: Window::new(mtu, peer_rwnd),
            ss: SlowStart::Standard,
        }
    }

    /// New data cumulatively acknowledged outside fast recovery (RFC 9260 §7.2.1, §7.2.2).
    ///
    /// `flight_before` is the flight size before this SACK: cwnd grows only when it was
    /// fully used.
    pub(crate) fn ack(&mut self, bytes_acked: usize, flight_before: usize) {
        let w = &mut self.w;
        if w.in_slow_start() {
            // Slow start: at most one MTU per SACK, and only if cwnd was in use.
            if flight_before >= w.cwnd {
                w.cwnd += self.ss.increase(bytes_acked.min(w.mtu));
            }
        } else {
            // Congestion avoidance: one MTU per cwnd of acknowledged data.
            let mtu = w.mtu;
            w.avoid(bytes_acked, flight_before, || mtu);
        }
    }

    /// Entering fast recovery after a fast retransmit (RFC 9260 §7.2.3, §7.2.4).
    pub(crate) fn on_fast_retransmit(&mut self) {
        self.w.reduce(self.w.halved(), false);
        self.ss.on_loss();
    }

    /// T3-rtx expired (RFC 9260 §7.2.3): back to one MTU.
    pub(crate) fn timeout(&mut self) {
        self.w.reduce(self.w.halved(), true);
        self.ss.on_timeout();
    }
}

impl Controller for Reno {
    fn state(&self) -> &Window {
        &self.w
    }

    fn state_mut(&mut self) -> &mut Window {
        &mut self.w
    }

    fn on_ack(&mut self, _ctx: &Ctx<'_>, bytes_acked: usize, flight_before: usize) {
        self.ack(bytes_acked, flight_before);
    }

    fn on_loss(&mut self, _ctx: &Ctx<'_>) {
        self.on_fast_retransmit();
    }

    fn on_timeout(&mut self, _ctx: &Ctx<'_>) {
        self.timeout();
    }

    fn on_sack(&mut self, s: &super::AckSample) {
        if self.w.in_slow_start() && self.ss.on_sack(s) {
            self.w.ssthresh = self.w.cwnd;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MTU: usize = 1452;

    #[test]
    fn initial_window_follows_rfc() {
        assert_eq!(Reno::new(1452, 100_000).w.cwnd, 4380);
        assert_eq!(Reno::new(9000, 100_000).w.cwnd, 18_000);
    }

    #[test]
    fn slow_start_grows_by_at_most_one_mtu_per_sack_when_window_is_full() {
        let mut r = Reno::new(MTU, 1 << 20);
        let w = r.w.cwnd;
        r.ack(3 * MTU, w);
        assert_eq!(r.w.cwnd, w + MTU);
        r.ack(MTU, 0); // window was not in use: no growth
        assert_eq!(r.w.cwnd, w + MTU);
    }

    #[test]
    fn after_the_pmtu_rose_slow_start_grows_by_the_new_mtu() {
        let mut c = crate::cc::AnyController::new(crate::CongestionControl::Reno, MTU, 1 << 20, 1);
        c.set_mtu(2 * MTU);
        let crate::cc::AnyController::Reno(r) = &mut c else {
            unreachable!("asked for Reno")
        };
        let w = r.w.cwnd;
        r.ack(3 * MTU, w);
        assert_eq!(r.w.cwnd, w + 2 * MTU);
    }

    #[test]
    fn congestion_avoidance_adds_one_mtu_per_window() {
        let mut r = Reno::new(MTU, 1 << 20);
        r.w.cwnd = 10 * MTU;
        r.w.ssthresh = 5 * MTU;
        for _ in 0..9 {
            r.ack(MTU, r.w.cwnd);
        }
        assert_eq!(r.w.cwnd, 10 * MTU);
        r.ack(MTU, r.w.cwnd);
        assert_eq!(r.w.cwnd, 11 * MTU);
        assert_eq!(r.w.partial_bytes_acked, 0);
    }

    #[test]
    fn loss_reactions() {
        let mut r = Reno::new(MTU, 1 << 20);
        r.w.cwnd = 20 * MTU;
        r.on_fast_retransmit();
        assert_eq!((r.w.cwnd, r.w.ssthresh), (10 * MTU, 10 * MTU));
        r.timeout();
        assert_eq!((r.w.cwnd, r.w.ssthresh), (MTU, 5 * MTU));
        r.w.cwnd = 6 * MTU;
        r.w.idle_decay();
        assert_eq!(r.w.cwnd, 4 * MTU);
    }

    /// Slow start is a part: RFC 9260's state machine runs HyStart++ as CUBIC does, and
    /// leaves slow start once the RTT rose and CSS ran its five rounds (RFC 9406 §4.2).
    #[test]
    fn reno_composes_with_hystart() {
        use crate::cc::{AckSample, Controller, Ctx};
        use std::time::Duration;
        let mut r = Reno {
            w: Window::new(MTU, 1 << 30),
            ss: SlowStart::hystart(),
        };
        let ctx = Ctx { paths: &[], me: 0 };
        let mut seq = 0u64;
        let mut round = |r: &mut Reno, n: u64, rtt_ms: u64| {
            let end = seq + n;
            for q in seq..end {
                r.on_sack(&AckSample {
                    now: crate::time::Instant::from_duration(Duration::from_millis(q)),
                    rtt: Some(Duration::from_millis(rtt_ms)),
                    srtt: None,
                    acked_seq: q,
                    next_seq: end,
                });
                let w = r.window();
                Controller::on_ack(r, &ctx, MTU, w);
            }
            seq = end;
        };
        round(&mut r, 10, 100);
        round(&mut r, 20, 100);
        round(&mut r, 40, 130); // 30 ms over the last round's minimum: CSS
        let before = r.w.cwnd;
        round(&mut r, 40, 130);
        assert_eq!(
            r.w.cwnd - before,
            40 * MTU / 4,
            "CSS grows a quarter as fast"
        );
        assert!(r.w.in_slow_start());
        for _ in 0..5 {
            round(&mut r, 40, 130);
        }
        assert!(!r.w.in_slow_start(), "HyStart++ did not end slow start");
    }
}
