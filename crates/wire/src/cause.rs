//! Error causes carried in ABORT and ERROR chunks and in Error Cause Indication parameters
//! (RFC 9260 §3.3.10; RFC 5061 §5.1; RFC 6951 and the NEAT report, NEAT D3.1 Appendix F).

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use bytes::Bytes;

use crate::codec::{Reader, padding, put_tlv_header, put_u16, put_u32, put_zeros};
use crate::error::{DecodeError, Result};
use crate::param::{ParamType, param_name};

/// An error cause code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CauseCode(pub u16);

impl CauseCode {
    /// Invalid Stream Identifier (1).
    pub const INVALID_STREAM_IDENTIFIER: Self = Self(1);
    /// Missing Mandatory Parameter (2).
    pub const MISSING_MANDATORY_PARAMETER: Self = Self(2);
    /// Stale Cookie Error (3).
    pub const STALE_COOKIE: Self = Self(3);
    /// Out of Resource (4).
    pub const OUT_OF_RESOURCE: Self = Self(4);
    /// Unresolvable Address (5).
    pub const UNRESOLVABLE_ADDRESS: Self = Self(5);
    /// Unrecognized Chunk Type (6).
    pub const UNRECOGNIZED_CHUNK_TYPE: Self = Self(6);
    /// Invalid Mandatory Parameter (7).
    pub const INVALID_MANDATORY_PARAMETER: Self = Self(7);
    /// Unrecognized Parameters (8).
    pub const UNRECOGNIZED_PARAMETERS: Self = Self(8);
    /// No User Data (9).
    pub const NO_USER_DATA: Self = Self(9);
    /// Cookie Received While Shutting Down (10).
    pub const COOKIE_WHILE_SHUTTING_DOWN: Self = Self(10);
    /// Restart of an Association with New Addresses (11).
    pub const RESTART_WITH_NEW_ADDRESSES: Self = Self(11);
    /// User-Initiated Abort (12).
    pub const USER_INITIATED_ABORT: Self = Self(12);
    /// Protocol Violation (13).
    pub const PROTOCOL_VIOLATION: Self = Self(13);
    /// Restart of an Association with New Encapsulation Port (14, NEAT D3.1 Appendix F).
    pub const RESTART_WITH_NEW_ENCAPSULATION_PORT: Self = Self(14);
    /// Request to Delete Last Remaining IP Address (RFC 5061).
    pub const DELETE_LAST_REMAINING_ADDRESS: Self = Self(0x00A0);
    /// Operation Refused Due to Resource Shortage (RFC 5061).
    pub const RESOURCE_SHORTAGE: Self = Self(0x00A1);
    /// Request to Delete Source IP Address (RFC 5061).
    pub const DELETE_SOURCE_ADDRESS: Self = Self(0x00A2);
    /// Association Aborted Due to Illegal ASCONF-ACK (RFC 5061).
    pub const ILLEGAL_ASCONF_ACK: Self = Self(0x00A3);
    /// Request Refused - No Authorization (RFC 5061).
    pub const NO_AUTHORIZATION: Self = Self(0x00A4);
}

impl CauseCode {
    /// The cause's name as its RFC gives it (RFC 9260 §3.3.10, RFC 5061 §5.1, RFC 4895 §4.1,
    /// NEAT D3.1 Appendix F), or `None` for a code braid does not know.
    pub const fn name(self) -> Option<&'static str> {
        Some(match self.0 {
            1 => "Invalid Stream Identifier",
            2 => "Missing Mandatory Parameter",
            3 => "Stale Cookie Error",
            4 => "Out of Resource",
            5 => "Unresolvable Address",
            6 => "Unrecognized Chunk Type",
            7 => "Invalid Mandatory Parameter",
            8 => "Unrecognized Parameters",
            9 => "No User Data",
            10 => "Cookie Received While Shutting Down",
            11 => "Restart of an Association with New Addresses",
            12 => "User-Initiated Abort",
            13 => "Protocol Violation",
            14 => "Restart of an Association with New Encapsulation Port",
            0x00A0 => "Request to Delete Last Remaining IP Address",
            0x00A1 => "Operation Refused Due to Resource Shortage",
            0x00A2 => "Request to Delete Source IP Address",
            0x00A3 => "Association Aborted Due to Illegal ASCONF-ACK",
            0x00A4 => "Request Refused - No Authorization",
            0x0105 => "Unsupported HMAC Identifier",
            _ => return None,
        })
    }
}

