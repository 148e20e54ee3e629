//! The quick reproduction of Dreibholz et al. (`braid reproduce cmt-scheduling --quick`) must give
//! every number and claim of the paper the verdict its report states: each holds, except the
//! departures listed with their reasons in `reproduce::CMT_DEPARTURES`, which must depart
//! (a listed one that holds is a stale report). Release only: a debug build takes minutes.

#![allow(missing_docs, clippy::unwrap_used)]

use braid_sim::reproduce::{self, CMT_DEPARTURES, ReproduceOptions, Results, Verdict};
use braid_sim::run;

fn quick() -> Results {
    let dir = std::env::temp_dir().join(format!("braid-cmt-paper-{}", std::process::id()));
    let opts = ReproduceOptions {
        quick: true,
        out: dir.clone(),
        jobs: 0,
        seeds: None,
    };
    let (results, reports) = reproduce::cmt_scheduling(&opts, &run::run, &|_, _, _| {}).unwrap();
    for r in &reports {
        let failed: Vec<_> = r.outcome.failures().collect();
        assert!(
            failed.is_empty(),
            "{}: failed runs {failed:?}",
            r.summary.scenario
        );
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("**Summary:**"));
    assert!(dir.join("fig4-throughput.png").exists());
    let _ = std::fs::remove_dir_all(&dir);
    results
}

#[test]
#[cfg_attr(debug_assertions, ignore = "slow in a debug build: run with --release")]
fn quick_reproduction_gives_every_claim_the_reports_verdict() {
    let r = quick();
    let mut verdicts: Vec<(String, String, Verdict)> = Vec::new();
    for c in reproduce::cmt_checks(&r) {
        let value = c.braid.map_or(f64::NAN, |s| s.mean);
        let what = format!(
            "{} {} {}: paper {}, braid {value:.2}",
            c.figure,
            c.what,
            c.metric,
            c.paper.show()
        );
        verdicts.push((c.id.clone(), what, c.verdict()));
    }
    for c in reproduce::cmt_claims(&r) {
        let what = format!("{} {} ({})", c.figure, c.statement, c.values);
        verdicts.push((c.id.clone(), what, c.verdict()));
    }
    for (id, what, v) in &verdicts {
        eprintln!("[{id}] {what}: {}", v.word());
    }
    let failures = reproduce::mismatches(CMT_DEPARTURES, &verdicts);
    assert!(
        failures.is_empty(),
        "{} verdicts differ from the report: {failures:#?}",
        failures.len()
    );
}
