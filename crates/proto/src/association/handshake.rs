//! Association setup (RFC 9260 §5): INIT and INIT-ACK, the State Cookie, COOKIE-ECHO and
//! COOKIE-ACK, T1 timers, and the collision and restart cases of §5.2.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use braid_wire::chunk::{ChunkType, CookieAck, CookieEcho, ErrorChunk, Init, InitAck, InitChunk};
use braid_wire::{Chunk, ErrorCause, Param};
use bytes::Bytes;
use rand_chacha::ChaCha8Rng;
use rand_core::RngCore;

use super::{Association, State};
use crate::config::AssociationConfig;
use crate::cookie::{CookieError, Features, MAX_ADDRESSES, StateCookie};
use crate::event::{CloseReason, Event};
use crate::path::{PathId, PathState};
use crate::recv::reassembly::Reassembly;
use crate::recv::tsn_map::TsnMap;
use crate::time::Instant;
use crate::timer::Timer;

/// The endpoint's cookie secrets and lifetime, shared with its associations (which answer
/// INITs and COOKIE-ECHOs themselves in the collision and restart cases).
#[derive(Debug)]
pub(crate) struct CookieKey {
    secrets: std::sync::Mutex<Secrets>,
    pub(crate) life: Duration,
}

/// The current secret, and the one it replaced while cookies signed with it may live.
#[derive(Debug, Clone, Copy)]
struct Secrets {
    current: [u8; 32],
    previous: Option<([u8; 32], Instant)>,
}

impl CookieKey {
    pub(crate) fn new(secret: [u8; 32], life: Duration) -> Self {
        Self {
            secrets: std::sync::Mutex::new(Secrets {
                current: secret,
                previous: None,
            }),
            life,
        }
    }

