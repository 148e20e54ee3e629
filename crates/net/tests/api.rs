//! The application API on loopback: clonable handles, close reasons, published statistics,
//! per-stream handles, events, run-time control and cancel safety.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use braid_net::{
    AssocEvent, Association, AssociationConfig, CloseReason, Endpoint, EndpointConfig, Error,
    PathState, SchedulerKind, SendOptions,
};
use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
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

fn endpoint(listen: bool) -> Endpoint {
    let cfg = EndpointConfig {
        listen,
        association: assoc_cfg(),
        ..Default::default()
    };
    Endpoint::bind(cfg, &["127.0.0.1:0".parse().unwrap()]).unwrap()
}

async fn pair() -> (Endpoint, Endpoint, Association, Association) {
    let srv = endpoint(true);
    let cli = endpoint(false);
    let a = cli.connect(&[srv.local_addrs()[0]], 5001).await.unwrap();
    let b = srv.accept().await.unwrap();
    (srv, cli, a, b)
}

fn msg(b: &'static [u8]) -> Bytes {
    Bytes::from_static(b)
}

#[tokio::test]
async fn clones_share_the_association_and_the_last_drop_shuts_down() {
    timeout(LIMIT, async {
        let (srv, cli, a, b) = pair().await;
        let a2 = a.clone();
        drop(a);
        // Still open: a clone lives.
        a2.send(0, msg(b"one"), SendOptions::default())
            .await
            .unwrap();
        assert_eq!(&b.recv().await.unwrap().unwrap().data[..], b"one");
        drop(a2);
        // The last handle gone: a graceful shutdown, which the peer sees as the end.
        assert!(b.recv().await.unwrap().is_none());
        assert_eq!(b.closed().await, CloseReason::Shutdown);
        // After the fact too.
        assert_eq!(b.closed().await, CloseReason::Shutdown);
        assert_eq!(b.close_reason(), Some(CloseReason::Shutdown));
        cli.close().await;
        srv.close().await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn an_abort_reaches_recv_after_the_queued_messages() {
    timeout(LIMIT, async {
        let (srv, cli, a, b) = pair().await;
        for m in [b"x1", b"x2"] {
            a.send(0, msg(m), SendOptions::default()).await.unwrap();
        }
        // Both messages arrived before the abort is sent.
        while b.stats().messages_received < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        a.abort();
        assert_eq!(a.closed().await, CloseReason::LocalAbort);
        assert!(matches!(b.closed().await, CloseReason::PeerAbort(_)));
        assert_eq!(&b.recv().await.unwrap().unwrap().data[..], b"x1");
        assert_eq!(&b.recv().await.unwrap().unwrap().data[..], b"x2");
        // The reason, not a silent end; every time it is asked.
        for _ in 0..2 {
            match b.recv().await {
                Err(Error::Closed(CloseReason::PeerAbort(_))) => {}
                r => panic!("expected the peer's abort, got {r:?}"),
            }
        }
        assert!(matches!(
            a.recv().await,
            Err(Error::Closed(CloseReason::LocalAbort))
        ));
        cli.close().await;
        srv.close().await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn stats_and_paths_are_published_without_a_round_trip() {
    timeout(LIMIT, async {
        let (srv, cli, a, b) = pair().await;
        assert_eq!(a.open_streams(), (16, 16));
        let p = a.paths();
        assert_eq!(p.len(), 1);
        assert_eq!(p[0].remote, srv.local_addrs()[0]);
        assert_eq!(p[0].state, PathState::Active);
        let total = 200 * 1000;
        for _ in 0..200 {
            a.send(3, Bytes::from(vec![7u8; 1000]), SendOptions::default())
                .await
                .unwrap();
        }
        let mut got = 0;
        while got < total {
            got += b.recv().await.unwrap().unwrap().data.len();
        }
        // Exact once idle: the throttled publication catches up by itself.
        while a.stats().bytes_acked < total as u64 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        assert_eq!(a.stats().messages_sent, 200);
        // Paths may be a publication behind: a read that finds them so asks for a fresh one.
        let p = loop {
            let p = a.paths();
            if p[0].stats.bytes_sent > total as u64 {
                break p;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        assert!(p[0].srtt.is_some());
        assert!(a.removed_paths().is_empty());
        // The sender's path received the SACKs (and the COOKIE-ACK).
        assert!(p[0].stats.packets_received > 0, "{:?}", p[0].stats);
        // The receiver's path saw every byte arrive, and the handshake's packets too.
        let q = loop {
            let q = b.paths();
            if q[0].stats.bytes_received > total as u64 {
                break q;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        };
        assert!(q[0].stats.packets_received >= 200 / 2, "{:?}", q[0].stats);
        assert!(q[0].stats.bytes_sent > 0 && q[0].stats.bytes_sent < total as u64 / 4);
        a.shutdown().await.unwrap();
        // Still readable after the close.
        assert_eq!(a.stats().bytes_acked, total as u64);
        assert_eq!(a.paths().len(), 1);
        cli.close().await;
        srv.close().await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn stream_handles_route_messages_and_carry_bytes() {
    timeout(LIMIT, async {
        let (srv, cli, a, b) = pair().await;
        // Stream 2 claimed before anything arrives; stream 5 found by accept_stream.
        let mut r2 = b.recv_stream(2).unwrap();
        assert!(matches!(b.recv_stream(2), Err(Error::StreamInUse(2))));
        // Stream 0 has no handle: association-wide recv (accept_stream not called yet).
        a.send(0, msg(b"on zero"), SendOptions::default())
            .await
            .unwrap();
        let m = b.recv().await.unwrap().unwrap();
        assert_eq!((m.stream_id, &m.data[..]), (0, &b"on zero"[..]));
        let accept = {
            let b = b.clone();
            tokio::spawn(async move { b.accept_stream().await })
        };
        tokio::task::yield_now().await;
        // accept_stream must be waiting before stream 5's first message arrives.
        tokio::time::sleep(Duration::from_millis(50)).await;
        let s2 = a.open_stream(2).unwrap();
        let mut s5 = a.open_stream(5).unwrap();
        s5.set_write_chunk(1000);
        let blob: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        s5.write_all(&blob).await.unwrap();
        s2.send(msg(b"on two")).await.unwrap();
        let mut r5 = accept.await.unwrap().unwrap();
        assert_eq!(r5.id(), 5);
        let mut back = vec![0u8; blob.len()];
        r5.read_exact(&mut back).await.unwrap();
        assert_eq!(back, blob);
        let m = r2.recv().await.unwrap().unwrap();
        assert_eq!((m.stream_id, &m.data[..]), (2, &b"on two"[..]));
        // A dropped RecvStream hands its stream back to recv.
        drop(r2);
        s2.send(msg(b"again")).await.unwrap();
        let m = b.recv().await.unwrap().unwrap();
        assert_eq!((m.stream_id, &m.data[..]), (2, &b"again"[..]));
        assert!(a.open_stream(16).is_err());
        // Scheduling settings are accepted at run time.
        s2.set_priority(3).unwrap();
        s2.set_weight(2).unwrap();
        s2.set_path(0).unwrap();
        a.set_stream_scheduler(SchedulerKind::Priority).unwrap();
        a.set_primary(srv.local_addrs()[0]).await.unwrap();
        assert!(matches!(
            a.set_primary("127.0.0.1:1".parse().unwrap()).await,
            Err(Error::NoSuchPath(_))
        ));
        drop((s2, s5));
        a.shutdown().await.unwrap();
        // The stream reader sees the graceful end too (EOF).
        let mut rest = Vec::new();
        r5.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty());
        cli.close().await;
        srv.close().await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn events_report_shutdown_and_close() {
    timeout(LIMIT, async {
        let (srv, cli, a, b) = pair().await;
        let mut ev = b.events();
        a.shutdown().await.unwrap();
        let mut seen = Vec::new();
        while let Some(e) = ev.next().await {
            seen.push(e);
        }
        assert!(seen.contains(&AssocEvent::PeerShutdown), "{seen:?}");
        assert_eq!(
            seen.last(),
            Some(&AssocEvent::Closed(CloseReason::Shutdown))
        );
        // Subscribing after the close still tells why.
        let mut late = b.events();
        assert_eq!(
            late.next().await,
            Some(AssocEvent::Closed(CloseReason::Shutdown))
        );
        assert_eq!(late.next().await, None);
        cli.close().await;
        srv.close().await;
    })
    .await
    .unwrap();
}

/// Polls `f` once or a few times and drops it: a future cancelled part-way.
async fn poll_then_drop<F: std::future::Future>(f: F, polls: usize) {
    let mut f = std::pin::pin!(f);
    for _ in 0..polls {
        let done =
            std::future::poll_fn(|cx| std::task::Poll::Ready(f.as_mut().poll(cx).is_ready())).await;
        if done {
            return;
        }
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn dropped_futures_leak_nothing() {
    timeout(LIMIT, async {
        // Another SCTP port: the core tells peers apart by IP and SCTP port, not UDP port.
        let srv0 = Endpoint::builder()
            .bind("127.0.0.1:0".parse().unwrap())
            .listen(5002)
            .association(assoc_cfg())
            .build()
            .unwrap();
        let srv = endpoint(true);
        let cli = endpoint(false);
        for i in 0..30usize {
            // connect and accept cancelled at various points.
            poll_then_drop(cli.connect(&[srv0.local_addrs()[0]], 5002), i % 4).await;
            poll_then_drop(srv.accept(), i % 3).await;
        }
        // The cancelled accepts did not swallow the next association.
        let a = cli.connect(&[srv.local_addrs()[0]], 5001).await.unwrap();
        let b = srv.accept().await.unwrap();
        // What the cancelled connects opened on srv0: accepted and dropped (each was
        // aborted by cli when its connect future turned out to be gone).
        while let Ok(Ok(c)) = timeout(Duration::from_millis(300), srv0.accept()).await {
            drop(c);
        }
        let mut sent = 0u32;
        for i in 0..50usize {
            let data = Bytes::from(vec![(i % 256) as u8; 20_000]);
            let mut f = std::pin::pin!(a.send(0, data, SendOptions::default()));
            let done = std::future::poll_fn(|cx| std::task::Poll::Ready(f.as_mut().poll(cx))).await;
            // A send that completed on its first poll was queued; a dropped pending one may
            // or may not have been (never twice).
            if let std::task::Poll::Ready(r) = done {
                r.unwrap();
                sent += 1;
            }
            poll_then_drop(b.recv(), i % 2).await;
        }
        assert!(sent > 0);
        a.send(1, msg(b"last"), SendOptions::default())
            .await
            .unwrap();
        // Everything still works: the last message arrives after what recv left.
        loop {
            let m = b.recv().await.unwrap().unwrap();
            if m.stream_id == 1 {
                assert_eq!(&m.data[..], b"last");
                break;
            }
        }
        a.shutdown().await.unwrap();
        drop((a, b));
        // No association, driver entry or accept left behind once everything closed.
        loop {
            let (c1, c2) = (
                cli.debug_counts().await.unwrap(),
                srv.debug_counts().await.unwrap(),
            );
            let c0 = srv0.debug_counts().await.unwrap();
            if c1 == (0, 0, 0) && c2 == (0, 0, 0) && c0 == (0, 0, 0) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        cli.close().await;
        srv.close().await;
        srv0.close().await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn the_builder_names_the_bad_setting() {
    let e = Endpoint::builder().build().err().unwrap();
    assert!(matches!(e, braid_net::BuildError::NoAddress), "{e}");
    let e = Endpoint::builder()
        .bind("127.0.0.1:0".parse().unwrap())
        .streams(0, 16)
        .build()
        .err()
        .unwrap();
    assert!(matches!(e, braid_net::BuildError::Config(_)), "{e}");
    assert!(e.to_string().contains("outbound_streams"), "{e}");
    let ep = Endpoint::builder()
        .bind("127.0.0.1:0".parse().unwrap())
        .listen(5004)
        .cmt(true)
        .idata(true)
        .stream_scheduler(SchedulerKind::RoundRobin)
        .build()
        .unwrap();
    ep.close().await;
}

/// The builder's explicit setters win over a wholesale configuration whatever the order of
/// the calls: `.cmt(true)` before `.association(cfg)` is not undone by it.
#[tokio::test]
async fn the_builder_does_not_depend_on_call_order() {
    let base = AssociationConfig {
        cmt: None,
        idata: false,
        rto_initial: Duration::from_millis(300),
        ..assoc_cfg()
    };
    let whole = EndpointConfig {
        listen: false,
        port: 7000,
        association: assoc_cfg(),
        ..Default::default()
    };
    let before = Endpoint::builder()
        .listen(5005)
        .cmt(true)
        .idata(true)
        .streams(8, 9)
        .buffers(1 << 16, 1 << 17)
        .max_message_size(4096)
        .stream_scheduler(SchedulerKind::RoundRobin)
        .config(whole.clone())
        .association(base.clone())
        .endpoint_config();
    let after = Endpoint::builder()
        .association(base.clone())
        .config(whole)
        .listen(5005)
        .cmt(true)
        .idata(true)
        .streams(8, 9)
        .buffers(1 << 16, 1 << 17)
        .max_message_size(4096)
        .stream_scheduler(SchedulerKind::RoundRobin)
        .endpoint_config();
    for c in [&before, &after] {
        assert!(c.listen && c.port == 5005, "{c:?}");
        let a = &c.association;
        assert!(a.cmt.is_some() && a.idata, "{a:?}");
        assert_eq!((a.outbound_streams, a.max_inbound_streams), (8, 9));
        assert_eq!((a.send_buffer, a.recv_buffer), (1 << 16, 1 << 17));
        assert_eq!(a.max_message_size, 4096);
        assert_eq!(a.stream_scheduler, SchedulerKind::RoundRobin);
        // Unset by any setter: association() wins over config()'s association.
        assert_eq!(a.rto_initial, Duration::from_millis(300));
    }
    // The same on a running endpoint: CMT set before the wholesale configuration runs.
    timeout(LIMIT, async {
        let srv = Endpoint::builder()
            .bind("127.0.0.1:0".parse().unwrap())
            .listen(5001)
            .cmt(true)
            .association(base.clone())
            .build()
            .unwrap();
        let cli = Endpoint::builder()
            .bind("127.0.0.1:0".parse().unwrap())
            .association(base)
            .build()
            .unwrap();
        let a = cli.connect(&[srv.local_addrs()[0]], 5001).await.unwrap();
        let b = srv.accept().await.unwrap();
        assert!(b.negotiated().cmt && !a.negotiated().cmt);
        a.shutdown().await.unwrap();
        cli.close().await;
        srv.close().await;
    })
    .await
    .unwrap();
}

#[tokio::test]
async fn connect_by_host_name() {
    timeout(LIMIT, async {
        let srv = endpoint(true);
        let cli = endpoint(false);
        let port = srv.local_addrs()[0].port();
        // localhost may also resolve to ::1: only the IPv4 address fits cli's socket.
        let a = cli
            .connect_host(&format!("localhost:{port}"), 5001)
            .await
            .unwrap();
        let b = srv.accept().await.unwrap();
        a.send(0, msg(b"by name"), SendOptions::default())
            .await
            .unwrap();
        assert_eq!(&b.recv().await.unwrap().unwrap().data[..], b"by name");
        assert!(matches!(
            cli.connect_host("no-such-host.invalid:1", 5001).await,
            Err(Error::Resolve { .. })
        ));
        a.shutdown().await.unwrap();
        cli.close().await;
        srv.close().await;
    })
    .await
    .unwrap();
}

/// `connect_host` gives every resolved address of a bound family to one association: with
/// a client on both loopbacks and a server on 127.0.0.1 alone, "localhost" works whichever
/// of ::1 and 127.0.0.1 the resolver lists first (::1 answers with a port unreachable).
#[tokio::test]
async fn connect_host_offers_every_resolved_address() {
    timeout(LIMIT, async {
        let srv = endpoint(true);
        let port = srv.local_addrs()[0].port();
        let cfg = EndpointConfig {
            association: AssociationConfig {
                rto_initial: Duration::from_secs(3),
                ..assoc_cfg()
            },
            ..Default::default()
        };
        let dual = ["127.0.0.1:0".parse().unwrap(), "[::1]:0".parse().unwrap()];
        let Ok(cli) = Endpoint::bind(cfg, &dual) else {
            eprintln!("no IPv6 loopback here: skipped");
            srv.close().await;
            return;
        };
        let t0 = tokio::time::Instant::now();
        let a = cli
            .connect_host(&format!("localhost:{port}"), 5001)
            .await
            .unwrap();
        assert!(t0.elapsed() < Duration::from_secs(3), "{:?}", t0.elapsed());
        assert!(
            a.paths().iter().all(|p| p.remote.is_ipv4()),
            "{:?}",
            a.paths()
        );
        drop(srv.accept().await.unwrap());
        let e = cli.connect_host("no-such-host.invalid:1", 5001).await.err();
        assert!(matches!(e, Some(Error::Resolve { .. })), "{e:?}");
        a.shutdown().await.unwrap();
        cli.close().await;
        srv.close().await;
    })
    .await
    .unwrap();
}

async fn pair_with(
    server: AssociationConfig,
    client: AssociationConfig,
) -> (Endpoint, Endpoint, Association, Association) {
    let srv = Endpoint::bind(
        EndpointConfig {
            listen: true,
            association: server,
            ..Default::default()
        },
        &["127.0.0.1:0".parse().unwrap()],
    )
    .unwrap();
    let cli = Endpoint::bind(
        EndpointConfig {
            association: client,
            ..Default::default()
        },
        &["127.0.0.1:0".parse().unwrap()],
    )
    .unwrap();
    let a = cli.connect(&[srv.local_addrs()[0]], 5001).await.unwrap();
    let b = srv.accept().await.unwrap();
    (srv, cli, a, b)
}

/// `negotiated()` says what both sides agreed: an extension offered by one side only is
/// off at both ends, CMT is each side's own setting, and the spurious-retransmission
/// detection that runs is the configured Eifel (braid echoes it) or none.
#[tokio::test]
async fn negotiated_reports_what_the_handshake_agreed() {
    use braid_net::{CmtConfig, SpuriousDetection};
    timeout(LIMIT, async {
        let on = AssociationConfig {
            idata: true,
            nr_sack: true,
            pr_sctp: true,
            cmt: Some(CmtConfig::default()),
            spurious_detection: SpuriousDetection::EifelTimestamp,
            ..assoc_cfg()
        };
        let off = AssociationConfig {
            idata: false,
            nr_sack: false,
            pr_sctp: false,
            cmt: None,
            spurious_detection: SpuriousDetection::Off,
            ..assoc_cfg()
        };

        // Both offer everything.
        let (srv, cli, a, b) = pair_with(on.clone(), on.clone()).await;
        for n in [a.negotiated(), b.negotiated()] {
            assert!(n.idata && n.nr_sack && n.pr_sctp && n.cmt, "{n:?}");
            assert!(!n.load_sharing, "{n:?}");
            assert!(n.eifel_timestamp, "{n:?}");
            assert_eq!(n.spurious_detection, SpuriousDetection::EifelTimestamp);
            assert_eq!((n.outbound_streams, n.inbound_streams), (16, 16));
        }
        a.shutdown().await.unwrap();
        cli.close().await;
        srv.close().await;

        // The client offers nothing: the server's offers are not agreed to.
        let (srv, cli, a, b) = pair_with(on.clone(), off.clone()).await;
        let (na, nb) = (a.negotiated(), b.negotiated());
        for n in [na, nb] {
            assert!(
                !n.idata && !n.nr_sack && !n.pr_sctp && !n.load_sharing,
                "{n:?}"
            );
        }
        assert!(!na.cmt && nb.cmt, "CMT is each side's own: {na:?} {nb:?}");
        assert_eq!(na.spurious_detection, SpuriousDetection::Off);
        // The client still echoes timestamps, so the server's Eifel runs.
        assert_eq!(nb.spurious_detection, SpuriousDetection::EifelTimestamp);
        a.shutdown().await.unwrap();
        cli.close().await;
        srv.close().await;

        // Load sharing offered by both replaces CMT, and no spurious detection runs under it.
        let ls = AssociationConfig {
            load_sharing: true,
            ..on.clone()
        };
        let (srv, cli, a, b) = pair_with(ls.clone(), ls).await;
        for n in [a.negotiated(), b.negotiated()] {
            assert!(n.load_sharing && !n.cmt && !n.idata, "{n:?}");
            assert_eq!(n.spurious_detection, SpuriousDetection::Off);
        }
        a.shutdown().await.unwrap();
        cli.close().await;
        srv.close().await;

        // Offered by the server only: load sharing is off, the client's CMT runs.
        let ls_srv = AssociationConfig {
            load_sharing: true,
            ..on.clone()
        };
        let (srv, cli, a, b) = pair_with(ls_srv, on).await;
        let (na, nb) = (a.negotiated(), b.negotiated());
        assert!(
            !na.load_sharing && !nb.load_sharing && na.cmt && nb.cmt,
            "{na:?} {nb:?}"
        );
        a.shutdown().await.unwrap();
        cli.close().await;
        srv.close().await;
    })
    .await
    .unwrap();
}

/// `accept` on an endpoint bound without `listen` fails at once: no association can ever
/// arrive there, so waiting would hang the caller for good.
#[tokio::test]
async fn accept_without_listen_fails_at_once() {
    let cli = endpoint(false);
    let r = timeout(Duration::from_secs(2), cli.accept())
        .await
        .expect("accept on a non-listening endpoint waited instead of failing");
    assert!(matches!(r, Err(Error::NotListening)), "{:?}", r.err());
    let e = Endpoint::builder()
        .bind("127.0.0.1:0".parse().unwrap())
        .build()
        .unwrap();
    let r = timeout(Duration::from_secs(2), e.accept()).await.unwrap();
    assert!(matches!(r, Err(Error::NotListening)), "{:?}", r.err());
    e.close().await;
    cli.close().await;
}

fn bind_at(listen: bool, addrs: &[&str], rto_initial: Duration) -> Endpoint {
    let cfg = EndpointConfig {
        listen,
        association: AssociationConfig {
            rto_initial,
            ..assoc_cfg()
        },
        ..Default::default()
    };
    let addrs: Vec<std::net::SocketAddr> = addrs.iter().map(|a| a.parse().unwrap()).collect();
    Endpoint::bind(cfg, &addrs).unwrap()
}

/// Every address given to `connect` is the peer's from the start: the INIT goes on to the
/// next when the first never answers (T1, RFC 9260 §6.4), and an address the peer does not
/// stand behind is dropped once it answers.
#[tokio::test]
async fn connect_tries_every_address_in_one_association() {
    timeout(LIMIT, async {
        let srv = bind_at(true, &["127.0.0.1:0"], Duration::from_millis(200));
        let cli = bind_at(false, &["127.0.0.1:0"], Duration::from_millis(200));
        let port = srv.local_addrs()[0].port();
        // 127.0.0.3 is silent: its datagrams are dropped, no ICMP comes back.
        cli.blackhole(
            "127.0.0.1".parse().unwrap(),
            "127.0.0.3".parse().unwrap(),
            true,
        )
        .unwrap();
        let silent: std::net::SocketAddr = format!("127.0.0.3:{port}").parse().unwrap();
        let a = cli
            .connect(&[silent, srv.local_addrs()[0]], 5001)
            .await
            .unwrap();
        let b = srv.accept().await.unwrap();
        let remotes: Vec<_> = a.paths().iter().map(|p| p.remote).collect();
        assert_eq!(remotes, vec![srv.local_addrs()[0]], "{:?}", a.paths());
        assert!(a.paths()[0].primary && a.paths()[0].confirmed);
        a.send(0, msg(b"second address"), SendOptions::default())
            .await
            .unwrap();
        assert_eq!(
            &b.recv().await.unwrap().unwrap().data[..],
            b"second address"
        );
        a.shutdown().await.unwrap();
        cli.close().await;
        srv.close().await;
    })
    .await
    .unwrap();
}

/// An ICMP port unreachable for the INIT to one address moves it to the next at once, well
/// before T1 would.
#[tokio::test]
async fn an_unreachable_address_moves_the_init_on_at_once() {
    timeout(LIMIT, async {
        let rto = Duration::from_secs(3);
        let srv = bind_at(true, &["127.0.0.1:0"], rto);
        let cli = bind_at(false, &["127.0.0.1:0"], rto);
        let port = srv.local_addrs()[0].port();
        // Nothing listens on 127.0.0.4: the kernel answers with a port unreachable.
        let closed: std::net::SocketAddr = format!("127.0.0.4:{port}").parse().unwrap();
        let t0 = tokio::time::Instant::now();
        let a = cli
            .connect(&[closed, srv.local_addrs()[0]], 5001)
            .await
            .unwrap();
        assert!(t0.elapsed() < rto, "waited for T1: {:?}", t0.elapsed());
        let remotes: Vec<_> = a.paths().iter().map(|p| p.remote).collect();
        assert_eq!(remotes, vec![srv.local_addrs()[0]]);
        drop(srv.accept().await.unwrap());
        a.shutdown().await.unwrap();
        cli.close().await;
        srv.close().await;
    })
    .await
    .unwrap();
}

/// A multi-homed peer given by both its addresses has both paths confirmed as soon as the
/// handshake is over, without waiting for a HEARTBEAT (RFC 9260 §5.4 rule 1).
#[tokio::test]
async fn given_addresses_the_peer_lists_are_confirmed_paths_at_once() {
    timeout(LIMIT, async {
        let srv = bind_at(
            true,
            &["127.0.0.1:0", "127.0.0.2:0"],
            Duration::from_millis(200),
        );
        let cli = bind_at(false, &["127.0.0.1:0"], Duration::from_millis(200));
        let given = srv.local_addrs().to_vec();
        let a = cli.connect(&given, 5001).await.unwrap();
        let paths = a.paths();
        let mut remotes: Vec<_> = paths.iter().map(|p| p.remote).collect();
        remotes.sort();
        let mut want = given.clone();
        want.sort();
        assert_eq!(remotes, want, "{paths:?}");
        assert!(
            paths
                .iter()
                .all(|p| p.confirmed && p.state == PathState::Active),
            "{paths:?}"
        );
        drop(srv.accept().await.unwrap());
        a.shutdown().await.unwrap();
        cli.close().await;
        srv.close().await;
    })
    .await
    .unwrap();
}

/// An INIT to an SCTP port nobody serves gets an ABORT (RFC 9260 §8.4), so connecting to
/// a wrong port fails with the peer's abort rather than waiting out every INIT retry; a
/// destination nothing could answer from, or the endpoint's own address, fails before
/// anything is sent.
#[tokio::test]
async fn a_wrong_port_or_an_impossible_address_fails_at_once() {
    timeout(LIMIT, async {
        let srv = endpoint(true);
        let cli = endpoint(false);
        let at = srv.local_addrs()[0];
        let served = EndpointConfig::default().port;
        let r = cli.connect(&[at], served.wrapping_add(1).max(1)).await;
        assert!(
            matches!(r, Err(Error::Closed(CloseReason::PeerAbort(_)))),
            "{:?}",
            r.err()
        );
        for bad in ["0.0.0.0:9899", "127.0.0.1:0"] {
            let r = cli.connect(&[bad.parse().unwrap()], served).await;
            assert!(matches!(r, Err(Error::Connect(_))), "{bad}: {:?}", r.err());
        }
        let own = cli.local_addrs()[0];
        let r = cli.connect(&[own], served).await;
        assert!(
            matches!(r, Err(Error::Connect(_))),
            "own address: {:?}",
            r.err()
        );
        // The listener still serves its own port.
        let a = cli.connect(&[at], served).await.unwrap();
        drop(srv.accept().await.unwrap());
        a.shutdown().await.unwrap();
        cli.close().await;
        srv.close().await;
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_write_waits_for_room_and_async_read_gets_every_byte() {
    timeout(LIMIT, async {
        let (srv, cli, a, b) = pair().await;
        let mut r = b.recv_stream(7).unwrap();
        let mut w = a.open_stream(7).unwrap();
        // Several times the send queue: AsyncWrite must wait for room (waker) and resume.
        let total = 6 << 20;
        let data: Vec<u8> = (0..total as u32).map(|i| (i % 253) as u8).collect();
        let expect = data.clone();
        let writer = tokio::spawn(async move {
            w.write_all(&data).await.unwrap();
            w.flush().await.unwrap();
            w
        });
        let mut got = vec![0u8; total];
        r.read_exact(&mut got).await.unwrap();
        assert!(got == expect, "bytes differ");
        drop(writer.await.unwrap());
        a.shutdown().await.unwrap();
        let mut rest = Vec::new();
        r.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty());
        cli.close().await;
        srv.close().await;
    })
    .await
    .unwrap();
}
