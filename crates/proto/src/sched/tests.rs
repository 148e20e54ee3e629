//! The scheduler driven directly, the way `SendQueue` drives it: one scenario per
//! discipline, a run-time switch, and a property that no message is lost or duplicated.

use std::collections::VecDeque;
use std::time::Duration;

use proptest::prelude::*;

use super::{PathView, Scheduler, SchedulerKind};
use crate::path::PathId;
use crate::time::Instant;

const A: u16 = 0;
const B: u16 = 1;
const C: u16 = 2;
const D: u16 = 3;

fn view(cwnd: usize, srtt_ms: u64) -> PathView {
    PathView {
        usable: true,
        cwnd,
        srtt: Some(Duration::from_millis(srtt_ms)),
    }
}

/// A model of `SendQueue`: per-stream queues of message sizes, the message being cut, and
/// the same call sequence as `next_chunk`/`write_data`.
struct Harness {
    s: Scheduler,
    /// Queued messages per stream: (id, bytes left).
    queues: Vec<VecDeque<(u64, usize)>>,
    /// Stream whose head message is partly sent.
    current: Option<u16>,
    views: Vec<PathView>,
    next_id: u64,
    /// Message ids in the order their first byte was scheduled.
    started: Vec<u64>,
}

impl Harness {
    fn new(kind: SchedulerKind) -> Self {
        Self {
            s: Scheduler::new(kind, Vec::new()),
            queues: (0..8).map(|_| VecDeque::new()).collect(),
            current: None,
            views: vec![view(100_000, 10)],
            next_id: 0,
            started: Vec::new(),
        }
    }

    fn push(&mut self, stream: u16, len: usize) -> u64 {
        let q = &mut self.queues[stream as usize];
        let was_idle = q.is_empty() && self.current != Some(stream);
        self.s.on_push(stream, len, was_idle);
        let id = self.next_id;
        self.next_id += 1;
        q.push_back((id, len));
        id
    }

    fn queued(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum()
    }

    /// Cuts the next chunk of at most `room` bytes on `path`: (stream, bytes).
    fn chunk(&mut self, path: u16, room: usize) -> Option<(u16, usize)> {
        let path = PathId(path);
        let stream = match self.current {
            Some(s) if self.s.allows(s, path, &self.views) => s,
            Some(_) => return None,
            None => {
                let s = self.s.peek(path, &self.views)?;
                let q = &self.queues[s as usize];
                assert!(!q.is_empty(), "peek chose stream {s} with nothing queued");
                self.s.on_message_start(s);
                self.started.push(q[0].0);
                s
            }
        };
        let q = &mut self.queues[stream as usize];
        let m = q.front_mut().expect("current stream has a message");
        let len = m.1.min(room);
        m.1 -= len;
        self.s.on_sent(stream, len);
        if m.1 == 0 {
            q.pop_front();
            self.current = None;
            let more = !q.is_empty();
            self.s.on_message_done(stream, more);
        } else {
            self.current = Some(stream);
        }
        Some((stream, len))
    }

    /// Builds one packet with `room` bytes of payload on `path`: the stream of each chunk.
    fn packet(&mut self, path: u16, room: usize) -> Vec<u16> {
        let mut left = room;
        let mut out = Vec::new();
        while left > 0 {
            let Some((s, len)) = self.chunk(path, left) else {
                break;
            };
            out.push(s);
            left -= len;
        }
        if !out.is_empty() {
            self.s.on_packet_end();
        }
        out
    }

    /// Sends the next `n` whole messages on path 0, one packet each: their streams.
    fn messages(&mut self, n: usize) -> Vec<u16> {
        (0..n)
            .map_while(|_| {
                let (s, _) = self.chunk(0, usize::MAX)?;
                self.s.on_packet_end();
                Some(s)
            })
            .collect()
    }
}

