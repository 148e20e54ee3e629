//! `braid sim plot`: a metric of summary.json against a swept parameter, mean with 95 %
//! confidence bars, optionally one curve per value of a second parameter.
//!
//! X values are read with their units ("16KiB" → 16384 bytes, "50ms" → 0.05 s, "10Mbit/s"),
//! ordered by value and shown in a unit that suits their range, named in the axis label
//! ("association.send_buffer (KiB)"). Values that are not quantities (names) are placed in
//! sweep order as categories. The y label is the metric's name with the unit its name implies
//! (`_mbps` → Mbit/s, `_ms` → ms, ...).
//!
//! Output: PNG or SVG by the file's extension, drawn with `plotters` without any system font:
//! text is DejaVu Sans, embedded by the `dejavu` crate and rasterised by `ab_glyph`, so plots
//! come out the same on every machine.
//!
//! [`timeseries`] plots one run's time series (`DIR/timeseries/point{P}-seed{S}.csv`)
//! against time instead, drawn by the same code; [`sequence`] one run's time-sequence
//! record (`DIR/sequence/point{P}-seed{S}.csv`), TSNs as markers against time.

pub mod sequence;
pub mod timeseries;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::runner::SummaryFile;
use crate::sweep::display_value;
use crate::units::{parse_duration, parse_rate, parse_size};

/// What to plot.
#[derive(Debug, Clone, Default)]
pub struct PlotSpec {
    /// The swept parameter on the x axis.
    pub x: String,
    /// The metric on the y axis.
    pub y: String,
    /// Swept parameters with one curve per combination of their values (`variant` for
    /// the named variants of `[[sweep.variant]]`); empty: one curve.
    pub curves: Vec<String>,
    /// Other swept parameters held at one value (`key`, `value` as in the file).
    pub fix: Vec<(String, String)>,
    /// Title; default: the scenario's name.
    pub title: Option<String>,
    /// A logarithmic x axis (x values must be positive quantities).
    pub log_x: bool,
    /// A logarithmic y axis (means must be positive).
    pub log_y: bool,
}

/// Why a plot cannot be drawn.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// summary.json cannot be read.
    #[error("{}: {message}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
    /// The request does not fit the data.
    #[error("{0}")]
    Spec(String),
    /// Drawing or writing the image failed.
    #[error("drawing {}: {message}", path.display())]
    Draw {
        /// The image file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// The kind of quantity a swept value is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A plain number.
    Number,
    /// A rate, in bit/s.
    Rate,
    /// A size, in bytes.
    Size,
    /// A duration, in seconds.
    Duration,
}

/// A swept value as a number in base units (bit/s, bytes, seconds), if it is a quantity.
pub fn quantity(v: &toml::Value) -> Option<(Kind, f64)> {
    match v {
        toml::Value::Integer(i) => Some((Kind::Number, *i as f64)),
        toml::Value::Float(f) => Some((Kind::Number, *f)),
        toml::Value::String(s) => {
            if let Ok(x) = s.trim().parse::<f64>() {
                Some((Kind::Number, x))
            } else if let Ok(r) = parse_rate(s) {
                Some((Kind::Rate, r.0))
            } else if let Ok(d) = parse_duration(s) {
                Some((Kind::Duration, d.0.as_secs_f64()))
            } else if let Ok(b) = parse_size(s) {
                Some((Kind::Size, b.0 as f64))
            } else {
                None
            }
        }
        _ => None,
    }
}

/// How x values are placed and labelled.
#[derive(Debug, Clone, PartialEq)]
pub enum XAxis {
    /// Numbers, shown divided by `scale` in `unit`.
    Numeric {
        /// The values' kind.
        kind: Kind,
        /// Base units per shown unit.
        scale: f64,
        /// The shown unit ("" for plain numbers).
        unit: String,
    },
    /// Categories at 0, 1, 2, ... with these labels.
    Categories(Vec<String>),
}

/// One mean with its confidence bar.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChartPoint {
    /// X in shown units (or the category's position).
    pub x: f64,
    /// Mean.
    pub mean: f64,
    /// Confidence half-width (NaN: no bar).
    pub ci95: f64,
    /// Runs behind the mean.
    pub n: usize,
}

/// One curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Legend text (`key = value`), if there are curves.
    pub label: Option<String>,
    /// The points, by x.
    pub points: Vec<ChartPoint>,
}

/// Everything needed to draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Chart {
    /// Title.
    pub title: String,
    /// X axis label, with unit.
    pub x_label: String,
    /// Y axis label, with unit.
    pub y_label: String,
    /// X placement.
    pub x_axis: XAxis,
    /// The curves.
    pub series: Vec<Series>,
    /// Draw every point as a marker and join none (a time-sequence plot of packets);
    /// otherwise curves with a marker on some points.
    pub scatter: bool,
    /// The x range to show (numeric axes), so that panels one above the other line up;
    /// `None`: the data's, padded.
    pub x_range: Option<(f64, f64)>,
    /// Logarithmic x axis.
    pub log_x: bool,
    /// Logarithmic y axis.
    pub log_y: bool,
}

