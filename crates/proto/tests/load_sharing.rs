//! LS-SCTP (Abd El Al et al. §4): two endpoints with two addresses each (path i is
//! 10.i.0.1 ↔ 10.i.0.2), wired in memory; every test reads what went on the wire (the
//! pair's log, before loss) and what the application received.
//!
//! Negotiation (§4.6), LS-DATA/LS-SACK with per-path sequence numbers and braid's
//! LS-FORWARD-PSN (§4.2), retransmission to another path and timeout handling with a probe
//! copy (§4.3), the Path Monitor (§4.4), cwnd/RTT path assignment with a message's
//! fragments on one path (§4.3, §4.5).
#![allow(clippy::unwrap_used)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use braid_proto::{
    AssocId, AssociationConfig, CmtConfig, Event, Instant, PathAssignment, PathId, PathState,
    SendError, SendOptions, TimeoutHandling, TraceEvent,
};
use braid_wire::chunk::{ChunkType, Data, LsData, LsForwardPsn, LsSack};
use braid_wire::{Chunk, ChunkBody, Packet, Param, RawChunk, raw_chunks};
use common::traffic::{Plan, check, message, transfer};
use common::{Dir, Logged, Pair, Wire};

const LS_DATA: u8 = 0xB0;
const LS_SACK: u8 = 0xB1;
const LS_FORWARD_PSN: u8 = 0xB2;

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

/// LS-SCTP offered, the other settings RFC 9260's.
fn ls() -> AssociationConfig {
    AssociationConfig {
        load_sharing: true,
        ..AssociationConfig::default()
    }
}

/// A two-path pair, connected, with both paths confirmed and active on both sides; the log
/// is on from the first INIT.
fn connected(client: AssociationConfig, server: AssociationConfig, seed: u64) -> Conn {
    let mut p = Pair::multihomed_with(client, server, 2, seed);
    p.keep_log = true;
    let (c, s) = p.connect();
    let deadline = p.now + secs(30);
    let up = p.run_until(deadline, |p| {
        let all = |ps: Vec<braid_proto::PathInfo>| {
            ps.len() == 2
                && ps
                    .iter()
                    .all(|x| x.confirmed && x.state == PathState::Active)
        };
        all(p.client.association(c).unwrap().paths())
            && all(p.server.association(s).unwrap().paths())
    });
    assert!(
        up,
        "paths not confirmed: {:?}",
        p.client.association(c).unwrap().paths()
    );
    Conn { p, c, s }
}

struct Conn {
    p: Pair,
    c: AssocId,
    s: AssocId,
}

/// The chunks of a logged datagram, framed (braid's LS chunks are `Unknown` to `Chunk`).
fn chunks(l: &Logged) -> Vec<RawChunk> {
    raw_chunks(&l.bytes).filter_map(Result::ok).collect()
}

fn types(l: &Logged) -> Vec<u8> {
    chunks(l).iter().map(|c| c.chunk_type.0).collect()
}

fn all<T: ChunkBody>(l: &Logged) -> Vec<T> {
    chunks(l)
        .into_iter()
        .filter_map(|r| r.decode_as::<T>()?.ok())
        .collect()
}

/// Every LS-DATA the client sent: (time, path, chunk), in order.
fn client_ls_data(log: &[Logged]) -> Vec<(Instant, usize, LsData)> {
    log.iter()
        .filter(|l| l.dir == Dir::ToServer)
        .flat_map(|l| all::<LsData>(l).into_iter().map(|d| (l.at, l.path, d)))
        .collect()
}

/// Every LS-SACK the server sent: (time, chunk).
fn server_ls_sacks(log: &[Logged]) -> Vec<(Instant, LsSack)> {
    log.iter()
        .filter(|l| l.dir == Dir::ToClient)
        .flat_map(|l| all::<LsSack>(l).into_iter().map(|s| (l.at, s)))
        .collect()
}

/// 12-bit serial comparison: `a` is `b` or after it.
fn psn_ge(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b)) % 4096 < 2048
}

/// The parameters of the INIT (or INIT-ACK) in the log.
fn init_params(log: &[Logged], ack: bool) -> Vec<Param> {
    for l in log {
        let Ok(pkt) = Packet::decode(&l.bytes) else {
            continue;
        };
        for c in pkt.chunks {
            match c {
                Chunk::Init(i) if !ack => return i.params,
                Chunk::InitAck(i) if ack => return i.params,
                _ => {}
            }
        }
    }
    panic!("no INIT{} in the log", if ack { "-ACK" } else { "" });
}

