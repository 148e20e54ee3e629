//! The simulator's speed: one saturated association over one 20 Mbit/s, 10 ms path for 300
//! simulated seconds (`braid_sim::run::bench`), the whole run per iteration. Criterion
//! reports the wall time per run and, as throughput, engine events per second; the speed-up
//! over real time is 300 s divided by the wall time.
//!
//! Run with `cargo bench -p braid-sim --bench sim`.

#![allow(missing_docs, clippy::unwrap_used)]

use std::time::Duration;

use braid_sim::run::{RunOptions, bench_scenario, run};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn bench_sim(c: &mut Criterion) {
    let scenario = bench_scenario().unwrap();
    let opts = RunOptions {
        seed: 1,
        ..RunOptions::default()
    };
    // One run first, to know the event count for the throughput figure.
    let probe = run(&scenario, &opts).unwrap();
    let mut g = c.benchmark_group("sim");
    g.throughput(Throughput::Elements(probe.events));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    g.bench_function("saturated_20Mbit_10ms_300s", |b| {
        b.iter(|| run(&scenario, &opts).unwrap());
    });
    g.finish();
}

criterion_group!(benches, bench_sim);
criterion_main!(benches);
