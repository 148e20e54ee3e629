//! The clock-free scheduling core of one direction: it drives a [`braid_sim::link::Link`]
//! the way the simulator's event loop does, but from whatever time the caller says it is.
//!
//! The driver calls [`Shaper::advance`] with the current time before anything else; the
//! shaper then runs every model event (end of serialization, arrival at the far end, hiccup
//! deadline) due by then, each at *its own* time, not at the (later) time it was noticed, so
//! a late wake-up delays the packet's release but never shifts the model's schedule. Packets
//! the model delivered wait in [`Shaper::pop_released`] with the time the model released
//! them; the driver writes them out and measures how late it was.

use std::collections::VecDeque;
use std::time::Duration;

use braid_proto::Instant;
use braid_sim::link::{DropReason, Link, LinkConfig, LinkStats, Offer, Packet};

/// One direction of an emulated link: the model and the events it asked for.
#[derive(Debug)]
pub struct Shaper<P> {
    link: Link<P>,
    /// End of the serialization in progress.
    tx_done: Option<Instant>,
    /// Arrival times at the far end of the packets in flight, in order (the link's pipe is
    /// FIFO and its arrival times never decrease).
    arrivals: VecDeque<Instant>,
    /// Deadline of the packet a hiccup holds (it may have been released already, by the
    /// packets that overtook it; then `Link::release` does nothing).
    hold_deadline: Option<Instant>,
    /// Delivered by the model, not yet taken by the driver, with their release times.
    released: VecDeque<(Instant, P)>,
    offered_bytes: u64,
    scratch_out: Vec<P>,
    scratch_dropped: Vec<(P, DropReason)>,
}

impl<P: Packet> Shaper<P> {
    /// A direction whose random draws come from `seed` and `stream` (the simulator gives
    /// its n-th link stream n + 1: a one-path scenario's forward link is stream 1, its
    /// reverse link stream 2).
    pub fn new(cfg: LinkConfig, seed: u64, stream: u64) -> Self {
        Self {
            link: Link::new(cfg, seed, stream),
            tx_done: None,
            arrivals: VecDeque::new(),
            hold_deadline: None,
            released: VecDeque::new(),
            offered_bytes: 0,
            scratch_out: Vec::new(),
            scratch_dropped: Vec::new(),
        }
    }

    /// The model's counters.
    pub fn stats(&self) -> &LinkStats {
        self.link.stats()
    }

    /// Offered packets per queue length found (see [`Link::queue_seen`]).
    pub fn queue_seen(&self) -> &[u64] {
        self.link.queue_seen()
    }

    /// Bytes offered (IP packets).
    pub fn offered_bytes(&self) -> u64 {
        self.offered_bytes
    }

    /// Packets waiting in the model's queue now.
    pub fn queue_len(&self) -> usize {
        self.link.queue_len()
    }

    /// A packet enters the link at `now`; call [`Shaper::advance`]`(now)` first. Returns
    /// why it was dropped at the entrance, if it was.
    pub fn offer(&mut self, now: Instant, p: P) -> Option<DropReason> {
        self.offered_bytes += p.wire_size() as u64;
        match self.link.offer(now, p) {
            Offer::Transmitting { done } => {
                self.tx_done = Some(done);
                None
            }
            Offer::Queued => None,
            Offer::Dropped(_, reason) => Some(reason),
        }
    }

