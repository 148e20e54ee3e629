//! Errors (RFC 9622 §7.1 EstablishmentError, §9.2 SendError/ReceiveError, §10 errors).

use std::net::SocketAddr;
use std::time::Duration;

use crate::stack::StackKind;

/// One candidate that was tried and failed, or left out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptError {
    /// Its stack.
    pub stack: StackKind,
    /// Its local address (unspecified: the OS chose).
    pub local: SocketAddr,
    /// Its remote address.
    pub remote: SocketAddr,
    /// What went wrong.
    pub error: String,
}

impl std::fmt::Display for AttemptError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} -> {}: {}",
            self.stack, self.local, self.remote, self.error
        )
    }
}

fn list(v: &[AttemptError]) -> String {
    v.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// Why `initiate()` or `listen()` failed (RFC 9622 §7.1 EstablishmentError). Never a hang:
/// an empty candidate set fails at once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EstablishmentError {
    /// No candidate survived gathering and selection; each reason says why a stack or a
    /// remote was dropped.
    #[error("no candidate: {}", .0.join("; "))]
    NoCandidate(Vec<String>),
    /// Every candidate was tried and failed.
    #[error("every attempt failed: {}", list(.0))]
    AllFailed(Vec<AttemptError>),
    /// The establishment timeout passed before any candidate was ready.
    #[error("no candidate ready within {:?}; attempts: {}", .0, list(.1))]
    Timeout(Duration, Vec<AttemptError>),
    /// The policy file is invalid.
    #[error(transparent)]
    Policy(#[from] crate::pib::PolicyError),
}

/// Errors of an established Connection (RFC 9622 §9.2.2.3 SendError, §9.3.2.3
/// ReceiveError, §10 ConnectionError).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionError {
    /// The Connection (or its group's transport) is closed.
    #[error("connection closed")]
    Closed,
    /// The stack refused the message.
    #[error("send failed: {0}")]
    Send(String),
    /// `clone_in_group()` could not add a Connection to the group.
    #[error("clone failed: {0}")]
    Clone(String),
}
