//! `braid nc`: netcat over SCTP-over-UDP.
//!
//! Stdin is sent as messages on one stream: each `read` of stdin (up to 64 KiB, whatever
//! the pipe or terminal hands over: a line on a terminal, up to 64 KiB from a pipe or file)
//! becomes one message, so message boundaries are not meaningful, only the byte stream is.
//! Every message received (on any stream) is written to stdout as it arrives.
//!
//! The active side (`--connect`) shuts the association down gracefully once stdin ends and
//! exits 0 only when the shutdown completed, i.e. the peer acknowledged all its data. SCTP
//! has no half-close (a SHUTDOWN stops the peer from sending too), so before shutting down
//! it waits until all its data is acknowledged and then until nothing has arrived for
//! 250 ms ([`LINGER`]): answers to the last messages (an echo) still get through. The
//! passive side (`--listen`) serves one association and exits when it closes; with
//! `--echo` it sends every message back on the stream it came on instead of reading stdin.
//!
//! A `--stream` the association did not negotiate is refused as soon as it is established,
//! and a send error ends nc at once (it does not wait for the peer to close).

use std::cell::Cell;
use std::net::SocketAddr;
use std::time::Duration;

use braid_net::{Association, AssociationConfig, EndpointConfig, NetConfig, SendOptions};
use bytes::Bytes;
use clap::Args;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::time::Instant;

use crate::bind;

/// Errors reported to the user.
type Error = Box<dyn std::error::Error>;

/// Largest message made from one read of stdin.
const CHUNK: usize = 64 * 1024;

/// After stdin ends and everything is acknowledged: how long nothing must arrive before the
/// active side shuts down.
const LINGER: Duration = Duration::from_millis(250);

#[derive(Args)]
pub(crate) struct NcArgs {
    /// Local address and UDP port to bind (repeatable; port 0: chosen by the OS).
    #[arg(long, required = true)]
    bind: Vec<SocketAddr>,
    /// The peer's address and UDP port (repeatable); required unless --listen.
    #[arg(long, required_unless_present = "listen", conflicts_with = "listen")]
    connect: Vec<SocketAddr>,
    /// Wait for one association instead of connecting.
    #[arg(long)]
    listen: bool,
    /// With --listen: send every message back on the stream it came on (stdin is not read).
    #[arg(long, requires = "listen")]
    echo: bool,
    /// SCTP port (local, and the peer's with --connect).
    #[arg(long, default_value_t = 5001)]
    port: u16,
    /// Stream to send stdin on.
    #[arg(long, default_value_t = 0)]
    stream: u16,
}

pub(crate) fn run(args: NcArgs) -> Result<(), Error> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let res = rt.block_on(nc(args));
    // A read of stdin may still be blocked in tokio's blocking pool (after an error):
    // do not wait for the user to type a line before exiting.
    rt.shutdown_timeout(Duration::from_millis(100));
    res
}

async fn nc(args: NcArgs) -> Result<(), Error> {
    let cfg = EndpointConfig {
        port: args.port,
        listen: args.listen,
        association: AssociationConfig {
            outbound_streams: args.stream.saturating_add(1).max(16),
            send_buffer: 4 << 20,
            recv_buffer: 4 << 20,
            ..Default::default()
        },
        ..Default::default()
    };
    let ep = bind::endpoint(cfg, &args.bind, NetConfig::default())?;
    let a = if args.listen {
        eprintln!("braid nc: listening on udp {}", ep.local_addrs()[0]);
        ep.accept().await?
    } else {
        let to = crate::bind::list(&args.connect);
        tokio::time::timeout(
            Duration::from_secs(30),
            ep.connect(&args.connect, args.port),
        )
        .await
        .map_err(|_| format!("connect to {to}: timed out"))?
        .map_err(|e| crate::bind::connect_error(&to, args.port, &e))?
    };
    let res = if args.echo {
        echo(&a).await
    } else {
        match check_stream(&a, args.stream).await {
            Ok(()) => duplex(&a, args.stream, !args.listen).await,
            Err(e) => Err(e),
        }
    };
    drop(a);
    let _ = tokio::time::timeout(Duration::from_secs(5), ep.close()).await;
    res
}

/// Refuses a stream the association did not negotiate (RFC 9260 §5.1.1: the outbound count
/// is at most the peer's MIS), which would otherwise fail only at the first send.
async fn check_stream(a: &Association, stream: u16) -> Result<(), Error> {
    let (outbound, _) = a.open_streams();
    if stream >= outbound {
        return Err(format!(
            "--stream {stream}: the association has {outbound} outbound stream(s) (0 to {}, \
             as many as the peer accepts)",
            outbound.saturating_sub(1)
        )
        .into());
    }
    Ok(())
}

async fn echo(a: &Association) -> Result<(), Error> {
    while let Ok(Some(m)) = a.recv().await {
        let opts = SendOptions {
            ppid: m.ppid,
            ..Default::default()
        };
        if let Err(e) = a.send(m.stream_id, m.data, opts).await {
            // The peer shut down: nothing more can be sent.
            eprintln!("braid nc: echo: {e}");
            break;
        }
    }
    Ok(())
}

/// Stdin to the association, the association to stdout. `shutdown_at_eof`: the active side
/// shuts down once stdin ends; the passive side keeps writing until the peer closes.
async fn duplex(a: &Association, stream: u16, shutdown_at_eof: bool) -> Result<(), Error> {
    let last_rx = Cell::new(now());
    let out = async {
        let mut stdout = tokio::io::stdout();
        while let Ok(Some(m)) = a.recv().await {
            last_rx.set(now());
            stdout.write_all(&m.data).await?;
        }
        stdout.flush().await?;
        Ok::<(), Error>(())
    };
    let input = async {
        let mut stdin = tokio::io::stdin();
        let mut buf = vec![0u8; CHUNK];
        let mut sent = 0u64;
        loop {
            let n = stdin.read(&mut buf).await?;
            if n == 0 {
                break;
            }
            a.send(
                stream,
                Bytes::copy_from_slice(&buf[..n]),
                SendOptions::default(),
            )
            .await?;
            sent += n as u64;
        }
        if shutdown_at_eof {
            // Everything acknowledged, then LINGER without anything arriving.
            while a.stats().bytes_acked < sent {
                if let Some(r) = a.close_reason() {
                    return Err(braid_net::Error::Closed(r).into());
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            last_rx.set(last_rx.get().max(now()));
            loop {
                let quiet = now() - last_rx.get();
                if quiet >= LINGER {
                    break;
                }
                tokio::time::sleep(LINGER - quiet).await;
            }
            // Resolves once the peer acknowledged everything and the shutdown completed.
            a.shutdown().await?;
        }
        Ok::<(), Error>(())
    };
    // The first error ends both: a failed send must not leave nc waiting for the peer.
    tokio::try_join!(out, input).map(|_| ())
}

fn now() -> Instant {
    Instant::now()
}
