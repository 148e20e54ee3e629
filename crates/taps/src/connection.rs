//! Connections and connection groups (RFC 9622 §7.4, §9, §10).
//!
//! A group is one transport connection (a braid association, a framed TCP socket, a UDP
//! flow) and every Connection of the group is one stream of it: stream 0 is the
//! Connection that `initiate()` or the Listener returned, `clone_in_group()` takes the next free
//! stream (even ids on the initiating side, odd on the accepting side, so that both sides
//! can clone at once without a collision, as QUIC does, RFC 9000 §2.1).
//!
//! **Closing one Connection of a group.** braid has no RFC 6525 stream reset, so braid-taps
//! closes a stream in band: `close()` sends an end-of-stream marker on the stream (braid: a
//! one-byte message with PPID `0x42726445`; TCP framer: a frame with the end flag) after
//! everything already sent on it. The peer's Connection then reads the rest and sees
//! `receive() → Ok(None)`. Closing the last Connection of a group closes the transport
//! (braid SHUTDOWN, TCP FIN). `abort()` aborts the whole transport, every Connection of the
//! group: without a stream reset, outstanding data of one stream cannot be withdrawn alone.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::mpsc;

use crate::error::ConnectionError;
use crate::message::{Message, MessageContext};
use crate::stack::{Inbound, Link, StackKind};

/// Messages buffered per Connection before the group's reader waits (a slow reader of one
/// Connection then holds up the others of its group: documented head-of-line blocking).
const STREAM_QUEUE: usize = 256;

#[derive(Debug)]
struct Slot {
    /// `None` once the peer closed the stream (or the transport closed).
    tx: Option<mpsc::Sender<Inbound>>,
    /// Whether our side still has it open.
    local_open: bool,
}

#[derive(Debug)]
struct GroupState {
    streams: HashMap<u16, Slot>,
    next_local: u16,
    closed: bool,
}

/// One transport connection and its streams.
#[derive(Debug)]
pub(crate) struct Group {
    link: Arc<Link>,
    state: Mutex<GroupState>,
    /// Streams the peer opened, not yet handed to the application.
    incoming: tokio::sync::Mutex<mpsc::UnboundedReceiver<(u16, mpsc::Receiver<Inbound>)>>,
    initiator: bool,
    conn_priority: u32,
    local: Option<SocketAddr>,
    reader: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl Drop for Group {
    fn drop(&mut self) {
        if let Ok(mut r) = self.reader.lock()
            && let Some(t) = r.take()
        {
            t.abort();
        }
        let closed = self.state.lock().map(|s| s.closed).unwrap_or(true);
        if !closed {
            // The last handle went away without close(): close gracefully if a runtime is
            // still there, else abort.
            let link = self.link.clone();
            match tokio::runtime::Handle::try_current() {
                Ok(h) => {
                    h.spawn(async move { link.close().await });
                }
                Err(_) => link.abort(),
            }
        }
    }
}

fn lock(m: &Mutex<GroupState>) -> std::sync::MutexGuard<'_, GroupState> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Makes a group of an established link and returns its first Connection (stream 0).
pub(crate) fn new_group(
    link: Link,
    initiator: bool,
    conn_priority: u32,
    local: Option<SocketAddr>,
) -> Connection {
    let (in_tx, in_rx) = mpsc::unbounded_channel();
    let (tx0, rx0) = mpsc::channel(STREAM_QUEUE);
    let mut streams = HashMap::new();
    streams.insert(
        0,
        Slot {
            tx: Some(tx0),
            local_open: true,
        },
    );
    let group = Arc::new(Group {
        link: Arc::new(link),
        state: Mutex::new(GroupState {
            streams,
            next_local: if initiator { 2 } else { 1 },
            closed: false,
        }),
        incoming: tokio::sync::Mutex::new(in_rx),
        initiator,
        conn_priority,
        local,
        reader: Mutex::new(None),
    });
    group.link.set_stream_priority(0, conn_priority);
    let task = tokio::spawn(read_loop(Arc::downgrade(&group), group.link.clone(), in_tx));
    if let Ok(mut r) = group.reader.lock() {
        *r = Some(task);
    }
    Connection::new(group, 0, rx0)
}

/// Routes each inbound message to its stream's Connection; a stream not seen before is a
/// Connection the peer cloned (RFC 9622 §7.4).
async fn read_loop(
    group: Weak<Group>,
    link: Arc<Link>,
    incoming: mpsc::UnboundedSender<(u16, mpsc::Receiver<Inbound>)>,
) {
    while let Some(m) = link.recv().await {
        let Some(g) = group.upgrade() else { return };
        let tx = {
            let mut st = lock(&g.state);
            let slot = st.streams.entry(m.stream).or_insert_with(|| {
                let (tx, rx) = mpsc::channel(STREAM_QUEUE);
                let _ = incoming.send((m.stream, rx));
                Slot {
                    tx: Some(tx),
                    local_open: true,
                }
            });
            if m.end {
                slot.tx.take();
                None
            } else {
                slot.tx.clone()
            }
        };
        drop(g);
        if let Some(tx) = tx {
            // A Connection dropped by the application: its messages go nowhere.
            let _ = tx.send(m).await;
        }
    }
    if let Some(g) = group.upgrade() {
        let mut st = lock(&g.state);
        st.closed = true;
        for s in st.streams.values_mut() {
            s.tx.take();
        }
    }
}

/// A Connection (RFC 9622 §7): one stream of a group's transport connection.
///
/// A cheap handle: [`Clone`] gives another handle to the same Connection (the same
/// stream), to share it between tasks. Handles share its receive queue (each message goes
/// to one `receive`), `close` through any of them closes it for all, and dropping counts as
/// closing only when the last handle goes. RFC 9622's Clone, which opens a new Connection
/// in the group, is [`Connection::clone_in_group`].
#[derive(Debug, Clone)]
pub struct Connection {
    inner: Arc<ConnInner>,
}

/// What every handle of one Connection shares; dropping it closes the Connection.
#[derive(Debug)]
struct ConnInner {
    group: Arc<Group>,
    stream: u16,
    rx: tokio::sync::Mutex<mpsc::Receiver<Inbound>>,
}

/// What a Connection runs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionInfo {
    /// The stack that won the race (or that the Listener accepted on).
    pub stack: StackKind,
    /// The peer's address.
    pub remote: SocketAddr,
    /// Our address, if known.
    pub local: Option<SocketAddr>,
    /// The stream (braid stream id or framed stream id) of this Connection.
    pub stream: u16,
    /// connPriority (RFC 9622 §8.1.2): the braid stream's priority (Priority scheduler).
    pub conn_priority: u32,
}

