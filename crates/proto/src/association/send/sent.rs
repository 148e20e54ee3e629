//! A DATA chunk with a TSN, kept until cumulatively acknowledged or abandoned, and its life
//! as one state (RFC 9260 §6.1–§6.3, §7.2.4; RFC 3758; NR-SACK). Every state change goes
//! through [`Sent::set_state`] (or `retarget`, `retransmitted_on`), which keeps the path's
//! flight size, the per-path lists (`rtx_marked`: waiting for retransmission; `sent_live`:
//! last sent there and not yet acknowledged) and the queue's counters in step; a debug build
//! checks them, the paths' buffer shares and the contiguity of `seq` against a recount
//! ([`check_tally`]).

use std::collections::VecDeque;

use bytes::Bytes;

use crate::path::{Path, PathId};
use crate::time::Instant;

/// Why a chunk waits for retransmission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mark {
    /// Three miss indications (RFC 9260 §7.2.4).
    Fast,
    /// T3-rtx expired on its path (§6.3.3).
    Timeout,
    /// Resent as a tail loss probe (RFC 8985 §7.3): not a loss signal.
    Probe,
}

/// Where a chunk is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChunkState {
    /// Sent, counted in its path's flight size.
    InFlight,
    /// Waiting to be sent again on its path (`Sent::path`, chosen by the rtx policy).
    Marked(Mark),
    /// Reported in a gap ack block: renegable (RFC 9260 §6.2.1).
    GapAcked,
    /// Reported in a non-renegable gap block (NR-SACK): its payload is freed.
    NrAcked,
    /// Given up under PR-SCTP (RFC 3758 §3.5).
    Abandoned,
}

impl ChunkState {
    /// Acknowledged by a gap block, renegable or not.
    pub(crate) fn is_gap_acked(self) -> bool {
        matches!(self, Self::GapAcked | Self::NrAcked)
    }
}

/// A DATA chunk with a TSN.
#[derive(Debug)]
pub(crate) struct Sent {
    pub(crate) tsn: u32,
    /// TSN order without wrapping: the key of the per-path retransmission lists.
    pub(crate) seq: u64,
    /// Transmission order: taken anew at every transmission (RACK's ordering, RFC 8985
    /// §6.2, breaking ties of `sent_at`).
    pub(crate) xmit: u64,
    pub(crate) stream: u16,
    pub(crate) ssn: u16,
    /// I-DATA message identifier (RFC 8260 §2.1), per stream and per ordered/unordered.
    pub(crate) mid: u32,
    /// I-DATA fragment sequence number: 0 for the B fragment, then one more per fragment.
    pub(crate) fsn: u32,
    pub(crate) ppid: u32,
    pub(crate) unordered: bool,
    pub(crate) beginning: bool,
    pub(crate) ending: bool,
    pub(crate) immediate: bool,
    pub(crate) data: Bytes,
    /// Path of the last transmission, or the one a retransmission waits for.
    pub(crate) path: PathId,
    /// Path of the last transmission.
    pub(crate) sent_on: PathId,
    pub(crate) tx_count: u16,
    pub(crate) state: ChunkState,
    /// Miss indications (RFC 9260 §7.2.4).
    pub(crate) misses: u8,
    /// Already fast-retransmitted once (it may not be again, §7.2.4).
    pub(crate) fast_retransmitted: bool,
    /// Its path's failure epoch when it was last sent (see `Path::fail_epoch`).
    pub(crate) epoch: u16,
    pub(crate) expires: Option<Instant>,
    /// When it was last sent: a first transmission's ack is an RTT sample for the
    /// controller (HyStart++, CUBIC), Karn's rule aside.
    pub(crate) sent_at: Instant,
    /// When it was first sent (RACK: whether an ack may still be the original's).
    pub(crate) first_sent_at: Instant,
    /// LS-SCTP: its PSN on `sent_on` (Abd El Al et al. §4.2); 0 when not sent as LS-DATA.
    pub(crate) psn: u32,
}

/// Counters over the chunks' states.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Tally {
    /// Chunks marked for retransmission.
    pub(crate) marked: usize,
    /// Chunks gap-acknowledged (renegable or not).
    pub(crate) gap_acked: usize,
}

/// Whether `s` stands in its path's `sent_live` list.
fn is_live_on_its_path(s: &Sent, npaths: usize) -> bool {
    npaths > 1
        && s.path == s.sent_on
        && matches!(s.state, ChunkState::InFlight | ChunkState::Marked(_))
}

