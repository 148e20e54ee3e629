//! Fuzzes the sans-IO core of `braid-proto` with sequences of datagrams.
//!
//! The world: a listening server endpoint, a client endpoint that connects to it, and four
//! fake peers whose packets the fuzzer writes. The input is a sequence of records, each
//! `op, time advance, op fields...`. Records either inject a datagram (raw bytes; raw bytes
//! with the CRC32c fixed; raw chunk bytes wrapped in a common header with the flow's ports and
//! verification tag; or chunks built from a few fields with the flow's tags and TSNs), act on
//! the packets in flight between the two real endpoints (deliver, drop, duplicate, reorder,
//! mutate with the CRC fixed, spoof the source), run the pair loss-free for a while, or call
//! the application API (send, shutdown, abort, remove, connect, pause reading).
//!
//! Tags and TSNs are learned by decoding every packet the endpoints transmit, so the
//! fuzzer gets past the checksum and verification-tag checks into every association state.
//!
//! After every record the harness runs due timers, drains `poll_transmit` and `poll_event`,
//! accepts and reads (`recv`), and checks:
//! - nothing panics (debug assertions and overflow checks are on in fuzz builds);
//! - each endpoint holds at most `max_associations` associations;
//! - each association's `send_buffered()` is at most its send buffer limit (grown by
//!   autotuning up to `send_buffer_max`), and the bytes in flight on its paths are at most
//!   `send_buffered()`;
//! - `poll_transmit` and `poll_event` run dry (no endless output without input), and
//!   `handle_timeout(now)` leaves no timer due at `now` (no timer livelock);
//! - live heap memory (counted by a wrapping global allocator) stays under a bound derived
//!   from the configuration: a base plus, per association, 4 x (send_buffer_max +
//!   recv_buffer_max) + 1 MiB (the presets let autotuning grow each buffer fourfold).

#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::{BTreeMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use braid_proto::{AssocId, AssociationConfig, Endpoint, EndpointConfig, Instant, SendOptions};
use braid_wire::chunk::{
    Abort, CookieAck, CookieEcho, Data, ErrorChunk, ForwardTsn, ForwardTsnStream, GapAckBlock,
    Heartbeat, HeartbeatAck, Init, InitAck, Pad, Sack, Shutdown, ShutdownAck, ShutdownComplete,
};
use braid_wire::packet::write_checksum;
use braid_wire::{Chunk, ErrorCause, Packet, Param, ParamType};
use bytes::Bytes;
use libfuzzer_sys::fuzz_target;

// ---------------------------------------------------------------------------------------
// Live-heap accounting.

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator and only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(l) };
        if !p.is_null() {
            LIVE.fetch_add(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(l) };
        if !p.is_null() {
            LIVE.fetch_add(l.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        unsafe { System.dealloc(p, l) };
        LIVE.fetch_sub(l.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, new: usize) -> *mut u8 {
        let q = unsafe { System.realloc(p, l, new) };
        if !q.is_null() {
            LIVE.fetch_sub(l.size(), Ordering::Relaxed);
            LIVE.fetch_add(new, Ordering::Relaxed);
        }
        q
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

// ---------------------------------------------------------------------------------------
// Input reader: never fails, reads zeros past the end.

struct Input<'a> {
    d: &'a [u8],
}

impl<'a> Input<'a> {
    fn is_empty(&self) -> bool {
        self.d.is_empty()
    }
    fn u8(&mut self) -> u8 {
        match self.d.split_first() {
            Some((&b, rest)) => {
                self.d = rest;
                b
            }
            None => 0,
        }
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    fn bytes(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.d.len());
        let (a, b) = self.d.split_at(n);
        self.d = b;
        a
    }
}

// ---------------------------------------------------------------------------------------
// The world.

const SERVER: usize = 0;
const CLIENT: usize = 1;
const FAKES: usize = 4;
const PORTS: [u16; 2] = [5001, 5000];
const FAKE_PORT: u16 = 6000;
/// Largest UDP payload.
const MAX_DATAGRAM: usize = 65_507;
/// Bytes held at most in each in-flight queue between the real endpoints (beyond: lost).
const WIRE_CAP: usize = 512 * 1024;
/// Datagrams or events one drain may produce before the harness calls it endless.
const DRAIN_CAP: usize = 100_000;

fn real_addr(e: usize) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 0, 2 - e as u8)), 9899)
}

/// The second address of a multi-homed real endpoint.
fn second_addr(e: usize) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 3, 2 - e as u8)), 9899)
}

fn fake_addr(k: usize) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 0, 1, 1 + k as u8)), 9899)
}

/// Who a datagram claims to come from.
#[derive(Clone, Copy, Debug)]
enum Src {
    /// The other real endpoint.
    Real(usize),
    /// Fake peer k.
    Fake(usize),
}

impl Src {
    fn addr(self) -> SocketAddr {
        match self {
            Src::Real(e) => real_addr(e),
            Src::Fake(k) => fake_addr(k),
        }
    }
    fn port(self) -> u16 {
        match self {
            Src::Real(e) => PORTS[e],
            Src::Fake(k) => FAKE_PORT + k as u16,
        }
    }
}

/// What the harness learned about the flow between endpoint `e` and one remote address.
#[derive(Default, Clone, Debug)]
struct Flow {
    /// Tag the endpoint expects in packets from the remote (its local tag).
    ep_tag: u32,
    /// Tag the endpoint puts in packets to the remote.
    remote_tag: u32,
    /// Initial TSN the endpoint announced.
    ep_initial_tsn: u32,
    /// Highest DATA TSN the endpoint sent.
    ep_tsn: Option<u32>,
    /// Next TSN the remote should send (from the endpoint's SACKs, or our INIT).
    next_tsn: u32,
    /// Next SSN on streams 0..8 for the DATA we build.
    ssn: [u16; 8],
    /// State cookie of the endpoint's last INIT-ACK.
    cookie: Option<Bytes>,
    /// Heartbeat Info of the endpoint's last HEARTBEAT.
    hb_info: Option<Bytes>,
}

