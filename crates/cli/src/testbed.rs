//! `braid testbed`: tools for the real-kernel testbed (network namespaces on this machine).
//!
//! `testbed emulate` runs the user-space link emulator of `braid-testbed` in a link
//! namespace: the simulator's link model, configured by a `[[path]]` table, applied to the
//! packets that cross the namespace between two interfaces.

use std::path::PathBuf;
use std::time::Duration;

use braid_testbed::{EmuConfig, Emulator, PlumbOptions};
use clap::Subcommand;

/// Errors reported to the user.
type Error = Box<dyn std::error::Error>;

#[derive(Subcommand)]
pub(crate) enum TestbedCommand {
    /// Emulate one bidirectional link inside the namespace LINK_NS: packets arriving on
    /// --left cross the forward link of the path in --config, packets arriving on --right
    /// its reverse link (the simulator's `forward_config`/`reverse_config`). Runs until
    /// Ctrl-C/SIGTERM or --duration, then undoes its routing and prints its statistics as
    /// JSON on stdout.
    Emulate {
        /// The link namespace (`ip netns` name); it routes between --left and --right.
        #[arg(long, value_name = "NAME")]
        link_ns: String,
        /// Its interface towards the left host (traffic from there takes the forward link).
        #[arg(long, value_name = "IF")]
        left: String,
        /// Its interface towards the right host.
        #[arg(long, value_name = "IF")]
        right: String,
        /// The link: the keys of one simulator `[[path]]` table (rate, delay, queue,
        /// queue_bytes, mtu, loss, reverse_loss, gilbert, hiccup, reorder_rate, spikes,
        /// spike_at, down, rate_changes, mtu_changes...), times counted from the start.
        #[arg(long, value_name = "LINK.toml")]
        config: PathBuf,
        /// Seed of the random draws (forward link stream 1, reverse stream 2, as the
        /// simulator's first path).
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Also write the statistics JSON to this file.
        #[arg(long, value_name = "FILE")]
        stats: Option<PathBuf>,
        /// Stop after this many seconds.
        #[arg(long, value_name = "S")]
        duration: Option<f64>,
        /// Busy-wait this many microseconds before each deadline instead of sleeping
        /// (precision for CPU).
        #[arg(long, default_value_t = 0)]
        spin_us: u64,
        /// Create this file once the plumbing is in place (for scripts to wait on).
        #[arg(long, value_name = "FILE")]
        ready: Option<PathBuf>,
    },
    /// Build the namespaces, links and emulators of a topology scenario (its `[[link]]`s;
    /// routes for its `[[flow]]`s) and leave them up (`braid testbed down` removes them).
    Up {
        /// The scenario (a topology: `[[link]]`s and `[[flow]]`s; see scenarios/README.md).
        file: PathBuf,
        #[command(flatten)]
        bed: BedArgs,
    },
    /// Build the testbed of a scenario, run its flows with real endpoints (braid perf, the
    /// kernel's TCP and MPTCP) for its duration, and write `runs.csv` and `summary.json` as
    /// `braid sim run` does (flow_{NAME}_goodput_mbps after the warm-up, jain_fairness,
    /// bottleneck_{LINK}_*); always tears it down, also on Ctrl-C or failure.
    Run {
        /// The scenario.
        file: PathBuf,
        #[command(flatten)]
        bed: BedArgs,
        /// Output directory [default: results/testbed-<file name without .toml>].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Seed of the emulators' random draws.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
    /// Remove a testbed: stop every process in its namespaces and delete them.
    Down {
        #[command(flatten)]
        bed: BedArgs,
    },
    /// A kernel TCP or MPTCP bulk stream (the testbed's competitors).
    Stream {
        #[command(subcommand)]
        command: StreamCommand,
    },
}

/// Which testbed.
#[derive(clap::Args)]
pub(crate) struct BedArgs {
    /// The testbed's name: the prefix of its namespaces (`NAME-n0`, `NAME-l0`...), so two
    /// testbeds never collide.
    #[arg(long, default_value = "braidtb")]
    name: String,
}

/// `braid testbed stream`.
#[derive(Subcommand)]
pub(crate) enum StreamCommand {
    /// Accept one stream, read it to its end, print what the application read as JSON
    /// (goodput from the first byte, and after --omit).
    Receive {
        /// Address and port to listen on.
        #[arg(long)]
        bind: std::net::SocketAddr,
        /// MPTCP (IPPROTO_MPTCP) instead of TCP.
        #[arg(long)]
        mptcp: bool,
        /// Leave this much of the start out of `omit_goodput_mbps` (e.g. 5s).
        #[arg(long, value_parser = crate::perf::parse_duration_or_zero, default_value = "0s")]
        omit: Duration,
        /// SO_RCVBUF (the kernel doubles it; autotuning off).
        #[arg(long, value_parser = crate::perf::parse_size)]
        buffer: Option<u64>,
        /// Also count the bytes read from this long after the start (`window_bytes`)...
        #[arg(long, value_parser = crate::perf::parse_duration_or_zero)]
        window_from: Option<Duration>,
        /// ...for this long.
        #[arg(long, value_parser = crate::perf::parse_duration, requires = "window_from")]
        window_for: Option<Duration>,
    },
    /// Send unresponsive UDP packets at a constant or Poisson rate for --time (a
    /// scenario's `[[cross]]` of kind `constant` or `poisson`).
    Blast {
        /// Local address (port 0: any).
        #[arg(long)]
        bind: std::net::SocketAddr,
        /// The sink.
        #[arg(long)]
        connect: std::net::SocketAddr,
        /// Mean rate, bits per second.
        #[arg(long)]
        rate_bps: f64,
        /// Packet size on the wire, bytes (IPv4 and UDP headers included).
        #[arg(long)]
        size: usize,
        /// Exponential gaps (Poisson arrivals) instead of even spacing.
        #[arg(long)]
        poisson: bool,
        /// Seed of the gaps.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// How long to send.
        #[arg(long, value_parser = crate::perf::parse_duration)]
        time: Duration,
    },
    /// Count the UDP packets that arrive for --time, and those inside a window.
    Sink {
        /// Address and port to receive on.
        #[arg(long)]
        bind: std::net::SocketAddr,
        /// How long to listen.
        #[arg(long, value_parser = crate::perf::parse_duration)]
        time: Duration,
        /// The window starts this long after the start...
        #[arg(long, value_parser = crate::perf::parse_duration_or_zero, default_value = "0s")]
        window_from: Duration,
        /// ...and lasts this long (default: to the end).
        #[arg(long, value_parser = crate::perf::parse_duration)]
        window_for: Option<Duration>,
    },
    /// A Pareto on/off flow of the kernel's TCP for --time: a Pareto gap, then a Pareto
    /// burst that ends when every byte is acknowledged, again (a scenario's `[[cross]]` of
    /// kind `pareto-onoff`).
    Onoff {
        /// Local address (port 0: any).
        #[arg(long)]
        bind: std::net::SocketAddr,
        /// The receiver (`braid testbed stream receive`).
        #[arg(long)]
        connect: std::net::SocketAddr,
        /// The kernel's congestion control.
        #[arg(long)]
        cc: Option<String>,
        /// Mean burst, bytes.
        #[arg(long)]
        size_mean: f64,
        /// Pareto shape of bursts (> 1).
        #[arg(long)]
        size_shape: f64,
        /// Mean gap.
        #[arg(long, value_parser = crate::perf::parse_duration)]
        gap_mean: Duration,
        /// Pareto shape of gaps (> 1).
        #[arg(long)]
        gap_shape: f64,
        /// Seed of the draws.
        #[arg(long, default_value_t = 0)]
        seed: u64,
        /// How long to run.
        #[arg(long, value_parser = crate::perf::parse_duration)]
        time: Duration,
    },
    /// Connect and write for --time.
    Send {
        /// Local address (port 0: any).
        #[arg(long)]
        bind: std::net::SocketAddr,
        /// The receiver.
        #[arg(long)]
        connect: std::net::SocketAddr,
        /// How long to write (e.g. 10s).
        #[arg(long, value_parser = crate::perf::parse_duration)]
        time: Duration,
        /// The kernel's congestion control (cubic, reno, bbr...).
        #[arg(long)]
        cc: Option<String>,
        /// MPTCP (IPPROTO_MPTCP) instead of TCP.
        #[arg(long)]
        mptcp: bool,
        /// SO_SNDBUF (the kernel doubles it; autotuning off).
        #[arg(long, value_parser = crate::perf::parse_size)]
        buffer: Option<u64>,
    },
}

/// A topology scenario file: the scenario and its raw tree (the links' tables go to the
/// emulators as written).
fn scenario(file: &std::path::Path) -> Result<(braid_sim::scenario::Scenario, toml::Value), Error> {
    let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let raw: toml::Value = toml::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    if raw.get("sweep").is_some() {
        return Err(format!(
            "{}: the testbed runs one point: remove the [sweep] table",
            file.display()
        )
        .into());
    }
    let s: braid_sim::scenario::Scenario =
        toml::from_str(&text).map_err(|e| format!("{}: {e}", file.display()))?;
    if !braid_sim::topology::is_topology(&s) {
        return Err(format!(
            "{}: the testbed runs topology scenarios ([[link]]s and [[flow]]s; two parallel \
             paths are two links between the same nodes)",
            file.display()
        )
        .into());
    }
    Ok((s, raw))
}

fn check_available() -> Result<(), Error> {
    match braid_testbed::bed::unavailable() {
        Some(why) => Err(format!("braid testbed: {why}").into()),
        None => Ok(()),
    }
}

pub(crate) fn run(command: TestbedCommand) -> Result<(), Error> {
    match command {
        TestbedCommand::Emulate {
            link_ns,
            left,
            right,
            config,
            seed,
            stats,
            duration,
            spin_us,
            ready,
        } => {
            let (path, warnings) = braid_testbed::config::load_link(&config)?;
            for w in warnings {
                eprintln!("braid testbed: warning: {w}");
            }
            let mut cfg = EmuConfig::from_path(&path, seed);
            cfg.spin = Duration::from_micros(spin_us);
            cfg.duration = duration
                .map(Duration::try_from_secs_f64)
                .transpose()
                .map_err(|e| format!("--duration: {e}"))?;
            let stop = braid_testbed::stop_on_signals()?;
            let plumbing = braid_testbed::plumb_link_namespace(
                &link_ns,
                &left,
                &right,
                &PlumbOptions::default(),
            )?;
            if let Some(r) = &ready {
                std::fs::write(r, b"")?;
            }
            let result = Emulator::new(cfg).run(plumbing.forward(), plumbing.reverse(), &stop);
            plumbing.teardown();
            let json = serde_json::to_string_pretty(&result?)?;
            println!("{json}");
            if let Some(f) = stats {
                std::fs::write(&f, format!("{json}\n"))
                    .map_err(|e| format!("{}: {e}", f.display()))?;
            }
            Ok(())
        }
        TestbedCommand::Up { file, bed } => {
            check_available()?;
            let (s, raw) = scenario(&file)?;
            let layout = braid_testbed::bed::Layout::new(&s, &bed.name)?;
            let opts = bed_options(&bed.name, &file, None, 1)?;
            let up = braid_testbed::bed::up(&s, &raw, layout, &opts)?;
            up.keep();
            println!(
                "testbed {} is up (namespaces {}-n*, {}-l*; files in {}); `braid testbed down \
                 --name {}` removes it",
                bed.name,
                bed.name,
                bed.name,
                opts.out.display(),
                bed.name
            );
            Ok(())
        }
        TestbedCommand::Run {
            file,
            bed,
            out,
            seed,
        } => {
            check_available()?;
            let (s, raw) = scenario(&file)?;
            let layout = braid_testbed::bed::Layout::new(&s, &bed.name)?;
            for n in layout.notes() {
                eprintln!("braid testbed: note: {n}");
            }
            let opts = bed_options(&bed.name, &file, out, seed)?;
            let stop = braid_testbed::stop_on_signals()?;
            let mut up = braid_testbed::bed::up(&s, &raw, layout, &opts)?;
            let m = braid_testbed::bed::run_flows(&mut up, &s, &raw, &opts, &stop);
            drop(up);
            let m = m?;
            braid_testbed::bed::write_results(&s, &file, seed, &m, &opts.out)?;
            for (k, v) in &m {
                if k.starts_with("flow_") || k == "jain_fairness" || k.ends_with("_utilisation") {
                    println!("{k:40} {v:.4}");
                }
            }
            println!("wrote {}/{{runs.csv, summary.json}}", opts.out.display());
            Ok(())
        }
        TestbedCommand::Down { bed } => {
            check_available()?;
            let n = braid_testbed::bed::down(&bed.name);
            println!("testbed {}: removed {n} namespaces", bed.name);
            Ok(())
        }
        TestbedCommand::Stream { command } => match command {
            StreamCommand::Receive {
                bind,
                mptcp,
                omit,
                buffer,
                window_from,
                window_for,
            } => {
                let window = window_from.map(|f| (f, window_for.unwrap_or(Duration::MAX)));
                let r = braid_testbed::stream::receive(bind, mptcp, omit, buffer, window)?;
                println!("{}", serde_json::to_string(&r)?);
                Ok(())
            }
            StreamCommand::Blast {
                bind,
                connect,
                rate_bps,
                size,
                poisson,
                seed,
                time,
            } => {
                let r = braid_testbed::cross::blast(
                    bind, connect, rate_bps, size, poisson, seed, time,
                )?;
                println!("{}", serde_json::to_string(&r)?);
                Ok(())
            }
            StreamCommand::Sink {
                bind,
                time,
                window_from,
                window_for,
            } => {
                let len = window_for.unwrap_or(time.saturating_sub(window_from));
                let r = braid_testbed::cross::sink(bind, time, (window_from, len))?;
                println!("{}", serde_json::to_string(&r)?);
                Ok(())
            }
            StreamCommand::Onoff {
                bind,
                connect,
                cc,
                size_mean,
                size_shape,
                gap_mean,
                gap_shape,
                seed,
                time,
            } => {
                let law = braid_testbed::cross::OnOff {
                    size_mean,
                    size_shape,
                    gap_mean: gap_mean.as_secs_f64(),
                    gap_shape,
                };
                let r = braid_testbed::cross::send_onoff(
                    bind,
                    connect,
                    cc.as_deref(),
                    law,
                    seed,
                    time,
                )?;
                println!("{}", serde_json::to_string(&r)?);
                Ok(())
            }
            StreamCommand::Send {
                bind,
                connect,
                time,
                cc,
                mptcp,
                buffer,
            } => {
                let sent =
                    braid_testbed::stream::send(bind, connect, time, cc.as_deref(), mptcp, buffer)?;
                println!("{}", serde_json::json!({ "role": "send", "bytes": sent }));
                Ok(())
            }
        },
    }
}

/// Where a testbed's files go and which binary it runs.
fn bed_options(
    name: &str,
    file: &std::path::Path,
    out: Option<PathBuf>,
    seed: u64,
) -> Result<braid_testbed::bed::BedOptions, Error> {
    let stem = file
        .file_stem()
        .map_or("run".into(), |s| s.to_string_lossy().to_string());
    Ok(braid_testbed::bed::BedOptions {
        name: name.to_string(),
        braid: std::env::current_exe()?,
        out: out.unwrap_or_else(|| PathBuf::from(format!("results/testbed-{stem}"))),
        seed,
    })
}
