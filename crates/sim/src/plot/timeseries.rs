//! `braid sim plot --timeseries`: one run's time series against time.
//!
//! A scenario with a top-level `timeseries = "500ms"` makes `braid sim run` write
//! `DIR/timeseries/point{P}-seed{S}.csv` (header [`crate::run::TIMESERIES_HEADER`]): a row
//! per path per sample. [`prepare`] turns the columns asked for into curves, one per path per
//! column (`path A, cwnd (bytes)`); the association's columns ([`ASSOCIATION_COLUMNS`], the
//! same on every path's row) give one curve each. Columns with different units go into
//! separate panels, one above the other, sharing the time axis (bytes, ms, counts, ...).
//!
//! `state` is drawn as a level: 2 active, 1 potentially failed, 0 inactive or unconfirmed.

use std::path::{Path, PathBuf};

use super::{Chart, ChartPoint, Kind, PlotError, Series, XAxis, metric_unit, render_panels, words};
use crate::runner::SummaryFile;

/// Columns that describe the association, not a path: repeated on every path's row, drawn
/// once.
pub const ASSOCIATION_COLUMNS: &[&str] = &["cum_tsn", "send_buffered", "recv_buffered"];

/// Columns that count events since the start (cumulative counters).
const COUNTERS: &[&str] = &["retransmissions", "fast_retransmissions", "timeouts"];

/// What to plot of a time series.
#[derive(Debug, Clone, Default)]
pub struct TimeSeriesSpec {
    /// The columns on the y axis (e.g. `cwnd`, `srtt_ms`), in the order they are drawn.
    pub columns: Vec<String>,
    /// Title; default: the run (scenario, point and seed where known).
    pub title: Option<String>,
}

/// A time-series CSV as read: the header's column names and the rows' cells as text.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeSeries {
    /// Column names, from the header (`t_s`, `path`, ...).
    pub columns: Vec<String>,
    /// The rows, each with one cell per column.
    pub rows: Vec<Vec<String>>,
}

impl TimeSeries {
    /// Parses CSV text with a header line (as `braid sim run` writes it: no quoting).
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut lines = text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty());
        let (_, header) = lines.next().ok_or("the file is empty")?;
        let columns: Vec<String> = header.split(',').map(|c| c.trim().to_string()).collect();
        for needed in ["t_s", "path"] {
            if !columns.iter().any(|c| c == needed) {
                return Err(format!(
                    "the header has no column {needed:?}: not a time series of `braid sim run`"
                ));
            }
        }
        let mut rows = Vec::new();
        for (i, line) in lines {
            let cells: Vec<String> = line.split(',').map(|c| c.trim().to_string()).collect();
            if cells.len() != columns.len() {
                return Err(format!(
                    "line {}: {} cells, the header has {}",
                    i + 1,
                    cells.len(),
                    columns.len()
                ));
            }
            rows.push(cells);
        }
        Ok(Self { columns, rows })
    }

    /// The columns that can be plotted: all but `t_s` and `path`.
    pub fn plottable(&self) -> Vec<&str> {
        self.columns
            .iter()
            .map(String::as_str)
            .filter(|c| !matches!(*c, "t_s" | "path"))
            .collect()
    }

    fn index(&self, column: &str) -> Option<usize> {
        self.columns.iter().position(|c| c == column)
    }
}

/// The unit of a time-series column, for its axis and legend.
pub fn column_unit(column: &str) -> Option<&'static str> {
    match column {
        "cwnd" | "ssthresh" | "flight_size" | "send_buffered" | "recv_buffered" => Some("bytes"),
        "state" => Some("2 active, 1 PF, 0 inactive"),
        c => metric_unit(c),
    }
}

/// Which panel a column goes in: columns with the same unit share one.
fn panel_of(column: &str) -> String {
    if COUNTERS.contains(&column) {
        "count".into()
    } else {
        column_unit(column).map_or_else(|| column.to_string(), str::to_string)
    }
}

/// A column's label with its unit: `cwnd (bytes)`.
fn labelled(column: &str) -> String {
    match column_unit(column) {
        Some(u) => format!("{} ({u})", words(column)),
        None => words(column),
    }
}

/// A cell as a number; `state` as its level; None if empty (no RTT measured yet).
fn value(column: &str, cell: &str) -> Option<f64> {
    if column == "state" {
        return match cell {
            "active" => Some(2.0),
            "pf" => Some(1.0),
            "inactive" | "unconfirmed" => Some(0.0),
            _ => None,
        };
    }
    cell.parse::<f64>().ok().filter(|v| v.is_finite())
}

