//! Loopback tests of the socket driver: real UDP sockets on 127.0.0.1 / ::1.

#![allow(clippy::unwrap_used)]

use std::io::Write;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use braid_net::{
    AssociationConfig, CloseReason, Endpoint, EndpointConfig, Error, NetConfig, SendOptions,
};
use bytes::Bytes;
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(30);

fn assoc_cfg() -> AssociationConfig {
    AssociationConfig {
        rto_initial: Duration::from_millis(200),
        rto_min: Duration::from_millis(50),
        max_init_retransmits: 3,
        ..Default::default()
    }
}

fn server(addr: &str, assoc: AssociationConfig) -> Endpoint {
    let cfg = EndpointConfig {
        listen: true,
        association: assoc,
        ..Default::default()
    };
    Endpoint::bind(cfg, &[addr.parse().unwrap()]).unwrap()
}

fn client(addr: &str, assoc: AssociationConfig) -> Endpoint {
    let cfg = EndpointConfig {
        association: assoc,
        ..Default::default()
    };
    Endpoint::bind(cfg, &[addr.parse().unwrap()]).unwrap()
}

async fn echo(local: &str) {
    let srv = server(local, assoc_cfg());
    let srv_addr = srv.local_addrs()[0];
    let cli = client(local, assoc_cfg());
    let echo_task = tokio::spawn(async move {
        let a = srv.accept().await.unwrap();
        while let Ok(Some(m)) = a.recv().await {
            let opts = SendOptions {
                ppid: m.ppid,
                ..Default::default()
            };
            if a.send(m.stream_id, m.data, opts).await.is_err() {
                break;
            }
        }
        srv.close().await;
    });
    let a = cli.connect(&[srv_addr], 5001).await.unwrap();
    // Both sides asked for 16 outbound streams and accept up to 1024 inbound.
    assert_eq!(a.open_streams(), (16, 16));
    let mut expected = Vec::new();
    for i in 0..200u32 {
        let stream = (i % 5) as u16;
        let msg = Bytes::from(format!("message {i} on stream {stream}").repeat(1 + i as usize % 7));
        a.send(stream, msg.clone(), SendOptions::default())
            .await
            .unwrap();
        expected.push((stream, msg));
    }
    let mut got = Vec::new();
    while got.len() < expected.len() {
        let m = a.recv().await.unwrap().unwrap();
        got.push((m.stream_id, m.data));
    }
    // Order is kept within each stream.
    for s in 0..5 {
        let e: Vec<_> = expected.iter().filter(|(x, _)| *x == s).collect();
        let g: Vec<_> = got.iter().filter(|(x, _)| *x == s).collect();
        assert_eq!(e, g, "stream {s}");
    }
    let stats = a.stats();
    assert_eq!(stats.messages_received, 200);
    assert!(!a.paths().is_empty());
    a.shutdown().await.unwrap();
    echo_task.await.unwrap();
    cli.close().await;
}

#[tokio::test]
async fn bind_refuses_an_invalid_configuration() {
    let mut cfg = EndpointConfig::default();
    cfg.association.path_mtu = 70_000;
    let e = Endpoint::bind(cfg, &["127.0.0.1:0".parse().unwrap()]).err();
    let e = e.expect("refused");
    assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput);
    assert_eq!(
        e.to_string(),
        "invalid configuration: path_mtu 70000 is outside 1200..=65535"
    );
    let mut cfg = EndpointConfig::default();
    cfg.association.sack_delay = Duration::from_secs(1);
    let e = Endpoint::bind(cfg, &["127.0.0.1:0".parse().unwrap()]).err();
    assert!(
        e.unwrap()
            .to_string()
            .contains("sack_delay 1s exceeds 500ms")
    );
}

#[tokio::test]
async fn echo_several_streams_v4() {
    timeout(LIMIT, echo("127.0.0.1:0")).await.unwrap();
}

#[tokio::test]
async fn echo_several_streams_v6() {
    if std::net::UdpSocket::bind("[::1]:0").is_err() {
        eprintln!("no IPv6 loopback: skipped");
        return;
    }
    timeout(LIMIT, echo("[::1]:0")).await.unwrap();
}

fn pattern(offset: usize, len: usize) -> Bytes {
    (offset..offset + len)
        .map(|i| (i.wrapping_mul(31) ^ (i >> 11)) as u8)
        .collect::<Vec<u8>>()
        .into()
}