/// Reads `dir/summary.json`, draws the plot into `out` (.png or .svg) and returns what was
/// drawn.
pub fn plot(dir: &Path, spec: &PlotSpec, out: &Path) -> Result<Chart, PlotError> {
    let path = dir.join("summary.json");
    let read_err = |message: String| PlotError::Read {
        path: path.clone(),
        message,
    };
    let text = std::fs::read_to_string(&path).map_err(|e| read_err(e.to_string()))?;
    let summary: SummaryFile = serde_json::from_str(&text).map_err(|e| read_err(e.to_string()))?;
    let chart = prepare(&summary, spec)?;
    render(&chart, out)?;
    Ok(chart)
}

/// Selects and arranges the data of `spec`.
pub fn prepare(summary: &SummaryFile, spec: &PlotSpec) -> Result<Chart, PlotError> {
    let err = |m: String| Err(PlotError::Spec(m));
    let swept = summary.sweep.join(", ");
    if !summary.sweep.contains(&spec.x) {
        return err(if summary.sweep.is_empty() {
            format!("{:?} is not swept: this experiment has no sweep", spec.x)
        } else {
            format!("{:?} is not swept (swept: {swept})", spec.x)
        });
    }
    for (i, c) in spec.curves.iter().enumerate() {
        if !summary.sweep.contains(c) {
            return err(format!("{c:?} is not swept (swept: {swept})"));
        }
        if *c == spec.x {
            return err("--curves must differ from --x".into());
        }
        if spec.curves[..i].contains(c) {
            return err(format!("--curves names {c:?} twice"));
        }
    }
    for (k, _) in &spec.fix {
        if !summary.sweep.contains(k) {
            return err(format!("{k:?} is not swept (swept: {swept})"));
        }
    }
    // Points matching --fix.
    let selected: Vec<_> = summary
        .points
        .iter()
        .filter(|p| {
            spec.fix.iter().all(|(k, want)| {
                p.params.get(k).is_some_and(|v| {
                    display_value(v) == *want
                        || quantity(v)
                            .zip(quantity(&toml::Value::String(want.clone())))
                            .is_some_and(|((ka, a), (kb, b))| ka == kb && a == b)
                })
            })
        })
        .collect();
    if selected.is_empty() {
        return err("no point matches the --fix values".into());
    }
    // Every other swept parameter must be constant.
    for k in &summary.sweep {
        if *k == spec.x || spec.curves.contains(k) || spec.fix.iter().any(|(f, _)| f == k) {
            continue;
        }
        let mut values: Vec<String> = Vec::new();
        for p in &selected {
            let v = p.params.get(k).map(display_value).unwrap_or_default();
            if !values.contains(&v) {
                values.push(v);
            }
        }
        if values.len() > 1 {
            return err(format!(
                "{k:?} also varies ({}): draw one curve per value with --curves {k}, or hold it with --fix {k}=VALUE",
                values.join(", ")
            ));
        }
    }
    if !selected.iter().any(|p| p.metrics.contains_key(&spec.y)) {
        let mut names: Vec<&str> = summary
            .points
            .iter()
            .flat_map(|p| p.metrics.keys().map(String::as_str))
            .collect();
        names.sort_unstable();
        names.dedup();
        return err(format!(
            "no metric {:?} (metrics: {})",
            spec.y,
            names.join(", ")
        ));
    }

    // X placement.
    let mut xs_text: Vec<&toml::Value> = Vec::new();
    for p in &selected {
        if let Some(v) = p.params.get(&spec.x)
            && !xs_text.contains(&v)
        {
            xs_text.push(v);
        }
    }
    let quantities: Option<Vec<(Kind, f64)>> = xs_text.iter().map(|v| quantity(v)).collect();
    let x_axis = match quantities {
        Some(q) if q.windows(2).all(|w| w[0].0 == w[1].0) && !q.is_empty() => {
            let kind = q[0].0;
            let max = q.iter().map(|(_, x)| x.abs()).fold(0.0, f64::max);
            let binary = xs_text
                .iter()
                .any(|v| v.as_str().is_some_and(|s| s.contains("iB")));
            let (scale, unit) = display_unit(kind, max, binary);
            XAxis::Numeric {
                kind,
                scale,
                unit: unit.to_string(),
            }
        }
        _ => XAxis::Categories(xs_text.iter().map(|v| display_value(v)).collect()),
    };
    let x_of = |v: &toml::Value| -> Option<f64> {
        match &x_axis {
            XAxis::Numeric { scale, .. } => quantity(v).map(|(_, x)| x / scale),
            XAxis::Categories(labels) => {
                let s = display_value(v);
                labels.iter().position(|l| *l == s).map(|i| i as f64)
            }
        }
    };

    if spec.log_x {
        match &x_axis {
            XAxis::Categories(_) => {
                return err(format!(
                    "--log-x needs quantities on the x axis; the values of {} are names",
                    words(&spec.x)
                ));
            }
            XAxis::Numeric { .. } => {
                if let Some(v) = xs_text.iter().find(|v| x_of(v).is_none_or(|x| x <= 0.0)) {
                    return err(format!(
                        "--log-x needs positive x values; {} is {}",
                        words(&spec.x),
                        display_value(v)
                    ));
                }
            }
        }
    }

    // Curves, one per combination of the --curves values, in order of first appearance.
    let curve_of = |p: &crate::runner::PointSummary| -> Vec<Option<toml::Value>> {
        spec.curves
            .iter()
            .map(|k| p.params.get(k).cloned())
            .collect()
    };
    let mut curve_values: Vec<Vec<Option<toml::Value>>> = Vec::new();
    for p in &selected {
        let c = curve_of(p);
        if !curve_values.contains(&c) {
            curve_values.push(c);
        }
    }
    let mut series = Vec::new();
    for c in curve_values {
        let mut points: Vec<ChartPoint> = selected
            .iter()
            .filter(|p| curve_of(p) == c)
            .filter_map(|p| {
                let s = p.metrics.get(&spec.y)?;
                let x = x_of(p.params.get(&spec.x)?)?;
                (!s.mean.is_nan()).then_some(ChartPoint {
                    x,
                    mean: s.mean,
                    ci95: s.ci95,
                    n: s.n,
                })
            })
            .collect();
        points.sort_by(|a, b| a.x.total_cmp(&b.x));
        if spec.log_y
            && let Some(bad) = points.iter().find(|p| p.mean <= 0.0)
        {
            return err(format!(
                "--log-y needs positive values; {} is {} at {} = {}",
                words(&spec.y),
                bad.mean,
                words(&spec.x),
                bad.x
            ));
        }
        let labels: Vec<String> = spec
            .curves
            .iter()
            .zip(&c)
            .filter_map(|(k, v)| Some(curve_label(k, &display_value(v.as_ref()?))))
            .collect();
        series.push(Series {
            label: (!labels.is_empty()).then(|| labels.join(", ")),
            points,
        });
    }

    let x_label = match &x_axis {
        XAxis::Numeric { unit, .. } if !unit.is_empty() => format!("{} ({unit})", words(&spec.x)),
        _ => words(&spec.x),
    };
    let y_label = match metric_unit(&spec.y) {
        Some(u) => format!("{} ({u})", words(&spec.y)),
        None => words(&spec.y),
    };
    let mut title = spec
        .title
        .clone()
        .unwrap_or_else(|| summary.scenario.clone());
    if !spec.fix.is_empty() {
        let fixed: Vec<String> = spec.fix.iter().map(|(k, v)| curve_label(k, v)).collect();
        title.push_str(&format!(" [{}]", fixed.join(", ")));
    }
    Ok(Chart {
        title,
        x_label,
        y_label,
        x_axis,
        series,
        scatter: false,
        x_range: None,
        log_x: spec.log_x,
        log_y: spec.log_y,
    })
}

