//! Removing a path from a live association (`Association::remove_path`): ids are stable,
//! the removed path's counters stay readable, nothing more goes on it, and no message is
//! lost with it.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use braid_proto::{
    AssocId, AssociationConfig, CmtConfig, PathId, PathInfo, RemovePathError, SendOptions,
};
use bytes::Bytes;
use common::Pair;

/// An `n`-path pair with every path confirmed and active.
fn connected(cfg: AssociationConfig, n: usize, seed: u64) -> (Pair, AssocId, AssocId) {
    Pair::multihomed_up(cfg, n, seed)
}

/// Short timers and heartbeats, so that a removed path would show probes soon.
fn cfg(cmt: bool) -> AssociationConfig {
    AssociationConfig {
        cmt: cmt.then(CmtConfig::default),
        rto_initial: Duration::from_millis(200),
        rto_min: Duration::from_millis(100),
        rto_max: Duration::from_millis(400),
        hb_interval: Some(Duration::from_millis(200)),
        ..AssociationConfig::default()
    }
}

fn queue(p: &mut Pair, c: AssocId, from: u32, n: u32) {
    let now = p.now;
    let a = p.client.association_mut(c).unwrap();
    for i in from..from + n {
        let mut m = vec![0u8; 1000];
        m[..4].copy_from_slice(&i.to_be_bytes());
        a.send(now, 0, Bytes::from(m), SendOptions::default())
            .unwrap();
    }
}

/// Runs until the server has read `n` messages in all (numbered in order from 0).
fn read_all(p: &mut Pair, s: AssocId, got: &mut Vec<u32>, n: usize) {
    let deadline = p.now + Duration::from_secs(60);
    let done = p.run_until(deadline, |p| {
        while let Some(m) = p.server.association_mut(s).unwrap().recv() {
            got.push(u32::from_be_bytes(m.data[..4].try_into().unwrap()));
        }
        got.len() == n
    });
    assert!(done, "only {} of {n} messages arrived", got.len());
}

fn by_id(paths: &[PathInfo], id: u16) -> PathInfo {
    paths.iter().find(|p| p.id == PathId(id)).unwrap().clone()
}

#[test]
fn a_removed_path_keeps_its_id_and_counters_and_no_message_is_lost() {
    let (mut p, c, s) = connected(cfg(true), 3, common::seed_or_env(3));
    let path2 = by_id(&p.client.association(c).unwrap().paths(), 2).remote;
    // Path 1's interface is gone: the chunks sent on it before the removal are lost.
    p.set_path_down(1, true);
    queue(&mut p, c, 0, 400);
    p.run_for(Duration::from_millis(3));
    let now = p.now;
    let a = p.client.association_mut(c).unwrap();
    let before = by_id(&a.paths(), 1);
    assert!(before.flight_size > 0, "nothing in flight on path 1");
    a.remove_path(now, PathId(1)).unwrap();
    let mut got = Vec::new();
    read_all(&mut p, s, &mut got, 400);
    // And more after the removal, on what is left.
    queue(&mut p, c, 400, 200);
    read_all(&mut p, s, &mut got, 600);
    assert_eq!(got, (0..600).collect::<Vec<u32>>(), "lost or out of order");
    p.run_for(Duration::from_secs(5));
    let a = p.client.association(c).unwrap();
    assert!(
        !a.is_closed(),
        "the association did not survive the removal"
    );
    let live = a.paths();
    assert_eq!(
        live.iter().map(|x| x.id).collect::<Vec<_>>(),
        [PathId(0), PathId(2)],
        "the other paths keep their ids"
    );
    assert_eq!(by_id(&live, 2).remote, path2);
    assert!(by_id(&live, 2).stats.data_chunks_sent > 0);
    let gone = a.removed_paths();
    assert_eq!(gone.len(), 1);
    assert_eq!(gone[0].id, PathId(1));
    assert_eq!(
        gone[0].stats.packets_sent, before.stats.packets_sent,
        "a packet left on the removed path"
    );
    assert!(gone[0].stats.data_chunks_sent > 0, "its counters were lost");
    assert_eq!(gone[0].flight_size, 0, "its flight was not moved");
}

#[test]
fn removing_the_primary_fails_over_and_stops_its_heartbeats() {
    let (mut p, c, s) = connected(cfg(false), 2, common::seed_or_env(5));
    let now = p.now;
    let a = p.client.association_mut(c).unwrap();
    assert_eq!(a.primary(), PathId(0));
    a.remove_path(now, PathId(0)).unwrap();
    assert_eq!(a.primary(), PathId(1), "the primary did not move");
    let sent0 = a.removed_paths()[0].stats.packets_sent;
    queue(&mut p, c, 0, 100);
    let mut got = Vec::new();
    read_all(&mut p, s, &mut got, 100);
    // Idle for many heartbeat intervals: none goes to the removed path.
    p.run_for(Duration::from_secs(5));
    let a = p.client.association(c).unwrap();
    assert_eq!(a.removed_paths()[0].stats.packets_sent, sent0);
    assert!(by_id(&a.paths(), 1).stats.data_chunks_sent >= 100);
    assert!(!a.is_closed());
}

#[test]
fn what_cannot_be_removed() {
    let mut p = Pair::multihomed(cfg(true), 2, common::seed_or_env(7));
    let (now, from, to) = (p.now, p.client_addr, p.server_addr);
    let c = p.client.connect(now, from, to, 5001).unwrap();
    let a = p.client.association_mut(c).unwrap();
    assert_eq!(
        a.remove_path(now, PathId(0)),
        Err(RemovePathError::NotEstablished)
    );
    let (mut p, c, _s) = connected(cfg(true), 2, common::seed_or_env(7));
    let now = p.now;
    let a = p.client.association_mut(c).unwrap();
    assert_eq!(
        a.remove_path(now, PathId(9)),
        Err(RemovePathError::UnknownPath)
    );
    a.remove_path(now, PathId(1)).unwrap();
    assert_eq!(
        a.remove_path(now, PathId(1)),
        Err(RemovePathError::UnknownPath),
        "removed twice"
    );
    assert_eq!(
        a.remove_path(now, PathId(0)),
        Err(RemovePathError::LastPath)
    );
    p.run_for(Duration::from_secs(1));
    assert!(!p.client.association(c).unwrap().is_closed());
}
