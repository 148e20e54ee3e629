//! Preconnection, candidate gathering and racing, Listener (RFC 9622 §6–7, RFC 9623 §4).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::cib::{self, Cib};
use crate::connection::{Connection, new_group};
use crate::endpoint::{LocalEndpoint, RemoteEndpoint};
use crate::error::{AttemptError, EstablishmentError};
use crate::pib::{Pib, PolicyDecision, PolicyError};
use crate::properties::{Preference, SecurityParameters, TransportProperties};
use crate::stack::{self, Link, LinkConfig, StackKind};

/// One way to reach the remote: a stack, a local address and a remote address
/// (RFC 9623 §4.1: the leaves of the candidate tree).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The protocol stack.
    pub stack: StackKind,
    /// The local address (unspecified IP: the OS chooses; port 0: any).
    pub local: SocketAddr,
    /// The remote address.
    pub remote: SocketAddr,
    /// The CIB key of the remote endpoint it came from.
    pub remote_key: String,
    /// braid with multipath required or preferred: the other local addresses of the
    /// family, bound by the same endpoint (multi-homing, RFC 9260 §6.4).
    pub extra_locals: Vec<SocketAddr>,
    /// braid with multipath required or preferred: the other remote addresses of the
    /// family, given to the association as the peer's addresses.
    pub extra_remotes: Vec<SocketAddr>,
    /// Ordering key, lower first: (policy, CIB history, properties, stack default,
    /// address order).
    pub rank: (i32, i32, i32, usize, usize),
}

/// What happened to one candidate during a race.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It was ready first, this long after the race started.
    Won(Duration),
    /// It failed.
    Failed(String),
    /// It was still connecting (or ready too late) when another won, and was aborted.
    Cancelled,
    /// The race ended before its turn.
    NotStarted,
}

/// One candidate's part in a race.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    /// The candidate.
    pub candidate: Candidate,
    /// When it was started, since the race started.
    pub started: Option<Duration>,
    /// How it ended.
    pub outcome: Outcome,
}

/// The record of one establishment: every candidate in order and what happened to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaceReport {
    /// The attempts, in candidate order.
    pub attempts: Vec<Attempt>,
    /// The Connection Attempt Delay used.
    pub attempt_delay: Duration,
    /// The policies that applied.
    pub policies: Vec<String>,
}

impl RaceReport {
    /// The winning attempt.
    pub fn winner(&self) -> Option<&Attempt> {
        self.attempts
            .iter()
            .find(|a| matches!(a.outcome, Outcome::Won(_)))
    }
}

/// The process-wide in-memory CIB used when the application gives none.
fn default_cib() -> Option<Arc<Cib>> {
    static CIB: OnceLock<Option<Arc<Cib>>> = OnceLock::new();
    CIB.get_or_init(|| Cib::in_memory().ok().map(Arc::new))
        .clone()
}

/// A Preconnection (RFC 9622 §6): endpoints, properties, security, and the PIB and CIB
/// that steer selection.
///
/// ```no_run
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// use braid_taps::*;
/// let remote = RemoteEndpoint::new().with_host_name("localhost").with_port(4433);
/// let pre = Preconnection::new(
///     vec![],
///     vec![remote],
///     TransportProperties::new(),
///     SecurityParameters::disabled(),
/// );
/// let conn = pre.initiate().await?;
/// conn.send(Message::new(&b"hello"[..])).await?;
/// let reply = conn.receive().await?;
/// conn.close().await;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Preconnection {
    local: Vec<LocalEndpoint>,
    remote: Vec<RemoteEndpoint>,
    props: TransportProperties,
    security: SecurityParameters,
    pib: Arc<Pib>,
    cib: Option<Arc<Cib>>,
}