/// The unit to show values of `kind` up to `max` (base units) in: (base units per unit, name).
fn display_unit(kind: Kind, max: f64, binary: bool) -> (f64, &'static str) {
    let pick = |steps: &[(f64, &'static str)]| {
        steps
            .iter()
            .rev()
            .find(|(s, _)| max >= *s)
            .or(steps.first())
            .copied()
            .unwrap_or((1.0, ""))
    };
    match kind {
        Kind::Number => (1.0, ""),
        Kind::Rate => pick(&[
            (1.0, "bit/s"),
            (1e3, "kbit/s"),
            (1e6, "Mbit/s"),
            (1e9, "Gbit/s"),
        ]),
        Kind::Size if binary => pick(&[
            (1.0, "B"),
            (1024.0, "KiB"),
            (1024.0 * 1024.0, "MiB"),
            (1024.0 * 1024.0 * 1024.0, "GiB"),
        ]),
        Kind::Size => pick(&[(1.0, "B"), (1e3, "kB"), (1e6, "MB"), (1e9, "GB")]),
        Kind::Duration => pick(&[(1e-6, "µs"), (1e-3, "ms"), (1.0, "s")]),
    }
}

/// A scenario key or metric in words for an axis or legend (`goodput_mbps` → "Goodput",
/// `path.B.delay` → "δB"); a name it does not know stays as it is.
pub fn words(key: &str) -> String {
    if let Some(w) = LABELS.iter().find(|(k, _)| *k == key).map(|(_, w)| *w) {
        return w.to_string();
    }
    let parts: Vec<&str> = key.split('.').collect();
    match parts.as_slice() {
        ["path", name, "delay"] => format!("δ{name}"),
        ["path", name, "rate"] => format!("ρ{name}"),
        ["path", name, "loss"] => format!("Loss on {name}"),
        ["path", name, "reverse_loss"] => format!("Reverse loss on {name}"),
        ["path", name, "queue"] => format!("Queue of {name}"),
        ["path", name, "queue_bytes"] => format!("Queue of {name}"),
        ["path", name, "mtu"] => format!("MTU of {name}"),
        ["path", name, "reorder_rate"] => format!("Reordering rate on {name}"),
        ["path", name, "hiccup", "rate"] => format!("Reordering rate on {name}"),
        ["path", name, "hiccup", "displacement"] => format!("Reordering displacement on {name}"),
        ["path", name, "spike_release"] => format!("Delay spikes on {name} release"),
        ["bottleneck", "rate"] => "Bottleneck rate".to_string(),
        ["bottleneck", "delay"] => "Bottleneck delay".to_string(),
        ["bottleneck", "queue"] => "Bottleneck queue".to_string(),
        ["bottleneck", "competing_flows"] => "Competing flows".to_string(),
        ["traffic", i, "streams"] => traffic_words("Streams", i),
        ["traffic", i, "message_size"] => traffic_words("Message size", i),
        ["traffic", i, "bytes"] => traffic_words("Transfer size", i),
        ["traffic", i, "rate"] => traffic_words("Sending rate", i),
        ["traffic", i, "unordered"] => traffic_words("Unordered", i),
        ["traffic", i, "sender_queue_info"] => traffic_words("Sender queue info", i),
        ["association", k] => association_words(k).map_or_else(|| key.to_string(), String::from),
        _ => {
            if let Some(n) = key
                .strip_prefix("stream")
                .and_then(|r| r.strip_suffix("_msg_delay_ms_mean"))
            {
                return format!("Message delay, stream {n}");
            }
            key.to_string()
        }
    }
}

/// Labels of keys and metrics that do not follow a pattern.
const LABELS: &[(&str, &str)] = &[
    ("variant", "Variant"),
    ("goodput_mbps", "Goodput"),
    ("competing_goodput_mbps", "Competing flows' goodput"),
    ("msg_delay_ms_mean", "Message delay"),
    ("msg_delay_ms_median", "Median message delay"),
    ("msg_delay_ms_p99", "99th percentile message delay"),
    ("messages_delivered", "Messages delivered"),
    ("transfer_time_s", "Transfer time"),
    ("transfer_duration_s", "Download time"),
    ("highest_tsn_sent", "Highest TSN sent"),
    ("tsns_acked", "TSNs acknowledged"),
    ("spurious_fast_retransmits", "Spurious fast retransmits"),
    ("spurious_timeouts", "Spurious timeouts"),
    ("unnecessary_retransmissions", "Unnecessary retransmissions"),
    ("jain_fairness", "Jain's fairness index"),
    ("bottleneck_utilization", "Bottleneck utilisation"),
    ("send_buffer_bytes_mean", "Send buffer occupancy"),
    ("recv_buffer_bytes_mean", "Receive buffer occupancy"),
    ("traffic.0.sender_queue_info", "Sender queue info"),
    // Columns of a run's time series (run::TIMESERIES_HEADER).
    ("t_s", "time"),
    ("cwnd", "cwnd"),
    ("ssthresh", "ssthresh"),
    ("rto_ms", "RTO"),
    ("flight_size", "flight size"),
    ("srtt_ms", "smoothed RTT"),
    ("cum_tsn", "cumulative TSN ack"),
    ("send_buffered", "send buffer occupancy"),
    ("recv_buffered", "receive buffer occupancy"),
    ("state", "path state"),
    ("retransmissions", "retransmissions"),
    ("fast_retransmissions", "fast retransmissions"),
    ("timeouts", "T3 timeouts"),
];

/// `what` of traffic source `index` (the first source needs no number).
fn traffic_words(what: &str, index: &str) -> String {
    if index == "0" {
        what.to_string()
    } else {
        format!("{what} of traffic source {index}")
    }
}

/// An `[association]` key in words.
fn association_words(key: &str) -> Option<&'static str> {
    Some(match key {
        "buffer" => "σ (send and receive buffer)",
        "send_buffer" => "Send buffer",
        "recv_buffer" => "Receive buffer",
        "stream_scheduler" => "Scheduler",
        "nr_sack" => "NR-SACK",
        "nr_sack_policy" => "NR-SACK policy",
        "cmt" => "CMT",
        "load_sharing" => "Load sharing",
        "path_assignment" => "Path assignment",
        "ls_window_share" => "LS-SCTP window share",
        "dupthresh" => "Fast-retransmit threshold",
        "max_gap_blocks" => "Gap blocks per SACK at most",
        "timeout_handling" => "Timeout handling",
        "cc" => "Congestion control",
        "rtx_policy" => "Retransmission policy",
        "buffer_splitting" => "Buffer splitting",
        "receive_split" => "Receive-side split",
        "sack_path" => "SACK path",
        "sack_delay" | "delayed_ack" => "SACK delay",
        "send_run" => "Send run",
        "max_paths" => "Paths used at most",
        "idata" => "I-DATA",
        "pf" => "Potentially-failed state",
        "spurious_detection" => "Spurious retransmission detection",
        "loss_detection" => "Loss detection",
        "plpmtud" => "PLPMTUD",
        "pacing" => "Pacing",
        "path_mtu" => "Path MTU",
        "rto_min" => "RTO.Min",
        "rto_max" => "RTO.Max",
        "rto_initial" => "RTO.Initial",
        "rto_alpha" => "RTO.Alpha",
        "rto_beta" => "RTO.Beta",
        "max_burst" => "Max.Burst",
        "streams" => "Streams",
        "window_cover" => "Window cover",
        "path_loss_threshold" => "Path loss threshold",
        _ => return None,
    })
}

