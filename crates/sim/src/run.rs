//! Simulating one scenario point with one seed.

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::scenario::Scenario;

/// Options of one run.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Seed of every random choice of the run (links, endpoints).
    pub seed: u64,
    /// Write a pcap of the link named in the scenario's `pcap` table here.
    pub pcap: Option<PathBuf>,
    /// Write the time series (if the scenario asks for one) here, as CSV.
    pub timeseries: Option<PathBuf>,
}

/// What one run measured.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunResult {
    /// Metric name → value (names as in the README: `goodput_mbps`, `stream0_goodput_mbps`,
    /// `path_A_srtt_ms`, ...).
    pub metrics: BTreeMap<String, f64>,
    /// Events the engine processed (for the performance figure).
    pub events: u64,
}

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// The scenario is inconsistent (e.g. a pcap of a path that does not exist).
    #[error("scenario: {0}")]
    Scenario(String),
    /// Writing an output file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

/// Simulates `scenario` once.
pub fn run(_scenario: &Scenario, _opts: &RunOptions) -> Result<RunResult, SimError> {
    Err(SimError::Scenario(
        "the simulation engine is being written".into(),
    ))
}
