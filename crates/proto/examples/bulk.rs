//! Loss-free in-memory bulk transfer between two `braid-proto` endpoints in one thread: no
//! sockets, packets handed over through a queue with zero delay, a virtual clock that moves
//! 10 µs per round. It prints the payload throughput per core (both endpoints share this
//! one core), and is the program to profile the core's data path with.
//!
//! ```sh
//! cargo run --release -p braid-proto --example bulk -- \
//!     [MB] [message bytes] [path MTU] [paths] [by path] [delay]
//! ```
//!
//! Defaults: 256 MB of 1452-byte messages with a 1500-byte path MTU over one path. Over IPv4
//! and UDP that leaves 1444 bytes of user data per DATA chunk, so a 1452-byte message takes
//! two chunks; a path MTU of 1508 fits it in one. With 2 paths both ends have two addresses
//! and run CMT; the packets of both paths are handed over in the order they were sent, so
//! the difference to one path is the protocol's own cost of CMT; a fifth argument of 1
//! hands each round's packets over path by path instead (the reordering of a driver that
//! reads one socket after the other); a sixth, a one-way delay in rounds of 10 µs (default
//! 0: the next round), lets the windows grow as on a real path. The benchmark
//! `benches/bulk.rs` reuses this file.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use braid_proto::{
    AssocId, AssociationConfig, Endpoint, EndpointConfig, Instant, SendError, SendOptions,
};
use bytes::{Bytes, BytesMut};

/// Virtual time per round of the loop.
const TICK: Duration = Duration::from_micros(10);

/// Association settings: RFC defaults but 4 MiB buffers, so the windows never limit; CMT
/// if there is more than one path.
pub(crate) fn config(path_mtu: usize, paths: usize) -> AssociationConfig {
    AssociationConfig {
        send_buffer: 4 << 20,
        recv_buffer: 4 << 20,
        path_mtu,
        cmt: (paths > 1).then(braid_proto::CmtConfig::default),
        ..AssociationConfig::default()
    }
}

/// A datagram in flight: when it arrives, its bytes, source and destination.
type Datagram = (Instant, Bytes, SocketAddr, SocketAddr);

/// Two connected endpoints and the packets between them.
pub(crate) struct Bulk {
    now: Instant,
    client: Endpoint,
    server: Endpoint,
    c: AssocId,
    s: AssocId,
    buf: Vec<u8>,
    arena: BytesMut,
    to_server: VecDeque<Datagram>,
    to_client: VecDeque<Datagram>,
    /// Hand over each round's packets path by path (as a driver that reads one socket
    /// after the other would), not in the order they were sent.
    pub(crate) by_path: bool,
    /// One-way delay of every packet (zero: the next round).
    pub(crate) delay: Duration,
    /// Extra one-way delay of the data packets on the second path (10.1.0.x): the
    /// receiver then sees the paths' TSNs interleave, as on paths of unequal delay.
    pub(crate) skew: Duration,
    /// A counting allocator's count of allocations so far, if the program has one: the
    /// receiver's packet building and the sender's processing of its packets (SACKs: the
    /// receiver sends nothing else) are then counted in `acks`.
    pub(crate) allocations: Option<fn() -> u64>,
    /// What `allocations` counted.
    pub(crate) acks: AckAllocations,
}

/// A counting allocator's reading and where to add what it counts.
type AllocCount<'a> = (fn() -> u64, &'a mut AckAllocations);

/// Heap allocations around the acknowledgements of a transfer.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct AckAllocations {
    /// Packets the receiver built (SACKs).
    pub(crate) built: u64,
    /// Allocations while building them (`poll_transmit`).
    pub(crate) build: u64,
    /// Packets the sender processed from the receiver.
    pub(crate) processed: u64,
    /// Allocations while processing them (`handle_datagram`).
    pub(crate) process: u64,
    /// Gap ack blocks the built SACKs and NR-SACKs carried.
    pub(crate) gap_blocks: u64,
    /// Of the packets built, those with gap blocks, and the allocations building them.
    pub(crate) built_with_gaps: u64,
    pub(crate) build_with_gaps: u64,
    /// Of the packets processed, those with gap blocks, and the allocations processing them.
    pub(crate) processed_with_gaps: u64,
    pub(crate) process_with_gaps: u64,
}