/// Sends one message per packet until nothing is left: the streams in order.
fn drain_messages(h: &mut Harness) -> Vec<u16> {
    let out = h.messages(usize::MAX);
    assert_eq!(h.queued(), 0, "stranded messages");
    out
}

#[test]
fn fcfs_sends_in_acceptance_order_across_streams() {
    let mut h = Harness::new(SchedulerKind::Fcfs);
    for s in [A, A, B, A, C, B] {
        h.push(s, 100);
    }
    // Round-robin would give A B C A B A.
    assert_eq!(drain_messages(&mut h), [A, A, B, A, C, B]);
}

#[test]
fn round_robin_takes_one_message_per_stream_in_turn() {
    let mut h = Harness::new(SchedulerKind::RoundRobin);
    for s in [A, A, A, B, B, C] {
        h.push(s, 100);
    }
    assert_eq!(drain_messages(&mut h), [A, B, C, A, B, A]);
}

#[test]
fn round_robin_per_packet_fills_each_packet_from_one_stream() {
    let mut h = Harness::new(SchedulerKind::RoundRobinPacket);
    for s in [A, B, A, B, A, B] {
        h.push(s, 100);
    }
    assert_eq!(h.packet(0, 1000), [A, A, A]);
    assert_eq!(h.packet(0, 1000), [B, B, B]);
    assert!(h.packet(0, 1000).is_empty());

    // The packet after a full one moves on even if its stream has more.
    for s in [A, A, A, B] {
        h.push(s, 400);
    }
    assert_eq!(h.packet(0, 800), [A, A]);
    assert_eq!(h.packet(0, 800), [B]);
    assert_eq!(h.packet(0, 800), [A]);

    // Messages larger than a packet: a message that runs over a boundary ends the
    // stream's turn, so B is not starved behind A's stream of big messages.
    for s in [A, A, B] {
        h.push(s, 1500);
    }
    assert_eq!(h.packet(0, 1000), [A]);
    assert_eq!(h.packet(0, 1000), [A]); // rest of A's first message, and nothing else
    assert_eq!(h.packet(0, 1000), [B]);
    assert_eq!(h.packet(0, 1000), [B]);
    assert_eq!(h.packet(0, 1000), [A]);
    assert_eq!(h.packet(0, 1000), [A]);
    assert_eq!(h.queued(), 0);
}

#[test]
fn priority_serves_the_lowest_value_first_and_equals_in_turn() {
    let mut h = Harness::new(SchedulerKind::Priority);
    h.s.set_priority(A, 2);
    h.s.set_priority(B, 1);
    h.s.set_priority(C, 1);
    h.s.set_priority(D, 0);
    for s in [A, B, C, D, A, B, C, D] {
        h.push(s, 100);
    }
    assert_eq!(h.messages(3), [D, D, B]);
    // Raising A above everyone while it waits re-sorts it.
    h.s.set_priority(A, 0);
    assert_eq!(drain_messages(&mut h), [A, A, C, B, C]);
}

#[test]
fn fair_capacity_gives_streams_equal_bytes_not_equal_messages() {
    let mut h = Harness::new(SchedulerKind::FairCapacity);
    for _ in 0..4 {
        h.push(A, 3000);
    }
    for _ in 0..12 {
        h.push(B, 1000);
    }
    // Round-robin would alternate A B A B (three times the bytes for A).
    assert_eq!(h.messages(8), [A, B, B, B, A, B, B, B]);
    // A stream that becomes non-empty starts level with the others: it does not get
    // 6000 bytes' worth of catching up (C C C C C C).
    for _ in 0..8 {
        h.push(C, 1000);
    }
    assert_eq!(h.messages(6), [A, B, C, B, C, B]);
}

#[test]
fn wfq_shares_bytes_in_proportion_to_weights() {
    let mut h = Harness::new(SchedulerKind::Wfq);
    h.s.set_weight(A, 2);
    h.s.set_weight(B, 1);
    for _ in 0..30 {
        h.push(A, 1000);
        h.push(B, 1000);
    }
    let order = h.messages(30);
    assert_eq!(order[..9], [A, B, A, B, A, A, B, A, A]);
    assert_eq!(order.iter().filter(|s| **s == A).count(), 20);
}

