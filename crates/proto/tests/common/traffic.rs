//! A checked bulk transfer over a [`Pair`]: messages carry their stream, sequence number and
//! a pattern derived from both, so the receiver verifies content, exactly-once delivery and
//! per-stream order.
#![allow(
    dead_code,
    unreachable_pub,
    clippy::unwrap_used,
    clippy::type_complexity
)]

use std::time::Duration;

use braid_proto::{AssocId, SendError, SendOptions};
use bytes::Bytes;

use super::Pair;

/// Builds message `seq` of `stream` with `len` bytes (at least 10).
pub fn message(stream: u16, seq: u32, len: usize) -> Bytes {
    let len = len.max(10);
    let mut v = Vec::with_capacity(len);
    v.extend_from_slice(&stream.to_be_bytes());
    v.extend_from_slice(&seq.to_be_bytes());
    v.extend_from_slice(&(len as u32).to_be_bytes());
    let mut x = (u32::from(stream) << 20) ^ seq.wrapping_mul(2_654_435_761);
    while v.len() < len {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
        v.push((x >> 16) as u8);
    }
    Bytes::from(v)
}

/// Checks a received message; returns its (stream, seq).
pub fn check(data: &Bytes) -> (u16, u32) {
    assert!(data.len() >= 10, "runt message of {} bytes", data.len());
    let stream = u16::from_be_bytes([data[0], data[1]]);
    let seq = u32::from_be_bytes([data[2], data[3], data[4], data[5]]);
    let len = u32::from_be_bytes([data[6], data[7], data[8], data[9]]) as usize;
    assert_eq!(data.len(), len, "stream {stream} seq {seq}: length");
    assert_eq!(
        *data,
        message(stream, seq, len),
        "stream {stream} seq {seq}: content corrupted"
    );
    (stream, seq)
}

/// Plan of a transfer.
pub struct Plan {
    pub streams: u16,
    pub total_bytes: usize,
    /// Message size for message number n.
    pub size: Box<dyn Fn(u64) -> usize>,
    pub unordered: bool,
}

/// Outcome.
#[derive(Debug)]
pub struct Outcome {
    pub messages: u64,
    pub bytes: u64,
    pub elapsed: Duration,
}

/// Runs `plan` from client to server and verifies every message; panics on any error.
pub fn transfer(p: &mut Pair, c: AssocId, s: AssocId, plan: &Plan, limit: Duration) -> Outcome {
    let start = p.now;
    let deadline = start + limit;
    let mut next_seq = vec![0u32; plan.streams as usize];
    let mut expected = vec![0u32; plan.streams as usize];
    let mut seen: Vec<std::collections::BTreeSet<u32>> =
        vec![Default::default(); plan.streams as usize];
    let mut sent_bytes = 0usize;
    let mut sent_msgs = 0u64;
    let mut got_msgs = 0u64;
    let mut got_bytes = 0u64;
    let mut n = 0u64;
    loop {
        // Refill the send buffer, round-robin over streams.
        while sent_bytes < plan.total_bytes {
            let stream = (n % u64::from(plan.streams)) as u16;
            let len = (plan.size)(n).min(plan.total_bytes - sent_bytes).max(10);
            let msg = message(stream, next_seq[stream as usize], len);
            let opts = SendOptions {
                unordered: plan.unordered,
                ..Default::default()
            };
            let now = p.now;
            match p
                .client
                .association_mut(c)
                .unwrap()
                .send(now, stream, msg, opts)
            {
                Ok(()) => {
                    next_seq[stream as usize] += 1;
                    sent_bytes += len;
                    sent_msgs += 1;
                    n += 1;
                }
                Err(SendError::WouldBlock) => break,
                Err(e) => panic!("send failed: {e}"),
            }
        }
        // Drain the receiver.
        while let Some(m) = p.server.association_mut(s).unwrap().recv() {
            let (stream, seq) = check(&m.data);
            assert_eq!(stream, m.stream_id, "message delivered on the wrong stream");
            assert_eq!(m.unordered, plan.unordered);
            let i = stream as usize;
            if plan.unordered {
                assert!(
                    seen[i].insert(seq),
                    "stream {stream} seq {seq} delivered twice"
                );
            } else {
                assert_eq!(
                    seq, expected[i],
                    "stream {stream}: out of order or duplicate"
                );
                expected[i] += 1;
            }
            got_msgs += 1;
            got_bytes += m.data.len() as u64;
        }
        if got_msgs == sent_msgs && sent_bytes >= plan.total_bytes {
            break;
        }
        if p.now > deadline {
            panic!(
                "transfer incomplete after {limit:?}: {got_msgs}/{sent_msgs} messages; client {:?}, server {:?}",
                p.client
                    .association(c)
                    .map(|a| (a.state(), a.stats(), a.paths())),
                p.server.association(s).map(|a| (a.state(), a.stats())),
            );
        }
        assert!(
            p.step(),
            "nothing left to do but the transfer is incomplete"
        );
    }
    Outcome {
        messages: got_msgs,
        bytes: got_bytes,
        elapsed: p.now - start,
    }
}
