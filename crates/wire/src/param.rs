//! Variable-length parameters (TLVs) carried in INIT, INIT-ACK, HEARTBEAT, ASCONF and
//! RE-CONFIG chunks (RFC 9260 §3.2.1, §3.3.2; RFC 5061 §4.2; RFC 6525 §4; RFC 4820 §3).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use bytes::Bytes;

use crate::UnrecognizedAction;
use crate::cause::ErrorCause;
use crate::codec::{Reader, padding, put_tlv_header, put_u16, put_u32, put_zeros};
use crate::error::{DecodeError, Result};

/// A parameter type code (16 bits; the two high bits say what to do if it is unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ParamType(pub u16);

impl ParamType {
    /// Heartbeat Info (RFC 9260 §3.3.5).
    pub const HEARTBEAT_INFO: Self = Self(1);
    /// IPv4 Address (RFC 9260 §3.3.2.1).
    pub const IPV4_ADDRESS: Self = Self(5);
    /// IPv6 Address (RFC 9260 §3.3.2.1).
    pub const IPV6_ADDRESS: Self = Self(6);
    /// State Cookie (RFC 9260 §3.3.3.1).
    pub const STATE_COOKIE: Self = Self(7);
    /// Unrecognized Parameter (RFC 9260 §3.3.3.1).
    pub const UNRECOGNIZED_PARAMETER: Self = Self(8);
    /// Cookie Preservative (RFC 9260 §3.3.2.1).
    pub const COOKIE_PRESERVATIVE: Self = Self(9);
    /// Host Name Address (RFC 9260 §3.3.2.1, deprecated: to be rejected).
    pub const HOST_NAME_ADDRESS: Self = Self(11);
    /// Supported Address Types (RFC 9260 §3.3.2.1).
    pub const SUPPORTED_ADDRESS_TYPES: Self = Self(12);
    /// Outgoing SSN Reset Request (RFC 6525 §4.1).
    pub const OUTGOING_SSN_RESET_REQUEST: Self = Self(13);
    /// Incoming SSN Reset Request (RFC 6525 §4.2).
    pub const INCOMING_SSN_RESET_REQUEST: Self = Self(14);
    /// SSN/TSN Reset Request (RFC 6525 §4.3).
    pub const SSN_TSN_RESET_REQUEST: Self = Self(15);
    /// Re-configuration Response (RFC 6525 §4.4).
    pub const RECONFIG_RESPONSE: Self = Self(16);
    /// Add Outgoing Streams Request (RFC 6525 §4.5).
    pub const ADD_OUTGOING_STREAMS: Self = Self(17);
    /// Add Incoming Streams Request (RFC 6525 §4.6).
    pub const ADD_INCOMING_STREAMS: Self = Self(18);
    /// ECN Capable (RFC 9260 Appendix A).
    pub const ECN_CAPABLE: Self = Self(0x8000);
    /// Padding (RFC 4820 §3).
    pub const PADDING: Self = Self(0x8005);
    /// Supported Extensions (RFC 5061 §4.2.7).
    pub const SUPPORTED_EXTENSIONS: Self = Self(0x8008);
    /// Load-Sharing-Supported (LS-SCTP, Abd El Al et al. 2004 §4.6; braid's code).
    pub const LOAD_SHARING_SUPPORTED: Self = Self(0x80B0);
    /// Eifel-Supported (spurious retransmission detection, Ladha et al. 2004; braid's code).
    pub const EIFEL_SUPPORTED: Self = Self(0x80B1);
    /// Forward-TSN-Supported (RFC 3758 §3.1).
    pub const FORWARD_TSN_SUPPORTED: Self = Self(0xC000);
    /// Add IP Address (RFC 5061 §4.2.1).
    pub const ADD_IP_ADDRESS: Self = Self(0xC001);
    /// Delete IP Address (RFC 5061 §4.2.2).
    pub const DELETE_IP_ADDRESS: Self = Self(0xC002);
    /// Error Cause Indication (RFC 5061 §4.2.3).
    pub const ERROR_CAUSE_INDICATION: Self = Self(0xC003);
    /// Set Primary Address (RFC 5061 §4.2.4).
    pub const SET_PRIMARY_ADDRESS: Self = Self(0xC004);
    /// Success Indication (RFC 5061 §4.2.5).
    pub const SUCCESS_INDICATION: Self = Self(0xC005);
    /// Adaptation Layer Indication (RFC 5061 §4.2.6).
    pub const ADAPTATION_LAYER_INDICATION: Self = Self(0xC006);

