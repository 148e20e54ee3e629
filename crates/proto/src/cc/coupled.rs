//! Coupled congestion control for CMT: the increase and decrease rules of CMT/RPv1, CMT/RPv2
//! and LIA as pure functions of a snapshot of all paths ([`CcPathView`]).
//!
//! Every rule keeps RFC 9260 §7.2's structure (slow start while cwnd <= ssthresh, one step per
//! cwnd of acknowledged bytes in congestion avoidance, the same gates on flight size) and only
//! changes *how much* a path's cwnd moves. Notation: `c_i` cwnd, `s_i` ssthresh, `M_i` MTU,
//! `r_i` smoothed RTT of path *i*; `C = Σ c_j`, `S = Σ s_j`, `b_i = c_i / r_i`, `B = Σ b_j`.
//!
//! | rule | Reno (RFC 9260) | CMT/RPv1 | CMT/RPv2 | LIA (RFC 6356) |
//! |---|---|---|---|---|
//! | slow start, per SACK | `min(acked, M_i)` | `min(acked, M_i)·s_i/S` | `min(acked, M_i)·b_i/B` | as Reno |
//! | congestion avoidance, per `c_i` acked | `M_i` | `M_i·s_i/S` | `M_i·b_i/B` | `min(α·M_i·c_i/C, M_i)` |
//! | ssthresh after loss | `max(c_i/2, 4·M_i)` | `max(c_i − ⌈C/2⌉, 4·M_i·s_i/S, M_i)` | `max(c_i − ⌈C/2⌉, 4·M_i·b_i/B, M_i)` | as Reno |
//!
//! with `α = C · max_k(c_k / r_k²) / (Σ_j c_j / r_j)²` (RFC 6356 §3). Fractions are floored
//! and a positive increase is at least one byte. After a fast retransmit cwnd = ssthresh,
//! after a T3 timeout cwnd = one MTU, for every variant.
//!
//! **Which CMT/RP.** The RP rules follow FreeBSD's SCTP stack (`sctp_cc_functions.c`,
//! `SCTP_CMT_RPV1` / `SCTP_CMT_RPV2`, sysctl `net.inet.sctp.cmt_on_off` = 2 / 3), which is the
//! AINA 2010 paper (RPv1: shares by ssthresh) and the GLOBECOM 2010 paper (RPv2: shares by
//! bandwidth cwnd/srtt): the increase is the path's share of Reno's, and a loss takes half of
//! the *association's* window out of the path that saw it, keeping at least the path's share of
//! 4 MTU. Departures, each to make one path reduce exactly to Reno:
//! * FreeBSD subtracts `⌊C/2⌋`; braid subtracts `⌈C/2⌉`, so a lone path keeps `⌊c/2⌋` as
//!   RFC 9260 does.
//! * FreeBSD's RPv2 T3 rule is `max(C − B·r_i/2, c_i − C/2, M_i)`, which with two equal paths
//!   keeps half the association's window on the path that timed out; braid uses the RPv2
//!   fast-retransmit rule for T3 as well (as FreeBSD does for RPv1).
//! * FreeBSD's L2 appropriate-byte-counting factor is fixed at 1 (RFC 9260: one MTU per SACK).
//!
//! INET's implementation (`SctpCcFunctions.cc`) agrees for RPv1 (it rounds up instead of
//! down) but reduces RPv2 by `max(c_i/2, B·r_i/2)`, the bandwidth to give back expressed in
//! path *i*'s window, with a floor of 4 MTU that is not shared; braid does not follow it.
//!
//! LIA follows RFC 6356: only the congestion-avoidance increase is coupled; slow start and the
//! decrease are Reno's. Per SACK the RFC adds `min(α·acked·M_i/C, acked·M_i/c_i)`; braid keeps
//! RFC 9260's partial_bytes_acked, so the same amount arrives once per `c_i` bytes acked.
//!
//! A path without an RTT sample counts as having the largest RTT measured on any path (the
//! most conservative bandwidth for it); when no path has one, all RTTs count as equal.

use std::time::Duration;

