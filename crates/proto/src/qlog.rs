//! qlog output: the decision trace ([`crate::TraceEvent`]) as qlog, one JSON-SEQ file
//! (`.sqlog`) per association, for qvis and the other qlog tools.
//!
//! Format: qlog 0.3 JSON-SEQ (draft-ietf-quic-qlog-main-schema-03/-04, as quiche and neqo
//! write it: every record starts with an RS byte and ends with a line feed; the first is the
//! header). Time is in milliseconds relative to `reference_time` 0, the driver's epoch (the
//! simulator's start, or the socket driver's). Events, each written when it happens (the
//! trace records only changes):
//!
//! | braid trace event | qlog event |
//! |---|---|
//! | `window` | `recovery:metrics_updated` (`congestion_window`, `ssthresh`, `bytes_in_flight`, `smoothed_rtt`, `min_rtt`, `latest_rtt`, `rtt_variance`, `pacing_rate` in bit/s when pacing, `path_id`) and, when the state it implies moves, `recovery:congestion_state_updated` (`slow_start`, `congestion_avoidance`, `recovery`; `trigger` the window's cause) |
//! | `fast_retransmit` | `recovery:packet_lost` (`trigger`: `reordering_threshold` for three misses, `time_threshold` for RACK; the TSN as packet number) |
//! | `packet_sent`, `packet_received` | `transport:packet_sent`, `transport:packet_received` (`packet_number`: the file's count of packets that way, SCTP has none; `raw.length`; `path_id`; `frames`: `data` with `tsn`, `stream_id`, `length`, `sack` with `cumulative_tsn` and `gap_ranges` as TSN ranges, any other chunk by its name) |
//! | `t3_expired` | `recovery:loss_timer_updated` (`event_type`: `expired`, `timer_type`: `t3_rtx`) |
//! | `association_state` | `connectivity:connection_state_updated` |
//! | `pmtu_state` | `connectivity:mtu_updated` (`new`, `done`) |
//! | every event | `sctp:` + its trace name, with its trace fields (braid-only namespace) |
//!
//! Not (yet) written: RTT samples between window changes (each window change carries the
//! latest), losses found by T3 chunk by chunk (`loss_timer_updated` and `sctp:t3_expired`
//! carry their count), the TLP probe timer. The `data`/`sack` frames are braid's: qvis shows
//! packets and their sizes but does not map SACKs to its QUIC ack ranges.

use std::fmt::Write as _;

use crate::time::Instant;
use crate::trace::{ChunkSummary, LossRule, TraceEvent, WindowCause};

/// The qlog state of one association's file: whether the header was written and each
/// path's congestion state as last written.
#[derive(Debug, Default)]
pub(crate) struct QlogFile {
    started: bool,
    congestion: Vec<Option<&'static str>>,
    /// Packets written so far each way: qlog's packet numbers (SCTP has none).
    sent: u64,
    received: u64,
}

