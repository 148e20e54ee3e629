//! The variable part of INIT and INIT-ACK (RFC 9260 §3.3.2, §3.3.3): what we announce, how
//! the peer's parameters are read (unknown ones by their high bits, §3.2.1), and the
//! INIT-ACK an endpoint answers with statelessly.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use braid_wire::chunk::{ChunkType, Init, InitAck, InitChunk};
use braid_wire::{ErrorCause, Param};
use bytes::Bytes;
use rand_core::RngCore;

use crate::config::AssociationConfig;
use crate::cookie::{CookieKey, Features, MAX_ADDRESSES, StateCookie};
use crate::time::Instant;

/// What the peer's INIT or INIT-ACK said beyond its fixed fields.
#[derive(Debug, Default)]
pub(crate) struct PeerParams {
    pub(crate) addresses: Vec<IpAddr>,
    pub(crate) features: Features,
    pub(crate) cookie: Option<Bytes>,
    pub(crate) cookie_preservative: Option<Duration>,
    /// Unrecognized parameters to report (whole TLVs, RFC 9260 §3.2.1 / §3.3.3.1).
    pub(crate) unrecognized: Vec<Bytes>,
    /// A fatal problem to answer with ABORT.
    pub(crate) error: Option<ErrorCause>,
}

/// Reads the parameters of an INIT or INIT-ACK, applying the high bits of unknown types.
pub(crate) fn read_params(params: &[Param], ours: &AssociationConfig) -> PeerParams {
    let mut out = PeerParams::default();
    let mut forward_tsn_listed = false;
    let mut nr_sack_listed = false;
    let mut idata_listed = false;
    let mut ls_offered = false;
    for p in params {
        match p {
            Param::Ipv4Address(_) | Param::Ipv6Address(_) => {
                if let Some(a) = p.address()
                    && out.addresses.len() < MAX_ADDRESSES
                    && !out.addresses.contains(&a)
                {
                    out.addresses.push(a);
                }
            }
            Param::StateCookie(c) => out.cookie = Some(c.clone()),
            Param::CookiePreservative(ms) => {
                out.cookie_preservative = Some(Duration::from_millis(u64::from(*ms)))
            }
            Param::HostNameAddress(_) => {
                // RFC 9260 §5.1.2: host names are not supported: ABORT.
                let mut tlv = Vec::new();
                p.encode(&mut tlv);
                out.error = Some(ErrorCause::UnresolvableAddress(tlv.into()));
                return out;
            }
            Param::ForwardTsnSupported => forward_tsn_listed = true,
            Param::LoadSharingSupported => ls_offered = true,
            Param::EifelSupported {
                timestamp,
                retransmit_bit,
            } => {
                out.features.eifel_ts = *timestamp;
                out.features.eifel_rbit = *retransmit_bit;
            }
            Param::SupportedExtensions(list) => {
                forward_tsn_listed |= list.contains(&ChunkType::FORWARD_TSN.0);
                nr_sack_listed |= list.contains(&ChunkType::NR_SACK.0);
                idata_listed |= list.contains(&ChunkType::I_DATA.0);
            }
            Param::Unknown { param_type, .. } => {
                let action = param_type.unrecognized_action();
                if action.reports() {
                    let mut tlv = Vec::new();
                    p.encode(&mut tlv);
                    out.unrecognized.push(tlv.into());
                }
                if !action.skips() {
                    break;
                }
            }
            // Known but meaningless here (Supported Address Types, ECN, adaptation, ...).
            _ => {}
        }
    }
    out.features.pr_sctp = forward_tsn_listed && ours.pr_sctp;
    out.features.nr_sack = nr_sack_listed && ours.nr_sack;
    // Abd El Al et al. §4.6: LS-SCTP only if both sides offer it, as ECN is negotiated.
    out.features.ls = ls_offered && ours.load_sharing;
    // RFC 8260 §2.2: I-DATA only if both listed it; braid does not mix it with LS-DATA.
    out.features.idata = idata_listed && ours.idata && !out.features.ls;
    out
}

