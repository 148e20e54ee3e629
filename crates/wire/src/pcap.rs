//! Minimal classic-pcap writer for SCTP-over-UDP traces.
//!
//! Each SCTP packet is wrapped in synthetic Ethernet II, IPv4 or IPv6, and
//! UDP headers (RFC 6951 encapsulation) so that the file opens directly in
//! Wireshark or tshark. Only `std` is used; nothing touches the network.
//!
//! Frames are written in the classic libpcap format with microsecond
//! timestamps and little-endian record headers, regardless of the host's
//! byte order, so the output is byte-for-byte deterministic.
//!
//! Wireshark decodes UDP port [`SCTP_UDP_PORT`] as SCTP by default; for other
//! ports pass `-d udp.port==PORT,sctp` to tshark.

use std::io::{self, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

/// UDP port registered for SCTP over UDP (RFC 6951), which Wireshark decodes as SCTP.
pub const SCTP_UDP_PORT: u16 = 9899;

/// Classic pcap magic number (microsecond timestamps).
const PCAP_MAGIC: u32 = 0xa1b2_c3d4;
/// Maximum number of bytes captured per frame, recorded in the global header.
const SNAPLEN_U16: u16 = u16::MAX;
/// [`SNAPLEN_U16`] as stored in the pcap headers.
const SNAPLEN: u32 = SNAPLEN_U16 as u32;
/// `LINKTYPE_ETHERNET`.
const LINKTYPE_ETHERNET: u32 = 1;

/// Made-up, locally administered unicast MAC used as the Ethernet source.
const SRC_MAC: [u8; 6] = [0x02, 0x00, 0x5c, 0x7a, 0x00, 0x01];
/// Made-up, locally administered unicast MAC used as the Ethernet destination.
const DST_MAC: [u8; 6] = [0x02, 0x00, 0x5c, 0x7a, 0x00, 0x02];

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;
const IPPROTO_UDP: u8 = 17;
const TTL: u8 = 64;

const ETH_HEADER_LEN: usize = 14;
const IPV4_HEADER_LEN: usize = 20;
const IPV6_HEADER_LEN: usize = 40;
const UDP_HEADER_LEN: usize = 8;

/// Writes SCTP packets to a classic pcap stream, each wrapped in synthetic
/// Ethernet II + IPv4/IPv6 + UDP headers.
///
/// IPv4 headers carry DF, TTL 64, and an identification field that starts at
/// 0 and increments (wrapping) with every IPv4 frame written. IPv6 headers
/// use hop limit 64 and flow label 0. Both IPv4 header and UDP checksums are
/// computed. Frames longer than the snap length (65535 bytes) are truncated
/// in the capture, with the original length recorded, as a capture tool would.
pub struct PcapWriter<W: Write> {
    out: W,
    /// Identification for the next IPv4 header.
    ip_id: u16,
    /// Scratch buffer reused for each frame.
    frame: Vec<u8>,
}

impl<W: Write + std::fmt::Debug> std::fmt::Debug for PcapWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PcapWriter")
            .field("out", &self.out)
            .field("ip_id", &self.ip_id)
            .finish_non_exhaustive()
    }
}

