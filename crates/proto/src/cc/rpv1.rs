//! CMT/RP version 1 (Dreibholz et al., AINA 2010; FreeBSD `SCTP_CMT_RPV1`): a path's share
//! is its part of the summed slow-start thresholds, s_i/S. The rules are [`super::coupled::Rp`];
//! see [`super::coupled`] for the table and the departures.

use super::coupled::{CcPathView, Rp, Share};

/// Shares by slow-start threshold.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct BySsthresh;

/// The CMT/RPv1 rules.
pub(crate) type Rpv1 = Rp<BySsthresh>;

impl Share for BySsthresh {
    fn share(paths: &[CcPathView], i: usize, amount: usize) -> usize {
        // Exact integers: amount · s_i / S.
        let total: u128 = paths.iter().map(|p| p.ssthresh as u128).sum();
        (amount as u128 * paths[i].ssthresh as u128 / total.max(1)) as usize
    }
}
