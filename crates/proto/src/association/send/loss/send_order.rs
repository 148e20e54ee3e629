//! RACK's walk in send order (RFC 8985 §6.2 step 5 walks "packets in order of xmit_ts"): each
//! path's transmissions in the order they left, so detection stops at the first chunk whose
//! deadline has not passed (deadlines grow with send time on one path) and a SACK costs what
//! it newly reports, not the outstanding window. A SACK with a frozen cumulative ack and a
//! block at the highest TSN made the TSN-order walk visit every hole on every SACK.
//!
//! Entries are `(xmit, seq)` pairs taken at transmission; an entry is live while its chunk is
//! outstanding, in flight and not sent again since (`Sent::xmit` unchanged). Stale entries go
//! when they reach the front, and a queue much longer than the window is compacted, so the
//! memory is O(window) and each entry is passed over a bounded number of times.
//!
//! First transmissions and retransmissions have their own queue: first transmissions are also
//! in TSN order, so the first one above the last SACK's highest block ends their walk;
//! retransmissions above it are passed over (not judged), at most [`SKIP_LIMIT`] per walk
//! (then the reorder timer takes it up again).
//! A chunk back in flight because the peer reneged on it (RFC 9260 §6.2.1) keeps its old
//! transmission: it goes into a third list, a heap by `xmit`, walked the same way.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::time::Duration;

use super::super::SendQueue;
use super::super::sent::{ChunkState, Sent};
use crate::path::PathId;
use crate::time::Instant;

/// Retransmissions a walk passes over (above the highest block, or stale behind one) before
/// it stops: the price of judging the rest later (next SACK, reorder timer or T3) instead of
/// letting a peer that never reports them make every SACK cost the whole window.
pub(crate) const SKIP_LIMIT: usize = 64;

/// One transmission: its `Sent::xmit` and `Sent::seq`.
type Entry = (u64, u64);

/// Every path's transmissions in send order.
#[derive(Debug, Default)]
pub(crate) struct SendOrder {
    /// Per path id: first transmissions, in send (and TSN) order.
    first: Vec<VecDeque<Entry>>,
    /// Per path id: retransmissions, in send order.
    rtx: Vec<VecDeque<Entry>>,
    /// Per path id: chunks back in flight after a renege, earliest transmission first.
    reneged: Vec<BinaryHeap<Reverse<Entry>>>,
    /// The queues hold every chunk in flight: off while RACK is not the loss rule (nothing is
    /// recorded) and after a chunk went back in flight without a transmission (renege, a
    /// spurious timeout undone); the next walk rebuilds them from the send queue.
    tracking: bool,
    /// Entries the walks looked at (the cost the tests bound).
    pub(crate) visits: u64,
}

/// What one path's walk needs to know of RACK's state.
pub(crate) struct Judge {
    /// RACK.xmit_ts and RACK.end_seq: only chunks sent before it are judged.
    pub(crate) end_xmit: u64,
    /// RACK.rtt + RACK.reo_wnd.
    pub(crate) wait: Duration,
    /// Queue index + 1 of the last SACK's highest block (0: none): only below it.
    pub(crate) limit: usize,
}

impl SendOrder {
    /// A chunk left on `path` (`first`: its first transmission).
    #[inline]
    pub(crate) fn on_sent(&mut self, path: PathId, first: bool, xmit: u64, seq: u64) {
        if !self.tracking {
            return;
        }
        let qs = if first {
            &mut self.first
        } else {
            &mut self.rtx
        };
        let i = path.0 as usize;
        if qs.len() <= i {
            qs.resize_with(i + 1, VecDeque::new);
        }
        qs[i].push_back((xmit, seq));
    }

    /// The peer reneged on a chunk last sent on `path` as transmission `xmit`: it is in
    /// flight again.
    pub(crate) fn on_reneged(&mut self, path: PathId, xmit: u64, seq: u64) {
        if !self.tracking {
            return;
        }
        let i = path.0 as usize;
        if self.reneged.len() <= i {
            self.reneged.resize_with(i + 1, BinaryHeap::new);
        }
        self.reneged[i].push(Reverse((xmit, seq)));
    }

    /// The queues no longer hold every chunk in flight; they are rebuilt before the next walk.
    pub(crate) fn forget(&mut self) {
        if self.tracking {
            self.tracking = false;
            self.first.iter_mut().for_each(VecDeque::clear);
            self.rtx.iter_mut().for_each(VecDeque::clear);
            self.reneged.iter_mut().for_each(BinaryHeap::clear);
        }
    }

