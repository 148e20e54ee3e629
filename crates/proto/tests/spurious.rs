//! Spurious retransmissions (Ladha et al.; RFC 3522, RFC 3708, RFC 4015): reordering and delay
//! spikes make retransmissions that were not needed; each detection variant finds them,
//! never calls a real loss spurious, and the response spares retransmissions.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use braid_proto::{AssocId, AssociationConfig, AssociationStats, LossDetection, SpuriousDetection};
use braid_wire::Param;
use braid_wire::chunk::{ChunkType, Data, Timestamp};
use common::script::{Script, quiet_config, sack};
use common::traffic::{Plan, transfer};
use common::{Pair, Wire};

const VARIANTS: [SpuriousDetection; 4] = [
    SpuriousDetection::EifelTimestamp,
    SpuriousDetection::EifelRbit,
    SpuriousDetection::DupTsn,
    SpuriousDetection::EifelDupTsn,
];

/// Ladha et al.'s sender: three miss indications and T3 (RACK-TLP would repair the tails
/// these scenarios time out on).
fn config(d: SpuriousDetection) -> AssociationConfig {
    AssociationConfig {
        spurious_detection: d,
        loss_detection: LossDetection::DupThresh,
        ..AssociationConfig::default()
    }
}

fn plan(total_bytes: usize) -> Plan {
    Plan {
        streams: 2,
        total_bytes,
        size: Box::new(|_| 1200),
        unordered: false,
    }
}

/// Sender statistics and retransmissions after a checked 1 MB transfer over `wire`.
fn run(d: SpuriousDetection, wire: Wire, seed: u64) -> (AssociationStats, u64) {
    let mut p = Pair::new(config(d), seed);
    p.to_server = wire;
    let (c, s) = p.connect();
    transfer(&mut p, c, s, &plan(1_000_000), Duration::from_secs(3_000));
    sender_stats(&p, c)
}

fn sender_stats(p: &Pair, c: AssocId) -> (AssociationStats, u64) {
    let a = p.client.association(c).unwrap();
    let rtx = a.paths().iter().map(|x| x.stats.retransmissions).sum();
    (a.stats(), rtx)
}

fn timeouts(p: &Pair, c: AssocId) -> u64 {
    let a = p.client.association(c).unwrap();
    a.paths().iter().map(|x| x.stats.timeouts).sum()
}

/// Packets held back behind later ones: every fast retransmit they cause is spurious, and
/// each variant finds some; with detection off none is reported.
/// A scripted peer of an endpoint that detects by `d` (no idle heartbeats).
fn script(d: SpuriousDetection) -> Script {
    Script::server_with(
        AssociationConfig {
            spurious_detection: d,
            ..quiet_config()
        },
        4,
    )
}

/// The peer's Eifel-Supported, echoing timestamps only.
fn echoes_timestamps() -> Param {
    Param::EifelSupported {
        timestamp: true,
        retransmit_bit: false,
    }
}

/// A TIMESTAMP chunk for the scripted peer to lead a packet with.
fn timestamp(value: u32, echo: u32) -> braid_wire::Chunk {
    braid_wire::Chunk::Unknown(braid_wire::RawChunk::from_body(&Timestamp { value, echo }))
}

/// `n` messages of 100 bytes queued at one instant, so they go bundled.
fn send_bundled(s: &mut Script, n: u8) {
    let now = s.now;
    for i in 0..n {
        let m = bytes::Bytes::from(vec![i; 100]);
        s.assoc_mut().send(now, 0, m, Default::default()).unwrap();
    }
    s.flush();
}

#[test]
fn reordering_makes_spurious_fast_retransmits_that_every_variant_finds() {
    let reordering = Wire {
        reorder: 0.03,
        reorder_delay: Duration::from_millis(40),
        ..Wire::default()
    };
    let (off, off_rtx) = run(SpuriousDetection::Off, reordering.clone(), 3);
    assert!(off_rtx > 0, "the wire caused no retransmission");
    assert_eq!(off.spurious_fast_retransmits, 0);
    for d in VARIANTS {
        let (st, _) = run(d, reordering.clone(), 3);
        assert!(
            st.spurious_fast_retransmits > 0,
            "{d}: no spurious fast retransmit found: {st:?}"
        );
    }
}

