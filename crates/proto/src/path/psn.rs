//! LS-SCTP's path sequence numbers (Abd El Al et al. §4.2): each path numbers the DATA it carries
//! on its own, so that loss detection and congestion control run per path while the
//! association sequence (the TSN field of LS-DATA) orders delivery.
//!
//! On the wire a PSN has 12 bits; both sides keep it unwrapped in a `u32` (the sender
//! counts from 1, the receiver's cumulative PSN starts at 0) and translate with serial
//! arithmetic on 12 bits, which is unambiguous while fewer than 2048 PSNs of one path are
//! outstanding ([`MAX_PSNS_IN_FLIGHT`]).

use std::collections::{BTreeSet, VecDeque};

/// PSN values on the wire (12 bits).
pub(crate) const PSN_MOD: u32 = 1 << 12;

/// PSNs of one path that may be unacknowledged at once: half the 12-bit space, so that a
/// wire PSN is never ambiguous (serial number arithmetic, RFC 1982).
pub(crate) const MAX_PSNS_IN_FLIGHT: u32 = PSN_MOD / 2 - 1;

/// The wire form of an unwrapped PSN.
pub(crate) fn wire(psn: u32) -> u16 {
    (psn % PSN_MOD) as u16
}

/// The unwrapped PSN nearest to `reference` whose wire form is `w`.
pub(crate) fn unwrap_near(reference: u32, w: u16) -> u32 {
    let d = (u32::from(w).wrapping_sub(reference)) % PSN_MOD;
    if d < PSN_MOD / 2 {
        reference.wrapping_add(d)
    } else {
        reference.wrapping_sub(PSN_MOD - d)
    }
}

/// Bytes of an LS-SACK without gap blocks or duplicates: chunk header and fixed fields.
pub(crate) const LS_SACK_FIXED_LEN: usize = 24;

/// Gap blocks and duplicates each of `n` LS-SACKs may carry so that all of them fit in
/// `room` bytes (4 bytes per block or duplicate, a quarter of them duplicates at most),
/// within the configured maxima. An LS-SACK left out for want of room would leave its
/// path's holes unreported for good: the set must always fit.
pub(crate) fn ls_sack_budget(
    room: usize,
    n: usize,
    max_blocks: usize,
    max_dups: usize,
) -> (usize, usize) {
    let entries = (room / n.max(1)).saturating_sub(LS_SACK_FIXED_LEN) / 4;
    let dups = max_dups.min(entries / 4);
    (max_blocks.min(entries - dups), dups)
}

/// The sender's sequence of one path.
#[derive(Debug, Clone)]
pub(crate) struct PsnSender {
    /// The next PSN to give a chunk sent on this path.
    pub(crate) next: u32,
    /// Highest PSN the peer acknowledged cumulatively (or we told it to skip to).
    pub(crate) peer_cum: u32,
    /// PSN of the copy probing this path after a timeout (LS-SCTP timeout handling):
    /// no new data goes here until it is acknowledged.
    pub(crate) probe: Option<u32>,
    /// `seq` of the chunk whose copy is to probe this path next (LS-SCTP timeout handling).
    pub(crate) copy_of: Option<u64>,
    /// An LS-FORWARD-PSN for this path should go out with the next packet.
    pub(crate) forward_due: bool,
    /// The cumulative PSN that LS-FORWARD-PSN announces.
    pub(crate) forward_to: u32,
    /// (PSN, `seq` of the chunk) of each DATA transmission here above the peer's cumulative
    /// PSN, in PSN order: an LS-SACK finds its chunks without scanning the send queue. An
    /// entry is stale once its chunk left the queue or went out again with another PSN.
    pub(crate) sent: VecDeque<(u32, u64)>,
}

impl Default for PsnSender {
    fn default() -> Self {
        Self {
            next: 1,
            peer_cum: 0,
            probe: None,
            copy_of: None,
            forward_due: false,
            forward_to: 0,
            sent: VecDeque::new(),
        }
    }
}

impl PsnSender {
    /// Takes the next PSN.
    pub(crate) fn take(&mut self) -> u32 {
        let p = self.next;
        self.next = self.next.wrapping_add(1);
        p
    }

    /// Takes the next PSN for a DATA transmission of the chunk `seq`, and records it.
    pub(crate) fn take_for(&mut self, seq: u64) -> u32 {
        let p = self.take();
        self.sent.push_back((p, seq));
        p
    }

