//! The endpoint: the SCTP instance of one host and port (RFC 9260 §1.4). It owns the cookie
//! secret, answers INITs without keeping state, creates associations from valid
//! COOKIE-ECHOs, demultiplexes datagrams by peer address and port, and answers out-of-the-
//! blue packets (§8.4).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use braid_wire::{CommonHeader, ErrorCause, verify_checksum};
use bytes::Bytes;
use rand_chacha::ChaCha8Rng;
use rand_core::{RngCore, SeedableRng};

use crate::association::{Association, CookieKey, Transmit};
use crate::config::{AssociationConfig, EndpointConfig};
use crate::event::Event;
use crate::time::Instant;

mod ootb;

/// Handle of an association within its endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AssocId(pub u32);

/// The bare number, as in the driver's file names (`assoc-{id}.jsonl`) and logs.
impl std::fmt::Display for AssocId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(&self.0, f)
    }
}

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
    /// Nothing can answer from this address: unspecified, multicast or broadcast, or UDP
    /// port 0 (RFC 9260 §5.1.2 takes unicast addresses only; RFC 6951 §5).
    #[error("cannot connect to {0}: not a unicast address and port")]
    InvalidAddress(SocketAddr),
    /// The address is one of the endpoint's own: it would talk to itself (own addresses
    /// never become paths).
    #[error("cannot connect to {0}: it is this endpoint's own address")]
    OwnAddress(SocketAddr),
}

/// A packet the endpoint itself must send (INIT-ACK, OOTB answers).
#[derive(Debug)]
struct Outgoing {
    local: SocketAddr,
    remote: SocketAddr,
    bytes: Vec<u8>,
}

/// An association and the endpoint's bookkeeping for it.
#[derive(Debug)]
struct Entry {
    assoc: Association,
    /// Deadline of its entry in the timer queue, if it has one.
    armed: Option<Instant>,
    /// In the `dirty` list: its timer must be looked at again.
    dirty: bool,
    /// In the transmit-ready queue.
    tx_ready: bool,
    /// In the event-ready queue.
    ev_ready: bool,
    /// The demultiplexing keys it owns.
    keys: Vec<(IpAddr, u16)>,
    /// The source it counts against (`max_associations_per_source`).
    source: IpAddr,
}

/// Out-of-the-blue answers left for one source (a token bucket), and bytes of INIT
/// answers (`init_answer_bytes`).
#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    bytes: f64,
    /// Size of the last INIT answer built for this source.
    last_answer: usize,
    at: Instant,
}

/// Sources with a bucket at most; beyond, the table starts afresh (a flood of spoofed
/// sources then gets at most `ootb_burst` answers each, as before).
const MAX_BUCKETS: usize = 4096;

/// An SCTP endpoint and its associations.
///
/// Cost per datagram does not depend on how many associations it holds: datagrams are
/// demultiplexed through a hash map, timers sit in a queue keyed by (deadline,
/// association), and only associations that had input since they were last drained are
/// polled for packets and events (quinn-proto's endpoint is the model).
#[derive(Debug)]
pub struct Endpoint {
    cfg: EndpointConfig,
    assoc_cfg: Arc<AssociationConfig>,
    key: Arc<CookieKey>,
    /// Tags, TSNs and per-association seeds.
    rng: ChaCha8Rng,
    /// Cookie secrets only: an independent stream, so tags say nothing about them.
    secret_rng: ChaCha8Rng,
    next_rotation: Instant,
    // BTreeMap: iteration order (and so packet order) is deterministic.
    assocs: BTreeMap<AssocId, Entry>,
    by_peer: HashMap<(IpAddr, u16), AssocId>,
    /// Keys of `by_peer` whose owner has not confirmed the address (RFC 9260 §5.4): they
    /// route packets to it but block nobody (RFC 5062 §2: an address listed and never
    /// confirmed must not lock its real owner out).
    tentative: HashSet<(IpAddr, u16)>,
    per_source: HashMap<IpAddr, usize>,
    /// Associations per source prefix (`max_associations_per_prefix`).
    per_prefix: HashMap<IpAddr, usize>,
    /// Each source prefix's share of the buffer budget (`buffer_budget_per_prefix`), while
    /// it has associations.
    prefix_budgets: HashMap<IpAddr, crate::autotune::BufferBudget>,
    /// The last demultiplexing result: bulk traffic hits it almost always.
    last_peer: Option<((IpAddr, u16), AssocId)>,
    next_id: u32,
    outgoing: VecDeque<Outgoing>,
    incoming: VecDeque<AssocId>,
    timers: BinaryHeap<Reverse<(Instant, AssocId)>>,
    dirty: Vec<AssocId>,
    tx_ready: VecDeque<AssocId>,
    ev_ready: VecDeque<AssocId>,
    buckets: HashMap<IpAddr, Bucket>,
    /// INIT answers left to the whole endpoint (`init_answer_rate`; `bytes` unused).
    init_answers: Bucket,
    /// Addresses announced in INIT/INIT-ACK (multi-homing).
    local_addrs: Vec<SocketAddr>,
    /// Associations record their decisions (`crate::trace`).
    tracing: bool,
    /// Buffer growth the associations may still take (`EndpointConfig::buffer_budget`).
    budget: crate::autotune::BufferBudget,
}

