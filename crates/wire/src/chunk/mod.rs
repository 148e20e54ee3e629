//! Chunks (RFC 9260 §3.2): one module per chunk type, each with its field diagram.
//!
//! Every chunk type implements [`ChunkBody`]: it decodes from its flags and its value (the
//! bytes after the 4-byte chunk header, bounded by the chunk's own length field) and encodes
//! its value back. [`Chunk`] is the enum of the types braid speaks; any other type is kept
//! whole as a [`RawChunk`] in [`Chunk::Unknown`], so the core can apply its high bits
//! (RFC 9260 §3.2) or, for braid's own negotiated extensions, decode it with
//! [`RawChunk::decode_as`] — an extension adds a module implementing [`ChunkBody`] and
//! needs no change to the parser.

mod abort;
mod asconf;
mod cookie;
mod data;
mod ecn;
mod forward_tsn;
mod heartbeat;
mod idata;
mod init;
mod ls;
mod nr_sack;
mod pad;
mod reconfig;
mod sack;
mod shutdown;
mod timestamp;

pub use abort::{Abort, ErrorChunk};
pub use asconf::{Asconf, AsconfAck};
pub use cookie::{CookieAck, CookieEcho};
pub use data::{DATA_HEADER_LEN, Data};
pub use ecn::{Cwr, Ecne};
pub use forward_tsn::{ForwardTsn, ForwardTsnStream, IForwardTsn, IForwardTsnStream};
pub use heartbeat::{Heartbeat, HeartbeatAck, HeartbeatChunk};
pub use idata::{I_DATA_HEADER_LEN, IData};
pub use init::{Init, InitAck, InitChunk};
pub use ls::{LS_DATA_HEADER_LEN, LS_MAX_PID, LS_MAX_PSN, LsData, LsForwardPsn, LsSack};
pub use nr_sack::NrSack;
pub use pad::Pad;
pub use reconfig::ReConfig;
pub use sack::{GapAckBlock, Sack};
pub use shutdown::{Shutdown, ShutdownAck, ShutdownComplete};
pub use timestamp::{DATA_FLAG_RETRANSMIT, SACK_FLAG_RETRANSMIT, TIMESTAMP_CHUNK_LEN, Timestamp};

use bytes::Bytes;

use crate::UnrecognizedAction;
use crate::codec::{padding, put_zeros};
use crate::error::{EncodeError, Result};

/// A chunk type code (8 bits; the two high bits say what to do if it is unknown).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChunkType(pub u8);

