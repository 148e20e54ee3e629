//! Association lifecycle through the public API: setup, graceful shutdown, abort, failure
//! detection, flow control with a stalled reader, and the typed errors of `send`.

mod common;

use std::time::Duration;

use braid_proto::{AssociationConfig, CloseReason, Event, SendError, SendOptions, State};
use bytes::Bytes;
use common::traffic::{Plan, message, transfer};
use common::{Pair, Wire};

fn closed_reason(
    events: &[(braid_proto::AssocId, Event)],
    id: braid_proto::AssocId,
) -> Option<CloseReason> {
    events.iter().find_map(|(i, e)| match e {
        Event::Closed(r) if *i == id => Some(r.clone()),
        _ => None,
    })
}

#[test]
fn handshake_negotiates_streams_down_to_the_peers_limits() {
    let mut p = Pair::new(
        AssociationConfig {
            outbound_streams: 100,
            max_inbound_streams: 10,
            ..Default::default()
        },
        1,
    );
    let (c, s) = p.connect();
    let client = p.client.association(c).unwrap();
    let server = p.server.association(s).unwrap();
    assert_eq!(client.outbound_streams(), 10);
    assert_eq!(server.inbound_streams(), 10);
    assert_eq!(client.state(), State::Established);
    assert_eq!(server.state(), State::Established);
}

#[test]
fn graceful_shutdown_delivers_queued_data_first_then_closes_both_sides() {
    let mut p = Pair::new(AssociationConfig::default(), 2);
    p.to_server = Wire::hostile(0.1, 0.0, 0.0);
    let (c, s) = p.connect();
    let now = p.now;
    for i in 0..200u32 {
        p.client
            .association_mut(c)
            .unwrap()
            .send(now, 0, message(0, i, 1000), SendOptions::default())
            .unwrap();
    }
    p.client.association_mut(c).unwrap().shutdown(now);
    // No new data once shutdown began.
    assert_eq!(
        p.client.association_mut(c).unwrap().send(
            now,
            0,
            Bytes::from_static(b"late"),
            SendOptions::default()
        ),
        Err(SendError::ShuttingDown)
    );
    let deadline = p.now + Duration::from_secs(300);
    assert!(p.run_until(deadline, |p| {
        p.client.association(c).unwrap().is_closed() && p.server.association(s).unwrap().is_closed()
    }));
    assert_eq!(
        closed_reason(&p.client_events, c),
        Some(CloseReason::Shutdown)
    );
    assert_eq!(
        closed_reason(&p.server_events, s),
        Some(CloseReason::Shutdown)
    );
    assert!(
        p.server_events
            .iter()
            .any(|(i, e)| *i == s && *e == Event::PeerShutdown)
    );
    // Every message is still readable after the close, in order.
    let server = p.server.association_mut(s).unwrap();
    for i in 0..200u32 {
        let m = server.recv().expect("message lost in shutdown");
        assert_eq!(common::traffic::check(&m.data), (0, i));
    }
    assert!(server.recv().is_none());
}

#[test]
fn abort_closes_both_sides_at_once_with_the_users_reason() {
    let mut p = Pair::new(AssociationConfig::default(), 3);
    let (c, s) = p.connect();
    let now = p.now;
    p.client
        .association_mut(c)
        .unwrap()
        .abort(now, Some(Bytes::from_static(b"bye")));
    p.run_for(Duration::from_secs(1));
    assert_eq!(
        closed_reason(&p.client_events, c),
        Some(CloseReason::LocalAbort)
    );
    let Some(CloseReason::PeerAbort(causes)) = closed_reason(&p.server_events, s) else {
        panic!("server did not see the ABORT: {:?}", p.server_events);
    };
    assert_eq!(
        causes,
        vec![braid_wire::ErrorCause::UserInitiatedAbort(
            Bytes::from_static(b"bye")
        )]
    );
}

#[test]
fn a_silent_peer_is_declared_unreachable_after_association_max_retrans() {
    let mut p = Pair::new(AssociationConfig::default(), 4);
    let (c, _s) = p.connect();
    let now = p.now;
    p.client
        .association_mut(c)
        .unwrap()
        .send(now, 0, message(0, 0, 100), SendOptions::default())
        .unwrap();
    p.to_server.loss = 1.0;
    p.to_client.loss = 1.0;
    // RTO 1 s doubling to 60 s: 11 T3 expiries alone take 1+2+4+8+16+32+60*5 = 363 s;
    // unanswered heartbeats on the (then idle, §8.3) path count as errors too.
    let deadline = p.now + Duration::from_secs(1000);
    assert!(p.run_until(deadline, |p| p.client.association(c).unwrap().is_closed()));
    assert_eq!(
        closed_reason(&p.client_events, c),
        Some(CloseReason::PeerUnreachable)
    );
    let elapsed = p.now - now;
    assert!(
        elapsed > Duration::from_secs(120) && elapsed < Duration::from_secs(400),
        "{elapsed:?}"
    );
    let path = &p.client.association(c).unwrap().paths()[0];
    assert!(path.stats.timeouts >= 6, "{:?}", path.stats);
}

