//! The SCTP packet: common header (RFC 9260 §3.1) and a sequence of chunks (§3.2).
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |     Source Port Number        |     Destination Port Number   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                      Verification Tag                         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                           Checksum                            |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |   Chunk Type  | Chunk  Flags  |        Chunk Length           |  (repeated)
//! /                          Chunk Value                          /
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```

use bytes::Bytes;

use crate::chunk::{Chunk, ChunkType, RawChunk};
use crate::codec::padding;
use crate::crc32c::sctp_checksum;
use crate::error::{DecodeError, EncodeError, Result};

/// Bytes of the SCTP common header.
pub const COMMON_HEADER_LEN: usize = 12;

/// The common header of an SCTP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CommonHeader {
    /// Sender's SCTP port.
    pub src_port: u16,
    /// Receiver's SCTP port.
    pub dst_port: u16,
    /// Verification tag (RFC 9260 §8.5).
    pub verification_tag: u32,
    /// CRC32c value as carried: the wire bytes are its little-endian encoding, which is the
    /// byte order RFC 9260 Appendix A's reference code produces.
    pub checksum: u32,
}

impl CommonHeader {
    /// Reads the common header without touching the chunks (for demultiplexing).
    pub fn peek(packet: &[u8]) -> Result<Self> {
        let Some(h) = packet.get(..COMMON_HEADER_LEN) else {
            return Err(DecodeError::Truncated {
                what: "SCTP common header",
                need: COMMON_HEADER_LEN,
                have: packet.len(),
            });
        };
        Ok(Self {
            src_port: u16::from_be_bytes([h[0], h[1]]),
            dst_port: u16::from_be_bytes([h[2], h[3]]),
            verification_tag: u32::from_be_bytes([h[4], h[5], h[6], h[7]]),
            checksum: u32::from_le_bytes([h[8], h[9], h[10], h[11]]),
        })
    }
}

/// Checks the CRC32c of a whole packet (RFC 9260 §6.8).
pub fn verify_checksum(packet: &[u8]) -> Result<()> {
    let carried = CommonHeader::peek(packet)?.checksum;
    let computed = sctp_checksum(packet);
    if carried != computed {
        return Err(DecodeError::BadChecksum { carried, computed });
    }
    Ok(())
}

/// The TSN of the first DATA or I-DATA chunk of `packet` (RFC 9260 §3.3.1, RFC 8260 §2.1),
/// found by walking the chunk headers without decoding or checking anything else: a hint
/// for ordering datagrams (a driver that reads several sockets hands them to the core in
/// TSN order), never a basis for acting on the packet. `None` if there is no such chunk or
/// the framing ends first.
pub fn first_data_tsn(packet: &[u8]) -> Option<u32> {
    // The TSN is the first field of the value of both chunk types.
    const DATA: u8 = 0;
    const I_DATA: u8 = 64;
    let mut off = COMMON_HEADER_LEN;
    // A few chunks at most (control chunks bundled before DATA, RFC 9260 §6.10).
    for _ in 0..8 {
        let h = packet.get(off..off + 8)?;
        let len = usize::from(u16::from_be_bytes([h[2], h[3]]));
        if h[0] == DATA || h[0] == I_DATA {
            return Some(u32::from_be_bytes([h[4], h[5], h[6], h[7]]));
        }
        if len < 4 {
            return None;
        }
        off += len + padding(len);
    }
    None
}

/// Computes the CRC32c of `packet` and stores it in the common header.
///
/// Does nothing to a buffer shorter than the common header.
pub fn write_checksum(packet: &mut [u8]) {
    if packet.len() >= COMMON_HEADER_LEN {
        let crc = sctp_checksum(packet);
        packet[8..12].copy_from_slice(&crc.to_le_bytes());
    }
}

/// A decoded SCTP packet.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Packet {
    /// Sender's SCTP port.
    pub src_port: u16,
    /// Receiver's SCTP port.
    pub dst_port: u16,
    /// Verification tag.
    pub verification_tag: u32,
    /// The chunks, in order.
    pub chunks: Vec<Chunk>,
}

impl Packet {
    /// Decodes a packet after checking its CRC32c.
    pub fn decode(packet: &Bytes) -> Result<Self> {
        verify_checksum(packet)?;
        Self::decode_unverified(packet)
    }

    /// Decodes a packet without checking its checksum (e.g. when the NIC already did).
    pub fn decode_unverified(packet: &Bytes) -> Result<Self> {
        let h = CommonHeader::peek(packet)?;
        let mut chunks = Vec::new();
        for raw in raw_chunks(packet) {
            chunks.push(Chunk::decode(raw?)?);
        }
        Ok(Self {
            src_port: h.src_port,
            dst_port: h.dst_port,
            verification_tag: h.verification_tag,
            chunks,
        })
    }

    /// Appends the encoded packet, checksum included, to `out`.
    ///
    /// On error `out` is left as it was.
    pub fn encode(&self, out: &mut Vec<u8>) -> std::result::Result<(), EncodeError> {
        let start = out.len();
        out.extend_from_slice(&self.src_port.to_be_bytes());
        out.extend_from_slice(&self.dst_port.to_be_bytes());
        out.extend_from_slice(&self.verification_tag.to_be_bytes());
        out.extend_from_slice(&[0; 4]);
        for c in &self.chunks {
            if let Err(e) = c.encode(out) {
                out.truncate(start);
                return Err(e);
            }
        }
        write_checksum(&mut out[start..]);
        Ok(())
    }

    /// The encoded packet as a new buffer.
    pub fn to_vec(&self) -> std::result::Result<Vec<u8>, EncodeError> {
        let mut v = Vec::with_capacity(256);
        self.encode(&mut v)?;
        Ok(v)
    }
}

/// Iterates over the chunks of a packet (after its common header) without decoding values.
///
/// Stops after the first error. This is what the core uses to apply the unknown-chunk rules
/// of RFC 9260 §3.2 chunk by chunk.
pub fn raw_chunks(packet: &Bytes) -> RawChunks<'_> {
    RawChunks {
        packet,
        pos: COMMON_HEADER_LEN.min(packet.len()),
        failed: false,
    }
}

/// Iterator returned by [`raw_chunks`].
#[derive(Debug)]
pub struct RawChunks<'a> {
    packet: &'a Bytes,
    pos: usize,
    failed: bool,
}

impl RawChunks<'_> {
    fn next_chunk(&mut self) -> Result<RawChunk> {
        const WHAT: &str = "chunk header";
        let rest = &self.packet[self.pos..];
        if rest.len() < 4 {
            return Err(DecodeError::Truncated {
                what: WHAT,
                need: 4,
                have: rest.len(),
            });
        }
        let chunk_type = ChunkType(rest[0]);
        let flags = rest[1];
        let length = u16::from_be_bytes([rest[2], rest[3]]) as usize;
        if length < 4 {
            return Err(DecodeError::LengthTooSmall {
                what: WHAT,
                length,
                min: 4,
            });
        }
        if length > rest.len() {
            return Err(DecodeError::LengthPastEnd {
                what: WHAT,
                length,
                available: rest.len(),
            });
        }
        let pad = padding(length);
        if length + pad > rest.len() {
            // RFC 9260 §3.2: every chunk, the last one too, is padded to 4 bytes.
            return Err(DecodeError::BadPadding {
                what: "chunk",
                need: pad,
                have: rest.len() - length,
            });
        }
        let value = self.packet.slice(self.pos + 4..self.pos + length);
        self.pos += length + pad;
        Ok(RawChunk {
            chunk_type,
            flags,
            value,
        })
    }
}

impl Iterator for RawChunks<'_> {
    type Item = Result<RawChunk>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.packet.len() {
            return None;
        }
        let r = self.next_chunk();
        self.failed = r.is_err();
        Some(r)
    }
}