fn tsn_gt(a: u32, b: u32) -> bool {
    a != b && a.wrapping_sub(b) < 1 << 31
}

struct World {
    now: Instant,
    eps: [Endpoint; 2],
    cfg: EndpointConfig,
    /// Datagrams in flight to endpoint `i` from the other real endpoint, with their size.
    wire: [VecDeque<Bytes>; 2],
    wire_bytes: [usize; 2],
    flows: BTreeMap<(usize, IpAddr), Flow>,
    paused: [bool; 2],
    buf: Vec<u8>,
    baseline: usize,
}

fn samples() -> &'static [Chunk] {
    static S: OnceLock<Vec<Chunk>> = OnceLock::new();
    S.get_or_init(|| {
        braid_wire::sample::every_chunk_type()
            .into_iter()
            .flat_map(|(_, p)| p.chunks)
            .collect()
    })
}

fn causes() -> &'static [ErrorCause] {
    static S: OnceLock<Vec<ErrorCause>> = OnceLock::new();
    S.get_or_init(braid_wire::sample::all_causes)
}

/// Configuration presets, picked by the first input byte; `ext` (the fourth) turns on the
/// extensions: CMT, LS-SCTP, spurious-retransmission detection (TIMESTAMP, R-bit, DupTSN),
/// RACK, NR-SACK, PLPMTUD, pacing with CUBIC.
fn config(b: u8, seed: u64, ext: u8) -> EndpointConfig {
    let mut a = AssociationConfig::default();
    let (send, recv) = match b & 3 {
        0 => (64 * 1024, 64 * 1024),
        1 => (4 * 1024, 4 * 1024),
        2 => (256 * 1024, 16 * 1024),
        _ => (1 << 20, 1 << 20),
    };
    a.send_buffer = send;
    a.recv_buffer = recv;
    // Autotuning may grow each buffer fourfold (the budgets below may stop it sooner).
    a.send_buffer_max = 4 * send;
    a.recv_buffer_max = 4 * recv;
    a.max_message_size = send.min(64 * 1024);
    if b & 0x10 != 0 {
        a.pr_sctp = false;
    }
    if b & 0x04 != 0 {
        // I-DATA (RFC 8260): the two real endpoints then talk I-DATA and I-FORWARD-TSN.
        a.idata = true;
        a.stream_scheduler = braid_proto::SchedulerKind::FairCapacity;
    }
    if b & 0x20 != 0 {
        a.hb_interval = None;
    }
    if b & 0x40 != 0 {
        a.path_mtu = 576;
        a.outbound_streams = 2;
        a.max_inbound_streams = 4;
        a.max_burst = 1;
        a.sack_freq = 1;
    }
    if b & 0x80 != 0 {
        a.rto_initial = Duration::from_millis(200);
        a.rto_min = Duration::from_millis(100);
        a.rto_max = Duration::from_secs(2);
        // Quicker heartbeats, unless the 0x20 bit turned them off.
        a.hb_interval = a.hb_interval.map(|_| Duration::from_secs(2));
        a.sack_delay = Duration::from_millis(20);
        a.association_max_retrans = 4;
        a.path_max_retrans = 2;
        a.max_init_retransmits = 3;
    }
    if ext & 1 != 0 {
        a.cmt = Some(braid_proto::CmtConfig::default());
        // LS-SCTP (load sharing) only with CMT's multipath machinery.
        a.load_sharing = ext & 2 != 0;
    }
    a.spurious_detection = match (ext >> 2) & 3 {
        0 => braid_proto::SpuriousDetection::Off,
        1 => braid_proto::SpuriousDetection::EifelTimestamp,
        2 => braid_proto::SpuriousDetection::EifelRbit,
        _ => braid_proto::SpuriousDetection::DupTsn,
    };
    if ext & 0x10 != 0 {
        a.loss_detection = braid_proto::LossDetection::Rack;
    }
    a.nr_sack = ext & 0x20 != 0;
    a.plpmtud = ext & 0x40 != 0;
    if ext & 0x80 != 0 {
        a.pacing = true;
        a.cc = braid_proto::CongestionControl::Cubic;
    }
    EndpointConfig {
        port: 0,
        listen: false,
        valid_cookie_life: Duration::from_secs(60),
        cookie_secret: Some([(seed & 0xff) as u8; 32]),
        max_associations: 1 + ((b >> 2) & 3) as usize,
        max_associations_per_source: 1 + ((seed >> 8) & 3) as usize,
        max_associations_per_prefix: 1 + ((seed >> 9) & 3) as usize,
        source_prefix_v4: [24, 32, 0, 16][((seed >> 3) & 3) as usize],
        source_prefix_v6: [64, 128, 0, 48][((seed >> 5) & 3) as usize],
        ootb_burst: 1 + ((seed >> 10) & 15) as u32,
        ootb_rate: 1 + ((seed >> 14) & 3) as u32,
        init_answer_rate: 1 + ((seed >> 12) & 3) as u32 * 8,
        init_answer_bytes: 256 + ((seed >> 6) & 3) as u32 * 1024,
        cookie_secret_rotation: Duration::from_secs(1 + ((seed >> 4) & 15) * 10),
        // Autotuning's shared budget: none, small (growth refused early) or ample.
        buffer_budget: [0, 64 << 10, 1 << 20, 256 << 20][((seed >> 2) & 3) as usize],
        buffer_budget_per_prefix: [64 << 10, 1 << 20, 0, 64 << 20][((seed >> 11) & 3) as usize],
        association: a,
    }
}

