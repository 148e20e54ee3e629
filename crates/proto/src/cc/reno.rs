//! The congestion control of RFC 9260 §7.2: slow start, congestion avoidance with
//! partial_bytes_acked, fast-retransmit and timeout reactions, idle decay.
//!
//! The `*_coupled` methods run the same state machine with the amounts of a coupled variant
//! ([`super::coupled`]); with [`CongestionControl::Reno`] or a single path they equal the
//! uncoupled methods.

use std::time::Duration;

use super::CongestionControl;
use super::coupled::{self, CcPathView};

/// cwnd, ssthresh and partial_bytes_acked of one path, in bytes.
#[derive(Debug, Clone)]
pub(crate) struct Reno {
    /// Congestion window.
    pub(crate) cwnd: usize,
    /// Slow-start threshold.
    pub(crate) ssthresh: usize,
    /// Bytes acknowledged in congestion avoidance since the last cwnd increase (§7.2.2).
    pub(crate) partial_bytes_acked: usize,
    mtu: usize,
}

impl Reno {
    /// Initial cwnd = min(4*MTU, max(2*MTU, 4380)) and an arbitrarily large ssthresh
    /// (RFC 9260 §7.2.1); `peer_rwnd` is the a_rwnd of INIT/INIT-ACK.
    pub(crate) fn new(mtu: usize, peer_rwnd: usize) -> Self {
        Self {
            cwnd: (4 * mtu).min((2 * mtu).max(4380)),
            ssthresh: peer_rwnd.max(4 * mtu),
            partial_bytes_acked: 0,
            mtu,
        }
    }

    /// Like [`Reno::new`], with the initial cwnd of one of `npaths` paths under `algo`
    /// (CMT/RP splits RFC 9260's initial window among the paths).
    pub(crate) fn new_coupled(
        algo: CongestionControl,
        mtu: usize,
        peer_rwnd: usize,
        npaths: usize,
    ) -> Self {
        Self {
            cwnd: coupled::initial_cwnd(algo, mtu, npaths),
            ..Self::new(mtu, peer_rwnd)
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

    /// [`Reno::on_ack`] with the increase of `algo`: `paths` is a view of every coupled path
    /// taken before this SACK's updates and `paths[i]` is this one.
    pub(crate) fn on_ack_coupled(
        &mut self,
        algo: CongestionControl,
        paths: &[CcPathView],
        i: usize,
        bytes_acked: usize,
        flight_before: usize,
    ) {
        self.check_view(paths, i);
        if self.cwnd <= self.ssthresh {
            // Slow start gates as in §7.2.1; the amount is the variant's.
            if flight_before >= self.cwnd {
                self.cwnd += coupled::increase_slow_start(algo, paths, i, bytes_acked);
            }
        } else {
            // Congestion avoidance gates as in §7.2.2; the amount is the variant's.
            self.partial_bytes_acked += bytes_acked;
            if self.partial_bytes_acked >= self.cwnd && flight_before >= self.cwnd {
                self.partial_bytes_acked -= self.cwnd;
                self.cwnd += coupled::increase_ca(algo, paths, i);
            }
        }
    }

    /// [`Reno::on_fast_retransmit`] with the decrease of `algo` (`paths[i]` is this path).
    pub(crate) fn on_fast_retransmit_coupled(
        &mut self,
        algo: CongestionControl,
        paths: &[CcPathView],
        i: usize,
    ) {
        self.check_view(paths, i);
        self.ssthresh = coupled::ssthresh_after_loss(algo, paths, i);
        self.cwnd = self.ssthresh;
        self.partial_bytes_acked = 0;
    }

    /// [`Reno::on_timeout`] with the decrease of `algo` (`paths[i]` is this path).
    pub(crate) fn on_timeout_coupled(
        &mut self,
        algo: CongestionControl,
        paths: &[CcPathView],
        i: usize,
    ) {
        self.check_view(paths, i);
        self.ssthresh = coupled::ssthresh_after_loss(algo, paths, i);
        self.cwnd = self.mtu;
        self.partial_bytes_acked = 0;
    }

    /// Catches a view slice taken at the wrong time or indexed with the wrong path.
    fn check_view(&self, paths: &[CcPathView], i: usize) {
        debug_assert_eq!(
            (paths[i].cwnd, paths[i].ssthresh, paths[i].mtu),
            (self.cwnd, self.ssthresh, self.mtu),
            "paths[{i}] is not this path's current view"
        );
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
