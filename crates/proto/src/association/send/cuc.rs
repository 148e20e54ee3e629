//! CMT's per-path transmission lists and Cwnd Update for CMT (CUC, Iyengar et al. §3.2):
//! each path's pseudo-cumulative ack is its lowest TSN not yet acknowledged, and its
//! window grows when that moves, although the association's cumulative ack may not.

use super::sent::ChunkState;
use crate::association::Association;
use crate::path::PathId;
use crate::serial::tsn_lt;

impl Association {
    /// The outstanding chunk a per-path list entry stands for, if the entry is current:
    /// the chunk's last transmission is that one, on `path`, and it is neither acknowledged
    /// nor abandoned.
    pub(crate) fn live_entry(&self, (tsn, txc): (u32, u16), path: PathId) -> Option<usize> {
        let off = tsn.wrapping_sub(self.tx.cum_ack) as usize;
        if off == 0 || off > self.tx.outstanding.len() {
            return None;
        }
        let s = &self.tx.outstanding[off - 1];
        let live = matches!(s.state, ChunkState::InFlight | ChunkState::Marked(_));
        (live && s.tx_count == txc && s.path == path).then_some(off - 1)
    }

    /// Each path's pseudo-cumack: its lowest TSN neither acknowledged nor abandoned, from
    /// the per-path transmission lists (stale entries are dropped on the way).
    pub(crate) fn pseudo_cumacks(&mut self) -> Vec<Option<u32>> {
        let mut v = vec![None; self.paths.len()];
        for (i, slot) in v.iter_mut().enumerate() {
            let id = PathId(i as u16);
            while let Some(&e) = self.paths[i].sent_order.front() {
                if self.live_entry(e, id).is_some() {
                    *slot = Some(e.0);
                    break;
                }
                self.paths[i].sent_order.pop_front();
            }
            let mut rtx = std::mem::take(&mut self.paths[i].rtx_sent);
            rtx.retain(|&e| self.live_entry(e, id).is_some());
            for &(tsn, _) in &rtx {
                if slot.is_none_or(|lo| tsn_lt(tsn, lo)) {
                    *slot = Some(tsn);
                }
            }
            self.paths[i].rtx_sent = rtx;
        }
        v
    }
}
