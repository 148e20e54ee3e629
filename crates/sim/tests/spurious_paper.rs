//! The quick reproduction of Ladha et al. (`braid reproduce spurious --quick`) must give every
//! number and claim of the paper the verdict its report states: each holds, except the
//! departures listed with their reasons in `reproduce::SPURIOUS_DEPARTURES`, which must
//! depart (a listed one that holds is a stale report). Release only: a debug build takes
//! minutes.

#![allow(missing_docs, clippy::unwrap_used)]

use braid_sim::reproduce::{self, ReproduceOptions, SPURIOUS_DEPARTURES, Verdict};
use braid_sim::run;

#[test]
#[cfg_attr(debug_assertions, ignore = "slow in a debug build: run with --release")]
fn quick_reproduction_gives_every_number_and_claim_the_reports_verdict() {
    let dir = std::env::temp_dir().join(format!("braid-spurious-paper-{}", std::process::id()));
    let opts = ReproduceOptions {
        quick: true,
        out: dir.clone(),
        jobs: 0,
        seeds: None,
    };
    let (r, micro, reports) = reproduce::spurious(&opts, &run::run, &|_, _, _| {}).unwrap();
    for rep in &reports {
        let failed: Vec<_> = rep.outcome.failures().collect();
        assert!(
            failed.is_empty(),
            "{}: failed runs {failed:?}",
            rep.summary.scenario
        );
        // No run may lose, duplicate or corrupt a message.
        assert_eq!(rep.outcome.integrity_failures().count(), 0);
    }
    let report = std::fs::read_to_string(dir.join("report.md")).unwrap();
    assert!(report.contains("paper numbers hold"));
    assert!(report.contains("setup checks hold"));
    // Every assumption measured both ways, every number a departure cites from the run.
    for row in &reproduce::SPURIOUS_SENSITIVITY {
        assert!(
            report.contains(&format!("### `{}`", row.key)),
            "{}",
            row.key
        );
        for (_, variant, _, _) in row.figures {
            assert!(r.summary(variant).is_some(), "{variant} not run");
        }
    }
    let unresolved = reproduce::unresolved_tokens(&r);
    assert!(unresolved.is_empty(), "{unresolved:?}");
    assert!(!report.contains("{{") && !report.contains("(not run)"));
    for png in [
        "fig11a-goodput.png",
        "fig13b-unnecessary.png",
        "fig14-download.png",
        "fig7-eifel.png",
        "fig10-long-plain.png",
    ] {
        assert!(dir.join(png).exists(), "{png}");
    }
    let mut verdicts: Vec<(String, String, Verdict)> = Vec::new();
    for c in reproduce::spurious_checks(&r) {
        let value = c.braid.map_or(f64::NAN, |s| s.mean);
        let what = format!(
            "{} {}: paper {}, braid {value:.2}",
            c.figure,
            c.what,
            c.paper.show()
        );
        verdicts.push((c.id.clone(), what, c.verdict()));
    }
    for c in reproduce::spurious_claims(&r, &micro) {
        let what = format!("{} {} ({})", c.figure, c.statement, c.values);
        verdicts.push((c.id.clone(), what, c.verdict()));
    }
    for (id, what, v) in &verdicts {
        eprintln!("[{id}] {what}: {}", v.word());
    }
    let failures = reproduce::mismatches(SPURIOUS_DEPARTURES, &verdicts);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        failures.is_empty(),
        "{} verdicts differ from the report: {failures:#?}",
        failures.len()
    );
}
