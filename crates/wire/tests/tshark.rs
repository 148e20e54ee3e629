//! Wireshark cross-check: every sample packet ([`sample::every_chunk_type`], plus one packet
//! bundling all their chunks) is written to a pcap with [`PcapWriter`], over IPv4 and IPv6
//! in turn, and decoded by Wireshark's `tshark` with CRC32c checking on (`-T pdml`).
//!
//! For every frame: the SCTP checksum is Good, the IPv4 header and UDP checksums are Good,
//! there is no `_ws.malformed` and no expert in the Malformed or Checksum groups (valid
//! packets may raise other experts, e.g. "Zero Advertised Receiver Window Credit", which are
//! only printed), and the common header fields are the ones encoded.
//!
//! For every chunk: the list of every named field tshark shows inside it, in tree order
//! (nested parameters, causes and chunks included, plus the `data.data` payload dissected
//! outside the `sctp` tree), must equal the list built here from the sample's structs:
//! types, flags and flag bits, lengths (computed from the RFC layouts, not by the codec),
//! values, and padding. Renderings and field names follow `tests/TSHARK_FIELDS.md` (4.0).
//!
//! Coverage: every chunk type, parameter type and cause code the codec decodes into a
//! typed value (found by probing the decoders, not by a list kept here) must be seen by
//! tshark in at least one frame, so a new type without a sample fails this test.
//!
//! If `tshark` is not installed this test fails (run `scripts/setup.sh`), unless
//! `BRAID_SKIP_TSHARK=1` is set. `BRAID_TSHARK_KEEP=1` keeps the pcap and PDML.

use std::collections::BTreeSet;
use std::fmt::{Display, Write as _};
use std::fs::{self, File};
use std::io::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use braid_wire::cause::ErrorCause;
use braid_wire::chunk::{Chunk, GapAckBlock, RawChunk};
use braid_wire::param::Param;
use braid_wire::pcap::{PcapWriter, SCTP_UDP_PORT};
use braid_wire::{ChunkType, Packet, sample};
use bytes::Bytes;

/// How long tshark may take before it is killed and the test fails. Measured by counting
/// polls, as the workspace keeps clocks out of its code (clippy.toml).
const TSHARK_TIMEOUT: Duration = Duration::from_secs(60);
const TSHARK_POLL: Duration = Duration::from_millis(20);

/// The preferences of `tests/TSHARK_FIELDS.md`: CRC32c checking (exact spelling, or it is
/// silently ignored), IP/UDP checksum checks, absolute TSNs, no TSN analysis, no reassembly,
/// payloads to `data`.
const TSHARK_PREFS: &[&str] = &[
    "sctp.checksum:CRC 32c",
    "ip.check_checksum:TRUE",
    "udp.check_checksum:TRUE",
    "sctp.relative_tsns:FALSE",
    "sctp.tsn_analysis:FALSE",
    "sctp.reassembly:FALSE",
    "sctp.ulp_dissection:FALSE",
];

/// `_ws.expert.group` values that mean the encoding is wrong.
const EXPERT_GROUP_CHECKSUM: u32 = 0x0100_0000;
const EXPERT_GROUP_MALFORMED: u32 = 0x0700_0000;

#[test]
fn tshark_decodes_every_sample_as_encoded() {
    let Some(version) = tshark_version() else {
        return;
    };
    let frames = frames();
    let dir = TempDir::new();
    let pcap = dir.path().join("samples.pcap");
    write_pcap(&pcap, &frames);

    let pdml = run_tshark(&pcap, dir.path());
    let doc = roxmltree::Document::parse(&pdml).expect("tshark's PDML is well-formed XML");
    let packets: Vec<_> = doc
        .root_element()
        .children()
        .filter(|n| n.has_tag_name("packet"))
        .collect();
    assert_eq!(
        packets.len(),
        frames.len(),
        "tshark decoded a different number of frames than were written"
    );

    let mut report = Report::default();
    for (i, (frame, node)) in frames.iter().zip(&packets).enumerate() {
        check_frame(i + 1, frame, *node, &mut report);
    }
    check_coverage(&mut report);

    println!("{version}: {} frames decoded", frames.len());
    println!("frame  {:<30} chunk fields compared", "sample");
    for (i, (label, fields)) in report.per_frame.iter().enumerate() {
        println!("{:>5}  {label:<30} {fields:>6}", i + 1);
    }
    let total: usize = report.per_frame.iter().map(|(_, f)| f).sum();
    println!(
        "{total} chunk fields and {} IP/UDP/SCTP header fields compared",
        report.header_fields
    );
    for note in &report.notes {
        println!("note: {note}");
    }
    if !report.failures.is_empty() {
        panic!(
            "tshark disagrees with the codec ({} problems):\n\n{}",
            report.failures.len(),
            report.failures.join("\n\n")
        );
    }
}

// ---------------------------------------------------------------------------------------
// Setup: frames, pcap, tshark.
// ---------------------------------------------------------------------------------------

/// One pcap frame: a sample packet, its encoding and its UDP endpoints.
struct Frame {
    label: String,
    packet: Packet,
    wire: Vec<u8>,
    src: SocketAddr,
    dst: SocketAddr,
}

