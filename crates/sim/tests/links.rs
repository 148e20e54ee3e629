//! The link models one by one, each driven alone on the event engine: serialization and
//! propagation, the drop-tail queue, MTU, Bernoulli and Gilbert–Elliott loss, hiccup
//! reordering, delay spikes, failure windows, rate changes and cross traffic.

#![allow(missing_docs, clippy::unwrap_used)]

use std::time::Duration;

use braid_proto::Instant;
use braid_sim::engine::EventQueue;
use braid_sim::link::{
    BackgroundShape, BackgroundSource, DropReason, GilbertElliott, HiccupConfig, Link, LinkConfig,
    LossModel, Offer, Packet, SpikeConfig, SpikeRelease, serialization_time,
};

#[derive(Debug)]
struct P {
    id: u32,
    size: usize,
}

impl Packet for P {
    fn wire_size(&self) -> usize {
        self.size
    }
}

enum Ev {
    Offer(P),
    TxDone,
    Arrive,
    Release,
}

fn ms(v: f64) -> Instant {
    Instant::from_duration(Duration::from_secs_f64(v / 1e3))
}

#[derive(Debug, Default)]
struct Outcome {
    /// (id, arrival time) in delivery order.
    delivered: Vec<(u32, Instant)>,
    dropped: Vec<(u32, DropReason)>,
}

impl Outcome {
    fn ids(&self) -> Vec<u32> {
        self.delivered.iter().map(|d| d.0).collect()
    }
}

/// Offers `sends` (time, packet) to `link` and runs until everything is delivered or dropped.
fn drive(link: &mut Link<P>, sends: impl IntoIterator<Item = (Instant, P)>) -> Outcome {
    let mut q = EventQueue::new();
    for (t, p) in sends {
        q.schedule(t, Ev::Offer(p));
    }
    let mut o = Outcome::default();
    let (mut out, mut dropped) = (Vec::new(), Vec::new());
    while let Some((now, ev)) = q.pop() {
        match ev {
            Ev::Offer(p) => match link.offer(now, p) {
                Offer::Transmitting { done } => q.schedule(done, Ev::TxDone),
                Offer::Queued => {}
                Offer::Dropped(p, r) => o.dropped.push((p.id, r)),
            },
            Ev::TxDone => {
                let r = link.tx_done(now, &mut dropped);
                if let Some(a) = r.arrival {
                    q.schedule(a, Ev::Arrive);
                }
                if let Some(d) = r.next_done {
                    q.schedule(d, Ev::TxDone);
                }
            }
            Ev::Arrive => {
                if let Some(deadline) = link.arrive(now, &mut out, &mut dropped) {
                    q.schedule(deadline, Ev::Release);
                }
            }
            Ev::Release => link.release(now, &mut out, &mut dropped),
        }
        o.delivered.extend(out.drain(..).map(|p| (p.id, now)));
        o.dropped.extend(dropped.drain(..).map(|(p, r)| (p.id, r)));
    }
    o
}

/// `n` packets of `size` bytes, one every `gap_ms`.
fn stream(n: u32, size: usize, gap_ms: f64) -> impl Iterator<Item = (Instant, P)> {
    (0..n).map(move |id| (ms(f64::from(id) * gap_ms), P { id, size }))
}

fn plain(rate_bps: f64, delay_ms: f64, queue: usize) -> LinkConfig {
    LinkConfig::new(rate_bps, Duration::from_secs_f64(delay_ms / 1e3), queue)
}

#[test]
fn serialization_and_propagation() {
    assert_eq!(serialization_time(1500, 10e6), Duration::from_micros(1200));
    let mut l = Link::new(plain(10e6, 10.0, 100), 1, 1);
    let o = drive(&mut l, stream(3, 1500, 0.0));
    // Back to back: each packet waits for the previous one's serialization.
    assert_eq!(
        o.delivered,
        vec![(0, ms(11.2)), (1, ms(12.4)), (2, ms(13.6))]
    );
    assert_eq!(l.stats().busy, Duration::from_micros(3600));
}

