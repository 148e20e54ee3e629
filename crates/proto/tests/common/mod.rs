//! An in-memory pair harness: two endpoints, a virtual clock, and a deterministic seeded
//! wire that can drop, duplicate, delay and reorder datagrams in each direction.
#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::type_complexity
)]

pub mod multihome;
pub mod script;
pub mod traffic;

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::net::SocketAddr;
use std::time::Duration;

use braid_proto::{AssocId, AssociationConfig, Endpoint, EndpointConfig, Event, Instant};
use bytes::Bytes;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Impairments of one direction.
#[derive(Debug, Clone)]
pub struct Wire {
    /// One-way delay.
    pub delay: Duration,
    /// Probability a datagram is lost.
    pub loss: f64,
    /// Probability a datagram is delivered twice.
    pub duplicate: f64,
    /// Probability a datagram is held back by up to `reorder_delay` (so later ones pass it).
    pub reorder: f64,
    /// How long a reordered datagram is held at most.
    pub reorder_delay: Duration,
}

impl Default for Wire {
    fn default() -> Self {
        Self {
            delay: Duration::from_millis(10),
            loss: 0.0,
            duplicate: 0.0,
            reorder: 0.0,
            reorder_delay: Duration::from_millis(5),
        }
    }
}

impl Wire {
    /// A lossy, duplicating, reordering wire.
    pub fn hostile(loss: f64, duplicate: f64, reorder: f64) -> Self {
        Self {
            loss,
            duplicate,
            reorder,
            ..Self::default()
        }
    }
}

/// Which way a datagram travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Dir {
    /// Client to server.
    ToServer,
    /// Server to client.
    ToClient,
}

/// A datagram put on the wire (before impairment), for packet-level checks.
#[derive(Debug, Clone)]
pub struct Logged {
    pub at: Instant,
    pub dir: Dir,
    /// Index of the path it took (the index of its destination among the receiver's
    /// addresses; 0 for a single-homed pair).
    pub path: usize,
    pub bytes: Bytes,
}

/// The seed a test asked for, moved by `BRAID_SEED` when set: `BRAID_SEED=7 cargo test -p
/// braid-proto` runs every seeded endpoint of these harnesses with other seeds (verification
/// tags, initial TSNs, timer jitter, the wire's losses), to see which tests hold only for the
/// seed they were written with. Tests that compare two seeds still get two different ones.
pub fn seed_or_env(seed: u64) -> u64 {
    std::env::var("BRAID_SEED")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .map_or(seed, |e| seed ^ e.wrapping_mul(0x9e37_79b9_7f4a_7c15))
}

/// Two endpoints joined by two wires (or, multi-homed, by two wires per path).
pub struct Pair {
    pub now: Instant,
    pub client: Endpoint,
    pub server: Endpoint,
    pub client_addr: SocketAddr,
    pub server_addr: SocketAddr,
    pub to_server: Wire,
    pub to_client: Wire,
    rng: ChaCha8Rng,
    queue: BinaryHeap<Reverse<(Instant, u64, Dir, SocketAddr, SocketAddr, Vec<u8>)>>,
    seq: u64,
    /// Every datagram put on either wire (before impairment), for packet-level checks.
    pub log: Vec<Logged>,
    /// Multi-homed pairs: the client's and the server's addresses, path i being the i-th
    /// of each (empty: single-homed, `client_addr` and `server_addr`).
    pub client_addrs: Vec<SocketAddr>,
    pub server_addrs: Vec<SocketAddr>,
    /// Multi-homed pairs: (to server, to client) wires of each path; they replace
    /// `to_server` and `to_client`.
    pub path_wires: Vec<(Wire, Wire)>,
    pub keep_log: bool,
    buf: Vec<u8>,
    /// Events seen, per side.
    pub client_events: Vec<(AssocId, Event)>,
    pub server_events: Vec<(AssocId, Event)>,
}

impl Pair {
    /// A client and a listening server with these association settings, and a seed.
    pub fn new(cfg: AssociationConfig, seed: u64) -> Self {
        Self::new_with(cfg.clone(), cfg, seed)
    }

