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
//! | `window` | `recovery:metrics_updated` (`congestion_window`, `ssthresh`, `bytes_in_flight`, `smoothed_rtt`, `rtt_variance`, `path_id`) and, when the state it implies moves, `recovery:congestion_state_updated` (`slow_start`, `congestion_avoidance`, `recovery`; `trigger` the window's cause) |
//! | `fast_retransmit` | `recovery:packet_lost` (`trigger`: `fast_retransmit`; the TSN as packet number) |
//! | `t3_expired` | `recovery:loss_timer_updated` (`event_type`: `expired`, `timer_type`: `t3_rtx`) |
//! | `association_state` | `connectivity:connection_state_updated` |
//! | `pmtu_state` | `connectivity:mtu_updated` (`new`, `done`) |
//! | every event | `sctp:` + its trace name, with its trace fields (braid-only namespace) |
//!
//! Not (yet) written: packets sent and received with their chunks, RTT samples between
//! window changes, the pacing rate, which loss rule declared a loss.

use std::fmt::Write as _;

use crate::time::Instant;
use crate::trace::{TraceEvent, WindowCause};

/// The qlog state of one association's file: whether the header was written and each
/// path's congestion state as last written.
#[derive(Debug, Default)]
pub(crate) struct QlogFile {
    started: bool,
    congestion: Vec<Option<&'static str>>,
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
            } => {
                let mut d = format!(
                    "\"path_id\":{},\"congestion_window\":{cwnd},\"ssthresh\":{ssthresh},\
                     \"bytes_in_flight\":{flight},\"rtt_variance\":{:.3}",
                    path.0,
                    rttvar.as_secs_f64() * 1000.0
                );
                if let Some(r) = srtt {
                    let _ = write!(d, ",\"smoothed_rtt\":{:.3}", r.as_secs_f64() * 1000.0);
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
            TraceEvent::FastRetransmit { tsn, lost_on, .. } => record(
                "recovery:packet_lost",
                &format!(
                    "\"header\":{{\"packet_type\":\"1RTT\",\"packet_number\":{tsn}}},\
                     \"trigger\":\"fast_retransmit\",\"path_id\":{}",
                    lost_on.0
                ),
            ),
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
        assert_eq!(recs[2]["data"]["new"], "congestion_avoidance");
        assert_eq!(recs[3]["data"]["cause"], "ack");
    }
}
