//! Topology scenarios: nodes joined by `[[link]]`s, `[[flow]]`s between nodes, and
//! `[[cross]]` traffic — a dumbbell, a parking lot, anything with static routes.
//!
//! A `[[link]]` is two unidirectional links built by the same functions as a `[[path]]`'s
//! (`forward_config`, `reverse_config`): its forward direction `from`→`to` carries every
//! impairment, its reverse `to`→`from` the rate, delay, queue, MTU, `reverse_loss` and
//! failures. Nodes are the names the links use; a node is an end of flows or a router, as
//! the flows make it. A route is a list of nodes, each pair joined by a link (in either
//! direction); a flow without `routes` takes the route with the fewest links (breadth-first,
//! links in file order).
//!
//! Every flow is an association of braid's core between two hosts of its own attached to its
//! end nodes: the first `[[flow]]` is hosts A and B of a two-host scenario (addresses 10.(i+1).0.1
//! and .2 for path *i*, so every measured-association metric works unchanged); flow *f* > 0
//! uses 11.(f/256).(f%256).(2i+1) and .(2i+2). Pareto on/off cross traffic adds TCP-like flows
//! after the `[[flow]]`s, each with an extra-delay link pair of its own in front of its route.
//!
//! The TCP-like flow (`kind = "tcp"`) is braid's core with TCP's settings, not a TCP model
//! of its own, so that it shares every mechanism the comparison does not vary. What it
//! departs from in Linux TCP: it counts chunks (TSNs) not bytes, with 48 header bytes per
//! packet (IPv4 20, SCTP 12, DATA 16) against TCP's 52 (IPv4 20, TCP 20, timestamps 12); its
//! SACK reports gap blocks for every chunk (Linux's at most 3 or 4 ranges per ACK); its
//! CUBIC is braid's: RFC 9438 with HyStart++ (RFC 9406) where Linux runs the older HyStart,
//! and with `cc = "cubic-linux"` Linux's Reno-friendly α and curve aim; its loss detection
//! is braid's RACK-TLP on one path, as Linux's default, with RFC 9260's 1 s RTO.Min (Linux:
//! 200 ms); no TSO bursts, no pacing (Linux paces only with fq or BBR); its
//! delayed ACK is every second packet or 40 ms (Linux also ACKs at once in quick-ack mode
//! after idle); its receive window is braid's autotuned buffer.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

use braid_proto::CongestionControl;

use crate::run::SimError;
use crate::scenario::{
    CrossKind, FlowKind, FlowSpec, PathSpec, Scenario, SqinfoPolicy, StartSpec, TrafficSpec,
};
use crate::units::{Dur, Size};

/// UDP port of every simulated interface (as [`crate::net::UDP_PORT`]).
const PORT: u16 = crate::net::UDP_PORT;
/// Most flows a topology may have, cross-traffic flows included.
pub const MAX_FLOWS: usize = 60_000;
/// Most routes (paths) one flow may have.
pub const MAX_ROUTES: usize = 100;
/// Delayed-ACK timeout of a TCP-like flow: Linux's minimum (TCP_DELACK_MIN, 40 ms).
pub const TCP_DELAYED_ACK: Duration = Duration::from_millis(40);
/// A burst of Pareto on/off traffic is at most this many times the mean (the heavy tail cut
/// so that one draw cannot outlast any run).
pub const PARETO_CAP: f64 = 100.0;

/// Address of path `path`'s interface of flow `flow`'s sender (`sender`) or receiver.
pub fn flow_addr(flow: usize, path: usize, sender: bool) -> SocketAddr {
    if flow == 0 {
        return if sender {
            crate::net::a_addr(path)
        } else {
            crate::net::b_addr(path)
        };
    }
    let last = (2 * path + if sender { 1 } else { 2 }) as u8;
    SocketAddr::new(
        IpAddr::V4(Ipv4Addr::new(11, (flow >> 8) as u8, flow as u8, last)),
        PORT,
    )
}