impl Preconnection {
    /// `NewPreconnection(local, remote, properties, security)`. No policy, the
    /// process-wide in-memory CIB.
    pub fn new(
        local: Vec<LocalEndpoint>,
        remote: Vec<RemoteEndpoint>,
        props: TransportProperties,
        security: SecurityParameters,
    ) -> Self {
        Self {
            local,
            remote,
            props,
            security,
            pib: Arc::new(Pib::empty()),
            cib: default_cib(),
        }
    }

    /// Uses a PIB.
    pub fn with_pib(mut self, pib: Arc<Pib>) -> Self {
        self.pib = pib;
        self
    }

    /// Loads the PIB from a policy file.
    ///
    /// # Errors
    ///
    /// [`PolicyError`] with the file's line.
    pub fn with_policy_file(self, path: impl AsRef<std::path::Path>) -> Result<Self, PolicyError> {
        let pib = Pib::load(path)?;
        Ok(self.with_pib(Arc::new(pib)))
    }

    /// Loads the PIB from a policy file if there is one: a missing file means no policy
    /// (as for a machine without `/etc/braid/policy.toml`), so a deployment's policy can
    /// be optional.
    ///
    /// # Errors
    ///
    /// [`PolicyError`] with the file's line if the file exists but cannot be read or does
    /// not parse.
    pub fn with_optional_policy_file(
        self,
        path: impl AsRef<std::path::Path>,
    ) -> Result<Self, PolicyError> {
        match std::fs::metadata(path.as_ref()) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(self),
            _ => self.with_policy_file(path),
        }
    }

    /// Uses a CIB (e.g. one in a file, [`Cib::open`]).
    pub fn with_cib(mut self, cib: Arc<Cib>) -> Self {
        self.cib = Some(cib);
        self
    }

    /// The transport properties.
    pub fn properties(&self) -> &TransportProperties {
        &self.props
    }

    /// The transport properties, to change before `initiate()`/`listen()`.
    pub fn properties_mut(&mut self) -> &mut TransportProperties {
        &mut self.props
    }

    /// The stacks that survive the properties, the PIB and the security parameters, with
    /// the reasons the others were dropped.
    fn stacks(
        &self,
        props: &TransportProperties,
        d: &PolicyDecision,
    ) -> (Vec<StackKind>, Vec<String>) {
        let mut ok = Vec::new();
        let mut why = Vec::new();
        if self.security.enabled {
            why.push(
                "security parameters require a security protocol, and no braid-taps stack \
                 has one (no DTLS over braid, no TLS over TCP)"
                    .to_string(),
            );
            return (ok, why);
        }
        for k in StackKind::ALL {
            if let Some(r) = k.rejected_by(props) {
                why.push(format!("{k}: {r}"));
            } else if let Some(p) = d.prohibited.get(&k) {
                why.push(format!("{k}: prohibited by policy {p:?}"));
            } else if d.allowed.as_ref().is_some_and(|a| !a.contains(&k)) {
                why.push(format!("{k}: not among the stacks a policy requires"));
            } else {
                ok.push(k);
            }
        }
        (ok, why)
    }

    async fn local_ips(&self, why: &mut Vec<String>) -> Vec<(Option<IpAddr>, u16)> {
        if self.local.is_empty() {
            return vec![(None, 0)];
        }
        let ifs = cib::interfaces();
        let mut out = Vec::new();
        for l in &self.local {
            let port = l.port.unwrap_or(0);
            match (&l.ip, &l.interface) {
                (Some(ip), _) => out.push((Some(*ip), port)),
                (None, Some(name)) => match ifs.iter().find(|i| &i.name == name) {
                    Some(i) if i.up && !i.addrs.is_empty() => {
                        out.extend(i.addrs.iter().map(|a| (Some(*a), port)));
                    }
                    _ => why.push(format!(
                        "local interface {name:?}: missing, down or no address"
                    )),
                },
                (None, None) => out.push((None, port)),
            }
        }
        out
    }

    /// Candidate gathering and sorting (RFC 9623 §4.1): local addresses × resolved remote
    /// addresses × surviving stacks, in the order they will be raced.
    ///
    /// # Errors
    ///
    /// [`EstablishmentError::NoCandidate`] with every reason when none is left.
    pub async fn candidates(&self) -> Result<Vec<Candidate>, EstablishmentError> {
        self.gather().await.map(|(c, _, _)| c)
    }

    async fn gather(
        &self,
    ) -> Result<(Vec<Candidate>, TransportProperties, PolicyDecision), EstablishmentError> {
        let (props, d) = self.pib.apply(&self.remote, &self.props);
        let (stacks, mut why) = self.stacks(&props, &d);
        if stacks.is_empty() {
            return Err(EstablishmentError::NoCandidate(why));
        }
        let mut remotes = self.remote.clone();
        for (h, p) in &d.add_remotes {
            let r = match h.parse::<IpAddr>() {
                Ok(ip) => RemoteEndpoint::new().with_ip_address(ip),
                Err(_) => RemoteEndpoint::new().with_host_name(h),
            };
            remotes.push(r.with_port(*p));
        }
        // (address, key) pairs, deduplicated, in resolution order.
        let mut addrs: Vec<(SocketAddr, String)> = Vec::new();
        for r in &remotes {
            let Some(port) = r.port else {
                why.push(format!("remote {}: no port", r.key()));
                continue;
            };
            let found: Vec<SocketAddr> = match (&r.ip, &r.host_name) {
                (Some(ip), _) => vec![SocketAddr::new(*ip, port)],
                (None, Some(h)) => {
                    let lookup = tokio::net::lookup_host((h.as_str(), port));
                    // Resolution is part of establishment: bounded by the same timeout.
                    match tokio::time::timeout(props.establishment_timeout, lookup).await {
                        Ok(Ok(it)) => it.collect(),
                        Ok(Err(e)) => {
                            why.push(format!("remote {h}: {e}"));
                            continue;
                        }
                        Err(_) => {
                            why.push(format!("remote {h}: resolution timed out"));
                            continue;
                        }
                    }
                }
                (None, None) => {
                    why.push("remote endpoint without host name or IP address".into());
                    continue;
                }
            };
            for a in found {
                if !addrs.iter().any(|(x, _)| *x == a) {
                    addrs.push((a, r.key()));
                }
            }
        }
        let addrs = interleave(addrs);
        let locals = self.local_ips(&mut why).await;
        let history = |key: &str| self.cib.as_ref().and_then(|c| c.history(key));
        let multipath = matches!(props.multipath, Preference::Require | Preference::Prefer);
        let mut out = Vec::new();
        for (ai, (remote, key)) in addrs.iter().enumerate() {
            let h = history(key);
            let same_family = |a: &IpAddr| a.is_ipv4() == remote.is_ipv4();
            let family_locals: Vec<SocketAddr> = locals
                .iter()
                .filter_map(|(ip, p)| ip.filter(same_family).map(|ip| SocketAddr::new(ip, *p)))
                .collect();
            let family_remotes: Vec<SocketAddr> = addrs
                .iter()
                .map(|(a, _)| *a)
                .filter(|a| a != remote && same_family(&a.ip()))
                .collect();
            for (lip, lport) in &locals {
                let lip = match lip {
                    Some(ip) if !same_family(ip) => continue,
                    Some(ip) => *ip,
                    None if remote.is_ipv4() => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
                    None => IpAddr::V6(Ipv6Addr::UNSPECIFIED),
                };
                let local = SocketAddr::new(lip, *lport);
                for (si, k) in stacks.iter().enumerate() {
                    let multihomed = multipath && *k == StackKind::Braid;
                    // A multi-homed braid candidate binds every local address of the
                    // family at once: one such candidate per remote address is enough.
                    if multihomed && family_locals.first().is_some_and(|f| *f != local) {
                        continue;
                    }
                    let (extra_locals, extra_remotes) = if multihomed {
                        (
                            family_locals
                                .iter()
                                .copied()
                                .filter(|a| *a != local)
                                .collect(),
                            family_remotes.clone(),
                        )
                    } else {
                        (Vec::new(), Vec::new())
                    };
                    out.push(Candidate {
                        stack: *k,
                        local,
                        remote: *remote,
                        remote_key: key.clone(),
                        extra_locals,
                        extra_remotes,
                        rank: (
                            d.rank.get(k).copied().unwrap_or(0),
                            h.as_ref().map_or(0, |h| h.rank(*k)),
                            k.rank(&props),
                            si,
                            ai,
                        ),
                    });
                }
            }
        }
        if out.is_empty() {
            if addrs.is_empty() {
                why.push("no remote address".into());
            } else {
                why.push("no local address of the remote addresses' family".into());
            }
            return Err(EstablishmentError::NoCandidate(why));
        }
        out.sort_by_key(|c| c.rank);
        Ok((out, props, d))
    }

    /// `Initiate()` (RFC 9622 §7.1): races the candidates and returns the first ready
    /// Connection.
    ///
    /// # Errors
    ///
    /// [`EstablishmentError`]: no candidate (at once), every attempt failed, or the
    /// establishment timeout passed.
    pub async fn initiate(&self) -> Result<Connection, EstablishmentError> {
        self.initiate_with_report().await.map(|(c, _)| c)
    }

    /// `InitiateWithSend` (RFC 9622 §7.1): initiate, then send `msg` on the new
    /// Connection (no 0-RTT: no stack sends data in its handshake).
    ///
    /// # Errors
    ///
    /// As [`Preconnection::initiate`]; a send error after establishment is reported as
    /// [`EstablishmentError::AllFailed`] with the winner's address.
    pub async fn initiate_with_send(
        &self,
        msg: crate::Message,
    ) -> Result<Connection, EstablishmentError> {
        let c = self.initiate().await?;
        if let Err(e) = c.send(msg).await {
            let info = c.info();
            return Err(EstablishmentError::AllFailed(vec![AttemptError {
                stack: info.stack,
                local: info
                    .local
                    .unwrap_or(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0)),
                remote: info.remote,
                error: e.to_string(),
            }]));
        }
        Ok(c)
    }

    /// [`Preconnection::initiate`] that also tells what happened to every candidate.
    ///
    /// # Errors
    ///
    /// As [`Preconnection::initiate`].
    pub async fn initiate_with_report(
        &self,
    ) -> Result<(Connection, RaceReport), EstablishmentError> {
        let (cands, props, d) = self.gather().await?;
        let delay = d.attempt_delay.unwrap_or(props.attempt_delay);
        let cfg = LinkConfig {
            props: props.clone(),
        };
        let mut report = RaceReport {
            attempts: cands
                .iter()
                .map(|c| Attempt {
                    candidate: c.clone(),
                    started: None,
                    outcome: Outcome::NotStarted,
                })
                .collect(),
            attempt_delay: delay,
            policies: d.applied.clone(),
        };
        let start = Instant::now();
        let deadline = start + props.establishment_timeout;
        let mut set: JoinSet<(usize, Result<Link, String>)> = JoinSet::new();
        let (mut next, mut next_at) = (0usize, start);
        let mut errors = Vec::new();
        let won = loop {
            let now = Instant::now();
            if next < cands.len() && (now >= next_at || set.is_empty()) {
                // RFC 8305 §5 / RFC 9623 §4.2.1: start the next candidate after the
                // Connection Attempt Delay, or at once when the running ones failed.
                let c = cands[next].clone();
                let cfg = cfg.clone();
                set.spawn(async move {
                    let r = stack::open(
                        c.stack,
                        c.local,
                        c.remote,
                        &c.extra_locals,
                        &c.extra_remotes,
                        &cfg,
                    );
                    (next, r.await)
                });
                report.attempts[next].started = Some(now - start);
                next += 1;
                next_at = now + delay;
                continue;
            }
            if set.is_empty() {
                break None;
            }
            tokio::select! {
                r = set.join_next() => match r {
                    Some(Ok((i, Ok(link)))) => break Some((i, link, start.elapsed())),
                    Some(Ok((i, Err(e)))) => {
                        let c = &cands[i];
                        tracing::debug!("candidate {} {} failed: {e}", c.stack, c.remote);
                        if let Some(cib) = &self.cib {
                            let _ = cib.record_failure(&c.remote_key, c.stack, &e);
                        }
                        report.attempts[i].outcome = Outcome::Failed(e.clone());
                        errors.push(AttemptError {
                            stack: c.stack,
                            local: c.local,
                            remote: c.remote,
                            error: e,
                        });
                        // RFC 8305 §5: a failure starts the next attempt at once.
                        next_at = Instant::now();
                    }
                    Some(Err(e)) => tracing::debug!("attempt task: {e}"),
                    None => {}
                },
                _ = tokio::time::sleep_until(next_at), if next < cands.len() => {}
                _ = tokio::time::sleep_until(deadline) => {
                    cancel(&mut set, &mut report).await;
                    // The attempts still connecting are part of the answer too.
                    for (a, c) in report.attempts.iter().zip(&cands) {
                        if a.outcome == Outcome::Cancelled {
                            errors.push(AttemptError {
                                stack: c.stack,
                                local: c.local,
                                remote: c.remote,
                                error: "not ready within the establishment timeout".into(),
                            });
                        }
                    }
                    return Err(EstablishmentError::Timeout(props.establishment_timeout, errors));
                }
            }
        };
        let Some((i, link, t)) = won else {
            return Err(EstablishmentError::AllFailed(errors));
        };
        // RFC 9623 §4.2.2: the losers are closed once one candidate is ready.
        cancel(&mut set, &mut report).await;
        report.attempts[i].outcome = Outcome::Won(t);
        let c = &cands[i];
        if let Some(cib) = &self.cib {
            let srtt = link.srtt().await;
            let _ = cib.record_win(&c.remote_key, c.stack, t, srtt);
        }
        let local = (!c.local.ip().is_unspecified()).then_some(c.local);
        Ok((new_group(link, true, props.conn_priority, local), report))
    }

    /// `Listen()` (RFC 9622 §7.2): listens on every surviving stack at the local
    /// endpoints' port (braid/UDP and TCP share the number; plain UDP is only offered when
    /// braid is not, since both need that UDP port).
    ///
    /// # Errors
    ///
    /// [`EstablishmentError::NoCandidate`] when no stack survives or no local endpoint is
    /// given; [`EstablishmentError::AllFailed`] when no socket could be bound.
    pub async fn listen(&self) -> Result<Listener, EstablishmentError> {
        let (props, d) = self.pib.apply(&self.remote, &self.props);
        let (mut stacks, mut why) = self.stacks(&props, &d);
        if stacks.contains(&StackKind::Braid) && stacks.contains(&StackKind::Udp) {
            stacks.retain(|k| *k != StackKind::Udp);
            why.push("udp: not offered beside braid (same UDP port)".into());
        }
        if stacks.is_empty() {
            return Err(EstablishmentError::NoCandidate(why));
        }
        let locals = self.local_ips(&mut why).await;
        if self.local.is_empty() {
            why.push("listen needs a local endpoint".into());
            return Err(EstablishmentError::NoCandidate(why));
        }
        let cfg = LinkConfig {
            props: props.clone(),
        };
        let (tx, rx) = mpsc::channel(64);
        let mut listener = Listener {
            rx,
            tasks: Vec::new(),
            addrs: Vec::new(),
        };
        let port = locals
            .iter()
            .map(|(_, p)| *p)
            .find(|p| *p != 0)
            .unwrap_or(0);
        let locals: Vec<SocketAddr> = locals
            .iter()
            .map(|(ip, _)| SocketAddr::new(ip.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)), port))
            .collect();
        // Port 0: the first socket picks a port, the others must get the same one; retry a
        // few times if another socket holds it for a later stack or address.
        let tries = if port == 0 { 8 } else { 1 };
        let mut last = None;
        for _ in 0..tries {
            match bind_all(&stacks, &locals, &cfg, &tx).await {
                Ok((tasks, addrs)) => {
                    listener.tasks = tasks;
                    listener.addrs = addrs;
                    return Ok(listener);
                }
                Err(e) => last = Some(e),
            }
        }
        Err(EstablishmentError::AllFailed(last.into_iter().collect()))
    }
}