fn offers_ls(params: &[Param]) -> bool {
    params.contains(&Param::LoadSharingSupported)
}

/// Sends `n` checked messages of `len` bytes on stream 0, runs until all arrived, checks
/// them in order.
fn exchange(conn: &mut Conn, n: u32, len: usize) {
    let Conn { p, c, s } = conn;
    let now = p.now;
    let a = p.client.association_mut(*c).unwrap();
    for i in 0..n {
        a.send(now, 0, message(0, i, len), SendOptions::default())
            .unwrap();
    }
    let mut got = 0;
    let deadline = p.now + secs(30);
    let done = p.run_until(deadline, |p| {
        while let Some(m) = p.server.association_mut(*s).unwrap().recv() {
            assert_eq!(check(&m.data), (0, got));
            got += 1;
        }
        got == n
    });
    assert!(done, "{got}/{n} messages arrived");
}

// ============================================================================ negotiation

/// Both sides offer LS-SCTP: both list Load-Sharing-Supported, and every DATA and SACK of
/// the association is an LS-DATA or LS-SACK.
#[test]
fn both_sides_offering_ls_use_ls_data_and_ls_sack_only() {
    let mut conn = connected(ls(), ls(), 1);
    exchange(&mut conn, 50, 3000);
    let log = &conn.p.log;
    assert!(offers_ls(&init_params(log, false)));
    assert!(offers_ls(&init_params(log, true)));
    let ty: Vec<(Dir, u8)> = log
        .iter()
        .flat_map(|l| types(l).into_iter().map(move |t| (l.dir, t)))
        .collect();
    assert!(
        !ty.iter().any(|(_, t)| *t == ChunkType::DATA.0
            || *t == ChunkType::SACK.0
            || *t == ChunkType::NR_SACK.0),
        "plain DATA or SACK under LS-SCTP"
    );
    assert!(ty.contains(&(Dir::ToServer, LS_DATA)));
    assert!(ty.contains(&(Dir::ToClient, LS_SACK)));
}

/// Only one side offers LS-SCTP (either one): standard SCTP, and no LS chunk ever leaves
/// either side.
#[test]
fn one_side_offering_ls_falls_back_to_standard_sctp() {
    for (client, server, seed) in [
        (ls(), AssociationConfig::default(), 2),
        (AssociationConfig::default(), ls(), 3),
    ] {
        let (client_ls, server_ls) = (client.load_sharing, server.load_sharing);
        let mut conn = connected(client, server, seed);
        exchange(&mut conn, 50, 3000);
        let log = &conn.p.log;
        assert_eq!(offers_ls(&init_params(log, false)), client_ls);
        assert_eq!(offers_ls(&init_params(log, true)), server_ls);
        let ty: BTreeSet<u8> = log.iter().flat_map(types).collect();
        for t in [LS_DATA, LS_SACK, LS_FORWARD_PSN] {
            assert!(!ty.contains(&t), "chunk {t:#x} without LS-SCTP negotiated");
        }
        // DATA, and SACK or NR-SACK (braid's default when both sides list it).
        assert!(ty.contains(&ChunkType::DATA.0));
        assert!(ty.contains(&ChunkType::SACK.0) || ty.contains(&ChunkType::NR_SACK.0));
        // Standard SCTP: new data on the primary path only.
        let data_paths: BTreeSet<usize> = log
            .iter()
            .filter(|l| types(l).contains(&ChunkType::DATA.0))
            .map(|l| l.path)
            .collect();
        assert_eq!(data_paths, BTreeSet::from([0]));
    }
}

/// One side offers LS-SCTP and both run CMT: the association falls back to CMT (DATA on
/// both paths), not to LS.
#[test]
fn ls_offer_without_the_peers_falls_back_to_cmt_when_configured() {
    let cmt = AssociationConfig {
        cmt: Some(CmtConfig::default()),
        ..AssociationConfig::default()
    };
    let client = AssociationConfig {
        load_sharing: true,
        ..cmt.clone()
    };
    let mut conn = connected(client, cmt, 4);
    exchange(&mut conn, 200, 3000);
    let log = &conn.p.log;
    let ty: BTreeSet<u8> = log.iter().flat_map(types).collect();
    for t in [LS_DATA, LS_SACK, LS_FORWARD_PSN] {
        assert!(!ty.contains(&t), "chunk {t:#x} without LS-SCTP negotiated");
    }
    let data_paths: BTreeSet<usize> = log
        .iter()
        .filter(|l| l.dir == Dir::ToServer && !all::<Data>(l).is_empty())
        .map(|l| l.path)
        .collect();
    assert_eq!(data_paths, BTreeSet::from([0, 1]), "CMT uses both paths");
}

