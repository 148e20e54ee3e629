//! What the endpoint answers without an association (RFC 9260 §8.4, §5.1): INIT-ACKs
//! computed statelessly, associations created from valid COOKIE-ECHOs, ABORTs and
//! SHUTDOWN-COMPLETEs to out-of-the-blue packets — every answer rate-limited per source by a
//! token bucket, and the per-source association cap.

use std::net::{IpAddr, SocketAddr};

use braid_wire::chunk::{Abort, ChunkType, CookieEcho, ErrorChunk, Init, ShutdownComplete};
use braid_wire::packet::write_checksum;
use braid_wire::{Chunk, CommonHeader, ErrorCause, raw_chunks};
use bytes::Bytes;
use rand_core::RngCore;

use super::{AssocId, Bucket, Endpoint, MAX_BUCKETS, Outgoing};
use crate::association::{Association, InitAckTags, build_init_ack, random_tag};
use crate::cookie::CookieError;
use crate::time::Instant;

impl Endpoint {
    /// `remote`'s answer budgets, refilled up to `now`.
    fn source_budget(&mut self, now: Instant, remote: IpAddr) -> &mut Bucket {
        if self.buckets.len() >= MAX_BUCKETS && !self.buckets.contains_key(&remote) {
            self.buckets.clear();
        }
        let burst = f64::from(self.cfg.ootb_burst);
        let rate = f64::from(self.cfg.ootb_rate);
        let bytes = f64::from(self.cfg.init_answer_bytes);
        let b = self.buckets.entry(remote).or_insert(Bucket {
            tokens: burst,
            bytes,
            last_answer: 0,
            at: now,
        });
        let dt = (now - b.at).as_secs_f64();
        b.tokens = (b.tokens + dt * rate).min(burst);
        b.bytes = (b.bytes + dt * bytes).min(bytes);
        b.at = now;
        b
    }

