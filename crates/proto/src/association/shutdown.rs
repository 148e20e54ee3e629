//! Graceful shutdown (RFC 9260 §9.2): SHUTDOWN, SHUTDOWN-ACK, SHUTDOWN-COMPLETE, T2 with its
//! move to an alternate address, and the T5 guard.

use braid_wire::chunk::{Shutdown, ShutdownAck, ShutdownComplete};

use super::{Association, State};
use crate::association::send::sack::AckReport;
use crate::event::{CloseReason, Event};
use crate::path::{PathId, PathState};
use crate::time::Instant;
use crate::timer::Timer;

impl Association {
    /// SHUTDOWN (RFC 9260 §9.2): its cumulative ack counts as a SACK.
    pub(super) fn on_shutdown(&mut self, now: Instant, s: Shutdown, from: PathId) {
        if matches!(
            self.state,
            State::CookieWait | State::CookieEchoed | State::Closed
        ) {
            return;
        }
        // RFC 9260 §6.4: the SHUTDOWN-ACK answering it goes where it came from.
        self.shutdown_rx_path = Some(from);
        let flight: usize = self.paths.iter().map(|p| p.flight_size).sum();
        let rwnd = u32::try_from(self.tx.peer_rwnd + flight).unwrap_or(u32::MAX);
        let r = AckReport {
            from,
            cum: s.cum_tsn_ack,
            a_rwnd: rwnd,
            gaps: &[],
            nr_gaps: &[],
            signals: Default::default(),
        };
        self.on_sack(now, r);
        if self.state == State::Closed {
            return;
        }
        match self.state {
            State::Established | State::ShutdownPending => {
                self.set_state(now, State::ShutdownReceived);
                self.events.push_back(Event::PeerShutdown);
            }
            State::ShutdownSent => {
                // Both sides shut down at once: answer with SHUTDOWN-ACK at once.
                self.events.push_back(Event::PeerShutdown);
                self.shutdown_path = self.shutdown_reply_path();
                self.send_shutdown_ack(now);
            }
            _ => {}
        }
    }

    pub(super) fn on_shutdown_ack(&mut self, now: Instant) {
        if matches!(self.state, State::ShutdownSent | State::ShutdownAckSent) {
            let tag = self.peer_tag;
            self.queue_standalone(tag, ShutdownComplete { t_bit: false });
            self.close(now, CloseReason::Shutdown);
        }
    }

    /// Moves the shutdown forward once every outstanding DATA chunk is acknowledged. In
    /// SHUTDOWN-RECEIVED the SHUTDOWN-ACK is decided when the next packet is built
    /// ([`Association::poll_transmit`]), after a driver handed over what it had accepted.
    pub(super) fn try_progress_shutdown(&mut self, now: Instant) {
        if !self.tx.is_empty() {
            return;
        }
        if self.state == State::ShutdownPending {
            self.set_state(now, State::ShutdownSent);
            self.shutdown_path = self.single_data_path();
            self.send_shutdown(now);
            let guard = self.cfg.rto_max * 5;
            self.timers.set(Timer::T5, Some(now + guard));
        }
    }

    /// SHUTDOWN-RECEIVED with nothing left to send: SHUTDOWN-ACK (RFC 9260 §9.2).
    pub(super) fn shutdown_ack_if_done(&mut self, now: Instant) {
        if self.state == State::ShutdownReceived && self.tx.is_empty() {
            self.shutdown_path = self.shutdown_reply_path();
            self.send_shutdown_ack(now);
        }
    }

    /// Where the first SHUTDOWN-ACK goes: the source of the last SHUTDOWN (RFC 9260 §6.4)
    /// while that path is active, else where new data would go.
    fn shutdown_reply_path(&self) -> PathId {
        self.shutdown_rx_path
            .filter(|p| self.paths[p.0 as usize].state == PathState::Active)
            .unwrap_or_else(|| self.single_data_path())
    }

    /// Queues the one SHUTDOWN of the packet to come on `path` (a queued one is replaced,
    /// so DATA arriving in bursts never piles SHUTDOWNs up), carrying our cumulative ack.
    pub(super) fn queue_shutdown(&mut self, path: PathId) {
        let cum = self.tsn_map.cum_tsn();
        self.control
            .retain(|c| !matches!(c.chunk, braid_wire::Chunk::Shutdown(_)));
        self.queue_control(path, Shutdown { cum_tsn_ack: cum });
    }

    pub(super) fn send_shutdown(&mut self, now: Instant) {
        let path = self.shutdown_path;
        self.queue_shutdown(path);
        // The SHUTDOWN acknowledges what we received: no separate SACK needed.
        self.sack.due = false;
        self.timers.set(Timer::DelayedSack, None);
        let rto = self.paths[path.0 as usize].rtt.rto();
        self.timers.set(Timer::T2, Some(now + rto));
    }

    pub(super) fn send_shutdown_ack(&mut self, now: Instant) {
        self.set_state(now, State::ShutdownAckSent);
        let path = self.shutdown_path;
        self.control
            .retain(|c| !matches!(c.chunk, braid_wire::Chunk::ShutdownAck(_)));
        self.queue_control(path, ShutdownAck);
        let rto = self.paths[path.0 as usize].rtt.rto();
        self.timers.set(Timer::T2, Some(now + rto));
    }

    /// T2-shutdown expired: count an error on the path it went to and resend SHUTDOWN or
    /// SHUTDOWN-ACK, to an alternate active path if there is one (RFC 9260 §9.2, §6.4.1).
    pub(super) fn on_t2_expiry(&mut self, now: Instant) {
        self.timers.set(Timer::T2, None);
        let used = self.shutdown_path;
        self.path_mut(used).rtt.backoff();
        self.count_error(now, used);
        if self.state == State::Closed {
            return;
        }
        self.shutdown_path = self.alternate_path(used);
        match self.state {
            State::ShutdownSent => self.send_shutdown(now),
            State::ShutdownAckSent => self.send_shutdown_ack(now),
            _ => {}
        }
    }

    /// Another confirmed active path than `from` (the next in order), else where new data
    /// would go.
    pub(super) fn alternate_path(&self, from: PathId) -> PathId {
        let n = self.paths.len();
        (1..n)
            .map(|k| PathId(((from.0 as usize + k) % n) as u16))
            .find(|&id| {
                let p = &self.paths[id.0 as usize];
                p.confirmed && p.state == PathState::Active
            })
            .unwrap_or_else(|| self.single_data_path())
    }

    /// T5-shutdown-guard expired: give up with ABORT (RFC 9260 §9.2).
    pub(super) fn on_t5_expiry(&mut self, now: Instant) {
        self.timers.set(Timer::T5, None);
        if matches!(self.state, State::ShutdownSent | State::ShutdownAckSent) {
            self.queue_abort(vec![]);
            self.close(now, CloseReason::PeerUnreachable);
        }
    }
}
