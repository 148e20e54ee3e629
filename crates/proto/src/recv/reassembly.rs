//! From DATA chunks to whole messages, delivered in stream order (RFC 9260 §6.5, §6.6,
//! §6.9), with the receiver side of PR-SCTP (RFC 3758 §3.6).
//!
//! Fast path: a message whose fragments arrive in TSN order while nothing else is waiting
//! (the common case on a clean path) never enters the maps below. Its fragments are copied,
//! as they come, into one buffer sized from the last such message, which becomes the
//! message at its E fragment (one allocation and one copy per message). Anything that does
//! not continue it (a gap, another message, a FORWARD TSN) first *spills* it: the buffer is
//! split back into its fragments (no copy) and they go into the maps as if they had never
//! left them, so the general rules below decide from there, exactly as before.
//!
//! Fragments of incomplete messages wait in a map keyed by TSN, extended to 64 bits so that
//! the 2^32 wrap does not reorder them. Consecutive fragments that continue each other form
//! a *run*; a run starting with B and ending with E is a whole message and leaves at once.
//! Whole ordered messages whose SSN is not the next expected wait per (stream, SSN); every
//! deliverable message goes to one association-wide ready queue.
//!
//! What a peer can send that cannot be a valid message is dropped, never delivered:
//! * a run that waits for a TSN already taken by a fragment that does not continue it (two
//!   B fragments in a row, E without B after another message's E, a change of stream, U flag
//!   or ordered SSN inside a TSN sequence), since fragments of a message have consecutive
//!   TSNs (RFC 9260 §6.9);
//! * an ordered fragment or message whose SSN is before the next expected one on its stream
//!   (already delivered or skipped), and a second whole message with an SSN already waiting;
//! * a second fragment with a TSN already held (the TSN map filters those anyway);
//! * a fragment for a stream that does not exist (the caller reports it first).
//!
//! A fragment without B whose previous TSN is gone (delivered or dropped already) cannot be
//! told from one whose previous TSN is still to come: it waits, never delivered, until a
//! FORWARD TSN covers that TSN or the association ends.
//!
//! Everything held came from [`Reassembly::insert`], so memory is bounded by what the caller
//! lets in through the receive window.

use std::collections::{BTreeMap, VecDeque, btree_map::Entry};

use bytes::{Bytes, BytesMut};

use crate::serial::{ssn_lt, tsn_le};

/// A message ready for the application.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedMessage {
    /// The stream it arrived on.
    pub stream_id: u16,
    /// Payload protocol identifier, from its first fragment.
    pub ppid: u32,
    /// Whether it was sent unordered (U bit).
    pub unordered: bool,
    /// The whole user message.
    pub data: Bytes,
}

/// One received DATA chunk (not a duplicate: the TSN map filtered those).
#[derive(Debug, Clone)]
pub(crate) struct Fragment {
    /// Transmission sequence number.
    pub(crate) tsn: u32,
    /// Stream identifier.
    pub(crate) stream_id: u16,
    /// Stream sequence number (meaningless if `unordered`).
    pub(crate) ssn: u16,
    /// Payload protocol identifier.
    pub(crate) ppid: u32,
    /// U bit.
    pub(crate) unordered: bool,
    /// B bit: first fragment of its message.
    pub(crate) beginning: bool,
    /// E bit: last fragment of its message.
    pub(crate) ending: bool,
    /// The user data of this chunk.
    pub(crate) data: Bytes,
}

impl Fragment {
    /// Whether `next`, carried by the TSN right after this one, continues the same message:
    /// same stream, same kind, same SSN if ordered, and no message boundary in between
    /// (RFC 9260 §6.9).
    fn continued_by(&self, next: &Fragment) -> bool {
        !self.ending
            && !next.beginning
            && self.stream_id == next.stream_id
            && self.unordered == next.unordered
            && (self.unordered || self.ssn == next.ssn)
    }

    /// A message with this fragment's stream, PPID, kind and data.
    fn into_message(self) -> ReceivedMessage {
        ReceivedMessage {
            stream_id: self.stream_id,
            ppid: self.ppid,
            unordered: self.unordered,
            data: self.data,
        }
    }
}

/// The message being gathered on the in-order fast path: fragments from a B on, with
/// consecutive TSNs, no E yet, while the general maps were empty.
#[derive(Debug)]
struct Tail {
    /// Extended TSN of its first fragment.
    first_key: u64,
    /// TSN of its first fragment.
    first_tsn: u32,
    /// TSN of its last fragment.
    last_tsn: u32,
    /// Stream identifier.
    stream_id: u16,
    /// Stream sequence number (meaningless if `unordered`).
    ssn: u16,
    /// Payload protocol identifier, from the B fragment.
    ppid: u32,
    /// U bit.
    unordered: bool,
    /// The payloads so far, concatenated.
    data: BytesMut,
    /// Each fragment's payload length, so that a spill can split `data` back into them.
    lens: Vec<usize>,
}

impl Tail {
    /// Whether `f` is the next fragment of this message: the next TSN, no B, same stream,
    /// kind and SSN if ordered (RFC 9260 §6.9).
    fn continued_by(&self, f: &Fragment) -> bool {
        f.tsn == self.last_tsn.wrapping_add(1)
            && !f.beginning
            && f.stream_id == self.stream_id
            && f.unordered == self.unordered
            && (self.unordered || f.ssn == self.ssn)
    }
}

/// Whether a fast-path buffer holds much more memory than its data (it was sized for a
/// larger message): its data is then copied out rather than kept in it, so that memory held
/// stays within about twice the bytes charged to the receive window.
fn wasteful(b: &BytesMut) -> bool {
    b.capacity() > 2 * b.len() + 256
}

/// Reassembly and ordering of the messages of one association.
#[derive(Debug)]
pub(crate) struct Reassembly {
    /// Next SSN expected on each inbound stream; all start at 0 (RFC 9260 §6.5).
    next_ssn: Vec<u16>,
    /// Fragments of incomplete messages, by extended TSN.
    fragments: BTreeMap<u64, Fragment>,
    /// Runs of fragments continuing each other: extended TSN of the first → of the last.
    /// None is a whole message, and none is stuck (see [`Reassembly::is_stuck`]).
    runs: BTreeMap<u64, u64>,
    /// Whole ordered messages waiting for an earlier SSN, by (stream, SSN).
    held: BTreeMap<(u16, u16), ReceivedMessage>,
    /// Messages the application may read, in the order they became deliverable.
    ready: VecDeque<ReceivedMessage>,
    /// Extended value of the last TSN inserted: the reference for extending the next one.
    last_tsn: u64,
    /// Bytes of user data in `tail`, `fragments`, `held` and `ready`.
    bytes: usize,
    /// The in-order message being gathered (fast path); only while `fragments` is empty.
    tail: Option<Tail>,
    /// Length of the last message the fast path completed: the next one's buffer size, so
    /// that a stream of equal messages costs one exact allocation each.
    size_hint: usize,
    /// A spare `Tail::lens`, so the fast path does not allocate it per message.
    spare_lens: Vec<usize>,
}