impl ChunkType {
    /// DATA (RFC 9260 §3.3.1).
    pub const DATA: Self = Self(0);
    /// INIT (RFC 9260 §3.3.2).
    pub const INIT: Self = Self(1);
    /// INIT-ACK (RFC 9260 §3.3.3).
    pub const INIT_ACK: Self = Self(2);
    /// SACK (RFC 9260 §3.3.4).
    pub const SACK: Self = Self(3);
    /// HEARTBEAT (RFC 9260 §3.3.5).
    pub const HEARTBEAT: Self = Self(4);
    /// HEARTBEAT-ACK (RFC 9260 §3.3.6).
    pub const HEARTBEAT_ACK: Self = Self(5);
    /// ABORT (RFC 9260 §3.3.7).
    pub const ABORT: Self = Self(6);
    /// SHUTDOWN (RFC 9260 §3.3.8).
    pub const SHUTDOWN: Self = Self(7);
    /// SHUTDOWN-ACK (RFC 9260 §3.3.9).
    pub const SHUTDOWN_ACK: Self = Self(8);
    /// ERROR (RFC 9260 §3.3.10).
    pub const ERROR: Self = Self(9);
    /// COOKIE-ECHO (RFC 9260 §3.3.11).
    pub const COOKIE_ECHO: Self = Self(10);
    /// COOKIE-ACK (RFC 9260 §3.3.12).
    pub const COOKIE_ACK: Self = Self(11);
    /// ECNE (RFC 9260 Appendix A).
    pub const ECNE: Self = Self(12);
    /// CWR (RFC 9260 Appendix A).
    pub const CWR: Self = Self(13);
    /// SHUTDOWN-COMPLETE (RFC 9260 §3.3.13).
    pub const SHUTDOWN_COMPLETE: Self = Self(14);
    /// AUTH (RFC 4895); not implemented by braid, listed for naming.
    pub const AUTH: Self = Self(15);
    /// NR-SACK (draft-tuexen-tsvwg-sctp-multipath).
    pub const NR_SACK: Self = Self(0x10);
    /// I-DATA (RFC 8260 §2.1).
    pub const I_DATA: Self = Self(0x40);
    /// ASCONF-ACK (RFC 5061 §4.1.2).
    pub const ASCONF_ACK: Self = Self(0x80);
    /// RE-CONFIG (RFC 6525 §3.1).
    pub const RE_CONFIG: Self = Self(0x82);
    /// PAD (RFC 4820 §3).
    pub const PAD: Self = Self(0x84);
    /// FORWARD-TSN (RFC 3758 §3.2).
    pub const FORWARD_TSN: Self = Self(0xC0);
    /// ASCONF (RFC 5061 §4.1.1).
    pub const ASCONF: Self = Self(0xC1);
    /// I-FORWARD-TSN (RFC 8260 §2.3.1).
    pub const I_FORWARD_TSN: Self = Self(0xC2);
    /// LS-DATA (LS-SCTP; braid's code, see [`LsData`]). Not a [`Chunk`] variant.
    pub const LS_DATA: Self = Self(0xB0);
    /// LS-SACK (LS-SCTP; braid's code, see [`LsSack`]). Not a [`Chunk`] variant.
    pub const LS_SACK: Self = Self(0xB1);
    /// LS-FORWARD-PSN (braid's addition to LS-SCTP, see [`LsForwardPsn`]). Not a [`Chunk`]
    /// variant.
    pub const LS_FORWARD_PSN: Self = Self(0xB2);
    /// TIMESTAMP (braid's code for the Eifel detection, see [`Timestamp`]). Not a [`Chunk`]
    /// variant.
    pub const TIMESTAMP: Self = Self(0xB3);

    /// What RFC 9260 §3.2 says to do with this type if it is not recognized.
    pub const fn unrecognized_action(self) -> UnrecognizedAction {
        UnrecognizedAction::from_high_bits(self.0 >> 6)
    }
}

/// A chunk type's codec: decode from (flags, value), encode the value back.
///
/// `value` is exactly the chunk's value (bounded by its length field, without padding); the
/// chunk header and padding are handled by [`Chunk`] and [`RawChunk`].
pub trait ChunkBody: Sized {
    /// The chunk type code.
    const TYPE: ChunkType;
    /// Name used in error messages.
    const NAME: &'static str;
    /// Decodes the chunk from its flags byte and its value.
    fn decode(flags: u8, value: &Bytes) -> Result<Self>;
    /// The flags byte to send.
    fn flags(&self) -> u8 {
        0
    }
    /// Checks that every field fits its wire encoding. [`encode_value`](Self::encode_value)
    /// cannot fail, so types whose fields are wider than their wire fields (the LS-SCTP
    /// chunks) check them here; [`RawChunk::try_from_body`] calls it. Default: always `Ok`.
    fn validate(&self) -> std::result::Result<(), EncodeError> {
        Ok(())
    }
    /// Appends the value (no header, no trailing padding).
    fn encode_value(&self, out: &mut Vec<u8>);
}

/// A chunk as framed on the wire, value not yet interpreted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawChunk {
    /// Chunk type.
    pub chunk_type: ChunkType,
    /// Flags byte.
    pub flags: u8,
    /// Value, without header and padding.
    pub value: Bytes,
}

impl RawChunk {
    /// Interprets this chunk as `T`; fails if the type differs or the value is malformed.
    pub fn decode_as<T: ChunkBody>(&self) -> Option<Result<T>> {
        (self.chunk_type == T::TYPE).then(|| T::decode(self.flags, &self.value))
    }

    /// Frames an extension chunk for sending, after [`ChunkBody::validate`]: an
    /// out-of-range field is an error rather than a corrupted chunk.
    pub fn try_from_body<T: ChunkBody>(body: &T) -> std::result::Result<Self, EncodeError> {
        body.validate()?;
        Ok(Self::from_body(body))
    }

