//! Where replies go when the peer has two addresses and one of them stopped carrying its
//! packets (RFC 9260 §6.4: a reply SHOULD go to the source of the chunk it answers): the
//! receiver has sent nothing on the cut path, so it still counts it as active.
#![allow(clippy::unwrap_used)]

mod common;

use braid_proto::{AssociationConfig, CmtConfig};
use braid_wire::chunk::{Sack, Shutdown, ShutdownAck};
use common::multihome::two_confirmed_paths;
use common::script::{Out, data, ms, quiet_config};

/// Under CMT, DATA comes only over path B (A was cut) until the small receive window is
/// full; the application then reads it all. The window-update SACK goes to B, where DATA
/// last came from, not to path A, which is as quick on paper.
#[test]
fn a_window_update_sack_goes_where_data_last_came_from() {
    let cfg = AssociationConfig {
        cmt: Some(CmtConfig::default()),
        recv_buffer: 16 * 1024,
        recv_buffer_max: 16 * 1024,
        ..quiet_config()
    };
    let (mut s, b) = two_confirmed_paths(cfg, 2601);
    let a = s.remote;
    for i in 0..12u32 {
        let p = s.to_ep(vec![data(s.peer_tsn(i), 0, i as u16, &[7u8; 1200])]);
        s.inject_from(b, &p);
    }
    let acks = s.collect_until(s.t() + ms(300));
    assert!(
        acks.iter()
            .filter(|o| o.has::<Sack>())
            .all(|o| o.remote == b),
        "the SACKs of B's DATA went elsewhere"
    );
    assert_eq!(s.app_recv_all().len(), 12);
    let outs = s.collect_until(s.t() + ms(300));
    let updates: Vec<&Out> = outs.iter().filter(|o| o.has::<Sack>()).collect();
    assert!(!updates.is_empty(), "no window update after the read");
    for o in updates {
        assert_eq!(o.remote, b, "window update to {} (path A is {a})", o.remote);
    }
}

/// The peer's SHUTDOWN comes over path B (its primary, A, was cut): the SHUTDOWN-ACK goes
/// back to B at once, not first to A and to B only after T2.
#[test]
fn the_shutdown_ack_goes_to_where_the_shutdown_came_from() {
    let (mut s, b) = two_confirmed_paths(quiet_config(), 2602);
    let p = s.to_ep(vec![
        Shutdown {
            cum_tsn_ack: s.ep_tsn(0).wrapping_sub(1),
        }
        .into(),
    ]);
    s.inject_from(b, &p);
    let o = s.expect();
    assert!(
        o.has::<ShutdownAck>(),
        "expected SHUTDOWN-ACK: {}",
        o.describe()
    );
    assert_eq!(
        o.remote, b,
        "SHUTDOWN-ACK not sent to the SHUTDOWN's source"
    );
}
