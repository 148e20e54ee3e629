//! The State Cookie (RFC 9260 §5.1.3): everything needed to create the association once the
//! peer echoes it, signed with HMAC-SHA-256 under the endpoint's secret, so the INIT-ACK can
//! be sent without keeping any state.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::time::Duration;

use bytes::Bytes;
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::time::Instant;

type HmacSha256 = Hmac<Sha256>;

const VERSION: u8 = 1;
const MAC_LEN: usize = 32;
/// Peer addresses carried at most; an INIT listing more is cut to this many.
pub(crate) const MAX_ADDRESSES: usize = 16;

/// Extensions both sides agreed on, from the INIT/INIT-ACK exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Features {
    /// PR-SCTP (FORWARD-TSN) is usable.
    pub(crate) pr_sctp: bool,
    /// Both sides listed NR-SACK (0x10) in Supported Extensions.
    pub(crate) nr_sack: bool,
    /// Both sides sent Load-Sharing-Supported (LS-SCTP, Abd El Al et al. §4.6).
    pub(crate) ls: bool,
    /// The peer echoes TIMESTAMP chunks (Eifel-Supported, Ladha et al. Fig. 6 variant I).
    pub(crate) eifel_ts: bool,
    /// The peer echoes the retransmit bit (Eifel-Supported, Ladha et al. Fig. 6 variant II).
    pub(crate) eifel_rbit: bool,
    /// Both sides listed I-DATA (0x40) and, with PR-SCTP, I-FORWARD-TSN (RFC 8260 §2.2).
    pub(crate) idata: bool,
}

impl Features {
    fn to_bits(self) -> u32 {
        u32::from(self.pr_sctp)
            | (u32::from(self.nr_sack) << 1)
            | (u32::from(self.ls) << 2)
            | (u32::from(self.eifel_ts) << 3)
            | (u32::from(self.eifel_rbit) << 4)
            | (u32::from(self.idata) << 5)
    }

    fn from_bits(b: u32) -> Self {
        Self {
            pr_sctp: b & 1 != 0,
            nr_sack: b & 2 != 0,
            ls: b & 4 != 0,
            eifel_ts: b & 8 != 0,
            eifel_rbit: b & 16 != 0,
            idata: b & 32 != 0,
        }
    }
}

/// What the cookie remembers of the handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StateCookie {
    /// When the INIT-ACK was sent.
    pub(crate) created: Instant,
    /// How long the cookie is valid.
    pub(crate) lifetime: Duration,
    /// Our verification tag (the Initiate Tag of our INIT-ACK).
    pub(crate) local_tag: u32,
    /// The peer's verification tag (the Initiate Tag of its INIT).
    pub(crate) peer_tag: u32,
    /// Our initial TSN.
    pub(crate) local_initial_tsn: u32,
    /// The peer's initial TSN.
    pub(crate) peer_initial_tsn: u32,
    /// The peer's a_rwnd from its INIT.
    pub(crate) peer_a_rwnd: u32,
    /// Negotiated outbound streams (ours towards the peer).
    pub(crate) outbound_streams: u16,
    /// Negotiated inbound streams.
    pub(crate) inbound_streams: u16,
    /// Our SCTP port.
    pub(crate) local_port: u16,
    /// The peer's SCTP port.
    pub(crate) peer_port: u16,
    /// Tie-tags of an existing association (RFC 9260 §5.2.2), zero if none.
    pub(crate) local_tie_tag: u32,
    /// Peer tie-tag.
    pub(crate) peer_tie_tag: u32,
    /// Agreed extensions.
    pub(crate) features: Features,
    /// The peer's addresses: the INIT's source first, then those it listed.
    pub(crate) peer_addresses: Vec<IpAddr>,
}

/// Why a cookie was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CookieError {
    /// Not a cookie of ours: wrong size, version or signature (RFC 9260 §5.1.5: discard).
    Invalid,
    /// Signed by us but past its lifetime by `staleness` (answered with cause 3).
    Stale {
        /// How long past its life the cookie is.
        staleness: Duration,
        /// The peer's tag, for the ERROR's verification tag.
        peer_tag: u32,
        /// Our tag in the cookie, which the packet's verification tag must equal
        /// (§5.1.5 step 3 comes before the age check of step 4).
        local_tag: u32,
    },
}

fn mac(secret: &[u8; 32]) -> HmacSha256 {
    // HMAC accepts keys of any length: this cannot fail.
    <HmacSha256 as Mac>::new_from_slice(secret).unwrap_or_else(|_| unreachable!())
}

