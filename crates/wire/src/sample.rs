//! Sample packets: one per chunk type braid speaks, with every parameter and error cause
//! type used at least once. They feed the CLI demo, the Wireshark cross-check and benches.
//!
//! The LS-SCTP chunks ([`LsData`], [`LsSack`], [`LsForwardPsn`]) are not [`Chunk`]
//! variants: their samples are [`Chunk::Unknown`] chunks framed with
//! [`RawChunk::try_from_body`], as braid's core sends them.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use bytes::Bytes;

use crate::cause::{CauseCode, ErrorCause};
use crate::chunk::*;
use crate::packet::Packet;
use crate::param::{Param, ParamType};

const PORT_A: u16 = 5001;
const PORT_B: u16 = 5002;
const TAG: u32 = 0x1234_5678;

fn packet(chunk: impl Into<Chunk>) -> Packet {
    Packet {
        src_port: PORT_A,
        dst_port: PORT_B,
        verification_tag: TAG,
        chunks: vec![chunk.into()],
    }
}

fn b(s: &'static [u8]) -> Bytes {
    Bytes::from_static(s)
}

/// An LS-SCTP chunk framed for sending (its values are in range).
fn ls<T: ChunkBody>(c: &T) -> RawChunk {
    RawChunk::try_from_body(c).expect("sample LS-SCTP chunk in range")
}

/// An ASCONF request parameter as the TLV an RFC 5061 refusal cause carries.
fn asconf_request(p: Param) -> Bytes {
    let mut v = Vec::new();
    p.encode_unpadded(&mut v);
    Bytes::from(v)
}

/// Every error cause type of RFC 9260 (and 14) braid knows, once; the RFC 5061 ones
/// (0xA0-0xA4) are in the ASCONF-ACK and ABORT samples.
pub fn all_causes() -> Vec<ErrorCause> {
    let v4 = crate::param::Param::Ipv4Address(Ipv4Addr::new(192, 0, 2, 7));
    let mut addr = Vec::new();
    v4.encode(&mut addr);
    vec![
        ErrorCause::InvalidStreamIdentifier { stream_id: 7 },
        ErrorCause::MissingMandatoryParameter {
            param_types: vec![7, 9],
        },
        ErrorCause::StaleCookie {
            staleness_us: 1_500_000,
        },
        ErrorCause::OutOfResource,
        ErrorCause::UnresolvableAddress(Bytes::from(addr.clone())),
        ErrorCause::UnrecognizedChunkType(b(&[0x7f, 0x00, 0x00, 0x08, 1, 2, 3, 4])),
        ErrorCause::InvalidMandatoryParameter,
        ErrorCause::UnrecognizedParameters(b(&[0x80, 0x77, 0x00, 0x04])),
        ErrorCause::NoUserData { tsn: 4242 },
        ErrorCause::CookieWhileShuttingDown,
        ErrorCause::RestartWithNewAddresses(Bytes::from(addr)),
        ErrorCause::UserInitiatedAbort(b(b"bye")),
        ErrorCause::ProtocolViolation(b(b"bad gap block")),
        ErrorCause::RestartWithNewEncapsulationPort {
            current_port: 9899,
            new_port: 40000,
        },
        ErrorCause::Unknown {
            code: CauseCode(0x4321),
            info: b(&[1, 2, 3]),
        },
    ]
}