/// RFC 8305 §4: alternate the address families, the first one's family first.
fn interleave(addrs: Vec<(SocketAddr, String)>) -> Vec<(SocketAddr, String)> {
    let first_v6 = addrs.first().is_some_and(|(a, _)| a.is_ipv6());
    let (mut a, mut b): (Vec<_>, Vec<_>) = addrs
        .into_iter()
        .partition(|(x, _)| x.is_ipv6() == first_v6);
    a.reverse();
    b.reverse();
    let mut out = Vec::new();
    while !a.is_empty() || !b.is_empty() {
        out.extend(a.pop());
        out.extend(b.pop());
    }
    out
}

async fn cancel(set: &mut JoinSet<(usize, Result<Link, String>)>, report: &mut RaceReport) {
    set.abort_all();
    for a in &mut report.attempts {
        if a.started.is_some() && a.outcome == Outcome::NotStarted {
            a.outcome = Outcome::Cancelled;
        }
    }
    while let Some(r) = set.join_next().await {
        // Ready too late: abort it (the peer sees an ABORT or a FIN).
        if let Ok((_, Ok(link))) = r {
            link.abort();
        }
    }
}

type Bound = (
    Vec<tokio::task::JoinHandle<()>>,
    Vec<(StackKind, SocketAddr)>,
);

