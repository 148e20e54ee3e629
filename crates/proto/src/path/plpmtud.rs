//! Packetization Layer Path MTU Discovery for one path (RFC 8899; the state machine of
//! NEAT D3.1 §2.1.3, Fig. 4). Sizes here are PMTUs: bytes of IP packet, as ICMP reports
//! them; the path turns them into its SCTP packet limit (`Path::mtu`).
//!
//! Search strategy (converges in a few RTTs): after BASE, probe the next size of a table of
//! common link MTUs (1492 PPPoE, 1500 Ethernet, 4352 FDDI, 9000 jumbo) that is not above
//! the largest size still possible, the largest itself last (Listing 1: 1200, 1492, 1500);
//! a size an ICMP "too big" reported is probed at once; once a size failed and no table size
//! lies below it, halve the remaining interval until it is narrower than
//! [`SEARCH_GRANULARITY`]. A probe that is acknowledged costs one RTT, one that is lost
//! MAX_PROBES probe timeouts.

/// Sizes worth trying first: common link MTUs (PPPoE, Ethernet, FDDI, jumbo frames).
const COMMON_MTUS: [usize; 4] = [1492, 1500, 4352, 9000];

/// The search ends when the largest size still possible is within this many bytes of the
/// confirmed one (RFC 8899 §5.3.2 leaves the step to the PL).
pub(crate) const SEARCH_GRANULARITY: usize = 16;

/// The smallest PMTU probed in the ERROR state: IPv4's minimum datagram (RFC 791; RFC 8899
/// §5.1.2 MIN_PLPMTU), IPv6's minimum link MTU (RFC 8200 §5).
pub(crate) fn min_pmtu(ipv6: bool) -> usize {
    if ipv6 { 1280 } else { 576 }
}

/// BASE_PLPMTU (RFC 8899 §5.1.2; the NEAT report §2.1.3.3): 1200 bytes for IPv4, 1280 for IPv6.
pub(crate) fn base_pmtu(ipv6: bool) -> usize {
    if ipv6 { 1280 } else { 1200 }
}

/// The states of the NEAT report §2.1.3.3 (RFC 8899 §5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PmtuState {
    /// The path is not confirmed yet: no probing.
    ProbeNone,
    /// Probing BASE_PLPMTU.
    Base,
    /// Probing sizes above the confirmed PMTU.
    Search,
    /// The search is over until the raise timer.
    Done,
    /// Not even BASE_PLPMTU passes: probing the minimum size.
    Error,
}

impl PmtuState {
    /// Lower-case name, for logs and tables.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::ProbeNone => "probe-none",
            Self::Base => "base",
            Self::Search => "search",
            Self::Done => "done",
            Self::Error => "error",
        }
    }
}

/// What the association does after an event: send a probe of this PMTU now (and arm the
/// probe timer), or arm the raise timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Nothing to do.
    Wait,
    /// Send a probe of this many bytes of IP packet.
    Probe(usize),
    /// The search ended: arm the raise timer.
    Done,
}

/// One path's PLPMTUD state.
#[derive(Debug, Clone)]
pub(crate) struct Plpmtud {
    pub(crate) state: PmtuState,
    /// The state the association last traced (it traces each change once).
    pub(crate) traced: PmtuState,
    base: usize,
    min: usize,
    /// MAX_PLPMTU: the local interface's MTU (`AssociationConfig::path_mtu`).
    max: usize,
    /// The confirmed PLPMTU: what packets may use.
    pub(crate) pmtu: usize,
    /// The largest size that may still pass (an ICMP's report, a lost probe's size less 1).
    limit: usize,
    /// A size an ICMP "too big" reported, to probe next.
    icmp_hint: Option<usize>,
    /// The size being probed and its probes sent so far.
    pub(crate) probe: Option<usize>,
    probe_count: u32,
    max_probes: u32,
    /// A probe of the current PMTU checks for a black hole (RFC 8899 §4.3).
    confirming: bool,
    /// The probe is to be sent (again) with the next packet.
    pub(crate) send_pending: bool,
    /// Nonce of the probe last sent: only its answer counts.
    pub(crate) nonce: u64,
}

