//! Single-path SCTP (RFC 9260 §6.4, §6.4.1): new data goes to the primary, or to its
//! failover while the primary is not usable; the association admits only that path, so
//! walking the paths finds it, or a path holding retransmissions.

use super::{PathScheduler, PathView, walk_from};
use crate::path::PathId;

/// The failover scheduler: the paths with something to send, in turn.
#[derive(Debug, Clone, Default)]
pub(crate) struct Failover {
    pub(super) cursor: usize,
}

impl PathScheduler for Failover {
    fn spreads(&self) -> bool {
        false
    }

    fn next(
        &mut self,
        paths: &[PathView],
        ready: &mut dyn FnMut(PathId) -> bool,
    ) -> Option<PathId> {
        walk_from(&mut self.cursor, paths.len(), ready)
    }

    fn on_turn(&mut self, path: PathId) {
        self.cursor = path.0 as usize;
    }
}
