//! RACK-TLP (RFC 8985) as the loss-detection option `LossDetection::Rack`: time-based loss
//! detection with the reorder timer, reordering within the window, tail loss probes, and
//! whole transfers under random loss. Each scripted case runs with the RFC 9260 rule
//! (`DupThresh`) too, to show the difference.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use braid_proto::{AssociationConfig, CmtConfig, LossDetection};
use braid_wire::chunk::{Data, Sack};
use common::script::{Script, ms, quiet_config, sack, secs};
use common::traffic::{Plan, transfer};
use common::{Pair, Wire};

const BIG_WINDOW: u32 = 1 << 20;
/// The scripted peer answers every packet this long after it left (RTT 50 ms).
const RTT: Duration = ms(50);

fn config(loss: LossDetection) -> AssociationConfig {
    AssociationConfig {
        loss_detection: loss,
        ..quiet_config()
    }
}

/// An established association whose path measured SRTT = min RTT = 50 ms (RTO stays at
/// RTO.Min, 1 s), with nothing in flight. Returns the script and a full-sized payload.
fn warmed_up(loss: LossDetection, seed: u64) -> (Script, usize) {
    let mut s = Script::server_with(config(loss), seed);
    s.establish_passive();
    let mtu = s.assoc().paths()[0].mtu;
    let full = mtu - 12 - 16; // one full-sized DATA chunk per packet
    s.app_send(0, &vec![0u8; full]);
    let d: Data = s.expect_to_peer();
    s.advance(RTT);
    s.send_chunks(vec![sack(d.tsn, BIG_WINDOW, &[])]);
    assert_eq!(s.assoc().paths()[0].srtt, Some(RTT));
    (s, full)
}

/// Sends `n` full-sized messages at once and returns their TSNs (one chunk per packet).
fn burst(s: &mut Script, full: usize, n: usize) -> Vec<u32> {
    for i in 0..n {
        s.app_send(0, &vec![i as u8 + 1; full]);
    }
    let tsns: Vec<u32> = s.take_sent().iter().flat_map(|o| o.tsns()).collect();
    assert_eq!(tsns.len(), n, "the initial cwnd takes the whole burst");
    tsns
}

/// RFC 8985 §6.2: two chunks sent after A are acknowledged (one miss indication, far from
/// three); A is declared lost by the reorder timer RACK.rtt + reo_wnd (min_RTT/4) after it
/// was sent, and fast-retransmitted long before T3-rtx (RTO 1 s).
#[test]
fn rack_finds_a_loss_with_two_later_chunks_acked_when_the_reorder_timer_fires() {
    let (mut s, full) = warmed_up(LossDetection::Rack, 1);
    let t0 = s.t();
    let tsns = burst(&mut s, full, 3);
    let lost = tsns[0];
    s.advance(RTT);
    s.send_chunks(vec![sack(lost.wrapping_sub(1), BIG_WINDOW, &[(2, 3)])]);
    s.expect_nothing_now();
    let o = s.expect();
    assert_eq!(o.tsns(), vec![lost], "{}", o.describe());
    // sent at t0 + RACK.rtt (50 ms) + reo_wnd (12.5 ms)
    o.assert_at(t0 + RTT + RTT / 4, ms(1));
    let p = &s.assoc().paths()[0];
    assert_eq!(p.stats.fast_retransmissions, 1);
    assert_eq!(p.stats.timeouts, 0);
    // The retransmission is acknowledged: recovery is over, nothing else goes.
    s.advance(RTT);
    s.send_chunks(vec![sack(tsns[2], BIG_WINDOW, &[])]);
    s.expect_nothing_for(secs(5));
}

/// The same SACK under RFC 9260's rule: one miss indication is not a loss; only T3-rtx
/// retransmits A, an RTO after it was sent.
#[test]
fn dupthresh_needs_t3_for_a_loss_with_two_later_chunks_acked() {
    let (mut s, full) = warmed_up(LossDetection::DupThresh, 1);
    let t0 = s.t();
    let tsns = burst(&mut s, full, 3);
    let lost = tsns[0];
    s.advance(RTT);
    s.send_chunks(vec![sack(lost.wrapping_sub(1), BIG_WINDOW, &[(2, 3)])]);
    let o = s.expect();
    assert_eq!(o.tsns(), vec![lost], "{}", o.describe());
    o.assert_at(t0 + secs(1), ms(1));
    let p = &s.assoc().paths()[0];
    assert_eq!(p.stats.fast_retransmissions, 0);
    assert_eq!(p.stats.timeouts, 1);
}

