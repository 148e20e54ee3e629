//! Two streams of one association on loopback, with per-stream handles and events: a
//! "chat" stream of messages and a "file" stream of bytes (AsyncWrite / AsyncRead).
//!
//! ```sh
//! cargo run --release -p braid-net --example multistream
//! ```

use std::error::Error;

use braid_net::{Endpoint, SchedulerKind};
use bytes::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const CHAT: u16 = 0;
const FILE: u16 = 1;

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let server = Endpoint::builder()
        .bind("127.0.0.1:0".parse()?)
        .listen(5001)
        .stream_scheduler(SchedulerKind::Priority)
        .build()?;
    let client = Endpoint::builder()
        .bind("127.0.0.1:0".parse()?)
        .stream_scheduler(SchedulerKind::Priority)
        .build()?;
    let to = server.local_addrs()[0];

    let serve = tokio::spawn(async move {
        let a = server.accept().await?;
        let mut events = a.events();
        tokio::spawn(async move {
            while let Some(e) = events.next().await {
                println!("server event: {e:?}");
            }
        });
        // Each stream the client uses arrives as a RecvStream of its own.
        let mut chat = a.accept_stream().await.ok_or("no stream")?;
        let mut file = a.accept_stream().await.ok_or("no stream")?;
        if chat.id() != CHAT {
            std::mem::swap(&mut chat, &mut file);
        }
        let chat_task = tokio::spawn(async move {
            while let Ok(Some(m)) = chat.recv().await {
                println!("chat: {}", String::from_utf8_lossy(&m.data));
            }
        });
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).await?;
        println!(
            "file: {} bytes, ends with {:?}",
            bytes.len(),
            &bytes[bytes.len() - 4..]
        );
        chat_task.await?;
        println!("server: association {}", a.closed().await);
        server.close().await;
        Ok::<_, Box<dyn Error + Send + Sync>>(())
    });

    let a = client.connect(&[to], 5001).await?;
    let mut events = a.events();
    let chat = a.open_stream(CHAT)?;
    let mut file = a.open_stream(FILE)?;
    // The chat goes before the bulk transfer (priority scheduler: lower first).
    chat.set_priority(0)?;
    file.set_priority(1)?;
    file.set_write_chunk(8 * 1024);
    let upload = tokio::spawn(async move {
        let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        file.write_all(&data).await?;
        Ok::<_, std::io::Error>(())
    });
    for line in ["hello", "a file is on its way", "bye"] {
        chat.send(Bytes::from(line)).await?;
    }
    upload.await??;
    // Graceful: everything written is delivered first.
    a.shutdown().await?;
    // Published by the endpoint's task, readable without await, kept after the close.
    let st = a.stats();
    println!(
        "client: {} messages, {} bytes acknowledged",
        st.messages_sent, st.bytes_acked
    );
    for p in a.paths() {
        println!(
            "client path {} -> {}: {:?}, srtt {:?}, cwnd {}",
            p.local, p.remote, p.state, p.srtt, p.cwnd
        );
    }
    while let Some(e) = events.next().await {
        println!("client event: {e:?}");
    }
    serve.await?.map_err(|e| e.to_string())?;
    client.close().await;
    Ok(())
}
