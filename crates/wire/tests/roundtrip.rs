//! Property tests of the codec as a whole: every well-formed packet survives
//! encode → decode → encode byte for byte, and no input whatsoever makes the decoder panic.
//!
//! # Case count
//!
//! Every property runs `BRAID_PROPTEST_CASES` cases (default 512), so CI can run a bounded
//! smoke test and a developer a long one:
//!
//! ```text
//! cargo test -p braid-wire --release --test roundtrip                              # 512
//! BRAID_PROPTEST_CASES=20000 cargo test -p braid-wire --release --test roundtrip   # long run
//! ```
//!
//! (proptest's own `PROPTEST_*` variables still apply to everything else, e.g.
//! `PROPTEST_MAX_SHRINK_ITERS`.) A failing case is saved under `proptest-regressions/` and
//! replayed first on the next run.
//!
//! # What the generators respect
//!
//! The strategies build *well-formed* packets, i.e. the codec's canonical forms:
//! I-DATA with the B bit has `fsn == 0`, without it `ppid == 0` (RFC 8260 §2.1: the fourth
//! word is one or the other); an ASCONF address is IPv4 or IPv6 (RFC 5061 §4.1.1);
//! `Unknown` chunk types, parameter types and cause codes are drawn from outside the sets
//! the codec decodes (otherwise they would come back typed); each chunk stays below 65535
//! bytes (RFC 9260 §3.2: 16-bit Chunk Length) and the packet below 64 KiB.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use braid_wire::chunk::*;
use braid_wire::packet::write_checksum;
use braid_wire::{
    CauseCode, CommonHeader, DecodeError, EncodeError, ErrorCause, Packet, Param, ParamType,
    raw_chunks, verify_checksum,
};
use bytes::Bytes;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{Index, select};
use proptest::strategy::{Union, ValueTree};
use proptest::test_runner::TestRunner;

fn cases() -> u32 {
    std::env::var("BRAID_PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(512)
}

// ---------------------------------------------------------------------------------------
// The sets of codes the codec decodes into typed values.
// ---------------------------------------------------------------------------------------

/// Chunk types with a typed [`Chunk`] variant (RFC 9260 §3.2 and the extensions).
const DECODED_CHUNK_TYPES: [u8; 23] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,   // RFC 9260 (15 = AUTH stays raw)
    0x10, // NR-SACK
    0x40, // I-DATA
    0x80, 0x82, 0x84, // ASCONF-ACK, RE-CONFIG, PAD
    0xc0, 0xc1, 0xc2, // FORWARD-TSN, ASCONF, I-FORWARD-TSN
];

/// Parameter types with a typed [`Param`] variant.
const DECODED_PARAM_TYPES: [u16; 26] = [
    1, 5, 6, 7, 8, 9, 11, 12, // RFC 9260 §3.3.2.1, §3.3.3.1, §3.3.5
    13, 14, 15, 16, 17, 18, // RFC 6525 §4
    0x8000, 0x8005, 0x8008, // ECN Capable, Padding, Supported Extensions
    0x80b0, 0x80b1, // Load-Sharing- and Eifel-Supported: braid's codes
    0xc000, 0xc001, 0xc002, 0xc003, 0xc004, 0xc005, 0xc006, // RFC 3758, RFC 5061
];

/// Error cause codes with a typed [`ErrorCause`] variant.
const DECODED_CAUSE_CODES: [u16; 19] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, // RFC 9260 §3.3.10 (+ 14)
    0xa0, 0xa1, 0xa2, 0xa3, 0xa4, // RFC 5061 §5.1
];

/// Whether the codec decodes `t` into a typed chunk (asked of the codec itself).
fn is_decoded_chunk_type(t: u8) -> bool {
    let raw = RawChunk {
        chunk_type: ChunkType(t),
        flags: 0,
        value: Bytes::new(),
    };
    !matches!(Chunk::decode(raw), Ok(Chunk::Unknown(_)))
}

fn is_decoded_param_type(t: u16) -> bool {
    !matches!(Param::decode(t, Bytes::new()), Ok(Param::Unknown { .. }))
}

fn is_decoded_cause_code(c: u16) -> bool {
    !matches!(
        ErrorCause::decode(c, Bytes::new()),
        Ok(ErrorCause::Unknown { .. })
    )
}

// The generators rely on these sets; pin them so a type silently falling back to
// Unknown (or a new type not yet generated) shows up here.
#[test]
fn decoded_code_sets_are_the_documented_ones() {
    let chunks: Vec<u8> = (0..=u8::MAX)
        .filter(|t| is_decoded_chunk_type(*t))
        .collect();
    assert_eq!(chunks, DECODED_CHUNK_TYPES);
    let params: Vec<u16> = (0..=u16::MAX)
        .filter(|t| is_decoded_param_type(*t))
        .collect();
    assert_eq!(params, DECODED_PARAM_TYPES);
    let causes: Vec<u16> = (0..=u16::MAX)
        .filter(|c| is_decoded_cause_code(*c))
        .collect();
    assert_eq!(causes, DECODED_CAUSE_CODES);
}

// ---------------------------------------------------------------------------------------
// Strategies for well-formed values.
// ---------------------------------------------------------------------------------------

/// Opaque bytes: usually short, sometimes up to 1 KiB, any content.
fn bytes() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        4 => vec(any::<u8>(), 0..=64),
        1 => vec(any::<u8>(), 0..=1024),
    ]
    .prop_map(Bytes::from)
}