impl Reassembly {
    /// Reassembly for `inbound_streams` streams.
    pub(crate) fn new(inbound_streams: u16) -> Self {
        Self {
            next_ssn: vec![0; usize::from(inbound_streams)],
            fragments: BTreeMap::new(),
            runs: BTreeMap::new(),
            held: BTreeMap::new(),
            ready: VecDeque::new(),
            last_tsn: 1 << 63,
            bytes: 0,
            tail: None,
            size_hint: 0,
            spare_lens: Vec::new(),
        }
    }

    /// Adds a fragment. The caller checked `stream_id < inbound_streams` (else it answers
    /// with an Invalid Stream Identifier error, RFC 9260 §6.5); if not, it is ignored.
    /// `compact`: if the fragment's payload is kept as it is (not copied into a message
    /// being gathered), copy it first so it does not pin a much larger datagram.
    pub(crate) fn insert(&mut self, mut f: Fragment, compact: bool) {
        let Some(&next) = self.next_ssn.get(usize::from(f.stream_id)) else {
            return;
        };
        if !f.unordered && ssn_lt(f.ssn, next) {
            // Already delivered or skipped: it can never be delivered again (RFC 9260 §6.5).
            return;
        }
        self.bytes += f.data.len();
        if let Some(t) = &self.tail {
            if t.continued_by(&f) {
                self.extend_tail(f);
                return;
            }
            // Not the next fragment of the message being gathered: let the general rules
            // decide, with that message's fragments where they would have been.
            self.spill();
        } else if self.fragments.is_empty() && f.beginning {
            if f.ending {
                // A whole message, and no partial one it could border.
                if compact {
                    f.data = Bytes::copy_from_slice(&f.data);
                }
                let ssn = f.ssn;
                self.complete(f.into_message(), ssn);
            } else {
                self.start_tail(f);
            }
            return;
        }
        if compact {
            f.data = Bytes::copy_from_slice(&f.data);
        }
        self.general(f);
    }

    /// Starts gathering a message from its B fragment on the fast path.
    fn start_tail(&mut self, f: Fragment) {
        let Some(first_key) = self.extend(f.tsn) else {
            self.release_bytes(f.data.len());
            return;
        };
        let mut data = BytesMut::with_capacity(self.size_hint.max(f.data.len()));
        data.extend_from_slice(&f.data);
        let mut lens = std::mem::take(&mut self.spare_lens);
        lens.clear();
        lens.push(f.data.len());
        self.tail = Some(Tail {
            first_key,
            first_tsn: f.tsn,
            last_tsn: f.tsn,
            stream_id: f.stream_id,
            ssn: f.ssn,
            ppid: f.ppid,
            unordered: f.unordered,
            data,
            lens,
        });
    }

    /// Appends the next fragment to the message being gathered; at its E, completes it.
    fn extend_tail(&mut self, f: Fragment) {
        // Keeps `last_tsn` the reference for the next key, as the general path does.
        if self.extend(f.tsn).is_none() {
            self.release_bytes(f.data.len());
            return;
        }
        let Some(t) = &mut self.tail else {
            return;
        };
        t.data.extend_from_slice(&f.data);
        t.lens.push(f.data.len());
        t.last_tsn = f.tsn;
        if !f.ending {
            return;
        }
        let Some(t) = self.tail.take() else {
            return;
        };
        self.size_hint = t.data.len();
        self.spare_lens = t.lens;
        let data = if wasteful(&t.data) {
            // Sized for a larger message: do not hold that much memory for this one.
            Bytes::copy_from_slice(&t.data)
        } else {
            t.data.freeze()
        };
        let msg = ReceivedMessage {
            stream_id: t.stream_id,
            ppid: t.ppid,
            unordered: t.unordered,
            data,
        };
        self.complete(msg, t.ssn);
    }

    /// Moves the message being gathered into the general maps as the fragments it was made
    /// of (split from its buffer without copying): one run, B first, no E.
    fn spill(&mut self) {
        let Some(mut t) = self.tail.take() else {
            return;
        };
        let n = t.lens.len();
        let copy = wasteful(&t.data);
        for (i, &len) in t.lens.iter().enumerate() {
            let part = t.data.split_to(len);
            let f = Fragment {
                tsn: t.first_tsn.wrapping_add(i as u32),
                stream_id: t.stream_id,
                ssn: t.ssn,
                ppid: t.ppid,
                unordered: t.unordered,
                beginning: i == 0,
                ending: false,
                // Held memory stays within twice what is charged for it (see `wasteful`).
                data: if copy {
                    Bytes::copy_from_slice(&part)
                } else {
                    part.freeze()
                },
            };
            self.fragments.insert(t.first_key + i as u64, f);
        }
        self.runs.insert(t.first_key, t.first_key + n as u64 - 1);
        self.spare_lens = t.lens;
    }

    /// The general rules: `f` (already counted in `bytes`) joins the maps, the runs it
    /// borders, and leaves with them if that makes a whole message.
    fn general(&mut self, f: Fragment) {
        let Some(key) = self.extend(f.tsn) else {
            // Only a peer whose TSNs jumped back and forth billions of times gets here.
            self.release_bytes(f.data.len());
            return;
        };
        let (before, after) = (key.checked_sub(1), key.checked_add(1));
        let left = self.neighbour(before).map(|p| p.continued_by(&f));
        let right = self.neighbour(after).map(|n| f.continued_by(n));
        if let Entry::Vacant(slot) = self.fragments.entry(key) {
            slot.insert(f);
        } else {
            // The same TSN twice: keep the first.
            self.release_bytes(f.data.len());
            return;
        }

        // Join the runs on either side that this fragment continues.
        let mut start = key;
        let mut end = key;
        if left == Some(true)
            && let Some(s) = before.and_then(|b| self.run_ending_at(b))
        {
            self.runs.remove(&s);
            start = s;
        }
        if right == Some(true)
            && let Some(e) = after.and_then(|a| self.runs.remove(&a))
        {
            end = e;
        }
        self.runs.insert(start, end);

        // A run on either side that this fragment does not continue may now be stuck, and so
        // may its own: decide for all three before dropping any.
        let left_run = match (left, before) {
            (Some(false), Some(b)) => self.run_ending_at(b).map(|s| (s, b)),
            _ => None,
        };
        let right_run = match (right, after) {
            (Some(false), Some(a)) => self.runs.get(&a).map(|&e| (a, e)),
            _ => None,
        };
        let own_stuck = self.is_stuck(start, end);
        for (s, e) in [left_run, right_run].into_iter().flatten() {
            if self.is_stuck(s, e) {
                self.drop_run(s, e);
            }
        }
        if own_stuck {
            self.drop_run(start, end);
        } else {
            self.complete_run(start, end);
        }
    }

    /// The next message the application may read, in delivery order.
    pub(crate) fn pop(&mut self) -> Option<ReceivedMessage> {
        let msg = self.ready.pop_front()?;
        self.release_bytes(msg.data.len());
        Some(msg)
    }

