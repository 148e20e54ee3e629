//! Topology scenarios: flows sharing links they route over, TCP-like competitors, reactive
//! and unresponsive cross traffic, and the per-flow and per-bottleneck metrics.

#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::BTreeMap;

use braid_sim::run::{RunOptions, run};
use braid_sim::scenario::Scenario;
use braid_sim::topology::{flow_addr, plan};

fn scenario(text: &str) -> Scenario {
    toml::from_str(text).unwrap()
}

fn metrics(s: &Scenario, seed: u64) -> BTreeMap<String, f64> {
    run(
        s,
        &RunOptions {
            seed,
            ..RunOptions::default()
        },
    )
    .unwrap_or_else(|e| panic!("{e}"))
    .metrics
}

/// A dumbbell: `n` senders s1.. and receivers d1.. around a `rate`, `delay` bottleneck
/// r1 -> r2 with 1 ms access links; `flows` appended as given.
fn dumbbell(
    n: usize,
    rate: &str,
    delay: &str,
    queue: usize,
    duration: &str,
    flows: &str,
) -> String {
    let mut t = format!(
        "name = \"t\"\nduration = \"{duration}\"\nwarmup = \"4s\"\n\n[[link]]\nname = \"bn\"\n\
         from = \"r1\"\nto = \"r2\"\nrate = \"{rate}\"\ndelay = \"{delay}\"\nqueue = {queue}\n"
    );
    for i in 1..=n {
        t += &format!(
            "\n[[link]]\nname = \"s{i}\"\nfrom = \"s{i}\"\nto = \"r1\"\nrate = \"1Gbit/s\"\n\
             delay = \"1ms\"\nqueue = 1000\n\n[[link]]\nname = \"d{i}\"\nfrom = \"r2\"\n\
             to = \"d{i}\"\nrate = \"1Gbit/s\"\ndelay = \"1ms\"\nqueue = 1000\n"
        );
    }
    t + "\n" + flows
}

#[test]
fn two_identical_flows_share_a_bottleneck_evenly_and_fill_it() {
    let flows = r#"
[[flow]]
name = "a"
from = "s1"
to = "d1"

[[flow]]
name = "b"
from = "s2"
to = "d2"
start = "200ms"
"#;
    let s = scenario(&dumbbell(2, "20Mbit/s", "10ms", 50, "40s", flows));
    let m = metrics(&s, 1);
    let (a, b) = (m["flow_a_goodput_mbps"], m["flow_b_goodput_mbps"]);
    assert!(m["bottleneck_bn_utilisation"] > 0.95, "{m:?}");
    // Both together: the bottleneck less headers (48 of 1500 bytes per packet).
    assert!((a + b) > 18.0 && (a + b) < 20.0, "a {a} b {b}");
    assert!(m["jain_fairness"] > 0.95, "a {a} b {b}");
    // The first flow is the measured association: its unprefixed metrics are its own.
    assert_eq!(m["goodput_mbps"], a);
    assert_eq!(m["flows_app_errors"], 0.0);
    assert_eq!(m["flow_b_start_s"], 0.2);
    // The bottleneck queued and dropped (two CUBIC flows fill a 50-packet queue).
    assert!(m["bottleneck_bn_queue_mean"] > 1.0);
    assert!(m["bottleneck_bn_queue_p99"] <= 50.0);
    assert!(m["bottleneck_bn_drops"] > 0.0 && m["bottleneck_bn_loss"] > 0.0);
    // An access link is not a bottleneck.
    assert!(m["bottleneck_s1_utilisation"] < 0.05);
}

#[test]
fn a_tcp_flow_gets_tcp_settings_and_a_full_packet() {
    let flows = r#"
[[flow]]
name = "braid"
from = "s1"
to = "d1"

[[flow]]
name = "tcp"
kind = "tcp"
cc = "reno"
from = "s2"
to = "d2"
"#;
    let s = scenario(&dumbbell(2, "20Mbit/s", "10ms", 50, "10s", flows));
    let p = plan(&s).unwrap();
    let tcp = braid_sim::run::association_config(&p.flows[1].scenario);
    let braid = braid_sim::run::association_config(&p.flows[0].scenario);
    assert!(!tcp.nr_sack && braid.nr_sack);
    assert_eq!(tcp.sack_delay, braid_sim::topology::TCP_DELAYED_ACK);
    assert_eq!(tcp.hb_interval, None);
    assert_eq!(tcp.cc, braid_proto::CongestionControl::Reno);
    assert_eq!(braid.cc, braid_proto::CongestionControl::Cubic);
    // 1500 - IPv4 20 - SCTP common header 12 - DATA header 16.
    match &p.flows[1].scenario.traffic[0] {
        braid_sim::scenario::TrafficSpec::Saturated { message_size, .. } => {
            assert_eq!(*message_size, 1452)
        }
        t => panic!("{t:?}"),
    }
    let m = metrics(&s, 1);
    assert!(m["flow_tcp_goodput_mbps"] > 2.0, "{m:?}");
}

