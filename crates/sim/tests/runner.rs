//! The experiment runner: scenario files and sweeps, error positions, statistics, output
//! files and determinism, with a stand-in for the simulator's `run`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use braid_sim::load::{self, Diagnostic, Experiment, LoadError};
use braid_sim::plot::{self, PlotSpec, XAxis};
use braid_sim::run::{RunOptions, RunResult, SimError};
use braid_sim::runner::{self, RunnerOptions, SummaryFile};
use braid_sim::scenario::{Scenario, TrafficSpec};
use braid_sim::stats::{Summary, student_t975};
use braid_sim::units::{Dur, Size};

const ONE_PATH: &str = include_str!("../../../scenarios/one-path.toml");
const BENCH: &str = include_str!("../../../scenarios/bench.toml");

fn load_str(text: &str) -> Experiment {
    match load::load_str(text, Path::new("test.toml")) {
        Ok(e) => e,
        Err(e) => panic!("{e}"),
    }
}

fn load_err(text: &str) -> Diagnostic {
    match load::load_str(text, Path::new("bad.toml")) {
        Ok(_) => panic!("loaded"),
        Err(e) => e,
    }
}

fn ms(n: u64) -> Dur {
    Dur(Duration::from_millis(n))
}

/// A stand-in for the simulator: metrics are a function of the scenario and the seed.
fn fake(sc: &Scenario, opts: &RunOptions) -> Result<RunResult, SimError> {
    let buf = sc.association.send_buffer.map_or(0, |s| s.0) as f64;
    let delay = sc.paths[0].delay.0.as_secs_f64();
    let base = (buf * 8.0 / (2.0 * delay) / 1e6).min(10.0);
    let seed = opts.seed as f64;
    // Finish out of order, so that the order of completion differs between --jobs values.
    std::thread::sleep(Duration::from_millis((opts.seed * 7 + 3) % 5));
    let mut metrics = BTreeMap::new();
    metrics.insert("goodput_mbps".to_string(), base + 0.1 * seed);
    metrics.insert("stream0_goodput_mbps".to_string(), base / 2.0);
    metrics.insert("msg_delay_ms_mean".to_string(), delay * 1e3 + seed);
    Ok(RunResult {
        metrics,
        events: 1000 + opts.seed,
        ..RunResult::default()
    })
}

