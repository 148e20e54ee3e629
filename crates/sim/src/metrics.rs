//! What a run measures, over the window [warm-up, end]: goodput, message delay, the core's
//! retransmission counters, the simulator's ground truth about every DATA chunk, buffer
//! occupancy, and per-path figures. [`Metrics::finish`] turns it into the named metrics of
//! [`crate::run::RunResult`].
//!
//! The metrics (Mbit/s = 10^6 bit/s; the window is [warm-up, end of the run]):
//!
//! * `goodput_mbps`, `stream{N}_goodput_mbps`: user bytes read by the receiving application
//!   in the window, per second; `messages_delivered`.
//! * `msg_delay_ms_{mean,median,p99}` and per stream: from `send` accepting a message to the
//!   receiving application reading it, for messages read in the window (p99: nearest rank).
//! * `retransmissions`, `fast_retransmissions`, `timeouts`: the sender core's path counters,
//!   difference between the end and the warm-up.
//! * `retransmissions_wire`, `unnecessary_retransmissions`: ground truth from every DATA
//!   chunk the sender emitted in the window (see [`TsnTracker`]).
//! * `spurious_fast_retransmits`, `spurious_timeouts`: the sender core's own count of fast
//!   retransmits and T3 expiries it found spurious (Ladha et al., `spurious_detection`) over the
//!   window, from its `AssociationStats`.
//! * `highest_tsn_sent`: how far the sender's highest TSN sent moved in the window, in DATA
//!   chunks (without a warm-up: counted from its first TSN, which counts) — Ladha et al. §6's
//!   goodput, "the highest TSN an SCTP sender is able to send within a fixed interval" (with
//!   one message per packet, packets). It counts data still in flight at the end and data
//!   sent but later lost, as the paper's does; `tsns_acked` counts the chunks the receiver
//!   acknowledged cumulatively in the window (in-sequence delivery to the receiver).
//! * `send_buffer_bytes_mean` (queued + unacknowledged at the sender) and
//!   `recv_buffer_bytes_mean` (received and unread at the receiver): means of samples every
//!   [`SAMPLE_INTERVAL`]; `send_buffer_limit_bytes` and `recv_window_bytes`: the largest
//!   send buffer and receive window buffer autotuning reached in those samples.
//! * `path_state_changes` (reported to either application), `association_closed` (0/1).
//! * `app_messages_missing`, `app_messages_duplicated`: over the whole run, messages of an
//!   ordered stream the receiving application skipped (a later one arrived first) or got
//!   twice (or out of order), from the per-stream sequence number in each message.
//! * `recv_window_drops`: over the whole run, DATA chunks the receiver discarded for lack of
//!   room although they fitted the window it last advertised (RFC 9260 §6.2; 0 unless the
//!   sender's chunks shrank far below the size the advertisement assumed).
//! * `app_messages_corrupt`: over the whole run, messages the receiving application got
//!   with another length or other bytes than were sent (each message's length and CRC32c,
//!   see [`crate::traffic`]). These three make [`crate::run::RunResult::check_integrity`].
//! * `transfer_time_s` (from the start of the run to the last byte read; NaN if it did not
//!   complete), `transfer_duration_s` (from the moment the sender connects — later than the
//!   start with `start_jitter` — to the last byte read: the download time, handshake
//!   included) and `transfer_complete` (0/1), when the traffic has transfers.
//! * Per path `path_{NAME}_`: `goodput_mbps` (user data of DATA chunks that reached B over
//!   this path, each TSN counted once, on its first arrival — retransmissions and duplicates
//!   add nothing); `cwnd_bytes` and `srtt_ms` (sampled means), `pmtu` (the core's path MTU
//!   plus IP/UDP headers) and `retransmissions` (DATA chunks the sender core retransmitted
//!   on this path in the window) and `limited_cwnd`, `limited_peer_window`,
//!   `limited_send_buffer`, `limited_application`, `limited_share` (LS-SCTP's window share
//!   or Eq. (1)) (the share of the window in which new data on the path waited for that,
//!   `PathStats::limited`) for the paths the core uses;
//!   `drops_queue`, `drops_loss`,
//!   `drops_failure`, `mtu_drops` (and `icmp_too_big` where enabled), `displaced`,
//!   `spiked` (packets held by a delay spike), `utilization` of the forward link,
//!   `reverse_utilization` of the reverse link (the SACKs' way back).
//! * Dumbbell: `bottleneck_drops_queue`, `bottleneck_utilization`, `competing_goodput_mbps`,
//!   `competing{K}_goodput_mbps`.
//!
//! Undefined values (a delay percentile when no message was delivered, a transfer that did
//! not complete) are NaN.

