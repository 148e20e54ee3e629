//! End-to-end transfers over the in-memory pair: every message arrives exactly once,
//! intact, and in order on ordered streams, whatever the wire does.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use braid_proto::{AssociationConfig, LossDetection};
use common::traffic::{Plan, transfer};
use common::{Pair, Wire};

const MB: usize = 1_000_000;

fn hostile_pair(seed: u64) -> Pair {
    // Three miss indications and T3, so both repair paths run (tests/rack.rs soaks RACK).
    let cfg = AssociationConfig {
        loss_detection: LossDetection::DupThresh,
        ..AssociationConfig::default()
    };
    let mut p = Pair::new(cfg, seed);
    p.to_server = Wire::hostile(0.05, 0.02, 0.05);
    p.to_client = Wire::hostile(0.05, 0.02, 0.05);
    p
}

#[test]
fn a_clean_wire_carries_a_transfer() {
    let mut p = Pair::new(AssociationConfig::default(), 1);
    let (c, s) = p.connect();
    let plan = Plan {
        streams: 2,
        total_bytes: 2 * MB,
        size: Box::new(|_| 1452),
        unordered: false,
    };
    let o = transfer(&mut p, c, s, &plan, Duration::from_secs(600));
    assert_eq!(o.bytes as usize, 2 * MB);
}

/// 50 MB on 8 streams over a wire with 5 % loss, 2 % duplication and 5 % reordering each
/// way; `transfer` checks every message is delivered exactly once, intact, in order.
fn fifty_megabytes_over_a_hostile_wire(seed: u64, unordered: bool) {
    let mut p = hostile_pair(seed);
    let (c, s) = p.connect();
    let plan = Plan {
        streams: 8,
        total_bytes: 50 * MB,
        size: Box::new(|n| 500 + (n as usize * 7919) % 3000),
        unordered,
    };
    let o = transfer(&mut p, c, s, &plan, Duration::from_secs(20_000));
    assert_eq!(o.bytes as usize, 50 * MB);
    let path = &p.client.association(c).unwrap().paths()[0];
    eprintln!("{o:?} {:?}", path.stats);
    // The wire really was hostile: losses were repaired by both mechanisms.
    assert!(path.stats.fast_retransmissions > 100 && path.stats.timeouts > 0);
}

#[test]
fn fifty_megabytes_on_eight_ordered_streams_survive_loss_duplication_and_reordering() {
    fifty_megabytes_over_a_hostile_wire(7, false);
}

#[test]
fn fifty_megabytes_of_unordered_messages_survive_loss_duplication_and_reordering() {
    fifty_megabytes_over_a_hostile_wire(8, true);
}

#[test]
fn messages_from_one_byte_to_256_kib_are_fragmented_and_reassembled() {
    let mut p = hostile_pair(9);
    let (c, s) = p.connect();
    let sizes = [
        10usize,
        11,
        1000,
        1452,
        1453,
        4000,
        65_536,
        100_000,
        256 * 1024,
    ];
    let plan = Plan {
        streams: 3,
        total_bytes: 5 * MB,
        size: Box::new(move |n| sizes[n as usize % sizes.len()]),
        unordered: false,
    };
    transfer(&mut p, c, s, &plan, Duration::from_secs(5000));
}

/// The decision trace (`braid_proto::trace`) agrees with the counters: one `fast_retransmit`
/// per fast retransmission, one `t3_expired` per timeout, one `sack_sent` per SACK, and the
/// window moves for the reasons the RFC gives.
#[test]
fn the_decision_trace_matches_the_counters() {
    use braid_proto::{TraceEvent, WindowCause};
    // A seed whose losses include a timeout: each kind of event must occur to be checked
    // (most seeds recover every loss by fast retransmission since a lost retransmission is
    // found by its path's later chunks).
    let mut p = hostile_pair(12);
    p.client.set_tracing(true);
    p.server.set_tracing(true);
    let (c, s) = p.connect();
    let plan = Plan {
        streams: 4,
        total_bytes: 5 * MB,
        size: Box::new(|n| 700 + (n as usize * 131) % 2000),
        unordered: false,
    };
    let o = transfer(&mut p, c, s, &plan, Duration::from_secs(20_000));
    assert_eq!(o.bytes as usize, 5 * MB);
    let (mut fr, mut t3, mut starts, mut acks, mut losses, mut timeouts) = (0, 0, 0, 0, 0, 0);
    let mut last_us = 0;
    p.client.drain_traces(|id, at, ev| {
        assert_eq!(id, c);
        let us = at.since_epoch().as_micros();
        assert!(us >= last_us, "trace out of order");
        last_us = us;
        match ev {
            TraceEvent::FastRetransmit { .. } => fr += 1,
            TraceEvent::T3Expired { .. } => t3 += 1,
            TraceEvent::StreamScheduled { .. } => starts += 1,
            TraceEvent::Window { cause, .. } => match cause {
                WindowCause::Ack => acks += 1,
                WindowCause::FastRetransmit => losses += 1,
                WindowCause::Timeout => timeouts += 1,
                WindowCause::Idle | WindowCause::Spurious => {}
            },
            _ => {}
        }
    });
    let a = p.client.association(c).unwrap();
    let stats = a.paths()[0].stats;
    assert_eq!(a.trace_dropped(), 0);
    assert_eq!(fr, stats.fast_retransmissions);
    assert_eq!(t3, stats.timeouts);
    assert_eq!(starts, a.stats().messages_sent);
    assert!(acks > 100 && losses > 0, "{acks} {losses}");
    // Every T3 cut the window once it had grown; seed 12 was chosen for having one (another
    // seed under BRAID_SEED may recover every loss by fast retransmission).
    assert_eq!(timeouts > 0, t3 > 0, "{timeouts} window cuts for {t3} T3s");
    if std::env::var("BRAID_SEED").is_err() {
        assert!(
            t3 > 0,
            "seed 12 no longer has a timeout: the T3 events go unchecked"
        );
    }
    let mut sacks = 0u64;
    p.server
        .drain_traces(|_, _, ev| sacks += u64::from(matches!(ev, TraceEvent::SackSent { .. })));
    assert_eq!(sacks, p.server.association(s).unwrap().stats().sacks_sent);
}