/// Neither side offers LS-SCTP: no Load-Sharing-Supported parameter at all.
#[test]
fn load_sharing_supported_is_listed_only_when_configured() {
    let conn = connected(
        AssociationConfig::default(),
        AssociationConfig::default(),
        5,
    );
    assert!(!offers_ls(&init_params(&conn.p.log, false)));
    assert!(!offers_ls(&init_params(&conn.p.log, true)));
}

// ============================================================ transfer, loss, LS-FORWARD-PSN

/// The client's trace events (tracing must have been switched on).
fn client_traces(p: &mut Pair) -> Vec<(Instant, TraceEvent)> {
    let mut v = Vec::new();
    p.client.drain_traces(|_, at, e| v.push((at, e.clone())));
    v
}

/// A bulk transfer over two LS paths, path 1 losing 4 % of what goes to the server: every
/// message arrives intact, once, in order per stream; chunks lost on path 1 are fast
/// retransmitted on path 0; the PSNs those chunks leave behind on path 1 are skipped with
/// LS-FORWARD-PSN, and the receiver's cumulative PSN of path 1 moves past them, so at the
/// end it stands at the last PSN path 1 carried, with no gap.
#[test]
fn a_lossy_path_loses_nothing_and_its_lost_psns_are_forwarded() {
    let mut conn = connected(ls(), ls(), 10);
    conn.p.client.set_tracing(true);
    conn.p.path_wires[1].0 = Wire::hostile(0.04, 0.0, 0.0);
    let plan = Plan {
        streams: 3,
        total_bytes: 3_000_000,
        size: Box::new(|n| 200 + (n as usize * 397) % 2800),
        unordered: false,
    };
    let Conn { p, c, s } = &mut conn;
    let out = transfer(p, *c, *s, &plan, secs(300));
    assert!(out.messages > 1000);
    p.run_for(secs(2)); // the last LS-SACKs and LS-FORWARD-PSNs settle

    // Fast retransmissions of chunks lost on path 1 went to path 0 (§4.3).
    let fr: Vec<(PathId, PathId)> = client_traces(p)
        .into_iter()
        .filter_map(|(_, e)| match e {
            TraceEvent::FastRetransmit {
                lost_on, resent_on, ..
            } => Some((lost_on, resent_on)),
            _ => None,
        })
        .collect();
    let from_1: Vec<_> = fr.iter().filter(|(l, _)| *l == PathId(1)).collect();
    assert!(from_1.len() >= 10, "fast retransmits: {fr:?}");
    assert!(
        from_1.iter().all(|(_, r)| *r == PathId(0)),
        "a chunk lost on path 1 was resent on it: {fr:?}"
    );
    // On the wire: ASNs first sent on path 1 and sent again on path 0.
    let data = client_ls_data(&p.log);
    let mut first: BTreeMap<u32, usize> = BTreeMap::new();
    let mut moved = 0;
    for (_, path, d) in &data {
        assert_eq!(usize::from(d.pid), *path, "PID names the path it went on");
        match first.get(&d.asn) {
            None => {
                first.insert(d.asn, *path);
            }
            Some(&1) if *path == 0 => moved += 1,
            _ => {}
        }
    }
    assert!(moved >= 10, "{moved} chunks moved from path 1 to path 0");

    // LS-FORWARD-PSN for path 1, and the receiver's cumulative PSN follows.
    let forwards: Vec<(Instant, u8, u16)> = p
        .log
        .iter()
        .filter(|l| l.dir == Dir::ToServer)
        .flat_map(|l| {
            all::<LsForwardPsn>(l)
                .into_iter()
                .flat_map(|f| f.entries)
                .map(move |(pid, w)| (l.at, pid, w))
        })
        .collect();
    assert!(
        forwards.iter().any(|(_, pid, _)| *pid == 1),
        "no LS-FORWARD-PSN for path 1: {forwards:?}"
    );
    let sacks = server_ls_sacks(&p.log);
    for (at, pid, w) in &forwards {
        assert!(
            sacks
                .iter()
                .any(|(t, s)| t > at && s.pid == *pid && psn_ge(s.cum_psn, u32::from(*w))),
            "no LS-SACK of path {pid} reached PSN {w} after the LS-FORWARD-PSN at {at:?}"
        );
    }
    for path in [0u8, 1] {
        let last_psn = data
            .iter()
            .filter(|(_, _, d)| d.pid == path)
            .map(|(_, _, d)| d.psn)
            .last()
            .unwrap();
        let (_, last) = sacks.iter().rfind(|(_, s)| s.pid == path).unwrap();
        assert_eq!(
            (last.cum_psn, last.gap_blocks.len()),
            (u32::from(last_psn), 0),
            "path {path}: the receiver's last LS-SACK"
        );
    }
}