/// One direction of a `[[link]]`: link *j*'s forward direction is unidirectional link 2*j*,
/// its reverse 2*j* + 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hop {
    /// The `[[link]]`.
    pub link: usize,
    /// Its reverse direction.
    pub reverse: bool,
}

impl Hop {
    /// Index of the unidirectional link among the topology's first 2 × `[[link]]`s.
    pub fn id(self) -> usize {
        2 * self.link + usize::from(self.reverse)
    }

    /// The same link the other way.
    pub fn back(self) -> Self {
        Self {
            link: self.link,
            reverse: !self.reverse,
        }
    }
}

/// A flow as the run sets it up.
#[derive(Debug, Clone)]
pub struct FlowPlan {
    /// Its name (`flow_{name}_…`; a cross-traffic flow's is `{cross}#{k}`).
    pub name: String,
    /// The scenario of its association: its settings, its traffic, one pseudo-path per route
    /// (named `{flow}.{i}`, the MTU the route's smallest, the delay its sum).
    pub scenario: Scenario,
    /// Its routes, sender to receiver.
    pub routes: Vec<Vec<Hop>>,
    /// When it starts: a time or a window to draw from.
    pub start: StartSpec,
    /// It stops writing this long after it starts.
    pub duration: Option<Duration>,
    /// A Pareto on/off flow: its cross-traffic source and its extra one-way delay.
    pub onoff: Option<(usize, Duration)>,
}

/// An unresponsive cross-traffic source.
#[derive(Debug, Clone)]
pub struct PacketSource {
    /// Its name.
    pub name: String,
    /// Poisson (exponential gaps) rather than constant.
    pub poisson: bool,
    /// Mean rate, bits per second.
    pub rate_bps: f64,
    /// Bytes per packet.
    pub packet_size: usize,
    /// The links it crosses.
    pub route: Vec<Hop>,
}

/// A topology scenario resolved: links, flows and their routes.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The flows: `[[flow]]`s in file order, then the Pareto on/off flows.
    pub flows: Vec<FlowPlan>,
    /// Unresponsive sources.
    pub packet_sources: Vec<PacketSource>,
    /// Pareto on/off sources: (name, size mean bytes, size shape, gap mean, gap shape).
    pub onoff: Vec<OnOffPlan>,
    /// Flows Jain's index covers (indices into `flows`).
    pub fairness: Vec<usize>,
}

/// The burst and gap laws of one Pareto on/off source.
#[derive(Debug, Clone)]
pub struct OnOffPlan {
    /// The `[[cross]]`'s name.
    pub name: String,
    /// Mean burst, bytes.
    pub size_mean: f64,
    /// Pareto shape of bursts.
    pub size_shape: f64,
    /// Mean gap.
    pub gap_mean: Duration,
    /// Pareto shape of gaps.
    pub gap_shape: f64,
}

/// A Pareto draw with mean `mean` and shape `shape` (> 1) from a uniform `u` in [0, 1), cut
/// at [`PARETO_CAP`] × the mean.
pub fn pareto(mean: f64, shape: f64, u: f64) -> f64 {
    let scale = mean * (shape - 1.0) / shape;
    (scale / (1.0 - u).powf(1.0 / shape)).min(PARETO_CAP * mean)
}

fn err<T>(m: String) -> Result<T, SimError> {
    Err(SimError::Scenario(m))
}

/// Whether `s` is a topology scenario.
pub fn is_topology(s: &Scenario) -> bool {
    !s.links.is_empty() || !s.flows.is_empty()
}

/// The graph: node names and, per node, its hops to neighbours in file order.
struct Graph<'a> {
    adjacency: HashMap<&'a str, Vec<(Hop, &'a str)>>,
    names: Vec<&'a str>,
}

