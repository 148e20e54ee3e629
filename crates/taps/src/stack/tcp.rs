//! Kernel TCP with braid-taps's message framer, so that messages and the streams of a
//! connection group survive a byte stream.
//!
//! Frame format (all integers big-endian), one frame per message:
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                     payload length (u32)                      |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |        stream id (u16)        |  flags (u8)   | reserved (0)  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 payload (payload length bytes)                |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Flags: `0x01` unordered (informational: TCP delivers in order anyway), `0x02` end of
//! stream (the sender closed this stream; payload empty). Other bits must be zero. A
//! payload longer than [`MAX_FRAME`] is a protocol error that closes the connection.

use std::net::SocketAddr;

use bytes::{BufMut, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::{Mutex, mpsc};

use super::Inbound;
use crate::error::ConnectionError;
use crate::message::MessageContext;

/// Largest payload of one frame: 16 MiB (bounds what a peer can make us allocate).
pub const MAX_FRAME: usize = 16 << 20;
/// Frame header length in bytes.
pub const HEADER_LEN: usize = 8;
/// Flag: sent unordered.
pub const FLAG_UNORDERED: u8 = 0x01;
/// Flag: end of stream.
pub const FLAG_END: u8 = 0x02;

/// One framed TCP connection.
#[derive(Debug)]
pub(crate) struct TcpLink {
    rd: Mutex<Option<OwnedReadHalf>>,
    wr: Mutex<Option<OwnedWriteHalf>>,
    /// A duplicate of the socket, so that `abort()` works while a send holds `wr`.
    ctl: Option<std::net::TcpStream>,
    remote: SocketAddr,
}

/// Encodes one frame.
pub(crate) fn encode_frame(stream: u16, flags: u8, payload: &[u8]) -> Result<Bytes, String> {
    if payload.len() > MAX_FRAME {
        return Err(format!("message of {} bytes > {MAX_FRAME}", payload.len()));
    }
    let mut b = BytesMut::with_capacity(HEADER_LEN + payload.len());
    b.put_u32(payload.len() as u32);
    b.put_u16(stream);
    b.put_u8(flags);
    b.put_u8(0);
    b.put_slice(payload);
    Ok(b.freeze())
}

/// Decodes a frame header: (payload length, stream, flags).
pub(crate) fn decode_header(h: [u8; HEADER_LEN]) -> Result<(usize, u16, u8), String> {
    let len = u32::from_be_bytes([h[0], h[1], h[2], h[3]]) as usize;
    let stream = u16::from_be_bytes([h[4], h[5]]);
    let flags = h[6];
    if len > MAX_FRAME {
        return Err(format!("frame of {len} bytes > {MAX_FRAME}"));
    }
    if flags & !(FLAG_UNORDERED | FLAG_END) != 0 || h[7] != 0 {
        return Err(format!("unknown frame flags {flags:#x}/{:#x}", h[7]));
    }
    Ok((len, stream, flags))
}

pub(crate) async fn connect(local: SocketAddr, remote: SocketAddr) -> Result<TcpLink, String> {
    let sock = if remote.is_ipv4() {
        TcpSocket::new_v4()
    } else {
        TcpSocket::new_v6()
    }
    .map_err(|e| e.to_string())?;
    sock.bind(local).map_err(|e| format!("bind {local}: {e}"))?;
    let s = sock.connect(remote).await.map_err(|e| e.to_string())?;
    Ok(TcpLink::new(s, remote))
}

impl TcpLink {
    pub(crate) fn new(s: TcpStream, remote: SocketAddr) -> Self {
        // Messages are latency-bound units: do not hold a small one back (RFC 9293 §3.7.4).
        let _ = s.set_nodelay(true);
        let ctl = s
            .into_std()
            .and_then(|std| Ok((std.try_clone().ok(), TcpStream::from_std(std)?)));
        let (ctl, s) = match ctl {
            Ok(x) => x,
            // into_std/from_std only fail on a broken socket: nothing left to keep.
            Err(e) => {
                tracing::debug!("tcp socket: {e}");
                return Self::broken(remote);
            }
        };
        let (rd, wr) = s.into_split();
        Self {
            rd: Mutex::new(Some(rd)),
            wr: Mutex::new(Some(wr)),
            ctl,
            remote,
        }
    }

    fn broken(remote: SocketAddr) -> Self {
        Self {
            rd: Mutex::new(None),
            wr: Mutex::new(None),
            ctl: None,
            remote,
        }
    }

    pub(crate) fn remote(&self) -> SocketAddr {
        self.remote
    }

    pub(crate) async fn send(
        &self,
        stream: u16,
        data: Bytes,
        ctx: &MessageContext,
        end: bool,
    ) -> Result<(), ConnectionError> {
        let mut flags = if ctx.ordered { 0 } else { FLAG_UNORDERED };
        if end {
            flags |= FLAG_END;
        }
        let frame = encode_frame(stream, flags, &data).map_err(ConnectionError::Send)?;
        let mut wr = self.wr.lock().await;
        let w = wr.as_mut().ok_or(ConnectionError::Closed)?;
        w.write_all(&frame)
            .await
            .map_err(|e| ConnectionError::Send(e.to_string()))
    }

    pub(crate) async fn recv(&self) -> Option<Inbound> {
        let mut rd = self.rd.lock().await;
        let rd = rd.as_mut()?;
        let mut h = [0u8; HEADER_LEN];
        rd.read_exact(&mut h).await.ok()?;
        let (len, stream, flags) = match decode_header(h) {
            Ok(x) => x,
            Err(e) => {
                tracing::debug!("tcp framer: {e}; closing");
                return None;
            }
        };
        let mut buf = vec![0u8; len];
        rd.read_exact(&mut buf).await.ok()?;
        Some(Inbound {
            stream,
            data: Bytes::from(buf),
            ordered: flags & FLAG_UNORDERED == 0,
            end: flags & FLAG_END != 0,
        })
    }

    pub(crate) async fn close(&self) {
        if let Some(mut w) = self.wr.lock().await.take() {
            let _ = w.shutdown().await;
        }
    }

    pub(crate) fn abort(&self) {
        // Both directions at once, even while a send or receive holds a half (a FIN, not a
        // RST: std has no SO_LINGER 0 without unsafe or another dependency).
        if let Some(c) = &self.ctl {
            let _ = c.shutdown(std::net::Shutdown::Both);
        }
        if let Ok(mut w) = self.wr.try_lock() {
            w.take();
        }
    }
}

/// A TCP listener on `local`, handing each accepted connection to `tx`.
pub(crate) async fn listen(
    local: SocketAddr,
    tx: mpsc::Sender<TcpLink>,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), String> {
    let l = TcpListener::bind(local)
        .await
        .map_err(|e| format!("tcp bind {local}: {e}"))?;
    let bound = l.local_addr().map_err(|e| e.to_string())?;
    let task = tokio::spawn(async move {
        while let Ok((s, from)) = l.accept().await {
            if tx.send(TcpLink::new(s, from)).await.is_err() {
                break;
            }
        }
    });
    Ok((bound, task))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frame_round_trip() -> Result<(), String> {
        let f = encode_frame(7, FLAG_END | FLAG_UNORDERED, b"abc")?;
        assert_eq!(&f[..], &[0, 0, 0, 3, 0, 7, 3, 0, b'a', b'b', b'c']);
        let mut h = [0u8; HEADER_LEN];
        h.copy_from_slice(&f[..HEADER_LEN]);
        assert_eq!(decode_header(h)?, (3, 7, FLAG_END | FLAG_UNORDERED));
        Ok(())
    }

    #[test]
    fn oversized_or_unknown_flags_refused() {
        assert!(decode_header([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]).is_err());
        assert!(decode_header([0, 0, 0, 1, 0, 0, 0x80, 0]).is_err());
        assert!(decode_header([0, 0, 0, 1, 0, 0, 0, 1]).is_err());
    }
}
