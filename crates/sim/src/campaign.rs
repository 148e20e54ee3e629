//! Campaigns past one machine: run ids, per-run result files, shards and merging.
//!
//! * **Run id**: every run (sweep point × seed) has a stable id, [`run_id`] = the first 16 hex
//!   digits of SHA-256 over (the resolved scenario of the point — after sweep substitution,
//!   with every default filled in, in its canonical text form [`canonical`] —, the seed,
//!   [`VERSION`]). The id depends on what is simulated, not on where the point sits in a
//!   sweep: two files that resolve to the same scenario share runs.
//! * **Per-run results**: the runner stores each finished run as `DIR/runs/<id>.json`
//!   ([`StoredRun`]: point, seed, metrics or the error), written atomically (temp file +
//!   rename). A campaign skips runs whose file exists, parses and holds a result of this
//!   version (resume after a crash or Ctrl-C loses nothing); failed runs are stored too (so a
//!   merge sees them) but run again on resume.
//! * **Manifest**: `DIR/campaign.json` ([`Manifest`]) describes the whole campaign (scenario,
//!   sweep, points, every run id in canonical order) whichever share of it a process runs.
//! * **Shards**: the canonical order is (point, seed); [`Shard`] `i/n` selects the runs whose
//!   index in it is ≡ i (mod n).
//! * **Merge**: [`merge`] combines directories of shards (or one directory many processes
//!   wrote into) into runs.csv, summary.csv and summary.json byte-identical to what one
//!   machine running everything writes; it refuses directories of different campaigns or
//!   braid versions and reports missing runs.

use std::collections::BTreeMap;
use std::fmt;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::load::Experiment;
use crate::run::RunResult;
use crate::runner::{self, Layout, Outcome, RunRecord, RunnerError, SummaryFile};
use crate::scenario::Scenario;

/// The braid version in run ids: the crate version plus, when built from a git repository,
/// the commit (`0.1.0+g0123456789ab`; set `BRAID_GIT_COMMIT` to override, see build.rs),
/// plus a digest of the uncommitted changes to the simulator's sources when there are some
/// (`0.1.0+g0123456789ab.dirty.5e1f0c2a9b3d`), so that runs of edited code get ids of their
/// own.
pub const VERSION: &str = env!("BRAID_BUILD_VERSION");

/// The braid builds other than this one ([`VERSION`]) that stored campaigns under `dir`:
/// `dir/campaign.json`, `dir/*/campaign.json` (a reproduction's figures) and
/// `dir/reproduce.json`, sorted, each once. Their runs are not reused (their ids include
/// the build); a command warns that the code changed since.
pub fn other_builds(dir: &Path) -> Vec<String> {
    let mut files = vec![dir.join(MANIFEST), dir.join("reproduce.json")];
    if let Ok(entries) = fs::read_dir(dir) {
        let mut subs: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path().join(MANIFEST)))
            .collect();
        subs.sort();
        files.extend(subs);
    }
    let mut out: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let text = fs::read_to_string(f).ok()?;
            let v: serde_json::Value = serde_json::from_str(&text).ok()?;
            Some(v.get("braid")?.as_str()?.to_string())
        })
        .filter(|b| b != VERSION)
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The manifest's file name in a campaign directory.
pub const MANIFEST: &str = "campaign.json";

/// The subdirectory of per-run result files.
pub const RUNS_DIR: &str = "runs";

/// Format of [`Manifest`] and [`StoredRun`].
pub const FORMAT: u32 = 1;

/// The canonical text of a resolved scenario: its complete `Debug` form (every field, in
/// declaration order; no hash maps), which is deterministic for one braid version — and
/// the version is part of every id.
pub fn canonical(scenario: &Scenario) -> String {
    format!("{scenario:?}")
}

/// The id of the run of `scenario` with `seed`: 16 hex digits.
pub fn run_id(scenario: &Scenario, seed: u64) -> String {
    id_of_canonical(&canonical(scenario), seed)
}