/// A real loss is never called spurious: with loss and no reordering or duplication, every
/// retransmission was needed. Only the forward direction loses packets: Fig. 6's
/// retransmit bit (like DupTSN, §5) is lost with the SACK that carried it.
#[test]
fn real_losses_are_never_called_spurious() {
    for seed in [1, 2] {
        let lossy = Wire {
            loss: 0.03,
            ..Wire::default()
        };
        for d in VARIANTS {
            let (st, rtx) = run(d, lossy.clone(), seed);
            assert!(rtx > 0, "{d}: no retransmission to judge");
            assert_eq!(
                (st.spurious_fast_retransmits, st.spurious_timeouts),
                (0, 0),
                "{d}, seed {seed}: a real loss was called spurious"
            );
        }
    }
}

/// The same with the timestamps also lost on the way back: Eifel with timestamps keeps its
/// verdicts (the cover ack's echo says which copy arrived, whichever SACK carries it).
#[test]
fn eifel_timestamps_are_not_fooled_by_lost_sacks() {
    let mut p = Pair::new(config(SpuriousDetection::EifelTimestamp), 7);
    p.to_server = Wire {
        loss: 0.03,
        ..Wire::default()
    };
    p.to_client = p.to_server.clone();
    let (c, s) = p.connect();
    transfer(&mut p, c, s, &plan(1_000_000), Duration::from_secs(3_000));
    let (st, rtx) = sender_stats(&p, c);
    assert!(rtx > 0);
    assert_eq!((st.spurious_fast_retransmits, st.spurious_timeouts), (0, 0));
}

/// A 2.5 s delay spike on a 10 ms path: T3 expires while the originals are only late
/// (Fig. 2(b)). Eifel finds the spurious timeout at the first cover ack and resumes new
/// data, so it retransmits far less than plain SCTP's Go-Back-N (Fig. 8(a)); DupTSN finds it
/// only after the Go-Back-N (Fig. 8(b)).
#[test]
fn a_delay_spike_makes_a_spurious_timeout_that_eifel_ends_early() {
    let spike = |d: SpuriousDetection| {
        let mut p = Pair::new(config(d), 11);
        let (c, s) = p.connect();
        let plan = plan(400_000);
        // Warm up: an RTT estimate and a window of some size.
        transfer(&mut p, c, s, &plan, Duration::from_secs(600));
        let (before, rtx_before) = sender_stats(&p, c);
        let t3_before = timeouts(&p, c);
        // Packets sent in the next 2 s take 2.5 s: the originals and the first timeout's
        // retransmission (RTO 1 s) arrive in the order they were sent, as in a spike.
        p.to_server.delay = Duration::from_millis(2500);

        let end = p.now + Duration::from_secs(2);
        let mut started = false;
        // The spike starts with a full window in flight.
        p.run_until(end, |p| {
            if !started {
                started = true;
                let now = p.now;
                let a = p.client.association_mut(c).unwrap();
                for i in 0..40u32 {
                    let m = common::traffic::message(0, 1_000_000 + i, 1200);
                    let _ = a.send(now, 0, m, Default::default());
                }
            }
            false
        });
        p.to_server.delay = Duration::from_millis(10);
        p.run_for(Duration::from_secs(30));
        let (after, rtx_after) = sender_stats(&p, c);
        let spurious = after.spurious_timeouts - before.spurious_timeouts;
        let t3 = timeouts(&p, c) - t3_before;
        assert!(t3 >= 1, "{d}: the spike caused no timeout");
        (spurious, t3, rtx_after - rtx_before)
    };
    let (off_spurious, _, off_rtx) = spike(SpuriousDetection::Off);
    assert_eq!(off_spurious, 0);
    // The timeouts' retransmissions, then the Go-Back-N of what the late acks have not yet
    // covered.
    assert!(off_rtx > 2, "plain SCTP should Go-Back-N: {off_rtx}");
    for d in [
        SpuriousDetection::EifelTimestamp,
        SpuriousDetection::EifelRbit,
    ] {
        let (spurious, t3, rtx) = spike(d);
        assert_eq!(
            spurious, t3,
            "{d}: a timeout of the spike not found spurious"
        );
        // What the window after the timeout let out (one MTU, plus the packet RFC 9260
        // §6.1 B allows past it), and nothing after the first cover ack.
        assert!(
            rtx <= 2 * t3,
            "{d}: {rtx} retransmissions for {t3} timeouts"
        );
        assert!(
            rtx < off_rtx,
            "{d}: {rtx}, as many as plain SCTP's Go-Back-N"
        );
    }
    let (dup_spurious, dup_t3, dup_rtx) = spike(SpuriousDetection::DupTsn);
    assert_eq!(dup_spurious, dup_t3, "DupTSN did not find them all");
    assert_eq!(dup_rtx, off_rtx, "DupTSN cannot avoid the Go-Back-N");
}

