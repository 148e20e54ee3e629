//! Scripts against a multi-homed peer: the endpoint under test has one address
//! (10.0.0.2), the test plays a peer with two, its primary 10.0.0.1 (path A, the
//! association's primary path) and an alternate 10.0.0.5 (path B). Each path is one
//! (local, remote) pair, so "the packet left on path B" is "it went to 10.0.0.5".
#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::missing_panics_doc
)]

use std::net::SocketAddr;

use braid_proto::{AssociationConfig, PathInfo, PathState};
use braid_wire::chunk::{CookieEcho, GapAckBlock, Heartbeat, HeartbeatAck, InitAck, Sack};
use braid_wire::{Chunk, Param, RawChunk};

use super::script::{Out, Script, ms};

/// The peer's alternate address (path B).
pub const ALT: &str = "10.0.0.5:9899";

/// An association to a peer whose INIT lists `ALT` besides the address it sends from, with
/// both addresses confirmed by HEARTBEAT (RFC 9260 §5.4) and both paths active. Returns
/// the script and the alternate address; the events of the set-up are cleared.
pub fn two_confirmed_paths(cfg: AssociationConfig, seed: u64) -> (Script, SocketAddr) {
    let mut s = Script::server_with(cfg, seed);
    let alt: SocketAddr = ALT.parse().unwrap();
    establish_multihomed(&mut s, &[alt.ip()]);
    for _ in 0..50 {
        let outs = s.collect_until(s.t() + ms(100));
        answer_heartbeats(&mut s, &outs);
    }
    let paths = s.assoc().paths();
    assert!(
        paths.len() == 2
            && paths
                .iter()
                .all(|p| p.state == PathState::Active && p.confirmed),
        "{paths:?}"
    );
    assert_eq!(paths[1].remote, alt, "path B is the alternate address");
    s.events.clear();
    (s, alt)
}

/// An established association to a peer whose INIT listed `extra` addresses besides the
/// one it sent from. Heartbeats to the extra addresses are not answered.
pub fn establish_multihomed(s: &mut Script, extra: &[std::net::IpAddr]) {
    s.other_peer_ips.extend_from_slice(extra);
    let params = extra
        .iter()
        .map(|a| Param::from_address(*a))
        .chain(s.init_params.iter().cloned())
        .collect();
    let p = s.init_packet(s.init_chunk(params));
    s.inject(&p);
    let ack: InitAck = s.expect_chunk();
    s.ep_tag = ack.initiate_tag;
    s.ep_initial_tsn = ack.initial_tsn;
    let cookie = ack.state_cookie().unwrap().clone();
    s.send_chunks(vec![CookieEcho { cookie }.into()]);
    s.assoc = s.ep.accept();
    assert!(s.assoc.is_some(), "no association accepted");
}

/// Answers every HEARTBEAT among `outs` from the address it went to.
pub fn answer_heartbeats(s: &mut Script, outs: &[Out]) {
    for o in outs {
        if let Some(hb) = o.get::<Heartbeat>() {
            let p = s.to_ep(vec![HeartbeatAck { params: hb.params }.into()]);
            s.inject_from(o.remote, &p);
        }
    }
}

/// Path A (the primary) and path B, as the application sees them now.
pub fn paths(s: &Script) -> (PathInfo, PathInfo) {
    let p = s.assoc().paths();
    (p[0].clone(), p[1].clone())
}

/// TSNs of the DATA chunks among `outs` that went to `to`, in order.
pub fn tsns_to(outs: &[Out], to: SocketAddr) -> Vec<u32> {
    outs.iter()
        .filter(|o| o.remote == to)
        .flat_map(Out::tsns)
        .collect()
}

/// Gap ack blocks (offsets from `cum`, RFC 9260 §3.3.4) covering exactly `tsns`.
pub fn gap_blocks(cum: u32, tsns: &[u32]) -> Vec<(u16, u16)> {
    let mut offs: Vec<u16> = tsns
        .iter()
        .map(|t| u16::try_from(t.wrapping_sub(cum)).unwrap())
        .collect();
    offs.sort_unstable();
    offs.dedup();
    let mut v: Vec<(u16, u16)> = Vec::new();
    for o in offs {
        match v.last_mut() {
            Some((_, e)) if *e + 1 == o => *e = o,
            _ => v.push((o, o)),
        }
    }
    v
}

/// A SACK acknowledging everything up to `cum` and exactly the TSNs `acked` above it,
/// whose two low flag bits carry `dac` (the number of packets it acknowledges, the DAC
/// extension of Iyengar et al. §3.3; RFC 9260 leaves these bits to be ignored).
pub fn sack_dac(cum: u32, a_rwnd: u32, acked: &[u32], dac: u8) -> Chunk {
    let body = Sack {
        cum_tsn_ack: cum,
        a_rwnd,
        gap_blocks: gap_blocks(cum, acked)
            .into_iter()
            .map(|(start, end)| GapAckBlock { start, end })
            .collect(),
        dup_tsns: vec![],
    };
    let mut raw = RawChunk::from_body(&body);
    raw.flags = dac & 3;
    raw.into()
}
