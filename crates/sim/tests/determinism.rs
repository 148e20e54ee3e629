//! Same scenario and seed, same run: every metric bit for bit, the event count, and the
//! pcap and time-series files byte for byte. Another seed gives another run.

#![allow(missing_docs, clippy::unwrap_used)]

use std::path::PathBuf;

use braid_sim::run::{RunOptions, RunResult, TIMESERIES_HEADER, run};
use braid_sim::scenario::Scenario;

/// Every random model at once, on two paths and a dumbbell with a competing flow.
const BUSY: &str = r#"
name = "busy"
duration = "12s"
warmup = "2s"
timeseries = "100ms"
pcap = { path = "a" }

[[path]]
name = "a"
rate = "10Mbit/s"
delay = "10ms"
queue = 40
loss = 0.005
reverse_loss = 0.01
hiccup = { rate = 0.01, displacement = 3 }
spikes = { interval = ["3s", "4s"], length = ["0.5s", "1.5s"] }
rate_changes = [{ at = "6s", rate = "5Mbit/s" }]
background = { kind = "square", rate = "2Mbit/s", period = "1s", packet_size = 1000 }

[[path]]
name = "b"
rate = "5Mbit/s"
delay = "30ms"
gilbert = { p_good_bad = 0.01, p_bad_good = 0.3 }
failures = [{ from = "4s", to = "5s" }]

[bottleneck]
rate = "12Mbit/s"
delay = "2ms"
queue = 60
competing_flows = 1

[association]
send_buffer = "256KiB"
recv_buffer = "256KiB"
rto_min = "200ms"

# Sources are served in the order listed: the on/off source (stream 0) first, then the
# saturated one (streams 1 to 3) fills what is left of the send buffer.
[[traffic]]
kind = "onoff"
rate = "1Mbit/s"
on = "500ms"
off = "500ms"
message_size = 200

[[traffic]]
kind = "saturated"
streams = 3
message_size = 1000
"#;

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("braid-sim-det-{}-{name}", std::process::id()))
}

fn run_with_outputs(s: &Scenario, seed: u64, tag: &str) -> (RunResult, Vec<u8>, String) {
    let (pcap, series) = (tmp(&format!("{tag}.pcap")), tmp(&format!("{tag}.csv")));
    let r = run(
        s,
        &RunOptions {
            seed,
            pcap: Some(pcap.clone()),
            timeseries: Some(series.clone()),
            fault: None,
            trace: None,
            qlog: None,
            sequence: None,
        },
    )
    .unwrap();
    let p = std::fs::read(&pcap).unwrap();
    let t = std::fs::read_to_string(&series).unwrap();
    let _ = std::fs::remove_file(pcap);
    let _ = std::fs::remove_file(series);
    (r, p, t)
}

/// Metrics as bit patterns, so that NaN equals NaN.
fn bits(r: &RunResult) -> Vec<(String, u64)> {
    r.metrics
        .iter()
        .map(|(k, v)| (k.clone(), v.to_bits()))
        .collect()
}

#[test]
fn same_seed_same_run_other_seed_other_run() {
    let s: Scenario = toml::from_str(BUSY).unwrap();
    let (a, pa, ta) = run_with_outputs(&s, 42, "a");
    let (b, pb, tb) = run_with_outputs(&s, 42, "b");
    assert_eq!(bits(&a), bits(&b));
    assert_eq!(a.events, b.events);
    assert_eq!(pa, pb, "pcap differs");
    assert_eq!(ta, tb, "time series differs");

    let (c, pc, _) = run_with_outputs(&s, 43, "c");
    assert_ne!(bits(&a), bits(&c));
    assert_ne!(pa, pc);

    // The run exercised what it claims to.
    let m = &a.metrics;
    for key in [
        "goodput_mbps",
        "stream0_goodput_mbps",
        "stream2_goodput_mbps",
        "stream3_goodput_mbps",
        "competing_goodput_mbps",
        "path_a_drops_loss",
        "path_a_displaced",
        "path_a_spiked",
    ] {
        assert!(m[key] > 0.0, "{key} = {}", m[key]);
    }
    assert!(m.contains_key("path_b_goodput_mbps"));
    assert!(m["msg_delay_ms_p99"] >= m["msg_delay_ms_median"]);
}

#[test]
fn outputs_are_written() {
    let s: Scenario = toml::from_str(BUSY).unwrap();
    let (_, pcap, series) = run_with_outputs(&s, 7, "out");
    // Classic pcap magic, then records.
    assert_eq!(&pcap[..4], &0xa1b2_c3d4u32.to_le_bytes());
    assert!(pcap.len() > 24 + 1000 * 100);
    let mut lines = series.lines();
    assert_eq!(lines.next(), Some(TIMESERIES_HEADER));
    let rows: Vec<&str> = lines.collect();
    // One row per 100 ms from 0 to 12 s per path of the (multi-homed) association; path b
    // exists once the handshake has told A the peer's addresses.
    let of = |p: &str| {
        rows.iter()
            .filter(|r| r.split(',').nth(1) == Some(p))
            .count()
    };
    assert_eq!(of("a"), 121);
    assert!((115..=121).contains(&of("b")), "{}", of("b"));
    assert_eq!(rows.len(), of("a") + of("b"));
    assert!(rows.iter().any(|r| r.starts_with("5.000000,a,")));
    assert!(rows.iter().any(|r| r.starts_with("5.000000,b,")));
    let cols = TIMESERIES_HEADER.split(',').count();
    assert!(rows.iter().all(|r| r.split(',').count() == cols));
}

#[test]
fn no_outputs_without_options() {
    let s: Scenario = toml::from_str(BUSY).unwrap();
    let r = run(
        &s,
        &RunOptions {
            seed: 1,
            ..RunOptions::default()
        },
    )
    .unwrap();
    assert!(r.events > 0);
}