fn id_of_canonical(canonical: &str, seed: u64) -> String {
    let mut h = Sha256::new();
    h.update(b"braid-run/1\n");
    h.update(VERSION.as_bytes());
    h.update(format!("\nseed {seed}\n").as_bytes());
    h.update(canonical.as_bytes());
    hex16(&h.finalize())
}

fn hex16(digest: &[u8]) -> String {
    digest.iter().take(8).map(|b| format!("{b:02x}")).collect()
}

/// Shard `index` of `count`: the runs whose canonical index is ≡ `index` (mod `count`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// Which shard, from 0.
    pub index: usize,
    /// How many shards.
    pub count: usize,
}

impl Shard {
    /// Whether the run with canonical index `i` belongs to this shard.
    pub fn contains(&self, i: usize) -> bool {
        i % self.count == self.index
    }
}

impl FromStr for Shard {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let usage = "expected I/N (shard I of N, I from 0 to N-1), e.g. 0/4";
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| format!("shard {s:?}: {usage}"))?;
        let num = |x: &str, what: &str| {
            x.trim()
                .parse::<usize>()
                .map_err(|_| format!("shard {s:?}: {what} {x:?} is not a number; {usage}"))
        };
        let (index, count) = (num(i, "I")?, num(n, "N")?);
        if count == 0 {
            return Err(format!("shard {s:?}: N must be at least 1"));
        }
        if index >= count {
            return Err(format!(
                "shard {s:?}: I must be in 0..{} (shards are numbered from 0)",
                count - 1
            ));
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// Which runs of a campaign a process runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Select {
    /// Every run; the aggregated files are written.
    #[default]
    All,
    /// One shard; only per-run results are written.
    Shard(Shard),
    /// The runs with these ids; only per-run results are written.
    Ids(Vec<String>),
}

impl Select {
    /// Whether every run is selected.
    pub fn is_all(&self) -> bool {
        matches!(self, Select::All)
    }

    /// Whether the run `entry` is selected.
    pub fn contains(&self, entry: &RunEntry) -> bool {
        match self {
            Select::All => true,
            Select::Shard(s) => s.contains(entry.index),
            Select::Ids(ids) => ids.contains(&entry.id),
        }
    }
}

/// One run of a campaign.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunEntry {
    /// Index in the canonical (point, seed) order.
    pub index: usize,
    /// Sweep point index.
    pub point: usize,
    /// Seed.
    pub seed: u64,
    /// Run id.
    pub id: String,
}

/// Every run of `exp` with `seeds` seeds per point, in canonical (point, seed) order.
pub fn entries(exp: &Experiment, seeds: u32) -> Vec<RunEntry> {
    let mut out = Vec::with_capacity(exp.points.len() * seeds as usize);
    for p in &exp.points {
        let c = canonical(&p.scenario);
        for seed in 0..u64::from(seeds) {
            out.push(RunEntry {
                index: out.len(),
                point: p.index,
                seed,
                id: id_of_canonical(&c, seed),
            });
        }
    }
    out
}

/// `DIR/campaign.json`: the whole campaign, whichever share of it a directory holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// [`FORMAT`].
    pub format: u32,
    /// [`VERSION`] of the braid that wrote it.
    pub braid: String,
    /// The campaign's fingerprint: a hash of the scenario name, seeds, sweep, points and
    /// run ids (not of the file's path, which may differ between machines).
    pub campaign: String,
    /// What the aggregated files are made of.
    pub layout: Layout,
    /// Every run, in canonical order.
    pub runs: Vec<RunEntry>,
}

