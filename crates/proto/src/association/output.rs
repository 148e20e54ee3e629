//! Building packets (bundling, RFC 9260 §6.10) and running timers.

use braid_wire::packet::write_checksum;
use braid_wire::{COMMON_HEADER_LEN, Chunk};

use super::{Association, State, Transmit};
use crate::cc::Controller;
use crate::path::PathId;
use crate::time::Instant;
use crate::timer::Timer;

fn put_header(buf: &mut Vec<u8>, src: u16, dst: u16, vtag: u32) {
    buf.extend_from_slice(&src.to_be_bytes());
    buf.extend_from_slice(&dst.to_be_bytes());
    buf.extend_from_slice(&vtag.to_be_bytes());
    buf.extend_from_slice(&[0; 4]);
}

/// Our TIMESTAMP clock: microseconds, wrapping (compared in serial arithmetic, so values
/// up to 35 minutes apart order correctly).
fn timestamp_now(now: Instant) -> u32 {
    now.since_epoch().as_micros() as u32
}

impl Association {
    /// Bytes the TIMESTAMP chunk takes in the packet being built.
    pub(crate) fn tx_ts_len(&self) -> usize {
        if self.tx_ts_on {
            braid_wire::chunk::TIMESTAMP_CHUNK_LEN
        } else {
            0
        }
    }

