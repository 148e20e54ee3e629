//! A Transport Services server listening on braid/UDP and TCP at once (same port), echoing
//! every message of every Connection (and of the Connections peers clone into a group).
//!
//! ```text
//! cargo run --release -p braid-taps --example taps_server -- [IP:PORT] [--policy FILE]
//! ```
//!
//! Prints one line per accepted Connection: `accepted STACK from ADDR`.

use std::sync::Arc;

use braid_taps::*;

fn echo(c: Connection) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    Box::pin(async move {
        let c = Arc::new(c);
        let group = Arc::clone(&c);
        tokio::spawn(async move {
            while let Some(n) = group.connection_received().await {
                tokio::spawn(echo(n));
            }
        });
        while let Ok(Some(m)) = c.receive().await {
            if c.send(Message::new(m.data)).await.is_err() {
                break;
            }
        }
        c.close().await;
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut addr: std::net::SocketAddr = "127.0.0.1:4433".parse()?;
    let mut policy = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--policy" => policy = Some(args.next().ok_or("--policy FILE")?),
            s => addr = s.parse()?,
        }
    }
    let local = LocalEndpoint::new()
        .with_ip_address(addr.ip())
        .with_port(addr.port());
    let mut pre = Preconnection::new(
        vec![local],
        vec![],
        TransportProperties::new(),
        SecurityParameters::disabled(),
    );
    if let Some(p) = policy {
        pre = pre.with_policy_file(p)?;
    }
    let mut listener = pre.listen().await?;
    for (k, a) in listener.local_addrs() {
        println!("listening {k} {a}");
    }
    while let Some(c) = listener.connection_received().await {
        let info = c.info();
        println!("accepted {} from {}", info.stack, info.remote);
        tokio::spawn(echo(c));
    }
    Ok(())
}
