//! The attack suite: one scripted test per rule an attacker (or a broken peer) would test
//! braid against, named after the rule (RFC 9260 unless noted). The test plays the peer
//! and the attacker packet by packet on a virtual clock (`common::script`).
//!
//! Every test here failed on the `main` of 2026-11-23 (8250f94) except where its comment
//! says it documents a bound that already held.
#![allow(clippy::unwrap_used)]

mod common;

use std::net::{IpAddr, SocketAddr};

use braid_proto::{
    AssociationConfig, CloseReason, Endpoint, EndpointConfig, Event, IcmpError, Instant, PathState,
    SendError, State,
};
use braid_wire::chunk::{
    Abort, CookieAck, CookieEcho, Data, ForwardTsn, Heartbeat, Init, InitAck, Sack, Shutdown,
    ShutdownAck, ShutdownComplete,
};
use braid_wire::{Chunk, ErrorCause, Packet, Param, ParamType};
use bytes::Bytes;
use common::multihome::{answer_heartbeats, establish_multihomed};
use common::script::{
    EP_PORT, Out, PEER_PORT, Script, abort, data, ms, quiet_config, sack, secs, unknown_chunk,
};

const BIG_WINDOW: u32 = 1 << 20;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn closed(s: &Script) -> bool {
    s.events
        .iter()
        .any(|(_, _, e)| matches!(e, Event::Closed(_)))
}

// ============================================================ 1. a packet is judged whole

/// §6.10, §8.5.1: INIT is never bundled; a packet doing so is discarded whole, so nothing
/// after an INIT runs without a verification tag check.
fn init_bundled_with(chunk: Chunk, seed: u64) -> Script {
    let mut s = Script::server(seed);
    s.establish_passive();
    let mut init = s.init_chunk(vec![]);
    init.initiate_tag = 0x0bad_0bad;
    let p = s.with_tag(0, vec![init.into(), chunk]);
    s.inject(&p);
    s.expect_nothing_for(secs(1));
    s
}

#[test]
fn an_init_bundled_with_an_abort_is_discarded_whole() {
    for t_bit in [false, true] {
        let mut s = init_bundled_with(abort(t_bit), 1001 + u64::from(t_bit));
        assert!(!closed(&s), "a spoofed INIT+ABORT killed the association");
        assert_eq!(s.assoc().state(), State::Established);
        s.send_chunks(vec![data(s.peer_tsn(0), 0, 0, b"still here")]);
        assert_eq!(s.app_recv_all(), vec![b"still here".to_vec()]);
    }
}

#[test]
fn an_init_bundled_with_data_injects_nothing() {
    let spoofed = data(1000, 0, 0, b"spoofed");
    let mut s = init_bundled_with(spoofed, 1003);
    assert!(s.app_recv_all().is_empty(), "spoofed DATA was delivered");
    // The genuine message with the same TSN is new to the receiver.
    s.send_chunks(vec![data(s.peer_tsn(0), 0, 0, b"genuine")]);
    assert_eq!(s.app_recv_all(), vec![b"genuine".to_vec()]);
}

#[test]
fn an_init_bundled_with_a_forward_tsn_does_not_move_the_cumulative_ack() {
    let fwd = ForwardTsn {
        new_cum_tsn: 1000 + 100,
        streams: vec![],
    };
    let mut s = init_bundled_with(fwd.into(), 1004);
    s.send_chunks(vec![data(s.peer_tsn(0), 0, 0, b"first")]);
    assert_eq!(s.app_recv_all(), vec![b"first".to_vec()]);
}

#[test]
fn an_init_bundled_with_unknown_chunks_reflects_no_error() {
    // 0xff: "skip and report" (§3.2) — it would reflect an ERROR at the real peer.
    let s = init_bundled_with(unknown_chunk(0xff, 0, b"reflect me").into(), 1005);
    assert_eq!(s.assoc().state(), State::Established);
}

#[test]
fn shutdown_complete_or_init_ack_bundled_after_data_discards_the_whole_packet() {
    for (i, lone) in [
        Chunk::from(ShutdownComplete { t_bit: false }),
        InitAck {
            initiate_tag: 7,
            a_rwnd: 1 << 16,
            outbound_streams: 1,
            inbound_streams: 1,
            initial_tsn: 1,
            params: vec![],
        }
        .into(),
    ]
    .into_iter()
    .enumerate()
    {
        let mut s = Script::server(1006 + i as u64);
        s.establish_passive();
        s.send_chunks(vec![data(s.peer_tsn(0), 0, 0, b"bundled"), lone]);
        s.expect_nothing_for(secs(1));
        assert!(
            s.app_recv_all().is_empty(),
            "a chunk of a malformed packet ran"
        );
        assert_eq!(s.assoc().state(), State::Established);
    }
}

// ============================================================ 2. address ownership

fn cause_11(o: &Out) -> bool {
    o.get::<Abort>().is_some_and(|a| {
        a.causes
            .iter()
            .any(|c| matches!(c, ErrorCause::RestartWithNewAddresses(_)))
    })
}

/// A stranger's INIT listing an address a live association owns is answered as one listing
/// an unused address (an INIT-ACK), so the answer does not tell whether the address is in
/// use; the ABORT with cause 11 it drew before did.
#[test]
fn an_init_listing_an_address_owned_by_a_live_association_learns_nothing_of_it() {
    let mut s = Script::server(1010);
    s.establish_passive();
    let attacker = addr("10.0.0.66:9899");
    s.other_peer_ips.push(attacker.ip());
    let mut answers = Vec::new();
    for listed in [s.remote.ip(), "10.0.0.99".parse().unwrap()] {
        let mut init = s.init_chunk(vec![Param::from_address(listed)]);
        init.initiate_tag = 0xa77a_c4e5;
        let p = s.with_tag(0, vec![init.into()]);
        s.inject_from(attacker, &p);
        let o = s.expect();
        assert_eq!(o.remote, attacker);
        assert!(
            !cause_11(&o),
            "cause 11 told the stranger: {}",
            o.describe()
        );
        answers.push(o.types());
    }
    assert_eq!(answers[0], answers[1], "the answers differ");
    // The victim's packets still reach the victim.
    s.send_chunks(vec![data(s.peer_tsn(0), 0, 0, b"victim")]);
    assert_eq!(s.app_recv_all(), vec![b"victim".to_vec()]);
}

