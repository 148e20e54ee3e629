//! A packetdrill-like script over ONE endpoint under test: the test plays the peer by hand.
//!
//! The test injects packets it builds with `braid_wire` (the CRC is written by
//! `Packet::to_vec`), and pulls every datagram the endpoint transmits, decoded, with the
//! virtual time it left. Time only moves when the test says so: `advance` runs every timer
//! that expires on the way, `expect` waits (in virtual time, at most `horizon`) for the next
//! datagram, `expect_nothing_until` checks that the endpoint stays silent.
//!
//! Naming: "ep" is the endpoint under test, "peer" is the test. `ep_tag` is the tag the
//! endpoint chose (the test puts it in packets to the endpoint), `peer_tag` the test's own
//! (the endpoint must put it in packets to the test).
#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::missing_panics_doc
)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use braid_proto::{
    AssocId, Association, AssociationConfig, Endpoint, EndpointConfig, Event, Instant,
    ReceivedMessage, SendOptions,
};
use braid_wire::chunk::{
    Abort, ChunkType, CookieAck, CookieEcho, Data, GapAckBlock, Init, InitAck, Sack,
};
use braid_wire::{Chunk, ChunkBody, Packet, Param, RawChunk, raw_chunks};
use bytes::Bytes;

/// SCTP port of the endpoint under test.
pub const EP_PORT: u16 = 5001;
/// SCTP port the test (the peer) uses.
pub const PEER_PORT: u16 = 5000;
/// The State Cookie the test hands out in its INIT-ACKs (opaque to the endpoint).
pub const PEER_COOKIE: &[u8] = b"cookie of the scripted peer";

/// Shorthand: `ms(250)`.
pub const fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Shorthand: `secs(3)`.
pub const fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// Association settings for scripts: the RFC 9260 defaults, but no heartbeats, so that the
/// only packets on the wire are the ones the scenario is about.
pub fn quiet_config() -> AssociationConfig {
    AssociationConfig {
        hb_interval: None,
        ..AssociationConfig::default()
    }
}

/// A datagram the endpoint sent.
#[derive(Debug, Clone)]
pub struct Out {
    /// Virtual time it left.
    pub at: Instant,
    /// Where it went.
    pub remote: SocketAddr,
    /// The bytes, as sent.
    pub bytes: Bytes,
    /// Decoded (the CRC32c was checked).
    pub pkt: Packet,
}

impl Out {
    /// Time it left, since the script's epoch.
    pub fn t(&self) -> Duration {
        self.at.since_epoch()
    }

    /// Verification tag of the common header.
    pub fn vtag(&self) -> u32 {
        self.pkt.verification_tag
    }

    /// Chunk names, for messages.
    pub fn describe(&self) -> String {
        let names: Vec<&str> = self.pkt.chunks.iter().map(Chunk::name).collect();
        format!(
            "[{}] vtag {:#010x} at {:?}",
            names.join(", "),
            self.vtag(),
            self.t()
        )
    }

    /// Chunk type codes, in order.
    pub fn types(&self) -> Vec<ChunkType> {
        self.pkt.chunks.iter().map(Chunk::chunk_type).collect()
    }

    /// Every chunk of type `T`, in order.
    pub fn all<T: ChunkBody>(&self) -> Vec<T> {
        raw_chunks(&self.bytes)
            .filter_map(|r| r.ok()?.decode_as::<T>()?.ok())
            .collect()
    }

    /// The first chunk of type `T`.
    pub fn get<T: ChunkBody>(&self) -> Option<T> {
        self.all::<T>().into_iter().next()
    }

    /// Whether the packet holds a chunk of type `T`.
    pub fn has<T: ChunkBody>(&self) -> bool {
        self.types().contains(&T::TYPE)
    }

    /// Index of the first chunk of type `T`.
    pub fn position<T: ChunkBody>(&self) -> Option<usize> {
        self.types().iter().position(|t| *t == T::TYPE)
    }

    /// The packet's only chunk, which must be a `T`.
    pub fn only<T: ChunkBody>(&self) -> T {
        assert_eq!(
            self.pkt.chunks.len(),
            1,
            "expected a lone {}, got {}",
            T::NAME,
            self.describe()
        );
        self.get::<T>()
            .unwrap_or_else(|| panic!("expected a lone {}, got {}", T::NAME, self.describe()))
    }

    /// TSNs of the DATA chunks, in order.
    pub fn tsns(&self) -> Vec<u32> {
        self.all::<Data>().iter().map(|d| d.tsn).collect()
    }

