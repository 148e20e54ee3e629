//! `braid-taps`: the property/policy based transport-services API (RFC 9622 vocabulary).
//!
//! **Not implemented yet.** Placeholder in the workspace layout of `DESIGN.md`.
