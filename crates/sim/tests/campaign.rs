//! Campaigns past one machine: run ids, per-run results and resume, shards, merge
//! (byte-identical to one machine), and the reproduction's shards and merge.

#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use braid_sim::campaign::{self, CampaignError, Manifest, Select, Shard};
use braid_sim::load::{Experiment, load_str};
use braid_sim::reproduce::{self, CampaignOptions, ReproduceOptions};
use braid_sim::run::{RunOptions, RunResult, SimError};
use braid_sim::runner::{self, RunRecord, RunnerOptions};
use braid_sim::scenario::Scenario;

const SMALL: &str = r#"
name = "campaign"
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
"path.A.loss" = [0.0, 0.02]
"#;

fn exp(text: &str) -> Experiment {
    load_str(text, Path::new("small.toml")).unwrap_or_else(|d| panic!("{d}"))
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("braid-campaign-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn no_progress(_: &RunRecord, _: usize, _: usize) {}

/// A stand-in simulation: metrics from the run id (so every run differs), no engine.
fn fake(sc: &Scenario, o: &RunOptions) -> Result<RunResult, SimError> {
    let id = campaign::run_id(sc, o.seed);
    let x = u64::from_str_radix(&id, 16).unwrap() as f64 / u64::MAX as f64;
    let mut metrics = BTreeMap::new();
    for (i, m) in [
        "goodput_mbps",
        "stream0_goodput_mbps",
        "stream1_goodput_mbps",
        "msg_delay_ms_mean",
        "stream0_msg_delay_ms_mean",
        "stream1_msg_delay_ms_mean",
    ]
    .into_iter()
    .enumerate()
    {
        metrics.insert(m.to_string(), x * 20.0 + i as f64 / 3.0);
    }
    metrics.insert("odd".to_string(), f64::NAN);
    Ok(RunResult {
        metrics,
        events: 1000 + o.seed,
        ..RunResult::default()
    })
}

const AGGREGATES: [&str; 3] = ["runs.csv", "summary.csv", "summary.json"];

fn read(dir: &Path, files: &[&str]) -> Vec<Vec<u8>> {
    files
        .iter()
        .map(|f| std::fs::read(dir.join(f)).unwrap_or_else(|e| panic!("{f}: {e}")))
        .collect()
}

fn opts(select: Select) -> RunnerOptions {
    RunnerOptions {
        jobs: 2,
        select,
        ..RunnerOptions::default()
    }
}

#[test]
fn run_ids_are_stable_and_depend_on_scenario_and_seed() {
    let e = exp(SMALL);
    let ids = campaign::entries(&e, 2);
    assert_eq!(ids.len(), 8);
    for r in &ids {
        assert_eq!(r.id.len(), 16);
        assert!(r.id.chars().all(|c| c.is_ascii_hexdigit()), "{}", r.id);
    }
    // Canonical order (point, seed), ids all different.
    let order: Vec<(usize, u64)> = ids.iter().map(|r| (r.point, r.seed)).collect();
    assert_eq!(order[..3], [(0, 0), (0, 1), (1, 0)]);
    let mut unique: Vec<&str> = ids.iter().map(|r| r.id.as_str()).collect();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), 8);
    // Loading again gives the same ids; so does the same scenario with the sweep written in
    // another order (the id is of what is simulated, not of the point's index).
    assert_eq!(campaign::entries(&exp(SMALL), 2), ids);
    let reordered = SMALL.replace(
        "\"path.A.delay\" = [\"5ms\", \"20ms\"]",
        "\"path.A.delay\" = [\"20ms\", \"5ms\"]",
    );
    let mut a: Vec<String> = ids.iter().map(|r| r.id.clone()).collect();
    let mut b: Vec<String> = campaign::entries(&exp(&reordered), 2)
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_ne!(a, b);
    a.sort();
    b.sort();
    assert_eq!(a, b);
    // Any change of the scenario changes every id.
    let changed = campaign::entries(&exp(&SMALL.replace("2Mbit/s", "3Mbit/s")), 2);
    assert!(changed.iter().all(|c| !unique.contains(&c.id.as_str())));
    assert!(campaign::VERSION.starts_with(env!("CARGO_PKG_VERSION")));
}

