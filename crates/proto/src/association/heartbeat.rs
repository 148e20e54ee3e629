//! Heartbeats (RFC 9260 §8.3): path confirmation (§5.4), RTT samples and failure detection
//! of idle paths, the probing of potentially failed paths (RFC 7829 §5.1) and the pacing of
//! probes to unconfirmed addresses (HB.Max.Burst).

use braid_wire::chunk::{HeartbeatAck, HeartbeatChunk};
use bytes::{Buf, Bytes};

use super::{Association, State};
use crate::path::{PathId, PathState};
use crate::time::Instant;
use crate::timer::Timer;

/// Heartbeat Info as braid writes it: nonce, send time (µs), path.
const HB_INFO_LEN: usize = 18;

impl Association {
    /// HEARTBEAT: echo its parameters in a HEARTBEAT-ACK on the path it came from (§8.3).
    /// A HEARTBEAT without Heartbeat Info (some stacks send one) is echoed as it is.
    pub(super) fn on_heartbeat(&mut self, path: PathId, hb: braid_wire::chunk::Heartbeat) {
        // §3.3.6: the ACK echoes the Heartbeat Info. A HEARTBEAT without one (pion sends
        // those) gets an empty Heartbeat Info, so our answer is still well-formed.
        let params = if hb.info().is_some() {
            hb.params
        } else {
            vec![braid_wire::Param::HeartbeatInfo(Bytes::new())]
        };
        self.queue_control(path, HeartbeatAck { params });
    }

    pub(super) fn on_heartbeat_ack(&mut self, now: Instant, hb: HeartbeatAck) {
        let Some(info) = hb.info() else { return };
        if info.len() == super::pmtu::PROBE_INFO_LEN {
            self.on_probe_ack(now, info);
            return;
        }
        if info.len() != HB_INFO_LEN {
            return;
        }
        let mut b = info.clone();
        let nonce = b.get_u64();
        let _sent_us = b.get_u64();
        let path = PathId(b.get_u16());
        let Some(p) = self.paths.get_mut(path.0 as usize) else {
            return;
        };
        let Some((expected, sent)) = p.heartbeat.outstanding else {
            return;
        };
        if expected != nonce {
            return;
        }
        p.heartbeat.outstanding = None;
        p.rtt.on_sample(now - sent);
        p.rtt.on_verified(now - sent);
        self.bufs.note_rtt(now - sent);
        p.error_count = 0;
        // RFC 9260 §5.4: a HEARTBEAT-ACK with our nonce confirms the address.
        let newly_confirmed = !p.confirmed;
        p.confirmed = true;
        if p.state != PathState::Active {
            self.set_path_state(now, path, PathState::Active);
            self.retarget_stranded();
        }
        // The timer was the answer's deadline: back to the normal rhythm.
        self.schedule_heartbeat(now, path);
        self.error_count = 0;
        if newly_confirmed {
            let remote = self.paths[path.0 as usize].remote;
            self.path_events
                .push_back(super::PathEvent::Confirmed { id: path, remote });
            // the NEAT report §2.1.3.4: a confirmed path starts PLPMTUD at BASE.
            self.pmtu_path_confirmed(now, path);
        }
    }

