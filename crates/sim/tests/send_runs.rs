//! What holds new data back below a window it would fill — the pacer, or a CMT send run
//! waiting for room — must not stop that window from growing (Linux's `tcp_is_cwnd_limited`),
//! and CMT send runs keep SACKs short: every switch between paths in TSN order is a gap
//! block at the receiver while the slower path's chunks travel.

#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::BTreeMap;

use braid_sim::run::{self, RunOptions};
use braid_sim::scenario::Scenario;

fn run(toml: &str) -> BTreeMap<String, f64> {
    let s: Scenario = toml::from_str(toml).unwrap();
    run::run(&s, &RunOptions::default()).unwrap().metrics
}

/// What 1452-byte chunks carry of a link's rate in 1500-byte packets.
const EFFICIENCY: f64 = 1452.0 / 1500.0;

#[test]
fn a_paced_path_still_grows_its_window_to_the_bandwidth_delay_product() {
    // 100 Mbit/s, 200 ms RTT, a queue of one BDP: before, a paced sender whose pacer kept
    // its flight just under cwnd never counted the window as used and stayed at 81 %.
    let m = run(r#"
        name = "paced long path"
        duration = "20s"
        warmup = "5s"
        [[path]]
        name = "A"
        rate = "100Mbit/s"
        delay = "100ms"
        queue = 1666
        [association]
        cc = "cubic"
        pacing = true
        [[traffic]]
        kind = "saturated"
        streams = 1
        message_size = 1452
        "#);
    let share = m["goodput_mbps"] / (100.0 * EFFICIENCY);
    println!(
        "paced, 100 Mbit/s x 200 ms: {:.1} Mbit/s ({:.0} %), cwnd-limited {:.2}",
        m["goodput_mbps"],
        share * 100.0,
        m["path_A_limited_cwnd"]
    );
    assert!(share > 0.9, "{share}");
}

/// Two 100 Mbit/s paths at 10 and 20 ms RTT under CMT with `send_run`.
fn two_paths(send_run: u16) -> BTreeMap<String, f64> {
    run(&format!(
        r#"
        name = "send runs"
        duration = "10s"
        warmup = "2s"
        [[path]]
        name = "A"
        rate = "100Mbit/s"
        delay = "5ms"
        queue = 83
        [[path]]
        name = "B"
        rate = "100Mbit/s"
        delay = "10ms"
        queue = 166
        [association]
        cmt = true
        send_run = {send_run}
        [[traffic]]
        kind = "saturated"
        streams = 1
        message_size = 1452
        "#
    ))
}

#[test]
fn send_runs_halve_what_the_sacks_take_of_the_reverse_link() {
    let (one, runs) = (two_paths(1), two_paths(32));
    // SACKs go to the quickest path: A's reverse link carries them.
    let rev = |m: &BTreeMap<String, f64>| m["path_A_reverse_utilization"];
    println!(
        "CMT 10/20 ms: packet by packet {:.1} Mbit/s, reverse {:.3}; runs {:.1} Mbit/s, reverse {:.3}",
        one["goodput_mbps"],
        rev(&one),
        runs["goodput_mbps"],
        rev(&runs)
    );
    assert!(
        rev(&one) > 0.25,
        "the case: SACKs full of blocks, {}",
        rev(&one)
    );
    assert!(
        rev(&runs) < 0.6 * rev(&one),
        "{} vs {}",
        rev(&runs),
        rev(&one)
    );
    assert!(runs["goodput_mbps"] >= 0.98 * one["goodput_mbps"]);
    assert_eq!(runs["recv_window_drops"], 0.0);
}