/// Eifel is a negotiated extension: to a peer that did not list it in Eifel-Supported no
/// TIMESTAMP chunk goes, and DupTSN detection (which needs nothing from the peer) runs.
#[test]
fn no_timestamp_chunk_goes_to_a_peer_that_did_not_offer_it() {
    let mut s = script(SpuriousDetection::EifelTimestamp);
    s.establish_passive();
    s.app_send(0, b"no timestamps for you");
    let out = s.expect();
    assert_eq!(out.types(), vec![ChunkType::DATA]);
}

/// With the peer's Eifel-Supported, every packet leads with a TIMESTAMP chunk, and a
/// retransmission of the retransmit-bit variant carries the bit.
#[test]
fn a_peer_that_offered_it_gets_timestamps_first_in_every_packet() {
    let mut s = script(SpuriousDetection::EifelTimestamp);
    s.init_params = vec![echoes_timestamps()];
    s.establish_passive();
    s.app_send(0, b"first");
    let out = s.expect();
    assert_eq!(out.types(), vec![ChunkType::TIMESTAMP, ChunkType::DATA]);
    let ts: Timestamp = out.get().unwrap();
    assert_eq!(
        u128::from(ts.value),
        out.t().as_micros(),
        "TSval is our clock in µs"
    );
    assert_eq!(ts.echo, 0, "nothing to echo yet");
    let d: Data = out.get().unwrap();
    assert_eq!(&d.user_data[..], b"first");
}

/// Fig. 6 rules (a) and (b) on the wire: with the retransmit-bit variant every retransmitted
/// DATA chunk has the bit and the SACK answering it too; first transmissions never do.
#[test]
fn the_retransmit_bit_marks_retransmissions_and_the_sacks_that_answer_them() {
    use braid_wire::chunk::{DATA_FLAG_RETRANSMIT, SACK_FLAG_RETRANSMIT};
    let mut p = Pair::new(config(SpuriousDetection::EifelRbit), 5);
    p.keep_log = true;
    p.to_server = Wire {
        loss: 0.03,
        ..Wire::default()
    };
    let (c, s) = p.connect();
    transfer(&mut p, c, s, &plan(300_000), Duration::from_secs(3_000));
    let mut seen = std::collections::HashSet::new();
    let (mut rbit_data, mut rbit_sacks) = (0, 0);
    for l in &p.log {
        for raw in braid_wire::raw_chunks(&l.bytes).flatten() {
            let flagged = raw.flags & 0x10 != 0;
            match (l.dir, raw.chunk_type) {
                (common::Dir::ToServer, ChunkType::DATA) => {
                    let tsn = u32::from_be_bytes(raw.value[..4].try_into().unwrap());
                    let again = !seen.insert(tsn);
                    assert_eq!(
                        flagged, again,
                        "TSN {tsn}: bit {flagged}, retransmission {again}"
                    );
                    rbit_data += usize::from(flagged && raw.flags & DATA_FLAG_RETRANSMIT != 0);
                }
                (common::Dir::ToClient, ChunkType::SACK | ChunkType::NR_SACK) => {
                    rbit_sacks += usize::from(raw.flags & SACK_FLAG_RETRANSMIT != 0);
                }
                _ => {}
            }
        }
    }
    assert!(
        rbit_data > 0 && rbit_sacks > 0,
        "{rbit_data} DATA, {rbit_sacks} SACKs"
    );
}

