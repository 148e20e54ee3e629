//! Plain UDP: one datagram per message, no reliability, order or congestion control, one
//! stream. A candidate only when reliability, preserveOrder and congestionControl are not
//! required (RFC 9622 §6.2; RFC 9623 §4.1.2).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use tokio::net::UdpSocket;
use tokio::sync::{Mutex, mpsc};

use super::Inbound;
use crate::error::ConnectionError;

/// Largest UDP payload over IPv4.
const MAX_DATAGRAM: usize = 65507;

/// A UDP flow: a connected socket (client) or one remote of a listening socket.
#[derive(Debug)]
pub(crate) struct UdpLink {
    sock: Arc<UdpSocket>,
    /// `Some` on a listener's flow: datagrams the listener demultiplexed to this remote.
    rx: Option<Mutex<mpsc::Receiver<Bytes>>>,
    remote: SocketAddr,
    closed: std::sync::atomic::AtomicBool,
}

pub(crate) async fn connect(local: SocketAddr, remote: SocketAddr) -> Result<UdpLink, String> {
    let s = UdpSocket::bind(local)
        .await
        .map_err(|e| format!("bind {local}: {e}"))?;
    s.connect(remote).await.map_err(|e| e.to_string())?;
    // RFC 9623 §4.2: a connectionless protocol is ready at once, no handshake to wait for.
    Ok(UdpLink {
        sock: Arc::new(s),
        rx: None,
        remote,
        closed: Default::default(),
    })
}

impl UdpLink {
    pub(crate) fn remote(&self) -> SocketAddr {
        self.remote
    }

    pub(crate) async fn send(&self, data: Bytes) -> Result<(), ConnectionError> {
        if data.len() > MAX_DATAGRAM {
            return Err(ConnectionError::Send(format!(
                "message of {} bytes > {MAX_DATAGRAM} (one datagram)",
                data.len()
            )));
        }
        if self.closed.load(std::sync::atomic::Ordering::Relaxed) {
            return Err(ConnectionError::Closed);
        }
        let r = match self.rx {
            None => self.sock.send(&data).await,
            Some(_) => self.sock.send_to(&data, self.remote).await,
        };
        r.map(|_| ())
            .map_err(|e| ConnectionError::Send(e.to_string()))
    }

    pub(crate) async fn recv(&self) -> Option<Inbound> {
        let data = match &self.rx {
            Some(rx) => rx.lock().await.recv().await?,
            None => {
                let mut buf = vec![0u8; MAX_DATAGRAM];
                loop {
                    if self.closed.load(std::sync::atomic::Ordering::Relaxed) {
                        return None;
                    }
                    // ICMP port unreachable surfaces as an error on a connected socket: the
                    // flow keeps going (UDP has no connection to lose).
                    if let Ok(n) = self.sock.recv(&mut buf).await {
                        buf.truncate(n);
                        break Bytes::from(buf);
                    }
                }
            }
        };
        Some(Inbound {
            stream: 0,
            data,
            ordered: false,
            end: false,
        })
    }

    pub(crate) fn close(&self) {
        self.closed
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A UDP socket on `local` that makes a flow of each new remote, handed to `tx`.
pub(crate) async fn listen(
    local: SocketAddr,
    tx: mpsc::Sender<UdpLink>,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), String> {
    let s = Arc::new(
        UdpSocket::bind(local)
            .await
            .map_err(|e| format!("udp bind {local}: {e}"))?,
    );
    let bound = s.local_addr().map_err(|e| e.to_string())?;
    let task = tokio::spawn(async move {
        let mut flows: HashMap<SocketAddr, mpsc::Sender<Bytes>> = HashMap::new();
        let mut buf = vec![0u8; MAX_DATAGRAM];
        loop {
            let Ok((n, from)) = s.recv_from(&mut buf).await else {
                continue;
            };
            let data = Bytes::copy_from_slice(&buf[..n]);
            if let Some(f) = flows.get(&from) {
                // A full flow queue drops the datagram, as a socket buffer would.
                if f.try_send(data.clone()).is_ok() || !f.is_closed() {
                    continue;
                }
                flows.remove(&from);
            }
            let (ftx, frx) = mpsc::channel(256);
            let _ = ftx.try_send(data);
            flows.insert(from, ftx);
            let link = UdpLink {
                sock: s.clone(),
                rx: Some(Mutex::new(frx)),
                remote: from,
                closed: Default::default(),
            };
            if tx.send(link).await.is_err() {
                break;
            }
        }
    });
    Ok((bound, task))
}