impl<'a> Graph<'a> {
    fn new(links: &'a [PathSpec]) -> Result<Self, SimError> {
        let mut adjacency: HashMap<&str, Vec<(Hop, &str)>> = HashMap::new();
        for (j, l) in links.iter().enumerate() {
            let (Some(from), Some(to)) = (l.from.as_deref(), l.to.as_deref()) else {
                return err(format!("link {}: a [[link]] needs `from` and `to`", l.name));
            };
            if from == to {
                return err(format!("link {}: joins node {from:?} to itself", l.name));
            }
            let fwd = Hop {
                link: j,
                reverse: false,
            };
            adjacency.entry(from).or_default().push((fwd, to));
            adjacency.entry(to).or_default().push((fwd.back(), from));
        }
        Ok(Self {
            adjacency,
            names: links.iter().map(|l| l.name.as_str()).collect(),
        })
    }

    fn has(&self, node: &str) -> bool {
        self.adjacency.contains_key(node)
    }

    /// The hops of a route given as nodes: each element names the next node (reached over
    /// the first link joining the two, in file order) or, if no node of that name is a
    /// neighbour, a link leaving the current node (to its other end) — how a route picks
    /// one of two parallel links.
    fn hops(&self, what: &str, nodes: &[String]) -> Result<(Vec<Hop>, &'a str), SimError> {
        let Some(first) = nodes.first() else {
            return err(format!("{what}: a route names at least two nodes"));
        };
        let Some((start, _)) = self.adjacency.get_key_value(first.as_str()) else {
            return err(format!("{what}: no link touches node {first:?}"));
        };
        if nodes.len() < 2 {
            return err(format!("{what}: a route names at least two nodes"));
        }
        let mut at: &'a str = start;
        let mut hops = Vec::new();
        for next in &nodes[1..] {
            // A node right after the link that reached it ("A", "p2", "B") names where it is.
            if next == at && hops.last().is_some() {
                continue;
            }
            let around = &self.adjacency[at];
            let step = around
                .iter()
                .find(|(_, to)| *to == next.as_str())
                .or_else(|| {
                    around
                        .iter()
                        .find(|(h, _)| self.names[h.link] == next.as_str())
                });
            match step {
                Some(&(h, to)) => {
                    hops.push(h);
                    at = to;
                }
                None => {
                    return err(format!(
                        "{what}: no link joins {at:?} and {next:?} (nor is {next:?} a link of {at:?})"
                    ));
                }
            }
        }
        Ok((hops, at))
    }

    /// The route with the fewest links (ties: links in file order).
    fn shortest(&self, what: &str, from: &str, to: &str) -> Result<Vec<Hop>, SimError> {
        for n in [from, to] {
            if !self.has(n) {
                return err(format!("{what}: no link touches node {n:?}"));
            }
        }
        let mut prev: HashMap<&str, (Hop, &str)> = HashMap::new();
        let mut seen = vec![from];
        let mut q = VecDeque::from([from]);
        while let Some(n) = q.pop_front() {
            if n == to {
                break;
            }
            for &(h, m) in &self.adjacency[n] {
                if !seen.contains(&m) {
                    seen.push(m);
                    prev.insert(m, (h, n));
                    q.push_back(m);
                }
            }
        }
        let mut hops = Vec::new();
        let mut at = to;
        while at != from {
            let Some(&(h, p)) = prev.get(at) else {
                return err(format!("{what}: no route from {from:?} to {to:?}"));
            };
            hops.push(h);
            at = p;
        }
        hops.reverse();
        Ok(hops)
    }
}

/// The pseudo-path of a route: its name, the route's smallest MTU and its delay.
fn route_path(s: &Scenario, name: String, hops: &[Hop]) -> PathSpec {
    let links = || hops.iter().map(|h| &s.links[h.link]);
    let narrowest = links()
        .min_by(|a, b| a.rate.0.total_cmp(&b.rate.0))
        .unwrap_or(&s.links[0]);
    let mut p = narrowest.clone();
    p.name = name;
    p.from = None;
    p.to = None;
    p.mtu = links().map(|l| l.mtu).min().unwrap_or(p.mtu);
    p.delay = Dur(links().map(|l| l.delay.0).sum());
    p
}

