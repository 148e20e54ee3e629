//! `braid reproduce`: run a paper's figures in the simulator and compare with the paper.
//! The scenarios, data points and report live in `braid_sim::reproduce`; this module parses
//! arguments, shows progress and prints the comparison.

use std::path::{Path, PathBuf};

use braid_sim::campaign::{self, Shard};
use braid_sim::reproduce::{self, CampaignOptions, ReproduceOptions, Results};
use braid_sim::run;
use clap::Subcommand;

/// Errors reported to the user.
type Error = Box<dyn std::error::Error>;

#[derive(Subcommand)]
pub(crate) enum ReproduceCommand {
    /// Fig. 4–7 of "Transmission Scheduling Optimizations for Concurrent Multipath
    /// Transfer" (Dreibholz et al., 2010): round-robin vs fixed stream-to-path mapping, sender queue
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
        /// Run only shard I of N (I from 0) of every figure's runs; no plots, no report
        /// (--merge makes them). Results are kept per run in OUT/fig*/runs/.
        #[arg(long, value_name = "I/N", conflicts_with = "merge")]
        shard: Option<Shard>,
        /// Run again also the runs whose results are in OUT/fig*/runs (they are reused when
        /// this build made them; runs of another build never are).
        #[arg(long)]
        fresh: bool,
        /// Merge these shard directories into OUT (results, plots, report.md) instead of
        /// running; --quick and --seeds come from the shards.
        #[arg(long, value_name = "DIR", num_args = 1.., conflicts_with_all = ["quick", "seeds"])]
        merge: Vec<PathBuf>,
    },
    /// Fig. 12–20 of "LS-SCTP: a bandwidth aggregation technique for SCTP" (Abd El Al et al., 2004):
    /// scaling with paths, loss, bandwidth fluctuation, short and long path failures, with
    /// LS-SCTP's and SCTP's timeout handling and CMT-SCTP side by side. Writes per-figure
    /// results and time series, PNG plots and report.md (paper vs braid).
    LsSctp {
        /// Fewer seeds and three loss rates in Fig. 13 (seconds on 2 cores, release).
        #[arg(long)]
        quick: bool,
        /// Output directory [default: results/ls-sctp].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Runs at a time [default: the number of cores]. Results do not depend on it.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        jobs: Option<u64>,
        /// Seeds per point [default: each figure file's (10 in Fig. 13, as the paper)].
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        seeds: Option<u32>,
        /// Run again also the runs whose results are in OUT/fig*/runs (they are reused when
        /// this build made them; runs of another build never are).
        #[arg(long)]
        fresh: bool,
    },
    /// Figs. 2, 7–14 of "On Making SCTP Robust to Spurious Retransmissions" (Ladha et al., 2004):
    /// plain SCTP, Eifel and DupTSN-based detection under reordering and delay spikes,
    /// singlehomed and multihomed, with time-sequence plots of single events, and braid's
    /// CMT-without-SFR comparison. Writes per-figure results, PNG plots and report.md.
    Spurious {
        /// Fewer seeds (seconds on 2 cores, release).
        #[arg(long)]
        quick: bool,
        /// Output directory [default: results/spurious].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Runs at a time [default: the number of cores]. Results do not depend on it.
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
        jobs: Option<u64>,
        /// Seeds per point [default: each figure file's: 60 as in the paper, 1 for the
        /// placed single events, 10 for the CMT comparison].
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        seeds: Option<u32>,
        /// Run again also the runs whose results are in OUT/fig*/runs (they are reused when
        /// this build made them; runs of another build never are).
        #[arg(long)]
        fresh: bool,
    },
}

use crate::progress::{Progress, wall_clock};

