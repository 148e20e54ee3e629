//! Split Fast Retransmit (CMT, Iyengar et al. §3.1): under CMT a SACK reports a chunk
//! missing only if a later TSN sent on the *same path* was newly acknowledged. Without it,
//! data of a faster path acknowledged ahead of a slower path's data counts as misses and
//! causes spurious fast retransmissions.

use crate::association::send::SendQueue;
use crate::association::send::sent::Sent;
use crate::path::Path;
use crate::serial::tsn_lt;

/// SFR's test: the highest TSN newly acknowledged on `s`'s path is above it.
pub(crate) fn reports_missing(htna_on: &[Option<u32>], s: &Sent) -> bool {
    htna_on[s.path.0 as usize].is_some_and(|h| tsn_lt(s.tsn, h))
}

/// SFR's miss candidates: the chunks last sent on each path below the highest TSN newly
/// acknowledged on that path, as queue indices in order, from the per-path lists
/// (`Path::sent_live`) without scanning the whole queue.
pub(crate) fn candidates(
    tx: &SendQueue,
    paths: &[Path],
    htna_on: &[Option<u32>],
    out: &mut Vec<usize>,
) {
    let (Some(front), cum) = (tx.outstanding.front(), tx.cum_ack) else {
        return;
    };
    for (p, h) in paths.iter().zip(htna_on) {
        let Some(h) = *h else { continue };
        // TSNs above the cumulative ack map to queue positions, hence to `seq`.
        let below = front.seq + u64::from(h.wrapping_sub(cum)) - 1;
        out.extend(
            p.sent_live
                .below(below)
                .map(|seq| (seq - front.seq) as usize),
        );
    }
    out.sort_unstable();
    out.dedup();
}
