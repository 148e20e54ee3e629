//! Reproductions of papers' figures: the scenario files under `scenarios/papers/` (built
//! into the binary), the data points each paper states in its text, and a report that puts
//! the paper's numbers next to braid's. `braid reproduce cmt-scheduling` drives
//! [`cmt_scheduling`], `braid reproduce ls-sctp` [`ls_sctp`] (Abd El Al et al.), `braid reproduce
//! spurious` [`spurious()`] (Ladha et al.).
//!
//! "Transmission Scheduling Optimizations for Concurrent Multipath Transfer" (Dreibholz et al.):
//! Fig. 4 and 5 come from `cmt-fig4.toml` (goodput, and per-stream delay of the same runs),
//! Fig. 6 from `cmt-fig6.toml`, Fig. 7 from `cmt-fig7.toml`.
//!
//! Campaigns ([`crate::campaign`]): each figure file's directory (`out/fig4`, ...) is a
//! campaign directory; `out/reproduce.json` ([`ReproduceManifest`]) records the variant
//! (quick, seeds). [`cmt_scheduling_campaign`] with a shard runs only the shard's runs of
//! every figure file (run *k* of a figure file belongs to shard *k* mod *n*) and writes no
//! report; [`cmt_merge`] combines shards into the files one machine writes.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::campaign::{self, Select, Shard};
use crate::load::{self, Experiment};
use crate::plot;
use crate::run::{RunOptions, RunResult, SimError};
use crate::runner::{self, ProgressFn, RunnerOptions, SummaryFile};
use crate::scenario::Scenario;
use crate::stats::Summary;
use crate::sweep::display_value;
use crate::units::Dur;

mod cmt;
mod ls;
mod ls_report;
mod report;
mod spurious;
mod spurious_report;
mod verdict;

pub use cmt::{
    CMT_DEPARTURES, FULL_RATE_SHARE, cmt_checks, cmt_claims, fig6_sigma_kib, payload_mbps,
};
pub use ls::{
    LS_ASSUMPTIONS, LS_DEPARTURES, LS_SCTP, LsFigure, LsSeries, PathSample, PathSamples, RunSeries,
    VARIANTS, assumption_variant, eq1_max_rtt_bytes, ls_checks, ls_claims, ls_experiment, ls_sctp,
    ls_sctp_campaign, path_payload_mbps,
};
pub use ls_report::ls_report;
pub use report::cmt_report;
pub use spurious::{
    Micro, SPURIOUS, SPURIOUS_DEPARTURES, SPURIOUS_SENSITIVITY, Sensitivity, SpuriousFigure,
    cmt_goodput, cmt_recovered, detection_inactive, is_setup, sensitivity_experiments, spurious,
    spurious_campaign, spurious_checks, spurious_claims, spurious_experiment,
};
pub use spurious_report::{EXPLAIN_PCT, fill, spurious_report, unresolved_tokens};
pub use verdict::{
    Check, Citations, Claim, Departure, Expect, TOLERANCE_PCT, Verdict, departure, mismatches,
};

/// One scenario file of a reproduction.
#[derive(Debug, Clone, Copy)]
pub struct FigureFile {
    /// Short name, also the output subdirectory (`fig4`).
    pub id: &'static str,
    /// The file as in the repository.
    pub file: &'static str,
    /// Its text.
    pub text: &'static str,
    /// The σ values (`association.buffer`) of the quick run.
    pub quick_buffers: &'static [&'static str],
}