/// A curve's legend: the swept key in words with its value (`RR`, `δB = 10 ms`; a variant
/// by its name).
fn curve_label(key: &str, value: &str) -> String {
    match (key, value) {
        (crate::load::VARIANT_COLUMN, v) => v.to_string(),
        ("association.stream_scheduler", "rr") => "RR".to_string(),
        ("association.stream_scheduler", "fixed") => "Fixed".to_string(),
        ("association.nr_sack" | "traffic.0.sender_queue_info", v) => {
            format!(
                "{} {}",
                if v == "true" { "with" } else { "without" },
                words(key)
            )
        }
        _ => format!("{} = {value}", words(key)),
    }
}

/// The unit a metric's name implies: a part of the name (split at `_`) that is a unit.
pub fn metric_unit(name: &str) -> Option<&'static str> {
    name.split('_').rev().find_map(|part| {
        Some(match part {
            "mbps" => "Mbit/s",
            "kbps" => "kbit/s",
            "gbps" => "Gbit/s",
            "bps" => "bit/s",
            "ms" => "ms",
            "us" => "µs",
            "s" | "secs" | "seconds" => "s",
            "bytes" => "bytes",
            "packets" | "pkts" => "packets",
            "pct" | "percent" => "%",
            _ => return None,
        })
    })
}