impl World {
    fn new(inp: &mut Input) -> Self {
        let baseline = LIVE.load(Ordering::Relaxed);
        let preset = inp.u8();
        let seed = u64::from(inp.u16());
        let ext = inp.u8();
        let mut cfg = config(preset, seed, ext);
        cfg.port = PORTS[SERVER];
        if cfg.validate().is_err() {
            // A combination the API refuses: the plain preset instead.
            cfg = config(preset, seed, 0);
        }
        let mk = |e: usize| {
            let mut c = cfg.clone();
            c.port = PORTS[e];
            c.listen = e == SERVER;
            let mut ep = Endpoint::new(c, seed.wrapping_mul(31).wrapping_add(e as u64));
            if seed & 1 != 0 {
                // Multi-homed endpoints: address lists in INIT/INIT-ACK, unconfirmed paths.
                ep.set_local_addresses(vec![real_addr(e), second_addr(e)]);
            }
            ep
        };
        let mut w = World {
            now: Instant::ZERO,
            eps: [mk(SERVER), mk(CLIENT)],
            cfg,
            wire: [VecDeque::new(), VecDeque::new()],
            wire_bytes: [0, 0],
            flows: BTreeMap::new(),
            paused: [false, false],
            buf: Vec::with_capacity(2048),
            baseline,
        };
        // The client starts an association with the server at once.
        let _ = w.eps[CLIENT].connect(w.now, real_addr(CLIENT), real_addr(SERVER), PORTS[SERVER]);
        w.settle();
        w
    }

    fn flow(&mut self, e: usize, remote: IpAddr) -> &mut Flow {
        self.flows.entry((e, remote)).or_default()
    }

    /// Learns tags and TSNs from a packet endpoint `e` sends to `remote`.
    fn learn(&mut self, e: usize, remote: SocketAddr, bytes: &Bytes) {
        let Ok(p) = Packet::decode(bytes) else {
            return;
        };
        let first_init = matches!(p.chunks.first(), Some(Chunk::Init(_)));
        let t_bit = matches!(
            p.chunks.first(),
            Some(Chunk::Abort(Abort { t_bit: true, .. }))
                | Some(Chunk::ShutdownComplete(ShutdownComplete { t_bit: true }))
        );
        let peer_real = (0..2).find(|&i| real_addr(i).ip() == remote.ip() && i != e);
        let e_ip = real_addr(e).ip();
        if !first_init && !t_bit {
            self.flow(e, remote.ip()).remote_tag = p.verification_tag;
            if let Some(r) = peer_real {
                self.flow(r, e_ip).ep_tag = p.verification_tag;
            }
        }
        for c in &p.chunks {
            let f = self.flow(e, remote.ip());
            match c {
                Chunk::Init(i) => {
                    f.ep_tag = i.initiate_tag;
                    f.ep_initial_tsn = i.initial_tsn;
                }
                Chunk::InitAck(a) => {
                    f.ep_tag = a.initiate_tag;
                    f.ep_initial_tsn = a.initial_tsn;
                    f.cookie = a.params.iter().find_map(|p| match p {
                        Param::StateCookie(c) => Some(c.clone()),
                        _ => None,
                    });
                }
                Chunk::Data(d) if f.ep_tsn.is_none_or(|t| tsn_gt(d.tsn, t)) => {
                    f.ep_tsn = Some(d.tsn);
                }
                Chunk::Sack(s) => {
                    let next = s.cum_tsn_ack.wrapping_add(1);
                    if tsn_gt(next, f.next_tsn) || f.next_tsn == 0 {
                        f.next_tsn = next;
                    }
                }
                Chunk::Heartbeat(h) => f.hb_info = h.info().cloned(),
                _ => {}
            }
        }
    }

    fn deliver(&mut self, to: usize, from: SocketAddr, bytes: Bytes) {
        self.eps[to].handle_datagram(self.now, real_addr(to), from, bytes);
    }

    /// Runs every timer due up to `target`, in order, then sets the clock to `target`.
    fn advance(&mut self, dt: Duration) {
        let target = self.now + dt;
        for _ in 0..256 {
            let next = self.eps.iter_mut().filter_map(Endpoint::poll_timeout).min();
            match next {
                Some(t) if t <= target => {
                    self.now = self.now.max(t);
                    self.fire_timers();
                    self.drain();
                }
                _ => break,
            }
        }
        self.now = self.now.max(target);
        self.fire_timers();
    }

    fn fire_timers(&mut self) {
        let now = self.now;
        for (e, ep) in self.eps.iter_mut().enumerate() {
            if ep.poll_timeout().is_some_and(|t| t <= now) {
                ep.handle_timeout(now);
                if let Some(t) = ep.poll_timeout() {
                    assert!(
                        t > now,
                        "endpoint {e}: a timer is still due at {now:?} after handle_timeout ({t:?})"
                    );
                }
            }
        }
    }

    /// Drains transmissions and events, accepts, and reads.
    fn drain(&mut self) {
        for e in 0..2 {
            let mut n = 0;
            loop {
                self.buf.clear();
                let Some(t) = self.eps[e].poll_transmit(self.now, &mut self.buf) else {
                    break;
                };
                n += 1;
                assert!(n < DRAIN_CAP, "endpoint {e}: poll_transmit never runs dry");
                assert_eq!(
                    t.size,
                    self.buf.len(),
                    "Transmit::size disagrees with the buffer"
                );
                assert!(t.size <= MAX_DATAGRAM, "datagram of {} bytes", t.size);
                let bytes = Bytes::copy_from_slice(&self.buf);
                self.learn(e, t.remote, &bytes);
                let other = 1 - e;
                let to_other = t.remote == real_addr(other) || t.remote == second_addr(other);
                if to_other && self.wire_bytes[other] + bytes.len() <= WIRE_CAP {
                    self.wire_bytes[other] += bytes.len();
                    self.wire[other].push_back(bytes);
                }
            }
            let mut n = 0;
            while self.eps[e].poll_event().is_some() {
                n += 1;
                assert!(n < DRAIN_CAP, "endpoint {e}: poll_event never runs dry");
            }
            while self.eps[e].accept().is_some() {}
            if !self.paused[e] {
                let ids: Vec<AssocId> = self.eps[e].associations().collect();
                for id in ids {
                    if let Some(a) = self.eps[e].association_mut(id) {
                        let mut n = 0;
                        while a.recv().is_some() {
                            n += 1;
                            assert!(n < DRAIN_CAP, "recv never runs dry");
                        }
                    }
                }
            }
        }
    }