/// Reordering shorter than reo_wnd (RFC 8985 §6.2 step 4): A arrives 5 ms after the
/// chunks sent after it were acknowledged, before its reorder deadline, and is never
/// retransmitted. (With reo_wnd = 0 it would be retransmitted at once.)
#[test]
fn reordering_within_the_reordering_window_is_not_a_loss() {
    let (mut s, full) = warmed_up(LossDetection::Rack, 2);
    let tsns = burst(&mut s, full, 3);
    let late = tsns[0];
    s.advance(RTT);
    s.send_chunks(vec![sack(late.wrapping_sub(1), BIG_WINDOW, &[(2, 3)])]);
    s.expect_nothing_now();
    s.advance(ms(5));
    s.send_chunks(vec![sack(tsns[2], BIG_WINDOW, &[])]);
    s.expect_nothing_for(secs(5));
    let p = &s.assoc().paths()[0];
    assert_eq!(p.stats.retransmissions, 0);
    assert_eq!(p.stats.tail_loss_probes, 0);
}

/// Reordering longer than reo_wnd is taken for a loss (the other side of the window).
#[test]
fn reordering_beyond_the_reordering_window_is_a_loss() {
    let (mut s, full) = warmed_up(LossDetection::Rack, 2);
    let t0 = s.t();
    let tsns = burst(&mut s, full, 3);
    let late = tsns[0];
    s.advance(RTT);
    s.send_chunks(vec![sack(late.wrapping_sub(1), BIG_WINDOW, &[(2, 3)])]);
    let sent = s.collect_until(t0 + RTT + ms(20));
    assert!(sent.iter().any(|o| o.tsns() == vec![late]));
}

/// A tail loss (the last chunk of a burst, nothing sent after it): the probe timeout
/// (RFC 8985 §7.2: 2·SRTT, plus the delayed-SACK time with one packet in flight) sends
/// the last chunk again, and its SACK repairs the loss long before T3-rtx, without a
/// timeout. The probe's SACK reports no duplicate: the probe repaired a loss, and the
/// window is cut as for a fast retransmit (§7.4).
#[test]
fn a_tail_loss_is_repaired_by_the_probe_well_before_the_rto() {
    let (mut s, full) = warmed_up(LossDetection::Rack, 3);
    let t0 = s.t();
    let tsns = burst(&mut s, full, 3);
    let tail = tsns[2];
    s.advance(RTT);
    s.send_chunks(vec![sack(tsns[1], BIG_WINDOW, &[])]);
    let before = s.assoc().paths()[0].clone();
    let probe = s.expect();
    assert_eq!(probe.tsns(), vec![tail], "{}", probe.describe());
    // The PTO was armed by the SACK at t0 + RTT: 2·SRTT + sack_delay (200 ms).
    probe.assert_at(t0 + RTT + 2 * RTT + ms(200), ms(1));
    let p = s.assoc().paths()[0].clone();
    assert_eq!(p.ssthresh, before.ssthresh, "sending a probe cuts nothing");
    s.advance(RTT);
    s.send_chunks(vec![sack(tail, BIG_WINDOW, &[])]);
    let repaired = s.t() - t0;
    let p = s.assoc().paths()[0].clone();
    assert!(
        repaired < p.rto,
        "repaired after {repaired:?}, RTO {:?}",
        p.rto
    );
    assert_eq!(p.stats.tail_loss_probes, 1);
    assert_eq!(p.stats.timeouts, 0);
    assert_eq!(p.stats.fast_retransmissions, 0);
    assert!(
        p.ssthresh < before.ssthresh,
        "the repaired loss is answered"
    );
    s.expect_nothing_for(secs(5));
}

