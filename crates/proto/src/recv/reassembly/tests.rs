//! Tests of reassembly: examples per rule, the fast path's edge cases, hostile input and
//! property tests over arrival orders.

use std::collections::{BTreeMap, HashMap, HashSet};

use proptest::prelude::*;

use super::*;

/// A fragment with the given flags; `data` is the text given.
fn frag(tsn: u32, stream_id: u16, ssn: u16, flags: &str, data: &str) -> Fragment {
    Fragment {
        tsn,
        stream_id,
        ssn,
        ppid: 51,
        unordered: flags.contains('U'),
        beginning: flags.contains('B'),
        ending: flags.contains('E'),
        data: Bytes::copy_from_slice(data.as_bytes()),
    }
}

/// Everything deliverable now, as (stream, text).
fn drain(r: &mut Reassembly) -> Vec<(u16, String)> {
    std::iter::from_fn(|| r.pop())
        .map(|m| (m.stream_id, String::from_utf8_lossy(&m.data).into_owned()))
        .collect()
}

/// The texts of everything deliverable now.
fn texts(r: &mut Reassembly) -> Vec<String> {
    drain(r).into_iter().map(|(_, t)| t).collect()
}

#[test]
fn in_order_single_chunk_messages_on_several_streams() {
    let mut r = Reassembly::new(3);
    r.insert(frag(10, 0, 0, "BE", "a0"), false);
    r.insert(frag(11, 2, 0, "BE", "c0"), false);
    r.insert(frag(12, 0, 1, "BE", "a1"), false);
    r.insert(frag(13, 1, 0, "BE", "b0"), false);
    assert!(r.has_ready());
    assert_eq!(
        drain(&mut r),
        [
            (0, "a0".into()),
            (2, "c0".into()),
            (0, "a1".into()),
            (1, "b0".into())
        ]
    );
    assert!(!r.has_ready());
    assert_eq!(r.buffered_bytes(), 0);
}

#[test]
fn a_single_chunk_message_is_passed_through_without_copy() {
    let mut r = Reassembly::new(1);
    let f = frag(1, 0, 0, "BE", "zero copy");
    let ptr = f.data.as_ptr();
    r.insert(f, false);
    assert_eq!(r.pop().map(|m| m.data.as_ptr()), Some(ptr));
}

#[test]
fn out_of_order_ssns_are_held_back_then_released() {
    let mut r = Reassembly::new(2);
    r.insert(frag(3, 0, 2, "BE", "m2"), false);
    r.insert(frag(2, 0, 1, "BE", "m1"), false);
    r.insert(frag(5, 1, 0, "BE", "other stream"), false);
    // Stream 1 is not blocked by stream 0's missing SSN 0.
    assert_eq!(texts(&mut r), ["other stream"]);
    r.insert(frag(1, 0, 0, "BE", "m0"), false);
    assert_eq!(texts(&mut r), ["m0", "m1", "m2"]);
}

#[test]
fn a_fragmented_message_arriving_scrambled_is_delivered_whole() {
    let mut r = Reassembly::new(1);
    r.insert(frag(103, 0, 0, "E", "!"), false);
    r.insert(frag(101, 0, 0, "", "lo, "), false);
    r.insert(frag(100, 0, 0, "B", "hel"), false);
    assert!(!r.has_ready());
    r.insert(frag(102, 0, 0, "", "world"), false);
    assert_eq!(texts(&mut r), ["hello, world!"]);
    assert_eq!(r.buffered_bytes(), 0);
}

#[test]
fn an_unordered_message_overtakes_a_blocked_ordered_one() {
    let mut r = Reassembly::new(1);
    // SSN 0 (TSN 1) is lost; SSN 1 waits for it.
    r.insert(frag(2, 0, 1, "BE", "ordered 1"), false);
    r.insert(frag(3, 0, 0, "UBE", "urgent"), false);
    assert_eq!(texts(&mut r), ["urgent"]);
    r.insert(frag(1, 0, 0, "BE", "ordered 0"), false);
    assert_eq!(texts(&mut r), ["ordered 0", "ordered 1"]);
}