impl<W: Write> PcapWriter<W> {
    /// Writes the classic pcap global header (magic 0xa1b2c3d4, v2.4, snaplen 65535, linktype 1 = Ethernet).
    ///
    /// # Errors
    ///
    /// Returns any error from writing to `out`.
    pub fn new(mut out: W) -> io::Result<Self> {
        let mut hdr = [0u8; 24];
        hdr[0..4].copy_from_slice(&PCAP_MAGIC.to_le_bytes());
        hdr[4..6].copy_from_slice(&2u16.to_le_bytes());
        hdr[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone (8..12) and sigfigs (12..16) stay zero.
        hdr[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
        hdr[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&hdr)?;
        Ok(Self {
            out,
            ip_id: 0,
            frame: Vec::new(),
        })
    }

    /// One frame: Ethernet II + IPv4 (or IPv6, chosen by the address family; both addresses must be the same family, else `io::ErrorKind::InvalidInput`) + UDP + `sctp` as UDP payload. `ts` is time since the Unix epoch (or a virtual clock).
    ///
    /// # Errors
    ///
    /// Returns [`io::ErrorKind::InvalidInput`] if the address families differ,
    /// if `sctp` does not fit in a single IP datagram, or if `ts` does not fit
    /// in the 32-bit seconds field of a pcap record. Nothing is written in
    /// those cases. Otherwise returns any error from the underlying writer.
    pub fn write_sctp(
        &mut self,
        ts: Duration,
        src: SocketAddr,
        dst: SocketAddr,
        sctp: &[u8],
    ) -> io::Result<()> {
        let ts_sec = u32::try_from(ts.as_secs()).map_err(|_| {
            invalid_input("timestamp does not fit in the 32-bit pcap seconds field")
        })?;
        let ts_frac = ts.subsec_micros();

        self.frame.clear();
        match (src, dst) {
            (SocketAddr::V4(s), SocketAddr::V4(d)) => {
                // The IPv4 total length (header + UDP + payload) is a u16.
                let too_large = |_| invalid_input("SCTP packet too large for one IPv4 datagram");
                let total_len = u16::try_from(IPV4_HEADER_LEN + UDP_HEADER_LEN + sctp.len())
                    .map_err(too_large)?;
                let udp_len = u16::try_from(UDP_HEADER_LEN + sctp.len()).map_err(too_large)?;
                let id = self.ip_id;
                build_v4(
                    &mut self.frame,
                    id,
                    (total_len, udp_len),
                    (*s.ip(), s.port()),
                    (*d.ip(), d.port()),
                    sctp,
                );
                self.ip_id = id.wrapping_add(1);
            }
            (SocketAddr::V6(s), SocketAddr::V6(d)) => {
                // The IPv6 payload length (UDP header + payload) is a u16;
                // jumbograms are not supported.
                let udp_len = u16::try_from(UDP_HEADER_LEN + sctp.len())
                    .map_err(|_| invalid_input("SCTP packet too large for one IPv6 packet"))?;
                build_v6(
                    &mut self.frame,
                    udp_len,
                    (*s.ip(), s.port()),
                    (*d.ip(), d.port()),
                    sctp,
                );
            }
            _ => {
                return Err(invalid_input(
                    "source and destination addresses must be of the same family",
                ));
            }
        }

        let orig_len = u32::try_from(self.frame.len())
            .map_err(|_| invalid_input("frame length does not fit in 32 bits"))?;
        let incl_len = orig_len.min(SNAPLEN);
        let captured = self
            .frame
            .get(..usize::from(SNAPLEN_U16))
            .unwrap_or(self.frame.as_slice());

        let mut rec = [0u8; 16];
        rec[0..4].copy_from_slice(&ts_sec.to_le_bytes());
        rec[4..8].copy_from_slice(&ts_frac.to_le_bytes());
        rec[8..12].copy_from_slice(&incl_len.to_le_bytes());
        rec[12..16].copy_from_slice(&orig_len.to_le_bytes());
        self.out.write_all(&rec)?;
        self.out.write_all(captured)
    }

    /// Flushes and returns the inner writer.
    ///
    /// # Errors
    ///
    /// Returns any error from flushing the underlying writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.out.flush()?;
        Ok(self.out)
    }
}

fn invalid_input(msg: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg)
}

/// Appends the Ethernet II header.
fn push_ethernet(frame: &mut Vec<u8>, ethertype: u16) {
    frame.extend_from_slice(&DST_MAC);
    frame.extend_from_slice(&SRC_MAC);
    frame.extend_from_slice(&ethertype.to_be_bytes());
}