/// The scenario files of Dreibholz et al..
pub const CMT_SCHEDULING: [FigureFile; 6] = [
    FigureFile {
        id: "fig4",
        file: "scenarios/papers/cmt-fig4.toml",
        text: include_str!("../../scenarios/papers/cmt-fig4.toml"),
        // 64 KiB: the 10/10 ms point; 160–320 KiB: where Fixed and RR reach full rate at
        // δB = 75 ms (the smallest σ at full rate is a number of the report).
        quick_buffers: &[
            "64KiB", "160KiB", "192KiB", "224KiB", "256KiB", "288KiB", "320KiB",
        ],
    },
    FigureFile {
        id: "fig6",
        file: "scenarios/papers/cmt-fig6.toml",
        text: include_str!("../../scenarios/papers/cmt-fig6.toml"),
        // 128 and 192 KiB: the σ of Equation (1) for ρB = 25 and 50 Mbit/s
        // (cmt::fig6_sigma_kib); 320 KiB–1 MiB: where braid's RR gets there.
        quick_buffers: &["128KiB", "192KiB", "320KiB", "640KiB", "1MiB"],
    },
    FigureFile {
        id: "fig7",
        file: "scenarios/papers/cmt-fig7.toml",
        text: include_str!("../../scenarios/papers/cmt-fig7.toml"),
        // The two σ the paper quotes numbers at (§6.3).
        quick_buffers: &["128KiB", "256KiB"],
    },
    FigureFile {
        id: "fig4-assumptions",
        file: "scenarios/papers/cmt-fig4-assumptions.toml",
        text: include_str!("../../scenarios/papers/cmt-fig4-assumptions.toml"),
        quick_buffers: &["160KiB", "192KiB", "224KiB", "256KiB", "288KiB", "320KiB"],
    },
    FigureFile {
        id: "fig6-assumptions",
        file: "scenarios/papers/cmt-fig6-assumptions.toml",
        text: include_str!("../../scenarios/papers/cmt-fig6-assumptions.toml"),
        // The σ at which the report compares Fig. 6 (all its sweep has).
        quick_buffers: &["128KiB", "192KiB", "320KiB"],
    },
    FigureFile {
        id: "fig7-assumptions",
        file: "scenarios/papers/cmt-fig7-assumptions.toml",
        text: include_str!("../../scenarios/papers/cmt-fig7-assumptions.toml"),
        quick_buffers: &["128KiB", "256KiB"],
    },
];

/// Seeds per point of the quick run.
pub const QUICK_SEEDS: u32 = 2;
/// Warm-up of the quick run.
pub const QUICK_WARMUP: std::time::Duration = std::time::Duration::from_secs(10);
/// Measurement of the quick run.
pub const QUICK_MEASUREMENT: std::time::Duration = std::time::Duration::from_secs(30);

/// How to reproduce.
#[derive(Debug, Clone, Default)]
pub struct ReproduceOptions {
    /// Fewer seeds, a shorter measurement and fewer σ points.
    pub quick: bool,
    /// Output directory.
    pub out: PathBuf,
    /// Worker threads (0: all cores).
    pub jobs: usize,
    /// Seeds per point instead of the paper's 24 (or the quick run's 2).
    pub seeds: Option<u32>,
}