#[test]
fn drop_tail_queue_excludes_the_packet_in_service() {
    let mut l = Link::new(plain(10e6, 1.0, 100), 1, 1);
    let o = drive(&mut l, stream(102, 1500, 0.0));
    // One in service + 100 waiting: the 102nd is the first dropped.
    assert_eq!(o.dropped, vec![(101, DropReason::Queue)]);
    assert_eq!(o.delivered.len(), 101);
    assert_eq!(l.stats().max_queue, 100);
}

#[test]
fn a_byte_limit_drops_what_would_overflow_it() {
    let mut cfg = plain(10e6, 1.0, 100);
    cfg.queue_bytes = Some(3000);
    let mut l = Link::new(cfg, 1, 1);
    // One in service; 1500 + 1000 wait (2500); 600 more would make 3100: dropped; 500 fits.
    let sizes = [1500, 1500, 1000, 600, 500];
    let sends = sizes
        .iter()
        .enumerate()
        .map(|(i, &size)| (ms(0.0), P { id: i as u32, size }));
    let o = drive(&mut l, sends);
    assert_eq!(o.dropped, vec![(3, DropReason::Queue)]);
    assert_eq!(o.ids(), vec![0, 1, 2, 4]);
    // Arrivals saw 0, 0, 1, 2, 2 packets waiting.
    assert_eq!(l.stats().queue_seen_sum, 5);
    assert_eq!(l.queue_seen(), &[2, 1, 2]);
}

#[test]
fn oversized_packets_are_dropped() {
    let mut cfg = plain(10e6, 1.0, 10);
    cfg.mtu = Some(1500);
    let mut l = Link::new(cfg, 1, 1);
    let o = drive(
        &mut l,
        [
            (ms(0.0), P { id: 0, size: 1500 }),
            (ms(1.0), P { id: 1, size: 1501 }),
        ],
    );
    assert_eq!(o.ids(), vec![0]);
    assert_eq!(o.dropped, vec![(1, DropReason::Mtu)]);
}

#[test]
fn bernoulli_loss_rate() {
    let mut cfg = plain(1e9, 0.0, 10);
    cfg.loss = LossModel::Bernoulli(0.02);
    let mut l = Link::new(cfg, 7, 1);
    let n = 200_000;
    let o = drive(&mut l, stream(n, 100, 0.01));
    let rate = o.dropped.len() as f64 / f64::from(n);
    assert!((rate - 0.02).abs() < 0.002, "loss rate {rate}");
    assert!(o.dropped.iter().all(|d| d.1 == DropReason::Loss));
}

#[test]
fn gilbert_elliott_long_run_loss_matches_its_stationary_value() {
    let ge = GilbertElliott {
        p_good_bad: 0.01,
        p_bad_good: 0.2,
        loss_good: 0.001,
        loss_bad: 0.8,
        bad: false,
    };
    let expected = ge.stationary_loss();
    assert!((expected - (0.952_380_95 * 0.001 + 0.047_619_05 * 0.8)).abs() < 1e-6);
    let mut cfg = plain(1e9, 0.0, 10);
    cfg.loss = LossModel::Gilbert(ge);
    let mut l = Link::new(cfg, 3, 1);
    let n = 400_000;
    let o = drive(&mut l, stream(n, 100, 0.01));
    let rate = o.dropped.len() as f64 / f64::from(n);
    assert!(
        (rate - expected).abs() < 0.1 * expected,
        "loss rate {rate}, stationary {expected}"
    );
    // Bursty: losses come in runs, much longer than Bernoulli's at the same rate.
    let lost: Vec<u32> = o.dropped.iter().map(|d| d.0).collect();
    let runs = 1 + lost.windows(2).filter(|w| w[1] != w[0] + 1).count();
    let mean_run = lost.len() as f64 / runs as f64;
    assert!(mean_run > 2.0, "mean loss run {mean_run}");
}

