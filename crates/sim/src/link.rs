//! A unidirectional link: a drop-tail FIFO in front of a transmitter of a given rate, a
//! propagation delay, and the impairments the papers use — Bernoulli and Gilbert–Elliott
//! loss, "hiccup" reordering and delay spikes (Ladha et al. §4), failure windows, rate changes
//! — plus a cross-traffic source (Abd El Al et al. Fig. 14).
//!
//! The link does not own a clock: the driver calls [`Link::offer`] when a packet enters,
//! [`Link::tx_done`] when the serialization it was told about ends, [`Link::arrive`] at each
//! arrival time it was given, and [`Link::release`] at a hiccup deadline. Every random draw
//! comes from the link's own seeded generators, so one link's impairments do not shift
//! another's.
//!
//! Conventions (as in INET): the queue capacity counts waiting packets, not the one being
//! serialized, so a link with `queue = 100` holds 101 packets; loss hits a packet after it
//! was serialized (it used the link); a packet is dropped by a failure window if the link is
//! down when it enters, starts or ends serialization, or arrives.

use std::collections::VecDeque;
use std::time::Duration;

use braid_proto::Instant;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

/// Longest a hiccup holds a packet when fewer than `displacement` packets follow it.
pub const HICCUP_MAX_HOLD: Duration = Duration::from_secs(1);

/// What the link needs to know about a packet.
pub trait Packet {
    /// Bytes on the wire (IP header included).
    fn wire_size(&self) -> usize;
    /// Cross traffic: it uses the queue and the transmitter but is never lost, reordered
    /// or counted by the impairment models, and the driver discards it at the far end.
    fn is_background(&self) -> bool {
        false
    }
    /// IP may fragment it (no DF bit): a link with a smaller MTU carries it as fragments.
    fn may_fragment(&self) -> bool {
        false
    }
}

/// Time to serialize `bytes` at `rate_bps` bits per second, rounded to the nanosecond.
pub fn serialization_time(bytes: usize, rate_bps: f64) -> Duration {
    Duration::from_nanos((bytes as f64 * 8e9 / rate_bps).round() as u64)
}

/// A uniform draw in [0, 1) from 53 random bits.
pub fn uniform(rng: &mut ChaCha8Rng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// A uniform draw in [lo, hi].
fn uniform_duration(rng: &mut ChaCha8Rng, lo: Duration, hi: Duration) -> Duration {
    if hi <= lo {
        return lo;
    }
    lo + (hi - lo).mul_f64(uniform(rng))
}

/// Two-state Markov loss (Gilbert–Elliott): each packet is lost with the loss probability of
/// the current state, then the state moves.
#[derive(Debug, Clone)]
pub struct GilbertElliott {
    /// P(good → bad) per packet.
    pub p_good_bad: f64,
    /// P(bad → good) per packet.
    pub p_bad_good: f64,
    /// Loss probability in the good state.
    pub loss_good: f64,
    /// Loss probability in the bad state.
    pub loss_bad: f64,
    /// Current state.
    pub bad: bool,
}

impl GilbertElliott {
    /// Stationary probability of the bad state: p_gb / (p_gb + p_bg).
    pub fn stationary_bad(&self) -> f64 {
        let s = self.p_good_bad + self.p_bad_good;
        if s > 0.0 { self.p_good_bad / s } else { 0.0 }
    }

    /// Long-run loss rate: π_good·loss_good + π_bad·loss_bad.
    pub fn stationary_loss(&self) -> f64 {
        let b = self.stationary_bad();
        (1.0 - b) * self.loss_good + b * self.loss_bad
    }

    fn lose(&mut self, rng: &mut ChaCha8Rng) -> bool {
        let p = if self.bad {
            self.loss_bad
        } else {
            self.loss_good
        };
        let lost = uniform(rng) < p;
        let u = uniform(rng);
        self.bad = if self.bad {
            u >= self.p_bad_good
        } else {
            u < self.p_good_bad
        };
        lost
    }
}

/// Random loss of a link.
#[derive(Debug, Clone, Default)]
pub enum LossModel {
    /// No loss.
    #[default]
    None,
    /// Each packet lost independently with this probability.
    Bernoulli(f64),
    /// Bursty loss.
    Gilbert(GilbertElliott),
}

/// "Hiccup" reordering (Ladha et al. §4, the ns-2 hiccup module): a packet, chosen with
/// probability `rate`, is held until the next `displacement` packets have passed it.
#[derive(Debug, Clone, Copy)]
pub struct HiccupConfig {
    /// Probability per packet of being displaced.
    pub rate: f64,
    /// Packets that overtake a displaced one.
    pub displacement: usize,
}

/// Delay spikes (Ladha et al. §6 "Spurious Timeouts"): the gap from the end of one spike to the
/// start of the next is uniform in `interval`, a spike's length uniform in `length`; every
/// packet that would arrive during a spike arrives when it ends, in order.
#[derive(Debug, Clone, Copy)]
pub struct SpikeConfig {
    /// Range of the gap between spikes.
    pub interval: (Duration, Duration),
    /// Range of a spike's length.
    pub length: (Duration, Duration),
}

/// What a delay spike does with the packets it holds. The spurious-retransmission paper
/// (Ladha et al. §6) says only that the link's delay spikes; both readings are measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SpikeRelease {
    /// Every held packet arrives when the spike ends, at one instant (a delay that grows
    /// and then collapses).
    #[default]
    AtOnce,
    /// The link stalls and then drains: held packets arrive from the spike's end on, one
    /// serialization time apart, and later packets queue behind them.
    AtRate,
}

