//! Typed decoding errors: each names the element and what was wrong with it.

/// What went wrong while decoding bytes from the network.
///
/// `what` names the element being decoded ("SACK chunk", "IPv4 Address parameter", ...), so
/// an error message tells a reader where the packet was malformed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The input ended before a fixed-size field.
    #[error("{what}: truncated, needs {need} bytes but only {have} remain")]
    Truncated {
        /// Element being decoded.
        what: &'static str,
        /// Bytes the field needs.
        need: usize,
        /// Bytes left in the input.
        have: usize,
    },
    /// A length field is smaller than the element's own header (e.g. a zero-length chunk).
    #[error("{what}: length field {length} is below the minimum of {min}")]
    LengthTooSmall {
        /// Element being decoded.
        what: &'static str,
        /// Value of the length field.
        length: usize,
        /// Smallest legal value.
        min: usize,
    },
    /// A length field points past the end of the enclosing element.
    #[error("{what}: length field {length} runs past the end ({available} bytes available)")]
    LengthPastEnd {
        /// Element being decoded.
        what: &'static str,
        /// Value of the length field.
        length: usize,
        /// Bytes actually available.
        available: usize,
    },
    /// The 4-byte padding after an element is missing or cut short (RFC 9260 §3.2).
    #[error("{what}: padding cut short, {have} of {need} padding bytes present")]
    BadPadding {
        /// Element being decoded.
        what: &'static str,
        /// Padding bytes required.
        need: usize,
        /// Padding bytes present.
        have: usize,
    },
    /// A fixed-size element has a value of the wrong size.
    #[error("{what}: value is {len} bytes, expected {expected}")]
    BadValueLength {
        /// Element being decoded.
        what: &'static str,
        /// Actual value length.
        len: usize,
        /// Expected value length (or the description of the rule in `detail`).
        expected: usize,
    },
    /// Counts inside an element do not add up with its length (e.g. SACK gap-block count).
    #[error("{what}: {detail}")]
    Inconsistent {
        /// Element being decoded.
        what: &'static str,
        /// What does not add up.
        detail: &'static str,
    },
    /// The CRC32c carried in the common header does not match the packet (RFC 9260 §6.8).
    #[error("bad checksum: packet carries {carried:#010x}, computed {computed:#010x}")]
    BadChecksum {
        /// Checksum in the packet.
        carried: u32,
        /// Checksum computed over the packet.
        computed: u32,
    },
}

/// Result of a decoding step.
pub type Result<T> = std::result::Result<T, DecodeError>;

/// What went wrong while encoding: only sizes the wire format cannot express.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EncodeError {
    /// A chunk's value does not fit its 16-bit length field.
    #[error("{chunk}: {len} bytes do not fit a chunk (at most 65535)")]
    ChunkTooLong {
        /// Chunk type name.
        chunk: &'static str,
        /// Encoded length, header included.
        len: usize,
    },
    /// A field holds a value its wire encoding cannot carry (e.g. an LS-SCTP PID above 15),
    /// or a list has a length the chunk does not allow.
    #[error("{chunk}: {field} is {value}, must be in {min}..={max}")]
    FieldOutOfRange {
        /// Chunk type name.
        chunk: &'static str,
        /// Field name.
        field: &'static str,
        /// The value given.
        value: u32,
        /// Smallest legal value.
        min: u32,
        /// Largest legal value.
        max: u32,
    },
}