/// One error cause. Opaque payloads (a returned chunk or parameter, free text) stay as bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ErrorCause {
    /// A DATA chunk named a stream that does not exist.
    InvalidStreamIdentifier {
        /// The offending stream.
        stream_id: u16,
    },
    /// INIT or INIT-ACK lacked mandatory parameters.
    MissingMandatoryParameter {
        /// Types of the missing parameters.
        param_types: Vec<u16>,
    },
    /// A COOKIE-ECHO arrived with an expired cookie.
    StaleCookie {
        /// How long past its life the cookie was, in microseconds.
        staleness_us: u32,
    },
    /// The sender is out of resources.
    OutOfResource,
    /// The sender cannot resolve an address; holds the address parameter TLV.
    UnresolvableAddress(Bytes),
    /// The receiver did not recognize a chunk; holds the whole chunk as received.
    UnrecognizedChunkType(Bytes),
    /// A mandatory parameter was set to an invalid value.
    InvalidMandatoryParameter,
    /// Unrecognized parameters of an INIT, as the TLVs received.
    UnrecognizedParameters(Bytes),
    /// A DATA chunk carried no user data.
    NoUserData {
        /// TSN of that chunk.
        tsn: u32,
    },
    /// A COOKIE-ECHO arrived while shutting down.
    CookieWhileShuttingDown,
    /// A restart tried to add addresses; holds the address parameter TLVs.
    RestartWithNewAddresses(Bytes),
    /// The upper layer aborted; holds its reason.
    UserInitiatedAbort(Bytes),
    /// The peer broke the protocol; holds free-form information.
    ProtocolViolation(Bytes),
    /// An INIT for a restart arrived with a different UDP encapsulation port.
    RestartWithNewEncapsulationPort {
        /// Remote encapsulation port in use for that address (0: encapsulation disabled).
        current_port: u16,
        /// UDP source port of the INIT (0: the INIT was not encapsulated).
        new_port: u16,
    },
    /// RFC 5061: refused to delete the last address; holds the request parameter.
    DeleteLastRemainingAddress(Bytes),
    /// RFC 5061: refused for lack of resources; holds the request parameter.
    ResourceShortage(Bytes),
    /// RFC 5061: refused to delete the source address; holds the request parameter.
    DeleteSourceAddress(Bytes),
    /// RFC 5061: aborted because of an illegal ASCONF-ACK.
    IllegalAsconfAck,
    /// RFC 5061: refused, not authorized; holds the request parameter.
    NoAuthorization(Bytes),
    /// A cause code braid does not parse, kept byte for byte.
    Unknown {
        /// Its code.
        code: CauseCode,
        /// Its information, without header or padding.
        info: Bytes,
    },
}

