//! Path schedulers seen through a simulated association: where new data goes when one path
//! is quicker than the other, with the application limiting the rate and with it not.

#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::BTreeMap;

use braid_sim::run::{self, RunOptions};
use braid_sim::scenario::Scenario;

/// Two 20 Mbit/s paths, A (the primary, first in turn) at 80 ms RTT and B at 10 ms, under
/// CMT with `assignment`; the application sends `traffic`.
fn two_paths(assignment: &str, traffic: &str) -> BTreeMap<String, f64> {
    let toml = format!(
        r#"
        name = "path schedulers"
        duration = "12s"
        warmup = "2s"
        [[path]]
        name = "A"
        rate = "20Mbit/s"
        delay = "40ms"
        [[path]]
        name = "B"
        rate = "20Mbit/s"
        delay = "5ms"
        [association]
        cmt = true
        path_assignment = "{assignment}"
        [[traffic]]
        {traffic}
        "#
    );
    let s: Scenario = toml::from_str(&toml).unwrap();
    let m = run::run(&s, &RunOptions::default()).unwrap().metrics;
    println!(
        "{assignment:>12} {:<9}: A {:.2} Mbit/s, B {:.2} Mbit/s, total {:.2}",
        traffic.lines().next().unwrap(),
        m["path_A_goodput_mbps"],
        m["path_B_goodput_mbps"],
        m["goodput_mbps"]
    );
    m
}

const LIGHT: &str = r#"kind = "onoff"
        rate = "4Mbit/s"
        on = "60s"
        off = "1ms""#;

const SATURATED: &str = r#"kind = "saturated""#;

/// minRTT sends what the application offers on the quicker path while it has room (Linux
/// MPTCP's default scheduler): a light load stays off the 80 ms path, where LS-SCTP's
/// cwnd/RTT assignment gives that path its share.
#[test]
fn min_rtt_keeps_a_light_load_on_the_quicker_path() {
    let m = two_paths("min-rtt", LIGHT);
    let (a, b) = (m["path_A_goodput_mbps"], m["path_B_goodput_mbps"]);
    assert!(
        a + b > 3.8,
        "the offered 4 Mbit/s did not get through: {a} + {b}"
    );
    assert!(
        a < 0.05 * (a + b),
        "the 80 ms path carried {a} of {}",
        a + b
    );
    let ls = two_paths("cwnd-rtt", LIGHT);
    let (a, b) = (ls["path_A_goodput_mbps"], ls["path_B_goodput_mbps"]);
    assert!(a > 0.05 * (a + b), "cwnd/RTT: A {a}, B {b}");
}

/// Saturated, minRTT fills the quicker path's window and then the slower one's: both
/// paths carry data and together more than the best single path could.
#[test]
fn min_rtt_uses_both_paths_when_the_quicker_one_is_full() {
    let m = two_paths("min-rtt", SATURATED);
    let (a, b) = (m["path_A_goodput_mbps"], m["path_B_goodput_mbps"]);
    assert!(a > 15.0 && b > 5.0, "A {a}, B {b}");
    assert!(
        m["goodput_mbps"] > 20.0 * 1452.0 / 1500.0,
        "{}",
        m["goodput_mbps"]
    );
}
