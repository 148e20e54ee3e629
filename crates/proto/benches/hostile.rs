//! CPU per hostile packet: the time `Endpoint::handle_datagram` (plus draining what it
//! answers) takes for one packet of each attack shape, next to a benign packet of the same
//! kind, against an established association in the state the attack needs (10,000 chunks
//! in flight for the SACK shapes). One thread, no sockets, the clock held still (a RACK
//! deadline never passes, so every SACK finds the same holes).
//!
//! `cargo bench -p braid-proto --bench hostile`. Times, so they vary with the machine:
//! compare lines of one run (the benign line is the yardstick), never assert on them.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::{Duration, Instant as WallClock};

use braid_proto::{
    AssocId, AssociationConfig, Endpoint, EndpointConfig, Instant, SendOptions, State,
};
use braid_wire::chunk::{Data, GapAckBlock, IForwardTsn, IForwardTsnStream, Init, Sack};
use braid_wire::{Chunk, ChunkType, Packet, RawChunk};
use bytes::Bytes;

const CLIENT: &str = "10.0.0.1:5000";
const SERVER: &str = "10.0.0.2:5001";

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// A client and a server endpoint with one association, packets handed over at once.
struct Pair {
    now: Instant,
    client: Endpoint,
    server: Endpoint,
    c: AssocId,
    s: Option<AssocId>,
    /// The tags each side expects: the client's local tag and the server's.
    client_tag: u32,
    server_tag: u32,
    /// Highest TSN the client sent.
    client_tsn: u32,
    buf: Vec<u8>,
    /// Bytes sent in answer per packet in the last [`Pair::time`].
    answered: f64,
    /// Client datagrams for the server's next round.
    up: VecDeque<(SocketAddr, SocketAddr, Bytes)>,
}

impl Pair {
    fn new(cfg: AssociationConfig) -> Self {
        let ep = |port, listen| {
            Endpoint::new(
                EndpointConfig {
                    port,
                    listen,
                    association: cfg.clone(),
                    ..EndpointConfig::default()
                },
                u64::from(port),
            )
        };
        let mut client = ep(5000, false);
        let server = ep(5001, true);
        let c = client
            .connect(Instant::ZERO, addr(CLIENT), addr(SERVER), 5001)
            .unwrap();
        let mut p = Self {
            now: Instant::ZERO,
            client,
            server,
            c,
            s: None,
            client_tag: 0,
            server_tag: 0,
            client_tsn: 0,
            buf: Vec::with_capacity(2048),
            up: VecDeque::new(),
            answered: 0.0,
        };
        for _ in 0..100 {
            p.round(true);
            if p.s.is_none() {
                p.s = p.server.accept();
            }
        }
        assert_eq!(
            p.client.association(c).map(|a| a.state()),
            Some(State::Established)
        );
        p
    }

    /// What the client sends now, kept for the server.
    fn take_client(&mut self) {
        while let Some(t) = self.client.poll_transmit(self.now, &mut self.buf) {
            let b = Bytes::copy_from_slice(&self.buf);
            if let Ok(pk) = Packet::decode(&b) {
                self.server_tag = pk.verification_tag;
                for ch in &pk.chunks {
                    match ch {
                        Chunk::Data(d) => self.client_tsn = d.tsn,
                        Chunk::IData(d) => self.client_tsn = d.tsn,
                        _ => {}
                    }
                }
            }
            self.up.push_back((t.local, t.remote, b));
            self.buf.clear();
        }
    }

    /// Client to server, then server to client (dropped unless `to_client`), then timers.
    /// Each datagram's answer is taken before the next, as a driver does (a SACK per two
    /// packets, and the sender refills its window after each SACK).
    fn round(&mut self, to_client: bool) {
        self.now += Duration::from_micros(100);
        self.take_client();
        let mut down = VecDeque::new();
        while let Some((from, to, b)) = self.up.pop_front() {
            self.server.handle_datagram(self.now, to, from, b);
            while let Some(t) = self.server.poll_transmit(self.now, &mut self.buf) {
                let b = Bytes::copy_from_slice(&self.buf);
                if let Ok(pk) = Packet::decode(&b) {
                    self.client_tag = pk.verification_tag;
                }
                down.push_back((t.local, t.remote, b));
                self.buf.clear();
            }
        }
        let mut next = VecDeque::new();
        if to_client {
            for (from, to, b) in down {
                self.client.handle_datagram(self.now, to, from, b);
                self.take_client();
                next.append(&mut self.up);
            }
        }
        self.up = next;
        for ep in [&mut self.client, &mut self.server] {
            ep.handle_timeout(self.now);
        }
        while self.client.poll_event().is_some() {}
        while self.server.poll_event().is_some() {}
        if let Some(a) = self.s.and_then(|s| self.server.association_mut(s)) {
            while a.recv().is_some() {}
        }
    }

