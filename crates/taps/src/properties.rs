//! Transport properties (RFC 9622 §6): selection properties with preference levels, the
//! connection properties braid maps onto its association, and security parameters.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How much a selection property matters (RFC 9622 §6.2).
///
/// ```
/// use braid_taps::Preference;
/// // Require filters, Prohibit removes, Prefer/Avoid only order.
/// assert!(!Preference::Require.admits(false));
/// assert!(!Preference::Prohibit.admits(true));
/// assert!(Preference::Prefer.rank(true) < Preference::Avoid.rank(true));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Preference {
    /// Only candidates that provide the property survive.
    Require,
    /// Candidates that provide it are tried first.
    Prefer,
    /// No influence on selection.
    #[default]
    NoPreference,
    /// Candidates that provide it are tried last.
    Avoid,
    /// Candidates that provide it are removed.
    Prohibit,
}

impl Preference {
    /// Whether a candidate whose stack `has` the property may stay (RFC 9622 §6.2: Require
    /// filters, Prohibit removes).
    pub fn admits(self, has: bool) -> bool {
        match self {
            Self::Require => has,
            Self::Prohibit => !has,
            _ => true,
        }
    }

    /// Ordering weight of a candidate that `has` the property: lower goes first
    /// (RFC 9622 §6.2: Prefer/Avoid only order, they never remove).
    pub fn rank(self, has: bool) -> i32 {
        match (self, has) {
            (Self::Prefer, true) | (Self::Avoid, false) => -1,
            (Self::Prefer, false) | (Self::Avoid, true) => 1,
            _ => 0,
        }
    }

    /// The name used in policy files (`require`, `prefer`, `noPreference`, `avoid`,
    /// `prohibit`).
    pub fn name(self) -> &'static str {
        match self {
            Self::Require => "require",
            Self::Prefer => "prefer",
            Self::NoPreference => "noPreference",
            Self::Avoid => "avoid",
            Self::Prohibit => "prohibit",
        }
    }
}

/// Which of several paths a multipath connection uses (RFC 9622 §8.1.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum MultipathPolicy {
    /// One path at a time, the others are standby (braid: RFC 9260 multi-homing failover).
    #[default]
    Handover,
    /// Paths chosen for latency (braid: CMT with the cwnd/RTT path assignment).
    Interactive,
    /// All paths at once for capacity (braid: CMT with round-robin path assignment).
    Aggregate,
}

/// Capacity profile of a connection (RFC 9622 §8.1.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CapacityProfile {
    /// No special treatment.
    #[default]
    Default,
    /// Less-than-best-effort. Recorded only: braid has no LBE controller (LEDBAT/CDG) yet,
    /// so the connection runs with the usual controller.
    Scavenger,
    /// Interactive, latency sensitive (braid: SACKs requested at once, RFC 7053 I bit).
    LowLatencyInteractive,
    /// Non-interactive, latency sensitive (recorded only).
    LowLatencyNonInteractive,
    /// Constant rate streaming (recorded only).
    ConstantRateStreaming,
    /// Capacity seeking (recorded only).
    CapacitySeeking,
}

/// Stream scheduler of a connection group (RFC 9622 §8.1.5, the RFC 8260 schedulers).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ConnScheduler {
    /// First come, first served (SCTP_SS_FCFS).
    Fcfs,
    /// Round-robin per message (SCTP_SS_RR), the braid default.
    #[default]
    RoundRobin,
    /// Round-robin per packet (SCTP_SS_RR_PKT).
    RoundRobinPacket,
    /// Strict priority (SCTP_SS_PRIO).
    Priority,
    /// Fair capacity (SCTP_SS_FC).
    FairCapacity,
    /// Weighted fair queueing (SCTP_SS_WFQ).
    WeightedFairQueueing,
}

