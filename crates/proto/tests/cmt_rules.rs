//! The sender's CMT rules, one packet-level script each, named after the rule: the
//! endpoint under test sends to a peer with two addresses (path A, the primary, and path
//! B, see `common::multihome`); the test plays the peer and decides, SACK by SACK, what
//! arrived. Where a rule is a switch (SFR, DAC, CUC, the retransmission policy), a second
//! test plays the same packets with the rule off and sees the other outcome, so each
//! rule's test is known to be able to fail.
//!
//! References: RFC 9260 (SCTP), RFC 7829 (SCTP-PF), and Iyengar, Amer, Stewart,
//! "Concurrent Multipath Transfer Using SCTP Multihoming Over Independent End-to-End
//! Paths", IEEE/ACM ToN 14(5), 2006 ("CMT paper"): §3.1 Split Fast Retransmit, §3.2 Cwnd
//! Update for CMT, §3.3 Delayed Ack for CMT, §4 retransmission policies.
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::net::SocketAddr;

use braid_proto::{AssociationConfig, CmtConfig, PathState, RtxPolicy, SackPath};
use braid_wire::COMMON_HEADER_LEN;
use braid_wire::chunk::{DATA_HEADER_LEN, Sack};
use common::multihome::{gap_blocks, paths, sack_dac, tsns_to, two_confirmed_paths};
use common::script::{Out, Script, data, ms, quiet_config, sack};

const BIG_WINDOW: u32 = 1 << 20;

/// CMT on (with SFR, CUC and DAC, the defaults), no heartbeats on idle paths.
fn cmt() -> AssociationConfig {
    AssociationConfig {
        cmt: Some(CmtConfig::default()),
        ..quiet_config()
    }
}

/// An association sending over both paths (with CMT; without, over A only): the
/// application queued 16 full-sized messages and the first burst went out on each path,
/// one DATA chunk per packet. Nothing is acknowledged yet.
struct Flight {
    s: Script,
    /// Path A's address (the peer's primary).
    a: SocketAddr,
    /// Path B's address.
    b: SocketAddr,
    /// TSNs sent on path A, in order.
    on_a: Vec<u32>,
    /// TSNs sent on path B, in order.
    on_b: Vec<u32>,
}

impl Flight {
    fn new(cfg: AssociationConfig, seed: u64) -> Self {
        let cmt = cfg.cmt.is_some();
        let (mut s, b) = two_confirmed_paths(cfg, seed);
        let a = s.remote;
        let full = s.assoc().paths()[0].mtu - COMMON_HEADER_LEN - DATA_HEADER_LEN;
        for i in 0..16u8 {
            s.app_send(0, &vec![i; full]);
        }
        let outs = s.take_sent();
        assert!(
            outs.iter().all(|o| o.tsns().len() <= 1),
            "one full-sized chunk per packet"
        );
        let on_a = tsns_to(&outs, a);
        let on_b = tsns_to(&outs, b);
        // Max.Burst (RFC 9260 §6.1: 4 packets) lets four 1444-byte chunks out per path
        // before the first SACK; without CMT new data goes to the primary only.
        assert!(
            on_a.len() >= 4
                && if cmt {
                    on_b.len() >= 4
                } else {
                    on_b.is_empty()
                },
            "A got {on_a:?}, B got {on_b:?}"
        );
        Self {
            s,
            a,
            b,
            on_a,
            on_b,
        }
    }

    /// The cumulative ack the peer can give while the first chunk sent is missing.
    fn nothing_cum(&self) -> u32 {
        self.s.ep_tsn(0).wrapping_sub(1)
    }

    /// The peer, 10 ms later, sends a SACK from `from` that acknowledges nothing
    /// cumulatively and exactly `acked` above, with DAC flags `dac`; returns what the
    /// endpoint sent in answer.
    fn sack_from(&mut self, from: SocketAddr, acked: &[u32], dac: u8) -> Vec<Out> {
        self.s.advance(ms(10));
        let cum = self.nothing_cum();
        let p = self.s.to_ep(vec![sack_dac(cum, BIG_WINDOW, acked, dac)]);
        self.s.inject_from(from, &p);
        self.s.take_sent()
    }
}

