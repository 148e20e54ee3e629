//! The report of `braid reproduce cmt-scheduling`: the method, the assumptions and their
//! effect, every number and claim of Dreibholz et al. with its verdict, and the plots.

use std::fmt::Write as _;

use super::cmt::{self, BUF, DELAY_B, FIG6_RATES, NRSACK, RATE_B, SCHED, SQINFO};
use super::verdict::{Citations, Expect, Verdict};
use super::{
    CMT_DEPARTURES, CMT_SCHEDULING, QUICK_MEASUREMENT, QUICK_SEEDS, QUICK_WARMUP, ReproduceOptions,
    Results, display_kib,
};
use crate::plot::{self, Chart, PlotSpec, Series};
use crate::runner::SummaryFile;
use crate::stats::mean_ci;
use crate::sweep::display_value;

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
                fix: fix
                    .iter()
                    .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                    .collect(),
                ..PlotSpec::default()
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

/// The charts of Dreibholz et al. Fig. 4–7: (file name, chart).
pub(super) fn cmt_charts(r: &Results) -> Result<Vec<(String, Chart)>, plot::PlotError> {
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

/// The assumptions where Dreibholz et al. is silent: (scenario key, what the paper's INET model
/// does, what the alternatives mean).
const ASSUMPTIONS: [(&str, &str); 10] = [
    (
        "association.max_gap_blocks",
        "gap ack blocks one SACK reports at most: braid's default fills the path MTU (INET's \
         gapReportLimit is 100000000); the Fig. 6 table below measures 64",
    ),
    (
        "traffic.0.sqinfo_policy",
        "how the application reads sender queue info: `bytes` keeps each stream's buffered \
         bytes ≤ σ/streams (what SCTP_SQINFO reports), `messages` tops up streams with < 8 \
         queued messages",
    ),
    (
        "association.nr_sack_policy",
        "what an NR-SACK acknowledges non-renegably: an ordered chunk once its message is \
         delivered (`delivered`, INET's pushUlp), or every chunk on receipt (`received`)",
    ),
    (
        "association.receive_split",
        "receive-side buffer splitting divides the peer's INIT a_rwnd (`initial-window`) or \
         its current window, rwnd + outstanding (`current-window`)",
    ),
    (
        "association.sack_path",
        "where a lone SACK goes: the quickest path DATA came in on since the last SACK, the \
         first (INET's \"standard\"), the last (RFC 9260 §6.4), or the primary",
    ),
    (
        "association.rtx_policy",
        "the path of a retransmission (RTX-SSTHRESH, the CMT paper's recommendation; INET: a \
         fast retransmit on the chunk's path, a timeout's on the next active path)",
    ),
    (
        "association.window_cover",
        "braid's rule keeping new data and retransmissions off a path the peer's window \
         cannot cover at its RTT (opt-in for CMT; braid's default is off); the CMT-SCTP of \
         the paper and INET has none",
    ),
    (
        "association.max_burst",
        "Max.Burst counts packets of new data per path between SACKs or T3s (RFC 9260 §6.1)",
    ),
    (
        "association.buffer_splitting",
        "send- and receive-side buffer splitting (the paper's §5: on)",
    ),
    (
        "start_jitter",
        "each run's association connects at a time uniform in [0, start_jitter) drawn from \
         its seed (with heartbeat jitter and initial TSNs what seeds vary, as no link loses \
         packets at random here)",
    ),
];

/// The value figure file `id` gives `key` (a sweep key: `traffic.0.x` reads the first
/// `[[traffic]]`), as the summaries write values.
fn file_value(id: &str, key: &str) -> String {
    let Some(doc) = CMT_SCHEDULING
        .iter()
        .find(|f| f.id == id)
        .and_then(|f| f.text.parse::<toml_edit::DocumentMut>().ok())
    else {
        return "?".into();
    };
    match crate::sweep::get(doc.as_item(), key).and_then(|i| i.as_value()) {
        Some(v) => v
            .as_str()
            .map_or_else(|| v.to_string().trim().to_string(), str::to_string),
        None => "(default)".into(),
    }
}

/// The points of figure file `from` with every key of `at`, as the summary of figure `as_id`.
fn assumption_variant(
    r: &Results,
    from: &str,
    as_id: &'static str,
    at: &[(&str, String)],
) -> Option<Results> {
    let s = r.summary(from)?;
    let points = s
        .points
        .iter()
        .filter(|p| super::matches(&p.params, at))
        .cloned()
        .collect();
    Some(Results {
        summaries: vec![(
            as_id,
            SummaryFile {
                points,
                ..s.clone()
            },
        )],
    })
}

/// The variants of an assumptions study: the values figure file `fig` gives `keys`, then each
/// key at each other value (the rest as chosen), then braid's defaults for all of them.
fn variants(
    fig: &str,
    keys: &[(&'static str, &[&'static str])],
) -> Vec<(String, Vec<(&'static str, String)>)> {
    let chosen: Vec<(&str, String)> = keys.iter().map(|(k, _)| (*k, file_value(fig, k))).collect();
    let short = |k: &str| k.rsplit('.').next().unwrap_or(k).to_string();
    let mut out = vec![("as the figure files (used)".to_string(), chosen.clone())];
    for (key, values) in keys {
        for value in values.iter().filter(|v| **v != file_value(fig, key)) {
            let mut at = chosen.clone();
            if let Some(e) = at.iter_mut().find(|(k, _)| k == key) {
                e.1 = (*value).to_string();
            }
            out.push((format!("`{}` = `{value}`", short(key)), at));
        }
    }
    let defaults: Vec<(&str, String)> = keys
        .iter()
        .map(|(k, vs)| (*k, vs.last().copied().unwrap_or_default().to_string()))
        .collect();
    out.push(("braid's defaults for all".to_string(), defaults));
    out
}

/// "Fig. 4: what decides round-robin's σ": the smallest σ at full rate per variant.
fn fig4_assumptions_section(md: &mut String, r: &Results) {
    if r.summary("fig4-assumptions").is_none() {
        return;
    }
    // The last value of each list is braid's default.
    let keys: [(&str, &[&str]); 3] = [
        ("association.nr_sack_policy", &["delivered", "received"]),
        (
            "association.receive_split",
            &["current-window", "initial-window"],
        ),
        (
            "association.sack_path",
            &["first-data", "last-data", "quickest"],
        ),
    ];
    let _ = writeln!(
        md,
        "\n## Fig. 4: what decides round-robin's σ\n\n\
         The smallest σ at which δB = 75 ms reaches full rate (≥ {:.0} % of {:.2} Mbit/s), per \
         variant of the keys the INET model decides (`scenarios/papers/cmt-fig4-assumptions.toml`). \
         The paper: Fixed 224 KiB, RR 288 KiB. With NR-SACK on receipt, path A's out-of-order \
         chunks leave the send buffer at once, its cwnd grows and its queue fills until A is as \
         slow as B: nothing is reordered and RR needs no more than Fixed.\n\n\
         | variant | Fixed (KiB) | RR (KiB) | as the paper |\n|---|---|---|---|",
        cmt::FULL_RATE_SHARE * 100.0,
        cmt::payload_mbps(20.0)
    );
    for (label, at) in variants("fig4", &keys) {
        let Some(v) = assumption_variant(r, "fig4-assumptions", "fig4", &at) else {
            continue;
        };
        let sigma = |s| {
            let c = cmt::curve(&v, "fig4", &[(DELAY_B, "75ms"), (SCHED, s)], "goodput_mbps");
            cmt::first_sigma_at(&c, cmt::FULL_RATE_SHARE * cmt::payload_mbps(20.0))
        };
        let (f, rr) = (sigma("fixed"), sigma("rr"));
        let show = |x: f64| {
            if x.is_nan() {
                "not run".to_string()
            } else if x.is_infinite() {
                "> largest σ run".to_string()
            } else {
                format!("{x}")
            }
        };
        let paper = Expect::About(224.0).holds(f) && Expect::About(288.0).holds(rr);
        let _ = writeln!(
            md,
            "| {label} | {} | {} | {} |",
            show(f),
            show(rr),
            if paper { "yes" } else { "no" }
        );
    }
}

/// The "Assumptions" section: each key's value, and the Fig. 7 numbers and claims with each
/// alternative value (the others as chosen).
fn assumptions_section(md: &mut String, r: &Results) {
    let _ = writeln!(
        md,
        "## Assumptions where the paper is silent\n\n\
         Each is a scenario key (`scenarios/README.md`) with the value the figure files give it.\n"
    );
    let _ = writeln!(md, "| key | value | meaning |\n|---|---|---|");
    for (key, meaning) in ASSUMPTIONS {
        let _ = writeln!(
            md,
            "| `{key}` | `{}` | {meaning} |",
            file_value("fig7", key)
        );
    }
    if r.summary("fig7-assumptions").is_none() {
        return;
    }
    // The last value of each list is braid's default.
    let keys: [(&str, &[&str]); 4] = [
        ("traffic.0.sqinfo_policy", &["messages", "bytes"]),
        ("association.nr_sack_policy", &["delivered", "received"]),
        (
            "association.receive_split",
            &["current-window", "initial-window"],
        ),
        (
            "association.sack_path",
            &["first-data", "last-data", "quickest"],
        ),
    ];
    let fig7 = |v: &Results| -> (Vec<super::Check>, Vec<super::Claim>) {
        (
            cmt::cmt_checks(v)
                .into_iter()
                .filter(|c| c.figure == "Fig. 7")
                .collect(),
            cmt::cmt_claims(v)
                .into_iter()
                .filter(|c| c.figure == "Fig. 7")
                .collect(),
        )
    };
    let _ = writeln!(
        md,
        "\nTheir effect on Fig. 7 (`scenarios/papers/cmt-fig7-assumptions.toml`): one key varied \
         at a time, the others as above; the paper's numbers of §6.3 (braid's means) and how \
         many of its Fig. 7 numbers and claims hold.\n"
    );
    let mut header = String::from("| variant |");
    let mut sep = String::from("|---|");
    if let Some(v) = assumption_variant(r, "fig7-assumptions", "fig7", &[]) {
        for c in fig7(&v).0 {
            let m = if c.metric == "goodput_mbps" {
                "Mbit/s"
            } else {
                "ms"
            };
            let _ = write!(header, " {}, {m} ({}) |", c.what, c.paper.show());
            sep.push_str("---|");
        }
    }
    let _ = writeln!(md, "{header} holds |\n{sep}---|");
    for (label, at) in variants("fig7", &keys) {
        let Some(v) = assumption_variant(r, "fig7-assumptions", "fig7", &at) else {
            continue;
        };
        let (checks, claims) = fig7(&v);
        let mut row = format!("| {label} |");
        let mut holds = 0;
        for c in &checks {
            let m = c.braid.map_or(f64::NAN, |s| s.mean);
            let _ = write!(row, " {m:.2} |");
            holds += usize::from(c.verdict() == Verdict::Holds);
        }
        holds += claims
            .iter()
            .filter(|c| c.verdict() == Verdict::Holds)
            .count();
        let _ = writeln!(md, "{row} {holds} of {} |", checks.len() + claims.len());
    }
}

/// The variants of `cmt-fig6-assumptions.toml` (its `[[sweep.variant]]` names) with what each
/// changes.
const FIG6_VARIANTS: [(&str, &str); 3] = [
    ("as the figure files", "as the figure files (used)"),
    ("max_gap_blocks 64", "`max_gap_blocks` = 64"),
    ("queue A 10", "`path.A.queue` = 10 packets"),
];

/// "Fig. 6: what decides its departures": the Fig. 6 numbers and claims per variant, and
/// RR's per-stream goodput at the largest σ.
fn fig6_assumptions_section(md: &mut String, r: &Results) {
    if r.summary("fig6-assumptions").is_none() {
        return;
    }
    let runs: Vec<(&str, Option<Results>)> = FIG6_VARIANTS
        .iter()
        .map(|(name, label)| {
            let at = [("variant", (*name).to_string())];
            (
                *label,
                assumption_variant(r, "fig6-assumptions", "fig6", &at),
            )
        })
        .collect();
    let fig6 = |v: &Results| -> (Vec<super::Check>, Vec<super::Claim>) {
        (
            cmt::cmt_checks(v)
                .into_iter()
                .filter(|c| c.figure == "Fig. 6")
                .collect(),
            cmt::cmt_claims(v)
                .into_iter()
                .filter(|c| c.figure == "Fig. 6")
                .collect(),
        )
    };
    let _ = writeln!(
        md,
        "\n## Fig. 6: what decides its departures\n\n\
         The paper's Fig. 6 numbers (braid's means, Mbit/s) with one assumption changed at a \
         time (`scenarios/papers/cmt-fig6-assumptions.toml`, the σ the numbers are stated at, \
         fewer seeds than the figure), RR's per-stream goodput at the largest σ, and how many of \
         the Fig. 6 numbers and claims hold.\n"
    );
    let mut header = String::from("| data point | paper |");
    let mut sep = String::from("|---|---|");
    for (label, _) in &runs {
        let _ = write!(header, " {label} |");
        sep.push_str("---|");
    }
    let _ = writeln!(md, "{header}\n{sep}");
    let per_variant: Vec<Option<(Vec<super::Check>, Vec<super::Claim>)>> =
        runs.iter().map(|(_, v)| v.as_ref().map(fig6)).collect();
    let Some(Some((first, _))) = per_variant.first() else {
        return;
    };
    let show = |m: Option<f64>| m.map_or("–".to_string(), |m| format!("{m:.2}"));
    for (i, c) in first.iter().enumerate() {
        let mut row = format!("| {} | {} |", c.what, c.paper.show());
        for v in &per_variant {
            let m = v
                .as_ref()
                .and_then(|(checks, _)| checks.get(i))
                .and_then(|c| c.braid)
                .filter(|s| s.n > 0)
                .map(|s| s.mean);
            let _ = write!(row, " {} |", show(m));
        }
        let _ = writeln!(md, "{row}");
    }
    let largest = "320KiB";
    for (rate, rho_b) in FIG6_RATES {
        let paper = (10.0 + rho_b) / 2.0;
        let mut row = format!(
            "| ρB = {rho_b} Mbit/s, RR, stream 0 / stream 1, σ = {}: (ρA+ρB)/2 | ≈ {paper} each |",
            display_kib(largest)
        );
        for (_, v) in &runs {
            let g = |m: &str| {
                v.as_ref().and_then(|v| {
                    let at = [
                        (RATE_B, rate),
                        (SCHED, "rr"),
                        (SQINFO, "false"),
                        (BUF, largest),
                    ];
                    v.summary("fig6")?
                        .points
                        .iter()
                        .find(|p| super::matches(&p.params, &at))
                        .and_then(|p| p.metrics.get(m))
                        .filter(|s| s.n > 0)
                        .map(|s| s.mean)
                })
            };
            let _ = write!(
                row,
                " {} / {} |",
                show(g("stream0_goodput_mbps")),
                show(g("stream1_goodput_mbps"))
            );
        }
        let _ = writeln!(md, "{row}");
    }
    let mut row = String::from("| Fig. 6 numbers and claims that hold | |");
    for v in &per_variant {
        let cell = v.as_ref().map_or("–".to_string(), |(checks, claims)| {
            let holds = checks
                .iter()
                .map(|c| c.verdict())
                .chain(claims.iter().map(|c| c.verdict()))
                .filter(|v| *v == Verdict::Holds)
                .count();
            format!("{holds} of {}", checks.len() + claims.len())
        });
        let _ = write!(row, " {cell} |");
    }
    let _ = writeln!(md, "{row}");
}

/// "Fig. 7: the delay averaged per stream": the paper's delay numbers against braid's mean
/// over all messages and the unweighted mean of the seven streams' means.
fn fig7_delay_section(md: &mut String, r: &Results) {
    if r.summary("fig7").is_none() {
        return;
    }
    let _ = writeln!(
        md,
        "\n## Fig. 7: the delay averaged per stream\n\n\
         braid's `msg_delay_ms_mean` is the mean over all messages; NetPerfMeter records one \
         histogram per stream and the paper does not say how it averaged them. The unweighted \
         mean of the seven streams' means (ms; streams 1, 3, 5 on A, 2, 4, 6 on B, 0 on C in \
         the fixed mapping):\n\n\
         | data point | paper | over all messages | mean of the streams' means | streams on A and B | stream on C |\n\
         |---|---|---|---|---|---|"
    );
    for (nr, b, paper, what) in [
        ("true", "128KiB", 60.0, "Fixed, NR-SACK"),
        ("false", "256KiB", 150.0, "Fixed, no NR-SACK"),
    ] {
        let at = [(NRSACK, nr), (SCHED, "fixed"), (BUF, b)];
        let m = |metric: &str| r.mean("fig7", &at, metric);
        let streams: Vec<f64> = (0..7)
            .map(|i| m(&format!("stream{i}_msg_delay_ms_mean")))
            .collect();
        let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
        let _ = writeln!(
            md,
            "| {what}, σ = {} | ≈ {paper} | {:.1} | {:.1} | {:.1} | {:.1} |",
            display_kib(b),
            m("msg_delay_ms_mean"),
            mean(&streams),
            mean(&streams[1..]),
            streams[0]
        );
    }
}

/// braid's RR per-stream goodput over σ in Fig. 6, where it reaches (ρA+ρB)/2.
fn fig6_curve_section(md: &mut String, r: &Results) {
    let Some(s) = r.summary("fig6") else {
        return;
    };
    let _ = writeln!(
        md,
        "\n## Fig. 6: braid's round-robin curve\n\n\
         The paper's reasoning (Equation (1) with the margin of its own 10/10 ms result) gives \
         σ = {} KiB for ρB = 25 Mbit/s and {} KiB for 50 Mbit/s; the numbers above compare \
         there. braid's RR stream 0 goodput (Mbit/s) over every σ run:\n",
        cmt::fig6_sigma_kib(25.0),
        cmt::fig6_sigma_kib(50.0)
    );
    for (rate, rho_b) in FIG6_RATES {
        let target = 0.9 * cmt::payload_mbps((10.0 + rho_b) / 2.0);
        let mut row = Vec::new();
        let mut reached = None;
        for p in &s.points {
            let at = [(RATE_B, rate), (SCHED, "rr"), (SQINFO, "false")];
            if !super::matches(&p.params, &at) {
                continue;
            }
            let (Some(b), Some(g)) = (p.params.get(BUF), p.metrics.get("stream0_goodput_mbps"))
            else {
                continue;
            };
            let b = display_kib(&display_value(b));
            if reached.is_none() && g.mean >= target {
                reached = Some(b.clone());
            }
            row.push(format!("{b}: {:.2}", g.mean));
        }
        let _ = writeln!(
            md,
            "* ρB = {rho_b} Mbit/s: {}; 90 % of the payload rate of (ρA+ρB)/2 first at {}.",
            row.join(", "),
            reached.as_deref().unwrap_or("no σ run")
        );
    }
}

/// A mean with its interval; where the interval rounds to zero, what the seeds gave.
fn show_mean(s: &crate::stats::Summary) -> String {
    if s.n > 1 && s.min == s.max {
        format!("{:.2} (every one of n={} seeds)", s.mean, s.n)
    } else if s.n > 1 && format!("{:.3}", s.min) == format!("{:.3}", s.max) {
        format!("{:.2} (every one of n={} seeds {:.3})", s.mean, s.n, s.min)
    } else if s.n > 1 && s.ci95 < 0.005 {
        format!(
            "{} (n={}, seeds {:.3}–{:.3})",
            mean_ci(s.mean, s.ci95, 2),
            s.n,
            s.min,
            s.max
        )
    } else {
        mean_ci(s.mean, s.ci95, 2)
    }
}

/// The markdown report: method, assumptions, the numbers and claims with their verdicts,
/// Fig. 6's curve, the plots.
pub fn cmt_report(r: &Results, opts: &ReproduceOptions, plots: &[String]) -> String {
    let mut md = String::new();
    let _ = writeln!(
        md,
        "# Reproduction of Transmission Scheduling Optimizations for Concurrent Multipath Transfer (Dreibholz et al., 2010)\n"
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
            "19 s warm-up, 300 s measurement, σ = 32…320 KiB (Fig. 6 up to 1 MiB; the \
             assumptions studies 6 seeds: Fig. 7 at 128 and 256 KiB, Fig. 4 at δB = 75 ms, \
             Fig. 6 at 128, 192 and 320 KiB)"
                .into(),
        )
    };
    let seeds = opts.seeds.unwrap_or(seeds);
    let _ = writeln!(
        md,
        "Setup of Dreibholz et al. §5 (`scenarios/papers/cmt-fig*.toml`): {seeds} seeds per point, {meas}. \
         Values are means over the seeds with the half-width of the 95 % confidence interval \
         (Student's t with n − 1 degrees of freedom, t · s/√n). The seeds vary the association's \
         start (`start_jitter`), heartbeat jitter and initial TSNs; no link loses packets at random, \
         so runs differ only in phase and the intervals are small (where one rounds to zero, the \
         cell gives the seeds' range, or says that every seed gave the same value). Goodput counts user data (1452 of \
         1500 bytes per packet). A number the paper states as \"around\" holds within ±{:.0} %, a \
         bound holds when braid's mean satisfies it; a claim holds when the comparison stated with \
         it is true of braid's means.\n",
        super::TOLERANCE_PCT
    );
    let checks = cmt::cmt_checks(r);
    let claims = cmt::cmt_claims(r);
    let count = |vs: &[Verdict], v: Verdict| vs.iter().filter(|&&x| x == v).count();
    let cv: Vec<Verdict> = checks.iter().map(|c| c.verdict()).collect();
    let lv: Vec<Verdict> = claims.iter().map(|c| c.verdict()).collect();
    let _ = writeln!(
        md,
        "**Summary:** of the paper's {} numbers, {} hold and {} depart; of its {} claims, {} hold \
         and {} depart{}.\n",
        checks.len(),
        count(&cv, Verdict::Holds),
        count(&cv, Verdict::Departs),
        claims.len(),
        count(&lv, Verdict::Holds),
        count(&lv, Verdict::Departs),
        match count(&cv, Verdict::NotRun) + count(&lv, Verdict::NotRun) {
            0 => String::new(),
            n => format!("; {n} not run"),
        }
    );
    // A cause's reason is printed once, under "Departures"; rows cite it by label.
    let mut citations = Citations::new(CMT_DEPARTURES);
    let mut why = |id: &str, v: Verdict| match v {
        Verdict::Departs => match citations.cite(id) {
            Some(label) => format!("**departs** ({label})"),
            None => "**departs** (not explained)".into(),
        },
        v => v.word().into(),
    };
    let _ = writeln!(
        md,
        "## The paper's numbers\n\n\
         | figure | data point | metric | paper | braid | deviation | verdict |\n\
         |---|---|---|---|---|---|---|"
    );
    for c in &checks {
        let (braid, dev) = match c.braid {
            Some(s) if s.mean.is_infinite() => ("not reached at any σ run".into(), "–".into()),
            Some(s) if s.n > 0 => {
                let dev = c
                    .paper
                    .deviation_pct(s.mean)
                    .map_or("–".into(), |d| format!("{d:+.1} %"));
                (show_mean(&s), dev)
            }
            _ => ("–".into(), "–".into()),
        };
        let _ = writeln!(
            md,
            "| {} | {} | `{}` | {} | {braid} | {dev} | {} |",
            c.figure,
            c.what,
            c.metric,
            c.paper.show(),
            why(&c.id, c.verdict())
        );
    }
    let _ = writeln!(md, "\n## The paper's claims\n");
    for c in &claims {
        let _ = writeln!(
            md,
            "* {}: {} ({}): {}",
            c.figure,
            c.statement,
            c.values,
            why(&c.id, c.verdict())
        );
    }
    md.push_str(&citations.section());
    let _ = writeln!(md);
    assumptions_section(&mut md, r);
    fig4_assumptions_section(&mut md, r);
    fig6_assumptions_section(&mut md, r);
    fig6_curve_section(&mut md, r);
    fig7_delay_section(&mut md, r);
    let _ = writeln!(md, "\n## Plots\n");
    for p in plots {
        let _ = writeln!(md, "![{p}]({p})");
    }
    md
}