/// The transport properties of a Preconnection (RFC 9622 §6.2 selection properties and
/// the §8.1 connection properties braid honours). Defaults are RFC 9622's.
///
/// ```
/// use braid_taps::{Preference, StackKind, TransportProperties};
/// let mut p = TransportProperties::new();
/// p.set("multistreaming", Preference::Require)?;
/// p.set("stack:tcp", Preference::Avoid)?;
/// assert!(p.set("reliabilty", Preference::Require).is_err()); // typo: refused
/// // Only braid provides multistreaming: TCP and UDP are ruled out.
/// assert_eq!(StackKind::Tcp.rejected_by(&p).as_deref(), Some("multistreaming is require"));
/// assert_eq!(StackKind::Braid.rejected_by(&p), None);
/// # Ok::<(), braid_taps::UnknownProperty>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct TransportProperties {
    /// reliability: reliable delivery (default Require).
    pub reliability: Preference,
    /// preserveOrder: in-order delivery (default Require).
    pub preserve_order: Preference,
    /// multistreaming: several streams in one transport connection (default Prefer).
    pub multistreaming: Preference,
    /// multipath. RFC 9622 §6.2.14 makes it an enumeration (Disabled/Active/Passive);
    /// braid-taps uses the preference levels as NEAT does (Require/Prefer: Active,
    /// Prohibit: Disabled). Default NoPreference.
    pub multipath: Preference,
    /// multipathPolicy (RFC 9622 §8.1.7), used when multipath is not prohibited.
    pub multipath_policy: MultipathPolicy,
    /// congestionControl (default Require).
    pub congestion_control: Preference,
    /// perMsgReliability: per-message lifetimes (default NoPreference).
    pub per_msg_reliability: Preference,
    /// preserveMsgBoundaries (default NoPreference; every braid-taps stack keeps them).
    pub preserve_msg_boundaries: Preference,
    /// connCapacityProfile (RFC 9622 §8.1.6).
    pub conn_capacity_profile: CapacityProfile,
    /// connScheduler (RFC 9622 §8.1.5) → braid's stream scheduler.
    pub conn_scheduler: ConnScheduler,
    /// connPriority (RFC 9622 §8.1.2): lower is more important. On braid it becomes the
    /// priority of each Connection's stream, which `connScheduler = Priority` honours.
    pub conn_priority: u32,
    /// Stacks by name (`braid`, `tcp`, `udp`) with a preference of their own, the
    /// application's say in candidate selection beside the PIB (NEAT's `transport` property).
    pub stacks: Vec<(String, Preference)>,
    /// Connection Attempt Delay between two racing candidates (RFC 8305 §5, RFC 9623 §4.2.1).
    pub attempt_delay: Duration,
    /// How long the whole establishment may take before it fails.
    pub establishment_timeout: Duration,
}

/// RFC 8305 §8's recommended Connection Attempt Delay: braid's four-way handshake takes
/// 2 RTTs, so on paths under ~125 ms RTT braid is ready before the next candidate starts.
pub const DEFAULT_ATTEMPT_DELAY: Duration = Duration::from_millis(250);

impl Default for TransportProperties {
    fn default() -> Self {
        Self {
            reliability: Preference::Require,
            preserve_order: Preference::Require,
            multistreaming: Preference::Prefer,
            multipath: Preference::NoPreference,
            multipath_policy: MultipathPolicy::Handover,
            congestion_control: Preference::Require,
            per_msg_reliability: Preference::NoPreference,
            preserve_msg_boundaries: Preference::NoPreference,
            conn_capacity_profile: CapacityProfile::Default,
            conn_scheduler: ConnScheduler::RoundRobin,
            conn_priority: 100,
            stacks: Vec::new(),
            attempt_delay: DEFAULT_ATTEMPT_DELAY,
            establishment_timeout: Duration::from_secs(30),
        }
    }
}

impl TransportProperties {
    /// RFC 9622 §6.2's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Properties for unreliable datagrams (RFC 9622 §6.2: reliability, preserveOrder and
    /// congestionControl not required).
    pub fn unreliable_datagram() -> Self {
        Self {
            reliability: Preference::Avoid,
            preserve_order: Preference::Avoid,
            congestion_control: Preference::NoPreference,
            multistreaming: Preference::NoPreference,
            ..Self::default()
        }
    }