    /// Drain until quiet (reading may open the window and send SACKs), then check.
    fn settle(&mut self) {
        self.drain();
        self.drain();
        self.check();
    }

    fn check(&self) {
        let acfg = &self.cfg.association;
        let mut assocs = 0usize;
        for (e, ep) in self.eps.iter().enumerate() {
            let n = ep.associations().count();
            assert!(
                n <= self.cfg.max_associations,
                "endpoint {e}: {n} associations > max_associations {}",
                self.cfg.max_associations
            );
            assocs += n;
            for id in ep.associations() {
                let Some(a) = ep.association(id) else {
                    panic!("listed association {id:?} missing");
                };
                let buffered = a.send_buffered();
                let limit = a.send_buffer_limit();
                assert!(
                    buffered <= limit && limit <= acfg.send_buffer_max,
                    "endpoint {e} {id:?}: send_buffered {buffered}, limit {limit}, send_buffer_max {}",
                    acfg.send_buffer_max
                );
                if !a.is_closed() {
                    let flight: usize = a.paths().iter().map(|p| p.flight_size).sum();
                    assert!(
                        flight <= buffered,
                        "endpoint {e} {id:?} ({:?}): {flight} bytes in flight > {buffered} buffered",
                        a.state()
                    );
                }
            }
        }
        let per_assoc = 4 * (acfg.send_buffer_max + acfg.recv_buffer_max) + (1 << 20);
        let bound = (4 << 20) + assocs * per_assoc;
        let live = LIVE.load(Ordering::Relaxed).saturating_sub(self.baseline);
        assert!(
            live <= bound,
            "live heap {live} bytes > bound {bound} ({assocs} associations, send_buffer_max {}, recv_buffer_max {})",
            acfg.send_buffer_max,
            acfg.recv_buffer_max
        );
    }

    // -----------------------------------------------------------------------------------
    // Records.

    /// Target endpoint and claimed source from one byte.
    fn target(&self, b: u8) -> (usize, Src) {
        let to = (b & 1) as usize;
        let src = match (b >> 1) % (FAKES as u8 + 1) {
            0 => Src::Real(1 - to),
            k => Src::Fake(k as usize - 1),
        };
        (to, src)
    }

    fn header(&mut self, to: usize, src: Src, mode: u8, inp: &mut Input) -> Vec<u8> {
        let f = self.flow(to, src.addr().ip()).clone();
        let vtag = match mode & 3 {
            0 => f.ep_tag,
            1 => 0,
            2 => f.remote_tag,
            _ => inp.u32(),
        };
        let mut v = Vec::with_capacity(1500);
        v.extend_from_slice(&src.port().to_be_bytes());
        v.extend_from_slice(&PORTS[to].to_be_bytes());
        v.extend_from_slice(&vtag.to_be_bytes());
        v.extend_from_slice(&[0; 4]);
        v
    }

    fn send_packet(&mut self, to: usize, src: Src, mut pkt: Vec<u8>) {
        pkt.truncate(MAX_DATAGRAM);
        write_checksum(&mut pkt);
        self.deliver(to, src.addr(), Bytes::from(pkt));
    }

    fn op_raw(&mut self, inp: &mut Input, fix_crc: bool) {
        let (to, src) = self.target(inp.u8());
        let len = inp.u16() as usize;
        let mut v = inp.bytes(len).to_vec();
        if fix_crc {
            write_checksum(&mut v);
        }
        self.deliver(to, src.addr(), Bytes::from(v));
    }

    fn op_wrap(&mut self, inp: &mut Input) {
        let (to, src) = self.target(inp.u8());
        let mode = inp.u8();
        let mut pkt = self.header(to, src, mode, inp);
        let len = inp.u16() as usize;
        pkt.extend_from_slice(inp.bytes(len));
        self.send_packet(to, src, pkt);
    }

    fn op_structured(&mut self, inp: &mut Input) {
        let (to, src) = self.target(inp.u8());
        let mode = inp.u8();
        let mut pkt = self.header(to, src, mode, inp);
        let n = 1 + ((mode >> 2) & 3);
        for _ in 0..n {
            let chunks = self.build_chunks(to, src, inp);
            for c in chunks {
                let before = pkt.len();
                if c.encode(&mut pkt).is_err() || pkt.len() > MAX_DATAGRAM {
                    pkt.truncate(before);
                }
            }
        }
        if mode & 0x40 != 0 {
            // Trailing raw bytes (malformed tails, unknown chunks).
            let len = inp.u8() as usize;
            pkt.extend_from_slice(inp.bytes(len));
        }
        self.send_packet(to, src, pkt);
    }

    fn op_sample(&mut self, inp: &mut Input) {
        let (to, src) = self.target(inp.u8());
        let mode = inp.u8();
        let mut pkt = self.header(to, src, mode, inp);
        let s = samples();
        let c = &s[inp.u8() as usize % s.len()];
        let _ = c.encode(&mut pkt);
        self.send_packet(to, src, pkt);
    }

