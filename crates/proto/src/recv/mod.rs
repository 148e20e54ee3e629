//! The receive side: which TSNs arrived (for SACKs) and reassembly into messages.

pub(crate) mod reassembly;
pub(crate) mod tsn_map;
pub(crate) mod undelivered;