    /// What RFC 9260 §3.2.1 says to do with this type if it is not recognized.
    pub const fn unrecognized_action(self) -> UnrecognizedAction {
        UnrecognizedAction::from_high_bits((self.0 >> 14) as u8)
    }
}

/// One parameter. Types braid does not know are kept whole in [`Param::Unknown`] so the core
/// can apply their high bits (RFC 9260 §3.2.1) and echo them in an Unrecognized Parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Param {
    /// Opaque sender-specific heartbeat information, echoed in HEARTBEAT-ACK.
    HeartbeatInfo(Bytes),
    /// An IPv4 address of the sender.
    Ipv4Address(Ipv4Addr),
    /// An IPv6 address of the sender.
    Ipv6Address(Ipv6Addr),
    /// The state cookie of INIT-ACK.
    StateCookie(Bytes),
    /// An unrecognized parameter reported back, as the whole TLV that was received.
    UnrecognizedParameter(Bytes),
    /// Suggested cookie life-span increment, in milliseconds.
    CookiePreservative(u32),
    /// A host name (deprecated by RFC 9260; the core answers with an error cause).
    HostNameAddress(Bytes),
    /// Address parameter types the sender can use (5 = IPv4, 6 = IPv6, 11 = host name).
    SupportedAddressTypes(Vec<u16>),
    /// RFC 6525 §4.1: reset the listed outgoing streams (all if empty).
    OutgoingSsnResetRequest {
        /// Re-configuration request sequence number.
        request_seq: u32,
        /// Sequence number of the request this one answers.
        response_seq: u32,
        /// Sender's last assigned TSN.
        last_tsn: u32,
        /// Streams to reset.
        streams: Vec<u16>,
    },
    /// RFC 6525 §4.2: ask the peer to reset its outgoing streams.
    IncomingSsnResetRequest {
        /// Re-configuration request sequence number.
        request_seq: u32,
        /// Streams to reset.
        streams: Vec<u16>,
    },
    /// RFC 6525 §4.3: reset all SSNs and the TSN.
    SsnTsnResetRequest {
        /// Re-configuration request sequence number.
        request_seq: u32,
    },
    /// RFC 6525 §4.4: the answer to a request.
    ReconfigResponse {
        /// Sequence number of the request answered.
        response_seq: u32,
        /// Result code (0 = success - nothing to do, 1 = success - performed, ...).
        result: u32,
        /// Sender's and receiver's next TSN, present in answers to an SSN/TSN reset.
        next_tsns: Option<(u32, u32)>,
    },
    /// RFC 6525 §4.5: add outgoing streams.
    AddOutgoingStreams {
        /// Re-configuration request sequence number.
        request_seq: u32,
        /// Number of streams to add.
        new_streams: u16,
    },
    /// RFC 6525 §4.6: ask the peer to add outgoing streams.
    AddIncomingStreams {
        /// Re-configuration request sequence number.
        request_seq: u32,
        /// Number of streams to add.
        new_streams: u16,
    },
    /// The sender supports ECN.
    EcnCapable,
    /// RFC 4820 padding, its content ignored by the receiver.
    Padding(Bytes),
    /// Chunk types of the extensions the sender supports.
    SupportedExtensions(Vec<u8>),
    /// The sender supports LS-SCTP load sharing and is willing to use it on this
    /// association (Abd El Al et al. 2004 §4.6; the chunks are in
    /// [`chunk::LsData`](crate::chunk::LsData) and its module).
    LoadSharingSupported,
    /// The sender echoes the Eifel signals of these variants (Ladha et al. 2004, Fig. 6;
    /// the TIMESTAMP chunk and the retransmit bit are in
    /// [`chunk::Timestamp`](crate::chunk::Timestamp)'s module). One 32-bit flags word.
    EifelSupported {
        /// Bit 0: the TIMESTAMP chunk (variant I).
        timestamp: bool,
        /// Bit 1: the retransmit bit in DATA and SACK flags (variant II).
        retransmit_bit: bool,
    },
    /// The sender supports PR-SCTP (FORWARD-TSN).
    ForwardTsnSupported,
    /// RFC 5061: add an address to the association.
    AddIpAddress {
        /// ASCONF-Request Correlation ID.
        correlation_id: u32,
        /// The address (0.0.0.0 or :: stand for the packet's source address).
        address: IpAddr,
    },
    /// RFC 5061: remove an address from the association.
    DeleteIpAddress {
        /// ASCONF-Request Correlation ID.
        correlation_id: u32,
        /// The address.
        address: IpAddr,
    },
    /// RFC 5061: a request failed, with the reasons.
    ErrorCauseIndication {
        /// ASCONF-Request Correlation ID.
        correlation_id: u32,
        /// Why it failed.
        causes: Vec<ErrorCause>,
    },
    /// RFC 5061: make an address the peer's primary destination.
    SetPrimaryAddress {
        /// ASCONF-Request Correlation ID.
        correlation_id: u32,
        /// The address.
        address: IpAddr,
    },
    /// RFC 5061: a request succeeded.
    SuccessIndication {
        /// ASCONF-Request Correlation ID.
        correlation_id: u32,
    },
    /// RFC 5061: the adaptation layer indication of the upper layer.
    AdaptationLayerIndication(u32),
    /// A parameter type braid does not parse; kept byte for byte.
    Unknown {
        /// Its type code.
        param_type: ParamType,
        /// Its value, without header or padding.
        value: Bytes,
    },
}