/// Both paths lose 3 % of what goes to the server: a chunk lost on either path is fast
/// retransmitted on the other one (§4.3: "retransmits the data chunk(s) on a different path
/// than the one used for the original transmission") unless the path it was lost on still
/// has the larger ssthresh after its cut: braid's retransmission policy is RTX-SSTHRESH
/// (ties go elsewhere), and a path that has just lost the retransmission of one chunk may
/// have the smaller ssthresh of the two.
#[test]
fn a_fast_retransmission_changes_path_unless_its_own_keeps_the_larger_ssthresh() {
    let mut conn = connected(ls(), ls(), 11);
    conn.p.client.set_tracing(true);
    conn.p.path_wires[0].0 = Wire::hostile(0.03, 0.0, 0.0);
    conn.p.path_wires[1].0 = Wire::hostile(0.03, 0.0, 0.0);
    let plan = Plan {
        streams: 2,
        total_bytes: 3_000_000,
        size: Box::new(|n| 500 + (n as usize * 131) % 1500),
        unordered: false,
    };
    let Conn { p, c, s } = &mut conn;
    transfer(p, *c, *s, &plan, secs(300));
    let mut ssthresh = [usize::MAX; 2];
    let mut fr: Vec<(PathId, PathId)> = Vec::new();
    let mut same_with_smaller = Vec::new();
    for (at, e) in client_traces(p) {
        match e {
            TraceEvent::Window {
                path, ssthresh: s, ..
            } => ssthresh[path.0 as usize] = s,
            TraceEvent::FastRetransmit {
                lost_on, resent_on, ..
            } => {
                fr.push((lost_on, resent_on));
                let (me, other) = (lost_on.0 as usize, 1 - lost_on.0 as usize);
                if lost_on == resent_on && ssthresh[me] <= ssthresh[other] {
                    same_with_smaller.push((at, ssthresh));
                }
            }
            _ => {}
        }
    }
    for path in [PathId(0), PathId(1)] {
        assert!(fr.iter().filter(|(l, _)| *l == path).count() >= 5, "{fr:?}");
    }
    let elsewhere = fr.iter().filter(|(l, r)| l != r).count();
    assert!(
        elsewhere * 10 >= fr.len() * 9,
        "{elsewhere} of {} resent elsewhere",
        fr.len()
    );
    assert!(
        same_with_smaller.is_empty(),
        "resent on the path they were lost on though its ssthresh was not the larger: {same_with_smaller:?}"
    );
}

// ======================================================================= path failure

/// A steady sender: one 1000-byte message on stream 0 every 10 ms; the receiver reads and
/// checks everything at once.
struct Steady {
    next: u32,
    expected: u32,
    /// (time, message number) of each delivery.
    delivered: Vec<(Instant, u32)>,
    /// The client's events with the time they were seen.
    events: Vec<(Instant, Event)>,
    last_send: Option<Instant>,
    /// Bytes per message.
    size: usize,
}

impl Steady {
    fn new() -> Self {
        Self {
            next: 0,
            expected: 0,
            delivered: Vec::new(),
            events: Vec::new(),
            last_send: None,
            size: 1000,
        }
    }

