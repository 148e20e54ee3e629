//! `braid demo` and `braid decode`: the wire codec, end to end, on the command line.

use std::fs::File;
use std::io::BufWriter;
use std::net::{Ipv4Addr, SocketAddr, SocketAddrV4};
use std::path::Path;
use std::time::Duration;

use braid_wire::pcap::{PcapWriter, SCTP_UDP_PORT};
use braid_wire::{Chunk, Packet, sample};
use bytes::Bytes;

/// Errors the demo reports to the user.
type Error = Box<dyn std::error::Error>;

pub(crate) fn run(pcap: Option<&Path>, hex: bool) -> Result<(), Error> {
    let mut writer = match pcap {
        Some(p) => Some(PcapWriter::new(BufWriter::new(
            File::create(p).map_err(|e| format!("cannot create {}: {e}", p.display()))?,
        ))?),
        None => None,
    };
    let a = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 1), SCTP_UDP_PORT));
    let b = SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::new(10, 0, 0, 2), SCTP_UDP_PORT));
    println!("{:<24} {:>6}  decoded back", "sample", "bytes");
    let samples = sample::every_chunk_type();
    for (i, (label, pkt)) in samples.iter().enumerate() {
        let wire = pkt.to_vec()?;
        let back = Packet::decode(&Bytes::from(wire.clone()))?;
        if &back != pkt || back.to_vec()? != wire {
            return Err(format!("{label}: decode(encode(p)) differs from p").into());
        }
        println!("{label:<24} {:>6}  {}", wire.len(), summary(&back));
        if hex {
            println!("    {}", to_hex(&wire));
        }
        if let Some(w) = writer.as_mut() {
            w.write_sctp(Duration::from_millis(i as u64), a, b, &wire)?;
        }
    }
    println!(
        "{} packets encoded and decoded back byte-exact.",
        samples.len()
    );
    if let (Some(w), Some(p)) = (writer, pcap) {
        w.into_inner()?;
        println!(
            "pcap written to {} (open it in Wireshark, or: tshark -r {} -o 'sctp.checksum:CRC 32c')",
            p.display(),
            p.display()
        );
    }
    Ok(())
}

pub(crate) fn decode(hex: &str, verify: bool) -> Result<(), Error> {
    let bytes = Bytes::from(from_hex(hex)?);
    let pkt = if verify {
        Packet::decode(&bytes)?
    } else {
        Packet::decode_unverified(&bytes)?
    };
    println!("{pkt:#?}");
    Ok(())
}

fn summary(p: &Packet) -> String {
    p.chunks
        .iter()
        .map(|c| match c {
            Chunk::Unknown(r) => format!(
                "type {:#04x} ({:?})",
                r.chunk_type.0,
                r.chunk_type.unrecognized_action()
            ),
            c => c.name().trim_end_matches(" chunk").to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn from_hex(s: &str) -> Result<Vec<u8>, Error> {
    let digits: Vec<u8> = s.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err("hex input has an odd number of digits".into());
    }
    digits
        .chunks(2)
        .map(|p| {
            let s = std::str::from_utf8(p).map_err(|_| "hex input is not ASCII")?;
            u8::from_str_radix(s, 16).map_err(|_| format!("not a hex byte: {s:?}").into())
        })
        .collect()
}