/// The samples, alternately over IPv4 and IPv6, then one packet bundling all their chunks
/// (so chunks follow each other, and follow a DATA payload, inside one packet).
fn frames() -> Vec<Frame> {
    let mut packets: Vec<(String, Packet)> = sample::every_chunk_type()
        .into_iter()
        .map(|(label, p)| (label.to_string(), p))
        .collect();
    let mut bundle = packets[0].1.clone();
    bundle.chunks = packets
        .iter()
        .flat_map(|(_, p)| p.chunks.iter().cloned())
        .collect();
    packets.push(("bundle of every sample chunk".to_string(), bundle));

    let v4 = |last| IpAddr::V4(Ipv4Addr::new(192, 0, 2, last));
    let v6 = |last| IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, last));
    packets
        .into_iter()
        .enumerate()
        .map(|(i, (label, packet))| {
            let wire = packet
                .to_vec()
                .unwrap_or_else(|e| panic!("{label}: encode: {e}"));
            let (src, dst) = if i % 2 == 0 {
                (v4(1), v4(2))
            } else {
                (v6(1), v6(2))
            };
            Frame {
                label,
                packet,
                wire,
                src: SocketAddr::new(src, SCTP_UDP_PORT),
                dst: SocketAddr::new(dst, SCTP_UDP_PORT),
            }
        })
        .collect()
}

fn write_pcap(path: &Path, frames: &[Frame]) {
    let file = File::create(path).unwrap_or_else(|e| panic!("create {}: {e}", path.display()));
    let mut w = PcapWriter::new(std::io::BufWriter::new(file)).expect("pcap header");
    for (i, f) in frames.iter().enumerate() {
        w.write_sctp(Duration::from_millis(i as u64), f.src, f.dst, &f.wire)
            .unwrap_or_else(|e| panic!("{}: write pcap frame: {e}", f.label));
    }
    w.into_inner().expect("flush pcap");
}

/// `tshark --version`'s first line, or `None` if tshark is missing and
/// `BRAID_SKIP_TSHARK=1` (a missing tshark otherwise fails the test).
fn tshark_version() -> Option<String> {
    match Command::new("tshark")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
    {
        Ok(out) if out.status.success() => Some(
            String::from_utf8_lossy(&out.stdout)
                .lines()
                .next()
                .unwrap_or("tshark")
                .trim_end_matches('.')
                .to_string(),
        ),
        Ok(out) => panic!(
            "`tshark --version` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        ),
        Err(e) if std::env::var("BRAID_SKIP_TSHARK").as_deref() == Ok("1") => {
            // Written to the stderr handle, not with eprintln!, so that the test harness
            // does not capture it: the skip must be seen.
            let _ = writeln!(
                std::io::stderr(),
                "\n**********************************************************************\n\
                 ** SKIPPED: the Wireshark cross-check did NOT run (tshark: {e}).\n\
                 ** BRAID_SKIP_TSHARK=1 is set. Run scripts/setup.sh to install tshark.\n\
                 **********************************************************************\n"
            );
            None
        }
        Err(e) => panic!(
            "tshark is not available ({e}). The Wireshark cross-check needs it: run \
             scripts/setup.sh (installs tshark), or set BRAID_SKIP_TSHARK=1 to skip this test."
        ),
    }
}

/// Runs tshark on `pcap` and returns its PDML; kills it after [`TSHARK_TIMEOUT`].
fn run_tshark(pcap: &Path, dir: &Path) -> String {
    let out_path = dir.join("samples.pdml");
    let err_path = dir.join("tshark.stderr");
    // An empty personal configuration, so a developer's own preferences change nothing.
    let conf = dir.join("wireshark-config");
    fs::create_dir_all(&conf).expect("create tshark config dir");
    let mut cmd = Command::new("tshark");
    cmd.arg("-n").arg("-r").arg(pcap);
    for pref in TSHARK_PREFS {
        cmd.arg("-o").arg(pref);
    }
    cmd.args([
        "-d",
        &format!("udp.port=={SCTP_UDP_PORT},sctp"),
        "-T",
        "pdml",
    ])
    .env("WIRESHARK_CONFIG_DIR", &conf)
    .stdin(Stdio::null())
    .stdout(File::create(&out_path).expect("create PDML file"))
    .stderr(File::create(&err_path).expect("create stderr file"));
    let mut child = cmd.spawn().expect("spawn tshark");
    let mut polls_left = TSHARK_TIMEOUT.as_millis() / TSHARK_POLL.as_millis();
    let status = loop {
        match child.try_wait().expect("wait for tshark") {
            Some(status) => break status,
            None if polls_left == 0 => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("tshark did not finish within {TSHARK_TIMEOUT:?}: {cmd:?}");
            }
            None => {
                polls_left -= 1;
                std::thread::sleep(TSHARK_POLL);
            }
        }
    };
    let stderr = fs::read_to_string(&err_path).unwrap_or_default();
    assert!(
        status.success(),
        "tshark failed ({status}): {cmd:?}\n{stderr}"
    );
    fs::read_to_string(&out_path).expect("read tshark's PDML")
}

