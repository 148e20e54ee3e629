//! LS-SCTP on the wire (Abd El Al et al. §4.2, §4.6): LS-DATA carries the association sequence
//! number (ASN, in the TSN's place) and the path's id and sequence number (PID, PSN); the
//! receiver acknowledges each path's PSNs in its own LS-SACK, with the association's
//! cumulative ASN, a_rwnd and a timestamp that orders LS-SACKs arriving over paths of
//! different delays.
//!
//! The sender turns an LS-SACK into what the multipath sender already runs on: the chunks
//! whose PSNs it acknowledges become gap-acknowledged TSNs, and loss detection is SFR's
//! (a chunk is missing when a later one of its path arrived — by PSN, with no ambiguity),
//! window growth CUC's (a path's window grows when its own oldest chunk is acknowledged).
//! braid adds one chunk to the paper's design: LS-FORWARD-PSN, which tells the receiver
//! that PSNs whose chunks moved to another path will never come, so its cumulative PSN
//! moves on (the paper returns such PSNs to a pool and reuses them, which makes an
//! acknowledgement ambiguous when the first transmission was only late).

use braid_wire::chunk::{GapAckBlock, LsData, LsForwardPsn, LsSack};

use super::Association;
use super::send::sent::ChunkState;
use crate::association::send::sack::AckReport;
use crate::config::{CmtConfig, TimeoutHandling};
use crate::path::psn::{self, PsnMap};
use crate::path::{PathId, PathState};
use crate::serial::{tsn_ge, tsn_gt, tsn_lt};
use crate::time::Instant;

/// Path ids an LS-DATA chunk can name (4 bits).
pub(crate) const MAX_LS_PATHS: usize = 16;

/// An association's LS-SCTP state.
#[derive(Debug, Default)]
pub(crate) struct LsState {
    /// Receiver: what arrived on each of the peer's path ids.
    rx: Vec<PsnMap>,
    /// Sender: timestamp of the newest LS-SACK (its a_rwnd is the one that counts).
    peer_ts: Option<u32>,
    /// Sender: the a_rwnd of that LS-SACK.
    peer_a_rwnd: u32,
}

impl Association {
    /// Whether I-DATA was negotiated (RFC 8260 §2.2).
    pub(crate) fn idata(&self) -> bool {
        self.features.idata
    }

    /// Whether LS-SCTP was negotiated.
    pub(crate) fn ls(&self) -> bool {
        self.features.ls
    }

    /// The multipath sender's settings in force: the configured CMT, or under LS-SCTP the
    /// per-path loss detection (SFR) and window growth (CUC) that PSNs make exact.
    pub(crate) fn multipath_cfg(&self) -> Option<CmtConfig> {
        if self.features.ls {
            let base = self.cfg.cmt.unwrap_or_default();
            // LS-SACKs carry no DAC count: the receiver acknowledges per path.
            return Some(CmtConfig {
                sfr: true,
                cuc: true,
                dac: false,
                ..base
            });
        }
        self.cfg.cmt
    }

    /// Whether the multipath sender is at work: CMT (or LS-SCTP) over more than one path.
    pub(crate) fn multipath_active(&self) -> bool {
        self.multipath_cfg().is_some() && self.live_path_count() > 1
    }

    /// LS-SCTP's timeout handling is in force: a copy of a timed-out chunk probes the path.
    pub(crate) fn ls_copy_probing(&self) -> bool {
        self.features.ls
            && self.cfg.timeout_handling == TimeoutHandling::Ls
            && self.live_path_count() > 1
    }

    /// Whether `path` may carry LS-DATA at all: its id fits the 4-bit PID (always true
    /// without LS-SCTP). A path beyond would name another path's PSNs.
    pub(crate) fn pid_fits(&self, path: PathId) -> bool {
        !self.features.ls || usize::from(path.0) < MAX_LS_PATHS
    }

    /// The PID our LS-DATA on `path` carries, if LS-SCTP is in force.
    pub(crate) fn ls_pid(&self, path: PathId) -> Option<u8> {
        self.features.ls.then_some(path.0 as u8)
    }

