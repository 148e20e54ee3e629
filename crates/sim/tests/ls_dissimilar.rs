//! LS-SCTP on two dissimilar paths against standard SCTP on the better path and CMT, with
//! the same buffers (the collapse of issue "LS-SCTP on unequal paths": 1 Mbit/s where one
//! path alone gives 19), and what the per-path `limited_*` counters say about it.

#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::BTreeMap;

use braid_sim::run::{self, RunOptions};
use braid_sim::scenario::Scenario;

fn run(toml: &str) -> BTreeMap<String, f64> {
    let s: Scenario = toml::from_str(toml).unwrap();
    run::run(&s, &RunOptions::default()).unwrap().metrics
}

/// A saturated sender with a 1 MiB send buffer over a quick path A and a slower or longer
/// path B, `mode` "off" (standard SCTP on A), "cmt" or "ls".
fn scenario(mode: &str, rates: (&str, &str), delays: (&str, &str), recv: &str) -> String {
    format!(
        r#"
name = "ls-dissimilar"
duration = "25s"
warmup = "5s"

[association]
load_sharing = "{mode}"
send_buffer = "1MiB"
recv_buffer = "{recv}"

[[path]]
name = "A"
rate = "{}"
delay = "{}"

[[path]]
name = "B"
rate = "{}"
delay = "{}"

[[traffic]]
kind = "saturated"
"#,
        rates.0, delays.0, rates.1, delays.1
    )
}

#[test]
fn ls_sctp_matches_the_better_path_and_cmt_on_dissimilar_paths() {
    let cases = [
        (("20Mbit/s", "5Mbit/s"), ("10ms", "80ms")),
        (("10Mbit/s", "10Mbit/s"), ("10ms", "50ms")),
        (("10Mbit/s", "10Mbit/s"), ("10ms", "75ms")),
    ];
    let mut failed = Vec::new();
    for (rates, delays) in cases {
        for recv in ["64KiB", "256KiB", "1MiB"] {
            let g = |mode| run(&scenario(mode, rates, delays, recv))["goodput_mbps"];
            let (one, cmt, ls) = (g("off"), g("cmt"), g("ls"));
            eprintln!(
                "{rates:?} {delays:?} {recv}: SCTP {one:.2} CMT {cmt:.2} LS-SCTP {ls:.2} Mbit/s"
            );
            // LS-DATA's header is 4 bytes longer than DATA's: the 1452-byte messages that fill
            // one DATA packet take two LS-DATA chunks, which costs up to 3.5 % where the
            // quicker path alone is best (measured 0.964 at 64 KiB).
            if ls < 0.95 * one || ls < 0.9 * cmt {
                failed.push(format!(
                    "{rates:?} {delays:?} {recv}: {ls:.2} vs {one:.2} / {cmt:.2}"
                ));
            }
        }
    }
    assert!(failed.is_empty(), "LS-SCTP below SCTP or CMT: {failed:#?}");
}

#[test]
fn limited_counters_name_what_holds_each_path() {
    // 64 KiB cannot cover 5 Mbit/s at 160 ms next to 20 Mbit/s: the slow path is held back by
    // LS-SCTP's window rule, the quick one by the peer's window it fills.
    let m = run(&scenario(
        "ls",
        ("20Mbit/s", "5Mbit/s"),
        ("10ms", "80ms"),
        "64KiB",
    ));
    let get = |k: &str| m.get(k).copied().unwrap_or(f64::NAN);
    eprintln!("{m:#?}");
    assert!(
        get("path_B_limited_share") > 0.9,
        "slow path: {}",
        get("path_B_limited_share")
    );
    let a: f64 = ["cwnd", "peer_window", "send_buffer", "application", "share"]
        .iter()
        .map(|k| get(&format!("path_A_limited_{k}")))
        .sum();
    assert!(a > 0.9, "the quick path's time is accounted for: {a}");
    // With 1 MiB both paths carry data and fill their windows: cwnd-limited, not share.
    let m = run(&scenario(
        "ls",
        ("20Mbit/s", "5Mbit/s"),
        ("10ms", "80ms"),
        "1MiB",
    ));
    let get = |k: &str| m.get(k).copied().unwrap_or(f64::NAN);
    assert!(
        get("path_B_limited_cwnd") > 0.5,
        "{}",
        get("path_B_limited_cwnd")
    );
    assert!(
        get("path_B_limited_share") < 0.1,
        "{}",
        get("path_B_limited_share")
    );
}
