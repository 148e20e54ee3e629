//! The sender (RFC 9260 §6–§7), split along its seams:
//!
//! | seam | where | decides |
//! |---|---|---|
//! | path selection | [`path_sched`] (the scheduler: failover, round robin, cwnd/RTT, minRTT), [`path_select`] (the association's rules) | which path the next packet of new data takes; where new data may go, where a retransmission goes (RTX-SAME/ASAP/CWND/SSTHRESH/LOSSRATE) |
//! | loss detection | [`sack`] → [`loss`] (the `LossDetector` trait; `MissCount` with [`loss::sfr`], [`loss::dac`]; [`loss::rack`]); [`spurious`] | what a SACK acknowledged, reneged or reports missing, which chunks are lost by count (three misses) or by time (RACK, its reorder timer, tail loss probes); whether a retransmission was spurious (Eifel, DupTSN) |
//! | recovery | [`recovery`], [`pr_sctp`], [`spurious`] | fast retransmit / fast recovery, T3-rtx, error counting, PR-SCTP abandonment; the Eifel response |
//! | congestion control | `crate::cc` ([`cuc`] for CMT's window update rule) | how each path's window moves |
//!
//! The chunks themselves live in [`queue`] (stream queues, TSN assignment) and [`sent`]
//! (one state per sent chunk, with the counters derived from it); [`transmit`] puts them in
//! packets.

pub(crate) mod cuc;
pub(crate) mod loss;
pub(crate) mod path_sched;
pub(crate) mod path_select;
pub(crate) mod pr_sctp;
pub(crate) mod queue;
pub(crate) mod ranges;
pub(crate) mod recovery;
pub(crate) mod sack;
pub(crate) mod sent;
pub(crate) mod spurious;
pub(crate) mod transmit;

pub use queue::SendOptions;
pub(crate) use queue::SendQueue;
pub(crate) use sack::Acked;

use crate::association::Association;
use crate::path::PathState;
use crate::time::Instant;
use crate::timer::Timer;

impl Association {
    /// A peer restart is handled as an ABORT followed by a new association (RFC 9260
    /// §5.2.4 A): queues, SSNs, error counters and path estimates start afresh; a path that
    /// failed is active again (the application hears of it) and heartbeats start over.
    pub(crate) fn reset_for_restart(&mut self, now: Instant) {
        self.tx.clear();
        self.drop_sender_state();
        self.error_count = 0;
        let cfg = self.cfg.clone();
        for i in 0..self.paths.len() {
            let p = &mut self.paths[i];
            p.rtt_probe = None;
            p.recovery = crate::path::Recovery::Open;
            p.spurious.clear();
            p.rtx_cwnd_exempt = false;
            p.error_count = 0;
            p.rtt = crate::path::rto::RttEstimator::new(&cfg);
            p.heartbeat = Default::default();
            *self.rack.path_mut(p.id) = Default::default();
            let to = if p.confirmed {
                PathState::Active
            } else {
                PathState::Unconfirmed
            };
            let id = p.id;
            if p.state != to {
                self.set_path_state(now, id, to);
            }
            self.schedule_heartbeat(now, id);
        }
    }

    /// The send queue was emptied (close, restart): what the paths kept of its chunks goes
    /// too — flight sizes, buffer-splitting shares, the per-path lists, T3.
    pub(crate) fn drop_sender_state(&mut self) {
        for p in &mut self.paths {
            p.flight_size = 0;
            p.buffered = 0;
            p.rtx_marked.clear();
            p.sent_live.clear();
            p.psn.sent.clear();
            self.rack.order.forget();
            let r = self.rack.path_mut(p.id);
            r.tlp_out = false;
            r.probe_new = false;
            self.timers.stop(Timer::T3(p.id));
            self.timers.stop(Timer::Rack(p.id));
            self.timers.stop(Timer::Tlp(p.id));
        }
    }
}
