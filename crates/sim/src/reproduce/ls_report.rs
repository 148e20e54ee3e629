//! The report of `braid reproduce ls-sctp`: the method, the assumptions, every number and
//! claim of Abd El Al et al. §5 with its verdict, braid's LS-SCTP vs CMT-SCTP comparison, and the
//! plots.

use std::fmt::Write as _;

use super::ls::{
    self, BUF, FIG12_EQ1, FIG12_LARGE, HANDLING, LOSS, LS_DEPARTURES, LS_SCTP, LsSeries, MODE,
    PATHS, PMR, RunSeries, path_payload_mbps,
};
use super::verdict::{Citations, Verdict};
use super::{ReproduceError, ReproduceOptions, Results};
use crate::plot::{self, Chart, ChartPoint, Kind, Series, XAxis};
use crate::stats::{Summary, mean_ci};

fn point(x: f64, s: Summary) -> ChartPoint {
    ChartPoint {
        x,
        mean: s.mean,
        ci95: s.ci95,
        n: s.n,
    }
}

fn line(x: f64, y: f64) -> ChartPoint {
    ChartPoint {
        x,
        mean: y,
        ci95: f64::NAN,
        n: 1,
    }
}

fn chart(title: &str, x_label: &str, y_label: &str, series: Vec<Series>) -> Chart {
    Chart {
        title: title.into(),
        x_label: x_label.into(),
        y_label: y_label.into(),
        x_axis: XAxis::Numeric {
            kind: Kind::Number,
            scale: 1.0,
            unit: String::new(),
        },
        series,
        scatter: false,
        x_range: None,
        log_x: false,
        log_y: false,
    }
}

fn curve(label: &str, points: Vec<ChartPoint>) -> Series {
    Series {
        label: Some(label.into()),
        points,
    }
}

/// The first run's received sequence and 1-s throughput, over `[0, end)`.
fn over_time(r: &RunSeries, end: f64) -> (Vec<ChartPoint>, Vec<ChartPoint>) {
    let received =
        r.t.iter()
            .zip(&r.cum)
            .filter(|(t, _)| **t <= end)
            .map(|(t, c)| line(*t, *c))
            .collect();
    let thr = r
        .bins(0.0, end, 1.0)
        .into_iter()
        .map(|(t, v)| line(t + 0.5, v))
        .collect();
    (received, thr)
}

/// The variants of Figs. 15–18 the plots and the comparison table show.
const FIG15_VARIANTS: [(&str, &str, &str); 4] = [
    ("ls", "sctp", "LS-SCTP, SCTP timeout handling"),
    ("ls", "ls", "LS-SCTP, LS-SCTP timeout handling"),
    ("cmt", "sctp", "CMT-SCTP, SCTP timeout handling"),
    ("cmt", "ls", "CMT-SCTP, heartbeat probing (PF)"),
];