impl StateCookie {
    /// Serializes and signs the cookie.
    pub(crate) fn seal(&self, secret: &[u8; 32]) -> Bytes {
        let mut v = Vec::with_capacity(64 + 17 * self.peer_addresses.len() + MAC_LEN);
        v.push(VERSION);
        v.extend_from_slice(&(self.created.since_epoch().as_micros() as u64).to_be_bytes());
        v.extend_from_slice(&(self.lifetime.as_micros() as u64).to_be_bytes());
        for x in [
            self.local_tag,
            self.peer_tag,
            self.local_initial_tsn,
            self.peer_initial_tsn,
            self.peer_a_rwnd,
            self.local_tie_tag,
            self.peer_tie_tag,
            self.features.to_bits(),
        ] {
            v.extend_from_slice(&x.to_be_bytes());
        }
        for x in [
            self.outbound_streams,
            self.inbound_streams,
            self.local_port,
            self.peer_port,
        ] {
            v.extend_from_slice(&x.to_be_bytes());
        }
        let addrs = &self.peer_addresses[..self.peer_addresses.len().min(MAX_ADDRESSES)];
        v.push(addrs.len() as u8);
        for a in addrs {
            match a {
                IpAddr::V4(a) => {
                    v.push(4);
                    v.extend_from_slice(&a.octets());
                }
                IpAddr::V6(a) => {
                    v.push(6);
                    v.extend_from_slice(&a.octets());
                }
            }
        }
        let mut m = mac(secret);
        m.update(&v);
        v.extend_from_slice(&m.finalize().into_bytes());
        v.into()
    }

    /// Checks the signature and lifetime of a received cookie and decodes it.
    pub(crate) fn open(secret: &[u8; 32], bytes: &[u8], now: Instant) -> Result<Self, CookieError> {
        if bytes.len() < MAC_LEN + 1 {
            return Err(CookieError::Invalid);
        }
        let (body, tag) = bytes.split_at(bytes.len() - MAC_LEN);
        let mut m = mac(secret);
        m.update(body);
        // Constant-time comparison (RFC 9260 §5.1.5 step 1 relies on the MAC alone).
        m.verify_slice(tag).map_err(|_| CookieError::Invalid)?;
        let c = Self::decode(body).ok_or(CookieError::Invalid)?;
        let expiry = c.created + c.lifetime;
        if now > expiry {
            return Err(CookieError::Stale {
                staleness: now - expiry,
                peer_tag: c.peer_tag,
                local_tag: c.local_tag,
            });
        }
        Ok(c)
    }

    fn decode(b: &[u8]) -> Option<Self> {
        let mut r = b;
        let mut take = |n: usize| -> Option<&[u8]> {
            let (h, t) = r.split_at_checked(n)?;
            r = t;
            Some(h)
        };
        if take(1)?[0] != VERSION {
            return None;
        }
        let u64_ = |s: &[u8]| u64::from_be_bytes(s.try_into().unwrap_or([0; 8]));
        let created = Instant::from_duration(Duration::from_micros(u64_(take(8)?)));
        let lifetime = Duration::from_micros(u64_(take(8)?));
        let mut w = [0u32; 8];
        for x in &mut w {
            *x = u32::from_be_bytes(take(4)?.try_into().ok()?);
        }
        let mut h = [0u16; 4];
        for x in &mut h {
            *x = u16::from_be_bytes(take(2)?.try_into().ok()?);
        }
        let n = take(1)?[0] as usize;
        let mut peer_addresses = Vec::with_capacity(n.min(MAX_ADDRESSES));
        for _ in 0..n {
            peer_addresses.push(match take(1)?[0] {
                4 => IpAddr::V4(Ipv4Addr::from(<[u8; 4]>::try_from(take(4)?).ok()?)),
                6 => IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(take(16)?).ok()?)),
                _ => return None,
            });
        }
        if !r.is_empty() {
            return None;
        }
        Some(Self {
            created,
            lifetime,
            local_tag: w[0],
            peer_tag: w[1],
            local_initial_tsn: w[2],
            peer_initial_tsn: w[3],
            peer_a_rwnd: w[4],
            local_tie_tag: w[5],
            peer_tie_tag: w[6],
            features: Features::from_bits(w[7]),
            outbound_streams: h[0],
            inbound_streams: h[1],
            local_port: h[2],
            peer_port: h[3],
            peer_addresses,
        })
    }
}