impl Manifest {
    /// The manifest of `exp` with `seeds` seeds per point.
    pub fn new(exp: &Experiment, seeds: u32) -> Manifest {
        let layout = Layout::of(exp, seeds);
        let runs = entries(exp, seeds);
        let mut h = Sha256::new();
        h.update(b"braid-campaign/1\n");
        h.update(VERSION.as_bytes());
        let key = serde_json::json!([layout.scenario, layout.seeds, layout.sweep, layout.points]);
        h.update(key.to_string().as_bytes());
        for r in &runs {
            h.update(format!("\n{} {} {}", r.point, r.seed, r.id).as_bytes());
        }
        Manifest {
            format: FORMAT,
            braid: VERSION.to_string(),
            campaign: hex16(&h.finalize()),
            layout,
            runs,
        }
    }

    /// Reads `DIR/campaign.json`.
    pub fn read(dir: &Path) -> Result<Manifest, CampaignError> {
        let path = dir.join(MANIFEST);
        let text = match fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(CampaignError::NotCampaign(dir.to_path_buf()));
            }
            Err(source) => return Err(CampaignError::Io { path, source }),
        };
        serde_json::from_str(&text).map_err(|source| CampaignError::Json { path, source })
    }

    /// Writes `DIR/campaign.json` atomically (processes sharing a directory write the same
    /// bytes).
    pub fn write(&self, dir: &Path) -> Result<(), RunnerError> {
        let mut json = serde_json::to_string_pretty(self)?;
        json.push('\n');
        write_atomic(&dir.join(MANIFEST), json.as_bytes())
    }
}

/// A metric value in a run file: a JSON number when finite, else `"NaN"`, `"inf"`, `"-inf"`
/// (JSON has no such numbers), so that every value reads back bit for bit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Num {
    /// A finite value.
    Finite(f64),
    /// A non-finite one, as Rust writes it.
    #[serde(with = "nonfinite")]
    Other(f64),
}

mod nonfinite {
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&v.to_string())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

impl Num {
    /// Wraps a value.
    pub fn of(v: f64) -> Num {
        if v.is_finite() {
            Num::Finite(v)
        } else {
            Num::Other(v)
        }
    }

    /// The value.
    pub fn get(self) -> f64 {
        match self {
            Num::Finite(v) | Num::Other(v) => v,
        }
    }
}

/// `DIR/runs/<id>.json`: one run's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRun {
    /// [`FORMAT`].
    pub format: u32,
    /// Run id.
    pub id: String,
    /// [`VERSION`] of the braid that ran it.
    pub braid: String,
    /// The scenario's name (for people reading the file).
    pub scenario: String,
    /// Sweep point index in the campaign that ran it (the id does not depend on it).
    pub point: usize,
    /// Seed.
    pub seed: u64,
    /// Why the run failed, if it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Events processed.
    pub events: u64,
    /// Simulated time.
    pub simulated: Duration,
    /// The metrics.
    pub metrics: BTreeMap<String, Num>,
}

impl StoredRun {
    /// The file of `record` (run id `id`) of a scenario named `scenario`.
    pub fn of(record: &RunRecord, scenario: &str) -> StoredRun {
        let (error, events, simulated, metrics) = match &record.result {
            Ok(r) => (
                None,
                r.events,
                r.simulated,
                r.metrics
                    .iter()
                    .map(|(k, v)| (k.clone(), Num::of(*v)))
                    .collect(),
            ),
            Err(e) => (Some(e.clone()), 0, Duration::ZERO, BTreeMap::new()),
        };
        StoredRun {
            format: FORMAT,
            id: record.id.clone(),
            braid: VERSION.to_string(),
            scenario: scenario.to_string(),
            point: record.point,
            seed: record.seed,
            error,
            events,
            simulated,
            metrics,
        }
    }

    /// The record of this run as run `entry` of a campaign.
    pub fn record(&self, entry: &RunEntry) -> RunRecord {
        let result = match &self.error {
            Some(e) => Err(e.clone()),
            None => Ok(RunResult {
                metrics: self
                    .metrics
                    .iter()
                    .map(|(k, v)| (k.clone(), v.get()))
                    .collect(),
                events: self.events,
                simulated: self.simulated,
            }),
        };
        RunRecord {
            point: entry.point,
            seed: entry.seed,
            id: entry.id.clone(),
            result,
        }
    }
}