    fn send(&mut self, bytes: usize, chunk: usize) {
        let a = self.client.association_mut(self.c).unwrap();
        let mut left = bytes;
        while left > 0 {
            let n = left.min(chunk);
            if a.send(
                self.now,
                0,
                Bytes::from(vec![1u8; n]),
                SendOptions::default(),
            )
            .is_err()
            {
                break;
            }
            left -= n;
        }
    }

    /// Nanoseconds per packet for `n` packets made by `make(i)`, sent to `to_client` or the
    /// server from the other side, each answer drained.
    fn time(&mut self, to_client: bool, n: usize, make: impl Fn(usize) -> Vec<u8>) -> f64 {
        let packets: Vec<Bytes> = (0..n).map(|i| Bytes::from(make(i))).collect();
        let (ep, local, from) = if to_client {
            (&mut self.client, addr(CLIENT), addr(SERVER))
        } else {
            (&mut self.server, addr(SERVER), addr(CLIENT))
        };
        // A benchmark measures the wall clock; the core never reads it.
        #[allow(clippy::disallowed_methods)]
        let t = WallClock::now();
        let mut out = 0u64;
        for p in packets {
            ep.handle_datagram(self.now, local, from, p);
            while ep.poll_transmit(self.now, &mut self.buf).is_some() {
                out += self.buf.len() as u64;
                self.buf.clear();
            }
            while ep.poll_event().is_some() {}
        }
        let ns = t.elapsed().as_nanos() as f64 / n as f64;
        self.answered = out as f64 / n as f64;
        ns
    }
}

fn packet(src: u16, dst: u16, tag: u32, chunks: Vec<Chunk>) -> Vec<u8> {
    Packet {
        src_port: src,
        dst_port: dst,
        verification_tag: tag,
        chunks,
    }
    .to_vec()
    .unwrap()
}

fn sack(cum: u32, gaps: &[(u16, u16)]) -> Chunk {
    Chunk::Sack(Sack {
        cum_tsn_ack: cum,
        a_rwnd: 1 << 30,
        gap_blocks: gaps
            .iter()
            .map(|&(start, end)| GapAckBlock { start, end })
            .collect(),
        dup_tsns: vec![],
    })
}

fn row(name: &str, ns: f64, answered: f64) {
    println!(
        "{name:<62} {:>10.0} ns  {:>9.0}/s  {:>9.0} B",
        ns,
        1e9 / ns,
        answered
    );
}

/// A sender with 10,000 chunks in flight (the peer's SACKs withheld), and SACKs about them.
fn sack_shapes(n: usize) {
    let cfg = AssociationConfig {
        send_buffer: 64 << 20,
        recv_buffer: 64 << 20,
        // Whole windows per round, so the window grows in the loop's zero-delay rounds.
        max_burst: 100_000,
        // RFC 9260 slow start (no HyStart++): the window opens to 10,000 chunks quickly.
        cc: braid_proto::CongestionControl::Reno,
        hb_interval: None,
        ..AssociationConfig::default()
    };
    let mut p = Pair::new(cfg);
    // Grow the window: a transfer with SACKs delivered.
    for _ in 0..20 {
        p.send(32 << 20, 1024);
        for _ in 0..200 {
            p.round(true);
        }
    }
    let first = p.client_tsn.wrapping_add(1);
    // 10,000 more chunks, their SACKs withheld.
    p.send(10_000 * 1000, 1000);
    for _ in 0..200 {
        p.round(false);
    }
    let top = p.client_tsn;
    let outstanding = top.wrapping_sub(first) + 1;
    println!(
        "sender: {outstanding} chunks in flight (cwnd-limited), cumulative ack frozen below them"
    );
    let cum = first.wrapping_sub(1);
    let hi = u16::try_from(outstanding).unwrap_or(u16::MAX);
    let tag = p.client_tag;
    let mk = |chunk: Chunk| packet(5001, 5000, tag, vec![chunk]);
    let plain = p.time(true, n, |_| mk(sack(cum, &[])));
    row(
        "SACK, frozen cumulative ack, no blocks (benign shape)",
        plain,
        p.answered,
    );
    let top_block = p.time(true, n, |_| mk(sack(cum, &[(hi, hi)])));
    row(
        "SACK, frozen cumulative ack, one block at the highest TSN",
        top_block,
        p.answered,
    );
    let many = p.time(true, n, |_| {
        let blocks: Vec<(u16, u16)> = (0..100).map(|k| (hi - 2 * k, hi - 2 * k)).collect();
        mk(sack(cum, &blocks))
    });
    row(
        "SACK, frozen cumulative ack, 100 one-TSN blocks at the top",
        many,
        p.answered,
    );
    let growing = p.time(true, n.min(5_000), |i| {
        let lo = hi - 1 - (i as u16 % (hi - 3));
        mk(sack(cum, &[(lo, hi)]))
    });
    row(
        "SACK newly acknowledging one more TSN below its block",
        growing,
        p.answered,
    );
    let renege = p.time(true, n.min(200), |i| {
        let b: &[(u16, u16)] = if i % 2 == 0 { &[(2, hi)] } else { &[(hi, hi)] };
        mk(sack(cum, b))
    });
    row(
        "SACK alternating a block over the window and one TSN (renege)",
        renege,
        p.answered,
    );
}

