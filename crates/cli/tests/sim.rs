//! `braid sim` as a subprocess: what a user sees for a scenario the simulator refuses.

#![allow(clippy::unwrap_used)]

use std::process::Command;

const BRAID: &str = env!("CARGO_BIN_EXE_braid");

#[test]
fn sim_run_refuses_a_path_mtu_above_65535_naming_the_key() {
    let dir = std::env::temp_dir().join(format!("braid-cli-sim-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("big-mtu.toml");
    std::fs::write(
        &file,
        "name = \"big\"\nduration = \"1s\"\n[[path]]\nname = \"A\"\nrate = \"1Gbit/s\"\n\
         delay = \"1ms\"\nmtu = 70000\n",
    )
    .unwrap();
    let o = Command::new(BRAID)
        .args(["sim", "run"])
        .arg(&file)
        .arg("--out")
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("big-mtu.toml:7:7: path.A.mtu: 70000 exceeds 65535, the largest IP packet"),
        "{e}"
    );
}

#[test]
fn sim_run_reports_progress_in_lines_when_stderr_is_not_a_terminal() {
    let dir = std::env::temp_dir().join(format!("braid-cli-progress-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("short.toml");
    std::fs::write(
        &file,
        "name = \"short\"\nduration = \"2s\"\nseeds = 3\n[[path]]\nname = \"A\"\n\
         rate = \"10Mbit/s\"\ndelay = \"5ms\"\n[[traffic]]\nkind = \"saturated\"\n",
    )
    .unwrap();
    let o = Command::new(BRAID)
        .args(["sim", "run"])
        .arg(&file)
        .arg("--out")
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Output captured (not a terminal): the last line says every run is done.
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("progress: 3/3 runs"), "{e}");
}