/// Every TSN among `outs` that was sent before (in `earlier`): the retransmissions.
fn retransmitted(outs: &[Out], earlier: &[u32]) -> Vec<u32> {
    outs.iter()
        .flat_map(Out::tsns)
        .filter(|t| earlier.contains(t))
        .collect()
}

// ====================================================================================== SFR

/// Path A's chunks are in flight (slow path, or lost) while the peer acknowledges path
/// B's chunks one SACK at a time: each SACK newly acknowledges a TSN higher than every
/// chunk on A. Returns the flight and the retransmissions the endpoint sent.
fn acks_on_b_only(sfr: bool, seed: u64) -> (Flight, Vec<u32>) {
    let mut f = Flight::new(
        AssociationConfig {
            cmt: Some(CmtConfig {
                sfr,
                ..CmtConfig::default()
            }),
            ..cmt()
        },
        seed,
    );
    assert!(f.on_a.iter().all(|a| f.on_b.iter().all(|b| a < b)));
    let mut rtx = Vec::new();
    for k in 1..=f.on_b.len() {
        let acked = f.on_b[..k].to_vec();
        let outs = f.sack_from(f.b, &acked, 0);
        rtx.extend(retransmitted(&outs, &f.on_a));
    }
    (f, rtx)
}

#[test]
fn sfr_a_later_tsn_acked_on_path_b_adds_no_miss_to_a_chunk_sent_on_path_a() {
    // CMT paper §3.1: with CMT, TSNs on one path overtake those on another all the time;
    // a SACK says a chunk is missing only if it newly acknowledges a later TSN sent on
    // the chunk's own path. Four SACKs acknowledging path B's TSNs say nothing about A's.
    let (f, rtx) = acks_on_b_only(true, 1101);
    let (a, b) = paths(&f.s);
    assert_eq!(rtx, Vec::<u32>::new(), "path A's chunks were retransmitted");
    assert_eq!(a.stats.fast_retransmissions, 0);
    assert_eq!(a.stats.retransmissions, 0);
    // No fast retransmit, so no window reduction on A either (RFC 9260 §7.2.3).
    assert_eq!(a.ssthresh, b.ssthresh);
}

#[test]
fn without_sfr_the_same_sacks_fast_retransmit_the_chunks_of_path_a() {
    // RFC 9260 §7.2.4 counts a miss for every TSN below the highest newly acknowledged
    // one, whatever its path: the third of those SACKs fast-retransmits A's chunks.
    let (f, rtx) = acks_on_b_only(false, 1101);
    let (a, b) = paths(&f.s);
    assert!(rtx.contains(&f.on_a[0]), "retransmitted: {rtx:?}");
    assert!(a.stats.fast_retransmissions >= 1);
    assert!(a.ssthresh < b.ssthresh, "A's window was not reduced");
}

// ====================================================================================== DAC

/// The first chunk on path A is lost; the next SACK, with DAC flags 2, acknowledges the
/// two chunks sent after it on A; the one after that, flags 1, also the next chunk on A.
/// Returns the flight and the retransmissions after the first and after the second SACK.
fn lost_on_a_then_dac_sacks(dac: bool, seed: u64) -> (Flight, Vec<u32>, Vec<u32>) {
    let mut f = Flight::new(
        AssociationConfig {
            cmt: Some(CmtConfig {
                dac,
                ..CmtConfig::default()
            }),
            ..cmt()
        },
        seed,
    );
    let lost = f.on_a[0];
    let (a1, a2, a3) = (f.on_a[1], f.on_a[2], f.on_a[3]);
    let outs = f.sack_from(f.a, &[a1, a2], 2);
    let after_first = retransmitted(&outs, &[lost]);
    let outs = f.sack_from(f.a, &[a1, a2, a3], 1);
    let after_second = retransmitted(&outs, &[lost]);
    (f, after_first, after_second)
}

