//! Error causes carried in ABORT and ERROR chunks and in Error Cause Indication parameters
//! (RFC 9260 §3.3.10; RFC 5061 §5.1; RFC 6951 and the NEAT report, 003_*.txt Appendix F).

use bytes::Bytes;

use crate::codec::{Reader, padding, put_tlv_header, put_u16, put_u32, put_zeros};
use crate::error::{DecodeError, Result};

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
    /// Restart of an Association with New Encapsulation Port (14, 003_*.txt Appendix F).
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
