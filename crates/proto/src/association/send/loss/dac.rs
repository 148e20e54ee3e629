//! Delayed Ack for CMT (Iyengar et al. §3.3): a receiver that delays its SACKs says in the
//! SACK's flags how many packets it covers (1 or 2, the low two flag bits). When every chunk
//! newly acknowledged by it was sent on a missing chunk's path after that chunk, each of
//! those packets would have reported the miss on its own: the SACK counts that many.

use super::SackDigest;
use crate::association::send::sent::Sent;
use crate::serial::tsn_lt;

/// Misses this SACK adds to `s`, with `dac_count` the packets its flags say it covers.
pub(crate) fn misses(dac_count: u8, d: &SackDigest, s: &Sent) -> u8 {
    let all_after_on_its_path =
        d.newly_path == Some(Some(s.path)) && d.newly_lowest.is_some_and(|lo| tsn_lt(s.tsn, lo));
    if dac_count > 1 && all_after_on_its_path {
        dac_count
    } else {
        1
    }
}