    /// Runs `d` of virtual time.
    fn run(&mut self, conn: &mut Conn, d: Duration) {
        let Conn { p, c, s } = conn;
        let end = p.now + d;
        while p.now < end {
            let now = p.now;
            if self
                .last_send
                .is_none_or(|t| now >= t + Duration::from_millis(10))
            {
                let a = p.client.association_mut(*c).unwrap();
                match a.send(
                    now,
                    0,
                    message(0, self.next, self.size),
                    SendOptions::default(),
                ) {
                    Ok(()) => self.next += 1,
                    Err(SendError::WouldBlock) => {}
                    Err(e) => panic!("send: {e}"),
                }
                self.last_send = Some(now);
            }
            while let Some(m) = p.server.association_mut(*s).unwrap().recv() {
                assert_eq!(check(&m.data), (0, self.expected), "order or content");
                self.delivered.push((p.now, self.expected));
                self.expected += 1;
            }
            let seen = p.client_events.len();
            assert!(p.step());
            for (_, e) in &p.client_events[seen..] {
                self.events.push((p.now, e.clone()));
            }
        }
    }

    fn delivered_between(&self, from: Instant, to: Instant) -> usize {
        self.delivered
            .iter()
            .filter(|(t, _)| *t > from && *t <= to)
            .count()
    }

    /// When path `path` entered `state` after `after`, if it did.
    fn path_state_at(&self, path: u16, state: PathState, after: Instant) -> Option<Instant> {
        self.events.iter().find_map(|(t, e)| {
            (*t > after
                && *e
                    == Event::PathState {
                        path: PathId(path),
                        state,
                    })
            .then_some(*t)
        })
    }
}

/// ASNs the client sent on path 0 in [from, to] that it had never sent before (new data),
/// and the number of path-0 packets with LS-DATA in that interval.
fn new_asns_on_path0(log: &[Logged], from: Instant, to: Instant) -> (Vec<u32>, usize) {
    let mut seen = BTreeSet::new();
    let mut fresh = Vec::new();
    let mut packets = 0;
    for l in log.iter().filter(|l| l.dir == Dir::ToServer) {
        let d = all::<LsData>(l);
        let inside = l.at >= from && l.at <= to && l.path == 0 && !d.is_empty();
        packets += usize::from(inside);
        for c in d {
            if seen.insert(c.asn) && inside {
                fresh.push(c.asn);
            }
        }
    }
    (fresh, packets)
}

/// The first T3 expiry on `path` after `after`.
fn first_t3(tr: &[(Instant, TraceEvent)], path: u16, after: Instant) -> Instant {
    tr.iter()
        .find_map(|(t, e)| {
            matches!(e, TraceEvent::T3Expired { path: p, .. } if *p == PathId(path))
                .then_some(*t)
                .filter(|t| *t > after)
        })
        .expect("no T3 expiry on the failed path")
}

/// Path 0 fails for `outage` under steady traffic, then comes back. Returns the connection,
/// the traffic, the client's traces, and (down, first T3 on path 0, up).
fn path0_fails_for(
    cfg: AssociationConfig,
    seed: u64,
    outage: Duration,
) -> (Conn, Steady, Vec<(Instant, TraceEvent)>, [Instant; 3]) {
    let mut conn = connected(cfg.clone(), cfg, seed);
    conn.p.client.set_tracing(true);
    let mut flow = Steady::new();
    flow.run(&mut conn, secs(3));
    let down = conn.p.now;
    conn.p.set_path_down(0, true);
    flow.run(&mut conn, outage);
    let up = conn.p.now;
    conn.p.set_path_down(0, false);
    flow.run(&mut conn, secs(15));
    let tr = client_traces(&mut conn.p);
    let t3 = first_t3(&tr, 0, down);
    (conn, flow, tr, [down, t3, up])
}