/// What the coupled rules read of one path: its window state, MTU and smoothed RTT.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CcPathView {
    /// Congestion window, bytes.
    pub(crate) cwnd: usize,
    /// Slow-start threshold, bytes.
    pub(crate) ssthresh: usize,
    /// The MTU the path's controller counts in, bytes.
    pub(crate) mtu: usize,
    /// Smoothed RTT, if measured (RFC 9260 §6.3.1 SRTT).
    pub(crate) srtt: Option<Duration>,
    /// Counts in the association's totals. A path that carries no data (unconfirmed,
    /// inactive) would otherwise dilute the shares with a stale cwnd and ssthresh; the path
    /// being updated always counts.
    pub(crate) coupled: bool,
}

/// Runs `f` on the coupled paths plus path `i`, with `i` renumbered into that slice.
pub(super) fn with_group<R>(
    paths: &[CcPathView],
    i: usize,
    f: impl FnOnce(&[CcPathView], usize) -> R,
) -> R {
    if paths.iter().all(|p| p.coupled) {
        return f(paths, i);
    }
    let mut group = Vec::with_capacity(paths.len());
    let mut at = 0;
    for (k, p) in paths.iter().enumerate() {
        if k == i {
            at = group.len();
        }
        if p.coupled || k == i {
            group.push(*p);
        }
    }
    f(&group, at)
}

/// RFC 9260 §7.2.1's initial window: min(4·MTU, max(2·MTU, 4380)).
pub(crate) fn rfc_initial_cwnd(mtu: usize) -> usize {
    (4 * mtu).min((2 * mtu).max(4380))
}

/// Reno's ssthresh after a loss: max(cwnd/2, 4·MTU) (RFC 9260 §7.2.3).
pub(super) fn reno_loss_ssthresh(p: &CcPathView) -> usize {
    (p.cwnd / 2).max(4 * p.mtu)
}

/// CMT/RP's ssthresh after a loss on path `i`: half of the association's window taken out of
/// this path, keeping at least `floor` (the path's share of 4 MTU) and one MTU.
pub(super) fn rp_loss_ssthresh(paths: &[CcPathView], i: usize, floor: usize) -> usize {
    let p = &paths[i];
    let cut = p.cwnd.saturating_sub(total_cwnd(paths).div_ceil(2));
    cut.max(floor).max(p.mtu)
}

/// CMT/RP splits RFC 9260's initial window among the paths (as FreeBSD and INET do) so the
/// association starts like one flow; at least one MTU.
pub(super) fn rp_initial_cwnd(mtu: usize, npaths: usize) -> usize {
    (rfc_initial_cwnd(mtu) / npaths.max(1)).max(mtu)
}

/// How a CMT/RP variant measures a path's share of the association.
pub(super) trait Share {
    /// `amount` scaled by path `i`'s share of the coupled group `paths`.
    fn share(paths: &[CcPathView], i: usize, amount: usize) -> usize;
}

/// CMT/RP's rules with the share `S` (Dreibholz et al.; FreeBSD's `sctp_cc_functions.c`):
/// every increase is the path's share of Reno's, and a loss takes half of the association's
/// window out of the path that saw it, keeping at least its share of 4 MTU.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Rp<S>(std::marker::PhantomData<S>);

impl<S: Share> super::CoupledRule for Rp<S> {
    fn ss_increase(paths: &[CcPathView], i: usize, reno: usize) -> usize {
        at_least_one(S::share(paths, i, reno), reno)
    }

    fn ca_increase(paths: &[CcPathView], i: usize) -> usize {
        let mtu = paths[i].mtu;
        at_least_one(S::share(paths, i, mtu), mtu)
    }

    fn loss_ssthresh(paths: &[CcPathView], i: usize) -> usize {
        rp_loss_ssthresh(paths, i, S::share(paths, i, 4 * paths[i].mtu))
    }

    fn initial_cwnd(mtu: usize, npaths: usize) -> usize {
        rp_initial_cwnd(mtu, npaths)
    }
}

/// Σ cwnd over the paths.
pub(super) fn total_cwnd(paths: &[CcPathView]) -> usize {
    paths.iter().map(|p| p.cwnd).sum()
}

/// The paths' SRTTs in nanoseconds, missing ones replaced by the largest measured (or 1).
pub(super) fn rtts_ns(paths: &[CcPathView]) -> Vec<f64> {
    let ns = |d: Duration| (d.as_nanos() as f64).max(1.0);
    let fallback = paths.iter().filter_map(|p| p.srtt).max().map_or(1.0, ns);
    paths.iter().map(|p| p.srtt.map_or(fallback, ns)).collect()
}

