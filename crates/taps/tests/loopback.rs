//! braid-taps end to end on loopback: selection, racing, fallback, policies, groups.
//! Every test is bounded by a timeout; timings are printed as measurements, never asserted
//! tightly.

use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

use braid_taps::*;

type R = Result<(), Box<dyn std::error::Error>>;

const BOUND: Duration = Duration::from_secs(20);

fn lo() -> LocalEndpoint {
    LocalEndpoint::new().with_ip_address(std::net::Ipv4Addr::LOCALHOST.into())
}

fn remote(port: u16) -> RemoteEndpoint {
    RemoteEndpoint::new()
        .with_ip_address(std::net::Ipv4Addr::LOCALHOST.into())
        .with_port(port)
}

fn fresh_cib() -> Result<Arc<Cib>, Box<dyn std::error::Error>> {
    Ok(Arc::new(Cib::in_memory()?))
}

async fn listener(props: TransportProperties) -> Result<Listener, EstablishmentError> {
    Preconnection::new(vec![lo()], vec![], props, SecurityParameters::disabled())
        .listen()
        .await
}

/// Echoes every message of every Connection (and of the Connections cloned into its group).
fn echo_server(mut l: Listener) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(c) = l.connection_received().await {
            tokio::spawn(echo(c));
        }
    })
}

fn echo(c: Connection) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    Box::pin(async move {
        let c = Arc::new(c);
        let c2 = Arc::clone(&c);
        tokio::spawn(async move {
            while let Some(n) = c2.connection_received().await {
                tokio::spawn(echo(n));
            }
        });
        while let Ok(Some(m)) = c.receive().await {
            if c.send(Message::new(m.data)).await.is_err() {
                break;
            }
        }
        c.close().await;
    })
}

