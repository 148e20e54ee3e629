//! Incoming packets: a packet is judged whole first, then the verification-tag rules
//! (RFC 9260 §8.5, §8.5.1), chunk dispatch in order, unknown chunks by their high bits
//! (§3.2), ICMP feedback and ERROR chunks.

use std::net::SocketAddr;

use braid_wire::chunk::{ChunkType, ErrorChunk, NrSack, ShutdownComplete};
use braid_wire::{Chunk, CommonHeader, ErrorCause, raw_chunks, verify_checksum};
use bytes::Bytes;

use super::{Association, State};
use crate::association::send::sack::AckReport;
use crate::cc::Controller;
use crate::event::CloseReason;
use crate::path::PathId;
use crate::time::Instant;
use crate::timer::Timer;

/// What processing one chunk means for the rest of its packet.
enum Flow {
    /// Go on with the next chunk.
    Next,
    /// Stop here; what was done stays done (RFC 9260 §3.2 "stop processing").
    Stop,
    /// Stop here and skip the end-of-packet work (the association closed or the packet
    /// was refused).
    Drop,
}

/// A packet being processed.
struct PacketRx {
    path: PathId,
    remote: SocketAddr,
    /// Its verification tag.
    vtag: u32,
    /// It carried DATA (a SACK decision follows, §6.2).
    had_data: bool,
    /// TSN of its first DATA chunk (the timestamp echo rule, RFC 7323 §4.3).
    first_tsn: Option<u32>,
    /// A COOKIE-ECHO in it was verified (chunks after it must carry the new tag).
    cookie_checked: bool,
    /// The datagram's size (whether to copy a small payload rather than hold it).
    datagram_len: usize,
    /// The TIMESTAMP chunk leading it (Ladha et al. Fig. 6).
    ts: Option<braid_wire::chunk::Timestamp>,
    /// Bytes of ERROR reports its unrecognized chunks may still draw: no more than the
    /// packet brought (each report echoes its chunk plus 8 bytes of headers).
    report_budget: usize,
}

