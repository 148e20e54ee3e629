//! CRC32c (Castagnoli), the SCTP checksum of RFC 9260 §6.8 and Appendix A.
//!
//! Backed by the `crc32c` crate, which uses the SSE4.2 `crc32` instruction on x86-64 and the
//! ARMv8 CRC extension on aarch64 (detected at run time), with a table fallback elsewhere.

/// CRC32c of `data`.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    ::crc32c::crc32c(data)
}

/// Continues a CRC32c computed over earlier bytes with `data`.
#[inline]
pub fn crc32c_append(crc: u32, data: &[u8]) -> u32 {
    ::crc32c::crc32c_append(crc, data)
}

/// The SCTP checksum of a whole packet: CRC32c with the checksum field (bytes 8..12) taken
/// as zero (RFC 9260 §6.8). Never panics: a `packet` shorter than the 12-byte common header
/// gives a meaningless value (callers check the length first).
#[inline]
pub fn sctp_checksum(packet: &[u8]) -> u32 {
    // Two calls, not three: the header with its zeroed checksum field, then the chunks.
    let mut head = [0u8; 12];
    let n = packet.len().min(8);
    head[..n].copy_from_slice(&packet[..n]);
    crc32c_append(crc32c(&head), packet.get(12..).unwrap_or(&[]))
}