fn ip() -> impl Strategy<Value = IpAddr> {
    prop_oneof![
        any::<[u8; 4]>().prop_map(|o| IpAddr::V4(Ipv4Addr::from(o))),
        any::<[u8; 16]>().prop_map(|o| IpAddr::V6(Ipv6Addr::from(o))),
    ]
}

fn u16s() -> impl Strategy<Value = Vec<u16>> {
    vec(any::<u16>(), 0..=32)
}

/// Every [`ErrorCause`] variant, arbitrary fields (RFC 9260 §3.3.10, RFC 5061 §5.1).
fn cause() -> BoxedStrategy<ErrorCause> {
    use ErrorCause as C;
    Union::new(vec![
        any::<u16>()
            .prop_map(|stream_id| C::InvalidStreamIdentifier { stream_id })
            .boxed(),
        u16s()
            .prop_map(|param_types| C::MissingMandatoryParameter { param_types })
            .boxed(),
        any::<u32>()
            .prop_map(|staleness_us| C::StaleCookie { staleness_us })
            .boxed(),
        Just(C::OutOfResource).boxed(),
        bytes().prop_map(C::UnresolvableAddress).boxed(),
        bytes().prop_map(C::UnrecognizedChunkType).boxed(),
        Just(C::InvalidMandatoryParameter).boxed(),
        bytes().prop_map(C::UnrecognizedParameters).boxed(),
        any::<u32>().prop_map(|tsn| C::NoUserData { tsn }).boxed(),
        Just(C::CookieWhileShuttingDown).boxed(),
        bytes().prop_map(C::RestartWithNewAddresses).boxed(),
        bytes().prop_map(C::UserInitiatedAbort).boxed(),
        bytes().prop_map(C::ProtocolViolation).boxed(),
        (any::<u16>(), any::<u16>())
            .prop_map(
                |(current_port, new_port)| C::RestartWithNewEncapsulationPort {
                    current_port,
                    new_port,
                },
            )
            .boxed(),
        bytes().prop_map(C::DeleteLastRemainingAddress).boxed(),
        bytes().prop_map(C::ResourceShortage).boxed(),
        bytes().prop_map(C::DeleteSourceAddress).boxed(),
        Just(C::IllegalAsconfAck).boxed(),
        bytes().prop_map(C::NoAuthorization).boxed(),
        (
            any::<u16>().prop_filter("decoded cause code", |c| !is_decoded_cause_code(*c)),
            bytes(),
        )
            .prop_map(|(code, info)| C::Unknown {
                code: CauseCode(code),
                info,
            })
            .boxed(),
    ])
    .boxed()
}

fn causes(max: usize) -> impl Strategy<Value = Vec<ErrorCause>> {
    vec(cause(), 0..=max)
}

/// Every [`Param`] variant, arbitrary fields (RFC 9260 §3.2.1, RFC 5061 §4.2, RFC 6525 §4).
fn param() -> BoxedStrategy<Param> {
    use Param as P;
    Union::new(vec![
        bytes().prop_map(P::HeartbeatInfo).boxed(),
        any::<[u8; 4]>()
            .prop_map(|o| P::Ipv4Address(o.into()))
            .boxed(),
        any::<[u8; 16]>()
            .prop_map(|o| P::Ipv6Address(o.into()))
            .boxed(),
        bytes().prop_map(P::StateCookie).boxed(),
        bytes().prop_map(P::UnrecognizedParameter).boxed(),
        any::<u32>().prop_map(P::CookiePreservative).boxed(),
        bytes().prop_map(P::HostNameAddress).boxed(),
        u16s().prop_map(P::SupportedAddressTypes).boxed(),
        (any::<u32>(), any::<u32>(), any::<u32>(), u16s())
            .prop_map(
                |(request_seq, response_seq, last_tsn, streams)| P::OutgoingSsnResetRequest {
                    request_seq,
                    response_seq,
                    last_tsn,
                    streams,
                },
            )
            .boxed(),
        (any::<u32>(), u16s())
            .prop_map(|(request_seq, streams)| P::IncomingSsnResetRequest {
                request_seq,
                streams,
            })
            .boxed(),
        any::<u32>()
            .prop_map(|request_seq| P::SsnTsnResetRequest { request_seq })
            .boxed(),
        (
            any::<u32>(),
            any::<u32>(),
            proptest::option::of(any::<(u32, u32)>()),
        )
            .prop_map(|(response_seq, result, next_tsns)| P::ReconfigResponse {
                response_seq,
                result,
                next_tsns,
            })
            .boxed(),
        (any::<u32>(), any::<u16>())
            .prop_map(|(request_seq, new_streams)| P::AddOutgoingStreams {
                request_seq,
                new_streams,
            })
            .boxed(),
        (any::<u32>(), any::<u16>())
            .prop_map(|(request_seq, new_streams)| P::AddIncomingStreams {
                request_seq,
                new_streams,
            })
            .boxed(),
        Just(P::EcnCapable).boxed(),
        bytes().prop_map(P::Padding).boxed(),
        vec(any::<u8>(), 0..=32)
            .prop_map(P::SupportedExtensions)
            .boxed(),
        Just(P::ForwardTsnSupported).boxed(),
        Just(P::LoadSharingSupported).boxed(),
        (any::<bool>(), any::<bool>())
            .prop_map(|(timestamp, retransmit_bit)| P::EifelSupported {
                timestamp,
                retransmit_bit,
            })
            .boxed(),
        (any::<u32>(), ip())
            .prop_map(|(correlation_id, address)| P::AddIpAddress {
                correlation_id,
                address,
            })
            .boxed(),
        (any::<u32>(), ip())
            .prop_map(|(correlation_id, address)| P::DeleteIpAddress {
                correlation_id,
                address,
            })
            .boxed(),
        (any::<u32>(), causes(4))
            .prop_map(|(correlation_id, causes)| P::ErrorCauseIndication {
                correlation_id,
                causes,
            })
            .boxed(),
        (any::<u32>(), ip())
            .prop_map(|(correlation_id, address)| P::SetPrimaryAddress {
                correlation_id,
                address,
            })
            .boxed(),
        any::<u32>()
            .prop_map(|correlation_id| P::SuccessIndication { correlation_id })
            .boxed(),
        any::<u32>().prop_map(P::AdaptationLayerIndication).boxed(),
        (
            any::<u16>().prop_filter("decoded parameter type", |t| !is_decoded_param_type(*t)),
            bytes(),
        )
            .prop_map(|(t, value)| P::Unknown {
                param_type: ParamType(t),
                value,
            })
            .boxed(),
    ])
    .boxed()
}