/// Fig. 5 of Ladha et al., with a timeout: eight small chunks go in one packet, time out, and
/// go again in one packet. A SACK that acknowledges only the first with the original's
/// timestamp is not a cover ack and decides nothing; the cover ack then decides by its echo.
fn bundled_timeout(cover_echo_is_original: bool) -> u64 {
    let mut s = script(SpuriousDetection::EifelTimestamp);
    s.init_params = vec![echoes_timestamps()];
    s.establish_passive();
    send_bundled(&mut s, 8);
    let first = s.expect();
    assert_eq!(first.tsns().len(), 8, "{}", first.describe());
    let original: Timestamp = first.get().unwrap();
    // No SACK: T3-rtx expires and all eight go again, bundled (one MTU of cwnd).
    let again = s.expect();
    assert_eq!(again.tsns(), first.tsns(), "{}", again.describe());
    let retransmit: Timestamp = again.get().unwrap();
    assert!(retransmit.value > original.value);
    let tsns = first.tsns();
    let ts = |echo: u32| timestamp(1, echo);
    // Only the first chunk's original arrived (the others were lost): not a cover ack.
    s.send_chunks(vec![ts(original.value), sack(tsns[0], 1 << 20, &[])]);
    assert_eq!(
        s.assoc().stats().spurious_timeouts,
        0,
        "decided on a partial ack"
    );
    let echo = if cover_echo_is_original {
        original.value
    } else {
        retransmit.value
    };
    s.send_chunks(vec![ts(echo), sack(tsns[7], 1 << 20, &[])]);
    s.assoc().stats().spurious_timeouts
}

#[test]
fn only_a_cover_ack_decides_and_its_echo_says_which_copy_arrived() {
    assert_eq!(
        bundled_timeout(false),
        0,
        "the retransmission filled the holes: not spurious"
    );
    assert_eq!(
        bundled_timeout(true),
        1,
        "the originals all arrived: spurious"
    );
}

/// RFC 3708 §3: a TSN sent three times (original and two retransmissions) was spurious only
/// if two duplicate reports came back. The original was lost, both T3 retransmissions
/// arrived: one duplicate report, and the first timeout was needed.
#[test]
fn one_duplicate_report_does_not_cover_two_retransmissions() {
    use braid_wire::Chunk;
    let mut s = script(SpuriousDetection::DupTsn);
    s.establish_passive();
    s.app_send(0, b"lost, then sent twice");
    let first = s.expect();
    let tsn = first.tsns()[0];
    // The original is lost: T3 expires twice and the chunk goes twice more.
    let r1 = s.expect();
    assert_eq!(r1.tsns(), vec![tsn]);
    let r2 = s.expect();
    assert_eq!(r2.tsns(), vec![tsn]);
    // Both retransmissions arrived: one duplicate.
    let mut ack = sack(tsn, 1 << 20, &[]);
    if let Chunk::Sack(x) = &mut ack {
        x.dup_tsns = vec![tsn];
    }
    s.send_chunks(vec![ack]);
    assert_eq!(
        s.assoc().stats().spurious_timeouts,
        0,
        "a needed retransmission called spurious"
    );
}