    /// Frames an extension chunk for sending, without [`ChunkBody::validate`]: for types
    /// that can hold out-of-range fields, prefer [`try_from_body`](Self::try_from_body).
    pub fn from_body<T: ChunkBody>(body: &T) -> Self {
        let mut v = Vec::new();
        body.encode_value(&mut v);
        Self {
            chunk_type: T::TYPE,
            flags: body.flags(),
            value: v.into(),
        }
    }

    /// The chunk as received, header included, padding excluded (for the Unrecognized Chunk
    /// Type error cause, RFC 9260 §3.3.10.6).
    pub fn to_wire(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(4 + self.value.len());
        v.push(self.chunk_type.0);
        v.push(self.flags);
        v.extend_from_slice(
            &u16::try_from(self.value.len() + 4)
                .unwrap_or(u16::MAX)
                .to_be_bytes(),
        );
        v.extend_from_slice(&self.value);
        v
    }
}

macro_rules! chunks {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        /// A decoded chunk.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Chunk {
            $(
                #[doc = concat!("A ", stringify!($variant), " chunk.")]
                $variant($ty),
            )*
            /// A chunk type braid does not decode (or an extension the core decodes itself).
            Unknown(RawChunk),
        }

        impl Chunk {
            /// Decodes a framed chunk into its typed form; unknown types stay raw.
            pub fn decode(raw: RawChunk) -> Result<Self> {
                Ok(match raw.chunk_type {
                    $(<$ty as ChunkBody>::TYPE => {
                        Self::$variant(<$ty as ChunkBody>::decode(raw.flags, &raw.value)?)
                    })*
                    _ => Self::Unknown(raw),
                })
            }

            /// The chunk type code.
            pub fn chunk_type(&self) -> ChunkType {
                match self {
                    $(Self::$variant(_) => <$ty as ChunkBody>::TYPE,)*
                    Self::Unknown(r) => r.chunk_type,
                }
            }

            /// The chunk type's name.
            pub fn name(&self) -> &'static str {
                match self {
                    $(Self::$variant(_) => <$ty as ChunkBody>::NAME,)*
                    Self::Unknown(_) => "unknown chunk",
                }
            }

            fn flags(&self) -> u8 {
                match self {
                    $(Self::$variant(c) => c.flags(),)*
                    Self::Unknown(r) => r.flags,
                }
            }

            fn encode_value(&self, out: &mut Vec<u8>) {
                match self {
                    $(Self::$variant(c) => c.encode_value(out),)*
                    Self::Unknown(r) => out.extend_from_slice(&r.value),
                }
            }
        }

        $(
            impl From<$ty> for Chunk {
                fn from(c: $ty) -> Self {
                    Self::$variant(c)
                }
            }
        )*
    };
}

chunks! {
    Data(Data),
    Init(Init),
    InitAck(InitAck),
    Sack(Sack),
    Heartbeat(Heartbeat),
    HeartbeatAck(HeartbeatAck),
    Abort(Abort),
    Shutdown(Shutdown),
    ShutdownAck(ShutdownAck),
    Error(ErrorChunk),
    CookieEcho(CookieEcho),
    CookieAck(CookieAck),
    Ecne(Ecne),
    Cwr(Cwr),
    ShutdownComplete(ShutdownComplete),
    NrSack(NrSack),
    IData(IData),
    AsconfAck(AsconfAck),
    ReConfig(ReConfig),
    Pad(Pad),
    ForwardTsn(ForwardTsn),
    Asconf(Asconf),
    IForwardTsn(IForwardTsn),
}

impl From<RawChunk> for Chunk {
    fn from(r: RawChunk) -> Self {
        Self::Unknown(r)
    }
}

impl Chunk {
    /// Appends the chunk (header, value, padding to 4 bytes).
    ///
    /// Fails, leaving `out` as it was, if the value does not fit the 16-bit length field.
    pub fn encode(&self, out: &mut Vec<u8>) -> std::result::Result<(), EncodeError> {
        let start = out.len();
        out.extend_from_slice(&[self.chunk_type().0, self.flags(), 0, 0]);
        self.encode_value(out);
        let Ok(len) = u16::try_from(out.len() - start) else {
            let len = out.len() - start;
            out.truncate(start);
            return Err(EncodeError::ChunkTooLong {
                chunk: self.name(),
                len,
            });
        };
        out[start + 2..start + 4].copy_from_slice(&len.to_be_bytes());
        put_zeros(out, padding(len as usize));
        Ok(())
    }
}