    /// Whether [`Reassembly::pop`] would return a message.
    pub(crate) fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Bytes held: fragments waiting plus messages not yet popped (for a_rwnd, RFC 9260
    /// §6.2.1).
    pub(crate) fn buffered_bytes(&self) -> usize {
        self.bytes
    }

    /// Chunks held: fragments waiting plus whole messages waiting or not yet popped (so
    /// that the caller can charge a per-chunk overhead against the receive buffer).
    pub(crate) fn held_chunks(&self) -> usize {
        let tail = self.tail.as_ref().map_or(0, |t| t.lens.len());
        tail + self.fragments.len() + self.held.len() + self.ready.len()
    }

    /// PR-SCTP (RFC 3758 §3.6): drops the partial messages that miss a TSN at or before
    /// `new_cum` (serial order), and for each `(stream, ssn)` pair makes every ordered
    /// message up to `ssn` on that stream deliverable: those waiting are delivered, in SSN
    /// order, the missing ones are skipped, the next expected SSN becomes `ssn + 1`, and the
    /// messages that are now in order follow.
    pub(crate) fn forward_tsn(&mut self, new_cum: u32, streams: &[(u16, u16)]) {
        // The general rules decide what a FORWARD TSN abandons.
        self.spill();
        for &(stream, ssn) in streams {
            let Some(&next) = self.next_ssn.get(usize::from(stream)) else {
                continue;
            };
            if ssn_lt(ssn, next) {
                // Already delivered up to there: an old FORWARD TSN.
                continue;
            }
            // "Immediately make available for delivery stream sequence numbers earlier than
            // or equal to" the one listed (RFC 3758 §3.6), lowest SSN first.
            let mut ssns: Vec<u16> = Vec::new();
            if next <= ssn {
                ssns.extend(self.held_ssns(stream, next, ssn));
            } else {
                ssns.extend(self.held_ssns(stream, next, u16::MAX));
                ssns.extend(self.held_ssns(stream, 0, ssn));
            }
            for s in ssns {
                if let Some(msg) = self.held.remove(&(stream, s)) {
                    self.ready.push_back(msg);
                }
            }
            if let Some(next) = self.next_ssn.get_mut(usize::from(stream)) {
                *next = ssn.wrapping_add(1);
            }
            self.release_in_order(stream);
        }
        // RFC 3758 §3.6: remove partial messages still missing a TSN <= new_cum; also those
        // of ordered messages now skipped, which could never be delivered.
        let dead: Vec<(u64, u64)> = self
            .runs
            .iter()
            .map(|(&s, &e)| (s, e))
            .filter(|&(s, e)| self.is_abandoned(s, e, new_cum))
            .collect();
        for (s, e) in dead {
            self.drop_run(s, e);
        }
    }

    /// Extends `tsn` to 64 bits next to the last TSN inserted, by its serial distance from
    /// it (RFC 1982 arithmetic, RFC 9260 §1.6), so the 2^32 wrap does not reorder keys.
    /// `None` if that leaves the 64-bit range: keys never wrap, so a run's first key is never
    /// above its last.
    fn extend(&mut self, tsn: u32) -> Option<u64> {
        let delta = tsn.wrapping_sub(self.last_tsn as u32) as i32;
        self.last_tsn = self.last_tsn.checked_add_signed(i64::from(delta))?;
        Some(self.last_tsn)
    }

    /// The fragment at `key`, if there is such a key and a fragment there.
    fn neighbour(&self, key: Option<u64>) -> Option<&Fragment> {
        key.and_then(|k| self.fragments.get(&k))
    }

    /// The first key of the run whose last key is `end`, if there is one.
    fn run_ending_at(&self, end: u64) -> Option<u64> {
        self.runs
            .range(..=end)
            .next_back()
            .filter(|&(_, &e)| e == end)
            .map(|(&s, _)| s)
    }

    /// Whether a run can never complete because the TSN it waits for, before its first
    /// fragment (no B) or after its last (no E), holds a fragment that does not continue it
    /// (RFC 9260 §6.9: the fragments of a message have consecutive TSNs).
    fn is_stuck(&self, start: u64, end: u64) -> bool {
        let open_start = self.fragments.get(&start).is_some_and(|f| !f.beginning);
        let open_end = self.fragments.get(&end).is_some_and(|f| !f.ending);
        (open_start && self.neighbour(start.checked_sub(1)).is_some())
            || (open_end && self.neighbour(end.checked_add(1)).is_some())
    }

    /// Whether a run can no longer complete after a FORWARD TSN to `new_cum`: it misses a
    /// TSN at or before `new_cum`, which will not be sent again, or it belongs to an ordered
    /// message whose SSN was skipped (RFC 3758 §3.6).
    fn is_abandoned(&self, start: u64, end: u64, new_cum: u32) -> bool {
        let Some(first) = self.fragments.get(&start) else {
            return true;
        };
        let missing_before = !first.beginning && tsn_le(first.tsn.wrapping_sub(1), new_cum);
        let missing_after = self
            .fragments
            .get(&end)
            .is_none_or(|last| !last.ending && tsn_le(last.tsn.wrapping_add(1), new_cum));
        let skipped = !first.unordered
            && self
                .next_ssn
                .get(usize::from(first.stream_id))
                .is_none_or(|&next| ssn_lt(first.ssn, next));
        missing_before || missing_after || skipped
    }

    /// Removes a run and its fragments.
    fn drop_run(&mut self, start: u64, end: u64) {
        self.runs.remove(&start);
        for key in start..=end {
            if let Some(f) = self.fragments.remove(&key) {
                self.release_bytes(f.data.len());
            }
        }
    }

    /// If the run is a whole message (B first, E last), takes it out and completes it.
    fn complete_run(&mut self, start: u64, end: u64) {
        let whole = self.fragments.get(&start).is_some_and(|f| f.beginning)
            && self.fragments.get(&end).is_some_and(|f| f.ending);
        if !whole {
            return;
        }
        self.runs.remove(&start);
        let rest = start.saturating_add(1)..=end;
        let Some(first) = self.fragments.remove(&start) else {
            return;
        };
        let ssn = first.ssn;
        let mut msg = first.into_message();
        if !rest.is_empty() {
            // Concatenated once, now that every fragment is here (RFC 9260 §6.9).
            let len: usize = rest
                .clone()
                .filter_map(|key| self.fragments.get(&key))
                .map(|f| f.data.len())
                .sum();
            let mut data = BytesMut::with_capacity(msg.data.len() + len);
            data.extend_from_slice(&msg.data);
            for key in rest {
                if let Some(f) = self.fragments.remove(&key) {
                    data.extend_from_slice(&f.data);
                }
            }
            msg.data = data.freeze();
        }
        self.complete(msg, ssn);
    }

    /// Queues a whole message: unordered ones at once (RFC 9260 §6.6), ordered ones in SSN
    /// order (RFC 9260 §6.5).
    fn complete(&mut self, msg: ReceivedMessage, ssn: u16) {
        if msg.unordered {
            self.ready.push_back(msg);
            return;
        }
        let stream = msg.stream_id;
        let Some(&next) = self.next_ssn.get(usize::from(stream)) else {
            self.release_bytes(msg.data.len());
            return;
        };
        if ssn == next {
            self.ready.push_back(msg);
            if let Some(next) = self.next_ssn.get_mut(usize::from(stream)) {
                *next = ssn.wrapping_add(1);
            }
            self.release_in_order(stream);
        } else if ssn_lt(ssn, next) {
            // Already delivered or skipped meanwhile.
            self.release_bytes(msg.data.len());
        } else {
            match self.held.entry((stream, ssn)) {
                Entry::Vacant(slot) => {
                    slot.insert(msg);
                }
                // Two messages with one SSN: keep the first.
                Entry::Occupied(_) => self.release_bytes(msg.data.len()),
            }
        }
    }

    /// Moves the held messages of `stream` that are now in sequence to the ready queue.
    fn release_in_order(&mut self, stream: u16) {
        let Some(next) = self.next_ssn.get_mut(usize::from(stream)) else {
            return;
        };
        while !self.held.is_empty()
            && let Some(msg) = self.held.remove(&(stream, *next))
        {
            self.ready.push_back(msg);
            *next = next.wrapping_add(1);
        }
    }

    /// SSNs of the messages held on `stream` from `from` to `to` (inclusive, numeric order).
    fn held_ssns(&self, stream: u16, from: u16, to: u16) -> impl Iterator<Item = u16> + '_ {
        self.held
            .range((stream, from)..=(stream, to))
            .map(|(&(_, ssn), _)| ssn)
    }

