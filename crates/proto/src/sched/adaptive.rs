//! The adaptive stream-to-path mapping (beyond Dreibholz et al., whose §7 leaves a mapping that
//! follows the paths as future work). The algorithm is described in the parent module.

use std::time::Duration;

use super::PathView;
use crate::time::Instant;

/// No path assigned.
const NONE: u16 = u16::MAX;
/// A re-evaluation waits this many of the largest smoothed RTTs (hysteresis in time).
const EPOCH_RTTS: u32 = 4;
/// Lower bound of the re-evaluation interval (bounds the work on very short RTTs).
const MIN_EPOCH: Duration = Duration::from_millis(10);
/// RTT assumed when no usable path has measured one.
const DEFAULT_SRTT: Duration = Duration::from_millis(100);
/// A stream moves only if another path's cost is lower by more than this fraction of it
/// (hysteresis in value).
const HYSTERESIS: f64 = 0.25;
/// Smallest load a stream is charged with, bytes (about one full DATA chunk), so that idle
/// but known streams are still spread rather than all piled on one path.
const MIN_LOAD: u64 = 1200;

/// What the mapper estimates of one path at the last evaluation.
#[derive(Debug, Clone, Copy)]
struct PathEst {
    usable: bool,
    /// cwnd / srtt, bytes per second.
    rate: f64,
    /// srtt / 2, seconds (one-way delay estimate).
    delay: f64,
    /// Bytes of stream load assigned to the path.
    load: f64,
}

impl PathEst {
    /// Estimated time until `extra` more bytes put on this path arrive: one-way delay plus
    /// draining the load already assigned and `extra` at the path's rate.
    fn cost(&self, extra: f64) -> f64 {
        self.delay + (self.load + extra) / self.rate
    }
}

/// What the mapper knows of one stream.
#[derive(Debug, Clone, Copy)]
struct StreamEst {
    /// Path the stream is mapped to (`NONE`: not placed, falls back to stream % paths).
    path: u16,
    /// Path to move to at the next message boundary (`NONE`: no move pending).
    moving: u16,
    /// Bytes sent since the last evaluation.
    recent: u64,
    /// Smoothed bytes sent per evaluation interval.
    load: u64,
    /// Bytes queued, not yet sent (an estimate: reset when the stream empties).
    queued: u64,
    /// In `Adaptive::tracked`.
    tracked: bool,
}

impl Default for StreamEst {
    fn default() -> Self {
        Self {
            path: NONE,
            moving: NONE,
            recent: 0,
            load: 0,
            queued: 0,
            tracked: false,
        }
    }
}

/// State of the adaptive mapping.
#[derive(Debug, Default)]
pub(super) struct Adaptive {
    streams: Vec<StreamEst>,
    /// Streams the mapper places (those with load, queued data or a path); the evaluation
    /// walks this list, not every stream id.
    tracked: Vec<u16>,
    est: Vec<PathEst>,
    last_eval: Option<Instant>,
    /// Reused by the evaluation: (load, stream).
    scratch: Vec<(u64, u16)>,
}

impl Adaptive {
    /// The estimates of `stream`, created on first use.
    fn stream(&mut self, stream: u16) -> &mut StreamEst {
        let i = stream as usize;
        if self.streams.len() <= i {
            self.streams.resize(i + 1, StreamEst::default());
        }
        &mut self.streams[i]
    }

    /// Adds `stream` to the streams the evaluation places.
    fn track(&mut self, stream: u16) {
        let st = self.stream(stream);
        if !st.tracked {
            st.tracked = true;
            self.tracked.push(stream);
        }
    }

    /// The path `stream` is mapped to, if it has been placed.
    pub(super) fn path(&self, stream: u16) -> Option<u16> {
        self.streams
            .get(stream as usize)
            .map(|s| s.path)
            .filter(|p| *p != NONE)
    }

    /// A message of `len` bytes was queued on `stream`; a new stream is placed at once on
    /// the path where it would arrive soonest under the last estimates.
    pub(super) fn on_push(&mut self, stream: u16, len: usize) {
        self.track(stream);
        let st = self.stream(stream);
        st.queued += len as u64;
        if st.path != NONE {
            return;
        }
        let w = (len as u64).max(MIN_LOAD) as f64;
        if let Some(best) = self.best(w) {
            self.est[best].load += w;
            self.streams[stream as usize].path = best as u16;
        }
    }

    /// `bytes` of `stream` went into a chunk.
    pub(super) fn on_sent(&mut self, stream: u16, bytes: usize) {
        let st = self.stream(stream);
        st.recent += bytes as u64;
        st.queued = st.queued.saturating_sub(bytes as u64);
    }

    /// A message of `stream` is done: a pending move happens now, at the boundary, so a
    /// message never straddles two paths (its fragments need consecutive TSNs).
    pub(super) fn on_message_done(&mut self, stream: u16, more: bool) {
        let st = self.stream(stream);
        if st.moving != NONE {
            st.path = st.moving;
            st.moving = NONE;
        }
        if !more {
            st.queued = 0;
        }
    }

