//! PLPMTUD (RFC 8899; NEAT D3.1 §2.1.3) in the simulator: `[association] plpmtud`, a path's
//! `icmp` and `mtu_changes`, and the `path_{NAME}_pmtu` metric. Every transfer must arrive
//! intact whatever the path's MTU does.

#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::Path;

use braid_sim::load::load_str;
use braid_sim::run::{RunOptions, run};

/// A saturating sender of 2000-byte messages (each cut into fragments) over one 10 Mbit/s
/// path for `duration`; `path` adds keys to the path, `assoc` to the association.
fn scenario(duration: &str, path: &str, assoc: &str) -> String {
    format!(
        r#"name = "plpmtud"
duration = "{duration}"
[association]
plpmtud = true
path_mtu = 1500
{assoc}
[[path]]
name = "p"
rate = "10Mbit/s"
delay = "20ms"
queue = 100
{path}
[[traffic]]
kind = "saturated"
message_size = 2000
"#
    )
}

fn metrics(text: &str) -> BTreeMap<String, f64> {
    let exp = load_str(text, Path::new("plpmtud.toml")).unwrap();
    let r = run(&exp.points[0].scenario, &RunOptions::default()).unwrap();
    r.check_integrity().unwrap();
    // Data kept flowing: far more than the messages in flight when the run ended.
    assert!(r.metrics["goodput_mbps"] > 5.0, "{:?}", r.metrics);
    assert_eq!(r.metrics["association_closed"], 0.0);
    r.metrics
}

#[test]
fn the_search_finds_a_1400_byte_path_with_or_without_icmp() {
    for icmp in ["with-mtu", "without-mtu", "none"] {
        let m = metrics(&scenario(
            "60s",
            &format!("mtu = 1400\nicmp = \"{icmp}\""),
            "",
        ));
        let pmtu = m["path_p_pmtu"];
        assert!(pmtu <= 1400.0 && pmtu > 1400.0 - 16.0, "{icmp}: {pmtu}");
        if icmp == "with-mtu" {
            // The ICMP names the MTU: the search ends exactly there.
            assert_eq!(pmtu, 1400.0);
        }
    }
}

#[test]
fn a_pmtu_that_drops_mid_transfer_is_found_again_with_and_without_icmp() {
    for icmp in ["with-mtu", "none"] {
        let path = format!("icmp = \"{icmp}\"\nmtu_changes = [{{ at = \"1s\", mtu = 1300 }}]");
        let m = metrics(&scenario("120s", &path, ""));
        let pmtu = m["path_p_pmtu"];
        assert!(pmtu <= 1300.0 && pmtu > 1300.0 - 16.0, "{icmp}: {pmtu}");
    }
}

#[test]
fn a_pmtu_that_rises_is_found_after_the_raise_timer() {
    // 1300 until 30 s (the search is over by then), then 1500; the raise timer (10 min by
    // default) is 10 s here.
    let path = "mtu = 1300\nmtu_changes = [{ at = \"30s\", mtu = 1500 }]";
    let raise = "pmtu_raise_interval = \"10s\"";
    let m = metrics(&scenario("90s", path, raise));
    assert_eq!(m["path_p_pmtu"], 1500.0);
    // Without the raise timer firing in time, the path stays at what the search found.
    let m = metrics(&scenario("90s", path, ""));
    assert!(m["path_p_pmtu"] <= 1300.0);
}

#[test]
fn without_plpmtud_the_path_keeps_its_configured_mtu() {
    let text = scenario("60s", "mtu = 1500", "").replace("plpmtud = true", "plpmtud = false");
    assert_eq!(metrics(&text)["path_p_pmtu"], 1500.0);
}

#[test]
fn each_path_of_a_multihomed_association_finds_its_own_pmtu() {
    let text = scenario("60s", "mtu = 1400\nicmp = \"none\"", "cmt = true").replace(
        "[[traffic]]",
        "[[path]]\nname = \"q\"\nrate = \"10Mbit/s\"\ndelay = \"30ms\"\nmtu = 1300\n\
         icmp = \"with-mtu\"\n[[traffic]]",
    );
    let m = metrics(&text);
    let (p, q) = (m["path_p_pmtu"], m["path_q_pmtu"]);
    assert!(p <= 1400.0 && p > 1400.0 - 16.0, "p: {p}");
    assert_eq!(q, 1300.0);
}