impl Param {
    /// This parameter's type code.
    pub fn param_type(&self) -> ParamType {
        match self {
            Self::HeartbeatInfo(_) => ParamType::HEARTBEAT_INFO,
            Self::Ipv4Address(_) => ParamType::IPV4_ADDRESS,
            Self::Ipv6Address(_) => ParamType::IPV6_ADDRESS,
            Self::StateCookie(_) => ParamType::STATE_COOKIE,
            Self::UnrecognizedParameter(_) => ParamType::UNRECOGNIZED_PARAMETER,
            Self::CookiePreservative(_) => ParamType::COOKIE_PRESERVATIVE,
            Self::HostNameAddress(_) => ParamType::HOST_NAME_ADDRESS,
            Self::SupportedAddressTypes(_) => ParamType::SUPPORTED_ADDRESS_TYPES,
            Self::OutgoingSsnResetRequest { .. } => ParamType::OUTGOING_SSN_RESET_REQUEST,
            Self::IncomingSsnResetRequest { .. } => ParamType::INCOMING_SSN_RESET_REQUEST,
            Self::SsnTsnResetRequest { .. } => ParamType::SSN_TSN_RESET_REQUEST,
            Self::ReconfigResponse { .. } => ParamType::RECONFIG_RESPONSE,
            Self::AddOutgoingStreams { .. } => ParamType::ADD_OUTGOING_STREAMS,
            Self::AddIncomingStreams { .. } => ParamType::ADD_INCOMING_STREAMS,
            Self::EcnCapable => ParamType::ECN_CAPABLE,
            Self::Padding(_) => ParamType::PADDING,
            Self::SupportedExtensions(_) => ParamType::SUPPORTED_EXTENSIONS,
            Self::LoadSharingSupported => ParamType::LOAD_SHARING_SUPPORTED,
            Self::EifelSupported { .. } => ParamType::EIFEL_SUPPORTED,
            Self::ForwardTsnSupported => ParamType::FORWARD_TSN_SUPPORTED,
            Self::AddIpAddress { .. } => ParamType::ADD_IP_ADDRESS,
            Self::DeleteIpAddress { .. } => ParamType::DELETE_IP_ADDRESS,
            Self::ErrorCauseIndication { .. } => ParamType::ERROR_CAUSE_INDICATION,
            Self::SetPrimaryAddress { .. } => ParamType::SET_PRIMARY_ADDRESS,
            Self::SuccessIndication { .. } => ParamType::SUCCESS_INDICATION,
            Self::AdaptationLayerIndication(_) => ParamType::ADAPTATION_LAYER_INDICATION,
            Self::Unknown { param_type, .. } => *param_type,
        }
    }

