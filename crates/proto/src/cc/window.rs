//! RFC 9260 §7.2's per-path window state and its arithmetic, the part every controller
//! shares: the sender reads cwnd and ssthresh, and the trait's default hooks (MTU change,
//! idle decay, spurious-loss undo) act on it. A controller owns one; it is data, not a
//! controller.

use std::time::Duration;

use super::coupled::{CcPathView, rfc_initial_cwnd};

/// cwnd, ssthresh and partial_bytes_acked of one path, in bytes, and the MTU they count in.
#[derive(Debug, Clone)]
pub(crate) struct Window {
    /// Congestion window.
    pub(crate) cwnd: usize,
    /// Slow-start threshold.
    pub(crate) ssthresh: usize,
    /// Bytes acknowledged in congestion avoidance since the last cwnd increase (§7.2.2).
    pub(crate) partial_bytes_acked: usize,
    /// The path MTU the window grows and floors in (§7.2.1, §7.2.2 count in MTUs).
    pub(crate) mtu: usize,
}

impl Window {
    /// Initial cwnd = min(4*MTU, max(2*MTU, 4380)) and an arbitrarily large ssthresh
    /// (RFC 9260 §7.2.1): `ssthresh` is the a_rwnd of INIT/INIT-ACK, at least 4 MTUs.
    pub(crate) fn new(mtu: usize, ssthresh: usize) -> Self {
        Self {
            cwnd: rfc_initial_cwnd(mtu),
            ssthresh: ssthresh.max(4 * mtu),
            partial_bytes_acked: 0,
            mtu,
        }
    }

    /// Whether the path is in slow start (§7.2.1: cwnd <= ssthresh).
    pub(crate) fn in_slow_start(&self) -> bool {
        self.cwnd <= self.ssthresh
    }

    /// Congestion avoidance (§7.2.2): `bytes_acked` counts towards one increase (computed
    /// only when made) per cwnd acknowledged, made only while the window was in use.
    pub(crate) fn avoid(
        &mut self,
        bytes_acked: usize,
        flight_before: usize,
        increase: impl FnOnce() -> usize,
    ) {
        self.partial_bytes_acked += bytes_acked;
        if self.partial_bytes_acked >= self.cwnd && flight_before >= self.cwnd {
            self.partial_bytes_acked -= self.cwnd;
            self.cwnd += increase();
        }
    }

    /// After a fast retransmit (§7.2.3, §7.2.4) or a timeout: ssthresh as given,
    /// partial_bytes_acked cleared, cwnd `to` (ssthresh, or one MTU after T3).
    pub(crate) fn reduce(&mut self, ssthresh: usize, timeout: bool) {
        self.ssthresh = ssthresh;
        self.cwnd = if timeout { self.mtu } else { ssthresh };
        self.partial_bytes_acked = 0;
    }

    /// RFC 9260's halving: max(cwnd/2, 4*MTU) (§7.2.3).
    pub(crate) fn halved(&self) -> usize {
        (self.cwnd / 2).max(4 * self.mtu)
    }

    /// One RTO passed with no data sent on the path: cwnd = max(cwnd/2, 4*MTU) (§7.2.1).
    pub(crate) fn idle_decay(&mut self) {
        self.cwnd = self.halved();
    }

    /// A reduction found spurious is undone (RFC 4015 §3 step (5)).
    pub(crate) fn restore(&mut self, cwnd: usize, ssthresh: usize) {
        self.cwnd = cwnd;
        self.ssthresh = ssthresh;
        self.partial_bytes_acked = 0;
    }

    /// This window as the coupled rules see it, counted in the group; `srtt` is the path's
    /// smoothed RTT.
    pub(crate) fn view(&self, srtt: Option<Duration>) -> CcPathView {
        CcPathView {
            cwnd: self.cwnd,
            ssthresh: self.ssthresh,
            mtu: self.mtu,
            srtt,
            coupled: true,
        }
    }
}