#[test]
fn interleaved_unordered_fragmented_messages_on_two_streams() {
    let mut r = Reassembly::new(2);
    // Message A is TSNs 1-3 on stream 0, B is TSNs 4-6 on stream 1; they arrive mixed.
    r.insert(frag(4, 1, 9, "UB", "B1"), false);
    r.insert(frag(1, 0, 7, "UB", "A1"), false);
    r.insert(frag(5, 1, 9, "U", "B2"), false);
    r.insert(frag(2, 0, 7, "U", "A2"), false);
    r.insert(frag(6, 1, 9, "UE", "B3"), false);
    assert_eq!(drain(&mut r), [(1, "B1B2B3".into())]);
    r.insert(frag(3, 0, 7, "UE", "A3"), false);
    assert_eq!(drain(&mut r), [(0, "A1A2A3".into())]);
}

#[test]
fn tsns_wrap_around_inside_a_message() {
    let mut r = Reassembly::new(1);
    r.insert(frag(0, 0, 0, "", "b"), false);
    r.insert(frag(1, 0, 0, "E", "c"), false);
    r.insert(frag(u32::MAX, 0, 0, "B", "a"), false);
    assert_eq!(texts(&mut r), ["abc"]);
}

/// Delivers `count` single-chunk messages on stream 0 from TSN 1, SSN 0 on.
fn deliver_many(r: &mut Reassembly, count: u16) -> u32 {
    for ssn in 0..count {
        r.insert(frag(u32::from(ssn) + 1, 0, ssn, "BE", "x"), false);
        assert!(r.pop().is_some());
    }
    u32::from(count) + 1
}

#[test]
fn ssns_wrap_from_65535_to_0() {
    let mut r = Reassembly::new(1);
    let tsn = deliver_many(&mut r, 65535);
    // SSN 65535 is next; 0 and 1 arrive first and wait for it.
    r.insert(frag(tsn + 2, 0, 1, "BE", "ssn 1"), false);
    r.insert(frag(tsn + 1, 0, 0, "BE", "ssn 0"), false);
    assert!(!r.has_ready());
    r.insert(frag(tsn, 0, 65535, "BE", "ssn 65535"), false);
    assert_eq!(texts(&mut r), ["ssn 65535", "ssn 0", "ssn 1"]);
    r.insert(frag(tsn + 3, 0, 2, "BE", "ssn 2"), false);
    assert_eq!(texts(&mut r), ["ssn 2"]);
}

#[test]
fn forward_tsn_releases_held_messages_across_the_ssn_wrap() {
    let mut r = Reassembly::new(1);
    let tsn = deliver_many(&mut r, 65534);
    // SSN 65534 and 0 are lost; 65535 and 1 wait.
    r.insert(frag(tsn + 1, 0, 65535, "BE", "ssn 65535"), false);
    r.insert(frag(tsn + 3, 0, 1, "BE", "ssn 1"), false);
    assert!(!r.has_ready());
    r.forward_tsn(tsn + 2, &[(0, 0)]);
    assert_eq!(texts(&mut r), ["ssn 65535", "ssn 1"]);
}

#[test]
fn forward_tsn_skips_a_lost_message_and_releases_later_ones() {
    let mut r = Reassembly::new(2);
    // SSN 0 was TSNs 1-3: 1 and 3 arrived, 2 is lost for good. SSN 1 and 2 arrived whole.
    r.insert(frag(1, 0, 0, "B", "xx"), false);
    r.insert(frag(3, 0, 0, "E", "zz"), false);
    r.insert(frag(4, 0, 1, "BE", "one"), false);
    r.insert(frag(5, 0, 2, "BE", "two"), false);
    // Unrelated partial message above the new cumulative TSN: kept.
    r.insert(frag(6, 1, 0, "B", "keep"), false);
    assert!(!r.has_ready());
    r.forward_tsn(3, &[(0, 0)]);
    assert_eq!(texts(&mut r), ["one", "two"]);
    // Only the partial message of stream 1 is still held.
    assert_eq!(r.buffered_bytes(), 4);
    r.insert(frag(7, 1, 0, "E", "!"), false);
    assert_eq!(texts(&mut r), ["keep!"]);
    assert_eq!(r.buffered_bytes(), 0);
}