/// Draws `chart` into `out`: PNG (1024×640) or SVG by extension.
pub fn render(chart: &Chart, out: &Path) -> Result<(), PlotError> {
    render_panels(std::slice::from_ref(chart), out)
}

/// Draws `charts` one above the other into `out`, PNG or SVG by extension: one chart exactly
/// as [`render`]; more are 400 pixels high each under the first chart's title, drawn once at
/// the top (the others' titles are not shown).
pub fn render_panels(charts: &[Chart], out: &Path) -> Result<(), PlotError> {
    let draw_err = |message: String| PlotError::Draw {
        path: out.to_path_buf(),
        message,
    };
    register_font().map_err(|m| draw_err(m.to_string()))?;
    let ext = out
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let size = match u32::try_from(charts.len()) {
        Ok(0 | 1) => (1024, 640),
        Ok(n) if n <= 16 => (1024, 48 + 400 * n),
        _ => {
            return Err(PlotError::Spec(format!(
                "{} panels: at most 16 fit one image",
                charts.len()
            )));
        }
    };
    if !matches!(ext.as_deref(), Some("png" | "svg")) {
        return Err(PlotError::Spec(format!(
            "{}: the output must end in .png or .svg",
            out.display()
        )));
    }
    // plotters reports a file it cannot write as a Debug dump: try it first, for words.
    std::fs::File::create(out).map_err(|e| draw_err(format!("cannot write the image: {e}")))?;
    match ext.as_deref() {
        Some("png") => {
            let root = BitMapBackend::new(out, size).into_drawing_area();
            draw_panels(&root, charts).map_err(draw_err)?;
            root.present().map_err(|e| draw_err(e.to_string()))
        }
        Some("svg") => {
            let root = SVGBackend::new(out, size).into_drawing_area();
            draw_panels(&root, charts).map_err(draw_err)?;
            root.present().map_err(|e| draw_err(e.to_string()))
        }
        _ => Err(PlotError::Spec(format!(
            "{}: the output must end in .png or .svg",
            out.display()
        ))),
    }
}

/// Registers the embedded font as plotters' "sans-serif", once.
fn register_font() -> Result<(), &'static str> {
    static REGISTERED: OnceLock<Result<(), &'static str>> = OnceLock::new();
    *REGISTERED.get_or_init(|| {
        plotters::style::register_font("sans-serif", FontStyle::Normal, dejavu::sans::regular())
            .map_err(|_| "the embedded font cannot be read")
    })
}

/// A tick value with an SI prefix (`1.25M`, `400k`).
fn compact(v: f64) -> String {
    let (scale, prefix) = match v.abs() {
        a if a >= 1e9 => (1e9, "G"),
        a if a >= 1e6 => (1e6, "M"),
        a if a >= 1e3 => (1e3, "k"),
        _ => (1.0, ""),
    };
    format!("{}{prefix}", (v / scale * 1000.0).round() / 1000.0)
}

/// The colours of the curves: Okabe and Ito's palette for colour-blind readers, without
/// its yellow (unreadable on white), in an order that keeps neighbours apart.
pub const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(230, 159, 0),   // orange
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(0, 0, 0),       // black
];

/// The colour of curve `i`.
pub fn curve_color(i: usize) -> RGBAColor {
    PALETTE[i % PALETTE.len()].to_rgba()
}

/// Title text size in pixels.
const TITLE_SIZE: u32 = 24;