impl Endpoint {
    /// [`Endpoint::new`] after [`EndpointConfig::validate`]: how a driver starts an endpoint
    /// from a configuration it was given.
    ///
    /// # Errors
    ///
    /// The first setting `validate` refuses.
    pub fn try_new(cfg: EndpointConfig, seed: u64) -> Result<Self, crate::ConfigError> {
        cfg.validate()?;
        Ok(Self::new(cfg, seed))
    }

    /// An endpoint with its configuration and the seed of every random number it will draw
    /// (tags, TSNs and the cookie secret come from two streams of one 64-bit seed: for
    /// simulations and tests, which must repeat; [`Endpoint::with_seeds`] for the network).
    /// The configuration is taken as it is; [`Endpoint::try_new`] checks it first.
    pub fn new(cfg: EndpointConfig, seed: u64) -> Self {
        let rng = ChaCha8Rng::seed_from_u64(seed);
        let mut secret_rng = ChaCha8Rng::seed_from_u64(seed);
        secret_rng.set_stream(1);
        Self::from_rngs(cfg, rng, secret_rng)
    }

    /// An endpoint whose tags and TSNs come from `seed` and its cookie secrets from
    /// `secret_seed`, two independent 256-bit seeds (from the OS's generator on a real
    /// network): what an attacker learns of one says nothing of the other.
    pub fn with_seeds(cfg: EndpointConfig, seed: [u8; 32], secret_seed: [u8; 32]) -> Self {
        Self::from_rngs(
            cfg,
            ChaCha8Rng::from_seed(seed),
            ChaCha8Rng::from_seed(secret_seed),
        )
    }

    fn from_rngs(cfg: EndpointConfig, rng: ChaCha8Rng, mut secret_rng: ChaCha8Rng) -> Self {
        let init_answers = f64::from(cfg.init_answer_rate);
        let secret = cfg.cookie_secret.unwrap_or_else(|| {
            let mut s = [0u8; 32];
            secret_rng.fill_bytes(&mut s);
            s
        });
        let key = Arc::new(CookieKey::new(secret, cfg.valid_cookie_life));
        Self {
            budget: crate::autotune::BufferBudget::new(cfg.buffer_budget),
            assoc_cfg: Arc::new(cfg.association.clone()),
            next_rotation: Instant::ZERO + cfg.cookie_secret_rotation,
            cfg,
            key,
            rng,
            secret_rng,
            assocs: BTreeMap::new(),
            by_peer: HashMap::new(),
            tentative: HashSet::new(),
            per_source: HashMap::new(),
            per_prefix: HashMap::new(),
            prefix_budgets: HashMap::new(),
            last_peer: None,
            next_id: 0,
            tracing: false,
            outgoing: VecDeque::new(),
            incoming: VecDeque::new(),
            timers: BinaryHeap::new(),
            dirty: Vec::new(),
            tx_ready: VecDeque::new(),
            ev_ready: VecDeque::new(),
            buckets: HashMap::new(),
            init_answers: Bucket {
                tokens: init_answers,
                bytes: 0.0,
                last_answer: 0,
                at: Instant::ZERO,
            },
            local_addrs: Vec::new(),
        }
    }

