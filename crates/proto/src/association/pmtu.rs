//! PLPMTUD on the association (RFC 8899 §4, NEAT D3.1 §2.1.3): probes are a HEARTBEAT whose
//! Heartbeat Info carries the probed size, padded with a PAD chunk to that size, alone in
//! their packet (no user data, outside cwnd); the answers, the probe and raise timers, ICMP
//! "too big" and T3 expiries drive each path's [`Plpmtud`] and move its `mtu`.

use std::time::Duration;

use braid_wire::chunk::{HeartbeatChunk, Pad};
use braid_wire::packet::write_checksum;
use braid_wire::{COMMON_HEADER_LEN, Chunk};
use bytes::{Buf, Bytes};

use super::{Association, State, Transmit};
use crate::cc::Controller;
use crate::path::plpmtud::{Plpmtud, Step};
use crate::path::{MIN_SCTP_MTU, PathId, header_overhead};
use crate::time::Instant;
use crate::timer::Timer;

/// Heartbeat Info of a probe: nonce, send time (µs), path, probed PMTU (4 bytes). Its length
/// tells it from an ordinary heartbeat's (18 bytes).
pub(super) const PROBE_INFO_LEN: usize = 22;

/// HEARTBEAT chunk header + Heartbeat Info parameter header + the info, padded to 4 bytes
/// (RFC 9260 §3.2).
const PROBE_HB_LEN: usize = (4 + 4 + PROBE_INFO_LEN).next_multiple_of(4);

/// A PAD chunk is at least its 4-byte header (RFC 4820 §3).
const PAD_HEADER_LEN: usize = 4;

impl Association {
    /// The path's PLPMTUD, if it runs.
    /// (A removed path's search is over: nothing of it runs again.)
    fn pmtud(&mut self, path: PathId) -> Option<&mut Plpmtud> {
        let p = self.paths.get_mut(path.0 as usize)?;
        if p.removed {
            return None;
        }
        p.plpmtud.as_mut()
    }

    /// Carries out what the state machine decided and keeps the path's `mtu` on its PMTU.
    fn pmtu_apply(&mut self, now: Instant, path: PathId, step: Step) {
        let udp = self.cfg.udp_encapsulation;
        let raise = self.cfg.pmtu_raise_interval;
        let p = &mut self.paths[path.0 as usize];
        let Some(d) = p.plpmtud.as_mut() else { return };
        let overhead = header_overhead(&p.remote, udp);
        // RFC 8899 §5.2: packets use the confirmed PLPMTU, whichever way it moved.
        p.mtu = d
            .pmtu
            .saturating_sub(overhead)
            .clamp(MIN_SCTP_MTU, usize::from(u16::MAX));
        p.cc.set_mtu(p.mtu);
        // Every state change passes here once: traced (RFC 8899 §5.2's state machine).
        let (from, to, pmtu) = (d.traced, d.state, d.pmtu);
        d.traced = to;
        if from != to {
            tracing::debug!(
                path = path.0,
                from = from.as_str(),
                to = to.as_str(),
                pmtu,
                "PLPMTUD state"
            );
            self.trace.record(
                now,
                crate::TraceEvent::PmtuState {
                    path,
                    from,
                    to,
                    pmtu,
                },
            );
        }
        let p = &mut self.paths[path.0 as usize];
        let Some(d) = p.plpmtud.as_mut() else { return };
        match step {
            Step::Wait => {}
            Step::Probe(_) => {
                d.send_pending = true;
                // the NEAT report §2.1.3.2: a timer runs while a probe is outstanding; one RTO, as a
                // heartbeat's answer gets (RFC 9260 §8.3).
                let rto = p.rtt.rto();
                self.timers.set(Timer::PmtuProbe(path), Some(now + rto));
                self.timers.stop(Timer::PmtuRaise(path));
            }
            Step::Done => {
                d.send_pending = false;
                self.timers.stop(Timer::PmtuProbe(path));
                // RFC 8899 §5.1.1: look for a larger PMTU again after PMTU_RAISE_TIMER.
                self.timers.set(Timer::PmtuRaise(path), Some(now + raise));
            }
        }
    }

    /// A path was confirmed (handshake or HEARTBEAT-ACK): PROBE-NONE → BASE.
    pub(super) fn pmtu_path_confirmed(&mut self, now: Instant, path: PathId) {
        if let Some(step) = self.pmtud(path).map(|d| d.on_confirmed()) {
            self.pmtu_apply(now, path, step);
        }
    }

    /// The probe timer of `path` expired (the NEAT report, Fig. 6).
    pub(super) fn on_pmtu_probe_timer(&mut self, now: Instant, path: PathId) {
        self.timers.stop(Timer::PmtuProbe(path));
        if let Some(step) = self.pmtud(path).map(|d| d.on_probe_timeout()) {
            self.pmtu_apply(now, path, step);
        }
    }