/// The charts of `spec`: one panel per unit, in the order of the columns; the title is the
/// first panel's (see [`render_panels`]).
pub fn prepare(ts: &TimeSeries, spec: &TimeSeriesSpec) -> Result<Vec<Chart>, PlotError> {
    let err = |m: String| Err(PlotError::Spec(m));
    let valid = ts.plottable();
    if spec.columns.is_empty() {
        return err(format!(
            "name the columns to plot with --y, comma-separated (columns: {})",
            valid.join(", ")
        ));
    }
    let mut columns: Vec<&str> = Vec::new();
    for c in &spec.columns {
        if !valid.contains(&c.as_str()) {
            return err(format!(
                "no column {c:?} in the time series (columns: {})",
                valid.join(", ")
            ));
        }
        if !columns.contains(&c.as_str()) {
            columns.push(c);
        }
    }
    if ts.rows.is_empty() {
        return err("the time series has no samples (the association never started?)".into());
    }
    let (Some(t_col), Some(path_col)) = (ts.index("t_s"), ts.index("path")) else {
        return err("the time series has no t_s or path column".into());
    };
    let mut times = Vec::with_capacity(ts.rows.len());
    for row in &ts.rows {
        match row[t_col].parse::<f64>() {
            Ok(t) if t.is_finite() => times.push(t),
            _ => return err(format!("t_s {:?} is not a time in seconds", row[t_col])),
        }
    }
    let mut paths: Vec<&str> = Vec::new();
    for row in &ts.rows {
        if !paths.contains(&row[path_col].as_str()) {
            paths.push(&row[path_col]);
        }
    }

    // Panels in the order of their first column.
    let mut panels: Vec<(String, Vec<&str>)> = Vec::new();
    for c in &columns {
        let key = panel_of(c);
        match panels.iter_mut().find(|(k, _)| *k == key) {
            Some((_, cs)) => cs.push(c),
            None => panels.push((key, vec![c])),
        }
    }

    let curve = |column: &str, path: Option<&str>| -> Series {
        let Some(col) = ts.index(column) else {
            return Series {
                label: None,
                points: Vec::new(),
            };
        };
        let mut last_t = f64::NEG_INFINITY;
        let mut points = Vec::new();
        for (row, &t) in ts.rows.iter().zip(&times) {
            match path {
                Some(p) if row[path_col] != p => continue,
                // The association's value once per sample (every path's row repeats it).
                None if t == last_t => continue,
                _ => {}
            }
            last_t = t;
            if let Some(v) = value(column, &row[col]) {
                points.push(ChartPoint {
                    x: t,
                    mean: v,
                    ci95: f64::NAN,
                    n: 1,
                });
            }
        }
        Series {
            label: Some(match path {
                Some(p) => format!("path {p}, {}", labelled(column)),
                None => labelled(column),
            }),
            points,
        }
    };

    let title = spec.title.clone().unwrap_or_default();
    let charts = panels
        .iter()
        .enumerate()
        .map(|(i, (_, cs))| {
            let mut series = Vec::new();
            for c in cs {
                if ASSOCIATION_COLUMNS.contains(c) {
                    series.push(curve(c, None));
                } else {
                    series.extend(paths.iter().map(|p| curve(c, Some(p))));
                }
            }
            let names: Vec<String> = cs.iter().map(|c| words(c)).collect();
            let y_label = match column_unit(cs[0]) {
                Some(u) => format!("{} ({u})", names.join(", ")),
                None => names.join(", "),
            };
            Chart {
                title: if i == 0 { title.clone() } else { String::new() },
                x_label: format!("{} (s)", words("t_s")),
                y_label,
                x_axis: XAxis::Numeric {
                    kind: Kind::Duration,
                    scale: 1.0,
                    unit: "s".into(),
                },
                series,
                scatter: false,
                x_range: None,
                log_x: false,
                log_y: false,
            }
        })
        .collect();
    Ok(charts)
}

/// Reads the time-series CSV `file`.
pub fn read(file: &Path) -> Result<TimeSeries, PlotError> {
    let read_err = |message: String| PlotError::Read {
        path: file.to_path_buf(),
        message,
    };
    let text = std::fs::read_to_string(file).map_err(|e| {
        read_err(if e.kind() == std::io::ErrorKind::NotFound {
            format!(
                "{e} (`braid sim run` writes time series only for a scenario with a top-level \
                 `timeseries = \"500ms\"`, the sampling interval)"
            )
        } else {
            e.to_string()
        })
    })?;
    TimeSeries::parse(&text).map_err(read_err)
}

