//! Recovery from what empties or changes the sender's state under its feet: a peer restart
//! (RFC 9260 §5.2.4 A) and a path MTU that drops below a chunk already sent (§7.3).

#![allow(clippy::unwrap_used)]

mod common;

use braid_proto::{BufferSplitting, CmtConfig, Event, IcmpError, PathState};
use braid_wire::chunk::{CookieAck, CookieEcho, Data, InitAck};
use common::script::{EP_PORT, PEER_PORT, Script, quiet_config, sack, secs};

/// A verified ICMP "too big" reporting `mtu` for the script's path: the quoted packet is
/// our common header with the peer's verification tag.
fn too_big(s: &mut Script, mtu: usize) {
    let mut q = Vec::new();
    q.extend_from_slice(&EP_PORT.to_be_bytes());
    q.extend_from_slice(&PEER_PORT.to_be_bytes());
    q.extend_from_slice(&s.peer_tag.to_be_bytes());
    q.extend_from_slice(&[0; 4]);
    let (now, local, remote) = (s.now, s.local, s.remote);
    s.ep.handle_icmp(now, local, remote, &q, IcmpError::TooBig { mtu });
}

/// The peer restarts: a new INIT with new tags, then its COOKIE-ECHO (§5.2.4 case A).
fn peer_restarts(s: &mut Script, rwnd: u32) {
    s.peer_tag = 0x0e57_a127;
    s.peer_initial_tsn = 50_000;
    s.peer_rwnd = rwnd;
    let p = s.init_packet(s.init_chunk(vec![]));
    s.inject(&p);
    let ack: InitAck = s.expect().only();
    s.ep_tag = ack.initiate_tag;
    s.ep_initial_tsn = ack.initial_tsn;
    let cookie = ack.state_cookie().unwrap().clone();
    s.send_chunks(vec![CookieEcho { cookie }.into()]);
    s.expect().only::<CookieAck>();
    assert!(s.saw(&Event::Restarted));
}

/// What a path held of the old association's send buffer (buffer splitting) is gone with
/// it: the restarted association sends at once.
#[test]
fn a_restart_frees_each_paths_share_of_the_buffers() {
    let mut cfg = quiet_config();
    cfg.cmt = Some(CmtConfig {
        buffer_splitting: BufferSplitting::Receive,
        ..CmtConfig::default()
    });
    let mut s = Script::server_with(cfg, 5);
    s.establish_passive();
    s.app_send(0, &[1u8; 1000]);
    let _: Data = s.expect_to_peer(); // in flight, never acknowledged
    peer_restarts(&mut s, 1000); // the restarted peer's window: 1000 bytes
    s.app_send(0, b"after the restart");
    let d: Data = s.expect_to_peer();
    assert_eq!(&d.user_data[..], b"after the restart");
    s.send_chunks(vec![sack(d.tsn, 1 << 20, &[])]);
}

/// A path that failed before the restart is active again, and the application is told.
#[test]
fn a_restart_reactivates_a_failed_path_and_says_so() {
    let mut s = Script::server(9);
    s.establish_passive();
    s.app_send(0, b"into the void");
    let _: Data = s.expect_to_peer();
    // Path.Max.Retrans + 1 unanswered T3s (1 + 2 + 4 + 8 + 16 + 32 s) fail the only path.
    let failed = |s: &Script| {
        s.events.iter().any(|(_, _, e)| {
            matches!(
                e,
                Event::PathState {
                    state: PathState::Inactive,
                    ..
                }
            )
        })
    };
    for _ in 0..6 {
        let t = s.t();
        let _ = s.collect_until(t + secs(61));
        if failed(&s) {
            break;
        }
    }
    assert!(failed(&s), "the path never failed: {:?}", s.events);
    let before = s.events.len();
    peer_restarts(&mut s, 1 << 20);
    assert_eq!(s.assoc().paths()[0].state, PathState::Active);
    let active_again = s.events[before..].iter().any(|(_, _, e)| {
        matches!(
            e,
            Event::PathState {
                state: PathState::Active,
                ..
            }
        )
    });
    assert!(
        active_again,
        "Inactive -> Active unannounced: {:?}",
        s.events
    );
}

/// A verified ICMP "too big" lowers the PMTU below a chunk already sent: the chunk keeps
/// its TSN and size, so after its T3 it goes out alone and IP fragments it (§7.3) — the
/// association does not stop with nothing to send and no timer running.
#[test]
fn a_chunk_larger_than_a_lowered_pmtu_is_still_retransmitted() {
    let mut s = Script::server(11);
    s.establish_passive();
    s.app_send(0, &[3u8; 1400]);
    let d: Data = s.expect_to_peer();
    assert_eq!(d.user_data.len(), 1400);
    too_big(&mut s, 1280);
    assert!(s.assoc().paths()[0].mtu < 1400);
    s.app_send(0, b"small");
    let out = s.collect_until(s.t() + secs(10));
    assert!(
        out.iter().any(|o| o.tsns().contains(&d.tsn)),
        "the large chunk was never retransmitted"
    );
}

/// Without PLPMTUD, a verified ICMP "too big" lowers the path's MTU and the controller's
/// with it: after a T3 the window is one MTU of the new size (RFC 9260 §7.2.3, §7.3), not of
/// the old one.
#[test]
fn an_icmp_too_big_lowers_the_controllers_mtu_too() {
    let mut s = Script::server(12);
    s.establish_passive();
    s.app_send(0, &[3u8; 1000]);
    let _: Data = s.expect_to_peer();
    let before = s.assoc().paths()[0].mtu;
    too_big(&mut s, 1280);
    let mtu = s.assoc().paths()[0].mtu;
    assert!(
        mtu < before,
        "the ICMP did not lower the PMTU ({before} -> {mtu})"
    );
    // One T3 (RTO.Initial = 1 s) and nothing acknowledged: cwnd = 1 MTU.
    let _ = s.collect_until(s.t() + secs(2));
    let p = &s.assoc().paths()[0];
    assert_eq!(p.stats.timeouts, 1, "{p:?}");
    assert_eq!(p.cwnd, mtu, "cwnd after T3 counts in the old MTU");
}

/// Without PLPMTUD a lowered PMTU is tried at its configured size again after
/// `pmtu_raise_interval` (RFC 8201 §4, RFC 1191 §6.3: 10 minutes), not kept for good; a
/// second "too big" lowers it again.
#[test]
fn a_pmtu_lowered_by_icmp_is_tried_again_after_the_raise_interval() {
    let mut s = Script::server(13);
    s.establish_passive();
    let before = s.assoc().paths()[0].mtu;
    too_big(&mut s, 1280);
    let lowered = s.assoc().paths()[0].mtu;
    assert!(lowered < before);
    // Idle for most of the interval: still lowered.
    let _ = s.collect_until(s.t() + secs(590));
    assert_eq!(s.assoc().paths()[0].mtu, lowered);
    let _ = s.collect_until(s.t() + secs(20));
    assert_eq!(
        s.assoc().paths()[0].mtu,
        before,
        "never tried the larger size again"
    );
    too_big(&mut s, 1280);
    assert_eq!(s.assoc().paths()[0].mtu, lowered);
}
