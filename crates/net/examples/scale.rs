//! Scale benchmark: an endpoint with many associations.
//!
//! ```text
//! cargo run --release -p braid-net --example scale -- [ASSOCS] [IDLE] [MIB]
//! ```
//!
//! 1. Memory: ASSOCS (default 10000) associations set up in memory (no sockets) against one
//!    `braid_proto::Endpoint`; a counting allocator reports the server endpoint's live heap
//!    per idle association.
//! 2. Setup on loopback: a `braid-net` server on 127.0.0.1 and ASSOCS client associations
//!    (sans-IO endpoints with their own SCTP ports behind one UDP socket, driven by a thread
//!    of this program); the time until every one is established.
//! 3. Goodput with idle associations: MIB (default 200) MiB, verified, from a `braid-net`
//!    client to the same server, first with no other association, then with IDLE (default
//!    1000) idle ones present; the ratio of the two, measured side by side in one run.
#![allow(clippy::unwrap_used, clippy::print_stdout, missing_docs)]
#![expect(
    clippy::disallowed_methods,
    reason = "a benchmark reads the wall clock to measure"
)]

use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant as WallClock};

use braid_net::{AssociationConfig, Endpoint, EndpointConfig, SendOptions};
use braid_proto::{Event, Instant};
use bytes::Bytes;

/// Resident set size of this process, bytes (Linux /proc).
fn rss() -> usize {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<usize>().ok())
        .unwrap_or(0)
        * 1024
}

fn server_config(n: usize) -> EndpointConfig {
    EndpointConfig {
        listen: true,
        max_associations: n + 16,
        max_associations_per_source: n + 16,
        max_associations_per_prefix: n + 16,
        ootb_burst: 1_000_000,
        ootb_rate: 1_000_000,
        init_answer_rate: 1_000_000,
        init_answer_bytes: u32::MAX,
        ..EndpointConfig::default()
    }
}

fn client_config(port: u16) -> braid_proto::EndpointConfig {
    braid_proto::EndpointConfig {
        port,
        ..braid_proto::EndpointConfig::default()
    }
}

/// Part 1: memory of the server endpoint per idle association (in memory, no sockets): the
/// growth of the resident set while it takes `n` associations, each client endpoint freed
/// before the next is made, so the figure is the server's plus allocator overhead (an upper
/// bound).
fn memory(n: usize) -> f64 {
    let server_addr: SocketAddr = "10.0.0.1:9899".parse().unwrap();
    let client_addr: SocketAddr = "10.0.0.2:9899".parse().unwrap();
    let mut server = braid_proto::Endpoint::new(server_config(n), 1);
    let base = rss();
    let now = Instant::ZERO;
    let mut buf = Vec::new();
    for i in 0..n {
        let mut c = braid_proto::Endpoint::new(client_config(10_000 + i as u16), i as u64);
        c.connect(now, client_addr, server_addr, 5001).unwrap();
        // INIT, INIT-ACK, COOKIE-ECHO, COOKIE-ACK, then whatever follows, until quiet.
        for _ in 0..4 {
            let mut any = false;
            while let Some(t) = c.poll_transmit(now, &mut buf) {
                let b = Bytes::copy_from_slice(&buf[..t.size]);
                buf.clear();
                server.handle_datagram(now, server_addr, client_addr, b);
                any = true;
            }
            while let Some(t) = server.poll_transmit(now, &mut buf) {
                let b = Bytes::copy_from_slice(&buf[..t.size]);
                buf.clear();
                c.handle_datagram(now, client_addr, server_addr, b);
                any = true;
            }
            if !any {
                break;
            }
        }
        while server.poll_event().is_some() {}
        while server.accept().is_some() {}
    }
    assert_eq!(server.association_count(), n);
    let grown = rss().saturating_sub(base);
    drop(server);
    grown as f64 / n as f64
}

