//! Hosts and topology: two multi-homed hosts A (sender) and B (receiver) joined by one path
//! per interface pair, each path a forward link A→B and a reverse link B→A; optionally a
//! dumbbell, where every path's traffic also crosses one shared bottleneck link per
//! direction, shared with `competing_flows` other host pairs.
//!
//! Addresses: interface *i* of A is 10.(i+1).0.1, of B 10.(i+1).0.2; competing pair *k* is
//! 10.255.k.1 → 10.255.k.2; every socket address uses UDP port 9899 (RFC 6951). A datagram is
//! routed by its destination address, which names both the receiving host and the path.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use braid_proto::{AssocId, Endpoint, Instant};
use bytes::Bytes;

use crate::link::{
    BackgroundShape, BackgroundSource, GilbertElliott, HiccupConfig, Link, LinkConfig, LossModel,
    Packet, SpikeConfig,
};
use crate::run::SimError;
use crate::scenario::{BackgroundKind, PathSpec, REORDER_DISPLACEMENT, Scenario};
use crate::traffic::{Sink, Source};

/// UDP port of every simulated interface (the SCTP-over-UDP port of RFC 6951).
pub const UDP_PORT: u16 = 9899;
/// SCTP port of the sending endpoints (A and the competing senders).
pub const SENDER_PORT: u16 = 5000;
/// SCTP port of the receiving endpoints (B and the competing receivers).
pub const RECEIVER_PORT: u16 = 5001;
/// Most paths a scenario may have (addresses 10.1.0.0 … 10.200.0.0).
pub const MAX_PATHS: usize = 200;
/// Most competing flows (addresses 10.255.k.0).
pub const MAX_COMPETING: u32 = 256;

/// Index of a link in [`Topology::links`].
pub type LinkId = usize;
/// Index of a host in the run's host list: 0 is A, 1 is B, then the competing pairs.
pub type HostId = usize;

/// Host A.
pub const HOST_A: HostId = 0;
/// Host B.
pub const HOST_B: HostId = 1;

/// Address of interface `path` of host A.
pub fn a_addr(path: usize) -> SocketAddr {
    SocketAddr::new(Ipv4Addr::new(10, (path + 1) as u8, 0, 1).into(), UDP_PORT)
}

/// Address of interface `path` of host B.
pub fn b_addr(path: usize) -> SocketAddr {
    SocketAddr::new(Ipv4Addr::new(10, (path + 1) as u8, 0, 2).into(), UDP_PORT)
}

/// Address of the sender of competing flow `k`.
pub fn competing_sender_addr(k: u32) -> SocketAddr {
    SocketAddr::new(Ipv4Addr::new(10, 255, k as u8, 1).into(), UDP_PORT)
}

/// Address of the receiver of competing flow `k`.
pub fn competing_receiver_addr(k: u32) -> SocketAddr {
    SocketAddr::new(Ipv4Addr::new(10, 255, k as u8, 2).into(), UDP_PORT)
}

/// The path a host A or B address belongs to.
pub fn path_of(ip: IpAddr) -> Option<usize> {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            (o[0] == 10 && (1..=MAX_PATHS as u8).contains(&o[1]) && o[2] == 0)
                .then(|| usize::from(o[1]) - 1)
        }
        IpAddr::V6(_) => None,
    }
}

/// A DATA chunk copy carried by a datagram of the measured association (the simulator's
/// ground truth for retransmissions and per-path goodput).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataCopy {
    /// Its TSN.
    pub tsn: u32,
    /// Which transmission of the TSN this is (1: the first).
    pub tx: u16,
    /// User data bytes.
    pub len: u32,
}

/// The DATA copies of one datagram; the first is stored inline (one per packet in bulk).
#[derive(Debug, Clone, Default)]
pub struct DataCopies {
    first: Option<DataCopy>,
    rest: Vec<DataCopy>,
}