    /// The address carried by an IPv4/IPv6 Address parameter.
    pub fn address(&self) -> Option<IpAddr> {
        match self {
            Self::Ipv4Address(a) => Some(IpAddr::V4(*a)),
            Self::Ipv6Address(a) => Some(IpAddr::V6(*a)),
            _ => None,
        }
    }

    /// The IPv4/IPv6 Address parameter for `addr`.
    pub fn from_address(addr: IpAddr) -> Self {
        match addr {
            IpAddr::V4(a) => Self::Ipv4Address(a),
            IpAddr::V6(a) => Self::Ipv6Address(a),
        }
    }

    /// Decodes the value of a parameter of type `ty`.
    pub fn decode(ty: u16, value: Bytes) -> Result<Self> {
        let ty = ParamType(ty);
        let what = param_name(ty);
        let mut r = Reader::new(&value, what);
        let p = match ty {
            ParamType::HEARTBEAT_INFO => Self::HeartbeatInfo(value.clone()),
            ParamType::IPV4_ADDRESS | ParamType::IPV6_ADDRESS => {
                Self::from_address(address_value(ty, &value)?)
            }
            ParamType::STATE_COOKIE => Self::StateCookie(value.clone()),
            ParamType::UNRECOGNIZED_PARAMETER => Self::UnrecognizedParameter(value.clone()),
            ParamType::COOKIE_PRESERVATIVE => {
                r.expect_len(4)?;
                Self::CookiePreservative(r.u32()?)
            }
            ParamType::HOST_NAME_ADDRESS => Self::HostNameAddress(value.clone()),
            ParamType::SUPPORTED_ADDRESS_TYPES => Self::SupportedAddressTypes(u16_list(&mut r)?),
            ParamType::OUTGOING_SSN_RESET_REQUEST => Self::OutgoingSsnResetRequest {
                request_seq: r.u32()?,
                response_seq: r.u32()?,
                last_tsn: r.u32()?,
                streams: u16_list(&mut r)?,
            },
            ParamType::INCOMING_SSN_RESET_REQUEST => Self::IncomingSsnResetRequest {
                request_seq: r.u32()?,
                streams: u16_list(&mut r)?,
            },
            ParamType::SSN_TSN_RESET_REQUEST => {
                r.expect_len(4)?;
                Self::SsnTsnResetRequest {
                    request_seq: r.u32()?,
                }
            }
            ParamType::RECONFIG_RESPONSE => {
                let response_seq = r.u32()?;
                let result = r.u32()?;
                let next_tsns = match r.remaining() {
                    0 => None,
                    8 => Some((r.u32()?, r.u32()?)),
                    _ => {
                        return Err(DecodeError::Inconsistent {
                            what,
                            detail: "value must be 8 or 16 bytes",
                        });
                    }
                };
                Self::ReconfigResponse {
                    response_seq,
                    result,
                    next_tsns,
                }
            }
            ParamType::ADD_OUTGOING_STREAMS | ParamType::ADD_INCOMING_STREAMS => {
                r.expect_len(8)?;
                let request_seq = r.u32()?;
                let new_streams = r.u16()?;
                let _reserved = r.u16()?;
                if ty == ParamType::ADD_OUTGOING_STREAMS {
                    Self::AddOutgoingStreams {
                        request_seq,
                        new_streams,
                    }
                } else {
                    Self::AddIncomingStreams {
                        request_seq,
                        new_streams,
                    }
                }
            }
            ParamType::ECN_CAPABLE => {
                r.expect_len(0)?;
                Self::EcnCapable
            }
            ParamType::PADDING => Self::Padding(value.clone()),
            ParamType::SUPPORTED_EXTENSIONS => Self::SupportedExtensions(value.to_vec()),
            ParamType::LOAD_SHARING_SUPPORTED => {
                r.expect_len(0)?;
                Self::LoadSharingSupported
            }
            ParamType::EIFEL_SUPPORTED => {
                r.expect_len(4)?;
                // Bits other than 0 and 1 are reserved: ignored, for later variants.
                let bits = r.u32()?;
                Self::EifelSupported {
                    timestamp: bits & 1 != 0,
                    retransmit_bit: bits & 2 != 0,
                }
            }
            ParamType::FORWARD_TSN_SUPPORTED => {
                r.expect_len(0)?;
                Self::ForwardTsnSupported
            }
            ParamType::ADD_IP_ADDRESS
            | ParamType::DELETE_IP_ADDRESS
            | ParamType::SET_PRIMARY_ADDRESS => {
                let correlation_id = r.u32()?;
                let (aty, aval) = r.tlv()?;
                if r.remaining() != 0 {
                    return Err(DecodeError::Inconsistent {
                        what,
                        detail: "bytes follow the address parameter",
                    });
                }
                let address = address_value(ParamType(aty), &aval)?;
                match ty {
                    ParamType::ADD_IP_ADDRESS => Self::AddIpAddress {
                        correlation_id,
                        address,
                    },
                    ParamType::DELETE_IP_ADDRESS => Self::DeleteIpAddress {
                        correlation_id,
                        address,
                    },
                    _ => Self::SetPrimaryAddress {
                        correlation_id,
                        address,
                    },
                }
            }
            ParamType::ERROR_CAUSE_INDICATION => Self::ErrorCauseIndication {
                correlation_id: r.u32()?,
                causes: ErrorCause::decode_list(&mut r)?,
            },
            ParamType::SUCCESS_INDICATION => {
                r.expect_len(4)?;
                Self::SuccessIndication {
                    correlation_id: r.u32()?,
                }
            }
            ParamType::ADAPTATION_LAYER_INDICATION => {
                r.expect_len(4)?;
                Self::AdaptationLayerIndication(r.u32()?)
            }
            _ => Self::Unknown {
                param_type: ty,
                value,
            },
        };
        Ok(p)
    }

