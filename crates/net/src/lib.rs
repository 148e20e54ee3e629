//! `braid-net`: the tokio UDP driver (RFC 6951 encapsulation).
//!
//! **Not implemented yet.** Placeholder in the workspace layout of `DESIGN.md`; the real-socket
//! driver arrives with the "Real network" issue.