    /// The discipline was switched to: `streams` have queued messages (their byte counts
    /// are unknown, so they start with the minimum load) and the next path update
    /// re-evaluates at once.
    pub(super) fn start(&mut self, streams: impl IntoIterator<Item = u16>) {
        for s in &mut self.streams {
            s.queued = 0;
        }
        for s in streams {
            self.track(s);
        }
        self.last_eval = None;
    }

    /// Forgets every stream at or above `n`.
    pub(super) fn retain_below(&mut self, n: u16) {
        self.streams.truncate(n as usize);
        self.tracked.retain(|s| *s < n);
    }

    /// The usable path where `w` more bytes would arrive soonest (ties: lower index).
    fn best(&self, w: f64) -> Option<usize> {
        let mut best: Option<(usize, f64)> = None;
        for (i, e) in self.est.iter().enumerate().filter(|(_, e)| e.usable) {
            let c = e.cost(w);
            if best.is_none_or(|(_, b)| c < b) {
                best = Some((i, c));
            }
        }
        best.map(|(i, _)| i)
    }

    /// Whether the mapping should be recomputed now: first time, a path changed
    /// usability (failover must not wait), or `EPOCH_RTTS` RTTs passed.
    fn due(&self, now: Instant, paths: &[PathView]) -> bool {
        let Some(last) = self.last_eval else {
            return true;
        };
        if paths.len() != self.est.len()
            || paths
                .iter()
                .zip(&self.est)
                .any(|(p, e)| p.usable != e.usable)
        {
            return true;
        }
        let rtt = paths
            .iter()
            .filter(|p| p.usable)
            .filter_map(|p| p.srtt)
            .max()
            .unwrap_or(DEFAULT_SRTT);
        now - last >= (rtt * EPOCH_RTTS).max(MIN_EPOCH)
    }

    /// New path measurements; re-evaluates the mapping if due. `pending` holds the queued
    /// message counts per stream and `active` the stream whose message is being cut.
    pub(super) fn on_paths(
        &mut self,
        now: Instant,
        paths: &[PathView],
        pending: &[u32],
        active: Option<u16>,
    ) {
        if self.due(now, paths) {
            self.evaluate(now, paths, pending, active);
        }
    }

    /// Recomputes the estimates and the map (see the parent module for the algorithm).
    fn evaluate(&mut self, now: Instant, paths: &[PathView], pending: &[u32], active: Option<u16>) {
        self.last_eval = Some(now);
        // An unmeasured path is assumed as slow as the slowest measured one: it gets a
        // share by its cwnd but is not preferred for delay until it has shown its RTT.
        let worst = paths
            .iter()
            .filter(|p| p.usable)
            .filter_map(|p| p.srtt)
            .max()
            .unwrap_or(DEFAULT_SRTT);
        self.est.clear();
        self.est.extend(paths.iter().map(|p| {
            let srtt = p
                .srtt
                .unwrap_or(worst)
                .as_secs_f64()
                .max(Duration::from_micros(1).as_secs_f64());
            PathEst {
                usable: p.usable,
                rate: p.cwnd.max(1) as f64 / srtt,
                delay: srtt / 2.0,
                load: 0.0,
            }
        }));
        if !self.est.iter().any(|e| e.usable) {
            // Nothing to map to; `allows` lets streams of unusable paths go anywhere.
            return;
        }
        // Fold this interval's bytes into the smoothed load and drop idle streams.
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let streams = &mut self.streams;
        self.tracked.retain(|&s| {
            let st = &mut streams[s as usize];
            st.load = (st.load + st.recent) / 2;
            st.recent = 0;
            let queued = pending.get(s as usize).is_some_and(|n| *n > 0);
            if st.load == 0 && st.queued == 0 && !queued && active != Some(s) {
                *st = StreamEst::default();
                return false;
            }
            scratch.push((st.load.max(st.queued), s));
            true
        });
        // Heaviest first (longest-processing-time greedy): each stream goes where its
        // data would arrive soonest given what was placed before it.
        scratch.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        for &(w, s) in &scratch {
            let w = w.max(MIN_LOAD) as f64;
            let Some(best) = self.best(w) else { break };
            let st = self.streams[s as usize];
            let cur = if st.moving != NONE {
                st.moving
            } else {
                st.path
            };
            let keep = self.est.get(cur as usize).is_some_and(|e| {
                e.usable && e.cost(w) <= self.est[best].cost(w) * (1.0 + HYSTERESIS)
            });
            let choice = if keep { cur } else { best as u16 };
            self.est[choice as usize].load += w;
            let st = &mut self.streams[s as usize];
            if choice == st.path {
                st.moving = NONE;
            } else if active == Some(s) {
                st.moving = choice;
            } else {
                st.path = choice;
                st.moving = NONE;
            }
        }
        self.scratch = scratch;
    }
}
