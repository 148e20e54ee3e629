//! Retransmission timeout estimation (RFC 9260 §6.3.1), one estimator per path.

use std::time::Duration;

use crate::config::AssociationConfig;

/// Clock granularity G assumed for the RTO computation (RFC 9260 §6.3.1 C3).
const CLOCK_GRANULARITY: Duration = Duration::from_millis(1);

/// SRTT, RTTVAR and RTO of one path.
#[derive(Debug, Clone)]
pub(crate) struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    rto: Duration,
    min: Duration,
    max: Duration,
    alpha: f64,
    beta: f64,
    /// The lowest and the latest sample (for traces: qlog's `min_rtt`, `latest_rtt`).
    lowest: Option<Duration>,
    latest: Option<Duration>,
    /// The shortest verified round trip (see [`RttEstimator::on_verified`]).
    verified: Option<Duration>,
}

impl RttEstimator {
    /// A path with no measurement yet: RTO = RTO.Initial (C1).
    pub(crate) fn new(c: &AssociationConfig) -> Self {
        Self {
            srtt: None,
            rttvar: Duration::ZERO,
            rto: c.rto_initial.clamp(c.rto_min, c.rto_max),
            min: c.rto_min,
            max: c.rto_max,
            alpha: c.rto_alpha,
            beta: c.rto_beta,
            lowest: None,
            latest: None,
            verified: None,
        }
    }

    /// A round trip the peer could not have shortened: its answer needed what we sent
    /// (a HEARTBEAT's nonce, the INIT's tag, the cookie). Acks of DATA can come early from
    /// a receiver acknowledging what it has not received yet.
    pub(crate) fn on_verified(&mut self, r: Duration) {
        self.verified = Some(self.verified.map_or(r, |m| m.min(r)));
    }

    /// The shortest round trip loss detection believes: half the shortest verified one
    /// (a path may get faster, not twice as fast), zero before any.
    pub(crate) fn floor(&self) -> Duration {
        self.verified.map_or(Duration::ZERO, |v| v / 2)
    }

    /// Feeds one RTT measurement R' (rules C2, C3; C4–C7 clamp the result).
    pub(crate) fn on_sample(&mut self, r: Duration) {
        self.latest = Some(r);
        self.lowest = Some(self.lowest.map_or(r, |m| m.min(r)));
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(srtt) => {
                let delta = srtt.abs_diff(r);
                self.rttvar = self.rttvar.mul_f64(1.0 - self.beta) + delta.mul_f64(self.beta);
                self.srtt = Some(srtt.mul_f64(1.0 - self.alpha) + r.mul_f64(self.alpha));
            }
        }
        let srtt = self.srtt.unwrap_or(r);
        self.rto = (srtt + (4 * self.rttvar).max(CLOCK_GRANULARITY)).clamp(self.min, self.max);
    }

    /// T3-rtx or heartbeat expiry doubles the RTO, up to RTO.Max (RFC 9260 §6.3.3 E2).
    pub(crate) fn backoff(&mut self) {
        self.rto = (self.rto * 2).min(self.max);
    }

    /// The current RTO.
    pub(crate) fn rto(&self) -> Duration {
        self.rto
    }

    /// Smoothed RTT, if measured.
    pub(crate) fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// The lowest RTT sample so far.
    pub(crate) fn min_rtt(&self) -> Option<Duration> {
        self.lowest
    }

    /// The latest RTT sample.
    pub(crate) fn latest_rtt(&self) -> Option<Duration> {
        self.latest
    }

    /// RTT variation.
    pub(crate) fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// After a spurious timeout (RFC 4015 §3 step (4)): SRTT and RTTVAR become at least what
    /// they were before the timeout (`srtt_prev` already includes RFC 4015's 2G) and at least
    /// what the late acknowledgement measured, and the RTO is computed anew, undoing the
    /// backoff.
    pub(crate) fn adapt_after_spurious_timeout(
        &mut self,
        srtt_prev: Duration,
        rttvar_prev: Duration,
        sample: Duration,
    ) {
        let srtt = srtt_prev.max(sample);
        self.srtt = Some(srtt);
        self.rttvar = rttvar_prev.max(sample / 2);
        self.rto = (srtt + (4 * self.rttvar).max(CLOCK_GRANULARITY)).clamp(self.min, self.max);
    }

    /// Clock granularity G of the RTO computation.
    pub(crate) const GRANULARITY: Duration = CLOCK_GRANULARITY;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimator(min_ms: u64) -> RttEstimator {
        RttEstimator::new(&AssociationConfig {
            rto_min: Duration::from_millis(min_ms),
            ..Default::default()
        })
    }

    #[test]
    fn first_measurement_sets_srtt_and_half_rttvar() {
        let mut e = estimator(10);
        assert_eq!(e.rto(), Duration::from_secs(1));
        e.on_sample(Duration::from_millis(100));
        assert_eq!(e.srtt(), Some(Duration::from_millis(100)));
        assert_eq!(e.rttvar(), Duration::from_millis(50));
        assert_eq!(e.rto(), Duration::from_millis(300));
    }

    #[test]
    fn later_measurements_are_smoothed_with_alpha_and_beta() {
        let mut e = estimator(10);
        e.on_sample(Duration::from_millis(100));
        e.on_sample(Duration::from_millis(200));
        // RTTVAR = 3/4*50 + 1/4*100 = 62.5 ms; SRTT = 7/8*100 + 1/8*200 = 112.5 ms.
        assert_eq!(e.rttvar(), Duration::from_micros(62_500));
        assert_eq!(e.srtt(), Some(Duration::from_micros(112_500)));
        assert_eq!(e.rto(), Duration::from_micros(362_500));
    }

    #[test]
    fn rto_is_clamped_to_min_and_backoff_to_max() {
        let mut e = estimator(1000);
        e.on_sample(Duration::from_millis(10));
        assert_eq!(e.rto(), Duration::from_secs(1));
        for _ in 0..10 {
            e.backoff();
        }
        assert_eq!(e.rto(), Duration::from_secs(60));
    }
}
