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