fn charts(r: &Results, s: &LsSeries) -> Vec<(String, Vec<Chart>)> {
    let mut out = Vec::new();
    let rate = path_payload_mbps();
    if r.summary("fig12").is_some() {
        let mut series = Vec::new();
        for buf in [FIG12_EQ1, FIG12_LARGE] {
            let pts = (1..=5u32)
                .filter_map(|n| {
                    r.get(
                        "fig12",
                        &[(BUF, buf), (PATHS, &n.to_string())],
                        "goodput_mbps",
                    )
                    .map(|x| point(f64::from(n), x))
                })
                .collect();
            series.push(curve(&format!("LS-SCTP, buffer {buf}"), pts));
        }
        series.push(curve(
            "n × one path's payload rate",
            (1..=5u32)
                .map(|n| line(f64::from(n), f64::from(n) * rate))
                .collect(),
        ));
        out.push((
            "fig12-throughput.png".into(),
            vec![chart(
                "Fig. 12: throughput vs number of paths",
                "paths carrying data",
                "throughput (Mbit/s)",
                series,
            )],
        ));
    }
    if r.summary("fig13").is_some() {
        let losses = ls::fig13_losses(r);
        let series = [
            ("off", "SCTP (primary p1)"),
            ("ls", "LS-SCTP"),
            ("cmt", "CMT-SCTP"),
        ]
        .iter()
        .map(|(m, name)| {
            curve(
                name,
                losses
                    .iter()
                    .filter_map(|l| {
                        let x = l.parse::<f64>().ok()?.log10();
                        r.get("fig13", &[(LOSS, l), (MODE, m)], "goodput_mbps")
                            .map(|v| point(x, v))
                    })
                    .collect(),
            )
        })
        .collect();
        out.push((
            "fig13-throughput.png".into(),
            vec![chart(
                "Fig. 13: throughput vs loss on path p1",
                "log10(loss rate of p1)",
                "throughput (Mbit/s)",
                series,
            )],
        ));
    }
    if let Some(run) = s.of(r, "fig14", &[]).first() {
        let (_, thr) = over_time(run, 120.0);
        let avail = (0..240)
            .map(|k| {
                let t = f64::from(k) * 0.5;
                line(t, ls::fig14_available_mbps(t))
            })
            .collect();
        out.push((
            "fig14-throughput.png".into(),
            vec![chart(
                "Fig. 14: throughput under square-wave background on p1",
                "time (s)",
                "throughput (Mbit/s)",
                vec![
                    curve("LS-SCTP (1-s bins, first seed)", thr),
                    curve("available payload rate", avail),
                ],
            )],
        ));
    }
    let mut received = Vec::new();
    let mut thr = Vec::new();
    for (m, h, name) in FIG15_VARIANTS {
        if let Some(run) = s.of(r, "fig15", &[(MODE, m), (HANDLING, h)]).first() {
            let (rc, th) = over_time(run, 30.0);
            received.push(curve(name, rc));
            thr.push(curve(name, th));
        }
    }
    if !received.is_empty() {
        out.push((
            "fig15-17-received.png".into(),
            vec![chart(
                "Figs. 15, 17: received sequence, p1 down 5–15 s (first seed)",
                "time (s)",
                "messages acknowledged cumulatively",
                received,
            )],
        ));
        out.push((
            "fig16-18-throughput.png".into(),
            vec![chart(
                "Figs. 16, 18: throughput, p1 down 5–15 s (first seed)",
                "time (s)",
                "throughput (Mbit/s, 1-s bins)",
                thr,
            )],
        ));
    }
    let mut received = Vec::new();
    let mut thr = Vec::new();
    for pmr in ["5", "4"] {
        if let Some(run) = s.of(r, "fig19", &[(PMR, pmr)]).first() {
            let (rc, th) = over_time(run, 80.0);
            let name = format!("Path.Max.Retrans {pmr}");
            received.push(curve(&name, rc));
            thr.push(curve(&name, th));
        }
    }
    if !received.is_empty() {
        out.push((
            "fig19-20.png".into(),
            vec![
                chart(
                    "Figs. 19, 20: p1 down 5–50 s, HB.Interval 1 s (first seed)",
                    "time (s)",
                    "messages acknowledged cumulatively",
                    received,
                ),
                chart(
                    "throughput",
                    "time (s)",
                    "throughput (Mbit/s, 1-s bins)",
                    thr,
                ),
            ],
        ));
    }
    out
}

fn show(s: &Option<Summary>) -> String {
    match s {
        Some(s) if s.mean.is_infinite() => format!("never (n={})", s.n),
        // A zero interval says every seed gave the same value: say so.
        Some(s) if s.n > 1 && s.min == s.max => {
            format!("{:.3} (every one of n={} seeds)", s.mean, s.n)
        }
        Some(s) if s.n > 1 && !s.ci95.is_nan() => {
            format!("{} (n={})", mean_ci(s.mean, s.ci95, 3), s.n)
        }
        Some(s) if !s.mean.is_nan() => format!("{:.3} (n={})", s.mean, s.n),
        _ => "not run".into(),
    }
}

/// Each seed's value in seed order (`never` for a time that did not come), for a cell whose
/// mean alone would hide them (a "never" in some seeds).
fn per_seed(
    s: &LsSeries,
    r: &Results,
    id: &str,
    at: &[(&str, &str)],
    f: fn(&RunSeries) -> f64,
) -> String {
    let v: Vec<String> = (s.of(r, id, at).iter())
        .map(|x| match f(x) {
            t if t.is_infinite() => "never".to_string(),
            t => format!("{t:.2}"),
        })
        .collect();
    if v.is_empty() {
        "not run".into()
    } else {
        format!("{} (seeds 0–{})", v.join(", "), v.len() - 1)
    }
}

fn mean_of(
    s: &LsSeries,
    r: &Results,
    id: &str,
    at: &[(&str, &str)],
    f: fn(&RunSeries) -> f64,
) -> String {
    show(&s.stat(r, id, at, f))
}

/// What the report adds after a verdict: the label of its departure (the reason is printed
/// once, under "Departures"), or "not explained".
fn why(citations: &mut Citations<'_>, id: &str, verdict: Verdict) -> String {
    match citations.cite(id) {
        Some(label) => format!(" ({label})"),
        None if verdict == Verdict::Departs => " (not explained)".into(),
        None => String::new(),
    }
}

