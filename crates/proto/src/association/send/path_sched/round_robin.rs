//! CMT's round robin (Iyengar et al. §2): every usable path in turn, each until it has no
//! more room, so its packets batch (GSO) and its burst follows its own SACK clock.

use super::{PathScheduler, PathView, walk_from};
use crate::path::PathId;

/// The round-robin scheduler: a cursor over the paths.
#[derive(Debug, Clone, Default)]
pub(crate) struct RoundRobin {
    pub(super) cursor: usize,
}

impl PathScheduler for RoundRobin {
    fn next(
        &mut self,
        paths: &[PathView],
        ready: &mut dyn FnMut(PathId) -> bool,
    ) -> Option<PathId> {
        // Stay on this path while it can send; the next path gets its turn after.
        walk_from(&mut self.cursor, paths.len(), ready)
    }

    fn on_turn(&mut self, path: PathId) {
        self.cursor = path.0 as usize;
    }
}
