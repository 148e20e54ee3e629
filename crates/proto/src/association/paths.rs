//! The association's paths (RFC 9260 §5.1.2, §6.4): pairing our addresses with the peer's,
//! which path a packet belongs to, and the addresses a path may never use.

use std::net::SocketAddr;

use super::Association;
use crate::RemovePathError;
use crate::cc::Controller;

/// A change to an association's paths, for the endpoint that routes packets to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PathEvent {
    /// A path to `remote` was added; its id is `id` for the association's life.
    Added { id: PathId, remote: SocketAddr },
    /// Path `id` to `remote` was removed; its id is never reused.
    Removed { id: PathId, remote: SocketAddr },
    /// Path `id`'s address `remote` answered a HEARTBEAT (RFC 9260 §5.4): the peer is there.
    Confirmed { id: PathId, remote: SocketAddr },
}
use crate::path::{Path, PathId};
use crate::time::Instant;

/// Whether a peer address may become a path: never multicast, broadcast, unspecified, or
/// one of our own addresses (the hostile-input rules; RFC 9260 §5.1.2 lists only unicast
/// transport addresses).
pub(crate) fn usable_peer_address(
    ip: std::net::IpAddr,
    locals: &[SocketAddr],
    local: SocketAddr,
) -> bool {
    let special = match ip {
        std::net::IpAddr::V4(a) => a.is_multicast() || a.is_broadcast() || a.is_unspecified(),
        std::net::IpAddr::V6(a) => a.is_multicast() || a.is_unspecified(),
    };
    !special && ip != local.ip() && !locals.iter().any(|l| l.ip() == ip)
}

impl Association {
    pub(super) fn path_for(&self, remote: SocketAddr) -> Option<PathId> {
        self.paths
            .iter()
            .find(|p| !p.removed && p.remote.ip() == remote.ip())
            .map(|p| p.id)
    }

    /// The path a packet from `remote` to `local` belongs to: the exact address pair, or
    /// else the first path to that remote address.
    #[inline]
    pub(super) fn path_of_packet(&self, local: SocketAddr, remote: SocketAddr) -> Option<PathId> {
        self.paths
            .iter()
            .find(|p| !p.removed && p.remote.ip() == remote.ip() && p.local.ip() == local.ip())
            .map(|p| p.id)
            .or_else(|| self.path_for(remote))
    }

    /// Creates the paths to the peer's other addresses (from INIT or INIT-ACK), paired
    /// with ours as `path_pairing` says. They start Unconfirmed and get a HEARTBEAT at
    /// once (RFC 9260 §5.4). Path 0 (the handshake's pair) stays first.
    pub(super) fn add_peer_paths(&mut self, now: Instant, peer: &[std::net::IpAddr]) {
        let first = self.paths[0].clone();
        // NEAT D3.1 §2.1.2.3: the UDP port learned for the handshake applies to every
        // address the peer listed.
        let port = first.remote.port();
        let locals: Vec<SocketAddr> = if self.local_addrs.is_empty() {
            vec![first.local]
        } else {
            self.local_addrs.clone()
        };
        let mut remotes: Vec<std::net::IpAddr> = vec![first.remote.ip()];
        for a in peer {
            if !remotes.contains(a) && usable_peer_address(*a, &locals, first.local) {
                remotes.push(*a);
            }
        }
        let mut pairs: Vec<(SocketAddr, SocketAddr)> = Vec::new();
        let same_family = |l: &SocketAddr, r: &std::net::IpAddr| l.is_ipv4() == r.is_ipv4();
        match self.cfg.path_pairing {
            crate::config::PathPairing::ByIndex => {
                for (i, r) in remotes.iter().enumerate().skip(1) {
                    let l = locals
                        .get(i)
                        .filter(|l| same_family(l, r))
                        .or_else(|| locals.iter().find(|l| same_family(l, r)));
                    if let Some(l) = l {
                        pairs.push((*l, SocketAddr::new(*r, port)));
                    }
                }
            }
            crate::config::PathPairing::All => {
                for r in &remotes {
                    for l in locals.iter().filter(|l| same_family(l, r)) {
                        pairs.push((*l, SocketAddr::new(*r, port)));
                    }
                }
            }
        }
        let rwnd = self.tx.peer_rwnd;
        for (l, r) in pairs {
            // A removed pair stays removed: its tombstone counts.
            let dup = self
                .paths
                .iter()
                .any(|p| p.remote.ip() == r.ip() && p.local.ip() == l.ip());
            if dup || self.paths.len() >= usize::from(u16::MAX) {
                continue;
            }
            let id = PathId(self.paths.len() as u16);
            let mut p = Path::new(id, l, r, &self.cfg, rwnd.max(1), now);
            p.state = crate::path::PathState::Unconfirmed;
            p.confirmed = false;
            self.paths.push(p);
            self.path_events
                .push_back(PathEvent::Added { id, remote: r });
        }
        self.announce_path_count();
    }