/// LS-SCTP timeout handling (§4.3): after a T3 on the failed path 0, the packets that still
/// go there carry only copies of chunks that were already sent (and that also went on path
/// 1), never new data, while delivery goes on over path 1. Once the path is back and a copy
/// is acknowledged, path 0 carries new data again.
#[test]
fn under_ls_timeout_handling_a_failed_path_is_probed_with_copies_only() {
    let cfg = AssociationConfig {
        timeout_handling: TimeoutHandling::Ls,
        path_assignment: PathAssignment::CwndRtt,
        ..ls()
    };
    let (conn, flow, _, [down, t3, up]) = path0_fails_for(cfg, 20, secs(5));
    let log = &conn.p.log;
    let (fresh, packets) = new_asns_on_path0(log, t3, up);
    assert!(fresh.is_empty(), "new data on the failed path: {fresh:?}");
    assert!(packets >= 1, "the failed path was never probed with a copy");
    // Every ASN probing path 0 also went on path 1.
    let on_1: BTreeSet<u32> = client_ls_data(log)
        .into_iter()
        .filter(|(_, p, _)| *p == 1)
        .map(|(_, _, d)| d.asn)
        .collect();
    let mut on_0 = 0;
    for (t, path, d) in client_ls_data(log) {
        if path == 0 && t >= t3 && t <= up {
            on_0 += 1;
            assert!(
                on_1.contains(&d.asn),
                "probe copy of ASN {} never sent on path 1",
                d.asn
            );
        }
    }
    // One copy per probe timeout (RTO 1, 2, 4 s within the 5 s): no retransmission is sent
    // to the path while its probe is unanswered.
    assert!(on_0 <= 4, "{on_0} LS-DATA chunks on the failed path");
    assert!(
        flow.delivered_between(down + secs(2), up) >= 200,
        "delivery stalled while path 0 was down"
    );
    let (fresh_after, _) = new_asns_on_path0(log, up, conn.p.now);
    assert!(
        !fresh_after.is_empty(),
        "path 0 never carried new data again"
    );
    assert!(flow.expected + 10 >= flow.next, "messages left behind");
}

/// The same failure with SCTP's timeout handling (and no PF state): the timed-out path is
/// probed with new data (RFC 9260 §6.3.3), which the LS test above rules out.
#[test]
fn under_sctp_timeout_handling_a_failed_path_gets_new_data() {
    let cfg = AssociationConfig {
        timeout_handling: TimeoutHandling::Sctp,
        pf_max_retrans: None,
        path_assignment: PathAssignment::CwndRtt,
        ..ls()
    };
    let (conn, _, _, [_, t3, up]) = path0_fails_for(cfg, 20, secs(5));
    let (fresh, _) = new_asns_on_path0(&conn.p.log, t3, up);
    assert!(
        !fresh.is_empty(),
        "SCTP probes the timed-out path with new data"
    );
}

/// A message whose fragments are pinned to a path that then times out under LS timeout
/// handling: the path carries no new data until its probe copy is acknowledged, so the rest
/// of the message must be free to go on the other path; otherwise every stream waits for
/// the failed path to become Inactive (Path.Max.Retrans backed-off timeouts).
#[test]
fn a_message_pinned_to_a_path_under_probe_continues_on_another_path() {
    let cfg = AssociationConfig {
        timeout_handling: TimeoutHandling::Ls,
        path_assignment: PathAssignment::CwndRtt,
        ..ls()
    };
    for seed in [22, 23, 24] {
        let mut conn = connected(cfg.clone(), cfg.clone(), seed);
        conn.p.client.set_tracing(true);
        let mut flow = Steady::new();
        flow.size = 20_000;
        flow.run(&mut conn, secs(3));
        let down = conn.p.now;
        conn.p.set_path_down(0, true);
        flow.run(&mut conn, secs(12));
        let up = conn.p.now;
        conn.p.set_path_down(0, false);
        flow.run(&mut conn, secs(5));
        let tr = client_traces(&mut conn.p);
        let t3 = first_t3(&tr, 0, down);
        assert!(
            flow.delivered_between(t3 + secs(1), up) >= 50,
            "seed {seed}: delivery stalled after the T3 on path 0: {} delivered in [{:?}, {:?}]",
            flow.delivered_between(t3 + secs(1), up),
            t3 + secs(1),
            up
        );
    }
}