    /// Accounts for `n` bytes leaving the buffer.
    fn release_bytes(&mut self, n: usize) {
        debug_assert!(self.bytes >= n, "buffer accounting underflow");
        self.bytes = self.bytes.saturating_sub(n);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashMap, HashSet};

    use proptest::prelude::*;

    use super::*;

    /// A fragment with the given flags; `data` is the text given.
    fn frag(tsn: u32, stream_id: u16, ssn: u16, flags: &str, data: &str) -> Fragment {
        Fragment {
            tsn,
            stream_id,
            ssn,
            ppid: 51,
            unordered: flags.contains('U'),
            beginning: flags.contains('B'),
            ending: flags.contains('E'),
            data: Bytes::copy_from_slice(data.as_bytes()),
        }
    }

    /// Everything deliverable now, as (stream, text).
    fn drain(r: &mut Reassembly) -> Vec<(u16, String)> {
        std::iter::from_fn(|| r.pop())
            .map(|m| (m.stream_id, String::from_utf8_lossy(&m.data).into_owned()))
            .collect()
    }

    /// The texts of everything deliverable now.
    fn texts(r: &mut Reassembly) -> Vec<String> {
        drain(r).into_iter().map(|(_, t)| t).collect()
    }

    #[test]
    fn in_order_single_chunk_messages_on_several_streams() {
        let mut r = Reassembly::new(3);
        r.insert(frag(10, 0, 0, "BE", "a0"), false);
        r.insert(frag(11, 2, 0, "BE", "c0"), false);
        r.insert(frag(12, 0, 1, "BE", "a1"), false);
        r.insert(frag(13, 1, 0, "BE", "b0"), false);
        assert!(r.has_ready());
        assert_eq!(
            drain(&mut r),
            [
                (0, "a0".into()),
                (2, "c0".into()),
                (0, "a1".into()),
                (1, "b0".into())
            ]
        );
        assert!(!r.has_ready());
        assert_eq!(r.buffered_bytes(), 0);
    }

    #[test]
    fn a_single_chunk_message_is_passed_through_without_copy() {
        let mut r = Reassembly::new(1);
        let f = frag(1, 0, 0, "BE", "zero copy");
        let ptr = f.data.as_ptr();
        r.insert(f, false);
        assert_eq!(r.pop().map(|m| m.data.as_ptr()), Some(ptr));
    }

    #[test]
    fn out_of_order_ssns_are_held_back_then_released() {
        let mut r = Reassembly::new(2);
        r.insert(frag(3, 0, 2, "BE", "m2"), false);
        r.insert(frag(2, 0, 1, "BE", "m1"), false);
        r.insert(frag(5, 1, 0, "BE", "other stream"), false);
        // Stream 1 is not blocked by stream 0's missing SSN 0.
        assert_eq!(texts(&mut r), ["other stream"]);
        r.insert(frag(1, 0, 0, "BE", "m0"), false);
        assert_eq!(texts(&mut r), ["m0", "m1", "m2"]);
    }

    #[test]
    fn a_fragmented_message_arriving_scrambled_is_delivered_whole() {
        let mut r = Reassembly::new(1);
        r.insert(frag(103, 0, 0, "E", "!"), false);
        r.insert(frag(101, 0, 0, "", "lo, "), false);
        r.insert(frag(100, 0, 0, "B", "hel"), false);
        assert!(!r.has_ready());
        r.insert(frag(102, 0, 0, "", "world"), false);
        assert_eq!(texts(&mut r), ["hello, world!"]);
        assert_eq!(r.buffered_bytes(), 0);
    }

    #[test]
    fn an_unordered_message_overtakes_a_blocked_ordered_one() {
        let mut r = Reassembly::new(1);
        // SSN 0 (TSN 1) is lost; SSN 1 waits for it.
        r.insert(frag(2, 0, 1, "BE", "ordered 1"), false);
        r.insert(frag(3, 0, 0, "UBE", "urgent"), false);
        assert_eq!(texts(&mut r), ["urgent"]);
        r.insert(frag(1, 0, 0, "BE", "ordered 0"), false);
        assert_eq!(texts(&mut r), ["ordered 0", "ordered 1"]);
    }

    #[test]
    fn interleaved_unordered_fragmented_messages_on_two_streams() {
        let mut r = Reassembly::new(2);
        // Message A is TSNs 1-3 on stream 0, B is TSNs 4-6 on stream 1; they arrive mixed.
        r.insert(frag(4, 1, 9, "UB", "B1"), false);
        r.insert(frag(1, 0, 7, "UB", "A1"), false);
        r.insert(frag(5, 1, 9, "U", "B2"), false);
        r.insert(frag(2, 0, 7, "U", "A2"), false);
        r.insert(frag(6, 1, 9, "UE", "B3"), false);
        assert_eq!(drain(&mut r), [(1, "B1B2B3".into())]);
        r.insert(frag(3, 0, 7, "UE", "A3"), false);
        assert_eq!(drain(&mut r), [(0, "A1A2A3".into())]);
    }

    #[test]
    fn tsns_wrap_around_inside_a_message() {
        let mut r = Reassembly::new(1);
        r.insert(frag(0, 0, 0, "", "b"), false);
        r.insert(frag(1, 0, 0, "E", "c"), false);
        r.insert(frag(u32::MAX, 0, 0, "B", "a"), false);
        assert_eq!(texts(&mut r), ["abc"]);
    }