/// The scenario of one flow's association.
fn flow_scenario(
    s: &Scenario,
    f: &FlowSpec,
    name: &str,
    routes: &[Vec<Hop>],
    traffic: TrafficSpec,
) -> Scenario {
    let mut a = f.association.clone();
    if f.cc.is_some() {
        a.cc = f.cc;
    }
    if f.kind != FlowKind::Braid {
        a.cmt = a.cmt.or(Some(false));
        a.nr_sack = a.nr_sack.or(Some(false));
        a.idata = a.idata.or(Some(false));
        a.heartbeats = a.heartbeats.or(Some(false));
        if a.sack_delay.is_none() && a.delayed_ack.is_none() {
            a.sack_delay = Some(Dur(TCP_DELAYED_ACK));
        }
        a.max_burst = a.max_burst.or(Some(u32::MAX));
    }
    let paths = routes
        .iter()
        .enumerate()
        .map(|(i, r)| route_path(s, format!("{name}.{i}"), r))
        .collect();
    Scenario {
        name: format!("{} / {name}", s.name),
        paths,
        links: Vec::new(),
        flows: Vec::new(),
        cross: Vec::new(),
        fairness: None,
        association: a,
        traffic: vec![traffic],
        sweep: Default::default(),
        pcap: None,
        ..s.clone()
    }
}

/// A full packet's worth of DATA on the smallest MTU of `routes`.
fn full_packet(s: &Scenario, routes: &[Vec<Hop>]) -> usize {
    let mtu = routes
        .iter()
        .flatten()
        .map(|h| s.links[h.link].mtu)
        .min()
        .unwrap_or(1500);
    let header = 20 + if s.udp { 8 } else { 0 };
    mtu.saturating_sub(header + braid_wire::COMMON_HEADER_LEN + braid_wire::chunk::DATA_HEADER_LEN)
        .max(1)
}

