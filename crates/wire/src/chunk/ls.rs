//! LS-SCTP load-sharing chunks (Abd El Al et al., "LS-SCTP: a bandwidth aggregation
//! technique for SCTP", Computer Communications 27, 2004, §4.2 Figs. 7–8), plus braid's
//! LS-FORWARD-PSN.
//!
//! LS-SCTP separates flow control (per association, the Association Sequence Number, ASN,
//! which plays the TSN's role) from congestion control (per path: a 4-bit Path Identifier,
//! PID, and a 12-bit Path Sequence Number, PSN). The paper gives no type codes; braid's are:
//!
//! | Chunk          | Type | Flags                 | Origin                               |
//! |----------------|------|-----------------------|--------------------------------------|
//! | LS-DATA        | 0xB0 | `I U B E` as DATA     | paper Fig. 7                         |
//! | LS-SACK        | 0xB1 | low 4 bits: PID       | paper Fig. 8 (PID in flags: braid's) |
//! | LS-FORWARD-PSN | 0xB2 | 0                     | braid's own addition                 |
//!
//! and the INIT/INIT-ACK parameter Load-Sharing-Supported (paper §4.6) is type 0x80B0
//! ([`Param::LoadSharingSupported`](crate::Param::LoadSharingSupported)), empty.
//!
//! All four codes have the high bits `10`: a peer that does not speak LS-SCTP skips them
//! silently (RFC 9260 §3.2, §3.2.1). That is also why these chunks are not variants of
//! [`Chunk`](super::Chunk): [`Chunk::decode`](super::Chunk::decode) keeps them as
//! [`Chunk::Unknown`](super::Chunk::Unknown), and the core, once Load-Sharing-Supported has
//! been exchanged, decodes them with [`RawChunk::decode_as`](super::RawChunk::decode_as)
//! and sends them with [`RawChunk::try_from_body`](super::RawChunk::try_from_body).
//!
//! PIDs (0..=15) and PSNs (0..=4095) have fewer bits than the Rust fields holding them. A
//! decoder rejects out-of-range values where the wire field is wider than the value; on
//! sending, [`ChunkBody::validate`] reports them as [`EncodeError::FieldOutOfRange`], which
//! `RawChunk::try_from_body` returns. [`ChunkBody::encode_value`] cannot fail: given an
//! out-of-range value it panics in debug builds, and in release builds writes it masked to
//! its field width (LS-DATA's PID and PSN, LS-SACK's PID) or as given where the wire field
//! is wider (the peer's decoder then rejects the chunk), so callers must validate (or use
//! `try_from_body`, or [`RawChunk::from_body`](super::RawChunk::from_body) only on values
//! known to be in range).
//!
//! # LS-DATA (type 0xB0)
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Type = 0xB0  |  Res  |I|U|B|E|       Length = Variable       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                 Association Sequence Number                   |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  PID  |          PSN          |           Reserved            |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |      Stream Identifier S      |   Stream Sequence Number n    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                  Payload Protocol Identifier                  |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! /                 User Data (seq n of Stream S)                 /
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Reserved is sent as 0 and ignored on receipt.
//!
//! # LS-SACK (type 0xB1)
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Type = 0xB1  |  Res  |  PID  |         Chunk Length          |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                      Cumulative ASN Ack                       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |          Advertised Receiver Window Credit (a_rwnd)           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                           Timestamp                           |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |              Cumulative PSN Ack (0..=4095)                    |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! | Number of Gap Ack Blocks = N  |  Number of Duplicate PSNs = M |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |    Gap Ack Block #1 Start     |     Gap Ack Block #1 End      |
//! /                              ...                              /
//! |                        Duplicate PSN 1                        |
//! /                              ...                              /
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! The PID in the flags is braid's addition: the paper sends one LS-SACK per path, on that
//! path, so the path is implied; carrying it lets LS-SACKs for several paths share one
//! packet. The upper 4 flag bits are sent as 0 and ignored on receipt. Gap offsets are
//! relative to the Cumulative PSN Ack, as SACK's are to the Cumulative TSN Ack. The
//! Timestamp orders LS-SACKs that arrive out of order over different paths (paper §4.2).
//!
//! # LS-FORWARD-PSN (type 0xB2)
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |  Type = 0xB2  | Flags = 0x00  |      Length = 4 + 4 * K       |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |        PID #1 (0..=15)        | New Cumulative PSN #1 (0..4095)|
//! /                              ...                              /
//! |        PID #K (0..=15)        | New Cumulative PSN #K (0..4095)|
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ```
//!
//! Not in the paper: it tells the receiver that the PSNs of a path up to New Cumulative PSN
//! will never be sent (their chunks moved to another path), so its Cumulative PSN for that
//! path can advance — FORWARD-TSN (RFC 3758) for a path's sequence. At least one entry.

use bytes::Bytes;

use super::data::flags;
use super::sack::{check_counts, count, put_blocks, read_blocks, read_tsns};
use super::{ChunkBody, ChunkType, GapAckBlock};
use crate::codec::{Reader, put_u16, put_u32};
use crate::error::{DecodeError, EncodeError, Result};

/// Largest Path Identifier (4 bits).
pub const LS_MAX_PID: u8 = 15;
/// Largest Path Sequence Number (12 bits).
pub const LS_MAX_PSN: u16 = 4095;
/// Bytes of an LS-DATA chunk before its user data (header included), as
/// [`DATA_HEADER_LEN`](super::DATA_HEADER_LEN) for DATA.
pub const LS_DATA_HEADER_LEN: usize = 20;

fn check_range(
    chunk: &'static str,
    field: &'static str,
    value: u32,
    max: u16,
) -> std::result::Result<(), EncodeError> {
    if value > u32::from(max) {
        return Err(EncodeError::FieldOutOfRange {
            chunk,
            field,
            value,
            min: 0,
            max: u32::from(max),
        });
    }
    Ok(())
}

fn check_pid(chunk: &'static str, pid: u8) -> std::result::Result<(), EncodeError> {
    check_range(chunk, "PID", pid.into(), LS_MAX_PID.into())
}

fn check_psn(
    chunk: &'static str,
    field: &'static str,
    psn: u32,
) -> std::result::Result<(), EncodeError> {
    check_range(chunk, field, psn, LS_MAX_PSN)
}

/// Decode-side check of a PSN carried in a field wider than 12 bits.
fn psn_in_range(what: &'static str, psn: u32, detail: &'static str) -> Result<()> {
    if psn > u32::from(LS_MAX_PSN) {
        return Err(DecodeError::Inconsistent { what, detail });
    }
    Ok(())
}

/// An LS-DATA chunk (paper Fig. 7): DATA with an association sequence number and the path
/// it was sent on.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LsData {
    /// Association sequence number: orders chunks in the association, whatever their path.
    pub asn: u32,
    /// Path identifier (0..=15) of the path this chunk is sent on.
    pub pid: u8,
    /// Path sequence number (0..=4095) on path `pid`.
    pub psn: u16,
    /// Stream identifier.
    pub stream_id: u16,
    /// Stream sequence number (ignored for unordered messages).
    pub ssn: u16,
    /// Payload protocol identifier, opaque to SCTP.
    pub ppid: u32,
    /// U bit: deliver without regard to the stream sequence.
    pub unordered: bool,
    /// B bit: first fragment of the message.
    pub beginning: bool,
    /// E bit: last fragment of the message.
    pub ending: bool,
    /// I bit (RFC 7053): the receiver should SACK without delay.
    pub immediate: bool,
    /// The user data (may be empty on the wire, as for DATA; the core answers "No User
    /// Data").
    pub user_data: Bytes,
}

impl ChunkBody for LsData {
    const TYPE: ChunkType = ChunkType::LS_DATA;
    const NAME: &'static str = "LS-DATA chunk";

    fn decode(f: u8, value: &Bytes) -> Result<Self> {
        let mut r = Reader::new(value, Self::NAME);
        let asn = r.u32()?;
        let pid_psn = r.u16()?;
        let _reserved = r.u16()?;
        Ok(Self {
            asn,
            // The shift leaves 4 bits, the mask 12: both fit by construction.
            pid: (pid_psn >> 12) as u8,
            psn: pid_psn & LS_MAX_PSN,
            stream_id: r.u16()?,
            ssn: r.u16()?,
            ppid: r.u32()?,
            immediate: f & flags::I != 0,
            unordered: f & flags::U != 0,
            beginning: f & flags::B != 0,
            ending: f & flags::E != 0,
            user_data: r.rest(),
        })
    }

    fn flags(&self) -> u8 {
        flags::pack(self.immediate, self.unordered, self.beginning, self.ending)
    }

    fn validate(&self) -> std::result::Result<(), EncodeError> {
        check_pid(Self::NAME, self.pid)?;
        check_psn(Self::NAME, "PSN", self.psn.into())
    }

    /// Panics in debug builds if `pid` or `psn` is out of range; masks them in release
    /// builds (see the module documentation).
    fn encode_value(&self, out: &mut Vec<u8>) {
        debug_assert_eq!(self.validate(), Ok(()), "{self:?}");
        put_u32(out, self.asn);
        put_u16(
            out,
            (u16::from(self.pid & LS_MAX_PID) << 12) | (self.psn & LS_MAX_PSN),
        );
        put_u16(out, 0);
        put_u16(out, self.stream_id);
        put_u16(out, self.ssn);
        put_u32(out, self.ppid);
        out.extend_from_slice(&self.user_data);
    }
}

/// An LS-SACK chunk (paper Fig. 8): acknowledges the association (Cumulative ASN Ack,
/// a_rwnd) and one path's PSNs. Gap offsets are not validated here (start <= end,
/// ordering), as for [`Sack`](super::Sack): that is the core's job.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LsSack {
    /// Path (0..=15) whose PSNs this chunk acknowledges (carried in the flags).
    pub pid: u8,
    /// Highest ASN delivered without a gap.
    pub cum_asn: u32,
    /// Advertised receiver window credit.
    pub a_rwnd: u32,
    /// When the LS-SACK was sent, in the sender's units: orders LS-SACKs arriving over
    /// different paths, so an old one does not update the peer's window.
    pub timestamp: u32,
    /// Highest PSN received without a gap on path `pid` (0..=4095 in a 32-bit field).
    pub cum_psn: u32,
    /// Blocks of PSNs received above `cum_psn`, as offsets from it.
    pub gap_blocks: Vec<GapAckBlock>,
    /// PSNs (0..=4095 each) received more than once since the last LS-SACK for the path.
    pub dup_psns: Vec<u32>,
}

impl ChunkBody for LsSack {
    const TYPE: ChunkType = ChunkType::LS_SACK;
    const NAME: &'static str = "LS-SACK chunk";

    fn decode(f: u8, value: &Bytes) -> Result<Self> {
        let mut r = Reader::new(value, Self::NAME);
        let cum_asn = r.u32()?;
        let a_rwnd = r.u32()?;
        let timestamp = r.u32()?;
        let cum_psn = r.u32()?;
        let n_gaps = r.u16()? as usize;
        let n_dups = r.u16()? as usize;
        // Checked before allocating, so a lying count cannot reserve memory.
        check_counts(Self::NAME, &r, n_gaps + n_dups)?;
        psn_in_range(Self::NAME, cum_psn, "Cumulative PSN Ack above 4095")?;
        let mut gap_blocks = Vec::new();
        read_blocks(&mut r, n_gaps, &mut gap_blocks)?;
        let mut dup_psns = Vec::new();
        read_tsns(&mut r, n_dups, &mut dup_psns)?;
        if dup_psns.iter().any(|p| *p > u32::from(LS_MAX_PSN)) {
            return Err(DecodeError::Inconsistent {
                what: Self::NAME,
                detail: "duplicate PSN above 4095",
            });
        }
        Ok(Self {
            pid: f & LS_MAX_PID,
            cum_asn,
            a_rwnd,
            timestamp,
            cum_psn,
            gap_blocks,
            dup_psns,
        })
    }

    fn flags(&self) -> u8 {
        self.pid & LS_MAX_PID
    }

    fn validate(&self) -> std::result::Result<(), EncodeError> {
        check_pid(Self::NAME, self.pid)?;
        check_psn(Self::NAME, "Cumulative PSN Ack", self.cum_psn)?;
        self.dup_psns
            .iter()
            .try_for_each(|p| check_psn(Self::NAME, "duplicate PSN", *p))
    }

    /// Panics in debug builds if `pid`, `cum_psn` or a duplicate PSN is out of range; in
    /// release builds the PID is masked and the PSNs written as given (see the module
    /// documentation).
    fn encode_value(&self, out: &mut Vec<u8>) {
        debug_assert_eq!(self.validate(), Ok(()), "{self:?}");
        put_u32(out, self.cum_asn);
        put_u32(out, self.a_rwnd);
        put_u32(out, self.timestamp);
        put_u32(out, self.cum_psn);
        put_u16(out, count(self.gap_blocks.len()));
        put_u16(out, count(self.dup_psns.len()));
        put_blocks(out, &self.gap_blocks);
        self.dup_psns.iter().for_each(|p| put_u32(out, *p));
    }
}

/// An LS-FORWARD-PSN chunk (braid's addition): for each listed path, PSNs up to the new
/// cumulative PSN will never be sent, so the receiver may advance its cumulative PSN.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LsForwardPsn {
    /// `(pid, new_cum_psn)` pairs: PID 0..=15, new cumulative PSN 0..=4095. At least one.
    pub entries: Vec<(u8, u16)>,
}

impl ChunkBody for LsForwardPsn {
    const TYPE: ChunkType = ChunkType::LS_FORWARD_PSN;
    const NAME: &'static str = "LS-FORWARD-PSN chunk";

    fn decode(_flags: u8, value: &Bytes) -> Result<Self> {
        if value.is_empty() || !value.len().is_multiple_of(4) {
            return Err(DecodeError::Inconsistent {
                what: Self::NAME,
                detail: "value must be one or more 4-byte entries",
            });
        }
        let mut r = Reader::new(value, Self::NAME);
        let mut entries = Vec::with_capacity(value.len() / 4);
        while r.remaining() > 0 {
            let pid = r.u16()?;
            let psn = r.u16()?;
            let Ok(pid) = u8::try_from(pid) else {
                return Err(pid_error());
            };
            if pid > LS_MAX_PID {
                return Err(pid_error());
            }
            psn_in_range(Self::NAME, psn.into(), "New Cumulative PSN above 4095")?;
            entries.push((pid, psn));
        }
        Ok(Self { entries })
    }

    fn validate(&self) -> std::result::Result<(), EncodeError> {
        // One entry at least; at most what a 16-bit Chunk Length can frame.
        let max = (u32::from(u16::MAX) - 4) / 4;
        let n = u32::try_from(self.entries.len()).unwrap_or(u32::MAX);
        if n == 0 || n > max {
            return Err(EncodeError::FieldOutOfRange {
                chunk: Self::NAME,
                field: "number of entries",
                value: n,
                min: 1,
                max,
            });
        }
        self.entries.iter().try_for_each(|(pid, psn)| {
            check_pid(Self::NAME, *pid)?;
            check_psn(Self::NAME, "New Cumulative PSN", (*psn).into())
        })
    }

    /// Panics in debug builds if an entry is out of range or there is none; in release
    /// builds writes the values as given (see the module documentation).
    fn encode_value(&self, out: &mut Vec<u8>) {
        debug_assert_eq!(self.validate(), Ok(()), "{self:?}");
        for (pid, psn) in &self.entries {
            put_u16(out, (*pid).into());
            put_u16(out, *psn);
        }
    }
}

fn pid_error() -> DecodeError {
    DecodeError::Inconsistent {
        what: LsForwardPsn::NAME,
        detail: "PID above 15",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chunk::{Chunk, RawChunk};
    use crate::packet::Packet;

    fn ls_data() -> LsData {
        LsData {
            asn: 0xdead_beef,
            pid: 15,
            psn: 4095,
            stream_id: 3,
            ssn: 17,
            ppid: 51,
            unordered: true,
            beginning: true,
            ending: false,
            immediate: true,
            user_data: Bytes::from_static(b"load shared"),
        }
    }

    fn ls_sack() -> LsSack {
        LsSack {
            pid: 9,
            cum_asn: 1000,
            a_rwnd: 65_536,
            timestamp: 0x0102_0304,
            cum_psn: 4000,
            gap_blocks: vec![
                GapAckBlock { start: 2, end: 3 },
                GapAckBlock { start: 6, end: 9 },
            ],
            dup_psns: vec![3998, 3999],
        }
    }

    fn ls_forward_psn() -> LsForwardPsn {
        LsForwardPsn {
            entries: vec![(0, 0), (7, 100), (15, 4095)],
        }
    }

    /// Value bytes of `c` (through `try_from_body`, so validated).
    fn value<T: ChunkBody>(c: &T) -> Bytes {
        RawChunk::try_from_body(c).unwrap().value
    }

    fn round_trip<T: ChunkBody + PartialEq + std::fmt::Debug>(c: &T) {
        let raw = RawChunk::try_from_body(c).unwrap();
        assert_eq!(raw.chunk_type, T::TYPE);
        assert_eq!(
            raw.decode_as::<T>(),
            Some(Ok(T::decode(raw.flags, &raw.value).unwrap()))
        );
        assert_eq!(&raw.decode_as::<T>().unwrap().unwrap(), c);
        // Framed in a packet: a standard decode keeps it raw, byte for byte.
        let pkt = Packet {
            src_port: 1,
            dst_port: 2,
            verification_tag: 3,
            chunks: vec![Chunk::Unknown(raw.clone())],
        };
        let wire = Bytes::from(pkt.to_vec().unwrap());
        let back = Packet::decode(&wire).unwrap();
        assert_eq!(back, pkt);
        let [Chunk::Unknown(r)] = back.chunks.as_slice() else {
            panic!("{}: not kept raw: {back:?}", T::NAME);
        };
        assert_eq!(r.chunk_type, T::TYPE);
        assert!(T::TYPE.unrecognized_action().skips());
        assert!(!T::TYPE.unrecognized_action().reports());
        assert_eq!(&r.decode_as::<T>().unwrap().unwrap(), c);
    }

    #[test]
    fn each_chunk_round_trips() {
        round_trip(&ls_data());
        round_trip(&LsData {
            user_data: Bytes::new(),
            ..LsData::default()
        });
        round_trip(&ls_sack());
        round_trip(&LsSack::default());
        round_trip(&ls_forward_psn());
        round_trip(&LsForwardPsn {
            entries: vec![(1, 2)],
        });
    }

    #[test]
    fn ls_data_wire_layout() {
        let c = ls_data();
        let raw = RawChunk::try_from_body(&c).unwrap();
        assert_eq!(raw.flags, 0x0f & !0x01); // I U B, not E
        let wire = raw.to_wire();
        assert_eq!(wire.len(), LS_DATA_HEADER_LEN + c.user_data.len());
        #[rustfmt::skip]
        assert_eq!(
            &wire[..LS_DATA_HEADER_LEN],
            &[
                0xb0, 0x0e, 0, 31,
                0xde, 0xad, 0xbe, 0xef, // ASN
                0xff, 0xff, 0, 0,       // PID 15 | PSN 4095, reserved
                0, 3, 0, 17,            // stream, SSN
                0, 0, 0, 51,            // PPID
            ]
        );
        // PID in the high 4 bits, PSN in the low 12.
        let c = LsData {
            pid: 0xa,
            psn: 0x123,
            ..LsData::default()
        };
        assert_eq!(&value(&c)[4..8], &[0xa1, 0x23, 0, 0]);
    }

    #[test]
    fn reserved_bits_are_ignored_on_receipt() {
        let mut v = value(&ls_data()).to_vec();
        v[6] = 0xaa;
        v[7] = 0x55;
        let back = LsData::decode(0xf0 | 0x0e, &Bytes::from(v)).unwrap();
        assert_eq!(back, ls_data());
        let back = LsSack::decode(0xf0 | 9, &value(&ls_sack())).unwrap();
        assert_eq!(back, ls_sack());
    }

    #[test]
    fn ls_sack_and_forward_psn_wire_layout() {
        let raw = RawChunk::try_from_body(&ls_sack()).unwrap();
        assert_eq!(raw.flags, 9);
        #[rustfmt::skip]
        assert_eq!(
            raw.value.as_ref(),
            &[
                0, 0, 0x03, 0xe8,       // cum ASN 1000
                0, 1, 0, 0,             // a_rwnd
                1, 2, 3, 4,             // timestamp
                0, 0, 0x0f, 0xa0,       // cum PSN 4000
                0, 2, 0, 2,             // 2 gaps, 2 dups
                0, 2, 0, 3, 0, 6, 0, 9, // gaps
                0, 0, 0x0f, 0x9e, 0, 0, 0x0f, 0x9f, // dups
            ][..]
        );
        #[rustfmt::skip]
        assert_eq!(
            value(&ls_forward_psn()).as_ref(),
            &[0, 0, 0, 0, 0, 7, 0, 100, 0, 15, 0x0f, 0xff][..]
        );
    }

    /// Every proper prefix of `full` decodes to `Err` unless `ok_at(len)`, never panics.
    fn truncations<T: ChunkBody>(flags: u8, full: &Bytes, ok_at: impl Fn(usize) -> bool) {
        for n in 0..full.len() {
            let r = T::decode(flags, &full.slice(..n));
            assert_eq!(r.is_ok(), ok_at(n), "{} truncated to {n} bytes", T::NAME);
        }
    }

    #[test]
    fn truncations_are_errors_and_never_panic() {
        let d = ls_data();
        let fixed = LS_DATA_HEADER_LEN - 4;
        // Past the fixed part, a shorter LS-DATA is just less user data.
        truncations::<LsData>(d.flags(), &value(&d), |n| n >= fixed);
        truncations::<LsSack>(9, &value(&ls_sack()), |_| false);
        // A shorter whole number of entries is a shorter list.
        truncations::<LsForwardPsn>(0, &value(&ls_forward_psn()), |n| {
            n > 0 && n.is_multiple_of(4)
        });
        // Framed: a chunk whose length field claims more than the packet holds.
        let pkt = Packet {
            chunks: vec![Chunk::Unknown(RawChunk::try_from_body(&ls_sack()).unwrap())],
            ..Packet::default()
        };
        let wire = pkt.to_vec().unwrap();
        // (12 bytes are a common header without chunks: a valid packet.)
        for n in (0..wire.len()).filter(|n| *n != 12) {
            assert!(Packet::decode_unverified(&Bytes::copy_from_slice(&wire[..n])).is_err());
        }
    }

    fn sack_value(gaps: u16, dups: u16, tail: &[u8]) -> Bytes {
        let mut v = vec![0; 16];
        v.extend_from_slice(&gaps.to_be_bytes());
        v.extend_from_slice(&dups.to_be_bytes());
        v.extend_from_slice(tail);
        Bytes::from(v)
    }

    #[test]
    fn ls_sack_counts_must_match_the_length() {
        let inconsistent = Err(DecodeError::Inconsistent {
            what: "LS-SACK chunk",
            detail: "block and TSN counts do not match the chunk length",
        });
        assert!(LsSack::decode(0, &sack_value(1, 1, &[0; 8])).is_ok());
        assert_eq!(LsSack::decode(0, &sack_value(1, 1, &[0; 4])), inconsistent);
        assert_eq!(LsSack::decode(0, &sack_value(1, 1, &[0; 12])), inconsistent);
        assert_eq!(LsSack::decode(0, &sack_value(0, 0, &[0; 2])), inconsistent);
        // A lying count is refused before anything is allocated for it.
        assert_eq!(
            LsSack::decode(0, &sack_value(u16::MAX, u16::MAX, &[0; 8])),
            inconsistent
        );
    }

    #[test]
    fn ls_sack_psns_above_12_bits_are_refused() {
        let mut v = value(&ls_sack()).to_vec();
        v[12..16].copy_from_slice(&4096u32.to_be_bytes());
        assert!(matches!(
            LsSack::decode(0, &Bytes::from(v)),
            Err(DecodeError::Inconsistent { .. })
        ));
        let mut v = value(&ls_sack()).to_vec();
        let last = v.len() - 4;
        v[last..].copy_from_slice(&4096u32.to_be_bytes());
        assert!(matches!(
            LsSack::decode(0, &Bytes::from(v)),
            Err(DecodeError::Inconsistent { .. })
        ));
    }

    #[test]
    fn ls_forward_psn_needs_whole_in_range_entries() {
        let bad = |v: &[u8]| {
            assert!(
                matches!(
                    LsForwardPsn::decode(0, &Bytes::copy_from_slice(v)),
                    Err(DecodeError::Inconsistent { .. })
                ),
                "{v:?}"
            );
        };
        bad(&[]);
        bad(&[0, 1, 0]);
        bad(&[0, 1, 0, 2, 0]);
        bad(&[0, 16, 0, 2]); // PID 16
        bad(&[1, 0, 0, 2]); // PID 256
        bad(&[0, 1, 0x10, 0]); // PSN 4096
        assert_eq!(
            LsForwardPsn::decode(0, &Bytes::from_static(&[0, 15, 0x0f, 0xff])),
            Ok(LsForwardPsn {
                entries: vec![(15, 4095)]
            })
        );
    }

    fn out_of_range(
        chunk: &'static str,
        field: &'static str,
        value: u32,
        min: u32,
        max: u32,
    ) -> EncodeError {
        EncodeError::FieldOutOfRange {
            chunk,
            field,
            value,
            min,
            max,
        }
    }

    #[test]
    fn out_of_range_fields_are_encode_errors_not_corruption() {
        let d = LsData {
            pid: 16,
            ..ls_data()
        };
        assert_eq!(
            RawChunk::try_from_body(&d),
            Err(out_of_range("LS-DATA chunk", "PID", 16, 0, 15))
        );
        let d = LsData {
            psn: 4096,
            ..ls_data()
        };
        assert_eq!(
            RawChunk::try_from_body(&d),
            Err(out_of_range("LS-DATA chunk", "PSN", 4096, 0, 4095))
        );
        let s = LsSack {
            pid: 200,
            ..ls_sack()
        };
        assert_eq!(
            s.validate(),
            Err(out_of_range("LS-SACK chunk", "PID", 200, 0, 15))
        );
        let s = LsSack {
            cum_psn: 4096,
            ..ls_sack()
        };
        assert_eq!(
            s.validate(),
            Err(out_of_range(
                "LS-SACK chunk",
                "Cumulative PSN Ack",
                4096,
                0,
                4095
            ))
        );
        let s = LsSack {
            dup_psns: vec![1, u32::MAX],
            ..ls_sack()
        };
        assert_eq!(
            s.validate(),
            Err(out_of_range(
                "LS-SACK chunk",
                "duplicate PSN",
                u32::MAX,
                0,
                4095
            ))
        );
        let f = LsForwardPsn {
            entries: vec![(1, 1), (16, 1)],
        };
        assert_eq!(
            f.validate(),
            Err(out_of_range("LS-FORWARD-PSN chunk", "PID", 16, 0, 15))
        );
        let f = LsForwardPsn {
            entries: vec![(1, 4096)],
        };
        assert_eq!(
            f.validate(),
            Err(out_of_range(
                "LS-FORWARD-PSN chunk",
                "New Cumulative PSN",
                4096,
                0,
                4095
            ))
        );
        assert_eq!(
            LsForwardPsn::default().validate(),
            Err(out_of_range(
                "LS-FORWARD-PSN chunk",
                "number of entries",
                0,
                1,
                16_382
            ))
        );
        // The largest values are fine.
        assert_eq!(ls_data().validate(), Ok(()));
        assert_eq!(ls_sack().validate(), Ok(()));
        assert_eq!(ls_forward_psn().validate(), Ok(()));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "assertion")]
    fn encoding_an_out_of_range_pid_without_validation_panics_in_debug() {
        let _ = RawChunk::from_body(&LsData {
            pid: 16,
            ..ls_data()
        });
    }

    #[test]
    fn other_chunk_types_are_not_decoded_as_ls_chunks() {
        let raw = RawChunk::try_from_body(&ls_sack()).unwrap();
        assert_eq!(raw.decode_as::<LsData>(), None);
        assert_eq!(raw.decode_as::<LsForwardPsn>(), None);
        for t in [
            ChunkType::LS_DATA,
            ChunkType::LS_SACK,
            ChunkType::LS_FORWARD_PSN,
        ] {
            let raw = RawChunk {
                chunk_type: t,
                flags: 0,
                value: Bytes::new(),
            };
            assert!(matches!(Chunk::decode(raw), Ok(Chunk::Unknown(_))));
        }
    }

    #[test]
    fn load_sharing_supported_parameter() {
        use crate::param::{Param, ParamType};
        let mut v = Vec::new();
        Param::LoadSharingSupported.encode(&mut v);
        assert_eq!(v, [0x80, 0xb0, 0, 4]);
        assert_eq!(
            Param::decode(0x80b0, Bytes::new()),
            Ok(Param::LoadSharingSupported)
        );
        assert!(Param::decode(0x80b0, Bytes::from_static(&[0])).is_err());
        let ty = ParamType::LOAD_SHARING_SUPPORTED;
        assert!(ty.unrecognized_action().skips() && !ty.unrecognized_action().reports());
    }
}