#[test]
fn fixed_keeps_streams_on_their_paths_and_falls_back_when_one_fails() {
    let mut h = Harness::new(SchedulerKind::Fixed);
    h.s.set_mapping(vec![0, 1, 0, 1]);
    h.views = vec![view(100_000, 10), view(100_000, 10)];
    for s in [A, B, C, D, A, B, C, D] {
        h.push(s, 100);
    }
    assert_eq!(h.packet(0, 200), [A, C]);
    assert_eq!(h.packet(1, 200), [B, D]);
    // Path 1 fails: its streams may go on path 0 rather than wait.
    h.views[1].usable = false;
    assert_eq!(h.packet(0, 1000), [A, C, B, D]);
    assert_eq!(h.queued(), 0);
}

#[test]
fn fixed_keeps_a_fragmented_message_on_its_path() {
    let mut h = Harness::new(SchedulerKind::Fixed);
    h.s.set_mapping(vec![0, 1]);
    h.views = vec![view(100_000, 10), view(100_000, 10)];
    h.push(A, 1500);
    assert_eq!(h.packet(0, 1000), [A]);
    assert!(
        h.packet(1, 1000).is_empty(),
        "A's rest must not leave on path 1"
    );
    assert_eq!(h.packet(0, 1000), [A]);
}

/// Paths of the adaptive tests: path 0 four times the rate of path 1, same delay.
fn four_to_one() -> Vec<PathView> {
    vec![view(400_000, 20), view(100_000, 20)]
}

fn paths_of(h: &Harness, streams: impl IntoIterator<Item = u16>) -> Vec<u16> {
    streams
        .into_iter()
        .map(|s| h.s.mapped_path(s, h.views.len()).0)
        .collect()
}

#[test]
fn adaptive_spreads_heavy_streams_in_proportion_to_path_rate() {
    let mut h = Harness::new(SchedulerKind::Adaptive);
    h.views = four_to_one();
    let t0 = Instant::ZERO;
    h.s.on_paths(t0, &h.views);
    for s in 0..5 {
        for _ in 0..100 {
            h.push(s, 1000);
        }
    }
    h.s.on_paths(t0 + Duration::from_secs(1), &h.views);
    let map = paths_of(&h, 0..5);
    assert_eq!(map.iter().filter(|p| **p == 0).count(), 4, "{map:?}");
    assert_eq!(map.iter().filter(|p| **p == 1).count(), 1, "{map:?}");
    // Each path then serves only its own streams.
    let p1 = h.packet(1, 3000);
    assert!(p1.iter().all(|s| map[*s as usize] == 1), "{p1:?} {map:?}");
    let p0 = h.packet(0, 8000);
    assert!(p0.iter().all(|s| map[*s as usize] == 0), "{p0:?} {map:?}");
}

#[test]
fn adaptive_puts_light_streams_on_the_low_delay_path() {
    let mut h = Harness::new(SchedulerKind::Adaptive);
    // Same rate (cwnd/srtt), path 1 ten times the delay of path 0.
    h.views = vec![view(10_000, 10), view(100_000, 100)];
    h.s.on_paths(Instant::ZERO, &h.views);
    for s in 0..4 {
        h.push(s, 100);
    }
    assert_eq!(paths_of(&h, 0..4), [0, 0, 0, 0]);
}

