//! Partial reliability (RFC 3758) as a standard receiver sees it: a message abandoned after
//! some of its fragments left is abandoned whole, with DATA and with I-DATA.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use braid_proto::{AssociationConfig, SendOptions};
use braid_wire::Param;
use braid_wire::chunk::{ChunkType, Data, ForwardTsn, IData, IForwardTsn};
use bytes::Bytes;
use common::script::{Script, quiet_config, sack, secs};

/// A peer that supports PR-SCTP (and I-DATA when `idata`).
fn peer_params(idata: bool) -> Vec<Param> {
    let mut ext = vec![ChunkType::FORWARD_TSN.0];
    if idata {
        ext.extend([ChunkType::I_DATA.0, ChunkType::I_FORWARD_TSN.0]);
    }
    vec![Param::ForwardTsnSupported, Param::SupportedExtensions(ext)]
}

/// (TSN, stream, message id, beginning) of every DATA or I-DATA chunk in `outs`.
fn user_chunks(outs: &[common::script::Out]) -> Vec<(u32, u16, u32, bool)> {
    let mut v = Vec::new();
    for o in outs {
        v.extend(
            o.all::<Data>()
                .into_iter()
                .map(|d| (d.tsn, d.stream_id, u32::from(d.ssn), d.beginning)),
        );
        v.extend(
            o.all::<IData>()
                .into_iter()
                .map(|d| (d.tsn, d.stream_id, d.mid, d.beginning)),
        );
    }
    v
}

/// The skip point of the first FORWARD-TSN or I-FORWARD-TSN in `outs`.
fn first_forward(outs: &[common::script::Out]) -> Option<u32> {
    outs.iter().find_map(|o| {
        o.get::<ForwardTsn>()
            .map(|f| f.new_cum_tsn)
            .or_else(|| o.get::<IForwardTsn>().map(|f| f.new_cum_tsn))
    })
}

/// A 20 kB message with a 100 ms lifetime: the initial cwnd lets a few fragments out, none
/// is acknowledged, T3 finds it expired. The rest of it must never be sent, and the next
/// message follows the skipped TSNs directly.
fn abandoned_part_way(idata: bool) {
    let cfg = AssociationConfig {
        idata,
        ..quiet_config()
    };
    let mut s = Script::server_with(cfg, 41);
    s.init_params = peer_params(idata);
    s.establish_passive();
    let now = s.now;
    let short = SendOptions {
        lifetime: Some(Duration::from_millis(100)),
        ..SendOptions::default()
    };
    s.assoc_mut()
        .send(now, 0, Bytes::from(vec![7u8; 20_000]), short)
        .unwrap();
    s.flush();
    let first = user_chunks(&s.take_sent());
    let sent = first.len() as u32;
    assert!(
        (1..14).contains(&sent),
        "expected the initial cwnd to stop the message part-way, sent {sent} fragments"
    );
    let outs = s.collect_until(s.t() + secs(5));
    let skip = first_forward(&outs).expect("no FORWARD-TSN after the lifetime ran out");
    assert_eq!(
        skip,
        s.ep_tsn(sent - 1),
        "the skip covers every fragment sent"
    );
    let more = user_chunks(&outs);
    assert!(
        more.is_empty(),
        "fragments of the abandoned message sent after it was abandoned (RFC 3758 §3.5 A3): {more:?}"
    );
    assert_eq!(s.assoc().stats().abandoned_messages, 1);
    // The peer takes the skip; the next message gets the next TSN and the next message id.
    s.send_chunks(vec![sack(skip, 1 << 20, &[])]);
    s.app_send(0, b"next");
    let next = user_chunks(&s.take_sent());
    assert_eq!(next, vec![(s.ep_tsn(sent), 0, 1, true)]);
    assert_eq!(
        s.assoc().send_buffered(),
        4,
        "the rest left the send buffer"
    );
}

#[test]
fn a_message_abandoned_part_way_sends_none_of_its_remaining_data_fragments() {
    abandoned_part_way(false);
}

#[test]
fn a_message_abandoned_part_way_sends_none_of_its_remaining_i_data_fragments() {
    abandoned_part_way(true);
}