/// RFC 5062 §2: a cookie whose INIT listed an address a live association owns becomes an
/// association without it: the owner keeps its address and its packets.
#[test]
fn a_cookie_listing_an_address_owned_by_a_live_association_gets_an_association_without_it() {
    let mut s = Script::server(1011);
    let attacker = addr("10.0.0.66:9899");
    s.other_peer_ips.push(attacker.ip());
    // Before the victim exists, the attacker's INIT (listing the victim's address) is fine.
    let mut init = s.init_chunk(vec![
        Param::from_address(s.remote.ip()),
        Param::from_address(attacker.ip()),
    ]);
    init.initiate_tag = 0xa77a_c4e5;
    let p = s.with_tag(0, vec![init.into()]);
    s.inject_from(attacker, &p);
    let ack: InitAck = s.expect_chunk();
    let evil_cookie = ack.state_cookie().unwrap().clone();
    // The victim connects.
    s.establish_passive();
    // The attacker echoes its cookie: it would own the victim's address.
    let p = s.with_tag(
        ack.initiate_tag,
        vec![
            CookieEcho {
                cookie: evil_cookie,
            }
            .into(),
        ],
    );
    s.inject_from(attacker, &p);
    let o = s.expect();
    assert!(
        o.has::<CookieAck>(),
        "expected COOKIE-ACK, got {}",
        o.describe()
    );
    let id = s.ep.accept().expect("the attacker's association");
    let theirs = s.ep.association(id).unwrap().peer_addresses();
    assert_eq!(theirs, vec![attacker.ip()], "it took the victim's address");
    s.send_chunks(vec![data(s.peer_tsn(0), 0, 0, b"victim")]);
    assert_eq!(s.app_recv_all(), vec![b"victim".to_vec()]);
}

// ============================================================ 3-5. confirmed addresses

#[test]
fn an_unconfirmed_address_never_gets_data_even_when_every_path_failed() {
    let mut s = Script::server(1020);
    let alt = ip("10.0.0.5");
    establish_multihomed(&mut s, &[alt]);
    s.app_send(0, b"never acknowledged");
    // Nobody answers anything: the primary fails, the unconfirmed address never confirms.
    let outs = s.collect_until(secs(900));
    assert!(closed(&s), "the association should give up");
    for o in &outs {
        assert!(
            !(o.remote.ip() == alt && o.has::<Data>()),
            "DATA to an unconfirmed address (§5.4): {}",
            o.describe()
        );
    }
}

#[test]
fn a_cookie_echo_from_another_listed_address_neither_confirms_nor_selects_it() {
    let mut s = Script::server(1021);
    let alt: SocketAddr = addr("10.0.0.5:9899");
    s.other_peer_ips.push(alt.ip());
    let p = s.init_packet(s.init_chunk(vec![Param::from_address(alt.ip())]));
    s.inject(&p);
    let ack: InitAck = s.expect_chunk();
    s.ep_tag = ack.initiate_tag;
    let cookie = ack.state_cookie().unwrap().clone();
    let p = s.to_ep(vec![CookieEcho { cookie }.into()]);
    s.inject_from(alt, &p);
    s.assoc = s.ep.accept();
    let paths = s.assoc().paths();
    let primary = paths.iter().find(|p| p.primary).unwrap();
    assert_eq!(
        primary.remote.ip(),
        s.remote.ip(),
        "the primary is where the INIT-ACK went"
    );
    let p_alt = paths.iter().find(|p| p.remote.ip() == alt.ip()).unwrap();
    assert!(!p_alt.confirmed, "a COOKIE-ECHO from {alt} confirmed it");
    let outs = s.take_sent();
    let ack_out = outs.iter().find(|o| o.has::<CookieAck>()).unwrap();
    assert_eq!(ack_out.remote.ip(), s.remote.ip());
}

#[test]
fn heartbeats_to_unconfirmed_addresses_are_paced_at_hb_max_burst_per_rto() {
    let mut s = Script::server(1022);
    let alts: Vec<IpAddr> = (1..=8).map(|i| ip(&format!("10.0.1.{i}"))).collect();
    establish_multihomed(&mut s, &alts);
    // RTO.Initial = 1 s; HB.Max.Burst = 1 (§16).
    let outs = s.collect_until(ms(999));
    let probes = outs.iter().filter(|o| o.has::<Heartbeat>()).count();
    assert!(
        probes <= 1,
        "{probes} heartbeats to unconfirmed addresses in one RTO"
    );
    let outs = s.collect_until(secs(30));
    for a in &alts {
        assert!(
            outs.iter()
                .any(|o| o.remote.ip() == *a && o.has::<Heartbeat>()),
            "{a} never probed"
        );
    }
}

#[test]
fn multicast_broadcast_unspecified_and_own_addresses_are_never_paths() {
    let mut s = Script::server(1023);
    let own = s.local.ip();
    let bad = [
        ip("224.0.0.1"),
        ip("239.1.2.3"),
        ip("255.255.255.255"),
        ip("0.0.0.0"),
        own,
        ip("ff02::1"),
        ip("::"),
    ];
    // `establish_multihomed` would allow datagrams to them; this test does not.
    let params = bad.iter().map(|a| Param::from_address(*a)).collect();
    let p = s.init_packet(s.init_chunk(params));
    s.inject(&p);
    let ack: InitAck = s.expect_chunk();
    s.ep_tag = ack.initiate_tag;
    let cookie = ack.state_cookie().unwrap().clone();
    s.send_chunks(vec![CookieEcho { cookie }.into()]);
    s.assoc = s.ep.accept();
    assert_eq!(s.assoc().paths().len(), 1);
    s.advance(secs(30)); // `flush` fails the test on a datagram to any of them.
}

#[test]
fn an_address_list_is_capped_at_16() {
    // Documents a bound that already held: the cap (MAX_ADDRESSES).
    let mut s = Script::server(1024);
    let many: Vec<IpAddr> = (1..=60).map(|i| ip(&format!("10.0.2.{i}"))).collect();
    establish_multihomed(&mut s, &many);
    assert!(s.assoc().paths().len() <= 16);
}

