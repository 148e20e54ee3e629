//! The receive side: DATA acceptance within the receive window, SACK generation with
//! delayed acknowledgement (RFC 9260 §6.2, §6.7), and FORWARD-TSN (RFC 3758 §3.6).

use braid_wire::chunk::{Data, ErrorChunk, ForwardTsn, GapAckBlock, IData, IForwardTsn, Sack};
use braid_wire::{Chunk, ErrorCause};

use super::{Association, State};
use crate::config::NrSackPolicy;
use crate::event::{CloseReason, Event};
use crate::path::PathId;
use crate::recv::reassembly::{Fragment, IFragment};
use crate::recv::undelivered::Undelivered;
use crate::serial::{ssn_lt, tsn_gt, tsn_le, tsn_lt};
use crate::time::Instant;
use crate::timer::Timer;

/// Bookkeeping charged per held fragment on top of its payload, so that a flood of tiny
/// chunks cannot hold more memory than the receive buffer allows.
const FRAGMENT_OVERHEAD: usize = 64;

/// Chunks held at most: below 2^15 so ordered SSNs stay comparable in serial arithmetic.
/// A 64 MiB autotuned window holds 46,000 full-sized chunks, so there the cap binds first
/// (43 MB of them) and a_rwnd says so (`local_rwnd`).
const MAX_HELD_CHUNKS: usize = 30_000;

/// Memory (payload plus per-chunk charge) the receiver holds at most for chunks beyond the
/// highest TSN: the window plus a quarter, so a full window of chunks of 256 bytes or more
/// fits with its charge (a_rwnd counts payload only).
fn rx_memory_cap(window: usize) -> usize {
    window + window / 4
}

/// The payload length a sender is assumed to cut before any chunk arrived (1500-byte MTU).
const TYPICAL_CHUNK: usize = 1436;

/// What the receiver needs of a DATA or I-DATA chunk's header to accept it.
struct UserChunk {
    tsn: u32,
    stream_id: u16,
    immediate: bool,
    len: usize,
    /// The message it belongs to: SSN (DATA) or MID (I-DATA), for NR-SACK's Delivered
    /// policy; `None` for an unordered chunk (delivered when whole, never held back).
    ordered_msg: Option<u32>,
}

/// What [`Association::admit_user_chunk`] decided.
enum Admit {
    /// The association was aborted.
    Aborted,
    /// Handled without keeping the payload (duplicate, dropped, unknown stream).
    Done,
    /// Keep it; `cum` and `had_gaps` are the TSN map's state before it.
    Take {
        compact: bool,
        cum: u32,
        had_gaps: bool,
    },
}

/// Payloads shorter than this are copied so they do not pin their whole datagram in memory.
const COPY_BELOW: usize = 256;

/// When to send the next SACK.
#[derive(Debug)]
pub(super) struct SackState {
    /// A SACK must go out with the next packet.
    pub(super) due: bool,
    /// Packets with DATA received since the last SACK.
    packets: u32,
    /// DAC: the flags of the SACK being sent carry how many DATA packets it covers.
    pub(super) dac_flags: u8,
    /// a_rwnd in the last SACK sent.
    last_rwnd: usize,
    /// A Readable event is outstanding (not yet followed by a drained queue).
    readable_signalled: bool,
    /// Chunks not yet NR-acknowledged ([`NrSackPolicy::Delivered`]).
    undelivered: Undelivered,
    /// The last DATA chunk was dropped unacknowledged (no room, too far ahead): LS-SCTP
    /// does not acknowledge its PSN either.
    pub(super) dropped: bool,
    /// The peer's timestamp our packets echo (RFC 7323 TS.Recent; Ladha et al. Fig. 6 I).
    pub(super) ts_recent: Option<u32>,
    /// The cumulative TSN ack of the last SACK we sent (RFC 7323 Last.ACK.sent).
    last_ack_cum: Option<u32>,
    /// A DATA chunk with the retransmit bit arrived since the last SACK (Fig. 6 rule (b)).
    pub(super) rbit: bool,
    /// Payload bytes of the last a_rwnd not yet taken by new chunks: a chunk dropped for
    /// room while it fits here broke the advertised window (`recv_window_drops`).
    promised: usize,
    /// Moving average (gain 1/8) of new chunks' payload lengths, for a_rwnd's charge.
    chunk_len_avg: usize,
    /// The block and duplicate lists of the last SACK built, returned after it was written
    /// (`recycle_sack`): a SACK with gap blocks allocates nothing once they have grown.
    spare: SpareLists,
}