    /// The budgets an association from `source` grows from: the endpoint's and its
    /// prefix's share.
    pub(crate) fn budgets_for(&mut self, source: IpAddr) -> Vec<crate::autotune::BufferBudget> {
        let share = self.cfg.buffer_budget_per_prefix;
        let prefix = self.prefix_of(source);
        let p = self
            .prefix_budgets
            .entry(prefix)
            .or_insert_with(|| crate::autotune::BufferBudget::new(share));
        vec![self.budget.clone(), p.clone()]
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
        self.connect_multihomed(now, local, &[remote], peer_port)
    }

    /// Starts an association with a peer known by several addresses (`remotes`, IP and UDP
    /// port each; its SCTP port `peer_port`), multi-homed from the start: the INIT goes
    /// from `local` to `remotes[0]`, and on a T1 timeout or an ICMP error to the next
    /// address in turn (each from a local address of its family), so one unreachable
    /// address does not fail the association. Once the peer answers, the addresses it lists
    /// in its INIT-ACK, or answered from, are confirmed paths (RFC 9260 §5.4 rule 1); the
    /// others are dropped.
    ///
    /// # Errors
    ///
    /// [`ConnectError::InvalidPort`], [`ConnectError::InvalidAddress`] or
    /// [`ConnectError::OwnAddress`] naming the first bad address (an empty `remotes` is
    /// `InvalidAddress(0.0.0.0:0)`), [`ConnectError::AlreadyConnected`] and
    /// [`ConnectError::TooManyAssociations`].
    pub fn connect_multihomed(
        &mut self,
        now: Instant,
        local: SocketAddr,
        remotes: &[SocketAddr],
        peer_port: u16,
    ) -> Result<AssocId, ConnectError> {
        if peer_port == 0 {
            return Err(ConnectError::InvalidPort);
        }
        let Some(&remote) = remotes.first() else {
            return Err(ConnectError::InvalidAddress(SocketAddr::from((
                [0u8; 4], 0,
            ))));
        };
        for &r in remotes {
            let unicast = match r.ip() {
                IpAddr::V4(v4) => !(v4.is_unspecified() || v4.is_multicast() || v4.is_broadcast()),
                IpAddr::V6(v6) => !(v6.is_unspecified() || v6.is_multicast()),
            };
            if !unicast || r.port() == 0 {
                return Err(ConnectError::InvalidAddress(r));
            }
            if r == local || self.local_addrs.contains(&r) {
                return Err(ConnectError::OwnAddress(r));
            }
            if self.live_owner(r.ip(), peer_port).is_some() {
                return Err(ConnectError::AlreadyConnected(r));
            }
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
            &remotes[1..],
            self.local_addrs.clone(),
            self.cfg.port,
            peer_port,
        );
        let mut ips: Vec<IpAddr> = Vec::new();
        for r in remotes {
            if !ips.contains(&r.ip()) {
                ips.push(r.ip());
            }
        }
        let id = self.insert(a, &ips, peer_port);
        Ok(id)
    }