fn params() -> impl Strategy<Value = Vec<Param>> {
    vec(param(), 0..=6)
}

fn gap_blocks() -> impl Strategy<Value = Vec<GapAckBlock>> {
    vec(
        any::<(u16, u16)>().prop_map(|(start, end)| GapAckBlock { start, end }),
        0..=64,
    )
}

fn user_data() -> impl Strategy<Value = Bytes> {
    prop_oneof![
        3 => vec(any::<u8>(), 0..=64),
        1 => vec(any::<u8>(), 0..=2048),
    ]
    .prop_map(Bytes::from)
}

/// Four flag bits: (immediate, unordered, beginning, ending).
fn data_flags() -> impl Strategy<Value = (bool, bool, bool, bool)> {
    any::<(bool, bool, bool, bool)>()
}

fn init<const ACK: bool>() -> impl Strategy<Value = InitChunk<ACK>> {
    (
        any::<u32>(),
        any::<u32>(),
        any::<u16>(),
        any::<u16>(),
        any::<u32>(),
        params(),
    )
        .prop_map(
            |(initiate_tag, a_rwnd, outbound_streams, inbound_streams, initial_tsn, params)| {
                InitChunk {
                    initiate_tag,
                    a_rwnd,
                    outbound_streams,
                    inbound_streams,
                    initial_tsn,
                    params,
                }
            },
        )
}