use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

use braid_proto::{Association, AssociationStats, Instant, PathStats};

use crate::link::LinkStats;
use crate::net::{DataCopies, path_of};
use crate::traffic::Delivery;

/// Interval between samples of occupancies and windows (for their time averages).
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(10);

/// Ground truth of one TSN of the measured association.
#[derive(Debug, Default)]
struct TsnRecord {
    /// Transmissions so far.
    tx: u16,
    /// Copies in the network.
    in_flight: u16,
    /// Lowest transmission number among the copies that reached B (0: none yet).
    first_arrived: u16,
    /// Retransmissions: (transmission number, send time).
    rtx: Vec<(u16, Instant)>,
}

/// Follows every DATA chunk of the measured association through the network.
///
/// A retransmission is *unnecessary* when an earlier transmission of the same TSN reaches
/// the receiver, before or after the retransmission was sent (Ladha et al. §6: retransmissions
/// of data that was not lost, e.g. spurious timeouts during a delay spike). A TSN's record
/// is settled once no copy of it is in the network and one has arrived (or the receiver's
/// cumulative ack passed it); a later retransmission of a settled TSN is unnecessary.
#[derive(Debug)]
pub struct TsnTracker {
    /// TSN of `recs[0]`, once the first DATA chunk was seen.
    base: Option<u32>,
    recs: VecDeque<TsnRecord>,
    cum_acked: Option<u32>,
    /// The first TSN sent.
    first: Option<u32>,
    /// The highest TSN sent so far.
    highest: Option<u32>,
    warmup: Instant,
    /// Retransmitted DATA chunks seen leaving the sender in the window.
    pub retransmissions: u64,
    /// Of those, the unnecessary ones (counted as records settle; final after `finish`).
    pub unnecessary: u64,
}

fn tsn_le(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) >= 0
}

impl TsnTracker {
    /// A tracker counting from `warmup` on.
    pub fn new(warmup: Instant) -> Self {
        Self {
            base: None,
            recs: VecDeque::new(),
            cum_acked: None,
            first: None,
            highest: None,
            warmup,
            retransmissions: 0,
            unnecessary: 0,
        }
    }

    fn offset(&self, tsn: u32) -> Option<i64> {
        self.base.map(|b| i64::from(tsn.wrapping_sub(b) as i32))
    }

    /// The first TSN sent, the highest sent and the highest cumulative ack, as far as seen.
    pub fn marks(&self) -> (Option<u32>, Option<u32>, Option<u32>) {
        (self.first, self.highest, self.cum_acked)
    }

    /// A DATA chunk with `tsn` leaves the sender at `now`; returns its transmission number.
    pub fn on_send(&mut self, now: Instant, tsn: u32) -> u16 {
        self.first.get_or_insert(tsn);
        if self.highest.is_none_or(|h| tsn_le(h, tsn)) {
            self.highest = Some(tsn);
        }
        let base = *self.base.get_or_insert(tsn);
        let off = i64::from(tsn.wrapping_sub(base) as i32);
        let counted = now >= self.warmup;
        if off < 0 {
            // Settled already: an earlier copy arrived.
            if counted {
                self.retransmissions += 1;
                self.unnecessary += 1;
            }
            return u16::MAX;
        }
        let off = off as usize;
        if off >= self.recs.len() {
            self.recs.resize_with(off + 1, TsnRecord::default);
        }
        let r = &mut self.recs[off];
        r.tx = r.tx.saturating_add(1);
        r.in_flight = r.in_flight.saturating_add(1);
        if r.tx > 1 {
            if counted {
                self.retransmissions += 1;
            }
            r.rtx.push((r.tx, now));
        }
        r.tx
    }

