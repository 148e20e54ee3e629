//! Receive-window autotuning sized by what arrives per RTT (Linux's dynamic right-sizing):
//! the window grows where it limits the sender (a long fat path) and not where it does not
//! (a fast path whose sender is held by its cwnd), so a deep queue does not fill with it.

#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::BTreeMap;

use braid_sim::run::{self, RunOptions};
use braid_sim::scenario::Scenario;

fn run(toml: &str) -> BTreeMap<String, f64> {
    let s: Scenario = toml::from_str(toml).unwrap();
    run::run(&s, &RunOptions::default()).unwrap().metrics
}

/// One saturated path at `rate` with `delay` each way and a drop-tail queue of `queue`
/// packets, default association settings (CUBIC, autotuning up to 64 MiB).
fn path(rate: &str, delay: &str, queue: u32) -> String {
    format!(
        r#"
name = "autotune"
duration = "10s"
warmup = "2s"

[[path]]
name = "A"
rate = "{rate}"
delay = "{delay}"
queue = {queue}

[[traffic]]
kind = "saturated"
streams = 1
message_size = 1452
"#
    )
}

/// 2 Gbit/s with a 50 µs RTT and a 3000-packet queue (4.4 MB, a UDP socket buffer's worth):
/// 1 MiB in flight keeps the path busy, so the window must not grow. It grew to 32 MiB
/// before (the reader kept up), CUBIC filled the queue, and the RTT stood at 15 ms.
#[test]
fn a_fast_path_with_a_deep_queue_keeps_the_initial_window_and_a_short_queue() {
    let m = run(&path("2Gbit/s", "25us", 3000));
    let (goodput, srtt, window) = (
        m["goodput_mbps"],
        m["path_A_srtt_ms"],
        m["recv_window_bytes"],
    );
    eprintln!("goodput {goodput:.0} Mbit/s, srtt {srtt:.2} ms, window {window} B");
    assert!(
        goodput > 0.95 * 2000.0 * 1452.0 / 1500.0,
        "goodput {goodput}"
    );
    assert_eq!(window, f64::from(1 << 20), "the window grew");
    assert!(srtt < 6.0, "standing queue: srtt {srtt} ms");
}

/// 1 Gbit/s with a 100 ms RTT (BDP 12.5 MB) and a one-BDP queue: the window limits the
/// sender, a window arrives per RTT, and it grows past the BDP. (Held at 1 MiB the goodput
/// would be 84 Mbit/s; slow start's overshoot into the queue costs the rest: 648 Mbit/s
/// before the window took the RTT into account, 672 after.)
#[test]
fn a_long_fat_path_still_grows_the_window_past_its_bdp() {
    let m = run(&path("1Gbit/s", "50ms", 8600));
    let (goodput, window) = (m["goodput_mbps"], m["recv_window_bytes"]);
    eprintln!("goodput {goodput:.0} Mbit/s, window {window} B");
    assert!(window >= 16.0 * f64::from(1 << 20), "window {window}");
    assert!(
        goodput > 0.6 * 1000.0 * 1452.0 / 1500.0,
        "goodput {goodput}"
    );
}