#[test]
fn a_transfer_flow_reports_its_completion_time() {
    let flows = r#"
[[flow]]
name = "long"
from = "s1"
to = "d1"

[[flow]]
name = "short"
from = "s2"
to = "d2"
start = "5s"
bytes = "1MB"
"#;
    let s = scenario(&dumbbell(2, "10Mbit/s", "20ms", 100, "15s", flows));
    let m = metrics(&s, 2);
    let fct = m["flow_short_fct_s"];
    // 8 Mbit at no more than 10 Mbit/s, shared: at least 0.8 s, well under the 10 s left.
    assert!(fct > 0.8 && fct < 6.0, "fct {fct}");
    assert!(!m.contains_key("flow_long_fct_s"));
}

#[test]
fn a_flow_with_two_routes_is_a_multipath_association() {
    let text = r#"
name = "two routes"
duration = "20s"
warmup = "5s"

[[link]]
name = "up"
from = "a"
to = "r1"
rate = "10Mbit/s"
delay = "10ms"

[[link]]
name = "up2"
from = "r1"
to = "b"
rate = "100Mbit/s"
delay = "1ms"

[[link]]
name = "down"
from = "a"
to = "r2"
rate = "10Mbit/s"
delay = "10ms"

[[link]]
name = "down2"
from = "r2"
to = "b"
rate = "100Mbit/s"
delay = "1ms"

[[flow]]
name = "cmt"
from = "a"
to = "b"
routes = [["a", "r1", "b"], ["a", "r2", "b"]]
association = { cmt = true }
"#;
    let s = scenario(text);
    let m = metrics(&s, 1);
    let g = m["flow_cmt_goodput_mbps"];
    assert!(g > 18.0, "{g}");
    // Each route carries about half, reported as the measured association's paths.
    for p in ["cmt.0", "cmt.1"] {
        let share = m[&format!("path_{p}_goodput_mbps")];
        assert!(share > 8.5, "{p}: {share}");
    }
    // Without routes the shortest (the first declared among equals) is taken: one path.
    let mut one = s.clone();
    one.flows[0].routes.clear();
    one.flows[0].association.cmt = None;
    let m = metrics(&one, 1);
    assert!(m["flow_cmt_goodput_mbps"] < 10.0);
    assert!(m["bottleneck_down_utilisation"] < 0.01);
}

#[test]
fn unresponsive_sources_load_their_route_and_reactive_ones_back_off() {
    let text = r#"
name = "cross"
duration = "30s"
warmup = "5s"

[[link]]
name = "bn"
from = "r1"
to = "r2"
rate = "10Mbit/s"
delay = "10ms"
queue = 100

[[flow]]
name = "main"
from = "r1"
to = "r2"

[[cross]]
name = "cbr"
kind = "constant"
from = "r1"
to = "r2"
rate = "3Mbit/s"
packet_size = 1000

[[cross]]
name = "web"
kind = "pareto-onoff"
from = "r1"
to = "r2"
flows = 6
size_mean = "100KB"
gap_mean = "500ms"
"#;
    let s = scenario(text);
    let m = metrics(&s, 3);
    let (main, web) = (m["flow_main_goodput_mbps"], m["cross_web_goodput_mbps"]);
    assert!(m["bottleneck_bn_utilisation"] > 0.95);
    // The constant source takes its 3 Mbit/s off the top; the rest is shared.
    assert!(
        main + web < 7.2 && main + web > 6.0,
        "main {main} web {web}"
    );
    assert!(web > 0.3, "web {web}");
    // The on/off flows are not in the fairness set: one flow, index 1.
    assert_eq!(m["jain_fairness"], 1.0);
    // A Poisson source at the same mean rate loads the link as much on average.
    let mut poisson = s.clone();
    poisson.flows.clear();
    poisson.cross.truncate(1);
    poisson.cross[0].kind = braid_sim::scenario::CrossKind::Poisson;
    poisson.flows.push(s.flows[0].clone());
    poisson.flows[0].bytes = Some(braid_sim::units::Size(1000));
    let m = metrics(&poisson, 3);
    let u = m["bottleneck_bn_utilisation"];
    assert!((u - 0.3).abs() < 0.02, "utilisation {u}");
}