#[test]
fn forward_tsn_delivers_stranded_messages_up_to_the_listed_ssn() {
    let mut r = Reassembly::new(1);
    // SSNs 0 and 2 lost, 1 and 3 arrived; the sender abandons SSN 0 to 2.
    r.insert(frag(2, 0, 1, "BE", "one"), false);
    r.insert(frag(4, 0, 3, "BE", "three"), false);
    r.forward_tsn(3, &[(0, 2)]);
    // RFC 3758 §3.6: SSN 1 is made available, then 3 follows in order.
    assert_eq!(texts(&mut r), ["one", "three"]);
    // An old FORWARD TSN changes nothing.
    r.forward_tsn(1, &[(0, 0)]);
    r.insert(frag(5, 0, 4, "BE", "four"), false);
    assert_eq!(texts(&mut r), ["four"]);
}

#[test]
fn forward_tsn_drops_the_tail_of_a_message_whose_head_was_abandoned() {
    let mut r = Reassembly::new(1);
    // Message TSNs 10-12 (SSN 0): only 12 arrived, and the sender skipped up to 11.
    r.insert(frag(12, 0, 0, "E", "tail"), false);
    r.forward_tsn(11, &[(0, 0)]);
    assert_eq!(r.buffered_bytes(), 0);
    assert!(r.runs.is_empty() && r.fragments.is_empty());
}

#[test]
fn buffered_bytes_and_chunks_are_exact_through_insert_and_pop() {
    let mut r = Reassembly::new(2);
    let held = |r: &Reassembly| (r.buffered_bytes(), r.held_chunks());
    r.insert(frag(1, 0, 0, "B", "12345"), false);
    assert_eq!(held(&r), (5, 1));
    r.insert(frag(3, 1, 0, "BE", "abc"), false); // ready
    assert_eq!(held(&r), (8, 2));
    r.insert(frag(4, 1, 2, "BE", "held"), false); // waits for SSN 1
    assert_eq!(held(&r), (12, 3));
    r.insert(frag(2, 0, 0, "E", "67"), false); // two fragments become one message
    assert_eq!(held(&r), (14, 3));
    assert_eq!(r.pop().map(|m| m.data.len()), Some(3));
    assert_eq!(held(&r), (11, 2));
    assert_eq!(r.pop().map(|m| m.data.len()), Some(7));
    assert_eq!(held(&r), (4, 1));
    assert!(r.pop().is_none());
    assert_eq!(held(&r), (4, 1));
}

#[test]
fn hostile_two_beginnings_in_a_row() {
    let mut r = Reassembly::new(1);
    r.insert(frag(1, 0, 0, "B", "first"), false);
    r.insert(frag(2, 0, 0, "B", "second"), false);
    // TSN 1 can never get its E: dropped. TSN 2 may still complete.
    assert_eq!(r.buffered_bytes(), 6);
    r.insert(frag(3, 0, 0, "E", "!"), false);
    assert_eq!(texts(&mut r), ["second!"]);
    assert_eq!(r.buffered_bytes(), 0);
}

#[test]
fn hostile_end_without_beginning() {
    let mut r = Reassembly::new(1);
    r.insert(frag(2, 0, 0, "E", "end"), false);
    // An E without B right after another E can never get its beginning: dropped.
    r.insert(frag(3, 0, 0, "E", "bogus"), false);
    assert_eq!(r.buffered_bytes(), 3);
    r.insert(frag(1, 0, 0, "B", "the "), false);
    assert_eq!(texts(&mut r), ["the end"]);
    assert_eq!(r.buffered_bytes(), 0);
}

#[test]
fn hostile_orphan_after_a_delivered_message_waits_for_a_forward_tsn() {
    let mut r = Reassembly::new(1);
    r.insert(frag(1, 0, 0, "BE", "whole"), false);
    // E without B right after a delivered message: the TSN before it is gone, so
    // nothing shows it can never complete. It is held (never delivered) until a
    // FORWARD TSN covers it or the association ends.
    r.insert(frag(2, 0, 1, "E", "orphan"), false);
    assert_eq!(texts(&mut r), ["whole"]);
    assert_eq!(r.buffered_bytes(), 6);
    r.insert(frag(3, 0, 1, "BE", "next"), false);
    assert_eq!(texts(&mut r), ["next"]);
    r.forward_tsn(2, &[]);
    assert_eq!(r.buffered_bytes(), 0);
}