/// Resolves a topology scenario.
pub fn plan(s: &Scenario) -> Result<Plan, SimError> {
    if !s.paths.is_empty() {
        return err("a topology scenario has [[link]]s and [[flow]]s, not [[path]]s".into());
    }
    if s.links.is_empty() || s.flows.is_empty() {
        return err("a topology scenario needs at least one [[link]] and one [[flow]]".into());
    }
    if s.bottleneck.is_some() || !s.traffic.is_empty() {
        return err(
            "a topology scenario describes its traffic in [[flow]]s and [[cross]]: no \
             [bottleneck] or [[traffic]]"
                .into(),
        );
    }
    for (i, l) in s.links.iter().enumerate() {
        if l.name.is_empty() || s.links[..i].iter().any(|m| m.name == l.name) {
            return err(format!(
                "link names must be unique and non-empty: {:?}",
                l.name
            ));
        }
    }
    let g = Graph::new(&s.links)?;
    let mut flows = Vec::new();
    for (i, f) in s.flows.iter().enumerate() {
        if f.name.is_empty() || s.flows[..i].iter().any(|o| o.name == f.name) {
            return err(format!(
                "flow names must be unique and non-empty: {:?}",
                f.name
            ));
        }
        let what = format!("flow {}", f.name);
        let routes = if f.routes.is_empty() {
            vec![g.shortest(&what, &f.from, &f.to)?]
        } else {
            let mut rs = Vec::new();
            for r in &f.routes {
                let (hops, end) = g.hops(&what, r)?;
                if r.first() != Some(&f.from) || end != f.to {
                    return err(format!(
                        "{what}: a route runs from {:?} to {:?}",
                        f.from, f.to
                    ));
                }
                rs.push(hops);
            }
            rs
        };
        if routes.len() > MAX_ROUTES {
            return err(format!("{what}: at most {MAX_ROUTES} routes"));
        }
        if f.kind != FlowKind::Braid && f.kind != FlowKind::Mptcp && routes.len() > 1 {
            return err(format!("{what}: a tcp flow has one route"));
        }
        let message_size = f.message_size.unwrap_or(match f.kind {
            FlowKind::Braid => 1452,
            FlowKind::Tcp | FlowKind::Mptcp => full_packet(s, &routes),
        });
        let streams = f.streams.unwrap_or(1);
        let traffic = match f.bytes {
            Some(bytes) => TrafficSpec::Transfer {
                bytes,
                streams,
                message_size,
                timestamp_message_size: None,
            },
            None => TrafficSpec::Saturated {
                streams,
                message_size,
                unordered: false,
                sender_queue_info: false,
                sqinfo_policy: SqinfoPolicy::default(),
                timestamp_message_size: None,
            },
        };
        if f.bytes.is_some() && f.duration.is_some() {
            return err(format!("{what}: give `bytes` or `duration`, not both"));
        }
        if let Some(StartSpec::Window([a, b])) = f.start
            && a > b
        {
            return err(format!("{what}: a start window is [earliest, latest]"));
        }
        flows.push(FlowPlan {
            name: f.name.clone(),
            scenario: flow_scenario(s, f, &f.name, &routes, traffic),
            routes,
            start: f.start.unwrap_or(StartSpec::At(Dur(Duration::ZERO))),
            duration: f.duration.map(|d| d.0),
            onoff: None,
        });
    }
    let mut packet_sources = Vec::new();
    let mut onoff = Vec::new();
    for c in &s.cross {
        let what = format!("cross {}", c.name);
        let route = if c.route.is_empty() {
            g.shortest(&what, &c.from, &c.to)?
        } else {
            let (hops, end) = g.hops(&what, &c.route)?;
            if c.route.first() != Some(&c.from) || end != c.to {
                return err(format!(
                    "{what}: a route runs from {:?} to {:?}",
                    c.from, c.to
                ));
            }
            hops
        };
        match c.kind {
            CrossKind::Constant | CrossKind::Poisson => {
                let Some(rate) = c.rate.filter(|r| r.0 > 0.0) else {
                    return err(format!("{what}: needs a rate > 0"));
                };
                if c.packet_size == 0 {
                    return err(format!("{what}: packet_size is 0"));
                }
                packet_sources.push(PacketSource {
                    name: c.name.clone(),
                    poisson: c.kind == CrossKind::Poisson,
                    rate_bps: rate.0,
                    packet_size: c.packet_size,
                    route,
                });
            }
            CrossKind::ParetoOnoff => {
                let shape_ok = |v: f64| v > 1.0 && v.is_finite();
                let size_shape = c.size_shape.unwrap_or(1.2);
                let gap_shape = c.gap_shape.unwrap_or(1.5);
                if !shape_ok(size_shape) || !shape_ok(gap_shape) {
                    return err(format!("{what}: Pareto shapes must be > 1 (a finite mean)"));
                }
                let [lo, hi] = c.rtt.unwrap_or([
                    Dur(Duration::from_millis(10)),
                    Dur(Duration::from_millis(200)),
                ]);
                if lo > hi {
                    return err(format!("{what}: rtt is [min, max]"));
                }
                let k = onoff.len();
                onoff.push(OnOffPlan {
                    name: c.name.clone(),
                    size_mean: c.size_mean.unwrap_or(Size(100_000)).0.max(1) as f64,
                    size_shape,
                    gap_mean: c.gap_mean.map_or(Duration::from_secs(1), |d| d.0),
                    gap_shape,
                });
                let spec = FlowSpec {
                    name: c.name.clone(),
                    kind: FlowKind::Tcp,
                    from: c.from.clone(),
                    to: c.to.clone(),
                    routes: Vec::new(),
                    start: None,
                    bytes: None,
                    duration: None,
                    message_size: None,
                    streams: None,
                    cc: Some(c.cc.unwrap_or(CongestionControl::Reno)),
                    kernel_cc: None,
                    association: Default::default(),
                };
                let routes = vec![route];
                let message_size = full_packet(s, &routes);
                for n in 0..c.flows.unwrap_or(10) {
                    let name = format!("{}#{n}", c.name);
                    // The extra round trip: a fixed share of the RTT range per flow, so the
                    // set of RTTs is the same in every run (seeds vary the bursts).
                    let frac = (f64::from(n) + 0.5) / f64::from(c.flows.unwrap_or(10).max(1));
                    let rtt = lo.0 + (hi.0 - lo.0).mul_f64(frac);
                    // Bytes grow as bursts start: a transfer whose total the run raises.
                    let traffic = TrafficSpec::Transfer {
                        bytes: Size(1),
                        streams: 1,
                        message_size,
                        timestamp_message_size: None,
                    };
                    flows.push(FlowPlan {
                        scenario: flow_scenario(s, &spec, &name, &routes, traffic),
                        name,
                        routes: routes.clone(),
                        start: StartSpec::At(Dur(Duration::ZERO)),
                        duration: None,
                        onoff: Some((k, rtt / 2)),
                    });
                }
            }
        }
    }
    if flows.len() > MAX_FLOWS {
        return err(format!("at most {MAX_FLOWS} flows, cross traffic included"));
    }
    let fairness = match &s.fairness {
        None => (0..s.flows.len()).collect(),
        Some(names) => {
            let mut v = Vec::new();
            for n in names {
                match s.flows.iter().position(|f| &f.name == n) {
                    Some(i) => v.push(i),
                    None => return err(format!("fairness: no flow named {n:?}")),
                }
            }
            v
        }
    };
    Ok(Plan {
        flows,
        packet_sources,
        onoff,
        fairness,
    })
}