/// Part 2's client side: `n` sans-IO endpoints (SCTP ports 10000 + i) behind one UDP
/// socket, driven by a thread until `stop`. Returns when every association is established.
fn spawn_clients(
    n: usize,
    server: SocketAddr,
    stop: Arc<AtomicBool>,
) -> (std::thread::JoinHandle<()>, Duration) {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
        sock.set_read_timeout(Some(Duration::from_millis(1)))
            .unwrap();
        let local = sock.local_addr().unwrap();
        let epoch = WallClock::now();
        let now = || Instant::from_duration(epoch.elapsed());
        let mut eps: Vec<braid_proto::Endpoint> = (0..n)
            .map(|i| braid_proto::Endpoint::new(client_config(10_000 + i as u16), i as u64))
            .collect();
        let mut connected = 0usize;
        let mut started = 0usize;
        let mut buf = Vec::new();
        let mut rbuf = vec![0u8; 65536];
        let mut touched: Vec<usize> = Vec::new();
        let start = WallClock::now();
        let mut next_timers = WallClock::now();
        let mut reported = false;
        while !stop.load(Ordering::Relaxed) {
            // At most 256 handshakes in flight (the server's socket buffer is finite).
            while started < n && started - connected < 256 {
                eps[started].connect(now(), local, server, 5001).unwrap();
                touched.push(started);
                started += 1;
            }
            while let Ok((len, from)) = sock.recv_from(&mut rbuf) {
                let port = u16::from_be_bytes([rbuf[2], rbuf[3]]);
                let i = usize::from(port.wrapping_sub(10_000));
                if i < n {
                    let b = Bytes::copy_from_slice(&rbuf[..len]);
                    eps[i].handle_datagram(now(), local, from, b);
                    touched.push(i);
                }
            }
            if WallClock::now() >= next_timers {
                // Timers (heartbeats, retransmissions) of every endpoint, ten times a second.
                next_timers = WallClock::now() + Duration::from_millis(100);
                let t = now();
                for (i, ep) in eps.iter_mut().enumerate().take(started) {
                    if ep.poll_timeout().is_some_and(|d| d <= t) {
                        ep.handle_timeout(t);
                        touched.push(i);
                    }
                }
            }
            touched.sort_unstable();
            touched.dedup();
            for &i in &touched {
                while let Some(tr) = eps[i].poll_transmit(now(), &mut buf) {
                    let _ = sock.send_to(&buf[..tr.size], tr.remote);
                    buf.clear();
                }
                while let Some((_, e)) = eps[i].poll_event() {
                    if e == Event::Connected {
                        connected += 1;
                    }
                }
            }
            touched.clear();
            if connected == n && !reported {
                reported = true;
                tx.send(start.elapsed()).unwrap();
            }
        }
    });
    let setup = rx.recv().unwrap();
    (h, setup)
}

fn pattern(off: usize, len: usize) -> Bytes {
    (off..off + len).map(|i| (i % 251) as u8).collect()
}

/// Part 3: a verified transfer of `bytes` to the server; goodput in Mbit/s.
async fn transfer(server: SocketAddr, bytes: usize, srv: &Endpoint) -> f64 {
    let cli = Endpoint::bind(
        EndpointConfig {
            association: AssociationConfig::default(),
            ..EndpointConfig::default()
        },
        &["127.0.0.1:0".parse().unwrap()],
    )
    .unwrap();
    let a = cli.connect(&[server], 5001).await.unwrap();
    let b = srv.accept().await.unwrap();
    let start = WallClock::now();
    let reader = tokio::spawn(async move {
        let mut off = 0;
        while let Ok(Some(m)) = b.recv().await {
            assert_eq!(m.data, pattern(off, m.data.len()), "at offset {off}");
            off += m.data.len();
        }
        off
    });
    let mut off = 0;
    while off < bytes {
        let n = 1200.min(bytes - off);
        a.send(0, pattern(off, n), SendOptions::default())
            .await
            .unwrap();
        off += n;
    }
    a.shutdown().await.unwrap();
    let got = reader.await.unwrap();
    assert_eq!(got, bytes);
    let secs = start.elapsed().as_secs_f64();
    cli.close().await;
    bytes as f64 * 8.0 / secs / 1e6
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().unwrap())
        .collect();
    let n = args.first().copied().unwrap_or(10_000);
    let idle = args.get(1).copied().unwrap_or(1000);
    let mib = args.get(2).copied().unwrap_or(200);

    let per = memory(n);
    println!(
        "memory: {n} idle associations, resident set grew {per:.0} B each (server endpoint, upper bound)"
    );

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let srv = Endpoint::bind(server_config(n), &["127.0.0.1:0".parse().unwrap()]).unwrap();
        let addr = srv.local_addrs()[0];
        let stop = Arc::new(AtomicBool::new(false));
        let (h, setup) = tokio::task::block_in_place(|| spawn_clients(n, addr, stop.clone()));
        println!(
            "setup: {n} associations established on loopback in {:.2} s",
            setup.as_secs_f64()
        );
        stop.store(true, Ordering::Relaxed);
        h.join().unwrap();
        // Drain the server's accept queue (those associations time out on their own).
        for _ in 0..n {
            if tokio::time::timeout(Duration::from_millis(50), srv.accept())
                .await
                .is_err()
            {
                break;
            }
        }
        srv.close().await;

        let bytes = mib << 20;
        let srv = Endpoint::bind(server_config(idle), &["127.0.0.1:0".parse().unwrap()]).unwrap();
        let addr = srv.local_addrs()[0];
        let alone = transfer(addr, bytes, &srv).await;
        let stop = Arc::new(AtomicBool::new(false));
        let (h, _) = tokio::task::block_in_place(|| spawn_clients(idle, addr, stop.clone()));
        let mut held = Vec::new();
        for _ in 0..idle {
            held.push(srv.accept().await.unwrap());
        }
        let crowded = transfer(addr, bytes, &srv).await;
        stop.store(true, Ordering::Relaxed);
        h.join().unwrap();
        // Alone once more after (the idle ones are gone from the client side; the server
        // still holds them until they time out): the spread of the machine shows.
        let alone2 = transfer(addr, bytes, &srv).await;
        let base = (alone + alone2) / 2.0;
        println!(
            "goodput: {mib} MiB alone {alone:.0} Mbit/s, with {idle} idle associations \
             {crowded:.0} Mbit/s, alone again {alone2:.0} Mbit/s; crowded / mean(alone) \
             {:.3}",
            crowded / base
        );
        drop(held);
        srv.close().await;
    });
}
