//! A path removed mid-run (`removed_at`): the simulated interface goes away with data in
//! flight, the sender removes the path, and every message still arrives.

#![allow(missing_docs, clippy::unwrap_used)]

use braid_sim::run::{self, RunOptions};
use braid_sim::scenario::Scenario;

fn scenario(removed: &str) -> Scenario {
    let toml = format!(
        r#"
        name = "path removal"
        duration = "10s"
        timeseries = "100ms"
        [[path]]
        name = "A"
        rate = "20Mbit/s"
        delay = "10ms"
        [[path]]
        name = "B"
        rate = "20Mbit/s"
        delay = "10ms"
        {removed}
        [association]
        cmt = true
        [[traffic]]
        kind = "saturated"
        "#
    );
    toml::from_str(&toml).unwrap()
}

#[test]
fn a_path_removed_with_data_in_flight_loses_no_message() {
    let s = scenario(
        r#"down = [["4s", "10s"]]
        removed_at = "4s""#,
    );
    let csv = std::env::temp_dir().join(format!("braid-path-removal-{}.csv", std::process::id()));
    let opts = RunOptions {
        timeseries: Some(csv.clone()),
        ..RunOptions::default()
    };
    let r = run::run(&s, &opts).unwrap();
    let series = std::fs::read_to_string(&csv).unwrap();
    std::fs::remove_file(&csv).unwrap();
    r.check_integrity().unwrap();
    let m = &r.metrics;
    println!(
        "A {:.2} Mbit/s, B {:.2} Mbit/s, B rtx {}",
        m["path_A_goodput_mbps"], m["path_B_goodput_mbps"], m["path_B_retransmissions"]
    );
    // B carried data until 4 s, then nothing: A alone carries the rest at its rate.
    assert!(m["path_B_goodput_mbps"] > 3.0, "{m:?}");
    assert!(m["path_A_goodput_mbps"] > 15.0, "{m:?}");
    let listed = |l: &&str| l.split(',').nth(1) == Some("B");
    assert!(series.lines().filter(listed).count() > 30, "B never listed");
    let after: Vec<&str> = series
        .lines()
        .filter(listed)
        .filter(|l| l.split(',').next().unwrap().parse::<f64>().unwrap() > 4.0)
        .collect();
    assert!(
        after.is_empty(),
        "B still listed after its removal: {after:?}"
    );
}

#[test]
fn removing_the_only_path_is_the_runs_error() {
    let mut s = scenario("");
    s.paths.truncate(1);
    s.paths[0].removed_at = Some(braid_sim::units::Dur(std::time::Duration::from_secs(2)));
    let e = run::run(&s, &RunOptions::default()).unwrap_err();
    assert!(e.to_string().contains("path.A.removed_at"), "{e}");
}
