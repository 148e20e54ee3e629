//! Congestion control, one controller per path (RFC 9260 §7.2). Later issues add coupled
//! controllers (CMT/RP, LIA) behind the same interface.

mod reno;

pub(crate) use reno::Reno;
