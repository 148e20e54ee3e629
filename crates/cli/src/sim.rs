//! `braid sim`: run scenario files (sweep points × seeds, in parallel; whole, one shard or
//! single runs), list a campaign's runs, merge shards, plot the results, capture one run as
//! pcap, and benchmark the simulator. The work is done by `braid-sim`'s `load`, `runner`,
//! `campaign` and `plot`; this module parses arguments, shows progress and prints.

use std::path::{Path, PathBuf};
use std::time::Duration;

use braid_sim::campaign::{self, Select, Shard};
use braid_sim::load;
use braid_sim::plot::sequence::{self, SequenceSpec};
use braid_sim::plot::timeseries::{self, TimeSeriesSpec};
use braid_sim::plot::{self, PlotSpec, XAxis};
use braid_sim::reproduce;
use braid_sim::run::{self, RunOptions, RunResult};
use braid_sim::runner::{self, RunRecord, RunnerOptions};
use braid_sim::scenario::PcapSpec;
use braid_sim::stats::{self, Summary};
use braid_sim::sweep::display_value;
use clap::Subcommand;

/// Errors reported to the user.
type Error = Box<dyn std::error::Error>;

/// The built-in benchmark scenario (also `scenarios/bench.toml`).
const BENCH: &str = include_str!("../scenarios/bench.toml");