#[test]
fn hostile_fragments_of_one_tsn_range_on_different_streams() {
    let mut r = Reassembly::new(2);
    r.insert(frag(1, 0, 0, "B", "stream 0 "), false);
    r.insert(frag(3, 1, 0, "E", "end"), false);
    r.insert(frag(2, 1, 0, "", "stream 1 "), false);
    assert!(!r.has_ready());
    assert_eq!(r.buffered_bytes(), 0);
    // Same with a change of U flag or of SSN inside the range.
    r.insert(frag(10, 0, 0, "B", "x"), false);
    r.insert(frag(11, 0, 0, "UE", "y"), false);
    r.insert(frag(20, 0, 0, "B", "x"), false);
    r.insert(frag(21, 0, 5, "E", "y"), false);
    assert!(!r.has_ready());
    assert_eq!(r.buffered_bytes(), 0);
    r.insert(frag(30, 0, 0, "BE", "fine"), false);
    assert_eq!(texts(&mut r), ["fine"]);
}

#[test]
fn hostile_ssn_already_delivered() {
    let mut r = Reassembly::new(1);
    r.insert(frag(1, 0, 0, "BE", "zero"), false);
    r.insert(frag(2, 0, 1, "BE", "one"), false);
    assert_eq!(texts(&mut r), ["zero", "one"]);
    // SSN 0 again, and an SSN half the space away, count as already delivered.
    r.insert(frag(3, 0, 0, "BE", "replay"), false);
    r.insert(frag(4, 0, 2 + 32768, "B", "far"), false);
    r.insert(frag(5, 0, 2 + 32768, "E", "far"), false);
    assert!(!r.has_ready());
    assert_eq!(r.buffered_bytes(), 0);
}

#[test]
fn hostile_duplicate_ssn_and_tsn_keep_the_first() {
    let mut r = Reassembly::new(1);
    r.insert(frag(2, 0, 1, "BE", "first"), false);
    r.insert(frag(3, 0, 1, "BE", "impostor"), false);
    r.insert(frag(10, 0, 5, "B", "a"), false);
    r.insert(frag(10, 0, 5, "B", "again"), false);
    assert_eq!(r.buffered_bytes(), "first".len() + 1);
    r.insert(frag(1, 0, 0, "BE", "zero"), false);
    assert_eq!(texts(&mut r), ["zero", "first"]);
}

#[test]
fn keys_never_wrap_even_after_billions_of_jumps() {
    let mut r = Reassembly::new(1);
    r.insert(frag(0, 0, 0, "B", "x"), false);
    // As if the TSNs had jumped forward by 2^31 - 1 about 2^32 times.
    r.last_tsn = u64::MAX - 1;
    // 102 ahead would pass u64::MAX: dropped. 1 ahead lands on the last key, which has
    // no neighbour after it.
    r.insert(frag(100, 0, 0, "", "y"), false);
    r.insert(frag(u32::MAX, 0, 0, "", "z"), false);
    assert_eq!(r.buffered_bytes(), 2);
    assert_eq!(r.fragments.keys().last(), Some(&u64::MAX));
}

/// Whether the general maps are empty (everything went through the fast path).
fn maps_empty(r: &Reassembly) -> bool {
    r.fragments.is_empty() && r.runs.is_empty()
}

#[test]
fn fast_path_in_order_fragmented_messages_never_enter_the_maps() {
    let mut r = Reassembly::new(2);
    r.insert(frag(1, 0, 0, "B", "hel"), true);
    assert!(maps_empty(&r) && r.tail.is_some());
    assert_eq!(r.held_chunks(), 1);
    r.insert(frag(2, 0, 0, "", "lo, "), true);
    r.insert(frag(3, 0, 0, "E", "world"), true);
    assert!(maps_empty(&r) && r.tail.is_none());
    r.insert(frag(4, 1, 0, "UB", "un"), true);
    r.insert(frag(5, 1, 0, "UE", "ordered"), true);
    r.insert(frag(6, 0, 1, "BE", "whole"), true);
    assert!(maps_empty(&r));
    assert_eq!(
        drain(&mut r),
        [
            (0, "hello, world".into()),
            (1, "unordered".into()),
            (0, "whole".into())
        ]
    );
    assert_eq!((r.buffered_bytes(), r.held_chunks()), (0, 0));
}

