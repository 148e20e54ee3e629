//! `braid-wire`: the SCTP packet codec.
//!
//! Parses and serializes every SCTP packet element braid speaks (RFC 9260 and the extensions
//! listed in [`chunk`]), byte-exact in both directions, with the CRC32c checksum computed by
//! the CPU's CRC instructions where available. It holds no state.
//!
//! Decoding never panics and never allocates more than the input can justify: every malformed
//! input is a [`DecodeError`] naming what was wrong. Values are zero-copy slices of the input
//! ([`bytes::Bytes`]). Unknown chunk and parameter types are kept whole, with their
//! [`UnrecognizedAction`], so the core can follow RFC 9260 §3.2 and §3.2.1.
//!
//! ```
//! use braid_wire::{Packet, chunk::{Chunk, Data}};
//! let pkt = Packet {
//!     src_port: 5001,
//!     dst_port: 5001,
//!     verification_tag: 0xdead_beef,
//!     chunks: vec![Chunk::Data(Data {
//!         tsn: 1, stream_id: 0, ssn: 0, ppid: 0, beginning: true, ending: true,
//!         user_data: bytes::Bytes::from_static(b"hello"), ..Default::default()
//!     })],
//! };
//! let bytes = bytes::Bytes::from(pkt.to_vec().unwrap());
//! assert_eq!(Packet::decode(&bytes).unwrap(), pkt);
//! ```

pub mod cause;
pub mod chunk;
mod codec;
pub mod crc32c;
mod error;
pub mod packet;
pub mod param;
pub mod pcap;
pub mod sample;

pub use cause::{CauseCode, ErrorCause};
pub use chunk::{Chunk, ChunkBody, ChunkType, RawChunk};
pub use error::{DecodeError, EncodeError, Result};
pub use packet::{COMMON_HEADER_LEN, CommonHeader, Packet, raw_chunks, verify_checksum};
pub use param::{Param, ParamType};

/// What to do with a chunk or parameter whose type is not recognized: its two high bits
/// (RFC 9260 §3.2 for chunks, §3.2.1 for parameters).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnrecognizedAction {
    /// `00`: stop processing the packet (chunks) or the chunk (parameters), discard it.
    Stop,
    /// `01`: stop, discard, and report it in an ERROR / Unrecognized Parameter.
    StopAndReport,
    /// `10`: skip it and go on.
    Skip,
    /// `11`: skip it, go on, and report it.
    SkipAndReport,
}

impl UnrecognizedAction {
    /// Maps the two high bits (`0..=3`) to the action.
    pub const fn from_high_bits(bits: u8) -> Self {
        match bits & 3 {
            0 => Self::Stop,
            1 => Self::StopAndReport,
            2 => Self::Skip,
            _ => Self::SkipAndReport,
        }
    }

    /// Whether processing goes on past the unrecognized element.
    pub const fn skips(self) -> bool {
        matches!(self, Self::Skip | Self::SkipAndReport)
    }

    /// Whether the element is reported back to the sender.
    pub const fn reports(self) -> bool {
        matches!(self, Self::StopAndReport | Self::SkipAndReport)
    }
}