impl DataCopies {
    /// Adds one.
    pub fn push(&mut self, c: DataCopy) {
        if self.first.is_none() {
            self.first = Some(c);
        } else {
            self.rest.push(c);
        }
    }

    /// All of them, in packet order.
    pub fn iter(&self) -> impl Iterator<Item = &DataCopy> {
        self.first.iter().chain(self.rest.iter())
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.first.is_none()
    }
}

/// A datagram in the network.
#[derive(Debug)]
pub struct Datagram {
    /// Source address.
    pub src: SocketAddr,
    /// Destination address.
    pub dst: SocketAddr,
    /// The SCTP packet (empty for background traffic).
    pub payload: Bytes,
    /// Size on the wire: IPv4 header, UDP header if encapsulated, SCTP packet.
    pub size: usize,
    /// The route it follows.
    pub route: u16,
    /// Index of the link of the route it is on.
    pub hop: u8,
    /// Cross traffic, discarded at the end of its link.
    pub background: bool,
    /// Sent without DF (`Transmit::may_fragment`): a smaller MTU fragments it, no drop.
    pub may_fragment: bool,
    /// 0: the measured association; k+1: competing flow k.
    pub flow: u16,
    /// DATA chunks of the measured association's sender, if any.
    pub data: DataCopies,
}

impl Packet for Datagram {
    fn wire_size(&self) -> usize {
        self.size
    }
    fn is_background(&self) -> bool {
        self.background
    }
    fn may_fragment(&self) -> bool {
        self.may_fragment
    }
}

impl Datagram {
    /// A background packet of `size` bytes.
    pub fn background(size: usize) -> Self {
        let none = SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 0);
        Self {
            src: none,
            dst: none,
            payload: Bytes::new(),
            size,
            route: NO_ROUTE,
            hop: 0,
            background: true,
            may_fragment: false,
            flow: 0,
            data: DataCopies::default(),
        }
    }
}

/// The route of a path's cross traffic, which ends with the link it was offered to.
pub const NO_ROUTE: u16 = u16::MAX;

/// The links a datagram crosses and where it ends.
#[derive(Debug, Clone)]
pub struct Route {
    /// Links in order.
    pub links: Vec<LinkId>,
    /// The receiving host.
    pub to: HostId,
    /// The path (of A and B) this route belongs to, if any.
    pub path: Option<usize>,
}

/// The links of one path.
#[derive(Debug, Clone, Copy)]
pub struct PathLinks {
    /// A → B.
    pub forward: LinkId,
    /// B → A.
    pub reverse: LinkId,
}

/// Every link and route of a scenario.
#[derive(Debug)]
pub struct Topology {
    /// The links.
    pub links: Vec<Link<Datagram>>,
    /// Link names, for messages and metrics (`A->B:name`, `bottleneck`...).
    pub link_names: Vec<String>,
    /// Routes, indexed by [`Datagram::route`].
    pub routes: Vec<Route>,
    /// Links of each path.
    pub paths: Vec<PathLinks>,
    /// The shared bottleneck (forward, reverse), in a dumbbell.
    pub bottleneck: Option<PathLinks>,
    /// Cross-traffic sources and the link each feeds.
    pub background: Vec<(LinkId, BackgroundSource)>,
    /// A topology scenario's unresponsive sources: the route each follows (its packets are
    /// discarded at the route's end).
    pub packet_routes: Vec<u16>,
    /// A topology scenario's `[[link]]`s: the forward direction of each is link 2*j*.
    pub topology_links: usize,
    by_dst: HashMap<IpAddr, u16>,
}

fn instant(d: std::time::Duration) -> Instant {
    Instant::from_duration(d)
}

