//! Which TSNs the receiver holds: the cumulative TSN, the ranges received above it and the
//! duplicates to report, everything a SACK needs (RFC 9260 §3.3.4, §6.2, §6.7).
//!
//! Received TSNs above the cumulative TSN are kept as a sorted list of disjoint, non-adjacent
//! inclusive ranges. A range reaching `cum_tsn + 1` is folded into `cum_tsn` at once, so
//! in-order arrival only bumps `cum_tsn`: O(1), no allocation. Ranges are compared by their
//! distance above `cum_tsn` (serial arithmetic), which stays correct across the 2^32 wrap.

use std::collections::VecDeque;

use braid_wire::chunk::GapAckBlock;

use crate::serial::tsn_le;

/// The TSNs received from the peer.
#[derive(Debug, Clone)]
pub(crate) struct TsnMap {
    /// Highest TSN such that it and every TSN before it were received.
    cum_tsn: u32,
    /// Received TSNs above `cum_tsn + 1`: inclusive `(start, end)`, sorted, disjoint and not
    /// adjacent to each other nor to `cum_tsn`.
    ranges: VecDeque<(u32, u32)>,
    /// Duplicates received since the last [`TsnMap::take_duplicates`].
    dups: Vec<u32>,
    /// Duplicates kept for one SACK at most.
    max_dups: usize,
    /// TSNs that arrived above `cum_tsn + 1` since the last SACK (at most `RECENT_CAP`): a
    /// SACK cut to fit its packet still reports the blocks that hold them.
    recent: Vec<u32>,
}

/// Recent arrivals remembered for the next SACK (two packets' worth is the usual case).
const RECENT_CAP: usize = 64;

impl TsnMap {
    /// A map expecting `peer_initial_tsn` next (`cum_tsn` starts one below it, wrapping;
    /// RFC 9260 §6.1) and keeping at most `max_dups` duplicates for the next SACK.
    pub(crate) fn new(peer_initial_tsn: u32, max_dups: usize) -> Self {
        Self {
            cum_tsn: peer_initial_tsn.wrapping_sub(1),
            ranges: VecDeque::new(),
            dups: Vec::new(),
            max_dups,
            recent: Vec::new(),
        }
    }

    /// The cumulative TSN ack: every TSN up to it (serial order) was received.
    pub(crate) fn cum_tsn(&self) -> u32 {
        self.cum_tsn
    }

    /// Highest TSN received (`cum_tsn` if none above it).
    pub(crate) fn highest_tsn(&self) -> u32 {
        self.ranges.back().map_or(self.cum_tsn, |&(_, end)| end)
    }

    /// Whether `tsn` was already received: at or before `cum_tsn` in serial order, or inside a
    /// received range.
    pub(crate) fn contains(&self, tsn: u32) -> bool {
        match self.distance(tsn) {
            None => true,
            Some(d) => self.locate(d).1,
        }
    }

    /// Records `tsn`. Returns true if it is new. If it was already received it is recorded
    /// as a duplicate for the next SACK and false is returned.
    pub(crate) fn insert(&mut self, tsn: u32) -> bool {
        let Some(d) = self.distance(tsn) else {
            self.duplicate(tsn);
            return false;
        };
        if d == 1 {
            // Fast path, in-order arrival: the cumulative TSN moves up (RFC 9260 §6.2).
            self.cum_tsn = tsn;
            self.absorb_front();
            return true;
        }
        let (i, found) = self.locate(d);
        if found {
            self.duplicate(tsn);
            return false;
        }
        // One TSN per run of consecutive arrivals names its block (small messages put many
        // into one packet).
        if self.recent.len() < RECENT_CAP && self.recent.last() != Some(&tsn.wrapping_sub(1)) {
            self.recent.push(tsn);
        }
        let joins_left = i > 0 && self.distance_of_end(i - 1) + 1 == d;
        let joins_right = self
            .ranges
            .get(i)
            .is_some_and(|&(start, _)| self.dist(start) == d + 1);
        match (joins_left, joins_right) {
            (true, true) => {
                // `tsn` fills the hole between ranges i-1 and i: merge them.
                if let Some((_, end)) = self.ranges.remove(i)
                    && let Some(left) = self.ranges.get_mut(i - 1)
                {
                    left.1 = end;
                }
            }
            (true, false) => {
                if let Some(left) = self.ranges.get_mut(i - 1) {
                    left.1 = tsn;
                }
            }
            (false, true) => {
                if let Some(right) = self.ranges.get_mut(i) {
                    right.0 = tsn;
                }
            }
            (false, false) => self.ranges.insert(i, (tsn, tsn)),
        }
        true
    }

