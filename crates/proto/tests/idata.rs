//! I-DATA (RFC 8260): negotiation, the sender's MID/FSN, reassembly of interleaved
//! fragments (ordered and unordered, in both arrival orders), I-FORWARD-TSN, the fallback
//! to DATA, and a checked transfer over a hostile wire.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use braid_proto::{AssociationConfig, Event, SchedulerKind, SendOptions, State};
use braid_wire::chunk::{Abort, ChunkType, Data, IData, IForwardTsn, IForwardTsnStream, Init};
use braid_wire::{Chunk, ErrorCause, Param};
use bytes::Bytes;
use common::script::{Script, data, quiet_config, secs};
use common::traffic::{Plan, transfer};
use common::{Pair, Wire};

fn idata_config() -> AssociationConfig {
    AssociationConfig {
        idata: true,
        ..quiet_config()
    }
}

/// What a peer that implements RFC 8260 (and PR-SCTP) lists in its INIT.
fn idata_params() -> Vec<Param> {
    vec![
        Param::ForwardTsnSupported,
        Param::SupportedExtensions(vec![
            ChunkType::FORWARD_TSN.0,
            ChunkType::I_DATA.0,
            ChunkType::I_FORWARD_TSN.0,
        ]),
    ]
}

/// A server with I-DATA on, associated with a scripted peer that listed I-DATA.
fn negotiated(seed: u64) -> Script {
    let mut s = Script::server_with(idata_config(), seed);
    s.init_params = idata_params();
    s.establish_passive();
    s
}

/// One I-DATA fragment from the peer: `fsn` 0 is the B fragment (carrying PPID 7).
fn frag(tsn: u32, stream: u16, mid: u32, fsn: u32, last: bool, payload: &[u8]) -> Chunk {
    IData {
        tsn,
        stream_id: stream,
        mid,
        ppid: if fsn == 0 { 7 } else { 0 },
        fsn,
        unordered: false,
        beginning: fsn == 0,
        ending: last,
        immediate: false,
        user_data: Bytes::copy_from_slice(payload),
    }
    .into()
}

fn unordered(c: Chunk) -> Chunk {
    match c {
        Chunk::IData(mut d) => {
            d.unordered = true;
            d.into()
        }
        other => other,
    }
}

/// Messages the application reads, as (stream, payload).
fn read_all(s: &mut Script) -> Vec<(u16, Vec<u8>)> {
    let mut v = Vec::new();
    while let Some(m) = s.app_recv() {
        v.push((m.stream_id, m.data.to_vec()));
    }
    v
}

fn protocol_violation(s: &Script) -> bool {
    s.events.iter().any(|(_, _, e)| {
        matches!(
            e,
            Event::Closed(braid_proto::CloseReason::ProtocolViolation(_))
        )
    })
}

#[test]
fn both_sides_listing_i_data_negotiate_it_and_the_init_ack_lists_it_back() {
    let mut s = Script::server_with(idata_config(), 1);
    s.init_params = idata_params();
    let ack = s.init_exchange();
    let listed = ack.params.iter().any(|p| {
        matches!(p, Param::SupportedExtensions(l)
            if l.contains(&ChunkType::I_DATA.0) && l.contains(&ChunkType::I_FORWARD_TSN.0))
    });
    assert!(listed, "INIT-ACK does not list I-DATA: {:?}", ack.params);
}

#[test]
fn the_sender_cuts_a_message_into_i_data_with_one_mid_and_consecutive_fsns() {
    let mut s = negotiated(2);
    let msg: Vec<u8> = (0..4000u32).map(|i| i as u8).collect();
    s.app_send(1, &msg);
    let chunks: Vec<IData> = s
        .take_sent()
        .iter()
        .flat_map(|o| o.all::<IData>())
        .collect();
    assert!(chunks.len() >= 3, "4000 bytes in {} chunks", chunks.len());
    assert!(chunks.iter().all(|c| c.mid == 0 && c.stream_id == 1));
    let fsns: Vec<u32> = chunks.iter().map(|c| c.fsn).collect();
    assert_eq!(fsns, (0..chunks.len() as u32).collect::<Vec<_>>());
    assert!(chunks[0].beginning && chunks.last().unwrap().ending);
    let body: Vec<u8> = chunks.iter().flat_map(|c| c.user_data.to_vec()).collect();
    assert_eq!(body, msg);
    // The next message of the stream gets the next MID.
    s.app_send(1, b"second");
    let next: Vec<IData> = s
        .take_sent()
        .iter()
        .flat_map(|o| o.all::<IData>())
        .collect();
    assert_eq!(next.iter().map(|c| c.mid).collect::<Vec<_>>(), vec![1]);
}

