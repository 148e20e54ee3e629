//! The scenario keys of Ladha et al. (spurious retransmissions): `spurious_detection`,
//! `delayed_ack`, `reorder_rate`, `reorder_at`, `delay_spikes`, `spike_at` and
//! `timestamp_message_size` — parsed, swept, mapped into the core's configuration and the
//! links, and errors located in the file.

#![allow(missing_docs, clippy::unwrap_used)]

use std::path::Path;
use std::time::Duration;

use braid_proto::{Instant, SpuriousDetection};
use braid_sim::load::{Diagnostic, load_str};
use braid_sim::net::Topology;
use braid_sim::run::{association_config, traffic};
use braid_sim::scenario::{REORDER_DISPLACEMENT, TrafficSpec};
use braid_sim::sweep::display_value;

const BASE: &str = r#"name = "spurious"
duration = "10s"
[association]
delayed_ack = "150ms"
[[path]]
name = "p1"
rate = "1Mbit/s"
delay = "100ms"
reorder_rate = 0.02
reorder_at = ["3s"]
delay_spikes = { every = ["10s", "20s"], length = ["3s", "10s"] }
spike_at = [["30s", "33s"]]
[[traffic]]
kind = "saturated"
message_size = 1448
timestamp_message_size = 1436
"#;

fn err(text: &str) -> Diagnostic {
    match load_str(text, Path::new("bad.toml")) {
        Ok(_) => panic!("loaded"),
        Err(e) => e,
    }
}

fn assert_at(d: &Diagnostic, line: usize, key: &str, words: &str) {
    let msg = d.to_string();
    assert_eq!(d.line, line, "{msg}");
    assert!(msg.contains(key), "key {key:?}: {msg}");
    assert!(msg.contains(words), "{words:?}: {msg}");
}

fn secs(s: f64) -> Instant {
    Instant::from_duration(Duration::from_secs_f64(s))
}

#[test]
fn keys_map_into_the_association_config_and_the_forward_link() {
    let text = format!(
        "{BASE}[sweep]\n\"association.spurious_detection\" = [\"off\", \"eifel-timestamp\", \
         \"eifel-rbit\", \"duptsn\", \"eifel+duptsn\"]\n"
    );
    let exp = load_str(&text, Path::new("t.toml")).unwrap();
    let names: Vec<String> = exp
        .points
        .iter()
        .map(|p| display_value(p.params.get("association.spurious_detection").unwrap()))
        .collect();
    assert_eq!(
        names,
        [
            "off",
            "eifel-timestamp",
            "eifel-rbit",
            "duptsn",
            "eifel+duptsn"
        ]
    );
    let sizes: Vec<usize> = exp
        .points
        .iter()
        .map(|p| {
            let cfg = association_config(&p.scenario);
            assert_eq!(cfg.sack_delay, Duration::from_millis(150));
            let d = cfg.spurious_detection;
            assert_eq!(
                d.to_string(),
                display_value(p.params.get("association.spurious_detection").unwrap())
            );
            traffic(&p.scenario)[0].message_size(false)
        })
        .collect();
    // Only the variants with a TIMESTAMP chunk in every packet shorten the messages.
    assert_eq!(sizes, [1448, 1436, 1448, 1448, 1436]);
    let s = &exp.points[0].scenario;
    assert_eq!(
        association_config(s).spurious_detection,
        SpuriousDetection::Off
    );
    let topo = Topology::build(s, 1).unwrap();
    let fwd = topo.links[topo.paths[0].forward].config();
    let h = fwd.hiccup.unwrap();
    assert_eq!((h.rate, h.displacement), (0.02, REORDER_DISPLACEMENT));
    assert_eq!(fwd.reorder_at, vec![(secs(3.0), REORDER_DISPLACEMENT)]);
    let sp = fwd.spikes.unwrap();
    assert_eq!(
        (sp.interval, sp.length),
        (
            (Duration::from_secs(10), Duration::from_secs(20)),
            (Duration::from_secs(3), Duration::from_secs(10))
        )
    );
    assert_eq!(fwd.spikes_at, vec![(secs(30.0), secs(33.0))]);
    // The reverse (acknowledgement) link has none of them.
    let rev = topo.links[topo.paths[0].reverse].config();
    assert!(rev.hiccup.is_none() && rev.spikes.is_none() && rev.spikes_at.is_empty());
    // With `hiccup`, `reorder_at` displaces by the hiccup's displacement.
    let h = BASE.replace(
        "reorder_rate = 0.02",
        "hiccup = { rate = 0.0, displacement = 5 }",
    );
    let exp = load_str(&h, Path::new("t.toml")).unwrap();
    let topo = Topology::build(&exp.points[0].scenario, 1).unwrap();
    assert_eq!(
        topo.links[topo.paths[0].forward].config().reorder_at,
        vec![(secs(3.0), 5)]
    );
    // Without `timestamp_message_size` every variant sends `message_size`.
    let t = TrafficSpec::Transfer {
        bytes: braid_sim::units::Size(1000),
        streams: 1,
        message_size: 1000,
        timestamp_message_size: None,
    };
    assert_eq!((t.message_size(true), t.message_size(false)), (1000, 1000));
}