#[test]
fn fast_path_message_completed_in_order_then_an_out_of_order_one() {
    let mut r = Reassembly::new(1);
    r.insert(frag(1, 0, 0, "B", "first "), false);
    r.insert(frag(2, 0, 0, "E", "message"), false);
    assert_eq!(texts(&mut r), ["first message"]);
    // SSN 1 is TSNs 3-4; 4 arrives first, then SSN 2 (TSN 5) whole, then 3.
    r.insert(frag(4, 0, 1, "E", "two"), false);
    assert!(r.tail.is_none() && !maps_empty(&r));
    r.insert(frag(5, 0, 2, "BE", "three"), false);
    assert!(!r.has_ready());
    r.insert(frag(3, 0, 1, "B", "one "), false);
    assert_eq!(texts(&mut r), ["one two", "three"]);
    assert!(maps_empty(&r));
    // Back on the fast path once the maps are empty.
    r.insert(frag(6, 0, 3, "B", "fast "), false);
    assert!(r.tail.is_some());
    r.insert(frag(7, 0, 3, "E", "again"), false);
    assert_eq!(texts(&mut r), ["fast again"]);
    assert_eq!(r.buffered_bytes(), 0);
}

#[test]
fn fast_path_spills_on_a_gap_and_the_message_still_completes() {
    let mut r = Reassembly::new(1);
    r.insert(frag(10, 0, 0, "B", "a"), false);
    r.insert(frag(11, 0, 0, "", "b"), false);
    let base = r.tail.as_ref().map(|t| t.data.as_ptr());
    // TSN 12 is late: 13 (the next message) spills the tail into the maps.
    r.insert(frag(13, 0, 1, "BE", "next"), false);
    assert!(r.tail.is_none());
    assert_eq!(r.held_chunks(), 3);
    assert_eq!(r.buffered_bytes(), 6);
    // The spilled fragments are slices of the gathered buffer, not copies.
    assert_eq!(r.fragments.values().next().map(|f| f.data.as_ptr()), base);
    r.insert(frag(12, 0, 0, "E", "c"), false);
    assert_eq!(texts(&mut r), ["abc", "next"]);
    assert!(maps_empty(&r));
    assert_eq!((r.buffered_bytes(), r.held_chunks()), (0, 0));
}

#[test]
fn fast_path_interleaved_unordered_message() {
    let mut r = Reassembly::new(2);
    // Ordered SSN 0 on stream 0 is TSNs 1-3; an unordered whole message (TSN 4) and an
    // unordered two-fragment one (TSNs 5-6) on stream 1 overtake its last fragment.
    r.insert(frag(1, 0, 0, "B", "or"), false);
    r.insert(frag(2, 0, 0, "", "de"), false);
    r.insert(frag(4, 1, 0, "UBE", "urgent"), false);
    assert_eq!(texts(&mut r), ["urgent"]);
    r.insert(frag(5, 1, 0, "UB", "also "), false);
    r.insert(frag(6, 1, 0, "UE", "urgent"), false);
    assert_eq!(texts(&mut r), ["also urgent"]);
    r.insert(frag(3, 0, 0, "E", "red"), false);
    assert_eq!(texts(&mut r), ["ordered"]);
    // An unordered fragment between an ordered message's fragments is not a
    // continuation of it: both can never complete (RFC 9260 §6.9) and are dropped.
    r.insert(frag(7, 0, 1, "B", "x"), false);
    r.insert(frag(8, 0, 1, "UE", "y"), false);
    assert!(!r.has_ready());
    assert_eq!(r.buffered_bytes(), 0);
}

#[test]
fn fast_path_forward_tsn_abandons_or_keeps_the_message_being_gathered() {
    let mut r = Reassembly::new(2);
    // A FORWARD TSN below the message being gathered keeps it.
    r.insert(frag(5, 0, 0, "B", "kept "), false);
    r.forward_tsn(4, &[]);
    r.insert(frag(6, 0, 0, "E", "whole"), false);
    assert_eq!(texts(&mut r), ["kept whole"]);
    // One past its last fragment abandons it (its E will never come, RFC 3758 §3.6),
    // and the stream's next SSN moves past it.
    r.insert(frag(7, 0, 1, "B", "lost"), false);
    r.insert(frag(8, 0, 1, "", "lost"), false);
    r.forward_tsn(9, &[(0, 1)]);
    assert!(r.tail.is_none() && maps_empty(&r));
    assert_eq!((r.buffered_bytes(), r.held_chunks()), (0, 0));
    r.insert(frag(10, 0, 2, "B", "after "), false);
    r.insert(frag(11, 0, 2, "E", "skip"), false);
    assert_eq!(texts(&mut r), ["after skip"]);
    // A late fragment of the abandoned message is dropped (its SSN was skipped).
    r.insert(frag(9, 0, 1, "E", "late"), false);
    assert!(!r.has_ready());
    assert_eq!(r.buffered_bytes(), 0);
}