async fn round_trip(c: &Connection, text: &'static [u8]) -> R {
    c.send(Message::new(text)).await?;
    let m = c.receive().await?.ok_or("closed before the echo")?;
    assert_eq!(&m.data[..], text);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn braid_preferred_when_both_work() -> R {
    tokio::time::timeout(BOUND, async {
        let l = listener(TransportProperties::new()).await?;
        let stacks: Vec<_> = l.local_addrs().iter().map(|(k, _)| *k).collect();
        assert!(stacks.contains(&StackKind::Braid) && stacks.contains(&StackKind::Tcp));
        let port = l.port();
        let _srv = echo_server(l);
        let pre = Preconnection::new(
            vec![],
            vec![remote(port)],
            TransportProperties::new(),
            SecurityParameters::disabled(),
        )
        .with_cib(fresh_cib()?);
        let (c, report) = pre.initiate_with_report().await?;
        assert_eq!(c.stack(), StackKind::Braid);
        let w = report.winner().ok_or("no winner")?;
        println!(
            "MEASURE braid-wins time-to-ready {:?} (attempt delay {:?}); attempts {:?}",
            match w.outcome {
                Outcome::Won(t) => t,
                _ => Duration::ZERO,
            },
            report.attempt_delay,
            report
                .attempts
                .iter()
                .map(|a| (a.candidate.stack, a.outcome.clone()))
                .collect::<Vec<_>>()
        );
        round_trip(&c, b"over braid").await?;
        c.close().await;
        Ok(())
    })
    .await?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn falls_back_to_tcp_when_braid_is_refused() -> R {
    tokio::time::timeout(BOUND, async {
        // The server offers TCP only: braid's INIT meets a closed UDP port (ICMP port
        // unreachable), the attempt fails and TCP starts at once (RFC 8305 §5). The silent
        // drop case (no ICMP: TCP starts after the attempt delay) is scripts/netns-taps.sh.
        let mut sp = TransportProperties::new();
        sp.prohibit("stack:braid")?;
        let l = listener(sp).await?;
        let port = l.port();
        let _srv = echo_server(l);
        let cib = fresh_cib()?;
        let pre = Preconnection::new(
            vec![],
            vec![remote(port)],
            TransportProperties::new(),
            SecurityParameters::disabled(),
        )
        .with_cib(cib.clone());
        let order: Vec<_> = pre.candidates().await?.iter().map(|c| c.stack).collect();
        assert_eq!(order, [StackKind::Braid, StackKind::Tcp]);
        let t0 = Instant::now();
        let (c, report) = pre.initiate_with_report().await?;
        let took = t0.elapsed();
        assert_eq!(c.stack(), StackKind::Tcp);
        println!(
            "MEASURE fallback (braid refused) TCP ready after {took:?}, attempt delay {:?}",
            report.attempt_delay
        );
        assert!(matches!(
            report.attempts[0].outcome,
            Outcome::Cancelled | Outcome::Failed(_)
        ));
        round_trip(&c, b"over tcp").await?;
        // The CIB remembers: TCP goes first next time for this remote.
        let order: Vec<_> = pre.candidates().await?.iter().map(|c| c.stack).collect();
        assert_eq!(order, [StackKind::Tcp, StackKind::Braid]);
        let (c2, _) = pre.initiate_with_report().await?;
        assert_eq!(c2.stack(), StackKind::Tcp);
        c2.close().await;
        c.close().await;
        Ok(())
    })
    .await?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_udp_drop_falls_back_after_the_attempt_delay() -> R {
    tokio::time::timeout(BOUND, async {
        // TCP server, and a UDP socket on the same port that reads and drops everything:
        // braid's INIT vanishes without ICMP, as behind a firewall that drops UDP.
        let mut sp = TransportProperties::new();
        sp.prohibit("stack:braid")?;
        let l = listener(sp).await?;
        let port = l.port();
        let _srv = echo_server(l);
        let sink = tokio::net::UdpSocket::bind(("127.0.0.1", port)).await?;
        let _sink = tokio::spawn(async move {
            let mut buf = [0u8; 2048];
            while sink.recv_from(&mut buf).await.is_ok() {}
        });
        let mut props = TransportProperties::new();
        props.attempt_delay = Duration::from_millis(100);
        let pre = Preconnection::new(
            vec![],
            vec![remote(port)],
            props,
            SecurityParameters::disabled(),
        )
        .with_cib(fresh_cib()?);
        let (c, report) = pre.initiate_with_report().await?;
        assert_eq!(c.stack(), StackKind::Tcp);
        assert_eq!(report.attempts[0].outcome, Outcome::Cancelled);
        let tcp = &report.attempts[1];
        // Staggering, not speed: the second attempt never starts before the delay.
        let started = tcp.started.ok_or("tcp never started")?;
        assert!(started >= report.attempt_delay, "{started:?}");
        println!(
            "MEASURE silent UDP drop: TCP started {started:?}, ready {:?} (attempt delay {:?})",
            tcp.outcome, report.attempt_delay
        );
        round_trip(&c, b"after the delay").await?;
        c.close().await;
        Ok(())
    })
    .await?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_file_prohibiting_braid_is_obeyed() -> R {
    tokio::time::timeout(BOUND, async {
        let l = listener(TransportProperties::new()).await?;
        let port = l.port();
        let _srv = echo_server(l);
        let dir = std::env::temp_dir().join(format!("braid-taps-pib-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let path = dir.join("policy.toml");
        std::fs::write(
            &path,
            "[[policy]]\nname = \"no braid to loopback\"\nmatch = { remote = \"127.0.0.1\" }\n\
             prohibit = [\"braid\"]\n",
        )?;
        let pre = Preconnection::new(
            vec![],
            vec![remote(port)],
            TransportProperties::new(),
            SecurityParameters::disabled(),
        )
        .with_cib(fresh_cib()?)
        .with_policy_file(&path)?;
        let (c, report) = pre.initiate_with_report().await?;
        assert_eq!(c.stack(), StackKind::Tcp);
        assert_eq!(report.policies, ["no braid to loopback"]);
        assert!(
            report
                .attempts
                .iter()
                .all(|a| a.candidate.stack != StackKind::Braid)
        );
        round_trip(&c, b"policy says tcp").await?;
        c.close().await;

        // An invalid file is refused with its line.
        std::fs::write(&path, "[[policy]]\nprohibit = [\"quic\"]\n")?;
        let e = Preconnection::new(
            vec![],
            vec![remote(port)],
            TransportProperties::new(),
            SecurityParameters::disabled(),
        )
        .with_policy_file(&path)
        .expect_err("unknown stack");
        assert_eq!(e.line, 2, "{e}");
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    })
    .await?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_candidate_fails_at_once() -> R {
    let cases: Vec<(&str, Preconnection)> = vec![
        ("multistreaming required, braid prohibited", {
            let mut p = TransportProperties::new();
            p.require("multistreaming")?;
            p.prohibit("stack:braid")?;
            Preconnection::new(vec![], vec![remote(9)], p, SecurityParameters::disabled())
        }),
        (
            "security required",
            Preconnection::new(
                vec![],
                vec![remote(9)],
                TransportProperties::new(),
                SecurityParameters::new(),
            ),
        ),
        (
            "no remote",
            Preconnection::new(
                vec![],
                vec![],
                TransportProperties::new(),
                SecurityParameters::disabled(),
            ),
        ),
        ("udp required with reliability required", {
            let mut p = TransportProperties::new();
            p.require("stack:udp")?;
            Preconnection::new(vec![], vec![remote(9)], p, SecurityParameters::disabled())
        }),
    ];
    for (what, pre) in cases {
        let r = tokio::time::timeout(Duration::from_secs(5), pre.initiate())
            .await
            .map_err(|_| format!("{what}: hung"))?;
        match r {
            Err(EstablishmentError::NoCandidate(why)) => {
                assert!(!why.is_empty(), "{what}");
                println!("{what}: {}", why.join("; "));
            }
            Err(e) => panic!("{what}: {e}"),
            Ok(c) => panic!("{what}: connected over {:?}", c.stack()),
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_attempt_failing_lists_each_error() -> R {
    tokio::time::timeout(BOUND, async {
        // A TCP port nobody listens on: refused at once, so the error lists it.
        let port = {
            let s = std::net::TcpListener::bind("127.0.0.1:0")?;
            s.local_addr()?.port()
        };
        let mut p = TransportProperties::new();
        p.require("stack:tcp")?;
        let pre = Preconnection::new(
            vec![],
            vec![remote(port)],
            p,
            SecurityParameters::disabled(),
        )
        .with_cib(fresh_cib()?);
        match pre.initiate().await {
            Err(EstablishmentError::AllFailed(v)) => {
                assert_eq!(v.len(), 1);
                assert_eq!(v[0].stack, StackKind::Tcp);
            }
            other => panic!("{other:?}"),
        }
        Ok(())
    })
    .await?
}

/// A listener and a Preconnection to it that may use `stack` only.
async fn only(stack: StackKind) -> Result<(Listener, Preconnection), Box<dyn std::error::Error>> {
    let mut sp = TransportProperties::new();
    for k in StackKind::ALL {
        if k != stack {
            sp.prohibit(&format!("stack:{}", k.name()))?;
        }
    }
    let l = listener(sp.clone()).await?;
    let pre = Preconnection::new(
        vec![],
        vec![remote(l.port())],
        sp,
        SecurityParameters::disabled(),
    )
    .with_cib(fresh_cib()?);
    Ok((l, pre))
}

async fn group_on(stack: StackKind) -> R {
    let (mut l, pre) = only(stack).await?;
    let a0 = pre.initiate().await?;
    assert_eq!(a0.stack(), stack);
    a0.send_bytes(&b"zero"[..]).await?;
    let b0 = l.connection_received().await.ok_or("no connection")?;
    assert_eq!(&b0.receive().await?.ok_or("closed")?.data[..], b"zero");

    let a1 = a0.clone_in_group()?;
    assert_ne!(a1.info().stream, a0.info().stream);
    a1.send(Message::with_context(
        &b"one"[..],
        MessageContext::new()
            .with_lifetime(Duration::from_secs(5))
            .with_ordered(false),
    ))
    .await?;
    let b1 = b0
        .connection_received()
        .await
        .ok_or("no grouped connection")?;
    let m = b1.receive().await?.ok_or("closed")?;
    assert_eq!(&m.data[..], b"one");
    assert_eq!(m.context.stream, a1.info().stream);

    // Closing one Connection closes its stream only.
    a1.close().await;
    assert_eq!(b1.receive().await?, None);
    a0.send_bytes(&b"still here"[..]).await?;
    assert_eq!(
        &b0.receive().await?.ok_or("closed")?.data[..],
        b"still here"
    );
    b0.send_bytes(&b"back"[..]).await?;
    assert_eq!(&a0.receive().await?.ok_or("closed")?.data[..], b"back");
    assert!(a1.send_bytes(&b"x"[..]).await.is_err());

    // The last one closes the transport.
    a0.close().await;
    assert_eq!(b0.receive().await?, None);
    Ok(())
}

/// `Connection` is a cheap handle: a clone is the same Connection (same stream), usable
/// from another task; dropping one handle leaves it open, dropping the last closes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_handles_share_one_stream() -> R {
    tokio::time::timeout(BOUND, async {
        let (mut l, pre) = only(StackKind::Braid).await?;
        let a = pre.initiate().await?;
        let a2 = a.clone();
        assert_eq!(a2.info(), a.info());
        let task = tokio::spawn(async move { a2.send_bytes(&b"from a task"[..]).await });
        task.await??; // that handle is dropped with the task
        let b = l.connection_received().await.ok_or("no connection")?;
        assert_eq!(
            &b.receive().await?.ok_or("closed")?.data[..],
            b"from a task"
        );
        a.send_bytes(&b"still open"[..]).await?;
        assert_eq!(&b.receive().await?.ok_or("closed")?.data[..], b"still open");
        assert_eq!(a.group_size(), 1);
        drop(a); // the last handle: the Connection (and its transport) closes
        assert_eq!(b.receive().await?, None);
        Ok(())
    })
    .await?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_group_on_braid_streams() -> R {
    tokio::time::timeout(BOUND, group_on(StackKind::Braid)).await?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_group_on_framed_tcp() -> R {
    tokio::time::timeout(BOUND, group_on(StackKind::Tcp)).await?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_udp_for_unreliable_datagrams() -> R {
    tokio::time::timeout(BOUND, async {
        let mut p = TransportProperties::unreliable_datagram();
        p.require("stack:udp")?;
        let mut l = listener(p.clone()).await?;
        assert_eq!(l.local_addrs()[0].0, StackKind::Udp);
        let pre = Preconnection::new(
            vec![],
            vec![remote(l.port())],
            p,
            SecurityParameters::disabled(),
        )
        .with_cib(fresh_cib()?);
        let c = pre.initiate().await?;
        assert_eq!(c.stack(), StackKind::Udp);
        assert!(c.clone_in_group().is_err(), "plain UDP has one stream");
        c.send_bytes(&b"dgram"[..]).await?;
        let s = l.connection_received().await.ok_or("no flow")?;
        assert_eq!(&s.receive().await?.ok_or("closed")?.data[..], b"dgram");
        s.send_bytes(&b"reply"[..]).await?;
        assert_eq!(&c.receive().await?.ok_or("closed")?.data[..], b"reply");
        Ok(())
    })
    .await?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_name_is_resolved() -> R {
    tokio::time::timeout(BOUND, async {
        let l = listener(TransportProperties::new()).await?;
        let port = l.port();
        let _srv = echo_server(l);
        let r = RemoteEndpoint::new()
            .with_host_name("localhost")
            .with_port(port);
        let pre = Preconnection::new(
            vec![],
            vec![r],
            TransportProperties::new(),
            SecurityParameters::disabled(),
        )
        .with_cib(fresh_cib()?);
        let cands = pre.candidates().await?;
        assert!(cands.iter().any(|c| c.remote.ip().is_loopback()));
        // localhost may resolve to ::1 first, where nothing listens: the race copes.
        let c = pre.initiate().await?;
        round_trip(&c, b"by name").await?;
        c.close().await;
        Ok(())
    })
    .await?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multipath_makes_a_multihomed_braid_association() -> R {
    tokio::time::timeout(BOUND, async {
        // Two loopback addresses per side, as crates/net/tests/multipath.rs does.
        let ips: [std::net::IpAddr; 2] = ["127.0.0.3".parse()?, "127.0.0.4".parse()?];
        let client_ips: [std::net::IpAddr; 2] = ["127.0.0.1".parse()?, "127.0.0.2".parse()?];
        let mut p = TransportProperties::new();
        p.require("multipath")?;
        p.multipath_policy = MultipathPolicy::Aggregate;
        let locals = |ips: &[std::net::IpAddr]| -> Vec<LocalEndpoint> {
            ips.iter()
                .map(|ip| LocalEndpoint::new().with_ip_address(*ip))
                .collect()
        };
        let mut l = Preconnection::new(
            locals(&ips),
            vec![],
            p.clone(),
            SecurityParameters::disabled(),
        )
        .listen()
        .await?;
        assert_eq!(l.local_addrs().len(), 2, "{:?}", l.local_addrs());
        let port = l.port();
        let remotes = ips
            .iter()
            .map(|ip| RemoteEndpoint::new().with_ip_address(*ip).with_port(port))
            .collect();
        let pre = Preconnection::new(
            locals(&client_ips),
            remotes,
            p,
            SecurityParameters::disabled(),
        )
        .with_cib(fresh_cib()?);
        let cands = pre.candidates().await?;
        assert!(cands.iter().all(|c| c.stack == StackKind::Braid));
        assert_eq!(cands[0].extra_locals.len(), 1, "{cands:?}");
        assert_eq!(cands[0].extra_remotes.len(), 1, "{cands:?}");
        let c = pre.initiate().await?;
        c.send_bytes(&b"two paths"[..]).await?;
        let s = l.connection_received().await.ok_or("no connection")?;
        assert_eq!(&s.receive().await?.ok_or("closed")?.data[..], b"two paths");
        let paths = c.paths().await;
        println!("multipath paths: {paths:?}");
        assert!(paths.len() >= 2, "{paths:?}");
        c.close().await;
        Ok(())
    })
    .await?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_adds_a_remote_and_sets_the_delay() -> R {
    tokio::time::timeout(BOUND, async {
        let l = listener(TransportProperties::new()).await?;
        let port = l.port();
        let _srv = echo_server(l);
        // The application names a port where nothing listens; the policy adds the real one.
        let dead = {
            let s = std::net::TcpListener::bind("127.0.0.1:0")?;
            s.local_addr()?.port()
        };
        let pib = Pib::parse(
            "inline.toml",
            &format!(
                "[[policy]]\nmatch = {{ port = {dead} }}\nadd_remotes = [\"127.0.0.1:{port}\"]\n\
                 attempt_delay_ms = 40\n"
            ),
        )?;
        let pre = Preconnection::new(
            vec![],
            vec![remote(dead)],
            TransportProperties::new(),
            SecurityParameters::disabled(),
        )
        .with_cib(fresh_cib()?)
        .with_pib(Arc::new(pib));
        let (c, report) = pre.initiate_with_report().await?;
        assert_eq!(report.attempt_delay, Duration::from_millis(40));
        assert_eq!(c.info().remote.port(), port);
        let c2 = pre.initiate_with_send(Message::new(&b"first"[..])).await?;
        assert_eq!(&c2.receive().await?.ok_or("closed")?.data[..], b"first");
        c.close().await;
        c2.close().await;
        Ok(())
    })
    .await?
}

async fn abort_on(stack: StackKind) -> R {
    let (mut l, pre) = only(stack).await?;
    let a0 = pre.initiate().await?;
    let a1 = a0.clone_in_group()?;
    a0.send_bytes(&b"zero"[..]).await?;
    let b0 = l.connection_received().await.ok_or("no connection")?;
    assert_eq!(&b0.receive().await?.ok_or("closed")?.data[..], b"zero");
    // Abort takes the whole group down, on both sides.
    a0.abort();
    assert!(a1.send_bytes(&b"late"[..]).await.is_err());
    while let Some(m) = b0.receive().await? {
        assert_ne!(&m.data[..], b"late");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_ends_the_braid_group() -> R {
    tokio::time::timeout(BOUND, abort_on(StackKind::Braid)).await?
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_ends_the_tcp_group() -> R {
    tokio::time::timeout(BOUND, abort_on(StackKind::Tcp)).await?
}