fn no_progress(_: &runner::RunRecord, _: usize, _: usize) {}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("braid-sim-runner-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

// ---------------------------------------------------------------- scenario files and sweeps

#[test]
fn example_files_load() {
    let e = load_str(ONE_PATH);
    assert_eq!(e.name, "one path, 10 Mbit/s");
    assert_eq!(e.seeds, 10);
    assert_eq!(e.points.len(), 6);
    let b = load_str(BENCH);
    assert_eq!(b.points.len(), 1);
    let sc = &b.points[0].scenario;
    assert_eq!(sc.duration, Dur(Duration::from_secs(300)));
    assert_eq!(sc.paths[0].rate.0, 20e6);
    assert_eq!(sc.paths[0].delay, ms(10));
    assert!(matches!(sc.traffic[..], [TrafficSpec::Saturated { .. }]));
}

#[test]
fn sweep_is_the_cartesian_product_first_key_slowest() {
    let e = load_str(ONE_PATH);
    assert_eq!(e.sweep, ["association.send_buffer", "path.A.delay"]);
    let got: Vec<String> = e.points.iter().map(|p| p.params.describe()).collect();
    assert_eq!(
        got,
        [
            "association.send_buffer=16KiB, path.A.delay=10ms",
            "association.send_buffer=16KiB, path.A.delay=50ms",
            "association.send_buffer=32KiB, path.A.delay=10ms",
            "association.send_buffer=32KiB, path.A.delay=50ms",
            "association.send_buffer=64KiB, path.A.delay=10ms",
            "association.send_buffer=64KiB, path.A.delay=50ms",
        ]
    );
    for (i, p) in e.points.iter().enumerate() {
        assert_eq!(p.index, i);
        let kib = [16, 32, 64][i / 2];
        let delay = [10, 50][i % 2];
        assert_eq!(p.scenario.association.send_buffer, Some(Size(kib * 1024)));
        assert_eq!(p.scenario.association.recv_buffer, Some(Size(64 * 1024)));
        assert_eq!(p.scenario.paths[0].delay, ms(delay));
        assert!(p.scenario.sweep.is_empty());
    }
}

#[test]
fn no_sweep_is_one_point() {
    let e = load_str(
        r#"
name = "x"
duration = "1s"
[[path]]
name = "A"
rate = "1Mbit/s"
delay = "1ms"
"#,
    );
    assert!(e.sweep.is_empty());
    assert_eq!(e.points.len(), 1);
    assert!(e.points[0].params.0.is_empty());
    assert_eq!(e.seeds, 1);
}

const TWO_PATHS: &str = r#"
name = "two paths"
duration = "10s"

[[path]]
name = "A"
rate = "10Mbit/s"
delay = "10ms"

[[path]]
name = "B"
rate = "5Mbit/s"
delay = "40ms"

[[traffic]]
kind = "transfer"
bytes = "4MB"
"#;

#[test]
fn keys_address_paths_by_name_and_arrays_by_index() {
    let text = format!(
        "{TWO_PATHS}\n[sweep]\n\"path.B.delay\" = [\"1ms\", \"2ms\"]\n\"path.1.loss\" = [0.0, 0.5]\n\
         \"traffic.0.bytes\" = [\"1MB\"]\n\"association.rto_min\" = [\"100ms\"]\n"
    );
    let e = load_str(&text);
    assert_eq!(e.points.len(), 4);
    for p in &e.points {
        let [a, b] = &p.scenario.paths[..] else {
            panic!("two paths")
        };
        assert_eq!(a.delay, ms(10), "path A untouched");
        assert_eq!(a.loss, 0.0);
        assert_eq!(
            p.scenario.association.rto_min,
            Some(ms(100)),
            "table created"
        );
        assert!(matches!(
            p.scenario.traffic[0],
            TrafficSpec::Transfer {
                bytes: Size(1_000_000),
                ..
            }
        ));
        let want_delay = if p.index < 2 { 1 } else { 2 };
        assert_eq!(b.delay, ms(want_delay));
        assert_eq!(b.loss, [0.0, 0.5][p.index % 2]);
    }
    // Numbers stay numbers in the parameters.
    assert_eq!(
        e.points[1].params.get("path.1.loss"),
        Some(&toml::Value::Float(0.5))
    );
}

#[test]
fn unquoted_dotted_sweep_keys_work_too() {
    let text = format!("{TWO_PATHS}\n[sweep]\npath.A.rate = [\"1Mbit/s\", \"2Mbit/s\"]\n");
    let e = load_str(&text);
    assert_eq!(e.sweep, ["path.A.rate"]);
    assert_eq!(e.points[1].scenario.paths[0].rate.0, 2e6);
}

#[test]
fn variants_are_one_dimension_of_named_overrides() {
    // Three runs, not a product of load sharing × path assignment with an unwanted cell.
    let text = format!(
        "{TWO_PATHS}\n[sweep]\n\"path.B.loss\" = [0.0, 0.01]\n\n\
         [[sweep.variant]]\nname = \"CMT-RR\"\n\"association.load_sharing\" = \"cmt\"\n\n\
         [[sweep.variant]]\nname = \"CMT-fixed\"\n\"association.load_sharing\" = \"cmt\"\n\
         association.stream_scheduler = \"fixed\"\n\n\
         [[sweep.variant]]\nname = \"LS-SCTP\"\n\"association.load_sharing\" = \"ls\"\n"
    );
    let e = load_str(&text);
    assert_eq!(e.sweep, ["path.B.loss", "variant"]);
    let got: Vec<String> = e.points.iter().map(|p| p.params.describe()).collect();
    assert_eq!(
        got,
        [
            "path.B.loss=0.0, variant=CMT-RR",
            "path.B.loss=0.0, variant=CMT-fixed",
            "path.B.loss=0.0, variant=LS-SCTP",
            "path.B.loss=0.01, variant=CMT-RR",
            "path.B.loss=0.01, variant=CMT-fixed",
            "path.B.loss=0.01, variant=LS-SCTP",
        ]
    );
    use braid_proto::SchedulerKind;
    use braid_sim::scenario::LoadSharing;
    let a = |i: usize| &e.points[i].scenario.association;
    assert_eq!(a(0).load_sharing, Some(LoadSharing::Cmt));
    assert_eq!(a(0).stream_scheduler, None);
    assert_eq!(a(1).stream_scheduler, Some(SchedulerKind::Fixed));
    assert_eq!(a(2).load_sharing, Some(LoadSharing::Ls));
    assert_eq!(
        a(2).stream_scheduler,
        None,
        "variants do not leak into each other"
    );
    // The variant is a column of the outputs like any swept key.
    let outcome = runner::run_all(&e, &RunnerOptions::default(), &fake, &no_progress).unwrap();
    let csv = runner::runs_csv(&e, &outcome);
    assert!(csv.starts_with("point,path.B.loss,variant,seed,"), "{csv}");
    assert!(csv.contains("\n1,0.0,CMT-fixed,0,"), "{csv}");
    let summary = runner::summarize(&e, &outcome, 1);
    assert!(runner::summary_csv(&summary).starts_with("point,path.B.loss,variant,metric,"));
}

#[test]
fn zip_walks_keys_together() {
    let text = format!(
        "{TWO_PATHS}\n[sweep]\n\"association.rto_min\" = [\"100ms\", \"200ms\"]\n\n\
         [[sweep.zip]]\n\"path.A.delay\" = [\"5ms\", \"50ms\", \"200ms\"]\n\
         \"path.A.rate\" = [\"100Mbit/s\", \"10Mbit/s\", \"1Mbit/s\"]\n"
    );
    let e = load_str(&text);
    assert_eq!(
        e.sweep,
        ["association.rto_min", "path.A.delay", "path.A.rate"]
    );
    assert_eq!(e.points.len(), 6, "2 × 3, not 2 × 3 × 3");
    let got: Vec<String> = e.points.iter().map(|p| p.params.describe()).collect();
    assert_eq!(
        got[..3],
        [
            "association.rto_min=100ms, path.A.delay=5ms, path.A.rate=100Mbit/s",
            "association.rto_min=100ms, path.A.delay=50ms, path.A.rate=10Mbit/s",
            "association.rto_min=100ms, path.A.delay=200ms, path.A.rate=1Mbit/s",
        ]
    );
    assert_eq!(e.points[4].scenario.paths[0].rate.0, 10e6);
    assert_eq!(e.points[4].scenario.paths[0].delay, ms(50));
}

#[test]
fn variant_and_zip_errors_name_the_entry() {
    let base = format!("{BASE}[[traffic]]\nkind = \"saturated\"\n");
    // Line 9 is the first after BASE and the traffic entry.
    let d = load_err(&format!(
        "{base}[[sweep.zip]]\n\"path.A.delay\" = [\"1ms\", \"2ms\"]\n\"path.A.rate\" = [\"1Mbit/s\"]\n"
    ));
    assert_diag(&d, 11, "sweep \"path.A.rate\"", "same length");
    let d = load_err(&format!(
        "{base}[[sweep.variant]]\nname = \"x\"\n\"path.A.delay\" = \"5 parsecs\"\n"
    ));
    assert_diag(
        &d,
        11,
        "sweep variant \"x\" \"path.A.delay\"",
        "unknown duration unit",
    );
    let d = load_err(&format!(
        "{base}[[sweep.variant]]\n\"path.A.delay\" = \"5ms\"\n"
    ));
    assert_diag(&d, 9, "sweep.variant", "needs a `name`");
    let d = load_err(&format!(
        "{base}[[sweep.variant]]\nname = \"x\"\n[[sweep.variant]]\nname = \"x\"\n"
    ));
    assert_diag(&d, 12, "sweep.variant.name", "two variants are named \"x\"");
    let d = load_err(&format!(
        "{base}[sweep]\n\"path.A.delay\" = [\"1ms\"]\n[[sweep.variant]]\nname = \"x\"\n\"path.0.delay\" = \"5ms\"\n"
    ));
    assert_diag(
        &d,
        13,
        "sweep variant \"x\" \"path.0.delay\"",
        "same value as sweep key \"path.A.delay\"",
    );
}

// ---------------------------------------------------------------- error messages

/// Asserts `d` names the file, line `line` and the key, and mentions `words`.
fn assert_diag(d: &Diagnostic, line: usize, key: &str, words: &str) {
    let msg = d.to_string();
    assert!(
        msg.starts_with(&format!("bad.toml:{line}:")),
        "line {line}: {msg}"
    );
    assert_eq!(d.line, line, "{msg}");
    assert!(msg.contains(key), "key {key:?}: {msg}");
    assert!(msg.contains(words), "{words:?}: {msg}");
}

const BASE: &str = r#"name = "base"
duration = "10s"
[[path]]
name = "A"
rate = "10Mbit/s"
delay = "10ms"
"#;

#[test]
fn unknown_key_is_reported_at_its_line() {
    let d = load_err(&format!("{BASE}dleay = \"5ms\"\n"));
    assert_diag(&d, 7, "path.A.dleay", "unknown field `dleay`");
    let d = load_err(
        "name = \"x\"\nduration = \"1s\"\nsedes = 3\n[[path]]\nname = \"A\"\nrate = \"1Mbit/s\"\ndelay = \"1ms\"\n",
    );
    assert_diag(&d, 3, "sedes", "unknown field");
    let d = load_err(&format!("{BASE}[association]\nsend_bufer = \"4KiB\"\n"));
    assert_diag(&d, 8, "association.send_bufer", "unknown field");
}

#[test]
fn bad_unit_is_reported_at_its_line() {
    let d = load_err(&BASE.replace("\"10ms\"", "\"10 parsecs\""));
    assert_diag(&d, 6, "path.A.delay", "unknown duration unit");
    let d = load_err(&format!(
        "{BASE}[association]\nsend_buffer = \"4 apples\"\n"
    ));
    assert_diag(&d, 8, "association.send_buffer", "unknown size unit");
}

#[test]
fn duration_without_unit_is_reported_at_its_line() {
    let d = load_err(&BASE.replace("\"10ms\"", "10"));
    assert_diag(&d, 6, "path.A.delay", "a duration needs a unit");
    let d = load_err(&BASE.replace("\"10s\"", "\"10\""));
    assert_diag(&d, 2, "duration", "a duration needs a unit");
    let d = load_err(&format!("{BASE}[association]\nrto_min = 1\n"));
    assert_diag(&d, 8, "association.rto_min", "a duration needs a unit");
    let d = load_err(&format!("{BASE}[sweep]\n\"path.A.delay\" = [\"1ms\", 5]\n"));
    assert_diag(&d, 8, "sweep \"path.A.delay\"", "a duration needs a unit");
}

#[test]
fn negative_rate_is_reported_at_its_line() {
    let d = load_err(&BASE.replace("\"10Mbit/s\"", "\"-10Mbit/s\""));
    assert_diag(&d, 5, "path.A.rate", "rate must be positive");
}

#[test]
fn errors_inside_traffic_entries_name_the_entry() {
    let d = load_err(&format!(
        "{BASE}[[traffic]]\nkind = \"transfer\"\nbytes = \"4XB\"\n"
    ));
    assert_diag(&d, 9, "traffic.0.bytes", "unknown size unit");
    let d = load_err(&format!(
        "{BASE}[[traffic]]\nkind = \"saturated\"\nstreams = \"two\"\n"
    ));
    assert_diag(&d, 9, "traffic.0.streams", "invalid type: string \"two\"");
    let d = load_err(&format!("{BASE}[[traffic]]\nkind = \"saturate\"\n"));
    assert_diag(&d, 8, "traffic.0.kind", "unknown variant");
}

#[test]
fn traffic_fields_are_checked_when_the_file_is_loaded() {
    let traffic = |body: &str| load_err(&format!("{BASE}[[traffic]]\n{body}\n"));
    let d = traffic("kind = \"saturated\"\nmessage_size = 0");
    assert_diag(&d, 9, "traffic.0.message_size", "must be at least 1 byte");
    assert_eq!(d.file, "bad.toml");
    let d = traffic("kind = \"saturated\"\nstreams = 0");
    assert_diag(&d, 9, "traffic.0.streams", "must be at least 1");
    let d = traffic("kind = \"transfer\"\nbytes = \"0B\"");
    assert_diag(&d, 9, "traffic.0.bytes", "a transfer of 0 bytes");
    let d = traffic("kind = \"onoff\"\nrate = \"1Mbit/s\"\non = \"0s\"\noff = \"1s\"");
    assert_diag(&d, 10, "traffic.0.on", "on time");
    let d =
        traffic("kind = \"saturated\"\nmessage_size = 100000\n[association]\nbuffer = \"64KiB\"");
    assert_diag(
        &d,
        9,
        "traffic.0.message_size",
        "exceed the largest message",
    );
    // A default that breaks a rule: at the entry that leaves it unset.
    let d = traffic("kind = \"saturated\"\n[association]\nbuffer = \"1KiB\"");
    assert_diag(&d, 7, "traffic.0.message_size", "1452 bytes exceed");
    // A swept value: at the value in [sweep].
    let d = traffic("kind = \"saturated\"\n[sweep]\n\"traffic.0.message_size\" = [1000, 0]");
    assert_diag(
        &d,
        10,
        "sweep \"traffic.0.message_size\"",
        "must be at least 1 byte",
    );
}

#[test]
fn a_file_without_traffic_says_which_source_it_gets() {
    let e = load_str(BASE);
    assert_eq!(e.notes.len(), 1);
    assert!(
        e.notes[0].starts_with("test.toml: no [[traffic]]: the sender runs the default source, one saturated stream of 1452-byte"),
        "{:?}",
        e.notes
    );
    let e = load_str(&format!("{BASE}[[traffic]]\nkind = \"saturated\"\n"));
    assert!(e.notes.is_empty());
}

#[test]
fn syntax_error_is_reported_at_its_line() {
    let d = load_err(&BASE.replace("\"10ms\"", "10ms"));
    assert_diag(&d, 6, "path.delay", "");
}

#[test]
fn missing_key_is_reported() {
    let d = load_err(&BASE.replace("delay = \"10ms\"\n", ""));
    assert_diag(&d, 3, "path.A", "missing field `delay`");
}

#[test]
fn path_named_twice_is_reported_at_the_second_name() {
    let d = load_err(&format!(
        "{BASE}[[path]]\nname = \"A\"\nrate = \"1Mbit/s\"\ndelay = \"1ms\"\n"
    ));
    assert_diag(&d, 8, "path.1.name", "two paths are named \"A\"");
    assert!(d.message.contains("first on line 4"), "{d}");
}

#[test]
fn bad_sweep_key_is_reported_at_the_sweep_entry() {
    let sweep = |entry: &str| load_err(&format!("{BASE}[sweep]\n{entry}\n"));
    let d = sweep("\"path.B.delay\" = [\"1ms\"]");
    assert_diag(
        &d,
        8,
        "sweep \"path.B.delay\"",
        "no entry named \"B\" (entries: \"A\")",
    );
    let d = sweep("\"path.A.delay.x\" = [\"1ms\"]");
    assert_diag(&d, 8, "sweep \"path.A.delay.x\"", "is a value, not a table");
    let d = sweep("\"path.A.delay\" = \"1ms\"");
    assert_diag(&d, 8, "sweep \"path.A.delay\"", "a list of values");
    let d = sweep("\"path.A.delay\" = []");
    assert_diag(&d, 8, "sweep \"path.A.delay\"", "empty");
    let d = sweep("\"seeds\" = [1, 2]");
    assert_diag(&d, 8, "sweep \"seeds\"", "cannot be swept");
    let d = sweep("\"path.A.delay\" = [\"1ms\"]\n\"path.0.delay\" = [\"2ms\"]");
    assert_diag(&d, 9, "sweep \"path.0.delay\"", "same value");
    // A key the scenario does not know, added only by the sweep.
    let d = sweep("\"association.sned_buffer\" = [\"1KiB\"]");
    assert_diag(
        &d,
        8,
        "sweep \"association.sned_buffer\"",
        "unknown field `sned_buffer`",
    );
    let d = sweep("\"assocation.send_buffer\" = [\"1KiB\"]");
    assert_diag(
        &d,
        8,
        "sweep \"assocation.send_buffer\"",
        "unknown field `assocation`",
    );
}

#[test]
fn bad_swept_value_is_reported_at_the_sweep_entry() {
    let d = load_err(&format!(
        "{BASE}[sweep]\n\"path.A.rate\" = [\"1Mbit/s\"]\n\"path.A.delay\" = [\"1ms\",\n  \"5 parsecs\"]\n"
    ));
    assert_diag(&d, 10, "sweep \"path.A.delay\"", "unknown duration unit");
    let d = load_err(&format!(
        "{BASE}[sweep]\n\"path.A.rate\" = [\"1Mbit/s\", \"-1Mbit/s\"]\n"
    ));
    assert_diag(&d, 8, "sweep \"path.A.rate\"", "rate must be positive");
    let d = load_err(&format!("{BASE}[sweep]\n\"path.A.loss\" = [0.1, 1.5]\n"));
    assert_diag(&d, 8, "sweep \"path.A.loss\"", "probability");
    let d = load_err(&format!(
        "{BASE}[[traffic]]\nkind = \"transfer\"\nbytes = \"4MB\"\n[sweep]\n\"traffic.0.bytes\" = [\"4XB\"]\n"
    ));
    assert_diag(&d, 11, "sweep \"traffic.0.bytes\"", "unknown size unit");
}

#[test]
fn semantic_errors_have_positions() {
    let d = load_err(&format!("{BASE}loss = 2.0\n"));
    assert_diag(&d, 7, "path.A.loss", "probability");
    let d = load_err(&BASE.replace("duration = \"10s\"", "duration = \"10s\"\nwarmup = \"20s\""));
    assert_diag(&d, 3, "warmup", "shorter than the duration");
    let d = load_err(&format!("{BASE}[pcap]\npath = \"Z\"\n"));
    assert_diag(&d, 8, "pcap.path", "no path named \"Z\"");
}

#[test]
fn association_settings_the_core_refuses_are_reported_at_their_key() {
    let assoc = |kv: &str| load_err(&format!("{BASE}[association]\n{kv}\n"));
    let d = assoc("sack_delay = \"600ms\"");
    assert_diag(&d, 8, "association.sack_delay", "exceeds 500ms");
    let d = assoc("rto_min = \"2s\"");
    assert_diag(
        &d,
        8,
        "association.rto_min",
        "rto_min (2s) <= rto_initial (1s)",
    );
    let d = assoc("max_burst = 0");
    assert_diag(&d, 8, "association.max_burst", "must not be 0");
    let d = assoc("buffer = \"64KiB\"\nmax_message_size = \"100KiB\"");
    assert_diag(
        &d,
        9,
        "association.max_message_size",
        "max_message_size (102400) exceeds send_buffer (65536)",
    );
    // An unset max_message_size follows the buffers.
    let e = load_str(&format!("{BASE}[association]\nrecv_buffer = \"16KiB\"\n"));
    let c = braid_sim::run::association_config(&e.points[0].scenario);
    assert_eq!(c.max_message_size, 16 * 1024);
    // Swept values too.
    let d = load_err(&format!(
        "{BASE}[sweep]\n\"association.sack_delay\" = [\"200ms\", \"1s\"]\n"
    ));
    assert_diag(&d, 8, "sweep \"association.sack_delay\"", "exceeds 500ms");
}

#[test]
fn path_mtu_is_bounded() {
    let d = load_err(&format!("{BASE}mtu = 70000\n"));
    assert_diag(
        &d,
        7,
        "path.A.mtu",
        "70000 exceeds 65535, the largest IP packet",
    );
    // The first path's mtu is the core's initial path MTU: at least 1200.
    let d = load_err(&format!("{BASE}mtu = 1000\n"));
    assert_diag(&d, 7, "path.A.mtu", "1000 is outside 1200..=65535");
    let second = "[[path]]\nname = \"B\"\nrate = \"1Mbit/s\"\ndelay = \"1ms\"\n";
    let d = load_err(&format!("{BASE}{second}mtu = 65536\n"));
    assert_diag(&d, 11, "path.B.mtu", "exceeds 65535");
    // A smaller link MTU further on is a scenario (ICMP "too big", path MTU discovery).
    load_str(&format!("{BASE}{second}mtu = 576\n"));
    // The simulator refuses them too, without the loader.
    let mut sc = load_str(BASE).points.remove(0).scenario;
    sc.paths[0].mtu = 70000;
    let e = braid_sim::run::run(&sc, &RunOptions::default()).unwrap_err();
    assert!(e.to_string().contains("exceeds 65535"), "{e}");
    sc.paths[0].mtu = 1199;
    let e = braid_sim::run::validate(&sc).unwrap_err();
    assert!(e.to_string().contains("is outside 1200..=65535"), "{e}");
}

#[test]
fn bad_names_of_the_core_s_enums_list_the_valid_ones() {
    // The messages are those of the simulator's former mirrored enums, word for word.
    let assoc = |kv: &str| load_err(&format!("{BASE}[association]\n{kv}\n"));
    let d = assoc("cc = \"bbr\"");
    assert_diag(
        &d,
        8,
        "association.cc",
        "unknown variant `bbr`, expected one of `reno`, `cmt-rpv1`, `cmt-rpv2`, `lia`, `cubic`, `cubic-linux`",
    );
    let d = assoc("rtx_policy = \"fastest\"");
    assert_diag(
        &d,
        8,
        "association.rtx_policy",
        "unknown variant `fastest`, expected one of `same`, `asap`, `cwnd`, `ssthresh`, \
         `lossrate`",
    );
    let d = assoc("buffer_splitting = \"half\"");
    assert_diag(
        &d,
        8,
        "association.buffer_splitting",
        "unknown variant `half`, expected one of `none`, `send`, `receive`, `both`",
    );
    let d = assoc("stream_scheduler = \"RR\"");
    assert_diag(
        &d,
        8,
        "association.stream_scheduler",
        "unknown variant `RR`, expected one of `fcfs`, `rr`, `rr-packet`, `priority`, `fc`, \
         `wfq`, `fixed`, `adaptive`",
    );
    let d = assoc("cc = 3");
    assert_diag(&d, 8, "association.cc", "wanted string or table");
    let d = load_err(&format!(
        "{BASE}[sweep]\n\"association.cc\" = [\"reno\", \"bbr\"]\n"
    ));
    assert_diag(&d, 8, "sweep \"association.cc\"", "unknown variant `bbr`");
}

#[test]
fn unreadable_file_names_the_file() {
    match load::load(Path::new("/nonexistent/x.toml")) {
        Err(e @ LoadError::Io { .. }) => assert!(e.to_string().contains("/nonexistent/x.toml")),
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------- statistics

#[test]
fn stats_against_hand_computed_values() {
    // 1..=5: mean 3, s² = 10/4, s = 1.58113883, t(0.975, 4) = 2.776445105,
    // ci95 = 2.776445105 · 1.58113883 / √5 = 1.963243161.
    let s = Summary::of(&[1.0, 2.0, 3.0, 4.0, 5.0]);
    assert_eq!(s.n, 5);
    assert!((s.mean - 3.0).abs() < 1e-12);
    assert!((s.std - 1.581_138_830).abs() < 1e-9);
    assert!((s.ci95 - 1.963_243_161).abs() < 1e-6, "{}", s.ci95);
    assert_eq!((s.min, s.max), (1.0, 5.0));
    // Two values 10, 12: mean 11, s = √2, ci95 = 12.706204736 · √2 / √2 = 12.706204736.
    let s = Summary::of(&[10.0, 12.0]);
    assert!((s.ci95 - 12.706_204_736).abs() < 1e-9);
    // n = 1: no spread known.
    let s = Summary::of(&[7.0]);
    assert_eq!((s.n, s.mean), (1, 7.0));
    assert!(s.std.is_nan() && s.ci95.is_nan());
    // NaN values are left out.
    let s = Summary::of(&[1.0, f64::NAN, 3.0]);
    assert_eq!((s.n, s.mean), (2, 2.0));
    assert!(Summary::of(&[]).mean.is_nan());
    // Table and expansion.
    assert!((student_t975(9) - 2.262_157).abs() < 1e-6);
    assert!((student_t975(60) - 2.000_298).abs() < 1e-5);
}

// ---------------------------------------------------------------- runs and outputs

fn run_into(dir: &Path, jobs: usize, seeds: Option<u32>) -> runner::Report {
    let e = load_str(ONE_PATH);
    let opts = RunnerOptions {
        jobs,
        seeds,
        out: None,
        ..RunnerOptions::default()
    };
    runner::run_experiment(&e, dir, &opts, &fake, &no_progress).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn runs_csv_and_summary_shape() {
    let dir = temp_dir("shape");
    let report = run_into(&dir, 2, Some(3));
    assert_eq!(report.outcome.runs.len(), 6 * 3);
    assert_eq!(report.outcome.failures().count(), 0);

    let runs = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    let lines: Vec<&str> = runs.lines().collect();
    assert_eq!(
        lines[0],
        "point,association.send_buffer,path.A.delay,seed,goodput_mbps,msg_delay_ms_mean,\
         stream0_goodput_mbps,events,error"
    );
    assert_eq!(lines.len(), 1 + 18);
    assert!(lines[1].starts_with("0,16KiB,10ms,0,"), "{}", lines[1]);
    assert!(lines[2].starts_with("0,16KiB,10ms,1,"), "{}", lines[2]);
    assert!(lines[18].starts_with("5,64KiB,50ms,2,"), "{}", lines[18]);
    assert!(lines[18].ends_with(",1002,"), "{}", lines[18]);

    let summary_csv = std::fs::read_to_string(dir.join("summary.csv")).unwrap();
    let s_lines: Vec<&str> = summary_csv.lines().collect();
    assert_eq!(
        s_lines[0],
        "point,association.send_buffer,path.A.delay,metric,n,mean,std,ci95,min,max"
    );
    assert_eq!(s_lines.len(), 1 + 6 * 3);
    assert!(s_lines[1].starts_with("0,16KiB,10ms,goodput_mbps,3,"));

    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(json["scenario"], "one path, 10 Mbit/s");
    assert_eq!(json["seeds"], 3);
    let points = json["points"].as_array().unwrap();
    assert_eq!(points.len(), 6);
    let p0 = &points[0];
    assert_eq!(p0["params"]["association.send_buffer"], "16KiB");
    assert_eq!(p0["params"]["path.A.delay"], "10ms");
    // goodput = min(16384·8 / 0.02 / 1e6, 10) = 6.5536 + 0.1·seed over seeds 0, 1, 2.
    let g = &p0["metrics"]["goodput_mbps"];
    assert_eq!(g["n"], 3);
    assert!((g["mean"].as_f64().unwrap() - 6.6536).abs() < 1e-9);
    // s = 0.1, ci95 = t(0.975, 2) · 0.1 / √3.
    let ci = 4.302_652_730 * 0.1 / 3f64.sqrt();
    assert!((g["ci95"].as_f64().unwrap() - ci).abs() < 1e-9);
    for m in ["stream0_goodput_mbps", "msg_delay_ms_mean"] {
        assert!(p0["metrics"][m]["mean"].is_number(), "{m}");
    }
    // The file reads back as what was written.
    let back: SummaryFile =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
    // (NaN ≠ NaN: compare a field without NaNs.)
    assert_eq!(back.points[5].params, report.summary.points[5].params);
    assert_eq!(
        back.points[5].metrics["goodput_mbps"],
        report.summary.points[5].metrics["goodput_mbps"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn results_do_not_depend_on_jobs() {
    let files = |jobs: usize| {
        let dir = temp_dir(&format!("jobs{jobs}"));
        run_into(&dir, jobs, Some(4));
        let out: Vec<Vec<u8>> = ["runs.csv", "summary.csv", "summary.json"]
            .iter()
            .map(|f| std::fs::read(dir.join(f)).unwrap())
            .collect();
        let _ = std::fs::remove_dir_all(&dir);
        out
    };
    let one = files(1);
    assert_eq!(one, files(2));
    assert_eq!(one, files(5));
}

#[test]
fn seed_i_of_every_point_is_seed_i() {
    let seen = Mutex::new(Vec::new());
    let record = |sc: &Scenario, o: &RunOptions| {
        let delay = sc.paths[0].delay.0.as_millis();
        seen.lock().unwrap().push((delay, o.seed));
        fake(sc, o)
    };
    let e = load_str(ONE_PATH);
    let opts = RunnerOptions {
        jobs: 3,
        seeds: None,
        out: None,
        ..RunnerOptions::default()
    };
    let out = runner::run_all(&e, &opts, &record, &no_progress).unwrap();
    assert_eq!(out.runs.len(), 60);
    let mut seen = seen.into_inner().unwrap();
    seen.sort_unstable();
    let mut want: Vec<(u128, u64)> = (0..3)
        .flat_map(|_| {
            [10, 50]
                .into_iter()
                .flat_map(|d| (0..10).map(move |s| (d, s)))
        })
        .collect();
    want.sort_unstable();
    assert_eq!(seen, want);
    for (i, r) in out.runs.iter().enumerate() {
        assert_eq!((r.point, r.seed), (i / 10, (i % 10) as u64));
    }
}

#[test]
fn failed_runs_are_reported_and_the_rest_written() {
    let flaky = |sc: &Scenario, o: &RunOptions| {
        let delay = sc.paths[0].delay.0.as_millis();
        let buf = sc.association.send_buffer.map_or(0, |s| s.0);
        if delay == 50 && buf == 16 * 1024 && o.seed == 1 {
            return Err(SimError::Scenario("boom".into()));
        }
        if delay == 10 && buf == 64 * 1024 && o.seed == 0 {
            panic!("engine bug");
        }
        fake(sc, o)
    };
    let dir = temp_dir("fail");
    let e = load_str(ONE_PATH);
    let opts = RunnerOptions {
        jobs: 2,
        seeds: Some(2),
        out: None,
        ..RunnerOptions::default()
    };
    let report = runner::run_experiment(&e, &dir, &opts, &flaky, &no_progress).unwrap();
    let failed: Vec<(usize, u64, String)> = report
        .outcome
        .failures()
        .map(|r| (r.point, r.seed, r.result.clone().unwrap_err()))
        .collect();
    assert_eq!(
        failed,
        [
            (1, 1, "scenario: boom".to_string()),
            (4, 0, "panicked: engine bug".to_string())
        ]
    );
    let runs = std::fs::read_to_string(dir.join("runs.csv")).unwrap();
    assert_eq!(runs.lines().count(), 1 + 12);
    assert!(
        runs.contains("\n1,16KiB,50ms,1,,,,,scenario: boom\n"),
        "{runs}"
    );
    assert_eq!(report.summary.points[1].failed, 1);
    assert_eq!(report.summary.points[1].metrics["goodput_mbps"].n, 1);
    assert!(
        report.summary.points[1].metrics["goodput_mbps"]
            .ci95
            .is_nan()
    );
    // NaN is null in JSON.
    let json = std::fs::read_to_string(dir.join("summary.json")).unwrap();
    assert!(json.contains("\"ci95\": null"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn pcap_and_timeseries_files_per_run() {
    let text = format!(
        "timeseries = \"100ms\"\n{BASE}[pcap]\npath = \"A\"\n[sweep]\n\"path.A.delay\" = [\"1ms\", \"2ms\"]\n"
    );
    let e = load_str(&text);
    assert!(e.points[0].scenario.pcap.is_some());
    let seen = Mutex::new(Vec::new());
    let record = |sc: &Scenario, o: &RunOptions| {
        seen.lock()
            .unwrap()
            .push((o.pcap.clone(), o.timeseries.clone()));
        fake(sc, o)
    };
    let dir = temp_dir("pcap");
    let opts = RunnerOptions {
        jobs: 1,
        seeds: Some(2),
        out: None,
        ..RunnerOptions::default()
    };
    runner::run_experiment(&e, &dir, &opts, &record, &no_progress).unwrap();
    let seen = seen.into_inner().unwrap();
    assert_eq!(seen.len(), 4);
    assert!(seen.contains(&(
        Some(dir.join("pcap/point1-seed0.pcap")),
        Some(dir.join("timeseries/point1-seed0.csv"))
    )));
    assert!(dir.join("pcap").is_dir());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn real_engine_through_the_runner_is_independent_of_jobs() {
    // The simulator itself, briefly: 2 points × 2 seeds of 2 simulated seconds.
    let text = r#"
name = "short"
duration = "2s"
warmup = "0.5s"
seeds = 2
[[path]]
name = "A"
rate = "2Mbit/s"
delay = "5ms"
loss = 0.01
[[traffic]]
kind = "saturated"
[sweep]
"path.A.delay" = ["5ms", "20ms"]
"#;
    let e = load_str(text);
    let files = |jobs: usize| {
        let dir = temp_dir(&format!("real{jobs}"));
        let opts = RunnerOptions {
            jobs,
            ..RunnerOptions::default()
        };
        let report =
            runner::run_experiment(&e, &dir, &opts, &braid_sim::run::run, &no_progress).unwrap();
        assert_eq!(report.outcome.failures().count(), 0, "{:?}", report.outcome);
        assert!(
            report.summary.points[0]
                .metrics
                .contains_key("goodput_mbps")
        );
        let out: Vec<Vec<u8>> = ["runs.csv", "summary.csv", "summary.json"]
            .iter()
            .map(|f| std::fs::read(dir.join(f)).unwrap())
            .collect();
        let _ = std::fs::remove_dir_all(&dir);
        out
    };
    assert_eq!(files(1), files(2));
}

// ---------------------------------------------------------------- plots

#[test]
fn plot_with_units_curves_and_both_formats() {
    let dir = temp_dir("plot");
    run_into(&dir, 2, Some(3));
    let spec = PlotSpec {
        x: "association.send_buffer".into(),
        y: "goodput_mbps".into(),
        curves: vec!["path.A.delay".into()],
        ..PlotSpec::default()
    };
    let png = dir.join("goodput.png");
    let chart = plot::plot(&dir, &spec, &png).unwrap();
    // Axis and legend text in words, with units.
    assert_eq!(chart.x_label, "Send buffer (KiB)");
    assert_eq!(chart.y_label, "Goodput (Mbit/s)");
    assert!(matches!(&chart.x_axis, XAxis::Numeric { unit, .. } if unit == "KiB"));
    assert_eq!(chart.series.len(), 2);
    assert_eq!(chart.series[1].label.as_deref(), Some("δA = 50ms"));
    let xs: Vec<f64> = chart.series[0].points.iter().map(|p| p.x).collect();
    assert_eq!(xs, [16.0, 32.0, 64.0]);
    assert!(
        chart.series[0]
            .points
            .iter()
            .all(|p| p.n == 3 && p.ci95 > 0.0)
    );
    let bytes = std::fs::read(&png).unwrap();
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n"));
    let svg_path = dir.join("goodput.svg");
    plot::plot(&dir, &spec, &svg_path).unwrap();
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.contains("<svg") && svg.contains("Goodput (Mbit/s)"));

    // Delay on x in ms, one curve: the buffer must be held.
    let mut by_delay = PlotSpec {
        x: "path.A.delay".into(),
        y: "msg_delay_ms_mean".into(),
        ..PlotSpec::default()
    };
    let err = plot::plot(&dir, &by_delay, &png).unwrap_err().to_string();
    assert!(
        err.contains("\"association.send_buffer\" also varies"),
        "{err}"
    );
    by_delay.fix = vec![("association.send_buffer".into(), "32KiB".into())];
    let chart = plot::plot(&dir, &by_delay, &svg_path).unwrap();
    assert_eq!(chart.x_label, "δA (ms)");
    assert_eq!(chart.y_label, "Message delay (ms)");
    let xs: Vec<f64> = chart.series[0].points.iter().map(|p| p.x).collect();
    assert_eq!(xs, [10.0, 50.0]);

    let bad = PlotSpec {
        y: "nope".into(),
        ..spec.clone()
    };
    let err = plot::plot(&dir, &bad, &png).unwrap_err().to_string();
    assert!(err.contains("no metric \"nope\""), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A summary of `text` run with the stand-in simulator.
fn summary_of(text: &str, seeds: u32) -> SummaryFile {
    let e = load_str(text);
    let opts = RunnerOptions {
        seeds: Some(seeds),
        ..RunnerOptions::default()
    };
    let outcome = runner::run_all(&e, &opts, &fake, &no_progress).expect("the stand-in runs");
    runner::summarize(&e, &outcome, seeds)
}

#[test]
fn curves_over_several_keys_and_variants() {
    let text = format!(
        "{TWO_PATHS}\n[association]\nsend_buffer = \"64KiB\"\n[sweep]\n\
         \"path.A.delay\" = [\"10ms\", \"50ms\"]\n\"path.B.loss\" = [0.0, 0.01]\n\
         \"association.cmt\" = [false, true]\n\n\
         [[sweep.variant]]\nname = \"CMT-RR\"\n[[sweep.variant]]\nname = \"LS-SCTP\"\n\
         \"association.load_sharing\" = \"ls\"\n"
    );
    let summary = summary_of(&text, 2);
    let spec = PlotSpec {
        x: "path.A.delay".into(),
        y: "goodput_mbps".into(),
        curves: vec!["path.B.loss".into(), "association.cmt".into()],
        fix: vec![("variant".into(), "LS-SCTP".into())],
        ..PlotSpec::default()
    };
    let chart = plot::prepare(&summary, &spec).unwrap();
    let labels: Vec<&str> = chart
        .series
        .iter()
        .map(|s| s.label.as_deref().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "Loss on B = 0.0, CMT = false",
            "Loss on B = 0.0, CMT = true",
            "Loss on B = 0.01, CMT = false",
            "Loss on B = 0.01, CMT = true",
        ]
    );
    // A held key is named in words in the title, not as a raw key (a variant by its name).
    assert!(chart.title.ends_with("[LS-SCTP]"), "{}", chart.title);
    // Variants as curves: legends are the names.
    let spec = PlotSpec {
        curves: vec!["variant".into(), "association.cmt".into()],
        fix: vec![("path.B.loss".into(), "0.0".into())],
        ..spec
    };
    let chart = plot::prepare(&summary, &spec).unwrap();
    // In order of first appearance: the variant varies fastest in this file.
    assert_eq!(
        chart.series[1].label.as_deref(),
        Some("LS-SCTP, CMT = false")
    );
    assert_eq!(chart.x_label, "δA (ms)");
}

#[test]
fn log_axes_refuse_what_they_cannot_show() {
    let text = format!("{BASE}[sweep]\n\"path.A.delay\" = [\"1ms\", \"10ms\", \"100ms\"]\n");
    let summary = summary_of(&text, 2);
    let spec = PlotSpec {
        x: "path.A.delay".into(),
        y: "msg_delay_ms_mean".into(),
        log_x: true,
        log_y: true,
        ..PlotSpec::default()
    };
    let chart = plot::prepare(&summary, &spec).unwrap();
    assert!(chart.log_x && chart.log_y);
    let dir = temp_dir("log");
    std::fs::create_dir_all(&dir).unwrap();
    plot::render(&chart, &dir.join("log.svg")).unwrap();
    // The stand-in's stream goodput is 0 without a send buffer: no place on a log axis.
    let bad = PlotSpec {
        y: "stream0_goodput_mbps".into(),
        ..spec.clone()
    };
    let err = plot::prepare(&summary, &bad).unwrap_err().to_string();
    assert!(
        err.contains("--log-y needs positive values; stream0_goodput_mbps is 0"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn long_titles_wrap_and_the_palette_has_no_yellow() {
    // Ten pixels per character, lines of at most 100 pixels.
    let lines = plot::wrap("a title far too long to fit one line", 100, |t| {
        10 * t.chars().count() as u32
    });
    assert_eq!(lines, ["a title", "far too", "long to", "fit one", "line"]);
    for c in plot::PALETTE {
        let (r, g, b) = (c.0, c.1, c.2);
        assert!(!(r > 200 && g > 200 && b < 120), "yellow: {c:?}");
    }
}

#[test]
fn plot_errors_are_words() {
    let dir = temp_dir("plot-err");
    run_into(&dir, 1, Some(2));
    let spec = PlotSpec {
        x: "association.send_buffer".into(),
        y: "goodput_mbps".into(),
        curves: vec!["path.A.delay".into()],
        ..PlotSpec::default()
    };
    let err = plot::plot(&dir, &spec, &dir.join("no/such/dir/g.png"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("cannot write the image"), "{err}");
    assert!(!err.contains("IOError") && !err.contains("Os {"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn axis_values_parse_with_units() {
    use braid_sim::plot::{Kind, quantity};
    let s = |x: &str| quantity(&toml::Value::String(x.into()));
    assert_eq!(s("16KiB"), Some((Kind::Size, 16384.0)));
    assert_eq!(s("4MB"), Some((Kind::Size, 4e6)));
    assert_eq!(s("50ms"), Some((Kind::Duration, 0.05)));
    assert_eq!(s("10Mbit/s"), Some((Kind::Rate, 10e6)));
    assert_eq!(s("12"), Some((Kind::Number, 12.0)));
    assert_eq!(s("reno"), None);
    assert_eq!(
        quantity(&toml::Value::Integer(100)),
        Some((Kind::Number, 100.0))
    );
}
