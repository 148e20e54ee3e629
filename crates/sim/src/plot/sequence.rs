//! `braid sim plot --sequence`: one run's time-sequence record against time, as the
//! microscopic figures of Ladha et al. draw it (Figs. 2–4, 7–10: TSN against time).
//!
//! A scenario with a top-level `sequence = true` makes `braid sim run` write
//! `DIR/sequence/point{P}-seed{S}.csv` (header [`crate::run::SEQUENCE_HEADER`]): one row per
//! DATA chunk sent or retransmitted (with its path), per DATA chunk reaching the receiver,
//! per SACK reaching the sender (its cumulative TSN ack) and per change of a path's cwnd.
//! [`prepare`] draws two panels over the same time range: the TSNs as markers only, a
//! series (and marker) each for DATA arriving, the SACKs' cumulative acks, and DATA sent and
//! retransmitted on each path (drawn last, on top); below, each path's cwnd as a step curve.

use std::path::Path;

use super::{Chart, ChartPoint, Kind, PlotError, Series, XAxis, render_panels};

/// What a row of the record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeqEvent {
    /// A DATA chunk's first transmission left the sender.
    Send,
    /// A retransmission left the sender.
    Rtx,
    /// A DATA chunk reached the receiver.
    Arrive,
    /// A SACK reached the sender (`tsn`: its cumulative ack).
    Sack,
    /// A path's cwnd or ssthresh changed.
    Cwnd,
}

impl SeqEvent {
    fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "send" => Self::Send,
            "rtx" => Self::Rtx,
            "arrive" => Self::Arrive,
            "sack" => Self::Sack,
            "cwnd" => Self::Cwnd,
            _ => return None,
        })
    }
}

/// One row of the record.
#[derive(Debug, Clone, PartialEq)]
pub struct SeqRow {
    /// Time (s).
    pub t: f64,
    /// What happened.
    pub event: SeqEvent,
    /// The path's name.
    pub path: String,
    /// The TSN (counted from 1), or the cumulative ack.
    pub tsn: Option<f64>,
    /// cwnd (bytes), on `cwnd` rows.
    pub cwnd: Option<f64>,
    /// ssthresh (bytes), on `cwnd` rows.
    pub ssthresh: Option<f64>,
}

/// A time-sequence record as read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sequence {
    /// The rows, in time order.
    pub rows: Vec<SeqRow>,
}

impl Sequence {
    /// Parses the CSV `braid sim run` writes.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut lines = text.lines().filter(|l| !l.trim().is_empty());
        let header = lines.next().ok_or("the file is empty")?;
        if header.trim() != crate::run::SEQUENCE_HEADER {
            return Err(format!(
                "the header is not {:?}: not a time-sequence record of `braid sim run`",
                crate::run::SEQUENCE_HEADER
            ));
        }
        let num = |s: &str| s.trim().parse::<f64>().ok().filter(|v| v.is_finite());
        let mut rows = Vec::new();
        for (i, line) in lines.enumerate() {
            let c: Vec<&str> = line.split(',').collect();
            let bad = || format!("line {}: {line:?} is not a row of the record", i + 2);
            let [t, event, path, tsn, cwnd, ssthresh] = c[..] else {
                return Err(bad());
            };
            rows.push(SeqRow {
                t: num(t).ok_or_else(bad)?,
                event: SeqEvent::parse(event).ok_or_else(bad)?,
                path: path.to_string(),
                tsn: num(tsn),
                cwnd: num(cwnd),
                ssthresh: num(ssthresh),
            });
        }
        Ok(Self { rows })
    }

    /// The paths named in the record, in order of first appearance.
    pub fn paths(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for r in &self.rows {
            if !out.contains(&r.path.as_str()) {
                out.push(&r.path);
            }
        }
        out
    }

    /// The rows of `event` in `[from, to)`.
    pub fn events(&self, event: SeqEvent, from: f64, to: f64) -> impl Iterator<Item = &SeqRow> {
        self.rows
            .iter()
            .filter(move |r| r.event == event && r.t >= from && r.t < to)
    }

    /// The first row of `event` at or after `t`.
    pub fn first(&self, event: SeqEvent, t: f64) -> Option<&SeqRow> {
        self.events(event, t, f64::INFINITY).next()
    }

    /// Path `path`'s cwnd at `t` (the last change at or before it).
    pub fn cwnd_at(&self, path: &str, t: f64) -> Option<f64> {
        self.rows
            .iter()
            .take_while(|r| r.t <= t)
            .filter(|r| r.event == SeqEvent::Cwnd && r.path == path)
            .last()
            .and_then(|r| r.cwnd)
    }

    /// Path `path`'s largest cwnd in `[from, to)`, the value at `from` included.
    pub fn max_cwnd(&self, path: &str, from: f64, to: f64) -> Option<f64> {
        let later = self
            .events(SeqEvent::Cwnd, from, to)
            .filter(|r| r.path == path)
            .filter_map(|r| r.cwnd);
        self.cwnd_at(path, from)
            .into_iter()
            .chain(later)
            .reduce(f64::max)
    }

    /// DATA chunks sent for the first time in `[from, to)`.
    pub fn new_data(&self, from: f64, to: f64) -> usize {
        self.events(SeqEvent::Send, from, to).count()
    }
}

