//! Time as an input: the driver's clock reading, as a duration since an epoch it chose.
//!
//! The core never reads a clock (time and randomness are inputs of the sans-IO core). The simulator passes virtual time; the
//! socket driver passes the time since it started. Only differences matter, except inside
//! state cookies, which carry the endpoint's clock reading to check their lifetime.

use std::ops::{Add, AddAssign, Sub};
use std::time::Duration;

/// A reading of the driver's clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(Duration);

impl Instant {
    /// The driver's epoch.
    pub const ZERO: Self = Self(Duration::ZERO);

    /// The instant `d` after the epoch.
    pub const fn from_duration(d: Duration) -> Self {
        Self(d)
    }

    /// Time since the epoch.
    pub const fn since_epoch(self) -> Duration {
        self.0
    }

    /// Time from `earlier` to `self`, zero if `earlier` is later.
    pub fn saturating_duration_since(self, earlier: Self) -> Duration {
        self.0.saturating_sub(earlier.0)
    }
}

impl Add<Duration> for Instant {
    type Output = Self;
    fn add(self, d: Duration) -> Self {
        Self(self.0.saturating_add(d))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturating: a later `rhs` gives zero.
    fn sub(self, rhs: Instant) -> Duration {
        self.saturating_duration_since(rhs)
    }
}
