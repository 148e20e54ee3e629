//! Cwnd Update for CMT (CUC, Iyengar et al. §3.2): each path's pseudo-cumulative ack is its
//! lowest TSN not yet acknowledged, and its window grows when that moves, although the
//! association's cumulative ack may not. The per-path lists it reads (`Path::sent_live`) are
//! kept by the chunks' state changes (`sent.rs`).

use crate::association::Association;

impl Association {
    /// Each path's pseudo-cumack: the lowest TSN last sent there and neither acknowledged
    /// nor abandoned nor moved away.
    pub(crate) fn pseudo_cumacks(&self, out: &mut Vec<Option<u32>>) {
        out.clear();
        out.extend(self.paths.iter().map(|p| {
            let seq = p.sent_live.first()?;
            let i = self.tx.index_of_seq(seq)?;
            Some(self.tx.outstanding[i].tsn)
        }));
    }
}
