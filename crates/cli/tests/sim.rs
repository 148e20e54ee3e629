//! `braid sim` as a subprocess: what a user sees for a scenario the simulator refuses, the
//! progress it reports, and plots of a run's time series (`sim plot --timeseries`) and
//! time-sequence record (`sim plot --sequence`).

#![allow(clippy::unwrap_used)]

use std::process::{Command, Output};

const BRAID: &str = env!("CARGO_BIN_EXE_braid");

/// `braid sim run` on a scenario file `name` with `text`, in a directory of its own
/// (removed afterwards), with stderr captured (not a terminal).
fn sim_run(name: &str, text: &str) -> Output {
    let dir = std::env::temp_dir().join(format!("braid-cli-sim-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(name);
    std::fs::write(&file, text).unwrap();
    let o = Command::new(BRAID)
        .args(["sim", "run"])
        .arg(&file)
        .arg("--out")
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    o
}

#[test]
fn sim_run_refuses_a_path_mtu_above_65535_naming_the_key() {
    let o = sim_run(
        "big-mtu.toml",
        "name = \"big\"\nduration = \"1s\"\n[[path]]\nname = \"A\"\nrate = \"1Gbit/s\"\n\
         delay = \"1ms\"\nmtu = 70000\n",
    );
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("big-mtu.toml:7:7: path.A.mtu: 70000 exceeds 65535, the largest IP packet"),
        "{e}"
    );
}

#[test]
fn sim_run_reports_progress_in_lines_when_stderr_is_not_a_terminal() {
    let o = sim_run(
        "short.toml",
        "name = \"short\"\nduration = \"2s\"\nseeds = 3\n[[path]]\nname = \"A\"\n\
         rate = \"10Mbit/s\"\ndelay = \"5ms\"\n[[traffic]]\nkind = \"saturated\"\n",
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // The last line says every run is done.
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("progress: 3/3 runs"), "{e}");
}

/// `braid` with `args` in `dir`.
fn braid_in(dir: &std::path::Path, args: &[&str]) -> Output {
    Command::new(BRAID)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

#[test]
fn sim_plot_draws_a_runs_time_series_and_names_what_is_missing() {
    let dir = std::env::temp_dir().join(format!("braid-cli-sim-{}-ts", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("ts.toml"),
        "name = \"ts\"\nduration = \"2s\"\ntimeseries = \"100ms\"\n\
         [[path]]\nname = \"A\"\nrate = \"5Mbit/s\"\ndelay = \"5ms\"\n\
         [[path]]\nname = \"B\"\nrate = \"5Mbit/s\"\ndelay = \"20ms\"\n\
         [association]\ncmt = true\n[[traffic]]\nkind = \"saturated\"\n",
    )
    .unwrap();
    let o = braid_in(
        &dir,
        &["sim", "run", "ts.toml", "--out", "out", "--jobs", "1"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(dir.join("out/timeseries/point0-seed0.csv").is_file());

    let o = braid_in(
        &dir,
        &[
            "sim",
            "plot",
            "out",
            "--timeseries",
            "point0-seed0",
            "--y",
            "cwnd,srtt_ms,cum_tsn",
            "--out",
            "cwnd.png",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    // cwnd and srtt per path, cum_tsn once; bytes, ms and TSNs in panels of their own.
    assert!(text.contains("5 curves in 3 panels"), "{text}");
    let png = std::fs::read(dir.join("cwnd.png")).unwrap();
    assert!(png.starts_with(b"\x89PNG"), "not a PNG");

    // The same file by name, as SVG.
    let o = braid_in(
        &dir,
        &[
            "sim",
            "plot",
            "--series",
            "out/timeseries/point0-seed0.csv",
            "--y",
            "flight_size",
            "--out",
            "flight.svg",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::metadata(dir.join("flight.svg")).unwrap().len() > 0);

    // Each refusal names what is wrong; `wants` are pieces of its message.
    let refused = |args: &[&str], wants: &[&str]| {
        let mut argv = vec!["sim", "plot", "out"];
        argv.extend_from_slice(args);
        argv.extend_from_slice(&["--out", "x.png"]);
        let o = braid_in(&dir, &argv);
        assert!(!o.status.success(), "{argv:?} succeeded");
        let e = String::from_utf8_lossy(&o.stderr);
        for w in wants {
            assert!(e.contains(w), "{argv:?}: {e}");
        }
    };
    // A run without a time series: the runs that have one are listed.
    refused(
        &["--timeseries", "point1-seed0", "--y", "cwnd"],
        &[
            "no run \"point1-seed0\"",
            "time series there: point0-seed0)",
        ],
    );
    // An unknown column: the valid ones are listed.
    refused(
        &["--timeseries", "point0-seed0", "--y", "cwd"],
        &["no column \"cwd\"", "cwnd, ssthresh, rto_ms"],
    );
    // Summary-plot options do not go with a time series; neither --x nor --timeseries is
    // an error too.
    refused(
        &[
            "--timeseries",
            "point0-seed0",
            "--x",
            "path.A.delay",
            "--y",
            "cwnd",
        ],
        &["--x cannot be used with --timeseries"],
    );
    refused(&["--y", "cwnd"], &["say what to plot: --x"]);
    assert!(!dir.join("x.png").exists());

    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sim_plot_draws_a_runs_time_sequence_record() {
    let dir = std::env::temp_dir().join(format!("braid-cli-sim-{}-seq", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("seq.toml"),
        "name = \"seq\"\nduration = \"4s\"\nsequence = true\n\
         [[path]]\nname = \"A\"\nrate = \"1Mbit/s\"\ndelay = \"50ms\"\nreorder_at = [\"1s\"]\n\
         [[traffic]]\nkind = \"saturated\"\n",
    )
    .unwrap();
    let o = braid_in(
        &dir,
        &["sim", "run", "seq.toml", "--out", "out", "--jobs", "1"],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let record = "out/sequence/point0-seed0.csv";
    let o = braid_in(
        &dir,
        &[
            "sim",
            "plot",
            "--sequence",
            record,
            "--from",
            "0.5",
            "--to",
            "2",
            "--out",
            "seq.png",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    // Arrivals, SACKs, sends and the one retransmission; one path's cwnd below.
    assert!(
        text.contains("4 series of TSNs") && text.contains("above 1 cwnd curve"),
        "{text}"
    );
    assert!(std::fs::metadata(dir.join("seq.png")).unwrap().len() > 0);
    // A summary plot's options do not go with a record; an empty time range is refused.
    let o = braid_in(
        &dir,
        &[
            "sim",
            "plot",
            "--sequence",
            record,
            "--y",
            "cwnd",
            "--out",
            "x.png",
        ],
    );
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("--y") && e.contains("--sequence"), "{e}");
    let o = braid_in(
        &dir,
        &[
            "sim",
            "plot",
            "--sequence",
            record,
            "--from",
            "3",
            "--to",
            "2",
            "--out",
            "x.png",
        ],
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("is empty"));
    assert!(!dir.join("x.png").exists());
    let _ = std::fs::remove_dir_all(&dir);
}
