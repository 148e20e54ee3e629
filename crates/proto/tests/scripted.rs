//! Packet-level scripts in the spirit of packetdrill: one endpoint under test, the test plays
//! the peer by hand, packet by packet, on a virtual clock (see `common::script`).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::VecDeque;

use braid_proto::{AssociationConfig, CloseReason, CongestionControl, Event, LossDetection, State};
use braid_wire::chunk::{
    Abort, CookieAck, CookieEcho, Data, ErrorChunk, Init, InitAck, Sack, Shutdown, ShutdownAck,
    ShutdownComplete,
};
use braid_wire::{ErrorCause, Param, ParamType};
use bytes::Bytes;
use common::script::{PEER_COOKIE, Script, abort, data, ms, sack, secs, unknown_chunk};

const BIG_WINDOW: u32 = 1 << 20;

// ============================================================================ 1. cookies

#[test]
fn a_forged_cookie_is_silently_discarded() {
    let mut s = Script::server(1);
    let ack = s.init_exchange();
    let cookie = ack.state_cookie().unwrap().clone();

    // §5.1.5 steps 1-2: a cookie whose MAC does not verify is discarded without a word.
    for i in [0, cookie.len() / 2, cookie.len() - 1] {
        let mut forged = cookie.to_vec();
        forged[i] ^= 0x01;
        s.send_chunks(vec![
            CookieEcho {
                cookie: forged.into(),
            }
            .into(),
        ]);
        s.expect_nothing_now();
    }
    // A cookie made up from scratch, of the right size and of other sizes.
    for len in [cookie.len(), 1, 64, 400] {
        let made_up: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
        s.send_chunks(vec![
            CookieEcho {
                cookie: made_up.into(),
            }
            .into(),
        ]);
        s.expect_nothing_now();
    }
    s.expect_nothing_for(secs(10));
    assert!(
        s.ep.accept().is_none(),
        "a forged cookie created an association"
    );
    assert_eq!(s.ep.associations().count(), 0);
    assert!(s.events.is_empty());

    // §5.1.5 step 3: the genuine cookie in a packet whose tag is not the cookie's: discard.
    for wrong in [0, s.ep_tag ^ 1] {
        let p = s.with_tag(
            wrong,
            vec![
                CookieEcho {
                    cookie: cookie.clone(),
                }
                .into(),
            ],
        );
        s.inject(&p);
        s.expect_nothing_now();
    }
    assert!(s.ep.accept().is_none());

    // The genuine cookie still works: the forgeries left no state behind.
    s.send_chunks(vec![CookieEcho { cookie }.into()]);
    s.expect_to_peer::<CookieAck>();
    assert!(s.ep.accept().is_some());
}

#[test]
fn a_stale_cookie_is_answered_with_a_stale_cookie_error() {
    let mut s = Script::server(2);
    let ack = s.init_exchange();
    let cookie = ack.state_cookie().unwrap().clone();

    // Valid.Cookie.Life is 60 s (§16); echo it 1.5 s too late.
    s.expect_nothing_until(secs(61) + ms(500));
    s.send_chunks(vec![CookieEcho { cookie }.into()]);
    // §5.1.5 step 4: ERROR with Stale Cookie (cause 3) and the staleness in microseconds.
    let o = s.expect();
    let err: ErrorChunk = o.only();
    assert_eq!(o.vtag(), s.peer_tag, "tag of the Stale Cookie ERROR");
    assert_eq!(o.t(), secs(61) + ms(500));
    assert_eq!(
        err.causes,
        vec![ErrorCause::StaleCookie {
            staleness_us: 1_500_000
        }]
    );
    assert_eq!(err.causes[0].code().0, 3);
    assert!(
        s.ep.accept().is_none(),
        "a stale cookie created an association"
    );
    s.expect_nothing_for(secs(10));
}

#[test]
fn a_stale_cookie_with_a_wrong_packet_tag_is_silently_discarded() {
    let mut s = Script::server(201);
    let ack = s.init_exchange();
    let cookie = ack.state_cookie().unwrap().clone();
    s.advance(secs(62));
    // §5.1.5 step 3 (tags differ: MUST silently discard) comes before step 4 (too old: ERROR).
    let p = s.with_tag(s.ep_tag ^ 1, vec![CookieEcho { cookie }.into()]);
    s.inject(&p);
    s.expect_nothing_for(secs(1));
}

#[test]
fn a_cookie_echoed_at_the_end_of_its_life_is_still_accepted() {
    let mut s = Script::server(22);
    let ack = s.init_exchange();
    let cookie = ack.state_cookie().unwrap().clone();
    s.advance(secs(60));
    s.send_chunks(vec![CookieEcho { cookie }.into()]);
    s.expect_to_peer::<CookieAck>();
    assert!(s.ep.accept().is_some());
}

// ============================================================================ 3. tags

#[test]
fn data_and_sack_with_a_wrong_verification_tag_are_silently_discarded() {
    let mut s = Script::server(3);
    s.establish_passive();
    let p0 = s.peer_tsn(0);

    // §8.5: a packet whose tag is not ours is discarded: no SACK (not even delayed).
    for wrong in [0, s.ep_tag ^ 0x8000_0000, s.peer_tag] {
        let p = s.with_tag(wrong, vec![data(p0, 0, 0, b"forged")]);
        s.inject(&p);
        s.expect_nothing_for(secs(1));
    }
    assert!(
        s.app_recv().is_none(),
        "data with a wrong tag was delivered"
    );
    assert_eq!(s.assoc().stats().packets_dropped, 3);

    // A SACK with a wrong tag acknowledges nothing: T3-rtx still fires (§6.3.3).
    let t0 = s.t();
    s.app_send(0, b"hello");
    let e0 = s.expect_to_peer::<Data>().tsn;
    s.advance(ms(100));
    let p = s.with_tag(s.ep_tag.wrapping_add(1), vec![sack(e0, BIG_WINDOW, &[])]);
    s.inject(&p);
    s.expect_nothing_now();
    let d: Data = s.expect_to_peer();
    assert_eq!(d.tsn, e0);
    s.last.as_ref().unwrap().assert_at(t0 + secs(1), ms(0));

    // The right tag is accepted.
    s.send_chunks(vec![sack(e0, BIG_WINDOW, &[]), data(p0, 0, 0, b"genuine")]);
    let sk: Sack = s.expect_to_peer();
    assert_eq!(sk.cum_tsn_ack, p0);
    assert_eq!(s.app_recv_all(), vec![b"genuine".to_vec()]);
}

// ============================================================================ 4. OOTB

#[test]
fn out_of_the_blue_packets_get_the_answers_of_section_8_4() {
    let mut s = Script::server(4);

    // §8.4 item 8: DATA for no association -> ABORT with the T bit and the tag reflected.
    let p = s.with_tag(0x1111_2222, vec![data(77, 0, 0, b"who?")]);
    s.inject(&p);
    let o = s.expect();
    let a: Abort = o.only();
    assert!(a.t_bit, "ABORT answering OOTB must have the T bit");
    assert_eq!(o.vtag(), 0x1111_2222, "reflected tag");

    // Also for a SACK (item 8).
    let p = s.with_tag(0x3333_4444, vec![sack(5, 1000, &[])]);
    s.inject(&p);
    let o = s.expect();
    assert!(o.only::<Abort>().t_bit);
    assert_eq!(o.vtag(), 0x3333_4444);

    // Item 5: SHUTDOWN-ACK -> SHUTDOWN-COMPLETE with the T bit, tag reflected.
    let p = s.with_tag(0x5555_6666, vec![ShutdownAck.into()]);
    s.inject(&p);
    let o = s.expect();
    let sc: ShutdownComplete = o.only();
    assert!(sc.t_bit);
    assert_eq!(o.vtag(), 0x5555_6666);

    // Item 2: ABORT -> nothing. Item 6: SHUTDOWN-COMPLETE -> nothing. Item 7: COOKIE-ACK ->
    // nothing.
    for c in [
        abort(false),
        abort(true),
        ShutdownComplete { t_bit: false }.into(),
        ShutdownComplete { t_bit: true }.into(),
        CookieAck.into(),
    ] {
        let p = s.with_tag(0x7777_8888, vec![c]);
        s.inject(&p);
        s.expect_nothing_now();
    }
    s.expect_nothing_for(secs(5));
    assert_eq!(s.ep.associations().count(), 0);
}

// ============================================================================ 5. collision