    fn secrets(&self) -> Secrets {
        *self.secrets.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Replaces the secret; the old one still opens cookies until `old_until` (RFC 9260
    /// §5.1.3: the secret should change regularly; cookies in flight stay valid).
    pub(crate) fn rotate(&self, secret: [u8; 32], old_until: Instant) {
        let mut s = self.secrets.lock().unwrap_or_else(|e| e.into_inner());
        s.previous = Some((s.current, old_until));
        s.current = secret;
    }

    /// Signs a cookie with the current secret.
    pub(crate) fn seal(&self, c: &StateCookie) -> Bytes {
        c.seal(&self.secrets().current)
    }

    /// Opens a cookie signed with the current secret, or the previous one while it lives.
    pub(crate) fn open(&self, bytes: &[u8], now: Instant) -> Result<StateCookie, CookieError> {
        let s = self.secrets();
        match StateCookie::open(&s.current, bytes, now) {
            Err(CookieError::Invalid) => match s.previous {
                Some((old, until)) if now < until => StateCookie::open(&old, bytes, now),
                _ => Err(CookieError::Invalid),
            },
            r => r,
        }
    }
}

/// What the peer's INIT or INIT-ACK said beyond its fixed fields.
#[derive(Debug, Default)]
pub(crate) struct PeerParams {
    pub(crate) addresses: Vec<IpAddr>,
    pub(crate) features: Features,
    pub(crate) cookie: Option<Bytes>,
    pub(crate) cookie_preservative: Option<Duration>,
    /// Unrecognized parameters to report (whole TLVs, RFC 9260 §3.2.1 / §3.3.3.1).
    pub(crate) unrecognized: Vec<Bytes>,
    /// A fatal problem to answer with ABORT.
    pub(crate) error: Option<ErrorCause>,
}

/// Reads the parameters of an INIT or INIT-ACK, applying the high bits of unknown types.
pub(crate) fn read_params(params: &[Param], ours: &AssociationConfig) -> PeerParams {
    let mut out = PeerParams::default();
    let mut forward_tsn_listed = false;
    let mut nr_sack_listed = false;
    for p in params {
        match p {
            Param::Ipv4Address(_) | Param::Ipv6Address(_) => {
                if let Some(a) = p.address()
                    && out.addresses.len() < MAX_ADDRESSES
                    && !out.addresses.contains(&a)
                {
                    out.addresses.push(a);
                }
            }
            Param::StateCookie(c) => out.cookie = Some(c.clone()),
            Param::CookiePreservative(ms) => {
                out.cookie_preservative = Some(Duration::from_millis(u64::from(*ms)))
            }
            Param::HostNameAddress(_) => {
                // RFC 9260 §5.1.2: host names are not supported: ABORT.
                let mut tlv = Vec::new();
                p.encode(&mut tlv);
                out.error = Some(ErrorCause::UnresolvableAddress(tlv.into()));
                return out;
            }
            Param::ForwardTsnSupported => forward_tsn_listed = true,
            Param::SupportedExtensions(list) => {
                forward_tsn_listed |= list.contains(&ChunkType::FORWARD_TSN.0);
                nr_sack_listed |= list.contains(&ChunkType::NR_SACK.0);
            }
            Param::Unknown { param_type, .. } => {
                let action = param_type.unrecognized_action();
                if action.reports() {
                    let mut tlv = Vec::new();
                    p.encode(&mut tlv);
                    out.unrecognized.push(tlv.into());
                }
                if !action.skips() {
                    break;
                }
            }
            // Known but meaningless here (Supported Address Types, ECN, adaptation, ...).
            _ => {}
        }
    }
    out.features.pr_sctp = forward_tsn_listed && ours.pr_sctp;
    out.features.nr_sack = nr_sack_listed && ours.nr_sack;
    out
}

/// Parameters we put in our INIT and INIT-ACK: our addresses when there are several
/// (RFC 9260 §5.1.2), Forward-TSN (RFC 3758) and the extensions we support (RFC 5061 §4.2.7).
fn our_params(cfg: &AssociationConfig, locals: &[SocketAddr]) -> Vec<Param> {
    let mut v = Vec::new();
    if locals.len() > 1 {
        let mut seen: Vec<IpAddr> = Vec::new();
        for a in locals {
            if !seen.contains(&a.ip()) && !a.ip().is_unspecified() {
                seen.push(a.ip());
                v.push(Param::from_address(a.ip()));
            }
        }
    }
    let mut ext = Vec::new();
    if cfg.pr_sctp {
        v.push(Param::ForwardTsnSupported);
        ext.push(ChunkType::FORWARD_TSN.0);
    }
    if cfg.nr_sack {
        ext.push(ChunkType::NR_SACK.0);
    }
    if !ext.is_empty() {
        v.push(Param::SupportedExtensions(ext));
    }
    v
}

/// Tags and TSN the INIT-ACK announces, and the tie-tags its cookie carries.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InitAckTags {
    pub(crate) local_tag: u32,
    pub(crate) local_initial_tsn: u32,
    pub(crate) local_tie_tag: u32,
    pub(crate) peer_tie_tag: u32,
}

/// Builds the INIT-ACK answering `init` from `src` (RFC 9260 §5.1 B), or the cause to
/// ABORT with if the INIT is unacceptable.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_init_ack(
    key: &CookieKey,
    cfg: &AssociationConfig,
    now: Instant,
    init: &Init,
    src: IpAddr,
    locals: &[SocketAddr],
    local_port: u16,
    peer_port: u16,
    tags: InitAckTags,
) -> Result<InitAck, ErrorCause> {
    if init.outbound_streams == 0 || init.inbound_streams == 0 {
        return Err(ErrorCause::InvalidMandatoryParameter);
    }
    let peer = read_params(&init.params, cfg);
    if let Some(e) = peer.error {
        return Err(e);
    }
    let mut addresses = vec![src];
    addresses.extend(peer.addresses.iter().filter(|a| **a != src));
    addresses.truncate(MAX_ADDRESSES);
    // Honour a Cookie Preservative up to one extra lifetime (RFC 9260 §5.1.3 allows ignoring it).
    let lifetime = key.life + peer.cookie_preservative.unwrap_or_default().min(key.life);
    let cookie = StateCookie {
        created: now,
        lifetime,
        local_tag: tags.local_tag,
        peer_tag: init.initiate_tag,
        local_initial_tsn: tags.local_initial_tsn,
        peer_initial_tsn: init.initial_tsn,
        peer_a_rwnd: init.a_rwnd,
        outbound_streams: cfg.outbound_streams.min(init.inbound_streams),
        inbound_streams: cfg.max_inbound_streams.min(init.outbound_streams),
        local_port,
        peer_port,
        local_tie_tag: tags.local_tie_tag,
        peer_tie_tag: tags.peer_tie_tag,
        features: peer.features,
        peer_addresses: addresses,
    };
    let mut params = vec![Param::StateCookie(key.seal(&cookie))];
    params.extend(our_params(cfg, locals));
    // Reports of unrecognized parameters stop where the INIT-ACK would outgrow the path MTU:
    // an attacker's INIT must not make us send more than one full packet (DESIGN.md).
    let budget = cfg
        .path_mtu
        .saturating_sub(crate::path::header_overhead(
            &SocketAddr::new(src, 0),
            cfg.udp_encapsulation,
        ))
        .saturating_sub(braid_wire::COMMON_HEADER_LEN + 20);
    let mut used: usize = params.iter().map(param_wire_len).sum();
    for tlv in peer.unrecognized {
        let p = Param::UnrecognizedParameter(tlv);
        used += param_wire_len(&p);
        if used > budget {
            break;
        }
        params.push(p);
    }
    Ok(InitChunk {
        initiate_tag: tags.local_tag,
        a_rwnd: u32::try_from(cfg.recv_buffer).unwrap_or(u32::MAX),
        outbound_streams: cfg.outbound_streams,
        inbound_streams: cfg.max_inbound_streams,
        initial_tsn: tags.local_initial_tsn,
        params,
    })
}

/// Bytes a parameter takes in a chunk, padding included.
fn param_wire_len(p: &Param) -> usize {
    let mut v = Vec::new();
    p.encode(&mut v);
    (v.len() + 3) & !3
}

