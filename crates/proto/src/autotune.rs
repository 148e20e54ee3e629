//! Send and receive buffer autotuning: the buffers start at `send_buffer` / `recv_buffer`
//! and grow with the path, up to `send_buffer_max` / `recv_buffer_max`, as Linux grows a TCP
//! socket's buffers (tcp_rcv_space_adjust, tcp_sndbuf_expand) and quinn grows its flow
//! control windows. Every byte of growth is drawn from the endpoint's [`BufferBudget`] and
//! returned when the association goes, so the memory bound holds per endpoint too.
//!
//! Receive side: the advertised window is `window - held`. Growth is decided per *round*, the
//! time it takes to receive one full window of payload (Linux's receiver RTT estimate: with
//! a window-limited sender a round is one RTT, with a slower one it is longer). The window
//! doubles when the application read at least half a window during the round (it keeps up)
//! and the round took at most [`WINDOW_LIMITED_RTTS`] of the association's smallest RTT (the
//! window, not the sender's cwnd or CPU, limits the peer: Linux's dynamic right-sizing sizes
//! the buffer from what arrives per RTT). Without that second test a fast reader behind a
//! cwnd-limited sender grew the window to its maximum on any path, and on a fast one the
//! sender's loss-based cwnd then filled the receiver's UDP socket buffer (a standing queue
//! of milliseconds, overflow losses). A slow reader never makes it grow (its unread bytes
//! close the window anyway). The window never shrinks: a_rwnd already in flight stays valid.
//!
//! Send side: the limit on queued + unacknowledged bytes is twice the sum of the paths'
//! congestion windows (Linux's `2 × cwnd` send buffer), never below `send_buffer`, at most
//! `send_buffer_max`, so a growing cwnd is never starved by the buffer.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::time::Instant;

/// A round (one window received) that took at most this many smallest RTTs came from a
/// window-limited sender; a longer one did not, and the window does not grow for it.
pub(crate) const WINDOW_LIMITED_RTTS: u32 = 4;

/// Bytes of buffer growth an endpoint's associations may still take, shared by all of them.
#[derive(Debug, Clone)]
pub(crate) struct BufferBudget(Arc<AtomicUsize>);

impl BufferBudget {
    /// A budget of `bytes`.
    pub(crate) fn new(bytes: usize) -> Self {
        Self(Arc::new(AtomicUsize::new(bytes)))
    }

