//! A hostile peer on real sockets (loopback only): while a verified transfer runs between
//! two braid endpoints, an attacker replays the attacks of `braid-proto/tests/attacks.rs`
//! against the running server — spoofed bundled INITs, an address takeover, an unconfirmed
//! address fishing for data — and the transfer must still complete, every byte verified.
#![allow(clippy::unwrap_used)]

use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use braid_net::{AssociationConfig, Endpoint, EndpointConfig, SendOptions};
use braid_wire::chunk::{Abort, CookieEcho, Data, ForwardTsn, Init, InitAck};
use braid_wire::{Chunk, ErrorCause, Packet, Param, RawChunk};
use bytes::Bytes;
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(60);
const SERVER_PORT: u16 = 5001;

fn pattern(off: usize, len: usize) -> Bytes {
    (off..off + len).map(|i| (i % 253) as u8).collect()
}

fn init(tag: u32, params: Vec<Param>) -> Chunk {
    Init {
        initiate_tag: tag,
        a_rwnd: 1 << 20,
        outbound_streams: 4,
        inbound_streams: 4,
        initial_tsn: 77,
        params,
    }
    .into()
}

fn packet(src_port: u16, vtag: u32, chunks: Vec<Chunk>) -> Vec<u8> {
    Packet {
        src_port,
        dst_port: SERVER_PORT,
        verification_tag: vtag,
        chunks,
    }
    .to_vec()
    .unwrap()
}