// ============================================================ 6. out of the blue

#[test]
fn a_tag_0_out_of_the_blue_packet_other_than_init_is_silently_discarded() {
    let mut s = Script::server(1030);
    for chunks in [
        vec![data(1, 0, 0, b"x")],
        vec![Heartbeat::with_info(Bytes::from_static(b"hb")).into()],
        vec![sack(1, 1000, &[])],
    ] {
        let p = s.with_tag(0, chunks);
        s.inject(&p);
        s.expect_nothing_now();
    }
}

#[test]
fn out_of_the_blue_answers_are_rate_limited_per_source() {
    let mut s = Script::server(1031);
    for i in 0..1000u32 {
        let p = s.with_tag(0x1234_0000 + i, vec![data(i, 0, 0, b"x")]);
        s.inject(&p);
    }
    let answers = s.take_sent().len();
    let budget = EndpointConfig::default().ootb_burst as usize;
    assert!(
        answers <= budget,
        "{answers} answers to one source in an instant"
    );
    assert!(answers > 0, "rate limiting must not silence the endpoint");
    // The budget refills with time.
    s.advance(secs(2));
    let p = s.with_tag(0x4321, vec![data(1, 0, 0, b"x")]);
    s.inject(&p);
    assert_eq!(s.take_sent().len(), 1);
}

/// Unrecognized chunks whose type asks for a report (RFC 9260 §3.2) draw ERROR chunks that
/// echo them: never more bytes of reports than the packet brought (small unknown chunks drew
/// three times their size).
#[test]
fn reports_of_unrecognized_chunks_are_no_larger_than_the_packet() {
    let mut s = Script::server(1033);
    s.establish_passive();
    s.take_sent();
    // Type 0xFF: skip and report. Forty 4-byte chunks.
    let chunks: Vec<Chunk> = (0..40)
        .map(|_| unknown_chunk(0xFF, 0, b"").into())
        .collect();
    let p = s.to_ep(chunks);
    let len = p.to_vec().unwrap().len();
    s.inject(&p);
    s.advance(ms(300));
    let reported: usize = s
        .take_sent()
        .iter()
        .flat_map(|o| o.pkt.chunks.iter())
        .filter_map(|c| match c {
            Chunk::Error(e) => Some(e),
            _ => None,
        })
        .map(|e| {
            let mut v = Vec::new();
            Chunk::Error(e.clone()).encode(&mut v).unwrap();
            v.len()
        })
        .sum();
    assert!(reported > 0, "nothing reported");
    assert!(
        reported <= len,
        "{reported} bytes of ERROR for a {len}-byte packet"
    );
}

#[test]
fn unrecognized_parameter_reports_are_capped_so_the_init_ack_fits_the_path_mtu() {
    let mut s = Script::server(1032);
    // 0xCExx: "skip and report" (§3.2.1); 200 of them, 200 bytes each.
    let params: Vec<Param> = (0..200u16)
        .map(|i| Param::Unknown {
            param_type: ParamType(0xCE00 | i),
            value: Bytes::from(vec![0xab; 196]),
        })
        .collect();
    let p = s.init_packet(s.init_chunk(params));
    s.inject(&p);
    let o = s.expect();
    assert!(o.has::<InitAck>());
    assert!(
        o.bytes.len() <= 1500 - 20 - 8,
        "INIT-ACK of {} bytes for an attacker's INIT",
        o.bytes.len()
    );
}

// ============================================================ 7-8. resources, ports, keys

/// A bare endpoint under test (no script), for tests that need several peer ports.
fn raw_server(cfg: EndpointConfig) -> Endpoint {
    Endpoint::new(
        EndpointConfig {
            listen: true,
            port: EP_PORT,
            association: quiet_config(),
            ..cfg
        },
        7,
    )
}

fn drain(ep: &mut Endpoint, now: Instant) -> Vec<(SocketAddr, Packet)> {
    let mut v = Vec::new();
    let mut buf = Vec::new();
    while let Some(t) = ep.poll_transmit(now, &mut buf) {
        v.push((t.remote, Packet::decode(&Bytes::from(buf.clone())).unwrap()));
        buf.clear();
    }
    v
}

/// INIT -> INIT-ACK -> COOKIE-ECHO from `from` and SCTP port `port`; the endpoint's answer.
fn open_from(ep: &mut Endpoint, from: SocketAddr, port: u16) -> Vec<(SocketAddr, Packet)> {
    open_listing(ep, from, port, &[])
}

/// [`open_from`] with an INIT that lists `extra` addresses too.
fn open_listing(
    ep: &mut Endpoint,
    from: SocketAddr,
    port: u16,
    extra: &[IpAddr],
) -> Vec<(SocketAddr, Packet)> {
    open_listing_tagged(ep, from, port, extra).1
}

/// [`open_listing`], with the tag the endpoint's INIT-ACK asked the peer to use.
fn open_listing_tagged(
    ep: &mut Endpoint,
    from: SocketAddr,
    port: u16,
    extra: &[IpAddr],
) -> (Option<u32>, Vec<(SocketAddr, Packet)>) {
    let local = addr("10.0.0.2:9899");
    let mut params: Vec<Param> = extra.iter().map(|ip| Param::from_address(*ip)).collect();
    if !params.is_empty() {
        // RFC 9260 §5.1.2: a list names the source address too.
        params.push(Param::from_address(from.ip()));
    }
    let now = Instant::ZERO;
    let init = Packet {
        src_port: port,
        dst_port: EP_PORT,
        verification_tag: 0,
        chunks: vec![
            Init {
                initiate_tag: 0x1000 + u32::from(port),
                a_rwnd: 1 << 16,
                outbound_streams: 1,
                inbound_streams: 1,
                initial_tsn: 1,
                params,
            }
            .into(),
        ],
    };
    ep.handle_datagram(now, local, from, init.to_vec().unwrap().into());
    let out = drain(ep, now);
    let Some(Chunk::InitAck(ack)) = out.first().map(|(_, p)| p.chunks[0].clone()) else {
        return (None, out);
    };
    let echo = Packet {
        src_port: port,
        dst_port: EP_PORT,
        verification_tag: ack.initiate_tag,
        chunks: vec![
            CookieEcho {
                cookie: ack.state_cookie().unwrap().clone(),
            }
            .into(),
        ],
    };
    ep.handle_datagram(now, local, from, echo.to_vec().unwrap().into());
    (Some(ack.initiate_tag), drain(ep, now))
}