/// Every [`Chunk`] variant, arbitrary fields.
fn chunk() -> BoxedStrategy<Chunk> {
    Union::new(vec![
        // RFC 9260 §3.3.1 (I bit: RFC 7053).
        (
            any::<u32>(),
            any::<u16>(),
            any::<u16>(),
            any::<u32>(),
            data_flags(),
            user_data(),
        )
            .prop_map(|(tsn, stream_id, ssn, ppid, (i, u, b, e), user_data)| {
                Chunk::Data(Data {
                    tsn,
                    stream_id,
                    ssn,
                    ppid,
                    unordered: u,
                    beginning: b,
                    ending: e,
                    immediate: i,
                    user_data,
                })
            })
            .boxed(),
        init::<false>().prop_map(Chunk::Init).boxed(),
        init::<true>().prop_map(Chunk::InitAck).boxed(),
        (
            any::<u32>(),
            any::<u32>(),
            gap_blocks(),
            vec(any::<u32>(), 0..=64),
        )
            .prop_map(|(cum_tsn_ack, a_rwnd, gap_blocks, dup_tsns)| {
                Chunk::Sack(Sack {
                    cum_tsn_ack,
                    a_rwnd,
                    gap_blocks,
                    dup_tsns,
                })
            })
            .boxed(),
        vec(param(), 0..=3)
            .prop_map(|params| Chunk::Heartbeat(HeartbeatChunk { params }))
            .boxed(),
        vec(param(), 0..=3)
            .prop_map(|params| Chunk::HeartbeatAck(HeartbeatChunk { params }))
            .boxed(),
        (any::<bool>(), causes(6))
            .prop_map(|(t_bit, causes)| Chunk::Abort(Abort { t_bit, causes }))
            .boxed(),
        any::<u32>()
            .prop_map(|cum_tsn_ack| Chunk::Shutdown(Shutdown { cum_tsn_ack }))
            .boxed(),
        Just(Chunk::ShutdownAck(ShutdownAck)).boxed(),
        causes(6)
            .prop_map(|causes| Chunk::Error(ErrorChunk { causes }))
            .boxed(),
        bytes()
            .prop_map(|cookie| Chunk::CookieEcho(CookieEcho { cookie }))
            .boxed(),
        Just(Chunk::CookieAck(CookieAck)).boxed(),
        any::<u32>()
            .prop_map(|lowest_tsn| Chunk::Ecne(Ecne { lowest_tsn }))
            .boxed(),
        any::<u32>()
            .prop_map(|lowest_tsn| Chunk::Cwr(Cwr { lowest_tsn }))
            .boxed(),
        any::<bool>()
            .prop_map(|t_bit| Chunk::ShutdownComplete(ShutdownComplete { t_bit }))
            .boxed(),
        (
            any::<u32>(),
            any::<u32>(),
            gap_blocks(),
            gap_blocks(),
            vec(any::<u32>(), 0..=64),
        )
            .prop_map(
                |(cum_tsn_ack, a_rwnd, gap_blocks, nr_gap_blocks, dup_tsns)| {
                    Chunk::NrSack(NrSack {
                        cum_tsn_ack,
                        a_rwnd,
                        gap_blocks,
                        nr_gap_blocks,
                        dup_tsns,
                    })
                },
            )
            .boxed(),
        // RFC 8260 §2.1: the fourth word is the PPID when B is set, else the FSN.
        (
            any::<u32>(),
            any::<u16>(),
            any::<u32>(),
            any::<u32>(),
            data_flags(),
            user_data(),
        )
            .prop_map(|(tsn, stream_id, mid, word, (i, u, b, e), user_data)| {
                Chunk::IData(IData {
                    tsn,
                    stream_id,
                    mid,
                    ppid: if b { word } else { 0 },
                    fsn: if b { 0 } else { word },
                    unordered: u,
                    beginning: b,
                    ending: e,
                    immediate: i,
                    user_data,
                })
            })
            .boxed(),
        (any::<u32>(), params())
            .prop_map(|(serial, params)| Chunk::AsconfAck(AsconfAck { serial, params }))
            .boxed(),
        vec(param(), 0..=3)
            .prop_map(|params| Chunk::ReConfig(ReConfig { params }))
            .boxed(),
        bytes()
            .prop_map(|padding| Chunk::Pad(Pad { padding }))
            .boxed(),
        (
            any::<u32>(),
            vec(
                any::<(u16, u16)>()
                    .prop_map(|(stream_id, ssn)| ForwardTsnStream { stream_id, ssn }),
                0..=64,
            ),
        )
            .prop_map(|(new_cum_tsn, streams)| {
                Chunk::ForwardTsn(ForwardTsn {
                    new_cum_tsn,
                    streams,
                })
            })
            .boxed(),
        // RFC 5061 §4.1.1: the first parameter is an IPv4 or IPv6 address.
        (any::<u32>(), ip(), params())
            .prop_map(|(serial, address, params)| {
                Chunk::Asconf(Asconf {
                    serial,
                    address,
                    params,
                })
            })
            .boxed(),
        (
            any::<u32>(),
            vec(
                any::<(u16, bool, u32)>().prop_map(|(stream_id, unordered, mid)| {
                    IForwardTsnStream {
                        stream_id,
                        unordered,
                        mid,
                    }
                }),
                0..=64,
            ),
        )
            .prop_map(|(new_cum_tsn, streams)| {
                Chunk::IForwardTsn(IForwardTsn {
                    new_cum_tsn,
                    streams,
                })
            })
            .boxed(),
        // RFC 9260 §3.2: any other type is kept raw, flags and value intact.
        (
            any::<u8>().prop_filter("decoded chunk type", |t| !is_decoded_chunk_type(*t)),
            any::<u8>(),
            bytes(),
        )
            .prop_map(|(t, flags, value)| {
                Chunk::Unknown(RawChunk {
                    chunk_type: ChunkType(t),
                    flags,
                    value,
                })
            })
            .boxed(),
    ])
    .boxed()
}

/// Room for chunks in a packet kept under 64 KiB.
const MAX_PACKET: usize = 64 * 1024 - 1;

fn encoded_len(c: &Chunk) -> usize {
    let mut v = Vec::new();
    c.encode(&mut v)
        .expect("generated chunks stay below 65535 bytes");
    v.len()
}

/// A well-formed packet of up to 8 chunks, trimmed to stay under 64 KiB.
fn packet() -> impl Strategy<Value = Packet> {
    (
        any::<u16>(),
        any::<u16>(),
        any::<u32>(),
        vec(chunk(), 0..=8),
    )
        .prop_map(|(src_port, dst_port, verification_tag, chunks)| {
            let mut total = braid_wire::COMMON_HEADER_LEN;
            let chunks = chunks
                .into_iter()
                .take_while(|c| {
                    total += encoded_len(c);
                    total <= MAX_PACKET
                })
                .collect();
            Packet {
                src_port,
                dst_port,
                verification_tag,
                chunks,
            }
        })
}

// ---------------------------------------------------------------------------------------
// Strategies for almost-well-formed bytes (to reach the decoders deep inside a packet).
// ---------------------------------------------------------------------------------------

/// Random bytes, often of a length that fits a fixed-size field (a multiple of 4).
fn random_value(max: usize) -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        vec(any::<u8>(), 0..=max),
        (0..=max / 4).prop_flat_map(|words| vec(any::<u8>(), words * 4)),
    ]
}

/// A value shaped like the inside of a parameter or cause: random, a correlation ID and an
/// address TLV (RFC 5061 §4.2.1), or a count and that many 16-bit types (RFC 9260 §3.3.10.2).
fn tlv_value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => random_value(40),
        1 => (any::<u32>(), any::<bool>(), any::<[u8; 16]>()).prop_map(|(corr, v6, addr)| {
            let (ty, len): (u16, usize) = if v6 { (6, 16) } else { (5, 4) };
            let mut v = corr.to_be_bytes().to_vec();
            v.extend_from_slice(&ty.to_be_bytes());
            v.extend_from_slice(&(len as u16 + 4).to_be_bytes());
            v.extend_from_slice(&addr[..len]);
            v
        }),
        1 => (0u32..=6, vec(any::<u16>(), 0..=6)).prop_map(|(n, types)| {
            let mut v = n.to_be_bytes().to_vec();
            types.iter().for_each(|t| v.extend_from_slice(&t.to_be_bytes()));
            v
        }),
    ]
}

