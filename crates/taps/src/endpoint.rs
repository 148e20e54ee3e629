//! Local and remote endpoints (RFC 9622 §6.1).

use std::net::{IpAddr, SocketAddr};

/// Where a Connection is opened from (RFC 9622 §6.1): an interface name, an IP address,
/// a port, any of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LocalEndpoint {
    /// Interface name (`WithInterface`), e.g. `lo`; its addresses become the local candidates.
    pub interface: Option<String>,
    /// Local IP address (`WithIPAddress`).
    pub ip: Option<IpAddr>,
    /// Local port (`WithPort`); 0 or `None`: chosen by the OS.
    pub port: Option<u16>,
}

impl LocalEndpoint {
    /// `NewLocalEndpoint()`.
    pub fn new() -> Self {
        Self::default()
    }

    /// `WithInterface(name)`.
    pub fn with_interface(mut self, name: impl Into<String>) -> Self {
        self.interface = Some(name.into());
        self
    }

    /// `WithIPAddress(ip)`.
    pub fn with_ip_address(mut self, ip: IpAddr) -> Self {
        self.ip = Some(ip);
        self
    }

    /// `WithPort(port)`.
    pub fn with_port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }
}

/// Whom a Connection goes to (RFC 9622 §6.1): a host name or an IP address, and a port.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RemoteEndpoint {
    /// Host name (`WithHostName`), resolved during candidate gathering (RFC 9623 §4.1).
    pub host_name: Option<String>,
    /// IP address (`WithIPAddress`).
    pub ip: Option<IpAddr>,
    /// Port (`WithPort`): the TCP port, the UDP port of plain UDP, and both the UDP
    /// encapsulation port (RFC 6951) and the SCTP port of braid.
    pub port: Option<u16>,
}

impl RemoteEndpoint {
    /// `NewRemoteEndpoint()`.
    pub fn new() -> Self {
        Self::default()
    }

    /// A remote endpoint from a socket address.
    pub fn from_addr(addr: SocketAddr) -> Self {
        Self::new()
            .with_ip_address(addr.ip())
            .with_port(addr.port())
    }

    /// `WithHostName(name)`.
    pub fn with_host_name(mut self, name: impl Into<String>) -> Self {
        self.host_name = Some(name.into());
        self
    }

    /// `WithIPAddress(ip)`.
    pub fn with_ip_address(mut self, ip: IpAddr) -> Self {
        self.ip = Some(ip);
        self
    }

    /// `WithPort(port)`.
    pub fn with_port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }

    /// The key of this remote in the CIB and in policy matching: the host name if given,
    /// else the IP address, with the port.
    pub fn key(&self) -> String {
        let host = match (&self.host_name, &self.ip) {
            (Some(h), _) => h.clone(),
            (None, Some(ip)) => ip.to_string(),
            (None, None) => String::new(),
        };
        format!("{host}:{}", self.port.unwrap_or(0))
    }
}
