//! `braid sim` as a subprocess: what a user sees for a scenario the simulator refuses, and
//! the progress it reports.

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
