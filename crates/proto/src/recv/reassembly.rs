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

mod interleaved;
pub(crate) use interleaved::IFragment;

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
    /// Runs FORWARD TSNs looked at (the cost the tests bound).
    #[cfg(test)]
    runs_examined: std::cell::Cell<u64>,
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
    /// I-DATA reassembly (RFC 8260), used instead of the maps above once negotiated.
    il: interleaved::Interleaved,
}

impl Reassembly {
    /// Reassembly for `inbound_streams` streams.
    pub(crate) fn new(inbound_streams: u16) -> Self {
        Self {
            next_ssn: vec![0; usize::from(inbound_streams)],
            fragments: BTreeMap::new(),
            runs: BTreeMap::new(),
            #[cfg(test)]
            runs_examined: std::cell::Cell::new(0),
            held: BTreeMap::new(),
            ready: VecDeque::new(),
            last_tsn: 1 << 63,
            bytes: 0,
            tail: None,
            size_hint: 0,
            spare_lens: Vec::new(),
            il: interleaved::Interleaved::default(),
        }
    }

    /// Reassembles I-DATA (RFC 8260 §2.1) from now on, if `on`: before any data arrived.
    pub(crate) fn set_interleaved(&mut self, on: bool) {
        if on {
            let streams = u16::try_from(self.next_ssn.len()).unwrap_or(u16::MAX);
            self.il = interleaved::Interleaved::new(streams);
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

    /// The next SSN `stream` expects: every ordered message below it was delivered (None
    /// for a stream beyond the inbound streams).
    pub(crate) fn next_ssn(&self, stream: u16) -> Option<u16> {
        self.next_ssn.get(usize::from(stream)).copied()
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
        tail + self.fragments.len() + self.held.len() + self.ready.len() + self.il.held_chunks()
    }

    /// PR-SCTP (RFC 3758 §3.6): drops the partial messages that miss a TSN at or before
    /// `new_cum` (serial order), and for each `(stream, ssn)` pair makes every ordered
    /// message up to `ssn` on that stream deliverable: those waiting are delivered, in SSN
    /// order, the missing ones are skipped, the next expected SSN becomes `ssn + 1`, and the
    /// messages that are now in order follow.
    pub(crate) fn forward_tsn(&mut self, new_cum: u32, streams: &[(u16, u16)]) {
        // The general rules decide what a FORWARD TSN abandons.
        self.spill();
        let mut skipped_any = false;
        for &(stream, ssn) in streams {
            let Some(&next) = self.next_ssn.get(usize::from(stream)) else {
                continue;
            };
            if ssn_lt(ssn, next) {
                // Already delivered up to there: an old FORWARD TSN.
                continue;
            }
            skipped_any = true;
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
        // RFC 3758 §3.6: remove partial messages still missing a TSN <= new_cum (runs that
        // start at new_cum + 1 or below); also those of ordered messages now skipped, which
        // could never be delivered (a walk over every run, only when an SSN moved: a
        // FORWARD TSN that skips nothing costs what it names, not what is held).
        let upto = self.key_of(new_cum.wrapping_add(1)).unwrap_or(u64::MAX);
        let candidates: Box<dyn Iterator<Item = (&u64, &u64)>> = if skipped_any {
            Box::new(self.runs.iter())
        } else {
            Box::new(self.runs.range(..=upto))
        };
        let dead: Vec<(u64, u64)> = candidates
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

    /// The key `tsn` would have (see [`Reassembly::extend`]), without moving the reference.
    fn key_of(&self, tsn: u32) -> Option<u64> {
        let delta = tsn.wrapping_sub(self.last_tsn as u32) as i32;
        self.last_tsn.checked_add_signed(i64::from(delta))
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
        #[cfg(test)]
        self.runs_examined.set(self.runs_examined.get() + 1);
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
mod tests;

#[cfg(test)]
mod interleaved_tests;
