//! Answers to packets without an association are budgeted so that a spoofer who forges a
//! victim's address cannot turn the budget against the victim.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use braid_proto::{AssociationConfig, Endpoint, EndpointConfig, Event, Instant};
use braid_wire::Packet;
use braid_wire::chunk::Init;
use common::{Dir, Pair};

/// An INIT as an attacker forges it: the victim's address and SCTP port, its own tag.
fn forged_init(tag: u32) -> Vec<u8> {
    Packet {
        src_port: 5000,
        dst_port: 5001,
        verification_tag: 0,
        chunks: vec![
            Init {
                initiate_tag: tag,
                a_rwnd: 1 << 16,
                outbound_streams: 10,
                inbound_streams: 10,
                initial_tsn: tag,
                params: vec![],
            }
            .into(),
        ],
    }
    .to_vec()
    .unwrap()
}

/// 100 forged INITs per second carry the victim's address (7 KB/s: a spoofer, or a busy
/// NAT): the victim still connects, at its first attempt.
#[test]
fn a_victim_connects_while_100_forged_inits_per_second_carry_its_address() {
    let mut p = Pair::new(AssociationConfig::default(), common::seed_or_env(11));
    let mut tag = 0x5000_0000u32;
    // The flood runs for a while before the victim tries: every token of its address is gone.
    for _ in 0..300 {
        tag += 1;
        p.inject(Dir::ToServer, forged_init(tag));
        p.run_for(Duration::from_millis(10));
    }
    let (now, from, to) = (p.now, p.client_addr, p.server_addr);
    let c = p.client.connect(now, from, to, 5001).unwrap();
    let start = p.now;
    let connected = |p: &Pair| {
        p.client_events
            .iter()
            .any(|(id, e)| *id == c && matches!(e, Event::Connected))
    };
    while !connected(&p) && p.now < start + Duration::from_secs(30) {
        tag += 1;
        p.inject(Dir::ToServer, forged_init(tag));
        p.run_for(Duration::from_millis(10));
    }
    assert!(connected(&p), "the victim's connect timed out");
    // At its first INIT: T1-init (3 s, RFC 9260 §15) never had to fire.
    assert!(
        p.now - start < Duration::from_secs(1),
        "{:?}",
        p.now - start
    );
}

/// What reflection sends one forged address is bounded in bytes: 1,000 forged INITs a second
/// for 2 s draw at most the allowance at once plus its rate for 2 s.
#[test]
fn reflection_toward_a_forged_address_is_bounded_in_bytes() {
    let cfg = EndpointConfig {
        port: 5001,
        listen: true,
        ..EndpointConfig::default()
    };
    let allowance = cfg.init_answer_bytes as usize;
    let mut ep = Endpoint::new(cfg, 3);
    let (local, victim) = (
        "10.0.0.2:9899".parse().unwrap(),
        "10.0.0.1:9899".parse().unwrap(),
    );
    let mut now = Instant::ZERO;
    let (mut sent, mut answers, mut buf) = (0usize, 0usize, Vec::new());
    for i in 0..2_000u32 {
        ep.handle_datagram(now, local, victim, forged_init(0x7000_0000 + i).into());
        while let Some(t) = ep.poll_transmit(now, &mut buf) {
            assert_eq!(t.remote, victim);
            sent += t.size;
            answers += 1;
            buf.clear();
        }
        now += Duration::from_millis(1);
    }
    println!("{answers} answers, {sent} bytes to the forged address in 2 s");
    assert!(sent <= 3 * allowance, "{sent} bytes reflected");
    assert!(answers > 100, "the endpoint fell silent: {answers}");
}
