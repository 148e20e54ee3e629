//! The ready streams of the key-ordered disciplines (Priority, FairCapacity, Wfq): a min-heap
//! on (key, arrival sequence), so equal keys leave in the order they became ready, which is
//! round-robin among equals (RFC 8260 §3.4).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Ready streams ordered by (key, sequence). No allocation once the heap has grown.
#[derive(Debug, Default)]
pub(super) struct Keyed {
    /// Min-heap of (key, sequence, stream).
    heap: BinaryHeap<Reverse<(u64, u64, u16)>>,
    /// Next sequence number; ties on the key go to the stream that waited longest.
    seq: u64,
}

impl Keyed {
    /// Adds `stream` with `key` behind every stream with the same key.
    pub(super) fn push(&mut self, key: u64, stream: u16) {
        self.heap.push(Reverse((key, self.seq, stream)));
        self.seq += 1;
    }

    /// The stream with the smallest key.
    pub(super) fn peek(&self) -> Option<u16> {
        self.heap.peek().map(|Reverse((_, _, s))| *s)
    }

    /// The smallest key among the ready streams.
    pub(super) fn min_key(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse((k, _, _))| *k)
    }

    /// Removes `stream` (the top one in normal operation, so O(log n)).
    pub(super) fn remove(&mut self, stream: u16) {
        if self.peek() == Some(stream) {
            self.heap.pop();
        } else {
            self.heap.retain(|Reverse((_, _, s))| *s != stream);
        }
    }

    /// Keeps only the streams `keep` accepts.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(u16) -> bool) {
        self.heap.retain(|Reverse((_, _, s))| keep(*s));
    }

    /// The ready streams in the order they would leave.
    pub(super) fn order(&self) -> Vec<u16> {
        let mut v: Vec<_> = self.heap.iter().map(|Reverse(e)| *e).collect();
        v.sort_unstable();
        v.into_iter().map(|(_, _, s)| s).collect()
    }

    /// Recomputes every key with `key` (after a priority changed), keeping the sequence
    /// numbers so the round-robin order among equals survives.
    pub(super) fn rekey(&mut self, key: impl Fn(u16) -> u64) {
        let entries = std::mem::take(&mut self.heap).into_vec();
        self.heap = entries
            .into_iter()
            .map(|Reverse((_, q, s))| Reverse((key(s), q, s)))
            .collect();
    }

    /// Forgets every stream.
    pub(super) fn clear(&mut self) {
        self.heap.clear();
    }
}