pub(crate) fn run(cmd: ReproduceCommand) -> Result<(), Error> {
    let (quick, out, jobs, seeds, shard, fresh, merge_dirs) = match cmd {
        ReproduceCommand::CmtScheduling {
            quick,
            out,
            jobs,
            seeds,
            shard,
            fresh,
            merge,
        } => (quick, out, jobs, seeds, shard, fresh, merge),
        ReproduceCommand::LsSctp {
            quick,
            out,
            jobs,
            seeds,
            fresh,
        } => return ls_sctp(quick, out, jobs, seeds, fresh),
        ReproduceCommand::Spurious {
            quick,
            out,
            jobs,
            seeds,
            fresh,
        } => return spurious(quick, out, jobs, seeds, fresh),
    };
    let out = out.unwrap_or_else(|| PathBuf::from("results/cmt-scheduling"));
    if !merge_dirs.is_empty() {
        return merge(&merge_dirs, &out);
    }
    let opts = ReproduceOptions {
        seeds,
        quick,
        out,
        jobs: jobs.map_or(0, |j| usize::try_from(j).unwrap_or(usize::MAX)),
    };
    warn_other_builds(&opts.out);
    let bar = Progress::new();
    let progress = |fig: &str, done: usize, total: usize| bar.update(fig, done, total);
    let start = wall_clock();
    let camp = CampaignOptions { shard, fresh };
    let (results, reports) =
        reproduce::cmt_scheduling_campaign(&opts, &camp, &run::run, &progress)?;
    bar.finish();
    let wall = start.elapsed();
    let runs: usize = reports.iter().map(|r| r.outcome.runs.len()).sum();
    let reused: usize = reports.iter().map(|r| r.outcome.reused).sum();
    let failed: usize = reports.iter().map(|r| r.outcome.failures().count()).sum();
    let reused = if reused > 0 {
        format!(", {reused} of them already done (--fresh runs them again)")
    } else {
        String::new()
    };
    if let Some(s) = shard {
        println!(
            "shard {s}: {runs} runs in {:.1} s{reused}; wrote {}/fig*/runs/; \
             `braid reproduce cmt-scheduling --merge DIR... --out DIR` writes the report when every shard is done",
            wall.as_secs_f64(),
            opts.out.display()
        );
    } else {
        print_comparison(&results, &opts);
        println!(
            "{runs} runs in {:.1} s{reused}{}; wrote {}/report.md, plots and fig*/summary.json",
            wall.as_secs_f64(),
            if failed > 0 {
                format!(" ({failed} failed)")
            } else {
                String::new()
            },
            opts.out.display()
        );
    }
    let outcomes: Vec<(&str, &braid_sim::runner::Outcome)> = reports
        .iter()
        .map(|r| (r.summary.scenario.as_str(), &r.outcome))
        .collect();
    check_outcomes(&outcomes)
}

/// `braid reproduce ls-sctp`.
fn ls_sctp(
    quick: bool,
    out: Option<PathBuf>,
    jobs: Option<u64>,
    seeds: Option<u32>,
    fresh: bool,
) -> Result<(), Error> {
    let opts = options("ls-sctp", quick, out, jobs, seeds);
    let camp = CampaignOptions { shard: None, fresh };
    run_paper(&opts, |progress| {
        let (results, series, reports) =
            reproduce::ls_sctp_campaign(&opts, &camp, &run::run, progress)?;
        Ok((reproduce::ls_report(&results, &series, &opts, &[]), reports))
    })
}

/// `braid reproduce spurious`.
fn spurious(
    quick: bool,
    out: Option<PathBuf>,
    jobs: Option<u64>,
    seeds: Option<u32>,
    fresh: bool,
) -> Result<(), Error> {
    let opts = options("spurious", quick, out, jobs, seeds);
    let camp = CampaignOptions { shard: None, fresh };
    run_paper(&opts, |progress| {
        let (results, micro, reports) =
            reproduce::spurious_campaign(&opts, &camp, &run::run, progress)?;
        Ok((
            reproduce::spurious_report(&results, &micro, &opts, &[]),
            reports,
        ))
    })
}

/// Warns when `out` holds runs of another build: the code changed since, so they are not
/// reused and the report will be made of new runs.
pub(crate) fn warn_other_builds(out: &Path) {
    let others = campaign::other_builds(out);
    if !others.is_empty() {
        eprintln!(
            "braid: warning: code changed since these runs: {} holds runs of braid {}, this is \
             braid {}; they are not reused (run ids include the build): their runs are done again",
            out.display(),
            others.join(", "),
            campaign::VERSION
        );
    }
}

/// A reproduction's options; its results go to `results/NAME` unless `out` says.
fn options(
    name: &str,
    quick: bool,
    out: Option<PathBuf>,
    jobs: Option<u64>,
    seeds: Option<u32>,
) -> ReproduceOptions {
    ReproduceOptions {
        seeds,
        quick,
        out: out.unwrap_or_else(|| PathBuf::from("results").join(name)),
        jobs: jobs.map_or(0, |j| usize::try_from(j).unwrap_or(usize::MAX)),
    }
}

