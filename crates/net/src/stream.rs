//! Per-stream handles: [`SendStream`] and [`RecvStream`].

use std::future::poll_fn;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use braid_proto::{ReceivedMessage, SendOptions};
use bytes::{Buf, Bytes};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::driver::Control;
use crate::shared::Enqueue;
use crate::{Association, Error};

/// Default size of the messages `AsyncWrite` cuts bytes into.
pub const DEFAULT_WRITE_CHUNK: usize = 16 * 1024;

/// The sending side of one outbound stream ([`Association::open_stream`]). Keeps the
/// association open while it lives (it holds an [`Association`] handle).
///
/// `tokio::io::AsyncWrite` cuts the bytes written into messages of at most
/// [`SendStream::set_write_chunk`] bytes (16 KiB by default), sent with this handle's
/// [`SendOptions`]; `poll_flush` and `poll_shutdown` return at once (the bytes are queued
/// in braid, which delivers them; an SCTP stream has no half-close of its own: use
/// [`Association::shutdown`]).
#[derive(Debug)]
pub struct SendStream {
    assoc: Association,
    stream: u16,
    opts: SendOptions,
    chunk: usize,
}

impl SendStream {
    pub(crate) fn new(assoc: Association, stream: u16) -> Self {
        Self {
            assoc,
            stream,
            opts: SendOptions::default(),
            chunk: DEFAULT_WRITE_CHUNK,
        }
    }

    /// The stream's number.
    pub fn id(&self) -> u16 {
        self.stream
    }

    /// The association.
    pub fn association(&self) -> &Association {
        &self.assoc
    }

    /// Options of the messages this handle sends (PPID, unordered, lifetime...).
    pub fn set_options(&mut self, opts: SendOptions) {
        self.opts = opts;
    }

    /// Largest message `AsyncWrite` makes (at least 1 byte; also capped by the
    /// association's largest message).
    pub fn set_write_chunk(&mut self, bytes: usize) {
        self.chunk = bytes.max(1);
    }

    /// Queues one message on this stream, as [`Association::send`] (same cancel safety).
    ///
    /// # Errors
    ///
    /// As [`Association::send`].
    pub async fn send(&self, data: Bytes) -> Result<(), Error> {
        self.assoc.send(self.stream, data, self.opts).await
    }

    /// This stream's priority for the priority stream scheduler (lower goes first;
    /// default 0; RFC 8260 §3.4).
    ///
    /// # Errors
    ///
    /// [`Error::EndpointClosed`].
    pub fn set_priority(&self, priority: u16) -> Result<(), Error> {
        self.assoc
            .control(Control::StreamPriority(self.stream, priority))
    }

    /// This stream's weight for the weighted fair queueing scheduler (default 1).
    ///
    /// # Errors
    ///
    /// [`Error::EndpointClosed`].
    pub fn set_weight(&self, weight: u16) -> Result<(), Error> {
        self.assoc
            .control(Control::StreamWeight(self.stream, weight))
    }

    /// Maps this stream to the path with index `path` (see [`braid_proto::PathInfo::id`]):
    /// honoured by the `Fixed` stream scheduler (Dreibholz et al. §4); a path index the
    /// association does not have falls back to `stream % paths`.
    ///
    /// # Errors
    ///
    /// [`Error::EndpointClosed`].
    pub fn set_path(&self, path: u16) -> Result<(), Error> {
        self.assoc.control(Control::StreamPath(self.stream, path))
    }
}

impl AsyncWrite for SendStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if buf.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let this = self.get_mut();
        let outcome = {
            let mut s = this.assoc.shared().lock();
            if let Some(r) = &s.closed {
                let e = Error::Closed(r.clone());
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::BrokenPipe, e)));
            }
            if s.shutting_down {
                let e = Error::Send(braid_proto::SendError::ShuttingDown);
                return Poll::Ready(Err(io::Error::new(io::ErrorKind::BrokenPipe, e)));
            }
            let max = s.limits.map_or(this.chunk, |(_, max, _)| max);
            let n = buf.len().min(this.chunk).min(max);
            let data = Bytes::copy_from_slice(&buf[..n]);
            match s.enqueue(this.stream, &data, this.opts) {
                Enqueue::Full => {
                    // Registered under the lock the task takes to free room: no lost wake-up.
                    s.send_wakers.push(cx.waker().clone());
                    return Poll::Pending;
                }
                o => (o, n),
            }
        };
        match outcome {
            (Enqueue::Queued(kick), n) => {
                if kick {
                    this.assoc.kick();
                }
                Poll::Ready(Ok(n))
            }
            _ => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("stream {} cannot be sent on", this.stream),
            ))),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