/// Builds a full IPv4 frame; `total_len` is the IPv4 total length
/// (`20 + 8 + sctp.len()`) and `udp_len` the UDP length (`8 + sctp.len()`).
fn build_v4(
    frame: &mut Vec<u8>,
    id: u16,
    (total_len, udp_len): (u16, u16),
    (src, sport): (Ipv4Addr, u16),
    (dst, dport): (Ipv4Addr, u16),
    sctp: &[u8],
) {
    frame.reserve(ETH_HEADER_LEN + usize::from(total_len));
    push_ethernet(frame, ETHERTYPE_IPV4);

    let mut ip = [0u8; IPV4_HEADER_LEN];
    ip[0] = 0x45; // version 4, IHL 5 words
    ip[1] = 0; // DSCP/ECN
    ip[2..4].copy_from_slice(&total_len.to_be_bytes());
    ip[4..6].copy_from_slice(&id.to_be_bytes());
    ip[6..8].copy_from_slice(&0x4000u16.to_be_bytes()); // DF, fragment offset 0
    ip[8] = TTL;
    ip[9] = IPPROTO_UDP;
    // ip[10..12] checksum, filled below
    ip[12..16].copy_from_slice(&src.octets());
    ip[16..20].copy_from_slice(&dst.octets());
    let csum = fold(sum_words(0, &ip));
    ip[10..12].copy_from_slice(&(!csum).to_be_bytes());
    frame.extend_from_slice(&ip);

    // Pseudo-header: src, dst, zero, protocol, UDP length.
    let mut acc = sum_words(0, &src.octets());
    acc = sum_words(acc, &dst.octets());
    acc = sum_words(acc, &[0, IPPROTO_UDP]);
    acc = sum_words(acc, &udp_len.to_be_bytes());
    push_udp(frame, acc, sport, dport, udp_len, sctp);
}

/// Builds a full IPv6 frame; `udp_len` is the UDP length, i.e. `8 + sctp.len()`.
fn build_v6(
    frame: &mut Vec<u8>,
    udp_len: u16,
    (src, sport): (Ipv6Addr, u16),
    (dst, dport): (Ipv6Addr, u16),
    sctp: &[u8],
) {
    frame.reserve(ETH_HEADER_LEN + IPV6_HEADER_LEN + usize::from(udp_len));
    push_ethernet(frame, ETHERTYPE_IPV6);

    let mut ip = [0u8; IPV6_HEADER_LEN];
    ip[0] = 0x60; // version 6, traffic class 0, flow label 0
    ip[4..6].copy_from_slice(&udp_len.to_be_bytes()); // payload length
    ip[6] = IPPROTO_UDP; // next header
    ip[7] = TTL; // hop limit
    ip[8..24].copy_from_slice(&src.octets());
    ip[24..40].copy_from_slice(&dst.octets());
    frame.extend_from_slice(&ip);

    // Pseudo-header (RFC 8200 section 8.1): src, dst, 32-bit upper-layer
    // length, 24 zero bits, next header.
    let mut acc = sum_words(0, &src.octets());
    acc = sum_words(acc, &dst.octets());
    acc = sum_words(acc, &u32::from(udp_len).to_be_bytes());
    acc = sum_words(acc, &[0, 0, 0, IPPROTO_UDP]);
    push_udp(frame, acc, sport, dport, udp_len, sctp);
}

/// Appends the UDP header and payload; `pseudo` is the partial one's
/// complement sum over the IP pseudo-header.
fn push_udp(frame: &mut Vec<u8>, pseudo: u64, sport: u16, dport: u16, udp_len: u16, sctp: &[u8]) {
    let mut udp = [0u8; UDP_HEADER_LEN];
    udp[0..2].copy_from_slice(&sport.to_be_bytes());
    udp[2..4].copy_from_slice(&dport.to_be_bytes());
    udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
    // udp[6..8] checksum, filled below
    let acc = sum_words(sum_words(pseudo, &udp), sctp);
    let csum = udp_checksum(fold(acc));
    udp[6..8].copy_from_slice(&csum.to_be_bytes());
    frame.extend_from_slice(&udp);
    frame.extend_from_slice(sctp);
}

/// Adds `data` as big-endian 16-bit words to `acc`, zero-padding an odd
/// trailing byte. Only the last slice summed into an accumulator may have an
/// odd length.
fn sum_words(mut acc: u64, data: &[u8]) -> u64 {
    let mut words = data.chunks_exact(2);
    for w in &mut words {
        acc += u64::from(u16::from_be_bytes([w[0], w[1]]));
    }
    if let [last] = words.remainder() {
        acc += u64::from(u16::from_be_bytes([*last, 0]));
    }
    acc
}