    /// Before a walk: rebuilds the queues from the send queue if they were forgotten.
    pub(crate) fn ensure(&mut self, tx: &SendQueue, npaths: usize) {
        for qs in [&mut self.first, &mut self.rtx] {
            if qs.len() < npaths {
                qs.resize_with(npaths, VecDeque::new);
            }
        }
        if self.reneged.len() < npaths {
            self.reneged.resize_with(npaths, BinaryHeap::new);
        }
        if self.tracking {
            return;
        }
        self.tracking = true;
        for s in tx
            .outstanding
            .iter()
            .filter(|s| s.state == ChunkState::InFlight)
        {
            let qs = if s.tx_count == 1 {
                &mut self.first
            } else {
                &mut self.rtx
            };
            if let Some(q) = qs.get_mut(s.path.0 as usize) {
                q.push_back((s.xmit, s.seq));
            }
        }
        for q in &mut self.rtx {
            q.make_contiguous().sort_unstable();
        }
    }

    /// Drops the entries of `path` below the cumulative ack, at the front of its queues
    /// (what a walk would pop first), without judging anything.
    pub(crate) fn drop_acked(&mut self, path: PathId, tx: &SendQueue) {
        let Some(front) = tx.outstanding.front().map(|s| s.seq) else {
            return;
        };
        let i = path.0 as usize;
        for qs in [&mut self.first, &mut self.rtx] {
            if let Some(q) = qs.get_mut(i) {
                while q.front().is_some_and(|&(_, seq)| seq < front) {
                    q.pop_front();
                }
                if q.len() > 2 * tx.outstanding.len() + 64 {
                    q.retain(|&e| live(tx, e).is_some());
                }
            }
        }
    }

    /// RACK_detect_loss over `path`'s chunks: appends the lost ones (queue index, path) to
    /// `lost` and returns the earliest deadline of those judged and not yet lost.
    pub(crate) fn walk(
        &mut self,
        path: PathId,
        tx: &SendQueue,
        judge: &Judge,
        now: Instant,
        lost: &mut Vec<(usize, PathId)>,
    ) -> Option<Instant> {
        let i = path.0 as usize;
        let mut earliest = None;
        for (q, first) in [(&mut self.first[i], true), (&mut self.rtx[i], false)] {
            if let Some(at) = walk_one(q, first, tx, judge, now, lost, &mut self.visits) {
                earliest = Some(earliest.map_or(at, |e: Instant| e.min(at)));
            }
            // Stale entries behind a chunk that waits: bounded by the window.
            if q.len() > 2 * tx.outstanding.len() + 64 {
                q.retain(|&e| live(tx, e).is_some());
            }
        }
        let h = &mut self.reneged[i];
        if let Some(at) = walk_heap(h, tx, judge, now, lost, &mut self.visits) {
            earliest = Some(earliest.map_or(at, |e: Instant| e.min(at)));
        }
        if h.len() > 2 * tx.outstanding.len() + 64 {
            h.retain(|&Reverse(e)| live(tx, e).is_some());
        }
        earliest
    }
}

impl SendOrder {
    /// Whether the queues hold every chunk in flight (RACK is the loss rule and they were
    /// built).
    pub(crate) fn tracking(&self) -> bool {
        self.tracking
    }

    /// The three-miss rule's candidates (RFC 9260 §7.2.4), a superset of the chunks in flight
    /// below queue index `limit` that may get a miss: first transmissions (a prefix of their
    /// queue in TSN order), retransmissions sent before `xmit_on[path]` (a miss needs a chunk
    /// sent after them to have arrived) and at least `floor[path]` ago, and reneged chunks.
    /// Each is listed while it collects its misses, then lost and dropped, so a run of SACKs
    /// costs the chunks they report missing, not the holes times the SACKs. Sorted, no
    /// duplicates.
    pub(crate) fn miss_candidates(
        &mut self,
        tx: &SendQueue,
        limit: usize,
        xmit_on: &[u64],
        floor: &dyn Fn(usize) -> Duration,
        now: Instant,
        out: &mut Vec<usize>,
    ) {
        for q in &mut self.first {
            let mut j = 0;
            while let Some(&e) = q.get(j) {
                self.visits += 1;
                match live(tx, e) {
                    None if j == 0 => {
                        q.pop_front();
                    }
                    None => j += 1,
                    Some((i, _)) if i >= limit => break,
                    Some((i, _)) => {
                        out.push(i);
                        j += 1;
                    }
                }
            }
        }
        for (pi, q) in self.rtx.iter_mut().enumerate() {
            let before = xmit_on.get(pi).copied().unwrap_or(0);
            let fl = floor(pi);
            let (mut j, mut passed) = (0, 0);
            let mut stale = Stale::default();
            while let Some(&e) = q.get(j) {
                self.visits += 1;
                match live(tx, e) {
                    None if j == 0 => {
                        q.pop_front();
                        continue;
                    }
                    None => {
                        if stale.behind(q, tx) {
                            // Compacted: start over (duplicates go at the end).
                            (j, passed) = (0, 0);
                            continue;
                        }
                    }
                    Some((_, s)) if s.xmit + 1 >= before => break,
                    Some((_, s)) if now.saturating_duration_since(s.sent_at) < fl => break,
                    Some((i, _)) if i >= limit => {
                        passed += 1;
                        if passed > SKIP_LIMIT {
                            break;
                        }
                    }
                    Some((i, _)) => out.push(i),
                }
                j += 1;
            }
        }
        for h in &mut self.reneged {
            if h.is_empty() {
                continue;
            }
            self.visits += h.len() as u64;
            h.retain(|&Reverse(e)| match live(tx, e) {
                Some((i, _)) => {
                    if i < limit {
                        out.push(i);
                    }
                    true
                }
                None => false,
            });
        }
        out.sort_unstable();
        out.dedup();
    }
}

