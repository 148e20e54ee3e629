//! ASCONF (RFC 5061 §4.1.1) and ASCONF-ACK (§4.1.2).
//!
//! ```text
//! ASCONF (type 0xC1):
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |                       Sequence Number                         |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! /                    Address Parameter (IPv4/IPv6)              /
//! /                    ASCONF Parameter #1..#N                    /
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! ASCONF-ACK (type 0x80):
//! |                       Sequence Number                         |
//! /                 ASCONF Parameter Response #1..#N              /
//! ```

use std::net::IpAddr;

use bytes::Bytes;

use super::{ChunkBody, ChunkType};
use crate::codec::{Reader, padding, put_u32, put_zeros};
use crate::error::{DecodeError, Result};
use crate::param::{self, Param};

/// An ASCONF chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asconf {
    /// Serial number of this request.
    pub serial: u32,
    /// An address of the sender, used to find the association (may be a wildcard).
    pub address: IpAddr,
    /// Add/Delete IP Address, Set Primary Address and other requests.
    pub params: Vec<Param>,
}

/// An ASCONF-ACK chunk.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AsconfAck {
    /// Serial number of the ASCONF answered.
    pub serial: u32,
    /// Success Indication / Error Cause Indication responses.
    pub params: Vec<Param>,
}

impl ChunkBody for Asconf {
    const TYPE: ChunkType = ChunkType::ASCONF;
    const NAME: &'static str = "ASCONF chunk";

    fn decode(_flags: u8, value: &Bytes) -> Result<Self> {
        let mut r = Reader::new(value, Self::NAME);
        let serial = r.u32()?;
        let (ty, val) = r.tlv()?;
        let address = Param::decode(ty, val)?
            .address()
            .ok_or(DecodeError::Inconsistent {
                what: Self::NAME,
                detail: "first parameter is not an IPv4 or IPv6 Address parameter",
            })?;
        Ok(Self {
            serial,
            address,
            params: param::decode_list(&mut r)?,
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) {
        put_u32(out, self.serial);
        let start = out.len();
        Param::from_address(self.address).encode_unpadded(out);
        if !self.params.is_empty() {
            put_zeros(out, padding(out.len() - start));
        }
        param::encode_list(&self.params, out);
    }
}

impl ChunkBody for AsconfAck {
    const TYPE: ChunkType = ChunkType::ASCONF_ACK;
    const NAME: &'static str = "ASCONF-ACK chunk";

    fn decode(_flags: u8, value: &Bytes) -> Result<Self> {
        let mut r = Reader::new(value, Self::NAME);
        Ok(Self {
            serial: r.u32()?,
            params: param::decode_list(&mut r)?,
        })
    }

    fn encode_value(&self, out: &mut Vec<u8>) {
        put_u32(out, self.serial);
        param::encode_list(&self.params, out);
    }
}