/// Two ordered messages on two streams, fragments interleaved in TSN order, injected in
/// `order`: each is reassembled whole, whatever the arrival order.
fn two_interleaved_ordered_messages(order: &[usize], seed: u64) -> Vec<(u16, Vec<u8>)> {
    let mut s = negotiated(seed);
    let base = s.peer_tsn(0);
    let t = |i: u32| base.wrapping_add(i);
    let chunks = [
        frag(t(0), 0, 0, 0, false, b"big-"),
        frag(t(1), 1, 0, 0, false, b"sm"),
        frag(t(2), 0, 0, 1, false, b"mess"),
        frag(t(3), 1, 0, 1, true, b"all"),
        frag(t(4), 0, 0, 2, true, b"age"),
    ];
    for &i in order {
        s.send_chunks(vec![chunks[i].clone()]);
    }
    let mut got = read_all(&mut s);
    got.sort();
    got
}

#[test]
fn interleaved_fragments_of_two_streams_are_reassembled_in_either_arrival_order() {
    let want = vec![(0, b"big-message".to_vec()), (1, b"small".to_vec())];
    assert_eq!(two_interleaved_ordered_messages(&[0, 1, 2, 3, 4], 3), want);
    assert_eq!(two_interleaved_ordered_messages(&[4, 3, 2, 1, 0], 4), want);
    assert_eq!(two_interleaved_ordered_messages(&[2, 4, 0, 3, 1], 5), want);
}

#[test]
fn the_small_message_leaves_before_the_big_one_it_interleaves_with_is_whole() {
    let mut s = negotiated(6);
    let base = s.peer_tsn(0);
    let t = |i: u32| base.wrapping_add(i);
    s.send_chunks(vec![frag(t(0), 0, 0, 0, false, b"big-")]);
    s.send_chunks(vec![frag(t(1), 1, 0, 0, true, b"small")]);
    assert_eq!(read_all(&mut s), vec![(1, b"small".to_vec())]);
    s.send_chunks(vec![frag(t(2), 0, 0, 1, true, b"rest")]);
    assert_eq!(read_all(&mut s), vec![(0, b"big-rest".to_vec())]);
}

#[test]
fn ordered_messages_of_one_stream_leave_in_mid_order() {
    let mut s = negotiated(7);
    let base = s.peer_tsn(0);
    let t = |i: u32| base.wrapping_add(i);
    // MID 1 is whole first; MID 0's fragments arrive after it, the last one reordered.
    s.send_chunks(vec![frag(t(2), 0, 1, 0, true, b"one")]);
    s.send_chunks(vec![frag(t(1), 0, 0, 1, true, b"ro")]);
    assert!(read_all(&mut s).is_empty(), "MID 1 delivered before MID 0");
    s.send_chunks(vec![frag(t(0), 0, 0, 0, false, b"ze")]);
    assert_eq!(
        read_all(&mut s),
        vec![(0, b"zero".to_vec()), (0, b"one".to_vec())]
    );
}

#[test]
fn unordered_messages_of_one_stream_interleave_and_leave_when_whole() {
    // Whichever message gets its last missing fragment first leaves first.
    let cases: [(u64, [usize; 4], &[u8]); 3] = [
        (8, [0, 1, 2, 3], b"bbBB"),
        (9, [3, 2, 1, 0], b"bbBB"),
        (10, [3, 1, 0, 2], b"AAaa"),
    ];
    for (seed, order, want_first) in cases {
        let mut s = negotiated(seed);
        let base = s.peer_tsn(0);
        let t = |i: u32| base.wrapping_add(i);
        let chunks = [
            unordered(frag(t(0), 2, 0, 0, false, b"AA")),
            unordered(frag(t(1), 2, 1, 0, false, b"bb")),
            unordered(frag(t(2), 2, 1, 1, true, b"BB")),
            unordered(frag(t(3), 2, 0, 1, true, b"aa")),
        ];
        let mut got = Vec::new();
        for &i in &order {
            s.send_chunks(vec![chunks[i].clone()]);
            got.extend(read_all(&mut s));
        }
        assert_eq!(got.len(), 2, "order {order:?}: {got:?}");
        assert_eq!(got[0].1, want_first.to_vec(), "order {order:?}");
    }
}