impl Connection {
    fn new(group: Arc<Group>, stream: u16, rx: mpsc::Receiver<Inbound>) -> Self {
        Self {
            inner: Arc::new(ConnInner {
                group,
                stream,
                rx: tokio::sync::Mutex::new(rx),
            }),
        }
    }

    /// Sets this Connection's connPriority (RFC 9622 §8.1.2, lower is more important): on
    /// braid its stream's priority, which `connScheduler = Priority` orders streams by; on
    /// TCP and UDP (one flow) nothing changes. Takes effect for data the association has
    /// not yet sent; braid-net's association-wide send queue in front of the scheduler
    /// (up to 1 MiB) still leaves in the order it was queued.
    pub fn set_priority(&self, priority: u32) {
        self.inner
            .group
            .link
            .set_stream_priority(self.inner.stream, priority);
    }

    /// The stack, addresses and stream of this Connection.
    pub fn info(&self) -> ConnectionInfo {
        ConnectionInfo {
            stack: self.inner.group.link.stack(),
            remote: self.inner.group.link.remote(),
            local: self.inner.group.local,
            stream: self.inner.stream,
            conn_priority: self.inner.group.conn_priority,
        }
    }

    /// The stack this Connection runs on.
    pub fn stack(&self) -> StackKind {
        self.inner.group.link.stack()
    }

    /// `Send` (RFC 9622 §9.2): queues a message on this Connection's stream. With
    /// `context.is_final` the stream is closed after it.
    ///
    /// # Errors
    ///
    /// [`ConnectionError::Closed`] once this Connection is closed, or what the stack refused.
    pub async fn send(&self, msg: Message) -> Result<(), ConnectionError> {
        if !self.locally_open() {
            return Err(ConnectionError::Closed);
        }
        let is_final = msg.context.is_final;
        self.inner
            .group
            .link
            .send(self.inner.stream, msg.data, &msg.context)
            .await?;
        if is_final {
            self.close().await;
        }
        Ok(())
    }

    /// Shorthand for `send(Message::new(data))`.
    ///
    /// # Errors
    ///
    /// As [`Connection::send`].
    pub async fn send_bytes(&self, data: impl Into<bytes::Bytes>) -> Result<(), ConnectionError> {
        self.send(Message::new(data)).await
    }

    /// `Receive` (RFC 9622 §9.3): the next whole message of this Connection; `Ok(None)` once
    /// the peer closed it (or the transport closed) and every message was read.
    ///
    /// # Errors
    ///
    /// None today; the `Result` leaves room for stack receive errors.
    pub async fn receive(&self) -> Result<Option<Message>, ConnectionError> {
        let mut rx = self.inner.rx.lock().await;
        Ok(rx.recv().await.map(|m| Message {
            data: m.data,
            context: MessageContext {
                ordered: m.ordered,
                stream: m.stream,
                ..MessageContext::default()
            },
        }))
    }

    fn locally_open(&self) -> bool {
        let st = lock(&self.inner.group.state);
        !st.closed
            && st
                .streams
                .get(&self.inner.stream)
                .is_some_and(|s| s.local_open)
    }