/// The report's Markdown.
pub fn ls_report(r: &Results, s: &LsSeries, opts: &ReproduceOptions, plots: &[String]) -> String {
    let checks = ls::ls_checks(r, s);
    let claims = ls::ls_claims(r, s);
    let mut md = String::new();
    let rate = path_payload_mbps();
    let held = |v: Verdict| v == Verdict::Holds;
    let nh = checks.iter().filter(|c| held(c.verdict())).count();
    let ch = claims.iter().filter(|c| held(c.verdict())).count();
    let _ = writeln!(
        md,
        "# Reproduction of LS-SCTP: a bandwidth aggregation technique for SCTP (Abd El Al et al., Computer Communications 2004)\n"
    );
    let _ = writeln!(
        md,
        "**{nh} of {} paper numbers hold, {} depart; {ch} of {} claims hold, {} depart.**\n",
        checks.len(),
        checks.len() - nh,
        claims.len(),
        claims.len() - ch
    );
    let variant = if opts.quick {
        "the quick variant (fewer seeds, three loss rates in Fig. 13)"
    } else {
        "the full variant"
    };
    let _ = writeln!(
        md,
        "Produced by `braid reproduce ls-sctp{}` ({variant}). Every run is braid's core in \
         the deterministic simulator; each seed draws the association's start time and the \
         random losses. Scenario files: {}.\n",
        if opts.quick { " --quick" } else { "" },
        LS_SCTP
            .iter()
            .map(|f| format!("`{}`", f.file))
            .collect::<Vec<_>>()
            .join(", ")
    );
    md.push_str(
        "## Method\n\nTwo hosts joined by independent paths of 1.5 Mbit/s and 100 ms RTT \
         (§5), a saturated sender of 1 KiB messages on one stream, buffers by Eq. (1). \
         Throughput is the application payload delivered per second (the paper's \
         definition); over time it is read from each run's time series (every 100 ms: the \
         messages cumulatively acknowledged, each path's state and flight size). One path's \
         payload rate with LS-DATA over IPv4 is ",
    );
    let _ = writeln!(
        md,
        "{rate:.4} Mbit/s. Numbers the paper states get ±10 % (\"around\", \"approximately\"); \
         claims are computed from braid's means and can fail.\n"
    );
    md.push_str(
        "## Assumptions (where the paper is silent), all scenario keys\n\n\
         | key | value | why |\n|---|---|---|\n\
         | `rto_initial`, `rto_min`, `rto_max` | 3 s, 1 s, 60 s | RFC 2960, the SCTP of the paper's OPNET model |\n\
         | `sack_delay`, `sack_freq` | 200 ms, 2 | RFC 2960 |\n\
         | `max_burst` | 4 | RFC 2960 |\n\
         | `hb_interval` | 30 s (Figs. 12–18), 1 s (Figs. 19–20, stated) | RFC 2960; §5.5 |\n\
         | `pf` | false | RFC 2960 has no potentially-failed state: a timed-out path stays active |\n\
         | `nr_sack` | false | 2004 SCTP |\n\
         | `[[path]] queue` | 20 packets | about one bandwidth-delay product per path |\n\
         | `path_assignment` | `cwnd-rtt` for LS-SCTP, `round-robin` for CMT | §4.3; the CMT paper |\n\
         | `timeout_handling` | swept in Figs. 15–18; `ls` for LS-SCTP elsewhere | §4.3 |\n\
         | `window_cover` | on for LS-SCTP (always), off for CMT (default) | braid's rule: new data and retransmissions keep off a path the peer's window cannot cover at its RTT (Eq. (1) applied to path choice); the paper uses Eq. (1) only to size the buffer |\n\
         | `rtx_policy` | `ssthresh` (braid's default) | §4.3 retransmits on a different path; RTX-SSTHRESH does unless the path a chunk was lost on keeps the larger ssthresh (ties go elsewhere) |\n\
         | `path_loss_threshold` | unset | the paper's \"reasonable default\" is not given; no figure needs it |\n\
         | `start_jitter` | 1 s (Figs. 12, 13), 100 ms (time-series figures) | seeds vary the start |\n\
         | Fig. 12 `buffer` | 93.75 kB (Eq. (1) for 5 paths) at every n, and 375 kB | the sweep cannot vary buffer with n |\n\
         | Fig. 19 `down` | 5–50 s | the text says \"40 s, after 5 s\" but also inactive at 33 s and recovery at t = 50 s; the stated times kept |\n\
         | Fig. 19 `path_max_retrans` | 5 (stated) and 4 | the paper's t = 33 s is its fifth timeout; RFC 9260 §8.2 marks at the sixth |\n\n",
    );
    let mut citations = Citations::new(LS_DEPARTURES);
    md.push_str("## The paper's numbers\n\n| figure | what | metric | paper | braid | verdict |\n|---|---|---|---|---|---|\n");
    for c in &checks {
        let verdict = c.verdict();
        let why = why(&mut citations, &c.id, verdict);
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} | {} | **{}**{} |",
            c.figure,
            c.what,
            c.metric,
            c.paper.show(),
            show(&c.braid),
            verdict.word(),
            why
        );
    }
    md.push_str(
        "\n## The paper's claims\n\n| figure | claim | braid | verdict |\n|---|---|---|---|\n",
    );
    for c in &claims {
        let verdict = c.verdict();
        let why = why(&mut citations, &c.id, verdict);
        let _ = writeln!(
            md,
            "| {} | {} | {} | **{}**{} |",
            c.figure,
            c.statement,
            c.values,
            verdict.word(),
            why
        );
    }
    md.push_str(&citations.section());
    // Fig. 12 table.
    md.push_str("\n## Fig. 12: throughput by number of paths (Mbit/s)\n\n| paths | buffer 93.75 kB (Eq. (1)) | buffer 375 kB | n × path rate |\n|---|---|---|---|\n");
    for n in 1..=5u32 {
        let ns = n.to_string();
        let _ = writeln!(
            md,
            "| {n} | {} | {} | {:.3} |",
            show(&r.get("fig12", &[(BUF, FIG12_EQ1), (PATHS, &ns)], "goodput_mbps")),
            show(&r.get("fig12", &[(BUF, FIG12_LARGE), (PATHS, &ns)], "goodput_mbps")),
            f64::from(n) * rate
        );
    }
    // LS vs CMT, Fig. 13.
    if r.summary("fig13").is_some() {
        md.push_str("\n## braid's comparison: LS-SCTP vs CMT-SCTP vs SCTP under loss (Fig. 13 setup, Mbit/s)\n\n| loss on p1 | SCTP | LS-SCTP | CMT-SCTP | LS / CMT |\n|---|---|---|---|---|\n");
        for l in ls::fig13_losses(r) {
            let g = |m: &str| r.get("fig13", &[(LOSS, &l), (MODE, m)], "goodput_mbps");
            let ratio = match (g("ls"), g("cmt")) {
                (Some(a), Some(b)) => format!("{:.2}", a.mean / b.mean),
                _ => "–".into(),
            };
            let _ = writeln!(
                md,
                "| {l} | {} | {} | {} | {ratio} |",
                show(&g("off")),
                show(&g("ls")),
                show(&g("cmt"))
            );
        }
    }
    // LS vs CMT, Figs. 15–18.
    md.push_str("\n## braid's comparison: timeout handling, p1 down 5–15 s (Figs. 15–18 setup)\n\n| variant | time without delivery 5–30 s (s) | longest interruption 5–15 s (s) | delivered 5–20 s (Mbit/s) | delivered 22–30 s (Mbit/s) | resumes after 15 s at (s) |\n|---|---|---|---|---|---|\n");
    for (m, h, name) in FIG15_VARIANTS {
        let at = [(MODE, m), (HANDLING, h)];
        let _ = writeln!(
            md,
            "| {name} | {} | {} | {} | {} | {} |",
            mean_of(s, r, "fig15", &at, ls::fig15_stall),
            mean_of(s, r, "fig15", &at, ls::fig15_interruption),
            mean_of(s, r, "fig15", &at, |x| x.mbps(5.0, 20.0)),
            mean_of(s, r, "fig15", &at, |x| x.mbps(22.0, 30.0)),
            mean_of(s, r, "fig15", &at, ls::fig15_resume),
        );
    }
    md.push_str("\n## Figs. 19–20: when p1 leaves and rejoins\n\n| Path.Max.Retrans | p1 inactive at (s), per seed | p1 carries data again at (s), per seed |\n|---|---|---|\n");
    for pmr in ["5", "4"] {
        let _ = writeln!(
            md,
            "| {pmr} | {} | {} |",
            per_seed(s, r, "fig19", &[(PMR, pmr)], |x| {
                x.state_at_or_after("p1", "inactive", ls::FIG19_DOWN.0)
            }),
            per_seed(s, r, "fig19", &[(PMR, pmr)], |x| {
                x.in_use_after("p1", ls::FIG19_DOWN.1)
            }),
        );
    }
    md.push_str("\n## Plots\n\n");
    for p in plots {
        let _ = writeln!(md, "![{p}]({p})");
    }
    md
}

/// Draws the plots into `opts.out` and writes `opts.out/report.md`.
pub(super) fn write(
    r: &Results,
    s: &LsSeries,
    opts: &ReproduceOptions,
) -> Result<(), ReproduceError> {
    let mut plots = Vec::new();
    for (name, panels) in charts(r, s) {
        plot::render_panels(&panels, &opts.out.join(&name))?;
        plots.push(name);
    }
    let md = ls_report(r, s, opts, &plots);
    let path = opts.out.join("report.md");
    std::fs::write(&path, md).map_err(|source| ReproduceError::Io { path, source })
}