    /// Asserts the packet left at `t` (since the epoch) within `tol`.
    pub fn assert_at(&self, t: Duration, tol: Duration) {
        assert!(
            self.t().abs_diff(t) <= tol,
            "{} left at {:?}, expected {:?} +/- {:?}",
            self.describe(),
            self.t(),
            t,
            tol
        );
    }
}

/// One endpoint under test and the state of the peer the test plays.
pub struct Script {
    /// The endpoint under test.
    pub ep: Endpoint,
    /// Virtual time.
    pub now: Instant,
    /// The endpoint's address.
    pub local: SocketAddr,
    /// The test's address.
    pub remote: SocketAddr,
    /// The association under test, once there is one.
    pub assoc: Option<AssocId>,
    /// Tag the endpoint announced (in INIT or INIT-ACK): put in packets to it.
    pub ep_tag: u32,
    /// The endpoint's initial TSN.
    pub ep_initial_tsn: u32,
    /// The test's tag (announced in its INIT or INIT-ACK): expected in packets from the ep.
    pub peer_tag: u32,
    /// The test's initial TSN.
    pub peer_initial_tsn: u32,
    /// a_rwnd the test announces in INIT / INIT-ACK.
    pub peer_rwnd: u32,
    /// Parameters of the test's INIT in `init_exchange` (extensions it offers).
    pub init_params: Vec<Param>,
    /// Outbound streams the test announces (the endpoint's inbound streams).
    pub peer_os: u16,
    /// Inbound streams the test announces.
    pub peer_mis: u16,
    /// Every event, with the time it was drained.
    pub events: Vec<(Instant, AssocId, Event)>,
    /// How long `expect` waits in virtual time for a datagram.
    pub horizon: Duration,
    /// The last datagram `expect`/`expect_chunk` returned.
    pub last: Option<Out>,
    /// Addresses besides `remote` the endpoint may send to (multi-homed peers); a datagram
    /// to any other address fails the test.
    pub other_peer_ips: Vec<std::net::IpAddr>,
    sent: VecDeque<Out>,
    buf: Vec<u8>,
}

impl Script {
    /// A script over an endpoint with this configuration (its port is forced to `EP_PORT`).
    pub fn new(mut cfg: EndpointConfig, seed: u64) -> Self {
        let seed = super::seed_or_env(seed);
        cfg.port = EP_PORT;
        Self {
            ep: Endpoint::new(cfg, seed),
            now: Instant::ZERO,
            local: "10.0.0.2:9899".parse().unwrap(),
            remote: "10.0.0.1:9899".parse().unwrap(),
            assoc: None,
            ep_tag: 0,
            ep_initial_tsn: 0,
            peer_tag: 0xbeef_0001,
            peer_initial_tsn: 1000,
            peer_rwnd: 1 << 20,
            init_params: Vec::new(),
            peer_os: 4,
            peer_mis: 4,
            events: Vec::new(),
            horizon: secs(3600),
            last: None,
            other_peer_ips: Vec::new(),
            sent: VecDeque::new(),
            buf: Vec::with_capacity(2048),
        }
    }

    /// A listening endpoint with `quiet_config`.
    pub fn server(seed: u64) -> Self {
        Self::server_with(quiet_config(), seed)
    }

    /// A listening endpoint with these association settings.
    pub fn server_with(assoc: AssociationConfig, seed: u64) -> Self {
        Self::new(
            EndpointConfig {
                listen: true,
                association: assoc,
                ..EndpointConfig::default()
            },
            seed,
        )
    }

    /// A non-listening endpoint (it will `connect`) with `quiet_config`.
    pub fn client(seed: u64) -> Self {
        Self::new(
            EndpointConfig {
                association: quiet_config(),
                ..EndpointConfig::default()
            },
            seed,
        )
    }

    /// Time since the epoch.
    pub fn t(&self) -> Duration {
        self.now.since_epoch()
    }

    // ---------------------------------------------------------------- driving the endpoint