#[test]
fn dac_flags_2_counts_two_misses() {
    // CMT paper §3.3: a receiver that delays its SACKs under CMT says in the flags how
    // many packets (1 or 2) the SACK acknowledges. When every newly acknowledged TSN was
    // sent on the missing chunk's path after it, the sender counts that many misses, so
    // delayed SACKs do not slow fast retransmit down. Flags 2 (two misses) and then a
    // plain SACK (one) make the three of RFC 9260 §7.2.4.
    let (f, after_first, after_second) = lost_on_a_then_dac_sacks(true, 1102);
    assert_eq!(after_first, Vec::<u32>::new(), "two misses are not three");
    assert_eq!(
        after_second,
        vec![f.on_a[0]],
        "three misses: fast retransmit"
    );
    let (a, _) = paths(&f.s);
    assert_eq!(a.stats.fast_retransmissions, 1);
}

#[test]
fn without_dac_the_same_two_sacks_count_two_misses_and_retransmit_nothing() {
    let (f, after_first, after_second) = lost_on_a_then_dac_sacks(false, 1102);
    assert_eq!(after_first, Vec::<u32>::new());
    assert_eq!(after_second, Vec::<u32>::new());
    let (a, _) = paths(&f.s);
    assert_eq!(a.stats.fast_retransmissions, 0);
}

// ====================================================================================== CUC

/// Path A's first chunk is missing, so the association's cumulative ack stays where it
/// is. The peer first acknowledges path B's second chunk (B's earliest outstanding one is
/// still missing), then B's first two. Returns path B's cwnd before, after the first and
/// after the second SACK, and path A's cwnd before and after.
fn cumack_stuck_on_a(cuc: bool, seed: u64) -> ([usize; 3], [usize; 2]) {
    let mut f = Flight::new(
        AssociationConfig {
            cmt: Some(CmtConfig {
                cuc,
                ..CmtConfig::default()
            }),
            ..cmt()
        },
        seed,
    );
    let (a0, b0) = paths(&f.s);
    assert!(b0.cwnd <= b0.ssthresh, "slow start");
    let (b_first, b_second) = (f.on_b[0], f.on_b[1]);
    let outs = f.sack_from(f.b, &[b_second], 0);
    // B's window had room again and the application's data was waiting: B is full again,
    // so the next acknowledgement may grow its cwnd (RFC 9260 §7.2.1: only a cwnd in use).
    assert!(!tsns_to(&outs, f.b).is_empty());
    let (_, b1) = paths(&f.s);
    assert!(b1.flight_size >= b1.cwnd, "{b1:?}");
    f.sack_from(f.b, &[b_first, b_second], 0);
    let (a2, b2) = paths(&f.s);
    ([b0.cwnd, b1.cwnd, b2.cwnd], [a0.cwnd, a2.cwnd])
}

#[test]
fn cuc_cwnd_of_a_path_grows_on_its_own_pseudo_cumack() {
    // CMT paper §3.2: under CMT the association's cumulative ack waits for the slowest
    // path, and RFC 9260 §7.2.1 grows cwnd only when it moves. CUC keeps a
    // pseudo-cumulative ack per path, its earliest outstanding TSN, and grows the path's
    // cwnd when that one is acknowledged.
    let ([b0, b1, b2], [a0, a2]) = cumack_stuck_on_a(true, 1103);
    assert_eq!(b1, b0, "B's earliest outstanding TSN was not acked yet");
    assert!(b2 > b0, "B's pseudo-cumack moved: cwnd {b0} -> {b2}");
    assert_eq!(a2, a0, "nothing of A's was acknowledged");
}

#[test]
fn without_cuc_cwnd_waits_for_the_association_cumack() {
    let ([b0, b1, b2], [a0, a2]) = cumack_stuck_on_a(false, 1103);
    assert_eq!((b1, b2), (b0, b0), "cwnd grew without a cumulative ack");
    assert_eq!(a2, a0);
}

// ============================================================================ RTX-SSTHRESH