    /// A client and a listening server, each with its own association settings.
    pub fn new_with(client_cfg: AssociationConfig, cfg: AssociationConfig, seed: u64) -> Self {
        let seed = seed_or_env(seed);
        let client = Endpoint::new(
            EndpointConfig {
                port: 5000,
                association: client_cfg,
                ..Default::default()
            },
            seed ^ 0xc11e,
        );
        let server = Endpoint::new(
            EndpointConfig {
                port: 5001,
                listen: true,
                association: cfg,
                ..Default::default()
            },
            seed ^ 0x5e7,
        );
        Self {
            now: Instant::ZERO,
            client,
            server,
            client_addr: "10.0.0.1:9899".parse().unwrap(),
            server_addr: "10.0.0.2:9899".parse().unwrap(),
            to_server: Wire::default(),
            to_client: Wire::default(),
            rng: ChaCha8Rng::seed_from_u64(seed),
            queue: BinaryHeap::new(),
            seq: 0,
            log: Vec::new(),
            client_addrs: Vec::new(),
            server_addrs: Vec::new(),
            path_wires: Vec::new(),
            keep_log: false,
            buf: Vec::with_capacity(2048),
            client_events: Vec::new(),
            server_events: Vec::new(),
        }
    }

    /// A pair whose endpoints have `paths` addresses each, 10.i.0.1 (client) and 10.i.0.2
    /// (server) for path i, every path with a default wire each way.
    pub fn multihomed(cfg: AssociationConfig, paths: usize, seed: u64) -> Self {
        Self::multihomed_with(cfg.clone(), cfg, paths, seed)
    }

    /// A [`Pair::multihomed`] pair, connected, with every client path confirmed and active;
    /// the client's and the server's association ids.
    pub fn multihomed_up(
        cfg: AssociationConfig,
        paths: usize,
        seed: u64,
    ) -> (Self, AssocId, AssocId) {
        let mut p = Self::multihomed(cfg, paths, seed);
        let (c, s) = p.connect();
        let deadline = p.now + Duration::from_secs(30);
        let up = p.run_until(deadline, |p| {
            let ps = p.client.association(c).unwrap().paths();
            ps.len() == paths
                && ps
                    .iter()
                    .all(|x| x.confirmed && x.state == braid_proto::PathState::Active)
        });
        assert!(up, "paths not confirmed");
        (p, c, s)
    }

    /// [`Pair::multihomed`] with the client's and the server's own settings.
    pub fn multihomed_with(
        client_cfg: AssociationConfig,
        cfg: AssociationConfig,
        paths: usize,
        seed: u64,
    ) -> Self {
        let mut p = Self::new_with(client_cfg, cfg, seed);
        let addrs = |host: u8| -> Vec<SocketAddr> {
            (1..=paths)
                .map(|i| ([10, i as u8, 0, host], 9899).into())
                .collect()
        };
        p.client_addrs = addrs(1);
        p.server_addrs = addrs(2);
        p.client_addr = p.client_addrs[0];
        p.server_addr = p.server_addrs[0];
        p.client.set_local_addresses(p.client_addrs.clone());
        p.server.set_local_addresses(p.server_addrs.clone());
        p.path_wires = vec![(Wire::default(), Wire::default()); paths];
        p
    }

    /// The path a datagram to `to` takes: the index of `to` among the receiver's addresses.
    fn path_of(&self, dir: Dir, to: SocketAddr) -> usize {
        let addrs = match dir {
            Dir::ToServer => &self.server_addrs,
            Dir::ToClient => &self.client_addrs,
        };
        addrs.iter().position(|a| a.ip() == to.ip()).unwrap_or(0)
    }

    /// Both wires of path `i` lose everything (`down`) or nothing.
    pub fn set_path_down(&mut self, i: usize, down: bool) {
        let loss = if down { 1.0 } else { 0.0 };
        self.path_wires[i].0.loss = loss;
        self.path_wires[i].1.loss = loss;
    }

    /// Starts an association from the client and runs until both sides are connected.
    pub fn connect(&mut self) -> (AssocId, AssocId) {
        let c = self
            .client
            .connect(self.now, self.client_addr, self.server_addr, 5001)
            .unwrap();
        let deadline = self.now + Duration::from_secs(120);
        let mut server_id = None;
        self.run_until(deadline, |p| {
            if server_id.is_none() {
                server_id = p.server.accept();
            }
            let client_up = p
                .client_events
                .iter()
                .any(|(id, e)| *id == c && *e == Event::Connected);
            client_up && server_id.is_some()
        });
        (c, server_id.expect("server accepted no association"))
    }