/// Fig. 6 step 2 keeps MaxRetransmit the highest TSN retransmitted: a second chunk
/// fast-retransmitted in the same fast recovery was really lost, so the cover ack for the
/// first retransmission alone (the reordered original arrived) must not undo the recovery's
/// window cut.
#[test]
fn a_loss_fast_retransmitted_later_in_the_recovery_is_not_masked() {
    let mut s = script(SpuriousDetection::EifelTimestamp);
    s.init_params = vec![echoes_timestamps()];
    s.establish_passive();
    send_bundled(&mut s, 8);
    let first = s.expect();
    let tsns = first.tsns();
    assert_eq!(tsns.len(), 8, "{}", first.describe());
    let original: Timestamp = first.get().unwrap();
    let base = tsns[0];
    let ts = |echo: u32| timestamp(1, echo);
    // TSN base is only late, base+2 is lost; the others arrive.
    let cum = base.wrapping_sub(1);
    s.advance(Duration::from_millis(10));
    s.send_chunks(vec![ts(original.value), sack(cum, 1 << 20, &[(2, 2)])]);
    s.advance(Duration::from_millis(10));
    s.send_chunks(vec![
        ts(original.value),
        sack(cum, 1 << 20, &[(2, 2), (4, 4)]),
    ]);
    s.advance(Duration::from_millis(10));
    s.send_chunks(vec![
        ts(original.value),
        sack(cum, 1 << 20, &[(2, 2), (4, 5)]),
    ]);
    let r1 = s.expect();
    assert_eq!(r1.tsns(), vec![base], "{}", r1.describe());
    s.advance(Duration::from_millis(10));
    s.send_chunks(vec![
        ts(original.value),
        sack(cum, 1 << 20, &[(2, 2), (4, 6)]),
    ]);
    let r3 = s.expect();
    assert_eq!(r3.tsns(), vec![base + 2], "{}", r3.describe());
    // The late original of `base` arrives: the cum ack passes it, with its timestamp, but
    // base+2 is still missing.
    s.advance(Duration::from_millis(10));
    s.send_chunks(vec![ts(original.value), sack(base + 1, 1 << 20, &[(2, 5)])]);
    // Then the retransmission of base+2 fills the hole.
    let r3ts: Timestamp = r3.get().unwrap();
    s.advance(Duration::from_millis(10));
    s.send_chunks(vec![ts(r3ts.value), sack(base + 7, 1 << 20, &[])]);
    assert_eq!(
        s.assoc().stats().spurious_fast_retransmits,
        0,
        "a recovery with a real loss undone"
    );
}

/// PR-SCTP (RFC 3758): a chunk whose original and retransmission were both lost is
/// abandoned, and the FORWARD-TSN moves the peer's cumulative ack past it. That SACK is a
/// cover ack without the retransmit bit, yet no copy arrived: nothing was spurious.
#[test]
fn an_abandoned_retransmission_is_not_called_spurious() {
    use braid_wire::chunk::ForwardTsn;
    let mut s = script(SpuriousDetection::EifelRbit);
    s.init_params = vec![
        Param::EifelSupported {
            timestamp: false,
            retransmit_bit: true,
        },
        Param::ForwardTsnSupported,
    ];
    s.establish_passive();
    let now = s.now;
    let opts = braid_proto::SendOptions {
        lifetime: Some(Duration::from_millis(2500)),
        ..Default::default()
    };
    let m = bytes::Bytes::from_static(b"short-lived");
    s.assoc_mut().send(now, 0, m, opts).unwrap();
    s.flush();
    let first = s.expect();
    let tsn = first.tsns()[0];
    // The original and the T3 retransmission are lost; the message expires.
    let r = s.expect();
    assert_eq!(r.tsns(), vec![tsn], "{}", r.describe());
    let fwd = loop {
        let o = s.expect();
        if o.has::<ForwardTsn>() {
            break o;
        }
    };
    assert_eq!(fwd.get::<ForwardTsn>().unwrap().new_cum_tsn, tsn);
    s.send_chunks(vec![sack(tsn, 1 << 20, &[])]);
    assert_eq!(
        s.assoc().stats().spurious_timeouts,
        0,
        "an abandoned chunk's loss called spurious"
    );
}