impl Association {
    /// Feeds one received SCTP packet (the UDP payload) that arrived on `local` from
    /// `remote`. Checks the CRC32c first; malformed packets are dropped.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        packet: &Bytes,
    ) {
        if verify_checksum(packet).is_err() {
            self.stats.packets_dropped += 1;
            return;
        }
        self.handle_verified(now, local, remote, packet, false);
    }

    /// An ICMP error about a packet we sent (RFC 9260 Appendix C). The quoted packet's
    /// verification tag must be the one we use towards the peer — or 0 with an INIT that
    /// carries our Initiate Tag — so an off-path attacker cannot forge one.
    pub(crate) fn handle_icmp(
        &mut self,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        quoted: &[u8],
        err: crate::IcmpError,
    ) {
        let Ok(h) = CommonHeader::peek(quoted) else {
            return;
        };
        let verified = if h.verification_tag == 0 {
            // ICMP6: a quoted INIT with our Initiate Tag.
            quoted.get(12) == Some(&1)
                && quoted
                    .get(16..20)
                    .is_some_and(|t| t == self.local_tag.to_be_bytes())
        } else {
            h.verification_tag == self.peer_tag
        };
        if !verified || self.state == State::Closed {
            return;
        }
        let Some(path) = self.path_of_packet(local, remote).or_else(|| {
            // About a removed path's address: nothing of ours goes there any more.
            let removed = self
                .paths
                .iter()
                .any(|p| p.removed && p.remote.ip() == remote.ip());
            (!removed).then_some(self.primary)
        }) else {
            return;
        };
        match err {
            crate::IcmpError::PortUnreachable if self.state != State::CookieWait => {
                // App. C ICMP8 with RFC 6951 §5.5: port unreachable is protocol unreachable,
                // an ABORT once the quoted tag checked out (a peer that restarted elsewhere).
                self.close(now, CloseReason::Unreachable);
            }
            crate::IcmpError::Unreachable | crate::IcmpError::PortUnreachable
                if self.state == State::CookieWait && self.init_paths.contains(&path) =>
            {
                // Nobody speaks SCTP at this one of the addresses the application gave: the
                // INIT goes to the next at once (RFC 9260 §6.4), the last one's error ends it.
                self.drop_init_path(now, path);
            }
            crate::IcmpError::Unreachable | crate::IcmpError::PortUnreachable => {
                if matches!(self.state, State::CookieWait | State::CookieEchoed) {
                    // ICMP5 / RFC 6951 §5.5: nobody speaks SCTP there: fail at once.
                    self.close(now, CloseReason::Unreachable);
                } else {
                    // Later, one error on the path, as a lost packet would count.
                    self.count_error(now, path);
                }
            }
            crate::IcmpError::TooBig { mtu } => {
                // RFC 8899 §4.6: with PLPMTUD the report is a hint its probes verify.
                if self.pmtu_icmp(now, path, mtu) {
                    return;
                }
                // RFC 9260 §7.3 / RFC 8899 §4.6.1: a smaller PMTU for packets to come.
                let p = &mut self.paths[path.0 as usize];
                let sctp = mtu.saturating_sub(crate::path::header_overhead(
                    &p.remote,
                    self.cfg.udp_encapsulation,
                ));
                if sctp >= crate::path::MIN_SCTP_MTU && sctp < p.mtu {
                    p.mtu = sctp;
                    // The window counts in the path's MTU (RFC 9260 §7.2.1, §7.2.3).
                    p.cc.set_mtu(sctp);
                    // RFC 8201 §4 / RFC 1191 §6.3: try the configured size again later
                    // (10 minutes by default); a path still too small says so again.
                    let at = now + self.cfg.pmtu_raise_interval;
                    self.timers.set(Timer::PmtuRaise(path), Some(at));
                }
            }
        }
    }

    /// As `handle_datagram` for a packet whose checksum was verified; `skip_first` skips a
    /// COOKIE-ECHO the endpoint already processed to create this association.
    pub(crate) fn handle_verified(
        &mut self,
        now: Instant,
        local: SocketAddr,
        remote: SocketAddr,
        packet: &Bytes,
        skip_first: bool,
    ) {
        let Some((vtag, path, ts)) = self.admit_packet(local, remote, packet) else {
            return;
        };
        if self.trace.enabled() {
            let ev = crate::TraceEvent::Packet {
                path,
                sent: false,
                size: packet.len(),
                chunks: crate::trace::summarize(packet),
            };
            self.trace.record(now, ev);
        }
        let mut rx = PacketRx {
            path,
            remote,
            vtag,
            had_data: false,
            first_tsn: None,
            cookie_checked: false,
            datagram_len: packet.len(),
            ts,
            report_budget: packet.len(),
        };
        for (index, raw) in raw_chunks(packet).enumerate() {
            let Ok(raw) = raw else {
                // A malformed chunk: drop it and everything after it (RFC 9260 §3.2).
                self.stats.packets_dropped += 1;
                break;
            };
            if skip_first && index == 0 {
                rx.cookie_checked = true;
                continue;
            }
            if rx.cookie_checked && index > 0 && vtag != self.local_tag {
                // Chunks bundled after a COOKIE-ECHO must carry the tag it established.
                break;
            }
            match self.on_chunk(now, &mut rx, raw) {
                Flow::Next if self.state == State::Closed => return,
                Flow::Next => {}
                Flow::Stop => break,
                Flow::Drop => return,
            }
        }
        if rx.had_data {
            if let Some(ts) = rx.ts {
                self.on_timestamp(ts.value, rx.first_tsn);
            }
            self.after_data_packet(now, path);
        }
    }

    /// The checks a packet passes before any chunk of it runs: ports, bundling rules
    /// (judged whole), verification tag (RFC 9260 §8.5, §8.5.1). Returns its tag, its path
    /// and the TIMESTAMP chunk leading it.
    fn admit_packet(
        &mut self,
        local: SocketAddr,
        remote: SocketAddr,
        packet: &Bytes,
    ) -> Option<(u32, PathId, Option<braid_wire::chunk::Timestamp>)> {
        if self.state == State::Closed {
            return None;
        }
        let h = CommonHeader::peek(packet).ok()?;
        if h.src_port != self.peer_port || h.dst_port != self.local_port || !judged_whole(packet) {
            self.stats.packets_dropped += 1;
            return None;
        }
        let found = self.path_of_packet(local, remote);
        let path = found.unwrap_or(self.primary);
        let Some(Ok(first)) = raw_chunks(packet).next() else {
            self.stats.packets_dropped += 1;
            return None;
        };
        let first_type = first.chunk_type;
        // Ladha et al. Fig. 6: a TIMESTAMP chunk leads the packet; a malformed one counts as none.
        let ts = (first_type == ChunkType::TIMESTAMP)
            .then(|| first.decode_as::<braid_wire::chunk::Timestamp>())
            .flatten()
            .and_then(Result::ok);
        let t_bit = first.flags & 1 != 0;
        let tag_ok = match first_type {
            ChunkType::INIT => h.verification_tag == 0,
            ChunkType::ABORT | ChunkType::SHUTDOWN_COMPLETE => {
                (!t_bit && h.verification_tag == self.local_tag)
                    || (t_bit && h.verification_tag == self.peer_tag && self.peer_tag != 0)
            }
            // Checked against the cookie by the §5.2.4 table.
            ChunkType::COOKIE_ECHO => true,
            ChunkType::SHUTDOWN_ACK
                if matches!(self.state, State::CookieWait | State::CookieEchoed) =>
            {
                // §8.5.1 E: treat as out of the blue (§8.4 item 5).
                self.queue_standalone(h.verification_tag, ShutdownComplete { t_bit: true });
                return None;
            }
            _ => h.verification_tag == self.local_tag,
        };
        if !tag_ok {
            self.stats.packets_dropped += 1;
            return None;
        }
        // RFC 6951 §5.4 with NEAT D3.1 App. F §4: only a packet whose tag was verified moves
        // the encapsulation port; an INIT (tag 0) or a not yet checked cookie never does.
        if self.cfg.udp_encapsulation
            && !matches!(first_type, ChunkType::INIT | ChunkType::COOKIE_ECHO)
        {
            self.learn_encapsulation_port(remote);
        }
        if let Some(found) = found {
            // By its address pair (RFC 9260 §6.4 paths); an address without a path counts nowhere.
            let st = &mut self.paths[usize::from(found.0)].stats;
            st.packets_received += 1;
            st.bytes_received += packet.len() as u64;
        }
        Some((h.verification_tag, path, ts))
    }

    /// A SACK or NR-SACK chunk: decoded into lists kept from one SACK to the next (under
    /// CMT every SACK carries gap blocks), then processed as any chunk would be.
    fn on_sack_chunk(&mut self, now: Instant, rx: &PacketRx, raw: braid_wire::RawChunk) -> Flow {
        let mut sin = std::mem::take(&mut self.sack_in);
        let nr = raw.chunk_type == ChunkType::NR_SACK;
        let decoded = if nr {
            NrSack::decode_into(&raw.value, &mut sin.nr)
        } else {
            braid_wire::chunk::Sack::decode_into(&raw.value, &mut sin.sack)
        };
        let flow = match decoded {
            Err(e) => {
                tracing::debug!(%e, "malformed chunk dropped");
                self.stats.packets_dropped += 1;
                Flow::Stop
            }
            Ok(()) => {
                if self.acks_data() {
                    self.dac_count = raw.flags & 3;
                    let SackIn {
                        sack,
                        nr: n,
                        merged,
                    } = &mut sin;
                    let (cum, a_rwnd, dups) = if nr {
                        (n.cum_tsn_ack, n.a_rwnd, &n.dup_tsns)
                    } else {
                        (sack.cum_tsn_ack, sack.a_rwnd, &sack.dup_tsns)
                    };
                    let signals = self.sack_signals(raw.flags, rx.ts, dups);
                    self.rack_note_duplicates(dups);
                    let from = rx.path;
                    let (gaps, nr_gaps): (&[_], &[_]) = if nr {
                        (merge_nr_blocks(n, merged), &n.nr_gap_blocks)
                    } else {
                        (&sack.gap_blocks, &[])
                    };
                    let r = AckReport {
                        from,
                        cum,
                        a_rwnd,
                        gaps,
                        nr_gaps,
                        signals,
                    };
                    self.on_sack(now, r);
                }
                Flow::Next
            }
        };
        self.sack_in = sin;
        flow
    }

    /// Runs one chunk of an admitted packet (RFC 9260 §3.2: in order, unknown ones by their
    /// high bits).
    fn on_chunk(&mut self, now: Instant, rx: &mut PacketRx, raw: braid_wire::RawChunk) -> Flow {
        let path = rx.path;
        if matches!(
            raw.chunk_type,
            ChunkType::ASCONF | ChunkType::ASCONF_ACK | ChunkType::RE_CONFIG
        ) {
            // Extensions we did not announce are handled as unrecognized (§3.2).
            return self.unrecognized_flow(rx, &raw);
        }
        let raw_flags = raw.flags;
        if matches!(raw.chunk_type, ChunkType::SACK | ChunkType::NR_SACK) {
            return self.on_sack_chunk(now, rx, raw);
        }
        let chunk = match Chunk::decode(raw) {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(%e, "malformed chunk dropped");
                self.stats.packets_dropped += 1;
                return Flow::Stop;
            }
        };
        match chunk {
            Chunk::Data(_) | Chunk::ForwardTsn(_) if self.idata() => {
                // RFC 8260 §2.2: once I-DATA is negotiated, DATA and FORWARD-TSN are not used.
                self.protocol_violation(now, "DATA or FORWARD-TSN after I-DATA was negotiated");
                return Flow::Drop;
            }
            Chunk::Data(d) => {
                if self.receives_data() {
                    rx.had_data = true;
                    rx.first_tsn.get_or_insert(d.tsn);
                    // Ladha et al. Fig. 6 rule (b): the next SACK answers a retransmission.
                    self.sack.rbit |= raw_flags & braid_wire::chunk::DATA_FLAG_RETRANSMIT != 0;
                    self.last_data_path = path;
                    if !self.on_data(now, d, rx.datagram_len) {
                        return Flow::Drop;
                    }
                }
            }
            Chunk::Sack(_) | Chunk::NrSack(_) => unreachable!("decoded by on_sack_chunk"),
            Chunk::Init(i) => self.on_init(now, i, rx.remote),
            Chunk::InitAck(a) => self.on_init_ack(now, a, path),
            Chunk::CookieEcho(e) => {
                if !self.on_cookie_echo(now, rx.vtag, &e) {
                    return Flow::Drop;
                }
                rx.cookie_checked = true;
            }
            Chunk::CookieAck(_) => self.on_cookie_ack(now),
            Chunk::Heartbeat(hb) => self.on_heartbeat(path, hb),
            Chunk::HeartbeatAck(hb) => self.on_heartbeat_ack(now, hb),
            Chunk::Abort(a) => {
                self.close(now, CloseReason::PeerAbort(a.causes));
                return Flow::Drop;
            }
            Chunk::Shutdown(s) => self.on_shutdown(now, s, path),
            Chunk::ShutdownAck(_) => self.on_shutdown_ack(now),
            Chunk::ShutdownComplete(_) => {
                if self.state == State::ShutdownAckSent {
                    self.close(now, CloseReason::Shutdown);
                }
                return Flow::Drop;
            }
            Chunk::Error(e) => self.on_error(now, e),
            Chunk::ForwardTsn(f) => {
                if self.receives_data() {
                    self.on_forward_tsn(f);
                }
            }
            Chunk::IData(d) if self.idata() => {
                if self.receives_data() {
                    rx.had_data = true;
                    rx.first_tsn.get_or_insert(d.tsn);
                    self.sack.rbit |= raw_flags & braid_wire::chunk::DATA_FLAG_RETRANSMIT != 0;
                    self.last_data_path = path;
                    if !self.on_idata(now, d, rx.datagram_len) {
                        return Flow::Drop;
                    }
                }
            }
            Chunk::IForwardTsn(f) if self.idata() => {
                if self.receives_data() {
                    self.on_iforward_tsn(f);
                }
            }
            Chunk::IData(_) | Chunk::IForwardTsn(_) => {
                // RFC 8260 §2.2: I-DATA was not negotiated.
                self.protocol_violation(now, "I-DATA or I-FORWARD-TSN without negotiation");
                return Flow::Drop;
            }
            // ECN and padding carry nothing we act on.
            Chunk::Ecne(_) | Chunk::Cwr(_) | Chunk::Pad(_) => {}
            // Announced extensions only; see the check before decoding.
            Chunk::Asconf(_) | Chunk::AsconfAck(_) | Chunk::ReConfig(_) => {}
            Chunk::Unknown(raw) if self.ls() => return self.on_ls_chunk(now, rx, raw),
            Chunk::Unknown(raw) => return self.unrecognized_flow(rx, &raw),
        }
        Flow::Next
    }

    /// What a SACK in this packet tells spurious retransmission detection (Ladha et al. Fig. 6):
    /// its retransmit bit and the packet's timestamp echo; its duplicate TSNs are noted.
    fn sack_signals(
        &mut self,
        flags: u8,
        ts: Option<braid_wire::chunk::Timestamp>,
        dup_tsns: &[u32],
    ) -> crate::association::send::spurious::SackSignals {
        self.spurious_note_duplicates(dup_tsns);
        crate::association::send::spurious::SackSignals {
            rbit: flags & braid_wire::chunk::SACK_FLAG_RETRANSMIT != 0,
            echo: ts.map(|t| t.echo),
        }
    }

    /// A chunk the standard does not know, with LS-SCTP negotiated: LS-DATA, LS-SACK and
    /// LS-FORWARD-PSN (Abd El Al et al. §4.2), else unrecognized.
    fn on_ls_chunk(&mut self, now: Instant, rx: &mut PacketRx, raw: braid_wire::RawChunk) -> Flow {
        use braid_wire::chunk::{ChunkBody, LsData, LsForwardPsn, LsSack};
        let t = raw.chunk_type;
        let malformed = |a: &mut Self, e: braid_wire::DecodeError| {
            tracing::debug!(%e, "malformed LS chunk dropped");
            a.stats.packets_dropped += 1;
            Flow::Stop
        };
        if t == LsData::TYPE {
            let d = match raw.decode_as::<LsData>().expect("type checked above") {
                Ok(d) => d,
                Err(e) => return malformed(self, e),
            };
            if self.receives_data() {
                rx.had_data = true;
                self.last_data_path = rx.path;
                if !self.on_ls_data(now, d, rx.datagram_len) {
                    return Flow::Drop;
                }
            }
        } else if t == LsSack::TYPE {
            let s = match raw.decode_as::<LsSack>().expect("type checked above") {
                Ok(s) => s,
                Err(e) => return malformed(self, e),
            };
            if self.acks_data() {
                self.on_ls_sack(now, s, rx.path);
            }
        } else if t == LsForwardPsn::TYPE {
            let f = match raw.decode_as::<LsForwardPsn>().expect("type checked above") {
                Ok(f) => f,
                Err(e) => return malformed(self, e),
            };
            if self.receives_data() {
                self.on_ls_forward(f);
            }
        } else {
            return self.unrecognized_flow(rx, &raw);
        }
        Flow::Next
    }

    /// [`Association::on_unrecognized`] as a [`Flow`].
    fn unrecognized_flow(&mut self, rx: &mut PacketRx, raw: &braid_wire::RawChunk) -> Flow {
        if self.on_unrecognized(rx, raw) {
            Flow::Next
        } else {
            Flow::Stop
        }
    }

    /// States in which DATA from the peer is accepted.
    fn receives_data(&self) -> bool {
        matches!(
            self.state,
            State::Established
                | State::ShutdownPending
                | State::ShutdownSent
                | State::ShutdownReceived
        )
    }

    /// States in which SACKs are meaningful.
    fn acks_data(&self) -> bool {
        !matches!(
            self.state,
            State::CookieWait | State::CookieEchoed | State::Closed
        )
    }

    /// An unrecognized chunk: report and/or stop as its high bits say (RFC 9260 §3.2).
    /// Returns whether processing of the packet goes on.
    fn on_unrecognized(&mut self, rx: &mut PacketRx, raw: &braid_wire::RawChunk) -> bool {
        let action = raw.chunk_type.unrecognized_action();
        let echoed = raw.to_wire();
        // ERROR chunk header and cause header around the echoed chunk, padded (§3.3.10).
        let report = 8 + echoed.len().next_multiple_of(4);
        if action.reports() && report <= rx.report_budget {
            rx.report_budget -= report;
            // An ERROR cause for a chunk the peer sent that we do not understand (§3.2);
            // never more bytes of them than the packet brought (no amplification).
            let cause = ErrorCause::UnrecognizedChunkType(Bytes::from(echoed));
            self.queue_control(
                rx.path,
                ErrorChunk {
                    causes: vec![cause],
                },
            );
        }
        action.skips()
    }

    /// ERROR chunk (RFC 9260 §3.3.10). A Stale Cookie in COOKIE-ECHOED restarts the
    /// handshake (§5.2.6); other causes are informational.
    fn on_error(&mut self, now: Instant, e: ErrorChunk) {
        for c in &e.causes {
            tracing::debug!(?c, "peer reported an error");
            if matches!(c, ErrorCause::StaleCookie { .. }) && self.state == State::CookieEchoed {
                self.set_state(now, State::CookieWait);
                self.handshake_chunk = Some(self.rebuild_init());
                self.timers.set(Timer::T1, None);
                self.control
                    .retain(|c| !matches!(c.chunk, Chunk::CookieEcho(_)));
                let primary = self.primary;
                self.path_mut(primary).rtt.backoff();
                self.send_handshake_chunk(now);
                return;
            }
        }
    }
}

