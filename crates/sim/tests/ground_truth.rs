//! The simulator's own view of the measured association: the cumulative ack of the time
//! series, decoded from the packets whatever the acknowledgement chunk, and the receiving
//! application's check of every message's length and content.

#![allow(missing_docs, clippy::unwrap_used)]

use std::path::PathBuf;

use braid_sim::run::{Fault, RunOptions, RunResult, TIMESERIES_HEADER, run};
use braid_sim::scenario::Scenario;

fn tmp(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("braid-sim-truth-{}-{name}", std::process::id()))
}

/// One saturated stream over one path for 5 s, a time-series row every 100 ms.
fn saturated(nr_sack: bool) -> Scenario {
    toml::from_str(&format!(
        r#"
        name = "truth"
        duration = "5s"
        timeseries = "100ms"
        [association]
        nr_sack = {nr_sack}
        [[path]]
        name = "A"
        rate = "10Mbit/s"
        delay = "10ms"
        "#
    ))
    .unwrap()
}

/// Runs `s` with seed 1 and returns its result and the time series' `cum_tsn` column.
fn cum_tsn_column(s: &Scenario, tag: &str) -> (RunResult, Vec<i64>) {
    let file = tmp(&format!("{tag}.csv"));
    let r = run(
        s,
        &RunOptions {
            seed: 1,
            timeseries: Some(file.clone()),
            ..RunOptions::default()
        },
    )
    .unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    let _ = std::fs::remove_file(&file);
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    assert_eq!(header.join(","), TIMESERIES_HEADER);
    let col = header.iter().position(|c| *c == "cum_tsn").unwrap();
    let cum = lines
        .map(|l| l.split(',').nth(col).unwrap().parse().unwrap())
        .collect();
    (r, cum)
}

#[test]
fn time_series_cum_tsn_follows_sack_and_nr_sack() {
    for nr_sack in [true, false] {
        let (r, cum) = cum_tsn_column(&saturated(nr_sack), &format!("nr{nr_sack}"));
        let last = *cum.last().unwrap();
        let delivered = r.metrics["messages_delivered"] as i64;
        eprintln!("nr_sack {nr_sack}: cum_tsn {last} at the end, {delivered} messages read");
        assert!(cum.windows(2).all(|w| w[0] <= w[1]), "never goes back");
        // One 1452-byte message per TSN: what was acked was read, and the sender learns of
        // all but the last window's worth within the run.
        assert!(
            last > 0,
            "nr_sack {nr_sack}: the sender saw a cumulative ack"
        );
        assert!(last <= delivered, "{last} acked, {delivered} read");
        assert!(last >= delivered * 9 / 10, "{last} acked, {delivered} read");
    }
}

/// Runs `s` with seed 1 and `fault`.
fn run_fault(s: &Scenario, fault: Option<Fault>) -> RunResult {
    run(
        s,
        &RunOptions {
            seed: 1,
            fault,
            ..RunOptions::default()
        },
    )
    .unwrap()
}

#[test]
fn damaged_messages_are_counted_corrupt_and_fail_the_integrity_check() {
    let s = saturated(true);
    let clean = run_fault(&s, None);
    assert_eq!(clean.metrics["app_messages_corrupt"], 0.0);
    assert_eq!(clean.check_integrity(), Ok(()));
    for fault in [
        Fault::FlipBit { every: 100 },
        Fault::Truncate { every: 100 },
    ] {
        let r = run_fault(&s, Some(fault));
        let m = |k: &str| r.metrics[k];
        eprintln!(
            "{fault:?}: {} corrupt of {} read, {} missing",
            m("app_messages_corrupt"),
            m("messages_delivered"),
            m("app_messages_missing")
        );
        // Every 100th chunk carries one whole message: about 1 % of them are damaged, and
        // none is lost or repeated (the sequence numbers alone see nothing).
        let delivered = m("messages_delivered");
        assert!(m("app_messages_corrupt") >= (delivered / 100.0).floor() - 1.0);
        assert!(m("app_messages_corrupt") <= (delivered / 100.0).ceil() + 1.0);
        assert_eq!(m("app_messages_missing"), 0.0);
        assert_eq!(m("app_messages_duplicated"), 0.0);
        let e = r.check_integrity().unwrap_err();
        assert_eq!(e.corrupt, m("app_messages_corrupt") as u64);
        assert!(e.to_string().contains("corrupt"), "{e}");
    }
}