/// Folds carries into a 16-bit one's complement sum.
fn fold(mut acc: u64) -> u16 {
    loop {
        match u16::try_from(acc) {
            Ok(folded) => return folded,
            Err(_) => acc = (acc & 0xffff) + (acc >> 16),
        }
    }
}

/// Final UDP checksum from the folded sum: a computed zero is sent as
/// 0xffff (RFC 768; RFC 8200 forbids zero over IPv6).
fn udp_checksum(folded: u16) -> u16 {
    match !folded {
        0 => 0xffff,
        c => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Largest SCTP packet that fits in one IPv4 datagram.
    const MAX_SCTP_V4: usize = 65_535 - IPV4_HEADER_LEN - UDP_HEADER_LEN;
    /// Largest SCTP packet that fits in one IPv6 packet (no jumbograms).
    const MAX_SCTP_V6: usize = 65_535 - UDP_HEADER_LEN;

    fn v4(a: [u8; 4], port: u16) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::from(a), port))
    }

    fn v6(a: &str, port: u16) -> SocketAddr {
        SocketAddr::from((a.parse::<Ipv6Addr>().unwrap(), port))
    }

    fn be16(b: &[u8], at: usize) -> u16 {
        u16::from_be_bytes([b[at], b[at + 1]])
    }

    fn le32(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
    }

    /// Splits a pcap byte stream into (ts_sec, ts_usec, orig_len, frame).
    fn records(file: &[u8]) -> Vec<(u32, u32, u32, &[u8])> {
        let mut out = Vec::new();
        let mut pos = 24;
        while pos < file.len() {
            let incl = le32(file, pos + 8) as usize;
            out.push((
                le32(file, pos),
                le32(file, pos + 4),
                le32(file, pos + 12),
                &file[pos + 16..pos + 16 + incl],
            ));
            pos += 16 + incl;
        }
        assert_eq!(pos, file.len());
        out
    }

    fn write_one(ts: Duration, src: SocketAddr, dst: SocketAddr, sctp: &[u8]) -> Vec<u8> {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        w.write_sctp(ts, src, dst, sctp).unwrap();
        w.into_inner().unwrap()
    }

    /// Recomputes the UDP checksum over the pseudo-header and the datagram
    /// (including the stored checksum); a correct one sums to 0xffff.
    fn udp_verifies(pseudo: &[u8], udp: &[u8]) -> bool {
        fold(sum_words(sum_words(0, pseudo), udp)) == 0xffff
    }

    #[test]
    fn global_header() {
        let w = PcapWriter::new(Vec::new()).unwrap();
        let bytes = w.into_inner().unwrap();
        assert_eq!(
            bytes,
            [
                0xd4, 0xc3, 0xb2, 0xa1, // magic, little-endian
                2, 0, 4, 0, // version 2.4
                0, 0, 0, 0, // thiszone
                0, 0, 0, 0, // sigfigs
                0xff, 0xff, 0, 0, // snaplen 65535
                1, 0, 0, 0, // LINKTYPE_ETHERNET
            ]
        );
    }

    #[test]
    fn ipv4_header_checksum_known_vector() {
        // Classic example header with checksum 0xb861.
        let hdr = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(!fold(sum_words(0, &hdr)), 0xb861);
    }

    #[test]
    fn ipv4_frame_layout_and_checksums() {
        let sctp = [
            0x13, 0x88, 0x13, 0x89, 1, 2, 3, 4, 0, 0, 0, 0, 0x0b, 0, 0, 4, 0xab,
        ];
        let src = v4([10, 0, 0, 1], 5000);
        let dst = v4([10, 0, 0, 2], SCTP_UDP_PORT);
        let ts = Duration::new(1_700_000_000, 123_456_789);
        let file = write_one(ts, src, dst, &sctp);
        let recs = records(&file);
        assert_eq!(recs.len(), 1);
        let (sec, usec, orig, f) = recs[0];
        assert_eq!((sec, usec), (1_700_000_000, 123_456));
        assert_eq!(f.len(), 14 + 20 + 8 + sctp.len());
        assert_eq!(orig as usize, f.len());

        // Ethernet
        assert_eq!(&f[0..6], &DST_MAC);
        assert_eq!(&f[6..12], &SRC_MAC);
        assert_eq!(be16(f, 12), 0x0800);

        // IPv4
        let ip = &f[14..34];
        assert_eq!(ip[0], 0x45);
        assert_eq!(ip[1], 0);
        assert_eq!(be16(ip, 2) as usize, 20 + 8 + sctp.len());
        assert_eq!(be16(ip, 4), 0, "first identification");
        assert_eq!(be16(ip, 6), 0x4000, "DF set, offset 0");
        assert_eq!(ip[8], 64);
        assert_eq!(ip[9], 17);
        assert_eq!(&ip[12..16], &[10, 0, 0, 1]);
        assert_eq!(&ip[16..20], &[10, 0, 0, 2]);
        assert_eq!(fold(sum_words(0, ip)), 0xffff, "IPv4 header checksum");
        let mut zeroed = [0u8; 20];
        zeroed.copy_from_slice(ip);
        zeroed[10] = 0;
        zeroed[11] = 0;
        assert_eq!(be16(ip, 10), !fold(sum_words(0, &zeroed)));

        // UDP
        let udp = &f[34..];
        assert_eq!(be16(udp, 0), 5000);
        assert_eq!(be16(udp, 2), 9899);
        assert_eq!(be16(udp, 4) as usize, 8 + sctp.len());
        assert_ne!(be16(udp, 6), 0);
        assert_eq!(&udp[8..], &sctp);
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&[10, 0, 0, 1, 10, 0, 0, 2, 0, 17]);
        pseudo.extend_from_slice(&(udp.len() as u16).to_be_bytes());
        assert!(udp_verifies(&pseudo, udp), "UDP checksum (IPv4)");
    }

    #[test]
    fn ipv6_frame_layout_and_checksums() {
        let sctp = [
            0x13, 0x88, 0x13, 0x89, 0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 0, 0x0b, 0, 0, 4,
        ];
        let src = v6("2001:db8::1", 4000);
        let dst = v6("2001:db8::2", SCTP_UDP_PORT);
        let file = write_one(Duration::from_micros(1_500_001), src, dst, &sctp);
        let recs = records(&file);
        let (sec, usec, _, f) = recs[0];
        assert_eq!((sec, usec), (1, 500_001));
        assert_eq!(f.len(), 14 + 40 + 8 + sctp.len());
        assert_eq!(be16(f, 12), 0x86dd);

        let ip = &f[14..54];
        assert_eq!(&ip[0..4], &[0x60, 0, 0, 0]);
        assert_eq!(be16(ip, 4) as usize, 8 + sctp.len());
        assert_eq!(ip[6], 17);
        assert_eq!(ip[7], 64);
        let s: Ipv6Addr = "2001:db8::1".parse().unwrap();
        let d: Ipv6Addr = "2001:db8::2".parse().unwrap();
        assert_eq!(&ip[8..24], &s.octets());
        assert_eq!(&ip[24..40], &d.octets());

        let udp = &f[54..];
        assert_eq!(be16(udp, 0), 4000);
        assert_eq!(be16(udp, 2), 9899);
        assert_eq!(be16(udp, 4) as usize, 8 + sctp.len());
        assert_ne!(be16(udp, 6), 0, "UDP checksum is mandatory over IPv6");
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&s.octets());
        pseudo.extend_from_slice(&d.octets());
        pseudo.extend_from_slice(&(udp.len() as u32).to_be_bytes());
        pseudo.extend_from_slice(&[0, 0, 0, 17]);
        assert!(udp_verifies(&pseudo, udp), "UDP checksum (IPv6)");
    }

    #[test]
    fn odd_length_payload_checksum() {
        for len in [0usize, 1, 3, 255, 1001] {
            let sctp: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            let file = write_one(
                Duration::ZERO,
                v4([192, 0, 2, 1], 1),
                v4([192, 0, 2, 2], 2),
                &sctp,
            );
            let (_, _, _, f) = records(&file)[0];
            let udp = &f[34..];
            let mut pseudo = vec![192, 0, 2, 1, 192, 0, 2, 2, 0, 17];
            pseudo.extend_from_slice(&(udp.len() as u16).to_be_bytes());
            assert!(udp_verifies(&pseudo, udp), "len {len}");
        }
    }

    #[test]
    fn zero_udp_checksum_is_sent_as_ffff() {
        let src = v4([192, 0, 2, 1], 1234);
        let dst = v4([192, 0, 2, 2], SCTP_UDP_PORT);
        // Sum with a zero payload word, then pick the word that makes the
        // folded sum 0xffff, i.e. a computed checksum of zero.
        let mut pseudo = vec![192, 0, 2, 1, 192, 0, 2, 2, 0, 17, 0, 10];
        pseudo.extend_from_slice(&[0x04, 0xd2, 0x26, 0xab, 0, 10, 0, 0]);
        let s = fold(sum_words(0, &pseudo));
        let word = 0xffff - s;
        let file = write_one(Duration::ZERO, src, dst, &word.to_be_bytes());
        let (_, _, _, f) = records(&file)[0];
        assert_eq!(be16(f, 34 + 6), 0xffff);
    }

    #[test]
    fn ip_identification_increments() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let a = v4([127, 0, 0, 1], 1);
        let b = v4([127, 0, 0, 2], 2);
        w.write_sctp(Duration::ZERO, a, b, &[0; 12]).unwrap();
        w.write_sctp(Duration::ZERO, v6("::1", 1), v6("::2", 2), &[0; 12])
            .unwrap();
        w.write_sctp(Duration::ZERO, b, a, &[0; 12]).unwrap();
        w.write_sctp(Duration::ZERO, a, b, &[0; 12]).unwrap();
        let file = w.into_inner().unwrap();
        let ids: Vec<u16> = records(&file)
            .iter()
            .filter(|r| be16(r.3, 12) == 0x0800)
            .map(|r| be16(r.3, 14 + 4))
            .collect();
        assert_eq!(ids, [0, 1, 2]);
    }

    #[test]
    fn mixed_families_rejected() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let e = w
            .write_sctp(Duration::ZERO, v4([1, 2, 3, 4], 1), v6("::1", 2), &[0; 12])
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        let e = w
            .write_sctp(Duration::ZERO, v6("::1", 2), v4([1, 2, 3, 4], 1), &[0; 12])
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(w.into_inner().unwrap().len(), 24, "nothing written");
    }

    #[test]
    fn oversized_payload_rejected() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let a4 = v4([1, 2, 3, 4], 1);
        let b4 = v4([1, 2, 3, 5], 2);
        let big = vec![0u8; MAX_SCTP_V4 + 1];
        let e = w.write_sctp(Duration::ZERO, a4, b4, &big).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        let big6 = vec![0u8; MAX_SCTP_V6 + 1];
        let e = w
            .write_sctp(Duration::ZERO, v6("::1", 1), v6("::2", 2), &big6)
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        let e = w
            .write_sctp(Duration::from_secs(1 << 32), a4, b4, &[0; 12])
            .unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(w.into_inner().unwrap().len(), 24, "nothing written");
    }

    #[test]
    fn largest_payloads_accepted_and_truncated_to_snaplen() {
        let mut w = PcapWriter::new(Vec::new()).unwrap();
        let a4 = v4([1, 2, 3, 4], 1);
        let b4 = v4([1, 2, 3, 5], 2);
        w.write_sctp(Duration::ZERO, a4, b4, &vec![0xa5; MAX_SCTP_V4])
            .unwrap();
        w.write_sctp(
            Duration::ZERO,
            v6("::1", 1),
            v6("::2", 2),
            &vec![0x5a; MAX_SCTP_V6],
        )
        .unwrap();
        let file = w.into_inner().unwrap();
        let recs = records(&file);
        assert_eq!(recs.len(), 2);
        let (_, _, orig, f) = recs[0];
        assert_eq!(orig as usize, 14 + 65_535);
        assert_eq!(f.len(), 65_535);
        assert_eq!(be16(f, 14 + 2), 65_535, "IPv4 total length");
        let (_, _, orig, f) = recs[1];
        assert_eq!(orig as usize, 14 + 40 + 65_535);
        assert_eq!(f.len(), 65_535);
        assert_eq!(be16(f, 14 + 4), 65_535, "IPv6 payload length");
    }
}