/// Path A's first chunk is lost and three SACKs acknowledge the chunks sent after it on
/// A, one more each: the third miss fast-retransmits it (RFC 9260 §7.2.4). Returns the
/// flight and the packet that carried the retransmission.
fn fast_retransmit_on_a(policy: RtxPolicy, seed: u64) -> (Flight, Out) {
    let mut f = Flight::new(
        AssociationConfig {
            rtx_policy: policy,
            ..cmt()
        },
        seed,
    );
    let lost = f.on_a[0];
    for k in 1..=3 {
        let acked = f.on_a[1..=k].to_vec();
        let outs = f.sack_from(f.a, &acked, 0);
        if let Some(o) = outs.into_iter().find(|o| o.tsns().contains(&lost)) {
            assert_eq!(k, 3, "retransmitted after {k} miss(es)");
            return (f, o);
        }
    }
    panic!("TSN {lost} was never fast-retransmitted");
}

#[test]
fn rtx_ssthresh_picks_the_alternate_path() {
    // CMT paper §4 (RTX-SSTHRESH): a retransmission goes to the active path with the
    // largest ssthresh. A's loss has just halved A's (RFC 9260 §7.2.3), so B has the
    // larger one and gets the retransmission; RFC 9260 §6.4 also prefers another address.
    let (f, o) = fast_retransmit_on_a(RtxPolicy::Ssthresh, 1104);
    assert_eq!(o.remote, f.b, "{}", o.describe());
    let (a, b) = paths(&f.s);
    assert!(a.ssthresh < b.ssthresh, "A {} B {}", a.ssthresh, b.ssthresh);
    assert_eq!(a.stats.fast_retransmissions, 1);
    assert_eq!((a.stats.retransmissions, b.stats.retransmissions), (0, 1));
}

#[test]
fn rtx_same_keeps_the_retransmission_on_the_path_it_was_lost_on() {
    let (f, o) = fast_retransmit_on_a(RtxPolicy::Same, 1104);
    assert_eq!(o.remote, f.a, "{}", o.describe());
    let (a, b) = paths(&f.s);
    assert_eq!((a.stats.retransmissions, b.stats.retransmissions), (1, 0));
}

// ====================================================================================== T3

/// The peer acknowledges, from B, every TSN that reached it over B (`got`), cumulatively
/// as far as it can.
fn sack_what_b_delivered(s: &mut Script, b: SocketAddr, got: &BTreeSet<u32>) {
    let mut cum = s.ep_tsn(0).wrapping_sub(1);
    while got.contains(&cum.wrapping_add(1)) {
        cum = cum.wrapping_add(1);
    }
    let above: Vec<u32> = got.iter().copied().filter(|t| *t > cum).collect();
    let p = s.to_ep(vec![sack(cum, BIG_WINDOW, &gap_blocks(cum, &above))]);
    s.inject_from(b, &p);
}