    /// Copy `tx` of `tsn` reached the receiver; returns whether it is the first to.
    pub fn on_arrive(&mut self, tsn: u32, tx: u16) -> bool {
        let Some(off) = self.offset(tsn) else {
            return false;
        };
        if off < 0 {
            return false;
        }
        let Some(r) = self.recs.get_mut(off as usize) else {
            return false;
        };
        r.in_flight = r.in_flight.saturating_sub(1);
        let first = r.first_arrived == 0;
        if first || tx < r.first_arrived {
            r.first_arrived = tx;
        }
        self.settle();
        first
    }

    /// Copy `tx` of `tsn` was dropped in the network.
    pub fn on_drop(&mut self, tsn: u32) {
        if let Some(off) = self.offset(tsn)
            && off >= 0
            && let Some(r) = self.recs.get_mut(off as usize)
        {
            r.in_flight = r.in_flight.saturating_sub(1);
            self.settle();
        }
    }

    /// The sender received a SACK with this cumulative TSN ack.
    pub fn on_cum_ack(&mut self, cum: u32) {
        if self.cum_acked.is_none_or(|c| tsn_le(c, cum)) {
            self.cum_acked = Some(cum);
        }
        self.settle();
    }

    fn settle(&mut self) {
        while let (Some(base), Some(r)) = (self.base, self.recs.front()) {
            let done = r.in_flight == 0
                && (r.first_arrived != 0 || self.cum_acked.is_some_and(|c| tsn_le(base, c)));
            if !done {
                break;
            }
            if let Some(r) = self.recs.pop_front() {
                self.account(&r);
            }
            self.base = Some(base.wrapping_add(1));
        }
    }

    fn account(&mut self, r: &TsnRecord) {
        if r.first_arrived == 0 {
            return;
        }
        for &(n, t) in &r.rtx {
            if n > r.first_arrived && t >= self.warmup {
                self.unnecessary += 1;
            }
        }
    }

    /// Settles every record (end of the run).
    pub fn finish(&mut self) {
        while let Some(r) = self.recs.pop_front() {
            self.account(&r);
        }
    }
}

/// Deliveries of one stream.
#[derive(Debug, Default)]
struct StreamStats {
    bytes: u64,
    messages: u64,
    /// Message delays in milliseconds.
    delays: Vec<f64>,
}

/// Running sums of one path's sampled values.
#[derive(Debug, Default, Clone)]
struct PathSamples {
    cwnd: f64,
    srtt_ms: f64,
    srtt_n: u64,
    n: u64,
}

/// The collector of a run.
#[derive(Debug)]
pub struct Metrics {
    warmup: Instant,
    /// DATA ground truth.
    pub tsn: TsnTracker,
    streams: BTreeMap<u16, StreamStats>,
    /// First arrivals of DATA payload at B per path, in the window.
    path_bytes: Vec<u64>,
    competing_bytes: Vec<u64>,
    samples: u64,
    send_buffered: f64,
    recv_buffered: f64,
    /// The largest send buffer limit and receive window autotuning reached (samples).
    send_limit_max: usize,
    recv_window_max: usize,
    path_samples: Vec<PathSamples>,
    /// Path state changes reported to A's and B's applications in the window.
    pub path_state_changes: u64,
    core_at_warmup: Vec<(usize, PathStats)>,
    assoc_at_warmup: AssociationStats,
    /// The highest TSN sent and the cumulative ack at the warm-up.
    tsn_at_warmup: (Option<u32>, Option<u32>),
    links_at_warmup: Vec<LinkStats>,
}