/// A SACK's lists, kept between SACKs for their capacity.
#[derive(Debug, Default)]
struct SpareLists {
    gap_blocks: Vec<GapAckBlock>,
    nr_gap_blocks: Vec<GapAckBlock>,
    dup_tsns: Vec<u32>,
}

impl SackState {
    /// The state before any DATA: `a_rwnd` is the window the INIT or INIT-ACK advertised.
    pub(super) fn new(a_rwnd: usize) -> Self {
        Self {
            due: false,
            packets: 0,
            dac_flags: 0,
            last_rwnd: 0,
            readable_signalled: false,
            undelivered: Undelivered::default(),
            dropped: false,
            ts_recent: None,
            last_ack_cum: None,
            rbit: false,
            promised: a_rwnd,
            chunk_len_avg: TYPICAL_CHUNK,
            spare: SpareLists::default(),
        }
    }
}

impl Association {
    /// Our receive window as advertised in a_rwnd: what is free of the buffer, net of the
    /// per-chunk charge the chunks that fill it will bring, and the room left under the
    /// held-chunk cap, both at the moving average of the peer's chunk sizes. The sender
    /// counts payload only (RFC 9260 §6.2.1), so every payload within it must be taken
    /// (§6.2): a chunk dropped beyond the highest TSN after the window was promised stays
    /// in the sender's flight with nothing above it to report it missing, until T3.
    pub(super) fn local_rwnd(&self) -> usize {
        let window = self.bufs.recv_window();
        let held = self.rx_held();
        let free = window.saturating_sub(held);
        let c = self.sack.chunk_len_avg.max(1);
        let net = rx_memory_cap(window).saturating_sub(held) / (c + FRAGMENT_OVERHEAD) * c;
        let chunk_room = MAX_HELD_CHUNKS.saturating_sub(self.reasm.held_chunks()) * c;
        free.min(net).min(chunk_room)
    }

    /// Receive-buffer bytes in use: payload held plus a per-chunk overhead charge.
    fn rx_held(&self) -> usize {
        self.reasm.buffered_bytes() + self.reasm.held_chunks() * FRAGMENT_OVERHEAD
    }

    /// One DATA chunk (RFC 9260 §6.2). Returns false if the association was aborted.
    pub(super) fn on_data(&mut self, now: Instant, d: Data, datagram_len: usize) -> bool {
        let head = UserChunk {
            tsn: d.tsn,
            stream_id: d.stream_id,
            immediate: d.immediate,
            len: d.user_data.len(),
            ordered_msg: (!d.unordered).then_some(u32::from(d.ssn)),
        };
        let (compact, cum, had_gaps) = match self.admit_user_chunk(now, &head, datagram_len) {
            Admit::Aborted => return false,
            Admit::Done => return true,
            Admit::Take {
                compact,
                cum,
                had_gaps,
            } => (compact, cum, had_gaps),
        };
        self.reasm.insert(
            Fragment {
                tsn: d.tsn,
                stream_id: d.stream_id,
                ssn: d.ssn,
                ppid: d.ppid,
                unordered: d.unordered,
                beginning: d.beginning,
                ending: d.ending,
                data: d.user_data,
            },
            compact,
        );
        self.after_user_chunk(cum, had_gaps, head.immediate);
        true
    }

