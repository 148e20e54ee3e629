//! CMT/RP version 1 (Dreibholz et al., AINA 2010; FreeBSD `SCTP_CMT_RPV1`): every increase
//! is the path's share s_i/S of Reno's, and a loss takes half of the association's window
//! out of the path that saw it. See [`super::coupled`] for the table and the departures.

use super::CoupledRule;
use super::coupled::{CcPathView, at_least_one, rp_initial_cwnd, rp_loss_ssthresh};

/// The CMT/RPv1 amounts: shares by slow-start threshold.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Rpv1;

/// `amount` scaled by path `i`'s share of the summed ssthresh (exact integers).
fn share(paths: &[CcPathView], i: usize, amount: usize) -> usize {
    let total: u128 = paths.iter().map(|p| p.ssthresh as u128).sum();
    (amount as u128 * paths[i].ssthresh as u128 / total.max(1)) as usize
}

impl CoupledRule for Rpv1 {
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