impl Plpmtud {
    pub(crate) fn new(ipv6: bool, max: usize, max_probes: u32) -> Self {
        let base = base_pmtu(ipv6).min(max);
        Self {
            state: PmtuState::ProbeNone,
            traced: PmtuState::ProbeNone,
            base,
            min: min_pmtu(ipv6).min(base),
            max,
            // RFC 8899 §5.2: until a probe confirms more, packets stay within BASE_PLPMTU.
            pmtu: base,
            limit: max,
            icmp_hint: None,
            probe: None,
            probe_count: 0,
            max_probes,
            confirming: false,
            send_pending: false,
            nonce: 0,
        }
    }

    fn probe_size(&mut self, size: usize) -> Step {
        self.probe = Some(size);
        self.probe_count = 1;
        Step::Probe(size)
    }

    /// The next size above the confirmed PMTU, or `Done` (the search strategy above).
    fn next_search(&mut self) -> Step {
        self.state = PmtuState::Search;
        if let Some(h) = self.icmp_hint.take()
            && h > self.pmtu
            && h <= self.limit
        {
            return self.probe_size(h);
        }
        let table = COMMON_MTUS
            .iter()
            .copied()
            .chain([self.max])
            .filter(|&m| m > self.pmtu && m <= self.limit)
            .min();
        if let Some(m) = table {
            return self.probe_size(m);
        }
        if self.limit < self.pmtu + SEARCH_GRANULARITY {
            self.state = PmtuState::Done;
            self.probe = None;
            return Step::Done;
        }
        // No table size left below a size that failed: bisect, on a 4-byte boundary (SCTP
        // packets are whole 4-byte words, RFC 9260 §3.2).
        let size = (self.pmtu + (self.limit - self.pmtu).div_ceil(2)) & !3;
        self.probe_size(size)
    }

    /// The path was confirmed (the NEAT report §2.1.3.4 "path setup"): probe BASE_PLPMTU.
    pub(crate) fn on_confirmed(&mut self) -> Step {
        if self.state != PmtuState::ProbeNone {
            return Step::Wait;
        }
        self.state = PmtuState::Base;
        self.probe_size(self.base)
    }

    /// A HEARTBEAT-ACK answered a probe of `size` (the NEAT report, Fig. 5).
    pub(crate) fn on_probe_acked(&mut self, size: usize) -> Step {
        if self.probe != Some(size) {
            return Step::Wait;
        }
        self.probe = None;
        if std::mem::take(&mut self.confirming) {
            // The PMTU still passes: the loss was not a black hole.
            return if self.state == PmtuState::Done {
                Step::Done
            } else {
                self.next_search()
            };
        }
        match self.state {
            PmtuState::Error => {
                // the NEAT report §2.1.3.3: the path works again below BASE; try BASE next.
                self.pmtu = size;
                self.state = PmtuState::Base;
                self.probe_size(self.base)
            }
            PmtuState::Base | PmtuState::Search => {
                self.pmtu = size;
                self.next_search()
            }
            PmtuState::ProbeNone | PmtuState::Done => Step::Wait,
        }
    }

    /// The probe timer expired (the NEAT report, Fig. 6): the probe again below MAX_PROBES, else the size
    /// does not pass.
    pub(crate) fn on_probe_timeout(&mut self) -> Step {
        let Some(size) = self.probe else {
            return Step::Wait;
        };
        if self.probe_count < self.max_probes {
            self.probe_count += 1;
            return Step::Probe(size);
        }
        self.probe_failed(size)
    }

    fn probe_failed(&mut self, size: usize) -> Step {
        self.probe = None;
        if std::mem::take(&mut self.confirming) || self.state == PmtuState::Base {
            // RFC 8899 §4.3: the PMTU in use no longer passes (a black hole), or BASE does
            // not: back to BASE, or below it when BASE itself failed.
            self.limit = size - 1;
            if size > self.base {
                self.pmtu = self.base;
                self.state = PmtuState::Base;
                return self.probe_size(self.base);
            }
            self.state = PmtuState::Error;
            if self.pmtu < self.base {
                // ERROR confirmed a size below BASE: keep it until the raise timer.
                return Step::Done;
            }
            self.pmtu = self.min;
            return self.probe_size(self.min);
        }
        match self.state {
            PmtuState::Search => {
                self.limit = size - 1;
                self.next_search()
            }
            // Not even the minimum passes: the path's reachability is the heartbeat's
            // concern; try again when the raise timer fires.
            PmtuState::Error => Step::Done,
            PmtuState::ProbeNone | PmtuState::Base | PmtuState::Done => Step::Wait,
        }
    }

