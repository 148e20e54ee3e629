//! `braid perf` and `braid nc` as subprocesses on 127.0.0.1.

#![allow(clippy::unwrap_used)]

use std::io::{Read, Write};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

const BRAID: &str = env!("CARGO_BIN_EXE_braid");
const LIMIT: Duration = Duration::from_secs(60);

/// Kills the child if the test fails before it exited. A server's stderr is read by a
/// thread (`spawn_ready`), which hands it back with the output.
struct Guard(Option<Child>, Option<StderrReader>);

/// The thread reading a child's stderr, and what it read.
type StderrReader = (
    std::thread::JoinHandle<()>,
    std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
);

impl Guard {
    fn spawn(cmd: &mut Command) -> Self {
        Self(Some(cmd.spawn().unwrap()), None)
    }

    /// Spawns a server (stderr piped) and returns once it printed its "listening on" line,
    /// instead of sleeping for a time that a busy machine may exceed.
    fn spawn_ready(cmd: &mut Command) -> Self {
        use std::io::BufRead;
        let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
        let err = child.stderr.take().unwrap();
        let buf = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let b = buf.clone();
        let reader = std::thread::spawn(move || {
            let mut r = std::io::BufReader::new(err);
            let mut line = Vec::new();
            while r.read_until(b'\n', &mut line).is_ok_and(|n| n > 0) {
                if String::from_utf8_lossy(&line).contains("listening on") {
                    let _ = tx.send(());
                }
                b.lock().unwrap().extend_from_slice(&line);
                line.clear();
            }
        });
        let g = Self(Some(child), Some((reader, buf)));
        if rx.recv_timeout(Duration::from_secs(20)).is_err() {
            let got = String::from_utf8_lossy(&g.1.as_ref().unwrap().1.lock().unwrap()).to_string();
            panic!("the server never said it listens: {got}");
        }
        g
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
        let mut out = c.wait_with_output().unwrap();
        if let Some((reader, buf)) = self.1.take() {
            let _ = reader.join();
            out.stderr = std::mem::take(&mut *buf.lock().unwrap());
        }
        out
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
    let server = Guard::spawn_ready(
        Command::new(BRAID)
            .args(["perf", "server", "--bind", &addr, "--json", "--one-off"])
            .args(server_extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
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
fn perf_interactive_bulk_and_small_messages_verified_and_logged() {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let log = std::env::temp_dir().join(format!("braid-interactive-{port}.log"));
    let server = Guard::spawn_ready(
        Command::new(BRAID)
            .args(["perf", "server", "--bind", &addr, "--json", "--one-off"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
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
            .args([
                "--time",
                "2s",
                "--msg-size",
                "1048576",
                "--interactive",
                "100@50",
            ])
            .args([
                "--scheduler",
                "fc",
                "--idata",
                "on",
                "--json",
                "--timing-log",
            ])
            .arg(&log)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let c = client.wait();
    assert!(
        c.status.success(),
        "client failed: {}",
        String::from_utf8_lossy(&c.stderr)
    );
    let s = server.wait();
    let (cj, sj) = (json(&c.stdout), json(&s.stdout));
    assert_eq!(cj["ok"], true, "{cj}");
    // The server verified both streams complete: bulk 1 MiB messages and the small ones.
    assert_eq!(sj["ok"], true, "{sj}");
    assert_eq!(cj["streams"], 2);
    let text = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    let lines: Vec<Vec<u128>> = text
        .lines()
        .map(|l| l.split(' ').map(|f| f.parse().unwrap()).collect())
        .collect();
    // 2 s at 50 per second: 100 small messages, seq 0..99 on stream 1, accepted after called.
    assert_eq!(lines.len(), 100);
    for (k, l) in lines.iter().enumerate() {
        assert_eq!(l[..2], [1, k as u128]);
        assert!(l[3] >= l[2]);
    }
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
    let server = Guard::spawn_ready(
        Command::new(BRAID)
            .args(["perf", "server", "--json", "--one-off"])
            .args(["--bind", &format!("127.0.0.1:{port}")])
            .args(["--bind", &format!("127.0.0.2:{port}")])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
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
    // The scheduler names are the core's, and a bad one lists them.
    let o = Command::new(BRAID)
        .args(["perf", "client", "--bind", "127.0.0.1:0"])
        .args(["--connect", "127.0.0.1:9", "--time", "1s"])
        .args(["--scheduler", "lottery"])
        .output()
        .unwrap();
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("unknown stream scheduler \"lottery\" (expected one of: fcfs, rr, rr-packet, priority, fc, wfq, fixed, adaptive)"),
        "{e}"
    );
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
    let server = Guard::spawn_ready(
        Command::new(BRAID)
            .args(["nc", "--listen", "--echo", "--bind", &addr])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
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

/// Wall time, to bound how long a subprocess took.
#[expect(
    clippy::disallowed_methods,
    reason = "a subprocess test measures wall time; no core is driven here"
)]
fn clock() -> std::time::Instant {
    std::time::Instant::now()
}

/// Sends `sig` (e.g. `-INT`, `-KILL`) to the child.
fn signal(g: &Guard, sig: &str) {
    let pid = g.0.as_ref().unwrap().id().to_string();
    let ok = Command::new("kill").args([sig, &pid]).status().unwrap();
    assert!(ok.success(), "kill {sig} {pid}");
}

/// A long-running (not --one-off) server with `--json` and the extra flags.
fn multi_server(addr: &str, extra: &[&str]) -> Guard {
    Guard::spawn_ready(
        Command::new(BRAID)
            .args(["perf", "server", "--bind", addr, "--json"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
}

/// A perf client to `addr` with the extra flags (bind, size, ...), not yet waited for.
fn perf_client(addr: &str, extra: &[&str]) -> Guard {
    Guard::spawn(
        Command::new(BRAID)
            .args(["perf", "client", "--connect", addr])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
}

/// Every JSON line of a server's stdout, by association id.
fn sessions(out: &[u8]) -> Vec<serde_json::Value> {
    let mut v: Vec<serde_json::Value> = String::from_utf8_lossy(out)
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    v.sort_by_key(|j| j["id"].as_u64());
    v
}

fn assert_ok(o: &Output, what: &str) {
    assert!(
        o.status.success(),
        "{what}: {} {}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn perf_server_serves_clients_one_after_another_and_at_once() {
    let addr = format!("127.0.0.1:{}", free_port());
    let server = multi_server(&addr, &[]);
    let sized = ["--bytes", "5MiB", "--json"];
    // Two in a row from the same address and SCTP port (a new UDP port each time).
    for i in 0..2 {
        let one = ["--bind", "127.0.0.1:0", "--local-port", "5003"];
        let c = perf_client(&addr, &[&one[..], &sized].concat()).wait();
        assert_ok(&c, &format!("sequential client {i}"));
    }
    // Two at once from the same address: each has its own (ephemeral) SCTP port.
    let a = perf_client(&addr, &[&["--bind", "127.0.0.1:0"][..], &sized].concat());
    let b = perf_client(&addr, &[&["--bind", "127.0.0.1:0"][..], &sized].concat());
    assert_ok(&a.wait(), "concurrent client a");
    assert_ok(&b.wait(), "concurrent client b");
    // An explicit SCTP port, and another address.
    let c = perf_client(
        &addr,
        &[
            &["--bind", "127.0.0.1:0", "--local-port", "5002"][..],
            &sized,
        ]
        .concat(),
    );
    let d = perf_client(&addr, &[&["--bind", "127.0.0.2:0"][..], &sized].concat());
    assert_ok(&c.wait(), "concurrent client c");
    assert_ok(&d.wait(), "concurrent client d");
    // Ctrl-C stops a long-running server; with nothing in progress that is a success.
    std::thread::sleep(Duration::from_millis(200));
    signal(&server, "-INT");
    let s = server.wait();
    assert_ok(&s, "server");
    let runs = sessions(&s.stdout);
    assert_eq!(runs.len(), 6, "{runs:?}");
    for (i, j) in runs.iter().enumerate() {
        assert_eq!(j["id"], i as u64 + 1);
        assert_eq!(j["ok"], true, "{j}");
        assert_eq!(j["bytes"], 5 << 20);
    }
}

#[test]
fn perf_server_survives_killed_aborting_and_misbehaving_clients() {
    let addr = format!("127.0.0.1:{}", free_port());
    let server = multi_server(&addr, &["--idle-timeout", "2s"]);
    let long = ["--time", "30s", "--json"];
    // Killed mid-transfer: it vanishes without a word.
    let killed = perf_client(&addr, &[&["--bind", "127.0.0.1:0"][..], &long].concat());
    // Interrupted: it aborts the association (ABORT, User-Initiated Abort).
    let aborting = perf_client(&addr, &[&["--bind", "127.0.0.2:0"][..], &long].concat());
    std::thread::sleep(Duration::from_millis(1500));
    signal(&killed, "-KILL");
    signal(&aborting, "-INT");
    let a = aborting.wait();
    assert!(!a.status.success());
    assert_eq!(json(&a.stdout)["interrupted"], true);
    // Misbehaving: data that is not the perf format.
    let mut nc = Guard::spawn(
        Command::new(BRAID)
            .args(["nc", "--bind", "127.0.0.3:0", "--connect", &addr])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    let mut stdin = nc.0.as_mut().unwrap().stdin.take().unwrap();
    stdin.write_all(b"this is not the perf format\n").unwrap();
    drop(stdin);
    let n = nc.wait();
    assert!(!n.status.success(), "nc: the server should have aborted");
    // Once the idle timeout has ended the killed client's association, a new client from
    // the same address and SCTP port is served and verifies.
    std::thread::sleep(Duration::from_millis(3000));
    let later = perf_client(
        &addr,
        &["--bind", "127.0.0.1:0", "--bytes", "5MiB", "--json"],
    )
    .wait();
    assert_ok(&later, "later client");
    signal(&server, "-INT");
    let s = server.wait();
    assert_ok(&s, "server");
    let err = String::from_utf8_lossy(&s.stderr);
    let runs = sessions(&s.stdout);
    assert_eq!(runs.len(), 4, "{runs:?} {err}");
    let by_peer = |ip: &str| {
        runs.iter()
            .find(|j| j["peer"].as_str().unwrap().starts_with(ip) && j["ok"] == false)
            .unwrap_or_else(|| panic!("no failed run from {ip}: {runs:?}"))
    };
    let e = |j: &serde_json::Value| j["error"].as_str().unwrap().to_string();
    // The killed client's port answers ICMP port unreachable, which may end the
    // association before the idle timeout does.
    for (ip, want) in [
        (
            "127.0.0.1:",
            &["nothing received for 2s", "peer unreachable"][..],
        ),
        // The interrupted client's ABORT, or (if its process was gone before the ABORT
        // left) the ICMP port unreachable its port answers with.
        (
            "127.0.0.2:",
            &[
                "aborted by the peer: User-Initiated Abort",
                "peer unreachable",
            ][..],
        ),
        ("127.0.0.3:", &["verification failed"]),
    ] {
        let got = e(by_peer(ip));
        assert!(
            want.iter().any(|w| got.contains(w)),
            "{ip}: {got:?} lacks {want:?}"
        );
    }
    assert_eq!(runs.iter().filter(|j| j["ok"] == true).count(), 1);
    // Each failure is also on stderr, in words.
    let reports = err.lines().filter(|l| l.starts_with("braid perf server: "));
    assert_eq!(reports.count(), 3, "{err}");
    assert!(!err.contains("Some(") && !err.contains("[Us"), "{err}");
}

#[test]
fn perf_client_ctrl_c_prints_the_summary() {
    let addr = format!("127.0.0.1:{}", free_port());
    let server = Guard::spawn_ready(
        Command::new(BRAID)
            .args(["perf", "server", "--bind", &addr, "--one-off"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let client = perf_client(&addr, &["--bind", "127.0.0.1:0", "--time", "30s"]);
    std::thread::sleep(Duration::from_millis(1500));
    let t = clock();
    signal(&client, "-INT");
    let c = client.wait();
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    let out = String::from_utf8_lossy(&c.stdout);
    assert!(
        !c.status.success(),
        "incomplete data must not exit 0: {out}"
    );
    assert!(out.contains("[SUM]"), "{out}");
    assert!(out.contains("all acknowledged: no"), "{out}");
    assert!(out.contains("interrupted (Ctrl-C or SIGTERM)"), "{out}");
    assert!(out.contains("the data is incomplete"), "{out}");
    // The one-off server reports the incomplete run and fails.
    let s = server.wait();
    assert!(!s.status.success());
    let sout = String::from_utf8_lossy(&s.stdout);
    assert!(sout.contains("no LAST message"), "{sout}");
}

#[test]
fn streams_beyond_the_negotiated_count_fail_fast() {
    let addr = format!("127.0.0.1:{}", free_port());
    let listener = Guard::spawn_ready(
        Command::new(BRAID)
            .args(["nc", "--listen", "--bind", &addr])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    let t = clock();
    let c = Guard::spawn(
        Command::new(BRAID)
            .args(["nc", "--bind", "127.0.0.1:0", "--connect", &addr])
            .args(["--stream", "1024"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    )
    .wait();
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    assert!(!c.status.success());
    let e = String::from_utf8_lossy(&c.stderr);
    assert!(
        e.contains("--stream 1024: the association has 1024 outbound stream(s)"),
        "{e}"
    );
    drop(listener);
    // perf: the server accepts 1024 inbound streams.
    let addr = format!("127.0.0.1:{}", free_port());
    let server = multi_server(&addr, &[]);
    let c = perf_client(
        &addr,
        &["--bind", "127.0.0.1:0", "--time", "5s", "--streams", "2000"],
    )
    .wait();
    assert!(!c.status.success());
    let e = String::from_utf8_lossy(&c.stderr);
    assert!(
        e.contains("--streams 2000: the association has 1024"),
        "{e}"
    );
    drop(server);
}

#[test]
fn bind_to_an_address_in_use_names_it() {
    let held = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = held.local_addr().unwrap().to_string();
    let runs: [&[&str]; 3] = [
        &["perf", "server", "--bind", &addr],
        &[
            "perf",
            "client",
            "--bind",
            &addr,
            "--connect",
            "127.0.0.1:9",
            "--time",
            "1s",
        ],
        &["nc", "--listen", "--bind", &addr],
    ];
    for args in runs {
        let o = Command::new(BRAID)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!o.status.success());
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(
            e.contains(&format!("address {addr} already in use")),
            "{args:?}: {e}"
        );
        assert!(!e.contains("Os {") && !e.contains("code:"), "{e}");
    }
}

/// `--log` installs a subscriber: the core's own events reach stderr (here the debug event
/// of the association's close), and a filter that does not parse is an error, not silence.
/// `--qlog DIR` writes the association's qlog (JSON-SEQ) there.
#[test]
fn log_shows_the_cores_events_and_qlog_writes_a_file() {
    let qdir = std::env::temp_dir().join(format!("braid-cli-qlog-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&qdir);
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
    let server = Guard::spawn_ready(
        Command::new(BRAID)
            .args(["perf", "server", "--bind", &addr, "--one-off"])
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    );
    let client = Guard::spawn(
        Command::new(BRAID)
            .args(["--log", "braid_proto=debug", "perf", "client"])
            .args([
                "--bind",
                "127.0.0.1:0",
                "--connect",
                &addr,
                "--bytes",
                "1MiB",
            ])
            .arg("--qlog")
            .arg(&qdir)
            .stdout(Stdio::null())
            .stderr(Stdio::piped()),
    );
    let c = client.wait();
    server.wait();
    let err = String::from_utf8_lossy(&c.stderr);
    assert!(c.status.success(), "{err}");
    assert!(err.contains("association closed"), "{err}");
    let qlog = std::fs::read_to_string(qdir.join("assoc-0.sqlog")).unwrap();
    std::fs::remove_dir_all(&qdir).unwrap();
    let records: Vec<serde_json::Value> = qlog
        .split('\u{1e}')
        .filter(|r| !r.is_empty())
        .map(|r| serde_json::from_str(r).unwrap())
        .collect();
    assert_eq!(records[0]["qlog_format"], "JSON-SEQ");
    let has = |n: &str| records.iter().any(|r| r["name"] == n);
    assert!(has("recovery:metrics_updated") && has("connectivity:connection_state_updated"));
    let bad = Command::new(BRAID)
        .args(["--log", "braid_proto=[", "demo"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--log"));
}

/// iperf3's first commands: `perf -s` and `perf -c localhost -t T -P 2 -R -J` (the server
/// sends, two associations, one JSON object with the start, the intervals and the sums).
#[test]
fn iperf_forms_reverse_parallel_json() {
    let port = free_port().to_string();
    let server = Guard::spawn_ready(
        Command::new(BRAID)
            .args(["perf", "-s", "-B", "127.0.0.1", "-p", &port, "-J"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let c = Guard::spawn(
        Command::new(BRAID)
            .args(["perf", "-c", "localhost", "-p", &port])
            .args(["-t", "1.5", "-P", "2", "-R", "-J", "-i", "0.5"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .wait();
    assert_ok(&c, "client");
    let j = json(&c.stdout);
    assert_eq!(j["ok"], true, "{j}");
    assert!(j["version"].as_str().unwrap().starts_with("braid "), "{j}");
    assert_eq!(j["start"]["test"]["reverse"], true);
    assert_eq!(j["start"]["test"]["num_associations"], 2);
    let assocs = j["associations"].as_array().unwrap();
    assert_eq!(assocs.len(), 2);
    let mut total = 0;
    for a in assocs {
        // The client sent nothing but its parameters; it verified what the server sent.
        assert_eq!(a["bytes"], 0, "{a}");
        let r = a["received_bytes"].as_u64().unwrap();
        assert!(r > 0, "{a}");
        total += r;
    }
    assert_eq!(j["received_bytes"], total);
    assert_eq!(j["end"]["sum_received"]["bytes"], total);
    let intervals = j["intervals"].as_array().unwrap();
    assert!(intervals.len() >= 2, "{j}");
    let in_intervals: u64 = intervals
        .iter()
        .map(|i| i["sum"]["bytes_received"].as_u64().unwrap())
        .sum();
    assert_eq!(in_intervals, total, "the intervals add up to the run");
    // The server served both and says what it sent; SIGTERM ends it cleanly.
    std::thread::sleep(Duration::from_millis(300));
    signal(&server, "-TERM");
    let s = server.wait();
    assert_ok(&s, "server");
    let runs = sessions(&s.stdout);
    assert_eq!(runs.len(), 2, "{runs:?}");
    let sent: u64 = runs.iter().map(|r| r["bytes_sent"].as_u64().unwrap()).sum();
    assert_eq!(sent, total);
    assert!(runs.iter().all(|r| r["ok"] == true && r["reverse"] == true));
}

/// `--bidir --get-server-output`: both sides send a fixed amount, each verifies the other's,
/// and the server's report comes back to the client.
#[test]
fn iperf_bidir_with_the_servers_report() {
    let port = free_port().to_string();
    let server = Guard::spawn_ready(
        Command::new(BRAID)
            .args(["perf", "-s", "-1", "-B", "127.0.0.1", "-p", &port, "-J"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let c = Guard::spawn(
        Command::new(BRAID)
            .args(["perf", "-c", "127.0.0.1", "-p", &port, "-n", "4MiB"])
            .args(["--bidir", "--get-server-output", "-J", "--streams", "3"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .wait();
    assert_ok(&c, "client");
    let s = server.wait();
    assert_ok(&s, "server");
    let j = json(&c.stdout);
    assert_eq!(j["bytes"], 4 << 20);
    assert_eq!(j["bytes_acked"], 4 << 20);
    assert_eq!(j["received_bytes"], 4 << 20);
    // What the handshake agreed, from both sides.
    assert_eq!(j["negotiated"]["outbound_streams"], 16, "{j}");
    assert_eq!(j["negotiated"]["nr_sack"], true, "{j}");
    let out = &j["server_output"];
    assert_eq!(out["role"], "server", "{j}");
    assert_eq!(out["bytes"], 4 << 20);
    assert_eq!(out["bytes_sent"], 4 << 20);
    assert_eq!(out["bidir"], true);
    let sj = json(&s.stdout);
    assert_eq!(sj["bytes_sent_acked"], 4 << 20);
}

/// SIGTERM ends a client as Ctrl-C does: the summary, saying the data is incomplete.
#[test]
fn perf_client_sigterm_prints_the_summary() {
    let port = free_port().to_string();
    let server = Guard::spawn_ready(
        Command::new(BRAID)
            .args(["perf", "-s", "-1", "-B", "127.0.0.1", "-p", &port])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let client = Guard::spawn(
        Command::new(BRAID)
            .args(["perf", "-c", "127.0.0.1", "-p", &port, "-t", "30"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    std::thread::sleep(Duration::from_millis(1500));
    signal(&client, "-TERM");
    let c = client.wait();
    let out = String::from_utf8_lossy(&c.stdout);
    assert!(!c.status.success(), "{out}");
    assert!(out.contains("[SUM]"), "{out}");
    assert!(out.contains("all acknowledged: no"), "{out}");
    assert!(out.contains("the data is incomplete"), "{out}");
    let s = server.wait();
    assert!(!s.status.success());
}

/// `-b`: the client hands messages to the association no faster than the target rate.
#[test]
fn perf_bitrate_caps_the_sending_rate() {
    let port = free_port().to_string();
    let server = Guard::spawn_ready(
        Command::new(BRAID)
            .args(["perf", "-s", "-1", "-B", "127.0.0.1", "-p", &port])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let c = Guard::spawn(
        Command::new(BRAID)
            .args(["perf", "-c", "127.0.0.1", "-p", &port, "-t", "1"])
            .args(["-b", "20M", "-J"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .wait();
    assert_ok(&c, "client");
    assert_ok(&server.wait(), "server");
    let j = json(&c.stdout);
    // 20 Mbit/s for one second is 2.5 MB: the pacing lets one message past it, then the
    // round of LAST messages ends the run.
    let bytes = j["bytes"].as_u64().unwrap();
    assert!(bytes <= 2_500_000 + 2 * 1452, "{bytes}");
    assert!(bytes > 0);
}

/// `--one-way-delay`: every message carries the sender's clock, and the receiver reports
/// each stream's delay and jitter (one host: one clock, so delays are not negative).
#[test]
fn perf_one_way_delay_per_stream_at_the_receiver() {
    let (cj, sj) = run_perf(&[], &["--one-way-delay", "--streams", "2"], 20 << 20);
    let d = sj["one_way_delay"].as_array().unwrap();
    assert_eq!(d.len(), 2, "{sj}");
    let per_stream: u64 = d.iter().map(|s| s["messages"].as_u64().unwrap()).sum();
    assert_eq!(per_stream, sj["messages"].as_u64().unwrap());
    for s in d {
        let (min, mean, max) = (
            s["min_ms"].as_f64().unwrap(),
            s["mean_ms"].as_f64().unwrap(),
            s["max_ms"].as_f64().unwrap(),
        );
        assert!(0.0 <= min && min <= mean && mean <= max, "{s}");
        assert!(s["jitter_ms"].as_f64().unwrap() >= 0.0, "{s}");
    }
    // The client received nothing, so it reports no delays.
    assert_eq!(cj["one_way_delay"], serde_json::json!([]));
}

/// `--flow`: several flows with their own sizes and rates in one run, each on its stream,
/// verified by the server (NetPerfMeter style).
#[test]
fn perf_flows_each_with_its_own_pattern() {
    let port = free_port().to_string();
    let server = Guard::spawn_ready(
        Command::new(BRAID)
            .args(["perf", "-s", "-1", "-B", "127.0.0.1", "-p", &port, "-J"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    );
    let c = Guard::spawn(
        Command::new(BRAID)
            .args(["perf", "-c", "127.0.0.1", "-p", &port, "-t", "1", "-J"])
            .args(["--flow", "1452@max", "--flow", "200@50", "--flow", "4KiB@4"])
            .args(["--one-way-delay"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .wait();
    assert_ok(&c, "client");
    let s = server.wait();
    assert_ok(&s, "server");
    let j = json(&c.stdout);
    let flows = j["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 3);
    // The paced flows send their rate times the duration, the bulk one the rest.
    assert_eq!(flows[1]["messages"], 50, "{j}");
    assert_eq!(flows[2]["messages"], 4, "{j}");
    assert_eq!(flows[2]["bytes"], 4 * 4096);
    assert!(flows[0]["messages"].as_u64().unwrap() > 50, "{j}");
    // The server saw each flow's messages on its stream, with their delays.
    let sj = json(&s.stdout);
    assert_eq!(sj["streams"], 3);
    let d = sj["one_way_delay"].as_array().unwrap();
    let counts: Vec<_> = d.iter().map(|s| s["messages"].clone()).collect();
    let sent: Vec<_> = flows.iter().map(|f| f["messages"].clone()).collect();
    assert_eq!(counts, sent, "{sj}");
}
