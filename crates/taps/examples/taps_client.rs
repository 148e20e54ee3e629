//! A Transport Services client racing braid/UDP against TCP (RFC 8305 staggered, 250 ms
//! Connection Attempt Delay by default), sending one message and waiting for its echo.
//!
//! ```text
//! cargo run --release -p braid-taps --example taps_client -- HOST:PORT \
//!     [--delay-ms N] [--timeout-ms N] [--policy FILE] [--cib FILE]
//! ```
//!
//! Prints one JSON line: the winning stack, its time to ready in milliseconds, the echo's
//! round trip, and every attempt's outcome; exits 1 with the EstablishmentError otherwise.

use std::sync::Arc;
use std::time::Duration;

use braid_taps::*;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut props = TransportProperties::new();
    let mut target = None;
    let (mut policy, mut cib) = (None, None);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--delay-ms" => {
                props.attempt_delay = Duration::from_millis(args.next().ok_or("N")?.parse()?);
            }
            "--timeout-ms" => {
                props.establishment_timeout =
                    Duration::from_millis(args.next().ok_or("N")?.parse()?);
            }
            "--policy" => policy = Some(args.next().ok_or("--policy FILE")?),
            "--cib" => cib = Some(args.next().ok_or("--cib FILE")?),
            s => target = Some(s.to_string()),
        }
    }
    let target = target.ok_or("usage: taps_client HOST:PORT [options]")?;
    let (host, port) = target.rsplit_once(':').ok_or("HOST:PORT")?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let remote = match host.parse::<std::net::IpAddr>() {
        Ok(ip) => RemoteEndpoint::new().with_ip_address(ip),
        Err(_) => RemoteEndpoint::new().with_host_name(host),
    }
    .with_port(port.parse()?);
    let mut pre = Preconnection::new(vec![], vec![remote], props, SecurityParameters::disabled());
    if let Some(p) = policy {
        pre = pre.with_policy_file(p)?;
    }
    if let Some(c) = cib {
        pre = pre.with_cib(Arc::new(Cib::open(c)?));
    }
    let (conn, report) = match pre.initiate_with_report().await {
        Ok(x) => x,
        Err(e) => {
            println!("{{\"error\": {:?}}}", e.to_string());
            std::process::exit(1);
        }
    };
    let ready = match report.winner().map(|w| &w.outcome) {
        Some(Outcome::Won(t)) => t.as_secs_f64() * 1e3,
        _ => f64::NAN,
    };
    let t0 = tokio::time::Instant::now();
    conn.send(Message::new(&b"hello over taps"[..])).await?;
    let echo = conn.receive().await?.ok_or("closed before the echo")?;
    let rtt = t0.elapsed().as_secs_f64() * 1e3;
    let attempts: Vec<String> = report
        .attempts
        .iter()
        .map(|a| {
            format!(
                "{{\"stack\": \"{}\", \"remote\": \"{}\", \"started_ms\": {}, \"outcome\": {:?}}}",
                a.candidate.stack,
                a.candidate.remote,
                a.started
                    .map_or("null".into(), |s| format!("{:.3}", s.as_secs_f64() * 1e3)),
                format!("{:?}", a.outcome)
            )
        })
        .collect();
    println!(
        "{{\"stack\": \"{}\", \"ready_ms\": {ready:.3}, \"attempt_delay_ms\": {}, \
         \"echo_ok\": {}, \"echo_rtt_ms\": {rtt:.3}, \"attempts\": [{}]}}",
        conn.stack(),
        report.attempt_delay.as_millis(),
        &echo.data[..] == b"hello over taps",
        attempts.join(", ")
    );
    conn.close().await;
    Ok(())
}