/// The path of run `id`'s file under campaign directory `dir`.
pub fn run_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(RUNS_DIR).join(format!("{id}.json"))
}

/// The stored result of run `id` in `dir`, if its file exists, parses and is of this
/// version and id.
pub fn load_run(dir: &Path, id: &str) -> Option<StoredRun> {
    load_run_of(dir, id, VERSION)
}

/// The stored result of run `id` in `dir` written by braid `version`.
fn load_run_of(dir: &Path, id: &str, version: &str) -> Option<StoredRun> {
    let text = fs::read_to_string(run_path(dir, id)).ok()?;
    let run: StoredRun = serde_json::from_str(&text).ok()?;
    (run.id == id && run.braid == version && run.format == FORMAT).then_some(run)
}

/// Stores `record` as `dir/runs/<id>.json`, atomically.
pub fn store_run(dir: &Path, record: &RunRecord, scenario: &str) -> Result<(), RunnerError> {
    let mut json = serde_json::to_string_pretty(&StoredRun::of(record, scenario))?;
    json.push('\n');
    write_atomic(&run_path(dir, &record.id), json.as_bytes())
}

/// Writes `path` via a temporary file in the same directory and a rename, so that a reader
/// (or a crash) sees the old file or the new one, never a part.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), RunnerError> {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let err = |path: &Path| {
        let path = path.to_path_buf();
        move |source| RunnerError::Io { path, source }
    };
    let name = path
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let tmp = path.with_file_name(format!(
        ".{name}.{}.{}.tmp",
        std::process::id(),
        SERIAL.fetch_add(1, Ordering::Relaxed)
    ));
    let write = || -> std::io::Result<()> {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()
    };
    if let Err(e) = write() {
        let _ = fs::remove_file(&tmp);
        return Err(err(&tmp)(e));
    }
    fs::rename(&tmp, path).map_err(err(path))
}

/// Why a merge failed.
#[derive(Debug, thiserror::Error)]
pub enum CampaignError {
    /// No directories given.
    #[error("nothing to merge: give at least one directory")]
    NoDirs,
    /// A directory without campaign.json.
    #[error(
        "{}: not a campaign directory (no {MANIFEST}; `braid sim run FILE --shard I/N --out DIR` writes one)",
        .0.display()
    )]
    NotCampaign(PathBuf),
    /// Reading failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// A manifest does not parse.
    #[error("{}: {source}", path.display())]
    Json {
        /// The file.
        path: PathBuf,
        /// The error.
        source: serde_json::Error,
    },
    /// Directories of different braid versions.
    #[error(
        "cannot merge results of different braid versions: {} has {a}, {} has {b} (run ids include the version; rerun the shards with one build)",
        dir_a.display(), dir_b.display()
    )]
    Version {
        /// The first directory.
        dir_a: PathBuf,
        /// Its version.
        a: String,
        /// The other directory.
        dir_b: PathBuf,
        /// Its version.
        b: String,
    },
    /// Directories of different campaigns.
    #[error(
        "cannot merge different campaigns: {} is {a}, {} is {b} (the scenario files, their sweeps or the seeds differ)",
        dir_a.display(), dir_b.display()
    )]
    Campaign {
        /// The first directory.
        dir_a: PathBuf,
        /// Its campaign.
        a: String,
        /// The other directory.
        dir_b: PathBuf,
        /// Its campaign.
        b: String,
    },
    /// Runs without a result in any directory.
    #[error(
        "{} of {total} runs have no result in any directory, e.g. {}; run them (`braid sim list FILE` prints their commands) and merge again",
        missing.len(),
        missing.iter().take(5).map(|r| format!("{} (point {} seed {})", r.id, r.point, r.seed)).collect::<Vec<_>>().join(", ")
    )]
    Missing {
        /// The runs missing.
        missing: Vec<RunEntry>,
        /// Runs in the campaign.
        total: usize,
    },
    /// Writing failed.
    #[error(transparent)]
    Runner(#[from] RunnerError),
}