    /// Paths to the other addresses the application gave `connect` (RFC 9260 §5.4 rule 1:
    /// confirmed by being given, though during the handshake only the INIT goes there),
    /// each from a local address of its family. The INIT tries them in turn until one
    /// answers; [`Self::settle_init_paths`] keeps those the peer stands behind.
    pub(super) fn add_init_paths(&mut self, now: Instant, alternates: &[SocketAddr]) {
        let first = self.paths[0].clone();
        let locals: Vec<SocketAddr> = if self.local_addrs.is_empty() {
            vec![first.local]
        } else {
            self.local_addrs.clone()
        };
        // The endpoint checked each (unicast, not our own transport address) as it checks
        // the first: an address of our own IP is a peer on this host, as on loopback.
        for r in alternates {
            if self.paths.iter().any(|p| p.remote.ip() == r.ip()) {
                continue;
            }
            let l = if first.local.is_ipv4() == r.is_ipv4() {
                Some(first.local)
            } else {
                locals.iter().find(|l| l.is_ipv4() == r.is_ipv4()).copied()
            };
            let Some(l) = l else { continue };
            let id = PathId(self.paths.len() as u16);
            let mut p = Path::new(id, l, *r, &self.cfg, self.cfg.recv_buffer, now);
            // No HEARTBEAT and no DATA before the handshake: it only carries INITs.
            p.state = crate::path::PathState::Unconfirmed;
            p.confirmed = false;
            self.paths.push(p);
            self.path_events
                .push_back(PathEvent::Added { id, remote: *r });
            if self.init_paths.is_empty() {
                self.init_paths.push(PathId(0));
            }
            self.init_paths.push(id);
        }
    }

    /// The INIT's next address after `from`, in the order the application gave them.
    pub(super) fn next_init_path(&self, from: PathId) -> PathId {
        let live: Vec<PathId> = self
            .init_paths
            .iter()
            .copied()
            .filter(|id| !self.paths[usize::from(id.0)].removed)
            .collect();
        let at = live.iter().position(|id| *id == from);
        at.map_or(from, |i| live[(i + 1) % live.len()])
    }

    /// An ICMP error says nobody speaks SCTP at `path`'s address: forget it and send the
    /// INIT to the next one now, or give up if it was the last (RFC 9260 Appendix C).
    pub(super) fn drop_init_path(&mut self, now: Instant, path: PathId) {
        let others = self
            .init_paths
            .iter()
            .any(|id| *id != path && !self.paths[usize::from(id.0)].removed);
        if !others {
            self.close(now, crate::event::CloseReason::Unreachable);
            return;
        }
        let next = self.next_init_path(path);
        self.tombstone_init_path(now, path);
        if self.primary == path {
            self.primary = next;
            self.send_handshake_chunk(now);
        }
    }

    /// The INIT-ACK came in on `from`: the handshake continues there, and of the addresses
    /// the application gave, those the peer listed (or answered from) become confirmed
    /// paths (RFC 9260 §5.4 rule 1); the others are dropped, since the INIT-ACK's list is
    /// where the peer says it is (RFC 9260 §5.1.2) and probing them would only fail.
    pub(super) fn settle_init_paths(
        &mut self,
        now: Instant,
        from: PathId,
        listed: &[std::net::IpAddr],
    ) {
        let init_paths = std::mem::take(&mut self.init_paths);
        if init_paths.is_empty() {
            return;
        }
        if init_paths.contains(&from) {
            self.primary = from;
        }
        let answered = self.paths[usize::from(self.primary.0)].remote.ip();
        for id in init_paths {
            let p = &self.paths[usize::from(id.0)];
            if p.removed || id == self.primary {
                continue;
            }
            let remote = p.remote;
            if listed.contains(&remote.ip()) || remote.ip() == answered {
                self.confirm_init_path(now, id);
            } else {
                self.tombstone_init_path(now, id);
            }
        }
        if !self.paths[usize::from(self.primary.0)].confirmed {
            // The address that answered is the handshake's: confirmed as path 0 would be.
            self.confirm_init_path(now, self.primary);
        }
        let primary = self.primary;
        self.last_data_path = primary;
        self.shutdown_path = primary;
        for c in self.control.iter_mut() {
            c.path = primary;
        }
        self.announce_path_count();
    }

