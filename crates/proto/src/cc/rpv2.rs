//! CMT/RP version 2 (Dreibholz et al., GLOBECOM 2010; FreeBSD `SCTP_CMT_RPV2`): every
//! increase is the path's share b_i/B of the association's bandwidth (b = cwnd/srtt), and a
//! loss takes half of the association's window out of the path that saw it. See
//! [`super::coupled`] for the table and the departures.

use super::CoupledRule;
use super::coupled::{
    CcPathView, at_least_one, floor_bytes, rp_initial_cwnd, rp_loss_ssthresh, rtts_ns,
};

/// The CMT/RPv2 amounts: shares by bandwidth.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Rpv2;

/// `amount` scaled by path `i`'s share of the summed bandwidth cwnd/srtt.
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

impl CoupledRule for Rpv2 {
    fn ss_increase(paths: &[CcPathView], i: usize, reno: usize) -> usize {
        at_least_one(share(paths, i, reno), reno)
    }

    fn ca_increase(paths: &[CcPathView], i: usize) -> usize {
        let mtu = paths[i].mtu;
        at_least_one(share(paths, i, mtu), mtu)
    }

    fn loss_ssthresh(paths: &[CcPathView], i: usize) -> usize {
        rp_loss_ssthresh(paths, i, share(paths, i, 4 * paths[i].mtu))
    }

    fn initial_cwnd(mtu: usize, npaths: usize) -> usize {
        rp_initial_cwnd(mtu, npaths)
    }
}
