//! The endpoint: the SCTP instance of one host and port (RFC 9260 §1.4). It owns the cookie
//! secret, answers INITs without keeping state, creates associations from valid
//! COOKIE-ECHOs, demultiplexes datagrams by peer address and port, and answers out-of-the-
//! blue packets (§8.4).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use braid_wire::chunk::{Abort, ChunkType, CookieEcho, ErrorChunk, Init, ShutdownComplete};
use braid_wire::packet::write_checksum;
use braid_wire::{Chunk, CommonHeader, ErrorCause, raw_chunks, verify_checksum};
use bytes::Bytes;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

use crate::association::{
    Association, CookieKey, InitAckTags, Transmit, build_init_ack, random_tag,
};
use crate::config::{AssociationConfig, EndpointConfig};
use crate::cookie::{CookieError, StateCookie};
use crate::event::Event;
use crate::time::Instant;

/// Handle of an association within its endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AssocId(pub u32);

/// Why `connect` failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectError {
    /// An association with this peer address and port exists already.
    #[error("an association with {0} exists already")]
    AlreadyConnected(SocketAddr),
    /// The endpoint holds `max_associations` already.
    #[error("too many associations")]
    TooManyAssociations,
    /// Peer port 0 is not allowed (RFC 9260 §3.1).
    #[error("invalid peer port 0")]
    InvalidPort,
}

/// A packet the endpoint itself must send (INIT-ACK, OOTB answers).
#[derive(Debug)]
struct Outgoing {
    local: SocketAddr,
    remote: SocketAddr,
    bytes: Vec<u8>,
}

/// An SCTP endpoint and its associations.
#[derive(Debug)]
pub struct Endpoint {
    cfg: EndpointConfig,
    assoc_cfg: Arc<AssociationConfig>,
    key: Arc<CookieKey>,
    rng: ChaCha8Rng,
    // BTreeMap: iteration order (and so packet order) is deterministic.
    assocs: BTreeMap<AssocId, Association>,
    by_peer: HashMap<(IpAddr, u16), AssocId>,
    /// The last demultiplexing result: bulk traffic hits it almost always.
    last_peer: Option<((IpAddr, u16), AssocId)>,
    next_id: u32,
    outgoing: VecDeque<Outgoing>,
    incoming: VecDeque<AssocId>,
    /// Association polled first by the next `poll_transmit` (round-robin fairness).
    cursor: u32,
    /// Addresses announced in INIT/INIT-ACK (multi-homing).
    local_addrs: Vec<SocketAddr>,
}

impl Endpoint {
    /// An endpoint with its configuration and the seed of every random number it will draw.
    pub fn new(cfg: EndpointConfig, seed: u64) -> Self {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let secret = cfg.cookie_secret.unwrap_or_else(|| {
            let mut s = [0u8; 32];
            rng.fill_bytes(&mut s);
            s
        });
        let key = Arc::new(CookieKey {
            secret,
            life: cfg.valid_cookie_life,
        });
        Self {
            assoc_cfg: Arc::new(cfg.association.clone()),
            cfg,
            key,
            rng,
            assocs: BTreeMap::new(),
            by_peer: HashMap::new(),
            last_peer: None,
            next_id: 0,
            outgoing: VecDeque::new(),
            incoming: VecDeque::new(),
            cursor: 0,
            local_addrs: Vec::new(),
        }
    }

    /// Sets the local addresses (IP and UDP port) the endpoint is reachable at. With more
    /// than one, INIT and INIT-ACK list them and associations become multi-homed (RFC 9260
    /// §5.1.2); the first is the default source address.
    pub fn set_local_addresses(&mut self, addrs: Vec<SocketAddr>) {
        self.local_addrs = addrs;
    }

    /// The local addresses given to [`Endpoint::set_local_addresses`].
    pub fn local_addresses(&self) -> &[SocketAddr] {
        &self.local_addrs
    }

    /// The endpoint's configuration.
    pub fn config(&self) -> &EndpointConfig {
        &self.cfg
    }