impl QlogFile {
    /// Appends the records of `ev` at `at` (the header first, once) to `out`.
    pub(crate) fn records(
        &mut self,
        assoc: crate::AssocId,
        at: Instant,
        ev: &TraceEvent,
        out: &mut String,
    ) {
        if !self.started {
            self.started = true;
            let _ = writeln!(
                out,
                "\u{1e}{{\"qlog_version\":\"0.3\",\"qlog_format\":\"JSON-SEQ\",\
                 \"title\":\"braid association {id}\",\"trace\":{{\"title\":\"braid association {id}\",\
                 \"vantage_point\":{{\"type\":\"unknown\",\"name\":\"braid\"}},\
                 \"common_fields\":{{\"protocol_type\":[\"SCTP\"],\"time_format\":\"relative\",\
                 \"reference_time\":0}}}}}}",
                id = assoc.0
            );
        }
        let time = at.since_epoch().as_secs_f64() * 1000.0;
        let mut record = |name: &str, data: &str| {
            let _ = writeln!(
                out,
                "\u{1e}{{\"time\":{time:.3},\"name\":\"{name}\",\"data\":{{{data}}}}}"
            );
        };
        match ev {
            TraceEvent::Window {
                path,
                cwnd,
                ssthresh,
                cause,
                flight,
                srtt,
                rttvar,
                min_rtt,
                latest_rtt,
                pacing_rate,
            } => {
                let mut d = format!(
                    "\"path_id\":{},\"congestion_window\":{cwnd},\"ssthresh\":{ssthresh},\
                     \"bytes_in_flight\":{flight},\"rtt_variance\":{:.3}",
                    path.0,
                    rttvar.as_secs_f64() * 1000.0
                );
                for (key, v) in [
                    ("smoothed_rtt", srtt),
                    ("min_rtt", min_rtt),
                    ("latest_rtt", latest_rtt),
                ] {
                    if let Some(r) = v {
                        let _ = write!(d, ",\"{key}\":{:.3}", r.as_secs_f64() * 1000.0);
                    }
                }
                if let Some(r) = pacing_rate {
                    // qlog's pacing rate is in bits per second.
                    let _ = write!(d, ",\"pacing_rate\":{}", r.saturating_mul(8));
                }
                record("recovery:metrics_updated", &d);
                let state = match cause {
                    WindowCause::FastRetransmit => "recovery",
                    _ if cwnd <= ssthresh => "slow_start",
                    _ => "congestion_avoidance",
                };
                let i = path.0 as usize;
                if self.congestion.len() <= i {
                    self.congestion.resize(i + 1, None);
                }
                if self.congestion[i] != Some(state) {
                    let old =
                        self.congestion[i].map_or(String::new(), |o| format!("\"old\":\"{o}\","));
                    record(
                        "recovery:congestion_state_updated",
                        &format!(
                            "{old}\"new\":\"{state}\",\"trigger\":\"{}\",\"path_id\":{}",
                            cause.as_str(),
                            path.0
                        ),
                    );
                    self.congestion[i] = Some(state);
                }
            }
            TraceEvent::FastRetransmit {
                tsn, lost_on, rule, ..
            } => record(
                "recovery:packet_lost",
                &format!(
                    "\"header\":{{\"packet_type\":\"1RTT\",\"packet_number\":{tsn}}},\
                     \"trigger\":\"{}\",\"path_id\":{}",
                    match rule {
                        LossRule::ThreeMisses => "reordering_threshold",
                        LossRule::RackTime => "time_threshold",
                    },
                    lost_on.0
                ),
            ),
            TraceEvent::Packet {
                path,
                sent,
                size,
                chunks,
            } => {
                let n = if *sent {
                    &mut self.sent
                } else {
                    &mut self.received
                };
                let mut d = format!(
                    "\"header\":{{\"packet_type\":\"1RTT\",\"packet_number\":{n}}},\
                     \"raw\":{{\"length\":{size}}},\"path_id\":{},\"frames\":[",
                    path.0
                );
                *n += 1;
                for (i, c) in chunks.iter().enumerate() {
                    if i > 0 {
                        d.push(',');
                    }
                    let _ = match c {
                        ChunkSummary::Data { tsn, stream, len } => write!(
                            d,
                            "{{\"frame_type\":\"data\",\"tsn\":{tsn},\"stream_id\":{stream},\
                             \"length\":{len}}}"
                        ),
                        ChunkSummary::Sack { cum_tsn, gaps } => {
                            let _ = write!(
                                d,
                                "{{\"frame_type\":\"sack\",\"cumulative_tsn\":{cum_tsn},\
                                 \"gap_ranges\":["
                            );
                            for (j, (a, b)) in gaps.iter().enumerate() {
                                let _ = write!(d, "{}[{a},{b}]", if j > 0 { "," } else { "" });
                            }
                            write!(d, "]}}")
                        }
                        ChunkSummary::Other(name) => {
                            write!(d, "{{\"frame_type\":\"{name}\"}}")
                        }
                    };
                }
                d.push(']');
                let name = if *sent {
                    "transport:packet_sent"
                } else {
                    "transport:packet_received"
                };
                record(name, &d);
            }
            TraceEvent::T3Expired { path, .. } => record(
                "recovery:loss_timer_updated",
                &format!(
                    "\"event_type\":\"expired\",\"timer_type\":\"t3_rtx\",\"path_id\":{}",
                    path.0
                ),
            ),
            TraceEvent::AssociationState { from, to } => record(
                "connectivity:connection_state_updated",
                &format!("\"old\":\"{}\",\"new\":\"{}\"", from.as_str(), to.as_str()),
            ),
            TraceEvent::PmtuState { path, to, pmtu, .. } => record(
                "connectivity:mtu_updated",
                &format!(
                    "\"new\":{pmtu},\"done\":{},\"path_id\":{}",
                    *to == crate::path::plpmtud::PmtuState::Done,
                    path.0
                ),
            ),
            _ => {}
        }
        // Every event also in braid's namespace, with the trace's own fields.
        let mut fields = String::new();
        ev.write_fields(&mut fields);
        record(
            &format!("sctp:{}", ev.name()),
            fields.trim_start_matches(','),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::PathId;
    use std::time::Duration;

    /// Every JSON-SEQ record of `text`, parsed.
    fn parse(text: &str) -> Vec<serde_json::Value> {
        assert!(text.starts_with('\u{1e}'), "JSON-SEQ records start with RS");
        text.split('\u{1e}')
            .filter(|r| !r.is_empty())
            .map(|r| {
                assert!(r.ends_with('\n'), "a record ends with a line feed: {r}");
                serde_json::from_str(r).unwrap_or_else(|e| panic!("{e}: {r}"))
            })
            .collect()
    }

    #[test]
    fn a_window_change_is_a_metrics_update_and_a_congestion_state_change() {
        let mut f = QlogFile::default();
        let mut out = String::new();
        let at = Instant::from_duration(Duration::from_millis(1500));
        let ev = TraceEvent::Window {
            path: PathId(1),
            cwnd: 20_000,
            ssthresh: 10_000,
            cause: WindowCause::Ack,
            flight: 15_000,
            srtt: Some(Duration::from_millis(40)),
            rttvar: Duration::from_millis(5),
            min_rtt: Some(Duration::from_millis(30)),
            latest_rtt: Some(Duration::from_millis(45)),
            pacing_rate: Some(1_000_000),
        };
        f.records(crate::AssocId(3), at, &ev, &mut out);
        f.records(crate::AssocId(3), at, &ev, &mut out);
        let recs = parse(&out);
        // Header, then per event: metrics, state (first time only), the sctp: record.
        assert_eq!(recs.len(), 1 + 3 + 2, "{out}");
        assert_eq!(recs[0]["qlog_format"], "JSON-SEQ");
        assert_eq!(recs[0]["qlog_version"], "0.3");
        let names: Vec<&str> = recs[1..]
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "recovery:metrics_updated",
                "recovery:congestion_state_updated",
                "sctp:window",
                "recovery:metrics_updated",
                "sctp:window"
            ],
            "the state is written only when it changes"
        );
        let m = &recs[1];
        assert_eq!(m["time"], 1500.0);
        assert_eq!(m["data"]["congestion_window"], 20_000);
        assert_eq!(m["data"]["bytes_in_flight"], 15_000);
        assert_eq!(m["data"]["smoothed_rtt"], 40.0);
        assert_eq!(m["data"]["path_id"], 1);
        assert_eq!(m["data"]["min_rtt"], 30.0);
        assert_eq!(m["data"]["latest_rtt"], 45.0);
        assert_eq!(m["data"]["pacing_rate"], 8_000_000);
        assert_eq!(recs[2]["data"]["new"], "congestion_avoidance");
        assert_eq!(recs[3]["data"]["cause"], "ack");
    }