/// What [`merge`] produced.
#[derive(Debug, Clone)]
pub struct Merged {
    /// The campaign.
    pub manifest: Manifest,
    /// Every run.
    pub outcome: Outcome,
    /// The statistics written to summary.json.
    pub summary: SummaryFile,
}

fn describe(m: &Manifest) -> String {
    format!(
        "{:?} ({}, {} points × {} seeds, campaign {})",
        m.layout.scenario,
        m.layout.file,
        m.layout.points.len(),
        m.layout.seeds,
        m.campaign
    )
}

/// Reads the manifests of `dirs` and checks they are of one campaign and braid version.
pub fn check(dirs: &[PathBuf]) -> Result<Manifest, CampaignError> {
    let (first, rest) = dirs.split_first().ok_or(CampaignError::NoDirs)?;
    let m = Manifest::read(first)?;
    for d in rest {
        let o = Manifest::read(d)?;
        if o.braid != m.braid {
            return Err(CampaignError::Version {
                dir_a: first.clone(),
                a: m.braid.clone(),
                dir_b: d.clone(),
                b: o.braid,
            });
        }
        if o.campaign != m.campaign {
            return Err(CampaignError::Campaign {
                dir_a: first.clone(),
                a: describe(&m),
                dir_b: d.clone(),
                b: describe(&o),
            });
        }
    }
    Ok(m)
}