/// A fresh directory under the system temp dir, removed on drop (kept with
/// `BRAID_TSHARK_KEEP=1`).
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        // Unique: the process id, and a fresh name if one is left over from an earlier run.
        for n in 0u32.. {
            let path =
                std::env::temp_dir().join(format!("braid-wire-tshark-{}-{n}", std::process::id()));
            match fs::create_dir(&path) {
                Ok(()) => return Self(path),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => panic!("create {}: {e}", path.display()),
            }
        }
        unreachable!("no free temp dir name")
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::env::var("BRAID_TSHARK_KEEP").as_deref() == Ok("1") {
            eprintln!("BRAID_TSHARK_KEEP=1: kept {}", self.0.display());
        } else {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

// ---------------------------------------------------------------------------------------
// Checking tshark's decoding.
// ---------------------------------------------------------------------------------------

type Node<'a, 'i> = roxmltree::Node<'a, 'i>;

#[derive(Default)]
struct Report {
    failures: Vec<String>,
    notes: Vec<String>,
    /// Per frame: (sample label, chunk fields compared).
    per_frame: Vec<(String, usize)>,
    header_fields: usize,
    /// Type codes tshark showed, nested ones included.
    seen_chunk_types: BTreeSet<u8>,
    seen_param_types: BTreeSet<u16>,
    seen_cause_codes: BTreeSet<u16>,
}

fn name<'a>(n: &Node<'a, '_>) -> &'a str {
    n.attribute("name").unwrap_or("")
}

fn show<'a>(n: &Node<'a, '_>) -> &'a str {
    n.attribute("show").unwrap_or("")
}

/// The `show` text of the first element named `field` in `packet`.
fn first<'a>(packet: Node<'a, '_>, field: &str) -> Option<&'a str> {
    packet
        .descendants()
        .find(|n| n.is_element() && name(n) == field)
        .map(|n| show(&n))
}

fn parse_num(s: &str) -> Option<u32> {
    match s.strip_prefix("0x") {
        Some(hex) => u32::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

fn check_frame(num: usize, frame: &Frame, packet: Node<'_, '_>, report: &mut Report) {
    let at = format!("frame {num} ({})", frame.label);
    report.per_frame.push((frame.label.clone(), 0));
    let mut fail = |msg: String| report.failures.push(format!("{at}: {msg}"));

    // Malformed packets and experts, anywhere in the frame.
    if packet
        .descendants()
        .any(|n| n.is_element() && name(&n).starts_with("_ws.malformed"))
    {
        fail("tshark marks it malformed (_ws.malformed)".into());
    }
    for expert in packet
        .descendants()
        .filter(|n| n.is_element() && name(n) == "_ws.expert")
    {
        let get = |f: &str| {
            expert
                .children()
                .find(|c| name(c) == f)
                .map(|c| show(&c))
                .unwrap_or("")
        };
        let group = parse_num(get("_ws.expert.group")).unwrap_or(0);
        let text = format!(
            "expert \"{}\" (severity {}, group {group:#010x})",
            get("_ws.expert.message"),
            get("_ws.expert.severity")
        );
        if group == EXPERT_GROUP_MALFORMED || group == EXPERT_GROUP_CHECKSUM {
            fail(text);
        } else {
            report.notes.push(format!("{at}: {text}"));
        }
    }

    // IP, UDP and SCTP common header.
    let mut expect = vec![
        ("udp.srcport", frame.src.port().to_string()),
        ("udp.dstport", frame.dst.port().to_string()),
        ("udp.checksum.status", "1".to_string()),
    ];
    match (frame.src.ip(), frame.dst.ip()) {
        (IpAddr::V4(s), IpAddr::V4(d)) => expect.extend([
            ("ip.src", s.to_string()),
            ("ip.dst", d.to_string()),
            ("ip.checksum.status", "1".to_string()),
        ]),
        (s, d) => expect.extend([("ipv6.src", s.to_string()), ("ipv6.dst", d.to_string())]),
    }
    let mut zeroed = frame.wire.clone();
    zeroed[8..12].fill(0);
    let crc = crc::Crc::<u32>::new(&crc::CRC_32_ISCSI).checksum(&zeroed);
    expect.extend([
        ("sctp.srcport", frame.packet.src_port.to_string()),
        ("sctp.dstport", frame.packet.dst_port.to_string()),
        (
            "sctp.verification_tag",
            hex32(frame.packet.verification_tag),
        ),
        // The wire carries the CRC little-endian; tshark shows the 4 bytes big-endian.
        (
            "sctp.checksum",
            hex32(u32::from_be_bytes(crc.to_le_bytes())),
        ),
        ("sctp.checksum.status", "1".to_string()),
    ]);
    for (field, want) in expect {
        report.header_fields += 1;
        match first(packet, field) {
            Some(got) if got == want => {}
            got => fail(format!("{field}: tshark shows {got:?}, expected {want:?}")),
        }
    }

    // Chunks: unnamed fields holding a `sctp.chunk_type`, directly under an `sctp` proto
    // (after a DATA payload, the following chunks sit in a second `sctp` proto).
    let chunk_nodes: Vec<_> = packet
        .children()
        .filter(|p| p.has_tag_name("proto") && name(p) == "sctp")
        .flat_map(|p| p.children())
        .filter(|c| {
            c.has_tag_name("field")
                && name(c).is_empty()
                && c.children().any(|g| name(&g) == "sctp.chunk_type")
        })
        .collect();
    if chunk_nodes.len() != frame.packet.chunks.len() {
        fail(format!(
            "tshark shows {} chunks, the packet has {}",
            chunk_nodes.len(),
            frame.packet.chunks.len()
        ));
        return;
    }
    // Payloads dissected as `data`, outside the sctp tree, by byte offset in the frame.
    let payload_fields: Vec<(usize, &str, &str)> = packet
        .descendants()
        .filter(|n| n.is_element() && matches!(name(n), "data.data" | "data.len"))
        .filter_map(|n| Some((n.attribute("pos")?.parse().ok()?, name(&n), show(&n))))
        .collect();

    for (i, (chunk, node)) in frame.packet.chunks.iter().zip(&chunk_nodes).enumerate() {
        let expected = expect_chunk(chunk, &[0; 3][..padding(chunk_len(chunk))]);
        let mut actual = Vec::new();
        flatten(*node, &mut actual);
        let start: usize = node
            .attribute("pos")
            .and_then(|p| p.parse().ok())
            .unwrap_or(usize::MAX);
        let end = start.saturating_add(chunk_len(chunk) + padding(chunk_len(chunk)));
        actual.extend(
            payload_fields
                .iter()
                .filter(|(pos, _, _)| (start..end).contains(pos))
                .map(|(_, n, s)| (n.to_string(), s.to_string())),
        );
        if let Some((_, n)) = report.per_frame.last_mut() {
            *n += expected.0.len();
        }
        if expected.0 != actual {
            fail(format!(
                "chunk #{} ({}): tshark's fields differ from the encoded values\n{}",
                i + 1,
                chunk.name(),
                diff(&expected.0, &actual)
            ));
        }
        if let Some(t) = node
            .children()
            .find(|c| name(c) == "sctp.chunk_type")
            .and_then(|c| parse_num(show(&c)))
        {
            report.seen_chunk_types.insert(t as u8);
        }
    }

    // Type codes tshark saw anywhere in the frame, nested ones included.
    for n in packet.descendants().filter(|n| n.is_element()) {
        let v = parse_num(show(&n));
        match (name(&n), v) {
            ("sctp.chunk_type", Some(v)) => {
                report.seen_chunk_types.insert(v as u8);
            }
            ("sctp.parameter_type", Some(v)) => {
                report.seen_param_types.insert(v as u16);
            }
            ("sctp.cause_code", Some(v)) => {
                report.seen_cause_codes.insert(v as u16);
            }
            _ => {}
        }
    }
}

/// Every named field under `node`, in tree order; unnamed (summary) nodes are descended
/// into, `_ws.*` (experts) skipped: they are checked per frame.
fn flatten(node: Node<'_, '_>, out: &mut Vec<(String, String)>) {
    for c in node.children().filter(|c| c.has_tag_name("field")) {
        let n = name(&c);
        if n.starts_with("_ws.") {
            continue;
        }
        if !n.is_empty() {
            out.push((n.to_string(), show(&c).to_string()));
        }
        flatten(c, out);
    }
}

/// Both lists side by side, differing rows marked with `!`.
fn diff(expected: &[(String, String)], actual: &[(String, String)]) -> String {
    let cell =
        |f: Option<&(String, String)>| f.map_or(String::new(), |(n, s)| format!("{n} = {s}"));
    let mut out = format!(
        "    {:<60} tshark\n",
        "expected (from the sample's structs)"
    );
    for i in 0..expected.len().max(actual.len()) {
        let (e, a) = (expected.get(i), actual.get(i));
        let mark = if e == a { ' ' } else { '!' };
        let _ = writeln!(out, "  {mark} {:<60} {}", cell(e), cell(a));
    }
    out
}

/// Every chunk type, parameter type and cause code the codec decodes into a typed value
/// must have been seen by tshark. Found by probing the decoders with an empty value:
/// an unknown type comes back as `Unknown`, a known one as a typed value or an error.
fn check_coverage(report: &mut Report) {
    let chunks = (0..=u8::MAX).filter(|&t| {
        let raw = RawChunk {
            chunk_type: ChunkType(t),
            flags: 0,
            value: Bytes::new(),
        };
        !matches!(Chunk::decode(raw), Ok(Chunk::Unknown(_)))
    });
    let params = (0..=u16::MAX)
        .filter(|&t| !matches!(Param::decode(t, Bytes::new()), Ok(Param::Unknown { .. })));
    let causes = (0..=u16::MAX).filter(|&c| {
        !matches!(
            ErrorCause::decode(c, Bytes::new()),
            Ok(ErrorCause::Unknown { .. })
        )
    });
    let missing = |what: &str, all: Vec<u32>, seen: BTreeSet<u32>| {
        let missing: Vec<String> = all
            .iter()
            .filter(|t| !seen.contains(t))
            .map(|t| format!("{t:#x}"))
            .collect();
        (!missing.is_empty()).then(|| {
            format!(
                "{what} decoded by the codec but in no frame (add a sample to \
                 braid_wire::sample): {}",
                missing.join(", ")
            )
        })
    };
    let seen_chunks = report.seen_chunk_types.iter().map(|&t| u32::from(t));
    let seen_params = report.seen_param_types.iter().map(|&t| u32::from(t));
    let seen_causes = report.seen_cause_codes.iter().map(|&t| u32::from(t));
    let problems = [
        missing(
            "chunk types",
            chunks.map(u32::from).collect(),
            seen_chunks.collect(),
        ),
        missing(
            "parameter types",
            params.map(u32::from).collect(),
            seen_params.collect(),
        ),
        missing(
            "cause codes",
            causes.map(u32::from).collect(),
            seen_causes.collect(),
        ),
    ];
    report.failures.extend(problems.into_iter().flatten());
}

// ---------------------------------------------------------------------------------------
// Expected fields, built from the structs. Lengths follow the RFC layouts, independently
// of the codec's encoder.
// ---------------------------------------------------------------------------------------

/// Expected tshark fields in tree order: (field name, PDML `show` text).
#[derive(Default, Debug)]
struct Fields(Vec<(String, String)>);

impl Fields {
    fn put(&mut self, name: &str, show: impl Display) {
        self.0.push((name.to_string(), show.to_string()));
    }

    /// A bytes field; tshark shows none for an empty value.
    fn bytes(&mut self, name: &str, b: &[u8]) {
        if !b.is_empty() {
            self.put(name, colon_hex(b));
        }
    }

    fn append(&mut self, other: Fields) {
        self.0.extend(other.0);
    }
}

fn hex8(v: u8) -> String {
    format!("0x{v:02x}")
}

fn hex16(v: u16) -> String {
    format!("0x{v:04x}")
}

fn hex32(v: u32) -> String {
    format!("0x{v:08x}")
}

fn bit(b: bool) -> u8 {
    u8::from(b)
}

/// PDML's rendering of FT_BYTES: `c0:0c:1e`.
fn colon_hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn padding(len: usize) -> usize {
    (4 - len % 4) % 4
}

/// The chunk's length field (header included, padding excluded).
fn chunk_len(c: &Chunk) -> usize {
    let mut scratch = Fields::default();
    4 + chunk_body(
        c,
        &mut scratch,
        &mut Fields::default(),
        &mut Fields::default(),
    )
    .1
}

/// The fields of a chunk; `pad` is the padding that follows it in the packet.
fn expect_chunk(c: &Chunk, pad: &[u8]) -> Fields {
    let ty = c.chunk_type().0;
    let (mut flag_bits, mut body, mut payload) =
        (Fields::default(), Fields::default(), Fields::default());
    let (flags, body_len) = chunk_body(c, &mut flag_bits, &mut body, &mut payload);
    let mut f = Fields::default();
    f.put("sctp.chunk_type", ty);
    f.put("sctp.chunk_bit_1", ty >> 7);
    f.put("sctp.chunk_bit_2", (ty >> 6) & 1);
    f.put("sctp.chunk_flags", hex8(flags));
    f.append(flag_bits);
    f.put("sctp.chunk_length", 4 + body_len);
    f.append(body);
    f.bytes("sctp.chunk_padding", pad);
    f.append(payload);
    f
}

/// Pushes the flag-bit fields, the value fields and the payload (`data.data`) fields of a
/// chunk; returns its flags byte and its value length.
fn chunk_body(c: &Chunk, bits: &mut Fields, f: &mut Fields, payload: &mut Fields) -> (u8, usize) {
    let data_bits = |bits: &mut Fields, i: bool, u: bool, b: bool, e: bool| {
        bits.put("sctp.data_i_bit", bit(i));
        bits.put("sctp.data_u_bit", bit(u));
        bits.put("sctp.data_b_bit", bit(b));
        bits.put("sctp.data_e_bit", bit(e));
        // RFC 9260 §3.3.1 and RFC 7053: Res(4) I U B E.
        (bit(i) << 3) | (bit(u) << 2) | (bit(b) << 1) | bit(e)
    };
    let user_data = |payload: &mut Fields, beginning: bool, d: &Bytes| {
        // With reassembly off, tshark shows a payload only on a first fragment.
        if beginning && !d.is_empty() {
            payload.put("data.data", colon_hex(d));
            payload.put("data.len", d.len());
        }
    };
    match c {
        Chunk::Data(d) => {
            let flags = data_bits(bits, d.immediate, d.unordered, d.beginning, d.ending);
            f.put("sctp.data_tsn_raw", d.tsn);
            f.put("sctp.data_sid", hex16(d.stream_id));
            f.put("sctp.data_ssn", d.ssn);
            f.put("sctp.data_payload_proto_id", d.ppid);
            user_data(payload, d.beginning, &d.user_data);
            (flags, 12 + d.user_data.len())
        }
        Chunk::IData(d) => {
            let flags = data_bits(bits, d.immediate, d.unordered, d.beginning, d.ending);
            f.put("sctp.data_tsn_raw", d.tsn);
            f.put("sctp.data_sid", hex16(d.stream_id));
            f.put("sctp.data_reserved", 0);
            f.put("sctp.data_mid", d.mid);
            // RFC 8260 §2.1: the 4th word is the PPID when B is set, else the FSN.
            if d.beginning {
                f.put("sctp.data_payload_proto_id", d.ppid);
            } else {
                f.put("sctp.data_fsn", d.fsn);
            }
            user_data(payload, d.beginning, &d.user_data);
            (flags, 16 + d.user_data.len())
        }
        Chunk::Init(c) => {
            let (tag, rwnd, os, is, tsn) = (
                c.initiate_tag,
                c.a_rwnd,
                c.outbound_streams,
                c.inbound_streams,
                c.initial_tsn,
            );
            (
                0,
                init_fields("init", (tag, rwnd, os, is, tsn), &c.params, f),
            )
        }
        Chunk::InitAck(c) => {
            let (tag, rwnd, os, is, tsn) = (
                c.initiate_tag,
                c.a_rwnd,
                c.outbound_streams,
                c.inbound_streams,
                c.initial_tsn,
            );
            (
                0,
                init_fields("initack", (tag, rwnd, os, is, tsn), &c.params, f),
            )
        }
        Chunk::Sack(s) => {
            bits.put("sctp.sack_nounce_sum", 0);
            f.put("sctp.sack_cumulative_tsn_ack_raw", s.cum_tsn_ack);
            f.put("sctp.sack_a_rwnd", s.a_rwnd);
            f.put("sctp.sack_number_of_gap_blocks", s.gap_blocks.len());
            f.put("sctp.sack_number_of_duplicated_tsns", s.dup_tsns.len());
            gap_blocks("sctp.sack", s.cum_tsn_ack, &s.gap_blocks, f);
            for t in &s.dup_tsns {
                f.put("sctp.sack_duplicate_tsn", t);
            }
            (0, 12 + 4 * (s.gap_blocks.len() + s.dup_tsns.len()))
        }
        Chunk::NrSack(s) => {
            bits.put("sctp.nr_sack_nounce_sum", 0);
            f.put("sctp.nr_sack_cumulative_tsn_ack", s.cum_tsn_ack);
            f.put("sctp.nr_sack_a_rwnd", s.a_rwnd);
            f.put("sctp.nr_sack_number_of_gap_blocks", s.gap_blocks.len());
            f.put(
                "sctp.nr_sack_number_of_nr_gap_blocks",
                s.nr_gap_blocks.len(),
            );
            f.put("sctp.nr_sack_number_of_duplicated_tsns", s.dup_tsns.len());
            f.put("sctp.nr_sack_reserved", hex16(0));
            gap_blocks("sctp.nr_sack", s.cum_tsn_ack, &s.gap_blocks, f);
            gap_blocks("sctp.nr_sack_nr", s.cum_tsn_ack, &s.nr_gap_blocks, f);
            for t in &s.dup_tsns {
                f.put("sctp.nr_sack_duplicate_tsn", t);
            }
            let words = s.gap_blocks.len() + s.nr_gap_blocks.len() + s.dup_tsns.len();
            (0, 16 + 4 * words)
        }
        Chunk::Heartbeat(h) => (0, param_list(&h.params, f)),
        Chunk::HeartbeatAck(h) => (0, param_list(&h.params, f)),
        Chunk::Abort(a) => {
            bits.put("sctp.abort_t_bit", bit(a.t_bit));
            (bit(a.t_bit), cause_list(&a.causes, f))
        }
        Chunk::Error(e) => (0, cause_list(&e.causes, f)),
        Chunk::Shutdown(s) => {
            f.put("sctp.shutdown_cumulative_tsn_ack", s.cum_tsn_ack);
            (0, 4)
        }
        Chunk::ShutdownAck(_) | Chunk::CookieAck(_) => (0, 0),
        Chunk::CookieEcho(c) => {
            f.bytes("sctp.cookie", &c.cookie);
            (0, c.cookie.len())
        }
        Chunk::Ecne(e) => {
            f.put("sctp.ecne_lowest_tsn", e.lowest_tsn);
            (0, 4)
        }
        Chunk::Cwr(c) => {
            f.put("sctp.cwr_lowest_tsn", c.lowest_tsn);
            (0, 4)
        }
        Chunk::ShutdownComplete(s) => {
            bits.put("sctp.shutdown_complete_t_bit", bit(s.t_bit));
            (bit(s.t_bit), 0)
        }
        Chunk::AsconfAck(a) => {
            f.put("sctp.asconf_ack_seq_nr_number", hex32(a.serial));
            (0, 4 + param_list(&a.params, f))
        }
        Chunk::ReConfig(r) => (0, param_list(&r.params, f)),
        Chunk::Pad(p) => {
            // Present (with an empty show) even when there is no padding data.
            f.put("sctp.padding_data", colon_hex(&p.padding));
            (0, p.padding.len())
        }
        Chunk::ForwardTsn(t) => {
            f.put("sctp.forward_tsn_tsn", t.new_cum_tsn);
            for s in &t.streams {
                f.put("sctp.forward_tsn_sid", s.stream_id);
                f.put("sctp.forward_tsn_ssn", s.ssn);
            }
            (0, 4 + 4 * t.streams.len())
        }
        Chunk::Asconf(a) => {
            f.put("sctp.asconf_seq_nr_number", hex32(a.serial));
            let mut params = vec![Param::from_address(a.address)];
            params.extend(a.params.iter().cloned());
            (0, 4 + param_list(&params, f))
        }
        Chunk::IForwardTsn(t) => {
            f.put("sctp.i_forward_tsn_tsn", t.new_cum_tsn);
            for s in &t.streams {
                // RFC 8260 §2.3.1: SID(16), Reserved(15) U(1), MID(32).
                f.put("sctp.i_forward_tsn_sid", s.stream_id);
                f.put("sctp.i_forward_tsn_flags", hex16(u16::from(s.unordered)));
                f.put("sctp.i_forward_tsn_res", 0);
                f.put("sctp.i_forward_tsn_u_bit", bit(s.unordered));
                f.put("sctp.forward_tsn_mid", s.mid);
            }
            (0, 4 + 8 * t.streams.len())
        }
        Chunk::Unknown(r) => {
            f.bytes("sctp.chunk_value", &r.value);
            (r.flags, r.value.len())
        }
    }
}

/// INIT / INIT-ACK fixed part and parameters; returns the value length.
fn init_fields(
    p: &str,
    fixed: (u32, u32, u16, u16, u32),
    params: &[Param],
    f: &mut Fields,
) -> usize {
    let (tag, rwnd, outbound, inbound, tsn) = fixed;
    f.put(&format!("sctp.{p}_initiate_tag"), hex32(tag));
    f.put("sctp.initiate_tag", hex32(tag));
    f.put(&format!("sctp.{p}_credit"), rwnd);
    f.put(&format!("sctp.{p}_nr_out_streams"), outbound);
    f.put(&format!("sctp.{p}_nr_in_streams"), inbound);
    f.put(&format!("sctp.{p}_initial_tsn"), tsn);
    16 + param_list(params, f)
}

/// Gap blocks (`prefix` `sctp.sack`, `sctp.nr_sack` or `sctp.nr_sack_nr`) with the absolute
/// TSNs tshark derives, then the number of TSNs they ack (shown only if there are blocks).
fn gap_blocks(prefix: &str, cum: u32, blocks: &[GapAckBlock], f: &mut Fields) {
    let mut acked = 0u32;
    for b in blocks {
        f.put(&format!("{prefix}_gap_block_start"), b.start);
        f.put(
            &format!("{prefix}_gap_block_start_tsn"),
            cum.wrapping_add(u32::from(b.start)),
        );
        f.put(&format!("{prefix}_gap_block_end"), b.end);
        f.put(
            &format!("{prefix}_gap_block_end_tsn"),
            cum.wrapping_add(u32::from(b.end)),
        );
        acked = acked.wrapping_add(u32::from(b.end).wrapping_sub(u32::from(b.start)) + 1);
    }
    if !blocks.is_empty() {
        let name = match prefix {
            "sctp.nr_sack_nr" => "sctp.nr_sack_number_of_tsns_nr_gap_acked".to_string(),
            p => format!("{p}_number_of_tsns_gap_acked"),
        };
        f.put(&name, acked);
    }
}

/// A list of parameters, padded between each other but not after the last (RFC 9260
/// §3.2: the last one's padding belongs to the chunk); returns its length.
fn param_list(params: &[Param], f: &mut Fields) -> usize {
    let mut total = 0;
    for (i, p) in params.iter().enumerate() {
        let len = param_fields(p, f);
        total += len;
        if i + 1 < params.len() {
            f.bytes("sctp.parameter_padding", &[0; 3][..padding(len)]);
            total += padding(len);
        }
    }
    total
}

/// A list of causes, padded like parameters; returns its length.
fn cause_list(causes: &[ErrorCause], f: &mut Fields) -> usize {
    let mut total = 0;
    for (i, c) in causes.iter().enumerate() {
        let len = cause_fields(c, f);
        total += len;
        if i + 1 < causes.len() {
            f.bytes("sctp.cause_padding", &[0; 3][..padding(len)]);
            total += padding(len);
        }
    }
    total
}

/// One parameter; returns its length field value (header included, padding excluded).
fn param_fields(p: &Param, out: &mut Fields) -> usize {
    let mut f = Fields::default();
    let value_len = match p {
        Param::HeartbeatInfo(b) => {
            f.bytes("sctp.parameter_heartbeat_information", b);
            b.len()
        }
        Param::Ipv4Address(a) => {
            f.put("sctp.parameter_ipv4_address", a);
            4
        }
        Param::Ipv6Address(a) => {
            f.put("sctp.parameter_ipv6_address", a);
            16
        }
        Param::StateCookie(b) => {
            f.bytes("sctp.parameter_state_cookie", b);
            b.len()
        }
        Param::UnrecognizedParameter(b) => {
            nested_params(b, &mut f);
            b.len()
        }
        Param::CookiePreservative(v) => {
            f.put("sctp.parameter_cookie_preservative_incr", v);
            4
        }
        Param::HostNameAddress(b) => {
            let text = b.split(|&c| c == 0).next().unwrap_or_default();
            if !b.is_empty() {
                f.put("sctp.parameter_hostname", String::from_utf8_lossy(text));
            }
            b.len()
        }
        Param::SupportedAddressTypes(types) => {
            for t in types {
                f.put("sctp.parameter_supported_address_type", t);
            }
            2 * types.len()
        }
        Param::OutgoingSsnResetRequest {
            request_seq,
            response_seq,
            last_tsn,
            streams,
        } => {
            f.put(
                "sctp.parameter_reconfig_request_sequence_number",
                request_seq,
            );
            f.put(
                "sctp.parameter_reconfig_response_sequence_number",
                response_seq,
            );
            f.put("sctp.parameter_senders_last_assigned_tsn", last_tsn);
            for s in streams {
                f.put("sctp.parameter_reconfig_sid", s);
            }
            12 + 2 * streams.len()
        }
        Param::IncomingSsnResetRequest {
            request_seq,
            streams,
        } => {
            f.put(
                "sctp.parameter_reconfig_request_sequence_number",
                request_seq,
            );
            for s in streams {
                f.put("sctp.parameter_reconfig_sid", s);
            }
            4 + 2 * streams.len()
        }
        Param::SsnTsnResetRequest { request_seq } => {
            f.put(
                "sctp.parameter_reconfig_request_sequence_number",
                request_seq,
            );
            4
        }
        Param::ReconfigResponse {
            response_seq,
            result,
            next_tsns,
        } => {
            f.put(
                "sctp.parameter_reconfig_response_sequence_number",
                response_seq,
            );
            f.put("sctp.parameter_reconfig_response_result", result);
            if let Some((sender, receiver)) = next_tsns {
                f.put("sctp.parameter_senders_next_tsn", sender);
                f.put("sctp.parameter_receivers_next_tsn", receiver);
                16
            } else {
                8
            }
        }
        Param::AddOutgoingStreams {
            request_seq,
            new_streams,
        } => {
            f.put(
                "sctp.parameter_reconfig_request_sequence_number",
                request_seq,
            );
            f.put("sctp.parameter_add_outgoing_streams_number", new_streams);
            f.put("sctp.parameter_add_outgoing_streams_reserved", 0);
            8
        }
        Param::AddIncomingStreams {
            request_seq,
            new_streams,
        } => {
            f.put(
                "sctp.parameter_reconfig_request_sequence_number",
                request_seq,
            );
            f.put("sctp.parameter_add_incoming_streams_number", new_streams);
            f.put("sctp.parameter_add_incoming_streams_reserved", 0);
            8
        }
        Param::EcnCapable | Param::ForwardTsnSupported | Param::LoadSharingSupported => 0,
        Param::EifelSupported {
            timestamp,
            retransmit_bit,
        } => {
            // braid's own type: Wireshark shows the flags word raw.
            let bits = u32::from(*timestamp) | (u32::from(*retransmit_bit) << 1);
            f.bytes("sctp.parameter_value", &bits.to_be_bytes());
            4
        }
        Param::Padding(b) => {
            // Wireshark 4.0 does not know RFC 4820's Padding parameter: shown raw.
            f.bytes("sctp.parameter_value", b);
            b.len()
        }
        Param::SupportedExtensions(types) => {
            for t in types {
                f.put("sctp.supported_chunk_type", t);
            }
            types.len()
        }
        Param::AddIpAddress {
            correlation_id,
            address,
        }
        | Param::DeleteIpAddress {
            correlation_id,
            address,
        }
        | Param::SetPrimaryAddress {
            correlation_id,
            address,
        } => {
            f.put("sctp.correlation_id", hex32(*correlation_id));
            4 + param_fields(&Param::from_address(*address), &mut f)
        }
        Param::ErrorCauseIndication {
            correlation_id,
            causes,
        } => {
            f.put("sctp.correlation_id", hex32(*correlation_id));
            4 + cause_list(causes, &mut f)
        }
        Param::SuccessIndication { correlation_id } => {
            f.put("sctp.correlation_id", hex32(*correlation_id));
            4
        }
        Param::AdaptationLayerIndication(v) => {
            f.put("sctp.adaptation_layer_indication", hex32(*v));
            4
        }
        Param::Unknown { value, .. } => {
            f.bytes("sctp.parameter_value", value);
            value.len()
        }
    };
    let ty = p.param_type().0;
    out.put("sctp.parameter_type", hex16(ty));
    out.put("sctp.parameter_bit_1", ty >> 15);
    out.put("sctp.parameter_bit_2", (ty >> 14) & 1);
    out.put("sctp.parameter_length", 4 + value_len);
    out.append(f);
    4 + value_len
}

/// One error cause; returns its length field value.
fn cause_fields(c: &ErrorCause, out: &mut Fields) -> usize {
    let mut f = Fields::default();
    let info_len = match c {
        ErrorCause::InvalidStreamIdentifier { stream_id } => {
            f.put("sctp.cause_stream_identifier", stream_id);
            f.put("sctp.cause_reserved", 0);
            4
        }
        ErrorCause::MissingMandatoryParameter { param_types } => {
            f.put("sctp.cause_nr_of_missing_parameters", param_types.len());
            for t in param_types {
                f.put("sctp.cause_missing_parameter_type", hex16(*t));
            }
            4 + 2 * param_types.len()
        }
        ErrorCause::StaleCookie { staleness_us } => {
            f.put("sctp.cause_measure_of_staleness", staleness_us);
            4
        }
        ErrorCause::OutOfResource
        | ErrorCause::InvalidMandatoryParameter
        | ErrorCause::CookieWhileShuttingDown
        | ErrorCause::IllegalAsconfAck => 0,
        // Causes carrying parameters (TLVs as received or sent): decoded as nested
        // parameters by tshark.
        ErrorCause::UnresolvableAddress(b)
        | ErrorCause::UnrecognizedParameters(b)
        | ErrorCause::RestartWithNewAddresses(b)
        | ErrorCause::DeleteLastRemainingAddress(b)
        | ErrorCause::ResourceShortage(b)
        | ErrorCause::DeleteSourceAddress(b)
        | ErrorCause::NoAuthorization(b) => {
            nested_params(b, &mut f);
            b.len()
        }
        ErrorCause::UnrecognizedChunkType(b) => {
            nested_chunks(b, &mut f);
            b.len()
        }
        ErrorCause::NoUserData { tsn } => {
            f.put("sctp.cause_tsn", tsn);
            4
        }
        ErrorCause::UserInitiatedAbort(b) | ErrorCause::ProtocolViolation(b) => {
            f.bytes("sctp.cause_information", b);
            b.len()
        }
        ErrorCause::RestartWithNewEncapsulationPort {
            current_port,
            new_port,
        } => {
            // Wireshark 4.0 does not know cause 14: its two u16 ports show as raw bytes.
            let mut info = current_port.to_be_bytes().to_vec();
            info.extend_from_slice(&new_port.to_be_bytes());
            f.bytes("sctp.cause_information", &info);
            4
        }
        ErrorCause::Unknown { info, .. } => {
            f.bytes("sctp.cause_information", info);
            info.len()
        }
    };
    out.put("sctp.cause_code", hex16(c.code().0));
    out.put("sctp.cause_length", 4 + info_len);
    out.append(f);
    4 + info_len
}

/// Parameters carried as raw TLVs (inside a cause or an Unrecognized Parameter), with the
/// padding bytes the raw value holds; each decoded with the codec, then expected as above.
fn nested_params(mut b: &[u8], f: &mut Fields) {
    while b.len() >= 4 {
        let ty = u16::from_be_bytes([b[0], b[1]]);
        let len = usize::from(u16::from_be_bytes([b[2], b[3]]));
        if len < 4 || len > b.len() {
            f.put("<undecodable nested parameter>", colon_hex(b));
            return;
        }
        let value = Bytes::copy_from_slice(&b[4..len]);
        let p = Param::decode(ty, value.clone()).unwrap_or(Param::Unknown {
            param_type: braid_wire::ParamType(ty),
            value,
        });
        param_fields(&p, f);
        let pad = padding(len).min(b.len() - len);
        f.bytes("sctp.parameter_padding", &b[len..len + pad]);
        b = &b[len + pad..];
    }
    f.bytes("<trailing bytes>", b);
}

/// Chunks carried as raw bytes (in an Unrecognized Chunk Type cause).
fn nested_chunks(mut b: &[u8], f: &mut Fields) {
    while b.len() >= 4 {
        let len = usize::from(u16::from_be_bytes([b[2], b[3]]));
        if len < 4 || len > b.len() {
            f.put("<undecodable nested chunk>", colon_hex(b));
            return;
        }
        let raw = RawChunk {
            chunk_type: ChunkType(b[0]),
            flags: b[1],
            value: Bytes::copy_from_slice(&b[4..len]),
        };
        let chunk = Chunk::decode(raw.clone()).unwrap_or(Chunk::Unknown(raw));
        let pad = padding(len).min(b.len() - len);
        f.append(expect_chunk(&chunk, &b[len..len + pad]));
        b = &b[len + pad..];
    }
    f.bytes("<trailing bytes>", b);
}