/// Every datagram arriving on `s` within `wait`, decoded.
fn collect(s: &UdpSocket, wait: Duration) -> Vec<Packet> {
    s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    let mut v = Vec::new();
    let mut buf = vec![0u8; 65536];
    #[expect(clippy::disallowed_methods, reason = "bounds a real-socket wait")]
    let end = std::time::Instant::now() + wait;
    #[expect(clippy::disallowed_methods, reason = "bounds a real-socket wait")]
    while std::time::Instant::now() < end {
        if let Ok((n, _)) = s.recv_from(&mut buf)
            && let Ok(p) = Packet::decode(&Bytes::copy_from_slice(&buf[..n]))
        {
            v.push(p);
        }
    }
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_peer_cannot_disturb_a_verified_transfer() {
    let assoc = AssociationConfig {
        rto_initial: Duration::from_millis(200),
        rto_min: Duration::from_millis(100),
        ..AssociationConfig::default()
    };
    let srv = Endpoint::bind(
        EndpointConfig {
            listen: true,
            association: assoc.clone(),
            ..EndpointConfig::default()
        },
        &["127.0.0.1:0".parse().unwrap()],
    )
    .unwrap();
    let srv_addr = srv.local_addrs()[0];
    let victim_port = 6100;
    let cli = Endpoint::bind(
        EndpointConfig {
            port: victim_port,
            association: assoc,
            ..EndpointConfig::default()
        },
        &["127.0.0.1:0".parse().unwrap()],
    )
    .unwrap();
    let a = cli.connect(&[srv_addr], SERVER_PORT).await.unwrap();
    let b = srv.accept().await.unwrap();
    const TOTAL: usize = 8 << 20;
    let reader = tokio::spawn(async move {
        let mut off = 0;
        while let Ok(Some(m)) = b.recv().await {
            assert_eq!(m.data, pattern(off, m.data.len()), "at offset {off}");
            off += m.data.len();
        }
        (off, b)
    });
    let writer = tokio::spawn(async move {
        let mut off = 0;
        while off < TOTAL {
            let n = 1000.min(TOTAL - off);
            a.send(0, pattern(off, n), SendOptions::default())
                .await
                .unwrap();
            off += n;
            // Paced (about 5 s in all) so the attacks run while it is live.
            if off % (64 << 10) < 1000 {
                tokio::time::sleep(Duration::from_millis(40)).await;
            }
        }
        a.shutdown().await.unwrap();
    });

    // The attacker shares the victim's IP and claims its SCTP port (the demultiplexing key);
    // tag 0 with an INIT first used to let everything bundled after it through (§6.10).
    let attacker = UdpSocket::bind("127.0.0.1:0").unwrap();
    let bundles: Vec<Chunk> = vec![
        Abort {
            t_bit: false,
            causes: vec![],
        }
        .into(),
        Data {
            tsn: 1,
            stream_id: 0,
            ssn: 0,
            ppid: 0,
            unordered: true,
            beginning: true,
            ending: true,
            immediate: false,
            user_data: Bytes::from_static(b"spoofed"),
        }
        .into(),
        ForwardTsn {
            new_cum_tsn: 1 << 30,
            streams: vec![],
        }
        .into(),
        RawChunk {
            chunk_type: braid_wire::chunk::ChunkType(0xff),
            flags: 0,
            value: Bytes::from_static(b"reflect"),
        }
        .into(),
    ];
    for _ in 0..20 {
        for c in &bundles {
            let p = packet(victim_port, 0, vec![init(0xbad, vec![]), c.clone()]);
            attacker.send_to(&p, srv_addr).unwrap();
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let answers = collect(&attacker, Duration::from_millis(300));
    assert!(
        answers.is_empty(),
        "bundled INITs were answered: {answers:?}"
    );

    // Address takeover: from another address, an INIT listing the victim's.
    let thief = UdpSocket::bind("127.0.0.9:0").unwrap();
    let p = packet(
        victim_port,
        0,
        vec![init(
            0x7417,
            vec![Param::from_address("127.0.0.1".parse().unwrap())],
        )],
    );
    thief.send_to(&p, srv_addr).unwrap();
    // It gets the INIT-ACK anyone gets (the association it may build goes without the
    // victim's address): no cause 11 tells it the address is in use.
    let answers = collect(&thief, Duration::from_millis(300));
    assert!(
        !answers.iter().any(|p| p.chunks.iter().any(|c| matches!(c,
            Chunk::Abort(a) if a.causes.iter().any(|c| matches!(c, ErrorCause::RestartWithNewAddresses(_)))))),
        "cause 11 told a stranger: {answers:?}"
    );
    assert!(
        answers
            .iter()
            .any(|p| matches!(p.chunks[0], Chunk::InitAck(_))),
        "no INIT-ACK: {answers:?}"
    );

    // An unconfirmed address fishing for data: a genuine handshake from 127.0.0.9 that
    // lists 127.0.0.10, where a sink listens on the same UDP port; it must never get DATA.
    let fisher_port = 6200;
    let p = packet(
        fisher_port,
        0,
        vec![init(
            0xf15,
            vec![Param::from_address("127.0.0.10".parse().unwrap())],
        )],
    );
    thief.send_to(&p, srv_addr).unwrap();
    let sink = UdpSocket::bind(SocketAddr::new(
        "127.0.0.10".parse().unwrap(),
        thief.local_addr().unwrap().port(),
    ))
    .unwrap();
    let ack = collect(&thief, Duration::from_millis(300))
        .into_iter()
        .find_map(|p| match p.chunks.first() {
            Some(Chunk::InitAck(a)) => Some(a.clone()),
            _ => None,
        })
        .expect("no INIT-ACK for the fisher");
    let ack: InitAck = ack;
    let echo = packet(
        fisher_port,
        ack.initiate_tag,
        vec![
            CookieEcho {
                cookie: ack.state_cookie().unwrap().clone(),
            }
            .into(),
        ],
    );
    thief.send_to(&echo, srv_addr).unwrap();
    let fished = srv.accept().await.unwrap();
    // The server's application writes to it; the fisher acknowledges nothing.
    for i in 0..20 {
        fished
            .send(0, pattern(i, 500), SendOptions::default())
            .await
            .unwrap();
    }
    let at_sink = collect(&sink, Duration::from_secs(3));
    assert!(
        !at_sink
            .iter()
            .any(|p| p.chunks.iter().any(|c| matches!(c, Chunk::Data(_)))),
        "DATA sent to an unconfirmed address"
    );
    let probes = at_sink.len();
    assert!(
        probes <= 10,
        "{probes} probes to one unconfirmed address in 3 s"
    );
    fished.abort();

    // And the victim's transfer completes, every byte verified.
    timeout(LIMIT, writer).await.unwrap().unwrap();
    let (got, _b) = timeout(LIMIT, reader).await.unwrap().unwrap();
    assert_eq!(got, TOTAL);
    cli.close().await;
    srv.close().await;
}
