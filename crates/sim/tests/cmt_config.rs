//! The CMT and scheduling keys of a scenario: parsed, swept, mapped into the core's
//! configuration, and errors located in the file.

#![allow(missing_docs, clippy::unwrap_used)]

use std::path::Path;

use braid_proto::{
    BufferSplitting, CongestionControl, ReceiveSplit, RtxPolicy, SackPath, SchedulerKind,
};
use braid_sim::load::load_str;
use braid_sim::run::association_config;
use braid_sim::sweep::display_value;

const BASE: &str = r#"
name = "cmt"
duration = "10s"

[association]
cmt = true
sfr = false
cuc = false
dac = false
nr_sack = false
buffer = "96KiB"
buffer_splitting = "receive"
cc = "cmt-rpv2"
rtx_policy = "lossrate"
stream_scheduler = "fixed"
stream_paths = ["B", "A", "B"]

[[path]]
name = "A"
rate = "10Mbit/s"
delay = "10ms"

[[path]]
name = "B"
rate = "10Mbit/s"
delay = "10ms"

[[traffic]]
kind = "saturated"
streams = 3
sender_queue_info = true
"#;

#[test]
fn keys_map_into_the_association_config() {
    let exp = load_str(BASE, Path::new("t.toml")).unwrap();
    let c = association_config(&exp.points[0].scenario);
    let cmt = c.cmt.unwrap();
    assert!(!cmt.sfr && !cmt.cuc && !cmt.dac && !c.nr_sack);
    assert_eq!((c.send_buffer, c.recv_buffer), (96 * 1024, 96 * 1024));
    assert_eq!(cmt.buffer_splitting, BufferSplitting::Receive);
    assert_eq!(c.cc, CongestionControl::CmtRpv2);
    assert_eq!(c.rtx_policy, RtxPolicy::Lossrate);
    assert_eq!(c.stream_scheduler, SchedulerKind::Fixed);
    assert_eq!(c.stream_paths, vec![1, 0, 1]);
    // Sender queue info sets the low-water mark of StreamBufferLow to a few messages.
    assert_eq!(
        c.stream_buffer_low,
        1452 * braid_sim::traffic::SQINFO_QUEUE_MESSAGES
    );
}

#[test]
fn every_value_of_every_key_is_sweepable() {
    let text = format!(
        "{BASE}\n[sweep]\n\
         \"association.stream_scheduler\" = [\"fcfs\", \"rr\", \"rr-packet\", \"priority\", \"fc\", \"wfq\", \"fixed\", \"adaptive\"]\n\
         \"association.cc\" = [\"reno\", \"cmt-rpv1\", \"cmt-rpv2\", \"lia\"]\n\
         \"association.rtx_policy\" = [\"same\", \"asap\", \"cwnd\", \"ssthresh\", \"lossrate\"]\n\
         \"association.buffer_splitting\" = [\"none\", \"send\", \"receive\", \"both\"]\n\
         \"association.sfr\" = [true, false]\n\
         \"traffic.0.sender_queue_info\" = [false, true]\n\
         \"association.stream_paths\" = [[\"A\", \"A\", \"A\"], [\"B\", \"B\", \"A\"]]\n"
    );
    let exp = load_str(&text, Path::new("t.toml")).unwrap();
    assert_eq!(exp.points.len(), 8 * 4 * 5 * 4 * 2 * 2 * 2);
    let last = exp.points.last().unwrap();
    let c = association_config(&last.scenario);
    assert_eq!(c.stream_scheduler, SchedulerKind::Adaptive);
    assert_eq!(c.cc, CongestionControl::Lia);
    assert_eq!(c.rtx_policy, RtxPolicy::Lossrate);
    let cmt = c.cmt.unwrap();
    assert_eq!(cmt.buffer_splitting, BufferSplitting::Both);
    assert!(!cmt.sfr);
    assert_eq!(c.stream_paths, vec![1, 1, 0]);
    assert_eq!(
        display_value(last.params.get("association.stream_scheduler").unwrap()),
        "adaptive"
    );
}