    /// One I-DATA chunk (RFC 8260 §2.1), accepted as DATA is (§6.2 of RFC 9260) and
    /// reassembled by message identifier. Returns false if the association was aborted.
    pub(super) fn on_idata(&mut self, now: Instant, d: IData, datagram_len: usize) -> bool {
        let head = UserChunk {
            tsn: d.tsn,
            stream_id: d.stream_id,
            immediate: d.immediate,
            len: d.user_data.len(),
            ordered_msg: (!d.unordered).then_some(d.mid),
        };
        let (compact, cum, had_gaps) = match self.admit_user_chunk(now, &head, datagram_len) {
            Admit::Aborted => return false,
            Admit::Done => return true,
            Admit::Take {
                compact,
                cum,
                had_gaps,
            } => (compact, cum, had_gaps),
        };
        self.reasm.insert_interleaved(
            IFragment {
                stream_id: d.stream_id,
                mid: d.mid,
                fsn: d.fsn,
                ppid: d.ppid,
                unordered: d.unordered,
                beginning: d.beginning,
                ending: d.ending,
                data: d.user_data,
            },
            compact,
        );
        self.after_user_chunk(cum, had_gaps, head.immediate);
        true
    }

    /// The checks every DATA or I-DATA chunk passes before its payload is kept (RFC 9260
    /// §6.2, §6.5): empty, duplicate, too far ahead, unknown stream, no room.
    fn admit_user_chunk(&mut self, now: Instant, d: &UserChunk, datagram_len: usize) -> Admit {
        if d.len == 0 {
            // RFC 9260 §6.2: a DATA chunk without user data is answered with ABORT.
            let cause = ErrorCause::NoUserData { tsn: d.tsn };
            self.queue_abort(vec![cause.clone()]);
            self.close(now, CloseReason::ProtocolViolation(cause));
            return Admit::Aborted;
        }
        let tsn = d.tsn;
        if self.tsn_map.contains(tsn) {
            self.tsn_map.insert(tsn);
            self.stats.duplicate_tsns += 1;
            self.sack.due = true;
            return Admit::Done;
        }
        let cum = self.tsn_map.cum_tsn();
        if tsn.wrapping_sub(cum) > u16::MAX as u32 {
            // Too far ahead for a gap ack block to report: drop, the peer retransmits.
            self.sack.dropped = true;
            self.sack.due = true;
            return Admit::Done;
        }
        if d.stream_id >= self.inbound_streams {
            // RFC 9260 §6.5: acknowledge, report Invalid Stream Identifier, discard.
            self.tsn_map.insert(tsn);
            let primary = self.primary;
            self.queue_control(
                primary,
                ErrorChunk {
                    causes: vec![ErrorCause::InvalidStreamIdentifier {
                        stream_id: d.stream_id,
                    }],
                },
            );
            self.sack.due = true;
            return Admit::Done;
        }
        if !self.rx_room_for(tsn, d.len) {
            if d.len <= self.sack.promised {
                self.stats.recv_window_drops += 1;
            }
            self.sack.dropped = true;
            self.sack.due = true;
            return Admit::Done;
        }
        self.sack.promised = self.sack.promised.saturating_sub(d.len);
        let avg = self.sack.chunk_len_avg;
        self.sack.chunk_len_avg = (avg * 7 + d.len) / 8;
        let had_gaps = self.tsn_map.has_gaps();
        self.tsn_map.insert(tsn);
        // The next SACK advertises a grown window, if this chunk ended a round.
        self.bufs.on_received(now, d.len);
        if let Some(msg) = d.ordered_msg
            && self.features.nr_sack
            && self.cfg.nr_sack_policy == NrSackPolicy::Delivered
        {
            self.sack.undelivered.insert(tsn, d.stream_id, msg);
        }
        // A payload much smaller than its datagram is copied if it is held as it is, so held
        // memory stays within twice the bytes charged to the window.
        let compact = d.len < COPY_BELOW || d.len * 2 < datagram_len;
        Admit::Take {
            compact,
            cum,
            had_gaps,
        }
    }

