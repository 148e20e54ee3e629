//! The discrete-event engine: a virtual clock and a binary heap of timed events.
//!
//! Events at the same instant run in the order they were scheduled (a sequence number breaks
//! ties), so a run depends only on its inputs and seed: the same seed gives the same result,
//! bit for bit.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::time::Duration;

use braid_proto::Instant;

/// One scheduled event; `at` in nanoseconds since the epoch (cheaper to compare than an
/// `Instant`, and good for 584 years).
#[derive(Debug)]
struct Entry<E> {
    at: u64,
    seq: u64,
    event: E,
}

fn nanos(t: Instant) -> u64 {
    u64::try_from(t.since_epoch().as_nanos()).unwrap_or(u64::MAX)
}

fn instant(n: u64) -> Instant {
    Instant::from_duration(Duration::from_nanos(n))
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}

impl<E> Eq for Entry<E> {}

impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl<E> Ord for Entry<E> {
    /// Reversed: the heap's maximum is the earliest event, first scheduled first.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .at
            .cmp(&self.at)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

/// A virtual clock and the events scheduled on it.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    seq: u64,
    now: Instant,
    processed: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue with the clock at [`Instant::ZERO`].
    pub fn new() -> Self {
        Self {
            heap: BinaryHeap::with_capacity(1024),
            seq: 0,
            now: Instant::ZERO,
            processed: 0,
        }
    }

    /// The virtual time: the instant of the event being processed.
    pub fn now(&self) -> Instant {
        self.now
    }

    /// Schedules `event` at `at`; an instant in the past is taken as now (time never runs
    /// backwards).
    pub fn schedule(&mut self, at: Instant, event: E) {
        let at = at.max(self.now);
        self.heap.push(Entry {
            at: nanos(at),
            seq: self.seq,
            event,
        });
        self.seq += 1;
    }

    /// Schedules `event` `after` from now.
    pub fn schedule_in(&mut self, after: Duration, event: E) {
        self.schedule(self.now + after, event);
    }

    /// Instant of the next event, if any.
    pub fn peek_time(&self) -> Option<Instant> {
        self.heap.peek().map(|e| instant(e.at))
    }

    /// Removes the next event and advances the clock to it.
    pub fn pop(&mut self) -> Option<(Instant, E)> {
        let e = self.heap.pop()?;
        self.now = instant(e.at);
        self.processed += 1;
        Some((self.now, e.event))
    }

    /// Events scheduled and not yet processed.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether nothing is scheduled.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Events processed so far.
    pub fn processed(&self) -> u64 {
        self.processed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_duration(Duration::from_millis(ms))
    }

    #[test]
    fn earliest_first_and_fifo_at_equal_times() {
        let mut q = EventQueue::new();
        q.schedule(at(5), "c");
        q.schedule(at(1), "a");
        q.schedule(at(5), "d");
        q.schedule(at(1), "b");
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).map(|(_, e)| e).collect();
        assert_eq!(order, ["a", "b", "c", "d"]);
        assert_eq!(q.now(), at(5));
        assert_eq!(q.processed(), 4);
    }

    #[test]
    fn past_events_run_now() {
        let mut q = EventQueue::new();
        q.schedule(at(10), 1);
        assert_eq!(q.pop(), Some((at(10), 1)));
        q.schedule(at(3), 2);
        assert_eq!(q.pop(), Some((at(10), 2)));
    }
}