    /// Delivers `count` single-chunk messages on stream 0 from TSN 1, SSN 0 on.
    fn deliver_many(r: &mut Reassembly, count: u16) -> u32 {
        for ssn in 0..count {
            r.insert(frag(u32::from(ssn) + 1, 0, ssn, "BE", "x"), false);
            assert!(r.pop().is_some());
        }
        u32::from(count) + 1
    }

    #[test]
    fn ssns_wrap_from_65535_to_0() {
        let mut r = Reassembly::new(1);
        let tsn = deliver_many(&mut r, 65535);
        // SSN 65535 is next; 0 and 1 arrive first and wait for it.
        r.insert(frag(tsn + 2, 0, 1, "BE", "ssn 1"), false);
        r.insert(frag(tsn + 1, 0, 0, "BE", "ssn 0"), false);
        assert!(!r.has_ready());
        r.insert(frag(tsn, 0, 65535, "BE", "ssn 65535"), false);
        assert_eq!(texts(&mut r), ["ssn 65535", "ssn 0", "ssn 1"]);
        r.insert(frag(tsn + 3, 0, 2, "BE", "ssn 2"), false);
        assert_eq!(texts(&mut r), ["ssn 2"]);
    }

    #[test]
    fn forward_tsn_releases_held_messages_across_the_ssn_wrap() {
        let mut r = Reassembly::new(1);
        let tsn = deliver_many(&mut r, 65534);
        // SSN 65534 and 0 are lost; 65535 and 1 wait.
        r.insert(frag(tsn + 1, 0, 65535, "BE", "ssn 65535"), false);
        r.insert(frag(tsn + 3, 0, 1, "BE", "ssn 1"), false);
        assert!(!r.has_ready());
        r.forward_tsn(tsn + 2, &[(0, 0)]);
        assert_eq!(texts(&mut r), ["ssn 65535", "ssn 1"]);
    }

    #[test]
    fn forward_tsn_skips_a_lost_message_and_releases_later_ones() {
        let mut r = Reassembly::new(2);
        // SSN 0 was TSNs 1-3: 1 and 3 arrived, 2 is lost for good. SSN 1 and 2 arrived whole.
        r.insert(frag(1, 0, 0, "B", "xx"), false);
        r.insert(frag(3, 0, 0, "E", "zz"), false);
        r.insert(frag(4, 0, 1, "BE", "one"), false);
        r.insert(frag(5, 0, 2, "BE", "two"), false);
        // Unrelated partial message above the new cumulative TSN: kept.
        r.insert(frag(6, 1, 0, "B", "keep"), false);
        assert!(!r.has_ready());
        r.forward_tsn(3, &[(0, 0)]);
        assert_eq!(texts(&mut r), ["one", "two"]);
        // Only the partial message of stream 1 is still held.
        assert_eq!(r.buffered_bytes(), 4);
        r.insert(frag(7, 1, 0, "E", "!"), false);
        assert_eq!(texts(&mut r), ["keep!"]);
        assert_eq!(r.buffered_bytes(), 0);
    }

    #[test]
    fn forward_tsn_delivers_stranded_messages_up_to_the_listed_ssn() {
        let mut r = Reassembly::new(1);
        // SSNs 0 and 2 lost, 1 and 3 arrived; the sender abandons SSN 0 to 2.
        r.insert(frag(2, 0, 1, "BE", "one"), false);
        r.insert(frag(4, 0, 3, "BE", "three"), false);
        r.forward_tsn(3, &[(0, 2)]);
        // RFC 3758 §3.6: SSN 1 is made available, then 3 follows in order.
        assert_eq!(texts(&mut r), ["one", "three"]);
        // An old FORWARD TSN changes nothing.
        r.forward_tsn(1, &[(0, 0)]);
        r.insert(frag(5, 0, 4, "BE", "four"), false);
        assert_eq!(texts(&mut r), ["four"]);
    }

    #[test]
    fn forward_tsn_drops_the_tail_of_a_message_whose_head_was_abandoned() {
        let mut r = Reassembly::new(1);
        // Message TSNs 10-12 (SSN 0): only 12 arrived, and the sender skipped up to 11.
        r.insert(frag(12, 0, 0, "E", "tail"), false);
        r.forward_tsn(11, &[(0, 0)]);
        assert_eq!(r.buffered_bytes(), 0);
        assert!(r.runs.is_empty() && r.fragments.is_empty());
    }

    #[test]
    fn buffered_bytes_and_chunks_are_exact_through_insert_and_pop() {
        let mut r = Reassembly::new(2);
        let held = |r: &Reassembly| (r.buffered_bytes(), r.held_chunks());
        r.insert(frag(1, 0, 0, "B", "12345"), false);
        assert_eq!(held(&r), (5, 1));
        r.insert(frag(3, 1, 0, "BE", "abc"), false); // ready
        assert_eq!(held(&r), (8, 2));
        r.insert(frag(4, 1, 2, "BE", "held"), false); // waits for SSN 1
        assert_eq!(held(&r), (12, 3));
        r.insert(frag(2, 0, 0, "E", "67"), false); // two fragments become one message
        assert_eq!(held(&r), (14, 3));
        assert_eq!(r.pop().map(|m| m.data.len()), Some(3));
        assert_eq!(held(&r), (11, 2));
        assert_eq!(r.pop().map(|m| m.data.len()), Some(7));
        assert_eq!(held(&r), (4, 1));
        assert!(r.pop().is_none());
        assert_eq!(held(&r), (4, 1));
    }

    #[test]
    fn hostile_two_beginnings_in_a_row() {
        let mut r = Reassembly::new(1);
        r.insert(frag(1, 0, 0, "B", "first"), false);
        r.insert(frag(2, 0, 0, "B", "second"), false);
        // TSN 1 can never get its E: dropped. TSN 2 may still complete.
        assert_eq!(r.buffered_bytes(), 6);
        r.insert(frag(3, 0, 0, "E", "!"), false);
        assert_eq!(texts(&mut r), ["second!"]);
        assert_eq!(r.buffered_bytes(), 0);
    }

    #[test]
    fn hostile_end_without_beginning() {
        let mut r = Reassembly::new(1);
        r.insert(frag(2, 0, 0, "E", "end"), false);
        // An E without B right after another E can never get its beginning: dropped.
        r.insert(frag(3, 0, 0, "E", "bogus"), false);
        assert_eq!(r.buffered_bytes(), 3);
        r.insert(frag(1, 0, 0, "B", "the "), false);
        assert_eq!(texts(&mut r), ["the end"]);
        assert_eq!(r.buffered_bytes(), 0);
    }