/// Why a reproduction failed.
#[derive(Debug, thiserror::Error)]
pub enum ReproduceError {
    /// A built-in scenario does not load (a bug).
    #[error(transparent)]
    Load(#[from] load::Diagnostic),
    /// Running or writing failed.
    #[error(transparent)]
    Runner(#[from] runner::RunnerError),
    /// Drawing failed.
    #[error(transparent)]
    Plot(#[from] plot::PlotError),
    /// Merging failed.
    #[error(transparent)]
    Campaign(#[from] campaign::CampaignError),
    /// Shards of different variants (quick, seeds) or braid versions.
    #[error("{0}")]
    Mismatch(String),
    /// Writing the report failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// The experiment of `fig`, cut down to the quick variant if asked.
pub fn experiment(fig: &FigureFile, quick: bool) -> Result<Experiment, load::Diagnostic> {
    let mut exp = load::load_str(fig.text, Path::new(fig.file))?;
    if quick {
        exp.points.retain(|p| {
            p.params
                .get("association.buffer")
                .is_some_and(|v| fig.quick_buffers.contains(&display_value(v).as_str()))
        });
        for (i, p) in exp.points.iter_mut().enumerate() {
            p.index = i;
            p.scenario.warmup = Dur(QUICK_WARMUP);
            p.scenario.duration = Dur(QUICK_WARMUP + QUICK_MEASUREMENT);
            p.scenario.seeds = QUICK_SEEDS;
        }
        exp.seeds = QUICK_SEEDS;
    }
    Ok(exp)
}

/// The summaries of one reproduction, by figure file id.
#[derive(Debug, Clone)]
pub struct Results {
    /// (figure file id, summary).
    pub summaries: Vec<(&'static str, SummaryFile)>,
}

impl Results {
    /// The summary of figure file `id`.
    pub fn summary(&self, id: &str) -> Option<&SummaryFile> {
        self.summaries
            .iter()
            .find(|(i, _)| *i == id)
            .map(|(_, s)| s)
    }

    /// The statistics of `metric` at the point of figure file `id` where every key of `at`
    /// has its value (as written in the file).
    pub fn get(&self, id: &str, at: &[(&str, &str)], metric: &str) -> Option<Summary> {
        lookup(self.summary(id)?, at, metric)
    }

    /// The mean of [`Results::get`], NaN if absent.
    pub fn mean(&self, id: &str, at: &[(&str, &str)], metric: &str) -> f64 {
        self.get(id, at, metric).map_or(f64::NAN, |s| s.mean)
    }
}

/// "224KiB" as the report writes it: "224 KiB".
pub fn display_kib(v: &str) -> String {
    match v.find(|c: char| !c.is_ascii_digit()) {
        Some(i) if i > 0 => format!("{} {}", &v[..i], &v[i..]),
        _ => v.to_string(),
    }
}

/// The statistics of `metric` at the point of `summary` matching `at`.
pub fn lookup(summary: &SummaryFile, at: &[(&str, &str)], metric: &str) -> Option<Summary> {
    summary
        .points
        .iter()
        .find(|p| matches(&p.params, at))
        .and_then(|p| p.metrics.get(metric).copied())
}

/// Whether every key of `at` has its value (as written in the file) in `params`.
pub fn matches<K: AsRef<str>, V: AsRef<str>>(params: &crate::sweep::Params, at: &[(K, V)]) -> bool {
    at.iter().all(|(k, want)| {
        params
            .get(k.as_ref())
            .is_some_and(|v| display_value(v) == want.as_ref())
    })
}

/// How a reproduction shares its runs with other machines.
#[derive(Debug, Clone, Default)]
pub struct CampaignOptions {
    /// Run only this shard of every figure file's runs (no plots, no report).
    pub shard: Option<Shard>,
    /// Run again also runs whose results are stored in the output directory.
    pub fresh: bool,
}

/// `out/reproduce.json`: which reproduction, which variant, which braid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReproduceManifest {
    /// [`campaign::FORMAT`].
    pub format: u32,
    /// [`campaign::VERSION`].
    pub braid: String,
    /// The reproduction (`cmt-scheduling`).
    pub reproduction: String,
    /// The quick variant.
    pub quick: bool,
    /// Seeds per point, if not the default.
    pub seeds: Option<u32>,
}

/// The file name of [`ReproduceManifest`].
pub const REPRODUCE_MANIFEST: &str = "reproduce.json";

impl ReproduceManifest {
    fn of(opts: &ReproduceOptions) -> Self {
        Self::named("cmt-scheduling", opts)
    }

    fn named(reproduction: &str, opts: &ReproduceOptions) -> Self {
        ReproduceManifest {
            format: campaign::FORMAT,
            braid: campaign::VERSION.to_string(),
            reproduction: reproduction.into(),
            quick: opts.quick,
            seeds: opts.seeds,
        }
    }

    /// Reads `dir/reproduce.json`, if there is one.
    pub fn read(dir: &Path) -> Result<Option<Self>, ReproduceError> {
        let path = dir.join(REPRODUCE_MANIFEST);
        match std::fs::read_to_string(&path) {
            Ok(t) => serde_json::from_str(&t)
                .map(Some)
                .map_err(|e| ReproduceError::Mismatch(format!("{}: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(ReproduceError::Io { path, source }),
        }
    }

    fn write(&self, dir: &Path) -> Result<(), ReproduceError> {
        std::fs::create_dir_all(dir).map_err(|source| ReproduceError::Io {
            path: dir.to_path_buf(),
            source,
        })?;
        let mut json = serde_json::to_string_pretty(self).map_err(runner::RunnerError::from)?;
        json.push('\n');
        Ok(campaign::write_atomic(
            &dir.join(REPRODUCE_MANIFEST),
            json.as_bytes(),
        )?)
    }
}

/// Runs Dreibholz et al.'s figures (every point × seed through [`runner::run_experiment`], into
/// `out/<fig>/`), draws the plots into `out/` and writes `out/report.md`.
///
/// `progress(figure id, done, total)` is called after each run.
pub fn cmt_scheduling(
    opts: &ReproduceOptions,
    run: &(dyn Fn(&Scenario, &RunOptions) -> Result<RunResult, SimError> + Sync),
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<(Results, Vec<runner::Report>), ReproduceError> {
    cmt_scheduling_campaign(opts, &CampaignOptions::default(), run, progress)
}

/// [`cmt_scheduling`], or one shard of it (`camp.shard`: per-run results of the shard's runs
/// of every figure file, no plots, no report; [`cmt_merge`] makes them).
pub fn cmt_scheduling_campaign(
    opts: &ReproduceOptions,
    camp: &CampaignOptions,
    run: &(dyn Fn(&Scenario, &RunOptions) -> Result<RunResult, SimError> + Sync),
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<(Results, Vec<runner::Report>), ReproduceError> {
    ReproduceManifest::of(opts).write(&opts.out)?;
    let figures = CMT_SCHEDULING
        .iter()
        .map(|fig| Ok((fig.id, experiment(fig, opts.quick)?)));
    let (results, reports) = run_figures(opts, camp, figures, run, progress)?;
    if camp.shard.is_none() {
        write_report(&results, opts)?;
    }
    Ok((results, reports))
}

/// Runs each figure file's experiment into `opts.out/<id>/` (this shard's runs only, with
/// `camp.shard`), calling `progress(id, done, total)` after each run.
fn run_figures(
    opts: &ReproduceOptions,
    camp: &CampaignOptions,
    figures: impl Iterator<Item = Result<(&'static str, Experiment), load::Diagnostic>>,
    run: &(dyn Fn(&Scenario, &RunOptions) -> Result<RunResult, SimError> + Sync),
    progress: &(dyn Fn(&str, usize, usize) + Sync),
) -> Result<(Results, Vec<runner::Report>), ReproduceError> {
    let mut summaries = Vec::new();
    let mut reports = Vec::new();
    for fig in figures {
        let (id, exp) = fig?;
        let ropts = RunnerOptions {
            jobs: opts.jobs,
            seeds: opts.seeds,
            out: None,
            select: camp.shard.map_or(Select::All, Select::Shard),
            fresh: camp.fresh,
        };
        let p: &ProgressFn<'_> = &|_, done, total| progress(id, done, total);
        let report = runner::run_experiment(&exp, &opts.out.join(id), &ropts, run, p)?;
        summaries.push((id, report.summary.clone()));
        reports.push(report);
    }
    Ok((Results { summaries }, reports))
}

/// Draws the plots into `opts.out` and writes `opts.out/report.md`.
fn write_report(results: &Results, opts: &ReproduceOptions) -> Result<(), ReproduceError> {
    let mut plots = Vec::new();
    for (name, chart) in report::cmt_charts(results)? {
        plot::render(&chart, &opts.out.join(&name))?;
        plots.push(name);
    }
    let md = cmt_report(results, opts, &plots);
    let path = opts.out.join("report.md");
    std::fs::write(&path, md).map_err(|source| ReproduceError::Io { path, source })
}

/// Combines shards of `braid reproduce cmt-scheduling` (directories with reproduce.json)
/// into `out`: every figure file's directory merged ([`campaign::merge`]), the plots and
/// report.md, as one machine running everything writes them. The variant (quick, seeds)
/// comes from the shards, which must agree; returns it with the results.
pub fn cmt_merge(
    dirs: &[PathBuf],
    out: &Path,
) -> Result<(Results, Vec<campaign::Merged>, ReproduceOptions), ReproduceError> {
    let mut manifest: Option<(ReproduceManifest, &PathBuf)> = None;
    for d in dirs {
        let m = ReproduceManifest::read(d)?.ok_or_else(|| {
            ReproduceError::Mismatch(format!(
                "{}: not a reproduction's directory (no {REPRODUCE_MANIFEST}; `braid reproduce cmt-scheduling --shard I/N --out DIR` writes one)",
                d.display()
            ))
        })?;
        match &manifest {
            None => manifest = Some((m, d)),
            Some((first, fd)) if *first != m => {
                return Err(ReproduceError::Mismatch(format!(
                    "cannot merge different reproductions: {} is {}, {} is {} (braid version, --quick or --seeds differ)",
                    fd.display(),
                    serde_json::to_string(first).unwrap_or_default(),
                    d.display(),
                    serde_json::to_string(&m).unwrap_or_default()
                )));
            }
            Some(_) => {}
        }
    }
    let (m, _) = manifest.ok_or(campaign::CampaignError::NoDirs)?;
    let opts = ReproduceOptions {
        quick: m.quick,
        out: out.to_path_buf(),
        jobs: 0,
        seeds: m.seeds,
    };
    let mut summaries = Vec::new();
    let mut merged = Vec::new();
    for fig in &CMT_SCHEDULING {
        let fig_dirs: Vec<PathBuf> = dirs.iter().map(|d| d.join(fig.id)).collect();
        let mg = campaign::merge(&fig_dirs, &out.join(fig.id))?;
        summaries.push((fig.id, mg.summary.clone()));
        merged.push(mg);
    }
    m.write(out)?;
    let results = Results { summaries };
    write_report(&results, &opts)?;
    Ok((results, merged, opts))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figure_files_load_and_quick_cuts_them_down() {
        for fig in &CMT_SCHEDULING {
            let full = experiment(fig, false).unwrap();
            let quick = experiment(fig, true).unwrap();
            // The paper's 24 runs per point (§5); the assumptions study takes 6.
            let seeds = if fig.id.ends_with("-assumptions") {
                6
            } else {
                24
            };
            assert_eq!(full.seeds, seeds, "{}", fig.id);
            assert_eq!(quick.seeds, QUICK_SEEDS);
            let bufs = |e: &Experiment| {
                let mut b: Vec<String> = e
                    .points
                    .iter()
                    .filter_map(|p| p.params.get("association.buffer").map(display_value))
                    .collect();
                b.sort();
                b.dedup();
                b
            };
            // Every quick σ is one of the full run's.
            let nbuf = bufs(&full).len();
            assert!(bufs(&quick).iter().all(|b| bufs(&full).contains(b)));
            assert_eq!(bufs(&quick).len(), fig.quick_buffers.len(), "{}", fig.id);
            assert_eq!(
                quick.points.len() * nbuf,
                full.points.len() * fig.quick_buffers.len(),
                "{}",
                fig.id
            );
            for (i, p) in quick.points.iter().enumerate() {
                assert_eq!(p.index, i);
                assert_eq!(p.scenario.warmup.0, QUICK_WARMUP);
                crate::run::validate(&p.scenario).unwrap();
            }
        }
    }
}
