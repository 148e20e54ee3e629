//! Loss-free in-memory bulk transfer: both endpoints in this thread, packets handed over
//! with zero delay, a saturated sender on one stream and a receiver reading every round.
//! Throughput is payload bytes per second of wall time on one core (criterion prints it in
//! GiB/s: multiply by 8.59 for Gbit/s).
//!
//! Run with `cargo bench -p braid-proto --bench bulk`. The loop itself lives in
//! `examples/bulk.rs`, which runs it once and prints Gbit/s (for profiling).

#![allow(missing_docs)]

use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};

#[path = "../examples/bulk.rs"]
mod bulk;

/// Payload bytes per iteration.
const TOTAL: u64 = 64_000_000;

fn bench_bulk(c: &mut Criterion) {
    let mut g = c.benchmark_group("bulk");
    g.throughput(Throughput::Bytes(TOTAL));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(30));
    let msg = bulk::message(1452);
    // 1500: 1444 bytes of user data per chunk, so each 1452-byte message takes two chunks.
    // 1508: each message fits one DATA chunk. Two paths: CMT, packets in the order sent.
    for (mtu, paths) in [(1500usize, 1usize), (1508, 1), (1500, 2)] {
        let name = match paths {
            1 => format!("64MB_1452B_mtu{mtu}"),
            n => format!("64MB_1452B_mtu{mtu}_cmt{n}"),
        };
        g.bench_function(name, |b| {
            b.iter_batched(
                || bulk::Bulk::connected(bulk::config(mtu, paths), paths),
                |mut pair| {
                    let got = pair.transfer(TOTAL, &msg);
                    assert!(got >= TOTAL);
                    pair
                },
                BatchSize::PerIteration,
            );
        });
    }
    g.finish();
}

criterion_group!(benches, bench_bulk);
criterion_main!(benches);
