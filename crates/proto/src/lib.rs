//! `braid-proto`: the sans-IO SCTP association core.
//!
//! **Not implemented yet.** This crate is a placeholder in the workspace layout of
//! `DESIGN.md`; the endpoint and association state machines arrive with the
//! "Sans-IO association core" issue. Nothing here pretends to work.