/// What [`Metrics::finish`] needs besides the collected values.
#[derive(Debug)]
pub struct Final<'a> {
    /// End of the window.
    pub end: Instant,
    /// Path names.
    pub path_names: Vec<&'a str>,
    /// Link stats at the end, indexed by link.
    pub links: Vec<LinkStats>,
    /// Forward and reverse link of each path.
    pub path_links: Vec<(usize, usize)>,
    /// The bottleneck's forward link, in a dumbbell.
    pub bottleneck: Option<usize>,
    /// Which paths' forward links answer oversize packets with "too big".
    pub icmp_too_big: Vec<bool>,
    /// The sender's association.
    pub sender: Option<&'a Association>,
    /// The receiver's association.
    pub receiver: Option<&'a Association>,
    /// IP (and UDP) header bytes in front of each SCTP packet.
    pub header_bytes: usize,
    /// Transfers: `Some(completion)` if the measured traffic has any.
    pub transfer: Option<Option<Instant>>,
    /// When the measured association's sender connected.
    pub start: Instant,
    /// The measured association closed before the end.
    pub closed: bool,
    /// Messages the receiving application never got on an ordered stream (whole run).
    pub app_missing: u64,
    /// Messages it got twice or out of order on an ordered stream (whole run).
    pub app_duplicated: u64,
    /// Messages it got with a wrong length or content (whole run).
    pub app_corrupt: u64,
}

