//! Incoming packets: verification-tag rules (RFC 9260 §8.5, §8.5.1), chunk dispatch in
//! order, unknown chunks by their high bits (§3.2), heartbeats (§8.3) and the shutdown
//! chunks (§9.2).

use std::net::SocketAddr;

use braid_wire::chunk::{
    ChunkType, ErrorChunk, HeartbeatAck, HeartbeatChunk, NrSack, Shutdown, ShutdownAck,
    ShutdownComplete,
};
use braid_wire::{Chunk, CommonHeader, ErrorCause, raw_chunks, verify_checksum};
use bytes::{Buf, Bytes};

use super::{Association, State};
use crate::event::{CloseReason, Event};
use crate::path::{PathId, PathState};
use crate::time::Instant;
use crate::timer::Timer;

/// Heartbeat Info as braid writes it: nonce, send time (µs), path.
const HB_INFO_LEN: usize = 18;

impl Association {
    /// Feeds one received SCTP packet (the UDP payload) that arrived on `local` from
    /// `remote`. Checks the CRC32c first; malformed packets are dropped.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        packet: &Bytes,
    ) {
        if verify_checksum(packet).is_err() {
            self.stats.packets_dropped += 1;
            return;
        }
        self.handle_verified(now, local, remote, packet, false);
    }

    /// An ICMP error about a packet we sent (RFC 9260 Appendix C). The quoted packet's
    /// verification tag must be the one we use towards the peer — or 0 with an INIT that
    /// carries our Initiate Tag — so an off-path attacker cannot forge one.
    pub(crate) fn handle_icmp(
        &mut self,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        quoted: &[u8],
        err: crate::IcmpError,
    ) {
        let Ok(h) = CommonHeader::peek(quoted) else {
            return;
        };
        let verified = if h.verification_tag == 0 {
            // ICMP6: a quoted INIT with our Initiate Tag.
            quoted.get(12) == Some(&1)
                && quoted
                    .get(16..20)
                    .is_some_and(|t| t == self.local_tag.to_be_bytes())
        } else {
            h.verification_tag == self.peer_tag
        };
        if !verified || self.state == State::Closed {
            return;
        }
        let path = self.path_of_packet(local, remote).unwrap_or(self.primary);
        match err {
            crate::IcmpError::PortUnreachable if self.state != State::CookieWait => {
                // App. C ICMP8 with RFC 6951 §5.5: port unreachable is protocol unreachable,
                // an ABORT once the quoted tag checked out (a peer that restarted elsewhere).
                self.close(now, CloseReason::Unreachable);
            }
            crate::IcmpError::Unreachable | crate::IcmpError::PortUnreachable => {
                if matches!(self.state, State::CookieWait | State::CookieEchoed) {
                    // ICMP5 / RFC 6951 §5.5: nobody speaks SCTP there: fail at once.
                    self.close(now, CloseReason::Unreachable);
                } else {
                    // Later, one error on the path, as a lost packet would count.
                    self.count_error(now, path);
                }
            }
            crate::IcmpError::TooBig { mtu } => {
                // RFC 9260 §7.3 / RFC 8899 §4.6.1: a smaller PMTU for packets to come.
                let p = &mut self.paths[path.0 as usize];
                let sctp = mtu.saturating_sub(crate::path::header_overhead(
                    &p.remote,
                    self.cfg.udp_encapsulation,
                ));
                if sctp >= crate::path::MIN_SCTP_MTU && sctp < p.mtu {
                    p.mtu = sctp;
                }
            }
        }
    }

    /// As `handle_datagram` for a packet whose checksum was verified; `skip_first` skips a
    /// COOKIE-ECHO the endpoint already processed to create this association.
    pub(crate) fn handle_verified(
        &mut self,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        packet: &Bytes,
        skip_first: bool,
    ) {
        if self.state == State::Closed {
            return;
        }
        let Ok(h) = CommonHeader::peek(packet) else {
            return;
        };
        if h.src_port != self.peer_port || h.dst_port != self.local_port {
            self.stats.packets_dropped += 1;
            return;
        }
        if !judged_whole(packet) {
            self.stats.packets_dropped += 1;
            return;
        }
        let path = self.path_of_packet(local, remote).unwrap_or(self.primary);
        self.rx_path = path;
        self.rx_datagram_len = packet.len();
        let mut chunks = raw_chunks(packet).peekable();
        let Some(Ok(first)) = chunks.peek() else {
            self.stats.packets_dropped += 1;
            return;
        };
        let first_type = first.chunk_type;
        let t_bit = first.flags & 1 != 0;
        // Verification tag (RFC 9260 §8.5, §8.5.1).
        let tag_ok = match first_type {
            ChunkType::INIT => h.verification_tag == 0,
            ChunkType::ABORT | ChunkType::SHUTDOWN_COMPLETE => {
                (!t_bit && h.verification_tag == self.local_tag)
                    || (t_bit && h.verification_tag == self.peer_tag && self.peer_tag != 0)
            }
            // Checked against the cookie by the §5.2.4 table.
            ChunkType::COOKIE_ECHO => true,
            ChunkType::SHUTDOWN_ACK
                if matches!(self.state, State::CookieWait | State::CookieEchoed) =>
            {
                // §8.5.1 E: treat as out of the blue (§8.4 item 5).
                self.queue_standalone_reflected(
                    h.verification_tag,
                    ShutdownComplete { t_bit: true },
                );
                return;
            }
            _ => h.verification_tag == self.local_tag,
        };
        if !tag_ok {
            self.stats.packets_dropped += 1;
            return;
        }
        // RFC 6951 §5.4 with 003_*.txt App. F §4: only a packet whose tag was verified moves
        // the encapsulation port; an INIT (tag 0) or a not yet checked cookie never does.
        if self.cfg.udp_encapsulation
            && !matches!(first_type, ChunkType::INIT | ChunkType::COOKIE_ECHO)
        {
            self.learn_encapsulation_port(remote);
        }
        let mut had_data = false;
        let mut index = 0usize;
        let mut cookie_checked = false;
        for raw in chunks {
            let Ok(raw) = raw else {
                // A malformed chunk: drop it and everything after it (RFC 9260 §3.2).
                self.stats.packets_dropped += 1;
                break;
            };
            index += 1;
            if skip_first && index == 1 {
                cookie_checked = true;
                continue;
            }
            if cookie_checked && index > 1 && h.verification_tag != self.local_tag {
                // Chunks bundled after a COOKIE-ECHO must carry the tag it established.
                break;
            }
            if matches!(
                raw.chunk_type,
                ChunkType::ASCONF | ChunkType::ASCONF_ACK | ChunkType::RE_CONFIG
            ) {
                // Extensions we did not announce are handled as unrecognized (§3.2).
                if !self.on_unrecognized(path, &raw) {
                    break;
                }
                continue;
            }
            let raw_flags = raw.flags;
            let chunk = match Chunk::decode(raw) {
                Ok(c) => c,
                Err(e) => {
                    tracing::debug!(%e, "malformed chunk dropped");
                    self.stats.packets_dropped += 1;
                    break;
                }
            };
            match chunk {
                Chunk::Data(d) => {
                    if !self.receives_data() {
                        continue;
                    }
                    had_data = true;
                    self.last_data_path = path;
                    if !self.on_data(now, d) {
                        return;
                    }
                }
                Chunk::Sack(s) => {
                    if self.acks_data() {
                        self.dac_count = raw_flags & 3;
                        self.on_sack(now, s.cum_tsn_ack, s.a_rwnd, &s.gap_blocks, &[]);
                    }
                }
                Chunk::NrSack(s) => {
                    if self.acks_data() {
                        self.dac_count = raw_flags & 3;
                        let gaps = merge_nr_blocks(&s);
                        self.on_sack(now, s.cum_tsn_ack, s.a_rwnd, &gaps, &s.nr_gap_blocks);
                    }
                }
                Chunk::Init(i) => self.on_init(now, i, remote),
                Chunk::InitAck(a) => self.on_init_ack(now, a),
                Chunk::CookieEcho(e) => {
                    if !self.on_cookie_echo(now, h.verification_tag, &e) {
                        return;
                    }
                    cookie_checked = true;
                }
                Chunk::CookieAck(_) => self.on_cookie_ack(now),
                Chunk::Heartbeat(hb) => self.on_heartbeat(path, hb),
                Chunk::HeartbeatAck(hb) => self.on_heartbeat_ack(now, hb),
                Chunk::Abort(a) => {
                    self.close(now, CloseReason::PeerAbort(a.causes));
                    return;
                }
                Chunk::Shutdown(s) => self.on_shutdown(now, s),
                Chunk::ShutdownAck(_) => self.on_shutdown_ack(now),
                Chunk::ShutdownComplete(_) => {
                    if self.state == State::ShutdownAckSent {
                        self.close(now, CloseReason::Shutdown);
                    }
                    return;
                }
                Chunk::Error(e) => self.on_error(now, e),
                Chunk::ForwardTsn(f) => {
                    if self.receives_data() {
                        self.on_forward_tsn(f);
                    }
                }
                Chunk::IData(_) | Chunk::IForwardTsn(_) => {
                    // RFC 8260 §2.2: I-DATA was not negotiated.
                    self.protocol_violation(now, "I-DATA or I-FORWARD-TSN without negotiation");
                    return;
                }
                // ECN and padding carry nothing we act on.
                Chunk::Ecne(_) | Chunk::Cwr(_) | Chunk::Pad(_) => {}
                // Announced extensions only; see the check before decoding.
                Chunk::Asconf(_) | Chunk::AsconfAck(_) | Chunk::ReConfig(_) => {}
                Chunk::Unknown(raw) => {
                    if !self.on_unrecognized(path, &raw) {
                        break;
                    }
                }
            }
            if self.state == State::Closed {
                return;
            }
        }
        if had_data {
            self.after_data_packet(now, path);
        }
    }

    /// States in which DATA from the peer is accepted.
    fn receives_data(&self) -> bool {
        matches!(
            self.state,
            State::Established
                | State::ShutdownPending
                | State::ShutdownSent
                | State::ShutdownReceived
        )
    }

    /// States in which SACKs are meaningful.
    fn acks_data(&self) -> bool {
        !matches!(
            self.state,
            State::CookieWait | State::CookieEchoed | State::Closed
        )
    }

    fn queue_standalone_reflected(&mut self, vtag: u32, chunk: impl Into<Chunk>) {
        self.queue_standalone(vtag, chunk);
    }

    /// An unrecognized chunk: report and/or stop as its high bits say (RFC 9260 §3.2).
    /// Returns whether processing of the packet goes on.
    fn on_unrecognized(&mut self, path: PathId, raw: &braid_wire::RawChunk) -> bool {
        let action = raw.chunk_type.unrecognized_action();
        if action.reports() {
            // An ERROR cause for a chunk the peer sent that we do not understand (§3.2).
            let cause = ErrorCause::UnrecognizedChunkType(Bytes::from(raw.to_wire()));
            self.queue_control(
                path,
                ErrorChunk {
                    causes: vec![cause],
                },
            );
        }
        action.skips()
    }

    /// HEARTBEAT: echo its parameters in a HEARTBEAT-ACK on the path it came from (§8.3).
    /// A HEARTBEAT without Heartbeat Info (some stacks send one) is echoed as it is.
    fn on_heartbeat(&mut self, path: PathId, hb: braid_wire::chunk::Heartbeat) {
        // §3.3.6: the ACK echoes the Heartbeat Info. A HEARTBEAT without one (pion sends
        // those) gets an empty Heartbeat Info, so our answer is still well-formed.
        let params = if hb.info().is_some() {
            hb.params
        } else {
            vec![braid_wire::Param::HeartbeatInfo(Bytes::new())]
        };
        self.queue_control(path, HeartbeatAck { params });
    }

    fn on_heartbeat_ack(&mut self, now: Instant, hb: HeartbeatAck) {
        let Some(info) = hb.info() else { return };
        if info.len() != HB_INFO_LEN {
            return;
        }
        let mut b = info.clone();
        let nonce = b.get_u64();
        let _sent_us = b.get_u64();
        let path = PathId(b.get_u16());
        let Some(p) = self.paths.get_mut(path.0 as usize) else {
            return;
        };
        let Some((expected, sent)) = p.heartbeat.outstanding else {
            return;
        };
        if expected != nonce {
            return;
        }
        p.heartbeat.outstanding = None;
        p.rtt.on_sample(now - sent);
        p.error_count = 0;
        // RFC 9260 §5.4: a HEARTBEAT-ACK with our nonce confirms the address.
        p.confirmed = true;
        if p.state != PathState::Active {
            self.set_path_state(now, path, PathState::Active);
            self.retarget_stranded();
        }
        // The timer was the answer's deadline: back to the normal rhythm.
        self.schedule_heartbeat(now, path);
        self.error_count = 0;
    }

    /// Heartbeat timer of `path`. With a heartbeat outstanding the timer is its deadline:
    /// unanswered after one RTO counts as an error (RFC 9260 §8.3). Otherwise it is time to
    /// send one (an idle or probed path, or one that is not active).
    pub(super) fn on_heartbeat_timer(&mut self, now: Instant, path: PathId) {
        let pi = path.0 as usize;
        self.timers.set(Timer::Heartbeat(path), None);
        if self.paths[pi].heartbeat.outstanding.take().is_some() {
            self.paths[pi].rtt.backoff();
            self.count_error(now, path);
            if self.state == State::Closed {
                return;
            }
            self.schedule_heartbeat(now, path);
            if self
                .timers
                .get(Timer::Heartbeat(path))
                .is_some_and(|t| t <= now)
            {
                // A PF path (or a free probe slot) is probed again right away: a timer left
                // due now would never fire in this call.
                self.send_heartbeat(now, path);
            }
            return;
        }
        let idle = now - self.paths[pi].last_data_sent >= self.cfg.hb_interval;
        let probe = std::mem::take(&mut self.paths[pi].heartbeat.probe);
        if idle || probe || self.paths[pi].state != PathState::Active {
            self.send_heartbeat(now, path);
        } else {
            self.schedule_heartbeat(now, path);
        }
    }

    /// Sends a HEARTBEAT on `path` now; its timer becomes the answer's deadline (one RTO).
    pub(super) fn send_heartbeat(&mut self, now: Instant, path: PathId) {
        use rand_core::RngCore;
        let pi = path.0 as usize;
        let nonce = self.rng.next_u64();
        let mut info = Vec::with_capacity(HB_INFO_LEN);
        info.extend_from_slice(&nonce.to_be_bytes());
        info.extend_from_slice(&(now.since_epoch().as_micros() as u64).to_be_bytes());
        info.extend_from_slice(&path.0.to_be_bytes());
        let p = &mut self.paths[pi];
        p.heartbeat.outstanding = Some((nonce, now));
        self.timers
            .set(Timer::Heartbeat(path), Some(now + p.rtt.rto()));
        self.queue_control(path, HeartbeatChunk::<false>::with_info(info.into()));
    }

    /// ERROR chunk (RFC 9260 §3.3.10). A Stale Cookie in COOKIE-ECHOED restarts the
    /// handshake (§5.2.6); other causes are informational.
    fn on_error(&mut self, now: Instant, e: ErrorChunk) {
        for c in &e.causes {
            tracing::debug!(?c, "peer reported an error");
            if matches!(c, ErrorCause::StaleCookie { .. }) && self.state == State::CookieEchoed {
                self.state = State::CookieWait;
                self.handshake_chunk = Some(self.rebuild_init());
                self.timers.set(Timer::T1, None);
                self.control
                    .retain(|c| !matches!(c.chunk, Chunk::CookieEcho(_)));
                let primary = self.primary;
                self.path_mut(primary).rtt.backoff();
                self.send_handshake_chunk(now);
                return;
            }
        }
    }

    /// SHUTDOWN (RFC 9260 §9.2): its cumulative ack counts as a SACK.
    fn on_shutdown(&mut self, now: Instant, s: Shutdown) {
        if matches!(
            self.state,
            State::CookieWait | State::CookieEchoed | State::Closed
        ) {
            return;
        }
        let flight: usize = self.paths.iter().map(|p| p.flight_size).sum();
        let rwnd = u32::try_from(self.tx.peer_rwnd + flight).unwrap_or(u32::MAX);
        self.on_sack(now, s.cum_tsn_ack, rwnd, &[], &[]);
        if self.state == State::Closed {
            return;
        }
        match self.state {
            State::Established | State::ShutdownPending => {
                self.state = State::ShutdownReceived;
                self.events.push_back(Event::PeerShutdown);
            }
            State::ShutdownSent => {
                // Both sides shut down at once: answer with SHUTDOWN-ACK at once.
                self.events.push_back(Event::PeerShutdown);
                self.shutdown_path = self.single_data_path();
                self.send_shutdown_ack(now);
            }
            _ => {}
        }
    }

    fn on_shutdown_ack(&mut self, now: Instant) {
        if matches!(self.state, State::ShutdownSent | State::ShutdownAckSent) {
            let tag = self.peer_tag;
            self.queue_standalone(tag, ShutdownComplete { t_bit: false });
            self.close(now, CloseReason::Shutdown);
        }
    }

    /// Moves the shutdown forward once every outstanding DATA chunk is acknowledged. In
    /// SHUTDOWN-RECEIVED the SHUTDOWN-ACK is decided when the next packet is built
    /// ([`Association::poll_transmit`]), after a driver handed over what it had accepted.
    pub(super) fn try_progress_shutdown(&mut self, now: Instant) {
        if !self.tx.is_empty() {
            return;
        }
        if self.state == State::ShutdownPending {
            self.state = State::ShutdownSent;
            self.shutdown_path = self.single_data_path();
            self.send_shutdown(now);
            let guard = self.cfg.rto_max * 5;
            self.timers.set(Timer::T5, Some(now + guard));
        }
    }

    /// SHUTDOWN-RECEIVED with nothing left to send: SHUTDOWN-ACK (RFC 9260 §9.2).
    pub(super) fn shutdown_ack_if_done(&mut self, now: Instant) {
        if self.state == State::ShutdownReceived && self.tx.is_empty() {
            self.shutdown_path = self.single_data_path();
            self.send_shutdown_ack(now);
        }
    }

    /// Queues the one SHUTDOWN of the packet to come on `path` (a queued one is replaced,
    /// so DATA arriving in bursts never piles SHUTDOWNs up), carrying our cumulative ack.
    pub(super) fn queue_shutdown(&mut self, path: PathId) {
        let cum = self.tsn_map.cum_tsn();
        self.control
            .retain(|c| !matches!(c.chunk, braid_wire::Chunk::Shutdown(_)));
        self.queue_control(path, Shutdown { cum_tsn_ack: cum });
    }

    fn send_shutdown(&mut self, now: Instant) {
        let path = self.shutdown_path;
        self.queue_shutdown(path);
        // The SHUTDOWN acknowledges what we received: no separate SACK needed.
        self.sack.due = false;
        self.timers.set(Timer::DelayedSack, None);
        let rto = self.paths[path.0 as usize].rtt.rto();
        self.timers.set(Timer::T2, Some(now + rto));
    }

    fn send_shutdown_ack(&mut self, now: Instant) {
        self.state = State::ShutdownAckSent;
        let path = self.shutdown_path;
        self.control
            .retain(|c| !matches!(c.chunk, braid_wire::Chunk::ShutdownAck(_)));
        self.queue_control(path, ShutdownAck);
        let rto = self.paths[path.0 as usize].rtt.rto();
        self.timers.set(Timer::T2, Some(now + rto));
    }

    /// T2-shutdown expired: count an error on the path it went to and resend SHUTDOWN or
    /// SHUTDOWN-ACK, to an alternate active path if there is one (RFC 9260 §9.2, §6.4.1).
    pub(super) fn on_t2_expiry(&mut self, now: Instant) {
        self.timers.set(Timer::T2, None);
        let used = self.shutdown_path;
        self.path_mut(used).rtt.backoff();
        self.count_error(now, used);
        if self.state == State::Closed {
            return;
        }
        self.shutdown_path = self.alternate_path(used);
        match self.state {
            State::ShutdownSent => self.send_shutdown(now),
            State::ShutdownAckSent => self.send_shutdown_ack(now),
            _ => {}
        }
    }

    /// Another confirmed active path than `from` (the next in order), else where new data
    /// would go.
    fn alternate_path(&self, from: PathId) -> PathId {
        let n = self.paths.len();
        (1..n)
            .map(|k| PathId(((from.0 as usize + k) % n) as u16))
            .find(|&id| {
                let p = &self.paths[id.0 as usize];
                p.confirmed && p.state == PathState::Active
            })
            .unwrap_or_else(|| self.single_data_path())
    }

    /// T5-shutdown-guard expired: give up with ABORT (RFC 9260 §9.2).
    pub(super) fn on_t5_expiry(&mut self, now: Instant) {
        self.timers.set(Timer::T5, None);
        if matches!(self.state, State::ShutdownSent | State::ShutdownAckSent) {
            self.queue_abort(vec![]);
            self.close(now, CloseReason::PeerUnreachable);
        }
    }
}

/// Whether a packet may be processed at all, judged before any chunk of it runs: INIT,
/// INIT-ACK and SHUTDOWN-COMPLETE must be alone in their packet (RFC 9260 §6.10, §8.5.1);
/// otherwise the whole packet is discarded, so nothing rides on their tag exceptions.
pub(crate) fn judged_whole(packet: &Bytes) -> bool {
    let mut count = 0usize;
    let mut lone_kind = false;
    for raw in raw_chunks(packet) {
        let Ok(raw) = raw else { break };
        count += 1;
        lone_kind |= matches!(
            raw.chunk_type,
            ChunkType::INIT | ChunkType::INIT_ACK | ChunkType::SHUTDOWN_COMPLETE
        );
        if lone_kind && count > 1 {
            return false;
        }
    }
    true
}

/// An NR-SACK's gap blocks and NR gap blocks as one sorted list of acknowledged TSNs
/// (a peer may list a non-renegable TSN in either or both).
fn merge_nr_blocks(s: &NrSack) -> Vec<braid_wire::chunk::GapAckBlock> {
    let mut v: Vec<_> = s
        .gap_blocks
        .iter()
        .chain(&s.nr_gap_blocks)
        .copied()
        .collect();
    v.sort_by_key(|b| b.start);
    v
}