    /// Appends the next packet to send to `buf` and says where it goes, or returns `None`
    /// when nothing is ready. Call until `None` after every input.
    #[must_use]
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        let start = buf.len();
        let t = self.next_packet(now, buf)?;
        if self.trace.enabled() {
            let packet = bytes::Bytes::copy_from_slice(&buf[start..]);
            let ev = crate::TraceEvent::Packet {
                path: self
                    .path_of_packet(t.local, t.remote)
                    .unwrap_or(self.primary),
                sent: true,
                size: t.size,
                chunks: crate::trace::summarize(&packet),
            };
            self.trace.record(now, ev);
        }
        Some(t)
    }

    /// [`Self::poll_transmit`]'s packet, before the trace sees it (inlined: one function on
    /// the hot path, as before the trace wrapped it).
    #[inline(always)]
    fn next_packet(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        let start = buf.len();
        if let Some(s) = self.standalone.pop_front() {
            put_header(buf, self.local_port, self.peer_port, s.vtag);
            if s.chunk.encode(buf).is_err() {
                buf.truncate(start);
                return None;
            }
            write_checksum(&mut buf[start..]);
            return Some(Transmit {
                local: s.local,
                remote: s.remote,
                size: buf.len() - start,
                may_fragment: false,
            });
        }
        if self.state == State::Closed {
            return None;
        }
        if let Some(t) = self.poll_probe(now, buf) {
            return Some(t);
        }
        self.shutdown_ack_if_done(now);
        self.refresh_path_views(now);
        let path = match self.control.front() {
            Some(c) => c.path,
            None => self.choose_path(),
        };
        let pi = path.0 as usize;
        put_header(buf, self.local_port, self.peer_port, self.peer_tag);
        let mut room = self.paths[pi].mtu - COMMON_HEADER_LEN;
        // COOKIE-ECHO and COOKIE-ACK lead the packet (RFC 9260 §5.1), then the SACK, then
        // other control chunks (an ERROR follows the SACK it goes with, §6.5).
        self.write_control(path, buf, start, &mut room, true);
        let handshaking = matches!(self.state, State::CookieWait | State::CookieEchoed);
        let leading = buf.len() > start + COMMON_HEADER_LEN;
        // Ladha et al. Fig. 6 variant I: a TIMESTAMP chunk leads every packet while we send or
        // echo timestamps (after a COOKIE-ECHO or COOKIE-ACK, which must lead, none goes).
        self.tx_ts = timestamp_now(now);
        self.tx_ts_on =
            !handshaking && !leading && (self.sends_timestamps() || self.sack.ts_recent.is_some());
        if self.tx_ts_on {
            let ts = braid_wire::chunk::Timestamp {
                value: self.tx_ts,
                echo: self.sack.ts_recent.unwrap_or(0),
            };
            let _ = Chunk::Unknown(braid_wire::RawChunk::from_body(&ts)).encode(buf);
            room -= braid_wire::chunk::TIMESTAMP_CHUNK_LEN;
        }
        let empty = start + COMMON_HEADER_LEN + self.tx_ts_len();
        let data_ready = !handshaking && self.has_data_to_send(path);
        let bundling = data_ready || leading || self.control.iter().any(|c| c.path == path);
        if !handshaking && self.sack_wanted(bundling) {
            self.write_sack(now, path, buf, &mut room);
        }
        self.write_control(path, buf, start, &mut room, false);
        if !handshaking
            && self.features.pr_sctp
            && let Some(f) = self.forward_tsn_chunk()
        {
            let before = buf.len();
            if f.encode(buf).is_err() || buf.len() - before > room {
                buf.truncate(before);
                self.tx.forward_tsn_pending = true;
            } else {
                room -= buf.len() - before;
            }
        }
        // An LS-FORWARD-PSN rides on a packet that goes anyway while data waits: alone, one
        // per SACK, they filled the primary's drop-tail queue (counted in packets) and cost
        // the five paths of Abd El Al et al. Fig. 12 a thousand DATA drops a minute there.
        let carried = data_ready || buf.len() > empty || !self.tx.has_unsent();
        if !handshaking
            && self.ls()
            && carried
            && let Some(f) = self.ls_forward_chunk()
        {
            let before = buf.len();
            let fits = Chunk::Unknown(braid_wire::RawChunk::from_body(&f))
                .encode(buf)
                .is_ok()
                && buf.len() - before <= room;
            if fits {
                room -= buf.len() - before;
            } else {
                buf.truncate(before);
                self.ls_forward_unsent(&f);
            }
        }
        if data_ready {
            self.decay_idle_cwnd(now, path);
            self.write_data(now, path, buf, &mut room);
        }
        if buf.len() == empty {
            buf.truncate(start);
            return None;
        }
        write_checksum(&mut buf[start..]);
        let size = buf.len() - start;
        let p = &mut self.paths[pi];
        p.stats.packets_sent += 1;
        p.stats.bytes_sent += size as u64;
        p.pacer.on_sent(size);
        Some(Transmit {
            local: p.local,
            remote: p.remote,
            size,
            may_fragment: size > p.mtu,
        })
    }

    /// Appends the SACK if it fits (else it stays due for the next packet).
    fn write_sack(&mut self, now: Instant, path: PathId, buf: &mut Vec<u8>, room: &mut usize) {
        let before = buf.len();
        // The smallest path MTU sizes the SACK, so the blocks it reports do not shrink with the
        // path it leaves on (a block dropped later reads as reneging, RFC 9260 §6.2.1).
        let mtu = self
            .paths
            .iter()
            .filter(|p| !p.removed)
            .map(|p| p.mtu)
            .min()
            .unwrap_or(1200);
        let sack = self.make_sack(mtu.saturating_sub(COMMON_HEADER_LEN + self.tx_ts_len()));
        if self.ls() {
            // LS-SCTP: the SACK's cumulative ack and window go out in one LS-SACK per path.
            let (cum, a_rwnd) = match &sack {
                Chunk::Sack(s) => (s.cum_tsn_ack, s.a_rwnd),
                Chunk::NrSack(s) => (s.cum_tsn_ack, s.a_rwnd),
                _ => unreachable!("make_sack makes a SACK or NR-SACK"),
            };
            self.recycle_sack(sack);
            for s in self.make_ls_sacks(now, cum, a_rwnd, *room) {
                let _ = Chunk::Unknown(braid_wire::RawChunk::from_body(&s)).encode(buf);
            }
            if buf.len() - before > *room {
                buf.truncate(before);
                self.sack.due = true;
                return;
            }
            *room -= buf.len() - before;
            self.tsn_map.forget_recent();
            if self.trace.enabled() {
                let ev = crate::TraceEvent::SackSent {
                    path,
                    cum_tsn: cum,
                    bytes: (buf.len() - before) as u32,
                };
                self.trace.record(now, ev);
            }
            return;
        }
        let written = sack.encode(buf).is_ok();
        self.recycle_sack(sack);
        if !written || buf.len() - before > *room {
            buf.truncate(before);
            self.sack.due = true;
            return;
        }
        // DAC: the low two flag bits of (NR-)SACK say how many packets it acks.
        buf[before + 1] |= self.sack.dac_flags;
        if std::mem::take(&mut self.sack.rbit) {
            // Ladha et al. Fig. 6 rule (b): it answers a DATA chunk with the retransmit bit.
            buf[before + 1] |= braid_wire::chunk::SACK_FLAG_RETRANSMIT;
        }
        *room -= buf.len() - before;
        // The arrivals since the last SACK are reported now (not when a SACK was built that
        // did not fit its packet).
        self.tsn_map.forget_recent();
        if self.trace.enabled() {
            // The cumulative TSN ack follows the chunk header (RFC 9260 §3.3.4).
            let cum = &buf[before + 4..before + 8];
            let cum_tsn = u32::from_be_bytes([cum[0], cum[1], cum[2], cum[3]]);
            let ev = crate::TraceEvent::SackSent {
                path,
                cum_tsn,
                bytes: (buf.len() - before) as u32,
            };
            self.trace.record(now, ev);
        }
    }

    /// Writes queued control chunks for `path` that fit: the handshake ones if `leading`,
    /// the others otherwise, in the order they were queued.
    fn write_control(
        &mut self,
        path: PathId,
        buf: &mut Vec<u8>,
        start: usize,
        room: &mut usize,
        leading: bool,
    ) {
        let mut i = 0;
        while i < self.control.len() {
            let c = &self.control[i];
            let is_leading = matches!(c.chunk, Chunk::CookieEcho(_) | Chunk::CookieAck(_));
            if c.path != path || is_leading != leading {
                i += 1;
                continue;
            }
            let before = buf.len();
            let fits = c.chunk.encode(buf).is_ok() && buf.len() - before <= *room;
            if !fits {
                buf.truncate(before);
                if before == start + COMMON_HEADER_LEN {
                    // Larger than the path MTU on its own: it can never be sent.
                    tracing::warn!("control chunk larger than the path MTU dropped");
                    self.control.remove(i);
                    continue;
                }
                break;
            }
            *room -= buf.len() - before;
            self.control.remove(i);
        }
    }

    /// cwnd = max(cwnd/2, 4*MTU) per RTO the path spent without sending (RFC 9260 §7.2.1).
    fn decay_idle_cwnd(&mut self, now: Instant, path: PathId) {
        let p = &mut self.paths[path.0 as usize];
        if p.flight_size > 0 {
            return;
        }
        let rto = p.rtt.rto();
        let idle = now - p.last_data_sent;
        if rto.is_zero() || idle < rto {
            return;
        }
        let periods = (idle.as_nanos() / rto.as_nanos()).min(32);
        let before = (p.cc.window(), p.cc.ssthresh());
        for _ in 0..periods {
            p.cc.on_idle();
        }
        p.last_data_sent = now;
        self.trace_window(now, path, before, crate::WindowCause::Idle);
    }

    /// Runs every timer that expired by `now`. Afterwards `poll_timeout()` is `None` or
    /// later than `now` (the contract in `timer.rs`): a timer a handler arms at `now` (a PF
    /// path is probed at once, RFC 7829 §5.1) runs in a further round.
    pub fn handle_timeout(&mut self, now: Instant) {
        const MAX_ROUNDS: usize = 8;
        for _ in 0..MAX_ROUNDS {
            self.run_due_timers(now);
            if self.timers.next().is_none_or(|t| t > now) {
                return;
            }
        }
        // Still due after that many rounds (only a zero RTO could do it): a millisecond
        // later, so that no driver spins at one instant.
        self.timers
            .defer_due(now, now + std::time::Duration::from_millis(1));
    }

    /// One pass over the timers in their fixed order, each checked when its turn comes.
    fn run_due_timers(&mut self, now: Instant) {
        let due = |a: &Self, t: Timer| a.timers.get(t).is_some_and(|at| at <= now);
        if due(self, Timer::T1) {
            self.on_t1_expiry(now);
        }
        if due(self, Timer::T2) {
            self.on_t2_expiry(now);
        }
        if due(self, Timer::T5) {
            self.on_t5_expiry(now);
        }
        if due(self, Timer::DelayedSack) {
            self.timers.stop(Timer::DelayedSack);
            self.sack.due = true;
        }
        for i in 0..self.paths.len() {
            if self.state == State::Closed {
                return;
            }
            let id = PathId(i as u16);
            if self.paths[i].removed {
                // No timer acts on a tombstone (one armed by mistake must not spin either).
                self.timers.stop_path(id);
                continue;
            }
            if due(self, Timer::T3(id)) {
                self.on_t3_expiry(now, id);
            }
            if self.state != State::Closed && due(self, Timer::Heartbeat(id)) {
                self.on_heartbeat_timer(now, id);
            }
            if self.state != State::Closed && due(self, Timer::PmtuProbe(id)) {
                self.on_pmtu_probe_timer(now, id);
            }
            if self.state != State::Closed && due(self, Timer::PmtuRaise(id)) {
                self.on_pmtu_raise_timer(now, id);
            }
            if self.state != State::Closed && due(self, Timer::Rack(id)) {
                self.on_rack_timer(now, id);
            }
            if self.state != State::Closed && due(self, Timer::Tlp(id)) {
                self.on_tlp_timer(now, id);
            }
            if due(self, Timer::Pacing(id)) {
                // The pacer has tokens again: the next poll_transmit refills and sends.
                self.timers.stop(Timer::Pacing(id));
            }
        }
    }
}