    /// Appends this parameter as a TLV, without trailing padding (see [`encode_list`]).
    pub fn encode_unpadded(&self, out: &mut Vec<u8>) {
        let ty = self.param_type().0;
        match self {
            Self::HeartbeatInfo(b)
            | Self::StateCookie(b)
            | Self::UnrecognizedParameter(b)
            | Self::HostNameAddress(b)
            | Self::Padding(b)
            | Self::Unknown { value: b, .. } => {
                put_tlv_header(out, ty, b.len());
                out.extend_from_slice(b);
            }
            Self::Ipv4Address(a) => {
                put_tlv_header(out, ty, 4);
                out.extend_from_slice(&a.octets());
            }
            Self::Ipv6Address(a) => {
                put_tlv_header(out, ty, 16);
                out.extend_from_slice(&a.octets());
            }
            Self::CookiePreservative(v)
            | Self::SsnTsnResetRequest { request_seq: v }
            | Self::SuccessIndication { correlation_id: v }
            | Self::AdaptationLayerIndication(v) => {
                put_tlv_header(out, ty, 4);
                put_u32(out, *v);
            }
            Self::SupportedAddressTypes(list) => {
                put_tlv_header(out, ty, 2 * list.len());
                list.iter().for_each(|v| put_u16(out, *v));
            }
            Self::OutgoingSsnResetRequest {
                request_seq,
                response_seq,
                last_tsn,
                streams,
            } => {
                put_tlv_header(out, ty, 12 + 2 * streams.len());
                put_u32(out, *request_seq);
                put_u32(out, *response_seq);
                put_u32(out, *last_tsn);
                streams.iter().for_each(|v| put_u16(out, *v));
            }
            Self::IncomingSsnResetRequest {
                request_seq,
                streams,
            } => {
                put_tlv_header(out, ty, 4 + 2 * streams.len());
                put_u32(out, *request_seq);
                streams.iter().for_each(|v| put_u16(out, *v));
            }
            Self::ReconfigResponse {
                response_seq,
                result,
                next_tsns,
            } => {
                put_tlv_header(out, ty, if next_tsns.is_some() { 16 } else { 8 });
                put_u32(out, *response_seq);
                put_u32(out, *result);
                if let Some((s, r)) = next_tsns {
                    put_u32(out, *s);
                    put_u32(out, *r);
                }
            }
            Self::AddOutgoingStreams {
                request_seq,
                new_streams,
            }
            | Self::AddIncomingStreams {
                request_seq,
                new_streams,
            } => {
                put_tlv_header(out, ty, 8);
                put_u32(out, *request_seq);
                put_u16(out, *new_streams);
                put_u16(out, 0);
            }
            Self::EcnCapable | Self::ForwardTsnSupported | Self::LoadSharingSupported => {
                put_tlv_header(out, ty, 0)
            }
            Self::EifelSupported {
                timestamp,
                retransmit_bit,
            } => {
                put_tlv_header(out, ty, 4);
                put_u32(
                    out,
                    u32::from(*timestamp) | (u32::from(*retransmit_bit) << 1),
                );
            }
            Self::SupportedExtensions(list) => {
                put_tlv_header(out, ty, list.len());
                out.extend_from_slice(list);
            }
            Self::AddIpAddress {
                correlation_id,
                address,
            }
            | Self::DeleteIpAddress {
                correlation_id,
                address,
            }
            | Self::SetPrimaryAddress {
                correlation_id,
                address,
            } => {
                let alen = if address.is_ipv4() { 4 } else { 16 };
                put_tlv_header(out, ty, 4 + 4 + alen);
                put_u32(out, *correlation_id);
                Self::from_address(*address).encode_unpadded(out);
            }
            Self::ErrorCauseIndication {
                correlation_id,
                causes,
            } => {
                let start = out.len();
                put_tlv_header(out, ty, 0);
                put_u32(out, *correlation_id);
                ErrorCause::encode_list(causes, out);
                patch_tlv_len(out, start);
            }
        }
    }

