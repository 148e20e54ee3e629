//! The report of `braid reproduce ls-sctp`: the method, the assumptions, every number and
//! claim of Abd El Al et al. §5 with its verdict, braid's LS-SCTP vs CMT-SCTP comparison, and the
//! plots.

use std::fmt::Write as _;

use super::ls::{
    self, BUF, FIG12_EQ1, FIG12_LARGE, HANDLING, LOSS, LS_ASSUMPTIONS, LS_DEPARTURES, LS_SCTP,
    LsSeries, MODE, PATHS, PMR, RunSeries, VARIANT, VARIANTS, path_payload_mbps,
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

/// The value figure file `id` gives `key` (its base value where a sweep also varies it),
/// "(default)" if it leaves it unset.
fn file_value(id: &str, key: &str) -> String {
    let Some(doc) = (LS_SCTP.iter())
        .find(|f| f.id == id)
        .and_then(|f| f.text.parse::<toml_edit::DocumentMut>().ok())
    else {
        return "?".into();
    };
    match crate::sweep::get(doc.as_item(), key).and_then(|i| i.as_value()) {
        Some(v) => v
            .as_str()
            .map_or_else(|| v.to_string().trim().to_string(), str::to_string),
        None => match key.rsplit('.').next() {
            // braid's defaults, as `scenarios/README.md` documents them.
            Some("ls_window_share") => "true (default)".into(),
            Some("rtx_policy") => "ssthresh (default)".into(),
            Some("path_assignment") => "cwnd-rtt (default under ls)".into(),
            _ => "(default)".into(),
        },
    }
}

/// `key`'s value in every figure file: one value if they agree, else each with its files.
fn file_values(key: &str) -> String {
    let mut groups: Vec<(String, Vec<&str>)> = Vec::new();
    for f in &LS_SCTP {
        let v = file_value(f.id, key);
        match groups.iter_mut().find(|(x, _)| *x == v) {
            Some((_, ids)) => ids.push(f.id),
            None => groups.push((v, vec![f.id])),
        }
    }
    if groups.len() == 1 {
        return format!("`{}`", groups[0].0);
    }
    (groups.iter())
        .map(|(v, ids)| format!("`{v}` ({})", ids.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The keys the figure files set where the paper is silent (or where braid's default differs
/// from the paper), with why.
const ASSUMPTIONS: [(&str, &str); 20] = [
    (
        "path.p1.queue",
        "drop-tail queue of every path, packets: the paper gives none; about one bandwidth-delay product (sensitivity below)",
    ),
    (
        "association.buffer",
        "Eq. (1) evaluated with the nominal RTT = 100 ms (§5) for RTT_max, which the paper defines as the maximum RTT (§4.3) but does not give; sizes the sender's and the receiver's buffer (§5); Fig. 12 uses the 5-path value at every n and also runs 375 kB (sensitivity below)",
    ),
    (
        "association.ls_window_share",
        "braid's own rule, not the paper's: under cwnd/RTT path assignment a path holds at most its bandwidth share of the peer's window (sensitivity below)",
    ),
    (
        "association.dupthresh",
        "stated: §4 (the Fig. 5 example), four SACKs reporting a TSN mark it lost (RFC 9260: 3; sensitivity below)",
    ),
    (
        "association.max_gap_blocks",
        "pinned to the SACK size the report was first made with (braid's default 1024 fills the MTU; sensitivity below)",
    ),
    (
        "association.loss_detection",
        "three/four miss indications only, as the 2004 SCTP (braid's default adds RACK-TLP)",
    ),
    (
        "association.cc",
        "RFC 2960 Reno per path (§4: congestion control per RFC 2960)",
    ),
    (
        "association.rto_initial",
        "RFC 2960 (RTO.Initial 3 s), the SCTP of the paper's OPNET model",
    ),
    ("association.rto_min", "RFC 2960"),
    ("association.rto_max", "RFC 2960"),
    ("association.sack_delay", "RFC 2960"),
    ("association.sack_freq", "RFC 2960"),
    ("association.max_burst", "RFC 2960"),
    (
        "association.hb_interval",
        "RFC 2960's 30 s; 1 s in Figs. 19–20 (stated, §5.5)",
    ),
    (
        "association.path_max_retrans",
        "stated (§5.4); Fig. 19 also runs 4 (the paper's t = 33 s is its fifth timeout)",
    ),
    ("association.pf", "RFC 2960 has no potentially-failed state"),
    ("association.nr_sack", "2004 SCTP"),
    (
        "association.rtx_policy",
        "braid's default RTX-SSTHRESH: §4.3 retransmits on a different path; RTX-SSTHRESH does unless the original path keeps the larger ssthresh",
    ),
    (
        "association.path_assignment",
        "braid's default under `ls`: cwnd/RTT (§4.3)",
    ),
    ("start_jitter", "seeds vary the start"),
];

fn assumptions_table(md: &mut String) {
    md.push_str(
        "## Assumptions (where the paper is silent), all scenario keys\n\n\
         The values as the figure files give them (read from the files); the first five are \
         varied one at a time under \"Sensitivity\" below.\n\n\
         | key | value in the figure files | why |\n|---|---|---|\n",
    );
    for (key, why) in ASSUMPTIONS {
        let shown = if key == "path.p1.queue" {
            "`[[path]] queue`".to_string()
        } else {
            format!("`{}`", key.rsplit('.').next().unwrap_or(key))
        };
        let _ = writeln!(md, "| {shown} | {} | {why} |", file_values(key));
    }
    let queue: u32 = file_value("fig14", "path.p1.queue").parse().unwrap_or(0);
    let _ = writeln!(
        md,
        "| `window_cover` | always on under LS-SCTP (no key for LS-SCTP: protocol code) | \
         braid's rule: new data and retransmissions keep off a path the peer's window cannot \
         cover at its RTT; not varied here |\n\
         | `timeout_handling` | swept in Figs. 15–18; `ls` elsewhere (default under `ls`) | §4.3 |\n\
         | `path_loss_threshold` | unset | the paper's \"reasonable default\" is not given |\n\
         | Fig. 19 `down` | 5–50 s | the text says \"40 s, after 5 s\" but also recovery at t = 50 s |\n\n\
         The maximum RTT behind the `eq1-max-rtt` variant is derived, not fitted: the nominal \
         100 ms plus a full {queue}-packet queue of {:.0}-byte packets at 1.5 Mbit/s \
         ({:.2} ms), so Eq. (1) gives {:.2} kB for two paths and {:.2} kB for five.\n",
        ls::PACKET_BYTES,
        f64::from(queue) * ls::PACKET_BYTES * 8.0 / 1.5e3,
        ls::eq1_max_rtt_bytes(2, queue) / 1000.0,
        ls::eq1_max_rtt_bytes(5, queue) / 1000.0,
    );
}

/// A row of the Fig. 12 limits table: label, figure file, point, paths.
type LimitsRow = (String, &'static str, Vec<(&'static str, String)>, u32);

/// A sensitivity row's cells: id, value, whether it holds.
type Cells = Vec<(String, String, bool)>;

/// What held Fig. 12's paths: SRTT and link utilization ranges, queue drops, and the share of
/// the time new data waited for the send buffer, the congestion window or the peer's window
/// (the run's `limited_*` metrics), at every point of the figure file and at five paths under
/// each assumption variant.
fn fig12_limits_section(md: &mut String, r: &Results) {
    if r.summary("fig12").is_none() {
        return;
    }
    md.push_str(
        "\n## Fig. 12: what limits the paths (the runs' metrics)\n\n\
         Per setting and number of paths: the paths' smoothed RTTs and forward-link \
         utilization (min–max of the paths' means), their queue drops (sum), and the share \
         of the time new data on a path waited for the sender's buffer, the congestion window \
         or the peer's window (mean), over the paths that carried data. The sender holds a \
         chunk in its buffer until it is cumulatively acknowledged.\n\n\
         | setting | paths | Mbit/s | SRTT (ms) | utilization | queue drops | send buffer | cwnd | peer window |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    let mut rows: Vec<LimitsRow> = Vec::new();
    for buf in [FIG12_EQ1, FIG12_LARGE] {
        for n in 1..=5u32 {
            let at = vec![(BUF, buf.to_string()), (PATHS, n.to_string())];
            rows.push((format!("buffer {buf}"), "fig12", at, n));
        }
    }
    if r.summary("fig12-assumptions").is_some() {
        for (v, _) in VARIANTS {
            let at = vec![(VARIANT, v.to_string()), (PATHS, "5".to_string())];
            rows.push((format!("`{v}`"), "fig12-assumptions", at, 5));
        }
    }
    for (label, id, at, n) in rows {
        let at: Vec<(&str, &str)> = at.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let m = |k: &str| r.mean(id, &at, k);
        // The paths that carried data (`max_paths` picks which of the five).
        let used: Vec<u32> = (1..=5u32)
            .filter(|i| m(&format!("path_p{i}_goodput_mbps")) > 0.01)
            .collect();
        let per = |what: &str| -> Vec<f64> {
            used.iter()
                .map(|i| m(&format!("path_p{i}_{what}")))
                .collect()
        };
        let avg = |v: Vec<f64>| v.iter().sum::<f64>() / v.len() as f64;
        let range = |v: Vec<f64>, d: usize| {
            let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            format!("{lo:.d$}–{hi:.d$}")
        };
        let _ = writeln!(
            md,
            "| {label} | {n} | {:.3} | {} | {} | {:.0} | {:.0} % | {:.0} % | {:.0} % |",
            m("goodput_mbps"),
            range(per("srtt_ms"), 0),
            range(per("utilization"), 2),
            per("drops_queue").iter().sum::<f64>(),
            100.0 * avg(per("limited_send_buffer")),
            100.0 * avg(per("limited_cwnd")),
            100.0 * avg(per("limited_peer_window")),
        );
    }
}

/// Fig. 14: where the gap to the available rate comes from in braid, against the paper's
/// attribution (§5.3: protocol overhead).
fn fig14_gap_section(md: &mut String, r: &Results, s: &LsSeries) {
    let runs = s.of(r, "fig14", &[]);
    if runs.is_empty() {
        return;
    }
    let avg = |on: bool| {
        let w: Vec<ls::Fig14Window> = runs.iter().map(|x| ls::fig14_window(x, on)).collect();
        let n = w.len() as f64;
        let f = |g: fn(&ls::Fig14Window) -> f64| w.iter().map(g).sum::<f64>() / n;
        (
            f(|x| x.flight_kb),
            f(|x| x.cwnd_kb),
            [f(|x| x.path_flight_kb[0]), f(|x| x.path_flight_kb[1])],
            [f(|x| x.path_srtt_ms[0]), f(|x| x.path_srtt_ms[1])],
        )
    };
    let buffer = file_value("fig14", "association.buffer");
    let lim = |p: &str, k: &str| 100.0 * r.mean("fig14", &[], &format!("path_{p}_limited_{k}"));
    let overhead = 100.0 * (1.0 - ls::MESSAGE_BYTES / ls::PACKET_BYTES);
    let _ = writeln!(
        md,
        "\n## Fig. 14: where the gap to the available bandwidth comes from\n\n\
         The paper attributes the gap between its throughput and the available bandwidth \
         \"mostly\" to \"the overhead from various protocol levels\" (§5.3). braid's \
         measurement disagrees for braid's gap: the available payload rate it compares with \
         already leaves out the headers of every packet ({overhead:.1} % of it), and what holds \
         the rest is the Eq. (1) buffer ({buffer}, evaluated with the nominal 100 ms RTT). Over \
         the whole run new data waited for the sender's buffer {:.0} % (p1) and {:.0} % (p2) \
         of the time, for the congestion window {:.0} % and {:.0} %. In the halves' samples \
         (leaving out each half's first 4 s, mean over n={} seeds):\n\n\
         | background | flight p1 + p2 (kB) | cwnd p1 + p2 (kB) | flight p1 / p2 (kB) | SRTT p1 / p2 (ms) |\n\
         |---|---|---|---|---|",
        lim("p1", "send_buffer"),
        lim("p2", "send_buffer"),
        lim("p1", "cwnd"),
        lim("p2", "cwnd"),
        runs.len(),
    );
    for (label, on) in [("on", true), ("off", false)] {
        let (fl, cw, pf, ps) = avg(on);
        let _ = writeln!(
            md,
            "| {label} | {fl:.1} | {cw:.1} | {:.1} / {:.1} | {:.0} / {:.0} |",
            pf[0], pf[1], ps[0], ps[1]
        );
    }
    if let Some((vr, vs)) =
        ls::assumption_variant(r, s, "fig14-assumptions", "fig14", "eq1-max-rtt")
    {
        let claims = ls::fig14_claims(vs.of(&vr, "fig14", &[]));
        let holds = claims
            .iter()
            .filter(|c| c.verdict() == Verdict::Holds)
            .count();
        let _ = writeln!(
            md,
            "\nWith Eq. (1) evaluated at the maximum RTT ({}, `ls-fig14-assumptions.toml`, n={} \
             seeds) the same setup gives {}; {holds} of {} Fig. 14 claims hold.",
            file_variant_value("fig14-assumptions", "eq1-max-rtt", "association.buffer"),
            vs.of(&vr, "fig14", &[]).len(),
            claims
                .iter()
                .map(|c| format!("{} ({})", c.values, c.id))
                .collect::<Vec<_>>()
                .join(", "),
            claims.len()
        );
    }
}

/// The value variant `variant` of assumption file `id` gives `key`.
fn file_variant_value(id: &str, variant: &str, key: &str) -> String {
    let Some(doc) = (LS_ASSUMPTIONS.iter())
        .find(|f| f.id == id)
        .and_then(|f| f.text.parse::<toml::Table>().ok())
    else {
        return "?".into();
    };
    let found = (doc.get("sweep"))
        .and_then(|s| s.get("variant"))
        .and_then(|v| v.as_array())
        .and_then(|vs| {
            vs.iter()
                .find(|v| v.get("name").and_then(|n| n.as_str()) == Some(variant))
        })
        .and_then(|v| v.get(key))
        .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_string));
    found.unwrap_or_else(|| "?".into())
}

/// "Sensitivity": each assumption varied one at a time on each figure's setup, with the
/// numbers and claims of that figure and how many hold.
fn sensitivity_section(md: &mut String, r: &Results, s: &LsSeries) {
    if LS_ASSUMPTIONS.iter().all(|f| r.summary(f.id).is_none()) {
        return;
    }
    md.push_str(
        "\n## Sensitivity: each assumption varied one at a time\n\n\
         Each figure's setup with one key changed, the rest as the figure file \
         (`scenarios/papers/ls-fig*-assumptions.toml`, fewer seeds than the figures: the \
         n of each row). Each cell is the paper's number or claim under that variant, ✓ where \
         it holds, ✗ where it departs; the last column counts those that hold.\n",
    );
    for (v, what) in VARIANTS {
        let _ = writeln!(md, "* `{v}`: {what}");
    }
    // Per variant, the verdicts that differ from `used`'s (figure, id, the variant's verdict).
    let mut moved: Vec<(&str, Vec<String>)> =
        VARIANTS.iter().map(|(v, _)| (*v, Vec::new())).collect();
    let mut note = |v: &str, id: &str, ok: bool, used_ok: Option<bool>| {
        if let (Some(u), Some(e)) = (used_ok, moved.iter_mut().find(|(x, _)| *x == v))
            && u != ok
        {
            e.1.push(format!("`{id}` {}", if ok { "holds" } else { "departs" }));
        }
    };
    // Fig. 12 at four and five paths.
    if r.summary("fig12-assumptions").is_some() {
        md.push_str(
            "\n### Fig. 12 (four and five paths, Mbit/s)\n\n\
             | variant | buffer | 4 paths | 5 paths | holds |\n|---|---|---|---|---|\n",
        );
        let mut used_ok = [None, None];
        for (v, _) in VARIANTS {
            let mut row = String::new();
            let mut holds = 0;
            let mut n = 0;
            let mut seeds = 0;
            for paths in [4u32, 5] {
                let ps = paths.to_string();
                let at = [(VARIANT, v), (PATHS, ps.as_str())];
                let got = r.get("fig12-assumptions", &at, "goodput_mbps");
                seeds = got.map_or(0, |x| x.n);
                let c = ls::fig12_claim(String::new(), paths, "", got.map_or(f64::NAN, |x| x.mean));
                let ok = c.verdict() == Verdict::Holds;
                if v == "used" {
                    used_ok[n] = Some(ok);
                }
                note(v, &format!("fig12/{paths}-paths"), ok, used_ok[n]);
                holds += usize::from(ok);
                n += 1;
                let _ = write!(row, " {} {} |", show(&got), mark(ok));
            }
            let buf = match file_variant_value("fig12-assumptions", v, "association.buffer") {
                b if b == "?" => file_value("fig12", "association.buffer"),
                b => b,
            };
            let _ = writeln!(md, "| `{v}` | {buf} |{row} {holds} of {n} (n={seeds}) |");
        }
    }
    for (from, as_id, title) in [
        ("fig13-assumptions", "fig13", "Fig. 13 (three loss rates)"),
        ("fig14-assumptions", "fig14", "Fig. 14"),
        ("fig15-assumptions", "fig15", "Figs. 15–18"),
        (
            "fig19-assumptions",
            "fig19",
            "Figs. 19–20 (Path.Max.Retrans 5)",
        ),
    ] {
        if r.summary(from).is_none() {
            continue;
        }
        let items = |v: &str| -> Option<(Cells, usize)> {
            let (vr, vs) = ls::assumption_variant(r, s, from, as_id, v)?;
            let seeds = vr.summary(as_id).map_or(0, |x| x.seeds as usize);
            let mut out: Vec<(String, String, bool)> = Vec::new();
            for c in ls::ls_checks(&vr, &vs) {
                if c.verdict() != Verdict::NotRun {
                    out.push((c.id.clone(), show(&c.braid), c.verdict() == Verdict::Holds));
                }
            }
            for c in ls::ls_claims(&vr, &vs) {
                if c.verdict() != Verdict::NotRun {
                    out.push((
                        c.id.clone(),
                        c.values.clone(),
                        c.verdict() == Verdict::Holds,
                    ));
                }
            }
            Some((out, seeds))
        };
        let Some((used, _)) = items("used") else {
            continue;
        };
        let _ = writeln!(md, "\n### {title}\n");
        let mut header = String::from("| variant |");
        let mut sep = String::from("|---|");
        for (id, _, _) in &used {
            let _ = write!(header, " `{id}` |");
            sep.push_str("---|");
        }
        let _ = writeln!(md, "{header} holds |\n{sep}---|");
        for (v, _) in VARIANTS {
            let Some((its, seeds)) = items(v) else {
                continue;
            };
            let mut row = format!("| `{v}` |");
            for (id, val, ok) in &its {
                let _ = write!(row, " {val} {} |", mark(*ok));
                let used_ok = used.iter().find(|u| u.0 == *id).map(|u| u.2);
                note(v, id, *ok, used_ok);
            }
            let holds = its.iter().filter(|x| x.2).count();
            let _ = writeln!(md, "{row} {holds} of {} (n={seeds}) |", its.len());
        }
    }
    let _ = writeln!(
        md,
        "\nVerdicts that move against `used` (from the tables above):\n"
    );
    for (v, ids) in &moved[1..] {
        let what = if ids.is_empty() {
            "none".to_string()
        } else {
            ids.join(", ")
        };
        let _ = writeln!(md, "* `{v}`: {what}");
    }
}

fn mark(holds: bool) -> &'static str {
    if holds { "✓" } else { "✗" }
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
            .chain(&LS_ASSUMPTIONS)
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
         claims are computed from braid's means and can fail: \
         \"LS-SCTP above SCTP\" (Fig. 13, Figs. 16/18) needs the means more than both 95 % \
         CIs apart and a margin (Fig. 13: {:.0} % above, as LS-SCTP adds a loss-free second \
         path; Figs. 16/18: half a path's rate), braid's choice where the paper gives none.\n",
        (ls::FIG13_MARGIN - 1.0) * 100.0
    );
    assumptions_table(&mut md);
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
    fig12_limits_section(&mut md, r);
    fig14_gap_section(&mut md, r, s);
    sensitivity_section(&mut md, r, s);
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
