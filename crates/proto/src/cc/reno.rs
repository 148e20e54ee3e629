//! The congestion control of RFC 9260 §7.2: slow start, congestion avoidance with
//! partial_bytes_acked, fast-retransmit and timeout reactions, idle decay.
//!
//! The coupled variants ([`super::Coupled`]) run this state machine with other amounts.

use std::time::Duration;

use super::coupled::{CcPathView, rfc_initial_cwnd};
use super::{Controller, Ctx};

/// cwnd, ssthresh and partial_bytes_acked of one path, in bytes.
#[derive(Debug, Clone)]
pub(crate) struct Reno {
    /// Congestion window.
    pub(crate) cwnd: usize,
    /// Slow-start threshold.
    pub(crate) ssthresh: usize,
    /// Bytes acknowledged in congestion avoidance since the last cwnd increase (§7.2.2).
    pub(crate) partial_bytes_acked: usize,
    pub(super) mtu: usize,
}

impl Reno {
    /// Initial cwnd = min(4*MTU, max(2*MTU, 4380)) and an arbitrarily large ssthresh
    /// (RFC 9260 §7.2.1); `peer_rwnd` is the a_rwnd of INIT/INIT-ACK.
    pub(crate) fn new(mtu: usize, peer_rwnd: usize) -> Self {
        Self {
            cwnd: rfc_initial_cwnd(mtu),
            ssthresh: peer_rwnd.max(4 * mtu),
            partial_bytes_acked: 0,
            mtu,
        }
    }

    /// This controller as the coupled rules see it, counted in the group; `srtt` is the
    /// path's smoothed RTT.
    pub(crate) fn view(&self, srtt: Option<Duration>) -> CcPathView {
        CcPathView {
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            mtu: self.mtu,
            srtt,
            coupled: true,
        }
    }

    /// The MTU the controller counts in.
    pub(crate) fn mtu(&self) -> usize {
        self.mtu
    }

    /// New data cumulatively acknowledged outside fast recovery (RFC 9260 §7.2.1, §7.2.2).
    ///
    /// `flight_before` is the flight size before this SACK: cwnd grows only when it was
    /// fully used.
    pub(crate) fn on_ack(&mut self, bytes_acked: usize, flight_before: usize) {
        if self.cwnd <= self.ssthresh {
            // Slow start: at most one MTU per SACK, and only if cwnd was in use.
            if flight_before >= self.cwnd {
                self.cwnd += bytes_acked.min(self.mtu);
            }
        } else {
            // Congestion avoidance: one MTU per cwnd of acknowledged data.
            self.partial_bytes_acked += bytes_acked;
            if self.partial_bytes_acked >= self.cwnd && flight_before >= self.cwnd {
                self.partial_bytes_acked -= self.cwnd;
                self.cwnd += self.mtu;
            }
        }
    }

    /// All outstanding data was acknowledged: partial_bytes_acked resets (§7.2.2).
    pub(crate) fn on_all_acked(&mut self) {
        self.partial_bytes_acked = 0;
    }

    /// Entering fast recovery after a fast retransmit (RFC 9260 §7.2.3, §7.2.4).
    pub(crate) fn on_fast_retransmit(&mut self) {
        self.ssthresh = (self.cwnd / 2).max(4 * self.mtu);
        self.cwnd = self.ssthresh;
        self.partial_bytes_acked = 0;
    }

    /// T3-rtx expired (RFC 9260 §7.2.3): back to one MTU.
    pub(crate) fn on_timeout(&mut self) {
        self.ssthresh = (self.cwnd / 2).max(4 * self.mtu);
        self.cwnd = self.mtu;
        self.partial_bytes_acked = 0;
    }

    /// One RTO passed with no data sent on the path: cwnd = max(cwnd/2, 4*MTU) (§7.2.1).
    pub(crate) fn on_idle_rto(&mut self) {
        self.cwnd = (self.cwnd / 2).max(4 * self.mtu);
    }
}

impl Controller for Reno {
    fn window(&self) -> usize {
        self.cwnd
    }

    fn ssthresh(&self) -> usize {
        self.ssthresh
    }

    fn on_ack(&mut self, _ctx: &Ctx<'_>, bytes_acked: usize, flight_before: usize) {
        Reno::on_ack(self, bytes_acked, flight_before);
    }

    fn on_loss(&mut self, _ctx: &Ctx<'_>) {
        self.on_fast_retransmit();
    }

    fn on_timeout(&mut self, _ctx: &Ctx<'_>) {
        Reno::on_timeout(self);
    }

    fn on_idle(&mut self) {
        self.on_idle_rto();
    }

    fn on_all_acked(&mut self) {
        Reno::on_all_acked(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MTU: usize = 1452;

    #[test]
    fn initial_window_follows_rfc() {
        assert_eq!(Reno::new(1452, 100_000).cwnd, 4380);
        assert_eq!(Reno::new(9000, 100_000).cwnd, 18_000);
    }

    #[test]
    fn slow_start_grows_by_at_most_one_mtu_per_sack_when_window_is_full() {
        let mut r = Reno::new(MTU, 1 << 20);
        let w = r.cwnd;
        r.on_ack(3 * MTU, w);
        assert_eq!(r.cwnd, w + MTU);
        r.on_ack(MTU, 0); // window was not in use: no growth
        assert_eq!(r.cwnd, w + MTU);
    }

    #[test]
    fn after_the_pmtu_rose_slow_start_grows_by_the_new_mtu() {
        let mut c = crate::cc::AnyController::new(crate::CongestionControl::Reno, MTU, 1 << 20, 1);
        c.set_mtu(2 * MTU);
        let crate::cc::AnyController::Reno(r) = &mut c else {
            unreachable!("asked for Reno")
        };
        let w = r.cwnd;
        r.on_ack(3 * MTU, w);
        assert_eq!(r.cwnd, w + 2 * MTU);
    }

    #[test]
    fn congestion_avoidance_adds_one_mtu_per_window() {
        let mut r = Reno::new(MTU, 1 << 20);
        r.cwnd = 10 * MTU;
        r.ssthresh = 5 * MTU;
        for _ in 0..9 {
            r.on_ack(MTU, r.cwnd);
        }
        assert_eq!(r.cwnd, 10 * MTU);
        r.on_ack(MTU, r.cwnd);
        assert_eq!(r.cwnd, 11 * MTU);
        assert_eq!(r.partial_bytes_acked, 0);
    }

    #[test]
    fn loss_reactions() {
        let mut r = Reno::new(MTU, 1 << 20);
        r.cwnd = 20 * MTU;
        r.on_fast_retransmit();
        assert_eq!((r.cwnd, r.ssthresh), (10 * MTU, 10 * MTU));
        r.on_timeout();
        assert_eq!((r.cwnd, r.ssthresh), (MTU, 5 * MTU));
        r.cwnd = 6 * MTU;
        r.on_idle_rto();
        assert_eq!(r.cwnd, 4 * MTU);
    }
}