    fn child_rng(&mut self) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(self.rng.next_u64())
    }

    /// The live association owning (IP, SCTP port) with the address confirmed, if any.
    fn live_owner(&self, ip: IpAddr, port: u16) -> Option<AssocId> {
        if !self.tentative.is_empty() && self.tentative.contains(&(ip, port)) {
            return None;
        }
        let id = *self.by_peer.get(&(ip, port))?;
        let e = self.assocs.get(&id)?;
        (!e.assoc.is_closed()).then_some(id)
    }

    fn insert(&mut self, mut a: Association, peers: &[IpAddr], peer_port: u16) -> AssocId {
        a.set_tracing(self.tracing);
        let source = peers.first().copied().unwrap_or(IpAddr::from([0u8; 4]));
        a.attach_buffer_budget(self.budgets_for(source));
        let id = AssocId(self.next_id);
        self.next_id = self.next_id.wrapping_add(1);
        *self.per_source.entry(source).or_insert(0) += 1;
        *self.per_prefix.entry(self.prefix_of(source)).or_insert(0) += 1;
        self.assocs.insert(
            id,
            Entry {
                assoc: a,
                armed: None,
                dirty: false,
                tx_ready: false,
                ev_ready: false,
                keys: Vec::new(),
                source,
            },
        );
        self.claim(id, peers, peer_port);
        self.last_peer = None;
        self.touch(id);
        id
    }

    /// Makes `id` the owner of (IP, port) for each of `peers` that no live association owns
    /// confirmed (an address is never taken from a live association that confirmed it,
    /// the hostile-input rules); one `id` has not confirmed yet is owned tentatively.
    fn claim(&mut self, id: AssocId, peers: &[IpAddr], port: u16) {
        for ip in peers {
            let key = (*ip, port);
            let confirmed = self
                .assocs
                .get(&id)
                .is_some_and(|e| e.assoc.is_peer_confirmed(*ip));
            match self.live_owner(*ip, port) {
                Some(owner) if owner == id => continue,
                Some(_) => continue, // Another live association's, confirmed.
                None => {}
            }
            let tentative_owner =
                self.by_peer.get(&key).copied().filter(|o| {
                    *o != id && self.assocs.get(o).is_some_and(|e| !e.assoc.is_closed())
                });
            if tentative_owner.is_some() && !confirmed {
                // A tentative owner gives way only to an association that confirmed the
                // address (the victim's own handshake from it), never to one that merely
                // lists it too: that would cut the owner off from its address.
                continue;
            }
            if let Some(old) = self.by_peer.insert(key, id)
                && old != id
                && let Some(e) = self.assocs.get_mut(&old)
            {
                // A tentative owner gives way (RFC 5062 §2).
                e.keys.retain(|k| *k != key);
            }
            if confirmed {
                self.tentative.remove(&key);
            } else {
                self.tentative.insert(key);
            }
            if let Some(e) = self.assocs.get_mut(&id)
                && !e.keys.contains(&key)
            {
                e.keys.push(key);
            }
        }
    }

    /// `id` confirmed its path to `ip`: the address is its own now, if it still routes there.
    fn confirm(&mut self, id: AssocId, ip: IpAddr, port: u16) {
        let key = (ip, port);
        if self.by_peer.get(&key) == Some(&id) {
            self.tentative.remove(&key);
        }
    }

    /// Marks an association as having had input: its timer, packets and events are looked
    /// at again (and only then).
    fn touch(&mut self, id: AssocId) {
        let Some(e) = self.assocs.get_mut(&id) else {
            return;
        };
        if !e.dirty {
            e.dirty = true;
            self.dirty.push(id);
        }
        if !e.tx_ready {
            e.tx_ready = true;
            self.tx_ready.push_back(id);
        }
        if !e.ev_ready {
            e.ev_ready = true;
            self.ev_ready.push_back(id);
        }
    }

    /// Re-arms the timers of the associations touched since the last call. A deadline
    /// that moved later keeps its earlier queue entry, which re-arms when it comes up.
    fn refresh_timers(&mut self) {
        // The list keeps its capacity: a fresh one cost an allocation per packet sent.
        let mut dirty = std::mem::take(&mut self.dirty);
        for &id in &dirty {
            let Some(e) = self.assocs.get_mut(&id) else {
                continue;
            };
            e.dirty = false;
            if let Some(t) = e.assoc.poll_timeout()
                && e.armed.is_none_or(|a| t < a)
            {
                e.armed = Some(t);
                self.timers.push(Reverse((t, id)));
            }
        }
        dirty.clear();
        self.dirty = dirty;
    }

    /// The next association created by a peer (accepted through a valid COOKIE-ECHO).
    pub fn accept(&mut self) -> Option<AssocId> {
        self.incoming.pop_front()
    }

    /// An association.
    pub fn association(&self, id: AssocId) -> Option<&Association> {
        self.assocs.get(&id).map(|e| &e.assoc)
    }

    /// An association, mutably (to send, receive, shut down). The endpoint looks at its
    /// timers, packets and events again afterwards.
    pub fn association_mut(&mut self, id: AssocId) -> Option<&mut Association> {
        self.touch(id);
        self.assocs.get_mut(&id).map(|e| &mut e.assoc)
    }

    /// Handles of every association.
    pub fn associations(&self) -> impl Iterator<Item = AssocId> + '_ {
        self.assocs.keys().copied()
    }

    /// How many associations the endpoint holds (closed ones not yet forgotten included).
    pub fn association_count(&self) -> usize {
        self.assocs.len()
    }

    /// Forgets a (normally closed) association.
    pub fn remove(&mut self, id: AssocId) -> Option<Association> {
        let e = self.assocs.remove(&id)?;
        for k in &e.keys {
            if self.by_peer.get(k) == Some(&id) {
                self.by_peer.remove(k);
                self.tentative.remove(k);
            }
        }
        let prefix = self.prefix_of(e.source);
        if let Some(n) = self.per_prefix.get_mut(&prefix) {
            *n -= 1;
            if *n == 0 {
                self.per_prefix.remove(&prefix);
                // Its share is whole again once its associations are dropped; a new one
                // starts from a fresh share.
                self.prefix_budgets.remove(&prefix);
            }
        }
        if let Some(n) = self.per_source.get_mut(&e.source) {
            *n -= 1;
            if *n == 0 {
                self.per_source.remove(&e.source);
            }
        }
        self.last_peer = None;
        Some(e.assoc)
    }

    /// Replaces the cookie secret when its time has come (`cookie_secret_rotation`); the
    /// old one opens cookies for one more cookie lifetime (twice Valid.Cookie.Life, the
    /// most a Cookie Preservative can give).
    fn rotate_secret(&mut self, now: Instant) {
        if now < self.next_rotation {
            return;
        }
        let mut s = [0u8; 32];
        self.secret_rng.fill_bytes(&mut s);
        self.key.rotate(s, now + self.cfg.valid_cookie_life * 2);
        self.next_rotation = now + self.cfg.cookie_secret_rotation;
    }

    /// Feeds one datagram's payload (an SCTP packet) received on `local` from `remote`.
    /// Returns the association it was for, if any (a driver looks at that one's messages).
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        packet: Bytes,
    ) -> Option<AssocId> {
        if verify_checksum(&packet).is_err() {
            return None; // RFC 9260 §6.8: silently discard.
        }
        let Ok(h) = CommonHeader::peek(&packet) else {
            return None;
        };
        if h.src_port == 0 {
            return None; // §3.1: port 0 is not a valid SCTP port.
        }
        if h.dst_port != self.cfg.port {
            self.answer_wrong_port(now, local, remote, h, &packet);
            return None;
        }
        self.rotate_secret(now);
        let key = (remote.ip(), h.src_port);
        let mut found = match self.last_peer {
            Some((k, id)) if k == key => Some(id),
            _ => self.by_peer.get(&key).copied(),
        };
        // (Most endpoints hold no tentative address: one branch per datagram, no hashing.)
        if !self.tentative.is_empty()
            && self.tentative.contains(&key)
            && let Some(id) = found
            && self
                .assocs
                .get(&id)
                .is_none_or(|e| e.assoc.local_tag() != h.verification_tag)
        {
            // An address its owner only listed: only packets with the owner's tag are its
            // (a HEARTBEAT-ACK confirming it); an INIT or COOKIE-ECHO from the address's
            // real owner is out of the blue (RFC 5062 §2).
            found = None;
        }
        let mut remembered = false;
        if let Some(id) = found
            && let Some(e) = self.assocs.get_mut(&id)
        {
            let a = &mut e.assoc;
            if a.is_closed() {
                // Packets the peer had in flight behind its ABORT get no ABORT back while
                // we remember the association (§8.4 rule 2 in spirit); the other §8.4
                // answers (SHUTDOWN-COMPLETE to a SHUTDOWN-ACK) and a new INIT still work.
                remembered = h.verification_tag == a.local_tag();
            } else {
                self.last_peer = Some((key, id));
                let _span = tracing::trace_span!("assoc", id = id.0).entered();
                a.handle_verified(now, local, remote, &packet, false);
                if a.has_path_events() {
                    self.on_path_events(now, id, h.src_port);
                }
                self.touch(id);
                return Some(id);
            }
        }
        self.out_of_the_blue(now, local, remote, h, &packet, remembered)
    }

    /// Drains association `id`'s path events: every path added routes its peer address here
    /// too; a confirmed one becomes its own. A removed path's address keeps routing here:
    /// the peer, not told without RFC 5061, may still send from it, and an ABORT to it
    /// would end the association (RFC 9260 §8.4).
    fn on_path_events(&mut self, now: Instant, id: AssocId, port: u16) {
        let (mut added, mut confirmed) = (false, Vec::new());
        if let Some(e) = self.assocs.get_mut(&id) {
            while let Some(ev) = e.assoc.poll_path_event() {
                match ev {
                    crate::association::PathEvent::Added { .. } => added = true,
                    crate::association::PathEvent::Confirmed { remote, .. } => {
                        confirmed.push(remote.ip());
                    }
                    crate::association::PathEvent::Removed { .. } => {}
                }
            }
        }
        if added {
            self.register_paths(now, id, port);
        }
        for ip in confirmed {
            self.confirm(id, ip, port);
        }
    }

    /// The INIT-ACK listed more peer addresses: packets from them are ours too, unless a
    /// live association owns one, in which case this one is refused (cause 11, §5.2).
    fn register_paths(&mut self, now: Instant, id: AssocId, port: u16) {
        let Some(e) = self.assocs.get(&id) else {
            return;
        };
        let ips = e.assoc.peer_addresses();
        if let Some(taken) = ips
            .iter()
            .find(|ip| self.live_owner(**ip, port).is_some_and(|o| o != id))
        {
            let cause = ErrorCause::RestartWithNewAddresses(ootb::address_tlv(*taken));
            if let Some(e) = self.assocs.get_mut(&id) {
                e.assoc.abort_with(now, cause);
            }
            return;
        }
        self.claim(id, &ips, port);
        self.last_peer = None;
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
            && let Some(e) = self.assocs.get_mut(&id)
        {
            e.assoc.handle_icmp(now, local, remote, quoted, err);
            self.touch(id);
        }
    }

    /// Runs the expired timers (only those: the timer queue says which associations).
    /// Afterwards `poll_timeout()` is `None` or later than `now`, as for an association.
    pub fn handle_timeout(&mut self, now: Instant) {
        self.refresh_timers();
        let mut due = Vec::new();
        while let Some(&Reverse((t, id))) = self.timers.peek() {
            if t > now {
                break;
            }
            self.timers.pop();
            let Some(e) = self.assocs.get_mut(&id) else {
                continue;
            };
            if e.armed != Some(t) {
                continue; // Superseded by an earlier deadline.
            }
            e.armed = None;
            due.push(id);
        }
        for id in due {
            if let Some(e) = self.assocs.get_mut(&id) {
                if e.assoc.poll_timeout().is_some_and(|t| t <= now) {
                    let _span = tracing::trace_span!("assoc", id = id.0).entered();
                    e.assoc.handle_timeout(now);
                }
                self.touch(id);
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
            .filter(|(_, e)| e.assoc.is_drained())
            .map(|(id, _)| *id)
            .collect();
        for id in drained {
            self.remove(id);
        }
    }

    /// The earliest timer of any association.
    #[must_use]
    pub fn poll_timeout(&mut self) -> Option<Instant> {
        self.refresh_timers();
        while let Some(&Reverse((t, id))) = self.timers.peek() {
            if self.assocs.get(&id).is_some_and(|e| e.armed == Some(t)) {
                return Some(t);
            }
            self.timers.pop(); // Stale: forgotten association or superseded deadline.
        }
        None
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
                may_fragment: false,
            });
        }
        // Round-robin over the associations that had input, one packet each in turn.
        while let Some(id) = self.tx_ready.pop_front() {
            let Some(e) = self.assocs.get_mut(&id) else {
                continue;
            };
            let _span = tracing::trace_span!("assoc", id = id.0).entered();
            if let Some(t) = e.assoc.poll_transmit(now, buf) {
                self.tx_ready.push_back(id);
                return Some(t);
            }
            e.tx_ready = false;
            if !e.dirty {
                // Sending moves timers (T3 starts): look at its deadline again.
                e.dirty = true;
                self.dirty.push(id);
            }
        }
        None
    }

    /// Turns decision tracing on or off for every association, present and future
    /// (`crate::trace`); drain with [`Endpoint::drain_traces`].
    pub fn set_tracing(&mut self, on: bool) {
        self.tracing = on;
        for e in self.assocs.values_mut() {
            e.assoc.set_tracing(on);
        }
    }

    /// Hands every recorded trace event to `f`, association by association in id order,
    /// each association's in the order they happened.
    pub fn drain_traces(&mut self, mut f: impl FnMut(AssocId, Instant, &crate::TraceEvent)) {
        if !self.tracing {
            return;
        }
        for (&id, e) in &mut self.assocs {
            while let Some((at, ev)) = e.assoc.poll_trace() {
                f(id, at, &ev);
            }
        }
    }

    /// The next event of any association.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<(AssocId, Event)> {
        while let Some(&id) = self.ev_ready.front() {
            let Some(e) = self.assocs.get_mut(&id) else {
                self.ev_ready.pop_front();
                continue;
            };
            if let Some(ev) = e.assoc.poll_event() {
                return Some((id, ev));
            }
            e.ev_ready = false;
            self.ev_ready.pop_front();
        }
        None
    }
}