/// The sample packets, each with a short label.
pub fn every_chunk_type() -> Vec<(&'static str, Packet)> {
    let v6 = Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
    vec![
        (
            "DATA",
            packet(Data {
                tsn: 1000,
                stream_id: 3,
                ssn: 17,
                ppid: 51,
                unordered: true,
                beginning: true,
                ending: false,
                immediate: true,
                user_data: b(b"hello, braid!"),
            }),
        ),
        (
            "INIT",
            Packet {
                verification_tag: 0,
                ..packet(Init {
                    initiate_tag: 0xcafe_f00d,
                    a_rwnd: 131_072,
                    outbound_streams: 10,
                    inbound_streams: 2048,
                    initial_tsn: 77,
                    params: vec![
                        Param::Ipv4Address(Ipv4Addr::new(192, 0, 2, 1)),
                        Param::Ipv6Address(v6),
                        Param::CookiePreservative(5000),
                        Param::HostNameAddress(b(b"example.org\0")),
                        Param::SupportedAddressTypes(vec![5, 6]),
                        Param::EcnCapable,
                        Param::SupportedExtensions(vec![0x10, 0x40, 0x82, 0xc0, 0xc1, 0x80, 0xc2]),
                        Param::ForwardTsnSupported,
                        Param::LoadSharingSupported,
                        Param::EifelSupported {
                            timestamp: true,
                            retransmit_bit: true,
                        },
                        Param::AdaptationLayerIndication(0x0102_0304),
                        Param::Padding(Bytes::from(vec![0; 6])),
                        Param::Unknown {
                            param_type: ParamType(0xbeef),
                            value: b(&[9, 9]),
                        },
                    ],
                })
            },
        ),
        (
            "INIT-ACK",
            packet(InitAck {
                initiate_tag: 0x0bad_cafe,
                a_rwnd: 65_536,
                outbound_streams: 4,
                inbound_streams: 4,
                initial_tsn: 99,
                params: vec![
                    Param::StateCookie(b(b"signed-cookie-bytes")),
                    Param::Ipv4Address(Ipv4Addr::new(192, 0, 2, 2)),
                    Param::UnrecognizedParameter(b(&[0xbe, 0xef, 0x00, 0x06, 9, 9, 0, 0])),
                ],
            }),
        ),
        (
            "SACK",
            packet(Sack {
                cum_tsn_ack: 1000,
                a_rwnd: 50_000,
                gap_blocks: vec![
                    GapAckBlock { start: 2, end: 3 },
                    GapAckBlock { start: 6, end: 9 },
                ],
                dup_tsns: vec![998, 999],
            }),
        ),
        (
            "HEARTBEAT",
            packet(Heartbeat::with_info(b(b"nonce+timestamp"))),
        ),
        (
            "HEARTBEAT-ACK",
            packet(HeartbeatAck::with_info(b(b"nonce+timestamp"))),
        ),
        (
            "ABORT",
            packet(Abort {
                t_bit: true,
                causes: all_causes(),
            }),
        ),
        (
            "ABORT (T=0, 0xA3)",
            packet(Abort {
                t_bit: false,
                causes: vec![ErrorCause::IllegalAsconfAck],
            }),
        ),
        ("SHUTDOWN", packet(Shutdown { cum_tsn_ack: 1234 })),
        ("SHUTDOWN-ACK", packet(ShutdownAck)),
        (
            "ERROR",
            packet(ErrorChunk {
                causes: all_causes(),
            }),
        ),
        (
            "COOKIE-ECHO",
            packet(CookieEcho {
                cookie: b(b"signed-cookie-bytes"),
            }),
        ),
        ("COOKIE-ACK", packet(CookieAck)),
        ("ECNE", packet(Ecne { lowest_tsn: 555 })),
        ("CWR", packet(Cwr { lowest_tsn: 555 })),
        (
            "SHUTDOWN-COMPLETE",
            packet(ShutdownComplete { t_bit: true }),
        ),
        (
            "NR-SACK",
            packet(NrSack {
                cum_tsn_ack: 2000,
                a_rwnd: 40_000,
                gap_blocks: vec![GapAckBlock { start: 2, end: 2 }],
                nr_gap_blocks: vec![
                    GapAckBlock { start: 4, end: 5 },
                    GapAckBlock { start: 8, end: 8 },
                ],
                dup_tsns: vec![1999],
            }),
        ),
        (
            "I-DATA",
            packet(IData {
                tsn: 3000,
                stream_id: 5,
                mid: 123_456,
                ppid: 0,
                fsn: 2,
                unordered: false,
                beginning: false,
                ending: true,
                immediate: false,
                user_data: b(b"interleaved fragment"),
            }),
        ),
        (
            "I-DATA (first fragment)",
            packet(IData {
                tsn: 3001,
                stream_id: 6,
                mid: 123_457,
                ppid: 53,
                fsn: 0,
                unordered: true,
                beginning: true,
                ending: false,
                immediate: true,
                user_data: b(b"first fragment"),
            }),
        ),
        (
            "ASCONF-ACK",
            packet(AsconfAck {
                serial: 8,
                params: vec![
                    Param::SuccessIndication { correlation_id: 1 },
                    Param::ErrorCauseIndication {
                        correlation_id: 2,
                        causes: vec![ErrorCause::DeleteLastRemainingAddress(b(&[
                            0xc0, 0x02, 0x00, 0x10, 0, 0, 0, 2, 0, 5, 0, 8, 192, 0, 2, 9,
                        ]))],
                    },
                ],
            }),
        ),
        (
            "ASCONF-ACK (refused)",
            packet(AsconfAck {
                serial: 9,
                params: vec![
                    Param::ErrorCauseIndication {
                        correlation_id: 4,
                        causes: vec![ErrorCause::ResourceShortage(asconf_request(
                            Param::AddIpAddress {
                                correlation_id: 4,
                                address: IpAddr::V6(v6),
                            },
                        ))],
                    },
                    Param::ErrorCauseIndication {
                        correlation_id: 5,
                        causes: vec![ErrorCause::DeleteSourceAddress(asconf_request(
                            Param::DeleteIpAddress {
                                correlation_id: 5,
                                address: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
                            },
                        ))],
                    },
                    Param::ErrorCauseIndication {
                        correlation_id: 6,
                        causes: vec![ErrorCause::NoAuthorization(asconf_request(
                            Param::SetPrimaryAddress {
                                correlation_id: 6,
                                address: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 9)),
                            },
                        ))],
                    },
                ],
            }),
        ),
        (
            "RE-CONFIG",
            packet(ReConfig {
                params: vec![
                    Param::OutgoingSsnResetRequest {
                        request_seq: 10,
                        response_seq: 9,
                        last_tsn: 4000,
                        streams: vec![1, 2, 3],
                    },
                    Param::IncomingSsnResetRequest {
                        request_seq: 11,
                        streams: vec![4],
                    },
                ],
            }),
        ),
        (
            "RE-CONFIG (responses)",
            packet(ReConfig {
                params: vec![
                    Param::ReconfigResponse {
                        response_seq: 10,
                        result: 1,
                        next_tsns: Some((5000, 6000)),
                    },
                    Param::SsnTsnResetRequest { request_seq: 12 },
                ],
            }),
        ),
        (
            "RE-CONFIG (add streams)",
            packet(ReConfig {
                params: vec![
                    Param::AddOutgoingStreams {
                        request_seq: 13,
                        new_streams: 8,
                    },
                    Param::AddIncomingStreams {
                        request_seq: 14,
                        new_streams: 2,
                    },
                ],
            }),
        ),
        ("PAD", packet(Pad::with_total_len(64))),
        (
            "FORWARD-TSN",
            packet(ForwardTsn {
                new_cum_tsn: 7000,
                streams: vec![
                    ForwardTsnStream {
                        stream_id: 1,
                        ssn: 10,
                    },
                    ForwardTsnStream {
                        stream_id: 2,
                        ssn: 20,
                    },
                ],
            }),
        ),
        (
            "ASCONF",
            packet(Asconf {
                serial: 8,
                address: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 1)),
                params: vec![
                    Param::AddIpAddress {
                        correlation_id: 1,
                        address: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 9)),
                    },
                    Param::DeleteIpAddress {
                        correlation_id: 2,
                        address: IpAddr::V6(v6),
                    },
                    Param::SetPrimaryAddress {
                        correlation_id: 3,
                        address: IpAddr::V4(Ipv4Addr::new(192, 0, 2, 9)),
                    },
                ],
            }),
        ),
        (
            "I-FORWARD-TSN",
            packet(IForwardTsn {
                new_cum_tsn: 8000,
                streams: vec![
                    IForwardTsnStream {
                        stream_id: 1,
                        unordered: false,
                        mid: 100,
                    },
                    IForwardTsnStream {
                        stream_id: 2,
                        unordered: true,
                        mid: 200,
                    },
                ],
            }),
        ),
        (
            "LS-DATA (0xB0)",
            packet(ls(&LsData {
                asn: 9000,
                pid: 3,
                psn: 4095,
                stream_id: 2,
                ssn: 8,
                ppid: 51,
                unordered: false,
                beginning: true,
                ending: true,
                immediate: false,
                user_data: b(b"load-shared message"),
            })),
        ),
        (
            "LS-SACK (0xB1)",
            packet(ls(&LsSack {
                pid: 3,
                cum_asn: 8999,
                a_rwnd: 60_000,
                timestamp: 0x0001_e240,
                cum_psn: 4090,
                gap_blocks: vec![GapAckBlock { start: 2, end: 4 }],
                dup_psns: vec![4089],
            })),
        ),
        (
            "LS-FORWARD-PSN (0xB2)",
            packet(ls(&LsForwardPsn {
                entries: vec![(0, 17), (3, 4095)],
            })),
        ),
        (
            "unknown chunk (0xBF)",
            packet(RawChunk {
                chunk_type: ChunkType(0xbf),
                flags: 0x5a,
                value: b(&[1, 2, 3, 4, 5]),
            }),
        ),
    ]
}

