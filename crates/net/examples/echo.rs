//! SCTP-over-UDP echo with braid-net.
//!
//! ```text
//! cargo run -p braid-net --example echo -- server 127.0.0.1:9899
//! cargo run -p braid-net --example echo -- client 127.0.0.1:9899 [messages]
//! ```
//!
//! The server echoes every message back on the stream it came on; the client sends
//! messages round-robin over four streams, checks the echoes and shuts down gracefully.
//! Both use SCTP port 5001 (the endpoint's default); the address is the UDP one.

use std::error::Error;
use std::net::SocketAddr;

use braid_net::{Endpoint, EndpointConfig, SendOptions};
use bytes::Bytes;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: echo server|client ADDR [messages]";
    let mode = args.first().ok_or(usage)?;
    let addr: SocketAddr = args.get(1).ok_or(usage)?.parse()?;
    match mode.as_str() {
        "server" => server(addr).await,
        "client" => {
            let n = args.get(2).map_or(Ok(10), |s| s.parse())?;
            client(addr, n).await
        }
        _ => Err(usage.into()),
    }
}

async fn server(addr: SocketAddr) -> Result<(), Box<dyn Error>> {
    let cfg = EndpointConfig {
        listen: true,
        ..Default::default()
    };
    let ep = Endpoint::bind(cfg, &[addr])?;
    println!("listening on udp {}", ep.local_addrs()[0]);
    while let Ok(a) = ep.accept().await {
        tokio::spawn(async move {
            let paths = a.paths();
            let peer = paths.first().map(|p| p.remote);
            println!("association {:?} from {peer:?}", a.id());
            let mut n = 0u64;
            while let Ok(Some(m)) = a.recv().await {
                n += 1;
                let opts = SendOptions {
                    ppid: m.ppid,
                    ..Default::default()
                };
                if let Err(e) = a.send(m.stream_id, m.data, opts).await {
                    println!("send failed: {e}");
                    break;
                }
            }
            println!("association {:?} closed after {n} messages", a.id());
        });
    }
    Ok(())
}

async fn client(addr: SocketAddr, n: usize) -> Result<(), Box<dyn Error>> {
    let local: SocketAddr = if addr.is_ipv4() {
        "0.0.0.0:0".parse()?
    } else {
        "[::]:0".parse()?
    };
    let ep = Endpoint::bind(EndpointConfig::default(), &[local])?;
    let a = ep.connect(&[addr], 5001).await?;
    println!("connected to {addr}");
    for i in 0..n {
        let stream = (i % 4) as u16;
        let msg = format!("hello #{i} on stream {stream}");
        a.send(stream, Bytes::from(msg), SendOptions::default())
            .await?;
    }
    for _ in 0..n {
        let m = a.recv().await?.ok_or("association closed early")?;
        println!(
            "echo on stream {}: {}",
            m.stream_id,
            String::from_utf8_lossy(&m.data)
        );
    }
    println!("stats: {:?}", a.stats());
    a.shutdown().await?;
    ep.close().await;
    Ok(())
}