impl Tally {
    /// Counts `s` in its current state.
    pub(crate) fn enter(&mut self, s: &Sent, paths: &mut [Path]) {
        if is_live_on_its_path(s, paths.len()) {
            paths[s.path.0 as usize].sent_live.insert(s.seq);
        }
        let p = &mut paths[s.path.0 as usize];
        match s.state {
            ChunkState::InFlight => p.flight_size += s.data.len(),
            ChunkState::Marked(_) => {
                self.marked += 1;
                p.rtx_marked.insert(s.seq);
            }
            ChunkState::GapAcked | ChunkState::NrAcked => self.gap_acked += 1,
            ChunkState::Abandoned => {}
        }
    }

    /// Stops counting `s` in its current state (it changes state or leaves the queue).
    pub(crate) fn leave(&mut self, s: &Sent, paths: &mut [Path]) {
        if is_live_on_its_path(s, paths.len()) {
            paths[s.path.0 as usize].sent_live.remove(s.seq);
        }
        let p = &mut paths[s.path.0 as usize];
        match s.state {
            ChunkState::InFlight => p.flight_size = p.flight_size.saturating_sub(s.data.len()),
            ChunkState::Marked(_) => {
                self.marked -= 1;
                p.rtx_marked.remove(s.seq);
            }
            ChunkState::GapAcked | ChunkState::NrAcked => self.gap_acked -= 1,
            ChunkState::Abandoned => {}
        }
    }
}

impl Sent {
    /// Moves the chunk to `to`, keeping flight sizes, retransmission lists and `tally` true.
    pub(crate) fn set_state(&mut self, to: ChunkState, paths: &mut [Path], tally: &mut Tally) {
        tally.leave(self, paths);
        self.state = to;
        tally.enter(self, paths);
    }

    /// The chunk (marked) is sent again on `path`.
    pub(crate) fn retransmitted_on(&mut self, path: PathId, paths: &mut [Path], tally: &mut Tally) {
        tally.leave(self, paths);
        self.state = ChunkState::InFlight;
        self.path = path;
        self.sent_on = path;
        tally.enter(self, paths);
    }

    /// The chunk goes back in flight on the path of its last transmission, with its share of
    /// the buffers: marked by a timeout found spurious (Ladha et al. §5: no Go-Back-N), or
    /// gap-acked and then missing from a SACK (RFC 9260 §6.2.1 D iv).
    pub(crate) fn unmark(&mut self, paths: &mut [Path], tally: &mut Tally) {
        debug_assert!(
            matches!(self.state, ChunkState::Marked(_) | ChunkState::GapAcked),
            "unmark {self:?}"
        );
        tally.leave(self, paths);
        let home = self.sent_on;
        if self.path != home {
            let len = self.data.len();
            let from = &mut paths[self.path.0 as usize];
            from.buffered = from.buffered.saturating_sub(len);
            paths[home.0 as usize].buffered += len;
            self.path = home;
            self.epoch = paths[home.0 as usize].fail_epoch;
        }
        self.state = ChunkState::InFlight;
        tally.enter(self, paths);
    }

    /// Moves a chunk that is not in flight to the path it will be retransmitted on,
    /// carrying its share of the buffers along (buffer splitting).
    pub(crate) fn retarget(&mut self, to: PathId, paths: &mut [Path], tally: &mut Tally) {
        debug_assert!(
            self.state != ChunkState::InFlight,
            "retarget of a chunk in flight"
        );
        if self.path != to {
            tally.leave(self, paths);
            let len = self.data.len();
            let from = &mut paths[self.path.0 as usize];
            from.buffered = from.buffered.saturating_sub(len);
            paths[to.0 as usize].buffered += len;
            self.path = to;
            // Not sent there yet: an ack of its earlier transmission must not revive `to`.
            self.epoch = paths[to.0 as usize].fail_epoch.wrapping_sub(1);
            tally.enter(self, paths);
        }
    }

    /// The chunk left the send buffer (acknowledged for good or abandoned): its path's
    /// share shrinks.
    pub(crate) fn leave_buffer(&self, paths: &mut [Path]) {
        let p = &mut paths[self.path.0 as usize];
        p.buffered = p.buffered.saturating_sub(self.data.len());
    }

    /// The bit of the chunk's path if the chunk was first sent there since the path last
    /// failed. An ack of a retransmission is ambiguous (Karn): the copy that got through may
    /// be the one sent before the failure, and it must not revive a dead path.
    pub(crate) fn fresh_ack_bit(&self, paths: &[Path]) -> u64 {
        let p = self.path.0 as usize;
        if p < 64 && self.tx_count == 1 && self.epoch == paths[p].fail_epoch {
            1 << p
        } else {
            0
        }
    }

