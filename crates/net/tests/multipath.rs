//! Multi-homing and CMT on real sockets: two loopback addresses per side
//! (127.0.0.1/127.0.0.2 against 127.0.0.3/127.0.0.4), both paths carry data, then one path
//! is cut by the driver's fault injection and the transfer completes without loss or
//! duplication.

#![allow(clippy::unwrap_used)]

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use braid_net::{AssociationConfig, Endpoint, EndpointConfig, PathState, SendOptions};
use bytes::Bytes;
use tokio::time::timeout;

const LIMIT: Duration = Duration::from_secs(60);
const STREAMS: u16 = 4;
const MESSAGE: usize = 1200;

fn cfg() -> AssociationConfig {
    AssociationConfig {
        cmt: Some(braid_net::CmtConfig::default()),
        rto_initial: Duration::from_millis(200),
        rto_min: Duration::from_millis(50),
        rto_max: Duration::from_millis(500),
        max_init_retransmits: 3,
        outbound_streams: STREAMS,
        ..Default::default()
    }
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

/// Message `seq` of `stream`: its header names it, the rest is a pattern of both.
/// Accepts one association on `srv` and checks every message arrives intact and in order per
/// stream until it closes; returns the messages received per stream.
async fn receive_in_order(srv: Endpoint) -> [u32; STREAMS as usize] {
    let a = srv.accept().await.unwrap();
    let mut next = [0u32; STREAMS as usize];
    while let Ok(Some(m)) = a.recv().await {
        let s = m.stream_id as usize;
        assert_eq!(m.data, message(m.stream_id, next[s]), "stream {s}");
        next[s] += 1;
    }
    srv.close().await;
    next
}

fn message(stream: u16, seq: u32) -> Bytes {
    let mut v = Vec::with_capacity(MESSAGE);
    v.extend_from_slice(&stream.to_be_bytes());
    v.extend_from_slice(&seq.to_be_bytes());
    let mut x = u32::from(stream) * 7919 + seq;
    while v.len() < MESSAGE {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        v.push((x >> 16) as u8);
    }
    Bytes::from(v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cmt_uses_both_paths_and_survives_losing_one() {
    let srv = Endpoint::bind(
        EndpointConfig {
            listen: true,
            association: cfg(),
            ..Default::default()
        },
        &[
            "127.0.0.1:0".parse().unwrap(),
            "127.0.0.2:0".parse().unwrap(),
        ],
    )
    .unwrap();
    let port = srv.local_addrs()[0].port();
    let cli = Endpoint::bind(
        EndpointConfig {
            association: cfg(),
            ..Default::default()
        },
        &[
            "127.0.0.3:0".parse().unwrap(),
            "127.0.0.4:0".parse().unwrap(),
        ],
    )
    .unwrap();
    let first = SocketAddr::new(ip("127.0.0.1"), port);

    let total: u32 = 6000; // messages per stream: ~28 MiB in all
    let receiver = tokio::spawn(async move {
        let a = srv.accept().await.unwrap();
        let mut next = [0u32; STREAMS as usize];
        let mut got = 0u64;
        while let Ok(Some(m)) = a.recv().await {
            let s = m.stream_id;
            let seq = u32::from_be_bytes(m.data[2..6].try_into().unwrap());
            assert_eq!(
                seq, next[s as usize],
                "stream {s}: lost, duplicated or reordered"
            );
            assert_eq!(
                m.data,
                message(s, seq),
                "stream {s} message {seq} corrupted"
            );
            next[s as usize] += 1;
            got += 1;
        }
        let paths = Some(a.paths());
        (got, next, paths, srv)
    });

    let a = timeout(LIMIT, cli.connect(&[first], 5001))
        .await
        .unwrap()
        .unwrap();
    // Path confirmation (RFC 9260 §5.4) runs in the background; wait for the second path.
    let both = timeout(LIMIT, async {
        loop {
            let p = a.paths();
            if p.len() == 2 && p.iter().all(|p| p.state == PathState::Active) {
                return p;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the second path never became active");
    assert_eq!(both[1].local.ip(), ip("127.0.0.4"));
    assert_eq!(both[1].remote.ip(), ip("127.0.0.2"));

    let sender = async {
        for seq in 0..total {
            if seq == total / 3 {
                // Both paths carried data before the cut.
                let p = a.paths();
                for (i, p) in p.iter().enumerate() {
                    assert!(p.stats.data_chunks_sent > 100, "path {i} idle: {p:?}");
                }
                cli.blackhole(ip("127.0.0.4"), ip("127.0.0.2"), true)
                    .unwrap();
            }
            for s in 0..STREAMS {
                a.send(s, message(s, seq), SendOptions::default())
                    .await
                    .unwrap();
            }
        }
        let p = a.paths();
        assert_ne!(
            p[1].state,
            PathState::Active,
            "the cut path still looks active"
        );
        a.shutdown().await.unwrap();
    };
    timeout(LIMIT, sender)
        .await
        .expect("transfer did not finish");
    let (got, next, _, srv) = timeout(LIMIT, receiver).await.unwrap().unwrap();
    assert_eq!(got, u64::from(total) * u64::from(STREAMS));
    assert!(next.iter().all(|n| *n == total));
    srv.close().await;
    cli.close().await;
}

/// A verified transfer between endpoints bound to these loopback addresses (the client
/// connects to the server's first), then a graceful close; bounded in time.
async fn transfer_between(server: &[&str], client: &[&str], cmt: bool) {
    let assoc = AssociationConfig {
        cmt: cmt.then(braid_net::CmtConfig::default),
        ..cfg()
    };
    let addrs = |v: &[&str]| -> Vec<SocketAddr> {
        v.iter()
            .map(|a| format!("{a}:0").parse().unwrap())
            .collect()
    };
    let srv = Endpoint::bind(
        EndpointConfig {
            listen: true,
            association: assoc.clone(),
            ..Default::default()
        },
        &addrs(server),
    )
    .unwrap();
    let first = srv.local_addrs()[0];
    let cli = Endpoint::bind(
        EndpointConfig {
            association: assoc,
            ..Default::default()
        },
        &addrs(client),
    )
    .unwrap();
    let n: u32 = 1500;
    let receiver = tokio::spawn(receive_in_order(srv));
    let a = cli.connect(&[first], 5001).await.unwrap();
    for seq in 0..n {
        for s in 0..STREAMS {
            a.send(s, message(s, seq), SendOptions::default())
                .await
                .unwrap();
        }
    }
    a.shutdown().await.unwrap();
    let next = receiver.await.unwrap();
    assert_eq!(next, [n; STREAMS as usize]);
    cli.close().await;
}

/// Every combination of single- and multi-homed ends, same and different address ranges
/// (a single-homed client of a multi-homed server used to hang).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_homing_combination_transfers_and_closes() {
    let cases: &[(&[&str], &[&str], bool)] = &[
        (&["127.0.0.1"], &["127.0.0.3"], false),
        (&["127.0.0.1", "127.0.0.2"], &["127.0.0.3"], false),
        (&["127.0.0.1", "127.0.0.2"], &["127.0.0.3"], true),
        (&["127.0.0.1", "127.0.0.2"], &["127.0.0.1"], false),
        (&["127.0.0.1", "127.0.0.2"], &["127.0.0.2"], true),
        (&["127.0.0.1"], &["127.0.0.3", "127.0.0.4"], false),
        (&["127.0.0.1"], &["127.0.0.3", "127.0.0.4"], true),
        (
            &["127.0.0.1", "127.0.0.2"],
            &["127.0.0.3", "127.0.0.4"],
            false,
        ),
        (
            &["127.0.0.1", "127.0.0.2"],
            &["127.0.0.3", "127.0.0.4"],
            true,
        ),
        (
            &["127.0.0.1", "127.0.0.2"],
            &["127.0.0.1", "127.0.0.2"],
            true,
        ),
    ];
    for (server, client, cmt) in cases {
        timeout(LIMIT, transfer_between(server, client, *cmt))
            .await
            .unwrap_or_else(|_| panic!("server {server:?} client {client:?} cmt {cmt}: hung"));
    }
}

/// LS-SCTP on real sockets: both ends offer load sharing (and no CMT), so the association
/// runs LS-DATA/LS-SACK over both loopback paths — without LS, standard SCTP would put new
/// data on the primary path only — and every message arrives intact and in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn load_sharing_transfers_intact_over_two_paths() {
    let assoc = AssociationConfig {
        cmt: None,
        load_sharing: true,
        ..cfg()
    };
    let bind = |listen: bool, addrs: [&str; 2]| {
        Endpoint::bind(
            EndpointConfig {
                listen,
                association: assoc.clone(),
                ..Default::default()
            },
            &addrs.map(|a| format!("{a}:0").parse().unwrap()),
        )
        .unwrap()
    };
    let srv = bind(true, ["127.0.0.1", "127.0.0.2"]);
    let cli = bind(false, ["127.0.0.3", "127.0.0.4"]);
    let first = srv.local_addrs()[0];
    let n: u32 = 3000;
    let receiver = tokio::spawn(receive_in_order(srv));
    let a = timeout(LIMIT, cli.connect(&[first], 5001))
        .await
        .unwrap()
        .unwrap();
    timeout(LIMIT, async {
        loop {
            let p = a.paths();
            if p.len() == 2
                && p.iter()
                    .all(|p| p.state == PathState::Active && p.confirmed)
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the second path never became active");
    let sender = async {
        for seq in 0..n {
            for s in 0..STREAMS {
                a.send(s, message(s, seq), SendOptions::default())
                    .await
                    .unwrap();
            }
        }
        let p = a.paths();
        for (i, p) in p.iter().enumerate() {
            assert!(p.stats.data_chunks_sent > 100, "path {i} idle: {p:?}");
        }
        a.shutdown().await.unwrap();
    };
    timeout(LIMIT, sender)
        .await
        .expect("transfer did not finish");
    let next = timeout(LIMIT, receiver).await.unwrap().unwrap();
    assert!(next.iter().all(|x| *x == n), "{next:?}");
    cli.close().await;
}

/// Run-time path policy and path events on a two-homed association: a standby path
/// carries no data while the other is active; a cut path is reported with its address pair.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn standby_path_and_path_events() {
    let assoc = AssociationConfig {
        hb_interval: Some(Duration::from_millis(100)),
        path_max_retrans: 2,
        ..cfg()
    };
    // Addresses and SCTP port of their own: the core tells peers apart by IP and SCTP port.
    let srv = Endpoint::builder()
        .bind("127.0.0.5:0".parse().unwrap())
        .bind("127.0.0.6:0".parse().unwrap())
        .listen(5003)
        .association(assoc.clone())
        .build()
        .unwrap();
    let cli = Endpoint::builder()
        .bind("127.0.0.7:0".parse().unwrap())
        .bind("127.0.0.8:0".parse().unwrap())
        .association(assoc)
        .build()
        .unwrap();
    let to = srv.local_addrs()[0];
    timeout(LIMIT, async {
        let a = cli.connect(&[to], 5003).await.unwrap();
        let b = srv.accept().await.unwrap();
        let p = loop {
            let p = a.paths();
            if p.len() == 2 && p.iter().all(|p| p.state == PathState::Active) {
                break p;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let standby = p[1].remote;
        assert_eq!(standby.ip(), ip("127.0.0.6"));
        let mut events = a.events();
        a.set_path_standby(standby, true).await.unwrap();
        assert!(
            a.set_path_standby("127.0.0.9:1".parse().unwrap(), true)
                .await
                .is_err()
        );
        let n = 300u64;
        for seq in 0..n {
            a.send(0, message(0, seq as u32), SendOptions::default())
                .await
                .unwrap();
        }
        for _ in 0..n {
            b.recv().await.unwrap().unwrap();
        }
        let p = loop {
            let p = a.paths();
            if a.stats().bytes_acked == n * MESSAGE as u64 && p[0].stats.data_chunks_sent >= n {
                break p;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        assert!(p[1].standby);
        assert_eq!(p[1].stats.data_chunks_sent, 0, "standby path used: {p:?}");
        assert!(p[0].stats.data_chunks_sent >= n);
        // Forbidden instead of standby, with a cost: still no DATA there.
        a.set_path_standby(standby, false).await.unwrap();
        a.set_path_forbidden(standby, true).await.unwrap();
        a.set_path_cost(standby, 7).await.unwrap();
        for seq in n..2 * n {
            a.send(0, message(0, seq as u32), SendOptions::default())
                .await
                .unwrap();
        }
        for _ in 0..n {
            b.recv().await.unwrap().unwrap();
        }
        let p = loop {
            let p = a.paths();
            if a.stats().bytes_acked == 2 * n * MESSAGE as u64 && p[1].forbidden {
                break p;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        assert_eq!((p[1].cost, p[1].standby), (7, false));
        assert_eq!(p[1].stats.data_chunks_sent, 0, "forbidden path used: {p:?}");
        a.set_path_forbidden(standby, false).await.unwrap();
        // Cut the standby path: its heartbeats go unanswered and the event names it.
        cli.blackhole(ip("127.0.0.8"), ip("127.0.0.6"), true)
            .unwrap();
        loop {
            match events.next().await.unwrap() {
                braid_net::AssocEvent::PathState {
                    local,
                    remote,
                    state,
                    ..
                } if remote == standby && state != PathState::Active => {
                    assert_eq!(local.ip(), ip("127.0.0.8"));
                    break;
                }
                _ => {}
            }
        }
        cli.blackhole(ip("127.0.0.8"), ip("127.0.0.6"), false)
            .unwrap();
        a.set_cmt(None).unwrap();
        a.set_primary(to).await.unwrap();
        a.shutdown().await.unwrap();
    })
    .await
    .expect("standby test timed out");
    srv.close().await;
    cli.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_path_keeps_its_counters_and_the_others_their_ids() {
    let srv = Endpoint::builder()
        .bind("127.0.0.11:0".parse().unwrap())
        .bind("127.0.0.12:0".parse().unwrap())
        .listen(5004)
        .association(cfg())
        .build()
        .unwrap();
    let cli = Endpoint::builder()
        .bind("127.0.0.13:0".parse().unwrap())
        .bind("127.0.0.14:0".parse().unwrap())
        .association(cfg())
        .build()
        .unwrap();
    let to = srv.local_addrs()[0];
    timeout(LIMIT, async {
        let a = cli.connect(&[to], 5004).await.unwrap();
        let reader = tokio::spawn(receive_in_order(srv));
        let p = loop {
            let p = a.paths();
            if p.len() == 2 && p.iter().all(|p| p.state == PathState::Active) {
                break p;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        let gone = p[1].remote;
        let n = 300u32;
        for seq in 0..n {
            a.send(0, message(0, seq), SendOptions::default())
                .await
                .unwrap();
        }
        // Both paths carry data; then the second interface goes away, and the path with it.
        while a.paths()[1].stats.data_chunks_sent == 0 {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        cli.blackhole(ip("127.0.0.14"), ip("127.0.0.12"), true)
            .unwrap();
        a.remove_path(gone).await.unwrap();
        assert!(matches!(
            a.remove_path(to).await,
            Err(braid_net::Error::RemovePath(
                braid_net::RemovePathError::LastPath
            ))
        ));
        for seq in n..2 * n {
            a.send(0, message(0, seq), SendOptions::default())
                .await
                .unwrap();
        }
        let removed = loop {
            let r = a.removed_paths();
            if a.stats().bytes_acked == u64::from(2 * n) * MESSAGE as u64 && !r.is_empty() {
                break r;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        assert_eq!(removed.len(), 1);
        assert_eq!((removed[0].id, removed[0].remote), (p[1].id, gone));
        assert!(
            removed[0].stats.data_chunks_sent > 0,
            "its counters were lost"
        );
        let live = a.paths();
        assert_eq!(live.len(), 1);
        assert_eq!((live[0].id, live[0].remote), (p[0].id, to));
        a.shutdown().await.unwrap();
        let got = reader.await.unwrap();
        assert_eq!(got[0], 2 * n, "messages lost");
    })
    .await
    .expect("removal test timed out");
    cli.close().await;
}

/// Under CMT the receiver counts arrivals per path: both of its paths (its local address,
/// the sender's) receive DATA, and the sender's receive the SACKs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_path_counts_what_it_received() {
    timeout(LIMIT, async {
        let srv = Endpoint::bind(
            EndpointConfig {
                listen: true,
                association: cfg(),
                ..Default::default()
            },
            &[
                "127.0.0.1:0".parse().unwrap(),
                "127.0.0.2:0".parse().unwrap(),
            ],
        )
        .unwrap();
        let cli = Endpoint::bind(
            EndpointConfig {
                association: cfg(),
                ..Default::default()
            },
            &[
                "127.0.0.3:0".parse().unwrap(),
                "127.0.0.4:0".parse().unwrap(),
            ],
        )
        .unwrap();
        let a = cli.connect(&[srv.local_addrs()[0]], 5001).await.unwrap();
        let b = srv.accept().await.unwrap();
        let total = 2000usize;
        for i in 0..total {
            a.send(0, message(0, i as u32), SendOptions::default())
                .await
                .unwrap();
        }
        for _ in 0..total {
            b.recv().await.unwrap().unwrap();
        }
        // Every path confirmed and counted (paths() may be one publication behind).
        let bytes = (total * MESSAGE) as u64;
        let paths = loop {
            let p = b.paths();
            let sum: u64 = p.iter().map(|q| q.stats.bytes_received).sum();
            if p.len() >= 2 && sum > bytes && p.iter().all(|q| q.stats.packets_received > 0) {
                break p;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        for p in &paths {
            assert!(p.stats.bytes_received > 0, "{p:?}");
            assert!(
                p.stats.bytes_received >= p.stats.packets_received * 12,
                "{p:?}"
            );
        }
        let sent = loop {
            let p = a.paths();
            if p.iter().filter(|q| q.stats.packets_received > 0).count() >= 2 {
                break p;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        };
        assert!(
            sent.iter().any(|q| q.stats.bytes_sent > bytes / 10),
            "{sent:?}"
        );
        a.shutdown().await.unwrap();
        cli.close().await;
        srv.close().await;
    })
    .await
    .unwrap();
}