#[test]
fn unknown_path_in_stream_paths_is_reported_at_its_position() {
    let text = BASE.replace(r#"["B", "A", "B"]"#, r#"["B", "X", "B"]"#);
    let e = load_str(&text, Path::new("t.toml"))
        .unwrap_err()
        .to_string();
    let line = text
        .lines()
        .position(|l| l.starts_with("stream_paths"))
        .unwrap()
        + 1;
    let col = text.lines().nth(line - 1).unwrap().find("\"X\"").unwrap() + 1;
    assert_eq!(
        e,
        format!(
            "t.toml:{line}:{col}: association.stream_paths: stream 1: no path named \"X\" (paths: \"A\", \"B\")"
        )
    );
    // In a swept value: at that value in [sweep].
    let text = format!("{BASE}\n[sweep]\n\"association.stream_paths\" = [[\"A\"], [\"Q\"]]\n");
    let e = load_str(&text, Path::new("t.toml"))
        .unwrap_err()
        .to_string();
    let line = text.lines().count();
    assert!(e.starts_with(&format!("t.toml:{line}:")), "{e}");
    assert!(e.contains("no path named \"Q\""), "{e}");
}

#[test]
fn bad_scheduler_name_is_reported_at_its_line() {
    let text = BASE.replace(r#""fixed""#, r#""fastest""#);
    let e = load_str(&text, Path::new("t.toml"))
        .unwrap_err()
        .to_string();
    let line = text
        .lines()
        .position(|l| l.starts_with("stream_scheduler"))
        .unwrap()
        + 1;
    assert!(e.starts_with(&format!("t.toml:{line}:")), "{e}");
    assert!(e.contains("association.stream_scheduler"), "{e}");
}

#[test]
fn sack_path_and_receive_split_map_and_sweep() {
    let text = format!(
        "{BASE}\n[sweep]\n\
         \"association.sack_path\" = [\"quickest\", \"first-data\", \"last-data\", \"primary\"]\n\
         \"association.receive_split\" = [\"initial-window\", \"current-window\"]\n"
    );
    let exp = load_str(&text, Path::new("t.toml")).unwrap();
    assert_eq!(exp.points.len(), 8);
    let first = association_config(&exp.points[0].scenario).cmt.unwrap();
    assert_eq!(
        (first.sack_path, first.receive_split),
        (SackPath::Quickest, ReceiveSplit::InitialWindow)
    );
    let last = association_config(&exp.points[7].scenario).cmt.unwrap();
    assert_eq!(
        (last.sack_path, last.receive_split),
        (SackPath::Primary, ReceiveSplit::CurrentWindow)
    );
    let bad = load_str(
        &BASE.replace("cmt = true", "cmt = true\nsack_path = \"fastest\""),
        Path::new("t.toml"),
    );
    let e = format!("{}", bad.err().unwrap());
    assert!(e.contains("quickest") && e.contains("first-data"), "{e}");
}

/// Receive-side buffer splitting by the peer's current window (INET) keeps each path to
/// its share of what the receiver has room for now: with a receiver that reads slowly
/// (small buffer), the two bases give different runs.
#[test]
fn the_receive_split_basis_changes_a_buffer_limited_run() {
    use braid_sim::run::{RunOptions, run};
    let goodput = |basis: &str| {
        // Round-robin over a 10 ms and a 60 ms path: the receiver holds the fast path's
        // data until the slow path's arrives, so its window shrinks below the initial one
        // (braid's window-cover rule off, as CMT-SCTP: it would keep data off the slow path).
        let text = BASE
            .replace(
                "buffer_splitting = \"receive\"",
                &format!(
                    "buffer_splitting = \"receive\"\nreceive_split = \"{basis}\"\nwindow_cover = false"
                ),
            )
            .replace("stream_scheduler = \"fixed\"", "stream_scheduler = \"rr\"")
            .replace(
                "name = \"B\"\nrate = \"10Mbit/s\"\ndelay = \"10ms\"",
                "name = \"B\"\nrate = \"10Mbit/s\"\ndelay = \"60ms\"",
            );
        let exp = load_str(&text, Path::new("t.toml")).unwrap();
        let r = run(&exp.points[0].scenario, &RunOptions::default()).unwrap();
        r.metrics["goodput_mbps"]
    };
    let (initial, current) = (goodput("initial-window"), goodput("current-window"));
    eprintln!("goodput: initial-window {initial:.2}, current-window {current:.2} Mbit/s");
    assert!(initial > 1.0 && current > 1.0, "{initial} {current}");
    assert_ne!(initial, current);
}

/// Fig. 7 of the CMT scheduling paper, fixed mapping without NR-SACK, σ = 160 KiB: an
/// application that reads the queue info in bytes (each stream within σ/streams) keeps
/// the 1 Mbit/s path's stream from filling the send buffer, and the two fast paths carry
/// far more than with the message-count policy.
#[test]
fn sqinfo_in_bytes_keeps_the_slow_stream_from_taking_the_buffer() {
    use braid_sim::run::{RunOptions, run};
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scenarios/papers/cmt-fig7.toml"),
    )
    .unwrap();
    let goodput = |policy: &str| {
        let mut t = text
            .replace("duration = \"319s\"", "duration = \"40s\"")
            .replace(
                "sqinfo_policy = \"bytes\"",
                &format!("sqinfo_policy = \"{policy}\""),
            );
        t.truncate(t.find("[sweep]").unwrap());
        t.push_str(
            "[sweep]\n\"association.nr_sack\" = [false]\n\
             \"association.stream_scheduler\" = [\"fixed\"]\n\"association.buffer\" = [\"160KiB\"]\n",
        );
        let exp = load_str(&t, Path::new("fig7.toml")).unwrap();
        run(&exp.points[0].scenario, &RunOptions::default())
            .unwrap()
            .metrics["goodput_mbps"]
    };
    let (messages, bytes) = (goodput("messages"), goodput("bytes"));
    eprintln!("Fixed w/o NR-SACK, σ = 160 KiB: messages {messages:.2}, bytes {bytes:.2} Mbit/s");
    assert!(bytes > 1.3 * messages, "{bytes} vs {messages}");
}