#[test]
fn hiccup_displaces_a_packet_by_exactly_n() {
    for n in [1usize, 3, 7] {
        let mut cfg = plain(10e6, 5.0, 1000);
        cfg.hiccup = Some(HiccupConfig {
            rate: 0.03,
            displacement: n,
        });
        let mut l = Link::new(cfg, 11, 1);
        let o = drive(&mut l, stream(5000, 1500, 1.5));
        let ids = o.ids();
        assert_eq!(ids.len(), 5000);
        let mut displaced = 0;
        for (pos, &id) in ids.iter().enumerate() {
            // Packets with a higher number delivered before this one.
            let overtaken_by = ids[..pos].iter().filter(|&&x| x > id).count();
            assert!(
                overtaken_by == 0 || overtaken_by == n,
                "packet {id} overtaken by {overtaken_by}, not {n}"
            );
            if overtaken_by == n {
                displaced += 1;
                // It arrives right behind the n-th packet after it.
                assert_eq!(ids[pos - 1], id + n as u32);
            }
        }
        assert_eq!(displaced, l.stats().displaced);
        let share = f64::from(displaced as u32) / 5000.0;
        assert!((0.015..0.04).contains(&share), "displaced share {share}");
    }
}

#[test]
fn hiccup_releases_a_held_packet_when_traffic_stops() {
    let mut cfg = plain(10e6, 1.0, 10);
    cfg.hiccup = Some(HiccupConfig {
        rate: 1.0,
        displacement: 5,
    });
    let mut l = Link::new(cfg, 1, 1);
    let o = drive(&mut l, stream(1, 1500, 0.0));
    assert_eq!(o.ids(), vec![0]);
    assert_eq!(o.delivered[0].1, ms(2.2) + braid_sim::link::HICCUP_MAX_HOLD);
}

#[test]
fn delay_spike_holds_every_packet_in_flight_until_it_ends() {
    let mut cfg = plain(100e6, 10.0, 100);
    cfg.spikes = Some(SpikeConfig {
        interval: (Duration::from_millis(100), Duration::from_millis(100)),
        length: (Duration::from_millis(50), Duration::from_millis(50)),
    });
    let mut l = Link::new(cfg, 1, 1);
    // One small packet per ms for 380 ms: spikes cover [100, 150), [250, 300) and
    // [400, 450) (after the last arrival).
    let o = drive(&mut l, stream(380, 125, 1.0));
    let ser = 0.01; // 125 bytes at 100 Mbit/s
    for &(id, at) in &o.delivered {
        let natural = f64::from(id) + ser + 10.0;
        let expected = if (100.0..150.0).contains(&natural) {
            150.0
        } else if (250.0..300.0).contains(&natural) {
            300.0
        } else {
            natural
        };
        assert_eq!(at, ms(expected), "packet {id}");
    }
    // Order is kept.
    assert!(o.ids().windows(2).all(|w| w[0] < w[1]));
    assert_eq!(o.delivered.len(), 380);
    assert_eq!((l.stats().spiked, l.stats().spikes), (100, 2));
}

#[test]
fn fixed_spike_holds_what_would_arrive_within_it_and_chains_with_random_ones() {
    // One small packet per ms for 300 ms, 10 ms propagation (+0.01 ms serialization).
    let natural = |id: u32| f64::from(id) + 0.01 + 10.0;
    let mut cfg = plain(100e6, 10.0, 100);
    cfg.spikes_at = vec![(ms(50.0), ms(80.0))];
    let mut l = Link::new(cfg, 1, 1);
    let o = drive(&mut l, stream(300, 125, 1.0));
    for &(id, at) in &o.delivered {
        let t = natural(id);
        let want = if (50.0..80.0).contains(&t) { 80.0 } else { t };
        assert_eq!(at, ms(want), "packet {id}");
    }
    assert_eq!((l.stats().spiked, l.stats().spikes), (30, 1));
    // A random spike [100, 150) and a fixed one [140, 170) that overlaps its end: a packet
    // held until 150 by the first lands in the second and waits until 170.
    let mut cfg = plain(100e6, 10.0, 100);
    cfg.spikes = Some(SpikeConfig {
        interval: (Duration::from_millis(100), Duration::from_millis(100)),
        length: (Duration::from_millis(50), Duration::from_millis(50)),
    });
    cfg.spikes_at = vec![(ms(140.0), ms(170.0))];
    let mut l = Link::new(cfg, 1, 1);
    let o = drive(&mut l, stream(220, 125, 1.0));
    for &(id, at) in &o.delivered {
        let t = natural(id);
        let want = if (100.0..170.0).contains(&t) {
            170.0
        } else {
            t
        };
        assert_eq!(at, ms(want), "packet {id}");
    }
    assert!(o.ids().windows(2).all(|w| w[0] < w[1]));
    assert_eq!((l.stats().spiked, l.stats().spikes), (70, 2));
}