    /// When to SACK after a chunk was taken (`cum`, `had_gaps`: before it).
    fn after_user_chunk(&mut self, cum: u32, had_gaps: bool, immediate_bit: bool) {
        // Out-of-order arrival, or a gap just filled: SACK at once (§6.7); I bit (RFC 7053).
        // With CMT's DAC (Iyengar et al. §3.3) reordering across paths is normal: the
        // receiver keeps delaying (the SACK flags tell the sender how many packets it
        // covers), except when the cumulative ack jumps over a filled gap.
        let dac = self.multipath_cfg().is_some_and(|c| c.dac) && self.live_path_count() > 1;
        let immediate = if self.ls() {
            // LS-SCTP: reordering across paths is normal; a gap in a path's own sequence
            // is what calls for a SACK at once (Abd El Al et al. §4.1; `on_ls_data`).
            false
        } else if dac {
            had_gaps && self.tsn_map.cum_tsn() != cum
        } else {
            had_gaps || self.tsn_map.has_gaps()
        };
        if immediate || immediate_bit {
            self.sack.due = true;
        }
        self.signal_readable();
    }

    /// Whether a new chunk of `len` bytes with `tsn` fits the receive buffer (§6.2): memory
    /// (payload and per-chunk charge) within [`rx_memory_cap`], a hole-filling chunk within
    /// a quarter of the buffer more, the chunk the cumulative ack waits for within twice the
    /// buffer, and never more than `MAX_HELD_CHUNKS` chunks held beyond the highest TSN.
    /// a_rwnd ([`Self::local_rwnd`]) promises no more than this takes.
    fn rx_room_for(&self, tsn: u32, len: usize) -> bool {
        let beyond = tsn_gt(tsn, self.tsn_map.highest_tsn());
        if self.reasm.held_chunks() >= MAX_HELD_CHUNKS && beyond {
            return false;
        }
        let need = self.rx_held() + len + FRAGMENT_OVERHEAD;
        let window = self.bufs.recv_window();
        let cap = rx_memory_cap(window);
        // The chunk at the cumulative ack releases what is held behind it: refusing it when
        // retransmitted fillers took the room would hold everything forever (braid never
        // reneges to make room, §6.2.1), so it may overrun the cap up to the buffer again.
        let first_hole = !beyond && tsn == self.tsn_map.cum_tsn().wrapping_add(1);
        need <= cap || (!beyond && need <= cap + window / 4) || (first_hole && need <= cap + window)
    }

    fn signal_readable(&mut self) {
        if self.reasm.has_ready() && !self.sack.readable_signalled {
            self.sack.readable_signalled = true;
            self.events.push_back(Event::Readable);
        }
    }

    /// After a packet that carried DATA: delayed SACK every second packet or after the
    /// delay (RFC 9260 §6.2); in SHUTDOWN-SENT answer with SHUTDOWN (§9.2).
    pub(super) fn after_data_packet(&mut self, now: Instant, path: PathId) {
        self.sack.packets += 1;
        if self.sack.packets >= self.cfg.sack_freq {
            self.sack.due = true;
        }
        if !self.sack.due && !self.timers.is_running(Timer::DelayedSack) {
            self.timers
                .set(Timer::DelayedSack, Some(now + self.cfg.sack_delay));
        }
        if path.0 < 64 {
            self.sack_paths |= 1 << path.0;
        }
        self.first_data_path.get_or_insert(path);
        if self.state == State::ShutdownSent {
            // §9.2: answer DATA with SHUTDOWN (one per packet we send) and restart T2.
            self.queue_shutdown(path);
            self.sack.due = true;
            let rto = self.paths[path.0 as usize].rtt.rto();
            self.timers.set(Timer::T2, Some(now + rto));
        }
    }

    /// A new incarnation of the peer (restart, RFC 9260 §5.2.4 A) or of the association: the
    /// timestamps and retransmit bit we echo were the old one's (Ladha et al. Fig. 6).
    pub(super) fn reset_echo(&mut self) {
        self.sack.ts_recent = None;
        self.sack.last_ack_cum = None;
        self.sack.rbit = false;
    }

