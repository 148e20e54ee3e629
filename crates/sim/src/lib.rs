//! `braid-sim`: the deterministic discrete-event network simulator.
//!
//! **Not implemented yet.** Placeholder in the workspace layout of `DESIGN.md`; the engine,
//! link models and experiment runner arrive with the simulator issue.
