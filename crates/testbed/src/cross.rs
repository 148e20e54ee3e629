//! Cross traffic on the testbed, the real-kernel counterparts of a scenario's `[[cross]]`:
//! unresponsive UDP packets at a constant or Poisson rate (`blast`, counted by `sink`), and
//! Pareto on/off flows of the kernel's TCP (`send_onoff`, received by
//! [`crate::stream::receive`]).
//!
//! They follow the simulator's draws in law, not packet for packet: the same Pareto laws
//! ([`braid_sim::topology::pareto`]) and exponential gaps, from a generator of their own
//! seeded by the run's seed. A burst of an on/off flow ends, as in the simulator, when every
//! byte of it has been delivered; here that is when the kernel reports the send queue empty
//! (every byte acknowledged, half a round trip after the receiver read it).

use std::io::{self, Write};
use std::net::{SocketAddr, UdpSocket};
use std::time::Duration;

use serde::Serialize;

use crate::stream::clock;

/// IPv4 and UDP headers: a `packet_size` on the wire carries this much less payload.
const UDP_IPV4_HEADERS: usize = 28;

/// A small seeded generator (SplitMix64): cross traffic needs independent, repeatable draws,
/// not the simulator's exact sequence.
#[derive(Debug, Clone)]
pub struct Draws(u64);

impl Draws {
    /// A generator for `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed ^ 0x6a09_e667_f3bc_c909)
    }

    /// A uniform draw in [0, 1).
    pub fn uniform(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        (z >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// What an unresponsive source sent.
#[derive(Debug, Clone, Serialize)]
pub struct BlastReport {
    /// Datagrams sent.
    pub packets: u64,
    /// Bytes on the wire (IPv4 and UDP headers counted).
    pub wire_bytes: u64,
    /// Datagrams the kernel refused (a full socket buffer): the source does not wait.
    pub send_errors: u64,
}

/// Sends `packet_size`-byte packets (on the wire) from `bind` to `to` at `rate_bps` for
/// `time`: evenly spaced, or with exponential gaps of the same mean (`poisson`). Late
/// packets go out at once, so the mean rate holds when the sleeps overshoot.
pub fn blast(
    bind: SocketAddr,
    to: SocketAddr,
    rate_bps: f64,
    packet_size: usize,
    poisson: bool,
    seed: u64,
    time: Duration,
) -> io::Result<BlastReport> {
    if !(rate_bps > 0.0 && rate_bps.is_finite()) || packet_size <= UDP_IPV4_HEADERS {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("a rate > 0 and a packet size > {UDP_IPV4_HEADERS} bytes"),
        ));
    }
    let sock = UdpSocket::bind(bind)?;
    sock.connect(to)?;
    let payload = vec![0xc5_u8; packet_size - UDP_IPV4_HEADERS];
    let spacing = packet_size as f64 * 8.0 / rate_bps;
    if Duration::try_from_secs_f64(spacing).is_err() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("rate {rate_bps} bit/s: too low to space {packet_size}-byte packets"),
        ));
    }
    let mut draws = Draws::new(seed);
    let start = clock();
    let mut next = Duration::ZERO;
    let mut r = BlastReport {
        packets: 0,
        wire_bytes: 0,
        send_errors: 0,
    };
    while next < time {
        let now = start.elapsed();
        if next > now {
            std::thread::sleep(next - now);
        }
        match sock.send(&payload) {
            Ok(_) => {
                r.packets += 1;
                r.wire_bytes += packet_size as u64;
            }
            Err(_) => r.send_errors += 1,
        }
        let gap = if poisson {
            -(1.0 - draws.uniform()).ln() * spacing
        } else {
            spacing
        };
        next += Duration::try_from_secs_f64(gap).unwrap_or(time);
    }
    Ok(r)
}

/// What a sink received.
#[derive(Debug, Clone, Serialize)]
pub struct SinkReport {
    /// Datagrams received.
    pub packets: u64,
    /// Bytes on the wire (IPv4 and UDP headers counted).
    pub wire_bytes: u64,
    /// Wire bytes received inside the window.
    pub window_bytes: u64,
    /// The window's length, seconds.
    pub window_s: f64,
    /// `window_bytes` over the window, Mbit/s.
    pub window_mbps: f64,
}

