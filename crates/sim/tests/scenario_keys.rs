//! Every setting of the core's `AssociationConfig` is reachable from a scenario: the table
//! below names, for each field (those of `CmtConfig` as `cmt.FIELD`), a scenario line that
//! sets it; the test fails when a field has no line (a new core setting nobody mapped) or
//! when the line does not change what the simulator hands the core.

#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::BTreeSet;
use std::path::Path;

use braid_proto::AssociationConfig;
use braid_sim::load::load_str;
use braid_sim::run::association_config;
use serde_json::Value;

/// Where a line goes: the scenario's top level or its `[association]` table.
#[derive(Clone, Copy)]
enum At {
    Top,
    Association,
}
use At::{Association as A, Top as T};

/// Field, where its line goes, the line.
const KEYS: &[(&str, At, &str)] = &[
    ("rto_initial", A, r#"rto_initial = "3s""#),
    ("rto_min", A, r#"rto_min = "200ms""#),
    ("rto_max", A, r#"rto_max = "30s""#),
    ("rto_alpha", A, "rto_alpha = 0.25"),
    ("rto_beta", A, "rto_beta = 0.5"),
    ("max_burst", A, "max_burst = 8"),
    ("association_max_retrans", A, "association_max_retrans = 5"),
    ("path_max_retrans", A, "path_max_retrans = 2"),
    ("max_init_retransmits", A, "max_init_retransmits = 3"),
    ("hb_interval", A, r#"hb_interval = "5s""#),
    ("sack_delay", A, r#"sack_delay = "50ms""#),
    ("sack_freq", A, "sack_freq = 1"),
    ("outbound_streams", A, "streams = 77"),
    ("max_inbound_streams", A, "max_inbound_streams = 64"),
    ("send_buffer", A, r#"send_buffer = "100KiB""#),
    ("recv_buffer", A, r#"recv_buffer = "100KiB""#),
    ("send_buffer_max", A, r#"send_buffer_max = "1GiB""#),
    ("recv_buffer_max", A, r#"recv_buffer_max = "1GiB""#),
    ("max_message_size", A, r#"max_message_size = "10KiB""#),
    ("path_mtu", A, "path_mtu = 1280"),
    ("udp_encapsulation", T, "udp = true"),
    ("pr_sctp", A, "pr_sctp = false"),
    ("stream_buffer_low", A, r#"stream_buffer_low = "4KiB""#),
    ("max_dup_tsns", A, "max_dup_tsns = 4"),
    ("max_gap_blocks", A, "max_gap_blocks = 64"),
    ("dupthresh", A, "dupthresh = 4"),
    ("cmt", A, "cmt = false"),
    ("cmt.sfr", A, "sfr = false"),
    ("cmt.cuc", A, "cuc = false"),
    ("cmt.dac", A, "dac = false"),
    ("cmt.buffer_splitting", A, r#"buffer_splitting = "both""#),
    (
        "cmt.receive_split",
        A,
        r#"receive_split = "current-window""#,
    ),
    ("cmt.sack_path", A, r#"sack_path = "primary""#),
    ("cmt.window_cover", A, "window_cover = true"),
    ("cmt.send_run", A, "send_run = 8"),
    ("cc", A, r#"cc = "lia""#),
    ("rtx_policy", A, r#"rtx_policy = "cwnd""#),
    ("nr_sack", A, "nr_sack = false"),
    ("nr_sack_policy", A, r#"nr_sack_policy = "delivered""#),
    ("idata", A, "idata = true"),
    ("stream_scheduler", A, r#"stream_scheduler = "fcfs""#),
    ("stream_paths", A, r#"stream_paths = ["B"]"#),
    ("path_pairing", A, r#"path_pairing = "all""#),
    ("pf_max_retrans", A, "pf_max_retrans = 2"),
    ("hb_max_burst", A, "hb_max_burst = 4"),
    ("load_sharing", A, r#"load_sharing = "ls""#),
    ("path_assignment", A, r#"path_assignment = "min-rtt""#),
    ("ls_window_share", A, "ls_window_share = false"),
    ("timeout_handling", A, r#"timeout_handling = "ls""#),
    ("max_data_paths", A, "max_paths = 1"),
    ("path_loss_threshold", A, "path_loss_threshold = 0.1"),
    ("spurious_detection", A, r#"spurious_detection = "duptsn""#),
    ("pacing", A, "pacing = true"),
    ("loss_detection", A, r#"loss_detection = "rack""#),
    ("plpmtud", A, "plpmtud = true"),
    ("pmtu_max_probes", A, "pmtu_max_probes = 5"),
    ("pmtu_raise_interval", A, r#"pmtu_raise_interval = "60s""#),
];

/// A CMT scenario over two paths with `top` at its top level and `assoc` in its
/// `[association]` table, as the core's configuration serialized.
fn config(top: &str, assoc: &str) -> Value {
    let text = format!(
        r#"
        name = "keys"
        duration = "1s"
        {top}
        [[path]]
        name = "A"
        rate = "10Mbit/s"
        delay = "10ms"
        [[path]]
        name = "B"
        rate = "10Mbit/s"
        delay = "10ms"
        [association]
        cmt = true
        {assoc}
        [[traffic]]
        kind = "saturated"
        "#
    );
    // A key may appear twice (`cmt`): the later line is the one under test.
    let text = if assoc.starts_with("cmt =") {
        text.replacen("cmt = true\n", "", 1)
    } else {
        text
    };
    let exp =
        load_str(&text, Path::new("keys.toml")).unwrap_or_else(|e| panic!("{assoc}{top}: {e}"));
    serde_json::to_value(association_config(&exp.points[0].scenario)).unwrap()
}

/// The value of `field` (`cmt.sfr` reads into `cmt`).
fn get<'a>(v: &'a Value, field: &str) -> &'a Value {
    field.split('.').fold(v, |v, k| &v[k])
}

#[test]
fn every_core_setting_has_a_scenario_key() {
    let core = serde_json::to_value(AssociationConfig::default()).unwrap();
    let mut fields = BTreeSet::new();
    for (k, v) in core.as_object().unwrap() {
        fields.insert(k.clone());
        if k == "cmt" {
            let cmt = serde_json::to_value(braid_proto::CmtConfig::default()).unwrap();
            for sub in cmt.as_object().unwrap().keys() {
                fields.insert(format!("cmt.{sub}"));
            }
        }
        let _ = v;
    }
    let mapped: BTreeSet<String> = KEYS.iter().map(|(f, _, _)| f.to_string()).collect();
    let missing: Vec<_> = fields.difference(&mapped).collect();
    let stale: Vec<_> = mapped.difference(&fields).collect();
    assert!(
        missing.is_empty(),
        "core settings without a scenario key: {missing:?}"
    );
    assert!(stale.is_empty(), "keys of no core setting: {stale:?}");
}

#[test]
fn every_scenario_key_reaches_the_core() {
    let base = config("", "");
    let mut unchanged = Vec::new();
    for &(field, at, line) in KEYS {
        let v = match at {
            At::Top => config(line, ""),
            At::Association => config("", line),
        };
        if get(&v, field) == get(&base, field) {
            unchanged.push(format!("{line} left {field} at {}", get(&base, field)));
        }
    }
    assert!(unchanged.is_empty(), "{unchanged:#?}");
}
