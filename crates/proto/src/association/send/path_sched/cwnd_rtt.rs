//! LS-SCTP's path assignment (Abd El Al et al. §4.3): new data in proportion to each path's
//! bandwidth estimate cwnd/SRTT. Each path accumulates the time its data takes at its rate;
//! the path that has carried least goes next.

use super::{PathScheduler, PathView};
use crate::path::PathId;

/// The cwnd/RTT scheduler: per path, seconds of data assigned at its rate.
#[derive(Debug, Clone, Default)]
pub(crate) struct CwndRtt {
    /// Indexed by path id; a path not yet listed has 0.
    assigned: Vec<f64>,
}

impl CwndRtt {
    fn assigned(&self, path: PathId) -> f64 {
        self.assigned.get(path.0 as usize).copied().unwrap_or(0.0)
    }
}

impl PathScheduler for CwndRtt {
    fn shares_window(&self) -> bool {
        true
    }

    fn next(
        &mut self,
        paths: &[PathView],
        ready: &mut dyn FnMut(PathId) -> bool,
    ) -> Option<PathId> {
        self.assigned
            .resize(paths.len().max(self.assigned.len()), 0.0);
        let (mut best, mut floor) = (None::<PathId>, f64::INFINITY);
        for p in paths {
            if !ready(p.id) {
                continue;
            }
            let a = self.assigned(p.id);
            floor = floor.min(a);
            if best.is_none_or(|b| a < self.assigned(b)) {
                best = Some(p.id);
            }
        }
        if best.is_some() {
            // A path that was idle rejoins at the others' level, not with saved-up credit.
            for a in &mut self.assigned {
                *a = a.max(floor);
            }
        }
        best
    }

    fn on_sent(&mut self, path: &PathView, len: usize) {
        let i = path.id.0 as usize;
        if self.assigned.len() <= i {
            self.assigned.resize(i + 1, 0.0);
        }
        self.assigned[i] += len as f64 / path.rate.max(1.0);
    }

    fn wants_sent(&self) -> bool {
        true
    }
}