impl ErrorCause {
    /// This cause's code.
    pub fn code(&self) -> CauseCode {
        match self {
            Self::InvalidStreamIdentifier { .. } => CauseCode::INVALID_STREAM_IDENTIFIER,
            Self::MissingMandatoryParameter { .. } => CauseCode::MISSING_MANDATORY_PARAMETER,
            Self::StaleCookie { .. } => CauseCode::STALE_COOKIE,
            Self::OutOfResource => CauseCode::OUT_OF_RESOURCE,
            Self::UnresolvableAddress(_) => CauseCode::UNRESOLVABLE_ADDRESS,
            Self::UnrecognizedChunkType(_) => CauseCode::UNRECOGNIZED_CHUNK_TYPE,
            Self::InvalidMandatoryParameter => CauseCode::INVALID_MANDATORY_PARAMETER,
            Self::UnrecognizedParameters(_) => CauseCode::UNRECOGNIZED_PARAMETERS,
            Self::NoUserData { .. } => CauseCode::NO_USER_DATA,
            Self::CookieWhileShuttingDown => CauseCode::COOKIE_WHILE_SHUTTING_DOWN,
            Self::RestartWithNewAddresses(_) => CauseCode::RESTART_WITH_NEW_ADDRESSES,
            Self::UserInitiatedAbort(_) => CauseCode::USER_INITIATED_ABORT,
            Self::ProtocolViolation(_) => CauseCode::PROTOCOL_VIOLATION,
            Self::RestartWithNewEncapsulationPort { .. } => {
                CauseCode::RESTART_WITH_NEW_ENCAPSULATION_PORT
            }
            Self::DeleteLastRemainingAddress(_) => CauseCode::DELETE_LAST_REMAINING_ADDRESS,
            Self::ResourceShortage(_) => CauseCode::RESOURCE_SHORTAGE,
            Self::DeleteSourceAddress(_) => CauseCode::DELETE_SOURCE_ADDRESS,
            Self::IllegalAsconfAck => CauseCode::ILLEGAL_ASCONF_ACK,
            Self::NoAuthorization(_) => CauseCode::NO_AUTHORIZATION,
            Self::Unknown { code, .. } => *code,
        }
    }

    /// Decodes the information field of a cause with `code`.
    pub fn decode(code: u16, info: Bytes) -> Result<Self> {
        let code = CauseCode(code);
        let what = "error cause";
        let mut r = Reader::new(&info, what);
        let empty = |r: &Reader<'_>, c: Self| r.expect_len(0).map(|()| c);
        Ok(match code {
            CauseCode::INVALID_STREAM_IDENTIFIER => {
                r.expect_len(4)?;
                let stream_id = r.u16()?;
                let _reserved = r.u16()?;
                Self::InvalidStreamIdentifier { stream_id }
            }
            CauseCode::MISSING_MANDATORY_PARAMETER => {
                let n = r.u32()? as usize;
                if r.remaining() != n.saturating_mul(2) {
                    return Err(DecodeError::Inconsistent {
                        what: "Missing Mandatory Parameter cause",
                        detail: "parameter count does not match the cause length",
                    });
                }
                let mut param_types = Vec::with_capacity(n);
                for _ in 0..n {
                    param_types.push(r.u16()?);
                }
                Self::MissingMandatoryParameter { param_types }
            }
            CauseCode::STALE_COOKIE => {
                r.expect_len(4)?;
                Self::StaleCookie {
                    staleness_us: r.u32()?,
                }
            }
            CauseCode::OUT_OF_RESOURCE => empty(&r, Self::OutOfResource)?,
            CauseCode::UNRESOLVABLE_ADDRESS => Self::UnresolvableAddress(info.clone()),
            CauseCode::UNRECOGNIZED_CHUNK_TYPE => Self::UnrecognizedChunkType(info.clone()),
            CauseCode::INVALID_MANDATORY_PARAMETER => empty(&r, Self::InvalidMandatoryParameter)?,
            CauseCode::UNRECOGNIZED_PARAMETERS => Self::UnrecognizedParameters(info.clone()),
            CauseCode::NO_USER_DATA => {
                r.expect_len(4)?;
                Self::NoUserData { tsn: r.u32()? }
            }
            CauseCode::COOKIE_WHILE_SHUTTING_DOWN => empty(&r, Self::CookieWhileShuttingDown)?,
            CauseCode::RESTART_WITH_NEW_ADDRESSES => Self::RestartWithNewAddresses(info.clone()),
            CauseCode::USER_INITIATED_ABORT => Self::UserInitiatedAbort(info.clone()),
            CauseCode::PROTOCOL_VIOLATION => Self::ProtocolViolation(info.clone()),
            CauseCode::RESTART_WITH_NEW_ENCAPSULATION_PORT => {
                r.expect_len(4)?;
                Self::RestartWithNewEncapsulationPort {
                    current_port: r.u16()?,
                    new_port: r.u16()?,
                }
            }
            CauseCode::DELETE_LAST_REMAINING_ADDRESS => {
                Self::DeleteLastRemainingAddress(info.clone())
            }
            CauseCode::RESOURCE_SHORTAGE => Self::ResourceShortage(info.clone()),
            CauseCode::DELETE_SOURCE_ADDRESS => Self::DeleteSourceAddress(info.clone()),
            CauseCode::ILLEGAL_ASCONF_ACK => empty(&r, Self::IllegalAsconfAck)?,
            CauseCode::NO_AUTHORIZATION => Self::NoAuthorization(info.clone()),
            _ => Self::Unknown { code, info },
        })
    }