#[test]
fn fast_path_two_beginnings_in_a_row_drop_the_first() {
    let mut r = Reassembly::new(1);
    r.insert(frag(1, 0, 0, "B", "first"), false);
    r.insert(frag(2, 0, 0, "B", "second"), false);
    assert_eq!(r.buffered_bytes(), 6);
    r.insert(frag(3, 0, 0, "E", "!"), false);
    assert_eq!(texts(&mut r), ["second!"]);
}

#[test]
fn fast_path_buffer_sized_for_a_large_message_is_not_kept_for_a_small_one() {
    let mut r = Reassembly::new(1);
    let big = "x".repeat(10_000);
    r.insert(frag(1, 0, 0, "B", &big), false);
    r.insert(frag(2, 0, 0, "E", &big), false);
    assert_eq!(r.pop().map(|m| m.data.len()), Some(20_000));
    // The next buffer is sized for 20,000 bytes; a 2-byte message does not keep it...
    r.insert(frag(3, 0, 1, "B", "a"), false);
    r.insert(frag(4, 0, 1, "E", "b"), false);
    let m = r.pop().map(|m| m.data);
    assert_eq!(m.as_deref(), Some(&b"ab"[..]));
    // ...nor does a 1-byte fragment spilled into the maps.
    r.insert(frag(5, 0, 2, "B", "c"), false);
    r.insert(frag(7, 0, 3, "BE", "d"), false);
    assert!(r.fragments.values().all(|f| f.data.len() == 1));
    r.insert(frag(6, 0, 2, "E", "e"), false);
    assert_eq!(texts(&mut r), ["ce", "d"]);
}

#[test]
fn compact_copies_only_what_is_held_as_it_is() {
    let mut r = Reassembly::new(1);
    // A whole message is held in the ready queue: compacted (copied).
    let f = frag(1, 0, 0, "BE", "copied");
    let ptr = f.data.as_ptr();
    r.insert(f, true);
    assert_ne!(r.pop().map(|m| m.data.as_ptr()), Some(ptr));
    // Without `compact` it is passed through.
    let f = frag(2, 0, 1, "BE", "passed");
    let ptr = f.data.as_ptr();
    r.insert(f, false);
    assert_eq!(r.pop().map(|m| m.data.as_ptr()), Some(ptr));
    // A fragment held in the maps is compacted.
    let f = frag(4, 0, 2, "E", "held");
    let ptr = f.data.as_ptr();
    r.insert(f, true);
    assert!(r.fragments.values().all(|f| f.data.as_ptr() != ptr));
}

#[test]
fn unknown_streams_are_ignored() {
    let mut r = Reassembly::new(1);
    r.insert(frag(1, 1, 0, "BE", "nowhere"), false);
    r.forward_tsn(1, &[(7, 3)]);
    assert!(!r.has_ready());
    assert_eq!(r.buffered_bytes(), 0);
}

/// Recomputes the bytes held from the structures themselves.
fn held_bytes(r: &Reassembly) -> usize {
    r.tail.as_ref().map_or(0, |t| t.data.len())
        + r.fragments.values().map(|f| f.data.len()).sum::<usize>()
        + r.held.values().map(|m| m.data.len()).sum::<usize>()
        + r.ready.iter().map(|m| m.data.len()).sum::<usize>()
}