/// The chunk an entry stands for, if it is still that transmission and in flight.
#[inline]
fn live(tx: &SendQueue, (xmit, seq): Entry) -> Option<(usize, &Sent)> {
    let i = tx.index_of_seq(seq)?;
    let s = &tx.outstanding[i];
    (s.xmit == xmit && s.state == ChunkState::InFlight).then_some((i, s))
}

/// The walk over reneged chunks, earliest transmission first; it stops at one it may not
/// judge (sent after RACK.xmit_ts, or above the last SACK's blocks) or not yet due.
fn walk_heap(
    h: &mut BinaryHeap<Reverse<Entry>>,
    tx: &SendQueue,
    judge: &Judge,
    now: Instant,
    lost: &mut Vec<(usize, PathId)>,
    visits: &mut u64,
) -> Option<Instant> {
    let end_xmit = judge.end_xmit;
    // Live ones above the last SACK's blocks are passed over and put back.
    let mut passed = Vec::new();
    let mut found = None;
    while let Some(&Reverse(e)) = h.peek() {
        *visits += 1;
        if let Some((i, s)) = live(tx, e) {
            if s.xmit >= end_xmit {
                break;
            }
            if i + 1 > judge.limit {
                if passed.len() == SKIP_LIMIT {
                    found = Some(now + judge.wait);
                    break;
                }
                passed.push(Reverse(e));
                h.pop();
                continue;
            }
            let deadline = s.sent_at + judge.wait;
            if deadline > now {
                found = Some(deadline);
                break;
            }
            lost.push((i, s.path));
        }
        h.pop();
    }
    h.extend(passed);
    found
}

fn walk_one(
    q: &mut VecDeque<Entry>,
    first: bool,
    tx: &SendQueue,
    judge: &Judge,
    now: Instant,
    lost: &mut Vec<(usize, PathId)>,
    visits: &mut u64,
) -> Option<Instant> {
    let end_xmit = judge.end_xmit;
    // Entries before `j` are kept (retransmissions passed over); those at the front that
    // are stale or found lost now (marking makes them stale) go.
    let mut j = 0;
    let mut passed = 0;
    let mut stale = Stale::default();
    while let Some(&e) = q.get(j) {
        *visits += 1;
        if let Some((i, s)) = live(tx, e) {
            // Sent after the most recently sent delivered chunk: so is every later one.
            if s.xmit >= end_xmit {
                return None;
            }
            if i + 1 > judge.limit {
                // Above the last SACK's blocks: it may have arrived unreported, and so may
                // every later first transmission (higher TSNs).
                if first {
                    return None;
                }
                passed += 1;
                if passed > SKIP_LIMIT {
                    // The rest is judged when the reorder timer fires or the next SACK comes.
                    return Some(now + judge.wait);
                }
                j += 1;
                continue;
            }
            let deadline = s.sent_at + judge.wait;
            if deadline > now {
                return Some(deadline);
            }
            lost.push((i, s.path));
        }
        if j == 0 {
            q.pop_front();
        } else if stale.behind(q, tx) {
            // Compacted: start over (what was found lost is found again, deduplicated).
            j = 0;
            passed = 0;
        } else {
            j += 1;
        }
    }
    None
}

/// Stale entries a walk met behind entries it keeps: past [`STALE_LIMIT`] the queue is
/// compacted once, so they are not met again on every SACK (each compaction removes that
/// many at least: amortised).
#[derive(Default)]
struct Stale {
    seen: usize,
    compacted: bool,
}