/// Splits `text` into lines of at most `width` pixels as `fits` measures them, at spaces
/// (a word wider than a line gets a line of its own).
pub fn wrap(text: &str, width: u32, fits: impl Fn(&str) -> u32) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        match lines.last_mut() {
            Some(line) if fits(&format!("{line} {word}")) <= width => {
                line.push(' ');
                line.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines
}

/// Draws `title` at the top of `root`, wrapped to its width, and returns the area below.
fn titled<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
) -> Result<DrawingArea<DB, Shift>, String>
where
    DB::ErrorType: 'static,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    let style = TextStyle::from(("sans-serif", TITLE_SIZE).into_font())
        .pos(Pos::new(HPos::Center, VPos::Top));
    let (width, _) = root.dim_in_pixel();
    let lines = wrap(title, width.saturating_sub(32), |t| {
        root.estimate_text_size(t, &style).map_or(0, |(w, _)| w)
    });
    if lines.is_empty() {
        return Ok(root.clone());
    }
    let line_height = TITLE_SIZE * 5 / 4;
    let height = 8 + line_height * u32::try_from(lines.len()).unwrap_or(1);
    let (top, rest) = root.split_vertically(height);
    let center = i32::try_from(width / 2).unwrap_or(0);
    for (i, line) in lines.iter().enumerate() {
        let y = 6 + i32::try_from(line_height * u32::try_from(i).unwrap_or(0)).unwrap_or(0);
        top.draw(&Text::new(line.as_str(), (center, y), style.clone()))
            .map_err(e)?;
    }
    Ok(rest)
}

/// Where a logarithmic axis from log10 value `lo` to `hi` is labelled: at 1, 2 and 5 times
/// a power of ten, or at powers of ten alone on an axis spanning two decades or more (log10
/// values).
fn log_marks(lo: f64, hi: f64) -> Vec<f64> {
    let mantissas: &[f64] = if hi - lo >= 2.0 {
        &[1.0]
    } else {
        &[1.0, 2.0, 5.0]
    };
    let mut out = Vec::new();
    if !(lo.is_finite() && hi.is_finite()) {
        return out;
    }
    for k in (lo.floor() as i64)..=(hi.ceil() as i64) {
        for m in mantissas {
            let v = k as f64 + m.log10();
            if (lo..=hi).contains(&v) {
                out.push(v);
            }
        }
    }
    out
}

/// The label of the tick at log10 value `v` of a logarithmic axis: the value of the mark it
/// falls on, with an SI prefix, or nothing between marks (plotters places many ticks on the
/// log10 scale; only those on `marks` are named).
fn log_tick(v: f64, marks: &[f64]) -> String {
    let Some(mark) = marks.iter().find(|m| (*m - v).abs() < 0.009) else {
        return String::new();
    };
    let x = 10f64.powf(*mark);
    let (scale, prefix) = match x {
        a if a >= 1e9 => (1e9, "G"),
        a if a >= 1e6 => (1e6, "M"),
        a if a >= 1e3 => (1e3, "k"),
        _ => (1.0, ""),
    };
    // One significant digit: the marks are 1, 2 and 5 times a power of ten.
    let shown = x / scale;
    let p = 10f64.powi(-(shown.log10().floor() as i32));
    format!("{}{prefix}", (shown * p).round() / p)
}

/// One chart with its title, or several one above the other under the first one's title.
fn draw_panels<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    charts: &[Chart],
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    match charts {
        [] => Err("nothing to draw".into()),
        [one] => draw(root, one, true),
        [first, ..] => {
            let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
            root.fill(&WHITE).map_err(e)?;
            let area = titled(root, &first.title)?;
            for (a, c) in area.split_evenly((charts.len(), 1)).iter().zip(charts) {
                draw(a, c, false)?;
            }
            Ok(())
        }
    }
}

/// A point as drawn: on a logarithmic axis, the logarithm of the value.
struct Drawn {
    x: f64,
    y: f64,
    /// The confidence bar's ends (None: no bar).
    bar: Option<(f64, f64)>,
}