/// Runs a reproduction with a progress bar (`reproduce` returns its report and the runs),
/// prints the report's verdict lines and fails if a run failed.
fn run_paper(
    opts: &ReproduceOptions,
    reproduce: impl FnOnce(
        &(dyn Fn(&str, usize, usize) + Sync),
    ) -> Result<(String, Vec<braid_sim::runner::Report>), Error>,
) -> Result<(), Error> {
    warn_other_builds(&opts.out);
    let bar = Progress::new();
    let progress = |fig: &str, done: usize, total: usize| bar.update(fig, done, total);
    let start = wall_clock();
    let (report, reports) = reproduce(&progress)?;
    bar.finish();
    for line in report
        .lines()
        .filter(|l| (l.starts_with("| Fig") || l.starts_with("**")) && !is_departure(l))
    {
        println!("{line}");
    }
    let runs: usize = reports.iter().map(|r| r.outcome.runs.len()).sum();
    println!(
        "{runs} runs in {:.1} s; wrote {}/report.md, plots and fig*/summary.json",
        start.elapsed().as_secs_f64(),
        opts.out.display()
    );
    let outcomes: Vec<(&str, &braid_sim::runner::Outcome)> = reports
        .iter()
        .map(|r| (r.summary.scenario.as_str(), &r.outcome))
        .collect();
    check_outcomes(&outcomes)
}

/// Whether `line` is a paragraph of the report's Departures (`**D3** (...)`), which the
/// verdict lines on the terminal cite but do not repeat.
fn is_departure(line: &str) -> bool {
    line.strip_prefix("**D")
        .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
}

/// `braid reproduce cmt-scheduling --merge DIR... --out OUT` (also `braid sim merge` of a
/// reproduction's directories).
pub(crate) fn merge(dirs: &[PathBuf], out: &Path) -> Result<(), Error> {
    let (results, merged, opts) = reproduce::cmt_merge(dirs, out)?;
    print_comparison(&results, &opts);
    let runs: usize = merged.iter().map(|m| m.outcome.runs.len()).sum();
    println!(
        "merged {runs} runs from {} director{}; wrote {}/report.md, plots and fig*/summary.json",
        dirs.len(),
        if dirs.len() == 1 { "y" } else { "ies" },
        out.display()
    );
    let outcomes: Vec<(&str, &braid_sim::runner::Outcome)> = merged
        .iter()
        .map(|m| (m.summary.scenario.as_str(), &m.outcome))
        .collect();
    check_outcomes(&outcomes)
}

/// The table "paper vs braid", the claims and the summary line, as in the report.
fn print_comparison(results: &Results, opts: &ReproduceOptions) {
    println!("| figure | data point | metric | paper | braid | deviation | verdict |");
    for line in reproduce::cmt_report(results, opts, &[])
        .lines()
        .filter(|l| l.starts_with("| Fig") || l.starts_with("* Fig") || l.starts_with("**Summary"))
    {
        println!("{line}");
    }
}

/// Prints failed runs and runs that failed the integrity check; an error if there are any.
fn check_outcomes(outcomes: &[(&str, &braid_sim::runner::Outcome)]) -> Result<(), Error> {
    let runs: usize = outcomes.iter().map(|(_, o)| o.runs.len()).sum();
    let failed: usize = outcomes.iter().map(|(_, o)| o.failures().count()).sum();
    let mut broken = 0;
    for (name, o) in outcomes {
        for (f, e) in o.integrity_failures() {
            broken += 1;
            eprintln!("braid: {name} point {} seed {}: {e}", f.point, f.seed);
        }
    }
    if failed > 0 {
        for (name, o) in outcomes {
            for f in o.failures() {
                if let Err(e) = &f.result {
                    eprintln!("braid: {name} point {} seed {}: {e}", f.point, f.seed);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn departure_paragraphs_stay_in_the_report() {
        assert!(is_departure("**D12** (`fig19/back`): follows from D11"));
        assert!(!is_departure("**6 of 6 paper numbers hold**"));
        assert!(!is_departure("**Summary:** 3 hold"));
    }
}