#[derive(Subcommand)]
pub(crate) enum SimCommand {
    /// Run every sweep point of a scenario file with every seed, in parallel, and write
    /// runs.csv (one row per run), summary.csv and summary.json (mean and 95 % confidence
    /// interval per point and metric) into the output directory. Each run's result is also
    /// kept in `DIR/runs/<run id>.json`; runs already there are not run again (resume).
    /// With --shard or --run, only those runs are done and only their per-run results are
    /// written: `braid sim merge` makes the aggregated files (docs/campaigns.md).
    Run {
        /// The scenario file (TOML; see scenarios/README.md).
        file: PathBuf,
        /// Output directory [default: results/<file name without .toml>].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Seeds per sweep point, instead of the file's `seeds`. Run i of every point uses
        /// seed i.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        seeds: Option<u32>,
        /// Runs at a time [default: the number of cores]. Results do not depend on it.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        jobs: Option<u64>,
        /// Run only shard I of N (I from 0): the runs whose index in (point, seed) order is
        /// I modulo N.
        #[arg(long, value_name = "I/N", conflicts_with = "run")]
        shard: Option<Shard>,
        /// Run only the run with this id (repeatable; `braid sim list` prints the ids).
        #[arg(long, value_name = "ID")]
        run: Vec<String>,
        /// Run again also the runs whose results are in DIR/runs. Runs of another build are
        /// never reused: run ids include the version, the commit and a digest of uncommitted
        /// changes to the simulator's sources.
        #[arg(long)]
        fresh: bool,
    },
    /// Print one line per run of a scenario file (or of one shard): run id, point, seed,
    /// the swept parameters and the command that does exactly that run, tab-separated; for
    /// GNU parallel, Slurm arrays or Kubernetes Indexed Jobs (docs/campaigns.md).
    List {
        /// The scenario file.
        file: PathBuf,
        /// The output directory the commands write into [default: results/<file name
        /// without .toml>].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Seeds per sweep point, instead of the file's `seeds`.
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        seeds: Option<u32>,
        /// Only the runs of shard I of N.
        #[arg(long, value_name = "I/N")]
        shard: Option<Shard>,
    },
    /// Combine the per-run results in one or more directories (shards of one campaign, or
    /// one directory many processes wrote into) into runs.csv, summary.csv and summary.json,
    /// byte for byte what one machine running everything writes. Directories of
    /// `braid reproduce cmt-scheduling --shard` are merged into its report, too.
    Merge {
        /// The directories (each with campaign.json, or reproduce.json).
        #[arg(required = true)]
        dirs: Vec<PathBuf>,
        /// Where to write the merged files (may be one of DIRS).
        #[arg(long)]
        out: PathBuf,
    },
    /// Plot a metric of DIR/summary.json against a swept parameter (--x), with 95 %
    /// confidence bars, or one run's time series against time (--timeseries); PNG or SVG by
    /// the output's extension.
    ///
    /// Summary: `braid sim plot DIR --x association.send_buffer --y goodput_mbps --out g.png`.
    ///
    /// Time series (a scenario with a top-level `timeseries = "500ms"` makes `braid sim run`
    /// write DIR/timeseries/point{P}-seed{S}.csv): `braid sim plot DIR --timeseries
    /// point3-seed0 --y cwnd,srtt_ms --out cwnd.png`, or `--series FILE.csv` for any such
    /// file. --y names columns: cwnd, ssthresh, rto_ms, flight_size, srtt_ms, cum_tsn,
    /// send_buffered, recv_buffered, state, retransmissions, fast_retransmissions, timeouts.
    /// One curve per path per column ("path A, cwnd (bytes)"); cum_tsn, send_buffered and
    /// recv_buffered belong to the association and are drawn once; columns with different
    /// units get panels of their own, one above the other.
    ///
    /// Time-sequence record (a scenario with a top-level `sequence = true` makes `braid sim
    /// run` write DIR/sequence/point{P}-seed{S}.csv): `braid sim plot --sequence FILE.csv
    /// --from 9 --to 14 --out seq.png` draws the TSNs sent, retransmitted, arriving and
    /// acknowledged against time (a marker per series) above each path's cwnd.
    Plot {
        /// The directory `braid sim run` wrote (not with --series or --sequence).
        #[arg(
            required_unless_present_any = ["series", "sequence"],
            conflicts_with_all = ["series", "sequence"]
        )]
        dir: Option<PathBuf>,
        /// The swept parameter on the x axis (e.g. association.send_buffer); required unless
        /// --timeseries or --series.
        #[arg(long)]
        x: Option<String>,
        /// The metric on the y axis (e.g. goodput_mbps); with --timeseries or --series, the
        /// columns, comma-separated (e.g. cwnd,srtt_ms). Not with --sequence.
        #[arg(
            long,
            required_unless_present = "sequence",
            conflicts_with = "sequence"
        )]
        y: Option<String>,
        /// Swept parameters to draw one curve per combination of values of,
        /// comma-separated (e.g. path.B.loss,association.cmt; `variant` for the named
        /// variants of [[sweep.variant]]).
        #[arg(long, value_delimiter = ',')]
        curves: Vec<String>,
        /// A logarithmic x axis (positive quantities only).
        #[arg(long)]
        log_x: bool,
        /// A logarithmic y axis (positive means only).
        #[arg(long)]
        log_y: bool,
        /// Hold another swept parameter at one value: KEY=VALUE (repeatable).
        #[arg(long, value_parser = parse_fix)]
        fix: Vec<(String, String)>,
        /// Plot the time series of one run instead: DIR/timeseries/RUN.csv, RUN as
        /// point{P}-seed{S} (e.g. point3-seed0).
        #[arg(long, value_name = "RUN")]
        timeseries: Option<String>,
        /// Plot this time-series CSV file instead (no DIR).
        #[arg(long, value_name = "FILE.csv", conflicts_with = "timeseries")]
        series: Option<PathBuf>,
        /// Plot this time-sequence record instead (no DIR): TSNs against time.
        #[arg(long, value_name = "FILE.csv", conflicts_with_all = ["timeseries", "series", "x", "curves", "fix", "log_x", "log_y"])]
        sequence: Option<PathBuf>,
        /// With --sequence: start of the time axis, in seconds [default: the first row].
        #[arg(long, requires = "sequence")]
        from: Option<f64>,
        /// With --sequence: end of the time axis, in seconds [default: the last row].
        #[arg(long, requires = "sequence")]
        to: Option<f64>,
        /// Plot title [default: the scenario's name; for a time series, the run].
        #[arg(long)]
        title: Option<String>,
        /// The image to write: FILE.png or FILE.svg.
        #[arg(long)]
        out: PathBuf,
    },
    /// Run one sweep point of a scenario once and write a pcap of one path's forward (or
    /// reverse) link. (`braid sim run` also writes DIR/pcap/point{P}-seed{S}.pcap for every
    /// run of a scenario that has a [pcap] table.)
    Pcap {
        /// The scenario file.
        file: PathBuf,
        /// The path to capture.
        #[arg(long)]
        path: String,
        /// Capture the reverse (acknowledgement) link instead.
        #[arg(long)]
        reverse: bool,
        /// The seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// The sweep point (index as in summary.json).
        #[arg(long, default_value_t = 0)]
        point: usize,
        /// The pcap file to write.
        #[arg(long)]
        out: PathBuf,
    },
    /// Time the simulator: one saturated association over one 20 Mbit/s, 10 ms path for
    /// 300 simulated seconds (built in; scenarios/bench.toml), or the first point of FILE.
    /// Build with --release for meaningful numbers.
    Bench {
        /// Another scenario to time instead.
        file: Option<PathBuf>,
        /// The seed.
        #[arg(long, default_value_t = 0)]
        seed: u64,
    },
}