/// Everything that describes a link.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// Rate in bits per second.
    pub rate_bps: f64,
    /// One-way propagation delay.
    pub delay: Duration,
    /// Drop-tail capacity in packets, excluding the one being serialized.
    pub queue: usize,
    /// Drop-tail capacity in bytes on the wire, excluding the packet being serialized
    /// (`None`: packets only); a packet is dropped if either limit would be exceeded.
    pub queue_bytes: Option<usize>,
    /// Largest packet carried (bytes on the wire); `None`: no limit.
    pub mtu: Option<usize>,
    /// Random loss.
    pub loss: LossModel,
    /// Reordering.
    pub hiccup: Option<HiccupConfig>,
    /// Delay spikes.
    pub spikes: Option<SpikeConfig>,
    /// Delay spikes at fixed times `[from, to)`: a packet that would arrive within one
    /// arrives at its end (with random `spikes`, whichever holds it longer).
    pub spikes_at: Vec<(Instant, Instant)>,
    /// What a spike does with the packets it held.
    pub spike_release: SpikeRelease,
    /// Reordering at fixed times, in time order: the first packet to arrive at or after each
    /// time (while none is held) is held until this many later packets have passed it.
    pub reorder_at: Vec<(Instant, usize)>,
    /// Windows `[from, to)` during which the link drops everything.
    pub failures: Vec<(Instant, Instant)>,
    /// `(at, rate)`: the rate in bits per second from `at` on, in time order.
    pub rate_changes: Vec<(Instant, f64)>,
    /// `(at, mtu)`: the MTU from `at` on, in time order.
    pub mtu_changes: Vec<(Instant, usize)>,
}

impl LinkConfig {
    /// A plain link: no MTU limit, no impairment.
    pub fn new(rate_bps: f64, delay: Duration, queue: usize) -> Self {
        Self {
            rate_bps,
            delay,
            queue,
            queue_bytes: None,
            mtu: None,
            loss: LossModel::None,
            hiccup: None,
            spikes: None,
            spikes_at: Vec::new(),
            spike_release: SpikeRelease::AtOnce,
            reorder_at: Vec::new(),
            failures: Vec::new(),
            rate_changes: Vec::new(),
            mtu_changes: Vec::new(),
        }
    }
}

/// Why a link dropped a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// The queue was full (drop-tail).
    Queue,
    /// Larger than the link MTU.
    Mtu,
    /// Random loss.
    Loss,
    /// The link was down.
    Failure,
}