    /// Appends this parameter as a TLV padded to a multiple of 4 bytes.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        self.encode_unpadded(out);
        put_zeros(out, padding(out.len() - start));
    }
}

/// Overwrites the length field of the TLV that starts at `start` to cover everything after it.
pub(crate) fn patch_tlv_len(out: &mut [u8], start: usize) {
    let len = u16::try_from(out.len() - start).unwrap_or(u16::MAX);
    out[start + 2..start + 4].copy_from_slice(&len.to_be_bytes());
}

/// Decodes TLVs until the reader is empty.
pub(crate) fn decode_list(r: &mut Reader<'_>) -> Result<Vec<Param>> {
    let mut params = Vec::new();
    while r.remaining() > 0 {
        let (ty, value) = r.tlv()?;
        params.push(Param::decode(ty, value)?);
    }
    Ok(params)
}

/// Appends `params` padded between each other but not after the last, whose padding belongs
/// to the enclosing chunk (RFC 9260 §3.2).
pub fn encode_list(params: &[Param], out: &mut Vec<u8>) {
    let mut last_start = None;
    for p in params {
        if let Some(s) = last_start {
            put_zeros(out, padding(out.len() - s));
        }
        last_start = Some(out.len());
        p.encode_unpadded(out);
    }
}

fn address_value(ty: ParamType, value: &Bytes) -> Result<IpAddr> {
    match (ty, value.len()) {
        (ParamType::IPV4_ADDRESS, 4) => Ok(IpAddr::V4(Ipv4Addr::new(
            value[0], value[1], value[2], value[3],
        ))),
        (ParamType::IPV6_ADDRESS, 16) => {
            let mut o = [0u8; 16];
            o.copy_from_slice(value);
            Ok(IpAddr::V6(Ipv6Addr::from(o)))
        }
        (ParamType::IPV4_ADDRESS, len) => Err(DecodeError::BadValueLength {
            what: "IPv4 Address parameter",
            len,
            expected: 4,
        }),
        (ParamType::IPV6_ADDRESS, len) => Err(DecodeError::BadValueLength {
            what: "IPv6 Address parameter",
            len,
            expected: 16,
        }),
        _ => Err(DecodeError::Inconsistent {
            what: "address parameter",
            detail: "expected an IPv4 or IPv6 Address parameter",
        }),
    }
}

