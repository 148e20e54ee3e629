//! `braid sim`: run scenario files (sweep points × seeds, in parallel), plot the results,
//! capture one run as pcap, and benchmark the simulator. The work is done by `braid-sim`'s
//! `load`, `runner` and `plot`; this module parses arguments, shows progress and prints.

use std::path::{Path, PathBuf};
use std::time::Duration;

use braid_sim::load::{self, Experiment};
use braid_sim::plot::{self, PlotSpec, XAxis};
use braid_sim::run::{self, RunOptions, RunResult};
use braid_sim::runner::{self, RunRecord, RunnerOptions};
use braid_sim::scenario::PcapSpec;
use braid_sim::stats::Summary;
use braid_sim::sweep::display_value;
use clap::Subcommand;

/// Errors reported to the user.
type Error = Box<dyn std::error::Error>;

/// The built-in benchmark scenario (also `scenarios/bench.toml`).
const BENCH: &str = include_str!("../../../scenarios/bench.toml");

#[derive(Subcommand)]
pub(crate) enum SimCommand {
    /// Run every sweep point of a scenario file with every seed, in parallel, and write
    /// runs.csv (one row per run), summary.csv and summary.json (mean and 95 % confidence
    /// interval per point and metric) into the output directory.
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
    },
    /// Plot a metric of DIR/summary.json against a swept parameter, with 95 % confidence
    /// bars; PNG or SVG by the output's extension.
    Plot {
        /// The directory `braid sim run` wrote.
        dir: PathBuf,
        /// The swept parameter on the x axis (e.g. association.send_buffer).
        #[arg(long)]
        x: String,
        /// The metric on the y axis (e.g. goodput_mbps).
        #[arg(long)]
        y: String,
        /// A swept parameter to draw one curve per value of.
        #[arg(long)]
        curves: Option<String>,
        /// Hold another swept parameter at one value: KEY=VALUE (repeatable).
        #[arg(long, value_parser = parse_fix)]
        fix: Vec<(String, String)>,
        /// Plot title [default: the scenario's name].
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
        } => run_file(&file, out, seeds, jobs),
        SimCommand::Plot {
            dir,
            x,
            y,
            curves,
            fix,
            title,
            out,
        } => {
            let spec = PlotSpec {
                x,
                y,
                curves,
                fix,
                title,
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

fn run_file(
    file: &Path,
    out: Option<PathBuf>,
    seeds: Option<u32>,
    jobs: Option<u64>,
) -> Result<(), Error> {
    let exp = load::load(file)?;
    let dir = out.unwrap_or_else(|| {
        let stem = file
            .file_stem()
            .map_or_else(|| "scenario".into(), |s| s.to_string_lossy().into_owned());
        Path::new("results").join(stem)
    });
    let opts = RunnerOptions {
        jobs: jobs.map_or(0, |j| usize::try_from(j).unwrap_or(usize::MAX)),
        seeds,
        out: None,
    };
    let seeds = runner::seeds(&exp, &opts);
    let total = exp.points.len() * seeds as usize;
    let threads = runner::jobs(&opts, total);
    println!(
        "{}: {} point{} × {seeds} seed{} = {total} runs, {threads} at a time",
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

    print_table(&exp, &report.summary);
    let failures: Vec<&RunRecord> = report.outcome.failures().collect();
    println!(
        "{total} runs in {:.1} s{}; wrote {}/{{runs.csv, summary.csv, summary.json}}",
        wall.as_secs_f64(),
        if failures.is_empty() {
            String::new()
        } else {
            format!(" ({} failed)", failures.len())
        },
        dir.display()
    );
    for f in &failures {
        let params = exp
            .points
            .get(f.point)
            .map(|p| p.params.describe())
            .filter(|d| !d.is_empty())
            .map_or(String::new(), |d| format!(" ({d})"));
        if let Err(e) = &f.result {
            eprintln!("braid: point {}{params} seed {}: {e}", f.point, f.seed);
        }
    }
    let broken: Vec<_> = report.outcome.integrity_failures().collect();
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

/// The headline metric per point: goodput if measured, else the first metric.
fn print_table(exp: &Experiment, summary: &runner::SummaryFile) {
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
        h.extend(exp.sweep.iter().cloned());
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

fn show(s: &Summary) -> String {
    if s.n == 0 {
        "-".into()
    } else if s.ci95.is_nan() {
        format!("{:.4} (n={})", s.mean, s.n)
    } else if s.ci95 == 0.0 || s.ci95 >= 1e-3 {
        format!("{:.4} ± {:.4} (n={})", s.mean, s.ci95, s.n)
    } else {
        format!("{:.4} ± {:.1e} (n={})", s.mean, s.ci95, s.n)
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
