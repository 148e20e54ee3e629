//! `braid sim run --shard/--run`, `sim list` and `sim merge` as a subprocess: shards and
//! single runs merge into the files a whole run writes; errors a user sees.

#![allow(missing_docs, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const BRAID: &str = env!("CARGO_BIN_EXE_braid");

const SMALL: &str = "name = \"cli campaign\"\nduration = \"2s\"\nwarmup = \"0.5s\"\nseeds = 2\n\
    [[path]]\nname = \"A\"\nrate = \"2Mbit/s\"\ndelay = \"5ms\"\nloss = 0.01\n\
    [[traffic]]\nkind = \"saturated\"\n[sweep]\n\"path.A.delay\" = [\"5ms\", \"20ms\", \"40ms\"]\n";

fn braid(args: &[&str], dir: &Path) -> Output {
    Command::new(BRAID)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap()
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn files(dir: &Path) -> Vec<Vec<u8>> {
    ["runs.csv", "summary.csv", "summary.json"]
        .iter()
        .map(|f| std::fs::read(dir.join(f)).unwrap())
        .collect()
}

fn setup(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("braid-cli-campaign-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("small.toml"), SMALL).unwrap();
    dir
}

#[test]
fn shards_and_listed_runs_merge_into_the_whole_runs_files() {
    let dir = setup("merge");
    ok(&braid(
        &["sim", "run", "small.toml", "--out", "whole"],
        &dir,
    ));
    for i in 0..3 {
        let shard = format!("{i}/3");
        let out = format!("s{i}");
        let text = ok(&braid(
            &["sim", "run", "small.toml", "--shard", &shard, "--out", &out],
            &dir,
        ));
        assert!(text.contains("shard"), "{text}");
        assert!(!dir.join(&out).join("runs.csv").exists());
    }
    ok(&braid(
        &["sim", "merge", "s2", "s0", "s1", "--out", "merged"],
        &dir,
    ));
    assert_eq!(files(&dir.join("whole")), files(&dir.join("merged")));

    // `list`: one line per run, the last field the command that runs it.
    let list = ok(&braid(&["sim", "list", "small.toml", "--out", "one"], &dir));
    let lines: Vec<&str> = list.lines().collect();
    assert_eq!(lines.len(), 6);
    for l in &lines {
        let f: Vec<&str> = l.split('\t').collect();
        assert_eq!(f.len(), 5, "{l}");
        assert_eq!(f[0].len(), 16);
        assert!(
            f[4].ends_with(&format!("--run {} --jobs 1 --out one", f[0])),
            "{l}"
        );
        let args: Vec<&str> = f[4].split(' ').skip(1).collect();
        ok(&braid(&args, &dir));
    }
    let shard1 = ok(&braid(
        &["sim", "list", "small.toml", "--shard", "1/2"],
        &dir,
    ));
    assert_eq!(shard1.lines().count(), 3);
    let id = |l: &str| l.split('\t').next().unwrap().to_string();
    let ids: Vec<String> = shard1.lines().map(id).collect();
    assert_eq!(ids, [id(lines[1]), id(lines[3]), id(lines[5])]);
    ok(&braid(&["sim", "merge", "one", "--out", "one"], &dir));
    assert_eq!(files(&dir.join("whole")), files(&dir.join("one")));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn errors_name_the_problem() {
    let dir = setup("errors");
    let o = braid(&["sim", "run", "small.toml", "--shard", "3/3"], &dir);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("I must be in 0..2"), "{e}");

    let o = braid(
        &["sim", "run", "small.toml", "--run", "0123456789abcdef"],
        &dir,
    );
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("no run \"0123456789abcdef\""), "{e}");

    ok(&braid(
        &[
            "sim",
            "run",
            "small.toml",
            "--shard",
            "0/2",
            "--out",
            "half",
        ],
        &dir,
    ));
    let o = braid(&["sim", "merge", "half", "--out", "m"], &dir);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(e.matches("braid: missing run ").count(), 3, "{e}");
    assert!(e.contains("3 of 6 runs have no result"), "{e}");

    std::fs::write(
        dir.join("other.toml"),
        SMALL.replace("seeds = 2", "seeds = 3"),
    )
    .unwrap();
    ok(&braid(
        &[
            "sim",
            "run",
            "other.toml",
            "--shard",
            "1/2",
            "--out",
            "other",
        ],
        &dir,
    ));
    let o = braid(&["sim", "merge", "half", "other", "--out", "m"], &dir);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("cannot merge different campaigns"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}
