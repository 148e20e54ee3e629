//! Partial reliability (RFC 3758 §3.5): abandoning messages whose lifetime ran out, the
//! Advanced.Peer.Ack.Point and the FORWARD-TSN that moves the peer past them.

use braid_wire::Chunk;
use braid_wire::chunk::{ForwardTsn, ForwardTsnStream, IForwardTsn, IForwardTsnStream};

use super::sent::ChunkState;
use crate::association::Association;
use crate::serial::{tsn_gt, tsn_le};
use crate::time::Instant;

impl Association {
    /// Abandons the message whose chunk sits at `index` in the retransmission queue: every
    /// fragment of it (RFC 3758 §3.5 A3 — all fragments go together).
    pub(crate) fn abandon_message_at(&mut self, index: usize) {
        let (stream, ssn, mid, unordered) = {
            let s = &self.tx.outstanding[index];
            (s.stream, s.ssn, s.mid, s.unordered)
        };
        let idata = self.idata();
        let (start, end) = if idata {
            // RFC 8260 §2.2.2: other streams' fragments may sit between this message's ones,
            // which are found by MID between its B and E fragments (if still outstanding).
            let q = &self.tx.outstanding;
            let same = |i: usize| {
                let s = &q[i];
                s.stream == stream && s.mid == mid && s.unordered == unordered
            };
            let start = if q[index].beginning {
                index
            } else {
                (0..index)
                    .rev()
                    .find(|&i| same(i) && q[i].beginning)
                    .unwrap_or(0)
            };
            let end = if q[index].ending {
                index
            } else {
                (index + 1..q.len())
                    .find(|&i| same(i) && q[i].ending)
                    .unwrap_or(q.len() - 1)
            };
            (start, end)
        } else {
            // Fragments of one message are consecutive TSNs: walk back to B and on to E.
            let mut start = index;
            while start > 0 && !self.tx.outstanding[start].beginning {
                start -= 1;
            }
            let mut end = index;
            while end + 1 < self.tx.outstanding.len() && !self.tx.outstanding[end].ending {
                end += 1;
            }
            (start, end)
        };
        let mut events = std::mem::take(&mut self.events);
        for i in start..=end {
            let tx = &mut self.tx;
            let s = &mut tx.outstanding[i];
            let other = if idata { s.mid != mid } else { s.ssn != ssn };
            if s.stream != stream
                || other
                || s.unordered != unordered
                || matches!(s.state, ChunkState::Abandoned | ChunkState::NrAcked)
            {
                continue;
            }
            s.set_state(ChunkState::Abandoned, &mut self.paths, &mut tx.tally);
            s.leave_buffer(&mut self.paths);
            let len = s.data.len();
            let tsn = s.tsn;
            tx.outstanding_bytes -= len;
            tx.release(stream, len, &mut events);
            self.spurious_on_abandon(tsn);
        }
        self.events = events;
        // A message cut in the middle of its fragmentation sends none of the rest: a standard
        // receiver may abort on fragments behind the FORWARD-TSN that skipped their message.
        self.tx.abandon_unsent_rest(stream, mid, unordered);
        self.stats.abandoned_messages += 1;
    }

    /// Abandons every outstanding message past its lifetime (RFC 3758 §3.5 A3).
    pub(crate) fn abandon_expired(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.tx.outstanding.len() {
            let s = &self.tx.outstanding[i];
            let live = matches!(s.state, ChunkState::InFlight | ChunkState::Marked(_));
            if live && s.expires.is_some_and(|e| now >= e) {
                self.abandon_message_at(i);
            }
            i += 1;
        }
    }

    /// Moves the Advanced.Peer.Ack.Point over abandoned chunks and schedules a FORWARD-TSN
    /// if it passed the cumulative ack (RFC 3758 §3.5 C1–C3).
    pub(crate) fn advance_peer_ack_point(&mut self) {
        let mut point = self.tx.adv_peer_ack;
        for s in &self.tx.outstanding {
            if tsn_le(s.tsn, point) {
                continue;
            }
            if s.state == ChunkState::Abandoned {
                point = s.tsn;
            } else {
                break;
            }
        }
        self.tx.adv_peer_ack = point;
        if tsn_gt(point, self.tx.cum_ack) {
            self.tx.forward_tsn_pending = true;
        }
    }

    /// The FORWARD-TSN announcing the Advanced.Peer.Ack.Point (RFC 3758 §3.5 C4).
    pub(crate) fn forward_tsn_chunk(&mut self) -> Option<Chunk> {
        if !self.tx.forward_tsn_pending || !tsn_gt(self.tx.adv_peer_ack, self.tx.cum_ack) {
            self.tx.forward_tsn_pending = false;
            return None;
        }
        self.tx.forward_tsn_pending = false;
        if self.idata() {
            return Some(self.iforward_tsn_chunk());
        }
        let mut streams: Vec<ForwardTsnStream> = Vec::new();
        for s in &self.tx.outstanding {
            if tsn_gt(s.tsn, self.tx.adv_peer_ack) {
                break;
            }
            if !s.unordered {
                match streams.iter_mut().find(|e| e.stream_id == s.stream) {
                    Some(e) => e.ssn = s.ssn,
                    None => streams.push(ForwardTsnStream {
                        stream_id: s.stream,
                        ssn: s.ssn,
                    }),
                }
            }
        }
        Some(Chunk::ForwardTsn(ForwardTsn {
            new_cum_tsn: self.tx.adv_peer_ack,
            streams,
        }))
    }

    /// The I-FORWARD-TSN announcing the Advanced.Peer.Ack.Point (RFC 8260 §2.3.1): per
    /// stream the largest ordered and the largest unordered MID skipped.
    fn iforward_tsn_chunk(&self) -> Chunk {
        let mut streams: Vec<IForwardTsnStream> = Vec::new();
        for s in &self.tx.outstanding {
            if tsn_gt(s.tsn, self.tx.adv_peer_ack) {
                break;
            }
            let entry = streams
                .iter_mut()
                .find(|e| e.stream_id == s.stream && e.unordered == s.unordered);
            match entry {
                Some(e) if tsn_gt(s.mid, e.mid) => e.mid = s.mid,
                Some(_) => {}
                None => streams.push(IForwardTsnStream {
                    stream_id: s.stream,
                    unordered: s.unordered,
                    mid: s.mid,
                }),
            }
        }
        Chunk::IForwardTsn(IForwardTsn {
            new_cum_tsn: self.tx.adv_peer_ack,
            streams,
        })
    }
}