#[test]
fn a_fragment_repeating_a_held_fsn_or_past_the_last_one_is_not_delivered() {
    let mut s = negotiated(10);
    let base = s.peer_tsn(0);
    let t = |i: u32| base.wrapping_add(i);
    s.send_chunks(vec![frag(t(0), 0, 0, 1, true, b"end")]);
    // Same FSN again under another TSN, and an FSN beyond the E fragment's.
    s.send_chunks(vec![frag(t(1), 0, 0, 1, false, b"dup")]);
    s.send_chunks(vec![frag(t(2), 0, 0, 5, false, b"far")]);
    s.send_chunks(vec![frag(t(3), 0, 0, 0, false, b"the ")]);
    assert_eq!(read_all(&mut s), vec![(0, b"the end".to_vec())]);
}

#[test]
fn i_forward_tsn_skips_an_abandoned_ordered_message_and_drops_its_fragments() {
    let mut s = negotiated(11);
    let base = s.peer_tsn(0);
    let t = |i: u32| base.wrapping_add(i);
    // MID 0 lost its tail (abandoned by the sender); MID 1 is whole but must wait.
    s.send_chunks(vec![frag(t(0), 0, 0, 0, false, b"abandoned")]);
    s.send_chunks(vec![frag(t(3), 0, 1, 0, true, b"next")]);
    assert!(read_all(&mut s).is_empty());
    let fwd = IForwardTsn {
        new_cum_tsn: t(2),
        streams: vec![IForwardTsnStream {
            stream_id: 0,
            unordered: false,
            mid: 0,
        }],
    };
    s.send_chunks(vec![fwd.into()]);
    assert_eq!(read_all(&mut s), vec![(0, b"next".to_vec())]);
    // The late tail of MID 0 is not delivered: its MID was skipped.
    s.send_chunks(vec![frag(t(4), 0, 0, 1, true, b"late")]);
    assert!(read_all(&mut s).is_empty());
    assert_eq!(s.assoc().state(), State::Established);
}

#[test]
fn i_forward_tsn_drops_skipped_unordered_messages_but_not_another_streams_below_its_tsn() {
    let mut s = negotiated(12);
    let base = s.peer_tsn(0);
    let t = |i: u32| base.wrapping_add(i);
    // Stream 0's message is still being sent; stream 1's was abandoned after one fragment.
    s.send_chunks(vec![unordered(frag(t(0), 0, 0, 0, false, b"keep "))]);
    s.send_chunks(vec![unordered(frag(t(1), 1, 0, 0, false, b"drop"))]);
    let fwd = IForwardTsn {
        new_cum_tsn: t(2),
        streams: vec![IForwardTsnStream {
            stream_id: 1,
            unordered: true,
            mid: 0,
        }],
    };
    s.send_chunks(vec![fwd.into()]);
    s.send_chunks(vec![unordered(frag(t(3), 0, 0, 1, true, b"me"))]);
    s.send_chunks(vec![unordered(frag(t(4), 1, 0, 1, true, b"ped"))]);
    assert_eq!(read_all(&mut s), vec![(0, b"keep me".to_vec())]);
}

#[test]
fn i_forward_tsn_names_the_largest_unordered_mid_and_drops_every_one_up_to_it() {
    let mut s = negotiated(22);
    let base = s.peer_tsn(0);
    let t = |i: u32| base.wrapping_add(i);
    s.send_chunks(vec![unordered(frag(t(0), 0, 4, 0, false, b"four"))]);
    s.send_chunks(vec![unordered(frag(t(1), 0, 5, 0, false, b"five"))]);
    s.send_chunks(vec![unordered(frag(t(2), 0, 6, 0, false, b"six "))]);
    let fwd = IForwardTsn {
        new_cum_tsn: t(3),
        streams: vec![IForwardTsnStream {
            stream_id: 0,
            unordered: true,
            mid: 5,
        }],
    };
    s.send_chunks(vec![fwd.into()]);
    for (i, mid) in [(4u32, 4u32), (5, 5), (6, 6)] {
        s.send_chunks(vec![unordered(frag(t(i), 0, mid, 1, true, b"end"))]);
    }
    assert_eq!(read_all(&mut s), vec![(0, b"six end".to_vec())]);
}

