//! Pacing of one path's packets (quinn-proto's pacer and Linux's fq pacing are the
//! models): a token bucket filled at `gain × cwnd / srtt`, twice the window's rate in slow
//! start and 1.25 times it after (Linux's pacing_ss_ratio and pacing_ca_ratio), holding at
//! most a short burst (2 ms of the rate, between 10 and 256 MTUs). New DATA waits for a
//! packet's worth of tokens, so a window leaves spread over the RTT instead of in bursts
//! that overflow shallow queues; retransmissions and control chunks are not held back.

use std::time::Duration;

use crate::time::Instant;

/// The burst the bucket holds: this long at the pacing rate...
const BURST_INTERVAL: Duration = Duration::from_millis(2);
/// ...but at least and at most this many MTUs.
const MIN_BURST_MTUS: u64 = 10;
const MAX_BURST_MTUS: u64 = 256;

/// One path's token bucket, in bytes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Pacer {
    tokens: u64,
    /// When the bucket was last filled; `None`: never (it starts full).
    last: Option<Instant>,
    /// Bytes per second at the last fill (0: no RTT yet, no pacing).
    rate: f64,
}

impl Pacer {
    /// Fills the bucket up to `now` for a path with window `cwnd` (bytes), smoothed RTT
    /// `srtt` and `mtu`; `slow_start` doubles the rate.
    pub(crate) fn refill(
        &mut self,
        now: Instant,
        cwnd: usize,
        srtt: Option<Duration>,
        mtu: usize,
        slow_start: bool,
    ) {
        let Some(srtt) = srtt.filter(|r| !r.is_zero()) else {
            self.rate = 0.0;
            return;
        };
        let gain = if slow_start { 2.0 } else { 1.25 };
        self.rate = gain * cwnd as f64 / srtt.as_secs_f64();
        let mtu = mtu as u64;
        let cap = ((self.rate * BURST_INTERVAL.as_secs_f64()) as u64)
            .clamp(MIN_BURST_MTUS * mtu, MAX_BURST_MTUS * mtu);
        let added = match self.last {
            None => cap,
            Some(t) => (now.saturating_duration_since(t).as_secs_f64() * self.rate) as u64,
        };
        // Only time that filled whole bytes is used up, so slow fills still add up.
        if added > 0 || self.last.is_none() {
            self.last = Some(now);
        }
        self.tokens = self.tokens.saturating_add(added).min(cap);
    }

    /// The pacing rate, bytes per second (0: not pacing yet).
    pub(crate) fn rate(&self) -> f64 {
        self.rate
    }

    /// Whether a packet of `mtu` bytes may leave now.
    pub(crate) fn ready(&self, mtu: usize) -> bool {
        self.rate == 0.0 || self.tokens >= mtu as u64
    }

    /// When a packet of `mtu` bytes may leave (`None`: now); always after `now`, rounded
    /// up, so that a timer set for it finds the tokens there (no wake-up that adds nothing).
    pub(crate) fn next_ready(&self, now: Instant, mtu: usize) -> Option<Instant> {
        if self.ready(mtu) {
            return None;
        }
        let missing = (mtu as u64 - self.tokens) as f64;
        let wait = Duration::from_secs_f64(missing / self.rate) + Duration::from_micros(1);
        Some((self.last? + wait).max(now + Duration::from_micros(1)))
    }

    /// A packet of `bytes` left.
    pub(crate) fn on_sent(&mut self, bytes: usize) {
        self.tokens = self.tokens.saturating_sub(bytes as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(us: u64) -> Instant {
        Instant::from_duration(Duration::from_micros(us))
    }

    #[test]
    fn a_window_leaves_spread_over_the_rtt_at_the_pacing_rate() {
        // cwnd 1 MB, srtt 100 ms, congestion avoidance: 12.5 MB/s; MTU 1000.
        let mut p = Pacer::default();
        let mut now = 0;
        p.refill(
            at(now),
            1_000_000,
            Some(Duration::from_millis(100)),
            1000,
            false,
        );
        let mut sent = 0;
        // Send whenever allowed for 100 ms of simulated time, waking when told.
        while now < 100_000 {
            p.refill(
                at(now),
                1_000_000,
                Some(Duration::from_millis(100)),
                1000,
                false,
            );
            if p.ready(1000) {
                p.on_sent(1000);
                sent += 1000;
            } else {
                now = p
                    .next_ready(at(now), 1000)
                    .unwrap()
                    .since_epoch()
                    .as_micros() as u64;
            }
        }
        // The first burst (2 ms of rate = 25 kB) plus 100 ms at 12.5 MB/s.
        assert!((1_250_000..=1_280_000).contains(&sent), "{sent}");
    }

    #[test]
    fn without_an_rtt_nothing_is_held() {
        let mut p = Pacer::default();
        p.refill(at(0), 10_000, None, 1000, true);
        p.on_sent(1_000_000);
        assert!(p.ready(1000));
        assert_eq!(p.next_ready(at(0), 1000), None);
    }

    #[test]
    fn the_burst_is_at_least_ten_mtus() {
        let mut p = Pacer::default();
        p.refill(at(0), 4000, Some(Duration::from_millis(100)), 1000, false);
        let mut n = 0;
        while p.ready(1000) {
            p.on_sent(1000);
            n += 1;
        }
        assert_eq!(n, 10);
    }
}