#[test]
fn an_unanswered_init_times_out_after_max_init_retransmits() {
    let mut p = Pair::new(AssociationConfig::default(), 5);
    p.to_server.loss = 1.0;
    let c = p
        .client
        .connect(p.now, p.client_addr, p.server_addr, 5001)
        .unwrap();
    let deadline = p.now + Duration::from_secs(1000);
    assert!(p.run_until(deadline, |p| p.client.association(c).unwrap().is_closed()));
    assert_eq!(
        closed_reason(&p.client_events, c),
        Some(CloseReason::HandshakeTimeout)
    );
}

#[test]
fn a_stalled_reader_closes_the_window_and_the_sender_blocks_then_both_recover() {
    let cfg = AssociationConfig {
        send_buffer: 256 * 1024,
        recv_buffer: 128 * 1024,
        ..Default::default()
    };
    let mut p = Pair::new(cfg, 6);
    let (c, s) = p.connect();
    // The sender fills its buffer; the receiver reads nothing for 60 s.
    let mut sent = 0u32;
    loop {
        let now = p.now;
        match p.client.association_mut(c).unwrap().send(
            now,
            0,
            message(0, sent, 1452),
            SendOptions::default(),
        ) {
            Ok(()) => sent += 1,
            Err(SendError::WouldBlock) => break,
            Err(e) => panic!("{e}"),
        }
    }
    p.run_for(Duration::from_secs(60));
    let server = p.server.association(s).unwrap();
    assert_eq!(
        server.state(),
        State::Established,
        "zero window must not kill the association"
    );
    let client = p.client.association(c).unwrap();
    assert!(
        client.send_buffered() > 0,
        "sender still holds data the receiver had no room for"
    );
    assert!(!client.is_closed());
    // Now the reader drains; everything arrives in order.
    let mut got = 0u32;
    let deadline = p.now + Duration::from_secs(120);
    assert!(p.run_until(deadline, |p| {
        while let Some(m) = p.server.association_mut(s).unwrap().recv() {
            assert_eq!(common::traffic::check(&m.data), (0, got));
            got += 1;
        }
        got == sent
    }));
    assert!(
        p.client_events
            .iter()
            .any(|(i, e)| *i == c && *e == Event::Writable)
    );
}

#[test]
fn one_byte_messages_keep_their_order() {
    let mut p = Pair::new(AssociationConfig::default(), 7);
    p.to_server = Wire::hostile(0.05, 0.02, 0.05);
    let (c, s) = p.connect();
    let n = 20_000u32;
    let mut sent = 0u32;
    let mut got = 0u32;
    let deadline = p.now + Duration::from_secs(3000);
    assert!(p.run_until(deadline, |p| {
        while sent < n {
            let now = p.now;
            let b = Bytes::copy_from_slice(&[(sent % 251) as u8]);
            match p
                .client
                .association_mut(c)
                .unwrap()
                .send(now, 1, b, SendOptions::default())
            {
                Ok(()) => sent += 1,
                Err(SendError::WouldBlock) => break,
                Err(e) => panic!("{e}"),
            }
        }
        while let Some(m) = p.server.association_mut(s).unwrap().recv() {
            assert_eq!(&m.data[..], &[(got % 251) as u8]);
            got += 1;
        }
        got == n
    }));
}

#[test]
fn send_refuses_what_it_cannot_carry_with_typed_errors() {
    let mut p = Pair::new(
        AssociationConfig {
            max_message_size: 1000,
            ..Default::default()
        },
        8,
    );
    let (c, _s) = p.connect();
    let now = p.now;
    let a = p.client.association_mut(c).unwrap();
    let streams = a.outbound_streams();
    assert_eq!(
        a.send(
            now,
            streams,
            Bytes::from_static(b"x"),
            SendOptions::default()
        ),
        Err(SendError::InvalidStream {
            stream: streams,
            streams
        })
    );
    assert_eq!(
        a.send(now, 0, Bytes::from(vec![0; 1001]), SendOptions::default()),
        Err(SendError::MessageTooLarge {
            len: 1001,
            max: 1000
        })
    );
    assert_eq!(
        a.send(now, 0, Bytes::new(), SendOptions::default()),
        Err(SendError::EmptyMessage)
    );
    assert_eq!(
        a.send(now, 0, Bytes::from_static(b"ok"), SendOptions::default()),
        Ok(())
    );
}