    /// Drains what the endpoint wants to send now, and its events.
    pub fn flush(&mut self) {
        loop {
            self.buf.clear();
            let Some(t) = self.ep.poll_transmit(self.now, &mut self.buf) else {
                break;
            };
            assert_eq!(t.size, self.buf.len(), "Transmit.size");
            // The UDP port is the RFC 6951 tests' business: they check `Out::remote`.
            assert!(
                t.remote.ip() == self.remote.ip() || self.other_peer_ips.contains(&t.remote.ip()),
                "datagram sent to an unexpected address {}",
                t.remote
            );
            let bytes = Bytes::copy_from_slice(&self.buf);
            let pkt = Packet::decode(&bytes)
                .unwrap_or_else(|e| panic!("the endpoint sent a malformed packet: {e}"));
            assert_eq!(
                (pkt.src_port, pkt.dst_port),
                (EP_PORT, PEER_PORT),
                "ports of a packet from the endpoint"
            );
            self.sent.push_back(Out {
                at: self.now,
                remote: t.remote,
                bytes,
                pkt,
            });
        }
        while let Some((id, e)) = self.ep.poll_event() {
            self.events.push((self.now, id, e));
        }
    }

    /// Runs the timers that expire at or before `to`, then sets the clock to `to`.
    pub fn advance_to(&mut self, to: Duration) {
        let to = Instant::from_duration(to);
        assert!(to >= self.now, "time runs forward only");
        let mut guard = 0u32;
        while let Some(t) = self.ep.poll_timeout() {
            if t > to {
                break;
            }
            guard += 1;
            assert!(guard < 1_000_000, "a timer at {t:?} keeps firing");
            self.now = self.now.max(t);
            self.ep.handle_timeout(self.now);
            self.flush();
        }
        self.now = to;
    }

    /// Runs the clock forward by `d`.
    pub fn advance(&mut self, d: Duration) {
        self.advance_to(self.t() + d);
    }

    /// Feeds a packet to the endpoint now.
    pub fn inject(&mut self, pkt: &Packet) {
        let bytes = pkt.to_vec().expect("packet too large to encode");
        self.inject_raw(bytes);
    }

    /// Feeds a packet at time `t` (timers up to `t` run first).
    pub fn inject_at(&mut self, t: Duration, pkt: &Packet) {
        self.advance_to(t);
        self.inject(pkt);
    }

    /// Feeds a packet now as if it came from `from` (another address of the peer, or an
    /// attacker's).
    pub fn inject_from(&mut self, from: SocketAddr, pkt: &Packet) {
        let bytes = pkt.to_vec().expect("packet too large to encode");
        self.ep
            .handle_datagram(self.now, self.local, from, Bytes::from(bytes));
        self.flush();
    }

    /// Feeds raw bytes (the CRC must be right, or they are dropped) now.
    pub fn inject_raw(&mut self, bytes: Vec<u8>) {
        self.ep
            .handle_datagram(self.now, self.local, self.remote, Bytes::from(bytes));
        self.flush();
    }

    /// Sends `chunks` to the endpoint in one packet with its tag.
    pub fn send_chunks(&mut self, chunks: Vec<Chunk>) {
        let p = self.to_ep(chunks);
        self.inject(&p);
    }

    // ---------------------------------------------------------------- expectations

    /// The next datagram the endpoint sends, waiting (running timers) up to `horizon`.
    pub fn expect(&mut self) -> Out {
        let deadline = self.now + self.horizon;
        let mut guard = 0u32;
        loop {
            if let Some(o) = self.sent.pop_front() {
                self.last = Some(o.clone());
                return o;
            }
            match self.ep.poll_timeout() {
                Some(t) if t <= deadline => {
                    guard += 1;
                    assert!(guard < 1_000_000, "a timer at {t:?} keeps firing");
                    self.now = self.now.max(t);
                    self.ep.handle_timeout(self.now);
                    self.flush();
                }
                _ => panic!(
                    "expected a packet by {:?}; the endpoint stayed silent",
                    deadline.since_epoch()
                ),
            }
        }
    }

    /// The next datagram, which must hold a chunk of type `T` (first of its kind returned;
    /// the whole datagram is in `self.last`).
    pub fn expect_chunk<T: ChunkBody>(&mut self) -> T {
        let o = self.expect();
        o.get::<T>()
            .unwrap_or_else(|| panic!("expected a {}, got {}", T::NAME, o.describe()))
    }

    /// The next datagram, which must hold a chunk of type `T` and carry the peer's tag.
    pub fn expect_to_peer<T: ChunkBody>(&mut self) -> T {
        let c = self.expect_chunk::<T>();
        let o = self.last.as_ref().unwrap();
        assert_eq!(o.vtag(), self.peer_tag, "tag of {}", o.describe());
        c
    }

    /// Every datagram already sent (at or before now), without moving the clock.
    pub fn take_sent(&mut self) -> Vec<Out> {
        self.sent.drain(..).collect()
    }

