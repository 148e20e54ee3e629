//! LS-SCTP's Path Monitor (Abd El Al et al. §4.4) and what the association advises from its paths
//! (Equation (1)): the active-path list is the paths in `PathState::Active`; a path leaves
//! it after Path.Max.Retrans consecutive timeouts (`recovery::count_error`) or when its
//! loss rate passes `path_loss_threshold` (here), and comes back with a HEARTBEAT-ACK.
//! Inactive paths are probed every H = RTO.Initial + HB.Interval·(1 + δ), δ in [−0.5, 0.5]
//! under LS-SCTP (Equation (2)), instead of RFC 9260's RTO + HB.Interval with jitter on an
//! RTO that backed off to RTO.Max while the path failed.

use std::time::Duration;

use super::Association;
use crate::cc::Controller;
use crate::path::{PathId, PathState};
use crate::time::Instant;

/// Chunks a path must have carried since it became active before its loss rate is judged:
/// fewer say too little (one loss in ten chunks is not a 10 % path).
const MIN_LOSS_SAMPLE: u64 = 100;

impl Association {
    /// Path Monitor: takes `path` out of the active list if its loss rate since it last
    /// became active exceeds the threshold and another path is active (Abd El Al et al. §4.4).
    pub(crate) fn check_path_loss(&mut self, now: Instant, path: PathId) {
        let Some(threshold) = self.cfg.path_loss_threshold else {
            return;
        };
        let p = &self.paths[path.0 as usize];
        if p.state != PathState::Active {
            return;
        }
        let sent = p.stats.data_chunks_sent.saturating_sub(p.loss_base.0);
        let lost = p.lost_chunks.saturating_sub(p.loss_base.1);
        if sent < MIN_LOSS_SAMPLE || (lost as f64) <= threshold * sent as f64 {
            return;
        }
        let others = self
            .paths
            .iter()
            .any(|q| q.id != path && q.state == PathState::Active && q.confirmed);
        if !others {
            return;
        }
        let p = &mut self.paths[path.0 as usize];
        p.fail_epoch = p.fail_epoch.wrapping_add(1);
        p.psn.copy_of = None;
        self.set_path_state(now, path, PathState::Inactive);
        self.retarget_stranded();
        self.schedule_heartbeat(now, path);
    }

    /// Whether `path` is inactive under LS-SCTP: the Path Monitor probes it every H of
    /// Equation (2) rather than after its backed-off RTO.
    pub(crate) fn ls_monitors_inactive(&self, path: PathId) -> bool {
        self.ls() && self.paths[path.0 as usize].state == PathState::Inactive
    }

    /// Equation (2) of Abd El Al et al.: when an inactive path is probed again under LS-SCTP.
    pub(crate) fn ls_heartbeat_delay(&mut self, interval: Duration) -> Duration {
        use rand_core::RngCore;
        let delta = (self.rng.next_u32() % 1001) as f64 / 1000.0 - 0.5;
        self.cfg.rto_initial + interval.mul_f64(1.0 + delta)
    }

    /// Equation (1) of Abd El Al et al.: the receive buffer the association needs so that no path
    /// waits for another, (Σ B_i) · RTT_max over the active paths, with B_i estimated as
    /// cwnd/SRTT. `None` until every active path has an RTT measurement.
    pub fn receive_buffer_advice(&self) -> Option<usize> {
        let mut rate = 0.0;
        let mut rtt_max = Duration::ZERO;
        for p in self.paths.iter().filter(|p| p.state == PathState::Active) {
            let srtt = p.rtt.srtt()?;
            if srtt.is_zero() {
                return None;
            }
            rate += p.cc.window() as f64 / srtt.as_secs_f64();
            rtt_max = rtt_max.max(srtt);
        }
        (rate > 0.0).then(|| (rate * rtt_max.as_secs_f64()).ceil() as usize)
    }
}