    /// `Close` (RFC 9622 §10): closes this Connection's stream after the messages already
    /// sent (in-band end-of-stream marker); the last Connection of the group closes the
    /// transport gracefully.
    pub async fn close(&self) {
        let last = {
            let mut st = lock(&self.inner.group.state);
            let Some(s) = st.streams.get_mut(&self.inner.stream) else {
                return;
            };
            if !s.local_open {
                return;
            }
            s.local_open = false;
            !st.streams.values().any(|s| s.local_open)
        };
        if last {
            lock(&self.inner.group.state).closed = true;
            self.inner.group.link.close().await;
        } else {
            let _ = self.inner.group.link.send_end(self.inner.stream).await;
        }
    }

    /// `Abort` (RFC 9622 §10): aborts the group's transport at once (every Connection of
    /// the group: braid has no stream reset to abort one stream alone).
    pub fn abort(&self) {
        let mut st = lock(&self.inner.group.state);
        st.closed = true;
        for s in st.streams.values_mut() {
            s.local_open = false;
        }
        drop(st);
        self.inner.group.link.abort();
    }

    /// `CloseGroup` (RFC 9622 §10): closes every Connection of the group and the transport.
    pub async fn close_group(&self) {
        {
            let mut st = lock(&self.inner.group.state);
            st.closed = true;
            for s in st.streams.values_mut() {
                s.local_open = false;
            }
        }
        self.inner.group.link.close().await;
    }

    /// `Clone` (RFC 9622 §7.4): a new Connection in this one's group, on the next free
    /// stream of the same transport (braid: another stream of the association; TCP:
    /// another framed stream id on the same socket). The peer sees it through
    /// [`Connection::connection_received`] when the first message arrives. (Rust's
    /// [`Clone`] is another handle to this same Connection.)
    ///
    /// # Errors
    ///
    /// [`ConnectionError::Clone`] when the transport has no free stream (plain UDP has
    /// one), [`ConnectionError::Closed`] once the group is closed.
    pub fn clone_in_group(&self) -> Result<Connection, ConnectionError> {
        let max = self.inner.group.link.max_streams();
        let mut st = lock(&self.inner.group.state);
        if st.closed {
            return Err(ConnectionError::Closed);
        }
        let mut id = st.next_local;
        while st.streams.contains_key(&id) {
            id = id.saturating_add(2);
            if id >= max || id == u16::MAX {
                break;
            }
        }
        if id >= max || st.streams.contains_key(&id) {
            return Err(ConnectionError::Clone(format!(
                "no free stream on {} ({max} streams)",
                self.inner.group.link.stack()
            )));
        }
        st.next_local = id.saturating_add(2);
        let (tx, rx) = mpsc::channel(STREAM_QUEUE);
        st.streams.insert(
            id,
            Slot {
                tx: Some(tx),
                local_open: true,
            },
        );
        drop(st);
        self.inner
            .group
            .link
            .set_stream_priority(id, self.inner.group.conn_priority);
        Ok(Connection::new(self.inner.group.clone(), id, rx))
    }

    /// The next Connection the peer cloned into this group (RFC 9622 §7.4: a new stream
    /// of the same transport); `None` once the transport is closed.
    pub async fn connection_received(&self) -> Option<Connection> {
        let (id, rx) = self.inner.group.incoming.lock().await.recv().await?;
        Some(Connection::new(self.inner.group.clone(), id, rx))
    }

    /// How many Connections of this group are open on our side.
    pub fn group_size(&self) -> usize {
        lock(&self.inner.group.state)
            .streams
            .values()
            .filter(|s| s.local_open)
            .count()
    }

    /// The (local, remote) address pairs of the group's transport: braid's paths (several
    /// when multi-homed), one pair otherwise (the local address unspecified).
    pub async fn paths(&self) -> Vec<(SocketAddr, SocketAddr)> {
        self.inner.group.link.paths().await
    }

    /// Whether this side initiated the group's transport.
    pub fn is_initiator(&self) -> bool {
        self.inner.group.initiator
    }
}

impl Drop for ConnInner {
    fn drop(&mut self) {
        // The last handle dropped counts as closed on our side (RFC 9622 §10); the end marker
        // or the transport close is sent from a task if a runtime is still there.
        let last = {
            let mut st = lock(&self.group.state);
            let was_open = st
                .streams
                .get_mut(&self.stream)
                .map(|s| std::mem::replace(&mut s.local_open, false))
                .unwrap_or(false);
            if !was_open || st.closed {
                return;
            }
            let last = !st.streams.values().any(|s| s.local_open);
            if last {
                st.closed = true;
            }
            last
        };
        let (link, stream) = (self.group.link.clone(), self.stream);
        match tokio::runtime::Handle::try_current() {
            Ok(h) => {
                h.spawn(async move {
                    if last {
                        link.close().await;
                    } else {
                        let _ = link.send_end(stream).await;
                    }
                });
            }
            Err(_) if last => link.abort(),
            Err(_) => {}
        }
    }
}