/// The same probe, but only the SACK was late: the probe's SACK reports the chunk as a
/// duplicate (SCTP's DSACK), so the probe repaired nothing and the window stays (§7.4).
#[test]
fn a_probe_reported_as_a_duplicate_leaves_the_window_alone() {
    let (mut s, full) = warmed_up(LossDetection::Rack, 3);
    let tsns = burst(&mut s, full, 3);
    let tail = tsns[2];
    s.advance(RTT);
    s.send_chunks(vec![sack(tsns[1], BIG_WINDOW, &[])]);
    let before = s.assoc().paths()[0].clone();
    let probe = s.expect();
    assert_eq!(probe.tsns(), vec![tail], "{}", probe.describe());
    s.advance(RTT);
    let dup = Sack {
        cum_tsn_ack: tail,
        a_rwnd: BIG_WINDOW,
        gap_blocks: vec![],
        dup_tsns: vec![tail],
    };
    s.send_chunks(vec![dup.into()]);
    let p = s.assoc().paths()[0].clone();
    assert_eq!(p.stats.tail_loss_probes, 1);
    assert_eq!((p.cwnd, p.ssthresh), (before.cwnd, before.ssthresh));
    s.expect_nothing_for(secs(5));
}

/// The same tail loss under RFC 9260's rule: only T3-rtx repairs it, an RTO (1 s) after
/// the SACK that restarted it.
#[test]
fn dupthresh_repairs_the_same_tail_loss_only_with_t3() {
    let (mut s, full) = warmed_up(LossDetection::DupThresh, 3);
    let t0 = s.t();
    let tsns = burst(&mut s, full, 3);
    let tail = tsns[2];
    s.advance(RTT);
    s.send_chunks(vec![sack(tsns[1], BIG_WINDOW, &[])]);
    let o = s.expect();
    assert_eq!(o.tsns(), vec![tail], "{}", o.describe());
    o.assert_at(t0 + RTT + secs(1), ms(1));
    let p = &s.assoc().paths()[0];
    assert_eq!(p.stats.timeouts, 1);
    assert!(o.t() - t0 >= p.rto.min(secs(1)));
}

/// Two chunks lost at the tail: the probe resends the last one after 2·SRTT (more than a
/// packet in flight: no delayed-SACK allowance); its SACK delivers a chunk sent after the
/// other, which RACK then finds lost at once (RFC 8985 §7.4: the probe's ack reveals the
/// loss and the normal response applies: fast retransmit, one cwnd cut).
#[test]
fn a_probe_reveals_an_earlier_tail_loss_to_rack() {
    let (mut s, full) = warmed_up(LossDetection::Rack, 4);
    let t0 = s.t();
    let tsns = burst(&mut s, full, 4);
    s.advance(RTT);
    s.send_chunks(vec![sack(tsns[1], BIG_WINDOW, &[])]);
    let probe = s.expect();
    assert_eq!(probe.tsns(), vec![tsns[3]], "{}", probe.describe());
    probe.assert_at(t0 + RTT + 2 * RTT, ms(1));
    s.advance(RTT);
    // The probe arrived, tsns[2] did not: a gap block for tsns[3].
    s.send_chunks(vec![sack(tsns[1], BIG_WINDOW, &[(2, 2)])]);
    let o = s.expect();
    assert_eq!(o.tsns(), vec![tsns[2]], "{}", o.describe());
    assert_eq!(o.t(), s.t(), "found lost by the probe's SACK");
    let p = &s.assoc().paths()[0];
    assert_eq!(p.stats.tail_loss_probes, 1);
    assert_eq!(p.stats.fast_retransmissions, 1);
    assert_eq!(p.stats.timeouts, 0);
    s.advance(RTT);
    s.send_chunks(vec![sack(tsns[3], BIG_WINDOW, &[])]);
    s.expect_nothing_for(secs(5));
}

/// With new data waiting but cwnd full, the probe is new data (RFC 8985 §7.3), sent
/// regardless of cwnd, and T3-rtx restarts one RTO after it.
#[test]
fn the_probe_is_new_data_when_there_is_some() {
    let (mut s, full) = warmed_up(LossDetection::Rack, 5);
    let tsns = burst(&mut s, full, 4);
    // cwnd is full: this message waits.
    s.app_send(0, &vec![9u8; full]);
    s.expect_nothing_now();
    let t_send = s.t();
    let probe = s.expect();
    assert_eq!(
        probe.tsns(),
        vec![tsns[3].wrapping_add(1)],
        "{}",
        probe.describe()
    );
    probe.assert_at(t_send + 2 * RTT, ms(1));
    assert_eq!(s.assoc().paths()[0].stats.tail_loss_probes, 1);
    // No second probe without an ack: the next thing is T3, one RTO after the probe.
    let o = s.expect();
    o.assert_at(probe.t() + secs(1), ms(1));
    assert_eq!(s.assoc().paths()[0].stats.timeouts, 1);
    assert_eq!(s.assoc().paths()[0].stats.tail_loss_probes, 1);
}