/// Sends `total` bytes in `chunk`-byte messages and checks them byte for byte.
async fn transfer(total: usize, chunk: usize, assoc: AssociationConfig) -> Duration {
    let srv = server("127.0.0.1:0", assoc.clone());
    let srv_addr = srv.local_addrs()[0];
    let cli = client("127.0.0.1:0", assoc);
    let recv_task = tokio::spawn(async move {
        let a = srv.accept().await.unwrap();
        let mut off = 0;
        while let Ok(Some(m)) = a.recv().await {
            assert_eq!(m.data, pattern(off, m.data.len()), "at offset {off}");
            off += m.data.len();
        }
        srv.close().await;
        off
    });
    #[expect(clippy::disallowed_methods, reason = "measuring throughput")]
    let start = std::time::Instant::now();
    let a = cli.connect(&[srv_addr], 5001).await.unwrap();
    let mut off = 0;
    while off < total {
        let n = chunk.min(total - off);
        a.send(0, pattern(off, n), SendOptions::default())
            .await
            .unwrap();
        off += n;
    }
    if let Some(p) = a.paths().first() {
        eprintln!("sender paths: {:?}", p.stats);
    }
    a.shutdown().await.unwrap();
    let received = recv_task.await.unwrap();
    let elapsed = start.elapsed();
    assert_eq!(received, total);
    cli.close().await;
    elapsed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfer_10_mib() {
    let total = 10 << 20;
    let el = timeout(LIMIT, transfer(total, 64 * 1024, assoc_cfg()))
        .await
        .unwrap();
    eprintln!(
        "10 MiB in {el:?}: {:.1} MB/s",
        total as f64 / el.as_secs_f64() / 1e6
    );
}

#[tokio::test]
async fn graceful_shutdown() {
    timeout(LIMIT, async {
        let srv = server("127.0.0.1:0", assoc_cfg());
        let cli = client("127.0.0.1:0", assoc_cfg());
        let a = cli.connect(&[srv.local_addrs()[0]], 5001).await.unwrap();
        let b = srv.accept().await.unwrap();
        for i in 0..10u8 {
            a.send(1, Bytes::from(vec![i; 1000]), SendOptions::default())
                .await
                .unwrap();
        }
        a.shutdown().await.unwrap();
        // Everything queued before the shutdown arrives, then the end.
        for i in 0..10u8 {
            assert_eq!(b.recv().await.unwrap().unwrap().data, vec![i; 1000]);
        }
        assert!(b.recv().await.unwrap().is_none());
        b.shutdown().await.unwrap();
        // No more sends after the close, with a typed error.
        let e = a
            .send(0, Bytes::from_static(b"late"), SendOptions::default())
            .await
            .unwrap_err();
        assert!(matches!(e, Error::Closed(CloseReason::Shutdown)), "{e:?}");
        cli.close().await;
        srv.close().await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn backpressure_resumes() {
    timeout(LIMIT, async {
        let assoc = AssociationConfig {
            send_buffer: 64 * 1024,
            recv_buffer: 64 * 1024,
            max_message_size: 16 * 1024,
            ..assoc_cfg()
        };
        let srv = server("127.0.0.1:0", assoc.clone());
        let cli = client("127.0.0.1:0", assoc);
        let a = Arc::new(cli.connect(&[srv.local_addrs()[0]], 5001).await.unwrap());
        let b = srv.accept().await.unwrap();
        let total = 1 << 20;
        let sender = {
            let a = a.clone();
            tokio::spawn(async move {
                let mut off = 0;
                while off < total {
                    a.send(0, pattern(off, 16 * 1024), SendOptions::default())
                        .await
                        .unwrap();
                    off += 16 * 1024;
                }
            })
        };
        // Nobody reads: the receive window and then the send buffer fill, and the sender
        // waits.
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!sender.is_finished(), "the sender should be blocked");
        let mut off = 0;
        while off < total {
            let m = b.recv().await.unwrap().unwrap();
            assert_eq!(m.data, pattern(off, m.data.len()));
            off += m.data.len();
        }
        sender.await.unwrap();
        a.shutdown().await.unwrap();
        cli.close().await;
        srv.close().await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn connect_to_closed_port_fails() {
    timeout(LIMIT, async {
        // A port nobody listens on: the kernel answers the INIT with ICMP port unreachable,
        // the driver reads it from the error queue (IP_RECVERR) and the core fails the
        // handshake at once (RFC 6951 §5.5) instead of after Max.Init.Retransmits.
        let port = std::net::UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cli = client("127.0.0.1:0", assoc_cfg());
        let remote: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let e = cli.connect(&[remote], 5001).await.unwrap_err();
        // Unreachable (not HandshakeTimeout) says the ICMP error ended it.
        assert_eq!(e, Error::Closed(CloseReason::Unreachable));
        cli.close().await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn connect_to_non_listening_endpoint_is_aborted() {
    timeout(LIMIT, async {
        let other = client("127.0.0.1:0", assoc_cfg());
        let cli = client("127.0.0.1:0", assoc_cfg());
        let e = cli
            .connect(&[other.local_addrs()[0]], 5001)
            .await
            .unwrap_err();
        assert!(
            matches!(e, Error::Closed(CloseReason::PeerAbort(_))),
            "{e:?}"
        );
    })
    .await
    .unwrap();
}

#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn pcap_records_both_directions() {
    timeout(LIMIT, async {
        let out = Shared::default();
        let srv = server("127.0.0.1:0", assoc_cfg());
        let cfg = EndpointConfig {
            association: assoc_cfg(),
            ..Default::default()
        };
        let net = NetConfig {
            pcap: Some(Box::new(out.clone())),
            ..Default::default()
        };
        let cli = Endpoint::bind_with(cfg, &["127.0.0.1:0".parse().unwrap()], net).unwrap();
        let a = cli.connect(&[srv.local_addrs()[0]], 5001).await.unwrap();
        let _b = srv.accept().await.unwrap();
        a.send(0, Bytes::from_static(b"hello"), SendOptions::default())
            .await
            .unwrap();
        a.shutdown().await.unwrap();
        cli.close().await;
        srv.close().await;
        let bytes = out.0.lock().unwrap().clone();
        assert_eq!(&bytes[..4], &0xa1b2_c3d4u32.to_le_bytes());
        // Records: INIT, INIT-ACK, COOKIE-ECHO, COOKIE-ACK, DATA, SACK, SHUTDOWN... at
        // least 8 frames of 14 + 20 + 8 + 12 + chunk bytes each.
        let mut n = 0;
        let mut off = 24;
        while off + 16 <= bytes.len() {
            let incl = u32::from_le_bytes(bytes[off + 8..off + 12].try_into().unwrap());
            off += 16 + incl as usize;
            n += 1;
        }
        assert_eq!(off, bytes.len());
        assert!(n >= 8, "{n} frames");
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn trace_dir_gets_one_json_lines_file_per_association() {
    let dir = std::env::temp_dir().join(format!("braid-trace-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    timeout(LIMIT, async {
        let srv = server("127.0.0.1:0", assoc_cfg());
        let cfg = EndpointConfig {
            association: assoc_cfg(),
            ..Default::default()
        };
        let net = NetConfig {
            trace_dir: Some(dir.clone()),
            ..Default::default()
        };
        let cli = Endpoint::bind_with(cfg, &["127.0.0.1:0".parse().unwrap()], net).unwrap();
        let a = cli.connect(&[srv.local_addrs()[0]], 5001).await.unwrap();
        let _b = srv.accept().await.unwrap();
        for _ in 0..20 {
            a.send(1, pattern(0, 3000), SendOptions::default())
                .await
                .unwrap();
        }
        a.shutdown().await.unwrap();
        cli.close().await;
        srv.close().await;
    })
    .await
    .unwrap();
    let text = std::fs::read_to_string(dir.join("assoc-0.jsonl")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // One scheduler pick per message, each a JSON object with a time and a name.
    let picks = lines
        .iter()
        .filter(|l| l.contains(r#""name":"stream_scheduled""#));
    assert_eq!(picks.count(), 20, "{text}");
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with(r#"{"time_us":"#) && l.ends_with('}'))
    );
    assert!(
        lines
            .iter()
            .any(|l| l.contains(r#""name":"window","path":0"#)),
        "{text}"
    );
}

/// A UDP relay standing for a NAT: the client talks to `front`; datagrams go on to the
/// server from the current `back` socket, whose port `rebind` changes.
struct Nat {
    front: SocketAddr,
    rebind: tokio::sync::mpsc::UnboundedSender<()>,
    task: tokio::task::JoinHandle<()>,
}

impl Nat {
    async fn start(server: SocketAddr) -> Self {
        use tokio::net::UdpSocket;
        let front = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
        let front_addr = front.local_addr().unwrap();
        let (rebind, mut rebinds) = tokio::sync::mpsc::unbounded_channel::<()>();
        let task = tokio::spawn(async move {
            let mut back = UdpSocket::bind("127.0.0.1:0").await.unwrap();
            let mut client: Option<SocketAddr> = None;
            let (mut b1, mut b2) = (vec![0u8; 65536], vec![0u8; 65536]);
            loop {
                tokio::select! {
                    r = front.recv_from(&mut b1) => {
                        let (n, from) = r.unwrap();
                        client = Some(from);
                        let _ = back.send_to(&b1[..n], server).await;
                    }
                    r = back.recv_from(&mut b2) => {
                        let (n, _) = r.unwrap();
                        if let Some(c) = client {
                            let _ = front.send_to(&b2[..n], c).await;
                        }
                    }
                    r = rebinds.recv() => {
                        if r.is_none() {
                            return;
                        }
                        // The old mapping is gone: replies to it are lost.
                        back = UdpSocket::bind("127.0.0.1:0").await.unwrap();
                    }
                }
            }
        });
        Self {
            front: front_addr,
            rebind,
            task,
        }
    }
}

#[tokio::test]
async fn remote_udp_port_is_learned_after_nat_rebinding() {
    timeout(LIMIT, async {
        let srv = server("127.0.0.1:0", assoc_cfg());
        let cli = client("127.0.0.1:0", assoc_cfg());
        let nat = Nat::start(srv.local_addrs()[0]).await;
        let echo_task = tokio::spawn(async move {
            let a = srv.accept().await.unwrap();
            while let Ok(Some(m)) = a.recv().await {
                if a.send(0, m.data, SendOptions::default()).await.is_err() {
                    break;
                }
            }
            srv.close().await;
        });
        let a = cli.connect(&[nat.front], 5001).await.unwrap();
        for round in 0..2u8 {
            for i in 0..20u8 {
                let msg = Bytes::from(vec![round * 100 + i; 500]);
                a.send(0, msg.clone(), SendOptions::default())
                    .await
                    .unwrap();
                assert_eq!(a.recv().await.unwrap().unwrap().data, msg);
            }
            nat.rebind.send(()).unwrap();
        }
        a.shutdown().await.unwrap();
        echo_task.await.unwrap();
        cli.close().await;
        nat.task.abort();
    })
    .await
    .unwrap();
}

/// A longer transfer for a throughput figure: `cargo test --release -p braid-net --
/// --ignored --nocapture throughput`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark"]
async fn throughput_200_mib() {
    let total = 200 << 20;
    let assoc = AssociationConfig {
        send_buffer: 4 << 20,
        recv_buffer: 4 << 20,
        ..assoc_cfg()
    };
    let el = timeout(Duration::from_secs(120), transfer(total, 64 * 1024, assoc))
        .await
        .unwrap();
    eprintln!(
        "200 MiB in {el:?}: {:.1} MB/s",
        total as f64 / el.as_secs_f64() / 1e6
    );
}

/// The peer shuts down while we are still sending (the driver used to drop what
/// the handle had accepted): every message `send` accepted arrives, later sends fail with a
/// clear error, and both sides close gracefully.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_shutdown_mid_transfer_loses_nothing_that_send_accepted() {
    let srv = server("127.0.0.1:0", assoc_cfg());
    let srv_addr = srv.local_addrs()[0];
    let cli = client("127.0.0.1:0", assoc_cfg());
    let receiver = tokio::spawn(async move {
        let a = Arc::new(srv.accept().await.unwrap());
        let reader = {
            let a = a.clone();
            tokio::spawn(async move {
                let mut n = 0u64;
                while let Ok(Some(m)) = a.recv().await {
                    assert_eq!(m.data, pattern(n as usize, m.data.len()), "message {n}");
                    n += 1;
                }
                n
            })
        };
        tokio::time::sleep(Duration::from_millis(100)).await;
        // Our side has nothing to send: SHUTDOWN goes out at once.
        a.shutdown().await.unwrap();
        let n = reader.await.unwrap();
        srv.close().await;
        n
    });
    let a = cli.connect(&[srv_addr], 5001).await.unwrap();
    let mut accepted = 0u64;
    let refusal = loop {
        match a
            .send(0, pattern(accepted as usize, 1200), SendOptions::default())
            .await
        {
            Ok(()) => accepted += 1,
            Err(e) => break e,
        }
        assert!(
            accepted < 10_000_000,
            "the peer's SHUTDOWN never stopped us"
        );
    };
    // ShuttingDown while the shutdown runs; Closed(Shutdown) if it completed before this
    // task ran again (on a busy machine the whole exchange can fit in that gap).
    assert!(
        matches!(
            refusal,
            Error::Send(braid_net::SendError::ShuttingDown) | Error::Closed(CloseReason::Shutdown)
        ),
        "refused with {refusal:?}"
    );
    let received = timeout(LIMIT, receiver).await.unwrap().unwrap();
    assert!(accepted > 0);
    assert_eq!(received, accepted, "messages accepted by send() were lost");
    // Resolves once the association closed; Ok means it closed gracefully.
    timeout(LIMIT, a.shutdown()).await.unwrap().unwrap();
}