    fn build_chunks(&mut self, to: usize, src: Src, inp: &mut Input) -> Vec<Chunk> {
        let ip = src.addr().ip();
        let kind = inp.u8();
        let f = self.flow(to, ip).clone();
        let ep_tsn = f.ep_tsn.unwrap_or(f.ep_initial_tsn.wrapping_sub(1));
        if kind >= 240 {
            return self.build_extension_chunks(to, ip, kind - 240, ep_tsn, inp);
        }
        match kind % 20 {
            0 | 17 | 19 => {
                let count = if kind % 20 == 17 {
                    1 + inp.u8() as usize % 32
                } else {
                    1
                };
                let stream = inp.u8();
                let flags = inp.u8();
                let delta = inp.u8() as i8;
                let far = if kind % 20 == 19 {
                    u32::from(inp.u16())
                } else {
                    0
                };
                let len = inp.u16() as usize % 4096;
                let mut out = Vec::with_capacity(count);
                for _ in 0..count {
                    let f = self.flow(to, ip);
                    let tsn = f
                        .next_tsn
                        .wrapping_add(far)
                        .wrapping_add(i32::from(delta >> 2) as u32);
                    if delta >> 2 == 0 && far == 0 {
                        f.next_tsn = f.next_tsn.wrapping_add(1);
                    }
                    let unordered = flags & 1 != 0;
                    let ending = flags & 4 == 0;
                    let si = (stream & 7) as usize;
                    let ssn = f.ssn[si].wrapping_add(i16::from(delta & 3) as u16);
                    if ending && !unordered && delta & 3 == 0 {
                        f.ssn[si] = f.ssn[si].wrapping_add(1);
                    }
                    out.push(Chunk::Data(Data {
                        tsn,
                        stream_id: if flags & 0x80 != 0 {
                            u16::from(stream)
                        } else {
                            si as u16
                        },
                        ssn,
                        ppid: u32::from(flags >> 4),
                        unordered,
                        beginning: flags & 2 == 0,
                        ending,
                        immediate: flags & 8 != 0,
                        user_data: Bytes::from(vec![0xab; len]),
                    }));
                }
                out
            }
            1 | 18 => {
                let (cum, rwnd_mode, ngaps, ndups) = if kind % 20 == 18 {
                    (ep_tsn, 0, 0, 0)
                } else {
                    (
                        ep_tsn.wrapping_sub(u32::from(inp.u8())),
                        inp.u8(),
                        inp.u8() % 6,
                        inp.u8() % 3,
                    )
                };
                let a_rwnd = match rwnd_mode & 3 {
                    0 => 1 << 20,
                    1 => 0,
                    2 => u32::from(inp.u16()),
                    _ => inp.u32(),
                };
                let gap_blocks = (0..ngaps)
                    .map(|_| GapAckBlock {
                        start: u16::from(inp.u8()),
                        end: u16::from(inp.u8()),
                    })
                    .collect();
                let dup_tsns = (0..ndups).map(|_| inp.u32()).collect();
                vec![Chunk::Sack(Sack {
                    cum_tsn_ack: cum,
                    a_rwnd,
                    gap_blocks,
                    dup_tsns,
                })]
            }
            2 => {
                let delta = inp.u8() as i8;
                let new_cum = f
                    .next_tsn
                    .wrapping_sub(1)
                    .wrapping_add(i32::from(delta) as u32);
                let n = inp.u8() % 4;
                let streams = (0..n)
                    .map(|_| ForwardTsnStream {
                        stream_id: u16::from(inp.u8() % 9),
                        ssn: u16::from(inp.u8()),
                    })
                    .collect();
                if tsn_gt(new_cum.wrapping_add(1), f.next_tsn) {
                    self.flow(to, ip).next_tsn = new_cum.wrapping_add(1);
                }
                vec![Chunk::ForwardTsn(ForwardTsn {
                    new_cum_tsn: new_cum,
                    streams,
                })]
            }
            3 => {
                let len = inp.u8() as usize;
                let info = Bytes::copy_from_slice(inp.bytes(len));
                vec![Chunk::Heartbeat(Heartbeat::with_info(info))]
            }
            4 => {
                let m = inp.u8();
                let info = match (m & 1, f.hb_info) {
                    (0, Some(i)) => i,
                    _ => {
                        let len = inp.u8() as usize;
                        Bytes::copy_from_slice(inp.bytes(len))
                    }
                };
                vec![Chunk::HeartbeatAck(HeartbeatAck::with_info(info))]
            }
            5 | 6 => {
                let tag = match inp.u32() {
                    0 => 0x1000 + ip_low(ip),
                    t => t,
                };
                let rw = inp.u8();
                let a_rwnd = if rw == 0 { 1 << 20 } else { u32::from(rw) << 8 };
                let os = inp.u8();
                let mis = inp.u8();
                let initial_tsn = inp.u32();
                let pf = inp.u8();
                let mut params = Vec::new();
                if pf & 1 == 0 {
                    params.push(Param::ForwardTsnSupported);
                }
                if pf & 2 != 0 {
                    let k = inp.u8() as usize % (FAKES + 2);
                    let a = if k < FAKES {
                        fake_addr(k)
                    } else {
                        real_addr(k - FAKES)
                    };
                    if let IpAddr::V4(v4) = a.ip() {
                        params.push(Param::Ipv4Address(v4));
                    }
                }
                if pf & 4 != 0 {
                    params.push(Param::CookiePreservative(inp.u32()));
                }
                if pf & 8 != 0 {
                    params.push(Param::HostNameAddress(Bytes::from_static(b"example.org\0")));
                }
                if pf & 16 != 0 {
                    let t = inp.u16();
                    let len = inp.u8() as usize;
                    params.push(Param::Unknown {
                        param_type: ParamType(t),
                        value: Bytes::copy_from_slice(inp.bytes(len)),
                    });
                }
                if pf & 32 != 0 {
                    params.push(Param::Ipv6Address(std::net::Ipv6Addr::LOCALHOST));
                }
                if pf & 64 != 0 {
                    params.push(Param::SupportedAddressTypes(vec![5, 6, 11]));
                }
                if pf & 128 != 0 {
                    // Address lists: any IPv4 (multicast, broadcast, ours, the other
                    // endpoint's second address...).
                    for _ in 0..inp.u8() % 24 {
                        let a = match inp.u8() % 4 {
                            0 => second_addr(inp.u8() as usize % 2).ip(),
                            1 => real_addr(inp.u8() as usize % 2).ip(),
                            _ => IpAddr::V4(Ipv4Addr::from(inp.u32())),
                        };
                        if let IpAddr::V4(v4) = a {
                            params.push(Param::Ipv4Address(v4));
                        }
                    }
                }
                {
                    let fl = self.flow(to, ip);
                    fl.next_tsn = initial_tsn;
                    fl.ssn = [0; 8];
                }
                let os = u16::from(os) + 1;
                let mis = u16::from(mis) + 1;
                if kind % 20 == 5 {
                    vec![Chunk::Init(Init {
                        initiate_tag: tag,
                        a_rwnd,
                        outbound_streams: os,
                        inbound_streams: mis,
                        initial_tsn,
                        params,
                    })]
                } else {
                    let len = inp.u8() as usize;
                    params.push(Param::StateCookie(Bytes::copy_from_slice(inp.bytes(len))));
                    vec![Chunk::InitAck(InitAck {
                        initiate_tag: tag,
                        a_rwnd,
                        outbound_streams: os,
                        inbound_streams: mis,
                        initial_tsn,
                        params,
                    })]
                }
            }
            7 => {
                let m = inp.u8();
                let cookie = match (m % 3, f.cookie) {
                    (0, Some(c)) => c,
                    (1, Some(c)) => {
                        let mut v = c.to_vec();
                        if !v.is_empty() {
                            let i = inp.u16() as usize % v.len();
                            v[i] ^= inp.u8() | 1;
                        }
                        Bytes::from(v)
                    }
                    _ => {
                        let len = inp.u8() as usize;
                        Bytes::copy_from_slice(inp.bytes(len))
                    }
                };
                vec![Chunk::CookieEcho(CookieEcho { cookie })]
            }
            8 => vec![Chunk::CookieAck(CookieAck)],
            9 => vec![Chunk::Shutdown(Shutdown {
                cum_tsn_ack: ep_tsn.wrapping_sub(u32::from(inp.u8())),
            })],
            10 => vec![Chunk::ShutdownAck(ShutdownAck)],
            11 => vec![Chunk::ShutdownComplete(ShutdownComplete {
                t_bit: inp.u8() & 1 != 0,
            })],
            12 | 13 => {
                let t_bit = inp.u8() & 1 != 0;
                let c = causes();
                let n = inp.u8() % 3;
                let list: Vec<ErrorCause> = (0..n)
                    .map(|_| c[inp.u8() as usize % c.len()].clone())
                    .collect();
                if kind % 20 == 12 {
                    vec![Chunk::Abort(Abort {
                        t_bit,
                        causes: list,
                    })]
                } else {
                    vec![Chunk::Error(ErrorChunk { causes: list })]
                }
            }
            14 => vec![Chunk::Pad(Pad::with_total_len(usize::from(inp.u16())))],
            15 => {
                let s = samples();
                vec![s[inp.u8() as usize % s.len()].clone()]
            }
            _ => {
                // An unknown chunk type with arbitrary flags and value.
                let t = inp.u8();
                let flags = inp.u8();
                let len = inp.u8() as usize;
                vec![Chunk::Unknown(braid_wire::RawChunk {
                    chunk_type: braid_wire::ChunkType(t),
                    flags,
                    value: Bytes::copy_from_slice(inp.bytes(len)),
                })]
            }
        }
    }