    /// Receiver: one LS-DATA chunk: its ASN is taken as a TSN, its PSN is recorded for the
    /// path's LS-SACK. Returns false if the association was aborted.
    pub(super) fn on_ls_data(&mut self, now: Instant, d: LsData, datagram_len: usize) -> bool {
        let pid = usize::from(d.pid);
        let psn = d.psn;
        let data = braid_wire::chunk::Data {
            tsn: d.asn,
            stream_id: d.stream_id,
            ssn: d.ssn,
            ppid: d.ppid,
            unordered: d.unordered,
            beginning: d.beginning,
            ending: d.ending,
            immediate: d.immediate,
            user_data: d.user_data,
        };
        self.sack.dropped = false;
        if !self.on_data(now, data, datagram_len) {
            return false;
        }
        if !self.sack.dropped && pid < MAX_LS_PATHS {
            if self.ls.rx.len() <= pid {
                self.ls.rx.resize_with(pid + 1, PsnMap::default);
            }
            // A PSN out of range is not recorded: not acknowledged, the peer sends it again.
            let max = self.cfg.max_dup_tsns;
            let m = &mut self.ls.rx[pid];
            let had_gaps = m.has_gaps();
            let _ = m.insert(psn, max);
            // Out of order on its own path, or a path's gap just filled: SACK at once, as
            // RFC 9260 §6.7 does for TSNs, so that loss is reported without delay.
            if had_gaps || m.has_gaps() {
                self.sack.due = true;
            }
        }
        true
    }

    /// Receiver: the LS-SACKs that replace a SACK, one per path id the peer used, sized so
    /// that all of them fit in `room` bytes: gap blocks and duplicates share what the fixed
    /// fields leave (an LS-SACK left out would leave its path's holes unreported for good).
    pub(super) fn make_ls_sacks(
        &mut self,
        now: Instant,
        cum: u32,
        a_rwnd: u32,
        room: usize,
    ) -> Vec<LsSack> {
        // Microseconds of our clock, wrapping: only their order matters to the peer (§4.2).
        let timestamp = now.since_epoch().as_micros() as u32;
        let n = self.ls.rx.iter().filter(|m| m.used).count();
        let (max_blocks, max_dups) =
            psn::ls_sack_budget(room, n, self.cfg.max_gap_blocks, self.cfg.max_dup_tsns);
        let mut out = Vec::new();
        for (pid, m) in self.ls.rx.iter_mut().enumerate() {
            if !m.used {
                continue;
            }
            let (cum_psn, gaps, dup_psns) = m.report(max_blocks, max_dups);
            out.push(LsSack {
                pid: pid as u8,
                cum_asn: cum,
                a_rwnd,
                timestamp,
                cum_psn,
                gap_blocks: gaps
                    .into_iter()
                    .map(|(start, end)| GapAckBlock { start, end })
                    .collect(),
                dup_psns,
            });
        }
        out
    }

    /// Receiver: LS-FORWARD-PSN: the sender gave these PSNs up.
    pub(super) fn on_ls_forward(&mut self, f: LsForwardPsn) {
        for (pid, w) in f.entries {
            if let Some(m) = self.ls.rx.get_mut(usize::from(pid)) {
                m.forward(w);
                self.sack.due = true;
            }
        }
    }