#[test]
fn shards_partition_the_runs() {
    let e = exp(SMALL);
    let mut seen = Vec::new();
    for i in 0..3 {
        let sel = runner::selected(&e, &opts(Select::Shard(Shard { index: i, count: 3 })));
        assert!(sel.iter().all(|r| r.index % 3 == i));
        seen.extend(sel.into_iter().map(|r| r.index));
    }
    seen.sort_unstable();
    assert_eq!(seen, (0..8).collect::<Vec<_>>());
}

#[test]
fn three_shards_merged_are_byte_identical_to_one_run() {
    // The simulator itself, 4 points × 2 seeds of 2 simulated seconds.
    let e = exp(SMALL);
    let whole = temp_dir("whole");
    let report = runner::run_experiment(
        &e,
        &whole,
        &opts(Select::All),
        &braid_sim::run::run,
        &no_progress,
    )
    .unwrap();
    assert_eq!(report.outcome.failures().count(), 0);
    assert!(whole.join("campaign.json").exists());
    assert_eq!(std::fs::read_dir(whole.join("runs")).unwrap().count(), 8);

    let shards: Vec<PathBuf> = (0..3)
        .map(|i| {
            let d = temp_dir(&format!("shard{i}"));
            let sel = Select::Shard(Shard { index: i, count: 3 });
            let r = runner::run_experiment(&e, &d, &opts(sel), &braid_sim::run::run, &no_progress)
                .unwrap();
            assert_eq!(r.outcome.runs.len(), if i < 2 { 3 } else { 2 });
            // A shard writes no aggregates.
            assert!(!d.join("runs.csv").exists());
            d
        })
        .collect();
    let merged = temp_dir("merged");
    let m = campaign::merge(&shards, &merged).unwrap();
    assert_eq!(m.outcome.runs.len(), 8);
    assert_eq!(read(&whole, &AGGREGATES), read(&merged, &AGGREGATES));
    assert_eq!(
        read(&whole, &["campaign.json"]),
        read(&merged, &["campaign.json"])
    );
    // In any order, and into one of the shards' directories.
    let rev: Vec<PathBuf> = shards.iter().rev().cloned().collect();
    campaign::merge(&rev, &shards[2]).unwrap();
    assert_eq!(read(&whole, &AGGREGATES), read(&shards[2], &AGGREGATES));
    // The merged directory is a complete campaign directory: merging it alone is the same.
    let again = temp_dir("again");
    campaign::merge(std::slice::from_ref(&merged), &again).unwrap();
    assert_eq!(read(&whole, &AGGREGATES), read(&again, &AGGREGATES));
    for d in shards.iter().chain([&whole, &merged, &again]) {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn resume_skips_stored_runs_and_reruns_failed_missing_or_broken_ones() {
    let e = exp(SMALL);
    let dir = temp_dir("resume");
    let calls = AtomicUsize::new(0);
    let fail_once = Mutex::new(true);
    let counted = |sc: &Scenario, o: &RunOptions| {
        calls.fetch_add(1, Ordering::Relaxed);
        if o.seed == 1 && sc.paths[0].delay.0.as_millis() == 20 && sc.paths[0].loss == 0.0 {
            let mut f = fail_once.lock().unwrap();
            if *f {
                *f = false;
                return Err(SimError::Scenario("transient".into()));
            }
        }
        fake(sc, o)
    };
    let run = |o: &RunnerOptions| runner::run_experiment(&e, &dir, o, &counted, &no_progress);
    let first = run(&opts(Select::All)).unwrap();
    assert_eq!(calls.swap(0, Ordering::Relaxed), 8);
    assert_eq!(first.outcome.failures().count(), 1);
    // The failure is stored (a merge sees it) ...
    let failed = first.outcome.failures().next().unwrap().id.clone();
    let stored = campaign::load_run(&dir, &failed).unwrap();
    assert_eq!(stored.error.as_deref(), Some("scenario: transient"));
    // ... but run again on resume; the 7 others are not.
    let second = run(&opts(Select::All)).unwrap();
    assert_eq!(calls.swap(0, Ordering::Relaxed), 1);
    assert_eq!(second.outcome.reused, 7);
    assert_eq!(second.outcome.failures().count(), 0);
    let files = read(&dir, &AGGREGATES);
    // Nothing to do: the same files.
    run(&opts(Select::All)).unwrap();
    assert_eq!(calls.swap(0, Ordering::Relaxed), 0);
    assert_eq!(read(&dir, &AGGREGATES), files);
    // A deleted result and a truncated one (a crash mid-write cannot leave one, but a
    // copy can) are run again.
    let ids = campaign::entries(&e, 2);
    std::fs::remove_file(campaign::run_path(&dir, &ids[0].id)).unwrap();
    std::fs::write(campaign::run_path(&dir, &ids[5].id), "{\"format\": 1, ").unwrap();
    run(&opts(Select::All)).unwrap();
    assert_eq!(calls.swap(0, Ordering::Relaxed), 2);
    assert_eq!(read(&dir, &AGGREGATES), files);
    // --fresh runs everything.
    let fresh = RunnerOptions {
        fresh: true,
        ..opts(Select::All)
    };
    run(&fresh).unwrap();
    assert_eq!(calls.swap(0, Ordering::Relaxed), 8);
    assert_eq!(read(&dir, &AGGREGATES), files);
    // No temporary files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(dir.join("runs"))
        .unwrap()
        .map(|f| f.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".json") || n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn runs_by_id_into_one_directory_then_merge() {
    // What `braid sim list | parallel` does: one process per run, all into one directory.
    let e = exp(SMALL);
    let whole = temp_dir("byid-whole");
    runner::run_experiment(&e, &whole, &opts(Select::All), &fake, &no_progress).unwrap();
    let shared = temp_dir("byid-shared");
    for r in campaign::entries(&e, 2).iter().rev() {
        let rep = runner::run_experiment(
            &e,
            &shared,
            &opts(Select::Ids(vec![r.id.clone()])),
            &fake,
            &no_progress,
        )
        .unwrap();
        assert_eq!(rep.outcome.runs.len(), 1);
        assert_eq!(rep.outcome.runs[0].id, r.id);
    }
    campaign::merge(std::slice::from_ref(&shared), &shared).unwrap();
    assert_eq!(read(&whole, &AGGREGATES), read(&shared, &AGGREGATES));
    let _ = std::fs::remove_dir_all(&whole);
    let _ = std::fs::remove_dir_all(&shared);
}

#[test]
fn merge_refuses_other_campaigns_and_versions_and_reports_missing_runs() {
    let e = exp(SMALL);
    let shard = |name: &str, e: &Experiment, i: usize, seeds: Option<u32>| {
        let d = temp_dir(name);
        let o = RunnerOptions {
            seeds,
            ..opts(Select::Shard(Shard { index: i, count: 2 }))
        };
        runner::run_experiment(e, &d, &o, &fake, &no_progress).unwrap();
        d
    };
    let a = shard("m-a", &e, 0, None);
    let b = shard("m-b", &e, 1, None);
    let out = temp_dir("m-out");

    // Missing: shard 1 of 2 alone.
    match campaign::merge(std::slice::from_ref(&a), &out) {
        Err(CampaignError::Missing { missing, total }) => {
            assert_eq!((missing.len(), total), (4, 8));
            assert!(missing.iter().all(|r| r.index % 2 == 1));
        }
        other => panic!("{other:?}"),
    }
    assert!(!out.join("runs.csv").exists(), "nothing written");

    // Another scenario file, and the same file with other seeds.
    let other = shard(
        "m-other",
        &exp(&SMALL.replace("2Mbit/s", "4Mbit/s")),
        1,
        None,
    );
    let err = campaign::merge(&[a.clone(), other.clone()], &out).unwrap_err();
    assert!(matches!(err, CampaignError::Campaign { .. }), "{err}");
    assert!(err.to_string().contains("different campaigns"), "{err}");
    let seeds3 = shard("m-seeds", &e, 1, Some(3));
    let err = campaign::merge(&[a.clone(), seeds3.clone()], &out).unwrap_err();
    assert!(matches!(err, CampaignError::Campaign { .. }), "{err}");

    // Another braid version.
    let mut m = Manifest::read(&b).unwrap();
    m.braid = "0.0.0-other".into();
    std::fs::write(b.join("campaign.json"), serde_json::to_string(&m).unwrap()).unwrap();
    let err = campaign::merge(&[a.clone(), b.clone()], &out).unwrap_err();
    assert!(matches!(err, CampaignError::Version { .. }), "{err}");
    assert!(err.to_string().contains("0.0.0-other"), "{err}");

    // Not a campaign directory.
    let err = campaign::merge(&[a.clone(), out.clone()], &out).unwrap_err();
    assert!(matches!(err, CampaignError::NotCampaign(_)), "{err}");
    for d in [a, b, other, seeds3, out] {
        let _ = std::fs::remove_dir_all(d);
    }
}

/// Every file under `dir`, relative path → bytes.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                let rel = p.strip_prefix(base).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

#[test]
fn reproduction_in_three_shards_merges_to_the_same_report_and_plots() {
    // The quick reproduction's plumbing with the stand-in simulation (the real one takes
    // about a minute in release; scripts/campaign-parallel-test.sh does not run it either).
    let whole = temp_dir("repro-whole");
    let ro = |out: &Path| ReproduceOptions {
        quick: true,
        out: out.to_path_buf(),
        jobs: 2,
        seeds: None,
    };
    reproduce::cmt_scheduling(&ro(&whole), &fake, &|_, _, _| {}).unwrap();
    // Each cause of a departure is one paragraph, whichever rows it covers.
    let report = std::fs::read_to_string(whole.join("report.md")).unwrap();
    for d in reproduce::CMT_DEPARTURES {
        assert!(
            report.matches(d.reason).count() <= 1,
            "{} is printed more than once",
            d.id
        );
    }
    let shards: Vec<PathBuf> = (0..3)
        .map(|i| {
            let d = temp_dir(&format!("repro-shard{i}"));
            let camp = CampaignOptions {
                shard: Some(Shard { index: i, count: 3 }),
                fresh: false,
            };
            reproduce::cmt_scheduling_campaign(&ro(&d), &camp, &fake, &|_, _, _| {}).unwrap();
            assert!(!d.join("report.md").exists());
            d
        })
        .collect();
    let merged = temp_dir("repro-merged");
    let (_, m, opts) = reproduce::cmt_merge(&shards, &merged).unwrap();
    assert!(opts.quick);
    assert_eq!(m.len(), reproduce::CMT_SCHEDULING.len());
    let (a, b) = (tree(&whole), tree(&merged));
    let names: Vec<&String> = a.keys().filter(|k| !k.contains("runs/")).collect();
    assert!(names.iter().any(|n| n.ends_with(".png")), "{names:?}");
    assert!(names.iter().any(|n| *n == "fig4/runs.csv"), "{names:?}");
    assert_eq!(
        a.keys().collect::<Vec<_>>(),
        b.keys().collect::<Vec<_>>(),
        "the same files"
    );
    for (name, bytes) in &a {
        assert!(b[name] == *bytes, "{name} differs");
    }
    // A full reproduction's shard does not merge with a quick one.
    let full = temp_dir("repro-full");
    std::fs::create_dir_all(&full).unwrap();
    let mut text = std::fs::read_to_string(shards[0].join("reproduce.json")).unwrap();
    text = text.replace("\"quick\": true", "\"quick\": false");
    std::fs::write(full.join("reproduce.json"), text).unwrap();
    let err = reproduce::cmt_merge(&[shards[1].clone(), full.clone()], &merged).unwrap_err();
    assert!(err.to_string().contains("different reproductions"), "{err}");
    for d in shards.iter().chain([&whole, &merged, &full]) {
        let _ = std::fs::remove_dir_all(d);
    }
}

#[test]
fn shards_of_another_braid_build_merge_if_they_agree() {
    // Shards run by one build, merged by another (a laptop merging a cluster's results).
    let e = exp(SMALL);
    let dir = temp_dir("other-build");
    runner::run_experiment(&e, &dir, &opts(Select::All), &fake, &no_progress).unwrap();
    let files = read(&dir, &AGGREGATES);
    let mut paths = vec![dir.join("campaign.json")];
    for f in std::fs::read_dir(dir.join("runs")).unwrap() {
        paths.push(f.unwrap().path());
    }
    let needle = format!("\"braid\": \"{}\"", campaign::VERSION);
    for p in &paths {
        let text = std::fs::read_to_string(p).unwrap();
        assert!(text.contains(&needle), "{}", p.display());
        std::fs::write(p, text.replace(&needle, "\"braid\": \"9.9.9+gelsewhere\"")).unwrap();
    }
    let out = temp_dir("other-build-out");
    campaign::merge(std::slice::from_ref(&dir), &out).unwrap();
    assert_eq!(read(&out, &AGGREGATES), files);
    // This build does not reuse them to resume, though: they are another version's.
    assert!(campaign::load_run(&dir, &campaign::entries(&e, 2)[0].id).is_none());
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&out);
}