/// The endpoint's cookie secrets and lifetime, shared with its associations (which answer
/// INITs and COOKIE-ECHOs themselves in the collision and restart cases).
#[derive(Debug)]
pub(crate) struct CookieKey {
    secrets: std::sync::Mutex<Secrets>,
    pub(crate) life: Duration,
}

/// The current secret, and the one it replaced while cookies signed with it may live.
#[derive(Debug, Clone, Copy)]
struct Secrets {
    current: [u8; 32],
    previous: Option<([u8; 32], Instant)>,
}

impl CookieKey {
    pub(crate) fn new(secret: [u8; 32], life: Duration) -> Self {
        Self {
            secrets: std::sync::Mutex::new(Secrets {
                current: secret,
                previous: None,
            }),
            life,
        }
    }

    fn secrets(&self) -> Secrets {
        *self.secrets.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Replaces the secret; the old one still opens cookies until `old_until` (RFC 9260
    /// §5.1.3: the secret should change regularly; cookies in flight stay valid).
    pub(crate) fn rotate(&self, secret: [u8; 32], old_until: Instant) {
        let mut s = self.secrets.lock().unwrap_or_else(|e| e.into_inner());
        s.previous = Some((s.current, old_until));
        s.current = secret;
    }

    /// Signs a cookie with the current secret.
    pub(crate) fn seal(&self, c: &StateCookie) -> Bytes {
        c.seal(&self.secrets().current)
    }

    /// Opens a cookie signed with the current secret, or the previous one while it lives.
    pub(crate) fn open(&self, bytes: &[u8], now: Instant) -> Result<StateCookie, CookieError> {
        let s = self.secrets();
        match StateCookie::open(&s.current, bytes, now) {
            Err(CookieError::Invalid) => match s.previous {
                Some((old, until)) if now < until => StateCookie::open(&old, bytes, now),
                _ => Err(CookieError::Invalid),
            },
            r => r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cookie() -> StateCookie {
        StateCookie {
            created: Instant::from_duration(Duration::from_secs(100)),
            lifetime: Duration::from_secs(60),
            local_tag: 1,
            peer_tag: 2,
            local_initial_tsn: 3,
            peer_initial_tsn: 4,
            peer_a_rwnd: 5,
            outbound_streams: 6,
            inbound_streams: 7,
            local_port: 8,
            peer_port: 9,
            local_tie_tag: 10,
            peer_tie_tag: 11,
            features: Features {
                pr_sctp: true,
                nr_sack: true,
                ls: true,
                eifel_ts: true,
                eifel_rbit: false,
                idata: true,
            },
            peer_addresses: vec!["192.0.2.1".parse().unwrap(), "2001:db8::1".parse().unwrap()],
        }
    }

    const KEY: [u8; 32] = [7; 32];

    #[test]
    fn a_sealed_cookie_opens_within_its_lifetime() {
        let c = cookie();
        let sealed = c.seal(&KEY);
        let now = Instant::from_duration(Duration::from_secs(150));
        assert_eq!(StateCookie::open(&KEY, &sealed, now), Ok(c));
    }

    #[test]
    fn a_cookie_past_its_lifetime_is_stale_by_the_overshoot() {
        let sealed = cookie().seal(&KEY);
        let now = Instant::from_duration(Duration::from_secs(165));
        assert_eq!(
            StateCookie::open(&KEY, &sealed, now),
            Err(CookieError::Stale {
                staleness: Duration::from_secs(5),
                peer_tag: 2,
                local_tag: 1
            })
        );
    }

    #[test]
    fn any_flipped_bit_or_other_key_is_rejected() {
        let sealed = cookie().seal(&KEY);
        let now = Instant::from_duration(Duration::from_secs(101));
        for i in 0..sealed.len() * 8 {
            let mut forged = sealed.to_vec();
            forged[i / 8] ^= 1 << (i % 8);
            assert_eq!(
                StateCookie::open(&KEY, &forged, now),
                Err(CookieError::Invalid)
            );
        }
        assert_eq!(
            StateCookie::open(&[8; 32], &sealed, now),
            Err(CookieError::Invalid)
        );
        assert_eq!(
            StateCookie::open(&KEY, &sealed[..20], now),
            Err(CookieError::Invalid)
        );
        assert_eq!(StateCookie::open(&KEY, &[], now), Err(CookieError::Invalid));
    }
}