#[test]
fn adaptive_rebalances_with_hysteresis_and_only_at_message_boundaries() {
    let mut h = Harness::new(SchedulerKind::Adaptive);
    h.views = vec![view(100_000, 20), view(100_000, 20)];
    let mut now = Instant::ZERO;
    h.s.on_paths(now, &h.views);
    for s in 0..4 {
        for _ in 0..50 {
            h.push(s, 1000);
        }
    }
    now += Duration::from_secs(1);
    h.s.on_paths(now, &h.views);
    let before = paths_of(&h, 0..4);
    assert_eq!(before.iter().filter(|p| **p == 0).count(), 2, "{before:?}");

    // A 10 % change is inside the hysteresis: nothing moves.
    h.views[0].cwnd = 110_000;
    now += Duration::from_secs(1);
    h.s.on_paths(now, &h.views);
    assert_eq!(paths_of(&h, 0..4), before);

    // Path 1 collapses, but within four RTTs of the last evaluation nothing happens yet.
    let victim = before.iter().position(|p| *p == 1).unwrap() as u16;
    h.views[1].cwnd = 5_000;
    h.views[1].srtt = Some(Duration::from_millis(200));
    now += Duration::from_millis(30);
    h.s.on_paths(now, &h.views);
    assert_eq!(paths_of(&h, 0..4), before);

    // Start one of path 1's messages and leave it half sent: that stream moves only when
    // the message is done, the others at once.
    h.push(victim, 1000); // keep it non-empty
    while h.current != Some(victim) {
        h.chunk(1, 500).expect("path 1 has data");
    }
    now += Duration::from_secs(1);
    h.s.on_paths(now, &h.views);
    let after = paths_of(&h, 0..4);
    assert_eq!(after[victim as usize], 1, "moved mid-message: {after:?}");
    assert!(
        after
            .iter()
            .enumerate()
            .all(|(s, p)| *p == 0 || s == victim as usize)
    );
    assert!(h.s.allows(victim, PathId(1), &h.views));
    h.chunk(1, 500).expect("the message finishes on its path");
    assert_eq!(h.current, None);
    assert_eq!(paths_of(&h, [victim]), [0]);
}

#[test]
fn adaptive_falls_back_while_a_path_is_down() {
    let mut h = Harness::new(SchedulerKind::Adaptive);
    h.views = four_to_one();
    h.s.on_paths(Instant::ZERO, &h.views);
    h.push(A, 100);
    assert_eq!(paths_of(&h, [A]), [0]);
    h.views[0].usable = false;
    // Before any re-evaluation, `allows` already lets A go elsewhere.
    assert_eq!(h.packet(1, 1000), [A]);
    h.push(A, 100);
    h.s.on_paths(Instant::ZERO + Duration::from_millis(1), &h.views);
    assert_eq!(paths_of(&h, [A]), [1]);
}

#[test]
fn switching_kinds_at_run_time_keeps_every_queued_message() {
    let mut h = Harness::new(SchedulerKind::RoundRobin);
    for s in [A, B, C, A, B, C, A, B, C] {
        h.push(s, 1500);
    }
    // Leave A's first message half sent, then switch under it.
    assert_eq!(h.packet(0, 1000), [A]);
    h.s.set_priority(C, 0);
    h.s.set_priority(A, 5);
    h.s.set_priority(B, 5);
    h.s.set_kind(SchedulerKind::Priority);
    assert_eq!(h.packet(0, 500), [A]); // the fragmented message finishes first
    assert_eq!(h.messages(3), [C, C, C]);
    h.s.set_kind(SchedulerKind::Fcfs);
    for s in [C, A] {
        h.push(s, 100);
    }
    // Earlier messages one per stream in turn (B first: it waited longer under Priority),
    // then the new ones in acceptance order.
    assert_eq!(h.messages(6), [B, A, B, A, B, C]);
    h.s.set_kind(SchedulerKind::RoundRobinPacket);
    h.s.set_kind(SchedulerKind::Adaptive);
    h.s.set_kind(SchedulerKind::Wfq);
    assert_eq!(drain_messages(&mut h), [A]);
}