/// The forward link of a path, with every impairment the scenario gives it.
pub fn forward_config(p: &PathSpec) -> LinkConfig {
    let mut c = LinkConfig::new(p.rate.0, p.delay.0, p.queue);
    c.queue_bytes = queue_bytes(p);
    c.mtu = Some(p.mtu);
    c.loss = match &p.gilbert {
        Some(g) => LossModel::Gilbert(GilbertElliott {
            p_good_bad: g.p_good_bad,
            p_bad_good: g.p_bad_good,
            loss_good: g.loss_good,
            loss_bad: g.loss_bad,
            bad: false,
        }),
        None if p.loss > 0.0 => LossModel::Bernoulli(p.loss),
        None => LossModel::None,
    };
    c.hiccup = match (&p.hiccup, p.reorder_rate) {
        (Some(h), _) => Some(HiccupConfig {
            rate: h.rate,
            displacement: h.displacement,
        }),
        (None, Some(rate)) => Some(HiccupConfig {
            rate,
            displacement: p.reorder_displacement.unwrap_or(REORDER_DISPLACEMENT),
        }),
        (None, None) => None,
    };
    let displacement = c.hiccup.map_or(
        p.reorder_displacement.unwrap_or(REORDER_DISPLACEMENT),
        |h| h.displacement,
    );
    c.reorder_at = p
        .reorder_at
        .iter()
        .map(|t| (instant(t.0), displacement))
        .collect();
    c.spikes = match (&p.spikes, &p.delay_spikes) {
        (Some(s), _) => Some(SpikeConfig {
            interval: (s.interval[0].0, s.interval[1].0),
            length: (s.length[0].0, s.length[1].0),
        }),
        (None, Some(s)) => Some(SpikeConfig {
            interval: (s.every[0].0, s.every[1].0),
            length: (s.length[0].0, s.length[1].0),
        }),
        (None, None) => None,
    };
    c.spikes_at = p
        .spike_at
        .iter()
        .map(|[a, b]| (instant(a.0), instant(b.0)))
        .collect();
    c.spike_release = p.spike_release.unwrap_or_default();
    c.failures = failures(p);
    c.mtu_changes = mtu_changes(p);
    let mut changes: Vec<(Instant, f64)> = p
        .rate_changes
        .iter()
        .map(|r| (instant(r.at.0), r.rate.0))
        .collect();
    changes.sort_by_key(|c| c.0);
    c.rate_changes = changes;
    c
}

fn failures(p: &PathSpec) -> Vec<(Instant, Instant)> {
    p.failures
        .iter()
        .map(|f| (instant(f.from.0), instant(f.to.0)))
        .chain(p.down.iter().map(|[a, b]| (instant(a.0), instant(b.0))))
        .collect()
}

/// The reverse link of a path: same rate, delay, queue and MTU; reverse loss and failures.
pub fn reverse_config(p: &PathSpec) -> LinkConfig {
    let mut c = LinkConfig::new(p.rate.0, p.delay.0, p.queue);
    c.queue_bytes = queue_bytes(p);
    c.mtu = Some(p.mtu);
    if p.reverse_loss > 0.0 {
        c.loss = LossModel::Bernoulli(p.reverse_loss);
    }
    c.failures = failures(p);
    c.mtu_changes = mtu_changes(p);
    c
}

fn queue_bytes(p: &PathSpec) -> Option<usize> {
    p.queue_bytes
        .map(|b| usize::try_from(b.0).unwrap_or(usize::MAX))
}

fn mtu_changes(p: &PathSpec) -> Vec<(Instant, usize)> {
    let mut changes: Vec<(Instant, usize)> = p
        .mtu_changes
        .iter()
        .map(|c| (instant(c.at.0), c.mtu))
        .collect();
    changes.sort_by_key(|c| c.0);
    changes
}