fn parse_fix(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err(format!("expected KEY=VALUE, got {s:?}")),
    }
}

pub(crate) fn run(cmd: SimCommand) -> Result<(), Error> {
    match cmd {
        SimCommand::Run {
            file,
            out,
            seeds,
            jobs,
            shard,
            run,
            fresh,
        } => {
            let select = match (shard, run.is_empty()) {
                (Some(s), _) => Select::Shard(s),
                (None, false) => Select::Ids(run),
                (None, true) => Select::All,
            };
            run_file(&file, out, seeds, jobs, select, fresh)
        }
        SimCommand::List {
            file,
            out,
            seeds,
            shard,
        } => list(&file, out, seeds, shard),
        SimCommand::Merge { dirs, out } => merge(&dirs, &out),
        SimCommand::Plot {
            dir,
            x,
            y,
            curves,
            log_x,
            log_y,
            fix,
            timeseries,
            series,
            sequence,
            from,
            to,
            title,
            out,
        } => {
            if let Some(file) = sequence {
                let spec = SequenceSpec { from, to, title };
                let charts = sequence::plot_file(&file, &spec, &out)?;
                let points: usize = charts[0].series.iter().map(|s| s.points.len()).sum();
                println!(
                    "wrote {}: {} series of TSNs ({points} points) above {} cwnd curve{}",
                    out.display(),
                    charts[0].series.len(),
                    charts[1].series.len(),
                    if charts[1].series.len() == 1 { "" } else { "s" },
                );
                return Ok(());
            }
            let y = y.unwrap_or_default();
            if timeseries.is_some() || series.is_some() {
                let flag = if series.is_some() {
                    "--series"
                } else {
                    "--timeseries"
                };
                let summary_only: Vec<&str> = [
                    x.as_ref().map(|_| "--x"),
                    (!curves.is_empty()).then_some("--curves"),
                    log_x.then_some("--log-x"),
                    log_y.then_some("--log-y"),
                    (!fix.is_empty()).then_some("--fix"),
                ]
                .into_iter()
                .flatten()
                .collect();
                if !summary_only.is_empty() {
                    return Err(format!(
                        "{} cannot be used with {flag}: {} for plots of summary.json, \
                         {flag} plots one run's time series against time",
                        summary_only.join(", "),
                        if summary_only.len() == 1 {
                            "it is"
                        } else {
                            "they are"
                        }
                    )
                    .into());
                }
                let spec = TimeSeriesSpec {
                    columns: y
                        .split(',')
                        .map(str::trim)
                        .filter(|c| !c.is_empty())
                        .map(String::from)
                        .collect(),
                    title,
                };
                let charts = match (&series, &timeseries, &dir) {
                    (Some(file), _, _) => timeseries::plot_file(file, &spec, &out)?,
                    (None, Some(run), Some(dir)) => timeseries::plot_run(dir, run, &spec, &out)?,
                    _ => return Err("give the directory `braid sim run` wrote".into()),
                };
                let curves: usize = charts.iter().map(|c| c.series.len()).sum();
                let points: usize = charts
                    .iter()
                    .flat_map(|c| &c.series)
                    .map(|s| s.points.len())
                    .sum();
                println!(
                    "wrote {}: {curves} curve{} in {} panel{}, {points} points",
                    out.display(),
                    if curves == 1 { "" } else { "s" },
                    charts.len(),
                    if charts.len() == 1 { "" } else { "s" },
                );
                return Ok(());
            }
            let (Some(dir), Some(x)) = (dir, x) else {
                return Err(
                    "say what to plot: --x PARAM for a metric of DIR/summary.json \
                            against a swept parameter, or --timeseries point{P}-seed{S} (or \
                            --series FILE.csv) for a run's time series"
                        .into(),
                );
            };
            let spec = PlotSpec {
                x,
                y,
                curves: curves
                    .into_iter()
                    .map(|c| c.trim().to_string())
                    .filter(|c| !c.is_empty())
                    .collect(),
                fix,
                title,
                log_x,
                log_y,
            };
            let chart = plot::plot(&dir, &spec, &out)?;
            let points: usize = chart.series.iter().map(|s| s.points.len()).sum();
            let categories = matches!(chart.x_axis, XAxis::Categories(_));
            println!(
                "wrote {}: {} curve{}, {points} points{}",
                out.display(),
                chart.series.len(),
                if chart.series.len() == 1 { "" } else { "s" },
                if categories {
                    " (x values are not quantities: shown in sweep order)"
                } else {
                    ""
                }
            );
            Ok(())
        }
        SimCommand::Pcap {
            file,
            path,
            reverse,
            seed,
            point,
            out,
        } => pcap(&file, path, reverse, seed, point, &out),
        SimCommand::Bench { file, seed } => bench(file.as_deref(), seed),
    }
}

