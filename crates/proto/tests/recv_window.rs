//! What the receiver advertises, it takes (RFC 9260 §6.2, §6.2.1): a sender that counts
//! payload only, as the RFC's sender does, and fills the advertised window with chunks held
//! behind a gap never sees one of them dropped.

#![allow(clippy::unwrap_used)]

mod common;

use braid_proto::AssociationConfig;
use braid_wire::chunk::Sack;
use braid_wire::{Chunk, Packet};
use common::script::{Script, data, quiet_config};

const WINDOW: usize = 64 * 1024;

/// A server with a fixed 64 KiB receive buffer (no autotuning), associated.
fn server(seed: u64) -> Script {
    let cfg = AssociationConfig {
        recv_buffer: WINDOW,
        recv_buffer_max: WINDOW,
        ..quiet_config()
    };
    let mut s = Script::server_with(cfg, seed);
    s.establish_passive();
    s
}

/// One whole message of `len` bytes on stream 0, with SSN `ssn`, in a DATA chunk.
fn chunk(tsn: u32, ssn: u16, len: usize) -> Chunk {
    data(tsn, 0, ssn, &vec![0x5a; len])
}

/// The gap-acked range right above the cumulative ack of `sack`: (cum, last TSN acked).
fn acked_through(sack: &Sack) -> (u32, u32) {
    let end = sack.gap_blocks.first().map_or(0, |b| u32::from(b.end));
    (sack.cum_tsn_ack, sack.cum_tsn_ack.wrapping_add(end))
}

/// The peer sends TSN 1, 2, … of `len` bytes each (TSN 0 is the gap in front of them), one
/// chunk per packet, while the last SACK's a_rwnd minus nothing in flight has room for one
/// more; it stops at the first chunk the SACK does not acknowledge. Returns the chunks sent
/// and the last SACK.
fn fill_behind_a_gap(s: &mut Script, len: usize, mut a_rwnd: usize) -> (u32, Sack) {
    let mut sent = 0u32;
    let mut last = None;
    while a_rwnd >= len {
        sent += 1;
        let pkt: Packet = s.to_ep(vec![chunk(s.peer_tsn(sent), sent as u16, len)]);
        s.inject(&pkt);
        // A chunk behind a gap is acknowledged at once (§6.7).
        let sack: Sack = s.expect_chunk();
        a_rwnd = sack.a_rwnd as usize;
        let dropped = acked_through(&sack).1 != s.peer_tsn(sent);
        last = Some(sack);
        if dropped {
            break;
        }
    }
    (sent, last.expect("the window took no chunk"))
}

fn fills_the_advertised_window(len: usize, seed: u64) {
    let mut s = server(seed);
    let (sent, sack) = fill_behind_a_gap(&mut s, len, WINDOW);
    // The buffer is full once payload and the 64-byte charge per held chunk fill it.
    let charged = (sent as usize + 1) * (len + 64);
    assert!(
        charged > WINDOW,
        "the window closed early: {sent} chunks of {len} B in a {WINDOW} B buffer"
    );
    let (cum, through) = acked_through(&sack);
    assert_eq!(cum, s.peer_tsn(0).wrapping_sub(1), "TSN 0 is still missing");
    assert_eq!(
        through,
        s.peer_tsn(sent),
        "a chunk within the advertised window was dropped"
    );
    assert_eq!(s.assoc().stats().recv_window_drops, 0);
    // The hole filled, everything is delivered in order.
    let pkt = s.to_ep(vec![chunk(s.peer_tsn(0), 0, len)]);
    s.inject(&pkt);
    let got = s.app_recv_all();
    assert_eq!(got.len(), sent as usize + 1);
}

#[test]
fn full_sized_chunks_fill_exactly_the_advertised_window_behind_a_gap() {
    fills_the_advertised_window(1000, 61);
}

#[test]
fn small_chunks_fill_exactly_the_advertised_window_behind_a_gap() {
    fills_the_advertised_window(100, 62);
}

/// The peer sends TSN 1..=n of `len` bytes each behind the missing TSN 0, ignoring every
/// SACK; returns the last TSN the last SACK acknowledged.
fn burst_behind_a_gap(s: &mut Script, n: u32, len: usize) -> u32 {
    for i in 1..=n {
        let pkt = s.to_ep(vec![chunk(s.peer_tsn(i), i as u16, len)]);
        s.inject(&pkt);
    }
    let sacks: Vec<Sack> = s.take_sent().iter().flat_map(|o| o.all::<Sack>()).collect();
    acked_through(sacks.last().expect("no SACK")).1
}