/// Parameters we put in our INIT and INIT-ACK: our addresses when there are several
/// (RFC 9260 §5.1.2), Forward-TSN (RFC 3758) and the extensions we support (RFC 5061 §4.2.7).
pub(crate) fn our_params(cfg: &AssociationConfig, locals: &[SocketAddr]) -> Vec<Param> {
    let mut v = Vec::new();
    if locals.len() > 1 {
        let mut seen: Vec<IpAddr> = Vec::new();
        for a in locals {
            if !seen.contains(&a.ip()) && !a.ip().is_unspecified() {
                seen.push(a.ip());
                v.push(Param::from_address(a.ip()));
            }
        }
    }
    let mut ext = Vec::new();
    if cfg.pr_sctp {
        v.push(Param::ForwardTsnSupported);
        ext.push(ChunkType::FORWARD_TSN.0);
    }
    if cfg.nr_sack {
        ext.push(ChunkType::NR_SACK.0);
    }
    if cfg.idata {
        // RFC 8260 §2.2: I-DATA, and I-FORWARD-TSN with PR-SCTP.
        ext.push(ChunkType::I_DATA.0);
        if cfg.pr_sctp {
            ext.push(ChunkType::I_FORWARD_TSN.0);
        }
    }
    if !ext.is_empty() {
        v.push(Param::SupportedExtensions(ext));
    }
    if cfg.load_sharing {
        v.push(Param::LoadSharingSupported);
    }
    // Ladha et al. Fig. 6: braid echoes both Eifel signals for any peer that sends them; the
    // peer's own setting decides whether it does (high bits 10: others skip it).
    v.push(Param::EifelSupported {
        timestamp: true,
        retransmit_bit: true,
    });
    v
}

/// Tags and TSN the INIT-ACK announces, and the tie-tags its cookie carries.
#[derive(Debug, Clone, Copy)]
pub(crate) struct InitAckTags {
    pub(crate) local_tag: u32,
    pub(crate) local_initial_tsn: u32,
    pub(crate) local_tie_tag: u32,
    pub(crate) peer_tie_tag: u32,
}

/// Builds the INIT-ACK answering `init` from `src` (RFC 9260 §5.1 B), or the cause to
/// ABORT with if the INIT is unacceptable.
#[allow(clippy::too_many_arguments)]
pub(crate) fn build_init_ack(
    key: &CookieKey,
    cfg: &AssociationConfig,
    now: Instant,
    init: &Init,
    src: IpAddr,
    locals: &[SocketAddr],
    local_port: u16,
    peer_port: u16,
    tags: InitAckTags,
) -> Result<InitAck, ErrorCause> {
    if init.outbound_streams == 0 || init.inbound_streams == 0 {
        return Err(ErrorCause::InvalidMandatoryParameter);
    }
    let peer = read_params(&init.params, cfg);
    if let Some(e) = peer.error {
        return Err(e);
    }
    let mut addresses = vec![src];
    addresses.extend(peer.addresses.iter().filter(|a| **a != src));
    addresses.truncate(MAX_ADDRESSES);
    // Honour a Cookie Preservative up to one extra lifetime (RFC 9260 §5.1.3 allows ignoring it).
    let lifetime = key.life + peer.cookie_preservative.unwrap_or_default().min(key.life);
    let cookie = StateCookie {
        created: now,
        lifetime,
        local_tag: tags.local_tag,
        peer_tag: init.initiate_tag,
        local_initial_tsn: tags.local_initial_tsn,
        peer_initial_tsn: init.initial_tsn,
        peer_a_rwnd: init.a_rwnd,
        outbound_streams: cfg.outbound_streams.min(init.inbound_streams),
        inbound_streams: cfg.max_inbound_streams.min(init.outbound_streams),
        local_port,
        peer_port,
        local_tie_tag: tags.local_tie_tag,
        peer_tie_tag: tags.peer_tie_tag,
        features: peer.features,
        peer_addresses: addresses,
    };
    let mut params = vec![Param::StateCookie(key.seal(&cookie))];
    params.extend(our_params(cfg, locals));
    // Reports of unrecognized parameters stop where the INIT-ACK would outgrow the path MTU:
    // an attacker's INIT must not make us send more than one full packet (network input is hostile).
    let budget = cfg
        .path_mtu
        .saturating_sub(crate::path::header_overhead(
            &SocketAddr::new(src, 0),
            cfg.udp_encapsulation,
        ))
        .saturating_sub(braid_wire::COMMON_HEADER_LEN + 20);
    let mut used: usize = params.iter().map(param_wire_len).sum();
    for tlv in peer.unrecognized {
        let p = Param::UnrecognizedParameter(tlv);
        used += param_wire_len(&p);
        if used > budget {
            break;
        }
        params.push(p);
    }
    Ok(InitChunk {
        initiate_tag: tags.local_tag,
        a_rwnd: u32::try_from(cfg.recv_buffer).unwrap_or(u32::MAX),
        outbound_streams: cfg.outbound_streams,
        inbound_streams: cfg.max_inbound_streams,
        initial_tsn: tags.local_initial_tsn,
        params,
    })
}

/// Bytes a parameter takes in a chunk, padding included.
fn param_wire_len(p: &Param) -> usize {
    let mut v = Vec::new();
    p.encode(&mut v);
    (v.len() + 3) & !3
}

/// A random non-zero verification tag (RFC 9260 §5.3.1).
pub(crate) fn random_tag(rng: &mut impl RngCore) -> u32 {
    loop {
        let t = rng.next_u32();
        if t != 0 {
            return t;
        }
    }
}