/// What happened to an offered packet.
#[derive(Debug)]
pub enum Offer<P> {
    /// The link was idle: serialization ends at `done` (call [`Link::tx_done`] then).
    Transmitting {
        /// End of serialization.
        done: Instant,
    },
    /// Waiting in the queue.
    Queued,
    /// Dropped, and why.
    Dropped(P, DropReason),
}

/// What [`Link::tx_done`] asks the driver to schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxDone {
    /// Arrival at the far end of the packet just serialized (call [`Link::arrive`] then);
    /// `None` if it was lost.
    pub arrival: Option<Instant>,
    /// End of the next serialization, if the queue was not empty.
    pub next_done: Option<Instant>,
}

/// Counters of a link.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct LinkStats {
    /// Packets offered.
    pub offered: u64,
    /// Packets delivered at the far end.
    pub delivered: u64,
    /// Bytes delivered at the far end.
    pub delivered_bytes: u64,
    /// Drop-tail drops.
    pub drops_queue: u64,
    /// Oversized packets dropped.
    pub drops_mtu: u64,
    /// Random losses.
    pub drops_loss: u64,
    /// Drops in failure windows.
    pub drops_failure: u64,
    /// Packets displaced by a hiccup.
    pub displaced: u64,
    /// Packets held by a delay spike.
    pub spiked: u64,
    /// Delay spikes that held at least one packet.
    pub spikes: u64,
    /// Most packets waiting at once.
    pub max_queue: usize,
    /// Time spent serializing.
    pub busy: Duration,
    /// Sum over offered packets of the packets waiting when each arrived (their mean is the
    /// queue an arriving packet sees).
    pub queue_seen_sum: u64,
}

/// A packet held by a hiccup.
#[derive(Debug)]
struct Held<P> {
    packet: P,
    /// Packets still to overtake it.
    remaining: usize,
    /// Released at this time at the latest.
    deadline: Instant,
}

/// One unidirectional link.
#[derive(Debug)]
pub struct Link<P> {
    cfg: LinkConfig,
    /// Loss and reordering draws.
    rng: ChaCha8Rng,
    /// Spike draws.
    spike_rng: ChaCha8Rng,
    queue: VecDeque<P>,
    /// Bytes waiting in `queue`.
    queued_bytes: usize,
    /// `seen[n]`: offered packets that found `n` waiting (for the queue's percentiles).
    seen: Vec<u64>,
    in_service: Option<P>,
    /// Serialized packets on their way, with their arrival times (FIFO).
    pipe: VecDeque<(Instant, P)>,
    held: Option<Held<P>>,
    /// Random delay spikes `[start, end)` drawn so far that may still hold a packet, in time
    /// order, each with whether it held one already; the last starts after every arrival
    /// time asked about.
    spikes: VecDeque<(Instant, Instant, bool)>,
    /// Which of the fixed spikes held a packet already.
    spikes_at_hit: Vec<bool>,
    /// The latest arrival time given a packet (for [`SpikeRelease::AtRate`]).
    last_arrival: Instant,
    /// The next of `cfg.reorder_at` to come.
    next_reorder: usize,
    rate: f64,
    next_rate_change: usize,
    stats: LinkStats,
}