    /// Whether any TSN above `cum_tsn` was received, i.e. a gap exists (RFC 9260 §6.7).
    pub(crate) fn has_gaps(&self) -> bool {
        !self.ranges.is_empty()
    }

    /// Appends up to `max` gap ack blocks, lowest first, to `out`, as offsets from `cum_tsn`
    /// (RFC 9260 §3.3.4). TSNs further than `u16::MAX` above `cum_tsn` cannot be expressed
    /// and are not reported; a range straddling that limit is reported up to it.
    pub(crate) fn gap_blocks(&self, max: usize, out: &mut Vec<GapAckBlock>) {
        for i in 0..self.ranges.len().min(max) {
            let Some(block) = self.block(i) else {
                // Ranges are sorted: every later one is out of reach too.
                break;
            };
            out.push(block);
        }
    }

    /// Range `i` as a gap ack block, its end cut at `u16::MAX`; `None` if its start is out
    /// of reach.
    fn block(&self, i: usize) -> Option<GapAckBlock> {
        let (start, end) = self.ranges[i];
        let start = u16::try_from(self.dist(start)).ok()?;
        let end = u16::try_from(self.dist(end)).unwrap_or(u16::MAX);
        Some(GapAckBlock { start, end })
    }

    /// As [`Self::gap_blocks`], but when more than `max` blocks are in reach: the lowest half
    /// of `max` (the holes to repair), the blocks holding the TSNs that arrived since the
    /// last SACK, and the highest blocks for the rest, in order. The arrivals are kept
    /// until [`Self::forget_recent`]: a SACK that does not fit its packet is not sent.
    pub(crate) fn gap_blocks_ends(&self, max: usize, out: &mut Vec<GapAckBlock>) {
        let reach = self
            .ranges
            .iter()
            .take_while(|&&(start, _)| u16::try_from(self.dist(start)).is_ok())
            .count();
        if reach <= max {
            self.gap_blocks(max, out);
            return;
        }
        let low = max / 2;
        let mut pick: Vec<usize> = (0..low).collect();
        for &tsn in &self.recent {
            if let Some(d) = self.distance(tsn)
                && let (i, true) = self.locate(d)
                && (low..reach).contains(&i)
            {
                pick.push(i);
            }
        }
        pick.sort_unstable();
        pick.dedup();
        pick.truncate(max);
        // The newest blocks fill what is left, from the top down.
        let chosen = pick.len();
        let mut top = reach;
        while pick.len() < max && top > low {
            top -= 1;
            if pick[..chosen].binary_search(&top).is_err() {
                pick.push(top);
            }
        }
        pick.sort_unstable();
        // Every pick is below `reach`: its block exists.
        out.extend(pick.into_iter().filter_map(|i| self.block(i)));
    }

    /// A SACK went out: the arrivals since the previous one are reported.
    pub(crate) fn forget_recent(&mut self) {
        self.recent.clear();
    }

    /// Moves the duplicates recorded since the last call into `out` (RFC 9260 §6.2: they are
    /// reported once, in the next SACK).
    pub(crate) fn take_duplicates(&mut self, out: &mut Vec<u32>) {
        out.append(&mut self.dups);
    }