#[test]
fn data_after_i_data_was_negotiated_is_a_protocol_violation() {
    let mut s = negotiated(13);
    s.send_chunks(vec![data(s.peer_tsn(0), 0, 0, b"plain DATA")]);
    let abort: Abort = s.expect_to_peer();
    assert!(
        abort
            .causes
            .iter()
            .any(|c| matches!(c, ErrorCause::ProtocolViolation(_)))
    );
    assert!(protocol_violation(&s));
}

#[test]
fn a_peer_that_does_not_list_i_data_gets_data_and_may_not_send_i_data() {
    let mut s = Script::server_with(idata_config(), 14);
    s.init_params = vec![Param::ForwardTsnSupported];
    s.establish_passive();
    s.app_send(0, b"fallback");
    let sent = s.take_sent();
    assert!(sent.iter().any(|o| o.has::<Data>()), "no DATA sent");
    assert!(
        !sent.iter().any(|o| o.has::<IData>()),
        "I-DATA not negotiated"
    );
    s.send_chunks(vec![frag(s.peer_tsn(0), 0, 0, 0, true, b"x")]);
    let _: Abort = s.expect_to_peer();
    assert!(protocol_violation(&s));
}

#[test]
fn without_the_setting_braid_does_not_offer_i_data() {
    let mut s = Script::client(15);
    let init: Init = s.connect();
    let offered = init
        .params
        .iter()
        .any(|p| matches!(p, Param::SupportedExtensions(l) if l.contains(&ChunkType::I_DATA.0)));
    assert!(!offered);
}

#[test]
fn an_expired_message_is_skipped_with_i_forward_tsn() {
    let mut s = negotiated(16);
    let now = s.now;
    let opts = SendOptions {
        lifetime: Some(Duration::from_millis(100)),
        ..SendOptions::default()
    };
    s.assoc_mut()
        .send(now, 0, Bytes::from_static(b"short-lived"), opts)
        .unwrap();
    s.flush();
    let first = s.take_sent();
    assert!(first.iter().any(|o| o.has::<IData>()));
    // Never acknowledged: at the retransmission timeout it is abandoned and skipped.
    let outs = s.collect_until(s.t() + secs(5));
    let fwd = outs
        .iter()
        .find_map(|o| o.get::<IForwardTsn>())
        .expect("no I-FORWARD-TSN");
    assert_eq!(fwd.new_cum_tsn, s.ep_tsn(0));
    assert_eq!(
        fwd.streams,
        vec![IForwardTsnStream {
            stream_id: 0,
            unordered: false,
            mid: 0
        }]
    );
}

/// Both ends with I-DATA and a scheduler that interleaves.
fn idata_pair(kind: SchedulerKind, seed: u64) -> Pair {
    let cfg = AssociationConfig {
        idata: true,
        stream_scheduler: kind,
        ..AssociationConfig::default()
    };
    Pair::new(cfg, seed)
}

#[test]
fn a_small_message_overtakes_a_big_one_of_another_stream_with_fair_capacity() {
    let mut p = idata_pair(SchedulerKind::FairCapacity, 17);
    let (c, s) = p.connect();
    let now = p.now;
    let big = Bytes::from(vec![1u8; 200_000]);
    let a = p.client.association_mut(c).unwrap();
    a.send(now, 0, big, SendOptions::default()).unwrap();
    a.send(now, 1, Bytes::from_static(b"ping"), SendOptions::default())
        .unwrap();
    let mut order = Vec::new();
    let deadline = p.now + Duration::from_secs(60);
    p.run_until(deadline, |p| {
        let a = p.server.association_mut(s).unwrap();
        while let Some(m) = a.recv() {
            order.push(m.stream_id);
        }
        order.len() == 2
    });
    assert_eq!(
        order,
        vec![1, 0],
        "the small message waited for the big one"
    );
}

