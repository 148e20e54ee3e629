//! End-to-end transfers over the in-memory pair: every message arrives exactly once,
//! intact, and in order on ordered streams, whatever the wire does.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use braid_proto::AssociationConfig;
use common::traffic::{Plan, transfer};
use common::{Pair, Wire};

const MB: usize = 1_000_000;

fn hostile_pair(seed: u64) -> Pair {
    let mut p = Pair::new(AssociationConfig::default(), seed);
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