/// Draws `chart` into `root`, with its title as the caption if `caption`.
fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &Chart,
    caption: bool,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let root = &if caption && !chart.title.is_empty() {
        titled(root, &chart.title)?
    } else {
        root.clone()
    };
    // A logarithmic axis is a linear one over log10 of the values, labelled with the values.
    let tx = |x: f64| if chart.log_x { x.log10() } else { x };
    let ty = |y: f64| if chart.log_y { y.log10() } else { y };
    let drawn: Vec<Vec<Drawn>> = chart
        .series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .map(|p| {
                    let bar = (p.ci95.is_finite() && p.ci95 > 0.0).then(|| {
                        let lo = p.mean - p.ci95;
                        // On a log axis a bar reaching zero or below ends at the axis.
                        let lo = if chart.log_y && lo <= 0.0 {
                            f64::NEG_INFINITY
                        } else {
                            ty(lo)
                        };
                        (lo, ty(p.mean + p.ci95))
                    });
                    Drawn {
                        x: tx(p.x),
                        y: ty(p.mean),
                        bar,
                    }
                })
                .collect()
        })
        .collect();
    let all: Vec<&Drawn> = drawn.iter().flatten().collect();
    let (mut x0, mut x1) = match &chart.x_axis {
        XAxis::Categories(c) => (-0.5, c.len() as f64 - 0.5),
        XAxis::Numeric { .. } => all
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
                (a.min(p.x), b.max(p.x))
            }),
    };
    if !(x0.is_finite() && x1.is_finite()) {
        (x0, x1) = (0.0, 1.0);
    }
    if let (Some((a, b)), XAxis::Numeric { .. }) = (chart.x_range, &chart.x_axis) {
        (x0, x1) = (tx(a), tx(b));
    } else if matches!(chart.x_axis, XAxis::Numeric { .. }) {
        let pad = if x1 > x0 {
            (x1 - x0) * 0.05
        } else {
            x0.abs().max(1.0) * 0.1
        };
        x0 -= pad;
        x1 += pad;
    }
    let finite = |v: f64| v.is_finite().then_some(v);
    let mut y0 = all
        .iter()
        .filter_map(|p| finite(p.bar.map_or(p.y, |b| b.0)))
        .fold(f64::INFINITY, f64::min);
    let mut y1 = all
        .iter()
        .filter_map(|p| finite(p.bar.map_or(p.y, |b| b.1)))
        .fold(f64::NEG_INFINITY, f64::max);
    if !(y0.is_finite() && y1.is_finite()) {
        (y0, y1) = (0.0, 1.0);
    }
    // Start at zero for non-negative data, the honest default for rates and times; a
    // time-sequence plot zooms in on the TSNs of its time range instead (and a log axis has
    // no zero).
    if y0 >= 0.0 && !chart.scatter && !chart.log_y {
        y0 = 0.0;
    }
    let pad = if y1 > y0 {
        (y1 - y0) * 0.08
    } else {
        y1.abs().max(1.0) * 0.1
    };
    // Room for the legend above the data.
    let legend = chart.series.iter().filter(|s| s.label.is_some()).count() as f64;
    y1 += pad * (1.0 + legend);
    if y0 < 0.0 || chart.log_y {
        y0 -= pad;
    }

    let mut ctx = ChartBuilder::on(root)
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(x0..x1, y0..y1)
        .map_err(e)?;
    let categories = match &chart.x_axis {
        XAxis::Categories(c) => Some(c.clone()),
        XAxis::Numeric { .. } => None,
    };
    let x_marks = if chart.log_x {
        log_marks(x0, x1)
    } else {
        Vec::new()
    };
    let x_fmt = |v: &f64| match &categories {
        Some(c) => {
            let i = v.round();
            if (v - i).abs() < 1e-6 && i >= 0.0 {
                c.get(i as usize).cloned().unwrap_or_default()
            } else {
                String::new()
            }
        }
        None if chart.log_x => log_tick(*v, &x_marks),
        None => format!("{}", (v * 1e6).round() / 1e6),
    };
    // Large values (bytes in a time series) in k, M or G, so that their ticks fit.
    let big = !chart.log_y && y0.abs().max(y1.abs()) >= 1e5;
    let y_marks = if chart.log_y {
        log_marks(y0, y1)
    } else {
        Vec::new()
    };
    let y_fmt = |v: &f64| {
        if chart.log_y {
            log_tick(*v, &y_marks)
        } else {
            compact(*v)
        }
    };
    let mut mesh = ctx.configure_mesh();
    if big || chart.log_y {
        mesh.y_label_formatter(&y_fmt);
    }
    mesh.x_desc(chart.x_label.as_str())
        .y_desc(chart.y_label.as_str())
        .axis_desc_style(("sans-serif", 18))
        .label_style(("sans-serif", 14))
        .bold_line_style(RGBColor(205, 205, 205))
        .light_line_style(RGBColor(240, 240, 240))
        .x_label_formatter(&x_fmt);
    if let Some(c) = &categories {
        mesh.x_labels(c.len() * 2 + 1);
    }
    // A log axis: ticks a nice step apart that falls on every mark (0.02 in log10 holds
    // log10 2 ≈ 0.30 and log10 5 ≈ 0.70; 1 holds the decades); the grid is drawn at the marks.
    let log_ticks = |lo: f64, hi: f64| {
        let step = if hi - lo >= 2.0 { 1.0 } else { 0.02 };
        ((hi - lo) / step).ceil() as usize + 1
    };
    if chart.log_x {
        mesh.x_labels(log_ticks(x0, x1)).disable_x_mesh();
    }
    if chart.log_y {
        mesh.y_labels(log_ticks(y0, y1)).disable_y_mesh();
    }
    mesh.draw().map_err(e)?;
    let grid = ShapeStyle::from(&RGBColor(205, 205, 205)).stroke_width(1);
    ctx.draw_series(
        x_marks
            .iter()
            .map(|&x| PathElement::new(vec![(x, y0), (x, y1)], grid)),
    )
    .map_err(e)?;
    ctx.draw_series(
        y_marks
            .iter()
            .map(|&y| PathElement::new(vec![(x0, y), (x1, y)], grid)),
    )
    .map_err(e)?;

    for (i, (s, points)) in chart.series.iter().zip(&drawn).enumerate() {
        let color = curve_color(i);
        let style = ShapeStyle::from(&color).stroke_width(2);
        if chart.scatter {
            let marker = Marker::of(i, color);
            let drawn = ctx
                .draw_series(points.iter().map(|p| {
                    let (area, outline) = marker.at_offset((0, 0));
                    EmptyElement::at((p.x, p.y)) + area + outline
                }))
                .map_err(e)?;
            if let Some(label) = &s.label {
                drawn.label(label.as_str()).legend(move |(x, y)| {
                    let (area, outline) = Marker::of(i, color).at_offset((10, 0));
                    EmptyElement::at((x, y)) + area + outline
                });
            }
            continue;
        }
        // Each curve has its own dash pattern and marker, so curves that coincide (or a
        // print in black and white) still tell apart.
        let xy = points.iter().map(|p| (p.x, p.y));
        let line = match i % 3 {
            0 => ctx.draw_series(LineSeries::new(xy, style)),
            1 => ctx.draw_series(DashedLineSeries::new(xy, 10, 6, style)),
            _ => ctx.draw_series(DashedLineSeries::new(xy, 3, 5, style)),
        }
        .map_err(e)?;
        if let Some(label) = &s.label {
            line.label(label.as_str()).legend(move |(x, y)| {
                let (area, outline) = Marker::of(i, color).at_offset((10, 0));
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(0, 0), (20, 0)], style)
                    + area
                    + outline
            });
        }
        // A marker on every point, or on about 20 of a long curve (a time series), shifted
        // by a sample per curve so that coinciding curves still show each marker.
        let every = if points.len() > 40 {
            points.len().div_ceil(20)
        } else {
            1
        };
        let at = points
            .iter()
            .enumerate()
            .filter(|(k, _)| (k + i) % every == 0)
            .map(|(_, p)| (p.x, p.y));
        let marker = Marker::of(i, color);
        ctx.draw_series(at.map(|c| {
            let (area, outline) = marker.at_offset((0, 0));
            EmptyElement::at(c) + area + outline
        }))
        .map_err(e)?;
        // The 95 % confidence bars: a vertical line with caps (plotters' ErrorBar would also
        // draw a dot at the mean, hiding the curve's own marker).
        let bars: Vec<(f64, f64, f64)> = points
            .iter()
            .filter_map(|p| p.bar.map(|(lo, hi)| (p.x, lo.max(y0), hi)))
            .collect();
        ctx.draw_series(
            bars.iter()
                .map(|&(x, lo, hi)| PathElement::new(vec![(x, lo), (x, hi)], style)),
        )
        .map_err(e)?;
        ctx.draw_series(bars.iter().flat_map(|&(x, lo, hi)| {
            [lo, hi]
                .map(|y| EmptyElement::at((x, y)) + PathElement::new(vec![(-5, 0), (5, 0)], style))
        }))
        .map_err(e)?;
    }
    if chart.series.iter().any(|s| s.label.is_some()) {
        ctx.configure_series_labels()
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 14))
            .position(SeriesLabelPosition::UpperRight)
            .draw()
            .map_err(e)?;
    }
    Ok(())
}