    /// Starts an association with `remote` (its SCTP port `peer_port`) from `local`.
    pub fn connect(
        &mut self,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        peer_port: u16,
    ) -> Result<AssocId, ConnectError> {
        if peer_port == 0 {
            return Err(ConnectError::InvalidPort);
        }
        if self.by_peer.contains_key(&(remote.ip(), peer_port)) {
            return Err(ConnectError::AlreadyConnected(remote));
        }
        if self.assocs.len() >= self.cfg.max_associations {
            self.prune();
        }
        if self.assocs.len() >= self.cfg.max_associations {
            return Err(ConnectError::TooManyAssociations);
        }
        let rng = self.child_rng();
        let a = Association::connect(
            self.assoc_cfg.clone(),
            self.key.clone(),
            rng,
            now,
            local,
            remote,
            self.local_addrs.clone(),
            self.cfg.port,
            peer_port,
        );
        let id = self.insert(a, &[remote.ip()], peer_port);
        Ok(id)
    }

    fn child_rng(&mut self) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(self.rng.next_u64())
    }

    fn insert(&mut self, a: Association, peers: &[IpAddr], peer_port: u16) -> AssocId {
        let id = AssocId(self.next_id);
        self.next_id = self.next_id.wrapping_add(1);
        for ip in peers {
            self.by_peer.insert((*ip, peer_port), id);
        }
        self.last_peer = None;
        self.assocs.insert(id, a);
        id
    }

    /// The next association created by a peer (accepted through a valid COOKIE-ECHO).
    pub fn accept(&mut self) -> Option<AssocId> {
        self.incoming.pop_front()
    }

    /// An association.
    pub fn association(&self, id: AssocId) -> Option<&Association> {
        self.assocs.get(&id)
    }

    /// An association, mutably (to send, receive, shut down).
    pub fn association_mut(&mut self, id: AssocId) -> Option<&mut Association> {
        self.assocs.get_mut(&id)
    }

    /// Handles of every association.
    pub fn associations(&self) -> impl Iterator<Item = AssocId> + '_ {
        self.assocs.keys().copied()
    }

    /// Forgets a (normally closed) association.
    pub fn remove(&mut self, id: AssocId) -> Option<Association> {
        let a = self.assocs.remove(&id)?;
        self.by_peer.retain(|_, v| *v != id);
        self.last_peer = None;
        Some(a)
    }

    /// Feeds one datagram's payload (an SCTP packet) received on `local` from `remote`.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        packet: Bytes,
    ) {
        if verify_checksum(&packet).is_err() {
            return; // RFC 9260 §6.8: silently discard.
        }
        let Ok(h) = CommonHeader::peek(&packet) else {
            return;
        };
        let key = (remote.ip(), h.src_port);
        let found = match self.last_peer {
            Some((k, id)) if k == key => Some(id),
            _ => self.by_peer.get(&key).copied(),
        };
        if let Some(id) = found
            && let Some(a) = self.assocs.get_mut(&id)
            && h.dst_port == self.cfg.port
            && !a.is_closed()
        {
            self.last_peer = Some((key, id));
            a.handle_verified(now, local, remote, &packet, false);
            if a.take_paths_added() {
                // The INIT-ACK listed more peer addresses: packets from them are ours too.
                for ip in a.peer_addresses() {
                    self.by_peer.insert((ip, h.src_port), id);
                }
            }
            return;
        }
        self.out_of_the_blue(now, local, remote, h, &packet);
    }

    /// An ICMP error the driver received about a packet it sent from `local` to `remote`;
    /// `quoted` is the start of that packet (its SCTP common header at least), as the ICMP
    /// message quoted it. Unverifiable or unknown ones are ignored (RFC 9260 Appendix C).
    pub fn handle_icmp(
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
        if h.src_port != self.cfg.port {
            return;
        }
        if let Some(&id) = self.by_peer.get(&(remote.ip(), h.dst_port))
            && let Some(a) = self.assocs.get_mut(&id)
        {
            a.handle_icmp(now, local, remote, quoted, err);
        }
    }

    /// A packet for no association (RFC 9260 §8.4), or the start of a new one.
    fn out_of_the_blue(
        &mut self,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        h: CommonHeader,
        packet: &Bytes,
    ) {
        // §8.4 looks at every chunk of the packet; a malformed one discards it.
        let Ok(all) = raw_chunks(packet).collect::<Result<Vec<_>, _>>() else {
            return;
        };
        let Some(first) = all.first().cloned() else {
            return;
        };
        let contains = |t: ChunkType| all.iter().any(|c| c.chunk_type == t);
        if contains(ChunkType::ABORT) {
            return; // §8.4 item 2.
        }
        let reply_header = |vtag: u32| CommonHeader {
            src_port: h.dst_port,
            dst_port: h.src_port,
            verification_tag: vtag,
            checksum: 0,
        };
        let listening = self.cfg.listen && h.dst_port == self.cfg.port;
        match first.chunk_type {
            ChunkType::INIT => {
                if h.verification_tag != 0 || all.len() > 1 {
                    return; // §8.5.1 A, §6.10.
                }
                let Some(Ok(init)) = first.decode_as::<Init>() else {
                    return;
                };
                if init.initiate_tag == 0 {
                    return; // §3.3.2.
                }
                if self.assocs.len() >= self.cfg.max_associations {
                    self.prune();
                }
                let reply = if !listening {
                    Abort {
                        t_bit: false,
                        causes: vec![],
                    }
                    .into()
                } else if self.assocs.len() >= self.cfg.max_associations {
                    Abort {
                        t_bit: false,
                        causes: vec![ErrorCause::OutOfResource],
                    }
                    .into()
                } else {
                    let tags = InitAckTags {
                        local_tag: self.random_tag(),
                        local_initial_tsn: self.rng.next_u32(),
                        local_tie_tag: 0,
                        peer_tie_tag: 0,
                    };
                    match build_init_ack(
                        &self.key,
                        &self.assoc_cfg,
                        now,
                        &init,
                        remote.ip(),
                        &self.local_addrs,
                        h.dst_port,
                        h.src_port,
                        tags,
                    ) {
                        Ok(ack) => Chunk::InitAck(ack),
                        Err(cause) => Abort {
                            t_bit: false,
                            causes: vec![cause],
                        }
                        .into(),
                    }
                };
                self.send_stateless(local, remote, reply_header(init.initiate_tag), reply);
            }
            ChunkType::COOKIE_ECHO => {
                if !listening {
                    return;
                }
                let Some(Ok(echo)) = first.decode_as::<CookieEcho>() else {
                    return;
                };
                match StateCookie::open(&self.key.secret, &echo.cookie, now) {
                    Ok(c) => {
                        // §5.1.5: the packet's tag must be the one our INIT-ACK gave.
                        if c.local_tag != h.verification_tag
                            || c.peer_port != h.src_port
                            || c.local_port != h.dst_port
                        {
                            return;
                        }
                        if self.assocs.len() >= self.cfg.max_associations {
                            self.prune();
                        }
                        if self.assocs.len() >= self.cfg.max_associations {
                            let abort = Abort {
                                t_bit: false,
                                causes: vec![ErrorCause::OutOfResource],
                            };
                            self.send_stateless(
                                local,
                                remote,
                                reply_header(c.peer_tag),
                                abort.into(),
                            );
                            return;
                        }
                        let rng = self.child_rng();
                        let mut a = Association::accept(
                            self.assoc_cfg.clone(),
                            self.key.clone(),
                            rng,
                            now,
                            local,
                            remote,
                            self.local_addrs.clone(),
                            &c,
                        );
                        a.handle_verified(now, local, remote, packet, true);
                        let peers = a.peer_addresses();
                        a.take_paths_added();
                        let id = self.insert(a, &peers, c.peer_port);
                        self.incoming.push_back(id);
                    }
                    Err(CookieError::Stale {
                        staleness,
                        peer_tag,
                        local_tag,
                    }) => {
                        if local_tag != h.verification_tag {
                            return; // §5.1.5 step 3 comes before the age check.
                        }
                        let us = u32::try_from(staleness.as_micros()).unwrap_or(u32::MAX);
                        let e = ErrorChunk {
                            causes: vec![ErrorCause::StaleCookie { staleness_us: us }],
                        };
                        self.send_stateless(local, remote, reply_header(peer_tag), e.into());
                    }
                    Err(CookieError::Invalid) => {}
                }
            }
            _ if contains(ChunkType::SHUTDOWN_ACK) => {
                // §8.4 item 5: SHUTDOWN-COMPLETE with the T bit, tag reflected.
                let sc = ShutdownComplete { t_bit: true };
                self.send_stateless(local, remote, reply_header(h.verification_tag), sc.into());
            }
            _ if contains(ChunkType::SHUTDOWN_COMPLETE) || contains(ChunkType::COOKIE_ACK) => {}
            _ if all.iter().any(is_stale_cookie_error) => {} // §8.4 item 7.
            _ => {
                // §8.4 item 8: ABORT with the T bit, tag reflected.
                let abort = Abort {
                    t_bit: true,
                    causes: vec![],
                };
                self.send_stateless(
                    local,
                    remote,
                    reply_header(h.verification_tag),
                    abort.into(),
                );
            }
        }
    }

    fn random_tag(&mut self) -> u32 {
        random_tag(&mut self.rng)
    }

    fn send_stateless(
        &mut self,
        local: SocketAddr,
        remote: SocketAddr,
        h: CommonHeader,
        chunk: Chunk,
    ) {
        let mut bytes = Vec::with_capacity(64);
        bytes.extend_from_slice(&h.src_port.to_be_bytes());
        bytes.extend_from_slice(&h.dst_port.to_be_bytes());
        bytes.extend_from_slice(&h.verification_tag.to_be_bytes());
        bytes.extend_from_slice(&[0; 4]);
        if chunk.encode(&mut bytes).is_err() {
            return;
        }
        write_checksum(&mut bytes);
        // Bounded: a flood of OOTB packets cannot queue more than this many answers.
        if self.outgoing.len() < 1024 {
            self.outgoing.push_back(Outgoing {
                local,
                remote,
                bytes,
            });
        }
    }

    /// Runs expired timers of every association.
    pub fn handle_timeout(&mut self, now: Instant) {
        for a in self.assocs.values_mut() {
            if a.poll_timeout().is_some_and(|t| t <= now) {
                a.handle_timeout(now);
            }
        }
    }

    /// Forgets closed associations that have nothing left to send, report or read. Done
    /// automatically when `max_associations` is reached, so closed associations the
    /// application never removes cannot lock the endpoint.
    pub fn prune(&mut self) {
        let drained: Vec<AssocId> = self
            .assocs
            .iter()
            .filter(|(_, a)| a.is_drained())
            .map(|(id, _)| *id)
            .collect();
        for id in drained {
            self.remove(id);
        }
    }

    /// The earliest timer of any association.
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.assocs
            .values()
            .filter_map(Association::poll_timeout)
            .min()
    }

    /// The next packet to send, appended to `buf`.
    #[must_use]
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        if let Some(o) = self.outgoing.pop_front() {
            buf.extend_from_slice(&o.bytes);
            return Some(Transmit {
                local: o.local,
                remote: o.remote,
                size: o.bytes.len(),
            });
        }
        // Round-robin over associations, starting after the last one that sent.
        let cursor = AssocId(self.cursor);
        for (id, a) in self.assocs.range_mut(cursor..) {
            if let Some(t) = a.poll_transmit(now, buf) {
                self.cursor = id.0.wrapping_add(1);
                return Some(t);
            }
        }
        for (id, a) in self.assocs.range_mut(..cursor) {
            if let Some(t) = a.poll_transmit(now, buf) {
                self.cursor = id.0.wrapping_add(1);
                return Some(t);
            }
        }
        None
    }

    /// The next event of any association.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<(AssocId, Event)> {
        for (id, a) in self.assocs.iter_mut() {
            if let Some(e) = a.poll_event() {
                return Some((*id, e));
            }
        }
        None
    }
}

/// Whether a raw chunk is an ERROR carrying a Stale Cookie cause.
fn is_stale_cookie_error(c: &braid_wire::RawChunk) -> bool {
    matches!(c.decode_as::<ErrorChunk>(), Some(Ok(e))
        if e.causes.iter().any(|c| matches!(c, ErrorCause::StaleCookie { .. })))
}