impl Topology {
    /// Builds the links and routes of `s`; random draws of link *n* use stream *n* + 1 of
    /// `seed`.
    pub fn build(s: &Scenario, seed: u64) -> Result<Self, SimError> {
        let mut t = Self {
            links: Vec::new(),
            link_names: Vec::new(),
            routes: Vec::new(),
            paths: Vec::new(),
            bottleneck: None,
            background: Vec::new(),
            packet_routes: Vec::new(),
            topology_links: 0,
            by_dst: HashMap::new(),
        };
        if crate::topology::is_topology(s) {
            let plan = crate::topology::plan(s)?;
            t.build_graph(s, &plan, seed)?;
            return Ok(t);
        }
        let add = |t: &mut Self, name: String, cfg: LinkConfig| -> LinkId {
            let id = t.links.len();
            t.links.push(Link::new(cfg, seed, id as u64 + 1));
            t.link_names.push(name);
            id
        };
        for p in &s.paths {
            let forward = add(&mut t, format!("A->B:{}", p.name), forward_config(p));
            let reverse = add(&mut t, format!("B->A:{}", p.name), reverse_config(p));
            t.paths.push(PathLinks { forward, reverse });
        }
        if let Some(b) = &s.bottleneck {
            let cfg = LinkConfig::new(b.rate.0, b.delay.0, b.queue);
            let forward = add(&mut t, "bottleneck".into(), cfg.clone());
            let reverse = add(&mut t, "bottleneck-reverse".into(), cfg);
            t.bottleneck = Some(PathLinks { forward, reverse });
        }
        for (i, p) in s.paths.iter().enumerate() {
            let pl = t.paths[i];
            let (fwd, rev) = match t.bottleneck {
                Some(b) => (vec![pl.forward, b.forward], vec![b.reverse, pl.reverse]),
                None => (vec![pl.forward], vec![pl.reverse]),
            };
            t.add_route(b_addr(i).ip(), fwd, HOST_B, Some(i))?;
            t.add_route(a_addr(i).ip(), rev, HOST_A, Some(i))?;
            if let Some(bg) = &p.background {
                let shape = match bg.kind {
                    BackgroundKind::Constant => BackgroundShape::Constant,
                    BackgroundKind::Square => BackgroundShape::Square {
                        period: bg.period.map(|d| d.0).ok_or_else(|| {
                            SimError::Scenario(format!(
                                "path {}: square background traffic needs a period",
                                p.name
                            ))
                        })?,
                    },
                };
                t.background.push((
                    pl.forward,
                    BackgroundSource {
                        shape,
                        rate_bps: bg.rate.0,
                        packet_size: bg.packet_size,
                    },
                ));
            }
        }
        if let (Some(b), Some(bl)) = (&s.bottleneck, t.bottleneck) {
            // Competing pairs reach the bottleneck through access links like path 0's,
            // without its impairments.
            let p0 = &s.paths[0];
            for k in 0..b.competing_flows {
                let mut cfg = LinkConfig::new(p0.rate.0, p0.delay.0, p0.queue);
                cfg.mtu = Some(p0.mtu);
                let fa = add(&mut t, format!("competing{k}"), cfg.clone());
                let ra = add(&mut t, format!("competing{k}-reverse"), cfg);
                let sender = HOST_B + 1 + 2 * k as usize;
                t.add_route(
                    competing_receiver_addr(k).ip(),
                    vec![fa, bl.forward],
                    sender + 1,
                    None,
                )?;
                t.add_route(
                    competing_sender_addr(k).ip(),
                    vec![bl.reverse, ra],
                    sender,
                    None,
                )?;
            }
        }
        Ok(t)
    }

