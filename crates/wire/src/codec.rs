//! Bounds-checked big-endian reading and the TLV/padding helpers shared by every element.

use bytes::Bytes;

use crate::error::{DecodeError, Result};

/// Number of zero bytes that pad `len` up to a multiple of 4 (RFC 9260 §3.2).
#[inline]
pub(crate) const fn padding(len: usize) -> usize {
    (4 - (len & 3)) & 3
}

/// A cursor over a byte slice that never reads past its end: every read names the element.
pub(crate) struct Reader<'a> {
    buf: &'a Bytes,
    pos: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    /// Reads `buf` from the start; errors will name `what`.
    #[inline]
    pub(crate) fn new(buf: &'a Bytes, what: &'static str) -> Self {
        Self { buf, pos: 0, what }
    }

    /// Bytes not yet read.
    #[inline]
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    #[inline]
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        let have = self.remaining();
        if have < n {
            return Err(DecodeError::Truncated {
                what: self.what,
                need: n,
                have,
            });
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    #[inline]
    pub(crate) fn u16(&mut self) -> Result<u16> {
        let s = self.take(2)?;
        Ok(u16::from_be_bytes([s[0], s[1]]))
    }

    #[inline]
    pub(crate) fn u32(&mut self) -> Result<u32> {
        let s = self.take(4)?;
        Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    }

    /// A zero-copy slice of the next `n` bytes.
    #[inline]
    pub(crate) fn bytes(&mut self, n: usize) -> Result<Bytes> {
        let have = self.remaining();
        if have < n {
            return Err(DecodeError::Truncated {
                what: self.what,
                need: n,
                have,
            });
        }
        let b = self.buf.slice(self.pos..self.pos + n);
        self.pos += n;
        Ok(b)
    }

    /// Everything not yet read, zero-copy.
    #[inline]
    pub(crate) fn rest(&mut self) -> Bytes {
        let b = self.buf.slice(self.pos..);
        self.pos = self.buf.len();
        b
    }

    /// Fails unless the value of `what` has exactly `expected` bytes left.
    #[inline]
    pub(crate) fn expect_len(&self, expected: usize) -> Result<()> {
        if self.remaining() != expected {
            return Err(DecodeError::BadValueLength {
                what: self.what,
                len: self.remaining(),
                expected,
            });
        }
        Ok(())
    }

    /// Reads one TLV (type u16, length u16 counting the 4-byte header, value, padding to 4).
    ///
    /// The padding of the last TLV may be absent because it is covered by the enclosing
    /// chunk's own padding (RFC 9260 §3.2); a partial padding is an error.
    pub(crate) fn tlv(&mut self) -> Result<(u16, Bytes)> {
        let what = self.what;
        let have = self.remaining();
        if have < 4 {
            return Err(DecodeError::Truncated {
                what,
                need: 4,
                have,
            });
        }
        let ty = self.u16()?;
        let len = self.u16()? as usize;
        if len < 4 {
            return Err(DecodeError::LengthTooSmall {
                what,
                length: len,
                min: 4,
            });
        }
        if len - 4 > self.remaining() {
            return Err(DecodeError::LengthPastEnd {
                what,
                length: len,
                available: have,
            });
        }
        let value = self.bytes(len - 4)?;
        let pad = padding(len);
        let left = self.remaining();
        if left >= pad {
            self.pos += pad;
        } else if left != 0 {
            return Err(DecodeError::BadPadding {
                what,
                need: pad,
                have: left,
            });
        }
        Ok((ty, value))
    }
}

/// Appends `n` zero bytes.
#[inline]
pub(crate) fn put_zeros(out: &mut Vec<u8>, n: usize) {
    out.resize(out.len() + n, 0);
}

/// Appends a TLV header for a value of `value_len` bytes (the caller writes value and padding).
#[inline]
pub(crate) fn put_tlv_header(out: &mut Vec<u8>, ty: u16, value_len: usize) {
    out.extend_from_slice(&ty.to_be_bytes());
    out.extend_from_slice(&tlv_len(value_len).to_be_bytes());
}

/// The 16-bit length field of a TLV whose value has `value_len` bytes.
///
/// Encoders never build values above 65535 bytes; a larger value is a caller bug that we
/// clamp rather than panic on, so the peer sees a malformed element instead of us crashing.
#[inline]
pub(crate) fn tlv_len(value_len: usize) -> u16 {
    u16::try_from(value_len + 4).unwrap_or(u16::MAX)
}

#[inline]
pub(crate) fn put_u16(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_be_bytes());
}

#[inline]
pub(crate) fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_be_bytes());
}