/// A run of TLVs framed correctly (length fields true, padding between them) whose types
/// are mostly codes the codec decodes and whose values are random or nearly right: this
/// drives every parameter and cause decoder with garbage values.
fn tlv_soup() -> impl Strategy<Value = Vec<u8>> {
    let code = prop_oneof![
        2 => select(DECODED_PARAM_TYPES.to_vec()),
        2 => select(DECODED_CAUSE_CODES.to_vec()),
        1 => any::<u16>(),
    ];
    vec((code, tlv_value(), any::<bool>()), 0..=5).prop_map(|tlvs| {
        let mut out = Vec::new();
        let n = tlvs.len();
        for (i, (code, value, pad_last)) in tlvs.into_iter().enumerate() {
            out.extend_from_slice(&code.to_be_bytes());
            out.extend_from_slice(&(value.len() as u16 + 4).to_be_bytes());
            out.extend_from_slice(&value);
            if i + 1 < n || pad_last {
                out.resize(out.len() + (4 - value.len() % 4) % 4, 0);
            }
        }
        out
    })
}

/// The value of a chunk of type `ty` with correct framing and random contents: the fixed
/// part its type expects (random), then a TLV soup where the type carries parameters or
/// causes; otherwise random bytes.
fn chunk_value(ty: u8, fixed: [u8; 20], soup: Vec<u8>, random: Vec<u8>, shaped: bool) -> Vec<u8> {
    let fixed_len = match ty {
        1 | 2 => 16,               // INIT, INIT-ACK (RFC 9260 §3.3.2)
        0x80 | 0xc1 => 4,          // ASCONF-ACK, ASCONF serial (RFC 5061 §4.1)
        4 | 5 | 6 | 9 | 0x82 => 0, // HEARTBEAT(-ACK), ABORT, ERROR, RE-CONFIG
        _ => return random,
    };
    if !shaped {
        return random;
    }
    let mut v = fixed[..fixed_len].to_vec();
    if ty == 0xc1 {
        // RFC 5061 §4.1.1: an address parameter comes first.
        v.extend_from_slice(&[0, 5, 0, 8]);
        v.extend_from_slice(&fixed[4..8]);
    }
    v.extend_from_slice(&soup);
    v
}

/// A packet whose chunks are framed correctly (true lengths, padded) with types mostly
/// from the decoded set and values that are random or shaped like the type's value; the
/// checksum is correct.
fn chunk_soup_packet() -> impl Strategy<Value = Vec<u8>> {
    let ty = prop_oneof![
        3 => select(DECODED_CHUNK_TYPES.to_vec()),
        1 => any::<u8>(),
    ];
    let one = (
        ty,
        any::<u8>(),
        any::<[u8; 20]>(),
        tlv_soup(),
        random_value(48),
        prop::bool::weighted(0.8),
    )
        .prop_map(|(ty, flags, fixed, soup, random, shaped)| {
            (ty, flags, chunk_value(ty, fixed, soup, random, shaped))
        });
    (any::<[u8; 12]>(), vec(one, 0..=5)).prop_map(|(header, chunks)| {
        let mut out = header.to_vec();
        for (ty, flags, value) in chunks {
            out.push(ty);
            out.push(flags);
            out.extend_from_slice(&(value.len() as u16 + 4).to_be_bytes());
            out.extend_from_slice(&value);
            out.resize(out.len() + (4 - value.len() % 4) % 4, 0);
        }
        write_checksum(&mut out);
        out
    })
}

/// One byte-level edit of an encoded packet.
#[derive(Debug, Clone)]
enum Edit {
    Set(Index, u8),
    Xor(Index, u8),
    Truncate(Index),
    Insert(Index, u8),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        4 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Set(i, b)),
        4 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Xor(i, b)),
        1 => any::<Index>().prop_map(Edit::Truncate),
        1 => (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Edit::Insert(i, b)),
    ]
}

fn apply(wire: &mut Vec<u8>, e: &Edit) {
    if wire.is_empty() {
        return;
    }
    match e {
        Edit::Set(i, b) => {
            let i = i.index(wire.len());
            wire[i] = *b;
        }
        Edit::Xor(i, b) => {
            let i = i.index(wire.len());
            wire[i] ^= *b;
        }
        Edit::Truncate(i) => wire.truncate(i.index(wire.len())),
        Edit::Insert(i, b) => wire.insert(i.index(wire.len() + 1), *b),
    }
}

// ---------------------------------------------------------------------------------------
// Checks shared by the never-panic properties.
// ---------------------------------------------------------------------------------------