    /// I-DATA, I-FORWARD-TSN, TIMESTAMP and the SACK shapes a hostile receiver sends.
    fn build_extension_chunks(
        &mut self,
        to: usize,
        ip: IpAddr,
        kind: u8,
        ep_tsn: u32,
        inp: &mut Input,
    ) -> Vec<Chunk> {
        match kind % 8 {
            0 | 1 => {
                // I-DATA with the flow's TSNs and a message id near the stream's.
                let count = 1 + inp.u8() as usize % 16;
                let stream = u16::from(inp.u8() % 9);
                let flags = inp.u8();
                let mid = u32::from(inp.u8());
                let len = inp.u16() as usize % 2048;
                let f = self.flow(to, ip);
                (0..count as u32)
                    .map(|i| {
                        let tsn = f.next_tsn;
                        f.next_tsn = f.next_tsn.wrapping_add(1);
                        let beginning = i == 0 || flags & 2 != 0;
                        Chunk::IData(braid_wire::chunk::IData {
                            tsn,
                            stream_id: stream,
                            mid: mid.wrapping_add(if flags & 4 != 0 { i } else { 0 }),
                            ppid: if beginning { u32::from(flags >> 4) } else { 0 },
                            fsn: if beginning { 0 } else { i },
                            unordered: flags & 1 != 0,
                            beginning,
                            ending: i + 1 == count as u32 || flags & 4 != 0,
                            immediate: flags & 8 != 0,
                            user_data: Bytes::from(vec![0xcd; len]),
                        })
                    })
                    .collect()
            }
            2 => {
                // I-FORWARD-TSN with up to 256 entries (the per-entry cost the index bounds).
                let f = self.flow(to, ip);
                let delta = inp.u8() as i8;
                let new_cum = f
                    .next_tsn
                    .wrapping_sub(1)
                    .wrapping_add(i32::from(delta) as u32);
                if tsn_gt(new_cum.wrapping_add(1), f.next_tsn) {
                    f.next_tsn = new_cum.wrapping_add(1);
                }
                let n = inp.u8();
                let base = u32::from(inp.u16());
                let streams = (0..n)
                    .map(|i| braid_wire::chunk::IForwardTsnStream {
                        stream_id: u16::from(i % 9),
                        unordered: i & 1 != 0,
                        mid: base.wrapping_add(u32::from(i)),
                    })
                    .collect();
                vec![Chunk::IForwardTsn(braid_wire::chunk::IForwardTsn {
                    new_cum_tsn: new_cum,
                    streams,
                })]
            }
            3 => {
                // TIMESTAMP (Eifel) is not a `Chunk` variant: its 8 bytes raw.
                let mut value = inp.u32().to_be_bytes().to_vec();
                value.extend_from_slice(&inp.u32().to_be_bytes());
                vec![Chunk::Unknown(braid_wire::RawChunk {
                    chunk_type: braid_wire::ChunkType::TIMESTAMP,
                    flags: 0,
                    value: Bytes::from(value),
                })]
            }
            k => {
                // A frozen cumulative ack below a block at the highest TSN sent (every hole
                // in between walked, if the sender walks), alternating one-TSN blocks, or
                // the same as an NR-SACK.
                let back = u32::from(inp.u16()) + 1;
                let cum = ep_tsn.wrapping_sub(back);
                let top = back.min(u32::from(u16::MAX)) as u16;
                let gap_blocks: Vec<GapAckBlock> = if k == 5 {
                    let n = 1 + inp.u8() as u16;
                    (0..n)
                        .map(|i| GapAckBlock {
                            start: 2 + 2 * i,
                            end: 2 + 2 * i,
                        })
                        .take_while(|b| b.end <= top)
                        .collect()
                } else {
                    let len = u16::from(inp.u8());
                    vec![GapAckBlock {
                        start: top.saturating_sub(len).max(2),
                        end: top,
                    }]
                };
                let a_rwnd = inp.u32();
                if k == 6 {
                    vec![Chunk::NrSack(braid_wire::chunk::NrSack {
                        cum_tsn_ack: cum,
                        a_rwnd,
                        nr_gap_blocks: gap_blocks.clone(),
                        gap_blocks,
                        dup_tsns: Vec::new(),
                    })]
                } else {
                    vec![Chunk::Sack(Sack {
                        cum_tsn_ack: cum,
                        a_rwnd,
                        gap_blocks,
                        dup_tsns: Vec::new(),
                    })]
                }
            }
        }
    }