impl<P: Packet> Link<P> {
    /// A link whose random draws come from `seed` and `stream` (one stream per link).
    pub fn new(cfg: LinkConfig, seed: u64, stream: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        rng.set_stream(stream.wrapping_mul(2));
        let mut spike_rng = ChaCha8Rng::seed_from_u64(seed);
        spike_rng.set_stream(stream.wrapping_mul(2).wrapping_add(1));
        let mut cfg = cfg;
        if let LossModel::Gilbert(g) = &mut cfg.loss {
            // Start in the stationary distribution, so short runs see the long-run rate.
            g.bad = uniform(&mut rng) < g.stationary_bad();
        }
        let spikes = cfg
            .spikes
            .map(|s| {
                let start =
                    Instant::ZERO + uniform_duration(&mut spike_rng, s.interval.0, s.interval.1);
                let end = start + uniform_duration(&mut spike_rng, s.length.0, s.length.1);
                (start, end, false)
            })
            .into_iter()
            .collect();
        cfg.reorder_at.sort_by_key(|r| r.0);
        Self {
            spikes_at_hit: vec![false; cfg.spikes_at.len()],
            rate: cfg.rate_bps,
            cfg,
            rng,
            spike_rng,
            queue: VecDeque::new(),
            queued_bytes: 0,
            seen: Vec::new(),
            in_service: None,
            pipe: VecDeque::new(),
            held: None,
            spikes,
            last_arrival: Instant::ZERO,
            next_reorder: 0,
            next_rate_change: 0,
            stats: LinkStats::default(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &LinkConfig {
        &self.cfg
    }

    /// Counters.
    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }

    /// Packets waiting (not counting the one being serialized).
    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }

    /// How many offered packets found each queue length (index: packets waiting); with
    /// [`LinkStats::queue_seen_sum`] the queue's mean and percentiles as arrivals see them.
    pub fn queue_seen(&self) -> &[u64] {
        &self.seen
    }

    /// The packet being serialized.
    pub fn in_service(&self) -> Option<&P> {
        self.in_service.as_ref()
    }

    /// Whether a packet is being serialized.
    pub fn is_busy(&self) -> bool {
        self.in_service.is_some()
    }

    /// Whether a failure window covers `t`.
    pub fn is_down(&self, t: Instant) -> bool {
        self.cfg.failures.iter().any(|&(a, b)| a <= t && t < b)
    }

    /// The rate at `t` (rate changes applied), in bits per second.
    pub fn rate_at(&mut self, t: Instant) -> f64 {
        while let Some(&(at, r)) = self.cfg.rate_changes.get(self.next_rate_change) {
            if at > t {
                break;
            }
            self.rate = r;
            self.next_rate_change += 1;
        }
        self.rate
    }

    /// The MTU at `t` (the last MTU change at or before `t`, else the configured one).
    pub fn mtu_at(&self, t: Instant) -> Option<usize> {
        let changed = self.cfg.mtu_changes.iter().rev().find(|c| c.0 <= t);
        changed.map(|c| c.1).or(self.cfg.mtu)
    }

    /// A packet enters the link at `now`.
    pub fn offer(&mut self, now: Instant, p: P) -> Offer<P> {
        self.stats.offered += 1;
        let waiting = self.queue.len();
        self.stats.queue_seen_sum += waiting as u64;
        if self.seen.len() <= waiting {
            self.seen.resize(waiting + 1, 0);
        }
        self.seen[waiting] += 1;
        if self.is_down(now) {
            self.stats.drops_failure += 1;
            return Offer::Dropped(p, DropReason::Failure);
        }
        if self.mtu_at(now).is_some_and(|m| p.wire_size() > m) && !p.may_fragment() {
            self.stats.drops_mtu += 1;
            return Offer::Dropped(p, DropReason::Mtu);
        }
        if self.in_service.is_none() {
            let done = self.start(now, p);
            return Offer::Transmitting { done };
        }
        if self.queue.len() >= self.cfg.queue
            || (self.cfg.queue_bytes).is_some_and(|b| self.queued_bytes + p.wire_size() > b)
        {
            self.stats.drops_queue += 1;
            return Offer::Dropped(p, DropReason::Queue);
        }
        self.queued_bytes += p.wire_size();
        self.queue.push_back(p);
        self.stats.max_queue = self.stats.max_queue.max(self.queue.len());
        Offer::Queued
    }

    fn start(&mut self, now: Instant, p: P) -> Instant {
        let rate = self.rate_at(now);
        let t = serialization_time(p.wire_size(), rate);
        self.stats.busy += t;
        self.in_service = Some(p);
        now + t
    }

    /// The packet being serialized is on the wire at `now`. Lost packets go to `dropped`.
    pub fn tx_done(&mut self, now: Instant, dropped: &mut Vec<(P, DropReason)>) -> TxDone {
        let mut arrival = None;
        if let Some(p) = self.in_service.take() {
            if self.is_down(now) {
                self.stats.drops_failure += 1;
                dropped.push((p, DropReason::Failure));
            } else if !p.is_background() && self.lose() {
                self.stats.drops_loss += 1;
                dropped.push((p, DropReason::Loss));
            } else {
                let mut at = self.through_spikes(now + self.cfg.delay, p.is_background());
                if self.cfg.spike_release == SpikeRelease::AtRate {
                    // Draining at the link's rate: one serialization time after the previous.
                    let t = serialization_time(p.wire_size(), self.rate_at(now));
                    at = at.max(self.last_arrival + t);
                    self.last_arrival = at;
                }
                self.pipe.push_back((at, p));
                arrival = Some(at);
            }
        }
        let mut next_done = None;
        while let Some(p) = self.queue.pop_front() {
            self.queued_bytes -= p.wire_size();
            if self.is_down(now) {
                self.stats.drops_failure += 1;
                dropped.push((p, DropReason::Failure));
                continue;
            }
            next_done = Some(self.start(now, p));
            break;
        }
        TxDone { arrival, next_done }
    }

    fn lose(&mut self) -> bool {
        match &mut self.cfg.loss {
            LossModel::None => false,
            LossModel::Bernoulli(p) => {
                let p = *p;
                p > 0.0 && uniform(&mut self.rng) < p
            }
            LossModel::Gilbert(g) => g.lose(&mut self.rng),
        }
    }

    /// The arrival time of a packet that would arrive at `at`, held by every delay spike
    /// (random or fixed) it falls into until none holds it. Arrival times come in order, so
    /// spikes that ended before `at` are forgotten.
    fn through_spikes(&mut self, at: Instant, background: bool) -> Instant {
        if self.cfg.spikes.is_none() && self.cfg.spikes_at.is_empty() {
            return at;
        }
        while self.spikes.len() > 1 && self.spikes.front().is_some_and(|s| s.1 <= at) {
            self.spikes.pop_front();
        }
        let mut t = at;
        loop {
            let fixed = self
                .cfg
                .spikes_at
                .iter()
                .position(|&(a, b)| a <= t && t < b);
            let random = self.random_spike(t);
            let end = match (fixed, random) {
                (None, None) => return t,
                (Some(i), None) => self.cfg.spikes_at[i].1,
                (None, Some(k)) => self.spikes[k].1,
                (Some(i), Some(k)) => self.cfg.spikes_at[i].1.max(self.spikes[k].1),
            };
            if !background {
                if t == at {
                    self.stats.spiked += 1;
                }
                let first_hit = match (fixed, random) {
                    (Some(i), _) if !self.spikes_at_hit[i] => {
                        self.spikes_at_hit[i] = true;
                        true
                    }
                    (_, Some(k)) if !self.spikes[k].2 => {
                        self.spikes[k].2 = true;
                        true
                    }
                    _ => false,
                };
                if first_hit {
                    self.stats.spikes += 1;
                }
            }
            t = end;
        }
    }

    /// The index in `spikes` of the random spike covering `t`, drawing spikes up to it.
    fn random_spike(&mut self, t: Instant) -> Option<usize> {
        let cfg = self.cfg.spikes?;
        while let Some(&(_, end, _)) = self.spikes.back() {
            if end > t {
                break;
            }
            let start = end + uniform_duration(&mut self.spike_rng, cfg.interval.0, cfg.interval.1);
            let len = uniform_duration(&mut self.spike_rng, cfg.length.0, cfg.length.1);
            self.spikes.push_back((start, start + len, false));
        }
        self.spikes.iter().position(|&(a, b, _)| a <= t && t < b)
    }

    /// The next packet reaches the far end at `now` (the time [`Link::tx_done`] gave).
    /// Delivered packets are appended to `out`, in order; a hiccup may hold the packet (then
    /// the returned instant is its release deadline: call [`Link::release`] then) or release
    /// a held one after it.
    pub fn arrive(
        &mut self,
        now: Instant,
        out: &mut Vec<P>,
        dropped: &mut Vec<(P, DropReason)>,
    ) -> Option<Instant> {
        let (_, p) = self.pipe.pop_front()?;
        if self.is_down(now) {
            self.stats.drops_failure += 1;
            dropped.push((p, DropReason::Failure));
            return None;
        }
        if p.is_background() {
            self.deliver(p, out);
            return None;
        }
        if let Some(h) = &mut self.held {
            self.stats.delivered += 1;
            self.stats.delivered_bytes += p.wire_size() as u64;
            out.push(p);
            h.remaining -= 1;
            if h.remaining == 0 {
                self.release_held(now, out, dropped);
            }
            return None;
        }
        let fixed = match self.cfg.reorder_at.get(self.next_reorder) {
            Some(&(at, n)) if at <= now => {
                self.next_reorder += 1;
                Some(n)
            }
            _ => None,
        };
        let displacement = fixed.or_else(|| {
            self.cfg
                .hiccup
                .filter(|h| h.displacement > 0 && h.rate > 0.0)
                .and_then(|h| (uniform(&mut self.rng) < h.rate).then_some(h.displacement))
        });
        if let Some(n) = displacement.filter(|&n| n > 0) {
            let deadline = now + HICCUP_MAX_HOLD;
            self.held = Some(Held {
                packet: p,
                remaining: n,
                deadline,
            });
            return Some(deadline);
        }
        self.deliver(p, out);
        None
    }

    fn deliver(&mut self, p: P, out: &mut Vec<P>) {
        self.stats.delivered += 1;
        self.stats.delivered_bytes += p.wire_size() as u64;
        out.push(p);
    }

    fn release_held(&mut self, now: Instant, out: &mut Vec<P>, dropped: &mut Vec<(P, DropReason)>) {
        if let Some(h) = self.held.take() {
            self.stats.displaced += 1;
            if self.is_down(now) {
                self.stats.drops_failure += 1;
                dropped.push((h.packet, DropReason::Failure));
            } else {
                self.deliver(h.packet, out);
            }
        }
    }

    /// A hiccup deadline: releases the held packet if its deadline has come.
    pub fn release(&mut self, now: Instant, out: &mut Vec<P>, dropped: &mut Vec<(P, DropReason)>) {
        if self.held.as_ref().is_some_and(|h| h.deadline <= now) {
            self.release_held(now, out, dropped);
        }
    }
}

/// Shape of cross traffic.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BackgroundShape {
    /// Always on.
    Constant,
    /// On for the first half of each period, off for the second.
    Square {
        /// The period.
        period: Duration,
    },
}

/// Cross traffic of fixed-size packets at a fixed rate while on (Abd El Al et al. Fig. 14).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackgroundSource {
    /// Shape.
    pub shape: BackgroundShape,
    /// Rate while on, bits per second.
    pub rate_bps: f64,
    /// Size of each packet on the wire.
    pub packet_size: usize,
}

impl BackgroundSource {
    /// Time between two packets while on.
    pub fn spacing(&self) -> Duration {
        serialization_time(self.packet_size, self.rate_bps)
    }

    /// The first packet: at the start, or at the start of the first on period.
    pub fn first(&self) -> Instant {
        Instant::ZERO
    }

    /// The packet after one sent at `t`.
    pub fn next_after(&self, t: Instant) -> Instant {
        let next = t + self.spacing().max(Duration::from_nanos(1));
        match self.shape {
            BackgroundShape::Constant => next,
            BackgroundShape::Square { period } => {
                let p = period.as_nanos().max(1);
                let since = next.since_epoch().as_nanos();
                let phase = since % p;
                if phase * 2 < p {
                    next
                } else {
                    // In the off half: wait for the next period.
                    let start = (since / p + 1) * p;
                    Instant::from_duration(Duration::from_nanos(start as u64))
                }
            }
        }
    }
}