fn out_of_resource(out: &[(SocketAddr, Packet)]) -> bool {
    out.iter().any(|(_, p)| {
        p.chunks
            .iter()
            .any(|c| matches!(c, Chunk::Abort(a) if a.causes.contains(&ErrorCause::OutOfResource)))
    })
}

#[test]
fn one_source_cannot_take_every_association_slot() {
    let mut ep = raw_server(EndpointConfig {
        max_associations_per_source: 2,
        ..EndpointConfig::default()
    });
    let a = addr("10.0.0.1:9899");
    for port in [6001, 6002] {
        let out = open_from(&mut ep, a, port);
        assert!(
            out.iter()
                .any(|(_, p)| matches!(p.chunks[0], Chunk::CookieAck(_)))
        );
    }
    let out = open_from(&mut ep, a, 6003);
    assert!(
        out_of_resource(&out),
        "a third association from one source: {out:?}"
    );
    assert_eq!(ep.associations().count(), 2);
    // Another source still gets in.
    let out = open_from(&mut ep, addr("10.0.0.7:9899"), 6001);
    assert!(
        out.iter()
            .any(|(_, p)| matches!(p.chunks[0], Chunk::CookieAck(_)))
    );
}

/// RFC 5062 §2 (address camping): an attacker's association lists the victim's address,
/// which it can never confirm; the victim, connecting from that address with the same SCTP
/// port, still gets its association, and the attacker's keeps its own.
#[test]
fn an_address_listed_but_never_confirmed_does_not_lock_its_owner_out() {
    let mut ep = raw_server(EndpointConfig::default());
    let (attacker, victim) = (addr("10.0.0.66:9899"), addr("10.0.0.77:9899"));
    let out = open_listing(&mut ep, attacker, 7000, &[victim.ip()]);
    assert!(
        out.iter()
            .any(|(_, p)| matches!(p.chunks[0], Chunk::CookieAck(_))),
        "the attacker's association: {out:?}"
    );
    let out = open_from(&mut ep, victim, 7000);
    assert!(
        out.iter()
            .any(|(_, p)| matches!(p.chunks[0], Chunk::CookieAck(_))),
        "the victim was refused: {out:?}"
    );
    assert_eq!(ep.associations().count(), 2);
    // Once the victim's association exists, the address is its own: a third association
    // listing it goes without it.
    let third = addr("10.0.0.88:9899");
    let out = open_listing(&mut ep, third, 7000, &[victim.ip()]);
    assert!(
        out.iter()
            .any(|(_, p)| matches!(p.chunks[0], Chunk::CookieAck(_))),
        "{out:?}"
    );
    let addrs: Vec<Vec<IpAddr>> = ep
        .associations()
        .map(|id| ep.association(id).unwrap().peer_addresses())
        .collect();
    assert!(addrs.contains(&vec![third.ip()]), "{addrs:?}");
    assert_eq!(
        addrs.iter().filter(|a| a.contains(&victim.ip())).count(),
        2,
        "the victim's address: the attacker lists it unconfirmed, the victim owns it"
    );
}

/// Many addresses of one network (16 IPv4 addresses, or one IPv6 /64) cannot take every
/// association slot: the prefix has its own cap.
#[test]
fn one_prefix_cannot_take_every_association_slot() {
    let mut ep = raw_server(EndpointConfig {
        max_associations_per_prefix: 3,
        ..EndpointConfig::default()
    });
    let accepted = |out: &[(SocketAddr, Packet)]| {
        out.iter()
            .any(|(_, p)| matches!(p.chunks[0], Chunk::CookieAck(_)))
    };
    for host in 1..=3 {
        let out = open_from(&mut ep, addr(&format!("10.0.0.{host}:9899")), 6001);
        assert!(accepted(&out), "host {host}: {out:?}");
    }
    let out = open_from(&mut ep, addr("10.0.0.200:9899"), 6001);
    assert!(
        out_of_resource(&out),
        "a fourth address of 10.0.0.0/24: {out:?}"
    );
    // Another /24 still gets in; so do the first three /64s of IPv6, then not a fourth
    // address of the same /64.
    assert!(accepted(&open_from(&mut ep, addr("10.0.1.1:9899"), 6001)));
    for host in 1..=3 {
        let a = addr(&format!("[2001:db8::{host}]:9899"));
        assert!(accepted(&open_from(&mut ep, a, 6001)), "IPv6 host {host}");
    }
    let out = open_from(&mut ep, addr("[2001:db8::ffff:1]:9899"), 6001);
    assert!(
        out_of_resource(&out),
        "a fourth address of 2001:db8::/64: {out:?}"
    );
    assert!(accepted(&open_from(
        &mut ep,
        addr("[2001:db8:0:1::1]:9899"),
        6001
    )));
}

/// Tags and cookie secrets come from independent seeds: two endpoints that share the tag
/// seed (an attacker who learned it from the tags) still sign different cookies.
#[test]
fn cookie_secrets_do_not_follow_from_the_tag_seed() {
    let cfg = EndpointConfig {
        listen: true,
        port: EP_PORT,
        association: quiet_config(),
        ..EndpointConfig::default()
    };
    let init_ack = |secret_seed: u8| {
        let mut ep = Endpoint::with_seeds(cfg.clone(), [7; 32], [secret_seed; 32]);
        let init = Packet {
            src_port: 6001,
            dst_port: EP_PORT,
            verification_tag: 0,
            chunks: vec![
                Init {
                    initiate_tag: 99,
                    a_rwnd: 1 << 16,
                    outbound_streams: 1,
                    inbound_streams: 1,
                    initial_tsn: 1,
                    params: vec![],
                }
                .into(),
            ],
        };
        let now = Instant::ZERO;
        let (local, from) = (addr("10.0.0.2:9899"), addr("10.0.0.1:9899"));
        ep.handle_datagram(now, local, from, init.to_vec().unwrap().into());
        let out = drain(&mut ep, now);
        match &out[0].1.chunks[0] {
            Chunk::InitAck(a) => a.state_cookie().unwrap().clone(),
            c => panic!("{c:?}"),
        }
    };
    assert_ne!(
        init_ack(1),
        init_ack(2),
        "the cookie did not depend on the secret seed"
    );
}

