//! HyStart++ (RFC 9406): slow start that leaves early, before the queue overflows, when the
//! round's minimum RTT rises over the previous round's, then grows a quarter as fast
//! (Conservative Slow Start) for a few rounds before congestion avoidance. Without it, slow
//! start on a long fat path doubles cwnd past BDP + queue and loses thousands of packets in
//! one window, which SCTP's one-retransmission-per-SACK recovery takes seconds to repair.

use std::time::Duration;

/// RFC 9406 §4.3: MIN_RTT_THRESH, MAX_RTT_THRESH, MIN_RTT_DIVISOR, N_RTT_SAMPLE,
/// CSS_GROWTH_DIVISOR, CSS_ROUNDS.
const MIN_RTT_THRESH: Duration = Duration::from_millis(4);
const MAX_RTT_THRESH: Duration = Duration::from_millis(16);
const MIN_RTT_DIVISOR: u32 = 8;
const N_RTT_SAMPLE: u32 = 8;
/// How much slower than slow start cwnd grows in CSS.
pub(crate) const CSS_GROWTH_DIVISOR: usize = 4;
const CSS_ROUNDS: u32 = 5;

/// Where slow start is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// Standard slow start, watching the RTT.
    SlowStart,
    /// Conservative Slow Start since the round that saw the RTT rise.
    Css,
    /// Done: congestion avoidance from now on (until a timeout restarts slow start).
    Done,
}

/// HyStart++ state of one path.
#[derive(Debug, Clone)]
pub(crate) struct HyStart {
    pub(crate) phase: Phase,
    /// The round ends when a chunk sent at or after this send sequence is acknowledged.
    window_end: Option<u64>,
    last_round_min: Option<Duration>,
    current_round_min: Option<Duration>,
    samples: u32,
    css_baseline: Option<Duration>,
    css_rounds: u32,
}

impl Default for HyStart {
    fn default() -> Self {
        Self {
            phase: Phase::SlowStart,
            window_end: None,
            last_round_min: None,
            current_round_min: None,
            samples: 0,
            css_baseline: None,
            css_rounds: 0,
        }
    }
}

impl HyStart {
    /// A SACK acknowledged chunks up to send sequence `acked` on the path, with RTT sample
    /// `rtt`; `next` is the sequence of the next chunk to be sent. Returns whether slow
    /// start should end now (CSS ran its rounds).
    pub(crate) fn on_ack(&mut self, rtt: Option<Duration>, acked: u64, next: u64) -> bool {
        if self.phase == Phase::Done {
            return false;
        }
        // §4.2: a new round starts when the ack passes windowEnd.
        let new_round = self.window_end.is_none_or(|end| acked >= end);
        if new_round {
            self.window_end = Some(next);
            self.last_round_min = self.current_round_min;
            self.current_round_min = None;
            self.samples = 0;
            if self.phase == Phase::Css {
                self.css_rounds += 1;
                if self.css_rounds >= CSS_ROUNDS {
                    self.phase = Phase::Done;
                    return true;
                }
            }
        }
        if let Some(r) = rtt {
            self.current_round_min = Some(self.current_round_min.map_or(r, |m| m.min(r)));
            self.samples += 1;
        }
        let (Some(cur), Some(last)) = (self.current_round_min, self.last_round_min) else {
            return false;
        };
        if self.samples < N_RTT_SAMPLE {
            return false;
        }
        match self.phase {
            Phase::SlowStart => {
                let thresh = (last / MIN_RTT_DIVISOR).clamp(MIN_RTT_THRESH, MAX_RTT_THRESH);
                if cur >= last + thresh {
                    self.phase = Phase::Css;
                    self.css_baseline = Some(cur);
                    self.css_rounds = 0;
                }
            }
            Phase::Css => {
                // §4.2: the RTT fell back: the rise was not the queue building, resume.
                if self.css_baseline.is_some_and(|b| cur < b) {
                    self.phase = Phase::SlowStart;
                    self.css_baseline = None;
                }
            }
            Phase::Done => {}
        }
        false
    }

    /// Divides a slow-start increase while in CSS.
    pub(crate) fn scale(&self, increase: usize) -> usize {
        if self.phase == Phase::Css {
            increase / CSS_GROWTH_DIVISOR
        } else {
            increase
        }
    }

    /// A loss ends slow start for good; a timeout restarts it (RFC 9406 §4.2: HyStart++
    /// runs again in the slow start after an RTO).
    pub(crate) fn on_loss(&mut self) {
        self.phase = Phase::Done;
    }

    /// Slow start again after a timeout.
    pub(crate) fn restart(&mut self) {
        *self = Self::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// Feeds one round of `n` samples of `rtt`; the round's chunks are sequences
    /// `from..from + n`, and the next round's window ends at `from + n`.
    fn round(h: &mut HyStart, from: u64, n: u64, rtt: Duration) -> bool {
        let mut done = false;
        for q in from..from + n {
            done |= h.on_ack(Some(rtt), q, from + n);
        }
        done
    }

    #[test]
    fn a_round_whose_rtt_rises_by_an_eighth_enters_css_then_five_rounds_end_slow_start() {
        let mut h = HyStart::default();
        round(&mut h, 0, 10, ms(100));
        round(&mut h, 10, 20, ms(105));
        assert_eq!(h.phase, Phase::SlowStart, "5 ms is under 100/8");
        // 105 + 105/8 = 118.1 ms: 119 is over it.
        round(&mut h, 30, 40, ms(119));
        assert_eq!(h.phase, Phase::Css);
        assert_eq!(h.scale(1500), 375);
        let mut from = 70;
        let mut ended = false;
        for _ in 0..5 {
            ended = round(&mut h, from, 40, ms(120));
            from += 40;
        }
        assert!(ended);
        assert_eq!(h.phase, Phase::Done);
    }

    #[test]
    fn fewer_than_eight_samples_decide_nothing() {
        let mut h = HyStart::default();
        round(&mut h, 0, 10, ms(100));
        round(&mut h, 10, 7, ms(200));
        assert_eq!(h.phase, Phase::SlowStart);
    }

    #[test]
    fn an_rtt_back_under_the_css_baseline_resumes_slow_start() {
        let mut h = HyStart::default();
        round(&mut h, 0, 10, ms(100));
        round(&mut h, 10, 20, ms(130));
        assert_eq!(h.phase, Phase::Css);
        round(&mut h, 30, 20, ms(101));
        assert_eq!(h.phase, Phase::SlowStart);
    }
}