    /// Appends this cause (code, length, information), without trailing padding.
    pub fn encode_unpadded(&self, out: &mut Vec<u8>) {
        let code = self.code().0;
        match self {
            Self::InvalidStreamIdentifier { stream_id } => {
                put_tlv_header(out, code, 4);
                put_u16(out, *stream_id);
                put_u16(out, 0);
            }
            Self::MissingMandatoryParameter { param_types } => {
                put_tlv_header(out, code, 4 + 2 * param_types.len());
                put_u32(out, u32::try_from(param_types.len()).unwrap_or(u32::MAX));
                param_types.iter().for_each(|t| put_u16(out, *t));
            }
            Self::StaleCookie { staleness_us: v } | Self::NoUserData { tsn: v } => {
                put_tlv_header(out, code, 4);
                put_u32(out, *v);
            }
            Self::OutOfResource
            | Self::InvalidMandatoryParameter
            | Self::CookieWhileShuttingDown
            | Self::IllegalAsconfAck => put_tlv_header(out, code, 0),
            Self::UnresolvableAddress(b)
            | Self::UnrecognizedChunkType(b)
            | Self::UnrecognizedParameters(b)
            | Self::RestartWithNewAddresses(b)
            | Self::UserInitiatedAbort(b)
            | Self::ProtocolViolation(b)
            | Self::DeleteLastRemainingAddress(b)
            | Self::ResourceShortage(b)
            | Self::DeleteSourceAddress(b)
            | Self::NoAuthorization(b)
            | Self::Unknown { info: b, .. } => {
                put_tlv_header(out, code, b.len());
                out.extend_from_slice(b);
            }
            Self::RestartWithNewEncapsulationPort {
                current_port,
                new_port,
            } => {
                put_tlv_header(out, code, 4);
                put_u16(out, *current_port);
                put_u16(out, *new_port);
            }
        }
    }

    /// Decodes causes until the reader is empty.
    pub(crate) fn decode_list(r: &mut Reader<'_>) -> Result<Vec<Self>> {
        let mut causes = Vec::new();
        while r.remaining() > 0 {
            let (code, info) = r.tlv()?;
            causes.push(Self::decode(code, info)?);
        }
        Ok(causes)
    }

    /// Appends `causes`, padded between each other but not after the last (RFC 9260 §3.2).
    pub fn encode_list(causes: &[Self], out: &mut Vec<u8>) {
        let mut last_start = None;
        for c in causes {
            if let Some(s) = last_start {
                put_zeros(out, padding(out.len() - s));
            }
            last_start = Some(out.len());
            c.encode_unpadded(out);
        }
    }
}

/// At most this many characters of a peer's free text are shown (a hostile ABORT may carry
/// up to 64 KiB of it).
const MAX_TEXT: usize = 200;

