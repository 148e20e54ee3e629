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
    }
}
