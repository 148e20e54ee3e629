//! Settings an application changes on a live association: CMT on/off, the retransmission
//! policy, standby, forbidden and costed paths (`Association::set_cmt`, `set_rtx_policy`,
//! `set_path_standby`, `set_path_forbidden`, `set_path_cost`).

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use braid_proto::{
    AssocId, AssociationConfig, CmtConfig, PathId, PathState, RtxPolicy, SendOptions,
};
use bytes::Bytes;
use common::Pair;

/// A two-path pair with both paths confirmed and active.
fn connected(cfg: AssociationConfig, seed: u64) -> (Pair, AssocId, AssocId) {
    connected_n(cfg, 2, seed)
}

/// An `n`-path pair with every path confirmed and active.
fn connected_n(cfg: AssociationConfig, n: usize, seed: u64) -> (Pair, AssocId, AssocId) {
    Pair::multihomed_up(cfg, n, seed)
}

/// Sends `n` messages from the client, runs until the server read them all; returns the
/// DATA chunks each client path sent meanwhile.
fn burst(p: &mut Pair, c: AssocId, s: AssocId, n: usize) -> [u64; 2] {
    let v = burst_n(p, c, s, n);
    [v[0], v[1]]
}

/// [`burst`] over every path.
fn burst_n(p: &mut Pair, c: AssocId, s: AssocId, n: usize) -> Vec<u64> {
    let before: Vec<u64> = p
        .client
        .association(c)
        .unwrap()
        .paths()
        .iter()
        .map(|x| x.stats.data_chunks_sent)
        .collect();
    let now = p.now;
    let a = p.client.association_mut(c).unwrap();
    for _ in 0..n {
        a.send(now, 0, Bytes::from(vec![1u8; 1000]), SendOptions::default())
            .unwrap();
    }
    let mut got = 0;
    let deadline = p.now + Duration::from_secs(60);
    let done = p.run_until(deadline, |p| {
        while p.server.association_mut(s).unwrap().recv().is_some() {
            got += 1;
        }
        got == n
    });
    assert!(done, "only {got} of {n} messages arrived");
    let after = p.client.association(c).unwrap().paths();
    after
        .iter()
        .zip(&before)
        .map(|(a, b)| a.stats.data_chunks_sent - b)
        .collect()
}

/// Short timers, so that a cut path fails within a second or two.
fn fast_failover(cmt: bool) -> AssociationConfig {
    AssociationConfig {
        cmt: cmt.then(CmtConfig::default),
        rto_initial: Duration::from_millis(200),
        rto_min: Duration::from_millis(100),
        rto_max: Duration::from_millis(400),
        path_max_retrans: 2,
        hb_interval: Some(Duration::from_millis(200)),
        ..AssociationConfig::default()
    }
}

#[test]
fn cmt_switched_on_and_off_at_run_time() {
    let (mut p, c, s) = connected(AssociationConfig::default(), 1);
    // Without CMT only the primary carries new data.
    let sent = burst(&mut p, c, s, 200);
    assert!(sent[0] > 0 && sent[1] == 0, "{sent:?}");
    p.client
        .association_mut(c)
        .unwrap()
        .set_cmt(Some(CmtConfig::default()));
    let sent = burst(&mut p, c, s, 200);
    assert!(sent[0] > 0 && sent[1] > 0, "CMT on: {sent:?}");
    p.client.association_mut(c).unwrap().set_cmt(None);
    let sent = burst(&mut p, c, s, 200);
    assert!(sent[0] > 0 && sent[1] == 0, "CMT off again: {sent:?}");
    let a = p.client.association_mut(c).unwrap();
    a.set_rtx_policy(RtxPolicy::Same);
}

#[test]
fn a_standby_path_waits_until_the_others_fail() {
    let cfg = AssociationConfig {
        cmt: Some(CmtConfig::default()),
        rto_initial: Duration::from_millis(200),
        rto_min: Duration::from_millis(100),
        rto_max: Duration::from_millis(400),
        path_max_retrans: 2,
        hb_interval: Some(Duration::from_millis(200)),
        ..AssociationConfig::default()
    };
    let (mut p, c, s) = connected(cfg, 2);
    let a = p.client.association_mut(c).unwrap();
    assert!(a.set_path_standby(PathId(1), true));
    assert!(!a.set_path_standby(PathId(9), true));
    assert!(a.paths()[1].standby);
    // CMT, but path 1 is standby: everything on path 0.
    let sent = burst(&mut p, c, s, 200);
    assert!(sent[0] > 0 && sent[1] == 0, "{sent:?}");
    // Path 0 cut: once it fails, the standby path carries the data.
    p.set_path_down(0, true);
    let sent = burst(&mut p, c, s, 50);
    assert!(sent[1] > 0, "{sent:?}");
    // Back to normal use when no longer standby.
    p.set_path_down(0, false);
    let a = p.client.association_mut(c).unwrap();
    assert!(a.set_path_standby(PathId(1), false));
    assert!(!a.paths()[1].standby);
}