#[test]
fn init_collision_the_peer_echoes_our_init_ack() {
    let mut s = Script::client(5);
    let ours = s.connect();
    // The peer's INIT crosses ours (§5.2.1): we are in COOKIE-WAIT.
    s.peer_tag = 0xc011_0001;
    let p = s.init_packet(s.init_chunk(vec![]));
    s.inject(&p);
    // §5.2.1: INIT-ACK with the same parameters as our INIT, Initiate Tag unchanged.
    let o = s.expect();
    let ack: InitAck = o.only();
    assert_eq!(o.vtag(), s.peer_tag);
    assert_eq!(
        ack.initiate_tag, ours.initiate_tag,
        "Initiate Tag must be unchanged"
    );
    assert_eq!(ack.initial_tsn, ours.initial_tsn);
    assert_eq!(ack.outbound_streams, ours.outbound_streams);
    assert_eq!(ack.inbound_streams, ours.inbound_streams);
    assert_eq!(s.assoc().state(), State::CookieWait);

    // The peer echoes that cookie: §5.2.4 case B (our tag matches) -> ESTABLISHED.
    let cookie = ack.state_cookie().unwrap().clone();
    s.send_chunks(vec![CookieEcho { cookie }.into()]);
    s.expect_to_peer::<CookieAck>();
    assert_eq!(s.assoc().state(), State::Established);
    assert_eq!(s.count(&Event::Connected), 1);

    // Data flows with the tags of the collision.
    s.app_send(0, b"after collision");
    let d: Data = s.expect_to_peer();
    assert_eq!(d.tsn, ours.initial_tsn);
    s.send_chunks(vec![sack(d.tsn, BIG_WINDOW, &[])]);
    // Neither T1-init nor T3 is left running.
    s.expect_nothing_for(secs(120));
}

#[test]
fn init_collision_with_crossing_cookie_echoes() {
    let mut s = Script::client(55);
    let ours = s.connect();
    s.peer_tag = 0xc011_0002;
    let p = s.init_packet(s.init_chunk(vec![]));
    s.inject(&p);
    let ep_cookie = s.expect_chunk::<InitAck>().state_cookie().unwrap().clone();

    // The peer's INIT-ACK for our INIT arrives (it was in COOKIE-WAIT too, same tag).
    let ack = s.init_ack_chunk(vec![]);
    s.send_chunks(vec![ack.into()]);
    let echo: CookieEcho = s.expect_to_peer();
    assert_eq!(echo.cookie, PEER_COOKIE);
    assert_eq!(s.assoc().state(), State::CookieEchoed);

    // The peer's COOKIE-ECHO of our cookie crosses ours: §5.2.4 case D -> ESTABLISHED.
    s.send_chunks(vec![CookieEcho { cookie: ep_cookie }.into()]);
    s.expect_to_peer::<CookieAck>();
    assert_eq!(s.assoc().state(), State::Established);
    // Then the peer's COOKIE-ACK for our echo: nothing more happens.
    s.send_chunks(vec![CookieAck.into()]);
    s.expect_nothing_now();
    assert_eq!(s.count(&Event::Connected), 1);

    s.app_send(1, b"x");
    assert_eq!(s.expect_to_peer::<Data>().tsn, ours.initial_tsn);
}

// ============================================================================ 6. restart

/// The peer restarts: a new INIT with a new tag and TSN (§5.2.2). Returns the INIT-ACK,
/// whose new tag and TSN become the script's `ep_tag` and `ep_initial_tsn`.
fn restart_init(s: &mut Script) -> InitAck {
    let old_ep_tag = s.ep_tag;
    s.peer_tag = 0x0e57_a127;
    s.peer_initial_tsn = 50_000;
    let p = s.init_packet(s.init_chunk(vec![]));
    s.inject(&p);
    let o = s.expect();
    let ack: InitAck = o.only();
    assert_eq!(
        o.vtag(),
        s.peer_tag,
        "INIT-ACK goes with the new INIT's tag"
    );
    // §5.2.2: a NEW random Initiate Tag; the cookie carries the tie-tags.
    assert_ne!(ack.initiate_tag, old_ep_tag);
    assert_ne!(ack.initiate_tag, 0);
    s.ep_tag = ack.initiate_tag;
    s.ep_initial_tsn = ack.initial_tsn;
    ack
}

/// An association that carried a message each way, then the peer restarts it (§5.2.2,
/// §5.2.4 case A). Returns the script (with the new tags) and the endpoint's old tag.
fn restarted(seed: u64) -> (Script, u32) {
    let mut s = Script::server(seed);
    s.establish_passive();
    let (old_ep_tag, old_peer_tag) = (s.ep_tag, s.peer_tag);
    // Some traffic before: our DATA stays unacknowledged (lost with the restart).
    s.send_chunks(vec![data(s.peer_tsn(0), 0, 0, b"before")]);
    s.app_send(0, b"in flight");
    let o = s.expect();
    assert!(o.has::<Data>());

    let ack = restart_init(&mut s);
    assert_ne!(ack.initiate_tag, old_ep_tag);

    // §5.2.4 case A: both tags differ, tie-tags match -> restart, COOKIE-ACK, notify.
    // (Without tie-tags in the cookie, none of the cases would match and it would be
    // discarded: the COOKIE-ACK proves they are there.)
    let cookie = ack.state_cookie().unwrap().clone();
    s.send_chunks(vec![CookieEcho { cookie }.into()]);
    let o = s.expect();
    o.only::<CookieAck>();
    assert_eq!(o.vtag(), s.peer_tag);
    assert!(s.saw(&Event::Restarted));
    assert_eq!(s.assoc().state(), State::Established);
    assert_ne!(old_peer_tag, s.peer_tag);
    (s, old_ep_tag)
}

#[test]
fn a_peer_restart_gets_new_tags_and_data_flows_again() {
    let (mut s, old_ep_tag) = restarted(6);

    // The old tag is dead (§8.5).
    let p = s.with_tag(old_ep_tag, vec![data(s.peer_tsn(0), 0, 0, b"old")]);
    s.inject(&p);
    s.expect_nothing_now();

    // Data flows both ways with the new tags and TSNs.
    s.send_chunks(vec![data(s.peer_tsn(0), 0, 0, b"after")]);
    let t = s.t();
    let sk: Sack = s.expect_to_peer();
    assert_eq!(sk.cum_tsn_ack, s.peer_tsn(0));
    s.last.as_ref().unwrap().assert_at(t + ms(200), ms(0));
    let got = s.app_recv_all();
    assert!(got.contains(&b"after".to_vec()), "{got:?}");
    assert!(!got.contains(&b"old".to_vec()));

    s.app_send(0, b"new era");
    let d: Data = s.expect_to_peer();
    assert_eq!(
        d.tsn,
        s.ep_tsn(0),
        "TSNs restart from the new INIT-ACK's initial TSN"
    );
    assert_eq!(&d.user_data[..], b"new era");
    s.send_chunks(vec![sack(d.tsn, BIG_WINDOW, &[])]);
    s.expect_nothing_for(secs(60));
}

#[test]
fn after_a_peer_restart_outgoing_stream_sequence_numbers_start_from_zero() {
    // Before the restart, message SSN 0 of stream 0 went out (unacknowledged).
    let (mut s, _) = restarted(61);
    // §5.2.4 A: the restart is handled "as if it received an ABORT followed by a new
    // COOKIE ECHO": a new association, whose SSNs start from 0 on every stream (§6.5). The
    // restarted peer's reassembly waits for SSN 0: anything else stalls the stream.
    s.app_send(0, b"new era");
    let d: Data = s.expect_to_peer();
    assert_eq!(d.tsn, s.ep_tsn(0));
    assert_eq!(d.ssn, 0, "stream sequence numbers restart");
}

// ============================================================================ 7. T3-rtx

#[test]
fn t3_rtx_backs_off_exponentially_until_association_max_retrans() {
    let mut s = Script::server(7);
    s.establish_passive();
    let t0 = s.t();
    s.app_send(0, b"into the void");
    let first: Data = s.expect_to_peer();
    s.last.as_ref().unwrap().assert_at(t0, ms(0));

    // §6.3.3 E2: RTO doubles at every expiry (RTO.Initial 1 s), capped at RTO.Max 60 s.
    let mut at = t0;
    let mut rto = secs(1);
    for n in 1..=10 {
        at += rto;
        let d: Data = s.expect_to_peer();
        assert_eq!(d.tsn, first.tsn, "retransmission {n}");
        s.last.as_ref().unwrap().assert_at(at, ms(0));
        rto = (rto * 2).min(secs(60));
    }
    // §8.1: the 11th expiry exceeds Association.Max.Retrans (10): ABORT, CLOSED.
    at += rto;
    let o = s.expect();
    let a: Abort = o.only();
    assert!(!a.t_bit);
    assert_eq!(o.vtag(), s.peer_tag);
    o.assert_at(at, ms(0));
    assert!(s.saw(&Event::Closed(CloseReason::PeerUnreachable)));
    assert_eq!(s.assoc().state(), State::Closed);
    s.expect_nothing_for(secs(600));
}

// ============================================================================ 8. fast rtx

/// RFC 9260's loss detection alone: three miss indications and T3-rtx.
fn dupthresh() -> AssociationConfig {
    AssociationConfig {
        loss_detection: LossDetection::DupThresh,
        ..AssociationConfig::default()
    }
}

/// TSNs of the DATA chunks sent by now, in order.
fn drain_tsns(s: &mut Script) -> Vec<u32> {
    s.take_sent().iter().flat_map(|o| o.tsns()).collect()
}

