//! Spurious timeouts on real sockets (Ladha et al.): a UDP relay on loopback between client
//! and server holds the client's packets for a while — a delay spike — and releases them in
//! order; the client's T3-rtx expires meanwhile. With Eifel negotiated the client finds the
//! timeout spurious; the transfer arrives intact either way.

#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use braid_net::{AssociationConfig, Endpoint, EndpointConfig, SendOptions, SpuriousDetection};
use bytes::Bytes;
use tokio::net::UdpSocket;
use tokio::time::{Instant, timeout};

/// Client-to-server datagrams after which the spike starts.
const SPIKE_AFTER: u64 = 200;
/// How long the spike holds the client's datagrams.
const SPIKE: Duration = Duration::from_millis(1500);

/// A relay: the client talks to `front`, the relay to the server from `back`. From the
/// `SPIKE_AFTER`-th datagram on, client datagrams are held until the spike ends, in order.
async fn relay(server: SocketAddr) -> SocketAddr {
    let front = Arc::new(relay_socket());
    let back = Arc::new(relay_socket());
    let addr = front.local_addr().unwrap();
    let client: Arc<std::sync::Mutex<Option<SocketAddr>>> = Default::default();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let count = Arc::new(AtomicU64::new(0));
    {
        let (front, client) = (front.clone(), client.clone());
        tokio::spawn(async move {
            let mut spike_end = None;
            let mut buf = vec![0u8; 65536];
            while let Ok((n, from)) = front.recv_from(&mut buf).await {
                *client.lock().unwrap() = Some(from);
                let k = count.fetch_add(1, Ordering::Relaxed);
                let now = Instant::now();
                if k == SPIKE_AFTER {
                    spike_end = Some(now + SPIKE);
                }
                let at = spike_end.filter(|&e| e > now).unwrap_or(now);
                if tx.send((at, buf[..n].to_vec())).is_err() {
                    break;
                }
            }
        });
    }
    {
        let back = back.clone();
        tokio::spawn(async move {
            // Release times never decrease, so one queue keeps the order.
            while let Some((at, d)) = rx.recv().await {
                tokio::time::sleep_until(at).await;
                let _ = back.send_to(&d, server).await;
            }
        });
    }
    tokio::spawn(async move {
        let mut buf = vec![0u8; 65536];
        while let Ok((n, _)) = back.recv_from(&mut buf).await {
            let to = *client.lock().unwrap();
            if let Some(to) = to {
                let _ = front.send_to(&buf[..n], to).await;
            }
        }
    });
    addr
}

/// A loopback UDP socket with 4 MiB buffers (as the driver's own), so the relay itself
/// drops nothing when a whole window arrives at once.
fn relay_socket() -> UdpSocket {
    let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None).unwrap();
    s.set_recv_buffer_size(4 << 20).unwrap();
    s.set_send_buffer_size(4 << 20).unwrap();
    s.set_nonblocking(true).unwrap();
    s.bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    UdpSocket::from_std(s.into()).unwrap()
}

fn cfg(d: SpuriousDetection) -> AssociationConfig {
    AssociationConfig {
        rto_initial: Duration::from_millis(300),
        rto_min: Duration::from_millis(200),
        spurious_detection: d,
        ..Default::default()
    }
}

/// Sends 4000 messages of 1000 bytes through a spiking relay; returns the client's spurious
/// timeouts and T3 expiries after the server verified every message in order.
async fn through_a_spike(d: SpuriousDetection) -> (u64, u64) {
    let srv = Endpoint::bind(
        EndpointConfig {
            listen: true,
            association: cfg(SpuriousDetection::Off),
            ..Default::default()
        },
        &["127.0.0.1:0".parse().unwrap()],
    )
    .unwrap();
    let srv_addr = srv.local_addrs()[0];
    let relay_addr = relay(srv_addr).await;
    let cli = Endpoint::bind(
        EndpointConfig {
            association: cfg(d),
            ..Default::default()
        },
        &["127.0.0.1:0".parse().unwrap()],
    )
    .unwrap();
    const N: u32 = 1000;
    let sink = tokio::spawn(async move {
        let a = srv.accept().await.unwrap();
        for i in 0..N {
            let m = a.recv().await.unwrap().expect("association closed early");
            assert_eq!(&m.data[..4], &i.to_be_bytes(), "message {i} out of order");
            assert!(
                m.data[4..].iter().all(|&b| b == i as u8),
                "message {i} corrupt"
            );
        }
        srv
    });
    let a = cli.connect(&[relay_addr], 5001).await.unwrap();
    for i in 0..N {
        let mut m = i.to_be_bytes().to_vec();
        m.resize(1000, i as u8);
        a.send(0, Bytes::from(m), SendOptions::default())
            .await
            .unwrap();
    }
    let srv = timeout(Duration::from_secs(60), sink)
        .await
        .unwrap()
        .unwrap();
    let st = a.stats();
    let t3 = a.paths().iter().map(|p| p.stats.timeouts).sum();
    cli.close().await;
    let _ = timeout(Duration::from_secs(5), srv.close()).await;
    (st.spurious_timeouts, t3)
}

#[tokio::test]
async fn eifel_finds_a_spurious_timeout_on_real_sockets() {
    for d in [
        SpuriousDetection::EifelTimestamp,
        SpuriousDetection::EifelRbit,
    ] {
        let (spurious, t3) = through_a_spike(d).await;
        assert!(t3 >= 1, "{d}: the spike caused no timeout");
        assert!(spurious >= 1, "{d}: {t3} timeouts, none found spurious");
    }
    let (spurious, t3) = through_a_spike(SpuriousDetection::Off).await;
    assert!(t3 >= 1);
    assert_eq!(spurious, 0);
}