async fn bind_all(
    stacks: &[StackKind],
    locals: &[SocketAddr],
    cfg: &LinkConfig,
    tx: &mpsc::Sender<Connection>,
) -> Result<Bound, AttemptError> {
    let mut tasks: Vec<tokio::task::JoinHandle<()>> = Vec::new();
    let mut addrs = Vec::new();
    let mut port = locals.first().map_or(0, |a| a.port());
    let prio = cfg.props.conn_priority;
    // TCP first: it reports the port it got, and braid needs its port before binding (the
    // SCTP port equals the UDP port).
    let mut order = stacks.to_vec();
    order.sort_by_key(|k| (*k != StackKind::Tcp, *k));
    let fail =
        |tasks: &[tokio::task::JoinHandle<()>], k: StackKind, at: SocketAddr, error: String| {
            for t in tasks {
                t.abort();
            }
            AttemptError {
                stack: k,
                local: at,
                remote: SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
                error,
            }
        };
    for k in order {
        if k == StackKind::Braid {
            // One multi-homed braid endpoint on every local address.
            let mut at: Vec<SocketAddr> = locals
                .iter()
                .map(|a| SocketAddr::new(a.ip(), port))
                .collect();
            if port == 0 {
                // braid needs the port number up front: take a free UDP port.
                match std::net::UdpSocket::bind(at[0]).and_then(|s| s.local_addr()) {
                    Ok(a) => port = a.port(),
                    Err(e) => return Err(fail(&tasks, k, at[0], e.to_string())),
                }
                for a in &mut at {
                    a.set_port(port);
                }
            }
            let (ltx, lrx) = mpsc::channel(16);
            match stack::braid::listen(&at, cfg, ltx) {
                Ok((a, t)) => {
                    tasks.push(t);
                    tasks.push(forward(lrx, Link::Braid, tx.clone(), prio, a));
                    addrs.extend(at.iter().map(|a| (k, *a)));
                }
                Err(e) => return Err(fail(&tasks, k, at[0], e)),
            }
            continue;
        }
        for l in locals {
            let at = SocketAddr::new(l.ip(), port);
            let r = if k == StackKind::Tcp {
                let (ltx, lrx) = mpsc::channel(16);
                stack::tcp::listen(at, ltx)
                    .await
                    .map(|(a, t)| (a, t, forward(lrx, Link::Tcp, tx.clone(), prio, a)))
            } else {
                let (ltx, lrx) = mpsc::channel(16);
                stack::udp::listen(at, ltx)
                    .await
                    .map(|(a, t)| (a, t, forward(lrx, Link::Udp, tx.clone(), prio, a)))
            };
            match r {
                Ok((a, t1, t2)) => {
                    port = a.port();
                    addrs.push((k, a));
                    tasks.push(t1);
                    tasks.push(t2);
                }
                Err(e) => return Err(fail(&tasks, k, at, e)),
            }
        }
    }
    Ok((tasks, addrs))
}

