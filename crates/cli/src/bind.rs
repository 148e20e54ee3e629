//! Binding an endpoint, with errors that name the address (`address 127.0.0.1:9899 already
//! in use`) instead of the bare OS error.

use std::io;
use std::net::{SocketAddr, UdpSocket};

use braid_net::{Endpoint, EndpointConfig, NetConfig};

/// [`Endpoint::bind_with`], with an error message for people.
pub(crate) fn endpoint(
    cfg: EndpointConfig,
    addrs: &[SocketAddr],
    net: NetConfig,
) -> Result<Endpoint, String> {
    Endpoint::bind_with(cfg, addrs, net).map_err(|e| bind_error(addrs, &e))
}

/// Names the address that could not be bound. The io error does not say which of several
/// sockets failed, so each address is tried again alone (the failed endpoint has released
/// its sockets by now).
/// Addresses as one comma-separated list, for messages.
pub(crate) fn list(addrs: &[SocketAddr]) -> String {
    addrs
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn bind_error(addrs: &[SocketAddr], e: &io::Error) -> String {
    let list = addrs
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let what = match e.kind() {
        io::ErrorKind::AddrInUse => "already in use",
        io::ErrorKind::AddrNotAvailable => "is not an address of this host",
        io::ErrorKind::PermissionDenied => "may not be bound (permission denied)",
        // A configuration the endpoint refuses: its message names the setting.
        io::ErrorKind::InvalidInput => return e.to_string(),
        _ => return format!("cannot bind {list}: {e}"),
    };
    let culprit = match addrs {
        [a] => Some(*a),
        _ => addrs.iter().copied().find(|a| UdpSocket::bind(a).is_err()),
    };
    match culprit {
        Some(a) => format!("address {a} {what}"),
        None => format!("cannot bind {list}: an address {what}"),
    }
}

/// A failed connect in words: an abort with no cause during the handshake is what an
/// endpoint without a listener on that SCTP port answers (RFC 9260 §8.4).
pub(crate) fn connect_error(to: &str, sctp_port: u16, e: &braid_net::Error) -> String {
    match e {
        braid_net::Error::Closed(braid_net::CloseReason::PeerAbort(causes))
            if causes.is_empty() =>
        {
            format!(
                "connect to {to}: no SCTP listener on port {sctp_port} (the peer aborted the handshake)"
            )
        }
        e => format!("connect to {to}: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_address_in_use() {
        let held = UdpSocket::bind("127.0.0.1:0").unwrap();
        let a = held.local_addr().unwrap();
        let e = io::Error::from(io::ErrorKind::AddrInUse);
        assert_eq!(bind_error(&[a], &e), format!("address {a} already in use"));
        let other: SocketAddr = "127.0.0.2:0".parse().unwrap();
        assert_eq!(
            bind_error(&[other, a], &e),
            format!("address {a} already in use")
        );
        let e = io::Error::other("boom");
        assert_eq!(bind_error(&[a], &e), format!("cannot bind {a}: boom"));
        let e = io::Error::new(io::ErrorKind::InvalidInput, "invalid configuration: x");
        assert_eq!(bind_error(&[a], &e), "invalid configuration: x");
    }
}
