//! The Characteristics Information Base (NEAT, NEAT D3.1 §1 and §3.2.1): the host's
//! interfaces and, per remote, which stack won the last race, how long it took to connect,
//! its RTT and the failures of each stack. Kept in [`redb`] (an embedded, pure-Rust
//! key-value store) either in a file, to survive restarts, or in memory (the default). An
//! entry older than the expiry (default 24 h) is ignored and purged: a network that changed
//! must not be judged by what was true yesterday.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use redb::{Database, ReadableDatabase, TableDefinition};
use serde::{Deserialize, Serialize};

use crate::stack::StackKind;

const REMOTES: TableDefinition<&str, &[u8]> = TableDefinition::new("remotes");

/// The CIB's store failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("CIB store: {0}")]
pub struct CibError(pub String);

fn e(x: impl std::fmt::Display) -> CibError {
    CibError(x.to_string())
}

/// One stack's record towards one remote.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StackRecord {
    /// Races it won.
    pub wins: u32,
    /// Attempts that failed.
    pub failures: u32,
    /// The last failure's message.
    pub last_error: Option<String>,
}

/// What the CIB knows about one remote (key: [`crate::RemoteEndpoint::key`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RemoteHistory {
    /// When the entry was last written (seconds since the Unix epoch).
    pub updated: u64,
    /// The stack that won the last race.
    pub winner: Option<String>,
    /// Its time from the start of establishment to ready, in milliseconds.
    pub connect_ms: Option<f64>,
    /// Its smoothed RTT when it was ready, in milliseconds (braid only).
    pub rtt_ms: Option<f64>,
    /// Per stack name.
    pub stacks: BTreeMap<String, StackRecord>,
}

impl RemoteHistory {
    /// Ordering weight of a stack from this history (lower first): the last winner goes
    /// first, a stack that only ever failed goes last.
    pub fn rank(&self, k: StackKind) -> i32 {
        if self.winner.as_deref() == Some(k.name()) {
            return -1;
        }
        match self.stacks.get(k.name()) {
            Some(r) if r.failures > 0 && r.wins == 0 => 1,
            _ => 0,
        }
    }
}

/// A local interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// Its name (e.g. `lo`, `eth0`).
    pub name: String,
    /// Its IP addresses.
    pub addrs: Vec<IpAddr>,
    /// Whether it is up.
    pub up: bool,
}

/// The local interfaces, as the OS lists them now (`getifaddrs`).
pub fn interfaces() -> Vec<Interface> {
    let mut out: Vec<Interface> = Vec::new();
    let Ok(list) = nix::ifaddrs::getifaddrs() else {
        return out;
    };
    for ifa in list {
        let ip = ifa.address.as_ref().and_then(|a| {
            a.as_sockaddr_in()
                .map(|s| IpAddr::V4(s.ip()))
                .or_else(|| a.as_sockaddr_in6().map(|s| IpAddr::V6(s.ip())))
        });
        let up = ifa.flags.contains(nix::net::if_::InterfaceFlags::IFF_UP);
        let i = match out.iter_mut().find(|i| i.name == ifa.interface_name) {
            Some(i) => i,
            None => {
                out.push(Interface {
                    name: ifa.interface_name.clone(),
                    addrs: Vec::new(),
                    up,
                });
                let last = out.len() - 1;
                &mut out[last]
            }
        };
        if let Some(ip) = ip {
            i.addrs.push(ip);
        }
    }
    out
}

/// The characteristics information base.
///
/// ```
/// use std::time::Duration;
/// use braid_taps::{Cib, StackKind};
/// let cib = Cib::in_memory()?;
/// cib.record_failure("example.org:443", StackKind::Braid, "no answer")?;
/// cib.record_win("example.org:443", StackKind::Tcp, Duration::from_millis(252), None)?;
/// let h = cib.history("example.org:443").expect("just written");
/// assert_eq!(h.winner.as_deref(), Some("tcp"));
/// assert!(h.rank(StackKind::Tcp) < h.rank(StackKind::Braid)); // TCP goes first next time
/// # Ok::<(), braid_taps::cib::CibError>(())
/// ```
#[derive(Debug)]
pub struct Cib {
    db: Database,
    expiry: Duration,
}

#[expect(
    clippy::disallowed_methods,
    reason = "the CIB's expiry is wall-clock time that must survive restarts"
)]
fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Default expiry of a remote's history.
pub const DEFAULT_EXPIRY: Duration = Duration::from_secs(24 * 3600);

impl Cib {
    /// A CIB in memory (forgotten when dropped): the default.
    ///
    /// # Errors
    ///
    /// The store could not be created.
    pub fn in_memory() -> Result<Self, CibError> {
        let db = Database::builder()
            .create_with_backend(redb::backends::InMemoryBackend::new())
            .map_err(e)?;
        Ok(Self {
            db,
            expiry: DEFAULT_EXPIRY,
        })
    }