use crate::progress::{Progress, wall_clock};

/// Prints what the scenario file leaves to a default, on stderr (stdout may be a pipe of
/// `sim list`).
fn print_notes(exp: &load::Experiment) {
    for n in &exp.notes {
        eprintln!("braid: note: {n}");
    }
}

/// The default output directory of a scenario file: results/<file name without .toml>.
fn default_out(file: &Path) -> PathBuf {
    let stem = file
        .file_stem()
        .map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned());
    Path::new("results").join(stem)
}

fn run_file(
    file: &Path,
    out: Option<PathBuf>,
    seeds: Option<u32>,
    jobs: Option<u64>,
    select: Select,
    fresh: bool,
) -> Result<(), Error> {
    let exp = load::load(file)?;
    print_notes(&exp);
    let dir = out.unwrap_or_else(|| default_out(file));
    crate::reproduce::warn_other_builds(&dir);
    let opts = RunnerOptions {
        jobs: jobs.map_or(0, |j| usize::try_from(j).unwrap_or(usize::MAX)),
        seeds,
        out: None,
        select,
        fresh,
    };
    let seeds = runner::seeds(&exp, &opts);
    let total = exp.points.len() * seeds as usize;
    let selected = runner::selected(&exp, &opts).len();
    if let Select::Ids(ids) = &opts.select {
        let all = campaign::entries(&exp, seeds);
        for id in ids {
            if !all.iter().any(|e| &e.id == id) {
                return Err(format!(
                    "{}: no run {id:?} (with {seeds} seeds per point); `braid sim list {}` prints the run ids",
                    file.display(),
                    file.display()
                )
                .into());
            }
        }
    }
    let share = match &opts.select {
        Select::All => String::new(),
        Select::Shard(s) => format!("; shard {s}: {selected} of them"),
        Select::Ids(_) => format!("; {selected} of them by id"),
    };
    let threads = runner::jobs(&opts, selected);
    println!(
        "{}: {} point{} × {seeds} seed{} = {total} runs{share}, {threads} at a time",
        exp.name,
        exp.points.len(),
        if exp.points.len() == 1 { "" } else { "s" },
        if seeds == 1 { "" } else { "s" },
    );
    let bar = Progress::new();
    let progress = |_: &RunRecord, done: usize, total: usize| bar.update("", done, total);
    let start = wall_clock();
    let report = runner::run_experiment(&exp, &dir, &opts, &run::run, &progress)?;
    bar.finish();
    let wall = start.elapsed();

    let reused = if report.outcome.reused > 0 {
        format!(
            ", {} of them already done in {}/runs (--fresh runs them again)",
            report.outcome.reused,
            dir.display()
        )
    } else {
        String::new()
    };
    let failures: Vec<&RunRecord> = report.outcome.failures().collect();
    let failed = if failures.is_empty() {
        String::new()
    } else {
        format!(" ({} failed)", failures.len())
    };
    if opts.select.is_all() {
        print_table(&report.summary);
        println!(
            "{total} runs in {:.1} s{reused}{failed}; wrote {}/{{runs.csv, summary.csv, summary.json}}",
            wall.as_secs_f64(),
            dir.display()
        );
    } else {
        println!(
            "{selected} runs in {:.1} s{reused}{failed}; wrote {}/runs/; \
             `braid sim merge DIR... --out DIR` writes runs.csv and the summaries when every shard is done",
            wall.as_secs_f64(),
            dir.display()
        );
    }
    report_failures(&report.summary, &report.outcome)
}