/// A marker's fill and outline, in pixels around its anchor.
type MarkerParts = (Polygon<(i32, i32)>, PathElement<(i32, i32)>);

/// The marker of curve `i`: one of six shapes, filled or hollow, drawn the same on the curve
/// and in the legend so that each curve's legend entry shows what its points look like.
struct Marker {
    /// The outline, in pixels around the point.
    shape: &'static [(i32, i32)],
    /// Filled (else only the outline).
    filled: bool,
    color: RGBAColor,
}

impl Marker {
    /// Six shapes × the three dash patterns of the lines: 6 curves differ in both.
    const SHAPES: [(&'static [(i32, i32)], bool); 6] = [
        (
            &[
                (-4, -2),
                (-2, -4),
                (2, -4),
                (4, -2),
                (4, 2),
                (2, 4),
                (-2, 4),
                (-4, 2),
            ],
            true,
        ),
        (&[(-5, 4), (0, -5), (5, 4)], true),
        (&[(0, -5), (5, 0), (0, 5), (-5, 0)], false),
        (&[(-4, -4), (4, -4), (4, 4), (-4, 4)], false),
        (&[(-5, -4), (5, -4), (0, 5)], false),
        (&[(-4, -4), (4, -4), (4, 4), (-4, 4)], true),
    ];

    fn of(i: usize, color: RGBAColor) -> Self {
        let (shape, filled) = Self::SHAPES[i % Self::SHAPES.len()];
        Marker {
            shape,
            filled,
            color,
        }
    }

    /// The marker as pixel elements offset by `(dx, dy)` from the anchor: its fill (clear
    /// for a hollow marker) and its outline.
    fn at_offset(&self, (dx, dy): (i32, i32)) -> MarkerParts {
        let mut pts: Vec<(i32, i32)> = self.shape.iter().map(|&(x, y)| (x + dx, y + dy)).collect();
        let fill = if self.filled {
            self.color.filled()
        } else {
            self.color.mix(0.0).filled()
        };
        let area = Polygon::new(pts.clone(), fill);
        pts.push(pts[0]);
        (
            area,
            PathElement::new(pts, ShapeStyle::from(&self.color).stroke_width(2)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_axes_are_labelled_at_one_two_five() {
        let marks = log_marks(16f64.log10(), 256f64.log10());
        let shown: Vec<String> = marks.iter().map(|&m| log_tick(m, &marks)).collect();
        assert_eq!(shown, ["20", "50", "100", "200"]);
        // A tick between marks has no label; a wide axis is labelled at decades only.
        assert_eq!(log_tick(1.5, &marks), "");
        let wide = log_marks(-3.2, 1.5);
        let shown: Vec<String> = wide.iter().map(|&m| log_tick(m, &wide)).collect();
        assert_eq!(shown, ["0.001", "0.01", "0.1", "1", "10"]);
        assert_eq!(log_tick(6.0, &[6.0]), "1M");
    }
}
