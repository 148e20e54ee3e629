//! Congestion control, one controller per path (RFC 9260 §7.2), and the coupled increase
//! rules for paths that may share a bottleneck (CMT/RP, MPTCP's LIA of RFC 6356).

mod coupled;
mod reno;

pub(crate) use coupled::CcPathView;
pub(crate) use reno::Reno;

/// The congestion controller of an association's paths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CongestionControl {
    /// Independent per-path RFC 9260 §7.2 controllers.
    #[default]
    Reno,
    /// CMT/RP version 1 (Dreibholz et al., AINA 2010): shares by ssthresh.
    CmtRpv1,
    /// CMT/RP version 2 (Dreibholz et al., GLOBECOM 2010): shares by bandwidth cwnd/srtt.
    CmtRpv2,
    /// Linked Increases (RFC 6356).
    Lia,
}