/// Combines the per-run results of `dirs` (shards of one campaign, in any number and
/// order) into `out`: runs.csv, summary.csv and summary.json as one machine running the
/// whole campaign writes them, plus campaign.json, runs/ and any per-run pcap, time series
/// and trace files. `out` may be one of `dirs`.
///
/// The braid doing the merge may be another build than the one that ran the shards (which
/// must all be one). A run with a successful result in some directory takes it; a run that failed everywhere
/// is recorded as failed (as in a single run). Missing runs are an error (nothing written).
pub fn merge(dirs: &[PathBuf], out: &Path) -> Result<Merged, CampaignError> {
    // The shards must agree on the version; the braid merging them may be another build.
    let manifest = check(dirs)?;
    let mut runs = Vec::with_capacity(manifest.runs.len());
    let mut files = Vec::with_capacity(manifest.runs.len());
    let mut missing = Vec::new();
    for e in &manifest.runs {
        let mut found: Option<(StoredRun, PathBuf)> = None;
        for d in dirs {
            if let Some(s) = load_run_of(d, &e.id, &manifest.braid) {
                let ok = s.error.is_none();
                if found.is_none() || ok {
                    found = Some((s, run_path(d, &e.id)));
                }
                if ok {
                    break;
                }
            }
        }
        match found {
            Some((s, path)) => {
                runs.push(s.record(e));
                files.push((path, run_path(out, &e.id)));
            }
            None => missing.push(e.clone()),
        }
    }
    if !missing.is_empty() {
        return Err(CampaignError::Missing {
            missing,
            total: manifest.runs.len(),
        });
    }
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| CampaignError::Io { path, source }
    };
    let runs_dir = out.join(RUNS_DIR);
    fs::create_dir_all(&runs_dir).map_err(io(&runs_dir))?;
    for (from, to) in &files {
        if !same_file(from, to) {
            let bytes = fs::read(from).map_err(io(from))?;
            write_atomic(to, &bytes)?;
        }
    }
    for d in dirs {
        for sub in ["pcap", "timeseries", "trace"] {
            copy_absent(&d.join(sub), &out.join(sub)).map_err(io(&d.join(sub)))?;
        }
    }
    manifest.write(out)?;
    let outcome = Outcome { runs, reused: 0 };
    let summary = runner::summarize_layout(&manifest.layout, &outcome);
    runner::write_layout_outputs(out, &manifest.layout, &outcome, &summary)?;
    Ok(Merged {
        manifest,
        outcome,
        summary,
    })
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Copies the files under `from` to `to` that `to` does not have yet.
fn copy_absent(from: &Path, to: &Path) -> std::io::Result<()> {
    if !from.is_dir() || same_file(from, to) {
        return Ok(());
    }
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type()?.is_dir() {
            copy_absent(&src, &dst)?;
        } else if !dst.exists() {
            fs::copy(&src, &dst)?;
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "../build/version.rs"]
mod version;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_edited_tree_has_a_version_of_its_own() {
        use super::version::{build_version, digest12};
        assert_eq!(build_version("0.1.0", None, None), "0.1.0");
        assert_eq!(
            build_version("0.1.0", Some("0123456789ab"), None),
            "0.1.0+g0123456789ab"
        );
        let a = digest12(b"-old line\n+new line\n");
        let b = digest12(b"-old line\n+another line\n");
        assert_eq!(a.len(), 12);
        assert_ne!(a, b, "each edited state its own");
        assert_eq!(a, digest12(b"-old line\n+new line\n"), "deterministic");
        let dirty = build_version("0.1.0", Some("0123456789ab"), Some(&a));
        assert_eq!(dirty, format!("0.1.0+g0123456789ab.dirty.{a}"));
        // Run ids follow the version: the same scenario, another id.
        let c = "Scenario { name: \"x\" }";
        let id = |v: &str| {
            let mut h = Sha256::new();
            h.update(b"braid-run/1\n");
            h.update(v.as_bytes());
            h.update(b"\nseed 0\n");
            h.update(c.as_bytes());
            hex16(&h.finalize())
        };
        assert_ne!(id("0.1.0+g0123456789ab"), id(&dirty));
    }

    #[test]
    fn campaigns_of_other_builds_are_found() {
        let dir = std::env::temp_dir().join(format!("braid-other-builds-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(dir.join("fig13")).unwrap();
        assert!(other_builds(&dir).is_empty());
        let manifest = |v: &str| format!("{{\"format\": 1, \"braid\": \"{v}\"}}");
        fs::write(dir.join("fig13").join(MANIFEST), manifest(VERSION)).unwrap();
        assert!(other_builds(&dir).is_empty(), "this build's runs");
        fs::write(dir.join("reproduce.json"), manifest("0.0.1+gdeadbeef0000")).unwrap();
        assert_eq!(other_builds(&dir), ["0.0.1+gdeadbeef0000"]);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn shard_parses_and_refuses() {
        assert_eq!("2/5".parse(), Ok(Shard { index: 2, count: 5 }));
        assert_eq!(Shard { index: 0, count: 1 }.to_string(), "0/1");
        for bad in ["5/5", "1/0", "x/2", "3", "-1/2", "1/2/3"] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
        assert!(
            "4/4"
                .parse::<Shard>()
                .unwrap_err()
                .contains("I must be in 0..3")
        );
        let s = Shard { index: 1, count: 3 };
        let mine: Vec<usize> = (0..10).filter(|&i| s.contains(i)).collect();
        assert_eq!(mine, [1, 4, 7]);
    }

    #[test]
    fn numbers_read_back_bit_for_bit() {
        let values = [
            0.1 + 0.2,
            1e-300,
            5e-324,
            -0.0,
            123_456_789.123_456_78,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            3.0,
        ];
        for v in values {
            let json = serde_json::to_string(&Num::of(v)).unwrap();
            let back: Num = serde_json::from_str(&json).unwrap();
            let b = back.get();
            assert!(
                b.to_bits() == v.to_bits() || (v.is_nan() && b.is_nan()),
                "{v} → {json} → {b}"
            );
        }
    }
}
