//! Reassembly of I-DATA (RFC 8260 §2.1): fragments carry their message's identifier (MID)
//! and their place in it (FSN), so fragments of different messages of a stream may
//! interleave and a message is gathered by (stream, U flag, MID), not by consecutive TSNs.
//!
//! Ordered messages leave in MID order per stream (serial arithmetic, RFC 8260 §2.1);
//! unordered ones as soon as they are whole. What cannot be part of a valid message is
//! dropped: a second fragment with a held FSN, an FSN beyond the known last one, a second
//! E, an E below a held FSN, a non-B fragment with FSN 0, an ordered MID already delivered
//! or skipped, a whole ordered message whose MID already waits. Every held fragment and
//! waiting message counts in [`Reassembly::held_chunks`], so the caller's per-chunk charge
//! against the receive window bounds memory here too.

use std::collections::BTreeMap;

use bytes::{Bytes, BytesMut};

use super::{Reassembly, ReceivedMessage};
use crate::serial::tsn_lt;

/// One received I-DATA chunk (not a duplicate: the TSN map filtered those).
#[derive(Debug, Clone)]
pub(crate) struct IFragment {
    /// Stream identifier.
    pub(crate) stream_id: u16,
    /// Message identifier.
    pub(crate) mid: u32,
    /// Fragment sequence number (0 on the B fragment).
    pub(crate) fsn: u32,
    /// Payload protocol identifier (B fragment only).
    pub(crate) ppid: u32,
    /// U bit.
    pub(crate) unordered: bool,
    /// B bit.
    pub(crate) beginning: bool,
    /// E bit.
    pub(crate) ending: bool,
    /// The user data of this chunk.
    pub(crate) data: Bytes,
}

/// The fragments of one message so far.
#[derive(Debug, Default)]
struct Partial {
    /// PPID of the B fragment, once it arrived.
    ppid: Option<u32>,
    /// FSN of the E fragment, once it arrived.
    last_fsn: Option<u32>,
    /// Payloads by FSN.
    frags: BTreeMap<u32, Bytes>,
}

impl Partial {
    /// Whether `f` can belong to this message (see the module comment).
    fn accepts(&self, f: &IFragment) -> bool {
        if self.frags.contains_key(&f.fsn) || (!f.beginning && f.fsn == 0) {
            return false;
        }
        if self.last_fsn.is_some_and(|l| f.fsn > l) {
            return false;
        }
        if f.ending {
            let highest = self.frags.last_key_value().map(|(k, _)| *k);
            return self.last_fsn.is_none() && highest.is_none_or(|h| h < f.fsn);
        }
        true
    }

    /// Whether B, E and every FSN in between are here.
    fn is_whole(&self) -> bool {
        self.ppid.is_some()
            && self
                .last_fsn
                .is_some_and(|l| u64::from(l) + 1 == self.frags.len() as u64)
    }
}

/// The I-DATA state of a [`Reassembly`].
#[derive(Debug, Default)]
pub(super) struct Interleaved {
    /// Next ordered MID expected per inbound stream; all start at 0 (RFC 8260 §2.1).
    pub(super) next_mid: Vec<u32>,
    /// Messages being gathered, by (stream, unordered, MID).
    partial: BTreeMap<(u16, bool, u32), Partial>,
    /// Whole ordered messages waiting for an earlier MID, by (stream, MID).
    held: BTreeMap<(u16, u32), ReceivedMessage>,
    /// Fragments in `partial`.
    fragments: usize,
    /// Map entries I-FORWARD-TSNs delivered or dropped, for the cost tests.
    pub(super) visited: u64,
    /// The waiting MIDs an I-FORWARD-TSN entry releases, kept for its capacity.
    scratch: Vec<u32>,
}

impl Interleaved {
    /// State for `inbound_streams` streams.
    pub(super) fn new(inbound_streams: u16) -> Self {
        Self {
            next_mid: vec![0; usize::from(inbound_streams)],
            ..Self::default()
        }
    }

    /// Fragments and whole messages held here.
    pub(super) fn held_chunks(&self) -> usize {
        self.fragments + self.held.len()
    }
}

impl Reassembly {
    /// The next ordered MID `stream` expects with I-DATA (RFC 8260): every ordered message
    /// below it was delivered (None for a stream beyond the inbound streams).
    pub(crate) fn next_mid(&self, stream: u16) -> Option<u32> {
        self.il.next_mid.get(usize::from(stream)).copied()
    }

    /// Adds an I-DATA fragment. The caller checked the stream (as for DATA); `compact`
    /// copies a small payload so that it does not pin its datagram.
    pub(crate) fn insert_interleaved(&mut self, mut f: IFragment, compact: bool) {
        let Some(&next) = self.il.next_mid.get(usize::from(f.stream_id)) else {
            return;
        };
        if !f.unordered && tsn_lt(f.mid, next) {
            // Already delivered or skipped (RFC 8260 §2.1: MIDs are serial numbers).
            return;
        }
        let key = (f.stream_id, f.unordered, f.mid);
        if self.il.partial.get(&key).is_some_and(|p| !p.accepts(&f)) || (!f.beginning && f.fsn == 0)
        {
            return;
        }
        if compact {
            f.data = Bytes::copy_from_slice(&f.data);
        }
        self.bytes += f.data.len();
        self.il.fragments += 1;
        let p = self.il.partial.entry(key).or_default();
        if f.beginning {
            p.ppid = Some(f.ppid);
        }
        if f.ending {
            p.last_fsn = Some(f.fsn);
        }
        p.frags.insert(f.fsn, f.data);
        if !p.is_whole() {
            return;
        }
        let Some(p) = self.il.partial.remove(&key) else {
            return;
        };
        self.il.fragments -= p.frags.len();
        let len: usize = p.frags.values().map(Bytes::len).sum();
        let data = if p.frags.len() == 1 {
            p.frags.into_values().next().unwrap_or_default()
        } else {
            // One copy per fragmented message, as on the DATA fast path.
            let mut buf = BytesMut::with_capacity(len);
            for d in p.frags.values() {
                buf.extend_from_slice(d);
            }
            buf.freeze()
        };
        let msg = ReceivedMessage {
            stream_id: f.stream_id,
            ppid: p.ppid.unwrap_or_default(),
            unordered: f.unordered,
            data,
        };
        self.whole_interleaved(msg, f.mid);
    }