    #[test]
    fn hostile_orphan_after_a_delivered_message_waits_for_a_forward_tsn() {
        let mut r = Reassembly::new(1);
        r.insert(frag(1, 0, 0, "BE", "whole"), false);
        // E without B right after a delivered message: the TSN before it is gone, so
        // nothing shows it can never complete. It is held (never delivered) until a
        // FORWARD TSN covers it or the association ends.
        r.insert(frag(2, 0, 1, "E", "orphan"), false);
        assert_eq!(texts(&mut r), ["whole"]);
        assert_eq!(r.buffered_bytes(), 6);
        r.insert(frag(3, 0, 1, "BE", "next"), false);
        assert_eq!(texts(&mut r), ["next"]);
        r.forward_tsn(2, &[]);
        assert_eq!(r.buffered_bytes(), 0);
    }

    #[test]
    fn hostile_fragments_of_one_tsn_range_on_different_streams() {
        let mut r = Reassembly::new(2);
        r.insert(frag(1, 0, 0, "B", "stream 0 "), false);
        r.insert(frag(3, 1, 0, "E", "end"), false);
        r.insert(frag(2, 1, 0, "", "stream 1 "), false);
        assert!(!r.has_ready());
        assert_eq!(r.buffered_bytes(), 0);
        // Same with a change of U flag or of SSN inside the range.
        r.insert(frag(10, 0, 0, "B", "x"), false);
        r.insert(frag(11, 0, 0, "UE", "y"), false);
        r.insert(frag(20, 0, 0, "B", "x"), false);
        r.insert(frag(21, 0, 5, "E", "y"), false);
        assert!(!r.has_ready());
        assert_eq!(r.buffered_bytes(), 0);
        r.insert(frag(30, 0, 0, "BE", "fine"), false);
        assert_eq!(texts(&mut r), ["fine"]);
    }

    #[test]
    fn hostile_ssn_already_delivered() {
        let mut r = Reassembly::new(1);
        r.insert(frag(1, 0, 0, "BE", "zero"), false);
        r.insert(frag(2, 0, 1, "BE", "one"), false);
        assert_eq!(texts(&mut r), ["zero", "one"]);
        // SSN 0 again, and an SSN half the space away, count as already delivered.
        r.insert(frag(3, 0, 0, "BE", "replay"), false);
        r.insert(frag(4, 0, 2 + 32768, "B", "far"), false);
        r.insert(frag(5, 0, 2 + 32768, "E", "far"), false);
        assert!(!r.has_ready());
        assert_eq!(r.buffered_bytes(), 0);
    }

    #[test]
    fn hostile_duplicate_ssn_and_tsn_keep_the_first() {
        let mut r = Reassembly::new(1);
        r.insert(frag(2, 0, 1, "BE", "first"), false);
        r.insert(frag(3, 0, 1, "BE", "impostor"), false);
        r.insert(frag(10, 0, 5, "B", "a"), false);
        r.insert(frag(10, 0, 5, "B", "again"), false);
        assert_eq!(r.buffered_bytes(), "first".len() + 1);
        r.insert(frag(1, 0, 0, "BE", "zero"), false);
        assert_eq!(texts(&mut r), ["zero", "first"]);
    }

    #[test]
    fn keys_never_wrap_even_after_billions_of_jumps() {
        let mut r = Reassembly::new(1);
        r.insert(frag(0, 0, 0, "B", "x"), false);
        // As if the TSNs had jumped forward by 2^31 - 1 about 2^32 times.
        r.last_tsn = u64::MAX - 1;
        // 102 ahead would pass u64::MAX: dropped. 1 ahead lands on the last key, which has
        // no neighbour after it.
        r.insert(frag(100, 0, 0, "", "y"), false);
        r.insert(frag(u32::MAX, 0, 0, "", "z"), false);
        assert_eq!(r.buffered_bytes(), 2);
        assert_eq!(r.fragments.keys().last(), Some(&u64::MAX));
    }

    /// Whether the general maps are empty (everything went through the fast path).
    fn maps_empty(r: &Reassembly) -> bool {
        r.fragments.is_empty() && r.runs.is_empty()
    }

    #[test]
    fn fast_path_in_order_fragmented_messages_never_enter_the_maps() {
        let mut r = Reassembly::new(2);
        r.insert(frag(1, 0, 0, "B", "hel"), true);
        assert!(maps_empty(&r) && r.tail.is_some());
        assert_eq!(r.held_chunks(), 1);
        r.insert(frag(2, 0, 0, "", "lo, "), true);
        r.insert(frag(3, 0, 0, "E", "world"), true);
        assert!(maps_empty(&r) && r.tail.is_none());
        r.insert(frag(4, 1, 0, "UB", "un"), true);
        r.insert(frag(5, 1, 0, "UE", "ordered"), true);
        r.insert(frag(6, 0, 1, "BE", "whole"), true);
        assert!(maps_empty(&r));
        assert_eq!(
            drain(&mut r),
            [
                (0, "hello, world".into()),
                (1, "unordered".into()),
                (0, "whole".into())
            ]
        );
        assert_eq!((r.buffered_bytes(), r.held_chunks()), (0, 0));
    }

    #[test]
    fn fast_path_message_completed_in_order_then_an_out_of_order_one() {
        let mut r = Reassembly::new(1);
        r.insert(frag(1, 0, 0, "B", "first "), false);
        r.insert(frag(2, 0, 0, "E", "message"), false);
        assert_eq!(texts(&mut r), ["first message"]);
        // SSN 1 is TSNs 3-4; 4 arrives first, then SSN 2 (TSN 5) whole, then 3.
        r.insert(frag(4, 0, 1, "E", "two"), false);
        assert!(r.tail.is_none() && !maps_empty(&r));
        r.insert(frag(5, 0, 2, "BE", "three"), false);
        assert!(!r.has_ready());
        r.insert(frag(3, 0, 1, "B", "one "), false);
        assert_eq!(texts(&mut r), ["one two", "three"]);
        assert!(maps_empty(&r));
        // Back on the fast path once the maps are empty.
        r.insert(frag(6, 0, 3, "B", "fast "), false);
        assert!(r.tail.is_some());
        r.insert(frag(7, 0, 3, "E", "again"), false);
        assert_eq!(texts(&mut r), ["fast again"]);
        assert_eq!(r.buffered_bytes(), 0);
    }

    #[test]
    fn fast_path_spills_on_a_gap_and_the_message_still_completes() {
        let mut r = Reassembly::new(1);
        r.insert(frag(10, 0, 0, "B", "a"), false);
        r.insert(frag(11, 0, 0, "", "b"), false);
        let base = r.tail.as_ref().map(|t| t.data.as_ptr());
        // TSN 12 is late: 13 (the next message) spills the tail into the maps.
        r.insert(frag(13, 0, 1, "BE", "next"), false);
        assert!(r.tail.is_none());
        assert_eq!(r.held_chunks(), 3);
        assert_eq!(r.buffered_bytes(), 6);
        // The spilled fragments are slices of the gathered buffer, not copies.
        assert_eq!(r.fragments.values().next().map(|f| f.data.as_ptr()), base);
        r.insert(frag(12, 0, 0, "E", "c"), false);
        assert_eq!(texts(&mut r), ["abc", "next"]);
        assert!(maps_empty(&r));
        assert_eq!((r.buffered_bytes(), r.held_chunks()), (0, 0));
    }