    /// A given address the peer stands behind: confirmed and Active (RFC 9260 §5.4 rule 1).
    fn confirm_init_path(&mut self, now: Instant, id: PathId) {
        self.paths[usize::from(id.0)].confirmed = true;
        self.set_path_state(now, id, crate::path::PathState::Active);
        let remote = self.paths[usize::from(id.0)].remote;
        self.path_events
            .push_back(PathEvent::Confirmed { id, remote });
    }

    /// Makes a handshake-time path a tombstone (nothing was ever in flight on it).
    fn tombstone_init_path(&mut self, now: Instant, path: PathId) {
        if self.paths[usize::from(path.0)].removed {
            return;
        }
        self.set_path_state(now, path, crate::path::PathState::Inactive);
        let p = &mut self.paths[usize::from(path.0)];
        p.removed = true;
        p.forbidden = true;
        p.confirmed = false;
        let remote = p.remote;
        self.paths_removed += 1;
        self.timers.stop_path(path);
        tracing::debug!(path = path.0, %remote, "handshake address dropped");
        self.path_events
            .push_back(PathEvent::Removed { id: path, remote });
    }

    /// Tells every live path's controller how many paths there are now: CMT/RP shares the
    /// initial window among them (cc::coupled); a window that carries data keeps its size.
    fn announce_path_count(&mut self) {
        let n = self.live_path_count();
        for p in self.paths.iter_mut().filter(|p| !p.removed) {
            p.cc.on_path_count(n);
        }
    }

    /// Paths not removed.
    pub(crate) fn live_path_count(&self) -> usize {
        self.paths.len() - self.paths_removed
    }

    /// Removes `path` at the application's request (an address gone, e.g. an interface
    /// down; without ADD-IP/DELETE-IP of RFC 5061 the peer is not told). It carries nothing
    /// more and is no longer probed; chunks in flight on it are retransmitted on the other
    /// paths as after a timeout, without its window cut (the path is gone, not congested);
    /// a primary gives way to the path data fails over to. Its id stays taken and its
    /// counters readable ([`Self::removed_paths`]); no other path's id changes.
    ///
    /// # Errors
    ///
    /// [`RemovePathError::UnknownPath`] for an id that names no live path;
    /// [`RemovePathError::NotEstablished`] during the handshake;
    /// [`RemovePathError::LastPath`] when no other confirmed path would be left.
    pub fn remove_path(&mut self, now: Instant, path: PathId) -> Result<(), RemovePathError> {
        use super::State;
        let pi = usize::from(path.0);
        if self.paths.get(pi).is_none_or(|p| p.removed) {
            return Err(RemovePathError::UnknownPath);
        }
        if matches!(
            self.state,
            State::Closed | State::CookieWait | State::CookieEchoed
        ) {
            return Err(RemovePathError::NotEstablished);
        }
        if !self
            .paths
            .iter()
            .any(|q| q.id != path && !q.removed && q.confirmed)
        {
            return Err(RemovePathError::LastPath);
        }
        self.set_path_state(now, path, crate::path::PathState::Inactive);
        let p = &mut self.paths[pi];
        p.removed = true;
        // Never a data path again: every rule that weighs paths for data skips it.
        p.forbidden = true;
        p.rtt_probe = None;
        p.heartbeat = Default::default();
        // Its counters stop here: no limit accrues to a tombstone.
        p.set_limit(now, None);
        let remote = p.remote;
        self.paths_removed += 1;
        self.mark_in_flight_lost(path);
        self.timers.stop_path(path);
        if self.primary == path {
            self.primary = self.single_data_path();
        }
        if self.last_data_path == path {
            self.last_data_path = self.primary;
        }
        if self.first_data_path == Some(path) {
            self.first_data_path = None;
        }
        let primary = self.primary;
        for c in self.control.iter_mut().filter(|c| c.path == path) {
            c.path = primary;
        }
        if self.shutdown_rx_path == Some(path) {
            self.shutdown_rx_path = Some(primary);
        }
        if self.shutdown_path == path {
            self.shutdown_path = primary;
        }
        // What waited for a retransmission there (and what was in flight) goes elsewhere.
        self.retarget_stranded();
        self.announce_path_count();
        tracing::debug!(path = path.0, %remote, "path removed");
        self.path_events
            .push_back(PathEvent::Removed { id: path, remote });
        Ok(())
    }