    /// The raise timer of `path` expired: search for a larger PMTU.
    pub(super) fn on_pmtu_raise_timer(&mut self, now: Instant, path: PathId) {
        self.timers.stop(Timer::PmtuRaise(path));
        if let Some(step) = self.pmtud(path).map(|d| d.on_raise_timer()) {
            self.pmtu_apply(now, path, step);
            return;
        }
        // Without PLPMTUD: an ICMP "too big" lowered the path; back to the configured size
        // (RFC 8201 §4), and the next "too big" lowers it again.
        let udp = self.cfg.udp_encapsulation;
        let configured = self.cfg.path_mtu;
        let Some(p) = self.paths.get_mut(path.0 as usize).filter(|p| !p.removed) else {
            return;
        };
        let sctp = configured
            .saturating_sub(crate::path::header_overhead(&p.remote, udp))
            .clamp(256, usize::from(u16::MAX));
        if sctp > p.mtu {
            p.mtu = sctp;
            p.cc.set_mtu(sctp);
        }
    }

    /// T3-rtx expired on `path`: a possible black hole (RFC 8899 §4.3).
    pub(super) fn pmtu_data_timeout(&mut self, now: Instant, path: PathId) {
        if let Some(step) = self.pmtud(path).map(|d| d.on_data_timeout()) {
            self.pmtu_apply(now, path, step);
        }
    }

    /// An ICMP "too big" (`mtu`: IP bytes, 0 when the message carried none) for `path`.
    /// Returns false when PLPMTUD does not run there.
    pub(super) fn pmtu_icmp(&mut self, now: Instant, path: PathId, mtu: usize) -> bool {
        let reported = (mtu > 0).then_some(mtu);
        let Some(step) = self.pmtud(path).map(|d| d.on_icmp_too_big(reported)) else {
            return false;
        };
        self.pmtu_apply(now, path, step);
        true
    }

    /// A HEARTBEAT-ACK whose info has a probe's length: the probe of that size arrived.
    pub(super) fn on_probe_ack(&mut self, now: Instant, info: &Bytes) {
        let mut b = info.clone();
        let nonce = b.get_u64();
        let sent = Instant::from_duration(Duration::from_micros(b.get_u64()));
        let path = PathId(b.get_u16());
        let size = b.get_u32() as usize;
        let step = match self.pmtud(path) {
            // Only our own probe's nonce counts: a forged ACK must not raise the PMTU.
            Some(d) if d.nonce == nonce && !d.send_pending => d.on_probe_acked(size),
            _ => return,
        };
        // RFC 9260 §8.3: a HEARTBEAT-ACK is an RTT measurement; each copy of a probe has
        // its own nonce, which vouches for the echoed send time (no Karn ambiguity).
        if let Some(p) = self.paths.get_mut(path.0 as usize)
            && sent <= now
        {
            let rtt = now.saturating_duration_since(sent);
            p.rtt.on_sample(rtt);
            self.bufs.note_rtt(rtt);
        }
        self.pmtu_apply(now, path, step);
    }

    /// Builds the next pending probe packet, HEARTBEAT + PAD of exactly the probed size.
    pub(super) fn poll_probe(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        use rand_core::RngCore;
        if !matches!(
            self.state,
            State::Established | State::ShutdownPending | State::ShutdownReceived
        ) {
            return None;
        }
        let udp = self.cfg.udp_encapsulation;
        let pi = self.paths.iter().position(|p| {
            !p.removed
                && p.plpmtud
                    .as_ref()
                    .is_some_and(|d| d.send_pending && d.probe.is_some())
        })?;
        let nonce = self.rng.next_u64();
        let p = &mut self.paths[pi];
        let d = p.plpmtud.as_mut()?;
        d.send_pending = false;
        d.nonce = nonce;
        let size = d.probe?;
        // An SCTP packet is whole 4-byte words (RFC 9260 §3.2).
        let sctp = size.saturating_sub(header_overhead(&p.remote, udp)) & !3;
        let pad = sctp.checked_sub(COMMON_HEADER_LEN + PROBE_HB_LEN + PAD_HEADER_LEN)?;
        let mut info = Vec::with_capacity(PROBE_INFO_LEN);
        info.extend_from_slice(&nonce.to_be_bytes());
        info.extend_from_slice(&(now.since_epoch().as_micros() as u64).to_be_bytes());
        info.extend_from_slice(&(pi as u16).to_be_bytes());
        info.extend_from_slice(&(size as u32).to_be_bytes());
        let start = buf.len();
        buf.extend_from_slice(&self.local_port.to_be_bytes());
        buf.extend_from_slice(&self.peer_port.to_be_bytes());
        buf.extend_from_slice(&self.peer_tag.to_be_bytes());
        buf.extend_from_slice(&[0; 4]);
        let hb = Chunk::from(HeartbeatChunk::<false>::with_info(info.into()));
        let pad = Chunk::from(Pad::with_total_len(pad + PAD_HEADER_LEN));
        if hb.encode(buf).is_err() || pad.encode(buf).is_err() {
            buf.truncate(start);
            return None;
        }
        write_checksum(&mut buf[start..]);
        let size = buf.len() - start;
        p.stats.packets_sent += 1;
        p.stats.bytes_sent += size as u64;
        Some(Transmit {
            local: p.local,
            remote: p.remote,
            size,
            // A probe tests the path as it is: never fragmented (RFC 8899 §3 item 2).
            may_fragment: false,
        })
    }
}