    #[test]
    fn fast_path_interleaved_unordered_message() {
        let mut r = Reassembly::new(2);
        // Ordered SSN 0 on stream 0 is TSNs 1-3; an unordered whole message (TSN 4) and an
        // unordered two-fragment one (TSNs 5-6) on stream 1 overtake its last fragment.
        r.insert(frag(1, 0, 0, "B", "or"), false);
        r.insert(frag(2, 0, 0, "", "de"), false);
        r.insert(frag(4, 1, 0, "UBE", "urgent"), false);
        assert_eq!(texts(&mut r), ["urgent"]);
        r.insert(frag(5, 1, 0, "UB", "also "), false);
        r.insert(frag(6, 1, 0, "UE", "urgent"), false);
        assert_eq!(texts(&mut r), ["also urgent"]);
        r.insert(frag(3, 0, 0, "E", "red"), false);
        assert_eq!(texts(&mut r), ["ordered"]);
        // An unordered fragment between an ordered message's fragments is not a
        // continuation of it: both can never complete (RFC 9260 §6.9) and are dropped.
        r.insert(frag(7, 0, 1, "B", "x"), false);
        r.insert(frag(8, 0, 1, "UE", "y"), false);
        assert!(!r.has_ready());
        assert_eq!(r.buffered_bytes(), 0);
    }

    #[test]
    fn fast_path_forward_tsn_abandons_or_keeps_the_message_being_gathered() {
        let mut r = Reassembly::new(2);
        // A FORWARD TSN below the message being gathered keeps it.
        r.insert(frag(5, 0, 0, "B", "kept "), false);
        r.forward_tsn(4, &[]);
        r.insert(frag(6, 0, 0, "E", "whole"), false);
        assert_eq!(texts(&mut r), ["kept whole"]);
        // One past its last fragment abandons it (its E will never come, RFC 3758 §3.6),
        // and the stream's next SSN moves past it.
        r.insert(frag(7, 0, 1, "B", "lost"), false);
        r.insert(frag(8, 0, 1, "", "lost"), false);
        r.forward_tsn(9, &[(0, 1)]);
        assert!(r.tail.is_none() && maps_empty(&r));
        assert_eq!((r.buffered_bytes(), r.held_chunks()), (0, 0));
        r.insert(frag(10, 0, 2, "B", "after "), false);
        r.insert(frag(11, 0, 2, "E", "skip"), false);
        assert_eq!(texts(&mut r), ["after skip"]);
        // A late fragment of the abandoned message is dropped (its SSN was skipped).
        r.insert(frag(9, 0, 1, "E", "late"), false);
        assert!(!r.has_ready());
        assert_eq!(r.buffered_bytes(), 0);
    }

    #[test]
    fn fast_path_two_beginnings_in_a_row_drop_the_first() {
        let mut r = Reassembly::new(1);
        r.insert(frag(1, 0, 0, "B", "first"), false);
        r.insert(frag(2, 0, 0, "B", "second"), false);
        assert_eq!(r.buffered_bytes(), 6);
        r.insert(frag(3, 0, 0, "E", "!"), false);
        assert_eq!(texts(&mut r), ["second!"]);
    }

    #[test]
    fn fast_path_buffer_sized_for_a_large_message_is_not_kept_for_a_small_one() {
        let mut r = Reassembly::new(1);
        let big = "x".repeat(10_000);
        r.insert(frag(1, 0, 0, "B", &big), false);
        r.insert(frag(2, 0, 0, "E", &big), false);
        assert_eq!(r.pop().map(|m| m.data.len()), Some(20_000));
        // The next buffer is sized for 20,000 bytes; a 2-byte message does not keep it...
        r.insert(frag(3, 0, 1, "B", "a"), false);
        r.insert(frag(4, 0, 1, "E", "b"), false);
        let m = r.pop().map(|m| m.data);
        assert_eq!(m.as_deref(), Some(&b"ab"[..]));
        // ...nor does a 1-byte fragment spilled into the maps.
        r.insert(frag(5, 0, 2, "B", "c"), false);
        r.insert(frag(7, 0, 3, "BE", "d"), false);
        assert!(r.fragments.values().all(|f| f.data.len() == 1));
        r.insert(frag(6, 0, 2, "E", "e"), false);
        assert_eq!(texts(&mut r), ["ce", "d"]);
    }

    #[test]
    fn compact_copies_only_what_is_held_as_it_is() {
        let mut r = Reassembly::new(1);
        // A whole message is held in the ready queue: compacted (copied).
        let f = frag(1, 0, 0, "BE", "copied");
        let ptr = f.data.as_ptr();
        r.insert(f, true);
        assert_ne!(r.pop().map(|m| m.data.as_ptr()), Some(ptr));
        // Without `compact` it is passed through.
        let f = frag(2, 0, 1, "BE", "passed");
        let ptr = f.data.as_ptr();
        r.insert(f, false);
        assert_eq!(r.pop().map(|m| m.data.as_ptr()), Some(ptr));
        // A fragment held in the maps is compacted.
        let f = frag(4, 0, 2, "E", "held");
        let ptr = f.data.as_ptr();
        r.insert(f, true);
        assert!(r.fragments.values().all(|f| f.data.as_ptr() != ptr));
    }

    #[test]
    fn unknown_streams_are_ignored() {
        let mut r = Reassembly::new(1);
        r.insert(frag(1, 1, 0, "BE", "nowhere"), false);
        r.forward_tsn(1, &[(7, 3)]);
        assert!(!r.has_ready());
        assert_eq!(r.buffered_bytes(), 0);
    }

    /// Recomputes the bytes held from the structures themselves.
    fn held_bytes(r: &Reassembly) -> usize {
        r.tail.as_ref().map_or(0, |t| t.data.len())
            + r.fragments.values().map(|f| f.data.len()).sum::<usize>()
            + r.held.values().map(|m| m.data.len()).sum::<usize>()
            + r.ready.iter().map(|m| m.data.len()).sum::<usize>()
    }

    /// Messages as (stream, unordered, size); the fragments of all of them with consecutive
    /// TSNs from `init`, 1000 bytes at most each. Message `i` has PPID `i` and its bytes
    /// are a pattern of `i`.
    fn fragment_all(messages: &[(u16, bool, usize)], init: u32) -> Vec<Fragment> {
        let mut ssns: HashMap<u16, u16> = HashMap::new();
        let mut tsn = init;
        let mut out = Vec::new();
        for (i, &(stream, unordered, size)) in messages.iter().enumerate() {
            let data = Bytes::from(pattern(i, size));
            let ssn = if unordered {
                0xdead
            } else {
                let s = ssns.entry(stream).or_default();
                *s = s.wrapping_add(1);
                s.wrapping_sub(1)
            };
            let n = size.div_ceil(1000);
            for k in 0..n {
                out.push(Fragment {
                    tsn,
                    stream_id: stream,
                    ssn,
                    ppid: i as u32,
                    unordered,
                    beginning: k == 0,
                    ending: k + 1 == n,
                    data: data.slice(k * 1000..size.min((k + 1) * 1000)),
                });
                tsn = tsn.wrapping_add(1);
            }
        }
        out
    }