    /// The recorded transmissions with a PSN in `from..=to` (serial order), in PSN order.
    pub(crate) fn sent_between(&self, from: u32, to: u32) -> impl Iterator<Item = (u32, u64)> + '_ {
        let base = self.sent.front().map_or(0, |e| e.0);
        // Distance from the oldest record; a PSN serially before it counts as 0 (`from`) or
        // leaves nothing (`to`).
        let key = move |psn: u32| {
            let d = psn.wrapping_sub(base);
            (d < 1 << 31).then_some(d)
        };
        let (lo, hi) = (key(from).unwrap_or(0), key(to));
        let start = match hi {
            Some(_) => self.sent.partition_point(|e| e.0.wrapping_sub(base) < lo),
            None => self.sent.len(),
        };
        let hi = hi.unwrap_or(0);
        self.sent
            .range(start..)
            .take_while(move |e| e.0.wrapping_sub(base) <= hi)
            .copied()
    }

    /// Whether another PSN may be used without making the wire form ambiguous.
    pub(crate) fn has_room(&self) -> bool {
        self.next.wrapping_sub(self.peer_cum) <= MAX_PSNS_IN_FLIGHT
    }
}

/// What the receiver knows of one path's PSNs, for its LS-SACKs.
#[derive(Debug, Clone, Default)]
pub(crate) struct PsnMap {
    /// Every PSN up to this one arrived (or the sender said it never will).
    cum: u32,
    /// PSNs above `cum` that arrived.
    above: BTreeSet<u32>,
    /// PSNs that arrived twice since the last LS-SACK, as on the wire.
    dups: Vec<u32>,
    /// Something arrived since the last LS-SACK for this path.
    pub(crate) fresh: bool,
    /// The peer has used this path id at all.
    pub(crate) used: bool,
}

/// The PSNs held above the cumulative one at most: what an honest sender can have in
/// flight on one path.
const MAX_ABOVE: usize = MAX_PSNS_IN_FLIGHT as usize;

impl PsnMap {
    /// Records the arrival of wire PSN `w`. Returns false if it is too far from what was
    /// seen to be placed (ignored: an honest sender never does this).
    pub(crate) fn insert(&mut self, w: u16, max_dups: usize) -> bool {
        self.used = true;
        self.fresh = true;
        let psn = unwrap_near(self.cum, w);
        let ahead = psn.wrapping_sub(self.cum);
        if ahead == 0 || ahead > MAX_PSNS_IN_FLIGHT || self.above.contains(&psn) {
            // At or below the cumulative PSN (serially), or seen: a duplicate.
            if ahead == 0 || ahead > PSN_MOD / 2 || self.above.contains(&psn) {
                if self.dups.len() < max_dups {
                    self.dups.push(u32::from(w));
                }
                return true;
            }
            return false;
        }
        if self.above.len() >= MAX_ABOVE {
            return false;
        }
        self.above.insert(psn);
        self.advance();
        true
    }

    /// Whether PSNs above the cumulative one arrived (a gap in the path's sequence).
    pub(crate) fn has_gaps(&self) -> bool {
        !self.above.is_empty()
    }

    /// The sender will never send PSNs up to wire PSN `w` (LS-FORWARD-PSN).
    pub(crate) fn forward(&mut self, w: u16) {
        let to = unwrap_near(self.cum, w);
        let ahead = to.wrapping_sub(self.cum);
        if ahead == 0 || ahead > MAX_PSNS_IN_FLIGHT {
            return; // Old or absurd: nothing to skip.
        }
        self.fresh = true;
        self.cum = to;
        self.above = self.above.split_off(&to.wrapping_add(1));
        self.advance();
    }

    fn advance(&mut self) {
        while self.above.remove(&self.cum.wrapping_add(1)) {
            self.cum = self.cum.wrapping_add(1);
        }
    }

