//! Stream schedulers seen through a real association: the sender's discipline decides the
//! order in which messages of different streams reach the peer (RFC 8260 §3).

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use braid_proto::{Association, AssociationConfig, SchedulerKind, SendOptions};
use bytes::Bytes;
use common::Pair;

/// Connects a pair whose client uses `kind`, lets `setup` configure the client's
/// association, queues one 200-byte message per entry of `streams` (on that stream, all
/// at the same instant, so the scheduler sees them all at once), lets `queued` act on the
/// association with everything queued, and returns the streams of the messages in the
/// order the server received them.
fn arrival_order(
    kind: SchedulerKind,
    setup: impl FnOnce(&mut Association),
    streams: &[u16],
    queued: impl FnOnce(&mut Association),
) -> Vec<u16> {
    let cfg = AssociationConfig {
        stream_scheduler: kind,
        ..Default::default()
    };
    let mut p = Pair::new(cfg, 42);
    let (c, s) = p.connect();
    let a = p.client.association_mut(c).unwrap();
    setup(a);
    for (i, st) in streams.iter().enumerate() {
        a.send(
            p.now,
            *st,
            Bytes::from(vec![i as u8; 200]),
            SendOptions::default(),
        )
        .unwrap();
    }
    queued(a);
    let mut got = Vec::new();
    let deadline = p.now + Duration::from_secs(30);
    let done = p.run_until(deadline, |p| {
        let server = p.server.association_mut(s).unwrap();
        while let Some(m) = server.recv() {
            got.push(m.stream_id);
        }
        got.len() == streams.len()
    });
    assert!(
        done,
        "only {} of {} messages arrived",
        got.len(),
        streams.len()
    );
    got
}

/// Four messages on each of streams 0, 1, 2, sent interleaved.
const INTERLEAVED: [u16; 12] = [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2];
/// A burst on stream 0, then one on stream 1, then stream 0 again.
const BURSTS: [u16; 9] = [0, 0, 0, 1, 1, 1, 0, 0, 0];

fn nothing(_: &mut Association) {}

#[test]
fn priority_sends_the_most_urgent_stream_first() {
    let order = arrival_order(
        SchedulerKind::Priority,
        |a| {
            a.set_stream_priority(0, 3);
            a.set_stream_priority(1, 2);
            a.set_stream_priority(2, 1);
        },
        &INTERLEAVED,
        nothing,
    );
    assert_eq!(order, [2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0]);
}

#[test]
fn fcfs_keeps_acceptance_order_where_round_robin_interleaves() {
    let fcfs = arrival_order(SchedulerKind::Fcfs, nothing, &BURSTS, nothing);
    assert_eq!(fcfs, BURSTS);
    let rr = arrival_order(SchedulerKind::RoundRobin, nothing, &BURSTS, nothing);
    assert_eq!(rr, [0, 1, 0, 1, 0, 1, 0, 0, 0]);
}

#[test]
fn switching_to_priority_at_run_time_reorders_what_is_still_queued() {
    let order = arrival_order(
        SchedulerKind::RoundRobin,
        |a| {
            a.set_stream_priority(1, 0);
            a.set_stream_priority(0, 1);
            a.set_stream_priority(2, 1);
        },
        &INTERLEAVED,
        |a| {
            a.set_stream_scheduler(SchedulerKind::Priority);
            assert_eq!(a.stream_scheduler(), SchedulerKind::Priority);
        },
    );
    // Stream 1 first; 0 and 2 share priority 1 and alternate.
    assert_eq!(order, [1, 1, 1, 1, 0, 2, 0, 2, 0, 2, 0, 2]);
}