/// Runs every decoding entry point on `wire`; whatever they accept must re-encode to
/// something that decodes to the same value (the encoder's output is a fixpoint).
fn decode_everything(wire: &[u8]) -> Result<(), TestCaseError> {
    let wire = Bytes::copy_from_slice(wire);
    let _ = CommonHeader::peek(&wire);
    let _ = verify_checksum(&wire);
    let raw: Vec<_> = raw_chunks(&wire).collect();
    // The iterator stops after its first error.
    if let Some(pos) = raw.iter().position(Result::is_err) {
        prop_assert_eq!(pos, raw.len() - 1);
    }
    let checked = Packet::decode(&wire);
    let unchecked = Packet::decode_unverified(&wire);
    match &checked {
        Err(DecodeError::BadChecksum { .. }) => {}
        other => prop_assert_eq!(other, &unchecked),
    }
    if let Ok(p) = unchecked {
        prop_assert_eq!(p.chunks.len(), raw.len());
        let again = p
            .to_vec()
            .map_err(|e| TestCaseError::fail(format!("re-encoding a decoded packet: {e}")))?;
        prop_assert!(again.len() <= wire.len(), "canonical form grew");
        prop_assert_eq!(Packet::decode(&Bytes::from(again)), Ok(p));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    // Every well-formed packet decodes to itself and re-encodes to the same bytes.
    #[test]
    fn well_formed_packets_round_trip_byte_exact(p in packet()) {
        let wire = p
            .to_vec()
            .map_err(|e| TestCaseError::fail(format!("encoding: {e}")))?;
        prop_assert!(wire.len() <= MAX_PACKET);
        let wire = Bytes::from(wire);
        let back = Packet::decode(&wire)?;
        prop_assert_eq!(&back, &p);
        prop_assert_eq!(back.to_vec().ok(), Some(wire.to_vec()));
        // Chunk by chunk through the raw iterator, as the core reads packets.
        let raw: Vec<RawChunk> = raw_chunks(&wire).collect::<Result<_, _>>()?;
        prop_assert_eq!(raw.len(), p.chunks.len());
        for (r, c) in raw.into_iter().zip(&p.chunks) {
            prop_assert_eq!(r.chunk_type, c.chunk_type());
            prop_assert_eq!(&Chunk::decode(r)?, c);
        }
    }

    // Random bytes behind a correct checksum: the decoder gets past §6.8 and must still
    // never panic, whatever the chunks look like.
    #[test]
    fn random_bytes_with_a_valid_checksum_never_panic(
        mut wire in vec(any::<u8>(), 12..=2048),
    ) {
        write_checksum(&mut wire);
        let checked = Packet::decode(&Bytes::copy_from_slice(&wire));
        let bad_checksum = matches!(checked, Err(DecodeError::BadChecksum { .. }));
        prop_assert!(!bad_checksum, "write_checksum then decode: {:?}", checked);
        decode_everything(&wire)?;
    }

    // Correct framing, random contents: reaches every chunk, parameter and cause decoder.
    #[test]
    fn framed_random_chunks_never_panic(wire in chunk_soup_packet()) {
        decode_everything(&wire)?;
    }

    // Small edits of well-formed packets (checksum fixed up afterwards) hit the edge
    // cases of each element: lengths off by a little, counts that no longer add up.
    #[test]
    fn edited_well_formed_packets_never_panic(
        p in packet(),
        edits in vec(edit(), 1..=4),
    ) {
        let mut wire = p
            .to_vec()
            .map_err(|e| TestCaseError::fail(format!("encoding: {e}")))?;
        for e in &edits {
            apply(&mut wire, e);
        }
        write_checksum(&mut wire);
        decode_everything(&wire)?;
    }

    // Pure garbage, checksum almost surely wrong: neither the checked nor the unchecked
    // decoder panics.
    #[test]
    fn arbitrary_bytes_never_panic(wire in vec(any::<u8>(), 0..=2048)) {
        decode_everything(&wire)?;
    }
}

// ---------------------------------------------------------------------------------------
// The generators really cover every variant (a new variant fails to compile below until it
// is named, and then fails this test until it is generated).
// ---------------------------------------------------------------------------------------

fn chunk_kind(c: &Chunk) -> &'static str {
    match c {
        Chunk::Data(_) => "Data",
        Chunk::Init(_) => "Init",
        Chunk::InitAck(_) => "InitAck",
        Chunk::Sack(_) => "Sack",
        Chunk::Heartbeat(_) => "Heartbeat",
        Chunk::HeartbeatAck(_) => "HeartbeatAck",
        Chunk::Abort(_) => "Abort",
        Chunk::Shutdown(_) => "Shutdown",
        Chunk::ShutdownAck(_) => "ShutdownAck",
        Chunk::Error(_) => "Error",
        Chunk::CookieEcho(_) => "CookieEcho",
        Chunk::CookieAck(_) => "CookieAck",
        Chunk::Ecne(_) => "Ecne",
        Chunk::Cwr(_) => "Cwr",
        Chunk::ShutdownComplete(_) => "ShutdownComplete",
        Chunk::NrSack(_) => "NrSack",
        Chunk::IData(_) => "IData",
        Chunk::AsconfAck(_) => "AsconfAck",
        Chunk::ReConfig(_) => "ReConfig",
        Chunk::Pad(_) => "Pad",
        Chunk::ForwardTsn(_) => "ForwardTsn",
        Chunk::Asconf(_) => "Asconf",
        Chunk::IForwardTsn(_) => "IForwardTsn",
        Chunk::Unknown(_) => "Unknown",
    }
}
const CHUNK_KINDS: usize = 24;