    /// Whether a live path to `ip` is confirmed (RFC 9260 §5.4): by the handshake for the
    /// first, by a HEARTBEAT-ACK for the others.
    pub fn is_peer_confirmed(&self, ip: std::net::IpAddr) -> bool {
        self.paths
            .iter()
            .any(|p| !p.removed && p.confirmed && p.remote.ip() == ip)
    }

    /// Every peer IP address of the association's paths.
    pub fn peer_addresses(&self) -> Vec<std::net::IpAddr> {
        let mut v: Vec<std::net::IpAddr> = Vec::new();
        for p in self.paths.iter().filter(|p| !p.removed) {
            if !v.contains(&p.remote.ip()) {
                v.push(p.remote.ip());
            }
        }
        v
    }

    /// The next change to the association's paths the endpoint has not seen (it registers
    /// an added path's peer address as the association's).
    pub(crate) fn poll_path_event(&mut self) -> Option<PathEvent> {
        self.path_events.pop_front()
    }

    /// Whether [`Self::poll_path_event`] has something (one branch per packet).
    #[inline]
    pub(crate) fn has_path_events(&self) -> bool {
        !self.path_events.is_empty()
    }

    /// RFC 6951 §5.4: a verified packet from `remote` sets the peer's UDP encapsulation port
    /// for that address.
    pub(super) fn learn_encapsulation_port(&mut self, remote: SocketAddr) {
        for p in self.paths.iter_mut() {
            if p.remote.ip() == remote.ip() && p.remote.port() != remote.port() {
                tracing::debug!(
                    old = p.remote.port(),
                    new = remote.port(),
                    "encapsulation port changed"
                );
                p.remote.set_port(remote.port());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Arc;
    use std::time::Duration;

    use rand_core::SeedableRng;

    use super::*;
    use crate::cc::Ctx;
    use crate::{AssociationConfig, CongestionControl};

    /// An established one-path association whose path-0 controller grew past its initial
    /// window, as it would after a transfer.
    fn grown(cc: CongestionControl) -> (Association, usize) {
        let cfg = Arc::new(AssociationConfig {
            cc,
            ..AssociationConfig::default()
        });
        let key = Arc::new(crate::cookie::CookieKey::new(
            [7; 32],
            Duration::from_secs(60),
        ));
        let rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
        let now = Instant::from_duration(Duration::ZERO);
        let local: SocketAddr = "10.0.0.2:9899".parse().unwrap();
        let remote: SocketAddr = "10.0.0.1:9899".parse().unwrap();
        let mut a = Association::new_inner(
            cfg,
            key,
            rng,
            super::super::State::Established,
            now,
            local,
            remote,
            9899,
            9899,
        );
        for _ in 0..40 {
            let cw = a.paths[0].cc.window();
            // Coupled controllers check their view against their own state: a fresh one.
            let v = [a.paths[0].cc.view(None)];
            let ctx = Ctx {
                paths: if a.paths[0].cc.is_coupled() { &v } else { &[] },
                me: 0,
            };
            a.paths[0].cc.on_ack(&ctx, 1200, cw);
        }
        let w = a.paths[0].cc.window();
        (a, w)
    }

    /// A path added to a live association must not reset the windows of the paths that
    /// carry data (RFC 9260 §7.2.1's initial window is for a path that has sent nothing).
    #[test]
    fn adding_a_path_keeps_the_live_paths_windows() {
        for cc in [
            CongestionControl::Cubic,
            CongestionControl::Reno,
            CongestionControl::CmtRpv2,
            CongestionControl::Lia,
        ] {
            let (mut a, w) = grown(cc);
            assert!(w > 20_000, "{cc:?}: the window did not grow ({w})");
            let now = Instant::from_duration(Duration::from_secs(1));
            a.add_peer_paths(now, &["10.0.0.5".parse().unwrap()]);
            assert_eq!(a.paths.len(), 2, "{cc:?}: no path was added");
            assert_eq!(
                a.paths[0].cc.window(),
                w,
                "{cc:?}: path 0's window was reset"
            );
        }
    }
}