    /// PR-SCTP (RFC 3758 §3.6): if `new_cum` is ahead of `cum_tsn`, every TSN up to it counts
    /// as received; then `cum_tsn` also absorbs a received range that now follows it directly.
    /// A `new_cum` at or behind `cum_tsn` is out of date and ignored (RFC 3758 §3.6).
    pub(crate) fn forward(&mut self, new_cum: u32) {
        let Some(d) = self.distance(new_cum) else {
            return;
        };
        // Ranges wholly covered by the new cumulative TSN are dropped.
        while self
            .ranges
            .front()
            .is_some_and(|&(_, end)| self.dist(end) <= d)
        {
            self.ranges.pop_front();
        }
        // A range straddling or right after `new_cum` joins it.
        if self
            .ranges
            .front()
            .is_some_and(|&(start, _)| self.dist(start) <= d + 1)
        {
            if let Some((_, end)) = self.ranges.pop_front() {
                self.cum_tsn = end;
            }
        } else {
            self.cum_tsn = new_cum;
        }
    }

    /// Number of received ranges above `cum_tsn`.
    #[cfg(test)]
    pub(crate) fn range_count(&self) -> usize {
        self.ranges.len()
    }

    /// Distance of `tsn` above `cum_tsn`, or `None` if it is at or before it (serial order:
    /// RFC 9260 §1.6), which means it was received already.
    fn distance(&self, tsn: u32) -> Option<u32> {
        if tsn_le(tsn, self.cum_tsn) {
            None
        } else {
            Some(self.dist(tsn))
        }
    }

    /// Raw distance of `tsn` above `cum_tsn`; in `1..2^31` for every TSN stored in `ranges`.
    fn dist(&self, tsn: u32) -> u32 {
        tsn.wrapping_sub(self.cum_tsn)
    }

    /// Distance above `cum_tsn` of the end of range `i` (0 if there is no such range).
    fn distance_of_end(&self, i: usize) -> u32 {
        self.ranges.get(i).map_or(0, |&(_, end)| self.dist(end))
    }

    /// For a TSN at distance `d` above `cum_tsn`: the index of the first range not wholly
    /// below it, and whether that range contains it. O(log n).
    fn locate(&self, d: u32) -> (usize, bool) {
        let i = self.ranges.partition_point(|&(_, end)| self.dist(end) < d);
        let found = self
            .ranges
            .get(i)
            .is_some_and(|&(start, _)| self.dist(start) <= d);
        (i, found)
    }

    /// Folds the first range into `cum_tsn` if it now starts right after it.
    fn absorb_front(&mut self) {
        if self
            .ranges
            .front()
            .is_some_and(|&(start, _)| self.dist(start) == 1)
            && let Some((_, end)) = self.ranges.pop_front()
        {
            self.cum_tsn = end;
        }
    }