/// A 1500-byte IPv4 packet's worth of SCTP: one DATA chunk with 1452 bytes of user data
/// (20 IP + 12 common header + 16 DATA header + 1452 = 1500).
pub fn full_data_packet() -> Packet {
    packet(Data {
        tsn: 1,
        stream_id: 0,
        ssn: 0,
        ppid: 0,
        beginning: true,
        ending: true,
        user_data: Bytes::from(vec![0xa5; 1452]),
        ..Default::default()
    })
}

/// A SACK with `n` gap blocks and no duplicates.
pub fn sack_with_gaps(n: u16) -> Packet {
    packet(Sack {
        cum_tsn_ack: 1,
        a_rwnd: 1 << 20,
        gap_blocks: (0..n)
            .map(|i| GapAckBlock {
                start: 2 + 3 * i,
                end: 3 + 3 * i,
            })
            .collect(),
        dup_tsns: vec![],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_sample_round_trips_byte_exact() {
        for (label, pkt) in every_chunk_type() {
            let wire = Bytes::from(pkt.to_vec().unwrap());
            let back = Packet::decode(&wire).unwrap_or_else(|e| panic!("{label}: {e}"));
            assert_eq!(back, pkt, "{label}");
            assert_eq!(back.to_vec().unwrap(), wire.to_vec(), "{label}");
        }
    }

    #[test]
    fn first_data_tsn_finds_data_behind_control_chunks_and_nothing_else() {
        use crate::packet::first_data_tsn;
        let mut data = full_data_packet();
        if let Some(Chunk::Data(d)) = data.chunks.first_mut() {
            d.tsn = 0xdead_beef;
        }
        let wire = data.to_vec().unwrap();
        assert_eq!(first_data_tsn(&wire), Some(0xdead_beef));
        // A SACK bundled before the DATA (RFC 9260 §6.10) is skipped.
        let mut both = sack_with_gaps(3);
        both.chunks.extend(data.chunks);
        assert_eq!(first_data_tsn(&both.to_vec().unwrap()), Some(0xdead_beef));
        assert_eq!(first_data_tsn(&sack_with_gaps(3).to_vec().unwrap()), None);
        // Truncated or malformed framing: no hint, no panic.
        assert_eq!(first_data_tsn(&wire[..14]), None);
        for n in 0..wire.len().min(40) {
            let _ = first_data_tsn(&wire[..n]);
        }
        let mut zero_len = wire.clone();
        zero_len[12..16].copy_from_slice(&[3, 0, 0, 0]);
        assert_eq!(first_data_tsn(&zero_len), None);
    }

    #[test]
    fn full_data_packet_is_1480_bytes_of_sctp() {
        assert_eq!(full_data_packet().to_vec().unwrap().len(), 1500 - 20);
    }
}
