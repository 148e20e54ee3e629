//! Tests of I-DATA reassembly: every arrival order of interleaved fragments gives every
//! message once, intact, ordered ones in MID order, and leaves nothing held.

use proptest::prelude::*;

use super::*;

/// Fragment `fsn` of `count` of message `mid` on `stream`, its payload the message's text.
fn ifrag(stream: u16, mid: u32, fsn: u32, count: u32, unordered: bool) -> IFragment {
    IFragment {
        stream_id: stream,
        mid,
        fsn,
        ppid: 51,
        unordered,
        beginning: fsn == 0,
        ending: fsn + 1 == count,
        data: Bytes::from(format!("{stream}.{mid}.{fsn};")),
    }
}

fn text(stream: u16, mid: u32, count: u32) -> String {
    (0..count).map(|f| format!("{stream}.{mid}.{f};")).collect()
}

proptest! {
    #[test]
    fn any_arrival_order_of_interleaved_fragments_reassembles_every_message(
        // Per stream: fragment counts of its messages (MIDs 0, 1, ...).
        streams in prop::collection::vec(prop::collection::vec(1u32..5, 1..4), 1..4),
        unordered in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let mut r = Reassembly::new(4);
        r.set_interleaved(true);
        let mut all = Vec::new();
        for (s, msgs) in streams.iter().enumerate() {
            for (mid, &n) in msgs.iter().enumerate() {
                for f in 0..n {
                    all.push(ifrag(s as u16, mid as u32, f, n, unordered));
                }
            }
        }
        // A seeded shuffle: fragments of every message interleave arbitrarily.
        let mut x = seed | 1;
        for i in (1..all.len()).rev() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            all.swap(i, (x % (i as u64 + 1)) as usize);
        }
        for f in all {
            r.insert_interleaved(f, false);
        }
        let mut got: Vec<(u16, String)> = Vec::new();
        while let Some(m) = r.pop() {
            got.push((m.stream_id, String::from_utf8_lossy(&m.data).into_owned()));
        }
        for (s, msgs) in streams.iter().enumerate() {
            let mine: Vec<&String> =
                got.iter().filter(|(st, _)| *st == s as u16).map(|(_, t)| t).collect();
            let mut want: Vec<String> = msgs
                .iter()
                .enumerate()
                .map(|(mid, &n)| text(s as u16, mid as u32, n))
                .collect();
            let mut have: Vec<String> = mine.into_iter().cloned().collect();
            if unordered {
                want.sort();
                have.sort();
            }
            prop_assert_eq!(have, want);
        }
        prop_assert_eq!(r.buffered_bytes(), 0);
        prop_assert_eq!(r.held_chunks(), 0);
    }
}

#[test]
fn skipped_and_dropped_fragments_release_their_bytes() {
    let mut r = Reassembly::new(2);
    r.set_interleaved(true);
    r.insert_interleaved(ifrag(0, 0, 0, 3, false), false);
    r.insert_interleaved(ifrag(0, 1, 0, 1, false), false);
    r.insert_interleaved(ifrag(1, 0, 1, 2, true), false);
    assert!(r.buffered_bytes() > 0 && r.held_chunks() == 3);
    r.iforward_tsn(0, &[(0, false, 0), (1, true, 0)]);
    let msg = r.pop().expect("MID 1 follows the skipped MID 0");
    assert_eq!(&msg.data[..], text(0, 1, 1).as_bytes());
    assert_eq!(r.buffered_bytes(), 0);
    assert_eq!(r.held_chunks(), 0);
}

/// A hostile I-FORWARD-TSN (RFC 8260 §2.3): thousands of entries naming a stream that holds
/// thousands of partial messages, none of them skipped. Each entry may cost a few lookups
/// and what it delivers or drops, never a walk over everything held.
#[test]
fn a_hostile_iforward_tsn_costs_what_it_drops_not_what_is_held() {
    let mut r = Reassembly::new(2);
    r.set_interleaved(true);
    // 5,000 partial ordered messages on stream 0 (MIDs 100..5100) and as many unordered.
    for mid in 100..5_100 {
        r.insert_interleaved(ifrag(0, mid, 1, 3, false), false);
        r.insert_interleaved(ifrag(0, mid, 1, 3, true), false);
    }
    let held = r.held_chunks();
    // 8,000 entries (one 64 KiB chunk): ordered entries below every held MID, unordered ones
    // below them too, so nothing is dropped.
    let entries: Vec<(u16, bool, u32)> = (0..8_000)
        .map(|i| (0, i % 2 == 1, if i % 2 == 1 { 50 } else { 0 }))
        .collect();
    r.iforward_tsn(0, &entries);
    assert_eq!(r.held_chunks(), held, "nothing was to be dropped");
    assert_eq!(r.il.visited, 0, "entries walked what they did not drop");
    // One that does skip: the first 1,000 ordered ones go, and cost 1,000.
    r.iforward_tsn(0, &[(0, false, 1_099)]);
    assert_eq!(r.held_chunks(), held - 1_000);
    assert_eq!(r.il.visited, 1_000);
}

/// The serial intervals wrap: an I-FORWARD-TSN across MID 2^32 - 1 drops on both sides.
#[test]
fn iforward_tsn_ranges_wrap_around_the_mid_space() {
    let mut r = Reassembly::new(1);
    r.set_interleaved(true);
    for mid in [u32::MAX - 1, u32::MAX, 0, 1, 5] {
        r.insert_interleaved(ifrag(0, mid, 1, 3, true), false);
    }
    r.iforward_tsn(0, &[(0, true, 1)]);
    assert_eq!(r.held_chunks(), 1, "only MID 5 is after MID 1");
    let mut o = Reassembly::new(1);
    o.set_interleaved(true);
    o.il.next_mid[0] = u32::MAX - 1;
    o.insert_interleaved(ifrag(0, u32::MAX, 1, 3, false), false);
    o.insert_interleaved(ifrag(0, 0, 0, 1, false), false);
    o.insert_interleaved(ifrag(0, 2, 0, 1, false), false);
    o.iforward_tsn(0, &[(0, false, 0)]);
    assert_eq!(o.pop().map(|m| m.data), Some(Bytes::from(text(0, 0, 1))));
    assert!(o.pop().is_none(), "MID 2 waits for MID 1");
    assert_eq!(o.next_mid(0), Some(1));
    assert_eq!(o.held_chunks(), 1);
}