#[test]
fn with_data_the_small_message_waits_behind_the_big_one() {
    let cfg = AssociationConfig {
        stream_scheduler: SchedulerKind::FairCapacity,
        ..AssociationConfig::default()
    };
    let mut p = Pair::new(cfg, 18);
    let (c, s) = p.connect();
    let now = p.now;
    let a = p.client.association_mut(c).unwrap();
    a.send(
        now,
        0,
        Bytes::from(vec![1u8; 200_000]),
        SendOptions::default(),
    )
    .unwrap();
    a.send(now, 1, Bytes::from_static(b"ping"), SendOptions::default())
        .unwrap();
    let mut order = Vec::new();
    let deadline = p.now + Duration::from_secs(60);
    p.run_until(deadline, |p| {
        let a = p.server.association_mut(s).unwrap();
        while let Some(m) = a.recv() {
            order.push(m.stream_id);
        }
        order.len() == 2
    });
    assert_eq!(order, vec![0, 1]);
}

/// A checked transfer (every message once, intact, in order per ordered stream) with I-DATA
/// and interleaving over a wire with loss, duplication and reordering.
fn hostile_idata_transfer(kind: SchedulerKind, seed: u64, unordered: bool) {
    let mut p = idata_pair(kind, seed);
    p.to_server = Wire::hostile(0.05, 0.02, 0.05);
    p.to_client = Wire::hostile(0.05, 0.02, 0.05);
    let (c, s) = p.connect();
    assert!(p.client.association(c).unwrap().interleaving());
    assert!(p.server.association(s).unwrap().interleaving());
    let plan = Plan {
        streams: 4,
        total_bytes: 8_000_000,
        size: Box::new(|n| 200 + (n as usize * 7919) % 20_000),
        unordered,
    };
    let o = transfer(&mut p, c, s, &plan, Duration::from_secs(5000));
    assert_eq!(o.bytes, 8_000_000);
}

#[test]
fn an_interleaved_ordered_transfer_survives_a_hostile_wire() {
    hostile_idata_transfer(SchedulerKind::FairCapacity, 19, false);
}

#[test]
fn an_interleaved_unordered_transfer_survives_a_hostile_wire() {
    hostile_idata_transfer(SchedulerKind::RoundRobinPacket, 20, true);
}

#[test]
fn a_wfq_interleaved_transfer_survives_a_hostile_wire() {
    hostile_idata_transfer(SchedulerKind::Wfq, 21, false);
}

#[test]
fn a_flood_of_fragments_that_never_complete_stays_within_the_receive_buffer() {
    let cfg = AssociationConfig {
        recv_buffer: 64 * 1024,
        ..idata_config()
    };
    let mut s = Script::server_with(cfg, 23);
    s.init_params = idata_params();
    s.establish_passive();
    let base = s.peer_tsn(0);
    // 4000 middle fragments (no B), each of a new message on a rotating stream: none can
    // ever complete; they cost the peer nothing but must not cost us more than the buffer.
    for i in 0..4000u32 {
        let c = frag(
            base.wrapping_add(i),
            (i % 4) as u16,
            i,
            1,
            false,
            &[0u8; 100],
        );
        s.send_chunks(vec![c]);
    }
    let held = s.assoc().recv_buffered();
    assert!(held > 0, "nothing held: the test does not test the bound");
    assert!(held <= 64 * 1024, "held {held} bytes with a 64 KiB buffer");
    assert_eq!(s.assoc().state(), State::Established);
    // The window is closed: what comes now beyond the highest TSN is not taken.
    let before = s.assoc().recv_buffered();
    s.send_chunks(vec![frag(
        base.wrapping_add(5000),
        0,
        9999,
        0,
        true,
        &[1u8; 100],
    )]);
    assert_eq!(s.assoc().recv_buffered(), before);
}