fn param_kind(p: &Param) -> &'static str {
    match p {
        Param::HeartbeatInfo(_) => "HeartbeatInfo",
        Param::Ipv4Address(_) => "Ipv4Address",
        Param::Ipv6Address(_) => "Ipv6Address",
        Param::StateCookie(_) => "StateCookie",
        Param::UnrecognizedParameter(_) => "UnrecognizedParameter",
        Param::CookiePreservative(_) => "CookiePreservative",
        Param::HostNameAddress(_) => "HostNameAddress",
        Param::SupportedAddressTypes(_) => "SupportedAddressTypes",
        Param::OutgoingSsnResetRequest { .. } => "OutgoingSsnResetRequest",
        Param::IncomingSsnResetRequest { .. } => "IncomingSsnResetRequest",
        Param::SsnTsnResetRequest { .. } => "SsnTsnResetRequest",
        Param::ReconfigResponse {
            next_tsns: Some(_), ..
        } => "ReconfigResponse+next_tsns",
        Param::ReconfigResponse {
            next_tsns: None, ..
        } => "ReconfigResponse",
        Param::AddOutgoingStreams { .. } => "AddOutgoingStreams",
        Param::AddIncomingStreams { .. } => "AddIncomingStreams",
        Param::EcnCapable => "EcnCapable",
        Param::Padding(_) => "Padding",
        Param::SupportedExtensions(_) => "SupportedExtensions",
        Param::ForwardTsnSupported => "ForwardTsnSupported",
        Param::LoadSharingSupported => "LoadSharingSupported",
        Param::EifelSupported { .. } => "EifelSupported",
        Param::AddIpAddress { .. } => "AddIpAddress",
        Param::DeleteIpAddress { .. } => "DeleteIpAddress",
        Param::ErrorCauseIndication { .. } => "ErrorCauseIndication",
        Param::SetPrimaryAddress { .. } => "SetPrimaryAddress",
        Param::SuccessIndication { .. } => "SuccessIndication",
        Param::AdaptationLayerIndication(_) => "AdaptationLayerIndication",
        Param::Unknown { .. } => "Unknown",
    }
}
const PARAM_KINDS: usize = 28;

fn cause_kind(c: &ErrorCause) -> &'static str {
    match c {
        ErrorCause::InvalidStreamIdentifier { .. } => "InvalidStreamIdentifier",
        ErrorCause::MissingMandatoryParameter { .. } => "MissingMandatoryParameter",
        ErrorCause::StaleCookie { .. } => "StaleCookie",
        ErrorCause::OutOfResource => "OutOfResource",
        ErrorCause::UnresolvableAddress(_) => "UnresolvableAddress",
        ErrorCause::UnrecognizedChunkType(_) => "UnrecognizedChunkType",
        ErrorCause::InvalidMandatoryParameter => "InvalidMandatoryParameter",
        ErrorCause::UnrecognizedParameters(_) => "UnrecognizedParameters",
        ErrorCause::NoUserData { .. } => "NoUserData",
        ErrorCause::CookieWhileShuttingDown => "CookieWhileShuttingDown",
        ErrorCause::RestartWithNewAddresses(_) => "RestartWithNewAddresses",
        ErrorCause::UserInitiatedAbort(_) => "UserInitiatedAbort",
        ErrorCause::ProtocolViolation(_) => "ProtocolViolation",
        ErrorCause::RestartWithNewEncapsulationPort { .. } => "RestartWithNewEncapsulationPort",
        ErrorCause::DeleteLastRemainingAddress(_) => "DeleteLastRemainingAddress",
        ErrorCause::ResourceShortage(_) => "ResourceShortage",
        ErrorCause::DeleteSourceAddress(_) => "DeleteSourceAddress",
        ErrorCause::IllegalAsconfAck => "IllegalAsconfAck",
        ErrorCause::NoAuthorization(_) => "NoAuthorization",
        ErrorCause::Unknown { .. } => "Unknown",
    }
}
const CAUSE_KINDS: usize = 20;

fn kinds_seen<T: std::fmt::Debug>(
    strategy: impl Strategy<Value = T>,
    kind: impl Fn(&T) -> &'static str,
) -> BTreeSet<&'static str> {
    let mut runner = TestRunner::deterministic();
    (0..4000)
        .map(|_| {
            let v = strategy
                .new_tree(&mut runner)
                .expect("strategy generates")
                .current();
            kind(&v)
        })
        .collect()
}

#[test]
fn generators_cover_every_chunk_param_and_cause_variant() {
    let chunks = kinds_seen(chunk(), chunk_kind);
    assert_eq!(chunks.len(), CHUNK_KINDS, "chunk kinds seen: {chunks:?}");
    let params = kinds_seen(param(), param_kind);
    assert_eq!(params.len(), PARAM_KINDS, "param kinds seen: {params:?}");
    let causes = kinds_seen(cause(), cause_kind);
    assert_eq!(causes.len(), CAUSE_KINDS, "cause kinds seen: {causes:?}");
}

// ---------------------------------------------------------------------------------------
// The boundary the generators stay inside: RFC 9260 §3.2, Chunk Length is 16 bits.
// ---------------------------------------------------------------------------------------

fn data_of(len: usize) -> Chunk {
    Chunk::Data(Data {
        tsn: 1,
        beginning: true,
        ending: true,
        user_data: Bytes::from(vec![0x5a; len]),
        ..Default::default()
    })
}