    fn op_relay(&mut self, inp: &mut Input) {
        let to = (inp.u8() & 1) as usize;
        let action = inp.u8();
        let arg = inp.u8();
        let from = real_addr(1 - to);
        let q = &mut self.wire[to];
        if q.is_empty() {
            return;
        }
        match action % 8 {
            0..=2 => {
                if let Some(p) = self.pop(to, 0) {
                    self.deliver(to, from, p);
                }
            }
            3 => {
                let _ = self.pop(to, 0);
            }
            4 => {
                if let Some(p) = self.wire[to].front().cloned() {
                    self.deliver(to, from, p);
                }
            }
            5 => {
                let i = arg as usize % self.wire[to].len();
                if let Some(p) = self.pop(to, i) {
                    self.deliver(to, from, p);
                }
            }
            6 => {
                if let Some(p) = self.pop(to, 0) {
                    let mut v = p.to_vec();
                    let i = inp.u16() as usize % v.len();
                    v[i] ^= arg | 1;
                    if action & 0x80 == 0 {
                        write_checksum(&mut v);
                    }
                    self.deliver(to, from, Bytes::from(v));
                }
            }
            _ => {
                // Spoofed source address.
                if let Some(p) = self.pop(to, 0) {
                    self.deliver(to, fake_addr(arg as usize % FAKES), p);
                }
            }
        }
    }

    fn pop(&mut self, to: usize, i: usize) -> Option<Bytes> {
        let p = self.wire[to].remove(i)?;
        self.wire_bytes[to] -= p.len();
        Some(p)
    }

    /// Runs the pair loss-free for some rounds.
    fn op_pump(&mut self, inp: &mut Input) {
        let rounds = 1 + inp.u8() % 64;
        let delay = Duration::from_millis(u64::from(inp.u8() % 50));
        for _ in 0..rounds {
            for to in [SERVER, CLIENT] {
                let from = real_addr(1 - to);
                while let Some(p) = self.pop(to, 0) {
                    self.deliver(to, from, p);
                }
            }
            self.drain();
            self.advance(delay);
            self.drain();
            if self.wire.iter().all(VecDeque::is_empty) && delay.is_zero() {
                break;
            }
        }
    }

    fn pick_assoc(&self, b: u8) -> (usize, Option<AssocId>) {
        let e = (b & 1) as usize;
        let ids: Vec<AssocId> = self.eps[e].associations().collect();
        let id = (!ids.is_empty()).then(|| ids[(b >> 1) as usize % ids.len()]);
        (e, id)
    }

    fn op_send(&mut self, inp: &mut Input) {
        let (e, id) = self.pick_assoc(inp.u8());
        let stream = u16::from(inp.u8() % 20);
        let len = inp.u16() as usize;
        let flags = inp.u8();
        let count = 1 + inp.u8() as usize % 64;
        let life = inp.u8();
        let Some(id) = id else { return };
        let now = self.now;
        let opts = SendOptions {
            ppid: 1,
            unordered: flags & 1 != 0,
            lifetime: (flags & 2 != 0).then(|| Duration::from_millis(u64::from(life) * 10)),
            immediate: flags & 4 != 0,
        };
        let len = match flags >> 5 {
            0 => len % 2048,
            1 => len,
            2 => len % 64,
            _ => (len % 4) * 16384,
        };
        // Bursts use messages of at least 64 bytes, so per-message bookkeeping stays within
        // the memory bound's allowance.
        let (count, len) = if len < 64 { (1, len) } else { (count, len) };
        let data = Bytes::from(vec![0x5a; len]);
        if let Some(a) = self.eps[e].association_mut(id) {
            for _ in 0..count {
                if a.send(now, stream, data.clone(), opts).is_err() {
                    break;
                }
            }
        }
    }

