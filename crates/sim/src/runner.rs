//! The experiment runner: every sweep point × every seed, in parallel, then the output files.
//!
//! * Seeds: run *i* of every point uses seed *i* (0, 1, ..., seeds − 1), so points are
//!   compared under common random numbers.
//! * Parallelism: `jobs` worker threads take runs from a shared counter; results are sorted by
//!   (point, seed) afterwards, so nothing written depends on `jobs` or on timing.
//! * A run that fails (an error, or a panic, which is caught) is recorded with its point and
//!   seed; the others go on, and the files hold what succeeded. A run whose receiving
//!   application got a message corrupt, missing or twice completes with its metrics and is
//!   listed by [`Outcome::integrity_failures`].
//! * Per-run files: a scenario with a `[pcap]` table gets `DIR/pcap/point{P}-seed{S}.pcap`, one
//!   with `timeseries` gets `DIR/timeseries/point{P}-seed{S}.csv`, one with `sequence = true`
//!   `DIR/sequence/point{P}-seed{S}.csv` (all via [`RunOptions`]).
//! * Campaigns ([`crate::campaign`]): with an output directory, every run's result is stored
//!   as `DIR/runs/<run id>.json` as soon as it is done, runs whose result is already there are
//!   not run again (failed ones are), and `DIR/campaign.json` describes the whole campaign.
//!   [`RunnerOptions::select`] runs a shard or single runs (then only those files are
//!   written; [`crate::campaign::merge`] makes the aggregated files).
//!
//! Output files (in the output directory):
//!
//! * `runs.csv` — one row per run: `point`, every swept parameter (as written in the file),
//!   `seed`, every metric (the union over all runs, sorted by name; empty where a run has no
//!   value or NaN), `events`, and `error` (empty unless the run failed).
//! * `summary.csv` — one row per point and metric: `point`, the swept parameters, `metric`,
//!   `n`, `mean`, `std`, `ci95`, `min`, `max` ([`crate::stats`]).
//! * `summary.json` — [`SummaryFile`]: `{"scenario", "file", "seeds", "sweep": [keys],
//!   "points": [{"index", "params": {key: value}, "runs", "failed", "metrics": {name:
//!   {"mean", "ci95", "n", "std", "min", "max"}}}]}`; undefined numbers are `null`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::{Deserialize, Serialize};

use crate::campaign::{self, Manifest, RunEntry, Select};
use crate::load::Experiment;
use crate::run::{IntegrityError, RunOptions, RunResult, SimError};
use crate::scenario::Scenario;
use crate::stats::Summary;
use crate::sweep::{Params, display_value};

/// The function that simulates one run: [`crate::run::run`], or a stand-in in tests.
pub type RunFn<'a> = dyn Fn(&Scenario, &RunOptions) -> Result<RunResult, SimError> + Sync + 'a;

/// How to run an experiment.
#[derive(Debug, Clone, Default)]
pub struct RunnerOptions {
    /// Worker threads; 0: the machine's available parallelism.
    pub jobs: usize,
    /// Seeds per point instead of the file's `seeds`.
    pub seeds: Option<u32>,
    /// Where per-run files (pcaps, time series, per-run results) go; `None`: nowhere (they
    /// are not written, and nothing stored is reused).
    pub out: Option<PathBuf>,
    /// Which runs to do: all (default), a shard, or runs by id.
    pub select: Select,
    /// Run again also the runs whose results are stored in the output directory.
    pub fresh: bool,
}

/// One run's identity and result.
#[derive(Debug, Clone)]
pub struct RunRecord {
    /// Sweep point index.
    pub point: usize,
    /// Seed.
    pub seed: u64,
    /// Run id ([`crate::campaign::run_id`]).
    pub id: String,
    /// The result, or why the run failed.
    pub result: Result<RunResult, String>,
}

/// All runs of an experiment, sorted by (point, seed).
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The runs.
    pub runs: Vec<RunRecord>,
    /// How many of them were not run but read from the output directory.
    pub reused: usize,
}

impl Outcome {
    /// The runs that failed.
    pub fn failures(&self) -> impl Iterator<Item = &RunRecord> {
        self.runs.iter().filter(|r| r.result.is_err())
    }

    /// The runs that completed but failed [`RunResult::check_integrity`] (their metrics are
    /// in the output files all the same).
    pub fn integrity_failures(&self) -> impl Iterator<Item = (&RunRecord, IntegrityError)> {
        self.runs.iter().filter_map(|r| {
            let e = r.result.as_ref().ok()?.check_integrity().err()?;
            Some((r, e))
        })
    }
}