    /// The bytes of message `i`.
    fn pattern(i: usize, size: usize) -> Vec<u8> {
        (0..size).map(|j| ((i * 7 + j * 13) % 251) as u8).collect()
    }

    /// Random messages, and all their fragments in a random order.
    fn scrambled() -> impl Strategy<Value = (Vec<(u16, bool, usize)>, Vec<Fragment>)> {
        let message = (0u16..4, any::<bool>(), 1usize..5000);
        let init = prop_oneof![any::<u32>(), (u32::MAX - 20)..=u32::MAX];
        (prop::collection::vec(message, 0..40), init).prop_flat_map(|(messages, init)| {
            let fragments = fragment_all(&messages, init);
            (Just(messages), Just(fragments).prop_shuffle())
        })
    }

    /// Random messages, and their fragments in order but for a few swaps of neighbours
    /// (the fast path's usual input, with the spills a reordering path causes).
    fn nearly_in_order() -> impl Strategy<Value = (Vec<(u16, bool, usize)>, Vec<Fragment>)> {
        let message = (0u16..4, any::<bool>(), 1usize..5000);
        let init = prop_oneof![any::<u32>(), (u32::MAX - 20)..=u32::MAX];
        (
            prop::collection::vec(message, 0..40),
            init,
            prop::collection::vec(any::<prop::sample::Index>(), 0..6),
        )
            .prop_map(|(messages, init, swaps)| {
                let mut fragments = fragment_all(&messages, init);
                for s in swaps {
                    if fragments.len() > 1 {
                        let i = s.index(fragments.len() - 1);
                        fragments.swap(i, i + 1);
                    }
                }
                (messages, fragments)
            })
    }

    /// Checks that `fragments` inserted in their order deliver `messages` each once,
    /// intact, in order per stream, with exact accounting throughout.
    fn check_delivery(
        messages: &[(u16, bool, usize)],
        fragments: Vec<Fragment>,
        pop_every: usize,
    ) -> Result<(), TestCaseError> {
        let mut r = Reassembly::new(4);
        let mut out = Vec::new();
        for (n, f) in fragments.into_iter().enumerate() {
            let compact = n % 3 == 0;
            r.insert(f, compact);
            prop_assert_eq!(r.buffered_bytes(), held_bytes(&r));
            if n % pop_every == 0 {
                out.extend(std::iter::from_fn(|| r.pop()));
            }
        }
        out.extend(std::iter::from_fn(|| r.pop()));
        prop_assert_eq!(r.buffered_bytes(), 0);
        prop_assert_eq!(r.held_chunks(), 0);
        prop_assert_eq!(out.len(), messages.len());
        let mut seen = HashSet::new();
        let mut last_ordered: HashMap<u16, u32> = HashMap::new();
        for m in out {
            let i = m.ppid as usize;
            prop_assert!(seen.insert(i), "message {} delivered twice", i);
            let (stream, unordered, size) = messages[i];
            prop_assert_eq!((m.stream_id, m.unordered), (stream, unordered));
            prop_assert_eq!(&m.data[..], &pattern(i, size)[..]);
            if !unordered {
                // Later SSNs on a stream are later messages: PPIDs must increase.
                if let Some(prev) = last_ordered.insert(stream, m.ppid) {
                    prop_assert!(prev < m.ppid, "stream {} out of order", stream);
                }
            }
        }
        Ok(())
    }

    proptest! {
        #[test]
        fn nearly_in_order_arrival_delivers_every_message_once_intact_in_order(
            (messages, fragments) in nearly_in_order(),
            pop_every in 1usize..10,
        ) {
            check_delivery(&messages, fragments, pop_every)?;
        }

        #[test]
        fn any_arrival_order_delivers_every_message_once_intact_in_order(
            (messages, fragments) in scrambled(),
            pop_every in 1usize..10,
        ) {
            check_delivery(&messages, fragments, pop_every)?;
        }

        /// Hostile input: random flags, streams, SSNs and FORWARD TSNs. Nothing panics, the
        /// accounting stays exact, and every message delivered is made of consecutive TSNs
        /// of one stream, one kind and one SSN if ordered, from a B to an E, each used once.
        #[test]
        fn hostile_fragments_never_make_a_corrupt_message(
            base in any::<u32>(),
            ops in prop::collection::vec(
                (0u32..40, 0u16..3, 0u16..4, any::<bool>(), any::<bool>(), any::<bool>(), 0u8..12),
                0..200,
            ),
        ) {
            let mut r = Reassembly::new(2);
            let mut sent: BTreeMap<u32, Fragment> = BTreeMap::new();
            let mut used = HashSet::new();
            let mut last_ssn: HashMap<u16, u16> = HashMap::new();
            for (off, stream, ssn, unordered, beginning, ending, kind) in ops {
                let tsn = base.wrapping_add(off);
                if kind == 0 {
                    r.forward_tsn(tsn, &[(stream, ssn)]);
                } else if let Entry::Vacant(slot) = sent.entry(tsn) {
                    // The TSN map lets each TSN through once.
                    let f = Fragment {
                        tsn,
                        stream_id: stream,
                        ssn,
                        ppid: 0,
                        unordered,
                        beginning,
                        ending,
                        data: Bytes::copy_from_slice(&tsn.to_be_bytes()),
                    };
                    slot.insert(f.clone());
                    r.insert(f, false);
                }
                prop_assert_eq!(r.buffered_bytes(), held_bytes(&r));
                while let Some(m) = r.pop() {
                    let tsns: Vec<u32> = m
                        .data
                        .chunks(4)
                        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
                        .collect();
                    let frags: Vec<&Fragment> = tsns.iter().map(|t| &sent[t]).collect();
                    let (first, last) = (frags[0], frags[frags.len() - 1]);
                    prop_assert!(first.beginning && last.ending);
                    prop_assert_eq!(m.stream_id, first.stream_id);
                    prop_assert_eq!(m.unordered, first.unordered);
                    for (w, pair) in frags.windows(2).enumerate() {
                        prop_assert_eq!(pair[1].tsn, pair[0].tsn.wrapping_add(1), "at {}", w);
                        let (a, b) = (pair[0], pair[1]);
                        prop_assert!(!a.ending && !b.beginning);
                        prop_assert_eq!((a.stream_id, a.unordered), (b.stream_id, b.unordered));
                        prop_assert!(a.unordered || a.ssn == b.ssn);
                    }
                    for t in tsns {
                        prop_assert!(used.insert(t), "TSN {} delivered twice", t);
                    }
                    if !m.unordered
                        && let Some(prev) = last_ssn.insert(m.stream_id, first.ssn)
                    {
                        prop_assert!(ssn_lt(prev, first.ssn), "SSN {} after {}", first.ssn, prev);
                    }
                }
            }
        }
    }
}