    #[test]
    fn packets_carry_their_chunks_and_losses_their_rule() {
        let mut f = QlogFile::default();
        let mut out = String::new();
        let at = Instant::from_duration(Duration::from_millis(2));
        let data = ChunkSummary::Data {
            tsn: 7,
            stream: 2,
            len: 1200,
        };
        let sack = ChunkSummary::Sack {
            cum_tsn: 5,
            gaps: vec![(7, 9), (12, 12)],
        };
        for (sent, chunks) in [
            (true, vec![data.clone()]),
            (true, vec![sack.clone(), data]),
            (false, vec![sack, ChunkSummary::Other("HEARTBEAT")]),
        ] {
            let ev = TraceEvent::Packet {
                path: PathId(1),
                sent,
                size: 1250,
                chunks,
            };
            f.records(crate::AssocId(1), at, &ev, &mut out);
        }
        let lost = TraceEvent::FastRetransmit {
            tsn: 6,
            lost_on: PathId(0),
            resent_on: PathId(1),
            rule: LossRule::RackTime,
        };
        f.records(crate::AssocId(1), at, &lost, &mut out);
        let recs = parse(&out);
        let named = |n: &str| -> Vec<&serde_json::Value> {
            recs.iter().filter(|r| r["name"] == n).collect()
        };
        let sent = named("transport:packet_sent");
        assert_eq!(sent.len(), 2);
        assert_eq!(sent[1]["data"]["header"]["packet_number"], 1);
        assert_eq!(sent[0]["data"]["raw"]["length"], 1250);
        assert_eq!(sent[0]["data"]["frames"][0]["tsn"], 7);
        assert_eq!(sent[0]["data"]["frames"][0]["stream_id"], 2);
        let f1 = &sent[1]["data"]["frames"][0];
        assert_eq!(f1["frame_type"], "sack");
        assert_eq!(f1["gap_ranges"], serde_json::json!([[7, 9], [12, 12]]));
        let got = named("transport:packet_received");
        assert_eq!(got[0]["data"]["header"]["packet_number"], 0);
        assert_eq!(got[0]["data"]["frames"][1]["frame_type"], "HEARTBEAT");
        assert_eq!(
            named("sctp:packet_received")[0]["data"]["chunks"][0]["cum_tsn"],
            5
        );
        let l = named("recovery:packet_lost");
        assert_eq!(l[0]["data"]["trigger"], "time_threshold");
        assert_eq!(
            named("sctp:fast_retransmit")[0]["data"]["rule"],
            "rack_time"
        );
    }
}