#[cfg(test)]
mod budget_tests {
    use super::*;

    /// Runs a client and a listening server until the client's association is established
    /// or `limit` passes; datagrams to `silent` vanish, and with `icmp` each one to it is
    /// answered by a port unreachable quoting it. Returns the INITs sent to `silent`, the
    /// association and the time it took.
    fn handshake_with_a_dead_address(
        silent: SocketAddr,
        icmp: bool,
    ) -> (usize, Endpoint, AssocId, std::time::Duration) {
        let (c_addr, s_addr): (SocketAddr, SocketAddr) = (
            "10.0.0.1:9899".parse().unwrap(),
            "10.0.0.3:9899".parse().unwrap(),
        );
        let mut cli = Endpoint::new(EndpointConfig::default(), 1);
        cli.set_local_addresses(vec![c_addr]);
        let mut srv = Endpoint::new(
            EndpointConfig {
                listen: true,
                ..EndpointConfig::default()
            },
            2,
        );
        srv.set_local_addresses(vec![s_addr]);
        let mut now = Instant::ZERO;
        let id = cli
            .connect_multihomed(now, c_addr, &[silent, s_addr], 5001)
            .unwrap();
        let (mut to_silent, mut buf) = (0, Vec::new());
        for _ in 0..10_000 {
            let mut moved = false;
            buf.clear();
            while let Some(t) = cli.poll_transmit(now, &mut buf) {
                let pkt = Bytes::copy_from_slice(&buf[buf.len() - t.size..]);
                moved = true;
                if t.remote == silent {
                    to_silent += 1;
                    if icmp {
                        cli.handle_icmp(
                            now,
                            t.local,
                            t.remote,
                            &pkt,
                            crate::IcmpError::PortUnreachable,
                        );
                    }
                } else {
                    srv.handle_datagram(now, t.remote, t.local, pkt);
                }
                buf.clear();
            }
            while let Some(t) = srv.poll_transmit(now, &mut buf) {
                let pkt = Bytes::copy_from_slice(&buf[buf.len() - t.size..]);
                moved = true;
                cli.handle_datagram(now, t.remote, t.local, pkt);
                buf.clear();
            }
            while let Some((_, ev)) = cli.poll_event() {
                if matches!(ev, Event::Connected) {
                    return (
                        to_silent,
                        cli,
                        id,
                        now.saturating_duration_since(Instant::ZERO),
                    );
                }
            }
            if !moved {
                let next = [cli.poll_timeout(), srv.poll_timeout()]
                    .into_iter()
                    .flatten()
                    .min()
                    .expect("a timer while the handshake waits");
                now = next;
                cli.handle_timeout(now);
                srv.handle_timeout(now);
            }
        }
        panic!("no handshake");
    }