/// When each flow of `plan` connects in a run with `seed`: its `start`, a window drawn
/// uniformly, plus the scenario's `start_jitter` for a fixed start. The simulator and the
/// testbed draw the same times for the same seed (ChaCha8 stream 2^41 of the seed, one draw
/// per window and per jittered start, in flow order).
pub fn start_times(s: &Scenario, plan: &Plan, seed: u64) -> Vec<Duration> {
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;
    let mut starts = ChaCha8Rng::seed_from_u64(seed);
    starts.set_stream(1 << 41);
    let j = s.start_jitter.0;
    plan.flows
        .iter()
        .map(|fp| match fp.start {
            StartSpec::At(t) if j.is_zero() => t.0,
            StartSpec::At(t) => t.0 + j.mul_f64(crate::link::uniform(&mut starts)),
            StartSpec::Window([lo, hi]) => {
                lo.0 + (hi.0 - lo.0).mul_f64(crate::link::uniform(&mut starts))
            }
        })
        .collect()
}

/// Jain's fairness index of `x`: (Σx)² / (n Σx²), 1 when all are equal, 1/n when one takes
/// everything; NaN for no flows or all zero.
pub fn jain(x: &[f64]) -> f64 {
    let sum: f64 = x.iter().sum();
    let sq: f64 = x.iter().map(|v| v * v).sum();
    if x.is_empty() || sq == 0.0 {
        f64::NAN
    } else {
        sum * sum / (x.len() as f64 * sq)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jain_index_bounds() {
        assert_eq!(jain(&[5.0, 5.0, 5.0, 5.0]), 1.0);
        assert!((jain(&[10.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-12);
        assert!(jain(&[]).is_nan());
    }

    #[test]
    fn pareto_mean_and_cap() {
        // The median of Pareto(scale xm, shape a) is xm * 2^(1/a).
        let (mean, a) = (100.0, 1.5);
        let xm = mean * (a - 1.0) / a;
        assert!((pareto(mean, a, 0.5) - xm * 2f64.powf(1.0 / a)).abs() < 1e-9);
        assert_eq!(pareto(mean, a, 1.0 - 1e-300), PARETO_CAP * mean);
        let n = 200_000;
        let avg: f64 = (0..n)
            .map(|i| pareto(mean, 2.5, (i as f64 + 0.5) / n as f64))
            .sum::<f64>()
            / n as f64;
        assert!((avg - mean).abs() / mean < 0.02, "mean {avg}");
    }
}