/// A long failure under LS timeout handling: after Path.Max.Retrans + 1 (here 3)
/// consecutive timeouts of its probe copies path 0 becomes Inactive and carries no data at
/// all; when it is back, a HEARTBEAT-ACK on it makes it Active again.
#[test]
fn a_path_whose_probe_copies_keep_timing_out_becomes_inactive_and_returns_on_heartbeat_ack() {
    let cfg = AssociationConfig {
        timeout_handling: TimeoutHandling::Ls,
        path_assignment: PathAssignment::CwndRtt,
        path_max_retrans: 2,
        hb_interval: Some(secs(1)),
        ..ls()
    };
    let (conn, flow, tr, [down, _, up]) = path0_fails_for(cfg, 21, secs(30));
    let inactive = flow
        .path_state_at(0, PathState::Inactive, down)
        .expect("path 0 never became inactive");
    assert!(inactive < up);
    let t3s = tr
        .iter()
        .filter(|(t, e)| {
            *t > down
                && *t <= inactive
                && matches!(e, TraceEvent::T3Expired { path, .. } if *path == PathId(0))
        })
        .count();
    assert_eq!(t3s, 3, "Path.Max.Retrans + 1 timeouts before Inactive");
    let log = &conn.p.log;
    let (_, packets) = new_asns_on_path0(log, inactive, up);
    assert_eq!(packets, 0, "an inactive path carried data");
    let active = flow
        .path_state_at(0, PathState::Active, up)
        .expect("path 0 never came back");
    let hb_ack = log.iter().any(|l| {
        l.dir == Dir::ToClient
            && l.path == 0
            && l.at > up
            && l.at <= active
            && types(l).contains(&ChunkType::HEARTBEAT_ACK.0)
    });
    assert!(hb_ack, "path 0 came back without a HEARTBEAT-ACK on it");
    assert!(
        flow.delivered_between(down + secs(2), up) >= 2000,
        "delivery stalled while path 0 was down"
    );
    let (fresh_after, _) = new_asns_on_path0(log, active, conn.p.now);
    assert!(
        !fresh_after.is_empty(),
        "path 0 never carried new data again"
    );
}

// ===================================================== Path Monitor and the path cap

/// The first transmission of every ASN the client sent: ASN → (path, chunk).
fn first_transmissions(log: &[Logged]) -> BTreeMap<u32, (usize, LsData)> {
    let mut first = BTreeMap::new();
    for (_, path, d) in client_ls_data(log) {
        first.entry(d.asn).or_insert((path, d));
    }
    first
}

fn bulk(conn: &mut Conn, total: usize, size: usize) {
    let plan = Plan {
        streams: 2,
        total_bytes: total,
        size: Box::new(move |_| size),
        unordered: false,
    };
    let Conn { p, c, s } = conn;
    transfer(p, *c, *s, &plan, secs(300));
}

fn went_inactive(p: &Pair, path: u16) -> bool {
    p.client_events.iter().any(|(_, e)| {
        *e == Event::PathState {
            path: PathId(path),
            state: PathState::Inactive,
        }
    })
}

/// Path Monitor (§4.4): path 1 loses 20 % of what goes to the server, more than the 10 %
/// threshold: it leaves the active list (PathState::Inactive) while path 0 stays active,
/// and the transfer completes intact. Without a threshold the same losses keep it active.
#[test]
fn a_path_losing_more_than_the_threshold_leaves_the_active_list() {
    for (threshold, seed) in [(Some(0.1), 30), (None, 30)] {
        let cfg = AssociationConfig {
            path_loss_threshold: threshold,
            ..ls()
        };
        let mut conn = connected(cfg.clone(), cfg, seed);
        conn.p.path_wires[1].0 = Wire::hostile(0.2, 0.0, 0.0);
        bulk(&mut conn, 2_000_000, 1200);
        assert_eq!(
            went_inactive(&conn.p, 1),
            threshold.is_some(),
            "threshold {threshold:?}: {:?}",
            conn.p.client_events
        );
        assert!(!went_inactive(&conn.p, 0), "the clean path left the list");
    }
}

/// max_data_paths = 1 with two usable paths: new data goes on one path only (retransmissions
/// may use the other).
#[test]
fn max_data_paths_one_puts_new_data_on_a_single_path() {
    let cfg = AssociationConfig {
        max_data_paths: Some(1),
        ..ls()
    };
    let mut conn = connected(cfg.clone(), cfg, 31);
    bulk(&mut conn, 1_000_000, 1200);
    let paths: BTreeSet<usize> = first_transmissions(&conn.p.log)
        .values()
        .map(|(p, _)| *p)
        .collect();
    assert_eq!(paths.len(), 1, "new data on paths {paths:?}");
    // Without the cap both paths carry new data.
    let mut conn = connected(ls(), ls(), 31);
    bulk(&mut conn, 1_000_000, 1200);
    let paths: BTreeSet<usize> = first_transmissions(&conn.p.log)
        .values()
        .map(|(p, _)| *p)
        .collect();
    assert_eq!(paths, BTreeSet::from([0, 1]));
}

// ================================================================== path assignment