    /// Takes one token of `remote`'s out-of-the-blue answer budget, if there is one left
    /// (RFC 9260 §8.4 allows rate-limiting these answers).
    pub(super) fn ootb_budget(&mut self, now: Instant, remote: IpAddr) -> bool {
        let b = self.source_budget(now, remote);
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Whether `remote`'s byte allowance still holds an answer the size of its last one
    /// (checked before an answer is built).
    fn init_allowance_left(&mut self, now: Instant, remote: IpAddr) -> bool {
        let b = self.source_budget(now, remote);
        b.bytes >= b.last_answer as f64
    }

    /// Whether an INIT from `remote` may get its `len`-byte answer: from the endpoint's
    /// budget of INIT answers, and within `remote`'s byte allowance. No per-source count
    /// limits it, which a spoofer forging the victim's address could use up (RFC 5062 §2
    /// style lock-out); the byte allowance bounds what reflection sends one address.
    fn init_budget(&mut self, now: Instant, remote: IpAddr, len: usize) -> bool {
        let rate = f64::from(self.cfg.init_answer_rate);
        let g = &mut self.init_answers;
        let dt = (now - g.at).as_secs_f64();
        g.tokens = (g.tokens + dt * rate).min(rate);
        g.at = now;
        if g.tokens < 1.0 {
            return false;
        }
        let b = self.source_budget(now, remote);
        b.last_answer = len;
        if b.bytes < len as f64 {
            return false;
        }
        b.bytes -= len as f64;
        self.init_answers.tokens -= 1.0;
        true
    }

    /// Whether `source` holds `max_associations_per_source` live associations, or its
    /// prefix `max_associations_per_prefix` (after forgetting drained ones).
    pub(super) fn source_full(&mut self, source: IpAddr) -> bool {
        let prefix = self.prefix_of(source);
        let full = |ep: &Self| {
            ep.per_source.get(&source).copied().unwrap_or(0) >= ep.cfg.max_associations_per_source
                || ep.per_prefix.get(&prefix).copied().unwrap_or(0)
                    >= ep.cfg.max_associations_per_prefix
        };
        if !full(self) {
            return false;
        }
        self.prune();
        full(self)
    }

    /// `ip` with the bits beyond its family's source prefix cleared.
    pub(super) fn prefix_of(&self, ip: IpAddr) -> IpAddr {
        match ip {
            IpAddr::V4(a) => {
                let len = u32::from(self.cfg.source_prefix_v4.min(32));
                let mask = u32::MAX.checked_shl(32 - len).unwrap_or(0);
                IpAddr::V4((u32::from(a) & mask).into())
            }
            IpAddr::V6(a) => {
                let len = u32::from(self.cfg.source_prefix_v6.min(128));
                let mask = u128::MAX.checked_shl(128 - len).unwrap_or(0);
                IpAddr::V6((u128::from(a) & mask).into())
            }
        }
    }

    /// A packet for no association (RFC 9260 §8.4), or the start of a new one.
    pub(super) fn out_of_the_blue(
        &mut self,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        h: CommonHeader,
        packet: &Bytes,
        remembered: bool,
    ) -> Option<AssocId> {
        let all = screen(&h, packet)?;
        let first = all.first().cloned()?;
        let contains = |t: ChunkType| all.iter().any(|c| c.chunk_type == t);
        let reply_header = |vtag: u32| reply_to(&h, vtag);
        let listening = self.cfg.listen;
        match first.chunk_type {
            ChunkType::INIT => {
                if h.verification_tag != 0 {
                    return None; // §8.5.1 A.
                }
                let Some(Ok(init)) = first.decode_as::<Init>() else {
                    return None;
                };
                if init.initiate_tag == 0
                    || self.init_answers_empty(now)
                    || !self.init_allowance_left(now, remote.ip())
                {
                    // §3.3.2; no budget left (for anyone, or for this source, as its last
                    // answer's size says): no cookie computed for nothing.
                    return None;
                }
                let reply = self.answer_init(now, remote, h, &init, listening);
                let bytes = encode_stateless(reply_header(init.initiate_tag), &reply)?;
                if self.init_budget(now, remote.ip(), bytes.len()) {
                    self.queue_stateless(local, remote, bytes);
                }
                None
            }
            ChunkType::COOKIE_ECHO => {
                if !listening {
                    return None;
                }
                let echo = first.decode_as::<CookieEcho>()?.ok()?;
                self.on_cookie_echo(now, local, remote, h, &echo, packet)
            }
            _ if contains(ChunkType::SHUTDOWN_ACK) => {
                // §8.4 item 5: SHUTDOWN-COMPLETE with the T bit, tag reflected.
                if self.ootb_budget(now, remote.ip()) {
                    let sc = ShutdownComplete { t_bit: true };
                    self.send_stateless(local, remote, reply_header(h.verification_tag), sc.into());
                }
                None
            }
            _ if contains(ChunkType::SHUTDOWN_COMPLETE) || contains(ChunkType::COOKIE_ACK) => None,
            _ if all.iter().any(is_stale_cookie_error) => None, // §8.4 item 7.
            _ => {
                // §8.4 item 8: ABORT with the T bit, tag reflected.
                if !remembered && self.ootb_budget(now, remote.ip()) {
                    let abort = Abort {
                        t_bit: true,
                        causes: vec![],
                    };
                    self.send_stateless(
                        local,
                        remote,
                        reply_header(h.verification_tag),
                        abort.into(),
                    );
                }
                None
            }
        }
    }

    /// An INIT for an SCTP port this endpoint does not serve: nobody listens there, so it
    /// gets the ABORT a non-listening endpoint sends (RFC 9260 §8.4 item 8, tag reflected
    /// from the INIT), and the initiator fails at once instead of timing out.
    pub(super) fn answer_wrong_port(
        &mut self,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        h: CommonHeader,
        packet: &Bytes,
    ) {
        let Some(all) = screen(&h, packet) else {
            return;
        };
        let Some(first) = all.first() else {
            return;
        };
        if first.chunk_type != ChunkType::INIT || h.verification_tag != 0 {
            return; // §8.4: everything else for an unknown port is left alone.
        }
        let Some(Ok(init)) = first.decode_as::<Init>() else {
            return;
        };
        if init.initiate_tag != 0 && self.ootb_budget(now, remote.ip()) {
            let abort = Abort {
                t_bit: false,
                causes: vec![],
            };
            self.send_stateless(local, remote, reply_to(&h, init.initiate_tag), abort.into());
        }
    }

    /// The answer to an INIT for no association: INIT-ACK with a State Cookie, or ABORT.
    pub(super) fn answer_init(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        h: CommonHeader,
        init: &Init,
        listening: bool,
    ) -> Chunk {
        let abort = |cause: Option<ErrorCause>| -> Chunk {
            Abort {
                t_bit: false,
                causes: cause.into_iter().collect(),
            }
            .into()
        };
        if !listening {
            return abort(None);
        }
        // The source's address+port owned by a live association: never handed to another
        // (§5.2; cause 11, "Restart of an Association with New Addresses"), an answer only
        // that address sees. Listed addresses another association owns are left out when
        // the cookie comes back, with no answer that tells a stranger they are in use.
        if self.live_owner(remote.ip(), h.src_port).is_some() {
            return abort(Some(ErrorCause::RestartWithNewAddresses(address_tlv(
                remote.ip(),
            ))));
        }
        if self.assocs.len() >= self.cfg.max_associations {
            self.prune();
        }
        if self.assocs.len() >= self.cfg.max_associations || self.source_full(remote.ip()) {
            return abort(Some(ErrorCause::OutOfResource));
        }
        let tags = InitAckTags {
            local_tag: self.random_tag(),
            local_initial_tsn: self.rng.next_u32(),
            local_tie_tag: 0,
            peer_tie_tag: 0,
        };
        match build_init_ack(
            &self.key,
            &self.assoc_cfg,
            now,
            init,
            remote.ip(),
            &self.local_addrs,
            h.dst_port,
            h.src_port,
            tags,
        ) {
            Ok(ack) => Chunk::InitAck(ack),
            Err(cause) => abort(Some(cause)),
        }
    }

    /// A COOKIE-ECHO for no association: a new association if the cookie is ours, fresh,
    /// and takes no address from a live association (RFC 9260 §5.1.5).
    pub(super) fn on_cookie_echo(
        &mut self,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        h: CommonHeader,
        echo: &CookieEcho,
        packet: &Bytes,
    ) -> Option<AssocId> {
        let reply_header = |vtag: u32| reply_to(&h, vtag);
        let c = match self.key.open(&echo.cookie, now) {
            Ok(c) => c,
            Err(CookieError::Stale {
                staleness,
                peer_tag,
                local_tag,
            }) => {
                if local_tag != h.verification_tag || !self.ootb_budget(now, remote.ip()) {
                    return None; // §5.1.5 step 3 comes before the age check.
                }
                let us = u32::try_from(staleness.as_micros()).unwrap_or(u32::MAX);
                let e = ErrorChunk {
                    causes: vec![ErrorCause::StaleCookie { staleness_us: us }],
                };
                self.send_stateless(local, remote, reply_header(peer_tag), e.into());
                return None;
            }
            Err(CookieError::Invalid) => return None,
        };
        // §5.1.5: the packet's tag must be the one our INIT-ACK gave.
        if c.local_tag != h.verification_tag
            || c.peer_port != h.src_port
            || c.local_port != h.dst_port
        {
            return None;
        }
        // §5.4: only the address the INIT-ACK went to (the INIT's source) is confirmed by
        // the COOKIE-ECHO; one from another address neither confirms nor selects it.
        let init_src = *c.peer_addresses.first()?;
        // RFC 5062 §2: an address a live association owns stays its own; the new one goes
        // without it (the INIT's source aside, refused below).
        let mut c = c;
        c.peer_addresses
            .retain(|&ip| ip == init_src || self.live_owner(ip, c.peer_port).is_none());
        if !c.peer_addresses.contains(&remote.ip()) {
            return None;
        }
        if let Some(cause) = self.cookie_refusal(&c, init_src) {
            if self.ootb_budget(now, remote.ip()) {
                let abort = Abort {
                    t_bit: false,
                    causes: vec![cause],
                };
                self.send_stateless(local, remote, reply_header(c.peer_tag), abort.into());
            }
            return None;
        }
        let rng = self.child_rng();
        let path0 = SocketAddr::new(init_src, remote.port());
        let mut a = Association::accept(
            self.assoc_cfg.clone(),
            self.key.clone(),
            rng,
            now,
            local,
            path0,
            self.local_addrs.clone(),
            &c,
        );
        // Charged to the endpoint before the DATA bundled with the COOKIE-ECHO can grow it.
        a.attach_buffer_budget(self.budgets_for(init_src));
        a.handle_verified(now, local, remote, packet, true);
        let peers = a.peer_addresses();
        // `insert` registers every peer address: the paths' events are seen.
        while a.poll_path_event().is_some() {}
        let id = self.insert(a, &peers, c.peer_port);
        self.incoming.push_back(id);
        Some(id)
    }

    /// Why a valid cookie cannot become an association, if it cannot: its INIT's source
    /// address is one a live association owns (cause 11, never rebound), or no room
    /// (endpoint or per-source cap).
    fn cookie_refusal(
        &mut self,
        c: &crate::cookie::StateCookie,
        init_src: IpAddr,
    ) -> Option<ErrorCause> {
        if self.live_owner(init_src, c.peer_port).is_some() {
            return Some(ErrorCause::RestartWithNewAddresses(address_tlv(init_src)));
        }
        if self.assocs.len() >= self.cfg.max_associations {
            self.prune();
        }
        (self.assocs.len() >= self.cfg.max_associations || self.source_full(init_src))
            .then_some(ErrorCause::OutOfResource)
    }

    pub(super) fn random_tag(&mut self) -> u32 {
        random_tag(&mut self.rng)
    }

    pub(super) fn send_stateless(
        &mut self,
        local: SocketAddr,
        remote: SocketAddr,
        h: CommonHeader,
        chunk: Chunk,
    ) {
        if let Some(bytes) = encode_stateless(h, &chunk) {
            self.queue_stateless(local, remote, bytes);
        }
    }

    /// Whether the endpoint's INIT answers are all spent for now (checked before an answer
    /// is built: a flood then costs no cookie HMAC).
    fn init_answers_empty(&self, now: Instant) -> bool {
        let g = &self.init_answers;
        let rate = f64::from(self.cfg.init_answer_rate);
        g.tokens + (now - g.at).as_secs_f64() * rate < 1.0
    }

    fn queue_stateless(&mut self, local: SocketAddr, remote: SocketAddr, bytes: Vec<u8>) {
        // Bounded: a flood of OOTB packets cannot queue more than this many answers.
        if self.outgoing.len() < 1024 {
            self.outgoing.push_back(Outgoing {
                local,
                remote,
                bytes,
            });
        }
    }
}

/// A packet of one chunk under `h`, checksummed.
fn encode_stateless(h: CommonHeader, chunk: &Chunk) -> Option<Vec<u8>> {
    let mut bytes = Vec::with_capacity(64);
    bytes.extend_from_slice(&h.src_port.to_be_bytes());
    bytes.extend_from_slice(&h.dst_port.to_be_bytes());
    bytes.extend_from_slice(&h.verification_tag.to_be_bytes());
    bytes.extend_from_slice(&[0; 4]);
    chunk.encode(&mut bytes).ok()?;
    write_checksum(&mut bytes);
    Some(bytes)
}

/// The chunks of an out-of-the-blue packet that may get an answer at all, or `None`: §8.4
/// looks at every chunk (a malformed one discards the packet), never answers one with an
/// ABORT (item 2), takes tag 0 only on an INIT (§8.5.1) and INIT, INIT-ACK and
/// SHUTDOWN-COMPLETE only alone (§6.10).
fn screen(h: &CommonHeader, packet: &Bytes) -> Option<Vec<braid_wire::RawChunk>> {
    let all = raw_chunks(packet).collect::<Result<Vec<_>, _>>().ok()?;
    let first = all.first()?;
    let contains = |t: ChunkType| all.iter().any(|c| c.chunk_type == t);
    let alone_only = |c: &braid_wire::RawChunk| {
        matches!(
            c.chunk_type,
            ChunkType::INIT | ChunkType::INIT_ACK | ChunkType::SHUTDOWN_COMPLETE
        )
    };
    let refused = contains(ChunkType::ABORT)
        || (h.verification_tag == 0 && first.chunk_type != ChunkType::INIT)
        || (all.len() > 1 && all.iter().any(alone_only));
    (!refused).then_some(all)
}

/// The header of an answer to a packet with header `h`: ports swapped, tag `vtag`.
fn reply_to(h: &CommonHeader, vtag: u32) -> CommonHeader {
    CommonHeader {
        src_port: h.dst_port,
        dst_port: h.src_port,
        verification_tag: vtag,
        checksum: 0,
    }
}

/// An address as the TLV an error cause quotes (RFC 9260 §3.3.10.11).
pub(super) fn address_tlv(ip: IpAddr) -> Bytes {
    let mut tlv = Vec::new();
    braid_wire::Param::from_address(ip).encode(&mut tlv);
    tlv.into()
}

/// Whether a raw chunk is an ERROR carrying a Stale Cookie cause.
fn is_stale_cookie_error(c: &braid_wire::RawChunk) -> bool {
    matches!(c.decode_as::<ErrorChunk>(), Some(Ok(e))
        if e.causes.iter().any(|c| matches!(c, ErrorCause::StaleCookie { .. })))
}