    /// Sets a selection property by its RFC 9622 name (`reliability`, `preserveOrder`,
    /// `multistreaming`, `multipath`, `congestionControl`, `perMsgReliability`,
    /// `preserveMsgBoundaries`) or a stack preference (`stack:braid`, `stack:tcp`,
    /// `stack:udp`).
    ///
    /// # Errors
    ///
    /// The name is unknown.
    pub fn set(&mut self, name: &str, p: Preference) -> Result<(), UnknownProperty> {
        if let Some(stack) = name.strip_prefix("stack:") {
            if !crate::stack::StackKind::ALL
                .iter()
                .any(|k| k.name() == stack)
            {
                return Err(UnknownProperty(name.to_string()));
            }
            self.stacks.retain(|(s, _)| s != stack);
            self.stacks.push((stack.to_string(), p));
            return Ok(());
        }
        *self
            .slot(name)
            .ok_or_else(|| UnknownProperty(name.to_string()))? = p;
        Ok(())
    }

    /// Builder form of [`TransportProperties::set`].
    ///
    /// # Errors
    ///
    /// The name is unknown.
    pub fn with(mut self, name: &str, p: Preference) -> Result<Self, UnknownProperty> {
        self.set(name, p)?;
        Ok(self)
    }

    /// Shorthand for `set(name, Require)`.
    ///
    /// # Errors
    ///
    /// The name is unknown.
    pub fn require(&mut self, name: &str) -> Result<(), UnknownProperty> {
        self.set(name, Preference::Require)
    }

    /// Shorthand for `set(name, Prohibit)`.
    ///
    /// # Errors
    ///
    /// The name is unknown.
    pub fn prohibit(&mut self, name: &str) -> Result<(), UnknownProperty> {
        self.set(name, Preference::Prohibit)
    }

    /// The preference of a selection property by its RFC 9622 name.
    pub fn get(&self, name: &str) -> Option<Preference> {
        if let Some(stack) = name.strip_prefix("stack:") {
            return Some(
                self.stacks
                    .iter()
                    .find(|(s, _)| s == stack)
                    .map_or(Preference::NoPreference, |(_, p)| *p),
            );
        }
        Some(match name {
            "reliability" => self.reliability,
            "preserveOrder" => self.preserve_order,
            "multistreaming" => self.multistreaming,
            "multipath" => self.multipath,
            "congestionControl" => self.congestion_control,
            "perMsgReliability" => self.per_msg_reliability,
            "preserveMsgBoundaries" => self.preserve_msg_boundaries,
            _ => return None,
        })
    }

    fn slot(&mut self, name: &str) -> Option<&mut Preference> {
        Some(match name {
            "reliability" => &mut self.reliability,
            "preserveOrder" => &mut self.preserve_order,
            "multistreaming" => &mut self.multistreaming,
            "multipath" => &mut self.multipath,
            "congestionControl" => &mut self.congestion_control,
            "perMsgReliability" => &mut self.per_msg_reliability,
            "preserveMsgBoundaries" => &mut self.preserve_msg_boundaries,
            _ => return None,
        })
    }

    /// The selection properties by name, as the policy matcher and the stacks see them.
    pub const SELECTION_NAMES: [&'static str; 7] = [
        "reliability",
        "preserveOrder",
        "multistreaming",
        "multipath",
        "congestionControl",
        "perMsgReliability",
        "preserveMsgBoundaries",
    ];
}

/// A property name [`TransportProperties::set`] does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown transport property {0:?}")]
pub struct UnknownProperty(pub String);

/// Security parameters (RFC 9622 §6.3). braid-taps has no security protocol yet (no DTLS
/// over braid, no TLS over TCP), so only [`SecurityParameters::disabled`] yields candidates;
/// anything else makes establishment fail at once with no candidate, never silently
/// insecure.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SecurityParameters {
    /// Whether security is required (`NewSecurityParameters`) or disabled
    /// (`NewDisabledSecurityParameters`).
    pub enabled: bool,
    /// Allowed ALPN values (recorded; no stack uses them yet).
    pub alpn: Vec<String>,
}

impl SecurityParameters {
    /// `NewDisabledSecurityParameters()`: no security protocol.
    pub fn disabled() -> Self {
        Self::default()
    }

    /// `NewSecurityParameters()`: security required (no braid-taps stack offers it yet).
    pub fn new() -> Self {
        Self {
            enabled: true,
            alpn: Vec::new(),
        }
    }
}
