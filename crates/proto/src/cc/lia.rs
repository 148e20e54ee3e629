//! Linked Increases (RFC 6356, MPTCP's LIA): only the congestion-avoidance increase is
//! coupled, by α; slow start and the decrease stay Reno's. See [`super::coupled`].

use super::CoupledRule;
use super::coupled::{
    CcPathView, at_least_one, floor_bytes, reno_loss_ssthresh, rfc_initial_cwnd, rtts_ns,
    total_cwnd,
};

/// The LIA amounts.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Lia;

impl CoupledRule for Lia {
    fn ss_increase(_paths: &[CcPathView], _i: usize, reno: usize) -> usize {
        reno // RFC 6356 §3: LIA leaves slow start alone.
    }

    fn ca_increase(paths: &[CcPathView], i: usize) -> usize {
        // RFC 6356 §3: min(α·acked·M/C, acked·M/c_i) summed over acked = c_i.
        let mtu = paths[i].mtu;
        let total = total_cwnd(paths) as f64;
        let inc = alpha(paths) * mtu as f64 * (paths[i].cwnd as f64 / total);
        at_least_one(floor_bytes(inc).min(mtu), mtu)
    }

    fn loss_ssthresh(paths: &[CcPathView], i: usize) -> usize {
        reno_loss_ssthresh(&paths[i]) // RFC 6356 §3: TCP's multiplicative decrease.
    }

    fn initial_cwnd(mtu: usize, _npaths: usize) -> usize {
        rfc_initial_cwnd(mtu)
    }
}

/// RFC 6356 §3: α = C · max_k(c_k / r_k²) / (Σ_j c_j / r_j)², over all of `paths` (the
/// caller has already left out the paths that are not coupled).
///
/// Computed as `C · max_k c_k / (Σ_j c_j · r_k / r_j)²`, the same value, so that one path (or
/// paths with equal RTTs) gives an exact result: α = 1 for one path.
pub(super) fn alpha(paths: &[CcPathView]) -> f64 {
    let rtts = rtts_ns(paths);
    let total = total_cwnd(paths) as f64;
    let mut alpha = 0.0f64;
    for (k, p) in paths.iter().enumerate() {
        let d: f64 = paths
            .iter()
            .zip(&rtts)
            .map(|(q, &r)| q.cwnd as f64 * (rtts[k] / r))
            .sum();
        if d > 0.0 {
            // Multiply before dividing: with equal RTTs numerator and denominator round alike.
            alpha = alpha.max(total * p.cwnd as f64 / (d * d));
        }
    }
    alpha
}
