//! Reproductions of papers' figures: the scenario files under `scenarios/papers/` (built
//! into the binary), the data points each paper states in its text, and a report that puts
//! the paper's numbers next to braid's. `braid reproduce cmt-scheduling` drives
//! [`cmt_scheduling`].
//!
//! 001_*.txt ("Transmission Scheduling Optimizations for Concurrent Multipath Transfer"):
//! Fig. 4 and 5 come from `cmt-fig4.toml` (goodput, and per-stream delay of the same runs),
//! Fig. 6 from `cmt-fig6.toml`, Fig. 7 from `cmt-fig7.toml`.
//!
//! Campaigns ([`crate::campaign`]): each figure file's directory (`out/fig4`, ...) is a
//! campaign directory; `out/reproduce.json` ([`ReproduceManifest`]) records the variant
//! (quick, seeds). [`cmt_scheduling_campaign`] with a shard runs only the shard's runs of
//! every figure file (run *k* of a figure file belongs to shard *k* mod *n*) and writes no
//! report; [`cmt_merge`] combines shards into the files one machine writes.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::campaign::{self, Select, Shard};
use crate::load::{self, Experiment};
use crate::plot::{self, Chart, PlotSpec, Series};
use crate::run::{RunOptions, RunResult, SimError};
use crate::runner::{self, ProgressFn, RunnerOptions, SummaryFile};
use crate::scenario::Scenario;
use crate::stats::Summary;
use crate::sweep::display_value;
use crate::units::Dur;

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