/// Whole transfers with RACK-TLP over a lossy, duplicating, reordering wire: every message
/// arrives exactly once, intact, in order (`transfer` checks).
fn rack_transfer_over_a_hostile_wire(seed: u64, unordered: bool) {
    let cfg = AssociationConfig {
        loss_detection: LossDetection::Rack,
        ..AssociationConfig::default()
    };
    let mut p = Pair::new(cfg, seed);
    p.to_server = Wire::hostile(0.05, 0.02, 0.05);
    p.to_client = Wire::hostile(0.05, 0.02, 0.05);
    let (c, s) = p.connect();
    let total = 20_000_000;
    let plan = Plan {
        streams: 8,
        total_bytes: total,
        size: Box::new(|n| 500 + (n as usize * 7919) % 3000),
        unordered,
    };
    let o = transfer(&mut p, c, s, &plan, Duration::from_secs(20_000));
    assert_eq!(o.bytes as usize, total);
    let path = &p.client.association(c).unwrap().paths()[0];
    eprintln!("{o:?} {:?}", path.stats);
    assert!(path.stats.fast_retransmissions > 100);
}

#[test]
fn rack_transfers_ordered_messages_exactly_once_over_a_hostile_wire() {
    rack_transfer_over_a_hostile_wire(21, false);
}

#[test]
fn rack_transfers_unordered_messages_exactly_once_over_a_hostile_wire() {
    rack_transfer_over_a_hostile_wire(22, true);
}

/// CMT over two lossy paths with RACK per path (each path's chunks judged against its own
/// deliveries): the transfer completes exactly once.
#[test]
fn rack_under_cmt_transfers_exactly_once_over_two_lossy_paths() {
    let cfg = AssociationConfig {
        loss_detection: LossDetection::Rack,
        cmt: Some(CmtConfig::default()),
        ..AssociationConfig::default()
    };
    let mut p = Pair::multihomed(cfg, 2, 23);
    p.path_wires[0] = (
        Wire::hostile(0.02, 0.01, 0.02),
        Wire::hostile(0.02, 0.0, 0.0),
    );
    let slow = Wire {
        delay: ms(40),
        ..Wire::hostile(0.03, 0.01, 0.02)
    };
    p.path_wires[1] = (slow.clone(), slow);
    let (c, s) = p.connect();
    let total = 10_000_000;
    let plan = Plan {
        streams: 4,
        total_bytes: total,
        size: Box::new(|n| 800 + (n as usize * 131) % 2000),
        unordered: false,
    };
    let o = transfer(&mut p, c, s, &plan, Duration::from_secs(20_000));
    assert_eq!(o.bytes as usize, total);
    let a = p.client.association(c).unwrap();
    let fr: u64 = a.paths().iter().map(|x| x.stats.fast_retransmissions).sum();
    assert!(fr > 10, "{:?}", a.paths());
}

/// A duplicate TSN report (SCTP's DSACK: a retransmission was spurious) widens the
/// reordering window to 2·min_RTT/4 (RFC 8985 §6.2 step 4): A arriving 20 ms after the
/// chunks sent after it, which `reordering_beyond_the_reordering_window_is_a_loss` takes
/// for a loss, is now waited for.
#[test]
fn a_duplicate_report_widens_the_reordering_window() {
    let (mut s, full) = warmed_up(LossDetection::Rack, 6);
    let tsns = burst(&mut s, full, 3);
    let first = tsns[0];
    let dup = Sack {
        cum_tsn_ack: first.wrapping_sub(1),
        a_rwnd: BIG_WINDOW,
        gap_blocks: vec![],
        dup_tsns: vec![first.wrapping_sub(1)],
    };
    s.send_chunks(vec![dup.into()]);
    s.advance(RTT);
    s.send_chunks(vec![sack(first.wrapping_sub(1), BIG_WINDOW, &[(2, 3)])]);
    s.advance(ms(20));
    s.send_chunks(vec![sack(tsns[2], BIG_WINDOW, &[])]);
    s.expect_nothing_for(secs(5));
    assert_eq!(s.assoc().paths()[0].stats.retransmissions, 0);
}
