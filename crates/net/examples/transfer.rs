//! A multi-homed file transfer with CMT over braid-net.
//!
//! ```text
//! cargo run -p braid-net --example transfer -- receive OUT 127.0.0.1:9900 127.0.0.2:9900
//! cargo run -p braid-net --example transfer -- send IN 127.0.0.1:9900 127.0.0.3:0 127.0.0.4:0
//! ```
//!
//! The receiver binds every address it is given (one socket each, the same UDP port) and
//! writes the first association's data to OUT. The sender binds its local addresses, connects
//! to the receiver's first address (the INIT-ACK tells it the others), sends IN in 64 KiB
//! messages on one ordered stream with Concurrent Multipath Transfer on, and prints how many
//! bytes each path carried. Ordered delivery on one stream keeps the file in order whatever
//! path each piece took.

use std::error::Error;
use std::net::SocketAddr;

use braid_net::{AssociationConfig, Endpoint, EndpointConfig, SendOptions};
use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CHUNK: usize = 64 * 1024;

fn config(listen: bool) -> EndpointConfig {
    EndpointConfig {
        listen,
        association: AssociationConfig {
            cmt: Some(braid_net::CmtConfig::default()),
            ..Default::default()
        },
        ..Default::default()
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: transfer receive OUT ADDR... | transfer send IN PEER LOCAL...";
    let (mode, file) = match (args.first(), args.get(1)) {
        (Some(m), Some(f)) => (m.as_str(), f.as_str()),
        _ => return Err(usage.into()),
    };
    let addrs: Vec<SocketAddr> = args[2..]
        .iter()
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    match (mode, addrs.as_slice()) {
        ("receive", [_, ..]) => receive(file, &addrs).await,
        ("send", [peer, _, ..]) => send(file, *peer, &addrs[1..]).await,
        _ => Err(usage.into()),
    }
}

async fn receive(out: &str, addrs: &[SocketAddr]) -> Result<(), Box<dyn Error>> {
    let ep = Endpoint::bind(config(true), addrs)?;
    println!("listening on {:?}", ep.local_addrs());
    let a = ep.accept().await?;
    let mut f = tokio::fs::File::create(out).await?;
    let mut total = 0usize;
    while let Ok(Some(m)) = a.recv().await {
        f.write_all(&m.data).await?;
        total += m.data.len();
    }
    f.flush().await?;
    println!("received {total} bytes into {out}");
    ep.close().await;
    Ok(())
}

async fn send(input: &str, peer: SocketAddr, locals: &[SocketAddr]) -> Result<(), Box<dyn Error>> {
    let ep = Endpoint::bind(config(false), locals)?;
    let a = ep.connect(&[peer], 5001).await?;
    let mut f = tokio::fs::File::open(input).await?;
    let mut buf = vec![0u8; CHUNK];
    let mut total = 0usize;
    loop {
        let n = f.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        // `send` waits while the send buffer is full: backpressure, never a silent drop.
        a.send(0, Bytes::copy_from_slice(&buf[..n]), SendOptions::default())
            .await?;
        total += n;
    }
    for p in a.paths() {
        println!(
            "path {} -> {}: {} bytes sent, state {}",
            p.local, p.remote, p.stats.bytes_sent, p.state
        );
    }
    // Returns once the peer acknowledged everything (graceful SHUTDOWN).
    a.shutdown().await?;
    println!("sent {total} bytes from {input}");
    ep.close().await;
    Ok(())
}
