//! I-DATA (RFC 8260) in the simulator: with an interleaving scheduler, small messages of
//! one stream no longer wait behind the 1 MiB messages of another
//! (scenarios/idata-interleaving.toml, measured in docs/idata.md).

#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::BTreeMap;

use braid_sim::run::{self, RunOptions};
use braid_sim::scenario::Scenario;

const SCENARIO: &str = include_str!("../../../scenarios/idata-interleaving.toml");

/// The scenario file with `idata` and the scheduler set, shortened, without its sweep.
fn run(idata: bool, scheduler: &str) -> BTreeMap<String, f64> {
    let text = SCENARIO
        .split("[sweep]")
        .next()
        .unwrap()
        .replace("duration = \"40s\"", "duration = \"15s\"")
        .replace("idata = false", &format!("idata = {idata}"))
        .replace(
            "stream_scheduler = \"fc\"",
            &format!("stream_scheduler = \"{scheduler}\""),
        );
    let s: Scenario = toml::from_str(&text).unwrap();
    let opts = RunOptions {
        seed: 1,
        ..RunOptions::default()
    };
    run::run(&s, &opts).unwrap().metrics
}

#[test]
fn with_i_data_small_messages_no_longer_wait_behind_a_1_mib_message() {
    for scheduler in ["fc", "rr-packet", "wfq"] {
        let data = run(false, scheduler);
        let idata = run(true, scheduler);
        let get = |m: &BTreeMap<String, f64>, k: &str| m.get(k).copied().unwrap_or(f64::NAN);
        let key = |q: &str| format!("stream1_msg_delay_ms_{q}");
        eprintln!(
            "{scheduler}: small messages DATA median {:.0} p99 {:.0} ms, I-DATA median {:.0} \
             p99 {:.0} ms; bulk goodput {:.2} / {:.2} Mbit/s",
            get(&data, &key("median")),
            get(&data, &key("p99")),
            get(&idata, &key("median")),
            get(&idata, &key("p99")),
            get(&data, "stream0_goodput_mbps"),
            get(&idata, "stream0_goodput_mbps"),
        );
        for m in [&data, &idata] {
            assert_eq!(get(m, "app_messages_missing"), 0.0, "{scheduler}");
            assert_eq!(get(m, "app_messages_duplicated"), 0.0, "{scheduler}");
            assert!(
                get(m, "stream0_goodput_mbps") > 1.0,
                "{scheduler}: bulk runs"
            );
        }
        // With DATA a small message waits for the rest of the 1 MiB message in front of it
        // (about 0.85 s at 10 Mbit/s); with I-DATA even the slowest 1 % beat DATA's median.
        assert!(
            get(&idata, &key("p99")) < get(&data, &key("median")),
            "{scheduler}: I-DATA does not help"
        );
    }
}