/// Mbit/s of `bytes` over `secs`, NaN for no time.
pub(crate) fn mbps(bytes: u64, secs: f64) -> f64 {
    if secs > 0.0 {
        bytes as f64 * 8.0 / secs / 1e6
    } else {
        f64::NAN
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Mean, median and 99th percentile (nearest rank) of `v`, NaN if empty. Reorders `v`.
pub fn summary(v: &mut [f64]) -> (f64, f64, f64) {
    if v.is_empty() {
        return (f64::NAN, f64::NAN, f64::NAN);
    }
    let n = v.len();
    let mean = v.iter().sum::<f64>() / n as f64;
    let mut nth = |k: usize| *v.select_nth_unstable_by(k, f64::total_cmp).1;
    let median = if n % 2 == 1 {
        nth(n / 2)
    } else {
        (nth(n / 2 - 1) + nth(n / 2)) / 2.0
    };
    let p99 = nth(((0.99 * n as f64).ceil() as usize).clamp(1, n) - 1);
    (mean, median, p99)
}

impl Metrics {
    /// A collector for `paths` paths and `competing` competing flows, measuring from
    /// `warmup` on.
    pub fn new(warmup: Instant, paths: usize, competing: usize) -> Self {
        Self {
            warmup,
            tsn: TsnTracker::new(warmup),
            streams: BTreeMap::new(),
            path_bytes: vec![0; paths],
            competing_bytes: vec![0; competing],
            samples: 0,
            send_buffered: 0.0,
            recv_buffered: 0.0,
            send_limit_max: 0,
            recv_window_max: 0,
            path_samples: vec![PathSamples::default(); paths],
            path_state_changes: 0,
            core_at_warmup: Vec::new(),
            assoc_at_warmup: AssociationStats::default(),
            tsn_at_warmup: (None, None),
            links_at_warmup: Vec::new(),
        }
    }

    /// Whether `t` is in the window (the end is never passed: the run stops there).
    pub fn counts(&self, t: Instant) -> bool {
        t >= self.warmup
    }

    /// The receiving application of the measured association read a message.
    pub fn on_delivery(&mut self, now: Instant, d: &Delivery) {
        if !self.counts(now) {
            return;
        }
        let s = self.streams.entry(d.stream).or_default();
        s.bytes += d.bytes as u64;
        s.messages += 1;
        if let Some(delay) = d.delay {
            s.delays.push(ms(delay));
        }
    }

    /// A competing flow's receiver read `bytes`.
    pub fn on_competing_delivery(&mut self, now: Instant, flow: usize, bytes: usize) {
        if self.counts(now)
            && let Some(b) = self.competing_bytes.get_mut(flow)
        {
            *b += bytes as u64;
        }
    }

    /// A datagram with DATA of the measured association reached B over `path`.
    pub fn on_data_arrival(&mut self, now: Instant, path: Option<usize>, data: &DataCopies) {
        let counts = self.counts(now);
        for c in data.iter() {
            if self.tsn.on_arrive(c.tsn, c.tx)
                && counts
                && let Some(b) = path.and_then(|p| self.path_bytes.get_mut(p))
            {
                *b += u64::from(c.len);
            }
        }
    }

    /// Start of the window: remembers the counters to subtract at the end.
    pub fn snapshot_warmup(&mut self, sender: Option<&Association>, links: Vec<LinkStats>) {
        self.core_at_warmup = core_paths(sender);
        self.assoc_at_warmup = sender.map(Association::stats).unwrap_or_default();
        let (_, highest, cum) = self.tsn.marks();
        self.tsn_at_warmup = (highest, cum);
        self.links_at_warmup = links;
    }

    /// One sample of the sender's windows and buffers and the receiver's buffer.
    pub fn sample(&mut self, sender: Option<&Association>, receiver: Option<&Association>) {
        self.samples += 1;
        if let Some(a) = sender {
            self.send_buffered += a.send_buffered() as f64;
            self.send_limit_max = self.send_limit_max.max(a.send_buffer_limit());
            for p in a.paths() {
                if let Some(s) = path_of(p.remote.ip()).and_then(|i| self.path_samples.get_mut(i)) {
                    s.n += 1;
                    s.cwnd += p.cwnd as f64;
                    if let Some(r) = p.srtt {
                        s.srtt_ms += ms(r);
                        s.srtt_n += 1;
                    }
                }
            }
        }
        if let Some(b) = receiver {
            self.recv_buffered += b.recv_buffered() as f64;
            self.recv_window_max = self.recv_window_max.max(b.recv_window());
        }
    }

    /// The named metrics.
    pub fn finish(mut self, f: Final<'_>) -> BTreeMap<String, f64> {
        let mut m = BTreeMap::new();
        let secs = (f.end - self.warmup).as_secs_f64();
        self.tsn.finish();
        // Goodput and delay, total and per stream.
        let mut all = Vec::new();
        let mut bytes = 0;
        let mut messages = 0;
        for (id, s) in &mut self.streams {
            bytes += s.bytes;
            messages += s.messages;
            m.insert(format!("stream{id}_goodput_mbps"), mbps(s.bytes, secs));
            all.extend_from_slice(&s.delays);
            let (mean, median, p99) = summary(&mut s.delays);
            m.insert(format!("stream{id}_msg_delay_ms_mean"), mean);
            m.insert(format!("stream{id}_msg_delay_ms_median"), median);
            m.insert(format!("stream{id}_msg_delay_ms_p99"), p99);
        }
        m.insert("goodput_mbps".into(), mbps(bytes, secs));
        m.insert("messages_delivered".into(), messages as f64);
        let (mean, median, p99) = summary(&mut all);
        m.insert("msg_delay_ms_mean".into(), mean);
        m.insert("msg_delay_ms_median".into(), median);
        m.insert("msg_delay_ms_p99".into(), p99);
        // The core's counters, over the window.
        let now = core_paths(f.sender);
        let before = |i: usize| {
            self.core_at_warmup
                .iter()
                .find(|(p, _)| *p == i)
                .map(|(_, s)| *s)
                .unwrap_or_default()
        };
        let (mut rtx, mut fast, mut timeouts) = (0, 0, 0);
        for (i, s) in &now {
            let b = before(*i);
            rtx += s.retransmissions - b.retransmissions;
            fast += s.fast_retransmissions - b.fast_retransmissions;
            timeouts += s.timeouts - b.timeouts;
        }
        m.insert("retransmissions".into(), rtx as f64);
        m.insert("fast_retransmissions".into(), fast as f64);
        m.insert("timeouts".into(), timeouts as f64);
        m.insert(
            "retransmissions_wire".into(),
            self.tsn.retransmissions as f64,
        );
        m.insert(
            "unnecessary_retransmissions".into(),
            self.tsn.unnecessary as f64,
        );
        let a = f.sender.map(Association::stats).unwrap_or_default();
        let w = self.assoc_at_warmup;
        m.insert(
            "spurious_fast_retransmits".into(),
            a.spurious_fast_retransmits
                .saturating_sub(w.spurious_fast_retransmits) as f64,
        );
        m.insert(
            "spurious_timeouts".into(),
            a.spurious_timeouts.saturating_sub(w.spurious_timeouts) as f64,
        );
        // TSNs moved past in the window: from the mark at the warm-up, or from just below
        // the first TSN sent if nothing was sent (or acknowledged) before it.
        let (first, highest, cum) = self.tsn.marks();
        let moved = |end: Option<u32>, at_warmup: Option<u32>| match (end, first) {
            (Some(e), Some(f)) => {
                let base = at_warmup.unwrap_or(f.wrapping_sub(1));
                f64::from(e.wrapping_sub(base) as i32).max(0.0)
            }
            _ => 0.0,
        };
        m.insert(
            "highest_tsn_sent".into(),
            moved(highest, self.tsn_at_warmup.0),
        );
        m.insert("tsns_acked".into(), moved(cum, self.tsn_at_warmup.1));
        let n = self.samples.max(1) as f64;
        m.insert("send_buffer_bytes_mean".into(), self.send_buffered / n);
        m.insert("recv_buffer_bytes_mean".into(), self.recv_buffered / n);
        m.insert("send_buffer_limit_bytes".into(), self.send_limit_max as f64);
        m.insert("recv_window_bytes".into(), self.recv_window_max as f64);
        m.insert("path_state_changes".into(), self.path_state_changes as f64);
        m.insert("association_closed".into(), f64::from(u8::from(f.closed)));
        m.insert("app_messages_missing".into(), f.app_missing as f64);
        m.insert("app_messages_duplicated".into(), f.app_duplicated as f64);
        m.insert("app_messages_corrupt".into(), f.app_corrupt as f64);
        let drops = f.receiver.map_or(0, |r| r.stats().recv_window_drops);
        m.insert("recv_window_drops".into(), drops as f64);
        if let Some(done) = f.transfer {
            m.insert(
                "transfer_time_s".into(),
                done.map_or(f64::NAN, |t| t.since_epoch().as_secs_f64()),
            );
            m.insert(
                "transfer_duration_s".into(),
                done.map_or(f64::NAN, |t| (t - f.start).as_secs_f64()),
            );
            m.insert(
                "transfer_complete".into(),
                f64::from(u8::from(done.is_some())),
            );
        }
        // Per path.
        // A removed path's metrics too, from its counters as it was removed.
        let infos: Vec<_> = f
            .sender
            .map(|a| a.paths().into_iter().chain(a.removed_paths()).collect())
            .unwrap_or_default();
        // A link's busy share of the window.
        let busy_share = |d: &LinkStats| {
            if secs > 0.0 {
                d.busy.as_secs_f64() / secs
            } else {
                f64::NAN
            }
        };
        let delta = |l: usize| -> LinkStats {
            let e = f.links.get(l).copied().unwrap_or_default();
            let b = self.links_at_warmup.get(l).copied().unwrap_or_default();
            LinkStats {
                drops_queue: e.drops_queue - b.drops_queue,
                drops_loss: e.drops_loss - b.drops_loss,
                drops_mtu: e.drops_mtu - b.drops_mtu,
                drops_failure: e.drops_failure - b.drops_failure,
                displaced: e.displaced - b.displaced,
                spiked: e.spiked - b.spiked,
                spikes: e.spikes - b.spikes,
                busy: e.busy.saturating_sub(b.busy),
                ..e
            }
        };
        for (i, name) in f.path_names.iter().enumerate() {
            let p = format!("path_{name}_");
            m.insert(format!("{p}goodput_mbps"), mbps(self.path_bytes[i], secs));
            let s = &self.path_samples[i];
            if let Some(info) = infos.iter().find(|x| path_of(x.remote.ip()) == Some(i)) {
                let avg = |sum: f64, k: u64| if k > 0 { sum / k as f64 } else { f64::NAN };
                m.insert(format!("{p}cwnd_bytes"), avg(s.cwnd, s.n));
                m.insert(format!("{p}srtt_ms"), avg(s.srtt_ms, s.srtt_n));
                m.insert(format!("{p}pmtu"), (info.mtu + f.header_bytes) as f64);
                let rtx = now
                    .iter()
                    .find(|(j, _)| *j == i)
                    .map_or(0, |(_, s)| s.retransmissions - before(i).retransmissions);
                m.insert(format!("{p}retransmissions"), rtx as f64);
                // Which limit held the path's new data back, as a share of the window.
                if let Some((_, s)) = now.iter().find(|(j, _)| *j == i) {
                    let (a, b) = (s.limited, before(i).limited);
                    for (k, e, b) in [
                        ("cwnd", a.cwnd, b.cwnd),
                        ("peer_window", a.peer_window, b.peer_window),
                        ("send_buffer", a.send_buffer, b.send_buffer),
                        ("application", a.application, b.application),
                        ("share", a.share, b.share),
                    ] {
                        let share = e.saturating_sub(b).as_secs_f64() / secs.max(1e-9);
                        m.insert(format!("{p}limited_{k}"), share);
                    }
                }
            }
            if let Some(&(fwd, rev)) = f.path_links.get(i) {
                // The reverse link carries the SACKs: a busy one delays every ack.
                m.insert(format!("{p}reverse_utilization"), busy_share(&delta(rev)));
                let d = delta(fwd);
                m.insert(format!("{p}drops_queue"), d.drops_queue as f64);
                m.insert(format!("{p}drops_loss"), d.drops_loss as f64);
                m.insert(format!("{p}drops_failure"), d.drops_failure as f64);
                m.insert(format!("{p}mtu_drops"), d.drops_mtu as f64);
                m.insert(format!("{p}displaced"), d.displaced as f64);
                m.insert(format!("{p}spiked"), d.spiked as f64);
                if f.icmp_too_big.get(i).copied().unwrap_or(false) {
                    m.insert(format!("{p}icmp_too_big"), d.drops_mtu as f64);
                }
                m.insert(format!("{p}utilization"), busy_share(&d));
            }
        }
        if let Some(b) = f.bottleneck {
            let d = delta(b);
            m.insert("bottleneck_drops_queue".into(), d.drops_queue as f64);
            m.insert("bottleneck_utilization".into(), busy_share(&d));
        }
        if !self.competing_bytes.is_empty() {
            let mut total = 0;
            for (k, b) in self.competing_bytes.iter().enumerate() {
                total += b;
                m.insert(format!("competing{k}_goodput_mbps"), mbps(*b, secs));
            }
            m.insert("competing_goodput_mbps".into(), mbps(total, secs));
        }
        m
    }
}

/// The sender's path counters, keyed by simulated path.
fn core_paths(a: Option<&Association>) -> Vec<(usize, PathStats)> {
    a.map(|a| {
        a.paths()
            .into_iter()
            .chain(a.removed_paths())
            .filter_map(|p| path_of(p.remote.ip()).map(|i| (i, p.stats)))
            .collect()
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Instant {
        Instant::from_duration(Duration::from_millis(ms))
    }

    #[test]
    fn summary_statistics() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        let (mean, median, p99) = summary(&mut v);
        assert_eq!((mean, median, p99), (50.5, 50.5, 99.0));
        assert!(summary(&mut []).0.is_nan());
    }

    #[test]
    fn unnecessary_retransmissions_are_those_of_data_that_arrived() {
        let mut k = TsnTracker::new(Instant::ZERO);
        // TSN 10: lost, retransmitted, arrives: necessary.
        assert_eq!(k.on_send(t(0), 10), 1);
        k.on_drop(10);
        assert_eq!(k.on_send(t(1), 10), 2);
        assert!(k.on_arrive(10, 2));
        // TSN 11: delayed (spike), retransmitted, both arrive: one unnecessary.
        assert_eq!(k.on_send(t(0), 11), 1);
        assert_eq!(k.on_send(t(2), 11), 2);
        assert!(k.on_arrive(11, 1));
        assert!(!k.on_arrive(11, 2));
        // TSN 12: retransmission overtakes the original, which arrives later: unnecessary.
        k.on_send(t(0), 12);
        k.on_send(t(2), 12);
        assert!(k.on_arrive(12, 2));
        assert!(!k.on_arrive(12, 1));
        // A retransmission of a settled TSN.
        k.on_send(t(3), 10);
        k.finish();
        assert_eq!(k.retransmissions, 4);
        assert_eq!(k.unnecessary, 3);
    }
}