/// Messages as (stream, unordered, size); the fragments of all of them with consecutive
/// TSNs from `init`, 1000 bytes at most each. Message `i` has PPID `i` and its bytes
/// are a pattern of `i`.
fn fragment_all(messages: &[(u16, bool, usize)], init: u32) -> Vec<Fragment> {
    let mut ssns: HashMap<u16, u16> = HashMap::new();
    let mut tsn = init;
    let mut out = Vec::new();
    for (i, &(stream, unordered, size)) in messages.iter().enumerate() {
        let data = Bytes::from(pattern(i, size));
        let ssn = if unordered {
            0xdead
        } else {
            let s = ssns.entry(stream).or_default();
            *s = s.wrapping_add(1);
            s.wrapping_sub(1)
        };
        let n = size.div_ceil(1000);
        for k in 0..n {
            out.push(Fragment {
                tsn,
                stream_id: stream,
                ssn,
                ppid: i as u32,
                unordered,
                beginning: k == 0,
                ending: k + 1 == n,
                data: data.slice(k * 1000..size.min((k + 1) * 1000)),
            });
            tsn = tsn.wrapping_add(1);
        }
    }
    out
}

/// The bytes of message `i`.
fn pattern(i: usize, size: usize) -> Vec<u8> {
    (0..size).map(|j| ((i * 7 + j * 13) % 251) as u8).collect()
}

/// Random messages, and all their fragments in a random order.
fn scrambled() -> impl Strategy<Value = (Vec<(u16, bool, usize)>, Vec<Fragment>)> {
    let message = (0u16..4, any::<bool>(), 1usize..5000);
    let init = prop_oneof![any::<u32>(), (u32::MAX - 20)..=u32::MAX];
    (prop::collection::vec(message, 0..40), init).prop_flat_map(|(messages, init)| {
        let fragments = fragment_all(&messages, init);
        (Just(messages), Just(fragments).prop_shuffle())
    })
}

/// Random messages, and their fragments in order but for a few swaps of neighbours
/// (the fast path's usual input, with the spills a reordering path causes).
fn nearly_in_order() -> impl Strategy<Value = (Vec<(u16, bool, usize)>, Vec<Fragment>)> {
    let message = (0u16..4, any::<bool>(), 1usize..5000);
    let init = prop_oneof![any::<u32>(), (u32::MAX - 20)..=u32::MAX];
    (
        prop::collection::vec(message, 0..40),
        init,
        prop::collection::vec(any::<prop::sample::Index>(), 0..6),
    )
        .prop_map(|(messages, init, swaps)| {
            let mut fragments = fragment_all(&messages, init);
            for s in swaps {
                if fragments.len() > 1 {
                    let i = s.index(fragments.len() - 1);
                    fragments.swap(i, i + 1);
                }
            }
            (messages, fragments)
        })
}

/// Checks that `fragments` inserted in their order deliver `messages` each once,
/// intact, in order per stream, with exact accounting throughout.
fn check_delivery(
    messages: &[(u16, bool, usize)],
    fragments: Vec<Fragment>,
    pop_every: usize,
) -> Result<(), TestCaseError> {
    let mut r = Reassembly::new(4);
    let mut out = Vec::new();
    for (n, f) in fragments.into_iter().enumerate() {
        let compact = n % 3 == 0;
        r.insert(f, compact);
        prop_assert_eq!(r.buffered_bytes(), held_bytes(&r));
        if n % pop_every == 0 {
            out.extend(std::iter::from_fn(|| r.pop()));
        }
    }
    out.extend(std::iter::from_fn(|| r.pop()));
    prop_assert_eq!(r.buffered_bytes(), 0);
    prop_assert_eq!(r.held_chunks(), 0);
    prop_assert_eq!(out.len(), messages.len());
    let mut seen = HashSet::new();
    let mut last_ordered: HashMap<u16, u32> = HashMap::new();
    for m in out {
        let i = m.ppid as usize;
        prop_assert!(seen.insert(i), "message {} delivered twice", i);
        let (stream, unordered, size) = messages[i];
        prop_assert_eq!((m.stream_id, m.unordered), (stream, unordered));
        prop_assert_eq!(&m.data[..], &pattern(i, size)[..]);
        if !unordered {
            // Later SSNs on a stream are later messages: PPIDs must increase.
            if let Some(prev) = last_ordered.insert(stream, m.ppid) {
                prop_assert!(prev < m.ppid, "stream {} out of order", stream);
            }
        }
    }
    Ok(())
}