/// What to draw of a record.
#[derive(Debug, Clone, Default)]
pub struct SequenceSpec {
    /// Start of the time axis (s); default: the first row.
    pub from: Option<f64>,
    /// End of the time axis (s); default: the last row.
    pub to: Option<f64>,
    /// Title of the figure.
    pub title: Option<String>,
}

fn point(x: f64, y: f64) -> ChartPoint {
    ChartPoint {
        x,
        mean: y,
        ci95: f64::NAN,
        n: 1,
    }
}

fn time_axis() -> XAxis {
    XAxis::Numeric {
        kind: Kind::Duration,
        scale: 1.0,
        unit: "s".into(),
    }
}

/// The two panels of `spec`: TSNs (markers only) and cwnd per path (steps).
pub fn prepare(seq: &Sequence, spec: &SequenceSpec) -> Result<Vec<Chart>, PlotError> {
    let (Some(first), Some(last)) = (seq.rows.first(), seq.rows.last()) else {
        return Err(PlotError::Spec(
            "the record has no rows (the association never started?)".into(),
        ));
    };
    let from = spec.from.unwrap_or(first.t);
    let to = spec.to.unwrap_or(last.t + 1e-9);
    if from >= to {
        return Err(PlotError::Spec(format!(
            "the time range {from} s – {to} s is empty"
        )));
    }
    let paths = seq.paths();
    let many = paths.len() > 1;
    let tsns = |event: SeqEvent, path: Option<&str>| -> Vec<ChartPoint> {
        seq.events(event, from, to)
            .filter(|r| path.is_none_or(|p| r.path == p))
            .filter_map(|r| r.tsn.map(|n| point(r.t, n)))
            .collect()
    };
    // Drawn in this order, so that the sender's transmissions, and its retransmissions
    // above all, stay visible on top of the receiver's arrivals and the acks.
    let mut series = Vec::new();
    for (event, what) in [
        (SeqEvent::Arrive, "DATA at the receiver"),
        (SeqEvent::Sack, "SACK cum. ack at the sender"),
    ] {
        let points = tsns(event, None);
        if !points.is_empty() {
            series.push(Series {
                label: Some(what.to_string()),
                points,
            });
        }
    }
    for (event, what) in [
        (SeqEvent::Send, "DATA sent"),
        (SeqEvent::Rtx, "retransmission"),
    ] {
        for p in &paths {
            let points = tsns(event, Some(p));
            if !points.is_empty() {
                let label = if many {
                    format!("{what}, path {p}")
                } else {
                    what.to_string()
                };
                series.push(Series {
                    label: Some(label),
                    points,
                });
            }
        }
    }
    let mut windows = Vec::new();
    for p in &paths {
        // A step curve: the value holds until the next change.
        let mut points = Vec::new();
        if let Some(c) = seq.cwnd_at(p, from) {
            points.push(point(from, c));
        }
        for r in seq
            .events(SeqEvent::Cwnd, from, to)
            .filter(|r| r.path == *p && r.t > from)
        {
            let Some(c) = r.cwnd else { continue };
            if let Some(prev) = points.last().map(|q: &ChartPoint| q.mean) {
                points.push(point(r.t, prev));
            }
            points.push(point(r.t, c));
        }
        if let Some(prev) = points.last().map(|q| q.mean) {
            points.push(point(to, prev));
            windows.push(Series {
                label: Some(format!("cwnd, path {p}")),
                points,
            });
        }
    }
    let title = spec
        .title
        .clone()
        .unwrap_or_else(|| "TSN against time".into());
    Ok(vec![
        Chart {
            title,
            x_label: "time (s)".into(),
            y_label: "TSN (from the first sent)".into(),
            x_axis: time_axis(),
            series,
            scatter: true,
            x_range: Some((from, to)),
            log_x: false,
            log_y: false,
        },
        Chart {
            title: String::new(),
            x_label: "time (s)".into(),
            y_label: "cwnd (bytes)".into(),
            x_axis: time_axis(),
            series: windows,
            scatter: false,
            x_range: Some((from, to)),
            log_x: false,
            log_y: false,
        },
    ])
}