    /// Appends the chunk as DATA (RFC 9260 §3.3.1), or as LS-DATA on path `ls_pid` with its
    /// PSN (Abd El Al et al. Fig. 7), field by field rather than through `Chunk::encode`: this is
    /// the hottest path of the sender.
    pub(crate) fn encode(&self, ls_pid: Option<u8>, idata: bool, buf: &mut Vec<u8>) {
        let header = if ls_pid.is_some() {
            braid_wire::chunk::LS_DATA_HEADER_LEN
        } else if idata {
            braid_wire::chunk::I_DATA_HEADER_LEN
        } else {
            braid_wire::chunk::DATA_HEADER_LEN
        };
        let len = header + self.data.len();
        // The MTU is at most 65535 (config validation), so this never truncates.
        let wire_len = u16::try_from(len).expect("DATA chunk longer than 65535 bytes");
        let flags = (u8::from(self.immediate) << 3)
            | (u8::from(self.unordered) << 2)
            | (u8::from(self.beginning) << 1)
            | u8::from(self.ending);
        let chunk_type = if ls_pid.is_some() {
            <braid_wire::chunk::LsData as braid_wire::chunk::ChunkBody>::TYPE.0
        } else if idata {
            braid_wire::chunk::ChunkType::I_DATA.0
        } else {
            0
        };
        buf.reserve(len + 3);
        buf.extend_from_slice(&[chunk_type, flags]);
        buf.extend_from_slice(&wire_len.to_be_bytes());
        buf.extend_from_slice(&self.tsn.to_be_bytes());
        if let Some(pid) = ls_pid {
            // PID in the high 4 bits, PSN in the low 12, 16 reserved bits (Fig. 7).
            let pid_psn = (u16::from(pid & 0xf) << 12) | crate::path::psn::wire(self.psn);
            buf.extend_from_slice(&pid_psn.to_be_bytes());
            buf.extend_from_slice(&[0, 0]);
        }
        buf.extend_from_slice(&self.stream.to_be_bytes());
        if idata && ls_pid.is_none() {
            // RFC 8260 §2.1: reserved, MID, then PPID on the first fragment, FSN on the others.
            buf.extend_from_slice(&[0, 0]);
            buf.extend_from_slice(&self.mid.to_be_bytes());
            let word = if self.beginning { self.ppid } else { self.fsn };
            buf.extend_from_slice(&word.to_be_bytes());
        } else {
            buf.extend_from_slice(&self.ssn.to_be_bytes());
            buf.extend_from_slice(&self.ppid.to_be_bytes());
        }
        buf.extend_from_slice(&self.data);
        buf.resize(buf.len() + (4 - (len & 3)) % 4, 0);
    }
}

/// Bytes a DATA chunk with a `header`-byte header and `len` bytes of user data takes in a
/// packet.
pub(crate) fn data_chunk_size(header: usize, len: usize) -> usize {
    (header + len + 3) & !3
}

/// Debug builds: the counters, flight sizes and retransmission lists equal a recount.
pub(crate) fn check_tally(outstanding: &VecDeque<Sent>, tally: &Tally, paths: &[Path]) {
    if !cfg!(debug_assertions) {
        return;
    }
    let mut want = Tally::default();
    let mut flight = vec![0usize; paths.len()];
    let mut marked = vec![0usize; paths.len()];
    let mut live = vec![0usize; paths.len()];
    let mut buffered = vec![0usize; paths.len()];
    let mut next_seq = outstanding.front().map(|s| s.seq);
    for s in outstanding {
        let p = s.path.0 as usize;
        assert_eq!(Some(s.seq), next_seq, "seq not contiguous at TSN {}", s.tsn);
        next_seq = Some(s.seq + 1);
        if !matches!(s.state, ChunkState::Abandoned | ChunkState::NrAcked) {
            buffered[p] += s.data.len();
        }
        if is_live_on_its_path(s, paths.len()) {
            live[p] += 1;
            assert!(paths[p].sent_live.contains(s.seq), "TSN {} not live", s.tsn);
        }
        match s.state {
            ChunkState::InFlight => flight[p] += s.data.len(),
            ChunkState::Marked(_) => {
                want.marked += 1;
                marked[p] += 1;
                assert!(
                    paths[p].rtx_marked.contains(s.seq),
                    "TSN {} not listed",
                    s.tsn
                );
            }
            ChunkState::GapAcked | ChunkState::NrAcked => want.gap_acked += 1,
            ChunkState::Abandoned => {}
        }
    }
    assert_eq!(*tally, want, "chunk counters out of step");
    for (i, p) in paths.iter().enumerate() {
        assert_eq!(p.flight_size, flight[i], "flight size of path {i}");
        assert_eq!(
            p.rtx_marked.len(),
            marked[i],
            "retransmission list of path {i}"
        );
        assert_eq!(p.sent_live.len(), live[i], "live list of path {i}");
        assert_eq!(p.buffered, buffered[i], "buffer share of path {i}");
    }
}