    /// Records a duplicate TSN, unless `max_dups` are already waiting (RFC 9260 §6.2).
    fn duplicate(&mut self, tsn: u32) {
        if self.dups.len() < self.max_dups {
            self.dups.push(tsn);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    #[test]
    fn a_cut_list_keeps_the_lowest_holes_the_newest_arrivals_and_the_top() {
        // 40 single-TSN blocks above cum 0: TSNs 2, 4, .., 80 (offsets are the TSNs).
        let mut m = TsnMap::new(1, 16);
        for k in 1..=40u32 {
            assert!(m.insert(2 * k));
        }
        m.forget_recent();
        // Two arrivals since the last SACK, in the middle of the list: TSN 39 joins 38 and
        // 40, TSN 51 joins 50 and 52 (38 blocks now).
        assert!(m.insert(39));
        assert!(m.insert(51));
        let mut out = Vec::new();
        m.gap_blocks_ends(10, &mut out);
        let starts: Vec<u16> = out.iter().map(|b| b.start).collect();
        // Lowest five (TSN 2..10), the blocks of the two arrivals, the three highest.
        assert_eq!(starts, vec![2, 4, 6, 8, 10, 38, 50, 76, 78, 80]);
        // The arrivals are forgotten once the SACK went out: the next cut list has no middle
        // blocks.
        m.forget_recent();
        out.clear();
        m.gap_blocks_ends(10, &mut out);
        let starts: Vec<u16> = out.iter().map(|b| b.start).collect();
        assert_eq!(starts, vec![2, 4, 6, 8, 10, 72, 74, 76, 78, 80]);
        // Everything fits: the plain list.
        out.clear();
        m.gap_blocks_ends(100, &mut out);
        assert_eq!(out.len(), 38);
    }

    /// The gap ack blocks as (start, end) pairs.
    fn blocks(map: &TsnMap) -> Vec<(u16, u16)> {
        let mut out = Vec::new();
        map.gap_blocks(usize::MAX, &mut out);
        out.iter().map(|b| (b.start, b.end)).collect()
    }

    /// The duplicates taken from the map.
    fn dups(map: &mut TsnMap) -> Vec<u32> {
        let mut out = Vec::new();
        map.take_duplicates(&mut out);
        out
    }

    #[test]
    fn in_order_arrival_only_moves_cum_tsn() {
        let mut map = TsnMap::new(100, 4);
        assert_eq!(map.cum_tsn(), 99);
        for tsn in 100..110 {
            assert!(map.insert(tsn));
        }
        assert_eq!(map.cum_tsn(), 109);
        assert_eq!(map.highest_tsn(), 109);
        assert!(!map.has_gaps());
        assert_eq!(map.range_count(), 0);
    }

    #[test]
    fn a_loss_opens_a_gap_and_its_retransmission_closes_it() {
        let mut map = TsnMap::new(1, 4);
        map.insert(1);
        // 2 is lost; 3, 4 and 6 arrive.
        for tsn in [3, 4, 6] {
            assert!(map.insert(tsn));
        }
        assert_eq!(map.cum_tsn(), 1);
        assert_eq!(map.highest_tsn(), 6);
        assert!(map.has_gaps());
        // RFC 9260 §3.3.4: blocks are offsets from the cumulative TSN.
        assert_eq!(blocks(&map), [(2, 3), (5, 5)]);
        assert!(map.contains(4) && !map.contains(2) && !map.contains(5));

        // The retransmission of 2 arrives: cum_tsn jumps over 3 and 4.
        assert!(map.insert(2));
        assert_eq!(map.cum_tsn(), 4);
        assert_eq!(blocks(&map), [(2, 2)]);
        assert!(map.insert(5));
        assert_eq!(map.cum_tsn(), 6);
        assert!(!map.has_gaps());
    }

    #[test]
    fn a_tsn_filling_the_hole_between_two_ranges_merges_them() {
        let mut map = TsnMap::new(0, 4);
        for tsn in [2, 3, 5, 6] {
            map.insert(tsn);
        }
        assert_eq!(map.range_count(), 2);
        map.insert(4);
        assert_eq!(map.range_count(), 1);
        assert_eq!(blocks(&map), [(3, 7)]);
    }

    #[test]
    fn duplicates_are_reported_once_and_bounded() {
        let mut map = TsnMap::new(10, 2);
        map.insert(10);
        map.insert(12);
        assert!(!map.insert(10)); // at cum_tsn
        assert!(!map.insert(12)); // inside a gap-acked range
        assert!(!map.insert(5)); // long before: at most 2 kept, this one dropped
        assert_eq!(dups(&mut map), [10, 12]);
        assert_eq!(dups(&mut map), [] as [u32; 0]);
        assert!(!map.insert(3));
        assert_eq!(dups(&mut map), [3]);
    }

    #[test]
    fn tsns_wrap_around_u32_max() {
        let mut map = TsnMap::new(u32::MAX - 1, 4);
        assert_eq!(map.cum_tsn(), u32::MAX - 2);
        map.insert(u32::MAX - 1);
        map.insert(1); // u32::MAX and 0 are missing
        assert_eq!(blocks(&map), [(3, 3)]);
        assert_eq!(map.highest_tsn(), 1);
        map.insert(u32::MAX);
        map.insert(0);
        assert_eq!(map.cum_tsn(), 1);
        assert!(!map.has_gaps());
        assert!(map.contains(u32::MAX) && !map.contains(2));
    }

    #[test]
    fn blocks_are_capped_lowest_first() {
        let mut map = TsnMap::new(0, 4);
        for tsn in [2, 4, 6, 8] {
            map.insert(tsn);
        }
        let mut out = Vec::new();
        map.gap_blocks(2, &mut out);
        assert_eq!(
            out,
            [
                GapAckBlock { start: 3, end: 3 },
                GapAckBlock { start: 5, end: 5 }
            ]
        );
    }

    #[test]
    fn ranges_beyond_a_u16_offset_are_not_reported() {
        let mut map = TsnMap::new(0, 4);
        map.insert(10);
        map.insert(70_000);
        // Straddles the limit: reported up to it.
        for tsn in 65_530..65_540 {
            map.insert(tsn);
        }
        assert_eq!(blocks(&map), [(11, 11), (65_531, u16::MAX)]);
        assert_eq!(map.range_count(), 3);
    }

    #[test]
    fn forward_tsn_skips_lost_tsns_and_absorbs_what_follows() {
        // The RFC 3758 §3.6 example: cum 102, 103 missing, 104-105 received, 106 missing.
        let mut map = TsnMap::new(102, 4);
        for tsn in [102, 104, 105, 107] {
            map.insert(tsn);
        }
        map.forward(103);
        assert_eq!(map.cum_tsn(), 105);
        assert_eq!(blocks(&map), [(2, 2)]);
        // Out of date: ignored.
        map.forward(100);
        assert_eq!(map.cum_tsn(), 105);
        // Past every range.
        map.forward(200);
        assert_eq!(map.cum_tsn(), 200);
        assert!(!map.has_gaps());
        assert!(!map.insert(150));
    }

    #[test]
    fn forward_tsn_into_the_middle_of_a_range() {
        let mut map = TsnMap::new(0, 4);
        for tsn in 5..=9 {
            map.insert(tsn);
        }
        map.forward(7);
        assert_eq!(map.cum_tsn(), 9);
        assert_eq!(map.range_count(), 0);
    }

    #[test]
    fn tsns_half_the_space_away_count_as_old() {
        let mut map = TsnMap::new(0, 4);
        // cum_tsn is u32::MAX; 2^31 - 1 ahead is the farthest new TSN, 2^31 ahead is behind.
        assert!(map.insert(0x7fff_fffe));
        assert!(!map.insert(0x7fff_ffff));
        assert_eq!(blocks(&map), [] as [(u16, u16); 0]);
        assert_eq!(map.highest_tsn(), 0x7fff_fffe);
    }

    /// A naive model: the set of distances above `cum` received, with serial semantics.
    struct Model {
        /// Cumulative TSN.
        cum: u32,
        /// Distances above `cum` of the TSNs received.
        above: BTreeSet<u32>,
        /// Duplicates not yet taken.
        dups: Vec<u32>,
        /// Duplicates kept at most.
        max_dups: usize,
    }

    impl Model {
        /// Distance of `tsn` above `cum`, `None` if at or before it in serial order.
        fn dist(&self, tsn: u32) -> Option<u32> {
            let d = tsn.wrapping_sub(self.cum);
            (d != 0 && d < 1 << 31).then_some(d)
        }

        /// Moves `cum` up by `by`, then over every TSN received right after it.
        fn shift(&mut self, by: u32) {
            self.cum = self.cum.wrapping_add(by);
            self.above = self
                .above
                .iter()
                .filter(|&&d| d > by)
                .map(|d| d - by)
                .collect();
            let mut run = 0;
            while self.above.contains(&(run + 1)) {
                run += 1;
            }
            if run > 0 {
                self.shift(run);
            }
        }

        /// As [`TsnMap::insert`].
        fn insert(&mut self, tsn: u32) -> bool {
            match self.dist(tsn) {
                Some(d) if self.above.insert(d) => {
                    self.shift(0);
                    true
                }
                _ => {
                    if self.dups.len() < self.max_dups {
                        self.dups.push(tsn);
                    }
                    false
                }
            }
        }

        /// As [`TsnMap::forward`].
        fn forward(&mut self, new_cum: u32) {
            if let Some(d) = self.dist(new_cum) {
                self.shift(d);
            }
        }

        /// Maximal runs of distances received above `cum`.
        fn runs(&self) -> Vec<(u32, u32)> {
            let mut runs: Vec<(u32, u32)> = Vec::new();
            for &d in &self.above {
                match runs.last_mut() {
                    Some(last) if last.1 + 1 == d => last.1 = d,
                    _ => runs.push((d, d)),
                }
            }
            runs
        }
    }

    /// One step of the model test.
    #[derive(Debug, Clone)]
    enum Op {
        /// Insert the TSN this far from the initial TSN.
        Insert(u32),
        /// Forward TSN to this far from the initial TSN.
        Forward(u32),
        /// Insert any TSN at all.
        Wild(u32),
        /// Take the duplicates.
        Take,
    }

    /// Mostly inserts near the initial TSN.
    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            20 => (0u32..300).prop_map(Op::Insert),
            2 => (0u32..300).prop_map(Op::Forward),
            1 => any::<u32>().prop_map(Op::Wild),
            2 => Just(Op::Take),
        ]
    }