    /// Takes up to `want` bytes; returns how many were granted.
    pub(crate) fn take(&self, want: usize) -> usize {
        let mut got = 0;
        let _ = self
            .0
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                got = want.min(left);
                Some(left - got)
            });
        got
    }

    fn give_back(&self, bytes: usize) {
        self.0.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Bytes still available.
    #[cfg(test)]
    pub(crate) fn left(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}

/// Growth granted to one association, drawn from every budget it is attached to (the
/// endpoint's and its source prefix's) and returned to them when dropped.
#[derive(Debug, Default)]
pub(crate) struct Grant {
    budgets: Vec<BufferBudget>,
    bytes: usize,
}

impl Grant {
    /// Attaches the endpoint's budgets (an association outside an endpoint has none and
    /// grows up to its maxima alone); growth granted before is charged to them, as far as
    /// they go, so that only what was taken is given back.
    pub(crate) fn attach(&mut self, budgets: Vec<BufferBudget>) {
        if !self.budgets.is_empty() {
            return; // Attached already (the endpoint attaches before the first packet).
        }
        self.budgets = budgets;
        let before = std::mem::take(&mut self.bytes);
        self.bytes = self.take(before);
    }

    /// Takes up to `want` bytes from every budget alike; returns how many.
    fn take(&self, want: usize) -> usize {
        let mut got = want;
        for (i, b) in self.budgets.iter().enumerate() {
            let g = b.take(got);
            if g < got {
                // The earlier budgets gave more than this one allows: the rest goes back.
                for earlier in &self.budgets[..i] {
                    earlier.give_back(got - g);
                }
                got = g;
            }
        }
        got
    }

    /// Asks for `want` more bytes; returns how many may be used.
    fn grow(&mut self, want: usize) -> usize {
        let got = self.take(want);
        self.bytes += got;
        got
    }
}

impl Drop for Grant {
    fn drop(&mut self) {
        for b in &self.budgets {
            b.give_back(self.bytes);
        }
    }
}

/// The autotuned buffers of one association.
#[derive(Debug)]
pub(crate) struct Buffers {
    /// Current receive window (the receive buffer the advertisement is computed from).
    recv_window: usize,
    recv_max: usize,
    /// Current send buffer growth above `send_buffer` (granted, possibly unused).
    send_extra: usize,
    send_base: usize,
    send_max: usize,
    /// Payload bytes accepted and read so far, and their values when the round began.
    received: u64,
    read: u64,
    round_received: u64,
    round_read: u64,
    /// When the current round began (the first payload of the association, then each
    /// round's end).
    round_start: Option<Instant>,
    /// The association's smallest RTT sample (handshake, heartbeats, data), if any.
    min_rtt: Option<Duration>,
    pub(crate) grant: Grant,
}

impl Buffers {
    /// Buffers starting at `send`/`recv` bytes, growing up to `send_max`/`recv_max`.
    pub(crate) fn new(send: usize, send_max: usize, recv: usize, recv_max: usize) -> Self {
        Self {
            recv_window: recv,
            recv_max: recv_max.max(recv),
            send_extra: 0,
            send_base: send,
            send_max: send_max.max(send),
            received: 0,
            read: 0,
            round_received: 0,
            round_read: 0,
            round_start: None,
            min_rtt: None,
            grant: Grant::default(),
        }
    }

    /// The receive buffer the advertised window is computed from.
    pub(crate) fn recv_window(&self) -> usize {
        self.recv_window
    }

    /// The application read `bytes` of payload.
    pub(crate) fn on_read(&mut self, bytes: usize) {
        self.read += bytes as u64;
    }

    /// An RTT sample of any path of the association (or of its handshake).
    pub(crate) fn note_rtt(&mut self, rtt: Duration) {
        self.min_rtt = Some(self.min_rtt.map_or(rtt, |m| m.min(rtt)));
    }

    /// `bytes` of payload were accepted at `now`; at the end of a round (one window
    /// received) the window doubles if the application kept up and the round was short
    /// enough for the window to have limited the sender. Returns whether it grew.
    pub(crate) fn on_received(&mut self, now: Instant, bytes: usize) -> bool {
        let start = *self.round_start.get_or_insert(now);
        self.received += bytes as u64;
        let window = self.recv_window as u64;
        if self.received - self.round_received < window {
            return false;
        }
        let kept_up = self.read - self.round_read >= window / 2;
        let window_limited = self
            .min_rtt
            .is_none_or(|r| now.saturating_duration_since(start) <= r * WINDOW_LIMITED_RTTS);
        self.round_received = self.received;
        self.round_read = self.read;
        self.round_start = Some(now);
        if !kept_up || !window_limited || self.recv_window >= self.recv_max {
            return false;
        }
        let want = self.recv_window.min(self.recv_max - self.recv_window);
        let got = self.grant.grow(want);
        self.recv_window += got;
        got > 0
    }

    /// The send buffer limit for paths whose congestion windows sum to `cwnds`.
    pub(crate) fn send_limit(&mut self, cwnds: usize) -> usize {
        let want = cwnds.saturating_mul(2).min(self.send_max);
        if want > self.send_base + self.send_extra {
            let more = want - self.send_base - self.send_extra;
            self.send_extra += self.grant.grow(more);
        }
        self.send_base + self.send_extra
    }

    /// The send buffer limit as it stands (no growth).
    pub(crate) fn send_limit_now(&self) -> usize {
        self.send_base + self.send_extra
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    /// Rounds of one window each, received in 1000 pieces read at once, each round taking
    /// `round`; the window after each.
    fn rounds(b: &mut Buffers, n: usize, round: Duration) -> Vec<usize> {
        let mut now = Instant::from_duration(ms(1));
        let mut sizes = vec![b.recv_window()];
        for _ in 0..n {
            let w = b.recv_window();
            for _ in 0..1000 {
                now += round / 1000;
                b.on_received(now, w / 1000 + 1);
                b.on_read(w / 1000 + 1);
            }
            sizes.push(b.recv_window());
        }
        sizes
    }

    #[test]
    fn a_window_read_as_fast_as_it_arrives_doubles_each_round_up_to_the_max() {
        let mut b = Buffers::new(MIB, MIB, MIB, 8 * MIB);
        b.note_rtt(ms(100));
        // Window-limited: one window per RTT.
        assert_eq!(
            rounds(&mut b, 6, ms(100)),
            vec![MIB, 2 * MIB, 4 * MIB, 8 * MIB, 8 * MIB, 8 * MIB, 8 * MIB]
        );
    }

    #[test]
    fn without_an_rtt_sample_a_reader_that_keeps_up_grows_the_window() {
        let mut b = Buffers::new(MIB, MIB, MIB, 4 * MIB);
        assert_eq!(
            rounds(&mut b, 3, ms(500)),
            vec![MIB, 2 * MIB, 4 * MIB, 4 * MIB]
        );
    }

    #[test]
    fn a_window_that_takes_many_rtts_to_arrive_does_not_grow() {
        // A fast path (0.1 ms) whose sender is held by its cwnd or CPU: a 1 MiB window
        // takes 2 ms to arrive, 20 RTTs. Growing it would only make a standing queue.
        let mut b = Buffers::new(MIB, MIB, MIB, 32 * MIB);
        b.note_rtt(Duration::from_micros(100));
        assert_eq!(rounds(&mut b, 5, ms(2)), vec![MIB; 6]);
        // The same rounds within the bound grow it.
        let mut b = Buffers::new(MIB, MIB, MIB, 32 * MIB);
        b.note_rtt(ms(1));
        assert_eq!(rounds(&mut b, 2, ms(2)), vec![MIB, 2 * MIB, 4 * MIB]);
    }

    #[test]
    fn a_reader_that_does_not_keep_up_never_grows_the_window() {
        let mut b = Buffers::new(MIB, MIB, MIB, 8 * MIB);
        let mut now = Instant::from_duration(ms(1));
        for _ in 0..10 {
            now += ms(1);
            b.on_received(now, MIB / 4);
            b.on_read(MIB / 10);
        }
        assert_eq!(b.recv_window(), MIB);
    }

    #[test]
    fn the_send_limit_follows_twice_the_windows_between_base_and_max() {
        let mut b = Buffers::new(MIB, 4 * MIB, MIB, MIB);
        assert_eq!(b.send_limit(100_000), MIB);
        assert_eq!(b.send_limit(MIB), 2 * MIB);
        // It does not shrink when the windows do.
        assert_eq!(b.send_limit(10_000), 2 * MIB);
        assert_eq!(b.send_limit(100 * MIB), 4 * MIB);
    }

    #[test]
    fn growth_comes_from_the_endpoint_budget_and_goes_back_when_the_association_goes() {
        let budget = BufferBudget::new(3 * MIB);
        let mut a = Buffers::new(MIB, 16 * MIB, MIB, 16 * MIB);
        let mut c = Buffers::new(MIB, 16 * MIB, MIB, 16 * MIB);
        a.grant.attach(vec![budget.clone()]);
        c.grant.attach(vec![budget.clone()]);
        assert_eq!(a.send_limit(2 * MIB), 4 * MIB); // 3 MiB of growth: all of it
        assert_eq!(c.send_limit(2 * MIB), MIB); // nothing left
        assert_eq!(budget.left(), 0);
        drop(a);
        assert_eq!(budget.left(), 3 * MIB);
        assert_eq!(c.send_limit(2 * MIB), 4 * MIB);
    }

    /// One source prefix cannot take the whole endpoint budget: its own share caps it, and
    /// another prefix still grows.
    #[test]
    fn a_prefix_takes_no_more_than_its_share_of_the_budget() {
        let endpoint = BufferBudget::new(8 * MIB);
        let (p, q) = (BufferBudget::new(2 * MIB), BufferBudget::new(2 * MIB));
        let mut a = Buffers::new(MIB, 16 * MIB, MIB, 16 * MIB);
        let mut b = Buffers::new(MIB, 16 * MIB, MIB, 16 * MIB);
        let mut c = Buffers::new(MIB, 16 * MIB, MIB, 16 * MIB);
        a.grant.attach(vec![endpoint.clone(), p.clone()]);
        b.grant.attach(vec![endpoint.clone(), p.clone()]);
        c.grant.attach(vec![endpoint.clone(), q.clone()]);
        assert_eq!(a.send_limit(8 * MIB), 3 * MIB); // its prefix's 2 MiB
        assert_eq!(b.send_limit(8 * MIB), MIB, "the prefix's share is spent");
        assert_eq!(c.send_limit(8 * MIB), 3 * MIB, "another prefix still grows");
        assert_eq!((endpoint.left(), p.left(), q.left()), (4 * MIB, 0, 0));
        drop(a);
        assert_eq!((endpoint.left(), p.left()), (6 * MIB, 2 * MIB));
    }
}