/// A tentative owner (an association that listed an address and has not confirmed it yet)
/// keeps it against another association that merely lists it too: otherwise the first one's
/// packets from that address would be out of the blue and draw an ABORT that ends it.
#[test]
fn an_address_listed_twice_stays_with_the_association_that_listed_it_first() {
    let mut ep = raw_server(EndpointConfig::default());
    let (a, x, m) = (
        addr("10.0.0.10:9899"),
        addr("10.0.0.11:9899"),
        addr("10.0.0.66:9899"),
    );
    let (tag, out) = open_listing_tagged(&mut ep, a, 7000, &[x.ip()]);
    assert!(
        out.iter()
            .any(|(_, p)| matches!(p.chunks[0], Chunk::CookieAck(_)))
    );
    let out = open_listing(&mut ep, m, 7000, &[x.ip()]);
    assert!(
        out.iter()
            .any(|(_, p)| matches!(p.chunks[0], Chunk::CookieAck(_)))
    );
    // The legitimate peer's HEARTBEAT from its second address, with its association's tag.
    let hb = Packet {
        src_port: 7000,
        dst_port: EP_PORT,
        verification_tag: tag.unwrap(),
        chunks: vec![braid_wire::chunk::Heartbeat::with_info(Bytes::from_static(b"hb")).into()],
    };
    let now = Instant::ZERO;
    ep.handle_datagram(now, addr("10.0.0.2:9899"), x, hb.to_vec().unwrap().into());
    let out = drain(&mut ep, now);
    assert!(
        out.iter()
            .all(|(_, p)| !p.chunks.iter().any(|c| matches!(c, Chunk::Abort(_)))),
        "the legitimate association's packet drew an ABORT: {out:?}"
    );
    assert!(
        out.iter()
            .any(|(_, p)| p.chunks.iter().any(|c| matches!(c, Chunk::HeartbeatAck(_)))),
        "{out:?}"
    );
}

#[test]
fn an_init_from_sctp_port_0_is_discarded() {
    let mut ep = raw_server(EndpointConfig::default());
    let out = open_from(&mut ep, addr("10.0.0.1:9899"), 0);
    assert!(out.is_empty(), "answered an INIT from port 0: {out:?}");
}

// ============================================================ failover, shutdown, restart

/// An association to a two-address peer with both addresses confirmed.
fn two_confirmed_paths(seed: u64, cfg: AssociationConfig) -> (Script, SocketAddr) {
    let mut s = Script::server_with(cfg, seed);
    let alt = addr("10.0.0.5:9899");
    establish_multihomed(&mut s, &[alt.ip()]);
    for _ in 0..50 {
        let outs = s.collect_until(s.t() + ms(100));
        answer_heartbeats(&mut s, &outs);
    }
    let paths = s.assoc().paths();
    assert!(
        paths.iter().all(|p| p.state == PathState::Active),
        "{paths:?}"
    );
    s.events.clear();
    (s, alt)
}

#[test]
fn sacks_follow_the_data_when_the_primary_path_dies() {
    let cfg = AssociationConfig {
        cmt: Some(braid_proto::CmtConfig::default()),
        ..quiet_config()
    };
    let (mut s, alt) = two_confirmed_paths(1040, cfg);
    // The primary path is dead both ways: the peer's DATA arrives on the other path only.
    for i in 0..20u32 {
        let p = s.to_ep(vec![data(s.peer_tsn(i), 0, i as u16, b"via alt")]);
        s.inject_from(alt, &p);
        s.advance(ms(10));
    }
    let outs = s.collect_until(s.t() + secs(1));
    let sacks: Vec<&Out> = outs.iter().filter(|o| o.has::<Sack>()).collect();
    assert!(!sacks.is_empty());
    for o in sacks {
        assert_eq!(
            o.remote.ip(),
            alt.ip(),
            "SACK to the dead path: {}",
            o.describe()
        );
    }
}

#[test]
fn shutdown_is_retransmitted_to_an_alternate_path_when_the_primary_is_dead() {
    let (mut s, alt) = two_confirmed_paths(1041, quiet_config());
    s.app_shutdown();
    // Nothing answers on the primary; §9.2/§8.2: T2 retransmissions go to an alternate.
    let mut t = s.t();
    let mut via_alt = None;
    while t < s.t() + secs(60) && via_alt.is_none() {
        let o = s.expect();
        t = o.t();
        if o.has::<Shutdown>() && o.remote.ip() == alt.ip() {
            via_alt = Some(o);
        }
    }
    assert!(
        via_alt.is_some(),
        "SHUTDOWN never left on the alternate path"
    );
    let p = s.to_ep(vec![ShutdownAck.into()]);
    s.inject_from(alt, &p);
    let outs = s.take_sent();
    let o = outs
        .iter()
        .find(|o| o.has::<ShutdownComplete>())
        .expect("no SHUTDOWN-COMPLETE");
    assert_eq!(o.remote.ip(), alt.ip());
    assert!(s.saw(&Event::Closed(CloseReason::Shutdown)));
}

#[test]
fn after_a_peer_shutdown_new_sends_fail_with_a_clear_error() {
    let mut s = Script::server(1042);
    s.establish_passive();
    s.send_chunks(vec![
        Shutdown {
            cum_tsn_ack: s.ep_initial_tsn.wrapping_sub(1),
        }
        .into(),
    ]);
    let now = s.now;
    let r = s
        .assoc_mut()
        .send(now, 0, Bytes::from_static(b"late"), Default::default());
    assert_eq!(r, Err(SendError::ShuttingDown));
}

