//! PLPMTUD (RFC 8899; NEAT D3.1 §2.1.3) played packet by packet against a scripted peer,
//! as the NEAT report's Listing 1 does with packetdrill.
#![allow(clippy::unwrap_used)]

mod common;

use braid_proto::{EndpointConfig, IcmpError, PmtuState};
use braid_wire::chunk::{CookieAck, CookieEcho, Data, Heartbeat, HeartbeatAck, Pad};
use common::script::{Script, ms, quiet_config, sack};

/// IPv4 + UDP headers in front of every SCTP packet of the script (10.0.0.x, encapsulated).
const IP_UDP: usize = 28;

fn client() -> Script {
    let mut assoc = quiet_config();
    assoc.plpmtud = true;
    Script::new(
        EndpointConfig {
            association: assoc,
            ..EndpointConfig::default()
        },
        81,
    )
}

/// Active open; unlike `Script::establish_active`, the first probe may follow at once.
fn establish(s: &mut Script) {
    s.connect();
    let ack = s.init_ack_chunk(vec![]);
    s.send_chunks(vec![ack.into()]);
    let _: CookieEcho = s.expect_to_peer();
    s.send_chunks(vec![CookieAck.into()]);
}

/// The next packet must be a probe: a lone HEARTBEAT + PAD filling exactly `pmtu` bytes of
/// IP packet. Returns its HEARTBEAT for the answer.
fn expect_probe(s: &mut Script, pmtu: usize) -> Heartbeat {
    let o = s.expect();
    assert_eq!(o.pkt.chunks.len(), 2, "probe {}", o.describe());
    assert!(o.has::<Heartbeat>() && o.has::<Pad>(), "{}", o.describe());
    assert_eq!(
        o.bytes.len() + IP_UDP,
        pmtu,
        "probe size of {}",
        o.describe()
    );
    o.get::<Heartbeat>().unwrap()
}

fn ack(s: &mut Script, hb: Heartbeat) {
    s.send_chunks(vec![HeartbeatAck { params: hb.params }.into()]);
}

#[test]
fn listing_1_probes_1200_1492_1500_then_follows_an_icmp_to_1496_and_fragments_for_it() {
    let mut s = client();
    establish(&mut s);
    // Probing starts right after the handshake with the base MTU.
    let hb = expect_probe(&mut s, 1200);
    ack(&mut s, hb);
    let hb = expect_probe(&mut s, 1492);
    ack(&mut s, hb);
    assert_eq!(s.assoc().paths()[0].mtu, 1492 - IP_UDP);
    expect_probe(&mut s, 1500);
    let quoted = s.last.as_ref().unwrap().bytes.clone();
    // A router reports an MTU of 1496 for the 1500-byte probe.
    s.advance(ms(500));
    let (now, local, remote) = (s.now, s.local, s.remote);
    s.ep.handle_icmp(now, local, remote, &quoted, IcmpError::TooBig { mtu: 1496 });
    s.flush();
    let hb = expect_probe(&mut s, 1496);
    ack(&mut s, hb);
    let path = &s.assoc().paths()[0];
    assert_eq!(
        (path.pmtu_state, path.mtu),
        (Some(PmtuState::Done), 1496 - IP_UDP)
    );
    // A 2000-byte message leaves as two DATA chunks, the first filling a 1496-byte packet.
    s.advance(ms(200));
    s.app_send(0, &[0x5a; 2000]);
    let first = s.expect();
    let second = s.expect();
    assert_eq!(first.bytes.len() + IP_UDP, 1496, "{}", first.describe());
    let (a, b) = (first.get::<Data>().unwrap(), second.get::<Data>().unwrap());
    assert!(a.beginning && !a.ending && !b.beginning && b.ending);
    assert_eq!(a.user_data.len() + b.user_data.len(), 2000);
    assert_eq!(a.user_data.len(), 1496 - IP_UDP - 12 - 16);
    s.send_chunks(vec![sack(b.tsn, 1 << 20, &[])]);
    s.expect_nothing_now();
}

#[test]
fn a_probe_lost_max_probes_times_ends_the_search_below_it() {
    let mut s = client();
    establish(&mut s);
    let hb = expect_probe(&mut s, 1200);
    ack(&mut s, hb);
    // The 1492-byte probe never arrives (no ICMP either): sent three times, one RTO apart.
    expect_probe(&mut s, 1492);
    let t0 = s.t();
    expect_probe(&mut s, 1492);
    expect_probe(&mut s, 1492);
    assert!(s.t() > t0, "retries wait for the probe timer");
    // Then the search bisects below it and packets stay at the confirmed size meanwhile.
    let next = s.expect();
    assert!(next.bytes.len() + IP_UDP < 1492, "{}", next.describe());
    assert_eq!(s.assoc().paths()[0].mtu, 1200 - IP_UDP);
}

#[test]
fn a_forged_probe_ack_does_not_raise_the_pmtu() {
    let mut s = client();
    establish(&mut s);
    let mut hb = expect_probe(&mut s, 1200);
    // Same layout, wrong nonce: ignored, and the probe is sent again at its timer.
    if let braid_wire::Param::HeartbeatInfo(info) = &mut hb.params[0] {
        let mut v = info.to_vec();
        v[0] ^= 0xff;
        *info = v.into();
    }
    ack(&mut s, hb);
    assert_eq!(s.assoc().paths()[0].pmtu_state, Some(PmtuState::Base));
    expect_probe(&mut s, 1200);
}

#[test]
fn a_probe_acknowledged_80_ms_later_is_an_rtt_sample() {
    let mut s = client();
    establish(&mut s);
    let before = s.assoc().paths()[0].srtt;
    let hb = expect_probe(&mut s, 1200);
    s.advance(ms(80));
    ack(&mut s, hb);
    let after = s.assoc().paths()[0].srtt.unwrap();
    // RFC 6298: the first sample is the SRTT, a later one moves it by 1/8 of the difference.
    let want = match before {
        None => ms(80),
        Some(b) => b * 7 / 8 + ms(80) / 8,
    };
    assert_eq!(after, want, "SRTT before the probe: {before:?}");
}