/// Cwnd/RTT assignment (§4.3, §4.5): every fragment of a 5000-byte message (four chunks)
/// goes on the path its first fragment went on, and two equal paths carry about half the
/// bytes each.
#[test]
fn cwnd_rtt_keeps_a_messages_fragments_on_one_path_and_splits_evenly() {
    let cfg = AssociationConfig {
        path_assignment: PathAssignment::CwndRtt,
        ..ls()
    };
    let mut conn = connected(cfg.clone(), cfg, 40);
    bulk(&mut conn, 2_000_000, 5000);
    let first = first_transmissions(&conn.p.log);
    // Group fragments by message: (stream, SSN).
    let mut msg_paths: BTreeMap<(u16, u16), BTreeSet<usize>> = BTreeMap::new();
    let mut bytes = [0usize; 2];
    for (path, d) in first.values() {
        msg_paths
            .entry((d.stream_id, d.ssn))
            .or_default()
            .insert(*path);
        bytes[*path] += d.user_data.len();
    }
    assert!(msg_paths.len() >= 300, "{} messages", msg_paths.len());
    let split: Vec<_> = msg_paths.iter().filter(|(_, p)| p.len() > 1).collect();
    assert!(split.is_empty(), "messages split over paths: {split:?}");
    let share = bytes[0] as f64 / (bytes[0] + bytes[1]) as f64;
    assert!(
        (0.4..=0.6).contains(&share),
        "path 0 carried {share:.2} of the bytes"
    );
}

/// LS-DATA names its path in 4 bits: an association with more than 16 paths (five
/// addresses a side, every pair a path: 25) must not put data on a path whose id does not
/// fit, or that path's PSNs are taken for those of the path its low bits name, and an
/// LS-SACK for that path acknowledges chunks that never arrived. Every path lossy: the
/// transfer completes intact and paths 16.. carry no data.
#[test]
fn more_than_16_paths_never_alias_a_path_id() {
    let (mut p, c, s) = all_pairs_of_five_addresses(ls(), 50, 0.05);
    let plan = Plan {
        streams: 2,
        total_bytes: 2_000_000,
        size: Box::new(|_| 1200),
        unordered: false,
    };
    transfer(&mut p, c, s, &plan, secs(300));
    let paths = p.client.association(c).unwrap().paths();
    let beyond: Vec<_> = paths
        .iter()
        .filter(|x| x.id.0 >= 16 && x.stats.data_chunks_sent > 0)
        .map(|x| x.id)
        .collect();
    assert!(beyond.is_empty(), "LS-DATA on paths {beyond:?}");
}

/// Sixteen path ids in use at a 1200-byte PMTU with 15 % loss on every path: one LS-SACK per
/// path id goes out with every SACK, and the transfer completes intact. (The size cut that
/// keeps the set within one packet is checked on its own in `path::psn`'s unit tests; this
/// loss does not leave enough holes per path to need it.)
#[test]
fn sixteen_lossy_paths_complete_a_transfer() {
    let cfg = AssociationConfig {
        path_mtu: 1200,
        ..ls()
    };
    let (mut p, c, s) = all_pairs_of_five_addresses(cfg, 51, 0.15);
    let plan = Plan {
        streams: 2,
        total_bytes: 1_500_000,
        size: Box::new(|_| 1000),
        unordered: false,
    };
    transfer(&mut p, c, s, &plan, secs(300));
    let used = p
        .client
        .association(c)
        .unwrap()
        .paths()
        .iter()
        .filter(|x| x.stats.data_chunks_sent > 0)
        .count();
    assert!(used >= 8, "only {used} paths carried data");
}

/// Five addresses a side paired every way (25 paths, all confirmed), then `loss` on every
/// path's forward wire.
fn all_pairs_of_five_addresses(
    cfg: AssociationConfig,
    seed: u64,
    loss: f64,
) -> (Pair, braid_proto::AssocId, braid_proto::AssocId) {
    let cfg = AssociationConfig {
        path_pairing: braid_proto::PathPairing::All,
        hb_max_burst: 32,
        ..cfg
    };
    let mut p = Pair::multihomed(cfg, 5, seed);
    let (c, s) = p.connect();
    let deadline = p.now + secs(60);
    let up = p.run_until(deadline, |p| {
        p.client
            .association(c)
            .unwrap()
            .paths()
            .iter()
            .filter(|x| x.confirmed && x.state == PathState::Active)
            .count()
            == 25
    });
    assert!(up, "paths: {:?}", p.client.association(c).unwrap().paths());
    for w in &mut p.path_wires {
        w.0 = Wire::hostile(loss, 0.0, 0.0);
    }
    (p, c, s)
}
