//! Split Fast Retransmit (CMT, Iyengar et al. §3.1): under CMT a SACK reports a chunk
//! missing only if a later TSN sent on the *same path* was newly acknowledged. Without it,
//! data of a faster path acknowledged ahead of a slower path's data counts as misses and
//! causes spurious fast retransmissions.

use crate::association::Association;
use crate::association::send::sent::Sent;
use crate::path::PathId;
use crate::serial::tsn_lt;

/// SFR's test: the highest TSN newly acknowledged on `s`'s path is above it.
pub(crate) fn reports_missing(htna_on: &[Option<u32>], s: &Sent) -> bool {
    htna_on[s.path.0 as usize].is_some_and(|h| tsn_lt(s.tsn, h))
}

impl Association {
    /// SFR's miss candidates: the chunks of each path below the highest TSN newly
    /// acknowledged on that path, as queue indices in order, found from the per-path
    /// transmission lists (`Path::sent_order`, `Path::rtx_sent`) without scanning the
    /// whole queue.
    pub(crate) fn sfr_candidates(&self, htna_on: &[Option<u32>], out: &mut Vec<usize>) {
        for (i, h) in htna_on.iter().enumerate() {
            let Some(h) = *h else { continue };
            let id = PathId(i as u16);
            let p = &self.paths[i];
            for &e in p.sent_order.iter().take_while(|e| tsn_lt(e.0, h)) {
                out.extend(self.live_entry(e, id));
            }
            for &e in p.rtx_sent.iter().filter(|e| tsn_lt(e.0, h)) {
                out.extend(self.live_entry(e, id));
            }
        }
        out.sort_unstable();
        out.dedup();
    }
}