/// Floors a byte count, absorbing float error so a whole result (1452·½) is not one byte short.
pub(super) fn floor_bytes(v: f64) -> usize {
    (v + 1e-6).floor().max(0.0) as usize
}

/// FreeBSD's rule: a share that floors to zero still grows cwnd by one byte, so a small path
/// is never frozen; no growth stays no growth.
pub(super) fn at_least_one(inc: usize, uncoupled: usize) -> usize {
    if uncoupled > 0 { inc.max(1) } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::lia::{self, Lia as LiaRule};
    use crate::cc::rpv1::Rpv1;
    use crate::cc::rpv2::Rpv2;
    use crate::cc::{AnyController, CongestionControl, Controller, CoupledRule, Ctx, Reno};
    use CongestionControl::*;

    // The rules by name, over the coupled group as the controllers apply them.
    fn increase_slow_start(
        algo: CongestionControl,
        p: &[CcPathView],
        i: usize,
        acked: usize,
    ) -> usize {
        let reno = acked.min(p[i].mtu);
        with_group(p, i, |g, i| match algo {
            Reno => reno,
            CmtRpv1 => Rpv1::ss_increase(g, i, reno),
            CmtRpv2 => Rpv2::ss_increase(g, i, reno),
            Lia => LiaRule::ss_increase(g, i, reno),
            Cubic | CubicLinux => unreachable!("CUBIC is not a coupled rule"),
        })
    }

    fn increase_ca(algo: CongestionControl, p: &[CcPathView], i: usize) -> usize {
        with_group(p, i, |g, i| match algo {
            Reno => g[i].mtu,
            CmtRpv1 => Rpv1::ca_increase(g, i),
            CmtRpv2 => Rpv2::ca_increase(g, i),
            Lia => LiaRule::ca_increase(g, i),
            Cubic | CubicLinux => unreachable!("CUBIC is not a coupled rule"),
        })
    }

    fn ssthresh_after_loss(algo: CongestionControl, p: &[CcPathView], i: usize) -> usize {
        with_group(p, i, |g, i| match algo {
            Reno => reno_loss_ssthresh(&g[i]),
            CmtRpv1 => Rpv1::loss_ssthresh(g, i),
            CmtRpv2 => Rpv2::loss_ssthresh(g, i),
            Lia => LiaRule::loss_ssthresh(g, i),
            Cubic | CubicLinux => unreachable!("CUBIC is not a coupled rule"),
        })
    }

    fn initial_cwnd(algo: CongestionControl, mtu: usize, n: usize) -> usize {
        AnyController::new(algo, mtu, 1 << 20, n).window()
    }

    fn lia_alpha(p: &[CcPathView]) -> f64 {
        lia::alpha(p)
    }

    const MTU: usize = 1452;

    fn view(cwnd: usize, ssthresh: usize, srtt_ms: Option<u64>) -> CcPathView {
        CcPathView {
            cwnd,
            ssthresh,
            mtu: MTU,
            srtt: srtt_ms.map(Duration::from_millis),
            coupled: true,
        }
    }

    #[test]
    fn lia_alpha_matches_rfc6356_for_two_paths() {
        // 10 MTU at 100 ms and 20 MTU at 200 ms: C = 30, max c/r² = 10/0.01 = 1000,
        // Σ c/r = 100 + 100 = 200, α = 30·1000/200² = 0.75.
        let paths = [
            view(10 * MTU, 1 << 20, Some(100)),
            view(20 * MTU, 1 << 20, Some(200)),
        ];
        assert!((lia_alpha(&paths) - 0.75).abs() < 1e-12);
        // Per cwnd acked: α·M·c_i/C = 1452·0.75·10/30 = 363 and 1452·0.75·20/30 = 726.
        assert_eq!(increase_ca(Lia, &paths, 0), 363);
        assert_eq!(increase_ca(Lia, &paths, 1), 726);
        // Slow start and the decrease are Reno's (RFC 6356 §3).
        assert_eq!(increase_slow_start(Lia, &paths, 0, 3000), MTU);
        assert_eq!(ssthresh_after_loss(Lia, &paths, 1), 10 * MTU);
    }

    #[test]
    fn lia_alpha_is_one_for_one_path_and_half_for_two_equal_paths() {
        assert_eq!(lia_alpha(&[view(7 * MTU, 1 << 20, Some(30))]), 1.0);
        let two = [
            view(10 * MTU, 1 << 20, Some(50)),
            view(10 * MTU, 1 << 20, Some(50)),
        ];
        assert_eq!(lia_alpha(&two), 0.5);
    }

    #[test]
    fn lia_is_never_more_aggressive_than_reno_on_the_best_path() {
        // RFC 6356 goals 1 and 2: per path no more than Reno, and the association's rate
        // grows no faster than one Reno flow on its best (shortest-RTT) path: Σ inc_i/r_i² ≤
        // M/r_min² (a window step of inc per RTT is a rate slope of inc/r²).
        for c1 in [2, 5, 10, 40, 100] {
            for c2 in [2, 7, 10, 30, 200] {
                for (r1, r2) in [(10, 10), (10, 100), (50, 20), (200, 30), (80, 80)] {
                    let paths = [view(c1 * MTU, 1, Some(r1)), view(c2 * MTU, 1, Some(r2))];
                    let inc = [increase_ca(Lia, &paths, 0), increase_ca(Lia, &paths, 1)];
                    assert!(inc.iter().all(|&x| x <= increase_ca(Reno, &paths, 0)));
                    let slope: f64 = inc
                        .iter()
                        .zip([r1, r2])
                        .map(|(&x, r)| x as f64 / (r * r) as f64)
                        .sum();
                    let rmin = r1.min(r2) as f64;
                    assert!(slope <= MTU as f64 / (rmin * rmin) * (1.0 + 1e-9));
                }
            }
        }
    }

    #[test]
    fn lia_two_equal_paths_add_up_to_half_a_reno_step_per_rtt() {
        // α = ½; each path gains M·½·½ = 363 per window, 726 in all: half of Reno's step, and
        // a loss costs a quarter of the total instead of half, so the equilibrium window is one
        // Reno flow's (RFC 6356 §3; checked by the loss simulation below).
        let paths = [view(10 * MTU, 1, Some(40)), view(10 * MTU, 1, Some(40))];
        assert_eq!(increase_ca(Lia, &paths, 0), 363);
        assert_eq!(increase_ca(Lia, &paths, 1), 363);
    }

    #[test]
    fn rpv1_two_paths_by_ssthresh_share() {
        // s = 30000 / 10000: shares ¾ and ¼; C = 30·1452 = 43560, ⌈C/2⌉ = 21780.
        let paths = [
            view(20 * MTU, 30_000, Some(100)),
            view(10 * MTU, 10_000, Some(25)),
        ];
        assert_eq!(increase_slow_start(CmtRpv1, &paths, 0, 3000), 1089);
        assert_eq!(increase_slow_start(CmtRpv1, &paths, 1, 3000), 363);
        assert_eq!(increase_slow_start(CmtRpv1, &paths, 1, 400), 100);
        assert_eq!(increase_ca(CmtRpv1, &paths, 0), 1089);
        assert_eq!(increase_ca(CmtRpv1, &paths, 1), 363);
        // 29040 − 21780 = 7260 beats the floor 4·1452·¾ = 4356.
        assert_eq!(ssthresh_after_loss(CmtRpv1, &paths, 0), 7260);
        // 14520 − 21780 < 0: the floor 4·1452·¼ = 1452 (= one MTU) applies.
        assert_eq!(ssthresh_after_loss(CmtRpv1, &paths, 1), 1452);
    }

    #[test]
    fn rpv2_two_paths_by_bandwidth_share() {
        // b = 29040/100 ms and 14520/25 ms: 290 400 and 580 800 B/s, shares ⅓ and ⅔.
        let paths = [
            view(20 * MTU, 30_000, Some(100)),
            view(10 * MTU, 10_000, Some(25)),
        ];
        assert_eq!(increase_slow_start(CmtRpv2, &paths, 0, 3000), 484);
        assert_eq!(increase_slow_start(CmtRpv2, &paths, 1, 3000), 968);
        assert_eq!(increase_ca(CmtRpv2, &paths, 0), 484);
        assert_eq!(increase_ca(CmtRpv2, &paths, 1), 968);
        // 29040 − 21780 = 7260 beats 4·1452·⅓ = 1936.
        assert_eq!(ssthresh_after_loss(CmtRpv2, &paths, 0), 7260);
        // Floor 4·1452·⅔ = 3872.
        assert_eq!(ssthresh_after_loss(CmtRpv2, &paths, 1), 3872);
    }

    #[test]
    fn rp_two_equal_paths_add_up_to_one_reno_step() {
        for algo in [CmtRpv1, CmtRpv2] {
            let paths = [
                view(10 * MTU, 50_000, Some(40)),
                view(10 * MTU, 50_000, Some(40)),
            ];
            let sum = increase_ca(algo, &paths, 0) + increase_ca(algo, &paths, 1);
            assert_eq!(sum, MTU, "{algo:?}");
            let ss = increase_slow_start(algo, &paths, 0, 5000)
                + increase_slow_start(algo, &paths, 1, 5000);
            assert_eq!(ss, MTU, "{algo:?}");
            // A loss on one path halves the total: 14520 − 14520 = 0 → floor 4·1452·½.
            assert_eq!(ssthresh_after_loss(algo, &paths, 0), 2 * MTU, "{algo:?}");
        }
    }

    #[test]
    fn rpv2_without_rtt_samples_shares_by_cwnd() {
        let paths = [view(3 * MTU, 1, None), view(MTU, 1, None)];
        assert_eq!(increase_ca(CmtRpv2, &paths, 0), 1089);
        // A path without a sample counts as the slowest measured one.
        let paths = [view(3 * MTU, 1, Some(10)), view(3 * MTU, 1, None)];
        assert_eq!(lia_alpha(&paths), 0.5);
        let paths = [
            view(MTU, 1, Some(10)),
            view(MTU, 1, Some(30)),
            view(MTU, 1, None),
        ];
        // b ∝ 1/10, 1/30, 1/30: shares 3/5, 1/5, 1/5.
        assert_eq!(increase_ca(CmtRpv2, &paths, 0), 871);
        assert_eq!(increase_ca(CmtRpv2, &paths, 2), 290);
    }

    #[test]
    fn paths_outside_the_group_do_not_count() {
        // An unconfirmed path with a large ssthresh would take most of the RPv1 share.
        let idle = CcPathView {
            coupled: false,
            ..view(4380, 1 << 20, None)
        };
        let paths = [
            view(20 * MTU, 30_000, Some(100)),
            idle,
            view(10 * MTU, 10_000, Some(25)),
        ];
        assert_eq!(increase_ca(CmtRpv1, &paths, 0), 1089);
        assert_eq!(increase_ca(CmtRpv1, &paths, 2), 363);
        assert_eq!(ssthresh_after_loss(CmtRpv2, &paths, 2), 3872);
        assert_eq!(increase_ca(Lia, &[paths[0], idle], 0), MTU);
        // The path being updated counts even when flagged out: 1452·2^20/(2^20 + 40000).
        assert_eq!(increase_slow_start(CmtRpv1, &paths, 1, 5000), 1398);
    }

    #[test]
    fn tiny_shares_still_grow_by_one_byte() {
        let paths = [view(MTU, 1, Some(10)), view(MTU, 1_000_000, Some(10))];
        assert_eq!(increase_ca(CmtRpv1, &paths, 0), 1);
        assert_eq!(increase_slow_start(CmtRpv1, &paths, 0, 0), 0);
    }

    #[test]
    fn initial_window_is_split_for_rp() {
        assert_eq!(initial_cwnd(Reno, MTU, 2), 4380);
        assert_eq!(initial_cwnd(Lia, MTU, 2), 4380);
        assert_eq!(initial_cwnd(CmtRpv1, MTU, 2), 2190);
        assert_eq!(initial_cwnd(CmtRpv2, MTU, 4), MTU);
        assert_eq!(initial_cwnd(CmtRpv1, MTU, 1), 4380);
        let r = AnyController::new(CmtRpv1, MTU, 64_000, 2);
        assert_eq!((r.window(), r.ssthresh()), (2190, 64_000));
    }

    #[test]
    fn one_path_every_variant_is_reno() {
        let algos = [Reno, CmtRpv1, CmtRpv2, Lia];
        for cwnd in [MTU, 3001, 4380, 10 * MTU + 7, 333_333] {
            for ssthresh in [4 * MTU, 9999, 1 << 20] {
                for srtt in [None, Some(1), Some(37), Some(1000)] {
                    let v = [view(cwnd, ssthresh, srtt)];
                    for algo in algos {
                        for acked in [0, 1, 700, MTU, 5000] {
                            assert_eq!(
                                increase_slow_start(algo, &v, 0, acked),
                                acked.min(MTU),
                                "{algo:?}"
                            );
                        }
                        assert_eq!(increase_ca(algo, &v, 0), MTU, "{algo:?} {cwnd}");
                        assert_eq!(
                            ssthresh_after_loss(algo, &v, 0),
                            (cwnd / 2).max(4 * MTU),
                            "{algo:?} {cwnd}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn one_path_controller_sequences_match_reno() {
        // Same ACK/loss sequence through Reno's API and the coupled entry points.
        for algo in [CmtRpv1, CmtRpv2, Lia] {
            let mut a = Reno::new(MTU, 64_000);
            let mut b = AnyController::new(algo, MTU, 64_000, 1);
            let srtt = Some(Duration::from_millis(42));
            for step in 0..2000usize {
                let acked = [MTU, 3 * MTU, 500, 2 * MTU][step % 4];
                let flight = if step % 7 == 0 { 0 } else { a.w.cwnd };
                match step % 97 {
                    50 => {
                        a.on_fast_retransmit();
                        let v = [b.view(srtt)];
                        b.on_loss(&Ctx { paths: &v, me: 0 });
                    }
                    96 => {
                        a.timeout();
                        let v = [b.view(srtt)];
                        Controller::on_timeout(&mut b, &Ctx { paths: &v, me: 0 });
                    }
                    _ => {
                        a.ack(acked, flight);
                        let v = [b.view(srtt)];
                        Controller::on_ack(&mut b, &Ctx { paths: &v, me: 0 }, acked, flight);
                    }
                }
                assert_eq!(
                    (a.w.cwnd, a.w.ssthresh, a.w.partial_bytes_acked),
                    {
                        let b = b.state();
                        (b.cwnd, b.ssthresh, b.partial_bytes_acked)
                    },
                    "{algo:?} step {step}"
                );
            }
        }
    }

    /// Mean total cwnd (in packets) of `npaths` equal paths, each losing one packet in every
    /// `every` it sends, with one SACK per packet; the second half of `rounds` RTTs is measured.
    fn loss_sim(algo: CongestionControl, npaths: usize, every: usize, rounds: usize) -> f64 {
        let mtu = 1000;
        let srtt = Some(Duration::from_millis(50));
        // npaths = 1: every variant starts from RFC 9260's window on each path.
        let mut cc: Vec<AnyController> = (0..npaths)
            .map(|_| AnyController::new(algo, mtu, 1 << 30, 1))
            .collect();
        // Offsets keep the paths' losses out of phase.
        let mut sent: Vec<usize> = (0..npaths).map(|i| i * every / npaths).collect();
        let mut sum = 0.0;
        for round in 0..rounds {
            for i in 0..npaths {
                let pkts = (cc[i].window() / mtu).max(1);
                let flight = cc[i].window();
                let before = sent[i] / every;
                sent[i] += pkts;
                let views: Vec<CcPathView> = cc.iter().map(|c| c.view(srtt)).collect();
                if sent[i] / every > before {
                    cc[i].on_loss(&Ctx {
                        paths: &views,
                        me: i,
                    });
                    continue;
                }
                for _ in 0..pkts {
                    let views: Vec<CcPathView> = cc.iter().map(|c| c.view(srtt)).collect();
                    cc[i].on_ack(
                        &Ctx {
                            paths: &views,
                            me: i,
                        },
                        mtu,
                        flight,
                    );
                }
            }
            if round >= rounds / 2 {
                sum += cc.iter().map(|c| c.window()).sum::<usize>() as f64 / mtu as f64;
            }
        }
        sum / (rounds - rounds / 2) as f64
    }

    #[test]
    fn two_coupled_paths_take_about_one_reno_flows_window() {
        // Same per-packet loss rate on every path: a coupled association should hold about
        // one Reno flow's window (RFC 6356 goal 2; AINA 2010 fairness), uncoupled about two.
        let one = loss_sim(Reno, 1, 800, 4000);
        let uncoupled = loss_sim(Reno, 2, 800, 4000);
        assert!(uncoupled > 1.7 * one, "uncoupled {uncoupled} vs {one}");
        for algo in [CmtRpv1, CmtRpv2, Lia] {
            let two = loss_sim(algo, 2, 800, 4000);
            assert!(
                two > 0.75 * one && two < 1.3 * one,
                "{algo:?}: {two} vs one Reno flow {one}"
            );
        }
    }
}
