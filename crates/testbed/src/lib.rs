//! `braid-testbed`: tools for a real-kernel testbed on one machine (network namespaces,
//! veths, TUN).
//!
//! Its centre is a user-space link emulator ([`emu`]) that applies the simulator's own link
//! model, [`braid_sim::link::Link`], to real packets on a real monotonic clock, so that a
//! testbed link and a simulated `[[path]]` share parameter names (a link file is a
//! `[[path]]` table, [`config`]) and semantics. The kernel here has no netem, and the
//! emulator gives what tbf cannot: delay, loss models, reordering, spikes, failure windows.
//!
//! * [`plumb`] — the TUN devices and policy routing inside a "link" namespace
//!   ([`plumb::plumb_link_namespace`]), undone on drop.
//! * [`emu`] — the emulator's I/O loop and its statistics.
//! * [`core`] — the clock-free scheduling of one direction (testable with a fake clock).
//! * [`bed`] — `braid testbed up|run|down`: a topology scenario on namespaces.
//! * [`stream`] — the kernel's TCP and MPTCP flows; [`cross`] — cross traffic.

pub mod bed;
pub mod config;
pub mod core;
pub mod cross;
pub mod emu;
pub mod plumb;
pub mod stream;
mod sys;
pub mod tun;

pub use emu::{EmuConfig, EmuStats, Emulator};
pub use plumb::{LinkPlumbing, PlumbOptions, in_namespace, plumb_link_namespace};

/// What can go wrong setting up or running the testbed.
#[derive(Debug, thiserror::Error)]
pub enum TestbedError {
    /// A system call or file failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The error.
        source: std::io::Error,
    },
    /// An external command (`ip`) failed.
    #[error("`{cmd}` failed: {detail}")]
    Command {
        /// The command line.
        cmd: String,
        /// Its standard error.
        detail: String,
    },
    /// A link file is wrong.
    #[error("{0}")]
    Config(String),
}

impl TestbedError {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            what: what.into(),
            source,
        }
    }
}

/// A flag that SIGINT and SIGTERM set (for [`Emulator::run`]'s `stop`): the run loop
/// returns, and dropping the [`LinkPlumbing`] then undoes the routing.
pub fn stop_on_signals() -> std::io::Result<std::sync::Arc<std::sync::atomic::AtomicBool>> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, std::sync::Arc::clone(&stop))?;
    }
    Ok(stop)
}