#[test]
fn pr_sctp_abandons_expired_messages_and_later_ones_still_arrive() {
    let mut p = Pair::new(AssociationConfig::default(), 9);
    let (c, s) = p.connect();
    // Everything sent in the first second is lost; those messages live 500 ms.
    p.to_server.loss = 1.0;
    let now = p.now;
    for i in 0..10u32 {
        let opts = SendOptions {
            lifetime: Some(Duration::from_millis(500)),
            ..Default::default()
        };
        p.client
            .association_mut(c)
            .unwrap()
            .send(now, 0, message(0, i, 500), opts)
            .unwrap();
    }
    p.run_for(Duration::from_millis(900));
    p.to_server.loss = 0.0;
    let now = p.now;
    for i in 10..20u32 {
        p.client
            .association_mut(c)
            .unwrap()
            .send(now, 0, message(0, i, 500), SendOptions::default())
            .unwrap();
    }
    let mut got = Vec::new();
    let deadline = p.now + Duration::from_secs(60);
    assert!(p.run_until(deadline, |p| {
        while let Some(m) = p.server.association_mut(s).unwrap().recv() {
            got.push(common::traffic::check(&m.data).1);
        }
        got.len() == 10
    }));
    assert_eq!(got, (10..20).collect::<Vec<_>>());
    assert_eq!(
        p.client.association(c).unwrap().stats().abandoned_messages,
        10
    );
}

#[test]
fn transfers_are_deterministic_for_a_seed() {
    let run = |seed| {
        let mut p = Pair::new(AssociationConfig::default(), seed);
        p.to_server = Wire::hostile(0.03, 0.01, 0.05);
        p.to_client = Wire::hostile(0.03, 0.01, 0.05);
        let (c, s) = p.connect();
        let plan = Plan {
            streams: 4,
            total_bytes: 2_000_000,
            size: Box::new(|n| 100 + (n as usize * 37) % 2000),
            unordered: false,
        };
        let o = transfer(&mut p, c, s, &plan, Duration::from_secs(3000));
        (o.elapsed, p.client.association(c).unwrap().paths()[0].stats)
    };
    assert_eq!(run(11), run(11));
    assert_ne!(run(11), run(12));
}

#[test]
fn an_idle_association_is_kept_alive_and_measured_by_heartbeats() {
    let mut p = Pair::new(AssociationConfig::default(), 10);
    let (c, s) = p.connect();
    assert_eq!(p.client.association(c).unwrap().paths()[0].srtt, None);
    // HB.interval 30 s + RTO with jitter: a few heartbeats in 200 s of silence.
    p.run_for(Duration::from_secs(200));
    let path = &p.client.association(c).unwrap().paths()[0];
    let srtt = path.srtt.expect("no RTT measured from HEARTBEAT-ACKs");
    // One-way delay 10 ms each way.
    assert!((srtt.as_secs_f64() - 0.020).abs() < 0.002, "{srtt:?}");
    assert!(path.stats.packets_sent >= 4, "{:?}", path.stats);
    assert_eq!(p.server.association(s).unwrap().state(), State::Established);
    // A dead peer is found by heartbeats alone: Path.Max.Retrans, then Association.Max.Retrans.
    // Dead both ways: with only our packets lost, the peer's own heartbeats may find us
    // gone first and its ABORT would close us (the order depends on the timers' jitter).
    p.to_server.loss = 1.0;
    p.to_client.loss = 1.0;
    let deadline = p.now + Duration::from_secs(3600);
    assert!(p.run_until(deadline, |p| p.client.association(c).unwrap().is_closed()));
    assert_eq!(
        closed_reason(&p.client_events, c),
        Some(CloseReason::PeerUnreachable)
    );
    assert!(p.client_events.iter().any(|(i, e)| *i == c
        && matches!(
            e,
            Event::PathState {
                state: braid_proto::PathState::Inactive,
                ..
            }
        )));
}

#[test]
fn readable_and_stream_buffer_low_events_tell_the_application_when_to_act() {
    let mut p = Pair::new(
        AssociationConfig {
            stream_buffer_low: 2000,
            ..Default::default()
        },
        11,
    );
    let (c, s) = p.connect();
    let now = p.now;
    for i in 0..5u32 {
        p.client
            .association_mut(c)
            .unwrap()
            .send(now, 2, message(2, i, 1000), SendOptions::default())
            .unwrap();
    }
    assert_eq!(
        p.client.association(c).unwrap().stream_buffered(2),
        Some((5000, 5))
    );
    p.run_for(Duration::from_secs(1));
    // Once acknowledged, the stream's buffered bytes fell below 2000: one event.
    let lows: Vec<_> = p
        .client_events
        .iter()
        .filter(|(i, e)| *i == c && matches!(e, Event::StreamBufferLow { stream: 2 }))
        .collect();
    assert_eq!(lows.len(), 1);
    assert_eq!(
        p.client.association(c).unwrap().stream_buffered(2),
        Some((0, 0))
    );
    assert!(
        p.server_events
            .iter()
            .any(|(i, e)| *i == s && *e == Event::Readable)
    );
}
