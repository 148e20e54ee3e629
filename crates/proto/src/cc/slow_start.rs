//! Slow start as a part a controller composes: RFC 9260 §7.2.1's (at most one MTU per
//! SACK) or HyStart++ (RFC 9406), which leaves it early when the RTT rises. Any controller
//! that keeps a [`super::Window`] can run either.

use super::AckSample;
use super::hystart::HyStart;

/// How a path's slow start grows and when it ends early.
#[derive(Debug, Clone)]
pub(crate) enum SlowStart {
    /// RFC 9260 §7.2.1: until cwnd passes ssthresh or a loss.
    Standard,
    /// HyStart++ (RFC 9406).
    HyStart(HyStart),
}

impl SlowStart {
    /// HyStart++ from its first round.
    pub(crate) fn hystart() -> Self {
        Self::HyStart(HyStart::default())
    }

    /// The increase for one SACK, given RFC 9260's `min(bytes_acked, MTU)`.
    pub(crate) fn increase(&self, rfc: usize) -> usize {
        match self {
            Self::Standard => rfc,
            Self::HyStart(h) => h.scale(rfc),
        }
    }

    /// A SACK's round position and RTT sample while in slow start; returns whether slow
    /// start should end now (HyStart++ §4.2: CSS ran its rounds).
    pub(crate) fn on_sack(&mut self, s: &AckSample) -> bool {
        match self {
            Self::Standard => false,
            Self::HyStart(h) => h.on_ack(s.rtt, s.acked_seq, s.next_seq),
        }
    }

    /// A fast retransmit: slow start ends for good.
    pub(crate) fn on_loss(&mut self) {
        if let Self::HyStart(h) = self {
            h.on_loss();
        }
    }

    /// A timeout: slow start again from its first round (RFC 9406 §4.2).
    pub(crate) fn on_timeout(&mut self) {
        if let Self::HyStart(h) = self {
            h.restart();
        }
    }
}