fn u16_list(r: &mut Reader<'_>) -> Result<Vec<u16>> {
    if !r.remaining().is_multiple_of(2) {
        return Err(DecodeError::Inconsistent {
            what: "list of 16-bit values",
            detail: "odd length",
        });
    }
    let mut v = Vec::with_capacity(r.remaining() / 2);
    while r.remaining() > 0 {
        v.push(r.u16()?);
    }
    Ok(v)
}

/// Human-readable name of a parameter type, used in error messages.
pub fn param_name(ty: ParamType) -> &'static str {
    match ty {
        ParamType::HEARTBEAT_INFO => "Heartbeat Info parameter",
        ParamType::IPV4_ADDRESS => "IPv4 Address parameter",
        ParamType::IPV6_ADDRESS => "IPv6 Address parameter",
        ParamType::STATE_COOKIE => "State Cookie parameter",
        ParamType::UNRECOGNIZED_PARAMETER => "Unrecognized Parameter parameter",
        ParamType::COOKIE_PRESERVATIVE => "Cookie Preservative parameter",
        ParamType::HOST_NAME_ADDRESS => "Host Name Address parameter",
        ParamType::SUPPORTED_ADDRESS_TYPES => "Supported Address Types parameter",
        ParamType::OUTGOING_SSN_RESET_REQUEST => "Outgoing SSN Reset Request parameter",
        ParamType::INCOMING_SSN_RESET_REQUEST => "Incoming SSN Reset Request parameter",
        ParamType::SSN_TSN_RESET_REQUEST => "SSN/TSN Reset Request parameter",
        ParamType::RECONFIG_RESPONSE => "Re-configuration Response parameter",
        ParamType::ADD_OUTGOING_STREAMS => "Add Outgoing Streams Request parameter",
        ParamType::ADD_INCOMING_STREAMS => "Add Incoming Streams Request parameter",
        ParamType::ECN_CAPABLE => "ECN Capable parameter",
        ParamType::PADDING => "Padding parameter",
        ParamType::SUPPORTED_EXTENSIONS => "Supported Extensions parameter",
        ParamType::LOAD_SHARING_SUPPORTED => "Load-Sharing-Supported parameter",
        ParamType::EIFEL_SUPPORTED => "Eifel-Supported parameter",
        ParamType::FORWARD_TSN_SUPPORTED => "Forward-TSN-Supported parameter",
        ParamType::ADD_IP_ADDRESS => "Add IP Address parameter",
        ParamType::DELETE_IP_ADDRESS => "Delete IP Address parameter",
        ParamType::ERROR_CAUSE_INDICATION => "Error Cause Indication parameter",
        ParamType::SET_PRIMARY_ADDRESS => "Set Primary Address parameter",
        ParamType::SUCCESS_INDICATION => "Success Indication parameter",
        ParamType::ADAPTATION_LAYER_INDICATION => "Adaptation Layer Indication parameter",
        _ => "unknown parameter",
    }
}