/// One step of the property test.
#[derive(Debug, Clone)]
enum Op {
    Push(u16, usize),
    Chunk(u16, usize),
    PacketEnd,
    Switch(SchedulerKind),
    Priority(u16, u16),
    Weight(u16, u16),
    Mapping(Vec<u16>),
    PathUsable(u16, bool),
    PathMeasured(u16, usize, u64),
    Tick(u64),
}

fn kind() -> impl Strategy<Value = SchedulerKind> {
    prop_oneof![
        Just(SchedulerKind::Fcfs),
        Just(SchedulerKind::RoundRobin),
        Just(SchedulerKind::RoundRobinPacket),
        Just(SchedulerKind::Priority),
        Just(SchedulerKind::FairCapacity),
        Just(SchedulerKind::Wfq),
        Just(SchedulerKind::Fixed),
        Just(SchedulerKind::Adaptive),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let stream = 0u16..6;
    let path = 0u16..3;
    prop_oneof![
        6 => (stream.clone(), 1usize..3000).prop_map(|(s, l)| Op::Push(s, l)),
        6 => (path.clone(), 100usize..2000).prop_map(|(p, r)| Op::Chunk(p, r)),
        2 => Just(Op::PacketEnd),
        2 => kind().prop_map(Op::Switch),
        1 => (stream.clone(), 0u16..4).prop_map(|(s, p)| Op::Priority(s, p)),
        1 => (stream, 0u16..4).prop_map(|(s, w)| Op::Weight(s, w)),
        1 => proptest::collection::vec(0u16..4, 0..6).prop_map(Op::Mapping),
        1 => (path.clone(), any::<bool>()).prop_map(|(p, u)| Op::PathUsable(p, u)),
        1 => (path, 1000usize..200_000, 1u64..300).prop_map(|(p, c, r)| Op::PathMeasured(p, c, r)),
        1 => (1u64..2000).prop_map(Op::Tick),
    ]
}

proptest! {
    /// Whatever the operations and switches, every pushed message is scheduled exactly
    /// once, and once all paths are up everything drains (nothing stranded).
    #[test]
    fn every_message_is_scheduled_exactly_once(
        start in kind(),
        ops in proptest::collection::vec(op(), 0..200),
    ) {
        let mut h = Harness::new(start);
        h.views = vec![view(50_000, 20), view(50_000, 20), view(50_000, 20)];
        let mut now = Instant::ZERO;
        let mut pushed = Vec::new();
        for op in ops {
            match op {
                Op::Push(s, l) => pushed.push(h.push(s, l)),
                Op::Chunk(p, r) => {
                    h.chunk(p, r);
                }
                Op::PacketEnd => h.s.on_packet_end(),
                Op::Switch(k) => h.s.set_kind(k),
                Op::Priority(s, p) => h.s.set_priority(s, p),
                Op::Weight(s, w) => h.s.set_weight(s, w),
                Op::Mapping(m) => h.s.set_mapping(m),
                Op::PathUsable(p, u) => h.views[p as usize].usable = u,
                Op::PathMeasured(p, c, r) => {
                    let v = &mut h.views[p as usize];
                    v.cwnd = c;
                    v.srtt = Some(Duration::from_millis(r));
                }
                Op::Tick(ms) => {
                    now += Duration::from_millis(ms);
                    h.s.on_paths(now, &h.views);
                }
            }
        }
        for v in &mut h.views {
            v.usable = true;
        }
        h.s.on_paths(now + Duration::from_secs(60), &h.views);
        // The send queue always ends the packet it was building.
        h.s.on_packet_end();
        let mut idle_rounds = 0;
        while h.queued() > 0 {
            let before = h.queued();
            for p in 0..3 {
                h.packet(p, 1200);
            }
            idle_rounds = if h.queued() == before && h.current.is_none() {
                idle_rounds + 1
            } else {
                0
            };
            prop_assert!(idle_rounds < 3, "stranded: {} messages left", h.queued());
        }
        let mut started = h.started.clone();
        started.sort_unstable();
        prop_assert_eq!(started, pushed);
    }
}
