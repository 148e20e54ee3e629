//! Heap allocations per SACK: the bulk transfer of `examples/bulk.rs` with a counting global
//! allocator, over one path and over two (CMT, 1 ms one-way delay and 0.3 ms more on the
//! second path, so the receiver sees the paths' TSNs interleave and SACKs carry gap blocks). Prints, per case, the allocations per SACK the receiver built
//! (`poll_transmit` calls that returned one count as SACKs; calls that returned nothing
//! are included in the allocations) and per SACK the sender processed (`handle_datagram`).
//!
//! `cargo bench -p braid-proto --bench sack_allocations`. A count, not a time: it is the same
//! on any machine, and a target is a line in this output, not an assertion.

#![allow(missing_docs)]

use std::alloc::System;
use std::time::Duration;

use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[path = "../examples/bulk.rs"]
mod bulk;

/// The system allocator, counting (the workspace forbids `unsafe`: `stats_alloc` holds it).
#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Allocations so far (reallocations count: each may move the block).
fn allocations() -> u64 {
    let s = GLOBAL.stats();
    (s.allocations + s.reallocations) as u64
}

fn main() {
    // `cargo test --benches` runs benchmarks with `--bench`-less arguments: stay short then.
    let total: u64 = if std::env::args().any(|a| a == "--bench") {
        64_000_000
    } else {
        4_000_000
    };
    let msg = bulk::message(1452);
    println!(
        "case            SACKs built  gap blocks/SACK  allocs/SACK built  SACKs processed  allocs/SACK processed"
    );
    for (name, paths) in [("one path", 1usize), ("CMT, two paths", 2)] {
        let mut b = bulk::Bulk::connected(bulk::config(1500, paths), paths);
        b.delay = Duration::from_millis(1);
        if paths > 1 {
            b.skew = Duration::from_micros(300);
        }
        b.allocations = Some(allocations);
        let got = b.transfer(total, &msg);
        assert!(got >= total);
        let a = b.acks;
        let per = |n: u64, of: u64| n as f64 / of.max(1) as f64;
        println!(
            "{name:<15} {:>11} {:>16.1} {:>18.2} {:>16} {:>22.2}",
            a.built,
            per(a.gap_blocks, a.built),
            per(a.build, a.built),
            a.processed,
            per(a.process, a.processed),
        );
        println!(
            "  with gap blocks {:>9} {:>16.1} {:>18.2} {:>16} {:>22.2}",
            a.built_with_gaps,
            per(a.gap_blocks, a.built_with_gaps),
            per(a.build_with_gaps, a.built_with_gaps),
            a.processed_with_gaps,
            per(a.process_with_gaps, a.processed_with_gaps),
        );
    }
}