    /// The earliest model event still to run, if any.
    pub fn next_deadline(&self) -> Option<Instant> {
        [
            self.tx_done,
            self.arrivals.front().copied(),
            self.hold_deadline,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Runs every model event due at or before `now`, in time order, each at its own time.
    pub fn advance(&mut self, now: Instant) {
        while let Some(t) = self.next_deadline().filter(|&t| t <= now) {
            // At equal times: the end of serialization first (as the simulator's
            // engine, which ran it when it was scheduled, earlier), then an arrival.
            if self.tx_done == Some(t) {
                let done = self.link.tx_done(t, &mut self.scratch_dropped);
                self.tx_done = done.next_done;
                self.arrivals.extend(done.arrival);
            } else if self.arrivals.front() == Some(&t) {
                self.arrivals.pop_front();
                if let Some(deadline) =
                    self.link
                        .arrive(t, &mut self.scratch_out, &mut self.scratch_dropped)
                {
                    self.hold_deadline = Some(deadline);
                }
            } else {
                self.hold_deadline = None;
                self.link
                    .release(t, &mut self.scratch_out, &mut self.scratch_dropped);
            }
            self.released
                .extend(self.scratch_out.drain(..).map(|p| (t, p)));
            // Dropped packets are counted by the link; their buffers go.
            self.scratch_dropped.clear();
        }
    }

    /// The next packet the model released, with the time it released it.
    pub fn pop_released(&mut self) -> Option<(Instant, P)> {
        self.released.pop_front()
    }
}

/// How late packets left, in 1 µs buckets up to 100 ms (everything later in the last
/// bucket), with the exact maximum: bounded memory for a run of any length.
#[derive(Debug, Clone)]
pub struct LatenessHistogram {
    buckets: Vec<u64>,
    count: u64,
    sum: Duration,
    max: Duration,
}

const LATENESS_BUCKETS: usize = 100_000;

impl Default for LatenessHistogram {
    fn default() -> Self {
        Self {
            buckets: vec![0; LATENESS_BUCKETS + 1],
            count: 0,
            sum: Duration::ZERO,
            max: Duration::ZERO,
        }
    }
}

impl LatenessHistogram {
    /// Records one packet that left `late` after the model released it.
    pub fn record(&mut self, late: Duration) {
        let us = usize::try_from(late.as_micros()).unwrap_or(usize::MAX);
        self.buckets[us.min(LATENESS_BUCKETS)] += 1;
        self.count += 1;
        self.sum += late;
        self.max = self.max.max(late);
    }

    /// Packets recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Mean lateness.
    pub fn mean(&self) -> Duration {
        if self.count == 0 {
            Duration::ZERO
        } else {
            self.sum / u32::try_from(self.count).unwrap_or(u32::MAX)
        }
    }

    /// The largest lateness recorded.
    pub fn max(&self) -> Duration {
        self.max
    }

    /// The `q`-quantile (0..=1), as the upper edge of its 1 µs bucket (at most the maximum).
    pub fn quantile(&self, q: f64) -> Duration {
        if self.count == 0 {
            return Duration::ZERO;
        }
        let rank = ((q.clamp(0.0, 1.0) * self.count as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (us, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                if us == LATENESS_BUCKETS {
                    return self.max;
                }
                return Duration::from_micros(us as u64 + 1).min(self.max);
            }
        }
        self.max
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, PartialEq)]
    struct Pkt(usize, u32);
    impl Packet for Pkt {
        fn wire_size(&self) -> usize {
            self.0
        }
    }

    fn at(us: u64) -> Instant {
        Instant::from_duration(Duration::from_micros(us))
    }

    /// Drives `s` with a fake clock that wakes exactly at each deadline, or `late` after it.
    fn drain(s: &mut Shaper<Pkt>, until: Instant, late: Duration) -> Vec<(Instant, Instant, u32)> {
        let mut got = Vec::new();
        while let Some(d) = s.next_deadline().filter(|&d| d <= until) {
            let now = d + late;
            s.advance(now);
            while let Some((t, p)) = s.pop_released() {
                got.push((t, now, p.1));
            }
        }
        got
    }

    #[test]
    fn releases_at_model_times_in_order() {
        // 1000-byte packets at 8 Mbit/s: 1 ms each; 10 ms delay.
        let cfg = LinkConfig::new(8e6, Duration::from_millis(10), 100);
        let mut s = Shaper::new(cfg, 1, 1);
        s.advance(at(0));
        for i in 0..5 {
            assert_eq!(s.offer(at(0), Pkt(1000, i)), None);
        }
        let got = drain(&mut s, at(1_000_000), Duration::ZERO);
        let ids: Vec<u32> = got.iter().map(|g| g.2).collect();
        assert_eq!(ids, vec![0, 1, 2, 3, 4]);
        for (i, g) in got.iter().enumerate() {
            assert_eq!(g.0, at(10_000 + 1_000 * (i as u64 + 1)), "packet {i}");
        }
        assert_eq!(s.stats().delivered, 5);
        assert_eq!(s.offered_bytes(), 5000);
    }

    #[test]
    fn a_late_clock_delays_release_but_not_the_schedule() {
        let cfg = LinkConfig::new(8e6, Duration::from_millis(10), 100);
        let mut s = Shaper::new(cfg, 1, 1);
        s.advance(at(0));
        for i in 0..3 {
            s.offer(at(0), Pkt(1000, i));
        }
        // The driver wakes 2.5 ms after every deadline: several events are due at once and
        // each runs at its own time.
        let got = drain(&mut s, at(1_000_000), Duration::from_micros(2_500));
        let release: Vec<Instant> = got.iter().map(|g| g.0).collect();
        assert_eq!(release, vec![at(11_000), at(12_000), at(13_000)]);
        assert!(got.iter().all(|g| g.1 >= g.0));
    }

    #[test]
    fn offers_in_between_see_the_queue_at_their_time() {
        let cfg = LinkConfig::new(8e6, Duration::ZERO, 100);
        let mut s = Shaper::new(cfg, 1, 1);
        s.advance(at(0));
        s.offer(at(0), Pkt(1000, 0));
        s.offer(at(0), Pkt(1000, 1));
        // At 1.5 ms the first is through and the second half serialized.
        s.advance(at(1_500));
        assert_eq!(s.pop_released().map(|r| (r.0, r.1.1)), Some((at(1_000), 0)));
        assert_eq!(s.queue_len(), 0);
        s.offer(at(1_500), Pkt(1000, 2));
        let got = drain(&mut s, at(1_000_000), Duration::ZERO);
        assert_eq!(
            got.iter().map(|g| (g.0, g.2)).collect::<Vec<_>>(),
            vec![(at(2_000), 1), (at(3_000), 2)]
        );
    }

    #[test]
    fn queue_and_mtu_drops_are_counted() {
        let mut cfg = LinkConfig::new(8e6, Duration::from_millis(1), 2);
        cfg.mtu = Some(1200);
        let mut s = Shaper::new(cfg, 1, 1);
        s.advance(at(0));
        // One in service, two queued, the rest dropped.
        let drops: Vec<Option<DropReason>> = (0..5).map(|i| s.offer(at(0), Pkt(1000, i))).collect();
        assert_eq!(drops[..3], [None, None, None]);
        assert_eq!(
            drops[3..],
            [Some(DropReason::Queue), Some(DropReason::Queue)]
        );
        assert_eq!(s.offer(at(0), Pkt(1300, 9)), Some(DropReason::Mtu));
        let got = drain(&mut s, at(1_000_000), Duration::ZERO);
        assert_eq!(got.len(), 3);
        let st = s.stats();
        assert_eq!((st.drops_queue, st.drops_mtu, st.max_queue), (2, 1, 2));
        assert_eq!(st.offered, 6);
    }

    #[test]
    fn loss_and_failure_windows_apply() {
        let mut cfg = LinkConfig::new(8e6, Duration::from_millis(1), 1000);
        cfg.failures = vec![(at(0), at(5_000))];
        let mut s = Shaper::new(cfg, 1, 1);
        s.advance(at(0));
        assert_eq!(s.offer(at(0), Pkt(100, 0)), Some(DropReason::Failure));
        s.advance(at(5_000));
        assert_eq!(s.offer(at(5_000), Pkt(100, 1)), None);
        assert_eq!(drain(&mut s, at(1_000_000), Duration::ZERO).len(), 1);

        let mut cfg = LinkConfig::new(1e9, Duration::from_millis(1), 100_000);
        cfg.loss = braid_sim::link::LossModel::Bernoulli(0.25);
        let mut s = Shaper::new(cfg, 7, 1);
        s.advance(at(0));
        for i in 0..4000 {
            s.offer(at(0), Pkt(100, i));
        }
        let got = drain(&mut s, at(10_000_000), Duration::ZERO);
        let lost = s.stats().drops_loss;
        assert_eq!(got.len() as u64 + lost, 4000);
        assert!((900..1100).contains(&lost), "{lost} lost of 4000 at 25 %");
    }

    #[test]
    fn hiccup_holds_until_overtaken_or_deadline() {
        let mut cfg = LinkConfig::new(8e6, Duration::ZERO, 100);
        cfg.reorder_at = vec![(at(0), 2)];
        let mut s = Shaper::new(cfg, 1, 1);
        s.advance(at(0));
        for i in 0..4 {
            s.offer(at(0), Pkt(1000, i));
        }
        let got = drain(&mut s, at(10_000_000), Duration::ZERO);
        assert_eq!(
            got.iter().map(|g| g.2).collect::<Vec<_>>(),
            vec![1, 2, 0, 3]
        );
        // The held packet left when the second overtaking one arrived.
        assert_eq!(got[2].0, at(3_000));
        // With nothing behind it, the hold ends at its deadline.
        let mut cfg = LinkConfig::new(8e6, Duration::ZERO, 100);
        cfg.reorder_at = vec![(at(0), 2)];
        let mut s = Shaper::new(cfg, 1, 1);
        s.advance(at(0));
        s.offer(at(0), Pkt(1000, 0));
        let got = drain(&mut s, at(10_000_000), Duration::ZERO);
        assert_eq!(
            got.iter().map(|g| (g.0, g.2)).collect::<Vec<_>>(),
            vec![(at(1_000) + braid_sim::link::HICCUP_MAX_HOLD, 0)]
        );
    }

    #[test]
    fn lateness_quantiles() {
        let mut h = LatenessHistogram::default();
        assert_eq!(h.quantile(0.5), Duration::ZERO);
        for us in 0..100 {
            h.record(Duration::from_micros(us) + Duration::from_nanos(300));
        }
        h.record(Duration::from_secs(1));
        assert_eq!(h.count(), 101);
        assert_eq!(h.quantile(0.5), Duration::from_micros(51));
        assert_eq!(h.quantile(0.99), Duration::from_micros(100));
        assert_eq!(h.quantile(1.0), Duration::from_secs(1));
        assert_eq!(h.max(), Duration::from_secs(1));
    }
}