#[test]
fn reorder_at_displaces_the_first_packet_at_or_after_each_time() {
    let mut cfg = plain(10e6, 1.0, 1000);
    cfg.reorder_at = vec![(ms(30.5), 3), (ms(10.0), 2)];
    let mut l = Link::new(cfg, 1, 1);
    // One 1500-byte packet per 2 ms: packet k arrives at 2k + 2.2 ms.
    let o = drive(&mut l, stream(30, 1500, 2.0));
    let ids = o.ids();
    // Packet 4 (10.2 ms) waits for 5 and 6; packet 15 (32.2 ms) for 16, 17 and 18.
    let mut want: Vec<u32> = (0..30).collect();
    want[4..7].rotate_left(1);
    want[15..19].rotate_left(1);
    assert_eq!(ids, want);
    assert_eq!(l.stats().displaced, 2);
}

#[test]
fn failure_window_drops_exactly_what_crosses_it() {
    let mut cfg = plain(1e9, 0.0, 100);
    cfg.failures = vec![(ms(30.0), ms(60.0))];
    let mut l = Link::new(cfg, 1, 1);
    let o = drive(&mut l, stream(100, 125, 1.0));
    let expected: Vec<u32> = (0..30).chain(60..100).collect();
    assert_eq!(o.ids(), expected);
    assert!(o.dropped.iter().all(|d| d.1 == DropReason::Failure));
    assert_eq!(o.dropped.len(), 30);

    // With propagation delay: a packet still on its way when the link fails is lost too.
    let mut cfg = plain(1e9, 5.0, 100);
    cfg.failures = vec![(ms(30.0), ms(60.0))];
    let mut l = Link::new(cfg, 1, 1);
    let o = drive(&mut l, stream(100, 125, 1.0));
    let expected: Vec<u32> = (0..25).chain(60..100).collect();
    assert_eq!(o.ids(), expected);
}

#[test]
fn rate_change_applies_to_packets_that_start_after_it() {
    let mut cfg = plain(10e6, 0.0, 100);
    cfg.rate_changes = vec![(ms(10.0), 5e6)];
    let mut l = Link::new(cfg, 1, 1);
    let o = drive(
        &mut l,
        [
            (ms(0.0), P { id: 0, size: 1500 }),
            (ms(20.0), P { id: 1, size: 1500 }),
        ],
    );
    assert_eq!(o.delivered, vec![(0, ms(1.2)), (1, ms(22.4))]);
}

#[test]
fn background_sources() {
    let cbr = BackgroundSource {
        shape: BackgroundShape::Constant,
        rate_bps: 5e6,
        packet_size: 1000,
    };
    assert_eq!(cbr.spacing(), Duration::from_micros(1600));
    assert_eq!(cbr.next_after(ms(1.0)), ms(2.6));
    let square = BackgroundSource {
        shape: BackgroundShape::Square {
            period: Duration::from_millis(100),
        },
        ..cbr
    };
    // On in [0, 50) ms, off in [50, 100).
    assert_eq!(square.next_after(ms(40.0)), ms(41.6));
    assert_eq!(square.next_after(ms(49.0)), ms(100.0));
    let mut t = square.first();
    let mut sent_on = 0;
    while t < ms(1000.0) {
        assert!(
            (t.since_epoch().as_millis() % 100) < 50,
            "sent while off at {t:?}"
        );
        sent_on += 1;
        t = square.next_after(t);
    }
    // Half the time at 5 Mbit/s of 1000-byte packets: 625 packets per second on.
    assert!((310..=320).contains(&sent_on), "{sent_on}");
}