/// The scenario files of 001_*.txt.
pub const CMT_SCHEDULING: [FigureFile; 3] = [
    FigureFile {
        id: "fig4",
        file: "scenarios/papers/cmt-fig4.toml",
        text: include_str!("../../../scenarios/papers/cmt-fig4.toml"),
        // 64 KiB: the 10/10 ms point; 224 and 288 KiB: where Fixed and RR reach full rate;
        // 192 KiB: just below, where the schedulers differ.
        quick_buffers: &["64KiB", "192KiB", "224KiB", "288KiB"],
    },
    FigureFile {
        id: "fig6",
        file: "scenarios/papers/cmt-fig6.toml",
        text: include_str!("../../../scenarios/papers/cmt-fig6.toml"),
        // 640 KiB and 1 MiB: large enough for Equation 1 with braid's queueing delay on path
        // A (the paper's "sufficiently large σ"; 001 §6.2 does not give the value).
        quick_buffers: &["128KiB", "256KiB", "640KiB", "1MiB"],
    },
    FigureFile {
        id: "fig7",
        file: "scenarios/papers/cmt-fig7.toml",
        text: include_str!("../../../scenarios/papers/cmt-fig7.toml"),
        // The two σ the paper quotes numbers at (§6.3).
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

/// What the paper says about one value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Expect {
    /// About this value.
    About(f64),
    /// Below this value.
    Below(f64),
    /// Above this value.
    Above(f64),
}

impl Expect {
    /// Deviation of `v` from the paper in %, for a stated value.
    pub fn deviation_pct(&self, v: f64) -> Option<f64> {
        match *self {
            Expect::About(p) if p != 0.0 => Some((v - p) / p * 100.0),
            _ => None,
        }
    }

    /// Whether `v` satisfies a bound (always true for a stated value).
    pub fn holds(&self, v: f64) -> bool {
        match *self {
            Expect::About(_) => true,
            Expect::Below(b) => v < b,
            Expect::Above(b) => v > b,
        }
    }

    fn show(&self) -> String {
        match *self {
            Expect::About(p) => format!("≈ {p}"),
            Expect::Below(p) => format!("< {p}"),
            Expect::Above(p) => format!("> {p}"),
        }
    }
}

/// One data point the paper states, with braid's value.
#[derive(Debug, Clone)]
pub struct Check {
    /// The figure (`Fig. 4`).
    pub figure: &'static str,
    /// The curve and point in the paper's words.
    pub what: String,
    /// The metric compared.
    pub metric: String,
    /// The paper's value.
    pub paper: Expect,
    /// braid's mean and 95 % CI over the seeds (None: the point was not run).
    pub braid: Option<Summary>,
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

/// The statistics of `metric` at the point of `summary` matching `at`.
pub fn lookup(summary: &SummaryFile, at: &[(&str, &str)], metric: &str) -> Option<Summary> {
    summary
        .points
        .iter()
        .find(|p| {
            at.iter()
                .all(|(k, want)| p.params.get(k).is_some_and(|v| display_value(v) == *want))
        })
        .and_then(|p| p.metrics.get(metric).copied())
}

const SCHED: &str = "association.stream_scheduler";
const BUF: &str = "association.buffer";
const DELAY_B: &str = "path.B.delay";
const RATE_B: &str = "path.B.rate";
const SQINFO: &str = "traffic.0.sender_queue_info";
const NRSACK: &str = "association.nr_sack";

/// The largest σ a figure file ran with.
fn largest_buffer(fig: &FigureFile, quick: bool) -> &'static str {
    match (quick, fig.id) {
        (true, _) => fig.quick_buffers.last().copied().unwrap_or("320KiB"),
        (false, "fig6") => "1MiB",
        (false, _) => "320KiB",
    }
}

/// Every number 001_*.txt states in its text about Fig. 4–7 (§6), with braid's values.
pub fn cmt_checks(r: &Results, quick: bool) -> Vec<Check> {
    let mut out = Vec::new();
    let mut add = |figure, what: String, id: &str, at: &[(&str, &str)], metric: &str, paper| {
        out.push(Check {
            figure,
            what,
            metric: metric.to_string(),
            paper,
            braid: r.get(id, at, metric),
        });
    };
    // §6.1: "at σ=64 KiB ... around 19.2 Mbit/s is reached – regardless of the scheduling".
    for (s, name) in [("rr", "RR"), ("fixed", "Fixed")] {
        add(
            "Fig. 4",
            format!("δB = 10 ms, {name}, σ = 64 KiB"),
            "fig4",
            &[(DELAY_B, "10ms"), (SCHED, s), (BUF, "64KiB")],
            "goodput_mbps",
            Expect::About(19.2),
        );
    }
    // §6.1: "for δB=75 ms, Fixed already achieves the full bandwidth for σ=224 KiB – while
    // σ=288 KiB is required when using round-robin".
    add(
        "Fig. 4",
        "δB = 75 ms, Fixed, σ = 224 KiB (full rate)".into(),
        "fig4",
        &[(DELAY_B, "75ms"), (SCHED, "fixed"), (BUF, "224KiB")],
        "goodput_mbps",
        Expect::About(19.2),
    );
    add(
        "Fig. 4",
        "δB = 75 ms, RR, σ = 288 KiB (full rate)".into(),
        "fig4",
        &[(DELAY_B, "75ms"), (SCHED, "rr"), (BUF, "288KiB")],
        "goodput_mbps",
        Expect::About(19.2),
    );
    // §6.2, at a σ large enough for Equation 1.
    let fig6 = &CMT_SCHEDULING[1];
    let big = largest_buffer(fig6, quick);
    for (rate, rho_b) in [("25Mbit/s", 25.0), ("50Mbit/s", 50.0)] {
        let rr = [(RATE_B, rate), (SCHED, "rr"), (SQINFO, "false"), (BUF, big)];
        let fixed = [
            (RATE_B, rate),
            (SCHED, "fixed"),
            (SQINFO, "false"),
            (BUF, big),
        ];
        let sq = [
            (RATE_B, rate),
            (SCHED, "fixed"),
            (SQINFO, "true"),
            (BUF, big),
        ];
        for st in 0..2 {
            add(
                "Fig. 6",
                format!("ρB = {rho_b} Mbit/s, RR, stream {st}, σ = {big}: (ρA+ρB)/2"),
                "fig6",
                &rr,
                &format!("stream{st}_goodput_mbps"),
                Expect::About((10.0 + rho_b) / 2.0),
            );
        }
        for st in 0..2 {
            add(
                "Fig. 6",
                format!("ρB = {rho_b} Mbit/s, Fixed w/o sqinfo, stream {st}, σ = {big}"),
                "fig6",
                &fixed,
                &format!("stream{st}_goodput_mbps"),
                Expect::About(10.0),
            );
        }
        add(
            "Fig. 6",
            format!("ρB = {rho_b} Mbit/s, Fixed with sqinfo, stream 1, σ = {big}: ρB"),
            "fig6",
            &sq,
            "stream1_goodput_mbps",
            Expect::About(rho_b),
        );
        add(
            "Fig. 6",
            format!("ρB = {rho_b} Mbit/s, Fixed with sqinfo, total, σ = {big}: ρA+ρB"),
            "fig6",
            &sq,
            "goodput_mbps",
            Expect::About(10.0 + rho_b),
        );
    }
    // §6.3: curve 4 (RR, no NR-SACK) and curve 2 (Fixed, no NR-SACK) at σ = 256 KiB, curve 1
    // (Fixed with NR-SACK) at σ = 128 KiB.
    let rr = [(NRSACK, "false"), (SCHED, "rr"), (BUF, "256KiB")];
    add(
        "Fig. 7",
        "RR, no NR-SACK, σ = 256 KiB".into(),
        "fig7",
        &rr,
        "goodput_mbps",
        Expect::Below(3.0),
    );
    add(
        "Fig. 7",
        "RR, no NR-SACK, σ = 256 KiB".into(),
        "fig7",
        &rr,
        "msg_delay_ms_mean",
        Expect::Above(600.0),
    );
    let fx = [(NRSACK, "false"), (SCHED, "fixed"), (BUF, "256KiB")];
    add(
        "Fig. 7",
        "Fixed, no NR-SACK, σ = 256 KiB (\"slightly above 5\")".into(),
        "fig7",
        &fx,
        "goodput_mbps",
        Expect::About(5.0),
    );
    add(
        "Fig. 7",
        "Fixed, no NR-SACK, σ = 256 KiB".into(),
        "fig7",
        &fx,
        "msg_delay_ms_mean",
        Expect::About(150.0),
    );
    let nr = [(NRSACK, "true"), (SCHED, "fixed"), (BUF, "128KiB")];
    add(
        "Fig. 7",
        "Fixed, NR-SACK, σ = 128 KiB".into(),
        "fig7",
        &nr,
        "goodput_mbps",
        Expect::About(20.0),
    );
    add(
        "Fig. 7",
        "Fixed, NR-SACK, σ = 128 KiB".into(),
        "fig7",
        &nr,
        "msg_delay_ms_mean",
        Expect::About(60.0),
    );
    out
}

/// A chart of one or more metrics, one curve per (variant, metric): each variant fixes every
/// swept key but `x`.
fn compose(
    summary: &SummaryFile,
    title: &str,
    y_label: &str,
    metrics: &[(&str, &str)],
    variants: &[(Vec<(&str, &str)>, String)],
) -> Result<Chart, plot::PlotError> {
    let mut chart: Option<Chart> = None;
    let mut series = Vec::new();
    for (fix, vlabel) in variants {
        for (metric, mlabel) in metrics {
            let spec = PlotSpec {
                x: BUF.into(),
                y: (*metric).into(),
                curves: None,
                fix: fix
                    .iter()
                    .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                    .collect(),
                title: None,
            };
            let c = plot::prepare(summary, &spec)?;
            let label = if mlabel.is_empty() {
                vlabel.clone()
            } else {
                format!("{vlabel}, {mlabel}")
            };
            series.extend(c.series.iter().map(|s| Series {
                label: Some(label.clone()),
                points: s.points.clone(),
            }));
            chart.get_or_insert(c);
        }
    }
    let mut c = chart.ok_or_else(|| plot::PlotError::Spec("nothing to plot".into()))?;
    c.title = title.into();
    // Keep the unit the plot module chose for the σ axis (KiB, or MiB when σ reaches 1 MiB).
    let unit = c
        .x_label
        .rfind('(')
        .map_or_else(|| "(KiB)".to_string(), |i| c.x_label[i..].to_string());
    c.x_label = format!("σ = send buffer = receive buffer {unit}");
    c.y_label = y_label.into();
    c.series = series;
    Ok(c)
}

/// The charts of 001_*.txt Fig. 4–7: (file name, chart).
fn cmt_charts(r: &Results) -> Result<Vec<(String, Chart)>, plot::PlotError> {
    let mut out = Vec::new();
    let scheds = [("rr", "RR"), ("fixed", "Fixed")];
    if let Some(s) = r.summary("fig4") {
        let mut variants = Vec::new();
        for (sc, name) in scheds {
            for d in ["10ms", "50ms", "75ms"] {
                variants.push((vec![(SCHED, sc), (DELAY_B, d)], format!("{name}, δB = {d}")));
            }
        }
        out.push((
            "fig4-throughput.png".into(),
            compose(
                s,
                "Fig. 4: throughput on dissimilar delay paths",
                "goodput (Mbit/s)",
                &[("goodput_mbps", "")],
                &variants,
            )?,
        ));
        for st in 0..2 {
            out.push((
                format!("fig5-stream{st}-delay.png"),
                compose(
                    s,
                    &format!("Fig. 5: mean message delay of stream {st}"),
                    "mean message delay (ms)",
                    &[(&format!("stream{st}_msg_delay_ms_mean"), "")],
                    &variants,
                )?,
            ));
        }
    }
    if let Some(s) = r.summary("fig6") {
        for rate in ["25Mbit/s", "50Mbit/s"] {
            let mut variants = Vec::new();
            for (sc, name) in scheds {
                for (q, qn) in [("false", "w/o sqinfo"), ("true", "with sqinfo")] {
                    variants.push((
                        vec![(SCHED, sc), (SQINFO, q), (RATE_B, rate)],
                        format!("{name} {qn}"),
                    ));
                }
            }
            out.push((
                format!("fig6-rhoB-{}.png", rate.trim_end_matches("Mbit/s")),
                compose(
                    s,
                    &format!("Fig. 6: per-stream goodput, ρB = {rate}"),
                    "goodput (Mbit/s)",
                    &[
                        ("stream0_goodput_mbps", "stream 0"),
                        ("stream1_goodput_mbps", "stream 1"),
                    ],
                    &variants,
                )?,
            ));
        }
    }
    if let Some(s) = r.summary("fig7") {
        let mut variants = Vec::new();
        for (sc, name) in scheds {
            for (n, nn) in [("true", "NR-SACK"), ("false", "no NR-SACK")] {
                variants.push((vec![(SCHED, sc), (NRSACK, n)], format!("{name}, {nn}")));
            }
        }
        out.push((
            "fig7-throughput.png".into(),
            compose(
                s,
                "Fig. 7: seven streams over three paths: throughput",
                "goodput (Mbit/s)",
                &[("goodput_mbps", "")],
                &variants,
            )?,
        ));
        out.push((
            "fig7-delay.png".into(),
            compose(
                s,
                "Fig. 7: seven streams over three paths: mean message delay",
                "mean message delay (ms)",
                &[("msg_delay_ms_mean", "")],
                &variants,
            )?,
        ));
    }
    Ok(out)
}

/// The qualitative claims of 001_*.txt §6 that carry no number: (claim, whether braid's
/// means agree, braid's values).
pub fn cmt_claims(r: &Results, quick: bool) -> Vec<(String, bool, String)> {
    let mut out = Vec::new();
    for d in ["50ms", "75ms"] {
        for b in if quick {
            CMT_SCHEDULING[0].quick_buffers
        } else {
            &["128KiB", "224KiB", "320KiB"]
        } {
            let at = [(DELAY_B, d), (SCHED, "fixed"), (BUF, *b)];
            let s0 = r.mean("fig4", &at, "stream0_msg_delay_ms_mean");
            let s1 = r.mean("fig4", &at, "stream1_msg_delay_ms_mean");
            out.push((
                format!(
                    "Fig. 5: Fixed, δB = {d}, σ = {b}: stream 0 (path A) has a smaller delay than stream 1"
                ),
                s0 < s1,
                format!("{s0:.1} ms vs {s1:.1} ms"),
            ));
        }
    }
    let fig6 = &CMT_SCHEDULING[1];
    let big = largest_buffer(fig6, quick);
    for rate in ["25Mbit/s", "50Mbit/s"] {
        let at = |sc, q| [(RATE_B, rate), (SCHED, sc), (SQINFO, q), (BUF, big)];
        let t_fixed = r.mean("fig6", &at("fixed", "false"), "goodput_mbps");
        let t_sq = r.mean("fig6", &at("fixed", "true"), "goodput_mbps");
        out.push((
            format!("Fig. 6: ρB = {rate}, σ = {big}: Fixed with sqinfo beats Fixed without"),
            t_sq > t_fixed,
            format!("{t_sq:.2} vs {t_fixed:.2} Mbit/s"),
        ));
    }
    for b in ["128KiB", "256KiB"] {
        let at = |n| [(NRSACK, n), (SCHED, "fixed"), (BUF, b)];
        let on = r.mean("fig7", &at("true"), "goodput_mbps");
        let off = r.mean("fig7", &at("false"), "goodput_mbps");
        out.push((
            format!("Fig. 7: σ = {b}: Fixed with NR-SACK beats Fixed without"),
            on > off,
            format!("{on:.2} vs {off:.2} Mbit/s"),
        ));
    }
    out
}

/// The markdown report: setup, the table "paper vs braid", the qualitative claims, the plots.
pub fn cmt_report(r: &Results, opts: &ReproduceOptions, plots: &[String]) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# 001: Transmission Scheduling Optimizations for CMT — paper vs braid\n"
    );
    let (seeds, meas) = if opts.quick {
        let sigmas: Vec<String> = CMT_SCHEDULING
            .iter()
            .map(|f| format!("{}: {}", f.id, f.quick_buffers.join(", ")))
            .collect();
        (
            QUICK_SEEDS,
            format!(
                "{} s warm-up, {} s measurement, σ only at {} (quick run)",
                QUICK_WARMUP.as_secs(),
                QUICK_MEASUREMENT.as_secs(),
                sigmas.join("; ")
            ),
        )
    } else {
        (
            24,
            "19 s warm-up, 300 s measurement, σ = 32…320 KiB (Fig. 6 up to 1 MiB)".into(),
        )
    };
    let seeds = opts.seeds.unwrap_or(seeds);
    let _ = writeln!(
        md,
        "Setup of 001_*.txt §5 (`scenarios/papers/cmt-fig*.toml`): {seeds} seeds per point, {meas}; \
         values are means with 95 % confidence intervals. Deviation = (braid − paper) / paper. \
         Goodput counts user data (1452 of 1500 bytes per packet).\n"
    );
    let _ = writeln!(
        md,
        "| figure | data point | metric | paper | braid | deviation |\n|---|---|---|---|---|---|"
    );
    for c in cmt_checks(r, opts.quick) {
        let (braid, dev) = match c.braid {
            Some(s) if s.n > 0 => {
                let ci = if s.ci95.is_nan() {
                    String::new()
                } else {
                    format!(" ± {:.2}", s.ci95)
                };
                let dev = match c.paper.deviation_pct(s.mean) {
                    Some(d) => format!("{d:+.1} %"),
                    None if c.paper.holds(s.mean) => "holds".into(),
                    None => "violated".into(),
                };
                (format!("{:.2}{ci}", s.mean), dev)
            }
            _ => ("–".into(), "not run".into()),
        };
        let _ = writeln!(
            md,
            "| {} | {} | `{}` | {} | {braid} | {dev} |",
            c.figure,
            c.what,
            c.metric,
            c.paper.show()
        );
    }
    let _ = writeln!(md, "\n## Qualitative claims\n");
    for (claim, ok, values) in cmt_claims(r, opts.quick) {
        let _ = writeln!(md, "* {} {claim} ({values})", if ok { "✓" } else { "✗" });
    }
    let _ = writeln!(md, "\n## Plots\n");
    for p in plots {
        let _ = writeln!(md, "![{p}]({p})");
    }
    md
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
        ReproduceManifest {
            format: campaign::FORMAT,
            braid: campaign::VERSION.to_string(),
            reproduction: "cmt-scheduling".into(),
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

/// Runs 001_*.txt's figures (every point × seed through [`runner::run_experiment`], into
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
    let mut summaries = Vec::new();
    let mut reports = Vec::new();
    for fig in &CMT_SCHEDULING {
        let exp = experiment(fig, opts.quick)?;
        let ropts = RunnerOptions {
            jobs: opts.jobs,
            seeds: opts.seeds,
            out: None,
            select: camp.shard.map_or(Select::All, Select::Shard),
            fresh: camp.fresh,
        };
        let id = fig.id;
        let p: &ProgressFn<'_> = &|_, done, total| progress(id, done, total);
        let report = runner::run_experiment(&exp, &opts.out.join(fig.id), &ropts, run, p)?;
        summaries.push((fig.id, report.summary.clone()));
        reports.push(report);
    }
    let results = Results { summaries };
    if camp.shard.is_none() {
        write_report(&results, opts)?;
    }
    Ok((results, reports))
}

/// Draws the plots into `opts.out` and writes `opts.out/report.md`.
fn write_report(results: &Results, opts: &ReproduceOptions) -> Result<(), ReproduceError> {
    let mut plots = Vec::new();
    for (name, chart) in cmt_charts(results)? {
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
            assert_eq!(full.seeds, 24, "{}", fig.id);
            assert_eq!(quick.seeds, QUICK_SEEDS);
            // σ values per figure file: 32–320 KiB in steps of 32; Fig. 6 also 384 KiB–1 MiB.
            let nbuf = if fig.id == "fig6" { 14 } else { 10 };
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