#[test]
fn data_a_driver_accepted_before_the_peers_shutdown_is_still_delivered() {
    let mut s = Script::server(1043);
    s.establish_passive();
    // The SHUTDOWN arrives while the driver holds a message the application was told is
    // accepted: the SHUTDOWN-ACK waits until the driver handed it over and it is acked.
    let now = s.now;
    let id = s.assoc.unwrap();
    let p = s.to_ep(vec![
        Shutdown {
            cum_tsn_ack: s.ep_initial_tsn.wrapping_sub(1),
        }
        .into(),
    ]);
    s.ep.handle_datagram(now, s.local, s.remote, p.to_vec().unwrap().into());
    let a = s.ep.association_mut(id).unwrap();
    a.send_accepted(now, 0, Bytes::from_static(b"accepted"), Default::default())
        .unwrap();
    s.flush();
    let o = s.expect();
    assert!(
        !o.has::<ShutdownAck>(),
        "SHUTDOWN-ACK before the accepted data"
    );
    let tsn = o.get::<Data>().expect("the accepted message").tsn;
    s.send_chunks(vec![sack(tsn, BIG_WINDOW, &[])]);
    s.expect_to_peer::<ShutdownAck>();
}

#[test]
fn new_data_avoids_a_potentially_failed_path_while_another_is_active() {
    let cfg = AssociationConfig {
        cmt: Some(braid_proto::CmtConfig::default()),
        ..quiet_config()
    };
    let (mut s, alt) = two_confirmed_paths(1044, cfg);
    let mut highest_before_pf: Option<u32> = None;
    let mut pf = false;
    let mut received = std::collections::BTreeSet::new();
    let mut i = 0u32;
    // The primary path drops everything; the peer acks what arrives on the other one.
    let end = s.t() + secs(40);
    while s.t() < end {
        while s.assoc().send_buffered() < 64 * 1024 {
            s.app_send((i % 4) as u16, &[7u8; 1000]);
            i += 1;
        }
        let outs = s.collect_until(s.t() + ms(50));
        for o in &outs {
            for d in o.all::<Data>() {
                if o.remote.ip() == alt.ip() {
                    received.insert(d.tsn);
                } else if pf && highest_before_pf.is_some_and(|m| d.tsn > m) {
                    panic!(
                        "new TSN {} sent into the PF path at {:?}; paths {:?}; events {:?}",
                        d.tsn,
                        o.t(),
                        s.assoc().paths(),
                        s.events
                            .iter()
                            .filter(|e| matches!(e.2, Event::PathState { .. }))
                            .collect::<Vec<_>>()
                    );
                }
                if !pf {
                    highest_before_pf = Some(highest_before_pf.map_or(d.tsn, |m| m.max(d.tsn)));
                }
            }
        }
        pf = pf
            || s.events.iter().any(|(_, _, e)| {
                matches!(
                    e,
                    Event::PathState {
                        state: PathState::PotentiallyFailed,
                        ..
                    }
                )
            });
        answer_heartbeats_from_alt(&mut s, &outs, alt);
        if !received.is_empty() {
            let mut cum = s.ep_initial_tsn.wrapping_sub(1);
            while received.contains(&cum.wrapping_add(1)) {
                cum = cum.wrapping_add(1);
            }
            let above: Vec<u32> = received.iter().copied().filter(|t| *t > cum).collect();
            let p = s.to_ep(vec![sack(cum, BIG_WINDOW, &blocks_from(cum, &above))]);
            s.inject_from(alt, &p);
        }
    }
    assert!(pf, "the dead path never became PF");
    assert!(
        received.len() > 100,
        "the live path carried too little: {}",
        received.len()
    );
}

/// Gap blocks (offsets from `cum`) covering the TSNs in `tsns`.
fn blocks_from(cum: u32, tsns: &[u32]) -> Vec<(u16, u16)> {
    let mut offs: Vec<u32> = tsns.iter().map(|t| t.wrapping_sub(cum)).collect();
    offs.sort_unstable();
    offs.dedup();
    let mut v: Vec<(u16, u16)> = Vec::new();
    for o in offs {
        let o = o.min(u32::from(u16::MAX)) as u16;
        match v.last_mut() {
            Some((_, e)) if *e + 1 == o => *e = o,
            _ => v.push((o, o)),
        }
    }
    v.truncate(64);
    v
}

fn answer_heartbeats_from_alt(s: &mut Script, outs: &[Out], alt: SocketAddr) {
    let on_alt: Vec<Out> = outs
        .iter()
        .filter(|o| o.remote.ip() == alt.ip())
        .cloned()
        .collect();
    answer_heartbeats(s, &on_alt);
}

#[test]
fn an_unanswered_heartbeat_counts_as_an_error_after_one_rto() {
    let cfg = AssociationConfig {
        hb_interval: AssociationConfig::default().hb_interval,
        ..quiet_config()
    };
    let (mut s, _alt) = two_confirmed_paths(1045, cfg);
    // Silence from now on. HB.interval is 30 s (+ RTO with jitter); §8.3: an unanswered
    // HEARTBEAT is an error one RTO after it left, so the path is PF (PFMR 0) near 32 s.
    s.advance(secs(120));
    let hb_sent = s.take_sent();
    let first_hb = hb_sent
        .iter()
        .find(|o| o.has::<Heartbeat>() && o.t() > secs(6))
        .expect("an idle heartbeat")
        .t();
    let pf = s
        .events
        .iter()
        .find(|(_, _, e)| {
            matches!(
                e,
                Event::PathState {
                    state: PathState::PotentiallyFailed,
                    ..
                }
            )
        })
        .map(|(t, _, _)| t.since_epoch())
        .expect("no PF");
    assert!(
        pf <= first_hb + secs(4),
        "heartbeat at {first_hb:?}, error counted at {pf:?}"
    );
}

