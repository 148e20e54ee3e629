//! `braid reproduce`: run a paper's figures in the simulator and compare with the paper.
//! The scenarios, data points and report live in `braid_sim::reproduce`; this module parses
//! arguments, shows progress and prints the comparison.

use std::path::PathBuf;

use braid_sim::reproduce::{self, ReproduceOptions};
use braid_sim::run;
use clap::Subcommand;

/// Errors reported to the user.
type Error = Box<dyn std::error::Error>;

#[derive(Subcommand)]
pub(crate) enum ReproduceCommand {
    /// Fig. 4–7 of "Transmission Scheduling Optimizations for Concurrent Multipath
    /// Transfer" (001_*.txt): round-robin vs fixed stream-to-path mapping, sender queue
    /// info, NR-SACK. Writes per-figure results, PNG plots and report.md (paper vs braid).
    CmtScheduling {
        /// 2 seeds, 30 s measurement, a few σ points (about a minute on 2 cores, release).
        #[arg(long)]
        quick: bool,
        /// Output directory [default: results/cmt-scheduling].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Runs at a time [default: the number of cores]. Results do not depend on it.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        jobs: Option<u64>,
        /// Seeds per point [default: 24 as in the paper, 2 with --quick].
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        seeds: Option<u32>,
    },
}

use crate::progress::{Progress, wall_clock};

pub(crate) fn run(cmd: ReproduceCommand) -> Result<(), Error> {
    let ReproduceCommand::CmtScheduling {
        quick,
        out,
        jobs,
        seeds,
    } = cmd;
    let opts = ReproduceOptions {
        seeds,
        quick,
        out: out.unwrap_or_else(|| PathBuf::from("results/cmt-scheduling")),
        jobs: jobs.map_or(0, |j| usize::try_from(j).unwrap_or(usize::MAX)),
    };
    let bar = Progress::new();
    let progress = |fig: &str, done: usize, total: usize| bar.update(fig, done, total);
    let start = wall_clock();
    let (results, reports) = reproduce::cmt_scheduling(&opts, &run::run, &progress)?;
    bar.finish();
    let wall = start.elapsed();
    let runs: usize = reports.iter().map(|r| r.outcome.runs.len()).sum();
    let failed: usize = reports.iter().map(|r| r.outcome.failures().count()).sum();
    println!("| figure | data point | metric | paper | braid | deviation |");
    for line in reproduce::cmt_report(&results, &opts, &[])
        .lines()
        .filter(|l| l.starts_with("| Fig"))
    {
        println!("{line}");
    }
    for (claim, ok, values) in reproduce::cmt_claims(&results, opts.quick) {
        println!("{} {claim} ({values})", if ok { "✓" } else { "✗" });
    }
    println!(
        "{runs} runs in {:.1} s{}; wrote {}/report.md, plots and fig*/summary.json",
        wall.as_secs_f64(),
        if failed > 0 {
            format!(" ({failed} failed)")
        } else {
            String::new()
        },
        opts.out.display()
    );
    let mut broken = 0;
    for r in &reports {
        for (f, e) in r.outcome.integrity_failures() {
            broken += 1;
            eprintln!(
                "braid: {} point {} seed {}: {e}",
                r.summary.scenario, f.point, f.seed
            );
        }
    }
    if failed > 0 {
        for r in &reports {
            for f in r.outcome.failures() {
                if let Err(e) = &f.result {
                    eprintln!(
                        "braid: {} point {} seed {}: {e}",
                        r.summary.scenario, f.point, f.seed
                    );
                }
            }
        }
        return Err(format!("{failed} of {runs} runs failed").into());
    }
    if broken > 0 {
        return Err(format!("{broken} of {runs} runs failed the integrity check").into());
    }
    Ok(())
}