    /// Heartbeat timer of `path`. With a heartbeat outstanding the timer is its deadline:
    /// unanswered after one RTO counts as an error (RFC 9260 §8.3). Otherwise it is time to
    /// send one (an idle or probed path, or one that is not active).
    pub(super) fn on_heartbeat_timer(&mut self, now: Instant, path: PathId) {
        let pi = path.0 as usize;
        self.timers.set(Timer::Heartbeat(path), None);
        if self.paths[pi].heartbeat.outstanding.take().is_some() {
            self.paths[pi].rtt.backoff();
            self.count_error(now, path);
            if self.state == State::Closed {
                return;
            }
            self.schedule_heartbeat(now, path);
            // LS-SCTP (Abd El Al et al. Eq. (2)): an inactive path is probed every H; its last
            // probe's deadline was H, so the next one goes now.
            if self.ls_monitors_inactive(path)
                || self
                    .timers
                    .get(Timer::Heartbeat(path))
                    .is_some_and(|t| t <= now)
            {
                // A PF path (or a free probe slot) is probed again at once (RFC 7829 §5.1).
                self.send_heartbeat(now, path);
            }
            return;
        }
        let since = now - self.paths[pi].last_data_sent;
        // A path with an LS-SCTP probe copy outstanding is being probed, not idle (Abd El Al et al. §4.3).
        let idle =
            self.cfg.hb_interval.is_some_and(|i| since >= i) && self.paths[pi].psn.probe.is_none();
        let probe = std::mem::take(&mut self.paths[pi].heartbeat.probe);
        if idle || probe || self.paths[pi].state != PathState::Active {
            self.send_heartbeat(now, path);
        } else {
            self.schedule_heartbeat(now, path);
        }
    }

    /// Sends a HEARTBEAT on `path` now; its timer becomes the answer's deadline (one RTO).
    pub(super) fn send_heartbeat(&mut self, now: Instant, path: PathId) {
        use rand_core::RngCore;
        let pi = path.0 as usize;
        let nonce = self.rng.next_u64();
        let mut info = Vec::with_capacity(HB_INFO_LEN);
        info.extend_from_slice(&nonce.to_be_bytes());
        info.extend_from_slice(&(now.since_epoch().as_micros() as u64).to_be_bytes());
        info.extend_from_slice(&path.0.to_be_bytes());
        // The answer's deadline is one RTO (RFC 9260 §8.3); for an inactive path under
        // LS-SCTP it is the probing period H of Eq. (2), not an RTO backed off while it failed.
        let deadline = match self.cfg.hb_interval {
            Some(i) if self.ls_monitors_inactive(path) => self.ls_heartbeat_delay(i),
            _ => self.paths[pi].rtt.rto(),
        };
        let p = &mut self.paths[pi];
        p.heartbeat.outstanding = Some((nonce, now));
        self.timers
            .set(Timer::Heartbeat(path), Some(now + deadline));
        self.queue_control(path, HeartbeatChunk::<false>::with_info(info.into()));
    }

    /// Arms the heartbeat timer of a path: HB.interval + RTO with jitter (RFC 9260 §8.3).
    pub(super) fn schedule_heartbeat(&mut self, now: Instant, path: PathId) {
        let p = &self.paths[path.0 as usize];
        if p.removed {
            self.timers.stop(Timer::Heartbeat(path));
            return;
        }
        let rto = p.rtt.rto();
        // Unconfirmed addresses (RFC 9260 §5.4) and PF paths (RFC 7829 §5.1) are probed
        // once per RTO, whether idle heartbeats are enabled or not.
        if p.state == PathState::PotentiallyFailed {
            // RFC 7829 §5.1: a PF destination is probed at once, and again one RTO after
            // each unanswered probe (the probe's deadline is its timer).
            self.timers.set(Timer::Heartbeat(path), Some(now));
            return;
        }
        if !p.confirmed && p.state != PathState::Inactive {
            // RFC 9260 §5.4: unconfirmed addresses are probed, but no more than
            // HB.Max.Burst heartbeats per RTO to all of them together.
            let spacing = self.primary_path().rtt.rto() / self.cfg.hb_max_burst.max(1);
            let at = self.hb_slot.max(now);
            self.hb_slot = at + spacing;
            self.timers.set(Timer::Heartbeat(path), Some(at));
            return;
        }
        let Some(interval) = self.cfg.hb_interval else {
            self.timers.set(Timer::Heartbeat(path), None);
            return;
        };
        let delay = if self.ls_monitors_inactive(path) {
            self.ls_heartbeat_delay(interval)
        } else {
            interval + self.rto_jitter(rto)
        };
        self.timers.set(Timer::Heartbeat(path), Some(now + delay));
    }
}