fn t3_on_the_primary(cmt: bool, seed: u64) {
    let cfg = AssociationConfig {
        cmt: cmt.then(CmtConfig::default),
        ..quiet_config()
    };
    let mut f = Flight::new(cfg, seed);
    let (s, a, b) = (&mut f.s, f.a, f.b);
    // Path A is cut: nothing the endpoint sends there arrives. Everything sent over B is
    // acknowledged 10 ms later, until A's T3-rtx has expired (RFC 9260 §6.3.3).
    let mut got: BTreeSet<u32> = f.on_b.iter().copied().collect();
    let mut sent_on_a: BTreeSet<u32> = f.on_a.iter().copied().collect();
    let mut after_t3: Vec<Out> = Vec::new();
    let mut t3_at = None;
    let end = s.t() + ms(5000);
    while s.t() < end {
        s.advance(ms(10));
        let outs = s.take_sent();
        let timed_out = paths(s).0.stats.timeouts > 0;
        if timed_out {
            t3_at.get_or_insert(s.t());
            after_t3.extend(outs.iter().cloned());
        } else {
            sent_on_a.extend(tsns_to(&outs, a));
        }
        got.extend(tsns_to(&outs, b));
        sack_what_b_delivered(s, b, &got);
        if t3_at.is_some_and(|t| s.t() > t + ms(500)) {
            break;
        }
    }
    assert!(t3_at.is_some(), "T3-rtx of path A never expired");
    let (pa, pb) = paths(s);
    assert_eq!(pa.stats.timeouts, 1);
    assert_eq!(pb.stats.timeouts, 0);
    // RFC 7829 §5.1 (PFMR 0): one timeout makes the primary potentially failed.
    assert_eq!(pa.state, PathState::PotentiallyFailed);
    assert_eq!(pb.state, PathState::Active);
    // RFC 9260 §6.4.1, §6.3.3 E3 (and the RTX policy, CMT paper §4): what timed out on
    // the primary is retransmitted to the active alternate, and nothing more goes to A.
    let to_a = tsns_to(&after_t3, a);
    assert_eq!(to_a, Vec::<u32>::new(), "DATA into the failed primary");
    let to_b: BTreeSet<u32> = tsns_to(&after_t3, b).into_iter().collect();
    let stranded: Vec<u32> = sent_on_a.difference(&to_b).copied().collect();
    assert_eq!(stranded, Vec::<u32>::new(), "A's chunks not moved to B");
    assert!(pb.stats.retransmissions as usize >= sent_on_a.len());
    // The peer's DATA still arrives over its primary address. The SACKs for it go to the
    // usable path, not into the failed primary (RFC 9260 §6.4 lets a SACK go to any of
    // the addresses; RFC 7829 §5.1 avoids a PF one).
    for i in 0..4u32 {
        let p = s.to_ep(vec![data(s.peer_tsn(i), 0, i as u16, b"from the peer")]);
        s.inject_from(a, &p);
    }
    let outs = s.collect_until(s.t() + ms(500));
    let sacks: Vec<&Out> = outs.iter().filter(|o| o.has::<Sack>()).collect();
    assert!(!sacks.is_empty(), "the peer's DATA was not acknowledged");
    for o in sacks {
        assert_eq!(o.remote, b, "SACK to the failed primary: {}", o.describe());
    }
}

#[test]
fn t3_on_the_primary_moves_its_chunks_and_the_sack_path() {
    t3_on_the_primary(true, 1105);
}

#[test]
fn t3_on_the_primary_moves_its_chunks_and_the_sack_path_without_cmt() {
    t3_on_the_primary(false, 1106);
}

/// Where the SACK goes that acknowledges DATA the peer sent over `first`, then `second`,
/// with nothing of ours to send (a lone SACK), under CMT with `policy`: "a" for the peer's
/// primary address, "b" for its alternate.
fn lone_sack_path(policy: SackPath, from_b_first: bool, seed: u64) -> &'static str {
    let cfg = AssociationConfig {
        cmt: Some(CmtConfig {
            sack_path: policy,
            ..CmtConfig::default()
        }),
        ..quiet_config()
    };
    let (mut s, b) = two_confirmed_paths(cfg, seed);
    let a = s.remote;
    let order = if from_b_first { [b, a] } else { [a, b] };
    // Two DATA packets: the second makes the SACK due (every second packet, RFC 9260 §6.2).
    for (i, from) in order.into_iter().enumerate() {
        let p = s.to_ep(vec![data(s.peer_tsn(i as u32), 0, i as u16, b"peer data")]);
        s.inject_from(from, &p);
    }
    let outs = s.collect_until(s.t() + ms(300));
    let sacks: Vec<&Out> = outs.iter().filter(|o| o.has::<Sack>()).collect();
    assert_eq!(sacks.len(), 1, "one SACK for both packets");
    if sacks[0].remote == a { "a" } else { "b" }
}

#[test]
fn sack_path_first_data_last_data_and_primary_pick_their_path() {
    // INET's "standard": the first path DATA came in on since the last SACK.
    assert_eq!(lone_sack_path(SackPath::FirstData, false, 1201), "a");
    assert_eq!(lone_sack_path(SackPath::FirstData, true, 1202), "b");
    // RFC 9260 §6.4: where the last DATA came from.
    assert_eq!(lone_sack_path(SackPath::LastData, false, 1203), "b");
    assert_eq!(lone_sack_path(SackPath::LastData, true, 1204), "a");
    // The primary whatever the order.
    assert_eq!(lone_sack_path(SackPath::Primary, false, 1205), "a");
    assert_eq!(lone_sack_path(SackPath::Primary, true, 1206), "a");
}