/// Counts the datagrams that reach `bind` for `time`; `window` (start, length) is counted
/// apart, from the call.
pub fn sink(
    bind: SocketAddr,
    time: Duration,
    window: (Duration, Duration),
) -> io::Result<SinkReport> {
    let sock = UdpSocket::bind(bind)?;
    sock.set_read_timeout(Some(Duration::from_millis(100)))?;
    let start = clock();
    let mut buf = vec![0u8; 65_536];
    let (mut packets, mut wire, mut in_window) = (0u64, 0u64, 0u64);
    while start.elapsed() < time {
        match sock.recv(&mut buf) {
            Ok(n) => {
                let at = start.elapsed();
                let b = (n + UDP_IPV4_HEADERS) as u64;
                packets += 1;
                wire += b;
                if at >= window.0 && at < window.0.saturating_add(window.1) {
                    in_window += b;
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock
                        | io::ErrorKind::TimedOut
                        | io::ErrorKind::Interrupted
                ) => {}
            Err(e) => return Err(e),
        }
    }
    let secs = window.1.as_secs_f64();
    Ok(SinkReport {
        packets,
        wire_bytes: wire,
        window_bytes: in_window,
        window_s: secs,
        window_mbps: if secs > 0.0 {
            in_window as f64 * 8.0 / secs / 1e6
        } else {
            0.0
        },
    })
}

/// The laws of an on/off flow: Pareto bursts and gaps (mean, shape).
#[derive(Debug, Clone, Copy)]
pub struct OnOff {
    /// Mean burst, bytes.
    pub size_mean: f64,
    /// Pareto shape of bursts.
    pub size_shape: f64,
    /// Mean gap, seconds.
    pub gap_mean: f64,
    /// Pareto shape of gaps.
    pub gap_shape: f64,
}

/// What an on/off sender did.
#[derive(Debug, Clone, Serialize)]
pub struct OnOffReport {
    /// Bursts started.
    pub bursts: u64,
    /// Bytes written.
    pub bytes: u64,
}

/// Connects from `bind` to `to` with congestion control `cc` and, for `time`, alternates a
/// Pareto gap (the first one too: a random phase) with a Pareto burst that ends when the
/// kernel has every byte of it acknowledged.
pub fn send_onoff(
    bind: SocketAddr,
    to: SocketAddr,
    cc: Option<&str>,
    law: OnOff,
    seed: u64,
    time: Duration,
) -> io::Result<OnOffReport> {
    let finite = |v: f64| v.is_finite() && v > 0.0;
    if !(finite(law.size_mean)
        && finite(law.gap_mean)
        && law.size_shape > 1.0
        && law.gap_shape > 1.0)
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "on/off laws: means > 0 and Pareto shapes > 1 (a finite mean)",
        ));
    }
    let mut conn = crate::stream::connect(bind, to, cc, false, None)?;
    let mut draws = Draws::new(seed);
    let start = clock();
    let buf = vec![0x3c_u8; 64 * 1024];
    let mut r = OnOffReport {
        bursts: 0,
        bytes: 0,
    };
    let until = |d: Duration| {
        let left = time.saturating_sub(start.elapsed());
        std::thread::sleep(d.min(left));
    };
    loop {
        let gap = braid_sim::topology::pareto(law.gap_mean, law.gap_shape, draws.uniform());
        until(Duration::try_from_secs_f64(gap).unwrap_or(time));
        if start.elapsed() >= time {
            break;
        }
        let size = braid_sim::topology::pareto(law.size_mean, law.size_shape, draws.uniform());
        let mut left = (size.ceil() as u64).max(1);
        r.bursts += 1;
        while left > 0 && start.elapsed() < time {
            let n = left.min(buf.len() as u64) as usize;
            conn.write_all(&buf[..n])?;
            left -= n as u64;
            r.bytes += n as u64;
        }
        // The burst ends when it is delivered: nothing left unacknowledged.
        while start.elapsed() < time && crate::sys::unacked_bytes(&conn)? > 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    crate::stream::finish(conn)?;
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_uniform_and_repeatable() {
        let mut a = Draws::new(7);
        let mut b = Draws::new(7);
        let xs: Vec<f64> = (0..10_000).map(|_| a.uniform()).collect();
        assert!(xs.iter().all(|&x| (0.0..1.0).contains(&x)));
        assert_eq!(xs[..5], (0..5).map(|_| b.uniform()).collect::<Vec<_>>()[..]);
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!((mean - 0.5).abs() < 0.01, "mean {mean}");
        assert_ne!(Draws::new(8).uniform(), xs[0]);
    }

    #[test]
    fn a_constant_source_reaches_its_sink_at_its_rate() {
        let port = UdpSocket::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let at: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let window = (Duration::from_millis(100), Duration::from_millis(400));
        // The sink outlasts the source by far: the count, not the timing, is checked.
        let rx = std::thread::spawn(move || sink(at, Duration::from_millis(2000), window));
        std::thread::sleep(Duration::from_millis(50));
        let bind: SocketAddr = "127.0.0.1:0".parse().unwrap();
        // 8 Mbit/s of 1000-byte packets: 1000 a second.
        let sent = blast(bind, at, 8e6, 1000, false, 1, Duration::from_millis(600)).unwrap();
        let got = rx.join().unwrap().unwrap();
        // The schedule, not the clock, sets the count: 600 ms at 1 ms spacing.
        assert_eq!(sent.packets, 600);
        assert!(
            got.packets <= sent.packets && got.packets * 100 >= sent.packets * 95,
            "received {} of {}",
            got.packets,
            sent.packets
        );
        assert_eq!(got.wire_bytes, got.packets * 1000);
        assert!(
            (4.0..12.0).contains(&got.window_mbps),
            "window rate {} Mbit/s",
            got.window_mbps
        );
    }

    #[test]
    fn a_poisson_source_keeps_its_mean_rate() {
        // A socket that never reads: its full buffer drops quietly (no ICMP, no send error).
        let quiet = UdpSocket::bind("127.0.0.1:0").unwrap();
        let to = quiet.local_addr().unwrap();
        let bind: SocketAddr = "127.0.0.1:0".parse().unwrap();
        // 1000 packets a second on average for 0.6 s: 600 expected, a standard deviation of
        // about 24; the seed fixes the draw.
        let r = blast(bind, to, 8e6, 1000, true, 3, Duration::from_millis(600)).unwrap();
        assert_eq!(r.send_errors, 0);
        assert!((500..=700).contains(&r.packets), "sent {}", r.packets);
        let again = blast(bind, to, 8e6, 1000, true, 3, Duration::from_millis(600)).unwrap();
        assert_eq!(r.packets, again.packets, "the same seed, the same gaps");
    }
}