/// The receiving side of one inbound stream ([`Association::recv_stream`],
/// [`Association::accept_stream`]): every message of the stream comes here, none to
/// [`Association::recv`]. Keeps the association open while it lives. Dropping it hands
/// the stream back to `recv` (unread messages included; the unread rest of a message
/// `AsyncRead` was in the middle of goes with the handle).
///
/// `tokio::io::AsyncRead` reads the stream's messages as one byte stream (message
/// boundaries are lost); it ends (EOF) after a graceful shutdown and fails with
/// `ConnectionAborted` after any other close.
///
/// The receive queues of an association share one budget: a `RecvStream` that is not read
/// eventually stops delivery on every stream (flow control, as with one receive buffer).
#[derive(Debug)]
pub struct RecvStream {
    assoc: Association,
    stream: u16,
    /// The rest of the message `AsyncRead` is in the middle of.
    leftover: Bytes,
}

impl RecvStream {
    pub(crate) fn new(assoc: Association, stream: u16) -> Self {
        Self {
            assoc,
            stream,
            leftover: Bytes::new(),
        }
    }

    /// The stream's number.
    pub fn id(&self) -> u16 {
        self.stream
    }

    /// The association.
    pub fn association(&self) -> &Association {
        &self.assoc
    }

    /// The next message of this stream, with [`Association::recv`]'s ends: `Ok(None)`
    /// after a graceful shutdown, `Err(Error::Closed(reason))` after any other close, once
    /// every message is read. Bytes `AsyncRead` left of a message are not returned here.
    ///
    /// Cancel safety: dropping the future loses no message.
    ///
    /// # Errors
    ///
    /// As [`Association::recv`].
    pub async fn recv(&mut self) -> Result<Option<ReceivedMessage>, Error> {
        poll_fn(|cx| self.poll_recv(cx)).await
    }

    /// Poll form of [`RecvStream::recv`].
    pub fn poll_recv(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Option<ReceivedMessage>, Error>> {
        let (m, kick) = {
            let mut s = self.assoc.shared().lock();
            let popped = s
                .streams
                .get_mut(&self.stream)
                .and_then(|rx| rx.q.pop_front());
            match popped {
                Some(m) => {
                    let kick = s.took(m.data.len());
                    (m, kick)
                }
                None if s.recv_done => return Poll::Ready(s.end()),
                None => {
                    if let Some(rx) = s.streams.get_mut(&self.stream) {
                        rx.waker = Some(cx.waker().clone());
                    }
                    drop(s);
                    if self.assoc.inner.cmd.is_closed() {
                        return Poll::Ready(self.assoc.shared().lock().end());
                    }
                    return Poll::Pending;
                }
            }
        };
        if kick {
            self.assoc.kick();
        }
        Poll::Ready(Ok(Some(m)))
    }
}

impl AsyncRead for RecvStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        while this.leftover.is_empty() {
            match this.poll_recv(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(Some(m))) => this.leftover = m.data,
                Poll::Ready(Ok(None)) => return Poll::Ready(Ok(())),
                Poll::Ready(Err(e)) => {
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::ConnectionAborted, e)));
                }
            }
        }
        let n = this.leftover.len().min(buf.remaining());
        buf.put_slice(&this.leftover[..n]);
        this.leftover.advance(n);
        Poll::Ready(Ok(()))
    }
}

impl Drop for RecvStream {
    fn drop(&mut self) {
        let shared = self.assoc.shared();
        let moved = {
            let mut s = shared.lock();
            match s.streams.remove(&self.stream) {
                // Stays in `offered`: the stream is not offered to accept_stream again.
                Some(rx) if !rx.q.is_empty() => {
                    s.recv_q.extend(rx.q);
                    true
                }
                _ => false,
            }
        };
        if moved {
            shared.recv_ready.notify_one();
        }
    }
}