    fn op_app(&mut self, inp: &mut Input) {
        let b = inp.u8();
        let action = inp.u8();
        let arg = inp.u8();
        let (e, id) = self.pick_assoc(b);
        let now = self.now;
        match action % 8 {
            0 => self.paused[e] = !self.paused[e],
            1 => {
                if let Some(a) = id.and_then(|id| self.eps[e].association_mut(id)) {
                    a.shutdown(now);
                }
            }
            2 => {
                let reason = (arg & 1 != 0).then(|| Bytes::from(vec![b'x'; usize::from(arg)]));
                if let Some(a) = id.and_then(|id| self.eps[e].association_mut(id)) {
                    a.abort(now, reason);
                }
            }
            3 => {
                if let Some(id) = id {
                    let _ = self.eps[e].remove(id);
                }
            }
            4 => {
                // Forget every closed association, as a driver would.
                let closed: Vec<AssocId> = self.eps[e]
                    .associations()
                    .filter(|&i| self.eps[e].association(i).is_some_and(|a| a.is_closed()))
                    .collect();
                for i in closed {
                    let _ = self.eps[e].remove(i);
                }
            }
            5 | 6 => {
                let (remote, port) = match arg % (FAKES as u8 + 2) {
                    0 => (real_addr(1 - e), PORTS[1 - e]),
                    k if (k as usize) <= FAKES => {
                        let k = k as usize - 1;
                        (fake_addr(k), FAKE_PORT + k as u16)
                    }
                    _ => (real_addr(1 - e), 0),
                };
                let _ = self.eps[e].connect(now, real_addr(e), remote, port);
            }
            _ => {
                if let Some(a) = id.and_then(|id| self.eps[e].association(id)) {
                    let _ = (a.stats(), a.paths(), a.state(), a.close_reason());
                    for s in 0..a.outbound_streams().saturating_add(1) {
                        let _ = a.stream_buffered(s);
                    }
                }
            }
        }
    }

    /// An ICMP error about a packet endpoint `e` sent, quoting a header with the learned
    /// tag (or any), as the driver would report it (RFC 9260 Appendix C).
    fn op_icmp(&mut self, inp: &mut Input) {
        let e = inp.u8() as usize % 2;
        let k = inp.u8();
        let remote = match k % 4 {
            0 => real_addr(1 - e),
            1 => second_addr(1 - e),
            _ => fake_addr(k as usize % FAKES),
        };
        let f = self.flow(e, remote.ip()).clone();
        let m = inp.u8();
        let tag = if m & 1 == 0 { f.remote_tag } else { inp.u32() };
        let dst_port = if k % 4 < 2 {
            PORTS[1 - e]
        } else {
            FAKE_PORT + (k as u16 % 4)
        };
        let mut quoted = Vec::with_capacity(24);
        quoted.extend_from_slice(&PORTS[e].to_be_bytes());
        quoted.extend_from_slice(&dst_port.to_be_bytes());
        quoted.extend_from_slice(&tag.to_be_bytes());
        quoted.extend_from_slice(&[0; 4]);
        if m & 2 != 0 {
            // A quoted INIT (tag 0) carrying an Initiate Tag.
            quoted.extend_from_slice(&[1, 0, 0, 20]);
            quoted.extend_from_slice(&inp.u32().to_be_bytes());
        }
        let kind = match (m >> 2) % 3 {
            0 => braid_proto::IcmpError::Unreachable,
            1 => braid_proto::IcmpError::PortUnreachable,
            _ => braid_proto::IcmpError::TooBig {
                mtu: usize::from(inp.u16()),
            },
        };
        let local = real_addr(e);
        self.eps[e].handle_icmp(self.now, local, remote, &quoted, kind);
    }

    fn record(&mut self, inp: &mut Input) {
        let op = inp.u8();
        let dt = inp.u8();
        let dt = match dt {
            0 => Duration::ZERO,
            1..=100 => Duration::from_millis(u64::from(dt)),
            101..=200 => Duration::from_millis(u64::from(dt - 100) * 100),
            _ => Duration::from_secs(u64::from(dt - 200) * 10),
        };
        self.advance(dt);
        self.drain();
        match op % 16 {
            0 => self.op_raw(inp, false),
            1 | 2 => self.op_raw(inp, true),
            3 => self.op_wrap(inp),
            4..=7 => self.op_structured(inp),
            8 | 9 => self.op_relay(inp),
            10 | 11 => self.op_pump(inp),
            12 => self.op_send(inp),
            13 => self.op_app(inp),
            14 => self.op_sample(inp),
            _ => self.op_icmp(inp),
        }
        self.settle();
        if tracing_on() {
            eprintln!("record op {} ({}) at {:?}", op, op % 16, self.now);
            for (e, ep) in self.eps.iter().enumerate() {
                for id in ep.associations() {
                    if let Some(a) = ep.association(id) {
                        let p = &a.paths()[0];
                        eprintln!(
                            "  ep {e} {id:?} {:?} -> {} buffered {} flight {} cwnd {} {:?}",
                            a.state(),
                            p.remote,
                            a.send_buffered(),
                            p.flight_size,
                            p.cwnd,
                            a.stats()
                        );
                    }
                }
            }
        }
    }
}

/// `BRAID_FUZZ_TRACE=1` prints every record and the associations after it (to replay and
/// read an input: `cargo +nightly fuzz run endpoint <file>`).
fn tracing_on() -> bool {
    static T: OnceLock<bool> = OnceLock::new();
    *T.get_or_init(|| std::env::var_os("BRAID_FUZZ_TRACE").is_some())
}

fn ip_low(ip: IpAddr) -> u32 {
    match ip {
        IpAddr::V4(v) => u32::from(v.octets()[3]),
        IpAddr::V6(_) => 0,
    }
}

fuzz_target!(|data: &[u8]| {
    let _ = (samples(), causes());
    let mut inp = Input { d: data };
    let mut w = World::new(&mut inp);
    let mut records = 0;
    while !inp.is_empty() && records < 1024 {
        w.record(&mut inp);
        records += 1;
    }
});