/// Reads the record `file`, draws it into `out` (.png or .svg) and returns the panels.
pub fn plot_file(file: &Path, spec: &SequenceSpec, out: &Path) -> Result<Vec<Chart>, PlotError> {
    let text = std::fs::read_to_string(file).map_err(|e| PlotError::Read {
        path: file.to_path_buf(),
        message: e.to_string(),
    })?;
    let seq = Sequence::parse(&text).map_err(|message| PlotError::Read {
        path: file.to_path_buf(),
        message,
    })?;
    let charts = prepare(&seq, spec)?;
    render_panels(&charts, out)?;
    Ok(charts)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORD: &str = "t_s,event,path,tsn,cwnd,ssthresh
0.000000,cwnd,p1,,4380,65536
0.400000,send,p1,1,,
0.400000,send,p1,2,,
0.500000,arrive,p1,1,,
0.600000,sack,p1,1,,
0.600000,cwnd,p1,,5840,65536
1.000000,rtx,p2,2,,
1.100000,arrive,p2,2,,
1.200000,sack,p2,2,,
1.200000,cwnd,p2,,2920,4380
";

    #[test]
    fn the_record_reads_back_and_answers_the_report_questions() {
        let s = Sequence::parse(RECORD).unwrap();
        assert_eq!(s.rows.len(), 10);
        assert_eq!(s.paths(), vec!["p1", "p2"]);
        assert_eq!(s.cwnd_at("p1", 0.5), Some(4380.0));
        assert_eq!(s.cwnd_at("p1", 0.6), Some(5840.0));
        assert_eq!(s.max_cwnd("p1", 0.0, 2.0), Some(5840.0));
        assert_eq!(s.new_data(0.0, 2.0), 2);
        assert_eq!(s.first(SeqEvent::Rtx, 0.0).map(|r| r.t), Some(1.0));
        assert!(Sequence::parse("t_s,path\n").is_err());
        assert!(Sequence::parse(&format!("{RECORD}1.3,lost,p1,,,\n")).is_err());
    }

    #[test]
    fn the_tsn_panel_has_a_series_per_event_and_path_and_the_cwnd_panel_steps() {
        let s = Sequence::parse(RECORD).unwrap();
        let charts = prepare(&s, &SequenceSpec::default()).unwrap();
        assert!(charts[0].scatter && !charts[1].scatter);
        let labels: Vec<&str> = charts[0]
            .series
            .iter()
            .filter_map(|x| x.label.as_deref())
            .collect();
        assert_eq!(
            labels,
            [
                "DATA at the receiver",
                "SACK cum. ack at the sender",
                "DATA sent, path p1",
                "retransmission, path p2"
            ]
        );
        // p1's cwnd: 4380 from 0, 5840 from 0.6 s on (a step: two points at 0.6 s).
        let p1 = &charts[1].series[0].points;
        let ys: Vec<f64> = p1.iter().map(|p| p.mean).collect();
        assert_eq!(ys, [4380.0, 4380.0, 5840.0, 5840.0]);
        assert_eq!((p1[1].x, p1[2].x), (0.6, 0.6));
        // A window outside the record is refused, an empty one too.
        let empty = SequenceSpec {
            from: Some(2.0),
            to: Some(1.0),
            title: None,
        };
        assert!(prepare(&s, &empty).is_err());
    }
}