#[test]
fn an_icmp_port_unreachable_for_a_live_association_ends_it_at_once() {
    // RFC 9260 App. C ICMP8 with RFC 6951 §5.5: port unreachable stands for protocol
    // unreachable, which is handled as an ABORT once its quoted tag checks out.
    let mut s = Script::server(1046);
    s.establish_passive();
    let mut quoted = Vec::new();
    quoted.extend_from_slice(&EP_PORT.to_be_bytes());
    quoted.extend_from_slice(&PEER_PORT.to_be_bytes());
    quoted.extend_from_slice(&s.peer_tag.to_be_bytes());
    quoted.extend_from_slice(&[0; 4]);
    let (now, local, remote) = (s.now, s.local, s.remote);
    // A forged one (wrong tag) changes nothing.
    let mut forged = quoted.clone();
    forged[4] ^= 0xff;
    s.ep.handle_icmp(now, local, remote, &forged, IcmpError::PortUnreachable);
    s.flush();
    assert!(!closed(&s));
    s.ep.handle_icmp(now, local, remote, &quoted, IcmpError::PortUnreachable);
    s.flush();
    assert!(s.saw(&Event::Closed(CloseReason::Unreachable)));
}

#[test]
fn an_init_from_a_new_udp_port_is_refused_and_the_old_port_is_probed_at_once() {
    let mut s = Script::server(1047);
    s.establish_passive();
    let new_port = addr("10.0.0.1:40001");
    let mut init = s.init_chunk(vec![]);
    init.initiate_tag = 0x0e57_a127;
    let p = s.with_tag(0, vec![init.into()]);
    s.inject_from(new_port, &p);
    let outs = s.take_sent();
    assert!(outs.iter().any(|o| o.remote == new_port
        && o.get::<Abort>().is_some_and(|a| {
            a.causes
                .iter()
                .any(|c| matches!(c, ErrorCause::RestartWithNewEncapsulationPort { .. }))
        })));
    assert!(
        outs.iter()
            .any(|o| o.remote == s.remote && o.has::<Heartbeat>()),
        "the old port was not probed: {:?}",
        outs.iter().map(Out::describe).collect::<Vec<_>>()
    );
}

#[test]
fn nothing_answers_the_packets_that_follow_a_peer_abort() {
    // §8.4 rule 2 for the ABORT itself; packets the peer had in flight behind it get no
    // ABORT(T) either while the association is remembered.
    let mut s = Script::server(1048);
    s.establish_passive();
    s.send_chunks(vec![abort(false)]);
    assert!(closed(&s));
    for i in 0..10u32 {
        s.send_chunks(vec![data(s.peer_tsn(i), 0, i as u16, b"in flight")]);
        s.send_chunks(vec![abort(false)]);
    }
    s.expect_nothing_for(secs(5));
}

// ================================================================= LS-SCTP (Abd El Al et al.)

mod ls {
    use braid_proto::{AssociationConfig, CloseReason, Event, State};
    use braid_wire::chunk::{CookieEcho, InitAck, LsData, LsForwardPsn, LsSack};
    use braid_wire::{Chunk, ChunkBody, ErrorCause, Param, RawChunk};
    use bytes::Bytes;

    use super::common::script::{Out, Script, data, quiet_config, secs, unknown_chunk};

    fn ls_cfg() -> AssociationConfig {
        AssociationConfig {
            load_sharing: true,
            ..quiet_config()
        }
    }

    /// An endpoint offering LS-SCTP, and an association with a peer that offers it too
    /// (`offer`) or not.
    fn established(offer: bool, seed: u64) -> Script {
        let mut s = Script::server_with(ls_cfg(), seed);
        let params = if offer {
            vec![Param::LoadSharingSupported]
        } else {
            vec![]
        };
        let p = s.init_packet(s.init_chunk(params));
        s.inject(&p);
        let ack: InitAck = s.expect_chunk();
        assert!(ack.params.contains(&Param::LoadSharingSupported));
        s.ep_tag = ack.initiate_tag;
        s.ep_initial_tsn = ack.initial_tsn;
        let cookie = ack.state_cookie().unwrap().clone();
        s.send_chunks(vec![CookieEcho { cookie }.into()]);
        s.assoc = s.ep.accept();
        assert!(s.assoc.is_some());
        let _ = s.take_sent(); // COOKIE-ACK
        s
    }

    fn chunk<T: ChunkBody>(body: &T) -> Chunk {
        RawChunk::try_from_body(body).unwrap().into()
    }

    fn ls_sack(pid: u8, cum_asn: u32, cum_psn: u32) -> Chunk {
        chunk(&LsSack {
            pid,
            cum_asn,
            a_rwnd: 1 << 20,
            timestamp: 1,
            cum_psn,
            gap_blocks: vec![],
            dup_psns: vec![],
        })
    }

    fn ls_data(asn: u32, pid: u8, psn: u16, payload: &'static [u8]) -> Chunk {
        chunk(&LsData {
            asn,
            pid,
            psn,
            stream_id: 0,
            ssn: 0,
            ppid: 0,
            unordered: true,
            beginning: true,
            ending: true,
            immediate: true,
            user_data: Bytes::from_static(payload),
        })
    }

    /// The application sends one message; the LS-DATA that carries it.
    fn one_ls_data(s: &mut Script) -> LsData {
        s.app_send(0, b"payload");
        s.expect().get::<LsData>().expect("LS-DATA")
    }

    fn assert_protocol_violation(s: &mut Script) {
        let o = s.expect();
        let a: braid_wire::chunk::Abort = o.only();
        assert!(
            matches!(a.causes.as_slice(), [ErrorCause::ProtocolViolation(_)]),
            "{:?}",
            a.causes
        );
        assert!(
            s.events
                .iter()
                .any(|(_, _, e)| matches!(e, Event::Closed(CloseReason::ProtocolViolation(_))))
        );
        assert_eq!(s.assoc().state(), State::Closed);
    }

    /// The LS-SACKs the endpoint sends within a second.
    fn ls_sacks_within_1s(s: &mut Script) -> Vec<LsSack> {
        let t = s.t();
        s.collect_until(t + secs(1))
            .iter()
            .flat_map(Out::all::<LsSack>)
            .collect()
    }

    /// An LS-SACK for a path id the association does not have is a protocol violation
    /// (the peer cannot have received anything on it), like a SACK for an unsent TSN.
    #[test]
    fn an_ls_sack_for_a_path_id_never_used_is_a_protocol_violation() {
        let mut s = established(true, 60);
        let d = one_ls_data(&mut s);
        s.send_chunks(vec![ls_sack(9, d.asn, 0)]);
        assert_protocol_violation(&mut s);
    }