    /// A connect with two addresses, the first dead: T1 moves the INIT to the second
    /// (RFC 9260 §6.4), and the dead address is dropped once the peer answers.
    #[test]
    fn the_init_moves_to_the_next_address_on_t1() {
        let silent: SocketAddr = "10.0.0.2:9899".parse().unwrap();
        let (inits, cli, id, took) = handshake_with_a_dead_address(silent, false);
        assert_eq!(inits, 1, "one INIT to the dead address, then the next");
        let rto_initial = AssociationConfig::default().rto_initial;
        assert!(took >= rto_initial, "{took:?}");
        let a = cli.association(id).unwrap();
        let paths = a.paths();
        assert_eq!(paths.len(), 1, "{paths:?}");
        assert_eq!(paths[0].remote, "10.0.0.3:9899".parse().unwrap());
        assert!(paths[0].primary && paths[0].confirmed);
    }

    /// The same with an ICMP port unreachable for the dead address: the INIT moves on at
    /// once, without waiting for T1.
    #[test]
    fn an_icmp_error_moves_the_init_on_at_once() {
        let silent: SocketAddr = "10.0.0.2:9899".parse().unwrap();
        let (inits, cli, id, took) = handshake_with_a_dead_address(silent, true);
        assert_eq!(inits, 1);
        assert!(took < AssociationConfig::default().rto_initial, "{took:?}");
        let paths = cli.association(id).unwrap().paths();
        assert_eq!(paths.len(), 1, "{paths:?}");
    }