#[test]
fn background_traffic_shares_the_queue_and_is_never_lost() {
    #[derive(Debug)]
    struct B(u32, bool);
    impl Packet for B {
        fn wire_size(&self) -> usize {
            1000
        }
        fn is_background(&self) -> bool {
            self.1
        }
    }
    let mut cfg = plain(8e6, 0.0, 2);
    cfg.loss = LossModel::Bernoulli(1.0);
    let mut l: Link<B> = Link::new(cfg, 1, 1);
    let t0 = Instant::ZERO;
    // A background packet takes the transmitter; two more fill the queue.
    assert!(matches!(
        l.offer(t0, B(0, true)),
        Offer::Transmitting { .. }
    ));
    assert!(matches!(l.offer(t0, B(1, false)), Offer::Queued));
    assert!(matches!(l.offer(t0, B(2, true)), Offer::Queued));
    assert!(matches!(
        l.offer(t0, B(3, false)),
        Offer::Dropped(_, DropReason::Queue)
    ));
    let mut dropped = Vec::new();
    // 1000 bytes at 8 Mbit/s: 1 ms each. Background survives loss 1.0, the other does not.
    let r = l.tx_done(ms(1.0), &mut dropped);
    assert_eq!(r.arrival, Some(ms(1.0)));
    let _ = l.tx_done(ms(2.0), &mut dropped);
    assert_eq!(dropped.len(), 1);
    assert_eq!(dropped[0].0.0, 1);
}

#[test]
fn same_seed_same_draws_other_stream_other_draws() {
    let run = |seed, stream| {
        let mut cfg = plain(1e9, 0.0, 10);
        cfg.loss = LossModel::Bernoulli(0.1);
        let mut l = Link::new(cfg, seed, stream);
        drive(&mut l, stream_of(1000)).dropped
    };
    fn stream_of(n: u32) -> impl Iterator<Item = (Instant, P)> {
        stream(n, 100, 0.01)
    }
    assert_eq!(run(1, 1), run(1, 1));
    assert_ne!(run(1, 1), run(1, 2));
    assert_ne!(run(1, 1), run(2, 1));
}

/// `spike_release = "at-rate"`: the link stalls for the spike, then drains what it held at
/// its rate (one serialization time apart), and packets after it queue behind.
#[test]
fn a_spike_that_drains_at_the_link_rate_spaces_what_it_held() {
    // One 1250-byte packet per ms at 20 Mbit/s (0.5 ms each), 10 ms propagation.
    let natural = |id: u32| f64::from(id) + 0.5 + 10.0;
    let mut cfg = plain(20e6, 10.0, 100);
    cfg.spikes_at = vec![(ms(50.0), ms(80.0))];
    cfg.spike_release = SpikeRelease::AtRate;
    let mut l = Link::new(cfg.clone(), 1, 1);
    let o = drive(&mut l, stream(200, 1250, 1.0));
    // The 30 packets held (natural arrivals 50.5..79.5) leave from 80 ms on, 0.5 ms apart;
    // the packets after them wait while the drain lasts (until 80 + 30 x 0.5 = 95 ms).
    let mut last = 0.0f64;
    for &(id, at) in &o.delivered {
        let t = natural(id);
        let want = if t < 50.0 {
            t
        } else {
            t.max(last + 0.5).max(if t < 80.0 { 80.0 } else { 0.0 })
        };
        assert_eq!(at, ms(want), "packet {id}");
        last = want;
    }
    let held: Vec<_> = (o.delivered.iter())
        .filter(|(id, _)| (50.0..80.0).contains(&natural(*id)))
        .map(|(_, at)| *at)
        .collect();
    assert_eq!(held.len(), 30);
    assert_eq!(held[0], ms(80.0));
    assert_eq!(held[29], ms(80.0 + 29.0 * 0.5));
    assert!(o.ids().windows(2).all(|w| w[0] < w[1]));
    // The default releases them all at once.
    cfg.spike_release = SpikeRelease::AtOnce;
    let mut l = Link::new(cfg, 1, 1);
    let o = drive(&mut l, stream(200, 1250, 1.0));
    let at_once = (o.delivered.iter())
        .filter(|(id, _)| (50.0..80.0).contains(&natural(*id)))
        .all(|(_, at)| *at == ms(80.0));
    assert!(at_once);
}