    #[test]
    fn an_ls_sack_for_a_psn_never_sent_is_a_protocol_violation() {
        let mut s = established(true, 61);
        let d = one_ls_data(&mut s);
        s.send_chunks(vec![ls_sack(0, d.asn, u32::from(d.psn) + 5)]);
        assert_protocol_violation(&mut s);
    }

    #[test]
    fn an_ls_sack_for_an_asn_never_sent_is_a_protocol_violation() {
        let mut s = established(true, 62);
        let d = one_ls_data(&mut s);
        s.send_chunks(vec![ls_sack(0, d.asn + 5, u32::from(d.psn))]);
        assert_protocol_violation(&mut s);
    }

    /// Truncated LS-DATA, LS-SACK and LS-FORWARD-PSN (and one naming PID 20) are dropped:
    /// no answer, no panic, the association goes on and its data still flows both ways.
    #[test]
    fn malformed_ls_chunks_are_dropped_and_the_association_goes_on() {
        let mut s = established(true, 63);
        let d = one_ls_data(&mut s);
        for bad in [
            unknown_chunk(0xB0, 3, &[0, 0, 0, 1, 0x00]),
            unknown_chunk(0xB1, 0, &[0, 0, 0, 0, 0, 0]),
            unknown_chunk(0xB2, 0, &[0, 0, 1]),
            unknown_chunk(0xB2, 0, &[0, 20, 0, 1]),
        ] {
            s.send_chunks(vec![bad.into()]);
            s.expect_nothing_now();
            assert_eq!(s.assoc().state(), State::Established);
        }
        // Still acknowledged normally, and the peer's data still delivered.
        s.send_chunks(vec![
            ls_sack(0, d.asn, u32::from(d.psn)),
            ls_data(s.peer_tsn(0), 0, 1, b"after"),
        ]);
        assert_eq!(s.app_recv_all(), vec![b"after".to_vec()]);
        assert_eq!(s.assoc().send_buffered(), 0, "the LS-SACK acknowledged it");
    }

    /// LS chunks when LS-SCTP was not negotiated (the peer did not offer it) are unknown
    /// chunks with high bits 10: skipped silently, processing continues (RFC 9260 §3.2):
    /// no ERROR, their data is not delivered, the DATA behind them is.
    #[test]
    fn ls_chunks_without_ls_negotiated_are_skipped_silently() {
        let mut s = established(false, 64);
        s.send_chunks(vec![
            ls_data(s.peer_tsn(0), 0, 1, b"ls data"),
            ls_sack(0, s.ep_tsn(0), 1),
            chunk(&LsForwardPsn {
                entries: vec![(0, 5)],
            }),
            data(s.peer_tsn(0), 0, 0, b"plain data"),
        ]);
        let outs = s.collect_until(s.t() + secs(1));
        assert!(
            outs.iter()
                .all(|o| !o.has::<braid_wire::chunk::ErrorChunk>())
        );
        assert!(outs.iter().all(|o| o.all::<LsSack>().is_empty()));
        let sack = outs
            .iter()
            .find_map(|o| {
                o.pkt.chunks.iter().find_map(|c| match c {
                    Chunk::Sack(x) => Some(x.cum_tsn_ack),
                    Chunk::NrSack(x) => Some(x.cum_tsn_ack),
                    _ => None,
                })
            })
            .expect("the DATA is acknowledged");
        assert_eq!(sack, s.peer_tsn(0));
        assert_eq!(s.app_recv_all(), vec![b"plain data".to_vec()]);
        assert_eq!(s.assoc().state(), State::Established);
    }

    /// LS-FORWARD-PSN for a path the peer never used, or more than half the PSN space
    /// ahead, changes nothing: the next LS-SACK still reports the PSNs that arrived.
    #[test]
    fn an_absurd_ls_forward_psn_changes_nothing() {
        let mut s = established(true, 65);
        s.send_chunks(vec![ls_data(s.peer_tsn(0), 0, 1, b"one")]);
        let first = ls_sacks_within_1s(&mut s);
        assert_eq!(
            first.iter().map(|x| (x.pid, x.cum_psn)).collect::<Vec<_>>(),
            [(0, 1)]
        );
        s.send_chunks(vec![
            chunk(&LsForwardPsn {
                entries: vec![(0, 3000), (7, 100)],
            }),
            ls_data(s.peer_tsn(1), 0, 2, b"two"),
        ]);
        let later = ls_sacks_within_1s(&mut s);
        let last = later.last().expect("an LS-SACK");
        assert_eq!((last.pid, last.cum_psn), (0, 2));
        assert!(
            later.iter().all(|x| x.pid == 0),
            "LS-SACK for an unused path: {later:?}"
        );
        assert_eq!(s.app_recv_all().len(), 2);
    }

    /// LS-DATA whose ASN is too far ahead to be reported is dropped, and its PSN is not
    /// acknowledged either (the sender will resend it); a PSN half the space away reads as
    /// old. Nothing is held.
    #[test]
    fn ls_data_far_outside_the_window_is_not_acknowledged_or_held() {
        let mut s = established(true, 66);
        for i in 0..50u16 {
            s.send_chunks(vec![ls_data(
                s.peer_tsn(100_000 + u32::from(i)),
                0,
                1 + i,
                b"far ahead",
            )]);
        }
        s.send_chunks(vec![ls_data(s.peer_tsn(0), 1, 3000, b"old psn")]);
        let sacks = ls_sacks_within_1s(&mut s);
        // Path 0: nothing acknowledged (no LS-SACK for it at all, or an empty one).
        assert!(
            sacks
                .iter()
                .filter(|x| x.pid == 0)
                .all(|x| x.cum_psn == 0 && x.gap_blocks.is_empty()),
            "{sacks:?}"
        );
        let p1 = sacks
            .iter()
            .rfind(|x| x.pid == 1)
            .expect("LS-SACK for path 1");
        assert_eq!((p1.cum_psn, p1.gap_blocks.len()), (0, 0), "{p1:?}");
        assert_eq!(s.app_recv_all(), vec![b"old psn".to_vec()]);
        assert_eq!(s.assoc().recv_buffered(), 0, "far-ahead chunks held");
    }
}
