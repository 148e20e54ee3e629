//! Gap-block arithmetic for SACK processing: blocks and remembered TSN ranges as sorted,
//! merged offset ranges from the cumulative ack, and their difference, so that a SACK costs
//! O(what changed) rather than O(window) (RFC 9260 §3.3.4 gap ack blocks are offsets).

use braid_wire::chunk::GapAckBlock;

/// Inclusive offset ranges within 1..=n, sorted and merged; empty or inverted ones dropped.
#[cfg(test)]
pub(super) fn offset_ranges(
    it: impl Iterator<Item = (usize, usize)>,
    n: usize,
) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    offset_ranges_into(it, n, &mut out);
    out
}

/// [`offset_ranges`] into `out` (replacing its contents, keeping its capacity: this runs
/// for every SACK), sorted and merged in place.
pub(super) fn offset_ranges_into(
    it: impl Iterator<Item = (usize, usize)>,
    n: usize,
    out: &mut Vec<(usize, usize)>,
) {
    out.clear();
    out.extend(
        it.map(|(a, b)| (a.max(1), b.min(n)))
            .filter(|(a, b)| a <= b),
    );
    out.sort_unstable();
    let mut w = 0;
    for r in 0..out.len() {
        let (a, b) = out[r];
        if w > 0 && a <= out[w - 1].1 + 1 {
            out[w - 1].1 = out[w - 1].1.max(b);
        } else {
            out[w] = (a, b);
            w += 1;
        }
    }
    out.truncate(w);
}

/// Gap ack blocks as offset ranges within 1..=n (see [`offset_ranges`]), into `out`.
pub(super) fn block_offsets(gaps: &[GapAckBlock], n: usize, out: &mut Vec<(usize, usize)>) {
    offset_ranges_into(
        gaps.iter().map(|g| (g.start as usize, g.end as usize)),
        n,
        out,
    );
}

/// TSN ranges as offsets from the cumulative ack `cum` within 1..=n: serial-number distances
/// (RFC 1982), so parts at or below `cum` come out < 1 and are cut off. Into `out`.
pub(super) fn tsn_offsets(
    ranges: &[(u32, u32)],
    cum: u32,
    n: usize,
    out: &mut Vec<(usize, usize)>,
) {
    offset_ranges_into(
        ranges.iter().map(|&(a, b)| {
            let a = i64::from(a.wrapping_sub(cum) as i32).max(1);
            let b = i64::from(b.wrapping_sub(cum) as i32);
            if b < a {
                (1, 0)
            } else {
                (a as usize, b as usize)
            }
        }),
        n,
        out,
    );
}

/// Offset ranges from `cum` back to TSN ranges, into `out` (replacing its contents).
pub(super) fn offsets_to_tsns(offsets: &[(usize, usize)], cum: u32, out: &mut Vec<(u32, u32)>) {
    out.clear();
    out.extend(
        offsets
            .iter()
            .map(|&(a, b)| (cum.wrapping_add(a as u32), cum.wrapping_add(b as u32))),
    );
}

/// The union of two sorted, merged lists of ranges, sorted and merged.
pub(super) fn ranges_union(a: &[(usize, usize)], b: &[(usize, usize)]) -> Vec<(usize, usize)> {
    let mut all: Vec<(usize, usize)> = a.iter().chain(b).copied().collect();
    all.sort_unstable();
    let mut out: Vec<(usize, usize)> = Vec::with_capacity(all.len());
    for (lo, hi) in all {
        match out.last_mut() {
            Some(last) if lo <= last.1 + 1 => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// Every offset in the sorted, merged ranges `a` that is not in `b`, in order (no
/// allocation: this runs for every SACK).
pub(super) fn ranges_minus<'a>(
    a: &'a [(usize, usize)],
    b: &'a [(usize, usize)],
) -> impl Iterator<Item = usize> + 'a {
    RangesMinus {
        a,
        b,
        i: 0,
        j: 0,
        cur: 0,
    }
}

/// The iterator of [`ranges_minus`]: `cur` walks the ranges of `a`, jumping over `b`'s.
struct RangesMinus<'a> {
    a: &'a [(usize, usize)],
    b: &'a [(usize, usize)],
    i: usize,
    j: usize,
    cur: usize,
}

impl Iterator for RangesMinus<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        loop {
            let &(lo, hi) = self.a.get(self.i)?;
            self.cur = self.cur.max(lo);
            if self.cur > hi {
                self.i += 1;
                continue;
            }
            while self.b.get(self.j).is_some_and(|r| r.1 < self.cur) {
                self.j += 1;
            }
            match self.b.get(self.j) {
                Some(&(blo, bhi)) if blo <= self.cur => self.cur = bhi + 1,
                _ => {
                    self.cur += 1;
                    return Some(self.cur - 1);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{offset_ranges, ranges_minus, ranges_union};

    #[test]
    fn range_union_merges_overlapping_and_adjacent_ranges() {
        let u = ranges_union(&[(1, 3), (10, 12)], &[(4, 5), (8, 10), (20, 20)]);
        assert_eq!(u, vec![(1, 5), (8, 12), (20, 20)]);
        assert_eq!(ranges_union(&[], &[(2, 2)]), vec![(2, 2)]);
    }

    #[test]
    fn gap_blocks_become_sorted_merged_clipped_ranges() {
        // Out of order, overlapping, adjacent, inverted and past the end (a hostile SACK).
        let r = offset_ranges(
            [(9, 12), (2, 3), (3, 5), (6, 6), (8, 7), (20, 30)].into_iter(),
            10,
        );
        assert_eq!(r, vec![(2, 6), (9, 10)]);
        assert!(offset_ranges([(0, 0)].into_iter(), 10).is_empty());
    }

    #[test]
    fn range_difference_lists_exactly_the_missing_offsets() {
        let a = [(1, 10), (15, 16)];
        let b = [(0, 2), (4, 5), (9, 15)];
        let d: Vec<usize> = ranges_minus(&a, &b).collect();
        assert_eq!(d, vec![3, 6, 7, 8, 16]);
        assert_eq!(ranges_minus(&a, &[]).count(), 12);
        assert_eq!(ranges_minus(&[], &b).count(), 0);
        // Brute force over small random-ish cases.
        for seed in 0u32..200 {
            let mk = |k: u32| -> Vec<(usize, usize)> {
                let mut v = Vec::new();
                let mut x = seed.wrapping_mul(2_654_435_761).wrapping_add(k);
                for _ in 0..4 {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    let lo = (x >> 8) as usize % 30 + 1;
                    let len = (x >> 20) as usize % 6;
                    v.push((lo, lo + len));
                }
                offset_ranges(v.into_iter(), 32)
            };
            let (a, b) = (mk(1), mk(2));
            let inside = |r: &[(usize, usize)], o: usize| r.iter().any(|&(l, h)| l <= o && o <= h);
            let want: Vec<usize> = (1..=32)
                .filter(|&o| inside(&a, o) && !inside(&b, o))
                .collect();
            assert_eq!(
                ranges_minus(&a, &b).collect::<Vec<_>>(),
                want,
                "{a:?} - {b:?}"
            );
        }
    }
}
