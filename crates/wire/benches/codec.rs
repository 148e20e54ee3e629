//! Codec benchmarks: CRC32c throughput and packet parse / serialize cost.
//!
//! Run with `cargo bench -p braid-wire --bench codec`. Throughput figures are in bytes of
//! input (criterion prints them as GiB/s; multiply by 1.0737 for GB/s).

#![allow(missing_docs)]

use std::hint::black_box;
use std::time::Duration;

use braid_wire::{Packet, crc32c::crc32c, sample};
use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn wire(pkt: &Packet) -> Bytes {
    Bytes::from(pkt.to_vec().expect("sample packet encodes"))
}

fn bench_crc32c(c: &mut Criterion) {
    let mut g = c.benchmark_group("crc32c");
    for len in [1452usize, 9000] {
        let buf: Vec<u8> = (0..len).map(|i| (i * 31 + 7) as u8).collect();
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_function(len.to_string(), |b| b.iter(|| crc32c(black_box(&buf))));
    }
    g.finish();
}

fn bench_data_packet(c: &mut Criterion) {
    let pkt = sample::full_data_packet();
    let bytes = wire(&pkt);
    assert_eq!(bytes.len(), 1480);
    assert_eq!(Packet::decode(&bytes).expect("sample decodes"), pkt);

    let mut g = c.benchmark_group("data_packet");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("parse", |b| {
        b.iter(|| Packet::decode(black_box(&bytes.clone())).expect("decodes"))
    });
    let mut out = Vec::with_capacity(2048);
    g.bench_function("serialize", |b| {
        b.iter(|| {
            out.clear();
            black_box(&pkt).encode(&mut out).expect("encodes");
            black_box(out.as_slice());
        })
    });
    g.finish();
}

fn bench_sack(c: &mut Criterion) {
    let pkt = sample::sack_with_gaps(100);
    let bytes = wire(&pkt);
    assert_eq!(Packet::decode(&bytes).expect("sample decodes"), pkt);

    let mut g = c.benchmark_group("sack_100_gaps");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function("parse", |b| {
        b.iter(|| Packet::decode(black_box(&bytes.clone())).expect("decodes"))
    });
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_crc32c, bench_data_packet, bench_sack
}
criterion_main!(benches);