    /// A CIB in a file (created if missing).
    ///
    /// # Errors
    ///
    /// The file cannot be opened or is not a redb database.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, CibError> {
        Ok(Self {
            db: Database::create(path).map_err(e)?,
            expiry: DEFAULT_EXPIRY,
        })
    }

    /// Sets how long a remote's history counts.
    pub fn with_expiry(mut self, expiry: Duration) -> Self {
        self.expiry = expiry;
        self
    }

    /// The history of a remote, if there is one younger than the expiry.
    pub fn history(&self, remote: &str) -> Option<RemoteHistory> {
        let rtx = self.db.begin_read().ok()?;
        let t = rtx.open_table(REMOTES).ok()?;
        let v = t.get(remote).ok()??;
        let h: RemoteHistory = serde_json::from_slice(v.value()).ok()?;
        (now_secs().saturating_sub(h.updated) <= self.expiry.as_secs()).then_some(h)
    }

    fn update(&self, remote: &str, f: impl FnOnce(&mut RemoteHistory)) -> Result<(), CibError> {
        let mut h = self.history(remote).unwrap_or_default();
        f(&mut h);
        h.updated = now_secs();
        let bytes = serde_json::to_vec(&h).map_err(e)?;
        let w = self.db.begin_write().map_err(e)?;
        {
            let mut t = w.open_table(REMOTES).map_err(e)?;
            t.insert(remote, bytes.as_slice()).map_err(e)?;
        }
        w.commit().map_err(e)
    }

    /// Records the race's winner, its connect time and RTT.
    ///
    /// # Errors
    ///
    /// The store failed.
    pub fn record_win(
        &self,
        remote: &str,
        stack: StackKind,
        connect: Duration,
        rtt: Option<Duration>,
    ) -> Result<(), CibError> {
        self.update(remote, |h| {
            h.winner = Some(stack.name().to_string());
            h.connect_ms = Some(connect.as_secs_f64() * 1e3);
            h.rtt_ms = rtt.map(|r| r.as_secs_f64() * 1e3);
            h.stacks.entry(stack.name().to_string()).or_default().wins += 1;
        })
    }

    /// Records a failed attempt.
    ///
    /// # Errors
    ///
    /// The store failed.
    pub fn record_failure(
        &self,
        remote: &str,
        stack: StackKind,
        error: &str,
    ) -> Result<(), CibError> {
        self.update(remote, |h| {
            let r = h.stacks.entry(stack.name().to_string()).or_default();
            r.failures += 1;
            r.last_error = Some(error.to_string());
        })
    }

    /// Removes every entry older than the expiry; returns how many.
    ///
    /// # Errors
    ///
    /// The store failed.
    pub fn purge_expired(&self) -> Result<usize, CibError> {
        let now = now_secs();
        let w = self.db.begin_write().map_err(e)?;
        let n = {
            let mut t = w.open_table(REMOTES).map_err(e)?;
            let exp = self.expiry.as_secs();
            let mut n = 0;
            t.retain(|_, v| {
                let keep = serde_json::from_slice::<RemoteHistory>(v)
                    .is_ok_and(|h| now.saturating_sub(h.updated) <= exp);
                n += usize::from(!keep);
                keep
            })
            .map_err(e)?;
            n
        };
        w.commit().map_err(e)?;
        Ok(n)
    }

    /// The local interfaces (queried from the OS each time: they change).
    pub fn interfaces(&self) -> Vec<Interface> {
        interfaces()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn winner_goes_first_and_history_expires() -> Result<(), CibError> {
        let cib = Cib::in_memory()?;
        cib.record_failure("h:1", StackKind::Braid, "timeout")?;
        cib.record_win("h:1", StackKind::Tcp, Duration::from_millis(3), None)?;
        let h = cib.history("h:1").ok_or(CibError("missing".into()))?;
        assert_eq!(h.rank(StackKind::Tcp), -1);
        assert_eq!(h.rank(StackKind::Braid), 1);
        assert_eq!(h.rank(StackKind::Udp), 0);
        assert!(cib.history("other:1").is_none());
        let cib = cib.with_expiry(Duration::ZERO);
        // Written this second: still younger than "0 s" only within the same second, so
        // age it by rewriting the timestamp.
        cib.update("h:1", |_| {})?;
        let w = cib.db.begin_write().map_err(e)?;
        {
            let mut t = w.open_table(REMOTES).map_err(e)?;
            let old = serde_json::to_vec(&RemoteHistory {
                updated: 1,
                ..Default::default()
            })
            .map_err(e)?;
            t.insert("h:1", old.as_slice()).map_err(e)?;
        }
        w.commit().map_err(e)?;
        assert!(cib.history("h:1").is_none());
        assert_eq!(cib.purge_expired()?, 1);
        Ok(())
    }

    #[test]
    fn file_store_persists() -> Result<(), CibError> {
        let dir = std::env::temp_dir().join(format!("braid-taps-cib-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(e)?;
        let path = dir.join("cib.redb");
        let _ = std::fs::remove_file(&path);
        {
            let cib = Cib::open(&path)?;
            cib.record_win("h:2", StackKind::Braid, Duration::from_millis(1), None)?;
        }
        let cib = Cib::open(&path)?;
        let h = cib.history("h:2").ok_or(CibError("lost".into()))?;
        assert_eq!(h.winner.as_deref(), Some("braid"));
        drop(cib);
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    }

    #[test]
    fn loopback_interface_listed() {
        let ifs = interfaces();
        assert!(
            ifs.iter()
                .any(|i| i.addrs.contains(&IpAddr::V4(std::net::Ipv4Addr::LOCALHOST))),
            "{ifs:?}"
        );
    }
}