impl Bulk {
    /// A client and a server with an established association over `paths` address pairs
    /// (10.i.0.1 - 10.i.0.2), every path confirmed.
    pub(crate) fn connected(cfg: AssociationConfig, paths: usize) -> Self {
        let addrs = |host: u8| -> Vec<SocketAddr> {
            (0..paths)
                .map(|i| ([10, i as u8, 0, host], 9899).into())
                .collect()
        };
        let (client_addrs, server_addrs) = (addrs(1), addrs(2));
        let mut client = Endpoint::new(
            EndpointConfig {
                port: 5000,
                association: cfg.clone(),
                ..EndpointConfig::default()
            },
            1,
        );
        let server = Endpoint::new(
            EndpointConfig {
                port: 5001,
                listen: true,
                association: cfg,
                ..EndpointConfig::default()
            },
            2,
        );
        let mut server = server;
        client.set_local_addresses(client_addrs.clone());
        server.set_local_addresses(server_addrs.clone());
        let now = Instant::ZERO;
        let c = client
            .connect(now, client_addrs[0], server_addrs[0], 5001)
            .expect("connect");
        let mut b = Self {
            now,
            client,
            server,
            c,
            s: AssocId(u32::MAX),
            buf: Vec::with_capacity(2048),
            arena: BytesMut::new(),
            to_server: VecDeque::new(),
            to_client: VecDeque::new(),
            by_path: false,
            delay: Duration::ZERO,
            skew: Duration::ZERO,
            allocations: None,
            acks: AckAllocations::default(),
        };
        for _ in 0..1000 {
            b.round();
            if let Some(s) = b.server.accept() {
                b.s = s;
            }
            let up = b.client.association(c).is_some_and(|a| {
                a.state() == braid_proto::State::Established
                    && a.paths().iter().filter(|p| p.confirmed).count() == paths
            });
            if up && b.s != AssocId(u32::MAX) {
                while b.client.poll_event().is_some() {}
                while b.server.poll_event().is_some() {}
                return b;
            }
        }
        panic!("handshake did not complete");
    }

    /// Client → server, then server → client, then timers: one round of the loop.
    fn round(&mut self) {
        self.now += TICK;
        for a in [&mut self.client, &mut self.server] {
            if a.poll_timeout().is_some_and(|t| t <= self.now) {
                a.handle_timeout(self.now);
            }
        }
        let (now, due) = (self.now, self.now + self.delay);
        flush(
            &mut self.client,
            (now, due),
            &mut self.buf,
            &mut self.arena,
            &mut self.to_server,
            None,
        );
        if !self.skew.is_zero() {
            for d in self.to_server.iter_mut() {
                if d.0 == due && matches!(d.3.ip(), std::net::IpAddr::V4(a) if a.octets()[1] == 1) {
                    d.0 += self.skew;
                }
            }
            // Stable: each path's packets stay in their order.
            self.to_server.make_contiguous().sort_by_key(|d| d.0);
        }
        let ready = arrived(&mut self.to_server, now, self.by_path);
        for (_, p, from, to) in self.to_server.drain(..ready) {
            self.server.handle_datagram(now, to, from, p);
        }
        let count = self.allocations.map(|f| (f, &mut self.acks));
        flush(
            &mut self.server,
            (now, due),
            &mut self.buf,
            &mut self.arena,
            &mut self.to_client,
            count,
        );
        let ready = arrived(&mut self.to_client, now, false);
        for (_, p, from, to) in self.to_client.drain(..ready) {
            let gaps = self.allocations.is_some() && gap_blocks(&p) > 0;
            let before = self.allocations.map(|f| f());
            self.client.handle_datagram(now, to, from, p);
            if let (Some(f), Some(b)) = (self.allocations, before) {
                let n = f() - b;
                self.acks.process += n;
                self.acks.processed += 1;
                if gaps {
                    self.acks.process_with_gaps += n;
                    self.acks.processed_with_gaps += 1;
                }
            }
        }
    }

    /// Sends `total` bytes of `msg`-sized messages on stream 0 with a saturated sender and
    /// a receiver that reads everything each round. Returns the payload bytes received.
    pub(crate) fn transfer(&mut self, total: u64, msg: &Bytes) -> u64 {
        let (mut sent, mut got) = (0u64, 0u64);
        let mut rounds = 0u64;
        while got < total {
            let now = self.now;
            let client = self.client.association_mut(self.c).expect("client assoc");
            while sent < total {
                match client.send(now, 0, msg.clone(), SendOptions::default()) {
                    Ok(()) => sent += msg.len() as u64,
                    Err(SendError::WouldBlock) => break,
                    Err(e) => panic!("send: {e}"),
                }
            }
            self.round();
            let server = self.server.association_mut(self.s).expect("server assoc");
            while let Some(m) = server.recv() {
                got += m.data.len() as u64;
            }
            while self.client.poll_event().is_some() {}
            while self.server.poll_event().is_some() {}
            rounds += 1;
            assert!(rounds < 1 << 32, "transfer stalled");
        }
        got
    }
}