    /// The links and routes of a topology scenario: link 2*j* and 2*j* + 1 are `[[link]]`
    /// *j*'s two directions, then each Pareto on/off flow's extra-delay pair.
    fn build_graph(
        &mut self,
        s: &Scenario,
        plan: &crate::topology::Plan,
        seed: u64,
    ) -> Result<(), SimError> {
        use crate::topology::flow_addr;
        let add = |t: &mut Self, name: String, cfg: LinkConfig| -> LinkId {
            let id = t.links.len();
            t.links.push(Link::new(cfg, seed, id as u64 + 1));
            t.link_names.push(name);
            id
        };
        for l in &s.links {
            add(self, l.name.clone(), forward_config(l));
            add(self, format!("{}-reverse", l.name), reverse_config(l));
        }
        self.topology_links = s.links.len();
        for (f, flow) in plan.flows.iter().enumerate() {
            // Extra round trip of a Pareto on/off flow: a link of its own, fast and deep.
            let extra = flow.onoff.map(|(_, d)| {
                let cfg = LinkConfig::new(1e12, d, 1 << 20);
                let fwd = add(self, format!("{}-access", flow.name), cfg.clone());
                let rev = add(self, format!("{}-access-reverse", flow.name), cfg);
                (fwd, rev)
            });
            for (i, r) in flow.routes.iter().enumerate() {
                let mut fwd: Vec<LinkId> = extra.iter().map(|e| e.0).collect();
                fwd.extend(r.iter().map(|h| h.id()));
                let mut rev: Vec<LinkId> = r.iter().rev().map(|h| h.back().id()).collect();
                rev.extend(extra.iter().map(|e| e.1));
                let (sender, receiver) = (2 * f, 2 * f + 1);
                let path = (f == 0).then_some(i);
                self.add_route(flow_addr(f, i, false).ip(), fwd, receiver, path)?;
                self.add_route(flow_addr(f, i, true).ip(), rev, sender, path)?;
                if f == 0 {
                    // The path's own links, for its metrics: the route's narrowest.
                    let narrow = r
                        .iter()
                        .min_by(|a, b| {
                            let rate = |h: &crate::topology::Hop| s.links[h.link].rate.0;
                            rate(a).total_cmp(&rate(b))
                        })
                        .copied();
                    if let Some(h) = narrow {
                        self.paths.push(PathLinks {
                            forward: h.id(),
                            reverse: h.back().id(),
                        });
                    }
                }
            }
        }
        for src in &plan.packet_sources {
            let id = u16::try_from(self.routes.len())
                .map_err(|_| SimError::Scenario("too many routes".into()))?;
            self.routes.push(Route {
                links: src.route.iter().map(|h| h.id()).collect(),
                to: HOST_A,
                path: None,
            });
            self.packet_routes.push(id);
        }
        Ok(())
    }

    fn add_route(
        &mut self,
        dst: IpAddr,
        links: Vec<LinkId>,
        to: HostId,
        path: Option<usize>,
    ) -> Result<(), SimError> {
        let id = u16::try_from(self.routes.len())
            .map_err(|_| SimError::Scenario("too many routes".into()))?;
        self.routes.push(Route { links, to, path });
        self.by_dst.insert(dst, id);
        Ok(())
    }

    /// The route to a destination address.
    pub fn route_to(&self, dst: IpAddr) -> Option<u16> {
        self.by_dst.get(&dst).copied()
    }
}

/// One simulated host: an SCTP endpoint, its addresses, and its application.
#[derive(Debug)]
pub struct Host {
    /// The SCTP endpoint.
    pub ep: Endpoint,
    /// Its interfaces.
    pub addrs: Vec<SocketAddr>,
    /// The association the application uses.
    pub assoc: Option<AssocId>,
    /// Earliest pending timer event scheduled for this host.
    pub timer: Option<Instant>,
    /// 0: the measured association; k+1: competing flow k.
    pub flow: u16,
    /// Sending application.
    pub sources: Vec<Source>,
    /// Receiving application.
    pub sink: Option<Sink>,
}

impl Host {
    /// A host with an endpoint and no application yet.
    pub fn new(ep: Endpoint, addrs: Vec<SocketAddr>, flow: u16) -> Self {
        Self {
            ep,
            addrs,
            assoc: None,
            timer: None,
            flow,
            sources: Vec::new(),
            sink: None,
        }
    }
}