    /// The cumulative PSN as on the wire, at most `max_blocks` gap blocks (start, end
    /// offsets from it), and at most `max_dups` of the duplicates since the last call.
    pub(crate) fn report(
        &mut self,
        max_blocks: usize,
        max_dups: usize,
    ) -> (u32, Vec<(u16, u16)>, Vec<u32>) {
        let mut blocks: Vec<(u16, u16)> = Vec::new();
        for &p in &self.above {
            let off = p.wrapping_sub(self.cum);
            let Ok(off) = u16::try_from(off) else { break };
            let n = blocks.len();
            if n > 0 && blocks[n - 1].1 + 1 == off {
                blocks[n - 1].1 = off;
            } else if n == max_blocks {
                break;
            } else {
                blocks.push((off, off));
            }
        }
        self.fresh = false;
        let mut dups = std::mem::take(&mut self.dups);
        dups.truncate(max_dups);
        (u32::from(wire(self.cum)), blocks, dups)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unwrapping_picks_the_nearest_value_across_the_12_bit_wrap() {
        assert_eq!(unwrap_near(4095, 0), 4096);
        assert_eq!(unwrap_near(4096, 4095), 4095);
        assert_eq!(unwrap_near(10_000, wire(10_500)), 10_500);
        assert_eq!(unwrap_near(10_000, wire(9_000)), 9_000);
    }

    #[test]
    fn a_path_s_psns_are_reported_as_cumulative_ack_and_gap_blocks() {
        let mut m = PsnMap::default();
        for w in [1, 2, 4, 5, 7] {
            assert!(m.insert(w, 4));
        }
        assert!(m.insert(2, 4)); // duplicate
        assert_eq!(m.report(16, 16), (2, vec![(2, 3), (5, 5)], vec![2]));
        m.insert(3, 4);
        assert_eq!(m.report(16, 16), (5, vec![(2, 2)], vec![]));
    }

    #[test]
    fn forward_psn_skips_holes_the_sender_gave_up() {
        let mut m = PsnMap::default();
        for w in [1, 3, 4] {
            m.insert(w, 4);
        }
        m.forward(2);
        assert_eq!(m.report(16, 16).0, 4);
        // An old forward changes nothing.
        m.forward(1);
        assert_eq!(m.report(16, 16).0, 4);
    }

    #[test]
    fn the_receiver_follows_the_sequence_through_many_wraps() {
        let mut m = PsnMap::default();
        for psn in 1..20_000u32 {
            if psn % 7 != 0 {
                m.insert(wire(psn), 4);
            } else {
                // Lost, later skipped by the sender.
                m.insert(wire(psn + 1), 4);
                m.forward(wire(psn));
            }
        }
        let (cum, blocks, _) = m.report(16, 16);
        // 19_999 is a multiple of 7: its successor arrived and it was skipped.
        assert_eq!(cum, u32::from(wire(20_000)));
        assert!(blocks.is_empty());
    }

    #[test]
    fn the_record_of_transmissions_is_found_by_psn_range() {
        let mut p = PsnSender::default();
        for seq in 100..110u64 {
            p.take_for(seq);
        }
        // PSNs 1..=10 for seqs 100..=109.
        let got: Vec<u64> = p.sent_between(3, 5).map(|e| e.1).collect();
        assert_eq!(got, [102, 103, 104]);
        // A range starting before the oldest record starts at it; one ending before, is empty.
        assert_eq!(p.sent_between(0, 2).count(), 2);
        assert_eq!(p.sent_between(u32::MAX - 5, 0).count(), 0);
        assert_eq!(p.sent_between(9, 50).count(), 2);
        // After the oldest records are dropped the rest is still found.
        p.sent.drain(..4);
        assert_eq!(
            p.sent_between(1, 6).map(|e| e.0).collect::<Vec<_>>(),
            [5, 6]
        );
    }

    #[test]
    fn the_ls_sacks_of_every_path_fit_one_packet() {
        // Sixteen path ids at the smallest PMTU, each with as many holes and duplicates as
        // the configuration allows: together they still fit.
        for (room, n) in [
            (1200 - 28 - 12, 16),
            (1200 - 28 - 12, 5),
            (1452, 2),
            (400, 16),
        ] {
            let (blocks, dups) = ls_sack_budget(room, n, 64, 16);
            let size = n * (LS_SACK_FIXED_LEN + 4 * (blocks + dups));
            assert!(size <= room, "room {room}, {n} paths: {size} bytes");
            assert!(
                blocks >= 1 || room / n < LS_SACK_FIXED_LEN + 8,
                "room {room}, {n}"
            );
        }
        // Room to spare: the configured maxima.
        assert_eq!(ls_sack_budget(65_000, 2, 64, 16), (64, 16));
        // (Without the budget, 16 LS-SACKs at the maxima took 16 × 344 bytes.)
    }

    #[test]
    fn a_hostile_psn_far_ahead_is_not_held() {
        let mut m = PsnMap::default();
        // Half the 12-bit space or more ahead reads as old: reported as a duplicate, not held.
        assert!(m.insert(3000, 4));
        assert_eq!(m.report(16, 16), (0, vec![], vec![3000]));
    }
}