    /// The TIMESTAMP chunk of a packet that carried DATA, first TSN `first_tsn` (RFC 7323
    /// §4.3 for SCTP): its TSval becomes the one we echo if the packet reached the left edge
    /// of the window (so a delayed SACK echoes the earliest unacknowledged packet's) and is
    /// not older than the one we hold.
    pub(super) fn on_timestamp(&mut self, tsval: u32, first_tsn: Option<u32>) {
        let s = &mut self.sack;
        let at_left_edge = match (first_tsn, s.last_ack_cum) {
            (Some(tsn), Some(cum)) => tsn_le(tsn, cum.wrapping_add(1)),
            _ => true,
        };
        if at_left_edge && s.ts_recent.is_none_or(|r| !tsn_gt(r, tsval)) {
            s.ts_recent = Some(tsval);
        }
    }

    /// Whether a SACK goes into the packet being built: due now, or pending and a packet is
    /// leaving anyway (piggybacking).
    pub(super) fn sack_wanted(&self, sending_anyway: bool) -> bool {
        self.sack.due || (sending_anyway && self.timers.is_running(Timer::DelayedSack))
    }

    /// Builds the SACK, with as many gap blocks as fit in `room` bytes (up to
    /// `max_gap_blocks`), and resets the delayed-ack state.
    pub(super) fn make_sack(&mut self, room: usize) -> Chunk {
        let mut dup_tsns = std::mem::take(&mut self.sack.spare.dup_tsns);
        dup_tsns.clear();
        self.tsn_map.take_duplicates(&mut dup_tsns);
        // RFC 9260 §3.3.4: the SACK must fit in one packet; after a burst of losses on a long
        // fat path every hole it reports is one the sender can repair this round trip.
        let (header, lists) = if self.features.nr_sack {
            (20, 2)
        } else {
            (16, 1)
        };
        // The blocks take the room first and duplicates what is left, so the blocks do not
        // shrink when duplicates come (a block dropped reads as reneging, §6.2.1).
        let entries = room.saturating_sub(header) / 4;
        let max_blocks = self.cfg.max_gap_blocks.min(entries / lists);
        let mut gap_blocks = std::mem::take(&mut self.sack.spare.gap_blocks);
        gap_blocks.clear();
        if self.features.nr_sack
            && self.cfg.nr_sack_policy == NrSackPolicy::Received
            && max_blocks < self.cfg.max_gap_blocks
        {
            // The packet cuts the list: every block goes out non-renegable, so one that drops
            // out later reads as nothing at the sender, and the newest arrivals are reported
            // next to the lowest holes (else chunks above the cut count in flight for ever).
            self.tsn_map.gap_blocks_ends(max_blocks, &mut gap_blocks);
        } else {
            self.tsn_map.gap_blocks(max_blocks, &mut gap_blocks);
        }
        // The NR list (Delivered policy) may split blocks, up to `max_blocks` of its own.
        let nr_room = if lists == 2 { max_blocks } else { 0 };
        dup_tsns.truncate(entries.saturating_sub(gap_blocks.len() + nr_room));
        let a_rwnd = self.local_rwnd();
        self.sack.due = false;
        self.timers.set(Timer::DelayedSack, None);
        self.sack.dac_flags =
            if self.multipath_cfg().is_some_and(|c| c.dac) && self.live_path_count() > 1 {
                self.sack.packets.clamp(1, 2) as u8
            } else {
                0
            };
        self.sack.packets = 0;
        self.sack.last_ack_cum = Some(self.tsn_map.cum_tsn());
        self.sack_paths = 0;
        self.first_data_path = None;
        self.sack.last_rwnd = a_rwnd;
        self.sack.promised = a_rwnd;
        self.stats.sacks_sent += 1;
        if self.features.nr_sack {
            // braid never reneges (RFC 9260 §6.2 allows it; we do not), so every block may be
            // non-renegable; the Delivered policy holds back undelivered ordered chunks.
            let cum = self.tsn_map.cum_tsn();
            let nr_gap_blocks = match self.cfg.nr_sack_policy {
                NrSackPolicy::Received => {
                    let mut nr = std::mem::take(&mut self.sack.spare.nr_gap_blocks);
                    nr.clear();
                    nr.extend_from_slice(&gap_blocks);
                    nr
                }
                NrSackPolicy::Delivered => {
                    let reasm = &self.reasm;
                    let interleaved = self.features.idata;
                    self.sack.undelivered.prune(cum, |s, seq| {
                        if interleaved {
                            reasm.next_mid(s).is_none_or(|n| tsn_lt(seq, n))
                        } else {
                            // SSNs are 16-bit serial numbers (RFC 9260 §6.5).
                            reasm.next_ssn(s).is_none_or(|n| ssn_lt(seq as u16, n))
                        }
                    });
                    self.sack.undelivered.subtract(cum, &gap_blocks, max_blocks)
                }
            };
            return Chunk::NrSack(braid_wire::chunk::NrSack {
                cum_tsn_ack: cum,
                a_rwnd: u32::try_from(a_rwnd).unwrap_or(u32::MAX),
                nr_gap_blocks,
                gap_blocks,
                dup_tsns,
            });
        }
        Chunk::Sack(Sack {
            cum_tsn_ack: self.tsn_map.cum_tsn(),
            a_rwnd: u32::try_from(a_rwnd).unwrap_or(u32::MAX),
            gap_blocks,
            dup_tsns,
        })
    }