/// Drains an endpoint's packets into `queue` (counting the allocations of its
/// `poll_transmit` calls into `count`, if given). Each datagram is copied once, as a socket
/// receive would, into a 64 KiB arena it is then split from, as an efficient driver does
/// (one allocation per ~44 datagrams, and slicing a datagram is a reference count, not an
/// allocation as it is for a `Bytes` made from a `Vec`).
fn flush(
    ep: &mut Endpoint,
    (now, due): (Instant, Instant),
    buf: &mut Vec<u8>,
    arena: &mut BytesMut,
    queue: &mut VecDeque<Datagram>,
    mut count: Option<AllocCount<'_>>,
) {
    loop {
        buf.clear();
        let before = count.as_ref().map(|(f, _)| f());
        let polled = ep.poll_transmit(now, buf);
        if let (Some((f, acks)), Some(b)) = (count.as_mut(), before) {
            let n = f() - b;
            acks.build += n;
            acks.built += u64::from(polled.is_some());
            let gaps = gap_blocks(buf);
            acks.gap_blocks += gaps;
            if gaps > 0 {
                acks.build_with_gaps += n;
                acks.built_with_gaps += 1;
            }
        }
        let Some(t) = polled else {
            return;
        };
        if arena.capacity() < buf.len() {
            *arena = BytesMut::with_capacity(64 * 1024);
        }
        arena.extend_from_slice(buf);
        queue.push_back((due, arena.split().freeze(), t.local, t.remote));
    }
}

/// Gap ack blocks of the SACK and NR-SACK chunks in `packet`.
fn gap_blocks(packet: &[u8]) -> u64 {
    let Ok(p) = braid_wire::Packet::decode(&Bytes::copy_from_slice(packet)) else {
        return 0;
    };
    p.chunks
        .iter()
        .map(|c| match c {
            braid_wire::Chunk::Sack(s) => s.gap_blocks.len() as u64,
            braid_wire::Chunk::NrSack(s) => s.gap_blocks.len() as u64,
            _ => 0,
        })
        .sum()
}

/// How many datagrams at the front of `queue` have arrived by `now`; `by_path`: sorts them
/// by destination first (stable: each path's stay in their order).
fn arrived(queue: &mut VecDeque<Datagram>, now: Instant, by_path: bool) -> usize {
    let ready = queue.iter().take_while(|d| d.0 <= now).count();
    if by_path {
        queue.make_contiguous()[..ready].sort_by_key(|d| d.3);
    }
    ready
}

/// A message of `len` bytes.
pub(crate) fn message(len: usize) -> Bytes {
    Bytes::from((0..len).map(|i| i as u8).collect::<Vec<u8>>())
}

#[allow(dead_code)] // Unused when this file is a module of the benchmark.
fn main() {
    let mut args = std::env::args().skip(1);
    let mut arg = |default: usize| -> usize {
        args.next()
            .map(|a| {
                a.parse()
                    .expect("arguments: [MB] [message bytes] [path MTU] [paths] [by path] [delay]")
            })
            .unwrap_or(default)
    };
    let mb = arg(256);
    let size = arg(1452);
    let mtu = arg(1500);
    let paths = arg(1).max(1);
    let total = mb as u64 * 1_000_000;
    let mut bulk = Bulk::connected(config(mtu, paths), paths);
    bulk.by_path = arg(0) == 1;
    bulk.delay = TICK * arg(0) as u32;
    let msg = message(size);
    // Wall-clock time of the benchmark itself, not an input of the core.
    #[allow(clippy::disallowed_methods)]
    let start = std::time::Instant::now();
    let got = bulk.transfer(total, &msg);
    let secs = start.elapsed().as_secs_f64();
    let gbps = got as f64 * 8.0 / secs / 1e9;
    let stats = bulk
        .client
        .association(bulk.c)
        .map(|a| a.paths())
        .unwrap_or_default();
    println!(
        "{mb} MB of {size}-byte messages, path MTU {mtu}, {paths} path(s): {secs:.3} s, \
         {gbps:.3} Gbit/s per core ({:.0} messages/s)",
        got as f64 / size as f64 / secs
    );
    for p in stats {
        println!(
            "client path {}: {} packets, {} DATA chunks, {} retransmissions, cwnd {}",
            p.remote,
            p.stats.packets_sent,
            p.stats.data_chunks_sent,
            p.stats.retransmissions,
            p.cwnd
        );
    }
}