proptest! {
    #[test]
    fn nearly_in_order_arrival_delivers_every_message_once_intact_in_order(
        (messages, fragments) in nearly_in_order(),
        pop_every in 1usize..10,
    ) {
        check_delivery(&messages, fragments, pop_every)?;
    }

    #[test]
    fn any_arrival_order_delivers_every_message_once_intact_in_order(
        (messages, fragments) in scrambled(),
        pop_every in 1usize..10,
    ) {
        check_delivery(&messages, fragments, pop_every)?;
    }

    /// Hostile input: random flags, streams, SSNs and FORWARD TSNs. Nothing panics, the
    /// accounting stays exact, and every message delivered is made of consecutive TSNs
    /// of one stream, one kind and one SSN if ordered, from a B to an E, each used once.
    #[test]
    fn hostile_fragments_never_make_a_corrupt_message(
        base in any::<u32>(),
        ops in prop::collection::vec(
            (0u32..40, 0u16..3, 0u16..4, any::<bool>(), any::<bool>(), any::<bool>(), 0u8..12),
            0..200,
        ),
    ) {
        let mut r = Reassembly::new(2);
        let mut sent: BTreeMap<u32, Fragment> = BTreeMap::new();
        let mut used = HashSet::new();
        let mut last_ssn: HashMap<u16, u16> = HashMap::new();
        for (off, stream, ssn, unordered, beginning, ending, kind) in ops {
            let tsn = base.wrapping_add(off);
            if kind == 0 {
                r.forward_tsn(tsn, &[(stream, ssn)]);
            } else if let Entry::Vacant(slot) = sent.entry(tsn) {
                // The TSN map lets each TSN through once.
                let f = Fragment {
                    tsn,
                    stream_id: stream,
                    ssn,
                    ppid: 0,
                    unordered,
                    beginning,
                    ending,
                    data: Bytes::copy_from_slice(&tsn.to_be_bytes()),
                };
                slot.insert(f.clone());
                r.insert(f, false);
            }
            prop_assert_eq!(r.buffered_bytes(), held_bytes(&r));
            while let Some(m) = r.pop() {
                let tsns: Vec<u32> = m
                    .data
                    .chunks(4)
                    .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                let frags: Vec<&Fragment> = tsns.iter().map(|t| &sent[t]).collect();
                let (first, last) = (frags[0], frags[frags.len() - 1]);
                prop_assert!(first.beginning && last.ending);
                prop_assert_eq!(m.stream_id, first.stream_id);
                prop_assert_eq!(m.unordered, first.unordered);
                for (w, pair) in frags.windows(2).enumerate() {
                    prop_assert_eq!(pair[1].tsn, pair[0].tsn.wrapping_add(1), "at {}", w);
                    let (a, b) = (pair[0], pair[1]);
                    prop_assert!(!a.ending && !b.beginning);
                    prop_assert_eq!((a.stream_id, a.unordered), (b.stream_id, b.unordered));
                    prop_assert!(a.unordered || a.ssn == b.ssn);
                }
                for t in tsns {
                    prop_assert!(used.insert(t), "TSN {} delivered twice", t);
                }
                if !m.unordered
                    && let Some(prev) = last_ssn.insert(m.stream_id, first.ssn)
                {
                    prop_assert!(ssn_lt(prev, first.ssn), "SSN {} after {}", first.ssn, prev);
                }
            }
        }
    }
}

/// A FORWARD TSN (RFC 3758 §3.6) that abandons nothing, against 5,000 partial messages held
/// above its new cumulative TSN: it looks at the runs that start at or below it, not at every
/// run held (before: all 5,000, per chunk).
#[test]
fn a_forward_tsn_that_skips_nothing_costs_what_it_names_not_what_is_held() {
    let mut r = Reassembly::new(2);
    // Unordered middle fragments (no B, no E) two TSNs apart: 5,000 runs above TSN 100.
    for k in 0..5_000u32 {
        r.insert(frag(102 + 2 * k, 0, 0, "U", "m"), false);
    }
    let runs = r.runs.len();
    assert_eq!(runs, 5_000);
    for _ in 0..100 {
        r.forward_tsn(100, &[]);
    }
    assert_eq!(r.runs.len(), runs, "nothing was to be dropped");
    assert!(
        r.runs_examined.get() <= 100,
        "100 FORWARD TSNs examined {} runs",
        r.runs_examined.get()
    );
    // One that reaches the first two runs drops them, and looks at little more.
    r.forward_tsn(104, &[]);
    assert_eq!(r.runs.len(), runs - 2);
}