/// Progress report after each finished run: (the run, runs finished, runs in total).
pub type ProgressFn<'a> = dyn Fn(&RunRecord, usize, usize) + Sync + 'a;

/// Why the runner could not do its job (a failed *run* is not one: see [`Outcome`]).
#[derive(Debug, thiserror::Error)]
pub enum RunnerError {
    /// Creating or writing an output file failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Encoding a JSON file failed.
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> RunnerError + '_ {
    move |source| RunnerError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Seeds per point under `opts`.
pub fn seeds(exp: &Experiment, opts: &RunnerOptions) -> u32 {
    opts.seeds.unwrap_or(exp.seeds)
}

/// Worker threads for `runs` runs under `opts`.
pub fn jobs(opts: &RunnerOptions, runs: usize) -> usize {
    let jobs = if opts.jobs == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        opts.jobs
    };
    jobs.clamp(1, runs.max(1))
}

/// The runs of `exp` that `opts` selects, in canonical order.
pub fn selected(exp: &Experiment, opts: &RunnerOptions) -> Vec<RunEntry> {
    campaign::entries(exp, seeds(exp, opts))
        .into_iter()
        .filter(|e| opts.select.contains(e))
        .collect()
}

/// Runs every point of `exp` with every seed (or the share [`RunnerOptions::select`] picks),
/// `run` doing each run, and reports progress. With [`RunnerOptions::out`], each result is
/// stored there and stored results are reused ([`crate::campaign`]).
pub fn run_all(
    exp: &Experiment,
    opts: &RunnerOptions,
    run: &RunFn<'_>,
    progress: &ProgressFn<'_>,
) -> Result<Outcome, RunnerError> {
    let mut reused = Vec::new();
    let mut work: Vec<RunEntry> = Vec::new();
    for e in selected(exp, opts) {
        let stored = match &opts.out {
            Some(out) if !opts.fresh => campaign::load_run(out, &e.id),
            _ => None,
        };
        match stored {
            Some(s) if s.error.is_none() => reused.push(s.record(&e)),
            _ => work.push(e),
        }
    }
    if let Some(out) = &opts.out {
        let dir = out.join(campaign::RUNS_DIR);
        fs::create_dir_all(&dir).map_err(io_err(&dir))?;
    }
    // Directories for per-run files.
    let mut per_run = Vec::with_capacity(work.len());
    for e in &work {
        let (point, seed) = (e.point, e.seed);
        let sc = &exp.points[point].scenario;
        let file = |dir: &str, ext: &str| -> Result<Option<PathBuf>, RunnerError> {
            let Some(out) = &opts.out else {
                return Ok(None);
            };
            let dir = out.join(dir);
            fs::create_dir_all(&dir).map_err(io_err(&dir))?;
            Ok(Some(dir.join(format!("point{point}-seed{seed}.{ext}"))))
        };
        per_run.push(RunOptions {
            seed,
            pcap: if sc.pcap.is_some() {
                file("pcap", "pcap")?
            } else {
                None
            },
            timeseries: if sc.timeseries.is_some() {
                file("timeseries", "csv")?
            } else {
                None
            },
            fault: None,
            trace: if sc.trace {
                file("trace", "d")?.map(|f| f.with_extension(""))
            } else {
                None
            },
            qlog: if sc.qlog {
                file("qlog", "d")?.map(|f| f.with_extension(""))
            } else {
                None
            },
            sequence: if sc.sequence {
                file("sequence", "csv")?
            } else {
                None
            },
        });
    }

    let total = work.len();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<RunRecord>> = Mutex::new(Vec::with_capacity(total));
    let store_error: Mutex<Option<RunnerError>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..jobs(opts, total) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(e) = work.get(i) else {
                        break;
                    };
                    let scenario = &exp.points[e.point].scenario;
                    let result = match catch_unwind(AssertUnwindSafe(|| run(scenario, &per_run[i])))
                    {
                        Ok(Ok(r)) => Ok(r),
                        Ok(Err(e)) => Err(e.to_string()),
                        Err(panic) => Err(format!("panicked: {}", panic_message(&*panic))),
                    };
                    let record = RunRecord {
                        point: e.point,
                        seed: e.seed,
                        id: e.id.clone(),
                        result,
                    };
                    if let Some(out) = &opts.out
                        && let Err(err) = campaign::store_run(out, &record, &scenario.name)
                    {
                        store_error
                            .lock()
                            .unwrap_or_else(std::sync::PoisonError::into_inner)
                            .get_or_insert(err);
                    }
                    let finished = done.fetch_add(1, Ordering::Relaxed) + 1;
                    progress(&record, finished, total);
                    results
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(record);
                }
            });
        }
    });
    if let Some(e) = store_error
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
    {
        return Err(e);
    }
    let mut runs = results
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let reused_count = reused.len();
    runs.extend(reused);
    runs.sort_by_key(|r| (r.point, r.seed));
    Ok(Outcome {
        runs,
        reused: reused_count,
    })
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(no message)".to_string()
    }
}