/// CMT: path A's chunks are slow, path B's first chunk is lost and fast-retransmitted (SFR:
/// only B's acks count). The retransmission reaches the peer above a hole (A's chunks), so
/// RFC 7323's echo rule does not take its timestamp; when A's originals fill the hole, the
/// cover ack echoes their older timestamp although the retransmission was needed. Eifel
/// cannot decide such an episode.
#[test]
fn a_retransmission_above_an_older_hole_is_not_called_spurious() {
    use braid_proto::CmtConfig;
    use common::multihome::{sack_dac, tsns_to};
    let cfg = AssociationConfig {
        spurious_detection: SpuriousDetection::EifelTimestamp,
        cmt: Some(CmtConfig::default()),
        ..quiet_config()
    };
    let mut s = Script::server_with(cfg, 4);
    s.init_params = vec![Param::EifelSupported {
        timestamp: true,
        retransmit_bit: false,
    }];
    // common::multihome::two_confirmed_paths, with the peer's Eifel-Supported.
    let (mut s, b) = {
        let alt: std::net::SocketAddr = common::multihome::ALT.parse().unwrap();
        common::multihome::establish_multihomed(&mut s, &[alt.ip()]);
        for _ in 0..50 {
            let outs = s.collect_until(s.t() + Duration::from_millis(100));
            common::multihome::answer_heartbeats(&mut s, &outs);
        }
        assert_eq!(s.assoc().paths()[1].remote, alt);
        (s, alt)
    };
    let a = s.remote;
    let full = s.assoc().paths()[0].mtu - braid_wire::COMMON_HEADER_LEN - 16 - 12;
    for i in 0..16u8 {
        s.app_send(0, &vec![i; full]);
    }
    let outs = s.take_sent();
    let on_a = tsns_to(&outs, a);
    let on_b = tsns_to(&outs, b);
    assert!(on_a.len() >= 4 && on_b.len() >= 4, "{on_a:?} {on_b:?}");
    let orig_a: Timestamp = outs.iter().find(|o| o.remote == a).unwrap().get().unwrap();
    let ts = |echo: u32| timestamp(1, echo);
    let cum = s.ep_tsn(0).wrapping_sub(1);
    // B's first chunk is lost, its others arrive one by one; A's are all still on the way.
    let lost = on_b[0];
    let mut acked = Vec::new();
    let mut rtx = None;
    for &t in &on_b[1..] {
        acked.push(t);
        s.advance(Duration::from_millis(10));
        let p = s.to_ep(vec![ts(orig_a.value), sack_dac(cum, 1 << 20, &acked, 0)]);
        s.inject_from(b, &p);
        for o in s.take_sent() {
            if o.tsns().contains(&lost) {
                rtx = Some(o);
            }
        }
        if rtx.is_some() {
            break;
        }
    }
    let rtx = rtx.expect("no fast retransmit of B's lost chunk");
    let _: Timestamp = rtx.get().unwrap();
    // The retransmission arrives above the hole; then A's originals fill it: the cover ack
    // echoes A's original timestamp (older than the retransmission's).
    s.advance(Duration::from_millis(10));
    let top = *on_a.iter().chain(&on_b).max().unwrap();
    let p = s.to_ep(vec![ts(orig_a.value), sack_dac(top, 1 << 20, &[], 0)]);
    s.inject_from(a, &p);
    assert_eq!(
        s.assoc().stats().spurious_fast_retransmits,
        0,
        "a needed retransmission called spurious"
    );
}

/// A restarted peer's clock starts afresh: the timestamp we echo must be its new one, not
/// the old incarnation's, which a "never older" rule would otherwise keep for half the
/// clock's range (and make every cover ack look spurious to it).
#[test]
fn a_peer_restart_starts_the_timestamp_echo_afresh() {
    use braid_wire::chunk::{CookieAck, CookieEcho, InitAck};
    use common::script::data;
    let ts = |value: u32| timestamp(value, 0);
    let mut s = Script::server_with(quiet_config(), 6);
    s.init_params = vec![echoes_timestamps()];
    s.establish_passive();
    let p0 = s.peer_tsn(0);
    s.send_chunks(vec![ts(2_000_000_000), data(p0, 0, 0, b"old peer")]);
    let echoed: Timestamp = s.expect().get().unwrap();
    assert_eq!(echoed.echo, 2_000_000_000);
    // The peer restarts (RFC 9260 §5.2.4 A): a new INIT, then its COOKIE-ECHO.
    s.peer_tag = 0x0e57_a127;
    s.peer_initial_tsn = 70_000;
    let init = s.init_packet(s.init_chunk(s.init_params.clone()));
    s.inject(&init);
    let ack: InitAck = s.expect().only();
    s.ep_tag = ack.initiate_tag;
    let cookie = ack.state_cookie().unwrap().clone();
    s.send_chunks(vec![CookieEcho { cookie }.into()]);
    s.expect().only::<CookieAck>();
    let p0 = s.peer_tsn(0);
    s.send_chunks(vec![ts(5), data(p0, 0, 0, b"new peer")]);
    let echoed: Timestamp = s.expect().get().unwrap();
    assert_eq!(echoed.echo, 5, "echoing the old incarnation's clock");
}