/// Peer-supplied text: UTF-8 shown with control characters escaped (no terminal escape
/// sequences from the network) and cut at [`MAX_TEXT`]; anything else as hex.
fn write_text(f: &mut fmt::Formatter<'_>, b: &[u8]) -> fmt::Result {
    // Some stacks send C strings: a trailing NUL is not part of the text.
    let b = b.strip_suffix(&[0]).unwrap_or(b);
    match std::str::from_utf8(b) {
        Ok(s) => {
            for (i, c) in s.chars().enumerate() {
                if i == MAX_TEXT {
                    return f.write_str("...");
                }
                if c.is_control() {
                    write!(f, "{}", c.escape_default())?;
                } else {
                    write!(f, "{c}")?;
                }
            }
            Ok(())
        }
        Err(_) => write_hex(f, b),
    }
}

/// `N bytes: 0a 1b ...` (the first 16 bytes).
fn write_hex(f: &mut fmt::Formatter<'_>, b: &[u8]) -> fmt::Result {
    write!(f, "{} bytes:", b.len())?;
    for x in b.iter().take(16) {
        write!(f, " {x:02x}")?;
    }
    if b.len() > 16 {
        f.write_str(" ...")?;
    }
    Ok(())
}

/// The (type, value) TLVs of `b`, as far as they are well formed.
fn tlvs(mut b: &[u8]) -> impl Iterator<Item = (ParamType, &[u8])> {
    std::iter::from_fn(move || {
        let [t0, t1, l0, l1, ..] = *b else {
            return None;
        };
        let len = usize::from(u16::from_be_bytes([l0, l1]));
        let value = b.get(4..len)?;
        b = b.get((len + 3) & !3..).unwrap_or(&[]);
        Some((ParamType(u16::from_be_bytes([t0, t1])), value))
    })
}

/// One address parameter (RFC 9260 §3.3.2.1) in words.
fn write_address(f: &mut fmt::Formatter<'_>, ty: ParamType, v: &[u8]) -> fmt::Result {
    match (ty, v.len()) {
        (ParamType::IPV4_ADDRESS, 4) => {
            write!(f, "{}", IpAddr::V4(Ipv4Addr::new(v[0], v[1], v[2], v[3])))
        }
        (ParamType::IPV6_ADDRESS, 16) => {
            let mut o = [0u8; 16];
            o.copy_from_slice(v);
            write!(f, "{}", IpAddr::V6(Ipv6Addr::from(o)))
        }
        (ParamType::HOST_NAME_ADDRESS, _) => {
            f.write_str("host name ")?;
            write_text(f, v)
        }
        _ => write!(f, "{} (type {:#06x})", param_name(ty), ty.0),
    }
}

/// `: `, then the address parameters of a TLV list separated by `, ` (hex if none is well
/// formed; nothing if `b` is empty).
fn write_addresses(f: &mut fmt::Formatter<'_>, b: &[u8]) -> fmt::Result {
    if b.is_empty() {
        return Ok(());
    }
    f.write_str(": ")?;
    if tlvs(b).next().is_none() {
        return write_hex(f, b);
    }
    for (i, (ty, v)) in tlvs(b).enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write_address(f, ty, v)?;
    }
    Ok(())
}

/// `: ` before the first item, `, ` before the others.
fn sep(i: usize) -> &'static str {
    if i == 0 { ": " } else { ", " }
}

/// The RFC 5061 causes carry the ASCONF request parameter they refuse.
fn write_request(f: &mut fmt::Formatter<'_>, name: &str, b: &[u8]) -> fmt::Result {
    f.write_str(name)?;
    if let Some((ty, _)) = tlvs(b).next() {
        write!(f, " (request: {})", param_name(ty))?;
    }
    Ok(())
}