    /// Sender: an LS-SACK for our path `s.pid`.
    pub(super) fn on_ls_sack(&mut self, now: Instant, s: LsSack, from: PathId) {
        let pi = usize::from(s.pid);
        if pi >= self.paths.len() {
            self.protocol_violation(now, "LS-SACK for a path id that was never used");
            return;
        }
        // The a_rwnd of an LS-SACK older than one already seen is stale (§4.2).
        let newest = self
            .ls
            .peer_ts
            .is_none_or(|t| s.timestamp.wrapping_sub(t) < 1 << 31);
        if newest {
            self.ls.peer_ts = Some(s.timestamp);
            self.ls.peer_a_rwnd = s.a_rwnd;
        }
        // A late LS-SACK's cumulative ASN says nothing new; its PSNs still count.
        let cum = if tsn_lt(s.cum_asn, self.tx.cum_ack) {
            self.tx.cum_ack
        } else {
            s.cum_asn
        };
        if tsn_ge(cum, self.tx.next_tsn) {
            self.protocol_violation(now, "LS-SACK acknowledges an ASN that was never sent");
            return;
        }
        let p = &self.paths[pi];
        let Ok(w) = u16::try_from(s.cum_psn) else {
            self.protocol_violation(now, "LS-SACK cumulative PSN beyond 12 bits");
            return;
        };
        let cum_psn = psn::unwrap_near(p.psn.peer_cum, w & 0x0fff);
        if cum_psn.wrapping_sub(p.psn.next) < 1 << 31 {
            self.protocol_violation(now, "LS-SACK acknowledges a PSN that was never sent");
            return;
        }
        let by_cum = |x: u32| {
            let off = x.wrapping_sub(cum_psn);
            off == 0 || off >= 1 << 31
        };
        // The blocks sorted and merged once, so each chunk costs a binary search, not a scan
        // of every block a hostile LS-SACK may carry.
        let mut blocks: Vec<(u32, u32)> = s
            .gap_blocks
            .iter()
            .filter(|g| g.start <= g.end)
            .map(|g| (u32::from(g.start), u32::from(g.end)))
            .collect();
        blocks.sort_unstable();
        let mut merged: Vec<(u32, u32)> = Vec::with_capacity(blocks.len());
        for (a, b) in blocks {
            match merged.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        let by_gap = |x: u32| {
            let off = x.wrapping_sub(cum_psn);
            let i = merged.partition_point(|&(a, _)| a <= off);
            i > 0 && off <= merged[i - 1].1
        };
        let acked = |x: u32| by_cum(x) || by_gap(x);
        // The copy probing this path after a timeout arrived: the path is back (§4.3).
        if let Some(probe) = p.psn.probe
            && acked(probe)
        {
            let p = &mut self.paths[pi];
            p.psn.probe = None;
            p.error_count = 0;
            self.error_count = 0;
            if p.state != PathState::Active && p.confirmed {
                self.set_path_state(now, PathId(s.pid.into()), PathState::Active);
                self.retarget_stranded();
            }
        }
        // The TSNs of chunks last sent on this path whose PSN is acknowledged. The
        // cumulative PSN also covers PSNs we told the receiver to skip (LS-FORWARD-PSN skips
        // those of chunks marked for retransmission, see `check_psn_forward`): for such a
        // chunk only a gap block says that it arrived.
        // The path's record of its transmissions finds them: those the cumulative PSN now
        // covers (then dropped from the record), and those in the gap blocks.
        let mut newly: Vec<u32> = Vec::new();
        let consider = |psn: u32, seq: u64, newly: &mut Vec<u32>| {
            let Some(i) = self.tx.index_of_seq(seq) else {
                return; // Cumulatively acknowledged or abandoned since.
            };
            let c = &self.tx.outstanding[i];
            // Stale if the chunk went out again since, under another PSN.
            let current = usize::from(c.sent_on.0) == pi && c.psn == psn;
            let skippable = c.state != ChunkState::InFlight || c.path != c.sent_on;
            if current
                && matches!(c.state, ChunkState::InFlight | ChunkState::Marked(_))
                && (by_gap(psn) || (by_cum(psn) && !skippable))
                && tsn_gt(c.tsn, cum)
            {
                newly.push(c.tsn);
            }
        };
        let covered: Vec<(u32, u64)> = self.paths[pi]
            .psn
            .sent
            .iter()
            .take_while(|e| by_cum(e.0))
            .copied()
            .collect();
        for &(psn, seq) in &covered {
            consider(psn, seq, &mut newly);
        }
        for &(a, b) in &merged {
            let range: Vec<(u32, u64)> = self.paths[pi]
                .psn
                .sent_between(cum_psn.wrapping_add(a), cum_psn.wrapping_add(b))
                .collect();
            for (psn, seq) in range {
                consider(psn, seq, &mut newly);
            }
        }
        newly.sort_unstable_by_key(|t| t.wrapping_sub(cum));
        newly.dedup();
        let gaps = self.merged_gap_blocks(cum, &newly);
        let p = &mut self.paths[pi];
        p.psn.sent.drain(..covered.len());
        if cum_psn.wrapping_sub(p.psn.peer_cum) < 1 << 31 {
            p.psn.peer_cum = cum_psn;
        }
        let a_rwnd = self.ls.peer_a_rwnd;
        let r = AckReport {
            from,
            cum,
            a_rwnd,
            gaps: &gaps,
            nr_gaps: &[],
            signals: Default::default(),
        };
        self.on_sack(now, r);
        self.check_psn_forward(pi);
    }

    /// Gap blocks from `cum` covering what earlier LS-SACKs acknowledged (other paths' chunks
    /// are not reneged because this one does not name them) and the TSNs `newly` adds.
    fn merged_gap_blocks(&self, cum: u32, newly: &[u32]) -> Vec<GapAckBlock> {
        let mut offs: Vec<(u32, u32)> = Vec::new();
        for &(a, b) in &self.tx.acked_ranges {
            if tsn_gt(b, cum) {
                let a = if tsn_gt(a, cum) {
                    a
                } else {
                    cum.wrapping_add(1)
                };
                offs.push((a.wrapping_sub(cum), b.wrapping_sub(cum)));
            }
        }
        offs.extend(newly.iter().map(|t| {
            let o = t.wrapping_sub(cum);
            (o, o)
        }));
        offs.sort_unstable();
        let mut out: Vec<GapAckBlock> = Vec::new();
        for (a, b) in offs {
            let (Ok(a), Ok(b)) = (u16::try_from(a), u16::try_from(b)) else {
                continue;
            };
            match out.last_mut() {
                Some(g) if u32::from(a) <= u32::from(g.end) + 1 => g.end = g.end.max(b),
                _ => out.push(GapAckBlock { start: a, end: b }),
            }
        }
        out
    }

    /// Whether PSNs below the lowest one still awaited on path `pi` were given up (their
    /// chunks moved): then the receiver is told to skip them.
    fn check_psn_forward(&mut self, pi: usize) {
        let p = &self.paths[pi];
        let mut floor = p.psn.next;
        // The oldest recorded transmission still in flight here (records are in PSN order).
        for &(psn, seq) in &p.psn.sent {
            let in_flight = self.tx.index_of_seq(seq).is_some_and(|i| {
                let c = &self.tx.outstanding[i];
                usize::from(c.sent_on.0) == pi
                    && c.psn == psn
                    && c.state == ChunkState::InFlight
                    && c.path == c.sent_on
            });
            if in_flight {
                floor = psn;
                break;
            }
        }
        if let Some(probe) = p.psn.probe
            && probe.wrapping_sub(floor) >= 1 << 31
        {
            floor = probe;
        }
        let p = &mut self.paths[pi];
        p.psn.forward_due = floor.wrapping_sub(1) != p.psn.peer_cum
            && floor.wrapping_sub(1).wrapping_sub(p.psn.peer_cum) < 1 << 31;
        if p.psn.forward_due {
            p.psn.forward_to = floor.wrapping_sub(1);
        }
    }

    /// Sender: an LS-FORWARD-PSN that did not fit the packet goes with the next one.
    pub(super) fn ls_forward_unsent(&mut self, f: &LsForwardPsn) {
        for &(pid, _) in &f.entries {
            if let Some(p) = self.paths.get_mut(usize::from(pid)) {
                p.psn.forward_due = true;
            }
        }
    }

    /// Sender: the LS-FORWARD-PSN to bundle, if a path's receiver waits for given-up PSNs.
    pub(super) fn ls_forward_chunk(&mut self) -> Option<LsForwardPsn> {
        let mut entries = Vec::new();
        for p in &mut self.paths {
            if p.psn.forward_due {
                p.psn.forward_due = false;
                entries.push((p.id.0 as u8, psn::wire(p.psn.forward_to)));
            }
        }
        (!entries.is_empty()).then_some(LsForwardPsn { entries })
    }
}