    /// Initial TSNs, often just below the 2^32 wrap.
    fn initial_tsn() -> impl Strategy<Value = u32> {
        prop_oneof![
            any::<u32>(),
            (u32::MAX - 200)..=u32::MAX,
            0u32..50,
            Just(1 << 31)
        ]
    }

    proptest! {
        #[test]
        fn matches_a_naive_model(init in initial_tsn(), ops in prop::collection::vec(op(), 0..400)) {
            let max_dups = 5;
            let mut map = TsnMap::new(init, max_dups);
            let mut model = Model {
                cum: init.wrapping_sub(1),
                above: BTreeSet::new(),
                dups: Vec::new(),
                max_dups,
            };
            for op in ops {
                match op {
                    Op::Insert(off) => {
                        let tsn = init.wrapping_add(off);
                        prop_assert_eq!(map.insert(tsn), model.insert(tsn));
                    }
                    Op::Wild(tsn) => prop_assert_eq!(map.insert(tsn), model.insert(tsn)),
                    Op::Forward(off) => {
                        let tsn = init.wrapping_add(off);
                        map.forward(tsn);
                        model.forward(tsn);
                    }
                    Op::Take => {
                        prop_assert_eq!(dups(&mut map), std::mem::take(&mut model.dups));
                    }
                }
                let runs = model.runs();
                prop_assert_eq!(map.cum_tsn(), model.cum);
                let highest = model.above.last().map_or(model.cum, |d| model.cum.wrapping_add(*d));
                prop_assert_eq!(map.highest_tsn(), highest);
                prop_assert_eq!(map.has_gaps(), !model.above.is_empty());
                prop_assert_eq!(map.range_count(), runs.len());
                let expected: Vec<(u16, u16)> = runs
                    .iter()
                    .filter_map(|&(s, e)| {
                        Some((u16::try_from(s).ok()?, u16::try_from(e).unwrap_or(u16::MAX)))
                    })
                    .collect();
                prop_assert_eq!(blocks(&map), expected);
                for off in (0u32..310).step_by(7) {
                    let tsn = init.wrapping_add(off);
                    prop_assert_eq!(map.contains(tsn), model.dist(tsn).is_none_or(|d| model.above.contains(&d)));
                }
            }
        }
    }
}
