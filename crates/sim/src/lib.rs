//! `braid-sim`: a deterministic discrete-event network simulator that drives the real
//! `braid-proto` core on a virtual clock, and the experiment runner around it.

// The simulator core.
pub mod engine;
pub mod link;
pub mod metrics;
pub mod net;
pub mod run;
pub mod traffic;

// Scenarios and the experiment runner.
pub mod campaign;
pub mod load;
pub mod plot;
pub mod reproduce;
pub mod runner;
pub mod scenario;
pub mod stats;
pub mod sweep;
pub mod topology;
pub mod units;
