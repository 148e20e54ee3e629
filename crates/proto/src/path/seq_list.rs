//! A sorted set of chunk sequence numbers for the per-path lists of the sender, cheaper
//! than a `BTreeSet` for how they are used: chunks join mostly at the end (new data goes
//! out in TSN order) and leave mostly near the front (a path's data is acknowledged in
//! roughly its own order), so a sorted ring buffer moves few elements.

use std::collections::VecDeque;

/// Sorted, distinct `u64`s.
#[derive(Debug, Clone, Default)]
pub(crate) struct SeqList(VecDeque<u64>);

impl SeqList {
    /// Adds `seq` (no effect if present).
    pub(crate) fn insert(&mut self, seq: u64) {
        if self.0.back().is_none_or(|&b| b < seq) {
            self.0.push_back(seq);
        } else if let Err(i) = self.0.binary_search(&seq) {
            self.0.insert(i, seq);
        }
    }

    /// Removes `seq` (no effect if absent).
    pub(crate) fn remove(&mut self, seq: u64) {
        if self.0.front() == Some(&seq) {
            self.0.pop_front();
        } else if let Ok(i) = self.0.binary_search(&seq) {
            self.0.remove(i);
        }
    }

    /// Whether `seq` is in the list.
    pub(crate) fn contains(&self, seq: u64) -> bool {
        self.0.binary_search(&seq).is_ok()
    }

    /// The smallest element.
    pub(crate) fn first(&self) -> Option<u64> {
        self.0.front().copied()
    }

    /// The smallest element greater than `seq`.
    pub(crate) fn next_after(&self, seq: u64) -> Option<u64> {
        let i = self.0.partition_point(|&x| x <= seq);
        self.0.get(i).copied()
    }

    /// The elements below `end`, in order.
    pub(crate) fn below(&self, end: u64) -> impl Iterator<Item = u64> + '_ {
        self.0.iter().copied().take_while(move |&x| x < end)
    }

    /// Every element, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.0.iter().copied()
    }

    /// Number of elements.
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the list is empty.
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Removes everything.
    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::SeqList;
    use std::collections::BTreeSet;

    #[test]
    fn behaves_as_a_sorted_set() {
        let mut l = SeqList::default();
        let mut s = BTreeSet::new();
        let mut x = 12345u64;
        for step in 0..5000u64 {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            let v = (x >> 33) % 300 + step / 10;
            if x.is_multiple_of(3) {
                l.remove(v);
                s.remove(&v);
            } else {
                l.insert(v);
                s.insert(v);
            }
            assert_eq!(l.len(), s.len());
            assert_eq!(l.first(), s.first().copied());
            assert_eq!(l.next_after(v), s.range(v + 1..).next().copied());
            assert_eq!(l.contains(v), s.contains(&v));
        }
        assert!(l.iter().eq(s.iter().copied()));
        assert!(l.below(200).eq(s.range(..200).copied()));
    }
}