/// A run's (point, seed) from its name `point{P}-seed{S}`.
fn point_seed(run: &str) -> Option<(usize, u64)> {
    let (p, s) = run.strip_prefix("point")?.split_once("-seed")?;
    Some((p.parse().ok()?, s.parse().ok()?))
}

/// The time-series file of run `run` (`point3-seed0`, `.csv` optional) in the directory
/// `braid sim run` wrote; if there is none, an error that lists the runs that have one.
pub fn run_file(dir: &Path, run: &str) -> Result<PathBuf, PlotError> {
    let name = run.strip_suffix(".csv").unwrap_or(run);
    let series_dir = dir.join("timeseries");
    let file = series_dir.join(format!("{name}.csv"));
    if file.is_file() {
        return Ok(file);
    }
    let mut available: Vec<String> = std::fs::read_dir(&series_dir)
        .into_iter()
        .flatten()
        .filter_map(|e| {
            let path = e.ok()?.path();
            (path.extension()? == "csv").then(|| path.file_stem()?.to_str().map(String::from))?
        })
        .collect();
    available.sort_by(|a, b| {
        point_seed(a)
            .cmp(&point_seed(b))
            .then_with(|| a.as_str().cmp(b))
    });
    let hint = "`braid sim run` writes DIR/timeseries/point{P}-seed{S}.csv only for a scenario \
                with a top-level `timeseries = \"500ms\"` (the sampling interval)";
    let message = if !dir.is_dir() {
        format!("{} is not a directory", dir.display())
    } else if available.is_empty() {
        format!("{} has no time series: {hint}", dir.display())
    } else {
        let shown = available.len().min(20);
        let more = if available.len() > shown {
            format!(", ... ({} in all)", available.len())
        } else {
            String::new()
        };
        format!(
            "no run {name:?} in {} (time series there: {}{more})",
            series_dir.display(),
            available[..shown].join(", ")
        )
    };
    Err(PlotError::Spec(message))
}