/// A random non-zero verification tag (RFC 9260 §5.3.1).
pub(crate) fn random_tag(rng: &mut impl RngCore) -> u32 {
    loop {
        let t = rng.next_u32();
        if t != 0 {
            return t;
        }
    }
}

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
        self.inbound_streams = c.inbound_streams;
        self.tsn_map = TsnMap::new(c.peer_initial_tsn, self.cfg.max_dup_tsns);
        self.reasm = Reassembly::new(c.inbound_streams);
        self.tx.start(
            c.local_initial_tsn,
            c.outbound_streams,
            c.peer_a_rwnd as usize,
            self.cfg.stream_buffer_low,
        );
        for p in &mut self.paths {
            p.cc = crate::cc::AnyController::new(self.cfg.cc, p.mtu, c.peer_a_rwnd as usize, 1);
        }
    }

    fn established(&mut self, now: Instant) {
        self.state = State::Established;
        self.timers.set(Timer::T1, None);
        self.handshake_chunk = None;
        self.init_attempts = 0;
        self.reset_burst();
        self.events.push_back(Event::Connected);
        let measure = self.cfg.cmt && self.paths.len() > 1;
        for i in 0..self.paths.len() {
            self.schedule_heartbeat(now, PathId(i as u16));
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
        let rto = self.primary_path().rtt.rto();
        self.timers.set(Timer::T1, Some(now + rto));
        match chunk {
            Chunk::Init(_) => self.queue_standalone(0, chunk),
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
        self.send_handshake_chunk(now);
    }

    /// INIT-ACK in COOKIE-WAIT (RFC 9260 §5.1 C); other states discard it (§5.2.3).
    pub(super) fn on_init_ack(&mut self, now: Instant, ack: InitAck) {
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
        self.inbound_streams = self.cfg.max_inbound_streams.min(ack.outbound_streams);
        self.tsn_map = TsnMap::new(ack.initial_tsn, self.cfg.max_dup_tsns);
        self.reasm = Reassembly::new(self.inbound_streams);
        let streams = self.cfg.outbound_streams.min(ack.inbound_streams);
        self.tx.start(
            self.local_initial_tsn,
            streams,
            ack.a_rwnd as usize,
            self.cfg.stream_buffer_low,
        );
        for p in &mut self.paths {
            p.cc = crate::cc::AnyController::new(self.cfg.cc, p.mtu, ack.a_rwnd as usize, 1);
        }
        self.add_peer_paths(now, &peer.addresses);
        self.state = State::CookieEchoed;
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
        if self.cfg.udp_encapsulation
            && let Some(p) = self.path_for(remote)
            && self.paths[p.0 as usize].remote.port() != remote.port()
        {
            // 003_*.txt App. F §4 rule 7: an INIT cannot be verified, so one from a new UDP
            // port must not take the association over; refuse it to where it came from.
            let current_port = self.paths[p.0 as usize].remote.port();
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
            _ => {
                // §5.2.2: a possible restart. New addresses are refused (cause 11).
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
                    return;
                }
                let local_tag = self.random_tag();
                let local_initial_tsn = {
                    use rand_core::RngCore;
                    self.rng.next_u32()
                };
                InitAckTags {
                    local_tag,
                    local_initial_tsn,
                    local_tie_tag: self.local_tag,
                    peer_tie_tag: self.peer_tag,
                }
            }
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
            self.reset_for_restart();
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

    /// Arms the heartbeat timer of a path: HB.interval + RTO with jitter (RFC 9260 §8.3).
    pub(super) fn schedule_heartbeat(&mut self, now: Instant, path: PathId) {
        let p = &self.paths[path.0 as usize];
        let rto = p.rtt.rto();
        // Unconfirmed addresses (RFC 9260 §5.4) and PF paths (RFC 7829 §5.1) are probed
        // once per RTO, whether idle heartbeats are enabled or not.
        if p.state == PathState::PotentiallyFailed {
            // RFC 7829 §5.1: a PF destination is probed at once, and again one RTO after
            // each unanswered probe (the probe's deadline is its timer).
            self.timers.set(Timer::Heartbeat(path), Some(now));
            return;
        }
        if !p.confirmed && p.state != PathState::Inactive {
            // RFC 9260 §5.4: unconfirmed addresses are probed, but no more than
            // HB.Max.Burst heartbeats per RTO to all of them together.
            let spacing = self.primary_path().rtt.rto() / self.cfg.hb_max_burst.max(1);
            let at = self.hb_slot.max(now);
            self.hb_slot = at + spacing;
            self.timers.set(Timer::Heartbeat(path), Some(at));
            return;
        }
        if !self.cfg.heartbeats {
            self.timers.set(Timer::Heartbeat(path), None);
            return;
        }
        let delay = self.cfg.hb_interval + self.rto_jitter(rto);
        self.timers.set(Timer::Heartbeat(path), Some(now + delay));
    }
}