    /// A whole I-DATA message: unordered ones and the next ordered one leave at once, later
    /// ordered ones wait for their turn.
    fn whole_interleaved(&mut self, msg: ReceivedMessage, mid: u32) {
        let stream = msg.stream_id;
        if msg.unordered {
            self.ready.push_back(msg);
            return;
        }
        let Some(next) = self.il.next_mid.get_mut(usize::from(stream)) else {
            self.release_bytes(msg.data.len());
            return;
        };
        if mid != *next {
            match self.il.held.entry((stream, mid)) {
                // A second whole message with a MID that already waits: not valid.
                std::collections::btree_map::Entry::Occupied(_) => {
                    self.release_bytes(msg.data.len());
                }
                std::collections::btree_map::Entry::Vacant(v) => {
                    v.insert(msg);
                }
            }
            return;
        }
        *next = next.wrapping_add(1);
        self.ready.push_back(msg);
        self.release_interleaved_in_order(stream);
    }

    /// Moves the waiting ordered messages of `stream` that are now next to `ready`.
    fn release_interleaved_in_order(&mut self, stream: u16) {
        while let Some(next) = self.il.next_mid.get_mut(usize::from(stream))
            && let Some(msg) = self.il.held.remove(&(stream, *next))
        {
            *next = next.wrapping_add(1);
            self.ready.push_back(msg);
        }
    }

    /// I-FORWARD-TSN (RFC 8260 §2.3.1): for each ordered `(stream, false, mid)`, every
    /// message up to `mid` becomes deliverable (those waiting are delivered in MID order,
    /// partial ones dropped, the next expected MID becomes `mid + 1`); for an unordered
    /// `(stream, true, mid)`, the partial unordered messages of the stream up to `mid` are
    /// dropped (a sender fragments one message per stream at a time, §2.2.2, so an earlier
    /// one is whole or abandoned too). `_new_cum` drops nothing by itself: with interleaving
    /// another stream's message still being sent can have fragments below it.
    ///
    /// Each entry costs a few ordered-map lookups plus what it delivers or drops: the
    /// entries are found by key ranges, never by walking everything held (a hostile chunk
    /// of thousands of entries must not cost thousands of walks).
    pub(crate) fn iforward_tsn(&mut self, _new_cum: u32, streams: &[(u16, bool, u32)]) {
        for &(stream, unordered, mid) in streams {
            if unordered {
                // Every MID at or before `mid` in serial order: half the space below it.
                self.drop_partial(stream, true, mid.wrapping_add(1 << 31), mid);
                continue;
            }
            let Some(&next) = self.il.next_mid.get(usize::from(stream)) else {
                continue;
            };
            if tsn_lt(mid, next) {
                // An old I-FORWARD-TSN: already past there.
                continue;
            }
            // Waiting whole messages from `next` to `mid`, in serial order from `next`.
            let mut waiting = std::mem::take(&mut self.il.scratch);
            for r in serial_ranges(next, mid) {
                let keys = self
                    .il
                    .held
                    .range((stream, *r.start())..=(stream, *r.end()));
                waiting.extend(keys.map(|(&(_, m), _)| m));
            }
            self.il.visited += waiting.len() as u64;
            for &m in &waiting {
                if let Some(msg) = self.il.held.remove(&(stream, m)) {
                    self.ready.push_back(msg);
                }
            }
            waiting.clear();
            self.il.scratch = waiting;
            self.drop_partial(stream, false, next, mid);
            if let Some(n) = self.il.next_mid.get_mut(usize::from(stream)) {
                *n = mid.wrapping_add(1);
            }
            self.release_interleaved_in_order(stream);
        }
    }

    /// Drops the partial messages of `stream` (ordered or not) whose MID lies in the serial
    /// interval from `lo` to `hi`.
    fn drop_partial(&mut self, stream: u16, unordered: bool, lo: u32, hi: u32) {
        for r in serial_ranges(lo, hi) {
            let from = (stream, unordered, *r.start());
            let to = (stream, unordered, *r.end());
            while let Some((&k, _)) = self.il.partial.range(from..=to).next() {
                self.il.visited += 1;
                if let Some(p) = self.il.partial.remove(&k) {
                    self.il.fragments -= p.frags.len();
                    let len: usize = p.frags.values().map(Bytes::len).sum();
                    self.release_bytes(len);
                }
            }
        }
    }
}

/// The MIDs of the serial interval from `lo` to `hi` as ascending key ranges: one, or two
/// when it wraps past `u32::MAX`.
fn serial_ranges(lo: u32, hi: u32) -> impl Iterator<Item = std::ops::RangeInclusive<u32>> {
    let (first, second) = if lo <= hi {
        (lo..=hi, None)
    } else {
        (lo..=u32::MAX, Some(0..=hi))
    };
    std::iter::once(first).chain(second)
}