/// A receiver with I-DATA, and I-FORWARD-TSN chunks of 8,000 entries.
fn iforward(n: usize) {
    let cfg = AssociationConfig {
        idata: true,
        hb_interval: None,
        ..AssociationConfig::default()
    };
    let mut p = Pair::new(cfg);
    p.send(100_000, 1000);
    for _ in 0..100 {
        p.round(true);
    }
    let (tag, cum) = (p.server_tag, p.client_tsn);
    let entries: Vec<IForwardTsnStream> = (0..8_000u32)
        .map(|i| IForwardTsnStream {
            stream_id: 0,
            unordered: i % 2 == 1,
            mid: 0,
        })
        .collect();
    let ns = p.time(false, n, |_| {
        packet(
            5000,
            5001,
            tag,
            vec![Chunk::IForwardTsn(IForwardTsn {
                new_cum_tsn: cum,
                streams: entries.clone(),
            })],
        )
    });
    row("I-FORWARD-TSN of 8,000 entries (64 KiB)", ns, p.answered);
}

/// Unknown chunks that ask for an ERROR report, and INITs from changing sources.
fn misc(n: usize) {
    let cfg = AssociationConfig {
        hb_interval: None,
        ..AssociationConfig::default()
    };
    let mut p = Pair::new(cfg);
    let tag = p.server_tag;
    let unknown = p.time(false, n, |_| {
        packet(
            5000,
            5001,
            tag,
            vec![Chunk::Unknown(RawChunk {
                chunk_type: ChunkType(0xbf),
                flags: 0,
                value: Bytes::from(vec![0u8; 1200]),
            })],
        )
    });
    row(
        "unknown chunk of 1,200 bytes asking for a report",
        unknown,
        p.answered,
    );
    // DATA at every other TSN above the cumulative TSN, in a shuffled order: every chunk
    // opens a gap, most in the middle of the list of received ranges.
    let cum = p.client_tsn;
    let k = n.min(8_000);
    let mut order: Vec<u32> = (1..=k as u32).collect();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in (1..order.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        order.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let data = p.time(false, k, |i| {
        packet(
            5000,
            5001,
            tag,
            vec![Chunk::Data(Data {
                tsn: cum.wrapping_add(2 * order[i]),
                stream_id: 0,
                ssn: 0,
                ppid: 0,
                unordered: true,
                beginning: true,
                ending: true,
                immediate: false,
                user_data: Bytes::from_static(b"x"),
            })],
        )
    });
    row(
        "DATA of 1 byte at every other TSN, shuffled (8,000 gaps)",
        data,
        p.answered,
    );
    let init = p.time(false, n, |i| {
        packet(
            10_000 + (i % 50_000) as u16,
            5001,
            0,
            vec![Chunk::Init(Init {
                initiate_tag: 1 + i as u32,
                a_rwnd: 1 << 16,
                outbound_streams: 10,
                inbound_streams: 10,
                initial_tsn: 1,
                params: vec![],
            })],
        )
    });
    row(
        "INIT (answered or refused by the INIT budget)",
        init,
        p.answered,
    );
}

fn main() {
    // `cargo test --benches` runs benchmarks without `--bench`: stay short then.
    let n = if std::env::args().any(|a| a == "--bench") {
        20_000
    } else {
        200
    };
    println!(
        "{:<62} {:>13}  {:>11}  {:>11}",
        "packet", "CPU/packet", "packets/s", "sent/packet"
    );
    sack_shapes(n);
    iforward(n);
    misc(n);
}
