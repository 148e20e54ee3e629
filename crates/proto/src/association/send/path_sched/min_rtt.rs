//! Lowest RTT first, Linux MPTCP's classic default scheduler: the next packet goes to the
//! path with the lowest smoothed RTT among those that could send one now (cwnd room among
//! it); a path not yet measured goes first, so it gets measured. Ties go to the path with
//! more cwnd room, then to the lower id.

use std::time::Duration;

use super::{PathScheduler, PathView};
use crate::path::PathId;

/// The minRTT scheduler: stateless.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct MinRtt;

impl PathScheduler for MinRtt {
    fn next(
        &mut self,
        paths: &[PathView],
        ready: &mut dyn FnMut(PathId) -> bool,
    ) -> Option<PathId> {
        // Lower is better: the RTT, then less room (negated).
        let key = |p: &PathView| {
            let room = p.cwnd.saturating_sub(p.flight);
            (p.srtt.unwrap_or(Duration::ZERO), usize::MAX - room)
        };
        let mut best: Option<(&PathView, (Duration, usize))> = None;
        for p in paths {
            let k = key(p);
            if best.is_none_or(|(_, b)| k < b) && ready(p.id) {
                best = Some((p, k));
            }
        }
        best.map(|(p, _)| p.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(id: u16, srtt_ms: Option<u64>, room: usize) -> PathView {
        PathView {
            id: PathId(id),
            srtt: srtt_ms.map(Duration::from_millis),
            cwnd: 10_000,
            flight: 10_000 - room,
            rate: 0.0,
        }
    }

    fn pick(paths: &[PathView], ready: &[u16]) -> Option<PathId> {
        MinRtt.next(paths, &mut |id| ready.contains(&id.0))
    }

    #[test]
    fn the_quickest_ready_path_goes_next() {
        let paths = [
            view(0, Some(80), 5000),
            view(1, Some(10), 5000),
            view(2, Some(40), 5000),
        ];
        assert_eq!(pick(&paths, &[0, 1, 2]), Some(PathId(1)));
        assert_eq!(pick(&paths, &[0, 2]), Some(PathId(2)), "1 has no room");
        assert_eq!(pick(&paths, &[]), None);
    }

    #[test]
    fn an_unmeasured_path_goes_first_and_ties_go_to_more_room_then_the_lower_id() {
        let paths = [
            view(0, Some(10), 1000),
            view(1, None, 10),
            view(2, Some(10), 3000),
        ];
        assert_eq!(pick(&paths, &[0, 1, 2]), Some(PathId(1)));
        assert_eq!(pick(&paths, &[0, 2]), Some(PathId(2)));
        let even = [view(0, Some(10), 1000), view(1, Some(10), 1000)];
        assert_eq!(pick(&even, &[0, 1]), Some(PathId(0)));
    }
}