fn forward<L: Send + 'static>(
    mut lrx: mpsc::Receiver<L>,
    wrap: fn(L) -> Link,
    tx: mpsc::Sender<Connection>,
    prio: u32,
    local: SocketAddr,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        while let Some(l) = lrx.recv().await {
            let c = new_group(wrap(l), false, prio, Some(local));
            if tx.send(c).await.is_err() {
                break;
            }
        }
    })
}

/// A Listener (RFC 9622 §7.2): Connections arriving on any of its stacks.
#[derive(Debug)]
pub struct Listener {
    rx: mpsc::Receiver<Connection>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    addrs: Vec<(StackKind, SocketAddr)>,
}

impl Listener {
    /// `ConnectionReceived` (RFC 9622 §7.2): the next Connection a peer opened; `None` once
    /// the Listener is stopped.
    pub async fn connection_received(&mut self) -> Option<Connection> {
        self.rx.recv().await
    }

    /// Where it listens, per stack.
    pub fn local_addrs(&self) -> &[(StackKind, SocketAddr)] {
        &self.addrs
    }

    /// The port it listens on (the same for every stack).
    pub fn port(&self) -> u16 {
        self.addrs.first().map_or(0, |(_, a)| a.port())
    }

    /// `Stop()` (RFC 9622 §7.2): no new Connections; the established ones go on.
    pub fn stop(&mut self) {
        for t in self.tasks.drain(..) {
            t.abort();
        }
        self.rx.close();
    }
}