/// An established server with 80 full-sized chunks queued, warmed up by SACKs: slow start
/// grows cwnd by one MTU per SACK while the window is full (§7.2.1), until cwnd/2 is above
/// 4 MTU, so a halving can be seen. Returns it, the TSNs in flight and the MTU.
fn warmed_up(cfg: AssociationConfig) -> (Script, VecDeque<u32>, usize) {
    let mut s = Script::server_with(cfg, 8);
    s.establish_passive();
    let mtu = s.assoc().paths()[0].mtu;
    let full = mtu - 12 - 16; // one full-sized DATA chunk per packet
    for i in 0..80u32 {
        s.app_send(0, &vec![i as u8; full]);
    }
    let mut outstanding: VecDeque<u32> = drain_tsns(&mut s).into();
    while s.assoc().paths()[0].cwnd <= 9 * mtu {
        s.advance(ms(10));
        let cum = outstanding.pop_front().unwrap();
        s.send_chunks(vec![sack(cum, BIG_WINDOW, &[])]);
        outstanding.extend(drain_tsns(&mut s));
    }
    (s, outstanding, mtu)
}

#[test]
fn three_miss_indications_trigger_fast_retransmit_and_halve_cwnd() {
    // RFC 9260's own controller: the halving below is §7.2.3's (CUBIC keeps 0.7).
    let cfg = AssociationConfig {
        cc: CongestionControl::Reno,
        loss_detection: LossDetection::DupThresh,
        ..AssociationConfig::default()
    };
    let (mut s, mut outstanding, mtu) = warmed_up(cfg);
    let before = s.assoc().paths()[0].clone();
    assert!(outstanding.len() >= 5, "{outstanding:?}");
    let lost = outstanding[0];
    let cum = lost.wrapping_sub(1);
    let t_loss = s.t();

    // §7.2.4: TSN `lost` is reported missing by SACKs that newly acknowledge TSNs above it.
    for (n, end) in [(1, 2u16), (2, 3)] {
        s.advance(ms(10));
        s.send_chunks(vec![sack(cum, BIG_WINDOW, &[(2, end)])]);
        let sent = drain_tsns(&mut s);
        assert!(
            !sent.contains(&lost),
            "retransmitted after {n} miss indication(s)"
        );
        outstanding.extend(sent);
    }
    assert_eq!(s.assoc().paths()[0].cwnd, before.cwnd);
    // The third miss indication: retransmit at once, first in its packet.
    s.advance(ms(10));
    let t3 = s.t();
    s.send_chunks(vec![sack(cum, BIG_WINDOW, &[(2, 4)])]);
    let o = s.expect();
    assert_eq!(o.t(), t3, "fast retransmit must be immediate");
    assert!(o.t() < t_loss + secs(1), "before T3-rtx could have fired");
    assert_eq!(o.tsns().first(), Some(&lost), "{}", o.describe());

    // §7.2.3: ssthresh = max(cwnd/2, 4*MTU), cwnd = ssthresh.
    let after = &s.assoc().paths()[0];
    assert_eq!(after.ssthresh, (before.cwnd / 2).max(4 * mtu));
    assert_eq!(after.cwnd, after.ssthresh);
    assert!(after.cwnd < before.cwnd);
    assert_eq!(after.stats.fast_retransmissions, 1);
    assert_eq!(after.stats.timeouts, 0);
}

/// `dupthresh = 4` (the LS-SCTP paper's and 2004-era ns-2's threshold): three miss
/// indications are not enough, the fourth retransmits at once.
#[test]
fn a_dupthresh_of_four_waits_for_the_fourth_miss_indication() {
    let cfg = AssociationConfig {
        dupthresh: 4,
        ..dupthresh()
    };
    let (mut s, outstanding, _) = warmed_up(cfg);
    assert!(outstanding.len() >= 6, "{outstanding:?}");
    let lost = outstanding[0];
    let cum = lost.wrapping_sub(1);
    for (n, end) in [(1, 2u16), (2, 3), (3, 4)] {
        s.advance(ms(10));
        s.send_chunks(vec![sack(cum, BIG_WINDOW, &[(2, end)])]);
        let sent = drain_tsns(&mut s);
        assert!(
            !sent.contains(&lost),
            "retransmitted after {n} miss indication(s)"
        );
    }
    s.advance(ms(10));
    s.send_chunks(vec![sack(cum, BIG_WINDOW, &[(2, 5)])]);
    let o = s.expect();
    assert_eq!(o.tsns().first(), Some(&lost), "{}", o.describe());
    assert_eq!(s.assoc().paths()[0].stats.fast_retransmissions, 1);
}

/// RFC 9260 §6.2.1 D iv: a TSN a gap block acknowledged and a later SACK does not (the peer
/// reneged, or cut its SACK to fit a packet) is possibly missing: one miss indication and
/// T3-rtx, not a retransmission at once (braid retransmitted it at once before).
#[test]
fn a_tsn_dropped_from_the_gap_blocks_counts_one_miss_and_is_not_resent_at_once() {
    let mut s = Script::server_with(dupthresh(), 18);
    s.establish_passive();
    let mtu = s.assoc().paths()[0].mtu;
    let full = mtu - 12 - 16;
    for i in 0..4u32 {
        s.app_send(0, &vec![i as u8; full]);
    }
    let tsns = drain_tsns(&mut s);
    assert!(tsns.len() >= 4, "{tsns:?}");
    let cum = tsns[0].wrapping_sub(1);
    // tsns[1] and tsns[2] arrive; tsns[0] is missing.
    s.advance(ms(10));
    s.send_chunks(vec![sack(cum, BIG_WINDOW, &[(2, 3)])]);
    let sent = drain_tsns(&mut s);
    assert!(
        !sent.contains(&tsns[1]) && !sent.contains(&tsns[0]),
        "{sent:?}"
    );
    // The next SACK no longer reports tsns[1].
    s.advance(ms(10));
    s.send_chunks(vec![sack(cum, BIG_WINDOW, &[(3, 3)])]);
    let sent = drain_tsns(&mut s);
    assert!(!sent.contains(&tsns[1]), "resent at once: {sent:?}");
    // It is outstanding again with one miss: a SACK above it adds the second, not the third.
    s.advance(ms(10));
    s.send_chunks(vec![sack(cum, BIG_WINDOW, &[(3, 4)])]);
    let sent = drain_tsns(&mut s);
    assert!(
        !sent.contains(&tsns[1]),
        "two misses are not three: {sent:?}"
    );
    assert!(s.assoc().paths()[0].flight_size >= 2 * full);
}

/// A SACK carries as many gap blocks as fit its packet (RFC 9260 §3.3.4), and duplicates
/// reported with it take only the room left: the blocks a peer saw do not vanish from the
/// next SACK, which it would read as reneging (§6.2.1 D iv).
#[test]
fn a_full_sack_keeps_its_gap_blocks_when_duplicates_come() {
    let mut s = Script::server(19);
    s.establish_passive();
    // Every other TSN from the second on: 400 holes.
    for i in 0..400u32 {
        s.send_chunks(vec![data(s.peer_tsn(1 + 2 * i), 0, 1 + i as u16, b"x")]);
    }
    let last_sack = |s: &mut Script| {
        let sacks: Vec<Sack> = s.take_sent().iter().flat_map(|o| o.all::<Sack>()).collect();
        sacks.last().cloned().expect("a SACK")
    };
    let full = last_sack(&mut s);
    let mtu = s.assoc().paths()[0].mtu;
    // 1500-byte path: (1500 - 20 IP - 8 UDP - 12 common - 16 SACK header) / 4 = 361.
    assert_eq!(
        full.gap_blocks.len(),
        (mtu - 12 - 16) / 4,
        "{}",
        full.gap_blocks.len()
    );
    // A duplicate: reported, but no block is dropped for it.
    s.send_chunks(vec![data(s.peer_tsn(1), 0, 1, b"x")]);
    let with_dup = last_sack(&mut s);
    assert_eq!(with_dup.gap_blocks, full.gap_blocks);
    assert!(with_dup.dup_tsns.len() <= 1);
}

// ============================================================================ 9. zero window

#[test]
fn zero_window_probe_backs_off_and_data_resumes_when_the_window_opens() {
    // RFC 9260 §6.1's probing alone (a tail loss probe would add its own).
    let mut s = Script::server_with(dupthresh(), 9);
    s.establish_passive();
    s.app_send(0, &[1; 1000]);
    let e0 = s.expect_to_peer::<Data>().tsn;
    // The peer's window closes while e0 is in flight: nothing new may be sent (§6.1 A).
    s.advance(ms(10));
    s.send_chunks(vec![sack(e0.wrapping_sub(1), 0, &[])]);
    s.app_send(0, &[2; 1000]);
    s.app_send(0, &[3; 1000]);
    s.expect_nothing_now();

    // e0 acknowledged, window still 0, nothing in flight: exactly one DATA chunk, the probe.
    s.advance(ms(10));
    let t_probe = s.t();
    s.send_chunks(vec![sack(e0, 0, &[])]);
    let o = s.expect();
    assert_eq!(o.tsns(), vec![e0 + 1], "{}", o.describe());
    o.assert_at(t_probe, ms(0));
    s.expect_nothing_now();

    // Unanswered, the probe is retransmitted on T3 with backoff (§6.3.3), alone.
    let mut at = t_probe;
    for rto in [secs(1), secs(2), secs(4)] {
        at += rto;
        let o = s.expect();
        assert_eq!(o.tsns(), vec![e0 + 1], "{}", o.describe());
        o.assert_at(at, ms(0));
    }
    // The window opens: the probe is acknowledged and the queued message goes at once.
    s.advance(ms(100));
    s.send_chunks(vec![sack(e0 + 1, BIG_WINDOW, &[])]);
    let o = s.expect();
    assert_eq!(o.tsns(), vec![e0 + 2]);
    assert_eq!(o.t(), s.t());
    assert_eq!(s.assoc().state(), State::Established);
}