    /// Ids print as their bare numbers, honouring width and alignment.
    #[test]
    fn ids_display_as_numbers() {
        assert_eq!(AssocId(7).to_string(), "7");
        assert_eq!(crate::PathId(3).to_string(), "3");
        assert_eq!(format!("[{:>3}]", crate::PathId(2)), "[  2]");
        assert_eq!(format!("assoc-{}.jsonl", AssocId(12)), "assoc-12.jsonl");
    }

    /// Destinations nothing can answer from, and the endpoint's own address, fail at once
    /// instead of waiting out the handshake.
    #[test]
    fn connect_refuses_addresses_nothing_could_answer_from() {
        let mut ep = Endpoint::new(EndpointConfig::default(), 1);
        let local: SocketAddr = "127.0.0.1:9899".parse().unwrap();
        ep.set_local_addresses(vec![local]);
        let now = Instant::ZERO;
        for bad in [
            "0.0.0.0:9899",
            "127.0.0.2:0",
            "224.0.0.1:9899",
            "255.255.255.255:9899",
            "[::]:9899",
            "[ff02::1]:9899",
        ] {
            let r: SocketAddr = bad.parse().unwrap();
            assert!(
                matches!(ep.connect(now, local, r, 5001), Err(ConnectError::InvalidAddress(a)) if a == r),
                "{bad}"
            );
        }
        assert!(matches!(
            ep.connect(now, local, local, 5001),
            Err(ConnectError::OwnAddress(_))
        ));
        // Another port on the same IP is another endpoint: allowed.
        let other: SocketAddr = "127.0.0.1:9900".parse().unwrap();
        assert!(ep.connect(now, local, other, 5001).is_ok());
    }

    /// Associations of one source prefix draw on one share of the buffer budget; another
    /// prefix has its own, and both draw on the endpoint's.
    #[test]
    fn each_source_prefix_has_its_own_share_of_the_buffer_budget() {
        let mut ep = Endpoint::new(
            EndpointConfig {
                buffer_budget: 10,
                buffer_budget_per_prefix: 4,
                ..EndpointConfig::default()
            },
            1,
        );
        let a = ep.budgets_for("10.0.0.1".parse().unwrap());
        let b = ep.budgets_for("10.0.0.200".parse().unwrap());
        let c = ep.budgets_for("10.0.1.1".parse().unwrap());
        assert_eq!(a.len(), 2);
        assert_eq!(a[1].take(3), 3);
        assert_eq!(b[1].take(3), 1, "the same /24 shares one share");
        assert_eq!(c[1].take(3), 3, "another /24 has its own");
        assert_eq!(a[0].take(100), 10, "all draw on the endpoint's budget");
    }
}