    /// The raise timer expired: search above the PMTU again (RFC 8899 §5.2 DONE → SEARCH;
    /// The NEAT report restarts at BASE, which the PMTU in use already proves, so braid does not).
    pub(crate) fn on_raise_timer(&mut self) -> Step {
        match self.state {
            PmtuState::Done => {
                self.limit = self.max;
                self.next_search()
            }
            PmtuState::Error => {
                self.state = PmtuState::Base;
                self.limit = self.max;
                self.probe_size(self.base)
            }
            _ => Step::Wait,
        }
    }

    /// Data on this path timed out (T3-rtx): if the PMTU is above BASE, check it with a probe
    /// of that size; MAX_PROBES losses mean a black hole (RFC 8899 §4.3, no ICMP needed).
    pub(crate) fn on_data_timeout(&mut self) -> Step {
        if self.probe.is_some() || self.pmtu <= self.base || self.state == PmtuState::ProbeNone {
            return Step::Wait;
        }
        self.confirming = true;
        self.probe_size(self.pmtu)
    }

    /// An ICMP "too big" for this path, with the MTU it reports if any (the NEAT report §2.1.3.4).
    pub(crate) fn on_icmp_too_big(&mut self, mtu: Option<usize>) -> Step {
        let Some(mtu) = mtu else {
            // Without an MTU it is taken as the probe's loss, MAX_PROBES reached.
            return match self.probe {
                Some(size) => self.probe_failed(size),
                None => Step::Wait,
            };
        };
        if self.state == PmtuState::ProbeNone || mtu > self.limit.max(self.pmtu) {
            // RFC 8899 §4.6.2: a report no smaller than what may pass says nothing new.
            return Step::Wait;
        }
        if mtu >= self.pmtu {
            // Case 1: between the confirmed PMTU and the probe: probe the reported size.
            self.limit = mtu;
            if self.state == PmtuState::Base || self.state == PmtuState::Error {
                return Step::Wait;
            }
            self.icmp_hint = Some(mtu);
            self.confirming = false;
            return self.next_search();
        }
        // Cases 2 and 3: the path now carries less than the PMTU in use (reconfigured).
        self.confirming = false;
        self.limit = mtu;
        if mtu >= self.base {
            self.pmtu = self.base;
            self.icmp_hint = Some(mtu);
            self.state = PmtuState::Base;
            return self.probe_size(self.base);
        }
        self.pmtu = mtu.max(self.min);
        self.state = PmtuState::Error;
        self.probe_size(self.pmtu)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v4(max: usize) -> Plpmtud {
        Plpmtud::new(false, max, 3)
    }

    /// Acks every probe up to `passes`, loses the others MAX_PROBES times; returns the sizes
    /// probed (each once).
    fn run(p: &mut Plpmtud, mut step: Step, passes: usize) -> Vec<usize> {
        let mut sizes = Vec::new();
        while let Step::Probe(size) = step {
            if sizes.last() != Some(&size) {
                sizes.push(size);
            }
            step = if size <= passes {
                p.on_probe_acked(size)
            } else {
                p.on_probe_timeout()
            };
            assert!(sizes.len() < 64, "search does not end: {sizes:?}");
        }
        sizes
    }

    #[test]
    fn listing_1_probes_base_then_common_sizes_and_follows_the_icmp() {
        let mut p = v4(1500);
        assert_eq!(p.on_confirmed(), Step::Probe(1200));
        assert_eq!(p.on_probe_acked(1200), Step::Probe(1492));
        assert_eq!(p.on_probe_acked(1492), Step::Probe(1500));
        assert_eq!(p.pmtu, 1492);
        // An ICMP reports 1496 while 1500 is probed: 1496 is probed next.
        assert_eq!(p.on_icmp_too_big(Some(1496)), Step::Probe(1496));
        assert_eq!(p.on_probe_acked(1496), Step::Done);
        assert_eq!((p.state, p.pmtu), (PmtuState::Done, 1496));
    }

    #[test]
    fn a_silent_path_is_found_by_bisection_within_the_granularity() {
        let mut p = v4(9000);
        let step = p.on_confirmed();
        let sizes = run(&mut p, step, 1400);
        assert_eq!(&sizes[..2], &[1200, 1492]);
        assert_eq!(p.state, PmtuState::Done);
        assert!(
            p.pmtu <= 1400 && p.pmtu + SEARCH_GRANULARITY > 1400,
            "{}",
            p.pmtu
        );
        assert!(sizes.len() <= 8, "{sizes:?}");
    }

    #[test]
    fn lost_probes_are_sent_max_probes_times() {
        let mut p = v4(1500);
        p.on_confirmed();
        p.on_probe_acked(1200);
        assert_eq!(p.on_probe_timeout(), Step::Probe(1492));
        assert_eq!(p.on_probe_timeout(), Step::Probe(1492));
        assert_ne!(p.on_probe_timeout(), Step::Probe(1492));
        assert_eq!(p.pmtu, 1200);
    }

    #[test]
    fn a_black_hole_falls_back_to_base_and_searches_below_the_old_pmtu() {
        let mut p = v4(1500);
        let step = p.on_confirmed();
        run(&mut p, step, 1500);
        assert_eq!(p.pmtu, 1500);
        // The path now carries 1300 and no ICMP comes: data times out.
        let step = p.on_data_timeout();
        assert_eq!(step, Step::Probe(1500));
        let sizes = run(&mut p, step, 1300);
        assert_eq!(sizes[..2], [1500, 1200]);
        assert!(
            p.pmtu <= 1300 && p.pmtu + SEARCH_GRANULARITY > 1300,
            "{}",
            p.pmtu
        );
    }

    #[test]
    fn an_icmp_below_the_pmtu_restarts_at_base_then_probes_the_reported_size() {
        let mut p = v4(1500);
        let step = p.on_confirmed();
        run(&mut p, step, 1500);
        assert_eq!(p.on_icmp_too_big(Some(1400)), Step::Probe(1200));
        assert_eq!(p.pmtu, 1200);
        assert_eq!(p.on_probe_acked(1200), Step::Probe(1400));
        assert_eq!(p.on_probe_acked(1400), Step::Done);
        assert_eq!(p.pmtu, 1400);
        // A larger report afterwards is ignored (RFC 8899 §4.6.2).
        assert_eq!(p.on_icmp_too_big(Some(1450)), Step::Wait);
    }

    #[test]
    fn an_icmp_below_base_enters_error_and_a_raise_timer_retries_base() {
        let mut p = v4(1500);
        let step = p.on_confirmed();
        run(&mut p, step, 1500);
        assert_eq!(p.on_icmp_too_big(Some(1000)), Step::Probe(1000));
        assert_eq!(p.state, PmtuState::Error);
        assert_eq!(p.on_probe_acked(1000), Step::Probe(1200));
        assert_eq!(p.on_probe_timeout(), Step::Probe(1200));
        assert_eq!(p.on_probe_timeout(), Step::Probe(1200));
        // BASE still fails: the size ERROR confirmed stays until the raise timer.
        assert_eq!(p.on_probe_timeout(), Step::Done);
        assert_eq!((p.state, p.pmtu), (PmtuState::Error, 1000));
        assert_eq!(p.on_raise_timer(), Step::Probe(1200));
    }

    #[test]
    fn an_icmp_without_mtu_counts_as_the_probe_lost() {
        let mut p = v4(1500);
        p.on_confirmed();
        p.on_probe_acked(1200);
        assert_eq!(p.on_icmp_too_big(None), Step::Probe(1344));
        assert_eq!(p.pmtu, 1200);
    }

    #[test]
    fn the_raise_timer_finds_a_larger_pmtu() {
        let mut p = v4(1500);
        let step = p.on_confirmed();
        run(&mut p, step, 1400);
        let before = p.pmtu;
        assert!(before <= 1400);
        let step = p.on_raise_timer();
        run(&mut p, step, 1500);
        assert_eq!(p.pmtu, 1500);
    }

    #[test]
    fn stale_acks_and_tiny_icmp_reports_are_harmless() {
        let mut p = v4(1500);
        assert_eq!(p.on_probe_acked(1500), Step::Wait);
        assert_eq!(p.on_icmp_too_big(Some(0)), Step::Wait);
        p.on_confirmed();
        assert_eq!(p.on_probe_acked(9999), Step::Wait);
        assert_eq!(p.on_icmp_too_big(Some(0)), Step::Probe(576));
        assert!(p.pmtu >= 576);
    }
}