/// summary.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryFile {
    /// The scenario's name.
    pub scenario: String,
    /// The scenario file.
    pub file: String,
    /// Seeds per point.
    pub seeds: u32,
    /// The swept keys, in sweep order.
    pub sweep: Vec<String>,
    /// One entry per point, in sweep order.
    pub points: Vec<PointSummary>,
}

/// One point of summary.json.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PointSummary {
    /// Point index.
    pub index: usize,
    /// The swept parameters' values.
    pub params: Params,
    /// Runs done.
    pub runs: usize,
    /// Runs that failed.
    pub failed: usize,
    /// Metric name → statistics over the seeds that succeeded.
    pub metrics: BTreeMap<String, Summary>,
}

/// What the aggregated files of an experiment are made of besides its runs: the scenario,
/// seeds, sweep and every point's parameters (stored in campaign.json so that a merge needs
/// no scenario file).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Layout {
    /// The scenario's name.
    pub scenario: String,
    /// The scenario file, as given.
    pub file: String,
    /// Seeds per point.
    pub seeds: u32,
    /// The swept keys, in sweep order.
    pub sweep: Vec<String>,
    /// Every point, in sweep order.
    pub points: Vec<LayoutPoint>,
}

/// One point of a [`Layout`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutPoint {
    /// Point index.
    pub index: usize,
    /// The swept parameters' values.
    pub params: Params,
}

impl Layout {
    /// The layout of `exp` with `seeds` seeds per point.
    pub fn of(exp: &Experiment, seeds: u32) -> Layout {
        Layout {
            scenario: exp.name.clone(),
            file: exp.file.display().to_string(),
            seeds,
            sweep: exp.sweep.clone(),
            points: exp
                .points
                .iter()
                .map(|p| LayoutPoint {
                    index: p.index,
                    params: p.params.clone(),
                })
                .collect(),
        }
    }
}

/// Statistics of every metric of every point.
pub fn summarize(exp: &Experiment, outcome: &Outcome, seeds: u32) -> SummaryFile {
    summarize_layout(&Layout::of(exp, seeds), outcome)
}

/// Statistics of every metric of every point of `layout`.
pub fn summarize_layout(layout: &Layout, outcome: &Outcome) -> SummaryFile {
    let points = layout
        .points
        .iter()
        .map(|p| {
            let runs: Vec<&RunRecord> =
                outcome.runs.iter().filter(|r| r.point == p.index).collect();
            let mut values: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
            for r in &runs {
                if let Ok(res) = &r.result {
                    for (k, v) in &res.metrics {
                        values.entry(k).or_default().push(*v);
                    }
                }
            }
            PointSummary {
                index: p.index,
                params: p.params.clone(),
                runs: runs.len(),
                failed: runs.iter().filter(|r| r.result.is_err()).count(),
                metrics: values
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), Summary::of(&v)))
                    .collect(),
            }
        })
        .collect();
    SummaryFile {
        scenario: layout.scenario.clone(),
        file: layout.file.clone(),
        seeds: layout.seeds,
        sweep: layout.sweep.clone(),
        points,
    }
}

/// Writes runs.csv, summary.csv and summary.json into `dir` (created if needed).
pub fn write_outputs(
    dir: &Path,
    exp: &Experiment,
    outcome: &Outcome,
    summary: &SummaryFile,
) -> Result<(), RunnerError> {
    write_layout_outputs(dir, &Layout::of(exp, summary.seeds), outcome, summary)
}

/// [`write_outputs`] from a [`Layout`].
pub fn write_layout_outputs(
    dir: &Path,
    layout: &Layout,
    outcome: &Outcome,
    summary: &SummaryFile,
) -> Result<(), RunnerError> {
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    write_file(
        &dir.join("runs.csv"),
        runs_csv_layout(layout, outcome).as_bytes(),
    )?;
    write_file(&dir.join("summary.csv"), summary_csv(summary).as_bytes())?;
    let mut json = serde_json::to_string_pretty(summary)?;
    json.push('\n');
    write_file(&dir.join("summary.json"), json.as_bytes())
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), RunnerError> {
    let mut f = fs::File::create(path).map_err(io_err(path))?;
    f.write_all(bytes).map_err(io_err(path))
}