#[test]
fn largest_chunk_round_trips_and_one_byte_more_is_refused() {
    // 16 bytes of DATA header + 65519 bytes = a Chunk Length of exactly 65535 (+1 padding).
    let biggest = Packet {
        src_port: 1,
        dst_port: 2,
        verification_tag: 3,
        chunks: vec![data_of(65_535 - DATA_HEADER_LEN)],
    };
    let wire = Bytes::from(biggest.to_vec().expect("65535-byte chunk fits"));
    assert_eq!(wire.len(), 12 + 65_535 + 1);
    assert_eq!(&wire[14..16], &[0xff, 0xff]);
    assert_eq!(Packet::decode(&wire), Ok(biggest));

    let too_big = Packet {
        chunks: vec![data_of(65_536 - DATA_HEADER_LEN)],
        ..Default::default()
    };
    assert_eq!(
        too_big.to_vec(),
        Err(EncodeError::ChunkTooLong {
            chunk: "DATA chunk",
            len: 65_536,
        })
    );
    // Packet::encode leaves the buffer as it was.
    let mut out = vec![1, 2, 3];
    assert!(too_big.encode(&mut out).is_err());
    assert_eq!(out, [1, 2, 3]);
}

// ---------------------------------------------------------------------------------------
// LS-SCTP chunks: not `Chunk` variants, decoded by the core with `RawChunk::decode_as`.
// ---------------------------------------------------------------------------------------

fn ls_data() -> impl Strategy<Value = LsData> {
    (
        any::<u32>(),
        0..=LS_MAX_PID,
        0..=LS_MAX_PSN,
        any::<(u16, u16, u32)>(),
        data_flags(),
        user_data(),
    )
        .prop_map(
            |(asn, pid, psn, (stream_id, ssn, ppid), (i, u, b, e), user_data)| LsData {
                asn,
                pid,
                psn,
                stream_id,
                ssn,
                ppid,
                unordered: u,
                beginning: b,
                ending: e,
                immediate: i,
                user_data,
            },
        )
}

fn ls_sack() -> impl Strategy<Value = LsSack> {
    (
        0..=LS_MAX_PID,
        any::<(u32, u32, u32)>(),
        0..=u32::from(LS_MAX_PSN),
        gap_blocks(),
        vec(0..=u32::from(LS_MAX_PSN), 0..=64),
    )
        .prop_map(
            |(pid, (cum_asn, a_rwnd, timestamp), cum_psn, gap_blocks, dup_psns)| LsSack {
                pid,
                cum_asn,
                a_rwnd,
                timestamp,
                cum_psn,
                gap_blocks,
                dup_psns,
            },
        )
}

fn ls_forward_psn() -> impl Strategy<Value = LsForwardPsn> {
    vec((0..=LS_MAX_PID, 0..=LS_MAX_PSN), 1..=16).prop_map(|entries| LsForwardPsn { entries })
}

/// Frames `c`, puts it in a packet, decodes that as a standard receiver would (the chunk
/// stays `Unknown`, byte for byte) and then with `decode_as`.
fn ls_round_trip<T>(c: &T) -> Result<(), TestCaseError>
where
    T: ChunkBody + Clone + PartialEq + std::fmt::Debug,
{
    let raw = RawChunk::try_from_body(c).map_err(|e| TestCaseError::fail(e.to_string()))?;
    let p = Packet {
        src_port: 1,
        dst_port: 2,
        verification_tag: 3,
        chunks: vec![Chunk::Unknown(raw)],
    };
    let wire = Bytes::from(p.to_vec().map_err(|e| TestCaseError::fail(e.to_string()))?);
    let back = Packet::decode(&wire)?;
    prop_assert_eq!(&back, &p);
    match back.chunks.as_slice() {
        [Chunk::Unknown(r)] => prop_assert_eq!(r.decode_as::<T>(), Some(Ok(c.clone()))),
        other => prop_assert!(false, "not kept raw: {:?}", other),
    }
    Ok(())
}

/// A value for an LS chunk: random bytes, or a valid value cut or extended at random.
fn ls_value() -> impl Strategy<Value = (u8, u8, Vec<u8>)> {
    let valid = prop_oneof![
        ls_data().prop_map(|c| RawChunk::from_body(&c)),
        ls_sack().prop_map(|c| RawChunk::from_body(&c)),
        ls_forward_psn().prop_map(|c| RawChunk::from_body(&c)),
    ];
    prop_oneof![
        (0xb0u8..=0xb2, any::<u8>(), vec(any::<u8>(), 0..=64)),
        (valid, any::<Index>(), vec(any::<u8>(), 0..=8)).prop_map(|(raw, cut, tail)| {
            let mut v = raw.value.to_vec();
            v.truncate(cut.index(v.len() + 1));
            v.extend_from_slice(&tail);
            (raw.chunk_type.0, raw.flags, v)
        }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn ls_chunks_round_trip(d in ls_data(), s in ls_sack(), f in ls_forward_psn()) {
        ls_round_trip(&d)?;
        ls_round_trip(&s)?;
        ls_round_trip(&f)?;
    }

    // Any value decodes to an error or to an in-range chunk that re-encodes and decodes
    // back to itself; nothing panics.
    #[test]
    fn ls_chunk_values_never_panic((ty, flags, value) in ls_value()) {
        let raw = RawChunk { chunk_type: ChunkType(ty), flags, value: Bytes::from(value) };
        prop_assert!(matches!(Chunk::decode(raw.clone()), Ok(Chunk::Unknown(_))));
        fn check<T: ChunkBody + Clone + PartialEq + std::fmt::Debug>(
            raw: &RawChunk,
        ) -> Result<(), TestCaseError> {
            if let Some(Ok(c)) = raw.decode_as::<T>() {
                prop_assert_eq!(c.validate(), Ok(()));
                ls_round_trip(&c)?;
            }
            Ok(())
        }
        check::<LsData>(&raw)?;
        check::<LsSack>(&raw)?;
        check::<LsForwardPsn>(&raw)?;
    }
}
