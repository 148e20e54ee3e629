//! `braid-taps`: a Transport Services API (RFC 9622 names, RFC 9623 racing) with NEAT's
//! policy manager (NEAT D3.1 §1, §3.2) on top of braid-net.
//!
//! The application describes what it needs — [`TransportProperties`] with the five
//! preference levels ([`Preference::Require`] … [`Preference::Prohibit`]) — and where to
//! go ([`RemoteEndpoint`]); a [`Preconnection`] gathers candidates (local addresses ×
//! resolved remote addresses × protocol stacks: braid/UDP, TCP with a message framer, plain
//! UDP), drops those the properties, the PIB ([`Pib`], policy files) and the security
//! parameters rule out, orders the rest (policy, then the CIB's memory of what won last
//! time for this remote ([`Cib`]), then Prefer/Avoid, then braid before TCP before UDP),
//! and races them with a Connection Attempt Delay (RFC 8305 §5, 250 ms by default). The
//! first ready candidate becomes the [`Connection`]; the others are aborted. With no
//! candidate at all, [`Preconnection::initiate`] fails at once with
//! [`EstablishmentError::NoCandidate`] — never a hang.
//!
//! Connections of a group ([`Connection::clone_in_group`]) are streams of one braid association
//! (or framed streams of one TCP socket); see [`connection`] for how one of them is closed
//! without a stream reset.
//!
//! ```
//! use braid_taps::*;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut props = TransportProperties::new();
//! props.set("multistreaming", Preference::Require)?;
//! let server = Preconnection::new(
//!     vec![LocalEndpoint::new().with_ip_address("127.0.0.1".parse()?)],
//!     vec![],
//!     props.clone(),
//!     SecurityParameters::disabled(),
//! );
//! let mut listener = server.listen().await?;
//! let remote = RemoteEndpoint::new()
//!     .with_ip_address("127.0.0.1".parse()?)
//!     .with_port(listener.port());
//! let client = Preconnection::new(vec![], vec![remote], props, SecurityParameters::disabled());
//! let conn = client.initiate().await?;
//! assert_eq!(conn.stack(), StackKind::Braid); // multistreaming required: only braid
//! conn.send(Message::new(&b"ping"[..])).await?;
//! let peer = listener.connection_received().await.ok_or("listener stopped")?;
//! let m = peer.receive().await?.ok_or("closed")?;
//! assert_eq!(&m.data[..], b"ping");
//!
//! // A second Connection in the group: stream 2 of the same association.
//! let second = conn.clone_in_group()?;
//! second.send_bytes(&b"on another stream"[..]).await?;
//! let peer2 = peer.connection_received().await.ok_or("no grouped connection")?;
//! assert_eq!(peer2.info().stream, 2);
//! let m2 = peer2.receive().await?.ok_or("closed")?;
//! assert_eq!((&m2.data[..], m2.context.stream), (&b"on another stream"[..], 2));
//! second.close().await; // end-of-stream marker: only this stream ends
//! assert_eq!(peer2.receive().await?, None);
//! conn.close().await; // the last one: SHUTDOWN
//! # Ok(()) }
//! ```

/// README.md's example, compiled and run as a doc test (the root README's braid-taps
/// section carries the same block, checked by `readme_sync` below).
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;

pub mod cib;
pub mod connection;
mod endpoint;
mod error;
mod message;
pub mod pib;
mod preconnection;
mod properties;
pub mod stack;

pub use cib::Cib;
pub use connection::{Connection, ConnectionInfo};
pub use endpoint::{LocalEndpoint, RemoteEndpoint};
pub use error::{AttemptError, ConnectionError, EstablishmentError};
pub use message::{Message, MessageContext};
pub use pib::{Pib, PolicyError};
pub use preconnection::{Attempt, Candidate, Listener, Outcome, Preconnection, RaceReport};
pub use properties::{
    CapacityProfile, ConnScheduler, DEFAULT_ATTEMPT_DELAY, MultipathPolicy, Preference,
    SecurityParameters, TransportProperties, UnknownProperty,
};
pub use stack::StackKind;

#[cfg(test)]
mod readme_sync {
    /// The first ```` ```rust ```` block after `start` in `text` (any attributes).
    fn rust_block<'a>(text: &'a str, start: &str) -> &'a str {
        let from = text.find(start).expect("section");
        let rest = &text[from..];
        let open = rest.find("```rust").expect("rust block");
        let body = &rest[open..];
        let body = &body[body.find('\n').expect("fence line") + 1..];
        &body[..body.find("```").expect("closing fence")]
    }

    /// The root README's braid-taps example is this crate's README example (which runs as
    /// a doc test), word for word.
    #[test]
    fn the_root_readme_shows_the_tested_example() {
        let ours = rust_block(include_str!("../README.md"), "# braid-taps");
        let root = rust_block(
            include_str!("../../../README.md"),
            "### Transport services (`braid-taps`)",
        );
        assert_eq!(
            root, ours,
            "README.md's braid-taps block differs from crates/taps/README.md's"
        );
    }
}