/// Prints failed runs and runs that failed the integrity check; an error if there are any.
fn report_failures(summary: &runner::SummaryFile, outcome: &runner::Outcome) -> Result<(), Error> {
    let total = outcome.runs.len();
    let failures: Vec<&RunRecord> = outcome.failures().collect();
    for f in &failures {
        let params = summary
            .points
            .get(f.point)
            .map(|p| p.params.describe())
            .filter(|d| !d.is_empty())
            .map_or(String::new(), |d| format!(" ({d})"));
        if let Err(e) = &f.result {
            eprintln!("braid: point {}{params} seed {}: {e}", f.point, f.seed);
        }
    }
    let broken: Vec<_> = outcome.integrity_failures().collect();
    for (r, e) in &broken {
        eprintln!("braid: point {} seed {}: {e}", r.point, r.seed);
    }
    if !failures.is_empty() {
        Err(format!("{} of {total} runs failed", failures.len()).into())
    } else if !broken.is_empty() {
        Err(format!(
            "{} of {total} runs failed the integrity check",
            broken.len()
        )
        .into())
    } else {
        Ok(())
    }
}

/// A word for a POSIX shell: as is if safe, else in single quotes.
fn shell_quote(s: &str) -> String {
    let safe = !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if safe {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// The braid executable as invoked (so that the commands `list` prints run the same build).
fn braid_exe() -> String {
    std::env::args().next().unwrap_or_else(|| "braid".into())
}

fn list(
    file: &Path,
    out: Option<PathBuf>,
    seeds: Option<u32>,
    shard: Option<Shard>,
) -> Result<(), Error> {
    let exp = load::load(file)?;
    print_notes(&exp);
    let dir = out.unwrap_or_else(|| default_out(file));
    let opts = RunnerOptions {
        seeds,
        select: shard.map_or(Select::All, Select::Shard),
        ..RunnerOptions::default()
    };
    let exe = shell_quote(&braid_exe());
    let file_q = shell_quote(&file.display().to_string());
    let dir_q = shell_quote(&dir.display().to_string());
    let seeds_arg = seeds.map_or(String::new(), |s| format!(" --seeds {s}"));
    let mut stdout = std::io::stdout().lock();
    for e in runner::selected(&exp, &opts) {
        let params = exp.points[e.point].params.describe();
        let line = format!(
            "{}\t{}\t{}\t{params}\t{exe} sim run {file_q} --run {}{seeds_arg} --jobs 1 --out {dir_q}\n",
            e.id, e.point, e.seed, e.id
        );
        use std::io::Write as _;
        if stdout.write_all(line.as_bytes()).is_err() {
            // A closed pipe (`| head`): stop quietly.
            break;
        }
    }
    Ok(())
}

fn merge(dirs: &[PathBuf], out: &Path) -> Result<(), Error> {
    if dirs
        .first()
        .is_some_and(|d| d.join(reproduce::REPRODUCE_MANIFEST).exists())
    {
        return crate::reproduce::merge(dirs, out);
    }
    let merged = match campaign::merge(dirs, out) {
        Ok(m) => m,
        Err(campaign::CampaignError::Missing { missing, total }) => {
            for r in missing.iter().take(20) {
                eprintln!(
                    "braid: missing run {} (point {} seed {})",
                    r.id, r.point, r.seed
                );
            }
            if missing.len() > 20 {
                eprintln!("braid: ... and {} more", missing.len() - 20);
            }
            return Err(campaign::CampaignError::Missing { missing, total }.into());
        }
        Err(e) => return Err(e.into()),
    };
    print_table(&merged.summary);
    let failed = merged.outcome.failures().count();
    println!(
        "merged {} runs of {:?} from {} director{}{}; wrote {}/{{runs.csv, summary.csv, summary.json}}",
        merged.outcome.runs.len(),
        merged.manifest.layout.scenario,
        dirs.len(),
        if dirs.len() == 1 { "y" } else { "ies" },
        if failed > 0 {
            format!(" ({failed} failed)")
        } else {
            String::new()
        },
        out.display()
    );
    report_failures(&merged.summary, &merged.outcome)
}

/// The headline metric per point: goodput if measured, else the first metric.
fn print_table(summary: &runner::SummaryFile) {
    let metric = if summary
        .points
        .iter()
        .any(|p| p.metrics.contains_key("goodput_mbps"))
    {
        Some("goodput_mbps".to_string())
    } else {
        summary
            .points
            .iter()
            .find_map(|p| p.metrics.keys().next().cloned())
    };
    let Some(metric) = metric else {
        return;
    };
    let mut rows = vec![{
        let mut h = vec!["point".to_string()];
        h.extend(summary.sweep.iter().cloned());
        h.push(format!("{metric} (mean ± 95% CI)"));
        h
    }];
    for p in &summary.points {
        let mut row = vec![p.index.to_string()];
        row.extend(p.params.0.iter().map(|(_, v)| display_value(v)));
        row.push(match p.metrics.get(&metric) {
            Some(s) => show(s),
            None => "-".into(),
        });
        rows.push(row);
    }
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map_or(0, |s| s.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    for r in rows {
        let line: Vec<String> = r
            .iter()
            .zip(&widths)
            .map(|(s, w)| format!("{s:<w$}"))
            .collect();
        println!("  {}", line.join("  ").trim_end());
    }
}

/// A summary for the table: mean ± CI, the CI to the mean's precision.
fn show(s: &Summary) -> String {
    if s.n == 0 {
        "-".into()
    } else {
        format!("{} (n={})", stats::mean_ci(s.mean, s.ci95, 4), s.n)
    }
}

fn pcap(
    file: &Path,
    path: String,
    reverse: bool,
    seed: u64,
    point: usize,
    out: &Path,
) -> Result<(), Error> {
    let exp = load::load(file)?;
    print_notes(&exp);
    let p = exp.points.get(point).ok_or_else(|| {
        format!(
            "{}: no point {point} (the sweep has {} points, from 0)",
            file.display(),
            exp.points.len()
        )
    })?;
    let mut sc = p.scenario.clone();
    if !sc.paths.iter().any(|x| x.name == path) {
        let names: Vec<String> = sc.paths.iter().map(|x| format!("{:?}", x.name)).collect();
        return Err(format!("no path named {path:?} (paths: {})", names.join(", ")).into());
    }
    sc.pcap = Some(PcapSpec { path, reverse });
    let opts = RunOptions {
        seed,
        pcap: Some(out.to_path_buf()),
        ..RunOptions::default()
    };
    let res = run::run(&sc, &opts)?;
    if !p.params.0.is_empty() {
        println!("point {point}: {}", p.params.describe());
    }
    print_metrics(&res);
    println!(
        "pcap written to {} (tshark -r {} -o 'sctp.checksum:CRC 32c')",
        out.display(),
        out.display()
    );
    Ok(())
}

fn bench(file: Option<&Path>, seed: u64) -> Result<(), Error> {
    let exp = match file {
        Some(f) => load::load(f)?,
        None => load::load_str(BENCH, Path::new("scenarios/bench.toml (built in)"))?,
    };
    print_notes(&exp);
    let p = exp.points.first().ok_or("the scenario has no points")?;
    if exp.points.len() > 1 {
        println!(
            "(timing point 0 of {}: {})",
            exp.points.len(),
            p.params.describe()
        );
    }
    let sc = &p.scenario;
    println!("{}", sc.name);
    let start = wall_clock();
    let res = run::run(
        sc,
        &RunOptions {
            seed,
            ..RunOptions::default()
        },
    )?;
    let wall = start.elapsed();
    let simulated = if res.simulated.is_zero() {
        sc.duration.0
    } else {
        res.simulated
    };
    let secs = wall.as_secs_f64().max(1e-9);
    println!("  simulated   {:.1} s", simulated.as_secs_f64());
    println!("  wall time   {}", show_wall(wall));
    println!(
        "  speed-up    {:.1}× real time",
        simulated.as_secs_f64() / secs
    );
    println!(
        "  events      {} ({:.2} M events/s)",
        res.events,
        res.events as f64 / secs / 1e6
    );
    print_metrics(&res);
    Ok(())
}

fn show_wall(d: Duration) -> String {
    if d.as_secs_f64() >= 1.0 {
        format!("{:.2} s", d.as_secs_f64())
    } else {
        format!("{:.1} ms", d.as_secs_f64() * 1e3)
    }
}

fn print_metrics(res: &RunResult) {
    let width = res.metrics.keys().map(String::len).max().unwrap_or(0);
    for (k, v) in &res.metrics {
        println!("  {k:<width$}  {v}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tiny_interval_prints_as_zero_at_the_means_precision() {
        let s = Summary {
            mean: 9.535_212_4,
            ci95: 6.7e-16,
            n: 3,
            std: 1e-16,
            min: 9.535_212_4,
            max: 9.535_212_4,
        };
        assert_eq!(show(&s), "9.5352 ± 0.0000 (n=3)");
    }
}