/// The cause's RFC name with its useful fields, for people (logs, error messages): e.g.
/// `Invalid Stream Identifier 7`, `User-Initiated Abort: shutting down`.
impl fmt::Display for ErrorCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = self.code().name().unwrap_or("unknown error cause");
        match self {
            Self::InvalidStreamIdentifier { stream_id } => write!(f, "{name} {stream_id}"),
            Self::MissingMandatoryParameter { param_types } => {
                f.write_str(name)?;
                for (i, t) in param_types.iter().enumerate() {
                    write!(f, "{}{}", sep(i), param_name(ParamType(*t)))?;
                }
                Ok(())
            }
            Self::StaleCookie { staleness_us } => {
                write!(f, "{name} (cookie {staleness_us} us too old)")
            }
            Self::OutOfResource
            | Self::InvalidMandatoryParameter
            | Self::CookieWhileShuttingDown
            | Self::IllegalAsconfAck => f.write_str(name),
            Self::UnresolvableAddress(b) | Self::RestartWithNewAddresses(b) => {
                f.write_str(name)?;
                write_addresses(f, b)
            }
            Self::UnrecognizedChunkType(b) => match b.first() {
                Some(t) => write!(f, "{name} {t:#04x}"),
                None => f.write_str(name),
            },
            Self::UnrecognizedParameters(b) => {
                f.write_str(name)?;
                for (i, (ty, _)) in tlvs(b).enumerate() {
                    write!(f, "{}{} (type {:#06x})", sep(i), param_name(ty), ty.0)?;
                }
                Ok(())
            }
            Self::NoUserData { tsn } => write!(f, "{name} (TSN {tsn})"),
            Self::UserInitiatedAbort(b) | Self::ProtocolViolation(b) => {
                f.write_str(name)?;
                if b.iter().any(|&x| x != 0) {
                    f.write_str(": ")?;
                    write_text(f, b)?;
                }
                Ok(())
            }
            Self::RestartWithNewEncapsulationPort {
                current_port,
                new_port,
            } => write!(
                f,
                "{name} (current port {current_port}, new port {new_port})"
            ),
            Self::DeleteLastRemainingAddress(b)
            | Self::ResourceShortage(b)
            | Self::DeleteSourceAddress(b)
            | Self::NoAuthorization(b) => write_request(f, name, b),
            Self::Unknown { code, info } => {
                write!(f, "{name} {} ({} bytes)", code.0, info.len())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr4(a: [u8; 4]) -> Vec<u8> {
        let mut v = vec![0, 5, 0, 8];
        v.extend_from_slice(&a);
        v
    }

    /// Every variant: (cause, what its Display must contain).
    fn cases() -> Vec<(ErrorCause, &'static str)> {
        let b = Bytes::copy_from_slice;
        let mut two = addr4([10, 0, 0, 1]);
        two.extend_from_slice(&[0, 6, 0, 20]);
        two.extend_from_slice(&[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        let request = b(&[0xc0, 0x01, 0x00, 0x10, 0, 0, 0, 9, 0, 5, 0, 8, 10, 0, 0, 2]);
        vec![
            (
                ErrorCause::InvalidStreamIdentifier { stream_id: 7 },
                "Invalid Stream Identifier 7",
            ),
            (
                ErrorCause::MissingMandatoryParameter {
                    param_types: vec![7, 9],
                },
                "Missing Mandatory Parameter: State Cookie parameter, Cookie Preservative",
            ),
            (
                ErrorCause::StaleCookie { staleness_us: 1500 },
                "Stale Cookie Error (cookie 1500 us too old)",
            ),
            (ErrorCause::OutOfResource, "Out of Resource"),
            (
                ErrorCause::UnresolvableAddress(b(&[0, 11, 0, 9, b'h', b'o', b's', b't', 0])),
                "Unresolvable Address: host name host",
            ),
            (
                ErrorCause::UnrecognizedChunkType(b(&[0x7f, 0, 0, 8, 1, 2, 3, 4])),
                "Unrecognized Chunk Type 0x7f",
            ),
            (
                ErrorCause::InvalidMandatoryParameter,
                "Invalid Mandatory Parameter",
            ),
            (
                ErrorCause::UnrecognizedParameters(b(&[0x80, 0x77, 0, 4, 0x80, 0x08, 0, 5, 1])),
                "Unrecognized Parameters: unknown parameter (type 0x8077), Supported \
                 Extensions parameter (type 0x8008)",
            ),
            (
                ErrorCause::NoUserData { tsn: 4242 },
                "No User Data (TSN 4242)",
            ),
            (
                ErrorCause::CookieWhileShuttingDown,
                "Cookie Received While Shutting Down",
            ),
            (
                ErrorCause::RestartWithNewAddresses(b(&two)),
                "Restart of an Association with New Addresses: 10.0.0.1, fe80::1",
            ),
            (
                ErrorCause::UserInitiatedAbort(b(b"going away\0")),
                "User-Initiated Abort: going away",
            ),
            (
                ErrorCause::ProtocolViolation(b(b"bad gap block")),
                "Protocol Violation: bad gap block",
            ),
            (
                ErrorCause::RestartWithNewEncapsulationPort {
                    current_port: 40000,
                    new_port: 40001,
                },
                "Restart of an Association with New Encapsulation Port (current port 40000, \
                 new port 40001)",
            ),
            (
                ErrorCause::DeleteLastRemainingAddress(request.clone()),
                "Request to Delete Last Remaining IP Address (request: Add IP Address",
            ),
            (
                ErrorCause::ResourceShortage(request.clone()),
                "Operation Refused Due to Resource Shortage (request: Add IP Address",
            ),
            (
                ErrorCause::DeleteSourceAddress(request.clone()),
                "Request to Delete Source IP Address (request: Add IP Address",
            ),
            (
                ErrorCause::IllegalAsconfAck,
                "Association Aborted Due to Illegal ASCONF-ACK",
            ),
            (
                ErrorCause::NoAuthorization(request),
                "Request Refused - No Authorization (request: Add IP Address",
            ),
            (
                ErrorCause::Unknown {
                    code: CauseCode(0x1234),
                    info: b(&[1, 2, 3]),
                },
                "unknown error cause 4660 (3 bytes)",
            ),
        ]
    }

    #[test]
    fn display_names_every_cause_without_debug_output() {
        for (c, want) in cases() {
            let s = c.to_string();
            assert!(s.contains(want), "{c:?}: {s:?} lacks {want:?}");
            if let Some(name) = c.code().name() {
                assert!(s.starts_with(name), "{s:?}");
            }
            for debug in ["{", "}", "[", "]", "b\"", "Bytes"] {
                assert!(!s.contains(debug), "{c:?} shows Debug output: {s:?}");
            }
        }
    }

    #[test]
    fn display_of_peer_text_is_bounded_and_escaped() {
        let c = ErrorCause::UserInitiatedAbort(Bytes::from(vec![b'x'; 5000]));
        assert!(c.to_string().len() < MAX_TEXT + 40);
        let c = ErrorCause::ProtocolViolation(Bytes::from_static(b"a\x1b[2Jb\n"));
        assert_eq!(c.to_string(), "Protocol Violation: a\\u{1b}[2Jb\\n");
        let c = ErrorCause::ProtocolViolation(Bytes::from_static(&[0xff, 0xfe, 1]));
        assert_eq!(c.to_string(), "Protocol Violation: 3 bytes: ff fe 01");
        // An empty reason (or only the NUL of an empty C string): just the name.
        let c = ErrorCause::UserInitiatedAbort(Bytes::from_static(&[0]));
        assert_eq!(c.to_string(), "User-Initiated Abort");
        // Truncated TLVs do not panic.
        let c = ErrorCause::RestartWithNewAddresses(Bytes::from_static(&[0, 5, 0, 200, 1]));
        assert_eq!(
            c.to_string(),
            "Restart of an Association with New Addresses: 5 bytes: 00 05 00 c8 01"
        );
    }
}