/// Stale entries a walk passes before it compacts its queue.
const STALE_LIMIT: usize = 1024;

impl Stale {
    /// One more stale entry at `q[j]`, `j > 0`; whether the queue was compacted now.
    fn behind(&mut self, q: &mut VecDeque<Entry>, tx: &SendQueue) -> bool {
        self.seen += 1;
        if self.seen <= STALE_LIMIT || self.compacted {
            return false;
        }
        self.compacted = true;
        q.retain(|&e| live(tx, e).is_some());
        true
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;
    use std::time::Duration;

    use braid_wire::chunk::GapAckBlock;
    use bytes::Bytes;
    use rand_core::SeedableRng;

    use crate::association::send::sack::AckReport;
    use crate::association::{Association, State};
    use crate::cc::AnyController;
    use crate::cc::fixed::Fixed;
    use crate::{AssociationConfig, Instant, LossDetection, SendOptions};

    const INITIAL_TSN: u32 = 1_000;

    /// An established one-path association under RACK with about `n` chunks in flight (how
    /// many is returned), all sent at time 0 (a fixed window far larger than the data).
    fn in_flight(n: usize) -> (Association, usize) {
        let cfg = Arc::new(AssociationConfig {
            loss_detection: LossDetection::Rack,
            send_buffer: 64 << 20,
            max_message_size: 64 << 20,
            max_burst: u32::MAX,
            hb_interval: None,
            ..AssociationConfig::default()
        });
        let key = Arc::new(crate::cookie::CookieKey::new(
            [7; 32],
            Duration::from_secs(60),
        ));
        let rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let now = Instant::ZERO;
        let mut a = Association::new_inner(
            cfg.clone(),
            key,
            rng,
            State::Established,
            now,
            "10.0.0.2:9899".parse().unwrap(),
            "10.0.0.1:9899".parse().unwrap(),
            9899,
            9899,
        );
        a.tx.start(INITIAL_TSN, 1, 1 << 30, 0);
        let mtu = a.paths[0].mtu;
        a.paths[0].cc = AnyController::Fixed(Fixed::new(mtu, 1 << 30));
        let payload = mtu - 48;
        let data = Bytes::from(vec![7u8; payload * n]);
        a.send(now, 0, data, SendOptions::default()).unwrap();
        let mut buf = Vec::new();
        while a.poll_transmit(now, &mut buf).is_some() {
            buf.clear();
        }
        let sent = a.tx.outstanding.len();
        assert!(
            sent > n * 9 / 10 && a.tx.queued_bytes() == 0,
            "all sent at once"
        );
        (a, sent)
    }

    /// A SACK with the cumulative ack frozen below the window and one block acknowledging
    /// the highest TSN sent.
    fn hostile_sack(a: &mut Association, now: Instant, n: usize) {
        let top = n as u16;
        sack_blocks(a, now, top, top);
    }

    /// A SACK with the cumulative ack frozen below the window and one block, offsets
    /// `start..=end` from it.
    fn sack_blocks(a: &mut Association, now: Instant, start: u16, end: u16) {
        let gaps = [GapAckBlock { start, end }];
        a.on_sack(
            now,
            AckReport {
                from: crate::PathId(0),
                cum: INITIAL_TSN - 1,
                a_rwnd: 1 << 30,
                gaps: &gaps,
                nr_gaps: &[],
                signals: Default::default(),
            },
        );
    }

    /// RFC 8985 §6.2 walks in send order and stops at the first chunk not yet due: a
    /// hostile receiver repeating a SACK whose block sits at the highest TSN (every other
    /// chunk a hole) costs one look per SACK, not one per hole. The walk in TSN order looked
    /// at all ~10,000 holes on each of the 1,000 SACKs.
    #[test]
    fn a_frozen_cumulative_ack_below_a_top_block_costs_one_look_per_sack() {
        let (mut a, n) = in_flight(10_000);
        let t = Instant::from_duration(Duration::from_millis(40));
        for _ in 0..1_000 {
            hostile_sack(&mut a, t, n);
        }
        let visits = a.rack.order.visits;
        assert!(
            visits <= 2 * 1_000 + 10,
            "1,000 SACKs looked at {visits} entries"
        );
        assert_eq!(a.tx.tally.marked, 0, "nothing is due yet");
        // Past RACK.rtt + reo_wnd every hole is lost, found in one walk of n looks.
        let later = t + Duration::from_millis(40);
        hostile_sack(&mut a, later, n);
        assert_eq!(a.tx.tally.marked, n - 1, "every hole is lost");
        let walked = a.rack.order.visits - visits;
        assert!(walked <= n as u64 + 2, "the losing walk looked at {walked}");
    }

    /// RFC 9260 §6.2.1 lets a receiver renege, but one that alternates a block over the
    /// whole window with a block of one TSN made every SACK cost the window twice (put back
    /// in flight, then acknowledged again). At most `MAX_RENEGED_PER_SACK` chunks go back per
    /// SACK; a renege the peer keeps to is honoured a slice per SACK. Before, one SACK put
    /// all 9,998 back.
    #[test]
    fn a_renege_costs_at_most_a_slice_of_the_window_per_sack() {
        use crate::association::send::sack::MAX_RENEGED_PER_SACK as K;
        let (mut a, n) = in_flight(10_000);
        let top = n as u16;
        let t = Instant::from_duration(Duration::from_millis(40));
        sack_blocks(&mut a, t, 2, top);
        assert_eq!(a.tx.tally.gap_acked, n - 1);
        sack_blocks(&mut a, t, top, top);
        assert_eq!(
            a.tx.tally.gap_acked,
            n - 1 - K,
            "one SACK reneged more than {K}"
        );
        // Alternating: each SACK moves at most K chunks, and RACK looks at each once.
        let visits = a.rack.order.visits;
        for i in 0..100 {
            let start = if i % 2 == 0 { 2 } else { top };
            sack_blocks(&mut a, t, start, top);
        }
        let walked = a.rack.order.visits - visits;
        assert!(
            walked <= 100 * (K as u64 + 4),
            "RACK looked at {walked} entries over 100 SACKs"
        );
        // A renege the peer keeps to is honoured: all but the block's TSN go back in flight.
        for _ in 0..n / K + 1 {
            sack_blocks(&mut a, t, top, top);
        }
        assert_eq!(a.tx.tally.gap_acked, 1);
    }

    /// RFC 9260 §7.2.4's three misses add one to every hole below the highest TSN newly
    /// acknowledged. A receiver whose block grows down by one hole per SACK made each SACK
    /// walk every hole below it (2,000 SACKs looked at 17,730,863 entries, now 49,304); the
    /// candidates now come from the send order, each listed while it collects its misses.
    #[test]
    fn a_block_growing_down_a_hole_per_sack_costs_what_it_reports() {
        let (mut a, n) = in_flight(10_000);
        let top = n as u16;
        let t = Instant::from_duration(Duration::from_millis(40));
        hostile_sack(&mut a, t, n); // RACK starts tracking
        let visits = a.rack.order.visits + a.tx.miss_visits;
        for i in 0..2_000u16 {
            sack_blocks(&mut a, t, top - 1 - i, top);
        }
        let walked = a.rack.order.visits + a.tx.miss_visits - visits;
        // Each chunk is looked at a few times (three misses, then dropped), twice counted.
        assert!(
            walked <= 6 * n as u64,
            "2,000 SACKs looked at {walked} entries"
        );
        assert_eq!(a.tx.tally.gap_acked, 2_001);
        assert_eq!(
            a.tx.tally.marked,
            n - 2_001,
            "every hole below got three misses"
        );
    }

    /// A receiver acknowledging chunks the instant they leave (before it can have them)
    /// drove RACK's round trip to zero, and then every SACK made the whole window "lost"
    /// and resent. A round trip is never taken as shorter than half the shortest verified
    /// one (handshake, HEARTBEAT), here 40 ms.
    #[test]
    fn an_optimistic_receiver_cannot_have_the_window_resent_on_every_sack() {
        let (mut a, n) = in_flight(10_000);
        a.paths[0].rtt.on_verified(Duration::from_millis(40));
        let top = n as u16;
        let ms = |v| Instant::from_duration(Duration::from_millis(v));
        hostile_sack(&mut a, ms(40), n);
        hostile_sack(&mut a, ms(80), n);
        assert_eq!(a.tx.tally.marked, n - 1, "the holes are lost");
        let mut buf = Vec::new();
        let now = ms(80);
        while a.poll_transmit(now, &mut buf).is_some() {
            buf.clear();
        }
        assert_eq!(a.tx.tally.marked, 0, "and resent at 80 ms");
        a.send(now, 0, Bytes::from(vec![1u8; 100]), SendOptions::default())
            .unwrap();
        while a.poll_transmit(now, &mut buf).is_some() {
            buf.clear();
        }
        // At once, the new chunk and then the last retransmission "arrive".
        sack_blocks(&mut a, now, top, top + 1);
        sack_blocks(&mut a, now, top - 1, top + 1);
        assert_eq!(
            a.tx.tally.marked, 0,
            "the retransmissions were declared lost again"
        );
    }
}