/// The sender ignores the window's shrinking and sends its initial a_rwnd in one go, as a
/// sender whose SACKs were all lost would: every one of those chunks fits.
#[test]
fn a_burst_of_the_whole_initial_window_is_taken_whole() {
    let mut s = server(63);
    let len = 1000;
    let n = (WINDOW / len) as u32;
    let through = burst_behind_a_gap(&mut s, n, len);
    assert_eq!(
        through,
        s.peer_tsn(n),
        "the initial window was not taken whole"
    );
    assert_eq!(s.assoc().stats().recv_window_drops, 0);
}

/// Past the advertised window the receiver may drop (a sender breaking the window), and a
/// drop there is not counted as the receiver's breach.
#[test]
fn chunks_past_the_advertised_window_are_dropped_but_not_counted_as_its_breach() {
    let mut s = server(64);
    let len = 1000;
    // Twice the window, ignoring every SACK.
    let n = (2 * WINDOW / len) as u32;
    let through = burst_behind_a_gap(&mut s, n, len);
    assert!(
        through != s.peer_tsn(n),
        "the receiver took twice its buffer"
    );
    assert_eq!(s.assoc().stats().recv_window_drops, 0);
}

/// With a 64 MiB buffer the cap on held chunks (30,000) comes before the bytes run out: the
/// advertised window closes with it instead of promising room the receiver will not give.
#[test]
fn the_window_closes_at_the_held_chunk_cap_instead_of_dropping_within_it() {
    let big = 64 << 20;
    let cfg = AssociationConfig {
        recv_buffer: big,
        recv_buffer_max: big,
        ..quiet_config()
    };
    let mut s = Script::server_with(cfg, 65);
    s.establish_passive();
    let len = 1000;
    let (sent, sack) = fill_behind_a_gap(&mut s, len, big);
    assert_eq!(
        acked_through(&sack).1,
        s.peer_tsn(sent),
        "a chunk was dropped"
    );
    assert!(sent > 29_000, "the window closed after {sent} chunks");
    assert!(
        (sack.a_rwnd as usize) < len,
        "still advertising {} B with {sent} chunks held",
        sack.a_rwnd
    );
    assert_eq!(s.assoc().stats().recv_window_drops, 0);
}

/// The odd TSNs fill the buffer behind a missing TSN 0, then retransmitted even TSNs (hole
/// fillers, not the first hole) take the room left for fillers until the receiver refuses
/// them. TSN 0, the chunk the cumulative ack waits for, must still be taken: refused, it
/// would hold everything behind it for good (braid does not renege to make room).
#[test]
fn the_chunk_the_cumulative_ack_waits_for_is_taken_when_fillers_took_the_room() {
    let mut s = server(66);
    let len = 1000;
    let mut tsn = 1;
    loop {
        let pkt = s.to_ep(vec![chunk(s.peer_tsn(tsn), tsn as u16, len)]);
        s.inject(&pkt);
        let sack: Sack = s.expect_chunk();
        if sack.a_rwnd < len as u32 {
            break;
        }
        tsn += 2;
    }
    let highest = tsn;
    let mut refused = false;
    for even in (2..highest).step_by(2) {
        let pkt = s.to_ep(vec![chunk(s.peer_tsn(even), even as u16, len)]);
        s.inject(&pkt);
        let sack: Sack = s.expect_chunk();
        let acked = sack.gap_blocks.iter().any(|b| {
            let (lo, hi) = (u32::from(b.start), u32::from(b.end));
            // Offsets from the cumulative ack (peer TSN 0 - 1): TSN `even` is offset even + 1.
            (lo..=hi).contains(&(even + 1))
        });
        if !acked {
            refused = true;
            break;
        }
    }
    assert!(
        refused,
        "the fillers never ran out of room: the test proves nothing"
    );
    let pkt = s.to_ep(vec![chunk(s.peer_tsn(0), 0, len)]);
    s.inject(&pkt);
    let sack: Sack = s.expect_chunk();
    assert_ne!(
        sack.cum_tsn_ack,
        s.peer_tsn(0).wrapping_sub(1),
        "the chunk at the cumulative ack was refused: the association is stuck"
    );
    assert!(!s.app_recv_all().is_empty(), "nothing delivered");
}
