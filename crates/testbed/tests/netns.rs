//! The emulator on real namespaces: UDP datagrams from a left host through an emulated
//! 10 Mbit/s, 10 ms link to a right host, checking the one-way delay and the rate. Skips
//! (and passes) without root, `ip netns` or /dev/net/tun. Binds only inside the namespaces
//! it creates; bounded to a few seconds.

use std::net::UdpSocket;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use braid_testbed::plumb::ip;
use braid_testbed::{EmuConfig, Emulator, PlumbOptions, in_namespace, plumb_link_namespace};

#[expect(clippy::disallowed_methods, reason = "a real-clock measurement")]
fn clock() -> std::time::Instant {
    std::time::Instant::now()
}

/// Deletes the namespaces it names when dropped.
struct Namespaces(Vec<String>);

impl Drop for Namespaces {
    fn drop(&mut self) {
        for n in &self.0 {
            let _ = Command::new("ip").args(["netns", "del", n]).status();
        }
    }
}

fn skip_reason() -> Option<String> {
    let uid = Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
        return Some("not root".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun".into());
    }
    match Command::new("ip").args(["netns", "list"]).output() {
        Ok(o) if o.status.success() => None,
        _ => Some("`ip netns` unavailable".into()),
    }
}

#[test]
fn udp_through_a_10mbit_10ms_link() {
    if let Some(why) = skip_reason() {
        eprintln!("SKIP: emulator namespace test: {why}");
        return;
    }
    let p = format!("btst{}-", std::process::id());
    let (nl, nk, nr) = (format!("{p}l"), format!("{p}k"), format!("{p}r"));
    let _guard = Namespaces(vec![nl.clone(), nk.clone(), nr.clone()]);
    for n in [&nl, &nk, &nr] {
        if ip(None, &["netns", "add", n]).is_err() {
            eprintln!("SKIP: emulator namespace test: cannot create namespaces");
            return;
        }
        ip(Some(n), &["link", "set", "lo", "up"]).unwrap();
    }
    let sh = |args: &[&str]| ip(None, args).unwrap();
    sh(&[
        "link", "add", "l0", "netns", &nl, "type", "veth", "peer", "name", "kl", "netns", &nk,
    ]);
    sh(&[
        "link", "add", "r0", "netns", &nr, "type", "veth", "peer", "name", "kr", "netns", &nk,
    ]);
    for (n, dev, addr) in [
        (&nl, "l0", "10.214.1.2/24"),
        (&nk, "kl", "10.214.1.1/24"),
        (&nk, "kr", "10.214.2.1/24"),
        (&nr, "r0", "10.214.2.2/24"),
    ] {
        ip(Some(n), &["addr", "add", addr, "dev", dev]).unwrap();
        ip(Some(n), &["link", "set", dev, "up"]).unwrap();
    }
    ip(Some(&nl), &["route", "add", "default", "via", "10.214.1.1"]).unwrap();
    ip(Some(&nr), &["route", "add", "default", "via", "10.214.2.1"]).unwrap();

    let (path, _) = braid_testbed::config::parse_link(
        "name = \"t\"\nrate = \"10Mbit/s\"\ndelay = \"10ms\"\nqueue = 1000\n",
    )
    .unwrap();
    let mut cfg = EmuConfig::from_path(&path, 1);
    cfg.duration = Some(Duration::from_secs(15));
    let plumbing = plumb_link_namespace(&nk, "kl", "kr", &PlumbOptions::default()).unwrap();
    let rx = in_namespace(&nr, || UdpSocket::bind("10.214.2.2:9000")).unwrap();
    let tx = in_namespace(&nl, || UdpSocket::bind("10.214.1.2:0")).unwrap();
    rx.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let stop = AtomicBool::new(false);
    let epoch = clock();

    let (stats, arrivals) = std::thread::scope(|s| {
        let emu = s.spawn(|| Emulator::new(cfg).run(plumbing.forward(), plumbing.reverse(), &stop));
        // The receiver: (sequence number, send time, arrival time), until quiet for 2 s.
        let receiver = s.spawn(|| {
            let mut got = Vec::new();
            let mut buf = [0u8; 2048];
            while let Ok(n) = rx.recv(&mut buf) {
                let at = epoch.elapsed();
                let seq = u32::from_be_bytes(buf[..4].try_into().unwrap());
                let sent = Duration::from_nanos(u64::from_be_bytes(buf[4..12].try_into().unwrap()));
                got.push((seq, sent, at, n));
                if seq == u32::MAX {
                    break;
                }
            }
            got
        });
        let send = |seq: u32, len: usize| {
            let mut b = vec![0u8; len];
            b[..4].copy_from_slice(&seq.to_be_bytes());
            let t = epoch.elapsed().as_nanos() as u64;
            b[4..12].copy_from_slice(&t.to_be_bytes());
            tx.send_to(&b, "10.214.2.2:9000").unwrap();
        };
        // Delay probes: 100-byte payloads (128-byte IP packets), 5 ms apart.
        for seq in 0..50 {
            send(seq, 100);
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(50));
        // Rate: 400 back to back, 1222-byte payloads (1250-byte IP packets: 1 ms each).
        for seq in 1000..1400 {
            send(seq, 1222);
        }
        std::thread::sleep(Duration::from_millis(600));
        send(u32::MAX, 100);
        let arrivals = receiver.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        (emu.join().unwrap().unwrap(), arrivals)
    });
    drop(plumbing);
    eprintln!("{}", serde_json::to_string_pretty(&stats).unwrap());

    // One-way delay: 10 ms plus 128 B at 10 Mbit/s (102.4 µs), plus the path's own time.
    let mut owd: Vec<Duration> = arrivals
        .iter()
        .filter(|a| a.0 < 50)
        .map(|a| a.2 - a.1)
        .collect();
    owd.sort();
    assert_eq!(owd.len(), 50, "every probe arrives");
    let median = owd[owd.len() / 2];
    eprintln!(
        "one-way delay: min {:?} median {median:?} max {:?}",
        owd[0], owd[49]
    );
    assert!(
        owd[0] >= Duration::from_micros(10_100),
        "faster than the link: {:?}",
        owd[0]
    );
    assert!(
        median <= Duration::from_micros(11_500),
        "median one-way delay {median:?}"
    );

    // Rate: arrivals of the back-to-back burst are one serialization apart.
    let burst: Vec<_> = arrivals
        .iter()
        .filter(|a| (1000..1400).contains(&a.0))
        .collect();
    assert_eq!(burst.len(), 400, "the queue holds the whole burst");
    assert!(burst.windows(2).all(|w| w[0].0 < w[1].0), "in order");
    let span = burst[399].2 - burst[0].2;
    let rate = 399.0 * 1250.0 * 8.0 / span.as_secs_f64();
    eprintln!("burst rate {:.3} Mbit/s over {span:?}", rate / 1e6);
    assert!(
        (9.5e6..10.5e6).contains(&rate),
        "rate {rate} bit/s, not 10 Mbit/s ± 5 %"
    );
    // The datagrams, and maybe a few packets of the hosts' own (IPv6 neighbour discovery).
    assert!(stats.forward.delivered_packets >= 451);
    assert_eq!(stats.forward.drops.queue, 0);
}