#[test]
fn random_i_data_headers_never_panic_and_never_deliver_more_than_was_sent() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(24);
    let mut s = negotiated(24);
    let base = s.peer_tsn(0);
    let mut payload_bytes = 0usize;
    for i in 0..3000u32 {
        let fsn: u32 = rng.random_range(0..4);
        let len = rng.random_range(1..64usize);
        payload_bytes += len;
        let chunk = IData {
            tsn: base.wrapping_add(rng.random_range(0..(i + 1))),
            stream_id: rng.random_range(0..4),
            mid: rng.random_range(0..8),
            ppid: 0,
            fsn: if fsn == 0 { 0 } else { fsn },
            unordered: rng.random_bool(0.5),
            beginning: fsn == 0,
            ending: rng.random_bool(0.4),
            immediate: false,
            user_data: Bytes::from(vec![7u8; len]),
        };
        s.send_chunks(vec![chunk.into()]);
        if rng.random_bool(0.05) {
            let fwd = IForwardTsn {
                new_cum_tsn: base.wrapping_add(rng.random_range(0..(i + 1))),
                streams: vec![IForwardTsnStream {
                    stream_id: rng.random_range(0..6),
                    unordered: rng.random_bool(0.5),
                    mid: rng.random_range(0..8),
                }],
            };
            s.send_chunks(vec![fwd.into()]);
        }
    }
    let delivered: usize = read_all(&mut s).iter().map(|(_, d)| d.len()).sum();
    assert!(delivered <= payload_bytes);
    assert_eq!(s.assoc().state(), State::Established);
}

#[test]
fn an_i_data_endpoint_and_a_data_only_endpoint_transfer_over_data() {
    let on = AssociationConfig {
        idata: true,
        stream_scheduler: SchedulerKind::FairCapacity,
        ..AssociationConfig::default()
    };
    let off = AssociationConfig {
        stream_scheduler: SchedulerKind::FairCapacity,
        ..AssociationConfig::default()
    };
    let mut p = Pair::new_with(on, off, 25);
    p.keep_log = true;
    let (c, s) = p.connect();
    let plan = Plan {
        streams: 3,
        total_bytes: 1_000_000,
        size: Box::new(|n| 100 + (n as usize * 7919) % 9000),
        unordered: false,
    };
    assert!(!p.client.association(c).unwrap().interleaving());
    assert!(!p.server.association(s).unwrap().interleaving());
    let o = transfer(&mut p, c, s, &plan, Duration::from_secs(600));
    assert_eq!(o.bytes, 1_000_000);
    let chunks: Vec<Chunk> = p
        .log
        .iter()
        .filter_map(|l| braid_wire::Packet::decode(&l.bytes).ok())
        .flat_map(|pkt| pkt.chunks)
        .collect();
    assert!(
        chunks.iter().any(|c| matches!(c, Chunk::Data(_))),
        "no DATA"
    );
    assert!(
        !chunks.iter().any(|c| matches!(c, Chunk::IData(_))),
        "I-DATA without negotiation"
    );
}

#[test]
fn an_expired_message_interleaved_with_another_streams_is_abandoned_alone() {
    let cfg = AssociationConfig {
        stream_scheduler: SchedulerKind::FairCapacity,
        ..idata_config()
    };
    let mut s = Script::server_with(cfg, 26);
    s.init_params = idata_params();
    s.establish_passive();
    let now = s.now;
    let short = SendOptions {
        lifetime: Some(Duration::from_millis(100)),
        ..SendOptions::default()
    };
    let a = s.assoc_mut();
    a.send(now, 0, Bytes::from(vec![0u8; 3000]), short).unwrap();
    a.send(now, 1, Bytes::from(vec![1u8; 3000]), SendOptions::default())
        .unwrap();
    s.flush();
    let first: Vec<IData> = s
        .take_sent()
        .iter()
        .flat_map(|o| o.all::<IData>())
        .collect();
    let streams: Vec<u16> = first.iter().map(|c| c.stream_id).collect();
    assert!(
        streams.windows(2).any(|w| w[0] != w[1]) && streams.contains(&0) && streams.contains(&1),
        "fragments not interleaved: {streams:?}"
    );
    // Nothing is acknowledged: at T3 stream 0's message has expired, stream 1's has not.
    let outs = s.collect_until(s.t() + secs(5));
    let again: Vec<IData> = outs.iter().flat_map(|o| o.all::<IData>()).collect();
    assert!(!again.is_empty(), "nothing retransmitted");
    assert!(
        again.iter().all(|c| c.stream_id == 1),
        "an abandoned fragment was retransmitted"
    );
    let ones = |v: &[IData]| {
        let mut t: Vec<u32> = v
            .iter()
            .filter(|c| c.stream_id == 1)
            .map(|c| c.tsn)
            .collect();
        t.sort_unstable();
        t.dedup();
        t
    };
    assert_eq!(ones(&again), ones(&first), "stream 1 lost a fragment");
    let fwd = outs
        .iter()
        .find_map(|o| o.get::<IForwardTsn>())
        .expect("no I-FORWARD-TSN");
    assert_eq!(
        fwd.streams,
        vec![IForwardTsnStream {
            stream_id: 0,
            unordered: false,
            mid: 0
        }]
    );
}

