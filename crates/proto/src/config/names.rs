//! The configuration enums by name, as scenario files and command lines spell them
//! (kebab-case: `cmt-rpv2`, `ssthresh`, `rr-packet`): `FromStr`, `Display` and, with the
//! `serde` feature, `Deserialize` from a string. One table per enum is the only spelling;
//! the stream schedulers' is [`SchedulerKind::NAMES`].

use std::fmt;
use std::str::FromStr;

use super::{
    BufferSplitting, CongestionControl, LossDetection, NrSackPolicy, PathAssignment, PathPairing,
    ReceiveSplit, RtxPolicy, SackPath, SchedulerKind, SpuriousDetection, TimeoutHandling,
};

/// A name that is none of an enum's names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {name:?} (expected one of: {})", .valid.join(", "))]
pub struct UnknownName {
    /// What the enum configures ("congestion control").
    pub what: &'static str,
    /// The name given.
    pub name: String,
    /// Every valid name.
    pub valid: &'static [&'static str],
}

/// The names of a `[(name, value); N]` table, in its order.
const fn names_of<T: Copy, const N: usize>(table: [(&'static str, T); N]) -> [&'static str; N] {
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = table[i].0;
        i += 1;
    }
    out
}

/// Looks `name` up in `table`.
fn lookup<T: Copy>(
    table: &[(&'static str, T)],
    name: &str,
    what: &'static str,
    valid: &'static [&'static str],
) -> Result<T, UnknownName> {
    table
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| *v)
        .ok_or_else(|| UnknownName {
            what,
            name: name.to_string(),
            valid,
        })
}

impl CongestionControl {
    /// Every controller with its name.
    pub const NAMES: [(&'static str, Self); 6] = [
        ("reno", Self::Reno),
        ("cmt-rpv1", Self::CmtRpv1),
        ("cmt-rpv2", Self::CmtRpv2),
        ("lia", Self::Lia),
        ("cubic", Self::Cubic),
        ("cubic-linux", Self::CubicLinux),
    ];
}

impl RtxPolicy {
    /// Every policy with its name (RTX-SAME is `same`, and so on).
    pub const NAMES: [(&'static str, Self); 5] = [
        ("same", Self::Same),
        ("asap", Self::Asap),
        ("cwnd", Self::Cwnd),
        ("ssthresh", Self::Ssthresh),
        ("lossrate", Self::Lossrate),
    ];
}

impl BufferSplitting {
    /// Every mode with its name.
    pub const NAMES: [(&'static str, Self); 4] = [
        ("none", Self::None),
        ("send", Self::Send),
        ("receive", Self::Receive),
        ("both", Self::Both),
    ];
}

impl PathPairing {
    /// Every pairing with its name.
    pub const NAMES: [(&'static str, Self); 2] = [("by-index", Self::ByIndex), ("all", Self::All)];
}

impl ReceiveSplit {
    /// Every basis of receive-side buffer splitting with its name.
    pub const NAMES: [(&'static str, Self); 2] = [
        ("initial-window", Self::InitialWindow),
        ("current-window", Self::CurrentWindow),
    ];
}

impl NrSackPolicy {
    /// Every NR-SACK policy with its name.
    pub const NAMES: [(&'static str, Self); 2] =
        [("received", Self::Received), ("delivered", Self::Delivered)];
}

impl SackPath {
    /// Every SACK path policy with its name.
    pub const NAMES: [(&'static str, Self); 4] = [
        ("quickest", Self::Quickest),
        ("first-data", Self::FirstData),
        ("last-data", Self::LastData),
        ("primary", Self::Primary),
    ];
}

impl PathAssignment {
    /// Every path assignment with its name.
    pub const NAMES: [(&'static str, Self); 3] = [
        ("round-robin", Self::RoundRobin),
        ("cwnd-rtt", Self::CwndRtt),
        ("min-rtt", Self::MinRtt),
    ];
}

impl TimeoutHandling {
    /// Every timeout handling technique with its name.
    pub const NAMES: [(&'static str, Self); 2] = [("sctp", Self::Sctp), ("ls", Self::Ls)];
}

impl SpuriousDetection {
    /// Every detection technique with its name.
    pub const NAMES: [(&'static str, Self); 5] = [
        ("off", Self::Off),
        ("eifel-timestamp", Self::EifelTimestamp),
        ("eifel-rbit", Self::EifelRbit),
        ("duptsn", Self::DupTsn),
        ("eifel+duptsn", Self::EifelDupTsn),
    ];
}

impl LossDetection {
    /// Every loss detection rule with its name.
    pub const NAMES: [(&'static str, Self); 3] = [
        ("auto", Self::Auto),
        ("dupthresh", Self::DupThresh),
        ("rack", Self::Rack),
    ];
}

/// `FromStr`, `Display` and (feature `serde`) `Deserialize` and `Serialize` for an enum with a `NAMES`
/// table; `$what` names it in errors.
macro_rules! by_name {
    ($ty:ident, $what:literal) => {
        impl $ty {
            /// Every valid name, in the order of `NAMES`.
            const NAME_LIST: &'static [&'static str] = &names_of($ty::NAMES);
        }

        impl FromStr for $ty {
            type Err = UnknownName;

            fn from_str(s: &str) -> Result<Self, UnknownName> {
                lookup(&$ty::NAMES, s, $what, $ty::NAME_LIST)
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let name = $ty::NAMES
                    .iter()
                    .find(|(_, v)| v == self)
                    .map_or("?", |(n, _)| n);
                f.write_str(name)
            }
        }

        #[cfg(feature = "serde")]
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                use serde::de::{self, EnumAccess, VariantAccess, Visitor};

                struct V;

                impl<'de> Visitor<'de> for V {
                    type Value = $ty;

                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        write!(f, "a {} name", $what)
                    }

                    fn visit_str<E: de::Error>(self, s: &str) -> Result<$ty, E> {
                        s.parse().map_err(|_| E::unknown_variant(s, $ty::NAME_LIST))
                    }

                    // As a derived unit-variant enum reads: TOML and JSON give a string as
                    // an enum, so errors read the same as before the names moved here.
                    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<$ty, A::Error> {
                        let (name, variant): (String, _) = data.variant()?;
                        variant.unit_variant()?;
                        self.visit_str(&name)
                    }
                }

                d.deserialize_enum(stringify!($ty), $ty::NAME_LIST, V)
            }
        }

        /// By its name, as it reads back.
        #[cfg(feature = "serde")]
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    };
}

by_name!(CongestionControl, "congestion control");
by_name!(RtxPolicy, "retransmission policy");
by_name!(BufferSplitting, "buffer splitting");
by_name!(PathPairing, "path pairing");
by_name!(ReceiveSplit, "receive split");
by_name!(SackPath, "SACK path");
by_name!(NrSackPolicy, "NR-SACK policy");
by_name!(SchedulerKind, "stream scheduler");
by_name!(PathAssignment, "path assignment");
by_name!(TimeoutHandling, "timeout handling");
by_name!(SpuriousDetection, "spurious retransmission detection");
by_name!(LossDetection, "loss detection");

#[cfg(test)]
mod tests {
    use super::*;

    /// Every value of every enum: its name parses back to it and is what it displays.
    fn round_trip<T>(table: &[(&'static str, T)])
    where
        T: Copy + PartialEq + fmt::Debug + fmt::Display + FromStr<Err = UnknownName>,
    {
        for (name, v) in table {
            assert_eq!(name.parse::<T>(), Ok(*v), "{name}");
            assert_eq!(v.to_string(), *name);
        }
    }

    #[test]
    fn names_round_trip() {
        round_trip(&CongestionControl::NAMES);
        round_trip(&RtxPolicy::NAMES);
        round_trip(&BufferSplitting::NAMES);
        round_trip(&PathPairing::NAMES);
        round_trip(&ReceiveSplit::NAMES);
        round_trip(&SackPath::NAMES);
        round_trip(&NrSackPolicy::NAMES);
        round_trip(&SchedulerKind::NAMES);
        round_trip(&PathAssignment::NAMES);
        round_trip(&TimeoutHandling::NAMES);
        round_trip(&SpuriousDetection::NAMES);
        round_trip(&LossDetection::NAMES);
    }

    #[test]
    fn the_scenario_spellings_are_kept() {
        assert_eq!("cmt-rpv2".parse(), Ok(CongestionControl::CmtRpv2));
        assert_eq!("ssthresh".parse(), Ok(RtxPolicy::Ssthresh));
        assert_eq!("receive".parse(), Ok(BufferSplitting::Receive));
        assert_eq!("by-index".parse(), Ok(PathPairing::ByIndex));
        assert_eq!("rr-packet".parse(), Ok(SchedulerKind::RoundRobinPacket));
        assert_eq!("fc".parse(), Ok(SchedulerKind::FairCapacity));
        assert_eq!(SchedulerKind::Wfq.to_string(), SchedulerKind::Wfq.name());
    }

    #[test]
    fn an_unknown_name_lists_the_valid_ones() {
        let e = "bbr".parse::<CongestionControl>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown congestion control \"bbr\" (expected one of: reno, cmt-rpv1, cmt-rpv2, lia, cubic, cubic-linux)"
        );
        let e = "RR".parse::<SchedulerKind>().unwrap_err();
        assert_eq!(e.what, "stream scheduler");
        assert_eq!(e.valid, names_of(SchedulerKind::NAMES));
        // Names are exact: no case folding, no surrounding blanks.
        assert!(" rr".parse::<SchedulerKind>().is_err());
        assert!("Reno".parse::<CongestionControl>().is_err());
    }

    #[cfg(feature = "serde")]
    #[test]
    fn deserialize_reads_names_and_rejects_others_like_a_derived_enum() {
        use serde::Deserialize;
        use serde::de::IntoDeserializer;
        use serde::de::value::{Error, StrDeserializer};

        let read = |s: &'static str| {
            let d: StrDeserializer<'_, Error> = s.into_deserializer();
            RtxPolicy::deserialize(d)
        };
        assert_eq!(read("lossrate"), Ok(RtxPolicy::Lossrate));
        assert_eq!(
            read("fastest").unwrap_err().to_string(),
            "unknown variant `fastest`, expected one of `same`, `asap`, `cwnd`, `ssthresh`, \
             `lossrate`"
        );
    }
}