#[test]
fn zero_window_probing_answered_by_sacks_never_fails_the_association() {
    let mut s = Script::server(99);
    s.establish_passive();
    s.app_send(0, &[1; 1000]);
    let e0 = s.expect_to_peer::<Data>().tsn;
    s.app_send(0, &[2; 1000]);
    let o = s.expect();
    assert_eq!(o.tsns(), vec![e0 + 1]);
    s.advance(ms(10));
    // e0 acknowledged; the peer holds e0+1 but its window is now closed.
    s.send_chunks(vec![sack(e0, 0, &[])]);
    s.app_send(0, &[3; 1000]);
    s.expect_nothing_now();
    s.send_chunks(vec![sack(e0 + 1, 0, &[])]);
    let probe = s.expect_to_peer::<Data>().tsn;
    assert_eq!(probe, e0 + 2);

    // §6.1 A, last paragraph: the receiver keeps its window closed and drops each probe but
    // SACKs it; those unacknowledged probes must not count towards Association.Max.Retrans.
    for n in 1..=15 {
        let d: Data = s.expect_to_peer();
        assert_eq!(d.tsn, probe, "probe retransmission {n}");
        s.advance(ms(20));
        s.send_chunks(vec![sack(e0 + 1, 0, &[])]);
        assert_eq!(s.assoc().state(), State::Established, "after {n} probes");
    }
    assert!(
        !s.events
            .iter()
            .any(|(_, _, e)| matches!(e, Event::Closed(_)))
    );

    // The window opens: the probe is accepted and acknowledged, the association goes on.
    s.send_chunks(vec![sack(probe, BIG_WINDOW, &[])]);
    s.app_send(0, b"still alive");
    assert_eq!(s.expect_to_peer::<Data>().tsn, probe + 1);
}

// ============================================================================ 10. shutdown

#[test]
fn local_shutdown_waits_for_outstanding_data_and_retransmits_shutdown_on_t2() {
    let mut s = Script::server(10);
    s.establish_passive();
    s.send_chunks(vec![data(s.peer_tsn(0), 0, 0, b"from peer")]);
    assert_eq!(s.expect_to_peer::<Sack>().cum_tsn_ack, s.peer_tsn(0));
    s.app_send(0, b"last words");
    let e0 = s.expect_to_peer::<Data>().tsn;

    // §9.2: SHUTDOWN-PENDING: no new data, and SHUTDOWN only once all data is acknowledged.
    s.app_shutdown();
    assert_eq!(s.assoc().state(), State::ShutdownPending);
    let now = s.now;
    assert!(
        s.assoc_mut()
            .send(now, 0, Bytes::from_static(b"more"), Default::default())
            .is_err()
    );
    s.expect_nothing_for(ms(50));
    s.send_chunks(vec![sack(e0, BIG_WINDOW, &[])]);
    let t_s = s.t();
    let sh: Shutdown = s.expect_to_peer();
    s.last.as_ref().unwrap().assert_at(t_s, ms(0));
    assert_eq!(
        sh.cum_tsn_ack,
        s.peer_tsn(0),
        "SHUTDOWN carries our cumulative TSN ack"
    );
    assert_eq!(s.assoc().state(), State::ShutdownSent);

    // T2-shutdown: unanswered SHUTDOWN is sent again after RTO, doubling (§9.2, §6.3.3).
    s.expect_to_peer::<Shutdown>();
    s.last.as_ref().unwrap().assert_at(t_s + secs(1), ms(0));
    s.expect_to_peer::<Shutdown>();
    s.last.as_ref().unwrap().assert_at(t_s + secs(3), ms(0));

    // SHUTDOWN-ACK -> SHUTDOWN-COMPLETE (T bit clear, peer's tag), CLOSED.
    s.send_chunks(vec![ShutdownAck.into()]);
    let o = s.expect();
    let sc: ShutdownComplete = o.only();
    assert!(!sc.t_bit);
    assert_eq!(o.vtag(), s.peer_tag);
    assert!(s.saw(&Event::Closed(CloseReason::Shutdown)));
    assert_eq!(s.assoc().state(), State::Closed);
    s.expect_nothing_for(secs(60));
}

#[test]
fn peer_shutdown_is_acknowledged_once_our_data_is_and_completes() {
    let mut s = Script::server(11);
    s.establish_passive();
    s.app_send(0, b"pending");
    let e0 = s.expect_to_peer::<Data>().tsn;

    // §9.2: SHUTDOWN whose cumulative ack does not cover e0: SHUTDOWN-RECEIVED, wait.
    s.advance(ms(10));
    s.send_chunks(vec![
        Shutdown {
            cum_tsn_ack: e0.wrapping_sub(1),
        }
        .into(),
    ]);
    assert!(s.saw(&Event::PeerShutdown));
    assert_eq!(s.assoc().state(), State::ShutdownReceived);
    s.expect_nothing_now();
    let now = s.now;
    assert!(
        s.assoc_mut()
            .send(now, 0, Bytes::from_static(b"more"), Default::default())
            .is_err()
    );

    // Our data is acknowledged: SHUTDOWN-ACK at once.
    s.advance(ms(10));
    s.send_chunks(vec![sack(e0, BIG_WINDOW, &[])]);
    let t_a = s.t();
    s.expect_to_peer::<ShutdownAck>();
    s.last.as_ref().unwrap().assert_at(t_a, ms(0));
    // T2-shutdown covers the SHUTDOWN-ACK too.
    s.expect_to_peer::<ShutdownAck>();
    s.last.as_ref().unwrap().assert_at(t_a + secs(1), ms(0));

    // SHUTDOWN-COMPLETE closes it; nothing is sent back.
    s.send_chunks(vec![ShutdownComplete { t_bit: false }.into()]);
    s.expect_nothing_now();
    assert!(s.saw(&Event::Closed(CloseReason::Shutdown)));
    assert_eq!(s.assoc().state(), State::Closed);
    s.expect_nothing_for(secs(60));
}

// ============================================================================ 11. unknown chunks

/// DATA, an unknown chunk of type `ty`, DATA in one packet. Returns the messages delivered,
/// the SACK's cumulative TSN ack, the ERROR's causes if one was sent, and the script.
fn unknown_chunk_between_data(ty: u8) -> (Vec<Vec<u8>>, u32, Option<Vec<ErrorCause>>, Script) {
    let mut s = Script::server(u64::from(ty));
    s.establish_passive();
    let unknown = unknown_chunk(ty, 0x5a, b"ABCDEFGH");
    s.send_chunks(vec![
        data(s.peer_tsn(0), 0, 0, b"before"),
        unknown.into(),
        data(s.peer_tsn(1), 0, 1, b"after"),
    ]);
    let t = s.t();
    let sent = s.collect_until(t + ms(250));
    let sacks: Vec<Sack> = sent.iter().flat_map(|o| o.all::<Sack>()).collect();
    assert_eq!(sacks.len(), 1, "one SACK expected");
    assert!(sacks[0].gap_blocks.is_empty());
    let errors: Vec<ErrorChunk> = sent.iter().flat_map(|o| o.all::<ErrorChunk>()).collect();
    assert!(errors.len() <= 1);
    for o in &sent {
        assert_eq!(o.vtag(), s.peer_tag);
    }
    for o in sent.iter().filter(|o| o.has::<ErrorChunk>()) {
        assert_eq!(o.t(), t, "the ERROR goes at once");
    }
    let delivered = s.app_recv_all();
    (
        delivered,
        sacks[0].cum_tsn_ack,
        errors.into_iter().next().map(|e| e.causes),
        s,
    )
}

/// The Unrecognized Chunk Type cause: the chunk as received (§3.3.10.6).
fn unrecognized(ty: u8) -> ErrorCause {
    let mut v = vec![ty, 0x5a, 0, 12];
    v.extend_from_slice(b"ABCDEFGH");
    ErrorCause::UnrecognizedChunkType(v.into())
}

#[test]
fn unknown_chunk_00_stops_processing_without_a_report() {
    let (got, cum, err, s) = unknown_chunk_between_data(0x3f);
    // §3.2 00: stop processing, discard it and all further chunks, no report.
    assert_eq!(got, vec![b"before".to_vec()]);
    assert_eq!(cum, s.peer_tsn(0));
    assert_eq!(err, None);
}

#[test]
fn unknown_chunk_01_stops_processing_and_reports() {
    let (got, cum, err, s) = unknown_chunk_between_data(0x7f);
    // §3.2 01: stop, discard the rest, report it in an ERROR (Unrecognized Chunk Type).
    assert_eq!(got, vec![b"before".to_vec()]);
    assert_eq!(cum, s.peer_tsn(0));
    assert_eq!(err, Some(vec![unrecognized(0x7f)]));
}

#[test]
fn unknown_chunk_10_is_skipped_without_a_report() {
    let (got, cum, err, s) = unknown_chunk_between_data(0xbf);
    // §3.2 10: skip it and go on.
    assert_eq!(got, vec![b"before".to_vec(), b"after".to_vec()]);
    assert_eq!(cum, s.peer_tsn(1));
    assert_eq!(err, None);
}

