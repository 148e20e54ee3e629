//! Bulk TCP and MPTCP streams of the kernel, the competitors of a testbed run: a sender that
//! writes for a given time and a receiver that counts what its application reads.
//!
//! Goodput is measured where the simulator measures it, at the receiving application:
//! bytes read over the time from the first byte (or from `omit` after it) to the end of
//! the stream. MPTCP is `IPPROTO_MPTCP` (RFC 8684, Linux's in-kernel path manager: the
//! testbed announces the receiver's other addresses as `signal` endpoints).

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use serde::Serialize;
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

/// `IPPROTO_MPTCP` (Linux, include/uapi/linux/in.h).
pub const IPPROTO_MPTCP: i32 = 262;

/// What a receiver measured.
#[derive(Debug, Clone, Serialize)]
pub struct StreamReport {
    /// Bytes its application read.
    pub bytes: u64,
    /// Seconds from the first byte to the end of the stream.
    pub duration_s: f64,
    /// Goodput over that time, Mbit/s.
    pub goodput_mbps: f64,
    /// Seconds left out at the start of `omit_goodput_mbps`.
    pub omit_s: f64,
    /// Goodput after `omit_s`, Mbit/s (absent if the stream ended before).
    pub omit_goodput_mbps: Option<f64>,
    /// The protocol the receiver accepted with: `tcp` or `mptcp`.
    pub protocol: &'static str,
    /// Bytes read inside the window asked for (counted from the call, as the simulator
    /// counts a run's window from its start: cross traffic's bursts start at random times).
    pub window_bytes: Option<u64>,
}

fn socket(addr: &SocketAddr, mptcp: bool) -> io::Result<Socket> {
    let proto = if mptcp {
        Protocol::from(IPPROTO_MPTCP)
    } else {
        Protocol::TCP
    };
    Socket::new(Domain::for_address(*addr), Type::STREAM, Some(proto))
}

/// Accepts one stream on `bind`, reads it to its end and reports; `window` (start, length
/// from the call) is counted apart.
pub fn receive(
    bind: SocketAddr,
    mptcp: bool,
    omit: Duration,
    buffer: Option<u64>,
    window: Option<(Duration, Duration)>,
) -> io::Result<StreamReport> {
    let called = clock();
    let s = socket(&bind, mptcp)?;
    if let Some(b) = buffer {
        // Set on the listener, inherited by the accepted socket (before the handshake, so
        // the window scale fits it).
        s.set_recv_buffer_size(usize::try_from(b).unwrap_or(usize::MAX))?;
    }
    s.set_reuse_address(true)?;
    s.bind(&SockAddr::from(bind))?;
    s.listen(1)?;
    let listener: TcpListener = s.into();
    let (mut conn, _) = listener.accept()?;
    let mut buf = vec![0u8; 256 * 1024];
    let mut bytes = 0u64;
    let mut first = None;
    let mut at_omit = None;
    let mut in_window = 0u64;
    loop {
        let n = conn.read(&mut buf)?;
        let now = clock();
        if n == 0 {
            break;
        }
        if let Some((from, len)) = window {
            let at = now.duration_since(called);
            if at >= from && at < from.saturating_add(len) {
                in_window += n as u64;
            }
        }
        let t0 = *first.get_or_insert(now);
        if at_omit.is_none() && now.duration_since(t0) >= omit {
            at_omit = Some((now, bytes));
        }
        bytes += n as u64;
    }
    let end = clock();
    let since = |t: Instant| end.duration_since(t).as_secs_f64();
    let mbps = |b: u64, secs: f64| {
        if secs > 0.0 {
            b as f64 * 8.0 / secs / 1e6
        } else {
            0.0
        }
    };
    let duration_s = first.map_or(0.0, since);
    Ok(StreamReport {
        bytes,
        duration_s,
        goodput_mbps: mbps(bytes, duration_s),
        omit_s: omit.as_secs_f64(),
        omit_goodput_mbps: at_omit.map(|(t, b)| mbps(bytes - b, since(t))),
        protocol: if mptcp { "mptcp" } else { "tcp" },
        window_bytes: window.map(|_| in_window),
    })
}

/// Connects from `bind` (port 0: any) to `to` and writes for `time` with congestion
/// control `cc` (`cubic`, `reno`, `bbr`...) and, if given, a fixed send buffer; returns the
/// bytes written.
pub fn send(
    bind: SocketAddr,
    to: SocketAddr,
    time: Duration,
    cc: Option<&str>,
    mptcp: bool,
    buffer: Option<u64>,
) -> io::Result<u64> {
    let mut conn = connect(bind, to, cc, mptcp, buffer)?;
    let buf = vec![0x5a_u8; 128 * 1024];
    let start = clock();
    let mut sent = 0u64;
    while start.elapsed() < time {
        conn.write_all(&buf)?;
        sent += buf.len() as u64;
    }
    finish(conn)?;
    Ok(sent)
}

/// A kernel stream from `bind` (port 0: any) to `to` with congestion control `cc` and, if
/// given, a fixed send buffer.
pub(crate) fn connect(
    bind: SocketAddr,
    to: SocketAddr,
    cc: Option<&str>,
    mptcp: bool,
    buffer: Option<u64>,
) -> io::Result<TcpStream> {
    let s = socket(&to, mptcp)?;
    if let Some(b) = buffer {
        s.set_send_buffer_size(usize::try_from(b).unwrap_or(usize::MAX))?;
    }
    s.bind(&SockAddr::from(bind))?;
    if let Some(cc) = cc {
        s.set_tcp_congestion(cc.as_bytes())
            .map_err(|e| io::Error::new(e.kind(), format!("congestion control {cc:?}: {e}")))?;
    }
    s.connect(&SockAddr::from(to))?;
    Ok(s.into())
}

/// Ends a sender's stream and waits until the receiver has read every byte and closed (a
/// receiver reports at the end of its stream).
pub(crate) fn finish(mut conn: TcpStream) -> io::Result<()> {
    conn.shutdown(std::net::Shutdown::Write)?;
    let mut rest = [0u8; 64];
    while conn.read(&mut rest)? > 0 {}
    Ok(())
}

/// The real clock (the testbed's endpoints').
#[expect(
    clippy::disallowed_methods,
    reason = "goodput of a real stream is measured on the real clock"
)]
pub(crate) fn clock() -> Instant {
    Instant::now()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_stream_is_counted_whole() {
        let port = {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        let at: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let rx = std::thread::spawn(move || {
            receive(
                at,
                false,
                Duration::from_millis(50),
                None,
                Some((Duration::ZERO, Duration::from_secs(60))),
            )
        });
        std::thread::sleep(Duration::from_millis(100));
        let bind: SocketAddr = "127.0.0.1:0".parse().unwrap();
        let sent = send(
            bind,
            at,
            Duration::from_millis(200),
            Some("reno"),
            false,
            None,
        )
        .unwrap();
        let r = rx.join().unwrap().unwrap();
        assert_eq!(r.bytes, sent);
        assert_eq!(
            r.window_bytes,
            Some(sent),
            "the whole stream fell in the window"
        );
        assert!(r.goodput_mbps > 0.0 && r.omit_goodput_mbps.is_some());
    }
}