    /// Every datagram sent up to `t` (running timers on the way).
    pub fn collect_until(&mut self, t: Duration) -> Vec<Out> {
        self.advance_to(t);
        self.take_sent()
    }

    /// Asserts the endpoint sent nothing not yet expected.
    pub fn expect_nothing_now(&mut self) {
        if let Some(o) = self.sent.front() {
            panic!("expected silence at {:?}, got {}", self.t(), o.describe());
        }
    }

    /// Runs the clock to `t` and asserts nothing was sent on the way.
    pub fn expect_nothing_until(&mut self, t: Duration) {
        self.expect_nothing_now();
        self.advance_to(t);
        if let Some(o) = self.sent.front() {
            panic!("expected silence until {t:?}, got {}", o.describe());
        }
    }

    /// Runs the clock forward by `d` and asserts nothing was sent on the way.
    pub fn expect_nothing_for(&mut self, d: Duration) {
        self.expect_nothing_until(self.t() + d);
    }

    /// Whether `e` was reported.
    pub fn saw(&self, e: &Event) -> bool {
        self.events.iter().any(|(_, _, x)| x == e)
    }

    /// How many times `e` was reported.
    pub fn count(&self, e: &Event) -> usize {
        self.events.iter().filter(|(_, _, x)| x == e).count()
    }

    // ---------------------------------------------------------------- the association

    /// The association under test.
    pub fn assoc(&self) -> &Association {
        self.ep
            .association(self.assoc.expect("no association yet"))
            .expect("association gone")
    }

    /// The association under test, mutably. Call `flush` after using it (the helpers
    /// below do).
    pub fn assoc_mut(&mut self) -> &mut Association {
        let id = self.assoc.expect("no association yet");
        self.ep.association_mut(id).expect("association gone")
    }

    /// The application sends a message on `stream`.
    pub fn app_send(&mut self, stream: u16, data: &[u8]) {
        let now = self.now;
        let data = Bytes::copy_from_slice(data);
        self.assoc_mut()
            .send(now, stream, data, SendOptions::default())
            .expect("send refused");
        self.flush();
    }

    /// The application reads one message.
    pub fn app_recv(&mut self) -> Option<ReceivedMessage> {
        let m = self.assoc_mut().recv();
        self.flush();
        m
    }

    /// The application reads every message ready, as byte strings.
    pub fn app_recv_all(&mut self) -> Vec<Vec<u8>> {
        let mut v = Vec::new();
        while let Some(m) = self.app_recv() {
            v.push(m.data.to_vec());
        }
        v
    }

    /// The application starts a graceful shutdown.
    pub fn app_shutdown(&mut self) {
        let now = self.now;
        self.assoc_mut().shutdown(now);
        self.flush();
    }

    /// TSN `i` (from 0) of the endpoint.
    pub fn ep_tsn(&self, i: u32) -> u32 {
        self.ep_initial_tsn.wrapping_add(i)
    }

    /// TSN `i` (from 0) of the peer.
    pub fn peer_tsn(&self, i: u32) -> u32 {
        self.peer_initial_tsn.wrapping_add(i)
    }

    // ---------------------------------------------------------------- building packets

    /// A packet from the test to the endpoint with tag `vtag`.
    pub fn with_tag(&self, vtag: u32, chunks: Vec<Chunk>) -> Packet {
        Packet {
            src_port: PEER_PORT,
            dst_port: EP_PORT,
            verification_tag: vtag,
            chunks,
        }
    }

    /// A packet from the test to the endpoint with the endpoint's tag.
    pub fn to_ep(&self, chunks: Vec<Chunk>) -> Packet {
        self.with_tag(self.ep_tag, chunks)
    }

    /// The test's INIT (tag, TSN, streams and window from the script's fields).
    pub fn init_chunk(&self, params: Vec<Param>) -> Init {
        Init {
            initiate_tag: self.peer_tag,
            a_rwnd: self.peer_rwnd,
            outbound_streams: self.peer_os,
            inbound_streams: self.peer_mis,
            initial_tsn: self.peer_initial_tsn,
            params,
        }
    }

    /// A packet carrying `init` (verification tag 0, §8.5.1).
    pub fn init_packet(&self, init: Init) -> Packet {
        self.with_tag(0, vec![init.into()])
    }