/// The default title of run `run` of `dir`: the scenario, point (with its swept values) and
/// seed from `dir/summary.json` if it can be read, else the run's name.
fn run_title(dir: &Path, run: &str) -> String {
    let name = run.strip_suffix(".csv").unwrap_or(run);
    let summary: Option<SummaryFile> = std::fs::read_to_string(dir.join("summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok());
    match (summary, point_seed(name)) {
        (Some(s), Some((p, seed))) => {
            let params = s
                .points
                .iter()
                .find(|q| q.index == p)
                .map(|q| q.params.describe())
                .filter(|d| !d.is_empty())
                .map_or(String::new(), |d| format!(" ({d})"));
            format!("{}: point {p}{params}, seed {seed}", s.scenario)
        }
        (None, Some((p, seed))) => format!("point {p}, seed {seed}"),
        _ => name.to_string(),
    }
}

/// Plots run `run` (`point3-seed0`) of the directory `braid sim run` wrote into `out` (.png
/// or .svg) and returns the panels drawn.
pub fn plot_run(
    dir: &Path,
    run: &str,
    spec: &TimeSeriesSpec,
    out: &Path,
) -> Result<Vec<Chart>, PlotError> {
    let file = run_file(dir, run)?;
    let mut spec = spec.clone();
    if spec.title.is_none() {
        spec.title = Some(run_title(dir, run));
    }
    plot_file(&file, &spec, out)
}

/// Plots the time-series CSV `file` into `out` (.png or .svg) and returns the panels drawn;
/// the default title is the file's name.
pub fn plot_file(file: &Path, spec: &TimeSeriesSpec, out: &Path) -> Result<Vec<Chart>, PlotError> {
    let ts = read(file)?;
    let mut spec = spec.clone();
    if spec.title.is_none() {
        spec.title = Some(
            file.file_stem()
                .map_or_else(String::new, |s| s.to_string_lossy().into_owned()),
        );
    }
    let charts = prepare(&ts, &spec)?;
    render_panels(&charts, out)?;
    Ok(charts)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    const CSV: &str = "t_s,path,cwnd,ssthresh,rto_ms,flight_size,srtt_ms,cum_tsn,\
send_buffered,recv_buffered,state,retransmissions,fast_retransmissions,timeouts
0.500000,A,4380,65535,1000.000,1452,,3,2904,0,active,0,0,0
0.500000,B,4380,65535,1000.000,0,20.500,3,2904,0,unconfirmed,0,0,0
1.000000,A,5832,65535,300.000,2904,10.250,10,1452,1452,active,1,0,0
1.000000,B,4380,65535,300.000,1452,21.000,10,1452,1452,pf,0,0,1
";

    fn spec(cols: &[&str]) -> TimeSeriesSpec {
        TimeSeriesSpec {
            columns: cols.iter().map(|c| (*c).to_string()).collect(),
            title: Some("t".into()),
        }
    }

    #[test]
    fn the_header_is_the_simulators() {
        let ts = TimeSeries::parse(CSV).unwrap();
        assert_eq!(ts.columns.join(","), crate::run::TIMESERIES_HEADER);
        assert_eq!(ts.rows.len(), 4);
    }

    #[test]
    fn one_curve_per_path_and_column_association_columns_once_panels_by_unit() {
        let ts = TimeSeries::parse(CSV).unwrap();
        let charts = prepare(&ts, &spec(&["cwnd", "srtt_ms", "send_buffered", "state"])).unwrap();
        // bytes (cwnd, send buffer), ms (srtt), state.
        assert_eq!(charts.len(), 3);
        assert_eq!(charts[0].title, "t");
        assert_eq!(charts[1].title, "");
        assert_eq!(charts[0].x_label, "time (s)");
        assert_eq!(charts[0].y_label, "cwnd, send buffer occupancy (bytes)");
        assert_eq!(charts[1].y_label, "smoothed RTT (ms)");
        let labels: Vec<_> = charts[0]
            .series
            .iter()
            .map(|s| s.label.clone().unwrap())
            .collect();
        assert_eq!(
            labels,
            [
                "path A, cwnd (bytes)",
                "path B, cwnd (bytes)",
                "send buffer occupancy (bytes)"
            ]
        );
        let xy =
            |s: &Series| -> Vec<(f64, f64)> { s.points.iter().map(|p| (p.x, p.mean)).collect() };
        assert_eq!(xy(&charts[0].series[0]), [(0.5, 4380.0), (1.0, 5832.0)]);
        assert_eq!(xy(&charts[0].series[2]), [(0.5, 2904.0), (1.0, 1452.0)]);
        // No RTT measured yet on A at 0.5 s: no point there.
        assert_eq!(xy(&charts[1].series[0]), [(1.0, 10.25)]);
        assert_eq!(xy(&charts[2].series[1]), [(0.5, 0.0), (1.0, 1.0)]);
    }

    #[test]
    fn an_unknown_column_is_refused_naming_the_valid_ones() {
        let ts = TimeSeries::parse(CSV).unwrap();
        let e = prepare(&ts, &spec(&["cwnd", "cwd"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("no column \"cwd\""), "{e}");
        assert!(
            e.contains("columns: cwnd, ssthresh, rto_ms, flight_size, srtt_ms, cum_tsn"),
            "{e}"
        );
        assert!(!e.contains("t_s,") && !e.contains("path,"), "{e}");
        let e = prepare(&ts, &spec(&[])).unwrap_err().to_string();
        assert!(e.contains("--y"), "{e}");
    }

    #[test]
    fn malformed_files_are_refused() {
        assert!(TimeSeries::parse("").is_err());
        assert!(TimeSeries::parse("a,b\n1,2\n").unwrap_err().contains("t_s"));
        let e = TimeSeries::parse("t_s,path,cwnd\n0.1,A\n").unwrap_err();
        assert!(e.contains("line 2: 2 cells"), "{e}");
    }

    #[test]
    fn a_missing_run_lists_the_available_ones() {
        let dir = std::env::temp_dir().join(format!("braid-ts-unit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let e = run_file(&dir, "point0-seed0").unwrap_err().to_string();
        assert!(e.contains("timeseries = "), "{e}");
        std::fs::create_dir_all(dir.join("timeseries")).unwrap();
        for f in ["point10-seed0", "point2-seed1", "point2-seed0"] {
            std::fs::write(dir.join("timeseries").join(format!("{f}.csv")), CSV).unwrap();
        }
        let e = run_file(&dir, "point3-seed0").unwrap_err().to_string();
        assert!(
            e.contains("(time series there: point2-seed0, point2-seed1, point10-seed0)"),
            "{e}"
        );
        assert!(run_file(&dir, "point2-seed1.csv").is_ok());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
