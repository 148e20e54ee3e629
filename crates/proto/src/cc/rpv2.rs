//! CMT/RP version 2 (Dreibholz et al., GLOBECOM 2010; FreeBSD `SCTP_CMT_RPV2`): a path's
//! share is its part of the association's bandwidth, b_i/B with b = cwnd/srtt. The rules are
//! [`super::coupled::Rp`]; see [`super::coupled`] for the table and the departures.

use super::coupled::{CcPathView, Rp, Share, floor_bytes, rtts_ns};

/// Shares by bandwidth.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ByBandwidth;

/// The CMT/RPv2 rules.
pub(crate) type Rpv2 = Rp<ByBandwidth>;

impl Share for ByBandwidth {
    fn share(paths: &[CcPathView], i: usize, amount: usize) -> usize {
        let rtts = rtts_ns(paths);
        let bw = |j: usize| paths[j].cwnd as f64 / rtts[j];
        let total: f64 = (0..paths.len()).map(bw).sum();
        if total > 0.0 {
            floor_bytes(amount as f64 * (bw(i) / total))
        } else {
            amount / paths.len()
        }
    }
}
