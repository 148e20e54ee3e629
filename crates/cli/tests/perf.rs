//! `braid perf` and `braid nc` as subprocesses on 127.0.0.1.

#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

const BRAID: &str = env!("CARGO_BIN_EXE_braid");
const LIMIT: Duration = Duration::from_secs(60);

/// Kills the child if the test fails before it exited.
struct Guard(Option<Child>);

impl Guard {
    fn spawn(cmd: &mut Command) -> Self {
        Self(Some(cmd.spawn().unwrap()))
    }

    /// Waits (bounded) for the exit and collects stdout and stderr.
    fn wait(mut self) -> Output {
        let mut c = self.0.take().unwrap();
        let mut waited = Duration::ZERO;
        loop {
            if c.try_wait().unwrap().is_some() {
                break;
            }
            if waited > LIMIT {
                let _ = c.kill();
                let o = c.wait_with_output().unwrap();
                panic!(
                    "timed out; stdout {} stderr {}",
                    String::from_utf8_lossy(&o.stdout),
                    String::from_utf8_lossy(&o.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
            waited += Duration::from_millis(20);
        }
        c.wait_with_output().unwrap()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A UDP port that was free a moment ago.
fn free_port() -> u16 {
    std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn json(out: &[u8]) -> serde_json::Value {
    let s = String::from_utf8_lossy(out);
    let line = s
        .lines()
        .rev()
        .find(|l| l.starts_with('{'))
        .unwrap_or_else(|| {
            panic!("no JSON in {s:?}");
        });
    serde_json::from_str(line).unwrap()
}

/// Runs a server and a client sending `bytes` (20 MiB) with the extra flags; checks both
/// succeeded and returns their JSON summaries.
fn run_perf(
    server_extra: &[&str],
    extra: &[&str],
    bytes: u64,
) -> (serde_json::Value, serde_json::Value) {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let server = Guard::spawn(
        Command::new(BRAID)
            .args(["perf", "server", "--bind", &addr, "--json", "--one-off"])
            .args(server_extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    std::thread::sleep(Duration::from_millis(200));
    let client = Guard::spawn(
        Command::new(BRAID)
            .args([
                "perf",
                "client",
                "--bind",
                "127.0.0.1:0",
                "--connect",
                &addr,
            ])
            .args(["--bytes", "20MiB", "--json"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let c = client.wait();
    let s = server.wait();
    let cj = json(&c.stdout);
    let sj = json(&s.stdout);
    assert!(
        c.status.success(),
        "client failed: {cj} {}",
        String::from_utf8_lossy(&c.stderr)
    );
    assert!(
        s.status.success(),
        "server failed: {sj} {}",
        String::from_utf8_lossy(&s.stderr)
    );
    assert_eq!(cj["ok"], true);
    assert_eq!(cj["bytes"], bytes);
    assert!(cj["goodput_mbps"].as_f64().unwrap() > 0.0);
    assert!(cj["duration_s"].as_f64().unwrap() > 0.0);
    assert!(cj["retransmissions"].as_u64().is_some());
    let paths = cj["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 1);
    let p = &paths[0];
    assert_eq!(p["remote"], addr.as_str());
    assert!(p["bytes_sent"].as_u64().unwrap() >= bytes);
    assert!(p["srtt_ms"].as_f64().is_some());
    assert!(p["cwnd"].as_u64().unwrap() > 0);
    assert_eq!(p["state"], "active");
    assert_eq!(sj["ok"], true);
    assert_eq!(sj["bytes"], bytes);
    (cj, sj)
}

#[test]
fn perf_20mib_verified() {
    let (cj, sj) = run_perf(&[], &[], 20 << 20);
    assert_eq!(cj["echo_bytes"], 0);
    assert_eq!(sj["bytes_echoed"], 0);
}

#[test]
fn perf_streams_unordered_odd_size() {
    run_perf(
        &[],
        &["--streams", "3", "--unordered", "--msg-size", "5000"],
        20 << 20,
    );
}

#[test]
fn perf_echo_verified_by_the_client() {
    let dir = std::env::temp_dir().join(format!("braid-perf-echo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (spcap, cpcap) = (dir.join("server.pcap"), dir.join("client.pcap"));
    for unordered in [false, true] {
        let mut client = vec!["--verify-echo", "--streams", "4", "--msg-size", "1444"];
        if unordered {
            client.push("--unordered");
        }
        client.extend(["--pcap", cpcap.to_str().unwrap()]);
        let (cj, sj) = run_perf(
            &["--echo", "--pcap", spcap.to_str().unwrap()],
            &client,
            20 << 20,
        );
        // The client ends only once every byte came back and verified.
        assert_eq!(cj["verify_echo"], true);
        assert_eq!(cj["echo_bytes"], 20 << 20);
        assert_eq!(cj["echo_messages"], cj["messages"]);
        assert_eq!(cj["unordered"], unordered);
        assert_eq!(sj["echo"], true);
        assert_eq!(sj["bytes_echoed"], 20 << 20);
        assert_eq!(sj["streams"], 4);
        // Each side records the data both ways: more than 2 × 20 MiB of payload.
        for p in [&spcap, &cpcap] {
            let len = std::fs::metadata(p).unwrap().len();
            assert!(len > 40 << 20, "{}: {len} bytes", p.display());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn perf_cmt_over_two_addresses_per_side_uses_both_paths() {
    // Server on 127.0.0.1 and 127.0.0.2, client on 127.0.0.3 and 127.0.0.4 (same ports).
    let port = free_port();
    let server = Guard::spawn(
        Command::new(BRAID)
            .args(["perf", "server", "--json", "--one-off"])
            .args(["--bind", &format!("127.0.0.1:{port}")])
            .args(["--bind", &format!("127.0.0.2:{port}")])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    std::thread::sleep(Duration::from_millis(200));
    let client = Guard::spawn(
        Command::new(BRAID)
            .args([
                "perf",
                "client",
                "--bind",
                "127.0.0.3:0",
                "--bind",
                "127.0.0.4:0",
            ])
            .args(["--connect", &format!("127.0.0.1:{port}")])
            .args([
                "--bytes",
                "40MiB",
                "--streams",
                "4",
                "--cmt",
                "on",
                "--json",
            ])
            .args(["--scheduler", "fixed"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let c = client.wait();
    let s = server.wait();
    let cj = json(&c.stdout);
    assert!(
        c.status.success(),
        "client: {cj} {}",
        String::from_utf8_lossy(&c.stderr)
    );
    assert!(
        s.status.success(),
        "server: {}",
        String::from_utf8_lossy(&s.stderr)
    );
    assert_eq!(cj["ok"], true);
    assert_eq!(cj["cmt"], "on");
    assert_eq!(cj["scheduler"], "fixed");
    let paths = cj["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 2, "{cj}");
    for p in paths {
        // Fixed maps streams 0, 2 to path 0 and 1, 3 to path 1: each path carries ~half.
        let sent = p["bytes_sent"].as_u64().unwrap();
        assert!(sent > 15 << 20, "path {p} carried only {sent} bytes");
    }
    assert_eq!(json(&s.stdout)["bytes"], 40 << 20);
}

#[test]
fn perf_invalid_options_are_errors() {
    for extra in [["--scheduler", "bogus"], ["--cmt", "maybe"]] {
        let o = Command::new(BRAID)
            .args(["perf", "client", "--bind", "127.0.0.1:0"])
            .args(["--connect", "127.0.0.1:9", "--time", "1s"])
            .args(extra)
            .output()
            .unwrap();
        assert!(!o.status.success());
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(extra[0]), "{e}");
    }
    // --time and --bytes are exclusive, and one is required.
    let o = Command::new(BRAID)
        .args(["perf", "client", "--bind", "127.0.0.1:0"])
        .args(["--connect", "127.0.0.1:9"])
        .output()
        .unwrap();
    assert!(!o.status.success());
}

#[test]
fn nc_echo_round_trip() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let server = Guard::spawn(
        Command::new(BRAID)
            .args(["nc", "--listen", "--echo", "--bind", &addr])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    std::thread::sleep(Duration::from_millis(200));
    let input: Vec<u8> = (0..3_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let mut client = Guard::spawn(
        Command::new(BRAID)
            .args([
                "nc",
                "--bind",
                "127.0.0.1:0",
                "--connect",
                &addr,
                "--stream",
                "2",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let mut stdin = client.0.as_mut().unwrap().stdin.take().unwrap();
    let mut stdout = client.0.as_mut().unwrap().stdout.take().unwrap();
    let data = input.clone();
    let writer = std::thread::spawn(move || {
        stdin.write_all(&data).unwrap();
    });
    let reader = std::thread::spawn(move || {
        let mut v = Vec::new();
        stdout.read_to_end(&mut v).unwrap();
        v
    });
    writer.join().unwrap();
    let c = client.wait();
    let output = reader.join().unwrap();
    assert!(
        c.status.success(),
        "client: {}",
        String::from_utf8_lossy(&c.stderr)
    );
    assert_eq!(output.len(), input.len());
    assert!(output == input, "echoed bytes differ");
    let s = server.wait();
    assert!(
        s.status.success(),
        "server: {}",
        String::from_utf8_lossy(&s.stderr)
    );
}
