//! Association setup (RFC 9260 §5): INIT and INIT-ACK, the State Cookie, COOKIE-ECHO and
//! COOKIE-ACK, T1 timers, and the collision and restart cases of §5.2.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use braid_wire::chunk::{CookieAck, CookieEcho, ErrorChunk, Init, InitAck, InitChunk};
use braid_wire::{Chunk, ErrorCause, Param};
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;

use super::init_params::{InitAckTags, build_init_ack, our_params, random_tag, read_params};
use super::{Association, State};
use crate::config::AssociationConfig;
use crate::cookie::{CookieError, CookieKey, StateCookie};
use crate::event::{CloseReason, Event};
use crate::path::{PathId, PathState};
use crate::recv::reassembly::Reassembly;
use crate::recv::tsn_map::TsnMap;
use crate::time::Instant;
use crate::timer::Timer;

impl Association {
    /// Starts an association as the initiator: queues the INIT (RFC 9260 §5.1 A).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn connect(
        cfg: Arc<AssociationConfig>,
        key: Arc<CookieKey>,
        mut rng: ChaCha8Rng,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        alternates: &[SocketAddr],
        locals: Vec<SocketAddr>,
        local_port: u16,
        peer_port: u16,
    ) -> Self {
        let local_tag = random_tag(&mut rng);
        let initial_tsn = rng.next_u32();
        let mut a = Self::new_inner(
            cfg,
            key,
            rng,
            State::CookieWait,
            now,
            local,
            remote,
            local_port,
            peer_port,
        );
        a.local_addrs = locals;
        a.add_init_paths(now, alternates);
        a.local_tag = local_tag;
        a.local_initial_tsn = initial_tsn;
        a.tx.start(
            initial_tsn,
            a.cfg.outbound_streams,
            0,
            a.cfg.stream_buffer_low,
        );
        let init = Chunk::Init(InitChunk {
            initiate_tag: local_tag,
            a_rwnd: u32::try_from(a.cfg.recv_buffer).unwrap_or(u32::MAX),
            outbound_streams: a.cfg.outbound_streams,
            inbound_streams: a.cfg.max_inbound_streams,
            initial_tsn,
            params: our_params(&a.cfg, &a.local_addrs),
        });
        a.handshake_chunk = Some(init);
        a.send_handshake_chunk(now);
        a
    }

    /// Creates the association a valid COOKIE-ECHO describes (RFC 9260 §5.1 D), in
    /// ESTABLISHED with a COOKIE-ACK queued.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn accept(
        cfg: Arc<AssociationConfig>,
        key: Arc<CookieKey>,
        rng: ChaCha8Rng,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        locals: Vec<SocketAddr>,
        cookie: &StateCookie,
    ) -> Self {
        let mut a = Self::new_inner(
            cfg,
            key,
            rng,
            State::Established,
            now,
            local,
            remote,
            cookie.local_port,
            cookie.peer_port,
        );
        a.local_addrs = locals;
        // INIT-ACK out (the cookie's creation) to COOKIE-ECHO in: the round trip a receiver
        // that sends no data knows, for sizing its window (crate::autotune).
        let rtt = now.saturating_duration_since(cookie.created);
        a.bufs.note_rtt(rtt);
        // Karn's rule: a COOKIE-ECHO resent after T1 (RTO.Initial at least) would count its
        // wait too, and set the floor of loss detection's round trips far too high.
        if rtt < a.cfg.rto_initial {
            a.paths[0].rtt.on_verified(rtt);
        }
        a.adopt_cookie(cookie);
        a.add_peer_paths(now, &cookie.peer_addresses);
        a.queue_control(PathId(0), CookieAck);
        a.established(now);
        a
    }

    /// Takes tags, TSNs, streams and features from a cookie.
    fn adopt_cookie(&mut self, c: &StateCookie) {
        self.local_tag = c.local_tag;
        self.peer_tag = c.peer_tag;
        self.local_initial_tsn = c.local_initial_tsn;
        self.features = c.features;
        self.install_path_scheduler();
        self.inbound_streams = c.inbound_streams;
        self.tsn_map = TsnMap::new(c.peer_initial_tsn, self.cfg.max_dup_tsns);
        self.reset_echo();
        self.reasm = Reassembly::new(c.inbound_streams);
        self.tx.start(
            c.local_initial_tsn,
            c.outbound_streams,
            c.peer_a_rwnd as usize,
            self.cfg.stream_buffer_low,
        );
        self.tx.set_idata(self.features.idata);
        self.reasm.set_interleaved(self.features.idata);
        for p in &mut self.paths {
            p.cc = crate::cc::AnyController::new(
                self.cfg.cc,
                p.mtu,
                self.cfg.initial_ssthresh(c.peer_a_rwnd as usize),
                1,
            );
        }
    }

    fn established(&mut self, now: Instant) {
        self.set_state(now, State::Established);
        self.timers.set(Timer::T1, None);
        self.handshake_chunk = None;
        self.init_attempts = 0;
        self.reset_burst();
        self.events.push_back(Event::Connected);
        let measure = self.multipath_active();
        for i in 0..self.paths.len() {
            self.schedule_heartbeat(now, PathId(i as u16));
            if self.paths[i].confirmed {
                // the NEAT report §2.1.3.2: probing starts right after the handshake, before data.
                self.pmtu_path_confirmed(now, PathId(i as u16));
            }
            let p = &mut self.paths[i];
            if measure && p.state == PathState::Active && p.rtt.srtt().is_none() {
                // Under CMT SACKs go to the quickest path: measure every path at once.
                p.heartbeat.probe = true;
                self.timers.set(Timer::Heartbeat(p.id), Some(now));
            }
        }
    }

    /// The INIT to send again after a Stale Cookie error, asking for a longer cookie life
    /// (RFC 9260 §5.2.6).
    pub(super) fn rebuild_init(&self) -> Chunk {
        let mut params = our_params(&self.cfg, &self.local_addrs);
        let extra = u32::try_from(self.primary_path().rtt.rto().as_millis()).unwrap_or(u32::MAX);
        params.push(Param::CookiePreservative(extra));
        Chunk::Init(InitChunk {
            initiate_tag: self.local_tag,
            a_rwnd: u32::try_from(self.cfg.recv_buffer).unwrap_or(u32::MAX),
            outbound_streams: self.cfg.outbound_streams,
            inbound_streams: self.cfg.max_inbound_streams,
            initial_tsn: self.local_initial_tsn,
            params,
        })
    }

    /// (Re)sends INIT or COOKIE-ECHO and arms T1 with the path's RTO.
    pub(super) fn send_handshake_chunk(&mut self, now: Instant) {
        let Some(chunk) = self.handshake_chunk.clone() else {
            return;
        };
        self.init_attempts += 1;
        if matches!(chunk, Chunk::Init(_)) {
            self.init_sent = (self.init_attempts == 1).then_some(now);
        }
        let rto = self.primary_path().rtt.rto();
        self.timers.set(Timer::T1, Some(now + rto));
        match chunk {
            Chunk::Init(_) => {
                // To the address this attempt is for, confirmed or not (RFC 9260 §5.4 rule
                // 1: the application gave it).
                let remote = self.primary_path().remote;
                self.queue_standalone_to(remote, 0, chunk);
            }
            c => {
                // COOKIE-ECHO goes first in its packet (RFC 9260 §5.1 C).
                let primary = self.primary;
                self.control.push_front(super::Control {
                    path: primary,
                    chunk: c,
                });
            }
        }
    }

    /// T1-init or T1-cookie expired (RFC 9260 §5.1 C, §5.1.6).
    pub(super) fn on_t1_expiry(&mut self, now: Instant) {
        self.timers.set(Timer::T1, None);
        if self.init_attempts > self.cfg.max_init_retransmits {
            self.close(now, CloseReason::HandshakeTimeout);
            return;
        }
        let primary = self.primary;
        self.path_mut(primary).rtt.backoff();
        if self.state == State::CookieWait && self.init_paths.len() > 1 {
            // RFC 9260 §6.4: a retransmission goes to another of the peer's addresses; the
            // next address starts from the backed-off RTO, so the attempts still space out.
            let rto = self.paths[usize::from(primary.0)].rtt.clone();
            let next = self.next_init_path(primary);
            self.path_mut(next).rtt = rto;
            self.primary = next;
        }
        self.send_handshake_chunk(now);
    }

    /// INIT-ACK in COOKIE-WAIT (RFC 9260 §5.1 C); other states discard it (§5.2.3).
    pub(super) fn on_init_ack(&mut self, now: Instant, ack: InitAck, from: PathId) {
        if self.state != State::CookieWait {
            return;
        }
        if ack.initiate_tag == 0 || ack.outbound_streams == 0 || ack.inbound_streams == 0 {
            self.protocol_abort(now, ErrorCause::InvalidMandatoryParameter);
            return;
        }
        let peer = read_params(&ack.params, &self.cfg);
        if let Some(e) = peer.error {
            self.peer_tag = ack.initiate_tag;
            self.protocol_abort(now, e);
            return;
        }
        let Some(cookie) = peer.cookie.clone() else {
            self.peer_tag = ack.initiate_tag;
            self.protocol_abort(
                now,
                ErrorCause::MissingMandatoryParameter {
                    param_types: vec![7],
                },
            );
            return;
        };
        self.peer_tag = ack.initiate_tag;
        self.features = peer.features;
        self.install_path_scheduler();
        self.inbound_streams = self.cfg.max_inbound_streams.min(ack.outbound_streams);
        self.tsn_map = TsnMap::new(ack.initial_tsn, self.cfg.max_dup_tsns);
        self.reset_echo();
        self.reasm = Reassembly::new(self.inbound_streams);
        let streams = self.cfg.outbound_streams.min(ack.inbound_streams);
        self.tx.start(
            self.local_initial_tsn,
            streams,
            ack.a_rwnd as usize,
            self.cfg.stream_buffer_low,
        );
        self.tx.set_idata(self.features.idata);
        self.reasm.set_interleaved(self.features.idata);
        for p in &mut self.paths {
            p.cc = crate::cc::AnyController::new(
                self.cfg.cc,
                p.mtu,
                self.cfg.initial_ssthresh(ack.a_rwnd as usize),
                1,
            );
        }
        if let Some(sent) = self.init_sent.take() {
            // The INIT-ACK needs the INIT's tag: a round trip the peer cannot shorten.
            let primary = self.primary;
            self.path_mut(primary)
                .rtt
                .on_verified(now.saturating_duration_since(sent));
        }
        self.settle_init_paths(now, from, &peer.addresses);
        self.add_peer_paths(now, &peer.addresses);
        self.set_state(now, State::CookieEchoed);
        self.init_attempts = 0;
        self.handshake_chunk = Some(Chunk::CookieEcho(CookieEcho { cookie }));
        // Unrecognized parameters of the INIT-ACK are reported in an ERROR after the
        // COOKIE-ECHO (RFC 9260 §3.2.1).
        if !peer.unrecognized.is_empty() {
            let causes = peer
                .unrecognized
                .into_iter()
                .map(ErrorCause::UnrecognizedParameters)
                .collect();
            let primary = self.primary;
            self.queue_control(primary, ErrorChunk { causes });
        }
        self.send_handshake_chunk(now);
    }

    /// COOKIE-ACK in COOKIE-ECHOED completes the handshake (RFC 9260 §5.1 E).
    pub(super) fn on_cookie_ack(&mut self, now: Instant) {
        if self.state == State::CookieEchoed {
            self.established(now);
        }
    }

    /// An INIT for this association (RFC 9260 §5.2.1, §5.2.2, §9.2).
    pub(super) fn on_init(&mut self, now: Instant, init: Init, remote: SocketAddr) {
        if init.initiate_tag == 0 {
            return; // §3.3.2: silently discard.
        }
        if self.refused_new_encapsulation_port(now, &init, remote) {
            return;
        }
        let tags = match self.state {
            State::CookieWait => InitAckTags {
                local_tag: self.local_tag,
                local_initial_tsn: self.local_initial_tsn,
                local_tie_tag: 0,
                peer_tie_tag: 0,
            },
            State::CookieEchoed => InitAckTags {
                local_tag: self.local_tag,
                local_initial_tsn: self.local_initial_tsn,
                local_tie_tag: self.local_tag,
                peer_tie_tag: self.peer_tag,
            },
            State::ShutdownAckSent => {
                // §9.2: the SHUTDOWN-COMPLETE was probably lost: repeat SHUTDOWN-ACK.
                let path = self.shutdown_path;
                self.queue_control(path, braid_wire::chunk::ShutdownAck);
                return;
            }
            State::Closed => return,
            _ => match self.restart_tags(&init) {
                Some(tags) => tags,
                None => return,
            },
        };
        let (lp, pp) = (self.local_port, self.peer_port);
        let locals = self.local_addrs.clone();
        match build_init_ack(
            &self.key,
            &self.cfg,
            now,
            &init,
            remote.ip(),
            &locals,
            lp,
            pp,
            tags,
        ) {
            Ok(ack) => self.queue_standalone(init.initiate_tag, ack),
            Err(cause) => {
                let abort = braid_wire::chunk::Abort {
                    t_bit: false,
                    causes: vec![cause],
                };
                self.queue_standalone(init.initiate_tag, abort);
            }
        }
    }

    /// NEAT D3.1 App. F §4 rule 7: an INIT cannot be verified, so one from a new UDP port
    /// must not take the association over; it is refused to where it came from. Returns
    /// whether it was.
    fn refused_new_encapsulation_port(
        &mut self,
        now: Instant,
        init: &Init,
        remote: SocketAddr,
    ) -> bool {
        if !self.cfg.udp_encapsulation {
            return false;
        }
        let Some(p) = self.path_for(remote) else {
            return false;
        };
        let current_port = self.paths[p.0 as usize].remote.port();
        if current_port == remote.port() {
            return false;
        }
        let abort = braid_wire::chunk::Abort {
            t_bit: false,
            causes: vec![ErrorCause::RestartWithNewEncapsulationPort {
                current_port,
                new_port: remote.port(),
            }],
        };
        self.queue_standalone_to(remote, init.initiate_tag, abort);
        // Is the old port still there? A HEARTBEAT now lets a dead one show (ICMP port
        // unreachable, or errors) as fast as the RFCs allow, instead of ~213 s later.
        if self.paths[p.0 as usize].heartbeat.outstanding.is_none() {
            self.send_heartbeat(now, p);
        }
        true
    }

    /// §5.2.2: an INIT in an established association is a possible restart, answered with
    /// new tags and tie-tags; one that adds addresses is refused (cause 11) and gets `None`.
    fn restart_tags(&mut self, init: &Init) -> Option<InitAckTags> {
        let peer = read_params(&init.params, &self.cfg);
        let known: Vec<IpAddr> = self.paths.iter().map(|p| p.remote.ip()).collect();
        if let Some(a) = peer.addresses.iter().find(|a| !known.contains(a)) {
            let mut tlv = Vec::new();
            Param::from_address(*a).encode(&mut tlv);
            let abort = braid_wire::chunk::Abort {
                t_bit: false,
                causes: vec![ErrorCause::RestartWithNewAddresses(tlv.into())],
            };
            self.queue_standalone(init.initiate_tag, abort);
            return None;
        }
        let local_tag = self.random_tag();
        let local_initial_tsn = {
            use rand_core::RngCore;
            self.rng.next_u32()
        };
        Some(InitAckTags {
            local_tag,
            local_initial_tsn,
            local_tie_tag: self.local_tag,
            peer_tie_tag: self.peer_tag,
        })
    }

    /// A COOKIE-ECHO for this association: the table of RFC 9260 §5.2.4.
    /// Returns whether processing of the packet goes on.
    pub(super) fn on_cookie_echo(&mut self, now: Instant, vtag: u32, echo: &CookieEcho) -> bool {
        let cookie = match self.key.open(&echo.cookie, now) {
            Ok(c) => c,
            Err(CookieError::Invalid) => return false,
            Err(CookieError::Stale {
                staleness,
                peer_tag,
                local_tag,
            }) => {
                if local_tag != vtag {
                    return false; // §5.1.5 step 3 before step 4.
                }
                let us = u32::try_from(staleness.as_micros()).unwrap_or(u32::MAX);
                let e = ErrorChunk {
                    causes: vec![ErrorCause::StaleCookie { staleness_us: us }],
                };
                // The ERROR goes to the incarnation that sent the cookie (§5.1.5 step 4).
                self.queue_standalone(peer_tag, e);
                return false;
            }
        };
        if cookie.local_tag != vtag {
            return false; // §5.1.5 step 3: the packet must carry the cookie's tag.
        }
        let local_same = cookie.local_tag == self.local_tag;
        let peer_same = cookie.peer_tag == self.peer_tag;
        let primary = self.primary;
        if !local_same
            && !peer_same
            && cookie.local_tie_tag == self.local_tag
            && cookie.peer_tie_tag == self.peer_tag
        {
            // Case A: the peer restarted.
            if self.state == State::ShutdownAckSent {
                self.queue_control(primary, braid_wire::chunk::ShutdownAck);
                self.queue_control(
                    primary,
                    ErrorChunk {
                        causes: vec![ErrorCause::CookieWhileShuttingDown],
                    },
                );
                return false;
            }
            self.reset_for_restart(now);
            self.adopt_cookie(&cookie);
            self.events.push_back(Event::Restarted);
            self.queue_control(primary, CookieAck);
            if self.state != State::Established {
                self.established(now);
            }
            return true;
        }
        if local_same && !peer_same {
            // Case B: INIT collision; the peer's new tag wins.
            if matches!(self.state, State::CookieWait | State::CookieEchoed) {
                self.adopt_cookie(&cookie);
                self.established(now);
            } else {
                self.peer_tag = cookie.peer_tag;
            }
            self.queue_control(primary, CookieAck);
            return true;
        }
        if !local_same && peer_same && cookie.local_tie_tag == 0 && cookie.peer_tie_tag == 0 {
            // Case C: a late cookie: discard.
            return false;
        }
        if local_same && peer_same {
            // Case D: our own association; maybe the COOKIE-ACK was lost.
            if matches!(self.state, State::CookieWait | State::CookieEchoed) {
                self.established(now);
            }
            self.queue_control(primary, CookieAck);
            return true;
        }
        false
    }

    /// ABORT because of a bad mandatory field and close.
    fn protocol_abort(&mut self, now: Instant, cause: ErrorCause) {
        if self.peer_tag != 0 {
            self.queue_abort(vec![cause.clone()]);
        }
        self.close(now, CloseReason::ProtocolViolation(cause));
    }
}
