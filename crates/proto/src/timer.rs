//! An association's timers in one table keyed by [`Timer`] (RFC 9260 §4, §6.2, §6.3, §8.3,
//! §9.2). Arming, stopping and finding the next deadline are the same for every timer, so a
//! new one (PMTU probe and raise, RFC 8899) is one more variant.
//!
//! The contract with the drivers: after `Association::handle_timeout(now)`,
//! `poll_timeout()` is `None` or later than `now`. A driver sleeps until that instant and
//! needs no guard against a timer that stays due.

use crate::path::PathId;
use crate::time::Instant;

/// One timer of an association.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Timer {
    /// T1-init / T1-cookie: the handshake chunk is sent again (§5.1).
    T1,
    /// T2-shutdown: SHUTDOWN or SHUTDOWN-ACK is sent again (§9.2).
    T2,
    /// T5-shutdown-guard: the shutdown gives up (§9.2).
    T5,
    /// The delayed SACK is due (§6.2).
    DelayedSack,
    /// T3-rtx of a path (§6.3).
    T3(PathId),
    /// A path's heartbeat: the next one is due, or the outstanding one is unanswered (§8.3).
    Heartbeat(PathId),
    /// A path's PLPMTUD probe is unanswered (RFC 8899 §5.1.1 PROBE_TIMER).
    PmtuProbe(PathId),
    /// A path's PLPMTUD searches for a larger PMTU again (RFC 8899 §5.1.1 PMTU_RAISE_TIMER).
    PmtuRaise(PathId),
    /// A path's pacer has a packet's worth of tokens again (`crate::path::pacer`).
    Pacing(PathId),
    /// RACK's reorder timer of a path: a chunk sent before the last delivered one is lost
    /// once its reordering window passes (RFC 8985 §6.2 step 5).
    Rack(PathId),
    /// The tail loss probe timeout (PTO) of a path (RFC 8985 §7.2).
    Tlp(PathId),
}

/// Timers per path: T3-rtx, heartbeat, PMTU probe, PMTU raise, pacing, RACK, TLP.
const PER_PATH: usize = 7;

/// The deadlines of every timer of an association.
#[derive(Debug, Clone, Default)]
pub(crate) struct Timers {
    association: [Option<Instant>; 4],
    /// Per path, in the order of [`PER_PATH`].
    paths: Vec<[Option<Instant>; PER_PATH]>,
}

impl Timers {
    fn slot(&self, t: Timer) -> Option<&Option<Instant>> {
        match t {
            Timer::T1 => Some(&self.association[0]),
            Timer::T2 => Some(&self.association[1]),
            Timer::T5 => Some(&self.association[2]),
            Timer::DelayedSack => Some(&self.association[3]),
            Timer::T3(p) => self.paths.get(p.0 as usize).map(|s| &s[0]),
            Timer::Heartbeat(p) => self.paths.get(p.0 as usize).map(|s| &s[1]),
            Timer::PmtuProbe(p) => self.paths.get(p.0 as usize).map(|s| &s[2]),
            Timer::PmtuRaise(p) => self.paths.get(p.0 as usize).map(|s| &s[3]),
            Timer::Pacing(p) => self.paths.get(p.0 as usize).map(|s| &s[4]),
            Timer::Rack(p) => self.paths.get(p.0 as usize).map(|s| &s[5]),
            Timer::Tlp(p) => self.paths.get(p.0 as usize).map(|s| &s[6]),
        }
    }

    /// The deadline of `t`, if it runs.
    pub(crate) fn get(&self, t: Timer) -> Option<Instant> {
        self.slot(t).copied().flatten()
    }

    /// Whether `t` runs.
    pub(crate) fn is_running(&self, t: Timer) -> bool {
        self.get(t).is_some()
    }

    /// Arms `t` for `at`, or stops it with `None`.
    pub(crate) fn set(&mut self, t: Timer, at: Option<Instant>) {
        let path_slot = |paths: &mut Vec<[Option<Instant>; PER_PATH]>, p: PathId| {
            let i = p.0 as usize;
            if paths.len() <= i {
                paths.resize(i + 1, [None; PER_PATH]);
            }
            i
        };
        match t {
            Timer::T1 => self.association[0] = at,
            Timer::T2 => self.association[1] = at,
            Timer::T5 => self.association[2] = at,
            Timer::DelayedSack => self.association[3] = at,
            Timer::T3(p) => {
                let i = path_slot(&mut self.paths, p);
                self.paths[i][0] = at;
            }
            Timer::Heartbeat(p) => {
                let i = path_slot(&mut self.paths, p);
                self.paths[i][1] = at;
            }
            Timer::PmtuProbe(p) => {
                let i = path_slot(&mut self.paths, p);
                self.paths[i][2] = at;
            }
            Timer::PmtuRaise(p) => {
                let i = path_slot(&mut self.paths, p);
                self.paths[i][3] = at;
            }
            Timer::Pacing(p) => {
                let i = path_slot(&mut self.paths, p);
                self.paths[i][4] = at;
            }
            Timer::Rack(p) => {
                let i = path_slot(&mut self.paths, p);
                self.paths[i][5] = at;
            }
            Timer::Tlp(p) => {
                let i = path_slot(&mut self.paths, p);
                self.paths[i][6] = at;
            }
        }
    }

    /// Stops `t`.
    pub(crate) fn stop(&mut self, t: Timer) {
        self.set(t, None);
    }

    /// Stops every timer of `path`.
    pub(crate) fn stop_path(&mut self, path: PathId) {
        if let Some(s) = self.paths.get_mut(usize::from(path.0)) {
            *s = [None; PER_PATH];
        }
    }

    /// Stops every timer.
    pub(crate) fn stop_all(&mut self) {
        self.association = [None; 4];
        self.paths.iter_mut().for_each(|s| *s = [None; PER_PATH]);
    }

    /// Moves every timer due at `now` to `to`.
    pub(crate) fn defer_due(&mut self, now: Instant, to: Instant) {
        let paths = self.paths.iter_mut().flat_map(|s| s.iter_mut());
        for at in self.association.iter_mut().chain(paths) {
            if at.is_some_and(|t| t <= now) {
                *at = Some(to);
            }
        }
    }

    /// The earliest deadline.
    pub(crate) fn next(&self) -> Option<Instant> {
        let paths = self.paths.iter().flat_map(|s| s.iter());
        self.association
            .iter()
            .chain(paths)
            .flatten()
            .min()
            .copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn next_is_the_earliest_of_every_timer() {
        let mut t = Timers::default();
        assert_eq!(t.next(), None);
        t.set(Timer::T2, Some(at(50)));
        t.set(Timer::Heartbeat(PathId(3)), Some(at(20)));
        t.set(Timer::T3(PathId(1)), Some(at(30)));
        assert_eq!(t.next(), Some(at(20)));
        t.stop(Timer::Heartbeat(PathId(3)));
        assert_eq!(t.next(), Some(at(30)));
        assert!(t.is_running(Timer::T2) && !t.is_running(Timer::T3(PathId(0))));
        t.stop_all();
        assert_eq!(t.next(), None);
    }

    #[test]
    fn defer_moves_only_due_timers() {
        let mut t = Timers::default();
        t.set(Timer::T3(PathId(2)), Some(at(5)));
        t.set(Timer::T1, Some(at(9)));
        t.defer_due(at(5), at(6));
        assert_eq!(t.get(Timer::T3(PathId(2))), Some(at(6)));
        assert_eq!(t.get(Timer::T1), Some(at(9)));
    }
}