impl Drop for Listener {
    fn drop(&mut self) {
        self.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An optional policy file may be missing (no policy), but one that is there must parse.
    #[test]
    fn an_optional_policy_file_may_be_missing_but_not_wrong() {
        let pre = || {
            Preconnection::new(
                vec![],
                vec![],
                TransportProperties::new(),
                SecurityParameters::disabled(),
            )
        };
        let dir = std::env::temp_dir().join(format!("braid-taps-pib-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{e}"));
        let missing = dir.join("missing.toml");
        assert!(pre().with_optional_policy_file(&missing).is_ok());
        assert!(pre().with_policy_file(&missing).is_err());
        let bad = dir.join("bad.toml");
        std::fs::write(&bad, "[[policy]]\nprohibit = [\"carrier-pigeon\"]\n")
            .unwrap_or_else(|e| panic!("{e}"));
        let e = pre().with_optional_policy_file(&bad).err();
        assert!(
            e.is_some_and(|e| e.line == 2),
            "a wrong file is still an error"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn families_alternate() {
        let v = |s: &str| -> (SocketAddr, String) {
            (
                s.parse().unwrap_or(SocketAddr::from(([0, 0, 0, 0], 0))),
                String::new(),
            )
        };
        let out = interleave(vec![
            v("[::1]:1"),
            v("[::2]:1"),
            v("1.1.1.1:1"),
            v("2.2.2.2:1"),
        ]);
        let got: Vec<_> = out.iter().map(|(a, _)| a.to_string()).collect();
        assert_eq!(got, ["[::1]:1", "1.1.1.1:1", "[::2]:1", "2.2.2.2:1"]);
    }
}
