//! A run's decision trace (`braid_proto::trace`) as JSON lines: one file per host and
//! association, in time order, agreeing with the run's counters.

#![allow(missing_docs, clippy::unwrap_used)]

use braid_sim::run::{RunOptions, run};
use braid_sim::scenario::Scenario;

const TWO_LOSSY_PATHS: &str = r#"
name = "trace"
duration = "20s"
[[path]]
name = "A"
rate = "10Mbit/s"
delay = "10ms"
loss = 0.01
[[path]]
name = "B"
rate = "10Mbit/s"
delay = "30ms"
loss = 0.01
[association]
cmt = true
[[traffic]]
kind = "saturated"
streams = 2
message_size = 1452
"#;

#[test]
fn the_trace_of_a_cmt_run_matches_its_counters() {
    let dir = std::env::temp_dir().join(format!("braid-sim-trace-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let s: Scenario = toml::from_str(TWO_LOSSY_PATHS).unwrap();
    let opts = RunOptions {
        seed: 3,
        trace: Some(dir.clone()),
        ..RunOptions::default()
    };
    let r = run(&s, &opts).unwrap();
    let sender = std::fs::read_to_string(dir.join("a-assoc-0.jsonl")).unwrap();
    let receiver = std::fs::read_to_string(dir.join("b-assoc-0.jsonl")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let count = |text: &str, name: &str| {
        let tag = format!(r#""name":"{name}""#);
        text.lines().filter(|l| l.contains(&tag)).count() as f64
    };
    let mut last = 0u64;
    for l in sender.lines() {
        let t: u64 = l["{\"time_us\":".len()..]
            .split(',')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        assert!(t >= last, "out of order: {l}");
        last = t;
    }
    // No warm-up: the counters cover the whole run, as the trace does.
    assert_eq!(
        count(&sender, "fast_retransmit"),
        r.metrics["fast_retransmissions"]
    );
    assert!(r.metrics["fast_retransmissions"] > 10.0);
    assert_eq!(count(&sender, "t3_expired"), r.metrics["timeouts"]);
    // CMT: new messages start on both paths; the receiver's SACKs are traced on its side.
    assert!(sender.contains(r#""name":"stream_scheduled","stream":0,"path":1"#));
    assert!(sender.contains(r#""name":"stream_scheduled","stream":0,"path":0"#));
    assert!(count(&receiver, "sack_sent") > 100.0);
    assert_eq!(count(&receiver, "fast_retransmit"), 0.0);
}

/// Association and PLPMTUD state changes are traced, each once, in the order the state
/// machines take them (RFC 9260 §4, RFC 8899 §5.2).
#[test]
fn state_changes_are_traced() {
    let dir = std::env::temp_dir().join(format!("braid-sim-states-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let s: Scenario = toml::from_str(
        r#"
        name = "states"
        duration = "5s"
        [[path]]
        name = "A"
        rate = "10Mbit/s"
        delay = "10ms"
        mtu = 1400
        [association]
        plpmtud = true
        [[traffic]]
        kind = "transfer"
        bytes = "100KiB"
        "#,
    )
    .unwrap();
    let opts = RunOptions {
        trace: Some(dir.clone()),
        ..RunOptions::default()
    };
    let r = run(&s, &opts).unwrap();
    let sender = std::fs::read_to_string(dir.join("a-assoc-0.jsonl")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let states = |name: &str| -> Vec<String> {
        let tag = format!(r#""name":"{name}""#);
        sender
            .lines()
            .filter(|l| l.contains(&tag))
            .map(|l| l[l.find("\"from\"").unwrap()..].to_string())
            .collect()
    };
    let assoc = states("association_state");
    assert_eq!(
        assoc[..2],
        [
            r#""from":"COOKIE-WAIT","to":"COOKIE-ECHOED"}"#,
            r#""from":"COOKIE-ECHOED","to":"ESTABLISHED"}"#
        ],
        "{assoc:?}"
    );
    let pmtu = states("pmtu_state");
    assert!(
        pmtu.first()
            .is_some_and(|l| l.starts_with(r#""from":"probe-none","to":"base""#)),
        "{pmtu:?}"
    );
    let done = pmtu
        .iter()
        .find(|l| l.contains(r#""to":"done""#))
        .unwrap_or_else(|| panic!("{pmtu:?}"));
    // The search ends at the link's 1400-byte MTU, as the run's summary says.
    assert!(done.contains(r#""pmtu":1400"#), "{done}");
    assert_eq!(r.metrics["path_A_pmtu"], 1400.0);
}

/// `qlog = true` writes the same decisions as qlog: JSON-SEQ records that parse, a header,
/// a `recovery:metrics_updated` per window change of the JSON-lines trace (with the same
/// cwnd), `recovery:packet_lost` per fast retransmit, and every event again in the `sctp`
/// namespace.
#[test]
fn qlog_is_a_view_of_the_same_events() {
    let dir = std::env::temp_dir().join(format!("braid-sim-qlog-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let s: Scenario = toml::from_str(TWO_LOSSY_PATHS).unwrap();
    let opts = RunOptions {
        seed: 3,
        trace: Some(dir.join("trace")),
        qlog: Some(dir.join("qlog")),
        ..RunOptions::default()
    };
    run(&s, &opts).unwrap();
    let lines = std::fs::read_to_string(dir.join("trace/a-assoc-0.jsonl")).unwrap();
    let qlog = std::fs::read_to_string(dir.join("qlog/a-assoc-0.sqlog")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let records: Vec<serde_json::Value> = qlog
        .split('\u{1e}')
        .filter(|r| !r.is_empty())
        .map(|r| serde_json::from_str(r).unwrap_or_else(|e| panic!("{e}: {r}")))
        .collect();
    assert_eq!(records[0]["qlog_format"], "JSON-SEQ");
    let named = |n: &str| {
        records
            .iter()
            .filter(|r| r["name"] == n)
            .collect::<Vec<_>>()
    };
    let windows: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|v| v["name"] == "window")
        .collect();
    let metrics = named("recovery:metrics_updated");
    assert!(windows.len() > 100, "{}", windows.len());
    assert_eq!(metrics.len(), windows.len());
    for (m, w) in metrics.iter().zip(&windows) {
        assert_eq!(m["data"]["congestion_window"], w["cwnd"]);
        assert_eq!(m["data"]["path_id"], w["path"]);
        assert_eq!(m["data"]["bytes_in_flight"], w["flight"]);
        // qlog rounds to the µs, the JSON lines truncate: within 1.5 µs.
        let t = m["time"].as_f64().unwrap();
        assert!(
            (t * 1000.0 - w["time_us"].as_f64().unwrap()).abs() < 1.5,
            "{m} {w}"
        );
    }
    let fr = lines
        .lines()
        .filter(|l| l.contains(r#""name":"fast_retransmit""#))
        .count();
    assert!(fr > 0);
    assert_eq!(named("recovery:packet_lost").len(), fr);
    assert_eq!(named("sctp:window").len(), windows.len());
    assert!(!named("recovery:congestion_state_updated").is_empty());
    // Packets with their chunks: every chunk declared lost went out before and goes out
    // again after (its retransmission), as the packets sent show.
    let mut sends: std::collections::HashMap<u64, Vec<f64>> = Default::default();
    for p in named("transport:packet_sent") {
        for f in p["data"]["frames"].as_array().unwrap() {
            if f["frame_type"] == "data" {
                let at = p["time"].as_f64().unwrap();
                sends
                    .entry(f["tsn"].as_u64().unwrap())
                    .or_default()
                    .push(at);
            }
        }
    }
    for l in named("recovery:packet_lost") {
        let t = l["time"].as_f64().unwrap();
        let tsn = l["data"]["header"]["packet_number"].as_u64().unwrap();
        let sends = &sends[&tsn];
        assert!(sends.iter().any(|&s| s < t), "lost before it was sent: {l}");
        assert!(sends.iter().any(|&s| s >= t), "never resent: {l}");
    }
    let acks = named("transport:packet_received")
        .into_iter()
        .filter(|p| p["data"]["frames"][0]["frame_type"] == "sack")
        .count();
    assert!(acks > 100, "{acks} SACKs received");
    // RTTs: the lowest sample is at most the smoothed one.
    for m in &metrics {
        let (min, srtt) = (&m["data"]["min_rtt"], &m["data"]["smoothed_rtt"]);
        if let (Some(min), Some(srtt)) = (min.as_f64(), srtt.as_f64()) {
            assert!(min <= srtt + 0.001, "{m}");
        }
    }
}