#[test]
fn spike_ranges_sweep_as_pairs() {
    let text = format!(
        "{BASE}[sweep]\n\"path.p1.delay_spikes.every\" = [[\"10s\", \"20s\"], [\"70s\", \"80s\"]]\n"
    );
    let exp = load_str(&text, Path::new("t.toml")).unwrap();
    let every: Vec<String> = exp
        .points
        .iter()
        .map(|p| display_value(p.params.get("path.p1.delay_spikes.every").unwrap()))
        .collect();
    assert_eq!(every, ["[\"10s\", \"20s\"]", "[\"70s\", \"80s\"]"]);
    let sp = exp.points[1].scenario.paths[0]
        .delay_spikes
        .clone()
        .unwrap();
    assert_eq!(sp.every[0].0, Duration::from_secs(70));
}

#[test]
fn aliases_given_twice_and_bad_ranges_are_errors_at_their_key() {
    let d = err(&BASE.replace(
        "delayed_ack = \"150ms\"",
        "delayed_ack = \"150ms\"\nsack_delay = \"200ms\"",
    ));
    assert_at(&d, 4, "association.delayed_ack", "give one of them");
    let d = err(&BASE.replace("\"150ms\"", "\"600ms\""));
    assert_at(&d, 4, "association.delayed_ack", "exceeds 500ms");
    let d = err(&BASE.replace(
        "reorder_rate = 0.02",
        "reorder_rate = 0.02\nhiccup = { rate = 0.01, displacement = 4 }",
    ));
    assert_at(&d, 9, "path.p1.reorder_rate", "give one of them");
    let d = err(&BASE.replace("reorder_rate = 0.02", "reorder_rate = 1.5"));
    assert_at(&d, 9, "path.p1.reorder_rate", "probability in [0, 1]");
    let d = err(&BASE.replace(
        "spike_at = [[\"30s\", \"33s\"]]",
        "spike_at = [[\"30s\", \"33s\"]]\nspikes = { interval = [\"1s\", \"2s\"], length = [\"1s\", \"1s\"] }",
    ));
    assert_at(&d, 11, "path.p1.delay_spikes", "give one of them");
    let d = err(&BASE.replace("[\"10s\", \"20s\"]", "[\"20s\", \"10s\"]"));
    assert_at(&d, 11, "path.p1.delay_spikes.every", "min <= max");
    let d = err(&BASE.replace("[\"3s\", \"10s\"]", "[\"3s\", \"1s\"]"));
    assert_at(&d, 11, "path.p1.delay_spikes.length", "min <= max");
    let d = err(&BASE.replace(
        "[[\"30s\", \"33s\"]]",
        "[[\"30s\", \"33s\"], [\"40s\", \"40s\"]]",
    ));
    assert_at(&d, 12, "path.p1.spike_at.1", "start before it ends");
    let d = err(&BASE.replace(
        "delayed_ack = \"150ms\"",
        "delayed_ack = \"150ms\"\nspurious_detection = \"eifel\"",
    ));
    assert_at(&d, 5, "association.spurious_detection", "eifel-timestamp");
}