#[test]
fn unknown_chunk_11_is_skipped_and_reported() {
    let (got, cum, err, s) = unknown_chunk_between_data(0xff);
    // §3.2 11: skip it, go on, and report it.
    assert_eq!(got, vec![b"before".to_vec(), b"after".to_vec()]);
    assert_eq!(cum, s.peer_tsn(1));
    assert_eq!(err, Some(vec![unrecognized(0xff)]));
}

// ============================================================================ 12. unknown params

fn unknown_param(ty: u16) -> Param {
    Param::Unknown {
        param_type: ParamType(ty),
        value: Bytes::copy_from_slice(&ty.to_be_bytes().repeat(2)),
    }
}

/// The TLV of `unknown_param(ty)` as it must come back (§3.3.3.1).
fn tlv(ty: u16) -> Bytes {
    let mut v = ty.to_be_bytes().to_vec();
    v.extend_from_slice(&8u16.to_be_bytes());
    v.extend_from_slice(&ty.to_be_bytes().repeat(2));
    v.into()
}

/// INIT with these parameters; returns the Unrecognized Parameters of the INIT-ACK.
fn init_ack_reports(params: &[u16]) -> Vec<Bytes> {
    let mut s = Script::server(12);
    let init = s.init_chunk(params.iter().map(|&t| unknown_param(t)).collect());
    let p = s.init_packet(init);
    s.inject(&p);
    let ack: InitAck = s.expect().only();
    assert!(ack.state_cookie().is_some());
    // The handshake completes from this INIT-ACK.
    s.ep_tag = ack.initiate_tag;
    let cookie = ack.state_cookie().unwrap().clone();
    s.send_chunks(vec![CookieEcho { cookie }.into()]);
    s.expect_to_peer::<CookieAck>();
    ack.params
        .iter()
        .filter_map(|p| match p {
            Param::UnrecognizedParameter(b) => Some(b.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn unknown_init_parameters_are_handled_by_their_high_bits() {
    // §3.2.1 00: stop processing the parameters, no report (so 0xf001 is not seen either).
    assert_eq!(init_ack_reports(&[0x3001, 0xf001]), Vec::<Bytes>::new());
    // 01: stop and report.
    assert_eq!(init_ack_reports(&[0x7001, 0xf001]), vec![tlv(0x7001)]);
    // 10: skip, no report; processing goes on.
    assert_eq!(init_ack_reports(&[0xb001, 0xf001]), vec![tlv(0xf001)]);
    // 11: skip and report.
    assert_eq!(
        init_ack_reports(&[0xf001, 0xf002, 0x7001]),
        vec![tlv(0xf001), tlv(0xf002), tlv(0x7001)]
    );
    assert_eq!(init_ack_reports(&[0xb001]), Vec::<Bytes>::new());
}

#[test]
fn unknown_init_ack_parameters_are_reported_with_the_cookie_echo() {
    let mut s = Script::client(121);
    s.connect();
    let ack = s.init_ack_chunk(vec![unknown_param(0xf001), unknown_param(0xb002)]);
    s.send_chunks(vec![ack.into()]);
    // §3.2.2: an ERROR with Unrecognized Parameters bundled after the COOKIE-ECHO.
    let o = s.expect();
    assert_eq!(o.vtag(), s.peer_tag);
    assert_eq!(o.position::<CookieEcho>(), Some(0), "{}", o.describe());
    let err: ErrorChunk = o.get().expect("no ERROR bundled with the COOKIE-ECHO");
    assert_eq!(
        err.causes,
        vec![ErrorCause::UnrecognizedParameters(tlv(0xf001))]
    );
}

// ============================================================================ 13. bad INITs

#[test]
fn init_with_a_host_name_address_is_aborted_with_unresolvable_address() {
    let mut s = Script::server(13);
    let host = Bytes::from_static(b"peer.example"); // 12 bytes: no padding question
    let init = s.init_chunk(vec![Param::HostNameAddress(host.clone())]);
    let p = s.init_packet(init);
    s.inject(&p);
    // §5.1.2: ABORT with Unresolvable Address holding the parameter; tag = Initiate Tag.
    let o = s.expect();
    let a: Abort = o.only();
    assert!(!a.t_bit);
    assert_eq!(o.vtag(), s.peer_tag);
    let mut expected = vec![0, 11, 0, 16];
    expected.extend_from_slice(&host);
    assert_eq!(
        a.causes,
        vec![ErrorCause::UnresolvableAddress(expected.into())]
    );
    assert_eq!(s.ep.associations().count(), 0);
}

#[test]
fn init_with_zero_streams_is_aborted_and_init_with_tag_zero_is_discarded() {
    let mut s = Script::server(131);
    // §3.3.2: OS = 0 or MIS = 0 -> ABORT with Invalid Mandatory Parameter.
    for (os, mis) in [(0, 4), (4, 0)] {
        let mut init = s.init_chunk(vec![]);
        init.outbound_streams = os;
        init.inbound_streams = mis;
        let p = s.init_packet(init);
        s.inject(&p);
        let o = s.expect();
        let a: Abort = o.only();
        assert!(!a.t_bit);
        assert_eq!(o.vtag(), s.peer_tag);
        assert_eq!(a.causes, vec![ErrorCause::InvalidMandatoryParameter]);
    }
    // §3.3.2: Initiate Tag 0 -> silently discarded.
    let mut init = s.init_chunk(vec![]);
    init.initiate_tag = 0;
    let p = s.init_packet(init);
    s.inject(&p);
    s.expect_nothing_for(secs(5));
    assert_eq!(s.ep.associations().count(), 0);
}

#[test]
fn bad_inits_do_not_disturb_an_existing_association() {
    let mut s = Script::server(132);
    s.establish_passive();
    // §3.3.2: "MUST NOT change the state of any existing association".
    let mut init = s.init_chunk(vec![]);
    init.outbound_streams = 0;
    let p = s.init_packet(init);
    s.inject(&p);
    let o = s.expect();
    assert_eq!(
        o.only::<Abort>().causes,
        vec![ErrorCause::InvalidMandatoryParameter]
    );
    let mut init = s.init_chunk(vec![]);
    init.initiate_tag = 0;
    let p = s.init_packet(init);
    s.inject(&p);
    s.expect_nothing_now();
    assert_eq!(s.assoc().state(), State::Established);
    s.send_chunks(vec![data(s.peer_tsn(0), 0, 0, b"still here")]);
    assert_eq!(s.expect_to_peer::<Sack>().cum_tsn_ack, s.peer_tsn(0));
}

// ============================================================================ 14-17. DATA

#[test]
fn data_without_user_data_aborts_with_no_user_data() {
    let mut s = Script::server(14);
    s.establish_passive();
    let p0 = s.peer_tsn(0);
    s.send_chunks(vec![data(p0, 0, 0, b"")]);
    // §6.2: ABORT with No User Data (cause 9) carrying the TSN.
    let o = s.expect();
    let a: Abort = o.only();
    assert!(!a.t_bit);
    assert_eq!(o.vtag(), s.peer_tag);
    assert_eq!(a.causes, vec![ErrorCause::NoUserData { tsn: p0 }]);
    assert_eq!(a.causes[0].code().0, 9);
    assert!(s.saw(&Event::Closed(CloseReason::ProtocolViolation(
        ErrorCause::NoUserData { tsn: p0 }
    ))));
    assert_eq!(s.assoc().state(), State::Closed);
}

#[test]
fn data_on_a_stream_that_does_not_exist_is_acked_and_reported() {
    let mut s = Script::server(15);
    s.establish_passive();
    assert_eq!(s.assoc().inbound_streams(), s.peer_os);
    let p0 = s.peer_tsn(0);
    let bad_stream = s.peer_os;
    s.send_chunks(vec![data(p0, bad_stream, 0, b"nowhere")]);
    let t = s.t();
    let sent = s.collect_until(t + ms(200));
    // §6.5: acknowledge normally, ERROR "Invalid Stream Identifier" (cause 1) at once,
    // discard the data. "MAY bundle the ERROR in the same packet as the SACK as long as the
    // ERROR follows the SACK."
    let with_error: Vec<_> = sent.iter().filter(|o| o.has::<ErrorChunk>()).collect();
    assert_eq!(with_error.len(), 1);
    assert_eq!(with_error[0].t(), t, "the ERROR goes at once");
    let err: ErrorChunk = with_error[0].get().unwrap();
    assert_eq!(
        err.causes,
        vec![ErrorCause::InvalidStreamIdentifier {
            stream_id: bad_stream
        }]
    );
    assert_eq!(err.causes[0].code().0, 1);
    let sacks: Vec<Sack> = sent.iter().flat_map(|o| o.all::<Sack>()).collect();
    assert_eq!(sacks.len(), 1);
    assert_eq!(sacks[0].cum_tsn_ack, p0, "the TSN is acknowledged");
    for o in &sent {
        if let (Some(e), Some(k)) = (o.position::<ErrorChunk>(), o.position::<Sack>()) {
            assert!(k < e, "ERROR bundled before the SACK: {}", o.describe());
        }
    }
    assert!(s.app_recv().is_none());
}

#[test]
fn data_on_a_stream_that_does_not_exist_is_acked_and_reported_at_once() {
    // The part of §6.5 the core gets right (the order within the packet aside).
    let mut s = Script::server(151);
    s.establish_passive();
    let p0 = s.peer_tsn(0);
    s.send_chunks(vec![data(p0, s.peer_os, 0, b"nowhere")]);
    let o = s.expect();
    assert_eq!(o.t(), s.t());
    assert_eq!(
        o.get::<ErrorChunk>().unwrap().causes,
        vec![ErrorCause::InvalidStreamIdentifier {
            stream_id: s.peer_os
        }]
    );
    assert_eq!(o.get::<Sack>().unwrap().cum_tsn_ack, p0);
    assert!(s.app_recv().is_none());
    assert_eq!(s.assoc().state(), State::Established);
}

#[test]
fn a_sack_for_a_tsn_never_sent_is_a_protocol_violation() {
    let mut s = Script::server(16);
    s.establish_passive();
    s.app_send(0, b"one");
    let e0 = s.expect_to_peer::<Data>().tsn;
    s.send_chunks(vec![sack(e0 + 5, BIG_WINDOW, &[])]);
    let o = s.expect();
    let a: Abort = o.only();
    assert!(!a.t_bit);
    assert_eq!(o.vtag(), s.peer_tag);
    assert!(
        matches!(a.causes.as_slice(), [ErrorCause::ProtocolViolation(_)]),
        "{:?}",
        a.causes
    );
    assert!(s.events.iter().any(|(_, _, e)| matches!(
        e,
        Event::Closed(CloseReason::ProtocolViolation(
            ErrorCause::ProtocolViolation(_)
        ))
    )));
    assert_eq!(s.assoc().state(), State::Closed);
    s.expect_nothing_for(secs(10));
}

#[test]
fn duplicate_data_is_sacked_at_once_with_its_tsn() {
    let mut s = Script::server(17);
    s.establish_passive();
    let p0 = s.peer_tsn(0);
    s.send_chunks(vec![data(p0, 0, 0, b"once")]);
    let first: Sack = s.expect_to_peer();
    assert!(first.dup_tsns.is_empty());
    s.advance(secs(1));
    // §6.2: a packet with only duplicate DATA: SACK with no delay, reporting the TSN.
    let t = s.t();
    s.send_chunks(vec![data(p0, 0, 0, b"once")]);
    let o = s.expect();
    let dup: Sack = o.only();
    o.assert_at(t, ms(0));
    assert_eq!(dup.cum_tsn_ack, p0);
    assert_eq!(dup.dup_tsns, vec![p0]);
    assert_eq!(s.app_recv_all(), vec![b"once".to_vec()]);
}

// ============================================================================ 18. delayed SACK

#[test]
fn a_lone_data_packet_is_sacked_after_200_ms_and_every_second_packet_at_once() {
    let mut s = Script::server(18);
    s.establish_passive();
    // §6.2: delayed SACK, 200 ms here.
    let t = s.t();
    s.send_chunks(vec![data(s.peer_tsn(0), 0, 0, b"a")]);
    s.expect_nothing_until(t + ms(199));
    let o = s.expect();
    o.assert_at(t + ms(200), ms(0));
    assert_eq!(o.only::<Sack>().cum_tsn_ack, s.peer_tsn(0));

    // §6.2: a SACK for at least every second packet with DATA.
    s.advance(secs(1));
    s.send_chunks(vec![data(s.peer_tsn(1), 0, 1, b"b")]);
    s.expect_nothing_for(ms(10));
    let t2 = s.t();
    s.send_chunks(vec![data(s.peer_tsn(2), 0, 2, b"c")]);
    let o = s.expect();
    o.assert_at(t2, ms(0));
    assert_eq!(o.only::<Sack>().cum_tsn_ack, s.peer_tsn(2));
    s.expect_nothing_for(secs(1));
}

// ============================================================================ misc

#[test]
fn the_scripted_peer_can_open_actively_and_exchange_data() {
    let mut s = Script::client(19);
    s.establish_active();
    s.app_send(3, b"hi");
    let d: Data = s.expect_to_peer();
    assert_eq!((d.tsn, d.stream_id, d.ssn), (s.ep_tsn(0), 3, 0));
    s.send_chunks(vec![
        sack(d.tsn, BIG_WINDOW, &[]),
        data(s.peer_tsn(0), 1, 0, b"ho"),
    ]);
    let _ = s.expect_to_peer::<Sack>();
    assert_eq!(s.app_recv_all(), vec![b"ho".to_vec()]);
}

// ============================================================================ more bugs hunted

#[test]
fn a_restart_cookie_echo_with_a_wrong_packet_tag_is_discarded() {
    let mut s = Script::server(20);
    s.establish_passive();
    let old_ep_tag = s.ep_tag;
    let ack = restart_init(&mut s);
    let cookie = ack.state_cookie().unwrap().clone();
    // §5.1.5 step 3: the tag in the common header must be the one in the cookie (the new
    // INIT-ACK's Initiate Tag); otherwise the packet MUST be silently discarded.
    for wrong in [old_ep_tag, 0xdead_beef] {
        let p = s.with_tag(
            wrong,
            vec![
                CookieEcho {
                    cookie: cookie.clone(),
                }
                .into(),
            ],
        );
        s.inject(&p);
        s.expect_nothing_now();
        assert!(
            !s.saw(&Event::Restarted),
            "restart with packet tag {wrong:#x}"
        );
    }
    // With the right tag it restarts.
    s.send_chunks(vec![CookieEcho { cookie }.into()]);
    s.expect_to_peer::<CookieAck>();
    assert!(s.saw(&Event::Restarted));
}

#[test]
fn a_stale_restart_cookie_is_reported_with_the_restarted_peers_tag() {
    let mut s = Script::server(21);
    s.establish_passive();
    let old_peer_tag = s.peer_tag;
    let ack = restart_init(&mut s);
    let cookie = ack.state_cookie().unwrap().clone();
    s.advance(secs(62));
    s.send_chunks(vec![CookieEcho { cookie }.into()]);
    // §5.1.5 step 4: ERROR with Stale Cookie. The restarted peer (in COOKIE-ECHOED with its
    // new tag) only accepts packets with the Initiate Tag of its new INIT (§8.5), which the
    // cookie carries; the endpoint's stateless path does use it.
    let o = s.expect();
    let err: ErrorChunk = o.only();
    assert!(matches!(err.causes[..], [ErrorCause::StaleCookie { .. }]));
    assert_ne!(
        o.vtag(),
        old_peer_tag,
        "sent with the dead incarnation's tag"
    );
    assert_eq!(o.vtag(), s.peer_tag);
    assert!(!s.saw(&Event::Restarted));
}

#[test]
fn after_a_peer_restart_the_error_counter_starts_from_zero() {
    let mut s = Script::server(23);
    s.establish_passive();
    // Five T3 expiries on the old association (errors 1..5, RTO backed off to 32 s).
    s.app_send(0, b"unanswered");
    s.expect_to_peer::<Data>();
    for _ in 0..5 {
        s.expect_to_peer::<Data>();
    }
    // The peer restarts (§5.2.4 A: "as if it received an ABORT followed by a new COOKIE
    // ECHO": a fresh association, §8.1's counter of consecutive retransmissions from 0).
    let ack = restart_init(&mut s);
    let cookie = ack.state_cookie().unwrap().clone();
    s.send_chunks(vec![CookieEcho { cookie }.into()]);
    s.expect_to_peer::<CookieAck>();
    assert!(s.saw(&Event::Restarted));

    s.app_send(0, b"after restart, unanswered too");
    let first: Data = s.expect_to_peer();
    let mut retransmissions = 0;
    loop {
        let o = s.expect();
        if o.has::<Abort>() {
            break;
        }
        assert_eq!(o.tsns(), vec![first.tsn]);
        retransmissions += 1;
    }
    assert_eq!(
        retransmissions, 10,
        "Association.Max.Retrans of the NEW association"
    );
}

#[test]
fn an_ootb_packet_containing_an_abort_anywhere_is_discarded() {
    let mut s = Script::server(24);
    // §8.4 item 2: "If the OOTB packet contains an ABORT chunk, the receiver MUST silently
    // discard the OOTB packet and take no further action" (no ABORT ping-pong).
    for first in [data(1, 0, 0, b"x"), sack(1, 1000, &[])] {
        let p = s.with_tag(0x1234_5678, vec![first, abort(false)]);
        s.inject(&p);
        s.expect_nothing_now();
    }
    s.expect_nothing_for(secs(1));
}

#[test]
fn an_ootb_error_other_than_stale_cookie_gets_an_abort() {
    let mut s = Script::server(25);
    // §8.4 item 7 discards only a Stale Cookie ERROR; item 8 answers the rest with ABORT.
    let stale = ErrorChunk {
        causes: vec![ErrorCause::StaleCookie { staleness_us: 5 }],
    };
    let p = s.with_tag(0x0bad_0001, vec![stale.into()]);
    s.inject(&p);
    s.expect_nothing_now();
    let other = ErrorChunk {
        causes: vec![ErrorCause::InvalidStreamIdentifier { stream_id: 9 }],
    };
    let p = s.with_tag(0x0bad_0002, vec![other.into()]);
    s.inject(&p);
    let o = s.expect();
    assert!(o.only::<Abort>().t_bit);
    assert_eq!(o.vtag(), 0x0bad_0002);
}

#[test]
fn data_in_shutdown_sent_is_answered_with_shutdown_and_restarts_t2() {
    let mut s = Script::server(26);
    s.establish_passive();
    s.app_shutdown();
    let t_s = s.t();
    s.expect_to_peer::<Shutdown>();
    s.last.as_ref().unwrap().assert_at(t_s, ms(0));
    // §9.2: "the SHUTDOWN sender MUST immediately respond to each received packet containing
    // one or more DATA chunks with a SHUTDOWN chunk and restart the T2-shutdown timer."
    s.advance(ms(500));
    s.send_chunks(vec![data(s.peer_tsn(0), 0, 0, b"late")]);
    let t_d = s.t();
    let sh: Shutdown = s.expect_to_peer();
    s.last.as_ref().unwrap().assert_at(t_d, ms(0));
    assert_eq!(sh.cum_tsn_ack, s.peer_tsn(0));
    // T2 restarted at t_d with RTO (1 s): the next SHUTDOWN at t_d + 1 s, not t_s + 1 s.
    s.expect_nothing_until(t_d + secs(1) - ms(1));
    s.expect_to_peer::<Shutdown>();
    s.last.as_ref().unwrap().assert_at(t_d + secs(1), ms(0));
}

// ============================================================================ more checks

#[test]
fn data_in_shutdown_sent_is_answered_with_shutdown_at_once() {
    let mut s = Script::server(27);
    s.establish_passive();
    s.app_shutdown();
    s.expect_to_peer::<Shutdown>();
    s.advance(ms(500));
    s.send_chunks(vec![data(s.peer_tsn(0), 0, 0, b"late")]);
    let o = s.expect();
    assert_eq!(o.t(), s.t());
    assert_eq!(o.get::<Shutdown>().unwrap().cum_tsn_ack, s.peer_tsn(0));
    assert_eq!(s.app_recv_all(), vec![b"late".to_vec()]);
    s.send_chunks(vec![ShutdownAck.into()]);
    assert!(!s.expect().only::<ShutdownComplete>().t_bit);
    assert!(s.saw(&Event::Closed(CloseReason::Shutdown)));
}

#[test]
fn simultaneous_shutdowns_cross() {
    let mut s = Script::server(28);
    s.establish_passive();
    s.app_shutdown();
    s.expect_to_peer::<Shutdown>();
    // §9.2: SHUTDOWN in SHUTDOWN-SENT -> SHUTDOWN-ACK at once, SHUTDOWN-ACK-SENT.
    s.send_chunks(vec![
        Shutdown {
            cum_tsn_ack: s.ep_tsn(0).wrapping_sub(1),
        }
        .into(),
    ]);
    s.expect_to_peer::<ShutdownAck>();
    assert_eq!(s.assoc().state(), State::ShutdownAckSent);
    // The peer's SHUTDOWN-ACK -> SHUTDOWN-COMPLETE, closed.
    s.send_chunks(vec![ShutdownAck.into()]);
    let o = s.expect();
    assert!(!o.only::<ShutdownComplete>().t_bit);
    assert_eq!(o.vtag(), s.peer_tag);
    assert!(s.saw(&Event::Closed(CloseReason::Shutdown)));
}

#[test]
fn abort_is_accepted_only_with_the_tag_rules_of_section_8_5_1() {
    let mut s = Script::server(29);
    s.establish_passive();
    // §8.5.1 B: our tag with T clear, or the peer's tag with T set; else discard.
    for (tag, t_bit) in [
        (s.ep_tag, true),
        (s.peer_tag, false),
        (0x1111_1111, false),
        (0x1111_1111, true),
    ] {
        let p = s.with_tag(tag, vec![abort(t_bit)]);
        s.inject(&p);
        s.expect_nothing_now();
        assert_eq!(s.assoc().state(), State::Established, "{tag:#x} T={t_bit}");
    }
    let p = s.with_tag(s.peer_tag, vec![abort(true)]);
    s.inject(&p);
    s.expect_nothing_now();
    assert!(s.saw(&Event::Closed(CloseReason::PeerAbort(vec![]))));
}

#[test]
fn out_of_order_data_is_sacked_at_once_with_a_gap_block() {
    let mut s = Script::server(30);
    s.establish_passive();
    // §6.7: a gap in the received TSNs -> SACK without delay, with a Gap Ack Block.
    s.send_chunks(vec![data(s.peer_tsn(1), 0, 1, b"second")]);
    let o = s.expect();
    assert_eq!(o.t(), s.t());
    let sk: Sack = o.only();
    assert_eq!(sk.cum_tsn_ack, s.peer_tsn(0).wrapping_sub(1));
    assert_eq!(
        sk.gap_blocks,
        vec![braid_wire::chunk::GapAckBlock { start: 2, end: 2 }]
    );
    assert!(s.app_recv().is_none(), "SSN 1 must wait for SSN 0");
    // The gap is filled: SACK at once again.
    s.send_chunks(vec![data(s.peer_tsn(0), 0, 0, b"first")]);
    let o = s.expect();
    assert_eq!(o.t(), s.t());
    let sk: Sack = o.only();
    assert_eq!(sk.cum_tsn_ack, s.peer_tsn(1));
    assert!(sk.gap_blocks.is_empty());
    assert_eq!(
        s.app_recv_all(),
        vec![b"first".to_vec(), b"second".to_vec()]
    );
}

#[test]
fn data_bundled_with_the_cookie_echo_is_acked_after_the_cookie_ack() {
    let mut s = Script::server(31);
    let ack = s.init_exchange();
    let cookie = ack.state_cookie().unwrap().clone();
    // §5.1: DATA may be bundled after the COOKIE-ECHO; COOKIE-ACK first in the answer.
    s.send_chunks(vec![
        CookieEcho { cookie }.into(),
        data(s.peer_tsn(0), 0, 0, b"early"),
    ]);
    s.assoc = s.ep.accept();
    assert!(s.assoc.is_some());
    let sent = s.collect_until(s.t() + ms(200));
    let first = &sent[0];
    assert_eq!(
        first.position::<CookieAck>(),
        Some(0),
        "{}",
        first.describe()
    );
    let sacks: Vec<Sack> = sent.iter().flat_map(|o| o.all::<Sack>()).collect();
    assert_eq!(sacks.len(), 1);
    assert_eq!(sacks[0].cum_tsn_ack, s.peer_tsn(0));
    assert_eq!(s.app_recv_all(), vec![b"early".to_vec()]);
}

#[test]
fn init_is_retransmitted_max_init_retransmits_times_then_the_handshake_fails() {
    let mut s = Script::client(32);
    let init = s.connect();
    // §5.1 C / §6.3.3: T1-init expiry resends INIT (same tag), backing off, at most
    // Max.Init.Retransmits (8) times; then the association fails.
    let mut last_t = s.t();
    let mut gap = secs(0);
    for n in 1..=8 {
        let o = s.expect();
        let again: Init = o.only();
        assert_eq!(o.vtag(), 0);
        assert_eq!(again.initiate_tag, init.initiate_tag, "retransmission {n}");
        assert!(
            o.t() - last_t >= gap,
            "backoff shrank at retransmission {n}"
        );
        gap = o.t() - last_t;
        last_t = o.t();
    }
    s.expect_nothing_for(secs(300));
    assert!(s.saw(&Event::Closed(CloseReason::HandshakeTimeout)));
}

#[test]
fn a_stale_cookie_error_makes_the_initiator_start_again_with_a_cookie_preservative() {
    let mut s = Script::client(33);
    s.connect();
    let ack = s.init_ack_chunk(vec![]);
    s.send_chunks(vec![ack.into()]);
    s.expect_to_peer::<CookieEcho>();
    // §5.2.6: Stale Cookie in COOKIE-ECHOED -> a new INIT, which may ask for more life.
    let err = ErrorChunk {
        causes: vec![ErrorCause::StaleCookie {
            staleness_us: 20_000,
        }],
    };
    s.send_chunks(vec![err.into()]);
    let o = s.expect();
    let init: Init = o.only();
    assert_eq!(o.vtag(), 0);
    assert_eq!(o.t(), s.t());
    assert!(
        init.params
            .iter()
            .any(|p| matches!(p, Param::CookiePreservative(_))),
        "{:?}",
        init.params
    );
    assert_eq!(s.assoc().state(), State::CookieWait);
}

#[test]
fn a_restart_init_with_new_addresses_is_refused_and_the_association_kept() {
    let mut s = Script::server(34);
    s.establish_passive();
    let old_peer_tag = s.peer_tag;
    s.peer_tag = 0x0add_0001;
    let extra: std::net::IpAddr = "192.0.2.77".parse().unwrap();
    let init = s.init_chunk(vec![Param::from_address(extra)]);
    let p = s.init_packet(init);
    s.inject(&p);
    // §5.2.2: ABORT with "Restart of an Association with New Addresses" (cause 11).
    let o = s.expect();
    let a: Abort = o.only();
    assert_eq!(o.vtag(), s.peer_tag);
    assert_eq!(
        a.causes,
        vec![ErrorCause::RestartWithNewAddresses(Bytes::from_static(&[
            0, 5, 0, 8, 192, 0, 2, 77
        ]))]
    );
    s.peer_tag = old_peer_tag;
    assert_eq!(s.assoc().state(), State::Established);
    s.send_chunks(vec![data(s.peer_tsn(0), 0, 0, b"still")]);
    assert_eq!(s.expect_to_peer::<Sack>().cum_tsn_ack, s.peer_tsn(0));
}

#[test]
fn heartbeat_is_echoed_unchanged() {
    let mut s = Script::server(35);
    s.establish_passive();
    let info = Bytes::from_static(b"opaque heartbeat info...");
    let hb = braid_wire::chunk::Heartbeat {
        params: vec![Param::HeartbeatInfo(info.clone())],
    };
    s.send_chunks(vec![hb.into()]);
    // §8.3: HEARTBEAT-ACK at once with the Heartbeat Information copied unchanged.
    let o = s.expect();
    assert_eq!(o.t(), s.t());
    assert_eq!(o.vtag(), s.peer_tag);
    let ack: braid_wire::chunk::HeartbeatAck = o.only();
    assert_eq!(ack.params, vec![Param::HeartbeatInfo(info)]);
}

#[test]
fn a_heartbeat_without_info_gets_a_well_formed_ack() {
    let mut s = Script::server(37);
    s.establish_passive();
    // pion sends HEARTBEAT with no Heartbeat Info (RFC 9260 §3.3.5 requires one); the
    // answer must still be a valid HEARTBEAT-ACK: one (empty) Heartbeat Info parameter.
    let hb = braid_wire::chunk::Heartbeat { params: vec![] };
    s.send_chunks(vec![hb.into()]);
    let o = s.expect();
    let ack: braid_wire::chunk::HeartbeatAck = o.only();
    assert_eq!(ack.params, vec![Param::HeartbeatInfo(Bytes::new())]);
    assert_eq!(s.assoc().state(), State::Established);
}

#[test]
fn shutdown_ack_in_cookie_wait_is_answered_as_out_of_the_blue() {
    let mut s = Script::client(36);
    s.connect();
    // §8.5.1 E: SHUTDOWN-ACK in COOKIE-WAIT -> as OOTB (§8.4 item 5).
    let p = s.with_tag(0x5a5a_0001, vec![ShutdownAck.into()]);
    s.inject(&p);
    let o = s.expect();
    assert!(o.only::<ShutdownComplete>().t_bit);
    assert_eq!(o.vtag(), 0x5a5a_0001);
    assert_eq!(s.assoc().state(), State::CookieWait);
}

// ============================================================================ RFC 6951 port

#[test]
fn a_verified_packet_from_a_new_udp_port_moves_the_encapsulation_port() {
    let mut s = Script::server(61);
    s.establish_passive();
    let old = s.remote;
    let p0 = s.peer_tsn(0);

    // A NAT rebinds the peer: same IP, new UDP port. A forged packet (wrong tag) from a
    // third port must not move anything (RFC 6951 §5.4: the tag is checked first).
    s.remote.set_port(40_001);
    let forged = s.with_tag(s.ep_tag ^ 1, vec![data(p0, 0, 0, b"forged")]);
    s.inject(&forged);
    s.expect_nothing_for(secs(1));
    s.app_send(0, b"to the old port");
    let o = s.expect();
    assert!(o.has::<Data>());
    assert_eq!(o.remote, old, "an unverified packet moved the port");
    let e0 = o.get::<Data>().unwrap().tsn;

    // The genuine peer from its new port: answers follow it.
    s.remote.set_port(40_002);
    s.send_chunks(vec![sack(e0, BIG_WINDOW, &[]), data(p0, 0, 0, b"rebound")]);
    let o = s.expect();
    assert!(o.has::<Sack>());
    assert_eq!(o.remote, s.remote, "the SACK did not follow the new port");
    s.app_send(0, b"to the new port");
    let o = s.expect();
    assert!(o.has::<Data>());
    assert_eq!(o.remote.port(), 40_002);
    assert_eq!(s.app_recv_all(), vec![b"rebound".to_vec()]);
}

#[test]
fn an_init_from_a_new_udp_port_is_refused_with_cause_14_and_the_association_lives_on() {
    let mut s = Script::server(62);
    s.establish_passive();
    let (ep_tag, peer_tag) = (s.ep_tag, s.peer_tag);
    let old = s.remote;

    // NEAT D3.1 App. F §4 rule 7: an INIT (tag 0, unverifiable) from another UDP port for
    // this association is answered by an ABORT with cause 14 to that port, and nothing else
    // changes: an off-path attacker cannot take the association over by "restarting" it.
    s.remote.set_port(40_003);
    s.peer_tag = 0x0bad_0bad;
    let p = s.init_packet(s.init_chunk(vec![]));
    s.inject(&p);
    let o = s.expect();
    assert_eq!(
        o.remote.port(),
        40_003,
        "the ABORT goes to the INIT's source port"
    );
    assert_eq!(o.vtag(), 0x0bad_0bad, "the ABORT carries the INIT's tag");
    let a: Abort = o.only();
    assert!(!a.t_bit);
    assert_eq!(
        a.causes,
        vec![ErrorCause::RestartWithNewEncapsulationPort {
            current_port: old.port(),
            new_port: 40_003
        }]
    );
    assert!(!s.saw(&Event::Restarted));
    assert_eq!(s.assoc().state(), State::Established);
    // Is the old port still alive? A HEARTBEAT asks at once (a dead one then shows fast).
    let o = s.expect();
    assert!(o.has::<braid_wire::chunk::Heartbeat>(), "{}", o.describe());
    assert_eq!(o.remote, old);

    // The association still talks to the old port with the old tags.
    s.remote = old;
    s.peer_tag = peer_tag;
    s.ep_tag = ep_tag;
    s.send_chunks(vec![data(s.peer_tsn(0), 0, 0, b"still here")]);
    let o = s.expect();
    assert!(o.has::<Sack>());
    assert_eq!(o.remote, old);
    assert_eq!(s.app_recv_all(), vec![b"still here".to_vec()]);
}

#[test]
fn an_abort_with_cause_14_closes_the_restarting_side_with_that_cause() {
    let mut s = Script::client(63);
    let init = s.connect();
    let cause = ErrorCause::RestartWithNewEncapsulationPort {
        current_port: 9899,
        new_port: 40_004,
    };
    let p = s.with_tag(
        init.initiate_tag,
        vec![
            Abort {
                t_bit: false,
                causes: vec![cause.clone()],
            }
            .into(),
        ],
    );
    s.inject(&p);
    assert!(s.saw(&Event::Closed(CloseReason::PeerAbort(vec![cause]))));
    assert_eq!(s.assoc().state(), State::Closed);
}

// ============================================================================ ICMP

#[test]
fn an_icmp_unreachable_for_our_init_fails_the_handshake_at_once() {
    let mut s = Script::client(71);
    s.connect();
    let quoted = s.last.as_ref().unwrap().bytes.clone();
    // A forged one (wrong Initiate Tag in the quoted INIT) changes nothing (App. C, ICMP6).
    let mut forged = quoted.to_vec();
    forged[16] ^= 0xff;
    let (now, local, remote) = (s.now, s.local, s.remote);
    s.ep.handle_icmp(
        now,
        local,
        remote,
        &forged,
        braid_proto::IcmpError::Unreachable,
    );
    s.flush();
    assert_eq!(s.assoc().state(), State::CookieWait);
    // The genuine one: RFC 6951 §5.5 port unreachable = nobody speaks SCTP there.
    s.ep.handle_icmp(
        now,
        local,
        remote,
        &quoted[..20],
        braid_proto::IcmpError::Unreachable,
    );
    s.flush();
    assert!(s.saw(&Event::Closed(CloseReason::Unreachable)));
}

#[test]
fn an_icmp_too_big_lowers_the_path_mtu_within_bounds() {
    let mut s = Script::server(72);
    s.establish_passive();
    let mtu0 = s.assoc().paths()[0].mtu;
    s.app_send(0, b"x");
    let quoted = s.expect().bytes.clone();
    let (now, local, remote) = (s.now, s.local, s.remote);
    // Too small to be believed (below 576): ignored.
    s.ep.handle_icmp(
        now,
        local,
        remote,
        &quoted,
        braid_proto::IcmpError::TooBig { mtu: 300 },
    );
    assert_eq!(s.assoc().paths()[0].mtu, mtu0);
    // A wrong tag: ignored.
    let mut forged = quoted.to_vec();
    forged[4] ^= 1;
    s.ep.handle_icmp(
        now,
        local,
        remote,
        &forged,
        braid_proto::IcmpError::TooBig { mtu: 1280 },
    );
    assert_eq!(s.assoc().paths()[0].mtu, mtu0);
    // Genuine: 1280-byte IP packets, less IPv4 + UDP headers.
    s.ep.handle_icmp(
        now,
        local,
        remote,
        &quoted,
        braid_proto::IcmpError::TooBig { mtu: 1280 },
    );
    assert_eq!(s.assoc().paths()[0].mtu, 1280 - 28);
    // Big messages now leave in packets that fit.
    s.app_send(0, &[7u8; 3000]);
    let sizes: Vec<usize> = (0..3).map(|_| s.expect().bytes.len()).collect();
    assert!(sizes.iter().all(|&n| n <= 1280 - 28), "{sizes:?}");
}