    /// A SACK from `make_sack` was written (or dropped): its lists are kept for the next.
    pub(super) fn recycle_sack(&mut self, sack: Chunk) {
        let spare = &mut self.sack.spare;
        match sack {
            Chunk::Sack(s) => {
                spare.gap_blocks = s.gap_blocks;
                spare.dup_tsns = s.dup_tsns;
            }
            Chunk::NrSack(s) => {
                spare.gap_blocks = s.gap_blocks;
                spare.nr_gap_blocks = s.nr_gap_blocks;
                spare.dup_tsns = s.dup_tsns;
            }
            _ => {}
        }
    }

    /// The application read a message: maybe reopen the window with a SACK (receiver SWS
    /// avoidance, RFC 9260 §6.2).
    pub(super) fn on_read(&mut self) {
        if !self.reasm.has_ready() {
            self.sack.readable_signalled = false;
        }
        let rwnd = self.local_rwnd();
        let mtu = self.primary_path().mtu;
        let step = (self.bufs.recv_window() / 2).min(mtu);
        if rwnd >= self.sack.last_rwnd + step
            && matches!(
                self.state,
                State::Established | State::ShutdownPending | State::ShutdownSent
            )
        {
            self.sack.due = true;
        }
    }

    /// FORWARD-TSN (RFC 3758 §3.6).
    pub(super) fn on_forward_tsn(&mut self, f: ForwardTsn) {
        if tsn_le(f.new_cum_tsn, self.tsn_map.cum_tsn()) {
            self.sack.due = true;
            return;
        }
        if f.new_cum_tsn.wrapping_sub(self.tsn_map.cum_tsn()) > (1 << 24) {
            // Implausibly far: ignore rather than skip a huge TSN range.
            return;
        }
        self.tsn_map.forward(f.new_cum_tsn);
        let streams: Vec<(u16, u16)> = f.streams.iter().map(|s| (s.stream_id, s.ssn)).collect();
        self.reasm.forward_tsn(f.new_cum_tsn, &streams);
        self.sack.due = true;
        self.signal_readable();
    }

    /// I-FORWARD-TSN (RFC 8260 §2.3): FORWARD-TSN with message identifiers, ordered and
    /// unordered.
    pub(super) fn on_iforward_tsn(&mut self, f: IForwardTsn) {
        if tsn_le(f.new_cum_tsn, self.tsn_map.cum_tsn()) {
            self.sack.due = true;
            return;
        }
        if f.new_cum_tsn.wrapping_sub(self.tsn_map.cum_tsn()) > (1 << 24) {
            // Implausibly far: ignore rather than skip a huge TSN range.
            return;
        }
        self.tsn_map.forward(f.new_cum_tsn);
        let streams: Vec<(u16, bool, u32)> = f
            .streams
            .iter()
            .map(|s| (s.stream_id, s.unordered, s.mid))
            .collect();
        self.reasm.iforward_tsn(f.new_cum_tsn, &streams);
        self.sack.due = true;
        self.signal_readable();
    }
}