#[test]
fn a_forbidden_path_carries_no_data_even_when_the_allowed_one_fails() {
    let (mut p, c, s) = connected(fast_failover(true), 3);
    let a = p.client.association_mut(c).unwrap();
    assert!(a.set_path_forbidden(PathId(1), true));
    assert!(!a.set_path_forbidden(PathId(9), true));
    assert!(a.paths()[1].forbidden);
    // CMT, but path 1 is forbidden: everything on path 0.
    let sent = burst(&mut p, c, s, 200);
    assert!(sent[0] > 0 && sent[1] == 0, "{sent:?}");
    // Path 0 cut: data waits rather than take the forbidden path.
    p.set_path_down(0, true);
    let before = p.client.association(c).unwrap().paths()[1]
        .stats
        .data_chunks_sent;
    let now = p.now;
    let a = p.client.association_mut(c).unwrap();
    for _ in 0..20 {
        a.send(now, 0, Bytes::from(vec![2u8; 1000]), SendOptions::default())
            .unwrap();
    }
    p.run_for(Duration::from_secs(3));
    let after = p.client.association(c).unwrap().paths()[1]
        .stats
        .data_chunks_sent;
    assert_eq!(after, before, "DATA went on the forbidden path");
    // Allowed again: the waiting data takes it.
    assert!(
        p.client
            .association_mut(c)
            .unwrap()
            .set_path_forbidden(PathId(1), false)
    );
    let mut got = 0;
    let deadline = p.now + Duration::from_secs(30);
    let done = p.run_until(deadline, |p| {
        while p.server.association_mut(s).unwrap().recv().is_some() {
            got += 1;
        }
        got == 20
    });
    assert!(
        done,
        "only {got} of 20 messages arrived once path 1 was allowed"
    );
}

#[test]
fn failover_takes_the_cheapest_active_alternate() {
    let (mut p, c, s) = connected_n(fast_failover(false), 3, 4);
    let a = p.client.association_mut(c).unwrap();
    assert!(a.set_path_cost(PathId(1), 10));
    assert!(a.set_path_cost(PathId(2), 1));
    assert_eq!(a.paths()[2].cost, 1);
    let sent = burst_n(&mut p, c, s, 100);
    assert!(sent[0] > 0 && sent[1] == 0 && sent[2] == 0, "{sent:?}");
    // The primary fails: path 2 (cost 1) takes over, not path 1 (cost 10, lower id).
    p.set_path_down(0, true);
    let sent = burst_n(&mut p, c, s, 100);
    assert!(sent[2] > 0 && sent[1] == 0, "{sent:?}");
}

#[test]
fn a_standby_path_carries_the_data_when_the_only_other_path_is_forbidden() {
    let (mut p, c, s) = connected(fast_failover(true), 5);
    let a = p.client.association_mut(c).unwrap();
    assert!(a.set_path_forbidden(PathId(0), true));
    assert!(a.set_path_standby(PathId(1), true));
    // Path 0 is active but may not carry data: the standby path is all there is.
    let sent = burst(&mut p, c, s, 50);
    assert!(sent[0] == 0 && sent[1] > 0, "{sent:?}");
}

#[test]
fn nothing_is_retransmitted_on_a_path_forbidden_while_its_chunks_were_in_flight() {
    let (mut p, c, _s) = connected(fast_failover(false), 6);
    // Path 1 fails first, so no alternate is usable; then path 0 is cut with chunks in
    // flight on it, and forbidden.
    p.set_path_down(1, true);
    let deadline = p.now + Duration::from_secs(30);
    let failed = p.run_until(deadline, |p| {
        p.client.association(c).unwrap().paths()[1].state == PathState::Inactive
    });
    assert!(failed, "path 1 did not fail");
    p.set_path_down(0, true);
    let now = p.now;
    let a = p.client.association_mut(c).unwrap();
    for _ in 0..4 {
        a.send(now, 0, Bytes::from(vec![3u8; 1000]), SendOptions::default())
            .unwrap();
    }
    p.run_for(Duration::from_millis(10));
    let a = p.client.association_mut(c).unwrap();
    let st = a.paths()[0].stats;
    assert!(st.data_chunks_sent > 0, "nothing sent on path 0");
    assert!(a.set_path_forbidden(PathId(0), true));
    // Timeouts mark the chunks; whatever path takes them, it is not path 0.
    p.run_for(Duration::from_secs(3));
    let after = p.client.association(c).unwrap().paths()[0].stats;
    assert_eq!(
        (after.data_chunks_sent, after.retransmissions),
        (st.data_chunks_sent, st.retransmissions),
        "retransmitted on the forbidden path"
    );
}

#[test]
fn path_limits_say_what_held_new_data_back() {
    let cfg = AssociationConfig {
        recv_buffer: 64 * 1024,
        recv_buffer_max: 64 * 1024,
        ..AssociationConfig::default()
    };
    let (mut p, c, _s) = connected(cfg, 7);
    // Nothing to send for a second: the application is the limit (counted up to the next
    // transmission attempt, the sends below).
    let before = p.client.association(c).unwrap().paths()[0].stats.limited;
    p.run_for(Duration::from_secs(1));
    // 1 MB to a receiver that never reads its 64 KiB window: the peer's window.
    let now = p.now;
    let a = p.client.association_mut(c).unwrap();
    for _ in 0..1000 {
        a.send(now, 0, Bytes::from(vec![4u8; 1000]), SendOptions::default())
            .unwrap();
    }
    p.run_for(Duration::from_secs(2));
    let l = p.client.association(c).unwrap().paths()[0].stats.limited;
    assert!(
        l.application - before.application >= Duration::from_millis(900),
        "{l:?}"
    );
    assert!(l.peer_window >= Duration::from_secs(1), "{l:?}");
}