    fn flush(&mut self) {
        for dir in [Dir::ToServer, Dir::ToClient] {
            loop {
                self.buf.clear();
                let ep = match dir {
                    Dir::ToServer => &mut self.client,
                    Dir::ToClient => &mut self.server,
                };
                let Some(t) = ep.poll_transmit(self.now, &mut self.buf) else {
                    break;
                };
                let bytes = self.buf[..t.size].to_vec();
                let (from, to) = if self.path_wires.is_empty() {
                    match dir {
                        Dir::ToServer => (self.client_addr, self.server_addr),
                        Dir::ToClient => (self.server_addr, self.client_addr),
                    }
                } else {
                    (t.local, t.remote)
                };
                self.send(dir, from, to, bytes);
            }
        }
        while let Some(e) = self.client.poll_event() {
            self.client_events.push(e);
        }
        while let Some(e) = self.server.poll_event() {
            self.server_events.push(e);
        }
    }

    fn send(&mut self, dir: Dir, from: SocketAddr, to: SocketAddr, bytes: Vec<u8>) {
        let path = self.path_of(dir, to);
        if self.keep_log {
            self.log.push(Logged {
                at: self.now,
                dir,
                path,
                bytes: Bytes::from(bytes.clone()),
            });
        }
        let w = match (dir, self.path_wires.get(path)) {
            (Dir::ToServer, Some(w)) => w.0.clone(),
            (Dir::ToClient, Some(w)) => w.1.clone(),
            (Dir::ToServer, None) => self.to_server.clone(),
            (Dir::ToClient, None) => self.to_client.clone(),
        };
        if self.rng.random_bool(w.loss) {
            return;
        }
        let copies = if self.rng.random_bool(w.duplicate) {
            2
        } else {
            1
        };
        for _ in 0..copies {
            let mut at = self.now + w.delay;
            if self.rng.random_bool(w.reorder) {
                let extra = self
                    .rng
                    .random_range(0..=w.reorder_delay.as_micros() as u64);
                at += Duration::from_micros(extra);
            }
            self.seq += 1;
            self.queue
                .push(Reverse((at, self.seq, dir, from, to, bytes.clone())));
        }
    }

    /// Injects a raw datagram as if it came over the wire now.
    pub fn inject(&mut self, dir: Dir, bytes: Vec<u8>) {
        let (from, to) = match dir {
            Dir::ToServer => (self.client_addr, self.server_addr),
            Dir::ToClient => (self.server_addr, self.client_addr),
        };
        self.deliver(dir, from, to, Bytes::from(bytes));
        self.flush();
    }

    fn deliver(&mut self, dir: Dir, from: SocketAddr, to: SocketAddr, bytes: Bytes) {
        match dir {
            Dir::ToServer => {
                self.server.handle_datagram(self.now, to, from, bytes);
            }
            Dir::ToClient => {
                self.client.handle_datagram(self.now, to, from, bytes);
            }
        }
    }

    /// Advances to the next event (a delivery or a timer) and processes it. Returns false
    /// when nothing at all is pending.
    pub fn step(&mut self) -> bool {
        self.flush();
        let next_packet = self.queue.peek().map(|Reverse((t, ..))| *t);
        let next_timer = [self.client.poll_timeout(), self.server.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        let next = match (next_packet, next_timer) {
            (None, None) => return false,
            (Some(a), None) => a,
            (None, Some(b)) => b,
            (Some(a), Some(b)) => a.min(b),
        };
        self.now = self.now.max(next);
        while let Some(Reverse((t, ..))) = self.queue.peek() {
            if *t > self.now {
                break;
            }
            let Some(Reverse((_, _, dir, from, to, bytes))) = self.queue.pop() else {
                break;
            };
            self.deliver(dir, from, to, Bytes::from(bytes));
        }
        self.client.handle_timeout(self.now);
        self.server.handle_timeout(self.now);
        // The core's contract (timer.rs): no timer is left due at the instant it ran.
        for ep in [&mut self.client, &mut self.server] {
            let next = ep.poll_timeout();
            assert!(
                next.is_none_or(|t| t > self.now),
                "timer left due: {next:?}"
            );
        }
        self.flush();
        true
    }

    /// Steps until `done` holds or the virtual clock passes `deadline`. Returns `done`.
    pub fn run_until(
        &mut self,
        deadline: Instant,
        mut done: impl FnMut(&mut Self) -> bool,
    ) -> bool {
        loop {
            if done(self) {
                return true;
            }
            if self.now > deadline || !self.step() {
                return done(self);
            }
        }
    }

    /// Runs for `d` of virtual time.
    pub fn run_for(&mut self, d: Duration) {
        let end = self.now + d;
        self.run_until(end, |p| p.now >= end);
    }
}