/// runs.csv as text.
pub fn runs_csv(exp: &Experiment, outcome: &Outcome) -> String {
    runs_csv_layout(&Layout::of(exp, 0), outcome)
}

/// runs.csv of `layout` as text.
pub fn runs_csv_layout(layout: &Layout, outcome: &Outcome) -> String {
    let metrics: BTreeSet<&str> = outcome
        .runs
        .iter()
        .filter_map(|r| r.result.as_ref().ok())
        .flat_map(|r| r.metrics.keys().map(String::as_str))
        .collect();
    let mut out = String::new();
    let mut header: Vec<&str> = vec!["point"];
    header.extend(layout.sweep.iter().map(String::as_str));
    header.push("seed");
    header.extend(metrics.iter().copied());
    header.extend(["events", "error"]);
    csv_row(&mut out, header);
    for r in &outcome.runs {
        let mut row = vec![r.point.to_string()];
        if let Some(p) = layout.points.get(r.point) {
            row.extend(p.params.0.iter().map(|(_, v)| display_value(v)));
        }
        row.push(r.seed.to_string());
        match &r.result {
            Ok(res) => {
                row.extend(
                    metrics
                        .iter()
                        .map(|m| res.metrics.get(*m).map_or(String::new(), |v| number(*v))),
                );
                row.push(res.events.to_string());
                row.push(String::new());
            }
            Err(e) => {
                row.extend(metrics.iter().map(|_| String::new()));
                row.push(String::new());
                row.push(e.clone());
            }
        }
        csv_row(&mut out, row);
    }
    out
}

/// summary.csv as text.
pub fn summary_csv(summary: &SummaryFile) -> String {
    let mut out = String::new();
    let mut header: Vec<&str> = vec!["point"];
    header.extend(summary.sweep.iter().map(String::as_str));
    header.extend(["metric", "n", "mean", "std", "ci95", "min", "max"]);
    csv_row(&mut out, header);
    for p in &summary.points {
        for (name, s) in &p.metrics {
            let mut row = vec![p.index.to_string()];
            row.extend(p.params.0.iter().map(|(_, v)| display_value(v)));
            row.push(name.clone());
            row.push(s.n.to_string());
            row.extend([s.mean, s.std, s.ci95, s.min, s.max].map(number));
            csv_row(&mut out, row);
        }
    }
    out
}

/// A number for CSV: shortest exact decimal; NaN as an empty cell.
fn number(v: f64) -> String {
    if v.is_nan() {
        String::new()
    } else {
        v.to_string()
    }
}

fn csv_row<S: AsRef<str>>(out: &mut String, cells: impl IntoIterator<Item = S>) {
    for (i, c) in cells.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let c = c.as_ref();
        if c.contains([',', '"', '\n', '\r']) {
            let _ = write!(out, "\"{}\"", c.replace('"', "\"\""));
        } else {
            out.push_str(c);
        }
    }
    out.push('\n');
}

/// What [`run_experiment`] did.
#[derive(Debug, Clone)]
pub struct Report {
    /// Every run.
    pub outcome: Outcome,
    /// The statistics written to summary.json.
    pub summary: SummaryFile,
}

/// Runs `exp` ([`run_all`]) and writes the output files into `dir` ([`write_outputs`]), also
/// when some runs failed; check [`Outcome::failures`]. `dir` becomes a campaign directory
/// (campaign.json, runs/); when [`RunnerOptions::select`] picks a share of the runs, only
/// those per-run files are written, not the aggregated ones (the summary returned covers
/// the share).
pub fn run_experiment(
    exp: &Experiment,
    dir: &Path,
    opts: &RunnerOptions,
    run: &RunFn<'_>,
    progress: &ProgressFn<'_>,
) -> Result<Report, RunnerError> {
    let opts = RunnerOptions {
        out: Some(opts.out.clone().unwrap_or_else(|| dir.to_path_buf())),
        ..opts.clone()
    };
    let seeds = seeds(exp, &opts);
    fs::create_dir_all(dir).map_err(io_err(dir))?;
    Manifest::new(exp, seeds).write(dir)?;
    let outcome = run_all(exp, &opts, run, progress)?;
    let summary = summarize(exp, &outcome, seeds);
    if opts.select.is_all() {
        write_outputs(dir, exp, &outcome, &summary)?;
    }
    Ok(Report { outcome, summary })
}