#[test]
fn round_robin_per_packet_gives_each_packet_to_one_stream_and_alternates() {
    let cfg = AssociationConfig {
        stream_scheduler: SchedulerKind::RoundRobinPacket,
        ..idata_config()
    };
    let mut s = Script::server_with(cfg, 27);
    s.init_params = idata_params();
    s.establish_passive();
    let now = s.now;
    let a = s.assoc_mut();
    for stream in [0u16, 1] {
        let big = Bytes::from(vec![stream as u8; 20_000]);
        a.send(now, stream, big, SendOptions::default()).unwrap();
    }
    s.flush();
    let per_packet: Vec<Vec<u16>> = s
        .take_sent()
        .iter()
        .map(|o| o.all::<IData>().iter().map(|c| c.stream_id).collect())
        .filter(|v: &Vec<u16>| !v.is_empty())
        .collect();
    assert!(per_packet.len() >= 2, "{per_packet:?}");
    for p in &per_packet {
        assert!(
            p.iter().all(|s| *s == p[0]),
            "a packet mixes streams: {p:?}"
        );
    }
    // RFC 8260 §3.3: the next packet belongs to the next stream, before either message ends.
    let owners: Vec<u16> = per_packet.iter().map(|p| p[0]).collect();
    assert!(owners.windows(2).all(|w| w[0] != w[1]), "{owners:?}");
}

#[test]
fn nr_sack_under_the_delivered_policy_holds_back_an_i_data_message_until_it_is_delivered() {
    let mut s = Script::server_with(
        AssociationConfig {
            nr_sack_policy: braid_proto::NrSackPolicy::Delivered,
            ..idata_config()
        },
        11,
    );
    let mut params = idata_params();
    if let Param::SupportedExtensions(l) = &mut params[1] {
        l.push(ChunkType::NR_SACK.0);
    }
    s.init_params = params;
    s.establish_passive();
    let base = s.peer_tsn(0);
    let t = |i: u32| base.wrapping_add(i);
    // MID 1 of stream 0 arrives whole before MID 0: received, but not deliverable.
    s.send_chunks(vec![frag(t(1), 0, 1, 0, true, b"second")]);
    let nr = s.expect_chunk::<braid_wire::chunk::NrSack>();
    assert_eq!(nr.cum_tsn_ack, t(0).wrapping_sub(1));
    assert_eq!(
        (nr.gap_blocks.len(), nr.nr_gap_blocks.len()),
        (1, 0),
        "{nr:?}"
    );
    // MID 0 of stream 1 is delivered at once: only it (offset 3 from cum) is non-renegable.
    s.send_chunks(vec![frag(t(2), 1, 0, 0, true, b"other")]);
    let nr = s.expect_chunk::<braid_wire::chunk::NrSack>();
    let blocks: Vec<(u16, u16)> = nr.nr_gap_blocks.iter().map(|b| (b.start, b.end)).collect();
    assert_eq!(blocks, vec![(3, 3)], "{nr:?}");
    // MID 0 of stream 0 fills the hole: both of stream 0's messages go up, cum covers all.
    s.send_chunks(vec![frag(t(0), 0, 0, 0, true, b"first")]);
    assert_eq!(
        read_all(&mut s),
        vec![
            (1, b"other".to_vec()),
            (0, b"first".to_vec()),
            (0, b"second".to_vec())
        ]
    );
}