#[test]
fn runs_repeat_with_a_seed_and_start_windows_vary_with_it() {
    let flows = r#"
[[flow]]
name = "a"
from = "s1"
to = "d1"
start = ["0s", "2s"]

[[flow]]
name = "b"
kind = "tcp"
from = "s2"
to = "d2"
start = ["0s", "2s"]
"#;
    let s = scenario(&dumbbell(2, "10Mbit/s", "10ms", 50, "8s", flows));
    assert_eq!(metrics(&s, 7), metrics(&s, 7));
    let (x, y) = (metrics(&s, 7), metrics(&s, 8));
    assert_ne!(x["flow_a_start_s"], y["flow_a_start_s"]);
    assert!(x["flow_a_start_s"] < 2.0 && x["flow_b_start_s"] < 2.0);
    // The testbed connects its flows at the times `start_times` gives for its seed: the
    // simulator's own.
    let at = braid_sim::topology::start_times(&s, &plan(&s).unwrap(), 7);
    assert_eq!(x["flow_a_start_s"], at[0].as_secs_f64());
    assert_eq!(x["flow_b_start_s"], at[1].as_secs_f64());
}

#[test]
fn topology_mistakes_are_named() {
    let base = dumbbell(1, "10Mbit/s", "10ms", 50, "5s", "");
    let check = |flows: &str, want: &str| {
        let s = scenario(&(base.clone() + flows));
        let e = braid_sim::run::validate(&s).unwrap_err().to_string();
        assert!(e.contains(want), "{e}");
    };
    check(
        "[[flow]]\nname = \"f\"\nfrom = \"s1\"\nto = \"nowhere\"\n",
        "no link touches node \"nowhere\"",
    );
    check(
        "[[flow]]\nname = \"f\"\nfrom = \"s1\"\nto = \"d1\"\nroutes = [[\"s1\", \"r2\", \"d1\"]]\n",
        "no link joins \"s1\" and \"r2\"",
    );
    check(
        "[[flow]]\nname = \"f\"\nfrom = \"s1\"\nto = \"d1\"\nroutes = [[\"s1\", \"r1\"]]\n",
        "a route runs from \"s1\" to \"d1\"",
    );
    check(
        "[[flow]]\nname = \"f\"\nkind = \"tcp\"\nfrom = \"s1\"\nto = \"d1\"\nroutes = [[\"s1\", \"r1\", \"r2\", \"d1\"], [\"s1\", \"r1\", \"r2\", \"d1\"]]\n",
        "a tcp flow has one route",
    );
    check(
        "[[flow]]\nname = \"f\"\nfrom = \"s1\"\nto = \"d1\"\nbytes = \"1MB\"\nduration = \"1s\"\n",
        "not both",
    );
    check(
        "[[flow]]\nname = \"f\"\nfrom = \"s1\"\nto = \"d1\"\nassociation = { rto_min = \"2s\", rto_max = \"1s\" }\n",
        "flow f",
    );
    // Flow 0 keeps the two-host addresses; others get their own.
    assert_eq!(flow_addr(0, 1, true), braid_sim::net::a_addr(1));
    assert_eq!(flow_addr(300, 0, false).to_string(), "11.1.44.2:9899");
}

#[test]
fn the_shipped_dumbbell_runs_short() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scenarios/dumbbell.toml");
    let mut s = scenario(&std::fs::read_to_string(path).unwrap());
    s.duration = braid_sim::units::Dur(std::time::Duration::from_secs(8));
    s.warmup = braid_sim::units::Dur(std::time::Duration::from_secs(3));
    let m = metrics(&s, 1);
    let flows = ["braid1", "braid2", "tcp1", "tcp2"];
    let total: f64 = flows
        .iter()
        .map(|f| m[&format!("flow_{f}_goodput_mbps")])
        .sum();
    assert!(total > 90.0 && total < 100.0, "{total}");
    assert!(
        flows
            .iter()
            .all(|f| m[&format!("flow_{f}_goodput_mbps")] > 1.0)
    );
    assert!(m["jain_fairness"] > 0.3 && m["jain_fairness"] <= 1.0);
    assert_eq!(m["flows_app_errors"], 0.0);
}

#[test]
fn parallel_links_are_chosen_by_name() {
    let text = r#"
name = "parallel"
duration = "15s"
warmup = "5s"

[[link]]
name = "p1"
from = "A"
to = "B"
rate = "5Mbit/s"
delay = "10ms"

[[link]]
name = "p2"
from = "A"
to = "B"
rate = "5Mbit/s"
delay = "30ms"

[[flow]]
name = "cmt"
from = "A"
to = "B"
routes = [["A", "p1"], ["A", "p2", "B"]]
association = { cmt = true }
"#;
    let m = metrics(&scenario(text), 1);
    assert!(m["bottleneck_p1_utilisation"] > 0.9, "{m:?}");
    assert!(m["bottleneck_p2_utilisation"] > 0.9, "{m:?}");
    assert!(m["flow_cmt_goodput_mbps"] > 9.0);
}