    /// Injects the test's INIT and returns the endpoint's INIT-ACK, checking its tag; records
    /// the endpoint's tag and TSN.
    pub fn init_exchange(&mut self) -> InitAck {
        let p = self.init_packet(self.init_chunk(self.init_params.clone()));
        self.inject(&p);
        let ack: InitAck = self.expect_chunk();
        let o = self.last.as_ref().unwrap();
        assert_eq!(o.pkt.chunks.len(), 1, "INIT-ACK bundled: {}", o.describe());
        assert_eq!(o.vtag(), self.peer_tag, "INIT-ACK tag (§8.5)");
        self.ep_tag = ack.initiate_tag;
        self.ep_initial_tsn = ack.initial_tsn;
        ack
    }

    /// Passive open (RFC 9260 §5.1): INIT -> INIT-ACK, COOKIE-ECHO -> COOKIE-ACK. The
    /// association is accepted and `Connected`.
    pub fn establish_passive(&mut self) -> AssocId {
        let ack = self.init_exchange();
        let cookie = ack
            .state_cookie()
            .expect("INIT-ACK without State Cookie")
            .clone();
        self.send_chunks(vec![CookieEcho { cookie }.into()]);
        let o = self.expect();
        o.only::<CookieAck>();
        assert_eq!(o.vtag(), self.peer_tag, "COOKIE-ACK tag");
        let id = self.ep.accept().expect("no association accepted");
        self.assoc = Some(id);
        assert!(self.saw(&Event::Connected), "no Connected event");
        id
    }

    /// The endpoint connects; returns its INIT (tag and TSN recorded).
    pub fn connect(&mut self) -> Init {
        let id = self
            .ep
            .connect(self.now, self.local, self.remote, PEER_PORT)
            .expect("connect");
        self.assoc = Some(id);
        self.flush();
        let o = self.expect();
        let init: Init = o.only();
        assert_eq!(o.vtag(), 0, "INIT tag (§8.5.1)");
        self.ep_tag = init.initiate_tag;
        self.ep_initial_tsn = init.initial_tsn;
        init
    }

    /// The test's INIT-ACK (answering the endpoint's INIT), with `PEER_COOKIE`.
    pub fn init_ack_chunk(&self, mut params: Vec<Param>) -> InitAck {
        params.insert(0, Param::StateCookie(Bytes::from_static(PEER_COOKIE)));
        InitAck {
            initiate_tag: self.peer_tag,
            a_rwnd: self.peer_rwnd,
            outbound_streams: self.peer_os,
            inbound_streams: self.peer_mis,
            initial_tsn: self.peer_initial_tsn,
            params,
        }
    }

    /// Active open (RFC 9260 §5.1): connect -> INIT, INIT-ACK -> COOKIE-ECHO, COOKIE-ACK.
    pub fn establish_active(&mut self) -> AssocId {
        self.connect();
        let ack = self.init_ack_chunk(vec![]);
        self.send_chunks(vec![ack.into()]);
        let echo: CookieEcho = self.expect_to_peer();
        assert_eq!(echo.cookie, PEER_COOKIE, "COOKIE-ECHO must echo our cookie");
        self.send_chunks(vec![CookieAck.into()]);
        self.expect_nothing_now();
        assert!(self.saw(&Event::Connected), "no Connected event");
        self.assoc.unwrap()
    }
}

// -------------------------------------------------------------------- chunk builders

/// A whole (B and E) message in one DATA chunk.
pub fn data(tsn: u32, stream: u16, ssn: u16, payload: &[u8]) -> Chunk {
    Data {
        tsn,
        stream_id: stream,
        ssn,
        ppid: 0,
        unordered: false,
        beginning: true,
        ending: true,
        immediate: false,
        user_data: Bytes::copy_from_slice(payload),
    }
    .into()
}

/// A SACK; `gaps` are (start, end) offsets from `cum`.
pub fn sack(cum: u32, a_rwnd: u32, gaps: &[(u16, u16)]) -> Chunk {
    Sack {
        cum_tsn_ack: cum,
        a_rwnd,
        gap_blocks: gaps
            .iter()
            .map(|&(start, end)| GapAckBlock { start, end })
            .collect(),
        dup_tsns: vec![],
    }
    .into()
}

/// An ABORT.
pub fn abort(t_bit: bool) -> Chunk {
    Abort {
        t_bit,
        causes: vec![],
    }
    .into()
}

/// A chunk of a type nobody knows, with its flags and value.
pub fn unknown_chunk(ty: u8, flags: u8, value: &'static [u8]) -> RawChunk {
    RawChunk {
        chunk_type: ChunkType(ty),
        flags,
        value: Bytes::from_static(value),
    }
}