/// Whether a packet may be processed at all, judged before any chunk of it runs: INIT,
/// INIT-ACK and SHUTDOWN-COMPLETE must be alone in their packet (RFC 9260 §6.10, §8.5.1);
/// otherwise the whole packet is discarded, so nothing rides on their tag exceptions.
pub(crate) fn judged_whole(packet: &Bytes) -> bool {
    let mut count = 0usize;
    let mut lone_kind = false;
    for raw in raw_chunks(packet) {
        let Ok(raw) = raw else { break };
        count += 1;
        lone_kind |= matches!(
            raw.chunk_type,
            ChunkType::INIT | ChunkType::INIT_ACK | ChunkType::SHUTDOWN_COMPLETE
        );
        if lone_kind && count > 1 {
            return false;
        }
    }
    true
}

/// Where incoming SACKs are decoded, from one to the next.
#[derive(Debug, Default)]
pub(super) struct SackIn {
    sack: braid_wire::chunk::Sack,
    nr: NrSack,
    merged: Vec<braid_wire::chunk::GapAckBlock>,
}

/// The blocks an NR-SACK acknowledges at all: its gap blocks, or with NR blocks that
/// differ the two lists together (into `merged`, whose capacity is kept).
fn merge_nr_blocks<'a>(
    s: &'a NrSack,
    merged: &'a mut Vec<braid_wire::chunk::GapAckBlock>,
) -> &'a [braid_wire::chunk::GapAckBlock] {
    if s.nr_gap_blocks.is_empty() || s.nr_gap_blocks == s.gap_blocks {
        return &s.gap_blocks;
    }
    if s.gap_blocks.is_empty() {
        return &s.nr_gap_blocks;
    }
    merged.clear();
    merged.extend(s.gap_blocks.iter().chain(&s.nr_gap_blocks).copied());
    merged
}
